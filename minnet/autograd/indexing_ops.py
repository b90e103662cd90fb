"""Indexing operations as Functions: ``where``, ``masked_fill``, ``x[key]``, gather,
scatter_add and index_select, with the scatter-adds that are their backwards.

Each gathering op's backward adds the gradient back at the positions it read
(repeated positions accumulate); each scatter's backward gathers.  The math is in
``docs/math/autograd_ops.md``.
"""
import math

import numpy as np

from minnet._config import get_num_threads
from minnet._ext import indexing_kernels as _kernels
from minnet._ext import select_kernels

from .function import Function
from .op_helpers import is_tensor, norm_dim, raw, shape_of, unbroadcast, zeros_like

__all__ = ["Where", "MaskedFill", "Index", "IndexScatter", "Gather", "ScatterInto", "ScatterAdd",
           "IndexSelect", "IndexAddInto", "where", "gather"]


# NumPy's function on an ndarray, the recorded op on a Tensor (for the backwards of other ops).


def where(cond, a, b):
    """``a`` where ``cond`` else ``b`` (``cond`` an array or a Tensor's data)."""
    cond = raw(cond)
    if is_tensor(a) or is_tensor(b):
        return Where.apply(cond, a, b)
    return np.where(cond, a, b)


def gather(x, dim, index):
    return Gather.apply(x, dim, index) if is_tensor(x) else _gather_along(x, dim, index)


def _scatter_into(g, dim, index, shape):
    """zeros(shape) with ``g`` added at ``index`` along ``dim`` (the backward of gather)."""
    if is_tensor(g):
        return ScatterInto.apply(g, dim=dim, index=index, shape=shape)
    out = np.zeros(shape, dtype=g.dtype)
    _scatter_add_along(out, dim, index, g)
    return out


def _index_select(x, dim, index):
    return IndexSelect.apply(x, dim, index) if is_tensor(x) else _index_select_along(x, dim, index)


def _index_add_into(g, dim, index, shape):
    if is_tensor(g):
        return IndexAddInto.apply(g, dim=dim, index=index, shape=shape)
    out = np.zeros(shape, dtype=g.dtype)
    _index_add_along(out, dim, index, g)
    return out


def _index_into(g, key, shape):
    if is_tensor(g):
        return IndexScatter.apply(g, key=key, shape=shape)
    return _scatter_index(g, key, shape)


# --------------------------------------------------------------------------- the kernels
# float32/float64 go to minnet._ext.indexing_kernels (threaded, the same result for any thread
# count); other dtypes to NumPy.

_KERNEL_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _as_3d(a, dim):
    """``a`` as ``(outer, a.shape[dim], inner)`` (a view whenever the strides allow)."""
    return a.reshape(math.prod(a.shape[:dim]), a.shape[dim], math.prod(a.shape[dim + 1:]))


def _same_except(shape_a, shape_b, dim):
    return all(m == n for k, (m, n) in enumerate(zip(shape_a, shape_b)) if k != dim)


def _leading_block(a, shape, dim):
    """``a`` cut to ``shape`` in every dimension but ``dim`` (gather and scatter_add allow an
    index smaller than the input there)."""
    if _same_except(a.shape, shape, dim):
        return a
    return a[tuple(slice(0, n) if k != dim else slice(None) for k, n in enumerate(shape))]


def _wrap_index(index, size, dim, op):
    """``index`` with negative entries counted from the end of a dimension of ``size``
    (IndexError, as PyTorch's, for any entry outside ``[-size, size)``)."""
    if index.size == 0:
        return index
    low, high = index.min(), index.max()
    if low < -size or high >= size:
        raise IndexError(f"{op}(): index out of range for dimension {dim} with size {size}")
    return np.where(index < 0, index + size, index) if low < 0 else index


def _out_of_range(op, dim, size):
    return IndexError(f"{op}(): index out of range for dimension {dim} with size {size}")


def _gather_along(a, dim, index, op="gather"):
    """``out[..., i, ...] = a[..., index[..., i, ...], ...]`` along ``dim``, shaped like ``index``."""
    src = _leading_block(a, index.shape, dim)
    index = index.astype(np.int64, copy=False)
    if a.dtype not in _KERNEL_DTYPES:
        return np.take_along_axis(src, _wrap_index(index, a.shape[dim], dim, op), axis=dim)
    out = np.empty(index.shape, dtype=a.dtype)
    if out.size and _kernels.gather(_as_3d(src, dim), _as_3d(index, dim), _as_3d(out, dim),
                                    n_threads=get_num_threads()):
        raise _out_of_range(op, dim, a.shape[dim])
    return out


