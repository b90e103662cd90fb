"""Image kernels on channels_last ``(N, H, W, C)`` batches: nearest upsampling (forward and
backward), bilinear resizing (forward and backward, half-pixel centres as PyTorch's
``interpolate(mode="bilinear", align_corners=False)`` and Keras's ``Resizing``), a per-sample
affine warp with bilinear or nearest sampling and Keras's fill modes (the augmentation
layers), and per-sample horizontal/vertical flips.

A channels_first batch ``(N, C, H, W)`` is the channels_last batch ``(N * C, H, W, 1)`` of
the same memory, so every kernel serves both layouts (the wrappers in ``functional`` and
``layers`` reshape, never copy).

Threads split the batch (``prange`` over ``n``): each sample is read and written by one
thread only, and every sum (the backward passes) runs in a fixed order inside its sample,
so results do not depend on the thread count. The math is in ``docs/math/image.md``.
"""
from cython.parallel cimport prange
from libc.math cimport floor, fabs, fmod

from minnet._ext._base cimport check_nd, check_threads
from minnet._ext._blas cimport floating

import numpy as np


cdef enum:
    FILL_CONSTANT = 0
    FILL_NEAREST = 1
    FILL_REFLECT = 2
    FILL_WRAP = 3
    FILL_MIRROR = 4

FILL_MODES = {"constant": FILL_CONSTANT, "nearest": FILL_NEAREST, "reflect": FILL_REFLECT,
              "wrap": FILL_WRAP, "mirror": FILL_MIRROR}


cdef inline int _team(Py_ssize_t n, int n_threads) noexcept nogil:
    return 1 if n_threads < 1 or n < 2 else n_threads


# ---------------------------------------------------------------------------------------
# Nearest upsampling by integer factors (sh, sw): out[n, i, j, c] = x[n, i // sh, j // sw, c].
# ---------------------------------------------------------------------------------------

