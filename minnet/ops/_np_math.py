"""``keras.ops`` elementwise math: arithmetic, powers and logs, trigonometry, rounding,
comparisons, logical and bitwise ops.

Float-valued ops (``exp``, ``sqrt``, ``sin``...) compute integer and bool inputs in floatx,
as Keras does; binary ops promote with Keras's rules (``promote``). Every op with a
nonzero derivative records it; comparisons, rounding and bitwise ops are constant.
"""
import math

import numpy as np

from minnet import config
from minnet.autograd import Tensor, where as _where
from minnet.autograd.elementwise_ops import Erf

from . import _elementwise as E
from ._dispatch import binary, cast_to, convert, keras_op, promote, to_float, wrap

__all__ = ["add", "subtract", "multiply", "divide", "true_divide", "divide_no_nan", "floor_divide", "mod",
           "fmod", "power", "negative", "abs", "absolute", "fabs", "square", "sqrt", "rsqrt", "cbrt",
           "reciprocal", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "logaddexp", "logaddexp2",
           "sin", "cos", "tan", "arcsin", "arccos", "arctan", "arctan2", "sinh", "cosh", "tanh", "arcsinh",
           "arccosh", "arctanh", "hypot", "deg2rad", "rad2deg", "sinc", "erf", "erfc", "erfinv", "i0",
           "sign", "signbit", "floor", "ceil", "round", "trunc", "maximum", "minimum", "fmax", "fmin",
           "clip", "heaviside", "ldexp", "nextafter", "gcd", "lcm", "nan_to_num",
           "equal", "not_equal", "greater", "greater_equal", "less", "less_equal", "isclose", "allclose",
           "isnan", "isinf", "isfinite", "isneginf", "isposinf", "isreal", "logical_and", "logical_or",
           "logical_xor", "logical_not", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
           "bitwise_invert", "bitwise_left_shift", "bitwise_right_shift", "left_shift", "right_shift",
           "real", "imag", "conj", "conjugate", "angle", "where", "copy"]


# ----------------------------------------------------------------------------- arithmetic


@keras_op("x1", "x2", weak=True)
def add(x1, x2):
    a, b = binary(x1, x2)
    return a + b


@keras_op("x1", "x2", weak=True)
def subtract(x1, x2):
    a, b = binary(x1, x2)
    if a.dtype == bool:
        raise TypeError("subtract: bool tensors cannot be subtracted; use logical_xor.")
    return a - b


@keras_op("x1", "x2", weak=True)
def multiply(x1, x2):
    a, b = binary(x1, x2)
    return a * b


def _float_binary(x1, x2):
    dtype = promote(x1, x2, float)
    a, b = binary(x1, x2)
    return cast_to(a, dtype), cast_to(b, dtype)


@keras_op("x1", "x2", weak=True)
def divide(x1, x2):
    """``x1 / x2`` (integers divide in floatx, as Keras)."""
    a, b = _float_binary(x1, x2)
    return a / b


true_divide = divide


@keras_op("x1", "x2", weak=True)
def divide_no_nan(x1, x2):
    """``x1 / x2``, and 0 where ``x2 == 0``."""
    a, b = _float_binary(x1, x2)
    zero = b.data == 0
    safe = _where(Tensor(zero), Tensor(np.ones((), b.dtype)), b)
    return _where(Tensor(zero), Tensor(np.zeros((), a.dtype)), a / safe)


@keras_op("x1", "x2", weak=True)
def floor_divide(x1, x2):
    a, b = binary(x1, x2)
    if a.dtype == bool:
        a, b = a.astype(np.int32), b.astype(np.int32)
    return wrap(np.floor_divide(a.data, b.data))


@keras_op("x1", "x2", weak=True)
def mod(x1, x2):
    """``x1 - floor(x1 / x2) * x2`` (sign of ``x2``, as Python's ``%``)."""
    a, b = binary(x1, x2)
    if a.dtype == bool:
        a, b = a.astype(np.int32), b.astype(np.int32)
    if a.dtype.kind != "f":
        return wrap(np.mod(a.data, b.data))
    return a - Tensor(np.floor(a.data / b.data)) * b


@keras_op("x1", "x2", weak=True)
def fmod(x1, x2):
    """C's ``fmod``: the remainder with the sign of ``x1``."""
    a, b = binary(x1, x2)
    if a.dtype == bool:
        a, b = a.astype(np.int32), b.astype(np.int32)
    if a.dtype.kind != "f":
        return wrap(np.fmod(a.data, b.data))
    return a - Tensor(np.trunc(a.data / b.data)) * b


