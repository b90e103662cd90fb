"""Tensor factories (``mn.zeros``, ``mn.randn``, ``mn.arange``...) and the functions that
take several tensors (``mn.cat``, ``mn.stack``, ``mn.where``, ``mn.einsum``...), as PyTorch's.

Random factories draw from minnet's own generator, seeded by ``mn.manual_seed``; NumPy's
global random state is never used.  ``mn.tensor`` copies its data; ``mn.from_numpy`` shares
the array's memory.
"""
import numpy as np

from minnet import config
from minnet._random import generator

from . import elementwise_ops, indexing_ops, linalg_ops, shape_ops
from .tensor import Tensor

__all__ = ["zeros", "ones", "full", "empty", "rand", "randn", "randint", "arange", "linspace", "eye",
           "zeros_like", "ones_like", "full_like", "empty_like", "rand_like", "randn_like", "randint_like",
           "from_numpy", "cat", "concat", "concatenate", "stack", "where", "einsum", "matmul", "bmm",
           "gather", "index_select", "masked_fill", "split", "chunk", "squeeze", "unsqueeze", "permute",
           "flip", "sum", "mean", "var", "std", "prod", "logsumexp", "cumsum", "softmax", "log_softmax",
           "maximum", "minimum", "clamp", "abs", "exp", "log", "sqrt", "sin", "cos", "argmax", "argmin",
           "sort", "topk", "norm", "numel", "is_tensor"]


def _size(size, fn):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    for s in size:
        if isinstance(s, bool) or not isinstance(s, (int, np.integer)) or s < 0:
            raise ValueError(f"Invalid argument `size` of {fn}(): expected non-negative ints. "
                             f"Received: size={size!r}")
    return tuple(int(s) for s in size)


def _float_dtype(dtype, fn):
    dtype = np.dtype(config.floatx() if dtype is None else dtype)
    return dtype


def _finish(array, requires_grad):
    return Tensor(array, requires_grad=requires_grad)


def zeros(*size, dtype=None, requires_grad=False):
    """A tensor of zeros (default dtype: ``mn.config.floatx()``, float32)."""
    return _finish(np.zeros(_size(size, "zeros"), dtype=_float_dtype(dtype, "zeros")), requires_grad)


def ones(*size, dtype=None, requires_grad=False):
    return _finish(np.ones(_size(size, "ones"), dtype=_float_dtype(dtype, "ones")), requires_grad)


def empty(*size, dtype=None, requires_grad=False):
    """As ``torch.empty``; minnet fills it with zeros (uninitialised memory teaches nothing)."""
    return zeros(*size, dtype=dtype, requires_grad=requires_grad)


def _fill_dtype(fill_value, dtype):
    if dtype is not None:
        return np.dtype(dtype)
    if isinstance(fill_value, (bool, np.bool_)):
        return np.dtype(bool)
    if isinstance(fill_value, (int, np.integer)):
        return np.dtype(np.int64)
    return np.dtype(config.floatx())


def full(size, fill_value, dtype=None, requires_grad=False):
    """A tensor filled with ``fill_value`` (dtype inferred from it as in PyTorch)."""
    size = _size((size,) if isinstance(size, (int, np.integer)) else tuple(size), "full")
    return _finish(np.full(size, fill_value, dtype=_fill_dtype(fill_value, dtype)), requires_grad)


def rand(*size, dtype=None, requires_grad=False):
    """Uniform on [0, 1), from minnet's generator (``mn.manual_seed``)."""
    dtype = _float_dtype(dtype, "rand")
    return _finish(generator().random(_size(size, "rand")).astype(dtype), requires_grad)


def randn(*size, dtype=None, requires_grad=False):
    """Standard normal, from minnet's generator (``mn.manual_seed``)."""
    dtype = _float_dtype(dtype, "randn")
    return _finish(generator().standard_normal(_size(size, "randn")).astype(dtype), requires_grad)


