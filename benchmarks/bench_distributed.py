"""Data-parallel fit over MPI: 2 ranks x 1 thread against 1 rank x 1 thread (and 1 x 2 threads).

    python benchmarks/bench_distributed.py [--pairs 2] [--n 2048] [--epochs 3]

The CNN workload of bench_training.py (Conv16-BN-ReLU-Pool-Conv32-BN-ReLU-Pool-Dropout-
Dense10, Adam, global batch 64, random data of MNIST shape, channels_first). Each
configuration runs in its own processes, started from here:

  1x1  python bench_distributed.py --worker --threads 1
  1x2  python bench_distributed.py --worker --threads 2          (minnet's own thread scaling)
  2x1  mpiexec -n 2 python bench_distributed.py --worker --threads 1

1x1 and 2x1 run as interleaved pairs (``--pairs``), and every pair is reported, because the
machine is shared: a pair's ratio is the figure, the spread between pairs its noise. A
worker times ``--epochs`` epochs after one warm-up epoch (median samples/s). Under MPI it
also reports the all-reduce time per step (a blocking all-reduce of the gradient's bytes,
median of 200) and the time ``optimizer.step`` waited for the buckets backward started
(exposed: the all-reduce's unfinished part plus any wait for the slower rank); the
fraction hidden behind backward is ``max(0, 1 - exposed / all-reduce)``.

Then the model for 4-256 ranks (docs/distributed.md): a ring all-reduce of S bytes over P
ranks takes ``2 (P - 1) / P * S / bandwidth + 2 (P - 1) * latency``; a step on P ranks takes
``B / P * t_sample + t_allreduce`` (nothing hidden: the conservative case), with t_sample
the measured 1x1 compute time per sample. P ranks pay (>= 50% parallel efficiency) once
``B / P * t_sample >= t_allreduce``, that is from the global batch
``B_min = P * t_allreduce / t_sample``.
JSON -> benchmarks/results/distributed.json
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

# Typical cluster links: (name, bandwidth in bytes/s, latency per message in s).
LINKS = [("10 Gb/s Ethernet (TCP)", 10e9 / 8, 50e-6),
         ("25 Gb/s Ethernet (RoCE)", 25e9 / 8, 10e-6),
         ("100 Gb/s InfiniBand EDR", 100e9 / 8, 2e-6)]
RANKS = [4, 8, 16, 32, 64, 128, 256]


def worker(args):
    import minnet as mn
    import bench_training
    mn.distribution.initialize()
    strategy = mn.distribution.DataParallel(bucket_mb=args.bucket_mb)
    mn.distribution.set_distribution(strategy)
    mn.set_num_threads(args.threads)
    model = bench_training.build_minnet("cnn", mn)
    x, y = bench_training.data("cnn", args.n)
    rates = []
    for epoch in range(args.epochs + 1):
        start = time.perf_counter()
        model.fit(x, y, batch_size=64, epochs=1, verbose=0, shuffle=True, seed=epoch)
        if epoch:            # the first epoch warms up (buffers, caches)
            rates.append(len(x) / (time.perf_counter() - start))
    result = {"ranks": strategy.num_processes, "threads": args.threads,
              "samples_per_s": float(np.median(rates)), "all_samples_per_s": rates}
    if strategy.num_processes > 1:
        stats = strategy.fit_stats
        buffer = np.zeros(stats["gradient_bytes"] // 4, dtype=np.float32)
        times = []
        for _ in range(220):
            strategy.allreduce(np.zeros(1), "barrier")
            start = time.perf_counter()
            strategy.allreduce(buffer, "the timed all-reduce")
            times.append(time.perf_counter() - start)
        allreduce = float(np.median(times[20:]))
        exposed = stats["exposed_s"] / stats["steps"]        # of the last fit (one epoch)
        result.update(allreduce_ms=allreduce * 1e3, exposed_ms=exposed * 1e3,
                      hidden_fraction=max(0.0, 1.0 - exposed / allreduce),
                      gradient_bytes=stats["gradient_bytes"], buckets=stats["buckets"])
    if strategy.is_chief:
        print("RESULT " + json.dumps(result), flush=True)


def run(command, env):
    out = subprocess.run(command, capture_output=True, text=True, env=env, timeout=900)
    if out.returncode:
        raise SystemExit(f"{' '.join(command)} failed:\n{out.stdout}\n{out.stderr}")
    line = next(l for l in out.stdout.splitlines() if l.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])


def scaling(t_sample, gradient_bytes):
    rows = []
    for name, bandwidth, latency in LINKS:
        for p in RANKS:
            t_ar = 2 * (p - 1) / p * gradient_bytes / bandwidth + 2 * (p - 1) * latency
            b_min = p * t_ar / t_sample
            speedup_64 = p * 64 * t_sample / (64 * t_sample + t_ar)       # 64 samples per rank
            rows.append({"link": name, "ranks": p, "allreduce_ms": t_ar * 1e3,
                         "b_min": int(np.ceil(b_min)), "speedup_at_64_per_rank": speedup_64})
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", action="store_true")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--n", type=int, default=2048)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--pairs", type=int, default=2)
    parser.add_argument("--bucket-mb", type=float, default=1.0,
                        help="DataParallel's bucket size (the CNN's 80 KiB gradient is one 1 MiB bucket)")
    args = parser.parse_args()
    if args.worker:
        return worker(args)
    env = dict(os.environ, MINNET_NUM_THREADS="1", OMP_NUM_THREADS="1")
    mpiexec = shutil.which("mpiexec") or os.path.join(os.path.dirname(sys.executable), "mpiexec")
    me = [sys.executable, os.path.abspath(__file__), "--worker", "--n", str(args.n),
          "--epochs", str(args.epochs), "--bucket-mb", str(args.bucket_mb)]
    pairs = []
    for i in range(args.pairs):
        one = run(me + ["--threads", "1"], env)
        two = run([mpiexec, "-n", "2"] + me + ["--threads", "1"], env)
        pairs.append({"1x1": one, "2x1": two, "ratio": two["samples_per_s"] / one["samples_per_s"]})
        print(f"pair {i + 1}: 1 rank x 1 thread {one['samples_per_s']:.0f} samples/s, 2 ranks x 1 "
              f"thread {two['samples_per_s']:.0f} samples/s: {pairs[-1]['ratio']:.2f}x; all-reduce "
              f"{two['allreduce_ms']:.3f} ms/step ({two['gradient_bytes'] / 1024:.0f} KiB in "
              f"{two['buckets']} bucket(s)), exposed {two['exposed_ms']:.3f} ms/step, hidden "
              f"{two['hidden_fraction']:.0%}", flush=True)
    threads = run(me + ["--threads", "2"], dict(env, MINNET_NUM_THREADS="2", OMP_NUM_THREADS="2"))
    base = float(np.median([p["1x1"]["samples_per_s"] for p in pairs]))
    print(f"1 rank x 2 threads: {threads['samples_per_s']:.0f} samples/s "
          f"({threads['samples_per_s'] / base:.2f}x the median 1x1)")
    t_sample = 1.0 / base
    rows = scaling(t_sample, pairs[-1]["2x1"]["gradient_bytes"])
    print(f"\nmodel: t_sample {t_sample * 1e3:.3f} ms (measured 1x1), gradient "
          f"{pairs[-1]['2x1']['gradient_bytes'] / 1024:.0f} KiB, ring all-reduce, nothing hidden")
    print("| link | ranks | all-reduce (ms) | B_min (50% efficiency) | speedup at 64 samples/rank |")
    print("|---|---|---|---|---|")
    for row in rows:
        print(f"| {row['link']} | {row['ranks']} | {row['allreduce_ms']:.2f} | {row['b_min']} | "
              f"{row['speedup_at_64_per_rank']:.1f}x |")
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    with open(os.path.join(HERE, "results", "distributed.json"), "w") as f:
        json.dump({"pairs": pairs, "1x2": threads, "scaling": rows, "links": LINKS,
                   "cpu_count": os.cpu_count()}, f, indent=2)


if __name__ == "__main__":
    main()
