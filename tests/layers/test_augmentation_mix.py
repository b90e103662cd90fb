"""MixUp, CutMix, RandomErasing, RandomGaussianBlur, RandomShear, RandomPerspective,
RandomElasticTransform: parity with Keras 3.15 on Keras's own drawn parameters, both
layouts, dict inputs with labels, single images, seeding, the drawn parameters' ranges,
errors and configs."""
import json

import numpy as np
import pytest

import minnet as mn
from minnet import layers

FORMATS = ["channels_last", "channels_first"]

CASES = [
    ("MixUp", dict()),
    ("MixUp", dict(alpha=1.5)),
    ("CutMix", dict()),
    ("CutMix", dict(factor=(0.3, 0.6))),
    ("RandomErasing", dict()),
    ("RandomErasing", dict(factor=(0.4, 0.9), scale=(0.1, 0.5), fill_value=7.0)),
    ("RandomGaussianBlur", dict()),
    ("RandomGaussianBlur", dict(factor=0.7, kernel_size=5, sigma=(0.3, 0.9))),
    ("RandomShear", dict(x_factor=0.3, y_factor=(0.1, 0.2))),
    ("RandomShear", dict(x_factor=0.5, interpolation="nearest", fill_mode="constant",
                         fill_value=3.0)),
    ("RandomShear", dict(y_factor=0.4, fill_mode="wrap")),
    ("RandomShear", dict(x_factor=0.2, y_factor=0.2, fill_mode="nearest")),
    ("RandomPerspective", dict()),
    ("RandomPerspective", dict(factor=(0.5, 1.0), scale=0.4, interpolation="nearest",
                               fill_value=9.0)),
]
IDS = [f"{name}-{i}" for i, (name, _) in enumerate(CASES)]


def _images(rng, data_format, n=4, h=6, w=7, c=3):
    x = rng.uniform(0, 255, (n, h, w, c)).astype(np.float32)
    return x if data_format == "channels_last" else x.transpose(0, 3, 1, 2).copy()


def _labels(rng, n=4, classes=3):
    return np.eye(classes, dtype=np.float32)[rng.integers(0, classes, n)]


def _numpy(value):
    if isinstance(value, dict):
        return {k: _numpy(v) for k, v in value.items()}
    return value.detach().cpu().numpy().copy() if hasattr(value, "detach") else np.asarray(value)


@pytest.mark.slow_once
@pytest.mark.parametrize("data_format", FORMATS)
@pytest.mark.parametrize("name, kwargs", CASES, ids=IDS)
def test_parity_with_keras(keras, rng, name, kwargs, data_format):
    import torch
    theirs = getattr(keras.layers, name)(data_format=data_format, **kwargs)
    ours = getattr(layers, name)(data_format=data_format, **kwargs)
    images, labels = _images(rng, data_format), _labels(rng)
    for seed in (1, 2, 3):
        params = theirs.get_random_transformation(images, training=True, seed=seed)
        expected = _numpy(theirs.transform_images(torch.from_numpy(images.copy()), params,
                                                  training=True))
        got = ours._apply(images.copy(), _numpy(params))
        assert got.shape == images.shape and got.dtype == np.float32
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=3e-3)
        if name in ("MixUp", "CutMix"):
            expected = _numpy(theirs.transform_labels(torch.from_numpy(labels), params,
                                                      training=True))
            np.testing.assert_allclose(ours._apply_labels(labels, _numpy(params)), expected,
                                       rtol=1e-6, atol=1e-6)


@pytest.mark.slow_once
def test_erasing_per_channel_fill_matches_keras(keras, rng):
    import torch
    kwargs = dict(fill_value=[10.0, 300.0, -4.0], value_range=(0, 255))
    theirs = keras.layers.RandomErasing(**kwargs)
    ours = layers.RandomErasing(data_format="channels_last", **kwargs)
    images = _images(rng, "channels_last")
    params = theirs.get_random_transformation(images, training=True, seed=4)
    expected = _numpy(theirs.transform_images(torch.from_numpy(images.copy()), params))
    np.testing.assert_allclose(ours._apply(images, _numpy(params)), expected)
    drawn = ours._draw(images.shape)["fill_value"]
    np.testing.assert_array_equal(drawn, _numpy(params)["fill_value"])   # fixed fills agree


