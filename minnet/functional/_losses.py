"""Differentiable losses: cross_entropy (fused log-softmax + NLL), nll_loss, mse_loss,
l1_loss, huber_loss, binary_cross_entropy, binary_cross_entropy_with_logits.

Semantics follow ``torch.nn.functional`` (reductions ``"mean"``, ``"sum"``, ``"none"``;
label smoothing; BCE's log clamped at -100).  Cross-entropy and the MSE sum run in the
kernels of ``minnet._ext.losses_kernels``; the others are a few NumPy expressions.  Each op keeps
only what its backward needs: cross-entropy its logits and one log-sum-exp per row (not
the softmax), the elementwise losses their two inputs.  The math is in
``docs/math/losses.md``.
"""
import numbers

import numpy as np

from minnet._checks import check_labels
from minnet._config import get_num_threads
from minnet._ext import activations_kernels as _act_kernels
from minnet._ext import losses_kernels as _kernels
from minnet.autograd import Function, Tensor
from minnet.functional._common import as_float_input as _as_float_input

__all__ = ["cross_entropy", "nll_loss", "mse_loss", "l1_loss", "huber_loss",
           "binary_cross_entropy", "binary_cross_entropy_with_logits",
           "CrossEntropyLoss", "SoftCrossEntropyLoss", "NllLoss", "MseLoss", "L1Loss",
           "HuberLoss", "BinaryCrossEntropy", "BinaryCrossEntropyWithLogits"]

_REDUCTIONS = ("mean", "sum", "none")


# ---------------------------------------------------------------------------------------
# Argument handling
# ---------------------------------------------------------------------------------------

def _check_reduction(reduction):
    if reduction not in _REDUCTIONS:
        raise ValueError(f"Invalid value for argument `reduction`: expected one of "
                         f"{', '.join(repr(r) for r in _REDUCTIONS)}. "
                         f"Received: reduction={reduction!r}")
    return reduction


def _data(x):
    return x.data if isinstance(x, Tensor) else np.asarray(x)


def _cast_like(x, dtype):
    """``x`` in ``dtype``: a Tensor through a differentiable cast, anything else as ndarray."""
    if isinstance(x, Tensor):
        if x.dtype == dtype:
            return x
        if x.dtype.kind == "f":
            return x.astype(dtype)
        return x.data.astype(dtype)
    return np.asarray(x, dtype=dtype)


def _input_and_target(input, target):
    """Float ``input`` and ``target`` of the input's dtype and the same shape."""
    input = _as_float_input(input, "input")
    try:
        target = _cast_like(target, input.dtype)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"Invalid argument `target`: expected a Tensor or array of numbers. "
                        f"Received: {type(target).__name__}") from exc
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Invalid argument `target`: expected the shape of `input`, "
                         f"{tuple(input.shape)}. Received: target.shape={tuple(target.shape)}")
    return input, target


def _labels(target, n_rows, n_classes, scan=True):
    """Class labels as a C-contiguous int64 ndarray ``(n_rows,)``; whole-number floats are
    accepted, unsigned labels too large for int64 are reported as they are.

    ``scan=False`` (cross_entropy) leaves the range of int64 labels to the kernel, which
    checks each row's label inside its loop (no extra pass over the data); other dtypes
    go through the one shared check, ``_checks.check_labels``.
    """
    labels = _data(target)
    if labels.dtype.kind == "b" or labels.dtype.kind not in "iuf":
        raise TypeError(f"Invalid argument `target`: expected integer class labels. "
                        f"Received: target.dtype={labels.dtype}")
    if labels.shape != (n_rows,):
        raise ValueError(f"Invalid argument `target`: expected shape ({n_rows},), one label "
                         f"per row. Received: target.shape={labels.shape}")
    if labels.dtype != np.int64 or scan:
        labels = check_labels("target", labels, n_classes)
    return np.ascontiguousarray(labels, dtype=np.int64)


def _check_2d(x, name):
    if x.ndim != 2 or x.shape[1] == 0:
        raise ValueError(f"Invalid argument `{name}`: expected a 2-D array (N, C) with C >= 1. "
                         f"Received: {name}.shape={tuple(x.shape)}")


