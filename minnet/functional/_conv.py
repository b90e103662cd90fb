"""Differentiable ``linear`` and ``conv2d`` (the math is in docs/math/linear.md and convolution.md).

Both are thin ``Function`` subclasses over the Cython kernels in ``minnet._ext._conv``:
this module validates the arguments, resolves padding and output size, casts the input
to the weight's dtype, and keeps for backward only what backward will read.
"""
import numbers

import numpy as np

from minnet._config import get_num_threads
from minnet._ext import _conv as _kernels
from minnet.autograd import Function, Tensor
from minnet.autograd.grad_mode import anomaly_state, grad_state

__all__ = ["linear", "conv2d", "Addmm", "Mm", "Convolution"]


# --------------------------------------------------------------------------- helpers

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _data(value):
    return value.data if isinstance(value, Tensor) else value


def _as_input(name, value):
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


def _float_dtype(name, value):
    dtype = _data(value).dtype
    if dtype not in (np.float32, np.float64):
        raise TypeError(f"Invalid argument `{name}`: expected a float32 or float64 array. "
                        f"Received: dtype={dtype}")
    return dtype


def _check_cast_source(name, value):
    kind = _data(value).dtype.kind
    if kind not in "fiub":
        raise TypeError(f"Invalid argument `{name}`: expected a real numeric array. "
                        f"Received: dtype={_data(value).dtype}")


def _cast(array, dtype):
    return np.ascontiguousarray(array, dtype=dtype)


def _int_pair(name, value, minimum):
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        value = (value, value)
    if (isinstance(value, (tuple, list)) and len(value) == 2
            and all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in value)
            and all(v >= minimum for v in value)):
        return int(value[0]), int(value[1])
    raise ValueError(f"Invalid value for argument `{name}`: expected an int >= {minimum} or a "
                     f"pair of them. Received: {name}={value!r}")


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
    if (isinstance(padding, (tuple, list)) and len(padding) == 2
            and all(isinstance(p, (tuple, list)) for p in padding)):
        pairs = [_int_pair("padding", tuple(p), 0) for p in padding]
        return pairs[0], pairs[1]
    ph, pw = _int_pair("padding", padding, 0)
    return (ph, ph), (pw, pw)


# --------------------------------------------------------------------------- linear

def _rows(shape):
    """Rows of the 2-D view (prod of leading dims); explicit, as reshape(-1, 0) is ambiguous."""
    rows = 1
    for n in shape[:-1]:
        rows *= n
    return rows


def _as_2d(x, weight):
    """``x`` as a C-contiguous ``(rows, in_features)`` array of the weight's dtype (no copy
    and no reshape when it already is one: the usual Dense input)."""
    if x.ndim == 2 and x.dtype == weight.dtype and x.flags.c_contiguous:
        return x
    return _cast(x, weight.dtype).reshape(_rows(x.shape), weight.shape[1])


class Addmm(Function):
    """``y = x @ weight.T + bias`` (backward node ``AddmmBackward``)."""

    @staticmethod
    def forward(ctx, x, weight, bias):
        x2 = _as_2d(x, weight)
        y = _kernels.linear_forward(x2, weight, bias, n_threads=get_num_threads())
        # dW needs x, dX needs the weight; keep only what will be read.
        ctx.save_for_backward(x2 if ctx.needs_input_grad[1] else None,
                              weight if ctx.needs_input_grad[0] else None)
        ctx.x_shape = x.shape
        return y if x.ndim == 2 else y.reshape(x.shape[:-1] + (weight.shape[0],))

    @staticmethod
    def backward(ctx, grad_y):
        x2, weight = ctx.saved_tensors
        return _linear_backward(ctx, x2, weight, grad_y)

    @staticmethod
    def backward_graph(ctx, grad_y):
        x2, weight = ctx.saved_arrays
        return _linear_backward_graph(ctx, x2, weight, grad_y)


