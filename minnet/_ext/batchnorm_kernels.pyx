"""Batch normalisation kernels: per-channel statistics, the affine normalisation, backward.

Every kernel sees the input as ``(N, C, L)``: ``L = H*W`` for images (NCHW) and
``L = 1`` for ``(N, C)`` features.  Statistics are taken per channel over the
``M = N*L`` values of that channel, always with ``double`` accumulators.

Two ways to split the work over threads, chosen by shape:

* "by channel" (``C >= n_threads`` and planes of ``L >= 16``): each thread owns whole
  channels, nothing is shared, and the result does not depend on the thread count.
  The statistics then need one pass over memory: each (n, c) plane (a few KB) is
  reduced two-pass while it sits in L1 cache, and the planes' (count, mean, M2) are
  merged with Chan's formula (no E[x^2] - E[x]^2 cancellation).
* "by sample" (otherwise, e.g. ``(N, C)`` input or few channels): threads take samples
  and accumulate per-thread partial sums in a ``(n_threads, C)`` buffer, reduced after
  the parallel loop; the variance is a second pass around the mean (two-pass).

Channels-last input (NHWC images, or any array whose channel axis is the last one) is
seen as ``(M, C)`` rows (``channels_last=True`` in the wrappers).  Its statistics have
kernels of their own: the rows are cut into fixed chunks of ``_CHUNK_ROWS``, each chunk's
per-channel partial sums (double, vectorised over the contiguous channels) go to its own
row of a work buffer, and the partials are added in chunk order.  The chunking does not
depend on the thread count, so neither do the results.  The elementwise passes serve
both layouts: the rows are the ``(N, C, L)`` input with ``L = 1``.

In training, "by channel" also fuses each channel's two passes into one parallel region
(``batch_norm_forward_training``: statistics then normalisation; ``batch_norm_backward_training``:
the two sums then dx), which halves the thread synchronisations and re-reads the
channel from cache.
"""
from cython.parallel cimport prange, threadid
from libc.math cimport sqrt
from libc.stdint cimport int64_t

from minnet._ext._base cimport check_strided, team
from minnet._ext._blas cimport floating
from minnet._ext._fastmath cimport sum4

import math

import numpy as np

cdef enum:
    _MIN_PLANE = 16     # planes this long make "by channel" worth it
    _CHUNK_ROWS = 128   # rows per partial sum of the (M, C) kernels: fixed, not per thread
    _BLOCK = 64         # channels per pass of the (M, C) sums (local accumulators)


cdef inline bint _by_channel(int64_t C, int64_t L, int n_threads) noexcept nogil:
    return L >= _MIN_PLANE and C >= n_threads


# --------------------------------------------------------------------- statistics

cdef inline void _plane_mean_m2(int64_t L, const floating* p, double* mean,
                                double* m2) noexcept nogil:
    # Two-pass over one (n, c) plane, which is in cache after the first pass.  Four
    # independent accumulators: a single running sum is bound by the add latency.
    cdef int64_t l, L4 = L - L % 4
    cdef double s0 = 0, s1 = 0, s2 = 0, s3 = 0, mu = sum4(p, L) / L, d0, d1, d2, d3
    for l in range(0, L4, 4):
        d0 = p[l] - mu
        d1 = p[l + 1] - mu
        d2 = p[l + 2] - mu
        d3 = p[l + 3] - mu
        s0 += d0 * d0
        s1 += d1 * d1
        s2 += d2 * d2
        s3 += d3 * d3
    for l in range(L4, L):
        d0 = p[l] - mu
        s0 += d0 * d0
    mean[0] = mu
    m2[0] = (s0 + s1) + (s2 + s3)


cdef inline double _channel_mean_m2(int64_t N, int64_t C, int64_t L,
                                    const floating* x,          # IN (N, C, L)
                                    int64_t c,
                                    double* m2_out) noexcept nogil:
    """Mean and M2 (sum of squared deviations) of channel ``c`` over its N planes.

    Chan et al.'s merge of (count, mean, M2), one plane at a time.  A function of its own
    so that every accumulator is local to the calling thread: inside ``prange`` a variable
    written only through its address would be shared by the whole team.
    """
    cdef int64_t n
    cdef double pm = 0, pq = 0, mu = 0, m2 = 0, count = 0, delta
    for n in range(N):
        _plane_mean_m2(L, x + (n * C + c) * L, &pm, &pq)
        delta = pm - mu
        mu = mu + delta * L / (count + L)
        m2 = m2 + pq + delta * delta * count * L / (count + L)
        count = count + L
    m2_out[0] = m2
    return mu


