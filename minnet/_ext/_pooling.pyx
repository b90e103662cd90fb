"""2-D pooling kernels on NCHW and NHWC arrays: max (with argmax indices), average,
global average.

NCHW kernels work plane by plane: the ``P = N*C`` planes of ``H x W`` values are
independent, so ``prange`` runs over planes and no two threads ever write the same
element (this is what makes the scatter of the backward passes race-free).

NHWC kernels (``channels_last=True`` in the wrappers) are native, not transposes: a
window element is a contiguous vector of C channels, so the inner loops run over
channels (vectorised; the 2x2/stride-2 max pool with SSE over four channels at a time).
Forward passes split output rows ``(n, oh)`` over threads, backward passes split
samples ``n`` (a sample's windows overlap, different samples never do).  The window is
scanned in the same order as NCHW's, so both layouts give identical values and indices
(indices are ``h * W + w`` in the (H, W) plane, as PyTorch's, whatever the layout).

Window ``(oh, ow)`` covers rows ``oh*sh - pad_top .. + kh - 1`` and columns
``ow*sw - pad_left .. + kw - 1``.  Padded positions are never read: for max pooling
they act as -inf, for average pooling they count in the divisor only when
``count_include_pad`` is true (PyTorch's default for int padding; Keras' "same"
padding excludes them).
"""
from cython.parallel cimport prange, parallel, threadid
from libc.stdint cimport int32_t, int64_t, uint32_t
from libc.string cimport memset
from libc.math cimport INFINITY

from minnet._ext._base cimport check_strided
from minnet._ext._blas cimport floating
from minnet._ext._fastmath cimport sum4

cdef extern from "_maxpool.h" nogil:
    void minnet_max_plane_2x2_f32(const float* x, int32_t W, int32_t OH, int32_t OW,
                                  float* out, int32_t* idx)
    void minnet_max_plane_2x2_f64(const double* x, int32_t W, int32_t OH, int32_t OW,
                                  double* out, int32_t* idx)
    void minnet_max_row_2x2_nhwc_f32(const float* x, int32_t W, int32_t C, int32_t oh,
                                     int32_t OW, float* out, int32_t* idx)
    void minnet_max_row_2x2_nhwc_f64(const double* x, int32_t W, int32_t C, int32_t oh,
                                     int32_t OW, double* out, int32_t* idx)

import numpy as np


# ----------------------------------------------------------------------- max pool

cdef inline void _max_plane(const floating* x, int H, int W, int OH, int OW,
                            int kh, int kw, int sh, int sw, int pt, int pl,
                            floating* out, int32_t* idx) noexcept nogil:
    cdef int oh, ow, h, w, h0, h1, w0, w1
    cdef int32_t best
    cdef floating val, maxval
    cdef bint better
    for oh in range(OH):
        h0 = oh * sh - pt
        h1 = min(h0 + kh, H)
        h0 = max(h0, 0)
        for ow in range(OW):
            w0 = ow * sw - pl
            w1 = min(w0 + kw, W)
            w0 = max(w0, 0)
            maxval = -INFINITY
            best = h0 * W + w0
            for h in range(h0, h1):
                for w in range(w0, w1):
                    val = x[h * W + w]
                    # strict ">" keeps the FIRST maximum; NaN propagates (as PyTorch).
                    # Selects, not a branch: random data would mispredict it half the time.
                    better = (val > maxval) | (val != val)
                    maxval = val if better else maxval
                    best = (h * W + w) if better else best
            out[oh * OW + ow] = maxval
            idx[oh * OW + ow] = best


cdef inline void _max_plane_2x2(const floating* x, int W, int OH, int OW,
                                floating* out, int32_t* idx) noexcept nogil:
    # The common 2x2 / stride 2 / unpadded case (2*OH <= H, 2*OW <= W): the selects of
    # _max_plane in the same order with the bounds fixed (_maxpool.h), so the results
    # are identical; float32 does four windows at a time in SSE registers.
    if floating is float:
        minnet_max_plane_2x2_f32(x, W, OH, OW, out, idx)
    else:
        minnet_max_plane_2x2_f64(x, W, OH, OW, out, idx)


