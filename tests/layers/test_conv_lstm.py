"""ConvLSTM1D/2D/3D (issue 28): a NumPy step reference, both layouts, gradcheck, the states,
and Keras 3 (oracle, weights converted from Keras's layouts)."""
import numpy as np
import pytest

import minnet as mn
from minnet import layers

RNG = np.random.default_rng(40)


def _sig(x):
    return 1 / (1 + np.exp(-x))


def _conv2d_same_nhwc(x, w, pads=None):
    """x (N, H, W, C), w (F, C, kh, kw); stride 1; pads ((t, b), (l, r))."""
    kh, kw = w.shape[2:]
    pads = pads or (((kh - 1) // 2, kh - 1 - (kh - 1) // 2), ((kw - 1) // 2, kw - 1 - (kw - 1) // 2))
    xp = np.pad(x, ((0, 0),) + tuple(pads) + ((0, 0),))
    oh, ow = xp.shape[1] - kh + 1, xp.shape[2] - kw + 1
    y = np.zeros((x.shape[0], oh, ow, w.shape[0]))
    for i in range(kh):
        for j in range(kw):
            y += np.einsum("nhwc,fc->nhwf", xp[:, i:i + oh, j:j + ow], w[:, :, i, j])
    return y


def _reference(x, kernel, rec, bias, padding):
    n, t = x.shape[:2]
    f = rec.shape[1]
    pads = None if padding == "same" else ((0, 0), (0, 0))
    h = c = None
    outs = []
    for s in range(t):
        zx = _conv2d_same_nhwc(x[:, s], kernel, pads) + bias
        if h is None:
            h = np.zeros(zx.shape[:-1] + (f,))
            c = np.zeros_like(h)
        z = zx + _conv2d_same_nhwc(h, rec)
        i, fg, g, o = (z[..., k * f:(k + 1) * f] for k in range(4))
        c = _sig(fg) * c + _sig(i) * np.tanh(g)
        h = _sig(o) * np.tanh(c)
        outs.append(h)
    return np.stack(outs, 1), h, c


@pytest.mark.parametrize("padding", ["same", "valid"])
def test_conv_lstm2d_matches_numpy_both_layouts_and_gradchecks(padding):
    x = RNG.normal(size=(2, 3, 5, 4, 2))
    layer = layers.ConvLSTM2D(3, (3, 2), padding=padding, return_sequences=True,
                              return_state=True, dtype="float64")
    seq, h, c = layer(x)
    kernel, rec, bias = layer.get_weights()
    want_seq, want_h, want_c = _reference(x, kernel, rec, bias, padding)
    for got, want in ((seq, want_seq), (h, want_h), (c, want_c)):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-10, atol=1e-12)
    assert layer.compute_output_shape(x.shape)[0] == tuple(seq.shape)
    first = layers.ConvLSTM2D(3, (3, 2), padding=padding, return_sequences=True,
                              data_format="channels_first", dtype="float64")
    xc = np.ascontiguousarray(np.moveaxis(x, -1, 2))
    first.build(xc.shape)
    first.set_weights(layer.get_weights())
    np.testing.assert_allclose(first(xc).numpy(), np.moveaxis(want_seq, -1, 2), rtol=1e-10,
                               atol=1e-12)
    small = layers.ConvLSTM2D(2, 2, padding="same", go_backwards=True, dtype="float64")
    t = mn.tensor(RNG.normal(size=(1, 2, 3, 3, 1)), requires_grad=True)
    assert mn.gradcheck(lambda a: small(a), (t,))


def test_conv_lstm1d_and_3d_shapes_and_a_fit():
    y1 = layers.ConvLSTM1D(4, 3, padding="same", return_sequences=True)(
        np.zeros((2, 5, 7, 3), "float32"))
    assert tuple(y1.shape) == (2, 5, 7, 4)
    y3 = layers.ConvLSTM3D(2, 2, strides=2)(np.zeros((1, 3, 4, 4, 4, 1), "float32"))
    assert tuple(y3.shape) == (1, 2, 2, 2, 2)
    model = mn.Sequential([layers.Input((4, 6, 6, 1)),
                           layers.ConvLSTM2D(4, 3, padding="same"),
                           layers.GlobalAveragePooling2D(), layers.Dense(1)])
    model.compile("adam", "mse")
    x = RNG.normal(size=(8, 4, 6, 6, 1)).astype("float32")
    history = model.fit(x, np.ones((8, 1), "float32"), epochs=2, verbose=0).history["loss"]
    assert np.isfinite(history).all()
    again = layers.ConvLSTM2D.from_config(layers.ConvLSTM2D(3, 2, dropout=0.1).get_config())
    assert again.dropout == 0.1 and again.kernel_size == (2, 2)


def test_errors_name_the_argument():
    with pytest.raises(ValueError, match="`stateful`"):
        layers.ConvLSTM2D(2, 3, stateful=True)
    with pytest.raises(ValueError, match="dilation_rate"):
        layers.ConvLSTM2D(2, 3, strides=2, dilation_rate=2)
    with pytest.raises(ValueError, match="ndim=5"):
        layers.ConvLSTM2D(2, 3)(np.zeros((1, 4, 4, 1), "float32"))


@pytest.mark.slow_once
@pytest.mark.parametrize("cls, shape, options", [
    ("ConvLSTM2D", (2, 3, 6, 5, 2), dict(padding="same", return_sequences=True)),
    ("ConvLSTM2D", (2, 3, 7, 6, 2), dict(strides=2, padding="same", go_backwards=True)),
    ("ConvLSTM1D", (2, 4, 7, 3), dict(padding="valid", return_state=True)),
    ("ConvLSTM3D", (1, 2, 4, 4, 3, 1), dict(padding="same"))], ids=str)
def test_against_keras(keras, cls, shape, options):
    x = RNG.normal(size=shape).astype("float32")
    theirs = getattr(keras.layers, cls)(3, 3 if cls != "ConvLSTM2D" else (3, 2), **options)
    want = theirs(x)
    ours = getattr(layers, cls)(3, 3 if cls != "ConvLSTM2D" else (3, 2), **options)
    ours.build(x.shape)
    r = ours.rank
    k, rk, b = (keras.ops.convert_to_numpy(w) for w in theirs.get_weights())
    perm = (r + 1, r) + tuple(range(r))
    ours.set_weights([np.transpose(k, perm), np.transpose(rk, perm), b])
    got = ours(x)
    got = got if isinstance(got, list) else [got]
    want = want if isinstance(want, (list, tuple)) else [want]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), keras.ops.convert_to_numpy(w), rtol=1e-4, atol=1e-5)
