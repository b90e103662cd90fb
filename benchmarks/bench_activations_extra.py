"""The unary activation family (gelu, gelu-tanh, silu, softplus, mish, relu6, hardswish,
softsign), forward + backward: minnet against PyTorch.

    python benchmarks/bench_activations_extra.py [--repeat 9] [--threads 1]

Each op runs on 1M float32 values (256, 4096) through both libraries' public autograd API
(forward, then backward of a fixed upstream gradient), interleaved, at the same thread
count. Prints the median of ``--repeat`` runs after a warm-up and the ratio torch / minnet
(> 1: minnet faster). JSON -> benchmarks/results/activations_extra_t<threads>.json
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from _common import median_ms, write_results  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()

    import torch
    import minnet as mn
    import minnet.functional as F

    torch.set_num_threads(args.threads)
    mn.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((256, 4096)).astype(np.float32) * 3
    g = rng.standard_normal(x.shape).astype(np.float32)
    tf = torch.nn.functional
    ops = {
        "gelu": (F.gelu, tf.gelu),
        "gelu_tanh": (lambda a: F.gelu(a, approximate="tanh"), lambda a: tf.gelu(a, approximate="tanh")),
        "silu": (F.silu, tf.silu), "softplus": (F.softplus, tf.softplus), "mish": (F.mish, tf.mish),
        "relu6": (F.relu6, tf.relu6), "hardswish": (F.hardswish, tf.hardswish),
        "softsign": (F.softsign, tf.softsign),
    }
    gt = torch.tensor(g)
    rows = []
    for name, (ours, theirs) in ops.items():
        def run_minnet():
            t = mn.tensor(x, requires_grad=True)
            ours(t).backward(g)

        def run_torch():
            t = torch.tensor(x, requires_grad=True)
            theirs(t).backward(gt)

        m = median_ms(run_minnet, args.repeat)
        t = median_ms(run_torch, args.repeat)
        rows.append({"op": name, "minnet_ms": m, "torch_ms": t, "torch_over_minnet": t / m})
        print(f"{name:10s} minnet {m:7.2f} ms   torch {t:7.2f} ms   torch/minnet {t / m:5.2f}")
    write_results(f"activations_extra_t{args.threads}.json", "unary activations fwd+bwd", rows,
                  torch=torch, threads=args.threads)


if __name__ == "__main__":
    main()
