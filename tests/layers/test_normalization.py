"""BatchNormalization with Keras's meanings: NumPy reference, gradcheck, PyTorch parity
(running stats, both layouts), a batch of one, the momentum warning, axes, errors."""
import json
import warnings

import numpy as np
import pytest

import minnet as mn
from minnet import layers

from _harness import TOLERANCES

TOL = TOLERANCES["default"]


def bn_reference(x, axis, gamma, beta, mean, var, training, momentum, eps):
    """(y, new_moving_mean, new_moving_var), Keras's momentum, the unbiased moving variance."""
    axis = axis % x.ndim
    axes = tuple(a for a in range(x.ndim) if a != axis)
    shape = [1] * x.ndim
    shape[axis] = -1
    if training:
        n = x.size // x.shape[axis]
        batch_mean = x.mean(axis=axes)
        batch_var = x.var(axis=axes)                      # biased: used to normalise
        mean = momentum * mean + (1 - momentum) * batch_mean
        var = momentum * var + (1 - momentum) * batch_var * n / (n - 1)   # unbiased
        y = (x - batch_mean.reshape(shape)) / np.sqrt(batch_var.reshape(shape) + eps)
    else:
        y = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps)
    return gamma.reshape(shape) * y + beta.reshape(shape), mean, var


def _randomise(layer, rng):
    """Non-trivial gamma/beta and running stats so that every term is exercised."""
    c = layer.num_features
    layer.set_weights([rng.uniform(0.5, 1.5, c), rng.standard_normal(c),
                       rng.standard_normal(c) * 0.1, rng.uniform(0.5, 2.0, c)])


# (shape, axis): NHWC, NCHW, dense, sequences (N, L, C), a middle axis, 1x1 maps
CASES = [((2, 3, 5, 4), -1), ((2, 4, 3, 5), 1), ((5, 3), -1), ((5, 3), 1), ((3, 6, 4), -1),
         ((2, 3, 4, 5), 2), ((4, 1, 1, 3), -1), ((1, 2, 3, 3), 1)]


def test_keras_defaults():
    layer = layers.BatchNormalization()
    assert (layer.axis, layer.momentum, layer.epsilon) == (-1, 0.99, 1e-3)
    assert layer.center and layer.scale
    try:
        mn.config.set_image_data_format("channels_first")
        assert layers.BatchNormalization().axis == 1      # the channel axis of the layout
    finally:
        mn.config.set_image_data_format("channels_last")
    assert layers.BatchNormalization(axis=-1).axis == -1


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape, axis", CASES)
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_matches_numpy(rng, dtype, shape, axis, training):
    layer = layers.BatchNormalization(axis=axis, momentum=0.7, epsilon=1e-3,
                                      dtype=np.dtype(dtype).name)
    layer.build(shape)
    _randomise(layer, rng)
    gamma, beta, mean, var = [w.astype(np.float64) for w in layer.get_weights()]
    x = (rng.standard_normal(shape) * 2 + 1).astype(dtype)
    y = layer(x, training=training).numpy()
    y_ref, mean_ref, var_ref = bn_reference(x.astype(np.float64), axis, gamma, beta, mean, var,
                                            training, 0.7, 1e-3)
    assert y.dtype == dtype and y.shape == shape
    np.testing.assert_allclose(y, y_ref, **TOL[dtype])
    np.testing.assert_allclose(layer.moving_mean.data, mean_ref, **TOL[dtype])
    np.testing.assert_allclose(layer.moving_variance.data, var_ref, **TOL[dtype])


@pytest.mark.parametrize("shape, axis", [((4, 3), -1), ((2, 3, 3, 2), -1), ((2, 3, 3, 2), 1),
                                         ((2, 3, 4, 2), 2)])
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_gradcheck(rng, shape, axis, training):
    layer = layers.BatchNormalization(axis=axis, dtype="float64")
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
    np.testing.assert_allclose(y, (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-3), rtol=1e-10, atol=1e-12)
    if center or scale:
        assert mn.gradcheck(layer.train(), mn.tensor(x, requires_grad=True))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape, data_format", [((8, 3), None), ((4, 3, 5, 2), "channels_first"),
                                                ((4, 3, 5, 2), "channels_last")])
