/* Vectorisable float32 math of minnet._ext (declared in _fastmath.pxd). */
#ifndef MINNET_FASTMATH_H
#define MINNET_FASTMATH_H
#include <stdint.h>
#include <string.h>
#include <math.h>
/* exp(x) for float x <= 0.  Cephes' range reduction x = n*ln2 + r, |r| <= ln2/2,
 * exp(r) by a degree-7 polynomial, then 2^n from the exponent bits: max error
 * ~1.4 ulp on [-87.3, 0].  Results below FLT_MIN (x < -87.3) are flushed to 0;
 * positive x is clamped to 0 (callers never pass one); NaN propagates. */
/* The core of minnet_exp_nonpos_f for -87.33 <= x <= 0 (no clamp, no flush): callers
 * that already bound x (tanh) skip the two clamps and the select. */
static inline float minnet_exp_core_f(float xc) {
    const float magic = 12582912.0f;           /* 1.5 * 2^23: adding it rounds to int */
    float t = xc * 1.44269504088896341f + magic;
    float n = t - magic;
    int32_t t_bits, magic_bits;
    memcpy(&t_bits, &t, 4);
    memcpy(&magic_bits, &magic, 4);
    uint32_t scale_bits = (uint32_t)(t_bits - magic_bits + 127) << 23;
    float scale;
    memcpy(&scale, &scale_bits, 4);
    float r = xc - n * 0.693359375f;
    r = r + n * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    return (p * r * r + r + 1.0f) * scale;
}

/* exp(x) for x <= 0 or NaN only (a positive x is not clamped): minnet_exp_nonpos_f
 * without the clamp at 0, for callers whose argument cannot be positive (the sigmoid's
 * -|v|), where that compare and select were one in ten of the loop's instructions
 * (benchmarks/bench_autograd.py, sigmoid layer).  The same bits for every such x. */
static inline float minnet_exp_neg_f(float x) {
    float xc = x < -87.3365478515625f ? -87.3365478515625f : x;
    float y = minnet_exp_core_f(xc);
    return x < -87.3365478515625f ? 0.0f : y;
}

static inline float minnet_exp_nonpos_f(float x) {
    return minnet_exp_neg_f(x > 0.0f ? 0.0f : x);
}

/* expm1(x) = exp(x) - 1 for float x <= 0, branch-free (both sides computed, one
 * selected) so that loops calling it vectorise; libm's expm1f is a call per element.
 * For -ln2 < x <= 0 the Taylor polynomial x + x^2 (1/2! + x/3! + ... + x^8/10!)
 * (Horner, no cancellation; truncation < 1e-9 relative); for x <= -ln2,
 * minnet_exp_nonpos_f(x) - 1: there exp(x) <= 1/2, so its <= 1.4 ulp error is at
 * most 0.7 ulp of the result in (-1, -1/2], and the subtraction adds <= 0.5 ulp.
 * Max error <= 2 ulp on [-inf, 0] (tests/_ext/test_fastmath_expm1.py measures it
 * against float64 expm1).  x = +-0 returns x; -inf gives -1; NaN propagates (it
 * takes the exp side).  Positive x is not meant to be passed. */
static inline float minnet_expm1_nonpos_f(float x) {
    float p = 2.7557319224e-7f;                /* 1/10! */
    p = p * x + 2.7557319224e-6f;              /* 1/9! */
    p = p * x + 2.4801587302e-5f;              /* 1/8! */
    p = p * x + 1.9841269841e-4f;              /* 1/7! */
    p = p * x + 1.3888888889e-3f;              /* 1/6! */
    p = p * x + 8.3333333333e-3f;              /* 1/5! */
    p = p * x + 4.1666666667e-2f;              /* 1/4! */
    p = p * x + 1.6666666667e-1f;              /* 1/3! */
    p = p * x + 0.5f;
    float small = x + (x * x) * p;
    float big = minnet_exp_nonpos_f(x) - 1.0f;
    float y = x > -0.693147180559945309f ? small : big;
    return x == 0.0f ? x : y;
}

