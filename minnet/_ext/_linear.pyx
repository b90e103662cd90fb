"""Linear (fully connected) kernels: ``Y = X W^T + b`` forward and backward.

``X`` is ``(N, in)``, ``W`` is ``(out, in)`` (PyTorch's ``Linear`` layout), see
docs/math/linear.md::

    forward:   Y  = X @ W^T + b            (optionally max(., 0): Dense's fused ReLU)
    backward:  dX = dY @ W,   dW = dY^T @ X,   db = sum_n dY[n]

The GEMMs are split into blocks by ``gemm_blocks`` (shape-only rule) and every bias
column is summed by one thread in row order, so the results do not depend on the thread
count.
"""
from cython.parallel cimport prange

from minnet._ext._blas cimport floating
from minnet._ext._im2col cimport gemm_blocks

cdef extern from "_transpose.h" nogil:
    void minnet_transpose_bias_f32(const float* src, const float* bias, float* dst,
                                   Py_ssize_t n, Py_ssize_t m, int relu,
                                   Py_ssize_t i_begin, Py_ssize_t i_end)
    void minnet_transpose_bias_f64(const double* src, const double* bias, double* dst,
                                   Py_ssize_t n, Py_ssize_t m, int relu,
                                   Py_ssize_t i_begin, Py_ssize_t i_end, Py_ssize_t j_begin)

import numpy as np

from minnet._ext._im2col import check_array, check_threads


# ----------------------------------------------------------------------------------------
# bias sums
# ----------------------------------------------------------------------------------------

cdef void _bias_grad_rows(const floating* dy, long n, long f, floating* db,
                          int n_threads) noexcept nogil:
    """db[j] = sum_i dy[i, j] (dy is (n, f)): a block of columns per thread."""
    cdef long block, n_blocks, start, stop, size
    n_blocks = n_threads if f >= n_threads else f
    if n_blocks < 1:
        return
    size = (f + n_blocks - 1) // n_blocks
    for block in prange(n_blocks, schedule="static", num_threads=n_threads):
        start = block * size
        stop = start + size
        if stop > f:
            stop = f
        if start < stop:
            _sum_columns(dy, n, f, start, stop, db)


cdef void _sum_columns(const floating* dy, long n, long f, long start, long stop,
                       floating* out) noexcept nogil:
    """out[j] = sum_i dy[i, j] for j in [start, stop), in double, 256 columns at a time."""
    cdef double acc[256]
    cdef long j0, j1, j, i
    cdef const floating* row
    j0 = start
    while j0 < stop:
        j1 = j0 + 256
        if j1 > stop:
            j1 = stop
        for j in range(j1 - j0):
            acc[j] = 0
        for i in range(n):
            row = dy + i * f
            for j in range(j0, j1):
                acc[j - j0] += row[j]
        for j in range(j0, j1):
            out[j] = <floating> acc[j - j0]
        j0 = j1


