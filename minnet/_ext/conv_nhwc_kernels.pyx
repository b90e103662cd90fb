"""2-D convolution kernels for channels_last (NHWC, Keras's layout), forward and backward:
the patches as the rows of an ``(N*L, K)`` matrix, the output straight in NHWC.

The weight, kept in PyTorch's ``(F, C, kh, kw)`` layout, is permuted (it is small; the data
never is) to ``W2 (F, kh, kw, C)`` read as ``(F, K)``::

    forward:   Y (N*L, F) = col @ W2^T + b            (W2^T kept as a (K, F) array)
    backward:  dW2^T = col^T @ dY,   db = column sums of dY,   dX = col2im(dY @ W2)

conv_kernels.pyx validates, plans (``_plan``: the strategy, chunk and parts, from the shapes only)
and calls :func:`nhwc_forward` / :func:`nhwc_backward` here; the GEMMs are convgemm_kernels.pxd's
(minnet's own float32 GEMM, the BLAS for float64). The partial-sum reductions the
channels_first backward shares are here too (conv_nhwc_kernels.pxd). Determinism: as conv_kernels.pyx's.
"""
from cython.parallel cimport prange, threadid
from libc.string cimport memset

from minnet._ext._blas cimport floating
from minnet._ext.convgemm_kernels cimport conv_gemm, conv_gemm_blocks
from minnet._ext.im2col_kernels cimport (Geometry, col2im_nchw_sample, col2im_nhwc_batch,
                                  col2im_nhwc_sample, im2col_nchw_sample, im2col_nhwc_batch,
                                  im2col_nhwc_sample)

import numpy as np

__all__ = ["nhwc_forward", "nhwc_backward"]


# ----------------------------------------------------------------------------------------
# channels_last (NHWC): patches as rows, the output comes out NHWC
# ----------------------------------------------------------------------------------------
#
# With W2 = the weight permuted to (F, kh, kw, C) and read as (F, K), and col the (N*L, K)
# patch rows (im2col_kernels.pyx):
#     forward:   Y (N*L, F)   = col @ W2^T + b       (Y is the (N, out_h, out_w, F) output)
#     backward:  dW2 (F, K)   = dY^T @ col           (permuted back to (F, C, kh, kw))
#                db           = column sums of dY
#                dcol (N*L,K) = dY @ W2,  dX = col2im(dcol)
# The batch is cut into chunks of ``chunk`` samples (rows chunk*L of col, contiguous in Y
# and dY, so no copy); see _plan.

cdef void _nhwc_forward_chunks(const floating* x,       # IN  (N, H, W, C)
                               const floating* w2t,     # IN  (K, F)
                               const floating* bias,    # IN  (F,) or NULL
                               floating* y,             # OUT (N, L, F)
                               floating* workspace,     # OUT per-thread scratch
                               long ws_stride, Geometry g, int chunk, bint planes,
                               int n_threads) noexcept nogil:
    """``prange`` over the chunks; each thread im2cols its chunk and runs one GEMM.

    ``planes`` (one input channel, _plan): the patches are gathered as the ``(K, rows)``
    columns of the channels_first im2col (a one-channel NHWC image is the same memory as
    its NCHW form, and its patch order ``i*kw + j`` is the same in both), and the GEMM reads
    them transposed, ``Y (rows, F) = col^T @ W2^T``.
    """
    cdef long n_chunks = (g.n + chunk - 1) // chunk
    cdef long job, rows, r, sample = <long> g.h * g.w * g.c
    cdef int n0, count, j
    cdef floating* ws
    cdef floating* yc
    cdef const floating* col
    for job in prange(n_chunks, schedule="static", num_threads=n_threads):
        ws = workspace + threadid() * ws_stride
        n0 = <int> (job * chunk)
        count = chunk if n0 + chunk <= g.n else g.n - n0
        rows = <long> count * g.l
        yc = y + <long> n0 * g.l * g.f
        _fill_rows(yc, bias, rows, g.f)
        if planes:
            for j in range(count):
                im2col_nchw_sample(x + (n0 + j) * sample, g, ws + <long> j * g.l, rows)
            conv_gemm(True, False, <int> rows, g.f, <int> g.k, ws, <int> rows,
                      w2t, g.f, <floating> 1, yc, g.f)
        else:
            col = _nhwc_patches(x + n0 * sample, g, count, ws)
            conv_gemm(False, False, <int> rows, g.f, <int> g.k, col, <int> g.k,
                      w2t, g.f, <floating> 1, yc, g.f)


