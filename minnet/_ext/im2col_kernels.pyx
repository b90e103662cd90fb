"""Patches of a convolution: im2col / col2im for both image layouts, and the GEMM helpers
the convolution kernels share (docs/math/convolution.md, "The two layouts").

channels_first (NCHW).  For one sample ``x[n]`` of shape ``(C, H, W)`` and a kernel
``(F, C, kh, kw)`` the patches form a ``(K, L)`` matrix, ``K = C*kh*kw``,
``L = out_h*out_w``::

    col[(c*kh + i)*kw + j, oh*out_w + ow] = x[c, oh*sh - pt + i*dh, ow*sw - pl + j*dw]

(zero in the padding).  The row index multiplies ``i`` by the kernel *width* ``kw``: the
classic im2col bug uses the height there and only shows on non-square kernels.

channels_last (NHWC).  For ``x[n]`` of shape ``(H, W, C)`` the patches are the *rows* of an
``(L, K)`` matrix, each patch contiguous over channels::

    col[oh*out_w + ow, (i*kw + j)*C + c] = x[oh*sh - pt + i*dh, ow*sw - pl + j*dw, c]

so a patch row is kh runs of (up to) kw*C contiguous input values, and the whole batch's
patches stack into one ``(N*L, K)`` matrix whose product with the permuted weight
``(K, F)`` is the NHWC output ``(N, out_h, out_w, F)`` with no transpose.

Padding is given as ``pad_top`` / ``pad_left`` plus the output size; the output size implies
the bottom / right padding (asymmetric "same").  The loops visit only the output positions
whose input index lies inside the image (``valid_range``), so they never read or write
outside the arrays.  col2im accumulates; it is parallel over (sample, channel) planes
(NCHW) or samples (NHWC), so no two threads ever write the same element, and each element
is summed in one fixed order.
"""
from cython.parallel cimport prange
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy, memset

from minnet._ext._base cimport check_nd, check_threads
from minnet._ext._blas cimport floating

import numpy as np


# ----------------------------------------------------------------------------------------
# Geometry
# ----------------------------------------------------------------------------------------

cdef Geometry make_geometry(int n, int c, int h, int w, int f, int kh, int kw,
                            int sh, int sw, int pt, int pl, int dh, int dw,
                            int out_h, int out_w) noexcept nogil:
    cdef Geometry g
    g.n, g.c, g.h, g.w = n, c, h, w
    g.f, g.kh, g.kw = f, kh, kw
    g.sh, g.sw, g.pt, g.pl, g.dh, g.dw = sh, sw, pt, pl, dh, dw
    g.out_h, g.out_w = out_h, out_w
    g.k = <long> c * kh * kw
    g.l = <long> out_h * out_w
    g.identity = (kh == 1 and kw == 1 and sh == 1 and sw == 1 and pt == 0 and pl == 0
                  and out_h == h and out_w == w)
    return g


# ----------------------------------------------------------------------------------------
# channels_first: one channel plane at a time
# ----------------------------------------------------------------------------------------