def linear_forward(x, weight, bias=None, n_threads=1, relu=False):
    """``Y = X @ W^T + b``, or ``max(X @ W^T + b, 0)`` with ``relu=True``.

    The fused ReLU is what ``Dense(..., activation="relu")`` runs when no graph is
    recorded (``predict``, ``no_grad``): the same numbers as ``relu(linear(x))``, one pass
    over ``Y`` fewer.  ``0 if v < 0 else v``, as ``relu``: NaN and -0.0 pass through.

    Args:
        x: ``(N, in_features)`` float32/float64 array.
        weight: ``(out_features, in_features)``, same dtype.
        bias: ``(out_features,)`` or None.
        n_threads: threads for the blocked GEMM.
        relu: apply ``max(., 0)`` to the result.

    Returns:
        ``(N, out_features)`` array.
    """
    x = check_array("x", x, 2)
    weight = check_array("weight", weight, 2, x.dtype)
    if weight.shape[1] != x.shape[1]:
        raise ValueError(f"Invalid argument `weight`: expected shape (out_features, "
                         f"{x.shape[1]}) for x of shape {x.shape}. Received: shape={weight.shape}")
    if bias is not None:
        bias = check_array("bias", bias, 1, x.dtype)
        if bias.shape[0] != weight.shape[0]:
            raise ValueError(f"Invalid argument `bias`: expected shape ({weight.shape[0]},). "
                             f"Received: shape={bias.shape}")
    n_threads = check_threads(n_threads)
    cdef bint fuse_relu = bool(relu)
    n, k, m = x.shape[0], x.shape[1], weight.shape[0]
    if _transposed_forward(n, k, m, bias is not None):
        yt = np.empty((m, n), dtype=x.dtype)
        y = np.empty((n, m), dtype=x.dtype)
        if x.dtype == np.float32:
            _linear_forward_transposed[float](x, weight, bias, yt, y, fuse_relu, n_threads)
        else:
            _linear_forward_transposed[double](x, weight, bias, yt, y, fuse_relu, n_threads)
        return y
    y = np.empty((n, m), dtype=x.dtype)
    if bias is None:
        y.fill(0)
    else:
        y[...] = bias
    if y.size == 0:
        return y
    if x.dtype == np.float32:
        _linear_forward_entry[float](x, weight, y, fuse_relu, n_threads)
    else:
        _linear_forward_entry[double](x, weight, y, fuse_relu, n_threads)
    return y


# Layers at least this big (out_features * in_features) compute Y^T = W X^T.
TRANSPOSED_MIN = 128 * 512


def _transposed_forward(n, k, m, has_bias):
    """The forward's one fast-path choice: ``Y^T = W X^T`` then a transpose fused with the
    bias (and ReLU), or ``Y = X W^T`` directly.  OpenBLAS runs the wide-output product
    faster for layers like 784 -> 256 by more than the transpose costs; measured with
    benchmarks/bench_training.py (the MLP workload, Dense forward)."""
    return m * k >= TRANSPOSED_MIN and n > 1 and has_bias


cdef _linear_forward_entry(const floating[:, ::1] x, const floating[:, ::1] w, floating[:, ::1] y,
                           bint fuse_relu, int n_threads):
    cdef int n = x.shape[0], k = x.shape[1], m = w.shape[0]
    cdef Py_ssize_t i, size = <Py_ssize_t> n * m
    cdef floating* out = &y[0, 0]
    cdef floating v
    with nogil:
        if k > 0:    # k == 0: Y is the bias alone
            gemm_blocks(False, True, n, m, k, <floating> 1, &x[0, 0], k, &w[0, 0], k,
                          <floating> 1, &y[0, 0], m, n_threads)
        if fuse_relu:
            for i in range(size):
                v = out[i]
                out[i] = 0 if v < 0 else v


cdef _linear_forward_transposed(const floating[:, ::1] x, const floating[:, ::1] w,
                                const floating[::1] bias,       # IN  (M,)
                                floating[:, ::1] yt,             # scratch (M, N)
                                floating[:, ::1] y,              # OUT (N, M)
                                bint fuse_relu,
                                int n_threads):
    cdef int n = x.shape[0], k = x.shape[1], m = w.shape[0]
    cdef int i0
    with nogil:
        # Y^T (M, N) = W (M, K) @ X^T (K, N)
        gemm_blocks(False, True, m, n, k, <floating> 1, &w[0, 0], k, &x[0, 0], k,
                      <floating> 0, &yt[0, 0], n, n_threads)
        # Y = relu?((Y^T)^T + b), 16 output rows per task
        for i0 in prange(0, n, 16, schedule="static", num_threads=n_threads if n * m >= 65536 else 1):
            _transpose_bias_rows(&yt[0, 0], &bias[0], &y[0, 0], n, m, fuse_relu,
                                 i0, i0 + 16 if i0 + 16 < n else n)


