"""Conv2D fwd+bwd against PyTorch on issue #30's workloads, both layouts, with the GEMM peak.

    python benchmarks/bench_conv_limit.py [--repeat 7] [--threads 1 2] [--only NAME ...]
    OPENBLAS_CORETYPE=Haswell python benchmarks/bench_conv_limit.py   # the other column

Workloads (float32, 3x3 kernels, padding 1, bias):

* ``mnist 32->64``: x (64, 32, 28, 28), 64 filters (bench_conv.py's default);
* ``vgg 64->128``: x (128, 64, 32, 32), 128 filters, stride 1;
* ``resnet s2 64->128``: x (64, 64, 32, 32), 128 filters, stride 2 (16x16 out).

A step is ``F.conv2d`` forward and backward through autograd (input, weight and bias
gradients) in each minnet layout, against ``torch.nn.functional.conv2d`` on NCHW tensors and
in its channels_last memory format (the faster of the two is the reference), all four
interleaved call by call, ``--repeat`` rounds after a warm-up. Printed per thread count:
the OpenBLAS kernel threadpoolctl reports, the sgemm 2048^2 GFLOP/s of NumPy's BLAS and of
minnet's own conv GEMM (``conv_kernels.gemm_f32``, convgemm_kernels.h) measured in the same run, the load (uptime), and per
workload the median ms with min-max, the effective GFLOP/s (3 x 2 N F K L / time) and the
ratio torch_best / minnet (> 1: minnet faster).  JSON -> benchmarks/results/conv_limit.json
"""
import argparse
import os
import time

import numpy as np

import minnet as mn
from _common import write_results
from bench_conv_layout import _interleaved, _minnet_step, _torch_step

WORKLOADS = [  # name, (N, C, H, W), filters, stride
    ("mnist 32->64", (64, 32, 28, 28), 64, 1),
    ("vgg 64->128", (128, 64, 32, 32), 128, 1),
    ("resnet s2 64->128", (64, 64, 32, 32), 128, 2),
]


def _blas_kernel():
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "threadpoolctl not installed"
    return ", ".join(sorted({f"{i.get('internal_api')} {i.get('architecture')}"
                             for i in threadpool_info() if i.get("user_api") == "blas"}))


def _gemm_peak(threads, repeat=5):
    """GFLOP/s of numpy's sgemm (its BLAS, ``threads`` threads) and of minnet's conv GEMM
    (2 blocks of rows on ``threads`` threads) on 2048 x 2048 x 2048."""
    from threadpoolctl import threadpool_limits
    from minnet._ext import conv_kernels
    _convgemm = getattr(conv_kernels, "gemm_f32", None)
    n = 2048
    a = np.random.default_rng(1).standard_normal((n, n)).astype(np.float32)
    b = a.T.copy()
    c = np.empty_like(a)
    out = {}
    with threadpool_limits(threads, "blas"):
        fns = {"blas": lambda: np.matmul(a, b, out=c)}
        if _convgemm is not None:
            fns["minnet"] = lambda: _convgemm(a, b, c, n_threads=threads)
        times = {k: [] for k in fns}
        for fn in fns.values():
            fn()
        for _ in range(repeat):
            for k, fn in fns.items():
                t = time.perf_counter()
                fn()
                times[k].append(time.perf_counter() - t)
    for k, v in times.items():
        out[k] = 2 * n ** 3 / np.median(v) / 1e9
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--only", nargs="+", default=None, help="workload name prefixes")
    args = parser.parse_args()
    try:
        import torch
    except ImportError:
        torch = None
    env = {k: os.environ.get(k) for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    print(f"OpenBLAS: {_blas_kernel()}  env {env}")
    rng = np.random.default_rng(0)
    rows = []
    for threads in args.threads:
        mn.set_num_threads(threads)
        if torch is not None:
            torch.set_num_threads(threads)
        peak = _gemm_peak(threads)
        print(f"t{threads} sgemm 2048^2: BLAS {peak['blas']:.0f} GFLOP/s, minnet conv GEMM "
              f"{peak.get('minnet', float('nan')):.0f} GFLOP/s; load {os.getloadavg()[0]:.2f}")
        for name, (n, c, h, wd), f, stride in WORKLOADS:
            if args.only and not any(name.startswith(o) for o in args.only):
                continue
            x = rng.standard_normal((n, c, h, wd)).astype(np.float32)
            weight = mn.Parameter(rng.standard_normal((f, c, 3, 3)).astype(np.float32) * 0.1)
            bias = mn.Parameter(np.zeros(f, np.float32))
            fns = {"cf": _minnet_step(x, weight, bias, 1, "channels_first", stride),
                   "cl": _minnet_step(np.ascontiguousarray(x.transpose(0, 2, 3, 1)), weight,
                                      bias, 1, "channels_last", stride)}
            if torch is not None:
                tw = torch.tensor(weight.data, requires_grad=True)
                tb = torch.tensor(bias.data, requires_grad=True)
                tx = torch.tensor(x)
                fns["torch"] = _torch_step(torch, tx, tw, tb, 1, stride)
                tw_cl = tw.detach().to(memory_format=torch.channels_last).requires_grad_(True)
                fns["torch_cl"] = _torch_step(torch, tx.to(memory_format=torch.channels_last),
                                              tw_cl, tb, 1, stride)
            spread = {}
            med = _interleaved(fns, args.repeat, spread)
            out = (h + 2 - 3) // stride + 1
            gflop = 3 * 2 * n * f * c * 9 * out * out / 1e9
            row = {"workload": name, "threads": threads, "load": os.getloadavg()[0],
                   "gemm_peak": peak, "env": env,
                   **{f"{k}_ms": v for k, v in med.items()},
                   **{f"{k}_range": spread[k] for k in fns}}
            line = f"t{threads} {name:18s}"
            best = min(med["torch"], med["torch_cl"]) if torch is not None else None
            for k in fns:
                lo, hi = row[f"{k}_range"]
                line += f" | {k} {med[k]:6.1f} ({lo:.1f}-{hi:.1f}) ms {gflop / med[k] * 1e3:4.0f} GF/s"
            if best is not None:
                row["cf_vs_torch"] = best / med["cf"]
                row["cl_vs_torch"] = best / med["cl"]
                line += f" | cf {row['cf_vs_torch']:.2f}x cl {row['cl_vs_torch']:.2f}x torch"
            print(line + f" | load {row['load']:.2f}", flush=True)
            rows.append(row)
    write_results("conv_limit.json", "conv2d fwd+bwd at the GEMM limit", rows, torch,
                  blas=_blas_kernel())


if __name__ == "__main__":
    main()
