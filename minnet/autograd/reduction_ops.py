"""Reductions as Functions: sum, mean, var, prod, norm, logsumexp, amax/amin and cumsum.

A reduction's backward puts the reduced axes back (``_expand_reduced``: a reshape and a
broadcast view, no copy) and multiplies by the local derivative; cumsum's backward is a
reversed cumsum.  The math is in ``docs/math/autograd_ops.md``.
"""
import math

import numpy as np

from minnet._config import get_num_threads
from minnet._ext import indexing_kernels
from minnet._ext import reduce_kernels
from minnet._ext import softmax_kernels

from .function import Function
from .indexing_ops import where
from .op_helpers import absolute, exp, is_tensor, norm_dim, norm_dims, raw, rows_along
from .shape_ops import broadcast_to, flip

__all__ = ["Sum", "Mean", "Var", "Prod", "Norm", "LogSumExp", "CumSum", "Amax"]


def _expand_reduced(g, shape, dims, keepdim):
    """Undo a reduction over ``dims`` (None = all): put the reduced axes back and broadcast."""
    if not keepdim:
        if dims is None:
            g = g.reshape((1,) * len(shape))
        else:
            kept = list(g.shape)
            for d in dims:
                kept.insert(d, 1)
            g = g.reshape(tuple(kept))
    return broadcast_to(g, shape)


def _drop_reduced(out, dims, keepdims):
    """A keepdims=True reduction's result as the caller asked for it (reduced axes dropped
    unless ``keepdims``)."""
    if keepdims:
        return out
    return np.asarray(out.reshape(()) if dims is None else np.squeeze(out, axis=dims))


_KERNEL_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _cumsum(x, dim, reverse=False):
    """Running sums along ``dim`` (from the end when ``reverse``); a recorded ``CumSum`` on a
    Tensor.  float32/float64 run on the threaded kernel in one pass, accumulating in float64
    as PyTorch's CPU cumsum does."""
    if is_tensor(x):
        return CumSum.apply(x, dim=dim, reverse=reverse)
    if x.dtype not in _KERNEL_DTYPES or x.ndim == 0:
        return flip(np.cumsum(flip(x, (dim,)), axis=dim), (dim,)) if reverse else np.cumsum(x, axis=dim)
    out = np.empty(x.shape, dtype=x.dtype)
    outer, inner = math.prod(x.shape[:dim]), math.prod(x.shape[dim + 1:])
    indexing_kernels.cumsum(x.reshape(outer, x.shape[dim], inner), out.reshape(outer, x.shape[dim], inner),
                 reverse=reverse, n_threads=get_num_threads())
    return out


def _sum(a, dims, keepdims, mean=False, dtype=None):
    """``np.sum`` (``np.mean`` when ``mean``) over ``dims`` (None = all).  A C-contiguous
    float32/float64 array reduced over one axis or all of them runs on the threaded kernel
    of ``_ext.reduce_kernels`` (the same result for any thread count; over an axis that is not the
    last, NumPy's bit for bit); NumPy's single-thread reduction otherwise
    (benchmarks/bench_autograd.py, "sum dim 0" and "mean")."""
    if (type(a) is np.ndarray and a.dtype in _KERNEL_DTYPES and (dtype is None or dtype == a.dtype)
            and a.size and a.flags.c_contiguous and (dims is None or (len(dims) == 1 and a.ndim))):
        out = reduce_kernels.sum_axis(a, None if dims is None else dims[0], mean, n_threads=get_num_threads())
        if keepdims:
            out = out.reshape(tuple(1 if dims is None or i in dims else s for i, s in enumerate(a.shape)))
        return out
    if mean:
        return np.asarray(np.mean(a, axis=dims, keepdims=keepdims))
    return np.asarray(np.sum(a, axis=dims, keepdims=keepdims, dtype=dtype))


# --------------------------------------------------------------------------- reductions


class Sum(Function):
    @staticmethod
    def forward(ctx, a, axis=None, keepdims=False, dtype=None):
        dims = norm_dims(axis, a.ndim)
        ctx.meta = (a.shape, dims, keepdims)
        return _sum(a, dims, keepdims, dtype=dtype)

    @staticmethod
    def backward(ctx, g):
        shape, dims, keepdims = ctx.meta
        return _expand_reduced(g, shape, dims, keepdims)     # a broadcast view: no copy

    backward_graph = backward


