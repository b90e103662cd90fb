"""Linear algebra as Functions: matmul (``@``, batched, with NumPy's 1-D promotion) and
einsum.

2-D float32/float64 products go to Dense's GEMM (``_ext.linear_kernels.matmul``: minnet's
own float32 GEMM up to 2^26 multiply-adds into 2^18 elements, the BLAS beyond and for
float64), 3-D ones to minnet's BLAS layer (``_ext._blas.gemm_batched``), with transposes
passed as flags instead of copies; everything else to ``np.matmul`` / ``np.einsum``.
Backward: ``dA = G Bᵀ``, ``dB = Aᵀ G`` (summed over broadcast batch axes); einsum's gradient
for each operand is another einsum.  Math: ``docs/math/autograd_ops.md``.
"""
import numpy as np

from minnet._checks import matmul_shape_error
from minnet._config import get_num_threads
from minnet._ext._blas import gemm_batched
from minnet._ext.linear_kernels import matmul as gemm_2d

from .function import Function
from .op_helpers import is_tensor, shape_of, swap_last_two, unbroadcast
from .shape_ops import broadcast_to

__all__ = ["MatMul", "Einsum", "GEMM_DTYPES"]

GEMM_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _blas_ready(*arrays):
    """True for ndarrays of one float dtype, 2-D or 3-D with equal batch sizes: the
    products go to minnet's BLAS layer (transposes as flags, no copies)."""
    first = arrays[0]
    if type(first) is not np.ndarray or first.dtype not in GEMM_DTYPES:
        return False
    for x in arrays:
        if type(x) is not np.ndarray or x.dtype != first.dtype or x.ndim != first.ndim or x.ndim not in (2, 3):
            return False
        if x.ndim == 3 and x.shape[0] != first.shape[0]:
            return False
    return True


def _gemm2(a, b, ta, tb):
    # a row-major transpose is a column-major array: pass it with the flag flipped
    if not a.flags.c_contiguous and a.T.flags.c_contiguous:
        a, ta = a.T, not ta
    if not b.flags.c_contiguous and b.T.flags.c_contiguous:
        b, tb = b.T, not tb
    return gemm_2d(np.ascontiguousarray(a), np.ascontiguousarray(b), trans_a=ta, trans_b=tb,
                   n_threads=get_num_threads())


def _batched_operand(x, t):
    """``(x, t)`` with ``x``'s items row-major with unit column stride, as
    ``_blas.gemm_batched`` takes them: a transposed view goes as its transpose with the flag
    flipped, an operand broadcast over the batch as one contiguous item with batch stride 0
    (the ``.sum().backward()`` gradient is one item's copy, not the batch's); other layouts
    are copied."""
    if _rows_ok(x):
        return x, t
    xt = x.transpose(0, 2, 1)
    if _rows_ok(xt):
        return xt, not t
    if x.strides[0] == 0:
        return np.broadcast_to(np.ascontiguousarray(x[0]), x.shape), t
    return np.ascontiguousarray(x), t


def _rows_ok(x):
    item = x.itemsize
    s0, s1, s2 = x.strides
    return (x.shape[2] <= 1 or s2 == item) and (x.shape[1] <= 1 or (s1 >= x.shape[2] * item
                                                                      and s1 % item == 0)) \
        and s0 >= 0 and s0 % item == 0


def _gemm(a, b, ta=False, tb=False):
    """``op(a) @ op(b)`` for 2-D arrays, or item by item for 3-D ones (``_blas.gemm_batched``:
    the items shared out among the threads), that ``_blas_ready`` accepts."""
    if a.ndim == 2:
        return _gemm2(a, b, ta, tb)
    if a.size == 0 or b.size == 0:      # no items, or empty products (K = 0: zeros)
        return np.zeros((a.shape[0], a.shape[2] if ta else a.shape[1],
                         b.shape[1] if tb else b.shape[2]), dtype=a.dtype)
    a, ta = _batched_operand(a, ta)
    b, tb = _batched_operand(b, tb)
    m = a.shape[2] if ta else a.shape[1]
    n = b.shape[1] if tb else b.shape[2]
    out = np.empty((a.shape[0], m, n), dtype=a.dtype)
    return gemm_batched(a, b, out, trans_a=ta, trans_b=tb, n_threads=get_num_threads())


class MatMul(Function):
    node_name = "MmBackward"

    @staticmethod
    def forward(ctx, a, b):
        if np.ndim(a) == 0 or np.ndim(b) == 0:
            raise RuntimeError("both arguments to matmul need to be at least 1D, but they are "
                               f"{np.ndim(a)}D and {np.ndim(b)}D")
        na, nb = ctx.needs_input_grad
        ctx.save_for_backward(a if nb else None, b if na else None)
        ctx.shapes = (shape_of(a), shape_of(b))
        if _blas_ready(a, b) and a.shape[-1] == b.shape[-2]:
            return _gemm(a, b)
        try:
            return np.asarray(np.matmul(a, b))
        except ValueError:
            error = matmul_shape_error(np.shape(a), np.shape(b))
            if error is None:
                raise
            raise error from None

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
            ga = unbroadcast(g2 @ swap_last_two(b2), a2_shape).reshape(sa)
        if nb:
            a2 = a.reshape(a2_shape)
            gb = unbroadcast(swap_last_two(a2) @ g2, b2_shape).reshape(sb)
        return ga, gb

    backward_graph = backward


def _einsum(equation, *operands):
    if any(is_tensor(o) for o in operands):
        return Einsum.apply(*operands, equation=equation)
    return np.einsum(equation, *operands, optimize=len(operands) > 2)


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
                gi = broadcast_to(gi, shape)
            elif tuple(gi.shape) != tuple(shape):
                gi = unbroadcast(gi, shape)
            grads.append(gi)
        return tuple(grads)

    backward_graph = backward
