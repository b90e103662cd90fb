"""Fused loss kernels: cross-entropy from logits (integer labels or probability targets,
with PyTorch's label smoothing) and the squared error of MSE.

Cross-entropy is computed from the logits in one pass per row: the row's log-sum-exp
``lse = m + log(sum(exp(x - m)))`` (``m`` the row max, so no exponent overflows), then
the loss from ``x[label] - lse`` and sums of the row, never building ``log_softmax`` or
a one-hot matrix.  The backward needs only the logits (the forward's input) and the
``(N,)`` log-sum-exps, kept in double: ``softmax = exp(x - lse)`` (a float32 lse of a
row near 1e4 would be off by 1e-3, and so would every probability).  Sums use double
accumulators.
The math is written out in ``docs/math/losses.md``.

The Python-visible wrappers keep only O(1) checks (dtypes, shapes, contiguity); the label
range is checked inside the row loop, at no extra pass: a row whose label is out of range
is skipped and counted, and the wrapper raises.  That is the only check int64 labels get
(``F.cross_entropy``, ``SparseCategoricalCrossentropy(from_logits=True)``); labels of
other dtypes are converted, and scanned on the way, by ``minnet._checks.check_labels``.
"""
from cython.parallel cimport prange
from libc.math cimport exp, log
from libc.stdint cimport int64_t

from minnet._ext._base cimport check_array, data_ptr, is_f32, size_of
from minnet._ext._base cimport team as _team
from minnet._ext._blas cimport floating
from minnet._ext._fastmath cimport (exp_nonpos as _exp, minnet_exp_sum_f, minnet_row_max_f,
                                    minnet_ce_grad_row_f, minnet_short_rows_f,
                                    MINNET_SHORT_ROWS, MINNET_EXP_LANES)

cimport numpy as cnp
import numpy as np

cnp.import_array()   # _base's inline data_ptr/is_f32/size_of call the NumPy C API here


cdef enum:
    # Squared-error sums are taken over fixed blocks of this many elements and the block
    # sums added in order, so the result is the same for every thread count.
    _BLOCK = 4096


cdef inline double _row_lse(const floating* x, Py_ssize_t cols) noexcept nogil:
    """log(sum(exp(x))) of one row, shifted by the row max (every exponent <= 0)."""
    cdef Py_ssize_t j
    cdef floating m = x[0]
    cdef double total = 0
    if floating is float:    # fast path: benchmarks/bench_activations.py "softmax_ce"
        # Lane-parallel max and double sum the compiler vectorises (_fastmath.pxd).
        m = minnet_row_max_f(x, cols)
        total = minnet_exp_sum_f(x, m, NULL, cols)
    else:
        for j in range(1, cols):
            if x[j] > m:
                m = x[j]
        for j in range(cols):
            total += _exp(x[j] - m)
    return m + log(total)


# ---------------------------------------------------------------------------------------
# Cross-entropy with integer labels.
#   t = (1 - eps) * onehot(label) + eps / C
#   loss_i = -sum_j t_j * (x_j - lse) = lse - (1 - eps) * x_label - (eps / C) * sum_j x_j
#   dL/dx_j = g_i * (softmax_j - t_j)
# ---------------------------------------------------------------------------------------

cdef inline void _ce_row(const floating* x, int64_t label, Py_ssize_t cols, double eps,
                         floating* loss, double* lse) noexcept nogil:
    _ce_row_from_lse(x, label, cols, eps, _row_lse(x, cols), loss, lse)


cdef inline void _ce_row_from_lse(const floating* x, int64_t label, Py_ssize_t cols, double eps,
                                  double row_lse, floating* loss, double* lse) noexcept nogil:
    cdef Py_ssize_t j
    cdef double total = 0, value
    value = row_lse - (1 - eps) * x[label]
    if eps != 0:
        for j in range(cols):
            total += x[j]
        value = value - eps / cols * total
    loss[0] = <floating> value
    lse[0] = row_lse


cdef inline void _ce_backward_row(const floating* x, int64_t label, double lse,
                                  floating g, Py_ssize_t cols, double eps,
                                  floating* dx) noexcept nogil:
    cdef Py_ssize_t j
    cdef floating off = <floating> (eps / cols)           # smoothing mass of every class
    if floating is float:    # fast path: benchmarks/bench_activations.py "softmax_ce"
        minnet_ce_grad_row_f(x, lse, off, g, dx, cols)    # the same loop, AVX2/AVX-512 clones
    else:
        for j in range(cols):
            dx[j] = (_exp(<floating> (x[j] - lse)) - off) * g
    dx[label] = dx[label] - <floating> (1 - eps) * g


