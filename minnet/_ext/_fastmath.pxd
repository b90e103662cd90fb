# Vectorisable float32 exp and tanh, shared by the activation and loss kernels.
#
# libm's expf/tanhf are a function call per element, which keeps GCC from vectorising
# the loops that call them (softmax, cross-entropy, tanh: benchmarks/bench_activations.py).
# These are branch-free inline C the compiler turns into SIMD code.  The C is in
# _fastmath.h; a module that cimports a name from here includes it.
from libc.math cimport exp, tanh

from minnet._ext._blas cimport floating

cdef extern from "_fastmath.h" nogil:
    float minnet_exp_nonpos_f(float x) noexcept nogil
    float minnet_sigmoid1_f(float v) noexcept nogil
    double minnet_sigmoid1_d(double v) noexcept nogil
    float minnet_tanh_f(float x) noexcept nogil
    float minnet_expm1_nonpos_f(float x) noexcept nogil
    float minnet_row_max_f(const float* x, Py_ssize_t n) noexcept nogil
    double minnet_exp_sum_f(const float* x, float m, float* y, Py_ssize_t n) noexcept nogil
    double minnet_dot_f(const float* a, const float* b, Py_ssize_t n) noexcept nogil
    void minnet_tanh_block_f(const float* x, float* y, Py_ssize_t n) noexcept nogil
    void minnet_scale_f(float* y, float s, Py_ssize_t n) noexcept nogil
    void minnet_short_rows_f(const float* x, Py_ssize_t nr, Py_ssize_t n, float* m,
                             double* total, float* y, int normalize) noexcept nogil
    enum: MINNET_SHORT_ROWS
    enum: MINNET_EXP_LANES
    void minnet_ce_grad_row_f(const float* x, double lse, float off, float g, float* dx,
                              Py_ssize_t n) noexcept nogil


cdef inline double sum4(const floating* p, Py_ssize_t n) noexcept nogil:
    """sum(p[0:n]) in double: four independent accumulators (one running sum is bound by the
    add latency), combined as (s0 + s1) + (s2 + s3), the order its callers' results keep."""
    cdef Py_ssize_t l, n4 = n - n % 4
    cdef double s0 = 0, s1 = 0, s2 = 0, s3 = 0
    for l in range(0, n4, 4):
        s0 += p[l]
        s1 += p[l + 1]
        s2 += p[l + 2]
        s3 += p[l + 3]
    for l in range(n4, n):
        s0 += p[l]
    return (s0 + s1) + (s2 + s3)


cdef inline floating exp_nonpos(floating v) noexcept nogil:
    """exp(v) for v <= 0 (every exponential of the kernels has a non-positive argument):
    the vectorisable float exp above for float, libm's for double."""
    if floating is float:
        return minnet_exp_nonpos_f(v)
    else:
        return exp(v)


cdef inline floating sigmoid(floating v) noexcept nogil:
    """1 / (1 + exp(-v)) (minnet_sigmoid1_f / _d of _fastmath.h, the one definition)."""
    if floating is float:
        return minnet_sigmoid1_f(v)
    else:
        return minnet_sigmoid1_d(v)


cdef inline floating tanh_any(floating v) noexcept nogil:
    """tanh(v): minnet_tanh_f (_fastmath.h) for float, libm's for double."""
    if floating is float:
        return minnet_tanh_f(v)
    else:
        return tanh(v)
