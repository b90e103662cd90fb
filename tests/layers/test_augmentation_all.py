"""All of Keras 3's augmentation layers minnet has: float64 end to end, saved and loaded
inside a model (minnet's file and the .keras file), training-only in fit."""
import numpy as np
import pytest

import minnet as mn
from minnet import layers

ARGS = {"RandomBrightness": (0.2,), "RandomSaturation": (0.5,), "RandomHue": (0.3,),
        "RandomColorDegeneration": (0.5,), "RandomPosterization": (4,),
        "RandomSharpness": (0.5,)}
DETERMINISTIC = ("AutoContrast", "Equalization", "ContrastLimitedAdaptiveHistogramEqualization")
NAMES = ["RandomBrightness", "RandomGrayscale", "RandomInvert", "RandomSaturation", "RandomHue",
         "RandomColorDegeneration", "RandomColorJitter", "Solarization", "RandomPosterization",
         "AutoContrast", "Equalization", "RandomSharpness", "MixUp", "CutMix", "RandomErasing",
         "RandomGaussianBlur", "RandomShear", "RandAugment", "RandomPerspective", "AugMix",
         "RandomElasticTransform", "ContrastLimitedAdaptiveHistogramEqualization"]


def _layer(name, **kwargs):
    if name not in DETERMINISTIC:
        kwargs.setdefault("seed", 1)
    if name == "RandomColorJitter":
        kwargs.update(brightness_factor=0.2, contrast_factor=0.3, saturation_factor=0.4,
                      hue_factor=0.2)
    return getattr(layers, name)(*ARGS.get(name, ()), data_format="channels_last", **kwargs)


@pytest.mark.parametrize("name", NAMES)
def test_float64_end_to_end(name):
    x = np.random.default_rng(0).uniform(0, 255, (3, 16, 16, 3))
    y64 = _layer(name, dtype="float64")(x, training=True).numpy()
    y32 = _layer(name)(x.astype(np.float32), training=True).numpy()
    assert y64.dtype == np.float64 and y32.dtype == np.float32
    np.testing.assert_allclose(y64, y32, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("extension", ["minnet", "keras"])
def test_saved_and_loaded_inside_a_model(tmp_path, extension):
    if extension == "keras":
        pytest.importorskip("h5py")
    model = mn.Sequential([mn.layers.Input((16, 16, 3))] + [_layer(n) for n in NAMES
                                                            if n not in ("MixUp", "CutMix")]
                          + [layers.Flatten(), layers.Dense(2)])
    path = tmp_path / f"model.{extension}"
    model.save(str(path))
    again = mn.models.load_model(str(path))
    assert [type(layer) for layer in again.layers] == [type(layer) for layer in model.layers]
    for ours, theirs in zip(model.layers, again.layers):
        assert ours.get_config() == {**theirs.get_config(), "name": ours.name}
    x = np.random.default_rng(1).uniform(0, 255, (2, 16, 16, 3)).astype(np.float32)
    np.testing.assert_allclose(again.predict(x), model.predict(x), rtol=1e-5)
