"""Dropout kernels: a counter-based Bernoulli mask fused with the scaling, and its backward.

The random numbers come from a counter-based hash, not from a stateful generator:
element ``i`` of a mask keyed by ``(seed, offset)`` is kept when

    u_i = top 53 bits of splitmix64(mix(seed) + (offset + i + 1) * GOLDEN) / 2**53  >=  rate

so every element is a pure function of ``(seed, offset + i)``.  Threads can therefore
split the elements any way they like and the mask is bit-identical for 1 or 16 threads.
The comparison ``u_i >= rate`` is done on integers (``u53 >= threshold`` with
``threshold = ceil(rate * 2**53)``, exact because scaling by a power of two is exact),
so float32 and float64 inputs get the same mask too.

Masks are ``uint8`` (1 byte per element, 0 = dropped, 1 = kept): they are what the
backward pass needs, a quarter of a float32 array.
"""
from cython.parallel cimport prange
from libc.stdint cimport uint8_t, uint64_t, int64_t

from minnet._ext._base cimport broadcast_value, check_strided, data_ptr, is_f32, size_of
from minnet._ext._base cimport BLOCK, n_blocks, team as _team
from minnet._ext._blas cimport floating

cimport numpy as cnp
import numpy as np

cnp.import_array()   # _base's inline data_ptr/is_f32/size_of call the NumPy C API here


cdef extern from "dropout_kernels.h":
    # the hash (one definition, in C) and the float32 dropout loop
    uint64_t minnet_mix64(uint64_t z) noexcept nogil
    uint8_t minnet_keep(uint64_t base, uint64_t counter, uint64_t threshold) noexcept nogil
    void minnet_dropout_block_f(const float* x, uint64_t base, uint64_t first, uint64_t threshold,
                                float scale, float* out, uint8_t* mask, Py_ssize_t n) noexcept nogil


cdef inline uint64_t _mix64(uint64_t z) noexcept nogil:
    return minnet_mix64(z)


cdef inline uint8_t _keep(uint64_t base, uint64_t counter, uint64_t threshold) noexcept nogil:
    return minnet_keep(base, counter, threshold)


# Threads take blocks of BLOCK elements (_base.pxd); the per-block loops are plain C loops
# (no OpenMP private variables inside), which the compiler vectorises.

cdef inline void _fill_block(int64_t lo, int64_t hi, uint64_t base, uint64_t offset,
                             uint64_t threshold, uint8_t* mask) noexcept nogil:
    cdef int64_t i
    for i in range(lo, hi):
        mask[i] = _keep(base, offset + <uint64_t> i, threshold)



cdef void fill_mask(int64_t n, uint64_t seed, uint64_t offset, uint64_t threshold,
                    uint8_t* mask,                                   # OUT (n,)
                    int n_threads) noexcept nogil:
    """mask[i] = 1 with probability 1 - rate, a pure function of (seed, offset + i)."""
    cdef int64_t blk
    cdef uint64_t base = _mix64(seed)
    for blk in prange(n_blocks(n), schedule="static", num_threads=_team(n, n_threads)):
        _fill_block(blk * BLOCK, min(n, (blk + 1) * BLOCK), base, offset, threshold, mask)


cdef inline void _dropout_block(int64_t lo, int64_t hi, const floating* x, uint64_t base,
                                uint64_t offset, uint64_t threshold, floating scale,
                                floating* out, uint8_t* mask) noexcept nogil:
    cdef int64_t i
    cdef uint8_t keep
    if floating is float:    # fast path: benchmarks/bench_norm_dropout_pool.py "dropout"
        # the same loop in C, in the per-CPU copies (dropout_kernels.h)
        minnet_dropout_block_f(x + lo, base, offset + <uint64_t> lo, threshold, scale, out + lo,
                               mask + lo, hi - lo)
        return
    for i in range(lo, hi):
        keep = _keep(base, offset + <uint64_t> i, threshold)
        mask[i] = keep
        # multiply by the mask (not a branch): vectorises, and NaN*0 stays NaN as in PyTorch
        out[i] = x[i] * (scale * keep)


cdef inline void _alpha_block(int64_t lo, int64_t hi, const floating* x, uint64_t base,
                              uint64_t offset, uint64_t threshold, floating a, floating b,
                              floating dropped, floating* out, uint8_t* mask) noexcept nogil:
    cdef int64_t i
    cdef uint8_t keep
    for i in range(lo, hi):
        keep = _keep(base, offset + <uint64_t> i, threshold)
        mask[i] = keep
        # multiply by the mask (not a branch): vectorises, and NaN*0 stays NaN as in PyTorch
        out[i] = x[i] * (a * keep) + (b if keep else dropped)


