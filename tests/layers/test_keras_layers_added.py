"""The layers added in issue 28: NumPy references in float32 and float64, both layouts,
float64 gradcheck at tiny shapes, PyTorch where a twin exists, interop's clear refusal, and
Keras 3 as the oracle (slow_once) with Keras's weights copied across."""
import numpy as np
import pytest

import minnet as mn
from minnet import interop, layers

RNG = np.random.default_rng(2828)


def _last_to_first(a):
    return np.moveaxis(a, -1, 1)


# ---- NumPy references ----------------------------------------------------------------

def _bins(length, out):
    return [((i * length) // out, -(-((i + 1) * length) // out)) for i in range(out)]


def _adaptive(x, size, op):
    """x channels_last (N, *spatial, C)."""
    out = x
    for axis, n in zip(range(1, x.ndim - 1), size):
        out = np.concatenate([op(np.take(out, range(a, b), axis=axis), axis=axis, keepdims=True)
                              for a, b in _bins(out.shape[axis], n)], axis=axis)
    return out


CASES = {
    # name: (factory(data_format), input shape channels_last, NumPy reference on channels_last)
    "Identity": (lambda df, dt: layers.Identity(dtype=dt), (2, 3, 4), lambda x: x),
    "UnitNormalization": (lambda df, dt: layers.UnitNormalization(dtype=dt), (2, 3, 4),
                          lambda x: x / np.linalg.norm(x, axis=-1, keepdims=True)),
    "RMSNormalization": (lambda df, dt: layers.RMSNormalization(dtype=dt), (2, 3, 4),
                         lambda x: x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6)),
    "UpSampling1D": (lambda df, dt: layers.UpSampling1D(3, dtype=dt), (2, 3, 2), lambda x: np.repeat(x, 3, axis=1)),
    "UpSampling3D": (lambda df, dt: layers.UpSampling3D((1, 2, 3), data_format=df, dtype=dt), (1, 2, 2, 2, 2),
                     lambda x: np.repeat(np.repeat(x, 2, 2), 3, 3)),
    "ZeroPadding1D": (lambda df, dt: layers.ZeroPadding1D((1, 2), dtype=dt), (2, 3, 2),
                      lambda x: np.pad(x, ((0, 0), (1, 2), (0, 0)))),
    "ZeroPadding3D": (lambda df, dt: layers.ZeroPadding3D(((1, 0), (0, 2), (1, 1)), data_format=df, dtype=dt),
                      (1, 2, 2, 2, 2), lambda x: np.pad(x, ((0, 0), (1, 0), (0, 2), (1, 1), (0, 0)))),
    "Cropping1D": (lambda df, dt: layers.Cropping1D((1, 2), dtype=dt), (2, 5, 2), lambda x: x[:, 1:3]),
    "Cropping3D": (lambda df, dt: layers.Cropping3D(((1, 0), (0, 1), (1, 1)), data_format=df, dtype=dt),
                   (1, 3, 3, 4, 2), lambda x: x[:, 1:, :2, 1:3]),
    "AdaptiveAveragePooling1D": (lambda df, dt: layers.AdaptiveAveragePooling1D(3, data_format=df, dtype=dt),
                                 (2, 7, 3), lambda x: _adaptive(x, (3,), np.mean)),
    "AdaptiveMaxPooling2D": (lambda df, dt: layers.AdaptiveMaxPooling2D((2, 3), data_format=df, dtype=dt),
                             (2, 5, 7, 2), lambda x: _adaptive(x, (2, 3), np.max)),
    "AdaptiveAveragePooling2D": (lambda df, dt: layers.AdaptiveAveragePooling2D((3, 2), data_format=df, dtype=dt),
                                 (2, 5, 7, 2), lambda x: _adaptive(x, (3, 2), np.mean)),
    "AdaptiveMaxPooling3D": (lambda df, dt: layers.AdaptiveMaxPooling3D((2, 1, 2), data_format=df, dtype=dt),
                             (1, 3, 2, 5, 2), lambda x: _adaptive(x, (2, 1, 2), np.max)),
    "GlobalAveragePooling3D": (lambda df, dt: layers.GlobalAveragePooling3D(data_format=df, dtype=dt),
                               (2, 2, 3, 2, 4), lambda x: x.mean((1, 2, 3))),
    "GlobalMaxPooling3D": (lambda df, dt: layers.GlobalMaxPooling3D(data_format=df, dtype=dt),
                           (2, 2, 3, 2, 4), lambda x: x.max((1, 2, 3))),
}
LAYOUTS = {"UpSampling3D", "ZeroPadding3D", "Cropping3D", "AdaptiveAveragePooling1D",
           "AdaptiveMaxPooling2D", "AdaptiveAveragePooling2D", "AdaptiveMaxPooling3D",
           "GlobalAveragePooling3D", "GlobalMaxPooling3D"}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_numpy_reference_layouts_and_gradcheck(name, dtype):
    make, shape, ref = CASES[name]
    x = RNG.normal(size=shape)
    layer = make("channels_last", dtype)
    got = layer(x.astype(dtype)).numpy()
    tol = 1e-12 if dtype == "float64" else 1e-5
    np.testing.assert_allclose(got, ref(x), rtol=tol, atol=tol)
    assert tuple(layer.compute_output_shape(shape)) == got.shape
    if name in LAYOUTS:
        first = make("channels_first", dtype)
        out = first(_last_to_first(x).astype(dtype)).numpy()
        want = ref(x)
        want = _last_to_first(want) if want.ndim == x.ndim else want
        np.testing.assert_allclose(out, want, rtol=tol, atol=tol)
    if dtype == "float64":
        t = mn.tensor(x, requires_grad=True)
        assert mn.gradcheck(lambda a: layer(a), (t,))


def test_dot_spatial_dropout_activity_regularization():
    a, b = RNG.normal(size=(2, 3, 4)), RNG.normal(size=(2, 5, 4))
    np.testing.assert_allclose(layers.Dot(axes=(2, 2), dtype="float64")([a, b]).numpy(),
                               np.einsum("nik,njk->nij", a, b), rtol=1e-12)
    u, v = RNG.normal(size=(3, 4)), RNG.normal(size=(3, 4))
    cos = (u * v).sum(1) / np.linalg.norm(u, axis=1) / np.linalg.norm(v, axis=1)
    np.testing.assert_allclose(layers.Dot(1, normalize=True, dtype="float64")([u, v]).numpy(), cos[:, None], rtol=1e-12)
    ta, tb = mn.tensor(a, requires_grad=True), mn.tensor(b, requires_grad=True)
    assert mn.gradcheck(lambda p, q: layers.Dot(axes=(2, 2), normalize=True, dtype="float64")([p, q]), (ta, tb))
    x = np.ones((4, 6, 5))
    mn.manual_seed(0)
    y = layers.SpatialDropout1D(0.5)(x, training=True).numpy()
    assert set(np.unique(y)) <= {0.0, 2.0} and np.all(y == y[:, :1, :])     # whole channels
    v = np.ones((2, 3, 2, 2, 6))
    y = layers.SpatialDropout3D(0.5, data_format="channels_last")(v, training=True).numpy()
    assert np.all(y == y[:, :1, :1, :1, :])
    reg = layers.ActivityRegularization(l1=0.1, l2=0.2, dtype="float64")
    out = reg(mn.tensor(u))
    np.testing.assert_array_equal(out.numpy(), u)
    # Keras divides an activity penalty by the batch size (Layer.__call__)
    assert float(sum(l.item() for l in reg.losses)) == pytest.approx(
        (0.1 * np.abs(u).sum() + 0.2 * (u * u).sum()) / 3)


def test_conv1d_transpose_einsum_dense_cells():
    x = RNG.normal(size=(2, 5, 3))
    conv = layers.Conv1DTranspose(4, 3, strides=2, padding="same", dtype="float64")
    y = conv(x).numpy()
    ref = layers.Conv2DTranspose(4, (1, 3), strides=(1, 2), padding="same", dtype="float64")
    ref.build((2, 1, 5, 3))
    k, b = conv.get_weights()
    ref.set_weights([k[:, :, None, :], b])
    np.testing.assert_allclose(y, ref(x[:, None]).numpy()[:, 0], rtol=1e-12)
    t = mn.tensor(x[:1, :3], requires_grad=True)
    assert mn.gradcheck(lambda a: conv(a), (t,))
    dense = layers.EinsumDense("abc,cde->abde", (5, 2, 4), bias_axes="de", dtype="float64")
    out = dense(x).numpy()
    kernel, bias = dense.get_weights()
    np.testing.assert_allclose(out, np.einsum("abc,cde->abde", x, kernel) + bias, rtol=1e-12)
    assert kernel.shape == (3, 2, 4) and bias.shape == (2, 4)
    assert mn.gradcheck(lambda a: dense(a), (mn.tensor(x[:1], requires_grad=True),))
    lstm = layers.LSTM(4, return_sequences=True, dtype="float64")
    rnn = layers.RNN(layers.LSTMCell(4, dtype="float64"), return_sequences=True, dtype="float64")
    lstm(x), rnn(x)
    rnn.cell.set_weights(lstm.get_weights())
    np.testing.assert_allclose(rnn(x).numpy(), lstm(x).numpy(), rtol=1e-12)
    stacked = layers.RNN([layers.SimpleRNNCell(3, dtype="float64"), layers.GRUCell(2, dtype="float64")],
                         return_state=True, dtype="float64")
    out, h1, h2 = stacked(x)
    assert out.shape == (2, 2) and h1.shape == (2, 3) and np.allclose(out.numpy(), h2.numpy())
    cell = layers.GRUCell(2, reset_after=False, dtype="float64")
    xt = mn.tensor(x[:, 0], requires_grad=True)
    assert mn.gradcheck(lambda a: cell(a, [mn.tensor(np.zeros((2, 2)))])[0], (xt,))
    again = layers.RNN.from_config(stacked.get_config())
    assert [type(c) for c in again.cell.cells] == [layers.SimpleRNNCell, layers.GRUCell]


def test_categorical_layers():
    enc = layers.CategoryEncoding(num_tokens=4, output_mode="count")
    np.testing.assert_array_equal(enc(np.array([[0, 1, 1], [3, 3, 2]])).numpy(),
                                  [[1, 2, 0, 0], [0, 0, 1, 2]])
    np.testing.assert_array_equal(layers.CategoryEncoding(4, "one_hot")(np.array([2, 0])).numpy(),
                                  np.eye(4)[[2, 0]])
    disc = layers.Discretization(bin_boundaries=[0.0, 1.0, 2.0])
    np.testing.assert_array_equal(disc(np.array([[-1.0, 0.0, 0.5, 1.0, 2.5]])).numpy(),
                                  [[0, 1, 1, 2, 3]])
    adapted = layers.Discretization(num_bins=4)
    adapted.adapt(np.arange(100.0))
    np.testing.assert_allclose(adapted.bin_boundaries, np.quantile(np.arange(100.0), [0.25, 0.5, 0.75]))
    # Keras's documented examples (keras/src/layers/preprocessing/*_lookup.py docstrings)
    s = layers.StringLookup(vocabulary=["a", "b", "c", "d"])
    np.testing.assert_array_equal(s([["a", "c", "d"], ["d", "z", "b"]]).numpy(), [[1, 3, 4], [4, 0, 2]])
    s = layers.StringLookup(vocabulary=["a", "b", "c", "d"], mask_token="")
    np.testing.assert_array_equal(s([["a", "c", "d"], ["d", "", "b"]]).numpy(), [[2, 4, 5], [5, 0, 3]])
    s = layers.StringLookup(vocabulary=["a", "b", "c", "d"], output_mode="multi_hot")
    np.testing.assert_array_equal(s([["a", "c", "d", "d"], ["d", "z", "b", "z"]]).numpy(),
                                  [[0, 1, 0, 1, 1], [1, 0, 1, 0, 1]])
    inv = layers.StringLookup(vocabulary=["a", "b", "c", "d"], invert=True)
    assert inv(np.array([[1, 3, 4], [4, 0, 2]])).tolist() == [["a", "c", "d"], ["d", "[UNK]", "b"]]
    i = layers.IntegerLookup(vocabulary=[12, 36, 1138, 42], num_oov_indices=2)
    np.testing.assert_array_equal(i(np.array([[12, 1138, 42], [37, 1000, 36]])).numpy(),
                                  [[2, 4, 5], [1, 0, 3]])
    fitted = layers.StringLookup()
    fitted.adapt(np.array(["b", "a", "b", "c", "b", "a"]))
    assert fitted.get_vocabulary() == ["[UNK]", "b", "a", "c"]
    with pytest.raises(ValueError, match="num_oov_indices"):
        layers.StringLookup(num_oov_indices=2)


def test_pytorch_twins(torch):
    F = torch.nn.functional
    x = RNG.normal(size=(2, 3, 7, 5))
    got = layers.AdaptiveAveragePooling2D((3, 2), data_format="channels_first", dtype="float64")(x)
    np.testing.assert_allclose(got.numpy(), F.adaptive_avg_pool2d(torch.tensor(x), (3, 2)).numpy(),
                               rtol=1e-12)
    got = layers.AdaptiveMaxPooling1D(4, data_format="channels_first", dtype="float64")(x[:, :, 0])
    np.testing.assert_allclose(got.numpy(), F.adaptive_max_pool1d(torch.tensor(x[:, :, 0]), 4).numpy())
    seq = RNG.normal(size=(2, 4, 6))
    rms = layers.RMSNormalization(epsilon=1e-6, dtype="float64")
    np.testing.assert_allclose(rms(seq).numpy(), F.rms_norm(torch.tensor(seq), (6,), eps=1e-6).numpy(),
                               rtol=1e-12)
    conv = torch.nn.ConvTranspose1d(3, 2, 3, stride=2).double()
    ours = layers.Conv1DTranspose(2, 3, strides=2, data_format="channels_first", dtype="float64")
    ours.build((2, 3, 5))
    ours.set_weights([conv.weight.detach().numpy(), conv.bias.detach().numpy()])
    xin = RNG.normal(size=(2, 3, 5))
    np.testing.assert_allclose(ours(xin).numpy(), conv(torch.tensor(xin)).detach().numpy(), rtol=1e-12)


def test_interop_refuses_clearly(torch):
    model = mn.Sequential([layers.Input((4, 3)), layers.RMSNormalization(), layers.Flatten(),
                           layers.Dense(2)])
    with pytest.raises(ValueError, match="RMSNormalization"):
        interop.to_torch(model)


@pytest.mark.slow_once
def test_against_keras(keras):
    import torch
    x3 = RNG.normal(size=(2, 6, 4)).astype("float32")
    x4 = RNG.normal(size=(2, 5, 7, 3)).astype("float32")
    x5 = RNG.normal(size=(1, 3, 4, 5, 2)).astype("float32")
    plain = [
        ("UnitNormalization", {}, x3), ("RMSNormalization", {}, x3), ("Identity", {}, x3),
        ("UpSampling1D", {"size": 2}, x3), ("UpSampling3D", {"size": (1, 2, 2)}, x5),
        ("ZeroPadding1D", {"padding": (2, 1)}, x3), ("ZeroPadding3D", {"padding": 1}, x5),
        ("Cropping1D", {"cropping": (1, 2)}, x3), ("Cropping3D", {"cropping": ((1, 0), (1, 1), (2, 1))}, x5),
        ("AdaptiveAveragePooling1D", {"output_size": 4}, x3),
        ("AdaptiveMaxPooling1D", {"output_size": 4}, x3),
        ("AdaptiveAveragePooling2D", {"output_size": (3, 2)}, x4),
        ("AdaptiveMaxPooling2D", {"output_size": (2, 4)}, x4),
        ("AdaptiveAveragePooling3D", {"output_size": (2, 3, 2)}, x5),
        ("GlobalAveragePooling3D", {}, x5), ("GlobalMaxPooling3D", {"keepdims": True}, x5),
    ]
    for name, kwargs, x in plain:
        theirs = getattr(keras.layers, name)(**kwargs)
        want = np.asarray(theirs(x).detach().cpu())
        ours = getattr(layers, name)(**kwargs)
        if theirs.get_weights():
            ours.build(x.shape)
            ours.set_weights(theirs.get_weights())
        np.testing.assert_allclose(ours(x).numpy(), want, rtol=1e-5, atol=1e-6, err_msg=name)
    a, b = RNG.normal(size=(3, 4, 5)).astype("float32"), RNG.normal(size=(3, 6, 5)).astype("float32")
    want = np.asarray(keras.layers.Dot(axes=(2, 2), normalize=True)([a, b]).cpu())
    np.testing.assert_allclose(layers.Dot(axes=(2, 2), normalize=True)([a, b]).numpy(), want, rtol=1e-5, atol=1e-6)
    want = np.asarray(keras.layers.Dot(axes=1)([a[:, 0], b[:, 0]]).cpu())
    np.testing.assert_allclose(layers.Dot(axes=1)([a[:, 0], b[:, 0]]).numpy(), want, rtol=1e-5)
    for kwargs in ({"padding": "same", "strides": 2}, {"padding": "valid", "strides": 3},
                   {"padding": "same", "strides": 2, "output_padding": 1}):
        theirs = keras.layers.Conv1DTranspose(5, 3, **kwargs)
        want = np.asarray(theirs(x3).detach().cpu())
        k, bias = theirs.get_weights()
        ours = layers.Conv1DTranspose(5, 3, **kwargs)
        ours.build(x3.shape)
        ours.set_weights([np.transpose(k, (2, 1, 0)), bias])
        np.testing.assert_allclose(ours(x3).numpy(), want, rtol=1e-5, atol=1e-5, err_msg=str(kwargs))
    for eq, shape, bias_axes in (("ab,bc->ac", 7, "c"), ("abc,cde->abde", (6, 2, 3), "de"),
                                 ("...b,bc->...c", 5, None)):
        x = x3 if eq != "ab,bc->ac" else x3[:, 0]
        theirs = keras.layers.EinsumDense(eq, shape, bias_axes=bias_axes)
        want = np.asarray(theirs(x).detach().cpu())
        ours = layers.EinsumDense(eq, shape, bias_axes=bias_axes)
        ours.build(x.shape)
        ours.set_weights(theirs.get_weights())
        np.testing.assert_allclose(ours(x).numpy(), want, rtol=1e-5, atol=1e-5, err_msg=eq)
    mask = np.ones((2, 6), bool)
    mask[1, 4:] = False
    u = 3
    for cell in ("SimpleRNNCell", "LSTMCell", "GRUCell"):
        theirs = keras.layers.RNN(getattr(keras.layers, cell)(u), return_sequences=True)
        want = np.asarray(theirs(x3, mask=mask).detach().cpu())
        kernel, recurrent, bias = theirs.get_weights()
        if cell == "GRUCell":
            def swap(w):
                return np.concatenate([w[..., u:2 * u], w[..., :u], w[..., 2 * u:]], -1)
            kernel, recurrent, bias = swap(kernel), swap(recurrent), swap(bias)
        b_ih, b_hh = (bias[0], bias[1]) if bias.ndim == 2 else (bias, np.zeros_like(bias))
        ours = layers.RNN(getattr(layers, cell)(u), return_sequences=True)
        ours(x3)
        ours.cell.set_weights([kernel.T, recurrent.T, b_ih, b_hh])
        np.testing.assert_allclose(ours(x3, mask=mask).numpy(), want, rtol=1e-5, atol=1e-5, err_msg=cell)
    ints = np.array([[0, 1, 1], [3, 3, 2]])
    for mode in ("multi_hot", "one_hot", "count"):
        data = ints if mode != "one_hot" else ints[:, :1]
        want = np.asarray(keras.layers.CategoryEncoding(4, output_mode=mode)(data).cpu())
        np.testing.assert_array_equal(layers.CategoryEncoding(4, output_mode=mode)(data).numpy(), want)
    values = RNG.normal(size=(3, 5)).astype("float32")
    want = np.asarray(keras.layers.Discretization(bin_boundaries=[-0.5, 0.0, 0.7])(values).cpu())
    np.testing.assert_array_equal(layers.Discretization(bin_boundaries=[-0.5, 0.0, 0.7])(values).numpy(), want)


@pytest.mark.parametrize("cls, shape", [(layers.AdaptiveMaxPooling1D, (1, 4, 2)),
                                        (layers.AdaptiveAveragePooling2D, (1, 4, 4, 2))])
def test_adaptive_pooling_refuses_an_output_larger_than_its_input(cls, shape):
    # PyTorch repeats bins when output_size > the input's size; minnet refuses it by name
    # (docs/coming_from_keras.md): a huge output_size must not loop for minutes.
    with pytest.raises(ValueError, match=r"`output_size` 2147483648 is larger than the input's size 4"):
        cls(2**31)(np.zeros(shape, "float32"))
