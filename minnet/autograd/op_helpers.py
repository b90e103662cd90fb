"""What every tensor-operation module shares: argument normalisers (``norm_dims``,
``norm_dim``), ``unbroadcast``, and the few array-or-Tensor functions that let one
backward body serve both passes.

The op modules (``elementwise_ops``, ``reduction_ops``, ``shape_ops``, ``indexing_ops``,
``linalg_ops``, ``activation_ops``) write each backward once, in operations NumPy arrays and
Tensors share (``g * b``, ``g.sum(axis=..., keepdims=True)``, ``g.reshape(shape)``) plus
functions like ``exp`` here or ``where`` in ``indexing_ops`` that call NumPy on an ndarray
and the recorded op on a Tensor.  On ndarrays the backward runs at NumPy speed; under
``create_graph=True`` the engine calls the same code with Tensors (``backward_graph =
backward``), so it is recorded and every op is twice differentiable.  When an operand was
broadcast in the forward, ``unbroadcast`` sums the gradient back to the operand's shape.
"""
import math

import numpy as np

__all__ = ["Tensor", "is_tensor", "raw", "shape_of", "norm_dims", "norm_dim", "unbroadcast",
           "zeros_like", "exp", "log", "sin", "cos", "absolute", "swap_last_two", "rows_along",
           "from_rows"]

# The Tensor class, bound at the bottom of tensor.py (op_helpers.Tensor = Tensor): it
# sits above these modules, which only need it to recognise and make Tensors.
Tensor = None


def is_tensor(x):
    """True for a minnet Tensor (an ndarray is not)."""
    return isinstance(x, Tensor)


def raw(x):
    """The ndarray behind a Tensor; anything else as it is."""
    return x.data if isinstance(x, Tensor) else x


def shape_of(x):
    """Shape of an ndarray, Tensor or Python number (``()``)."""
    if type(x) is np.ndarray:
        return x.shape
    if type(x) is float or type(x) is int:
        return ()
    return np.shape(raw(x))


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
    """One ``dim`` as a non-negative axis (same checks as ``norm_dims``)."""
    if type(dim) is int and -ndim <= dim < ndim:    # the usual case, without the tuple
        return dim % ndim
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


def zeros_like(g):
    """Zeros shaped like ``g``, a Tensor when ``g`` is one."""
    z = np.zeros(g.shape, dtype=g.dtype)
    return Tensor._make(z) if is_tensor(g) else z


# NumPy's function on an ndarray, the recorded Tensor method on a Tensor.


def exp(x):
    return x.exp() if is_tensor(x) else np.exp(x)


def log(x):
    return x.log() if is_tensor(x) else np.log(x)


def sin(x):
    return x.sin() if is_tensor(x) else np.sin(x)


def cos(x):
    return x.cos() if is_tensor(x) else np.cos(x)


def absolute(x):
    return x.abs() if is_tensor(x) else np.abs(x)


def swap_last_two(x):
    """The matrix transpose of the last two axes (``x.mT``)."""
    return x.transpose(-1, -2) if is_tensor(x) else np.swapaxes(x, -1, -2)


def rows_along(a, d):
    """``a`` with axis ``d`` moved last, as a C-contiguous ``(rows, n)`` array for the row
    kernels (no copy when ``d`` is already last and ``a`` contiguous), and the moved shape
    ``from_rows`` needs. Zero-size arrays keep their row count."""
    # d last (the usual case) moves nothing; np.moveaxis and np.prod would cost more than
    # a small softmax's kernel (benchmarks/bench_activations.py "softmax_64x10")
    moved = a if d == a.ndim - 1 else np.moveaxis(a, d, -1)
    shape = moved.shape
    return np.ascontiguousarray(moved).reshape(math.prod(shape[:-1]), shape[-1]), shape


def from_rows(rows, moved_shape, d):
    """Undo ``rows_along``: ``rows`` itself when it already has the moved shape and ``d``
    is last, else a view with the last axis moved back to ``d``."""
    if d == len(moved_shape) - 1:
        return rows if rows.shape == moved_shape else rows.reshape(moved_shape)
    return np.moveaxis(rows.reshape(moved_shape), -1, d)

