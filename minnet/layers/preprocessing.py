"""Preprocessing and augmentation layers (Keras's names, arguments and defaults).

* ``Rescaling(scale, offset)``, ``Normalization(axis, mean, variance)`` with ``adapt(data)``:
  differentiable tensor operations, active in training and evaluation alike.
* ``Resizing``, ``CenterCrop``: deterministic, in training and evaluation.
* ``RandomFlip``, ``RandomTranslation``, ``RandomRotation``, ``RandomZoom``, ``RandomCrop``,
  ``RandomContrast``: random augmentation **in training only** (``training=True``, as in
  ``fit``); in evaluation they return their input (``RandomCrop`` center-crops, as Keras).
  Their random numbers come from minnet's generator (``mn.manual_seed``), or from the
  layer's own generator when given a ``seed``.

The image work runs the Cython kernels of ``minnet._ext.image_kernels`` (bilinear or nearest
sampling, ``nogil``, ``prange`` over the batch, results independent of the thread count).
Augmentations act on the data only: no gradient flows through them (they sit at the input
of a model). Image layers take ``data_format`` (None: ``mn.config.image_data_format()``).
"""
import math
import numbers

import numpy as np

from minnet import _random, config
from minnet import functional as F
from minnet._checks import check_choice, check_float, check_int, invalid
from minnet._config import get_num_threads
from minnet._ext import image_kernels as _kernels
from minnet.autograd import Tensor, einsum
from minnet.layers.base import Layer

__all__ = ["Rescaling", "Normalization", "Resizing", "CenterCrop", "RandomFlip",
           "RandomTranslation", "RandomRotation", "RandomZoom", "RandomCrop", "RandomContrast"]

_FILL_MODES = ("reflect", "wrap", "constant", "nearest")
_INTERPOLATIONS = ("bilinear", "nearest")


# ---------------------------------------------------------------------------------------
# Rescaling and Normalization
# ---------------------------------------------------------------------------------------

class Rescaling(Layer):
    """``y = x * scale + offset`` (``Rescaling(1 / 255)`` maps pixels to [0, 1]).

    Example:
        >>> layers.Rescaling(1 / 255)(np.array([[255.0]])).numpy()
        array([[1.]], dtype=float32)
    """

    def __init__(self, scale, offset=0.0, name=None, dtype=None, trainable=True, **kwargs):
        super().__init__(name=name, dtype=dtype, trainable=trainable, **kwargs)
        self.scale = check_float("scale", scale)
        self.offset = check_float("offset", offset)

    def call(self, x, training=False):
        y = x * self.scale if self.scale != 1 else x
        return y + self.offset if self.offset else y

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        return {**super().get_config(), "scale": self.scale, "offset": self.offset}

    def extra_repr(self):
        return f"scale={self.scale}, offset={self.offset}"


