"""Keras 3's colour augmentation layers (names, arguments, defaults and numbers of Keras 3.15).

``RandomBrightness``, ``RandomGrayscale``, ``RandomInvert``, ``RandomSaturation``,
``RandomHue``, ``RandomColorDegeneration``, ``RandomColorJitter``, ``Solarization``,
``RandomPosterization``, ``AutoContrast``, ``Equalization``, ``RandomSharpness``,
``ContrastLimitedAdaptiveHistogramEqualization`` (CLAHE).

Each layer is split as Keras's are: ``_draw(shape)`` draws the random parameters for a
4-D batch of that shape (the dict, or array, of Keras's ``get_random_transformation``, same
keys and shapes) and ``_apply(images, params)`` applies them to a 4-D NumPy batch (Keras's
``transform_images``). ``call`` runs both in training only (``fit``, or
``layer(x, training=True)``) and returns its input in evaluation, as minnet's other
augmentation layers (``AutoContrast`` and CLAHE apply in both modes, as Keras's do). A
single image (rank 3) is treated as a batch of one. Random numbers come from minnet's generator
(``mn.manual_seed``) or from the layer's own generator when given a ``seed``.

These layers act on input data, in NumPy, in the layer's dtype: no gradient flows through
them (as ``RandomContrast`` and the other augmentation layers; they sit at a model's input).
The formulas are in ``docs/math/image.md``.
"""
import numbers

import numpy as np

from minnet._checks import invalid
from minnet.autograd import Tensor
from minnet.layers.preprocessing import ImageLayer

__all__ = ["RandomBrightness", "RandomGrayscale", "RandomInvert", "RandomSaturation",
           "RandomHue", "RandomColorDegeneration", "RandomColorJitter", "Solarization",
           "RandomPosterization", "AutoContrast", "Equalization", "RandomSharpness",
           "ContrastLimitedAdaptiveHistogramEqualization"]


# ---------------------------------------------------------------------------------------
# Keras's argument rules and colour conversions
# ---------------------------------------------------------------------------------------

def is_number(value):
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def plain_number(value):
    return value.item() if isinstance(value, np.generic) else value


def keras_factor(name, factor, bounds):
    """Keras's ``_set_factor``: a number ``f`` in ``bounds`` -> ``(max(-|f|, low), |f|)``; a
    pair -> sorted (refused only when entirely outside ``bounds``, as Keras)."""
    low, high = bounds
    if isinstance(factor, (tuple, list)) and len(factor) == 2 and all(map(is_number, factor)):
        if not (factor[0] > high or factor[1] < low):
            lower, upper = sorted(plain_number(v) for v in factor)
            return (lower, upper)
    elif is_number(factor) and low <= factor <= high:
        f = abs(plain_number(factor))
        return (max(-f, low), f)
    raise invalid(name, f"a number (or a list of two numbers) in the range [{low}, {high}]",
                  factor)


def keras_value_range(value_range, sort=True):
    """Keras's ``value_range``: two numbers (sorted, where Keras sorts them)."""
    if not (isinstance(value_range, (tuple, list)) and len(value_range) == 2
            and all(map(is_number, value_range))):
        raise invalid("value_range", "a list of two numbers", value_range)
    values = [plain_number(v) for v in value_range]
    return sorted(values) if sort else tuple(values)


def transform_value_range(images, original, target):
    """Keras's ``_transform_value_range``: map ``original`` linearly onto ``target``."""
    if original[0] == target[0] and original[1] == target[1]:
        return images
    cast = images.dtype.type
    low, high = cast(original[0]), cast(original[1])
    images = (images - low) / (high - low)
    return images * (cast(target[1]) - cast(target[0])) + cast(target[0])


def _channel_axis(data_format):
    return -1 if data_format == "channels_last" else 1


def rgb_to_grayscale(images, data_format):
    """``0.2989 R + 0.587 G + 0.114 B`` (Keras's weights), one channel kept."""
    axis = _channel_axis(data_format)
    if images.shape[axis] == 1:
        return images.copy()
    red, green, blue = np.moveaxis(images, axis, 0)
    return np.expand_dims(0.2989 * red + 0.587 * green + 0.114 * blue, axis)


