/* The convolution's float32 GEMM: C (M x N) = beta C + op(A) @ op(B), row-major, one thread,
 * with minnet's own packing and register tiles, so the convolution runs at the same speed
 * whatever kernel the BLAS library picks (OpenBLAS on an AVX-512 CPU told to use its Haswell
 * kernels ran the conv GEMMs at half speed: issue #30, CHANGELOG.md, 2026-12-02).
 *
 * op(A) is (M, K): A[i * lda + k], or A[k * lda + i] when trans_a; op(B) is (K, N):
 * B[k * ldb + j], or B[j * ldb + k] when trans_b. beta is 0 (C is not read) or 1 (anything
 * else scales C first).
 *
 * Blocking (Goto's scheme): K in blocks of KC, N in blocks of NC, M in blocks of MC. A block of
 * op(B) (KC x NC) is copied ("packed") into panels of NR columns, Bp[k][j], zeros padding the
 * last one; op(A) is read in place (MR row pointers, k steps of 1 or lda: packing it cost a
 * third of the multiply time when K is short, as in Winograd's GEMMs). A register tile of MR
 * x NR accumulators of C then runs k over the block: one load of NR / W vectors of Bp, MR
 * broadcasts from A, MR NR / W fused multiply-adds per k.
 *
 * What every element computes, whatever M, N, the blocks, a caller's split of C into parts,
 * or the thread count:
 *
 *     acc = beta C[i][j] (0 for beta = 0);  for k = 0 .. K-1: acc = acc + op(A)[i][k] op(B)[k][j]
 *
 * in that order (each K block starts from the value the previous one stored), so a caller may
 * cut C into any blocks of rows or columns and run them on any threads without changing a
 * bit (conv_kernels.pyx, winograd_kernels.pyx). Edge tiles run the same tile code on a local MR x NR copy.
 *
 * Copies, as in stepgemm_kernels.h: on x86-64 with GCC/Clang three (AVX-512: 8 rows x 32 columns, 2
 * zmm per row; AVX2+FMA: 6 x 16, 2 ymm; baseline SSE2: 4 x 8, 2 xmm, multiply then add),
 * picked at first use (minnet_cg_set_isa lets the tests run each); other GCC/Clang targets the
 * portable vector code (6 x 16); other compilers a scalar loop with the same arithmetic.
 * Speed: benchmarks/bench_conv_limit.py (the sgemm line).
 */
#ifndef MINNET_CONVGEMM_H
#define MINNET_CONVGEMM_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MINNET_CG_KC 256
#define MINNET_CG_MC 96
#define MINNET_CG_NC 2048

typedef struct {
    int M, N, K;
    const float *A; int64_t lda; int trans_a;
    const float *B; int64_t ldb; int trans_b;
    int beta_zero;
    float *C; int64_t ldc;
    float *work;                     /* minnet_cg_work_size(N, K) floats, or NULL */
} minnet_cg_args;

/* Floats of packed op(B) a K x N product needs: one KC x NC block (less for a small product;
 * Winograd's are 32 x 64), panels padded to 64 columns, 16 for the alignment. */
static inline int64_t minnet_cg_work_size(int N, int K) {
    int64_t kc = K < MINNET_CG_KC ? K : MINNET_CG_KC, nc = N < MINNET_CG_NC ? N : MINNET_CG_NC;
    return kc * ((nc + 63) / 64 * 64) + 16;
}

/* Panels of NR columns of op(B)[k0 .. k0+kc) x [j0 .. j0+nc): Bp[p][k][j]. */
static inline void minnet_cg_pack_b(const minnet_cg_args *a, int NR, int k0, int kc, int j0, int nc,
                                    float *Bp) {
    for (int p = 0; p * NR < nc; p++) {
        float *dst = Bp + (int64_t) p * kc * NR;
        int cols = nc - p * NR < NR ? nc - p * NR : NR;
        if (a->trans_b) {        /* op(B)[k][j] = B[j][k] */
            for (int j = 0; j < cols; j++) {
                const float *src = a->B + (int64_t) (j0 + p * NR + j) * a->ldb + k0;
                for (int k = 0; k < kc; k++) dst[k * NR + j] = src[k];
            }
            for (int j = cols; j < NR; j++)
                for (int k = 0; k < kc; k++) dst[k * NR + j] = 0.0f;
        } else {
            for (int k = 0; k < kc; k++) {
                const float *src = a->B + (int64_t) (k0 + k) * a->ldb + j0 + p * NR;
                for (int j = 0; j < cols; j++) dst[k * NR + j] = src[j];
                for (int j = cols; j < NR; j++) dst[k * NR + j] = 0.0f;
            }
        }
    }
}

