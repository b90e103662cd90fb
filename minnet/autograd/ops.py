"""The Tensor operators (``+ - * / @ **``, sum, mean, reshape, exp, ...) as Functions.

Each op's backward is its vector-Jacobian product; when an operand was broadcast in the
forward, ``unbroadcast`` sums the gradient back to the operand's own shape.
"""
import numpy as np

from .function import Function


def unbroadcast(grad, shape):
    """Sum ``grad`` over the axes along which an operand of ``shape`` was broadcast."""
    if grad.shape == shape:
        return grad
    extra = grad.ndim - len(shape)
    if extra > 0:
        grad = grad.sum(axis=tuple(range(extra)))
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    if axes:
        grad = grad.sum(axis=axes, keepdims=True)
    return grad.reshape(shape)


def _shape(x):
    return np.shape(x)


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


class Neg(Function):
    @staticmethod
    def forward(ctx, a):
        return np.negative(a)

    @staticmethod
    def backward(ctx, g):
        return -g


class Pow(Function):
    @staticmethod
    def forward(ctx, a, b):
        y = np.power(a, b)
        ctx.save_for_backward(a, b, y)
        ctx.shapes = (_shape(a), _shape(b))
        return y

    @staticmethod
    def backward(ctx, g):
        a, b, y = ctx.saved_tensors
        sa, sb = ctx.shapes
        na, nb = ctx.needs_input_grad
        ga = gb = None
        if na:
            ga = unbroadcast(g * b * np.power(a, b - 1), sa)
        if nb:
            with np.errstate(divide="ignore", invalid="ignore"):
                log_a = np.where(a > 0, np.log(np.where(a > 0, a, 1)), 0)
            gb = unbroadcast(g * y * log_a, sb)
        return ga, gb


