"""Keras 3's colour augmentation layers: parity with Keras 3.15 (its drawn parameters applied
by both), both layouts, single images, seeding, the drawn parameters' ranges, errors, configs."""
import json

import numpy as np
import pytest

from minnet import layers

FORMATS = ["channels_last", "channels_first"]

# (minnet/Keras class name, keyword arguments, the value range the images use)
CASES = [
    ("RandomBrightness", dict(factor=0.4), (0, 255)),
    ("RandomBrightness", dict(factor=(-0.5, 0.1), value_range=(0, 1)), (0, 1)),
    ("RandomGrayscale", dict(factor=0.5), (0, 255)),
    ("RandomInvert", dict(factor=(0.3, 0.9)), (0, 255)),
    ("RandomSaturation", dict(factor=(0.2, 0.8)), (0, 255)),
    ("RandomSaturation", dict(factor=0.5, value_range=(0, 1)), (0, 1)),
    ("RandomHue", dict(factor=0.8), (0, 255)),
    ("RandomHue", dict(factor=(0.1, 0.5), value_range=(0, 1)), (0, 1)),
    ("RandomColorDegeneration", dict(factor=(0.2, 0.9)), (0, 255)),
    ("Solarization", dict(addition_factor=0.3, threshold_factor=(0.2, 0.8)), (0, 255)),
    ("Solarization", dict(addition_factor=(0.1, 0.2), threshold_factor=0.5,
                          value_range=(0, 1)), (0, 1)),
    ("RandomPosterization", dict(factor=(2, 7)), (0, 255)),
    ("RandomPosterization", dict(factor=3, value_range=(0, 1)), (0, 1)),
    ("AutoContrast", dict(), (0, 255)),
    ("AutoContrast", dict(value_range=(0, 1)), (0, 1)),
    ("Equalization", dict(), (0, 255)),
    ("Equalization", dict(bins=32, value_range=(0, 1)), (0, 1)),
    ("RandomSharpness", dict(factor=(0.0, 1.0)), (0, 255)),
]
IDS = [f"{name}-{i}" for i, (name, _, _) in enumerate(CASES)]


def _images(rng, data_format, value_range, n=3, h=5, w=6, c=3):
    low, high = value_range
    x = rng.uniform(low, high, (n, h, w, c)).astype(np.float32)
    x[0, :, :, 1] = x[0, 0, 0, 1]              # one constant channel (AutoContrast's NaN case)
    return x if data_format == "channels_last" else x.transpose(0, 3, 1, 2).copy()


def _numpy(value):
    if isinstance(value, dict):
        return {k: _numpy(v) for k, v in value.items()}
    if value is None:
        return None
    return value.detach().cpu().numpy().copy() if hasattr(value, "detach") else np.asarray(value)


def _keras_apply(keras, layer, images, params):
    import torch
    out = layer.transform_images(torch.from_numpy(images.copy()), params, training=True)
    return _numpy(out)


def _compare(ours, theirs, value_range):
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5 * value_range[1])


@pytest.mark.slow_once
@pytest.mark.parametrize("data_format", FORMATS)
@pytest.mark.parametrize("name, kwargs, value_range", CASES, ids=IDS)
def test_parity_with_keras(keras, rng, name, kwargs, value_range, data_format):
    if name == "AutoContrast" and data_format == "channels_first":
        pytest.skip("Keras 3.15's AutoContrast reduces over axes (1, 2) whatever the layout; "
                    "see test_autocontrast_channels_first_is_per_channel")
    theirs = getattr(keras.layers, name)(data_format=data_format, **kwargs)
    ours = getattr(layers, name)(data_format=data_format, **kwargs)
    images = _images(rng, data_format, value_range)
    for seed in (1, 2, 3):
        params = theirs.get_random_transformation(images, training=True, seed=seed)
        expected = _keras_apply(keras, theirs, images, params)
        got = ours._apply(images.copy(), _numpy(params))
        assert got.shape == images.shape and got.dtype == np.float32
        _compare(got, expected, value_range)


@pytest.mark.slow_once
@pytest.mark.parametrize("data_format", FORMATS)
def test_color_jitter_parity_with_keras_steps(keras, rng, data_format):
    kw = dict(brightness_factor=0.2, contrast_factor=(0.3, 0.5), saturation_factor=(0.3, 0.7),
              hue_factor=0.4)
    ours = layers.RandomColorJitter(data_format=data_format, **kw)
    steps = {"brightness": keras.layers.RandomBrightness(0.2, data_format=data_format),
             "contrast": keras.layers.RandomContrast((0.3, 0.5), data_format=data_format),
             "saturation": keras.layers.RandomSaturation((0.3, 0.7), data_format=data_format),
             "hue": keras.layers.RandomHue(0.4, data_format=data_format)}
    images = _images(rng, data_format, (0, 255))
    expected, params = images, {}
    for seed, (key, step) in enumerate(steps.items()):
        drawn = step.get_random_transformation(expected, training=True, seed=seed + 5)
        params[key] = _numpy(drawn)
        expected = _keras_apply(keras, step, expected, drawn)
    _compare(ours._apply(images.copy(), params), expected, (0, 255))
    # Keras's own layer (channels_last: Keras 3.15 leaves its inner layers on the global
    # layout) draws in the same ranges: the same arguments, the same kind of result.
    if data_format == "channels_last":
        theirs = keras.layers.RandomColorJitter(**kw, seed=1)
        assert _numpy(theirs(images, training=True)).shape == images.shape


