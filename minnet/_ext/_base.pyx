"""The shared base of minnet._ext (declared in _base.pxd): the thread policy and its test
hook, the determinism flag, and the argument checks of every kernel wrapper.

The checks are O(1) (type, dtype, shape, contiguity), read through the NumPy C API for the
usual case: a kernel called directly still cannot read out of bounds.  Data scans (label
ranges, finiteness) are not here: they happen once, at the public boundary above.
``cpdef``, so the kernel modules call them as C functions."""
cimport numpy as cnp

import numpy as np

cnp.import_array()

cdef Py_ssize_t _parallel_min = PARALLEL_MIN

# Off by default: the fixed split re-packs the shared operand once per block, which made the
# MLP workload's Dense GEMMs slower at one thread (benchmarks/bench_training.py).
# mn.config.set_deterministic(True) turns it on.
cdef bint _deterministic = False


cdef Py_ssize_t parallel_min() noexcept nogil:
    return _parallel_min


def set_parallel_min(n):
    """Set the element count below which every kernel runs in one thread; returns the old
    value (a test hook: 0 gives thread teams even on tiny arrays)."""
    global _parallel_min
    old = _parallel_min
    _parallel_min = int(n)
    return old


cdef bint deterministic_mode() noexcept nogil:
    return _deterministic


def set_deterministic(bint flag):
    """Split GEMMs by shape only (bit-identical for any thread count) when ``flag`` is true;
    else by the thread count (one BLAS call at one thread), the faster default."""
    global _deterministic
    _deterministic = flag


def is_deterministic():
    return _deterministic


cpdef object check_array(object a, object name, object dtype=None, object shape=None,
                         int ndim=-1, bint contiguous=True):
    """``a`` itself when it is a float32/float64 ndarray (of ``dtype``, ``shape`` and ``ndim``
    dimensions when given; C-contiguous unless ``contiguous=False``), else a TypeError or
    ValueError naming ``name``, what was expected and what was received.  It never copies:
    converting is the public op's job."""
    cdef int typenum
    if cnp.PyArray_Check(a) and (not contiguous or cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray> a)):
        # the usual case, read through the NumPy C API (benchmarks/bench_autograd.py, mlp100)
        typenum = cnp.PyArray_TYPE(<cnp.ndarray> a)
        if (typenum == cnp.NPY_FLOAT32 or typenum == cnp.NPY_FLOAT64) and \
                (ndim < 0 or cnp.PyArray_NDIM(<cnp.ndarray> a) == ndim) and \
                (dtype is None or (typenum == (<cnp.dtype> dtype).type_num
                                   if isinstance(dtype, cnp.dtype) else a.dtype == dtype)) and \
                (shape is None or a.shape == shape):
            return a
    if not isinstance(a, np.ndarray):
        raise TypeError(f"Invalid argument `{name}`: expected a numpy.ndarray. "
                        f"Received: {name} of type {type(a).__name__}")
    if a.dtype != np.float32 and a.dtype != np.float64:
        raise TypeError(f"Invalid argument `{name}`: expected dtype float32 or float64. "
                        f"Received: {name}.dtype={a.dtype}")
    if dtype is not None and a.dtype != dtype:
        raise TypeError(f"Invalid argument `{name}`: expected dtype {np.dtype(dtype)} "
                        f"(as the other arrays). Received: {name}.dtype={a.dtype}")
    if ndim >= 0 and a.ndim != ndim:
        raise ValueError(f"Invalid argument `{name}`: expected a {ndim}-D array. "
                         f"Received: {name}.shape={a.shape}")
    if shape is not None and a.shape != shape:
        raise ValueError(f"Invalid argument `{name}`: expected shape {shape}. "
                         f"Received: {name}.shape={a.shape}")
    raise ValueError(f"Invalid argument `{name}`: expected a C-contiguous array. "
                     f"Received a non-contiguous array of shape {a.shape}")


cpdef object check_typed(object a, object name, object dtype, object shape):
    """``a`` itself when it is a C-contiguous ``dtype`` array of ``shape`` (any dtype: masks,
    indices), else a ValueError naming ``name``."""
    if not isinstance(a, np.ndarray) or a.dtype != dtype or a.shape != shape \
            or not a.flags.c_contiguous:
        raise ValueError(f"Invalid argument `{name}`: expected a C-contiguous {np.dtype(dtype).name} "
                         f"array of shape {shape}. Received: "
                         + (f"shape={a.shape}, dtype={a.dtype}" if isinstance(a, np.ndarray)
                            else type(a).__name__))
    return a


cpdef object output_like(object out, object like):
    """``out`` checked to match ``like`` (and writeable), or a new empty array like it."""
    if out is None:    # `like` is C-contiguous: an empty array of its shape and dtype
        return cnp.PyArray_EMPTY(cnp.PyArray_NDIM(<cnp.ndarray> like),
                                 cnp.PyArray_DIMS(<cnp.ndarray> like),
                                 cnp.PyArray_TYPE(<cnp.ndarray> like), 0)
    check_array(out, "out", like.dtype, like.shape)
    return check_writeable(out, "out")


cpdef object check_writeable(object a, object name):
    """``a`` itself when it is a writeable ndarray (checked already by ``check_array``), else
    a ValueError naming ``name``: a kernel that writes through ``a``'s pointer needs it."""
    if not cnp.PyArray_ISWRITEABLE(<cnp.ndarray> a):
        raise ValueError(f"Invalid argument `{name}`: expected a writeable array. "
                         f"Received a read-only array")
    return a


cpdef int check_threads(object n_threads) except -1:
    """``n_threads`` as a C int, or a ValueError unless it is an int >= 1."""
    if isinstance(n_threads, bool) or not isinstance(n_threads, (int, np.integer)) or n_threads < 1:
        raise ValueError(f"Invalid value for argument `n_threads`: expected an int >= 1. "
                         f"Received: n_threads={n_threads!r}")
    return n_threads


cpdef object as_rows(object a, object name):
    check_array(a, name)
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
    (benchmarks/bench_autograd.py, the activation layer workloads).  The float32 C loops
    read only its first element, once (``MINNET_FOR_GRAD`` in ``_base.h``); the float64
    Cython loops read the block.  The kernels do the same arithmetic either way.
    """
    if isinstance(grad, np.ndarray) and grad.dtype == like.dtype and grad.shape == like.shape \
            and broadcast_value(grad):
        return np.full(min(size_of(grad), <Py_ssize_t> BLOCK), grad[(0,) * grad.ndim],
                       dtype=grad.dtype), True
    check_array(grad, "grad", like.dtype, like.shape)
    return grad, False