def rgb_to_hsv(images, data_format):
    """Keras's ``ops.image.rgb_to_hsv`` (hue, saturation and value in [0, 1] for RGB in [0, 1])."""
    axis = _channel_axis(data_format)
    eps = np.finfo(images.dtype).eps
    images = np.where(np.abs(images) < eps, 0.0, images).astype(images.dtype, copy=False)
    red, green, blue = np.moveaxis(images, axis, 0)
    value = np.maximum(np.maximum(red, green), blue)
    spread = value - np.minimum(np.minimum(red, green), blue)
    safe_value = np.where(value > 0, value, 1.0)
    safe_spread = np.where(spread > 0, spread, 1.0)
    saturation = np.where(value > 0, spread / safe_value, 0.0)
    norm = 1.0 / (6.0 * safe_spread)
    hue = np.where(value == green, norm * (blue - red) + 2.0 / 6.0,
                   norm * (red - green) + 4.0 / 6.0)
    hue = np.where(value == red, norm * (green - blue), hue)
    hue = np.where(spread > 0, hue, 0.0) + (hue < 0.0).astype(hue.dtype)
    return np.stack([hue, saturation, value], axis=axis).astype(images.dtype, copy=False)


def hsv_to_rgb(images, data_format):
    """Keras's ``ops.image.hsv_to_rgb``."""
    axis = _channel_axis(data_format)
    hue, saturation, value = np.moveaxis(images, axis, 0)
    dh = np.remainder(hue, 1.0) * 6.0
    dr = np.clip(np.abs(dh - 3.0) - 1.0, 0.0, 1.0)
    dg = np.clip(2.0 - np.abs(dh - 2.0), 0.0, 1.0)
    db = np.clip(2.0 - np.abs(dh - 4.0), 0.0, 1.0)
    one_minus_s = 1.0 - saturation
    planes = [value * (one_minus_s + saturation * d) for d in (dr, dg, db)]
    return np.stack(planes, axis=axis).astype(images.dtype, copy=False)


def _column(values, dtype):
    """Per-image values as ``(n, 1, 1, 1)`` in ``dtype``."""
    return np.asarray(values).astype(dtype, copy=False).reshape(-1, 1, 1, 1)


# ---------------------------------------------------------------------------------------
# The shared base
# ---------------------------------------------------------------------------------------

class AugmentationLayer(ImageLayer):
    """``call`` = ``_apply(batch, _draw(batch.shape))`` in training, the identity otherwise."""

    _ALWAYS = False        # AutoContrast, CLAHE: applied in evaluation too, as Keras's
    _RGB = False           # needs three channels

    def call(self, x, training=False):
        self._check(x)
        if not (training or self._ALWAYS):
            return x
        a = np.asarray(x.data if isinstance(x, Tensor) else x).astype(self.dtype, copy=False)
        single = a.ndim == 3
        batch = a[None] if single else a
        if self._RGB and batch.shape[_channel_axis(self.data_format)] != 3:
            raise ValueError(f"Layer '{self.name}' needs RGB images (3 channels, "
                             f"{self.data_format}). Received shape {tuple(a.shape)}")
        y = self._apply(batch, self._draw(batch.shape))
        return Tensor(np.asarray(y, self.dtype)[0] if single else np.asarray(y, self.dtype))

    def _draw(self, shape):
        return None

    def _uniform(self, low, high, size):
        return self._rng().uniform(low, high, size=size).astype(self.dtype)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def _range_config(self):
        return {**self._config(), "value_range": list(self.value_range)}


class _FactorLayer(AugmentationLayer):
    """Keras's ``(factor, value_range, data_format, seed)`` layers: ``factor`` checked against
    ``_BOUNDS``, ``value_range`` sorted unless ``_SORTED`` is False."""

    _BOUNDS = (-1, 1)
    _SORTED = True

    def __init__(self, factor, value_range=(0, 255), data_format=None, seed=None, name=None,
                 dtype=None, trainable=True, **kwargs):
        super().__init__(data_format, seed, name, dtype, trainable, **kwargs)
        self.factor = keras_factor("factor", factor, self._BOUNDS)
        self.value_range = keras_value_range(value_range, sort=self._SORTED)

    def get_config(self):
        return {**super().get_config(), **self._range_config(), "factor": list(self.factor)}


