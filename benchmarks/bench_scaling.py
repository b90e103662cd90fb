"""Scaling curves: training throughput against batch size, width and threads, minnet beside PyTorch.

    python benchmarks/bench_scaling.py [--quick] [--plots] [--sweeps batch width threads]

Two models, float32, trained on random data (forward + backward + optimizer step; minnet
with ``model.fit``, PyTorch with the usual loop), each point the median samples/s of
``--repeat`` timed runs of ``--steps`` steps after one warm-up run, the two libraries
interleaved in one process:

* ``mlp``: 784 -> width -> width -> 10, ReLU, SGD with momentum (width 256 by default);
* ``cnn``: 1x28x28 -> Conv2D(c, 3, p1)-ReLU-MaxPool2-Conv2D(c, 3, p1)-ReLU-global average
  pool-Dense(10), Adam (c = 16 by default).

Sweeps (at 1 thread, batch 64 unless swept): ``batch`` 16..1024 for both models;
``width`` 64..2048 Dense units for the mlp and 16..256 channels for the cnn; ``threads``
1 and 2 at batch 64.  ``--quick`` trims the points and steps (about 2-3 minutes on two
cores).  Writes benchmarks/results/scaling.json; ``--plots`` draws one PNG per sweep into
docs/performance/ with matplotlib (minnet solid, PyTorch dashed).
"""
import argparse
import os
import time

import numpy as np

from _common import write_results

HERE = os.path.dirname(os.path.abspath(__file__))
PLOTS = os.path.join(os.path.dirname(HERE), "docs", "performance")

DEFAULT_WIDTH = {"mlp": 256, "cnn": 16}
SWEEPS = {
    "batch": {"full": [16, 32, 64, 128, 256, 512, 1024], "quick": [16, 64, 256, 1024]},
    "width_mlp": {"full": [64, 128, 256, 512, 1024, 2048], "quick": [64, 256, 1024, 2048]},
    "width_cnn": {"full": [16, 32, 64, 128, 256], "quick": [16, 64, 256]},
    "threads": {"full": [1, 2], "quick": [1, 2]},
}