class Mm(Function):
    """``y = x @ weight.T`` (linear without bias; backward node ``MmBackward``)."""

    @staticmethod
    def forward(ctx, x, weight):
        x2 = _as_2d(x, weight)
        y = _kernels.linear_forward(x2, weight, None, n_threads=get_num_threads())
        ctx.save_for_backward(x2 if ctx.needs_input_grad[1] else None,
                              weight if ctx.needs_input_grad[0] else None)
        ctx.x_shape = x.shape
        return y if x.ndim == 2 else y.reshape(x.shape[:-1] + (weight.shape[0],))

    @staticmethod
    def backward(ctx, grad_y):
        x2, weight = ctx.saved_tensors
        return _linear_backward(ctx, x2, weight, grad_y)[:2]

    @staticmethod
    def backward_graph(ctx, grad_y):
        x2, weight = ctx.saved_arrays
        return _linear_backward_graph(ctx, x2, weight, grad_y)[:2]


def _linear_backward_graph(ctx, x2, weight, grad_y):
    """Double backward of linear: ``dx = dy @ W``, ``dW = dy2.T @ x2``, ``db = dy2.sum(0)``
    in Tensor operations (recorded, so they are differentiated again)."""
    needs = ctx.needs_input_grad
    dy2 = grad_y.reshape(-1, grad_y.shape[-1])
    dx = dw = db = None
    if needs[0]:
        dx = (grad_y @ ctx.graph_input(1, weight)).reshape(ctx.x_shape)
    if needs[1]:
        dw = dy2.transpose(0, 1) @ ctx.graph_input(0, x2.reshape(ctx.x_shape)).reshape(x2.shape)
    if len(needs) > 2 and needs[2]:
        db = dy2.sum(axis=0)
    return dx, dw, db


def _linear_backward(ctx, x2, weight, grad_y):
    needs = ctx.needs_input_grad
    need_bias = len(needs) > 2 and needs[2]
    if not (needs[0] or needs[1] or need_bias):
        return None, None, None
    dtype = (weight if weight is not None else x2).dtype
    out_features = grad_y.shape[-1]
    if grad_y.ndim == 2 and grad_y.dtype == dtype and grad_y.flags.c_contiguous:
        dy = grad_y
    else:
        dy = _cast(grad_y, dtype).reshape(_rows(grad_y.shape), out_features)
    in_features = (weight if weight is not None else x2).shape[1]
    n_threads = get_num_threads()
    # linear_backward wants all three operands; a zero-size stand-in is never read.
    x_arg = x2 if x2 is not None else np.zeros((dy.shape[0], in_features), dtype)
    w_arg = weight if weight is not None else np.zeros((out_features, in_features), dtype)
    dx, dw, db = _kernels.linear_backward(x_arg, w_arg, dy, need_input_grad=needs[0],
                                          need_weight_grad=needs[1], need_bias_grad=need_bias,
                                          n_threads=n_threads)
    if dx is not None and dx.shape != ctx.x_shape:
        dx = dx.reshape(ctx.x_shape)
    return dx, dw, db


def linear(x, weight, bias=None):
    """Affine map ``y = x @ weight.T + bias`` (``torch.nn.functional.linear``).

    ``x`` is cast to the weight's dtype.  Backward: ``dx = dy @ weight``,
    ``dweight = dy.T @ x``, ``dbias = dy.sum(0)`` (docs/math/linear.md).

    Args:
        x: Tensor or array of shape ``(..., in_features)``.
        weight: ``(out_features, in_features)``, float32 or float64.
        bias: ``(out_features,)`` or None.

    Returns:
        Tensor of shape ``(..., out_features)`` (backward node ``AddmmBackward``, or
        ``MmBackward`` without bias).

    Shape:
        - x: ``(N, in)`` or ``(*, in)``
        - weight: ``(out, in)``; bias: ``(out,)``
        - output: ``(N, out)`` or ``(*, out)``

    Example:
        >>> w = mn.Parameter(np.ones((3, 4), np.float32))
        >>> F.linear(np.ones((2, 4), np.float32), w).shape
        (2, 3)
    """
    if _ready(x, weight, bias) is not None:
        # Fast path (what Dense passes): Tensors whose dtypes and shapes already fit.
        return Mm.apply(x, weight) if bias is None else Addmm.apply(x, weight, bias)
    x = _as_input("x", x)
    weight = _as_input("weight", weight)
    dtype = _float_dtype("weight", weight)
    _check_cast_source("x", x)
    w_shape = _data(weight).shape
    x_shape = _data(x).shape
    if len(w_shape) != 2:
        raise ValueError(f"Invalid argument `weight`: expected a 2-D (out_features, in_features) "
                         f"array. Received: shape={w_shape}")
    if len(x_shape) < 1 or x_shape[-1] != w_shape[1]:
        raise ValueError(f"Invalid argument `x`: expected shape (..., {w_shape[1]}) to match "
                         f"weight of shape {w_shape}. Received: shape={x_shape}")
    if bias is None:
        return Mm.apply(x, weight)
    bias = _as_input("bias", bias)
    _check_cast_source("bias", bias)
    if _data(bias).shape != (w_shape[0],):
        raise ValueError(f"Invalid argument `bias`: expected shape ({w_shape[0]},). "
                         f"Received: shape={_data(bias).shape}")
    if _data(bias).dtype != dtype:
        bias = bias.astype(dtype) if isinstance(bias, Tensor) else _cast(bias, dtype)
    return Addmm.apply(x, weight, bias)


