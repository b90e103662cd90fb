"""Fused scaled dot-product attention, forward and backward, blocked with an online softmax.

For each (batch, head) pair ``bh`` and query row ``i``::

    s_ij = scale * <q_i, k_j> + mask_ij          (mask_ij = -inf where a key is not allowed)
    lse_i = log sum_j exp(s_ij)
    o_i = sum_j exp(s_ij - lse_i) v_j

The forward runs blocks of ``block_q`` queries against blocks of ``block_k`` keys. A block
of scores lives in a per-thread scratch of ``block_q * block_k`` values; each row keeps a
running max ``m`` and a running sum ``l`` (in double), and when a later block raises the max
the row's output accumulated so far is multiplied by ``exp(m_old - m_new)`` (the online
softmax of FlashAttention). The (Lq, Lk) score matrix is never stored: what the forward keeps
is the output and ``lse`` (Lq values per bh).

The backward recomputes each block of probabilities from the saved ``lse``
(``p_ij = exp(s_ij - lse_i)``) and, with ``D_i = <do_i, o_i>`` (FlashAttention-2)::

    dV_j += sum_i p_ij do_i,   dp_ij = <do_i, v_j>,   ds_ij = p_ij (dp_ij - D_i)
    dQ_i += scale * sum_j ds_ij k_j,                  dK_j += scale * sum_i ds_ij q_i

Masks, all optional and combined: ``causal`` (key ``j`` allowed for query ``i`` iff
``j <= i``, top-left aligned as PyTorch's ``is_causal``), ``kv_len`` (per batch, keys
``j >= kv_len[b]`` not allowed) and an additive ``mask`` (any strides, 0 included, so a
broadcast (Lq, Lk), (B, 1, 1, Lk) or (B, H, Lq, Lk) mask is read in place). Causal and
``kv_len`` shorten the key range of a query block, so fully masked key blocks are never
computed; the additive mask is added inside each block. A row with no allowed key (its max
stays -inf) gets output 0, ``lse = -inf`` and gradient 0.

Layout: every array is 4-D ``(B, H, L, features)`` with any strides for B, H and L and a
contiguous last axis, so Keras's ``(B, T, heads, dim)`` is passed as a transposed view and
never copied. float32 block products run on convgemm_kernels.h's register tiles (attention_kernels.h's
``minnet_att_mm``): the operand read in place is a block of scores or the query / dO rows,
the other one is packed into the tile's column panels once per pair (Kᵀ in key blocks,
V, Vᵀ, scale K) or once per query block (scale Q, dO), and the scale is folded into Q
(for dQ into K). float64 block products go through single-threaded BLAS (``_blas.gemm``:
operands read in place through their row strides).

Threads: ``prange`` over the B*H pairs; one thread computes a whole pair, blocks in a fixed
order, so every result is bit-identical for any thread count. The math, with the same
symbols, is in docs/math/attention.md.
"""
from cython.parallel cimport prange, parallel
cimport numpy as cnp
from libc.math cimport exp, log, INFINITY
from libc.stdint cimport int64_t
from libc.stdlib cimport malloc, free
from libc.string cimport memset

import numpy as np

from minnet._ext._base cimport check_array, check_threads, check_typed, check_writeable
from minnet._ext._blas cimport floating, gemm
from minnet._ext._fastmath cimport minnet_exp_nonpos_f, minnet_scale_f

cdef extern from "attention_kernels.h":
    void minnet_att_probs_f(float* s, Py_ssize_t ld, Py_ssize_t nq, Py_ssize_t nk,
                            const float* lse) noexcept nogil
    void minnet_att_dscores_f(const float* p, float* dp, Py_ssize_t ld, Py_ssize_t nq,
                              Py_ssize_t nk, const double* D) noexcept nogil
    void minnet_att_add_mask_f(float* s, Py_ssize_t ld, Py_ssize_t nq, Py_ssize_t nk,
                               const float* mask, Py_ssize_t m_sl) noexcept nogil
    void minnet_att_online_f(float* s, Py_ssize_t ld, Py_ssize_t nq, Py_ssize_t nk, float* m,
                             double* l, float* alpha) noexcept nogil
    void minnet_att_online_d(double* s, Py_ssize_t ld, Py_ssize_t nq, Py_ssize_t nk, double* m,
                             double* l, double* alpha) noexcept nogil
    void minnet_att_rowdot_f(const float* o, Py_ssize_t o_sl, const float* g, Py_ssize_t g_sl,
                             Py_ssize_t nq, Py_ssize_t n, double* D) noexcept nogil
    int minnet_att_nr() noexcept nogil
    int minnet_cg_set_isa(int level) noexcept nogil
    void minnet_att_mm(int M, int N, int K, const float* A, int64_t sr, int64_t sk,
                       const float* Bp, int64_t ps, float* C, int64_t ldc, int zero) noexcept nogil
    int64_t minnet_att_panels_size(Py_ssize_t rows, Py_ssize_t cols, int nr) noexcept nogil
    int64_t minnet_att_tblock_size(Py_ssize_t bk, Py_ssize_t cols, int nr) noexcept nogil
    float* minnet_att_align(float* p) noexcept nogil
    void minnet_att_pack_rows(const float* x, Py_ssize_t rows, Py_ssize_t sl, Py_ssize_t cols,
                              float alpha, int nr, float* bp) noexcept nogil
    void minnet_att_pack_t(const float* x, Py_ssize_t rows, Py_ssize_t sl, Py_ssize_t cols,
                           Py_ssize_t bk, int nr, float* bp) noexcept nogil