class Normalization(Layer):
    """Feature-wise standardisation ``(x - mean) / sqrt(variance)`` (``invert=True``:
    ``x * sqrt(variance) + mean``).

    The statistics are given (``mean=``, ``variance=``) or learnt by ``adapt(data)`` (one
    pass over an array, or over an iterable of batches, merged in float64 with Chan et al.'s
    update, so a large mean does not cost the variance its precision). They are
    kept per index of ``axis`` (default -1: per feature / per channel of channels_last
    images) and reduced over every other axis. They are state (non-trainable weights), saved
    with the model. As Keras, the standard deviation is floored at ``sqrt(1e-7)``.

    Example:
        >>> norm = layers.Normalization()
        >>> norm.adapt(np.array([[1.0, 10.0], [3.0, 30.0]]))
        >>> norm(np.array([[2.0, 20.0]])).numpy()
        array([[0., 0.]], dtype=float32)
    """

    def __init__(self, axis=-1, mean=None, variance=None, invert=False, name=None, dtype=None,
                 trainable=True, **kwargs):
        super().__init__(name=name, dtype=dtype, trainable=trainable, **kwargs)
        if axis is None:
            axis = ()
        if isinstance(axis, (int, np.integer)) and not isinstance(axis, bool):
            axis = (int(axis),)
        if not isinstance(axis, (tuple, list)) or not all(
                isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in axis):
            raise invalid("axis", "an int, a tuple of ints or None", axis, TypeError)
        self.axis = tuple(int(a) for a in axis)
        if (mean is None) != (variance is None):
            raise ValueError("Give both `mean` and `variance`, or neither (then call adapt()).")
        self.input_mean = None if mean is None else np.asarray(mean, np.float64)
        self.input_variance = None if variance is None else np.asarray(variance, np.float64)
        if self.input_variance is not None and np.any(self.input_variance < 0):
            raise ValueError("Invalid value for argument `variance`: expected values >= 0.")
        self.invert = bool(invert)
        self.mean = None
        self.variance = None
        self._adapted = mean is not None

    def _stat_shape(self, input_shape):
        ndim = len(input_shape)
        axes = []
        for a in self.axis:
            if not -ndim <= a < ndim or a % ndim == 0:
                raise ValueError(f"Layer '{self.name}': axis {a} is out of range for inputs of "
                                 f"shape {tuple(input_shape)} (the batch axis is not allowed).")
            axes.append(a % ndim)
        shape = [1] * ndim
        for a in axes:
            if input_shape[a] is None:
                raise ValueError(f"Layer '{self.name}' needs the size of axis {a} to be known.")
            shape[a] = int(input_shape[a])
        return tuple(shape[1:]), axes

    def build(self, input_shape):
        shape, _ = self._stat_shape(tuple(input_shape))
        self.mean = self.add_weight("mean", shape, initializer="zeros", trainable=False)
        self.variance = self.add_weight("variance", shape, initializer="ones", trainable=False)
        if self.input_mean is not None:
            self.mean.data[...] = np.broadcast_to(self._fit(self.input_mean, shape), shape)
            self.variance.data[...] = np.broadcast_to(self._fit(self.input_variance, shape), shape)
        super().build(input_shape)

    def _fit(self, value, shape):
        """A user's mean/variance (scalar, per-axis vector, or full shape) in ``shape``."""
        if value.ndim == 0 or value.shape == shape:
            return value
        if value.size == int(np.prod(shape)):
            return value.reshape(shape)
        raise ValueError(f"Layer '{self.name}': mean/variance of shape {value.shape} do not fit "
                         f"the statistics shape {shape} (axis={self.axis}).")

    def adapt(self, data, batch_size=None, steps=None):
        """Compute the mean and variance of ``data`` (an array or an iterable of batches)."""
        batches = [data] if isinstance(data, (np.ndarray, Tensor, list)) else data
        count = 0
        mean = m2 = None
        for i, batch in enumerate(batches):
            if steps is not None and i >= steps:
                break
            if isinstance(batch, (tuple, list)) and not isinstance(data, list):
                batch = batch[0]
            array = np.asarray(batch.data if isinstance(batch, Tensor) else batch, np.float64)
            if array.ndim < 1 or not np.all(np.isfinite(array)):
                raise ValueError(f"Layer '{self.name}'.adapt: expected finite numeric data with a "
                                 f"batch axis. Received shape {array.shape}")
            if not self.built:
                self.build((None,) + array.shape[1:])
            shape, axes = self._stat_shape(array.shape)
            reduce = tuple(a for a in range(array.ndim) if a not in axes)
            n = int(np.prod([array.shape[a] for a in reduce]))
            if n == 0:
                continue
            batch_mean = array.mean(axis=reduce, keepdims=True)[0]
            batch_m2 = np.square(array - array.mean(axis=reduce, keepdims=True)).sum(
                axis=reduce, keepdims=True)[0]
            if mean is None:
                mean, m2 = batch_mean, batch_m2
            else:
                # Chan et al.'s merge of two (count, mean, M2) summaries: no E[x^2] - E[x]^2
                # cancellation, whatever the batch sizes.
                delta = batch_mean - mean
                total = count + n
                mean = mean + delta * (n / total)
                m2 = m2 + batch_m2 + delta * delta * (count * n / total)
            count += n
        if count == 0:
            raise ValueError(f"Layer '{self.name}'.adapt: received no data.")
        variance = m2 / count
        self.mean.data[...] = mean.reshape(self.mean.shape)
        self.variance.data[...] = variance.reshape(self.variance.shape)
        self.mean._bump_version()
        self.variance._bump_version()
        self._adapted = True

    def call(self, x, training=False):
        if not self._adapted and not self.built:
            raise ValueError(f"Layer '{self.name}' has no statistics: call adapt(data) or give "
                             f"mean= and variance=.")
        std = np.sqrt(np.maximum(self.variance.data, 1e-7)).astype(self.dtype)
        mean = self.mean.data
        if self.invert:
            return x * std + mean
        return (x - mean) * (1.0 / std).astype(self.dtype)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        config = {**super().get_config(), "axis": list(self.axis), "invert": self.invert}
        if self.input_mean is not None:
            config["mean"] = self.input_mean.tolist()
            config["variance"] = self.input_variance.tolist()
        return config