cdef inline Py_ssize_t _ce_short_rows(const float* x, const int64_t* labels, Py_ssize_t nr,
                                      Py_ssize_t cols, double eps, float* loss,
                                      double* lse) noexcept nogil:
    # _ce_row for up to 8 rows of fewer than 32 columns at once (each row's max and sum
    # from minnet_short_rows_f, _fastmath.h: the same bits as _row_lse); returns the
    # number of out-of-range labels, whose rows it skips.
    cdef float m[MINNET_SHORT_ROWS]
    cdef double total[MINNET_SHORT_ROWS]
    cdef Py_ssize_t k, bad = 0
    minnet_short_rows_f(x, nr, cols, m, total, NULL, 0)
    for k in range(nr):
        if labels[k] < 0 or labels[k] >= cols:
            bad += 1
        else:
            _ce_row_from_lse(x + k * cols, labels[k], cols, eps, m[k] + log(total[k]),
                             &loss[k], &lse[k])
    return bad


# One walk over the rows for both directions: an out-of-range label skips its row and is
# counted (the wrappers raise); dx NULL is the forward (loss, lse of each row), else the
# backward (dx of each row from the saved lse and grad).
cdef Py_ssize_t cross_entropy_kernel(const floating* logits,         # IN  (N, C)
                                     Py_ssize_t rows, Py_ssize_t cols,
                                     const int64_t* labels,           # IN  (N,), in [0, C)
                                     double eps,                      # label smoothing
                                     floating* loss,                  # OUT (N,) forward
                                     double* lse,                     # OUT (N,) fwd, IN bwd
                                     const floating* grad,            # IN  (N,) dL/dloss_i, bwd
                                     floating* dx,                    # OUT (N, C) bwd, or NULL
                                     int n_threads) noexcept nogil:
    """Returns the number of rows whose label is out of range (those rows are skipped)."""
    cdef Py_ssize_t i, b, bad = 0
    if floating is float:    # fast path: benchmarks/bench_activations.py "softmax_ce_10"
        if dx == NULL and cols < MINNET_EXP_LANES:     # short rows, 8 at a time (same bits)
            for b in prange((rows + MINNET_SHORT_ROWS - 1) // MINNET_SHORT_ROWS,
                            num_threads=_team(rows * cols, n_threads), schedule="static"):
                bad += _ce_short_rows(logits + b * MINNET_SHORT_ROWS * cols,
                                      labels + b * MINNET_SHORT_ROWS,
                                      min(rows - b * MINNET_SHORT_ROWS, MINNET_SHORT_ROWS), cols,
                                      eps, &loss[b * MINNET_SHORT_ROWS], &lse[b * MINNET_SHORT_ROWS])
            return bad
    for i in prange(rows, num_threads=_team(rows * cols, n_threads), schedule="static"):
        if labels[i] < 0 or labels[i] >= cols:
            bad += 1
        elif dx == NULL:
            _ce_row(logits + i * cols, labels[i], cols, eps, &loss[i], &lse[i])
        else:
            _ce_backward_row(logits + i * cols, labels[i], lse[i], grad[i], cols, eps,
                             dx + i * cols)
    return bad


# ---------------------------------------------------------------------------------------
# Cross-entropy with probability targets p (any non-negative rows; PyTorch does not
# require them to sum to 1).  With t = (1 - eps) * p + eps / C and S = sum_j t_j:
#   loss_i = -sum_j t_j * (x_j - lse) = S * lse - sum_j t_j * x_j
#   dL/dx_j = g_i * (S * softmax_j - t_j)
# ---------------------------------------------------------------------------------------

cdef inline void _soft_ce_row(const floating* x, const floating* p, Py_ssize_t cols,
                              double eps, floating* loss, double* lse) noexcept nogil:
    cdef Py_ssize_t j
    cdef double row_lse = _row_lse(x, cols), mass = 0, dot = 0, t
    for j in range(cols):
        t = (1 - eps) * p[j] + eps / cols
        mass += t
        dot += t * x[j]
    loss[0] = <floating> (mass * row_lse - dot)
    lse[0] = row_lse


