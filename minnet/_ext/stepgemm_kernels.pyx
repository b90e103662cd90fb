"""The recurrent layers' float32 step GEMM (declared in stepgemm_kernels.pxd, the C in stepgemm_kernels.h),
and its Python entries for the tests (tests/_ext/test_stepgemm.py) and benchmarks."""
from cython.parallel cimport prange
from libc.stdint cimport int64_t

from minnet._ext._base cimport check_typed
from minnet._ext._base cimport team as base_team

import numpy as np


def _stepgemm_isa(int level=-1):
    """The instruction-set copy the step GEMM runs (0 baseline, 1 AVX2+FMA, 2 AVX-512; 0
    off x86-64); ``level >= 0`` selects that copy, capped at what this CPU runs (tests)."""
    return minnet_sg_set_isa(level)


def _stepgemm_pack(Bfull, bint trans=False):
    """``(panels, K, n)``: B (``Bfull.T`` if ``trans``) packed for ``_stepgemm_run``."""
    Bfull = check_typed(Bfull, "Bfull", np.float32, Bfull.shape)
    cdef float[:, ::1] b = Bfull
    cdef int K = Bfull.shape[1] if trans else Bfull.shape[0]
    cdef int n = Bfull.shape[0] if trans else Bfull.shape[1]
    packed = np.empty(max(1, minnet_sg_packed_size(K, n)), dtype=np.float32)
    cdef float[::1] bp = packed
    if K > 0 and n > 0:
        with nogil:
            minnet_sg_pack(K, 0, K, n, &b[0, 0], b.shape[1], trans, &bp[0])
    return packed, K, n


def _stepgemm_run(A, packed, int K, int n, C, init="c", bias=None, int calls=1,
                  int n_threads=1):
    """``C = init + A @ B``, ``calls`` times, on panels from ``_stepgemm_pack``; ``init``
    "c" (C's values), "bias" or "zero" (tests; benchmarks time the step GEMM alone)."""
    A = check_typed(A, "A", np.float32, A.shape)
    if A.ndim != 2 or A.shape[1] != K:
        raise ValueError(f"Invalid argument `A`: expected a 2-D array with {K} columns. "
                         f"Received: shape={A.shape}")
    cdef int M = A.shape[0]
    C = check_typed(C, "C", np.float32, (M, n))
    bias = check_typed(np.zeros(n, np.float32) if bias is None else bias, "bias", np.float32, (n,))
    cdef float[::1] bp = packed
    cdef float[:, ::1] a = A, c = C
    cdef float[::1] bi = bias
    cdef int mode = {"c": MINNET_SG_INIT_C, "bias": MINNET_SG_INIT_BIAS,
                     "zero": MINNET_SG_INIT_ZERO}[init]
    cdef int r
    if M > 0 and n > 0:
        with nogil:
            for r in range(calls):
                step_gemm(M, n, K, &a[0, 0] if K > 0 else NULL, K, &bp[0], mode, &bi[0],
                           &c[0, 0], n, n_threads)
    return C


def _stepgemm(A, Bfull, init="c", bias=None, C=None, bint trans=False, int n_threads=1):
    """``C = init + A @ B`` through the packed step GEMM (tests): ``B = Bfull.T`` if
    ``trans`` else ``Bfull``; ``init`` "c" (C's values), "bias" or "zero"."""
    # (this module compiles with wraparound=False: no negative indices, even on a shape tuple)
    A = check_typed(A, "A", np.float32, A.shape)
    if A.ndim != 2:
        raise ValueError(f"Invalid argument `A`: expected a 2-D array. Received: shape={A.shape}")
    packed, K, n = _stepgemm_pack(Bfull, trans)
    if A.shape[1] != K:
        raise ValueError(f"Invalid argument `Bfull`: expected {A.shape[1]} along the inner "
                         f"dimension. Received: shape={Bfull.shape}")
    if C is None:
        C = np.zeros((A.shape[0], n), dtype=np.float32)
    return _stepgemm_run(A, packed, K, n, C, init, bias, 1, n_threads)


cdef void step_gemm(int M, int n, int K, const float* A, int64_t lda, const float* Bp,
                    int init, const float* bias, float* C, int64_t ldc,
                    int n_threads) noexcept nogil:
    """C (M, n) = init + A (M, K) @ B through stepgemm_kernels.h; threads split the column panels
    (no thread count changes a bit: each element's sum has one order)."""
    cdef int panels = minnet_sg_panels(n)
    # teams from 8192 products per step, as the gate passes of recurrent_kernels
    cdef int team = base_team(4 * <int64_t> M * n, n_threads)
    cdef int t, p0, p1
    if team > panels:
        team = panels
    if team <= 1:
        minnet_sg_gemm(M, n, K, A, lda, Bp, init, bias, C, ldc, 0, panels)
        return
    for t in prange(team, schedule="static", num_threads=team):
        p0 = t * panels // team
        p1 = (t + 1) * panels // team
        minnet_sg_gemm(M, n, K, A, lda, Bp, init, bias, C, ldc, p0, p1)
