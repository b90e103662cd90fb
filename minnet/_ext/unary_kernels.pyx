"""The "unary" activation kernels: gelu, gelu-tanh, silu, softplus, softsign, relu6, hard
sigmoid, hard silu, mish and exp: one forward and one backward kernel selected by an op code
(``UNARY_OPS``), elementwise over C-contiguous float32/float64 arrays in blocks split over
OpenMP threads (the result does not depend on the thread count).  The math of each
derivative is in ``docs/math/activations.md``; the shared block machinery and the wrappers'
checks are in ``_base.pxd``/``_base.pyx``.
"""
from cython.parallel cimport prange
cimport numpy as cnp
from libc.math cimport exp, log, log1p, tanh, fabs, erf

from minnet._ext._blas cimport floating
from minnet._ext._base cimport (BLOCK, block_len, check_array, check_threads, data_ptr,
                                grad_operand, is_f32, n_blocks, output_like, size_of, team)
from minnet._ext._fastmath cimport sigmoid as _f_sigmoid, tanh_any

cnp.import_array()


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


cdef extern from "unary_kernels.h":
    void minnet_unary_f(int op, const float* x, float* y, Py_ssize_t n) noexcept nogil
    void minnet_unary_backward_f(int op, const float* s, const float* g, float* dx,
                                 Py_ssize_t n, int g_step) noexcept nogil


# The Cython loops below are the float64 path: float32 runs the same formulas in C
# (unary_kernels.h), so these scalar helpers are double only.

cdef inline double _phi_cdf(double v) noexcept nogil:
    """P(N(0, 1) <= v) = 0.5 (1 + erf(v / sqrt 2))."""
    return 0.5 * (1 + erf(v * _SQRT1_2))


cdef inline double _softplus(double v) noexcept nogil:
    # PyTorch's softplus(beta=1, threshold=20): v above 20; below, log1p(exp(v)) (float32,
    # unary_kernels.h: max(v, 0) + log1p(exp(-|v|)), equal to it, and exp never overflows).
    return v if v > 20 else log1p(exp(v))


