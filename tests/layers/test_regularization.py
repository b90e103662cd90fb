"""Dropout, AlphaDropout, SpatialDropout2D: formulas, statistics, gradients, modes, config."""
import json

import numpy as np
import pytest

import minnet as mn
from minnet import layers

SELU_ALPHA_PRIME = -1.0507009873554804934193349852946 * 1.6732632423543772848170429916717


def _seeded(layer, seed=0):
    """The layer in training mode with a fixed mask (reseeded before every call) for gradcheck."""
    def fn(t):
        mn.manual_seed(seed)
        return layer(t, training=True)
    return fn


@pytest.mark.parametrize("cls", [layers.Dropout, layers.AlphaDropout, layers.SpatialDropout2D])
def test_identity_in_eval_mode_and_with_rate_zero(rng, cls):
    x = mn.tensor(rng.standard_normal((2, 3, 4, 4)).astype(np.float32))
    layer = cls(0.5)
    assert layer.training is False
    np.testing.assert_array_equal(layer(x).numpy(), x.numpy())
    np.testing.assert_array_equal(layer.eval()(x, training=None).numpy(), x.numpy())
    np.testing.assert_array_equal(cls(0.0)(x, training=True).numpy(), x.numpy())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("rate", [0.1, 0.5, 0.9])
def test_dropout_forward_and_backward(rng, dtype, rate):
    x = (rng.uniform(0.5, 1.5, (64, 129)) * rng.choice([-1, 1], (64, 129))).astype(dtype)
    layer = layers.Dropout(rate, dtype=np.dtype(dtype).name)
    xm = mn.tensor(x, requires_grad=True)
    y = layer(xm, training=True)
    kept = y.numpy() != 0
    np.testing.assert_allclose(y.numpy()[kept], x[kept] / (1 - rate), rtol=1e-6)
    assert abs((1 - kept.mean()) - rate) < 0.03          # about `rate` of the entries dropped
    y.sum().backward()
    np.testing.assert_allclose(xm.grad, kept / (1 - rate), rtol=1e-6)
    assert y.dtype == dtype


def test_dropout_gradcheck_with_fixed_mask(rng):
    x = mn.tensor(rng.standard_normal((3, 5)), requires_grad=True)
    assert mn.gradcheck(_seeded(layers.Dropout(0.4, dtype="float64")), (x,))
    assert mn.gradcheck(_seeded(layers.AlphaDropout(0.3, dtype="float64")), (x,))
    x4 = mn.tensor(rng.standard_normal((2, 3, 2, 2)), requires_grad=True)
    assert mn.gradcheck(_seeded(layers.SpatialDropout2D(0.5, dtype="float64")), (x4,))


def test_manual_seed_reproduces_masks(rng):
    x = np.ones((8, 32))
    layer = layers.Dropout(0.5).train()
    mn.manual_seed(7)
    a = layer(x).numpy()
    b = layer(x).numpy()
    mn.manual_seed(7)
    np.testing.assert_array_equal(layer(x).numpy(), a)
    assert not np.array_equal(a, b)                     # the next call draws a new mask


