"""Recurrent dropout (SimpleRNN / LSTM / GRU ``recurrent_dropout``) and input dropout.

The mask semantics (docs/math/recurrent.md, "Dropout"): one mask per sample over the units
of ``h``, fixed over the time steps and shared by the gates, scaled by ``1/(1-rate)``; the
recurrent product of every step reads ``(h * m) W_hhᵀ``, the state update the unmasked
``h``. Checked three ways: a NumPy cell loop, float64 gradcheck with the mask fixed, and a
PyTorch cell loop (autograd) for the gradients.
"""
import numpy as np
import pytest

import minnet as mn
import minnet.functional as F
from minnet import layers


def sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


def reference(kind, x, w_ih, w_hh, b_ih, b_hh, rmask, mask=None, reverse=False):
    """NumPy cell loop: outputs (N, T, H) and the final h; padded steps keep the state."""
    n, t, _ = x.shape
    hidden = w_hh.shape[1]
    h = np.zeros((n, hidden), x.dtype)
    c = np.zeros((n, hidden), x.dtype)
    ys = np.zeros((n, t, hidden), x.dtype)
    for tt in (range(t - 1, -1, -1) if reverse else range(t)):
        gx = x[:, tt] @ w_ih.T + b_ih
        gh = (h * rmask) @ w_hh.T + b_hh
        if kind == "LSTM":
            a = gx + gh
            i, f, g, o = (a[:, k * hidden:(k + 1) * hidden] for k in range(4))
            c_new = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
            h_new = sigmoid(o) * np.tanh(c_new)
        elif kind == "GRU":
            r = sigmoid(gx[:, :hidden] + gh[:, :hidden])
            z = sigmoid(gx[:, hidden:2 * hidden] + gh[:, hidden:2 * hidden])
            nn = np.tanh(gx[:, 2 * hidden:] + r * gh[:, 2 * hidden:])
            h_new, c_new = (1 - z) * nn + z * h, c
        else:
            h_new, c_new = np.tanh(gx + gh), c
        if mask is not None:
            keep = mask[:, tt:tt + 1]
            h_new = np.where(keep, h_new, h)
            c_new = np.where(keep, c_new, c)
        h, c = h_new, c_new
        ys[:, tt] = h
    return ys, h


GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}
OPS = {"LSTM": F.lstm, "GRU": F.gru, "RNN": F.rnn}
LAYERS = {"LSTM": layers.LSTM, "GRU": layers.GRU, "RNN": layers.SimpleRNN}
TOL = {np.float32: dict(rtol=2e-5, atol=2e-6), np.float64: dict(rtol=1e-12, atol=1e-13)}


def random_mask(rng, shape, rate, dtype):
    return ((rng.random(shape) >= rate) / (1 - rate)).astype(dtype)


