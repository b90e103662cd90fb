"""Run every benchmark in benchmarks/ once and print one summary table.

    python benchmarks/run_all.py                 # everything (about 10 minutes on 2 cores)
    python benchmarks/run_all.py --quick         # smaller training runs (about 4 minutes)
    python benchmarks/run_all.py --only training conv
    python benchmarks/run_all.py --plots [--quick]   # also the scaling curves (bench_scaling.py)
                                                     # drawn into docs/performance/*.png

Each ``bench_*.py`` runs in its own process (so thread settings and memory do not leak
from one to the next) with its default arguments; ``bench_training.py`` runs once per
thread count in ``--threads`` (default 1 and 2) and once more with ``--profile``.  The
full output of every script is printed as it runs, then a table with one row per
benchmark: wall time, exit status and the JSON file it wrote in benchmarks/results/.
Figures are only comparable within one run: the scripts time minnet and PyTorch
interleaved in the same process and report their ratio.

On a machine shared with other heavy processes, OpenMP's default busy-waiting can make
both libraries stall for milliseconds per parallel region; ``OMP_WAIT_POLICY=passive
python benchmarks/run_all.py`` gives steadier (slightly lower) numbers there
(docs/performance.md).
"""
import argparse
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

# (name, script, extra arguments, results file written)
KERNEL_BENCHMARKS = [
    ("conv", "bench_conv.py", [], "conv.json"),
    ("activations", "bench_activations.py", [], "activations.json"),
    ("norm_dropout_pool", "bench_norm_dropout_pool.py", [], "norm_dropout_pool.json"),
    ("optimizers", "bench_optimizers.py", [], None),
    ("autograd", "bench_autograd.py", [], "autograd.json"),
    ("linear", "bench_linear.py", [], "linear.json"),
]


def plan(args):
    """The list of (name, argv, results file) to run, in order."""
    runs = []
    training_size = ["--n", "3200", "--epochs", "2"] if args.quick else []
    for threads in args.threads:
        runs.append((f"training (t={threads})", ["bench_training.py", "--threads", str(threads)]
                     + training_size, f"training_t{threads}.json"))
    runs.append((f"profile (t={max(args.threads)})",
                 ["bench_training.py", "--profile", "--threads", str(max(args.threads))]
                 + (["--n", "3200"] if args.quick else []),
                 f"profile_t{max(args.threads)}.json"))
    for name, script, extra, result in KERNEL_BENCHMARKS:
        runs.append((name, [script] + extra, result))
    if args.plots:
        runs.append(("scaling", ["bench_scaling.py", "--plots"] + (["--quick"] if args.quick else []),
                     "scaling.json"))
    # Keep the benchmarks that exist (a checkout may not have all of them yet).
    runs = [r for r in runs if os.path.exists(os.path.join(HERE, r[1][0]))]
    if args.only:
        runs = [r for r in runs if any(r[0].startswith(o) for o in args.only)]
    return runs


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2],
                        help="thread counts for the training benchmark (default: 1 2)")
    parser.add_argument("--quick", action="store_true", help="smaller training runs")
    parser.add_argument("--plots", action="store_true",
                        help="also run bench_scaling.py --plots: throughput vs batch, width and "
                             "threads, minnet beside PyTorch, as PNGs in docs/performance/")
    parser.add_argument("--only", nargs="+", default=None,
                        help="run only the benchmarks whose name starts with one of these")
    args = parser.parse_args()
    if any(t < 1 for t in args.threads):
        parser.error(f"Invalid value for argument `--threads`: expected ints >= 1. "
                     f"Received: {args.threads}")

    rows = []
    for name, argv, result in plan(args):
        print(f"\n=== {name}: python benchmarks/{' '.join(argv)}", flush=True)
        start = time.perf_counter()
        status = subprocess.call([sys.executable, os.path.join(HERE, argv[0])] + argv[1:])
        rows.append((name, time.perf_counter() - start, status,
                     os.path.join("benchmarks", "results", result) if result else "-"))

    print("\n" + f"{'benchmark':24s} {'seconds':>8s} {'status':>7s}  results")
    for name, seconds, status, result in rows:
        print(f"{name:24s} {seconds:8.1f} {'ok' if status == 0 else f'rc={status}':>7s}  {result}")
    sys.exit(0 if all(r[2] == 0 for r in rows) else 1)


if __name__ == "__main__":
    main()
