"""Row kernels: softmax, log-softmax and logsumexp along the last axis of a 2-D
``(rows, cols)`` float32/float64 array (the callers move any axis last).  Rows are split
over OpenMP threads and each row is summed by one thread in a fixed order, so the result
does not depend on the thread count.  The math is in ``docs/math/activations.md``.
"""
from cython.parallel cimport prange
cimport numpy as cnp
from libc.math cimport exp, log, isinf, NAN

import numpy as np

from minnet._ext._blas cimport floating
from minnet._ext._base cimport (BLOCK, as_rows, block_len, check_array, check_threads, data_ptr,
                                grad_operand, is_f32, n_blocks, output_like, size_of, team)
from minnet._ext._fastmath cimport (exp_nonpos, minnet_exp_nonpos_f, minnet_tanh_block_f, minnet_row_max_f,
                                    minnet_exp_sum_f, minnet_dot_f, minnet_tanh_f,
                                    minnet_expm1_nonpos_f, minnet_ce_grad_row_f,
                                    minnet_scale_f, minnet_short_rows_f, MINNET_SHORT_ROWS,
                                    MINNET_EXP_LANES)

cnp.import_array()


# ---------------------------------------------------------------------------------------
# Row-wise softmax / log-softmax on (rows, cols).
# ---------------------------------------------------------------------------------------

cdef inline floating _row_max(const floating* x, Py_ssize_t cols) noexcept nogil:
    # float32: lane-parallel max the compiler vectorises (_fastmath.pxd).
    cdef Py_ssize_t j
    cdef floating m = x[0]
    if floating is float:    # fast path: benchmarks/bench_autograd.py "softmax dim -1"
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
    if floating is float:    # fast path: benchmarks/bench_autograd.py "logsumexp dim 1"
        total = minnet_exp_sum_f(x, m, NULL, cols)
    else:
        for j in range(cols):
            total += exp_nonpos(x[j] - m)
    return <floating> (m + log(total))


cdef inline floating _log_softmax_shift(floating lse) noexcept nogil:
    # log_softmax = x - logsumexp(x), except for a row holding +inf (logsumexp = +inf):
    # NaN throughout, as PyTorch's x - max - log(sum exp(x - max)), whose sum meets
    # inf - inf (x - inf would give -inf beside one NaN); a row of -inf gives NaN either way
    if lse > 0 and isinf(lse):
        return NAN
    return lse


cdef inline void _softmax_row(const floating* x,   # IN  (cols,)
                              floating* y,         # OUT (cols,)
                              Py_ssize_t cols, bint log_output) noexcept nogil:
    # Subtracting the row max makes every exponent <= 0: no overflow, and the largest
    # term is exactly 1, so the sum is >= 1 and its log never underflows.
    cdef Py_ssize_t j
    cdef floating m, e
    cdef double total = 0
    if log_output:
        e = _log_softmax_shift(_logsumexp_row(x, cols))
        for j in range(cols):
            y[j] = x[j] - e
        return
    m = _row_max(x, cols)
    if floating is float:    # fast path: benchmarks/bench_autograd.py "softmax dim -1"
        total = minnet_exp_sum_f(x, m, y, cols)     # also writes y[j] = exp(x[j] - m)
    else:
        for j in range(cols):
            e = exp_nonpos(x[j] - m)
            y[j] = e
            total += e
    e = <floating> (1.0 / total)
    if floating is float:    # fast path: benchmarks/bench_autograd.py "softmax dim -1"
        minnet_scale_f(y, e, cols)
    else:
        for j in range(cols):
            y[j] = y[j] * e


cdef inline void _softmax_short_rows(const float* x,   # IN  (nr, cols), nr <= 8
                                     float* y,         # OUT (nr, cols)
                                     Py_ssize_t nr, Py_ssize_t cols,
                                     bint log_output) noexcept nogil:
    # _softmax_row for up to 8 rows of fewer than 32 columns at once, the same bits per
    # row: the max and the sum of each row come from minnet_short_rows_f (_fastmath.h).
    cdef float m[MINNET_SHORT_ROWS]
    cdef double total[MINNET_SHORT_ROWS]
    cdef Py_ssize_t j, k
    cdef float e
    if log_output:
        minnet_short_rows_f(x, nr, cols, m, total, NULL, 0)
        for k in range(nr):
            e = _log_softmax_shift(m[k] if isinf(m[k]) else <float> (m[k] + log(total[k])))
            for j in range(cols):
                y[k * cols + j] = x[k * cols + j] - e
        return
    minnet_short_rows_f(x, nr, cols, m, total, y, 1)    # y = exp(x - m) * <float> (1 / total)


