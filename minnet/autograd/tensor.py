"""``mn.Tensor``: an ndarray plus what autograd needs (requires_grad, grad, grad_fn)."""
import collections
import weakref

import numpy as np

from minnet._config import get_num_threads
from minnet._ext import _sort

from . import (activation_ops, elementwise_ops, indexing_ops, linalg_ops, op_helpers, reduction_ops,
               shape_ops)
from .function import AccumulateGrad, HookDict, register_tensor_class, run_backward
from .grad_mode import grad_state
from .keras_variable import KerasVariable

__all__ = ["Tensor", "Parameter", "tensor"]


class _Version:
    """In-place modification counter, shared between a tensor and its ``detach()`` views."""

    # A class-level 0 instead of an __init__: every tensor gets a counter and few are ever
    # bumped, so creating one is a bare object (benchmarks/bench_autograd.py, chain1000).
    value = 0


def _to_array(data, dtype=None):
    if isinstance(data, Tensor):
        data = data.data
    if dtype is not None:
        try:
            return np.asarray(data, dtype=np.dtype(dtype))
        except (TypeError, ValueError) as err:
            raise TypeError(f"Invalid argument `data`: cannot convert to dtype {dtype}: {err}") from None
    if isinstance(data, np.ndarray):
        if data.dtype.kind not in "biufc":
            raise TypeError(f"Invalid argument `data`: expected numbers (bool, int or float). "
                            f"Received: an array of dtype {data.dtype}")
        return data
    arr = np.asarray(data)
    if arr.dtype.kind not in "biufc":
        raise TypeError(f"Invalid argument `data`: expected numbers (bool, int or float). "
                        f"Received: an array of dtype {arr.dtype}")
    if arr.dtype == np.float64 and not isinstance(data, np.generic):
        # Python floats and lists of them become float32, minnet's default (as torch.tensor).
        arr = arr.astype(np.float32)
    return arr


