/* The float32 elementwise passes of the attention kernel (attention_kernels.pyx) over one block
 * of scores: rows of `nk` values, `ld` apart. Written as plain loops over a row so GCC
 * vectorises them, and compiled as AVX-512 / AVX2 / baseline copies picked at load time
 * (MINNET_FAST_CLONES from _fastmath.pxd, which attention_kernels.pyx cimports first, as it does
 * minnet_exp_nonpos_f): the Cython loops are compiled for baseline x86-64 only.
 */
#ifndef MINNET_ATTENTION_H
#define MINNET_ATTENTION_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "convgemm_kernels.h"

#if defined(__GNUC__) && defined(__x86_64__)
/* The tile copy in use (convgemm_kernels.h's choice, or a test's minnet_cg_set_isa). */
static inline int minnet_att_isa(void) {
    return minnet_cg_isa_level < 0 ? minnet_cg_set_isa(-1) : minnet_cg_isa_level;
}
#endif

#ifndef MINNET_FAST_CLONES          /* _fastmath.pxd's block defines it first; a plain build otherwise */
#define MINNET_FAST_CLONES
#endif

/* p = exp(s - lse_r) in place for each row r; a row with lse_r = -inf (no allowed key)
 * becomes 0. Every s - lse_r <= 0 up to rounding (lse_r >= max of the row). */
MINNET_FAST_CLONES
static void minnet_att_probs_f(float *s, Py_ssize_t ld, Py_ssize_t nq, Py_ssize_t nk,
                               const float *lse) {
    for (Py_ssize_t r = 0; r < nq; r++) {
        float *row = s + r * ld;
        const float li = lse[r];
        if (li == -INFINITY) {
            memset(row, 0, (size_t) nk * sizeof(float));
            continue;
        }
        for (Py_ssize_t c = 0; c < nk; c++) row[c] = minnet_exp_nonpos_f(row[c] - li);
    }
}

/* ds = p * (dp - D_r) written over dp. */
MINNET_FAST_CLONES
static void minnet_att_dscores_f(const float *p, float *dp, Py_ssize_t ld, Py_ssize_t nq,
                                 Py_ssize_t nk, const double *D) {
    for (Py_ssize_t r = 0; r < nq; r++) {
        const float *prow = p + r * ld;
        float *drow = dp + r * ld;
        const float d = (float) D[r];
        for (Py_ssize_t c = 0; c < nk; c++) drow[c] = prow[c] * (drow[c] - d);
    }
}

/* s += mask rows (row stride m_sl, column stride 1). */
MINNET_FAST_CLONES
static void minnet_att_add_mask_f(float *s, Py_ssize_t ld, Py_ssize_t nq, Py_ssize_t nk,
                                  const float *mask, Py_ssize_t m_sl) {
    for (Py_ssize_t r = 0; r < nq; r++) {
        float *row = s + r * ld;
        const float *mrow = mask + r * m_sl;
        for (Py_ssize_t c = 0; c < nk; c++) row[c] = row[c] + mrow[c];
    }
}

/* D_r = <do_r, o_r> in double for nq rows of n values. */
MINNET_FAST_CLONES
static void minnet_att_rowdot_f(const float *o, Py_ssize_t o_sl, const float *g,
                                Py_ssize_t g_sl, Py_ssize_t nq, Py_ssize_t n, double *D) {
    for (Py_ssize_t r = 0; r < nq; r++) {
        const float *orow = o + r * o_sl, *grow = g + r * g_sl;
        double acc[8] = {0};
        Py_ssize_t c = 0;
        for (; c + 8 <= n; c += 8)
            for (int j = 0; j < 8; j++) acc[j] += (double) orow[c + j] * (double) grow[c + j];
        double total = 0;
        for (; c < n; c++) total += (double) orow[c] * (double) grow[c];
        for (int j = 0; j < 8; j++) total += acc[j];
        D[r] = total;
    }
}