def _ready(x, weight, bias):
    """The arrays of ``x``, ``weight``, ``bias`` when they are Tensors whose dtypes and shapes
    already fit (what Dense passes), else None: then ``linear`` converts and checks."""
    if type(x) is not Tensor or not isinstance(weight, Tensor):
        return None
    w = weight.data
    xd = x.data
    if not (w.ndim == 2 and xd.ndim >= 1 and xd.shape[-1] == w.shape[1] and w.dtype in _FLOATS
            and xd.dtype.kind in "fiub"):
        return None
    if bias is None:
        return xd, w, None
    if not isinstance(bias, Tensor):
        return None
    b = bias.data
    if b.shape != (w.shape[0],) or b.dtype != w.dtype:
        return None
    return xd, w, b


def linear_no_graph(x, weight, bias=None, relu=False):
    """``linear`` (then ``relu`` when asked) as ONE kernel call, when there is no graph to record.

    ``Dense`` calls this first: under ``no_grad`` (``predict``, ``evaluate``) nothing needs
    a backward node, so the autograd bookkeeping of two Functions and a separate ReLU pass
    over the output are skipped, and the ReLU is fused into the kernel's bias pass.  The
    numbers are bit-identical to ``relu(linear(x, weight, bias))``.

    Returns:
        A Tensor without ``grad_fn``, or None when this fast path does not apply (grad
        mode on, anomaly detection on, or inputs that need ``linear``'s conversions and
        checks): then call ``linear``.
    """
    if grad_state.enabled or anomaly_state.enabled:
        return None
    ready = _ready(x, weight, bias)
    if ready is None:
        return None
    xd, w, b = ready
    y = _kernels.linear_forward(_as_2d(xd, w), w, b, n_threads=get_num_threads(), relu=relu)
    return Tensor._make(y if xd.ndim == 2 else y.reshape(xd.shape[:-1] + (w.shape[0],)))


# --------------------------------------------------------------------------- conv2d

class Convolution(Function):
    """2-D convolution, NCHW (backward node ``ConvolutionBackward``).

    forward(ctx, x, weight, bias, stride, padding, dilation, out_size) with
    ``padding = (pad_top, pad_left)``; ``out_size`` implies the bottom/right padding.
    """

    @staticmethod
    def forward(ctx, x, weight, bias, stride=(1, 1), padding=(0, 0), dilation=(1, 1),
                out_size=None):
        x = _cast(x, weight.dtype)
        n_threads = get_num_threads()
        y = _kernels.conv2d_forward(x, weight, bias, stride, padding, dilation, out_size,
                                    n_threads=n_threads)
        # The input, not its im2col matrix (kh*kw times larger), is kept: backward
        # rebuilds the patches.  x is needed only for dW, the weight only for dX.
        ctx.save_for_backward(x if ctx.needs_input_grad[1] else None,
                              weight if ctx.needs_input_grad[0] else None)
        ctx.geometry = (x.shape, weight.shape, stride, padding, dilation)
        return y

    @staticmethod
    def backward(ctx, grad_y):
        x, weight = ctx.saved_tensors
        x_shape, w_shape, stride, padding, dilation = ctx.geometry
        needs = ctx.needs_input_grad
        need_bias = len(needs) > 2 and needs[2]
        if not (needs[0] or needs[1] or need_bias):
            return None, None, None
        dtype = (weight if weight is not None else x).dtype
        dy = _cast(grad_y, dtype)
        # The kernel wants both operands; the zero stand-in (lazily allocated) is never read.
        if x is None:
            x = np.zeros(x_shape, dtype)
        if weight is None:
            weight = np.zeros(w_shape, dtype)
        dx, dw, db = _kernels.conv2d_backward(
            x, weight, dy, stride, padding, dilation, need_input_grad=needs[0],
            need_weight_grad=needs[1], need_bias_grad=need_bias, n_threads=get_num_threads())
        return dx, dw, db

    @staticmethod
    def backward_graph(ctx, grad_y):
        # double backward: dx and dW are themselves convolutions (ConvInputGrad /
        # ConvWeightGrad below), each differentiable again
        x, weight = ctx.saved_arrays
        x_shape, w_shape, stride, padding, dilation = ctx.geometry
        geometry = dict(x_shape=x_shape, w_shape=w_shape, stride=stride, padding=padding, dilation=dilation)
        needs = ctx.needs_input_grad
        dx = ConvInputGrad.apply(grad_y, ctx.graph_input(1, weight), **geometry) if needs[0] else None
        dw = ConvWeightGrad.apply(ctx.graph_input(0, x), grad_y, **geometry) if needs[1] else None
        db = grad_y.sum(axis=(0, 2, 3)) if len(needs) > 2 and needs[2] else None
        return dx, dw, db