class Tensor(KerasVariable):
    """An n-dimensional array that can record the operations applied to it.

    Args:
        data: array-like. ndarrays keep their dtype; Python floats/lists become float32.
        requires_grad: record operations on this tensor so ``backward`` can reach it.
        dtype: optional dtype to convert ``data`` to.

    Attributes:
        data: the ndarray (shared, not copied, when ``data`` was an ndarray).
        grad: ndarray of ``data``'s shape holding d(loss)/d(this), or None. Accumulates.
        grad_fn: the backward node that produced this tensor (None for leaves).

    Example:
        >>> x = mn.tensor(np.random.randn(4, 3), requires_grad=True)
        >>> y = (x * 2).sigmoid().sum()
        >>> y.backward()
        >>> x.grad.shape
        (4, 3)
    """

    # `_hooks`: leaf tensor hooks (a HookDict) once one is registered, else None
    __slots__ = ("data", "grad", "requires_grad", "grad_fn", "_output_nr", "_version_counter",
                 "_accumulator", "name", "_hooks", "__weakref__")
    # Make ndarray (op) Tensor defer to Tensor's reflected operators.
    __array_ufunc__ = None

    def __init__(self, data, requires_grad=False, dtype=None, name=None):
        arr = _to_array(data, dtype)
        if requires_grad and arr.dtype.kind not in "fc":
            raise TypeError(f"Only floating point tensors can require gradients. Received: dtype={arr.dtype}")
        self.data = arr
        self.grad = None
        self.requires_grad = bool(requires_grad)
        self.grad_fn = None
        self._output_nr = 0
        self._version_counter = None
        self._accumulator = None
        self.name = name
        self._hooks = None

    @classmethod
    def _make(cls, arr):
        t = Tensor.__new__(Tensor)
        t.data = arr
        t.grad = None
        t.requires_grad = False
        t.grad_fn = None
        t._output_nr = 0
        t._version_counter = None
        t._accumulator = None
        t.name = None
        t._hooks = None
        return t

    # ------------------------------------------------------------------ properties
    @property
    def shape(self):
        return self.data.shape

    @property
    def dtype(self):
        return self.data.dtype

    @property
    def ndim(self):
        return self.data.ndim

    @property
    def size(self):
        return self.data.size

    @property
    def is_leaf(self):
        """True for tensors not produced by a recorded op (they accumulate ``.grad``)."""
        return self.grad_fn is None

    @property
    def T(self):
        return self.transpose()

    def __len__(self):
        return len(self.data)

    def numpy(self):
        """The underlying ndarray (shared memory, as ``torch.Tensor.numpy``)."""
        return self.data

    def item(self):
        """The value of a one-element tensor as a Python number."""
        if self.data.size != 1:
            raise ValueError(f"item() needs a tensor with one element. Received: shape={self.shape}")
        return self.data.item()

    def tolist(self):
        return self.data.tolist()

    def __array__(self, dtype=None, copy=None):
        if dtype is not None:
            return self.data.astype(dtype, copy=False)
        return self.data

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __bool__(self):
        if self.data.size != 1:
            raise ValueError(f"The truth value of a tensor with more than one element is ambiguous. "
                             f"Received: shape={self.shape}")
        return bool(self.data.item())

    def __repr__(self):
        body = np.array2string(self.data, prefix="tensor(", separator=", ", precision=4)
        extra = ""
        if self.data.dtype not in (np.float32, np.int64, np.bool_):
            extra += f", dtype={self.data.dtype}"
        if self.grad_fn is not None:
            extra += f", grad_fn=<{self.grad_fn.name()}>"
        elif self.requires_grad:
            extra += ", requires_grad=True"
        return f"tensor({body}{extra})"

    # ------------------------------------------------------------------ autograd
    @property
    def _version(self):
        """The in-place modification counter (shared with views and ``detach()``).

        Made on first use: most tensors are never saved for backward nor modified in
        place, and one object fewer per op is less for the garbage collector to walk
        (benchmarks/bench_autograd.py, chain1000)."""
        counter = self._version_counter
        if counter is None:
            counter = self._version_counter = _Version()
        return counter

    @_version.setter
    def _version(self, counter):
        self._version_counter = counter

    def _gradient_edge(self):
        if self.grad_fn is not None:
            return (self.grad_fn, self._output_nr)
        acc = self._accumulator() if self._accumulator is not None else None
        if acc is None:
            acc = AccumulateGrad(self)
            self._accumulator = weakref.ref(acc)
        return (acc, 0)

    def backward(self, gradient=None, retain_graph=None, create_graph=False):
        """Compute d(self)/d(leaf) for every leaf that requires grad, into ``leaf.grad``.

        Args:
            gradient: d(loss)/d(self), same shape as self; may be omitted for a scalar.
            retain_graph: keep the saved arrays so backward can run through the graph again
                (default: ``create_graph``).
            create_graph: record the backward pass itself, so the gradients can be
                differentiated again. ``leaf.grad`` stays an ndarray; use
                ``mn.autograd.grad(..., create_graph=True)`` to get gradients as Tensors
                that carry a graph.
        """
        if retain_graph is None:
            retain_graph = create_graph
        root = root_gradient(self, gradient, create_graph, "gradient")
        run_backward([self], [root], retain_graph=retain_graph, create_graph=create_graph)

    def register_hook(self, hook):
        """Call ``hook(grad)`` whenever the gradient of this tensor is computed.

        The hook receives the gradient as a Tensor and may return a replacement (a Tensor
        or array of the same shape) or None. Returns a handle: ``handle.remove()``.

        Example:
            >>> h = x.register_hook(lambda g: g.clamp(-1, 1))   # clip this tensor's gradient
            >>> h.remove()
        """
        if not callable(hook):
            raise TypeError(f"Invalid argument `hook`: expected a callable. Received: {type(hook).__name__}")
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is not None:
            return self.grad_fn._add_tensor_hook(self._output_nr, hook)
        hooks = getattr(self, "_hooks", None)
        if hooks is None:
            hooks = self._hooks = HookDict()
        return hooks.add(hook)

    def retain_grad(self):
        """Keep ``.grad`` for this non-leaf tensor after backward (leaves always keep it)."""
        if not self.requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self.grad_fn is None:
            return
        node = self.grad_fn
        if node._retained is None:
            node._retained = {}
        node._retained[self._output_nr] = weakref.ref(self)

    @property
    def retains_grad(self):
        node = self.grad_fn
        if node is None or not node._retained or self._output_nr not in node._retained:
            return False
        return node._retained[self._output_nr]() is self

    def detach(self):
        """A tensor sharing this one's memory, cut from the graph (no grad)."""
        t = Tensor._make(self.data)
        t._version = self._version
        return t

    def detach_(self):
        self.grad_fn = None
        self.requires_grad = False
        return self

    def requires_grad_(self, requires_grad=True):
        if requires_grad and self.data.dtype.kind not in "fc":
            raise TypeError(f"Only floating point tensors can require gradients. Received: dtype={self.dtype}")
        if self.grad_fn is not None and not requires_grad:
            raise RuntimeError("requires_grad can only be changed on leaf tensors; use detach()")
        self.requires_grad = bool(requires_grad)
        return self

    def clone(self):
        """A copy of the data that stays in the graph (gradients flow back to self)."""
        return elementwise_ops.Clone.apply(self)

    def zero_grad(self):
        self.grad = None

    # ------------------------------------------------------------------ in-place
    def _bump_version(self):
        self._version.value += 1

    def _check_inplace(self):
        if grad_state.enabled and self.requires_grad:
            if self.grad_fn is None:
                raise RuntimeError("a leaf tensor that requires grad is being used in an in-place operation; "
                                   "wrap the update in `with mn.no_grad():`")
            raise RuntimeError("in-place operations on tensors that are part of the graph are not supported; "
                               "use out-of-place operations (y = y + 1) or wrap in `with mn.no_grad():`")

    def _inplace(self, ufunc, other):
        self._check_inplace()
        ufunc(self.data, other.data if isinstance(other, Tensor) else other, out=self.data, casting="same_kind")
        self._bump_version()
        return self

    def add_(self, other):
        return self._inplace(np.add, other)

    def sub_(self, other):
        return self._inplace(np.subtract, other)

    def mul_(self, other):
        return self._inplace(np.multiply, other)

    def div_(self, other):
        return self._inplace(np.true_divide, other)

    def zero_(self):
        self._check_inplace()
        self.data[...] = 0
        self._bump_version()
        return self

    def fill_(self, value):
        self._check_inplace()
        self.data[...] = value
        self._bump_version()
        return self

    def copy_(self, src):
        self._check_inplace()
        self.data[...] = src.data if isinstance(src, Tensor) else src
        self._bump_version()
        return self

    def __setitem__(self, key, value):
        self._check_inplace()
        self.data[_index_key(key)] = value.data if isinstance(value, Tensor) else value
        self._bump_version()

    def _iop(self, ufunc, other, outofplace):
        if grad_state.enabled and (self.requires_grad or (isinstance(other, Tensor) and other.requires_grad)):
            return outofplace(self, other)      # rebinds the name, keeps the graph correct
        return self._inplace(ufunc, other)

    def __iadd__(self, other):
        return self._iop(np.add, other, Tensor.__add__)

    def __isub__(self, other):
        return self._iop(np.subtract, other, Tensor.__sub__)

    def __imul__(self, other):
        return self._iop(np.multiply, other, Tensor.__mul__)

    def __itruediv__(self, other):
        return self._iop(np.true_divide, other, Tensor.__truediv__)

    # ------------------------------------------------------------------ operators
    def __add__(self, other):
        return elementwise_ops.Add.apply(self, other)

    def __radd__(self, other):
        return elementwise_ops.Add.apply(other, self)

    def __sub__(self, other):
        return elementwise_ops.Sub.apply(self, other)

    def __rsub__(self, other):
        return elementwise_ops.Sub.apply(other, self)

    def __mul__(self, other):
        return elementwise_ops.Mul.apply(self, other)

    def __rmul__(self, other):
        return elementwise_ops.Mul.apply(other, self)

    def __truediv__(self, other):
        return elementwise_ops.Div.apply(self, other)

    def __rtruediv__(self, other):
        return elementwise_ops.Div.apply(other, self)

    def __matmul__(self, other):
        return linalg_ops.MatMul.apply(self, other)

    def __rmatmul__(self, other):
        return linalg_ops.MatMul.apply(other, self)

    def __pow__(self, other):
        return elementwise_ops.Pow.apply(self, other)

    def __rpow__(self, other):
        return elementwise_ops.Pow.apply(other, self)

    def __neg__(self):
        return elementwise_ops.Neg.apply(self)

    def __pos__(self):
        return self

    def __getitem__(self, key):
        return indexing_ops.Index.apply(self, _index_key(key))

    # comparisons give boolean tensors without gradient (== / != stay identity, so
    # tensors can be kept in lists, sets and dicts; use eq() / ne() for elementwise)
    def __lt__(self, other):
        return Tensor._make(np.less(self.data, _raw(other)))

    def __le__(self, other):
        return Tensor._make(np.less_equal(self.data, _raw(other)))

    def __gt__(self, other):
        return Tensor._make(np.greater(self.data, _raw(other)))

    def __ge__(self, other):
        return Tensor._make(np.greater_equal(self.data, _raw(other)))

    lt, le, gt, ge = __lt__, __le__, __gt__, __ge__

    def eq(self, other):
        return Tensor._make(np.equal(self.data, _raw(other)))

    def ne(self, other):
        return Tensor._make(np.not_equal(self.data, _raw(other)))

    def logical_not(self):
        return Tensor._make(np.logical_not(self.data))

    def __invert__(self):
        return Tensor._make(np.invert(self.data))

    def __and__(self, other):
        return Tensor._make(np.bitwise_and(self.data, _raw(other)))

    def __or__(self, other):
        return Tensor._make(np.bitwise_or(self.data, _raw(other)))

    def __xor__(self, other):
        return Tensor._make(np.bitwise_xor(self.data, _raw(other)))

    __hash__ = object.__hash__

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
        if isinstance(dim, Tensor):
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
        return cls(values, Tensor._make(index.astype(np.int64)))

    def argmax(self, dim=None, keepdim=False):
        return _arg_extreme(self, dim, keepdim, np.argmax)

    def argmin(self, dim=None, keepdim=False):
        return _arg_extreme(self, dim, keepdim, np.argmin)

    def sort(self, dim=-1, descending=False, stable=False):
        d = op_helpers.norm_dim(dim, self.ndim)
        index = _argsort(self.data, d, descending)
        return _SortResult(indexing_ops.Gather.apply(self, d, index), Tensor._make(index))

    def argsort(self, dim=-1, descending=False, stable=False):
        return Tensor._make(_argsort(self.data, op_helpers.norm_dim(dim, self.ndim), descending))

    def topk(self, k, dim=-1, largest=True, sorted=True):
        d = op_helpers.norm_dim(dim, self.ndim)
        size = self.shape[d] if self.ndim else 1
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 0 <= k <= size:
            raise RuntimeError(f"topk(): selected index k out of range: k={k!r} for a dimension of size {size}")
        index = np.take(_argsort(self.data, d, largest), np.arange(int(k)), axis=d)
        return _TopkResult(indexing_ops.Gather.apply(self, d, index), Tensor._make(index))

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
        return indexing_ops.Gather.apply(self, dim, _raw(index))

    def scatter_add(self, dim, index, src):
        return indexing_ops.ScatterAdd.apply(self, dim, _raw(index), src)

    def index_select(self, dim, index):
        return indexing_ops.IndexSelect.apply(self, dim, _raw(index))

    def masked_fill(self, mask, value):
        return indexing_ops.MaskedFill.apply(self, _raw(mask), value=_raw(value))

    def where(self, condition, other):
        return indexing_ops.Where.apply(_raw(condition), self, other)

    # ------------------------------------------------------------------ math
    def exp(self):
        return elementwise_ops.Exp.apply(self)

    def expm1(self):
        return elementwise_ops.Expm1.apply(self)

    def log(self):
        return elementwise_ops.Log.apply(self)

    def log1p(self):
        return elementwise_ops.Log1p.apply(self)

    def sqrt(self):
        return elementwise_ops.Sqrt.apply(self)

    def rsqrt(self):
        return self.sqrt().reciprocal()

    def reciprocal(self):
        return elementwise_ops.Div.apply(1.0, self)

    def square(self):
        return elementwise_ops.Mul.apply(self, self)

    def sin(self):
        return elementwise_ops.Sin.apply(self)

    def cos(self):
        return elementwise_ops.Cos.apply(self)

    def abs(self):
        return elementwise_ops.Abs.apply(self)

    def sign(self):
        return elementwise_ops.Sign.apply(self)

    def floor(self):
        return elementwise_ops.Floor.apply(self)

    def ceil(self):
        return elementwise_ops.Ceil.apply(self)

    def round(self):
        return elementwise_ops.Round.apply(self)

    def neg(self):
        return elementwise_ops.Neg.apply(self)

    def pow(self, exponent):
        return elementwise_ops.Pow.apply(self, exponent)

    def add(self, other, alpha=1):
        return elementwise_ops.Add.apply(self, other if alpha == 1 else other * alpha)

    def sub(self, other, alpha=1):
        return elementwise_ops.Sub.apply(self, other if alpha == 1 else other * alpha)

    def mul(self, other):
        return elementwise_ops.Mul.apply(self, other)

    def div(self, other):
        return elementwise_ops.Div.apply(self, other)

    def clip(self, min=None, max=None):
        return elementwise_ops.Clamp.apply(self, min=_raw(min), max=_raw(max))

    clamp = clip

    def maximum(self, other):
        return elementwise_ops.Maximum.apply(self, other)

    def minimum(self, other):
        return elementwise_ops.Minimum.apply(self, other)

    def matmul(self, other):
        return linalg_ops.MatMul.apply(self, other)

    def mm(self, other):
        if self.ndim != 2 or np.ndim(_raw(other)) != 2:
            raise RuntimeError("mm(): both arguments must be 2-D")
        return linalg_ops.MatMul.apply(self, other)

    def bmm(self, other):
        if self.ndim != 3 or np.ndim(_raw(other)) != 3:
            raise RuntimeError(f"bmm(): both arguments must be 3-D. Received: {self.ndim}-D and "
                               f"{np.ndim(_raw(other))}-D")
        if self.shape[0] != np.shape(_raw(other))[0]:
            raise RuntimeError(f"bmm(): batch sizes differ: {self.shape[0]} vs {np.shape(_raw(other))[0]}")
        return linalg_ops.MatMul.apply(self, other)

    def dot(self, other):
        return linalg_ops.MatMul.apply(self, other)

    def sigmoid(self):
        return activation_ops.Sigmoid.apply(self)

    def tanh(self):
        return activation_ops.Tanh.apply(self)

    def relu(self):
        return activation_ops.Relu.apply(self)

    def softmax(self, dim=-1, *, axis=None):
        return activation_ops.Softmax.apply(self, dim=dim if axis is None else axis)

    def log_softmax(self, dim=-1, *, axis=None):
        return activation_ops.LogSoftmax.apply(self, dim=dim if axis is None else axis)

    def astype(self, dtype):
        """A copy converted to ``dtype`` (gradients flow back, converted to the source dtype)."""
        return elementwise_ops.Cast.apply(self, dtype=np.dtype(dtype))

    def float(self):
        return self.astype(np.float32)

    def double(self):
        return self.astype(np.float64)

    def numel(self):
        return int(self.data.size)

    def dim(self):
        return self.data.ndim


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
    return Tensor._make(np.asarray(out, dtype=np.int64))


