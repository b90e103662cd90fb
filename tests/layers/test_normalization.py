"""BatchNormalization: NumPy reference, gradcheck, PyTorch parity (incl. running stats)."""
import json

import numpy as np
import pytest

import minnet as mn
from minnet import layers

TOL = {np.float32: dict(rtol=1e-4, atol=1e-5), np.float64: dict(rtol=1e-10, atol=1e-12)}


def bn_reference(x, gamma, beta, mean, var, training, momentum, eps):
    """Returns (y, new_running_mean, new_running_var) as PyTorch computes them."""
    axes = (0,) if x.ndim == 2 else (0, 2, 3)
    shape = (1, -1) if x.ndim == 2 else (1, -1, 1, 1)
    if training:
        n = x.size // x.shape[1]
        batch_mean = x.mean(axis=axes)
        batch_var = x.var(axis=axes)                      # biased: used to normalise
        mean = (1 - momentum) * mean + momentum * batch_mean
        var = (1 - momentum) * var + momentum * batch_var * n / (n - 1)   # unbiased
        y = (x - batch_mean.reshape(shape)) / np.sqrt(batch_var.reshape(shape) + eps)
    else:
        y = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps)
    return gamma.reshape(shape) * y + beta.reshape(shape), mean, var


def _randomise(layer, rng):
    """Non-trivial gamma/beta and running stats so that every term is exercised."""
    c = layer.num_features
    layer.set_weights([rng.uniform(0.5, 1.5, c), rng.standard_normal(c),
                       rng.standard_normal(c) * 0.1, rng.uniform(0.5, 2.0, c)])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(5, 3), (2, 4, 3, 5), (1, 2, 3, 3), (4, 1, 1, 1)])
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_matches_numpy(rng, dtype, shape, training):
    layer = layers.BatchNormalization(momentum=0.3, epsilon=1e-3, dtype=np.dtype(dtype).name)
    layer.build(shape)
    _randomise(layer, rng)
    gamma, beta, mean, var = [w.astype(np.float64) for w in layer.get_weights()]
    x = (rng.standard_normal(shape) * 2 + 1).astype(dtype)
    y = layer(x, training=training).numpy()
    y_ref, mean_ref, var_ref = bn_reference(x.astype(np.float64), gamma, beta, mean, var, training, 0.3, 1e-3)
    assert y.dtype == dtype
    np.testing.assert_allclose(y, y_ref, **TOL[dtype])
    np.testing.assert_allclose(layer.moving_mean.data, mean_ref, **TOL[dtype])
    np.testing.assert_allclose(layer.moving_variance.data, var_ref, **TOL[dtype])


@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 3, 2)])
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_gradcheck(rng, shape, training):
    layer = layers.BatchNormalization(dtype="float64")
    layer.build(shape)
    _randomise(layer, rng)
    layer.train(training)
    x = mn.tensor(rng.standard_normal(shape), requires_grad=True)
    assert mn.gradcheck(layer, x)


@pytest.mark.parametrize("center, scale", [(False, True), (True, False), (False, False)])
def test_batch_norm_without_center_or_scale(rng, center, scale):
    layer = layers.BatchNormalization(center=center, scale=scale, dtype="float64")
    x = rng.standard_normal((6, 3))
    y = layer(x, training=True).numpy()
    assert len(layer.trainable_weights) == int(center) + int(scale)
    assert len(layer.non_trainable_weights) == 2
    np.testing.assert_allclose(y, (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-5), rtol=1e-10, atol=1e-12)
    if center or scale:
        assert mn.gradcheck(layer.train(), mn.tensor(x, requires_grad=True))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(8, 3), (4, 3, 5, 2)])
def test_batch_norm_matches_torch_over_several_steps(torch, rng, dtype, shape):
    layer = layers.BatchNormalization(momentum=0.2, epsilon=1e-4, dtype=dtype)
    layer.build(shape)
    c = shape[1]
    layer.set_weights([rng.uniform(0.5, 1.5, c), rng.standard_normal(c), np.zeros(c), np.ones(c)])
    module = torch.nn.BatchNorm1d if len(shape) == 2 else torch.nn.BatchNorm2d
    ref = module(c, momentum=0.2, eps=1e-4).to(getattr(torch, dtype))
    with torch.no_grad():
        ref.weight.copy_(torch.from_numpy(layer.gamma.data))
        ref.bias.copy_(torch.from_numpy(layer.beta.data))
    layer.train()
    ref.train()
    tol = TOL[np.dtype(dtype).type]
    for step in range(4):
        x = (rng.standard_normal(shape) * (step + 1) + step).astype(dtype)
        xm = mn.tensor(x, requires_grad=True)
        xt = torch.from_numpy(x).requires_grad_(True)
        y, yt = layer(xm), ref(xt)
        g = rng.standard_normal(shape).astype(dtype)
        layer.gamma.grad = layer.beta.grad = None
        ref.zero_grad()
        (y * mn.tensor(g)).sum().backward()
        (yt * torch.from_numpy(g)).sum().backward()
        np.testing.assert_allclose(y.numpy(), yt.detach().numpy(), **tol)
        np.testing.assert_allclose(xm.grad, xt.grad.numpy(), **tol)
        np.testing.assert_allclose(layer.gamma.grad, ref.weight.grad.numpy(), **tol)
        np.testing.assert_allclose(layer.beta.grad, ref.bias.grad.numpy(), **tol)
    np.testing.assert_allclose(layer.moving_mean.data, ref.running_mean.numpy(), **tol)
    np.testing.assert_allclose(layer.moving_variance.data, ref.running_var.numpy(), **tol)
    layer.eval()
    ref.eval()
    x = rng.standard_normal(shape).astype(dtype)
    np.testing.assert_allclose(layer(x).numpy(), ref(torch.from_numpy(x)).detach().numpy(), **tol)