ELASTIC = [dict(), dict(factor=(0.5, 1.0), scale=(0.4, 0.9), interpolation="nearest"),
           dict(fill_mode="constant", fill_value=5.0), dict(fill_mode="mirror"),
           dict(fill_mode="wrap", scale=0.5), dict(fill_mode="nearest")]


@pytest.mark.slow_once
@pytest.mark.parametrize("data_format", FORMATS)
@pytest.mark.parametrize("kwargs", ELASTIC)
def test_elastic_transform_matches_keras(keras, rng, monkeypatch, kwargs, data_format):
    import torch
    theirs = keras.layers.RandomElasticTransform(data_format=data_format, **kwargs)
    ours = layers.RandomElasticTransform(data_format=data_format, **kwargs)
    images = _images(rng, data_format, h=20, w=24)
    for seed in (1, 2):
        params = _numpy(theirs.get_random_transformation(images, training=True, seed=seed))
        # Keras draws the noise inside transform_images from torch's global generator: hand
        # it the noise minnet's parameters carry
        noise = rng.standard_normal((2, 4, 20, 24)).astype(np.float32)
        draws = iter(torch.from_numpy(noise.copy()))
        monkeypatch.setattr(torch, "normal", lambda *args, **kw: next(draws))
        expected = _numpy(theirs.transform_images(torch.from_numpy(images.copy()),
                                                  {**params, "seed": None}))
        monkeypatch.undo()
        got = ours._apply(images.copy(), {**params, "noise": noise})
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=3e-3)


@pytest.mark.parametrize("name, kwargs", CASES + [("RandomElasticTransform", dict()),
                                                  ("RandomElasticTransform",
                                                   dict(fill_mode="mirror", scale=0.5))],
                         ids=IDS + ["RandomElasticTransform-0", "RandomElasticTransform-1"])
def test_layouts_agree_seeding_and_evaluation(rng, name, kwargs):
    last = _images(rng, "channels_last")
    a = getattr(layers, name)(data_format="channels_last", seed=5, **kwargs)
    b = getattr(layers, name).from_config({**a.get_config(), "data_format": "channels_first"})
    y_last = a(last, training=True).numpy()
    y_first = b(last.transpose(0, 3, 1, 2).copy(), training=True).numpy()
    tolerance = 0 if name in ("MixUp", "CutMix", "RandomErasing") else 1e-3
    if name == "RandomErasing" and a.fill_value is None:
        # the noise is drawn in the layout's own order: compare where nothing is erased
        same = (y_first.transpose(0, 2, 3, 1) == last) & (y_last == last)
        assert same.mean() > 0.3
    else:
        np.testing.assert_allclose(y_first.transpose(0, 2, 3, 1), y_last, rtol=1e-5,
                                   atol=tolerance)
    again = getattr(layers, name).from_config(a.get_config())
    first = getattr(layers, name).from_config(a.get_config())
    np.testing.assert_array_equal(first(last, training=True).numpy(),
                                  again(last, training=True).numpy())
    np.testing.assert_array_equal(a(last, training=False).numpy(), last)


@pytest.mark.parametrize("name", ["RandomErasing", "RandomGaussianBlur", "RandomShear",
                                  "RandomPerspective", "RandomElasticTransform", "MixUp",
                                  "CutMix"])
def test_single_images(rng, name):
    x = _images(rng, "channels_last")
    a = getattr(layers, name)(data_format="channels_last", seed=2)
    b = getattr(layers, name).from_config(a.get_config())
    one = a(x[0], training=True).numpy()
    assert one.shape == x[0].shape
    if name == "CutMix":                  # Keras leaves a single image as it is
        np.testing.assert_array_equal(one, x[0])
    else:
        np.testing.assert_allclose(one, b(x[:1], training=True).numpy()[0], rtol=1e-6)