def _argsort(a, d, descending):
    """Stable argsort along ``d`` (equal elements keep their order, also when descending),
    int64.  float32/float64 run on the threaded radix sort of ``_ext._sort``; NumPy's stable
    sort (one thread) otherwise (benchmarks/bench_autograd.py, "sort dim 1")."""
    if a.ndim and (a.dtype == np.float32 or a.dtype == np.float64):
        return _sort.argsort_along(a, d, descending, n_threads=get_num_threads())
    if not descending:
        return np.argsort(a, axis=d, kind="stable").astype(np.int64)
    n = a.shape[d] if a.ndim else 1
    flipped = np.flip(a, d) if a.ndim else a
    order = np.argsort(flipped, axis=d, kind="stable")
    return (n - 1 - np.flip(order, d)).astype(np.int64) if a.ndim else order.astype(np.int64)


class Parameter(Tensor):
    """A trainable tensor: ``requires_grad=True``, a leaf, owned by a layer.

    Args:
        data: array-like; non-float data becomes float32.
        name: optional name shown in summaries and saved files.
    """

    __slots__ = ("constraint",)    # None, or a callable ndarray -> ndarray optimizers apply after each step

    def __init__(self, data, requires_grad=True, name=None):
        arr = _to_array(data)
        if arr.dtype.kind != "f":
            arr = arr.astype(np.float32)
        super().__init__(arr, requires_grad=requires_grad, name=name)
        self.constraint = None

    def __repr__(self):
        label = f" {self.name!r}" if self.name else ""
        return f"Parameter{label} containing:\n{super().__repr__()}"


