"""Convolution and linear kernels: im2col / col2im, conv2d and linear forward and backward.

Layout is NCHW.  For one sample ``x[n]`` of shape ``(C, H, W)`` and a kernel
``(F, C, kh, kw)`` the patches are gathered into a matrix ``col`` of shape ``(K, L)``
with ``K = C * kh * kw`` and ``L = out_h * out_w``::

    col[(c * kh + i) * kw + j, oh * out_w + ow] = x[c, oh*sh - pad_top + i*dh, ow*sw - pad_left + j*dw]

(zero where the index falls in the padding).  The row index multiplies ``i`` by the kernel
*width* ``kw``: the classic im2col bug uses the height there and only shows on non-square
kernels.  Then (see docs/math/convolution.md)::

    forward:   Y[n]  = W_col @ col(x[n]) + b          W_col = weight.reshape(F, K)
    backward:  dW    = sum_n dY[n] @ col(x[n])^T
               db    = sum_{n, l} dY[n, :, l]
               dX[n] = col2im(W_col^T @ dY[n])

Padding is given as ``pad_top`` / ``pad_left`` plus the output size; the output size
implies the bottom / right padding, which is how asymmetric ("same" with an even kernel)
padding is expressed.  The loops only visit the output rows/columns whose input index lies
in ``[0, H) x [0, W)`` (``_valid_columns``), so the kernels never read or write outside
the arrays whatever the padding or output size.

Two ways of running the GEMMs are implemented (``method=``):

* ``"per_sample"``: ``prange`` over the samples; each thread im2cols its sample into its own
  workspace and calls single-threaded BLAS (``gemm``).  dW is accumulated transposed
  (``dW^T += col @ dY[n]^T``, the faster OpenBLAS layout) in one partial sum per thread,
  reduced (and transposed back) at the end.  Small, cache-resident workspaces.  When
  ``out_h * out_w`` is small but the product is not tiny (see ``_chunk``), a few samples
  are put side by side so each GEMM is wider.
* ``"batched"``: one im2col of the whole batch into a ``(K, N * L)`` matrix and one large
  GEMM split over threads (``gemm_parallel``).  Needs ``K * N * L`` elements of workspace
  and a transpose of Y / dY between ``(F, N*L)`` and ``(N, F, L)``.

* ``"winograd"``: 3x3 kernels, stride 1, dilation 1 only: Winograd F(2x2, 3x3) for the
  forward and the input gradient (16 GEMMs ``(F, C) @ (C, tiles)`` between cheap input and
  output transforms, 2.25x fewer multiplications); dW stays on ``per_sample``/``batched``.
  ``"auto"`` uses it when the image and both channel counts are large enough
  (``_use_winograd``; measured rule in docs/math/convolution.md).

``"auto"`` picks ``per_sample`` when there are at least as many samples as threads and
``batched`` otherwise (with one sample the batched layout equals the per-sample one, so it
is simply a threaded GEMM).  benchmarks/bench_conv.py measures the two; per_sample is
about twice as fast on the reference problem.  The wrappers use at most one thread per
MFLOP of work, so tiny convolutions do not pay for waking a thread team.
"""
from cython.parallel cimport prange, threadid
from libc.string cimport memcpy, memset

from minnet._ext._blas cimport floating, gemm, gemm_parallel

cdef extern from "_transpose.h" nogil:
    void minnet_transpose_bias_f32(const float* src, const float* bias, float* dst,
                                   Py_ssize_t n, Py_ssize_t m, int relu,
                                   Py_ssize_t i_begin, Py_ssize_t i_end)
    void minnet_transpose_bias_f64(const double* src, const double* bias, double* dst,
                                   Py_ssize_t n, Py_ssize_t m, int relu,
                                   Py_ssize_t i_begin, Py_ssize_t i_end, Py_ssize_t j_begin)

import numpy as np


# ----------------------------------------------------------------------------------------
# im2col / col2im on one channel plane
# ----------------------------------------------------------------------------------------

cdef inline void _valid_columns(int offset, int stride, int width, int out_w,
                                int* lo, int* hi) noexcept nogil:
    """Output positions o in [lo, hi) whose input index o*stride + offset lies in [0, width).

    Used for columns (offset = j*dw - pad_left) and for rows (offset = i*dh - pad_top).
    """
    cdef int first, stop
    if offset >= 0:
        first = 0
    else:
        first = (-offset + stride - 1) // stride
    if width - 1 - offset < 0:
        stop = 0
    else:
        stop = (width - 1 - offset) // stride + 1
    if first > out_w:
        first = out_w
    if stop > out_w:
        stop = out_w
    if stop < first:
        stop = first
    lo[0] = first
    hi[0] = stop


cdef void _im2col_channel(const floating* plane,          # IN  (H, W) input plane
                          int height, int width,
                          int kh, int kw, int sh, int sw, int pt, int pl, int dh, int dw,
                          int out_h, int out_w,
                          floating* col, long ld          # OUT kh*kw rows of row stride ld
                          ) noexcept nogil:
    cdef int i, j, oh, ow, row_lo, row_hi, lo, hi, offset
    cdef long in_row
    cdef floating* block
    cdef floating* dst
    for i in range(kh):
        # Output rows oh whose input row oh*sh - pt + i*dh lies inside the image.
        _valid_columns(i * dh - pt, sh, height, out_h, &row_lo, &row_hi)
        for j in range(kw):
            offset = j * dw - pl
            _valid_columns(offset, sw, width, out_w, &lo, &hi)
            block = col + (i * kw + j) * ld    # this (i, j) row of col: L contiguous values
            if hi <= lo:
                memset(block, 0, <long> out_h * out_w * sizeof(floating))
                continue
            # Output rows reading only padding are zeroed whole; the others get their
            # left/right padding zeroed and the rest copied (each value written once).
            if row_lo > 0:
                memset(block, 0, <long> row_lo * out_w * sizeof(floating))
            if row_hi < out_h:
                memset(block + <long> row_hi * out_w, 0,
                       <long> (out_h - row_hi) * out_w * sizeof(floating))
            if sh == 1 and sw == 1 and out_w == width and row_lo < row_hi:
                # Rows of col and of the plane have the same stride: one copy of the span
                # from the first valid value to the last, then re-zero the columns that
                # wrapped in from the neighbouring image rows.
                in_row = <long> (row_lo - pt + i * dh) * width + offset
                memcpy(block + <long> row_lo * out_w + lo, plane + in_row + lo,
                       (<long> (row_hi - row_lo - 1) * out_w + hi - lo) * sizeof(floating))
                if lo > 0 or hi < out_w:
                    for oh in range(row_lo, row_hi):
                        dst = block + <long> oh * out_w
                        for ow in range(lo):
                            dst[ow] = 0
                        for ow in range(hi, out_w):
                            dst[ow] = 0
                continue
            for oh in range(row_lo, row_hi):
                dst = block + <long> oh * out_w
                in_row = <long> (oh * sh - pt + i * dh) * width + offset
                for ow in range(lo):
                    dst[ow] = 0
                for ow in range(hi, out_w):
                    dst[ow] = 0
                if sw == 1:
                    memcpy(dst + lo, plane + in_row + lo, (hi - lo) * sizeof(floating))
                else:
                    for ow in range(lo, hi):
                        dst[ow] = plane[in_row + <long> ow * sw]


cdef void _col2im_channel(const floating* col, long ld,   # IN  kh*kw rows of row stride ld
                          int height, int width,
                          int kh, int kw, int sh, int sw, int pt, int pl, int dh, int dw,
                          int out_h, int out_w,
                          floating* plane                 # INOUT (H, W), accumulated into
                          ) noexcept nogil:
    cdef int i, j, oh, ow, row_lo, row_hi, lo, hi, offset
    cdef long in_row
    cdef floating* dst
    cdef const floating* src
    for i in range(kh):
        _valid_columns(i * dh - pt, sh, height, out_h, &row_lo, &row_hi)
        for j in range(kw):
            offset = j * dw - pl
            _valid_columns(offset, sw, width, out_w, &lo, &hi)
            for oh in range(row_lo, row_hi):
                src = col + (i * kw + j) * ld + <long> oh * out_w
                in_row = <long> (oh * sh - pt + i * dh) * width + offset
                if sw == 1:
                    dst = plane + in_row
                    for ow in range(lo, hi):
                        dst[ow] += src[ow]
                else:
                    for ow in range(lo, hi):
                        plane[in_row + <long> ow * sw] += src[ow]