cdef inline void _plane_grad_sums(int64_t L, const floating* g, const floating* x, double mu,
                                  double* sum_g, double* dot) noexcept nogil:
    # sum(g) and sum(g * (x - mu)) over one plane, four accumulators each.
    cdef int64_t l, L4 = L - L % 4
    cdef double a0 = 0, a1 = 0, a2 = 0, a3 = 0, b0 = 0, b1 = 0, b2 = 0, b3 = 0
    for l in range(0, L4, 4):
        a0 += g[l]
        a1 += g[l + 1]
        a2 += g[l + 2]
        a3 += g[l + 3]
        b0 += g[l] * (x[l] - mu)
        b1 += g[l + 1] * (x[l + 1] - mu)
        b2 += g[l + 2] * (x[l + 2] - mu)
        b3 += g[l + 3] * (x[l + 3] - mu)
    for l in range(L4, L):
        a0 += g[l]
        b0 += g[l] * (x[l] - mu)
    sum_g[0] += (a0 + a1) + (a2 + a3)
    dot[0] += (b0 + b1) + (b2 + b3)


cdef void _sample_sums(int64_t N, int64_t C, int64_t L, const floating* x, const double* center,
                      double* work, double* out, double M, int n_threads) noexcept nogil:
    # "By sample": out[c] = the sum over channel c of x (center NULL) or of (x - center[c])^2,
    # divided by M; per-thread partial sums in work (n_threads, C), reduced in thread order.
    cdef int64_t c, n, l, k, t
    cdef double d, s
    cdef const floating* row
    for k in range(n_threads * C):
        work[k] = 0
    for n in prange(N, schedule="static", num_threads=n_threads):
        t = threadid()
        for c in range(C):
            row = x + (n * C + c) * L
            s = 0
            if center == NULL:
                for l in range(L):
                    s = s + row[l]
            else:
                for l in range(L):
                    d = row[l] - center[c]
                    s = s + d * d
            work[t * C + c] += s
    for c in range(C):
        s = 0
        for k in range(n_threads):
            s = s + work[k * C + c]
        out[c] = s / M


cdef void bn_stats(int64_t N, int64_t C, int64_t L,
                   const floating* x,                      # IN (N, C, L)
                   double* mean,                           # OUT (C,)
                   double* var,                            # OUT (C,) biased variance
                   double* work,                           # scratch (n_threads, C)
                   int n_threads) noexcept nogil:
    """Per-channel mean and biased variance over the N*L values of each channel."""
    cdef int64_t c
    cdef double M = <double> N * L
    if _by_channel(C, L, n_threads):
        for c in prange(C, schedule="static", num_threads=n_threads):
            mean[c] = _channel_mean_m2(N, C, L, x, c, &var[c])
            var[c] = var[c] / M
        return
    # "By sample", two-pass: the mean, then the squared deviations around it.
    _sample_sums(N, C, L, x, NULL, work, mean, M, n_threads)
    _sample_sums(N, C, L, x, mean, work, var, M, n_threads)


cdef void bn_grad_sums(int64_t N, int64_t C, int64_t L,
                       const floating* grad,               # IN (N, C, L)
                       const floating* x,                  # IN (N, C, L)
                       const double* mean,                 # IN (C,)
                       double* sum_g,                      # OUT (C,) sum of grad
                       double* dot,                        # OUT (C,) sum of grad * (x - mean)
                       double* work,                       # scratch (n_threads, 2 * C)
                       int n_threads) noexcept nogil:
    """Per-channel sum(g) and sum(g * (x - mean)): the two reductions of the backward."""
    cdef int64_t c, n, k, t
    cdef double sg, sd
    if _by_channel(C, L, n_threads):
        bn_backward_train_by_channel(N, C, L, grad, x, mean, NULL, NULL, False, NULL, sum_g, dot,
                                     n_threads)
        return
    for k in range(n_threads * 2 * C):
        work[k] = 0
    for n in prange(N, schedule="static", num_threads=n_threads):
        t = threadid()
        for c in range(C):
            sg = 0
            sd = 0
            _plane_grad_sums(L, grad + (n * C + c) * L, x + (n * C + c) * L, mean[c],
                             &sg, &sd)
            work[t * 2 * C + c] += sg
            work[t * 2 * C + C + c] += sd
    for c in range(C):
        sg = 0
        sd = 0
        for k in range(n_threads):
            sg = sg + work[k * 2 * C + c]
            sd = sd + work[k * 2 * C + C + c]
        sum_g[c] = sg
        dot[c] = sd