# ---------------------------------------------------------------------------------------
# Image helpers
# ---------------------------------------------------------------------------------------

class _ImageLayer(Layer):
    def __init__(self, data_format, seed, name, dtype, trainable, **kwargs):
        super().__init__(name=name, dtype=dtype, trainable=trainable, **kwargs)
        self.data_format = config.normalize_data_format(data_format)
        self.seed = None if seed is None else check_int("seed", seed, 0)
        self._generator = None if seed is None else np.random.default_rng(self.seed)

    def _rng(self):
        return self._generator if self._generator is not None else _random.generator()

    def _hw(self, shape):
        return (shape[1], shape[2]) if self.data_format == "channels_last" else (shape[2], shape[3])

    def _check(self, x):
        if x.ndim not in (3, 4):
            raise ValueError(f"Input 0 of layer '{self.name}' is incompatible with the layer: "
                             f"expected an image batch (ndim=4) or one image (ndim=3) in "
                             f"{self.data_format}. Full shape received: {tuple(x.shape)}")

    def _nhwc(self, x):
        """(array as contiguous NHWC for the kernels, channels, a function to undo it)."""
        a = np.asarray(x.data if isinstance(x, Tensor) else x)
        single = a.ndim == 3
        if single:
            a = a[None]
        if self.data_format == "channels_last":
            out = np.ascontiguousarray(a)
            channels = a.shape[3]

            def back(y):
                return y[0] if single else y
        else:
            n, c, h, w = a.shape
            out = np.ascontiguousarray(a).reshape(n * c, h, w, 1)
            channels = c

            def back(y):
                y = y.reshape(n, c, y.shape[1], y.shape[2])
                return y[0] if single else y
        return out, channels, back

    def _config(self):
        return {"data_format": self.data_format, "seed": self.seed}


ImageLayer = _ImageLayer   # the base of the layers in augmentation_color.py / augmentation_mix.py


