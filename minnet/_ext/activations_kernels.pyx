"""Activation kernels: elementwise sigmoid / tanh / relu / leaky relu / elu (selu).

The "unary" family of the newer activations (gelu, silu, softplus, mish, ...) is in
``unary_kernels.pyx`` and the softmax / log-softmax / logsumexp rows are in ``softmax_kernels.pyx``;
the thread-team and block sizes and the wrappers' checks all three share are in
``_base.pxd``/``_base.pyx``.

Every kernel reads C-contiguous float32/float64 arrays (one fused ``floating`` type) and
writes into an output the wrapper allocated (or the caller passed).  Elementwise kernels
work on the flat view and split it over OpenMP threads (``prange``) in blocks: each thread
writes its own blocks, so the result does not depend on the thread count.  The math of
each backward is in ``docs/math/activations.md``.

The Python-visible wrappers (``sigmoid_forward``, ...) validate dtypes, shapes and
contiguity, so the ``nogil`` loops below run without bounds checks.
"""
from cython.parallel cimport prange
cimport numpy as cnp
from libc.math cimport exp, expm1, log, log1p, tanh, fabs, erf

from minnet._ext._blas cimport floating
from minnet._ext._base cimport (BLOCK, as_rows, block_len, check_array, check_threads, data_ptr,
                                grad_operand, is_f32, n_blocks, output_like, size_of, team)
from minnet._ext._fastmath cimport (exp_nonpos, sigmoid, minnet_exp_nonpos_f, minnet_tanh_block_f, minnet_row_max_f,
                                    minnet_exp_sum_f, minnet_dot_f, minnet_tanh_f,
                                    minnet_expm1_nonpos_f)

cnp.import_array()


cdef extern from "activations_kernels.h":
    void minnet_sigmoid_f(const float* x, float* y, Py_ssize_t n) noexcept nogil
    void minnet_elu_f(const float* x, float* y, Py_ssize_t n, float alpha,
                      float scale) noexcept nogil
    void minnet_elu_backward_f(const float* s, const float* g, float* dx, Py_ssize_t n,
                               float alpha, float scale, int from_output, int g_step) noexcept nogil
    void minnet_sigmoid_backward_f(const float* y, const float* g, float* dx,
                                   Py_ssize_t n, int g_step) noexcept nogil
    void minnet_tanh_backward_f(const float* y, const float* g, float* dx,
                                Py_ssize_t n, int g_step) noexcept nogil
    void minnet_leaky_relu_f(const float* x, float* y, Py_ssize_t n, float slope) noexcept nogil
    void minnet_leaky_relu_backward_f(const float* s, const float* g, float* dx, Py_ssize_t n,
                                      float slope, int g_step) noexcept nogil
    void minnet_relu_backward_f(const float* y, const float* g, float* dx, Py_ssize_t n,
                                int g_step) noexcept nogil


# ---------------------------------------------------------------------------------------
# Elementwise kernels.  Each op has a block function (a plain loop over `n` elements at
# pointers); one driver, `_run`, hands blocks of BLOCK elements to the threads; blocks never
# overlap, so no two threads write the same element and the result does not depend on
# the thread count.  `y` may be `x` (in place).
# ---------------------------------------------------------------------------------------