cdef void max_pool2d_fwd(int64_t P, int H, int W, int OH, int OW,
                         int kh, int kw, int sh, int sw, int pt, int pl,
                         const floating* x,                  # IN (P, H, W)
                         floating* out,                      # OUT (P, OH, OW)
                         int32_t* idx,                       # OUT (P, OH, OW) flat index in plane
                         int n_threads) noexcept nogil:
    cdef int64_t p
    cdef bint fast = (kh == 2 and kw == 2 and sh == 2 and sw == 2 and pt == 0 and pl == 0
                      and 2 * OH <= H and 2 * OW <= W)
    for p in prange(P, schedule="static", num_threads=n_threads):
        if fast:
            _max_plane_2x2(x + p * H * W, W, OH, OW, out + p * OH * OW, idx + p * OH * OW)
        else:
            _max_plane(x + p * H * W, H, W, OH, OW, kh, kw, sh, sw, pt, pl,
                       out + p * OH * OW, idx + p * OH * OW)


cdef int64_t max_pool2d_bwd(int64_t P, int HW, int OHW,
                            const floating* grad,            # IN (P, OH, OW)
                            const int32_t* idx,              # IN (P, OH, OW)
                            floating* dx,                    # OUT (P, H, W)
                            int n_threads) noexcept nogil:
    # Each thread zeroes its own planes (in parallel, and the plane is in cache for the
    # scatter that follows), then scatters.  An index outside [0, H*W) is skipped and
    # counted: the count (0 for indices from max_pool2d_forward) is returned, so the
    # wrapper can raise instead of writing outside dx, without two passes over idx first.
    cdef int64_t p, bad = 0
    cdef int o
    cdef int32_t i
    for p in prange(P, schedule="static", num_threads=n_threads):
        memset(dx + p * HW, 0, HW * sizeof(floating))
        for o in range(OHW):
            i = idx[p * OHW + o]
            if <uint32_t> i < <uint32_t> HW:
                dx[p * HW + i] += grad[p * OHW + o]
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


cdef inline void _avg_plane(const floating* x, int H, int W, int OH, int OW,
                            int kh, int kw, int sh, int sw, int pt, int pb, int pl, int pr,
                            bint include_pad, floating* out) noexcept nogil:
    cdef int oh, ow, h, w, h0, h1, w0, w1
    cdef double total
    for oh in range(OH):
        h0 = max(oh * sh - pt, 0)
        h1 = min(oh * sh - pt + kh, H)
        for ow in range(OW):
            w0 = max(ow * sw - pl, 0)
            w1 = min(ow * sw - pl + kw, W)
            total = 0
            for h in range(h0, h1):
                for w in range(w0, w1):
                    total = total + x[h * W + w]
            out[oh * OW + ow] = <floating> (total / _divisor(oh, ow, H, W, kh, kw, sh, sw,
                                                             pt, pb, pl, pr, include_pad))


cdef void avg_pool2d_fwd(int64_t P, int H, int W, int OH, int OW,
                         int kh, int kw, int sh, int sw, int pt, int pb, int pl, int pr,
                         bint include_pad,
                         const floating* x,                  # IN (P, H, W)
                         floating* out,                      # OUT (P, OH, OW)
                         int n_threads) noexcept nogil:
    cdef int64_t p
    for p in prange(P, schedule="static", num_threads=n_threads):
        _avg_plane(x + p * H * W, H, W, OH, OW, kh, kw, sh, sw, pt, pb, pl, pr,
                   include_pad, out + p * OH * OW)