def test_alpha_dropout_keeps_mean_and_variance(rng):
    rate = 0.2
    x = rng.standard_normal((400, 500))
    y = layers.AlphaDropout(rate, dtype="float64")(x, training=True).numpy()
    assert abs(y.mean()) < 0.01 and abs(y.var() - 1) < 0.02
    # every element is either a*x + b (kept) or a*alpha' + b (dropped), PyTorch's formula
    a = ((1 - rate) * (1 + rate * SELU_ALPHA_PRIME ** 2)) ** -0.5
    b = -a * SELU_ALPHA_PRIME * rate
    dropped = np.isclose(y, a * SELU_ALPHA_PRIME + b, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(y[~dropped], a * x[~dropped] + b, rtol=1e-10)
    assert abs(dropped.mean() - rate) < 0.01


def test_alpha_dropout_matches_torch_distribution(torch, rng):
    x = rng.standard_normal((200, 300))
    ours = layers.AlphaDropout(0.3, dtype="float64")(x, training=True).numpy()
    theirs = torch.nn.AlphaDropout(0.3).train()(torch.from_numpy(x)).numpy()
    # different random masks, same value for dropped elements and same statistics
    values, counts = np.unique(ours, return_counts=True)
    values_t, counts_t = np.unique(theirs, return_counts=True)
    np.testing.assert_allclose(values[counts.argmax()], values_t[counts_t.argmax()], rtol=1e-12)
    assert abs(ours.mean() - theirs.mean()) < 0.02 and abs(ours.std() - theirs.std()) < 0.02


@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
def test_spatial_dropout_drops_whole_channels(rng, data_format):
    x = rng.uniform(0.5, 1.5, (16, 32, 3, 5))               # (N, C, H, W)
    if data_format == "channels_last":
        x = np.ascontiguousarray(np.moveaxis(x, 1, -1))
    spatial = (1, 2) if data_format == "channels_last" else (2, 3)
    layer = layers.SpatialDropout2D(0.5, data_format=data_format, dtype="float64")
    y = layer(x, training=True).numpy()
    per_channel_zero = (y == 0).all(axis=spatial)
    per_channel_kept = np.isclose(y, x * 2).all(axis=spatial)
    assert np.all(per_channel_zero | per_channel_kept)
    assert 0.4 < per_channel_zero.mean() < 0.6
    with pytest.raises(ValueError, match="ndim=4"):
        layers.SpatialDropout2D(0.5, name="sd")(np.ones((2, 3)), training=True)


@pytest.mark.parametrize("cls", [layers.Dropout, layers.AlphaDropout, layers.SpatialDropout2D])
@pytest.mark.parametrize("rate", [1.0, -0.1, 1.5, "0.5", True, None])
def test_rejects_bad_rate(cls, rate):
    with pytest.raises(ValueError, match="Invalid value for argument `rate`: expected a float in \\[0, 1\\)"):
        cls(rate)


@pytest.mark.parametrize("cls", [layers.Dropout, layers.AlphaDropout, layers.SpatialDropout2D])
def test_config_round_trip_and_repr(cls):
    layer = cls(0.25, name=f"drop_{cls.__name__}")
    again = layers.deserialize(json.loads(json.dumps(layers.serialize(layer))))
    assert type(again) is cls and again.rate == 0.25 and again.name == layer.name
    assert "rate=0.25" in repr(layer)
    assert layer.compute_output_shape((None, 3, 4, 4)) == (None, 3, 4, 4)
    layer(np.ones((1, 3, 4, 4)))
    assert layer.weights == [] and layer.count_params() == 0


def test_spatial_dropout_data_format_default_guard_and_config():
    layer = layers.SpatialDropout2D(0.5)
    assert layer.data_format == "channels_last" and not layer._data_format_explicit
    with pytest.raises(ValueError, match=r"\(2, 3, 16, 16\).*data_format='channels_first'"):
        layer(np.ones((2, 3, 16, 16)), training=True)
    explicit = layers.SpatialDropout2D(0.5, data_format="channels_first", name="sdf")
    assert explicit(np.ones((2, 3, 16, 16)), training=False).shape == (2, 3, 16, 16)
    again = layers.deserialize(json.loads(json.dumps(layers.serialize(explicit))))
    assert again.data_format == "channels_first" and "channels_first" in repr(again)


SEEDED = [lambda **k: layers.Dropout(0.5, **k), lambda **k: layers.AlphaDropout(0.5, **k),
          lambda **k: layers.SpatialDropout2D(0.5, data_format="channels_first", **k),
          lambda **k: layers.SpatialDropout1D(0.5, **k), lambda **k: layers.SpatialDropout3D(0.5, **k)]


@pytest.mark.parametrize("make", SEEDED)
def test_seed_gives_the_layer_its_own_mask_stream(rng, make):
    """Keras's ``seed=``: a layer's masks depend on its seed and its own draws only, not on
    ``mn.manual_seed``; two layers with one seed drop alike; the global stream is untouched."""
    layer = make()
    shape = (4, 3, 5, 6, 2) if "3D" in type(layer).__name__ else (4, 6, 5) if "1D" in type(layer).__name__ \
        else (4, 3, 5, 6)
    x = rng.standard_normal(shape).astype(np.float32)
    mn.manual_seed(0)
    first, second = make(seed=7)(x, training=True).numpy(), None
    mn.manual_seed(123)
    twin = make(seed=7)
    again = twin(x, training=True).numpy()
    second = twin(x, training=True).numpy()
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, second)              # each call draws a new mask
    assert not np.array_equal(first, make(seed=8)(x, training=True).numpy())
    mn.manual_seed(5)
    plain = mn.functional.dropout(mn.tensor(x), 0.5).numpy()
    mn.manual_seed(5)
    make(seed=7)(x, training=True)
    np.testing.assert_array_equal(mn.functional.dropout(mn.tensor(x), 0.5).numpy(), plain)
    assert twin.get_config()["seed"] == 7


