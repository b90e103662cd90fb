"""End-to-end training and inference throughput: minnet `fit`/`predict` vs a PyTorch loop.

    python benchmarks/bench_training.py [--threads 2] [--n 10000] [--epochs 3] [--models mlp,sig,cnn]

The three workloads of ../shared/anchors/torch_reference.py (batch 64, random data of
MNIST shape), run interleaved in the same process at the same thread count:
  mlp  784-256-128-10 ReLU, SGD momentum 0.9, cross-entropy from logits
  sig  784-256-10 Sigmoid + Dropout(0.2), Adam
  cnn  Conv(16,3,p1)-BN-ReLU-MaxPool2-Conv(32,3,p1)-BN-ReLU-MaxPool2-Flatten-Dropout(0.25)-Dense(10), Adam
For each: median samples/s over `--epochs` epochs of training and of inference, the
ratio minnet/torch, and the peak RSS growth of each framework's training (measured in a
child process per framework so one does not hide the other). JSON -> benchmarks/results/training.json
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def build_minnet(name, mn):
    from minnet import layers, optimizers
    mn.manual_seed(0)
    if name == "mlp":
        model = mn.Sequential([layers.Input((784,)), layers.Dense(256, activation="relu"),
                               layers.Dense(128, activation="relu"), layers.Dense(10)])
        opt = optimizers.SGD(learning_rate=0.01, momentum=0.9)
    elif name == "sig":
        model = mn.Sequential([layers.Input((784,)), layers.Dense(256), layers.Sigmoid(),
                               layers.Dropout(0.2), layers.Dense(10)])
        opt = optimizers.Adam(learning_rate=1e-3, epsilon=1e-8)
    else:
        model = mn.Sequential([layers.Input((1, 28, 28)),
                               layers.Conv2D(16, 3, padding=1), layers.BatchNormalization(), layers.ReLU(),
                               layers.MaxPooling2D(2),
                               layers.Conv2D(32, 3, padding=1), layers.BatchNormalization(), layers.ReLU(),
                               layers.MaxPooling2D(2), layers.Flatten(), layers.Dropout(0.25),
                               layers.Dense(10)])
        opt = optimizers.Adam(learning_rate=1e-3, epsilon=1e-8)
    model.compile(optimizer=opt, loss=mn.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def build_torch(name, torch):
    nn = torch.nn
    torch.manual_seed(0)
    if name == "mlp":
        model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))
        opt = torch.optim.SGD(model.parameters(), 0.01, momentum=0.9)
    elif name == "sig":
        model = nn.Sequential(nn.Linear(784, 256), nn.Sigmoid(), nn.Dropout(0.2), nn.Linear(256, 10))
        opt = torch.optim.Adam(model.parameters(), 1e-3)
    else:
        model = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Flatten(), nn.Dropout(0.25), nn.Linear(32 * 7 * 7, 10))
        opt = torch.optim.Adam(model.parameters(), 1e-3)
    return model, opt


def data(name, n):
    rng = np.random.default_rng(0)
    shape = (n, 1, 28, 28) if name == "cnn" else (n, 784)
    return rng.standard_normal(shape).astype(np.float32), rng.integers(0, 10, n).astype(np.int64)


def minnet_epoch(model, x, y):
    t = time.perf_counter()
    model.fit(x, y, batch_size=64, epochs=1, verbose=0, shuffle=True)
    return len(x) / (time.perf_counter() - t)


def minnet_predict(model, x):
    t = time.perf_counter()
    model.predict(x, batch_size=64)
    return len(x) / (time.perf_counter() - t)


def torch_epoch(torch, model, opt, x, y):
    lossf = torch.nn.CrossEntropyLoss()
    model.train()
    perm = torch.randperm(len(x))
    t = time.perf_counter()
    for i in range(0, len(x), 64):
        idx = perm[i:i + 64]
        opt.zero_grad()
        lossf(model(x[idx]), y[idx]).backward()
        opt.step()
    return len(x) / (time.perf_counter() - t)


def torch_predict(torch, model, x):
    model.eval()
    t = time.perf_counter()
    with torch.no_grad():
        for i in range(0, len(x), 64):
            model(x[i:i + 64])
    return len(x) / (time.perf_counter() - t)


def peak_rss_child(framework, name, n, threads):
    """Peak RSS growth (MiB) of training 1 epoch in a fresh process."""
    out = subprocess.run([sys.executable, __file__, "--memory-child", framework, "--models", name,
                          "--n", str(n), "--threads", str(threads)], capture_output=True, text=True)
    try:
        return float(out.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return float("nan")


def memory_child(framework, name, n, threads):
    x, y = data(name, n)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if framework == "minnet":
        import minnet as mn
        mn.set_num_threads(threads)
        model = build_minnet(name, mn)
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        minnet_epoch(model, x, y)
    else:
        import torch
        torch.set_num_threads(threads)
        model, opt = build_torch(name, torch)
        xt, yt = torch.from_numpy(x), torch.from_numpy(y)
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        torch_epoch(torch, model, opt, xt, yt)
    del before
    print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024.0)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--n", type=int, default=10000)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--models", default="mlp,sig,cnn")
    parser.add_argument("--no-memory", action="store_true")
    parser.add_argument("--memory-child", default=None)
    args = parser.parse_args()
    names = args.models.split(",")
    if args.memory_child:
        memory_child(args.memory_child, names[0], args.n, args.threads)
        return

    import minnet as mn
    mn.set_num_threads(args.threads)
    try:
        import torch
        torch.set_num_threads(args.threads)
    except ImportError:
        torch = None
    results = {"threads": args.threads, "n": args.n, "epochs": args.epochs, "models": {}}
    for name in names:
        x, y = data(name, args.n)
        model = build_minnet(name, mn)
        minnet_epoch(model, x[:1000], y[:1000])          # warm-up (builds the model)
        r = {"minnet_train": [], "minnet_predict": [], "torch_train": [], "torch_predict": []}
        if torch is not None:
            tm, topt = build_torch(name, torch)
            xt, yt = torch.from_numpy(x), torch.from_numpy(y)
            torch_epoch(torch, tm, topt, xt[:1000], yt[:1000])
        for _ in range(args.epochs):                       # interleaved
            r["minnet_train"].append(minnet_epoch(model, x, y))
            r["minnet_predict"].append(minnet_predict(model, x))
            if torch is not None:
                r["torch_train"].append(torch_epoch(torch, tm, topt, xt, yt))
                r["torch_predict"].append(torch_predict(torch, tm, xt))
        summary = {k: float(np.median(v)) for k, v in r.items() if v}
        if torch is not None:
            summary["train_ratio"] = summary["minnet_train"] / summary["torch_train"]
            summary["predict_ratio"] = summary["minnet_predict"] / summary["torch_predict"]
        if not args.no_memory:
            summary["minnet_peak_rss_mib"] = peak_rss_child("minnet", name, args.n, args.threads)
            if torch is not None:
                summary["torch_peak_rss_mib"] = peak_rss_child("torch", name, args.n, args.threads)
        results["models"][name] = summary
        line = f"{name:4s} train {summary['minnet_train']:9,.0f} samples/s"
        if torch is not None:
            line += f" (torch {summary['torch_train']:9,.0f}, ratio {summary['train_ratio']:.2f})"
        line += f" | predict {summary['minnet_predict']:9,.0f}"
        if torch is not None:
            line += f" (torch {summary['torch_predict']:9,.0f}, ratio {summary['predict_ratio']:.2f})"
        if "minnet_peak_rss_mib" in summary:
            line += f" | peak RSS growth {summary['minnet_peak_rss_mib']:.0f} MiB"
            if "torch_peak_rss_mib" in summary:
                line += f" (torch {summary['torch_peak_rss_mib']:.0f} MiB)"
        print(line, flush=True)
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    with open(os.path.join(HERE, "results", f"training_t{args.threads}.json"), "w") as f:
        json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