cdef inline void _avg_plane_bwd(const floating* g, int H, int W, int OH, int OW,
                                int kh, int kw, int sh, int sw, int pt, int pb, int pl, int pr,
                                bint include_pad, floating* dx) noexcept nogil:
    cdef int oh, ow, h, w, h0, h1, w0, w1
    cdef floating share
    for oh in range(OH):
        h0 = max(oh * sh - pt, 0)
        h1 = min(oh * sh - pt + kh, H)
        for ow in range(OW):
            w0 = max(ow * sw - pl, 0)
            w1 = min(ow * sw - pl + kw, W)
            share = g[oh * OW + ow] / _divisor(oh, ow, H, W, kh, kw, sh, sw,
                                               pt, pb, pl, pr, include_pad)
            for h in range(h0, h1):
                for w in range(w0, w1):
                    dx[h * W + w] += share


cdef void avg_pool2d_bwd(int64_t P, int H, int W, int OH, int OW,
                         int kh, int kw, int sh, int sw, int pt, int pb, int pl, int pr,
                         bint include_pad,
                         const floating* grad,               # IN (P, OH, OW)
                         floating* dx,                       # INOUT (P, H, W), zeroed by caller
                         int n_threads) noexcept nogil:
    cdef int64_t p
    for p in prange(P, schedule="static", num_threads=n_threads):
        _avg_plane_bwd(grad + p * OH * OW, H, W, OH, OW, kh, kw, sh, sw, pt, pb, pl, pr,
                       include_pad, dx + p * H * W)


# ------------------------------------------------------------- global average pool

cdef inline floating _plane_mean(int64_t L, const floating* x) noexcept nogil:
    return <floating> (sum4(x, L) / L)       # double accumulators (_fastmath.pxd)


cdef void global_avg_pool2d_fwd(int64_t P, int64_t L,
                                const floating* x,           # IN (P, L)
                                floating* out,               # OUT (P,)
                                int n_threads) noexcept nogil:
    cdef int64_t p
    for p in prange(P, schedule="static", num_threads=n_threads):
        out[p] = _plane_mean(L, x + p * L)


cdef inline void _fill(int64_t L, floating value, floating* out) noexcept nogil:
    cdef int64_t l
    for l in range(L):
        out[l] = value


cdef void global_avg_pool2d_bwd(int64_t P, int64_t L,
                                const floating* grad,        # IN (P,)
                                floating* dx,                # OUT (P, L)
                                int n_threads) noexcept nogil:
    cdef int64_t p
    for p in prange(P, schedule="static", num_threads=n_threads):
        _fill(L, grad[p] / <floating> L, dx + p * L)


# ----------------------------------------------------------------------- NHWC kernels

cdef inline void _max_row_nhwc(const floating* x, int H, int W, int C, int oh, int OW,
                               int kh, int kw, int sh, int sw, int pt, int pl,
                               floating* out, int32_t* idx) noexcept nogil:
    # x: one sample (H, W, C); out, idx: output row oh (OW, C).  Same selects, same
    # window order as _max_plane, one channel vector at a time.
    cdef int ow, h, w, c, h0, h1, w0, w1
    cdef int32_t pos
    cdef floating val
    cdef bint better
    cdef floating* o
    cdef int32_t* ix
    cdef const floating* p
    h0 = oh * sh - pt
    h1 = min(h0 + kh, H)
    h0 = max(h0, 0)
    for ow in range(OW):
        w0 = ow * sw - pl
        w1 = min(w0 + kw, W)
        w0 = max(w0, 0)
        o = out + ow * C
        ix = idx + ow * C
        for c in range(C):
            o[c] = -INFINITY
            ix[c] = h0 * W + w0
        for h in range(h0, h1):
            for w in range(w0, w1):
                p = x + (h * W + w) * C
                pos = h * W + w
                for c in range(C):
                    val = p[c]
                    better = (val > o[c]) | (val != val)
                    o[c] = val if better else o[c]
                    ix[c] = pos if better else ix[c]