cdef void _im2col_sample(const floating* x,                   # IN  (C, H, W)
                         int channels, int height, int width,
                         int kh, int kw, int sh, int sw, int pt, int pl, int dh, int dw,
                         int out_h, int out_w,
                         floating* col, long ld                 # OUT (K, L), row stride ld
                         ) noexcept nogil:
    cdef int c
    cdef long plane = <long> height * width
    for c in range(channels):
        _im2col_channel(x + c * plane, height, width, kh, kw, sh, sw, pt, pl, dh, dw,
                        out_h, out_w, col + <long> c * kh * kw * ld, ld)


cdef void _col2im_sample(const floating* col, long ld,        # IN  (K, L), row stride ld
                         int channels, int height, int width,
                         int kh, int kw, int sh, int sw, int pt, int pl, int dh, int dw,
                         int out_h, int out_w,
                         floating* x                            # OUT (C, H, W)
                         ) noexcept nogil:
    """Zero the sample ``x`` (C, H, W) and accumulate the patches of ``col`` into it."""
    cdef int c
    cdef long plane = <long> height * width
    memset(x, 0, channels * plane * sizeof(floating))
    for c in range(channels):
        _col2im_channel(col + <long> c * kh * kw * ld, ld, height, width, kh, kw, sh, sw,
                        pt, pl, dh, dw, out_h, out_w, x + c * plane)


# ----------------------------------------------------------------------------------------
# Geometry shared by the conv kernels
# ----------------------------------------------------------------------------------------

cdef struct Geometry:
    int n, c, h, w          # input
    int f, kh, kw           # kernel
    int sh, sw, pt, pl, dh, dw
    int out_h, out_w
    long k                  # C * kh * kw
    long l                  # out_h * out_w
    bint identity           # 1x1, stride 1, no padding: col(x[n]) is x[n] itself


cdef Geometry _geometry(tuple x_shape, int f, int kh, int kw, tuple stride, tuple padding,
                        tuple dilation, tuple out_size):
    cdef Geometry g
    g.n, g.c, g.h, g.w = x_shape
    g.f, g.kh, g.kw = f, kh, kw
    g.sh, g.sw = stride
    g.pt, g.pl = padding
    g.dh, g.dw = dilation
    g.out_h, g.out_w = out_size
    g.k = <long> g.c * kh * kw
    g.l = <long> g.out_h * g.out_w
    g.identity = (kh == 1 and kw == 1 and g.sh == 1 and g.sw == 1 and g.pt == 0
                  and g.pl == 0 and g.out_h == g.h and g.out_w == g.w)
    return g


# ----------------------------------------------------------------------------------------
# im2col / col2im over a batch, parallel over (sample, channel)
# ----------------------------------------------------------------------------------------

cdef void _im2col_batch(const floating* x,                    # IN  (N, C, H, W)
                        Geometry g,
                        floating* col, long ld, long sample_stride,   # OUT
                        int n_threads) noexcept nogil:
    """col of sample n starts at ``col + n * sample_stride`` with row stride ``ld``."""
    cdef long job
    cdef int n, c
    cdef long plane = <long> g.h * g.w
    for job in prange(<long> g.n * g.c, schedule="static", num_threads=n_threads):
        n = job // g.c
        c = job % g.c
        _im2col_channel(x + job * plane, g.h, g.w, g.kh, g.kw, g.sh, g.sw, g.pt, g.pl,
                        g.dh, g.dw, g.out_h, g.out_w,
                        col + n * sample_stride + <long> c * g.kh * g.kw * ld, ld)


cdef void _col2im_batch(const floating* col, long ld, long sample_stride,   # IN
                        Geometry g,
                        floating* x,                            # OUT (N, C, H, W)
                        int n_threads) noexcept nogil:
    """Each (sample, channel) plane of ``x`` is written by exactly one thread."""
    cdef long job
    cdef int n, c
    cdef long plane = <long> g.h * g.w
    for job in prange(<long> g.n * g.c, schedule="static", num_threads=n_threads):
        n = job // g.c
        c = job % g.c
        memset(x + job * plane, 0, plane * sizeof(floating))
        _col2im_channel(col + n * sample_stride + <long> c * g.kh * g.kw * ld, ld,
                        g.h, g.w, g.kh, g.kw, g.sh, g.sw, g.pt, g.pl, g.dh, g.dw,
                        g.out_h, g.out_w, x + job * plane)


# ----------------------------------------------------------------------------------------
# conv2d forward
# ----------------------------------------------------------------------------------------

cdef void _fill_bias(const floating* bias,                    # IN  (F,) or NULL
                     Geometry g,
                     floating* y,                               # OUT (N, F, L)
                     int n_threads) noexcept nogil:
    """y[n, f, :] = bias[f] (or 0 without bias), so the GEMM can accumulate with beta = 1."""
    cdef long job, p
    cdef floating value
    for job in prange(<long> g.n * g.f, schedule="static", num_threads=n_threads):
        value = bias[job % g.f] if bias != NULL else 0
        for p in range(g.l):
            y[job * g.l + p] = value


cdef inline void _fill(floating* dst, floating value, long size) noexcept nogil:
    cdef long p
    for p in range(size):
        dst[p] = value


cdef void _conv_forward_per_sample(const floating* x,          # IN  (N, C, H, W)
                                   const floating* w,          # IN  (F, K)
                                   const floating* bias,       # IN  (F,) or NULL
                                   floating* y,                # OUT (N, F, L)
                                   floating* workspace,        # OUT per-thread scratch
                                   long ws_stride,             # scratch elements per thread
                                   Geometry g, int chunk, int n_threads) noexcept nogil:
    """One parallel region over chunks of ``chunk`` samples, each thread on its own chunks.

    ``chunk == 1``: ``y[n]`` is prefilled with the bias and the GEMM accumulates into it
    (beta = 1); the scratch is one ``(K, L)`` im2col (none for the identity geometry).
    ``chunk > 1`` (small images): the chunk's patches go side by side into a ``(K, s*L)``
    matrix so one GEMM is ``s`` times wider, the product lands in a ``(F, s*L)`` buffer and is
    copied into ``y`` with the bias; the scratch is ``(K + F) * chunk * L``.
    """
    cdef long n_chunks = (g.n + chunk - 1) // chunk
    cdef long job, ld, p
    cdef int n, n0, count, j, f
    cdef floating value
    cdef floating* y_n
    cdef floating* ws
    cdef floating* ybuf
    cdef const floating* col
    cdef const floating* src
    for job in prange(n_chunks, schedule="static", num_threads=n_threads):
        ws = workspace + threadid() * ws_stride
        n0 = <int> (job * chunk)
        if chunk == 1:
            y_n = y + <long> n0 * g.f * g.l
            if bias == NULL:          # y[n] = b, then the GEMM accumulates (beta = 1)
                memset(y_n, 0, g.f * g.l * sizeof(floating))
            else:
                for f in range(g.f):
                    _fill(y_n + f * g.l, bias[f], g.l)
            if g.identity:
                col = x + <long> n0 * g.k * g.l
            else:
                _im2col_sample(x + <long> n0 * g.c * g.h * g.w, g.c, g.h, g.w, g.kh, g.kw,
                               g.sh, g.sw, g.pt, g.pl, g.dh, g.dw, g.out_h, g.out_w, ws, g.l)
                col = ws
            gemm(False, False, g.f, <int> g.l, <int> g.k, <floating> 1, w, <int> g.k,
                 col, <int> g.l, <floating> 1, y_n, <int> g.l)
        else:
            count = chunk if n0 + chunk <= g.n else g.n - n0
            ld = <long> count * g.l
            ybuf = ws + g.k * chunk * g.l
            for j in range(count):
                _im2col_sample(x + <long> (n0 + j) * g.c * g.h * g.w, g.c, g.h, g.w,
                               g.kh, g.kw, g.sh, g.sw, g.pt, g.pl, g.dh, g.dw,
                               g.out_h, g.out_w, ws + j * g.l, ld)
            gemm(False, False, g.f, <int> ld, <int> g.k, <floating> 1, w, <int> g.k,
                 ws, <int> ld, <floating> 0, ybuf, <int> ld)
            for j in range(count):
                y_n = y + <long> (n0 + j) * g.f * g.l
                for f in range(g.f):
                    value = bias[f] if bias != NULL else 0
                    src = ybuf + f * ld + j * g.l
                    for p in range(g.l):
                        y_n[f * g.l + p] = src[p] + value