class ConvInputGrad(Function):
    """``dx`` of a convolution from ``(dy, weight)`` (a transposed convolution, by col2im)."""

    node_name = "ConvolutionBackwardBackward"

    @staticmethod
    def forward(ctx, dy, weight, x_shape=None, w_shape=None, stride=(1, 1), padding=(0, 0), dilation=(1, 1)):
        ctx.save_for_backward(dy, weight)
        ctx.geometry = dict(x_shape=x_shape, w_shape=w_shape, stride=stride, padding=padding, dilation=dilation)
        dy = _cast(dy, weight.dtype)
        dx, _, _ = _kernels.conv2d_backward(np.zeros(x_shape, weight.dtype), weight, dy, stride, padding,
                                            dilation, need_input_grad=True, need_weight_grad=False,
                                            need_bias_grad=False, n_threads=get_num_threads())
        return dx

    @staticmethod
    def backward_graph(ctx, gg):
        dy, weight = ctx.saved_arrays
        geo = ctx.geometry
        g_dy = g_w = None
        if ctx.needs_input_grad[0]:      # <conv_T(dy, W), gg> = <dy, conv(gg, W)>
            g_dy = Convolution.apply(gg, ctx.graph_input(1, weight), None, stride=geo["stride"],
                                     padding=geo["padding"], dilation=geo["dilation"], out_size=dy.shape[2:])
        if ctx.needs_input_grad[1]:
            g_w = ConvWeightGrad.apply(gg, ctx.graph_input(0, dy), **geo)
        return g_dy, g_w

    backward = backward_graph        # on arrays (no graph recorded) it is the same computation


class ConvWeightGrad(Function):
    """``dW`` of a convolution from ``(x, dy)`` (a correlation of the input with dy)."""

    node_name = "ConvolutionBackwardBackward"

    @staticmethod
    def forward(ctx, x, dy, x_shape=None, w_shape=None, stride=(1, 1), padding=(0, 0), dilation=(1, 1)):
        ctx.save_for_backward(x, dy)
        ctx.geometry = dict(x_shape=x_shape, w_shape=w_shape, stride=stride, padding=padding, dilation=dilation)
        dy = _cast(dy, x.dtype)
        _, dw, _ = _kernels.conv2d_backward(x, np.zeros(w_shape, x.dtype), dy, stride, padding, dilation,
                                            need_input_grad=False, need_weight_grad=True,
                                            need_bias_grad=False, n_threads=get_num_threads())
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
                                     padding=geo["padding"], dilation=geo["dilation"], out_size=dy.shape[2:])
        return g_x, g_dy

    backward = backward_graph        # on arrays (no graph recorded) it is the same computation


def conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1):
    """2-D cross-correlation over NCHW images (``torch.nn.functional.conv2d``).

    ``y[n, f, oh, ow] = bias[f] + sum_{c,i,j} weight[f, c, i, j] *
    x_padded[n, c, oh*sh + i*dh, ow*sw + j*dw]``.  Computed as ``W_col @ im2col(x[n])``;
    backward rebuilds the patches from the saved input (docs/math/convolution.md).
    ``x`` is cast to the weight's dtype.

    Args:
        x: Tensor or array ``(N, C, H, W)`` (or ``(C, H, W)`` for one image).
        weight: ``(F, C, kh, kw)``, float32 or float64.
        bias: ``(F,)`` or None.
        stride: int or ``(sh, sw)``, >= 1.
        padding: int, ``(ph, pw)``, ``((top, bottom), (left, right))``, ``"valid"`` or
            ``"same"`` (stride 1 only; extra row/column at the bottom/right for an even
            effective kernel, as PyTorch).
        dilation: int or ``(dh, dw)``, >= 1.

    Returns:
        Tensor ``(N, F, out_h, out_w)`` with
        ``out_h = (H + top + bottom - dh*(kh-1) - 1) // sh + 1`` (likewise out_w).

    Shape:
        - x: ``(N, C, H, W)``; weight: ``(F, C, kh, kw)``; bias: ``(F,)``
        - output: ``(N, F, out_h, out_w)``

    Example:
        >>> w = mn.Parameter(np.ones((8, 3, 3, 3), np.float32))
        >>> F.conv2d(np.ones((2, 3, 32, 32), np.float32), w, padding="same").shape
        (2, 8, 32, 32)
    """
    x = _as_input("x", x)
    weight = _as_input("weight", weight)
    dtype = _float_dtype("weight", weight)
    _check_cast_source("x", x)
    w_shape = _data(weight).shape
    if len(w_shape) != 4:
        raise ValueError(f"Invalid argument `weight`: expected a 4-D (filters, in_channels, "
                         f"kernel_height, kernel_width) array. Received: shape={w_shape}")
    if min(w_shape) < 1:
        raise ValueError(f"Invalid argument `weight`: expected non-zero dimensions. "
                         f"Received: shape={w_shape}")
    unbatched = _data(x).ndim == 3
    if unbatched:
        x = x.reshape(1, *x.shape) if isinstance(x, Tensor) else x[None]
    x_shape = _data(x).shape
    if len(x_shape) != 4:
        raise ValueError(f"Invalid argument `x`: expected a 4-D (N, C, H, W) array (or 3-D "
                         f"(C, H, W)). Received: shape={x_shape}")
    if x_shape[1] != w_shape[1]:
        raise ValueError(f"Invalid argument `x`: expected {w_shape[1]} input channels to match "
                         f"weight of shape {w_shape}. Received: x of shape {x_shape}")
    stride = _int_pair("stride", tuple(stride) if isinstance(stride, list) else stride, 1)
    dilation = _int_pair("dilation", tuple(dilation) if isinstance(dilation, list) else dilation, 1)
    (top, bottom), (left, right) = _resolve_padding(padding, w_shape[2:], stride, dilation)
    out_size = []
    for size, k, s, d, p0, p1, axis in ((x_shape[2], w_shape[2], stride[0], dilation[0], top, bottom, "height"),
                                        (x_shape[3], w_shape[3], stride[1], dilation[1], left, right, "width")):
        effective = d * (k - 1) + 1
        if effective > size + p0 + p1:
            raise ValueError(
                f"Invalid argument `weight`: the (dilated) kernel {axis} {effective} is larger "
                f"than the padded input {axis} {size + p0 + p1} (input {size}, padding {p0}+{p1}). "
                f"Received: x of shape {x_shape}, weight of shape {w_shape}, dilation={dilation}")
        out_size.append(_kernels.conv_output_size(size, k, s, p0, p1, d))
    if bias is not None:
        bias = _as_input("bias", bias)
        _check_cast_source("bias", bias)
        if _data(bias).shape != (w_shape[0],):
            raise ValueError(f"Invalid argument `bias`: expected shape ({w_shape[0]},). "
                             f"Received: shape={_data(bias).shape}")
        if _data(bias).dtype != dtype:
            bias = bias.astype(dtype) if isinstance(bias, Tensor) else _cast(bias, dtype)
    y = Convolution.apply(x, weight, bias, stride=stride, padding=(top, left),
                          dilation=dilation, out_size=tuple(out_size))
    if unbatched:
        y = y.reshape(*y.shape[1:])
    return y
