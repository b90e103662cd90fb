"""``mn.Tensor``: an ndarray plus what autograd needs (requires_grad, grad, grad_fn).

This module holds the Tensor's state and its autograd side (``backward``, hooks,
``detach``, the in-place methods and their version counter); the methods that apply an
op live in mixins by concern: tensor_math.py (operators, elementwise and matrix methods)
and tensor_shape.py (reductions, sorting, shape, indexing).  Keras's Variable API comes
from keras_variable.py.
"""
import weakref

import numpy as np

from . import elementwise_ops, op_helpers
from .function import AccumulateGrad, HookDict, register_tensor_class, run_backward
from .grad_mode import grad_state
from .keras_variable import KerasVariable
from .tensor_math import TensorMath
from .tensor_shape import TensorShape, index_key

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

class Tensor(TensorMath, TensorShape, KerasVariable):
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
        self.data[index_key(key)] = value.data if isinstance(value, Tensor) else value
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

    def numel(self):
        return int(self.data.size)

    def dim(self):
        return self.data.ndim

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