cdef void _conv_forward_batched(const floating* x, const floating* w, const floating* bias,
                                floating* y, floating* col, floating* y_big, Geometry g,
                                int n_threads) noexcept nogil:
    """col is (K, N*L), y_big is (F, N*L); y_big is unused (may be NULL) when N == 1."""
    cdef long nl = g.n * g.l
    cdef long job, p
    cdef int n, f
    cdef floating value
    cdef const floating* xcol
    if g.n == 1:
        if g.identity:
            xcol = x
        else:
            _im2col_batch(x, g, col, g.l, 0, n_threads)
            xcol = col
        gemm_parallel(False, False, g.f, <int> g.l, <int> g.k, <floating> 1, w, <int> g.k,
                      xcol, <int> g.l, <floating> 1, y, <int> g.l, n_threads)
        return
    _im2col_batch(x, g, col, nl, g.l, n_threads)
    gemm_parallel(False, False, g.f, <int> nl, <int> g.k, <floating> 1, w, <int> g.k,
                  col, <int> nl, <floating> 0, y_big, <int> nl, n_threads)
    # (F, N*L) -> (N, F, L), adding the bias.
    for job in prange(<long> g.n * g.f, schedule="static", num_threads=n_threads):
        n = job // g.f
        f = job % g.f
        value = bias[f] if bias != NULL else 0
        for p in range(g.l):
            y[job * g.l + p] = y_big[f * nl + n * g.l + p] + value


# ----------------------------------------------------------------------------------------
# conv2d backward
# ----------------------------------------------------------------------------------------

cdef double _sum(const floating* values, long size) noexcept nogil:
    """Sum in double with 8 independent accumulators (a single running sum is latency bound)."""
    cdef double acc[8]
    cdef long p, blocks = size // 8
    cdef int lane
    for lane in range(8):
        acc[lane] = 0
    for p in range(blocks):
        for lane in range(8):
            acc[lane] += values[p * 8 + lane]
    for p in range(blocks * 8, size):
        acc[0] += values[p]
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]))


cdef void _bias_grad_nfl(const floating* dy, long n, long f, long l, floating* db,
                         int n_threads) noexcept nogil:
    """db[j] = sum over samples and positions of dy[:, j, :], with double accumulators."""
    cdef long j, i
    cdef double acc
    for j in prange(f, schedule="static", num_threads=n_threads):
        acc = 0
        for i in range(n):
            acc = acc + _sum(dy + (i * f + j) * l, l)
        db[j] = <floating> acc


cdef void _conv_backward_per_sample(const floating* x,         # IN    (N, C, H, W)
                                    const floating* w,         # IN    (F, K)
                                    const floating* dy,        # IN    (N, F, L)
                                    floating* dx,              # OUT   (N, C, H, W)
                                    floating* dwt_parts,       # INOUT (n_parts, K, F), zeroed
                                    double* db_parts,          # INOUT (n_parts, F), zeroed
                                    floating* workspace,       # OUT   per-thread scratch
                                    long ws_stride,            # scratch elements per thread
                                    Geometry g, bint need_dx, bint need_dw, bint need_db,
                                    int chunk, int n_threads) noexcept nogil:
    """One parallel region over chunks of samples; dW and db go to per-thread partial sums.

    The weight gradient is accumulated transposed, ``dW^T (K, F) += col (K, L) @ dY[n]^T``:
    OpenBLAS runs that layout ~10 % faster than ``dY[n] @ col^T``; the reduction of the
    partial sums transposes it back.  With ``chunk > 1`` the chunk's ``dY`` is first copied
    side by side into a ``(F, s*L)`` buffer (after the ``(K, s*L)`` im2col scratch) so each
    GEMM covers ``s`` samples.
    """
    cdef long n_chunks = (g.n + chunk - 1) // chunk
    cdef long job, ld, p
    cdef int n0, count, j, f, tid
    cdef floating* ws
    cdef floating* dybuf
    cdef floating* dst
    cdef const floating* col
    cdef const floating* dyc
    cdef const floating* src
    for job in prange(n_chunks, schedule="static", num_threads=n_threads):
        tid = threadid()
        ws = workspace + tid * ws_stride
        n0 = <int> (job * chunk)
        count = chunk if n0 + chunk <= g.n else g.n - n0
        ld = <long> count * g.l
        if need_db:
            for j in range(count):
                for f in range(g.f):
                    db_parts[tid * g.f + f] += _sum(dy + (<long> (n0 + j) * g.f + f) * g.l, g.l)
        if chunk == 1:
            dyc = dy + <long> n0 * g.f * g.l
        else:
            dybuf = ws + g.k * chunk * g.l
            for j in range(count):
                for f in range(g.f):
                    src = dy + (<long> (n0 + j) * g.f + f) * g.l
                    dst = dybuf + f * ld + j * g.l
                    for p in range(g.l):
                        dst[p] = src[p]
            dyc = dybuf
        if need_dw:
            if chunk == 1 and g.identity:
                col = x + <long> n0 * g.k * g.l
            else:
                for j in range(count):
                    _im2col_sample(x + <long> (n0 + j) * g.c * g.h * g.w, g.c, g.h, g.w,
                                   g.kh, g.kw, g.sh, g.sw, g.pt, g.pl, g.dh, g.dw,
                                   g.out_h, g.out_w, ws + j * g.l, ld)
                col = ws
            # dW^T_t (K, F) += col (K, s*L) @ dY_chunk^T (s*L, F)
            gemm(False, True, <int> g.k, g.f, <int> ld, <floating> 1, col, <int> ld,
                 dyc, <int> ld, <floating> 1, dwt_parts + tid * g.f * g.k, g.f)
        if need_dx:
            if chunk == 1 and g.identity:
                # dX[n] = W^T (K, F) @ dY[n] (F, L), written straight into dx.
                gemm(True, False, <int> g.k, <int> g.l, g.f, <floating> 1, w, <int> g.k,
                     dyc, <int> g.l, <floating> 0, dx + <long> n0 * g.k * g.l, <int> g.l)
            else:
                gemm(True, False, <int> g.k, <int> ld, g.f, <floating> 1, w, <int> g.k,
                     dyc, <int> ld, <floating> 0, ws, <int> ld)
                for j in range(count):
                    _col2im_sample(ws + j * g.l, ld, g.c, g.h, g.w, g.kh, g.kw, g.sh, g.sw,
                                   g.pt, g.pl, g.dh, g.dw, g.out_h, g.out_w,
                                   dx + <long> (n0 + j) * g.c * g.h * g.w)


