"""``keras.ops.image``: resizing, colour conversion, cropping/padding and patches.

``resize`` is separable: each spatial axis is multiplied by an interpolation matrix built
with the sampling rule of Keras's torch backend (``torch.nn.functional.interpolate``:
half-pixel centres, ``nearest`` = "nearest-exact", bicubic with a = -0.75; ``antialias=True`` widens
the kernel when downsampling, as PyTorch's antialiased modes), so the output is
differentiable in the images.
"""
import numpy as np

from minnet import config
from minnet.autograd import Tensor, einsum

from . import _np_shape, nn
from ._dispatch import keras_op, to_float, wrap
from ._image_scale import scale_and_translate  # noqa: F401
from ._image_warp import (affine_transform, elastic_transform, extract_patches_3d, gaussian_blur, map_coordinates, perspective_transform,  # noqa: F401
                          sobel_edges, ssim)

__all__ = ["resize", "rgb_to_grayscale", "rgb_to_hsv", "hsv_to_rgb", "crop_images", "pad_images",
           "extract_patches", "affine_transform", "map_coordinates", "gaussian_blur", "sobel_edges",
           "perspective_transform", "ssim", "extract_patches_3d",
           "elastic_transform", "scale_and_translate"]

_INTERPOLATIONS = ("nearest", "bilinear", "bicubic")


def _format(data_format):
    return config.normalize_data_format(data_format) if data_format is not None else config.image_data_format()


def _cubic(t, a=-0.75):
    t = np.abs(t)
    return np.where(t <= 1, ((a + 2) * t - (a + 3)) * t * t + 1,
                    np.where(t < 2, ((a * t - 5 * a) * t + 8 * a) * t - 4 * a, 0.0))


def _matrix(n_in, n_out, interpolation):
    """``(n_out, n_in)`` weights of one axis (PyTorch's sampling, align_corners=False)."""
    scale = n_in / n_out
    w = np.zeros((n_out, n_in))
    dst = np.arange(n_out)
    if interpolation == "nearest":
        src = np.minimum(np.floor((dst + 0.5) * scale).astype(np.int64), n_in - 1)
        w[dst, src] = 1.0
        return w
    src = (dst + 0.5) * scale - 0.5
    if interpolation == "bilinear":
        src = np.maximum(src, 0.0)
        lo = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
        hi = np.minimum(lo + 1, n_in - 1)
        frac = src - lo
        np.add.at(w, (dst, lo), 1.0 - frac)
        np.add.at(w, (dst, hi), frac)
        return w
    base = np.floor(src).astype(np.int64)
    frac = src - base
    for offset in (-1, 0, 1, 2):
        np.add.at(w, (dst, np.clip(base + offset, 0, n_in - 1)), _cubic(frac - offset))
    return w


def _antialias_matrix(n_in, n_out, interpolation):
    """``(n_out, n_in)`` weights of PyTorch's antialiased interpolation (``antialias=True``):
    the kernel is widened by the scale when downsampling (bicubic with a = -0.5)."""
    scale = n_in / n_out
    support = (1.0 if interpolation == "bilinear" else 2.0) * max(scale, 1.0)
    inv = 1.0 / max(scale, 1.0)
    w = np.zeros((n_out, n_in))
    for i in range(n_out):
        center = scale * (i + 0.5)
        lo, hi = max(int(center - support + 0.5), 0), min(int(center + support + 0.5), n_in)
        t = (np.arange(lo, hi) - center + 0.5) * inv
        k = np.maximum(0.0, 1.0 - np.abs(t)) if interpolation == "bilinear" else _cubic(t, a=-0.5)
        w[i, lo:hi] = k / k.sum() if k.sum() else k
    return w


@keras_op("images")
def resize(images, size, interpolation="bilinear", antialias=False, crop_to_aspect_ratio=False,
           pad_to_aspect_ratio=False, fill_mode="constant", fill_value=0.0, data_format=None):
    """Resize ``images`` (3-D or 4-D) to ``size = (height, width)``."""
    if interpolation not in _INTERPOLATIONS:
        raise ValueError(f"Invalid argument `interpolation`: minnet supports {_INTERPOLATIONS}. "
                         f"Received: interpolation={interpolation!r}")
    if crop_to_aspect_ratio and pad_to_aspect_ratio:
        raise ValueError("Only one of `crop_to_aspect_ratio` and `pad_to_aspect_ratio` can be True.")
    data_format = _format(data_format)
    if images.ndim not in (3, 4):
        raise ValueError(f"Invalid argument `images`: expected a 3-D or 4-D tensor. Received: shape {images.shape}")
    x = to_float(images)
    single = x.ndim == 3
    if single:
        x = x.unsqueeze(0)
    if data_format == "channels_first":
        x = x.permute(0, 2, 3, 1)
    oh, ow = (int(s) for s in size)
    h, w = x.shape[1], x.shape[2]
    if crop_to_aspect_ratio:
        ch, cw = min(h, int(w * oh / ow)), min(w, int(h * ow / oh))
        top, left = (h - ch) // 2, (w - cw) // 2
        x, h, w = x[:, top:top + ch, left:left + cw], ch, cw
    elif pad_to_aspect_ratio:
        ph, pw = max(h, int(round(w * oh / ow))), max(w, int(round(h * ow / oh)))
        top, left = (ph - h) // 2, (pw - w) // 2
        x = _np_shape.pad(x, ((0, 0), (top, ph - h - top), (left, pw - w - left), (0, 0)),
                          constant_values=fill_value)
        h, w = ph, pw
    matrix = _antialias_matrix if antialias and interpolation != "nearest" else _matrix
    wh = Tensor(matrix(h, oh, interpolation).astype(x.dtype))
    ww = Tensor(matrix(w, ow, interpolation).astype(x.dtype))
    out = einsum("ah,nhwc,bw->nabc", wh, x, ww)
    if data_format == "channels_first":
        out = out.permute(0, 3, 1, 2)
    return _like_input(out[0] if single else out, images)