cdef void max_pool2d_nhwc_fwd(int N, int H, int W, int C, int OH, int OW,
                              int kh, int kw, int sh, int sw, int pt, int pl,
                              const floating* x,             # IN (N, H, W, C)
                              floating* out,                 # OUT (N, OH, OW, C)
                              int32_t* idx,                  # OUT (N, OH, OW, C) h*W+w
                              int n_threads) noexcept nogil:
    cdef int64_t r, n, oh
    cdef int64_t in_size = <int64_t> H * W * C, row = <int64_t> OW * C
    cdef bint fast = (kh == 2 and kw == 2 and sh == 2 and sw == 2 and pt == 0 and pl == 0
                      and 2 * OH <= H and 2 * OW <= W)
    for r in prange(<int64_t> N * OH, schedule="static", num_threads=n_threads):
        n = r // OH
        oh = r % OH
        if fast:
            if floating is float:
                minnet_max_row_2x2_nhwc_f32(x + n * in_size, W, C, <int32_t> oh, OW,
                                            out + r * row, idx + r * row)
            else:
                minnet_max_row_2x2_nhwc_f64(x + n * in_size, W, C, <int32_t> oh, OW,
                                            out + r * row, idx + r * row)
        else:
            _max_row_nhwc(x + n * in_size, H, W, C, <int> oh, OW, kh, kw, sh, sw, pt, pl,
                          out + r * row, idx + r * row)


cdef int64_t max_pool2d_nhwc_bwd(int N, int HW, int OHW, int C,
                                 const floating* grad,       # IN (N, OH, OW, C)
                                 const int32_t* idx,         # IN (N, OH, OW, C)
                                 floating* dx,               # OUT (N, H, W, C)
                                 int n_threads) noexcept nogil:
    # One sample per thread at a time (windows of one sample may share a maximum;
    # different samples never do).  Bad indices are skipped and counted, as NCHW's.
    cdef int64_t n, bad = 0, o, base_g, base_x
    cdef int c
    cdef int32_t i
    for n in prange(N, schedule="static", num_threads=n_threads):
        base_x = n * HW * C
        base_g = n * OHW * C
        memset(dx + base_x, 0, <size_t> HW * C * sizeof(floating))
        for o in range(OHW):
            for c in range(C):
                i = idx[base_g + o * C + c]
                if <uint32_t> i < <uint32_t> HW:
                    dx[base_x + <int64_t> i * C + c] += grad[base_g + o * C + c]
                else:
                    bad += 1
    return bad


cdef inline void _avg_row_nhwc(const floating* x, int H, int W, int C, int oh, int OW,
                               int kh, int kw, int sh, int sw, int pt, int pb, int pl, int pr,
                               bint include_pad, floating* out, double* acc) noexcept nogil:
    # Double accumulators per channel (the calling thread's row of the work buffer);
    # the window is summed in NCHW's order, so both layouts give the same values.
    cdef int ow, h, w, c, h0, h1, w0, w1
    cdef double div
    cdef const floating* p
    h0 = max(oh * sh - pt, 0)
    h1 = min(oh * sh - pt + kh, H)
    for ow in range(OW):
        w0 = max(ow * sw - pl, 0)
        w1 = min(ow * sw - pl + kw, W)
        for c in range(C):
            acc[c] = 0
        for h in range(h0, h1):
            for w in range(w0, w1):
                p = x + (h * W + w) * C
                for c in range(C):
                    acc[c] = acc[c] + p[c]
        div = _divisor(oh, ow, H, W, kh, kw, sh, sw, pt, pb, pl, pr, include_pad)
        for c in range(C):
            out[ow * C + c] = <floating> (acc[c] / div)


