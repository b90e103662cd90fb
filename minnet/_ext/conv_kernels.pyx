"""2-D convolution kernels, forward and backward, for both image layouts.

channels_first (NCHW, PyTorch's layout).  With the ``(K, L)`` patch matrix of each sample
(``minnet._ext.im2col_kernels``; ``K = C*kh*kw``, ``L = out_h*out_w``) and ``W_col`` the weight
read as ``(F, K)`` (docs/math/convolution.md)::

    forward:   Y[n]  = W_col @ col(x[n]) + b
    backward:  dW    = sum_n dY[n] @ col(x[n])^T,   db = sum_{n, l} dY[n, :, l]
               dX[n] = col2im(W_col^T @ dY[n])

channels_last (NHWC, Keras's layout): the patches are the rows of an ``(N*L, K)`` matrix,
``Y (N*L, F) = col @ W2^T + b``; its kernels are in conv_nhwc_kernels.pyx, validated and planned
here.

The float32 GEMMs are minnet's own (convgemm_kernels.h, packed register tiles picked for the CPU at
run time), so the speed does not follow the kernel the BLAS library loads; float64 uses the
BLAS (_blas.pyx).

Ways of running the GEMMs (``method=``; ``_plan`` chooses for ``"auto"``):

* ``"per_sample"``: ``prange`` over chunks of samples; each thread im2cols its chunk into
  its own workspace and runs single-threaded GEMMs.  Small, cache-resident workspaces.
* ``"batched"``: one im2col of the whole batch and GEMMs split into blocks over threads.
* ``"winograd"`` (3x3, stride 1, dilation 1, either layout): ``minnet._ext.winograd_kernels``
  for the forward, the input gradient and the weight gradient.
* ``"planes"`` (channels_last, one input channel, ``method="auto"``): the chunk's patches
  by the channels_first plane im2col (the same memory for C = 1) as a ``(K, rows)``
  matrix that the GEMMs read transposed.

Determinism.  Every choice (method, chunk size, Winograd block, the number of dW partial
sums and the samples each covers, the GEMM blocks) is a function of the shapes, never of
the thread count; the backward sums dW and db per fixed part of the batch and adds the
parts in order.  So results are bit-identical for any ``n_threads``
(tests/_ext/test_conv_kernels.py::test_conv2d_thread_count_independent,
tests/_ext/test_conv_nhwc_kernels.py::test_kernels_bit_identical_for_any_thread_count).
"""
from cython.parallel cimport prange, threadid
from libc.string cimport memset

from minnet._ext._base cimport check_nd, check_threads, deterministic_mode
from minnet._ext._blas cimport floating
from minnet._ext.conv_nhwc_kernels cimport reduce_parts_transposed, sum_parts
from minnet._ext.convgemm_kernels cimport conv_gemm, conv_gemm_blocks, minnet_cg_set_isa
from minnet._ext.im2col_kernels cimport (Geometry, col2im_nchw_batch, col2im_nchw_sample,
                                  im2col_nchw_batch, im2col_nchw_sample, sum_double)

import numpy as np

from minnet._ext.conv_nhwc_kernels import nhwc_backward, nhwc_forward
from minnet._ext.im2col_kernels import check_data_format, conv_output_size, geometry
from minnet._ext.winograd_kernels import (use_winograd, winograd_conv2d,
                                          winograd_conv2d_weight_grad)

__all__ = ["conv2d_forward", "conv2d_backward", "conv_output_size"]


