"""Differentiable ``conv2d`` in both image layouts (the math is in docs/math/convolution.md).

A thin ``Function`` over the Cython kernels in ``minnet._ext.conv_kernels``: this module
validates the arguments, resolves padding and output size, casts the input to the
weight's dtype, and keeps for backward only what backward will read.  The argument
helpers at the top are shared with ``functional/_linear.py``.
"""
import numbers

import numpy as np

from minnet._checks import check_int_tuple, check_pad_pairs
from minnet._config import get_num_threads
from minnet._ext import conv_kernels as _kernels
from minnet.autograd import Function, Tensor

__all__ = ["conv2d", "conv_transpose2d", "Convolution", "as_input", "cast", "check_cast_source", "data",
           "float_dtype"]


# --------------------------------------------------------------------------- helpers

def data(value):
    return value.data if isinstance(value, Tensor) else value


def as_input(name, value):
    """A Tensor stays a Tensor (so gradients can flow); anything else becomes an ndarray."""
    if isinstance(value, Tensor):
        return value
    if isinstance(value, np.ndarray):
        return value
    try:
        return np.asarray(value)
    except Exception as exc:  # ragged lists and the like
        raise TypeError(f"Invalid argument `{name}`: expected a Tensor or array-like. "
                        f"Received: {type(value).__name__}") from exc


def float_dtype(name, value):
    dtype = data(value).dtype
    if dtype not in (np.float32, np.float64):
        raise TypeError(f"Invalid argument `{name}`: expected a float32 or float64 array. "
                        f"Received: dtype={dtype}")
    return dtype


def check_cast_source(name, value):
    kind = data(value).dtype.kind
    if kind not in "fiub":
        raise TypeError(f"Invalid argument `{name}`: expected a real numeric array. "
                        f"Received: dtype={data(value).dtype}")


def cast(array, dtype):
    return np.ascontiguousarray(array, dtype=dtype)


