"""``Tensor``'s reductions, sorting, shape changes and indexing (``sum``, ``max``, ``sort``,
``reshape``, ``transpose``, ``split``, ``gather``, ``t[i]``...).

A mixin of ``Tensor`` (tensor.py), holding no state.  PyTorch's argument names (``dim``,
``keepdim``) and NumPy's (``axis``, ``keepdims``) are both accepted, so one backward
formula serves ndarrays and Tensors.
"""
import collections

import numpy as np

from minnet._config import get_num_threads
from minnet._ext import sort_kernels

from . import elementwise_ops, indexing_ops, op_helpers, reduction_ops, shape_ops
from .op_helpers import is_tensor, raw

__all__ = ["TensorShape", "index_key"]


class TensorShape:
    """Reductions, sorting, shape and indexing methods of ``Tensor`` (no state of its own)."""

    __slots__ = ()

    # ------------------------------------------------------------------ reductions
    # PyTorch's names (dim, keepdim) and NumPy's (axis, keepdims) are both accepted, so
    # one backward formula serves ndarrays and Tensors.
    def sum(self, dim=None, keepdim=False, dtype=None, *, axis=None, keepdims=None):
        dim, keepdim = _dims_args(dim, keepdim, axis, keepdims)
        return reduction_ops.Sum.apply(self, axis=dim, keepdims=keepdim, dtype=dtype)

    def mean(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        dim, keepdim = _dims_args(dim, keepdim, axis, keepdims)
        if self.data.dtype.kind not in "fc":
            raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be either a "
                               f"floating point or complex dtype. Got: {self.dtype}")
        return reduction_ops.Mean.apply(self, axis=dim, keepdims=keepdim)

    def var(self, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=None, keepdims=None):
        dim, keepdim = _dims_args(dim, keepdim, axis, keepdims)
        return reduction_ops.Var.apply(self, axis=dim, correction=_correction(unbiased, correction), keepdims=keepdim)

    def std(self, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=None, keepdims=None):
        return self.var(dim, unbiased, keepdim, correction=correction, axis=axis, keepdims=keepdims).sqrt()

    def prod(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        dim, keepdim = _dims_args(dim, keepdim, axis, keepdims)
        return reduction_ops.Prod.apply(self, axis=dim, keepdims=keepdim)

    def norm(self, p="fro", dim=None, keepdim=False):
        if p in ("fro", None):
            p = 2
        if not isinstance(p, (int, float)) or isinstance(p, bool) or p <= 0:
            raise ValueError(f"Invalid argument `p`: expected 'fro', inf or a positive number. Received: p={p!r}")
        return reduction_ops.Norm.apply(self, p=p, axis=dim, keepdims=keepdim)

    def logsumexp(self, dim, keepdim=False):
        return reduction_ops.LogSumExp.apply(self, axis=dim, keepdims=keepdim)

    def cumsum(self, dim):
        return reduction_ops.CumSum.apply(self, dim=dim)

    def amax(self, dim=(), keepdim=False):
        return reduction_ops.Amax.apply(self, axis=None if dim == () else dim, keepdims=keepdim)

    def amin(self, dim=(), keepdim=False):
        return reduction_ops.Amax.apply(self, axis=None if dim == () else dim, keepdims=keepdim, largest=False)

    def max(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        """``max()`` (all elements), ``max(dim)`` -> (values, indices), ``max(other)``."""
        return self._extreme(dim, keepdim, axis, keepdims, True)

    def min(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        """``min()`` (all elements), ``min(dim)`` -> (values, indices), ``min(other)``."""
        return self._extreme(dim, keepdim, axis, keepdims, False)

    def _extreme(self, dim, keepdim, axis, keepdims, largest):
        if is_tensor(dim):
            return elementwise_ops.Maximum.apply(self, dim) if largest else elementwise_ops.Minimum.apply(self, dim)
        if axis is not None or keepdims is not None:      # NumPy spelling: reduced values only
            return reduction_ops.Amax.apply(self, axis=axis, keepdims=bool(keepdims), largest=largest)
        if dim is None:
            return reduction_ops.Amax.apply(self, axis=None, keepdims=False, largest=largest)
        d = op_helpers.norm_dim(dim, self.ndim)
        index = (np.argmax if largest else np.argmin)(self.data, axis=d, keepdims=True)
        values = indexing_ops.Gather.apply(self, d, index)
        if not keepdim:
            values = values.squeeze(d)
            index = np.squeeze(index, axis=d)
        cls = _MaxResult if largest else _MinResult
        return cls(values, self._make(index.astype(np.int64)))

    def argmax(self, dim=None, keepdim=False):
        return _arg_extreme(self, dim, keepdim, np.argmax)

    def argmin(self, dim=None, keepdim=False):
        return _arg_extreme(self, dim, keepdim, np.argmin)

    def sort(self, dim=-1, descending=False, stable=False):
        d = op_helpers.norm_dim(dim, self.ndim)
        index = _argsort(self.data, d, descending)
        return _SortResult(indexing_ops.Gather.apply(self, d, index), self._make(index))

    def argsort(self, dim=-1, descending=False, stable=False):
        return self._make(_argsort(self.data, op_helpers.norm_dim(dim, self.ndim), descending))

    def topk(self, k, dim=-1, largest=True, sorted=True):
        d = op_helpers.norm_dim(dim, self.ndim)
        size = self.shape[d] if self.ndim else 1
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 0 <= k <= size:
            raise RuntimeError(f"topk(): selected index k out of range: k={k!r} for a dimension of size {size}")
        index = np.take(_argsort(self.data, d, largest), np.arange(int(k)), axis=d)
        return _TopkResult(indexing_ops.Gather.apply(self, d, index), self._make(index))

    # ------------------------------------------------------------------ shape
    def reshape(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return shape_ops.Reshape.apply(self, shape=tuple(int(s) for s in shape))

    def view(self, *shape):
        return self.reshape(*shape)

    def view_as(self, other):
        return self.reshape(other.shape)

    def reshape_as(self, other):
        return self.reshape(other.shape)

    def flatten(self, start_dim=0, end_dim=-1, *, start_axis=None):
        if start_axis is not None:
            start_dim = start_axis
        if self.ndim == 0:
            return self.reshape(1)
        s = start_dim % self.ndim
        e = end_dim % self.ndim
        if s > e:
            raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
        return self.reshape(self.shape[:s] + (-1,) + self.shape[e + 1:])

    def squeeze(self, dim=None):
        if dim is None:
            return self.reshape(tuple(n for n in self.shape if n != 1))
        dims = op_helpers.norm_dims(dim, self.ndim) if self.ndim else ()
        return self.reshape(tuple(n for i, n in enumerate(self.shape) if not (i in dims and n == 1)))

    def unsqueeze(self, dim):
        d = op_helpers.norm_dim(dim, self.ndim + 1)
        return self.reshape(self.shape[:d] + (1,) + self.shape[d:])

    def permute(self, *dims):
        if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
            dims = tuple(dims[0])
        return shape_ops.Permute.apply(self, dims=dims)

    def transpose(self, *dims):
        """``transpose(dim0, dim1)`` swaps two dims (PyTorch). ``transpose()`` reverses
        them all and ``transpose((1, 0, 2))`` permutes (NumPy), as before."""
        if len(dims) == 2 and all(isinstance(d, (int, np.integer)) for d in dims):
            perm = list(range(self.ndim))
            d0, d1 = op_helpers.norm_dim(dims[0], self.ndim), op_helpers.norm_dim(dims[1], self.ndim)
            perm[d0], perm[d1] = perm[d1], perm[d0]
            return shape_ops.Permute.apply(self, dims=tuple(perm))
        if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
            dims = tuple(dims[0])
        return shape_ops.Permute.apply(self, dims=dims or None)

    def t(self):
        if self.ndim > 2:
            raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {self.ndim}D")
        return self.transpose()

    @property
    def mT(self):
        return self.transpose(-2, -1)

    def expand(self, *sizes):
        if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
            sizes = tuple(sizes[0])
        return shape_ops.Expand.apply(self, shape=tuple(int(s) for s in sizes))

    def expand_as(self, other):
        return self.expand(other.shape)

    def repeat(self, *repeats):
        if len(repeats) == 1 and isinstance(repeats[0], (tuple, list)):
            repeats = tuple(repeats[0])
        return shape_ops.Repeat.apply(self, repeats=repeats)

    def flip(self, *dims):
        if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
            dims = tuple(dims[0])
        return shape_ops.Flip.apply(self, dims=dims)

    def split(self, split_size_or_sections, dim=0):
        d = op_helpers.norm_dim(dim, self.ndim)
        n = self.shape[d]
        if isinstance(split_size_or_sections, (int, np.integer)):
            step = int(split_size_or_sections)
            if step <= 0 and n:
                raise RuntimeError(f"split(): split_size must be positive. Received: {step}")
            sizes = [min(step, n - i) for i in range(0, n, step)] if n else [0]
        else:
            sizes = [int(s) for s in split_size_or_sections]
            if sum(sizes) != n:
                raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} "
                                   f"(input tensor's size at dimension {d}), but got split_sizes={sizes}")
        out = []
        start = 0
        for size in sizes:
            out.append(self[(slice(None),) * d + (slice(start, start + size),)])
            start += size
        return tuple(out)

    def chunk(self, chunks, dim=0):
        if isinstance(chunks, bool) or not isinstance(chunks, (int, np.integer)) or chunks < 1:
            raise RuntimeError(f"chunk(): chunks must be a positive int. Received: chunks={chunks!r}")
        n = self.shape[op_helpers.norm_dim(dim, self.ndim)]
        return self.split(max(-(-n // int(chunks)), 1), dim)

    def unbind(self, dim=0):
        d = op_helpers.norm_dim(dim, self.ndim)
        return tuple(self[(slice(None),) * d + (i,)] for i in range(self.shape[d]))

    # ------------------------------------------------------------------ indexing
    def gather(self, dim, index):
        return indexing_ops.Gather.apply(self, dim, raw(index))

    def scatter_add(self, dim, index, src):
        return indexing_ops.ScatterAdd.apply(self, dim, raw(index), src)

    def index_select(self, dim, index):
        return indexing_ops.IndexSelect.apply(self, dim, raw(index))

    def masked_fill(self, mask, value):
        return indexing_ops.MaskedFill.apply(self, raw(mask), value=raw(value))

    def where(self, condition, other):
        return indexing_ops.Where.apply(raw(condition), self, other)

    # ------------------------------------------------------------------ [ ]
    def __getitem__(self, key):
        return indexing_ops.Index.apply(self, index_key(key))

    # comparisons give boolean tensors without gradient (== / != stay identity, so


_MaxResult = collections.namedtuple("max", ["values", "indices"])
_MinResult = collections.namedtuple("min", ["values", "indices"])
_SortResult = collections.namedtuple("sort", ["values", "indices"])
_TopkResult = collections.namedtuple("topk", ["values", "indices"])


def _dims_args(dim, keepdim, axis, keepdims):
    if axis is not None:
        dim = axis
    if keepdims is not None:
        keepdim = keepdims
    return dim, bool(keepdim)


def _correction(unbiased, correction):
    if correction is not None and unbiased is not None:
        raise ValueError("var/std: pass either `unbiased` or `correction`, not both")
    if correction is not None:
        return correction
    return 1 if unbiased is None or unbiased else 0


def _arg_extreme(t, dim, keepdim, fn):
    if dim is None:
        out = np.asarray(fn(t.data))
        if keepdim:
            out = out.reshape((1,) * t.ndim)
    else:
        out = fn(t.data, axis=op_helpers.norm_dim(dim, t.ndim), keepdims=keepdim)
    return t._make(np.asarray(out, dtype=np.int64))


def _argsort(a, d, descending):
    """Stable argsort along ``d`` (equal elements keep their order, also when descending),
    int64.  float32/float64 run on the threaded radix sort of ``_ext.sort_kernels``; NumPy's stable
    sort (one thread) otherwise (benchmarks/bench_autograd.py, "sort dim 1")."""
    if a.ndim and (a.dtype == np.float32 or a.dtype == np.float64):
        return sort_kernels.argsort_along(a, d, descending, n_threads=get_num_threads())
    if not descending:
        return np.argsort(a, axis=d, kind="stable").astype(np.int64)
    n = a.shape[d] if a.ndim else 1
    flipped = np.flip(a, d) if a.ndim else a
    order = np.argsort(flipped, axis=d, kind="stable")
    return (n - 1 - np.flip(order, d)).astype(np.int64) if a.ndim else order.astype(np.int64)


def index_key(key):
    """An index with Tensors in it (``t[mask]``, ``t[idx, 0]``) as the arrays they hold."""
    if isinstance(key, tuple):
        return tuple(raw(k) for k in key)
    return raw(key)
