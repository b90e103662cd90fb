"""Linear (fully connected) kernels: ``Y = X W^T + b`` forward and backward.

``X`` is ``(N, in)``, ``W`` is ``(out, in)`` (PyTorch's ``Linear`` layout), see
docs/math/linear.md::

    forward:   Y  = X @ W^T + b            (optionally max(., 0): Dense's fused ReLU)
    backward:  dX = dY @ W,   dW = dY^T @ X,   db = sum_n dY[n]

Every GEMM goes through ``_gemm``: float32 products of at most ``OWN_GEMM_MAX``
multiply-adds into at most ``OWN_GEMM_MAX_OUT`` elements run on the convolution's
register-tile GEMM (convgemm_kernels.h), the others and float64 on the BLAS in
``gemm_blocks``'s blocks (shape-only rule).  The first adds
every element in one fixed order whatever the split, the second splits by shape alone, and
every bias column is summed by one thread in row order, so the results do not depend on
the thread count.
"""
from cython.parallel cimport prange
from libc.string cimport memcpy, memset
cimport numpy as cnp

from minnet._ext._base cimport check_nd, check_threads, parallel_min
from minnet._ext._blas cimport floating, gemm_blocks
from minnet._ext.convgemm_kernels cimport conv_gemm_blocks

from minnet._ext.transpose_kernels cimport transpose_rows

import numpy as np

cnp.import_array()

# ----------------------------------------------------------------------------------------
# the GEMM
# ----------------------------------------------------------------------------------------

# float32 products of at most _OWN_GEMM_MAX multiply-adds (m * n * k) and a result of at
# most _OWN_GEMM_MAX_OUT elements (m * n) take minnet's own GEMM: on a layer's three
# products it is 1.09-1.95x OpenBLAS's from 128 -> 10 to 784 -> 256 at batch 16 and 64, a
# tie at batch 256 (50 M); OpenBLAS is ahead at 1024 -> 1024, batch 128 (134 M: 0.86-0.91x),
# and on a wide dW (784 -> 1024 at batch 64: a 1024 x 784 result, 1,253 against 1,714 us)
# (benchmarks/bench_linear.py). A rule on the shape alone, never the thread count.
cdef enum:
    _OWN_GEMM_MAX = 1 << 26
    _OWN_GEMM_MAX_OUT = 1 << 18
OWN_GEMM_MAX = _OWN_GEMM_MAX              # (for the tests)
OWN_GEMM_MAX_OUT = _OWN_GEMM_MAX_OUT


cdef inline void _gemm(bint trans_a, bint trans_b, int m, int n, int k,
                       const floating* a, int lda, const floating* b, int ldb,
                       floating beta, floating* c, int ldc, int n_threads) noexcept nogil:
    """C = beta C + op(A) @ op(B), row-major (_blas.gemm's arguments, alpha = 1)."""
    cdef long size = <long> m * n * k
    # fast path: benchmarks/bench_linear.py "784->256 batch 64"
    if floating is float and size <= _OWN_GEMM_MAX and <long> m * n <= _OWN_GEMM_MAX_OUT:
        # Below ~1 MFLOP a thread team costs more than it saves (as _blas's rule).
        conv_gemm_blocks(trans_a, trans_b, m, n, k, a, lda, b, ldb, beta, c, ldc,
                         n_threads if size >= 500000 else 1)
    else:
        gemm_blocks(trans_a, trans_b, m, n, k, <floating> 1, a, lda, b, ldb, beta, c, ldc,
                    n_threads)


def matmul(a, b, trans_a=False, trans_b=False, n_threads=1):
    """``op(a) @ op(b)`` of two C-contiguous 2-D float32 or float64 arrays, by ``_gemm``'s
    rule: the product ``@`` runs on 2-D tensors (autograd/linalg_ops.py), on the same GEMM
    as a Dense layer of that size.

    Args:
        a: ``(m, k)``, or ``(k, m)`` when ``trans_a``.
        b: ``(k, n)``, or ``(n, k)`` when ``trans_b``; ``a``'s dtype.
        n_threads: threads (the float32 result of minnet's GEMM does not depend on them).

    Returns:
        A new ``(m, n)`` array.
    """
    check_nd(a, "a", 2)
    check_nd(b, "b", 2, a.dtype)
    m, k = (a.shape[1], a.shape[0]) if trans_a else a.shape
    kb, n = (b.shape[1], b.shape[0]) if trans_b else b.shape
    if kb != k:
        raise ValueError(f"Invalid arguments `a`, `b`: inner dimensions differ, op(a) is "
                         f"{(m, k)} and op(b) is {(kb, n)}")
    if m == 0 or n == 0 or k == 0:
        return np.zeros((m, n), dtype=a.dtype)
    c = np.empty((m, n), dtype=a.dtype)
    _matmul_entry(a, b, c, trans_a, trans_b, check_threads(n_threads))
    return c


