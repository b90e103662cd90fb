/* The recurrent layers' per-step GEMMs: C (M x n) = init + A (M x K) @ B (K x n), float32,
 * with B packed ONCE per sequence and reused at every time step.
 *
 * A recurrent layer multiplies by the same weight matrix (W_hh, or [W_ih | W_hh]) at each
 * of T steps. A BLAS call copies ("packs") both operands into its own layout on every call,
 * so a 50-step LSTM(128) re-packs W_hh 100 times (forward and backward); in the profile of
 * benchmarks/bench_recurrent.py (LSTM(128), 1 thread) OpenBLAS's copy routines took a large
 * share of the time. Here B is packed once into panels of 32 columns:
 *
 *     Bp[p][k][j] = B[k][32 p + j]        (0 where 32 p + j >= n)
 *
 * and each step runs a register-tile loop over it: a tile of MR rows x (a part of) a panel's
 * columns of C lives in vector registers while k runs 0 .. K-1, each step adding
 * A[m][k] * Bp[p][k][j0 .. j1) (one broadcast, one fused multiply-add per row and vector). A
 * is read in place (rows `lda` apart: a step's rows of a batch-major (N, T, ...) array).
 *
 * What every element computes, whatever the tiling, the thread count or the instruction set:
 *
 *     acc = init[m][j];  for k = 0 .. K-1: acc = acc + A[m][k] * B[k][j];  C[m][j] = acc
 *
 * in that order, with init = C itself, a bias row, or 0. The tile shape only decides which
 * elements are computed together, never the arithmetic of one element, so splitting the
 * rows (the batch parts of recurrent_kernels) or the column panels (threads) cannot change a bit.
 * The multiply-add is fused where the compiled copy has FMA (AVX2, AVX-512, ARM) and is a
 * multiply then an add in the baseline x86-64 copy; one machine always runs the same copy.
 *
 * Copies: on x86-64 with GCC or Clang three copies of the same C code are compiled (AVX-512:
 * tiles of 8 rows x 32 columns, 2 zmm per row; AVX2+FMA: 6 rows x 16 columns, 2 ymm; baseline
 * SSE2: 4 rows x 8 columns, 2 xmm; as many accumulators as fit the 32 / 16 / 16 vector
 * registers beside the loaded B vectors) and the CPU picks one at first use; other GCC/Clang
 * targets (ARM: 32 registers) compile the portable vector code with tiles of 6 rows x 16
 * columns; other compilers a scalar loop with the same arithmetic. minnet_sg_set_isa() lets
 * the tests run every copy this CPU can run (tests/_ext/test_stepgemm.py). Speed:
 * benchmarks/bench_recurrent.py --gemms, docs/math/recurrent.md ("The step GEMM").
 */
#ifndef MINNET_STEPGEMM_H
#define MINNET_STEPGEMM_H

#include <stdint.h>
#include <string.h>

#define MINNET_SG_NR 32                 /* columns per packed panel */

enum { MINNET_SG_INIT_C = 0, MINNET_SG_INIT_BIAS = 1, MINNET_SG_INIT_ZERO = 2 };

static inline int minnet_sg_panels(int n) { return (n + MINNET_SG_NR - 1) / MINNET_SG_NR; }

/* Floats the packed copy of a K x n operand takes. */
static inline int64_t minnet_sg_packed_size(int K, int n) {
    return (int64_t) minnet_sg_panels(n) * K * MINNET_SG_NR;
}

/* Rows k0 .. k0+kn-1 of a K-row B in panels: B[k0 + k][j] = W[j * ldw + k] if trans else
 * W[k * ldw + j]. The forward packs W_hhᵀ (trans = 1: W_hh is (G, H) and the step computes
 * h @ W_hhᵀ), for the LSTM [W_ih | W_hh]ᵀ as two calls (rows 0..I-1 from W_ih, the rest from
 * W_hh); the backward W_hh itself (dG @ W_hh). */
static void minnet_sg_pack(int K, int k0, int kn, int n, const float *W, int64_t ldw, int trans,
                           float *Bp) {
    for (int p = 0; p < minnet_sg_panels(n); p++) {
        float *dst = Bp + ((int64_t) p * K + k0) * MINNET_SG_NR;
        int j0 = p * MINNET_SG_NR;
        int nc = n - j0 < MINNET_SG_NR ? n - j0 : MINNET_SG_NR;
        for (int k = 0; k < kn; k++) {
            float *row = dst + (int64_t) k * MINNET_SG_NR;
            for (int j = 0; j < nc; j++)
                row[j] = trans ? W[(int64_t) (j0 + j) * ldw + k] : W[(int64_t) k * ldw + j0 + j];
            for (int j = nc; j < MINNET_SG_NR; j++)
                row[j] = 0.0f;
        }
    }
}

