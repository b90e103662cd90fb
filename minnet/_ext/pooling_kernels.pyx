"""2-D pooling kernels on NCHW and NHWC arrays: max (with argmax indices), average,
global average.

One kernel serves both layouts (as ``image_kernels.pyx``): every loop reads an ``(S, H, W, K)``
batch, S samples of ``H x W`` pixels that are vectors of K contiguous channels.  NHWC
(``channels_last=True`` in the wrappers) is ``(N, H, W, C)`` itself; NCHW is the
``(N*C, H, W, 1)`` batch of the same memory (its ``P = N*C`` planes), reshaped, never
copied.  With K > 1 the inner loops run over channels (vectorised; the 2x2/stride-2 max
pool with SSE over four channels at a time); with K = 1 the running sums and maxima are
kept in registers and the 2x2/stride-2 max pool runs SSE over four windows at a time.
Forward passes split output rows ``(s, oh)`` over threads, backward passes split
samples ``s`` (a sample's windows overlap, different samples never do), so no two
threads ever write the same element (this is what makes the scatter of the backward
passes race-free).  The window is scanned in the same order in both layouts, so both
give identical values and indices (indices are ``h * W + w`` in the (H, W) plane, as
PyTorch's, whatever the layout); the global average sums an NCHW plane with four
accumulators (``sum4``) and an NHWC channel with one, so those two may differ in the last
bits.

Window ``(oh, ow)`` covers rows ``oh*sh - pad_top .. + kh - 1`` and columns
``ow*sw - pad_left .. + kw - 1``.  Padded positions are never read: for max pooling
they act as -inf, for average pooling they count in the divisor only when
``count_include_pad`` is true (PyTorch's default for int padding; Keras' "same"
padding excludes them).
"""
from cython.parallel cimport prange, threadid
from libc.stdint cimport int32_t, int64_t, uint32_t
from libc.string cimport memset
from libc.math cimport INFINITY

from minnet._ext._base cimport check_array, check_strided, check_typed
from minnet._ext._blas cimport floating
from minnet._ext._fastmath cimport sum4

cdef extern from "maxpool_kernels.h" nogil:
    void minnet_max_row_2x2_f32(const float* x, int32_t W, int32_t oh, int32_t OW,
                                float* out, int32_t* idx)
    void minnet_max_row_2x2_nhwc_f32(const float* x, int32_t W, int32_t C, int32_t oh,
                                     int32_t OW, float* out, int32_t* idx)
    void minnet_max_row_2x2_nhwc_f64(const double* x, int32_t W, int32_t C, int32_t oh,
                                     int32_t OW, double* out, int32_t* idx)

import numpy as np


# ----------------------------------------------------------------------- max pool
# In every kernel: x is one sample (H, W, K) of the (S, H, W, K) batch; K == 1 branches
# pass local variables as the K running values, which the compiler keeps in registers
# (a pointer into out or a work buffer may alias x for it, so it would store each step).

cdef inline void _span(int o, int s, int pad, int k, int size, int* lo, int* hi) noexcept nogil:
    # the rows (or columns) lo..hi-1 of window o that are inside the input
    lo[0] = max(o * s - pad, 0)
    hi[0] = min(o * s - pad + k, size)


cdef inline void _max_window(const floating* x, int W, int K, int h0, int h1, int w0, int w1,
                             floating* o, int32_t* ix) noexcept nogil:
    # o, ix: the K maxima of window rows h0..h1-1, columns w0..w1-1, and their h * W + w.
    cdef int h, w, c
    cdef int32_t pos
    cdef floating val
    cdef bint better
    cdef const floating* p
    for c in range(K):
        o[c] = -INFINITY
        ix[c] = h0 * W + w0
    for h in range(h0, h1):
        for w in range(w0, w1):
            p = x + (h * W + w) * K
            pos = h * W + w
            for c in range(K):
                val = p[c]
                # strict ">" keeps the FIRST maximum; NaN propagates (as PyTorch).
                # Selects, not a branch: random data would mispredict it half the time.
                better = (val > o[c]) | (val != val)
                o[c] = val if better else o[c]
                ix[c] = pos if better else ix[c]


