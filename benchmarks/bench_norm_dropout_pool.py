"""dropout, batch norm and pooling forward + backward: minnet against PyTorch.

    python benchmarks/bench_norm_dropout_pool.py [--repeat 7] [--threads 1 2] [--ops dropout batch_norm ...]
        [--layout channels_first|channels_last|both]

Problems (float32, as the targets in docs/math/*.md):

* ``dropout``: ``F.dropout(x, 0.5)`` on 3.2M floats (64, 64, 28, 28), forward + backward;
* ``batch_norm``: training-mode batch norm (64, 64, 28, 28) with weight and bias,
  forward + backward (PyTorch: ``nn.BatchNorm2d``);
* ``max_pool``: 2x2 / stride 2 max pooling of (64, 64, 28, 28), forward + backward;
* ``avg_pool``: 3x3 / stride 2 / padding 1 average pooling, forward + backward;
* ``global_avg_pool``: mean over H, W, forward + backward;
* ``spatial_dropout``: ``F.spatial_dropout2d(x, 0.5)`` (PyTorch: ``dropout2d``).

``--layout channels_last`` runs minnet's native NHWC kernels on the same data as
(64, 28, 28, 64) (``data_format="channels_last"``) and PyTorch twice, on a contiguous
NCHW tensor and on a ``torch.channels_last`` one; the ratio is against the faster of the
two.  ``--layout both`` measures both layouts in the same run.

For each thread count (minnet and torch use the same count) it prints the median of
``--repeat`` runs after one warm-up (minnet and torch runs interleaved) and the ratio torch / minnet (> 1: minnet faster),
and writes JSON to benchmarks/results/norm_dropout_pool.json.
"""
import argparse
import time

import numpy as np

import minnet as mn
from _common import write_results
import minnet.functional as F

SHAPE = (64, 64, 28, 28)


def paired_median_ms(fns, repeat):
    """Median time of each function, runs interleaved (a, b, a, b, ...) after one warm-up
    each, so that load from other processes hits both sides alike."""
    times = [[] for _ in fns]
    for fn in fns:
        fn()
    for _ in range(repeat):
        for fn, bucket in zip(fns, times):
            t = time.perf_counter()
            fn()
            bucket.append(time.perf_counter() - t)
    return [float(np.median(t) * 1e3) for t in times]


def _nhwc(a):
    return np.ascontiguousarray(a.transpose(0, 2, 3, 1)) if a.ndim == 4 else a


