"""``keras.ops.nn``: activations, softmax, one-hot, normalisation, crossentropies,
convolution and pooling, with Keras's argument names, defaults and layouts.

Images default to ``mn.config.image_data_format()`` (channels_last); kernels use Keras's
layout ``(*spatial, in_channels, out_channels)`` (``depthwise_conv``: ``(*spatial, in, multiplier)``)
and are transposed to minnet's PyTorch layout for the native kernels. 1-D and 2-D
convolutions and pools run on those kernels; 3-D ones gather their windows by index
(``_volumes``). Every op here is
differentiable through ``minnet.functional`` and the autograd.
"""
import math

import numpy as np

from minnet import config, functional as F
from minnet.autograd import Tensor, where as _where

from . import _np_shape, _volumes
from ._ctc import ctc_decode, ctc_loss  # noqa: F401
from ._dispatch import cast_to, keras_op, norm_axes, norm_axis, promote, to_float, wrap, wrap

__all__ = ["relu", "relu6", "sigmoid", "tanh", "softplus", "softsign", "silu", "swish", "log_sigmoid",
           "leaky_relu", "hard_sigmoid", "hard_silu", "hard_swish", "elu", "selu", "gelu", "celu", "glu",
           "hard_tanh", "hard_shrink", "soft_shrink", "tanh_shrink", "squareplus", "sparse_plus",
           "sparse_sigmoid", "threshold", "sparsemax", "softmax", "log_softmax", "one_hot", "multi_hot",
           "normalize", "moments", "batch_normalization", "layer_normalization", "rms_normalization",
           "binary_crossentropy", "categorical_crossentropy", "sparse_categorical_crossentropy", "conv",
           "depthwise_conv", "separable_conv", "conv_transpose", "max_pool", "average_pool",
           "adaptive_average_pool", "adaptive_max_pool", "psnr", "depth_to_space", "space_to_depth",
           "unfold", "fold", "ctc_loss", "ctc_decode", "dot_product_attention"]


# ----------------------------------------------------------------------------- activations


def _via_kernel(fn, x, *args, **kwargs):
    """``fn`` (a minnet.functional op, float32/float64 kernels) on ``x``: integers in floatx,
    float16 computed in float32 and returned as float16 (Keras keeps float16)."""
    x = to_float(x)
    if x.dtype == np.float16:
        return fn(x.astype(np.float32), *args, **kwargs).astype(np.float16)
    return fn(x, *args, **kwargs)


@keras_op("x")
def relu(x):
    if x.dtype.kind in "iu":
        return wrap(np.maximum(x.data, 0).astype(x.dtype))
    return _via_kernel(F.relu, x)


@keras_op("x")
def relu6(x):
    if x.dtype.kind in "iu":
        return wrap(np.clip(x.data, 0, 6).astype(x.dtype))
    return _via_kernel(F.relu6, x)


@keras_op("x")
def sigmoid(x):
    return _via_kernel(F.sigmoid, x)


@keras_op("x")
def tanh(x):
    return _via_kernel(F.tanh, x)


@keras_op("x")
def softplus(x):
    return _via_kernel(F.softplus, x)


@keras_op("x")
def softsign(x):
    return _via_kernel(F.softsign, x)


@keras_op("x")
def silu(x):
    return _via_kernel(F.silu, x)


swish = silu


@keras_op("x")
def log_sigmoid(x):
    """``log(sigmoid(x)) = -softplus(-x)``, stable for large ``|x|``."""
    return -_via_kernel(F.softplus, -to_float(x))


@keras_op("x")
def leaky_relu(x, negative_slope=0.2):
    return _via_kernel(F.leaky_relu, x, negative_slope)


@keras_op("x")
def hard_sigmoid(x):
    """``relu6(x + 3) / 6`` (Keras's)."""
    return _via_kernel(F.relu6, to_float(x) + 3.0) * (1.0 / 6.0)


@keras_op("x")
def hard_silu(x):
    x = to_float(x)
    return x * hard_sigmoid(x)


hard_swish = hard_silu


@keras_op("x")
def elu(x, alpha=1.0):
    return _via_kernel(F.elu, x, alpha)


