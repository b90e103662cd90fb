"""Gather, scatter-add, index-select, index-add and running sums along one dimension.

Every kernel sees its arrays as ``(outer, n, inner)``: ``outer`` is the product of the sizes
before the dimension, ``n`` its size, ``inner`` the product of the sizes after it, so the
dimension ``d`` of an N-d array needs no copy.  Inputs are strided (read-only views such as
the broadcast gradient of ``sum`` work as they are); outputs are C-contiguous.

Threads split the ``(outer row, block of inner columns)`` pairs.  Two pairs never write the
same output element, and each output element is summed in one fixed order (ascending
position along the dimension; descending for the reversed running sum), so the results are
bit-identical for any thread count.  Indices are int64; negative ones count from the end
(as PyTorch's); the kernels that take a per-element index check the range and return the
number of entries outside ``[-n, n)`` (those are skipped; the caller raises).

Running sums accumulate in float64 for float32 data, as PyTorch's CPU ``cumsum`` does.
"""
from cython.parallel cimport prange, threadid
from libc.stdint cimport int64_t
from libc.string cimport memcpy

from minnet._ext._base cimport team as _team
from minnet._ext._blas cimport floating

import numpy as np



cdef inline int64_t _column_block(int64_t outer, int64_t inner, int n_threads) noexcept nogil:
    # columns per task: whole rows when there are enough rows to share, else blocks of at
    # least 64 columns, about four per thread.
    cdef int64_t block
    if n_threads <= 1 or outer >= 4 * n_threads or inner <= 64:
        return inner
    block = (inner + 4 * n_threads - 1) // (4 * n_threads)
    return block if block > 64 else 64


# The per-task loops take raw pointers and element strides as arguments: inside the
# OpenMP region the memoryviews are shared variables reached through pointers, and with
# -fno-strict-aliasing every store would make the compiler reload their data and strides.

cdef inline void _copy_row(floating* out, const floating* src, int64_t n,
                           Py_ssize_t stride) noexcept nogil:
    cdef int64_t k
    if stride == 1:
        memcpy(out, src, n * sizeof(floating))
    else:
        for k in range(n):
            out[k] = src[k * stride]


cdef inline void _add_row(floating* out, const floating* src, int64_t n,
                          Py_ssize_t stride) noexcept nogil:
    cdef int64_t k
    cdef floating value
    if stride == 1:
        for k in range(n):
            out[k] += src[k]
    elif stride == 0:              # a broadcast gradient (the backward of sum)
        value = src[0]
        for k in range(n):
            out[k] += value
    else:
        for k in range(n):
            out[k] += src[k * stride]


cdef inline int64_t _wrap(int64_t j, int64_t n) noexcept nogil:
    # j counted from the end when negative; -1 when outside [-n, n)
    if j < 0:
        j = j + n
    return j if 0 <= j < n else -1


cdef inline int64_t _gather_task(const floating* src, Py_ssize_t src_n, Py_ssize_t src_k,
                                 int64_t n_src, const int64_t* index, Py_ssize_t index_n,
                                 Py_ssize_t index_k, floating* out, int64_t n_index,
                                 int64_t inner, int64_t width) noexcept nogil:
    # out[i, k] = src[index[i, k], k] for k < width (out rows are `inner` long)
    cdef int64_t i, k, j, bad = 0
    if width == 1:                 # gathering along the last dimension
        for i in range(n_index):
            j = _wrap(index[i * index_n], n_src)
            if j < 0:
                bad += 1
                out[i * inner] = 0
            else:
                out[i * inner] = src[j * src_n]
        return bad
    for i in range(n_index):
        for k in range(width):
            j = _wrap(index[i * index_n + k * index_k], n_src)
            if j < 0:
                bad += 1
                out[i * inner + k] = 0
            else:
                out[i * inner + k] = src[j * src_n + k * src_k]
    return bad


