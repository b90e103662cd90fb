"""The composed recurrent cells (issue 28, item 2): LSTM/GRU/SimpleRNN with any activation and
GRU(reset_after=False). The composed path is checked against the fused kernel (same math with
tanh/sigmoid written as plain callables), a NumPy reference, gradcheck, and Keras 3 (oracle)."""
import numpy as np
import pytest

import minnet as mn
from minnet import interop, layers

RNG = np.random.default_rng(7)


def _tanh(x):
    return x.tanh()


def _sigmoid(x):
    return x.sigmoid()


def _copy(src, dst):
    dst.set_weights(src.get_weights())


@pytest.mark.parametrize("kind", ["SimpleRNN", "LSTM", "GRU"])
@pytest.mark.parametrize("go_backwards", [False, True])
def test_composed_equals_fused(kind, go_backwards):
    x = RNG.normal(size=(3, 5, 4))
    mask = np.ones((3, 5), bool)
    mask[1, 3:] = False
    extra = {} if kind == "SimpleRNN" else {"recurrent_activation": _sigmoid}
    fused = getattr(layers, kind)(6, return_sequences=True, return_state=True,
                                  go_backwards=go_backwards, dtype="float64")
    composed = getattr(layers, kind)(6, activation=_tanh, return_sequences=True, return_state=True,
                                     go_backwards=go_backwards, dtype="float64", **extra)
    fused.build(x.shape)
    composed.build(x.shape)
    for w in fused.weights if hasattr(fused, "weights") else fused.parameters():
        w.data[...] += 0.1 * RNG.normal(size=w.shape)
    _copy(fused, composed)
    assert fused.fused and not composed.fused
    for a, b in zip(fused(x, mask=mask), composed(x, mask=mask)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12, atol=1e-12)


def _np_lstm_relu(x, w_ih, w_hh, b_ih, b_hh):
    n, t, _ = x.shape
    u = w_hh.shape[1]
    h, c = np.zeros((n, u)), np.zeros((n, u))
    sig = lambda z: 1 / (1 + np.exp(-z))
    for s in range(t):
        z = x[:, s] @ w_ih.T + b_ih + h @ w_hh.T + b_hh
        i, f, g, o = sig(z[:, :u]), sig(z[:, u:2 * u]), np.maximum(z[:, 2 * u:3 * u], 0), sig(z[:, 3 * u:])
        c = f * c + i * g
        h = o * np.maximum(c, 0)
    return h


def _np_gru_reset_before(x, w_ih, w_hh, b_ih, b_hh):
    n, t, _ = x.shape
    u = w_hh.shape[1]
    h = np.zeros((n, u))
    sig = lambda z: 1 / (1 + np.exp(-z))
    for s in range(t):
        xp = x[:, s] @ w_ih.T + b_ih
        rz = xp[:, :2 * u] + h @ w_hh[:2 * u].T + b_hh[:2 * u]
        r, z = sig(rz[:, :u]), sig(rz[:, u:])
        cand = np.tanh(xp[:, 2 * u:] + (r * h) @ w_hh[2 * u:].T + b_hh[2 * u:])
        h = (1 - z) * cand + z * h
    return h


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_numpy_references(dtype):
    x = RNG.normal(size=(2, 4, 3))
    for layer, ref in ((layers.LSTM(5, activation="relu", dtype=dtype), _np_lstm_relu),
                       (layers.GRU(5, reset_after=False, dtype=dtype), _np_gru_reset_before)):
        layer.build(x.shape)
        weights = [w + 0.1 * RNG.normal(size=w.shape) for w in layer.get_weights()]
        layer.set_weights([w.astype(dtype) for w in weights])
        tol = 1e-12 if dtype == "float64" else 2e-5
        np.testing.assert_allclose(layer(x.astype(dtype)).numpy(), ref(x, *weights), rtol=tol,
                                   atol=tol)
        assert not layer.fused


def test_gradcheck_composed():
    x = mn.tensor(RNG.normal(size=(2, 3, 2)), requires_grad=True)
    for layer in (layers.LSTM(2, activation="elu", dtype="float64"),
                  layers.GRU(2, reset_after=False, dtype="float64"),
                  layers.SimpleRNN(2, activation="softsign", return_sequences=True, dtype="float64")):
        layer(x)
        assert mn.gradcheck(lambda a: layer(a), (x,))
        assert mn.gradcheck(lambda *w: layer(x), tuple(layer.parameters()))