def _reduce(values, reduction):
    """``values`` reduced, as an ndarray of its dtype (0-d unless ``"none"``)."""
    if reduction == "none":
        return values
    if reduction == "sum":
        return np.asarray(values.sum(), dtype=values.dtype)
    if values.size == 0:            # PyTorch: the mean of nothing is nan
        return np.asarray(np.nan, dtype=values.dtype)
    # What ndarray.mean does (pairwise sum in the array's dtype, then one division),
    # without its Python-level wrapper (a per-loss cost the mlp step of
    # benchmarks/bench_training.py shows).
    return np.asarray(values.dtype.type(np.add.reduce(values, axis=None) / values.size),
                      dtype=values.dtype)


def _element_grad(grad, reduction, n, dtype):
    """dL/d(element value): the incoming grad, spread by the reduction (broadcastable)."""
    grad = np.asarray(grad, dtype=dtype)
    if reduction == "mean":
        return grad / dtype.type(max(n, 1))
    return grad


def _row_grad(grad, reduction, n_rows, dtype):
    """dL/d(row loss) as a C-contiguous ``(n_rows,)`` array, for the kernels."""
    g = _element_grad(grad, reduction, n_rows, dtype)
    if g.ndim == 0:   # the usual scalar loss: fill, without broadcast_to's Python overhead
        return np.full(n_rows, g, dtype=dtype)
    return np.ascontiguousarray(np.broadcast_to(g, (n_rows,)))


def _contiguous(a, dtype):
    return np.ascontiguousarray(a, dtype=dtype)


def _graph_row_grad(grad, reduction, n_rows):
    """dL/d(row loss) as an (n_rows, 1) Tensor for a double backward (``grad`` is a Tensor)."""
    if reduction == "none":
        return grad.reshape(n_rows, 1)
    if reduction == "mean":
        grad = grad / max(n_rows, 1)
    return grad.reshape(1, 1)


# ---------------------------------------------------------------------------------------
# Cross-entropy and NLL
# ---------------------------------------------------------------------------------------

class CrossEntropyLoss(Function):
    """Fused ``-sum(t * log_softmax(x))`` per row with integer labels.

    Saves the logits (the input: no new memory) and the ``(N,)`` log-sum-exps; backward
    is ``dx = g * (exp(x - lse) - t)`` with ``t`` the smoothed one-hot, never built.
    """

    @staticmethod
    def forward(ctx, logits, labels, label_smoothing, reduction):
        x = _contiguous(logits, logits.dtype)
        loss, lse = _kernels.cross_entropy_forward(x, labels, label_smoothing,
                                                   n_threads=get_num_threads())
        ctx.save_for_backward(x, lse)
        ctx.labels, ctx.eps, ctx.reduction = labels, label_smoothing, reduction
        return _reduce(loss, reduction)

    @staticmethod
    def backward(ctx, grad):
        x, lse = ctx.saved_tensors
        g = _row_grad(grad, ctx.reduction, x.shape[0], x.dtype)
        dx = _kernels.cross_entropy_backward(x, ctx.labels, lse, g, ctx.eps,
                                             n_threads=get_num_threads())
        return dx, None, None, None

    @staticmethod
    def backward_graph(ctx, grad):
        # double backward: dx = g * (softmax(x) - t) in Tensor operations (recorded)
        x_arr, _ = ctx.saved_arrays
        x = ctx.graph_input(0, x_arr)
        n, n_classes = x_arr.shape
        t = np.full((n, n_classes), ctx.eps / n_classes, dtype=x_arr.dtype)
        t[np.arange(n), ctx.labels] += 1.0 - ctx.eps
        g = _graph_row_grad(grad, ctx.reduction, n)
        return (x.softmax(1) - t) * g, None, None, None