cdef inline const floating* _nhwc_patches(const floating* x, Geometry g, int count,
                                          floating* ws) noexcept nogil:
    """The (count*L, K) patch rows of ``count`` samples: x itself for the identity geometry."""
    cdef int j
    if g.identity:
        return x
    for j in range(count):
        im2col_nhwc_sample(x + <long> j * g.h * g.w * g.c, g, ws + <long> j * g.l * g.k)
    return ws


cdef inline void _fill_rows(floating* y, const floating* bias, long rows,
                            int f) noexcept nogil:
    """Every row of y (rows, f) set to the bias (zero without one)."""
    cdef long r
    cdef int q
    if bias == NULL:
        memset(y, 0, rows * f * sizeof(floating))
        return
    for r in range(rows):
        for q in range(f):
            y[r * f + q] = bias[q]


cdef void _nhwc_forward_batched(const floating* x, const floating* w2t, const floating* bias,
                                floating* y, floating* col, Geometry g,
                                int n_threads) noexcept nogil:
    """One im2col of the batch (parallel over output rows) and one blocked GEMM."""
    cdef long rows = <long> g.n * g.l
    cdef const floating* patches = x
    _fill_rows(y, bias, rows, g.f)
    if not g.identity:
        im2col_nhwc_batch(x, g, col, n_threads)
        patches = col
    conv_gemm_blocks(False, False, <int> rows, g.f, <int> g.k, patches, <int> g.k,
                     w2t, g.f, <floating> 1, y, g.f, n_threads)


cdef inline void _column_sums(const floating* dy, long rows, int f,
                              double* acc) noexcept nogil:
    """acc[q] += sum_r dy[r, q], rows in order.  Eight columns at a time in local
    accumulators (a ``double*`` could alias dy, so ``acc[q] +=`` in the row loop would be a
    load and a store per element); each column is still summed row by row."""
    cdef long r
    cdef int q, q8 = f - f % 8
    cdef double s0, s1, s2, s3, s4, s5, s6, s7
    cdef const floating* p
    for q in range(0, q8, 8):
        s0 = acc[q]
        s1 = acc[q + 1]
        s2 = acc[q + 2]
        s3 = acc[q + 3]
        s4 = acc[q + 4]
        s5 = acc[q + 5]
        s6 = acc[q + 6]
        s7 = acc[q + 7]
        for r in range(rows):
            p = dy + r * f + q
            s0 = s0 + p[0]
            s1 = s1 + p[1]
            s2 = s2 + p[2]
            s3 = s3 + p[3]
            s4 = s4 + p[4]
            s5 = s5 + p[5]
            s6 = s6 + p[6]
            s7 = s7 + p[7]
        acc[q] = s0
        acc[q + 1] = s1
        acc[q + 2] = s2
        acc[q + 3] = s3
        acc[q + 4] = s4
        acc[q + 5] = s5
        acc[q + 6] = s6
        acc[q + 7] = s7
    for q in range(q8, f):
        s0 = acc[q]
        for r in range(rows):
            s0 = s0 + dy[r * f + q]
        acc[q] = s0