def weights(rng, kind, n_in, hidden, dtype):
    g = GATES[kind] * hidden
    return [(0.5 * rng.standard_normal(s)).astype(dtype)
            for s in ((g, n_in), (g, hidden), (g,), (g,))]


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reverse", [False, True])
def test_functional_recurrent_mask_matches_numpy_cell_loop(kind, dtype, reverse):
    rng = np.random.default_rng(3)
    n, t, n_in, hidden = 5, 6, 3, 7
    x = rng.standard_normal((n, t, n_in)).astype(dtype)
    w = weights(rng, kind, n_in, hidden, dtype)
    rmask = random_mask(rng, (n, hidden), 0.4, dtype)
    mask = rng.random((n, t)) > 0.25
    out = OPS[kind](x, *w, mask=mask, reverse=reverse, recurrent_mask=rmask)
    ys, h = reference(kind, x, *w, rmask, mask=mask, reverse=reverse)
    np.testing.assert_allclose(out[0].numpy(), ys, **TOL[dtype])
    np.testing.assert_allclose(out[1].numpy(), h, **TOL[dtype])


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("return_sequences", [True, False])
def test_functional_recurrent_mask_gradcheck(kind, return_sequences):
    rng = np.random.default_rng(4)
    n, t, n_in, hidden = 3, 4, 2, 4
    x = mn.tensor(rng.standard_normal((n, t, n_in)), requires_grad=True)
    w = [mn.tensor(a, requires_grad=True) for a in weights(rng, kind, n_in, hidden, np.float64)]
    h0 = mn.tensor(rng.standard_normal((n, hidden)), requires_grad=True)
    rmask = random_mask(rng, (n, hidden), 0.5, np.float64)
    mask = np.array([[1, 1, 0, 1], [0, 1, 1, 1], [1, 1, 1, 1]], bool)

    def f(x, w_ih, w_hh, b_ih, b_hh, h0):
        out = OPS[kind](x, w_ih, w_hh, b_ih, b_hh, h0=h0, mask=mask, recurrent_mask=rmask,
                        return_sequences=return_sequences)
        y, h = out[0], out[1]
        return h * 2 if y is None else y.sum(axis=1) + h * 2

    assert mn.gradcheck(f, (x, *w, h0))


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
def test_gradients_match_a_torch_cell_loop_with_the_same_mask(torch, kind):
    rng = np.random.default_rng(5)
    n, t, n_in, hidden = 4, 5, 3, 6
    x = rng.standard_normal((n, t, n_in))
    w = weights(rng, kind, n_in, hidden, np.float64)
    rmask = random_mask(rng, (n, hidden), 0.3, np.float64)
    g_out = rng.standard_normal((n, t, hidden))
    params = [mn.tensor(a, requires_grad=True) for a in w]
    xm = mn.tensor(x, requires_grad=True)
    y = OPS[kind](xm, *params, recurrent_mask=rmask)[0]
    y.backward(g_out)

    xt = torch.tensor(x, requires_grad=True)
    wt = [torch.tensor(a, requires_grad=True) for a in w]
    m = torch.tensor(rmask)
    h = torch.zeros(n, hidden, dtype=torch.float64)
    c = torch.zeros(n, hidden, dtype=torch.float64)
    outs = []
    for tt in range(t):
        gx = xt[:, tt] @ wt[0].T + wt[2]
        gh = (h * m) @ wt[1].T + wt[3]
        if kind == "LSTM":
            i, f, g, o = (gx + gh).chunk(4, dim=1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
        elif kind == "GRU":
            xr, xz, xn = gx.chunk(3, dim=1)
            hr, hz, hn = gh.chunk(3, dim=1)
            r, z = torch.sigmoid(xr + hr), torch.sigmoid(xz + hz)
            h = (1 - z) * torch.tanh(xn + r * hn) + z * h
        else:
            h = torch.tanh(gx + gh)
        outs.append(h)
    (torch.stack(outs, 1) * torch.tensor(g_out)).sum().backward()
    np.testing.assert_allclose(y.numpy(), torch.stack(outs, 1).detach().numpy(), rtol=1e-12,
                               atol=1e-13)
    np.testing.assert_allclose(xm.grad, xt.grad.numpy(), rtol=1e-10, atol=1e-12)
    for mine, theirs in zip(params, wt):
        np.testing.assert_allclose(mine.grad, theirs.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_mask_of_ones_is_bitwise_no_mask():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((3, 5, 4)).astype(np.float32)
    w = weights(rng, "LSTM", 4, 8, np.float32)
    a = F.lstm(x, *w)[0].numpy()
    b = F.lstm(x, *w, recurrent_mask=np.ones((3, 8), np.float32))[0].numpy()
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("dropout", [0.0, 0.3])
def test_layer_training_uses_one_seeded_mask_per_sample(kind, dropout):
    rng = np.random.default_rng(7)
    n, t, n_in, units = 6, 5, 3, 8
    x = rng.standard_normal((n, t, n_in)).astype(np.float32)
    layer = LAYERS[kind](units, dropout=dropout, recurrent_dropout=0.4, return_sequences=True)
    layer.build((None, t, n_in))
    w = [p.data for p in (layer.weight_ih, layer.weight_hh, layer.bias_ih, layer.bias_hh)]
    mn.manual_seed(11)
    y = layer(x, training=True).numpy()
    # Re-draw the masks in the layer's order: the input mask (n, 1, features), then h's.
    mn.manual_seed(11)
    keep = F.dropout(mn.tensor(np.ones((n, 1, n_in), np.float32)), dropout).numpy() \
        if dropout else 1.0
    rmask = F.dropout(mn.tensor(np.ones((n, units), np.float32)), 0.4).numpy()
    assert set(np.unique(rmask)) <= {0.0, np.float32(1 / 0.6)}
    assert 0 < (rmask == 0).sum() < rmask.size
    ys, _ = reference(kind, x * keep, *w, rmask)
    np.testing.assert_allclose(y, ys, rtol=2e-5, atol=2e-6)
    # The same seed gives the same output; another seed another one.
    mn.manual_seed(11)
    np.testing.assert_array_equal(layer(x, training=True).numpy(), y)
    mn.manual_seed(12)
    assert not np.allclose(layer(x, training=True).numpy(), y)


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
def test_inference_and_rate_zero_ignore_recurrent_dropout(kind):
    rng = np.random.default_rng(8)
    x = rng.standard_normal((4, 6, 3)).astype(np.float32)
    with_dropout = LAYERS[kind](5, recurrent_dropout=0.5, return_sequences=True)
    plain = LAYERS[kind](5, return_sequences=True)
    with_dropout.build((None, 6, 3))
    plain.build((None, 6, 3))
    plain.set_weights(with_dropout.get_weights())
    reference_out = plain(x, training=True).numpy()
    np.testing.assert_array_equal(with_dropout(x).numpy(), reference_out)
    np.testing.assert_array_equal(with_dropout(x, training=False).numpy(), reference_out)
    zero = LAYERS[kind](5, recurrent_dropout=0.0, return_sequences=True)
    zero.build((None, 6, 3))
    zero.set_weights(plain.get_weights())
    np.testing.assert_array_equal(zero(x, training=True).numpy(), reference_out)
    assert not np.allclose(with_dropout(x, training=True).numpy(), reference_out)


def test_gru_reset_after_recurrent_dropout_trains_and_round_trips_config():
    rng = np.random.default_rng(9)
    x = rng.standard_normal((16, 7, 3)).astype(np.float32)
    y = (x.sum(axis=(1, 2)) > 0).astype(np.int64)
    mn.manual_seed(0)
    model = mn.Sequential([mn.Input((7, 3)), layers.GRU(8, reset_after=True, dropout=0.1,
                                                          recurrent_dropout=0.3),
                           layers.Dense(2)])
    model.compile("adam", mn.losses.SparseCategoricalCrossentropy(from_logits=True))
    history = model.fit(x, y, epochs=3, batch_size=8, verbose=0)
    assert all(np.isfinite(history.history["loss"]))
    config = model.layers[0].get_config()
    assert config["recurrent_dropout"] == 0.3 and config["reset_after"] is True
    assert layers.GRU.from_config(config).recurrent_dropout == 0.3


def test_bidirectional_with_recurrent_dropout_backpropagates():
    rng = np.random.default_rng(10)
    x = mn.tensor(rng.standard_normal((3, 4, 2)).astype(np.float32), requires_grad=True)
    layer = layers.Bidirectional(layers.LSTM(3, recurrent_dropout=0.5, return_sequences=True))
    mn.manual_seed(1)
    out = layer(x, training=True)
    out.sum().backward()
    assert out.shape == (3, 4, 6) and np.isfinite(x.grad).all()
    assert np.abs(layer.forward_layer.weight_hh.grad).sum() > 0


def test_bad_recurrent_mask():
    x = np.zeros((2, 3, 4))
    w = weights(np.random.default_rng(0), "GRU", 4, 5, np.float64)
    with pytest.raises(ValueError, match="recurrent_mask"):
        F.gru(x, *w, recurrent_mask=np.ones((2, 4)))
    with pytest.raises(ValueError, match="recurrent_dropout"):
        layers.LSTM(3, recurrent_dropout=1.0)


@pytest.mark.parametrize("make, shape", [
    (lambda **k: layers.LSTM(3, dropout=0.5, recurrent_dropout=0.5, **k), (4, 5, 3)),
    (lambda **k: layers.GRU(3, dropout=0.5, recurrent_dropout=0.5, **k), (4, 5, 3)),
    (lambda **k: layers.SimpleRNN(3, dropout=0.5, **k), (4, 5, 3)),
    (lambda **k: layers.RNN(layers.LSTMCell(3, dropout=0.5, recurrent_dropout=0.3, **k)), (4, 5, 3)),
    (lambda **k: layers.ConvLSTM1D(2, 3, dropout=0.5, recurrent_dropout=0.5, **k), (2, 3, 6, 2)),
])
def test_seed_gives_recurrent_dropout_its_own_stream(make, shape):
    """Keras's ``seed=`` on the recurrent layers and cells: the dropout masks depend on the
    seed, not on ``mn.manual_seed`` (the cells and ConvLSTM took a seed and ignored it)."""
    x = np.ones(shape, np.float32)
    mn.manual_seed(0)
    first = make(seed=5)
    expected = first(x, training=True).numpy()
    weights = first.get_weights()
    outputs = {}
    for seed in (5, 6):
        mn.manual_seed(123)
        layer = make(seed=seed)
        layer(x)                                  # built in inference: no mask drawn
        layer.set_weights(weights)
        outputs[seed] = layer(x, training=True).numpy()
    np.testing.assert_array_equal(outputs[5], expected)
    assert not np.array_equal(outputs[6], expected)
    assert first.get_config().get("seed", first.get_config().get("cell", {}).get("config", {}).get("seed")) == 5


def test_use_cudnn_is_keras_s_switch_on_a_cpu():
    """Keras's ``use_cudnn``: 'auto' and False run the same kernels; True (cuDNN required)
    is refused by name, as Keras refuses it where cuDNN cannot run."""
    x = np.ones((2, 4, 3), np.float32)
    for value in ("auto", False):
        layers.LSTM(2, use_cudnn=value)(x)
        layers.GRU(2, use_cudnn=value)(x)
    with pytest.raises(ValueError, match="`use_cudnn`: minnet runs on the CPU"):
        layers.LSTM(2, use_cudnn=True)
    with pytest.raises(ValueError, match="expected 'auto', True or False"):
        layers.GRU(2, use_cudnn="yes")