cdef inline void _max_row(const floating* x, int H, int W, int K, int oh, int OW,
                          int kh, int kw, int sh, int sw, int pt, int pl,
                          floating* out, int32_t* idx) noexcept nogil:
    # out, idx: output row oh (OW, K)
    cdef int ow, h0, h1, w0, w1
    cdef floating m
    cdef int32_t best
    _span(oh, sh, pt, kh, H, &h0, &h1)
    for ow in range(OW):
        _span(ow, sw, pl, kw, W, &w0, &w1)
        if K == 1:
            _max_window(x, W, 1, h0, h1, w0, w1, &m, &best)
            out[ow] = m
            idx[ow] = best
        else:
            _max_window(x, W, K, h0, h1, w0, w1, out + ow * K, idx + ow * K)


cdef inline void _max_row_2x2(const floating* x, int W, int K, int oh, int OW,
                              floating* out, int32_t* idx) noexcept nogil:
    # The common 2x2 / stride 2 / unpadded case (2*OH <= H, 2*OW <= W): the selects of
    # _max_window in the same order with the bounds fixed (maxpool_kernels.h), so the results
    # are identical; float32 does four windows (K == 1) or four channels at a time in SSE
    # registers, float64 the scalar selects.
    if floating is float:    # fast path: benchmarks/bench_norm_dropout_pool.py "max_pool"
        if K == 1:
            minnet_max_row_2x2_f32(x, W, oh, OW, out, idx)
        else:
            minnet_max_row_2x2_nhwc_f32(x, W, K, oh, OW, out, idx)
    else:
        minnet_max_row_2x2_nhwc_f64(x, W, K, oh, OW, out, idx)


cdef void max_pool2d_fwd(int64_t S, int H, int W, int K, int OH, int OW,
                         int kh, int kw, int sh, int sw, int pt, int pl,
                         const floating* x,                  # IN (S, H, W, K)
                         floating* out,                      # OUT (S, OH, OW, K)
                         int32_t* idx,                       # OUT (S, OH, OW, K) h*W+w
                         int n_threads) noexcept nogil:
    cdef int64_t r, s
    cdef int64_t in_size = <int64_t> H * W * K, row = <int64_t> OW * K
    cdef bint fast = (kh == 2 and kw == 2 and sh == 2 and sw == 2 and pt == 0 and pl == 0
                      and 2 * OH <= H and 2 * OW <= W)
    for r in prange(S * OH, schedule="static", num_threads=n_threads):
        s = r // OH
        if fast:
            _max_row_2x2(x + s * in_size, W, K, <int> (r % OH), OW, out + r * row, idx + r * row)
        else:
            _max_row(x + s * in_size, H, W, K, <int> (r % OH), OW, kh, kw, sh, sw, pt, pl,
                     out + r * row, idx + r * row)


cdef int64_t max_pool2d_bwd(int64_t S, int HW, int OHW, int K,
                            const floating* grad,            # IN (S, OH, OW, K)
                            const int32_t* idx,              # IN (S, OH, OW, K)
                            floating* dx,                    # OUT (S, H, W, K)
                            int n_threads) noexcept nogil:
    # Each thread zeroes its own samples (in parallel, and the sample is in cache for the
    # scatter that follows), then scatters.  An index outside [0, H*W) is skipped and
    # counted: the count (0 for indices from max_pool2d_forward) is returned, so the
    # wrapper can raise instead of writing outside dx, without two passes over idx first.
    cdef int64_t s, bad = 0, o, base_g, base_x
    cdef int c
    cdef int32_t i
    for s in prange(S, schedule="static", num_threads=n_threads):
        base_x = s * HW * K
        base_g = s * OHW * K
        memset(dx + base_x, 0, <size_t> HW * K * sizeof(floating))
        if K == 1:
            # channels_first planes: the same scatter without the channel loop, which gcc
            # does not remove for K == 1 (backward 1.5x slower with it; benchmarks/
            # bench_norm_dropout_pool.py "max_pool", channels_first)
            for o in range(OHW):
                i = idx[base_g + o]
                if <uint32_t> i < <uint32_t> HW:
                    dx[base_x + i] += grad[base_g + o]
                else:
                    bad += 1
            continue
        for o in range(OHW):
            for c in range(K):
                i = idx[base_g + o * K + c]
                if <uint32_t> i < <uint32_t> HW:
                    dx[base_x + <int64_t> i * K + c] += grad[base_g + o * K + c]
                else:
                    bad += 1
    return bad


