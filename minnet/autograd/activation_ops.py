"""Sigmoid, tanh, ReLU, softmax and log-softmax as autograd operations over the ``_ext``
kernels.

They live on the autograd floor because the Tensor methods ``x.sigmoid()``, ``x.tanh()``,
``x.relu()``, ``x.softmax(dim)`` and ``x.log_softmax(dim)`` are these operations (autograd
calls ``_ext`` directly, never ``functional``); ``minnet.functional``'s functions of the same
names check their argument and apply the same Functions.  Each keeps only its OUTPUT for
backward (``y*(1-y)``, ``1-y**2``, ``y > 0``, ``y``); the math is in
``docs/math/activations.md``.
"""
import numpy as np

from minnet._config import get_num_threads
from minnet._ext import activations_kernels as _kernels
from minnet._ext import softmax_kernels
from minnet.autograd.function import Function

from minnet.autograd.op_helpers import exp, from_rows, norm_dim, rows_along

__all__ = ["Sigmoid", "Tanh", "Relu", "Softmax", "LogSoftmax", "as_kernel_grad", "relu_mask"]

_KERNEL_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _contiguous(a, dtype):
    return np.ascontiguousarray(a, dtype=dtype)


def as_kernel_grad(grad, dtype):
    """``grad`` as the activation kernels' backward takes it: C-contiguous, of ``dtype``;
    but one value broadcast to the whole shape (every stride 0: the gradient that
    ``.sum().backward()`` sends) is passed as it is, and the kernel reads the value block
    by block instead of a full-size copy (benchmarks/bench_autograd.py, the activation
    layer workloads)."""
    if grad.dtype == dtype and (grad.flags.c_contiguous or not any(grad.strides)):
        return grad
    return np.ascontiguousarray(grad, dtype=dtype)


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
        g = as_kernel_grad(grad, y.dtype)
        # a fresh contiguous copy of grad (e.g. of a transposed view) takes dx in place
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
        g = as_kernel_grad(grad, y.dtype)
        return _kernels.tanh_backward(y, g, out=None if g is grad else g,
                                      n_threads=get_num_threads())

    @staticmethod
    def backward_graph(ctx, grad):
        y = ctx.graph_output(0, ctx.saved_arrays[0])
        return grad * (1 - y * y)


class Relu(Function):
    """``y = max(x, 0)``; backward ``dx = 0 if y <= 0 else g`` (saves ``y``; torch's
    ``threshold_backward``: a NaN ``y`` passes ``g``)."""

    @staticmethod
    def forward(ctx, x):
        y = _kernels.leaky_relu_forward(_contiguous(x, x.dtype), 0.0,
                                        n_threads=get_num_threads())
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return _kernels.relu_backward(y, as_kernel_grad(grad, y.dtype),
                                      n_threads=get_num_threads())

    @staticmethod
    def backward_graph(ctx, grad):
        (y,) = ctx.saved_arrays
        return grad * relu_mask(y)


def relu_mask(y):
    """``1`` where relu passes the gradient (``not y <= 0``: NaN passes, as the kernel),
    else ``0``, in ``y``'s dtype: the double-backward mask of relu."""
    return np.logical_not(y <= 0).astype(y.dtype)


def _grad_rows(g, d, rows_shape):
    """``g`` as the ``(rows, cols)`` operand of the softmax backward kernel, axis ``d`` last:
    a view when each row is contiguous or one value (column stride 1 or 0, e.g. the
    broadcast gradient of ``.sum()``), which the kernel reads as it is; a C-contiguous copy
    otherwise (benchmarks/bench_autograd.py, "softmax dim -1")."""
    rows = np.moveaxis(g, d, -1).reshape(rows_shape)       # a view where NumPy can
    if rows.strides[1] in (0, rows.itemsize):
        return rows
    return np.ascontiguousarray(rows)


class Softmax(Function):
    """Along ``dim``, on the row kernels of ``_ext.softmax_kernels`` (float32/float64)."""

    log_output = False

    @classmethod
    def forward(cls, ctx, a, dim=-1):
        d = ctx.dim = norm_dim(dim, a.ndim)
        if a.dtype in _KERNEL_DTYPES:
            rows, moved_shape = rows_along(a, d)
            y = softmax_kernels.softmax_forward(rows, cls.log_output, n_threads=get_num_threads())
            y = from_rows(y, moved_shape, d)
        else:
            shifted = a - np.max(a, axis=d, keepdims=True)
            if cls.log_output:
                y = shifted - np.log(np.sum(np.exp(shifted), axis=d, keepdims=True))
            else:
                e = np.exp(shifted)
                y = e / np.sum(e, axis=d, keepdims=True)
        ctx.save_for_backward(y)
        return y

    @classmethod
    def backward(cls, ctx, g):
        (y,) = ctx.saved_tensors
        d = ctx.dim
        if y.dtype in _KERNEL_DTYPES and type(g) is np.ndarray:
            y_rows, moved_shape = rows_along(y, d)
            g_rows = _grad_rows(g.astype(y.dtype, copy=False), d, y_rows.shape)
            # written through a view into an array of the moved shape, which is returned
            # itself when d is the last axis: a gradient that is not a view is the engine's
            # to keep, not copied again into .grad (benchmarks/bench_autograd.py, "softmax dim -1")
            dx = np.empty(moved_shape, dtype=y.dtype)
            softmax_kernels.softmax_backward(y_rows, g_rows, cls.log_output, out=dx.reshape(y_rows.shape),
                                      n_threads=get_num_threads())
            return dx if d == y.ndim - 1 else np.moveaxis(dx, -1, d)
        return cls.backward_graph(ctx, g)

    @classmethod
    def backward_graph(cls, ctx, g):
        (y,) = ctx.saved_tensors
        if cls.log_output:
            return g - exp(y) * g.sum(axis=ctx.dim, keepdims=True)
        gy = g * y
        return gy - y * gy.sum(axis=ctx.dim, keepdims=True)


class LogSoftmax(Softmax):
    log_output = True