cnp.import_array()


cdef struct Operand:
    void* base
    Py_ssize_t sb, sh, sl      # element strides over batch, head, row; columns contiguous


cdef struct Problem:
    Py_ssize_t B, H, Lq, Lk, E, Ev
    double scale
    bint causal
    const int64_t* kv_len      # (B,) or NULL
    void* mask                 # additive mask of the arrays' dtype, or NULL
    Py_ssize_t m_sb, m_sh, m_sl, m_sc
    int bq, bk
    int nr                     # float32: columns per packed panel of the tile (attention_kernels.h)


cdef struct Scratch:
    # One thread's buffers (float32 packed operands are aligned inside, see _scratch).
    void* s                    # (bq, bk) scores / probabilities
    void* dp                   # (bq, bk) dP, then dS (backward)
    void* kt                   # Kᵀ: float32 key-blocked panels, float64 (E, Lk)
    void* vt                   # Vᵀ like kt (backward)
    void* vk                   # float32 panels over Lk rows: V (forward), scale K (backward)
    void* qs                   # float32 (bq, E): scale Q of the query block
    void* qp                   # float32 panels of scale Q of the query block (backward)
    void* gp                   # float32 panels of dO of the query block (backward)
    void* m                    # (bq,) running max (forward)
    void* al                   # (bq,) rescale factors (forward)
    double* l                  # (bq,) running sums (forward) / D = rowsum(dO ∘ O) (backward)
    bint ok                    # every buffer allocated


