"""A/B of results: dump what every kernel computes in one tree, compare with another's.

    PYTHONPATH=OLD python benchmarks/ab_bits.py dump old.npz
    PYTHONPATH=NEW python benchmarks/ab_bits.py dump new.npz
    python benchmarks/ab_bits.py compare old.npz new.npz

The speed A/B (``ab.py``) says whether a change kept the time; this says whether it kept
the bits, for changes that should not touch a result (compiler flags, a refactoring of
``minnet/_ext``).  Each case is a layer, loss or optimizer step run forward and backward
on fixed data (``CASES``): its output, the input's gradient and every weight's gradient
are saved, in float32 and float64, at 1 and 2 threads, with both image layouts where a
layer has one.  ``compare`` prints every array whose bits differ, with its largest
difference in units in the last place (ulp) and against the other tree, and exits 1 if
any differ.  Covers every ``_ext`` kernel module a layer reaches.
"""
import argparse
import sys

import numpy as np

import minnet as mn
from minnet import layers as L

RNG_SEED = 1234


def _np(a):
    """An ndarray of a Tensor, a Parameter's ``.grad`` or an array."""
    return np.asarray(a.numpy() if hasattr(a, "numpy") else a)


def _data(shape, dtype, rng, positive=False):
    x = rng.standard_normal(shape)
    return (np.abs(x) + 0.1 if positive else x).astype(dtype)


def _image(layout, n=2, h=9, w=9, c=5):
    return (n, h, w, c) if layout == "channels_last" else (n, c, h, w)


def _layer_cases():
    """(name, layer factory, input shape, input kind) for each layer case."""
    cases = []
    for fmt in ("channels_last", "channels_first"):
        img, tag = _image(fmt), "cl" if fmt == "channels_last" else "cf"
        big = _image(fmt, n=2, h=12, w=12, c=8)
        cases += [
            (f"conv3x3_{tag}", lambda d, f=fmt: L.Conv2D(6, 3, padding="same", data_format=f, dtype=d), big),
            (f"conv3x3_s2_{tag}", lambda d, f=fmt: L.Conv2D(6, 3, strides=2, data_format=f, dtype=d), big),
            (f"conv5x5_dil_{tag}", lambda d, f=fmt: L.Conv2D(4, 5, dilation_rate=2, data_format=f, dtype=d), big),
            (f"conv1x1_{tag}", lambda d, f=fmt: L.Conv2D(7, 1, data_format=f, dtype=d), img),
            (f"depthwise_{tag}", lambda d, f=fmt: L.DepthwiseConv2D(3, depth_multiplier=2, data_format=f, dtype=d), img),
            (f"separable_{tag}", lambda d, f=fmt: L.SeparableConv2D(4, 3, data_format=f, dtype=d), img),
            (f"convT_{tag}", lambda d, f=fmt: L.Conv2DTranspose(4, 3, strides=2, data_format=f, dtype=d), img),
            (f"maxpool_{tag}", lambda d, f=fmt: L.MaxPooling2D(2, data_format=f, dtype=d), img),
            (f"maxpool3s2_{tag}", lambda d, f=fmt: L.MaxPooling2D(3, 2, padding="same", data_format=f, dtype=d), img),
            (f"avgpool_{tag}", lambda d, f=fmt: L.AveragePooling2D(3, 2, data_format=f, dtype=d), img),
            (f"gap_{tag}", lambda d, f=fmt: L.GlobalAveragePooling2D(data_format=f, dtype=d), img),
            (f"gmp_{tag}", lambda d, f=fmt: L.GlobalMaxPooling2D(data_format=f, dtype=d), img),
            (f"batchnorm_{tag}", lambda d, f=fmt: L.BatchNormalization(axis=-1 if f == "channels_last" else 1,
                                                                       dtype=d), img),
            (f"upsample_{tag}", lambda d, f=fmt: L.UpSampling2D(2, data_format=f, dtype=d), img),
            (f"upsample_bilinear_{tag}", lambda d, f=fmt: L.UpSampling2D(2, interpolation="bilinear",
                                                                         data_format=f, dtype=d), img),
            (f"conv1d_{tag}", lambda d, f=fmt: L.Conv1D(4, 3, data_format=f, dtype=d), (2, 11, 5)),
            (f"conv3d_{tag}", lambda d, f=fmt: L.Conv3D(3, 2, data_format=f, dtype=d), (2, 5, 5, 5, 3)),
            (f"maxpool1d_{tag}", lambda d, f=fmt: L.MaxPooling1D(2, data_format=f, dtype=d), (2, 11, 5)),
        ]
    # every built-in activation family through a Dense layer
    cases += [(f"dense_{act}", lambda d, act=act: L.Dense(7, activation=act, dtype=d), (6, 9))
              for act in ("relu", "sigmoid", "tanh", "gelu", "elu", "selu", "softplus", "swish",
                          "softmax", "leaky_relu", "hard_sigmoid", "mish")]
    cases += [
        ("dense_3d", lambda d: L.Dense(5, dtype=d), (2, 4, 9)),
        ("layernorm", lambda d: L.LayerNormalization(dtype=d), (4, 6, 10)),
        ("groupnorm", lambda d: L.GroupNormalization(groups=2, dtype=d), (2, 5, 5, 4)),
        ("softmax_layer", lambda d: L.Softmax(dtype=d), (4, 6, 10)),
        # rows at, below and beyond the row helpers' 32 lanes (_fastmath.h)
        ("softmax_layer_31", lambda d: L.Softmax(dtype=d), (3, 31)),
        ("softmax_layer_32", lambda d: L.Softmax(dtype=d), (3, 32)),
        ("softmax_layer_77", lambda d: L.Softmax(dtype=d), (3, 77)),
        ("dropout", lambda d: L.Dropout(0.3, dtype=d), (64, 33)),
        ("spatial_dropout", lambda d: L.SpatialDropout2D(0.3, dtype=d), (2, 6, 6, 8)),
        ("gaussian_noise", lambda d: L.GaussianNoise(0.5, seed=3, dtype=d), (16, 9)),
        ("lstm", lambda d: L.LSTM(6, return_sequences=True, dtype=d), (3, 7, 5)),
        ("gru", lambda d: L.GRU(6, return_sequences=True, dtype=d), (3, 7, 5)),
        ("simple_rnn", lambda d: L.SimpleRNN(6, dtype=d), (3, 7, 5)),
        ("bidirectional_lstm", lambda d: L.Bidirectional(L.LSTM(4, dtype=d), dtype=d), (3, 7, 5)),
        ("convlstm", lambda d: L.ConvLSTM2D(3, 3, padding="same", dtype=d), (2, 3, 6, 6, 2)),
        ("mha", lambda d: _SelfAttention(L.MultiHeadAttention(2, 4, dtype=d)), (2, 7, 8)),
        ("mha_causal", lambda d: _SelfAttention(L.MultiHeadAttention(2, 4, dtype=d), causal=True), (2, 7, 8)),
        ("embedding", lambda d: L.Embedding(13, 5, dtype=d), "ints"),
        ("resizing", lambda d: L.Resizing(5, 7, dtype=d), (2, 9, 9, 3)),
        ("prelu", lambda d: L.PReLU(dtype=d), (6, 9)),
    ]
    return cases


