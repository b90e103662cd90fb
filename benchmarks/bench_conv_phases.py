"""Conv2D per phase against PyTorch, in CPU time, and the conv GEMM on the layers' shapes.

    python benchmarks/bench_conv_phases.py [--repeat 7] [--only mnist resnet] [--layout cf]
    python benchmarks/bench_conv_phases.py --gemm          # conv_kernels.gemm_f32 on the shapes
    python benchmarks/bench_conv_phases.py --dw            # dW: im2col against Winograd

One thread, ``time.thread_time`` (the CPU time of the calling thread: on a machine shared with
other jobs their time slices do not count, where wall time would), the calls interleaved,
median of ``--repeat`` rounds after a warm-up. minnet's kernels are called directly
(``conv_kernels.conv2d_forward``; ``conv2d_backward`` with one gradient requested), the step goes
through autograd (bench_conv_layout's ``_minnet_step``); torch: ``F.conv2d`` under
``no_grad``, ``torch.autograd.grad`` for the input or the weight alone (each including its
forward), and its step. Workloads: bench_conv_limit.py's. ``--gemm``: GFLOP/s of minnet's
conv GEMM on the products those layers run (round three's figures: CHANGELOG.md, 2026-12-02).
``--dw``: the weight gradient alone by im2col (``method="per_sample"``) and by Winograd
(``method="winograd"``) on DW_SHAPES, both layouts (docs/math/convolution.md, "dW by
Winograd": the rule for dW).
"""
import argparse
import time

import numpy as np

import minnet as mn
from minnet._ext import conv_kernels
from bench_conv_layout import _interleaved, _minnet_step, _torch_step
from bench_conv_limit import WORKLOADS

GEMM_SHAPES = [  # (M, N, K, trans_a, trans_b): the product and the layer it belongs to
    (1024, 1024, 1024, False, False),   # square reference
    (64, 256, 32, False, False),        # 28x28 32->64: a Winograd GEMM (before round three)
    (256, 64, 32, True, False),         # the same since: V_k^T @ U_k^T
    (32, 256, 64, False, False),        # its input gradient's
    (64, 784, 288, False, False),       # its im2col forward
    (288, 64, 784, False, True),        # its weight gradient dW^T
    (128, 256, 576, False, False),      # strided 64->128: forward
    (576, 128, 256, False, True),       # dW^T
    (576, 256, 128, True, False),       # dX columns
]

DW_SHAPES = [(64, 32, 28, 64), (128, 64, 32, 128), (64, 64, 16, 64), (64, 64, 14, 64), (64, 64, 8, 64),
             (64, 16, 14, 32)]  # N, C, H=W, F


def _cpu_interleaved(fns, repeat):
    """Median and (min, max) CPU ms of each fn, one call of each per round."""
    spread = {}
    median = _interleaved(fns, repeat, spread, clock=time.thread_time)
    return {k: (median[k], *spread[k]) for k in fns}


