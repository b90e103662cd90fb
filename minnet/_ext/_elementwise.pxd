"""What the elementwise and row kernels share (``_activations``, ``_unary``, ``_softmax``):
thread-team and block sizes, the float/double exp, the data pointer of a checked array,
and the checks of their Python wrappers (defined in ``_elementwise.pyx``; cimported, they
are C calls, which the small arrays of benchmarks/bench_autograd.py's mlp100 need)."""
cimport numpy as cnp
from libc.math cimport exp

from minnet._ext._blas cimport floating
from minnet._ext._fastmath cimport minnet_exp_nonpos_f

cdef enum:
    # Below this many elements a thread team costs more than it saves.
    PARALLEL_MIN = 32768
    # Elementwise kernels hand each thread blocks of this many elements: the inner loop
    # over a block is a plain C loop over pointers, which the compiler vectorises.
    BLOCK = 8192


cdef extern from *:
    """
    /* GCC keeps a float compare (it could raise FE_INVALID on NaN) out of a vectorised
     * select unless trapping math is off; minnet never reads the FP exception flags, so
     * switch it off for the modules that cimport this one and let `y = v > 0 ? v : neg` loops vectorise.
     * (Clang and MSVC vectorise these loops without it.) */
    #if defined(__GNUC__) && !defined(__clang__)
    #pragma GCC optimize("no-trapping-math")
    #endif
    /* Sigmoid of n floats, the one kernel here bound by arithmetic rather than memory.
     * On x86-64 Linux GCC also compiles AVX2 and AVX-512 copies of it and picks one at
     * load time for the CPU it runs on (target_clones); elsewhere it is the plain
     * SSE2 loop. */
    #if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
    #define MINNET_TARGET_CLONES \
        __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
    #else
    #define MINNET_TARGET_CLONES
    #endif
    """


cdef inline floating exp_nonpos(floating v) noexcept nogil:
    """exp(v) for v <= 0 (every exponential of the kernels has a non-positive argument)."""
    if floating is float:
        return minnet_exp_nonpos_f(v)
    else:
        return exp(v)


cdef inline int team(Py_ssize_t work, int n_threads) noexcept nogil:
    """Threads worth starting for ``work`` elements (at least 1)."""
    if n_threads < 1 or work < PARALLEL_MIN:
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


cpdef object checked(object a, object name, object dtype=*, object shape=*)
cpdef object output_like(object out, object like)
cpdef int thread_count(object n_threads) except -1
cpdef object as_rows(object a, object name)
cpdef bint broadcast_value(object a) except -1
cpdef tuple grad_operand(object grad, object like)