/* The forward's online-softmax step over one block of scores, for each row r:
 *     m_new = max(m[r], max_c s[r][c]);  alpha[r] = exp(m[r] - m_new);
 *     s[r][c] = exp(s[r][c] - m_new);    l[r] = l[r] * alpha[r] + sum_c s[r][c];  m[r] = m_new
 * (a row whose m_new is -inf allows no key yet: it becomes 0 and keeps alpha[r] = 1). The
 * block's sum is kept in MINNET_ATT_LANES float partial sums (a block row has at most
 * block_k terms, each <= 1) and added to l[r] in double. */
#define MINNET_ATT_LANES 16

/* max of row[0 .. n) (-inf for n = 0), NaNs skipped as `v > m ? v : m`. GCC leaves a lane
 * array of float selects scalar (see _fastmath's minnet_row_max_f), so the lanes are one
 * 16-float vector and the select a compare-and-blend; the 16 lanes are then combined as a
 * tree (_fastmath's helper combines its 32 lanes one after the other, which costs as much
 * again as the scan of a 128-key block row). */
#if defined(__GNUC__)
typedef float minnet_att_v16 __attribute__((vector_size(64), aligned(4)));
typedef int32_t minnet_att_i16 __attribute__((vector_size(64), aligned(4)));
#endif
static inline __attribute__((always_inline)) float minnet_att_row_max_f(const float *row,
                                                                       Py_ssize_t n) {
    float m = -INFINITY;
    Py_ssize_t c = 0;
#if defined(__GNUC__)
    if (n >= MINNET_ATT_LANES) {
        minnet_att_v16 acc = *(const minnet_att_v16 *) row;
        float lanes[MINNET_ATT_LANES];
        for (c = MINNET_ATT_LANES; c + MINNET_ATT_LANES <= n; c += MINNET_ATT_LANES) {
            minnet_att_v16 v = *(const minnet_att_v16 *) (row + c);
            minnet_att_i16 gt = (minnet_att_i16) (v > acc);
            acc = (minnet_att_v16) ((gt & (minnet_att_i16) v) | (~gt & (minnet_att_i16) acc));
        }
        memcpy(lanes, &acc, sizeof lanes);
        for (int w = MINNET_ATT_LANES / 2; w > 0; w /= 2)
            for (int j = 0; j < w; j++) lanes[j] = lanes[j + w] > lanes[j] ? lanes[j + w] : lanes[j];
        m = lanes[0];
    }
#endif
    for (; c < n; c++) m = row[c] > m ? row[c] : m;
    return m;
}

