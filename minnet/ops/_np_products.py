"""``keras.ops`` products and other multi-operand NumPy ops: matmul, dot, tensordot, einsum,
inner, outer, vdot, kron, cross, correlate, corrcoef, diff, trapezoid.

All are compositions of minnet's differentiable ``matmul``/``einsum``/indexing, so their
gradients (and second derivatives) come from the autograd.
"""
import numpy as np

from minnet._checks import matmul_shape_error
from minnet.autograd import Tensor, cat, einsum as _einsum, stack

from ._dispatch import cast_to, keras_op, norm_axis, promote, to_float, wrap

__all__ = ["matmul", "dot", "tensordot", "einsum", "inner", "outer", "vdot", "kron", "cross", "correlate",
           "corrcoef", "diff", "trapezoid"]


def _pair(x1, x2):
    dtype = promote(x1, x2)
    return cast_to(x1, dtype), cast_to(x2, dtype)


def _int_product(fn, a, b, int8_to_int32=False):
    """Integer/bool products as Keras: bool stays bool (any true term); ``matmul`` of int8
    gives int32."""
    if a.dtype == bool:
        return wrap(fn(a.data.astype(np.int32), b.data.astype(np.int32)) != 0)
    out_dtype = np.int32 if int8_to_int32 and a.dtype.name == "int8" else a.dtype
    return wrap(fn(a.data.astype(out_dtype), b.data.astype(out_dtype)).astype(out_dtype))


@keras_op("x1", "x2")
def matmul(x1, x2):
    """Matrix product with NumPy's rules (1-D operands, batch broadcasting)."""
    a, b = _pair(x1, x2)
    if a.dtype.kind != "f":
        error = matmul_shape_error(a.shape, b.shape)
        if error is not None:
            raise error
        return _int_product(np.matmul, a, b, int8_to_int32=x1.dtype == x2.dtype == np.int8)
    return a @ b


@keras_op("x1", "x2")
def dot(x1, x2):
    """NumPy's ``dot``: scalars multiply, 1-D/2-D as matmul, N-D contracts the last axis of
    ``x1`` with the second-to-last of ``x2``."""
    a, b = _pair(x1, x2)
    if a.dtype.kind != "f":
        return _int_product(np.dot, a, b)
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    if b.ndim <= 2:
        return a @ b
    return tensordot(a, b, axes=([a.ndim - 1], [b.ndim - 2]))


_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


@keras_op("x1", "x2")
def tensordot(x1, x2, axes=2):
    a, b = _pair(x1, x2)
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        axes_a, axes_b = list(range(a.ndim - n, a.ndim)), list(range(n))
    else:
        axes_a, axes_b = axes
        axes_a = [axes_a] if isinstance(axes_a, (int, np.integer)) else list(axes_a)
        axes_b = [axes_b] if isinstance(axes_b, (int, np.integer)) else list(axes_b)
    axes_a = [norm_axis(v, a.ndim) for v in axes_a]
    axes_b = [norm_axis(v, b.ndim) for v in axes_b]
    if a.dtype.kind != "f":
        return wrap(np.tensordot(a.data, b.data, (axes_a, axes_b)))
    sa = list(_LETTERS[:a.ndim])
    sb = list(_LETTERS[a.ndim:a.ndim + b.ndim])
    for i, j in zip(axes_a, axes_b):
        sb[j] = sa[i]
    out = [c for i, c in enumerate(sa) if i not in axes_a] + [c for j, c in enumerate(sb) if j not in axes_b]
    return _einsum(f"{''.join(sa)},{''.join(sb)}->{''.join(out)}", a, b)


@keras_op("*operands")
def einsum(subscripts, *operands, **kwargs):
    """Einstein summation (``"ij,jk->ik"``), differentiable in every operand."""
    dtype = promote(*operands)
    ops_ = [cast_to(o, dtype) for o in operands]
    if dtype.kind != "f":
        out = np.einsum(subscripts, *[o.data for o in ops_])
        if dtype.name in ("int8", "uint8", "int16", "bool"):
            out = out.astype(np.int32)
        return wrap(out)
    return _einsum(subscripts.replace(" ", ""), *ops_)


@keras_op("x1", "x2")
def inner(x1, x2):
    a, b = _pair(x1, x2)
    if a.dtype.kind != "f":
        return _int_product(np.inner, a, b)
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    return tensordot(a, b, axes=([a.ndim - 1], [b.ndim - 1]))


@keras_op("x1", "x2")
def outer(x1, x2):
    a, b = _pair(x1, x2)
    if a.dtype.kind != "f":
        return _int_product(np.outer, a, b)
    return a.reshape(-1, 1) * b.reshape(1, -1)


@keras_op("x1", "x2")
def vdot(x1, x2):
    a, b = _pair(x1, x2)
    return (a.reshape(-1) * b.reshape(-1)).sum() if a.dtype.kind == "f" else wrap(np.vdot(a.data, b.data))