@keras_op("x")
def selu(x):
    return _via_kernel(F.selu, x)


@keras_op("x")
def gelu(x, approximate=True):
    """GELU; Keras's default is the tanh approximation (``approximate=True``)."""
    return _via_kernel(F.gelu, x, "tanh" if approximate else "none")


@keras_op("x")
def celu(x, alpha=1.0):
    x = to_float(x)
    return x.relu() - F.relu(-(((x * (1.0 / alpha)).minimum(Tensor(np.zeros((), x.dtype)))).expm1() * alpha))


@keras_op("x")
def glu(x, axis=-1):
    a, b = _np_shape.split(to_float(x), 2, axis)
    return a * F.sigmoid(b)


@keras_op("x")
def hard_tanh(x):
    return to_float(x).clip(-1.0, 1.0)


@keras_op("x")
def hard_shrink(x, threshold=0.5):
    x = to_float(x)
    return x * Tensor((np.abs(x.data) > threshold).astype(x.dtype))


@keras_op("x")
def soft_shrink(x, threshold=0.5):
    x = to_float(x)
    return F.relu(x - threshold) - F.relu(-x - threshold)


@keras_op("x")
def tanh_shrink(x):
    x = to_float(x)
    return x - x.tanh()


@keras_op("x")
def squareplus(x, b=4):
    x = to_float(x)
    return (x + (x * x + float(b)).sqrt()) * 0.5


@keras_op("x")
def sparse_plus(x):
    """0 for x <= -1, ``(x + 1)² / 4`` on (-1, 1), x for x >= 1."""
    x = to_float(x)
    mid = (x + 1.0) * (x + 1.0) * 0.25
    out = _where(Tensor(x.data >= 1), x, mid)
    return _where(Tensor(x.data <= -1), Tensor(np.zeros((), x.dtype)), out)


@keras_op("x")
def sparse_sigmoid(x):
    """``clip((x + 1) / 2, 0, 1)``."""
    return ((to_float(x) + 1.0) * 0.5).clip(0.0, 1.0)


@keras_op("x")
def threshold(x, threshold, default_value):
    x = to_float(x)
    return _where(Tensor(x.data > threshold), x, Tensor(np.full((), default_value, x.dtype)))


@keras_op("x")
def sparsemax(x, axis=-1):
    """Euclidean projection onto the simplex (Martins & Astudillo); differentiable."""
    x = to_float(x)
    axis = norm_axis(axis, x.ndim)
    z = np.moveaxis(x.data, axis, -1)
    zs = -np.sort(-z, axis=-1)
    k = np.arange(1, z.shape[-1] + 1, dtype=z.dtype)
    cssv = np.cumsum(zs, axis=-1)
    support = 1 + k * zs > cssv
    k_z = support.sum(-1, keepdims=True)
    # tau = (sum of the supported entries - 1) / k_z, computed on the graph
    mask = Tensor(np.moveaxis((z >= np.take_along_axis(zs, k_z - 1, -1)), -1, axis).astype(x.dtype))
    tau = ((x * mask).sum(axis=axis, keepdims=True) - 1.0) / Tensor(np.moveaxis(k_z, -1, axis).astype(x.dtype))
    return F.relu(x - tau)


@keras_op("x")
def softmax(x, axis=-1):
    """Softmax along ``axis`` (an int or a tuple of axes)."""
    x = to_float(x)
    if isinstance(axis, (tuple, list)):
        axes = norm_axes(axis, x.ndim)
        return (x - x.logsumexp(axes, keepdim=True)).exp()
    return _via_kernel(F.softmax, x, axis=norm_axis(axis, x.ndim))


@keras_op("x")
def log_softmax(x, axis=-1):
    x = to_float(x)
    if isinstance(axis, (tuple, list)):
        return x - x.logsumexp(norm_axes(axis, x.ndim), keepdim=True)
    return _via_kernel(F.log_softmax, x, axis=norm_axis(axis, x.ndim))


