"""Argument handling shared by the functional ops."""
import numpy as np

from minnet.autograd import Tensor

# dtype objects, not the scalar types: `dtype in (np.float32, np.float64)` converts the
# types on every call (benchmarks/bench_autograd.py, mlp100)
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def as_float_input(x, name="x"):
    """A float Tensor stays as it is (gradients flow); anything else becomes a float ndarray.

    ndarrays keep float32/float64; Python floats and lists become float32 (minnet's
    default, as ``mn.tensor``); integers, bools and float16 become float32.
    """
    if isinstance(x, Tensor):
        if x.data.dtype in _FLOATS:
            return x
        x = x.data
    if not isinstance(x, np.ndarray):
        try:
            x = np.asarray(x)
        except Exception as exc:
            raise TypeError(f"Invalid argument `{name}`: expected a Tensor or array-like. "
                            f"Received: {type(x).__name__}") from exc
        if x.dtype == np.float64:
            x = x.astype(np.float32)        # Python floats/lists: minnet's default dtype
    if x.dtype in (np.float32, np.float64):
        return x
    if x.dtype.kind not in "iub" and x.dtype != np.float16:
        raise TypeError(f"Invalid argument `{name}`: expected a real numeric array. "
                        f"Received: dtype={x.dtype}")
    return x.astype(np.float32)
