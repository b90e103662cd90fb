"""Differentiable activations: relu, leaky_relu, elu, selu, sigmoid, tanh, softmax,
log_softmax.

Each op is a ``Function`` over the kernels of ``minnet._ext._activations`` and keeps only
what its backward needs: sigmoid, tanh, relu, elu/selu and (log-)softmax keep their
OUTPUT (their derivatives are functions of it: ``y*(1-y)``, ``1-y**2``, ``y > 0``,
``y + alpha``, ...), so the input can be freed as soon as the next layer is done with
it.  The math, with the shapes, is in ``docs/math/activations.md``.
"""
import numbers

import numpy as np

from minnet._config import get_num_threads
from minnet._ext import _activations as _kernels
from minnet.functional._common import as_float_input as _as_float_input
from minnet.autograd import Function

__all__ = ["relu", "leaky_relu", "elu", "selu", "sigmoid", "tanh", "softmax", "log_softmax",
           "Relu", "LeakyRelu", "Elu", "Selu", "Sigmoid", "Tanh", "Softmax", "LogSoftmax",
           "SELU_ALPHA", "SELU_SCALE"]

# PyTorch's (and Klambauer et al.'s) SELU constants.
SELU_ALPHA = _kernels.SELU_ALPHA
SELU_SCALE = _kernels.SELU_SCALE


# ---------------------------------------------------------------------------------------
# Argument handling
# ---------------------------------------------------------------------------------------

def _check_real(value, name, minimum=None):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not np.isfinite(value):
        raise TypeError(f"Invalid argument `{name}`: expected a finite float. "
                        f"Received: {name}={value!r}")
    if minimum is not None and value < minimum:
        raise ValueError(f"Invalid value for argument `{name}`: expected a float >= {minimum}. "
                         f"Received: {name}={value!r}")
    return float(value)


def _check_axis(axis, ndim):
    if isinstance(axis, bool) or not isinstance(axis, numbers.Integral):
        raise TypeError(f"Invalid argument `axis`: expected an int. Received: axis={axis!r}")
    if ndim == 0:
        raise ValueError("Invalid argument `x`: softmax needs at least one axis. "
                         "Received a 0-d (scalar) input")
    if not -ndim <= axis < ndim:
        raise ValueError(f"Invalid value for argument `axis`: expected an int in "
                         f"[{-ndim}, {ndim}) for a {ndim}-D input. Received: axis={axis}")
    return int(axis) % ndim


def _contiguous(a, dtype):
    return np.ascontiguousarray(a, dtype=dtype)


# ---------------------------------------------------------------------------------------
# Elementwise activations
# ---------------------------------------------------------------------------------------

class Sigmoid(Function):
    """``y = 1 / (1 + exp(-x))``; backward ``dx = g * y * (1 - y)`` (saves ``y``)."""

    @staticmethod
    def forward(ctx, x):
        y = _kernels.sigmoid_forward(_contiguous(x, x.dtype), n_threads=get_num_threads())
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        g = _contiguous(grad, y.dtype)
        # a fresh contiguous copy of grad (e.g. from sum's broadcast view) takes dx in place
        return _kernels.sigmoid_backward(y, g, out=None if g is grad else g,
                                         n_threads=get_num_threads())

    @staticmethod
    def backward_graph(ctx, grad):
        # double backward: the same formula in Tensor operations (recorded)
        y = ctx.graph_output(0, ctx.saved_arrays[0])
        return grad * y * (1 - y)


class Tanh(Function):
    """``y = tanh(x)``; backward ``dx = g * (1 - y**2)`` (saves ``y``)."""

    @staticmethod
    def forward(ctx, x):
        y = _kernels.tanh_forward(_contiguous(x, x.dtype), n_threads=get_num_threads())
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        g = _contiguous(grad, y.dtype)
        return _kernels.tanh_backward(y, g, out=None if g is grad else g,
                                      n_threads=get_num_threads())

    @staticmethod
    def backward_graph(ctx, grad):
        y = ctx.graph_output(0, ctx.saved_arrays[0])
        return grad * (1 - y * y)


class Relu(Function):
    """``y = max(x, 0)``; backward ``dx = g * (y > 0)`` (saves ``y``)."""

    @staticmethod
    def forward(ctx, x):
        y = _kernels.leaky_relu_forward(_contiguous(x, x.dtype), 0.0,
                                        n_threads=get_num_threads())
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return _kernels.leaky_relu_backward(y, _contiguous(grad, y.dtype), 0.0,
                                            n_threads=get_num_threads())

    @staticmethod
    def backward_graph(ctx, grad):
        (y,) = ctx.saved_arrays
        return grad * (y > 0).astype(y.dtype)