def problems(x, torch, layout="channels_first"):
    """name -> (minnet step, torch steps (contiguous, channels_last) or None); fwd + bwd.

    ``x`` is NCHW; under ``layout="channels_last"`` minnet gets it as NHWC.
    """
    C = x.shape[1]
    last = layout == "channels_last"
    to = _nhwc if last else (lambda a: a)
    df = dict(data_format=layout)
    g_same = np.random.default_rng(1).standard_normal(x.shape).astype(np.float32)
    xm = mn.tensor(to(x), requires_grad=True)
    w, b = mn.Parameter(np.ones(C, np.float32)), mn.Parameter(np.zeros(C, np.float32))
    rm, rv = np.zeros(C, np.float32), np.ones(C, np.float32)
    grads = {
        "max_pool": np.ones((x.shape[0], C, 14, 14), np.float32),
        "avg_pool": np.ones((x.shape[0], C, 14, 14), np.float32),
        "global_avg_pool": np.ones(x.shape[:2], np.float32),
    }
    mgrads = {k: to(v) for k, v in grads.items()}
    mg_same = to(g_same)

    def ours(fn, grad):
        def step():
            xm.grad = w.grad = b.grad = None
            fn(xm).backward(grad)
        return step

    steps = {
        "dropout": ours(lambda t: F.dropout(t, 0.5), mg_same),
        "batch_norm": ours(lambda t: F.batch_norm(t, rm, rv, w, b, training=True, **df), mg_same),
        "max_pool": ours(lambda t: F.max_pool2d(t, 2, **df), mgrads["max_pool"]),
        "avg_pool": ours(lambda t: F.avg_pool2d(t, 3, 2, 1, **df), mgrads["avg_pool"]),
        "global_avg_pool": ours(lambda t: F.global_avg_pool2d(t, **df), mgrads["global_avg_pool"]),
        "spatial_dropout": ours(lambda t: F.spatial_dropout2d(t, 0.5, **df), mg_same),
    }
    torch_steps = {}
    if torch is not None:
        formats = [torch.contiguous_format] + ([torch.channels_last] if last else [])
        for fmt in formats:
            tx = torch.tensor(x).contiguous(memory_format=fmt).requires_grad_(True)
            bn = torch.nn.BatchNorm2d(C).train()
            tg = {k: torch.from_numpy(v).contiguous(memory_format=fmt) if v.ndim == 4
                  else torch.from_numpy(v) for k, v in grads.items()}
            tg_same = torch.from_numpy(g_same).contiguous(memory_format=fmt)
            fns = {
                "dropout": (lambda t: torch.nn.functional.dropout(t, 0.5), tg_same),
                "batch_norm": (bn, tg_same),
                "max_pool": (lambda t: torch.nn.functional.max_pool2d(t, 2), tg["max_pool"]),
                "avg_pool": (lambda t: torch.nn.functional.avg_pool2d(t, 3, 2, 1), tg["avg_pool"]),
                "global_avg_pool": (lambda t: t.mean((2, 3)), tg["global_avg_pool"]),
                "spatial_dropout": (lambda t: torch.nn.functional.dropout2d(t, 0.5), tg_same),
            }
            for name, (fn, grad) in fns.items():
                def step(fn=fn, grad=grad, tx=tx, bn=bn):
                    tx.grad = None
                    bn.zero_grad()
                    fn(tx).backward(grad)
                torch_steps.setdefault(name, []).append(step)
    return {name: (steps[name], torch_steps.get(name)) for name in steps}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ops = ["dropout", "batch_norm", "max_pool", "avg_pool", "global_avg_pool", "spatial_dropout"]
    parser.add_argument("--ops", nargs="+", default=ops, choices=ops)
    parser.add_argument("--layout", default="channels_first",
                        choices=["channels_first", "channels_last", "both"])
    args = parser.parse_args()
    layouts = ["channels_first", "channels_last"] if args.layout == "both" else [args.layout]
    try:
        import torch
    except ImportError:
        torch = None
    x = np.random.default_rng(0).standard_normal(SHAPE).astype(np.float32)
    rows = []
    previous = mn.get_num_threads()
    try:
        for threads in args.threads:
            mn.set_num_threads(threads)
            if torch is not None:
                torch.set_num_threads(threads)
            for layout in layouts:
                table = problems(x, torch, layout)
                for name in args.ops:
                    ours, theirs = table[name]
                    measured = paired_median_ms([ours] + (theirs or []), args.repeat)
                    row = {"op": name, "layout": layout, "threads": threads,
                           "minnet_ms": measured[0]}
                    if theirs:
                        row["torch_contiguous_ms"] = measured[1]
                        if len(measured) > 2:
                            row["torch_channels_last_ms"] = measured[2]
                        row["torch_ms"] = min(measured[1:])          # torch's faster format
                        row["ratio_torch_over_minnet"] = row["torch_ms"] / row["minnet_ms"]
                    rows.append(row)
    finally:
        mn.set_num_threads(previous)

    title = (f"fwd+bwd on x {SHAPE} (NCHW; NHWC for channels_last) float32; median of "
             f"{args.repeat} (ms); torch = faster of contiguous / channels_last memory format")
    print(title)
    print(f"{'op':>16} {'layout':>14} {'threads':>7} {'minnet':>8} {'torch':>8} {'torch/minnet':>12}")
    for row in rows:
        torch_ms = f"{row['torch_ms']:8.2f}" if "torch_ms" in row else f"{'-':>8}"
        ratio = f"{row['ratio_torch_over_minnet']:12.2f}" if "torch_ms" in row else f"{'-':>12}"
        print(f"{row['op']:>16} {row['layout']:>14} {row['threads']:>7} {row['minnet_ms']:8.2f} "
              f"{torch_ms} {ratio}")
    write_results("norm_dropout_pool.json", title, rows, torch)


if __name__ == "__main__":
    main()