cdef void dropout_fwd(int64_t n, const floating* x,                 # IN (n,)
                      uint64_t seed, uint64_t offset, uint64_t threshold,
                      bint alpha, floating a, floating b, floating dropped,
                      floating* out,                                 # OUT (n,)
                      uint8_t* mask,                                 # OUT (n,)
                      int n_threads) noexcept nogil:
    """One fused pass: draw mask[i]; dropout (``alpha`` false): out[i] = x[i] * a if kept
    else 0; alpha dropout: out[i] = a * x[i] + b if kept else a * alpha' + b (= ``dropped``).
    Two block loops: dropout's ``x * a`` must not become ``x * a + 0`` (that would turn
    -0.0 into +0.0)."""
    cdef int64_t blk
    cdef uint64_t base = _mix64(seed)
    for blk in prange(n_blocks(n), schedule="static", num_threads=_team(n, n_threads)):
        if alpha:
            _alpha_block(blk * BLOCK, min(n, (blk + 1) * BLOCK), x, base, offset, threshold,
                         a, b, dropped, out, mask)
        else:
            _dropout_block(blk * BLOCK, min(n, (blk + 1) * BLOCK), x, base, offset, threshold,
                           a, out, mask)


cdef inline void _masked_block(int64_t lo, int64_t hi, const floating* grad, bint one_grad,
                               const uint8_t* mask, floating scale,
                               floating* out) noexcept nogil:
    # one_grad: grad[0] is the gradient of every element (the broadcast seed of
    # `.sum().backward()`), read once instead of from a full-size copy: one pass over
    # memory fewer (benchmarks/bench_autograd.py, dropout layer).  The same products.
    cdef int64_t i
    cdef floating g0
    if one_grad:
        g0 = grad[0]
        for i in range(lo, hi):
            out[i] = g0 * (scale * mask[i])
        return
    for i in range(lo, hi):
        out[i] = grad[i] * (scale * mask[i])


cdef void masked_scale_kernel(int64_t n, const floating* grad,      # IN (n,), or (1,) (one_grad)
                              bint one_grad,
                              const uint8_t* mask,                # IN (n,)
                              floating scale,
                              floating* out,                      # OUT (n,)
                              int n_threads) noexcept nogil:
    """out[i] = grad[i] * scale if mask[i] else 0 (the backward of both dropouts)."""
    cdef int64_t blk
    for blk in prange(n_blocks(n), schedule="static", num_threads=_team(n, n_threads)):
        _masked_block(blk * BLOCK, min(n, (blk + 1) * BLOCK), grad, one_grad, mask, scale, out)


cdef inline void _plane_scale(int64_t size, const floating* x, floating s,
                              floating* out) noexcept nogil:
    cdef int64_t j
    for j in range(size):
        out[j] = x[j] * s


cdef inline void _rows_scale(int64_t L, int64_t C, const floating* x, const uint8_t* mask,
                             floating scale, floating* out) noexcept nogil:
    cdef int64_t l, c
    for l in range(L):
        for c in range(C):
            out[l * C + c] = x[l * C + c] * (scale if mask[c] else 0)


cdef void channel_scale_kernel(int64_t N, int64_t L, int64_t C,
                               const floating* x,                 # IN (N, L, C)
                               const uint8_t* mask,               # IN (N, C)
                               floating scale,
                               floating* out,                     # OUT (N, L, C)
                               int n_threads) noexcept nogil:
    """out[n, l, c] = x[n, l, c] * scale if mask[n, c] else 0 (spatial dropout, fwd and
    bwd).  NHWC is (N, H*W, C); NCHW is (N*C, H*W, 1), its planes, with one multiplier each."""
    cdef int64_t n
    for n in prange(N, schedule="static", num_threads=_team(N * L * C, n_threads)):
        if C == 1:
            _plane_scale(L, x + n * L, scale if mask[n] else 0, out + n * L)
        else:
            _rows_scale(L, C, x + n * L * C, mask + n * C, scale, out + n * L * C)


# ---------------------------------------------------------------------------------
# Python-visible wrappers: validate, allocate outputs, release the GIL.

def _threshold(rate):
    """Integer threshold on the top 53 bits: kept iff u53 >= ceil(rate * 2**53)."""
    rate = float(rate)
    if not 0.0 <= rate < 1.0:
        raise ValueError(f"Invalid value for argument `rate`: expected a float in [0, 1). "
                         f"Received: rate={rate}")
    t = rate * 2.0 ** 53          # exact: scaling by a power of two
    ti = int(t)
    return ti + (1 if ti < t else 0)