@keras_op("x1", "x2", weak=True)
def power(x1, x2):
    a, b = binary(x1, x2)
    if a.dtype == bool:
        a, b = a.astype(np.int32), b.astype(np.int32)
    if a.dtype.kind != "f":
        return wrap(np.power(a.data, b.data))
    if not (isinstance(x2, Tensor) and x2.requires_grad) and isinstance(x2, (int, float)):
        return a ** float(x2)
    return a ** b


@keras_op("x")
def negative(x):
    return -x


@keras_op("x")
def abs(x):
    return x.abs() if x.dtype != bool else x


absolute = abs


@keras_op("x")
def fabs(x):
    return to_float(x).abs()


@keras_op("x")
def square(x):
    if x.dtype == bool:
        x = x.astype(np.int32)
    return x * x if x.dtype.kind == "f" else wrap(np.square(x.data))


@keras_op("x")
def sqrt(x):
    return to_float(x).sqrt()


@keras_op("x")
def rsqrt(x):
    return to_float(x).rsqrt()


@keras_op("x")
def cbrt(x):
    return E.Cbrt.apply(to_float(x))


@keras_op("x")
def reciprocal(x):
    return to_float(x).reciprocal()


@keras_op("x")
def exp(x):
    return to_float(x).exp()


@keras_op("x")
def exp2(x):
    return (to_float(x) * math.log(2.0)).exp()


@keras_op("x")
def expm1(x):
    return to_float(x).expm1()


@keras_op("x")
def log(x):
    return to_float(x).log()


@keras_op("x")
def log2(x):
    return to_float(x).log() * (1.0 / math.log(2.0))


@keras_op("x")
def log10(x):
    return to_float(x).log() * (1.0 / math.log(10.0))


@keras_op("x")
def log1p(x):
    return to_float(x).log1p()


@keras_op("x1", "x2", weak=True)
def logaddexp(x1, x2):
    """``log(exp(x1) + exp(x2))``, stably: ``max + log1p(exp(-|x1 - x2|))``."""
    a, b = _float_binary(x1, x2)
    high = a.maximum(b)
    return high + (-(a - b).abs()).exp().log1p()


@keras_op("x1", "x2", weak=True)
def logaddexp2(x1, x2):
    a, b = _float_binary(x1, x2)
    ln2 = math.log(2.0)
    return logaddexp(a * ln2, b * ln2) * (1.0 / ln2)


@keras_op("x")
def sin(x):
    return to_float(x).sin()


@keras_op("x")
def cos(x):
    return to_float(x).cos()


def _unary_op(name, function):
    @keras_op("x")
    def op(x):
        return function.apply(to_float(x))

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"Elementwise ``{name}`` (integers in floatx), differentiable."
    return op


tan = _unary_op("tan", E.Tan)
arcsin = _unary_op("arcsin", E.Arcsin)
arccos = _unary_op("arccos", E.Arccos)
arctan = _unary_op("arctan", E.Arctan)
sinh = _unary_op("sinh", E.Sinh)
cosh = _unary_op("cosh", E.Cosh)
arcsinh = _unary_op("arcsinh", E.Arcsinh)
arccosh = _unary_op("arccosh", E.Arccosh)
arctanh = _unary_op("arctanh", E.Arctanh)
erfinv = _unary_op("erfinv", E.Erfinv)
i0 = _unary_op("i0", E.I0)
sinc = _unary_op("sinc", E.Sinc)


@keras_op("x")
def tanh(x):
    x = to_float(x)
    return x.astype(np.float32).tanh().astype(np.float16) if x.dtype == np.float16 else x.tanh()


@keras_op("x1", "x2", weak=True)
def arctan2(x1, x2):
    a, b = _float_binary(x1, x2)
    return E.Arctan2.apply(a, b)


@keras_op("x1", "x2", weak=True)
def hypot(x1, x2):
    a, b = _float_binary(x1, x2)
    return (a * a + b * b).sqrt()


@keras_op("x")
def deg2rad(x):
    return to_float(x) * (math.pi / 180.0)


@keras_op("x")
def rad2deg(x):
    return to_float(x) * (180.0 / math.pi)


@keras_op("x")
def erf(x):
    x = to_float(x)
    return cast_to(Erf.apply(x), x.dtype)


@keras_op("x")
def erfc(x):
    x = to_float(x)
    return cast_to(1.0 - Erf.apply(x), x.dtype)


# ----------------------------------------------------------------------------- rounding, sign


@keras_op("x")
def sign(x):
    if x.dtype == bool:
        return x
    return x.sign() if x.dtype.kind == "f" else wrap(np.sign(x.data))


