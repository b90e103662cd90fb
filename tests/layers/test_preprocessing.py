"""Preprocessing and augmentation layers: references, training-only behaviour, seeding,
both layouts, PyTorch parity for Resizing, config round trips and errors."""
import json
import math

import numpy as np
import pytest

import minnet as mn
from minnet import layers

FORMATS = ["channels_last", "channels_first"]


def _batch(rng, data_format, n=4, h=8, w=10, c=3):
    x = rng.uniform(0, 255, (n, h, w, c)).astype(np.float32)
    return x if data_format == "channels_last" else x.transpose(0, 3, 1, 2).copy()


def test_rescaling_and_gradient():
    layer = layers.Rescaling(1 / 255, offset=-0.5, dtype="float64")
    x = mn.tensor(np.array([[0.0, 255.0]]), requires_grad=True)
    y = layer(x)
    np.testing.assert_allclose(y.numpy(), [[-0.5, 0.5]])
    y.sum().backward()
    np.testing.assert_allclose(x.grad, 1 / 255)


def test_normalization_adapt_and_given_statistics(rng):
    data = rng.standard_normal((500, 4)) * [1, 2, 3, 4] + [5, 6, 7, 8]
    norm = layers.Normalization(dtype="float64")
    norm.adapt(data)
    np.testing.assert_allclose(norm.mean.data, data.mean(0), rtol=1e-10)
    np.testing.assert_allclose(norm.variance.data, data.var(0), rtol=1e-8)
    out = norm(data).numpy()
    np.testing.assert_allclose(out.mean(0), 0, atol=1e-10)
    np.testing.assert_allclose(out.std(0), 1, rtol=1e-8)
    # adapt over batches gives the same statistics
    batched = layers.Normalization(dtype="float64")
    batched.adapt([data[i:i + 64] for i in range(0, 500, 64)].__iter__())
    np.testing.assert_allclose(batched.mean.data, norm.mean.data, rtol=1e-10)
    np.testing.assert_allclose(batched.variance.data, norm.variance.data, rtol=1e-8)
    given = layers.Normalization(mean=[1.0, 2.0], variance=[4.0, 9.0])
    np.testing.assert_allclose(given(np.array([[3.0, 5.0]])).numpy(), [[1.0, 1.0]])
    inv = layers.Normalization(mean=[1.0, 2.0], variance=[4.0, 9.0], invert=True)
    np.testing.assert_allclose(inv(np.array([[1.0, 1.0]])).numpy(), [[3.0, 5.0]])
    assert len(norm.non_trainable_weights) == 2 and norm.trainable_weights == []


def test_normalization_per_channel_images(rng):
    x = rng.uniform(0, 255, (6, 5, 5, 3))
    norm = layers.Normalization(axis=-1, dtype="float64")
    norm.adapt(x)
    assert norm.mean.shape == (1, 1, 3)
    np.testing.assert_allclose(norm.mean.data.reshape(3), x.mean(axis=(0, 1, 2)), rtol=1e-10)
    with pytest.raises(ValueError, match="both `mean` and `variance`"):
        layers.Normalization(mean=1.0)


@pytest.mark.parametrize("data_format", FORMATS)
def test_augmentations_are_identity_in_evaluation(rng, data_format):
    x = _batch(rng, data_format)
    for layer in (layers.RandomFlip(data_format=data_format),
                  layers.RandomTranslation(0.2, 0.2, data_format=data_format),
                  layers.RandomRotation(0.2, data_format=data_format),
                  layers.RandomZoom(0.3, data_format=data_format),
                  layers.RandomContrast(0.5, data_format=data_format)):
        np.testing.assert_array_equal(layer(x).numpy(), x)
        y = layer(x, training=True)
        assert y.shape == x.shape and y.dtype == np.float32
        assert not np.array_equal(y.numpy(), x)


@pytest.mark.parametrize("data_format", FORMATS)
def test_random_flip_flips_whole_images(rng, data_format):
    x = _batch(rng, data_format, n=16)
    mn.manual_seed(1)
    y = layers.RandomFlip("horizontal", data_format=data_format)(x, training=True).numpy()
    waxis = 2 if data_format == "channels_last" else 3
    flipped = np.flip(x, axis=waxis)
    kinds = [np.array_equal(y[i], x[i]) or np.array_equal(y[i], flipped[i]) for i in range(16)]
    assert all(kinds)
    n_flipped = sum(np.array_equal(y[i], flipped[i]) for i in range(16))
    assert 0 < n_flipped < 16