class MatMul(Function):
    node_name = "MmBackward"

    @staticmethod
    def forward(ctx, a, b):
        na, nb = ctx.needs_input_grad
        ctx.save_for_backward(a if nb else None, b if na else None)
        ctx.shapes = (_shape(a), _shape(b))
        return np.matmul(a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        sa, sb = ctx.shapes
        na, nb = ctx.needs_input_grad
        # Promote 1-D operands as matmul does, so one rule covers every case.
        ga = gb = None
        a2_shape = (1,) + sa if len(sa) == 1 else sa
        b2_shape = sb + (1,) if len(sb) == 1 else sb
        g2 = g
        if len(sb) == 1:
            g2 = np.expand_dims(g2, -1)
        if len(sa) == 1:
            g2 = np.expand_dims(g2, -2)
        if na:
            b2 = b.reshape(b2_shape)
            ga = unbroadcast(np.matmul(g2, np.swapaxes(b2, -1, -2)), a2_shape).reshape(sa)
        if nb:
            a2 = a.reshape(a2_shape)
            gb = unbroadcast(np.matmul(np.swapaxes(a2, -1, -2), g2), b2_shape).reshape(sb)
        return ga, gb


def _expand_reduced(g, shape, axis, keepdims):
    if axis is not None and not keepdims:
        axes = (axis,) if isinstance(axis, int) else tuple(axis)
        axes = tuple(a % len(shape) for a in axes)
        g = np.expand_dims(g, axes)
    elif axis is None and not keepdims:
        g = np.reshape(g, (1,) * len(shape))
    return np.broadcast_to(g, shape)


class Sum(Function):
    @staticmethod
    def forward(ctx, a, axis=None, keepdims=False):
        ctx.meta = (a.shape, axis, keepdims)
        return np.asarray(np.sum(a, axis=axis, keepdims=keepdims))

    @staticmethod
    def backward(ctx, g):
        shape, axis, keepdims = ctx.meta
        return _expand_reduced(g, shape, axis, keepdims)


class Mean(Function):
    @staticmethod
    def forward(ctx, a, axis=None, keepdims=False):
        ctx.meta = (a.shape, axis, keepdims)
        out = np.asarray(np.mean(a, axis=axis, keepdims=keepdims))
        ctx.count = a.size // max(out.size, 1) if a.size else 1
        return out

    @staticmethod
    def backward(ctx, g):
        shape, axis, keepdims = ctx.meta
        return _expand_reduced(g / ctx.count, shape, axis, keepdims)


class Max(Function):
    @staticmethod
    def forward(ctx, a, axis=None, keepdims=False):
        out = np.max(a, axis=axis, keepdims=True)
        ctx.save_for_backward(a, out)
        ctx.meta = (a.shape, axis, keepdims)
        return np.asarray(out if keepdims else (out.reshape(()) if axis is None else np.squeeze(out, axis=axis)))

    @staticmethod
    def backward(ctx, g):
        a, out = ctx.saved_tensors
        shape, axis, keepdims = ctx.meta
        mask = (a == out)
        # ties share the gradient evenly (as torch.amax)
        mask = mask / mask.sum(axis=axis, keepdims=True)
        return _expand_reduced(g, shape, axis, keepdims) * mask


class Reshape(Function):
    node_name = "ViewBackward"

    @staticmethod
    def forward(ctx, a, shape=()):
        ctx.in_shape = a.shape
        return np.reshape(a, shape)

    @staticmethod
    def backward(ctx, g):
        return np.reshape(g, ctx.in_shape)


class Transpose(Function):
    @staticmethod
    def forward(ctx, a, axes=None):
        ctx.axes = axes
        return np.transpose(a, axes)

    @staticmethod
    def backward(ctx, g):
        if ctx.axes is None:
            return np.transpose(g)
        return np.transpose(g, np.argsort(ctx.axes))


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


class Log(Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return np.log(a)

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return g / a


class Sqrt(Function):
    @staticmethod
    def forward(ctx, a):
        y = np.sqrt(a)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g / (2 * y)


class Abs(Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return np.abs(a)

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return g * np.sign(a)


class Clamp(Function):
    @staticmethod
    def forward(ctx, a, min=None, max=None):
        ctx.save_for_backward(a)
        ctx.bounds = (min, max)
        return np.clip(a, min, max)

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        lo, hi = ctx.bounds
        mask = np.ones(a.shape, dtype=bool)
        if lo is not None:
            mask &= a >= lo
        if hi is not None:
            mask &= a <= hi
        return g * mask


class Maximum(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        ctx.shapes = (_shape(a), _shape(b))
        return np.maximum(a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        sa, sb = ctx.shapes
        na, nb = ctx.needs_input_grad
        # as torch.maximum: ties split the gradient in half
        wa = (a > b) + 0.5 * (a == b)
        ga = unbroadcast(g * wa, sa) if na else None
        gb = unbroadcast(g * (1 - wa), sb) if nb else None
        return ga, gb


class Minimum(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        ctx.shapes = (_shape(a), _shape(b))
        return np.minimum(a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        sa, sb = ctx.shapes
        na, nb = ctx.needs_input_grad
        wa = (a < b) + 0.5 * (a == b)
        ga = unbroadcast(g * wa, sa) if na else None
        gb = unbroadcast(g * (1 - wa), sb) if nb else None
        return ga, gb


def _is_basic_index(key):
    keys = key if isinstance(key, tuple) else (key,)
    return all(k is None or k is Ellipsis or isinstance(k, (int, np.integer, slice)) for k in keys)


class Index(Function):
    @staticmethod
    def forward(ctx, a, key):
        ctx.meta = (a.shape, a.dtype, key)
        return np.asarray(a[key])

    @staticmethod
    def backward(ctx, g):
        shape, dtype, key = ctx.meta
        grad = np.zeros(shape, dtype=dtype)
        if _is_basic_index(key):
            grad[key] = g
        else:
            np.add.at(grad, key, g)      # repeated indices accumulate
        return grad, None


class Clone(Function):
    @staticmethod
    def forward(ctx, a):
        return a.copy()

    @staticmethod
    def backward(ctx, g):
        return g


class Cast(Function):
    node_name = "ToCopyBackward"

    @staticmethod
    def forward(ctx, a, dtype=None):
        ctx.src = a.dtype
        return a.astype(dtype)

    @staticmethod
    def backward(ctx, g):
        return g.astype(ctx.src)