def test_batch_norm_matches_torch_over_several_steps(torch, rng, dtype, shape, data_format):
    # Keras momentum 0.8 is PyTorch's 0.2; shapes are NCHW, channels_last permutes them.
    last = data_format == "channels_last"
    layer = layers.BatchNormalization(axis=-1 if last or len(shape) == 2 else 1, momentum=0.8,
                                      epsilon=1e-4, dtype=dtype)
    c = shape[1]
    layer.build(np.moveaxis(np.empty(shape), 1, -1).shape if last else shape)
    layer.set_weights([rng.uniform(0.5, 1.5, c), rng.standard_normal(c), np.zeros(c), np.ones(c)])
    module = torch.nn.BatchNorm1d if len(shape) == 2 else torch.nn.BatchNorm2d
    ref = module(c, momentum=0.2, eps=1e-4).to(getattr(torch, dtype))
    with torch.no_grad():
        ref.weight.copy_(torch.from_numpy(layer.gamma.data))
        ref.bias.copy_(torch.from_numpy(layer.beta.data))
    fmt = torch.channels_last if last else torch.contiguous_format
    to = (lambda a: np.ascontiguousarray(np.moveaxis(a, 1, -1))) if last else (lambda a: a)
    layer.train()
    ref.train()
    tol = TOL[np.dtype(dtype).type]
    for step in range(4):
        x = (rng.standard_normal(shape) * (step + 1) + step).astype(dtype)
        xm = mn.tensor(to(x), requires_grad=True)
        xt = torch.from_numpy(x).contiguous(memory_format=fmt).requires_grad_(True)
        y, yt = layer(xm), ref(xt)
        g = rng.standard_normal(shape).astype(dtype)
        layer.gamma.grad = layer.beta.grad = None
        ref.zero_grad()
        (y * mn.tensor(to(g))).sum().backward()
        (yt * torch.from_numpy(g)).sum().backward()
        np.testing.assert_allclose(y.numpy(), to(yt.detach().numpy()), **tol)
        np.testing.assert_allclose(xm.grad, to(xt.grad.numpy()), **tol)
        np.testing.assert_allclose(layer.gamma.grad, ref.weight.grad.numpy(), **tol)
        np.testing.assert_allclose(layer.beta.grad, ref.bias.grad.numpy(), **tol)
    np.testing.assert_allclose(layer.moving_mean.data, ref.running_mean.numpy(), **tol)
    np.testing.assert_allclose(layer.moving_variance.data, ref.running_var.numpy(), **tol)
    layer.eval()
    ref.eval()
    x = rng.standard_normal(shape).astype(dtype)
    np.testing.assert_allclose(layer(to(x)).numpy(), to(ref(torch.from_numpy(x)).detach().numpy()),
                               **tol)


def test_train_eval_switching(rng):
    layer = layers.BatchNormalization(dtype="float64")
    x = rng.standard_normal((8, 2)) * 3 + 5
    y_eval = layer(x).numpy()                    # layers start in eval mode: running stats (0, 1)
    np.testing.assert_allclose(y_eval, x / np.sqrt(1 + 1e-3))
    np.testing.assert_array_equal(layer.moving_mean.data, 0)      # eval does not update
    y_train = layer.train()(x).numpy()
    np.testing.assert_allclose(y_train.mean(0), 0, atol=1e-12)
    np.testing.assert_allclose(layer.moving_mean.data, 0.01 * x.mean(0), rtol=1e-12)   # Keras
    before = layer.get_weights()
    layer.eval()(x)
    for a, b in zip(before, layer.get_weights()):
        np.testing.assert_array_equal(a, b)
    layer.trainable = False                      # Keras 3: a frozen BN runs in inference mode
    layer.train()(x)
    for a, b in zip(before, layer.get_weights()):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("shape", [(1, 4), (1, 1, 1, 3), (1, 2, 2, 3)])
