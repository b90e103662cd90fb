"""The autograd engine's own speed, as same-run ratios against PyTorch at 1 and 2 threads.

    python benchmarks/bench_autograd.py [--repeat 30] [--threads 1 2] [--quick] [--ops NAME ...]
                                        [--layers] [--split] [--clock cpu] [--results autograd.json]

Workloads (forward + backward, float32, medians; ratio = torch time / minnet time, so
> 1 means minnet is faster; the spread is the lowest and highest ratio of the three
interleaved rounds):
  mlp100      100 x (linear 32->32 + relu) at batch 64, then .sum().backward()
  chain1000   1,000 small elementwise ops on a (16,) tensor, then backward
  sigmoid     the Sigmoid layer on 3.2 M floats, layer(x, training=True).sum().backward()
  relu/tanh/gelu/elu layer   the same hand-written loop for the other elementwise activation
              layers (ReLU, Tanh, Activation("gelu"), ELU against torch.nn.ReLU/Tanh/GELU/ELU)
  dropout     the Dropout(0.5) layer the same way (against torch.nn.Dropout(0.5), training)
  GB/s        for the layer rows: the bytes a fused implementation must move (LAYER_BYTES:
              x read and y written forward, y read by the sum, y or x read and dx written
              backward; dropout's 1-byte mask written and read) over minnet's time, beside the
              machine's bandwidth measured first (NumPy copy and STREAM add of 256 MiB
              arrays, split over 1 and 2 threads)
  ops table   the tensor operations a training step uses, on ~1 M-element inputs
  --kernels   the layers' own _ext kernels alone (forward into an output allocated once,
              backward with the broadcast gradient), minnet only, with their GB/s
--split also times each op's and each layer's forward alone and its backward alone (the
graph is built outside the timed region; for a layer the backward is ``.sum().backward()``,
the sum's own forward is in neither).  --clock cpu times the CPU time of the calling thread
(``time.thread_time``) instead of wall time: on a loaded machine it leaves out the time the
process waits for a core (not the memory traffic other processes cause); it counts only
the main thread, so it is for --threads 1.  Writes benchmarks/results/autograd.json (or --results).

Both libraries share this process (the same load reaches both), which also shares the C
allocator's state and the OpenMP runtimes: PyTorch's layer workloads run faster here than
alone.  bench_autograd_separate.py times the engine and layer workloads one library per
process (docs/autograd.md, "Overhead").
"""
import argparse
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

import minnet as mn
import minnet.functional as F
import _engine_workloads as W
from _common import median_ms, write_results
from minnet import layers
from minnet._ext import activations_kernels, dropout_kernels, unary_kernels


def _torch_param(torch):
    return lambda a: torch.tensor(a, requires_grad=True)


def mlp_case(torch):
    return (W.mlp_run(mn.tensor, mn.Parameter, F),
            W.mlp_run(torch.tensor, _torch_param(torch), torch.nn.functional))


def chain_case(torch):
    return W.chain_run(lambda a: mn.tensor(a, requires_grad=True)), W.chain_run(_torch_param(torch))


