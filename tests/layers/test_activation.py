"""Activation layers: NumPy reference, float64 gradcheck, PyTorch parity, config, validation."""
import json

import numpy as np
import pytest

import minnet as mn
from minnet import layers

from _harness import TOLERANCES

TOL = TOLERANCES["elementwise"]
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


# ---------------------------------------------------------------- activations by name, PReLU
@pytest.mark.parametrize("name, torch_call", [
    ("gelu", lambda t, x: t.nn.functional.gelu(x)),
    ("silu", lambda t, x: t.nn.functional.silu(x)),
    ("swish", lambda t, x: t.nn.functional.silu(x)),
    ("softplus", lambda t, x: t.nn.functional.softplus(x)),
    ("softsign", lambda t, x: t.nn.functional.softsign(x)),
    ("relu6", lambda t, x: t.nn.functional.relu6(x)),
    ("hard_sigmoid", lambda t, x: t.nn.functional.hardsigmoid(x)),
    ("hard_silu", lambda t, x: t.nn.functional.hardswish(x)),
    ("mish", lambda t, x: t.nn.functional.mish(x)),
    ("log_softmax", lambda t, x: t.log_softmax(x, -1)),
    ("exponential", lambda t, x: t.exp(x)),
    ("linear", lambda t, x: x),
    ("leaky_relu", lambda t, x: t.nn.functional.leaky_relu(x, 0.2)),
])
def test_activation_layer_by_name_matches_torch(torch, name, torch_call):
    x = np.random.default_rng(0).standard_normal((3, 5)) * 2
    layer = layers.Activation(name, dtype="float64")
    xm = mn.tensor(x, requires_grad=True)
    y = layer(xm)
    y.sum().backward() if name != "linear" else None
    xt = torch.tensor(x, requires_grad=True)
    yt = torch_call(torch, xt)
    np.testing.assert_allclose(y.numpy(), yt.detach().numpy(), rtol=1e-10, atol=1e-12)
    if name != "linear":
        yt.sum().backward()
        np.testing.assert_allclose(xm.grad, xt.grad.numpy(), rtol=1e-7, atol=1e-12)
    assert layers.Activation.from_config(layer.get_config()).activation is layer.activation
    dense = layers.Dense(2, activation=name)
    assert dense(np.ones((1, 3))).shape == (1, 2)


def test_gelu_approximate_and_unknown_names():
    x = np.linspace(-3, 3, 7)
    exact = mn.activations.gelu(mn.tensor(x)).numpy()
    approx = mn.activations.gelu(mn.tensor(x), approximate=True).numpy()
    assert np.abs(exact - approx).max() < 1e-3 and not np.array_equal(exact, approx)
    with pytest.raises(ValueError, match="Did you mean 'gelu'"):
        layers.Activation("gelux")
    assert mn.activations.serialize(mn.activations.get("swish")) == "silu"


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_prelu_shared_axes_matches_torch(torch, dtype):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 5, 4, 3)).astype(dtype)          # channels_last (N, H, W, C)
    alpha = np.array([0.1, 0.25, -0.3], dtype)
    layer = layers.PReLU(shared_axes=[1, 2], dtype=dtype)
    layer.build(x.shape)
    assert layer.alpha.shape == (1, 1, 3)
    layer.set_weights([alpha.reshape(1, 1, 3)])
    xm = mn.tensor(x, requires_grad=True)
    y = layer(xm)
    g = rng.standard_normal(x.shape).astype(dtype)
    y.backward(g)
    ref = torch.nn.PReLU(3).to(torch.float64 if dtype == np.float64 else torch.float32)
    with torch.no_grad():
        ref.weight.copy_(torch.tensor(alpha))
    xt = torch.tensor(x.transpose(0, 3, 1, 2).copy(), requires_grad=True)
    yt = ref(xt)
    yt.backward(torch.tensor(g.transpose(0, 3, 1, 2).copy()))
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(y.numpy(), yt.detach().numpy().transpose(0, 2, 3, 1), **tol)
    np.testing.assert_allclose(xm.grad, xt.grad.numpy().transpose(0, 2, 3, 1), **tol)
    np.testing.assert_allclose(layer.alpha.grad.reshape(3), ref.weight.grad.numpy(),
                               rtol=1e-4 if dtype == np.float32 else 1e-10)


def test_prelu_defaults_gradcheck_and_errors():
    layer = layers.PReLU(dtype="float64")
    x = mn.tensor(np.random.default_rng(0).standard_normal((3, 4)), requires_grad=True)
    np.testing.assert_array_equal(layer(x).numpy(), np.maximum(x.numpy(), 0))   # alpha starts at 0
    assert layer.alpha.shape == (4,)
    layer.alpha.data[...] = [0.1, 0.2, 0.3, 0.4]
    assert mn.gradcheck(lambda t, a: mn.functional.prelu_broadcast(t, a), (x, layer.alpha))
    with pytest.raises(ValueError, match="`shared_axes`"):
        layers.PReLU(shared_axes=[0])
    with pytest.raises(ValueError, match="shared axis 3 is out of range"):
        layers.PReLU(shared_axes=3)(np.ones((2, 3)))
    config = layers.PReLU(shared_axes=[1, 2], alpha_constraint="non_neg").get_config()
    assert layers.PReLU.from_config(config).shared_axes == [1, 2]


@pytest.mark.parametrize("kwargs, ref", [
    (dict(max_value=6.0), lambda x: np.clip(x, 0, 6)),
    (dict(max_value=1.5), lambda x: np.clip(x, 0, 1.5)),
    (dict(negative_slope=0.1), lambda x: np.where(x > 0, x, 0.1 * x)),
    (dict(threshold=0.5), lambda x: np.where(x > 0.5, x, 0.0)),
    (dict(threshold=0.5, negative_slope=0.2, max_value=2.0),
     lambda x: np.where(x > 0.5, np.minimum(x, 2.0), 0.0) - 0.2 * np.maximum(0.5 - x, 0)),
])
def test_relu_keras_options(kwargs, ref):
    x = np.linspace(-3, 8, 23) + 0.013
    layer = layers.ReLU(**kwargs, dtype="float64")
    np.testing.assert_allclose(layer(x).numpy(), ref(x), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(mn.activations.relu(mn.tensor(x), **kwargs).numpy(), ref(x),
                               rtol=1e-12, atol=1e-12)
    t = mn.tensor(x.reshape(1, -1), requires_grad=True)
    assert mn.gradcheck(lambda a: layer(a), (t,))
    assert layers.ReLU.from_config(layer.get_config()).get_config() == layer.get_config()
    with pytest.raises(ValueError, match="`max_value`"):
        layers.ReLU(max_value=-1)