def test_batch_of_one_in_training_is_normalised_as_keras(shape):
    # one value per channel (last batch of 33 samples with batch_size=32): variance 0,
    # output beta; functional.batch_norm keeps PyTorch's error for it
    layer = layers.BatchNormalization(dtype="float64", beta_initializer="ones")
    x = np.random.default_rng(0).standard_normal(shape)
    xm = mn.tensor(x, requires_grad=True)
    y = layer(xm, training=True)
    if np.prod(shape[:-1]) == 1:                 # one value per channel: beta
        np.testing.assert_allclose(y.numpy(), 1.0, atol=1e-5)
    else:
        np.testing.assert_allclose(y.numpy().mean((0, 1, 2)), 1.0, atol=1e-7)
    assert np.isfinite(layer.moving_variance.data).all()
    y.sum().backward()
    assert np.isfinite(xm.grad).all()
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        mn.functional.batch_norm(np.ones((1, 4)), np.zeros(4), np.ones(4), training=True)


def test_momentum_below_half_warns_at_the_users_line():
    with pytest.warns(UserWarning, match=r"Keras's meaning.*1 - momentum") as record:
        layers.BatchNormalization(momentum=0.1)
    assert record[0].filename == __file__
    assert "momentum=0.9" in str(record[0].message)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        layers.BatchNormalization(momentum=0.9)


def test_wrong_channels_after_build_names_the_layer():
    layer = layers.BatchNormalization(axis=1, name="bn_c")
    layer(np.ones((2, 3, 4, 4)))
    with pytest.raises(ValueError, match="'bn_c'.*axis 1.*value 3"):
        layer(np.ones((2, 5, 4, 4)))
    with pytest.raises(ValueError, match="'bn_c'.*ndim=4, found ndim=3"):
        layer(np.ones((2, 3, 4)))
    with pytest.raises(ValueError, match="'bn_e'.*axis=3.*2 dimensions"):
        layers.BatchNormalization(axis=3, name="bn_e")(np.ones((2, 3)))


@pytest.mark.parametrize("kwargs, arg", [
    (dict(momentum=1.5), "momentum"), (dict(momentum=-0.1), "momentum"),
    (dict(epsilon=0), "epsilon"), (dict(epsilon=-1e-3), "epsilon"),
    (dict(axis=0), "axis"), (dict(axis="x"), "axis"), (dict(axis=True), "axis"),
    (dict(gamma_initializer="nope"), "initializer"),
])
def test_rejects_bad_hyperparameters(kwargs, arg):
    with pytest.raises((ValueError, TypeError), match=f"`{arg}`"):
        layers.BatchNormalization(**kwargs)


def test_weights_order_config_round_trip_flops_repr(rng):
    layer = layers.BatchNormalization(momentum=0.95, epsilon=1e-3, dtype="float64", name="bn_d")
    layer.train()(rng.standard_normal((4, 2, 2, 3)))
    names = [w.name for w in layer.weights]
    assert names == ["bn_d/gamma", "bn_d/beta", "bn_d/moving_mean", "bn_d/moving_variance"]
    assert len(layer.parameters()) == 2 and layer.count_params() == 12
    again = layers.deserialize(json.loads(json.dumps(layers.serialize(layer))))
    assert again.get_config() == layer.get_config()
    again.build((None, 2, 2, 3))
    again.set_weights(layer.get_weights())
    x = rng.standard_normal((2, 2, 2, 3))
    np.testing.assert_array_equal(again(x).numpy(), layer.eval()(x).numpy())
    assert layer.count_flops((None, 2, 2, 3)) == 4 * 12
    assert "BatchNormalization(3" in repr(layer) and "momentum=0.95" in repr(layer)