def tensor(data, dtype=None, requires_grad=False):
    """Create a Tensor from a copy of ``data`` (``mn.tensor(np.ones(3), requires_grad=True)``).

    The data is always copied, as ``torch.tensor``; ``mn.from_numpy(a)`` shares ``a``'s memory.
    ndarrays keep their dtype unless ``dtype`` is given; Python floats and lists become
    float32 (minnet's default), Python ints int64.
    """
    if isinstance(data, Tensor):
        data = data.data
    if isinstance(data, np.ndarray):
        # a copy, as torch.tensor: training must never write into the caller's array
        # (mn.from_numpy is the spelling that shares memory)
        data = np.array(data, dtype=dtype, copy=True)
        dtype = None
    return Tensor(data, requires_grad=requires_grad, dtype=dtype)


def _raw(x):
    return x.data if isinstance(x, Tensor) else x


def _index_key(key):
    if isinstance(key, tuple):
        return tuple(_raw(k) for k in key)
    return _raw(key)


def root_gradient(t, gradient, create_graph, name):
    """The gradient fed to the root ``t``: an ndarray, or a Tensor under ``create_graph``."""
    if gradient is None:
        if t.data.size != 1:
            raise RuntimeError(f"grad can be implicitly created only for scalar outputs; pass "
                               f"`{name}` for a tensor of shape {t.shape}")
        g = np.ones_like(t.data)
        return Tensor._make(g) if create_graph else g
    if isinstance(gradient, Tensor):
        if tuple(gradient.shape) != tuple(t.shape):
            raise ValueError(f"Invalid argument `{name}`: expected shape {tuple(t.shape)}. "
                             f"Received: shape={tuple(gradient.shape)}")
        if create_graph:
            return gradient if gradient.dtype == t.dtype else gradient.astype(t.dtype)
        gradient = gradient.data
    g = np.asarray(gradient, dtype=t.data.dtype)
    if g.shape != t.data.shape:
        raise ValueError(f"Invalid argument `{name}`: expected shape {tuple(t.shape)}. "
                         f"Received: shape={g.shape}")
    return Tensor._make(g) if create_graph else g


# The op modules sit below Tensor; they recognise and make Tensors through this binding.
op_helpers.Tensor = Tensor
register_tensor_class(Tensor)
