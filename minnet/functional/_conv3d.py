"""Differentiable ``conv3d`` and ``conv_transpose3d``, composed from the 2-D kernels.

A 3-D convolution is a sum over the kernel's depth taps of 2-D convolutions: for tap ``kd``
the input depths ``od*sd + kd*dd`` (``od`` = 0 .. OD-1) are a strided slice of the depth axis,
folded into the batch axis, and convolved with the 2-D kernel ``weight[:, :, kd]``
(docs/math/convolution.md, "3-D convolution")::

    y[n, :, od] = bias + sum_kd conv2d(x_padded[n, :, od*sd + kd*dd], weight[:, :, kd])

so the work runs in ``conv2d``'s im2col + GEMM kernels, in either layout, and the gradients
are the autograd's of these ops (``conv2d``'s own backward, slicing, reshapes). The taps are
added in order kd = 0, 1, ..., so results do not depend on the thread count.

A transposed 3-D convolution scatters instead: tap ``kd`` of ``conv_transpose2d`` on input
depth ``id`` lands at full-output depth ``id*sd + kd*dd``; all taps come from one
``conv_transpose2d`` whose output channels are the (tap, channel) pairs, then each tap's
slice is placed (zeros between, for a stride) and added in tap order.
"""
import numbers

import numpy as np

from minnet._checks import check_int_tuple
from minnet.autograd import Tensor, cat
from minnet.functional._conv import (as_input, check_cast_source, conv2d, conv_transpose2d,
                                     data, float_dtype)

__all__ = ["conv3d", "conv_transpose3d"]

_LAYOUTS = ("channels_first", "channels_last")
_AXES = ("depth", "height", "width")


def _layout(data_format):
    if data_format not in _LAYOUTS:
        raise ValueError(f"Invalid value for argument `data_format`: expected 'channels_first' "
                         f"or 'channels_last'. Received: data_format={data_format!r}")
    return data_format == "channels_last"


