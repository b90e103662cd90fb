"""Differentiable ``linear`` (the math is in docs/math/linear.md).

One ``Function`` (``Linear``, with or without bias) over the kernels in
``minnet._ext.linear_kernels``, plus Dense's two ReLU-fused paths: ``linear_relu`` (one
Function, ``LinearRelu``, when a graph is recorded) and ``linear_no_graph`` (one kernel call,
when none is).  This module validates the arguments, casts the input to
the weight's dtype, and keeps for backward only what backward will read.
"""
import numpy as np

from minnet._config import get_num_threads
from minnet._ext import activations_kernels as _activation_kernels
from minnet._ext import linear_kernels as _kernels
from minnet.autograd import Function, Tensor
from minnet.autograd.activation_ops import as_kernel_grad, relu_mask
from minnet.autograd.grad_mode import anomaly_state, grad_state
from minnet.functional._conv import as_input, cast, check_cast_source, data, float_dtype

__all__ = ["linear", "linear_relu", "linear_no_graph", "Linear", "LinearRelu"]

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


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
    return cast(x, weight.dtype).reshape(_rows(x.shape), weight.shape[1])


def _contiguous(a):
    """``a`` C-contiguous (the kernels refuse strided operands): ``a`` itself when it is."""
    return a if a is None or a.flags.c_contiguous else np.ascontiguousarray(a)


class Linear(Function):
    """``y = x @ weight.T (+ bias)``: the one linear Function (backward node
    ``AddmmBackward``, as PyTorch names a linear with bias; ``bias`` may be None)."""

    node_name = "AddmmBackward"

    @staticmethod
    def forward(ctx, x, weight, bias=None):
        y, saved = _forward(ctx, x, weight, bias, relu=False)
        ctx.save_for_backward(*saved)
        return y

    @staticmethod
    def backward(ctx, grad_y):
        x2, weight = ctx.saved_tensors
        return _linear_backward(ctx, x2, weight, grad_y)

    @staticmethod
    def backward_graph(ctx, grad_y):
        x2, weight = ctx.saved_arrays
        return _linear_backward_graph(ctx, x2, weight, grad_y)


class LinearRelu(Linear):
    """``y = max(x @ weight.T + b, 0)`` as one Function: what ``Dense(activation="relu")``
    records.  The forward is ``linear_forward(relu=True)`` (the select in the bias pass);
    the backward masks ``dy`` where ``y <= 0`` (the relu kernel's backward) and continues as
    ``Linear``'s.  The same bits as ``relu(linear(x))`` forward and backward, with one node
    and one pass over ``y`` fewer (benchmarks/bench_training.py "mlp")."""

    node_name = "LinearReluBackward"

    @staticmethod
    def forward(ctx, x, weight, bias=None):
        y, saved = _forward(ctx, x, weight, bias, relu=True)
        # y is saved as returned (the output's own array), so an in-place change of the
        # output is caught when backward reads it
        ctx.save_for_backward(*saved, y)
        return y

    @staticmethod
    def backward(ctx, grad_y):
        x2, weight, y = ctx.saved_tensors
        dz = _activation_kernels.relu_backward(y, as_kernel_grad(grad_y, y.dtype),
                                               n_threads=get_num_threads())
        return _linear_backward(ctx, x2, weight, dz)

    @staticmethod
    def backward_graph(ctx, grad_y):
        x2, weight, y = ctx.saved_arrays
        return _linear_backward_graph(ctx, x2, weight, grad_y * relu_mask(y))


def _forward(ctx, x, weight, bias, relu):
    """The forward of ``Linear`` and ``LinearRelu``: ``y`` shaped ``(..., out_features)``
    and what their backward reads (dW needs x, dX needs the weight; only what will be read)."""
    x2 = _as_2d(x, weight)
    weight, bias = _contiguous(weight), _contiguous(bias)
    y = _kernels.linear_forward(x2, weight, bias, n_threads=get_num_threads(), relu=relu)
    ctx.x_shape = x.shape
    saved = (x2 if ctx.needs_input_grad[1] else None, weight if ctx.needs_input_grad[0] else None)
    return (y if x.ndim == 2 else y.reshape(x.shape[:-1] + (weight.shape[0],))), saved


