"""Optimizer step time: minnet vs torch.optim, same thread count (both pinned).

Parameter sets: a 784-256-10 MLP (kernels 256x784 and 10x256 plus biases, ~204k floats),
the table of an ``Embedding(10000, 64)`` (640k floats) and ``small``, 16 vectors of 64
(biases and norm scales: a step there is all per-parameter overhead), float32.  Reports
microseconds per ``step()`` and the ratio minnet / torch (below 1: minnet is faster).  SGD runs
NumPy's in-place ufuncs; Adam/AdamW the fused one-pass kernel of ``_ext/optim_kernels.pyx``.

    python benchmarks/bench_optimizers.py [--steps 300] [--threads 1] [--sets mlp,small]
"""
import argparse
import time

import numpy as np

import minnet as mn
from minnet import optimizers

SETS = {"mlp": [(256, 784), (256,), (10, 256), (10,)], "embedding": [(10000, 64)],
        "small": [(64,)] * 16}
SHAPES = SETS["mlp"]


def _time(fn, steps, repeats=5):
    fn()  # warm-up: allocates state and scratch buffers
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(steps):
            fn()
        best = min(best, (time.perf_counter() - start) / steps)
    return best * 1e6


def bench_minnet(name, kwargs, steps, shapes=SHAPES):
    rng = np.random.default_rng(0)
    params = [mn.Parameter(rng.standard_normal(s).astype(np.float32)) for s in shapes]
    for p in params:
        p.grad = rng.standard_normal(p.shape).astype(np.float32)
    opt = getattr(optimizers, name)(params, **kwargs)
    return _time(opt.step, steps)


def bench_torch(torch, name, kwargs, steps, shapes=SHAPES):
    rng = np.random.default_rng(0)
    params = [torch.tensor(rng.standard_normal(s).astype(np.float32), requires_grad=True) for s in shapes]
    for p in params:
        p.grad = torch.tensor(rng.standard_normal(tuple(p.shape)).astype(np.float32))
    opt = getattr(torch.optim, name)(params, **kwargs)
    return _time(opt.step, steps)


CASES = [
    ("SGD", dict(learning_rate=0.01), dict(lr=0.01)),
    ("SGD", dict(learning_rate=0.01, momentum=0.9), dict(lr=0.01, momentum=0.9)),
    ("Adam", dict(learning_rate=1e-3, epsilon=1e-8), dict(lr=1e-3, eps=1e-8)),
    ("AdamW", dict(learning_rate=1e-3, epsilon=1e-8), dict(lr=1e-3, eps=1e-8)),
]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--sets", default=",".join(SETS), help="comma-separated: " + ", ".join(SETS))
    args = parser.parse_args()
    mn.set_num_threads(args.threads)
    try:
        import torch
        torch.set_num_threads(args.threads)
    except ImportError:
        torch = None
    for set_name in args.sets.split(","):
        shapes = SETS[set_name]
        n = sum(int(np.prod(s)) for s in shapes)
        print(f"{set_name}: {n} float32 in {len(shapes)} tensors; threads: {args.threads}")
        print(f"{'optimizer':<22}{'minnet us/step':>16}{'torch us/step':>16}{'ratio':>8}")
        for name, ours_kw, torch_kw in CASES:
            label = name + ("+momentum" if "momentum" in ours_kw else "")
            ours = bench_minnet(name, ours_kw, args.steps, shapes)
            if torch is None:
                print(f"{label:<22}{ours:>16.1f}{'-':>16}{'-':>8}")
                continue
            theirs = bench_torch(torch, name, torch_kw, args.steps, shapes)
            print(f"{label:<22}{ours:>16.1f}{theirs:>16.1f}{ours / theirs:>8.2f}")

if __name__ == "__main__":
    main()
