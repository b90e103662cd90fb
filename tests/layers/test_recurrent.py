"""SimpleRNN / LSTM / GRU / Bidirectional / TimeDistributed: PyTorch parity, masks, gradcheck, config."""
import numpy as np
import pytest

import minnet as mn
from minnet import layers
from minnet.layers.embedding import get_keras_mask

from _harness import TOLERANCES

TOL = TOLERANCES["recurrent"]
CELLS = [("LSTM", layers.LSTM), ("GRU", layers.GRU), ("RNN", layers.SimpleRNN)]


def torch_module(torch, kind, n_in, units, bidirectional=False, dtype=np.float32):
    cls = {"LSTM": torch.nn.LSTM, "GRU": torch.nn.GRU, "RNN": torch.nn.RNN}[kind]
    module = cls(n_in, units, batch_first=True, bidirectional=bidirectional)
    return module.double() if dtype == np.float64 else module


def copy_weights(layer, module, suffix=""):
    """minnet -> torch (same layouts)."""
    import torch
    with torch.no_grad():
        for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            getattr(module, f"{name}_l0{suffix}").copy_(torch.from_numpy(getattr(layer, name).data))


def grads_of(layer):
    return [layer.weight_ih.grad, layer.weight_hh.grad, layer.bias_ih.grad, layer.bias_hh.grad]


def torch_grads(module, suffix=""):
    return [getattr(module, f"{n}_l0{suffix}").grad.numpy()
            for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]


@pytest.mark.parametrize("kind,cls", CELLS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("return_sequences", [True, False])
def test_matches_torch_forward_and_backward(torch, kind, cls, dtype, return_sequences):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 7, 5)).astype(dtype)
    layer = cls(6, return_sequences=return_sequences, return_state=True,
                dtype=np.dtype(dtype).name)
    outs = layer(mn.tensor(x, requires_grad=True))
    module = torch_module(torch, kind, 5, 6, dtype=dtype)
    copy_weights(layer, module)
    xt = torch.tensor(x, requires_grad=True)
    y_t, state_t = module(xt)
    h_t = state_t[0][0] if kind == "LSTM" else state_t[0]
    y = outs[0]
    ref = y_t if return_sequences else h_t
    np.testing.assert_allclose(y.numpy(), ref.detach().numpy(), **TOL[dtype])
    np.testing.assert_allclose(outs[1].numpy(), h_t.detach().numpy(), **TOL[dtype])
    if kind == "LSTM":
        np.testing.assert_allclose(outs[2].numpy(), state_t[1][0].detach().numpy(), **TOL[dtype])

    x_in = mn.tensor(x, requires_grad=True)
    out = layer(x_in)[0]
    g = rng.standard_normal(out.shape).astype(dtype)
    out.backward(g)
    ref.backward(torch.from_numpy(g))
    np.testing.assert_allclose(x_in.grad, xt.grad.numpy(), **TOL[dtype])
    for ours, theirs in zip(grads_of(layer), torch_grads(module)):
        np.testing.assert_allclose(ours, theirs, **TOL[dtype])


@pytest.mark.parametrize("kind,cls", CELLS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_bidirectional_matches_torch(torch, kind, cls, dtype):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 6, 4)).astype(dtype)
    layer = layers.Bidirectional(cls(5, return_sequences=True, dtype=np.dtype(dtype).name))
    x_in = mn.tensor(x, requires_grad=True)
    y = layer(x_in)
    module = torch_module(torch, kind, 4, 5, bidirectional=True, dtype=dtype)
    copy_weights(layer.forward_layer, module)
    copy_weights(layer.backward_layer, module, "_reverse")
    xt = torch.tensor(x, requires_grad=True)
    y_t, _ = module(xt)
    np.testing.assert_allclose(y.numpy(), y_t.detach().numpy(), **TOL[dtype])
    g = rng.standard_normal(y.shape).astype(dtype)
    y.backward(g)
    y_t.backward(torch.from_numpy(g))
    np.testing.assert_allclose(x_in.grad, xt.grad.numpy(), **TOL[dtype])
    for ours, theirs in zip(grads_of(layer.backward_layer), torch_grads(module, "_reverse")):
        np.testing.assert_allclose(ours, theirs, **TOL[dtype])


