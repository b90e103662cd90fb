/* 2x2 / stride 2 / unpadded max pooling of one output row, with argmax indices.
 *
 * The same comparisons in the same order as pooling_kernels.pyx's _max_window (first maximum
 * kept, a NaN replaces anything before it), so values and indices are identical to the
 * generic loop's; only the scheduling differs.  On x86-64 (SSE2 is in the base
 * instruction set) four windows are done at once: two 4-float loads per input row,
 * even/odd columns split with _mm_shuffle_ps, then compare-and-select on values and on
 * int32 indices, faster than the scalar unrolled loop (benchmarks/bench_norm_dropout_pool.py
 * --ops max_pool; CHANGELOG.md, 2026-11-29).  float64, other CPUs, and the last OW % 4 windows of a
 * row run the scalar version of the same selects.
 */
#ifndef MINNET_MAXPOOL_H
#define MINNET_MAXPOOL_H
#include <stdint.h>
#include <math.h>
#if defined(__SSE2__) || defined(_M_X64) || (defined(_M_IX86_FP) && _M_IX86_FP >= 2)
#include <emmintrin.h>
#define MINNET_MAXPOOL_SSE 1
#endif

#ifdef MINNET_MAXPOOL_SSE
static inline __m128 minnet_sel_ps(__m128 mask, __m128 a, __m128 b) {   /* mask ? a : b */
    return _mm_or_ps(_mm_and_ps(mask, a), _mm_andnot_ps(mask, b));
}
static inline __m128i minnet_sel_epi32(__m128i mask, __m128i a, __m128i b) {
    return _mm_or_si128(_mm_and_si128(mask, a), _mm_andnot_si128(mask, b));
}
#endif

/* ---- 2x2 / stride 2 / unpadded, one output row (oh) of one (H, W, C) sample ------------
 * The four window elements are channel vectors x[h][w][0..C); the scalar selects below
 * (first maximum kept, NaN wins; m starts at the first element, which is what starting
 * at -inf gives) serve every row with C = 1 too.  With C >= 4 the vectorisation runs
 * over channels, four per SSE register; with C = 1 (NCHW) over four windows. */
#define MINNET_DEFINE_MAX2X2_NHWC_SCALAR(T, NAME)                                         \
    static inline void NAME(const T *p00, const T *p01, const T *p10, const T *p11,       \
                            int32_t i0, int32_t W, int32_t c0, int32_t C, T *o,           \
                            int32_t *ix) {                                                \
        int32_t c;                                                                        \
        for (c = c0; c < C; c++) {                                                        \
            T m = p00[c], v;                                                              \
            int32_t best = i0;                                                            \
            int better;                                                                   \
            v = p01[c]; better = (v > m) | (v != v); m = better ? v : m; best = better ? i0 + 1 : best; \
            v = p10[c]; better = (v > m) | (v != v); m = better ? v : m; best = better ? i0 + W : best; \
            v = p11[c]; better = (v > m) | (v != v); m = better ? v : m;                  \
            best = better ? i0 + W + 1 : best;                                            \
            o[c] = m;                                                                     \
            ix[c] = best;                                                                 \
        }                                                                                 \
    }

MINNET_DEFINE_MAX2X2_NHWC_SCALAR(float, minnet_max2x2_nhwc_tail_f32)
MINNET_DEFINE_MAX2X2_NHWC_SCALAR(double, minnet_max2x2_nhwc_tail_f64)

/* One channel (an NCHW plane, C = 1): x the plane (H, W); out, idx: output row oh (OW).
 * Four windows at a time: two 4-float loads per input row, even/odd columns split with
 * _mm_shuffle_ps; the last OW % 4 windows by the scalar selects above. */