@pytest.mark.parametrize("name", ["MixUp", "CutMix"])
def test_dict_inputs_mix_labels_with_the_images(rng, name):
    x = _images(rng, "channels_last", n=6)
    labels = _labels(rng, n=6, classes=4)
    layer = getattr(layers, name)(data_format="channels_last", seed=3)
    out = layer({"images": x, "labels": labels}, training=True)
    assert set(out) == {"images", "labels"}
    mixed = out["labels"].numpy()
    np.testing.assert_allclose(mixed.sum(axis=1), 1.0, rtol=1e-6)
    params_layer = getattr(layers, name).from_config(layer.get_config())
    params = params_layer._draw(x.shape)
    np.testing.assert_allclose(out["images"].numpy(), params_layer._apply(x, params), rtol=1e-6)
    np.testing.assert_allclose(mixed, params_layer._apply_labels(labels, params), rtol=1e-6)
    same = layer({"images": x, "labels": labels}, training=False)
    np.testing.assert_array_equal(np.asarray(same["images"]), x)
    with pytest.raises(ValueError, match="labels of shape"):
        layer({"images": x, "labels": labels[:, 0]}, training=True)
    with pytest.raises(ValueError, match="bounding_boxes"):
        layer({"images": x, "bounding_boxes": labels}, training=True)


def test_references_by_hand(rng):
    x = _images(rng, "channels_last")
    mix = layers.MixUp(data_format="channels_last")
    params = {"mix_weight": np.array([1.0, 0.0, 0.5, 0.25], np.float32),
              "permutation_order": np.array([1, 0, 3, 2])}
    y = mix._apply(x, params)
    np.testing.assert_allclose(y[0], x[0])
    np.testing.assert_allclose(y[1], x[0])
    np.testing.assert_allclose(y[2], 0.5 * x[2] + 0.5 * x[3], rtol=1e-6)
    cut = layers.CutMix(data_format="channels_last", seed=0)
    params = cut._draw(x.shape)
    box = params["batch_masks"][:, :, :, 0]
    kept = 1.0 - box.mean(axis=(1, 2))
    np.testing.assert_allclose(params["mix_weight"].ravel(), kept, atol=0.35)  # whole pixels
    blur = layers.RandomGaussianBlur(data_format="channels_last")
    flat = np.full((1, 5, 5, 1), 10.0, np.float32)
    out = blur._apply(flat, {"should_apply_blur": np.array([True]),
                             "blur_factor": np.array([1.0, 1.0], np.float32)})
    np.testing.assert_allclose(out[0, 2, 2, 0], 10.0, rtol=1e-6)           # interior kept
    assert out[0, 0, 0, 0] < 10.0                                          # zero padding
    shear = layers.RandomShear(data_format="channels_last")
    np.testing.assert_allclose(shear._apply(x, {"shear_factor": np.zeros((4, 2))}), x, atol=1e-4)
    perspective = layers.RandomPerspective(scale=0.0, data_format="channels_last", seed=0)
    np.testing.assert_allclose(perspective(x, training=True).numpy(), x, rtol=1e-5, atol=1e-3)
    corners = perspective._draw(x.shape)
    corners["end_points"] = corners["start_points"] * 0.5   # the image shrunk into a corner
    corners["apply_perspective"] = np.ones(4, bool)
    shrunk = perspective._apply(x, corners)
    np.testing.assert_allclose(shrunk[:, :3, :3], x[:, ::2, ::2][:, :3, :3], rtol=1e-5)
    assert np.all(shrunk[:, 4:] == 0)                             # outside: fill_value