@pytest.mark.parametrize("name, kwargs, value_range", CASES, ids=IDS)
def test_layouts_agree_and_single_images(rng, name, kwargs, value_range):
    last = _images(rng, "channels_last", value_range)
    a = getattr(layers, name)(data_format="channels_last", seed=0, **kwargs) \
        if name not in ("AutoContrast", "Equalization") \
        else getattr(layers, name)(data_format="channels_last", **kwargs)
    b = getattr(layers, name).from_config({**a.get_config(), "data_format": "channels_first"})
    y_last = a(last, training=True).numpy()
    y_first = b(last.transpose(0, 3, 1, 2).copy(), training=True).numpy()
    np.testing.assert_allclose(y_first.transpose(0, 2, 3, 1), y_last, rtol=1e-5,
                               atol=1e-4 * value_range[1])
    c = getattr(layers, name).from_config(a.get_config())
    one = c(last[1], training=True).numpy()
    d = getattr(layers, name).from_config(a.get_config())
    np.testing.assert_allclose(one, d(last[1:2], training=True).numpy()[0], rtol=1e-6)
    assert one.shape == last[1].shape


@pytest.mark.parametrize("name, kwargs, value_range", CASES, ids=IDS)
def test_seeded_layers_repeat_and_evaluation_is_identity(rng, name, kwargs, value_range):
    x = _images(rng, "channels_last", value_range)
    seeded = {} if name in ("AutoContrast", "Equalization") else {"seed": 7}
    first = getattr(layers, name)(data_format="channels_last", **seeded, **kwargs)
    again = getattr(layers, name)(data_format="channels_last", **seeded, **kwargs)
    np.testing.assert_array_equal(first(x, training=True).numpy(),
                                  again(x, training=True).numpy())
    if name != "AutoContrast":
        np.testing.assert_array_equal(first(x, training=False).numpy(), x)


def test_autocontrast_applies_in_evaluation_and_per_channel(rng):
    x = _images(rng, "channels_last", (0, 255))
    y = layers.AutoContrast(data_format="channels_last")(x).numpy()
    np.testing.assert_array_equal(y[0, :, :, 1], x[0, :, :, 1])     # constant channel kept
    np.testing.assert_allclose(y[1:].min(axis=(1, 2)), 0, atol=1e-3)
    np.testing.assert_allclose(y[1:].max(axis=(1, 2)), 255, rtol=1e-6)


def test_autocontrast_channels_first_is_per_channel(rng):
    x = _images(rng, "channels_last", (0, 1))
    last = layers.AutoContrast((0, 1), data_format="channels_last")(x).numpy()
    first = layers.AutoContrast((0, 1), data_format="channels_first")(
        x.transpose(0, 3, 1, 2).copy()).numpy()
    np.testing.assert_allclose(first.transpose(0, 2, 3, 1), last, rtol=1e-6)


def test_references_by_hand():
    x = np.array([[[[10.0, 20.0, 30.0], [200.0, 100.0, 50.0]]]], np.float32)   # (1, 1, 2, 3)
    gray = 0.2989 * x[..., 0] + 0.587 * x[..., 1] + 0.114 * x[..., 2]
    y = layers.RandomGrayscale(1.0, data_format="channels_last")(x, training=True).numpy()
    np.testing.assert_allclose(y, np.repeat(gray[..., None], 3, axis=-1), rtol=1e-6)
    y = layers.RandomInvert((1, 1), data_format="channels_last")(x, training=True).numpy()
    np.testing.assert_allclose(y, 255 - x)
    posterize = layers.RandomPosterization(1, data_format="channels_last")
    np.testing.assert_array_equal(posterize(x, training=True).numpy(), np.where(x >= 128, 128, 0))
    solarize = layers.Solarization(data_format="channels_last")
    params = {"additions": np.full((1, 1, 1, 1), 5.0, np.float32),
              "thresholds": np.full((1, 1, 1, 1), 100.0, np.float32)}
    shifted = x + 5
    np.testing.assert_array_equal(solarize._apply(x, params),
                                  np.where(shifted < 100, shifted, 255 - shifted))
    hue = layers.RandomHue((0.0, 0.0), data_format="channels_last")
    np.testing.assert_allclose(hue(x, training=True).numpy(), x, rtol=1e-5)
    saturate = layers.RandomSaturation((0.5, 0.5), data_format="channels_last")
    np.testing.assert_allclose(saturate(x, training=True).numpy(), x, rtol=1e-5)