#if defined(__GNUC__)
typedef float minnet_cg_v16 __attribute__((vector_size(64), aligned(4)));
typedef float minnet_cg_v8 __attribute__((vector_size(32), aligned(4)));
typedef float minnet_cg_v4 __attribute__((vector_size(16), aligned(4)));
#if defined(__clang__)
#define MINNET_CG_UNROLL _Pragma("unroll")
#define MINNET_CG_UNROLL4 _Pragma("unroll 4")
#else
#define MINNET_CG_UNROLL _Pragma("GCC unroll 16")
#define MINNET_CG_UNROLL4 _Pragma("GCC unroll 4")
#endif

/* MINNET_CG_KERNEL(SUFFIX, TARGET, VT, W, NV, MR) defines minnet_cg_run_SUFFIX: the blocked
 * driver with tiles of MR rows x NV vectors of W floats (NR = W NV columns). */
/* Alike by shape (duplicates, boilerplate): the FMA inner loop of stepgemm_kernels.h's
 * register tile. Kept apart: the step GEMM reads an unpacked A row by row for the recurrent
 * cells, this one packed panels with a stride; sharing it would tie the two headers'
 * blocking together. */
#define MINNET_CG_KERNEL(SUFFIX, TARGET, VT, W, NV, MR)                                    \
TARGET static inline __attribute__((always_inline))                                        \
void minnet_cg_tile_##SUFFIX(int kc, const float *const *arow, int64_t sk, const float *bp,  \
                             float *c, int64_t ldc, int zero) {                             \
    VT acc[MR][NV];                                                                         \
    MINNET_CG_UNROLL                                                                        \
    for (int r = 0; r < MR; r++) {                                                          \
        MINNET_CG_UNROLL                                                                    \
        for (int v = 0; v < NV; v++)                                                        \
            acc[r][v] = zero ? (VT) {0} : *(const VT *) (c + r * ldc + v * W);              \
    }                                                                                       \
    MINNET_CG_UNROLL4                                                                       \
    for (int k = 0; k < kc; k++) {                                                          \
        const int64_t ko = k * sk;                                                          \
        VT b[NV];                                                                           \
        MINNET_CG_UNROLL                                                                    \
        for (int v = 0; v < NV; v++) b[v] = *(const VT *) (bp + k * (W * NV) + v * W);     \
        MINNET_CG_UNROLL                                                                    \
        for (int r = 0; r < MR; r++) {                                                      \
            const float s = arow[r][ko];                                                    \
            MINNET_CG_UNROLL                                                                \
            for (int v = 0; v < NV; v++) acc[r][v] = acc[r][v] + s * b[v];                  \
        }                                                                                   \
    }                                                                                       \
    MINNET_CG_UNROLL                                                                        \
    for (int r = 0; r < MR; r++) {                                                          \
        MINNET_CG_UNROLL                                                                    \
        for (int v = 0; v < NV; v++) *(VT *) (c + r * ldc + v * W) = acc[r][v];            \
    }                                                                                       \
}                                                                                           \
TARGET __attribute__((noinline))                                                           \
static void minnet_cg_block_##SUFFIX(const minnet_cg_args *a, int i0, int mc, int j0, int nc, \
                                     int k0, int kc, int zero, const float *Bp) {           \
    float edge[MR * W * NV];                                                                \
    const float *arow[MR];                                                                  \
    const int64_t sr = a->trans_a ? 1 : a->lda, sk = a->trans_a ? a->lda : 1;               \
    for (int jr = 0; jr < nc; jr += W * NV) {                                               \
        const int cols = nc - jr < W * NV ? nc - jr : W * NV;                               \
        const float *bp = Bp + (int64_t) (jr / (W * NV)) * kc * (W * NV);                   \
        for (int ir = 0; ir < mc; ir += MR) {                                               \
            const int rows = mc - ir < MR ? mc - ir : MR;                                   \
            for (int r = 0; r < MR; r++)     /* rows past the edge re-read the last one */  \
                arow[r] = a->A + (int64_t) (i0 + ir + (r < rows ? r : rows - 1)) * sr + k0 * sk; \
            float *c = a->C + (int64_t) (i0 + ir) * a->ldc + j0 + jr;                       \
            if (rows == MR && cols == W * NV) {                                             \
                minnet_cg_tile_##SUFFIX(kc, arow, sk, bp, c, a->ldc, zero);                 \
                continue;                                                                   \
            }                                                                               \
            for (int r = 0; r < MR; r++)                                                    \
                for (int j = 0; j < W * NV; j++)                                            \
                    edge[r * W * NV + j] = (zero || r >= rows || j >= cols) ? 0.0f          \
                                           : c[r * a->ldc + j];                             \
            minnet_cg_tile_##SUFFIX(kc, arow, sk, bp, edge, W * NV, 0);                     \
            for (int r = 0; r < rows; r++)                                                  \
                memcpy(c + r * a->ldc, edge + r * W * NV, (size_t) cols * sizeof(float));   \
        }                                                                                   \
    }                                                                                       \
}                                                                                           \
TARGET __attribute__((noinline))                                                           \
static void minnet_cg_run_##SUFFIX(const minnet_cg_args *a) {                              \
    float *Bp = a->work;                                                                    \
    Bp += (16 - ((uintptr_t) Bp / sizeof(float)) % 16) % 16;     /* 64-byte aligned */      \
    for (int k0 = 0; k0 < a->K; k0 += MINNET_CG_KC) {                                      \
        const int kc = a->K - k0 < MINNET_CG_KC ? a->K - k0 : MINNET_CG_KC;                 \
        const int zero = a->beta_zero && k0 == 0;                                           \
        for (int j0 = 0; j0 < a->N; j0 += MINNET_CG_NC) {                                   \
            const int nc = a->N - j0 < MINNET_CG_NC ? a->N - j0 : MINNET_CG_NC;             \
            minnet_cg_pack_b(a, W * NV, k0, kc, j0, nc, Bp);                                \
            for (int i0 = 0; i0 < a->M; i0 += MINNET_CG_MC / MR * MR) {                     \
                const int mc = a->M - i0 < MINNET_CG_MC / MR * MR ? a->M - i0               \
                                                                  : MINNET_CG_MC / MR * MR; \
                minnet_cg_block_##SUFFIX(a, i0, mc, j0, nc, k0, kc, zero, Bp);              \
            }                                                                               \
        }                                                                                   \
    }                                                                                       \
}