cdef inline void _soft_ce_backward_row(const floating* x, const floating* p, double lse,
                                       floating g, Py_ssize_t cols, double eps,
                                       floating* dx) noexcept nogil:
    cdef Py_ssize_t j
    cdef double mass = 0
    cdef floating t
    for j in range(cols):
        mass += (1 - eps) * p[j] + eps / cols
    for j in range(cols):
        t = <floating> ((1 - eps) * p[j] + eps / cols)
        dx[j] = (<floating> mass * _exp(<floating> (x[j] - lse)) - t) * g


# Both directions in one walk, as cross_entropy_kernel: dx NULL is the forward.
cdef void soft_cross_entropy_kernel(const floating* logits,         # IN  (N, C)
                                    Py_ssize_t rows, Py_ssize_t cols,
                                    const floating* target,         # IN  (N, C)
                                    double eps,
                                    floating* loss,                  # OUT (N,) forward
                                    double* lse,                     # OUT (N,) fwd, IN bwd
                                    const floating* grad,            # IN  (N,) bwd
                                    floating* dx,                    # OUT (N, C) bwd, or NULL
                                    int n_threads) noexcept nogil:
    cdef Py_ssize_t i
    for i in prange(rows, num_threads=_team(rows * cols, n_threads), schedule="static"):
        if dx == NULL:
            _soft_ce_row(logits + i * cols, target + i * cols, cols, eps, &loss[i], &lse[i])
        else:
            _soft_ce_backward_row(logits + i * cols, target + i * cols, lse[i], grad[i], cols,
                                  eps, dx + i * cols)


# ---------------------------------------------------------------------------------------
# Squared error: sum((p - t)^2) and its gradients 2 * scale * (p - t) for p, minus that
# for t.
# ---------------------------------------------------------------------------------------