cdef void softmax_kernel(const floating[:, ::1] x,   # IN  (rows, cols)
                         floating[:, ::1] y,         # OUT (rows, cols)
                         bint log_output,
                         int n_threads) noexcept nogil:
    cdef Py_ssize_t i, b, rows = x.shape[0], cols = x.shape[1]
    if cols == 0:
        return
    if floating is float:    # fast path: benchmarks/bench_activations.py "softmax_10"
        if cols < MINNET_EXP_LANES:      # short rows, 8 at a time (the same bits)
            for b in prange((rows + MINNET_SHORT_ROWS - 1) // MINNET_SHORT_ROWS,
                            num_threads=team(rows * cols, n_threads), schedule="static"):
                _softmax_short_rows(&x[b * MINNET_SHORT_ROWS, 0], &y[b * MINNET_SHORT_ROWS, 0],
                                    min(rows - b * MINNET_SHORT_ROWS, MINNET_SHORT_ROWS), cols,
                                    log_output)
            return
    for i in prange(rows, num_threads=team(rows * cols, n_threads), schedule="static"):
        _softmax_row(&x[i, 0], &y[i, 0], cols, log_output)


cdef void logsumexp_kernel(const floating[:, ::1] x,   # IN  (rows, cols)
                           floating[::1] out,          # OUT (rows,)
                           int n_threads) noexcept nogil:
    cdef Py_ssize_t i, rows = x.shape[0], cols = x.shape[1]
    if cols == 0:
        return
    for i in prange(rows, num_threads=team(rows * cols, n_threads), schedule="static"):
        out[i] = _logsumexp_row(&x[i, 0], cols)


cdef inline void _softmax_backward_row(const floating* y,    # IN  saved output (cols,)
                                       const floating* g,    # IN  (cols,), or one value
                                       floating* dx,         # OUT (cols,)
                                       Py_ssize_t cols, bint log_output,
                                       bint g_const) noexcept nogil:
    # g_const: the row of g is one value c (the gradient of .sum() or of a reduction over
    # this axis, a broadcast view): the sums become c * sum(y) and c * cols, and g is read
    # once instead of a full-size copy (benchmarks/bench_autograd.py, "softmax dim -1").
    cdef Py_ssize_t j
    cdef double total = 0
    cdef floating t, c = g[0]
    if log_output:
        # y = log p: dx = g - p * sum(g)
        if g_const:
            t = <floating> (<double> c * cols)
            for j in range(cols):
                dx[j] = c - exp_nonpos(y[j]) * t
            return
        if floating is float:    # fast path: benchmarks/bench_autograd.py "log_softmax * w dim -1"
            total = minnet_dot_f(g, NULL, cols)
        else:
            for j in range(cols):
                total += g[j]
        t = <floating> total
        for j in range(cols):
            dx[j] = g[j] - exp_nonpos(y[j]) * t
    else:
        # y = p: dx = p * (g - <g, p>)
        if g_const:
            if floating is float:    # fast path: benchmarks/bench_autograd.py "softmax dim -1"
                total = minnet_dot_f(y, NULL, cols)
            else:
                for j in range(cols):
                    total += y[j]
            t = <floating> (<double> c * total)
            for j in range(cols):
                dx[j] = y[j] * (c - t)
            return
        if floating is float:    # fast path: benchmarks/bench_autograd.py "softmax * w dim -1"
            total = minnet_dot_f(g, y, cols)
        else:
            for j in range(cols):
                total += <double> g[j] * y[j]
        t = <floating> total
        for j in range(cols):
            dx[j] = y[j] * (g[j] - t)


cdef void softmax_backward_kernel(const floating[:, ::1] y,    # IN  saved output (rows, cols)
                                  const floating[:, :] grad,   # IN  (rows, cols), column stride 0 or 1
                                  floating[:, ::1] dx,         # OUT (rows, cols)
                                  bint log_output,
                                  int n_threads) noexcept nogil:
    cdef Py_ssize_t i, rows = y.shape[0], cols = y.shape[1]
    cdef Py_ssize_t g_row = grad.strides[0] // <Py_ssize_t> sizeof(floating)
    cdef bint g_const = grad.strides[1] == 0
    cdef const floating* g0
    if cols == 0 or rows == 0:
        return
    g0 = &grad[0, 0]
    for i in prange(rows, num_threads=team(rows * cols, n_threads), schedule="static"):
        _softmax_backward_row(&y[i, 0], g0 + i * g_row, &dx[i, 0], cols, log_output, g_const)


cdef void logsumexp_backward_kernel(const floating[:, ::1] x,    # IN  (rows, cols)
                                    const floating[:] out,       # IN  saved logsumexp (rows,)
                                    const floating[:] grad,      # IN  (rows,), any stride
                                    floating[:, ::1] dx,         # OUT (rows, cols)
                                    int n_threads) noexcept nogil:
    # dx[i, j] = grad[i] * exp(x[i, j] - out[i]): one pass, the saved output is the shift
    # (x - out <= 0 as out >= max(x); PyTorch's formula).
    cdef Py_ssize_t i, j, rows = x.shape[0], cols = x.shape[1]
    cdef floating gi, oi
    if cols == 0:
        return
    for i in prange(rows, num_threads=team(rows * cols, n_threads), schedule="static"):
        gi = grad[i]
        oi = out[i]
        if floating is float:    # fast path: benchmarks/bench_autograd.py "logsumexp dim 1"
            minnet_ce_grad_row_f(&x[i, 0], <double> oi, 0.0, gi, &dx[i, 0], cols)
        else:
            for j in range(cols):
                dx[i, j] = gi * exp(x[i, j] - oi)