def build_minnet(mn, kind, width):
    from minnet import layers, optimizers
    mn.manual_seed(0)
    if kind == "mlp":
        model = mn.Sequential([layers.Input((784,)), layers.Dense(width, activation="relu"),
                               layers.Dense(width, activation="relu"), layers.Dense(10)])
        opt = optimizers.SGD(learning_rate=0.01, momentum=0.9)
    else:
        cf = dict(data_format="channels_first")
        model = mn.Sequential([layers.Input((1, 28, 28)), layers.Conv2D(width, 3, padding=1, **cf),
                               layers.ReLU(), layers.MaxPooling2D(2, **cf),
                               layers.Conv2D(width, 3, padding=1, **cf), layers.ReLU(),
                               layers.GlobalAveragePooling2D(**cf), layers.Dense(10)])
        opt = optimizers.Adam(learning_rate=1e-3)
    model.compile(optimizer=opt, loss=mn.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def build_torch(torch, kind, width):
    nn = torch.nn
    torch.manual_seed(0)
    if kind == "mlp":
        model = nn.Sequential(nn.Linear(784, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(),
                              nn.Linear(width, 10))
        opt = torch.optim.SGD(model.parameters(), 0.01, momentum=0.9)
    else:
        model = nn.Sequential(nn.Conv2d(1, width, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Conv2d(width, width, 3, padding=1), nn.ReLU(),
                              nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(width, 10))
        opt = torch.optim.Adam(model.parameters(), 1e-3)
    return model, opt


def runners(mn, torch, kind, batch, width, steps):
    """Two zero-argument calls, each training ``steps`` steps of ``batch`` samples."""
    rng = np.random.default_rng(0)
    n = batch * steps
    x = rng.standard_normal((n, 784) if kind == "mlp" else (n, 1, 28, 28)).astype(np.float32)
    y = rng.integers(0, 10, n).astype(np.int64)
    model = build_minnet(mn, kind, width)
    tmodel, opt = build_torch(torch, kind, width)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    lossf = torch.nn.CrossEntropyLoss()

    def run_minnet():
        model.fit(x, y, batch_size=batch, epochs=1, verbose=0, shuffle=False)

    def run_torch():
        tmodel.train()
        for i in range(0, n, batch):
            opt.zero_grad()
            lossf(tmodel(xt[i:i + batch]), yt[i:i + batch]).backward()
            opt.step()
    return n, run_minnet, run_torch


def measure(mn, torch, kind, batch, width, threads, steps, repeat):
    mn.set_num_threads(threads)
    torch.set_num_threads(threads)
    n, run_minnet, run_torch = runners(mn, torch, kind, batch, width, steps)
    run_minnet()
    run_torch()
    times = {"minnet": [], "torch": []}
    for _ in range(repeat):                    # interleaved: both see the same load
        for name, run in (("minnet", run_minnet), ("torch", run_torch)):
            start = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - start)
    rates = {name: [n / t for t in ts] for name, ts in times.items()}
    return {"model": kind, "batch": batch, "width": width, "threads": threads,
            "minnet_samples_s": float(np.median(rates["minnet"])),
            "torch_samples_s": float(np.median(rates["torch"])),
            "minnet_spread": [float(min(rates["minnet"])), float(max(rates["minnet"]))],
            "torch_spread": [float(min(rates["torch"])), float(max(rates["torch"]))]}


def steps_for(kind, batch, width, quick):
    """Enough steps for ~0.1-0.5 s a run, fewer for the big points."""
    work = batch * (width / DEFAULT_WIDTH[kind]) ** (2 if kind == "cnn" else 1)
    steps = max(2, int((2048 if kind == "mlp" else 512) / work * 8))
    return min(steps, 8 if quick else 16)


def sweep_points(sweeps, size):
    points = []
    for kind in ("mlp", "cnn"):
        if "batch" in sweeps:
            points += [("batch", kind, b, DEFAULT_WIDTH[kind], 1) for b in SWEEPS["batch"][size]]
        if "width" in sweeps:
            points += [("width", kind, 64, w, 1) for w in SWEEPS[f"width_{kind}"][size]]
        if "threads" in sweeps:
            points += [("threads", kind, 64, DEFAULT_WIDTH[kind], t) for t in SWEEPS["threads"][size]]
    return points


def plot(rows, directory):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    os.makedirs(directory, exist_ok=True)
    written = []
    labels = {"batch": "batch size", "width": "width (Dense units / Conv2D channels)",
              "threads": "threads"}
    for sweep, label in labels.items():
        mine = [r for r in rows if r["sweep"] == sweep]
        if not mine:
            continue
        fig, axes = plt.subplots(1, 2, figsize=(8, 3.2))
        for ax, kind in zip(axes, ("mlp", "cnn")):
            pts = sorted((r for r in mine if r["model"] == kind), key=lambda r: r[sweep])
            xs = [r[sweep] for r in pts]
            for lib, style in (("minnet", "-o"), ("torch", "--s")):
                ax.plot(xs, [r[f"{lib}_samples_s"] for r in pts], style, ms=3,
                        label="minnet" if lib == "minnet" else "PyTorch")
            if sweep != "threads":
                ax.set_xscale("log", base=2)
            ax.set_xticks(xs)
            ax.set_xticklabels([str(v) for v in xs], fontsize=7)
            ax.set_yscale("log")
            ax.set_title(f"{kind}: samples/s vs {sweep}", fontsize=9)
            ax.set_xlabel(label if sweep != "width" else ("Dense units" if kind == "mlp" else "Conv2D channels"),
                          fontsize=8)
            ax.tick_params(labelsize=7)
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=7)
        fig.tight_layout()
        path = os.path.join(directory, f"scaling_{sweep}.png")
        fig.savefig(path, dpi=80)
        plt.close(fig)
        written.append(path)
    return written


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer points and steps (~2-3 minutes)")
    parser.add_argument("--plots", action="store_true", help="draw PNGs into docs/performance/")
    parser.add_argument("--sweeps", nargs="+", default=["batch", "width", "threads"],
                        choices=["batch", "width", "threads"])
    parser.add_argument("--repeat", type=int, default=None, help="timed runs per point (default 3, quick 2)")
    parser.add_argument("--plot-dir", default=PLOTS)
    args = parser.parse_args()
    import torch
    import minnet as mn
    size = "quick" if args.quick else "full"
    repeat = args.repeat or (2 if args.quick else 3)
    rows = []
    print(f"{'sweep':8s} {'model':5s} {'batch':>5s} {'width':>5s} {'thr':>3s} "
          f"{'minnet/s':>10s} {'torch/s':>10s} {'ratio':>6s}")
    for sweep, kind, batch, width, threads in sweep_points(args.sweeps, size):
        steps = steps_for(kind, batch, width, args.quick)
        row = {"sweep": sweep, "steps": steps,
               **measure(mn, torch, kind, batch, width, threads, steps, repeat)}
        rows.append(row)
        print(f"{sweep:8s} {kind:5s} {batch:5d} {width:5d} {threads:3d} {row['minnet_samples_s']:10.0f} "
              f"{row['torch_samples_s']:10.0f} {row['minnet_samples_s'] / row['torch_samples_s']:6.2f}",
              flush=True)
    write_results("scaling.json", "training throughput vs batch, width, threads", rows, torch=torch,
                  repeat=repeat, load=os.getloadavg())
    if args.plots:
        for path in plot(rows, args.plot_dir):
            print(f"wrote {os.path.relpath(path)} ({os.path.getsize(path) // 1024} KB)")


if __name__ == "__main__":
    main()