def _check_mask(mask, size):
    if not isinstance(mask, np.ndarray) or mask.dtype != np.uint8 or mask.size != size:
        raise ValueError(f"Invalid argument `mask`: expected a uint8 array of {size} elements. "
                         f"Received: {getattr(mask, 'dtype', type(mask).__name__)} "
                         f"of size {getattr(mask, 'size', '?')}")


def dropout_mask(n, rate, seed, offset, n_threads=1):
    """The uint8 keep-mask of ``n`` elements for key ``(seed, offset)``.

    Args:
        n: number of elements.
        rate: drop probability in [0, 1).
        seed, offset: the key (uint64s, from ``minnet._random.dropout_key(n)``).
        n_threads: OpenMP threads; the result does not depend on it.

    Returns:
        uint8 array of shape (n,): 1 = kept (probability 1 - rate), 0 = dropped.
    """
    cdef uint64_t threshold = _threshold(rate)
    cdef uint64_t s = int(seed) & 0xFFFFFFFFFFFFFFFF, o = int(offset) & 0xFFFFFFFFFFFFFFFF
    cdef int64_t size = int(n)
    cdef int nt = max(1, int(n_threads))
    if size < 0:
        raise ValueError(f"Invalid argument `n`: expected a non-negative int. Received: n={n}")
    mask = np.empty(size, dtype=np.uint8)
    cdef uint8_t[::1] m = mask
    if size > 0:
        with nogil:
            fill_mask(size, s, o, threshold, &m[0], nt)
    return mask


def dropout_forward(x, rate, seed, offset, n_threads=1):
    """``out = x * mask / (1 - rate)`` with a fresh mask, in one pass.

    Args:
        x: float32/float64 array, any shape (made C-contiguous).
        rate: drop probability in [0, 1).
        seed, offset: mask key.
        n_threads: OpenMP threads (the mask does not depend on it).

    Returns:
        ``(out, mask)``: ``out`` like ``x``; ``mask`` uint8 of the same shape.

    Shape:
        x: (*), out: (*), mask: (*)
    """
    return _masked_forward(x, rate, seed, offset, n_threads, False)


def _masked_forward(x, rate, seed, offset, n_threads, bint alpha):
    """Check ``x`` and ``rate``, then one pass of dropout_fwd; returns ``(out, mask)``."""
    check_strided(x, "x")
    x = np.ascontiguousarray(x)
    cdef uint64_t threshold = _threshold(rate)
    cdef uint64_t s = int(seed) & 0xFFFFFFFFFFFFFFFF, o = int(offset) & 0xFFFFFFFFFFFFFFFF
    cdef int nt = max(1, int(n_threads))
    if alpha:
        a, b, dropped = alpha_dropout_coefficients(rate)
    else:
        # 1/(1-p) in double, rounded once to the input dtype (as PyTorch's scalar multiply).
        a, b, dropped = 1.0 / (1.0 - float(rate)), 0, 0
    cdef double da = a, db = b, dd = dropped
    out = np.empty_like(x)
    mask = np.empty(x.shape, dtype=np.uint8)
    cdef int64_t n = size_of(x)
    cdef void* px = data_ptr(x)
    cdef void* pout = data_ptr(out)
    cdef uint8_t* pmask = <uint8_t*> data_ptr(mask)
    if n == 0:
        return out, mask
    # Raw pointers of the checked arrays, not a fused memoryview dispatch: a Dropout layer
    # is a call per training step (benchmarks/bench_training.py --profile, "sig").
    if is_f32(x):
        with nogil:
            dropout_fwd(n, <const float*> px, s, o, threshold, alpha, <float> da, <float> db,
                        <float> dd, <float*> pout, pmask, nt)
    else:
        with nogil:
            dropout_fwd(n, <const double*> px, s, o, threshold, alpha, da, db, dd,
                        <double*> pout, pmask, nt)
    return out, mask


# PyTorch's alpha dropout constant: -alpha' = SELU's scale * alpha.
ALPHA = 1.7580993408473766


def alpha_dropout_coefficients(rate):
    """``(a, b, dropped)`` of alpha dropout: kept -> a*x + b, dropped -> a*(-ALPHA) + b.

    a = ((1 - p) * (1 + p * ALPHA**2)) ** -0.5 and b = a * ALPHA * p, as PyTorch.
    """
    p = float(rate)
    a = 1.0 / np.sqrt((ALPHA * ALPHA * p + 1.0) * (1.0 - p))
    b = ALPHA * a * p
    return a, b, b - ALPHA * a