def _pairs(padding, kernel, stride, dilation, allow_same=True):
    """``padding`` as ((front, back), (top, bottom), (left, right))."""
    if isinstance(padding, str) and allow_same:
        mode = padding.lower()
        if mode == "valid":
            return ((0, 0),) * 3
        if mode == "same":
            if any(s != 1 for s in stride):
                raise ValueError(f"Invalid value for argument `padding`: 'same' needs stride 1 "
                                 f"(PyTorch's rule; the Conv3D layer computes Keras's 'same' "
                                 f"pads for strides). Received: padding='same', stride={stride}")
            totals = [d * (k - 1) for k, d in zip(kernel, dilation)]
            return tuple((t // 2, t - t // 2) for t in totals)
    if isinstance(padding, numbers.Integral) and not isinstance(padding, bool) and padding >= 0:
        return ((int(padding), int(padding)),) * 3
    if isinstance(padding, (list, tuple)) and len(padding) == 3:
        if all(isinstance(p, numbers.Integral) and not isinstance(p, bool) and p >= 0
               for p in padding):
            return tuple((int(p), int(p)) for p in padding)
        if all(isinstance(p, (list, tuple)) and len(p) == 2 and all(
                isinstance(q, numbers.Integral) and not isinstance(q, bool) and q >= 0 for q in p)
               for p in padding):
            return tuple((int(a), int(b)) for a, b in padding)
    raise ValueError(f"Invalid value for argument `padding`: expected an int >= 0, three of them, "
                     f"three (before, after) pairs{', ' + repr('valid') + ' or ' + repr('same') if allow_same else ''}. "
                     f"Received: padding={padding!r}")


def _tensor(value, dtype):
    x = value if isinstance(value, Tensor) else Tensor(np.asarray(value))
    return x if x.dtype == dtype else x.astype(dtype)


def _zeros(like, axis, count):
    shape = list(like.shape)
    shape[axis] = count
    return Tensor(np.zeros(shape, dtype=like.dtype))


def _pad_axis(x, axis, before, after):
    parts = ([_zeros(x, axis, before)] if before else []) + [x] + (
        [_zeros(x, axis, after)] if after else [])
    return x if len(parts) == 1 else cat(parts, dim=axis)


def _check_input(x, w_shape, channels_per_group, channels_last, op):
    shape = data(x).shape
    layout = "(N, D, H, W, C)" if channels_last else "(N, C, D, H, W)"
    if len(shape) != 5:
        raise ValueError(f"Invalid argument `input` of {op}: expected a 5-D {layout} array (or "
                         f"4-D without the batch axis). Received: shape={shape}")
    channels = shape[4] if channels_last else shape[1]
    if channels != channels_per_group:
        raise ValueError(f"Invalid argument `input` of {op}: expected {channels_per_group} "
                         f"channels on the channel axis of {layout} (weight of shape {w_shape}). "
                         f"Received: input of shape {shape}")
    return shape


def _check_weight(weight, op, layout):
    w_shape = data(weight).shape
    if len(w_shape) != 5 or min(w_shape) < 1:
        raise ValueError(f"Invalid argument `weight` of {op}: expected a 5-D {layout} array with "
                         f"non-zero sizes. Received: shape={w_shape}")
    return w_shape


def _bias(bias, size, dtype, channels_last, y):
    if bias is None:
        return y
    b = _tensor(as_input("bias", bias), dtype)
    if tuple(b.shape) != (size,):
        raise ValueError(f"Invalid argument `bias`: expected shape ({size},). "
                         f"Received: shape={tuple(b.shape)}")
    return y + (b if channels_last else b.reshape(size, 1, 1, 1))


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, *,
           data_format="channels_first"):
    """3-D cross-correlation (``torch.nn.functional.conv3d``), NCDHW or NDHWC.

    ``y[n, f, od, oh, ow] = bias[f] + sum_{c,i,j,k} weight[f, c, i, j, k] *
    x_padded[n, g*C/groups + c, od*sd + i*dd, oh*sh + j*dh, ow*sw + k*dw]``.

    Args:
        input: ``(N, C, D, H, W)`` (``(N, D, H, W, C)`` with ``data_format="channels_last"``),
            or one volume without the batch axis.
        weight: ``(F, C/groups, kd, kh, kw)``, float32 or float64 (PyTorch's layout in both
            data layouts).
        bias: ``(F,)`` or None.
        stride, dilation: int or a triple, >= 1.
        padding: int, a triple, three ``(before, after)`` pairs, ``"valid"`` or ``"same"``
            (stride 1; the extra plane/row/column at the end for an even effective kernel,
            as PyTorch).
        groups: int >= 1 dividing C and F.

    Returns:
        Tensor ``(N, F, OD, OH, OW)`` (channels_last ``(N, OD, OH, OW, F)``), with
        ``OD = (D + front + back - dd*(kd-1) - 1) // sd + 1`` (likewise OH, OW).

    Example:
        >>> w = mn.Parameter(np.ones((4, 2, 3, 3, 3), np.float32))
        >>> F.conv3d(np.ones((1, 2, 5, 6, 7), np.float32), w, padding="same").shape
        (1, 4, 5, 6, 7)
    """
    channels_last = _layout(data_format)
    weight = as_input("weight", weight)
    dtype = float_dtype("weight", weight)
    w_shape = _check_weight(weight, "conv3d", "(filters, in_channels / groups, kd, kh, kw)")
    if isinstance(groups, bool) or not isinstance(groups, numbers.Integral) or groups < 1 \
            or w_shape[0] % groups:
        raise ValueError(f"Invalid value for argument `groups`: expected an int >= 1 dividing the "
                         f"{w_shape[0]} filters. Received: groups={groups!r}")
    x = as_input("input", input)
    check_cast_source("input", x)
    unbatched = data(x).ndim == 4
    if unbatched:
        x = x.reshape(1, *x.shape) if isinstance(x, Tensor) else data(x)[None]
    shape = _check_input(x, w_shape, w_shape[1] * int(groups), channels_last, "conv3d")
    stride = check_int_tuple("stride", stride, 3, error=ValueError)
    dilation = check_int_tuple("dilation", dilation, 3, error=ValueError)
    pads = _pairs(padding, w_shape[2:], stride, dilation)
    spatial = shape[1:4] if channels_last else shape[2:]
    for axis, size, k, d, (p0, p1) in zip(_AXES, spatial, w_shape[2:], dilation, pads):
        if d * (k - 1) + 1 > size + p0 + p1:
            raise ValueError(f"Invalid argument `weight` of conv3d: the (dilated) kernel {axis} "
                             f"{d * (k - 1) + 1} is larger than the padded input {axis} "
                             f"{size + p0 + p1}. Received: input of shape {shape} "
                             f"({data_format}), weight of shape {w_shape}, dilation={dilation}")
    x = _tensor(x, dtype)
    xt = x if channels_last else x.permute(0, 2, 1, 3, 4)          # (N, D, ...)
    xt = _pad_axis(xt, 1, *pads[0])
    sd, dd, kd_size = stride[0], dilation[0], w_shape[2]
    out_depth = (xt.shape[1] - dd * (kd_size - 1) - 1) // sd + 1
    n = shape[0]
    total = None
    for kd in range(kd_size):                   # fixed tap order: thread-count independent
        start = kd * dd
        planes = xt[:, start:start + (out_depth - 1) * sd + 1:sd]     # (N, OD, ...)
        planes = planes.reshape(n * out_depth, *planes.shape[2:])
        part = conv2d(planes, weight[:, :, kd], None, stride=stride[1:], padding=pads[1:],
                      dilation=dilation[1:], groups=int(groups), data_format=data_format)
        total = part if total is None else total + part
    y = total.reshape(n, out_depth, *total.shape[1:])
    if not channels_last:
        y = y.permute(0, 2, 1, 3, 4)
    y = _bias(bias, w_shape[0], dtype, channels_last, y)
    return y.reshape(*y.shape[1:]) if unbatched else y


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     dilation=1, *, data_format="channels_first"):
    """3-D transposed convolution (``torch.nn.functional.conv_transpose3d``, groups=1).

    Args:
        input: ``(N, C_in, D, H, W)`` (``(N, D, H, W, C_in)`` with channels_last).
        weight: ``(C_in, C_out, kd, kh, kw)``, PyTorch's ``ConvTranspose3d`` layout.
        bias: ``(C_out,)`` or None.
        stride, dilation: int or a triple, >= 1.
        padding: int, a triple or three ``(before, after)`` pairs >= 0: planes removed from
            each side of the full output.
        output_padding: int or a triple added at the end of each axis (each < its stride or
            its dilation, as PyTorch requires).

    Returns:
        Tensor ``(N, C_out, OD, OH, OW)`` with ``OD = (D - 1)*sd - front - back +
        dd*(kd - 1) + output_padding + 1`` (likewise OH, OW).
    """
    channels_last = _layout(data_format)
    weight = as_input("weight", weight)
    dtype = float_dtype("weight", weight)
    w_shape = _check_weight(weight, "conv_transpose3d", "(in_channels, out_channels, kd, kh, kw)")
    x = as_input("input", input)
    check_cast_source("input", x)
    unbatched = data(x).ndim == 4
    if unbatched:
        x = x.reshape(1, *x.shape) if isinstance(x, Tensor) else data(x)[None]
    shape = _check_input(x, w_shape, w_shape[0], channels_last, "conv_transpose3d")
    stride = check_int_tuple("stride", stride, 3, error=ValueError)
    dilation = check_int_tuple("dilation", dilation, 3, error=ValueError)
    extra = check_int_tuple("output_padding", output_padding, 3, minimum=0, error=ValueError)
    for axis, op, s, d in zip(_AXES, extra, stride, dilation):
        if op >= s and op >= d:
            raise ValueError(f"Invalid value for argument `output_padding`: each value must be "
                             f"smaller than its stride or its dilation ({axis}: stride {s}, "
                             f"dilation {d}). Received: output_padding={output_padding!r}")
    pads = _pairs(padding, w_shape[2:], stride, dilation, allow_same=False)
    x = _tensor(x, dtype)
    n, c_in, c_out, kd_size = shape[0], w_shape[0], w_shape[1], w_shape[2]
    depth = shape[1] if channels_last else shape[2]
    sd, dd = stride[0], dilation[0]
    full = (depth - 1) * sd + dd * (kd_size - 1) + 1
    out_depth = full - pads[0][0] - pads[0][1] + extra[0]
    if out_depth < 1:
        raise ValueError(f"Invalid value for argument `padding` of conv_transpose3d: it removes "
                         f"the whole depth (full output {full}, padding {pads[0]}). Received: "
                         f"input of shape {shape}, weight of shape {w_shape}")
    xt = x if channels_last else x.permute(0, 2, 1, 3, 4)              # (N, D, ...)
    planes = xt.reshape(n * depth, *xt.shape[2:])
    # one conv_transpose2d for all taps: output channels ordered (tap, channel)
    taps = weight.permute(0, 2, 1, 3, 4) if isinstance(weight, Tensor) else Tensor(
        np.ascontiguousarray(np.transpose(weight, (0, 2, 1, 3, 4))))
    taps = taps.reshape(c_in, kd_size * c_out, *w_shape[3:])
    parts = conv_transpose2d(planes, taps, None, stride=stride[1:], padding=pads[1:],
                             output_padding=extra[1:], dilation=dilation[1:],
                             data_format=data_format)
    if channels_last:      # (N*D, OH, OW, taps*C_out) -> (N, D, taps, OH, OW, C_out)
        oh, ow = parts.shape[1:3]
        parts = parts.reshape(n, depth, oh, ow, kd_size, c_out).permute(0, 1, 4, 2, 3, 5)
    else:                  # (N*D, taps*C_out, OH, OW) -> (N, D, taps, C_out, OH, OW)
        parts = parts.reshape(n, depth, kd_size, c_out, *parts.shape[2:])
    length = max(full, pads[0][0] + out_depth)
    total = None
    for kd in range(kd_size):                   # fixed tap order: thread-count independent
        part = parts[:, :, kd]                                        # (N, D, ...)
        if sd > 1:                              # input depth i lands at i*sd: zeros between
            gaps = _zeros(part.unsqueeze(2), 2, sd - 1)
            part = cat([part.unsqueeze(2), gaps], dim=2).reshape(n, depth * sd, *part.shape[2:])
            part = part[:, :(depth - 1) * sd + 1]
        start = kd * dd
        part = _pad_axis(part, 1, start, length - start - part.shape[1])
        total = part if total is None else total + part
    y = total[:, pads[0][0]:pads[0][0] + out_depth]
    if not channels_last:
        y = y.permute(0, 2, 1, 3, 4)
    y = _bias(bias, c_out, dtype, channels_last, y)
    return y.reshape(*y.shape[1:]) if unbatched else y