/* tanh(x) for float x, branch-free (Cephes tanhf): for |x| < 0.5625 an odd
 * polynomial (no cancellation near 0), else sign(x) * (1 - e) / (1 + e) with
 * e = exp(-2|x|) in (0, 0.33], which never overflows.  Max error ~2 ulp; NaN
 * takes the polynomial side and stays NaN. */
static inline float minnet_tanh_f(float x) {
    uint32_t bits, sign;
    memcpy(&bits, &x, 4);
    sign = bits & 0x80000000u;                 /* odd: |x| in, the sign put back */
    bits ^= sign;
    float a;
    memcpy(&a, &bits, 4);
    float z = x * x;
    float p = -5.70498872745e-3f;
    p = p * z + 2.06390887954e-2f;
    p = p * z - 5.37397155531e-2f;
    p = p * z + 1.33314422036e-1f;
    p = p * z - 3.33332819422e-1f;
    float small = p * z * a + a;
    /* exp(-2|x|) with -2|x| clamped at -87 (exp(-87) ~ 1.6e-38: (1 - e) / (1 + e)
     * rounds to 1 there, as it does for the flushed 0), so the core exp needs no
     * clamp or select of its own (benchmarks/bench_autograd.py, tanh layer). */
    float m = -2.0f * a;
    m = m < -87.0f ? -87.0f : m;
    float e = minnet_exp_core_f(m);
    float big = (1.0f - e) / (1.0f + e);
    float y = a >= 0.5625f ? big : small;
    memcpy(&bits, &y, 4);
    bits |= sign;                              /* keeps -0.0 too */
    memcpy(&y, &bits, 4);
    return y;
}

/* The logistic sigmoid 1 / (1 + exp(-v)) of one value, without overflow: e = exp(-|v|)
 * is in (0, 1], so 1 + e never loses the small side; (v >= 0 ? 1 : e) / (1 + e), one
 * correctly rounded division.  The one definition every kernel uses (activations_kernels,
 * unary_kernels's silu, the LSTM/GRU gates of recurrent_kernels); tests/_ext/test_formulas.py checks
 * that it is defined once.  The merge changed one copy's rounding: recurrent_kernels's float32
 * gates computed e * (1 / (1 + e)) for v < 0; e / (1 + e) differs from it by at most 1 ulp
 * (on 7% of a sweep of [-88, 0)) and is no worse against float64 (max 1.48 ulp against
 * 1.92, from the same e). */
static inline float minnet_sigmoid1_f(float v) {
    float e = minnet_exp_neg_f(v < 0.0f ? v : -v);          /* -|v| <= 0, or NaN */
    return (v >= 0.0f ? 1.0f : e) / (1.0f + e);
}

static inline double minnet_sigmoid1_d(double v) {
    double e = exp(-fabs(v));
    return (v >= 0.0 ? 1.0 : e) / (1.0 + e);
}

/* Row helpers for softmax and cross-entropy.  A reduction (max, sum) is a chain the
 * compiler may not reorder without -ffast-math, so it would stay scalar; these keep
 * MINNET_LANES independent partial results (a fixed-size array the compiler maps to
 * SIMD registers) and combine them at the end.  Sums are in double.  On x86-64
 * Linux GCC also builds AVX2 / AVX-512 copies and picks one at load time. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define MINNET_FAST_CLONES \
    __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define MINNET_FAST_CLONES
#endif
#define MINNET_LANES 8

/* max of x[0..n), n >= 1 (NaNs other than x[0] are skipped, as `if (v > m) m = v`).
 * GCC turns a lane array of float selects into scalar cmovs, so with GCC/Clang the
 * lanes are an explicit 8-float vector and the select a compare-and-blend. */