# ------------------------------------------------------------- elementwise passes
# L == 1 (features, and the (M, C) rows of channels-last input): rows in fixed chunks of
# _CHUNK_ROWS, the inner loop over the contiguous channels; the same arithmetic per element.

cdef inline int64_t _n_chunks(int64_t M) noexcept nogil:
    return (M + _CHUNK_ROWS - 1) // _CHUNK_ROWS


cdef inline void _affine_rows(int64_t r0, int64_t r1, int64_t C, const floating* x,
                              const floating* a, const floating* b,
                              floating* out) noexcept nogil:
    cdef int64_t r, c
    for r in range(r0, r1):
        for c in range(C):
            out[r * C + c] = x[r * C + c] * a[c] + b[c]


cdef inline void _dx_rows(int64_t r0, int64_t r1, int64_t C, const floating* g,
                          const floating* x, const floating* mu, const floating* mean_g,
                          const floating* proj, const floating* k,
                          floating* dx) noexcept nogil:
    cdef int64_t r, c, i
    for r in range(r0, r1):
        for c in range(C):
            i = r * C + c
            dx[i] = (g[i] - mean_g[c] - (x[i] - mu[c]) * proj[c]) * k[c]


cdef inline void _pass_rows(int64_t r0, int64_t r1, int64_t C, const floating* g,
                            const floating* x, const floating* k0, const floating* k1,
                            const floating* k2, const floating* k3, floating* out) noexcept nogil:
    # rows r0..r1 of the elementwise pass (k0..k3 as in bn_elementwise)
    if g == NULL:
        _affine_rows(r0, r1, C, x, k0, k1, out)
    else:
        _dx_rows(r0, r1, C, g, x, k0, k1, k2, k3, out)


cdef inline void _affine_plane(int64_t L, const floating* x, floating a, floating b,
                               floating* out) noexcept nogil:
    cdef int64_t l
    for l in range(L):
        out[l] = x[l] * a + b


cdef inline void _dx_plane(int64_t L, const floating* g, const floating* x, floating mu,
                           floating mean_g, floating proj, floating k,
                           floating* dx) noexcept nogil:
    cdef int64_t l
    for l in range(L):
        dx[l] = (g[l] - mean_g - (x[l] - mu) * proj) * k


cdef inline void _pass_plane(int64_t L, int64_t off, int64_t c, const floating* g,
                             const floating* x, const floating* k0, const floating* k1,
                             const floating* k2, const floating* k3, floating* out) noexcept nogil:
    # the plane of channel c at offset off (k0..k3 as in bn_elementwise)
    if g == NULL:
        _affine_plane(L, x + off, k0[c], k1[c], out + off)
    else:
        _dx_plane(L, g + off, x + off, k0[c], k1[c], k2[c], k3[c], out + off)


cdef void bn_elementwise(int64_t N, int64_t C, int64_t L,
                         const floating* grad,             # IN (N, C, L), or NULL: the affine pass
                         const floating* x,                # IN (N, C, L)
                         const floating* k0,               # IN (C,) alpha, or mean
                         const floating* k1,               # IN (C,) beta, or mean_g
                         const floating* k2,               # IN (C,) unused, or proj
                         const floating* k3,               # IN (C,) unused, or k
                         floating* out,                    # OUT (N, C, L)
                         int n_threads) noexcept nogil:
    """The elementwise passes with per-channel constants k0..k3.

    ``grad`` NULL: out = x * alpha[c] + beta[c] (normalise, scale and shift in one).
    Else:          dx = (g - mean_g[c] - (x - mean[c]) * proj[c]) * k[c].
    """
    cdef int64_t p, n, c, b
    if L == 1:
        for b in prange(_n_chunks(N), schedule="static", num_threads=n_threads):
            _pass_rows(b * _CHUNK_ROWS, min(N, (b + 1) * _CHUNK_ROWS), C, grad, x, k0, k1, k2, k3,
                       out)
    elif N >= n_threads or L < _MIN_PLANE:
        for n in prange(N, schedule="static", num_threads=n_threads):
            for c in range(C):
                _pass_plane(L, (n * C + c) * L, c, grad, x, k0, k1, k2, k3, out)
    else:
        for p in prange(N * C, schedule="static", num_threads=n_threads):
            _pass_plane(L, p * L, p % C, grad, x, k0, k1, k2, k3, out)


