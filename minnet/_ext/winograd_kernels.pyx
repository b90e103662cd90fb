"""Winograd F(2x2, 3x3) convolution: 3x3 kernels, stride 1, dilation 1, both layouts.

Used by ``minnet._ext.conv_kernels`` for the forward and for the input gradient of the large 3x3
layers, and for their weight gradient (``use_winograd`` below decides).  The math
and the measurement behind the rule are in docs/math/convolution.md.  Every output is
written once, by one thread, from GEMMs whose shapes depend only on the geometry, so the
result does not depend on the thread count.
"""
from cython.parallel cimport prange, threadid
from libc.string cimport memcpy, memset

from minnet._ext._blas cimport floating
from minnet._ext.convgemm_kernels cimport conv_gemm
from minnet._ext.transpose_kernels cimport transpose_rows

import numpy as np


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


cdef inline void _winograd_output_rows(const floating* m0, const floating* m1,
                                       const floating* m2, const floating* m3, int n,
                                       floating* s0,
                                       floating* s1) noexcept nogil:
    """Column i of A^T m for n tiles: s0 = m0 + m1 + m2, s1 = m1 - m2 - m3."""
    cdef int p
    for p in range(n):
        s0[p] = m0[p] + m1[p] + m2[p]
        s1[p] = m1[p] - m2[p] - m3[p]


