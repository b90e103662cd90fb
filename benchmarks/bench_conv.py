"""conv2d forward + backward: minnet (both GEMM strategies) against PyTorch.

    python benchmarks/bench_conv.py [--repeat 7] [--threads 1 2] [--shape 64 32 28 28 --filters 64]

Default problem: x (64, 32, 28, 28) float32, weight (64, 32, 3, 3), padding 1, stride 1.
For each thread count it times (median of --repeat runs after one warm-up):

* ``minnet F.conv2d``: the functional op through autograd (``method="auto"``);
* ``per_sample`` / ``batched``: the raw kernels ``conv2d_forward`` + ``conv2d_backward``
  with each GEMM strategy (see minnet/_ext/conv_kernels.pyx);
* ``torch``: ``torch.nn.functional.conv2d`` forward + backward at the same thread count
  (skipped when PyTorch is not installed).

Prints a table with the ratio torch_time / minnet_time (> 1 means minnet is faster) and
writes JSON to benchmarks/results/conv.json.
"""
import argparse

import numpy as np

import minnet as mn
from _common import median_ms, write_results
import minnet.functional as F
from minnet._ext import conv_kernels


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--shape", type=int, nargs=4, default=[64, 32, 28, 28])
    parser.add_argument("--filters", type=int, default=64)
    parser.add_argument("--kernel", type=int, default=3)
    parser.add_argument("--padding", type=int, default=1)
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    n, c, h, w = args.shape
    k = args.kernel
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    weight = (rng.standard_normal((args.filters, c, k, k)) * 0.1).astype(np.float32)
    bias = np.zeros(args.filters, np.float32)
    y_shape = conv_kernels.conv2d_forward(x[:1], weight, bias, 1, args.padding).shape[1:]
    grad = rng.standard_normal((n,) + y_shape).astype(np.float32)
    try:
        import torch
    except ImportError:
        torch = None

    rows = []
    previous = mn.get_num_threads()
    try:
        for threads in args.threads:
            mn.set_num_threads(threads)
            row = {"threads": threads}
            xt, wt, bt = mn.tensor(x, requires_grad=True), mn.Parameter(weight), mn.Parameter(bias)

            def step_functional():
                xt.grad = wt.grad = bt.grad = None
                F.conv2d(xt, wt, bt, 1, args.padding).backward(grad)

            row["minnet_ms"] = median_ms(step_functional, args.repeat)
            for method in ("per_sample", "batched"):
                def step_kernel(method=method):
                    conv_kernels.conv2d_forward(x, weight, bias, 1, args.padding, n_threads=threads,
                                         method=method)
                    conv_kernels.conv2d_backward(x, weight, grad, 1, args.padding, n_threads=threads,
                                          method=method)
                row[f"{method}_ms"] = median_ms(step_kernel, args.repeat)
            if torch is not None:
                torch.set_num_threads(threads)
                tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, weight, bias))
                tg = torch.tensor(grad)

                def step_torch():
                    tx.grad = tw.grad = tb.grad = None
                    torch.nn.functional.conv2d(tx, tw, tb, padding=args.padding).backward(tg)

                row["torch_ms"] = median_ms(step_torch, args.repeat)
                row["ratio_torch_over_minnet"] = row["torch_ms"] / row["minnet_ms"]
            rows.append(row)
    finally:
        mn.set_num_threads(previous)

    title = (f"conv2d fwd+bwd, x {tuple(args.shape)} float32 -> {args.filters} filters, "
             f"{k}x{k}, padding {args.padding}; median of {args.repeat} (ms)")
    print(title)
    header = f"{'threads':>7} {'F.conv2d':>9} {'per_sample':>10} {'batched':>8} {'torch':>8} {'torch/minnet':>12}"
    print(header)
    for row in rows:
        torch_ms = f"{row['torch_ms']:8.1f}" if "torch_ms" in row else f"{'-':>8}"
        ratio = f"{row['ratio_torch_over_minnet']:12.2f}" if "torch_ms" in row else f"{'-':>12}"
        print(f"{row['threads']:>7} {row['minnet_ms']:9.1f} {row['per_sample_ms']:10.1f} "
              f"{row['batched_ms']:8.1f} {torch_ms} {ratio}")

    write_results("conv.json", title, rows, torch)


if __name__ == "__main__":
    main()