cdef void _nhwc_backward_chunk(const floating* x, const floating* w2, const floating* w2t,
                               const floating* dy, floating* dx, floating* dw_parts,
                               double* db_parts, floating* ws, Geometry g, bint need_dx,
                               bint need_dw, bint need_db, int chunk, bint planes, long job,
                               int part) noexcept nogil:
    """Chunk ``job`` of the backward; its dW2 (``planes``: dW2^T) and db added to partial
    sum ``part``."""
    cdef int n0 = <int> (job * chunk), j
    cdef int count = chunk if n0 + chunk <= g.n else g.n - n0
    cdef long rows = <long> count * g.l, sample = <long> g.h * g.w * g.c
    cdef const floating* dyc = dy + <long> n0 * g.l * g.f
    cdef const floating* col
    if need_db:
        _column_sums(dyc, rows, g.f, db_parts + <long> part * g.f)
    if planes:      # the (K, rows) patch columns of a one-channel image (_nhwc_forward_chunks)
        if need_dw:
            for j in range(count):
                im2col_nchw_sample(x + (n0 + j) * sample, g, ws + <long> j * g.l, rows)
            # dW2^T_t (K, F) += col (K, rows) @ dY_chunk (rows, F)
            conv_gemm(False, False, <int> g.k, g.f, <int> rows, ws, <int> rows,
                      dyc, g.f, <floating> 1, dw_parts + <long> part * g.f * g.k, g.f)
        if need_dx:
            # dcol (K, rows) = W2^T (K, F) @ dY_chunk^T (F, rows), then col2im per sample
            conv_gemm(False, True, <int> g.k, <int> rows, g.f, w2t, g.f, dyc, g.f,
                      <floating> 0, ws, <int> rows)
            for j in range(count):
                col2im_nchw_sample(ws + <long> j * g.l, rows, g, dx + (n0 + j) * sample)
        return
    if need_dw:
        col = _nhwc_patches(x + n0 * sample, g, count, ws)
        # dW2^T_t (K, F) += col^T (K, rows) @ dY_chunk (rows, F): this orientation is
        # faster in OpenBLAS than dY^T @ col (benchmarks/bench_conv_layout.py, part 1, the convolutions)
        conv_gemm(True, False, <int> g.k, g.f, <int> rows, col, <int> g.k, dyc,
                  g.f, <floating> 1, dw_parts + <long> part * g.f * g.k, g.f)
    if need_dx:
        if g.identity:   # dX = dY @ W2, straight into dx
            conv_gemm(False, False, <int> rows, <int> g.k, g.f, dyc, g.f, w2,
                      <int> g.k, <floating> 0, dx + n0 * sample, <int> g.k)
        else:
            conv_gemm(False, False, <int> rows, <int> g.k, g.f, dyc, g.f, w2,
                      <int> g.k, <floating> 0, ws, <int> g.k)
            for j in range(count):
                col2im_nhwc_sample(ws + <long> j * g.l * g.k, g, dx + (n0 + j) * sample)


# Alike (duplicates): the parts loop of conv_kernels._nchw_backward_parts, kept per layout
# because each calls its own layout's chunk (typed fused pointers cannot be passed as one
# function pointer without losing the inlining).
cdef void _nhwc_backward_parts(const floating* x, const floating* w2, const floating* w2t,
                               const floating* dy, floating* dx, floating* dw_parts,
                               double* db_parts, floating* workspace, long ws_stride,
                               Geometry g, bint need_dx, bint need_dw, bint need_db, int chunk,
                               bint planes, int n_parts, int n_threads) noexcept nogil:
    """As _conv_backward_per_sample: fixed parts of consecutive chunks, partials per part."""
    cdef long n_chunks = (g.n + chunk - 1) // chunk
    cdef long job, first, last
    cdef int part
    cdef floating* ws
    for part in prange(n_parts, schedule="static", num_threads=n_threads):
        ws = workspace + threadid() * ws_stride
        first = part * n_chunks // n_parts
        last = (part + 1) * n_chunks // n_parts
        for job in range(first, last):
            _nhwc_backward_chunk(x, w2, w2t, dy, dx, dw_parts, db_parts, ws, g, need_dx,
                                 need_dw, need_db, chunk, planes, job, part)


