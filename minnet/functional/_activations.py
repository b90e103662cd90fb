"""Differentiable activations: relu, leaky_relu, elu, selu, sigmoid, tanh, softmax,
log_softmax, and gelu, silu, softplus, softsign, relu6, hardsigmoid, hardswish, mish
(PyTorch's names and meanings).

Each op is a ``Function`` over the kernels of ``minnet._ext`` (``activations_kernels``,
``unary_kernels``; softmax is autograd's, on ``softmax_kernels``) and keeps only what its backward needs: sigmoid, tanh, relu,
elu/selu and (log-)softmax keep their OUTPUT (their derivatives are functions of it:
``y*(1-y)``, ``1-y**2``, ``y > 0``, ``y + alpha``, ...), so the input can be freed as soon as the next layer is done with
it.  The math, with the shapes, is in ``docs/math/activations.md``.
"""
import math
import numbers

import numpy as np

from minnet._config import get_num_threads
from minnet._ext import activations_kernels as _kernels
from minnet._ext import unary_kernels
from minnet.functional._common import as_float_input as _as_float_input
from minnet.autograd import Function
from minnet.autograd.activation_ops import LogSoftmax, Relu, Sigmoid, Softmax, Tanh, as_kernel_grad
from minnet.autograd.elementwise_ops import Erf

__all__ = ["relu", "leaky_relu", "elu", "selu", "sigmoid", "tanh", "softmax", "log_softmax",
           "gelu", "silu", "softplus", "softsign", "relu6", "hardsigmoid", "hardswish", "mish",
           "Relu", "LeakyRelu", "Elu", "Selu", "Sigmoid", "Tanh", "Softmax", "LogSoftmax",
           "Gelu", "GeluTanh", "Silu", "Softplus", "Softsign", "Relu6", "Hardsigmoid",
           "Hardswish", "Mish", "PRelu", "prelu", "prelu_broadcast", "SELU_ALPHA", "SELU_SCALE"]

# PyTorch's (and Klambauer et al.'s) SELU constants.
SELU_ALPHA = _kernels.SELU_ALPHA
SELU_SCALE = _kernels.SELU_SCALE

# gelu's and softplus's constants (PyTorch's: tanh-gelu's cubic term, softplus's threshold).
_SQRT_HALF = math.sqrt(0.5)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_GELU_CUBIC = 0.044715
_SOFTPLUS_THRESHOLD = 20.0


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