# ------------------------------------------------ fused per-channel passes (training)
# When threads own whole channels, a channel's statistics and its elementwise pass run
# back to back in the same thread: one parallel region instead of two, and the second
# read of the channel (N*L values, a few hundred KB) mostly comes from L2, not DRAM.

cdef void bn_forward_train_by_channel(int64_t N, int64_t C, int64_t L,
                                      const floating* x,          # IN (N, C, L)
                                      const double* gamma,        # IN (C,)
                                      const double* beta,         # IN (C,)
                                      double eps,
                                      floating* out,              # OUT (N, C, L)
                                      double* mean,               # OUT (C,)
                                      double* var,                # OUT (C,) biased
                                      int n_threads) noexcept nogil:
    """Statistics of channel c, then out = x * a_c + b_c, per channel in one region."""
    cdef int64_t c, n
    cdef double mu, inv, a
    cdef double M = <double> N * L
    for c in prange(C, schedule="static", num_threads=n_threads):
        # var[c] receives M2 through its address (shared memory, one element per
        # channel, so no two threads touch it); every local is assigned directly
        mu = _channel_mean_m2(N, C, L, x, c, &var[c])
        mean[c] = mu
        var[c] = var[c] / M
        inv = 1.0 / sqrt(var[c] + eps)
        a = gamma[c] * inv
        for n in range(N):
            _affine_plane(L, x + (n * C + c) * L, <floating> a, <floating> (beta[c] - mu * a),
                          out + (n * C + c) * L)


cdef void bn_backward_train_by_channel(int64_t N, int64_t C, int64_t L,
                                       const floating* grad,      # IN (N, C, L)
                                       const floating* x,         # IN (N, C, L)
                                       const double* mean,        # IN (C,)
                                       const double* inv_std,     # IN (C,)
                                       const double* gamma,       # IN (C,)
                                       bint need_dx,
                                       floating* dx,              # OUT (N, C, L) if need_dx
                                       double* sum_g,             # OUT (C,)
                                       double* dot,               # OUT (C,)
                                       int n_threads) noexcept nogil:
    """Per channel: sum(g), sum(g (x - mean)), then dx of that channel."""
    cdef int64_t c, n
    cdef double sg, sd, inv
    cdef double M = <double> N * L
    for c in prange(C, schedule="static", num_threads=n_threads):
        sg = 0
        sd = 0
        for n in range(N):
            _plane_grad_sums(L, grad + (n * C + c) * L, x + (n * C + c) * L, mean[c], &sg, &sd)
        sum_g[c] = sg
        dot[c] = sd
        if need_dx:
            inv = inv_std[c]
            for n in range(N):
                _dx_plane(L, grad + (n * C + c) * L, x + (n * C + c) * L, <floating> mean[c],
                          <floating> (sg / M), <floating> (sd * inv * inv / M),
                          <floating> (gamma[c] * inv), dx + (n * C + c) * L)


# ------------------------------------------------------- channels-last (M, C) kernels

cdef inline void _chunk_sums(int64_t r0, int64_t r1, int64_t C, const floating* x,
                             const double* center, double* acc) noexcept nogil:
    # acc[c] = sum over rows r0..r1 of x[r, c] (center NULL) or of (x[r, c] - center[c])^2.
    # Up to _BLOCK channels at a time in a local array (the compiler knows it does not alias
    # x, keeps the row loop's inner channel loop vectorised, and the rows are read whole and
    # contiguously: one pass over the chunk per block instead of one per 8 channels).  Each
    # channel is still summed row by row, in order, from zero: the same sums as before.
    cdef double s[_BLOCK]
    cdef double m[_BLOCK]
    cdef int64_t r, c0, q, nb
    cdef double d
    cdef const floating* p
    for c0 in range(0, C, 64):                # 64 = _BLOCK (range needs a literal step)
        nb = min(C - c0, _BLOCK)
        for q in range(nb):
            s[q] = 0
        if center == NULL:
            for r in range(r0, r1):
                p = x + r * C + c0
                for q in range(nb):
                    s[q] = s[q] + p[q]
        else:
            for q in range(nb):
                m[q] = center[c0 + q]
            for r in range(r0, r1):
                p = x + r * C + c0
                for q in range(nb):
                    d = p[q] - m[q]
                    s[q] = s[q] + d * d
        for q in range(nb):
            acc[c0 + q] = s[q]


