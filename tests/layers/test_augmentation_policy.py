"""RandAugment and AugMix: every operation against Keras 3.15 on Keras's own drawn
parameters (both layouts), draws, seeding, errors, configs."""
import json
import random

import numpy as np
import pytest

from minnet import layers

FORMATS = ["channels_last", "channels_first"]


def _images(rng, data_format, n=4, h=6, w=7, c=3):
    x = rng.uniform(0, 255, (n, h, w, c)).astype(np.float32)
    return x if data_format == "channels_last" else x.transpose(0, 3, 1, 2).copy()


def _numpy(value):
    return value.detach().cpu().numpy().copy() if hasattr(value, "detach") else np.asarray(value)


def _nested_numpy(value):
    if isinstance(value, dict):
        return {k: _nested_numpy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_nested_numpy(v) for v in value]
    if value is None or isinstance(value, str):
        return value
    return _numpy(value)


@pytest.mark.slow_once
@pytest.mark.parametrize("data_format", FORMATS)
def test_rand_augment_every_operation_matches_keras(keras, rng, data_format):
    import torch
    kwargs = dict(factor=(0.1, 0.4), num_ops=2, data_format=data_format)
    theirs = keras.layers.RandAugment(seed=3, **kwargs)
    ours = layers.RandAugment(**kwargs)
    # On its torch backend, Keras's RandomBrightness adds in place (`images += delta`), so
    # inside RandAugment (which runs every operation and keeps the picked one) it brightens
    # the batch on every pass; the meaning on Keras's other backends, and minnet's, is to run
    # only the picked operations. Give it a copy, as its other backends do.
    # Likewise its torch affine_transform swaps the entries of the rotation matrix it is
    # given in place, so a rotation run (and not kept) in one pass is wrong in the next.
    brightness = theirs.random_brightness.transform_images
    theirs.random_brightness.transform_images = \
        lambda images, *args, **kw: brightness(images.clone(), *args, **kw)
    rotation = theirs.random_rotation.transform_images
    theirs.random_rotation.transform_images = lambda images, value, *args, **kw: rotation(
        images, {**value, "rotation_matrix": value["rotation_matrix"].clone()}, *args, **kw)
    images = _images(rng, data_format)
    drawn = theirs.get_random_transformation(images, training=True)
    params = _nested_numpy(drawn)
    for first in range(11):
        second = (first + 4) % 11
        if 9 in (first, second) and data_format == "channels_first":
            continue        # Keras's AutoContrast there: see test_augmentation_color.py
        drawn["layer_idxes"] = torch.tensor([first, second])
        params["layer_idxes"] = np.array([first, second])
        expected = _numpy(theirs.transform_images(torch.from_numpy(images.copy()), drawn))
        got = ours._apply(images.copy(), params)
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=3e-3,
                                   err_msg=f"{ours._OPERATIONS[first]}, "
                                           f"{ours._OPERATIONS[second]}")


def test_rand_augment_draws_and_applies(rng):
    x = _images(rng, "channels_last")
    layer = layers.RandAugment(num_ops=3, seed=0, data_format="channels_last")
    params = layers.RandAugment.from_config(layer.get_config())._draw(x.shape)
    assert params["layer_idxes"].shape == (3,) and set(params["transforms"]) == set(
        layer._OPERATIONS)
    translations = layers.RandAugment(factor=0.3, seed=1)._draw((4000, 10, 20, 3))[
        "transforms"]["random_translation"]["translations"]
    assert translations.min() >= 0 and translations[:, 0].max() <= 0.3 * 20 + 1e-4
    picks = np.concatenate([layers.RandAugment(seed=s)._draw(x.shape)["layer_idxes"]
                            for s in range(300)])
    assert set(picks.tolist()) == set(range(11))
    again = layers.RandAugment.from_config(layer.get_config())
    np.testing.assert_array_equal(layer(x, training=True).numpy(),
                                  again(x, training=True).numpy())
    np.testing.assert_array_equal(layers.RandAugment(num_ops=0)(x, training=True).numpy(), x)
    with pytest.raises(TypeError, match="`num_ops`"):
        layers.RandAugment(num_ops=1.5)
    with pytest.raises(ValueError, match="`factor`"):
        layers.RandAugment(factor=1.5)
    config = json.loads(json.dumps(layers.serialize(layer)))
    assert layers.deserialize(config).get_config() == layer.get_config()