@pytest.mark.parametrize("name, kwargs, key, low, high", [
    ("RandomBrightness", dict(factor=(-0.2, 0.3)), "rgb_delta", -0.2 * 255, 0.3 * 255),
    ("RandomHue", dict(factor=(0.2, 0.6)), "factor", -0.3, 0.3),
    ("RandomColorDegeneration", dict(factor=(0.1, 0.4)), "factor", 0.1, 0.4),
    ("RandomSharpness", dict(factor=0.7), "factor", 0.0, 0.7),
    ("Solarization", dict(addition_factor=(0.1, 0.2)), "additions", 0.1, 0.2 * 255),
    ("RandomSaturation", dict(factor=(0.2, 0.6)), "factor", 0.25, 1.5),
    ("RandomPosterization", dict(factor=(2, 6)), "shift_factor", 3, 6),
])
def test_drawn_parameters_cover_keras_ranges(name, kwargs, key, low, high):
    layer = getattr(layers, name)(seed=3, **kwargs)
    values = np.asarray(layer._draw((4000, 2, 2, 3))[key], np.float64).ravel()
    assert values.min() >= low - 1e-6 and values.max() <= high + 1e-6
    span = high - low
    assert values.min() < low + 0.05 * span and values.max() > high - 0.05 * span
    if name == "RandomHue":
        assert 0.4 < np.mean(values > 0) < 0.6 and np.all(np.abs(values) >= 0.1 - 1e-6)


def test_drawn_probabilities():
    should = layers.RandomGrayscale(0.3, seed=1)._draw((4000, 1, 1, 3))
    assert should.shape == (4000, 1, 1, 1) and abs(should.mean() - 0.3) < 0.03
    apply = layers.RandomInvert((0.2, 0.6), seed=1)._draw((4000, 1, 1, 3))["apply_inversion"]
    assert abs(apply.mean() - 0.4) < 0.03
    jitter = layers.RandomColorJitter(contrast_factor=0.5, seed=1)._draw((4000, 1, 1, 3))
    contrast = jitter["contrast"]["contrast_factor"]
    assert contrast.min() >= 1.0 and contrast.max() <= 1.5 and contrast.max() > 1.45


@pytest.mark.parametrize("build, argument", [
    (lambda: layers.RandomBrightness(1.5), "factor"),
    (lambda: layers.RandomBrightness("big"), "factor"),
    (lambda: layers.RandomBrightness(0.1, value_range=(0, 1, 2)), "value_range"),
    (lambda: layers.RandomGrayscale(2.0), "factor"),
    (lambda: layers.RandomInvert(-0.5), "factor"),
    (lambda: layers.RandomHue((2, 3)), "factor"),
    (lambda: layers.RandomSaturation(0.5, value_range="0-255"), "value_range"),
    (lambda: layers.Solarization(addition_factor=1.5), "addition_factor"),
    (lambda: layers.Solarization(threshold_factor=(0.1, 2.0)), "threshold_factor"),
    (lambda: layers.RandomPosterization(9), "factor"),
    (lambda: layers.Equalization(bins=1), "bins"),
    (lambda: layers.RandomSharpness(1.1), "factor"),
    (lambda: layers.RandomColorJitter(contrast_factor=2.0), "contrast_factor"),
    (lambda: layers.RandomColorJitter(hue_factor=-2.0), "factor"),
])
def test_bad_arguments_name_the_argument(build, argument):
    with pytest.raises(ValueError, match=f"`{argument}`"):
        build()


def test_rgb_layers_refuse_other_channel_counts(rng):
    x = rng.uniform(0, 255, (2, 4, 4, 2)).astype(np.float32)
    for layer in (layers.RandomHue(0.5), layers.RandomSaturation(0.5),
                  layers.RandomColorDegeneration(0.5), layers.RandomGrayscale(1.0)):
        with pytest.raises(ValueError, match="channels"):
            layer(x, training=True)
    with pytest.raises(ValueError, match="ndim"):
        layers.RandomBrightness(0.2)(np.zeros((4, 4)), training=True)


@pytest.mark.parametrize("name, kwargs, value_range", CASES + [
    ("RandomColorJitter", dict(brightness_factor=0.1, contrast_factor=0.2,
                               saturation_factor=(0.4, 0.6), hue_factor=0.1), (0, 255))],
    ids=IDS + ["RandomColorJitter"])