def test_train_eval_switching(rng):
    layer = layers.BatchNormalization(dtype="float64")
    x = rng.standard_normal((8, 2)) * 3 + 5
    y_eval = layer(x).numpy()                    # layers start in eval mode: running stats (0, 1)
    np.testing.assert_allclose(y_eval, x / np.sqrt(1 + 1e-5))
    np.testing.assert_array_equal(layer.moving_mean.data, 0)      # eval does not update
    y_train = layer.train()(x).numpy()
    np.testing.assert_allclose(y_train.mean(0), 0, atol=1e-12)
    assert not np.all(layer.moving_mean.data == 0)
    before = layer.get_weights()
    layer.eval()(x)
    for a, b in zip(before, layer.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_one_value_per_channel_in_training_is_an_error():
    layer = layers.BatchNormalization(name="bn_a")
    with pytest.raises(ValueError, match="'bn_a'.*one value per channel"):
        layer(np.ones((1, 4)), training=True)
    assert layer(np.ones((1, 4)), training=False).shape == (1, 4)   # eval mode is fine
    bn4 = layers.BatchNormalization(name="bn_b")
    with pytest.raises(ValueError, match="'bn_b'.*one value per channel"):
        bn4(np.ones((1, 3, 1, 1)), training=True)


def test_wrong_channels_after_build_names_the_layer():
    layer = layers.BatchNormalization(name="bn_c")
    layer(np.ones((2, 3, 4, 4)))
    with pytest.raises(ValueError, match="'bn_c'.*axis 1.*value 3"):
        layer(np.ones((2, 5, 4, 4)))
    with pytest.raises(ValueError, match="'bn_c'.*ndim=2 or 4"):
        layer(np.ones((2, 3, 4)))


@pytest.mark.parametrize("kwargs, arg", [
    (dict(momentum=1.5), "momentum"), (dict(momentum=-0.1), "momentum"), (dict(momentum="x"), "momentum"),
    (dict(epsilon=0), "epsilon"), (dict(epsilon=-1e-3), "epsilon"),
    (dict(axis=2), "axis"), (dict(axis=0), "axis"),
    (dict(gamma_initializer="nope"), "initializer"),
])
def test_rejects_bad_hyperparameters(kwargs, arg):
    with pytest.raises(ValueError, match=f"`{arg}`"):
        layers.BatchNormalization(**kwargs)


def test_axis_minus_one_only_for_2d():
    assert layers.BatchNormalization(axis=-1)(np.ones((2, 3))).shape == (2, 3)
    with pytest.raises(ValueError, match="axis=-1"):
        layers.BatchNormalization(axis=-1)(np.ones((2, 3, 4, 4)))


def test_weights_order_config_round_trip_flops_repr(rng):
    layer = layers.BatchNormalization(momentum=0.05, epsilon=1e-3, dtype="float64", name="bn_d")
    layer.train()(rng.standard_normal((4, 3, 2, 2)))
    names = [w.name for w in layer.weights]
    assert names == ["bn_d/gamma", "bn_d/beta", "bn_d/moving_mean", "bn_d/moving_variance"]
    assert len(layer.parameters()) == 2 and layer.count_params() == 12
    again = layers.deserialize(json.loads(json.dumps(layers.serialize(layer))))
    assert again.get_config() == layer.get_config()
    again.build((None, 3, 2, 2))
    again.set_weights(layer.get_weights())
    x = rng.standard_normal((2, 3, 2, 2))
    np.testing.assert_array_equal(again(x).numpy(), layer.eval()(x).numpy())
    assert layer.count_flops((None, 3, 2, 2)) == 4 * 12
    assert "BatchNormalization(3" in repr(layer) and "momentum=0.05" in repr(layer)
