"""Layer normalisation kernels on ``(rows, D)``: each row normalised by its own mean and
(biased) variance, then scaled by ``gamma`` and shifted by ``beta`` (both ``(D,)``, optional).

Forward writes ``y`` and saves the per-row ``mean`` and ``rstd = 1 / sqrt(var + eps)`` (the
backward recomputes ``xhat`` from them, as PyTorch does). Backward:

    xhat = (x - mean) * rstd,  dxhat = g * gamma
    dx   = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))      (per row)
    dgamma = sum over rows of g * xhat,  dbeta = sum over rows of g

Rows are split over threads (each row written by one thread). float32 rows run in C
(four independent double accumulators per row sum, vectorisable float loops); float64 rows
in the Cython loops below. ``dgamma``/``dbeta`` are sums
over rows: they are accumulated per fixed block of ``_ROWS`` rows (whatever the thread
count) into a ``(n_blocks, D)`` buffer, and the blocks are then added in block order, so the
result does not depend on the thread count. Row statistics use double accumulators.
The math is in ``docs/math/layernorm.md``.
"""
from cython.parallel cimport prange
from libc.math cimport sqrt

from minnet._ext._base cimport check_nd, check_typed, team
from minnet._ext._blas cimport floating

import numpy as np

cdef enum:
    _ROWS = 32


cdef extern from "layernorm_kernels.h":
    void minnet_ln_row_fwd_f(const float* x, const float* gamma, const float* beta, int affine,
                             double eps, Py_ssize_t D, float* y, float* mean,
                             float* rstd) noexcept nogil
    void minnet_ln_row_bwd_f(const float* x, const float* g, const float* gamma, int affine,
                             float mu, float inv, Py_ssize_t D, float* dx, double* dgamma,
                             double* dbeta) noexcept nogil


cdef inline int _row_team(Py_ssize_t work, int n_threads) noexcept nogil:
    # a row element costs about two elementwise operations: teams from 16384 elements
    return team(2 * work, n_threads)


cdef void layernorm_forward_kernel(const floating[:, ::1] x,      # IN  (rows, D)
                                   const floating[::1] gamma,     # IN  (D,) (unused if not affine)
                                   const floating[::1] beta,      # IN  (D,)
                                   bint affine, double eps,
                                   floating[:, ::1] y,            # OUT (rows, D)
                                   floating[::1] mean,            # OUT (rows,)
                                   floating[::1] rstd,            # OUT (rows,)
                                   int n_threads) noexcept nogil:
    cdef Py_ssize_t r, d, rows = x.shape[0], D = x.shape[1]
    cdef double mu, m2, diff, inv
    if floating is float:    # fast path: benchmarks/bench_autograd.py "layer_norm dim -1"
        for r in prange(rows, num_threads=_row_team(rows * D, n_threads), schedule="static"):
            minnet_ln_row_fwd_f(&x[r, 0], &gamma[0], &beta[0], affine, eps, D, &y[r, 0],
                                &mean[r], &rstd[r])
        return
    for r in prange(rows, num_threads=_row_team(rows * D, n_threads), schedule="static"):
        mu = 0
        for d in range(D):
            mu = mu + x[r, d]
        mu = mu / D
        m2 = 0
        for d in range(D):
            diff = x[r, d] - mu
            m2 = m2 + diff * diff
        inv = 1.0 / sqrt(m2 / D + eps)
        mean[r] = <floating> mu
        rstd[r] = <floating> inv
        if affine:
            for d in range(D):
                y[r, d] = <floating> ((x[r, d] - mu) * inv) * gamma[d] + beta[d]
        else:
            for d in range(D):
                y[r, d] = <floating> ((x[r, d] - mu) * inv)