cdef void avg_pool2d_nhwc_fwd(int N, int H, int W, int C, int OH, int OW,
                              int kh, int kw, int sh, int sw, int pt, int pb, int pl, int pr,
                              bint include_pad,
                              const floating* x,             # IN (N, H, W, C)
                              floating* out,                 # OUT (N, OH, OW, C)
                              double* work,                  # scratch (n_threads, C)
                              int n_threads) noexcept nogil:
    cdef int64_t r, n
    cdef int t
    cdef int64_t in_size = <int64_t> H * W * C, row = <int64_t> OW * C
    with parallel(num_threads=n_threads):
        t = threadid()
        for r in prange(<int64_t> N * OH, schedule="static"):
            n = r // OH
            _avg_row_nhwc(x + n * in_size, H, W, C, <int> (r % OH), OW, kh, kw, sh, sw,
                          pt, pb, pl, pr, include_pad, out + r * row, work + t * C)


cdef inline void _avg_sample_bwd_nhwc(const floating* g, int H, int W, int C, int OH, int OW,
                                      int kh, int kw, int sh, int sw, int pt, int pb, int pl,
                                      int pr, bint include_pad, floating* dx,
                                      floating* share) noexcept nogil:
    # share: the calling thread's C scratch values, g / divisor once per window (as NCHW's)
    cdef int oh, ow, h, w, c, h0, h1, w0, w1
    cdef floating div
    cdef const floating* gp
    cdef floating* d
    for oh in range(OH):
        h0 = max(oh * sh - pt, 0)
        h1 = min(oh * sh - pt + kh, H)
        for ow in range(OW):
            w0 = max(ow * sw - pl, 0)
            w1 = min(ow * sw - pl + kw, W)
            div = _divisor(oh, ow, H, W, kh, kw, sh, sw, pt, pb, pl, pr, include_pad)
            gp = g + (oh * OW + ow) * C
            for c in range(C):
                share[c] = gp[c] / div
            for h in range(h0, h1):
                for w in range(w0, w1):
                    d = dx + (h * W + w) * C
                    for c in range(C):
                        d[c] += share[c]


cdef void avg_pool2d_nhwc_bwd(int N, int H, int W, int C, int OH, int OW,
                              int kh, int kw, int sh, int sw, int pt, int pb, int pl, int pr,
                              bint include_pad,
                              const floating* grad,          # IN (N, OH, OW, C)
                              floating* dx,                  # INOUT (N, H, W, C), zeroed
                              floating* work,                # scratch (n_threads, C)
                              int n_threads) noexcept nogil:
    cdef int64_t n
    cdef int t
    with parallel(num_threads=n_threads):
        t = threadid()
        for n in prange(N, schedule="static"):
            _avg_sample_bwd_nhwc(grad + n * OH * OW * C, H, W, C, OH, OW, kh, kw, sh, sw,
                                 pt, pb, pl, pr, include_pad, dx + n * H * W * C, work + t * C)


cdef inline void _sample_mean_nhwc(int64_t L, int C, const floating* x,
                                   floating* out, double* acc) noexcept nogil:
    cdef int64_t l
    cdef int c
    cdef const floating* p
    for c in range(C):
        acc[c] = 0
    for l in range(L):
        p = x + l * C
        for c in range(C):
            acc[c] = acc[c] + p[c]
    for c in range(C):
        out[c] = <floating> (acc[c] / L)


cdef void global_avg_pool2d_nhwc_fwd(int64_t N, int64_t L, int C,
                                     const floating* x,      # IN (N, L, C)
                                     floating* out,          # OUT (N, C)
                                     double* work,           # scratch (n_threads, C)
                                     int n_threads) noexcept nogil:
    cdef int64_t n
    cdef int t
    with parallel(num_threads=n_threads):
        t = threadid()
        for n in prange(N, schedule="static"):
            _sample_mean_nhwc(L, C, x + n * L * C, out + n * C, work + t * C)


cdef inline void _spread_nhwc(int64_t L, int C, const floating* g, floating* dx) noexcept nogil:
    cdef int64_t l
    cdef int c
    for l in range(L):
        for c in range(C):
            dx[l * C + c] = g[c] / <floating> L


