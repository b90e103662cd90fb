"""The shared base of minnet._ext, cimported by every kernel module (defined in _base.pyx):

* the thread policy: ``PARALLEL_MIN`` and ``team()`` (one test hook, ``set_parallel_min``);
* the elementwise blocks (``BLOCK``, ``n_blocks``, ``block_len``) and O(1) reads of an
  array through the NumPy C API (``data_ptr``, ``is_f32``, ``size_of``);
* one argument check, ``check_array(a, name, ...)``: the public functional ops convert
  what they are given (dtype, contiguity); the kernels below refuse what they cannot read;
* the determinism flag (``mn.config.set_deterministic``), which ``_blas.gemm_blocks`` and
  the recurrent kernels read.

The float math is in _fastmath.pxd/.h, the GEMMs in _blas.pxd.  Cimported, these are C
calls, which the small arrays of benchmarks/bench_autograd.py's mlp100 need."""
cimport numpy as cnp

cdef extern from "_base.h":
    pass

cdef enum:
    # Below this many elements a thread team costs more than it saves (the default of
    # parallel_min(); a module whose element costs k times more passes k * work to team()).
    PARALLEL_MIN = 32768
    # Elementwise kernels hand each thread blocks of this many elements: the inner loop
    # over a block is a plain C loop over pointers, which the compiler vectorises.
    BLOCK = 8192


cdef Py_ssize_t parallel_min() noexcept nogil   # PARALLEL_MIN unless a test changed it
cdef bint deterministic_mode() noexcept nogil   # mn.config.set_deterministic is on


cdef inline int team(Py_ssize_t work, int n_threads) noexcept nogil:
    """Threads worth starting for ``work`` elements (at least 1)."""
    if n_threads < 1 or work < parallel_min():
        return 1
    return n_threads


# Elementwise kernels: each has a block function (a plain loop over `n` elements at
# pointers) and a kernel that hands blocks of BLOCK elements to the threads; blocks never
# overlap, so no two threads write the same element and the result does not depend on
# the thread count.  `y` may be `x` (in place).

cdef inline Py_ssize_t n_blocks(Py_ssize_t n) noexcept nogil:
    return (n + BLOCK - 1) // BLOCK


cdef inline Py_ssize_t block_len(Py_ssize_t n, Py_ssize_t start) noexcept nogil:
    return BLOCK if n - start > BLOCK else n - start


cdef inline void* data_ptr(object a):
    return cnp.PyArray_DATA(<cnp.ndarray> a)


cdef inline bint is_f32(object a):
    # the arrays were checked to be float32 or float64
    return cnp.PyArray_TYPE(<cnp.ndarray> a) == cnp.NPY_FLOAT32


cdef inline Py_ssize_t size_of(object a):
    return cnp.PyArray_SIZE(<cnp.ndarray> a)


cpdef object check_array(object a, object name, object dtype=*, object shape=*, int ndim=*,
                         bint contiguous=*)


# The same check in two common spellings (positional: a cimported function takes no keywords).
cdef inline object check_nd(object a, object name, int ndim, object dtype=None):
    """``a`` C-contiguous with ``ndim`` dimensions (of ``dtype`` when given)."""
    return check_array(a, name, dtype, None, ndim, True)


cdef inline object check_strided(object a, object name, int ndim=-1, object dtype=None):
    """``a`` of any strides, for the kernels that read them."""
    return check_array(a, name, dtype, None, ndim, False)


cpdef object check_typed(object a, object name, object dtype, object shape)
cpdef object check_writeable(object a, object name)   # for a kernel that writes into `a`
cpdef object output_like(object out, object like)
cpdef int check_threads(object n_threads) except -1
cpdef object as_rows(object a, object name)
cpdef bint broadcast_value(object a) except -1
cpdef tuple grad_operand(object grad, object like)
