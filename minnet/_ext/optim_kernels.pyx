"""Fused optimizer updates: Adam's and SGD's step for one parameter in one pass over its arrays.

``Adam._update`` (minnet/optimizers/adam.py) writes the rule as eleven NumPy calls, each a
pass over the parameter's arrays; on a large parameter (an ``Embedding(10000, 64)`` table)
those passes come from memory every time (SGD with momentum: five).  These kernels do the
same operations, in the
same order and the same precision, element by element: per element Adam reads ``p, g, m,
v`` once and writes ``p, m, v`` once.

Same numbers as the NumPy path, bit for bit: every operation is the one NumPy performs
(float32 arrays meet the Python-float constants rounded to float32, as NumPy rounds a
Python scalar to the array's dtype), and the block function is compiled with floating-point
contraction off (setup.py's flags for this module), so no ``a * b + c`` becomes a fused
multiply-add.  ``tests/_ext/test_optim.py`` checks the bit equality.  Elementwise, so the result
does not depend on the thread count.
"""
from cython.parallel cimport prange
cimport numpy as cnp
from libc.stdint cimport int64_t

from minnet._ext._blas cimport floating
from minnet._ext._base cimport (BLOCK, block_len, check_array, check_threads, check_writeable,
                                data_ptr, is_f32, n_blocks, size_of, team)

import numpy as np

cnp.import_array()   # _base's inline data_ptr/is_f32/size_of call the NumPy C API here


cdef extern from "optim_kernels.h":
    void minnet_sgd_block_f(float* p, const float* g, float* buf, int64_t n, int mode,
                            int nesterov, float mom, float omd, float lr) noexcept nogil
    void minnet_sgd_block_d(double* p, const double* g, double* buf, int64_t n, int mode,
                            int nesterov, double mom, double omd, double lr) noexcept nogil
    void minnet_adam_block_f(float* p, const float* g, float* m, float* v, float* vmax,
                             int64_t n, int lerp_low, float w, float b2, float omb2, float bc2,
                             float eps, float neg) noexcept nogil
    void minnet_adam_block_d(double* p, const double* g, double* m, double* v, double* vmax,
                             int64_t n, int lerp_low, double w, double b2, double omb2,
                             double bc2, double eps, double neg) noexcept nogil


cdef void _adam(floating* p, const floating* g, floating* m, floating* v, floating* vmax,
                int64_t n, double weight, double beta_2, double bias_correction2_sqrt,
                double epsilon, double step_size, int n_threads) noexcept nogil:
    # Blocks of BLOCK elements split over the threads, as the elementwise kernels do
    # (_base.pxd); elementwise, so any split gives the same numbers.
    cdef bint lerp_low = weight < 0.5
    # the constants as NumPy rounds a Python float against an array of this dtype
    cdef floating w = <floating> (weight if lerp_low else 1.0 - weight)
    cdef floating b2 = <floating> beta_2
    cdef floating omb2 = <floating> (1.0 - beta_2)
    cdef floating bc2 = <floating> bias_correction2_sqrt
    cdef floating eps = <floating> epsilon
    cdef floating neg_step = <floating> (-step_size)
    cdef Py_ssize_t blk, start, size
    for blk in prange(n_blocks(n), schedule="static", num_threads=team(n, n_threads)):
        start = blk * BLOCK
        size = block_len(n, start)
        if floating is float:
            minnet_adam_block_f(p + start, g + start, m + start, v + start,
                                vmax + start if vmax != NULL else NULL, size, lerp_low, w, b2,
                                omb2, bc2, eps, neg_step)
        else:
            minnet_adam_block_d(p + start, g + start, m + start, v + start,
                                vmax + start if vmax != NULL else NULL, size, lerp_low, w, b2,
                                omb2, bc2, eps, neg_step)