def _matmul_entry(const floating[:, ::1] a, const floating[:, ::1] b, floating[:, ::1] c,
                  bint trans_a, bint trans_b, int n_threads):
    cdef int m = c.shape[0], n = c.shape[1]
    cdef int k = a.shape[0] if trans_a else a.shape[1]
    with nogil:
        _gemm(trans_a, trans_b, m, n, k, &a[0, 0], <int> a.shape[1], &b[0, 0], <int> b.shape[1],
              <floating> 0, &c[0, 0], n, n_threads)


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
    if n_blocks == 1 or n * f < parallel_min():   # (benchmarks/bench_autograd.py, mlp100)
        _sum_columns(dy, n, f, 0, f, db)     # each column is summed alike either way
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


cdef inline void* _data(object a):
    return cnp.PyArray_DATA(<cnp.ndarray> a)


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
    check_nd(x, "x", 2)
    check_nd(weight, "weight", 2, x.dtype)
    cdef cnp.npy_intp* x_dims = cnp.PyArray_DIMS(<cnp.ndarray> x)
    cdef cnp.npy_intp* w_dims = cnp.PyArray_DIMS(<cnp.ndarray> weight)
    if w_dims[1] != x_dims[1]:
        raise ValueError(f"Invalid argument `weight`: expected shape (out_features, "
                         f"{x.shape[1]}) for x of shape {x.shape}. Received: shape={weight.shape}")
    if bias is not None:
        check_nd(bias, "bias", 1, x.dtype)
        if cnp.PyArray_DIMS(<cnp.ndarray> bias)[0] != w_dims[0]:
            raise ValueError(f"Invalid argument `bias`: expected shape ({weight.shape[0]},). "
                             f"Received: shape={bias.shape}")
    cdef int threads = check_threads(n_threads)
    cdef bint fuse_relu = bool(relu)
    cdef int n = x_dims[0], k = x_dims[1], m = w_dims[0]
    cdef bint f32 = cnp.PyArray_TYPE(<cnp.ndarray> x) == cnp.NPY_FLOAT32
    if _transposed_forward(n, k, m, bias is not None):
        yt = np.empty((m, n), dtype=x.dtype)
        y = np.empty((n, m), dtype=x.dtype)
        _linear_forward_transposed(x, weight, bias, yt, y, fuse_relu, threads)
        return y
    y = np.empty((n, m), dtype=x.dtype)
    if n == 0 or m == 0:
        return y
    cdef const void* pb = NULL if bias is None else _data(bias)
    cdef const void* px = _data(x)
    cdef const void* pw = _data(weight)
    cdef void* py = _data(y)
    with nogil:
        if f32:
            _linear_forward_entry[float](<const float*> px, <const float*> pw, <const float*> pb,
                                  <float*> py, n, k, m, fuse_relu, threads)
        else:
            _linear_forward_entry[double](<const double*> px, <const double*> pw, <const double*> pb,
                                  <double*> py, n, k, m, fuse_relu, threads)
    return y


# Layers at least this big (out_features * in_features) compute Y^T = W X^T.
TRANSPOSED_MIN = 128 * 512


def _transposed_forward(n, k, m, has_bias):
    """The forward's one fast-path choice: ``Y^T = W X^T`` then a transpose fused with the
    bias (and ReLU), or ``Y = X W^T`` directly.  OpenBLAS runs the wide-output product
    faster for layers like 784 -> 256 by more than the transpose costs; measured with
    benchmarks/bench_training.py (the MLP workload, Dense forward)."""
    return m * k >= TRANSPOSED_MIN and n > 1 and has_bias


cdef void _linear_forward_entry(const floating* x,      # IN  (N, K)
                                const floating* w,      # IN  (M, K)
                                const floating* bias,   # IN  (M,) or NULL
                                floating* y,            # OUT (N, M)
                                int n, int k, int m, bint fuse_relu, int n_threads) noexcept nogil:
    cdef Py_ssize_t i, size = <Py_ssize_t> n * m
    cdef floating v
    # Y starts as the bias in every row (zeros without one); the GEMM adds X W^T to it.
    if bias == NULL:
        memset(y, 0, size * sizeof(floating))
    else:
        for i in range(n):
            memcpy(y + i * m, bias, m * sizeof(floating))
    if k > 0:    # k == 0: Y is the bias alone
        _gemm(False, True, n, m, k, x, k, w, k, <floating> 1, y, m, n_threads)
    if fuse_relu:
        for i in range(size):
            v = y[i]
            y[i] = 0 if v < 0 else v