cdef inline floating* _at(floating* base, Operand a, const Problem* p,
                          Py_ssize_t bh) noexcept nogil:
    """The (batch, head) pair ``bh``'s rows of ``a`` (``base`` = a.base, typed)."""
    return base + (bh // p.H) * a.sb + (bh % p.H) * a.sh


cdef inline Py_ssize_t _key_end(const Problem* p, Py_ssize_t b, Py_ssize_t i0,
                                Py_ssize_t nq) noexcept nogil:
    """One past the last key any of queries i0 .. i0+nq-1 may see."""
    cdef Py_ssize_t end = p.Lk
    if p.kv_len != NULL and p.kv_len[b] < end:
        end = p.kv_len[b] if p.kv_len[b] > 0 else 0
    if p.causal and i0 + nq < end:
        end = i0 + nq
    return end


cdef inline void _mask_block(const Problem* p, Py_ssize_t b, Py_ssize_t h, Py_ssize_t i0,
                             Py_ssize_t nq, Py_ssize_t j0, Py_ssize_t nk,
                             floating* s) noexcept nogil:          # INOUT (nq, bk) scores
    """s += mask; -inf above the causal diagonal."""
    cdef Py_ssize_t r, c, first
    cdef floating* row
    cdef const floating* mrow
    cdef const floating* mbase
    if p.mask != NULL:
        mbase = (<const floating*> p.mask) + b * p.m_sb + h * p.m_sh + j0 * p.m_sc
        if floating is float:    # fast path: benchmarks/bench_attention.py "T 1024"
            if p.m_sc == 1:
                minnet_att_add_mask_f(s, p.bk, nq, nk, mbase + i0 * p.m_sl, p.m_sl)
                mbase = NULL
        for r in range(nq if mbase != NULL else 0):
            row = s + r * p.bk
            mrow = mbase + (i0 + r) * p.m_sl
            if p.m_sc == 1:
                for c in range(nk):
                    row[c] = row[c] + mrow[c]
            else:
                for c in range(nk):
                    row[c] = row[c] + mrow[c * p.m_sc]
    if p.causal and j0 + nk - 1 > i0:
        for r in range(nq):
            first = i0 + r + 1 - j0         # first key column after query i0 + r
            if first < 0:
                first = 0
            row = s + r * p.bk
            for c in range(first, nk):
                row[c] = -INFINITY


cdef inline void _scores(const Problem* p, Py_ssize_t b, Py_ssize_t h,
                         const floating* qi, Py_ssize_t q_sl,      # IN  nq query rows
                         const floating* kt,                       # IN  Kᵀ of the pair
                         Py_ssize_t i0, Py_ssize_t nq, Py_ssize_t j0, Py_ssize_t nk,
                         floating* s) noexcept nogil:              # OUT (nq, bk) block
    """s = scale * q_i k_jᵀ + mask, -inf above the causal diagonal. float32: ``qi`` is
    scale Q of the block (bq, E) and ``kt`` the key-blocked panels; float64: ``qi`` the
    query rows and ``kt`` the (E, Lk) transpose."""
    if floating is float:    # fast path: benchmarks/bench_attention.py "T 1024"
        minnet_att_mm(<int> nq, <int> nk, <int> p.E, qi, q_sl, 1,
                      kt + (j0 // p.bk) * minnet_att_tblock_size(p.bk, p.E, p.nr), p.E * p.nr,
                      s, p.bk, 1)
    else:
        # a plain (nq, E) @ (E, nk) product, which OpenBLAS runs through its small-matrix
        # kernel without packing either operand
        gemm(False, False, <int> nq, <int> nk, <int> p.E, <floating> p.scale, qi, <int> q_sl,
             kt + j0, <int> p.Lk, 0, s, p.bk)
    _mask_block(p, b, h, i0, nq, j0, nk, s)


cdef inline void _transpose(const floating* a, Py_ssize_t rows, Py_ssize_t sl, Py_ssize_t cols,
                            floating* at) noexcept nogil:
    """at (cols, rows) = a (rows, cols; row stride sl)ᵀ."""
    cdef Py_ssize_t r, c, r0, r1
    r0 = 0
    while r0 < rows:                        # 32-row strips keep the writes in cache
        r1 = r0 + 32 if r0 + 32 < rows else rows
        for c in range(cols):
            for r in range(r0, r1):
                at[c * rows + r] = a[r * sl + c]
        r0 = r1


cdef inline void _pack_keys(const Problem* p, const floating* x, Py_ssize_t sl, Py_ssize_t cols,
                            floating* xt) noexcept nogil:
    """Kᵀ (or Vᵀ) of the pair: the B operand of the products over the keys' columns."""
    if floating is float:    # fast path: benchmarks/bench_attention.py "T 1024"
        minnet_att_pack_t(x, p.Lk, sl, cols, p.bk, p.nr, xt)
    else:
        _transpose(x, p.Lk, sl, cols, xt)


cdef inline void _scale_row(floating* x, floating a, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t j
    if floating is float:    # fast path: benchmarks/bench_attention.py "T 1024"
        minnet_scale_f(x, a, n)
        return
    for j in range(n):
        x[j] = x[j] * a


cdef void _forward_pair(const Problem* p, Py_ssize_t bh, Operand q, Operand k, Operand v,
                        Operand o, floating* lse,           # OUT o (Lq, Ev), lse (B*H*Lq,)
                        Scratch w) noexcept nogil:
    cdef Py_ssize_t b = bh // p.H, h = bh % p.H
    cdef const floating* qp = _at(<floating*> q.base, q, p, bh)
    cdef const floating* vp = _at(<floating*> v.base, v, p, bh)
    cdef floating* op = _at(<floating*> o.base, o, p, bh)
    cdef floating* lp = lse + bh * p.Lq
    cdef floating* s = <floating*> w.s
    cdef floating* m = <floating*> w.m
    cdef floating* al = <floating*> w.al
    cdef double* l = w.l
    cdef const floating* qi
    cdef Py_ssize_t i0, j0, nq, nk, r, end, q_sl
    cdef floating* orow
    cdef double inv
    _pack_keys(p, _at(<floating*> k.base, k, p, bh), k.sl, p.E, <floating*> w.kt)
    # fast path: benchmarks/bench_attention.py "T 1024"
    if floating is float:                   # V in panels over its Lk rows
        minnet_att_pack_rows(vp, p.Lk, v.sl, p.Ev, 1, p.nr, <float*> w.vk)
    i0 = 0
    while i0 < p.Lq:
        nq = p.bq if p.Lq - i0 > p.bq else p.Lq - i0
        qi = qp + i0 * q.sl
        q_sl = q.sl
        # fast path: benchmarks/bench_attention.py "T 1024"
        if floating is float:               # scale Q_i, contiguous
            minnet_att_pack_rows(qi, nq, q.sl, p.E, <float> p.scale, <int> p.E, <float*> w.qs)
            qi = <floating*> w.qs
            q_sl = p.E
        for r in range(nq):
            m[r] = -INFINITY
            l[r] = 0
            memset(op + (i0 + r) * o.sl, 0, p.Ev * sizeof(floating))
        end = _key_end(p, b, i0, nq)
        j0 = -p.bk
        while j0 + p.bk < end:
            j0 = j0 + p.bk
            nk = p.bk if end - j0 > p.bk else end - j0
            _scores(p, b, h, qi, q_sl, <floating*> w.kt, i0, nq, j0, nk, s)
            if floating is float:
                minnet_att_online_f(s, p.bk, nq, nk, m, l, al)
            else:
                minnet_att_online_d(s, p.bk, nq, nk, m, l, al)
            for r in range(nq):
                if al[r] != 1:
                    _scale_row(op + (i0 + r) * o.sl, al[r], p.Ev)
            # O_i += P V_j
            if floating is float:    # fast path: benchmarks/bench_attention.py "T 1024"
                minnet_att_mm(<int> nq, <int> p.Ev, <int> nk, s, p.bk, 1, <float*> w.vk + j0 * p.nr,
                              p.Lk * p.nr, op + i0 * o.sl, o.sl, 0)
            else:
                gemm(False, False, <int> nq, <int> p.Ev, <int> nk, <floating> 1, s, p.bk,
                     vp + j0 * v.sl, <int> v.sl, <floating> 1, op + i0 * o.sl, <int> o.sl)
        for r in range(nq):
            orow = op + (i0 + r) * o.sl
            if l[r] > 0:
                inv = 1.0 / l[r]
                _scale_row(orow, <floating> inv, p.Ev)
                lp[i0 + r] = <floating> (m[r] + log(l[r]))
            else:
                memset(orow, 0, p.Ev * sizeof(floating))
                lp[i0 + r] = -INFINITY
        i0 = i0 + p.bq


cdef inline void _zero_rows(floating* a, Py_ssize_t rows, Py_ssize_t sl, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t r
    for r in range(rows):
        memset(a + r * sl, 0, n * sizeof(floating))


# Alike (duplicates): the key-block loop head of _forward_pair (the same fixed block
# order, which the backward must repeat to recompute the forward's scores exactly); the
# bodies differ (online softmax there, the gradients here).
cdef void _backward_pair(const Problem* p, Py_ssize_t bh, Operand q, Operand k, Operand v,
                         Operand o, const floating* lse, Operand do,          # IN
                         Operand dq, Operand dk, Operand dv,                  # OUT
                         Scratch w) noexcept nogil:
    cdef Py_ssize_t b = bh // p.H, h = bh % p.H
    cdef const floating* qp = _at(<floating*> q.base, q, p, bh)
    cdef const floating* kp = _at(<floating*> k.base, k, p, bh)
    cdef const floating* op = _at(<floating*> o.base, o, p, bh)
    cdef const floating* gp = _at(<floating*> do.base, do, p, bh)
    cdef floating* dqp = _at(<floating*> dq.base, dq, p, bh)
    cdef floating* dkp = _at(<floating*> dk.base, dk, p, bh)
    cdef floating* dvp = _at(<floating*> dv.base, dv, p, bh)
    cdef const floating* lp = lse + bh * p.Lq
    cdef floating* s = <floating*> w.s
    cdef floating* dp = <floating*> w.dp
    cdef floating* qs = <floating*> w.qs
    cdef double* dd = w.l
    cdef const floating* qi
    cdef Py_ssize_t i0, j0, nq, nk, r, c, end, q_sl
    cdef floating* row
    cdef floating* drow
    cdef const floating* orow
    cdef const floating* grow
    cdef floating li, di
    cdef double acc
    _pack_keys(p, kp, k.sl, p.E, <floating*> w.kt)
    _pack_keys(p, _at(<floating*> v.base, v, p, bh), v.sl, p.Ev, <floating*> w.vt)
    # fast path: benchmarks/bench_attention.py "T 1024"
    if floating is float:                   # scale K in panels over its Lk rows
        minnet_att_pack_rows(kp, p.Lk, k.sl, p.E, <float> p.scale, p.nr, <float*> w.vk)
    _zero_rows(dqp, p.Lq, dq.sl, p.E)
    _zero_rows(dkp, p.Lk, dk.sl, p.E)
    _zero_rows(dvp, p.Lk, dv.sl, p.Ev)
    i0 = 0
    while i0 < p.Lq:
        nq = p.bq if p.Lq - i0 > p.bq else p.Lq - i0
        qi = qp + i0 * q.sl
        q_sl = q.sl
        if floating is float:    # fast path: benchmarks/bench_attention.py "T 1024"
            # scale Q_i contiguous (A of S) and in panels (B of dK); dO_i in panels (B of dV);
            # D_i = <do_i, o_i>
            minnet_att_pack_rows(qi, nq, q.sl, p.E, <float> p.scale, <int> p.E, qs)
            minnet_att_pack_rows(qi, nq, q.sl, p.E, <float> p.scale, p.nr, <float*> w.qp)
            minnet_att_pack_rows(gp + i0 * do.sl, nq, do.sl, p.Ev, 1, p.nr, <float*> w.gp)
            minnet_att_rowdot_f(op + i0 * o.sl, o.sl, gp + i0 * do.sl, do.sl, nq, p.Ev, dd)
            qi = qs
            q_sl = p.E
        for r in range(nq if floating is double else 0):
            orow = op + (i0 + r) * o.sl
            grow = gp + (i0 + r) * do.sl
            acc = 0
            for c in range(p.Ev):
                acc = acc + <double> orow[c] * grow[c]
            dd[r] = acc
        end = _key_end(p, b, i0, nq)
        j0 = -p.bk
        while j0 + p.bk < end:
            j0 = j0 + p.bk
            nk = p.bk if end - j0 > p.bk else end - j0
            _scores(p, b, h, qi, q_sl, <floating*> w.kt, i0, nq, j0, nk, s)
            # fast path: benchmarks/bench_attention.py "T 1024"
            if floating is float:           # p_ij = exp(s_ij - lse_i)
                minnet_att_probs_f(s, p.bk, nq, nk, lp + i0)
            for r in range(nq if floating is double else 0):
                row = s + r * p.bk
                li = lp[i0 + r]
                if li == -INFINITY:
                    memset(row, 0, nk * sizeof(floating))
                    continue
                for c in range(nk):
                    row[c] = exp(row[c] - li)
            if floating is float:    # fast path: benchmarks/bench_attention.py "T 1024"
                # dV_j += P_ijᵀ dO_i;  dP = dO_i V_jᵀ;  dS = P ∘ (dP - D) over dP;
                # dQ_i += dS (scale K_j);  dK_j += dSᵀ (scale Q_i)
                minnet_att_mm(<int> nk, <int> p.Ev, <int> nq, s, 1, p.bk, <float*> w.gp, nq * p.nr,
                              dvp + j0 * dv.sl, dv.sl, 0)
                minnet_att_mm(<int> nq, <int> nk, <int> p.Ev, gp + i0 * do.sl, do.sl, 1,
                              <float*> w.vt + (j0 // p.bk) * minnet_att_tblock_size(p.bk, p.Ev, p.nr),
                              p.Ev * p.nr, dp, p.bk, 1)
                minnet_att_dscores_f(s, dp, p.bk, nq, nk, dd)
                minnet_att_mm(<int> nq, <int> p.E, <int> nk, dp, p.bk, 1, <float*> w.vk + j0 * p.nr,
                              p.Lk * p.nr, dqp + i0 * dq.sl, dq.sl, 0)
                minnet_att_mm(<int> nk, <int> p.E, <int> nq, dp, 1, p.bk, <float*> w.qp, nq * p.nr,
                              dkp + j0 * dk.sl, dk.sl, 0)
                continue
            gemm(True, False, <int> nk, <int> p.Ev, <int> nq, <floating> 1, s, p.bk,
                 gp + i0 * do.sl, <int> do.sl, <floating> 1, dvp + j0 * dv.sl, <int> dv.sl)
            gemm(False, False, <int> nq, <int> nk, <int> p.Ev, <floating> 1, gp + i0 * do.sl,
                 <int> do.sl, <floating*> w.vt + j0, <int> p.Lk, <floating> 0, dp, p.bk)
            for r in range(nq):
                row = s + r * p.bk
                drow = dp + r * p.bk
                di = <floating> dd[r]
                for c in range(nk):
                    drow[c] = row[c] * (drow[c] - di)
            gemm(False, False, <int> nq, <int> p.E, <int> nk, <floating> p.scale, dp, p.bk,
                 kp + j0 * k.sl, <int> k.sl, <floating> 1, dqp + i0 * dq.sl, <int> dq.sl)
            gemm(True, False, <int> nk, <int> p.E, <int> nq, <floating> p.scale, dp, p.bk,
                 qp + i0 * q.sl, <int> q.sl, <floating> 1, dkp + j0 * dk.sl, <int> dk.sl)
        i0 = i0 + p.bq


cdef Scratch _scratch(const Problem* p, bint backward, size_t item) noexcept nogil:
    """One thread's buffers (``ok`` = 0 when one could not be allocated). float32 (item 4)
    packs K, V (and Q, dO per block) for the tiles; float64 keeps plain transposes for BLAS."""
    cdef size_t keys, vals, panels_k, panels_v, blocks
    cdef Scratch w
    memset(&w, 0, sizeof(Scratch))
    if item == sizeof(float):
        blocks = (p.Lk + p.bk - 1) // p.bk
        keys = blocks * minnet_att_tblock_size(p.bk, p.E, p.nr) + 16
        vals = blocks * minnet_att_tblock_size(p.bk, p.Ev, p.nr) + 16
        panels_k = minnet_att_panels_size(p.Lk, p.E, p.nr)
        panels_v = minnet_att_panels_size(p.Lk, p.Ev, p.nr)
    else:
        keys = p.Lk * p.E + 1
        vals = p.Lk * p.Ev + 1
        panels_k = panels_v = 1
    w.s = malloc(p.bq * p.bk * item)
    w.kt = malloc(keys * item)
    w.l = <double*> malloc(p.bq * sizeof(double))
    w.vk = malloc((panels_k if backward else panels_v) * item)
    w.qs = malloc((p.bq * p.E + 1) * item)
    w.ok = w.s != NULL and w.kt != NULL and w.l != NULL and w.vk != NULL and w.qs != NULL
    if backward:
        w.dp = malloc(p.bq * p.bk * item)
        w.vt = malloc(vals * item)
        w.qp = malloc(minnet_att_panels_size(p.bq, p.E, p.nr) * item)
        w.gp = malloc(minnet_att_panels_size(p.bq, p.Ev, p.nr) * item)
        w.ok = w.ok and w.dp != NULL and w.vt != NULL and w.qp != NULL and w.gp != NULL
    else:
        w.m = malloc(p.bq * item)
        w.al = malloc(p.bq * item)
        w.ok = w.ok and w.m != NULL and w.al != NULL
    return w


cdef void _free_scratch(Scratch* w) noexcept nogil:
    """Free what _scratch allocated (before _aligned moved any pointer)."""
    free(w.s)
    free(w.dp)
    free(w.kt)
    free(w.vt)
    free(w.vk)
    free(w.qs)
    free(w.qp)
    free(w.gp)
    free(w.m)
    free(w.al)
    free(w.l)


cdef inline Scratch _aligned(Scratch w, size_t item) noexcept nogil:
    """The float32 packed operands start on 64 bytes (the tiles' vector loads)."""
    if item == sizeof(float):
        w.kt = minnet_att_align(<float*> w.kt)
        w.vt = minnet_att_align(<float*> w.vt) if w.vt != NULL else NULL
        w.vk = minnet_att_align(<float*> w.vk)
        w.qp = minnet_att_align(<float*> w.qp) if w.qp != NULL else NULL
        w.gp = minnet_att_align(<float*> w.gp) if w.gp != NULL else NULL
    return w


cdef int run_kernel(const Problem* p, bint backward, Operand q, Operand k, Operand v,
                    Operand o, floating* lse, Operand do, Operand dq, Operand dk, Operand dv,
                    int n_threads) noexcept nogil:
    """The forward (``lse`` OUT; ``do``, ``dq``, ``dk``, ``dv`` unused) or the backward over
    every pair, ``prange`` over the pairs; 0, or -1 when a thread's scratch could not be
    allocated."""
    cdef Py_ssize_t bh, pairs = p.B * p.H
    cdef Scratch w
    cdef int failed = 0
    cdef int* failp = &failed
    if pairs == 0 or (p.Lq == 0 and not backward):
        return 0
    if n_threads > pairs:
        n_threads = <int> pairs
    with parallel(num_threads=n_threads):
        w = _scratch(p, backward, sizeof(floating))
        if not w.ok:
            failp[0] = -1
        for bh in prange(pairs, schedule="dynamic"):
            if not w.ok:
                continue
            if backward:
                _backward_pair(p, bh, q, k, v, o, lse, do, dq, dk, dv,
                               _aligned(w, sizeof(floating)))
            else:
                _forward_pair(p, bh, q, k, v, o, lse, _aligned(w, sizeof(floating)))
        _free_scratch(&w)
    return failed


# ---------------------------------------------------------------------------------------
# Python-visible wrappers: validate, allocate, call.
# ---------------------------------------------------------------------------------------

DEFAULT_BLOCK_Q = 64
DEFAULT_BLOCK_K = 128


cdef Operand _operand(object a, object name, object dtype, tuple shape) except *:
    """A 4-D float array with a contiguous last axis, as base pointer + element strides."""
    cdef Operand op
    check_array(a, name, dtype, shape, -1, False)
    item = a.itemsize
    op.base = cnp.PyArray_DATA(<cnp.ndarray> a)
    if a.size == 0:         # nothing is read or written: any strides will do
        op.sb = op.sh = op.sl = 0
        return op
    if a.shape[3] > 1 and a.strides[3] != item:
        raise ValueError(f"Invalid argument `{name}`: expected a contiguous last axis. "
                         f"Received: strides={a.strides}")
    if any(st % item or st < 0 for st in a.strides[:3]):
        raise ValueError(f"Invalid argument `{name}`: expected non-negative strides that are "
                         f"multiples of the item size. Received: strides={a.strides}")
    op.sb = a.strides[0] // item
    op.sh = a.strides[1] // item
    op.sl = a.strides[2] // item
    return op


cdef Problem _problem(object q, object k, object v, double scale, bint causal, object kv_len,
                      object mask, object block) except *:
    cdef Problem p
    if not isinstance(q, np.ndarray) or q.ndim != 4:
        raise ValueError("Invalid argument `q`: expected a 4-D array (batch, heads, L, E). "
                         f"Received: {getattr(q, 'shape', type(q).__name__)}")
    if q.dtype != np.float32 and q.dtype != np.float64:
        raise TypeError(f"Invalid argument `q`: expected dtype float32 or float64. "
                        f"Received: q.dtype={q.dtype}")
    for name, a in (("k", k), ("v", v)):
        if not isinstance(a, np.ndarray) or a.ndim != 4:
            raise ValueError(f"Invalid argument `{name}`: expected a 4-D array (batch, heads, "
                             f"S, features). Received: {getattr(a, 'shape', type(a).__name__)}")
    p.B, p.H, p.Lq, p.E = q.shape
    p.Lk = k.shape[2]
    p.Ev = v.shape[3]
    p.scale = scale
    p.causal = causal
    p.kv_len = NULL
    p.mask = NULL
    p.m_sb = p.m_sh = p.m_sl = p.m_sc = 0
    bq, bk = block
    if int(bq) < 1 or int(bk) < 1:
        raise ValueError(f"Invalid argument `block`: expected two ints >= 1. Received: {block}")
    p.bq = int(bq)
    p.bk = int(bk)
    p.nr = minnet_att_nr()
    if kv_len is not None:
        check_typed(kv_len, "kv_len", np.int64, (p.B,))
        p.kv_len = <const int64_t*> cnp.PyArray_DATA(<cnp.ndarray> kv_len)
    if mask is not None:
        if not isinstance(mask, np.ndarray) or mask.dtype != q.dtype \
                or mask.shape != (p.B, p.H, p.Lq, p.Lk):
            raise ValueError(f"Invalid argument `mask`: expected a {q.dtype} array of shape "
                             f"{(p.B, p.H, p.Lq, p.Lk)} (a broadcast view is fine). Received: "
                             f"{getattr(mask, 'dtype', None)} "
                             f"{getattr(mask, 'shape', type(mask).__name__)}")
        item = mask.itemsize
        if any(st % item or st < 0 for st in mask.strides):
            raise ValueError(f"Invalid argument `mask`: expected non-negative strides that are "
                             f"multiples of the item size. Received: strides={mask.strides}")
        p.mask = cnp.PyArray_DATA(<cnp.ndarray> mask)
        p.m_sb, p.m_sh, p.m_sl, p.m_sc = [st // item for st in mask.strides]
    return p


def _set_isa(int level):
    """Tests only: run the float32 tiles and the online step as the copy of ``level`` (0
    baseline SSE2, 1 AVX2+FMA, 2 AVX-512, capped at what this CPU runs; -1 keeps the
    current one). Returns the level in use."""
    return minnet_cg_set_isa(level)


cdef _run(const Problem* p, bint backward, Operand oq, Operand ok, Operand ov, Operand oo,
          object lse, Operand og, Operand odq, Operand odk, Operand odv, int nt):
    """run_kernel in lse's dtype without the GIL; MemoryError if a thread's scratch failed."""
    cdef void* lp = cnp.PyArray_DATA(<cnp.ndarray> lse)
    cdef bint f32 = lse.dtype == np.float32
    cdef int status
    with nogil:
        if f32:
            status = run_kernel[float](p, backward, oq, ok, ov, oo, <float*> lp, og, odq, odk, odv,
                                       nt)
        else:
            status = run_kernel[double](p, backward, oq, ok, ov, oo, <double*> lp, og, odq, odk,
                                        odv, nt)
    if status != 0:
        raise MemoryError(f"attention_{'backward' if backward else 'forward'}: out of memory for "
                          f"the per-thread scratch")


def attention_forward(q, k, v, double scale, bint causal=False, kv_len=None, mask=None,
                      out=None, n_threads=1, block=(DEFAULT_BLOCK_Q, DEFAULT_BLOCK_K)):
    """Fused attention forward: ``(out, lse)``.

    Args:
        q: (B, H, Lq, E); k: (B, H, Lk, E); v: (B, H, Lk, Ev). float32 or float64, one
           dtype, any strides over the first three axes, contiguous last axis.
        scale: the factor on ``q kᵀ``.
        causal: key j allowed for query i iff j <= i.
        kv_len: optional int64 (B,): keys j >= kv_len[b] are not allowed.
        mask: optional additive mask, the arrays' dtype, shape (B, H, Lq, Lk), any
           non-negative strides (``np.broadcast_to`` views are read in place).
        out: optional (B, H, Lq, Ev) array (any strides, contiguous last axis) to write.
        n_threads: OpenMP threads over the B*H pairs (results do not depend on it).
        block: (block_q, block_k).

    Returns:
        ``out`` (B, H, Lq, Ev) and ``lse`` (B, H, Lq), C-contiguous unless ``out`` was given.
    """
    cdef Problem p = _problem(q, k, v, scale, causal, kv_len, mask, block)
    dtype = q.dtype
    cdef Operand oq = _operand(q, "q", dtype, (p.B, p.H, p.Lq, p.E))
    cdef Operand ok = _operand(k, "k", dtype, (p.B, p.H, p.Lk, p.E))
    cdef Operand ov = _operand(v, "v", dtype, (p.B, p.H, p.Lk, p.Ev))
    if out is None:
        out = np.empty((p.B, p.H, p.Lq, p.Ev), dtype=dtype)
    cdef Operand oo = _operand(out, "out", dtype, (p.B, p.H, p.Lq, p.Ev))
    check_writeable(out, "out")
    lse = np.empty((p.B, p.H, p.Lq), dtype=dtype)
    _run(&p, False, oq, ok, ov, oo, lse, oo, oo, oo, oo, check_threads(n_threads))
    return out, lse


def attention_backward(q, k, v, out, lse, grad, double scale, bint causal=False, kv_len=None,
                       mask=None, dq=None, dk=None, dv=None, n_threads=1,
                       block=(DEFAULT_BLOCK_Q, DEFAULT_BLOCK_K)):
    """Fused attention backward from the saved ``out`` and ``lse``: ``(dq, dk, dv)``.

    ``q, k, v, scale, causal, kv_len, mask, block`` as given to ``attention_forward``;
    ``out``, ``lse`` its results; ``grad`` = dL/d out, (B, H, Lq, Ev). ``dq``, ``dk``,
    ``dv``: optional output arrays like ``q``, ``k``, ``v`` (any strides, contiguous last
    axis; overwritten); by default C-contiguous new arrays.
    """
    cdef Problem p = _problem(q, k, v, scale, causal, kv_len, mask, block)
    dtype = q.dtype
    cdef Operand oq = _operand(q, "q", dtype, (p.B, p.H, p.Lq, p.E))
    cdef Operand ok = _operand(k, "k", dtype, (p.B, p.H, p.Lk, p.E))
    cdef Operand ov = _operand(v, "v", dtype, (p.B, p.H, p.Lk, p.Ev))
    cdef Operand oo = _operand(out, "out", dtype, (p.B, p.H, p.Lq, p.Ev))
    cdef Operand og = _operand(grad, "grad", dtype, (p.B, p.H, p.Lq, p.Ev))
    check_typed(lse, "lse", dtype, (p.B, p.H, p.Lq))
    if dq is None:
        dq = np.empty((p.B, p.H, p.Lq, p.E), dtype=dtype)
    if dk is None:
        dk = np.empty((p.B, p.H, p.Lk, p.E), dtype=dtype)
    if dv is None:
        dv = np.empty((p.B, p.H, p.Lk, p.Ev), dtype=dtype)
    cdef Operand odq = _operand(dq, "dq", dtype, (p.B, p.H, p.Lq, p.E))
    cdef Operand odk = _operand(dk, "dk", dtype, (p.B, p.H, p.Lk, p.E))
    cdef Operand odv = _operand(dv, "dv", dtype, (p.B, p.H, p.Lk, p.Ev))
    for name, a in (("dq", dq), ("dk", dk), ("dv", dv)):
        check_writeable(a, name)
    _run(&p, True, oq, ok, ov, oo, lse, og, odq, odk, odv, check_threads(n_threads))
    return dq, dk, dv
