"""Activation kernels: elementwise sigmoid / tanh / relu / leaky relu / elu (selu), the
"unary" family (gelu, gelu-tanh, silu, softplus, softsign, relu6, hard sigmoid, hard silu,
mish, exp; one forward and one backward kernel selected by an op code), and
softmax / log-softmax along the last axis of a 2-D ``(rows, cols)`` array.

Every kernel reads C-contiguous float32/float64 arrays (one fused ``floating`` type) and
writes into an output the wrapper allocated (or the caller passed).  Elementwise kernels
work on the flat view and split it over OpenMP threads (``prange``): each thread writes
its own slice, so the result does not depend on the thread count.  Row-wise kernels
split the rows.  The math of each backward is in ``docs/math/activations.md``.

The Python-visible wrappers (``sigmoid_forward``, ...) validate dtypes, shapes and
contiguity, so the ``nogil`` loops below run without bounds checks.
"""
from cython.parallel cimport prange
cimport numpy as cnp
from libc.math cimport exp, expm1, expm1f, log, log1p, tanh, fabs, erf, isinf

from minnet._ext._blas cimport floating
from minnet._ext._fastmath cimport (minnet_exp_nonpos_f, minnet_tanh_block_f, minnet_row_max_f,
                                    minnet_exp_sum_f, minnet_dot_f, minnet_tanh_f,
                                    minnet_expm1_nonpos_f)

import numpy as np

from minnet._ext._validate import check_array

cnp.import_array()

cdef enum:
    # Below this many elements a thread team costs more than it saves.
    _PARALLEL_MIN = 32768
    # Elementwise kernels hand each thread blocks of this many elements: the inner loop
    # over a block is a plain C loop over pointers, which the compiler vectorises.
    _BLOCK = 8192


cdef extern from *:
    """
    /* GCC keeps a float compare (it could raise FE_INVALID on NaN) out of a vectorised
     * select unless trapping math is off; minnet never reads the FP exception flags, so
     * switch it off for this module and let `y = v > 0 ? v : neg` loops vectorise.
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
    MINNET_TARGET_CLONES
    static void minnet_sigmoid_f(const float *x, float *y, Py_ssize_t n) {
        for (Py_ssize_t i = 0; i < n; i++) {
            float v = x[i];
            float e = minnet_exp_nonpos_f(v < 0.0f ? v : -v);   /* exp(-|v|) */
            float num = v >= 0.0f ? 1.0f : e;
            y[i] = num / (1.0f + e);
        }
    }
    /* The float32 sigmoid and tanh backward in the same per-CPU copies, with exactly the
     * arithmetic Cython generates for `g * y * (1 - y)` and `g * (1 - y * y)` (products
     * of two floats in float, `1 - ...` and the last product in double): the same
     * results with fewer instructions per element than the SSE2 loop
     * (benchmarks/bench_autograd.py, sigmoid and tanh layers). */
    MINNET_TARGET_CLONES
    static void minnet_sigmoid_backward_f(const float *y, const float *g, float *dx,
                                          Py_ssize_t n) {
        for (Py_ssize_t i = 0; i < n; i++)
            dx[i] = (float)((double)(g[i] * y[i]) * (1.0 - (double)y[i]));
    }
    MINNET_TARGET_CLONES
    static void minnet_tanh_backward_f(const float *y, const float *g, float *dx,
                                       Py_ssize_t n) {
        for (Py_ssize_t i = 0; i < n; i++)
            dx[i] = (float)((double)g[i] * (1.0 - (double)(y[i] * y[i])));
    }
    /* float32 ELU / SELU, forward and backward, in the same per-CPU copies.  The forward
     * uses the branch-free minnet_expm1_nonpos_f (_fastmath.pxd) so the loop vectorises;
     * libm's expm1f was a call per element (benchmarks/bench_autograd.py, elu layer).
     * `v >= 0 ? 0 : v` sends NaN to expm1 (NaN propagates, as PyTorch); 0 and -0.0
     * give +0.  Arithmetic as the Cython loops: (scale * alpha) * expm1(v), scale * v;
     * backward g * (scale or y + scale * alpha) from the output, g * (scale or
     * scale * alpha * exp(x)) from the input. */
    MINNET_TARGET_CLONES
    static void minnet_elu_f(const float *x, float *y, Py_ssize_t n, float alpha,
                             float scale) {
        float sa = scale * alpha;
        for (Py_ssize_t i = 0; i < n; i++) {
            float v = x[i];
            float e = minnet_expm1_nonpos_f(v >= 0.0f ? 0.0f : v);
            y[i] = v > 0.0f ? scale * v : sa * e;
        }
    }
    MINNET_TARGET_CLONES
    static void minnet_elu_backward_f(const float *s, const float *g, float *dx, Py_ssize_t n,
                                      float alpha, float scale, int from_output) {
        float sa = scale * alpha;
        Py_ssize_t i;
        if (from_output) {
            for (i = 0; i < n; i++) {
                float v = s[i];
                dx[i] = g[i] * (v > 0.0f ? scale : v + sa);
            }
        } else {
            for (i = 0; i < n; i++) {
                float v = s[i];
                float neg = sa * minnet_exp_nonpos_f(v < 0.0f ? v : 0.0f);
                dx[i] = g[i] * (v > 0.0f ? scale : neg);
            }
        }
    }
    """
    void minnet_sigmoid_f(const float* x, float* y, Py_ssize_t n) noexcept nogil
    void minnet_elu_f(const float* x, float* y, Py_ssize_t n, float alpha,
                      float scale) noexcept nogil
    void minnet_elu_backward_f(const float* s, const float* g, float* dx, Py_ssize_t n,
                               float alpha, float scale, int from_output) noexcept nogil
    void minnet_sigmoid_backward_f(const float* y, const float* g, float* dx,
                                   Py_ssize_t n) noexcept nogil
    void minnet_tanh_backward_f(const float* y, const float* g, float* dx,
                                Py_ssize_t n) noexcept nogil


# ---------------------------------------------------------------------------------------
# Scalar helpers: one name for the float and the double function.
# ---------------------------------------------------------------------------------------

cdef inline floating _exp_nonpos(floating v) noexcept nogil:
    """exp(v) for v <= 0 (every exponential below has a non-positive argument)."""
    if floating is float:
        return minnet_exp_nonpos_f(v)
    else:
        return exp(v)


cdef inline floating _expm1(floating v) noexcept nogil:
    if floating is float:
        return expm1f(v)
    else:
        return expm1(v)


cdef inline int _team(Py_ssize_t work, int n_threads) noexcept nogil:
    """Threads worth starting for ``work`` elements (at least 1)."""
    if n_threads < 1 or work < _PARALLEL_MIN:
        return 1
    return n_threads


# ---------------------------------------------------------------------------------------
# Elementwise kernels.  Each has a block function (a plain loop over `n` elements at
# pointers) and a kernel that hands blocks of _BLOCK elements to the threads; blocks never
# overlap, so no two threads write the same element and the result does not depend on
# the thread count.  `y` may be `x` (in place).
# ---------------------------------------------------------------------------------------

cdef inline Py_ssize_t _n_blocks(Py_ssize_t n) noexcept nogil:
    return (n + _BLOCK - 1) // _BLOCK


cdef inline Py_ssize_t _block_len(Py_ssize_t n, Py_ssize_t start) noexcept nogil:
    return _BLOCK if n - start > _BLOCK else n - start


