"""The Tensor operations as Functions: arithmetic, elementwise math, reductions, shape ops,
indexing and linear algebra.

Each op's backward is its vector-Jacobian product.  Most backwards are written once, in
operations that NumPy arrays and Tensors share (``g * b``, ``g.sum(axis=..., keepdims=True)``,
``g.reshape(shape)``) plus the small dispatching helpers below (``_where``, ``_exp``,
``_gather``...): on ndarrays they run at NumPy speed; under ``create_graph=True`` the engine
calls the same code with Tensors (``backward_graph = backward``), which records the
backward and makes every op here twice differentiable.  When an operand was broadcast in
the forward, ``unbroadcast`` sums the gradient back to the operand's own shape.
"""
import numpy as np

from minnet._config import get_num_threads
from minnet._ext._activations import softmax_backward as _softmax_backward_kernel
from minnet._ext._activations import softmax_forward as _softmax_forward_kernel
from minnet._ext._blas import py_gemm

from .function import Function

__all__ = ["unbroadcast"]


# --------------------------------------------------------------------------- helpers
# (Tensor is bound at the bottom of tensor.py: ops.Tensor = Tensor.)
Tensor = None


def _is_tensor(x):
    return isinstance(x, Tensor)


def _raw(x):
    return x.data if isinstance(x, Tensor) else x


def _shape(x):
    if type(x) is np.ndarray:
        return x.shape
    if type(x) is float or type(x) is int:
        return ()
    return np.shape(_raw(x))


def norm_dims(dim, ndim):
    """``dim`` (None, int or sequence) as a sorted tuple of non-negative axes, or None."""
    if dim is None:
        return None
    dims = (dim,) if isinstance(dim, (int, np.integer)) else tuple(dim)
    out = []
    for d in dims:
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)):
            raise TypeError(f"Invalid argument `dim`: expected an int or a tuple of ints. Received: dim={dim!r}")
        if not -max(ndim, 1) <= d < max(ndim, 1):
            raise IndexError(f"Dimension out of range (expected to be in range of [{-max(ndim, 1)}, "
                             f"{max(ndim, 1) - 1}], but got {d})")
        out.append(int(d) % max(ndim, 1))
    if len(set(out)) != len(out):
        raise ValueError(f"Invalid argument `dim`: dimension appears more than once. Received: dim={dim!r}")
    return tuple(sorted(out))


def norm_dim(dim, ndim):
    return norm_dims(int(dim), ndim)[0]


def unbroadcast(grad, shape):
    """Sum ``grad`` over the axes along which an operand of ``shape`` was broadcast."""
    shape = tuple(shape)
    if tuple(grad.shape) == shape:
        return grad
    extra = grad.ndim - len(shape)
    if extra > 0:
        grad = grad.sum(axis=tuple(range(extra)))
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    if axes:
        grad = grad.sum(axis=axes, keepdims=True)
    return grad.reshape(shape)


def _broadcast_to(g, shape):
    if _is_tensor(g):
        return g if tuple(g.shape) == tuple(shape) else Expand.apply(g, shape=tuple(shape))
    return np.broadcast_to(g, shape)


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
    return _broadcast_to(g, shape)


def _where(cond, a, b):
    cond = _raw(cond)
    if _is_tensor(a) or _is_tensor(b):
        return Where.apply(cond, a, b)
    return np.where(cond, a, b)


def _exp(x):
    return x.exp() if _is_tensor(x) else np.exp(x)


def _log(x):
    return x.log() if _is_tensor(x) else np.log(x)


def _sin(x):
    return x.sin() if _is_tensor(x) else np.sin(x)


def _cos(x):
    return x.cos() if _is_tensor(x) else np.cos(x)


def _abs(x):
    return x.abs() if _is_tensor(x) else np.abs(x)


def _mT(x):
    return x.transpose(-1, -2) if _is_tensor(x) else np.swapaxes(x, -1, -2)


def _permute(x, axes):
    return Permute.apply(x, dims=tuple(axes)) if _is_tensor(x) else np.transpose(x, axes)


def _flip(x, dims):
    return Flip.apply(x, dims=dims) if _is_tensor(x) else np.flip(x, dims)


def _cumsum(x, dim):
    return CumSum.apply(x, dim=dim) if _is_tensor(x) else np.cumsum(x, axis=dim)


def _zeros_like(g):
    z = np.zeros(g.shape, dtype=g.dtype)
    return Tensor._make(z) if _is_tensor(g) else z