def randint(low=0, high=None, size=None, dtype=None, requires_grad=False):
    """Integers uniform on [low, high) (``randint(high, size)`` or ``randint(low, high, size)``)."""
    if size is None:
        if not isinstance(high, (tuple, list)):
            raise TypeError("randint(): expected `size` (a tuple of ints)")
        low, high, size = 0, low, high
    if high is None:
        low, high = 0, low
    if int(high) <= int(low):
        raise ValueError(f"randint(): expected low < high. Received: low={low}, high={high}")
    size = _size(tuple(size) if isinstance(size, (tuple, list)) else (size,), "randint")
    dtype = np.dtype(np.int64 if dtype is None else dtype)
    return _finish(generator().integers(int(low), int(high), size).astype(dtype), requires_grad)


def arange(start, end=None, step=1, dtype=None, requires_grad=False):
    """Values from ``start`` to ``end`` (excluded) by ``step``: int64 when all are ints."""
    if end is None:
        start, end = 0, start
    if step == 0:
        raise ValueError("Invalid argument `step` of arange(): must be nonzero. Received: step=0")
    if dtype is None:
        ints = all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in (start, end, step))
        dtype = np.int64 if ints else config.floatx()
    n = max(int(np.ceil((end - start) / step)), 0)
    return _finish((start + step * np.arange(n, dtype=np.float64)).astype(dtype)
                   if np.dtype(dtype).kind == "f" else np.arange(start, end, step, dtype=dtype), requires_grad)


def linspace(start, end, steps, dtype=None, requires_grad=False):
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 0:
        raise ValueError(f"Invalid argument `steps` of linspace(): expected a non-negative int. Received: {steps!r}")
    return _finish(np.linspace(start, end, int(steps)).astype(_float_dtype(dtype, "linspace")), requires_grad)


def eye(n, m=None, dtype=None, requires_grad=False):
    size = _size((n,) if m is None else (n, m), "eye")
    return _finish(np.eye(size[0], size[-1], dtype=_float_dtype(dtype, "eye")), requires_grad)


def _like(t, dtype):
    data = t.data if isinstance(t, Tensor) else np.asarray(t)
    return data.shape, (data.dtype if dtype is None else np.dtype(dtype))


def zeros_like(t, dtype=None, requires_grad=False):
    shape, dtype = _like(t, dtype)
    return _finish(np.zeros(shape, dtype=dtype), requires_grad)


def ones_like(t, dtype=None, requires_grad=False):
    shape, dtype = _like(t, dtype)
    return _finish(np.ones(shape, dtype=dtype), requires_grad)


def empty_like(t, dtype=None, requires_grad=False):
    return zeros_like(t, dtype, requires_grad)


def full_like(t, fill_value, dtype=None, requires_grad=False):
    shape, dtype = _like(t, dtype)
    return _finish(np.full(shape, fill_value, dtype=dtype), requires_grad)


def rand_like(t, dtype=None, requires_grad=False):
    shape, dtype = _like(t, dtype)
    return _finish(generator().random(shape).astype(dtype), requires_grad)


def randn_like(t, dtype=None, requires_grad=False):
    shape, dtype = _like(t, dtype)
    return _finish(generator().standard_normal(shape).astype(dtype), requires_grad)


def randint_like(t, low=0, high=None, dtype=None, requires_grad=False):
    shape, dtype = _like(t, dtype)
    if high is None:
        low, high = 0, low
    return _finish(generator().integers(int(low), int(high), shape).astype(dtype), requires_grad)


