"""The checks of the elementwise and row kernels' Python wrappers (``_activations``,
``_unary``, ``_softmax``): O(1) reads of dtype, shape and contiguity through the NumPy C
API for the usual case, the shared ``_validate.check_array`` for the error.  ``cpdef`` and
declared in ``_elementwise.pxd``, so the kernel modules call them as C functions."""
cimport numpy as cnp

import numpy as np

from minnet._ext._validate import check_array

cnp.import_array()


cpdef object checked(object a, object name, object dtype=None, object shape=None):
    """``a`` as a C-contiguous float32/float64 ndarray, or a TypeError/ValueError naming it
    (``_validate.check_array``, after a fast path for the usual case)."""
    cdef int typenum
    if cnp.PyArray_Check(a) and cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray> a):
        # the usual case, read through the NumPy C API (benchmarks/bench_autograd.py, mlp100)
        typenum = cnp.PyArray_TYPE(<cnp.ndarray> a)
        if (typenum == cnp.NPY_FLOAT32 or typenum == cnp.NPY_FLOAT64) and \
                (dtype is None or a.dtype is dtype) and (shape is None or a.shape == shape):
            return a
    return check_array(a, name, dtype, shape)     # the shared checks raise the error


cpdef object output_like(object out, object like):
    """``out`` checked to match ``like`` (and writeable), or a new empty array like it."""
    if out is None:    # `like` is C-contiguous: an empty array of its shape and dtype
        return cnp.PyArray_EMPTY(cnp.PyArray_NDIM(<cnp.ndarray> like),
                                 cnp.PyArray_DIMS(<cnp.ndarray> like),
                                 cnp.PyArray_TYPE(<cnp.ndarray> like), 0)
    checked(out, "out", like.dtype, like.shape)
    if not out.flags.writeable:
        raise ValueError("Invalid argument `out`: expected a writeable array. "
                         "Received a read-only array")
    return out


cpdef int thread_count(object n_threads) except -1:
    n = int(n_threads)
    if n < 1:
        raise ValueError(f"Invalid argument `n_threads`: expected an int >= 1. "
                         f"Received: n_threads={n}")
    return n


cpdef object as_rows(object a, object name):
    checked(a, name)
    if a.ndim != 2:
        raise ValueError(f"Invalid argument `{name}`: expected a 2-D (rows, cols) array. "
                         f"Received: {name}.shape={a.shape}")
    return a


cpdef bint broadcast_value(object a) except -1:
    """True for an array of two or more elements that are one value (every stride 0)."""
    cdef int d
    cdef cnp.ndarray arr = <cnp.ndarray> a
    if cnp.PyArray_SIZE(arr) < 2:
        return False
    for d in range(cnp.PyArray_NDIM(arr)):
        if cnp.PyArray_STRIDES(arr)[d] != 0:
            return False
    return True


cpdef tuple grad_operand(object grad, object like):
    """``(array, grad_block)`` for a backward kernel.

    ``grad`` itself (checked to be C-contiguous, of ``like``'s shape and dtype), or, when
    ``grad`` is one value broadcast to that shape (every stride 0: what ``.sum().backward()``
    sends), a block of ``BLOCK`` copies of the value that every block of the kernel reads
    and ``grad_block=True``: no full-size copy of the gradient, one pass fewer over memory
    (benchmarks/bench_autograd.py, the activation layer workloads).  The kernels do the same
    arithmetic either way.
    """
    if isinstance(grad, np.ndarray) and grad.dtype == like.dtype and grad.shape == like.shape \
            and broadcast_value(grad):
        return np.full(min(size_of(grad), <Py_ssize_t> BLOCK), grad[(0,) * grad.ndim],
                       dtype=grad.dtype), True
    checked(grad, "grad", like.dtype, like.shape)
    return grad, False
