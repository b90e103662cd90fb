"""Autograd overhead: forward + backward through a 5-op graph of tiny tensors.

    python benchmarks/bench_autograd.py [--repeat 2000]

Graph: y = ((x * w + b).sigmoid() * x).sum(), x/w/b of shape (4, 3): 5 ops + 3 leaves.
Prints the median time per forward+backward for minnet and PyTorch (if installed) and
their ratio; writes JSON to benchmarks/results/autograd.json.
"""
import argparse
import json
import os

import numpy as np

import minnet as mn
from _common import median_ms


def median_us(fn, repeat):
    return median_ms(fn, repeat, warmup=50) * 1e3


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=2000)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal((4, 3)).astype(np.float32) for _ in range(3)]
    x, w, b = (mn.tensor(a, requires_grad=True) for a in arrays)

    def step_minnet():
        y = ((x * w + b).sigmoid() * x).sum()
        y.backward()
        x.grad = w.grad = b.grad = None

    results = {"minnet_us": median_us(step_minnet, args.repeat)}
    try:
        import torch
        torch.set_num_threads(mn.get_num_threads())
        xt, wt, bt = (torch.tensor(a, requires_grad=True) for a in arrays)

        def step_torch():
            y = ((xt * wt + bt).sigmoid() * xt).sum()
            y.backward()
            xt.grad = wt.grad = bt.grad = None

        results["torch_us"] = median_us(step_torch, args.repeat)
        results["torch_version"] = torch.__version__
        results["ratio_torch_over_minnet"] = results["torch_us"] / results["minnet_us"]
    except ImportError:
        pass
    results["threads"] = mn.get_num_threads()
    print("5-op graph, forward+backward, median of", args.repeat)
    print(f"  minnet : {results['minnet_us']:8.1f} us")
    if "torch_us" in results:
        print(f"  torch  : {results['torch_us']:8.1f} us   (minnet speed = {results['ratio_torch_over_minnet']:.2f}x torch)")
    os.makedirs(os.path.join(os.path.dirname(__file__), "results"), exist_ok=True)
    with open(os.path.join(os.path.dirname(__file__), "results", "autograd.json"), "w") as f:
        json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