def _scatter_add_along(out, dim, index, src, op="scatter_add"):
    """``out[..., index[..., i, ...], ...] += src[..., i, ...]`` along ``dim``, in place
    (repeated indices accumulate)."""
    src = src[tuple(slice(0, n) for n in index.shape)] if src.shape != index.shape else src
    index = index.astype(np.int64, copy=False)
    if out.dtype in _KERNEL_DTYPES and out.flags.c_contiguous and _same_except(out.shape, index.shape, dim):
        if index.size and _kernels.scatter_add(_as_3d(src.astype(out.dtype, copy=False), dim),
                                               _as_3d(index, dim), _as_3d(out, dim),
                                               n_threads=get_num_threads()):
            raise _out_of_range(op, dim, out.shape[dim])
        return
    index = _wrap_index(index, out.shape[dim], dim, op)
    grids = list(np.ix_(*[np.arange(n) for n in index.shape]))
    grids[dim] = index
    linear = np.ravel_multi_index(tuple(np.broadcast_arrays(*grids)), out.shape)
    _bincount_add(out, linear, np.asarray(src))


def _bincount_add(out, linear_index, src):
    """``out.flat[linear_index] += src`` with repeated indices accumulated, in one
    ``np.bincount`` pass (a fixed order; sums in float64)."""
    if src.dtype.kind not in "fiub" or out.dtype.kind not in "fiub":
        np.add.at(out.reshape(-1), linear_index.reshape(-1), src.reshape(-1))
        return
    sums = np.bincount(linear_index.reshape(-1), weights=src.reshape(-1), minlength=out.size)
    out += sums.reshape(out.shape).astype(out.dtype, copy=False)


def _index_select_along(a, dim, index):
    """``np.take(a, index, axis=dim)`` for a 1-D ``index`` already in ``[0, a.shape[dim])``."""
    if a.dtype not in _KERNEL_DTYPES:
        return np.take(a, index, axis=dim)
    out = np.empty(a.shape[:dim] + (index.size,) + a.shape[dim + 1:], dtype=a.dtype)
    if out.size:
        _kernels.index_select(_as_3d(a, dim), index, _as_3d(out, dim), n_threads=get_num_threads())
    return out


def _index_add_along(out, dim, index, src):
    """``out[..., index[i], ...] += src[..., i, ...]`` along ``dim``, in place, for a 1-D
    ``index`` already in ``[0, out.shape[dim])`` (repeated indices accumulate)."""
    if index.size == 0:
        return
    if out.dtype in _KERNEL_DTYPES and out.flags.c_contiguous:
        _kernels.index_add(_as_3d(src.astype(out.dtype, copy=False), dim), index, _as_3d(out, dim),
                           n_threads=get_num_threads())
        return
    # a stable sort of the indices and one np.add.reduceat over the sorted slices
    moved_out = np.moveaxis(out, dim, 0)
    rows = np.moveaxis(src, dim, 0)
    order = np.argsort(index, kind="stable")
    sorted_index = index[order]
    starts = np.flatnonzero(np.concatenate(([True], sorted_index[1:] != sorted_index[:-1])))
    moved_out[sorted_index[starts]] += np.add.reduceat(rows[order], starts, axis=0)


def _row_index(key, n_rows):
    """A key that is one integer array (``x[rows]``), as a 1-D int64 array in ``[0, n_rows)``;
    None for any other key."""
    if not (isinstance(key, np.ndarray) and key.dtype.kind in "iu"):
        return None
    return _wrap_index(key.reshape(-1).astype(np.int64, copy=False), n_rows, 0, "index")


def _is_basic_index(key):
    keys = key if isinstance(key, tuple) else (key,)
    return all(k is None or k is Ellipsis or isinstance(k, (int, np.integer, slice)) for k in keys)


def _is_mask_index(key):
    keys = key if isinstance(key, tuple) else (key,)
    return all(k is None or k is Ellipsis or isinstance(k, slice) or
               (isinstance(k, np.ndarray) and k.dtype == np.bool_) for k in keys)


def _scatter_index(g, key, shape):
    grad = np.zeros(shape, dtype=g.dtype)
    if _is_basic_index(key) or _is_mask_index(key):
        grad[key] = g            # each element of the input appears at most once
    elif isinstance(key, (np.ndarray, list)) and np.asarray(key).dtype.kind in "iu":
        # rows picked by one integer array: repeated rows accumulate
        rows = _row_index(np.asarray(key), shape[0])
        _index_add_along(grad, 0, rows, np.asarray(g).reshape((rows.size,) + tuple(shape[1:])))
    else:                        # general advanced key: linear positions, then one bincount
        linear = np.arange(grad.size).reshape(shape)[key]
        _bincount_add(grad, linear, np.broadcast_to(g, linear.shape))
    return grad


