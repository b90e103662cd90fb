"""minnet.functional lstm / gru / rnn / embedding: gradcheck (states, masks, reverse), PyTorch parity, errors."""
import numpy as np
import pytest

import minnet as mn
import minnet.functional as F


def params(rng, gates, n_in, hidden):
    g = gates * hidden
    return [mn.tensor(0.5 * rng.standard_normal(s), requires_grad=True)
            for s in ((g, n_in), (g, hidden), (g,), (g,))]


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("return_sequences", [False, True])
def test_lstm_gradcheck_with_states_and_mask(reverse, return_sequences):
    rng = np.random.default_rng(0)
    x = mn.tensor(rng.standard_normal((2, 4, 3)), requires_grad=True)
    h0 = mn.tensor(rng.standard_normal((2, 5)), requires_grad=True)
    c0 = mn.tensor(rng.standard_normal((2, 5)), requires_grad=True)
    mask = np.array([[1, 1, 0, 1], [0, 1, 1, 1]], bool)

    def f(x, w_ih, w_hh, b_ih, b_hh, h0, c0):
        y, h, c = F.lstm(x, w_ih, w_hh, b_ih, b_hh, h0, c0, mask=mask, reverse=reverse,
                         return_sequences=return_sequences)
        return (h * 2 + c) if y is None else y.sum(axis=1) + h * 2 + c

    assert mn.gradcheck(f, (x, *params(rng, 4, 3, 5), h0, c0))


@pytest.mark.parametrize("op,gates,kwargs", [(F.gru, 3, {}), (F.rnn, 1, {}),
                                             (F.rnn, 1, {"nonlinearity": "relu"})])
def test_gru_rnn_gradcheck(op, gates, kwargs):
    rng = np.random.default_rng(1)
    x = mn.tensor(rng.standard_normal((3, 5, 2)), requires_grad=True)
    h0 = mn.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    mask = rng.random((3, 5)) > 0.3

    def f(x, w_ih, w_hh, b_ih, b_hh, h0):
        y, h = op(x, w_ih, w_hh, b_ih, b_hh, h0, mask=mask, **kwargs)
        return y.sum(axis=1) + h

    assert mn.gradcheck(f, (x, *params(rng, gates, 2, 4), h0))


def test_no_bias_and_float32_parity_with_torch(torch):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 6, 3)).astype(np.float32)
    module = torch.nn.GRU(3, 4, batch_first=True, bias=False)
    w_ih = module.weight_ih_l0.detach().numpy()
    w_hh = module.weight_hh_l0.detach().numpy()
    h0 = rng.standard_normal((2, 4)).astype(np.float32)
    y, h = F.gru(x, w_ih, w_hh, h0=h0)
    y_t, h_t = module(torch.from_numpy(x), torch.from_numpy(h0)[None])
    np.testing.assert_allclose(y.numpy(), y_t.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h.numpy(), h_t[0].detach().numpy(), rtol=1e-5, atol=1e-6)


def test_no_graph_under_no_grad():
    rng = np.random.default_rng(3)
    w = params(rng, 4, 3, 2)
    with mn.no_grad():
        y, h, c = F.lstm(rng.standard_normal((1, 3, 3)), *w)
    assert y.grad_fn is None and not y.requires_grad


def test_bad_inputs():
    rng = np.random.default_rng(4)
    w = params(rng, 4, 3, 2)
    x = rng.standard_normal((2, 3, 3))
    with pytest.raises(ValueError, match="3-D"):
        F.lstm(x[0], *w)
    with pytest.raises(ValueError, match="weight_ih"):
        F.lstm(rng.standard_normal((2, 3, 4)), *w)
    with pytest.raises(ValueError, match="weight_hh"):
        F.gru(x, *w)
    with pytest.raises(ValueError, match="mask"):
        F.lstm(x, *w, mask=np.ones((2, 4)))
    with pytest.raises(ValueError, match="h0"):
        F.lstm(x, *w, h0=np.zeros((3, 2)))
    with pytest.raises(TypeError, match="dtype"):
        F.lstm(x.astype(np.float32), *w)
    with pytest.raises(ValueError, match="nonlinearity"):
        F.rnn(x, *params(rng, 1, 3, 2), nonlinearity="sigmoid")
    with pytest.raises(ValueError, match="both or neither"):
        F.lstm(x, w[0], w[1], w[2], None)


def test_embedding_numpy_gradcheck_and_torch(torch):
    rng = np.random.default_rng(5)
    table = mn.tensor(rng.standard_normal((6, 3)), requires_grad=True)
    idx = np.array([[1, 5, 1], [0, 1, 2]])
    y = F.embedding(idx, table)
    np.testing.assert_array_equal(y.numpy(), table.numpy()[idx])
    assert mn.gradcheck(lambda t: F.embedding(idx, t), (table,))
    g = rng.standard_normal((2, 3, 3))
    y.backward(g)
    tt = torch.tensor(table.numpy(), requires_grad=True)
    torch.nn.functional.embedding(torch.from_numpy(idx), tt).backward(torch.from_numpy(g))
    np.testing.assert_allclose(table.grad, tt.grad.numpy(), rtol=1e-12)


def test_embedding_bad_indices():
    table = mn.tensor(np.zeros((4, 2)), requires_grad=True)
    with pytest.raises(ValueError, match=r"\[0, 4\)"):
        F.embedding(np.array([0, 4]), table)
    with pytest.raises(ValueError, match=r"\[0, 4\)"):
        F.embedding(np.array([-1]), table)
    with pytest.raises(ValueError, match="integer"):
        F.embedding(np.array([0.5]), table)
    with pytest.raises(TypeError, match="integer"):
        F.embedding(np.array([True]), table)