cdef void layernorm_backward_kernel(const floating[:, ::1] x,      # IN  (rows, D)
                                    const floating[:, ::1] g,      # IN  (rows, D)
                                    const floating[::1] gamma,     # IN  (D,)
                                    const floating[::1] mean,      # IN  (rows,)
                                    const floating[::1] rstd,      # IN  (rows,)
                                    bint affine,
                                    floating[:, ::1] dx,           # OUT (rows, D)
                                    double[:, ::1] partial,        # OUT (n_blocks, 2*D) scratch
                                    int n_threads) noexcept nogil:
    cdef Py_ssize_t r, d, b, r0, r1, rows = x.shape[0], D = x.shape[1]
    cdef Py_ssize_t n_blocks = (rows + _ROWS - 1) // _ROWS
    cdef double a, c, xh, dxh, inv, mu
    if floating is float:    # fast path: benchmarks/bench_autograd.py "layer_norm dim -1"
        for b in prange(n_blocks, num_threads=_row_team(rows * D, n_threads), schedule="static"):
            r0 = b * _ROWS
            r1 = r0 + _ROWS if r0 + _ROWS < rows else rows
            for r in range(r0, r1):
                minnet_ln_row_bwd_f(&x[r, 0], &g[r, 0], &gamma[0], affine, mean[r], rstd[r], D,
                                    &dx[r, 0], &partial[b, 0], &partial[b, D])
        return
    for b in prange(n_blocks, num_threads=_row_team(rows * D, n_threads), schedule="static"):
        r0 = b * _ROWS
        r1 = r0 + _ROWS if r0 + _ROWS < rows else rows
        for r in range(r0, r1):
            mu = mean[r]
            inv = rstd[r]
            a = 0
            c = 0
            for d in range(D):
                xh = (x[r, d] - mu) * inv
                dxh = g[r, d] * (gamma[d] if affine else 1)
                a = a + dxh
                c = c + dxh * xh
                partial[b, d] += g[r, d] * xh
                partial[b, D + d] += g[r, d]
            a = a / D
            c = c / D
            for d in range(D):
                xh = (x[r, d] - mu) * inv
                dxh = g[r, d] * (gamma[d] if affine else 1)
                dx[r, d] = <floating> (inv * (dxh - a - xh * c))


def _forward(const floating[:, ::1] x, const floating[::1] gamma, const floating[::1] beta,
             bint affine, double eps, floating[:, ::1] y, floating[::1] mean, floating[::1] rstd,
             int n_threads):
    with nogil:
        layernorm_forward_kernel(x, gamma, beta, affine, eps, y, mean, rstd, n_threads)


def _backward(const floating[:, ::1] x, const floating[:, ::1] g, const floating[::1] gamma,
              const floating[::1] mean, const floating[::1] rstd, bint affine,
              floating[:, ::1] dx, double[:, ::1] partial, int n_threads):
    with nogil:
        layernorm_backward_kernel(x, g, gamma, mean, rstd, affine, dx, partial, n_threads)


def layernorm_forward(x, gamma=None, beta=None, eps=1e-5, n_threads=1):
    """Normalise each row of ``x`` ``(rows, D)``; returns ``(y, mean, rstd)``.

    ``gamma``/``beta`` (``(D,)``) are both given or both None (no affine step).
    """
    check_nd(x, "x", 2)                  # (rows, D)
    rows, D = x.shape
    affine = gamma is not None
    if affine:
        check_typed(gamma, "gamma", x.dtype, (D,))
        check_typed(beta, "beta", x.dtype, (D,))
    else:
        gamma = beta = np.zeros(1, x.dtype)
    eps = float(eps)
    if not eps >= 0:
        raise ValueError(f"Invalid argument `eps`: expected a float >= 0. Received: eps={eps}")
    y = np.empty_like(x)
    mean = np.empty(rows, x.dtype)
    rstd = np.empty(rows, x.dtype)
    if D == 0:
        mean[:] = 0
        rstd[:] = 0
        return y, mean, rstd
    _forward(x, gamma, beta, affine, eps, y, mean, rstd, max(1, int(n_threads)))
    return y, mean, rstd


def layernorm_backward(x, grad, mean, rstd, gamma=None, n_threads=1):
    """Returns ``(dx, dgamma, dbeta)`` (``dgamma``/``dbeta`` None without ``gamma``)."""
    check_nd(x, "x", 2)                  # (rows, D)
    rows, D = x.shape
    check_typed(grad, "grad", x.dtype, x.shape)
    check_typed(mean, "mean", x.dtype, (rows,))
    check_typed(rstd, "rstd", x.dtype, (rows,))
    affine = gamma is not None
    if affine:
        check_typed(gamma, "gamma", x.dtype, (D,))
    else:
        gamma = np.zeros(1, x.dtype)
    dx = np.empty_like(x)
    n_blocks = (rows + _ROWS - 1) // _ROWS
    partial = np.zeros((max(n_blocks, 1), 2 * D), np.float64)
    if D and rows:
        _backward(x, grad, gamma, mean, rstd, affine, dx, partial, max(1, int(n_threads)))
    if not affine:
        return dx, None, None
    sums = np.zeros(2 * D, np.float64)
    for b in range(partial.shape[0]):          # block order: independent of the thread count
        sums += partial[b]
    return dx, sums[:D].astype(x.dtype), sums[D:].astype(x.dtype)
