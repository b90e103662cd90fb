/* The C loops of activations_kernels.pyx, which declares them in `cdef extern from "activations_kernels.h"`. */
#ifndef MINNET_ACTIVATIONS_H
#define MINNET_ACTIVATIONS_H
#include <Python.h>
#include "_base.h"
#include "_fastmath.h"

MINNET_TARGET_CLONES
static void minnet_sigmoid_f(const float *x, float *y, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) y[i] = minnet_sigmoid1_f(x[i]);   /* _fastmath.h */
}
/* The float32 sigmoid and tanh backward in the same per-CPU copies, with exactly the
 * arithmetic Cython generates for `g * y * (1 - y)` and `g * (1 - y * y)` (products
 * of two floats in float, `1 - ...` and the last product in double): the same
 * results with fewer instructions per element than the SSE2 loop
 * (benchmarks/bench_autograd.py, sigmoid and tanh layers). */
MINNET_TARGET_CLONES
static void minnet_sigmoid_backward_f(const float *y, const float *g, float *dx,
                                      Py_ssize_t n, int g_step) {
    MINNET_FOR_GRAD(n, g, g_step, dx[i] = (float)((double)(gi * y[i]) * (1.0 - (double)y[i])););
}
MINNET_TARGET_CLONES
static void minnet_tanh_backward_f(const float *y, const float *g, float *dx,
                                   Py_ssize_t n, int g_step) {
    MINNET_FOR_GRAD(n, g, g_step, dx[i] = (float)((double)gi * (1.0 - (double)(y[i] * y[i]))););
}
/* float32 relu / leaky relu, forward and backward, in the same per-CPU copies: the
 * Cython loops compiled to the default SSE2 code only and ran at half the memory's
 * speed on 3.2 M floats (benchmarks/bench_autograd.py, relu layer).  The same
 * arithmetic as those loops (now the float64 path): relu a select (relu(-inf) = 0,
 * NaN stays NaN, -0.0 stays -0.0), leaky relu v if v > 0 else v * slope, backward
 * g if s > 0 else g * slope (s the saved input, or output for slope >= 0). */
MINNET_TARGET_CLONES
static void minnet_leaky_relu_f(const float *x, float *y, Py_ssize_t n, float slope) {
    Py_ssize_t i;
    if (slope == 0.0f) {
        for (i = 0; i < n; i++) { float v = x[i]; y[i] = v < 0.0f ? 0.0f : v; }
        return;
    }
    for (i = 0; i < n; i++) { float v = x[i]; float neg = v * slope; y[i] = v > 0.0f ? v : neg; }
}
MINNET_TARGET_CLONES
static void minnet_leaky_relu_backward_f(const float *s, const float *g, float *dx,
                                         Py_ssize_t n, float slope, int g_step) {
    MINNET_FOR_GRAD(n, g, g_step, float neg = gi * slope; dx[i] = s[i] > 0.0f ? gi : neg;);
}
/* float32 relu backward from the output, as torch's threshold_backward: a select, not
 * g * 0, so an infinite gradient where y <= 0 gives 0 (g * 0 would be NaN) and a NaN
 * output passes the gradient (NaN <= 0 is false). */
MINNET_TARGET_CLONES
static void minnet_relu_backward_f(const float *y, const float *g, float *dx, Py_ssize_t n,
                                   int g_step) {
    MINNET_FOR_GRAD(n, g, g_step, dx[i] = y[i] <= 0.0f ? 0.0f : gi;);
}
/* float32 ELU / SELU, forward and backward, in the same per-CPU copies.  The forward
 * uses the branch-free minnet_expm1_nonpos_f (_fastmath.pxd) so the loop vectorises;
 * libm's expm1f was a call per element (benchmarks/bench_autograd.py, elu layer).
 * `v >= 0 ? 0 : v` sends NaN to expm1 (NaN propagates, as PyTorch); 0 and -0.0
 * give +0.  Arithmetic as the Cython loops: (scale * alpha) * expm1(v), scale * v;
 * backward g * (scale or y + scale * alpha) from the output, g * (scale or
 * scale * alpha * exp(x)) from the input. */
MINNET_TARGET_CLONES
static void minnet_elu_f(const float *x, float *y, Py_ssize_t n, float alpha,
                         float scale) {
    float sa = scale * alpha;
    for (Py_ssize_t i = 0; i < n; i++) {
        float v = x[i];
        float e = minnet_expm1_nonpos_f(v >= 0.0f ? 0.0f : v);
        y[i] = v > 0.0f ? scale * v : sa * e;
    }
}
MINNET_TARGET_CLONES
static void minnet_elu_backward_f(const float *s, const float *g, float *dx, Py_ssize_t n,
                                  float alpha, float scale, int from_output, int g_step) {
    float sa = scale * alpha;
    if (from_output) {
        MINNET_FOR_GRAD(n, g, g_step, float v = s[i]; dx[i] = gi * (v > 0.0f ? scale : v + sa););
    } else {
        MINNET_FOR_GRAD(n, g, g_step, float v = s[i];
            float neg = sa * minnet_exp_nonpos_f(v < 0.0f ? v : 0.0f);
            dx[i] = gi * (v > 0.0f ? scale : neg););
    }
}

#endif  /* MINNET_ACTIVATIONS_H */