cdef inline void _sigmoid_block(const floating* x, floating* y, Py_ssize_t n) noexcept nogil:
    # exp(-|x|) is in (0, 1]: it never overflows, and 1 + e never loses the small side.
    cdef Py_ssize_t i
    cdef floating e, v
    if floating is float:
        minnet_sigmoid_f(x, y, n)     # the same formula, in C (see the top of the file)
    else:
        for i in range(n):
            v = x[i]
            e = exp(-fabs(v))
            y[i] = (1 if v >= 0 else e) / (1 + e)


cdef void sigmoid_kernel(const floating* x,     # IN  (n,)
                         floating* y,           # OUT (n,)
                         Py_ssize_t n, int n_threads) noexcept nogil:
    cdef Py_ssize_t b, start
    if _team(n, n_threads) == 1:
        # the same blocks in a row: an OpenMP region for one thread costs more than a
        # small array's loop (benchmarks/bench_autograd.py, mlp100)
        for b in range(_n_blocks(n)):
            start = b * _BLOCK
            _sigmoid_block(x + start, y + start, _block_len(n, start))
        return
    for b in prange(_n_blocks(n), num_threads=n_threads, schedule="static"):
        start = b * _BLOCK
        _sigmoid_block(x + start, y + start, _block_len(n, start))


