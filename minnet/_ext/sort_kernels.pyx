"""Stable argsort along one dimension of float32/float64 data, by LSD radix sort.

The array is seen as ``(outer, n, inner)`` (``n`` the sorted dimension, no copy for any
dimension of a C-contiguous array); each of the ``outer * inner`` rows is sorted by one
thread, and rows are split over OpenMP threads.  A row's result is its unique stable
order, so it does not depend on the thread count (nor on the split).

Each value becomes an unsigned integer key whose integer order is the float order:
``-0.0`` is read as ``+0.0`` (equal, as NumPy compares them), a non-negative float has its
sign bit set, a negative one all its bits inverted, and every NaN the largest key (NaNs
sort last, as NumPy's and PyTorch's sorts put them).  Descending order inverts every key
(NaNs first, as PyTorch's ``descending=True``).  An LSD radix sort on 8-bit digits (4 passes
for float32, 8 for float64; a pass whose digit is the same for the whole row is skipped)
moves each element to the end of its bucket in input order, so equal keys keep their
input order: the sort is stable.  The math is in ``docs/math/autograd_ops.md``.
"""
from cython.parallel cimport prange, threadid
from libc.stdint cimport int64_t, uint32_t, uint64_t
from libc.string cimport memcpy, memset

from minnet._ext._base cimport check_strided, check_threads
from minnet._ext._base cimport team as _team
from minnet._ext._blas cimport floating

import math

import numpy as np




cdef inline uint64_t _key(floating v, bint descending) noexcept nogil:
    cdef uint32_t b32
    cdef uint64_t b64, key
    if v != v:                      # NaN: the largest key
        key = <uint64_t> 0xFFFFFFFF if floating is float else ~(<uint64_t> 0)
    else:
        if v == 0:                  # -0.0 and +0.0 are equal: one key
            v = 0
        if floating is float:    # fast path: benchmarks/bench_autograd.py "sort dim 1"
            memcpy(&b32, &v, 4)
            key = <uint32_t> (~b32 if b32 >> 31 else b32 | (<uint32_t> 1 << 31))
        else:
            memcpy(&b64, &v, 8)
            key = ~b64 if b64 >> 63 else b64 | (<uint64_t> 1 << 63)
    if descending:
        key = ~key
        if floating is float:    # fast path: benchmarks/bench_autograd.py "sort dim 1"
            key &= <uint64_t> 0xFFFFFFFF
    return key


cdef void _argsort_row(const floating* x, Py_ssize_t x_stride,     # IN  (n,) strided
                       int64_t* out, Py_ssize_t out_stride,        # OUT (n,) strided
                       int64_t n, bint descending,
                       uint64_t* key_a, uint64_t* key_b,           # scratch (n,)
                       int64_t* idx_a, int64_t* idx_b,             # scratch (n,), float64 only
                       int64_t* count) noexcept nogil:             # scratch (8 * 256,)
    # float32: the 32-bit key and the position share one uint64 (key in the high half), so
    # a pass moves one word; float64: keys and positions move side by side.
    cdef int n_digits = sizeof(floating)
    cdef int p, shift, base = 32 if floating is float else 0
    cdef int64_t j, b, total, pos
    cdef uint64_t k
    cdef uint64_t* src_key = key_a
    cdef uint64_t* dst_key = key_b
    cdef int64_t* src_idx = idx_a
    cdef int64_t* dst_idx = idx_b
    cdef uint64_t* swap_key
    cdef int64_t* swap_idx
    memset(count, 0, 8 * 256 * sizeof(int64_t))
    for j in range(n):              # keys, and every digit's histogram in one pass
        k = _key(x[j * x_stride], descending)
        if floating is float:    # fast path: benchmarks/bench_autograd.py "sort dim 1"
            key_a[j] = (k << 32) | <uint64_t> j
        else:
            key_a[j] = k
            idx_a[j] = j
        for p in range(n_digits):
            count[p * 256 + ((k >> (8 * p)) & 255)] += 1
    for p in range(n_digits):
        shift = base + 8 * p
        if count[p * 256 + ((src_key[0] >> shift) & 255)] == n:
            continue                # one digit value for the whole row: the pass keeps the order
        total = 0
        for b in range(256):        # bucket starts
            pos = count[p * 256 + b]
            count[p * 256 + b] = total
            total += pos
        for j in range(n):          # stable: each element goes after the earlier ones of its bucket
            k = src_key[j]
            b = (k >> shift) & 255
            pos = count[p * 256 + b]
            count[p * 256 + b] = pos + 1
            dst_key[pos] = k
            if floating is double:    # fast path: benchmarks/bench_autograd.py "sort dim 1"
                dst_idx[pos] = src_idx[j]
        swap_key = src_key
        src_key = dst_key
        dst_key = swap_key
        swap_idx = src_idx
        src_idx = dst_idx
        dst_idx = swap_idx
    for j in range(n):
        if floating is float:    # fast path: benchmarks/bench_autograd.py "sort dim 1"
            out[j * out_stride] = <int64_t> (src_key[j] & <uint64_t> 0xFFFFFFFF)
        else:
            out[j * out_stride] = src_idx[j]


