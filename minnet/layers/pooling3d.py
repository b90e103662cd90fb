"""Keras 3's 3-D pooling layers ``MaxPooling3D`` and ``AveragePooling3D``, composed from
Tensor index gathers (a window axis per spatial axis, then a reduction over the windows):
no kernel of their own, so they suit small volumes. ``"same"`` pads as Keras (the odd cell at
the end); as on Keras's torch backend, even pads are left out of the mean and uneven ones
repeat the edge values (which then count in the mean)."""
import numpy as np

from minnet import config
from minnet._checks import check_choice, check_int_tuple
from minnet.autograd import Tensor, cat
from minnet.layers.base import Layer

__all__ = ["MaxPooling3D", "AveragePooling3D"]


def _same_pads(length, pool, stride):
    out = -(-length // stride)
    total = max((out - 1) * stride + pool - length, 0)
    return total // 2, total - total // 2


class _Pooling3D(Layer):
    _max = False

    def __init__(self, pool_size=(2, 2, 2), strides=None, padding="valid", data_format=None,
                 **kwargs):
        super().__init__(**kwargs)
        self.pool_size = check_int_tuple("pool_size", pool_size, 3)
        self.strides = self.pool_size if strides is None else check_int_tuple("strides", strides, 3)
        self.padding = check_choice("padding", str(padding).lower(), ("valid", "same"))
        self.data_format = config.normalize_data_format(data_format)

    def _axes(self):
        return (1, 2, 3) if self.data_format == "channels_last" else (2, 3, 4)

    def _geometry(self, spatial):
        result = []
        for length, pool, stride in zip(spatial, self.pool_size, self.strides):
            before, after = _same_pads(length, pool, stride) if self.padding == "same" else (0, 0)
            out = (length + before + after - pool) // stride + 1
            result.append((before, after, out))
        return result

    def call(self, x, training=False):
        self._check_input(x, ndim=5)
        axes = self._axes()
        spatial = [x.shape[a] for a in axes]
        valid = Tensor(np.ones(x.shape, dtype=x.dtype))
        geometry = self._geometry(spatial)
        # Keras's torch backend: symmetric "same" pads are left out of the mean
        # (count_include_pad=False); uneven ones repeat the edge values, which then count.
        symmetric = all(before == after for before, after, _ in geometry)
        fill = -np.inf if self._max else 0.0
        for done, (axis, (before, after, out), pool, stride) in enumerate(zip(
                axes, geometry, self.pool_size, self.strides)):
            axis += done                  # each earlier axis became (windows, window)
            if (before or after) and not symmetric:
                length = x.shape[axis]
                edge = np.concatenate([np.zeros(before, np.int64), np.arange(length),
                                       np.full(after, length - 1, np.int64)])
                x = x[(slice(None),) * axis + (edge,)]
                valid = valid[(slice(None),) * axis + (edge,)]
            elif before or after:
                pads = []
                for count in (before, after):
                    shape = list(x.shape)
                    shape[axis] = count
                    pads.append(np.full(shape, fill, dtype=x.dtype))
                x = cat([Tensor(pads[0]), x, Tensor(pads[1])], dim=axis)
                valid = cat([Tensor(np.zeros_like(pads[0])), valid, Tensor(np.zeros_like(pads[1]))],
                            dim=axis)
            index = (np.arange(out)[:, None] * stride + np.arange(pool)[None, :]).reshape(-1)
            take = (slice(None),) * axis + (index,)
            x, valid = x[take], valid[take]
            shape = list(x.shape)
            shape[axis:axis + 1] = [out, pool]
            x, valid = x.reshape(tuple(shape)), valid.reshape(tuple(shape))
        windows = tuple(a + 1 + i for i, a in enumerate(self._axes()))
        if self._max:
            return x.amax(dim=windows)
        return x.sum(axis=windows) / valid.data.sum(axis=windows)

    def compute_output_shape(self, input_shape):
        shape = list(input_shape)
        axes = self._axes()
        spatial = [1 if shape[a] is None else shape[a] for a in axes]
        for a, (_, _, out) in zip(axes, self._geometry(spatial)):
            shape[a] = None if input_shape[a] is None else out
        return tuple(shape)

    def get_config(self):
        return {**super().get_config(), "pool_size": list(self.pool_size),
                "strides": list(self.strides), "padding": self.padding,
                "data_format": self.data_format}


class MaxPooling3D(_Pooling3D):
    """The maximum of each ``pool_size`` window of volumes ``(N, D, H, W, C)``."""
    _max = True


class AveragePooling3D(_Pooling3D):
    """The mean of each ``pool_size`` window (``"same"``: pads left out of the count)."""
