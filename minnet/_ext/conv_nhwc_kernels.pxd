"""The partial-sum reductions conv_kernels.pyx's channels_first backward shares with conv_nhwc_kernels.pyx."""
from minnet._ext._blas cimport floating


cdef void reduce_parts_transposed(const floating* parts, int n_parts, long k, long f,
                                  floating* out, int n_threads) noexcept nogil

cdef void sum_parts(const double[:, ::1] parts, floating[::1] out) noexcept nogil
