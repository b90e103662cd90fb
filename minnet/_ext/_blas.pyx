"""Row-major GEMM over ``scipy.linalg.cython_blas`` (sgemm/dgemm), callable without the GIL.

Fortran BLAS is column-major.  A row-major (m, n) array read as column-major is its
transpose, so ``C = op(A) @ op(B)`` (row-major) is computed as the column-major product
``C^T = op(B)^T @ op(A)^T``: the operands are swapped, never copied.

sgemm and dgemm are the function pointers SciPy exports in ``cython_blas.__pyx_capi__``,
looked up when this module is imported: the same pointers ``cimport`` would bind at that
moment, but building minnet needs no SciPy (its build environment installs one package
less: docs/performance.md, "The build").
"""
from cpython.pycapsule cimport PyCapsule_GetName, PyCapsule_GetPointer
from cython.parallel cimport prange

import numpy as np
from scipy.linalg import cython_blas

from minnet._ext._base cimport (check_array, check_nd, check_strided, check_threads,
                                deterministic_mode)


# The Fortran signatures, as scipy/linalg/cython_blas.pxd declares them.
ctypedef void (*sgemm_t)(char* transa, char* transb, int* m, int* n, int* k, float* alpha,
                         float* a, int* lda, float* b, int* ldb, float* beta, float* c,
                         int* ldc) noexcept nogil
ctypedef void (*dgemm_t)(char* transa, char* transb, int* m, int* n, int* k, double* alpha,
                         double* a, int* lda, double* b, int* ldb, double* beta, double* c,
                         int* ldc) noexcept nogil


cdef void* _scipy_blas(str name, str real) except NULL:
    """The pointer SciPy exports for ``name``, after checking that its signature (the
    capsule's name, as Cython writes it) is the (char*, char*, int*, int*, int*, real*,
    ...) one declared above."""
    capsule = cython_blas.__pyx_capi__[name]
    cdef const char* capsule_name = PyCapsule_GetName(capsule)
    signature = capsule_name.decode()
    if not (signature.startswith("void (char *, char *, int *, int *, int *, ")
            and signature.count(f"cython_blas_{real} *") == 5):
        raise ImportError(f"scipy.linalg.cython_blas.{name} has the signature {signature!r}, "
                          f"not the Fortran BLAS one minnet calls (scipy {cython_blas.__file__})")
    return PyCapsule_GetPointer(capsule, capsule_name)


cdef sgemm_t sgemm = <sgemm_t> _scipy_blas("sgemm", "s")
cdef dgemm_t dgemm = <dgemm_t> _scipy_blas("dgemm", "d")


cdef void gemm(bint trans_a, bint trans_b, int m, int n, int k,
               floating alpha, const floating* a, int lda,
               const floating* b, int ldb,
               floating beta, floating* c, int ldc) noexcept nogil:
    cdef char ta = b'T' if trans_a else b'N'
    cdef char tb = b'T' if trans_b else b'N'
    if m <= 0 or n <= 0:
        return
    if k <= 0:
        # BLAS leaves C * beta; do it here so callers need not special-case it.
        _scale(m, n, beta, c, ldc)
        return
    # Column-major call computing C^T (n x m) = op(B)^T (n x k) @ op(A)^T (k x m).
    if floating is float:
        sgemm(&tb, &ta, &n, &m, &k, &alpha, <float*> b, &ldb, <float*> a, &lda,
              &beta, c, &ldc)
    else:
        dgemm(&tb, &ta, &n, &m, &k, &alpha, <double*> b, &ldb, <double*> a, &lda,
              &beta, c, &ldc)


cdef inline void _scale(int m, int n, floating beta, floating* c, int ldc) noexcept nogil:
    cdef int i, j
    for i in range(m):
        for j in range(n):
            c[i * ldc + j] = 0 if beta == 0 else c[i * ldc + j] * beta


cdef void gemm_split(bint trans_a, bint trans_b, int m, int n, int k,
                     floating alpha, const floating* a, int lda,
                     const floating* b, int ldb,
                     floating beta, floating* c, int ldc,
                     int n_blocks, int n_threads) noexcept nogil:
    cdef int block, start, stop, size
    cdef int dim = m if m >= n else n
    if n_blocks > dim:
        n_blocks = dim
    if n_threads > n_blocks:
        n_threads = n_blocks
    if n_blocks <= 1:
        gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
        return
    size = (dim + n_blocks - 1) // n_blocks
    for block in prange(n_blocks, nogil=True, schedule="static", num_threads=n_threads):
        start = block * size
        stop = start + size
        if stop > dim:
            stop = dim
        if start >= stop:
            pass
        elif m >= n:
            # Row blocks of C: rows of op(A), all of op(B).
            gemm(trans_a, trans_b, stop - start, n, k, alpha,
                 a + (start if trans_a else <long> start * lda), lda,
                 b, ldb, beta, c + <long> start * ldc, ldc)
        else:
            # Column blocks of C: all of op(A), columns of op(B).
            gemm(trans_a, trans_b, m, stop - start, k, alpha, a, lda,
                 b + (<long> start * ldb if trans_b else start), ldb,
                 beta, c + start, ldc)