cdef inline void _chunk_mean_m2(int64_t r0, int64_t r1, int64_t C, const floating* x,
                                double* mean, double* m2) noexcept nogil:
    # Two-pass over one chunk while it sits in cache: mean, then sum of squared deviations.
    cdef int64_t c
    _chunk_sums(r0, r1, C, x, NULL, mean)
    for c in range(C):
        mean[c] = mean[c] / (r1 - r0)
    _chunk_sums(r0, r1, C, x, mean, m2)


cdef void bn_stats_rows(int64_t M, int64_t C,
                        const floating* x,                 # IN (M, C)
                        double* mean,                      # OUT (C,)
                        double* var,                       # OUT (C,) biased variance
                        double* work,                      # scratch (n_chunks, 2 * C)
                        int n_threads) noexcept nogil:
    """Per-channel mean and biased variance in one read of ``x``.

    Each fixed chunk of rows is reduced two-pass in cache to (mean, M2); the chunks are
    then merged in chunk order with Chan's formula (no E[x^2] - E[x]^2 cancellation).
    """
    cdef int64_t k, c, n0, n1, K = _n_chunks(M)
    cdef double delta, n
    for k in prange(K, schedule="static", num_threads=n_threads):
        _chunk_mean_m2(k * _CHUNK_ROWS, min(M, (k + 1) * _CHUNK_ROWS), C, x,
                       work + k * 2 * C, work + k * 2 * C + C)
    for c in range(C):
        mean[c] = work[c]
        var[c] = work[C + c]
    for k in range(1, K):
        n0 = k * _CHUNK_ROWS                               # rows merged so far
        n1 = min(M, (k + 1) * _CHUNK_ROWS) - n0            # rows of chunk k
        n = <double> (n0 + n1)
        for c in range(C):
            delta = work[k * 2 * C + c] - mean[c]
            mean[c] = mean[c] + delta * n1 / n
            var[c] = var[c] + work[k * 2 * C + C + c] + delta * delta * (<double> n0) * n1 / n
    for c in range(C):
        var[c] = var[c] / M


cdef inline void _chunk_grad_sums(int64_t r0, int64_t r1, int64_t C, const floating* g,
                                  const floating* x, const double* mean,
                                  double* acc) noexcept nogil:
    # acc[0:C] = sum g, acc[C:2C] = sum g * (x - mean) over rows r0..r1; up to _BLOCK
    # channels at a time in local arrays (see _chunk_sums), each summed row by row in order.
    cdef double a[_BLOCK]
    cdef double b[_BLOCK]
    cdef double m[_BLOCK]
    cdef int64_t r, c0, q, nb
    cdef const floating* pg
    cdef const floating* px
    for c0 in range(0, C, 64):                # 64 = _BLOCK (range needs a literal step)
        nb = min(C - c0, _BLOCK)
        for q in range(nb):
            a[q] = 0
            b[q] = 0
            m[q] = mean[c0 + q]
        for r in range(r0, r1):
            pg = g + r * C + c0
            px = x + r * C + c0
            for q in range(nb):
                a[q] = a[q] + pg[q]
                b[q] = b[q] + pg[q] * (px[q] - m[q])
        for q in range(nb):
            acc[c0 + q] = a[q]
            acc[C + c0 + q] = b[q]


cdef void bn_grad_sums_rows(int64_t M, int64_t C,
                            const floating* grad,          # IN (M, C)
                            const floating* x,             # IN (M, C)
                            const double* mean,            # IN (C,)
                            double* sum_g,                 # OUT (C,)
                            double* dot,                   # OUT (C,)
                            double* work,                  # scratch (n_chunks, 2 * C)
                            int n_threads) noexcept nogil:
    """Per-channel sum(g) and sum(g * (x - mean)), partial sums per fixed chunk."""
    cdef int64_t k, c, K = _n_chunks(M)
    for k in prange(K, schedule="static", num_threads=n_threads):
        _chunk_grad_sums(k * _CHUNK_ROWS, min(M, (k + 1) * _CHUNK_ROWS), C, grad, x, mean,
                         work + k * 2 * C)
    for c in range(C):
        sum_g[c] = 0
        dot[c] = 0
    for k in range(K):
        for c in range(C):
            sum_g[c] += work[k * 2 * C + c]
            dot[c] += work[k * 2 * C + C + c]


# ---------------------------------------------------------------------------------
# Python-visible wrappers: validate, view as (N, C, L), allocate outputs.