def from_numpy(array):
    """A Tensor that shares ``array``'s memory (edits to one show in the other)."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"Invalid argument `array` of from_numpy(): expected np.ndarray. "
                        f"Received: {type(array).__name__}")
    return Tensor(array)


def is_tensor(obj):
    return isinstance(obj, Tensor)


def numel(t):
    return t.numel()


def _tensors(tensors, fn):
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)) or not tensors:
        raise TypeError(f"{fn}(): expected a non-empty sequence of Tensors. Received: {type(tensors).__name__}")
    return tuple(t if isinstance(t, Tensor) else Tensor(np.asarray(t)) for t in tensors)


def cat(tensors, dim=0):
    """Join tensors along an existing dim."""
    return shape_ops.Cat.apply(*_tensors(tensors, "cat"), dim=dim)


concat = concatenate = cat


def stack(tensors, dim=0):
    """Join tensors along a new dim."""
    return shape_ops.Stack.apply(*_tensors(tensors, "stack"), dim=dim)


def where(condition, input=None, other=None):
    """``input`` where ``condition`` holds, else ``other`` (broadcast); ``where(c)`` gives indices."""
    cond = condition.data if isinstance(condition, Tensor) else np.asarray(condition)
    if input is None and other is None:
        return tuple(Tensor._make(i.astype(np.int64)) for i in np.nonzero(cond))
    return indexing_ops.Where.apply(cond, input, other)


def einsum(equation, *operands):
    """Einstein summation (``"bij,bjk->bik"``; ellipsis allowed; no repeated index within one operand)."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not isinstance(equation, str):
        raise TypeError(f"einsum(): expected the equation as a str. Received: {type(equation).__name__}")
    return linalg_ops.Einsum.apply(*operands, equation=equation)


def _t(x):
    return x if isinstance(x, Tensor) else Tensor(np.asarray(x))


def matmul(a, b):
    return linalg_ops.MatMul.apply(a, b)


def bmm(a, b):
    return _t(a).bmm(b)


def gather(input, dim, index):
    return _t(input).gather(dim, index)


def index_select(input, dim, index):
    return _t(input).index_select(dim, index)


def masked_fill(input, mask, value):
    return _t(input).masked_fill(mask, value)


def split(tensor, split_size_or_sections, dim=0):
    return _t(tensor).split(split_size_or_sections, dim)


def chunk(input, chunks, dim=0):
    return _t(input).chunk(chunks, dim)


def squeeze(input, dim=None):
    return _t(input).squeeze(dim)


def unsqueeze(input, dim):
    return _t(input).unsqueeze(dim)


def permute(input, dims):
    return _t(input).permute(dims)


def flip(input, dims):
    return _t(input).flip(dims)


def sum(input, dim=None, keepdim=False):
    return _t(input).sum(dim, keepdim)


def mean(input, dim=None, keepdim=False):
    return _t(input).mean(dim, keepdim)


def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return _t(input).var(dim, unbiased, keepdim, correction=correction)


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return _t(input).std(dim, unbiased, keepdim, correction=correction)


def prod(input, dim=None, keepdim=False):
    return _t(input).prod(dim, keepdim)


def norm(input, p="fro", dim=None, keepdim=False):
    return _t(input).norm(p, dim, keepdim)


def logsumexp(input, dim, keepdim=False):
    return _t(input).logsumexp(dim, keepdim)


def cumsum(input, dim):
    return _t(input).cumsum(dim)


def softmax(input, dim):
    return _t(input).softmax(dim)


def log_softmax(input, dim):
    return _t(input).log_softmax(dim)


def maximum(input, other):
    return elementwise_ops.Maximum.apply(input, other)


def minimum(input, other):
    return elementwise_ops.Minimum.apply(input, other)


def clamp(input, min=None, max=None):
    return _t(input).clamp(min, max)


def abs(input):
    return _t(input).abs()


def exp(input):
    return _t(input).exp()


def log(input):
    return _t(input).log()


def sqrt(input):
    return _t(input).sqrt()


def sin(input):
    return _t(input).sin()


def cos(input):
    return _t(input).cos()


def argmax(input, dim=None, keepdim=False):
    return _t(input).argmax(dim, keepdim)


def argmin(input, dim=None, keepdim=False):
    return _t(input).argmin(dim, keepdim)


def sort(input, dim=-1, descending=False, stable=False):
    return _t(input).sort(dim, descending, stable)


def topk(input, k, dim=-1, largest=True, sorted=True):
    return _t(input).topk(k, dim, largest, sorted)
