/* The C loops of layernorm_kernels.pyx, which declares them in `cdef extern from "layernorm_kernels.h"`. */
#ifndef MINNET_LAYERNORM_H
#define MINNET_LAYERNORM_H
#include <Python.h>

/* float32 rows in C: four independent double accumulators per reduction (so the adds
 * do not wait on each other), and float elementwise loops GCC vectorises. The order of
 * every sum is fixed by D alone. */
static void minnet_ln_row_fwd_f(const float *x, const float *gamma, const float *beta,
                                int affine, double eps, Py_ssize_t D, float *y,
                                float *mean, float *rstd) {
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    Py_ssize_t d, D4 = D - D % 4;
    for (d = 0; d < D4; d += 4) { s0 += x[d]; s1 += x[d + 1]; s2 += x[d + 2]; s3 += x[d + 3]; }
    for (; d < D; d++) s0 += x[d];
    double mu = (s0 + s1 + s2 + s3) / (double)D;
    double q0 = 0, q1 = 0, q2 = 0, q3 = 0, t;
    for (d = 0; d < D4; d += 4) {
        t = x[d] - mu; q0 += t * t; t = x[d + 1] - mu; q1 += t * t;
        t = x[d + 2] - mu; q2 += t * t; t = x[d + 3] - mu; q3 += t * t;
    }
    for (; d < D; d++) { t = x[d] - mu; q0 += t * t; }
    double inv = 1.0 / sqrt((q0 + q1 + q2 + q3) / (double)D + eps);
    float muf = (float)mu, invf = (float)inv;
    *mean = muf;
    *rstd = invf;
    if (affine) {
        for (d = 0; d < D; d++) y[d] = (x[d] - muf) * invf * gamma[d] + beta[d];
    } else {
        for (d = 0; d < D; d++) y[d] = (x[d] - muf) * invf;
    }
}

/* One row of the backward: dx, and the row's g*xhat and g added to the block sums. */
static void minnet_ln_row_bwd_f(const float *x, const float *g, const float *gamma,
                                int affine, float mu, float inv, Py_ssize_t D, float *dx,
                                double *dgamma, double *dbeta) {
    double a0 = 0, a1 = 0, c0 = 0, c1 = 0;
    Py_ssize_t d, D2 = D - D % 2;
    for (d = 0; d < D; d++) {
        float xh = (x[d] - mu) * inv;
        dgamma[d] += (double)(g[d] * xh);
        dbeta[d] += (double)g[d];
    }
    for (d = 0; d < D2; d += 2) {
        float xh0 = (x[d] - mu) * inv, xh1 = (x[d + 1] - mu) * inv;
        float e0 = affine ? g[d] * gamma[d] : g[d];
        float e1 = affine ? g[d + 1] * gamma[d + 1] : g[d + 1];
        a0 += e0; a1 += e1; c0 += (double)(e0 * xh0); c1 += (double)(e1 * xh1);
    }
    for (; d < D; d++) {
        float xh = (x[d] - mu) * inv;
        float e = affine ? g[d] * gamma[d] : g[d];
        a0 += e; c0 += (double)(e * xh);
    }
    float am = (float)((a0 + a1) / (double)D), cm = (float)((c0 + c1) / (double)D);
    for (d = 0; d < D; d++) {
        float xh = (x[d] - mu) * inv;
        float e = affine ? g[d] * gamma[d] : g[d];
        dx[d] = inv * (e - am - xh * cm);
    }
}

#endif  /* MINNET_LAYERNORM_H */