def phases(args, torch):
    rng = np.random.default_rng(0)
    df = "channels_last" if args.layout == "cl" else "channels_first"
    for name, (n, c, h, wd), f, s in WORKLOADS:
        if args.only and not any(name.startswith(o) for o in args.only):
            continue
        x = rng.standard_normal((n, c, h, wd)).astype(np.float32)
        w = (rng.standard_normal((f, c, 3, 3)) * 0.1).astype(np.float32)
        b = np.zeros(f, np.float32)
        xm = np.ascontiguousarray(x.transpose(0, 2, 3, 1)) if df == "channels_last" else x
        y = conv_kernels.conv2d_forward(xm, w, b, s, 1, data_format=df)
        dy = rng.standard_normal(y.shape).astype(np.float32)
        tx = torch.tensor(x)
        tw = torch.tensor(w, requires_grad=True)
        tb = torch.tensor(b, requires_grad=True)
        tdy = torch.tensor(dy if df == "channels_first" else dy.transpose(0, 3, 1, 2))
        if df == "channels_last":
            tx = tx.to(memory_format=torch.channels_last)
            tw = tw.detach().to(memory_format=torch.channels_last).requires_grad_(True)
            tdy = tdy.contiguous(memory_format=torch.channels_last)

        def backward(dx, dw, db, method="auto"):
            return lambda: conv_kernels.conv2d_backward(xm, w, dy, s, 1, 1, dx, dw, db,
                                                        method=method, data_format=df)

        def t_fwd():
            with torch.no_grad():
                torch.nn.functional.conv2d(tx, tw, tb, stride=s, padding=1)

        def t_dx():
            xt = tx.detach().requires_grad_(True)
            out = torch.nn.functional.conv2d(xt, tw.detach(), None, stride=s, padding=1)
            torch.autograd.grad(out, xt, tdy)

        def t_dw():
            out = torch.nn.functional.conv2d(tx, tw, None, stride=s, padding=1)
            torch.autograd.grad(out, tw, tdy)

        fns = {"fwd": lambda: conv_kernels.conv2d_forward(xm, w, b, s, 1, data_format=df),
               "dX": backward(True, False, False), "dW": backward(False, True, False),
               "dW im2col": backward(False, True, False, "per_sample"),
               "db": backward(False, False, True),
               "step": _minnet_step(xm, mn.Parameter(w), mn.Parameter(b), 1, df, s),
               "torch fwd": t_fwd, "torch fwd+dX": t_dx, "torch fwd+dW": t_dw,
               "torch step": _torch_step(torch, tx, tw, tb, 1, s)}
        res = _cpu_interleaved(fns, args.repeat)
        print(f"{name} {args.layout}: " + " | ".join(
            f"{k} {m:.1f} ({lo:.1f}-{hi:.1f})" for k, (m, lo, hi) in res.items()) + " ms CPU",
            flush=True)


def weight_grad(args):
    rng = np.random.default_rng(0)
    for n, c, h, f in DW_SHAPES:
        for df in ("channels_first", "channels_last"):
            x = rng.standard_normal((n, c, h, h)).astype(np.float32)
            if df == "channels_last":
                x = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
            w = (rng.standard_normal((f, c, 3, 3)) * 0.1).astype(np.float32)
            dy = rng.standard_normal(conv_kernels.conv2d_forward(x, w, None, 1, 1,
                                                                 data_format=df).shape)
            dy = dy.astype(np.float32)
            fns = {m: (lambda m=m: conv_kernels.conv2d_backward(
                       x, w, dy, 1, 1, 1, False, True, False, method=m, data_format=df))
                   for m in ("per_sample", "winograd")}
            res = _cpu_interleaved(fns, args.repeat)
            (a, alo, ahi), (b, blo, bhi) = res["per_sample"], res["winograd"]
            print(f"dW {n}x{c}x{h}->{f} {df}: im2col {a:.1f} ({alo:.1f}-{ahi:.1f}) | "
                  f"winograd {b:.1f} ({blo:.1f}-{bhi:.1f}) ms CPU | im2col/winograd "
                  f"{a / b:.2f}", flush=True)


def gemm(args):
    rng = np.random.default_rng(0)
    for m, n, k, ta, tb in GEMM_SHAPES:
        a = rng.standard_normal((k, m) if ta else (m, k)).astype(np.float32)
        b = rng.standard_normal((n, k) if tb else (k, n)).astype(np.float32)
        c = np.zeros((m, n), np.float32)
        calls = max(3, int(3e9 / (2 * m * n * k)))
        res = _cpu_interleaved({"g": lambda: [conv_kernels.gemm_f32(a, b, c, 1.0, ta, tb)
                                              for _ in range(calls)]}, 5)["g"]
        print(f"{m}x{n}x{k} trans_a={ta:d} trans_b={tb:d}: "
              f"{2 * m * n * k * calls / res[1] / 1e6:.1f} GFLOP/s (best of 5)", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--only", nargs="+", default=None, help="workload name prefixes")
    parser.add_argument("--layout", choices=("cf", "cl"), default="cf")
    parser.add_argument("--gemm", action="store_true")
    parser.add_argument("--dw", action="store_true")
    args = parser.parse_args()
    mn.set_num_threads(1)
    if args.gemm or args.dw:
        (gemm if args.gemm else weight_grad)(args)
        return
    import torch
    torch.set_num_threads(1)
    phases(args, torch)


if __name__ == "__main__":
    main()
