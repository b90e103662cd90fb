"""conv2d in both image layouts: minnet channels_last vs channels_first vs PyTorch.

    python benchmarks/bench_conv_layout.py [--repeat 9] [--threads 1 2] [--cnn-n 1280]
        [--epochs 3] [--skip-conv | --skip-cnn]
    python benchmarks/bench_conv_layout.py --layers [--repeat 31] [--threads 1]

Part 1, the convolution alone: ``F.conv2d`` forward + backward (input, weight and bias
gradients, through autograd) on the CNN workload's two convolutions and on
bench_conv.py's default problem, for minnet ``channels_first`` (NCHW) and
``channels_last`` (NHWC), and torch's ``conv2d`` on NCHW-contiguous tensors and in its
``channels_last`` memory format (the faster of the two is the reference).  Runs are
interleaved (one of each in turn, ``--repeat`` rounds) and the median of each is reported,
at each thread count, torch at the same count.

Part 2, the CNN workload of bench_training.py trained for one epoch in each layout
(interleaved, median samples/s over ``--epochs``), then ``predict`` (batch 64) over the same
data in each layout, against torch on NCHW-contiguous tensors and in its ``channels_last``
memory format (the faster of the two is the reference), all four interleaved in one
process so that load from other jobs hits them alike; the spread (min-max) is printed
beside each median.  It needs data_format on every image layer (pooling, BatchNormalization axis);
where this minnet's layers do not take it, part 2 says so and is skipped.

Part 3 (``--layers``), where the CNN's time goes: each layer of the workload timed alone on
its real activations (batch 64), forward under ``no_grad`` ("predict") and forward +
backward with the input's gradient ("fit"), minnet in both layouts (inside
``mn.buffer_cache()``, as in ``fit``/``predict``) and torch in both memory formats,
interleaved call by call; the minimum and the median of ``--repeat`` calls.

Ratios: ``torch_time / minnet_time`` (> 1: minnet faster) and ``cl / cf`` (minnet's own
channels_last speed over its channels_first speed, > 1: channels_last faster).
JSON -> benchmarks/results/conv_layout.json
"""
import argparse
import time

import numpy as np

import minnet as mn
import minnet.functional as F
from _common import write_results

SHAPES = [  # (name, N, C, H, W, F, k, padding)
    ("cnn conv1 1->16 @28", 64, 1, 28, 28, 16, 3, 1),
    ("cnn conv2 16->32 @14", 64, 16, 14, 14, 32, 3, 1),
    ("bench_conv 32->64 @28", 64, 32, 28, 28, 64, 3, 1),
]


def _minnet_step(x, w, b, padding, data_format, stride=1):
    def run():
        # from_numpy shares x's memory as torch's x.detach() does: mn.tensor would copy x
        # on every step, a copy torch's step does not make.
        xm = mn.from_numpy(x).requires_grad_(True)
        y = F.conv2d(xm, w, b, stride, padding, data_format=data_format)
        y.backward(np.ones(y.shape, np.float32))
        w.grad = None
        b.grad = None
    return run


def _torch_step(torch, x, w, b, padding, stride=1):
    def run():
        xt = x.detach().requires_grad_(True)
        y = torch.nn.functional.conv2d(xt, w, b, stride=stride, padding=padding)
        y.backward(torch.ones_like(y))
        w.grad = None
        b.grad = None
    return run


def _interleaved(fns, repeat, spread=None, clock=time.perf_counter):
    """Median ms of each fn over ``repeat`` rounds, one call of each per round (``spread``,
    a dict, receives each fn's (min, max) ms; ``clock``: wall time, or e.g.
    ``time.thread_time`` for CPU time)."""
    for fn in fns.values():
        fn()
    times = {k: [] for k in fns}
    for _ in range(repeat):
        for k, fn in fns.items():
            t = clock()
            fn()
            times[k].append(clock() - t)
    if spread is not None:
        spread.update({k: (min(v) * 1e3, max(v) * 1e3) for k, v in times.items()})
    return {k: float(np.median(v) * 1e3) for k, v in times.items()}