class LeakyRelu(Function):
    """``y = x if x > 0 else slope * x``; backward ``dx = g if x > 0 else slope * g``.

    Saves ``y`` when ``slope >= 0`` (``y > 0`` exactly where ``x > 0``), else ``x``.
    """

    @staticmethod
    def forward(ctx, x, negative_slope):
        x = _contiguous(x, x.dtype)
        y = _kernels.leaky_relu_forward(x, negative_slope, n_threads=get_num_threads())
        ctx.save_for_backward(y if negative_slope >= 0 else x)
        ctx.negative_slope = negative_slope
        return y

    @staticmethod
    def backward(ctx, grad):
        (saved,) = ctx.saved_tensors
        dx = _kernels.leaky_relu_backward(saved, _contiguous(grad, saved.dtype),
                                          ctx.negative_slope, n_threads=get_num_threads())
        return dx, None

    @staticmethod
    def backward_graph(ctx, grad):
        (saved,) = ctx.saved_arrays
        return grad * np.where(saved > 0, 1.0, ctx.negative_slope).astype(saved.dtype), None


class Elu(Function):
    """``y = scale * (x if x > 0 else alpha * (exp(x) - 1))``.

    Backward from the saved output when ``alpha >= 0``: ``dx = g * scale`` where ``y > 0``,
    else ``g * (y + scale * alpha)``; from the saved input otherwise.
    """

    @staticmethod
    def forward(ctx, x, alpha, scale=1.0):
        x = _contiguous(x, x.dtype)
        y = _kernels.elu_forward(x, alpha, scale, n_threads=get_num_threads())
        ctx.from_output = alpha >= 0
        ctx.save_for_backward(y if ctx.from_output else x)
        ctx.alpha, ctx.scale = alpha, scale
        return y

    @staticmethod
    def backward(ctx, grad):
        (saved,) = ctx.saved_tensors
        dx = _kernels.elu_backward(saved, _contiguous(grad, saved.dtype), ctx.alpha,
                                   ctx.scale, ctx.from_output, n_threads=get_num_threads())
        return dx, None, None

    @staticmethod
    def backward_graph(ctx, grad):
        (saved,) = ctx.saved_arrays
        positive = saved > 0
        scale = np.asarray(ctx.scale * positive, dtype=saved.dtype)
        if ctx.from_output:      # negative side: dy/dx = y + scale * alpha
            y = ctx.graph_output(0, saved)
            return grad * scale + grad * (y + ctx.scale * ctx.alpha) * ~positive, None, None
        x = ctx.graph_input(0, saved)
        return grad * scale + grad * (x.exp() * (ctx.scale * ctx.alpha)) * ~positive, None, None


class Selu(Elu):
    """SELU: ELU with PyTorch's ``alpha = SELU_ALPHA`` and ``scale = SELU_SCALE``."""


def sigmoid(x):
    """Logistic sigmoid ``1 / (1 + exp(-x))``, elementwise; no overflow for any ``x``.

    Args:
        x: Tensor or array, any shape (integers are cast to float32).

    Returns:
        Tensor of the same shape and dtype; its backward node is ``SigmoidBackward``.

    Shape:
        x: ``(*)``; output: same as x.

    Example:
        >>> F.sigmoid(mn.tensor([0.0, 100.0, -100.0])).numpy()
        array([0.5, 1. , 0. ], dtype=float32)
    """
    return Sigmoid.apply(_as_float_input(x))


def tanh(x):
    """Hyperbolic tangent, elementwise.

    Args:
        x: Tensor or array, any shape.

    Returns:
        Tensor like ``x`` (backward node ``TanhBackward``).

    Shape:
        x: ``(*)``; output: same as x.

    Example:
        >>> F.tanh(mn.tensor([0.0, 1.0])).numpy()
        array([0.       , 0.7615942], dtype=float32)
    """
    return Tanh.apply(_as_float_input(x))


def relu(x):
    """Rectified linear unit ``max(x, 0)``, elementwise (NaN stays NaN, as PyTorch).

    Args:
        x: Tensor or array, any shape.

    Returns:
        Tensor like ``x`` (backward node ``ReluBackward``; the gradient at 0 is 0).

    Shape:
        x: ``(*)``; output: same as x.

    Example:
        >>> F.relu(mn.tensor([-1.0, 2.0])).numpy()
        array([0., 2.], dtype=float32)
    """
    return Relu.apply(_as_float_input(x))


def leaky_relu(x, negative_slope=0.01):
    """``x if x > 0 else negative_slope * x``, elementwise.

    Args:
        x: Tensor or array, any shape.
        negative_slope: slope for ``x <= 0`` (PyTorch's default 0.01).

    Returns:
        Tensor like ``x`` (backward node ``LeakyReluBackward``).

    Shape:
        x: ``(*)``; output: same as x.

    Example:
        >>> F.leaky_relu(mn.tensor([-1.0, 2.0]), 0.1).numpy()
        array([-0.1,  2. ], dtype=float32)
    """
    negative_slope = _check_real(negative_slope, "negative_slope")
    return LeakyRelu.apply(_as_float_input(x), negative_slope)