# ---------------------------------------------------------------------------------------
# Brightness, grayscale, inversion
# ---------------------------------------------------------------------------------------

class RandomBrightness(AugmentationLayer):
    """Add ``delta * (high - low)`` to every pixel of an image, ``delta`` uniform in
    ``factor``, then clip to ``value_range`` (training only).

    Args:
        factor: float in [-1, 1] (``f`` -> ``(-f, f)``) or a ``(lower, upper)`` pair; -1 makes
            the image black, +1 white.
        value_range: the pixel range (default ``(0, 255)``).
        seed, data_format: see the module docstring.

    Example:
        >>> y = layers.RandomBrightness(0.2)(np.full((2, 4, 4, 3), 100.0), training=True)
    """

    def __init__(self, factor, value_range=(0, 255), seed=None, data_format=None, name=None,
                 dtype=None, trainable=True, **kwargs):
        super().__init__(data_format, seed, name, dtype, trainable, **kwargs)
        self.factor = keras_factor("factor", factor or 0.0, (-1, 1))
        self.value_range = keras_value_range(value_range)

    def _draw(self, shape):
        delta = self._uniform(*self.factor, size=(shape[0], 1, 1, 1))
        return {"rgb_delta": delta * np.asarray(self.value_range[1] - self.value_range[0],
                                                self.dtype)}

    def _apply(self, images, params):
        images = images + params["rgb_delta"].astype(images.dtype)
        return np.clip(images, self.value_range[0], self.value_range[1])

    def get_config(self):
        return {**super().get_config(), **self._range_config(), "factor": list(self.factor)}


class RandomGrayscale(AugmentationLayer):
    """Turn an image into grayscale (all channels ``0.2989 R + 0.587 G + 0.114 B``) with
    probability ``factor`` (training only).

    Args:
        factor: the probability, in [0, 1] (default 0.5).
        data_format, seed: see the module docstring.
    """

    def __init__(self, factor=0.5, data_format=None, seed=None, name=None, dtype=None,
                 trainable=True, **kwargs):
        super().__init__(data_format, seed, name, dtype, trainable, **kwargs)
        if not (is_number(factor) and 0 <= factor <= 1):
            raise invalid("factor", "a number between 0 and 1", factor)
        self.factor = plain_number(factor)

    def _draw(self, shape):
        return (self._uniform(0.0, 1.0, shape[0]) < self.factor).reshape(-1, 1, 1, 1)

    def _apply(self, images, should_apply):
        if images.shape[_channel_axis(self.data_format)] not in (1, 3):
            raise ValueError(f"Layer '{self.name}' needs 1 or 3 channels. Received shape "
                             f"{images.shape}")
        return np.where(should_apply, rgb_to_grayscale(images, self.data_format), images)

    def get_config(self):
        return {**super().get_config(), **self._config(), "factor": self.factor}


class RandomInvert(AugmentationLayer):
    """Replace an image by ``value_range[1] - x`` with probability ``p``, ``p`` itself
    uniform in ``factor`` (training only).

    Args:
        factor: float in [0, 1] (``f`` -> ``(0, f)``) or a pair (default 1.0: ``p ~ U(0, 1)``).
        value_range: default ``(0, 255)``; as Keras, the image becomes ``value_range[1] - x``.
        seed, data_format: see the module docstring.
    """

    def __init__(self, factor=1.0, value_range=(0, 255), seed=None, data_format=None,
                 name=None, dtype=None, trainable=True, **kwargs):
        super().__init__(data_format, seed, name, dtype, trainable, **kwargs)
        self.factor = keras_factor("factor", factor, (0, 1))
        self.value_range = keras_value_range(value_range, sort=False)

    def _draw(self, shape):
        probability = self._uniform(*self.factor, size=shape[0])
        return {"apply_inversion": self._uniform(0.0, 1.0, shape[0]) < probability}

    def _apply(self, images, params):
        apply = np.asarray(params["apply_inversion"]).reshape(-1, 1, 1, 1)
        return np.where(apply, self.value_range[1] - images, images)

    def get_config(self):
        return {**super().get_config(), **self._range_config(), "factor": list(self.factor)}


# ---------------------------------------------------------------------------------------
# Saturation, hue, colour degeneration, colour jitter
# ---------------------------------------------------------------------------------------