cdef void _winograd_conv(const floating* x,       # IN  (N, C, H, W), NHWC with nhwc
                         int n, int c, int h, int w,
                         const floating* u,       # IN  (16, C, F) transformed kernel, U_k^T
                         const floating* bias,    # IN  (F,) or NULL
                         int f, int pt, int pl, int out_h, int out_w,
                         floating* y,             # OUT (N, F, out_h, out_w), NHWC with nhwc
                         floating* workspace,     # OUT per-thread scratch (ws_stride each)
                         long ws_stride, int block_rows, bint nhwc,
                         int n_threads) noexcept nogil:
    """3x3 / stride 1 / dilation 1 correlation; ``pt``, ``pl`` may be negative.

    The N * tiles_h rows of 2x2 output tiles of the batch are cut into blocks of
    ``block_rows`` tile rows (a block may span samples); ``prange`` over the blocks: each
    thread transforms its block's input, runs the 16 single-threaded GEMMs into its own
    scratch and writes the block's outputs.  Both layouts run the same code, the channels
    innermost (below): channels_first transposes each input row into a ``(W, C)`` buffer
    first and its output rows back into the F planes.  The GEMMs are
    ``M_k (P, F) = V_k (P, C) @ U_k^T (C, F)``, so the operand the GEMM packs is the small
    ``U_k^T``, not the block of tiles.  Scratch per thread: ``16 (C + F) block_rows tiles_w
    + 8 (2 tiles_w + 2) C + 8 F + 4 tiles_w F``.
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
        _winograd_input(x, c, h, w, pt, pl, tiles_h, tiles_w, r0, rows, not nhwc, v, buf)
        for k in range(16):           # M_k (P, F) = V_k (P, C) @ U_k^T (C, F)
            conv_gemm(False, False, count, f, c, v + <long> k * count * c, c,
                      u + <long> k * c * f, f, <floating> 0, m + <long> k * count * f, f)
        _winograd_output_block(m, bias, f, out_h, out_w, tiles_h, tiles_w, r0, rows, y, buf,
                               nhwc)


# ----------------------------------------------------------------------------------------
# The transforms, with the channels innermost (both layouts)
# ----------------------------------------------------------------------------------------
#
# V_k (P, C) and M_k (P, F) hold a tile per row and the channels along it, so the
# transforms run on whole rows of channels (contiguous, vectorised over C or F), the 16
# GEMMs are M_k = V_k @ U_k^T, and the output transform writes NHWC pixels directly (or
# through a row buffer into the F planes).  channels_first transposes its rows in and out
# (transpose_kernels.h); its own plane-by-plane transforms (tile rows of only tiles_w
# values, stride-2 loops) cost about as much as those transposes plus this code in the
# forward (perf, 64x32x28x28 -> 64), and 1.7x more in dW on 16x16 images.

cdef void _winograd_input(const floating* x,  # IN  (N, H, W, C), (N, C, H, W) with planes
                               int c, int h, int w, int pt, int pl, int tiles_h,
                               int tiles_w, long r0, int rows, bint planes,
                               floating* v,         # OUT (16, rows * tiles_w, C)
                               floating* buf        # OUT scratch, 8 * (2 * tiles_w + 2) * C
                               ) noexcept nogil:
    """V = B^T d B for the tile rows r0 .. r0 + rows - 1, the channels innermost.

    With ``planes`` x is NCHW: each input row is transposed into its ``(W, C)`` row buffer
    (transpose_kernels.h), and the rest is the NHWC code, so both layouts share it."""
    cdef int wp = 2 * tiles_w + 2
    cdef long n = <long> wp * c, count = <long> rows * tiles_w, kstride = count * c
    cdef int row, s, th, i, tw, iy, lo, hi
    cdef long gr
    cdef floating* d = buf               # 4 padded input rows of wp pixels x C
    cdef floating* t = buf + 4 * n       # t = B^T d, 4 rows
    cdef floating* dst
    cdef floating* tr
    lo = pl if pl > 0 else 0             # padded columns j in [lo, hi) hold input j - pl
    hi = w + pl if w + pl < wp else wp
    if hi < lo:
        hi = lo
    for row in range(rows):
        gr = r0 + row
        s = <int> (gr // tiles_h)
        th = <int> (gr % tiles_h)
        for i in range(4):
            iy = 2 * th - pt + i
            if iy < 0 or iy >= h or hi == lo:
                memset(d + i * n, 0, n * sizeof(floating))
            else:
                memset(d + i * n, 0, <long> lo * c * sizeof(floating))
                if planes:
                    transpose_rows(x + (<long> s * c * h + iy) * w + lo - pl, <long> h * w,
                                   <floating*> NULL, d + i * n + <long> lo * c, c, c, False,
                                   0, hi - lo)
                else:
                    memcpy(d + i * n + <long> lo * c,
                           x + ((<long> s * h + iy) * w + lo - pl) * c,
                           <long> (hi - lo) * c * sizeof(floating))
                memset(d + i * n + <long> hi * c, 0, <long> (wp - hi) * c * sizeof(floating))
        _winograd_pair(d, d + 2 * n, d + n, d + 3 * n, 1, n, t, t + 3 * n)
        _winograd_sum_diff(d + n, d + 2 * n, 1, n, t + n, t + 2 * n)
        for i in range(4):
            tr = t + i * n
            for tw in range(tiles_w):
                dst = v + 4 * i * kstride + (<long> row * tiles_w + tw) * c
                _winograd_pair(tr + (2 * tw) * c, tr + (2 * tw + 2) * c, tr + (2 * tw + 1) * c,
                               tr + (2 * tw + 3) * c, 1, c, dst, dst + 3 * kstride)
                _winograd_sum_diff(tr + (2 * tw + 1) * c, tr + (2 * tw + 2) * c, 1, c,
                                   dst + kstride, dst + 2 * kstride)


cdef void _winograd_output_block(const floating* m,   # IN  (16, rows * tiles_w, F)
                                 const floating* bias,  # IN  (F,) or NULL
                                 int f, int out_h, int out_w, int tiles_h, int tiles_w,
                                 long r0, int rows,
                                 floating* y,       # OUT (N, out_h, out_w, F), or NCHW
                                 floating* buf,     # OUT scratch, 8 F (+ 2 out_w F NCHW)
                                 bint nhwc) noexcept nogil:
    """Y_tile = A^T M A + b for the tile rows r0 .. r0 + rows - 1; each output written once.

    A tile row's output pixels are formed with the F channels innermost, straight into y
    (NHWC) or into a ``(2, out_w, F)`` buffer that is then transposed into y's F planes
    (NCHW): the same sums in the same order in both layouts."""
    cdef long count = <long> rows * tiles_w, plane = <long> out_h * out_w, gr
    cdef int row, s, th, i, n_rows
    cdef floating* pixels = buf + 8 * f
    for row in range(rows):
        gr = r0 + row
        s = <int> (gr // tiles_h)
        th = <int> (gr % tiles_h)
        n_rows = 2 if 2 * th + 1 < out_h else 1
        if nhwc:
            _winograd_output_row(m + <long> row * tiles_w * f, count * f, bias, f, tiles_w,
                                 n_rows, out_w,
                                 y + (<long> s * out_h + 2 * th) * out_w * f, buf)
            continue
        _winograd_output_row(m + <long> row * tiles_w * f, count * f, bias, f, tiles_w,
                             n_rows, out_w, pixels, buf)
        for i in range(n_rows):      # (out_w, F) pixels -> row 2 th + i of the F planes
            transpose_rows(pixels + <long> i * out_w * f, f, <floating*> NULL,
                           y + <long> s * f * plane + <long> (2 * th + i) * out_w, plane,
                           out_w, False, 0, f)


cdef void _winograd_output_row(const floating* m,   # IN  the row's first tile, (16, ., F)
                               long kstride,         # elements between M_k and M_k+1
                               const floating* bias, int f, int tiles_w, int n_rows,
                               int out_w,
                               floating* dst,        # OUT (n_rows, out_w, F) pixels
                               floating* buf         # OUT scratch, 8 F
                               ) noexcept nogil:
    """The 2x2 outputs of the tiles_w tiles of one tile row, F channels per pixel."""
    cdef int tw, i, j, q, ow
    cdef const floating* src
    cdef floating* out
    cdef floating* sr
    for tw in range(tiles_w):
        src = m + <long> tw * f
        for j in range(4):       # s = A^T m: rows 0 and 1 of column j
            _winograd_output_rows(src + j * kstride, src + (4 + j) * kstride,
                                  src + (8 + j) * kstride, src + (12 + j) * kstride, f,
                                  buf + j * f, buf + (4 + j) * f)
        for i in range(n_rows):
            sr = buf + 4 * i * f
            ow = 2 * tw
            out = dst + (<long> i * out_w + ow) * f
            for q in range(f):
                out[q] = sr[q] + sr[f + q] + sr[2 * f + q] + (bias[q] if bias != NULL else 0)
            if ow + 1 < out_w:
                out = out + f
                for q in range(f):
                    out[q] = (sr[f + q] - sr[2 * f + q] - sr[3 * f + q]
                              + (bias[q] if bias != NULL else 0))


# ----------------------------------------------------------------------------------------
# The weight gradient by Winograd (docs/math/convolution.md, "dW by Winograd")
# ----------------------------------------------------------------------------------------
#
# From Y_tile = A^T (U * V) A with U = G g G^T:  dL/dU = (A dY_tile A^T) * V  (4x4, per
# filter, channel and tile), so  dL/dg = G^T [ sum over tiles (A dY A^T) * V ] G.  The sum
# over the tiles P of the 16 elementwise products is again 16 GEMMs
#     M_k (F, C) = sum_p Yh_k (F, P) V_k (C, P)^T,   k = 0..15,  Yh = A dY A^T
# accumulated block after block (beta = 1) into the partial of the block's part; the
# partials are added in part order and dW = G^T M G.

cdef void _winograd_dy(const floating* dy,       # IN  (N, out_h, out_w, F), NCHW with planes
                       int f, int out_h, int out_w, int tiles_h, int tiles_w, long r0,
                       int rows, bint planes,
                       floating* yh,             # OUT (16, P, F)
                       floating* buf             # OUT scratch, 6 * 2 tiles_w * F
                       ) noexcept nogil:
    """Yh = A dY A^T of every 2x2 tile of dY in tile rows r0 .. r0 + rows - 1 (a tile that
    runs past the output's edge reads zeros there).

    Per tile row: the 2 rows of dY are copied (with ``planes``, transposed from the F
    planes) into zero-padded ``(2 tiles_w, F)`` row buffers, ``t = A dY`` is taken on whole
    rows (t0 = d0, t1 = d0 + d1, t2 = d0 - d1, t3 = -d1), then ``t A^T`` per tile on F-long
    vectors: (u, u + v, u - v, -v) for the tile's two pixels u, v of each row of t."""
    cdef long count = <long> rows * tiles_w, kstride = count * f, plane = <long> out_h * out_w
    cdef long n = 2 * <long> tiles_w * f, valid = <long> out_w * f
    cdef long gr, q
    cdef int row, s, th, i, tw, j
    cdef floating* d = buf                  # 2 rows of n
    cdef floating* t = buf + 2 * n          # 4 rows of n
    cdef floating* dst
    for row in range(rows):
        gr = r0 + row
        s = <int> (gr // tiles_h)
        th = <int> (gr % tiles_h)
        for j in range(2):
            if 2 * th + j >= out_h:
                memset(d + j * n, 0, n * sizeof(floating))
                continue
            if planes:
                transpose_rows(dy + <long> s * f * plane + <long> (2 * th + j) * out_w, plane,
                               <floating*> NULL, d + j * n, f, f, False, 0, out_w)
            else:
                memcpy(d + j * n, dy + (<long> s * out_h + 2 * th + j) * valid,
                       valid * sizeof(floating))
            memset(d + j * n + valid, 0, (n - valid) * sizeof(floating))
        for q in range(n):
            t[q] = d[q]
            t[n + q] = d[q] + d[n + q]
            t[2 * n + q] = d[q] - d[n + q]
            t[3 * n + q] = -d[n + q]
        for i in range(4):
            for tw in range(tiles_w):
                dst = yh + 4 * i * kstride + (<long> row * tiles_w + tw) * f
                _winograd_dy_pixels(t + i * n + 2 * <long> tw * f, f, dst, kstride)


cdef inline void _winograd_dy_pixels(const floating* u, long f, floating* dst,
                                     long kstride) noexcept nogil:
    """One row of t A^T for one tile: its pixels u (F values) and v (the next F);
    dst[j kstride + q] = (u, u + v, u - v, -v)[j][q]."""
    cdef long q
    cdef const floating* v = u + f
    for q in range(f):
        dst[q] = u[q]
        dst[kstride + q] = u[q] + v[q]
        dst[2 * kstride + q] = u[q] - v[q]
        dst[3 * kstride + q] = -v[q]


cdef void _winograd_dw(const floating* x, const floating* dy, int n, int c, int h, int w,
                       int f, int pt, int pl, int out_h, int out_w,
                       floating* partials,       # OUT (n_parts, 16, F, C)
                       floating* workspace, long ws_stride, long ws_buf, int block_rows,
                       int n_parts, bint nhwc, int n_threads) noexcept nogil:
    """M = sum over the tiles of Yh_k V_k^T, one partial per part of the tile-row blocks
    (part t takes blocks t, t + n_parts, ...: a function of the shapes only)."""
    cdef int tiles_h = (out_h + 1) // 2, tiles_w = (out_w + 1) // 2
    cdef long total = <long> n * tiles_h
    cdef long n_jobs = (total + block_rows - 1) // block_rows
    cdef long cap = <long> block_rows * tiles_w
    cdef long job, r0
    cdef int part, rows, k, count
    cdef floating* v
    cdef floating* yh
    cdef floating* buf
    cdef floating* m
    cdef floating beta
    for part in prange(n_parts, schedule="static", num_threads=n_threads):
        v = workspace + threadid() * ws_stride
        yh = v + 16 * <long> c * cap
        buf = yh + 16 * <long> f * cap
        m = partials + <long> part * 16 * f * c
        beta = 0
        job = part
        while job < n_jobs:
            r0 = job * block_rows
            rows = <int> (total - r0 if total - r0 < block_rows else block_rows)
            count = rows * tiles_w
            _winograd_dy(dy, f, out_h, out_w, tiles_h, tiles_w, r0, rows, not nhwc, yh,
                         buf + ws_buf)
            _winograd_input(x, c, h, w, pt, pl, tiles_h, tiles_w, r0, rows, not nhwc, v,
                                 buf)
            for k in range(16):       # M_k (F, C) += Yh_k^T (F, P) @ V_k (P, C)
                conv_gemm(True, False, f, c, count, yh + <long> k * count * f, f,
                          v + <long> k * count * c, c, beta, m + <long> k * f * c, c)
            beta = 1
            job = job + n_parts
        if beta == 0:                 # a part with no block (more parts than blocks)
            memset(m, 0, 16 * <long> f * c * sizeof(floating))


cdef void _winograd_dw_output(const floating* partials, int n_parts, int f, int c,
                              floating* dw              # OUT (F, C, 3, 3)
                              ) noexcept nogil:
    """dW = G^T (sum of the partials, in part order) G for every (filter, channel)."""
    cdef long fc, k, t, stride = <long> f * c
    cdef int i, j
    cdef double mm[16]
    cdef double r[12]     # G^T M: (3, 4)
    cdef floating acc
    for fc in range(stride):
        for k in range(16):
            acc = partials[k * stride + fc]
            for t in range(1, n_parts):
                acc = acc + partials[(t * 16 + k) * stride + fc]
            mm[k] = acc
        # G^T = [1 1/2 1/2 0; 0 1/2 -1/2 0; 0 1/2 1/2 1]
        for j in range(4):
            r[j] = mm[j] + 0.5 * (mm[4 + j] + mm[8 + j])
            r[4 + j] = 0.5 * (mm[4 + j] - mm[8 + j])
            r[8 + j] = 0.5 * (mm[4 + j] + mm[8 + j]) + mm[12 + j]
        for i in range(3):
            dw[fc * 9 + 3 * i] = <floating> (r[4 * i] + 0.5 * (r[4 * i + 1] + r[4 * i + 2]))
            dw[fc * 9 + 3 * i + 1] = <floating> (0.5 * (r[4 * i + 1] - r[4 * i + 2]))
            dw[fc * 9 + 3 * i + 2] = <floating> (0.5 * (r[4 * i + 1] + r[4 * i + 2])
                                                 + r[4 * i + 3])


# ----------------------------------------------------------------------------------------
# The choice, and the Python-visible entry
# ----------------------------------------------------------------------------------------

# With ``WINOGRAD`` on, ``method="auto"`` uses Winograd for the forward, the input gradient
# and the weight gradient when the image computed (output for the forward and dW, input for
# dX) has at least ``MIN_PIXELS`` pixels and both channel counts are at least
# ``MIN_CHANNELS``; ``method="winograd"`` forces it.  Measured at 1 thread with
# benchmarks/bench_conv.py and, for dW, bench_conv_phases.py --dw (docs/math/convolution.md):
# with fewer channels the transforms cost more than the 2.25x fewer multiplications save,
# and on small images the im2col GEMMs are as fast.
WINOGRAD = True
MIN_PIXELS = 196
MIN_CHANNELS = 32
# Output tiles per block (about the GEMM column count; whole rows of tiles, at least one):
# a function of the geometry only, never of the thread count.  Scratch per thread:
# 16 * (C + F) * block.
BLOCK_TILES = 256


def use_winograd(method, kh, kw, sh, sw, dh, dw, c, f, pixels):
    """Whether a conv runs Winograd; ``method="winograd"`` on another geometry raises."""
    fits = kh == 3 and kw == 3 and sh == 1 and sw == 1 and dh == 1 and dw == 1
    if method == "winograd":
        if not fits:
            raise ValueError(f"Invalid value for argument `method`: 'winograd' needs a 3x3 "
                             f"kernel with stride 1 and dilation 1. Received: kernel "
                             f"{(kh, kw)}, stride {(sh, sw)}, dilation {(dh, dw)}")
        return True
    return (method == "auto" and WINOGRAD and fits and pixels >= MIN_PIXELS
            and min(c, f) >= MIN_CHANNELS)


def winograd_conv2d(x, w, bias, y, int pt, int pl, bint flip, int n_threads,
                    bint channels_last=False):
    """``y = x (*) w`` (3x3 correlation, NCHW, or NHWC with ``channels_last``) by Winograd,
    written into ``y``.

    ``flip``: with ``w`` rotated by 180 degrees and its channel axes swapped (``w`` is then
    ``(C_in, C_out, 3, 3)``, the kernel of the input gradient).  ``pt``, ``pl`` may be
    negative.  The caller has checked shapes and dtypes.
    """
    if x.dtype == np.float32:
        _winograd_entry[float](x, w, bias, y, pt, pl, flip, n_threads, channels_last)
    else:
        _winograd_entry[double](x, w, bias, y, pt, pl, flip, n_threads, channels_last)
    return y


cdef struct Tiles:
    int cin, cout, h, w, out_h, out_w, tiles_w, block
    long total                       # tile rows of the batch


cdef Tiles _tiles(Py_ssize_t* xs, Py_ssize_t* ys, bint nhwc):
    """Channels, sizes and tile blocks of a Winograd call from the shapes of its input and
    output (NCHW, or NHWC with ``nhwc``)."""
    cdef Tiles t
    t.cin, t.cout = xs[3 if nhwc else 1], ys[3 if nhwc else 1]
    t.h, t.w = xs[1 if nhwc else 2], xs[2 if nhwc else 3]
    t.out_h, t.out_w = ys[1 if nhwc else 2], ys[2 if nhwc else 3]
    t.tiles_w = (t.out_w + 1) // 2
    t.total = <long> ys[0] * ((t.out_h + 1) // 2)
    t.block = <int> min(max(1, BLOCK_TILES // t.tiles_w), t.total)
    return t


cdef _winograd_entry(const floating[:, :, :, ::1] x, const floating[:, :, :, ::1] w,
                     object bias, floating[:, :, :, ::1] y, int pt, int pl, bint flip,
                     int n_threads, bint nhwc):
    cdef Tiles t = _tiles(x.shape, y.shape, nhwc)
    cdef int cin = t.cin, cout = t.cout, h = t.h, w_in = t.w, out_h = t.out_h, out_w = t.out_w
    cdef int tiles_w = t.tiles_w, block = t.block
    cdef long total = t.total
    cdef const floating[::1] b
    cdef const floating* pb = NULL
    cdef floating[::1] u
    cdef floating[:, ::1] ws
    cdef long ws_stride = (16 * <long> (cin + cout) * block * tiles_w
                           + 8 * (2 * tiles_w + 2) * <long> cin + 8 * cout
                           + 4 * <long> tiles_w * cout)
    dtype = np.float32 if floating is float else np.float64
    if bias is not None:
        b = bias
        pb = &b[0]
    n_threads = <int> max(1, min(n_threads, -(-total // block)))
    u = np.empty(16 * cin * cout, dtype=dtype)
    ws = np.empty((n_threads, ws_stride), dtype=dtype)
    with nogil:
        _winograd_weight(&w[0, 0, 0, 0], w.shape[0], w.shape[1], flip, &u[0])
    # U_k^T (C, F) for the GEMMs M_k = V_k @ U_k^T
    u = np.ascontiguousarray(np.asarray(u).reshape(16, cout, cin).transpose(0, 2, 1)).ravel()
    with nogil:
        _winograd_conv(&x[0, 0, 0, 0], x.shape[0], cin, h, w_in, &u[0], pb, cout, pt, pl,
                       out_h, out_w, &y[0, 0, 0, 0], &ws[0, 0], ws_stride, block, nhwc,
                       n_threads)


# Parts of the weight gradient's sum (each a (16, F, C) partial): a constant, so the sum's
# order is a function of the shapes only, whatever the thread count.
DW_PARTS = 8
DW_PART_ELEMENTS = 1 << 24


def winograd_conv2d_weight_grad(x, dy, dw, int pt, int pl, int n_threads,
                                bint channels_last=False):
    """``dw`` (F, C, 3, 3) = the weight gradient of the 3x3 / stride 1 / dilation 1
    correlation ``y = x (*) w`` from its input ``x`` and output gradient ``dy`` (NCHW, or
    NHWC with ``channels_last``), by Winograd.  The caller has checked shapes and dtypes."""
    if x.dtype == np.float32:
        _winograd_dw_entry[float](x, dy, dw, pt, pl, n_threads, channels_last)
    else:
        _winograd_dw_entry[double](x, dy, dw, pt, pl, n_threads, channels_last)
    return dw


cdef _winograd_dw_entry(const floating[:, :, :, ::1] x, const floating[:, :, :, ::1] dy,
                        floating[:, :, :, ::1] dw, int pt, int pl, int n_threads,
                        bint nhwc):
    cdef Tiles t = _tiles(x.shape, dy.shape, nhwc)
    cdef int cin = t.cin, cout = t.cout, h = t.h, w_in = t.w, out_h = t.out_h, out_w = t.out_w
    cdef int tiles_w = t.tiles_w, block = t.block
    cdef long total = t.total
    cdef long n_jobs = (total + block - 1) // block
    # DW_PARTS partials, fewer when there are fewer blocks or the partials would pass
    # DW_PART_ELEMENTS values in all (both functions of the shapes only)
    cdef int n_parts = <int> max(1, min(DW_PARTS, n_jobs,
                                        DW_PART_ELEMENTS // (16 * <long> cout * cin)))
    cdef floating[:, ::1] ws
    cdef floating[::1] partials
    # per thread: V and Yh of a block, the input transform's rows (ws_buf values), dY's rows
    cdef long ws_buf = 8 * (2 * tiles_w + 2) * <long> cin
    cdef long ws_stride = (16 * <long> (cin + cout) * block * tiles_w + ws_buf
                           + 12 * <long> tiles_w * cout)
    dtype = np.float32 if floating is float else np.float64
    n_threads = <int> max(1, min(n_threads, n_parts))
    ws = np.empty((n_threads, ws_stride), dtype=dtype)
    partials = np.empty(n_parts * 16 * <long> cout * cin, dtype=dtype)
    with nogil:
        _winograd_dw(&x[0, 0, 0, 0], &dy[0, 0, 0, 0], x.shape[0], cin, h, w_in, cout, pt, pl,
                     out_h, out_w, &partials[0], &ws[0, 0], ws_stride, ws_buf, block, n_parts,
                     nhwc, n_threads)
        _winograd_dw_output(&partials[0], n_parts, cout, cin, &dw[0, 0, 0, 0])