def test_drawn_parameters_cover_keras_ranges():
    n = 4000
    shape = (n, 8, 10, 3)
    mix = layers.MixUp(alpha=0.5, seed=1)._draw(shape)
    weight = mix["mix_weight"]
    assert abs(weight.mean() - 0.5) < 0.02 and abs(weight.var() - 0.125) < 0.01   # Beta(.5, .5)
    assert sorted(mix["permutation_order"].tolist()) == list(range(n))
    erasing = layers.RandomErasing(factor=(0.2, 0.6), scale=(0.1, 0.3), seed=1)._draw(shape)
    assert abs(erasing["apply_erasing"].mean() - 0.4) < 0.03
    areas = erasing["batch_masks"][:, :, :, 0].mean(axis=(1, 2))
    side = np.sqrt(0.3)          # a box of whole pixels: at most one more row and column
    assert areas.max() <= (side * 8 + 1) * (side * 10 + 1) / 80 and areas.min() >= 0.0
    assert 0.05 < areas.mean() < 0.3
    blur = layers.RandomGaussianBlur(factor=(0.5, 0.5), sigma=(0.2, 0.4), seed=1)._draw(shape)
    assert abs(blur["should_apply_blur"].mean() - 0.5) < 0.03
    assert np.all((blur["blur_factor"] >= 0.2) & (blur["blur_factor"] <= 0.4 + 1e-5))
    shear = layers.RandomShear(x_factor=(0.1, 0.3), y_factor=0.2, seed=1)._draw(shape)
    sx, sy = shear["shear_factor"][:, 0], shear["shear_factor"][:, 1]
    assert np.all((np.abs(sx) >= 0.1 - 1e-6) & (np.abs(sx) <= 0.3 + 1e-6))
    assert np.all(np.abs(sy) <= 0.2 + 1e-6) and 0.45 < np.mean(sx > 0) < 0.55
    cut = layers.CutMix(seed=1)._draw(shape)["mix_weight"]
    assert cut.min() >= 0 and cut.max() <= 1 and 0.3 < cut.mean() < 0.7
    perspective = layers.RandomPerspective(factor=(0.5, 0.5), scale=0.4, seed=1)._draw(shape)
    moves = perspective["end_points"] / np.maximum(perspective["start_points"], 1) - 1
    moved = moves[perspective["start_points"] > 0]
    assert np.all(np.abs(moved) <= 0.2 + 1e-6) and np.abs(moved).max() > 0.19
    assert abs(perspective["apply_perspective"].mean() - 0.5) < 0.03
    distortions = [layers.RandomElasticTransform(scale=(0.2, 0.6), seed=s)._draw(
        (2, 8, 8, 3))["distortion_factor"] for s in range(300)]
    assert 0.2 <= min(distortions) < 0.22 and 0.58 < max(distortions) <= 0.6
    assert layers.RandomElasticTransform(scale=0)._draw(shape) is None      # Keras: no-op


@pytest.mark.parametrize("build, argument", [
    (lambda: layers.MixUp(alpha=0), "alpha"),
    (lambda: layers.CutMix(factor=2.0), "factor"),
    (lambda: layers.RandomErasing(scale=(2.0, 3.0)), "scale"),
    (lambda: layers.RandomErasing(fill_value=[1, 2]), "fill_value"),
    (lambda: layers.RandomGaussianBlur(kernel_size=4), "kernel_size"),
    (lambda: layers.RandomGaussianBlur(kernel_size=(3, 5)), "kernel_size"),
    (lambda: layers.RandomGaussianBlur(sigma=2.0), "sigma"),
    (lambda: layers.RandomShear(x_factor=1.5), "x_factor"),
    (lambda: layers.RandomShear(y_factor=(-1.2, 0.2)), "y_factor"),
    (lambda: layers.RandomShear(fill_mode="mirror"), "fill_mode"),
    (lambda: layers.RandomShear(interpolation="bicubic"), "interpolation"),
    (lambda: layers.RandomPerspective(scale=1.5), "scale"),
    (lambda: layers.RandomPerspective(factor=-1), "factor"),
    (lambda: layers.RandomPerspective(interpolation="cubic"), "interpolation"),
    (lambda: layers.RandomElasticTransform(scale=2.0), "scale"),
    (lambda: layers.RandomElasticTransform(fill_mode="edge"), "fill_mode"),
])
def test_bad_arguments_name_the_argument(build, argument):
    with pytest.raises(ValueError, match=f"`{argument}`"):
        build()