def test_noise_shape_broadcasts_one_mask(rng):
    """``noise_shape=(None, 1, C)`` drops the same features at every timestep; the full shape
    is element-wise dropout itself (the same bits for a seed); backward is the mask times
    ``1/(1-rate)``, checked by gradcheck."""
    x = rng.uniform(0.5, 1.5, (8, 5, 6)).astype(np.float32)
    y = layers.Dropout(0.5, noise_shape=(None, 1, 6), seed=1)(x, training=True).numpy()
    np.testing.assert_array_equal(np.broadcast_to(y[:, :1] == 0, y.shape), y == 0)   # one draw per (n, c)
    assert 0.3 < (y == 0).mean() < 0.7
    np.testing.assert_allclose(y[y != 0], (2 * x)[y != 0], rtol=1e-6)
    full = layers.Dropout(0.3, noise_shape=x.shape, seed=4)(x, training=True).numpy()
    np.testing.assert_array_equal(full, layers.Dropout(0.3, seed=4)(x, training=True).numpy())
    alpha_full = layers.AlphaDropout(0.3, noise_shape=(None, 5, None), seed=4)(x, training=True).numpy()
    np.testing.assert_allclose(alpha_full, layers.AlphaDropout(0.3, seed=4)(x, training=True).numpy(),
                               rtol=1e-6, atol=1e-6)
    x64 = mn.tensor(rng.standard_normal((3, 4, 2)), requires_grad=True)
    for cls in (layers.Dropout, layers.AlphaDropout):
        assert mn.gradcheck(lambda t, cls=cls: cls(0.4, noise_shape=(3, 1, 2), seed=2, dtype="float64")(
            t, training=True), (x64,))


@pytest.mark.parametrize("noise_shape, words", [
    ("ab", "a tuple of positive ints or None"), ((4, 0, 6), "positive ints"), (3, "a tuple"),
    ((4.5, 1, 1), "positive ints")])
def test_noise_shape_refused_when_not_a_shape(noise_shape, words):
    with pytest.raises(ValueError, match=f"Invalid value for argument `noise_shape`: expected .*{words}"):
        layers.Dropout(0.5, noise_shape=noise_shape)


@pytest.mark.parametrize("noise_shape, words", [((4, 2, 6), "each entry to be 1, None or the input's size"),
                                                ((4, 6), "expected 3 entries")])
def test_noise_shape_refused_when_it_does_not_broadcast(noise_shape, words):
    with pytest.raises(ValueError, match=words):
        layers.Dropout(0.5, noise_shape=noise_shape, name="d")(np.ones((4, 3, 6), np.float32), training=True)


def test_seed_and_noise_shape_in_config_and_keras_files():
    layer = layers.Dropout(0.2, noise_shape=(None, 1, 6), seed=3, name="d")
    again = layers.deserialize(json.loads(json.dumps(layers.serialize(layer))))
    assert again.noise_shape == (None, 1, 6) and again.seed == 3
    keras_entry = {"class_name": "AlphaDropout", "config": {"rate": 0.1, "noise_shape": [None, 1], "seed": 9}}
    loaded = layers.deserialize(keras_entry)
    assert loaded.noise_shape == (None, 1) and loaded.seed == 9
    assert "noise_shape" not in layers.SpatialDropout2D(0.5, seed=1).get_config()
    with pytest.raises(ValueError, match="`seed`"):
        layers.Dropout(0.5, seed=-1)