class Mean(Function):
    @staticmethod
    def forward(ctx, a, axis=None, keepdims=False):
        dims = norm_dims(axis, a.ndim)
        ctx.meta = (a.shape, dims, keepdims)
        out = _sum(a, dims, keepdims, mean=True)
        ctx.count = a.size // max(out.size, 1) if a.size else 1
        return out

    @staticmethod
    def backward(ctx, g):
        shape, dims, keepdims = ctx.meta
        return _expand_reduced(g / ctx.count, shape, dims, keepdims)

    backward_graph = backward


class Var(Function):
    @staticmethod
    def forward(ctx, a, axis=None, correction=1, keepdims=False):
        dims = norm_dims(axis, a.ndim)
        ctx.meta = (a.shape, dims, keepdims)
        n = a.size if dims is None else int(np.prod([a.shape[d] for d in dims]))
        ctx.denominator = max(n - correction, 0)
        ctx.save_for_backward(a)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.asarray(np.var(a, axis=dims, ddof=correction, keepdims=keepdims))

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        shape, dims, keepdims = ctx.meta
        centred = a - a.mean(axis=dims, keepdims=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            return _expand_reduced(g, shape, dims, keepdims) * centred * (2.0 / ctx.denominator
                                                                          if ctx.denominator else np.inf)

    backward_graph = backward


class Prod(Function):
    @staticmethod
    def forward(ctx, a, axis=None, keepdims=False):
        dims = norm_dims(axis, a.ndim)
        ctx.meta = (a.shape, dims, keepdims)
        out = np.asarray(np.prod(a, axis=dims, keepdims=keepdims))
        ctx.save_for_backward(a, out)
        return out

    @staticmethod
    def backward(ctx, g):
        a, out = ctx.saved_tensors
        shape, dims, keepdims = ctx.meta
        ge = _expand_reduced(g, shape, dims, keepdims)
        oe = _expand_reduced(out, shape, dims, keepdims)
        if not np.any(raw(a) == 0):
            return ge * oe / a
        if is_tensor(a):
            raise RuntimeError("prod: double backward through an input that contains zeros is not supported")
        # product of all the other elements, with zeros: exclusive products from both sides
        if dims is None:
            flat = a.reshape(-1)
            left = np.concatenate(([1], np.cumprod(flat[:-1]))).astype(a.dtype)
            right = np.concatenate((np.cumprod(flat[::-1][:-1])[::-1], [1])).astype(a.dtype)
            return ge * (left * right).reshape(shape)
        (d,) = dims if len(dims) == 1 else (None,)
        if d is None:
            raise NotImplementedError("prod backward with zeros over several dims")
        moved = np.moveaxis(a, d, -1)
        ones = np.ones(moved.shape[:-1] + (1,), dtype=a.dtype)
        left = np.concatenate((ones, np.cumprod(moved[..., :-1], axis=-1)), axis=-1)
        right = np.concatenate((np.cumprod(moved[..., ::-1][..., :-1], axis=-1)[..., ::-1], ones), axis=-1)
        return ge * np.moveaxis(left * right, -1, d)

    backward_graph = backward


class Norm(Function):
    @staticmethod
    def forward(ctx, a, p=2, axis=None, keepdims=False):
        dims = norm_dims(axis, a.ndim)
        ctx.meta = (a.shape, dims, keepdims)
        ctx.p = p
        absolute = np.abs(a)
        if p == np.inf:
            out = np.max(absolute, axis=dims, keepdims=keepdims)
        elif p == 1:
            out = np.sum(absolute, axis=dims, keepdims=keepdims)
        elif p == 2:
            out = np.sqrt(np.sum(a * a, axis=dims, keepdims=keepdims))
        else:
            out = np.sum(absolute ** p, axis=dims, keepdims=keepdims) ** (1.0 / p)
        out = np.asarray(out)
        ctx.save_for_backward(a, out)
        return out

    @staticmethod
    def backward(ctx, g):
        a, out = ctx.saved_tensors
        shape, dims, keepdims = ctx.meta
        p = ctx.p
        ge = _expand_reduced(g, shape, dims, keepdims)
        ra = raw(a)
        sign = np.sign(ra)
        if p == 1:
            return ge * sign
        oe = _expand_reduced(out, shape, dims, keepdims)
        ro = np.broadcast_to(raw(oe), shape)
        if p == np.inf:
            mask = (np.abs(ra) == ro)
            mask = mask / mask.sum(axis=dims, keepdims=True)
            return ge * (sign * mask)
        safe = where(ro == 0, 1, oe)           # the norm of zeros has gradient zero
        if p == 2:
            return ge * a / safe
        return ge * sign * absolute(a) ** (p - 1) / safe ** (p - 1)

    backward_graph = backward


class LogSumExp(Function):
    """``log(sum(exp(a)))`` over ``axis``. Over one axis of a float32/float64 array it runs
    the row kernel of ``_ext.softmax_kernels`` (the one log-softmax uses; prange over rows) and
    its backward ``g * exp(a - out)`` one fused pass of the same module from the saved
    output: NumPy's four passes over the data did not run in parallel
    (benchmarks/bench_autograd.py, "logsumexp dim 1")."""

    @staticmethod
    def forward(ctx, a, axis=None, keepdims=False):
        dims = norm_dims(axis, a.ndim)
        ctx.meta = (a.shape, dims, keepdims)
        if dims is not None and len(dims) == 1 and a.dtype in _KERNEL_DTYPES and a.size:
            d = dims[0]
            rows, moved_shape = rows_along(a, d)
            out = softmax_kernels.logsumexp_rows(rows, n_threads=get_num_threads())
            out = np.expand_dims(out.reshape(moved_shape[:-1]), d)
        else:
            m = np.max(a, axis=dims, keepdims=True)
            m = np.where(np.isfinite(m), m, 0)
            out = np.log(np.sum(np.exp(a - m), axis=dims, keepdims=True)) + m
        out = _drop_reduced(out, dims, keepdims)
        ctx.save_for_backward(a, out)
        return out

    @staticmethod
    def backward(ctx, g):
        a, out = ctx.saved_tensors
        shape, dims, keepdims = ctx.meta
        if (type(g) is np.ndarray and dims is not None and len(dims) == 1
                and a.dtype in _KERNEL_DTYPES and a.size and g.dtype == a.dtype):
            d = dims[0]
            rows, moved_shape = rows_along(a, d)
            # an array of the moved shape, returned itself when d is last (not a view: the
            # engine keeps it as .grad without a copy)
            dx = np.empty(moved_shape, dtype=a.dtype)
            softmax_kernels.logsumexp_backward(rows, out.reshape(-1), g.reshape(-1), out=dx.reshape(rows.shape),
                                        n_threads=get_num_threads())
            return dx if d == a.ndim - 1 else np.moveaxis(dx, -1, d)
        return LogSumExp.backward_graph(ctx, g)

    @staticmethod
    def backward_graph(ctx, g):
        a, out = ctx.saved_tensors
        shape, dims, keepdims = ctx.meta
        return _expand_reduced(g, shape, dims, keepdims) * exp(a - _expand_reduced(out, shape, dims, keepdims))


class CumSum(Function):
    """Running sums along ``dim``; ``reverse=True`` sums from the end (the backward of the
    forward sum, and the other way round)."""

    @staticmethod
    def forward(ctx, a, dim=0, reverse=False):
        ctx.dim, ctx.reverse = norm_dim(dim, a.ndim), reverse
        return _cumsum(a, ctx.dim, reverse)

    @staticmethod
    def backward(ctx, g):
        return _cumsum(g, ctx.dim, not ctx.reverse)

    backward_graph = backward


class Amax(Function):
    """max/min over dims (no indices): ties share the gradient evenly, as ``torch.amax``."""

    node_name = "MaxBackward"

    @staticmethod
    def forward(ctx, a, axis=None, keepdims=False, largest=True):
        dims = norm_dims(axis, a.ndim)
        empty = [d for d in (range(a.ndim) if dims is None else dims) if a.ndim and a.shape[d] == 0]
        if empty:   # an empty batch is fine where the reduced axes are not empty (torch.amax)
            raise RuntimeError(f"{'max' if largest else 'min'}(): expected reduction axis "
                               f"{empty[0]} to have non-zero size. Received: shape={a.shape}")
        out = (np.max if largest else np.min)(a, axis=dims, keepdims=True)
        mask = a == out
        ctx.weight = mask / mask.sum(axis=dims, keepdims=True)
        ctx.meta = (a.shape, dims, keepdims)
        return _drop_reduced(out, dims, keepdims)

    @staticmethod
    def backward(ctx, g):
        shape, dims, keepdims = ctx.meta
        return _expand_reduced(g, shape, dims, keepdims) * ctx.weight.astype(g.dtype)

    backward_graph = backward
