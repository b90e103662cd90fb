"""Helpers shared by the benchmark scripts: timing and writing results."""
import json
import os
import platform
import time

import numpy as np

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def median_ms(fn, repeat, warmup=1, clock=time.perf_counter):
    """Median time of ``fn()`` in milliseconds over ``repeat`` calls (after warm-up): wall
    time, or with ``clock=time.thread_time`` the CPU time of the calling thread."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        t = clock()
        fn()
        times.append(clock() - t)
    return float(np.median(times) * 1e3)


def write_results(filename, title, rows, torch=None, **extra):
    """Write ``rows`` with the machine description to ``benchmarks/results/<filename>``."""
    result = {"benchmark": title, "rows": rows, "platform": platform.platform(),
              "processor": platform.processor(), "cpu_count": os.cpu_count(),
              "torch_version": None if torch is None else torch.__version__, **extra}
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, filename), "w") as f:
        json.dump(result, f, indent=2)