def _like_input(out, images, rounding=True):
    """Integer images come back in their own dtype, clipped, and rounded (``resize``) or
    truncated (``rgb_to_grayscale``), as Keras does."""
    if images.dtype.kind not in "iu":
        return out
    info = np.iinfo(images.dtype)
    values = np.round(out.data) if rounding else np.trunc(out.data)
    return wrap(np.clip(values, info.min, info.max).astype(images.dtype))


def _channel_axis(images, data_format):
    return -1 if _format(data_format) == "channels_last" else -3


@keras_op("images")
def rgb_to_grayscale(images, data_format=None):
    """ITU-R 601 luma ``0.2989 R + 0.5870 G + 0.1140 B``, keeping a channel axis of 1."""
    x = to_float(images)
    axis = _channel_axis(x, data_format)
    weights = np.array([0.2989, 0.5870, 0.1140], x.dtype)
    shape = [1] * x.ndim
    shape[axis] = 3
    return _like_input((x * Tensor(weights.reshape(shape))).sum(axis=axis, keepdims=True), images, rounding=False)


@keras_op("images")
def rgb_to_hsv(images, data_format=None):
    """HSV of RGB in [0, 1] (forward only)."""
    x = to_float(images).data
    axis = _channel_axis(images, data_format)
    r, g, b = np.moveaxis(x, axis, 0)
    v = np.max([r, g, b], axis=0)
    c = v - np.min([r, g, b], axis=0)
    s = np.where(v > 0, c / np.where(v > 0, v, 1), 0)
    safe = np.where(c > 0, c, 1)
    h = np.where(v == r, (g - b) / safe, np.where(v == g, 2 + (b - r) / safe, 4 + (r - g) / safe))
    h = np.where(c > 0, (h / 6.0) % 1.0, 0.0)
    return wrap(np.moveaxis(np.stack([h, s, v]), 0, axis).astype(x.dtype))


@keras_op("images")
def hsv_to_rgb(images, data_format=None):
    x = to_float(images).data
    axis = _channel_axis(images, data_format)
    h, s, v = np.moveaxis(x, axis, 0)
    k = lambda n: (n + h * 6.0) % 6.0  # noqa: E731
    f = lambda n: v - v * s * np.clip(np.minimum(k(n), 4.0 - k(n)), 0.0, 1.0)  # noqa: E731
    return wrap(np.moveaxis(np.stack([f(5.0), f(3.0), f(1.0)]), 0, axis).astype(x.dtype))


def _hw_axes(images, data_format):
    first = images.ndim - 3 if _format(data_format) == "channels_last" else images.ndim - 2
    return first, first + 1


@keras_op("images")
def crop_images(images, top_cropping=None, left_cropping=None, bottom_cropping=None, right_cropping=None,
                target_height=None, target_width=None, data_format=None):
    ah, aw = _hw_axes(images, data_format)
    h, w = images.shape[ah], images.shape[aw]
    top, left = top_cropping or 0, left_cropping or 0
    th = target_height if target_height is not None else h - top - (bottom_cropping or 0)
    tw = target_width if target_width is not None else w - left - (right_cropping or 0)
    key = [slice(None)] * images.ndim
    key[ah], key[aw] = slice(top, top + th), slice(left, left + tw)
    return images[tuple(key)]


@keras_op("images")
def pad_images(images, top_padding=None, left_padding=None, bottom_padding=None, right_padding=None,
               target_height=None, target_width=None, data_format=None):
    ah, aw = _hw_axes(images, data_format)
    h, w = images.shape[ah], images.shape[aw]
    top, left = top_padding or 0, left_padding or 0
    bottom = bottom_padding if bottom_padding is not None else (target_height - h - top if target_height else 0)
    right = right_padding if right_padding is not None else (target_width - w - left if target_width else 0)
    widths = [(0, 0)] * images.ndim
    widths[ah], widths[aw] = (top, bottom), (left, right)
    return _np_shape.pad(images, widths)


@keras_op("images")
def extract_patches(images, size, strides=None, dilation_rate=1, padding="valid", data_format=None):
    """Patches of ``size`` as channels: ``(N, out_h, out_w, kh·kw·C)`` (channels_last)."""
    data_format = _format(data_format)
    kh, kw = (size, size) if isinstance(size, int) else size
    x = to_float(images)
    single = x.ndim == 3
    if single:
        x = x.unsqueeze(0)
    c = x.shape[-1] if data_format == "channels_last" else x.shape[1]
    eye = np.eye(kh * kw * c, dtype=x.dtype).reshape(kh, kw, c, kh * kw * c)
    out = nn.conv(x, Tensor(eye), strides=strides or (kh, kw), padding=padding, data_format=data_format,
                  dilation_rate=dilation_rate)
    return _like_input(out[0] if single else out, images)
