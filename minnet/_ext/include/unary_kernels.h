/* The C loops of unary_kernels.pyx, which declares them in `cdef extern from "unary_kernels.h"`. */
#ifndef MINNET_UNARY_H
#define MINNET_UNARY_H
#include <Python.h>
#include "_base.h"
#include "_fastmath.h"
#include <stdint.h>

/* float helpers for the unary family. The C library's expf/erff/log1pf are scalar
 * calls the compiler cannot vectorise (benchmarks/bench_activations_extra.py); these inline polynomial forms
 * are branch-light and accurate to a few ulp for float (double uses the C library).
 * minnet_exp_nonpos_f and minnet_tanh_f come from _fastmath.pxd. */

/* exp(x) for any float x: exp(-|x|) in (0, 1], inverted for x > 0 (inf above ~88.7). */
static inline float minnet_exp_f(float x) {
    float e = minnet_exp_nonpos_f(x > 0.0f ? -x : x);
    return x > 0.0f ? 1.0f / e : e;
}

/* log(x) for normal float x > 0 (Cephes logf: x = m 2^k, m in [sqrt(1/2), sqrt(2))). */
static inline float minnet_log_f(float x) {
    uint32_t bits;
    memcpy(&bits, &x, 4);
    int k = (int)((bits >> 23) & 0xff) - 126;
    bits = (bits & 0x007fffffu) | 0x3f000000u;        /* mantissa in [0.5, 1) */
    float m;
    memcpy(&m, &bits, 4);
    if (m < 0.707106781186547524f) { k -= 1; m = m + m - 1.0f; } else { m = m - 1.0f; }
    float z = m * m;
    float y = 7.0376836292e-2f;
    y = y * m - 1.1514610310e-1f;
    y = y * m + 1.1676998740e-1f;
    y = y * m - 1.2420140846e-1f;
    y = y * m + 1.4249322787e-1f;
    y = y * m - 1.6668057665e-1f;
    y = y * m + 2.0000714765e-1f;
    y = y * m - 2.4999993993e-1f;
    y = y * m + 3.3333331174e-1f;
    y = y * m * z;
    y += -2.12194440e-4f * (float)k;
    y += -0.5f * z;
    return m + y + 0.693359375f * (float)k;
}

/* log(1 + e) for e in [0, 1] without losing small e: u = 1 + e, log(u) * e / (u - 1). */
static inline float minnet_log1p01_f(float e) {
    float u = 1.0f + e;
    return u == 1.0f ? e : minnet_log_f(u) * (e / (u - 1.0f));
}

/* Phi(x) = P(N(0,1) <= x) for float x, from z = x / sqrt2 and e = exp(-z^2) (the
 * backward reuses e for the density). |z| < 0.5: erf's Taylor series (error < 1e-8);
 * beyond: 0.5 erfc(a) = 0.5 t R(t) e, a = |z|, t = 1/(1 + a/2), R a degree-9
 * polynomial fitted to erfcx(a) / t on t in [0.15, 0.8] (relative error 3e-9 in
 * float64, 1.4e-7 evaluated in float32; docs/math/activations.md), used as it
 * stands for x < 0 (no cancellation in the left tail) and as 1 - ... for x > 0.
 * Both sides are computed and one selected, so the loops vectorise.  (It replaced
 * Numerical Recipes' erfcc, t exp(-a^2 + P(t)), which needed a second exp in the
 * backward: benchmarks/bench_autograd.py, gelu layer.) */
static inline float minnet_phi_from_f(float z, float e) {
    float a = z < 0.0f ? -z : z;
    float z2 = z * z;
    float p = -1.0f / 1320.0f;
    p = p * z2 + 1.0f / 216.0f;
    p = p * z2 - 1.0f / 42.0f;
    p = p * z2 + 1.0f / 10.0f;
    p = p * z2 - 1.0f / 3.0f;
    p = p * z2 + 1.0f;
    float small = 0.5f + 0.56418958354775629f * z * p;       /* 0.5 (1 + erf z) */
    float t = 1.0f / (1.0f + 0.5f * a);
    float r = -3.509517759e-02f;
    r = r * t + 8.776799589e-02f;
    r = r * t + 2.295171656e-02f;
    r = r * t - 2.283937335e-01f;
    r = r * t + 1.227211282e-01f;
    r = r * t + 3.141010553e-02f;
    r = r * t + 1.893989742e-01f;
    r = r * t + 2.448578775e-01f;
    r = r * t + 2.822599113e-01f;
    r = r * t + 2.820889354e-01f;
    float half_erfc = 0.5f * t * r * e;
    float big = z < 0.0f ? half_erfc : 1.0f - half_erfc;
    return a < 0.5f ? small : big;
}

static inline float minnet_phi_cdf_f(float x) {
    float z = x * 0.70710678118654752f;
    return minnet_phi_from_f(z, minnet_exp_neg_f(-(z * z)));     /* -z^2 <= 0 */
}