def argsort(const floating[:, :, :] x,      # IN  (outer, n, inner)
            int64_t[:, :, ::1] out,         # OUT (outer, n, inner)
            bint descending=False, int n_threads=1):
    """Stable argsort along axis 1 of ``x`` into ``out`` (``out[o, :, k]`` are the positions
    of ``x[o, :, k]`` in ascending order, descending when ``descending``; equal values keep
    their order; NaNs last, first when descending)."""
    cdef int64_t outer = x.shape[0], n = x.shape[1], inner = x.shape[2]
    cdef int64_t task
    cdef int team, t
    cdef Py_ssize_t es = sizeof(floating)
    if out.shape[0] != outer or out.shape[1] != n or out.shape[2] != inner:
        raise ValueError(f"Invalid argument `out`: expected shape {(outer, n, inner)}. "
                         f"Received: out.shape={(out.shape[0], out.shape[1], out.shape[2])}")
    if outer * n * inner == 0:
        return
    if floating is float and n >= 2 ** 32:    # fast path: benchmarks/bench_autograd.py "sort dim 1"
        raise ValueError(f"Invalid argument `x`: expected fewer than 2**32 elements along the "
                         f"sorted axis for float32. Received: {n}")
    team = _team(outer * n * inner, n_threads)
    cdef uint64_t[:, :, ::1] keys = np.empty((team, 2, n), dtype=np.uint64)
    cdef int64_t[:, :, ::1] idx = np.empty((team, 2, n if floating is double else 1), dtype=np.int64)
    cdef int64_t[:, ::1] count = np.empty((team, 8 * 256), dtype=np.int64)
    with nogil:
        for task in prange(outer * inner, schedule="static", num_threads=team):
            t = threadid()
            _argsort_row(&x[task // inner, 0, task % inner], x.strides[1] // es,
                         &out[task // inner, 0, task % inner], inner, n, descending,
                         &keys[t, 0, 0], &keys[t, 1, 0], &idx[t, 0, 0], &idx[t, 1, 0],
                         &count[t, 0])


def argsort_along(a, dim, descending=False, n_threads=1):
    """Stable argsort of the float32/float64 array ``a`` along ``dim`` (int64 positions, the
    shape of ``a``; see ``argsort``)."""
    check_strided(a, "a")
    if a.ndim == 0:
        return np.zeros((), dtype=np.int64)
    if not -a.ndim <= dim < a.ndim:
        raise ValueError(f"Invalid argument `dim`: expected an int in [{-a.ndim}, {a.ndim}). "
                         f"Received: dim={dim}")
    dim %= a.ndim
    n_threads = check_threads(n_threads)
    outer = math.prod(a.shape[:dim])
    inner = math.prod(a.shape[dim + 1:])
    src = np.ascontiguousarray(a).reshape(outer, a.shape[dim], inner)
    out = np.empty(a.shape, dtype=np.int64)
    argsort(src, out.reshape(outer, a.shape[dim], inner), bool(descending), int(n_threads))
    return out
