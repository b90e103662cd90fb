"""Differentiable layer and group normalisation (PyTorch's ``F.layer_norm``/``F.group_norm``).

Both run the fused row kernels of ``minnet._ext.layernorm_kernels``: layer norm normalises each
row of the trailing ``normalized_shape`` block; group norm views ``(N, C, *)`` as
``(N * groups, C / groups * prod(*))`` rows (a reshape, no copy), normalises them without an
affine step, and applies its per-channel ``weight``/``bias`` with tensor operations. The
math is in ``docs/math/layernorm.md``.
"""
import numbers

import numpy as np

from minnet._config import get_num_threads
from minnet._ext import layernorm_kernels as _kernels
from minnet.autograd import Function, Tensor
from minnet.functional._common import as_float_input

__all__ = ["layer_norm", "group_norm", "LayerNorm"]


class LayerNorm(Function):
    """Rows of ``x`` ``(rows, D)`` normalised; ``gamma``/``beta`` ``(D,)`` or None.
    Saves ``x``, the row means and ``rstd`` (and ``gamma``)."""

    @staticmethod
    def forward(ctx, x, gamma, beta, eps):
        x = np.ascontiguousarray(x)
        if gamma is not None:
            gamma = np.ascontiguousarray(gamma, dtype=x.dtype)
            beta = np.ascontiguousarray(beta, dtype=x.dtype)
        y, mean, rstd = _kernels.layernorm_forward(x, gamma, beta, eps, n_threads=get_num_threads())
        ctx.save_for_backward(x, mean, rstd, gamma)
        return y

    @staticmethod
    def backward(ctx, grad):
        x, mean, rstd, gamma = ctx.saved_tensors
        dx, dgamma, dbeta = _kernels.layernorm_backward(
            x, np.ascontiguousarray(grad, dtype=x.dtype), mean, rstd, gamma,
            n_threads=get_num_threads())
        return dx, dgamma, dbeta, None


def _check_eps(eps):
    if isinstance(eps, bool) or not isinstance(eps, numbers.Real) or not eps >= 0 \
            or not np.isfinite(eps):
        raise ValueError(f"Invalid value for argument `eps`: expected a float >= 0. "
                         f"Received: eps={eps!r}")
    return float(eps)


def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    """PyTorch's ``F.layer_norm``: normalise over the trailing ``normalized_shape`` axes.

    Args:
        x: Tensor ``(*, *normalized_shape)``.
        normalized_shape: int or tuple: the trailing shape to normalise over.
        weight, bias: Tensors of ``normalized_shape`` (both or neither).
        eps: added to the variance (biased, as PyTorch).

    Returns:
        Tensor like ``x``.

    Example:
        >>> F.layer_norm(mn.tensor([[1.0, 3.0]]), (2,)).numpy()
        array([[-0.99999..., 0.99999...]], dtype=float32)
    """
    x = as_float_input(x)
    if isinstance(normalized_shape, numbers.Integral):
        normalized_shape = (int(normalized_shape),)
    normalized_shape = tuple(int(s) for s in normalized_shape)
    k = len(normalized_shape)
    if k == 0 or tuple(x.shape[x.ndim - k:]) != normalized_shape or x.ndim < k:
        raise ValueError(f"Invalid value for argument `normalized_shape`: expected the trailing "
                         f"shape of the input. Received: normalized_shape={normalized_shape} for "
                         f"input shape {tuple(x.shape)}")
    if (weight is None) != (bias is None):
        raise ValueError("Give both `weight` and `bias`, or neither (minnet's fused kernel "
                         "applies them together).")
    eps = _check_eps(eps)
    d = int(np.prod(normalized_shape))
    rows = int(np.prod(x.shape[:x.ndim - k], dtype=np.int64))
    x2 = x.reshape(rows, d) if isinstance(x, Tensor) else np.reshape(x, (rows, d))
    if weight is not None:
        weight = as_float_input(weight, "weight")
        bias = as_float_input(bias, "bias")
        if tuple(weight.shape) != normalized_shape or tuple(bias.shape) != normalized_shape:
            raise ValueError(f"Invalid value for argument `weight`/`bias`: expected shape "
                             f"{normalized_shape}. Received: {tuple(weight.shape)}, "
                             f"{tuple(bias.shape)}")
        weight = weight.reshape(d) if isinstance(weight, Tensor) else np.reshape(weight, d)
        bias = bias.reshape(d) if isinstance(bias, Tensor) else np.reshape(bias, d)
    y = LayerNorm.apply(x2, weight, bias, eps)
    return y.reshape(tuple(x.shape))


def group_norm(x, num_groups, weight=None, bias=None, eps=1e-5):
    """PyTorch's ``F.group_norm`` on ``(N, C, *)``: statistics per sample and group of
    ``C / num_groups`` channels; ``weight``/``bias`` ``(C,)`` per channel.

    Example:
        >>> F.group_norm(mn.tensor(np.arange(8.0).reshape(1, 2, 4)), 1).shape
        (1, 2, 4)
    """
    x = as_float_input(x)
    if x.ndim < 2:
        raise ValueError(f"Invalid value for argument `x`: expected (N, C, *). Received shape "
                         f"{tuple(x.shape)}")
    n, c = x.shape[0], x.shape[1]
    if isinstance(num_groups, bool) or not isinstance(num_groups, numbers.Integral) \
            or num_groups < 1 or c % num_groups:
        raise ValueError(f"Invalid value for argument `num_groups`: expected a positive divisor "
                         f"of the {c} channels. Received: num_groups={num_groups!r}")
    eps = _check_eps(eps)
    rest = int(np.prod(x.shape[1:], dtype=np.int64)) // num_groups
    rows = x.reshape(n * num_groups, rest) if isinstance(x, Tensor) else \
        np.reshape(x, (n * num_groups, rest))
    y = LayerNorm.apply(rows, None, None, eps).reshape(tuple(x.shape))
    if weight is None and bias is None:
        return y
    channel_shape = (c,) + (1,) * (x.ndim - 2)
    if weight is not None:
        weight = as_float_input(weight, "weight")
        y = y * (weight.reshape(channel_shape) if isinstance(weight, Tensor)
                 else np.reshape(weight, channel_shape))
    if bias is not None:
        bias = as_float_input(bias, "bias")
        y = y + (bias.reshape(channel_shape) if isinstance(bias, Tensor)
                 else np.reshape(bias, channel_shape))
    return y