cdef inline void _transpose_bias_rows(const floating* src,   # IN  Y^T (M, N)
                                      const floating* b,     # IN  (M,)
                                      floating* dst,         # OUT Y (N, M), rows [i0, i1)
                                      int n, int m, bint fuse_relu, int i0, int i1) noexcept nogil:
    # _transpose.h: SSE 4 x 4 register transposes for float32, 16 x 16 scalar tiles for
    # float64; the same add and select either way.
    if floating is float:
        minnet_transpose_bias_f32(src, b, dst, n, m, fuse_relu, i0, i1)
    else:
        minnet_transpose_bias_f64(src, b, dst, n, m, fuse_relu, i0, i1, 0)


def linear_backward(x, weight, grad_output, need_input_grad=True, need_weight_grad=True,
                    need_bias_grad=True, n_threads=1):
    """Gradients of :func:`linear_forward`: ``dX = dY W``, ``dW = dY^T X``, ``db = sum_n dY``.

    Args:
        x: ``(N, in_features)``, the forward input.
        weight: ``(out_features, in_features)``.
        grad_output: ``(N, out_features)``.
        need_input_grad, need_weight_grad, need_bias_grad: compute only these.
        n_threads: threads for the blocked GEMMs and the bias sum.

    Returns:
        ``(grad_x, grad_weight, grad_bias)``, each None when not requested.
    """
    x = check_array("x", x, 2)
    weight = check_array("weight", weight, 2, x.dtype)
    grad_output = check_array("grad_output", grad_output, 2, x.dtype)
    if weight.shape[1] != x.shape[1] or grad_output.shape != (x.shape[0], weight.shape[0]):
        raise ValueError(f"Invalid arguments: expected x (N, in), weight (out, in) and "
                         f"grad_output (N, out). Received: x {x.shape}, weight {weight.shape}, "
                         f"grad_output {grad_output.shape}")
    n_threads = check_threads(n_threads)
    # Every output is fully overwritten (GEMMs with beta = 0), except for empty operands.
    alloc = np.zeros if (x.size == 0 or weight.size == 0) else np.empty
    dx = alloc(x.shape, dtype=x.dtype) if need_input_grad else None
    dw = alloc(weight.shape, dtype=x.dtype) if need_weight_grad else None
    db = alloc((weight.shape[0],), dtype=x.dtype) if need_bias_grad else None
    if x.size == 0 or weight.size == 0:
        return dx, dw, db
    if x.dtype == np.float32:
        _linear_backward_entry[float](x, weight, grad_output, dx, dw, db, n_threads)
    else:
        _linear_backward_entry[double](x, weight, grad_output, dx, dw, db, n_threads)
    return dx, dw, db


cdef _linear_backward_entry(const floating[:, ::1] x, const floating[:, ::1] w, const floating[:, ::1] dy,
                            object dx_obj, object dw_obj, object db_obj, int n_threads):
    cdef int n = x.shape[0], k = x.shape[1], m = w.shape[0]
    cdef floating[:, ::1] dx, dw
    cdef floating[::1] db
    if dx_obj is not None:
        dx = dx_obj
        with nogil:   # dX (N, in) = dY (N, out) @ W (out, in)
            gemm_blocks(False, False, n, k, m, <floating> 1, &dy[0, 0], m, &w[0, 0], k,
                          <floating> 0, &dx[0, 0], k, n_threads)
    if dw_obj is not None:
        dw = dw_obj
        with nogil:   # dW (out, in) = dY^T (out, N) @ X (N, in)
            gemm_blocks(True, False, m, k, n, <floating> 1, &dy[0, 0], m, &x[0, 0], k,
                          <floating> 0, &dw[0, 0], k, n_threads)
    if db_obj is not None:
        db = db_obj
        with nogil:
            _bias_grad_rows(&dy[0, 0], n, m, &db[0], n_threads)