# Alike by shape (duplicates): one plain loop per op, the op tested once per block; a
# per-element switch in one loop was 3-4x slower on the cheap float64 ops (relu6, hard
# silu: the loop no longer vectorises; measured with the kernels' own wrappers, 2026-12-02).
cdef void _unary_block(int op, const floating* x, floating* y, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i
    cdef floating v, t
    if floating is float:    # fast path: benchmarks/bench_activations_extra.py "gelu"
        minnet_unary_f(op, x, y, n)           # the same formulas, in C (top of the file)
        return
    if op == OP_GELU:
        for i in range(n):
            v = x[i]
            y[i] = v * _phi_cdf(v)
    elif op == OP_GELU_TANH:
        for i in range(n):
            v = x[i]
            t = tanh_any(<floating> _SQRT_2_PI * (v + <floating> _GELU_C * v * v * v))
            y[i] = <floating> 0.5 * v * (1 + t)
    elif op == OP_SILU:
        for i in range(n):
            v = x[i]
            y[i] = v * _f_sigmoid(v)
    elif op == OP_SOFTPLUS:
        for i in range(n):
            y[i] = _softplus(x[i])
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
            y[i] = v * tanh_any(_softplus(v))
    elif op == OP_EXP:
        for i in range(n):
            y[i] = exp(x[i])


cdef void _unary_backward_block(int op, const floating* s, const floating* g, floating* dx,
                                Py_ssize_t n, bint grad_block) noexcept nogil:
    # s is the saved input x (the saved output y for OP_EXP).  grad_block: g holds one
    # value for every element (float32 reads g[0] once, float64 the block of copies).
    cdef Py_ssize_t i
    cdef floating v, t, sg, d
    if floating is float:    # fast path: benchmarks/bench_activations_extra.py "gelu"
        minnet_unary_backward_f(op, s, g, dx, n, not grad_block)
        return
    if op == OP_GELU:
        # d/dx = Phi(x) + x phi(x)
        for i in range(n):
            v = s[i]
            d = _phi_cdf(v) + v * <floating> _INV_SQRT_2PI * exp(<floating> -0.5 * v * v)
            dx[i] = g[i] * d
    elif op == OP_GELU_TANH:
        # with u = k (x + c x^3), t = tanh u: d/dx = (1 + t)/2 + x (1 - t^2) k (1 + 3 c x^2) / 2
        for i in range(n):
            v = s[i]
            t = tanh_any(<floating> _SQRT_2_PI * (v + <floating> _GELU_C * v * v * v))
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
            t = tanh_any(_softplus(v))
            dx[i] = g[i] * (t + v * _f_sigmoid(v) * (1 - t * t))
    elif op == OP_EXP:
        for i in range(n):
            dx[i] = g[i] * s[i]


cdef inline void _block(int op, const floating* s, const floating* g, floating* y,
                        Py_ssize_t n, bint grad_block) noexcept nogil:
    if g == NULL:
        _unary_block(op, s, y, n)
    else:
        _unary_backward_block(op, s, g, y, n, grad_block)


cdef void unary_kernel(int op,
                       const floating* s,      # IN  x; backward: the saved input (output for exp)
                       const floating* grad,   # IN  NULL (forward), (n,), or one block (grad_block)
                       floating* y,            # OUT (n,): y, or dx
                       Py_ssize_t n, bint grad_block, int n_threads) noexcept nogil:
    """y = f(x) (grad NULL, grad_block true), else dx = grad * f'(x), block by block."""
    cdef Py_ssize_t b, start
    if team(n, n_threads) == 1:
        for b in range(n_blocks(n)):
            start = b * BLOCK
            _block(op, s + start, grad if grad_block else grad + start, y + start,
                   block_len(n, start), grad_block)
        return
    for b in prange(n_blocks(n), num_threads=n_threads, schedule="static"):
        start = b * BLOCK
        _block(op, s + start, grad if grad_block else grad + start, y + start,
               block_len(n, start), grad_block)


# ---------------------------------------------------------------------------------------
# The typed entry point: the wrappers below have checked dtype, shape and contiguity, so the
# elementwise kernel gets the arrays' data pointers (a memoryview per array and Cython's
# fused-function dispatch cost more than a small array's loop: benchmarks/bench_autograd.py,
# mlp100).  `f32` selects the float specialisation, else double.  GIL released.
# ---------------------------------------------------------------------------------------

cdef _call(bint f32, int op, s, g, y, Py_ssize_t n, bint grad_block, int n_threads):
    cdef void* ps = data_ptr(s)
    cdef void* pg = NULL if g is None else data_ptr(g)     # None: the forward
    cdef void* py = data_ptr(y)
    with nogil:
        if f32:
            unary_kernel(op, <const float*> ps, <const float*> pg, <float*> py, n, grad_block,
                         n_threads)
        else:
            unary_kernel(op, <const double*> ps, <const double*> pg, <double*> py, n,
                         grad_block, n_threads)


# ---------------------------------------------------------------------------------------
# Python-visible wrappers: validate, allocate, call.
# ---------------------------------------------------------------------------------------

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
    check_array(x, "x")
    y = output_like(out, x)
    _call(is_f32(x), code, x, None, y, size_of(x), True, check_threads(n_threads))
    return y


def unary_backward(saved, grad, op, out=None, n_threads=1):
    """``dx = grad * f'(x)`` from the saved input ``x`` (from the saved output for ``"exp"``).

    Shape:
        saved, grad, dx: ``(*)``, all the same.
    """
    code = _unary_op(op)
    check_array(saved, "saved")
    g, grad_block = grad_operand(grad, saved)
    dx = output_like(out, saved)
    _call(is_f32(saved), code, saved, g, dx, size_of(saved), grad_block, check_threads(n_threads))
    return dx