cdef void _reduce_parts_transposed(const floating* parts,    # IN  (n_parts, K, F)
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


cdef void _conv_backward_batched(const floating* x, const floating* w, const floating* dy,
                                 floating* dx, floating* dw, floating* col, floating* dy_big,
                                 Geometry g, bint need_dx, bint need_dw,
                                 int n_threads) noexcept nogil:
    """col is (K, N*L) workspace; dy_big is (F, N*L) (unused, may be NULL, when N == 1)."""
    cdef long nl = g.n * g.l
    cdef long job, p
    cdef int n, f
    cdef const floating* dyb
    cdef const floating* xcol
    if g.n == 1:
        dyb = dy
    else:
        # (N, F, L) -> (F, N*L)
        for job in prange(<long> g.n * g.f, schedule="static", num_threads=n_threads):
            n = job // g.f
            f = job % g.f
            for p in range(g.l):
                dy_big[f * nl + n * g.l + p] = dy[job * g.l + p]
        dyb = dy_big
    if need_dw:
        if g.identity and g.n == 1:
            xcol = x
        else:
            _im2col_batch(x, g, col, nl, g.l, n_threads)
            xcol = col
        gemm_parallel(False, True, g.f, <int> g.k, <int> nl, <floating> 1, dyb, <int> nl,
                      xcol, <int> nl, <floating> 0, dw, <int> g.k, n_threads)
    if need_dx:
        if g.identity and g.n == 1:
            gemm_parallel(True, False, <int> g.k, <int> nl, g.f, <floating> 1, w, <int> g.k,
                          dyb, <int> nl, <floating> 0, dx, <int> nl, n_threads)
        else:
            gemm_parallel(True, False, <int> g.k, <int> nl, g.f, <floating> 1, w, <int> g.k,
                          dyb, <int> nl, <floating> 0, col, <int> nl, n_threads)
            _col2im_batch(col, nl, g.l, g, dx, n_threads)


# ----------------------------------------------------------------------------------------
# linear
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


# ----------------------------------------------------------------------------------------
# Winograd F(2x2, 3x3): 3x3 kernels, stride 1, dilation 1 (docs/math/convolution.md)
# ----------------------------------------------------------------------------------------
#
# Each 2x2 block of outputs ("tile") is computed from the 4x4 block of input under it:
#     Y_tile = A^T [ (G g G^T) * (B^T d B) ] A        (* elementwise, summed over channels)
# with
#     B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]
#     G   = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1]
#     A^T = [1 1 1 0; 0 1 -1 -1]
# The sum over channels of the 16 elementwise products is 16 GEMMs
#     M_k (F, P) = U_k (F, C) @ V_k (C, P),   k = 0..15, P = tiles in the block
# with U = G g G^T (per filter and channel) and V = B^T d B (per channel and tile).

cdef void _winograd_weight(const floating* w,     # IN  (F, C, 3, 3)
                           int f, int c, bint flip,
                           floating* u            # OUT (16, F, C), or (16, C, F) when flip
                           ) noexcept nogil:
    """U = G g G^T for every (filter, channel); with ``flip`` from the kernel rotated by 180
    degrees with its two channel axes swapped (the kernel of the input gradient)."""
    cdef int fi, ci, i, j, k
    cdef double g[9]
    cdef double t[12]     # G g: (4, 3)
    cdef double a, b, e
    cdef const floating* src
    for fi in range(f):
        for ci in range(c):
            src = w + (<long> fi * c + ci) * 9
            for i in range(9):
                g[i] = src[8 - i] if flip else src[i]
            for j in range(3):
                a = g[j]
                b = g[3 + j]
                e = g[6 + j]
                t[j] = a
                t[3 + j] = 0.5 * (a + b + e)
                t[6 + j] = 0.5 * (a - b + e)
                t[9 + j] = e
            for i in range(4):
                a = t[3 * i]
                b = t[3 * i + 1]
                e = t[3 * i + 2]
                k = 4 * i
                if flip:
                    u[(<long> k * c + ci) * f + fi] = <floating> a
                    u[(<long> (k + 1) * c + ci) * f + fi] = <floating> (0.5 * (a + b + e))
                    u[(<long> (k + 2) * c + ci) * f + fi] = <floating> (0.5 * (a - b + e))
                    u[(<long> (k + 3) * c + ci) * f + fi] = <floating> e
                else:
                    u[(<long> k * f + fi) * c + ci] = <floating> a
                    u[(<long> (k + 1) * f + fi) * c + ci] = <floating> (0.5 * (a + b + e))
                    u[(<long> (k + 2) * f + fi) * c + ci] = <floating> (0.5 * (a - b + e))
                    u[(<long> (k + 3) * f + fi) * c + ci] = <floating> e


cdef void _winograd_input(const floating* x,      # IN  (N, C, H, W)
                          int c, int h, int w, int pt, int pl, int tiles_h, int tiles_w,
                          long r0, int rows,
                          floating* v,            # OUT (16, C, rows * tiles_w)
                          floating* buf           # OUT scratch, 8 * (2 * tiles_w + 2)
                          ) noexcept nogil:
    """V = B^T d B for the tile rows r0 .. r0 + rows - 1 (numbered over the whole batch).

    Per (channel, tile row): the 4 input rows under it are copied into zero-padded row
    buffers, ``t = B^T d`` is taken on whole rows, then ``t B`` per tile (contiguous in p).
    """
    cdef int wp = 2 * tiles_w + 2
    cdef long count = <long> rows * tiles_w, kstride = <long> c * count, plane = <long> h * w
    cdef int ci, row, s, th, i, q, lo, hi, iy
    cdef long gr
    cdef floating* d = buf               # 4 rows of wp
    cdef floating* t = buf + 4 * wp      # 4 rows of wp
    cdef floating* dst
    cdef const floating* src
    # input columns q = j - pl for j in [0, wp): valid j in [lo, hi)
    lo = pl if pl > 0 else 0
    hi = w + pl if w + pl < wp else wp
    if hi < lo:
        hi = lo
    for ci in range(c):
        for row in range(rows):
            gr = r0 + row
            s = <int> (gr // tiles_h)
            th = <int> (gr % tiles_h)
            src = x + (<long> s * c + ci) * plane
            for i in range(4):
                iy = 2 * th - pt + i
                if iy < 0 or iy >= h or hi == lo:
                    memset(d + i * wp, 0, wp * sizeof(floating))
                else:
                    for q in range(lo):
                        d[i * wp + q] = 0
                    memcpy(d + i * wp + lo, src + <long> iy * w + lo - pl,
                           (hi - lo) * sizeof(floating))
                    for q in range(hi, wp):
                        d[i * wp + q] = 0
            # t = B^T d on whole rows: t0 = d0 - d2, t1 = d1 + d2, t2 = d2 - d1, t3 = d1 - d3
            _winograd_pair(d, d + 2 * wp, d + wp, d + 3 * wp, 1, wp, t, t + 3 * wp)
            _winograd_sum_diff(d + wp, d + 2 * wp, 1, wp, t + wp, t + 2 * wp)
            dst = v + <long> ci * count + <long> row * tiles_w
            for i in range(4):
                _winograd_input_row(t + i * wp, tiles_w, dst + 4 * i * kstride, kstride)


cdef inline void _winograd_input_row(const floating* t, int tiles_w,
                                     floating* dst, long kstride) noexcept nogil:
    """One row of t B for every tile of a tile row: 4 outputs per tile, kstride apart.

    Split in two loops with two outputs each, so that the compiler's runtime aliasing
    checks stay few enough for it to vectorise them."""
    _winograd_pair(t, t + 2, t + 1, t + 3, 2, tiles_w, dst, dst + 3 * kstride)
    _winograd_sum_diff(t + 1, t + 2, 2, tiles_w, dst + kstride, dst + 2 * kstride)


cdef inline void _winograd_pair(const floating* a, const floating* b, const floating* c,
                                const floating* d, long step, long n,
                                floating* out0, floating* out1) noexcept nogil:
    """out0[p] = a[p*step] - b[p*step]; out1[p] = c[p*step] - d[p*step]."""
    cdef long p
    for p in range(n):
        out0[p] = a[p * step] - b[p * step]
        out1[p] = c[p * step] - d[p * step]


cdef inline void _winograd_sum_diff(const floating* a, const floating* b, long step, long n,
                                    floating* out0, floating* out1) noexcept nogil:
    """out0[p] = a[p*step] + b[p*step]; out1[p] = b[p*step] - a[p*step]."""
    cdef long p
    for p in range(n):
        out0[p] = a[p * step] + b[p * step]
        out1[p] = b[p * step] - a[p * step]


cdef void _winograd_output(const floating* m,     # IN  (16, F, rows * tiles_w)
                           const floating* bias,  # IN  (F,) or NULL
                           int f, int out_h, int out_w, int tiles_h, int tiles_w,
                           long r0, int rows,
                           floating* y,           # OUT (N, F, out_h, out_w)
                           floating* buf          # OUT scratch, 8 * (2 * tiles_w + 2)
                           ) noexcept nogil:
    """Y_tile = A^T M A + b for the tile rows r0 .. r0 + rows - 1; each output written once."""
    cdef long count = <long> rows * tiles_w, kstride = <long> f * count
    cdef long plane = <long> out_h * out_w, gr
    cdef int wp = 2 * tiles_w + 2
    cdef int fi, row, s, th, i, tw, oh
    cdef floating b
    cdef floating* sr = buf              # s = A^T m: 2 rows x 4 columns per tile, (8, tiles_w)
    cdef floating* out = buf + 8 * tiles_w   # 2 output rows of 2 * tiles_w
    cdef const floating* src
    cdef floating* dst
    for fi in range(f):
        b = bias[fi] if bias != NULL else 0
        for row in range(rows):
            gr = r0 + row
            s = <int> (gr // tiles_h)
            th = <int> (gr % tiles_h)
            src = m + <long> fi * count + <long> row * tiles_w
            for i in range(4):
                _winograd_output_rows(src + i * kstride, src + (4 + i) * kstride,
                                      src + (8 + i) * kstride, src + (12 + i) * kstride,
                                      tiles_w, sr + i * tiles_w, sr + (4 + i) * tiles_w)
            for i in range(2):
                _winograd_output_cols(sr + 4 * i * tiles_w, tiles_w, b, out + 2 * i * tiles_w)
            dst = y + <long> s * f * plane + <long> fi * plane
            for i in range(2):
                oh = 2 * th + i
                if oh < out_h:
                    memcpy(dst + <long> oh * out_w, out + 2 * i * tiles_w,
                           out_w * sizeof(floating))


cdef inline void _winograd_output_rows(const floating* m0, const floating* m1,
                                       const floating* m2, const floating* m3, int n,
                                       floating* s0,
                                       floating* s1) noexcept nogil:
    """Column i of A^T m for n tiles: s0 = m0 + m1 + m2, s1 = m1 - m2 - m3."""
    cdef int p
    for p in range(n):
        s0[p] = m0[p] + m1[p] + m2[p]
        s1[p] = m1[p] - m2[p] - m3[p]


cdef inline void _winograd_output_cols(const floating* s, int n, floating b,
                                       floating* out) noexcept nogil:
    """One output row pair (s A + b): s holds 4 rows of n (the 4 columns of each tile)."""
    cdef int p
    for p in range(n):
        out[2 * p] = s[p] + s[n + p] + s[2 * n + p] + b
        out[2 * p + 1] = s[n + p] - s[2 * n + p] - s[3 * n + p] + b


cdef void _winograd_conv(const floating* x,       # IN  (N, C, H, W)
                         int n, int c, int h, int w,
                         const floating* u,       # IN  (16, F, C) transformed kernel
                         const floating* bias,    # IN  (F,) or NULL
                         int f, int pt, int pl, int out_h, int out_w,
                         floating* y,             # OUT (N, F, out_h, out_w)
                         floating* workspace,     # OUT per-thread scratch (ws_stride each)
                         long ws_stride, int block_rows, int n_threads) noexcept nogil:
    """3x3 / stride 1 / dilation 1 correlation; ``pt``, ``pl`` may be negative.

    The N * tiles_h rows of 2x2 output tiles of the batch are cut into blocks of
    ``block_rows`` tile rows (a block may span samples); ``prange`` over the blocks: each
    thread transforms its block's input, runs the 16 single-threaded GEMMs into its own
    scratch and writes the block's outputs.  Scratch per thread:
    ``16 (C + F) block_rows tiles_w + 8 (2 tiles_w + 2)``.
    """
    cdef int tiles_h = (out_h + 1) // 2, tiles_w = (out_w + 1) // 2
    cdef long total = <long> n * tiles_h
    cdef long n_jobs = (total + block_rows - 1) // block_rows
    cdef long cap = <long> block_rows * tiles_w
    cdef long job, r0
    cdef int rows, k, count
    cdef floating* v
    cdef floating* m
    cdef floating* buf
    for job in prange(n_jobs, schedule="static", num_threads=n_threads):
        v = workspace + threadid() * ws_stride
        m = v + 16 * <long> c * cap
        buf = m + 16 * <long> f * cap
        r0 = job * block_rows
        rows = <int> (total - r0 if total - r0 < block_rows else block_rows)
        count = rows * tiles_w
        _winograd_input(x, c, h, w, pt, pl, tiles_h, tiles_w, r0, rows, v, buf)
        for k in range(16):
            gemm(False, False, f, count, c, <floating> 1, u + <long> k * f * c, c,
                 v + <long> k * c * count, count, <floating> 0, m + <long> k * f * count, count)
        _winograd_output(m, bias, f, out_h, out_w, tiles_h, tiles_w, r0, rows, y, buf)

# ----------------------------------------------------------------------------------------
# Python-visible wrappers: validation, allocation, dtype dispatch
# ----------------------------------------------------------------------------------------

def _array(name, value, ndim, dtype=None):
    if not isinstance(value, np.ndarray):
        raise TypeError(f"Invalid argument `{name}`: expected a numpy.ndarray. "
                        f"Received: {type(value).__name__}")
    if value.ndim != ndim:
        raise ValueError(f"Invalid argument `{name}`: expected a {ndim}-D array. "
                         f"Received: shape={value.shape}")
    if dtype is None:
        if value.dtype not in (np.float32, np.float64):
            raise TypeError(f"Invalid argument `{name}`: expected dtype float32 or float64. "
                            f"Received: dtype={value.dtype}")
    elif value.dtype != dtype:
        raise TypeError(f"Invalid argument `{name}`: expected dtype {np.dtype(dtype)} "
                        f"(the dtype of the other operands). Received: dtype={value.dtype}")
    return np.ascontiguousarray(value)


def _pair(name, value, minimum):
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        value = (value, value)
    try:
        a, b = value
        ok = all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in (a, b))
    except (TypeError, ValueError):
        ok = False
    if not ok or a < minimum or b < minimum:
        raise ValueError(f"Invalid value for argument `{name}`: expected an int >= {minimum} "
                         f"or a pair of them. Received: {name}={value!r}")
    return int(a), int(b)


def _threads(n_threads):
    if isinstance(n_threads, bool) or not isinstance(n_threads, (int, np.integer)) or n_threads < 1:
        raise ValueError(f"Invalid value for argument `n_threads`: expected an int >= 1. "
                         f"Received: n_threads={n_threads!r}")
    return int(n_threads)


def conv_output_size(size, kernel, stride, pad_begin, pad_end, dilation):
    """Output length along one axis: ``(size + pads - dilation*(kernel-1) - 1) // stride + 1``."""
    return (size + pad_begin + pad_end - dilation * (kernel - 1) - 1) // stride + 1


def _geometry_args(x_shape, kernel_size, stride, padding, dilation, out_size):
    kh, kw = _pair("kernel_size", kernel_size, 1)
    stride = _pair("stride", stride, 1)
    padding = _pair("padding", padding, 0)
    dilation = _pair("dilation", dilation, 1)
    if out_size is None:
        out_size = (conv_output_size(x_shape[2], kh, stride[0], padding[0], padding[0], dilation[0]),
                    conv_output_size(x_shape[3], kw, stride[1], padding[1], padding[1], dilation[1]))
    out_size = _pair("out_size", out_size, 1)
    return kh, kw, stride, padding, dilation, out_size


def _work_threads(n_threads, flops):
    """Below ~1 MFLOP per extra thread, waking a thread team costs more than it saves."""
    return max(1, min(n_threads, int(flops // 1000000) or 1))


def _method(method, n_samples, n_threads):
    if method not in ("auto", "per_sample", "batched", "winograd"):
        raise ValueError(f"Invalid value for argument `method`: expected 'auto', 'per_sample', "
                         f"'batched' or 'winograd'. Received: method={method!r}")
    if method in ("auto", "winograd"):
        return "per_sample" if n_samples >= n_threads else "batched"
    return method


# Winograd F(2x2, 3x3) for 3x3 / stride 1 / dilation 1 (see _winograd_conv).  With
# ``_WINOGRAD`` on, ``method="auto"`` uses it for the forward and for the input gradient
# when the image computed (output for the forward, input for dX) has at least
# ``_WINOGRAD_MIN_PIXELS`` pixels and both channel counts are at least
# ``_WINOGRAD_MIN_CHANNELS``; ``method="winograd"`` forces it (dW stays on im2col).
# Measured at 1 thread (docs/math/convolution.md): with fewer channels the transforms cost
# more than the 2.25x fewer multiplications save (3 -> 16 channels: 3x slower), and below
# ~14x14 OpenBLAS's small-matrix GEMMs on im2col are as fast.
_WINOGRAD = True
_WINOGRAD_MIN_PIXELS = 196
_WINOGRAD_MIN_CHANNELS = 32
# Output tiles per block (about the GEMM column count; whole rows of tiles, at least one);
# scratch 16 * (C + F) * block per thread.
_WINOGRAD_BLOCK = 256


cdef bint _use_winograd(str method, Geometry g, long pixels) except -1:
    """Whether this call runs Winograd; ``method="winograd"`` on another geometry raises."""
    cdef bint fits = (g.kh == 3 and g.kw == 3 and g.sh == 1 and g.sw == 1 and g.dh == 1
                      and g.dw == 1)
    if method == "winograd":
        if not fits:
            raise ValueError(f"Invalid value for argument `method`: 'winograd' needs a 3x3 "
                             f"kernel with stride 1 and dilation 1. Received: kernel "
                             f"{(g.kh, g.kw)}, stride {(g.sh, g.sw)}, dilation {(g.dh, g.dw)}")
        return True
    return (method == "auto" and _WINOGRAD and fits and pixels >= _WINOGRAD_MIN_PIXELS
            and min(g.c, g.f) >= _WINOGRAD_MIN_CHANNELS)


cdef _winograd_entry(const floating[:, :, :, ::1] x, const floating[:, :, :, ::1] w,
                     object bias, floating[:, :, :, ::1] y, int pt, int pl, bint flip,
                     int n_threads):
    """y = x (*) w (3x3 correlation) by Winograd; ``flip``: with w rotated and transposed
    (w is then (C_in, C_out, 3, 3): the input gradient's kernel)."""
    cdef int cin = x.shape[1], cout = y.shape[1]
    cdef int tiles_w = (y.shape[3] + 1) // 2
    cdef long total = <long> y.shape[0] * ((y.shape[2] + 1) // 2)    # tile rows
    cdef int block = <int> min(max(1, _WINOGRAD_BLOCK // tiles_w), -(-total // n_threads))
    cdef const floating[::1] b
    cdef const floating* pb = NULL
    cdef floating[::1] u
    cdef floating[:, ::1] ws
    cdef long ws_stride = 16 * <long> (cin + cout) * block * tiles_w + 8 * (2 * tiles_w + 2)
    dtype = np.float32 if floating is float else np.float64
    if bias is not None:
        b = bias
        pb = &b[0]
    n_threads = <int> min(n_threads, -(-total // block))
    u = np.empty(16 * cin * cout, dtype=dtype)
    ws = np.empty((n_threads, ws_stride), dtype=dtype)
    with nogil:
        _winograd_weight(&w[0, 0, 0, 0], w.shape[0], w.shape[1], flip, &u[0])
        _winograd_conv(&x[0, 0, 0, 0], x.shape[0], cin, x.shape[2], x.shape[3], &u[0], pb,
                       cout, pt, pl, y.shape[2], y.shape[3], &y[0, 0, 0, 0], &ws[0, 0],
                       ws_stride, block, n_threads)


# Per-sample GEMMs narrower than this many columns (out_h * out_w) are widened by putting
# several samples side by side (``chunk``, see _chunk).
_MIN_COLUMNS = 256
# OpenBLAS's limit (M * N * K) for its small-matrix sgemm path on AVX-512.
_SMALL_GEMM = 1000000
# ... as long as the per-thread scratch (K + F) * chunk * L stays within this many bytes,
# so that it stays in a core's L2 cache.
_MAX_CHUNK_BYTES = 1 << 20


def _chunk(n, k, f, l, itemsize, n_threads):
    """Samples per GEMM for the per-sample method: 1 unless out_h * out_w is small.

    Measured with OpenBLAS 0.3.30 (SkylakeX kernels), 1 thread: products of at most
    ``_SMALL_GEMM`` multiply-adds run on OpenBLAS's unpacked small-matrix kernels; widening
    them gains nothing (8x8 images, 32 filters: 0.73 ms forward per sample, 0.79 ms with
    chunk 3 and 0.90 ms with chunk 4, past the limit).  Larger products with fewer than
    ``_MIN_COLUMNS`` columns are widened to about that many (7x7 images, 128 filters:
    forward + backward 20.8 ms one sample per GEMM, 18.9 ms with chunk 6).
    """
    if l >= _MIN_COLUMNS or f * k * l <= _SMALL_GEMM:
        return 1
    chunk = -(-_MIN_COLUMNS // l)
    chunk = min(chunk, max(1, _MAX_CHUNK_BYTES // max(1, (k + f) * l * itemsize)))
    return max(1, min(chunk, -(-n // n_threads)))


def im2col(x, kernel_size, stride=1, padding=0, dilation=1, out_size=None, n_threads=1):
    """Gather the convolution patches of a batch (``torch.nn.functional.unfold``).

    Args:
        x: ``(N, C, H, W)`` float32/float64 array.
        kernel_size: int or ``(kh, kw)``.
        stride, dilation: int or pair, >= 1.
        padding: int or ``(pad_top, pad_left)``, >= 0.
        out_size: ``(out_h, out_w)``; implies the bottom/right padding.  Default: the size
            for symmetric padding.
        n_threads: OpenMP threads (work is split over (sample, channel)).

    Returns:
        ``(N, C*kh*kw, out_h*out_w)`` array of x's dtype.

    Shape:
        row ``(c*kh + i)*kw + j``, column ``oh*out_w + ow``.
    """
    x = _array("x", x, 4)
    kh, kw, stride, padding, dilation, out_size = _geometry_args(
        x.shape, kernel_size, stride, padding, dilation, out_size)
    cdef Geometry g = _geometry(x.shape, 1, kh, kw, stride, padding, dilation, out_size)
    cols = np.empty((g.n, g.k, g.l), dtype=x.dtype)
    if cols.size == 0 or x.size == 0:
        cols.fill(0)
        return cols
    if x.dtype == np.float32:
        _im2col_entry[float](x, cols, g, _threads(n_threads))
    else:
        _im2col_entry[double](x, cols, g, _threads(n_threads))
    return cols


cdef _im2col_entry(const floating[:, :, :, ::1] x, floating[:, :, ::1] cols, Geometry g, int n_threads):
    with nogil:
        _im2col_batch(&x[0, 0, 0, 0], g, &cols[0, 0, 0], g.l, g.k * g.l, n_threads)


def col2im(cols, input_shape, kernel_size, stride=1, padding=0, dilation=1, out_size=None,
           n_threads=1):
    """Scatter-add patches back into an image batch (``torch.nn.functional.fold``).

    The adjoint of :func:`im2col`: overlapping patches are summed.  Work is split over
    (sample, channel) planes, so no two threads ever write the same element.

    Args:
        cols: ``(N, C*kh*kw, out_h*out_w)`` float32/float64 array.
        input_shape: ``(N, C, H, W)`` of the image to produce.
        kernel_size, stride, padding, dilation, out_size, n_threads: as in :func:`im2col`.

    Returns:
        ``(N, C, H, W)`` array of cols' dtype.
    """
    cols = _array("cols", cols, 3)
    try:
        input_shape = tuple(int(s) for s in input_shape)
    except (TypeError, ValueError):
        input_shape = None
    if input_shape is None or len(input_shape) != 4 or min(input_shape) < 0:
        raise ValueError(f"Invalid value for argument `input_shape`: expected (N, C, H, W) "
                         f"non-negative ints. Received: input_shape={input_shape!r}")
    kh, kw, stride, padding, dilation, out_size = _geometry_args(
        input_shape, kernel_size, stride, padding, dilation, out_size)
    cdef Geometry g = _geometry(input_shape, 1, kh, kw, stride, padding, dilation, out_size)
    if cols.shape != (g.n, g.k, g.l):
        raise ValueError(f"Invalid argument `cols`: expected shape {(g.n, g.k, g.l)} for "
                         f"input_shape={input_shape}. Received: shape={cols.shape}")
    out = np.zeros(input_shape, dtype=cols.dtype)
    if out.size == 0:
        return out
    if cols.dtype == np.float32:
        _col2im_entry[float](cols, out, g, _threads(n_threads))
    else:
        _col2im_entry[double](cols, out, g, _threads(n_threads))
    return out


cdef _col2im_entry(const floating[:, :, ::1] cols, floating[:, :, :, ::1] out, Geometry g, int n_threads):
    with nogil:
        _col2im_batch(&cols[0, 0, 0], g.l, g.k * g.l, g, &out[0, 0, 0, 0], n_threads)


def _conv_geometry(x, weight, stride, padding, dilation, out_size):
    x = _array("x", x, 4)
    weight = _array("weight", weight, 4, x.dtype)
    if weight.shape[1] != x.shape[1]:
        raise ValueError(f"Invalid argument `weight`: expected {x.shape[1]} input channels "
                         f"(x has shape {x.shape}). Received: weight shape={weight.shape}")
    if weight.shape[0] < 1 or weight.shape[2] < 1 or weight.shape[3] < 1:
        raise ValueError(f"Invalid argument `weight`: expected a non-empty (F, C, kh, kw) "
                         f"kernel. Received: weight shape={weight.shape}")
    kh, kw, stride, padding, dilation, out_size = _geometry_args(
        x.shape, weight.shape[2:], stride, padding, dilation, out_size)
    return x, weight, _geometry(x.shape, weight.shape[0], kh, kw, stride, padding, dilation,
                                out_size)


def conv2d_forward(x, weight, bias=None, stride=1, padding=0, dilation=1, out_size=None,
                   n_threads=1, method="auto"):
    """``Y[n] = W_col @ im2col(x[n]) + b`` for every sample.

    Args:
        x: ``(N, C, H, W)`` float32/float64 array.
        weight: ``(F, C, kh, kw)`` array, same dtype.
        bias: ``(F,)`` array or None.
        stride, dilation: int or pair, >= 1.
        padding: int or ``(pad_top, pad_left)``; bottom/right padding follows from out_size.
        out_size: ``(out_h, out_w)``; default: symmetric padding.
        n_threads: OpenMP threads.
        method: ``"per_sample"``, ``"batched"``, ``"winograd"`` (3x3, stride 1, dilation 1
            only) or ``"auto"`` (see the module docstring).

    Returns:
        ``(N, F, out_h, out_w)`` array.
    """
    x, weight, g_obj = _conv_geometry(x, weight, stride, padding, dilation, out_size)
    cdef Geometry g = g_obj
    if bias is not None:
        bias = _array("bias", bias, 1, x.dtype)
        if bias.shape[0] != g.f:
            raise ValueError(f"Invalid argument `bias`: expected shape ({g.f},). "
                             f"Received: shape={bias.shape}")
    n_threads = _work_threads(_threads(n_threads), 2 * g.n * g.f * g.k * g.l)
    strategy = _method(method, g.n, n_threads)
    y = np.empty((g.n, g.f, g.out_h, g.out_w), dtype=x.dtype)
    if y.size == 0:
        return y
    if x.size == 0 or g.k == 0:
        y[...] = 0 if bias is None else bias[:, None, None]
        return y
    if _use_winograd(method, g, g.l):
        if x.dtype == np.float32:
            _winograd_entry[float](x, weight, bias, y, g.pt, g.pl, False, n_threads)
        else:
            _winograd_entry[double](x, weight, bias, y, g.pt, g.pl, False, n_threads)
        return y
    if x.dtype == np.float32:
        _conv_forward_entry[float](x, weight, bias, y, g, n_threads, strategy == "batched")
    else:
        _conv_forward_entry[double](x, weight, bias, y, g, n_threads, strategy == "batched")
    return y


cdef _conv_forward_entry(const floating[:, :, :, ::1] x, const floating[:, :, :, ::1] w, object bias,
                         floating[:, :, :, ::1] y, Geometry g, int n_threads, bint batched):
    cdef const floating[::1] b
    cdef const floating* pb = NULL
    cdef floating[:, ::1] ws
    cdef floating[::1] big
    cdef floating* pbig = NULL
    cdef int chunk
    cdef long ws_stride
    dtype = np.float32 if floating is float else np.float64
    if bias is not None:
        b = bias
        pb = &b[0]
    if batched:
        ws = np.empty((1 if g.identity and g.n == 1 else g.k, g.n * g.l), dtype=dtype)
        if g.n > 1:
            big = np.empty(g.f * g.n * g.l, dtype=dtype)
            pbig = &big[0]
        with nogil:
            if g.n == 1:
                _fill_bias(pb, g, &y[0, 0, 0, 0], n_threads)
            _conv_forward_batched(&x[0, 0, 0, 0], &w[0, 0, 0, 0], pb, &y[0, 0, 0, 0],
                                  &ws[0, 0], pbig, g, n_threads)
    else:
        chunk = _chunk(g.n, g.k, g.f, g.l, x.itemsize, n_threads)
        if chunk == 1:
            ws_stride = 0 if g.identity else g.k * g.l
        else:
            ws_stride = (g.k + g.f) * chunk * g.l
        n_threads = min(n_threads, -(-g.n // chunk))
        ws = np.empty((n_threads, max(1, ws_stride)), dtype=dtype)
        with nogil:
            _conv_forward_per_sample(&x[0, 0, 0, 0], &w[0, 0, 0, 0], pb, &y[0, 0, 0, 0],
                                     &ws[0, 0], ws_stride, g, chunk, n_threads)


def conv2d_backward(x, weight, grad_output, stride=1, padding=0, dilation=1,
                    need_input_grad=True, need_weight_grad=True, need_bias_grad=True,
                    n_threads=1, method="auto"):
    """Gradients of :func:`conv2d_forward` from the saved input and the weight.

    ``dW = sum_n dY[n] @ im2col(x[n])^T``, ``db = sum dY``, ``dX[n] = col2im(W_col^T @ dY[n])``.
    The patches of x are rebuilt here (im2col again) rather than kept from the forward.

    Args:
        x: the forward input ``(N, C, H, W)``.
        weight: ``(F, C, kh, kw)``.
        grad_output: ``(N, F, out_h, out_w)``; its size fixes the output geometry.
        stride, padding, dilation: as in the forward.
        need_input_grad, need_weight_grad, need_bias_grad: compute only these.
        n_threads, method: as in :func:`conv2d_forward`.

    Returns:
        ``(grad_x, grad_weight, grad_bias)``, each None when not requested.
    """
    x = _array("x", x, 4)
    grad_output = _array("grad_output", grad_output, 4, x.dtype)
    x, weight, g_obj = _conv_geometry(x, weight, stride, padding, dilation, grad_output.shape[2:])
    cdef Geometry g = g_obj
    if grad_output.shape[:2] != (g.n, g.f):
        raise ValueError(f"Invalid argument `grad_output`: expected shape "
                         f"{(g.n, g.f, g.out_h, g.out_w)}. Received: shape={grad_output.shape}")
    n_threads = _work_threads(_threads(n_threads), 2 * g.n * g.f * g.k * g.l)
    strategy = _method(method, g.n, n_threads)
    dtype = x.dtype
    dx = np.empty(x.shape, dtype=dtype) if need_input_grad else None
    dw = np.empty(weight.shape, dtype=dtype) if need_weight_grad else None
    db = np.empty((g.f,), dtype=dtype) if need_bias_grad else None
    if grad_output.size == 0 or x.size == 0:
        for arr in (dx, dw, db):
            if arr is not None:
                arr.fill(0)
        return dx, dw, db
    if need_input_grad and _use_winograd(method, g, <long> g.h * g.w):
        # dX = dY correlated with the kernel rotated by 180 degrees, channels swapped,
        # padding 2 - pad (docs/math/convolution.md); dW and db stay on im2col.
        if dtype == np.float32:
            _winograd_entry[float](grad_output, weight, None, dx, 2 - g.pt, 2 - g.pl, True,
                                   n_threads)
        else:
            _winograd_entry[double](grad_output, weight, None, dx, 2 - g.pt, 2 - g.pl, True,
                                    n_threads)
        if not (need_weight_grad or need_bias_grad):
            return dx, dw, db
        dx_obj = None
    else:
        dx_obj = dx
    if dtype == np.float32:
        _conv_backward_entry[float](x, weight, grad_output, dx_obj, dw, db, g, n_threads,
                                    strategy == "batched")
    else:
        _conv_backward_entry[double](x, weight, grad_output, dx_obj, dw, db, g, n_threads,
                                     strategy == "batched")
    return dx, dw, db


cdef _conv_backward_entry(const floating[:, :, :, ::1] x, const floating[:, :, :, ::1] w,
                          const floating[:, :, :, ::1] dy, object dx_obj, object dw_obj, object db_obj,
                          Geometry g, int n_threads, bint batched):
    cdef floating[:, :, :, ::1] dx, dw
    cdef floating[::1] db
    cdef floating[:, ::1] ws, parts
    cdef floating[::1] big
    cdef floating* pdx = NULL
    cdef floating* pdw = NULL
    cdef floating* pbig = NULL
    cdef bint need_dx = dx_obj is not None
    cdef bint need_dw = dw_obj is not None
    dtype = np.float32 if floating is float else np.float64
    if need_dx:
        dx = dx_obj
        pdx = &dx[0, 0, 0, 0]
    if need_dw:
        dw = dw_obj
        pdw = &dw[0, 0, 0, 0]
    if batched:
        if db_obj is not None:
            db = db_obj
            with nogil:
                _bias_grad_nfl(&dy[0, 0, 0, 0], g.n, g.f, g.l, &db[0], n_threads)
        if not (need_dx or need_dw):
            return
        ws = np.empty((g.k, g.n * g.l), dtype=dtype)
        if g.n > 1:
            big = np.empty(g.f * g.n * g.l, dtype=dtype)
            pbig = &big[0]
        with nogil:
            _conv_backward_batched(&x[0, 0, 0, 0], &w[0, 0, 0, 0], &dy[0, 0, 0, 0], pdx, pdw,
                                   &ws[0, 0], pbig, g, need_dx, need_dw, n_threads)
        return
    # One dW / db partial sum per thread, but never more partial sums than chunks.
    cdef int chunk = _chunk(g.n, g.k, g.f, g.l, x.itemsize, n_threads)
    cdef int n_parts = min(n_threads, -(-g.n // chunk))
    cdef bint need_db = db_obj is not None
    cdef double[:, ::1] db_parts = np.zeros((n_parts, g.f), dtype=np.float64)
    cdef int t, f
    cdef double acc
    cdef long ws_stride
    if chunk > 1:
        ws_stride = (g.k + g.f) * chunk * g.l
    elif g.identity or not (need_dx or need_dw):
        ws_stride = 0
    else:
        ws_stride = g.k * g.l
    ws = np.empty((n_parts, max(1, ws_stride)), dtype=dtype)
    parts = np.zeros((n_parts if need_dw else 1, g.k * g.f), dtype=dtype)
    with nogil:
        _conv_backward_per_sample(&x[0, 0, 0, 0], &w[0, 0, 0, 0], &dy[0, 0, 0, 0], pdx,
                                  &parts[0, 0], &db_parts[0, 0], &ws[0, 0], ws_stride, g,
                                  need_dx, need_dw, need_db, chunk, n_parts)
        if need_dw:
            _reduce_parts_transposed(&parts[0, 0], n_parts, g.k, g.f, pdw, n_threads)
    if need_db:
        db = db_obj
        for f in range(g.f):
            acc = 0
            for t in range(n_parts):
                acc += db_parts[t, f]
            db[f] = <floating> acc


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
    x = _array("x", x, 2)
    weight = _array("weight", weight, 2, x.dtype)
    if weight.shape[1] != x.shape[1]:
        raise ValueError(f"Invalid argument `weight`: expected shape (out_features, "
                         f"{x.shape[1]}) for x of shape {x.shape}. Received: shape={weight.shape}")
    if bias is not None:
        bias = _array("bias", bias, 1, x.dtype)
        if bias.shape[0] != weight.shape[0]:
            raise ValueError(f"Invalid argument `bias`: expected shape ({weight.shape[0]},). "
                             f"Received: shape={bias.shape}")
    n_threads = _threads(n_threads)
    cdef bint fuse_relu = bool(relu)
    n, k, m = x.shape[0], x.shape[1], weight.shape[0]
    if m * k >= _TRANSPOSED_LINEAR_MIN and n > 1 and bias is not None:
        # OpenBLAS runs W @ X^T (a wide output) about 10 % faster than X @ W^T for layers
        # like 784 -> 256 (measured: 270 vs 299 us at batch 64); the transpose back,
        # fused with the bias add (and the ReLU), costs a few microseconds.
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
_TRANSPOSED_LINEAR_MIN = 128 * 512


cdef _linear_forward_entry(const floating[:, ::1] x, const floating[:, ::1] w, floating[:, ::1] y,
                           bint fuse_relu, int n_threads):
    cdef int n = x.shape[0], k = x.shape[1], m = w.shape[0]
    cdef Py_ssize_t i, size = <Py_ssize_t> n * m
    cdef floating* out = &y[0, 0]
    cdef floating v
    with nogil:
        if k > 0:    # k == 0: Y is the bias alone
            gemm_parallel(False, True, n, m, k, <floating> 1, &x[0, 0], k, &w[0, 0], k,
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
        gemm_parallel(False, True, m, n, k, <floating> 1, &w[0, 0], k, &x[0, 0], k,
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
    x = _array("x", x, 2)
    weight = _array("weight", weight, 2, x.dtype)
    grad_output = _array("grad_output", grad_output, 2, x.dtype)
    if weight.shape[1] != x.shape[1] or grad_output.shape != (x.shape[0], weight.shape[0]):
        raise ValueError(f"Invalid arguments: expected x (N, in), weight (out, in) and "
                         f"grad_output (N, out). Received: x {x.shape}, weight {weight.shape}, "
                         f"grad_output {grad_output.shape}")
    n_threads = _threads(n_threads)
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
            gemm_parallel(False, False, n, k, m, <floating> 1, &dy[0, 0], m, &w[0, 0], k,
                          <floating> 0, &dx[0, 0], k, n_threads)
    if dw_obj is not None:
        dw = dw_obj
        with nogil:   # dW (out, in) = dY^T (out, N) @ X (N, in)
            gemm_parallel(True, False, m, k, n, <floating> 1, &dy[0, 0], m, &x[0, 0], k,
                          <floating> 0, &dw[0, 0], k, n_threads)
    if db_obj is not None:
        db = db_obj
        with nogil:
            _bias_grad_rows(&dy[0, 0], n, m, &db[0], n_threads)