class SoftCrossEntropyLoss(Function):
    """``-sum(t * log_softmax(x))`` per row with probability targets ``p``
    (``t = (1 - eps) * p + eps / C``).

    Backward: ``dx = g * (sum(t) * exp(x - lse) - t)``, ``dp = -g * (1 - eps) * (x - lse)``.
    """

    node_name = "CrossEntropyLossBackward"

    @staticmethod
    def forward(ctx, logits, target, label_smoothing, reduction):
        x = _contiguous(logits, logits.dtype)
        t = _contiguous(target, x.dtype)
        loss, lse = _kernels.soft_cross_entropy_forward(x, t, label_smoothing,
                                                        n_threads=get_num_threads())
        ctx.save_for_backward(x, t, lse)
        ctx.eps, ctx.reduction = label_smoothing, reduction
        return _reduce(loss, reduction)

    @staticmethod
    def backward(ctx, grad):
        x, t, lse = ctx.saved_tensors
        g = _row_grad(grad, ctx.reduction, x.shape[0], x.dtype)
        dx = dt = None
        if ctx.needs_input_grad[0]:
            dx = _kernels.soft_cross_entropy_backward(x, t, lse, g, ctx.eps,
                                                      n_threads=get_num_threads())
        if ctx.needs_input_grad[1]:
            dt = (x - lse[:, None]) * (g * x.dtype.type(-(1.0 - ctx.eps)))[:, None]
        return dx, dt, None, None

    @staticmethod
    def backward_graph(ctx, grad):
        x_arr, t_arr, _ = ctx.saved_arrays
        x = ctx.graph_input(0, x_arr)
        t = ctx.graph_input(1, t_arr)
        n, n_classes = x_arr.shape
        g = _graph_row_grad(grad, ctx.reduction, n)
        smoothed = t * (1.0 - ctx.eps) + ctx.eps / n_classes
        dx = dt = None
        if ctx.needs_input_grad[0]:
            dx = (x.softmax(1) * smoothed.sum(axis=1, keepdims=True) - smoothed) * g
        if ctx.needs_input_grad[1]:
            dt = x.log_softmax(1) * g * (-(1.0 - ctx.eps))
        return dx, dt, None, None


class NllLoss(Function):
    """``loss_i = -log_probs[i, target_i]``; backward puts ``-g_i`` at ``(i, target_i)``."""

    @staticmethod
    def forward(ctx, log_probs, labels, reduction):
        loss = -log_probs[np.arange(log_probs.shape[0]), labels]
        ctx.labels, ctx.reduction = labels, reduction
        ctx.shape, ctx.dtype = log_probs.shape, log_probs.dtype
        return _reduce(np.ascontiguousarray(loss), reduction)

    @staticmethod
    def backward(ctx, grad):
        n_rows = ctx.shape[0]
        dx = np.zeros(ctx.shape, ctx.dtype)
        dx[np.arange(n_rows), ctx.labels] = -_row_grad(grad, ctx.reduction, n_rows, ctx.dtype)
        return dx, None, None


def _check_smoothing(label_smoothing):
    if type(label_smoothing) is float and 0.0 <= label_smoothing <= 1.0:
        return label_smoothing      # the usual case, without the numbers.Real check
    if (isinstance(label_smoothing, bool) or not isinstance(label_smoothing, numbers.Real)
            or not 0.0 <= label_smoothing <= 1.0):
        raise ValueError(f"Invalid value for argument `label_smoothing`: expected a float in "
                         f"[0, 1]. Received: label_smoothing={label_smoothing!r}")
    return float(label_smoothing)


def cross_entropy(logits, target, label_smoothing=0.0, reduction="mean"):
    """Cross-entropy of ``softmax(logits)`` against class labels or probabilities, fused
    (one log-sum-exp per row; stable for any logits), as ``torch.nn.functional.cross_entropy``.

    Args:
        logits: Tensor or array ``(N, C)`` of unnormalised scores.
        target: integer labels ``(N,)`` in ``[0, C)`` (whole-number floats are accepted), or
            probabilities ``(N, C)`` (then ``target`` may require grad too).
        label_smoothing: ``eps`` in [0, 1]: the target becomes ``(1 - eps) * t + eps / C``.
        reduction: ``"mean"`` (over N), ``"sum"`` or ``"none"``.

    Returns:
        Scalar Tensor, or ``(N,)`` with ``reduction="none"`` (backward node
        ``CrossEntropyLossBackward``).

    Shape:
        logits: ``(N, C)``; target: ``(N,)`` or ``(N, C)``; output: ``()`` or ``(N,)``.

    Example:
        >>> F.cross_entropy(mn.tensor([[2.0, 0.0], [0.0, 2.0]]), np.array([0, 1])).item()
        0.12692801654338837
    """
    reduction = _check_reduction(reduction)
    eps = _check_smoothing(label_smoothing)
    logits = _as_float_input(logits, "logits")
    _check_2d(logits, "logits")
    n_rows, n_classes = logits.shape
    target_data = _data(target)
    if target_data.dtype.kind == "f" and target_data.shape == tuple(logits.shape):
        target = _cast_like(target, logits.dtype)
        return SoftCrossEntropyLoss.apply(logits, target, eps, reduction)
    if target_data.dtype.kind not in "iuf":
        raise TypeError(f"Invalid argument `target`: expected integer class labels (N,) or "
                        f"probabilities (N, C). Received: target.dtype={target_data.dtype}")
    labels = _labels(target_data, n_rows, n_classes, scan=False)
    return CrossEntropyLoss.apply(logits, labels, eps, reduction)