def test_seeding_and_layout_agreement(rng):
    x = _batch(rng, "channels_last")
    mn.manual_seed(5)
    a = layers.RandomRotation(0.2, data_format="channels_last")(x, training=True).numpy()
    mn.manual_seed(5)
    b = layers.RandomRotation(0.2, data_format="channels_first")(
        x.transpose(0, 3, 1, 2).copy(), training=True).numpy()
    np.testing.assert_allclose(a, b.transpose(0, 2, 3, 1), rtol=1e-6, atol=1e-3)
    c = layers.RandomTranslation(0.1, 0.3, seed=9, data_format="channels_last")(x, training=True)
    d = layers.RandomTranslation(0.1, 0.3, seed=9, data_format="channels_last")(x, training=True)
    np.testing.assert_array_equal(c.numpy(), d.numpy())


def test_translation_by_whole_pixels_matches_numpy(rng):
    x = _batch(rng, "channels_last", n=1)
    # factors (lower == upper) fix the shift: 0.25 * 8 = 2 rows down, -0.1 * 10 = 1 column left
    layer = layers.RandomTranslation((0.25, 0.25), (-0.1, -0.1), fill_mode="constant",
                                     data_format="channels_last")
    y = layer(x, training=True).numpy()
    want = np.zeros_like(x)
    want[:, 2:, :-1] = x[:, :-2, 1:]
    np.testing.assert_allclose(y, want, rtol=1e-6)


def test_rotation_by_half_turn_matches_numpy(rng):
    x = _batch(rng, "channels_last", n=2)
    y = layers.RandomRotation((0.5, 0.5), data_format="channels_last")(x, training=True).numpy()
    np.testing.assert_allclose(y, x[:, ::-1, ::-1], rtol=1e-4, atol=1e-2)


def test_zoom_factor_zero_is_identity_and_zoom_in(rng):
    x = _batch(rng, "channels_last", n=2)
    same = layers.RandomZoom((0.0, 0.0), data_format="channels_last")(x, training=True).numpy()
    np.testing.assert_allclose(same, x, rtol=1e-6)
    zoom_in = layers.RandomZoom((-0.5, -0.5), data_format="channels_last",
                                interpolation="nearest")(x, training=True).numpy()
    assert zoom_in.shape == x.shape and not np.allclose(zoom_in, x)


def test_contrast(rng):
    x = _batch(rng, "channels_last", n=3)
    y = layers.RandomContrast((0.5, 0.5), data_format="channels_last")(x, training=True).numpy()
    mean = x.mean(axis=(1, 2), keepdims=True)
    for i in range(3):
        f = (y[i] - mean[i]).std() / (x[i] - mean[i]).std()
        assert 0.5 - 1e-3 <= f <= 1.5 + 1e-3
    assert y.min() >= 0 and y.max() <= 255


@pytest.mark.parametrize("data_format", FORMATS)
def test_crops(rng, data_format):
    x = _batch(rng, data_format, h=8, w=10)
    center = layers.CenterCrop(4, 6, data_format=data_format)(x).numpy()
    want = x[:, 2:6, 2:8] if data_format == "channels_last" else x[:, :, 2:6, 2:8]
    np.testing.assert_array_equal(center, want)
    crop = layers.RandomCrop(4, 6, data_format=data_format)
    np.testing.assert_array_equal(crop(x).numpy(), want)          # evaluation: central window
    y = crop(x, training=True).numpy()
    assert y.shape == want.shape
    for i in range(x.shape[0]):                                   # each crop is a window of x
        found = False
        for top in range(5):
            for left in range(5):
                win = x[i, top:top + 4, left:left + 6] if data_format == "channels_last" \
                    else x[i, :, top:top + 4, left:left + 6]
                found |= np.array_equal(win, y[i])
        assert found
    big = layers.CenterCrop(12, 12, data_format=data_format)(x)
    assert big.shape == ((4, 12, 12, 3) if data_format == "channels_last" else (4, 3, 12, 12))