def _gather(x, dim, index):
    return Gather.apply(x, dim, index) if _is_tensor(x) else np.take_along_axis(x, index, axis=dim)


def _scatter_into(g, dim, index, shape):
    """zeros(shape) with ``g`` added at ``index`` along ``dim`` (the backward of gather)."""
    if _is_tensor(g):
        return ScatterInto.apply(g, dim=dim, index=index, shape=shape)
    out = np.zeros(shape, dtype=g.dtype)
    _scatter_add_along(out, dim, index, g)
    return out


def _index_select(x, dim, index):
    return IndexSelect.apply(x, dim, index) if _is_tensor(x) else np.take(x, index, axis=dim)


def _index_add_into(g, dim, index, shape):
    if _is_tensor(g):
        return IndexAddInto.apply(g, dim=dim, index=index, shape=shape)
    return _index_add_along(shape, g.dtype, dim, index, g)


def _index_into(g, key, shape):
    if _is_tensor(g):
        return IndexScatter.apply(g, key=key, shape=shape)
    return _scatter_index(g, key, shape)


def _einsum(equation, *operands):
    if any(_is_tensor(o) for o in operands):
        return Einsum.apply(*operands, equation=equation)
    return np.einsum(equation, *operands, optimize=len(operands) > 2)


def _bincount_add(out, linear_index, src):
    """``out.flat[linear_index] += src`` with repeated indices accumulated, in one
    ``np.bincount`` pass (a fixed order; sums in float64)."""
    if src.dtype.kind not in "fiub" or out.dtype.kind not in "fiub":
        np.add.at(out.reshape(-1), linear_index.reshape(-1), src.reshape(-1))
        return
    sums = np.bincount(linear_index.reshape(-1), weights=src.reshape(-1), minlength=out.size)
    out += sums.reshape(out.shape).astype(out.dtype, copy=False)


def _scatter_add_along(out, dim, index, src):
    """``out[..., index[i], ...] += src[i]`` along ``dim`` (repeated indices accumulate)."""
    index = np.asarray(index)
    src = src[tuple(slice(0, n) for n in index.shape)] if src.shape != index.shape else src
    grids = list(np.ix_(*[np.arange(n) for n in index.shape]))
    grids[dim] = index
    linear = np.ravel_multi_index(tuple(np.broadcast_arrays(*grids)), out.shape)
    _bincount_add(out, linear, np.asarray(src))


def _index_add_rows(out, index, src):
    """``out[index[i]] += src[i]`` along axis 0 (repeated rows accumulate): a stable sort of
    the indices and one ``np.add.reduceat`` over the sorted rows, instead of ``np.add.at``."""
    index = np.asarray(index).reshape(-1)
    if index.size == 0:
        return out
    rows = np.asarray(src).reshape((index.size,) + out.shape[1:])
    order = np.argsort(index, kind="stable")
    sorted_index = index[order]
    starts = np.flatnonzero(np.concatenate(([True], sorted_index[1:] != sorted_index[:-1])))
    out[sorted_index[starts]] += np.add.reduceat(rows[order], starts, axis=0)
    return out


def _index_add_along(shape, dtype, dim, index, src):
    """zeros(shape) with ``src`` added at ``index`` along ``dim`` (index_select's backward)."""
    if dim == 0:
        return _index_add_rows(np.zeros(shape, dtype=dtype), index, src)
    moved = np.zeros((shape[dim],) + shape[:dim] + shape[dim + 1:], dtype=dtype)
    _index_add_rows(moved, index, np.moveaxis(src, dim, 0))
    return np.ascontiguousarray(np.moveaxis(moved, 0, dim))


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
        index = np.asarray(key)  # rows picked by one integer array: repeated rows accumulate
        _index_add_rows(grad, np.where(index < 0, index + shape[0], index), g)
    else:                        # general advanced key: linear positions, then one bincount
        linear = np.arange(grad.size).reshape(shape)[key]
        _bincount_add(grad, linear, np.broadcast_to(g, linear.shape))
    return grad


# --------------------------------------------------------------------------- arithmetic