#if defined(__GNUC__)
typedef float minnet_v8f __attribute__((vector_size(32)));
typedef int32_t minnet_v8i __attribute__((vector_size(32)));
#endif
MINNET_FAST_CLONES
static float minnet_row_max_f(const float *x, Py_ssize_t n) {
    float m = x[0];
    Py_ssize_t j = 0;
#if defined(__GNUC__)
    /* Four independent accumulators so consecutive compares do not wait on each other. */
    /* Rows shorter than 32 (a 10-class softmax) skip the lanes: every lane would still
     * hold x[0], so combining them could not change m, and it costs 32 dependent selects. */
    if (n >= 32) {
        minnet_v8f acc[4];
        int a, k;
        for (a = 0; a < 4; a++)
            for (k = 0; k < 8; k++) acc[a][k] = m;
        for (; j + 32 <= n; j += 32)
            for (a = 0; a < 4; a++) {
                minnet_v8f v;
                memcpy(&v, x + j + 8 * a, sizeof v);
                minnet_v8i gt = (minnet_v8i)(v > acc[a]);      /* all ones where v > acc */
                acc[a] = (minnet_v8f)((gt & (minnet_v8i)v) | (~gt & (minnet_v8i)acc[a]));
            }
        for (a = 0; a < 4; a++)
            for (k = 0; k < 8; k++) m = acc[a][k] > m ? acc[a][k] : m;
    }
#endif
    for (; j < n; j++) m = x[j] > m ? x[j] : m;
    return m;
}

/* sum_j exp(x[j] - m) in double (m >= every x[j]); writes the terms to y unless y is
 * NULL.  MINNET_EXP_LANES (32) partial sums: with 8 (one AVX-512 register of doubles)
 * every add waited on the previous one and the loop ran at the add latency, not at
 * the exp's throughput (benchmarks/bench_autograd.py, "softmax dim -1").  The lanes
 * are combined in lane order: a fixed order, as before. */
#define MINNET_EXP_LANES 32
MINNET_FAST_CLONES
static double minnet_exp_sum_f(const float *x, float m, float *y, Py_ssize_t n) {
    double acc[MINNET_EXP_LANES] = {0};
    double total = 0;
    Py_ssize_t j = 0;
    int k;
    if (y != NULL) {
        for (; j + MINNET_EXP_LANES <= n; j += MINNET_EXP_LANES)
            for (k = 0; k < MINNET_EXP_LANES; k++) {
                float e = minnet_exp_nonpos_f(x[j + k] - m);
                y[j + k] = e;
                acc[k] += (double)e;
            }
        for (; j < n; j++) {
            float e = minnet_exp_nonpos_f(x[j] - m);
            y[j] = e;
            total += (double)e;
        }
    } else {
        for (; j + MINNET_EXP_LANES <= n; j += MINNET_EXP_LANES)
            for (k = 0; k < MINNET_EXP_LANES; k++)
                acc[k] += (double)minnet_exp_nonpos_f(x[j + k] - m);
        for (; j < n; j++) total += (double)minnet_exp_nonpos_f(x[j] - m);
    }
    /* The lanes after the tail, in lane order.  A row shorter than the lanes left every
     * lane 0.0, and total (a sum of exps, >= 0) + 0.0 is total: skipping those 32
     * dependent adds keeps the bits (benchmarks/ab_bits.py compares them). */
    if (n >= MINNET_EXP_LANES)
        for (k = 0; k < MINNET_EXP_LANES; k++) total += acc[k];
    return total;
}

/* Up to MINNET_SHORT_ROWS rows shorter than MINNET_EXP_LANES at once (a 10-class
 * softmax or cross-entropy), row k of the block in lane k.  Each lane does what
 * minnet_row_max_f and minnet_exp_sum_f do for one such row, in the same order (the max
 * from x[0], compared as `v > m`; then exp(x[j] - m) added one by one to a double that
 * starts at 0), so every row gets the same bits.  Row by row, those are chains of
 * dependent compares and adds and one scalar exp per element; across rows they are
 * vector operations (benchmarks/bench_activations.py, "softmax_ce_10").  The block is
 * copied transposed into t (at most 31 x 8 floats) so that the lanes are contiguous;
 * lanes past nr repeat row 0 and are not written back.  m[k] and total[k] (k < nr) get
 * each row's max and sum; y, unless NULL, the terms exp(x[j] - m) in x's row layout,
 * times (float)(1 / total) when normalize (the softmax, as minnet_scale_f would). */