MINNET_FAST_CLONES
static void minnet_att_online_any(float *s, Py_ssize_t ld, Py_ssize_t nq, Py_ssize_t nk,
                                  float *m, double *l, float *alpha) {
    for (Py_ssize_t r = 0; r < nq; r++) {
        float *row = s + r * ld;
        float mx = minnet_att_row_max_f(row, nk);
        float mn = mx > m[r] ? mx : m[r];
        if (mn == -INFINITY) {
            memset(row, 0, (size_t) nk * sizeof(float));
            alpha[r] = 1.0f;
            continue;
        }
        float acc[MINNET_ATT_LANES] = {0};
        Py_ssize_t c = 0;
        for (; c + MINNET_ATT_LANES <= nk; c += MINNET_ATT_LANES)
            for (int j = 0; j < MINNET_ATT_LANES; j++) {
                float e = minnet_exp_nonpos_f(row[c + j] - mn);
                row[c + j] = e;
                acc[j] += e;
            }
        float tail = 0.0f;
        for (; c < nk; c++) {
            float e = minnet_exp_nonpos_f(row[c] - mn);
            row[c] = e;
            tail += e;
        }
        /* lanes summed as a tree (16 -> 8 -> 4 -> 2 -> 1), a fixed order: summed one after
         * the other, the 16 dependent adds of every row cost about as much as its exps */
        for (int w = MINNET_ATT_LANES / 2; w > 0; w /= 2)
            for (int j = 0; j < w; j++) acc[j] += acc[j + w];
        tail += acc[0];
        float a = m[r] == -INFINITY ? 0.0f : minnet_exp_nonpos_f(m[r] - mn);
        alpha[r] = a;
        l[r] = l[r] * (double) a + (double) tail;
        m[r] = mn;
    }
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
/* minnet_exp_nonpos_f on 8 lanes (the same operations: clamps, Cephes' reduction and
 * polynomial, 2^n from the bits, 0 below -87.34; NaN propagates). */
__attribute__((target("avx2,fma"))) static inline __attribute__((always_inline))
__m256 minnet_att_exp8(__m256 x) {
    const __m256 lo_clamp = _mm256_set1_ps(-87.3365478515625f), zero = _mm256_setzero_ps();
    const __m256 magic = _mm256_set1_ps(12582912.0f);
    const __m256i bias = _mm256_set1_epi32(127 - 0x4B400000);    /* 127 - bits of magic */
    __m256 xc = _mm256_min_ps(zero, _mm256_max_ps(lo_clamp, x));
    __m256 tt = _mm256_fmadd_ps(xc, _mm256_set1_ps(1.44269504088896341f), magic);
    __m256 n = _mm256_sub_ps(tt, magic);
    __m256 sc = _mm256_castsi256_ps(
        _mm256_slli_epi32(_mm256_add_epi32(_mm256_castps_si256(tt), bias), 23));
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), xc);
    r = _mm256_fmadd_ps(n, _mm256_set1_ps(2.12194440e-4f), r);
    __m256 p = _mm256_fmadd_ps(_mm256_set1_ps(1.9875691500e-4f), r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    __m256 y = _mm256_mul_ps(_mm256_add_ps(_mm256_fmadd_ps(_mm256_mul_ps(p, r), r, r),
                                           _mm256_set1_ps(1.0f)), sc);
    return _mm256_andnot_ps(_mm256_cmp_ps(x, lo_clamp, _CMP_LT_OQ), y);
}

/* minnet_att_online_any with AVX2 intrinsics: the same arithmetic in the same order (the
 * 16 lanes are two ymm registers, lane j of the pair summing columns c = j mod 16, the max
 * as `v > acc ? v : acc`, which is vmaxps(v, acc) NaNs included, and the same trees). GCC
 * compiled the portable loop's 16-lane vectors for AVX2 through the stack: the online step
 * was a third of the forward's samples next to the two tiled products. */