@keras_op("x")
def one_hot(x, num_classes, axis=-1, dtype=None, sparse=False):
    """One-hot encoding of integer ``x`` into a new ``axis`` of size ``num_classes``
    (out-of-range labels, such as -1, give all zeros, as Keras)."""
    if sparse:
        raise ValueError("Invalid argument `sparse`: minnet has dense tensors only. Received: sparse=True")
    labels = x.data.astype(np.int64)
    n = int(num_classes)
    out = (labels[..., None] == np.arange(n)).astype(np.dtype(dtype or config.floatx()))
    if axis != -1 and axis != labels.ndim:
        out = np.moveaxis(out, -1, norm_axis(axis, labels.ndim + 1))
    return wrap(out)


@keras_op("inputs")
def multi_hot(inputs, num_classes=None, axis=-1, dtype=None, sparse=False, **kwargs):
    """1 for every class present in the last axis of ``inputs`` (a batch of label lists)."""
    if num_classes is None:
        num_classes = kwargs.pop("num_tokens", None)
    if num_classes is None:
        raise ValueError("Invalid argument `num_classes`: expected an int. Received: num_classes=None")
    oh = one_hot(inputs, num_classes, axis=-1, dtype=dtype)
    reduce_axis = -2 if inputs.ndim > 1 else 0
    out = wrap(oh.data.max(axis=reduce_axis))
    if axis != -1:
        out = wrap(np.moveaxis(out.data, -1, axis))
    return out


@keras_op("x")
def normalize(x, axis=-1, order=2, epsilon=None):
    """``x / max(norm(x, order, axis), epsilon)`` (Keras's default epsilon: 1e-7 as floatx eps)."""
    x = to_float(x)
    eps = 1e-7 if epsilon is None else epsilon
    if order == 2:
        sq = (x * x).sum(axis=axis, keepdims=True)
        return x * sq.maximum(Tensor(np.asarray(eps * eps, x.dtype))).rsqrt()
    norm_ = (x.abs() ** float(order)).sum(axis=axis, keepdims=True) ** (1.0 / order)
    return x / norm_.maximum(Tensor(np.asarray(eps, x.dtype)))


@keras_op("x")
def moments(x, axes, keepdims=False, synchronized=False):
    """``(mean, variance)`` over ``axes`` (biased variance); float16 inputs compute in float32."""
    x_in = x
    x = to_float(x)
    if x.dtype == np.float16:
        x = x.astype(np.float32)
    axes = norm_axes(axes, x.ndim)
    m = x.mean(axis=axes, keepdims=True)
    v = x.var(axis=axes, keepdims=True, correction=0)
    if not keepdims:
        m, v = m.squeeze(axes), v.squeeze(axes)
    if x_in.dtype == np.float16:
        m, v = m.astype(np.float16), v.astype(np.float16)
    return m, v


def _per_axis(t, axis, ndim):
    if t is None or t.ndim != 1 or ndim == 1:
        return t
    shape = [1] * ndim
    shape[axis] = t.shape[0]
    return t.reshape(*shape)


@keras_op("x", "mean", "variance", "offset", "scale")
def batch_normalization(x, mean, variance, axis, offset=None, scale=None, epsilon=1e-3):
    """``(x - mean) / sqrt(variance + epsilon) * scale + offset``; the 1-D statistics sit
    along ``axis``."""
    x = to_float(x)
    axis = norm_axis(axis, x.ndim)
    mean, variance = (_per_axis(cast_to(t, x.dtype), axis, x.ndim) for t in (mean, variance))
    inv = (variance + epsilon).rsqrt()
    if scale is not None:
        inv = inv * _per_axis(cast_to(scale, x.dtype), axis, x.ndim)
    out = (x - mean) * inv
    if offset is not None:
        out = out + _per_axis(cast_to(offset, x.dtype), axis, x.ndim)
    return out


@keras_op("x", "gamma", "beta")
def layer_normalization(x, gamma=None, beta=None, axis=-1, epsilon=None, **kwargs):
    x = to_float(x)
    eps = 1e-7 if epsilon is None else epsilon
    axes = norm_axes(axis, x.ndim)
    m = x.mean(axis=axes, keepdims=True)
    v = x.var(axis=axes, keepdims=True, correction=0)
    out = (x - m) * (v + eps).rsqrt()
    if gamma is not None:
        out = out * cast_to(gamma, x.dtype)
    if beta is not None:
        out = out + cast_to(beta, x.dtype)
    return out