class RandomSaturation(_FactorLayer):
    """Scale the HSV saturation by ``f / (1 - f + 1e-7)``, ``f`` uniform in ``factor``
    (0.5 keeps the image, 0 makes it gray, 1 fully saturated), clipped to ``value_range``
    (training only). As Keras, the image goes to HSV as it is (not first scaled to [0, 1]).

    Args:
        factor: float in [-1, 1] (``f`` -> ``(-f, f)``, Keras's rule) or a pair.
        value_range: default ``(0, 255)``.
    """

    _BOUNDS = (-1, 1)
    _RGB = True

    def _draw(self, shape):
        factor = self._uniform(*self.factor, size=shape[0])
        return {"factor": factor / (1 - factor + np.asarray(1e-7, self.dtype))}

    def _apply(self, images, params):
        hsv = rgb_to_hsv(images, self.data_format)
        hue, saturation, value = np.moveaxis(hsv, _channel_axis(self.data_format), 0)
        factor = np.asarray(params["factor"]).astype(images.dtype).reshape(-1, 1, 1)
        saturation = np.clip(saturation * factor, self.value_range[0], self.value_range[1])
        hsv = np.stack([hue, saturation, value], axis=_channel_axis(self.data_format))
        return hsv_to_rgb(hsv, self.data_format)


class RandomHue(_FactorLayer):
    """Rotate the HSV hue by ``s * f / 2`` (``s`` a random sign, ``f`` uniform in ``factor``,
    a fraction of the colour wheel), working in [0, 1] and mapping back to ``value_range``
    (training only).

    Args:
        factor: float in [0, 1] (``f`` -> ``(0, f)``) or a pair.
        value_range: default ``(0, 255)``.
    """

    _BOUNDS = (0, 1)
    _SORTED = False
    _RGB = True

    def _draw(self, shape):
        sign = np.where(self._uniform(0.0, 1.0, shape[0]) > 0.5, -1.0, 1.0).astype(self.dtype)
        return {"factor": sign * self._uniform(*self.factor, size=shape[0]) * 0.5}

    def _apply(self, images, params):
        axis = _channel_axis(self.data_format)
        images = transform_value_range(images, self.value_range, (0, 1))
        hue, saturation, value = np.moveaxis(rgb_to_hsv(images, self.data_format), axis, 0)
        hue = hue + np.asarray(params["factor"]).astype(images.dtype).reshape(-1, 1, 1)
        hue = np.where(hue > 1.0, hue - 1.0, hue)
        hue = np.where(hue < 0.0, hue + 1.0, hue)
        rgb = hsv_to_rgb(np.stack([hue, saturation, value], axis=axis), self.data_format)
        return transform_value_range(np.clip(rgb, 0, 1), (0, 1), self.value_range)


class RandomColorDegeneration(_FactorLayer):
    """Blend each image towards its grayscale version: ``x + f * (gray(x) - x)``, ``f``
    uniform in ``factor``, clipped to ``value_range`` (training only).

    Args:
        factor: float in [-1, 1] (``f`` -> ``(-f, f)``, Keras's rule) or a pair.
    """

    _BOUNDS = (-1, 1)
    _RGB = True

    def _draw(self, shape):
        return {"factor": self._uniform(*self.factor, size=(shape[0], 1, 1, 1))}

    def _apply(self, images, params):
        factor = _column(params["factor"], images.dtype)
        images = images + factor * (rgb_to_grayscale(images, self.data_format) - images)
        return np.clip(images, self.value_range[0], self.value_range[1])


def adjust_contrast(images, factor, value_range, data_format):
    """Keras's RandomContrast: ``(x - mean) * f + mean`` per channel, clipped."""
    h, w = (1, 2) if data_format == "channels_last" else (2, 3)
    mean = images.mean(axis=h, keepdims=True).mean(axis=w, keepdims=True)
    out = (images - mean) * _column(factor, images.dtype) + mean
    return np.clip(out, value_range[0], value_range[1])


