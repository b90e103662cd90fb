"""Keras 3's 1-D and 3-D resampling layers: ``UpSampling1D/3D``, ``ZeroPadding1D/3D``,
``Cropping1D/3D``, composed from Tensor indexing and concatenation (the 2-D ones run
kernels, in ``reshaping.py``). Math in ``docs/math/simple_layers.md``."""
import numbers

import numpy as np

from minnet import config
from minnet._checks import invalid
from minnet.autograd import Tensor, cat
from minnet.layers.base import Layer

__all__ = ["UpSampling1D", "UpSampling3D", "ZeroPadding1D", "ZeroPadding3D", "Cropping1D",
           "Cropping3D"]


def _is_count(v):
    return isinstance(v, numbers.Integral) and not isinstance(v, bool) and v >= 0


def _pairs(name, value, n):
    """Keras's per-axis ``(before, after)`` spec: an int, n ints, or n pairs."""
    if _is_count(value):
        return ((int(value),) * 2,) * n
    if isinstance(value, (list, tuple)) and len(value) == n:
        if all(_is_count(v) for v in value):
            return tuple((int(v), int(v)) for v in value)
        if all(isinstance(v, (list, tuple)) and len(v) == 2 and all(_is_count(u) for u in v)
               for v in value):
            return tuple((int(a), int(b)) for a, b in value)
    if n == 1 and isinstance(value, (list, tuple)) and len(value) == 2 and all(
            _is_count(v) for v in value):
        return ((int(value[0]), int(value[1])),)
    raise invalid(name, f"an int >= 0, {n} such ints or {n} pairs (before, after)", value)


def _sizes(name, value, n):
    if isinstance(value, numbers.Integral) and not isinstance(value, bool) and value >= 1:
        return (int(value),) * n
    if isinstance(value, (list, tuple)) and len(value) == n and all(
            isinstance(v, numbers.Integral) and not isinstance(v, bool) and v >= 1 for v in value):
        return tuple(int(v) for v in value)
    raise invalid(name, f"an int >= 1 or {n} such ints", value)


class _Spatial(Layer):
    _ndim = None          # spatial axes

    def __init__(self, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.data_format = config.normalize_data_format(data_format)

    def _axes(self):
        first = 1 if self.data_format == "channels_last" else 2
        return tuple(range(first, first + self._ndim))

    def _check(self, x):
        self._check_input(x, ndim=self._ndim + 2)

    def get_config(self):
        return {**super().get_config(), "data_format": self.data_format}


class _UpSampling(_Spatial):
    def __init__(self, size, data_format=None, **kwargs):
        super().__init__(data_format, **kwargs)
        self.size = _sizes("size", size, self._ndim)

    def call(self, x, training=False):
        self._check(x)
        for axis, factor in zip(self._axes(), self.size):
            if factor > 1:
                index = np.repeat(np.arange(x.shape[axis]), factor)
                x = x[(slice(None),) * axis + (index,)]
        return x

    def compute_output_shape(self, input_shape):
        shape = list(input_shape)
        for axis, factor in zip(self._axes(), self.size):
            shape[axis] = None if shape[axis] is None else shape[axis] * factor
        return tuple(shape)

    def get_config(self):
        return {**super().get_config(), "size": list(self.size)}


class UpSampling1D(_UpSampling):
    """Repeat each step ``size`` times: ``(N, T, C)`` -> ``(N, T * size, C)``."""
    _ndim = 1

    def __init__(self, size=2, **kwargs):
        super().__init__(size, "channels_last", **kwargs)

    def get_config(self):
        config_ = super().get_config()
        config_.pop("data_format")
        config_["size"] = self.size[0]
        return config_


class UpSampling3D(_UpSampling):
    """Repeat along depth, rows and columns: nearest-neighbour upsampling of volumes."""
    _ndim = 3

    def __init__(self, size=(2, 2, 2), data_format=None, **kwargs):
        super().__init__(size, data_format, **kwargs)


class _Padding(_Spatial):
    def __init__(self, padding, data_format=None, **kwargs):
        super().__init__(data_format, **kwargs)
        self.padding = _pairs("padding", padding, self._ndim)

    def call(self, x, training=False):
        self._check(x)
        for axis, (before, after) in zip(self._axes(), self.padding):
            parts = []
            for count in (before, after):
                shape = list(x.shape)
                shape[axis] = count
                parts.append(Tensor(np.zeros(shape, dtype=x.dtype)))
            x = cat([parts[0], x, parts[1]], dim=axis)
        return x

    def compute_output_shape(self, input_shape):
        shape = list(input_shape)
        for axis, (a, b) in zip(self._axes(), self.padding):
            shape[axis] = None if shape[axis] is None else shape[axis] + a + b
        return tuple(shape)

    def get_config(self):
        return {**super().get_config(), "padding": [list(p) for p in self.padding]}


class ZeroPadding1D(_Padding):
    """Zeros before and after the steps: ``padding`` an int or ``(before, after)``."""
    _ndim = 1

    def __init__(self, padding=1, data_format=None, **kwargs):
        super().__init__(padding, data_format, **kwargs)

    def get_config(self):
        config_ = super().get_config()
        config_["padding"] = list(self.padding[0])
        return config_


class ZeroPadding3D(_Padding):
    """Zeros around volumes: ``((d1, d2), (h1, h2), (w1, w2))``, 3 ints or one int."""
    _ndim = 3

    def __init__(self, padding=((1, 1), (1, 1), (1, 1)), data_format=None, **kwargs):
        super().__init__(padding, data_format, **kwargs)


class _Cropping(_Spatial):
    def __init__(self, cropping, data_format=None, **kwargs):
        super().__init__(data_format, **kwargs)
        self.cropping = _pairs("cropping", cropping, self._ndim)

    def call(self, x, training=False):
        self._check(x)
        index = [slice(None)] * x.ndim
        for axis, (before, after) in zip(self._axes(), self.cropping):
            if before + after >= x.shape[axis]:
                raise ValueError(f"Layer '{self.name}': cropping {(before, after)} leaves nothing "
                                 f"of axis {axis} (size {x.shape[axis]}).")
            index[axis] = slice(before, x.shape[axis] - after)
        return x[tuple(index)]

    def compute_output_shape(self, input_shape):
        shape = list(input_shape)
        for axis, (a, b) in zip(self._axes(), self.cropping):
            shape[axis] = None if shape[axis] is None else shape[axis] - a - b
        return tuple(shape)

    def get_config(self):
        return {**super().get_config(), "cropping": [list(p) for p in self.cropping]}


class Cropping1D(_Cropping):
    """Remove ``cropping = (before, after)`` steps of ``(N, T, C)``."""
    _ndim = 1

    def __init__(self, cropping=(1, 1), **kwargs):
        super().__init__(cropping, "channels_last", **kwargs)

    def get_config(self):
        config_ = super().get_config()
        config_.pop("data_format")
        config_["cropping"] = list(self.cropping[0])
        return config_


class Cropping3D(_Cropping):
    """Remove planes from the borders of volumes (``((d1, d2), (h1, h2), (w1, w2))``)."""
    _ndim = 3

    def __init__(self, cropping=((1, 1), (1, 1), (1, 1)), data_format=None, **kwargs):
        super().__init__(cropping, data_format, **kwargs)