# Posterization, solarization and equalization are step functions of their input: after
# another operation (whose float32 result may differ from Keras's in the last bit, e.g. a
# bilinear sample) a pixel on a step's edge can land on the other side, a difference of a
# whole level. Each operation is compared on its own above (RandAugment's test); here chains
# that put one after another operation are left out.
_STEPWISE = ("random_posterization", "solarization", "equalization")


@pytest.mark.slow_once
@pytest.mark.parametrize("data_format", FORMATS)
@pytest.mark.parametrize("all_ops", [True, False])
def test_aug_mix_matches_keras(keras, rng, data_format, all_ops):
    import torch
    kwargs = dict(factor=(0.1, 0.4), num_chains=3, chain_depth=2, alpha=0.8, all_ops=all_ops,
                  data_format=data_format)
    theirs = keras.layers.AugMix(seed=2, **kwargs)
    ours = layers.AugMix(**kwargs)
    images = _images(rng, data_format)
    compared = 0
    for seed in range(60):
        random.seed(seed)                   # Keras picks the chains' steps with `random`
        drawn = theirs.get_random_transformation(images, training=True)
        params = _nested_numpy(drawn)
        names = {step["layer_name"] for chain in params["chain_transforms"] for step in chain}
        if data_format == "channels_first" and "auto_contrast" in names:
            continue        # Keras's AutoContrast there: see test_augmentation_color.py
        if any(step["layer_name"] in _STEPWISE for chain in params["chain_transforms"]
               for step in chain[1:]):
            continue        # a step function after another operation: see _STEPWISE
        expected = _numpy(theirs.transform_images(torch.from_numpy(images.copy()), drawn))
        got = ours._apply(images.copy(), params)
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=3e-3, err_msg=str(names))
        compared += 1
    assert compared >= 3


def test_aug_mix_draws_and_applies(rng):
    x = _images(rng, "channels_last")
    layer = layers.AugMix(seed=0, data_format="channels_last")
    params = layers.AugMix.from_config(layer.get_config())._draw(x.shape)
    np.testing.assert_allclose(params["chain_mixing_weights"].sum(), 1.0, rtol=1e-6)
    assert len(params["chain_transforms"]) == 3
    assert all(len(chain) <= 3 for chain in params["chain_transforms"])
    again = layers.AugMix.from_config(layer.get_config())
    y = layer(x, training=True).numpy()
    np.testing.assert_array_equal(y, again(x, training=True).numpy())
    assert y.min() >= 0 and y.max() <= 255 and not np.array_equal(y, x)
    np.testing.assert_array_equal(layer(x, training=False).numpy(), x)
    keep = {"chain_mixing_weights": np.array([1.0], np.float32),
            "weight_sample": np.float32(0.25), "chain_transforms": [[]]}
    np.testing.assert_allclose(layers.AugMix(num_chains=1)._apply(x, keep), x, rtol=1e-6)
    names = set()
    for s in range(200):
        draw = layers.AugMix(all_ops=False, seed=s)._draw(x.shape)
        names |= {step["layer_name"] for chain in draw["chain_transforms"] for step in chain}
    assert names == set(layers.AugMix._ALL[:7])
    weights = np.stack([layers.AugMix(alpha=1.0, seed=s)._draw(x.shape)["chain_mixing_weights"]
                        for s in range(600)])
    np.testing.assert_allclose(weights.mean(axis=0), 1 / 3, atol=0.03)   # Dirichlet(1, 1, 1)
    for build, argument in [(lambda: layers.AugMix(num_chains=0), "num_chains"),
                            (lambda: layers.AugMix(chain_depth=0), "chain_depth"),
                            (lambda: layers.AugMix(alpha=-1), "alpha"),
                            (lambda: layers.AugMix(factor=3), "factor")]:
        with pytest.raises((ValueError, TypeError), match=f"`{argument}`"):
            build()
    config = json.loads(json.dumps(layers.serialize(layer)))
    assert layers.deserialize(config).get_config() == layer.get_config()
