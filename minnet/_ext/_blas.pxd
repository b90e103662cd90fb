# Interface of minnet's BLAS layer: row-major GEMM over scipy's Fortran BLAS.
# Kernels in other modules `from minnet._ext._blas cimport floating, gemm, gemm_blocks`.

ctypedef fused floating:
    float
    double

# C = alpha * op(A) @ op(B) + beta * C, all row-major.
#   op(A) is (m, k): A is (m, k) with row stride lda, or (k, m) when trans_a.
#   op(B) is (k, n): B is (k, n) with row stride ldb, or (n, k) when trans_b.
#   C is (m, n) with row stride ldc.
cdef void gemm(bint trans_a, bint trans_b, int m, int n, int k,
               floating alpha, const floating* a, int lda,      # IN
               const floating* b, int ldb,                       # IN
               floating beta, floating* c, int ldc              # INOUT
               ) noexcept nogil

# Same product, split into at most n_threads blocks of rows (or of columns when C is
# wide and short), each a single-threaded GEMM run in its own OpenMP thread.
cdef void gemm_parallel(bint trans_a, bint trans_b, int m, int n, int k,
                        floating alpha, const floating* a, int lda,
                        const floating* b, int ldb,
                        floating beta, floating* c, int ldc,
                        int n_threads) noexcept nogil

# The split both use: at most n_blocks equal blocks of rows (of columns when C is wide and
# short), each a single-threaded GEMM, on at most n_threads OpenMP threads. The blocks, and
# so the result, depend on n_blocks only.
cdef void gemm_split(bint trans_a, bint trans_b, int m, int n, int k,
                     floating alpha, const floating* a, int lda,
                     const floating* b, int ldb,
                     floating beta, floating* c, int ldc,
                     int n_blocks, int n_threads) noexcept nogil

# ---- C = alpha op(A) op(B) + beta C split into blocks whose number and sizes depend only
#      on (m, n, k), never on n_threads, under mn.config.set_deterministic(True) (else
#      gemm_parallel's split), so the result is the same for any thread count.
cdef void gemm_blocks(bint trans_a, bint trans_b, int m, int n, int k,
                      floating alpha, const floating* a, int lda,
                      const floating* b, int ldb,
                      floating beta, floating* c, int ldc,
                      int n_threads) noexcept nogil