@keras_op("x1", "x2")
def kron(x1, x2):
    a, b = _pair(x1, x2)
    if a.dtype.kind != "f":
        return _int_product(np.kron, a, b)
    nd = max(a.ndim, b.ndim)
    a = a.reshape(*((1,) * (nd - a.ndim) + tuple(a.shape)))
    b = b.reshape(*((1,) * (nd - b.ndim) + tuple(b.shape)))
    shape_a = [s for pair in zip(a.shape, [1] * nd) for s in pair]
    shape_b = [s for pair in zip([1] * nd, b.shape) for s in pair]
    out = a.reshape(*shape_a) * b.reshape(*shape_b)
    return out.reshape(*[sa * sb for sa, sb in zip(a.shape, b.shape)])


@keras_op("x1", "x2")
def cross(x1, x2, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """Cross product of 3-vectors (2-vectors are padded with a zero z)."""
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = _pair(x1, x2)
    a = a.permute(*[d for d in range(a.ndim) if d != norm_axis(axisa, a.ndim)], norm_axis(axisa, a.ndim))
    b = b.permute(*[d for d in range(b.ndim) if d != norm_axis(axisb, b.ndim)], norm_axis(axisb, b.ndim))
    if a.dtype.kind != "f":
        return wrap(np.moveaxis(np.cross(a.data, b.data), -1, axisc) if a.shape[-1] == 3 == b.shape[-1]
                    else np.cross(a.data, b.data))
    two_d = a.shape[-1] == 2 and b.shape[-1] == 2

    def pad3(t):
        if t.shape[-1] == 3:
            return t
        return cat([t, Tensor(np.zeros(t.shape[:-1] + (1,), t.dtype))], -1)

    a, b = pad3(a), pad3(b)
    a0, a1, a2 = (a[..., i] for i in range(3))
    b0, b1, b2 = (b[..., i] for i in range(3))
    if two_d:
        return a0 * b1 - a1 * b0
    out = stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], -1)
    axisc = norm_axis(axisc, out.ndim)
    order = list(range(out.ndim - 1))
    order.insert(axisc, out.ndim - 1)
    return out.permute(*order) if out.ndim > 1 else out


@keras_op("x1", "x2")
def correlate(x1, x2, mode="valid"):
    """1-D cross-correlation as NumPy's (``mode`` "valid", "same" or "full")."""
    if mode not in ("valid", "same", "full"):
        raise ValueError(f"Invalid argument `mode`: expected 'valid', 'same' or 'full'. Received: mode={mode!r}")
    a, b = _pair(to_float(x1), to_float(x2))
    n, m = a.shape[0], b.shape[0]
    if n < m:
        return correlate(b, a, mode).flip(0)
    pad_total = {"valid": 0, "same": m - 1, "full": 2 * (m - 1)}[mode]
    left = pad_total // 2 if mode == "same" else pad_total // 2 if mode == "full" else 0
    if mode == "same":
        left = (m - 1) // 2 if m % 2 else m // 2
    padded = cat([Tensor(np.zeros(left, a.dtype)), a, Tensor(np.zeros(pad_total - left, a.dtype))], 0)
    length = padded.shape[0] - m + 1
    windows = padded[np.arange(length)[:, None] + np.arange(m)[None, :]]
    return windows @ b


@keras_op("x")
def corrcoef(x):
    x = to_float(x)
    x = x.reshape(1, -1) if x.ndim == 1 else x
    centred = x - x.mean(axis=1, keepdims=True)
    cov = centred @ centred.permute(1, 0)
    d = cov[np.arange(cov.shape[0]), np.arange(cov.shape[0])].sqrt()
    out = cov / (d.reshape(-1, 1) * d.reshape(1, -1))
    return out.clip(-1.0, 1.0).reshape(()) if out.shape == (1, 1) else out.clip(-1.0, 1.0)


@keras_op("a")
def diff(a, n=1, axis=-1):
    axis = norm_axis(axis, a.ndim)
    out = a
    lead = (slice(None),) * axis
    for _ in range(int(n)):
        hi, lo = out[lead + (slice(1, None),)], out[lead + (slice(None, -1),)]
        out = hi - lo if out.dtype != bool else wrap(hi.data != lo.data)
    return out


@keras_op("y", "x")
def trapezoid(y, x=None, dx=1.0, axis=-1):
    y = to_float(y)
    axis = norm_axis(axis, y.ndim)
    lead = (slice(None),) * axis
    avg = (y[lead + (slice(1, None),)] + y[lead + (slice(None, -1),)]) * 0.5
    if x is None:
        return (avg * dx).sum(axis=axis)
    d = diff(cast_to(x, y.dtype), 1, -1 if x.ndim == 1 else axis)
    if x.ndim == 1 and y.ndim > 1:
        d = d.reshape(*[d.shape[0] if i == axis else 1 for i in range(y.ndim)])
    return (avg * d).sum(axis=axis)