# Alike (duplicates): _scatter_task mirrors _gather_task (the same index walk and bounds
# count, adding where the gather reads).
cdef inline int64_t _scatter_task(const floating* src, Py_ssize_t src_n, Py_ssize_t src_k,
                                  int64_t n_out, const int64_t* index, Py_ssize_t index_n,
                                  Py_ssize_t index_k, floating* out, int64_t n_index,
                                  int64_t inner, int64_t width) noexcept nogil:
    # out[index[i, k], k] += src[i, k] for k < width, in ascending i
    cdef int64_t i, k, j, bad = 0
    if width == 1:
        for i in range(n_index):
            j = _wrap(index[i * index_n], n_out)
            if j < 0:
                bad += 1
            else:
                out[j * inner] += src[i * src_n]
        return bad
    for i in range(n_index):
        for k in range(width):
            j = _wrap(index[i * index_n + k * index_k], n_out)
            if j < 0:
                bad += 1
            else:
                out[j * inner + k] += src[i * src_n + k * src_k]
    return bad


cdef int64_t _along(const floating[:, :, :] src, const int64_t[:, :, :] index,
                    floating[:, :, ::1] out, int n_threads, bint scatter):
    # gather or scatter-add over (outer row, column block) tasks; the number of bad indices
    cdef int64_t outer = index.shape[0], n_index = index.shape[1], inner = index.shape[2]
    cdef int64_t block = _column_block(outer, inner, n_threads)
    cdef int64_t n_blocks = (inner + block - 1) // block
    cdef int64_t task, o, k0, bad = 0
    cdef Py_ssize_t es = sizeof(floating), ei = sizeof(int64_t)
    if outer * n_index * inner == 0:
        return 0
    with nogil:
        for task in prange(outer * n_blocks, schedule="static",
                           num_threads=_team(outer * n_index * inner, n_threads)):
            o = task // n_blocks
            k0 = (task % n_blocks) * block
            if scatter:
                bad += _scatter_task(&src[o, 0, k0], src.strides[1] // es, src.strides[2] // es,
                                     out.shape[1], &index[o, 0, k0], index.strides[1] // ei,
                                     index.strides[2] // ei, &out[o, 0, k0], n_index, inner,
                                     min(block, inner - k0))
            else:
                bad += _gather_task(&src[o, 0, k0], src.strides[1] // es, src.strides[2] // es,
                                    src.shape[1], &index[o, 0, k0], index.strides[1] // ei,
                                    index.strides[2] // ei, &out[o, 0, k0], n_index, inner,
                                    min(block, inner - k0))
    return bad


def gather(const floating[:, :, :] src,        # IN  (outer, n_src, inner)
           const int64_t[:, :, :] index,       # IN  (outer, n_index, inner)
           floating[:, :, ::1] out,            # OUT (outer, n_index, inner)
           int n_threads=1):
    """``out[o, i, k] = src[o, index[o, i, k], k]``; returns the number of bad indices."""
    return _along(src, index, out, n_threads, False)


def scatter_add(const floating[:, :, :] src,   # IN    (outer, n_index, inner)
                const int64_t[:, :, :] index,  # IN    (outer, n_index, inner)
                floating[:, :, ::1] out,       # INOUT (outer, n_out, inner)
                int n_threads=1):
    """``out[o, index[o, i, k], k] += src[o, i, k]`` (repeated indices accumulate, in
    ascending ``i``); returns the number of bad indices."""
    return _along(src, index, out, n_threads, True)


cdef inline void _select_task(const floating* src, Py_ssize_t src_n, Py_ssize_t src_k,
                              const int64_t* index, floating* out, int64_t n_index,
                              int64_t inner, int64_t width, bint add) noexcept nogil:
    # select: out[i, k] = src[index[i], k];  add: out[index[i], k] += src[i, k]  (k < width)
    cdef int64_t i
    if width == 1:                 # along the last dimension: one element per index
        if add:
            for i in range(n_index):
                out[index[i] * inner] += src[i * src_n]
        else:
            for i in range(n_index):
                out[i * inner] = src[index[i] * src_n]
        return
    for i in range(n_index):
        if add:
            _add_row(&out[index[i] * inner], &src[i * src_n], width, src_k)
        else:
            _copy_row(&out[i * inner], &src[index[i] * src_n], width, src_k)