class RandomColorJitter(AugmentationLayer):
    """Keras's colour jitter: brightness, contrast, saturation and hue, each given factor
    applied in that order with its own random draw (training only).

    Args:
        value_range: default ``(0, 255)``.
        brightness_factor: as ``RandomBrightness``'s ``factor`` (None: skipped).
        contrast_factor: as ``RandomContrast``'s (Keras 3.15: ``f`` -> contrast in
            ``[1, 1 + f]``; a pair ``(lo, hi)`` -> ``[1 - lo, 1 + hi]``).
        saturation_factor: as ``RandomSaturation``'s; hue_factor: as ``RandomHue``'s.
        seed, data_format: see the module docstring (``data_format`` reaches every step;
            Keras 3.15 leaves its inner layers on the global setting, see
            ``docs/coming_from_keras.md``).
    """

    def __init__(self, value_range=(0, 255), brightness_factor=None, contrast_factor=None,
                 saturation_factor=None, hue_factor=None, seed=None, data_format=None,
                 name=None, dtype=None, trainable=True, **kwargs):
        super().__init__(data_format, seed, name, dtype, trainable, **kwargs)
        self.value_range = keras_value_range(value_range, sort=False)
        listed = [list(f) if isinstance(f, (tuple, list)) else f for f in
                  (brightness_factor, contrast_factor, saturation_factor, hue_factor)]
        self.brightness_factor, self.contrast_factor, self.saturation_factor, \
            self.hue_factor = listed
        self._steps = {}
        kwargs = dict(value_range=self.value_range, data_format=self.data_format, dtype=dtype)
        if brightness_factor is not None:
            self._steps["brightness"] = RandomBrightness(brightness_factor, **kwargs)
        if contrast_factor is not None:
            self._contrast = keras_factor("contrast_factor", contrast_factor, (0, 1))
            self._steps["contrast"] = None
        if saturation_factor is not None:
            self._steps["saturation"] = RandomSaturation(saturation_factor, **kwargs)
        if hue_factor is not None:
            self._steps["hue"] = RandomHue(hue_factor, **kwargs)
        for step in self._steps.values():
            if step is not None:
                step._rng = self._rng          # one generator for the whole jitter

    def _draw(self, shape):
        params = {}
        for key, step in self._steps.items():
            if key == "contrast":
                lower, upper = self._contrast
                params[key] = {"contrast_factor": self._uniform(
                    1.0 - lower, 1.0 + upper, size=(shape[0], 1, 1, 1))}
            else:
                params[key] = step._draw(shape)
        return params

    def _apply(self, images, params):
        for key, step in self._steps.items():
            if key == "contrast":
                images = adjust_contrast(images, params[key]["contrast_factor"],
                                          self.value_range, self.data_format)
            else:
                images = step._apply(images, params[key])
        return images

    def get_config(self):
        return {**super().get_config(), **self._range_config(),
                "brightness_factor": self.brightness_factor,
                "contrast_factor": self.contrast_factor,
                "saturation_factor": self.saturation_factor, "hue_factor": self.hue_factor}


# ---------------------------------------------------------------------------------------
# Solarization, posterization
# ---------------------------------------------------------------------------------------

def _unit_factor(name, factor):
    """Solarization's factors: a number ``f`` in [0, 1] -> ``(0, f)``; a pair -> sorted."""
    pair = isinstance(factor, (tuple, list)) and len(factor) == 2 \
        and all(is_number(v) and 0 <= v <= 1 for v in factor)
    if pair:
        return tuple(sorted(plain_number(v) for v in factor))
    if is_number(factor) and 0 <= factor <= 1:
        return (0, plain_number(factor))
    raise invalid(name, "a number (or a list of two numbers) in the range [0, 1]", factor)


