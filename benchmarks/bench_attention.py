"""Fused attention vs PyTorch's ``F.scaled_dot_product_attention`` (CPU): speed and memory.

    python benchmarks/bench_attention.py [--threads 1,2] [--rounds 3] [--repeat 3]
                                         [--skip-memory] [--blas-env both|keep|unset]
                                         [--coretype both|haswell|unset] [--shapes B,H,T,d ...]

1. Self-attention forward + backward (gradients of q, k, v given the output's gradient),
   float32, at (batch 32, 8 heads, T 128, head dim 64) and (batch 4, 8 heads, T 1024, head
   dim 64), causal and not: ``minnet.functional.scaled_dot_product_attention`` and
   ``torch.nn.functional.scaled_dot_product_attention`` run interleaved in one process at
   the same thread count. Each of ``--rounds`` rounds times ``--repeat`` calls of each
   framework (median per round); the row gives the median over rounds, the spread (lowest
   and highest round median) and ratio = torch / minnet (> 1: minnet faster). Each thread
   count runs in a child process, once with the environment as it is (the machine's
   ``OPENBLAS_NUM_THREADS`` setting, if any) and once with ``OPENBLAS_NUM_THREADS`` unset
   (``--blas-env``); minnet pins the BLAS it calls either way (``mn.set_num_threads``).
   ``--coretype``: each of those once with ``OPENBLAS_CORETYPE=Haswell`` and once with it
   unset (the two OpenBLAS columns of docs/performance.md); every row names the kernel
   OpenBLAS reports in that child (threadpoolctl) and the load average before and after.
2. Forward memory: peak RSS growth of one forward at T = 1024, 2048, 4096 (batch 1, 8 heads,
   head dim 64, float32, q/k/v requiring gradients, so what backward keeps is allocated
   too), in a fresh process per size and framework: the resident set sampled every 0.5 ms
   in a thread during the call, minus the resident set just before it (RSS, not
   ``tracemalloc``, which misses the kernels' C scratch). minnet never stores the T x T
   scores; the ratio per doubling of T should be about 2.

JSON -> benchmarks/results/attention.json
"""
import argparse
import json
import os
import subprocess
import sys
import threading
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from _common import write_results  # noqa: E402

SHAPES = [(32, 8, 128, 64), (4, 8, 1024, 64)]
MEMORY_T = (1024, 2048, 4096)


def _steps(shape, causal):
    import torch
    import minnet as mn
    import minnet.functional as F
    rng = np.random.default_rng(0)
    q, k, v, g = (rng.standard_normal(shape).astype(np.float32) for _ in range(4))

    def ours():
        tq, tk, tv = (mn.tensor(a, requires_grad=True) for a in (q, k, v))
        F.scaled_dot_product_attention(tq, tk, tv, is_causal=causal).backward(g)

    tg = torch.from_numpy(g)
    base = [torch.from_numpy(a) for a in (q, k, v)]

    def theirs():
        tq, tk, tv = (a.clone().requires_grad_(True) for a in base)
        torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, is_causal=causal).backward(tg)
    return ours, theirs


def _median_ms(fn, repeat):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return float(np.median(times) * 1e3)


def _blas_kernel():
    from threadpoolctl import threadpool_info
    kernels = sorted({f"{d['internal_api']} {d.get('architecture')}" for d in threadpool_info()
                      if d.get("user_api") == "blas"})
    return ", ".join(kernels) or "unknown"


def speed_child(threads, rounds, repeat, shapes):
    """Print one JSON list of rows: this process runs at ``threads`` threads."""
    import torch
    import minnet as mn
    mn.set_num_threads(threads)
    torch.set_num_threads(threads)
    kernel = _blas_kernel()
    rows = []
    for shape in shapes:
        for causal in (False, True):
            ours, theirs = _steps(shape, causal)
            ours(), theirs()        # warm-up
            mine, torch_ms = [], []
            load = os.getloadavg()[0]
            for _ in range(rounds):
                mine.append(_median_ms(ours, repeat))
                torch_ms.append(_median_ms(theirs, repeat))
            m, t = float(np.median(mine)), float(np.median(torch_ms))
            rows.append(dict(shape=list(shape), causal=causal, threads=threads, minnet_ms=m,
                             torch_ms=t, ratio=t / m, minnet_spread=[min(mine), max(mine)],
                             torch_spread=[min(torch_ms), max(torch_ms)],
                             load_before=load, load_after=os.getloadavg()[0],
                             blas_kernel=kernel))
    print(json.dumps(rows))


