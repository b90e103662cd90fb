"""Activation layers: NumPy reference, float64 gradcheck, PyTorch parity, config, validation."""
import json

import numpy as np
import pytest

import minnet as mn
from minnet import layers

TOL = {np.float32: dict(rtol=1e-5, atol=1e-6), np.float64: dict(rtol=1e-12, atol=1e-13)}
SELU_ALPHA, SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


def _softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


# (layer factory, NumPy reference, torch module factory)
CASES = {
    "ReLU": (lambda d: layers.ReLU(dtype=d), lambda x: np.maximum(x, 0), lambda t: t.nn.ReLU()),
    "LeakyReLU": (lambda d: layers.LeakyReLU(dtype=d), lambda x: np.where(x > 0, x, 0.3 * x),
                  lambda t: t.nn.LeakyReLU(0.3)),
    "LeakyReLU0.01": (lambda d: layers.LeakyReLU(0.01, dtype=d), lambda x: np.where(x > 0, x, 0.01 * x),
                      lambda t: t.nn.LeakyReLU()),
    "LeakyReLU0.3": (lambda d: layers.LeakyReLU(0.3, dtype=d), lambda x: np.where(x > 0, x, 0.3 * x),
                     lambda t: t.nn.LeakyReLU(0.3)),
    "ELU": (lambda d: layers.ELU(dtype=d), lambda x: np.where(x > 0, x, np.expm1(np.minimum(x, 0))),
            lambda t: t.nn.ELU()),
    "ELU0.5": (lambda d: layers.ELU(0.5, dtype=d), lambda x: np.where(x > 0, x, 0.5 * np.expm1(np.minimum(x, 0))),
               lambda t: t.nn.ELU(0.5)),
    "SELU": (lambda d: layers.SELU(dtype=d),
             lambda x: SELU_SCALE * np.where(x > 0, x, SELU_ALPHA * np.expm1(np.minimum(x, 0))),
             lambda t: t.nn.SELU()),
    "Sigmoid": (lambda d: layers.Sigmoid(dtype=d), lambda x: 1 / (1 + np.exp(-x)), lambda t: t.nn.Sigmoid()),
    "Tanh": (lambda d: layers.Tanh(dtype=d), np.tanh, lambda t: t.nn.Tanh()),
    "Softmax": (lambda d: layers.Softmax(dtype=d), lambda x: _softmax(x, -1), lambda t: t.nn.Softmax(-1)),
    "Softmax1": (lambda d: layers.Softmax(axis=1, dtype=d), lambda x: _softmax(x, 1), lambda t: t.nn.Softmax(1)),
}


def _input(rng, shape, dtype):
    # away from the kinks at 0 so finite differences are clean
    x = rng.uniform(0.1, 3.0, shape) * rng.choice([-1.0, 1.0], shape)
    return x.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("shape", [(1, 1), (3, 5), (2, 3, 4, 5)])
def test_matches_numpy(rng, name, dtype, shape):
    make, ref, _ = CASES[name]
    x = _input(rng, shape, dtype)
    layer = make(np.dtype(dtype).name)
    y = layer(x).numpy()
    assert y.dtype == dtype and y.shape == shape
    np.testing.assert_allclose(y, ref(x.astype(np.float64)), **TOL[dtype])
    assert layer.compute_output_shape((None,) + shape[1:]) == (None,) + shape[1:]


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradcheck(rng, name):
    layer = CASES[name][0]("float64")
    assert mn.gradcheck(layer, mn.tensor(_input(rng, (3, 4), np.float64), requires_grad=True))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_torch(torch, rng, name, dtype):
    make, _, make_ref = CASES[name]
    x = _input(rng, (4, 6), dtype)
    x[0, :3] = [0.0, -50.0, 50.0]            # the kink and saturated values too
    xm = mn.tensor(x, requires_grad=True)
    xt = torch.from_numpy(x).requires_grad_(True)
    y, yt = make(dtype)(xm), make_ref(torch)(xt)
    g = rng.standard_normal(x.shape).astype(dtype)
    (y * mn.tensor(g)).sum().backward()
    (yt * torch.from_numpy(g)).sum().backward()
    tol = TOL[np.dtype(dtype).type]
    np.testing.assert_allclose(y.numpy(), yt.detach().numpy(), **tol)
    np.testing.assert_allclose(xm.grad, xt.grad.numpy(), **tol)


def test_leaky_relu_default_and_keras_alias():
    assert layers.LeakyReLU().negative_slope == 0.3           # Keras's default (PyTorch's is 0.01)
    assert layers.LeakyReLU(alpha=0.2).negative_slope == 0.2
    with pytest.raises(ValueError, match="either `negative_slope` or its alias `alpha`"):
        layers.LeakyReLU(0.1, alpha=0.2)
    for bad in (-0.1, "0.1", float("nan")):
        with pytest.raises(ValueError, match="`negative_slope`"):
            layers.LeakyReLU(bad)


def test_bad_hyperparameters_and_axis():
    for bad in (0, -1.0, "1"):
        with pytest.raises(ValueError, match="`alpha`"):
            layers.ELU(bad)
    with pytest.raises(ValueError, match="`axis`"):
        layers.Softmax(axis=1.5)
    with pytest.raises(ValueError, match="'sm'.*axis=2 is out of range"):
        layers.Softmax(axis=2, name="sm")(np.ones((2, 3)))


@pytest.mark.parametrize("name", sorted(CASES))
def test_config_round_trip_and_repr(name):
    layer = CASES[name][0]("float64")
    again = layers.deserialize(json.loads(json.dumps(layers.serialize(layer))))
    assert type(again) is type(layer) and again.get_config() == layer.get_config()
    assert type(layer).__name__ in repr(layer)