def nll_loss(log_probs, target, reduction="mean"):
    """Negative log-likelihood of class labels given log-probabilities.

    Args:
        log_probs: Tensor or array ``(N, C)``, e.g. ``log_softmax(logits)``.
        target: integer labels ``(N,)`` in ``[0, C)``.
        reduction: ``"mean"``, ``"sum"`` or ``"none"``.

    Returns:
        Scalar Tensor, or ``(N,)`` (backward node ``NllLossBackward``).

    Shape:
        log_probs: ``(N, C)``; target: ``(N,)``; output: ``()`` or ``(N,)``.

    Example:
        >>> F.nll_loss(mn.tensor([[-0.1, -2.3]]), np.array([1])).item()
        2.299999952316284
    """
    reduction = _check_reduction(reduction)
    log_probs = _as_float_input(log_probs, "log_probs")
    _check_2d(log_probs, "log_probs")
    labels = _labels(target, *log_probs.shape)
    return NllLoss.apply(log_probs, labels, reduction)


# ---------------------------------------------------------------------------------------
# Regression losses
# ---------------------------------------------------------------------------------------

class MseLoss(Function):
    """``(input - target)**2`` reduced; backward ``d_input = 2 g (input - target)`` (over n
    for the mean) and ``d_target = -d_input``."""

    @staticmethod
    def forward(ctx, input, target, reduction):
        p = _contiguous(input, input.dtype)
        t = _contiguous(target, p.dtype)
        ctx.save_for_backward(p, t)
        ctx.reduction = reduction
        if reduction == "none":
            return np.square(p - t)
        total = _kernels.squared_error_sum(p, t, n_threads=get_num_threads())
        if reduction == "mean":
            total = total / p.size if p.size else np.nan
        return np.asarray(total, dtype=p.dtype)

    @staticmethod
    def backward(ctx, grad):
        p, t = ctx.saved_tensors
        want_target = ctx.needs_input_grad[1]
        if ctx.reduction == "none":
            dp = (p - t) * (2 * np.asarray(grad, p.dtype))
            dt = -dp if want_target else None
        else:
            scale = 2.0 * float(grad) / (max(p.size, 1) if ctx.reduction == "mean" else 1)
            dp, dt = _kernels.squared_error_backward(p, t, scale, want_target,
                                                     n_threads=get_num_threads())
        return (dp if ctx.needs_input_grad[0] else None), dt, None

    @staticmethod
    def backward_graph(ctx, grad):
        p_arr, t_arr = ctx.saved_arrays
        diff = ctx.graph_input(0, p_arr) - ctx.graph_input(1, t_arr)
        scale = 2.0 / max(p_arr.size, 1) if ctx.reduction == "mean" else 2.0
        dp = diff * grad * scale
        return (dp if ctx.needs_input_grad[0] else None), (-dp if ctx.needs_input_grad[1] else None), None


class L1Loss(Function):
    """``|input - target|`` reduced; backward ``g * sign(input - target)`` (0 at 0)."""

    @staticmethod
    def forward(ctx, input, target, reduction):
        ctx.save_for_backward(input, target)
        ctx.reduction = reduction
        return _reduce(np.abs(input - target), reduction)

    @staticmethod
    def backward(ctx, grad):
        p, t = ctx.saved_tensors
        dp = np.sign(p - t) * _element_grad(grad, ctx.reduction, p.size, p.dtype)
        return dp, (-dp if ctx.needs_input_grad[1] else None), None