def layer_case(torch, layer, torch_layer):
    """``layer(x, training=True).sum().backward()`` on 3.2 M floats, outside ``fit``; for
    --split also the layer's forward alone and the ``.sum().backward()`` alone (the graph
    built untimed), on the same input."""
    x = np.random.default_rng(0).standard_normal((_N_LAYER // 100, 100)).astype(np.float32)
    fn = lambda m, a: layer(a, training=True) if m is mn else torch_layer(a)
    mts, tts = [mn.tensor(x, requires_grad=True)], [torch.tensor(x, requires_grad=True)]
    return {"fwd+bwd": (W.layer_run(lambda a: mn.tensor(a, requires_grad=True),
                                    lambda t: layer(t, training=True)),
                        W.layer_run(_torch_param(torch), torch_layer)),
            "fwd": (_forward(fn, mn, mts), _forward(fn, torch, tts)),
            "bwd": (_backward(fn, mn, mts), _backward(fn, torch, tts))}


def sigmoid_case(torch):
    return layer_case(torch, layers.Sigmoid(), torch.nn.Sigmoid())


def layer_cases(torch):
    """The elementwise activation layers, each as ``layer_case``."""
    return {"sigmoid layer 3.2M (fwd+bwd)": sigmoid_case(torch),
            "relu layer 3.2M (fwd+bwd)": layer_case(torch, layers.ReLU(), torch.nn.ReLU()),
            "tanh layer 3.2M (fwd+bwd)": layer_case(torch, layers.Tanh(), torch.nn.Tanh()),
            "gelu layer 3.2M (fwd+bwd)": layer_case(torch, layers.Activation("gelu"), torch.nn.GELU()),
            "elu layer 3.2M (fwd+bwd)": layer_case(torch, layers.ELU(), torch.nn.ELU()),
            "dropout layer 3.2M (fwd+bwd)": layer_case(torch, layers.Dropout(0.5),
                                                        torch.nn.Dropout(0.5).train())}


# Bytes each layer workload must move at least (float32, n = 3.2 M): forward x read + y
# written, the sum reads y, backward reads y (or x) and writes dx: 5 * 4n; dropout writes
# and reads its 1-byte mask too (and its backward reads no y).
_N_LAYER = 3_200_000
LAYER_BYTES = {name: 5 * 4 * _N_LAYER for name in
               ("sigmoid", "relu", "tanh", "gelu", "elu")}
LAYER_BYTES["dropout"] = 4 * 4 * _N_LAYER + 2 * _N_LAYER


def layer_bytes(name):
    return LAYER_BYTES.get(name.split(" ", 1)[0])


def kernel_cases(threads):
    """The layers' own ``_ext`` kernels alone, for --kernels: forward into an output
    allocated once, backward with the broadcast gradient of ``.sum().backward()``; each
    with the bytes it must move (x read + y written; y or x read + dx written; dropout's
    mask written, then read instead of y)."""
    n = _N_LAYER
    x = np.random.default_rng(0).standard_normal((n // 100, 100)).astype(np.float32)
    y, dx = np.empty_like(x), np.empty_like(x)
    g = np.broadcast_to(np.float32(1), x.shape)
    K, U, D = activations_kernels, unary_kernels, dropout_kernels
    _, mask = D.dropout_forward(x, 0.5, 0, 0, threads)
    pairs = {"sigmoid": (lambda: K.sigmoid_forward(x, y, threads), lambda: K.sigmoid_backward(y, g, dx, threads)),
             "relu": (lambda: K.leaky_relu_forward(x, 0.0, y, threads),
                      lambda: K.leaky_relu_backward(y, g, 0.0, dx, threads)),
             "tanh": (lambda: K.tanh_forward(x, y, threads), lambda: K.tanh_backward(y, g, dx, threads)),
             "gelu": (lambda: U.unary_forward(x, "gelu", y, threads),
                      lambda: U.unary_backward(x, g, "gelu", dx, threads)),
             "elu": (lambda: K.elu_forward(x, out=y, n_threads=threads),
                     lambda: K.elu_backward(y, g, out=dx, n_threads=threads)),
             "dropout": (lambda: D.dropout_forward(x, 0.5, 0, 0, threads),
                         lambda: D.masked_scale_backward(g, mask, 2.0, threads))}
    cases = {}
    for name, (fwd, bwd) in pairs.items():
        mask_bytes = n if name == "dropout" else 0
        cases[f"{name} kernel fwd"] = (fwd, 8 * n + mask_bytes)
        cases[f"{name} kernel bwd"] = (bwd, 4 * n + (mask_bytes or 4 * n))
    return cases


def bandwidth(threads, mib=256, repeat=7):
    """The machine's memory bandwidth in GB/s as NumPy sees it: ``np.copyto`` (2 arrays)
    and STREAM add ``np.add(b, c, out=a)`` (3 arrays) of ``mib`` MiB each, the arrays cut
    into ``threads`` slices copied by that many threads (NumPy releases the GIL); best of
    ``repeat``, bytes read + written (STREAM's count, no write-allocate)."""
    n = mib * 2**20 // 4
    a, b, c = (np.full(n, 1.0, np.float32) for _ in range(3))
    cuts = np.linspace(0, n, threads + 1).astype(int)
    parts = [slice(lo, hi) for lo, hi in zip(cuts[:-1], cuts[1:])]
    kernels = {"copy": (lambda s: np.copyto(a[s], b[s]), 2),
               "add": (lambda s: np.add(b[s], c[s], out=a[s]), 3)}
    result = {}
    with ThreadPoolExecutor(threads) as pool:
        for name, (kernel, arrays) in kernels.items():
            best = float("inf")
            for _ in range(repeat):
                start = time.perf_counter()
                list(pool.map(kernel, parts))
                best = min(best, time.perf_counter() - start)
            result[name] = arrays * n * 4 / best / 1e9
    return result


def op_cases(torch):
    rng = np.random.default_rng(1)
    big = rng.standard_normal((1000, 1000)).astype(np.float32)
    b3 = rng.standard_normal((100, 100, 100)).astype(np.float32)
    c3 = rng.standard_normal((100, 100, 100)).astype(np.float32)
    half = rng.standard_normal((500, 1000)).astype(np.float32)
    mask = rng.random((1000, 1000)) > 0.5
    rows = rng.integers(0, 1000, 100_000)
    index = rng.integers(0, 1000, (1000, 1000))
    cases = {
        "matmul 1000x1000": (lambda m, a, b: m.matmul(a, b), (big, big)),
        "bmm 100x100x100": (lambda m, a, b: m.bmm(a, b), (b3, c3)),
        "cat (2 x 500x1000)": (lambda m, a, b: m.cat([a, b], 0), (half, half)),
        "stack (2 x 500x1000)": (lambda m, a, b: m.stack([a, b], 0), (half, half)),
        "where": (lambda m, a, b: m.where(m.tensor(mask) if m is mn else torch.tensor(mask), a, b), (big, big)),
        "index rows (100k)": (lambda m, a: a[m.tensor(rows) if m is mn else torch.tensor(rows)], (big,)),
        "boolean mask": (lambda m, a: a[m.tensor(mask) if m is mn else torch.tensor(mask)], (big,)),
        "gather dim 1": (lambda m, a: a.gather(1, m.tensor(index) if m is mn else torch.tensor(index)), (big,)),
        "gather dim 0": (lambda m, a: a.gather(0, m.tensor(index) if m is mn else torch.tensor(index)), (big,)),
        "scatter_add dim 1": (lambda m, a, b: a.scatter_add(1, m.tensor(index) if m is mn else torch.tensor(index), b),
                              (big, big)),
        "index_select dim 1 (1k)": (lambda m, a: a.index_select(1, m.tensor(index[0]) if m is mn
                                                                else torch.tensor(index[0])), (big,)),
        "softmax dim -1": (lambda m, a: a.softmax(-1), (big,)),
        # times another tensor: the softmax backward reads a gradient that is not one value
        "softmax * w dim -1": (lambda m, a, b: a.softmax(-1) * b, (big, big)),
        "log_softmax * w dim -1": (lambda m, a, b: a.log_softmax(-1) * b, (big, big)),
        "layer_norm dim -1": (lambda m, a: (F if m is mn else torch.nn.functional).layer_norm(a, (1000,)),
                              (big,)),
        "logsumexp dim 1": (lambda m, a: a.logsumexp(1), (big,)),
        "sum dim 0": (lambda m, a: a.sum(0), (big,)),
        "mean": (lambda m, a: a.mean(), (big,)),
        "var dim 1": (lambda m, a: a.var(1), (big,)),
        "max dim 1": (lambda m, a: a.max(1)[0], (big,)),
        "cumsum dim 1": (lambda m, a: a.cumsum(1), (big,)),
        "cumsum dim 0": (lambda m, a: a.cumsum(0), (big,)),
        "sort dim 1": (lambda m, a: a.sort(1)[0], (big,)),
        "permute + reshape": (lambda m, a: a.permute(1, 0).reshape(-1), (big,)),
        "expand + mul": (lambda m, a, b: a * b[0].expand(1000, 1000), (big, big)),
    }
    out = {}
    for name, (fn, arrays) in cases.items():
        mts = [mn.tensor(a, requires_grad=True) for a in arrays]
        tts = [torch.tensor(a, requires_grad=True) for a in arrays]
        out[name] = {"fwd+bwd": (_step(fn, mn, mts), _step(fn, torch, tts)),
                     "fwd": (_forward(fn, mn, mts), _forward(fn, torch, tts)),
                     "bwd": (_backward(fn, mn, mts), _backward(fn, torch, tts))}
    return out


def _step(fn, module, tensors):
    def run():
        fn(module, *tensors).sum().backward()
        for t in tensors:
            t.grad = None
    return run


def _forward(fn, module, tensors):
    def run():
        fn(module, *tensors)
    return run


_clock = time.perf_counter      # main() sets time.thread_time for --clock cpu


def _backward(fn, module, tensors):
    # returns the seconds of .backward() alone; the graph is built untimed
    def run():
        loss = fn(module, *tensors).sum()
        start = _clock()
        loss.backward()
        elapsed = _clock() - start
        for t in tensors:
            t.grad = None
        return elapsed
    return run


def _median_backward_ms(run, repeat):
    run()
    return float(np.median([run() for _ in range(repeat)]) * 1e3)


def measure(run_mn, run_torch, repeat, timer=None):
    """Medians over three interleaved rounds (both see the same machine load), and the
    lowest and highest per-round ratio torch / minnet."""
    timer = timer or (lambda run, n: median_ms(run, n, warmup=2, clock=_clock))
    t_mn, t_torch = [], []
    for _ in range(3):
        t_mn.append(timer(run_mn, max(repeat // 3, 1)))
        t_torch.append(timer(run_torch, max(repeat // 3, 1)))
    ratios = [b / a for a, b in zip(t_mn, t_torch)]
    return float(np.median(t_mn)), float(np.median(t_torch)), min(ratios), max(ratios)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--quick", action="store_true", help="only the engine and activation-layer workloads")
    parser.add_argument("--ops", nargs="+", default=None, help="only these rows (names as printed)")
    parser.add_argument("--layers", action="store_true", help="only the elementwise-layer rows")
    parser.add_argument("--split", action="store_true", help="also forward alone and backward alone")
    parser.add_argument("--kernels", action="store_true",
                        help="also the elementwise layers' _ext kernels alone (minnet only)")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="cpu: the calling thread's CPU time (for --threads 1)")
    parser.add_argument("--results", default="autograd.json")
    args = parser.parse_args()
    global _clock
    _clock = time.thread_time if args.clock == "cpu" else time.perf_counter
    import torch
    rows = []
    peaks = {}
    for threads in args.threads:
        peaks[threads] = bandwidth(threads)
        print(f"bandwidth, {threads} thread(s): copy {peaks[threads]['copy']:.1f} GB/s, "
              f"add {peaks[threads]['add']:.1f} GB/s", flush=True)
    for threads in args.threads:
        mn.set_num_threads(threads)
        torch.set_num_threads(threads)
        peak = max(peaks[threads].values())
        workloads = {"mlp100 (fwd+bwd)": {"fwd+bwd": mlp_case(torch)},
                     "chain1000 (fwd+bwd)": {"fwd+bwd": chain_case(torch)},
                     **layer_cases(torch)}
        if not args.quick:
            workloads.update(op_cases(torch))
        if args.ops:
            workloads = {k: v for k, v in workloads.items() if k in args.ops}
        if args.layers:
            workloads = {k: v for k, v in workloads.items() if layer_bytes(k)}
        print(f"threads={threads}")
        print(f"  {'workload':32s} {'pass':8s} {'minnet ms':>10s} {'torch ms':>10s} {'ratio':>7s}  "
              f"{'spread':9s}  GB/s (of {peak:.1f})")
        for name, passes in workloads.items():
            for kind, (run_mn, run_torch) in passes.items():
                if kind != "fwd+bwd" and not args.split:
                    continue
                timer = (lambda run, n: _median_backward_ms(run, n)) if kind == "bwd" else None
                ms_mn, ms_torch, low, high = measure(run_mn, run_torch, args.repeat, timer)
                ratio = ms_torch / ms_mn
                moved = layer_bytes(name) if kind == "fwd+bwd" else None
                gbs = None if moved is None else moved / ms_mn / 1e6
                rows.append({"workload": name, "pass": kind, "threads": threads, "minnet_ms": ms_mn,
                             "torch_ms": ms_torch, "ratio_torch_over_minnet": ratio,
                             "ratio_low": low, "ratio_high": high, "minnet_gb_s": gbs,
                             "bandwidth_gb_s": peak if gbs is not None else None})
                speed = "" if gbs is None else f"  {gbs:5.1f} ({100 * gbs / peak:3.0f} %)"
                print(f"  {name:32s} {kind:8s} {ms_mn:10.3f} {ms_torch:10.3f} {ratio:7.2f}  "
                      f"{low:.2f}-{high:.2f}{speed}", flush=True)
        if args.kernels:
            for name, (run, moved) in kernel_cases(threads).items():
                ms = float(np.median([median_ms(run, max(args.repeat // 3, 1), warmup=2, clock=_clock)
                                      for _ in range(3)]))
                gbs = moved / ms / 1e6
                rows.append({"workload": name, "pass": "kernel", "threads": threads, "minnet_ms": ms,
                             "minnet_gb_s": gbs, "bandwidth_gb_s": peak})
                print(f"  {name:32s} {'kernel':8s} {ms:10.3f} {'':10s} {'':7s}  {'':9s}  "
                      f"{gbs:5.1f} ({100 * gbs / peak:3.0f} %)", flush=True)
    write_results(args.results, "autograd engine and tensor ops, forward+backward", rows, torch=torch,
                  repeat=args.repeat, bandwidth_gb_s=peaks, clock=args.clock)


if __name__ == "__main__":
    main()
