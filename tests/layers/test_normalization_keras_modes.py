"""GroupNormalization(groups=-1) and LayerNormalization(rms_scaling=True) (issue 28, item 2):
NumPy references, gradcheck, PyTorch (instance norm) and Keras 3 (oracle)."""
import warnings

import numpy as np
import pytest

import minnet as mn
from minnet import layers

RNG = np.random.default_rng(5)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("axis", [-1, 1])
def test_group_norm_minus_one_is_instance_norm(dtype, axis):
    x = RNG.normal(size=(2, 3, 4, 5))
    layer = layers.GroupNormalization(groups=-1, axis=axis, dtype=dtype)
    y = layer(x.astype(dtype)).numpy()
    channels = x.shape[axis]
    assert layer.n_groups == channels and layer.get_config()["groups"] == -1
    reduce = tuple(a for a in range(1, 4) if a != axis % 4)
    want = (x - x.mean(reduce, keepdims=True)) / np.sqrt(x.var(reduce, keepdims=True) + 1e-3)
    tol = 1e-10 if dtype == "float64" else 1e-5
    np.testing.assert_allclose(y, want, rtol=tol, atol=tol)


def test_group_norm_minus_one_against_torch(torch):
    x = RNG.normal(size=(2, 4, 3, 3))
    layer = layers.GroupNormalization(groups=-1, axis=1, epsilon=1e-5, dtype="float64")
    got = layer(x).numpy()
    want = torch.nn.functional.instance_norm(torch.tensor(x), eps=1e-5).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


def _rms_scaling_reference(x, gamma, axes, eps=1e-3):
    return x / np.sqrt(x.var(axis=axes, keepdims=True) + eps) * gamma


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_layer_norm_rms_scaling(dtype):
    x = RNG.normal(size=(3, 4, 5)) + 2.0
    with pytest.warns(UserWarning, match="deprecated"):
        layer = layers.LayerNormalization(rms_scaling=True, dtype=dtype)
    layer.build(x.shape)
    assert len(layer.parameters()) == 1 and layer.beta is None        # gamma only, as Keras
    gamma = RNG.normal(size=5)
    layer.set_weights([gamma.astype(dtype)])
    tol = 1e-10 if dtype == "float64" else 1e-5
    np.testing.assert_allclose(layer(x.astype(dtype)).numpy(), _rms_scaling_reference(x, gamma, -1),
                               rtol=tol, atol=tol)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        two = layers.LayerNormalization(axis=[1, 2], rms_scaling=True, dtype="float64")
    g2 = RNG.normal(size=(4, 5))
    two.build(x.shape)
    two.set_weights([g2])
    np.testing.assert_allclose(two(x).numpy(), _rms_scaling_reference(x, g2, (1, 2)), rtol=1e-10)
    xg = mn.tensor(x[:2], requires_grad=True)
    assert mn.gradcheck(lambda a: two(a), (xg,))


@pytest.mark.slow_once
def test_against_keras(keras):
    x = (RNG.normal(size=(2, 3, 4, 6)) + 1.0).astype("float32")
    theirs = keras.layers.GroupNormalization(groups=-1)
    want = np.asarray(theirs(x).detach().cpu())
    ours = layers.GroupNormalization(groups=-1)
    np.testing.assert_allclose(ours(x).numpy(), want, rtol=1e-4, atol=1e-5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = keras.layers.LayerNormalization(rms_scaling=True, gamma_initializer="random_normal")
        ours = layers.LayerNormalization(rms_scaling=True)
    want = np.asarray(theirs(x).detach().cpu())
    ours.build(x.shape)
    ours.set_weights(theirs.get_weights())
    np.testing.assert_allclose(ours(x).numpy(), want, rtol=1e-4, atol=1e-5)