__attribute__((target("avx2,fma")))
static void minnet_att_online_avx2(float *s, Py_ssize_t ld, Py_ssize_t nq, Py_ssize_t nk,
                                   float *m, double *l, float *alpha) {
    const __m256 zero = _mm256_setzero_ps();
    for (Py_ssize_t r = 0; r < nq; r++) {
        float *row = s + r * ld;
        float mx = -INFINITY;
        Py_ssize_t c = 0;
        if (nk >= 16) {
            __m256 a0 = _mm256_loadu_ps(row), a1 = _mm256_loadu_ps(row + 8);
            for (c = 16; c + 16 <= nk; c += 16) {
                a0 = _mm256_max_ps(_mm256_loadu_ps(row + c), a0);
                a1 = _mm256_max_ps(_mm256_loadu_ps(row + c + 8), a1);
            }
            a0 = _mm256_max_ps(a1, a0);                                     /* j, j + 8 */
            __m128 x = _mm_max_ps(_mm256_extractf128_ps(a0, 1), _mm256_castps256_ps128(a0));
            x = _mm_max_ps(_mm_movehl_ps(x, x), x);                         /* j, j + 2 */
            x = _mm_max_ss(_mm_shuffle_ps(x, x, 1), x);                     /* j, j + 1 */
            mx = _mm_cvtss_f32(x);
        }
        for (; c < nk; c++) mx = row[c] > mx ? row[c] : mx;
        float mn = mx > m[r] ? mx : m[r];
        if (mn == -INFINITY) {
            memset(row, 0, (size_t) nk * sizeof(float));
            alpha[r] = 1.0f;
            continue;
        }
        const __m256 shift = _mm256_set1_ps(mn);
        __m256 s0 = zero, s1 = zero;
        for (c = 0; c + 16 <= nk; c += 16)
            for (int half = 0; half < 2; half++) {
                __m256 y = minnet_att_exp8(_mm256_sub_ps(_mm256_loadu_ps(row + c + 8 * half),
                                                         shift));
                _mm256_storeu_ps(row + c + 8 * half, y);
                if (half == 0) s0 = _mm256_add_ps(s0, y);
                else s1 = _mm256_add_ps(s1, y);
            }
        float tail = 0.0f;
        for (; c < nk; c++) {
            float e = minnet_exp_nonpos_f(row[c] - mn);
            row[c] = e;
            tail += e;
        }
        s0 = _mm256_add_ps(s0, s1);
        __m128 x = _mm_add_ps(_mm256_castps256_ps128(s0), _mm256_extractf128_ps(s0, 1));
        x = _mm_add_ps(x, _mm_movehl_ps(x, x));
        x = _mm_add_ss(x, _mm_shuffle_ps(x, x, 1));
        tail += _mm_cvtss_f32(x);
        float a = m[r] == -INFINITY ? 0.0f : minnet_exp_nonpos_f(m[r] - mn);
        alpha[r] = a;
        l[r] = l[r] * (double) a + (double) tail;
        m[r] = mn;
    }
}
#endif

/* The online step on this CPU (one machine always runs the same copy). */
static void minnet_att_online_f(float *s, Py_ssize_t ld, Py_ssize_t nq, Py_ssize_t nk,
                                float *m, double *l, float *alpha) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (minnet_att_isa() >= 1) {
        minnet_att_online_avx2(s, ld, nq, nk, m, l, alpha);
        return;
    }
#endif
    minnet_att_online_any(s, ld, nq, nk, m, l, alpha);
}

/* The same step in float64 (libm's exp, the sum in one running double per row). */
static void minnet_att_online_d(double *s, Py_ssize_t ld, Py_ssize_t nq, Py_ssize_t nk,
                                double *m, double *l, double *alpha) {
    for (Py_ssize_t r = 0; r < nq; r++) {
        double *row = s + r * ld;
        double mx = -INFINITY;
        for (Py_ssize_t c = 0; c < nk; c++) mx = row[c] > mx ? row[c] : mx;
        double mn = mx > m[r] ? mx : m[r];
        if (mn == -INFINITY) {
            memset(row, 0, (size_t) nk * sizeof(double));
            alpha[r] = 1.0;
            continue;
        }
        double total = 0.0;
        for (Py_ssize_t c = 0; c < nk; c++) {
            row[c] = exp(row[c] - mn);
            total += row[c];
        }
        double a = m[r] == -INFINITY ? 0.0 : exp(m[r] - mn);
        alpha[r] = a;
        l[r] = l[r] * a + total;
        m[r] = mn;
    }
}

/* ---- The block products (float32) on convgemm_kernels.h's register tiles ----------------------
 *
 * Every product of a block is C (M x N) (+)= op(A) (M x K) @ B (K x N) with op(A)[i][k] =
 * A[i * sr + k * sk] read in place (rows of a block of scores, or its columns for the
 * transposed products) and B in panels of NR columns packed before: column j of B is
 * panel[j / NR][k * NR + j % NR], panels `ps` floats apart. The operands that are B are
 * packed once per (batch, head) pair (K, Kᵀ, V, Vᵀ) or once per block of queries (Q, dO),
 * not once per product as a BLAS call packs them (OpenBLAS's copy routines were 10 % of the
 * samples of the forward and the backward: docs/math/attention.md). NR, MR are those of
 * convgemm_kernels.h's tile for this CPU (AVX-512 8 x 32, AVX2 6 x 16, SSE2 4 x 8).
 *
 * Each element of C is   acc = (zero ? 0 : C[i][j]);  for k = 0 .. K-1: acc += op(A)[i][k] B[k][j]
 * in that order whatever M, N, the tiles or the thread count.
 */