class HuberLoss(Function):
    """``0.5 d**2`` where ``|d| < delta``, else ``delta (|d| - 0.5 delta)``, with
    ``d = input - target``; backward ``g * clip(d, -delta, delta)``."""

    @staticmethod
    def forward(ctx, input, target, delta, reduction):
        d = input - target
        abs_d = np.abs(d)
        values = np.where(abs_d < delta, 0.5 * d * d, delta * (abs_d - 0.5 * delta))
        ctx.save_for_backward(input, target)
        ctx.delta, ctx.reduction = delta, reduction
        return _reduce(values.astype(input.dtype, copy=False), reduction)

    @staticmethod
    def backward(ctx, grad):
        p, t = ctx.saved_tensors
        dp = np.clip(p - t, -ctx.delta, ctx.delta).astype(p.dtype, copy=False)
        dp = dp * _element_grad(grad, ctx.reduction, p.size, p.dtype)
        return dp, (-dp if ctx.needs_input_grad[1] else None), None, None


def mse_loss(input, target, reduction="mean"):
    """Mean squared error ``(input - target)**2``, with gradients for both arguments.

    Args:
        input: Tensor or array, any shape.
        target: Tensor or array of the same shape (cast to ``input``'s dtype); when it
            requires grad it receives ``-d_input``.
        reduction: ``"mean"``, ``"sum"`` or ``"none"``.

    Returns:
        Scalar Tensor, or ``input``'s shape with ``"none"`` (backward node
        ``MseLossBackward``).

    Shape:
        input, target: ``(*)``, the same; output: ``()`` or ``(*)``.

    Example:
        >>> F.mse_loss(mn.tensor([1.0, 2.0]), np.array([1.0, 4.0])).item()
        2.0
    """
    reduction = _check_reduction(reduction)
    input, target = _input_and_target(input, target)
    return MseLoss.apply(input, target, reduction)


def l1_loss(input, target, reduction="mean"):
    """Mean absolute error ``|input - target|``.

    Args:
        input: Tensor or array, any shape.
        target: Tensor or array of the same shape.
        reduction: ``"mean"``, ``"sum"`` or ``"none"``.

    Returns:
        Scalar Tensor, or ``input``'s shape (backward node ``L1LossBackward``).

    Shape:
        input, target: ``(*)``; output: ``()`` or ``(*)``.

    Example:
        >>> F.l1_loss(mn.tensor([1.0, 2.0]), np.array([0.0, 4.0])).item()
        1.5
    """
    reduction = _check_reduction(reduction)
    input, target = _input_and_target(input, target)
    return L1Loss.apply(input, target, reduction)


def huber_loss(input, target, delta=1.0, reduction="mean"):
    """Huber loss (PyTorch's ``huber_loss``): quadratic for ``|d| < delta``, linear beyond.

    Args:
        input: Tensor or array, any shape.
        target: Tensor or array of the same shape.
        delta: positive threshold between the quadratic and the linear part.
        reduction: ``"mean"``, ``"sum"`` or ``"none"``.

    Returns:
        Scalar Tensor, or ``input``'s shape (backward node ``HuberLossBackward``).

    Shape:
        input, target: ``(*)``; output: ``()`` or ``(*)``.

    Example:
        >>> F.huber_loss(mn.tensor([0.5, 3.0]), np.zeros(2)).item()
        1.3125
    """
    reduction = _check_reduction(reduction)
    if (isinstance(delta, bool) or not isinstance(delta, numbers.Real)
            or not np.isfinite(delta) or delta <= 0):
        raise ValueError(f"Invalid value for argument `delta`: expected a positive float. "
                         f"Received: delta={delta!r}")
    input, target = _input_and_target(input, target)
    return HuberLoss.apply(input, target, float(delta), reduction)


# ---------------------------------------------------------------------------------------
# Binary cross-entropy
# ---------------------------------------------------------------------------------------

_LOG_CLAMP = -100.0     # PyTorch clamps log(p) and log(1 - p) at -100: no inf at p = 0 or 1
_BCE_EPS = 1e-12        # PyTorch's floor on p * (1 - p) in the gradient


def _clamped_logs(p):
    with np.errstate(divide="ignore"):
        log_p = np.maximum(np.log(p), _LOG_CLAMP)
        log_1mp = np.maximum(np.log1p(-p), _LOG_CLAMP)
    return log_p, log_1mp