cdef void _nhwc_backward_batched(const floating* x, const floating* w2, const floating* dy,
                                 floating* dx, floating* dw2, double* db, floating* col,
                                 Geometry g, bint need_dx, bint need_dw, bint need_db,
                                 int n_threads) noexcept nogil:
    """One im2col of the batch and blocked GEMMs (few samples: threads split the GEMMs)."""
    cdef long rows = <long> g.n * g.l
    cdef const floating* patches = x
    if need_db:
        _column_sums(dy, rows, g.f, db)
    if need_dw:
        if not g.identity:
            im2col_nhwc_batch(x, g, col, n_threads)
            patches = col
        conv_gemm_blocks(True, False, g.f, <int> g.k, <int> rows, dy, g.f, patches,
                         <int> g.k, <floating> 0, dw2, <int> g.k, n_threads)
    if need_dx:
        if g.identity:
            conv_gemm_blocks(False, False, <int> rows, <int> g.k, g.f, dy, g.f, w2,
                             <int> g.k, <floating> 0, dx, <int> g.k, n_threads)
        else:
            conv_gemm_blocks(False, False, <int> rows, <int> g.k, g.f, dy, g.f, w2,
                             <int> g.k, <floating> 0, col, <int> g.k, n_threads)
            col2im_nhwc_batch(col, g, dx, n_threads)


cdef void reduce_parts_transposed(const floating* parts,    # IN  (n_parts, K, F)
                                  int n_parts, long k, long f,
                                  floating* out,            # OUT (F, K)
                                  int n_threads) noexcept nogil:
    """out[f, k] = sum_t parts[t, k, f] (in parallel only when it is worth a region)."""
    cdef long row, col
    cdef int t
    cdef floating acc
    if k * f < 262144:
        n_threads = 1
    for row in prange(k, schedule="static", num_threads=n_threads):
        for col in range(f):
            acc = parts[row * f + col]
            for t in range(1, n_parts):
                acc = acc + parts[(t * k + row) * f + col]
            out[col * k + row] = acc


cdef void sum_parts(const double[:, ::1] parts, floating[::1] out) noexcept nogil:
    """``out[f] = sum_t parts[t, f]`` in a fixed order (the per-part bias gradients)."""
    cdef Py_ssize_t t, f
    cdef double acc
    for f in range(parts.shape[1]):
        acc = 0
        for t in range(parts.shape[0]):
            acc += parts[t, f]
        out[f] = <floating> acc


