"""The convolution's GEMMs (convgemm_kernels.h): minnet's own packed register-tile sgemm for float32,
the BLAS (_blas.pyx) for float64. Every float32 element is summed in one fixed order whatever
the split of C, so ``conv_gemm_blocks`` may split over any number of threads."""
from cython.parallel cimport prange
from libc.stdint cimport int64_t

from minnet._ext._blas cimport floating, gemm, gemm_blocks

cdef extern from "convgemm_kernels.h" nogil:
    int minnet_cg_gemm(int trans_a, int trans_b, int M, int N, int K, const float* A,
                       int64_t lda, const float* B, int64_t ldb, float beta, float* C,
                       int64_t ldc, float* work)
    int minnet_cg_set_isa(int level)


cdef inline void conv_gemm(bint trans_a, bint trans_b, int m, int n, int k,
                           const floating* a, int lda, const floating* b, int ldb,
                           floating beta, floating* c, int ldc) noexcept nogil:
    """C = beta C + op(A) @ op(B) (_blas.gemm's arguments, alpha = 1), one thread."""
    if floating is float:
        if minnet_cg_gemm(trans_a, trans_b, m, n, k, a, lda, b, ldb, beta, c, ldc, NULL) == 0:
            return
    gemm(trans_a, trans_b, m, n, k, <floating> 1, a, lda, b, ldb, beta, c, ldc)


cdef inline void conv_gemm_blocks(bint trans_a, bint trans_b, int m, int n, int k,
                                  const floating* a, int lda, const floating* b, int ldb,
                                  floating beta, floating* c, int ldc,
                                  int n_threads) noexcept nogil:
    """The same product in blocks of rows of C (of columns when C is short and wide) on
    ``n_threads`` threads; float32 bits do not depend on the split, float64 goes through
    _blas's blocks (fixed by the shapes)."""
    if floating is double:
        gemm_blocks(trans_a, trans_b, m, n, k, 1, a, lda, b, ldb, beta, c, ldc, n_threads)
    else:
        _float_blocks(trans_a, trans_b, m, n, k, a, lda, b, ldb, beta, c, ldc, n_threads)


cdef inline void _float_blocks(bint trans_a, bint trans_b, int m, int n, int k,
                               const float* a, int lda, const float* b, int ldb,
                               float beta, float* c, int ldc, int n_threads) noexcept nogil:
    cdef int block, n_blocks, size, start, stop
    cdef bint rows = m >= n
    cdef int dim = m if rows else n
    n_blocks = n_threads if n_threads < dim else dim
    if n_blocks <= 1:
        conv_gemm(trans_a, trans_b, m, n, k, a, lda, b, ldb, beta, c, ldc)
        return
    size = (dim + n_blocks - 1) // n_blocks
    for block in prange(n_blocks, schedule="static", num_threads=n_blocks):
        start = block * size
        stop = start + size if start + size < dim else dim
        if start >= stop:
            continue
        if rows:
            conv_gemm(trans_a, trans_b, stop - start, n, k,
                      a + (start if trans_a else <long> start * lda), lda, b, ldb, beta,
                      c + <long> start * ldc, ldc)
        else:
            conv_gemm(trans_a, trans_b, m, stop - start, k, a, lda,
                      b + (<long> start * ldb if trans_b else start), ldb, beta, c + start, ldc)