def _as_channels(name, arr, channels_last=False):
    """``arr`` as ``(N, C, L)``, or as its ``(M, C)`` rows when the channel axis is the last one."""
    check_strided(arr, name)
    if arr.ndim < 2:
        raise ValueError(f"Invalid argument `{name}`: expected an array of shape (N, C) or "
                         f"{'(N, H, W, C)' if channels_last else '(N, C, H, W)'}. Received: shape={arr.shape}")
    arr = np.ascontiguousarray(arr)
    if channels_last:     # no negative indices: wraparound is off in this module
        return arr.reshape(math.prod(arr.shape[:arr.ndim - 1]), arr.shape[arr.ndim - 1])
    L = math.prod(arr.shape[2:])       # Python ints: np.prod is slower on a small tuple (bench_norm_dropout_pool.py)
    return arr.reshape(arr.shape[0], arr.shape[1], L)


def _per_channel(name, values, C, dtype):
    out = np.ascontiguousarray(values, dtype=dtype)
    if out.shape != (C,):
        raise ValueError(f"Invalid argument `{name}`: expected shape ({C},). "
                         f"Received: shape={out.shape}")
    return out


def _threads(n_threads, size):
    return team(size, int(n_threads))


def _grad_and_input(grad, x, channels_last=False):
    """``(x, grad)`` as (N, C, L) views, or (M, C) rows, checked to have the same shape and dtype."""
    xv = _as_channels("x", x, channels_last)
    gv = _as_channels("grad", grad, channels_last)
    if (np.shape(grad) != np.shape(x) if channels_last else gv.shape != xv.shape) or gv.dtype != xv.dtype:
        raise ValueError(f"Invalid argument `grad`: expected shape {np.shape(x)} and dtype "
                         f"{xv.dtype}. Received: shape={np.shape(grad)}, dtype={gv.dtype}")
    return xv, gv


def _planes(a, channels_last):
    """The (N, C, L) view every kernel takes: (M, C) rows are (M, C, L = 1)."""
    return a.reshape(a.shape + (1,)) if channels_last else a


def _work(x, int nt, bint rows):
    # the scratch of the sums: (n_chunks, 2 * C) for the rows, else (n_threads, 2 * C)
    return np.empty(_n_chunks(x.shape[0]) * 2 * x.shape[1] if rows else 2 * nt * x.shape[1] + 1,
                    dtype=np.float64)


def batch_norm_stats(x, n_threads=1, channels_last=False):
    """Per-channel mean and biased variance (double accumulators).

    Args:
        x: float32/float64 array (N, C) or (N, C, H, W).
        n_threads: OpenMP threads.
        channels_last: the channel axis is the last one ((N, H, W, C) images); the result
            does not depend on ``n_threads``.

    Returns:
        ``(mean, var)``: float64 arrays of shape (C,); ``var`` divides by M = N*H*W.

    Shape:
        x: (N, C) or (N, C, H, W); mean, var: (C,)
    """
    xv = _as_channels("x", x, channels_last)
    mean, var = np.empty(xv.shape[1], dtype=np.float64), np.empty(xv.shape[1], dtype=np.float64)
    if xv.size:
        _stats(_planes(xv, channels_last), mean, var, _threads(n_threads, xv.size), channels_last)
    else:
        mean[:] = var[:] = np.nan
    return mean, var


def _stats(const floating[:, :, ::1] x, double[::1] mean, double[::1] var, int nt, bint rows):
    cdef double[::1] work = _work(x, nt, rows)
    with nogil:
        if rows:
            bn_stats_rows(x.shape[0], x.shape[1], &x[0, 0, 0], &mean[0], &var[0], &work[0], nt)
        else:
            bn_stats(x.shape[0], x.shape[1], x.shape[2], &x[0, 0, 0], &mean[0], &var[0],
                     &work[0], nt)


def batch_norm_affine(x, alpha, beta, n_threads=1, channels_last=False):
    """``out = x * alpha[c] + beta[c]`` per channel.

    Args:
        x: float32/float64 array (N, C) or (N, C, H, W).
        alpha, beta: per-channel (C,) values (cast to x's dtype).
        n_threads: OpenMP threads.

        channels_last: the channel axis is the last one.

    Returns:
        An array like ``x``.

    Shape:
        x: (N, C, *); alpha, beta: (C,); returns (N, C, *)
    """
    return _elementwise(None, x, (("alpha", alpha), ("beta", beta)), n_threads, channels_last)