cdef void global_avg_pool2d_nhwc_bwd(int64_t N, int64_t L, int C,
                                     const floating* grad,   # IN (N, C)
                                     floating* dx,           # OUT (N, L, C)
                                     int n_threads) noexcept nogil:
    cdef int64_t n
    for n in prange(N, schedule="static", num_threads=n_threads):
        _spread_nhwc(L, C, grad + n * C, dx + n * L * C)


# ---------------------------------------------------------------------------------
# Python-visible wrappers.  They check what the nogil loops rely on (dtype, layout,
# window geometry); user-facing argument parsing lives in minnet.functional._pooling.

def _check_x(x):
    check_strided(x, "x")
    if x.ndim != 4:
        raise ValueError(f"Invalid argument `x`: expected a 4-D array (N, C, H, W) or "
                         f"(N, H, W, C). "
                         f"Received: shape={x.shape}")
    return np.ascontiguousarray(x)


def output_size(size, kernel, stride, pad_before, pad_after):
    """Number of windows along one axis: ``(size + pads - kernel) // stride + 1``."""
    return (size + pad_before + pad_after - kernel) // stride + 1


def _nchw(shape, channels_last):
    """``(N, C, H, W)`` of a 4-D shape in either layout."""
    N, a, b, c = (int(v) for v in shape)
    return (N, c, a, b) if channels_last else (N, a, b, c)


def _layout(N, C, H, W, channels_last):
    return (N, H, W, C) if channels_last else (N, C, H, W)


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
        (_max_fwd_nhwc if channels_last else _max_fwd)(x, out, idx, kh, kw, sh, sw, pt, pl,
                                                       max(1, int(n_threads)))
    return out, idx


def _max_fwd(const floating[:, :, :, ::1] x, floating[:, :, :, ::1] out,
             int32_t[:, :, :, ::1] idx, int kh, int kw, int sh, int sw, int pt, int pl, int nt):
    with nogil:
        max_pool2d_fwd(<int64_t> x.shape[0] * x.shape[1], x.shape[2], x.shape[3],
                       out.shape[2], out.shape[3], kh, kw, sh, sw, pt, pl,
                       &x[0, 0, 0, 0], &out[0, 0, 0, 0], &idx[0, 0, 0, 0], nt)


