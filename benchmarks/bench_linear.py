"""Dense layers' GEMMs: minnet's own float32 GEMM against OpenBLAS, and the layer against torch.

    python benchmarks/bench_linear.py [--threads 1 2] [--repeat 101]

For each layer shape (batch, in -> out), float32: the three products of a Dense layer's
step (forward ``Y^T = W X^T``, ``dX = dY W``, ``dW = dY^T X``) timed on the convolution's
register-tile GEMM (``conv_kernels.gemm_f32``) and on scipy's OpenBLAS (``_blas.py_gemm``),
which is what ``linear_kernels``' rule chooses between (products of at most 2^26
multiply-adds into at most 2^18 elements take the first; the row says which each took);
then ``linear_forward`` + ``linear_backward`` (the kernels Dense calls, with that rule) against torch's ``Linear`` forward and backward
(``torch.nn.functional.linear`` under autograd, the same three products and the bias sum);
and ``(x @ w).sum().backward()`` on tensors (a custom layer's product through the autograd).
Medians of ``--repeat`` calls, microseconds; ratios > 1: the first is faster. Rows are named
by shape, "784->256 batch 64" for the first layer of the coursework MLP.
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import median_ms, write_results  # noqa: E402

import minnet as mn  # noqa: E402
from minnet._ext import linear_kernels  # noqa: E402
from minnet._ext._blas import py_gemm  # noqa: E402
from minnet._ext.conv_kernels import gemm_f32  # noqa: E402

# (batch, in, out): the coursework MLPs (784-256-128-10, 784-256-10) at batch 64 and
# either side of it, and wider layers on both sides of the rule.
SHAPES = [(64, 784, 256), (64, 256, 128), (64, 128, 10), (64, 256, 10), (16, 784, 256),
          (256, 784, 256), (64, 512, 512), (64, 784, 1024), (64, 1024, 1024),
          (128, 1024, 1024), (64, 2048, 2048)]


def takes_own_gemm(m, n, k):
    """linear_kernels' rule for one float32 product C (m, n) = op(A) (m, k) op(B) (k, n)."""
    return m * n * k <= linear_kernels.OWN_GEMM_MAX and m * n <= linear_kernels.OWN_GEMM_MAX_OUT


def products(batch, fin, fout, rng):
    """The layer's three products as (name, a, b, trans_a, trans_b, c)."""
    x = rng.standard_normal((batch, fin)).astype(np.float32)
    w = rng.standard_normal((fout, fin)).astype(np.float32)
    dy = rng.standard_normal((batch, fout)).astype(np.float32)
    return [("fwd", w, x, False, True, np.empty((fout, batch), np.float32)),
            ("dx", dy, w, False, False, np.empty((batch, fin), np.float32)),
            ("dW", dy, x, True, False, np.empty((fout, fin), np.float32))]


def bench_shape(batch, fin, fout, threads, repeat, torch):
    rng = np.random.default_rng(0)
    # forward Y^T (out, batch), dX (batch, in), dW (out, in): which GEMM each takes
    taken = ["own" if takes_own_gemm(m, n, batch * fin * fout // (m * n)) else "BLAS"
             for m, n in ((fout, batch), (batch, fin), (fout, fin))]
    row = {"shape": f"{fin}->{fout} batch {batch}", "threads": threads,
           "macs": batch * fin * fout, "gemm_taken": "/".join(taken)}
    own = blas = 0.0
    for name, a, b, ta, tb, c in products(batch, fin, fout, rng):
        t_own = median_ms(lambda: gemm_f32(a, b, c, trans_a=ta, trans_b=tb, n_threads=threads), repeat) * 1e3
        t_blas = median_ms(lambda: py_gemm(a, b, trans_a=ta, trans_b=tb, c=c, n_threads=threads), repeat) * 1e3
        row[f"{name}_own_us"], row[f"{name}_openblas_us"] = round(t_own, 1), round(t_blas, 1)
        own, blas = own + t_own, blas + t_blas
    row["products_openblas_over_own"] = round(blas / own, 3)
    x = rng.standard_normal((batch, fin)).astype(np.float32)
    w = rng.standard_normal((fout, fin)).astype(np.float32)
    bias = rng.standard_normal(fout).astype(np.float32)
    dy = rng.standard_normal((batch, fout)).astype(np.float32)

    def minnet_step():
        linear_kernels.linear_forward(x, w, bias, n_threads=threads)
        linear_kernels.linear_backward(x, w, dy, n_threads=threads)

    row["minnet_layer_us"] = round(median_ms(minnet_step, repeat) * 1e3, 1)
    # A custom layer's `x @ w` through the autograd (linear_kernels.matmul, the same rule).
    xt = mn.Tensor(x)
    wt = mn.Tensor(np.ascontiguousarray(w.T), requires_grad=True)

    def matmul_step():
        (xt @ wt).sum().backward()
        wt.grad = None

    row["minnet_matmul_autograd_us"] = round(median_ms(matmul_step, repeat) * 1e3, 1)
    if torch is not None:
        tx, tdy = torch.from_numpy(x).requires_grad_(), torch.from_numpy(dy)
        tw, tb = torch.from_numpy(w).requires_grad_(), torch.from_numpy(bias).requires_grad_()

        def torch_step():
            torch.nn.functional.linear(tx, tw, tb).backward(tdy)
            tx.grad = tw.grad = tb.grad = None

        row["torch_layer_us"] = round(median_ms(torch_step, repeat) * 1e3, 1)
        row["layer_ratio"] = round(row["torch_layer_us"] / row["minnet_layer_us"], 3)
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeat", type=int, default=101)
    args = parser.parse_args()
    try:
        import torch
    except ImportError:
        torch = None
    rows = []
    for threads in args.threads:
        mn.set_num_threads(threads)
        if torch is not None:
            torch.set_num_threads(threads)
        for batch, fin, fout in SHAPES:
            row = bench_shape(batch, fin, fout, threads, args.repeat, torch)
            rows.append(row)
            print(f"t={threads} {row['shape']:>22s} ({row['gemm_taken']}): "
                  + "  ".join(f"{p} {row[p + '_own_us']:8.1f} / {row[p + '_openblas_us']:8.1f}"
                              for p in ("fwd", "dx", "dW"))
                  + f"  products OpenBLAS/own {row['products_openblas_over_own']:.2f}"
                  + f" | (x @ w).sum().backward() {row['minnet_matmul_autograd_us']:8.1f} us"
                  + f" | layer fwd+bwd {row['minnet_layer_us']:8.1f} us"
                  + (f" (torch {row['torch_layer_us']:8.1f}, ratio {row['layer_ratio']:.2f})"
                     if "torch_layer_us" in row else ""), flush=True)
    write_results("linear.json", "Dense GEMMs: own vs OpenBLAS; layer vs torch", rows, torch=torch)


if __name__ == "__main__":
    main()