def _rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def memory_child(framework, t_len):
    """Print the peak RSS growth (bytes) of one forward at sequence length ``t_len``."""
    shape = (1, 8, t_len, 64)
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(shape).astype(np.float32) for _ in range(3)]
    if framework == "minnet":
        import minnet as mn
        import minnet.functional as F
        mn.set_num_threads(1)
        small = [mn.tensor(a[:, :, :64], requires_grad=True) for a in arrays]
        F.scaled_dot_product_attention(*small)                  # libraries loaded
        inputs = [mn.tensor(a, requires_grad=True) for a in arrays]
        run = lambda: F.scaled_dot_product_attention(*inputs)
    else:
        import torch
        torch.set_num_threads(1)
        small = [torch.from_numpy(a[:, :, :64].copy()).requires_grad_() for a in arrays]
        torch.nn.functional.scaled_dot_product_attention(*small)
        inputs = [torch.from_numpy(a).requires_grad_() for a in arrays]
        run = lambda: torch.nn.functional.scaled_dot_product_attention(*inputs)
    base = _rss_bytes()
    peak = [base]
    done = threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], _rss_bytes())
            time.sleep(0.0005)

    sampler = threading.Thread(target=sample)
    sampler.start()
    out = run()
    done.set()
    sampler.join()
    peak[0] = max(peak[0], _rss_bytes())
    del out
    print(peak[0] - base)


def _child(args, env=None):
    out = subprocess.run([sys.executable, __file__] + args, capture_output=True, text=True,
                         env=env, check=True)
    return out.stdout.strip().splitlines()[-1]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-memory", action="store_true")
    parser.add_argument("--blas-env", choices=("both", "keep", "unset"), default="both")
    parser.add_argument("--coretype", choices=("both", "haswell", "unset"), default="both")
    parser.add_argument("--shapes", nargs="+", default=None,
                        help="B,H,T,d shapes of the speed rows (default: the two of the table)")
    parser.add_argument("--speed-child", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--memory-child", nargs=2, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    shapes = ([tuple(int(x) for x in sh.split(",")) for sh in args.shapes] if args.shapes
              else SHAPES)
    if args.speed_child is not None:
        return speed_child(args.speed_child, args.rounds, args.repeat, shapes)
    if args.memory_child is not None:
        return memory_child(args.memory_child[0], int(args.memory_child[1]))

    import torch
    setting = os.environ.get("OPENBLAS_NUM_THREADS")
    envs = []
    if args.blas_env in ("both", "keep"):
        envs.append((f"OPENBLAS_NUM_THREADS={setting}" if setting is not None else
                     "OPENBLAS_NUM_THREADS not set", dict(os.environ)))
    if args.blas_env in ("both", "unset") and (setting is not None or args.blas_env == "unset"):
        envs.append(("OPENBLAS_NUM_THREADS unset",
                     {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}))
    cores = {"both": ("Haswell", None), "haswell": ("Haswell",), "unset": (None,)}[args.coretype]
    speed = []
    shape_args = ["--shapes"] + [",".join(map(str, sh)) for sh in shapes]
    for name, env in envs:
        for core in cores:
            child_env = {k: v for k, v in env.items() if k != "OPENBLAS_CORETYPE"}
            if core is not None:
                child_env["OPENBLAS_CORETYPE"] = core
            column = f"OPENBLAS_CORETYPE={core if core else 'unset'}; {name}"
            print(f"\n{column}")
            print(f"{'shape':>18s} {'causal':>6s} {'thr':>3s} {'minnet ms (spread)':>22s} "
                  f"{'torch ms (spread)':>22s} {'ratio':>6s} {'load':>10s}  OpenBLAS kernel")
            for threads in [int(t) for t in args.threads.split(",")]:
                rows = json.loads(_child(["--speed-child", str(threads), "--rounds",
                                          str(args.rounds), "--repeat", str(args.repeat)]
                                         + shape_args, child_env))
                for row in rows:
                    row["blas_env"] = name
                    row["openblas_coretype"] = core
                    speed.append(row)
                    ms, ts = row["minnet_spread"], row["torch_spread"]
                    mine = f"{row['minnet_ms']:.1f} ({ms[0]:.1f}-{ms[1]:.1f})"
                    theirs = f"{row['torch_ms']:.1f} ({ts[0]:.1f}-{ts[1]:.1f})"
                    load = f"{row['load_before']:.1f}-{row['load_after']:.1f}"
                    print(f"{str(tuple(row['shape'])):>18s} {str(row['causal']):>6s} "
                          f"{threads:3d} {mine:>22s} {theirs:>22s} {row['ratio']:6.2f} "
                          f"{load:>10s}  {row['blas_kernel']}", flush=True)
    memory = []
    if not args.skip_memory:
        print(f"\n{'framework':10s} " + " ".join(f"{'T=' + str(t):>10s}" for t in MEMORY_T)
              + "   growth per doubling")
        for framework in ("minnet", "torch"):
            grown = [int(_child(["--memory-child", framework, str(t)])) for t in MEMORY_T]
            ratios = [b / a if a > 0 else float("nan") for a, b in zip(grown, grown[1:])]
            memory.append(dict(framework=framework, T=list(MEMORY_T), peak_rss_growth_bytes=grown,
                               ratio_per_doubling=ratios))
            print(f"{framework:10s} " + " ".join(f"{g / 2**20:8.2f}MB" for g in grown)
                  + "   " + ", ".join(f"{r:.2f}" for r in ratios))
    write_results("attention.json", "attention fwd+bwd vs torch SDPA; forward peak RSS growth",
                  speed, torch=torch, memory=memory)


if __name__ == "__main__":
    main()