@keras_op("x", "scale")
def rms_normalization(x, scale=None, axis=-1, epsilon=None):
    x = to_float(x)
    eps = 1e-7 if epsilon is None else epsilon
    axes = norm_axes(axis, x.ndim)
    out = x * ((x * x).mean(axis=axes, keepdims=True) + eps).rsqrt()
    return out * cast_to(scale, x.dtype) if scale is not None else out


# ----------------------------------------------------------------------------- crossentropies

_EPSILON = 1e-7   # Keras's backend.epsilon(), used to clip probabilities


def _target_output(target, output):
    dtype = promote(to_float(output), target if target.dtype.kind == "f" else to_float(output))
    return cast_to(target, dtype), cast_to(to_float(output), dtype)


@keras_op("target", "output")
def binary_crossentropy(target, output, from_logits=False):
    """Elementwise binary crossentropy (no reduction), as ``keras.ops.binary_crossentropy``."""
    target, output = _target_output(target, output)
    if tuple(target.shape) != tuple(output.shape):
        raise ValueError(f"Arguments `target` and `output` must have the same shape. Received: "
                         f"target.shape={target.shape}, output.shape={output.shape}")
    if from_logits:
        # max(x, 0) - x * z + log(1 + exp(-|x|))
        return F.relu(output) - output * target + (-output.abs()).exp().log1p()
    p = output.clip(_EPSILON, 1.0 - _EPSILON)
    return -(target * p.log() + (1.0 - target) * (1.0 - p).log())


@keras_op("target", "output")
def categorical_crossentropy(target, output, from_logits=False, axis=-1):
    """``-sum(target * log_softmax(output))`` along ``axis`` (probabilities are normalised
    and clipped to [eps, 1 - eps] first, as Keras)."""
    target, output = _target_output(target, output)
    if tuple(target.shape) != tuple(output.shape):
        raise ValueError(f"Arguments `target` and `output` must have the same shape. Received: "
                         f"target.shape={target.shape}, output.shape={output.shape}")
    axis = norm_axis(axis, output.ndim)
    if from_logits:
        log_p = F.log_softmax(output, axis=axis)
    else:
        p = output / output.sum(axis=axis, keepdims=True)
        log_p = p.clip(_EPSILON, 1.0 - _EPSILON).log()
    return -(target * log_p).sum(axis=axis)


@keras_op("target", "output")
def sparse_categorical_crossentropy(target, output, from_logits=False, axis=-1):
    """Crossentropy with integer labels ``target`` (shape of ``output`` without ``axis``;
    a trailing size-1 axis is squeezed as Keras does)."""
    output = to_float(output)
    axis = norm_axis(axis, output.ndim)
    labels = target.data
    if labels.ndim == output.ndim and labels.shape[-1] == 1:
        labels = labels[..., 0]
    if labels.ndim != output.ndim - 1:
        raise ValueError(f"Argument `target` must have rank {output.ndim - 1} (or {output.ndim} with a last axis "
                         f"of 1). Received: target.shape={target.shape}, output.shape={output.shape}")
    labels = labels.astype(np.int64)
    if from_logits:
        log_p = F.log_softmax(output, axis=axis)
    else:
        p = output / output.sum(axis=axis, keepdims=True)
        log_p = p.clip(_EPSILON, 1.0 - _EPSILON).log()
    mask = (labels[..., None] == np.arange(output.shape[axis])).astype(output.dtype)
    mask = np.moveaxis(mask, -1, axis)
    return -(log_p * Tensor(mask)).sum(axis=axis)


# ----------------------------------------------------------------------------- convolution, pooling


def _format(data_format):
    return config.normalize_data_format(data_format) if data_format is not None else config.image_data_format()


def _tuple(value, n, name):
    if isinstance(value, (int, np.integer)):
        return (int(value),) * n
    value = tuple(int(v) for v in value)
    if len(value) != n:
        raise ValueError(f"Invalid argument `{name}`: expected an int or {n} ints. Received: {name}={value}")
    return value


