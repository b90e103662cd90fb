"""Elementwise operations as Functions: arithmetic (``+ - * / **``, neg, maximum, minimum),
elementwise math (exp, expm1, log, log1p, sqrt, sin, cos, erf, abs, sign, floor, ceil,
round, clamp), clone and cast.

Each backward is ``g`` times the local derivative, summed back over broadcast axes with
``unbroadcast``; the math is in ``docs/math/autograd_ops.md``.
"""
import math

import numpy as np
from scipy import special

from .function import Function
from .indexing_ops import where
from .op_helpers import cos, exp, log, raw, shape_of, sin, unbroadcast, zeros_like

__all__ = ["Add", "Sub", "Mul", "Div", "Neg", "Pow", "Maximum", "Minimum", "Exp", "Expm1", "Log",
           "Log1p", "Sqrt", "Sin", "Cos", "Erf", "Abs", "Sign", "Floor", "Ceil", "Round", "Clamp",
           "Clone", "Cast"]


# --------------------------------------------------------------------------- arithmetic


class Add(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.shapes = (shape_of(a), shape_of(b))
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
        ctx.shapes = (shape_of(a), shape_of(b))
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
        ctx.shapes = (shape_of(a), shape_of(b))
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
        ctx.shapes = (shape_of(a), shape_of(b))
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
        ctx.shapes = (shape_of(a), shape_of(b))
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
            positive = raw(a) > 0
            with np.errstate(divide="ignore", invalid="ignore"):
                log_a = where(positive, log(where(positive, a, 1)), 0)
            gb = unbroadcast(g * y * log_a, sb)
        return ga, gb

    backward_graph = backward


class Maximum(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.shapes = (shape_of(a), shape_of(b))
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
        ctx.shapes = (shape_of(a), shape_of(b))
        ra, rb = np.asarray(a), np.asarray(b)
        ctx.weight = (ra < rb) + 0.5 * (ra == rb)
        return np.minimum(a, b)

# --------------------------------------------------------------------------- elementwise math


class _Elementwise(Function):
    """``y = function(x)``; backward ``g * f'(x)`` written by ``grad(g, saved)`` from the
    input (``saves_output = False``) or, where the derivative is a function of it, the output."""

    function = None
    saves_output = False

    @classmethod
    def forward(cls, ctx, a):
        y = cls.function(a)
        ctx.save_for_backward(y if cls.saves_output else a)
        return y

    @classmethod
    def backward(cls, ctx, g):
        (saved,) = ctx.saved_tensors
        return cls.grad(g, saved)

    @classmethod
    def backward_graph(cls, ctx, g):
        return cls.backward(ctx, g)


class Exp(_Elementwise):
    function, saves_output = np.exp, True

    @staticmethod
    def grad(g, y):
        return g * y


class Expm1(_Elementwise):
    function, saves_output = np.expm1, True

    @staticmethod
    def grad(g, y):
        return g * (y + 1)


class Log(_Elementwise):
    function = np.log

    @staticmethod
    def grad(g, a):
        return g / a


class Log1p(_Elementwise):
    function = np.log1p

    @staticmethod
    def grad(g, a):
        return g / (a + 1)


class Sqrt(_Elementwise):
    function, saves_output = np.sqrt, True

    @staticmethod
    def grad(g, y):
        return g / (y * 2)


class Sin(_Elementwise):
    function = np.sin

    @staticmethod
    def grad(g, a):
        return g * cos(a)


class Cos(_Elementwise):
    function = np.cos

    @staticmethod
    def grad(g, a):
        return -g * sin(a)


class Erf(_Elementwise):
    """``erf(x)`` (SciPy's); backward ``g * 2/sqrt(pi) * exp(-x**2)``, itself recorded."""

    function = special.erf

    @staticmethod
    def grad(g, a):
        return g * (exp(-(a * a)) * _TWO_OVER_SQRT_PI)


_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


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
        return zeros_like(g)

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