#define MINNET_SHORT_ROWS 8
MINNET_FAST_CLONES
static void minnet_short_rows_f(const float *x, Py_ssize_t nr, Py_ssize_t n,
                                float *m, double *total, float *y, int normalize) {
    float t[MINNET_EXP_LANES - 1][MINNET_SHORT_ROWS];
    float mk[MINNET_SHORT_ROWS];
    double sk[MINNET_SHORT_ROWS];
    const float *r[MINNET_SHORT_ROWS];
    Py_ssize_t j;
    int k;
    for (k = 0; k < MINNET_SHORT_ROWS; k++) {
        r[k] = x + (k < nr ? k : 0) * n;
        mk[k] = r[k][0];
        sk[k] = 0.0;
    }
    for (j = 0; j < n; j++)
        for (k = 0; k < MINNET_SHORT_ROWS; k++) {
            float v = r[k][j];
            t[j][k] = v;
            mk[k] = v > mk[k] ? v : mk[k];
        }
    for (j = 0; j < n; j++)
        for (k = 0; k < MINNET_SHORT_ROWS; k++) {
            float e = minnet_exp_nonpos_f(t[j][k] - mk[k]);
            t[j][k] = e;
            sk[k] += (double)e;
        }
    for (k = 0; k < nr; k++) {
        m[k] = mk[k];
        total[k] = sk[k];
    }
    if (y == NULL)
        return;
    if (normalize) {
        for (k = 0; k < MINNET_SHORT_ROWS; k++) mk[k] = (float)(1.0 / sk[k]);
        for (j = 0; j < n; j++)
            for (k = 0; k < MINNET_SHORT_ROWS; k++) t[j][k] *= mk[k];
    }
    for (k = 0; k < nr; k++)
        for (j = 0; j < n; j++) y[k * n + j] = t[j][k];
}

/* Alike by shape (duplicates): minnet_exp_sum_f and minnet_dot_f are both lane-parallel
 * double sums (the lane count and the term differ; each keeps its own fixed order). */
/* sum_j a[j] * b[j] in double (b NULL: sum_j a[j]). */
MINNET_FAST_CLONES
static double minnet_dot_f(const float *a, const float *b, Py_ssize_t n) {
    double acc[MINNET_LANES] = {0};
    double total = 0;
    Py_ssize_t j = 0;
    int k;
    if (b != NULL) {
        for (; j + MINNET_LANES <= n; j += MINNET_LANES)
            for (k = 0; k < MINNET_LANES; k++) acc[k] += (double)a[j + k] * (double)b[j + k];
        for (; j < n; j++) total += (double)a[j] * (double)b[j];
    } else {
        for (; j + MINNET_LANES <= n; j += MINNET_LANES)
            for (k = 0; k < MINNET_LANES; k++) acc[k] += (double)a[j + k];
        for (; j < n; j++) total += (double)a[j];
    }
    for (k = 0; k < MINNET_LANES; k++) total += acc[k];
    return total;
}

/* y[i] *= s for n floats (the softmax normalisation; cloned like the helpers above). */
MINNET_FAST_CLONES
static void minnet_scale_f(float *y, float s, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) y[i] *= s;
}

/* y[i] = tanh(x[i]) for n floats. */
MINNET_FAST_CLONES
static void minnet_tanh_block_f(const float *x, float *y, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) y[i] = minnet_tanh_f(x[i]);
}

/* Cross-entropy gradient of one row with integer labels:
 * dx[j] = (exp(x[j] - lse) - off) * g (the caller subtracts (1 - eps) * g at the
 * label).  x[j] - lse is taken in double (lse may be large), then rounded to float. */
MINNET_FAST_CLONES
static void minnet_ce_grad_row_f(const float *x, double lse, float off, float g,
                                 float *dx, Py_ssize_t n) {
    for (Py_ssize_t j = 0; j < n; j++)
        dx[j] = (minnet_exp_nonpos_f((float)((double)x[j] - lse)) - off) * g;
}
#endif