def _select_ready(condition, *arrays):
    """True when ``select_kernels``'s kernels take these: a C-contiguous bool condition and
    C-contiguous float32/float64 ndarrays of its shape and one dtype (broadcasting, other
    dtypes and strided arrays take NumPy's path)."""
    if type(condition) is not np.ndarray or not condition.flags.c_contiguous:
        return False
    dtype = arrays[0].dtype if type(arrays[0]) is np.ndarray else None
    if dtype not in _SELECT_DTYPES:
        return False
    for x in arrays:
        if type(x) is not np.ndarray or x.dtype != dtype or x.shape != condition.shape \
                or not x.flags.c_contiguous:
            return False
    return True


def _grad_ready(condition, g):
    """True when ``select_kernels.where_backward`` takes ``g``: C-contiguous, or one value broadcast
    to the condition's shape (what ``.sum().backward()`` sends)."""
    return type(condition) is np.ndarray and condition.flags.c_contiguous \
        and type(g) is np.ndarray and g.dtype in _SELECT_DTYPES and g.shape == condition.shape \
        and (g.flags.c_contiguous or not any(g.strides))


_SELECT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


class Where(Function):
    """``a`` where ``condition`` else ``b``; backward ``ga = where(c, g, 0)``,
    ``gb = where(c, 0, g)`` (one pass of ``select_kernels.where_backward``), each summed over the
    axes its operand was broadcast along."""

    @staticmethod
    def forward(ctx, condition, a, b):
        condition = np.asarray(condition)
        if condition.dtype != np.bool_:
            raise TypeError(f"where expected condition to be a boolean tensor. Received: dtype={condition.dtype}")
        ctx.condition = condition
        ctx.shapes = (shape_of(a), shape_of(b))
        if _select_ready(condition, a, b):
            return select_kernels.where(condition, a, b, n_threads=get_num_threads())
        return np.asarray(np.where(condition, a, b))

    @staticmethod
    def backward(ctx, g):
        sa, sb = ctx.shapes
        _, na, nb = ctx.needs_input_grad
        if _grad_ready(ctx.condition, g):
            ga, gb = select_kernels.where_backward(ctx.condition, g, need_a=na, need_b=nb,
                                            n_threads=get_num_threads())
        else:
            ga = np.where(ctx.condition, g, 0) if na else None
            gb = np.where(ctx.condition, 0, g) if nb else None
        return (None, unbroadcast(ga, sa) if na else None,
                unbroadcast(gb, sb) if nb else None)

    @staticmethod
    def backward_graph(ctx, g):
        # double backward: the same selects, recorded (g is a Tensor)
        sa, sb = ctx.shapes
        _, na, nb = ctx.needs_input_grad
        zero = zeros_like(g)
        ga = unbroadcast(where(ctx.condition, g, zero), sa) if na else None
        gb = unbroadcast(where(ctx.condition, zero, g), sb) if nb else None
        return None, ga, gb


class MaskedFill(Function):
    """``value`` where ``mask`` else ``a``; backward ``where(mask, 0, g)``."""

    @staticmethod
    def forward(ctx, a, mask, value=0.0):
        mask = np.asarray(mask)
        if mask.dtype != np.bool_:
            raise TypeError(f"masked_fill expected `mask` to be a boolean tensor. Received: dtype={mask.dtype}")
        ctx.mask = mask
        if np.ndim(value) == 0 and _select_ready(mask, a):
            return select_kernels.masked_fill(a, mask, value, n_threads=get_num_threads())
        out = np.where(mask, np.asarray(value, dtype=a.dtype), a)
        if out.shape != a.shape:
            raise RuntimeError(f"masked_fill: the mask of shape {mask.shape} must broadcast to the "
                               f"tensor's shape {a.shape}")
        return out

    @staticmethod
    def backward(ctx, g):
        if _grad_ready(ctx.mask, g):
            return select_kernels.where_backward(ctx.mask, g, need_a=False,
                                          n_threads=get_num_threads())[1], None
        return np.where(ctx.mask, 0, g), None

    @staticmethod
    def backward_graph(ctx, g):
        return where(ctx.mask, zeros_like(g), g), None

# --------------------------------------------------------------------------- indexing


class Index(Function):
    is_view = True

    @staticmethod
    def forward(ctx, a, key):
        ctx.meta = (a.shape, key)
        rows = _row_index(key, a.shape[0]) if a.ndim else None
        if rows is None:
            return np.asarray(a[key])
        return _index_select_along(a, 0, rows).reshape(key.shape + a.shape[1:])

    @staticmethod
    def backward(ctx, g):
        shape, key = ctx.meta
        return _index_into(g, key, shape), None

    backward_graph = backward


class IndexScatter(Function):
    """zeros(shape) with ``g`` put at ``key`` (the backward of indexing; its own backward indexes)."""

    node_name = "IndexPutBackward"

    @staticmethod
    def forward(ctx, g, key=None, shape=()):
        ctx.key = key
        return _scatter_index(g, key, shape)

    @staticmethod
    def backward(ctx, gg):
        return gg[ctx.key]

    backward_graph = backward