def elu(x, alpha=1.0):
    """Exponential linear unit ``x if x > 0 else alpha * (exp(x) - 1)``.

    Args:
        x: Tensor or array, any shape.
        alpha: value the negative side saturates to (``-alpha``).

    Returns:
        Tensor like ``x`` (backward node ``EluBackward``).

    Shape:
        x: ``(*)``; output: same as x.

    Example:
        >>> F.elu(mn.tensor([-1.0, 2.0])).numpy()
        array([-0.63212055,  2.        ], dtype=float32)
    """
    alpha = _check_real(alpha, "alpha")
    return Elu.apply(_as_float_input(x), alpha, 1.0)


def selu(x):
    """Scaled ELU: ``SELU_SCALE * (x if x > 0 else SELU_ALPHA * (exp(x) - 1))``.

    Args:
        x: Tensor or array, any shape.

    Returns:
        Tensor like ``x`` (backward node ``SeluBackward``).

    Shape:
        x: ``(*)``; output: same as x.

    Example:
        >>> F.selu(mn.tensor([1.0])).numpy()
        array([1.050701], dtype=float32)
    """
    return Selu.apply(_as_float_input(x), SELU_ALPHA, SELU_SCALE)


# ---------------------------------------------------------------------------------------
# Softmax / log-softmax
# ---------------------------------------------------------------------------------------

def _to_rows(a, axis):
    """``a`` with ``axis`` moved last, as a C-contiguous ``(rows, cols)`` array."""
    moved = np.moveaxis(a, axis, -1)
    n_rows = int(np.prod(moved.shape[:-1], dtype=np.int64))
    return np.ascontiguousarray(moved).reshape(n_rows, a.shape[axis]), moved.shape


def _from_rows(rows, moved_shape, axis):
    # A view: moving the axis back costs nothing, and for axis=-1 it is the array itself.
    return np.moveaxis(rows.reshape(moved_shape), -1, axis)


class Softmax(Function):
    """``y = exp(x - max) / sum(exp(x - max))`` along ``axis``; backward
    ``dx = y * (g - sum(g * y))`` (saves ``y``)."""

    log_output = False

    @classmethod
    def forward(cls, ctx, x, axis):
        rows, moved_shape = _to_rows(x, axis)
        y = _kernels.softmax_forward(rows, cls.log_output, n_threads=get_num_threads())
        y = _from_rows(y, moved_shape, axis)
        ctx.save_for_backward(y)
        ctx.axis = axis
        return y

    @classmethod
    def backward(cls, ctx, grad):
        (y,) = ctx.saved_tensors
        y_rows, moved_shape = _to_rows(y, ctx.axis)
        g_rows, _ = _to_rows(grad.astype(y.dtype, copy=False), ctx.axis)
        dx = _kernels.softmax_backward(y_rows, g_rows, cls.log_output,
                                       n_threads=get_num_threads())
        return _from_rows(dx, moved_shape, ctx.axis), None

    @classmethod
    def backward_graph(cls, ctx, grad):
        y = ctx.graph_output(0, ctx.saved_arrays[0])
        if cls.log_output:
            return grad - y.exp() * grad.sum(axis=ctx.axis, keepdims=True), None
        gy = grad * y
        return gy - y * gy.sum(axis=ctx.axis, keepdims=True), None


class LogSoftmax(Softmax):
    """``y = x - logsumexp(x)`` along ``axis``; backward ``dx = g - exp(y) * sum(g)``
    (saves ``y``)."""

    log_output = True


def softmax(x, axis=-1):
    """Softmax along ``axis``, numerically stable (the max is subtracted first).

    Args:
        x: Tensor or array with at least one axis.
        axis: the axis that sums to 1 (default: the last).

    Returns:
        Tensor like ``x`` (backward node ``SoftmaxBackward``).

    Shape:
        x: ``(*)``; output: same as x.

    Example:
        >>> F.softmax(mn.tensor([[1.0, 1.0]])).numpy()
        array([[0.5, 0.5]], dtype=float32)
    """
    x = _as_float_input(x)
    axis = _check_axis(axis, x.ndim)
    return Softmax.apply(x, axis)


def log_softmax(x, axis=-1):
    """``log(softmax(x))`` along ``axis``, computed as ``x - logsumexp(x)`` (no log of 0).

    Args:
        x: Tensor or array with at least one axis.
        axis: the axis of the classes (default: the last).

    Returns:
        Tensor like ``x`` (backward node ``LogSoftmaxBackward``).

    Shape:
        x: ``(*)``; output: same as x.

    Example:
        >>> F.log_softmax(mn.tensor([[0.0, 0.0]])).numpy()
        array([[-0.6931472, -0.6931472]], dtype=float32)
    """
    x = _as_float_input(x)
    axis = _check_axis(axis, x.ndim)
    return LogSoftmax.apply(x, axis)
