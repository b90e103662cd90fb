"""Image ops built on sampling and small fixed convolutions: ``map_coordinates``,
``affine_transform``, ``gaussian_blur``, ``sobel_edges``, with the rules of Keras's torch
backend (index fixers per ``fill_mode``, round-half-even for ``order=0``, the affine
transform ``[a0, a1, a2, b0, b1, b2, c0, c1]`` mapping output ``(x, y)`` to input
``(a0 x + a1 y + a2, b0 x + b1 y + b2)``). Sampling gathers input values with fixed weights,
so outputs are differentiable in the images (not in the coordinates).
"""
import itertools

import numpy as np

from minnet import config, random as mn_random
from minnet.autograd import Tensor, stack

from . import _volumes, nn
from ._dispatch import keras_op, to_float, wrap

__all__ = ["map_coordinates", "affine_transform", "perspective_transform", "gaussian_blur", "sobel_edges", "ssim",
           "extract_patches_3d", "elastic_transform"]


def _mirror(index, size):
    s = size - 1
    if s == 0:
        return np.zeros_like(index)
    return np.abs((index + s) % (2 * s) - s)


def _reflect(index, size):
    return (_mirror(2 * index + 1, 2 * size + 1) - 1) // 2


_FIXERS = {"constant": lambda i, n: np.clip(i, 0, n - 1), "nearest": lambda i, n: np.clip(i, 0, n - 1),
           "wrap": lambda i, n: i % n, "mirror": _mirror, "reflect": _reflect}


def _sample(inputs, coords, order, fill_mode, fill_value):
    """``inputs`` sampled at ``coords`` (one array per axis of ``inputs``)."""
    if fill_mode not in _FIXERS:
        raise ValueError(f"Invalid argument `fill_mode`: expected one of {sorted(_FIXERS)}. "
                         f"Received: fill_mode={fill_mode!r}")
    if order not in (0, 1):
        raise ValueError(f"Invalid argument `order`: expected 0 (nearest) or 1 (linear). Received: order={order!r}")
    per_axis = []
    for c, size in zip(coords, inputs.shape):
        c = np.asarray(c)
        if order == 0:
            nodes = [(np.round(c).astype(np.int64) if c.dtype.kind == "f" else c.astype(np.int64), 1.0)]
        else:
            lower = np.floor(c)
            upper_weight = c - lower
            nodes = [(lower.astype(np.int64), 1.0 - upper_weight), (lower.astype(np.int64) + 1, upper_weight)]
        per_axis.append([(_FIXERS[fill_mode](i, size), (i >= 0) & (i < size) if fill_mode == "constant" else None, w)
                         for i, w in nodes])
    x = to_float(inputs)
    flat = x.reshape(-1)
    strides = np.cumprod((1,) + tuple(inputs.shape[::-1]))[:-1][::-1]
    out = None
    for items in itertools.product(*per_axis):
        linear = sum(idx * int(st) for (idx, _, _), st in zip(items, strides))
        weight = np.ones(np.shape(linear), dtype=np.float64)
        valid = np.ones(np.shape(linear), dtype=bool)
        for _, v, w in items:
            weight = weight * w
            if v is not None:
                valid &= v
        gathered = flat[linear.reshape(-1)].reshape(*np.shape(linear)) if np.ndim(linear) else flat[int(linear)]
        term = gathered * Tensor((weight * valid).astype(x.dtype)) + Tensor(
            (weight * ~valid * fill_value).astype(x.dtype))
        out = term if out is None else out + term
    if inputs.dtype.kind != "f":
        return wrap(np.round(out.data).astype(inputs.dtype))
    return out


@keras_op("inputs", "coordinates")
def map_coordinates(inputs, coordinates, order, fill_mode="constant", fill_value=0):
    """``inputs`` sampled at ``coordinates`` (shape ``(inputs.ndim, ...)``), order 0 or 1."""
    if coordinates.shape[0] != inputs.ndim:
        raise ValueError(f"Invalid argument `coordinates`: its first axis must be the rank of `inputs` "
                         f"({inputs.ndim}). Received: shape {coordinates.shape}")
    return _sample(inputs, list(coordinates.data), order, fill_mode, fill_value)