cdef _nhwc_forward_entry(const floating[:, :, :, ::1] x, const floating[:, :, :, ::1] w2t,
                         object bias, floating[:, :, :, ::1] y, Geometry g, int n_threads,
                         bint batched, int chunk, bint planes):
    cdef const floating[::1] b
    cdef const floating* pb = NULL
    cdef floating[:, ::1] ws
    cdef long ws_stride
    dtype = np.float32 if floating is float else np.float64
    if bias is not None:
        b = bias
        pb = &b[0]
    if batched:
        ws = np.empty((1, 1 if g.identity else g.n * g.l * g.k), dtype=dtype)
        with nogil:
            _nhwc_forward_batched(&x[0, 0, 0, 0], &w2t[0, 0, 0, 0], pb, &y[0, 0, 0, 0],
                                  &ws[0, 0], g, n_threads)
        return
    ws_stride = 0 if g.identity else <long> chunk * g.l * g.k
    n_threads = min(n_threads, -(-g.n // chunk))
    ws = np.empty((n_threads, max(1, ws_stride)), dtype=dtype)
    with nogil:
        _nhwc_forward_chunks(&x[0, 0, 0, 0], &w2t[0, 0, 0, 0], pb, &y[0, 0, 0, 0], &ws[0, 0],
                             ws_stride, g, chunk, planes, n_threads)


cdef _nhwc_backward_entry(const floating[:, :, :, ::1] x, const floating[:, :, :, ::1] w2,
                          const floating[:, :, :, ::1] w2t,
                          const floating[:, :, :, ::1] dy, floating[:, :, :, ::1] dx,
                          floating[:, :, :, ::1] dw, floating[::1] db, Geometry g,
                          int n_threads, bint batched, int chunk, int n_parts, bint planes):
    """dx, dw, db: the outputs, each None when not wanted."""
    cdef floating[:, ::1] ws, parts
    cdef bint need_dx = dx is not None, need_dw = dw is not None, need_db = db is not None
    cdef floating* pdx = &dx[0, 0, 0, 0] if need_dx else NULL
    cdef floating* pdw = &dw[0, 0, 0, 0] if need_dw else NULL
    cdef double[:, ::1] db_parts
    cdef int n_run
    cdef long ws_stride
    dtype = np.float32 if floating is float else np.float64
    if batched:
        n_parts = 1
        db_parts = np.zeros((1, g.f), dtype=np.float64)
        ws = np.empty((1, 1 if g.identity else g.n * g.l * g.k), dtype=dtype)
        with nogil:
            _nhwc_backward_batched(&x[0, 0, 0, 0], &w2[0, 0, 0, 0], &dy[0, 0, 0, 0], pdx, pdw,
                                   &db_parts[0, 0], &ws[0, 0], g, need_dx, need_dw, need_db,
                                   n_threads)
    else:
        db_parts = np.zeros((n_parts, g.f), dtype=np.float64)
        ws_stride = <long> chunk * g.l * g.k if (need_dx or need_dw) and not g.identity else 0
        n_run = min(n_threads, n_parts)
        ws = np.empty((n_run, max(1, ws_stride)), dtype=dtype)
        parts = np.zeros((n_parts if need_dw else 1, g.k * g.f), dtype=dtype)
        with nogil:
            _nhwc_backward_parts(&x[0, 0, 0, 0], &w2[0, 0, 0, 0], &w2t[0, 0, 0, 0],
                                 &dy[0, 0, 0, 0], pdx, &parts[0, 0], &db_parts[0, 0],
                                 &ws[0, 0], ws_stride, g, need_dx, need_dw, need_db, chunk,
                                 planes, n_parts, n_run)
            if need_dw:      # the parts hold dW2^T (K, F)
                reduce_parts_transposed(&parts[0, 0], n_parts, g.k, g.f, pdw, n_threads)
    if need_db:
        sum_parts(db_parts, db)


def nhwc_forward(x, w2t, bias, y, g_obj, int n_threads, bint batched, int chunk, bint planes):
    """``y = conv(x)`` (NHWC) into ``y`` with ``W2^T`` = w2t, as conv_kernels.conv2d_forward planned."""
    cdef Geometry g = g_obj
    if x.dtype == np.float32:
        _nhwc_forward_entry[float](x, w2t, bias, y, g, n_threads, batched, chunk, planes)
    else:
        _nhwc_forward_entry[double](x, w2t, bias, y, g, n_threads, batched, chunk, planes)


def nhwc_backward(x, w2, w2t, dy, dx, dw2, db, g_obj, int n_threads, bint batched, int chunk,
                  int n_parts, bint planes):
    """dx, dW2 (``(F, kh, kw, C)``) and db into the arrays given (None: not wanted)."""
    cdef Geometry g = g_obj
    if x.dtype == np.float32:
        _nhwc_backward_entry[float](x, w2, w2t, dy, dx, dw2, db, g, n_threads, batched, chunk,
                                    n_parts, planes)
    else:
        _nhwc_backward_entry[double](x, w2, w2t, dy, dx, dw2, db, g, n_threads, batched, chunk,
                                     n_parts, planes)
