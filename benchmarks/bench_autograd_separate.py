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

Workloads (``_engine_workloads.py``, shared with bench_autograd.py):
``layer(x, training=True).sum().backward()`` on 3.2 M floats for the Sigmoid, ReLU, Tanh,
GELU and ELU layers; mlp100 and chain1000.
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

from _common import write_results

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
WORKLOADS = ["sigmoid", "relu", "tanh", "gelu", "elu", "mlp100", "chain1000"]

CHILD = r"""
import json, sys
sys.path.insert(0, {here!r})
import _engine_workloads as W
from _common import median_ms
lib, name, threads, repeat = {lib!r}, {name!r}, {threads}, {repeat}
if lib == "minnet":
    import minnet as module
    import minnet.functional as F
    from minnet import layers
    param = module.Parameter
    grad_tensor = lambda a: module.tensor(a, requires_grad=True)
    layer = dict(sigmoid=layers.Sigmoid, relu=layers.ReLU, tanh=layers.Tanh, elu=layers.ELU,
                 gelu=lambda: layers.Activation("gelu"))
    call = lambda: (lambda f: (lambda x: f(x, training=True)))(layer[name]())
else:
    import torch as module
    import torch.nn.functional as F
    param = grad_tensor = lambda a: module.tensor(a, requires_grad=True)
    nn = module.nn
    layer = dict(sigmoid=nn.Sigmoid, relu=nn.ReLU, tanh=nn.Tanh, gelu=nn.GELU, elu=nn.ELU)
    call = lambda: layer[name]()
module.set_num_threads(threads)
if name == "mlp100":
    run = W.mlp_run(module.tensor, param, F)
elif name == "chain1000":
    run = W.chain_run(grad_tensor)
else:
    run = W.layer_run(grad_tensor, call())
print(json.dumps(median_ms(run, repeat, warmup=5)))
"""


def measure(lib, name, threads, repeat):
    code = CHILD.format(here=HERE, lib=lib, name=name, threads=threads, repeat=repeat)
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
