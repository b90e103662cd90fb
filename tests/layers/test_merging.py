"""Merge layers: NumPy reference, float64 gradcheck, PyTorch parity, shapes and errors."""
import numpy as np
import pytest

import minnet as mn
from minnet import layers
from minnet.layers.merging import ConcatenateFunction

REFERENCES = {
    "Add": lambda xs: sum(xs),
    "Subtract": lambda xs: xs[0] - xs[1],
    "Multiply": lambda xs: np.prod(xs, axis=0),
    "Average": lambda xs: sum(xs) / len(xs),
    "Maximum": lambda xs: np.max(xs, axis=0),
    "Minimum": lambda xs: np.min(xs, axis=0),
}


def _inputs(n, shape=(3, 4), seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape) for _ in range(n)]


@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_elementwise_merge_matches_numpy_and_gradcheck(name):
    n = 2 if name == "Subtract" else 3
    xs = _inputs(n)
    layer = getattr(layers, name)(dtype="float64")
    np.testing.assert_allclose(layer(xs).numpy(), REFERENCES[name](xs), rtol=1e-12)
    tensors = [mn.tensor(x, requires_grad=True) for x in xs]
    assert mn.gradcheck(lambda *ts: layer(list(ts)), tensors)


def test_broadcast_of_size_one_axes():
    a, b = _inputs(1, (3, 4))[0], _inputs(1, (3, 1), seed=1)[0]
    np.testing.assert_allclose(layers.Add(dtype="float64")([a, b]).numpy(), a + b)
    assert layers.Add().compute_output_shape([(None, 4), (None, 1)]) == (None, 4)


@pytest.mark.parametrize("axis,shapes", [(-1, [(2, 3), (2, 5)]), (1, [(2, 1, 4), (2, 3, 4)]),
                                         (2, [(2, 3, 1), (2, 3, 2), (2, 3, 3)])])
def test_concatenate_matches_numpy_and_gradcheck(axis, shapes):
    rng = np.random.default_rng(2)
    xs = [rng.standard_normal(s) for s in shapes]
    layer = layers.Concatenate(axis=axis, dtype="float64")
    np.testing.assert_array_equal(layer(xs).numpy(), np.concatenate(xs, axis=axis))
    assert mn.gradcheck(lambda *ts: layer(list(ts)), [mn.tensor(x, requires_grad=True) for x in xs])
    symbolic = layer([mn.Input(s[1:]) for s in shapes])
    assert symbolic.shape == (None,) + np.concatenate(xs, axis=axis).shape[1:]


def test_concatenate_function_gradient_only_where_needed():
    a = mn.tensor(np.ones((2, 2)), requires_grad=True)
    b = mn.tensor(np.ones((2, 3)))
    out = ConcatenateFunction.apply(1, a, b)
    (out * mn.tensor(np.arange(10.0).reshape(2, 5))).sum().backward()
    np.testing.assert_array_equal(a.grad, np.arange(10.0).reshape(2, 5)[:, :2])


def test_torch_parity():
    torch = pytest.importorskip("torch")
    xs = _inputs(3)
    ts = [torch.tensor(x, requires_grad=True) for x in xs]
    ms = [mn.tensor(x, requires_grad=True) for x in xs]
    pairs = [
        (layers.Maximum(dtype="float64"), lambda t: torch.maximum(torch.maximum(t[0], t[1]), t[2])),
        (layers.Average(dtype="float64"), lambda t: (t[0] + t[1] + t[2]) / 3),
        (layers.Concatenate(axis=1, dtype="float64"), lambda t: torch.cat(t, dim=1)),
        (layers.Multiply(dtype="float64"), lambda t: t[0] * t[1] * t[2]),
    ]
    for layer, reference in pairs:
        for t in ts + ms:
            t.grad = None
        expected = reference(ts)
        got = layer(ms)
        np.testing.assert_allclose(got.numpy(), expected.detach().numpy(), rtol=1e-12)
        weights = np.random.default_rng(3).standard_normal(tuple(expected.shape))
        (expected * torch.tensor(weights)).sum().backward()
        (got * mn.tensor(weights)).sum().backward()
        for t, m in zip(ts, ms):
            np.testing.assert_allclose(m.grad, t.grad.numpy(), rtol=1e-12)


def test_ties_split_the_gradient_like_torch():
    a = mn.tensor(np.ones((1, 2)), requires_grad=True)
    b = mn.tensor(np.ones((1, 2)), requires_grad=True)
    layers.Maximum(dtype="float64")([a, b]).sum().backward()
    np.testing.assert_array_equal(a.grad, [[0.5, 0.5]])


def test_errors_name_the_layer():
    with pytest.raises(ValueError, match="'sub'.*exactly 2"):
        layers.Subtract(name="sub")(_inputs(3))
    with pytest.raises(ValueError, match="at least 2"):
        layers.Add()(_inputs(1))
    with pytest.raises(TypeError, match="list of tensors"):
        layers.Add()(np.ones((2, 2)))
    with pytest.raises(ValueError, match="compatible shapes"):
        layers.Add()([np.ones((2, 3)), np.ones((2, 4))])
    with pytest.raises(ValueError, match="batch axis"):
        layers.Concatenate(axis=0)([np.ones((2, 3)), np.ones((2, 3))])
    with pytest.raises(ValueError, match="match except"):
        layers.Concatenate()([np.ones((2, 3)), np.ones((3, 3))])


def test_config_round_trip():
    layer = layers.Concatenate(axis=1, name="cat")
    again = layers.deserialize(layers.serialize(layer))
    assert isinstance(again, layers.Concatenate) and again.axis == 1 and again.name == "cat"
    op = layers.TensorOperation(op="divide", constant=2.0, reverse=True)
    again = layers.deserialize(layers.serialize(op))
    np.testing.assert_allclose(again(np.full((1, 2), 4.0, np.float32)).numpy(), 0.5)
