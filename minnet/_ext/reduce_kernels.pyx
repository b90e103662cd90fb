"""Sums (and means) over one axis or over all elements of float32/float64 data, threaded,
with a fixed order of additions: the results are bit-identical for any thread count.

The data is seen as C-contiguous ``(outer, n, inner)`` with ``n`` the summed axis (no copy
for any axis of a C-contiguous array; the sum of all elements is ``(1, size, 1)``).

* ``inner > 1``: every output element ``out[o, k]`` is summed by one thread, starting from 0
  and adding ``x[o, 0, k], x[o, 1, k], ...`` in order in the data's own dtype -- the order
  NumPy's ``np.add.reduce`` uses for such an axis, so the result equals ``np.sum``'s bit for
  bit.  Threads split the ``(o, block of columns)`` pairs; the inner loop adds a row of a
  column block to the block's running sums, which the compiler vectorises.
* ``inner == 1`` (the last axis, or all elements): each row is cut into blocks of
  ``SUM_BLOCK`` elements; every block is summed in float64 by one thread (32
  interleaved partial sums), and the block sums of a row are added in block order, in
  float64, then rounded once to the data's dtype.  The blocks do not depend on the thread
  count, so neither does the result.  (NumPy sums such an axis pairwise in the data's
  dtype: for float32 the results differ in the last bits, this one being the closer to
  the exact sum.)

A mean is the float64 sum (or the column sum) divided by ``divisor`` in float64, then
rounded.  The math is in ``docs/math/autograd_ops.md``.
"""
from cython.parallel cimport prange
from libc.math cimport NAN
cimport numpy as cnp

import math

import numpy as np

from minnet._ext._blas cimport floating
from minnet._ext._base cimport check_array, check_threads, data_ptr, is_f32, team
from minnet._ext._fastmath cimport minnet_dot_f  # also brings MINNET_FAST_CLONES

cnp.import_array()

cdef enum:
    # Elements per block of a row sum (inner == 1): the unit of work, and of the fixed order.
    SUM_BLOCK = 16384
    # Most columns a thread sums at once (inner > 1): their running sums stay in L1.
    COLUMN_BLOCK = 2048


cdef extern from "reduce_kernels.h":
    void minnet_add_rows_f(float* acc, const float* x, Py_ssize_t stride, Py_ssize_t n_rows,
                           Py_ssize_t width) noexcept nogil
    void minnet_add_rows_d(double* acc, const double* x, Py_ssize_t stride, Py_ssize_t n_rows,
                           Py_ssize_t width) noexcept nogil
    double minnet_block_sum_f(const float* x, Py_ssize_t n) noexcept nogil
    double minnet_block_sum_d(const double* x, Py_ssize_t n) noexcept nogil


cdef inline double _block_sum(const floating* x, Py_ssize_t n) noexcept nogil:
    if floating is float:
        return minnet_block_sum_f(x, n)
    return minnet_block_sum_d(x, n)


cdef inline void _column_sums(const floating* x, Py_ssize_t row_stride,   # IN  (n, width) rows
                              floating* out,                              # OUT (width,)
                              Py_ssize_t n, Py_ssize_t width, double divisor) noexcept nogil:
    cdef Py_ssize_t k
    for k in range(width):
        out[k] = 0
    if floating is float:
        minnet_add_rows_f(out, x, row_stride, n, width)
    else:
        minnet_add_rows_d(out, x, row_stride, n, width)
    if divisor != 1:
        for k in range(width):
            out[k] = <floating> (<double> out[k] / divisor)


cdef void _sum_axis(const floating* x,       # IN  (outer, n, inner), C-contiguous
                    floating* out,            # OUT (outer, inner)
                    double* partial,          # scratch (outer, n_row_blocks), inner == 1
                    Py_ssize_t outer, Py_ssize_t n, Py_ssize_t inner, double divisor,
                    int n_threads) noexcept nogil:
    cdef Py_ssize_t block, n_col_blocks, n_row_blocks, task, o, b, k0, start
    cdef int threads = team(outer * n * inner, n_threads)
    cdef double total
    if inner > 1:
        block = inner if inner < COLUMN_BLOCK else COLUMN_BLOCK
        if outer < threads:
            # too few rows to share: cut the columns into about one block per thread
            block = (inner + threads - 1) // threads
            block = (block + 15) // 16 * 16
            if block > COLUMN_BLOCK:
                block = COLUMN_BLOCK
        n_col_blocks = (inner + block - 1) // block
        for task in prange(outer * n_col_blocks, num_threads=threads, schedule="static"):
            o = task // n_col_blocks
            k0 = (task % n_col_blocks) * block
            _column_sums(x + o * n * inner + k0, inner, out + o * inner + k0, n,
                         block if inner - k0 > block else inner - k0, divisor)
        return
    n_row_blocks = (n + SUM_BLOCK - 1) // SUM_BLOCK
    for task in prange(outer * n_row_blocks, num_threads=threads, schedule="static"):
        o = task // n_row_blocks
        start = (task % n_row_blocks) * SUM_BLOCK
        partial[task] = _block_sum(x + o * n + start,
                                   SUM_BLOCK if n - start > SUM_BLOCK else n - start)
    for o in range(outer):
        total = 0
        for b in range(n_row_blocks):
            total += partial[o * n_row_blocks + b]
        out[o] = <floating> (total / divisor)


def sum_axis(x, axis, mean=False, n_threads=1):
    """``np.sum(x, axis)`` (``np.mean`` when ``mean``) of a C-contiguous float32/float64
    array over one axis, or over all elements when ``axis`` is None; threaded, the same
    result for any thread count (see the module docstring for the order of additions).

    Returns:
        An array of ``x``'s dtype, the shape of ``x`` without ``axis`` (0-d for all).
    """
    x = check_array(x, "x")
    cdef Py_ssize_t outer, n, inner
    if axis is None:
        outer, n, inner, shape = 1, x.size, 1, ()
    else:
        if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)) \
                or not -x.ndim <= axis < x.ndim:
            raise ValueError(f"Invalid argument `axis`: expected None or an int in "
                             f"[{-x.ndim}, {x.ndim}). Received: axis={axis!r}")
        axis = int(axis) % x.ndim
        outer = math.prod(x.shape[:axis])
        inner = math.prod(x.shape[axis + 1:])
        n, shape = x.shape[axis], x.shape[:axis] + x.shape[axis + 1:]
    cdef double divisor = float(n) if mean else 1.0
    cdef int threads = check_threads(n_threads)
    out = np.empty(shape, dtype=x.dtype)
    if outer * inner == 0:
        return out
    if n == 0:
        out[...] = 0 if divisor == 1 else NAN     # NumPy: the empty sum, the mean of nothing
        return out
    # Raw pointers of the checked arrays, not a fused memoryview dispatch: less generated C
    # for the same loops (docs/performance.md, "The build").
    partial = np.empty(outer * ((n + SUM_BLOCK - 1) // SUM_BLOCK) if inner == 1 else 0, np.float64)
    cdef void* px = data_ptr(x)
    cdef void* pout = data_ptr(out)
    cdef double* pp = <double*> data_ptr(partial)
    if is_f32(x):
        with nogil:
            _sum_axis(<const float*> px, <float*> pout, pp, outer, n, inner, divisor, threads)
    else:
        with nogil:
            _sum_axis(<const double*> px, <double*> pout, pp, outer, n, inner, divisor, threads)
    return out