def _linear_backward_graph(ctx, x2, weight, grad_y):
    """Double backward: ``dx = dy @ W``, ``dW = dy2.T @ x2``, ``db = dy2.sum(0)`` in Tensor
    operations (recorded, so they are differentiated again)."""
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
    if grad_y.ndim == 2 and grad_y.dtype == dtype:
        dy = _contiguous(grad_y)
    else:
        dy = cast(grad_y, dtype).reshape(_rows(grad_y.shape), out_features)
    in_features = (weight if weight is not None else x2).shape[1]
    n_threads = get_num_threads()
    # linear_backward wants all three operands with their shapes; a missing one (x when dW
    # is not needed, W when dX is not) is never read (tests/_ext/test_unread_operands.py), so
    # an uninitialised stand-in does: np.zeros would fill one of the input's size every step
    # (benchmarks/bench_training.py "mlp"; docs/performance.md, "The Intel host").
    x_arg = x2 if x2 is not None else np.empty((dy.shape[0], in_features), dtype)
    w_arg = weight if weight is not None else np.empty((out_features, in_features), dtype)
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
        Tensor of shape ``(..., out_features)`` (backward node ``AddmmBackward``).

    Shape:
        - x: ``(N, in)`` or ``(*, in)``
        - weight: ``(out, in)``; bias: ``(out,)``
        - output: ``(N, out)`` or ``(*, out)``

    Example:
        >>> w = mn.Parameter(np.ones((3, 4), np.float32))
        >>> F.linear(np.ones((2, 4), np.float32), w).shape
        (2, 3)
    """
    return _checked_apply(Linear, x, weight, bias)


def linear_relu(x, weight, bias=None):
    """``relu(linear(x, weight, bias))`` recorded as one node (``LinearReluBackward``): what
    ``Dense(units, activation="relu")`` runs when a graph is recorded.  The same arguments,
    checks and numbers (forward and gradients, bit for bit) as the two ops; one backward
    node and one pass over the output fewer (docs/math/linear.md).

    Example:
        >>> w = mn.Parameter(np.ones((3, 4), np.float32))
        >>> F.linear_relu(-np.ones((2, 4), np.float32), w).numpy().max()
        0.0
    """
    return _checked_apply(LinearRelu, x, weight, bias)


def _checked_apply(fn, x, weight, bias):
    """``fn.apply(x, weight, bias)`` after ``linear``'s checks and conversions."""
    if _ready(x, weight, bias) is not None:
        # Fast path (what Dense passes): Tensors whose dtypes and shapes already fit.
        return fn.apply(x, weight, bias)
    x = as_input("x", x)
    weight = as_input("weight", weight)
    dtype = float_dtype("weight", weight)
    check_cast_source("x", x)
    w_shape = data(weight).shape
    x_shape = data(x).shape
    if len(w_shape) != 2:
        raise ValueError(f"Invalid argument `weight`: expected a 2-D (out_features, in_features) "
                         f"array. Received: shape={w_shape}")
    if len(x_shape) < 1 or x_shape[-1] != w_shape[1]:
        raise ValueError(f"Invalid argument `x`: expected shape (..., {w_shape[1]}) to match "
                         f"weight of shape {w_shape}. Received: shape={x_shape}")
    if bias is None:
        return fn.apply(x, weight, None)
    bias = as_input("bias", bias)
    check_cast_source("bias", bias)
    if data(bias).shape != (w_shape[0],):
        raise ValueError(f"Invalid argument `bias`: expected shape ({w_shape[0]},). "
                         f"Received: shape={data(bias).shape}")
    if data(bias).dtype != dtype:
        bias = bias.astype(dtype) if isinstance(bias, Tensor) else cast(bias, dtype)
    return fn.apply(x, weight, bias)


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
    y = _kernels.linear_forward(_as_2d(xd, w), _contiguous(w), _contiguous(b),
                                n_threads=get_num_threads(), relu=relu)
    return Tensor._make(y if xd.ndim == 2 else y.reshape(xd.shape[:-1] + (w.shape[0],)))