#if defined(__GNUC__)
#define MINNET_ATT_MM(SUFFIX, TARGET, W, NV, MR)                                            \
TARGET __attribute__((noinline))                                                            \
static void minnet_att_mm_##SUFFIX(int M, int N, int K, const float *A, int64_t sr,         \
                                   int64_t sk, const float *Bp, int64_t ps, float *C,       \
                                   int64_t ldc, int zero) {                                 \
    float edge[MR * W * NV];                                                                \
    const float *arow[MR];                                                                  \
    for (int jr = 0; jr < N; jr += W * NV) {                                                \
        const int cols = N - jr < W * NV ? N - jr : W * NV;                                 \
        const float *bp = Bp + (int64_t) (jr / (W * NV)) * ps;                              \
        for (int ir = 0; ir < M; ir += MR) {                                                \
            const int rows = M - ir < MR ? M - ir : MR;                                     \
            for (int r = 0; r < MR; r++)     /* rows past the edge re-read the last one */  \
                arow[r] = A + (int64_t) (ir + (r < rows ? r : rows - 1)) * sr;              \
            float *c = C + (int64_t) ir * ldc + jr;                                         \
            if (rows == MR && cols == W * NV) {                                             \
                minnet_cg_tile_##SUFFIX(K, arow, sk, bp, c, ldc, zero);                     \
                continue;                                                                   \
            }                                                                               \
            for (int r = 0; r < MR; r++)                                                    \
                for (int j = 0; j < W * NV; j++)                                            \
                    edge[r * W * NV + j] = (zero || r >= rows || j >= cols) ? 0.0f          \
                                           : c[r * ldc + j];                                \
            minnet_cg_tile_##SUFFIX(K, arow, sk, bp, edge, W * NV, 0);                      \
            for (int r = 0; r < rows; r++)                                                  \
                memcpy(c + r * ldc, edge + r * W * NV, (size_t) cols * sizeof(float));      \
        }                                                                                   \
    }                                                                                       \
}
#if defined(__x86_64__)
MINNET_ATT_MM(avx512, __attribute__((target("avx512f,avx512vl,avx2,fma"))), 16, 2, 8)
MINNET_ATT_MM(avx2, __attribute__((target("avx2,fma"))), 8, 2, 6)
MINNET_ATT_MM(base, , 4, 2, 4)
static int minnet_att_nr(void) {
    int level = minnet_att_isa();
    return level == 2 ? 32 : level == 1 ? 16 : 8;
}
static void minnet_att_mm(int M, int N, int K, const float *A, int64_t sr, int64_t sk,
                          const float *Bp, int64_t ps, float *C, int64_t ldc, int zero) {
    if (M <= 0 || N <= 0) return;
    int level = minnet_att_isa();
    if (level == 2) minnet_att_mm_avx512(M, N, K, A, sr, sk, Bp, ps, C, ldc, zero);
    else if (level == 1) minnet_att_mm_avx2(M, N, K, A, sr, sk, Bp, ps, C, ldc, zero);
    else minnet_att_mm_base(M, N, K, A, sr, sk, Bp, ps, C, ldc, zero);
}
#else
MINNET_ATT_MM(portable, , 4, 4, 6)
static int minnet_att_nr(void) { return 16; }
static void minnet_att_mm(int M, int N, int K, const float *A, int64_t sr, int64_t sk,
                          const float *Bp, int64_t ps, float *C, int64_t ldc, int zero) {
    if (M <= 0 || N <= 0) return;
    minnet_att_mm_portable(M, N, K, A, sr, sk, Bp, ps, C, ldc, zero);
}
#endif
#else   /* other compilers: the same sum per element, one element at a time */
static int minnet_att_nr(void) { return 16; }
static void minnet_att_mm(int M, int N, int K, const float *A, int64_t sr, int64_t sk,
                          const float *Bp, int64_t ps, float *C, int64_t ldc, int zero) {
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            float acc = zero ? 0.0f : C[(int64_t) i * ldc + j];
            const float *b = Bp + (int64_t) (j / 16) * ps + j % 16;
            for (int k = 0; k < K; k++) acc = acc + A[i * sr + k * sk] * b[k * 16];
            C[(int64_t) i * ldc + j] = acc;
        }
}
#endif