def index_select(const floating[:, :, :] src,  # IN  (outer, n_src, inner)
                 const int64_t[::1] index,     # IN  (n_index,), each in [0, n_src)
                 floating[:, :, ::1] out,      # OUT (outer, n_index, inner)
                 int n_threads=1):
    """``out[o, i, :] = src[o, index[i], :]`` (the caller has checked the indices)."""
    cdef int64_t outer = out.shape[0], n_index = out.shape[1], inner = out.shape[2]
    cdef int64_t task, o, i
    cdef Py_ssize_t es = sizeof(floating)
    if outer * n_index * inner == 0:
        return
    with nogil:
        if inner == 1:             # along the last dimension: a task per outer row
            for o in prange(outer, schedule="static",
                            num_threads=_team(outer * n_index, n_threads)):
                _select_task(&src[o, 0, 0], src.strides[1] // es, 1, &index[0], &out[o, 0, 0],
                             n_index, 1, 1, False)
        else:                      # a task per output row: one contiguous copy, written once
            for task in prange(outer * n_index, schedule="static",
                               num_threads=_team(outer * n_index * inner, n_threads)):
                o = task // n_index
                i = task % n_index
                _copy_row(&out[o, i, 0], &src[o, index[i], 0], inner, src.strides[2] // es)


def index_add(const floating[:, :, :] src,     # IN    (outer, n_index, inner)
              const int64_t[::1] index,        # IN    (n_index,), each in [0, n_out)
              floating[:, :, ::1] out,         # INOUT (outer, n_out, inner)
              int n_threads=1):
    """``out[o, index[i], :] += src[o, i, :]`` (repeated indices accumulate, in ascending
    ``i``; the caller has checked the indices)."""
    cdef int64_t outer = src.shape[0], n_index = src.shape[1], inner = src.shape[2]
    cdef int64_t block = _column_block(outer, inner, n_threads)
    cdef int64_t n_blocks = (inner + block - 1) // block
    cdef int64_t task, o, k0
    cdef Py_ssize_t es = sizeof(floating)
    if outer * n_index * inner == 0:
        return
    with nogil:
        for task in prange(outer * n_blocks, schedule="static",
                           num_threads=_team(outer * n_index * inner, n_threads)):
            o = task // n_blocks
            k0 = (task % n_blocks) * block
            _select_task(&src[o, 0, k0], src.strides[1] // es, src.strides[2] // es, &index[0],
                         &out[o, 0, k0], n_index, inner, min(block, inner - k0), True)


cdef void _running_sum(const floating* src, Py_ssize_t src_n, Py_ssize_t src_k, floating* out,
                       int64_t n, int64_t inner, int64_t width, bint reverse,
                       double* acc) noexcept nogil:
    # out[i, k] = sum of src[j, k] over j <= i (j >= i when reverse), in float64
    cdef int64_t step, i, k
    cdef double running = 0.0
    if width == 1:                 # along the last dimension: one running sum
        if reverse:
            for i in range(n - 1, -1, -1):
                running += src[i * src_n]
                out[i * inner] = <floating> running
        elif src_n == 1 and inner == 1:
            for i in range(n):
                running += src[i]
                out[i] = <floating> running
        else:
            for i in range(n):
                running += src[i * src_n]
                out[i * inner] = <floating> running
        return
    for k in range(width):
        acc[k] = 0.0
    for step in range(n):
        i = n - 1 - step if reverse else step
        for k in range(width):
            acc[k] += src[i * src_n + k * src_k]
            out[i * inner + k] = <floating> acc[k]


def cumsum(const floating[:, :, :] src,        # IN  (outer, n, inner)
           floating[:, :, ::1] out,            # OUT (outer, n, inner)
           bint reverse=False, int n_threads=1):
    """``out[o, i, k] = sum of src[o, j, k] for j <= i`` (``j >= i`` when ``reverse``),
    accumulated in float64."""
    cdef int64_t outer = src.shape[0], n = src.shape[1], inner = src.shape[2]
    cdef int64_t block = _column_block(outer, inner, n_threads)
    cdef int64_t n_blocks = (inner + block - 1) // block
    cdef int64_t task, k0
    cdef int team = _team(outer * n * inner, n_threads)
    cdef Py_ssize_t es = sizeof(floating)
    if outer * inner == 0 or n == 0:
        return
    # one float64 accumulator row per thread
    cdef double[:, ::1] acc = np.empty((team, block), dtype=np.float64)
    with nogil:
        for task in prange(outer * n_blocks, schedule="static", num_threads=team):
            k0 = (task % n_blocks) * block
            _running_sum(&src[task // n_blocks, 0, k0], src.strides[1] // es, src.strides[2] // es,
                         &out[task // n_blocks, 0, k0], n, inner, min(block, inner - k0), reverse,
                         &acc[threadid(), 0])