cdef void gemm_parallel(bint trans_a, bint trans_b, int m, int n, int k,
                        floating alpha, const floating* a, int lda,
                        const floating* b, int ldb,
                        floating beta, floating* c, int ldc,
                        int n_threads) noexcept nogil:
    cdef long flops = <long> m * n * k
    # Below ~1 MFLOP a thread team costs more than it saves.
    if n_threads <= 1 or flops < 1000000:
        gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
        return
    gemm_split(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc,
               n_threads, n_threads)


# ----------------------------------------------------------------------------------------
# The deterministic blocked GEMM (the flag is _base.deterministic_mode())
# ----------------------------------------------------------------------------------------

# gemm_blocks cuts the larger side of C into at most _GEMM_BLOCKS blocks of at least
# _GEMM_MIN_ROWS rows, a function of the shape alone: OpenBLAS picks its kernels (and so
# its rounding) from the block shape, so a split that followed the thread count would
# change the result with it.  12 blocks divide evenly over 1, 2, 3, 4 and 6 threads.
cdef enum:
    _GEMM_BLOCKS = 12
    _GEMM_MIN_ROWS = 32

cdef void gemm_blocks(bint trans_a, bint trans_b, int m, int n, int k,
                      floating alpha, const floating* a, int lda,
                      const floating* b, int ldb,
                      floating beta, floating* c, int ldc,
                      int n_threads) noexcept nogil:
    cdef int n_blocks, dim
    cdef long flops = <long> m * n * k
    if not deterministic_mode():
        gemm_parallel(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, n_threads)
        return
    dim = m if m >= n else n
    n_blocks = dim // _GEMM_MIN_ROWS
    if n_blocks > _GEMM_BLOCKS:
        n_blocks = _GEMM_BLOCKS
    # Below ~1 MFLOP a thread team costs more than it saves (a fixed rule, as the split).
    if flops < 1000000 or n_blocks <= 1:
        gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
        return
    gemm_split(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc,
               n_blocks, n_threads)


cdef void _gemm_batched(bint trans_a, bint trans_b, int batch, int m, int n, int k,
                        const floating* a, long stride_a, int lda,     # IN  item i at a + i * stride_a
                        const floating* b, long stride_b, int ldb,     # IN
                        floating* c, long stride_c, int ldc,           # OUT
                        int n_threads) noexcept nogil:
    # C[i] = op(A[i]) @ op(B[i]).  One item is gemm_parallel (the 2-D product); more are
    # shared out whole (as threads come free), one single-threaded gemm each: an item's
    # result is the same call whatever the thread count.  Batch strides may be 0 (an operand broadcast over the batch).
    cdef int i
    cdef long flops = <long> batch * m * n * k
    if batch == 1:
        gemm_parallel(trans_a, trans_b, m, n, k, 1, a, lda, b, ldb, 0, c, ldc, n_threads)
        return
    if n_threads <= 1 or flops < 1000000:
        for i in range(batch):
            gemm(trans_a, trans_b, m, n, k, 1, a + i * stride_a, lda, b + i * stride_b, ldb,
                 0, c + i * stride_c, ldc)
        return
    for i in prange(batch, nogil=True, schedule="dynamic",
                    num_threads=n_threads if n_threads < batch else batch):
        gemm(trans_a, trans_b, m, n, k, 1, a + i * stride_a, lda, b + i * stride_b, ldb,
             0, c + i * stride_c, ldc)


def _item_layout(name, x, rows, cols):
    """(batch stride, row stride) in elements of a 3-D operand whose items are row-major
    ``(rows, cols)`` with unit column stride, or a ValueError naming it."""
    cdef Py_ssize_t item = x.itemsize
    if x.size == 0:                    # nothing is read; NumPy's strides may be anything
        return 0, max(cols, 1)
    s0, s1, s2 = x.strides
    if (cols > 1 and s2 != item) or (rows > 1 and (s1 < cols * item or s1 % item)) \
            or s0 < 0 or s0 % item:
        raise ValueError(f"Invalid argument `{name}`: expected items with unit column stride and "
                         f"row stride >= {cols} elements (transpose flags instead of transposed "
                         f"views of other layouts). Received: {name}.shape={x.shape}, "
                         f"{name}.strides={x.strides}")
    return s0 // item, (s1 // item if rows > 1 else max(cols, 1))