# ----------------------------------------------------------------------- avg pool

cdef inline int _divisor(int oh, int ow, int H, int W, int kh, int kw, int sh, int sw,
                         int pt, int pb, int pl, int pr, bint include_pad) noexcept nogil:
    cdef int h0 = oh * sh - pt, w0 = ow * sw - pl
    cdef int h1 = min(h0 + kh, H + pb), w1 = min(w0 + kw, W + pr)
    if include_pad:
        return (h1 - h0) * (w1 - w0)
    return (min(h1, H) - max(h0, 0)) * (min(w1, W) - max(w0, 0))


cdef inline void _window_sum(const floating* x, int W, int K, int h0, int h1, int w0, int w1,
                             double* acc) noexcept nogil:
    # acc: the K sums of the window, in double, row by row
    cdef int h, w, c
    cdef const floating* p
    for c in range(K):
        acc[c] = 0
    for h in range(h0, h1):
        for w in range(w0, w1):
            p = x + (h * W + w) * K
            for c in range(K):
                acc[c] = acc[c] + p[c]


cdef inline void _avg_row(const floating* x, int H, int W, int K, int oh, int OW,
                          int kh, int kw, int sh, int sw, int pt, int pb, int pl, int pr,
                          bint include_pad, floating* out, double* acc) noexcept nogil:
    # out: output row oh (OW, K); acc: the calling thread's K doubles of the work buffer
    cdef int ow, c, h0, h1, w0, w1
    cdef double div, total
    _span(oh, sh, pt, kh, H, &h0, &h1)
    for ow in range(OW):
        _span(ow, sw, pl, kw, W, &w0, &w1)
        div = _divisor(oh, ow, H, W, kh, kw, sh, sw, pt, pb, pl, pr, include_pad)
        if K == 1:
            _window_sum(x, W, 1, h0, h1, w0, w1, &total)
            out[ow] = <floating> (total / div)
        else:
            _window_sum(x, W, K, h0, h1, w0, w1, acc)
            for c in range(K):
                out[ow * K + c] = <floating> (acc[c] / div)