# ----------------------------------------------------------------------------------------
# channels_first forward
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
                im2col_nchw_sample(x + <long> n0 * g.c * g.h * g.w, g, ws, g.l)
                col = ws
            conv_gemm(False, False, g.f, <int> g.l, <int> g.k, w, <int> g.k,
                      col, <int> g.l, <floating> 1, y_n, <int> g.l)
        else:
            count = chunk if n0 + chunk <= g.n else g.n - n0
            ld = <long> count * g.l
            ybuf = ws + g.k * chunk * g.l
            for j in range(count):
                im2col_nchw_sample(x + <long> (n0 + j) * g.c * g.h * g.w, g, ws + j * g.l, ld)
            conv_gemm(False, False, g.f, <int> ld, <int> g.k, w, <int> g.k,
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
            im2col_nchw_batch(x, g, col, g.l, 0, n_threads)
            xcol = col
        conv_gemm_blocks(False, False, g.f, <int> g.l, <int> g.k, w, <int> g.k,
                         xcol, <int> g.l, <floating> 1, y, <int> g.l, n_threads)
        return
    im2col_nchw_batch(x, g, col, nl, g.l, n_threads)
    conv_gemm_blocks(False, False, g.f, <int> nl, <int> g.k, w, <int> g.k,
                     col, <int> nl, <floating> 0, y_big, <int> nl, n_threads)
    # (F, N*L) -> (N, F, L), adding the bias.
    for job in prange(<long> g.n * g.f, schedule="static", num_threads=n_threads):
        n = job // g.f
        f = job % g.f
        value = bias[f] if bias != NULL else 0
        for p in range(g.l):
            y[job * g.l + p] = y_big[f * nl + n * g.l + p] + value


# ----------------------------------------------------------------------------------------
# channels_first backward
# ----------------------------------------------------------------------------------------

cdef void _bias_grad_nfl(const floating* dy, long n, long f, long l, floating* db,
                         int n_threads) noexcept nogil:
    """db[j] = sum over samples and positions of dy[:, j, :], with double accumulators."""
    cdef long j, i
    cdef double acc
    for j in prange(f, schedule="static", num_threads=n_threads):
        acc = 0
        for i in range(n):
            acc = acc + sum_double(dy + (i * f + j) * l, l)
        db[j] = <floating> acc


cdef void _nchw_backward_chunk(const floating* x,        # IN    (N, C, H, W)
                              const floating* w,          # IN    (F, K)
                              const floating* dy,         # IN    (N, F, L)
                              floating* dx,               # OUT   (N, C, H, W)
                              floating* dwt_parts,        # INOUT (n_parts, K, F)
                              double* db_parts,           # INOUT (n_parts, F)
                              floating* ws,               # OUT   this thread's scratch
                              Geometry g, bint need_dx, bint need_dw, bint need_db,
                              int chunk, long job, int part) noexcept nogil:
    """Chunk ``job`` (samples job*chunk ...) of the backward, its dW^T and db added to
    partial sum ``part``."""
    cdef long ld, p
    cdef int n0, count, j, f
    cdef floating* dybuf
    cdef floating* dst
    cdef const floating* col
    cdef const floating* dyc
    cdef const floating* src
    n0 = <int> (job * chunk)
    count = chunk if n0 + chunk <= g.n else g.n - n0
    ld = <long> count * g.l
    if need_db:
        for j in range(count):
            for f in range(g.f):
                db_parts[part * g.f + f] += sum_double(dy + (<long> (n0 + j) * g.f + f) * g.l, g.l)
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
                im2col_nchw_sample(x + <long> (n0 + j) * g.c * g.h * g.w, g, ws + j * g.l, ld)
            col = ws
        # dW^T_t (K, F) += col (K, s*L) @ dY_chunk^T (s*L, F)
        conv_gemm(False, True, <int> g.k, g.f, <int> ld, col, <int> ld,
                  dyc, <int> ld, <floating> 1, dwt_parts + part * g.f * g.k, g.f)
    if need_dx:
        if chunk == 1 and g.identity:
            # dX[n] = W^T (K, F) @ dY[n] (F, L), written straight into dx.
            conv_gemm(True, False, <int> g.k, <int> g.l, g.f, w, <int> g.k,
                      dyc, <int> g.l, <floating> 0, dx + <long> n0 * g.k * g.l, <int> g.l)
        else:
            conv_gemm(True, False, <int> g.k, <int> ld, g.f, w, <int> g.k,
                      dyc, <int> ld, <floating> 0, ws, <int> ld)
            for j in range(count):
                col2im_nchw_sample(ws + j * g.l, ld, g, dx + <long> (n0 + j) * g.c * g.h * g.w)


cdef void _conv_backward_per_sample(const floating* x,         # IN    (N, C, H, W)
                                    const floating* w,         # IN    (F, K)
                                    const floating* dy,        # IN    (N, F, L)
                                    floating* dx,              # OUT   (N, C, H, W)
                                    floating* dwt_parts,       # INOUT (n_parts, K, F), zeroed
                                    double* db_parts,          # INOUT (n_parts, F), zeroed
                                    floating* workspace,       # OUT   per-thread scratch
                                    long ws_stride,            # scratch elements per thread
                                    Geometry g, bint need_dx, bint need_dw, bint need_db,
                                    int chunk, int n_parts, int n_threads) noexcept nogil:
    """One parallel region over ``n_parts`` fixed runs of consecutive chunks of samples.

    Part ``t`` handles chunks ``[t*C/P, (t+1)*C/P)`` in order and accumulates their dW and
    db into its own partial sum; the partial sums are then added in part order.  The parts
    depend on the geometry only (``_plan``), so dW and db are the same for any thread count.

    The weight gradient is accumulated transposed, ``dW^T (K, F) += col (K, L) @ dY[n]^T``
    (the faster OpenBLAS layout, benchmarks/bench_conv.py); the reduction transposes it
    back.  With ``chunk > 1`` the chunk's ``dY`` is first copied side by side into a
    ``(F, s*L)`` buffer (after the ``(K, s*L)`` im2col scratch) so each GEMM covers ``s``
    samples.
    """
    cdef long n_chunks = (g.n + chunk - 1) // chunk
    cdef long job, first, last
    cdef int part
    cdef floating* ws
    for part in prange(n_parts, schedule="static", num_threads=n_threads):
        ws = workspace + threadid() * ws_stride
        first = part * n_chunks // n_parts
        last = (part + 1) * n_chunks // n_parts
        for job in range(first, last):
            _nchw_backward_chunk(x, w, dy, dx, dwt_parts, db_parts, ws, g, need_dx, need_dw,
                                 need_db, chunk, job, part)


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
            im2col_nchw_batch(x, g, col, nl, g.l, n_threads)
            xcol = col
        conv_gemm_blocks(False, True, g.f, <int> g.k, <int> nl, dyb, <int> nl,
                         xcol, <int> nl, <floating> 0, dw, <int> g.k, n_threads)
    if need_dx:
        if g.identity and g.n == 1:
            conv_gemm_blocks(True, False, <int> g.k, <int> nl, g.f, w, <int> g.k,
                             dyb, <int> nl, <floating> 0, dx, <int> nl, n_threads)
        else:
            conv_gemm_blocks(True, False, <int> g.k, <int> nl, g.f, w, <int> g.k,
                             dyb, <int> nl, <floating> 0, col, <int> nl, n_threads)
            col2im_nchw_batch(col, nl, g.l, g, dx, n_threads)


# ----------------------------------------------------------------------------------------
# The choice of method, chunk and parts: one function, shapes only
# ----------------------------------------------------------------------------------------

# Per-sample GEMMs narrower than this many columns (L) are widened by putting several
# samples side by side (channels_first).
_MIN_COLUMNS = 256
# OpenBLAS's limit (M * N * K) for its small-matrix sgemm path on AVX-512: below it
# widening gains nothing.
_SMALL_GEMM = 1000000
# ... as long as the per-thread scratch (K + F) * chunk * L stays within this many bytes
# (a core's L2 cache).
_MAX_CHUNK_BYTES = 1 << 20
# channels_last GEMMs get about this many patch rows per chunk (samples side by side cost
# no copy there), within the same scratch budget: many for a short patch (K < 64: the
# first layers), one sample's worth for longer ones, where OpenBLAS runs the (rows, K) x
# (K, F) product faster on 196 rows than on 588 (benchmarks/bench_conv_layout.py, row
# "cnn conv2 16->32 @14"; row "cnn conv1 1->16 @28" for 784 against 3136 rows).
_NHWC_MIN_ROWS = 2048
_NHWC_MIN_ROWS_LONG_PATCH = 128
_NHWC_LONG_PATCH = 64
# Fewer samples than this run "batched" (threads split the GEMMs, not the batch).
_MIN_SAMPLES_PER_SAMPLE = 2
# The backward sums dW over at most this many parts of the batch, each within a memory
# budget of partial sums; 16 parts divide evenly over 1, 2, 4 and 8 threads.
_MAX_PARTS = 16
_MAX_PART_ELEMENTS = 1 << 24


def _plan(method, g_obj, channels_last, itemsize):
    """``(strategy, chunk, n_parts)`` for a convolution of geometry ``g_obj``.

    The one place where the fast path is chosen; it never looks at the thread count, so
    the arithmetic (and its rounding) is the same for any ``n_threads``.  Measured with
    benchmarks/bench_conv.py (per_sample vs batched, chunk sizes) and
    benchmarks/bench_conv_layout.py (channels_last chunks): one sample per GEMM unless the
    image is small; per-sample GEMMs in prange beat one threaded GEMM whenever there are
    samples to share out.  channels_last: chunks of patch rows by patch length, and
    ``"planes"`` (the channels_first plane im2col) for one input channel
    (benchmarks/bench_conv_layout.py --layers, conv1 and conv2).
    """
    if method not in ("auto", "per_sample", "batched", "winograd"):
        raise ValueError(f"Invalid value for argument `method`: expected 'auto', 'per_sample', "
                         f"'batched' or 'winograd'. Received: method={method!r}")
    cdef Geometry g = g_obj
    if method == "batched" or (method != "per_sample" and g.n < _MIN_SAMPLES_PER_SAMPLE):
        return "batched", g.n, 1
    if channels_last:
        rows = _NHWC_MIN_ROWS_LONG_PATCH if g.k >= _NHWC_LONG_PATCH else _NHWC_MIN_ROWS
        chunk = max(1, -(-rows // max(1, g.l)))
        chunk = min(chunk, max(1, _MAX_CHUNK_BYTES // max(1, g.k * g.l * itemsize)))
        chunk = min(chunk, max(1, -(-g.n // 8)))     # at least 8 chunks when possible
    elif g.l >= _MIN_COLUMNS or g.f * g.k * g.l <= _SMALL_GEMM:
        chunk = 1
    else:
        chunk = -(-_MIN_COLUMNS // g.l)
        chunk = min(chunk, max(1, _MAX_CHUNK_BYTES // max(1, (g.k + g.f) * g.l * itemsize)))
    chunk = max(1, min(chunk, g.n))
    n_chunks = -(-g.n // chunk)
    n_parts = min(n_chunks, _MAX_PARTS, max(1, _MAX_PART_ELEMENTS // max(1, g.k * g.f)))
    if channels_last and method == "auto" and g.c == 1 and not g.identity:
        # One input channel: the patch-row copies are kw values long, and the channels_first
        # plane im2col is faster (benchmarks/bench_conv_layout.py, row "cnn conv1 1->16 @28").
        return "planes", chunk, n_parts
    return "per_sample", chunk, n_parts


def _work_threads(n_threads, flops):
    """Below ~1 MFLOP per extra thread, waking a thread team costs more than it saves.
    (Only how many threads share the work; the work and its order do not change.)"""
    return max(1, min(n_threads, int(flops // 1000000) or 1))


# ----------------------------------------------------------------------------------------
# Python-visible wrappers: validation, allocation, dtype dispatch
# ----------------------------------------------------------------------------------------

def _conv_geometry(x, weight, stride, padding, dilation, out_size, data_format):
    """Checked operands and the geometry (a dict) of a conv of x in ``data_format``."""
    check_data_format(data_format)
    check_nd(x, "x", 4)
    check_nd(weight, "weight", 4, x.dtype)
    n, a, b, c = x.shape
    nchw = (n, c, a, b) if data_format == "channels_last" else (n, a, b, c)
    if weight.shape[1] != nchw[1]:
        raise ValueError(f"Invalid argument `weight`: expected {nchw[1]} input channels "
                         f"(x has shape {x.shape}, {data_format}). "
                         f"Received: weight shape={weight.shape}")
    if weight.shape[0] < 1 or weight.shape[2] < 1 or weight.shape[3] < 1:
        raise ValueError(f"Invalid argument `weight`: expected a non-empty (F, C, kh, kw) "
                         f"kernel. Received: weight shape={weight.shape}")
    return x, weight, geometry(nchw, weight.shape[0], weight.shape[2:], stride, padding,
                               dilation, out_size)


def _permuted_weight(weight):
    """(F, C, kh, kw) -> (F, kh, kw, C), contiguous: the channels_last GEMM operand."""
    return np.ascontiguousarray(weight.transpose(0, 2, 3, 1))


def _permuted_weight_t(weight):
    """(F, C, kh, kw) -> (kh, kw, C, F) = W2^T (K, F), contiguous: the forward's operand
    (``col @ W2^T`` as a no-transpose GEMM, faster for the small K of the first layers)."""
    return np.ascontiguousarray(weight.transpose(2, 3, 1, 0))


def conv2d_forward(x, weight, bias=None, stride=1, padding=0, dilation=1, out_size=None,
                   n_threads=1, method="auto", data_format="channels_first"):
    """The convolution ``Y = W (*) x + b`` (cross-correlation, PyTorch's ``conv2d``).

    Args:
        x: ``(N, C, H, W)`` (channels_first) or ``(N, H, W, C)`` (channels_last),
            float32/float64.
        weight: ``(F, C, kh, kw)`` array (PyTorch's layout in both data layouts), x's dtype.
        bias: ``(F,)`` array or None.
        stride, dilation: int or pair, >= 1.
        padding: int or ``(pad_top, pad_left)``; bottom/right padding follows from out_size.
        out_size: ``(out_h, out_w)``; default: symmetric padding.
        n_threads: OpenMP threads (the result does not depend on it).
        method: ``"per_sample"``, ``"batched"``, ``"winograd"`` (3x3,
            stride 1, dilation 1 only) or ``"auto"`` (see ``_plan``).
        data_format: ``"channels_first"`` or ``"channels_last"``.

    Returns:
        ``(N, F, out_h, out_w)`` or, channels_last, ``(N, out_h, out_w, F)``.
    """
    x, weight, g_obj = _conv_geometry(x, weight, stride, padding, dilation, out_size,
                                      data_format)
    cdef Geometry g = g_obj
    cdef bint nhwc = data_format == "channels_last"
    if bias is not None:
        check_nd(bias, "bias", 1, x.dtype)
        if bias.shape[0] != g.f:
            raise ValueError(f"Invalid argument `bias`: expected shape ({g.f},). "
                             f"Received: shape={bias.shape}")
    n_threads = _work_threads(check_threads(n_threads), 2 * g.n * g.f * g.k * g.l)
    strategy, chunk, _ = _plan(method, g_obj, nhwc, x.itemsize)
    shape = (g.n, g.out_h, g.out_w, g.f) if nhwc else (g.n, g.f, g.out_h, g.out_w)
    y = np.empty(shape, dtype=x.dtype)
    if y.size == 0:
        return y
    if x.size == 0 or g.k == 0:
        y[...] = 0 if bias is None else (bias if nhwc else bias[:, None, None])
        return y
    if use_winograd(method, g.kh, g.kw, g.sh, g.sw, g.dh, g.dw, g.c, g.f, g.l):
        return winograd_conv2d(x, weight, bias, y, g.pt, g.pl, False, n_threads, nhwc)
    if nhwc:
        w2t = _permuted_weight_t(weight)
        nhwc_forward(x, w2t, bias, y, g_obj, n_threads, strategy == "batched", chunk,
                     strategy == "planes")
        return y
    if x.dtype == np.float32:
        _conv_forward_entry[float](x, weight, bias, y, g, n_threads, strategy == "batched", chunk)
    else:
        _conv_forward_entry[double](x, weight, bias, y, g, n_threads, strategy == "batched", chunk)
    return y


cdef _conv_forward_entry(const floating[:, :, :, ::1] x, const floating[:, :, :, ::1] w,
                         object bias, floating[:, :, :, ::1] y, Geometry g, int n_threads,
                         bint batched, int chunk):
    cdef const floating[::1] b
    cdef const floating* pb = NULL
    cdef floating[:, ::1] ws
    cdef floating[::1] big
    cdef floating* pbig = NULL
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
        return
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
                    n_threads=1, method="auto", data_format="channels_first"):
    """Gradients of :func:`conv2d_forward` from the saved input and the weight.

    The patches of x are rebuilt here (im2col again) rather than kept from the forward.

    Args:
        x: the forward input, in ``data_format``.
        weight: ``(F, C, kh, kw)``.
        grad_output: the gradient of the output, in ``data_format``; its size fixes the
            output geometry.
        stride, padding, dilation: as in the forward.
        need_input_grad, need_weight_grad, need_bias_grad: compute only these.
        n_threads, method, data_format: as in :func:`conv2d_forward`.

    Returns:
        ``(grad_x, grad_weight, grad_bias)``, each None when not requested; grad_weight in
        the ``(F, C, kh, kw)`` layout whatever the data layout.
    """
    check_data_format(data_format)
    cdef bint nhwc = data_format == "channels_last"
    check_nd(x, "x", 4)
    check_nd(grad_output, "grad_output", 4, x.dtype)
    out_size = grad_output.shape[1:3] if nhwc else grad_output.shape[2:]
    x, weight, g_obj = _conv_geometry(x, weight, stride, padding, dilation, out_size,
                                      data_format)
    cdef Geometry g = g_obj
    expected = (g.n, g.out_h, g.out_w, g.f) if nhwc else (g.n, g.f, g.out_h, g.out_w)
    if grad_output.shape != expected:
        raise ValueError(f"Invalid argument `grad_output`: expected shape {expected}. "
                         f"Received: shape={grad_output.shape}")
    n_threads = _work_threads(check_threads(n_threads), 2 * g.n * g.f * g.k * g.l)
    strategy, chunk, n_parts = _plan(method, g_obj, nhwc, x.itemsize)
    if not deterministic_mode():
        # One weight-gradient partial per thread (fewer partials to zero and add); the sum
        # then depends on the thread count, unless mn.config.set_deterministic(True).
        n_parts = min(n_parts, n_threads)
    dtype = x.dtype
    dx = np.empty(x.shape, dtype=dtype) if need_input_grad else None
    dw = np.empty(weight.shape, dtype=dtype) if need_weight_grad else None
    db = np.empty((g.f,), dtype=dtype) if need_bias_grad else None
    if grad_output.size == 0 or x.size == 0:
        for arr in (dx, dw, db):
            if arr is not None:
                arr.fill(0)
        return dx, dw, db
    dx_obj, dw_obj = dx, dw
    if need_input_grad and use_winograd(method, g.kh, g.kw, g.sh, g.sw, g.dh, g.dw, g.c,
                                        g.f, <long> g.h * g.w):
        # dX = dY correlated with the kernel rotated by 180 degrees, channels swapped,
        # padding 2 - pad (docs/math/convolution.md).
        winograd_conv2d(grad_output, weight, None, dx, 2 - g.pt, 2 - g.pl, True, n_threads,
                        nhwc)
        dx_obj = None
    if need_weight_grad and use_winograd(method, g.kh, g.kw, g.sh, g.sw, g.dh, g.dw, g.c,
                                         g.f, g.l):
        # dW = G^T [sum over tiles (A dY A^T) * V] G (docs/math/convolution.md)
        winograd_conv2d_weight_grad(x, grad_output, dw, g.pt, g.pl, n_threads, nhwc)
        dw_obj = None
    if dx_obj is None and dw_obj is None and not need_bias_grad:
        return dx, dw, db
    if nhwc:
        w2 = _permuted_weight(weight)
        w2t = _permuted_weight_t(weight)
        dw2 = np.empty((g.f, g.kh, g.kw, g.c), dtype=dtype) if dw_obj is not None else None
        nhwc_backward(x, w2, w2t, grad_output, dx_obj, dw2, db, g_obj, n_threads,
                      strategy == "batched", chunk, n_parts, strategy == "planes")
        if dw2 is not None:
            dw[...] = dw2.transpose(0, 3, 1, 2)
        return dx, dw, db
    if dtype == np.float32:
        _conv_backward_entry[float](x, weight, grad_output, dx_obj, dw_obj, db, g, n_threads,
                                    strategy == "batched", chunk, n_parts)
    else:
        _conv_backward_entry[double](x, weight, grad_output, dx_obj, dw_obj, db, g, n_threads,
                                     strategy == "batched", chunk, n_parts)
    return dx, dw, db


cdef _conv_backward_entry(const floating[:, :, :, ::1] x, const floating[:, :, :, ::1] w,
                          const floating[:, :, :, ::1] dy, floating[:, :, :, ::1] dx,
                          floating[:, :, :, ::1] dw, floating[::1] db, Geometry g,
                          int n_threads, bint batched, int chunk, int n_parts):
    """dx, dw, db: the outputs, each None when not wanted."""
    cdef floating[:, ::1] ws, parts
    cdef floating[::1] big
    cdef bint need_dx = dx is not None, need_dw = dw is not None, need_db = db is not None
    cdef floating* pdx = &dx[0, 0, 0, 0] if need_dx else NULL
    cdef floating* pdw = &dw[0, 0, 0, 0] if need_dw else NULL
    cdef floating* pbig = NULL
    cdef double[:, ::1] db_parts
    cdef int n_run
    cdef long ws_stride
    dtype = np.float32 if floating is float else np.float64
    if batched:
        if need_db:
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
    # One dW / db partial sum per part of the batch (a function of the shapes only).
    db_parts = np.zeros((n_parts, g.f), dtype=np.float64)
    if chunk > 1:
        ws_stride = (g.k + g.f) * chunk * g.l
    elif g.identity or not (need_dx or need_dw):
        ws_stride = 0
    else:
        ws_stride = g.k * g.l
    n_run = min(n_threads, n_parts)
    ws = np.empty((n_run, max(1, ws_stride)), dtype=dtype)
    parts = np.zeros((n_parts if need_dw else 1, g.k * g.f), dtype=dtype)
    with nogil:
        _conv_backward_per_sample(&x[0, 0, 0, 0], &w[0, 0, 0, 0], &dy[0, 0, 0, 0], pdx,
                                  &parts[0, 0], &db_parts[0, 0], &ws[0, 0], ws_stride, g,
                                  need_dx, need_dw, need_db, chunk, n_parts, n_run)
        if need_dw:
            reduce_parts_transposed(&parts[0, 0], n_parts, g.k, g.f, pdw, n_threads)
    if need_db:
        sum_parts(db_parts, db)


def gemm_f32(a, b, c, beta=0.0, trans_a=False, trans_b=False, n_threads=1, isa=-1):
    """``c[...] = beta * c + op(a) @ op(b)`` with the convolution's own float32 GEMM
    (convgemm_kernels.h), in blocks of rows on ``n_threads`` threads (the bits do not depend on it).
    ``isa``: -1 the best copy this CPU runs, else 0 (SSE2), 1 (AVX2+FMA), 2 (AVX-512), capped
    at the best; the choice stays for later calls. For the tests and
    benchmarks/bench_conv_limit.py. Returns the copy used."""
    check_nd(a, "a", 2, np.float32)
    check_nd(b, "b", 2, np.float32)
    check_nd(c, "c", 2, np.float32)
    cdef int m, n, k
    m, k = (a.shape[1], a.shape[0]) if trans_a else a.shape
    kb, n = (b.shape[1], b.shape[0]) if trans_b else b.shape
    if kb != k or c.shape != (m, n):
        raise ValueError(f"Invalid arguments `a`, `b`, `c`: expected op(a) (M, K), op(b) "
                         f"(K, N), c (M, N). Received: shapes {a.shape}, {b.shape}, {c.shape} "
                         f"with trans_a={trans_a}, trans_b={trans_b}")
    cdef const float[:, ::1] av = a
    cdef const float[:, ::1] bv = b
    cdef float[:, ::1] cv = c
    cdef int level = minnet_cg_set_isa(isa), threads = check_threads(n_threads)
    cdef bint ta = trans_a, tb = trans_b
    cdef float fbeta = beta
    if c.size == 0:
        return level
    if k == 0:                # an empty sum: c = beta * c, and no element of a or b to point at
        if fbeta == 0:
            c[...] = 0
        else:
            c *= fbeta
        return level
    with nogil:
        conv_gemm_blocks[float](ta, tb, m, n, k, &av[0, 0], <int> av.shape[1], &bv[0, 0],
                                <int> bv.shape[1], fbeta, &cv[0, 0], <int> cv.shape[1],
                                threads)
    return level