def conv_part(args, torch):
    rows = []
    rng = np.random.default_rng(0)
    for threads in args.threads:
        mn.set_num_threads(threads)
        if torch is not None:
            torch.set_num_threads(threads)
        for name, n, c, h, w, f, k, pad in SHAPES:
            x = rng.standard_normal((n, c, h, w)).astype(np.float32)
            weight = mn.Parameter(rng.standard_normal((f, c, k, k)).astype(np.float32) * 0.1)
            bias = mn.Parameter(np.zeros(f, np.float32))
            fns = {"cf": _minnet_step(x, weight, bias, pad, "channels_first"),
                   "cl": _minnet_step(np.ascontiguousarray(x.transpose(0, 2, 3, 1)), weight,
                                      bias, pad, "channels_last")}
            if torch is not None:
                tw = torch.tensor(weight.data, requires_grad=True)
                tb = torch.tensor(bias.data, requires_grad=True)
                tx = torch.tensor(x)
                fns["torch"] = _torch_step(torch, tx, tw, tb, pad)
                tw_cl = tw.detach().to(memory_format=torch.channels_last).requires_grad_(True)
                fns["torch_cl"] = _torch_step(torch, tx.to(memory_format=torch.channels_last),
                                              tw_cl, tb, pad)
            ms = _interleaved(fns, args.repeat)
            row = {"shape": name, "threads": threads, **{f"{k}_ms": v for k, v in ms.items()}}
            row["cl_over_cf"] = ms["cf"] / ms["cl"]
            if torch is not None:
                best = min(ms["torch"], ms["torch_cl"])
                row["torch_best_ms"] = best
                row["cf_vs_torch"] = best / ms["cf"]
                row["cl_vs_torch"] = best / ms["cl"]
            rows.append(row)
            print(f"t{threads} {name:24s} cf {ms['cf']:7.2f} ms  cl {ms['cl']:7.2f} ms  "
                  f"cl/cf {row['cl_over_cf']:.2f}" +
                  (f"  torch {ms['torch']:7.2f} / cl-mem {ms['torch_cl']:7.2f} ms  "
                   f"cf {row['cf_vs_torch']:.2f}x  cl {row['cl_vs_torch']:.2f}x torch"
                   if torch is not None else ""))
    return rows


def _cnn(data_format):
    from minnet import layers
    mn.manual_seed(0)
    last = data_format == "channels_last"
    image = dict(data_format=data_format)
    bn = dict(axis=-1 if last else 1)
    model = mn.Sequential([
        layers.Input((28, 28, 1) if last else (1, 28, 28)),
        layers.Conv2D(16, 3, padding=1, **image), layers.BatchNormalization(**bn),
        layers.ReLU(), layers.MaxPooling2D(2, **image),
        layers.Conv2D(32, 3, padding=1, **image), layers.BatchNormalization(**bn),
        layers.ReLU(), layers.MaxPooling2D(2, **image), layers.Flatten(**image),
        layers.Dropout(0.25), layers.Dense(10)])
    model.compile(optimizer=mn.optimizers.Adam(learning_rate=1e-3, epsilon=1e-8),
                  loss=mn.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def _torch_cnn(torch, memory_format):
    nn = torch.nn
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                          nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32),
                          nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Dropout(0.25),
                          nn.Linear(32 * 7 * 7, 10)).to(memory_format=memory_format)
    return model, torch.optim.Adam(model.parameters(), 1e-3)


def cnn_part(args, torch):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((args.cnn_n, 1, 28, 28)).astype(np.float32)
    y = rng.integers(0, 10, args.cnn_n).astype(np.int64)
    try:
        models = {"cf": _cnn("channels_first"), "cl": _cnn("channels_last")}
    except (TypeError, ValueError) as error:
        print(f"CNN workload skipped: this minnet's image layers do not all take data_format "
              f"yet ({error})")
        return []
    data = {"cf": x, "cl": np.ascontiguousarray(x.transpose(0, 2, 3, 1))}
    rows = []
    for threads in args.threads:
        mn.set_num_threads(threads)
        runs = {k: (lambda k=k: models[k].fit(data[k], y, batch_size=64, epochs=1, verbose=0,
                                              shuffle=True)) for k in models}
        predicts = {k: (lambda k=k: models[k].predict(data[k], batch_size=64)) for k in models}
        if torch is not None:
            torch.set_num_threads(threads)
            lossf = torch.nn.CrossEntropyLoss()
            yt = torch.from_numpy(y)
            for key, fmt in (("torch", torch.contiguous_format), ("torch_cl", torch.channels_last)):
                tm, opt = _torch_cnn(torch, fmt)
                xt = torch.from_numpy(x).to(memory_format=fmt)

                def epoch(tm=tm, opt=opt, xt=xt):
                    tm.train()
                    perm = torch.randperm(len(xt))
                    for i in range(0, len(xt), 64):
                        idx = perm[i:i + 64]
                        opt.zero_grad()
                        lossf(tm(xt[idx]), yt[idx]).backward()
                        opt.step()

                def infer(tm=tm, xt=xt):
                    tm.eval()
                    with torch.no_grad():
                        for i in range(0, len(xt), 64):
                            tm(xt[i:i + 64])
                runs[key] = epoch
                predicts[key] = infer
        for kind, fns in (("train", runs), ("predict", predicts)):
            spread = {}
            ms = _interleaved(fns, args.epochs, spread)
            sps = {k: args.cnn_n / (v / 1e3) for k, v in ms.items()}
            lo = {k: args.cnn_n / (spread[k][1] / 1e3) for k in ms}
            hi = {k: args.cnn_n / (spread[k][0] / 1e3) for k in ms}
            row = {"threads": threads, "kind": kind,
                   **{f"{k}_samples_per_s": v for k, v in sps.items()},
                   **{f"{k}_samples_per_s_range": (lo[k], hi[k]) for k in ms},
                   "cl_over_cf": sps["cl"] / sps["cf"]}
            line = (f"t{threads} CNN {kind:7s} cf {sps['cf']:7.0f} ({lo['cf']:.0f}-{hi['cf']:.0f})"
                    f"  cl {sps['cl']:7.0f} ({lo['cl']:.0f}-{hi['cl']:.0f}) samples/s"
                    f"  cl/cf {row['cl_over_cf']:.2f}")
            if torch is not None:
                best = max(sps["torch"], sps["torch_cl"])
                row["cl_vs_torch"] = sps["cl"] / best
                row["cf_vs_torch"] = sps["cf"] / best
                line += (f"  torch {sps['torch']:7.0f} / cl-mem {sps['torch_cl']:7.0f}"
                         f"  cl {row['cl_vs_torch']:.2f}x  cf {row['cf_vs_torch']:.2f}x torch")
            print(line, flush=True)
            rows.append(row)
    return rows


