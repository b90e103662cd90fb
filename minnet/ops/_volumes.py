"""3-D convolution and pooling for ``ops.conv``/``depthwise_conv``/``max_pool``/``average_pool``
on rank-5 inputs, and the 3-D patches of ``image.extract_patches_3d``: the windows are
gathered by index (``(N, out_d, out_h, out_w, kd, kh, kw, C)``), then contracted with the
kernel by ``einsum`` or reduced, so everything is differentiable through the autograd.
minnet has no 3-D kernel in ``_ext``; this path suits the small volumes of coursework.
"""
import numpy as np

from ._dispatch import to_float
from . import _np_shape
from minnet.autograd import Tensor, cat, einsum

__all__ = ["patches_3d", "same_pads", "conv3d", "pool3d", "conv_transpose3d_full"]


def same_pads(sizes, kernel, strides, dilation):
    """TensorFlow's "same" padding per axis, as ``(before, after)``."""
    pads = []
    for size, k, s, d in zip(sizes, kernel, strides, dilation):
        effective = (k - 1) * d + 1
        total = max(0, ((size + s - 1) // s - 1) * s + effective - size)
        pads.append((total // 2, total - total // 2))
    return pads


def patches_3d(x, kernel, strides, dilation):
    """Windows of a channels_last ``(N, D, H, W, C)`` tensor: ``(N, od, oh, ow, kd, kh, kw, C)``."""
    index = []
    for n, k, s, d in zip(x.shape[1:4], kernel, strides, dilation):
        out = (n - (k - 1) * d - 1) // s + 1
        index.append(np.arange(out)[:, None] * s + np.arange(k)[None, :] * d)
    di, hi, wi = index
    grid = (di[:, None, None, :, None, None], hi[None, :, None, None, :, None], wi[None, None, :, None, None, :])
    return x[(slice(None),) + tuple(np.broadcast_arrays(*grid))]


def _channels_last(x, data_format):
    return x.permute(0, 2, 3, 4, 1) if data_format == "channels_first" else x


def _back(x, data_format):
    return x.permute(0, 4, 1, 2, 3) if data_format == "channels_first" else x


def _pad(x, pads, mode="constant"):
    if all(p == (0, 0) for p in pads):
        return x
    return _np_shape.pad(x, ((0, 0), *pads, (0, 0)), mode=mode)


def conv3d(inputs, kernel, strides, padding, data_format, dilation, groups):
    """``kernel`` in Keras's layout ``(kd, kh, kw, C / groups, F)``."""
    x = _channels_last(inputs, data_format)
    ksize = tuple(kernel.shape[:3])
    if padding == "same":
        x = _pad(x, same_pads(x.shape[1:4], ksize, strides, dilation))
    p = patches_3d(x, ksize, strides, dilation)                   # n, od, oh, ow, a, b, c, C
    if groups == 1:
        out = einsum("nxyzabcs,abcsf->nxyzf", p, kernel)
    else:
        cg, f = kernel.shape[3], kernel.shape[4]
        p = p.reshape(*p.shape[:7], groups, cg)
        k = kernel.reshape(*ksize, cg, groups, f // groups)
        out = einsum("nxyzabcgs,abcsgf->nxyzgf", p, k)
        out = out.reshape(*out.shape[:4], f)
    return _back(out, data_format)


def pool3d(inputs, pool, strides, padding, data_format, kind):
    x = _channels_last(to_float(inputs), data_format)
    if padding == "same":
        x = _pad(x, same_pads(x.shape[1:4], pool, strides, (1, 1, 1)), mode="edge")   # Keras (torch): replicate
    p = patches_3d(x, pool, strides, (1, 1, 1))
    out = p.amax((4, 5, 6)) if kind == "max" else p.mean(axis=(4, 5, 6))
    return _back(out, data_format)


def _dilate(x, axis, stride):
    """``stride - 1`` zeros between the entries along ``axis`` (an index gather, differentiable)."""
    n = x.shape[axis]
    if stride == 1 or n == 0:
        return x
    zero_shape = list(x.shape)
    zero_shape[axis] = 1
    padded = cat([x, Tensor(np.zeros(zero_shape, x.dtype))], axis)
    index = np.full((n - 1) * stride + 1, n)
    index[::stride] = np.arange(n)
    return padded.index_select(axis, Tensor(index))


def conv_transpose3d_full(inputs, kernel, strides, data_format, dilation):
    """The uncropped transposed convolution (size ``(in - 1) * s + effective kernel`` per axis):
    the input dilated by the strides, padded by ``effective - 1``, convolved with the
    spatially flipped kernel. ``kernel`` is Keras's ``(kd, kh, kw, filters, in_channels)``."""
    x = _channels_last(inputs, data_format)
    for axis, s in zip((1, 2, 3), strides):
        x = _dilate(x, axis, s)
    effective = [(k - 1) * d + 1 for k, d in zip(kernel.shape[:3], dilation)]
    x = _pad(x, [(e - 1, e - 1) for e in effective])
    flipped = kernel.flip(0, 1, 2).permute(0, 1, 2, 4, 3)          # (kd, kh, kw, in, filters)
    out = conv3d(x, flipped, (1, 1, 1), "valid", "channels_last", dilation, 1)
    return _back(out, data_format)