def _spatial(inputs, data_format, name="inputs"):
    n = inputs.ndim - 2
    if n not in (1, 2, 3):
        raise ValueError(f"Invalid argument `{name}`: expected a batch of 1-D, 2-D or 3-D inputs "
                         f"(rank 3, 4 or 5). Received: shape {inputs.shape}")
    return n


def _as_2d(inputs, data_format, n):
    """1-D inputs as images of height 1, in their own layout."""
    if n == 2:
        return inputs
    return inputs.unsqueeze(1) if data_format == "channels_last" else inputs.unsqueeze(2)


def _from_2d(out, data_format, n):
    if n == 2:
        return out
    return out.squeeze(1) if data_format == "channels_last" else out.squeeze(2)


def _same_pads(sizes, kernel, strides, dilation):
    pads = []
    for size, k, s, d in zip(sizes, kernel, strides, dilation):
        effective = (k - 1) * d + 1
        total = effective - 1 if s == 1 else max(0, ((size + s - 1) // s - 1) * s + effective - size)
        pads.append((total // 2, total - total // 2))
    return pads


def _padding_mode(padding):
    if not isinstance(padding, str) or padding.lower() not in ("valid", "same"):
        raise ValueError(f"Invalid argument `padding`: expected 'valid' or 'same'. Received: padding={padding!r}")
    return padding.lower()


def _padding(padding, sizes, kernel, strides, dilation):
    if not isinstance(padding, str) or padding.lower() not in ("valid", "same", "causal"):
        raise ValueError(f"Invalid argument `padding`: expected 'valid' or 'same'. Received: padding={padding!r}")
    if padding.lower() == "valid":
        return [(0, 0)] * len(sizes)
    return _same_pads(sizes, kernel, strides, dilation)


def pad_spatial(x, pad):
    """An NHWC batch with ``pad`` zeros on each side of H and W."""
    return _np_shape.pad(x, ((0, 0), (pad, pad), (pad, pad), (0, 0)))


def pad_volume(x, pads):
    """An NDHWC batch zero-padded by ``pads`` (three ``(before, after)``) on D, H, W."""
    return _np_shape.pad(x, ((0, 0), *pads, (0, 0)))


def _spatial_sizes(x, data_format, n):
    return tuple(x.shape[1:1 + n]) if data_format == "channels_last" else tuple(x.shape[2:2 + n])


def _conv_core(inputs, weight, strides, padding, data_format, dilation_rate, groups):
    n = _spatial(inputs, data_format)
    if n == 3:
        weight = weight.permute(2, 3, 4, 1, 0)                  # back to (kd, kh, kw, in/groups, filters)
        return _volumes.conv3d(inputs, weight, _tuple(strides, 3, "strides"), _padding_mode(padding), data_format,
                               _tuple(dilation_rate, 3, "dilation_rate"), groups)
    strides = _tuple(strides, n, "strides")
    dilation = _tuple(dilation_rate, n, "dilation_rate")
    kernel = tuple(weight.shape[2:])
    pads = _padding(padding, _spatial_sizes(inputs, data_format, n), kernel, strides, dilation)
    x2 = _as_2d(inputs, data_format, n)
    if n == 1:
        weight = weight.unsqueeze(2)
        strides, dilation, pads = (1,) + strides, (1,) + dilation, [(0, 0)] + pads
    out = F.conv2d(x2, weight, None, stride=strides, padding=tuple(tuple(p) for p in pads), dilation=dilation,
                   groups=groups, data_format=data_format)
    return _from_2d(out, data_format, n)


def _float_pair(inputs, kernel):
    dtype = promote(to_float(inputs), to_float(kernel))
    return cast_to(inputs, dtype), cast_to(kernel, dtype)


@keras_op("inputs", "kernel")
def conv(inputs, kernel, strides=1, padding="valid", data_format=None, dilation_rate=1):
    """N-D convolution (N = 1, 2, 3), kernel ``(*spatial, in_channels / groups, filters)``."""
    data_format = _format(data_format)
    inputs, kernel = _float_pair(inputs, kernel)
    n = _spatial(inputs, data_format)
    channels = inputs.shape[-1] if data_format == "channels_last" else inputs.shape[1]
    groups = channels // kernel.shape[-2]
    weight = kernel.permute(n + 1, n, *range(n))          # (filters, in/groups, *spatial)
    return _conv_core(inputs, weight, strides, padding, data_format, dilation_rate, groups)


@keras_op("inputs", "kernel")
def depthwise_conv(inputs, kernel, strides=1, padding="valid", data_format=None, dilation_rate=1):
    """Depthwise convolution, kernel ``(*spatial, in_channels, channel_multiplier)``."""
    data_format = _format(data_format)
    inputs, kernel = _float_pair(inputs, kernel)
    n = _spatial(inputs, data_format)
    c, mult = kernel.shape[-2], kernel.shape[-1]
    weight = kernel.reshape(*kernel.shape[:n], 1, c * mult).permute(n + 1, n, *range(n))
    return _conv_core(inputs, weight, strides, padding, data_format, dilation_rate, c)


@keras_op("inputs", "depthwise_kernel", "pointwise_kernel")
def separable_conv(inputs, depthwise_kernel, pointwise_kernel, strides=1, padding="valid", data_format=None,
                   dilation_rate=1):
    depthwise = depthwise_conv(inputs, depthwise_kernel, strides, padding, data_format, dilation_rate)
    return conv(depthwise, pointwise_kernel, 1, "valid", data_format, 1)


@keras_op("inputs", "kernel")
def conv_transpose(inputs, kernel, strides=1, padding="valid", output_padding=None, data_format=None,
                   dilation_rate=1):
    """Transposed convolution (1-D, 2-D or 3-D), kernel ``(*spatial, filters, in_channels)`` as Keras."""
    data_format = _format(data_format)
    inputs, kernel = _float_pair(inputs, kernel)
    n = _spatial(inputs, data_format)
    if n == 1:                                       # as a 2-D one of height 1
        one = (lambda v, name: None if v is None else (1,) + _tuple(v, 1, name))
        out = conv_transpose(_as_2d(inputs, data_format, 1), kernel.unsqueeze(0), one(strides, "strides"), padding,
                             one(output_padding, "output_padding") if output_padding is not None else None,
                             data_format, one(dilation_rate, "dilation_rate"))
        return _from_2d(out, data_format, 1)
    strides = _tuple(strides, n, "strides")
    dilation = _tuple(dilation_rate, n, "dilation_rate")
    kernel_size = kernel.shape[:n]
    # Keras's rule (keras/src/backend/common/backend_utils.py): the full transposed
    # convolution, then per side a crop of (effective kernel - 1 - pad), or zeros where negative
    crops = []
    for i, (k, s, d) in enumerate(zip(kernel_size, strides, dilation)):
        effective = (k - 1) * d + 1
        op = None if output_padding is None else _tuple(output_padding, n, "output_padding")[i]
        if padding.lower() == "valid":
            op = max(effective, s) - effective if op is None else op
            left, right = effective - 1, effective - 1 + op
        elif padding.lower() == "same":
            total = s + effective - 2 if op is None else effective + effective % 2 - 2 + op
            left = min(total // 2 + total % 2, effective - 1)
            right = total - left
        else:
            raise ValueError(f"Invalid argument `padding`: expected 'valid' or 'same'. Received: padding={padding!r}")
        crops.append((effective - 1 - left, effective - 1 - right))
    if n == 3:
        out = _volumes.conv_transpose3d_full(inputs, kernel, strides, data_format, dilation)
    else:
        weight = kernel.permute(3, 2, 0, 1)                      # (in, filters, kh, kw)
        out = F.conv_transpose2d(inputs, weight, None, stride=strides, padding=0, dilation=dilation,
                                 data_format=data_format)
    first = 1 if data_format == "channels_last" else 2
    widths = [(0, 0)] * out.ndim
    key = [slice(None)] * out.ndim
    for i, (c_left, c_right) in enumerate(crops):
        size = out.shape[first + i]
        key[first + i] = slice(max(c_left, 0), size - max(c_right, 0))
        widths[first + i] = (max(-c_left, 0), max(-c_right, 0))
    out = out[tuple(key)]
    return _np_shape.pad(out, widths) if any(w != (0, 0) for w in widths) else out

def _pool(inputs, pool_size, strides, padding, data_format, kind):
    data_format = _format(data_format)
    inputs = to_float(inputs)
    n = _spatial(inputs, data_format)
    pool = _tuple(pool_size, n, "pool_size")
    strides = pool if strides is None else _tuple(strides, n, "strides")
    if n == 3:
        return _volumes.pool3d(inputs, pool, strides, _padding_mode(padding), data_format, kind)
    if isinstance(padding, str) and padding.lower() == "same":
        pads = _same_pads(_spatial_sizes(inputs, data_format, n), pool, strides, (1,) * n)
        first = 1 if data_format == "channels_last" else 2
        widths = [(0, 0)] * inputs.ndim
        for i, p in enumerate(pads):
            widths[first + i] = p
        inputs = _np_shape.pad(inputs, widths, mode="edge")      # Keras (torch): replicate padding
    elif not (isinstance(padding, str) and padding.lower() == "valid"):
        raise ValueError(f"Invalid argument `padding`: expected 'valid' or 'same'. Received: padding={padding!r}")
    x2 = _as_2d(inputs, data_format, n)
    if n == 1:
        pool, strides = (1,) + pool, (1,) + strides
    fn = F.max_pool2d if kind == "max" else F.avg_pool2d
    return _from_2d(fn(x2, pool, strides, 0, data_format=data_format), data_format, n)


@keras_op("inputs")
def max_pool(inputs, pool_size, strides=None, padding="valid", data_format=None):
    return _pool(inputs, pool_size, strides, padding, data_format, "max")


@keras_op("inputs")
def average_pool(inputs, pool_size, strides=None, padding="valid", data_format=None):
    return _pool(inputs, pool_size, strides, padding, data_format, "avg")


def _adaptive(inputs, output_size, data_format, kind):
    data_format = _format(data_format)
    inputs = to_float(inputs)
    n = _spatial(inputs, data_format)
    sizes = _spatial_sizes(inputs, data_format, n)
    outs = _tuple(output_size, n, "output_size")
    first = 1 if data_format == "channels_last" else 2
    x = inputs
    for i, (size, out) in enumerate(zip(sizes, outs)):
        axis = first + i
        pieces = []
        for j in range(out):
            start, stop = (j * size) // out, -(-((j + 1) * size) // out)
            window = x[(slice(None),) * axis + (slice(start, stop),)]
            pieces.append(window.amax(axis, True) if kind == "max" else window.mean(axis=axis, keepdims=True))
        x = _np_shape.concatenate(pieces, axis)
    return x


@keras_op("inputs")
def adaptive_average_pool(inputs, output_size, data_format=None):
    return _adaptive(inputs, output_size, data_format, "avg")


@keras_op("inputs")
def adaptive_max_pool(inputs, output_size, data_format=None):
    return _adaptive(inputs, output_size, data_format, "max")


# ----------------------------------------------------------------------------- the rest


@keras_op("x1", "x2")
def psnr(x1, x2, max_val):
    """Peak signal-to-noise ratio, ``20 log10(max_val) - 10 log10(mse)``."""
    a, b = _float_pair(x1, x2)
    mse = ((a - b) * (a - b)).mean()
    return (mse.log() * (-10.0 / math.log(10.0))) + 20.0 * math.log10(float(max_val))


@keras_op("x")
def depth_to_space(x, block_size, data_format="channels_last"):
    b = int(block_size)
    if data_format == "channels_last":
        n, h, w, c = x.shape
        out = x.reshape(n, h, w, b, b, c // (b * b)).permute(0, 1, 3, 2, 4, 5)
        return out.reshape(n, h * b, w * b, c // (b * b))
    n, c, h, w = x.shape
    out = x.reshape(n, b, b, c // (b * b), h, w).permute(0, 3, 4, 1, 5, 2)
    return out.reshape(n, c // (b * b), h * b, w * b)


@keras_op("x")
def space_to_depth(x, block_size, data_format="channels_last"):
    b = int(block_size)
    if data_format == "channels_last":
        n, h, w, c = x.shape
        out = x.reshape(n, h // b, b, w // b, b, c).permute(0, 1, 3, 2, 4, 5)
        return out.reshape(n, h // b, w // b, b * b * c)
    n, c, h, w = x.shape
    out = x.reshape(n, c, h // b, b, w // b, b).permute(0, 3, 5, 1, 2, 4)
    return out.reshape(n, b * b * c, h // b, w // b)


def _pair(value, name):
    return _tuple(value, 2, name)


def _unfold_index(h, w, kernel, dilation, padding, stride):
    kh, kw = kernel
    oh = (h + 2 * padding[0] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (w + 2 * padding[1] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    rows = (np.arange(oh) * stride[0])[None, :, None, None] + (np.arange(kh) * dilation[0])[:, None, None, None]
    cols = (np.arange(ow) * stride[1])[None, None, None, :] + (np.arange(kw) * dilation[1])[None, None, :, None]
    return np.broadcast_to(rows, (kh, oh, kw, ow)), np.broadcast_to(cols, (kh, oh, kw, ow)), oh, ow


@keras_op("x")
def unfold(x, kernel_size, dilation=1, padding=0, stride=1):
    """Sliding blocks of an ``(N, C, H, W)`` image as ``(N, C·kh·kw, L)`` (``torch.nn.functional.unfold``)."""
    kernel, dilation, padding, stride = (_pair(v, n) for v, n in ((kernel_size, "kernel_size"),
                                         (dilation, "dilation"), (padding, "padding"), (stride, "stride")))
    n, c, h, w = x.shape
    xp = _np_shape.pad(x, ((0, 0), (0, 0), (padding[0],) * 2, (padding[1],) * 2))
    rows, cols, oh, ow = _unfold_index(h, w, kernel, dilation, padding, stride)
    patches = xp[:, :, rows.transpose(0, 2, 1, 3), cols.transpose(0, 2, 1, 3)]   # (n, c, kh, kw, oh, ow)
    return patches.reshape(n, c * kernel[0] * kernel[1], oh * ow)


@keras_op("x")
def fold(x, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """The adjoint of ``unfold``: sums blocks ``(N, C·kh·kw, L)`` back into ``(N, C, H, W)``."""
    kernel, dilation, padding, stride = (_pair(v, n) for v, n in ((kernel_size, "kernel_size"),
                                         (dilation, "dilation"), (padding, "padding"), (stride, "stride")))
    h, w = _pair(output_size, "output_size")
    n = x.shape[0]
    c = x.shape[1] // (kernel[0] * kernel[1])
    rows, cols, oh, ow = _unfold_index(h, w, kernel, dilation, padding, stride)
    hp, wp = h + 2 * padding[0], w + 2 * padding[1]
    flat_index = (rows.transpose(0, 2, 1, 3) * wp + cols.transpose(0, 2, 1, 3)).reshape(-1)
    scatter = np.zeros((flat_index.size, hp * wp), dtype=to_float(x).dtype)
    scatter[np.arange(flat_index.size), flat_index] = 1
    blocks = to_float(x).reshape(n, c, -1)
    out = (blocks @ Tensor(scatter)).reshape(n, c, hp, wp)
    return out[:, :, padding[0]:padding[0] + h, padding[1]:padding[1] + w]



# ----------------------------------------------------------------------------- attention


@keras_op("query", "key", "value", "bias", "mask")
def dot_product_attention(query, key, value, bias=None, mask=None, scale=None, is_causal=False,
                          flash_attention=None, attn_logits_soft_cap=None):
    """Keras's ``ops.dot_product_attention``: inputs ``(B, T, N, H)`` (4-D, as Keras),
    ``softmax(q kᵀ * scale + bias, masked) v`` on minnet's fused attention kernel
    (``minnet.functional.dot_product_attention_keras``; the math in docs/math/attention.md)."""
    return F.dot_product_attention_keras(query, key, value, bias=bias, mask=mask, scale=scale,
                                         is_causal=is_causal, flash_attention=flash_attention,
                                         attn_logits_soft_cap=attn_logits_soft_cap)