class Solarization(AugmentationLayer):
    """Add ``a`` to each pixel (in [0, 255] units), clip, and invert (``255 - x``) the
    pixels at or above a threshold ``t`` (training only). ``a`` is uniform in
    ``[addition_factor[0], addition_factor[1] * 255]`` and ``t`` in
    ``[threshold_factor[0], threshold_factor[1] * 255]`` (Keras's rule: only the upper bound
    is scaled by 255).

    Args:
        addition_factor, threshold_factor: a number ``f`` in [0, 1] (-> ``(0, f)``) or a pair.
        value_range: default ``(0, 255)``.
    """

    def __init__(self, addition_factor=0.0, threshold_factor=0.0, value_range=(0, 255),
                 seed=None, data_format=None, name=None, dtype=None, trainable=True, **kwargs):
        super().__init__(data_format, seed, name, dtype, trainable, **kwargs)
        self.addition_factor = _unit_factor("addition_factor", addition_factor)
        self.threshold_factor = _unit_factor("threshold_factor", threshold_factor)
        self.value_range = keras_value_range(value_range)

    def _draw(self, shape):
        size = (shape[0], 1, 1, 1)
        add, threshold = self.addition_factor, self.threshold_factor
        return {"additions": self._uniform(add[0], add[1] * 255, size),
                "thresholds": self._uniform(threshold[0], threshold[1] * 255, size)}

    def _apply(self, images, params):
        images = transform_value_range(images, self.value_range, (0, 255))
        results = np.clip(images + _column(params["additions"], images.dtype), 0, 255)
        results = np.where(results < _column(params["thresholds"], images.dtype), results,
                           255 - results)
        return transform_value_range(results, (0, 255), self.value_range)

    def get_config(self):
        return {**super().get_config(), **self._range_config(),
                "addition_factor": list(self.addition_factor),
                "threshold_factor": list(self.threshold_factor)}


class RandomPosterization(_FactorLayer):
    """Keep the ``b`` highest bits of each 8-bit channel value, ``b`` an integer drawn in
    ``[factor[0], factor[1])`` (Keras's ``randint``; a single value when both are equal;
    training only).

    Args:
        factor: an int in [1, 8] (``f`` -> ``(1, f)``) or a pair.
        value_range: default ``(0, 255)``; values are mapped to [0, 255] and truncated to
            uint8 first.
    """

    _BOUNDS = (1, 8)

    def _draw(self, shape):
        low, high = self.factor
        if low != high:
            bits = self._rng().integers(int(low), int(high), size=shape[0])
        else:
            bits = np.full(shape[0], int(low))
        return {"shift_factor": (8 - bits).astype(np.uint8)}

    def _apply(self, images, params):
        shift = np.asarray(params["shift_factor"]).astype(np.uint8).reshape(-1, 1, 1, 1)
        dtype = images.dtype
        pixels = transform_value_range(images, self.value_range, (0, 255)).astype(np.uint8)
        pixels = np.left_shift(np.right_shift(pixels, shift), shift).astype(dtype)
        return transform_value_range(pixels, (0, 255), self.value_range)


# ---------------------------------------------------------------------------------------
# AutoContrast, Equalization, sharpness
# ---------------------------------------------------------------------------------------