def _softmax(const floating[:, ::1] x, floating[:, ::1] y, bint log_output, int n_threads):
    with nogil:
        softmax_kernel(x, y, log_output, n_threads)


def _logsumexp(const floating[:, ::1] x, floating[::1] out, int n_threads):
    with nogil:
        logsumexp_kernel(x, out, n_threads)


def _softmax_backward(const floating[:, ::1] y, const floating[:, :] g,
                      floating[:, ::1] dx, bint log_output, int n_threads):
    with nogil:
        softmax_backward_kernel(y, g, dx, log_output, n_threads)


def _logsumexp_backward(const floating[:, ::1] x, const floating[:] out, const floating[:] g,
                        floating[:, ::1] dx, int n_threads):
    with nogil:
        logsumexp_backward_kernel(x, out, g, dx, n_threads)


# ---------------------------------------------------------------------------------------
# Python-visible wrappers: validate, allocate, call.
# ---------------------------------------------------------------------------------------

def softmax_forward(x, log=False, out=None, n_threads=1):
    """Softmax (or log-softmax when ``log``) of each row, stable (row max subtracted).

    Args:
        x: float32/float64 C-contiguous 2-D array ``(rows, cols)``; the functional op
           moves any axis to the end and reshapes.
        log: return ``log_softmax`` instead.
        out: optional output array like ``x``.
        n_threads: OpenMP threads (split over rows).

    Returns:
        ``y`` with ``y[i] = exp(x[i] - max) / sum(exp(x[i] - max))`` (or its log).

    Shape:
        x: ``(rows, cols)``; y: same as x.
    """
    as_rows(x, "x")
    y = output_like(out, x)
    _softmax(x, y, bool(log), check_threads(n_threads))
    return y


def logsumexp_rows(x, n_threads=1):
    """``log(sum(exp(x[i])))`` of each row, stable (row max subtracted; a row of -inf gives
    -inf, a row holding +inf gives +inf). The same row code as ``softmax_forward(log=True)``.

    Shape:
        x: ``(rows, cols)`` float32/float64 C-contiguous, ``cols >= 1``; result: ``(rows,)``.
    """
    as_rows(x, "x")
    if x.shape[1] == 0:
        raise ValueError("Invalid argument `x`: expected at least one column. "
                         f"Received: x.shape={x.shape}")
    out = np.empty(x.shape[0], dtype=x.dtype)
    _logsumexp(x, out, check_threads(n_threads))
    return out


def softmax_backward(y, grad, log=False, out=None, n_threads=1):
    """Row-wise softmax gradient from the saved output.

    softmax: ``dx = y * (grad - sum(grad * y))``; log-softmax:
    ``dx = grad - exp(y) * sum(grad)`` (sums over each row).

    ``grad`` may be a strided view whose rows are contiguous (column stride 1) or whose
    rows are each one value (column stride 0, e.g. the broadcast gradient of ``.sum()``);
    any row stride, 0 included.  Other layouts are copied.

    Shape:
        y, grad, dx: ``(rows, cols)``.
    """
    as_rows(y, "y")
    if not isinstance(grad, np.ndarray) or grad.ndim != 2 or grad.dtype != y.dtype \
            or grad.strides[1] not in (0, grad.itemsize):
        grad = check_array(grad, "grad", y.dtype, y.shape)
    elif grad.shape != y.shape:
        raise ValueError(f"Invalid argument `grad`: expected shape {y.shape}. "
                         f"Received: grad.shape={grad.shape}")
    dx = output_like(out, y)
    _softmax_backward(y, grad, dx, bool(log), check_threads(n_threads))
    return dx


def logsumexp_backward(x, lse, grad, out=None, n_threads=1):
    """Gradient of ``lse = logsumexp_rows(x)``: ``dx[i, j] = grad[i] * exp(x[i, j] - lse[i])``
    in one pass (``grad``, ``lse``: ``(rows,)`` of ``x``'s dtype, any stride; ``out``: an
    optional output array like ``x``).

    Shape:
        x, dx: ``(rows, cols)``; lse, grad: ``(rows,)``.
    """
    as_rows(x, "x")
    for name, a in (("lse", lse), ("grad", grad)):
        check_array(a, name, x.dtype, (x.shape[0],), -1, False)   # any strides
    dx = output_like(out, x)
    _logsumexp_backward(x, lse, grad, dx, check_threads(n_threads))
    return dx