def test_config_round_trip(name, kwargs, value_range):
    layer = getattr(layers, name)(**kwargs)
    config = json.loads(json.dumps(layers.serialize(layer)))
    again = layers.deserialize(config)
    assert type(again) is type(layer) and again.get_config() == layer.get_config()


def test_inside_a_model_and_no_gradient(rng):
    import minnet as mn
    x = mn.Tensor(_images(rng, "channels_last", (0, 255)), requires_grad=True)
    y = layers.RandomBrightness(0.2, data_format="channels_last")(x, training=True)
    assert not y.requires_grad
    model = mn.Sequential([layers.RandomColorJitter(brightness_factor=0.2, hue_factor=0.1,
                                                    data_format="channels_last"),
                           layers.Flatten(), layers.Dense(2)])
    assert model(x.data).shape == (3, 2)


CLAHE = "ContrastLimitedAdaptiveHistogramEqualization"


# Keras's torch backend counts the histograms in int64 (its one_hot's default there), so it
# truncates the clip limit `clip_limit * tile pixels / 256` to an integer; on its other
# backends, and in minnet, the limit is a float. The cases use whole limits (256-pixel tiles)
# or none, where both agree; the pad of one row (31 -> 32) is the same symmetric or edge.
@pytest.mark.slow_once
@pytest.mark.parametrize("data_format", FORMATS)
@pytest.mark.parametrize("kwargs, size", [
    (dict(tile_grid_size=(2, 2)), (32, 32)),
    (dict(clip_limit=2.0, tile_grid_size=(1, 1)), (16, 16)),
    (dict(clip_limit=0, tile_grid_size=(2, 3), value_range=(0, 1)), (31, 33)),
    (dict(clip_limit=0), (16, 24))])
def test_clahe_matches_keras(keras, rng, kwargs, size, data_format):
    import torch
    theirs = getattr(keras.layers, CLAHE)(data_format=data_format, **kwargs)
    ours = getattr(layers, CLAHE)(data_format=data_format, **kwargs)
    value_range = kwargs.get("value_range", (0, 255))
    images = _images(rng, data_format, value_range, h=size[0], w=size[1])
    expected = _numpy(theirs.transform_images(torch.from_numpy(images.copy()), None))
    got = ours(images).numpy()                    # applied in evaluation too, as Keras
    assert got.dtype == np.float32
    _compare(got, expected, value_range)


def test_clahe_references_and_errors(rng):
    flat = np.full((1, 8, 8, 1), 100.0, np.float32)
    layer = getattr(layers, CLAHE)(clip_limit=0, tile_grid_size=(2, 2),
                                   data_format="channels_last")
    np.testing.assert_allclose(layer(flat).numpy(), 255.0)   # cdf_min = 0 below the level
    clipped = getattr(layers, CLAHE)(clip_limit=4.0, tile_grid_size=(1, 1),
                                     data_format="channels_last")(flat).numpy()
    spread = 63 / 256          # limit 4 * 64 / 256 = 1: the other 63 spread over 256 bins
    expected = (101 * spread + 1 - spread) * 255 / (64 - spread)        # cdf(100) - cdf(0)
    np.testing.assert_allclose(clipped, expected, rtol=1e-5)
    ramp = np.arange(64, dtype=np.float32).reshape(1, 8, 8, 1) * 4
    plain = getattr(layers, CLAHE)(clip_limit=0, tile_grid_size=(1, 1),
                                   data_format="channels_last")(ramp).numpy()
    levels = np.sort(np.unique(plain))
    np.testing.assert_allclose(levels, np.arange(64) * 255 / 63, rtol=1e-5)  # equalised ramp
    for kwargs, argument in [(dict(clip_limit=-1), "clip_limit"),
                             (dict(tile_grid_size=(0, 2)), "tile_grid_size"),
                             (dict(tile_grid_size=4), "tile_grid_size"),
                             (dict(value_range=(1,)), "value_range")]:
        with pytest.raises(ValueError, match=f"`{argument}`"):
            getattr(layers, CLAHE)(**kwargs)
    layer = getattr(layers, CLAHE)(clip_limit=3.0, tile_grid_size=[2, 3])
    config = json.loads(json.dumps(layers.serialize(layer)))
    assert layers.deserialize(config).get_config() == layer.get_config()
    x = rng.uniform(0, 255, (2, 6, 9, 3)).astype(np.float32)
    last = getattr(layers, CLAHE)(tile_grid_size=(2, 3), data_format="channels_last")(x)
    first = getattr(layers, CLAHE)(tile_grid_size=(2, 3), data_format="channels_first")(
        x.transpose(0, 3, 1, 2).copy())
    np.testing.assert_allclose(first.numpy().transpose(0, 2, 3, 1), last.numpy(), rtol=1e-6)
    np.testing.assert_allclose(layer(x[0]).numpy(), layer(x[:1]).numpy()[0], rtol=1e-6)