_INTERPOLATION_ORDER = {"nearest": 0, "bilinear": 1}


def _format(data_format):
    return config.normalize_data_format(data_format) if data_format is not None else config.image_data_format()


@keras_op("images", "transform")
def affine_transform(images, transform, interpolation="bilinear", fill_mode="constant", fill_value=0,
                     data_format=None):
    """Apply the affine ``transform`` (8 numbers per image) to ``images``."""
    if interpolation not in _INTERPOLATION_ORDER:
        raise ValueError(f"Invalid argument `interpolation`: expected 'nearest' or 'bilinear'. "
                         f"Received: interpolation={interpolation!r}")
    if images.ndim not in (3, 4) or transform.ndim not in (1, 2):
        raise ValueError(f"Invalid arguments: expected `images` of rank 3 or 4 and `transform` of rank 1 or 2. "
                         f"Received: images.shape={images.shape}, transform.shape={transform.shape}")
    single = images.ndim == 3
    x = images.unsqueeze(0) if single else images
    if _format(data_format) == "channels_first":
        x = x.permute(0, 2, 3, 1)
    t = transform.data.reshape(-1, 8).astype(np.float64)
    n, h, w, c = x.shape
    hh, ww, cc = np.meshgrid(np.arange(h), np.arange(w), np.arange(c), indexing="ij")
    outs = []
    for i in range(n):
        a0, a1, a2, b0, b1, b2, c0, c1 = t[i if t.shape[0] > 1 else 0]
        rows = b0 * ww + b1 * hh + b2 + c0 * cc
        cols = a0 * ww + a1 * hh + a2 + c1 * cc
        outs.append(_sample(x[i], [rows, cols, cc], _INTERPOLATION_ORDER[interpolation], fill_mode, fill_value))
    out = stack(outs, 0)
    if _format(data_format) == "channels_first":
        out = out.permute(0, 3, 1, 2)
    return out[0] if single else out



def _kernel_images(x, data_format):
    """(images as NHWC, was single, was channels_first)."""
    if x.ndim not in (3, 4):
        raise ValueError(f"Invalid argument `images`: expected rank 3 or 4. Received: shape {x.shape}")
    single = x.ndim == 3
    x = x.unsqueeze(0) if single else x
    first = _format(data_format) == "channels_first"
    return (x.permute(0, 2, 3, 1) if first else x), single, first


def _restore(out, single, first):
    out = out.permute(0, 3, 1, 2) if first else out
    return out[0] if single else out


@keras_op("images")
def gaussian_blur(images, kernel_size=(3, 3), sigma=(1.0, 1.0), data_format=None):
    """Per-channel Gaussian blur (zero padding of ``kernel_size[0] // 2``, as Keras on torch)."""
    x, single, first = _kernel_images(to_float(images), data_format)
    kh, kw = (int(v) for v in (kernel_size if not isinstance(kernel_size, int) else (kernel_size,) * 2))
    sh, sw = (float(v) for v in (sigma if not isinstance(sigma, (int, float)) else (sigma,) * 2))

    def one_d(size, s):
        t = np.arange(size) - (size - 1) / 2
        k = np.exp(-0.5 * (t / s) ** 2)
        return k / k.sum()

    kernel = np.outer(one_d(kw, sw), one_d(kh, sh)).reshape(kh, kw)
    c = x.shape[-1]
    weights = np.broadcast_to(kernel[:, :, None, None], (kh, kw, c, 1)).astype(x.dtype)
    pad = kh // 2
    padded = nn.pad_spatial(x, pad)
    out = nn.depthwise_conv(padded, Tensor(np.ascontiguousarray(weights)), data_format="channels_last")
    return _restore(out, single, first)


