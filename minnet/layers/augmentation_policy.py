"""Keras 3's augmentation policies: ``RandAugment`` and ``AugMix``.

Both pick among the same operations (shear, translation, rotation, brightness, colour
degeneration, contrast, sharpness, posterization, solarization, auto-contrast,
equalization), each given Keras 3.15's ``(0, f)`` factor, and keep Keras's split between
``_draw(shape)`` (Keras's ``get_random_transformation``, the same nested dict) and
``_apply(images, params)`` (its ``transform_images``). Training only; NumPy on input data,
no gradient, as the other augmentation layers. Formulas: ``docs/math/image.md``.
"""
import numpy as np

from minnet._checks import check_choice, check_int, invalid
from minnet.layers.augmentation_color import (AugmentationLayer, AutoContrast, Equalization,
                                              RandomBrightness, RandomColorDegeneration,
                                              RandomPosterization, RandomSharpness,
                                              Solarization, adjust_contrast, is_number,
                                              keras_factor, keras_value_range, plain_number)
from minnet.layers.augmentation_mix import RandomShear, affine, image_size

__all__ = ["RandAugment", "AugMix"]


class _Policy(AugmentationLayer):
    """The operations, built from ``factor`` ``(lo, hi)`` as Keras builds them."""

    def _build_operations(self, dtype):
        self.fill_mode, self.fill_value = "reflect", 0.0       # Keras's defaults, fixed
        common = dict(value_range=self.value_range, data_format=self.data_format, dtype=dtype)
        self._steps = {
            "random_shear": RandomShear(self.factor, self.factor, self.interpolation,
                                        data_format=self.data_format, dtype=dtype),
            "random_brightness": RandomBrightness(self.factor, **common),
            "random_color_degeneration": RandomColorDegeneration(self.factor, **common),
            "random_sharpness": RandomSharpness(self.factor, **common),
            "random_posterization": RandomPosterization(max(1, int(8 * self.factor[1])),
                                                        **common),
            "solarization": Solarization(self.factor, self.factor, **common),
            "auto_contrast": AutoContrast(**common),
            "equalization": Equalization(**common)}
        for step in self._steps.values():
            step._rng = self._rng          # one generator for the whole layer

    def _draw_operation(self, key, shape):
        n = shape[0]
        height, width = image_size(shape, self.data_format)
        lower, upper = self.factor
        if key == "random_translation":
            dy = self._uniform(lower, upper, (n, 1)) * height
            dx = self._uniform(lower, upper, (n, 1)) * width
            return {"translations": np.concatenate([dx, dy], axis=1)}
        if key == "random_rotation":
            angle = self._uniform(lower * 360.0, upper * 360.0, n)
            return {"rotation_matrix": _rotation_matrices(angle, height, width)}
        if key == "random_contrast":
            return {"contrast_factor": self._uniform(1.0 - lower, 1.0 + upper, (n, 1, 1, 1))}
        return self._steps[key]._draw(shape)

    def _operation(self, key, images, params):
        if key == "random_translation":
            t = np.asarray(params["translations"], np.float64).reshape(-1, 2)
            one, zero = np.ones(len(t)), np.zeros(len(t))
            return affine(self, images, np.stack([one, zero, -t[:, 0], zero, one, -t[:, 1]], 1))
        if key == "random_rotation":
            matrices = np.asarray(params["rotation_matrix"], np.float64).reshape(-1, 8)[:, :6]
            return affine(self, images, matrices)
        if key == "random_contrast":
            return adjust_contrast(images, params["contrast_factor"], self.value_range,
                                   self.data_format)
        return np.asarray(self._steps[key]._apply(images, params), self.dtype)


class RandAugment(_Policy):
    """RandAugment (Cubuk et al., 2019) as Keras 3.15: ``num_ops`` operations, each picked
    uniformly among 11 (shear, translation, rotation, brightness, colour degeneration,
    contrast, sharpness, posterization, solarization, auto-contrast, equalization) and
    applied to the whole batch, each with magnitude range ``factor`` (training only).

    Keras's rules, kept: every operation takes ``factor`` ``(0, f)`` as its own factor (so
    shears, translations and rotations go one way only, the brightness only up, the contrast
    in ``[1, 1 + f]``), posterization keeps ``max(1, int(8 f))`` bits at most, the
    operations' parameters are drawn once per call (an operation picked twice repeats them).

    Args:
        value_range: default ``(0, 255)``.
        num_ops: how many operations (default 2).
        factor: float in [0, 1] (``f`` -> ``(0, f)``) or a pair (default 0.5).
        interpolation: for the geometric operations, ``"bilinear"`` (default) or ``"nearest"``.
    """

    _OPERATIONS = ("random_shear", "random_translation", "random_rotation",
                   "random_brightness", "random_color_degeneration", "random_contrast",
                   "random_sharpness", "random_posterization", "solarization", "auto_contrast",
                   "equalization")

    def __init__(self, value_range=(0, 255), num_ops=2, factor=0.5, interpolation="bilinear",
                 seed=None, data_format=None, name=None, dtype=None, trainable=True, **kwargs):
        super().__init__(data_format, seed, name, dtype, trainable, **kwargs)
        self.value_range = keras_value_range(value_range, sort=False)
        self.num_ops = check_int("num_ops", num_ops, 0)
        self.factor = keras_factor("factor", factor, (0, 1))
        self.interpolation = check_choice("interpolation", interpolation,
                                          ("nearest", "bilinear"))
        self._build_operations(dtype)

    def _draw(self, shape):
        picks = self._rng().integers(0, len(self._OPERATIONS), size=self.num_ops)
        params = {key: self._draw_operation(key, shape) for key in self._OPERATIONS}
        return {"transforms": params, "layer_idxes": picks}

    def _apply(self, images, params):
        for pick in np.asarray(params["layer_idxes"]).ravel()[:self.num_ops]:
            key = self._OPERATIONS[int(pick)]
            images = self._operation(key, images, params["transforms"][key])
        return images

    def get_config(self):
        return {**super().get_config(), **self._range_config(), "num_ops": self.num_ops,
                "factor": list(self.factor), "interpolation": self.interpolation}