class _SelfAttention(L.Layer):
    def __init__(self, inner, causal=False):
        super().__init__(dtype=inner.dtype.name)
        self.inner, self.causal = inner, causal

    def call(self, x):
        return self.inner(x, x, use_causal_mask=self.causal)


LOSSES = {
    "categorical_crossentropy": lambda: mn.losses.CategoricalCrossentropy(from_logits=True),
    "sparse_categorical_crossentropy": lambda: mn.losses.SparseCategoricalCrossentropy(from_logits=True),
    "binary_crossentropy": lambda: mn.losses.BinaryCrossentropy(from_logits=True),
    "binary_crossentropy_probs": lambda: mn.losses.BinaryCrossentropy(),
    "mse": lambda: mn.losses.MeanSquaredError(),
    "mae": lambda: mn.losses.MeanAbsoluteError(),
    "huber": lambda: mn.losses.Huber(),
}

OPTIMIZERS = {
    "sgd_momentum": lambda: mn.optimizers.SGD(0.1, momentum=0.9, nesterov=True),
    "adam": lambda: mn.optimizers.Adam(0.01),
    "adamw": lambda: mn.optimizers.AdamW(0.01, weight_decay=0.1),
    "rmsprop": lambda: mn.optimizers.RMSprop(0.01, momentum=0.5),
    "adagrad": lambda: mn.optimizers.Adagrad(0.1),
}


def _run_layer(factory, shape, dtype, rng):
    layer = factory(np.dtype(dtype).name)
    if shape == "ints":
        x = mn.tensor(rng.integers(0, 13, size=(4, 6)))
    else:
        x = mn.tensor(_data(shape, dtype, rng), requires_grad=True)
    y = layer(x, training=True) if "training" in _call_args(layer) else layer(x)
    weight = mn.tensor(_data(y.shape, dtype, rng))
    (y * weight).sum().backward()
    out = [_np(y)]
    if x.requires_grad:
        out.append(_np(x.grad))
    out += [_np(w.grad) for w in layer.trainable_weights if w.grad is not None]
    return out


def _call_args(layer):
    import inspect
    try:
        return inspect.signature(layer.call).parameters
    except (TypeError, ValueError):
        return {}