@keras_op("x")
def signbit(x):
    return wrap(np.signbit(x.data))


@keras_op("x")
def floor(x):
    return to_float(x).floor()


@keras_op("x")
def ceil(x):
    return to_float(x).ceil()


@keras_op("x")
def round(x, decimals=0):
    """Round half to even (NumPy's and Keras's); integers unchanged unless ``decimals < 0``."""
    if x.dtype.kind != "f":
        return wrap(np.round(x.data, decimals).astype(x.dtype))
    if decimals == 0:
        return x.round()
    return x + Tensor(np.round(x.data, decimals) - x.data)


@keras_op("x")
def trunc(x):
    return E.Trunc.apply(x) if x.dtype.kind == "f" else x


# ----------------------------------------------------------------------------- extremes, clip


@keras_op("x1", "x2", weak=True)
def maximum(x1, x2):
    a, b = binary(x1, x2)
    return a.maximum(b) if a.dtype.kind == "f" else wrap(np.maximum(a.data, b.data))


@keras_op("x1", "x2", weak=True)
def minimum(x1, x2):
    a, b = binary(x1, x2)
    return a.minimum(b) if a.dtype.kind == "f" else wrap(np.minimum(a.data, b.data))


@keras_op("x1", "x2", weak=True)
def fmax(x1, x2):
    """``maximum`` that ignores NaN (the other value wins)."""
    a, b = binary(x1, x2)
    if a.dtype.kind != "f":
        return wrap(np.fmax(a.data, b.data))
    m = a.maximum(b)
    m = _where(Tensor(np.isnan(a.data)), b, m)
    return _where(Tensor(np.isnan(b.data)), a, m)


@keras_op("x1", "x2", weak=True)
def fmin(x1, x2):
    a, b = binary(x1, x2)
    if a.dtype.kind != "f":
        return wrap(np.fmin(a.data, b.data))
    m = a.minimum(b)
    m = _where(Tensor(np.isnan(a.data)), b, m)
    return _where(Tensor(np.isnan(b.data)), a, m)


@keras_op("x")
def clip(x, x_min, x_max):
    """``x`` limited to ``[x_min, x_max]`` (bool computes as int32); gradient 1 inside."""
    if x.dtype == bool:
        x = x.astype(np.int32)
    lo = x_min.data.item() if isinstance(x_min, Tensor) else x_min
    hi = x_max.data.item() if isinstance(x_max, Tensor) else x_max
    if x.dtype.kind != "f":
        return wrap(np.clip(x.data, lo, hi).astype(x.dtype))
    return x.clip(lo, hi)


@keras_op("x1", "x2", weak=True)
def heaviside(x1, x2):
    a, b = binary(x1, x2)
    if a.dtype == bool:
        return wrap(np.heaviside(a.data.astype(np.int8), b.data.astype(np.int8)).astype(bool))
    if a.dtype.kind != "f":
        a, b = a.astype(config.floatx()), b.astype(config.floatx())
    return wrap(np.heaviside(a.data, b.data).astype(a.dtype))


@keras_op("x1", "x2", weak=True)
def ldexp(x1, x2):
    """``x1 * 2**x2`` (``x2`` integer)."""
    a = x1 if isinstance(x1, Tensor) else Tensor(np.asarray(x1, dtype=config.floatx()))
    a = to_float(a)
    e = x2.data if isinstance(x2, Tensor) else np.asarray(x2)
    if e.dtype.kind not in "iub":
        raise TypeError(f"Invalid argument `x2`: expected an integer tensor. Received: dtype={e.dtype}")
    return a * Tensor(np.ldexp(np.ones((), a.dtype), e).astype(a.dtype))


@keras_op("x1", "x2", weak=True)
def nextafter(x1, x2):
    dtype = promote(x1, x2, float)
    a, b = (cast_to(t, dtype) for t in binary(x1, x2))
    return wrap(np.nextafter(a.data, b.data))


@keras_op("x1", "x2", weak=True)
def gcd(x1, x2):
    a, b = binary(x1, x2)
    return wrap(np.gcd(a.data, b.data))


@keras_op("x1", "x2", weak=True)
def lcm(x1, x2):
    a, b = binary(x1, x2)
    return wrap(np.lcm(a.data, b.data))


@keras_op("x")
def nan_to_num(x, nan=0.0, posinf=None, neginf=None):
    """NaN -> ``nan``, +inf -> ``posinf`` (default: the dtype's max), -inf -> ``neginf``."""
    if x.dtype.kind != "f":
        return x
    replaced = np.nan_to_num(x.data, nan=nan, posinf=posinf, neginf=neginf)
    keep = Tensor(np.isfinite(x.data))
    return _where(keep, x, Tensor(replaced.astype(x.dtype)))


