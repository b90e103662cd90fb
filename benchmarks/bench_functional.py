"""Per-step overhead of the functional graph (and a subclassed model) over Sequential.

    python benchmarks/bench_functional.py [--threads 1] [--n 4096] [--pairs 12] [--clock cpu|wall]

The mlp workload of bench_training.py (784-256-128-10 ReLU, SGD momentum 0.9,
cross-entropy from logits, batch 64), built three ways with the same seed: ``Sequential``,
``mn.Model(inputs, outputs)`` and a ``mn.Model`` subclass. Each pair runs one ``fit`` epoch
of each kind back to back, in alternating order (A/B then B/A), so drift in machine load
hits both alike; the result is the median over the pairs of the per-pair time ratio
(kind / Sequential), with the min and max of the ratios as the spread.

On a loaded machine the epoch ratios spread widely, so the script also measures the graph's
own cost directly: the forward pass of a tiny 3-layer model (8-4-4-4, batch 64, no_grad),
where the per-call overhead dominates, functional minus Sequential in microseconds (median
of 15 rounds of 3000 calls each), and divides it by the Sequential mlp step time.
``--clock cpu``
(the default) times with the process's CPU time, which a loaded shared machine disturbs
far less than wall time; it counts every thread's CPU, so use it with ``--threads 1``.
JSON -> benchmarks/results/functional_t<threads>.json
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import minnet as mn  # noqa: E402
from minnet import layers, losses, optimizers  # noqa: E402

from _common import write_results  # noqa: E402


class SubclassedMLP(mn.Model):
    def __init__(self):
        super().__init__()
        self.hidden = [layers.Dense(256, activation="relu"), layers.Dense(128, activation="relu")]
        self.head = layers.Dense(10)

    def call(self, x, training=False):
        for layer in self.hidden:
            x = layer(x, training=training)
        return self.head(x, training=training)


def build(kind):
    mn.manual_seed(0)
    if kind == "sequential":
        model = mn.Sequential([mn.Input((784,)), layers.Dense(256, activation="relu"),
                               layers.Dense(128, activation="relu"), layers.Dense(10)])
    elif kind == "functional":
        inp = mn.Input((784,))
        h = layers.Dense(256, activation="relu")(inp)
        h = layers.Dense(128, activation="relu")(h)
        model = mn.Model(inp, layers.Dense(10)(h))
    else:
        model = SubclassedMLP()
        model.build((None, 784))
    model.compile(optimizer=optimizers.SGD(learning_rate=0.01, momentum=0.9),
                  loss=losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


CLOCK = {"cpu": time.process_time, "wall": time.perf_counter}


def epoch_seconds(model, x, y, clock=time.process_time):
    start = clock()
    model.fit(x, y, batch_size=64, epochs=1, verbose=0, shuffle=True, seed=0)
    return clock() - start


def call_overhead_us(clock, rounds=15, calls=3000):
    """Median (functional - Sequential) forward time per call of a tiny 3-layer model, in us."""
    x = np.ones((64, 8), np.float32)
    mn.manual_seed(0)
    seq = mn.Sequential([mn.Input((8,)), layers.Dense(4, activation="relu"),
                         layers.Dense(4, activation="relu"), layers.Dense(4)])
    inp = mn.Input((8,))
    h = layers.Dense(4, activation="relu")(inp)
    h = layers.Dense(4, activation="relu")(h)
    fun = mn.Model(inp, layers.Dense(4)(h))

    def per_call(model):
        with mn.no_grad():
            start = clock()
            for _ in range(calls):
                model(x, training=True)
            return (clock() - start) / calls * 1e6

    seq_us, diffs = [], []
    for _ in range(rounds):
        s, f = per_call(seq), per_call(fun)
        seq_us.append(s)
        diffs.append(f - s)
    return float(np.median(diffs)), float(np.median(seq_us))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--clock", choices=sorted(CLOCK), default="cpu")
    parser.add_argument("--n", type=int, default=4096)
    parser.add_argument("--pairs", type=int, default=12)
    args = parser.parse_args()
    mn.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((args.n, 784)).astype(np.float32)
    y = rng.integers(0, 10, args.n)
    models = {kind: build(kind) for kind in ("sequential", "functional", "subclassed")}
    clock = CLOCK[args.clock]
    for model in models.values():                      # warm-up: buffers, caches
        epoch_seconds(model, x[:512], y[:512], clock)
    ratios = {"functional": [], "subclassed": []}
    seconds = {kind: [] for kind in models}
    for pair in range(args.pairs):
        for kind in ("functional", "subclassed"):
            order = ("sequential", kind) if pair % 2 == 0 else (kind, "sequential")
            times = {k: epoch_seconds(models[k], x, y, clock) for k in order}
            ratios[kind].append(times[kind] / times["sequential"])
            seconds["sequential"].append(times["sequential"])
            seconds[kind].append(times[kind])
    steps = -(-args.n // 64)
    rows = []
    for kind in ("functional", "subclassed"):
        r = np.array(ratios[kind])
        row = {"kind": kind, "pairs": args.pairs, "median_ratio": float(np.median(r)),
               "min_ratio": float(r.min()), "max_ratio": float(r.max()),
               "median_step_ms": float(np.median(seconds[kind]) / steps * 1e3),
               "sequential_median_step_ms": float(np.median(seconds["sequential"]) / steps * 1e3)}
        rows.append(row)
        print(f"{kind:10s} / sequential: median {row['median_ratio']:.4f} "
              f"(min {row['min_ratio']:.4f}, max {row['max_ratio']:.4f}) over {args.pairs} pairs; "
              f"step {row['median_step_ms']:.3f} ms vs {row['sequential_median_step_ms']:.3f} ms")
    overhead, tiny_us = call_overhead_us(clock)
    mlp_step_us = float(np.median(seconds["sequential"]) / steps * 1e6)
    print(f"graph overhead per forward call (tiny 3-layer model): {overhead:.2f} us "
          f"(Sequential call {tiny_us:.2f} us) = {100 * overhead / mlp_step_us:.3f} % of a "
          f"Sequential mlp step ({mlp_step_us / 1e3:.3f} ms)")
    rows.append({"kind": "graph_call_overhead", "overhead_us": overhead, "sequential_tiny_call_us": tiny_us,
                 "fraction_of_mlp_step": overhead / mlp_step_us})
    write_results(f"functional_t{args.threads}.json", "functional and subclassed vs Sequential (mlp)",
                  rows, threads=args.threads, n=args.n, clock=args.clock)


if __name__ == "__main__":
    main()