def adam_step(p, g, m, v, vmax, double weight, double beta_2, double bias_correction2_sqrt,
              double epsilon, double step_size, n_threads=1):
    """One Adam update of parameter ``p`` in place (``m``, ``v`` and ``vmax`` too).

    Args:
        p, g, m, v: C-contiguous arrays of one shape and dtype (float32/float64): the
            parameter, its gradient and the two moment estimates.
        vmax: the AMSGrad running maximum (same shape), or None.
        weight: ``1 - beta_1`` (the lerp weight of the first moment).
        beta_2: the second moment's decay.
        bias_correction2_sqrt: ``sqrt(1 - beta_2 ** step)``.
        epsilon: added to the denominator.
        step_size: ``learning_rate / (1 - beta_1 ** step)``.
        n_threads: OpenMP threads (elementwise: the result does not depend on it).
    """
    check_array(p, "p")
    for name, a in (("g", g), ("m", m), ("v", v)):
        check_array(a, name, p.dtype, p.shape)
    if vmax is not None:
        check_array(vmax, "vmax", p.dtype, p.shape)
    for name, a in (("p", p), ("m", m), ("v", v), ("vmax", vmax)):
        if a is not None:
            check_writeable(a, name)
    cdef int threads = check_threads(n_threads)
    cdef int64_t n = size_of(p)
    cdef void* pp = data_ptr(p)
    cdef void* pg = data_ptr(g)
    cdef void* pm = data_ptr(m)
    cdef void* pv = data_ptr(v)
    cdef void* pmax = NULL if vmax is None else data_ptr(vmax)
    if n == 0:
        return
    # Raw pointers, not memoryviews: a parameter's step is one call per parameter per
    # step, and a small parameter's step is all call (benchmarks/bench_optimizers.py "small").
    if is_f32(p):
        with nogil:
            _adam(<float*> pp, <const float*> pg, <float*> pm, <float*> pv, <float*> pmax, n,
                  weight, beta_2, bias_correction2_sqrt, epsilon, step_size, threads)
    else:
        with nogil:
            _adam(<double*> pp, <const double*> pg, <double*> pm, <double*> pv, <double*> pmax,
                  n, weight, beta_2, bias_correction2_sqrt, epsilon, step_size, threads)


cdef void _sgd(floating* p, const floating* g, floating* buf, int64_t n, int mode,
               bint nesterov, double momentum, double dampening, double lr,
               int n_threads) noexcept nogil:
    # the constants as NumPy rounds a Python float against an array of this dtype
    cdef floating mom = <floating> momentum
    cdef floating omd = <floating> (1.0 - dampening)
    cdef floating flr = <floating> lr
    cdef Py_ssize_t blk, start, size
    for blk in prange(n_blocks(n), schedule="static", num_threads=team(n, n_threads)):
        start = blk * BLOCK
        size = block_len(n, start)
        if floating is float:
            minnet_sgd_block_f(p + start, g + start, buf + start if buf != NULL else NULL, size,
                               mode, nesterov, mom, omd, flr)
        else:
            minnet_sgd_block_d(p + start, g + start, buf + start if buf != NULL else NULL, size,
                               mode, nesterov, mom, omd, flr)


def sgd_step(p, g, buf, double momentum, double dampening, bint nesterov, bint update_buffer,
             double lr, n_threads=1):
    """One SGD update of parameter ``p`` in place (and of the momentum buffer ``buf``).

    Args:
        p, g: C-contiguous arrays of one shape and dtype (float32/float64).
        buf: the momentum buffer (same shape), or None for plain SGD.
        momentum, dampening, nesterov: as ``SGD``.
        update_buffer: False on the buffer's first step (it was just set to a copy of g).
        lr: the learning rate.
        n_threads: OpenMP threads (elementwise: the result does not depend on it).
    """
    check_array(p, "p")
    check_array(g, "g", p.dtype, p.shape)
    if buf is not None:
        check_array(buf, "buf", p.dtype, p.shape)
    check_writeable(p, "p")
    if buf is not None:
        check_writeable(buf, "buf")
    cdef int mode = 0 if buf is None or not update_buffer else (1 if dampening == 0 else 2)
    cdef int threads = check_threads(n_threads)
    cdef int64_t n = size_of(p)
    cdef void* pp = data_ptr(p)
    cdef void* pg = data_ptr(g)
    cdef void* pb = NULL if buf is None else data_ptr(buf)
    if n == 0:
        return
    # Raw pointers, as adam_step (benchmarks/bench_optimizers.py "small").
    if is_f32(p):
        with nogil:
            _sgd(<float*> pp, <const float*> pg, <float*> pb, n, mode, nesterov, momentum,
                 dampening, lr, threads)
    else:
        with nogil:
            _sgd(<double*> pp, <const double*> pg, <double*> pb, n, mode, nesterov, momentum,
                 dampening, lr, threads)