def _linear_forward_transposed(const floating[:, ::1] x, const floating[:, ::1] w,
                               const floating[::1] bias,       # IN  (M,)
                                floating[:, ::1] yt,             # scratch (M, N)
                                floating[:, ::1] y,              # OUT (N, M)
                                bint fuse_relu,
                                int n_threads):
    cdef int n = x.shape[0], k = x.shape[1], m = w.shape[0]
    cdef int i0
    with nogil:
        # Y^T (M, N) = W (M, K) @ X^T (K, N)
        _gemm(False, True, m, n, k, &w[0, 0], k, &x[0, 0], k, <floating> 0, &yt[0, 0], n,
              n_threads)
        # Y = relu?((Y^T)^T + b), 16 output rows per task
        for i0 in prange(0, n, 16, schedule="static", num_threads=n_threads if n * m >= 65536 else 1):
            transpose_rows(&yt[0, 0], n, &bias[0], &y[0, 0], m, m, fuse_relu,
                           i0, i0 + 16 if i0 + 16 < n else n)


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
    check_nd(x, "x", 2)
    check_nd(weight, "weight", 2, x.dtype)
    check_nd(grad_output, "grad_output", 2, x.dtype)
    cdef cnp.npy_intp* x_dims = cnp.PyArray_DIMS(<cnp.ndarray> x)
    cdef cnp.npy_intp* w_dims = cnp.PyArray_DIMS(<cnp.ndarray> weight)
    cdef cnp.npy_intp* g_dims = cnp.PyArray_DIMS(<cnp.ndarray> grad_output)
    if w_dims[1] != x_dims[1] or g_dims[0] != x_dims[0] or g_dims[1] != w_dims[0]:
        raise ValueError(f"Invalid arguments: expected x (N, in), weight (out, in) and "
                         f"grad_output (N, out). Received: x {x.shape}, weight {weight.shape}, "
                         f"grad_output {grad_output.shape}")
    cdef int threads = check_threads(n_threads)
    cdef int n = x_dims[0], k = x_dims[1], m = w_dims[0]
    dtype = x.dtype
    # Every output is fully overwritten (GEMMs with beta = 0), except for empty operands.
    cdef bint empty = n == 0 or k == 0 or m == 0
    alloc = np.zeros if empty else np.empty
    dx = alloc((n, k), dtype=dtype) if need_input_grad else None
    dw = alloc((m, k), dtype=dtype) if need_weight_grad else None
    db = alloc((m,), dtype=dtype) if need_bias_grad else None
    if empty:
        return dx, dw, db
    cdef void* pdx = NULL if dx is None else _data(dx)
    cdef void* pdw = NULL if dw is None else _data(dw)
    cdef void* pdb = NULL if db is None else _data(db)
    cdef const void* px = _data(x)
    cdef const void* pw = _data(weight)
    cdef const void* pg = _data(grad_output)
    cdef bint f32 = cnp.PyArray_TYPE(<cnp.ndarray> x) == cnp.NPY_FLOAT32
    with nogil:
        if f32:
            _linear_backward_entry[float](<const float*> px, <const float*> pw, <const float*> pg,
                                   <float*> pdx, <float*> pdw, <float*> pdb, n, k, m, threads)
        else:
            _linear_backward_entry[double](<const double*> px, <const double*> pw, <const double*> pg,
                                   <double*> pdx, <double*> pdw, <double*> pdb, n, k, m, threads)
    return dx, dw, db


cdef void _linear_backward_entry(const floating* x,    # IN  (N, K)
                                 const floating* w,    # IN  (M, K)
                                 const floating* dy,   # IN  (N, M)
                                 floating* dx,         # OUT (N, K) or NULL
                                 floating* dw,         # OUT (M, K) or NULL
                                 floating* db,         # OUT (M,) or NULL
                                 int n, int k, int m, int n_threads) noexcept nogil:
    if dx != NULL:   # dX (N, in) = dY (N, out) @ W (out, in)
        _gemm(False, False, n, k, m, dy, m, w, k, <floating> 0, dx, k, n_threads)
    if dw != NULL:   # dW (out, in) = dY^T (out, N) @ X (N, in)
        _gemm(True, False, m, k, n, dy, m, x, k, <floating> 0, dw, k, n_threads)
    if db != NULL:
        _bias_grad_rows(dy, n, m, db, n_threads)