def _factor_pair(name, value, low=-1.0, high=1.0, symmetric=True):
    """Keras's factor: a float ``f`` -> ``(-f, f)`` (or ``(f, f)``), or a ``(lower, upper)`` pair."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        v = check_float(name, value, low=0.0 if symmetric else low, high=high)
        pair = (-v, v) if symmetric else (v, v)
    elif isinstance(value, (tuple, list)) and len(value) == 2:
        pair = (check_float(name, value[0], low=low, high=high),
                check_float(name, value[1], low=low, high=high))
        if pair[0] > pair[1]:
            raise invalid(name, "lower <= upper", value)
    else:
        raise invalid(name, "a float or a (lower, upper) pair of floats", value, TypeError)
    return pair


def _warp(layer, x, matrices_for_batch):
    """Apply per-sample affine maps (output pixel -> input coordinates) to an image batch."""
    a = np.asarray(x.data if isinstance(x, Tensor) else x)
    single = a.ndim == 3
    batch = np.ascontiguousarray(a[None] if single else a)
    y = _kernels.affine_transform(batch, matrices_for_batch(batch.shape[0]),
                                  interpolation=layer.interpolation, fill_mode=layer.fill_mode,
                                  fill_value=layer.fill_value,
                                  channels_first=layer.data_format == "channels_first",
                                  n_threads=get_num_threads())
    return Tensor(y[0] if single else y)


class _Warp(_ImageLayer):
    def __init__(self, fill_mode, interpolation, fill_value, data_format, seed, name, dtype,
                 trainable, **kwargs):
        super().__init__(data_format, seed, name, dtype, trainable, **kwargs)
        self.fill_mode = check_choice("fill_mode", fill_mode, _FILL_MODES)
        self.interpolation = check_choice("interpolation", interpolation, _INTERPOLATIONS)
        self.fill_value = check_float("fill_value", fill_value)

    def call(self, x, training=False):
        self._check(x)
        if not training:
            return x
        h, w = self._hw(x.shape if x.ndim == 4 else (None,) + tuple(x.shape))
        return _warp(self, x, lambda n: self._matrices(n, h, w))

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def _config(self):
        return {**super()._config(), "fill_mode": self.fill_mode,
                "interpolation": self.interpolation, "fill_value": self.fill_value}


# ---------------------------------------------------------------------------------------
# Random augmentation
# ---------------------------------------------------------------------------------------

class RandomFlip(_ImageLayer):
    """Flip each image left-right and/or up-down with probability 1/2 (training only).

    Args:
        mode: ``"horizontal"``, ``"vertical"`` or ``"horizontal_and_vertical"`` (default).
        seed, data_format: see the module docstring.

    Example:
        >>> y = layers.RandomFlip("horizontal", data_format="channels_last")(
        ...     np.zeros((2, 8, 8, 3)), training=True)
    """

    def __init__(self, mode="horizontal_and_vertical", seed=None, data_format=None, name=None,
                 dtype=None, trainable=True, **kwargs):
        super().__init__(data_format, seed, name, dtype, trainable, **kwargs)
        self.mode = check_choice("mode", mode, ("horizontal", "vertical",
                                                "horizontal_and_vertical"))

    def call(self, x, training=False):
        self._check(x)
        if not training:
            return x
        a, channels, back = self._nhwc(x)
        n = a.shape[0] // (1 if self.data_format == "channels_last" else channels)
        rng = self._rng()
        fh = rng.random(n) < 0.5 if "horizontal" in self.mode else np.zeros(n, bool)
        fv = rng.random(n) < 0.5 if "vertical" in self.mode else np.zeros(n, bool)
        if self.data_format == "channels_first":
            fh, fv = np.repeat(fh, channels), np.repeat(fv, channels)
        return Tensor(back(_kernels.flip(a, fh, fv, n_threads=get_num_threads())))

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        return {**super().get_config(), **self._config(), "mode": self.mode}


class RandomTranslation(_Warp):
    """Shift each image by a random fraction of its height and width (training only).

    Args:
        height_factor: float ``f`` (shift in ``[-f, f] * height``) or ``(lower, upper)``.
        width_factor: the same for the width.
        fill_mode: ``"reflect"`` (default), ``"wrap"``, ``"constant"`` or ``"nearest"``.
        interpolation: ``"bilinear"`` (default) or ``"nearest"``.
        fill_value: value outside the image for ``fill_mode="constant"``.

    Example:
        >>> layer = layers.RandomTranslation(0.1, 0.1, data_format="channels_last")
    """

    def __init__(self, height_factor, width_factor, fill_mode="reflect",
                 interpolation="bilinear", seed=None, fill_value=0.0, data_format=None,
                 name=None, dtype=None, trainable=True, **kwargs):
        super().__init__(fill_mode, interpolation, fill_value, data_format, seed, name, dtype,
                         trainable, **kwargs)
        self.height_factor = _factor_pair("height_factor", height_factor)
        self.width_factor = _factor_pair("width_factor", width_factor)

    def _matrices(self, n, h, w):
        rng = self._rng()
        dy = rng.uniform(*self.height_factor, size=n) * h
        dx = rng.uniform(*self.width_factor, size=n) * w
        one, zero = np.ones(n), np.zeros(n)
        return np.stack([one, zero, -dx, zero, one, -dy], axis=1)

    def get_config(self):
        return {**super().get_config(), **self._config(),
                "height_factor": list(self.height_factor), "width_factor": list(self.width_factor)}


class RandomRotation(_Warp):
    """Rotate each image by a random angle about its centre (training only).

    Args:
        factor: fraction of a full turn: ``f`` gives angles in ``[-f, f] * 2 pi``; or a
            ``(lower, upper)`` pair.
        fill_mode, interpolation, fill_value, seed, data_format: as RandomTranslation.

    Example:
        >>> layer = layers.RandomRotation(0.1, data_format="channels_last")
    """

    def __init__(self, factor, fill_mode="reflect", interpolation="bilinear", seed=None,
                 fill_value=0.0, data_format=None, name=None, dtype=None, trainable=True,
                 **kwargs):
        super().__init__(fill_mode, interpolation, fill_value, data_format, seed, name, dtype,
                         trainable, **kwargs)
        self.factor = _factor_pair("factor", factor)

    def _matrices(self, n, h, w):
        theta = self._rng().uniform(*self.factor, size=n) * 2 * math.pi
        cos, sin = np.cos(theta), np.sin(theta)
        # Keras's rotation about the image centre, output pixel -> input coordinates.
        x_offset = ((w - 1) - (cos * (w - 1) - sin * (h - 1))) / 2.0
        y_offset = ((h - 1) - (sin * (w - 1) + cos * (h - 1))) / 2.0
        return np.stack([cos, -sin, x_offset, sin, cos, y_offset], axis=1)

    def get_config(self):
        return {**super().get_config(), **self._config(), "factor": list(self.factor)}


class RandomZoom(_Warp):
    """Zoom each image in or out by a random factor (training only).

    Args:
        height_factor: float ``f`` or ``(lower, upper)``: the height is scaled by
            ``1 + u``, ``u`` uniform in the range; as Keras 3, a positive value zooms
            OUT (the image gets smaller), a negative one zooms in.
        width_factor: the same for the width; None (default) keeps the aspect ratio.
        fill_mode, interpolation, fill_value, seed, data_format: as RandomTranslation.
    """

    def __init__(self, height_factor, width_factor=None, fill_mode="reflect",
                 interpolation="bilinear", seed=None, fill_value=0.0, data_format=None,
                 name=None, dtype=None, trainable=True, **kwargs):
        super().__init__(fill_mode, interpolation, fill_value, data_format, seed, name, dtype,
                         trainable, **kwargs)
        self.height_factor = _factor_pair("height_factor", height_factor)
        self.width_factor = None if width_factor is None else _factor_pair("width_factor",
                                                                           width_factor)

    def _matrices(self, n, h, w):
        rng = self._rng()
        zy = 1.0 + rng.uniform(*self.height_factor, size=n)
        zx = zy if self.width_factor is None else 1.0 + rng.uniform(*self.width_factor, size=n)
        zero = np.zeros(n)
        x_offset = (w - 1) / 2.0 * (1.0 - zx)
        y_offset = (h - 1) / 2.0 * (1.0 - zy)
        return np.stack([zx, zero, x_offset, zero, zy, y_offset], axis=1)

    def get_config(self):
        return {**super().get_config(), **self._config(),
                "height_factor": list(self.height_factor),
                "width_factor": None if self.width_factor is None else list(self.width_factor)}


class RandomContrast(_ImageLayer):
    """Scale each image's deviation from its per-channel mean by a random factor in
    ``[1 - lower, 1 + upper]``, then clip to ``value_range`` (training only).

    Args:
        factor: float in [0, 1] or ``(lower, upper)``.
        value_range: the valid pixel range (default ``(0, 255)``, Keras 3's).
    """

    def __init__(self, factor, value_range=(0, 255), seed=None, data_format=None, name=None,
                 dtype=None, trainable=True, **kwargs):
        super().__init__(data_format, seed, name, dtype, trainable, **kwargs)
        if isinstance(factor, numbers.Real) and not isinstance(factor, bool):
            factor = (factor, factor)
        self.factor = _factor_pair("factor", factor, low=0.0, high=1.0)
        if not (isinstance(value_range, (tuple, list)) and len(value_range) == 2
                and value_range[0] < value_range[1]):
            raise invalid("value_range", "a (low, high) pair with low < high", value_range)
        self.value_range = (float(value_range[0]), float(value_range[1]))

    def call(self, x, training=False):
        self._check(x)
        if not training:
            return x
        a = np.asarray(x.data)
        single = a.ndim == 3
        batch = a[None] if single else a
        n = batch.shape[0]
        lower, upper = self.factor
        factors = self._rng().uniform(1.0 - lower, 1.0 + upper, size=n).astype(self.dtype)
        spatial = (1, 2) if self.data_format == "channels_last" else (2, 3)
        mean = batch.mean(axis=spatial, keepdims=True)
        y = (batch - mean) * factors.reshape(n, 1, 1, 1) + mean
        y = np.clip(y, *self.value_range).astype(self.dtype, copy=False)
        return Tensor(y[0] if single else y)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        return {**super().get_config(), **self._config(), "factor": list(self.factor),
                "value_range": list(self.value_range)}


# ---------------------------------------------------------------------------------------
# Resizing and cropping
# ---------------------------------------------------------------------------------------

class Resizing(_ImageLayer):
    """Resize images to ``(height, width)`` (bilinear or nearest; differentiable for bilinear).

    Args:
        height, width: the output size.
        interpolation: ``"bilinear"`` (default; half-pixel centres), ``"nearest"`` or
            ``"bicubic"`` (Keras's, on its torch backend ``F.interpolate(mode="bicubic",
            align_corners=False)``: Keys' cubic with ``a = -0.75``, edge pixels repeated; a
            separable linear map, differentiable; see ``docs/math/image.md``).
        crop_to_aspect_ratio: center-crop to the target aspect ratio first (default False).
    """

    def __init__(self, height, width, interpolation="bilinear", crop_to_aspect_ratio=False,
                 data_format=None, name=None, dtype=None, trainable=True, **kwargs):
        super().__init__(data_format, None, name, dtype, trainable, **kwargs)
        self.height = check_int("height", height, 1, 65536)
        self.width = check_int("width", width, 1, 65536)
        self.interpolation = check_choice("interpolation", interpolation,
                                          _INTERPOLATIONS + ("bicubic",))
        self.crop_to_aspect_ratio = bool(crop_to_aspect_ratio)

    def call(self, x, training=False):
        self._check(x)
        single = x.ndim == 3
        if single:
            x = x.reshape((1,) + tuple(x.shape))
        if self.crop_to_aspect_ratio:
            h, w = self._hw(x.shape)
            ch = min(h, int(round(w * self.height / self.width)))
            cw = min(w, int(round(h * self.width / self.height)))
            x = _center_crop(self, x, ch, cw)
        if self.interpolation == "bilinear":
            y = F.resize_bilinear2d(x, (self.height, self.width), self.data_format)
        elif self.interpolation == "bicubic":
            h, w = self._hw(x.shape)
            rows = bicubic_matrix(h, self.height, x.dtype)
            cols = bicubic_matrix(w, self.width, x.dtype)
            if self.data_format == "channels_last":
                y = einsum("pw,nowc->nopc", cols, einsum("oh,nhwc->nowc", rows, x))
            else:
                y = einsum("pw,ncow->ncop", cols, einsum("oh,nchw->ncow", rows, x))
        else:
            y = _resize_nearest(self, x, self.height, self.width)
        return y.reshape(tuple(y.shape[1:])) if single else y

    def compute_output_shape(self, input_shape):
        shape = list(input_shape)
        offset = 0 if len(shape) == 4 else -1
        if self.data_format == "channels_last":
            shape[1 + offset], shape[2 + offset] = self.height, self.width
        else:
            shape[2 + offset], shape[3 + offset] = self.height, self.width
        return tuple(shape)

    def get_config(self):
        return {**super().get_config(), "height": self.height, "width": self.width,
                "interpolation": self.interpolation,
                "crop_to_aspect_ratio": self.crop_to_aspect_ratio,
                "data_format": self.data_format}


def bicubic_matrix(size, out_size, dtype="float64", a=-0.75):
    """The ``(out_size, size)`` matrix of PyTorch's bicubic resize along one axis
    (``align_corners=False``): output ``i`` reads source ``s = (i + 0.5) * size / out_size - 0.5``
    through the four taps ``floor(s) - 1 ... floor(s) + 2`` (clamped to the edge) with Keys'
    cubic-convolution weights."""
    scale = size / out_size
    src = (np.arange(out_size) + 0.5) * scale - 0.5
    base = np.floor(src)
    t = src - base
    weights = np.stack([
        ((a * (t + 1) - 5 * a) * (t + 1) + 8 * a) * (t + 1) - 4 * a,
        ((a + 2) * t - (a + 3)) * t * t + 1,
        ((a + 2) * (1 - t) - (a + 3)) * (1 - t) * (1 - t) + 1,
        ((a * (2 - t) - 5 * a) * (2 - t) + 8 * a) * (2 - t) - 4 * a], axis=1)
    matrix = np.zeros((out_size, size))
    for tap in range(4):
        index = np.clip(base.astype(np.int64) - 1 + tap, 0, size - 1)
        np.add.at(matrix, (np.arange(out_size), index), weights[:, tap])
    return matrix.astype(dtype)


def _resize_nearest(layer, x, oh, ow):
    """Nearest resize (Keras/TF half-pixel rule: source = floor((dst + 0.5) * in / out))."""
    h, w = layer._hw(x.shape)
    rows = np.minimum(np.floor((np.arange(oh) + 0.5) * h / oh).astype(np.int64), h - 1)
    cols = np.minimum(np.floor((np.arange(ow) + 0.5) * w / ow).astype(np.int64), w - 1)
    a = np.asarray(x.data)
    if layer.data_format == "channels_last":
        y = a[:, rows][:, :, cols]
    else:
        y = a[:, :, rows][:, :, :, cols]
    return Tensor(np.ascontiguousarray(y))


def _center_crop(layer, x, ch, cw):
    h, w = layer._hw(x.shape)
    top, left = (h - ch) // 2, (w - cw) // 2
    if layer.data_format == "channels_last":
        return x[:, top:top + ch, left:left + cw, :]
    return x[:, :, top:top + ch, left:left + cw]


class CenterCrop(_ImageLayer):
    """Crop the central ``(height, width)`` window; an image smaller than it is first
    resized (bilinear) so that the window fits, keeping the aspect ratio, as Keras does."""

    def __init__(self, height, width, data_format=None, name=None, dtype=None, trainable=True,
                 **kwargs):
        super().__init__(data_format, None, name, dtype, trainable, **kwargs)
        self.height = check_int("height", height, 1, 65536)
        self.width = check_int("width", width, 1, 65536)

    def call(self, x, training=False):
        self._check(x)
        single = x.ndim == 3
        if single:
            x = x.reshape((1,) + tuple(x.shape))
        y = _crop_or_resize(self, x, self.height, self.width)
        return y.reshape(tuple(y.shape[1:])) if single else y

    def compute_output_shape(self, input_shape):
        return Resizing.compute_output_shape(self, input_shape)

    def get_config(self):
        return {**super().get_config(), "height": self.height, "width": self.width,
                "data_format": self.data_format}


def _crop_or_resize(layer, x, th, tw):
    h, w = layer._hw(x.shape)
    if h == 0 or w == 0:
        raise ValueError(f"Layer '{layer.name}' cannot crop or resize empty images: expected "
                         f"height and width >= 1. Received: input shape {tuple(x.shape)} "
                         f"(data_format='{layer.data_format}')")
    if h < th or w < tw:
        scale = max(th / h, tw / w)
        nh, nw = max(th, int(math.ceil(h * scale))), max(tw, int(math.ceil(w * scale)))
        x = F.resize_bilinear2d(x, (nh, nw), layer.data_format)
    return _center_crop(layer, x, th, tw)


class RandomCrop(_ImageLayer):
    """Crop a random ``(height, width)`` window of each image (training); in evaluation the
    central window (as ``CenterCrop``). Images smaller than the window are resized first.

    Example:
        >>> layers.RandomCrop(24, 24, data_format="channels_last")(
        ...     np.zeros((2, 32, 32, 3)), training=True).shape
        (2, 24, 24, 3)
    """

    def __init__(self, height, width, seed=None, data_format=None, name=None, dtype=None,
                 trainable=True, **kwargs):
        super().__init__(data_format, seed, name, dtype, trainable, **kwargs)
        self.height = check_int("height", height, 1, 65536)
        self.width = check_int("width", width, 1, 65536)

    def call(self, x, training=False):
        self._check(x)
        single = x.ndim == 3
        if single:
            x = x.reshape((1,) + tuple(x.shape))
        h, w = self._hw(x.shape)
        if not training or h < self.height or w < self.width:
            y = _crop_or_resize(self, x, self.height, self.width)
        else:
            a = np.asarray(x.data)
            n = a.shape[0]
            rng = self._rng()
            tops = rng.integers(0, h - self.height + 1, size=n)
            lefts = rng.integers(0, w - self.width + 1, size=n)
            if self.data_format == "channels_last":
                out = np.empty((n, self.height, self.width, a.shape[3]), a.dtype)
                for i in range(n):
                    out[i] = a[i, tops[i]:tops[i] + self.height, lefts[i]:lefts[i] + self.width]
            else:
                out = np.empty((n, a.shape[1], self.height, self.width), a.dtype)
                for i in range(n):
                    out[i] = a[i, :, tops[i]:tops[i] + self.height, lefts[i]:lefts[i] + self.width]
            y = Tensor(out)
        return y.reshape(tuple(y.shape[1:])) if single else y

    def compute_output_shape(self, input_shape):
        return Resizing.compute_output_shape(self, input_shape)

    def get_config(self):
        return {**super().get_config(), **self._config(), "height": self.height,
                "width": self.width}
