"""Strided transposes (transpose_kernels.h): ``Y[i, j] = relu?(Yt[j, i] + b[j])``, SSE 4 x 4
register blocks for float32 on x86-64, 16 x 16 scalar tiles otherwise; the same add and
select either way.  Used by linear_kernels.pyx (the transposed forward's last pass) and
winograd_kernels.pyx (the channels_first output)."""
from minnet._ext._blas cimport floating

cdef extern from "transpose_kernels.h" nogil:
    void minnet_transpose_f32(const float* src, Py_ssize_t lds, const float* bias, float* dst,
                              Py_ssize_t ldd, Py_ssize_t m, int relu, Py_ssize_t i_begin,
                              Py_ssize_t i_end)
    void minnet_transpose_f64(const double* src, Py_ssize_t lds, const double* bias,
                              double* dst, Py_ssize_t ldd, Py_ssize_t m, int relu,
                              Py_ssize_t i_begin, Py_ssize_t i_end)


cdef inline void transpose_rows(const floating* src, Py_ssize_t lds, const floating* bias, floating* dst,
                                Py_ssize_t ldd, Py_ssize_t m, bint relu, Py_ssize_t i_begin,
                                Py_ssize_t i_end) noexcept nogil:
    """Rows ``[i_begin, i_end)`` of ``dst`` (row stride ``ldd``, ``m`` columns) from the
    columns of ``src`` (row stride ``lds``); ``bias`` may be NULL."""
    if floating is float:
        minnet_transpose_f32(src, lds, bias, dst, ldd, m, relu, i_begin, i_end)
    else:
        minnet_transpose_f64(src, lds, bias, dst, ldd, m, relu, i_begin, i_end)
