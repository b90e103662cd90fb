# Interface of minnet._ext.im2col_kernels: patch gathering (im2col) and scattering (col2im) for
# both image layouts, the conv geometry record, and a fixed-order double sum.
# conv_kernels.pyx and winograd_kernels.pyx `from minnet._ext.im2col_kernels cimport ...`.
from minnet._ext._blas cimport floating

cdef struct Geometry:
    int n, c, h, w          # input: samples, channels, height, width (whatever the layout)
    int f, kh, kw           # kernel: filters, height, width
    int sh, sw, pt, pl, dh, dw
    int out_h, out_w
    long k                  # C * kh * kw
    long l                  # out_h * out_w
    bint identity           # 1x1, stride 1, no padding: the patches are the input itself

cdef Geometry make_geometry(int n, int c, int h, int w, int f, int kh, int kw,
                            int sh, int sw, int pt, int pl, int dh, int dw,
                            int out_h, int out_w) noexcept nogil

cdef void valid_range(int offset, int stride, int width, int out_w,
                      int* lo, int* hi) noexcept nogil

# ---- channels_first (NCHW): col of one sample is (K, L), row (c*kh + i)*kw + j
cdef void im2col_nchw_sample(const floating* x, Geometry g,      # IN  (C, H, W)
                             floating* col, long ld) noexcept nogil   # OUT (K, L), row stride ld
cdef void col2im_nchw_sample(const floating* col, long ld, Geometry g,   # IN  (K, L)
                             floating* x) noexcept nogil         # OUT (C, H, W), zeroed first
cdef void im2col_nchw_batch(const floating* x, Geometry g,       # IN  (N, C, H, W)
                            floating* col, long ld, long sample_stride,   # OUT
                            int n_threads) noexcept nogil
cdef void col2im_nchw_batch(const floating* col, long ld, long sample_stride,   # IN
                            Geometry g, floating* x,             # OUT (N, C, H, W)
                            int n_threads) noexcept nogil

# ---- channels_last (NHWC): col of one sample is (L, K), row oh*out_w + ow,
#      column (i*kw + j)*C + c: each patch is contiguous over channels
cdef void im2col_nhwc_sample(const floating* x, Geometry g,      # IN  (H, W, C)
                             floating* col) noexcept nogil       # OUT (L, K)
cdef void col2im_nhwc_sample(const floating* col, Geometry g,    # IN  (L, K)
                             floating* x) noexcept nogil         # OUT (H, W, C), zeroed first
cdef void im2col_nhwc_batch(const floating* x, Geometry g,       # IN  (N, H, W, C)
                            floating* col, int n_threads) noexcept nogil   # OUT (N*L, K)
cdef void col2im_nhwc_batch(const floating* col, Geometry g,     # IN  (N*L, K)
                            floating* x, int n_threads) noexcept nogil     # OUT (N, H, W, C)

# Sum in double with 8 independent accumulators, a fixed order.
cdef double sum_double(const floating* values, long size) noexcept nogil
