"""Sigmoid, tanh and ReLU as autograd operations over the ``_ext`` kernels.

They live on the autograd floor because the Tensor methods ``x.sigmoid()``, ``x.tanh()`` and
``x.relu()`` are these operations (autograd calls ``_ext`` directly, never ``functional``);
``minnet.functional.sigmoid/tanh/relu`` check their argument and apply the same Functions.
Each keeps only its OUTPUT for backward (``y*(1-y)``, ``1-y**2``, ``y > 0``); the math is in
``docs/math/activations.md``.
"""
import numpy as np

from minnet._config import get_num_threads
from minnet._ext import _activations as _kernels
from minnet.autograd.function import Function

__all__ = ["Sigmoid", "Tanh", "Relu", "as_kernel_grad"]


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
        return _kernels.leaky_relu_backward(y, as_kernel_grad(grad, y.dtype), 0.0,
                                            n_threads=get_num_threads())

    @staticmethod
    def backward_graph(ctx, grad):
        (y,) = ctx.saved_arrays
        return grad * (y > 0).astype(y.dtype)
