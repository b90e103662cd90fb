"""``mn.Tensor``: an ndarray plus what autograd needs (requires_grad, grad, grad_fn)."""
import weakref

import numpy as np

from .function import AccumulateGrad, _GradMode, run_backward

__all__ = ["Tensor", "Parameter", "tensor"]


class _Version:
    """In-place modification counter, shared between a tensor and its ``detach()`` views."""

    __slots__ = ("value",)

    def __init__(self):
        self.value = 0


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


class Tensor:
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

    __slots__ = ("data", "grad", "requires_grad", "grad_fn", "_output_nr", "_version",
                 "_accumulator", "name", "__weakref__")
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
        self._version = _Version()
        self._accumulator = None
        self.name = name

    @classmethod
    def _make(cls, arr):
        t = Tensor.__new__(Tensor)
        t.data = arr
        t.grad = None
        t.requires_grad = False
        t.grad_fn = None
        t._output_nr = 0
        t._version = _Version()
        t._accumulator = None
        t.name = None
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
    def _gradient_edge(self):
        if self.grad_fn is not None:
            return (self.grad_fn, self._output_nr)
        acc = self._accumulator() if self._accumulator is not None else None
        if acc is None:
            acc = AccumulateGrad(self)
            self._accumulator = weakref.ref(acc)
        return (acc, 0)

    def backward(self, gradient=None, retain_graph=False):
        """Compute d(self)/d(leaf) for every leaf that requires grad, into ``leaf.grad``.

        Args:
            gradient: d(loss)/d(self), same shape as self; may be omitted for a scalar.
            retain_graph: keep the saved arrays so backward can run through the graph again.
        """
        if gradient is None:
            if self.data.size != 1:
                raise RuntimeError(f"grad can be implicitly created only for scalar outputs; "
                                   f"pass `gradient` for a tensor of shape {self.shape}")
            gradient = np.ones_like(self.data)
        else:
            gradient = np.asarray(gradient.data if isinstance(gradient, Tensor) else gradient,
                                  dtype=self.data.dtype)
            if gradient.shape != self.data.shape:
                raise ValueError(f"Invalid argument `gradient`: expected shape {self.shape}. "
                                 f"Received: shape={gradient.shape}")
        run_backward(self, gradient, retain_graph=retain_graph)

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
        return _ops().Clone.apply(self)

    def zero_grad(self):
        self.grad = None

    # ------------------------------------------------------------------ in-place
    def _bump_version(self):
        self._version.value += 1

    def _check_inplace(self):
        if _GradMode.enabled and self.requires_grad:
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
        if _GradMode.enabled and (self.requires_grad or (isinstance(other, Tensor) and other.requires_grad)):
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
        return _ops().Add.apply(self, other)

    def __radd__(self, other):
        return _ops().Add.apply(other, self)

    def __sub__(self, other):
        return _ops().Sub.apply(self, other)

    def __rsub__(self, other):
        return _ops().Sub.apply(other, self)

    def __mul__(self, other):
        return _ops().Mul.apply(self, other)

    def __rmul__(self, other):
        return _ops().Mul.apply(other, self)

    def __truediv__(self, other):
        return _ops().Div.apply(self, other)

    def __rtruediv__(self, other):
        return _ops().Div.apply(other, self)

    def __matmul__(self, other):
        return _ops().MatMul.apply(self, other)

    def __rmatmul__(self, other):
        return _ops().MatMul.apply(other, self)

    def __pow__(self, other):
        return _ops().Pow.apply(self, other)

    def __rpow__(self, other):
        return _ops().Pow.apply(other, self)

    def __neg__(self):
        return _ops().Neg.apply(self)

    def __pos__(self):
        return self

    def __getitem__(self, key):
        return _ops().Index.apply(self, _index_key(key))

    # comparisons give boolean tensors without gradient (== / != stay identity, so
    # tensors can be kept in lists, sets and dicts)
    def __lt__(self, other):
        return Tensor._make(self.data < _raw(other))

    def __le__(self, other):
        return Tensor._make(self.data <= _raw(other))

    def __gt__(self, other):
        return Tensor._make(self.data > _raw(other))

    def __ge__(self, other):
        return Tensor._make(self.data >= _raw(other))

    __hash__ = object.__hash__

    # ------------------------------------------------------------------ methods
    def sum(self, axis=None, keepdims=False):
        return _ops().Sum.apply(self, axis=axis, keepdims=keepdims)

    def mean(self, axis=None, keepdims=False):
        return _ops().Mean.apply(self, axis=axis, keepdims=keepdims)

    def reshape(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return _ops().Reshape.apply(self, shape=shape)

    def view(self, *shape):
        return self.reshape(*shape)

    def flatten(self, start_axis=0):
        return self.reshape(self.shape[:start_axis] + (-1,))

    def transpose(self, *axes):
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        return _ops().Transpose.apply(self, axes=axes or None)

    def exp(self):
        return _ops().Exp.apply(self)

    def log(self):
        return _ops().Log.apply(self)

    def sqrt(self):
        return _ops().Sqrt.apply(self)

    def abs(self):
        return _ops().Abs.apply(self)

    def clip(self, min=None, max=None):
        return _ops().Clamp.apply(self, min=min, max=max)

    clamp = clip

    def maximum(self, other):
        return _ops().Maximum.apply(self, other)

    def minimum(self, other):
        return _ops().Minimum.apply(self, other)

    def max(self, axis=None, keepdims=False):
        return _ops().Max.apply(self, axis=axis, keepdims=keepdims)

    def sigmoid(self):
        return _functional().sigmoid(self)

    def tanh(self):
        return _functional().tanh(self)

    def relu(self):
        return _functional().relu(self)

    def softmax(self, axis=-1):
        return _functional().softmax(self, axis=axis)

    def log_softmax(self, axis=-1):
        return _functional().log_softmax(self, axis=axis)

    def astype(self, dtype):
        """A copy converted to ``dtype`` (gradients flow back, converted to the source dtype)."""
        return _ops().Cast.apply(self, dtype=np.dtype(dtype))

    def float(self):
        return self.astype(np.float32)

    def double(self):
        return self.astype(np.float64)


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
    """Create a Tensor (``mn.tensor(np.ones(3), requires_grad=True)``).

    ndarrays keep their dtype unless ``dtype`` is given; Python floats and lists become
    float32 (minnet's default), Python ints int64.
    """
    if isinstance(data, Tensor):
        data = data.data.copy()
    return Tensor(data, requires_grad=requires_grad, dtype=dtype)


def _raw(x):
    return x.data if isinstance(x, Tensor) else x


def _index_key(key):
    if isinstance(key, tuple):
        return tuple(_raw(k) for k in key)
    return _raw(key)


_modules = {}


def _ops():
    mod = _modules.get("ops")
    if mod is None:
        from . import ops as mod
        _modules["ops"] = mod
    return mod


def _functional():
    mod = _modules.get("functional")
    if mod is None:
        import minnet.functional as mod
        _modules["functional"] = mod
    return mod
