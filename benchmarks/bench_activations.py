"""Activations and the fused softmax cross-entropy, forward + backward: minnet against PyTorch.

    python benchmarks/bench_activations.py [--repeat 9] [--threads 1 2] [--ops sigmoid relu ...]

Problems (float32):

* ``sigmoid``: ``F.sigmoid`` of 3.2M floats (64, 64*28*28), forward + backward
  (reference: PyTorch takes 2.5-5.7 ms at 2 threads; target: minnet at least as fast);
* ``relu``: the same for ``F.relu``;
* ``tanh``: the same for ``F.tanh`` (libm ``tanhf`` per element);
* ``softmax_ce``: ``F.cross_entropy`` of (4096, 1000) logits against int labels;
* ``softmax_ce_10``: the same for (6400, 10) logits (rows shorter than the row helpers'
  32 lanes, as in a 10-class classifier: docs/performance.md, "The loss's share");
* ``softmax_10``: ``F.softmax`` of the same (6400, 10) logits, forward + backward of its sum;
* ``softmax_64x10``: the same for one batch of (64, 10), where the call's own cost weighs.

Both libraries run at the same thread count, through their public autograd API (each
step allocates its outputs, as training does).  Prints the median of ``--repeat`` runs
after one warm-up and the ratio torch / minnet (> 1: minnet faster), and writes JSON to
benchmarks/results/activations.json.
"""
import argparse
import json
import os
import platform

import numpy as np

import minnet as mn
from _common import median_ms
import minnet.functional as F


def problems(torch):
    """name -> (minnet step, torch step or None); each step runs forward + backward."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 64 * 28 * 28)).astype(np.float32)
    g = rng.standard_normal(x.shape).astype(np.float32)
    logits = rng.standard_normal((4096, 1000)).astype(np.float32)
    labels = rng.integers(0, 1000, 4096)
    short = rng.standard_normal((6400, 10)).astype(np.float32)
    short_labels = rng.integers(0, 10, 6400)
    xm, lm = mn.tensor(x, requires_grad=True), mn.tensor(logits, requires_grad=True)
    sm = mn.tensor(short, requires_grad=True)
    small = mn.tensor(short[:64], requires_grad=True)

    def ours(fn, src, grad):
        def step():
            src.grad = None
            fn(src).backward(grad)
        return step

    steps = {
        "sigmoid": [ours(F.sigmoid, xm, g)],
        "relu": [ours(F.relu, xm, g)],
        "tanh": [ours(F.tanh, xm, g)],
        "softmax_ce": [ours(lambda t: F.cross_entropy(t, labels), lm, None)],
        "softmax_ce_10": [ours(lambda t: F.cross_entropy(t, short_labels), sm, None)],
        "softmax_10": [ours(lambda t: F.softmax(t, -1).sum(), sm, None)],
        "softmax_64x10": [ours(lambda t: F.softmax(t, -1).sum(), small, None)],
    }
    if torch is not None:
        xt = torch.tensor(x, requires_grad=True)
        lt = torch.tensor(logits, requires_grad=True)
        gt, yt = torch.tensor(g), torch.tensor(labels)
        st, syt = torch.tensor(short, requires_grad=True), torch.tensor(short_labels)
        small_t = torch.tensor(short[:64], requires_grad=True)

        def theirs(fn, src, grad):
            def step():
                src.grad = None
                fn(src).backward(grad)
            return step

        steps["sigmoid"].append(theirs(torch.sigmoid, xt, gt))
        steps["relu"].append(theirs(torch.relu, xt, gt))
        steps["tanh"].append(theirs(torch.tanh, xt, gt))
        steps["softmax_ce"].append(
            theirs(lambda t: torch.nn.functional.cross_entropy(t, yt), lt, None))
        steps["softmax_ce_10"].append(
            theirs(lambda t: torch.nn.functional.cross_entropy(t, syt), st, None))
        steps["softmax_10"].append(theirs(lambda t: torch.softmax(t, -1).sum(), st, None))
        steps["softmax_64x10"].append(theirs(lambda t: torch.softmax(t, -1).sum(), small_t, None))
    return {k: (v[0], v[1] if len(v) > 1 else None) for k, v in steps.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--ops", nargs="+", default=None)
    args = parser.parse_args()
    try:
        import torch
    except ImportError:
        torch = None
    table = problems(torch)
    names = args.ops or list(table)
    results = []
    for n in args.threads:
        mn.set_num_threads(n)
        if torch is not None:
            torch.set_num_threads(n)
        for name in names:
            ours, theirs = table[name]
            ms = median_ms(ours, args.repeat)
            ref = median_ms(theirs, args.repeat) if theirs else None
            ratio = ref / ms if ref else None
            results.append({"op": name, "threads": n, "minnet_ms": round(ms, 3),
                            "torch_ms": None if ref is None else round(ref, 3),
                            "torch_over_minnet": None if ratio is None else round(ratio, 2)})
            ref_txt = f"{ref:8.2f} ms  ratio {ratio:5.2f}" if ref else "(no torch)"
            print(f"{name:11s} threads={n}  minnet {ms:8.2f} ms  torch {ref_txt}")
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "activations.json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        json.dump({"platform": platform.platform(), "cpu_count": os.cpu_count(),
                   "torch": getattr(torch, "__version__", None), "results": results}, f, indent=1)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