cdef inline void _sigmoid_block(const floating* x, floating* y, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i
    if floating is float:    # fast path: benchmarks/bench_activations.py "sigmoid"
        minnet_sigmoid_f(x, y, n)     # the same formula in a cloned C loop (top of the file)
    else:
        for i in range(n):
            y[i] = sigmoid(x[i])


cdef inline void _sigmoid_backward_block(const floating* y, const floating* g, floating* dx,
                                         Py_ssize_t n, bint grad_block) noexcept nogil:
    cdef Py_ssize_t i
    if floating is float:    # fast path: benchmarks/bench_activations.py "sigmoid"
        minnet_sigmoid_backward_f(y, g, dx, n, not grad_block)   # the same formula, in C
    else:
        for i in range(n):
            dx[i] = g[i] * y[i] * (1 - y[i])


cdef inline void _tanh_block(const floating* x, floating* y, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i
    if floating is float:    # fast path: benchmarks/bench_activations.py "tanh"
        minnet_tanh_block_f(x, y, n)    # branch-free, vectorised (see _fastmath.pxd)
    else:
        for i in range(n):
            y[i] = tanh(x[i])


cdef inline void _tanh_backward_block(const floating* y, const floating* g, floating* dx,
                                      Py_ssize_t n, bint grad_block) noexcept nogil:
    cdef Py_ssize_t i
    if floating is float:    # fast path: benchmarks/bench_activations.py "tanh"
        minnet_tanh_backward_f(y, g, dx, n, not grad_block)      # the same formula, in C
    else:
        for i in range(n):
            dx[i] = g[i] * (1 - y[i] * y[i])


cdef inline void _leaky_relu_block(const floating* x, floating* y, Py_ssize_t n,
                                   floating slope) noexcept nogil:
    # Both sides are computed and then selected: a branch-free loop the compiler
    # vectorises (it may not move a float multiply out of an `if` on its own).
    cdef Py_ssize_t i
    cdef floating v, neg
    if floating is float:    # fast path: benchmarks/bench_autograd.py "relu layer"
        minnet_leaky_relu_f(x, y, n, slope)     # the same loops in C (top of the file)
        return
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


cdef inline void _leaky_relu_backward_block(const floating* s, const floating* g,
                                            floating* dx, Py_ssize_t n,
                                            floating slope, bint grad_block) noexcept nogil:
    cdef Py_ssize_t i
    cdef floating neg
    if floating is float:    # fast path: benchmarks/bench_autograd.py "relu layer"
        minnet_leaky_relu_backward_f(s, g, dx, n, slope, not grad_block)    # the same loop in C
        return
    for i in range(n):
        neg = g[i] * slope
        dx[i] = g[i] if s[i] > 0 else neg


cdef inline void _relu_backward_block(const floating* y, const floating* g, floating* dx,
                                      Py_ssize_t n, bint grad_block) noexcept nogil:
    # torch's threshold_backward: a select on y <= 0, not g * 0 (an infinite g where
    # y <= 0 gives 0, a NaN y passes g); leaky_relu(slope=0) keeps g * slope, as torch's
    cdef Py_ssize_t i
    cdef floating v
    if floating is float:    # fast path: benchmarks/bench_autograd.py "relu layer"
        minnet_relu_backward_f(y, g, dx, n, not grad_block)    # the same loop in C
        return
    for i in range(n):
        v = g[i]     # read unconditionally: a load inside the select would not vectorise
        dx[i] = 0 if y[i] <= 0 else v


cdef inline void _elu_block(const floating* x, floating* y, Py_ssize_t n,
                            floating alpha, floating scale) noexcept nogil:
    cdef Py_ssize_t i
    cdef floating v
    if floating is float:    # fast path: benchmarks/bench_autograd.py "elu layer"
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
            y[i] = scale * alpha * expm1(v if not (v >= 0) else 0)     # float64 only


cdef inline void _elu_backward_block(const floating* s, const floating* g, floating* dx,
                                     Py_ssize_t n, floating alpha, floating scale,
                                     bint from_output, bint grad_block) noexcept nogil:
    cdef Py_ssize_t i
    cdef floating v, neg
    cdef floating scale_alpha = scale * alpha
    if floating is float:    # fast path: benchmarks/bench_autograd.py "elu layer"
        minnet_elu_backward_f(s, g, dx, n, alpha, scale, from_output, not grad_block)
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
            neg = scale_alpha * exp_nonpos(v if v < 0 else 0)
            dx[i] = g[i] * (scale if v > 0 else neg)


cdef enum:
    SIGMOID, SIGMOID_BACKWARD, TANH, TANH_BACKWARD, LEAKY_RELU, LEAKY_RELU_BACKWARD, RELU_BACKWARD,
    ELU, ELU_BACKWARD


cdef inline void _block(int op, const floating* s, const floating* g, floating* y, Py_ssize_t n,
                        floating a, floating c, bint flag, bint grad_block) noexcept nogil:
    # s: the input, or for a backward op the saved input or output; g: dL/dy (backward
    # ops only); y: the result.  a, c: leaky_relu's slope; elu's alpha and scale.
    # grad_block: g holds one value for every element (see _run).
    if op == SIGMOID:
        _sigmoid_block(s, y, n)
    elif op == SIGMOID_BACKWARD:
        _sigmoid_backward_block(s, g, y, n, grad_block)
    elif op == TANH:
        _tanh_block(s, y, n)
    elif op == TANH_BACKWARD:
        _tanh_backward_block(s, g, y, n, grad_block)
    elif op == LEAKY_RELU:      # relu is slope = 0
        _leaky_relu_block(s, y, n, a)
    elif op == LEAKY_RELU_BACKWARD:
        # for slope >= 0 the output is > 0 exactly where the input is: either may be saved
        _leaky_relu_backward_block(s, g, y, n, a, grad_block)
    elif op == RELU_BACKWARD:
        _relu_backward_block(s, g, y, n, grad_block)
    elif op == ELU:
        # y = scale * (x if x > 0 else alpha * (exp(x) - 1)); selu is one (alpha, scale)
        # pair.  expm1 keeps full relative accuracy for small |x|, where exp(x) - 1 would
        # cancel (float32: minnet_expm1_nonpos_f, <= 2 ulp; float64: libm)
        _elu_block(s, y, n, a, c)
    else:
        _elu_backward_block(s, g, y, n, a, c, flag, grad_block)


cdef void _run(int op,
               const floating* s,     # IN  (n,)
               const floating* g,     # IN  (n,), one block (grad_block), or NULL (forward ops)
               floating* y,           # OUT (n,)
               Py_ssize_t n, bint grad_block, floating a, floating c, bint flag,
               int n_threads) noexcept nogil:
    # grad_block: `g` holds BLOCK copies of one value (a broadcast gradient, see
    # grad_operand) and every block reads it from its start (the float64 loops); the
    # float32 C loops read its first element once (MINNET_FOR_GRAD, _base.h).
    cdef Py_ssize_t b, start
    if team(n, n_threads) == 1:
        # the same blocks in a row: an OpenMP region for one thread costs more than a
        # small array's loop (benchmarks/bench_autograd.py, mlp100)
        for b in range(n_blocks(n)):
            start = b * BLOCK
            _block(op, s + start, g if grad_block else g + start, y + start, block_len(n, start),
                   a, c, flag, grad_block)
        return
    for b in prange(n_blocks(n), num_threads=n_threads, schedule="static"):
        start = b * BLOCK
        _block(op, s + start, g if grad_block else g + start, y + start, block_len(n, start),
               a, c, flag, grad_block)


# The typed entry point: the wrappers below have checked dtype, shape and contiguity, so
# the kernels get the arrays' data pointers (a memoryview per array and Cython's
# fused-function dispatch cost more than a small array's loop: benchmarks/bench_autograd.py,
# mlp100).  `f32` selects the float specialisation, else double.  GIL released.

cdef _call(int op, bint f32, s, g, y, Py_ssize_t n, bint grad_block, double a, double c,
           bint flag, int n_threads):
    cdef void* ps = data_ptr(s)
    cdef void* pg = NULL if g is None else data_ptr(g)     # None: a forward op
    cdef void* py = data_ptr(y)
    with nogil:
        if f32:
            _run(op, <const float*> ps, <const float*> pg, <float*> py, n, grad_block,
                 <float> a, <float> c, flag, n_threads)
        else:
            _run(op, <const double*> ps, <const double*> pg, <double*> py, n, grad_block,
                 a, c, flag, n_threads)


# ---------------------------------------------------------------------------------------
# Python-visible wrappers: validate, allocate, call.
# ---------------------------------------------------------------------------------------

SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


def _forward(int op, x, out, n_threads, a=0, c=0):
    """Check ``x``, take ``out`` or allocate ``y`` like ``x``, run ``op``; returns ``y``."""
    check_array(x, "x")
    y = output_like(out, x)
    _call(op, is_f32(x), x, None, y, size_of(x), True, float(a), float(c), False,
          check_threads(n_threads))
    return y


def _backward(int op, saved, grad, out, n_threads, name, a=0):
    """Check ``saved`` (called ``name``) and ``grad``, take ``out`` or allocate ``dx``, run
    ``op``; returns ``dx``."""
    check_array(saved, name)
    g, grad_block = grad_operand(grad, saved)
    dx = output_like(out, saved)
    _call(op, is_f32(saved), saved, g, dx, size_of(saved), grad_block, float(a), 0, False,
          check_threads(n_threads))
    return dx


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
    return _forward(SIGMOID, x, out, n_threads)


# Alike by shape (duplicates): the public wrappers, one per op and direction, each the
# documented entry point of its op (a docstring and one call of _forward or _backward).
def sigmoid_backward(y, grad, out=None, n_threads=1):
    """``dx = grad * y * (1 - y)`` from the saved sigmoid output ``y``.

    Shape:
        y, grad, dx: ``(*)``, all the same.
    """
    return _backward(SIGMOID_BACKWARD, y, grad, out, n_threads, "y")


def tanh_forward(x, out=None, n_threads=1):
    """``y = tanh(x)`` elementwise.

    Shape:
        x: ``(*)``; y: same as x.
    """
    return _forward(TANH, x, out, n_threads)


def tanh_backward(y, grad, out=None, n_threads=1):
    """``dx = grad * (1 - y**2)`` from the saved tanh output ``y``.

    Shape:
        y, grad, dx: ``(*)``, all the same.
    """
    return _backward(TANH_BACKWARD, y, grad, out, n_threads, "y")


def leaky_relu_forward(x, negative_slope=0.0, out=None, n_threads=1):
    """``y = x if x > 0 else negative_slope * x`` (``negative_slope=0`` is relu).

    Shape:
        x: ``(*)``; y: same as x.
    """
    return _forward(LEAKY_RELU, x, out, n_threads, negative_slope)


def leaky_relu_backward(saved, grad, negative_slope=0.0, out=None, n_threads=1):
    """``dx = grad if saved > 0 else negative_slope * grad``.

    ``saved`` is the forward input, or its output when ``negative_slope >= 0`` (then
    ``y > 0`` exactly where ``x > 0``).

    Shape:
        saved, grad, dx: ``(*)``, all the same.
    """
    return _backward(LEAKY_RELU_BACKWARD, saved, grad, out, n_threads, "saved", negative_slope)


def relu_backward(y, grad, out=None, n_threads=1):
    """``dx = 0 if y <= 0 else grad`` from the saved relu output ``y`` (torch's
    ``threshold_backward``: an infinite ``grad`` where ``y <= 0`` gives 0, a NaN ``y``
    passes ``grad``).

    Shape:
        y, grad, dx: ``(*)``, all the same.
    """
    return _backward(RELU_BACKWARD, y, grad, out, n_threads, "y")


def elu_forward(x, alpha=1.0, scale=1.0, out=None, n_threads=1):
    """``y = scale * (x if x > 0 else alpha * (exp(x) - 1))``; selu is
    ``alpha=SELU_ALPHA, scale=SELU_SCALE``.

    Shape:
        x: ``(*)``; y: same as x.
    """
    return _forward(ELU, x, out, n_threads, alpha, scale)


def elu_backward(saved, grad, alpha=1.0, scale=1.0, from_output=True, out=None,
                 n_threads=1):
    """ELU gradient from the saved output (``from_output=True``, needs ``alpha >= 0``)
    or from the saved input.

    From the output: ``dx = grad * scale`` where ``y > 0``, else ``grad * (y + scale*alpha)``.
    From the input: ``grad * scale`` where ``x > 0``, else ``grad * scale*alpha*exp(x)``.

    Shape:
        saved, grad, dx: ``(*)``, all the same.
    """
    check_array(saved, "saved")
    g, grad_block = grad_operand(grad, saved)
    if from_output and alpha < 0:
        raise ValueError(f"Invalid argument `alpha`: the gradient from the output needs "
                         f"alpha >= 0. Received: alpha={alpha}")
    dx = output_like(out, saved)
    _call(ELU_BACKWARD, is_f32(saved), saved, g, dx, size_of(saved), grad_block, float(alpha),
          float(scale), bool(from_output), check_threads(n_threads))
    return dx
