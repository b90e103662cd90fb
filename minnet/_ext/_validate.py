"""The O(1) argument checks every kernel wrapper of ``_ext`` shares (type, dtype, shape,
contiguity): a kernel called directly still cannot read out of bounds. Data scans (label
ranges, finiteness) are not here: they happen once, at the public boundary above."""
import numpy as np

__all__ = ["check_array"]


def check_array(a, name, dtype=None, shape=None, contiguous=True):
    """``a`` as a float32/float64 ndarray (C-contiguous unless ``contiguous=False``), or a
    TypeError/ValueError naming ``name``, what was expected and what was received."""
    if not isinstance(a, np.ndarray):
        raise TypeError(f"Invalid argument `{name}`: expected a numpy.ndarray. "
                        f"Received: {name} of type {type(a).__name__}")
    if a.dtype != np.float32 and a.dtype != np.float64:
        raise TypeError(f"Invalid argument `{name}`: expected dtype float32 or float64. "
                        f"Received: {name}.dtype={a.dtype}")
    if dtype is not None and a.dtype != dtype:
        raise TypeError(f"Invalid argument `{name}`: expected dtype {np.dtype(dtype)} "
                        f"(as the other arrays). Received: {name}.dtype={a.dtype}")
    if shape is not None and a.shape != shape:
        raise ValueError(f"Invalid argument `{name}`: expected shape {shape}. "
                         f"Received: {name}.shape={a.shape}")
    if contiguous and not a.flags.c_contiguous:
        raise ValueError(f"Invalid argument `{name}`: expected a C-contiguous array. "
                         f"Received a non-contiguous array of shape {a.shape}")
    return a
