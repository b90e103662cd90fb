"""What `minnet.config.set_deterministic(True)` costs: the MLP workload's `fit` with it off and on.

    python benchmarks/bench_deterministic.py [--threads 1] [--rounds 5]

The mlp workload of bench_training.py (its ``build_minnet``: 784-256-128-10 ReLU, SGD
momentum 0.9; batch 64, 6,400 random samples): one epoch per round, off and on alternated, CPU time per step
(``time.process_time``: a shared machine's other jobs do not count; at 2 threads it counts
both threads' time). Prints the median and min-max of each and their ratio.
"""
import argparse
import time

import numpy as np

import minnet as mn
from bench_training import build_minnet


def _epoch_ms(x, y, deterministic):
    mn.config.set_deterministic(deterministic)
    model = build_minnet("mlp", mn)          # bench_training.py's mlp, compiled
    model.fit(x[:640], y[:640], batch_size=64, epochs=1, verbose=0)      # warm-up
    start = time.process_time()
    model.fit(x, y, batch_size=64, epochs=1, verbose=0)
    return (time.process_time() - start) / (len(x) // 64) * 1e3


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    mn.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((6400, 784)).astype(np.float32)
    y = rng.integers(0, 10, 6400)
    times = {False: [], True: []}
    try:
        for _ in range(args.rounds):
            for flag in (False, True):
                times[flag].append(_epoch_ms(x, y, flag))
    finally:
        mn.config.set_deterministic(False)
    for flag in (False, True):
        t = times[flag]
        print(f"deterministic={flag!s:5}  {np.median(t):.3f} ms/step CPU ({min(t):.3f}-{max(t):.3f})")
    print(f"on/off: {np.median(times[True]) / np.median(times[False]):.2f}x  ({args.threads} thread(s))")


if __name__ == "__main__":
    main()
