"""GaussianNoise and GaussianDropout: training only, statistics, seeding, gradients."""
import numpy as np
import pytest

import minnet as mn
from minnet import layers


@pytest.mark.parametrize("layer", [layers.GaussianNoise(0.5), layers.GaussianDropout(0.3)])
def test_identity_in_evaluation(layer):
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    np.testing.assert_array_equal(layer(x).numpy(), x)
    np.testing.assert_array_equal(layer(x, training=False).numpy(), x)


def test_gaussian_noise_statistics_and_gradient():
    mn.manual_seed(0)
    layer = layers.GaussianNoise(0.5, dtype="float64")
    x = mn.tensor(np.ones((200, 500)), requires_grad=True)
    y = layer(x, training=True)
    noise = y.numpy() - 1
    assert abs(noise.mean()) < 0.01 and abs(noise.std() - 0.5) < 0.01
    y.sum().backward()
    np.testing.assert_array_equal(x.grad, 1.0)


def test_gaussian_dropout_statistics_and_gradient():
    mn.manual_seed(0)
    rate = 0.2
    layer = layers.GaussianDropout(rate, dtype="float64")
    x = mn.tensor(np.full((200, 500), 2.0), requires_grad=True)
    y = layer(x, training=True)
    factor = y.numpy() / 2.0
    assert abs(factor.mean() - 1) < 0.01
    assert abs(factor.std() - np.sqrt(rate / (1 - rate))) < 0.01
    y.sum().backward()
    np.testing.assert_allclose(x.grad, factor, rtol=1e-12)        # the same noise


def test_seeding():
    x = np.ones((4, 5), np.float32)
    mn.manual_seed(3)
    a = layers.GaussianNoise(1.0)(x, training=True).numpy()
    mn.manual_seed(3)
    b = layers.GaussianNoise(1.0)(x, training=True).numpy()
    np.testing.assert_array_equal(a, b)
    c = layers.GaussianDropout(0.5, seed=7)(x, training=True).numpy()
    d = layers.GaussianDropout(0.5, seed=7)(x, training=True).numpy()
    np.testing.assert_array_equal(c, d)
    assert not np.array_equal(a, c)


def test_bad_arguments():
    with pytest.raises(ValueError, match="`rate`"):
        layers.GaussianDropout(1.0)
    with pytest.raises(ValueError, match="`stddev`"):
        layers.GaussianNoise(-0.1)
    with pytest.raises(TypeError, match="`seed`"):
        layers.GaussianNoise(0.1, seed="x")
    config = layers.GaussianDropout(0.25, seed=2).get_config()
    assert layers.GaussianDropout.from_config(config).get_config() == config