def batch_norm_grad_sums(grad, x, mean, n_threads=1, channels_last=False):
    """Per-channel ``sum(grad)`` and ``sum(grad * (x - mean))`` (double accumulators).

    Args:
        grad, x: arrays of the same shape and dtype, (N, C) or (N, C, H, W).
        mean: per-channel mean (C,), float64.
        n_threads: OpenMP threads.

        channels_last: the channel axis is the last one (result independent of n_threads).

    Returns:
        ``(sum_g, dot)``: float64 arrays of shape (C,).

    Shape:
        grad, x: (N, C, *); mean, sum_g, dot: (C,)
    """
    xv, gv = _grad_and_input(grad, x, channels_last)
    C = xv.shape[1]
    m = _per_channel("mean", mean, C, np.float64)
    sum_g, dot = np.zeros(C, dtype=np.float64), np.zeros(C, dtype=np.float64)
    if xv.size:
        _grad_sums(_planes(gv, channels_last), _planes(xv, channels_last), m, sum_g, dot,
                   _threads(n_threads, xv.size), channels_last)
    return sum_g, dot


def _grad_sums(const floating[:, :, ::1] g, const floating[:, :, ::1] x, const double[::1] m,
               double[::1] sum_g, double[::1] dot, int nt, bint rows):
    cdef double[::1] work = _work(x, nt, rows)
    with nogil:
        if rows:
            bn_grad_sums_rows(x.shape[0], x.shape[1], &g[0, 0, 0], &x[0, 0, 0], &m[0], &sum_g[0],
                              &dot[0], &work[0], nt)
        else:
            bn_grad_sums(x.shape[0], x.shape[1], x.shape[2], &g[0, 0, 0], &x[0, 0, 0], &m[0],
                         &sum_g[0], &dot[0], &work[0], nt)


def batch_norm_backward_input(grad, x, mean, mean_g, proj, k, n_threads=1, channels_last=False):
    """``dx = (grad - mean_g[c] - (x - mean[c]) * proj[c]) * k[c]``.

    In training ``mean_g = sum(g)/M``, ``proj = dot * inv_std**2 / M`` and
    ``k = gamma * inv_std``; in eval mode ``mean_g = proj = 0``.

    Args:
        grad, x: arrays of the same shape and dtype, (N, C) or (N, C, H, W).
        mean, mean_g, proj, k: per-channel (C,) constants (cast to x's dtype).
        n_threads: OpenMP threads.

        channels_last: the channel axis is the last one.

    Returns:
        ``dx``, an array like ``x``.

    Shape:
        grad, x, dx: (N, C, *); the constants: (C,)
    """
    return _elementwise(grad, x, (("mean", mean), ("mean_g", mean_g), ("proj", proj), ("k", k)),
                        n_threads, channels_last)


def _elementwise(grad, x, consts, n_threads, channels_last):
    """bn_elementwise on ``x`` (and ``grad`` unless None) with the per-channel ``consts``."""
    xv, gv = _grad_and_input(grad, x, channels_last) if grad is not None else \
        (_as_channels("x", x, channels_last), None)
    k = [_per_channel(name, v, xv.shape[1], xv.dtype) for name, v in consts] * 2   # k0..k3
    xv = _planes(xv, channels_last)
    out = np.empty_like(xv)
    if xv.size:
        _pass(xv if gv is None else _planes(gv, channels_last), xv, k[0], k[1], k[2], k[3], out,
              _threads(n_threads, xv.size), gv is not None)
    return out.reshape(np.shape(x))


def _pass(const floating[:, :, ::1] g, const floating[:, :, ::1] x, const floating[::1] k0,
          const floating[::1] k1, const floating[::1] k2, const floating[::1] k3,
          floating[:, :, ::1] out, int nt, bint with_grad):
    with nogil:
        bn_elementwise(x.shape[0], x.shape[1], x.shape[2], &g[0, 0, 0] if with_grad else NULL,
                       &x[0, 0, 0], &k0[0], &k1[0], &k2[0], &k3[0], &out[0, 0, 0], nt)