def _run_loss(factory, name, dtype, rng):
    logits = mn.tensor(_data((8, 5), dtype, rng), requires_grad=True)
    if name.startswith("sparse"):
        target = rng.integers(0, 5, size=8)
    elif name == "categorical_crossentropy":
        target = np.eye(5, dtype=dtype)[rng.integers(0, 5, size=8)]
    elif name.startswith("binary"):
        target = (rng.random((8, 5)) > 0.5).astype(dtype)
    else:
        target = _data((8, 5), dtype, rng)
    inputs = logits.sigmoid() if name == "binary_crossentropy_probs" else logits
    value = factory()(mn.tensor(target), inputs)
    value.backward()
    return [_np(value), _np(logits.grad)]


def _run_optimizer(factory, dtype, rng):
    model = mn.models.Sequential([L.Input((6,), dtype=np.dtype(dtype).name),
                                  L.Dense(5, activation="tanh", dtype=np.dtype(dtype).name),
                                  L.Dense(3, dtype=np.dtype(dtype).name)])
    model.compile(optimizer=factory(), loss="mse")
    x, y = _data((32, 6), dtype, rng), _data((32, 3), dtype, rng)
    model.fit(x, y, batch_size=8, epochs=2, verbose=0, shuffle=False)
    return [np.asarray(w) for w in model.get_weights()]


def dump(path):
    arrays = {}
    skipped = set()
    for threads in (1, 2):
        mn.set_num_threads(threads)
        for dtype in (np.float32, np.float64):
            tag = f"t{threads}.{np.dtype(dtype).name}"
            for name, factory, shape in _layer_cases():
                mn.utils.set_random_seed(RNG_SEED)
                rng = np.random.default_rng(RNG_SEED)
                try:
                    results = _run_layer(factory, shape, dtype, rng)
                except (AttributeError, TypeError) as error:   # an older tree without the layer
                    skipped.add(f"{name} ({type(error).__name__}: {error})")
                    continue
                for i, a in enumerate(results):
                    arrays[f"{tag}.layer.{name}.{i}"] = a
            for name, factory in LOSSES.items():
                rng = np.random.default_rng(RNG_SEED)
                for i, a in enumerate(_run_loss(factory, name, dtype, rng)):
                    arrays[f"{tag}.loss.{name}.{i}"] = a
            for name, factory in OPTIMIZERS.items():
                mn.utils.set_random_seed(RNG_SEED)
                rng = np.random.default_rng(RNG_SEED)
                for i, a in enumerate(_run_optimizer(factory, dtype, rng)):
                    arrays[f"{tag}.fit.{name}.{i}"] = a
    np.savez(path, **arrays)
    for note in sorted(skipped):
        print(f"ab_bits: skipped {note}")
    print(f"ab_bits: {len(arrays)} arrays from {mn.__file__} -> {path}")


def _ulps(a, b):
    """Largest distance in units in the last place between float arrays of one dtype."""
    signed = {4: np.int32, 8: np.int64}[a.dtype.itemsize]
    ia, ib = a.view(signed).astype(np.int64), b.view(signed).astype(np.int64)
    # map the sign-magnitude floats onto a monotone integer line
    ia = np.where(ia < 0, np.iinfo(signed).min - ia, ia)
    ib = np.where(ib < 0, np.iinfo(signed).min - ib, ib)
    return int(np.max(np.abs(ia - ib))) if a.size else 0


def compare(path_a, path_b):
    a, b = np.load(path_a), np.load(path_b)
    names_a, names_b = set(a.files), set(b.files)
    differ = 0
    for name in sorted(names_a & names_b):
        x, y = a[name], b[name]
        if x.shape != y.shape or x.dtype != y.dtype:
            print(f"DIFFERS {name}: {x.dtype}{x.shape} against {y.dtype}{y.shape}")
            differ += 1
        elif x.tobytes() != y.tobytes():
            differ += 1
            detail = f"{_ulps(x, y)} ulp" if x.dtype.kind == "f" else "not floats"
            print(f"DIFFERS {name}: {np.count_nonzero(x != y)} of {x.size} elements, largest {detail}, "
                  f"max |a-b| {np.max(np.abs(x.astype(np.float64) - y)):.3g}")
    for label, names in (("only in the first", names_a - names_b), ("only in the second", names_b - names_a)):
        if names:
            print(f"{label} ({len(names)}): {', '.join(sorted(names)[:10])}")
    common = len(names_a & names_b)
    print(f"ab_bits: {common} arrays compared, {differ} differ")
    return 1 if differ or names_a != names_b else 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("dump").add_argument("path")
    cmp = sub.add_parser("compare")
    cmp.add_argument("first")
    cmp.add_argument("second")
    args = parser.parse_args(argv)
    if args.command == "dump":
        dump(args.path)
        return 0
    return compare(args.first, args.second)


if __name__ == "__main__":
    sys.exit(main())
