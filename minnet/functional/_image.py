"""Differentiable image resampling and padding: nearest upsampling, bilinear resizing and
zero padding, in either layout (``data_format="channels_last"`` ``(N, H, W, C)`` or
``"channels_first"`` ``(N, C, H, W)``), plus PyTorch's ``interpolate`` and ``pad`` spellings.

A channels_first batch is handed to the channels_last kernels of ``minnet._ext.image_kernels`` as
``(N * C, H, W, 1)`` (the same memory): one kernel serves both layouts. The math is in
``docs/math/image.md``.
"""
import numbers

import numpy as np

from minnet._checks import check_int_tuple
from minnet._config import get_num_threads
from minnet._ext import image_kernels as _kernels
from minnet.autograd import Function
from minnet.functional._common import as_float_input

__all__ = ["check_output_size", "upsample_nearest2d", "resize_bilinear2d", "pad2d", "interpolate",
           "UpsampleNearest", "ResizeBilinear", "Pad2d"]


def _as_nhwc(a, channels_last):
    """A view of ``a`` as a contiguous ``(N', H, W, C')`` batch for the kernels."""
    a = np.ascontiguousarray(a)
    if channels_last:
        return a
    n, c, h, w = a.shape
    return a.reshape(n * c, h, w, 1)


def _from_nhwc(a, shape_nchw, channels_last):
    return a if channels_last else a.reshape(shape_nchw)


class UpsampleNearest(Function):
    """``y[.., i, j, ..] = x[.., i // sh, j // sw, ..]``; backward sums each ``sh x sw`` block."""

    @staticmethod
    def forward(ctx, x, sh, sw, channels_last):
        n = x.shape[0]
        ctx.meta = (sh, sw, channels_last, x.shape)
        y = _kernels.upsample_nearest(_as_nhwc(x, channels_last), sh, sw,
                                      n_threads=get_num_threads())
        if channels_last:
            return y
        return y.reshape(n, x.shape[1], x.shape[2] * sh, x.shape[3] * sw)

    @staticmethod
    def backward(ctx, grad):
        sh, sw, channels_last, shape = ctx.meta
        dx = _kernels.upsample_nearest_backward(_as_nhwc(grad.astype(grad.dtype, copy=False),
                                                         channels_last), sh, sw,
                                                n_threads=get_num_threads())
        return _from_nhwc(dx, shape, channels_last), None, None, None


class ResizeBilinear(Function):
    """Bilinear resize with half-pixel centres; backward spreads each gradient over its taps."""

    @staticmethod
    def forward(ctx, x, out_h, out_w, channels_last):
        ctx.meta = (channels_last, x.shape)
        y = _kernels.resize_bilinear(_as_nhwc(x, channels_last), out_h, out_w,
                                     n_threads=get_num_threads())
        if channels_last:
            return y
        return y.reshape(x.shape[0], x.shape[1], out_h, out_w)

    @staticmethod
    def backward(ctx, grad):
        channels_last, shape = ctx.meta
        h, w = (shape[1], shape[2]) if channels_last else (shape[2], shape[3])
        dx = _kernels.resize_bilinear_backward(_as_nhwc(grad, channels_last), h, w,
                                               n_threads=get_num_threads())
        return _from_nhwc(dx, shape, channels_last), None, None, None


class Pad2d(Function):
    """Zero padding of the two spatial axes; backward is the slice of the gradient."""

    @staticmethod
    def forward(ctx, x, pads, channels_last):
        (top, bottom), (left, right) = pads
        spatial = ((top, bottom), (left, right))
        width = ((0, 0),) + (spatial + ((0, 0),) if channels_last else ((0, 0),) + spatial)
        ctx.meta = (pads, channels_last, x.shape)
        return np.pad(x, width)

    @staticmethod
    def backward(ctx, grad):
        ((top, _), (left, _)), channels_last, shape = ctx.meta
        h, w = (shape[1], shape[2]) if channels_last else (shape[2], shape[3])
        if channels_last:
            dx = grad[:, top:top + h, left:left + w, :]
        else:
            dx = grad[:, :, top:top + h, left:left + w]
        return np.ascontiguousarray(dx), None, None