@pytest.mark.parametrize("name, kwargs", CASES + [
    ("RandomErasing", dict(fill_value=[1, 2, 3]))], ids=IDS + ["RandomErasing-rgb"])
def test_config_round_trip(name, kwargs):
    layer = getattr(layers, name)(**kwargs)
    config = json.loads(json.dumps(layers.serialize(layer)))
    again = layers.deserialize(config)
    assert type(again) is type(layer) and again.get_config() == layer.get_config()


def test_inside_fit(rng):
    mn.manual_seed(0)
    x = _images(rng, "channels_last", n=16) / 255
    y = rng.integers(0, 2, 16)
    model = mn.Sequential([layers.RandomErasing(value_range=(0, 1), data_format="channels_last"),
                           layers.RandomShear(0.2, data_format="channels_last"),
                           layers.Flatten(), layers.Dense(2)])
    model.compile(optimizer="adam", loss=mn.losses.SparseCategoricalCrossentropy(from_logits=True))
    history = model.fit(x, y, epochs=1, batch_size=8, verbose=0)
    assert np.isfinite(history.history["loss"][0])



def _boxes(rng, n=2, count=5):
    boxes = rng.uniform(0, 10, (n, count, 4)).astype(np.float32)
    return boxes, rng.integers(0, 4, (n, count)).astype(np.int32)


@pytest.mark.slow_once
@pytest.mark.parametrize("max_number, count", [(3, 5), (7, 5), (5, 5)])
def test_max_num_bounding_boxes_matches_keras(keras, rng, max_number, count):
    images = _images(rng, "channels_last", n=2)
    boxes, labels = _boxes(rng, count=count)
    kwargs = dict(max_number=max_number, fill_value=-2, bounding_box_format="xyxy")
    theirs = keras.layers.MaxNumBoundingBoxes(**kwargs)(
        {"images": images, "bounding_boxes": {"boxes": boxes, "labels": labels}})
    ours = layers.MaxNumBoundingBoxes(**kwargs)(
        {"images": images, "bounding_boxes": {"boxes": boxes, "labels": labels}})
    for key in ("boxes", "labels"):
        np.testing.assert_array_equal(np.asarray(ours["bounding_boxes"][key]),
                                      _numpy(theirs["bounding_boxes"][key]))
    np.testing.assert_array_equal(np.asarray(ours["images"]), images)


def test_max_num_bounding_boxes(rng):
    boxes, labels = _boxes(rng, count=2)
    layer = layers.MaxNumBoundingBoxes(4, bounding_box_format="xyxy")
    out = layer({"images": _images(rng, "channels_last", n=2),
                 "bounding_boxes": {"boxes": boxes, "labels": labels}}, training=False)
    got = np.asarray(out["bounding_boxes"]["boxes"])
    assert got.shape == (2, 4, 4) and np.all(got[:, 2:] == -1)
    np.testing.assert_array_equal(got[:, :2], boxes)
    one = layer({"images": _images(rng, "channels_last", n=1)[0],
                 "bounding_boxes": {"boxes": boxes[0], "labels": labels[0]}})
    assert np.asarray(one["bounding_boxes"]["labels"]).shape == (4,)
    x = _images(rng, "channels_last")
    np.testing.assert_array_equal(layer(x).numpy(), x)                 # images alone pass
    with pytest.raises(ValueError, match="bounding_box_format"):
        layers.MaxNumBoundingBoxes(3)({"images": x, "bounding_boxes": {"boxes": boxes,
                                                                       "labels": labels}})
    with pytest.raises(ValueError, match="`max_number`"):
        layers.MaxNumBoundingBoxes(0)
    config = json.loads(json.dumps(layers.serialize(layer)))
    assert layers.deserialize(config).get_config() == layer.get_config()