cdef void valid_range(int offset, int stride, int width, int out_w,
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


cdef void _gather_rows(const floating* src, int height, int width,
                       int row_offset, int sh, int col_offset, int sw,
                       int out_h, int out_w,
                       floating* block) noexcept nogil:
    """One (c, i, j) row of col: ``block[oh*out_w + ow] = src[oh*sh + row_offset,
    ow*sw + col_offset]`` of a ``(height, width)`` plane, zero outside it.  Each value is
    written once: rows reading only padding are zeroed whole, the others get their
    left/right padding zeroed and the rest copied."""
    cdef int oh, ow, row_lo, row_hi, lo, hi
    cdef long in_row
    cdef floating* dst
    valid_range(row_offset, sh, height, out_h, &row_lo, &row_hi)
    valid_range(col_offset, sw, width, out_w, &lo, &hi)
    if hi <= lo or row_hi <= row_lo:
        memset(block, 0, <long> out_h * out_w * sizeof(floating))
        return
    if row_lo > 0:
        memset(block, 0, <long> row_lo * out_w * sizeof(floating))
    if row_hi < out_h:
        memset(block + <long> row_hi * out_w, 0,
               <long> (out_h - row_hi) * out_w * sizeof(floating))
    if sh == 1 and sw == 1 and out_w == width:
        # Rows of col and of the plane have the same stride: one copy of the span from the
        # first valid value to the last, then re-zero the columns that wrapped in from the
        # neighbouring image rows.
        in_row = <long> (row_lo + row_offset) * width + col_offset
        memcpy(block + <long> row_lo * out_w + lo, src + in_row + lo,
               (<long> (row_hi - row_lo - 1) * out_w + hi - lo) * sizeof(floating))
        if lo > 0 or hi < out_w:
            for oh in range(row_lo, row_hi):
                dst = block + <long> oh * out_w
                for ow in range(lo):
                    dst[ow] = 0
                for ow in range(hi, out_w):
                    dst[ow] = 0
        return
    for oh in range(row_lo, row_hi):
        dst = block + <long> oh * out_w
        in_row = <long> (oh * sh + row_offset) * width + col_offset
        for ow in range(lo):
            dst[ow] = 0
        for ow in range(hi, out_w):
            dst[ow] = 0
        if sw == 1:
            memcpy(dst + lo, src + in_row + lo, (hi - lo) * sizeof(floating))
        elif sw == 2:
            # The constant stride lets the compiler vectorise the gather (two loads and a
            # shuffle per vector): the stride-2 layers that take no phase planes (1x1, dilated).
            for ow in range(lo, hi):
                dst[ow] = src[in_row + 2 * <long> ow]
        else:
            for ow in range(lo, hi):
                dst[ow] = src[in_row + <long> ow * sw]


cdef inline bint _use_phases(Geometry g) noexcept nogil:
    """A strided layer whose taps read every phase of the stride (kh >= sh, kw >= sw,
    dilation 1) gathers from phase planes; others (1x1 stride 2: one phase of four) read the
    plane in place."""
    return (g.sh > 1 or g.sw > 1) and g.dh == 1 and g.dw == 1 and g.kh >= g.sh and g.kw >= g.sw


cdef inline int _phase_size(int size, int phase, int stride) noexcept nogil:
    """How many of the indices phase, phase + stride, ... lie in [0, size)."""
    return (size - phase + stride - 1) // stride if phase < size else 0


cdef inline long _phase_offset(Geometry g, int p, int q) noexcept nogil:
    """Where phase plane (p, q) starts in the buffer of _phase_copy."""
    cdef long offset = 0
    cdef int pp, qq
    for pp in range(p):
        offset += <long> _phase_size(g.h, pp, g.sh) * g.w
    for qq in range(q):
        offset += <long> _phase_size(g.h, p, g.sh) * _phase_size(g.w, qq, g.sw)
    return offset


cdef void _phase_copy(floating* plane, Geometry g, floating* phases,
                     bint split) noexcept nogil:
    """Between an ``(H, W)`` plane and its ``sh*sw`` phase planes, one after the other
    (p-major), ``phase[p, q][a, b] = plane[a*sh + p, b*sw + q]`` (H*W values in all):
    ``split`` fills the phases from the plane, else the plane from the phases."""
    cdef int r, b, q, p = 0, a = 0, half = g.w // 2, width_q
    cdef floating* row
    cdef floating* even
    cdef floating* odd
    cdef floating* dst
    for r in range(g.h):
        row = plane + <long> r * g.w
        if g.sw == 2:
            # Both column phases in one pass over the row's pairs (an interleaved load or
            # store the compiler vectorises, not a gather).
            even = phases + _phase_offset(g, p, 0) + <long> a * (g.w - half)
            odd = phases + _phase_offset(g, p, 1) + <long> a * half
            if split:
                for b in range(half):
                    even[b] = row[2 * b]
                    odd[b] = row[2 * b + 1]
            else:
                for b in range(half):
                    row[2 * b] = even[b]
                    row[2 * b + 1] = odd[b]
            if g.w % 2:                # an odd width: the last column is an even one
                if split:
                    even[half] = row[g.w - 1]
                else:
                    row[g.w - 1] = even[half]
        else:
            for q in range(g.sw):
                width_q = _phase_size(g.w, q, g.sw)
                dst = phases + _phase_offset(g, p, q) + <long> a * width_q
                if split:
                    for b in range(width_q):
                        dst[b] = row[<long> b * g.sw + q]
                else:
                    for b in range(width_q):
                        row[<long> b * g.sw + q] = dst[b]
        p += 1                         # the next row's phase and row in it
        if p == g.sh:
            p = 0
            a += 1


cdef inline void _tap_phase(int tap, int pad, int stride, int* phase,
                            int* shift) noexcept nogil:
    """Tap offset ``tap - pad = stride*shift + phase``, 0 <= phase < stride."""
    cdef int offset = tap - pad
    phase[0] = offset % stride         # C's % may be negative: bring it into [0, stride)
    if phase[0] < 0:
        phase[0] = phase[0] + stride
    shift[0] = (offset - phase[0]) // stride


cdef void _im2col_channel(const floating* plane,          # IN  (H, W) input plane
                          Geometry g,
                          floating* col, long ld          # OUT kh*kw rows of row stride ld
                          ) noexcept nogil:
    """The kh*kw rows of col of one input channel.

    Strided layers (``_use_phases``) first split the plane into its stride phases, then
    gather every row from one phase plane at stride 1: tap offset ``i - pt = sh*u + p``
    reads ``x[sh*(oh + u) + p] = phase[p][oh + u]`` (docs/math/convolution.md, "Stride
    phases").  A stride-2 3x3 layer then reads 9 stride-1 windows per channel (one copy
    each when the phase plane is as wide as the output) instead of making 9 * out_h
    strided gathers: the same values, so the same bits downstream
    (benchmarks/bench_conv_limit.py "resnet s2")."""
    cdef int i, j, p, q, u, v
    cdef floating* phases = NULL
    if _use_phases(g):
        phases = <floating*> malloc(<size_t> g.h * g.w * sizeof(floating))
    if phases == NULL:                 # stride 1 (or no memory): the plane in place
        for i in range(g.kh):
            for j in range(g.kw):
                _gather_rows(plane, g.h, g.w, i * g.dh - g.pt, g.sh, j * g.dw - g.pl, g.sw,
                             g.out_h, g.out_w, col + (i * g.kw + j) * ld)
        return
    _phase_copy(<floating*> plane, g, phases, True)    # split: reads the plane only
    # A loop of its own (not one loop with the window chosen per tap): with the strides
    # constant 1 here the compiler specialises _gather_rows' copies; a shared loop with
    # the strides as variables measured slower on stride-2 layers
    # (benchmarks/bench_conv_limit.py "resnet s2"; docs/performance.md, "Strided layers").
    for i in range(g.kh):
        _tap_phase(i, g.pt, g.sh, &p, &u)
        for j in range(g.kw):
            _tap_phase(j, g.pl, g.sw, &q, &v)
            _gather_rows(phases + _phase_offset(g, p, q), _phase_size(g.h, p, g.sh),
                         _phase_size(g.w, q, g.sw), u, 1, v, 1, g.out_h, g.out_w,
                         col + (i * g.kw + j) * ld)
    free(phases)


cdef void _scatter_rows(const floating* block, floating* dst, int height, int width,
                        int row_offset, int sh, int col_offset, int sw,
                        int out_h, int out_w) noexcept nogil:
    """_gather_rows' adjoint: ``dst[oh*sh + row_offset, ow*sw + col_offset] +=
    block[oh*out_w + ow]`` for the positions inside the ``(height, width)`` plane."""
    cdef int oh, ow, row_lo, row_hi, lo, hi
    cdef floating* out
    cdef const floating* src
    valid_range(row_offset, sh, height, out_h, &row_lo, &row_hi)
    valid_range(col_offset, sw, width, out_w, &lo, &hi)
    for oh in range(row_lo, row_hi):
        src = block + <long> oh * out_w
        out = dst + <long> (oh * sh + row_offset) * width + col_offset
        if sw == 1:
            for ow in range(lo, hi):
                out[ow] += src[ow]
        else:
            for ow in range(lo, hi):
                out[<long> ow * sw] += src[ow]


cdef void _col2im_channel(const floating* col, long ld,   # IN  kh*kw rows of row stride ld
                          Geometry g,
                          floating* plane                 # INOUT (H, W), accumulated into
                          ) noexcept nogil:
    """Adds the kh*kw rows of col into one input channel, tap by tap in (i, j) order.

    Strided layers (``_use_phases``) accumulate into the plane's phase planes at stride 1
    and copy them back: every value receives the same additions in the same order, so the
    bits are those of the direct loop."""
    cdef int i, j, p, q, u, v
    cdef floating* phases = NULL
    if _use_phases(g):
        phases = <floating*> malloc(<size_t> g.h * g.w * sizeof(floating))
    if phases == NULL:
        for i in range(g.kh):
            for j in range(g.kw):
                _scatter_rows(col + (i * g.kw + j) * ld, plane, g.h, g.w, i * g.dh - g.pt,
                              g.sh, j * g.dw - g.pl, g.sw, g.out_h, g.out_w)
        return
    _phase_copy(plane, g, phases, True)
    for i in range(g.kh):
        _tap_phase(i, g.pt, g.sh, &p, &u)
        for j in range(g.kw):
            _tap_phase(j, g.pl, g.sw, &q, &v)
            _scatter_rows(col + (i * g.kw + j) * ld, phases + _phase_offset(g, p, q),
                          _phase_size(g.h, p, g.sh), _phase_size(g.w, q, g.sw), u, 1, v, 1,
                          g.out_h, g.out_w)
    _phase_copy(plane, g, phases, False)
    free(phases)


cdef void im2col_nchw_sample(const floating* x, Geometry g,
                             floating* col, long ld) noexcept nogil:
    cdef int c
    for c in range(g.c):
        _im2col_channel(x + <long> c * g.h * g.w, g, col + <long> c * g.kh * g.kw * ld, ld)


cdef void col2im_nchw_sample(const floating* col, long ld, Geometry g,
                             floating* x) noexcept nogil:
    cdef int c
    memset(x, 0, <long> g.c * g.h * g.w * sizeof(floating))
    for c in range(g.c):
        _col2im_channel(col + <long> c * g.kh * g.kw * ld, ld, g, x + <long> c * g.h * g.w)


cdef void im2col_nchw_batch(const floating* x, Geometry g,
                            floating* col, long ld, long sample_stride,
                            int n_threads) noexcept nogil:
    """col of sample n starts at ``col + n * sample_stride`` with row stride ``ld``."""
    cdef long job
    for job in prange(<long> g.n * g.c, schedule="static", num_threads=n_threads):
        _im2col_channel(x + job * g.h * g.w, g, col + (job // g.c) * sample_stride
                        + (job % g.c) * g.kh * g.kw * ld, ld)


cdef void col2im_nchw_batch(const floating* col, long ld, long sample_stride,
                            Geometry g, floating* x, int n_threads) noexcept nogil:
    """Each (sample, channel) plane of ``x`` is written by exactly one thread."""
    cdef long job
    for job in prange(<long> g.n * g.c, schedule="static", num_threads=n_threads):
        memset(x + job * g.h * g.w, 0, <long> g.h * g.w * sizeof(floating))
        _col2im_channel(col + (job // g.c) * sample_stride + (job % g.c) * g.kh * g.kw * ld,
                        ld, g, x + job * g.h * g.w)


# ----------------------------------------------------------------------------------------
# channels_last: one output row of patches at a time
# ----------------------------------------------------------------------------------------

cdef inline void _zero(floating* dst, long n) noexcept nogil:
    """memset, but a plain loop for the short runs of few-channel images (C = 1 or 3),
    where a library call per run would cost more than the stores."""
    cdef long q
    if n >= 32:
        memset(dst, 0, n * sizeof(floating))
    else:
        for q in range(n):
            dst[q] = 0


cdef inline void _copy(floating* dst, const floating* src, long n) noexcept nogil:
    """memcpy for long runs, a loop for runs under 128 values (a 16-channel 3-wide kernel
    row is 48): the call costs more than the stores there."""
    cdef long q
    if n >= 128:
        memcpy(dst, src, n * sizeof(floating))
    else:
        for q in range(n):
            dst[q] = src[q]


cdef inline void _add(floating* dst, const floating* src, long n) noexcept nogil:
    cdef long q
    for q in range(n):
        dst[q] += src[q]


cdef inline void _interior(Geometry g, int* lo, int* hi) noexcept nogil:
    """Output columns [lo, hi) whose whole patch row (every j) lies inside the image."""
    cdef int lo_last, hi_first
    valid_range(-g.pl, g.sw, g.w, g.out_w, lo, &hi_first)                        # j = 0
    valid_range((g.kw - 1) * g.dw - g.pl, g.sw, g.w, g.out_w, &lo_last, hi)       # j = kw-1
    if hi[0] < lo[0]:
        hi[0] = lo[0]


cdef inline void _im2col_nhwc_row(const floating* x, Geometry g, int oh,
                                  floating* col) noexcept nogil:
    """Patches of output row ``oh`` of one sample: ``out_w`` rows of K values.

    Output column outside, kernel row ``i`` inside: with dilation 1 a kernel row of a patch
    is one contiguous run of ``kw*C`` input values (three floats for a 1-channel 3x3
    kernel, 48 for 16 channels), copied as one run; the patch rows are written in order.
    Columns whose patch crosses the left/right border take the per-(j) path with zeros.
    (Faster than a kernel-offset-outer loop, whose inner loop stores C values at a stride
    of K, for every C >= 2 measured; a one-channel image takes the plane im2col instead,
    see conv_kernels._plan and benchmarks/bench_conv_layout.py.)"""
    cdef int i, j, ow, iy, ix, ix0, lo, hi, nc = g.c
    cdef long run = <long> g.kw * nc
    cdef long row_w = <long> g.w * nc
    cdef floating* dst
    cdef const floating* src
    _interior(g, &lo, &hi)
    for ow in range(g.out_w):
        dst = col + ow * g.k
        ix0 = ow * g.sw - g.pl
        for i in range(g.kh):
            iy = oh * g.sh - g.pt + i * g.dh
            if iy < 0 or iy >= g.h:
                _zero(dst, run)
            elif lo <= ow < hi:
                src = x + iy * row_w + <long> ix0 * nc
                if g.dw == 1:
                    _copy(dst, src, run)
                else:
                    for j in range(g.kw):
                        _copy(dst + j * nc, src + <long> j * g.dw * nc, nc)
            else:
                for j in range(g.kw):
                    ix = ix0 + j * g.dw
                    if ix < 0 or ix >= g.w:
                        _zero(dst + j * nc, nc)
                    else:
                        _copy(dst + j * nc, x + iy * row_w + <long> ix * nc, nc)
            dst += run


# Alike by shape (duplicates): the adjoint walks the patches in exactly the order of
# _im2col_nhwc_row (that fixed order is what makes the sum deterministic); one copies,
# the other accumulates, so they stay two loops.
cdef inline void _col2im_nhwc_row(const floating* col, Geometry g, int oh,
                                  floating* x) noexcept nogil:
    """Accumulate the patches of output row ``oh`` into one sample ``x`` (H, W, C): the
    adjoint of :func:`_im2col_nhwc_row`, in the same order (output column, then kernel
    row, then the run), so each element is summed in one fixed order."""
    cdef int i, j, ow, iy, ix, ix0, lo, hi, nc = g.c
    cdef long run = <long> g.kw * nc
    cdef long row_w = <long> g.w * nc
    cdef const floating* src
    cdef floating* dst
    _interior(g, &lo, &hi)
    for ow in range(g.out_w):
        src = col + ow * g.k
        ix0 = ow * g.sw - g.pl
        for i in range(g.kh):
            iy = oh * g.sh - g.pt + i * g.dh
            if 0 <= iy < g.h:
                if lo <= ow < hi:
                    dst = x + iy * row_w + <long> ix0 * nc
                    if g.dw == 1:
                        _add(dst, src, run)
                    else:
                        for j in range(g.kw):
                            _add(dst + <long> j * g.dw * nc, src + j * nc, nc)
                else:
                    for j in range(g.kw):
                        ix = ix0 + j * g.dw
                        if 0 <= ix < g.w:
                            _add(x + iy * row_w + <long> ix * nc, src + j * nc, nc)
            src += run


cdef void im2col_nhwc_sample(const floating* x, Geometry g, floating* col) noexcept nogil:
    cdef int oh
    if g.identity:
        memcpy(col, x, g.l * g.k * sizeof(floating))
        return
    for oh in range(g.out_h):
        _im2col_nhwc_row(x, g, oh, col + <long> oh * g.out_w * g.k)


cdef void col2im_nhwc_sample(const floating* col, Geometry g, floating* x) noexcept nogil:
    cdef int oh
    memset(x, 0, <long> g.h * g.w * g.c * sizeof(floating))
    for oh in range(g.out_h):
        _col2im_nhwc_row(col + <long> oh * g.out_w * g.k, g, oh, x)


cdef void im2col_nhwc_batch(const floating* x, Geometry g, floating* col,
                            int n_threads) noexcept nogil:
    """Parallel over (sample, output row): every job writes its own rows of col."""
    cdef long job
    cdef int n, oh
    cdef long sample = <long> g.h * g.w * g.c
    for job in prange(<long> g.n * g.out_h, schedule="static", num_threads=n_threads):
        n = <int> (job // g.out_h)
        oh = <int> (job % g.out_h)
        _im2col_nhwc_row(x + n * sample, g, oh, col + job * g.out_w * g.k)


cdef void col2im_nhwc_batch(const floating* col, Geometry g, floating* x,
                            int n_threads) noexcept nogil:
    """Parallel over samples (patches of one sample overlap; of two samples never)."""
    cdef long n
    cdef long sample = <long> g.h * g.w * g.c
    for n in prange(g.n, schedule="static", num_threads=n_threads):
        col2im_nhwc_sample(col + n * g.l * g.k, g, x + n * sample)


# ----------------------------------------------------------------------------------------
# Sums
# ----------------------------------------------------------------------------------------

cdef double sum_double(const floating* values, long size) noexcept nogil:
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


# ----------------------------------------------------------------------------------------
# Python-visible helpers and wrappers
# ----------------------------------------------------------------------------------------

def check_pair(name, value, minimum):
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


def check_data_format(data_format):
    if data_format not in ("channels_first", "channels_last"):
        raise ValueError(f"Invalid value for argument `data_format`: expected "
                         f"'channels_first' or 'channels_last'. "
                         f"Received: data_format={data_format!r}")
    return data_format


def conv_output_size(size, kernel, stride, pad_begin, pad_end, dilation):
    """Output length along one axis: ``(size + pads - dilation*(kernel-1) - 1) // stride + 1``."""
    return (size + pad_begin + pad_end - dilation * (kernel - 1) - 1) // stride + 1


def geometry(nchw_shape, filters, kernel_size, stride=1, padding=0, dilation=1, out_size=None):
    """The geometry record (a dict) of a convolution of an input of ``(N, C, H, W)`` sizes.

    ``padding`` is ``(pad_top, pad_left)``; ``out_size`` (default: symmetric padding)
    implies the bottom / right padding.
    """
    n, c, h, w = (int(s) for s in nchw_shape)
    kh, kw = check_pair("kernel_size", kernel_size, 1)
    sh, sw = check_pair("stride", stride, 1)
    pt, pl = check_pair("padding", padding, 0)
    dh, dw = check_pair("dilation", dilation, 1)
    if out_size is None:
        out_size = (conv_output_size(h, kh, sh, pt, pt, dh), conv_output_size(w, kw, sw, pl, pl, dw))
    out_h, out_w = check_pair("out_size", out_size, 1)
    return make_geometry(n, c, h, w, int(filters), kh, kw, sh, sw, pt, pl, dh, dw, out_h, out_w)


def _nchw_shape(shape, data_format):
    n, a, b, c = shape
    return (n, c, a, b) if data_format == "channels_last" else (n, a, b, c)


def im2col(x, kernel_size, stride=1, padding=0, dilation=1, out_size=None, n_threads=1,
           data_format="channels_first"):
    """Gather the convolution patches of a batch.

    Args:
        x: ``(N, C, H, W)`` (channels_first) or ``(N, H, W, C)`` (channels_last) array,
            float32/float64.
        kernel_size: int or ``(kh, kw)``.
        stride, dilation: int or pair, >= 1.
        padding: int or ``(pad_top, pad_left)``, >= 0.
        out_size: ``(out_h, out_w)``; implies the bottom/right padding.  Default: the size
            for symmetric padding.
        n_threads: OpenMP threads.
        data_format: ``"channels_first"`` or ``"channels_last"``.

    Returns:
        channels_first: ``(N, C*kh*kw, L)`` (``torch.nn.functional.unfold``), row
        ``(c*kh + i)*kw + j``.  channels_last: ``(N, L, kh*kw*C)``, column ``(i*kw + j)*C + c``.
        ``L = out_h*out_w``, position ``oh*out_w + ow``.
    """
    check_data_format(data_format)
    check_nd(x, "x", 4)
    cdef Geometry g = geometry(_nchw_shape(x.shape, data_format), 1, kernel_size, stride,
                               padding, dilation, out_size)
    n_threads = check_threads(n_threads)
    if data_format == "channels_last":
        cols = np.empty((g.n, g.l, g.k), dtype=x.dtype)
    else:
        cols = np.empty((g.n, g.k, g.l), dtype=x.dtype)
    if cols.size == 0 or x.size == 0:
        cols.fill(0)
        return cols
    _im2col_entry(x, cols, g, n_threads, data_format == "channels_last")
    return cols


def _im2col_entry(const floating[:, :, :, ::1] x, floating[:, :, ::1] cols, Geometry g,
                  int n_threads, bint nhwc):
    with nogil:
        if nhwc:
            im2col_nhwc_batch(&x[0, 0, 0, 0], g, &cols[0, 0, 0], n_threads)
        else:
            im2col_nchw_batch(&x[0, 0, 0, 0], g, &cols[0, 0, 0], g.l, g.k * g.l, n_threads)


def col2im(cols, input_shape, kernel_size, stride=1, padding=0, dilation=1, out_size=None,
           n_threads=1, data_format="channels_first"):
    """Scatter-add patches back into an image batch (the adjoint of :func:`im2col`).

    Args:
        cols: the layout :func:`im2col` returns for ``data_format``.
        input_shape: the image batch's shape in ``data_format`` (``(N, C, H, W)`` or
            ``(N, H, W, C)``).
        kernel_size, stride, padding, dilation, out_size, n_threads, data_format: as in
            :func:`im2col`.

    Returns:
        The image batch, of cols' dtype (``torch.nn.functional.fold`` for channels_first).
    """
    check_data_format(data_format)
    check_nd(cols, "cols", 3)
    try:
        input_shape = tuple(int(s) for s in input_shape)
    except (TypeError, ValueError):
        input_shape = None
    if input_shape is None or len(input_shape) != 4 or min(input_shape) < 0:
        raise ValueError(f"Invalid value for argument `input_shape`: expected 4 non-negative "
                         f"ints. Received: input_shape={input_shape!r}")
    cdef Geometry g = geometry(_nchw_shape(input_shape, data_format), 1, kernel_size, stride,
                               padding, dilation, out_size)
    n_threads = check_threads(n_threads)
    expected = (g.n, g.l, g.k) if data_format == "channels_last" else (g.n, g.k, g.l)
    if cols.shape != expected:
        raise ValueError(f"Invalid argument `cols`: expected shape {expected} for "
                         f"input_shape={input_shape}. Received: shape={cols.shape}")
    out = np.zeros(input_shape, dtype=cols.dtype)
    if out.size == 0:
        return out
    _col2im_entry(cols, out, g, n_threads, data_format == "channels_last")
    return out


def _col2im_entry(const floating[:, :, ::1] cols, floating[:, :, :, ::1] out, Geometry g,
                  int n_threads, bint nhwc):
    with nogil:
        if nhwc:
            col2im_nhwc_batch(&cols[0, 0, 0], g, &out[0, 0, 0, 0], n_threads)
        else:
            col2im_nchw_batch(&cols[0, 0, 0], g.l, g.k * g.l, g, &out[0, 0, 0, 0], n_threads)