class Add(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.shapes = (_shape(a), _shape(b))
        return np.add(a, b)

    @staticmethod
    def backward(ctx, g):
        sa, sb = ctx.shapes
        na, nb = ctx.needs_input_grad
        return (unbroadcast(g, sa) if na else None, unbroadcast(g, sb) if nb else None)

    backward_graph = backward


class Sub(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.shapes = (_shape(a), _shape(b))
        return np.subtract(a, b)

    @staticmethod
    def backward(ctx, g):
        sa, sb = ctx.shapes
        na, nb = ctx.needs_input_grad
        return (unbroadcast(g, sa) if na else None, unbroadcast(-g, sb) if nb else None)

    backward_graph = backward


class Mul(Function):
    @staticmethod
    def forward(ctx, a, b):
        na, nb = ctx.needs_input_grad
        # d/da needs b and d/db needs a: keep only what will be used.
        ctx.save_for_backward(b if na else None, a if nb else None)
        ctx.shapes = (_shape(a), _shape(b))
        return np.multiply(a, b)

    @staticmethod
    def backward(ctx, g):
        b, a = ctx.saved_tensors
        sa, sb = ctx.shapes
        na, nb = ctx.needs_input_grad
        return (unbroadcast(g * b, sa) if na else None, unbroadcast(g * a, sb) if nb else None)

    backward_graph = backward


class Div(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        ctx.shapes = (_shape(a), _shape(b))
        return np.true_divide(a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        sa, sb = ctx.shapes
        na, nb = ctx.needs_input_grad
        ga = unbroadcast(g / b, sa) if na else None
        gb = unbroadcast(-g * a / (b * b), sb) if nb else None
        return ga, gb

    backward_graph = backward


class Neg(Function):
    @staticmethod
    def forward(ctx, a):
        return np.negative(a)

    @staticmethod
    def backward(ctx, g):
        return -g

    backward_graph = backward


class Pow(Function):
    @staticmethod
    def forward(ctx, a, b):
        y = np.power(a, b)
        ctx.save_for_backward(a, b, y if ctx.needs_input_grad[1] else None)
        ctx.shapes = (_shape(a), _shape(b))
        return y

    @staticmethod
    def backward(ctx, g):
        a, b, y = ctx.saved_tensors
        sa, sb = ctx.shapes
        na, nb = ctx.needs_input_grad
        ga = gb = None
        if na:
            if isinstance(b, (int, float, np.number)) and b == 0:
                ga = unbroadcast(g * 0, sa)
            else:
                ga = unbroadcast(g * b * a ** (b - 1), sa)
        if nb:
            positive = _raw(a) > 0
            with np.errstate(divide="ignore", invalid="ignore"):
                log_a = _where(positive, _log(_where(positive, a, 1)), 0)
            gb = unbroadcast(g * y * log_a, sb)
        return ga, gb

    backward_graph = backward


class Maximum(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.shapes = (_shape(a), _shape(b))
        # as torch.maximum: ties split the gradient in half
        ra, rb = np.asarray(a), np.asarray(b)
        ctx.weight = (ra > rb) + 0.5 * (ra == rb)
        return np.maximum(a, b)

    @staticmethod
    def backward(ctx, g):
        sa, sb = ctx.shapes
        na, nb = ctx.needs_input_grad
        wa = ctx.weight.astype(g.dtype)
        ga = unbroadcast(g * wa, sa) if na else None
        gb = unbroadcast(g * (1 - wa), sb) if nb else None
        return ga, gb

    backward_graph = backward


class Minimum(Maximum):
    @staticmethod
    def forward(ctx, a, b):
        ctx.shapes = (_shape(a), _shape(b))
        ra, rb = np.asarray(a), np.asarray(b)
        ctx.weight = (ra < rb) + 0.5 * (ra == rb)
        return np.minimum(a, b)


_GEMM_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _blas_ready(*arrays):
    """True for ndarrays of one float dtype, 2-D or 3-D with equal batch sizes: the
    products go to minnet's BLAS layer (transposes as flags, no copies)."""
    first = arrays[0]
    if type(first) is not np.ndarray or first.dtype not in _GEMM_DTYPES:
        return False
    for x in arrays:
        if type(x) is not np.ndarray or x.dtype != first.dtype or x.ndim != first.ndim or x.ndim not in (2, 3):
            return False
        if x.ndim == 3 and x.shape[0] != first.shape[0]:
            return False
    return True


def _gemm2(a, b, ta, tb, out=None):
    # a row-major transpose is a column-major array: pass it with the flag flipped
    if not a.flags.c_contiguous and a.T.flags.c_contiguous:
        a, ta = a.T, not ta
    if not b.flags.c_contiguous and b.T.flags.c_contiguous:
        b, tb = b.T, not tb
    if not a.flags.writeable:          # the typed memoryviews need writeable buffers
        a = np.array(a)
    if not b.flags.writeable:
        b = np.array(b)
    return py_gemm(a, b, trans_a=ta, trans_b=tb, c=out, n_threads=get_num_threads())


def _gemm(a, b, ta=False, tb=False):
    """``op(a) @ op(b)`` for 2-D, or batch by batch for 3-D, arrays that ``_blas_ready`` accepts."""
    if a.ndim == 2:
        return _gemm2(a, b, ta, tb)
    m = a.shape[2] if ta else a.shape[1]
    n = b.shape[1] if tb else b.shape[2]
    out = np.empty((a.shape[0], m, n), dtype=a.dtype)
    for i in range(a.shape[0]):
        _gemm2(a[i], b[i], ta, tb, out[i])
    return out


class MatMul(Function):
    node_name = "MmBackward"

    @staticmethod
    def forward(ctx, a, b):
        if np.ndim(a) == 0 or np.ndim(b) == 0:
            raise RuntimeError("both arguments to matmul need to be at least 1D, but they are "
                               f"{np.ndim(a)}D and {np.ndim(b)}D")
        na, nb = ctx.needs_input_grad
        ctx.save_for_backward(a if nb else None, b if na else None)
        ctx.shapes = (_shape(a), _shape(b))
        if _blas_ready(a, b) and a.shape[-1] == b.shape[-2]:
            return _gemm(a, b)
        return np.asarray(np.matmul(a, b))

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        sa, sb = ctx.shapes
        na, nb = ctx.needs_input_grad
        if _blas_ready(*[x for x in (g, a if nb else None, b if na else None) if x is not None]) \
                and len(sa) == len(sb) == g.ndim:
            return (_gemm(g, b, tb=True) if na else None), (_gemm(a, g, ta=True) if nb else None)
        # Promote 1-D operands as matmul does, so one rule covers every case.
        ga = gb = None
        a2_shape = (1,) + sa if len(sa) == 1 else sa
        b2_shape = sb + (1,) if len(sb) == 1 else sb
        g2 = g
        if len(sb) == 1:
            g2 = g2.reshape(tuple(g2.shape) + (1,))
        if len(sa) == 1:
            g2 = g2.reshape(tuple(g2.shape[:-1]) + (1, g2.shape[-1]))
        if na:
            b2 = b.reshape(b2_shape)
            ga = unbroadcast(g2 @ _mT(b2), a2_shape).reshape(sa)
        if nb:
            a2 = a.reshape(a2_shape)
            gb = unbroadcast(_mT(a2) @ g2, b2_shape).reshape(sb)
        return ga, gb

    backward_graph = backward


def _einsum_parse(equation, shapes):
    """Explicit form ``"ab,bc->ac"`` of an einsum equation (ellipsis spelt out in letters)."""
    eq = equation.replace(" ", "")
    if "->" in eq:
        lhs, rhs = eq.split("->")
    else:
        lhs, rhs = eq, None
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise ValueError(f"einsum(): the equation {equation!r} names {len(terms)} operands, "
                         f"but {len(shapes)} were given")
    used = set(c for c in eq if c.isalpha())
    free = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" if c not in used]
    n_ell = 0
    for t, s in zip(terms, shapes):
        if "..." in t:
            n_ell = max(n_ell, len(s) - (len(t) - 3))
    ell = "".join(free[:n_ell])
    out_terms = []
    for t, s in zip(terms, shapes):
        if "..." in t:
            k = len(s) - (len(t) - 3)
            t = t.replace("...", ell[n_ell - k:] if k else "")
        if len(t) != len(s):
            raise ValueError(f"einsum(): the subscript {t!r} does not match an operand with "
                             f"{len(s)} dimensions")
        out_terms.append(t)
    if rhs is None:
        counts = {}
        for t in out_terms:
            for c in t:
                counts[c] = counts.get(c, 0) + 1
        rhs = ell + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in ell))
    else:
        rhs = rhs.replace("...", ell)
    return out_terms, rhs


class Einsum(Function):
    @staticmethod
    def forward(ctx, *operands, equation=""):
        arrays = [np.asarray(o) for o in operands]
        terms, rhs = _einsum_parse(equation, [a.shape for a in arrays])
        ctx.terms, ctx.rhs = terms, rhs
        ctx.shapes = [a.shape for a in arrays]
        ctx.save_for_backward(*operands)
        eq = ",".join(terms) + "->" + rhs
        return np.asarray(np.einsum(eq, *arrays, optimize=len(arrays) > 2))

    @staticmethod
    def backward(ctx, g):
        operands = ctx.saved_tensors
        terms, rhs = ctx.terms, ctx.rhs
        grads = []
        for i, need in enumerate(ctx.needs_input_grad):
            if not need:
                grads.append(None)
                continue
            term = terms[i]
            if len(set(term)) != len(term):
                raise NotImplementedError(f"einsum backward: repeated subscripts within one operand "
                                          f"({term!r}, a diagonal) are not supported")
            others = [t for j, t in enumerate(terms) if j != i]
            available = set(rhs).union(*others) if others else set(rhs)
            kept = "".join(c for c in term if c in available)
            eq = ",".join([rhs] + others) + "->" + kept
            gi = _einsum(eq, g, *[o for j, o in enumerate(operands) if j != i])
            shape = ctx.shapes[i]
            if kept != term:      # letters summed in this operand only: broadcast back
                gi = gi.reshape(tuple(shape[k] if c in available else 1 for k, c in enumerate(term)))
                gi = _broadcast_to(gi, shape)
            elif tuple(gi.shape) != tuple(shape):
                gi = unbroadcast(gi, shape)
            grads.append(gi)
        return tuple(grads)

    backward_graph = backward


# --------------------------------------------------------------------------- elementwise math

class Exp(Function):
    @staticmethod
    def forward(ctx, a):
        y = np.exp(a)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y

    backward_graph = backward


class Expm1(Function):
    @staticmethod
    def forward(ctx, a):
        y = np.expm1(a)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * (y + 1)

    backward_graph = backward


class Log(Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return np.log(a)

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return g / a

    backward_graph = backward


class Log1p(Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return np.log1p(a)

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return g / (a + 1)

    backward_graph = backward


class Sqrt(Function):
    @staticmethod
    def forward(ctx, a):
        y = np.sqrt(a)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g / (y * 2)

    backward_graph = backward


class Sin(Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return np.sin(a)

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return g * _cos(a)

    backward_graph = backward


class Cos(Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return np.cos(a)

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return -g * _sin(a)

    backward_graph = backward


class Abs(Function):
    @staticmethod
    def forward(ctx, a):
        ctx.sign = np.sign(a)
        return np.abs(a)

    @staticmethod
    def backward(ctx, g):
        return g * ctx.sign.astype(g.dtype)

    backward_graph = backward


class _ZeroGrad(Function):
    """Piecewise-constant ops (sign, floor, ceil, round): the gradient is zero everywhere."""

    @staticmethod
    def backward(ctx, g):
        return _zeros_like(g)

    backward_graph = backward


class Sign(_ZeroGrad):
    @staticmethod
    def forward(ctx, a):
        return np.sign(a)


class Floor(_ZeroGrad):
    @staticmethod
    def forward(ctx, a):
        return np.floor(a)


class Ceil(_ZeroGrad):
    @staticmethod
    def forward(ctx, a):
        return np.ceil(a)


class Round(_ZeroGrad):
    @staticmethod
    def forward(ctx, a):
        return np.round(a)


class Clamp(Function):
    @staticmethod
    def forward(ctx, a, min=None, max=None):
        mask = np.ones(np.shape(a), dtype=bool)
        if min is not None:
            mask &= a >= min
        if max is not None:
            mask &= a <= max
        ctx.mask = mask
        if min is None and max is None:
            raise ValueError("clamp: at least one of `min` and `max` must be given")
        return np.clip(a, min, max)

    @staticmethod
    def backward(ctx, g):
        return g * ctx.mask

    backward_graph = backward


class Where(Function):
    @staticmethod
    def forward(ctx, condition, a, b):
        condition = np.asarray(condition)
        if condition.dtype != np.bool_:
            raise TypeError(f"where expected condition to be a boolean tensor. Received: dtype={condition.dtype}")
        ctx.condition = condition
        ctx.shapes = (_shape(a), _shape(b))
        return np.asarray(np.where(condition, a, b))

    @staticmethod
    def backward(ctx, g):
        sa, sb = ctx.shapes
        _, na, nb = ctx.needs_input_grad
        zero = _zeros_like(g) if _is_tensor(g) else 0
        ga = unbroadcast(_where(ctx.condition, g, zero), sa) if na else None
        gb = unbroadcast(_where(ctx.condition, zero, g), sb) if nb else None
        return None, ga, gb

    backward_graph = backward


class MaskedFill(Function):
    @staticmethod
    def forward(ctx, a, mask, value=0.0):
        mask = np.asarray(mask)
        if mask.dtype != np.bool_:
            raise TypeError(f"masked_fill expected `mask` to be a boolean tensor. Received: dtype={mask.dtype}")
        out = np.where(mask, np.asarray(value, dtype=a.dtype), a)
        if out.shape != a.shape:
            raise RuntimeError(f"masked_fill: the mask of shape {mask.shape} must broadcast to the "
                               f"tensor's shape {a.shape}")
        ctx.mask = mask
        return out

    @staticmethod
    def backward(ctx, g):
        zero = _zeros_like(g) if _is_tensor(g) else 0
        return _where(ctx.mask, zero, g), None

    backward_graph = backward


class Clone(Function):
    @staticmethod
    def forward(ctx, a):
        return a.copy()

    @staticmethod
    def backward(ctx, g):
        return g

    backward_graph = backward


class Cast(Function):
    node_name = "ToCopyBackward"

    @staticmethod
    def forward(ctx, a, dtype=None):
        ctx.src = a.dtype
        return a.astype(dtype)

    @staticmethod
    def backward(ctx, g):
        return g.astype(ctx.src)

    backward_graph = backward


# --------------------------------------------------------------------------- reductions

class Sum(Function):
    @staticmethod
    def forward(ctx, a, axis=None, keepdims=False, dtype=None):
        dims = norm_dims(axis, a.ndim)
        ctx.meta = (a.shape, dims, keepdims)
        return np.asarray(np.sum(a, axis=dims, keepdims=keepdims, dtype=dtype))

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
        out = np.asarray(np.mean(a, axis=dims, keepdims=keepdims))
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
        if not np.any(_raw(a) == 0):
            return ge * oe / a
        if _is_tensor(a):
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
        ra = _raw(a)
        sign = np.sign(ra)
        if p == 1:
            return ge * sign
        oe = _expand_reduced(out, shape, dims, keepdims)
        ro = np.broadcast_to(_raw(oe), shape)
        if p == np.inf:
            mask = (np.abs(ra) == ro)
            mask = mask / mask.sum(axis=dims, keepdims=True)
            return ge * (sign * mask)
        safe = _where(ro == 0, 1, oe)           # the norm of zeros has gradient zero
        if p == 2:
            return ge * a / safe
        return ge * sign * _abs(a) ** (p - 1) / safe ** (p - 1)

    backward_graph = backward


class LogSumExp(Function):
    @staticmethod
    def forward(ctx, a, axis=None, keepdims=False):
        dims = norm_dims(axis, a.ndim)
        ctx.meta = (a.shape, dims, keepdims)
        m = np.max(a, axis=dims, keepdims=True)
        m = np.where(np.isfinite(m), m, 0)
        out = np.log(np.sum(np.exp(a - m), axis=dims, keepdims=True)) + m
        out = out if keepdims else np.asarray(out.reshape(()) if dims is None else np.squeeze(out, axis=dims))
        ctx.save_for_backward(a, out)
        return out

    @staticmethod
    def backward(ctx, g):
        a, out = ctx.saved_tensors
        shape, dims, keepdims = ctx.meta
        return _expand_reduced(g, shape, dims, keepdims) * _exp(a - _expand_reduced(out, shape, dims, keepdims))

    backward_graph = backward


class CumSum(Function):
    @staticmethod
    def forward(ctx, a, dim=0):
        ctx.dim = norm_dim(dim, a.ndim)
        return np.cumsum(a, axis=ctx.dim)

    @staticmethod
    def backward(ctx, g):
        d = ctx.dim
        return _flip(_cumsum(_flip(g, (d,)), d), (d,))

    backward_graph = backward


class Amax(Function):
    """max/min over dims (no indices): ties share the gradient evenly, as ``torch.amax``."""

    node_name = "MaxBackward"

    @staticmethod
    def forward(ctx, a, axis=None, keepdims=False, largest=True):
        dims = norm_dims(axis, a.ndim)
        if a.size == 0:
            raise RuntimeError("max(): expected a non-empty tensor")
        out = (np.max if largest else np.min)(a, axis=dims, keepdims=True)
        mask = a == out
        ctx.weight = mask / mask.sum(axis=dims, keepdims=True)
        ctx.meta = (a.shape, dims, keepdims)
        return np.asarray(out if keepdims else (out.reshape(()) if dims is None else np.squeeze(out, axis=dims)))

    @staticmethod
    def backward(ctx, g):
        shape, dims, keepdims = ctx.meta
        return _expand_reduced(g, shape, dims, keepdims) * ctx.weight.astype(g.dtype)

    backward_graph = backward


def _rows(a, d):
    """``a`` with axis ``d`` last, as C-contiguous (rows, n) (a view when ``d`` is already last)."""
    moved = np.moveaxis(a, d, -1)
    n = a.shape[d]
    return np.ascontiguousarray(moved).reshape(-1, n), moved.shape


class Softmax(Function):
    """Along ``dim``, on the row kernels of ``_ext._activations`` (float32/float64)."""

    log_output = False

    @classmethod
    def forward(cls, ctx, a, dim=-1):
        d = ctx.dim = norm_dim(dim, a.ndim)
        if a.dtype in _GEMM_DTYPES and a.size:
            rows, moved_shape = _rows(a, d)
            y = _softmax_forward_kernel(rows, cls.log_output, n_threads=get_num_threads())
            y = np.moveaxis(y.reshape(moved_shape), -1, d)
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
        if y.dtype in _GEMM_DTYPES and y.size and type(g) is np.ndarray:
            y_rows, moved_shape = _rows(y, d)
            g_rows, _ = _rows(g.astype(y.dtype, copy=False), d)
            dx = _softmax_backward_kernel(y_rows, g_rows, cls.log_output, n_threads=get_num_threads())
            return np.moveaxis(dx.reshape(moved_shape), -1, d)
        return cls.backward_graph(ctx, g)

    @classmethod
    def backward_graph(cls, ctx, g):
        (y,) = ctx.saved_tensors
        if cls.log_output:
            return g - _exp(y) * g.sum(axis=ctx.dim, keepdims=True)
        gy = g * y
        return gy - y * gy.sum(axis=ctx.dim, keepdims=True)


class LogSoftmax(Softmax):
    log_output = True


# --------------------------------------------------------------------------- shape ops

class Reshape(Function):
    node_name = "ViewBackward"
    is_view = True

    @staticmethod
    def forward(ctx, a, shape=()):
        ctx.in_shape = a.shape
        try:
            return np.reshape(a, shape)
        except ValueError:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {a.size}") from None

    @staticmethod
    def backward(ctx, g):
        return g.reshape(ctx.in_shape)

    backward_graph = backward


class Permute(Function):
    is_view = True

    @staticmethod
    def forward(ctx, a, dims=None):
        if dims is None:
            dims = tuple(reversed(range(a.ndim)))
        dims = tuple(int(d) % max(a.ndim, 1) for d in dims)
        if sorted(dims) != list(range(a.ndim)):
            raise RuntimeError(f"permute(): the number of dims don't match or a dim is repeated: "
                               f"dims={dims} for a tensor of {a.ndim} dimensions")
        ctx.dims = dims
        return np.transpose(a, dims)

    @staticmethod
    def backward(ctx, g):
        return _permute(g, tuple(np.argsort(ctx.dims)))

    backward_graph = backward


Transpose = Permute


class Expand(Function):
    is_view = True

    @staticmethod
    def forward(ctx, a, shape=()):
        ctx.in_shape = a.shape
        lead = len(shape) - a.ndim
        if lead < 0:
            raise RuntimeError(f"expand: the number of sizes provided ({len(shape)}) must be greater or "
                               f"equal to the number of dimensions in the tensor ({a.ndim})")
        target = tuple(a.shape[i - lead] if (s == -1 and i >= lead) else s for i, s in enumerate(shape))
        try:
            return np.broadcast_to(a, target)
        except ValueError:
            raise RuntimeError(f"The expanded size of the tensor {target} must match the existing size "
                               f"{a.shape} at non-singleton dimensions") from None

    @staticmethod
    def backward(ctx, g):
        return unbroadcast(g, ctx.in_shape)

    backward_graph = backward


class Repeat(Function):
    @staticmethod
    def forward(ctx, a, repeats=()):
        repeats = tuple(int(r) for r in repeats)
        if len(repeats) < a.ndim:
            raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of "
                               "dimensions of tensor")
        ctx.in_shape = a.shape
        ctx.repeats = repeats
        return np.tile(a.reshape((1,) * (len(repeats) - a.ndim) + a.shape), repeats)

    @staticmethod
    def backward(ctx, g):
        repeats = ctx.repeats
        padded = (1,) * (len(repeats) - len(ctx.in_shape)) + tuple(ctx.in_shape)
        split = []
        for r, s in zip(repeats, padded):
            split += [r, s]
        g = g.reshape(tuple(split)).sum(axis=tuple(range(0, 2 * len(repeats), 2)))
        return g.reshape(ctx.in_shape)

    backward_graph = backward


class Flip(Function):
    @staticmethod
    def forward(ctx, a, dims=()):
        ctx.dims = norm_dims(dims, a.ndim)
        return np.flip(a, ctx.dims).copy()      # torch.flip copies

    @staticmethod
    def backward(ctx, g):
        return _flip(g, ctx.dims)

    backward_graph = backward


class Cat(Function):
    @staticmethod
    def forward(ctx, *tensors, dim=0):
        arrays = [np.asarray(t) for t in tensors]
        d = ctx.dim = norm_dim(dim, arrays[0].ndim)
        ctx.sizes = [a.shape[d] for a in arrays]
        try:
            return np.concatenate(arrays, axis=d)
        except ValueError as err:
            raise RuntimeError(f"cat(): {err}") from None

    @staticmethod
    def backward(ctx, g):
        d = ctx.dim
        grads = []
        start = 0
        for size, need in zip(ctx.sizes, ctx.needs_input_grad):
            if need:
                grads.append(g[(slice(None),) * d + (slice(start, start + size),)])
            else:
                grads.append(None)
            start += size
        return tuple(grads)

    backward_graph = backward


class Stack(Function):
    @staticmethod
    def forward(ctx, *tensors, dim=0):
        arrays = [np.asarray(t) for t in tensors]
        d = ctx.dim = norm_dim(dim, arrays[0].ndim + 1)
        try:
            return np.stack(arrays, axis=d)
        except ValueError as err:
            raise RuntimeError(f"stack(): {err}") from None

    @staticmethod
    def backward(ctx, g):
        d = ctx.dim
        return tuple(g[(slice(None),) * d + (i,)] if need else None
                     for i, need in enumerate(ctx.needs_input_grad))

    backward_graph = backward


# --------------------------------------------------------------------------- indexing

class Index(Function):
    is_view = True

    @staticmethod
    def forward(ctx, a, key):
        ctx.meta = (a.shape, key)
        return np.asarray(a[key])

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
        if index.size and (index.min() < -a.shape[d] or index.max() >= a.shape[d]):
            raise IndexError(f"gather(): index out of range for dimension {d} with size {a.shape[d]}")
        index = np.where(index < 0, index + a.shape[d], index)
        ctx.meta = (a.shape, d, index)
        src = a[tuple(slice(0, index.shape[k]) if k != d else slice(None) for k in range(a.ndim))]
        return np.take_along_axis(src, index, axis=d)

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
        return _gather(gg, ctx.dim, ctx.index)

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
        if index.size and (index.min() < -a.shape[d] or index.max() >= a.shape[d]):
            raise IndexError(f"scatter_add(): index out of range for dimension {d} with size {a.shape[d]}")
        index = np.where(index < 0, index + a.shape[d], index)
        ctx.dim, ctx.index, ctx.src_shape = d, index, np.shape(src)
        out = np.array(a, copy=True)
        _scatter_add_along(out, d, index, np.asarray(src, dtype=a.dtype))
        return out

    @staticmethod
    def backward(ctx, g):
        na, _, _, ns = ctx.needs_input_grad
        gs = None
        if ns:
            gs = _gather(g, ctx.dim, ctx.index)
            if tuple(gs.shape) != tuple(ctx.src_shape):    # src larger than index: the rest gets zero
                pad = [(0, s - n) for s, n in zip(ctx.src_shape, gs.shape)]
                gs = _pad(gs, pad)
        return (g if na else None), None, None, gs

    backward_graph = backward


def _pad(g, pad):
    if _is_tensor(g):
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
        if index.size and (index.min() < -a.shape[d] or index.max() >= a.shape[d]):
            raise IndexError(f"index_select(): index out of range for dimension {d} with size {a.shape[d]}")
        index = np.where(index < 0, index + a.shape[d], index).reshape(-1)
        ctx.meta = (a.shape, d, index)
        return np.take(a, index, axis=d)

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
        return _index_add_along(shape, g.dtype, dim, index, g)

    @staticmethod
    def backward(ctx, gg):
        return _index_select(gg, ctx.dim, ctx.index)

    backward_graph = backward