class BinaryCrossEntropy(Function):
    """``-(t log p + (1 - t) log(1 - p))`` with both logs clamped at -100.

    Backward: ``dp = g (p - t) / max(p (1 - p), 1e-12)``; ``dt = g (log(1-p) - log p)``.
    """

    @staticmethod
    def forward(ctx, input, target, reduction):
        log_p, log_1mp = _clamped_logs(input)
        values = -(target * log_p + (1 - target) * log_1mp)
        ctx.save_for_backward(input, target)
        ctx.reduction = reduction
        return _reduce(values.astype(input.dtype, copy=False), reduction)

    @staticmethod
    def backward(ctx, grad):
        p, t = ctx.saved_tensors
        g = _element_grad(grad, ctx.reduction, p.size, p.dtype)
        dp = dt = None
        if ctx.needs_input_grad[0]:
            dp = g * (p - t) / np.maximum(p * (1 - p), p.dtype.type(_BCE_EPS))
        if ctx.needs_input_grad[1]:
            log_p, log_1mp = _clamped_logs(p)
            dt = g * (log_1mp - log_p)
        return dp, dt, None


class BinaryCrossEntropyWithLogits(Function):
    """``max(x, 0) - x t + log(1 + exp(-|x|))``: BCE of ``sigmoid(x)``, never overflowing.

    Backward: ``dx = g (sigmoid(x) - t)``, ``dt = -g x``.
    """

    @staticmethod
    def forward(ctx, input, target, reduction):
        with np.errstate(under="ignore"):     # exp(-|x|) underflows to 0 for large |x|
            values = (np.maximum(input, 0) - input * target
                      + np.log1p(np.exp(-np.abs(input))))
        ctx.save_for_backward(input, target)
        ctx.reduction = reduction
        return _reduce(values.astype(input.dtype, copy=False), reduction)

    @staticmethod
    def backward(ctx, grad):
        x, t = ctx.saved_tensors
        g = _element_grad(grad, ctx.reduction, x.size, x.dtype)
        dx = dt = None
        if ctx.needs_input_grad[0]:
            s = _act_kernels.sigmoid_forward(_contiguous(x, x.dtype),
                                             n_threads=get_num_threads())
            dx = (s - t) * g
        if ctx.needs_input_grad[1]:
            dt = -x * g
        return dx, dt, None


def binary_cross_entropy(input, target, reduction="mean"):
    """Binary cross-entropy of probabilities, as PyTorch (each log clamped at -100, so
    ``p = 0`` or ``1`` gives a finite loss).

    Args:
        input: Tensor or array of probabilities in [0, 1], any shape.
        target: Tensor or array of the same shape (usually 0/1).
        reduction: ``"mean"``, ``"sum"`` or ``"none"``.

    Returns:
        Scalar Tensor, or ``input``'s shape (backward node ``BinaryCrossEntropyBackward``).

    Shape:
        input, target: ``(*)``; output: ``()`` or ``(*)``.

    Example:
        >>> F.binary_cross_entropy(mn.tensor([0.5]), np.array([1.0])).item()
        0.6931471824645996
    """
    reduction = _check_reduction(reduction)
    input, target = _input_and_target(input, target)
    p = input.data if isinstance(input, Tensor) else input
    if p.size and not (p.min() >= 0 and p.max() <= 1):     # also catches NaN
        bad = p[~((p >= 0) & (p <= 1))].flat[0]
        raise ValueError(f"Invalid value for argument `input`: expected probabilities in "
                         f"[0, 1]. Received: a value {bad!r}")
    return BinaryCrossEntropy.apply(input, target, reduction)


def binary_cross_entropy_with_logits(input, target, reduction="mean"):
    """Binary cross-entropy of ``sigmoid(input)``, fused and stable for any logits.

    Args:
        input: Tensor or array of logits, any shape.
        target: Tensor or array of the same shape (probabilities, usually 0/1).
        reduction: ``"mean"``, ``"sum"`` or ``"none"``.

    Returns:
        Scalar Tensor, or ``input``'s shape (backward node
        ``BinaryCrossEntropyWithLogitsBackward``).

    Shape:
        input, target: ``(*)``; output: ``()`` or ``(*)``.

    Example:
        >>> F.binary_cross_entropy_with_logits(mn.tensor([0.0]), np.array([1.0])).item()
        0.6931471824645996
    """
    reduction = _check_reduction(reduction)
    input, target = _input_and_target(input, target)
    return BinaryCrossEntropyWithLogits.apply(input, target, reduction)
