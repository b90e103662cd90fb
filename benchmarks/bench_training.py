"""End-to-end training and inference throughput: minnet `fit`/`predict` vs a PyTorch loop.

    python benchmarks/bench_training.py [--threads 2] [--n 10000] [--epochs 3] [--models mlp,sig,cnn,cifar]

The three workloads of ../shared/anchors/torch_reference.py (batch 64, random data of
MNIST shape) and a CIFAR-shaped CNN (issue #30), run interleaved in the same process at
the same thread count:
  mlp    784-256-128-10 ReLU, SGD momentum 0.9, cross-entropy from logits
  sig    784-256-10 Sigmoid + Dropout(0.2), Adam
  smx    the mlp as Keras tutorials write it: Dense(10, activation="softmax") and
         loss="sparse_categorical_crossentropy" (probabilities), Adam; torch runs the same
         math (Softmax, then Keras's -log(clip(p / sum(p), 1e-7, 1 - 1e-7))[label])
  cnn    Conv(16,3,p1)-BN-ReLU-MaxPool2-Conv(32,3,p1)-BN-ReLU-MaxPool2-Flatten-Dropout(0.25)-Dense(10), Adam
  cifar  3x32x32: Conv(32,3,p1)-BN-ReLU-Conv(64,3,s2,p1)-BN-ReLU-Conv(128,3,s2,p1)-BN-ReLU-
         GlobalAveragePooling2D-Dense(10), Adam; --n-cifar samples (default 2560: a step
         costs about 10 cnn steps)
--data-format sets the layout of both image workloads.
For each: median samples/s over `--epochs` epochs of training and of inference, the
ratio minnet/torch, and each framework's memory (in a child process per framework so one
does not hide the other): the peak RSS growth during training (a 256-sample warm-up
and one epoch, sampled every millisecond) over the RSS just before it, and the process's
peak RSS (VmHWM).  JSON -> benchmarks/results/training_t<threads>.json

    python benchmarks/bench_training.py --profile [--models mlp]

prints where a training step's time goes instead, a table per workload: the step's
phases (forward, loss, backward, optimizer, the trainer loop around them), each split
into Cython kernels and framework time (all that is not a kernel), and the framework
overhead as a share of the step; then the cost of one ``compute_loss`` call and of
``model.losses`` on one batch.  JSON -> benchmarks/results/profile_t<threads>.json
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
IMAGE_MODELS = ("cnn", "cifar")


def _image_arguments(layers):
    """(image layers' kwargs, BatchNormalization's kwargs) for DATA_FORMAT: every image
    layer is told the layout (the default is channels_last)."""
    bn = dict(axis=-1) if DATA_FORMAT == "channels_last" else dict(axis=1)
    return dict(data_format=DATA_FORMAT), bn


def build_minnet(name, mn):
    from minnet import layers, optimizers
    mn.manual_seed(0)
    if name == "mlp":
        model = mn.Sequential([layers.Input((784,)), layers.Dense(256, activation="relu"),
                               layers.Dense(128, activation="relu"), layers.Dense(10)])
        opt = optimizers.SGD(learning_rate=0.01, momentum=0.9)
    elif name == "smx":
        model = mn.Sequential([layers.Input((784,)), layers.Dense(256, activation="relu"),
                               layers.Dense(128, activation="relu"),
                               layers.Dense(10, activation="softmax")])
        model.compile(optimizer=optimizers.Adam(learning_rate=1e-3, epsilon=1e-8),
                      loss="sparse_categorical_crossentropy")
        return model
    elif name == "sig":
        model = mn.Sequential([layers.Input((784,)), layers.Dense(256), layers.Sigmoid(),
                               layers.Dropout(0.2), layers.Dense(10)])
        opt = optimizers.Adam(learning_rate=1e-3, epsilon=1e-8)
    else:
        image, bn = _image_arguments(layers)
        shape = (28, 28, 1) if name == "cnn" else (32, 32, 3)
        if DATA_FORMAT == "channels_first":
            shape = shape[-1:] + shape[:-1]
        if name == "cnn":
            model = mn.Sequential([layers.Input(shape),
                                   layers.Conv2D(16, 3, padding=1, **image), layers.BatchNormalization(**bn),
                                   layers.ReLU(), layers.MaxPooling2D(2, **image),
                                   layers.Conv2D(32, 3, padding=1, **image), layers.BatchNormalization(**bn),
                                   layers.ReLU(), layers.MaxPooling2D(2, **image), layers.Flatten(**image),
                                   layers.Dropout(0.25), layers.Dense(10)])
        else:
            model = mn.Sequential([layers.Input(shape),
                                   layers.Conv2D(32, 3, padding=1, **image), layers.BatchNormalization(**bn),
                                   layers.ReLU(),
                                   layers.Conv2D(64, 3, strides=2, padding=1, **image),
                                   layers.BatchNormalization(**bn), layers.ReLU(),
                                   layers.Conv2D(128, 3, strides=2, padding=1, **image),
                                   layers.BatchNormalization(**bn), layers.ReLU(),
                                   layers.GlobalAveragePooling2D(**image), layers.Dense(10)])
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
    elif name == "smx":
        model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(),
                              nn.Linear(128, 10), nn.Softmax(dim=1))
        opt = torch.optim.Adam(model.parameters(), 1e-3)
    elif name == "cnn":
        model = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Flatten(), nn.Dropout(0.25), nn.Linear(32 * 7 * 7, 10))
        opt = torch.optim.Adam(model.parameters(), 1e-3)
    else:
        model = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
                              nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
                              nn.Conv2d(64, 128, 3, stride=2, padding=1), nn.BatchNorm2d(128), nn.ReLU(),
                              nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, 10))
        opt = torch.optim.Adam(model.parameters(), 1e-3)
    if name in IMAGE_MODELS and DATA_FORMAT == "channels_last":
        model = model.to(memory_format=torch.channels_last)
    return model, opt


def data(name, n):
    rng = np.random.default_rng(0)
    shape = {"cnn": (n, 28, 28, 1), "cifar": (n, 32, 32, 3)}.get(name, (n, 784))
    if name in IMAGE_MODELS and DATA_FORMAT == "channels_first":
        shape = (n, shape[3], shape[1], shape[2])
    return rng.standard_normal(shape).astype(np.float32), rng.integers(0, 10, n).astype(np.int64)


def torch_inputs(torch, x, y):
    """x, y as torch tensors; channels_last data becomes NCHW in torch's channels_last
    memory format (the same bytes, torch's NHWC kernels)."""
    xt = torch.from_numpy(x)
    if xt.ndim == 4 and DATA_FORMAT == "channels_last":
        xt = xt.permute(0, 3, 1, 2)
    return xt, torch.from_numpy(y)


# The CPU time (all threads of the process) of the last timed epoch: at 1 thread a measure
# of the work that other jobs on a shared machine do not inflate (see --threads 1 results).
LAST_CPU = [0.0]


def minnet_epoch(model, x, y):
    c, t = time.process_time(), time.perf_counter()
    model.fit(x, y, batch_size=64, epochs=1, verbose=0, shuffle=True)
    LAST_CPU[0] = time.process_time() - c
    return len(x) / (time.perf_counter() - t)


def minnet_predict(model, x):
    t = time.perf_counter()
    model.predict(x, batch_size=64)
    return len(x) / (time.perf_counter() - t)


def _keras_sparse_probability_loss(torch):
    """Keras's sparse categorical cross-entropy of probabilities, in torch (the smx workload)."""
    def loss(p, y):
        p = (p / p.sum(dim=1, keepdim=True)).clamp(1e-7, 1 - 1e-7)
        return -p.log().gather(1, y[:, None]).mean()
    return loss


def torch_epoch(torch, model, opt, x, y):
    lossf = (_keras_sparse_probability_loss(torch) if isinstance(model[-1], torch.nn.Softmax)
             else torch.nn.CrossEntropyLoss())
    model.train()
    perm = torch.randperm(len(x))
    c, t = time.process_time(), time.perf_counter()
    for i in range(0, len(x), 64):
        idx = perm[i:i + 64]
        opt.zero_grad()
        lossf(model(x[idx]), y[idx]).backward()
        opt.step()
    LAST_CPU[0] = time.process_time() - c
    return len(x) / (time.perf_counter() - t)


def torch_predict(torch, model, x):
    model.eval()
    t = time.perf_counter()
    with torch.no_grad():
        for i in range(0, len(x), 64):
            model(x[i:i + 64])
    return len(x) / (time.perf_counter() - t)


def _kernel_modules():
    """Every compiled kernel module of minnet._ext (the ``*_kernels`` names)."""
    import importlib
    import pkgutil
    import minnet._ext
    return [importlib.import_module(f"minnet._ext.{info.name}")
            for info in pkgutil.iter_modules(minnet._ext.__path__) if info.name.endswith("_kernels")]


_PHASES = ("forward", "loss", "backward", "optimizer")


def profile_split(name, mn, n, threads, clock=time.perf_counter):
    """Where one training step's time goes, for one epoch of ``fit`` at batch 64.

    Two kinds of timer, outermost call only: every Python-visible function of the kernel
    modules (``minnet._ext.*_kernels``: Cython, the GIL released inside), and the phases of
    ``train_step``: forward (the model's ``__call__``), loss (``compute_loss``), backward
    (``Tensor.backward``: the engine) and optimizer (``zero_grad`` + ``step``).  A phase's
    framework time is its wall time less the kernel time inside it; the "trainer loop" is
    the rest of the step (from one ``train_step`` to the next: batching and shuffling,
    callbacks, and inside ``train_step`` ``loss.item()``, the loss tracker, metrics).
    Framework overhead = the step's wall time less its kernel time: everything that is not
    a kernel (Python, and NumPy calls outside the kernels).  Each figure is the median over
    the epoch's steps (a step that another job on the machine interrupted does not move
    it), so the rows need not add up exactly.  A timer costs about 0.2 us per call.
    ``clock=time.thread_time`` (``--clock cpu``) counts this thread's CPU time instead of
    wall time: at 1 thread a step's time without what other jobs on the machine took from
    it (at 2 threads the kernels' second thread is not counted, the framework time still is).
    """
    from minnet.autograd import Tensor
    x, y = data(name, n)
    model = build_minnet(name, mn)
    minnet_epoch(model, x[:min(1000, n)], y[:min(1000, n)])
    kernel_totals = {}
    patched = []
    state = {"kernel_depth": 0, "kernel_time": 0.0, "phase": None, "phase_wall": {},
             "phase_kernels": {}, "step_start": None, "step_kernels": 0.0}
    steps_seen = []

    def timed_kernel(label, fn):
        def wrapper(*args, **kwargs):
            if state["kernel_depth"]:      # kernels call each other (relu_forward -> _leaky_relu)
                return fn(*args, **kwargs)
            state["kernel_depth"] += 1
            t0 = clock()
            try:
                return fn(*args, **kwargs)
            finally:
                dt = clock() - t0
                kernel_totals[label] = kernel_totals.get(label, 0.0) + dt
                state["kernel_time"] += dt
                state["kernel_depth"] -= 1
        return wrapper

    def timed_phase(label, fn):
        def wrapper(*args, **kwargs):
            if state["phase"] is not None:  # nested (a layer's call inside forward)
                return fn(*args, **kwargs)
            state["phase"] = label
            k0, t0 = state["kernel_time"], clock()
            try:
                return fn(*args, **kwargs)
            finally:
                walls, kernels = state["phase_wall"], state["phase_kernels"]
                walls[label] = walls.get(label, 0.0) + clock() - t0
                kernels[label] = kernels.get(label, 0.0) + state["kernel_time"] - k0
                state["phase"] = None
        wrapper.__wrapped__ = fn               # call_spec reads the signature through it
        return wrapper

    def timed_step(fn):
        def wrapper(*args, **kwargs):
            now = clock()
            if state["step_start"] is not None:    # the previous step ends where this one starts
                end_step(now)
            state.update(step_start=now, step_kernels=state["kernel_time"], phase_wall={},
                         phase_kernels={})
            return fn(*args, **kwargs)
        wrapper.__wrapped__ = fn
        return wrapper

    def end_step(now):
        wall = now - state["step_start"]
        kernels = state["kernel_time"] - state["step_kernels"]
        record = {"step": (wall, kernels)}
        for label in _PHASES:
            record[label] = (state["phase_wall"].get(label, 0.0), state["phase_kernels"].get(label, 0.0))
        record["trainer loop"] = (wall - sum(w for w, _ in (record[p] for p in _PHASES)),
                                  kernels - sum(k for _, k in (record[p] for p in _PHASES)))
        steps_seen.append(record)

    def patch(owner, attr, wrapper):
        patched.append((owner, attr, owner.__dict__.get(attr) if isinstance(owner, type)
                        else getattr(owner, attr)))
        setattr(owner, attr, wrapper)

    for mod in _kernel_modules():
        for attr in dir(mod):
            fn = getattr(mod, attr)
            if attr.startswith("__") or not callable(fn) or isinstance(fn, type):
                continue
            patch(mod, attr, timed_kernel(f"{mod.__name__.rsplit('.', 1)[1]}.{attr}", fn))
    model_type, opt = type(model), model.optimizer
    patch(model_type, "__call__", timed_phase("forward", model_type.__call__))
    patch(model_type, "compute_loss", timed_phase("loss", model_type.compute_loss))
    patch(model_type, "train_step", timed_step(model_type.train_step))
    patch(Tensor, "backward", timed_phase("backward", Tensor.backward))
    patch(opt, "step", timed_phase("optimizer", opt.step))
    patch(opt, "zero_grad", timed_phase("optimizer", opt.zero_grad))
    try:
        steps = -(-len(x) // 64)
        n_full = steps - (len(x) % 64 != 0)       # the last, smaller batch is not counted
        t0 = clock()
        model.fit(x[:64 * n_full + 1], y[:64 * n_full + 1], batch_size=64, epochs=1, verbose=0,
                  shuffle=False)                  # the 1-sample step closes the last full one
        wall = clock() - t0
    finally:
        for owner, attr, fn in reversed(patched):
            if fn is None:
                delattr(owner, attr)
            else:
                setattr(owner, attr, fn)
    steps_seen = steps_seen[:n_full]

    def median_ms(values):
        return 1e3 * float(np.median(values))

    phases = {}
    for label in _PHASES + ("trainer loop",):
        w = [r[label][0] for r in steps_seen]
        k = [r[label][1] for r in steps_seen]
        phases[label] = {"wall_ms": median_ms(w), "kernels_ms": median_ms(k),
                         "framework_ms": median_ms([a - b for a, b in zip(w, k)])}
    step_wall = [r["step"][0] for r in steps_seen]
    step_kernels = [r["step"][1] for r in steps_seen]
    framework = [a - b for a, b in zip(step_wall, step_kernels)]
    rows = sorted(kernel_totals.items(), key=lambda kv: -kv[1])
    return {"steps": len(steps_seen), "wall_ms_per_step": median_ms(step_wall),
            "kernels_ms_per_step": median_ms(step_kernels),
            "optimizer_ms_per_step": phases["optimizer"]["wall_ms"],
            "python_ms_per_step": median_ms(framework),
            "overhead_percent": 100.0 * float(np.median([f / w for f, w in zip(framework, step_wall)])),
            "epoch_ms_per_step": 1e3 * wall / (n_full + 1),
            "phases_ms_per_step": phases,
            "detail_ms_per_step": {k: 1e3 * v / (n_full + 1) for k, v in rows}}


def loss_call_us(name, mn, repeat=5, number=2000):
    """``model.compute_loss`` on one batch of 64 (predictions computed once, with their
    graph) and ``model.losses``, in us: the minimum over ``repeat`` loops of ``number``
    calls, outside the profiler's timers."""
    x, y = data(name, 64)
    model = build_minnet(name, mn)
    minnet_epoch(model, x, y)
    y_pred = model(x, training=True)
    out = {}
    for label, fn in (("compute_loss", lambda: model.compute_loss(x, y, y_pred)),
                      ("model.losses", lambda: model.losses)):
        loops = []
        for _ in range(repeat):
            start = time.perf_counter()
            for _ in range(number):
                fn()
            loops.append((time.perf_counter() - start) / number * 1e6)
        out[label] = min(loops)
    return out


def print_profile(name, split, threads, clock_name="wall"):
    """The profile of one workload as a table: where a step's time goes."""
    wall = split["wall_ms_per_step"]
    print(f"\n{name}: where a step's time goes (batch 64, {threads} thread(s), {DATA_FORMAT}, "
          f"{split['steps']} steps, {clock_name} clock, load {os.getloadavg()[0]:.2f})")
    print(f"  {'phase':16s} {'ms/step':>8s} {'kernels':>8s} {'framework':>10s} {'% of step':>10s}")
    for label, ph in split["phases_ms_per_step"].items():
        print(f"  {label:16s} {ph['wall_ms']:8.3f} {ph['kernels_ms']:8.3f} {ph['framework_ms']:10.3f}"
              f" {100 * ph['wall_ms'] / wall:9.1f}%")
    print(f"  {'step':16s} {wall:8.3f} {split['kernels_ms_per_step']:8.3f} "
          f"{split['python_ms_per_step']:10.3f} {100.0:9.1f}%   (medians over the steps)")
    print(f"  framework overhead (all that is not a kernel): {split['python_ms_per_step']:.3f} ms"
          f" = {split['overhead_percent']:.1f}% of the step")
    print("  largest kernels, ms/step (epoch mean):")
    for label, ms in list(split["detail_ms_per_step"].items())[:8]:
        print(f"    {ms:8.3f}  {label}")


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
    parser.add_argument("--n-cifar", type=int, default=2560,
                        help="samples of the cifar workload (its steps cost ~10x a cnn step)")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--models", default="mlp,sig,cnn,cifar")
    parser.add_argument("--no-memory", action="store_true")
    parser.add_argument("--memory-child", default=None)
    parser.add_argument("--profile", action="store_true",
                        help="print where a step's time goes (phases, kernels, framework)")
    parser.add_argument("--clock", default="wall", choices=["wall", "cpu"],
                        help="--profile's clock: wall time, or this thread's CPU time (robust "
                             "to other jobs at 1 thread)")
    args = parser.parse_args()
    names = args.models.split(",")
    n_of = {name: args.n_cifar if name == "cifar" else args.n for name in names}
    DATA_FORMAT = os.environ["MINNET_BENCH_DATA_FORMAT"] = args.data_format
    if args.memory_child:
        memory_child(args.memory_child, names[0], args.n, args.threads)   # --n is this model's
        return
    if args.profile:
        import minnet as mn
        mn.set_num_threads(args.threads)
        out = {}
        for name in names:
            clock = time.thread_time if args.clock == "cpu" else time.perf_counter
            calls = loss_call_us(name, mn)        # first: profile_split leaves its timers in
            split = profile_split(name, mn, n_of[name], args.threads, clock=clock)
            split["clock"], split["load_average"] = args.clock, os.getloadavg()[0]
            out[name] = split
            print_profile(name, split, args.threads, args.clock)
            split["loss_calls_us"] = calls
            print(f"  one batch, minimum of 5 x 2000 calls: compute_loss {calls['compute_loss']:.1f} us, "
                  f"model.losses {calls['model.losses']:.1f} us")
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
    results = {"threads": args.threads, "n": args.n, "n_cifar": args.n_cifar, "epochs": args.epochs,
               "data_format": DATA_FORMAT, "load_average": os.getloadavg(), "models": {}}
    print(f"bench_training: {args.threads} thread(s), {DATA_FORMAT}, OPENBLAS_CORETYPE="
          f"{os.environ.get('OPENBLAS_CORETYPE', '(unset)')}, OPENBLAS_L2_SIZE="
          f"{os.environ.get('OPENBLAS_L2_SIZE', '(unset)')}; train/predict ratio = median"
          f" minnet/torch [per-epoch min-max]", flush=True)
    for name in names:
        x, y = data(name, n_of[name])
        model = build_minnet(name, mn)
        minnet_epoch(model, x[:1000], y[:1000])          # warm-up (builds the model)
        r = {"minnet_train": [], "minnet_predict": [], "torch_train": [], "torch_predict": []}
        cpu = {"minnet": [], "torch": []}
        if torch is not None:
            tm, topt = build_torch(name, torch)
            xt, yt = torch_inputs(torch, x, y)
            torch_epoch(torch, tm, topt, xt[:1000], yt[:1000])
        for _ in range(args.epochs):                       # interleaved
            r["minnet_train"].append(minnet_epoch(model, x, y))
            cpu["minnet"].append(LAST_CPU[0])
            r["minnet_predict"].append(minnet_predict(model, x))
            if torch is not None:
                r["torch_train"].append(torch_epoch(torch, tm, topt, xt, yt))
                cpu["torch"].append(LAST_CPU[0])
                r["torch_predict"].append(torch_predict(torch, tm, xt))
        summary = {k: float(np.median(v)) for k, v in r.items() if v}
        if torch is not None:
            summary["train_ratio"] = summary["minnet_train"] / summary["torch_train"]
            summary["predict_ratio"] = summary["minnet_predict"] / summary["torch_predict"]
            # the spread: each interleaved epoch's own ratio
            for kind in ("train", "predict"):
                pairs = [m / t for m, t in zip(r[f"minnet_{kind}"], r[f"torch_{kind}"])]
                summary[f"{kind}_ratio_min"], summary[f"{kind}_ratio_max"] = min(pairs), max(pairs)
            # torch CPU-s / minnet CPU-s per epoch: at 1 thread the same ratio without the
            # time other jobs took (at 2 threads it also counts the threads' waiting)
            pairs = [t / m for m, t in zip(cpu["minnet"], cpu["torch"])]
            summary["train_ratio_cpu"] = float(np.median(pairs))
            summary["train_ratio_cpu_min"], summary["train_ratio_cpu_max"] = min(pairs), max(pairs)
        summary["load_average"] = os.getloadavg()[0]
        if not args.no_memory:
            (summary["minnet_train_rss_growth_mib"],
             summary["minnet_peak_rss_mib"]) = peak_rss_child("minnet", name, n_of[name], args.threads)
            if torch is not None:
                (summary["torch_train_rss_growth_mib"],
                 summary["torch_peak_rss_mib"]) = peak_rss_child("torch", name, n_of[name], args.threads)
        if not args.no_memory:
            summary["minnet_buffers"] = minnet_buffer_accounting(name, mn)
            if torch is not None:
                summary["torch_buffers"] = torch_buffer_accounting(name, torch)
        results["models"][name] = summary
        line = f"{name:4s} train {summary['minnet_train']:9,.0f} samples/s"
        if torch is not None:
            line += (f" (torch {summary['torch_train']:9,.0f}, ratio {summary['train_ratio']:.2f}"
                     f" [{summary['train_ratio_min']:.2f}-{summary['train_ratio_max']:.2f}],"
                     f" by CPU time {summary['train_ratio_cpu']:.2f}"
                     f" [{summary['train_ratio_cpu_min']:.2f}-{summary['train_ratio_cpu_max']:.2f}])")
        line += f" | predict {summary['minnet_predict']:9,.0f}"
        if torch is not None:
            line += (f" (torch {summary['torch_predict']:9,.0f}, ratio {summary['predict_ratio']:.2f}"
                     f" [{summary['predict_ratio_min']:.2f}-{summary['predict_ratio_max']:.2f}])")
        line += f" | load {summary['load_average']:.2f}"
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
    with open(os.path.join(HERE, "results", os.environ.get("MINNET_BENCH_OUT", f"training_t{args.threads}.json")), "w") as f:
        json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
