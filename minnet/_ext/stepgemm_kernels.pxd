"""The float32 step GEMM of the recurrent layers (stepgemm_kernels.h): ``C = init + A @ B`` on a
weight packed once per call, every element summed in one fixed order whatever the split.
recurrent_kernels.pyx cimports it; stepgemm_kernels.pyx also holds the Python entries the tests and
benchmarks/bench_recurrent.py call."""
from libc.stdint cimport int64_t

cdef extern from "stepgemm_kernels.h" nogil:
    enum:
        MINNET_SG_INIT_C
        MINNET_SG_INIT_BIAS
        MINNET_SG_INIT_ZERO
    int minnet_sg_panels(int n)
    int64_t minnet_sg_packed_size(int K, int n)
    void minnet_sg_pack(int K, int k0, int kn, int n, const float* W, int64_t ldw, int trans,
                        float* Bp)
    void minnet_sg_gemm(int M, int n, int K, const float* A, int64_t lda, const float* Bp,
                        int init, const float* bias, float* C, int64_t ldc, int p0, int p1)
    int minnet_sg_set_isa(int level)


cdef void step_gemm(int M, int n, int K, const float* A, int64_t lda, const float* Bp,
                    int init, const float* bias, float* C, int64_t ldc,
                    int n_threads) noexcept nogil