cdef void upsample_nearest_kernel(const floating[:, :, :, ::1] x,   # IN  (N, H, W, C)
                                  floating[:, :, :, ::1] y,         # OUT (N, H*sh, W*sw, C)
                                  int sh, int sw, int n_threads) noexcept nogil:
    cdef Py_ssize_t n, i, j, c
    cdef Py_ssize_t N = x.shape[0], OH = y.shape[1], OW = y.shape[2], C = x.shape[3]
    cdef const floating* src
    cdef floating* dst
    for n in prange(N, num_threads=_team(N, n_threads), schedule="static"):
        for i in range(OH):
            for j in range(OW):
                src = &x[n, i // sh, j // sw, 0]
                dst = &y[n, i, j, 0]
                for c in range(C):
                    dst[c] = src[c]


cdef void upsample_nearest_backward_kernel(const floating[:, :, :, ::1] g,   # IN  (N, H*sh, W*sw, C)
                                           floating[:, :, :, ::1] dx,        # OUT (N, H, W, C), zeroed
                                           int sh, int sw, int n_threads) noexcept nogil:
    # dx[n, i, j, c] = sum of the sh x sw block of g it was copied to (row-major order).
    cdef Py_ssize_t n, i, j, c
    cdef Py_ssize_t N = g.shape[0], OH = g.shape[1], OW = g.shape[2], C = g.shape[3]
    cdef const floating* src
    cdef floating* dst
    for n in prange(N, num_threads=_team(N, n_threads), schedule="static"):
        for i in range(OH):
            for j in range(OW):
                src = &g[n, i, j, 0]
                dst = &dx[n, i // sh, j // sw, 0]
                for c in range(C):
                    dst[c] = dst[c] + src[c]


# ---------------------------------------------------------------------------------------
# Bilinear resize, half-pixel centres: src = max((dst + 0.5) * in / out - 0.5, 0),
# i0 = floor(src), i1 = min(i0 + 1, in - 1), weight of i1 = src - i0.
# ---------------------------------------------------------------------------------------

cdef inline double _source(Py_ssize_t d, double scale) noexcept nogil:
    cdef double s = (d + 0.5) * scale - 0.5
    return 0 if s < 0 else s


cdef inline Py_ssize_t _floor_index(double s, Py_ssize_t size) noexcept nogil:
    cdef Py_ssize_t k = <Py_ssize_t> floor(s)
    return size - 1 if k > size - 1 else k


cdef void resize_bilinear_kernel(const floating[:, :, :, ::1] x,   # IN  (N, H, W, C)
                                 floating[:, :, :, ::1] y,         # OUT (N, OH, OW, C)
                                 int n_threads) noexcept nogil:
    cdef Py_ssize_t n, i, j, c, y0, y1, x0, x1
    cdef Py_ssize_t N = x.shape[0], H = x.shape[1], W = x.shape[2], C = x.shape[3]
    cdef Py_ssize_t OH = y.shape[1], OW = y.shape[2]
    cdef double sy = <double> H / OH, sx = <double> W / OW, ty, tx
    cdef floating w00, w01, w10, w11
    for n in prange(N, num_threads=_team(N, n_threads), schedule="static"):
        for i in range(OH):
            ty = _source(i, sy)
            y0 = _floor_index(ty, H)
            y1 = y0 + 1 if y0 < H - 1 else H - 1
            ty = ty - y0
            for j in range(OW):
                tx = _source(j, sx)
                x0 = _floor_index(tx, W)
                x1 = x0 + 1 if x0 < W - 1 else W - 1
                tx = tx - x0
                w00 = <floating> ((1 - ty) * (1 - tx))
                w01 = <floating> ((1 - ty) * tx)
                w10 = <floating> (ty * (1 - tx))
                w11 = <floating> (ty * tx)
                for c in range(C):
                    y[n, i, j, c] = (w00 * x[n, y0, x0, c] + w01 * x[n, y0, x1, c]
                                     + w10 * x[n, y1, x0, c] + w11 * x[n, y1, x1, c])


# Alike (duplicates): the backward walks the forward's taps (the same source rows, columns
# and weights, computed the same way) and scatters where the forward gathers.
cdef void resize_bilinear_backward_kernel(const floating[:, :, :, ::1] g,   # IN  (N, OH, OW, C)
                                          floating[:, :, :, ::1] dx,        # OUT (N, H, W, C), zeroed
                                          int n_threads) noexcept nogil:
    cdef Py_ssize_t n, i, j, c, y0, y1, x0, x1
    cdef Py_ssize_t N = dx.shape[0], H = dx.shape[1], W = dx.shape[2], C = dx.shape[3]
    cdef Py_ssize_t OH = g.shape[1], OW = g.shape[2]
    cdef double sy = <double> H / OH, sx = <double> W / OW, ty, tx
    cdef floating w00, w01, w10, w11, v
    for n in prange(N, num_threads=_team(N, n_threads), schedule="static"):
        for i in range(OH):
            ty = _source(i, sy)
            y0 = _floor_index(ty, H)
            y1 = y0 + 1 if y0 < H - 1 else H - 1
            ty = ty - y0
            for j in range(OW):
                tx = _source(j, sx)
                x0 = _floor_index(tx, W)
                x1 = x0 + 1 if x0 < W - 1 else W - 1
                tx = tx - x0
                w00 = <floating> ((1 - ty) * (1 - tx))
                w01 = <floating> ((1 - ty) * tx)
                w10 = <floating> (ty * (1 - tx))
                w11 = <floating> (ty * tx)
                for c in range(C):
                    v = g[n, i, j, c]
                    dx[n, y0, x0, c] += w00 * v
                    dx[n, y0, x1, c] += w01 * v
                    dx[n, y1, x0, c] += w10 * v
                    dx[n, y1, x1, c] += w11 * v


# ---------------------------------------------------------------------------------------
# Affine warp: output pixel (row i, column j) reads the input at
#   col = m[0] * j + m[1] * i + m[2],  row = m[3] * j + m[4] * i + m[5]
# (Keras's transform vector without the projective terms), sampled bilinearly or nearest;
# coordinates outside the image are mapped by the fill mode (Keras's / TF's definitions):
#   reflect  (d c b a | a b c d | d c b a)   mirror (d c b | a b c d | c b a)
#   wrap     (a b c d | a b c d | a b c d)   nearest (a a a | a b c d | d d d)
#   constant: fill_value outside.
# ---------------------------------------------------------------------------------------

cdef inline double _map_coordinate(double p, Py_ssize_t size, int mode) noexcept nogil:
    cdef double length, q
    if p >= 0 and p <= size - 1:
        return p                         # inside: every mode leaves it (the common case)
    if mode == FILL_REFLECT:
        if size == 1:
            return 0
        length = 2.0 * size
        q = fmod(p + 0.5, length)
        if q < 0:
            q += length
        if q >= size:
            q = length - q
        return q - 0.5
    elif mode == FILL_MIRROR:
        if size == 1:
            return 0
        length = 2.0 * (size - 1)
        q = fmod(fabs(p), length)
        return length - q if q > size - 1 else q
    elif mode == FILL_WRAP:
        q = fmod(p + 0.5, <double> size)
        if q < 0:
            q += size
        return q - 0.5
    elif mode == FILL_NEAREST:
        return 0 if p < 0 else (size - 1 if p > size - 1 else p)
    return p


cdef inline Py_ssize_t _index(Py_ssize_t k, Py_ssize_t size, int mode) noexcept nogil:
    # An integer tap outside [0, size) after the coordinate was mapped (it can be one step
    # out, at the half-pixel borders): wrap for "wrap", clamp otherwise; -1 for "constant".
    if k >= 0 and k < size:
        return k
    if mode == FILL_CONSTANT:
        return -1
    if mode == FILL_WRAP:
        return k % size if k >= 0 else (k % size + size) % size
    return 0 if k < 0 else size - 1


cdef inline Py_ssize_t _floor(double v) noexcept nogil:
    cdef Py_ssize_t k = <Py_ssize_t> v
    return k - 1 if k > v else k


cdef void _affine_sample(const floating* xs, floating* ys, const double* m,
                         Py_ssize_t H, Py_ssize_t W, Py_ssize_t C, Py_ssize_t OH, Py_ssize_t OW,
                         Py_ssize_t pixel_in, Py_ssize_t chan_in,
                         Py_ssize_t pixel_out, Py_ssize_t chan_out,
                         bint nearest, int mode, floating fill) noexcept nogil:
    # One sample. A pixel (r, q) of the input is at xs + (r * W + q) * pixel_in and its
    # channel c at + c * chan_in: channels_last has (pixel, chan) = (C, 1), channels_first
    # (1, H * W); the coordinates of each output pixel are computed once for all channels.
    cdef Py_ssize_t i, j, c, r0, r1, c0, c1, o
    cdef double row, col, ar, ac
    cdef floating w00, w01, w10, w11, v00, v01, v10, v11
    cdef const floating* p00
    for i in range(OH):
        for j in range(OW):
            o = (i * OW + j) * pixel_out
            col = m[0] * j + m[1] * i + m[2]
            row = m[3] * j + m[4] * i + m[5]
            if mode == FILL_CONSTANT and (row <= -1 or row >= H or col <= -1 or col >= W):
                for c in range(C):
                    ys[o + c * chan_out] = fill
                continue
            row = _map_coordinate(row, H, mode)
            col = _map_coordinate(col, W, mode)
            if nearest:
                r0 = _index(_floor(row + 0.5), H, mode)
                c0 = _index(_floor(col + 0.5), W, mode)
                for c in range(C):
                    ys[o + c * chan_out] = fill if (r0 < 0 or c0 < 0) else \
                        xs[(r0 * W + c0) * pixel_in + c * chan_in]
                continue
            r0 = _floor(row)
            c0 = _floor(col)
            ar = row - r0
            ac = col - c0
            w11 = <floating> (ar * ac)
            w10 = <floating> (ar * (1 - ac))
            w01 = <floating> ((1 - ar) * ac)
            w00 = <floating> ((1 - ar) * (1 - ac))
            if r0 >= 0 and r0 + 1 < H and c0 >= 0 and c0 + 1 < W:
                # all four taps inside: no index mapping
                p00 = xs + (r0 * W + c0) * pixel_in
                for c in range(C):
                    ys[o + c * chan_out] = (w00 * p00[c * chan_in] + w01 * p00[pixel_in + c * chan_in]
                                            + w10 * p00[W * pixel_in + c * chan_in]
                                            + w11 * p00[(W + 1) * pixel_in + c * chan_in])
                continue
            r1 = _index(r0 + 1, H, mode)
            c1 = _index(c0 + 1, W, mode)
            r0 = _index(r0, H, mode)
            c0 = _index(c0, W, mode)
            for c in range(C):
                v00 = fill if (r0 < 0 or c0 < 0) else xs[(r0 * W + c0) * pixel_in + c * chan_in]
                v01 = fill if (r0 < 0 or c1 < 0) else xs[(r0 * W + c1) * pixel_in + c * chan_in]
                v10 = fill if (r1 < 0 or c0 < 0) else xs[(r1 * W + c0) * pixel_in + c * chan_in]
                v11 = fill if (r1 < 0 or c1 < 0) else xs[(r1 * W + c1) * pixel_in + c * chan_in]
                ys[o + c * chan_out] = w00 * v00 + w01 * v01 + w10 * v10 + w11 * v11


cdef void affine_kernel(const floating[:, :, :, ::1] x,     # IN  (N, H, W, C) or (N, C, H, W)
                        const double[:, ::1] m,             # IN  (N, 6) output -> input
                        floating[:, :, :, ::1] y,           # OUT (N, OH, OW, C) or (N, C, OH, OW)
                        bint channels_first, bint nearest, int mode, floating fill,
                        int n_threads) noexcept nogil:
    cdef Py_ssize_t n, N = x.shape[0], H, W, C, OH, OW
    if channels_first:
        C, H, W, OH, OW = x.shape[1], x.shape[2], x.shape[3], y.shape[2], y.shape[3]
    else:
        H, W, C, OH, OW = x.shape[1], x.shape[2], x.shape[3], y.shape[1], y.shape[2]
    for n in prange(N, num_threads=_team(N, n_threads), schedule="static"):
        if channels_first:
            _affine_sample(&x[n, 0, 0, 0], &y[n, 0, 0, 0], &m[n, 0], H, W, C, OH, OW,
                           1, H * W, 1, OH * OW, nearest, mode, fill)
        else:
            _affine_sample(&x[n, 0, 0, 0], &y[n, 0, 0, 0], &m[n, 0], H, W, C, OH, OW,
                           C, 1, C, 1, nearest, mode, fill)


cdef void flip_kernel(const floating[:, :, :, ::1] x,   # IN  (N, H, W, C)
                      const unsigned char[::1] flip_h,  # IN  (N,) 1: flip left-right
                      const unsigned char[::1] flip_v,  # IN  (N,) 1: flip up-down
                      floating[:, :, :, ::1] y,         # OUT like x
                      int n_threads) noexcept nogil:
    cdef Py_ssize_t n, i, j, c, si, sj
    cdef Py_ssize_t N = x.shape[0], H = x.shape[1], W = x.shape[2], C = x.shape[3]
    for n in prange(N, num_threads=_team(N, n_threads), schedule="static"):
        for i in range(H):
            si = H - 1 - i if flip_v[n] else i
            for j in range(W):
                sj = W - 1 - j if flip_h[n] else j
                for c in range(C):
                    y[n, i, j, c] = x[n, si, sj, c]


# ---------------------------------------------------------------------------------------
# Typed entry points and Python-visible wrappers (validate, allocate, call).
# ---------------------------------------------------------------------------------------

def _upsample(const floating[:, :, :, ::1] x, floating[:, :, :, ::1] y, int sh, int sw, int t):
    with nogil:
        upsample_nearest_kernel(x, y, sh, sw, t)


def _upsample_backward(const floating[:, :, :, ::1] g, floating[:, :, :, ::1] dx, int sh,
                       int sw, int t):
    with nogil:
        upsample_nearest_backward_kernel(g, dx, sh, sw, t)


def _resize(const floating[:, :, :, ::1] x, floating[:, :, :, ::1] y, int t):
    with nogil:
        resize_bilinear_kernel(x, y, t)


def _resize_backward(const floating[:, :, :, ::1] g, floating[:, :, :, ::1] dx, int t):
    with nogil:
        resize_bilinear_backward_kernel(g, dx, t)


def _affine(const floating[:, :, :, ::1] x, const double[:, ::1] m, floating[:, :, :, ::1] y,
            bint channels_first, bint nearest, int mode, double fill, int t):
    with nogil:
        affine_kernel(x, m, y, channels_first, nearest, mode, <floating> fill, t)


def _flip(const floating[:, :, :, ::1] x, const unsigned char[::1] fh,
          const unsigned char[::1] fv, floating[:, :, :, ::1] y, int t):
    with nogil:
        flip_kernel(x, fh, fv, y, t)


def _positive(value, name):
    value = int(value)
    if value < 1:
        raise ValueError(f"Invalid argument `{name}`: expected an int >= 1. "
                         f"Received: {name}={value}")
    return value


def upsample_nearest(x, sh, sw, n_threads=1):
    """``y[n, i, j, c] = x[n, i // sh, j // sw, c]``.

    Shape:
        x: ``(N, H, W, C)``; y: ``(N, H*sh, W*sw, C)``.
    """
    check_nd(x, "x", 4)              # (N, H, W, C)
    sh, sw = _positive(sh, "sh"), _positive(sw, "sw")
    y = np.empty((x.shape[0], x.shape[1] * sh, x.shape[2] * sw, x.shape[3]), x.dtype)
    _upsample(x, y, sh, sw, check_threads(n_threads))
    return y


def upsample_nearest_backward(grad, sh, sw, n_threads=1):
    """Sum of each ``sh x sw`` block of ``grad``.

    Shape:
        grad: ``(N, H*sh, W*sw, C)``; dx: ``(N, H, W, C)``.
    """
    check_nd(grad, "grad", 4)        # (N, H, W, C)
    sh, sw = _positive(sh, "sh"), _positive(sw, "sw")
    if grad.shape[1] % sh or grad.shape[2] % sw:
        raise ValueError(f"Invalid argument `grad`: its height and width must be multiples of "
                         f"({sh}, {sw}). Received: grad.shape={grad.shape}")
    dx = np.zeros((grad.shape[0], grad.shape[1] // sh, grad.shape[2] // sw, grad.shape[3]),
                  grad.dtype)
    _upsample_backward(grad, dx, sh, sw, check_threads(n_threads))
    return dx


def resize_bilinear(x, out_height, out_width, n_threads=1):
    """Bilinear resize with half-pixel centres (PyTorch ``align_corners=False``).

    Shape:
        x: ``(N, H, W, C)``; y: ``(N, out_height, out_width, C)``.
    """
    check_nd(x, "x", 4)              # (N, H, W, C)
    if x.shape[1] < 1 or x.shape[2] < 1:
        raise ValueError(f"Invalid argument `x`: expected height and width >= 1. "
                         f"Received: x.shape={x.shape}")
    y = np.empty((x.shape[0], _positive(out_height, "out_height"),
                  _positive(out_width, "out_width"), x.shape[3]), x.dtype)
    _resize(x, y, check_threads(n_threads))
    return y


def resize_bilinear_backward(grad, in_height, in_width, n_threads=1):
    """The adjoint of ``resize_bilinear``: each output gradient spread over its 4 taps.

    Shape:
        grad: ``(N, OH, OW, C)``; dx: ``(N, in_height, in_width, C)``.
    """
    check_nd(grad, "grad", 4)        # (N, H, W, C)
    dx = np.zeros((grad.shape[0], _positive(in_height, "in_height"),
                   _positive(in_width, "in_width"), grad.shape[3]), grad.dtype)
    _resize_backward(grad, dx, check_threads(n_threads))
    return dx


def affine_transform(x, matrices, out_height=None, out_width=None, interpolation="bilinear",
                     fill_mode="reflect", fill_value=0.0, channels_first=False, n_threads=1):
    """Warp each sample by its own affine map (output pixel -> input coordinates).

    Args:
        x: ``(N, H, W, C)`` (or ``(N, C, H, W)`` with ``channels_first``) float32/float64,
            C-contiguous.
        matrices: ``(N, 6)`` float64: ``col = m0*j + m1*i + m2``, ``row = m3*j + m4*i + m5``
            for output row ``i``, column ``j``.
        interpolation: ``"bilinear"`` or ``"nearest"``.
        fill_mode: ``"reflect"``, ``"wrap"``, ``"constant"``, ``"nearest"`` or ``"mirror"``.
        fill_value: the value outside the image for ``"constant"``.
        channels_first: the layout of ``x`` and of the result.

    Shape:
        y: ``(N, out_height or H, out_width or W, C)`` (or channels first).
    """
    check_nd(x, "x", 4)
    if interpolation not in ("bilinear", "nearest"):
        raise ValueError(f"Invalid argument `interpolation`: expected 'bilinear' or 'nearest'. "
                         f"Received: interpolation={interpolation!r}")
    if fill_mode not in FILL_MODES:
        raise ValueError(f"Invalid argument `fill_mode`: expected one of {sorted(FILL_MODES)}. "
                         f"Received: fill_mode={fill_mode!r}")
    matrices = np.ascontiguousarray(matrices, dtype=np.float64)
    if matrices.shape != (x.shape[0], 6) or not np.all(np.isfinite(matrices)):
        raise ValueError(f"Invalid argument `matrices`: expected finite values of shape "
                         f"({x.shape[0]}, 6). Received: shape {matrices.shape}")
    if channels_first:
        n, c, h, w = x.shape
    else:
        n, h, w, c = x.shape
    out_height = h if out_height is None else _positive(out_height, "out_height")
    out_width = w if out_width is None else _positive(out_width, "out_width")
    shape = (n, c, out_height, out_width) if channels_first else (n, out_height, out_width, c)
    y = np.empty(shape, x.dtype)
    if h == 0 or w == 0:
        y[...] = fill_value
        return y
    _affine(x, matrices, y, bool(channels_first), interpolation == "nearest",
            FILL_MODES[fill_mode], float(fill_value), check_threads(n_threads))
    return y


def flip(x, flip_horizontal, flip_vertical, n_threads=1):
    """Flip sample ``n`` left-right where ``flip_horizontal[n]`` and up-down where
    ``flip_vertical[n]`` (uint8/bool arrays of length N).

    Shape:
        x, y: ``(N, H, W, C)``.
    """
    check_nd(x, "x", 4)              # (N, H, W, C)
    fh = np.ascontiguousarray(flip_horizontal, dtype=np.uint8)
    fv = np.ascontiguousarray(flip_vertical, dtype=np.uint8)
    if fh.shape != (x.shape[0],) or fv.shape != (x.shape[0],):
        raise ValueError(f"Invalid arguments `flip_horizontal`/`flip_vertical`: expected shape "
                         f"({x.shape[0]},). Received: {fh.shape}, {fv.shape}")
    y = np.empty_like(x)
    _flip(x, fh, fv, y, check_threads(n_threads))
    return y