typedef struct {
    int M, n, K;
    const float *A; int64_t lda;        /* A[m][k] = A[m * lda + k] */
    const float *Bp;                    /* minnet_sg_pack's panels */
    int init; const float *bias;        /* MINNET_SG_INIT_*; bias: n values (INIT_BIAS) */
    float *C; int64_t ldc;
} minnet_sg_args;

#if defined(__GNUC__)
/* GCC/Clang vectors of 16, 8 and 4 floats (one zmm, ymm, xmm register); aligned(4): loads
 * and stores need no alignment. A panel row of 32 floats is NV = 32 / width of them. */
typedef float minnet_sg_v16 __attribute__((vector_size(64), aligned(4)));
typedef float minnet_sg_v8 __attribute__((vector_size(32), aligned(4)));
typedef float minnet_sg_v4 __attribute__((vector_size(16), aligned(4)));
#if defined(__clang__)
#define MINNET_SG_UNROLL _Pragma("unroll")
#else
#define MINNET_SG_UNROLL _Pragma("GCC unroll 16")
#endif

/* One definition of the tile loop for every copy, so their arithmetic cannot drift apart:
 * MINNET_SG_KERNEL(SUFFIX, TARGET, VT, W, NV, MR) defines minnet_sg_run_SUFFIX, which runs
 * panels [p0, p1) in tiles of MR rows x NV vectors of W floats (VT) — a panel is 32 / (W NV)
 * tiles wide — and the rest of the rows in tiles of 4, 2 and 1 row. `mr` is a constant in
 * every call of the tile function, so the compiler unrolls the row and vector loops and keeps
 * acc[][] in registers: MR NV accumulators + NV loaded vectors + 1 broadcast must fit the
 * register file (AVX2 with 3 rows x 4 ymm spilled the accumulators and ran several times
 * slower than 6 rows x 2 ymm: benchmarks/bench_recurrent.py --gemms). Loads and stores go
 * through the aligned(4) vector types, not memcpy (GCC 12 copied those through the stack,
 * slower in the same benchmark). */
