"""Result dtypes against Keras (on torch) for every dtype below 64 bits, as Keras's own
``NumpyDtypeTest`` does: unary ops over 7 dtypes, binary ops over the 49 pairs.
(64-bit inputs are the one documented difference: tests/ops/test_dispatch.py.)"""
import itertools

import numpy as np
import pytest

from minnet import ops

pytestmark = pytest.mark.filterwarnings("ignore:__array__ implementation:DeprecationWarning")  # inside Keras/torch


DTYPES = ["bool", "int8", "int16", "int32", "uint8", "float16", "float32"]
UNARY = ["abs", "negative", "square", "sqrt", "exp", "log", "sin", "tanh", "sign", "floor", "ceil", "round", "trunc",
         "reciprocal", "relu", "sigmoid", "softmax", "cumsum", "cumprod", "sum", "mean", "max", "min", "prod", "var",
         "std", "argmax", "all", "any", "transpose", "flip", "sort", "argsort", "expm1", "log1p", "arctan", "cbrt",
         "exp2", "log2", "isnan", "copy", "ravel", "count_nonzero", "median", "ptp", "nansum", "nanmean", "logsumexp",
         "fabs", "rsqrt", "sinh", "erf", "cosh", "deg2rad", "signbit", "nan_to_num", "tril", "trace", "diagonal",
         "real", "imag", "conj", "angle", "softplus", "gelu", "silu", "elu", "log_softmax", "relu6", "hard_sigmoid",
         "leaky_relu", "amax", "squeeze"]
BINARY = ["add", "subtract", "multiply", "divide", "power", "maximum", "minimum", "mod", "floor_divide", "matmul",
          "dot", "equal", "greater", "logical_and", "arctan2", "hypot", "logaddexp", "outer", "inner", "append",
          "fmax", "heaviside", "true_divide", "kron", "vdot"]


def _keras_dtype(keras, fn, *args):
    try:
        return str(keras.ops.convert_to_numpy(fn(*args)).dtype)
    except Exception:       # noqa: BLE001 - Keras refuses this dtype: nothing to compare
        return None


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("name", UNARY)
def test_unary_dtypes(keras, name):
    for dtype in DTYPES:
        x = (np.arange(6).reshape(2, 3) % 3).astype(dtype)
        expected = _keras_dtype(keras, getattr(keras.ops, name), x)
        if expected is not None:
            assert str(getattr(ops, name)(x).numpy().dtype) == expected, (name, dtype)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("name", BINARY)
def test_binary_dtypes(keras, name):
    for a, b in itertools.product(DTYPES, DTYPES):
        x, y = np.ones((3, 3), a), np.ones((3, 3), b)
        expected = _keras_dtype(keras, getattr(keras.ops, name), x, y)
        if expected is not None:
            assert str(getattr(ops, name)(x, y).numpy().dtype) == expected, (name, a, b)