static inline float minnet_softplus1_f(float v) {
    float e = minnet_exp_nonpos_f(v < 0.0f ? v : -v);
    float sp = (v > 0.0f ? v : 0.0f) + minnet_log1p01_f(e);
    return v > 20.0f ? v : sp;
}

/* The float loops of the unary family, in C so that GCC vectorises them (op codes as in
 * the Cython enum below; the op is tested once, outside the loops). */
MINNET_TARGET_CLONES
static void minnet_unary_f(int op, const float *x, float *y, Py_ssize_t n) {
    Py_ssize_t i;
    switch (op) {
    case 0: for (i = 0; i < n; i++) y[i] = x[i] * minnet_phi_cdf_f(x[i]); break;
    case 1: for (i = 0; i < n; i++) { float v = x[i];
                float t = minnet_tanh_f(0.79788456080286535588f * (v + 0.044715f * v * v * v));
                y[i] = 0.5f * v * (1.0f + t); } break;
    case 2: for (i = 0; i < n; i++) y[i] = x[i] * minnet_sigmoid1_f(x[i]); break;
    case 3: for (i = 0; i < n; i++) y[i] = minnet_softplus1_f(x[i]); break;
    case 4: for (i = 0; i < n; i++) { float v = x[i]; float a = v < 0.0f ? -v : v;
                y[i] = v / (1.0f + a); } break;
    case 5: for (i = 0; i < n; i++) { float v = x[i]; float lo = v < 0.0f ? 0.0f : v;
                y[i] = lo > 6.0f ? 6.0f : lo; } break;
    case 6: for (i = 0; i < n; i++) { float v = x[i] * (1.0f / 6.0f) + 0.5f;
                float lo = v < 0.0f ? 0.0f : v; y[i] = lo > 1.0f ? 1.0f : lo; } break;
    case 7: for (i = 0; i < n; i++) { float v = x[i]; float h = v * (1.0f / 6.0f) + 0.5f;
                float lo = h < 0.0f ? 0.0f : h; y[i] = v * (lo > 1.0f ? 1.0f : lo); } break;
    case 8: for (i = 0; i < n; i++) y[i] = x[i] * minnet_tanh_f(minnet_softplus1_f(x[i])); break;
    case 9: for (i = 0; i < n; i++) y[i] = minnet_exp_f(x[i]); break;
    default: break;
    }
}

MINNET_TARGET_CLONES
static void minnet_unary_backward_f(int op, const float *s, const float *g, float *dx,
                                    Py_ssize_t n, int g_step) {
    /* gi: the gradient of element i (MINNET_FOR_GRAD, _base.h) */
    switch (op) {
    case 0: MINNET_FOR_GRAD(n, g, g_step, float v = s[i];          /* Phi(x) + x phi(x) */
                float z = v * 0.70710678118654752f;
                float e = minnet_exp_neg_f(-(z * z));               /* exp(-x^2 / 2) */
                dx[i] = gi * (minnet_phi_from_f(z, e) + v * 0.39894228040143267794f * e);); break;
    case 1: MINNET_FOR_GRAD(n, g, g_step, float v = s[i];
                float t = minnet_tanh_f(0.79788456080286535588f * (v + 0.044715f * v * v * v));
                dx[i] = gi * (0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t)
                              * 0.79788456080286535588f * (1.0f + 3.0f * 0.044715f * v * v));); break;
    case 2: MINNET_FOR_GRAD(n, g, g_step, float v = s[i]; float sg = minnet_sigmoid1_f(v);
                dx[i] = gi * sg * (1.0f + v * (1.0f - sg));); break;
    case 3: MINNET_FOR_GRAD(n, g, g_step, float v = s[i];
                dx[i] = v > 20.0f ? gi : gi * minnet_sigmoid1_f(v);); break;
    case 4: MINNET_FOR_GRAD(n, g, g_step, float v = s[i]; float t = 1.0f + (v < 0.0f ? -v : v);
                dx[i] = gi / (t * t);); break;
    case 5: MINNET_FOR_GRAD(n, g, g_step, float v = s[i];
                dx[i] = (v > 0.0f) & (v < 6.0f) ? gi : 0.0f;); break;
    case 6: MINNET_FOR_GRAD(n, g, g_step, float v = s[i];
                dx[i] = (v > -3.0f) & (v < 3.0f) ? gi / 6.0f : 0.0f;); break;
    case 7: MINNET_FOR_GRAD(n, g, g_step, float v = s[i];
                float mid = gi * (v * (1.0f / 3.0f) + 0.5f);
                float hi = v < 3.0f ? mid : gi;
                dx[i] = v <= -3.0f ? 0.0f : hi;); break;
    case 8: MINNET_FOR_GRAD(n, g, g_step, float v = s[i];
                float t = minnet_tanh_f(minnet_softplus1_f(v));
                dx[i] = gi * (t + v * minnet_sigmoid1_f(v) * (1.0f - t * t));); break;
    case 9: MINNET_FOR_GRAD(n, g, g_step, dx[i] = gi * s[i];); break;
    default: break;
    }
}

#endif  /* MINNET_UNARY_H */