#define MINNET_SG_KERNEL(SUFFIX, TARGET, VT, W, NV, MR)                                   \
TARGET static inline __attribute__((always_inline))                                       \
void minnet_sg_tile_##SUFFIX(const minnet_sg_args *a, const int mr, int m0, int p, int q) { \
    const int j0 = p * MINNET_SG_NR + q * (W * NV);     /* first column of the tile */     \
    const int nc = a->n - j0 < W * NV ? a->n - j0 : W * NV;                                \
    const float *bp = a->Bp + (int64_t) p * a->K * MINNET_SG_NR + q * (W * NV);            \
    const float *arow[MR];                                                                 \
    VT acc[MR][NV];                                                                        \
    float edge[W * NV];                                                                    \
    MINNET_SG_UNROLL                                                                       \
    for (int r = 0; r < mr; r++) {                                                         \
        arow[r] = a->A + (int64_t) (m0 + r) * a->lda;                                      \
        const float *src = a->init == MINNET_SG_INIT_C                                     \
            ? a->C + (int64_t) (m0 + r) * a->ldc + j0 : a->bias + j0;                      \
        if (a->init != MINNET_SG_INIT_ZERO && nc == W * NV) {   /* a whole tile row */     \
            MINNET_SG_UNROLL                                                               \
            for (int v = 0; v < NV; v++) acc[r][v] = *(const VT *) (src + v * W);          \
            continue;                                                                      \
        }                                                                                  \
        memset(edge, 0, sizeof edge);    /* zeros, or the last panel's nc < W NV values */ \
        if (a->init != MINNET_SG_INIT_ZERO) memcpy(edge, src, (size_t) nc * sizeof(float)); \
        MINNET_SG_UNROLL                                                                   \
        for (int v = 0; v < NV; v++) acc[r][v] = *(const VT *) (edge + v * W);             \
    }                                                                                      \
    for (int k = 0; k < a->K; k++) {                                                       \
        VT b[NV];                                                                          \
        MINNET_SG_UNROLL                                                                   \
        for (int v = 0; v < NV; v++)                                                       \
            b[v] = *(const VT *) (bp + (int64_t) k * MINNET_SG_NR + v * W);                 \
        MINNET_SG_UNROLL                                                                   \
        for (int r = 0; r < mr; r++) {                                                     \
            const float s = arow[r][k];                                                    \
            MINNET_SG_UNROLL                                                               \
            for (int v = 0; v < NV; v++) acc[r][v] = acc[r][v] + s * b[v];                 \
        }                                                                                  \
    }                                                                                      \
    MINNET_SG_UNROLL                                                                       \
    for (int r = 0; r < mr; r++) {                                                         \
        float *dst = a->C + (int64_t) (m0 + r) * a->ldc + j0;                              \
        if (nc == W * NV) {                                                                \
            MINNET_SG_UNROLL                                                               \
            for (int v = 0; v < NV; v++) *(VT *) (dst + v * W) = acc[r][v];                \
            continue;                                                                      \
        }                                                                                  \
        MINNET_SG_UNROLL                                                                   \
        for (int v = 0; v < NV; v++) *(VT *) (edge + v * W) = acc[r][v];                   \
        memcpy(dst, edge, (size_t) nc * sizeof(float));                                    \
    }                                                                                      \
}                                                                                          \
TARGET __attribute__((noinline))                                                          \
static void minnet_sg_run_##SUFFIX(const minnet_sg_args *a, int p0, int p1) {             \
    for (int p = p0; p < p1; p++) {                                                        \
        for (int q = 0; q < MINNET_SG_NR / (W * NV); q++) {                                \
            if (p * MINNET_SG_NR + q * (W * NV) >= a->n) break;   /* zero padding only */  \
            int m = 0;                                                                     \
            for (; m + MR <= a->M; m += MR) minnet_sg_tile_##SUFFIX(a, MR, m, p, q);       \
            if (MR > 4 && m + 4 <= a->M) { minnet_sg_tile_##SUFFIX(a, 4, m, p, q); m += 4; } \
            if (MR > 2 && m + 2 <= a->M) { minnet_sg_tile_##SUFFIX(a, 2, m, p, q); m += 2; } \
            for (; m < a->M; m++) minnet_sg_tile_##SUFFIX(a, 1, m, p, q);                  \
        }                                                                                  \
    }                                                                                      \
}

#if defined(__x86_64__)
MINNET_SG_KERNEL(avx512, __attribute__((target("avx512f,avx512vl,avx2,fma"))), minnet_sg_v16, 16, 2, 8)
MINNET_SG_KERNEL(avx2, __attribute__((target("avx2,fma"))), minnet_sg_v8, 8, 2, 6)
MINNET_SG_KERNEL(base, , minnet_sg_v4, 4, 2, 4)

/* 0 = baseline, 1 = AVX2+FMA, 2 = AVX-512; -1 = not chosen yet. */
static int minnet_sg_isa_level = -1;

static int minnet_sg_best_isa(void) {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl")) return 2;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return 1;
    return 0;
}

/* The copy in use, or (level >= 0) use that copy, capped at what this CPU runs. */
static int minnet_sg_set_isa(int level) {
    int best = minnet_sg_best_isa();
    if (level >= 0) minnet_sg_isa_level = level < best ? level : best;
    else if (minnet_sg_isa_level < 0) minnet_sg_isa_level = best;
    return minnet_sg_isa_level;
}

static void minnet_sg_run(const minnet_sg_args *a, int p0, int p1) {
    int level = minnet_sg_isa_level;
    if (level < 0) level = minnet_sg_set_isa(-1);
    if (level == 2) minnet_sg_run_avx512(a, p0, p1);
    else if (level == 1) minnet_sg_run_avx2(a, p0, p1);
    else minnet_sg_run_base(a, p0, p1);
}
#else   /* GCC/Clang on another CPU (ARM: 32 vector registers): the portable vector code */
MINNET_SG_KERNEL(portable, , minnet_sg_v4, 4, 4, 6)
static int minnet_sg_set_isa(int level) { (void) level; return 0; }
static void minnet_sg_run(const minnet_sg_args *a, int p0, int p1) {
    minnet_sg_run_portable(a, p0, p1);
}
#endif

#else   /* other compilers: a scalar loop, the same arithmetic per element */
static int minnet_sg_set_isa(int level) { (void) level; return 0; }
static void minnet_sg_run(const minnet_sg_args *a, int p0, int p1) {
    for (int p = p0; p < p1; p++) {
        int j0 = p * MINNET_SG_NR;
        int nc = a->n - j0 < MINNET_SG_NR ? a->n - j0 : MINNET_SG_NR;
        const float *bp = a->Bp + (int64_t) p * a->K * MINNET_SG_NR;
        for (int m = 0; m < a->M; m++) {
            const float *arow = a->A + (int64_t) m * a->lda;
            float *crow = a->C + (int64_t) m * a->ldc + j0;
            for (int j = 0; j < nc; j++) {
                float acc = a->init == MINNET_SG_INIT_C ? crow[j]
                            : a->init == MINNET_SG_INIT_BIAS ? a->bias[j0 + j] : 0.0f;
                for (int k = 0; k < a->K; k++)
                    acc = acc + arow[k] * bp[(int64_t) k * MINNET_SG_NR + j];
                crow[j] = acc;
            }
        }
    }
}
#endif

/* C = init + A @ B over column panels [p0, p1) (all of them: 0, minnet_sg_panels(n)). */
static void minnet_sg_gemm(int M, int n, int K, const float *A, int64_t lda, const float *Bp,
                           int init, const float *bias, float *C, int64_t ldc, int p0, int p1) {
    minnet_sg_args a = {M, n, K, A, lda, Bp, init, bias, C, ldc};
    if (M <= 0 || n <= 0 || p0 >= p1) return;
    minnet_sg_run(&a, p0, p1);
}

#endif
