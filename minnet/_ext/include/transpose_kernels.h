/* Y = relu?(Yt^T + b): the transposed linear forward's last pass, and a plain strided
 * transpose (the channels_first Winograd output).
 *
 * linear_forward computes Yt (M x N, row-major) = W @ X^T because OpenBLAS runs that
 * layout faster, then needs Y (N x M, row-major) = Yt^T + b, optionally with the ReLU
 * (0 if v < 0 else v: NaN and -0.0 pass through, as minnet's relu kernel).
 *
 * On x86-64 (SSE2 is part of the base instruction set) 4 x 4 blocks are transposed in
 * registers: four 16-byte loads from four rows of Yt, _MM_TRANSPOSE4_PS, the bias as one
 * vector per output row segment, four 16-byte stores: faster than the scalar tiled loop
 * (benchmarks/bench_training.py, mlp predict; CHANGELOG.md, 2026-11-29).  float64, other CPUs (ARM, ...) and
 * the edges run the scalar tiles; the results are identical (one add and one select per
 * element either way).
 *
 * Only output rows [i_begin, i_end) are written, so OpenMP threads can share the work.
 */
#ifndef MINNET_TRANSPOSE_H
#define MINNET_TRANSPOSE_H

#include <stddef.h>

#if defined(__SSE2__) || defined(_M_X64) || (defined(_M_IX86_FP) && _M_IX86_FP >= 2)
#include <xmmintrin.h>
#define MINNET_TRANSPOSE_SSE 1
#endif

/* Rows [i_begin, i_end), columns [j_begin, m) of Y in 16 x 16 tiles, so both sides stay
 * in cache lines: the whole job for float64 and for CPUs without SSE, the edges for
 * float32.  One definition for both types, so the arithmetic cannot drift apart. */
#define MINNET_DEFINE_TRANSPOSE_TILES(T, NAME)                                          \
    static void NAME(const T *src, ptrdiff_t lds, const T *bias, T *dst, ptrdiff_t ldd,  \
                     ptrdiff_t m, int relu, ptrdiff_t i_begin, ptrdiff_t i_end,          \
                     ptrdiff_t j_begin) {                                                \
        ptrdiff_t i0, j0, i, j;                                                          \
        for (i0 = i_begin; i0 < i_end; i0 += 16) {                                       \
            ptrdiff_t i1 = i0 + 16 < i_end ? i0 + 16 : i_end;                            \
            for (j0 = j_begin; j0 < m; j0 += 16) {                                       \
                ptrdiff_t j1 = j0 + 16 < m ? j0 + 16 : m;                                \
                for (i = i0; i < i1; i++)                                                \
                    for (j = j0; j < j1; j++) {                                          \
                        T v = src[j * lds + i];                                          \
                        if (bias) v += bias[j];                                          \
                        dst[i * ldd + j] = (relu && v < 0) ? (T) 0 : v;                  \
                    }                                                                    \
            }                                                                            \
        }                                                                                \
    }

MINNET_DEFINE_TRANSPOSE_TILES(float, minnet_transpose_tiles_f32)
MINNET_DEFINE_TRANSPOSE_TILES(double, minnet_transpose_tiles_f64)

/* Y[i * ldd + j] = relu?(Yt[j * lds + i] + bias[j]) for rows i in [i_begin, i_end) and
 * columns j < m.  bias may be NULL (nothing added: a plain transpose, as the channels_first
 * Winograd output uses; winograd_kernels.pyx). */
static void minnet_transpose_f32(const float *src,  /* IN  Yt (m, lds) row-major */
                                 ptrdiff_t lds,
                                 const float *bias, /* IN  (m,) or NULL */
                                 float *dst,        /* OUT Y (., ldd) row-major */
                                 ptrdiff_t ldd, ptrdiff_t m, int relu,
                                 ptrdiff_t i_begin, ptrdiff_t i_end) {
    ptrdiff_t i = i_begin;
#ifdef MINNET_TRANSPOSE_SSE
    const ptrdiff_t m4 = m - m % 4;
    const __m128 zero = _mm_setzero_ps();
    ptrdiff_t j;
    for (; i + 4 <= i_end; i += 4) {
        for (j = 0; j < m4; j += 4) {
            __m128 r0 = _mm_loadu_ps(src + (j + 0) * lds + i);
            __m128 r1 = _mm_loadu_ps(src + (j + 1) * lds + i);
            __m128 r2 = _mm_loadu_ps(src + (j + 2) * lds + i);
            __m128 r3 = _mm_loadu_ps(src + (j + 3) * lds + i);
            _MM_TRANSPOSE4_PS(r0, r1, r2, r3);  /* r0 = Yt[j:j+4, i], ... */
            if (bias) {
                const __m128 b = _mm_loadu_ps(bias + j);
                r0 = _mm_add_ps(r0, b);
                r1 = _mm_add_ps(r1, b);
                r2 = _mm_add_ps(r2, b);
                r3 = _mm_add_ps(r3, b);
            }
            if (relu) {  /* keep v where !(v < 0): NaN and -0.0 pass through */
                r0 = _mm_andnot_ps(_mm_cmplt_ps(r0, zero), r0);
                r1 = _mm_andnot_ps(_mm_cmplt_ps(r1, zero), r1);
                r2 = _mm_andnot_ps(_mm_cmplt_ps(r2, zero), r2);
                r3 = _mm_andnot_ps(_mm_cmplt_ps(r3, zero), r3);
            }
            _mm_storeu_ps(dst + (i + 0) * ldd + j, r0);
            _mm_storeu_ps(dst + (i + 1) * ldd + j, r1);
            _mm_storeu_ps(dst + (i + 2) * ldd + j, r2);
            _mm_storeu_ps(dst + (i + 3) * ldd + j, r3);
        }
    }
    /* the last m % 4 columns of the rows done above */
    minnet_transpose_tiles_f32(src, lds, bias, dst, ldd, m, relu, i_begin, i, m4);
#endif
    /* the rows left (all of them without SSE) */
    minnet_transpose_tiles_f32(src, lds, bias, dst, ldd, m, relu, i, i_end, 0);
}

/* The same for float64: the scalar tiles throughout. */
static void minnet_transpose_f64(const double *src, ptrdiff_t lds, const double *bias,
                                 double *dst, ptrdiff_t ldd, ptrdiff_t m, int relu,
                                 ptrdiff_t i_begin, ptrdiff_t i_end) {
    minnet_transpose_tiles_f64(src, lds, bias, dst, ldd, m, relu, i_begin, i_end, 0);
}

#endif /* MINNET_TRANSPOSE_H */