def _max_fwd_nhwc(const floating[:, :, :, ::1] x, floating[:, :, :, ::1] out,
                  int32_t[:, :, :, ::1] idx, int kh, int kw, int sh, int sw, int pt, int pl,
                  int nt):
    with nogil:
        max_pool2d_nhwc_fwd(x.shape[0], x.shape[1], x.shape[2], x.shape[3], out.shape[1],
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
    grad = _check_x(grad)
    N, C, H, W = _nchw(input_shape, channels_last)
    if (not isinstance(indices, np.ndarray) or indices.dtype != np.int32
            or indices.shape != grad.shape):
        raise ValueError(f"Invalid argument `indices`: expected an int32 array of shape "
                         f"{grad.shape}. Received: {getattr(indices, 'dtype', None)} "
                         f"{getattr(indices, 'shape', None)}")
    if _nchw(grad.shape, channels_last)[:2] != (N, C):
        raise ValueError(f"Invalid argument `input_shape`: expected (N, C) = "
                         f"{_nchw(grad.shape, channels_last)[:2]}. "
                         f"Received: input_shape={tuple(input_shape)}")
    indices = np.ascontiguousarray(indices)
    shape = _layout(N, C, H, W, channels_last)
    if not grad.size or not H * W:
        return np.zeros(shape, dtype=grad.dtype)
    dx = np.empty(shape, dtype=grad.dtype)              # every plane is zeroed by the kernel
    bad = (_max_bwd_nhwc if channels_last else _max_bwd)(grad, indices, dx, max(1, int(n_threads)))
    if bad:
        raise ValueError(f"Invalid argument `indices`: expected values in [0, {H * W}). "
                         f"Received {bad} value(s) outside it")
    return dx


def _max_bwd(const floating[:, :, :, ::1] g, const int32_t[:, :, :, ::1] idx,
             floating[:, :, :, ::1] dx, int nt):
    cdef int64_t bad
    with nogil:
        bad = max_pool2d_bwd(<int64_t> g.shape[0] * g.shape[1], dx.shape[2] * dx.shape[3],
                             g.shape[2] * g.shape[3], &g[0, 0, 0, 0], &idx[0, 0, 0, 0],
                             &dx[0, 0, 0, 0], nt)
    return bad


def _max_bwd_nhwc(const floating[:, :, :, ::1] g, const int32_t[:, :, :, ::1] idx,
                  floating[:, :, :, ::1] dx, int nt):
    cdef int64_t bad
    with nogil:
        bad = max_pool2d_nhwc_bwd(g.shape[0], dx.shape[1] * dx.shape[2], g.shape[1] * g.shape[2],
                                  g.shape[3], &g[0, 0, 0, 0], &idx[0, 0, 0, 0],
                                  &dx[0, 0, 0, 0], nt)
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
    kh, kw, sh, sw, pt, pb, pl, pr, OH, OW = _geometry(x, pool_size, strides, padding,
                                                       channels_last)
    N, C, H, W = _nchw(x.shape, channels_last)
    out = np.empty(_layout(N, C, OH, OW, channels_last), dtype=x.dtype)
    if out.size and channels_last:
        nt = max(1, int(n_threads))
        work = np.empty(nt * C, dtype=np.float64)
        _avg_fwd_nhwc(x, out, work, kh, kw, sh, sw, pt, pb, pl, pr,
                             bool(count_include_pad), nt)
    elif out.size:
        _avg_fwd(x, out, kh, kw, sh, sw, pt, pb, pl, pr, bool(count_include_pad),
                        max(1, int(n_threads)))
    return out


def _avg_fwd(const floating[:, :, :, ::1] x, floating[:, :, :, ::1] out, int kh, int kw,
             int sh, int sw, int pt, int pb, int pl, int pr, bint include_pad, int nt):
    with nogil:
        avg_pool2d_fwd(<int64_t> x.shape[0] * x.shape[1], x.shape[2], x.shape[3],
                       out.shape[2], out.shape[3], kh, kw, sh, sw, pt, pb, pl, pr,
                       include_pad, &x[0, 0, 0, 0], &out[0, 0, 0, 0], nt)


def _avg_fwd_nhwc(const floating[:, :, :, ::1] x, floating[:, :, :, ::1] out, double[::1] work,
                  int kh, int kw, int sh, int sw, int pt, int pb, int pl, int pr,
                  bint include_pad, int nt):
    with nogil:
        avg_pool2d_nhwc_fwd(x.shape[0], x.shape[1], x.shape[2], x.shape[3], out.shape[1],
                            out.shape[2], kh, kw, sh, sw, pt, pb, pl, pr, include_pad,
                            &x[0, 0, 0, 0], &out[0, 0, 0, 0], &work[0], nt)


# Alike (duplicates): avg_pool2d_forward and avg_pool2d_backward check and derive the same
# window geometry and allocate the same per-thread work buffer for the NHWC kernel; the
# two directions call different kernels with different shapes, so each keeps its lines.
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
    grad = _check_x(grad)
    N, C, H, W = _nchw(input_shape, channels_last)
    dx = np.zeros(_layout(N, C, H, W, channels_last), dtype=grad.dtype)
    kh, kw, sh, sw, pt, pb, pl, pr, OH, OW = _geometry(dx, pool_size, strides, padding,
                                                       channels_last)
    if grad.shape != _layout(N, C, OH, OW, channels_last):
        raise ValueError(f"Invalid argument `grad`: expected shape "
                         f"{_layout(N, C, OH, OW, channels_last)}. Received: shape={grad.shape}")
    if grad.size and channels_last:
        nt = max(1, int(n_threads))
        work = np.empty(nt * C, dtype=grad.dtype)
        _avg_bwd_nhwc(grad, dx, work, kh, kw, sh, sw, pt, pb, pl, pr,
                             bool(count_include_pad), nt)
    elif grad.size:
        _avg_bwd(grad, dx, kh, kw, sh, sw, pt, pb, pl, pr, bool(count_include_pad),
                        max(1, int(n_threads)))
    return dx


def _avg_bwd(const floating[:, :, :, ::1] g, floating[:, :, :, ::1] dx, int kh, int kw,
             int sh, int sw, int pt, int pb, int pl, int pr, bint include_pad, int nt):
    with nogil:
        avg_pool2d_bwd(<int64_t> g.shape[0] * g.shape[1], dx.shape[2], dx.shape[3],
                       g.shape[2], g.shape[3], kh, kw, sh, sw, pt, pb, pl, pr,
                       include_pad, &g[0, 0, 0, 0], &dx[0, 0, 0, 0], nt)


def _avg_bwd_nhwc(const floating[:, :, :, ::1] g, floating[:, :, :, ::1] dx,
                  floating[::1] work, int kh, int kw, int sh, int sw, int pt, int pb, int pl,
                  int pr, bint include_pad, int nt):
    with nogil:
        avg_pool2d_nhwc_bwd(g.shape[0], dx.shape[1], dx.shape[2], dx.shape[3], g.shape[1],
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
    if out.size and channels_last:
        nt = max(1, int(n_threads))
        work = np.empty(nt * C, dtype=np.float64)
        _gap_fwd_nhwc(x.reshape(N, H * W, C), out, work, nt)
    elif out.size:
        _gap_fwd(x.reshape(N * C, H * W), out.reshape(-1), max(1, int(n_threads)))
    return out


def _gap_fwd(const floating[:, ::1] x, floating[::1] out, int nt):
    with nogil:
        global_avg_pool2d_fwd(x.shape[0], x.shape[1], &x[0, 0], &out[0], nt)


def _gap_fwd_nhwc(const floating[:, :, ::1] x, floating[:, ::1] out, double[::1] work, int nt):
    with nogil:
        global_avg_pool2d_nhwc_fwd(x.shape[0], x.shape[1], x.shape[2], &x[0, 0, 0], &out[0, 0],
                                   &work[0], nt)


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
    if (not isinstance(grad, np.ndarray) or grad.dtype not in (np.float32, np.float64)
            or grad.shape != (N, C)):
        raise ValueError(f"Invalid argument `grad`: expected a float array of shape {(N, C)}. "
                         f"Received: {getattr(grad, 'dtype', type(grad).__name__)} "
                         f"{getattr(grad, 'shape', '')}")
    grad = np.ascontiguousarray(grad)
    dx = np.empty(_layout(N, C, H, W, channels_last), dtype=grad.dtype)
    if dx.size and channels_last:
        _gap_bwd_nhwc(grad, dx.reshape(N, H * W, C), max(1, int(n_threads)))
    elif dx.size:
        _gap_bwd(grad.reshape(-1), dx.reshape(N * C, H * W), max(1, int(n_threads)))
    return dx


def _gap_bwd(const floating[::1] g, floating[:, ::1] dx, int nt):
    with nogil:
        global_avg_pool2d_bwd(dx.shape[0], dx.shape[1], &g[0], &dx[0, 0], nt)


def _gap_bwd_nhwc(const floating[:, ::1] g, floating[:, :, ::1] dx, int nt):
    with nogil:
        global_avg_pool2d_nhwc_bwd(dx.shape[0], dx.shape[1], dx.shape[2], &g[0, 0], &dx[0, 0, 0],
                                   nt)
