"""The engine and elementwise-layer workloads of bench_autograd.py, each library in its own process.

    python benchmarks/bench_autograd_separate.py [--threads 1 2] [--rounds 3] [--repeat 60]
                                                 [--results autograd_separate.json]

``bench_autograd.py`` runs minnet and PyTorch interleaved in one process, so both see the
same machine load.  But one process holding both libraries is not how either is used, and
it changes what is measured: the allocator's state (which large blocks the C library keeps
or returns to the kernel) and the OpenMP runtimes are shared.  On the 2-core development
machine PyTorch's Tanh and ReLU layers ran 1.5-1.7x faster beside minnet than alone (2.8
against 4.2-4.8 ms).  Here each measurement is a fresh process that loads one library and
times one workload (median of ``--repeat`` calls after 5 warm-up calls); minnet and PyTorch
alternate, ``--rounds`` times, so the load still reaches both alike.  Ratio = torch time /
minnet time (> 1: minnet is faster): the median over the rounds, and the lowest and highest
round.

Workloads: ``layer(x, training=True).sum().backward()`` on 3.2 M floats for the Sigmoid,
ReLU, Tanh, GELU and ELU layers; mlp100 and chain1000 as in bench_autograd.py.
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

from _common import write_results

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKLOADS = ["sigmoid", "relu", "tanh", "gelu", "elu", "mlp100", "chain1000"]

CHILD = r"""
import json, sys, time
import numpy as np
lib, name, threads, repeat = {lib!r}, {name!r}, {threads}, {repeat}
if lib == "minnet":
    import minnet as module
    import minnet.functional as F
    from minnet import layers
    param = module.Parameter
else:
    import torch as module
    import torch.nn.functional as F
    param = lambda a: module.tensor(a, requires_grad=True)
module.set_num_threads(threads)


def mlp(depth=100, width=32, batch=64):        # as bench_autograd.mlp_case
    rng = np.random.default_rng(0)
    ws = [param(rng.standard_normal((width, width)).astype(np.float32) * 0.2) for _ in range(depth)]
    bs = [param(np.zeros(width, np.float32)) for _ in range(depth)]
    x = module.tensor(rng.standard_normal((batch, width)).astype(np.float32))
    def run():
        h = x
        for w, b in zip(ws, bs):
            h = F.relu(F.linear(h, w, b))
        h.sum().backward()
        for p in ws + bs:
            p.grad = None
    return run


def chain(n_ops=1000):                          # as bench_autograd.chain_case
    x = param(np.linspace(0.5, 1.5, 16).astype(np.float32))
    def run():
        y = x
        for i in range(n_ops // 4):
            y = y * 1.0001
            y = y + 0.001
            y = y - 0.0005
            y = y * 0.9999
        y.sum().backward()
        x.grad = None
    return run


def layer_loop():                               # as bench_autograd.layer_case
    x = np.random.default_rng(0).standard_normal((32000, 100)).astype(np.float32)
    t = module.tensor(x, requires_grad=True)
    if lib == "minnet":
        layer = dict(sigmoid=layers.Sigmoid, relu=layers.ReLU, tanh=layers.Tanh, elu=layers.ELU,
                     gelu=lambda: layers.Activation("gelu"))[name]()
        call = lambda: layer(t, training=True)
    else:
        nn = module.nn
        layer = dict(sigmoid=nn.Sigmoid, relu=nn.ReLU, tanh=nn.Tanh, gelu=nn.GELU, elu=nn.ELU)[name]()
        call = lambda: layer(t)
    def run():
        call().sum().backward()
        t.grad = None
    return run


run = mlp() if name == "mlp100" else chain() if name == "chain1000" else layer_loop()
for _ in range(5):
    run()
times = []
for _ in range(repeat):
    start = time.perf_counter()
    run()
    times.append(time.perf_counter() - start)
print(json.dumps(float(np.median(times) * 1e3)))
"""


def measure(lib, name, threads, repeat):
    code = CHILD.format(lib=lib, name=name, threads=threads, repeat=repeat)
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         cwd=ROOT, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=60)
    parser.add_argument("--only", nargs="+", default=WORKLOADS, choices=WORKLOADS)
    parser.add_argument("--results", default="autograd_separate.json")
    args = parser.parse_args()
    rows = []
    print(f"{'workload':12s} {'threads':>7s} {'minnet ms':>10s} {'torch ms':>10s} {'ratio':>6s}  range")
    for threads in args.threads:
        for name in args.only:
            ours, theirs = [], []
            for _ in range(args.rounds):
                ours.append(measure("minnet", name, threads, args.repeat))
                theirs.append(measure("torch", name, threads, args.repeat))
            ratios = [b / a for a, b in zip(ours, theirs)]
            row = {"workload": name, "threads": threads, "minnet_ms": float(np.median(ours)),
                   "torch_ms": float(np.median(theirs)), "ratio_torch_over_minnet": float(np.median(ratios)),
                   "ratio_low": min(ratios), "ratio_high": max(ratios)}
            rows.append(row)
            print(f"{name:12s} {threads:7d} {row['minnet_ms']:10.3f} {row['torch_ms']:10.3f} "
                  f"{row['ratio_torch_over_minnet']:6.2f}  {min(ratios):.2f}-{max(ratios):.2f}", flush=True)
    try:
        import torch
    except ImportError:
        torch = None
    write_results(args.results, "engine and layer workloads, one library per process", rows,
                  torch=torch, repeat=args.repeat)


if __name__ == "__main__":
    main()