cdef void avg_pool2d_fwd(int64_t S, int H, int W, int K, int OH, int OW,
                         int kh, int kw, int sh, int sw, int pt, int pb, int pl, int pr,
                         bint include_pad,
                         const floating* x,                  # IN (S, H, W, K)
                         floating* out,                      # OUT (S, OH, OW, K)
                         double* work,                       # scratch (n_threads, K)
                         int n_threads) noexcept nogil:
    cdef int64_t r
    cdef int64_t in_size = <int64_t> H * W * K, row = <int64_t> OW * K
    for r in prange(S * OH, schedule="static", num_threads=n_threads):
        _avg_row(x + (r // OH) * in_size, H, W, K, <int> (r % OH), OW, kh, kw, sh, sw,
                 pt, pb, pl, pr, include_pad, out + r * row, work + threadid() * K)


cdef inline void _window_add(floating* dx, int W, int K, int h0, int h1, int w0, int w1,
                             const floating* share) noexcept nogil:
    cdef int h, w, c
    cdef floating* d
    for h in range(h0, h1):
        for w in range(w0, w1):
            d = dx + (h * W + w) * K
            for c in range(K):
                d[c] += share[c]


cdef inline void _avg_sample_bwd(const floating* g, int H, int W, int K, int OH, int OW,
                                 int kh, int kw, int sh, int sw, int pt, int pb, int pl,
                                 int pr, bint include_pad, floating* dx,
                                 floating* share) noexcept nogil:
    # share: the calling thread's K scratch values, g / divisor once per window
    cdef int oh, ow, c, h0, h1, w0, w1
    cdef floating div, one
    cdef const floating* gp
    for oh in range(OH):
        _span(oh, sh, pt, kh, H, &h0, &h1)
        for ow in range(OW):
            _span(ow, sw, pl, kw, W, &w0, &w1)
            div = _divisor(oh, ow, H, W, kh, kw, sh, sw, pt, pb, pl, pr, include_pad)
            gp = g + (oh * OW + ow) * K
            if K == 1:
                one = gp[0] / div
                _window_add(dx, W, 1, h0, h1, w0, w1, &one)
            else:
                for c in range(K):
                    share[c] = gp[c] / div
                _window_add(dx, W, K, h0, h1, w0, w1, share)


cdef void avg_pool2d_bwd(int64_t S, int H, int W, int K, int OH, int OW,
                         int kh, int kw, int sh, int sw, int pt, int pb, int pl, int pr,
                         bint include_pad,
                         const floating* grad,               # IN (S, OH, OW, K)
                         floating* dx,                       # INOUT (S, H, W, K), zeroed
                         floating* work,                     # scratch (n_threads, K)
                         int n_threads) noexcept nogil:
    cdef int64_t s
    for s in prange(S, schedule="static", num_threads=n_threads):
        _avg_sample_bwd(grad + s * OH * OW * K, H, W, K, OH, OW, kh, kw, sh, sw,
                        pt, pb, pl, pr, include_pad, dx + s * H * W * K, work + threadid() * K)


# ------------------------------------------------------------- global average pool

cdef inline void _sample_mean(int64_t L, int K, const floating* x,
                              floating* out, double* acc) noexcept nogil:
    cdef int64_t l
    cdef int c
    cdef const floating* p
    for c in range(K):
        acc[c] = 0
    for l in range(L):
        p = x + l * K
        for c in range(K):
            acc[c] = acc[c] + p[c]
    for c in range(K):
        out[c] = <floating> (acc[c] / L)


cdef void global_avg_pool2d_fwd(int64_t S, int64_t L, int K, bint planes,
                                const floating* x,           # IN (S, L, K), K = 1 if planes
                                floating* out,               # OUT (S, K)
                                double* work,                # scratch (n_threads, K)
                                int n_threads) noexcept nogil:
    cdef int64_t s
    for s in prange(S, schedule="static", num_threads=n_threads):
        if planes:                           # an NCHW plane: four double accumulators
            out[s] = <floating> (sum4(x + s * L, L) / L)
        else:
            _sample_mean(L, K, x + s * L * K, out + s * K, work + threadid() * K)


cdef inline void _fill(int64_t L, floating value, floating* out) noexcept nogil:
    cdef int64_t l
    for l in range(L):
        out[l] = value


cdef inline void _spread(int64_t L, int K, const floating* g, floating* dx) noexcept nogil:
    cdef int64_t l
    cdef int c
    for l in range(L):
        for c in range(K):
            dx[l * K + c] = g[c] / <floating> L


cdef void global_avg_pool2d_bwd(int64_t S, int64_t L, int K,
                                const floating* grad,        # IN (S, K)
                                floating* dx,                # OUT (S, L, K)
                                int n_threads) noexcept nogil:
    cdef int64_t s
    for s in prange(S, schedule="static", num_threads=n_threads):
        if K == 1:                           # one value per sample: a fill
            _fill(L, grad[s] / <floating> L, dx + s * L)
        else:
            _spread(L, K, grad + s * K, dx + s * L * K)


# ---------------------------------------------------------------------------------
# Python-visible wrappers.  They check what the nogil loops rely on (dtype, layout,
# window geometry); user-facing argument parsing lives in minnet.functional._pooling.

def _check_x(x, name="x"):
    return np.ascontiguousarray(check_strided(x, name, 4))     # (N, C, H, W) or (N, H, W, C)


def output_size(size, kernel, stride, pad_before, pad_after):
    """Number of windows along one axis: ``(size + pads - kernel) // stride + 1``."""
    return (size + pad_before + pad_after - kernel) // stride + 1


def _nchw(shape, channels_last):
    """``(N, C, H, W)`` of a 4-D shape in either layout."""
    N, a, b, c = (int(v) for v in shape)
    return (N, c, a, b) if channels_last else (N, a, b, c)


def _layout(N, C, H, W, channels_last):
    return (N, H, W, C) if channels_last else (N, C, H, W)


def _batch(a, channels_last):
    """The ``(S, H, W, K)`` batch the kernels read: NHWC as it is, NCHW (N, C, H, W) as
    (N*C, H, W, 1), the same memory."""
    return a if channels_last else a.reshape(a.shape[0] * a.shape[1], a.shape[2], a.shape[3], 1)


def _geometry(x, pool_size, strides, padding, channels_last=False):
    kh, kw = (int(v) for v in pool_size)
    sh, sw = (int(v) for v in strides)
    pt, pb, pl, pr = (int(v) for v in padding)
    H, W = (x.shape[1], x.shape[2]) if channels_last else (x.shape[2], x.shape[3])
    if kh < 1 or kw < 1 or sh < 1 or sw < 1 or min(pt, pb, pl, pr) < 0:
        raise ValueError(f"Invalid pooling geometry: pool_size={pool_size}, strides={strides}, "
                         f"padding={padding}: expected positive sizes and strides and "
                         f"non-negative padding")
    if pt >= kh or pb >= kh or pl >= kw or pr >= kw:
        raise ValueError(f"Invalid argument `padding`: expected less than the pool size "
                         f"{(kh, kw)} on each side. Received: padding={padding}")
    OH = output_size(H, kh, sh, pt, pb)
    OW = output_size(W, kw, sw, pl, pr)
    if OH < 1 or OW < 1:
        raise ValueError(f"Invalid argument `pool_size`: the window {(kh, kw)} does not fit "
                         f"the padded input {(H + pt + pb, W + pl + pr)}. "
                         f"Received: input shape={x.shape}")
    return kh, kw, sh, sw, pt, pb, pl, pr, OH, OW


def max_pool2d_forward(x, pool_size, strides, padding=(0, 0, 0, 0), n_threads=1,
                       channels_last=False):
    """Max pooling with argmax indices.

    Args:
        x: float32/float64 array (N, C, H, W).
        pool_size: ``(kh, kw)``.
        strides: ``(sh, sw)``.
        padding: ``(top, bottom, left, right)``; padded positions act as -inf.
        n_threads: OpenMP threads (over the N*C planes; NHWC: over output rows).
        channels_last: ``x`` is (N, H, W, C) and so are the outputs.

    Returns:
        ``(out, indices)``: ``out`` (N, C, OH, OW) like ``x``; ``indices`` int32 of the
        same shape, the flat position ``h * W + w`` of each maximum in its (H, W) plane
        (the first one on ties).

    Shape:
        x: (N, C, H, W); out, indices: (N, C, OH, OW), OH = (H + top + bottom - kh) // sh + 1
        (channels_last: (N, H, W, C) -> (N, OH, OW, C))
    """
    x = _check_x(x)
    kh, kw, sh, sw, pt, pb, pl, pr, OH, OW = _geometry(x, pool_size, strides, padding,
                                                       channels_last)
    N, C, H, W = _nchw(x.shape, channels_last)
    out = np.empty(_layout(N, C, OH, OW, channels_last), dtype=x.dtype)
    idx = np.empty(out.shape, dtype=np.int32)
    if out.size:
        _max_fwd(_batch(x, channels_last), _batch(out, channels_last), _batch(idx, channels_last),
                 kh, kw, sh, sw, pt, pl, max(1, int(n_threads)))
    return out, idx


def _max_fwd(const floating[:, :, :, ::1] x, floating[:, :, :, ::1] out,
             int32_t[:, :, :, ::1] idx, int kh, int kw, int sh, int sw, int pt, int pl, int nt):
    with nogil:
        max_pool2d_fwd(x.shape[0], x.shape[1], x.shape[2], x.shape[3], out.shape[1],
                       out.shape[2], kh, kw, sh, sw, pt, pl,
                       &x[0, 0, 0, 0], &out[0, 0, 0, 0], &idx[0, 0, 0, 0], nt)


def max_pool2d_backward(grad, indices, input_shape, n_threads=1, channels_last=False):
    """Scatter ``grad`` to the argmax positions (summing where windows share a maximum).

    Args:
        grad: float32/float64 array (N, C, OH, OW).
        indices: int32 array (N, C, OH, OW) from ``max_pool2d_forward``.
        input_shape: ``(N, C, H, W)`` (channels_last: ``(N, H, W, C)``).
        n_threads: OpenMP threads.
        channels_last: arrays are NHWC.

    Returns:
        ``dx`` of shape ``input_shape``, dtype of ``grad``.

    Shape:
        grad, indices: (N, C, OH, OW); returns (N, C, H, W)
    """
    grad = _check_x(grad, "grad")
    N, C, H, W = _nchw(input_shape, channels_last)
    check_typed(indices, "indices", np.int32, grad.shape)
    if _nchw(grad.shape, channels_last)[:2] != (N, C):
        raise ValueError(f"Invalid argument `input_shape`: expected (N, C) = "
                         f"{_nchw(grad.shape, channels_last)[:2]}. "
                         f"Received: input_shape={tuple(input_shape)}")
    shape = _layout(N, C, H, W, channels_last)
    if not grad.size or not H * W:
        return np.zeros(shape, dtype=grad.dtype)
    dx = np.empty(shape, dtype=grad.dtype)              # every plane is zeroed by the kernel
    bad = _max_bwd(_batch(grad, channels_last), _batch(indices, channels_last),
                   _batch(dx, channels_last), max(1, int(n_threads)))
    if bad:
        raise ValueError(f"Invalid argument `indices`: expected values in [0, {H * W}). "
                         f"Received {bad} value(s) outside it")
    return dx


def _max_bwd(const floating[:, :, :, ::1] g, const int32_t[:, :, :, ::1] idx,
             floating[:, :, :, ::1] dx, int nt):
    cdef int64_t bad
    with nogil:
        bad = max_pool2d_bwd(g.shape[0], dx.shape[1] * dx.shape[2], g.shape[1] * g.shape[2],
                             g.shape[3], &g[0, 0, 0, 0], &idx[0, 0, 0, 0], &dx[0, 0, 0, 0], nt)
    return bad


def avg_pool2d_forward(x, pool_size, strides, padding=(0, 0, 0, 0), count_include_pad=True,
                       n_threads=1, channels_last=False):
    """Average pooling.

    Args:
        x: float32/float64 array (N, C, H, W).
        pool_size: ``(kh, kw)``.
        strides: ``(sh, sw)``.
        padding: ``(top, bottom, left, right)`` zero padding.
        count_include_pad: divide by the whole window (True, PyTorch) or by the number of
            real elements in it (False, Keras "same").
        n_threads: OpenMP threads.
        channels_last: ``x`` and ``out`` are NHWC.

    Returns:
        ``out`` (N, C, OH, OW) like ``x``.

    Shape:
        x: (N, C, H, W); out: (N, C, OH, OW)
    """
    x = _check_x(x)
    geometry = _geometry(x, pool_size, strides, padding, channels_last)
    N, C, H, W = _nchw(x.shape, channels_last)
    out = np.empty(_layout(N, C, *geometry[8:], channels_last), dtype=x.dtype)
    if out.size:
        _avg_run(_avg_fwd, x, out, np.float64, geometry, count_include_pad, n_threads,
                 channels_last)
    return out


def _avg_run(kernel, src, dst, work_dtype, geometry, include_pad, n_threads, channels_last):
    """``kernel`` (_avg_fwd or _avg_bwd) on the (S, H, W, K) batches of ``src`` and ``dst``,
    with a work buffer of K values per thread."""
    nt = max(1, int(n_threads))
    src = _batch(src, channels_last)
    kernel(src, _batch(dst, channels_last), np.empty(nt * src.shape[3], dtype=work_dtype),
           *geometry[:8], bool(include_pad), nt)


def _avg_fwd(const floating[:, :, :, ::1] x, floating[:, :, :, ::1] out, double[::1] work,
             int kh, int kw, int sh, int sw, int pt, int pb, int pl, int pr,
             bint include_pad, int nt):
    with nogil:
        avg_pool2d_fwd(x.shape[0], x.shape[1], x.shape[2], x.shape[3], out.shape[1],
                       out.shape[2], kh, kw, sh, sw, pt, pb, pl, pr, include_pad,
                       &x[0, 0, 0, 0], &out[0, 0, 0, 0], &work[0], nt)


def avg_pool2d_backward(grad, input_shape, pool_size, strides, padding=(0, 0, 0, 0),
                        count_include_pad=True, n_threads=1, channels_last=False):
    """Spread each output gradient evenly (``/ divisor``) over its window.

    Args:
        grad: float32/float64 array (N, C, OH, OW).
        input_shape: ``(N, C, H, W)``.
        pool_size, strides, padding, count_include_pad: as in the forward pass.
        n_threads: OpenMP threads.
        channels_last: arrays are NHWC.

    Returns:
        ``dx`` of shape ``input_shape``.

    Shape:
        grad: (N, C, OH, OW); returns (N, C, H, W)
    """
    grad = _check_x(grad, "grad")
    N, C, H, W = _nchw(input_shape, channels_last)
    dx = np.zeros(_layout(N, C, H, W, channels_last), dtype=grad.dtype)
    geometry = _geometry(dx, pool_size, strides, padding, channels_last)
    if grad.shape != _layout(N, C, *geometry[8:], channels_last):
        raise ValueError(f"Invalid argument `grad`: expected shape "
                         f"{_layout(N, C, *geometry[8:], channels_last)}. "
                         f"Received: shape={grad.shape}")
    if grad.size:
        _avg_run(_avg_bwd, grad, dx, grad.dtype, geometry, count_include_pad, n_threads,
                 channels_last)
    return dx


def _avg_bwd(const floating[:, :, :, ::1] g, floating[:, :, :, ::1] dx,
             floating[::1] work, int kh, int kw, int sh, int sw, int pt, int pb, int pl,
             int pr, bint include_pad, int nt):
    with nogil:
        avg_pool2d_bwd(g.shape[0], dx.shape[1], dx.shape[2], dx.shape[3], g.shape[1],
                       g.shape[2], kh, kw, sh, sw, pt, pb, pl, pr, include_pad,
                       &g[0, 0, 0, 0], &dx[0, 0, 0, 0], &work[0], nt)


def global_avg_pool2d_forward(x, n_threads=1, channels_last=False):
    """Mean over H and W of every (n, c) plane (double accumulators).

    Args:
        x: float32/float64 array (N, C, H, W).
        n_threads: OpenMP threads.
        channels_last: ``x`` is (N, H, W, C).

    Returns:
        ``out`` of shape (N, C).

    Shape:
        x: (N, C, H, W); out: (N, C)
    """
    x = _check_x(x)
    N, C, H, W = _nchw(x.shape, channels_last)
    if H * W == 0:
        raise ValueError(f"Invalid argument `x`: expected non-empty planes. "
                         f"Received: shape={x.shape}")
    out = np.empty((N, C), dtype=x.dtype)
    if out.size:
        nt = max(1, int(n_threads))
        work = np.empty(nt * C, dtype=np.float64)
        _gap_fwd(_batch(x, channels_last), out.reshape(-1, C if channels_last else 1), work,
                 not channels_last, nt)
    return out


def _gap_fwd(const floating[:, :, :, ::1] x, floating[:, ::1] out, double[::1] work,
             bint planes, int nt):
    with nogil:
        global_avg_pool2d_fwd(x.shape[0], x.shape[1] * x.shape[2], x.shape[3], planes,
                              &x[0, 0, 0, 0], &out[0, 0], &work[0], nt)


def global_avg_pool2d_backward(grad, input_shape, n_threads=1, channels_last=False):
    """``dx[n, c, h, w] = grad[n, c] / (H * W)``.

    Args:
        grad: float32/float64 array (N, C).
        input_shape: ``(N, C, H, W)`` (channels_last: ``(N, H, W, C)``).
        n_threads: OpenMP threads.
        channels_last: ``dx`` is NHWC.

    Returns:
        ``dx`` of shape ``input_shape``.

    Shape:
        grad: (N, C); returns (N, C, H, W)
    """
    N, C, H, W = _nchw(input_shape, channels_last)
    grad = np.ascontiguousarray(check_array(grad, "grad", None, (N, C), -1, False))
    dx = np.empty(_layout(N, C, H, W, channels_last), dtype=grad.dtype)
    if dx.size:
        _gap_bwd(grad.reshape(-1, C if channels_last else 1), _batch(dx, channels_last),
                 max(1, int(n_threads)))
    return dx


def _gap_bwd(const floating[:, ::1] g, floating[:, :, :, ::1] dx, int nt):
    with nogil:
        global_avg_pool2d_bwd(dx.shape[0], dx.shape[1] * dx.shape[2], dx.shape[3], &g[0, 0],
                              &dx[0, 0, 0, 0], nt)