@keras_op("images")
def sobel_edges(images, data_format=None):
    """Sobel gradients per channel, stacked last as ``(dy, dx)``: ``(N, H, W, C, 2)``."""
    x = to_float(images)
    first = _format(data_format) == "channels_first"
    x = x.permute(0, 2, 3, 1) if first else x
    c = x.shape[-1]
    sobel_x = np.array([[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]], x.dtype)
    edges = []
    for k in (sobel_x.T, sobel_x):
        weights = np.ascontiguousarray(np.broadcast_to(k[:, :, None, None], (3, 3, c, 1)))
        edges.append(nn.depthwise_conv(nn.pad_spatial(x, 1), Tensor(weights), data_format="channels_last"))
    out = stack(edges, -1)
    return out.permute(0, 3, 1, 2, 4) if first else out


def _homography(start, end):
    """The 8 coefficients mapping ``end`` points to ``start`` points (Keras's convention)."""
    rows, target = [], []
    for (sx, sy), (ex, ey) in zip(start, end):
        rows.append([ex, ey, 1, 0, 0, 0, -sx * ex, -sx * ey])
        rows.append([0, 0, 0, ex, ey, 1, -sy * ex, -sy * ey])
        target += [sx, sy]
    return np.linalg.solve(np.array(rows, np.float64), np.array(target, np.float64))


@keras_op("images", "start_points", "end_points")
def perspective_transform(images, start_points, end_points, interpolation="bilinear", fill_value=0,
                          data_format=None):
    """Warp ``images`` so the four ``start_points`` ``(x, y)`` land on ``end_points``."""
    if interpolation not in _INTERPOLATION_ORDER:
        raise ValueError(f"Invalid argument `interpolation`: expected 'nearest' or 'bilinear'. "
                         f"Received: interpolation={interpolation!r}")
    x, single, first = _kernel_images(images, data_format)
    start = start_points.data.reshape(-1, 4, 2).astype(np.float64)
    end = end_points.data.reshape(-1, 4, 2).astype(np.float64)
    if start.shape != end.shape:
        raise ValueError(f"Invalid arguments: `start_points` and `end_points` must have the same shape. "
                         f"Received: {start_points.shape} and {end_points.shape}")
    n, h, w, c = x.shape
    yy, xx, cc = np.meshgrid(np.arange(h), np.arange(w), np.arange(c), indexing="ij")
    outs = []
    for i in range(n):
        a = _homography(start[i if start.shape[0] > 1 else 0], end[i if end.shape[0] > 1 else 0])
        denom = a[6] * xx + a[7] * yy + 1.0
        cols = (a[0] * xx + a[1] * yy + a[2]) / denom
        rows = (a[3] * xx + a[4] * yy + a[5]) / denom
        outs.append(_sample(x[i], [rows, cols, cc], _INTERPOLATION_ORDER[interpolation], "constant", fill_value))
    return _restore(stack(outs, 0), single, first)


@keras_op("image1", "image2")
def ssim(image1, image2, max_val=1.0, filter_size=11, filter_sigma=1.5, k1=0.01, k2=0.03, data_format=None):
    """Structural similarity per image pair (Gaussian window, valid padding), as Keras's
    backend-agnostic ``_ssim``; differentiable."""
    a, single, first = _kernel_images(to_float(image1), data_format)
    b, _, _ = _kernel_images(to_float(image2), data_format)
    n, h, w, c = a.shape
    t = np.arange(filter_size) - (filter_size - 1) / 2.0
    g = np.exp(-(t ** 2) / (2.0 * filter_sigma ** 2))
    g /= g.sum()
    kernel = Tensor(np.outer(g, g).reshape(filter_size, filter_size, 1, 1).astype(a.dtype))

    def blur(z):
        return nn.conv(z, kernel, data_format="channels_last")

    a1 = a.permute(0, 3, 1, 2).reshape(-1, h, w, 1)
    b1 = b.permute(0, 3, 1, 2).reshape(-1, h, w, 1)
    c1, c2 = (k1 * max_val) ** 2, (k2 * max_val) ** 2
    mu1, mu2 = blur(a1), blur(b1)
    s11, s22, s12 = blur(a1 * a1) - mu1 * mu1, blur(b1 * b1) - mu2 * mu2, blur(a1 * b1) - mu1 * mu2
    ssim_map = ((mu1 * mu2 * 2.0 + c1) * (s12 * 2.0 + c2)) / ((mu1 * mu1 + mu2 * mu2 + c1) * (s11 + s22 + c2))
    out = ssim_map.mean(axis=(1, 2, 3)).reshape(n, c).mean(axis=-1)
    return out[0] if single else out