/* Floats of one operand of `rows` rows x `cols` columns in panels of NR (+ 16 to align). */
static inline int64_t minnet_att_panels_size(Py_ssize_t rows, Py_ssize_t cols, int nr) {
    return (int64_t) ((cols + nr - 1) / nr) * nr * rows + 16;
}

static inline float *minnet_att_align(float *p) {
    return p + (16 - ((uintptr_t) p / sizeof(float)) % 16) % 16;
}

/* B = alpha x (rows x cols, row stride sl) in panels over the columns: panel p (ps = rows NR
 * floats) holds B[k][p NR + j] at [k NR + j], zeros past `cols`. A block of rows k0.. of B is
 * then the same panels from k0 NR on. */
static void minnet_att_pack_rows(const float *x, Py_ssize_t rows, Py_ssize_t sl, Py_ssize_t cols,
                                 float alpha, int nr, float *bp) {
    for (Py_ssize_t p = 0; p * nr < cols; p++) {
        float *dst = bp + p * rows * nr;
        Py_ssize_t w = cols - p * nr < nr ? cols - p * nr : nr;
        for (Py_ssize_t k = 0; k < rows; k++) {
            const float *src = x + k * sl + p * nr;
            for (Py_ssize_t j = 0; j < w; j++) dst[k * nr + j] = alpha * src[j];
            for (Py_ssize_t j = w; j < nr; j++) dst[k * nr + j] = 0.0f;
        }
    }
}

/* B = xᵀ (x: rows x cols, row stride sl; B: cols x rows) in blocks of `bk` of B's columns
 * (x's rows): block jb starts at jb * minnet_att_tblock_size(bk, cols, nr), its panels
 * cols NR floats apart, B[e][jb bk + p NR + j] at [p cols NR + e NR + j]. */
static inline int64_t minnet_att_tblock_size(Py_ssize_t bk, Py_ssize_t cols, int nr) {
    return (int64_t) ((bk + nr - 1) / nr) * nr * cols;
}

static void minnet_att_pack_t(const float *x, Py_ssize_t rows, Py_ssize_t sl, Py_ssize_t cols,
                              Py_ssize_t bk, int nr, float *bp) {
    const int64_t bs = minnet_att_tblock_size(bk, cols, nr);
    for (Py_ssize_t j0 = 0; j0 < rows; j0 += bk) {
        float *blk = bp + (j0 / bk) * bs;
        Py_ssize_t nk = rows - j0 < bk ? rows - j0 : bk;
        for (Py_ssize_t p = 0; p * nr < nk; p++) {
            float *dst = blk + p * cols * nr;
            Py_ssize_t w = nk - p * nr < nr ? nk - p * nr : nr;
            for (Py_ssize_t j = 0; j < w; j++) {
                const float *src = x + (j0 + p * nr + j) * sl;
                for (Py_ssize_t e = 0; e < cols; e++) dst[e * nr + j] = src[e];
            }
            for (Py_ssize_t j = w; j < nr; j++)
                for (Py_ssize_t e = 0; e < cols; e++) dst[e * nr + j] = 0.0f;
        }
    }
}

#endif