cdef inline void _sigmoid_backward_block(const floating* y, const floating* g, floating* dx,
                                         Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i
    if floating is float:
        minnet_sigmoid_backward_f(y, g, dx, n)     # the same formula, in C (top of the file)
    else:
        for i in range(n):
            dx[i] = g[i] * y[i] * (1 - y[i])


cdef void sigmoid_backward_kernel(const floating* y,      # IN  saved output (n,)
                                  const floating* grad,   # IN  dL/dy (n,), or one block (grad_block)
                                  floating* dx,           # OUT dL/dx (n,)
                                  Py_ssize_t n, bint grad_block, int n_threads) noexcept nogil:
    # grad_block: `grad` holds _BLOCK copies of one value (a broadcast gradient, see
    # _grad_operand) and every block reads it from its start.
    cdef Py_ssize_t b, start
    if _team(n, n_threads) == 1:
        for b in range(_n_blocks(n)):
            start = b * _BLOCK
            _sigmoid_backward_block(y + start, grad if grad_block else grad + start, dx + start,
                                    _block_len(n, start))
        return
    for b in prange(_n_blocks(n), num_threads=n_threads, schedule="static"):
        start = b * _BLOCK
        _sigmoid_backward_block(y + start, grad if grad_block else grad + start, dx + start,
                                _block_len(n, start))


cdef inline void _tanh_block(const floating* x, floating* y, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i
    if floating is float:
        minnet_tanh_block_f(x, y, n)    # branch-free, vectorised (see _fastmath.pxd)
    else:
        for i in range(n):
            y[i] = tanh(x[i])


cdef void tanh_kernel(const floating* x,    # IN  (n,)
                      floating* y,          # OUT (n,)
                      Py_ssize_t n, int n_threads) noexcept nogil:
    cdef Py_ssize_t b, start
    if _team(n, n_threads) == 1:
        for b in range(_n_blocks(n)):
            start = b * _BLOCK
            _tanh_block(x + start, y + start, _block_len(n, start))
        return
    for b in prange(_n_blocks(n), num_threads=n_threads, schedule="static"):
        start = b * _BLOCK
        _tanh_block(x + start, y + start, _block_len(n, start))


cdef inline void _tanh_backward_block(const floating* y, const floating* g, floating* dx,
                                      Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i
    if floating is float:
        minnet_tanh_backward_f(y, g, dx, n)        # the same formula, in C (top of the file)
    else:
        for i in range(n):
            dx[i] = g[i] * (1 - y[i] * y[i])


cdef void tanh_backward_kernel(const floating* y,      # IN  saved output (n,)
                               const floating* grad,   # IN  (n,), or one block (grad_block)
                               floating* dx,           # OUT (n,)
                               Py_ssize_t n, bint grad_block, int n_threads) noexcept nogil:
    cdef Py_ssize_t b, start
    if _team(n, n_threads) == 1:
        for b in range(_n_blocks(n)):
            start = b * _BLOCK
            _tanh_backward_block(y + start, grad if grad_block else grad + start, dx + start,
                                 _block_len(n, start))
        return
    for b in prange(_n_blocks(n), num_threads=n_threads, schedule="static"):
        start = b * _BLOCK
        _tanh_backward_block(y + start, grad if grad_block else grad + start, dx + start,
                             _block_len(n, start))


cdef inline void _leaky_relu_block(const floating* x, floating* y, Py_ssize_t n,
                                   floating slope) noexcept nogil:
    # Both sides are computed and then selected: a branch-free loop the compiler
    # vectorises (it may not move a float multiply out of an `if` on its own).
    cdef Py_ssize_t i
    cdef floating v, neg
    if slope == 0:
        # relu: a select, not x * 0, so that relu(-inf) = 0 (x * 0 would be NaN); NaN
        # stays NaN and -0.0 stays -0.0, as torch.relu.
        for i in range(n):
            v = x[i]
            y[i] = 0 if v < 0 else v
        return
    for i in range(n):
        v = x[i]
        neg = v * slope
        y[i] = v if v > 0 else neg


cdef void leaky_relu_kernel(const floating* x,   # IN  (n,)
                            floating* y,         # OUT (n,)
                            Py_ssize_t n, floating slope,
                            int n_threads) noexcept nogil:
    # relu is slope = 0 (x * 0 keeps NaN as NaN, and -0.0 for negative x, as PyTorch).
    cdef Py_ssize_t b, start
    if _team(n, n_threads) == 1:
        for b in range(_n_blocks(n)):
            start = b * _BLOCK
            _leaky_relu_block(x + start, y + start, _block_len(n, start), slope)
        return
    for b in prange(_n_blocks(n), num_threads=n_threads, schedule="static"):
        start = b * _BLOCK
        _leaky_relu_block(x + start, y + start, _block_len(n, start), slope)


cdef inline void _leaky_relu_backward_block(const floating* s, const floating* g,
                                            floating* dx, Py_ssize_t n,
                                            floating slope) noexcept nogil:
    cdef Py_ssize_t i
    cdef floating neg
    for i in range(n):
        neg = g[i] * slope
        dx[i] = g[i] if s[i] > 0 else neg


cdef void leaky_relu_backward_kernel(const floating* s,     # IN  saved input or output (n,)
                                     const floating* grad,  # IN  (n,), or one block (grad_block)
                                     floating* dx,          # OUT (n,)
                                     Py_ssize_t n, bint grad_block, floating slope,
                                     int n_threads) noexcept nogil:
    # For slope >= 0 the output is > 0 exactly where the input is, so either may be saved.
    cdef Py_ssize_t b, start
    if _team(n, n_threads) == 1:
        for b in range(_n_blocks(n)):
            start = b * _BLOCK
            _leaky_relu_backward_block(s + start, grad if grad_block else grad + start, dx + start,
                                       _block_len(n, start), slope)
        return
    for b in prange(_n_blocks(n), num_threads=n_threads, schedule="static"):
        start = b * _BLOCK
        _leaky_relu_backward_block(s + start, grad if grad_block else grad + start, dx + start,
                                   _block_len(n, start), slope)


cdef inline void _elu_block(const floating* x, floating* y, Py_ssize_t n,
                            floating alpha, floating scale) noexcept nogil:
    cdef Py_ssize_t i
    cdef floating v
    if floating is float:
        minnet_elu_f(x, y, n, alpha, scale)   # vectorised expm1 (top of the file)
        return
    for i in range(n):
        v = x[i]
        # libm's expm1 is a call the compiler cannot vectorise: make it only where the
        # result uses it.  `not (v >= 0)` sends NaN down the expm1 branch, so NaN
        # propagates (as PyTorch); 0 and -0.0 give +0.
        if v > 0:
            y[i] = scale * v
        else:
            y[i] = scale * alpha * _expm1(v if not (v >= 0) else 0)


cdef void elu_kernel(const floating* x,   # IN  (n,)
                     floating* y,         # OUT (n,)
                     Py_ssize_t n, floating alpha, floating scale,
                     int n_threads) noexcept nogil:
    # y = scale * (x if x > 0 else alpha * (exp(x) - 1)); selu is one (alpha, scale) pair.
    # expm1 keeps full relative accuracy for small |x|, where exp(x) - 1 would cancel
    # (float32: minnet_expm1_nonpos_f, <= 2 ulp; float64: libm).
    cdef Py_ssize_t b, start
    if _team(n, n_threads) == 1:
        for b in range(_n_blocks(n)):
            start = b * _BLOCK
            _elu_block(x + start, y + start, _block_len(n, start), alpha, scale)
        return
    for b in prange(_n_blocks(n), num_threads=n_threads, schedule="static"):
        start = b * _BLOCK
        _elu_block(x + start, y + start, _block_len(n, start), alpha, scale)


cdef inline void _elu_backward_block(const floating* s, const floating* g, floating* dx,
                                     Py_ssize_t n, floating alpha, floating scale,
                                     bint from_output) noexcept nogil:
    cdef Py_ssize_t i
    cdef floating v, neg
    cdef floating scale_alpha = scale * alpha
    if floating is float:
        minnet_elu_backward_f(s, g, dx, n, alpha, scale, from_output)
        return
    if from_output:
        # y <= 0: dy/dx = scale*alpha*exp(x) = y + scale*alpha (no exp needed).
        for i in range(n):
            v = s[i]
            neg = v + scale_alpha
            dx[i] = g[i] * (scale if v > 0 else neg)
    else:
        for i in range(n):
            v = s[i]
            neg = scale_alpha * _exp_nonpos(v if v < 0 else 0)
            dx[i] = g[i] * (scale if v > 0 else neg)


cdef void elu_backward_kernel(const floating* s,     # IN  saved output (or input) (n,)
                              const floating* grad,  # IN  (n,), or one block (grad_block)
                              floating* dx,          # OUT (n,)
                              Py_ssize_t n, bint grad_block,
                              floating alpha, floating scale, bint from_output,
                              int n_threads) noexcept nogil:
    cdef Py_ssize_t b, start
    if _team(n, n_threads) == 1:
        for b in range(_n_blocks(n)):
            start = b * _BLOCK
            _elu_backward_block(s + start, grad if grad_block else grad + start, dx + start,
                                _block_len(n, start), alpha, scale, from_output)
        return
    for b in prange(_n_blocks(n), num_threads=n_threads, schedule="static"):
        start = b * _BLOCK
        _elu_backward_block(s + start, grad if grad_block else grad + start, dx + start,
                            _block_len(n, start), alpha, scale, from_output)


# ---------------------------------------------------------------------------------------
# The unary family: y = f(x) and dx = g * f'(x), both from the saved INPUT (except exp,
# whose backward reads its saved output: f' = f). The op code is tested once per block,
# outside the loops, so each loop is a plain elementwise loop.
# ---------------------------------------------------------------------------------------

cdef enum:
    OP_GELU = 0          # 0.5 x (1 + erf(x / sqrt 2))
    OP_GELU_TANH = 1     # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    OP_SILU = 2          # x sigmoid(x)
    OP_SOFTPLUS = 3      # log(1 + exp(x)); x above 20 passes through (PyTorch's threshold)
    OP_SOFTSIGN = 4      # x / (1 + |x|)
    OP_RELU6 = 5         # min(max(x, 0), 6)
    OP_HARD_SIGMOID = 6  # clip(x / 6 + 1/2, 0, 1)
    OP_HARD_SILU = 7     # x hard_sigmoid(x)
    OP_MISH = 8          # x tanh(softplus(x))
    OP_EXP = 9           # exp(x)
    N_UNARY_OPS = 10

UNARY_OPS = {"gelu": OP_GELU, "gelu_tanh": OP_GELU_TANH, "silu": OP_SILU,
             "softplus": OP_SOFTPLUS, "softsign": OP_SOFTSIGN, "relu6": OP_RELU6,
             "hard_sigmoid": OP_HARD_SIGMOID, "hard_silu": OP_HARD_SILU, "mish": OP_MISH,
             "exp": OP_EXP}

cdef double _SQRT1_2 = 0.70710678118654752440
cdef double _INV_SQRT_2PI = 0.39894228040143267794
cdef double _SQRT_2_PI = 0.79788456080286535588
cdef double _GELU_C = 0.044715
cdef double _SIXTH = 1.0 / 6.0


cdef extern from *:
    """
    /* float helpers for the unary family. The C library's expf/erff/log1pf are scalar
     * calls (tens of ns each on the development machine); these inline polynomial forms
     * are branch-light and accurate to a few ulp for float (double uses the C library).
     * minnet_exp_nonpos_f and minnet_tanh_f come from _fastmath.pxd. */

    /* exp(x) for any float x: exp(-|x|) in (0, 1], inverted for x > 0 (inf above ~88.7). */
    static inline float minnet_exp_f(float x) {
        float e = minnet_exp_nonpos_f(x > 0.0f ? -x : x);
        return x > 0.0f ? 1.0f / e : e;
    }

    /* log(x) for normal float x > 0 (Cephes logf: x = m 2^k, m in [sqrt(1/2), sqrt(2))). */
    static inline float minnet_log_f(float x) {
        uint32_t bits;
        memcpy(&bits, &x, 4);
        int k = (int)((bits >> 23) & 0xff) - 126;
        bits = (bits & 0x007fffffu) | 0x3f000000u;        /* mantissa in [0.5, 1) */
        float m;
        memcpy(&m, &bits, 4);
        if (m < 0.707106781186547524f) { k -= 1; m = m + m - 1.0f; } else { m = m - 1.0f; }
        float z = m * m;
        float y = 7.0376836292e-2f;
        y = y * m - 1.1514610310e-1f;
        y = y * m + 1.1676998740e-1f;
        y = y * m - 1.2420140846e-1f;
        y = y * m + 1.4249322787e-1f;
        y = y * m - 1.6668057665e-1f;
        y = y * m + 2.0000714765e-1f;
        y = y * m - 2.4999993993e-1f;
        y = y * m + 3.3333331174e-1f;
        y = y * m * z;
        y += -2.12194440e-4f * (float)k;
        y += -0.5f * z;
        return m + y + 0.693359375f * (float)k;
    }

    /* log(1 + e) for e in [0, 1] without losing small e: u = 1 + e, log(u) * e / (u - 1). */
    static inline float minnet_log1p01_f(float e) {
        float u = 1.0f + e;
        return u == 1.0f ? e : minnet_log_f(u) * (e / (u - 1.0f));
    }

    /* Phi(x) = P(N(0,1) <= x) for float x, from z = x / sqrt2 and e = exp(-z^2) (the
     * backward reuses e for the density). |z| < 0.5: erf's Taylor series (error < 1e-8);
     * beyond: 0.5 erfc(a) = 0.5 t R(t) e, a = |z|, t = 1/(1 + a/2), R a degree-9
     * polynomial fitted to erfcx(a) / t on t in [0.15, 0.8] (relative error 3e-9 in
     * float64, 1.4e-7 evaluated in float32; docs/math/activations.md), used as it
     * stands for x < 0 (no cancellation in the left tail) and as 1 - ... for x > 0.
     * Both sides are computed and one selected, so the loops vectorise.  (It replaced
     * Numerical Recipes' erfcc, t exp(-a^2 + P(t)), which needed a second exp in the
     * backward: benchmarks/bench_autograd.py, gelu layer.) */
    static inline float minnet_phi_from_f(float z, float e) {
        float a = z < 0.0f ? -z : z;
        float z2 = z * z;
        float p = -1.0f / 1320.0f;
        p = p * z2 + 1.0f / 216.0f;
        p = p * z2 - 1.0f / 42.0f;
        p = p * z2 + 1.0f / 10.0f;
        p = p * z2 - 1.0f / 3.0f;
        p = p * z2 + 1.0f;
        float small = 0.5f + 0.56418958354775629f * z * p;       /* 0.5 (1 + erf z) */
        float t = 1.0f / (1.0f + 0.5f * a);
        float r = -3.509517759e-02f;
        r = r * t + 8.776799589e-02f;
        r = r * t + 2.295171656e-02f;
        r = r * t - 2.283937335e-01f;
        r = r * t + 1.227211282e-01f;
        r = r * t + 3.141010553e-02f;
        r = r * t + 1.893989742e-01f;
        r = r * t + 2.448578775e-01f;
        r = r * t + 2.822599113e-01f;
        r = r * t + 2.820889354e-01f;
        float half_erfc = 0.5f * t * r * e;
        float big = z < 0.0f ? half_erfc : 1.0f - half_erfc;
        return a < 0.5f ? small : big;
    }

    static inline float minnet_phi_cdf_f(float x) {
        float z = x * 0.70710678118654752f;
        return minnet_phi_from_f(z, minnet_exp_nonpos_f(-(z * z)));
    }

    static inline float minnet_sigmoid1_f(float v) {
        float e = minnet_exp_nonpos_f(v < 0.0f ? v : -v);
        return (v >= 0.0f ? 1.0f : e) / (1.0f + e);
    }

    static inline float minnet_softplus1_f(float v) {
        float e = minnet_exp_nonpos_f(v < 0.0f ? v : -v);
        float sp = (v > 0.0f ? v : 0.0f) + minnet_log1p01_f(e);
        return v > 20.0f ? v : sp;
    }

    /* The float loops of the unary family, in C so that GCC vectorises them (op codes as in
     * the Cython enum below; the op is tested once, outside the loops). */
    MINNET_TARGET_CLONES
    static void minnet_unary_f(int op, const float *x, float *y, Py_ssize_t n) {
        Py_ssize_t i;
        switch (op) {
        case 0: for (i = 0; i < n; i++) y[i] = x[i] * minnet_phi_cdf_f(x[i]); break;
        case 1: for (i = 0; i < n; i++) { float v = x[i];
                    float t = minnet_tanh_f(0.79788456080286535588f * (v + 0.044715f * v * v * v));
                    y[i] = 0.5f * v * (1.0f + t); } break;
        case 2: for (i = 0; i < n; i++) y[i] = x[i] * minnet_sigmoid1_f(x[i]); break;
        case 3: for (i = 0; i < n; i++) y[i] = minnet_softplus1_f(x[i]); break;
        case 4: for (i = 0; i < n; i++) { float v = x[i]; float a = v < 0.0f ? -v : v;
                    y[i] = v / (1.0f + a); } break;
        case 5: for (i = 0; i < n; i++) { float v = x[i]; float lo = v < 0.0f ? 0.0f : v;
                    y[i] = lo > 6.0f ? 6.0f : lo; } break;
        case 6: for (i = 0; i < n; i++) { float v = x[i] * (1.0f / 6.0f) + 0.5f;
                    float lo = v < 0.0f ? 0.0f : v; y[i] = lo > 1.0f ? 1.0f : lo; } break;
        case 7: for (i = 0; i < n; i++) { float v = x[i]; float h = v * (1.0f / 6.0f) + 0.5f;
                    float lo = h < 0.0f ? 0.0f : h; y[i] = v * (lo > 1.0f ? 1.0f : lo); } break;
        case 8: for (i = 0; i < n; i++) y[i] = x[i] * minnet_tanh_f(minnet_softplus1_f(x[i])); break;
        case 9: for (i = 0; i < n; i++) y[i] = minnet_exp_f(x[i]); break;
        default: break;
        }
    }

    MINNET_TARGET_CLONES
    static void minnet_unary_backward_f(int op, const float *s, const float *g, float *dx,
                                        Py_ssize_t n) {
        Py_ssize_t i;
        switch (op) {
        case 0: for (i = 0; i < n; i++) { float v = s[i];          /* Phi(x) + x phi(x) */
                    float z = v * 0.70710678118654752f;
                    float e = minnet_exp_nonpos_f(-(z * z));            /* exp(-x^2 / 2) */
                    dx[i] = g[i] * (minnet_phi_from_f(z, e) + v * 0.39894228040143267794f * e); } break;
        case 1: for (i = 0; i < n; i++) { float v = s[i];
                    float t = minnet_tanh_f(0.79788456080286535588f * (v + 0.044715f * v * v * v));
                    dx[i] = g[i] * (0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t)
                                    * 0.79788456080286535588f * (1.0f + 3.0f * 0.044715f * v * v)); } break;
        case 2: for (i = 0; i < n; i++) { float v = s[i]; float sg = minnet_sigmoid1_f(v);
                    dx[i] = g[i] * sg * (1.0f + v * (1.0f - sg)); } break;
        case 3: for (i = 0; i < n; i++) { float v = s[i];
                    dx[i] = v > 20.0f ? g[i] : g[i] * minnet_sigmoid1_f(v); } break;
        case 4: for (i = 0; i < n; i++) { float v = s[i]; float t = 1.0f + (v < 0.0f ? -v : v);
                    dx[i] = g[i] / (t * t); } break;
        case 5: for (i = 0; i < n; i++) { float v = s[i];
                    dx[i] = (v > 0.0f) & (v < 6.0f) ? g[i] : 0.0f; } break;
        case 6: for (i = 0; i < n; i++) { float v = s[i];
                    dx[i] = (v > -3.0f) & (v < 3.0f) ? g[i] / 6.0f : 0.0f; } break;
        case 7: for (i = 0; i < n; i++) { float v = s[i];
                    float mid = g[i] * (v * (1.0f / 3.0f) + 0.5f);
                    float hi = v < 3.0f ? mid : g[i];
                    dx[i] = v <= -3.0f ? 0.0f : hi; } break;
        case 8: for (i = 0; i < n; i++) { float v = s[i];
                    float t = minnet_tanh_f(minnet_softplus1_f(v));
                    dx[i] = g[i] * (t + v * minnet_sigmoid1_f(v) * (1.0f - t * t)); } break;
        case 9: for (i = 0; i < n; i++) dx[i] = g[i] * s[i]; break;
        default: break;
        }
    }
    """
    float minnet_exp_f(float x) noexcept nogil
    float minnet_log1p01_f(float e) noexcept nogil
    float minnet_phi_cdf_f(float x) noexcept nogil
    void minnet_unary_f(int op, const float* x, float* y, Py_ssize_t n) noexcept nogil
    void minnet_unary_backward_f(int op, const float* s, const float* g, float* dx,
                                 Py_ssize_t n) noexcept nogil


cdef inline floating _f_exp(floating v) noexcept nogil:
    if floating is float:
        return minnet_exp_f(v)
    else:
        return exp(v)


cdef inline floating _f_tanh(floating v) noexcept nogil:
    if floating is float:
        return minnet_tanh_f(v)
    else:
        return tanh(v)


cdef inline floating _f_phi_cdf(floating v) noexcept nogil:
    """P(N(0, 1) <= v) = 0.5 (1 + erf(v / sqrt 2))."""
    if floating is float:
        return minnet_phi_cdf_f(v)
    else:
        return 0.5 * (1 + erf(v * _SQRT1_2))


cdef inline floating _f_sigmoid(floating v) noexcept nogil:
    cdef floating e
    if floating is float:
        e = minnet_exp_nonpos_f(-fabs(v))
    else:
        e = exp(-fabs(v))
    return (1 if v >= 0 else e) / (1 + e)


cdef inline floating _f_softplus(floating v) noexcept nogil:
    # PyTorch's softplus(beta=1, threshold=20): v above 20; below, computed as
    # max(v, 0) + log1p(exp(-|v|)) (equal to log1p(exp(v)), and exp never overflows).
    cdef floating e
    if v > 20:
        return v
    if floating is float:
        e = minnet_exp_nonpos_f(-fabs(v))
        return (v if v > 0 else 0) + minnet_log1p01_f(e)
    else:
        return log1p(exp(v))


cdef void _unary_block(int op, const floating* x, floating* y, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i
    cdef floating v, t
    if floating is float:
        minnet_unary_f(op, x, y, n)           # the same formulas, in C (top of the file)
        return
    if op == OP_GELU:
        for i in range(n):
            v = x[i]
            y[i] = v * _f_phi_cdf(v)
    elif op == OP_GELU_TANH:
        for i in range(n):
            v = x[i]
            t = _f_tanh(<floating> _SQRT_2_PI * (v + <floating> _GELU_C * v * v * v))
            y[i] = <floating> 0.5 * v * (1 + t)
    elif op == OP_SILU:
        for i in range(n):
            v = x[i]
            y[i] = v * _f_sigmoid(v)
    elif op == OP_SOFTPLUS:
        for i in range(n):
            y[i] = _f_softplus(x[i])
    elif op == OP_SOFTSIGN:
        for i in range(n):
            v = x[i]
            y[i] = v / (1 + fabs(v))
    elif op == OP_RELU6:
        for i in range(n):
            v = x[i]
            y[i] = 0 if v < 0 else (6 if v > 6 else v)
    elif op == OP_HARD_SIGMOID:
        for i in range(n):
            v = x[i] * <floating> _SIXTH + <floating> 0.5
            y[i] = 0 if v < 0 else (1 if v > 1 else v)
    elif op == OP_HARD_SILU:
        for i in range(n):
            v = x[i]
            t = v * <floating> _SIXTH + <floating> 0.5
            y[i] = v * (0 if t < 0 else (1 if t > 1 else t))
    elif op == OP_MISH:
        for i in range(n):
            v = x[i]
            y[i] = v * _f_tanh(_f_softplus(v))
    elif op == OP_EXP:
        for i in range(n):
            y[i] = _f_exp(x[i])


cdef void _unary_backward_block(int op, const floating* s, const floating* g, floating* dx,
                                Py_ssize_t n) noexcept nogil:
    # s is the saved input x (the saved output y for OP_EXP).
    cdef Py_ssize_t i
    cdef floating v, t, sg, d
    if floating is float:
        minnet_unary_backward_f(op, s, g, dx, n)
        return
    if op == OP_GELU:
        # d/dx = Phi(x) + x phi(x)
        for i in range(n):
            v = s[i]
            d = _f_phi_cdf(v) + v * <floating> _INV_SQRT_2PI * _f_exp(<floating> -0.5 * v * v)
            dx[i] = g[i] * d
    elif op == OP_GELU_TANH:
        # with u = k (x + c x^3), t = tanh u: d/dx = (1 + t)/2 + x (1 - t^2) k (1 + 3 c x^2) / 2
        for i in range(n):
            v = s[i]
            t = _f_tanh(<floating> _SQRT_2_PI * (v + <floating> _GELU_C * v * v * v))
            d = <floating> 0.5 * (1 + t) + <floating> 0.5 * v * (1 - t * t) \
                * <floating> _SQRT_2_PI * (1 + 3 * <floating> _GELU_C * v * v)
            dx[i] = g[i] * d
    elif op == OP_SILU:
        # d/dx = s (1 + x (1 - s)), s = sigmoid(x)
        for i in range(n):
            v = s[i]
            sg = _f_sigmoid(v)
            dx[i] = g[i] * sg * (1 + v * (1 - sg))
    elif op == OP_SOFTPLUS:
        for i in range(n):
            v = s[i]
            dx[i] = g[i] if v > 20 else g[i] * _f_sigmoid(v)
    elif op == OP_SOFTSIGN:
        for i in range(n):
            t = 1 + fabs(s[i])
            dx[i] = g[i] / (t * t)
    elif op == OP_RELU6:
        # PyTorch's hardtanh backward: the gradient passes strictly inside (0, 6)
        for i in range(n):
            v = s[i]
            dx[i] = g[i] if (v > 0 and v < 6) else 0
    elif op == OP_HARD_SIGMOID:
        for i in range(n):
            v = s[i]
            dx[i] = g[i] / 6 if (v > -3 and v < 3) else 0
    elif op == OP_HARD_SILU:
        # PyTorch's hardswish backward: 0 up to -3, (2x + 3)/6 below 3, 1 from 3 on
        for i in range(n):
            v = s[i]
            dx[i] = 0 if v <= -3 else (g[i] * (v / 3 + <floating> 0.5) if v < 3 else g[i])
    elif op == OP_MISH:
        # d/dx = tanh(sp) + x sigmoid(x) (1 - tanh(sp)^2), sp = softplus(x)
        for i in range(n):
            v = s[i]
            t = _f_tanh(_f_softplus(v))
            dx[i] = g[i] * (t + v * _f_sigmoid(v) * (1 - t * t))
    elif op == OP_EXP:
        for i in range(n):
            dx[i] = g[i] * s[i]


cdef void unary_kernel(int op,
                       const floating* x,    # IN  (n,)
                       floating* y,          # OUT (n,)
                       Py_ssize_t n, int n_threads) noexcept nogil:
    cdef Py_ssize_t b, start
    if _team(n, n_threads) == 1:
        for b in range(_n_blocks(n)):
            start = b * _BLOCK
            _unary_block(op, x + start, y + start, _block_len(n, start))
        return
    for b in prange(_n_blocks(n), num_threads=n_threads, schedule="static"):
        start = b * _BLOCK
        _unary_block(op, x + start, y + start, _block_len(n, start))


cdef void unary_backward_kernel(int op,
                                const floating* s,      # IN  saved input (output for exp)
                                const floating* grad,   # IN  (n,), or one block (grad_block)
                                floating* dx,           # OUT (n,)
                                Py_ssize_t n, bint grad_block, int n_threads) noexcept nogil:
    cdef Py_ssize_t b, start
    if _team(n, n_threads) == 1:
        for b in range(_n_blocks(n)):
            start = b * _BLOCK
            _unary_backward_block(op, s + start, grad if grad_block else grad + start, dx + start,
                                  _block_len(n, start))
        return
    for b in prange(_n_blocks(n), num_threads=n_threads, schedule="static"):
        start = b * _BLOCK
        _unary_backward_block(op, s + start, grad if grad_block else grad + start, dx + start,
                              _block_len(n, start))


# ---------------------------------------------------------------------------------------
# Row-wise softmax / log-softmax on (rows, cols).
# ---------------------------------------------------------------------------------------

cdef inline floating _row_max(const floating* x, Py_ssize_t cols) noexcept nogil:
    # float32: lane-parallel max the compiler vectorises (_fastmath.pxd).
    cdef Py_ssize_t j
    cdef floating m = x[0]
    if floating is float:
        return minnet_row_max_f(x, cols)
    for j in range(1, cols):
        if x[j] > m:
            m = x[j]
    return m


cdef inline floating _logsumexp_row(const floating* x, Py_ssize_t cols) noexcept nogil:
    # log(sum(exp(x))) = m + log(sum(exp(x - m))) with m the row max: every exponent is
    # <= 0 (no overflow) and the largest term is exactly 1 (the log never underflows).
    # The sum is accumulated in double (float32: lanes the compiler vectorises).
    cdef Py_ssize_t j
    cdef floating m = _row_max(x, cols)
    cdef double total = 0
    if isinf(m):          # a row of -inf gives -inf; a +inf gives +inf (as PyTorch)
        return m
    if floating is float:
        total = minnet_exp_sum_f(x, m, NULL, cols)
    else:
        for j in range(cols):
            total += _exp_nonpos(x[j] - m)
    return <floating> (m + log(total))


cdef inline void _softmax_row(const floating* x,   # IN  (cols,)
                              floating* y,         # OUT (cols,)
                              Py_ssize_t cols, bint log_output) noexcept nogil:
    # Subtracting the row max makes every exponent <= 0: no overflow, and the largest
    # term is exactly 1, so the sum is >= 1 and its log never underflows.
    cdef Py_ssize_t j
    cdef floating m, e
    cdef double total = 0
    if log_output:
        e = _logsumexp_row(x, cols)
        for j in range(cols):
            y[j] = x[j] - e
        return
    m = _row_max(x, cols)
    if floating is float:
        total = minnet_exp_sum_f(x, m, y, cols)     # also writes y[j] = exp(x[j] - m)
    else:
        for j in range(cols):
            e = _exp_nonpos(x[j] - m)
            y[j] = e
            total += e
    e = <floating> (1.0 / total)
    for j in range(cols):
        y[j] = y[j] * e


cdef void softmax_kernel(const floating[:, ::1] x,   # IN  (rows, cols)
                         floating[:, ::1] y,         # OUT (rows, cols)
                         bint log_output,
                         int n_threads) noexcept nogil:
    cdef Py_ssize_t i, rows = x.shape[0], cols = x.shape[1]
    if cols == 0:
        return
    for i in prange(rows, num_threads=_team(rows * cols, n_threads), schedule="static"):
        _softmax_row(&x[i, 0], &y[i, 0], cols, log_output)


cdef void logsumexp_kernel(const floating[:, ::1] x,   # IN  (rows, cols)
                           floating[::1] out,          # OUT (rows,)
                           int n_threads) noexcept nogil:
    cdef Py_ssize_t i, rows = x.shape[0], cols = x.shape[1]
    if cols == 0:
        return
    for i in prange(rows, num_threads=_team(rows * cols, n_threads), schedule="static"):
        out[i] = _logsumexp_row(&x[i, 0], cols)


cdef inline void _softmax_backward_row(const floating* y,    # IN  saved output (cols,)
                                       const floating* g,    # IN  (cols,)
                                       floating* dx,         # OUT (cols,)
                                       Py_ssize_t cols, bint log_output) noexcept nogil:
    cdef Py_ssize_t j
    cdef double total = 0
    cdef floating t
    if log_output:
        # y = log p: dx = g - p * sum(g)
        if floating is float:
            total = minnet_dot_f(g, NULL, cols)
        else:
            for j in range(cols):
                total += g[j]
        t = <floating> total
        for j in range(cols):
            dx[j] = g[j] - _exp_nonpos(y[j]) * t
    else:
        # y = p: dx = p * (g - <g, p>)
        if floating is float:
            total = minnet_dot_f(g, y, cols)
        else:
            for j in range(cols):
                total += <double> g[j] * y[j]
        t = <floating> total
        for j in range(cols):
            dx[j] = y[j] * (g[j] - t)


cdef void softmax_backward_kernel(const floating[:, ::1] y,     # IN  saved output (rows, cols)
                                  const floating[:, ::1] grad,  # IN  (rows, cols)
                                  floating[:, ::1] dx,          # OUT (rows, cols)
                                  bint log_output,
                                  int n_threads) noexcept nogil:
    cdef Py_ssize_t i, rows = y.shape[0], cols = y.shape[1]
    if cols == 0:
        return
    for i in prange(rows, num_threads=_team(rows * cols, n_threads), schedule="static"):
        _softmax_backward_row(&y[i, 0], &grad[i, 0], &dx[i, 0], cols, log_output)


# ---------------------------------------------------------------------------------------
# Typed entry points: the wrappers below have checked dtype, shape and contiguity, so the
# elementwise kernels get the arrays' data pointers (a memoryview per array and Cython's
# fused-function dispatch cost more than a small array's loop: benchmarks/bench_autograd.py,
# mlp100).  `f32` selects the float specialisation, else double.  GIL released.
# ---------------------------------------------------------------------------------------

cdef inline void* _data(object a):
    return cnp.PyArray_DATA(<cnp.ndarray> a)


cdef _sigmoid(bint f32, x, y, Py_ssize_t n, int n_threads):
    cdef void* px = _data(x)
    cdef void* py = _data(y)
    with nogil:
        if f32:
            sigmoid_kernel(<const float*> px, <float*> py, n, n_threads)
        else:
            sigmoid_kernel(<const double*> px, <double*> py, n, n_threads)


cdef _sigmoid_backward(bint f32, y, g, dx, Py_ssize_t n, bint grad_block, int n_threads):
    cdef void* py = _data(y)
    cdef void* pg = _data(g)
    cdef void* pd = _data(dx)
    with nogil:
        if f32:
            sigmoid_backward_kernel(<const float*> py, <const float*> pg, <float*> pd, n,
                                    grad_block, n_threads)
        else:
            sigmoid_backward_kernel(<const double*> py, <const double*> pg, <double*> pd, n,
                                    grad_block, n_threads)


cdef _tanh_forward(bint f32, x, y, Py_ssize_t n, int n_threads):
    cdef void* px = _data(x)
    cdef void* py = _data(y)
    with nogil:
        if f32:
            tanh_kernel(<const float*> px, <float*> py, n, n_threads)
        else:
            tanh_kernel(<const double*> px, <double*> py, n, n_threads)


cdef _tanh_backward(bint f32, y, g, dx, Py_ssize_t n, bint grad_block, int n_threads):
    cdef void* py = _data(y)
    cdef void* pg = _data(g)
    cdef void* pd = _data(dx)
    with nogil:
        if f32:
            tanh_backward_kernel(<const float*> py, <const float*> pg, <float*> pd, n,
                                 grad_block, n_threads)
        else:
            tanh_backward_kernel(<const double*> py, <const double*> pg, <double*> pd, n,
                                 grad_block, n_threads)


cdef _leaky_relu(bint f32, x, y, Py_ssize_t n, double slope, int n_threads):
    cdef void* px = _data(x)
    cdef void* py = _data(y)
    with nogil:
        if f32:
            leaky_relu_kernel(<const float*> px, <float*> py, n, <float> slope, n_threads)
        else:
            leaky_relu_kernel(<const double*> px, <double*> py, n, slope, n_threads)


cdef _leaky_relu_backward(bint f32, s, g, dx, Py_ssize_t n, bint grad_block, double slope,
                          int n_threads):
    cdef void* ps = _data(s)
    cdef void* pg = _data(g)
    cdef void* pd = _data(dx)
    with nogil:
        if f32:
            leaky_relu_backward_kernel(<const float*> ps, <const float*> pg, <float*> pd, n,
                                       grad_block, <float> slope, n_threads)
        else:
            leaky_relu_backward_kernel(<const double*> ps, <const double*> pg, <double*> pd, n,
                                       grad_block, slope, n_threads)


cdef _elu(bint f32, x, y, Py_ssize_t n, double alpha, double scale, int n_threads):
    cdef void* px = _data(x)
    cdef void* py = _data(y)
    with nogil:
        if f32:
            elu_kernel(<const float*> px, <float*> py, n, <float> alpha, <float> scale, n_threads)
        else:
            elu_kernel(<const double*> px, <double*> py, n, alpha, scale, n_threads)


cdef _elu_backward(bint f32, s, g, dx, Py_ssize_t n, bint grad_block, double alpha,
                   double scale, bint from_output, int n_threads):
    cdef void* ps = _data(s)
    cdef void* pg = _data(g)
    cdef void* pd = _data(dx)
    with nogil:
        if f32:
            elu_backward_kernel(<const float*> ps, <const float*> pg, <float*> pd, n, grad_block,
                                <float> alpha, <float> scale, from_output, n_threads)
        else:
            elu_backward_kernel(<const double*> ps, <const double*> pg, <double*> pd, n,
                                grad_block, alpha, scale, from_output, n_threads)


cdef _unary(bint f32, int op, x, y, Py_ssize_t n, int n_threads):
    cdef void* px = _data(x)
    cdef void* py = _data(y)
    with nogil:
        if f32:
            unary_kernel(op, <const float*> px, <float*> py, n, n_threads)
        else:
            unary_kernel(op, <const double*> px, <double*> py, n, n_threads)


cdef _unary_backward(bint f32, int op, s, g, dx, Py_ssize_t n, bint grad_block, int n_threads):
    cdef void* ps = _data(s)
    cdef void* pg = _data(g)
    cdef void* pd = _data(dx)
    with nogil:
        if f32:
            unary_backward_kernel(op, <const float*> ps, <const float*> pg, <float*> pd, n,
                                  grad_block, n_threads)
        else:
            unary_backward_kernel(op, <const double*> ps, <const double*> pg, <double*> pd, n,
                                  grad_block, n_threads)


def _softmax(const floating[:, ::1] x, floating[:, ::1] y, bint log_output, int n_threads):
    with nogil:
        softmax_kernel(x, y, log_output, n_threads)


def _logsumexp(const floating[:, ::1] x, floating[::1] out, int n_threads):
    with nogil:
        logsumexp_kernel(x, out, n_threads)


def _softmax_backward(const floating[:, ::1] y, const floating[:, ::1] g,
                      floating[:, ::1] dx, bint log_output, int n_threads):
    with nogil:
        softmax_backward_kernel(y, g, dx, log_output, n_threads)


# ---------------------------------------------------------------------------------------
# Python-visible wrappers: validate, allocate, call.
# ---------------------------------------------------------------------------------------

SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


def _check_array(a, name, dtype=None, shape=None):
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


def _output(out, like):
    if out is None:    # `like` is C-contiguous: an empty array of its shape and dtype
        return cnp.PyArray_EMPTY(cnp.PyArray_NDIM(<cnp.ndarray> like),
                                 cnp.PyArray_DIMS(<cnp.ndarray> like),
                                 cnp.PyArray_TYPE(<cnp.ndarray> like), 0)
    _check_array(out, "out", like.dtype, like.shape)
    if not out.flags.writeable:
        raise ValueError("Invalid argument `out`: expected a writeable array. "
                         "Received a read-only array")
    return out


def _threads(n_threads):
    n_threads = int(n_threads)
    if n_threads < 1:
        raise ValueError(f"Invalid argument `n_threads`: expected an int >= 1. "
                         f"Received: n_threads={n_threads}")
    return n_threads


def _as_rows(a, name):
    _check_array(a, name)
    if a.ndim != 2:
        raise ValueError(f"Invalid argument `{name}`: expected a 2-D (rows, cols) array. "
                         f"Received: {name}.shape={a.shape}")
    return a


cdef inline bint _is_f32(a):
    # the arrays were checked to be float32 or float64
    return cnp.PyArray_TYPE(<cnp.ndarray> a) == cnp.NPY_FLOAT32


cdef inline Py_ssize_t _size(a):
    return cnp.PyArray_SIZE(<cnp.ndarray> a)


cdef bint _broadcast_value(a):
    """True for an array of two or more elements that are one value (every stride 0)."""
    cdef int d
    cdef cnp.ndarray arr = <cnp.ndarray> a
    if cnp.PyArray_SIZE(arr) < 2:
        return False
    for d in range(cnp.PyArray_NDIM(arr)):
        if cnp.PyArray_STRIDES(arr)[d] != 0:
            return False
    return True


def _grad_operand(grad, like):
    """``(array, grad_block)`` for a backward kernel.

    ``grad`` itself (checked to be C-contiguous, of ``like``'s shape and dtype), or, when
    ``grad`` is one value broadcast to that shape (every stride 0: what ``.sum().backward()``
    sends), a block of ``_BLOCK`` copies of the value that every block of the kernel reads
    and ``grad_block=True``: no full-size copy of the gradient, one pass fewer over memory
    (benchmarks/bench_autograd.py, the activation layer workloads).  The kernels do the same
    arithmetic either way.
    """
    if isinstance(grad, np.ndarray) and grad.dtype == like.dtype and grad.shape == like.shape \
            and _broadcast_value(grad):
        return np.full(min(_size(grad), <Py_ssize_t> _BLOCK), grad[(0,) * grad.ndim],
                       dtype=grad.dtype), True
    _check_array(grad, "grad", like.dtype, like.shape)
    return grad, False


def sigmoid_forward(x, out=None, n_threads=1):
    """Logistic sigmoid ``y = 1 / (1 + exp(-x))``, elementwise, without overflow.

    Args:
        x: float32/float64 C-contiguous array, any shape.
        out: optional output array (same shape and dtype as ``x``); may be ``x`` itself.
        n_threads: OpenMP threads.

    Returns:
        ``y`` (``out`` when given).

    Shape:
        x: ``(*)``; y: same as x.
    """
    _check_array(x, "x")
    y = _output(out, x)
    _sigmoid(_is_f32(x), x, y, _size(x), _threads(n_threads))
    return y


def sigmoid_backward(y, grad, out=None, n_threads=1):
    """``dx = grad * y * (1 - y)`` from the saved sigmoid output ``y``.

    Shape:
        y, grad, dx: ``(*)``, all the same.
    """
    _check_array(y, "y")
    g, grad_block = _grad_operand(grad, y)
    dx = _output(out, y)
    _sigmoid_backward(_is_f32(y), y, g, dx, _size(y), grad_block, _threads(n_threads))
    return dx


def tanh_forward(x, out=None, n_threads=1):
    """``y = tanh(x)`` elementwise.

    Shape:
        x: ``(*)``; y: same as x.
    """
    _check_array(x, "x")
    y = _output(out, x)
    _tanh_forward(_is_f32(x), x, y, _size(x), _threads(n_threads))
    return y


def tanh_backward(y, grad, out=None, n_threads=1):
    """``dx = grad * (1 - y**2)`` from the saved tanh output ``y``.

    Shape:
        y, grad, dx: ``(*)``, all the same.
    """
    _check_array(y, "y")
    g, grad_block = _grad_operand(grad, y)
    dx = _output(out, y)
    _tanh_backward(_is_f32(y), y, g, dx, _size(y), grad_block, _threads(n_threads))
    return dx


def leaky_relu_forward(x, negative_slope=0.0, out=None, n_threads=1):
    """``y = x if x > 0 else negative_slope * x`` (``negative_slope=0`` is relu).

    Shape:
        x: ``(*)``; y: same as x.
    """
    _check_array(x, "x")
    y = _output(out, x)
    _leaky_relu(_is_f32(x), x, y, _size(x), float(negative_slope), _threads(n_threads))
    return y


def leaky_relu_backward(saved, grad, negative_slope=0.0, out=None, n_threads=1):
    """``dx = grad if saved > 0 else negative_slope * grad``.

    ``saved`` is the forward input, or its output when ``negative_slope >= 0`` (then
    ``y > 0`` exactly where ``x > 0``).

    Shape:
        saved, grad, dx: ``(*)``, all the same.
    """
    _check_array(saved, "saved")
    g, grad_block = _grad_operand(grad, saved)
    dx = _output(out, saved)
    _leaky_relu_backward(_is_f32(saved), saved, g, dx, _size(saved), grad_block,
                         float(negative_slope), _threads(n_threads))
    return dx


def elu_forward(x, alpha=1.0, scale=1.0, out=None, n_threads=1):
    """``y = scale * (x if x > 0 else alpha * (exp(x) - 1))``; selu is
    ``alpha=SELU_ALPHA, scale=SELU_SCALE``.

    Shape:
        x: ``(*)``; y: same as x.
    """
    _check_array(x, "x")
    y = _output(out, x)
    _elu(_is_f32(x), x, y, _size(x), float(alpha), float(scale), _threads(n_threads))
    return y


def elu_backward(saved, grad, alpha=1.0, scale=1.0, from_output=True, out=None,
                 n_threads=1):
    """ELU gradient from the saved output (``from_output=True``, needs ``alpha >= 0``)
    or from the saved input.

    From the output: ``dx = grad * scale`` where ``y > 0``, else ``grad * (y + scale*alpha)``.
    From the input: ``grad * scale`` where ``x > 0``, else ``grad * scale*alpha*exp(x)``.

    Shape:
        saved, grad, dx: ``(*)``, all the same.
    """
    _check_array(saved, "saved")
    g, grad_block = _grad_operand(grad, saved)
    if from_output and alpha < 0:
        raise ValueError(f"Invalid argument `alpha`: the gradient from the output needs "
                         f"alpha >= 0. Received: alpha={alpha}")
    dx = _output(out, saved)
    _elu_backward(_is_f32(saved), saved, g, dx, _size(saved), grad_block, float(alpha),
                  float(scale), bool(from_output), _threads(n_threads))
    return dx


def softmax_forward(x, log=False, out=None, n_threads=1):
    """Softmax (or log-softmax when ``log``) of each row, stable (row max subtracted).

    Args:
        x: float32/float64 C-contiguous 2-D array ``(rows, cols)``; the functional layer
           moves any axis to the end and reshapes.
        log: return ``log_softmax`` instead.
        out: optional output array like ``x``.
        n_threads: OpenMP threads (split over rows).

    Returns:
        ``y`` with ``y[i] = exp(x[i] - max) / sum(exp(x[i] - max))`` (or its log).

    Shape:
        x: ``(rows, cols)``; y: same as x.
    """
    _as_rows(x, "x")
    y = _output(out, x)
    _softmax(x, y, bool(log), _threads(n_threads))
    return y


def logsumexp_rows(x, n_threads=1):
    """``log(sum(exp(x[i])))`` of each row, stable (row max subtracted; a row of -inf gives
    -inf, a row holding +inf gives +inf). The same row code as ``softmax_forward(log=True)``.

    Shape:
        x: ``(rows, cols)`` float32/float64 C-contiguous, ``cols >= 1``; result: ``(rows,)``.
    """
    _as_rows(x, "x")
    if x.shape[1] == 0:
        raise ValueError("Invalid argument `x`: expected at least one column. "
                         f"Received: x.shape={x.shape}")
    out = np.empty(x.shape[0], dtype=x.dtype)
    _logsumexp(x, out, _threads(n_threads))
    return out


def softmax_backward(y, grad, log=False, out=None, n_threads=1):
    """Row-wise softmax gradient from the saved output.

    softmax: ``dx = y * (grad - sum(grad * y))``; log-softmax:
    ``dx = grad - exp(y) * sum(grad)`` (sums over each row).

    Shape:
        y, grad, dx: ``(rows, cols)``.
    """
    _as_rows(y, "y")
    _check_array(grad, "grad", y.dtype, y.shape)
    dx = _output(out, y)
    _softmax_backward(y, grad, dx, bool(log), _threads(n_threads))
    return dx


def _unary_op(op):
    if op not in UNARY_OPS:
        raise ValueError(f"Invalid argument `op`: expected one of {sorted(UNARY_OPS)}. "
                         f"Received: op={op!r}")
    return UNARY_OPS[op]


def unary_forward(x, op, out=None, n_threads=1):
    """``y = f(x)`` elementwise for ``op`` in ``UNARY_OPS`` (``"gelu"``, ``"gelu_tanh"``,
    ``"silu"``, ``"softplus"``, ``"softsign"``, ``"relu6"``, ``"hard_sigmoid"``,
    ``"hard_silu"``, ``"mish"``, ``"exp"``).

    Shape:
        x: ``(*)``; y: same as x.
    """
    code = _unary_op(op)
    _check_array(x, "x")
    y = _output(out, x)
    _unary(_is_f32(x), code, x, y, _size(x), _threads(n_threads))
    return y


def unary_backward(saved, grad, op, out=None, n_threads=1):
    """``dx = grad * f'(x)`` from the saved input ``x`` (from the saved output for ``"exp"``).

    Shape:
        saved, grad, dx: ``(*)``, all the same.
    """
    code = _unary_op(op)
    _check_array(saved, "saved")
    g, grad_block = _grad_operand(grad, saved)
    dx = _output(out, saved)
    _unary_backward(_is_f32(saved), code, saved, g, dx, _size(saved), grad_block,
                    _threads(n_threads))
    return dx