# Sigmoid, Tanh and Relu are autograd operations (the Tensor methods x.sigmoid(), x.tanh(),
# x.relu() call them): minnet/autograd/activation_ops.py.


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
        dx = _kernels.leaky_relu_backward(saved, as_kernel_grad(grad, saved.dtype),
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
        dx = _kernels.elu_backward(saved, as_kernel_grad(grad, saved.dtype), ctx.alpha,
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
# The unary family (one fused kernel pair in _ext/unary_kernels.pyx, chosen by `_op`):
# forward saves the input x, backward computes g * f'(x) in one pass.
# ---------------------------------------------------------------------------------------

class _Unary(Function):
    _op = None

    @classmethod
    def forward(cls, ctx, x):
        x = _contiguous(x, x.dtype)
        y = unary_kernels.unary_forward(x, cls._op, n_threads=get_num_threads())
        ctx.save_for_backward(x)
        return y

    @classmethod
    def backward(cls, ctx, grad):
        (x,) = ctx.saved_tensors
        return unary_kernels.unary_backward(x, as_kernel_grad(grad, x.dtype), cls._op,
                                       n_threads=get_num_threads())


class Gelu(_Unary):
    """``y = x * Phi(x) = 0.5 x (1 + erf(x / sqrt(2)))``; ``dx = g (Phi(x) + x phi(x))``."""
    _op = "gelu"

    @staticmethod
    def backward_graph(ctx, grad):
        # double backward: the same derivative in Tensor operations (erf's own is recorded)
        x = ctx.graph_input(0, ctx.saved_arrays[0])
        cdf = (Erf.apply(x * _SQRT_HALF) + 1) * 0.5
        pdf = (x * x * -0.5).exp() * _INV_SQRT_2PI
        return grad * (cdf + x * pdf)


class GeluTanh(_Unary):
    """``y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x**3)))`` (PyTorch's ``approximate='tanh'``)."""
    _op = "gelu_tanh"

    @staticmethod
    def backward_graph(ctx, grad):
        # u = sqrt(2/pi) (x + 0.044715 x**3), t = tanh(u):
        # dy/dx = (1 + t) / 2 + x (1 - t**2) u' / 2
        x = ctx.graph_input(0, ctx.saved_arrays[0])
        t = ((x + x * x * x * _GELU_CUBIC) * _SQRT_2_OVER_PI).tanh()
        du = (x * x * (3 * _GELU_CUBIC) + 1) * _SQRT_2_OVER_PI
        return grad * ((t + 1) * 0.5 + x * (1 - t * t) * du * 0.5)


class Silu(_Unary):
    """``y = x sigmoid(x)``; ``dx = g s (1 + x (1 - s))`` with ``s = sigmoid(x)``."""
    _op = "silu"


class Softplus(_Unary):
    """``y = log(1 + exp(x))`` (``x`` itself above 20); ``dx = g sigmoid(x)`` (``g`` above 20)."""
    _op = "softplus"

    @staticmethod
    def backward_graph(ctx, grad):
        # dy/dx = sigmoid(x) up to the threshold, 1 above it; as PyTorch's double backward,
        # the sigmoid is differentiated strictly below the threshold only
        (x_data,) = ctx.saved_arrays
        below = (x_data < _SOFTPLUS_THRESHOLD).astype(x_data.dtype)
        constant = np.where(x_data > _SOFTPLUS_THRESHOLD, 1.0,
                            np.where(x_data == _SOFTPLUS_THRESHOLD,
                                     1.0 / (1.0 + math.exp(-_SOFTPLUS_THRESHOLD)), 0.0)).astype(x_data.dtype)
        x = ctx.graph_input(0, x_data)
        return grad * (x.sigmoid() * below + constant)


class Softsign(_Unary):
    """``y = x / (1 + |x|)``; ``dx = g / (1 + |x|)**2``."""
    _op = "softsign"


class Relu6(_Unary):
    """``y = min(max(x, 0), 6)``; ``dx = g`` for ``0 < x < 6``, else 0."""
    _op = "relu6"


class Hardsigmoid(_Unary):
    """``y = clip(x / 6 + 1/2, 0, 1)``; ``dx = g / 6`` for ``-3 < x < 3``, else 0."""
    _op = "hard_sigmoid"


class Hardswish(_Unary):
    """``y = x * hardsigmoid(x)``; ``dx = g (2x + 3) / 6`` on ``(-3, 3)``, 0 up to -3, ``g`` from 3 on."""
    _op = "hard_silu"


class Mish(_Unary):
    """``y = x tanh(softplus(x))``; ``dx = g (t + x sigmoid(x) (1 - t**2))``, ``t = tanh(softplus(x))``."""
    _op = "mish"


def gelu(x, approximate="none"):
    """Gaussian error linear unit, as ``torch.nn.functional.gelu``.

    Args:
        x: Tensor or array, any shape.
        approximate: ``"none"`` (exact, ``0.5 x (1 + erf(x / sqrt 2))``) or ``"tanh"``
            (``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x**3)))``).

    Returns:
        Tensor like ``x``.

    Example:
        >>> F.gelu(mn.tensor([0.0, 1.0])).numpy()
        array([0.       , 0.8413447], dtype=float32)
    """
    if approximate not in ("none", "tanh"):
        raise ValueError(f"Invalid value for argument `approximate`: expected 'none' or 'tanh'. "
                         f"Received: approximate={approximate!r}")
    x = _as_float_input(x)
    return (GeluTanh if approximate == "tanh" else Gelu).apply(x)


def silu(x):
    """SiLU (swish) ``x * sigmoid(x)``, elementwise.

    Example:
        >>> F.silu(mn.tensor([0.0])).numpy()
        array([0.], dtype=float32)
    """
    return Silu.apply(_as_float_input(x))


def softplus(x):
    """``log(1 + exp(x))`` elementwise (PyTorch's ``beta=1, threshold=20``: ``x`` above 20).

    Example:
        >>> F.softplus(mn.tensor([0.0])).numpy()
        array([0.6931472], dtype=float32)
    """
    return Softplus.apply(_as_float_input(x))


def softsign(x):
    """``x / (1 + |x|)`` elementwise.

    Example:
        >>> F.softsign(mn.tensor([1.0])).numpy()
        array([0.5], dtype=float32)
    """
    return Softsign.apply(_as_float_input(x))


def relu6(x):
    """``min(max(x, 0), 6)`` elementwise.

    Example:
        >>> F.relu6(mn.tensor([-1.0, 7.0])).numpy()
        array([0., 6.], dtype=float32)
    """
    return Relu6.apply(_as_float_input(x))


def hardsigmoid(x):
    """``clip(x / 6 + 1/2, 0, 1)`` elementwise (PyTorch's and Keras 3's hard sigmoid).

    Example:
        >>> F.hardsigmoid(mn.tensor([0.0, 3.0])).numpy()
        array([0.5, 1. ], dtype=float32)
    """
    return Hardsigmoid.apply(_as_float_input(x))


def hardswish(x):
    """``x * hardsigmoid(x)`` elementwise (Keras's ``hard_silu``).

    Example:
        >>> F.hardswish(mn.tensor([3.0])).numpy()
        array([3.], dtype=float32)
    """
    return Hardswish.apply(_as_float_input(x))


def mish(x):
    """``x * tanh(softplus(x))`` elementwise.

    Example:
        >>> F.mish(mn.tensor([0.0])).numpy()
        array([0.], dtype=float32)
    """
    return Mish.apply(_as_float_input(x))


# ---------------------------------------------------------------------------------------
# PReLU: a learned slope per channel (or per element).
# ---------------------------------------------------------------------------------------

def _sum_to(grad, shape):
    """Sum ``grad`` over the axes along which an operand of ``shape`` was broadcast."""
    extra = grad.ndim - len(shape)
    if extra > 0:
        grad = grad.sum(axis=tuple(range(extra)))
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    return grad.sum(axis=axes, keepdims=True) if axes else grad


class PRelu(Function):
    """``y = x if x > 0 else a * x`` with ``a`` broadcast against ``x``; backward
    ``dx = g if x > 0 else a * g`` and ``da = sum(g * x * (x <= 0))`` over the broadcast
    axes (saves ``x`` and ``a``)."""

    @staticmethod
    def forward(ctx, x, alpha):
        alpha = alpha.astype(x.dtype, copy=False)
        y = np.where(x > 0, x, alpha * x)
        ctx.save_for_backward(x, alpha)
        return y

    @staticmethod
    def backward(ctx, grad):
        x, alpha = ctx.saved_tensors
        negative = x <= 0
        dx = np.where(negative, alpha * grad, grad) if ctx.needs_input_grad[0] else None
        da = _sum_to(np.where(negative, grad * x, 0), alpha.shape) \
            if ctx.needs_input_grad[1] else None
        return dx, da


def prelu(x, weight):
    """PyTorch's ``F.prelu``: ``x if x > 0 else weight * x``, ``weight`` per channel (axis 1).

    Args:
        x: Tensor or array ``(N, C, *)`` (or 1-D).
        weight: Tensor of shape ``(1,)`` (one slope) or ``(C,)`` (one per channel of axis 1).

    Returns:
        Tensor like ``x``.

    Example:
        >>> F.prelu(mn.tensor([[-1.0, 2.0]]), mn.tensor([0.25])).numpy()
        array([[-0.25,  2.  ]], dtype=float32)
    """
    x = _as_float_input(x)
    weight = _as_float_input(weight, "weight")
    if weight.ndim != 1 or (weight.shape[0] != 1 and (x.ndim < 2 or weight.shape[0] != x.shape[1])):
        raise ValueError(f"Invalid value for argument `weight`: expected shape (1,) or "
                         f"(channels,) = ({x.shape[1] if x.ndim > 1 else 1},). Received: "
                         f"weight.shape={tuple(weight.shape)}")
    if weight.shape[0] != 1:
        weight = weight.reshape((weight.shape[0],) + (1,) * (x.ndim - 2))
    return PRelu.apply(x, weight)


def prelu_broadcast(x, alpha):
    """``x if x > 0 else alpha * x`` with ``alpha`` of any shape that broadcasts against
    ``x`` (Keras's PReLU: ``alpha`` has the sample shape, 1 on shared axes)."""
    return PRelu.apply(_as_float_input(x), alpha)


# ---------------------------------------------------------------------------------------
# Softmax / log-softmax
# ---------------------------------------------------------------------------------------

# Softmax and LogSoftmax are the autograd operations behind ``Tensor.softmax`` /
# ``Tensor.log_softmax`` (autograd/activation_ops.py, on the row kernels of _ext/softmax_kernels);
# the functions below add the public argument checks.


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
    return Softmax.apply(x, dim=axis)


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
    return LogSoftmax.apply(x, dim=axis)