@pytest.mark.parametrize("data_format", FORMATS)
def test_resizing_bilinear_matches_torch(torch, rng, data_format):
    x = _batch(rng, data_format).astype(np.float64)
    layer = layers.Resizing(5, 13, data_format=data_format, dtype="float64")
    xm = mn.tensor(x, requires_grad=True)
    y = layer(xm)
    xt = torch.tensor(x if data_format == "channels_first" else x.transpose(0, 3, 1, 2).copy())
    yt = torch.nn.functional.interpolate(xt, size=(5, 13), mode="bilinear", align_corners=False).numpy()
    if data_format == "channels_last":
        yt = yt.transpose(0, 2, 3, 1)
    np.testing.assert_allclose(y.numpy(), yt, rtol=1e-12, atol=1e-9)
    small = mn.tensor(rng.standard_normal((1, 3, 4, 2) if data_format == "channels_last" else (1, 2, 3, 4)),
                      requires_grad=True)
    assert mn.gradcheck(lambda t: layer(t), (small,))
    nearest = layers.Resizing(16, 20, interpolation="nearest", data_format=data_format)(x).numpy()
    hax, wax = (1, 2) if data_format == "channels_last" else (2, 3)
    np.testing.assert_array_equal(nearest, x.repeat(2, axis=hax).repeat(2, axis=wax))


def test_single_image_and_bad_arguments(rng):
    image = rng.uniform(0, 1, (8, 8, 3)).astype(np.float32)
    assert layers.RandomFlip(data_format="channels_last")(image, training=True).shape == (8, 8, 3)
    assert layers.Resizing(4, 4, data_format="channels_last")(image).shape == (4, 4, 3)
    with pytest.raises(ValueError, match="`mode`"):
        layers.RandomFlip("diagonal")
    with pytest.raises(ValueError, match="`fill_mode`"):
        layers.RandomRotation(0.1, fill_mode="edge")
    with pytest.raises(TypeError, match="`factor`"):
        layers.RandomRotation("big")
    with pytest.raises(ValueError, match="`height_factor`"):
        layers.RandomTranslation(2.0, 0.1)
    with pytest.raises(ValueError, match="`height`"):
        layers.RandomCrop(0, 4)
    with pytest.raises(ValueError, match="image batch"):
        layers.RandomFlip(data_format="channels_last")(np.ones((2, 3)), training=True)


@pytest.mark.parametrize("layer", [
    layers.Rescaling(0.5, 1.0), layers.Normalization(mean=[1.0], variance=[2.0]),
    layers.RandomFlip("vertical", seed=3, data_format="channels_last"),
    layers.RandomTranslation((-0.1, 0.2), 0.3, fill_mode="wrap", data_format="channels_first"),
    layers.RandomRotation(0.25, interpolation="nearest", fill_value=1.0),
    layers.RandomZoom(0.1, (-0.2, 0.2)), layers.RandomContrast(0.2),
    layers.RandomCrop(5, 6), layers.CenterCrop(2, 3), layers.Resizing(7, 9, crop_to_aspect_ratio=True)])
def test_config_round_trip(layer):
    config = json.loads(json.dumps(layers.serialize(layer)))
    again = layers.deserialize(config)
    assert type(again) is type(layer) and again.get_config() == layer.get_config()


def test_augmentation_inside_fit_runs(rng):
    mn.manual_seed(0)
    x = rng.uniform(0, 1, (32, 8, 8, 1)).astype(np.float32)
    y = (x.mean(axis=(1, 2, 3)) > 0.5).astype(np.int64)
    model = mn.Sequential([layers.RandomFlip("horizontal", data_format="channels_last"),
                           layers.RandomRotation(0.05, data_format="channels_last"),
                           layers.Flatten(), layers.Dense(2)])
    model.compile(optimizer="adam", loss=mn.losses.SparseCategoricalCrossentropy(from_logits=True))
    history = model.fit(x, y, epochs=2, batch_size=8, verbose=0)
    assert all(math.isfinite(v) for v in history.history["loss"])
    np.testing.assert_allclose(model.predict(x[:2]), model.predict(x[:2]))   # eval: deterministic


def test_normalization_adapt_keeps_precision_with_a_large_mean(rng):
    data = 1e6 + rng.standard_normal((1000, 2)) * 1e-2
    norm = layers.Normalization(dtype="float64")
    norm.adapt(iter([data[i:i + 100] for i in range(0, 1000, 100)]))
    np.testing.assert_allclose(norm.variance.data, data.var(0), rtol=1e-6)
    np.testing.assert_allclose(norm.mean.data, data.mean(0), rtol=1e-12)


@pytest.mark.parametrize("make", [lambda: layers.CenterCrop(4, 4), lambda: layers.RandomCrop(4, 4)])
def test_crop_layers_refuse_empty_images_by_name(make):
    layer = make()
    with pytest.raises(ValueError, match=f"Layer '{layer.name}' cannot crop or resize empty images"):
        layer(np.zeros((2, 0, 8, 3), np.float32), training=True)