def alpha_dropout_forward(x, rate, seed, offset, n_threads=1):
    """Alpha dropout: kept units ``a*x + b``, dropped units ``a*(-ALPHA) + b``.

    Args:
        x: float32/float64 array, any shape.
        rate: drop probability in [0, 1).
        seed, offset: mask key.
        n_threads: OpenMP threads.

    Returns:
        ``(out, mask)``; the backward is ``masked_scale_backward(grad, mask, a)``.

    Shape:
        x: (*), out: (*), mask: (*)
    """
    return _masked_forward(x, rate, seed, offset, n_threads, True)


def masked_scale_backward(grad, mask, scale, n_threads=1):
    """``grad_x = grad * mask * scale`` (dropout: scale = 1/(1-p); alpha dropout: a).

    Args:
        grad: float32/float64 upstream gradient.
        mask: the uint8 mask from the forward pass, same number of elements.
        scale: the forward multiplier of kept elements.
        n_threads: OpenMP threads.

    Returns:
        An array like ``grad``.

    Shape:
        grad: (*), mask: (*), returns (*)
    """
    check_strided(grad, "grad")
    _check_mask(mask, grad.size)
    mask = np.ascontiguousarray(mask)
    cdef int nt = max(1, int(n_threads))
    cdef double factor = float(scale)
    out = np.empty(grad.shape, grad.dtype)
    cdef bint one_grad = broadcast_value(grad)   # one value everywhere: the kernel reads it once
    if one_grad:
        grad = np.full(1, grad[(0,) * grad.ndim], grad.dtype)
    else:
        grad = np.ascontiguousarray(grad)
    cdef int64_t n = size_of(out)
    cdef void* pg = data_ptr(grad)
    cdef void* pout = data_ptr(out)
    cdef const uint8_t* pmask = <const uint8_t*> data_ptr(mask)
    if n == 0:
        return out
    if is_f32(out):
        with nogil:
            masked_scale_kernel(n, <const float*> pg, one_grad, pmask, <float> factor,
                                <float*> pout, nt)
    else:
        with nogil:
            masked_scale_kernel(n, <const double*> pg, one_grad, pmask, factor, <double*> pout,
                                nt)
    return out


def channel_scale(x, mask, scale, n_threads=1, channels_last=False):
    """Spatial dropout forward and backward: ``out[p] = x[p] * scale * mask[p]`` per plane.

    Args:
        x: float32/float64 array whose first two axes are (N, C) (NCHW); one mask value
           per (n, c) plane.
        mask: uint8 array of N*C elements.
        scale: multiplier of kept planes (1/(1-p)).
        n_threads: OpenMP threads.
        channels_last: ``x`` is (N, *, C) (NHWC); ``mask[n, c]`` still indexes (n, c), so
            a seed drops the same channels in both layouts.

    Returns:
        An array like ``x``.

    Shape:
        x: (N, C, *), mask: (N, C) or (N*C,), returns (N, C, *)
    """
    check_strided(x, "x")
    x = np.ascontiguousarray(x)
    if x.ndim < 2:
        raise ValueError(f"Invalid argument `x`: expected at least 2 dimensions (N, C, ...). "
                         f"Received: shape={x.shape}")
    if channels_last:
        N, C = x.shape[0], x.shape[x.ndim - 1]     # no negative index: wraparound is off
        _check_mask(mask, N * C)
    else:
        N, C = x.shape[0] * x.shape[1], 1             # the planes
        _check_mask(mask, N)
    mask = np.ascontiguousarray(mask).reshape(-1)
    out = np.empty_like(x)
    cdef int64_t planes = N, channels = C, length = x.size // (N * C) if x.size else 0
    cdef double factor = float(scale)
    cdef int nt = max(1, int(n_threads))
    cdef void* px = data_ptr(x)
    cdef void* pout = data_ptr(out)
    cdef const uint8_t* pmask = <const uint8_t*> data_ptr(mask)
    if x.size == 0:
        return out
    if is_f32(x):
        with nogil:
            channel_scale_kernel(planes, length, channels, <const float*> px, pmask,
                                 <float> factor, <float*> pout, nt)
    else:
        with nogil:
            channel_scale_kernel(planes, length, channels, <const double*> px, pmask, factor,
                                 <double*> pout, nt)
    return out