# Refuse outputs past this many elements with a ValueError before allocating (2**34 float32
# values are 64 GiB): an absurd size argument must not end in a MemoryError.
_MAX_ELEMENTS = 2 ** 34


def check_output_size(shape, what):
    if float(np.prod([float(s) for s in shape])) > _MAX_ELEMENTS:
        raise ValueError(f"Invalid value for argument `{what}`: the output would have shape "
                         f"{tuple(shape)}, more than {_MAX_ELEMENTS} values.")


def _check_4d(x, name="x"):
    if x.ndim != 4:
        raise ValueError(f"Invalid value for argument `{name}`: expected a 4-D image batch. "
                         f"Received shape {tuple(x.shape)}")


def upsample_nearest2d(x, size, data_format="channels_first"):
    """Repeat rows ``size[0]`` times and columns ``size[1]`` times (integer factors)."""
    x = as_float_input(x)
    _check_4d(x)
    sh, sw = size
    check_output_size((x.shape[0], x.shape[1] * sh, x.shape[2] * sw, x.shape[3]), "size")
    return UpsampleNearest.apply(x, int(sh), int(sw), data_format == "channels_last")


def resize_bilinear2d(x, out_size, data_format="channels_first"):
    """Bilinear resize to ``out_size = (height, width)``, half-pixel centres
    (PyTorch's ``align_corners=False``, Keras's ``Resizing``/``UpSampling2D``)."""
    x = as_float_input(x)
    _check_4d(x)
    oh, ow = out_size
    check_output_size((x.shape[0], x.shape[1], oh, ow), "size")
    return ResizeBilinear.apply(x, int(oh), int(ow), data_format == "channels_last")


def pad2d(x, padding, data_format="channels_first"):
    """Zero-pad the spatial axes by ``((top, bottom), (left, right))``."""
    x = as_float_input(x)
    _check_4d(x)
    (top, bottom), (left, right) = padding
    n, a, b, c = x.shape
    check_output_size((n, a + top + bottom, b + left + right, c) if data_format == "channels_last"
                      else (n, a, b + top + bottom, c + left + right), "padding")
    return Pad2d.apply(x, ((int(top), int(bottom)), (int(left), int(right))),
                       data_format == "channels_last")


def interpolate(x, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """PyTorch's ``F.interpolate`` for 4-D ``(N, C, H, W)`` inputs, modes ``"nearest"``
    (integer scale factors) and ``"bilinear"`` (``align_corners=False``).

    Example:
        >>> F.interpolate(mn.tensor(np.ones((1, 1, 2, 2))), scale_factor=2).shape
        (1, 1, 4, 4)
    """
    x = as_float_input(x)
    _check_4d(x)
    if mode not in ("nearest", "bilinear"):
        raise ValueError(f"Invalid value for argument `mode`: expected 'nearest' or 'bilinear'. "
                         f"Received: mode={mode!r}")
    if align_corners:
        raise ValueError("Invalid value for argument `align_corners`: minnet implements "
                         "align_corners=False only. Received: align_corners=True")
    if (size is None) == (scale_factor is None):
        raise ValueError("Give exactly one of `size` and `scale_factor`.")
    h, w = x.shape[2], x.shape[3]
    if size is not None:
        oh, ow = check_int_tuple("size", size, 2, error=ValueError)
        if mode == "nearest":
            if oh % h or ow % w:
                raise ValueError(f"Invalid value for argument `size`: nearest mode needs integer "
                                 f"multiples of the input size {(h, w)}. Received: size={size}")
            return upsample_nearest2d(x, (oh // h, ow // w))
        return resize_bilinear2d(x, (int(oh), int(ow)))
    sh, sw = (scale_factor, scale_factor) if isinstance(scale_factor, numbers.Real) else scale_factor
    if mode == "nearest":
        if sh != int(sh) or sw != int(sw) or sh < 1 or sw < 1:
            raise ValueError(f"Invalid value for argument `scale_factor`: nearest mode needs "
                             f"integers >= 1. Received: scale_factor={scale_factor}")
        return upsample_nearest2d(x, (int(sh), int(sw)))
    return resize_bilinear2d(x, (int(np.floor(h * sh)), int(np.floor(w * sw))))