def _layer_closures(layers_seq, x, train, call):
    """One closure per layer: its forward (eval, no graph) or forward + backward."""
    fns, h = [], x
    for layer in layers_seq:
        inp = h
        h = call(layer, inp, None)
        fns.append(lambda layer=layer, inp=inp, g=h: call(layer, inp, g if train else None,
                                                             run=True))
    return fns


def layers_part(args, torch):
    """Per-layer times of the CNN workload (part 3)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 1, 28, 28)).astype(np.float32)
    models = {"cf": _cnn("channels_first"), "cl": _cnn("channels_last")}
    data = {"cf": x, "cl": np.ascontiguousarray(x.transpose(0, 2, 3, 1))}
    names = ["conv1", "bn1", "relu1", "pool1", "conv2", "bn2", "relu2", "pool2", "flatten",
             "dropout", "dense"]

    def mn_call(layer, inp, grad, run=False):
        if not run:
            with mn.no_grad():
                return layer(mn.tensor(inp), training=False).numpy()
        if grad is None:
            with mn.no_grad():
                return layer(mn.tensor(inp), training=False)
        t = mn.tensor(inp, requires_grad=True)
        layer(t, training=True).backward(np.ones_like(grad))

    def torch_call(layer, inp, grad, run=False):
        if not run:
            with torch.no_grad():
                return layer.eval()(inp)
        if grad is None:
            with torch.no_grad():
                return layer.eval()(inp)
        t = inp.detach().requires_grad_(True)
        layer.train()(t).backward(torch.ones_like(grad))

    rows = []
    for threads in args.threads:
        mn.set_num_threads(threads)
        if torch is not None:
            torch.set_num_threads(threads)
        for train in (False, True):
            fns = {k: _layer_closures(models[k].layers, data[k], train, mn_call) for k in models}
            if torch is not None:
                for key, fmt in (("torch", torch.contiguous_format), ("torch_cl", torch.channels_last)):
                    tm, _ = _torch_cnn(torch, fmt)
                    fns[key] = _layer_closures(list(tm), torch.from_numpy(x).to(memory_format=fmt),
                                               train, torch_call)
            times = {k: [[] for _ in names] for k in fns}
            with mn.buffer_cache():
                for _ in range(args.repeat + 1):
                    for i in range(len(names)):
                        for k in fns:
                            t = time.perf_counter()
                            fns[k][i]()
                            times[k][i].append(time.perf_counter() - t)
            kind = "fit (fwd+bwd)" if train else "predict (fwd)"
            print(f"t{threads} {kind}: min / median us of {args.repeat} calls")
            print(f"  {'layer':8s} " + " ".join(f"{k:>15s}" for k in fns))
            for i, name in enumerate(names):
                stats = {k: (min(times[k][i][1:]) * 1e6, float(np.median(times[k][i][1:])) * 1e6)
                         for k in fns}
                rows.append({"threads": threads, "kind": kind, "layer": name,
                             **{f"{k}_min_us": v[0] for k, v in stats.items()},
                             **{f"{k}_median_us": v[1] for k, v in stats.items()}})
                print(f"  {name:8s} " + " ".join(f"{v[0]:7.0f} / {v[1]:5.0f}" for v in stats.values()))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--cnn-n", type=int, default=1280)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--skip-cnn", action="store_true")
    parser.add_argument("--skip-conv", action="store_true", help="skip part 1 (the convolutions)")
    parser.add_argument("--layers", action="store_true", help="part 3 (per layer) instead of 1 and 2")
    args = parser.parse_args()
    try:
        import torch
    except ImportError:
        torch = None
        print("PyTorch not installed: minnet's two layouts only")
    if args.layers:
        write_results("conv_layout_layers.json", "the CNN's layers, both layouts",
                      layers_part(args, torch), torch=torch, repeat=args.repeat)
        return
    conv_rows = [] if args.skip_conv else conv_part(args, torch)
    cnn_rows = [] if args.skip_cnn else cnn_part(args, torch)
    write_results("conv_layout.json", "conv2d and CNN training, channels_last vs channels_first",
                  conv_rows, torch=torch, cnn=cnn_rows, repeat=args.repeat)


if __name__ == "__main__":
    main()