@keras_op("volumes")
def extract_patches_3d(volumes, size, strides=None, dilation_rate=1, padding="valid", data_format=None):
    """3-D patches as channels: ``(N, out_d, out_h, out_w, kd·kh·kw·C)`` (channels_last),
    gathered by index, so differentiable."""
    x = to_float(volumes)
    if x.ndim not in (4, 5):
        raise ValueError(f"Invalid argument `volumes`: expected rank 4 or 5. Received: shape {x.shape}")
    single = x.ndim == 4
    x = x.unsqueeze(0) if single else x
    first = _format(data_format) == "channels_first"
    if first:
        x = x.permute(0, 2, 3, 4, 1)
    kernel = (size,) * 3 if isinstance(size, int) else tuple(size)
    strides = kernel if strides is None else ((strides,) * 3 if isinstance(strides, int) else tuple(strides))
    dilation = (dilation_rate,) * 3 if isinstance(dilation_rate, int) else tuple(dilation_rate)
    if padding not in ("valid", "same"):
        raise ValueError(f"Invalid argument `padding`: expected 'valid' or 'same'. Received: padding={padding!r}")
    if padding == "same":
        x = nn.pad_volume(x, _volumes.same_pads(x.shape[1:4], kernel, strides, dilation))
    patches = _volumes.patches_3d(x, kernel, strides, dilation)     # (n, od, oh, ow, kd, kh, kw, c)
    od, oh, ow = patches.shape[1:4]
    out = patches.reshape(x.shape[0], od, oh, ow, -1)
    if first:
        out = out.permute(0, 4, 1, 2, 3)
    return out[0] if single else out


@keras_op("images")
def elastic_transform(images, alpha=20.0, sigma=5.0, interpolation="bilinear", fill_mode="reflect", fill_value=0.0,
                      seed=None, data_format=None):
    """Elastic distortion (Simard et al. 2003), Keras's recipe: displacement fields of
    ``N(0, 1) * sigma`` per pixel, blurred with a Gaussian of ``sigma`` (kernel ``int(6 sigma) | 1``),
    scaled by ``alpha``, then bilinear resampling. Draws from ``minnet.random`` with ``seed``."""
    if interpolation not in _INTERPOLATION_ORDER:
        raise ValueError(f"Invalid argument `interpolation`: expected 'nearest' or 'bilinear'. "
                         f"Received: interpolation={interpolation!r}")
    x, single, first = _kernel_images(images, data_format)
    n, h, w, c = x.shape
    alpha, sigma = float(alpha), float(sigma)
    size = int(6 * sigma) | 1
    generator = seed if isinstance(seed, mn_random.SeedGenerator) else mn_random.SeedGenerator(seed)
    fields = []
    for _ in range(2):
        noise = mn_random.normal((n, h, w, 1), dtype=x.dtype, seed=generator) * sigma
        fields.append(gaussian_blur(noise, (size, size), (sigma, sigma), data_format="channels_last").data[..., 0])
    dx, dy = fields
    yy, xx = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
    cc = np.broadcast_to(np.arange(c), (h, w, c))
    outs = []
    for i in range(n):
        rows = np.broadcast_to((yy + alpha * dy[i])[..., None], (h, w, c))
        cols = np.broadcast_to((xx + alpha * dx[i])[..., None], (h, w, c))
        outs.append(_sample(x[i], [rows, cols, cc], _INTERPOLATION_ORDER[interpolation], fill_mode, fill_value))
    out = stack(outs, 0)
    if images.dtype.kind != "f":
        out = wrap(np.round(out.data).astype(images.dtype))
    return _restore(out, single, first)