static void minnet_max_row_2x2_f32(const float *x, int32_t W, int32_t oh, int32_t OW,
                                   float *out, int32_t *idx) {
    int32_t ow;
    const float *r0 = x + (ptrdiff_t) 2 * oh * W;
    const float *r1 = r0 + W;
    int32_t base = 2 * oh * W;
    ow = 0;
#ifdef MINNET_MAXPOOL_SSE
    {
        const __m128i step = _mm_set_epi32(6, 4, 2, 0);
        const __m128i one = _mm_set1_epi32(1), wv = _mm_set1_epi32(W), w1 = _mm_set1_epi32(W + 1);
        for (; ow + 4 <= OW; ow += 4) {
            __m128 a0 = _mm_loadu_ps(r0 + 2 * ow), b0 = _mm_loadu_ps(r0 + 2 * ow + 4);
            __m128 a1 = _mm_loadu_ps(r1 + 2 * ow), b1 = _mm_loadu_ps(r1 + 2 * ow + 4);
            __m128 v00 = _mm_shuffle_ps(a0, b0, _MM_SHUFFLE(2, 0, 2, 0));
            __m128 v01 = _mm_shuffle_ps(a0, b0, _MM_SHUFFLE(3, 1, 3, 1));
            __m128 v10 = _mm_shuffle_ps(a1, b1, _MM_SHUFFLE(2, 0, 2, 0));
            __m128 v11 = _mm_shuffle_ps(a1, b1, _MM_SHUFFLE(3, 1, 3, 1));
            __m128i i0 = _mm_add_epi32(_mm_set1_epi32(base + 2 * ow), step);
            __m128 m, better;
            __m128i best = i0;
            /* first element: better = (v > -inf) | isnan(v), i.e. m = v unless v == -inf
               (then m = -inf = v anyway); best stays i0 */
            m = v00;
            better = _mm_or_ps(_mm_cmpgt_ps(v01, m), _mm_cmpunord_ps(v01, v01));
            m = minnet_sel_ps(better, v01, m);
            best = minnet_sel_epi32(_mm_castps_si128(better), _mm_add_epi32(i0, one), best);
            better = _mm_or_ps(_mm_cmpgt_ps(v10, m), _mm_cmpunord_ps(v10, v10));
            m = minnet_sel_ps(better, v10, m);
            best = minnet_sel_epi32(_mm_castps_si128(better), _mm_add_epi32(i0, wv), best);
            better = _mm_or_ps(_mm_cmpgt_ps(v11, m), _mm_cmpunord_ps(v11, v11));
            m = minnet_sel_ps(better, v11, m);
            best = minnet_sel_epi32(_mm_castps_si128(better), _mm_add_epi32(i0, w1), best);
            _mm_storeu_ps(out + ow, m);
            _mm_storeu_si128((__m128i *) (idx + ow), best);
        }
    }
#endif
    for (; ow < OW; ow++)
        minnet_max2x2_nhwc_tail_f32(r0 + 2 * ow, r0 + 2 * ow + 1, r1 + 2 * ow, r1 + 2 * ow + 1,
                                    base + 2 * ow, W, 0, 1, out + ow, idx + ow);
}
/* x: one sample (H, W, C); out, idx: output row oh, (OW, C). */
static void minnet_max_row_2x2_nhwc_f64(const double *x, int32_t W, int32_t C, int32_t oh,
                                        int32_t OW, double *out, int32_t *idx) {
    int32_t ow;
    for (ow = 0; ow < OW; ow++) {
        const double *p00 = x + ((ptrdiff_t) 2 * oh * W + 2 * ow) * C;
        minnet_max2x2_nhwc_tail_f64(p00, p00 + C, p00 + (ptrdiff_t) W * C, p00 + (ptrdiff_t) W * C + C,
                                    2 * oh * W + 2 * ow, W, 0, C, out + (ptrdiff_t) ow * C,
                                    idx + (ptrdiff_t) ow * C);
    }
}

static void minnet_max_row_2x2_nhwc_f32(const float *x, int32_t W, int32_t C, int32_t oh,
                                        int32_t OW, float *out, int32_t *idx) {
    int32_t ow, c;
    for (ow = 0; ow < OW; ow++) {
        const float *p00 = x + ((ptrdiff_t) 2 * oh * W + 2 * ow) * C;
        const float *p01 = p00 + C, *p10 = p00 + (ptrdiff_t) W * C, *p11 = p10 + C;
        float *o = out + (ptrdiff_t) ow * C;
        int32_t *ix = idx + (ptrdiff_t) ow * C;
        int32_t i0 = 2 * oh * W + 2 * ow;
        c = 0;
#ifdef MINNET_MAXPOOL_SSE
        {
            const __m128i b00 = _mm_set1_epi32(i0), b01 = _mm_set1_epi32(i0 + 1);
            const __m128i b10 = _mm_set1_epi32(i0 + W), b11 = _mm_set1_epi32(i0 + W + 1);
            for (; c + 4 <= C; c += 4) {
                __m128 m = _mm_loadu_ps(p00 + c), v, better;
                __m128i best = b00;
                v = _mm_loadu_ps(p01 + c);
                better = _mm_or_ps(_mm_cmpgt_ps(v, m), _mm_cmpunord_ps(v, v));
                m = minnet_sel_ps(better, v, m);
                best = minnet_sel_epi32(_mm_castps_si128(better), b01, best);
                v = _mm_loadu_ps(p10 + c);
                better = _mm_or_ps(_mm_cmpgt_ps(v, m), _mm_cmpunord_ps(v, v));
                m = minnet_sel_ps(better, v, m);
                best = minnet_sel_epi32(_mm_castps_si128(better), b10, best);
                v = _mm_loadu_ps(p11 + c);
                better = _mm_or_ps(_mm_cmpgt_ps(v, m), _mm_cmpunord_ps(v, v));
                m = minnet_sel_ps(better, v, m);
                best = minnet_sel_epi32(_mm_castps_si128(better), b11, best);
                _mm_storeu_ps(o + c, m);
                _mm_storeu_si128((__m128i *) (ix + c), best);
            }
        }
#endif
        minnet_max2x2_nhwc_tail_f32(p00, p01, p10, p11, i0, W, c, C, o, ix);
    }
}
#endif