def test_config_round_trip_and_interop_refusal(torch):
    gru = layers.GRU(3, reset_after=False)
    assert layers.GRU.from_config(gru.get_config()).reset_after is False
    model = mn.Sequential([layers.Input((4, 2)), layers.LSTM(3, activation="relu")])
    with pytest.raises(ValueError, match="no torch.nn"):
        interop.to_torch(model)


@pytest.mark.slow_once
def test_against_keras(keras):
    x = RNG.normal(size=(2, 5, 3)).astype("float32")
    mask = np.ones((2, 5), bool)
    mask[0, 3:] = False
    cases = [("LSTM", {"activation": "relu"}), ("LSTM", {"recurrent_activation": "hard_sigmoid"}),
             ("GRU", {"reset_after": False}), ("GRU", {"activation": "softsign"}),
             ("SimpleRNN", {"activation": "sigmoid"})]
    for kind, kwargs in cases:
        for go_backwards in (False, True):
            theirs = getattr(keras.layers, kind)(4, return_sequences=True, go_backwards=go_backwards,
                                                 **kwargs)
            want = np.asarray(theirs(x, mask=mask).detach().cpu())
            weights = theirs.get_weights()
            kernel, recurrent = weights[0], weights[1]
            bias = weights[2] if len(weights) > 2 else None
            u = 4
            if kind == "GRU":          # Keras z, r, h -> PyTorch r, z, n
                def swap(a):
                    return np.concatenate([a[..., u:2 * u], a[..., :u], a[..., 2 * u:]], -1)
                kernel, recurrent, bias = swap(kernel), swap(recurrent), swap(bias)
            if bias.ndim == 2:
                b_ih, b_hh = bias[0], bias[1]
            else:
                b_ih, b_hh = bias, np.zeros_like(bias)
            ours = getattr(layers, kind)(4, return_sequences=True, go_backwards=go_backwards, **kwargs)
            ours.build(x.shape)
            ours.set_weights([kernel.T, recurrent.T, b_ih, b_hh])
            np.testing.assert_allclose(ours(x, mask=mask).numpy(), want, rtol=1e-5, atol=1e-5,
                                       err_msg=f"{kind} {kwargs} {go_backwards}")


class _MinimalRNNCell(layers.Layer):
    """The custom cell of Keras's RNN docstring and guide: only `state_size` and
    `call(inputs, states)` (no `get_initial_state`, no `output_size`)."""

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.state_size = units

    def build(self, input_shape):
        self.kernel = self.add_weight(shape=(input_shape[-1], self.units), name="kernel")
        self.recurrent_kernel = self.add_weight(shape=(self.units, self.units),
                                                name="recurrent_kernel")

    def call(self, inputs, states):
        out = mn.ops.matmul(inputs, self.kernel) + mn.ops.matmul(states[0], self.recurrent_kernel)
        return out, [out]


def test_a_custom_cell_with_only_state_size_runs_in_rnn_as_keras():
    x = np.random.default_rng(0).random((2, 7, 5)).astype(np.float32)
    layer = layers.RNN(_MinimalRNNCell(8))
    y = layer(x).numpy()
    h = np.zeros((2, 8), np.float32)
    for step in range(7):
        h = x[:, step] @ layer.cell.kernel.numpy() + h @ layer.cell.recurrent_kernel.numpy()
    np.testing.assert_allclose(y, h, rtol=1e-5)
    stacked = layers.RNN([_MinimalRNNCell(3), layers.LSTMCell(4)], return_sequences=True)
    assert stacked(x).shape == (2, 7, 4)
    inputs = mn.Input((None, 5))
    model = mn.Model(inputs, layers.Dense(1)(layers.RNN(_MinimalRNNCell(4))(inputs)))
    assert model.output_shape == (None, 1)
    model.compile(optimizer="adam", loss="mse")
    assert np.isfinite(model.fit(x, np.zeros((2, 1), np.float32), verbose=0).history["loss"][0])