def batch_norm_forward_training(x, weight, bias, eps, n_threads=1, channels_last=False):
    """Training forward: batch statistics and ``out = (x - mean) * inv_std * weight + bias``.

    Uses one fused parallel pass per channel when threads own whole channels, else
    ``batch_norm_stats`` followed by ``batch_norm_affine``; the results are the same.

    Args:
        x: float32/float64 array (N, C) or (N, C, H, W).
        weight, bias: per-channel (C,) gamma and beta (taken as float64).
        eps: added to the variance.
        n_threads: OpenMP threads.

        channels_last: the channel axis is the last one: the (M, C) kernels, statistics
            then the affine pass.

    Returns:
        ``(out, mean, var)``: ``out`` like ``x``; float64 ``mean`` and biased ``var`` (C,).

    Shape:
        x, out: (N, C, *); weight, bias, mean, var: (C,)
    """
    xv = _as_channels("x", x, channels_last)
    C = xv.shape[1]
    nt = _threads(n_threads, xv.size)
    gamma = _per_channel("weight", weight, C, np.float64)
    beta = _per_channel("bias", bias, C, np.float64)
    if channels_last or not (_by_channel(C, xv.shape[2], nt) and xv.size):
        mean, var = batch_norm_stats(xv, nt, channels_last)
        scale = gamma / np.sqrt(var + eps)
        out = batch_norm_affine(xv, scale, beta - mean * scale, nt, channels_last)
        return out.reshape(np.shape(x)), mean, var
    out = np.empty_like(xv)
    mean = np.empty(C, dtype=np.float64)
    var = np.empty(C, dtype=np.float64)
    _fwd_train(xv, gamma, beta, float(eps), out, mean, var, nt)
    return out.reshape(np.shape(x)), mean, var


def _fwd_train(const floating[:, :, ::1] x, const double[::1] gamma, const double[::1] beta,
               double eps, floating[:, :, ::1] out, double[::1] mean, double[::1] var, int nt):
    with nogil:
        bn_forward_train_by_channel(x.shape[0], x.shape[1], x.shape[2], &x[0, 0, 0], &gamma[0],
                                    &beta[0], eps, &out[0, 0, 0], &mean[0], &var[0], nt)


def batch_norm_backward_training(grad, x, mean, inv_std, weight, need_dx=True, n_threads=1,
                                 channels_last=False):
    """Training backward: ``(dx, sum_g, dot)`` with ``sum_g = sum(g)``, ``dot = sum(g (x - mean))``.

    ``dx = (g - sum_g/M - (x - mean) * dot * inv_std**2 / M) * weight * inv_std``; one fused
    parallel pass per channel when threads own whole channels.

    Args:
        grad, x: arrays of the same shape and dtype, (N, C) or (N, C, H, W).
        mean, inv_std, weight: per-channel (C,) values (taken as float64).
        need_dx: compute ``dx`` (else it is None).
        n_threads: OpenMP threads.

        channels_last: the channel axis is the last one (the (M, C) kernels).

    Returns:
        ``(dx or None, sum_g, dot)``; ``sum_g``, ``dot`` float64 (C,).

    Shape:
        grad, x, dx: (N, C, *); the rest: (C,)
    """
    xv, gv = _grad_and_input(grad, x, channels_last)
    C = xv.shape[1]
    nt = _threads(n_threads, xv.size)
    m = _per_channel("mean", mean, C, np.float64)
    inv = _per_channel("inv_std", inv_std, C, np.float64)
    gamma = _per_channel("weight", weight, C, np.float64)
    if channels_last or not (_by_channel(C, xv.shape[2], nt) and xv.size):
        count = xv.shape[0] if channels_last else xv.shape[0] * xv.shape[2]     # M
        sum_g, dot = batch_norm_grad_sums(gv, xv, m, nt, channels_last)
        dx = None
        if need_dx:
            dx = batch_norm_backward_input(gv, xv, m, sum_g / count, dot * inv * inv / count,
                                           gamma * inv, nt, channels_last).reshape(np.shape(x))
        return dx, sum_g, dot
    sum_g = np.empty(C, dtype=np.float64)
    dot = np.empty(C, dtype=np.float64)
    dx = np.empty_like(xv) if need_dx else np.empty((1, 1, 1), dtype=xv.dtype)
    _bwd_train(gv, xv, m, inv, gamma, bool(need_dx), dx, sum_g, dot, nt)
    return (dx.reshape(np.shape(x)) if need_dx else None), sum_g, dot


def _bwd_train(const floating[:, :, ::1] g, const floating[:, :, ::1] x, const double[::1] m,
               const double[::1] inv, const double[::1] gamma, bint need_dx,
               floating[:, :, ::1] dx, double[::1] sum_g, double[::1] dot, int nt):
    with nogil:
        bn_backward_train_by_channel(x.shape[0], x.shape[1], x.shape[2], &g[0, 0, 0], &x[0, 0, 0],
                                     &m[0], &inv[0], &gamma[0], need_dx, &dx[0, 0, 0],
                                     &sum_g[0], &dot[0], nt)