class Gather(Function):
    @staticmethod
    def forward(ctx, a, dim, index):
        index = np.asarray(index)
        if index.dtype.kind not in "iu":
            raise TypeError(f"gather(): Expected dtype int64 for index. Received: dtype={index.dtype}")
        d = norm_dim(dim, a.ndim)
        if index.ndim != a.ndim:
            raise RuntimeError("gather(): Index tensor must have the same number of dimensions as input tensor")
        if any(index.shape[k] > a.shape[k] for k in range(a.ndim) if k != d):
            raise RuntimeError(f"gather(): Size does not match: index {index.shape} vs input {a.shape}")
        index = index.astype(np.int64, copy=False)
        ctx.meta = (a.shape, d, index)
        return _gather_along(a, d, index)

    @staticmethod
    def backward(ctx, g):
        shape, d, index = ctx.meta
        return _scatter_into(g, d, index, shape), None, None

    backward_graph = backward


class ScatterInto(Function):
    """zeros(shape) with ``g`` added at ``index`` along ``dim``; its backward is gather."""

    node_name = "ScatterAddBackward"

    @staticmethod
    def forward(ctx, g, dim=0, index=None, shape=()):
        ctx.dim, ctx.index = dim, index
        out = np.zeros(shape, dtype=g.dtype)
        _scatter_add_along(out, dim, index, g)
        return out

    @staticmethod
    def backward(ctx, gg):
        return gather(gg, ctx.dim, ctx.index)

    backward_graph = backward


class ScatterAdd(Function):
    @staticmethod
    def forward(ctx, a, dim, index, src):
        index = np.asarray(index)
        if index.dtype.kind not in "iu":
            raise TypeError(f"scatter_add(): Expected dtype int64 for index. Received: dtype={index.dtype}")
        d = norm_dim(dim, a.ndim)
        if index.ndim != a.ndim or np.ndim(src) != a.ndim:
            raise RuntimeError("scatter_add(): index, src and self must have the same number of dimensions")
        if any(index.shape[k] > a.shape[k] for k in range(a.ndim) if k != d) or \
                any(index.shape[k] > np.shape(src)[k] for k in range(a.ndim)):
            raise RuntimeError(f"scatter_add(): index {index.shape} must be no larger than self "
                               f"{a.shape} (except in dimension {d}) and src {np.shape(src)}")
        index = index.astype(np.int64, copy=False)
        ctx.dim, ctx.index, ctx.src_shape = d, index, np.shape(src)
        out = np.array(a, copy=True)
        _scatter_add_along(out, d, index, np.asarray(src, dtype=a.dtype))
        return out

    @staticmethod
    def backward(ctx, g):
        na, _, _, ns = ctx.needs_input_grad
        gs = None
        if ns:
            gs = gather(g, ctx.dim, ctx.index)
            if tuple(gs.shape) != tuple(ctx.src_shape):    # src larger than index: the rest gets zero
                pad = [(0, s - n) for s, n in zip(ctx.src_shape, gs.shape)]
                gs = _pad(gs, pad)
        return (g if na else None), None, None, gs

    backward_graph = backward


def _pad(g, pad):
    if is_tensor(g):
        shape = tuple(n + hi for n, (_, hi) in zip(g.shape, pad))
        return IndexScatter.apply(g, key=tuple(slice(0, n) for n in g.shape), shape=shape)
    return np.pad(g, pad)


class IndexSelect(Function):
    @staticmethod
    def forward(ctx, a, dim, index):
        index = np.asarray(index)
        if index.ndim > 1 or index.dtype.kind not in "iu":
            raise TypeError(f"index_select(): `index` must be a 1-D integer tensor. Received: "
                            f"shape={index.shape}, dtype={index.dtype}")
        d = norm_dim(dim, a.ndim)
        index = _wrap_index(index.reshape(-1).astype(np.int64, copy=False), a.shape[d], d, "index_select")
        ctx.meta = (a.shape, d, index)
        return _index_select_along(a, d, index)

    @staticmethod
    def backward(ctx, g):
        shape, d, index = ctx.meta
        return _index_add_into(g, d, index, shape), None, None

    backward_graph = backward


class IndexAddInto(Function):
    node_name = "IndexAddBackward"

    @staticmethod
    def forward(ctx, g, dim=0, index=None, shape=()):
        ctx.dim, ctx.index = dim, index
        out = np.zeros(shape, dtype=g.dtype)
        _index_add_along(out, dim, index, g)
        return out

    @staticmethod
    def backward(ctx, gg):
        return _index_select(gg, ctx.dim, ctx.index)

    backward_graph = backward