class AutoContrast(AugmentationLayer):
    """Stretch each channel of each image to the full ``value_range``:
    ``(x - min) * 255 / (max - min)`` in [0, 255] units; a constant channel is left as it
    is. Deterministic, and applied in training and evaluation alike (as Keras).
    """

    _ALWAYS = True

    def __init__(self, value_range=(0, 255), data_format=None, name=None, dtype=None,
                 trainable=True, **kwargs):
        super().__init__(data_format, None, name, dtype, trainable, **kwargs)
        self.value_range = keras_value_range(value_range)

    def _apply(self, images, params=None):
        original = images
        images = transform_value_range(images, self.value_range, (0, 255))
        spatial = (1, 2) if self.data_format == "channels_last" else (2, 3)
        low = images.min(axis=spatial, keepdims=True)
        high = images.max(axis=spatial, keepdims=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            scale = 255.0 / (high - low)
            results = np.clip(images * scale + (-low * scale), 0.0, 255.0)
            results = transform_value_range(results, (0, 255), self.value_range)
        return np.where(np.isnan(results), original, results)

    def get_config(self):
        return {**super().get_config(), "data_format": self.data_format,
                "value_range": list(self.value_range)}


class Equalization(AugmentationLayer):
    """Histogram equalisation of each channel (``bins`` bins over [0, 255] after mapping
    ``value_range`` there; training only, as Keras). As Keras 3.15, a channel's histogram
    is taken over the whole batch it is called on (one image: that image's).
    """

    def __init__(self, value_range=(0, 255), bins=256, data_format=None, name=None,
                 dtype=None, trainable=True, **kwargs):
        super().__init__(data_format, None, name, dtype, trainable, **kwargs)
        if not (isinstance(bins, numbers.Integral) and not isinstance(bins, bool) and bins >= 2):
            raise invalid("bins", "an int >= 2", bins)
        self.bins = int(bins)
        self.value_range = keras_value_range(value_range)

    def _equalize(self, channel):
        low, high = self.value_range
        scale = 255 / (high - low)
        channel = channel * scale + (0 - low * scale)
        bins = self.bins
        f32 = np.float32
        scaled = (channel.astype(f32) - f32(0)) * (bins - 1) / (f32(255) - f32(0))
        index = np.clip(scaled.astype(np.int32), 0, bins - 1).ravel()
        hist = np.bincount(index, minlength=bins)
        if np.count_nonzero(hist) > 1:
            cdf = np.cumsum(hist)
            cdf_min = cdf[np.nonzero(cdf)[0][0]]
            denominator = cdf[-1] - cdf_min
            denominator = 1 if denominator == 0 else denominator
            table = ((cdf - cdf_min) * 255).astype(f32) / f32(denominator)
            table = np.clip(np.round(table), 0, 255)
            scaled = channel / 255.0 * (bins - 1)
            channel = table[np.clip(scaled, 0, bins - 1).astype(np.int32)].astype(channel.dtype)
        back = (high - low) / 255
        return channel * back + (low - 0 * back)

    def _apply(self, images, params=None):
        axis = _channel_axis(self.data_format)
        channels = [self._equalize(c) for c in np.moveaxis(images, axis, 0)]
        return np.stack(channels, axis=axis)

    def get_config(self):
        return {**super().get_config(), "data_format": self.data_format, "bins": self.bins,
                "value_range": list(self.value_range)}


class RandomSharpness(_FactorLayer):
    """Blend each image with its 3x3 smoothed version (weights 1/13 around, 5/13 in the
    centre, zero padding): ``x + (1 - 2f) * (smooth(x) - x)``, ``f`` uniform in ``factor``
    (0 blurs, 0.5 keeps, 1 sharpens), clipped to ``value_range`` (training only).

    Args:
        factor: float in [0, 1] (``f`` -> ``(0, f)``) or a pair.
    """

    _BOUNDS = (0, 1)

    def _draw(self, shape):
        return {"factor": self._uniform(*self.factor, size=shape[0])}

    def _apply(self, images, params):
        dtype = images.dtype
        sharpness = _column(np.asarray(params["factor"]).astype(dtype) * 2, dtype)
        h, w = (1, 2) if self.data_format == "channels_last" else (2, 3)
        pad = [(0, 0)] * 4
        pad[h] = pad[w] = (1, 1)
        padded = np.pad(images, pad)
        size_h, size_w = images.shape[h], images.shape[w]
        a, b = dtype.type(1.0 / 13.0), dtype.type(5.0 / 13.0)
        smooth = np.zeros_like(images)
        for dy in range(3):
            for dx in range(3):
                window = [slice(None)] * 4
                window[h], window[w] = slice(dy, dy + size_h), slice(dx, dx + size_w)
                smooth += (b if dy == dx == 1 else a) * padded[tuple(window)]
        images = images + (1.0 - sharpness) * (smooth - images)
        return np.clip(images, self.value_range[0], self.value_range[1])




class ContrastLimitedAdaptiveHistogramEqualization(AugmentationLayer):
    """CLAHE as Keras 3.15: equalise each channel over ``tile_grid_size`` tiles, each tile's
    histogram clipped at ``clip_limit * tile pixels / 256`` (the excess spread evenly over
    the 256 bins), the tiles' mappings blended bilinearly between tile centres.
    Deterministic, in training and evaluation alike (as Keras).

    Args:
        value_range: default ``(0, 255)`` (mapped to [0, 255], truncated to integers for the
            histograms).
        clip_limit: default 4.0 (0: no clipping, plain adaptive equalisation).
        tile_grid_size: ``(rows, columns)`` of tiles (default ``(8, 8)``); an image whose
            size is not a multiple is padded symmetrically first (Keras's torch backend
            repeats the edge instead, the same for a pad of one row or column).
    """

    _ALWAYS = True

    def __init__(self, value_range=(0, 255), clip_limit=4.0, tile_grid_size=(8, 8),
                 data_format=None, name=None, dtype=None, trainable=True, **kwargs):
        super().__init__(data_format, None, name, dtype, trainable, **kwargs)
        self.value_range = keras_value_range(value_range, sort=False)
        if not (is_number(clip_limit) and clip_limit >= 0):
            raise invalid("clip_limit", "a number >= 0", clip_limit)
        self.clip_limit = plain_number(clip_limit)
        grid = tuple(tile_grid_size) if isinstance(tile_grid_size, (tuple, list)) else ()
        if not (len(grid) == 2 and all(isinstance(g, numbers.Integral) and not isinstance(
                g, bool) and g > 0 for g in grid)):
            raise invalid("tile_grid_size", "a pair of ints > 0", tile_grid_size)
        self.tile_grid_size = (int(grid[0]), int(grid[1]))

    def _apply(self, images, params=None):
        dtype = images.dtype
        last = images if self.data_format == "channels_last" else images.transpose(0, 2, 3, 1)
        last = transform_value_range(last.astype(np.float32), self.value_range, (0, 255))
        out = transform_value_range(self._clahe(last), (0, 255), self.value_range)
        out = out.astype(dtype)
        return out if self.data_format == "channels_last" else out.transpose(0, 3, 1, 2)

    def _clahe(self, images):
        n, height, width, channels = images.shape
        grid_h, grid_w = self.tile_grid_size
        tile_h, tile_w = -(-height // grid_h), -(-width // grid_w)
        padded = np.pad(images, [(0, 0), (0, tile_h * grid_h - height),
                                 (0, tile_w * grid_w - width), (0, 0)], mode="symmetric")
        tiles = padded.reshape(n, grid_h, tile_h, grid_w, tile_w, channels)
        tiles = np.clip(tiles.transpose(0, 1, 3, 5, 2, 4).astype(np.int32), 0, 255)
        tiles = tiles.reshape(n, grid_h, grid_w, channels, tile_h * tile_w)
        flat = tiles.reshape(-1, tile_h * tile_w)
        offsets = np.arange(len(flat))[:, None] * 256
        hists = np.bincount((flat + offsets).ravel(), minlength=len(flat) * 256)
        hists = hists.reshape(n, grid_h, grid_w, channels, 256).astype(np.float32)
        if self.clip_limit > 0:
            limit = np.float32(self.clip_limit * (tile_h * tile_w) / 256.0)
            clipped = np.clip(hists, 0, limit)
            hists = clipped + (hists - clipped).sum(axis=-1, keepdims=True) / np.float32(256.0)
        cdf = np.cumsum(hists, axis=-1, dtype=np.float32)
        cdf_min = cdf.min(axis=-1, keepdims=True)
        denominator = np.float32(tile_h * tile_w) - cdf_min
        denominator = np.where(denominator == 0, np.float32(1), denominator)
        table = np.clip((cdf - cdf_min) * np.float32(255.0) / denominator, 0, 255)
        table = np.pad(table, [(0, 0), (1, 1), (1, 1), (0, 0), (0, 0)], mode="edge")

        def taps(size, tile, grid):
            position = (np.arange(size, dtype=np.float32) - tile / 2.0) / tile + 1.0
            low = np.floor(position)
            weight = position - low
            return (np.clip(low, 0, grid + 1).astype(np.int32),
                    np.clip(low + 1, 0, grid + 1).astype(np.int32), weight)

        y0, y1, wy = taps(tile_h * grid_h, tile_h, grid_h)
        x0, x1, wx = taps(tile_w * grid_w, tile_w, grid_w)
        pixels = np.clip(padded, 0, 255).astype(np.int32)
        b = np.arange(n)[:, None, None, None]
        c = np.arange(channels)[None, None, None, :]
        y0, y1, wy = y0[None, :, None, None], y1[None, :, None, None], wy[None, :, None, None]
        x0, x1, wx = x0[None, None, :, None], x1[None, None, :, None], wx[None, None, :, None]
        top = table[b, y0, x0, c, pixels] * (1.0 - wx) + table[b, y0, x1, c, pixels] * wx
        bottom = table[b, y1, x0, c, pixels] * (1.0 - wx) + table[b, y1, x1, c, pixels] * wx
        return (top * (1.0 - wy) + bottom * wy)[:, :height, :width, :]

    def get_config(self):
        return {**super().get_config(), "data_format": self.data_format,
                "value_range": list(self.value_range), "clip_limit": self.clip_limit,
                "tile_grid_size": list(self.tile_grid_size)}
