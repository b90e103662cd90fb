"""End-to-end training and inference throughput: minnet `fit`/`predict` vs a PyTorch loop.

    python benchmarks/bench_training.py [--threads 2] [--n 10000] [--epochs 3] [--models mlp,sig,cnn]

The three workloads of ../shared/anchors/torch_reference.py (batch 64, random data of
MNIST shape), run interleaved in the same process at the same thread count:
  mlp  784-256-128-10 ReLU, SGD momentum 0.9, cross-entropy from logits
  sig  784-256-10 Sigmoid + Dropout(0.2), Adam
  cnn  Conv(16,3,p1)-BN-ReLU-MaxPool2-Conv(32,3,p1)-BN-ReLU-MaxPool2-Flatten-Dropout(0.25)-Dense(10), Adam
For each: median samples/s over `--epochs` epochs of training and of inference, the
ratio minnet/torch, and each framework's memory (in a child process per framework so one
does not hide the other): the peak RSS growth during training (a 256-sample warm-up
and one epoch, sampled every millisecond) over the RSS just before it, and the process's
peak RSS (VmHWM).  JSON -> benchmarks/results/training_t<threads>.json

    python benchmarks/bench_training.py --profile [--models mlp]

prints where a training step's time goes instead: Cython kernels, optimizer arithmetic
(NumPy) and the rest (Python overhead).  JSON -> benchmarks/results/profile_t<threads>.json
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
# --data-format: the CNN's image layout (the environment carries it to the memory children).
DATA_FORMAT = os.environ.get("MINNET_BENCH_DATA_FORMAT", "channels_first")


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
        df = dict(data_format=DATA_FORMAT)
        if DATA_FORMAT == "channels_last":   # needs the image layers' data_format (issue #13)
            image = dict(data_format=DATA_FORMAT)
            shape, bn = (28, 28, 1), dict(axis=-1)
        else:        # every image layer told channels_first (the default is channels_last)
            image, shape, bn = dict(data_format=DATA_FORMAT), (1, 28, 28), dict(axis=1)
        try:
            layers.MaxPooling2D(2, **image)
        except TypeError as error:
            if DATA_FORMAT == "channels_last":
                raise SystemExit(f"--data-format {DATA_FORMAT}: this minnet's image layers do not "
                                 f"take data_format yet ({error})") from None
            image = {}       # a minnet from before issue #13: its image layers are NCHW only
        model = mn.Sequential([layers.Input(shape),
                               layers.Conv2D(16, 3, padding=1, **df), layers.BatchNormalization(**bn),
                               layers.ReLU(), layers.MaxPooling2D(2, **image),
                               layers.Conv2D(32, 3, padding=1, **df), layers.BatchNormalization(**bn),
                               layers.ReLU(), layers.MaxPooling2D(2, **image), layers.Flatten(**image),
                               layers.Dropout(0.25), layers.Dense(10)])
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
    if name == "cnn" and DATA_FORMAT == "channels_last":
        model = model.to(memory_format=torch.channels_last)
    return model, opt


def data(name, n):
    rng = np.random.default_rng(0)
    shape = (n, 1, 28, 28) if name == "cnn" else (n, 784)
    if name == "cnn" and DATA_FORMAT == "channels_last":
        shape = (n, 28, 28, 1)
    return rng.standard_normal(shape).astype(np.float32), rng.integers(0, 10, n).astype(np.int64)


def torch_inputs(torch, x, y):
    """x, y as torch tensors; channels_last data becomes NCHW in torch's channels_last
    memory format (the same bytes, torch's NHWC kernels)."""
    xt = torch.from_numpy(x)
    if xt.ndim == 4 and DATA_FORMAT == "channels_last":
        xt = xt.permute(0, 3, 1, 2)
    return xt, torch.from_numpy(y)


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


_KERNEL_MODULES = ("conv_kernels", "im2col_kernels", "winograd_kernels", "linear_kernels", "activations_kernels", "losses_kernels", "batchnorm_kernels", "pooling_kernels", "dropout_kernels")


def profile_split(name, mn, n, threads):
    """Where one training epoch's time goes: Cython kernels, optimizer arithmetic, the rest.

    Every Python-visible function of the kernel modules and every optimizer's ``_update``
    (NumPy ufuncs on the parameters) is wrapped in a timer for one epoch; what remains of
    the wall time is Python overhead (autograd bookkeeping, layer/functional dispatch and
    validation, batching, the loss wrapper, callbacks).  The wrappers add about 0.2 us per
    call, charged to the kernels.
    """
    import importlib
    x, y = data(name, n)
    model = build_minnet(name, mn)
    minnet_epoch(model, x[:1000], y[:1000])
    totals = {}
    patched = []
    depth = [0]     # kernel wrappers call each other (relu_forward -> _leaky_relu): time the outer one

    def timed(label, fn):
        def wrapper(*args, **kwargs):
            if depth[0]:
                return fn(*args, **kwargs)
            depth[0] += 1
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                totals[label] = totals.get(label, 0.0) + time.perf_counter() - t0
                depth[0] -= 1
        return wrapper

    for mod_name in _KERNEL_MODULES:
        mod = importlib.import_module(f"minnet._ext.{mod_name}")
        for attr in dir(mod):
            fn = getattr(mod, attr)
            if attr.startswith("__") or not callable(fn) or isinstance(fn, type):
                continue
            patched.append((mod, attr, fn))
            setattr(mod, attr, timed(f"kernel {mod_name}.{attr}", fn))
    opt = type(model.optimizer)
    patched.append((opt, "_update", opt.__dict__.get("_update", opt._update)))
    opt._update = timed("optimizer update (NumPy)", opt._update)
    try:
        steps = -(-len(x) // 64)
        t0 = time.perf_counter()
        model.fit(x, y, batch_size=64, epochs=1, verbose=0, shuffle=True)
        wall = time.perf_counter() - t0
    finally:
        for owner, attr, fn in patched:
            setattr(owner, attr, fn)
    kernels = sum(v for k, v in totals.items() if k.startswith("kernel"))
    update = totals.get("optimizer update (NumPy)", 0.0)
    rows = sorted(totals.items(), key=lambda kv: -kv[1])
    split = {"steps": steps, "wall_ms_per_step": 1e3 * wall / steps,
             "kernels_ms_per_step": 1e3 * kernels / steps,
             "optimizer_ms_per_step": 1e3 * update / steps,
             "python_ms_per_step": 1e3 * (wall - kernels - update) / steps,
             "detail_ms_per_step": {k: 1e3 * v / steps for k, v in rows}}
    return split


def _mib(nbytes):
    return nbytes / 2**20


def minnet_buffer_accounting(name, mn):
    """minnet's own bytes for one training step of batch 64, by what holds them:
    parameters, their gradients, the optimizer state, the arrays the graph keeps for
    backward (read from each node's ctx between forward and backward: saved arrays,
    masks, indices; arrays that are parameters are not counted again), and the largest
    amount the buffer cache (mn.buffer_cache) held during a 10-step fit."""
    import numpy as np
    from minnet._ext import _memory
    from minnet.autograd.function import BackwardNode
    x, y = data(name, 640)
    model = build_minnet(name, mn)
    model.fit(x[:64], y[:64], batch_size=64, epochs=1, verbose=0)      # builds, fills the optimizer state
    params = model.parameters()
    param_ids = {id(p.data) for p in params}
    model.train()
    out = model.compute_loss(x[:64], y[:64], model(x[:64], training=True))
    saved, nodes, arrays, stack = 0, set(), set(param_ids), [out.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or id(node) in nodes:
            continue
        nodes.add(id(node))
        if isinstance(node, BackwardNode):
            ctx = node.ctx
            for a in list(ctx._saved) + list(vars(ctx).values()):
                if isinstance(a, np.ndarray) and id(a) not in arrays:
                    arrays.add(id(a))
                    saved += a.nbytes
        stack.extend(c for c, _ in node.next_functions)
    out.backward()
    grads = sum(p.grad.nbytes for p in params if p.grad is not None)
    state = sum(v.nbytes for st in model.optimizer._state for v in st.values()
                if isinstance(v, np.ndarray))
    model.fit(x, y, batch_size=64, epochs=1, verbose=0)
    peak_cache = _memory.stats()["peak_cached_bytes"]          # of that fit
    return {"parameters_mib": _mib(sum(p.data.nbytes for p in params)), "gradients_mib": _mib(grads),
            "optimizer_state_mib": _mib(state), "saved_for_backward_mib": _mib(saved),
            "buffer_cache_peak_mib": _mib(peak_cache)}


def torch_buffer_accounting(name, torch):
    """The same for the PyTorch loop: saved tensors through saved_tensors_hooks (unique
    storages, parameters excluded), parameters, gradients, optimizer state."""
    x, y = data(name, 128)
    model, opt = build_torch(name, torch)
    xt, yt = torch_inputs(torch, x, y)
    torch_epoch(torch, model, opt, xt[:64], yt[:64])
    param_ptrs = {p.data_ptr() for p in model.parameters()}
    storages = {}

    def pack(t):
        ptr = t.untyped_storage().data_ptr()
        if ptr not in param_ptrs:
            storages[ptr] = t.untyped_storage().nbytes()
        return t

    model.train()
    opt.zero_grad()
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = torch.nn.CrossEntropyLoss()(model(xt[:64]), yt[:64])
    loss.backward()
    state = sum(v.nbytes for st in opt.state.values() for v in st.values()
                if torch.is_tensor(v) and v.dim() > 0)
    return {"parameters_mib": _mib(sum(p.nbytes for p in model.parameters())),
            "gradients_mib": _mib(sum(p.grad.nbytes for p in model.parameters() if p.grad is not None)),
            "optimizer_state_mib": _mib(state), "saved_for_backward_mib": _mib(sum(storages.values()))}


def peak_rss_child(framework, name, n, threads):
    """(peak RSS growth during 1 training epoch, peak RSS of the whole process) in MiB,
    measured in a fresh process so one framework's memory does not hide the other's."""
    out = subprocess.run([sys.executable, __file__, "--memory-child", framework, "--models", name,
                          "--n", str(n), "--threads", str(threads)], capture_output=True, text=True)
    try:
        growth, total = out.stdout.strip().splitlines()[-1].split()
        return float(growth), float(total)
    except (ValueError, IndexError):
        return float("nan"), float("nan")


def _current_rss_mib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


class _RssSampler:
    """Samples the current RSS every millisecond in a thread (kernels release the GIL)."""

    def __init__(self):
        import threading
        self.peak = _current_rss_mib()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, _current_rss_mib())
            self._stop.wait(0.001)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, _current_rss_mib())


def _peak_rss_mib():
    """This process's peak RSS.  VmHWM, not ru_maxrss: Linux carries ru_maxrss over
    exec(), so a child started from a big parent would report the parent's peak."""
    if os.path.exists("/proc/self/status"):
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def memory_child(framework, name, n, threads):
    """Prints 'growth total': the peak RSS during training (a 256-sample warm-up epoch,
    then one full epoch) minus the RSS just before it (libraries imported, model built,
    data in memory), and the process's peak RSS (interpreter, libraries, data, training)."""
    x, y = data(name, n)
    if framework == "minnet":
        import minnet as mn
        mn.set_num_threads(threads)
        model = build_minnet(name, mn)

        def run():
            minnet_epoch(model, x[:256], y[:256])
            minnet_epoch(model, x, y)
    else:
        import torch
        torch.set_num_threads(threads)
        model, opt = build_torch(name, torch)
        xt, yt = torch_inputs(torch, x, y)

        def run():
            torch_epoch(torch, model, opt, xt[:256], yt[:256])
            torch_epoch(torch, model, opt, xt, yt)
    if os.path.exists("/proc/self/statm"):
        base = _current_rss_mib()
        with _RssSampler() as sampler:
            run()
        growth = sampler.peak - base
    else:
        base = _peak_rss_mib()
        run()
        growth = _peak_rss_mib() - base
    print(f"{growth:.2f} {_peak_rss_mib():.2f}")


def main():
    global DATA_FORMAT
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--data-format", default=DATA_FORMAT,
                        choices=["channels_first", "channels_last"],
                        help="the CNN's image layout (torch runs the same data in NCHW, "
                             "channels_last memory format for channels_last)")
    parser.add_argument("--n", type=int, default=10000)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--models", default="mlp,sig,cnn")
    parser.add_argument("--no-memory", action="store_true")
    parser.add_argument("--memory-child", default=None)
    parser.add_argument("--profile", action="store_true",
                        help="print the kernels / optimizer / Python-overhead split of a step")
    args = parser.parse_args()
    names = args.models.split(",")
    DATA_FORMAT = os.environ["MINNET_BENCH_DATA_FORMAT"] = args.data_format
    if args.memory_child:
        memory_child(args.memory_child, names[0], args.n, args.threads)
        return
    if args.profile:
        import minnet as mn
        mn.set_num_threads(args.threads)
        out = {}
        for name in names:
            split = profile_split(name, mn, args.n, args.threads)
            out[name] = split
            print(f"{name:4s} {split['wall_ms_per_step']:.3f} ms/step = kernels "
                  f"{split['kernels_ms_per_step']:.3f} + optimizer {split['optimizer_ms_per_step']:.3f}"
                  f" + Python {split['python_ms_per_step']:.3f}")
            for label, ms in list(split["detail_ms_per_step"].items())[:8]:
                print(f"       {ms:7.3f} ms  {label}")
        os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
        with open(os.path.join(HERE, "results", f"profile_t{args.threads}.json"), "w") as f:
            json.dump(out, f, indent=2)
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
            xt, yt = torch_inputs(torch, x, y)
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
            (summary["minnet_train_rss_growth_mib"],
             summary["minnet_peak_rss_mib"]) = peak_rss_child("minnet", name, args.n, args.threads)
            if torch is not None:
                (summary["torch_train_rss_growth_mib"],
                 summary["torch_peak_rss_mib"]) = peak_rss_child("torch", name, args.n, args.threads)
        if not args.no_memory:
            summary["minnet_buffers"] = minnet_buffer_accounting(name, mn)
            if torch is not None:
                summary["torch_buffers"] = torch_buffer_accounting(name, torch)
        results["models"][name] = summary
        line = f"{name:4s} train {summary['minnet_train']:9,.0f} samples/s"
        if torch is not None:
            line += f" (torch {summary['torch_train']:9,.0f}, ratio {summary['train_ratio']:.2f})"
        line += f" | predict {summary['minnet_predict']:9,.0f}"
        if torch is not None:
            line += f" (torch {summary['torch_predict']:9,.0f}, ratio {summary['predict_ratio']:.2f})"
        if "minnet_peak_rss_mib" in summary:
            line += (f" | training RSS growth {summary['minnet_train_rss_growth_mib']:.1f} MiB,"
                     f" process peak {summary['minnet_peak_rss_mib']:.0f} MiB")
            if "torch_peak_rss_mib" in summary:
                line += (f" (torch {summary['torch_train_rss_growth_mib']:.1f} MiB,"
                         f" {summary['torch_peak_rss_mib']:.0f} MiB)")
        print(line, flush=True)
        if "minnet_buffers" in summary:
            b, t = summary["minnet_buffers"], summary.get("torch_buffers", {})
            parts = [f"{k[:-4].replace('_', ' ')} {v:.2f}" + (f" ({t[k]:.2f})" if k in t else "")
                     for k, v in b.items()]
            print(f"     buffers, MiB (torch): " + ", ".join(parts), flush=True)
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    with open(os.path.join(HERE, "results", f"training_t{args.threads}.json"), "w") as f:
        json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