class AugMix(_Policy):
    """AugMix (Hendrycks et al., 2020) as Keras 3.15: ``num_chains`` chains of up to
    ``chain_depth`` random operations each (a step may be skipped), mixed with Dirichlet
    weights, then blended with the image: ``m x + (1 - m) sum_c w_c chain_c(x)``,
    ``m ~ Beta(alpha, alpha)``, ``w ~ Dirichlet(alpha)``, clipped to ``value_range``
    (training only). One draw of everything per batch.

    Args:
        value_range: default ``(0, 255)``.
        num_chains: default 3; chain_depth: default 3 (each step one of the operations or
            none, uniformly).
        factor: float in [0, 1] (``f`` -> ``(0, f)``) or a pair (default 0.3), as RandAugment.
        alpha: the Beta and Dirichlet parameter (default 1.0).
        all_ops: True (default): the 11 operations; False: without brightness, colour
            degeneration, contrast and sharpness (AugMix's paper keeps those out).
        interpolation: for the geometric operations.
    """

    _ALL = ("random_shear", "random_translation", "random_rotation", "random_posterization",
            "solarization", "auto_contrast", "equalization", "random_brightness",
            "random_color_degeneration", "random_contrast", "random_sharpness")

    def __init__(self, value_range=(0, 255), num_chains=3, chain_depth=3, factor=0.3,
                 alpha=1.0, all_ops=True, interpolation="bilinear", seed=None,
                 data_format=None, name=None, dtype=None, trainable=True, **kwargs):
        super().__init__(data_format, seed, name, dtype, trainable, **kwargs)
        self.value_range = keras_value_range(value_range, sort=False)
        self.num_chains = check_int("num_chains", num_chains, 1)
        self.chain_depth = check_int("chain_depth", chain_depth, 1)
        self.factor = keras_factor("factor", factor, (0, 1))
        if not (is_number(alpha) and alpha > 0):
            raise invalid("alpha", "a number > 0", alpha)
        self.alpha = plain_number(alpha)
        self.all_ops = bool(all_ops)
        self.interpolation = check_choice("interpolation", interpolation,
                                          ("nearest", "bilinear"))
        self._operations = self._ALL if self.all_ops else self._ALL[:7]
        self._build_operations(dtype)

    def _draw(self, shape):
        rng = self._rng()
        gamma = rng.gamma(self.alpha, size=self.num_chains).astype(self.dtype)
        chains = []
        for _ in range(self.num_chains):
            steps = []
            for _ in range(self.chain_depth):
                pick = int(rng.integers(0, len(self._operations) + 1))
                if pick < len(self._operations):
                    key = self._operations[pick]
                    steps.append({"layer_name": key,
                                  "transformation": self._draw_operation(key, shape)})
            chains.append(steps)
        return {"chain_mixing_weights": gamma / gamma.sum(),
                "weight_sample": np.asarray(rng.beta(self.alpha, self.alpha), self.dtype),
                "chain_transforms": chains}

    def _apply(self, images, params):
        weights = np.asarray(params["chain_mixing_weights"]).astype(images.dtype)
        keep = np.asarray(params["weight_sample"]).astype(images.dtype)
        mixed = np.zeros_like(images)
        for weight, chain in zip(weights, params["chain_transforms"]):
            chained = images.copy()
            for step in chain:
                chained = self._operation(step["layer_name"], chained, step["transformation"])
            mixed += chained * weight
        images = keep * images + (1 - keep) * mixed
        return np.clip(images, self.value_range[0], self.value_range[1])

    def get_config(self):
        return {**super().get_config(), **self._range_config(), "num_chains": self.num_chains,
                "chain_depth": self.chain_depth, "factor": list(self.factor),
                "alpha": self.alpha, "all_ops": self.all_ops,
                "interpolation": self.interpolation}


def _rotation_matrices(angle, height, width):
    """Keras's ``_compute_affine_matrix`` for a rotation by ``angle`` degrees about the
    centre: ``(n, 8)`` rows ``a0 a1 a2 b0 b1 b2 0 0``."""
    theta = np.asarray(angle) * np.asarray(np.pi / 180.0, np.asarray(angle).dtype)
    cx, cy = 0.5 * (width - 1), 0.5 * (height - 1)
    cos, sin = np.cos(theta), np.sin(theta)
    zero = np.zeros_like(cos)
    return np.stack([cos, -sin, cx - cx * cos + cy * sin, sin, cos, cy - cx * sin - cy * cos,
                     zero, zero], axis=1)