# ----------------------------------------------------------------------------- comparisons


def _compare(name, ufunc):
    @keras_op("x1", "x2", weak=True)
    def op(x1, x2):
        a, b = binary(x1, x2)
        return wrap(ufunc(a.data, b.data))

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"Elementwise ``{name}`` (a bool tensor, no gradient)."
    return op


equal = _compare("equal", np.equal)
not_equal = _compare("not_equal", np.not_equal)
greater = _compare("greater", np.greater)
greater_equal = _compare("greater_equal", np.greater_equal)
less = _compare("less", np.less)
less_equal = _compare("less_equal", np.less_equal)
logical_and = _compare("logical_and", np.logical_and)
logical_or = _compare("logical_or", np.logical_or)
logical_xor = _compare("logical_xor", np.logical_xor)


@keras_op("x1", "x2", weak=True)
def isclose(x1, x2, rtol=1e-5, atol=1e-8, equal_nan=False):
    a, b = binary(x1, x2)
    return wrap(np.isclose(a.data, b.data, rtol=rtol, atol=atol, equal_nan=equal_nan))


@keras_op("x1", "x2", weak=True)
def allclose(x1, x2, rtol=1e-5, atol=1e-8, equal_nan=False):
    a, b = binary(x1, x2)
    return wrap(np.allclose(a.data, b.data, rtol=rtol, atol=atol, equal_nan=equal_nan))


def _predicate(name, ufunc):
    @keras_op("x")
    def op(x):
        return wrap(ufunc(x.data))

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"Elementwise ``{name}`` (a bool tensor)."
    return op


isnan = _predicate("isnan", np.isnan)
isinf = _predicate("isinf", np.isinf)
isfinite = _predicate("isfinite", np.isfinite)
isneginf = _predicate("isneginf", np.isneginf)
isposinf = _predicate("isposinf", np.isposinf)
isreal = _predicate("isreal", np.isreal)
logical_not = _predicate("logical_not", np.logical_not)


# ----------------------------------------------------------------------------- bitwise


def _bitwise(name, ufunc):
    @keras_op("x", "y", weak=True)
    def op(x, y):
        a, b = binary(x, y)
        return wrap(ufunc(a.data, b.data))

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"Elementwise ``{name}`` of integer/bool tensors."
    return op


bitwise_and = _bitwise("bitwise_and", np.bitwise_and)
bitwise_or = _bitwise("bitwise_or", np.bitwise_or)
bitwise_xor = _bitwise("bitwise_xor", np.bitwise_xor)
bitwise_left_shift = _bitwise("bitwise_left_shift", np.left_shift)
bitwise_right_shift = _bitwise("bitwise_right_shift", np.right_shift)
left_shift = _bitwise("left_shift", np.left_shift)
right_shift = _bitwise("right_shift", np.right_shift)


@keras_op("x")
def bitwise_invert(x):
    return wrap(np.invert(x.data))


bitwise_not = bitwise_invert


# ----------------------------------------------------------------------------- real-only complex API


@keras_op("x")
def real(x):
    """minnet tensors are real: ``x`` itself."""
    return x


@keras_op("x")
def imag(x):
    """minnet tensors are real: zeros."""
    return wrap(np.zeros_like(x.data))


@keras_op("x")
def conj(x):
    return x


conjugate = conj


@keras_op("x")
def angle(x):
    """The argument of a real number: 0 for x >= 0, pi for x < 0."""
    x = to_float(x)
    return wrap(np.angle(x.data).astype(x.dtype))


# ----------------------------------------------------------------------------- where, copy


@keras_op("condition", "x1", "x2", weak=True)
def where(condition, x1=None, x2=None):
    """``x1`` where ``condition`` else ``x2`` (differentiable in both); with neither given,
    the indices of the nonzero entries (``nonzero``)."""
    if (x1 is None) != (x2 is None):
        raise ValueError("Invalid arguments: give both `x1` and `x2`, or neither. "
                         f"Received: x1={'None' if x1 is None else 'a value'}, x2={'None' if x2 is None else 'a value'}")
    if x1 is None:
        return tuple(wrap(i.astype(np.int32)) for i in np.nonzero(convert(condition).data))
    a, b = binary(x1, x2)
    cond = convert(condition)
    cond = cond if cond.dtype == bool else Tensor(cond.data.astype(bool))
    if a.dtype.kind != "f":
        return wrap(np.where(cond.data, a.data, b.data))
    return _where(cond, a, b)


@keras_op("x")
def copy(x):
    return x.clone()