def _resolve_padding(padding, kernel, stride, dilation):
    """Padding as ``((top, bottom), (left, right))``.

    Accepts an int, a pair ``(ph, pw)`` (symmetric), ``((top, bottom), (left, right))``,
    ``"valid"`` (no padding) or ``"same"`` (output size = input size, stride 1 only; an
    even effective kernel puts the extra row/column at the bottom/right, as PyTorch does).
    """
    if isinstance(padding, str):
        mode = padding.lower()
        if mode == "valid":
            return (0, 0), (0, 0)
        if mode == "same":
            if stride != (1, 1):
                raise ValueError(f"Invalid value for argument `padding`: padding='same' is not "
                                 f"supported for strided convolutions (as in PyTorch). "
                                 f"Received: padding='same' with stride={stride}")
            pads = []
            for k, d in zip(kernel, dilation):
                total = d * (k - 1)
                pads.append((total // 2, total - total // 2))
            return tuple(pads)
        raise ValueError(f"Invalid value for argument `padding`: expected an int, a pair of "
                         f"ints, 'valid' or 'same'. Received: padding={padding!r}")
    return check_pad_pairs("padding", padding)


# --------------------------------------------------------------------------- conv2d

class Convolution(Function):
    """2-D convolution in either layout (backward node ``ConvolutionBackward``).

    forward(ctx, x, weight, bias, stride, padding, dilation, out_size, groups, data_format)
    with ``padding = (pad_top, pad_left)``; ``out_size`` implies the bottom/right padding.
    The weight is ``(F, C/groups, kh, kw)`` whatever ``data_format``.
    """

    @staticmethod
    def forward(ctx, x, weight, bias, stride=(1, 1), padding=(0, 0), dilation=(1, 1),
                out_size=None, groups=1, data_format="channels_first"):
        x = cast(x, weight.dtype)
        weight = cast(weight, weight.dtype)                 # the kernels refuse strided operands
        bias = None if bias is None else cast(bias, bias.dtype)
        n_threads = get_num_threads()
        if groups == 1:
            y = _kernels.conv2d_forward(x, weight, bias, stride, padding, dilation, out_size,
                                        n_threads=n_threads, data_format=data_format)
        else:
            y = _grouped(lambda xg, wg, bg: _kernels.conv2d_forward(
                xg, wg, bg, stride, padding, dilation, out_size, n_threads=n_threads,
                data_format=data_format), x, weight, bias, groups, data_format)
        # The input, not its im2col matrix (kh*kw times larger), is kept: backward
        # rebuilds the patches.  x is needed only for dW, the weight only for dX.
        ctx.save_for_backward(x if ctx.needs_input_grad[1] else None,
                              weight if ctx.needs_input_grad[0] else None)
        ctx.geometry = (x.shape, weight.shape, stride, padding, dilation, groups, data_format)
        return y

    @staticmethod
    def backward(ctx, grad_y):
        x, weight = ctx.saved_tensors
        x_shape, w_shape, stride, padding, dilation, groups, data_format = ctx.geometry
        needs = ctx.needs_input_grad
        need_bias = len(needs) > 2 and needs[2]
        if not (needs[0] or needs[1] or need_bias):
            return None, None, None
        dtype = (weight if weight is not None else x).dtype
        dy = cast(grad_y, dtype)
        # The kernel wants both operands; the stand-in for one that is not saved is never
        # read (tests/_ext/test_unread_operands.py), so it is left uninitialised.
        if x is None:
            x = np.empty(x_shape, dtype)
        if weight is None:
            weight = np.empty(w_shape, dtype)
        kwargs = dict(need_input_grad=needs[0], need_weight_grad=needs[1],
                      need_bias_grad=need_bias, n_threads=get_num_threads(),
                      data_format=data_format)
        if groups == 1:
            return _kernels.conv2d_backward(x, weight, dy, stride, padding, dilation, **kwargs)
        return _grouped_backward(x, weight, dy, groups, data_format, lambda xg, wg, dyg:
                                 _kernels.conv2d_backward(xg, wg, dyg, stride, padding,
                                                          dilation, **kwargs))

    @staticmethod
    def backward_graph(ctx, grad_y):
        # Double backward: dx and dW are themselves convolutions (ConvInputGrad /
        # ConvWeightGrad below), each differentiable again (docs/math/autograd_ops.md).
        x, weight = ctx.saved_arrays
        x_shape, w_shape, stride, padding, dilation, groups, data_format = ctx.geometry
        if groups != 1:
            raise RuntimeError("ConvolutionBackward with groups > 1 is not twice differentiable: "
                               "its double backward is written for groups=1 only.")
        geometry = dict(x_shape=x_shape, w_shape=w_shape, stride=stride, padding=padding,
                        dilation=dilation, data_format=data_format)
        needs = ctx.needs_input_grad
        dx = ConvInputGrad.apply(grad_y, ctx.graph_input(1, weight), **geometry) if needs[0] else None
        dw = ConvWeightGrad.apply(ctx.graph_input(0, x), grad_y, **geometry) if needs[1] else None
        spatial_and_batch = (0, 1, 2) if data_format == "channels_last" else (0, 2, 3)
        db = grad_y.sum(axis=spatial_and_batch) if len(needs) > 2 and needs[2] else None
        return dx, dw, db


def _out_hw(dy, data_format):
    return dy.shape[1:3] if data_format == "channels_last" else dy.shape[2:]


class ConvInputGrad(Function):
    """``dx`` of a convolution from ``(dy, weight)`` (a transposed convolution, by col2im)."""

    node_name = "ConvolutionBackwardBackward"

    @staticmethod
    def forward(ctx, dy, weight, x_shape=None, w_shape=None, stride=(1, 1), padding=(0, 0),
                dilation=(1, 1), data_format="channels_first"):
        ctx.save_for_backward(dy, weight)
        ctx.geometry = dict(x_shape=x_shape, w_shape=w_shape, stride=stride, padding=padding,
                            dilation=dilation, data_format=data_format)
        dy = cast(dy, weight.dtype)
        weight = cast(weight, weight.dtype)
        dx, _, _ = _kernels.conv2d_backward(np.empty(x_shape, weight.dtype), weight, dy, stride,
                                            padding, dilation, need_input_grad=True,
                                            need_weight_grad=False, need_bias_grad=False,
                                            n_threads=get_num_threads(), data_format=data_format)
        return dx

    @staticmethod
    def backward_graph(ctx, gg):
        dy, weight = ctx.saved_arrays
        geo = ctx.geometry
        g_dy = g_w = None
        if ctx.needs_input_grad[0]:      # <conv_T(dy, W), gg> = <dy, conv(gg, W)>
            g_dy = Convolution.apply(gg, ctx.graph_input(1, weight), None, stride=geo["stride"],
                                     padding=geo["padding"], dilation=geo["dilation"],
                                     out_size=_out_hw(dy, geo["data_format"]),
                                     data_format=geo["data_format"])
        if ctx.needs_input_grad[1]:
            g_w = ConvWeightGrad.apply(gg, ctx.graph_input(0, dy), **geo)
        return g_dy, g_w

    backward = backward_graph        # on arrays (no graph recorded) it is the same computation


class ConvWeightGrad(Function):
    """``dW`` of a convolution from ``(x, dy)`` (a correlation of the input with dy)."""

    node_name = "ConvolutionBackwardBackward"

    @staticmethod
    def forward(ctx, x, dy, x_shape=None, w_shape=None, stride=(1, 1), padding=(0, 0),
                dilation=(1, 1), data_format="channels_first"):
        ctx.save_for_backward(x, dy)
        ctx.geometry = dict(x_shape=x_shape, w_shape=w_shape, stride=stride, padding=padding,
                            dilation=dilation, data_format=data_format)
        dy = cast(dy, x.dtype)
        x = cast(x, x.dtype)
        _, dw, _ = _kernels.conv2d_backward(x, np.empty(w_shape, x.dtype), dy, stride, padding,
                                            dilation, need_input_grad=False,
                                            need_weight_grad=True, need_bias_grad=False,
                                            n_threads=get_num_threads(), data_format=data_format)
        return dw

    @staticmethod
    def backward_graph(ctx, gg):
        x, dy = ctx.saved_arrays
        geo = ctx.geometry
        g_x = g_dy = None
        if ctx.needs_input_grad[0]:      # <dW(x, dy), gg> = <x, conv_T(dy, gg)>
            g_x = ConvInputGrad.apply(ctx.graph_input(1, dy), gg, **geo)
        if ctx.needs_input_grad[1]:      # ... = <dy, conv(x, gg)>
            g_dy = Convolution.apply(ctx.graph_input(0, x), gg, None, stride=geo["stride"],
                                     padding=geo["padding"], dilation=geo["dilation"],
                                     out_size=_out_hw(dy, geo["data_format"]),
                                     data_format=geo["data_format"])
        return g_x, g_dy

    backward = backward_graph        # on arrays (no graph recorded) it is the same computation


def _channel_slice(array, start, stop, data_format):
    """Channels [start, stop) of an image batch, C-contiguous."""
    if data_format == "channels_last":
        return np.ascontiguousarray(array[..., start:stop])
    return np.ascontiguousarray(array[:, start:stop])


def _grouped(run, x, weight, bias, groups, data_format):
    """A grouped convolution as ``groups`` convolutions of C/groups channels each."""
    axis = 3 if data_format == "channels_last" else 1
    c_in = x.shape[axis] // groups
    f_out = weight.shape[0] // groups
    outs = [run(_channel_slice(x, g * c_in, (g + 1) * c_in, data_format),
                weight[g * f_out:(g + 1) * f_out],
                None if bias is None else bias[g * f_out:(g + 1) * f_out])
            for g in range(groups)]
    return np.concatenate(outs, axis=axis)


def _grouped_backward(x, weight, dy, groups, data_format, run):
    axis = 3 if data_format == "channels_last" else 1
    c_in = x.shape[axis] // groups
    f_out = weight.shape[0] // groups
    grads = [run(_channel_slice(x, g * c_in, (g + 1) * c_in, data_format),
                 weight[g * f_out:(g + 1) * f_out],
                 _channel_slice(dy, g * f_out, (g + 1) * f_out, data_format))
             for g in range(groups)]
    dx = dw = db = None
    if grads[0][0] is not None:
        dx = np.concatenate([g[0] for g in grads], axis=axis)
    if grads[0][1] is not None:
        dw = np.concatenate([g[1] for g in grads], axis=0)
    if grads[0][2] is not None:
        db = np.concatenate([g[2] for g in grads], axis=0)
    return dx, dw, db


_LAYOUTS = ("channels_first", "channels_last")


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, *,
           data_format="channels_first"):
    """2-D cross-correlation (``torch.nn.functional.conv2d``), NCHW or NHWC.

    ``y[n, f, oh, ow] = bias[f] + sum_{c,i,j} weight[f, c, i, j] *
    x_padded[n, g*C/groups + c, oh*sh + i*dh, ow*sw + j*dw]`` (``g`` the group of
    filter ``f``).  Computed as a GEMM on the im2col patches of the input, in the input's
    own layout; backward rebuilds the patches from the saved input
    (docs/math/convolution.md).  ``input`` is cast to the weight's dtype.

    Args:
        input: Tensor or array ``(N, C, H, W)`` (``(N, H, W, C)`` with
            ``data_format="channels_last"``), or one image without the batch axis.
        weight: ``(F, C/groups, kh, kw)``, float32 or float64: PyTorch's layout in both
            data layouts.
        bias: ``(F,)`` or None.
        stride: int or ``(sh, sw)``, >= 1.
        padding: int, ``(ph, pw)``, ``((top, bottom), (left, right))``, ``"valid"`` or
            ``"same"`` (stride 1 only; extra row/column at the bottom/right for an even
            effective kernel, as PyTorch).
        dilation: int or ``(dh, dw)``, >= 1.
        groups: int >= 1 dividing both C and F (``groups == C``: depthwise).
        data_format: ``"channels_first"`` (PyTorch's default, NCHW) or ``"channels_last"``
            (NHWC in, NHWC out).

    Returns:
        Tensor ``(N, F, out_h, out_w)`` (channels_last: ``(N, out_h, out_w, F)``) with
        ``out_h = (H + top + bottom - dh*(kh-1) - 1) // sh + 1`` (likewise out_w).

    Example:
        >>> w = mn.Parameter(np.ones((8, 3, 3, 3), np.float32))
        >>> F.conv2d(np.ones((2, 3, 32, 32), np.float32), w, padding="same").shape
        (2, 8, 32, 32)
        >>> F.conv2d(np.ones((2, 32, 32, 3), np.float32), w, padding="same",
        ...          data_format="channels_last").shape
        (2, 32, 32, 8)
    """
    if data_format not in _LAYOUTS:
        raise ValueError(f"Invalid value for argument `data_format`: expected "
                         f"'channels_first' or 'channels_last'. "
                         f"Received: data_format={data_format!r}")
    channels_last = data_format == "channels_last"
    layout = "(N, H, W, C)" if channels_last else "(N, C, H, W)"
    x = as_input("input", input)
    weight = as_input("weight", weight)
    dtype = float_dtype("weight", weight)
    check_cast_source("input", x)
    w_shape = data(weight).shape
    if len(w_shape) != 4:
        raise ValueError(f"Invalid argument `weight`: expected a 4-D (filters, in_channels, "
                         f"kernel_height, kernel_width) array. Received: shape={w_shape}")
    if min(w_shape) < 1:
        raise ValueError(f"Invalid argument `weight`: expected non-zero dimensions. "
                         f"Received: shape={w_shape}")
    if isinstance(groups, bool) or not isinstance(groups, numbers.Integral) or groups < 1:
        raise ValueError(f"Invalid value for argument `groups`: expected an int >= 1. "
                         f"Received: groups={groups!r}")
    groups = int(groups)
    unbatched = data(x).ndim == 3
    if unbatched:
        x = x.reshape(1, *x.shape) if isinstance(x, Tensor) else x[None]
    x_shape = data(x).shape
    if len(x_shape) != 4:
        raise ValueError(f"Invalid argument `input`: expected a 4-D {layout} array (or 3-D "
                         f"without the batch axis). Received: shape={x_shape}")
    channels = x_shape[3] if channels_last else x_shape[1]
    spatial = x_shape[1:3] if channels_last else x_shape[2:]
    if channels != w_shape[1] * groups:
        raise ValueError(f"Invalid argument `input`: expected {w_shape[1] * groups} input "
                         f"channels (weight of shape {w_shape}, groups={groups}) on the "
                         f"channel axis of {layout} ({data_format}). "
                         f"Received: input of shape {x_shape}")
    if w_shape[0] % groups:
        raise ValueError(f"Invalid value for argument `groups`: expected a divisor of the "
                         f"{w_shape[0]} filters. Received: groups={groups}")
    stride = check_int_tuple("stride", stride, 2, error=ValueError)
    dilation = check_int_tuple("dilation", dilation, 2, error=ValueError)
    (top, bottom), (left, right) = _resolve_padding(padding, w_shape[2:], stride, dilation)
    out_size = []
    for size, k, s, d, p0, p1, axis in ((spatial[0], w_shape[2], stride[0], dilation[0], top, bottom, "height"),
                                        (spatial[1], w_shape[3], stride[1], dilation[1], left, right, "width")):
        effective = d * (k - 1) + 1
        if effective > size + p0 + p1:
            raise ValueError(
                f"Invalid argument `weight`: the (dilated) kernel {axis} {effective} is larger "
                f"than the padded input {axis} {size + p0 + p1} (input {size}, padding {p0}+{p1}). "
                f"Received: input of shape {x_shape} ({data_format}), weight of shape "
                f"{w_shape}, dilation={dilation}")
        out_size.append(_kernels.conv_output_size(size, k, s, p0, p1, d))
    if bias is not None:
        bias = as_input("bias", bias)
        check_cast_source("bias", bias)
        if data(bias).shape != (w_shape[0],):
            raise ValueError(f"Invalid argument `bias`: expected shape ({w_shape[0]},). "
                             f"Received: shape={data(bias).shape}")
        if data(bias).dtype != dtype:
            bias = bias.astype(dtype) if isinstance(bias, Tensor) else cast(bias, dtype)
    y = Convolution.apply(x, weight, bias, stride=stride, padding=(top, left),
                          dilation=dilation, out_size=tuple(out_size), groups=groups,
                          data_format=data_format)
    if unbatched:
        y = y.reshape(*y.shape[1:])
    return y


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, dilation=1,
                     *, data_format="channels_first"):
    """2-D transposed convolution (``torch.nn.functional.conv_transpose2d``, groups=1).

    The input gradient of a convolution, used as a layer: each input pixel scatters
    ``weight[c_in, :, :, :]`` into the output (col2im of ``W_colᵀ @ x``), so the backward of
    ``conv2d`` and the forward of this op are one computation (``ConvInputGrad``), and this
    op's own backward is a convolution (docs/math/convolution.md).

    Args:
        input: ``(N, C_in, H, W)`` (``(N, H, W, C_in)`` with ``data_format="channels_last"``).
        weight: ``(C_in, C_out, kh, kw)``, PyTorch's ``ConvTranspose2d`` layout.
        bias: ``(C_out,)`` or None.
        stride, dilation: int or pair, >= 1.
        padding: int or pair >= 0 (rows/columns removed from each side of the full output),
            or ``((top, bottom), (left, right))``.
        output_padding: int or pair, added to the bottom/right of the output (< stride or
            < dilation, as PyTorch requires).

    Returns:
        Tensor ``(N, C_out, H_out, W_out)`` with ``H_out = (H - 1)*sh - top - bottom +
        dh*(kh - 1) + output_padding + 1`` (channels_last: ``(N, H_out, W_out, C_out)``).
    """
    if data_format not in _LAYOUTS:
        raise ValueError(f"Invalid value for argument `data_format`: expected "
                         f"'channels_first' or 'channels_last'. "
                         f"Received: data_format={data_format!r}")
    x = as_input("input", input)
    weight = as_input("weight", weight)
    dtype = float_dtype("weight", weight)
    check_cast_source("input", x)
    w_shape = data(weight).shape
    x_shape = data(x).shape
    channels_last = data_format == "channels_last"
    if len(w_shape) != 4:
        raise ValueError(f"Invalid argument `weight`: expected a 4-D (C_in, C_out, kh, kw) array. "
                         f"Received: shape={w_shape}")
    if len(x_shape) != 4 or x_shape[3 if channels_last else 1] != w_shape[0]:
        layout = "(N, H, W, C_in)" if channels_last else "(N, C_in, H, W)"
        raise ValueError(f"Invalid argument `input`: expected a 4-D {layout} array with "
                         f"C_in={w_shape[0]} (weight {w_shape}). Received: shape={x_shape}")
    stride = check_int_tuple("stride", stride, 2, error=ValueError)
    dilation = check_int_tuple("dilation", dilation, 2, error=ValueError)
    output_padding = check_int_tuple("output_padding", output_padding, 2, minimum=0, error=ValueError)
    pads = check_pad_pairs("padding", padding)
    for name, op, s, d in zip(("height", "width"), output_padding, stride, dilation):
        if op >= s and op >= d:
            raise ValueError(f"Invalid value for argument `output_padding`: expected each value "
                             f"smaller than the stride or the dilation. Received: "
                             f"output_padding={tuple(output_padding)} with stride={stride}")
    spatial = x_shape[1:3] if channels_last else x_shape[2:]
    out = []
    for size, k, s, d, (top, bottom), op in zip(spatial, w_shape[2:], stride, dilation, pads,
                                                 output_padding):
        length = (size - 1) * s - top - bottom + d * (k - 1) + op + 1
        if length < 1:
            raise ValueError(f"conv_transpose2d: padding {tuple(pads)} removes the whole output "
                             f"(input {x_shape}, kernel {w_shape[2:]}, stride {stride}).")
        out.append(length)
    n = x_shape[0]
    out_shape = (n, out[0], out[1], w_shape[1]) if channels_last else (n, w_shape[1], out[0], out[1])
    x = x if data(x).dtype == dtype else (x.astype(dtype) if isinstance(x, Tensor) else cast(x, dtype))
    y = ConvInputGrad.apply(x, weight, x_shape=out_shape, w_shape=w_shape, stride=stride,
                            padding=(pads[0][0], pads[1][0]), dilation=dilation,
                            data_format=data_format)
    if bias is None:
        return y
    bias = as_input("bias", bias)
    if data(bias).shape != (w_shape[1],):
        raise ValueError(f"Invalid argument `bias`: expected shape ({w_shape[1]},). "
                         f"Received: shape={data(bias).shape}")
    bias = bias if isinstance(bias, Tensor) else Tensor(cast(bias, dtype))
    return y + (bias if channels_last else bias.reshape(-1, 1, 1))