@pytest.mark.parametrize("kind,cls", CELLS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_post_padded_mask_matches_pack_padded_sequence(torch, kind, cls, dtype):
    rng = np.random.default_rng(2)
    lengths = [6, 4, 1, 5]
    x = rng.standard_normal((4, 6, 3)).astype(dtype)
    mask = np.arange(6)[None, :] < np.array(lengths)[:, None]
    x[~mask] = 0.0
    layer = cls(5, return_sequences=True, return_state=True, dtype=np.dtype(dtype).name)
    x_in = mn.tensor(x, requires_grad=True)
    y, h = layer(x_in, mask=mask)[:2]
    module = torch_module(torch, kind, 3, 5, dtype=dtype)
    copy_weights(layer, module)
    xt = torch.tensor(x, requires_grad=True)
    packed = torch.nn.utils.rnn.pack_padded_sequence(xt, lengths, batch_first=True,
                                                     enforce_sorted=False)
    y_packed, state = module(packed)
    y_t, _ = torch.nn.utils.rnn.pad_packed_sequence(y_packed, batch_first=True, total_length=6)
    h_t = state[0][0] if kind == "LSTM" else state[0]
    np.testing.assert_allclose(y.numpy()[mask], y_t.detach().numpy()[mask], **TOL[dtype])
    np.testing.assert_allclose(h.numpy(), h_t.detach().numpy(), **TOL[dtype])
    # Keras 3: a padded step's output repeats the last real output.
    for n, length in enumerate(lengths):
        np.testing.assert_array_equal(y.numpy()[n, length:], np.broadcast_to(
            y.numpy()[n, length - 1], (6 - length, 5)))
    g = rng.standard_normal((4, 6, 5)).astype(dtype) * mask[..., None]
    gh = rng.standard_normal((4, 5)).astype(dtype)
    (y * mn.tensor(g)).sum().__add__((h * mn.tensor(gh)).sum()).backward()
    ((y_t * torch.from_numpy(g)).sum() + (h_t * torch.from_numpy(gh)).sum()).backward()
    np.testing.assert_allclose(x_in.grad, xt.grad.numpy(), **TOL[dtype])
    for ours, theirs in zip(grads_of(layer), torch_grads(module)):
        np.testing.assert_allclose(ours, theirs, **TOL[dtype])


@pytest.mark.parametrize("kind,cls", CELLS)
def test_pre_padded_mask_equals_each_sequence_alone(kind, cls):
    rng = np.random.default_rng(3)
    lengths = [5, 2, 3]
    x = np.zeros((3, 5, 4))
    for n, length in enumerate(lengths):
        x[n, 5 - length:] = rng.standard_normal((length, 4))
    mask = np.arange(5)[None, :] >= 5 - np.array(lengths)[:, None]
    layer = cls(3, return_sequences=True, dtype="float64")
    x_in = mn.tensor(x, requires_grad=True)
    y = layer(x_in, mask=mask)
    y.sum().backward()
    for n, length in enumerate(lengths):
        alone = mn.tensor(x[n:n + 1, 5 - length:], requires_grad=True)
        y_alone = layer(alone)
        np.testing.assert_allclose(y.numpy()[n, 5 - length:], y_alone.numpy()[0], rtol=1e-12)
        np.testing.assert_array_equal(y.numpy()[n, :5 - length], 0.0)   # Keras: zeros before
        y_alone.sum().backward()
        # The padded steps get no gradient; the real ones get the gradient of the sequence alone
        # plus that of the repeated outputs (none here: outputs before the first step are 0).
        np.testing.assert_array_equal(x_in.grad[n, :5 - length], 0.0)
        np.testing.assert_allclose(x_in.grad[n, 5 - length:], alone.grad[0], rtol=1e-10)


def test_mask_flows_from_embedding_and_masking():
    ids = np.array([[0, 0, 3, 4], [5, 6, 7, 0]])
    emb = layers.Embedding(10, 3, mask_zero=True)
    e = emb(ids)
    np.testing.assert_array_equal(get_keras_mask(e), ids != 0)
    lstm = layers.LSTM(2, return_sequences=True)
    y = lstm(e)
    np.testing.assert_array_equal(get_keras_mask(y), ids != 0)
    np.testing.assert_array_equal(y.numpy()[0, :2], 0.0)
    np.testing.assert_array_equal(y.numpy()[1, 3], y.numpy()[1, 2])
    assert get_keras_mask(layers.LSTM(2)(e)) is None
    # Masking: steps whose features all equal mask_value.
    x = np.ones((2, 3, 2))
    x[0, 1] = 0.0
    m = layers.Masking()(x)
    np.testing.assert_array_equal(get_keras_mask(m), [[True, False, True], [True, True, True]])
    # Sequential carries the mask from layer to layer.
    model = mn.Sequential([layers.Embedding(10, 3, mask_zero=True),
                           layers.GRU(4, return_sequences=True), layers.GRU(2)])
    out = model(ids)
    second = model.layers[2]
    first_out = model.layers[1](model.layers[0](ids))
    np.testing.assert_allclose(out.numpy(), second(first_out).numpy())
    assert out.shape == (2, 2)


@pytest.mark.parametrize("cls", [layers.LSTM, layers.GRU, layers.SimpleRNN])
@pytest.mark.parametrize("go_backwards", [False, True])
def test_gradcheck_layers(cls, go_backwards):
    mn.manual_seed(0)
    layer = cls(3, return_sequences=True, go_backwards=go_backwards, dtype="float64")
    x = mn.tensor(np.random.default_rng(4).standard_normal((2, 4, 3)), requires_grad=True)
    mask = np.array([[1, 0, 1, 1], [0, 1, 1, 0]], bool)
    layer(x)

    def f(x, *weights):
        return layer(x, mask=mask)

    assert mn.gradcheck(f, (x, *layer.parameters()))


def test_gradcheck_bidirectional_and_time_distributed():
    mn.manual_seed(1)
    x = mn.tensor(np.random.default_rng(5).standard_normal((2, 3, 3)), requires_grad=True)
    bi = layers.Bidirectional(layers.LSTM(2, return_sequences=True, dtype="float64"),
                              merge_mode="sum")
    bi(x)
    assert mn.gradcheck(lambda x, *w: bi(x), (x, *bi.parameters()))
    td = layers.TimeDistributed(layers.Dense(2, dtype="float64"))
    td(x)
    assert mn.gradcheck(lambda x, *w: td(x), (x, *td.parameters()))


def test_go_backwards_returns_steps_in_processing_order():
    x = np.random.default_rng(6).standard_normal((2, 5, 3))
    fwd = layers.GRU(4, return_sequences=True, dtype="float64")
    fwd(x)
    bwd = layers.GRU(4, return_sequences=True, go_backwards=True, dtype="float64")
    bwd(x)
    bwd.set_weights(fwd.get_weights())
    np.testing.assert_allclose(bwd(x).numpy(), fwd(x[:, ::-1]).numpy(), rtol=1e-12)


def test_keras_defaults_and_initial_weights():
    mn.manual_seed(0)
    lstm = layers.LSTM(4)
    lstm(np.zeros((1, 2, 3), np.float32))
    np.testing.assert_array_equal(lstm.bias_ih.data, [0] * 4 + [1] * 4 + [0] * 8)
    np.testing.assert_array_equal(lstm.bias_hh.data, 0)
    w_hh = lstm.weight_hh.data.astype(np.float64)          # (16, 4): orthonormal columns
    np.testing.assert_allclose(w_hh.T @ w_hh, np.eye(4), atol=1e-6)
    limit = np.sqrt(6 / (3 + 16))
    assert np.abs(lstm.weight_ih.data).max() <= limit
    assert not lstm.return_sequences and not lstm.return_state and not lstm.go_backwards
    assert layers.LSTM(4, unit_forget_bias=False).get_config()["unit_forget_bias"] is False
    assert layers.GRU(2).get_config()["reset_after"] is True


def test_return_state_and_stateful():
    x = np.random.default_rng(7).standard_normal((2, 4, 3)).astype(np.float32)
    out, h, c = layers.LSTM(5, return_state=True)(x)
    np.testing.assert_array_equal(out.numpy(), h.numpy())
    assert c.shape == (2, 5)
    stateful = layers.GRU(3, stateful=True)
    whole = layers.GRU(3)
    whole(x)
    stateful(x[:, :2])
    stateful.set_weights(whole.get_weights())
    stateful.reset_states()
    stateful(x[:, :2])
    np.testing.assert_allclose(stateful(x[:, 2:]).numpy(), whole(x).numpy(), rtol=1e-5, atol=1e-6)


def test_dropout_only_in_training():
    mn.manual_seed(0)
    x = np.ones((3, 4, 5), np.float32)
    layer = layers.LSTM(2, dropout=0.5)
    a = layer(x).numpy()
    np.testing.assert_array_equal(a, layer(x).numpy())
    assert not np.allclose(layer(x, training=True).numpy(), a)


def test_bad_arguments():
    with pytest.raises(ValueError, match="units"):
        layers.LSTM(0)
    with pytest.raises(ValueError, match="dropout"):
        layers.GRU(3, dropout=1.5)
    assert not layers.LSTM(3, activation="relu").fused      # composed cell (Keras accepts it)
    with pytest.raises(ValueError, match="merge_mode"):
        layers.Bidirectional(layers.LSTM(2), merge_mode="max")
    with pytest.raises(TypeError, match="layer"):
        layers.Bidirectional(layers.Dense(2))
    with pytest.raises(ValueError, match="ndim=3"):
        layer = layers.LSTM(2)
        layer(np.zeros((2, 4, 3), np.float32))
        layer(np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match="mask"):
        layers.LSTM(2)(np.zeros((2, 4, 3), np.float32), mask=np.ones((2, 3), bool))


def test_serialization_round_trip():
    for layer in (layers.LSTM(3, return_sequences=True, go_backwards=True),
                  layers.GRU(2, return_state=True), layers.SimpleRNN(4, activation="relu"),
                  layers.Bidirectional(layers.GRU(3), merge_mode="ave"),
                  layers.TimeDistributed(layers.Dense(3))):
        clone = layers.deserialize(layers.serialize(layer))
        assert type(clone) is type(layer)
        config, other = layer.get_config(), clone.get_config()
        config.pop("name"), other.pop("name")
        assert config == other
    x = np.random.default_rng(8).standard_normal((2, 3, 4)).astype(np.float32)
    bi = layers.Bidirectional(layers.LSTM(3))
    y = bi(x)
    clone = layers.deserialize(layers.serialize(bi))
    clone(x)
    clone.set_weights(bi.get_weights())
    np.testing.assert_array_equal(clone(x).numpy(), y.numpy())


def test_time_distributed_shapes_and_mask():
    x = np.random.default_rng(9).standard_normal((2, 5, 3)).astype(np.float32)
    td = layers.TimeDistributed(layers.Dense(4))
    y = td(x)
    assert y.shape == (2, 5, 4)
    np.testing.assert_allclose(y.numpy()[:, 2], td.layer(x[:, 2]).numpy(), rtol=1e-6)
    e = layers.Embedding(5, 3, mask_zero=True)(np.array([[1, 0, 2]]))
    np.testing.assert_array_equal(get_keras_mask(td_out := layers.TimeDistributed(
        layers.Dense(2))(e)), [[True, False, True]])
    assert td_out.shape == (1, 3, 2)


def test_sequential_fit_learns_a_sequence_task():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((256, 8, 1)).astype(np.float32)
    y = (x.sum(axis=(1, 2)) > 0).astype(np.int64)
    mn.manual_seed(0)
    model = mn.Sequential([layers.GRU(8), layers.Dense(2)])
    model.compile(optimizer=mn.optimizers.Adam(learning_rate=0.01),
                  loss=mn.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    history = model.fit(x, y, batch_size=32, epochs=15, verbose=0)
    assert history.history["accuracy"][-1] > 0.9


@pytest.mark.parametrize("cls", [layers.LSTM, layers.SimpleRNN, layers.GRU])
def test_backward_twice_with_retain_graph_and_once_without(cls):
    # Without retain_graph the kernel writes the gate gradients over the saved gates (their
    # last use); with it the saved gates must survive for the second backward.
    rng = np.random.default_rng(8)
    x = rng.standard_normal((5, 6, 3)).astype(np.float32)
    mn.manual_seed(1)
    layer = cls(4, return_sequences=True)
    layer(x)
    xt = mn.tensor(x, requires_grad=True)
    y = layer(xt, training=True)
    g = rng.standard_normal(y.shape).astype(np.float32)
    y.backward(g, retain_graph=True)
    first = [np.array(p.grad) for p in layer.parameters()] + [np.array(xt.grad)]
    for p in layer.parameters():
        p.grad = None
    xt.grad = None
    y.backward(g)
    second = [np.array(p.grad) for p in layer.parameters()] + [np.array(xt.grad)]
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(RuntimeError, match="retain_graph"):
        y.backward(g)


# ---- initial_state (Keras's seq2seq: `LSTM(...)(x, initial_state=[h, c])`) -----------------
@pytest.mark.parametrize("kind,cls", CELLS)
def test_initial_state_matches_torch_h0_c0_and_gets_gradients(torch, kind, cls):
    mn.manual_seed(0)
    rng = np.random.default_rng(5)
    layer = cls(3, return_sequences=True, dtype="float64")
    x = rng.standard_normal((2, 4, 5))
    layer(x)
    module = torch_module(torch, kind, 5, 3, dtype=np.float64)
    copy_weights(layer, module)
    states = [rng.standard_normal((2, 3)) for _ in range(2 if kind == "LSTM" else 1)]
    given = [mn.tensor(s, requires_grad=True) for s in states]
    y = layer(mn.tensor(x), initial_state=given if kind == "LSTM" else given[0])
    torch_states = [torch.tensor(s[None], requires_grad=True) for s in states]
    expected, _ = module(torch.tensor(x), tuple(torch_states) if kind == "LSTM" else torch_states[0])
    np.testing.assert_allclose(y.numpy(), expected.detach().numpy(), rtol=1e-10, atol=1e-12)
    y.sum().backward()
    expected.sum().backward()
    for mine, theirs in zip(given, torch_states):
        np.testing.assert_allclose(mine.grad, theirs.grad.numpy()[0], rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("kind,cls", CELLS)
def test_gradcheck_through_the_initial_state(kind, cls):
    mn.manual_seed(1)
    layer = cls(2, dtype="float64")
    rng = np.random.default_rng(6)
    x = mn.tensor(rng.standard_normal((2, 3, 2)), requires_grad=True)
    states = [mn.tensor(rng.standard_normal((2, 2)), requires_grad=True)
              for _ in range(2 if kind == "LSTM" else 1)]
    layer(x)
    assert mn.gradcheck(lambda x, *s: layer(x, initial_state=list(s)), (x, *states))


def test_initial_state_in_a_functional_encoder_decoder_and_its_errors():
    encoder_input = layers.Input(shape=(None, 4))
    _, h, c = layers.LSTM(6, return_state=True)(encoder_input)
    decoder_input = layers.Input(shape=(None, 3))
    decoded = layers.LSTM(6, name="decoder")(decoder_input, initial_state=[h, c])
    model = mn.Model([encoder_input, decoder_input], layers.Dense(2)(decoded))
    rng = np.random.default_rng(7)
    a, b = rng.standard_normal((2, 5, 4)), rng.standard_normal((2, 7, 3))
    out = model([a, b]).numpy()
    assert out.shape == (2, 2)
    # the decoder really starts from the encoder's states: zeros would give another output
    decoder = model.get_layer("decoder")
    zero_start = model.layers[-1](decoder(mn.tensor(b, dtype="float32"))).numpy()
    assert not np.allclose(out, zero_start)
    with pytest.raises(ValueError, match="initial state"):
        layers.LSTM(6)(np.zeros((2, 3, 4), "float32"), initial_state=[np.zeros((2, 6), "float32")])
    with pytest.raises(ValueError, match="initial_state"):
        layers.GRU(6)(np.zeros((2, 3, 4), "float32"), initial_state=np.zeros((2, 5), "float32"))


def test_generic_rnn_builds_its_cell_from_the_declared_input_shape():
    # guides/working_with_rnns.py: RNN(LSTMCell(u), input_shape=...) in a Sequential, then
    # set_weights from an LSTM model of the same size
    fused = mn.Sequential([layers.LSTM(4, input_shape=(None, 3)), layers.Dense(2)])
    generic = mn.Sequential([layers.RNN(layers.LSTMCell(4), input_shape=(None, 3)), layers.Dense(2)])
    assert len(generic.get_weights()) == len(fused.get_weights()) == 6
    generic.set_weights(fused.get_weights())
    x = np.random.default_rng(8).standard_normal((2, 5, 3)).astype("float32")
    np.testing.assert_allclose(generic(x).numpy(), fused(x).numpy(), rtol=1e-5, atol=1e-6)