def gemm_batched(a, b, c, trans_a=False, trans_b=False, n_threads=1):
    """``c[i] = op(a[i]) @ op(b[i])`` for every ``i`` of the batch.

    Args:
        a: (batch, m, k), or (batch, k, m) when ``trans_a``; float32 or float64; each item
            row-major with unit column stride; any batch stride (0: one item for all).
        b: (batch, k, n), or (batch, n, k) when ``trans_b``; like ``a``, same dtype.
        c: (batch, m, n) output, C-contiguous, same dtype.
        n_threads: threads. Batch 1 is ``py_gemm``'s blocked product; a larger batch gives
            whole items to the threads, one single-threaded GEMM each, so every item's result
            is the same for any thread count.

    Returns:
        ``c``.
    """
    check_strided(a, "a", 3)            # strides: checked by _item_layout below
    check_strided(b, "b", 3, a.dtype)
    check_strided(c, "c", 3, a.dtype)   # shape and layout: checked below
    batch = a.shape[0]
    m, ka = (a.shape[2], a.shape[1]) if trans_a else (a.shape[1], a.shape[2])
    kb, n = (b.shape[2], b.shape[1]) if trans_b else (b.shape[1], b.shape[2])
    if ka != kb or b.shape[0] != batch:
        raise ValueError(f"Invalid arguments `a`, `b`: expected op(a) (batch, m, k) and op(b) "
                         f"(batch, k, n). Received: op(a) {(batch, m, ka)}, op(b) "
                         f"{(b.shape[0], kb, n)}")
    if c.shape != (batch, m, n) or not c.flags.c_contiguous or not c.flags.writeable:
        raise ValueError(f"Invalid argument `c`: expected a writeable C-contiguous array of shape "
                         f"{(batch, m, n)}. Received: shape={c.shape}")
    threads = check_threads(n_threads)
    stride_a, lda = _item_layout("a", a, a.shape[1], a.shape[2])
    stride_b, ldb = _item_layout("b", b, b.shape[1], b.shape[2])
    if batch == 0 or m == 0 or n == 0:
        return c
    if ka == 0:
        c[...] = 0
        return c
    _batched_dispatch(a, b, c, trans_a, trans_b, stride_a, lda, stride_b, ldb, threads)
    return c


def _batched_dispatch(const floating[:, :, :] a, const floating[:, :, :] b,
                      floating[:, :, ::1] c, bint trans_a, bint trans_b,
                      long stride_a, int lda, long stride_b, int ldb, int n_threads):
    cdef int batch = c.shape[0], m = c.shape[1], n = c.shape[2]
    cdef int k = a.shape[1] if trans_a else a.shape[2]
    with nogil:
        _gemm_batched(trans_a, trans_b, batch, m, n, k, &a[0, 0, 0], stride_a, lda,
                      &b[0, 0, 0], stride_b, ldb, &c[0, 0, 0], <long> m * n, n, n_threads)


def py_gemm(a, b, trans_a=False, trans_b=False, alpha=1.0, beta=0.0, c=None, n_threads=1):
    """Python-visible ``C = alpha * op(A) @ op(B) + beta * C`` for testing the BLAS layer.

    Args:
        a: (m, k) array, or (k, m) when ``trans_a``; float32 or float64.
        b: (k, n) array, or (n, k) when ``trans_b``; same dtype as ``a``.
        trans_a, trans_b: use the transpose of ``a`` / ``b``.
        alpha, beta: scalars.
        c: optional (m, n) output, C-contiguous, same dtype; required when beta != 0.
        n_threads: threads for the blocked parallel GEMM (1 = a single BLAS call).

    Returns:
        The (m, n) array ``c``.
    """
    a = check_nd(np.ascontiguousarray(a), "a", 2)     # a test entry: it converts
    b = check_nd(np.ascontiguousarray(b), "b", 2, a.dtype)
    m, ka = (a.shape[1], a.shape[0]) if trans_a else a.shape
    kb, n = (b.shape[1], b.shape[0]) if trans_b else b.shape
    if ka != kb:
        raise ValueError(f"Invalid arguments `a`, `b`: inner dimensions differ, op(a) is "
                         f"{(m, ka)} and op(b) is {(kb, n)}")
    if c is None:
        if beta != 0:
            raise ValueError("Invalid argument `c`: required when beta != 0")
        c = np.empty((m, n), dtype=a.dtype)
    else:
        check_array(c, "c", a.dtype, (m, n))
    _gemm_dispatch(a, b, c, trans_a, trans_b, alpha, beta, n_threads)
    return c


def _gemm_dispatch(floating[:, ::1] a, floating[:, ::1] b, floating[:, ::1] c,
                   bint trans_a, bint trans_b, double alpha, double beta, int n_threads):
    cdef int m = c.shape[0], n = c.shape[1]
    cdef int k = a.shape[0] if trans_a else a.shape[1]
    cdef floating* pa = &a[0, 0] if a.size > 0 else NULL
    cdef floating* pb = &b[0, 0] if b.size > 0 else NULL
    cdef floating* pc = &c[0, 0] if c.size > 0 else NULL
    # Leading dimension must be >= 1 for BLAS even for empty operands.
    cdef int lda = a.shape[1] if a.shape[1] > 0 else 1
    cdef int ldb = b.shape[1] if b.shape[1] > 0 else 1
    cdef int ldc = n if n > 0 else 1
    if m == 0 or n == 0:
        return
    with nogil:
        gemm_parallel(trans_a, trans_b, m, n, k, <floating> alpha, pa, lda, pb, ldb,
                      <floating> beta, pc, ldc, n_threads)