cdef inline double _squared_error_block(const floating* p, const floating* t,
                                        Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i
    cdef double total = 0, d
    for i in range(n):
        d = <double> p[i] - t[i]
        total += d * d
    return total


cdef double squared_error_sum_kernel(const floating* p,         # IN  (n,)
                                     const floating* t,         # IN  (n,)
                                     Py_ssize_t n,
                                     double* block_sums,        # OUT (n_blocks,)
                                     Py_ssize_t n_blocks,       # ceil(n / _BLOCK)
                                     int n_threads) noexcept nogil:
    # Per-block partial sums (each block written by one thread), then one ordered sum.
    cdef Py_ssize_t b, start, stop
    cdef double total = 0
    for b in prange(n_blocks, num_threads=_team(n, n_threads), schedule="static"):
        start = b * _BLOCK
        stop = start + _BLOCK if start + _BLOCK < n else n
        block_sums[b] = _squared_error_block(p + start, t + start, stop - start)
    for b in range(n_blocks):
        total = total + block_sums[b]
    return total


cdef void squared_error_backward_kernel(const floating* p,       # IN  (n,)
                                        const floating* t,       # IN  (n,)
                                        Py_ssize_t n,
                                        floating scale,          # 2 * dL/dloss / n (mean)
                                        floating* dp,            # OUT (n,)
                                        floating* dt,            # OUT (n,) or NULL
                                        int n_threads) noexcept nogil:
    cdef Py_ssize_t i
    for i in prange(n, num_threads=_team(n, n_threads), schedule="static"):
        dp[i] = scale * (p[i] - t[i])
        if dt != NULL:
            dt[i] = -dp[i]


# ---------------------------------------------------------------------------------------
# Typed entry points: raw pointers of checked arrays, GIL released.
# ---------------------------------------------------------------------------------------

cdef Py_ssize_t _cross_entropy(const floating* logits, Py_ssize_t rows, Py_ssize_t cols,
                               const int64_t* labels, const floating* target, double eps,
                               double* lse, floating* loss, const floating* grad, floating* dx,
                               int n_threads) noexcept nogil:
    """The forward (``dx`` NULL: ``loss``, ``lse``) or the backward (``dx`` from ``lse`` and
    ``grad``) of the labels' kernel, or of the targets' one when ``labels`` is NULL.
    Returns the number of rows skipped for a label out of range."""
    if labels != NULL:
        return cross_entropy_kernel(logits, rows, cols, labels, eps, loss, lse, grad, dx,
                                    n_threads)
    soft_cross_entropy_kernel(logits, rows, cols, target, eps, loss, lse, grad, dx, n_threads)
    return 0


# ---------------------------------------------------------------------------------------
# Python-visible wrappers: validate, allocate, call.
# ---------------------------------------------------------------------------------------

def _check_labels(labels, n_rows, n_classes):
    if not isinstance(labels, np.ndarray) or labels.dtype != np.int64:
        got = labels.dtype if isinstance(labels, np.ndarray) else type(labels).__name__
        raise TypeError(f"Invalid argument `target`: expected an int64 ndarray of class "
                        f"labels. Received: {got}")
    if labels.shape != (n_rows,):
        raise ValueError(f"Invalid argument `target`: expected shape ({n_rows},) (one label "
                         f"per row of `logits`). Received: target.shape={labels.shape}")
    return np.ascontiguousarray(labels)   # the range is checked in the row loop (module doc)


def _run(logits, labels, target, double eps, lse, loss=None, grad=None, dx=None,
         int n_threads=1):
    """_cross_entropy on checked arrays (None for those a direction does not read); raises
    for the rows whose label was out of range.  Raw pointers, not memoryviews: a loss is
    two calls per training step on a small batch, which is mostly entry cost
    (benchmarks/bench_training.py --profile, "mlp")."""
    cdef Py_ssize_t rows = logits.shape[0], cols = logits.shape[1], bad = 0
    cdef void* px = data_ptr(logits)
    cdef int64_t* pl = NULL if labels is None else <int64_t*> data_ptr(labels)
    cdef void* pt = NULL if target is None else data_ptr(target)
    cdef double* plse = <double*> data_ptr(lse)      # written by the forward (its own array)
    cdef void* ploss = NULL if loss is None else data_ptr(loss)
    cdef void* pg = NULL if grad is None else data_ptr(grad)
    cdef void* pdx = NULL if dx is None else data_ptr(dx)
    if rows == 0:
        return
    if is_f32(logits):
        with nogil:
            bad = _cross_entropy(<const float*> px, rows, cols, pl, <const float*> pt, eps, plse,
                                 <float*> ploss, <const float*> pg, <float*> pdx, n_threads)
    else:
        with nogil:
            bad = _cross_entropy(<const double*> px, rows, cols, pl, <const double*> pt, eps,
                                 plse, <double*> ploss, <const double*> pg, <double*> pdx,
                                 n_threads)
    if bad:
        _raise_bad_labels(labels, cols)


def _raise_bad_labels(labels, n_classes):
    """After a kernel skipped rows: name the first label out of range (an O(N) pass, taken
    only on the error path)."""
    bad = labels[(labels < 0) | (labels >= n_classes)][0]
    raise ValueError(f"Invalid value for argument `target`: expected class labels in "
                     f"[0, {n_classes}). Received: a label {int(bad)}")


def _check_eps(label_smoothing):
    eps = float(label_smoothing)
    if not 0.0 <= eps <= 1.0:
        raise ValueError(f"Invalid value for argument `label_smoothing`: expected a float "
                         f"in [0, 1]. Received: label_smoothing={label_smoothing}")
    return eps


def _check_logits(logits):
    check_array(logits, "logits", None, None, 2)
    if logits.shape[1] == 0:
        raise ValueError(f"Invalid argument `logits`: expected at least one class. "
                         f"Received: logits.shape={logits.shape}")
    return logits


def cross_entropy_forward(logits, labels, label_smoothing=0.0, n_threads=1):
    """Per-row cross-entropy of ``softmax(logits)`` against integer labels.

    Args:
        logits: float32/float64 C-contiguous ``(N, C)``.
        labels: int64 ``(N,)`` with values in ``[0, C)``.
        label_smoothing: ``eps`` in [0, 1]; the target is ``(1-eps)*onehot + eps/C``.
        n_threads: OpenMP threads (split over rows).

    Returns:
        ``(loss, lse)``: per-row losses ``(N,)`` of the logits' dtype and log-sum-exps
        ``(N,)`` in float64 (what ``cross_entropy_backward`` needs: ``x - lse`` is then
        exact enough for float32 logits of any size).

    Shape:
        logits: ``(N, C)``; labels: ``(N,)``; loss, lse: ``(N,)``.
    """
    _check_logits(logits)
    labels = _check_labels(labels, logits.shape[0], logits.shape[1])
    eps = _check_eps(label_smoothing)
    loss = np.empty(logits.shape[0], logits.dtype)
    lse = np.empty(logits.shape[0], np.float64)
    _run(logits, labels, None, eps, lse, loss, n_threads=n_threads)
    return loss, lse


def cross_entropy_backward(logits, labels, lse, grad, label_smoothing=0.0, n_threads=1):
    """``dx[i] = grad[i] * (softmax(logits[i]) - target[i])``, no one-hot built.

    Shape:
        logits: ``(N, C)``; labels, lse, grad: ``(N,)``; dx: ``(N, C)``.
    """
    _check_logits(logits)
    labels = _check_labels(labels, logits.shape[0], logits.shape[1])
    check_array(lse, "lse", np.float64, (logits.shape[0],))
    check_array(grad, "grad", logits.dtype, (logits.shape[0],))
    dx = np.empty_like(logits)
    _run(logits, labels, None, _check_eps(label_smoothing), lse, None, grad, dx, n_threads)
    return dx


def soft_cross_entropy_forward(logits, target, label_smoothing=0.0, n_threads=1):
    """Per-row cross-entropy of ``softmax(logits)`` against probability rows ``target``.

    Returns:
        ``(loss, lse)``, both ``(N,)`` (``lse`` in float64).

    Shape:
        logits, target: ``(N, C)``; loss, lse: ``(N,)``.
    """
    _check_logits(logits)
    check_array(target, "target", logits.dtype, logits.shape)
    eps = _check_eps(label_smoothing)
    loss = np.empty(logits.shape[0], logits.dtype)
    lse = np.empty(logits.shape[0], np.float64)
    _run(logits, None, target, eps, lse, loss, n_threads=n_threads)
    return loss, lse


def soft_cross_entropy_backward(logits, target, lse, grad, label_smoothing=0.0,
                                n_threads=1):
    """``dx[i] = grad[i] * (sum(t[i]) * softmax(logits[i]) - t[i])`` with ``t`` the
    smoothed target.

    Shape:
        logits, target, dx: ``(N, C)``; lse, grad: ``(N,)``.
    """
    _check_logits(logits)
    check_array(target, "target", logits.dtype, logits.shape)
    check_array(lse, "lse", np.float64, (logits.shape[0],))
    check_array(grad, "grad", logits.dtype, (logits.shape[0],))
    dx = np.empty_like(logits)
    _run(logits, None, target, _check_eps(label_smoothing), lse, None, grad, dx, n_threads)
    return dx


def squared_error_sum(prediction, target, n_threads=1):
    """``sum((prediction - target)**2)`` as a Python float, accumulated in double over
    fixed blocks (the same value for every thread count).

    Shape:
        prediction, target: ``(*)``, the same.
    """
    check_array(prediction, "prediction")
    check_array(target, "target", prediction.dtype, prediction.shape)
    cdef Py_ssize_t n = size_of(prediction), n_blocks = (n + _BLOCK - 1) // _BLOCK
    cdef int threads = int(n_threads)
    cdef double total
    block_sums = np.empty(n_blocks, np.float64)
    cdef void* pp = data_ptr(prediction)
    cdef void* pt = data_ptr(target)
    cdef double* pb = <double*> data_ptr(block_sums)
    if is_f32(prediction):
        with nogil:
            total = squared_error_sum_kernel(<const float*> pp, <const float*> pt, n, pb,
                                             n_blocks, threads)
    else:
        with nogil:
            total = squared_error_sum_kernel(<const double*> pp, <const double*> pt, n, pb,
                                             n_blocks, threads)
    return total


def squared_error_backward(prediction, target, scale, want_target=False, n_threads=1):
    """Gradients of ``scale/2 * sum((p - t)**2)``: ``dp = scale * (p - t)`` and
    ``dt = -dp`` (``None`` unless ``want_target``).

    For the mean MSE ``scale = 2 * grad / n``; for the sum ``scale = 2 * grad``.

    Shape:
        prediction, target, dp, dt: ``(*)``, all the same.
    """
    check_array(prediction, "prediction")
    check_array(target, "target", prediction.dtype, prediction.shape)
    cdef Py_ssize_t n = size_of(prediction)
    cdef int threads = int(n_threads)
    cdef double factor = float(scale)
    dp = np.empty_like(prediction)
    dt = np.empty_like(prediction) if want_target else None
    cdef void* pp = data_ptr(prediction)
    cdef void* pt = data_ptr(target)
    cdef void* pdp = data_ptr(dp)
    cdef void* pdt = NULL if dt is None else data_ptr(dt)
    if is_f32(prediction):
        with nogil:
            squared_error_backward_kernel(<const float*> pp, <const float*> pt, n,
                                          <float> factor, <float*> pdp, <float*> pdt, threads)
    else:
        with nogil:
            squared_error_backward_kernel(<const double*> pp, <const double*> pt, n, factor,
                                          <double*> pdp, <double*> pdt, threads)
    return dp, dt