#if defined(__x86_64__)
MINNET_CG_KERNEL(avx512, __attribute__((target("avx512f,avx512vl,avx2,fma"))), minnet_cg_v16, 16, 2, 8)
MINNET_CG_KERNEL(avx2, __attribute__((target("avx2,fma"))), minnet_cg_v8, 8, 2, 6)
MINNET_CG_KERNEL(base, , minnet_cg_v4, 4, 2, 4)

static int minnet_cg_isa_level = -1;     /* 0 baseline, 1 AVX2+FMA, 2 AVX-512; -1 not chosen */

static int minnet_cg_set_isa(int level) {
    __builtin_cpu_init();
    int best = (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl")) ? 2
               : (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) ? 1 : 0;
    if (level >= 0) minnet_cg_isa_level = level < best ? level : best;
    else if (minnet_cg_isa_level < 0) minnet_cg_isa_level = best;
    return minnet_cg_isa_level;
}

static void minnet_cg_run(const minnet_cg_args *a) {
    int level = minnet_cg_isa_level < 0 ? minnet_cg_set_isa(-1) : minnet_cg_isa_level;
    if (level == 2) minnet_cg_run_avx512(a);
    else if (level == 1) minnet_cg_run_avx2(a);
    else minnet_cg_run_base(a);
}
#else
MINNET_CG_KERNEL(portable, , minnet_cg_v4, 4, 4, 6)
static int minnet_cg_set_isa(int level) { (void) level; return 0; }
static void minnet_cg_run(const minnet_cg_args *a) { minnet_cg_run_portable(a); }
#endif

#else   /* other compilers: the same sum per element, one element at a time */
static int minnet_cg_set_isa(int level) { (void) level; return 0; }
static void minnet_cg_run(const minnet_cg_args *a) {
    for (int i = 0; i < a->M; i++)
        for (int j = 0; j < a->N; j++) {
            float acc = a->beta_zero ? 0.0f : a->C[(int64_t) i * a->ldc + j];
            for (int k = 0; k < a->K; k++)
                acc = acc + (a->trans_a ? a->A[(int64_t) k * a->lda + i] : a->A[(int64_t) i * a->lda + k])
                          * (a->trans_b ? a->B[(int64_t) j * a->ldb + k] : a->B[(int64_t) k * a->ldb + j]);
            a->C[(int64_t) i * a->ldc + j] = acc;
        }
}
#endif

/* C = beta C + op(A) @ op(B) (float32, row-major; see the top of this file). work: NULL (then
 * it is allocated here) or minnet_cg_work_size(N, K) floats. Returns -1 when out of memory. */
static int minnet_cg_gemm(int trans_a, int trans_b, int M, int N, int K, const float *A, int64_t lda,
                          const float *B, int64_t ldb, float beta, float *C, int64_t ldc,
                          float *work) {
    if (M <= 0 || N <= 0) return 0;
    if (beta != 0.0f && beta != 1.0f)
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) C[(int64_t) i * ldc + j] *= beta;
    if (K <= 0) {
        if (beta == 0.0f)
            for (int i = 0; i < M; i++) memset(C + (int64_t) i * ldc, 0, (size_t) N * sizeof(float));
        return 0;
    }
    minnet_cg_args a = {M, N, K, A, lda, trans_a, B, ldb, trans_b, beta == 0.0f, C, ldc, work};
    float *own = NULL;
    if (work == NULL) {
        own = (float *) malloc((size_t) minnet_cg_work_size(N, K) * sizeof(float));
        if (own == NULL) return -1;
        a.work = own;
    }
    minnet_cg_run(&a);
    free(own);
    return 0;
}

#endif
