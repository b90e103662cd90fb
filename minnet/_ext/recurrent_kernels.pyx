"""Recurrent kernels (LSTM, GRU, Elman RNN) over whole sequences (the Embedding backward is in
``embedding_kernels.pyx``, the step GEMM in ``stepgemm_kernels.pyx``).

One Python-level call runs a whole sequence; the time loop is in C:

* forward: per step the pre-activations and ONE fused pass over the gates (biases,
  activations, the cell/state update, the mask). float32: LSTM computes a step as ONE GEMM
  ``(b_ih + b_hh) + [x_t | h_{t-1}] @ [W_ih | W_hh]ᵀ`` over the rows it saves for backward
  anyway, GRU/RNN as ``x_t @ W_ihᵀ`` and ``h @ W_hhᵀ``, all on weights packed once per call
  (``stepgemm_kernels.h``: a BLAS call re-packs its operands at every step). float64: the same
  products through BLAS (LSTM accumulating both onto rows holding ``b_ih + b_hh``). One GEMM
  over all N*T rows of X first was measured slower: its (N, T, G) result came back from
  memory step by step;
* backward (BPTT): per step one fused pass that turns ``dh`` (and ``dc``) into the gate
  gradients ``dG`` and one GEMM ``dh_prev += dG_t @ W_hh`` (float32: ``stepgemm_kernels.h``, W_hh
  packed once; also ``dx_t = dG_t @ W_ih`` while ``dG_t`` is in cache, measured faster than
  one GEMM after the loop: benchmarks/bench_recurrent.py, LSTM fwd+bwd); after the loop the weight gradients are ONE GEMM
  (``[dW_ih | dW_hh] = dGᵀ @ [X | H_prev]``; GRU: one each), float64's input gradient one
  GEMM (``dX = dG @ W_ih``) and the bias gradients fixed-order column sums. On the saved arrays'
  last use (``reuse_saved``: the autograd graph is not retained) LSTM and RNN write ``dG``
  over the saved gates.

All arrays are batch-major, ``(N, T, ...)``: a step's rows are strided (row stride
``T * width``), which BLAS reads directly, so nothing is ever transposed.

Gate orders are PyTorch's: LSTM ``i, f, g, o``; GRU ``r, z, n`` with
``n = tanh(W_in x + b_in + r * (W_hn h + b_hn))`` (Keras's ``reset_after=True``).

What forward keeps for backward, per sample and step (``H`` = units, ``I`` = features):

* every cell: the step's GEMM inputs ``[x_t | h_{t-1}]`` side by side (I + H values; they
  replace the input itself, so the weight gradients are ONE GEMM ``dAᵀ @ [X | H_prev]``
  for LSTM and RNN);
* LSTM: ``c_{t-1}`` and the four activated gates: 5H more;
* GRU: ``r, z, n`` and ``W_hn h_{t-1} + b_hn``: 4H more;
* RNN: ``h_t``: H more.

Recurrent dropout (``rmask``, (N, H), already scaled): the recurrent GEMM of every step
reads ``h * rmask`` (one extra multiply over N*H values per step); backward multiplies the
recurrent part of ``dh_{t-1}`` by it and ``dW_hh`` reads ``h_{t-1} * rmask``.

Masks (``uint8`` (N, T), 0 = padded): a padded step leaves ``h`` (and ``c``) unchanged
and its gate gradients are zero; the gradient reaching it passes straight to the step
before.

Threads: a sample's state depends only on its own past, so from 2 threads on the forward
and the backward's time loop cut the batch into parts of 32 samples (``_batch_parts``) and
each thread takes whole parts through all T steps, one parallel region per sequence; one
thread keeps the batch whole. Every reduction runs in a fixed order. float32's step GEMMs
give every element the same sum however the rows or columns are split, so the float32 time
loop (outputs, final states, dL/dx, dL/dh_0) is bit-identical for any thread count; the GEMMs after
the loop (and all of float64's) go through ``_blas.gemm_blocks``, so under
``mn.config.set_deterministic(True)`` (parts at every thread count, GEMMs split by shape)
every result is, and by default their last bits may differ between thread counts, as for
minnet's other GEMMs.
The math, with the same symbols, is in docs/math/recurrent.md.

Rounding.  The float32 gate sigmoid is _fastmath.h's ``minnet_sigmoid1_f``, ``e / (1 + e)`` for
``v < 0``; this module's own ``e * (1 / (1 + e))`` differed by <= 1 ulp, no closer to float64.
"""
from cython.parallel cimport prange
from libc.stdint cimport uint8_t, int64_t
from libc.string cimport memcpy, memset

from minnet._ext._base cimport deterministic_mode, parallel_min, team
from minnet._ext._blas cimport floating, gemm_blocks
from minnet._ext._base cimport check_typed
from minnet._ext._fastmath cimport minnet_exp_nonpos_f, minnet_sigmoid1_f, minnet_tanh_f, sigmoid, tanh_any
from minnet._ext.stepgemm_kernels cimport (MINNET_SG_INIT_BIAS, MINNET_SG_INIT_C, MINNET_SG_INIT_ZERO,
                                    minnet_sg_pack, minnet_sg_packed_size, step_gemm)

# float32 gate passes in C: branch-free exp/tanh from _fastmath.pxd, so GCC vectorises the
# loop over the units (libm's expf/tanhf are a call per element). float64 uses libm below.
cdef extern from "recurrent_kernels.h" nogil:
    void minnet_lstm_fwd_row_f(float* hr, float* h, float* c, float* s, int save, int H) noexcept nogil
    void minnet_prefetch_rows(const void* base, int64_t stride, int rows, int64_t bytes) noexcept nogil
    void minnet_lstm_bwd_row_f(float* s, const float* cp, const float* dh,
                               const float* dy, float* dc, float* gx, float* dnext,
                               int H) noexcept nogil
    void minnet_gru_fwd_row_f(const float* xr, float* hr, const float* bi,
                              const float* bh, float* h, float* s, int save, int H) noexcept nogil
    void minnet_gru_bwd_row_f(const float* s, const float* hp, const float* dh,
                              const float* dy, float* gx, float* gh, float* dnext,
                              int H) noexcept nogil
    void minnet_rnn_tanh_fwd_row_f(const float* xr, float* hr, const float* bi,
                                   const float* bh, float* h, float* s, int save,
                                   int H) noexcept nogil

import numpy as np

# Cell kinds (the ``mode`` argument).
cdef enum:
    _LSTM = 0
    _GRU = 1
    _RNN_TANH = 2
    _RNN_RELU = 3

LSTM = _LSTM
GRU = _GRU
RNN_TANH = _RNN_TANH
RNN_RELU = _RNN_RELU


cdef inline int _gate_team(int64_t n_values, int n_threads) noexcept nogil:
    # a gate value costs about four elementwise operations: teams from 8192 values per step
    return team(4 * n_values, n_threads)


def gates_per_cell(int mode):
    """Number of gate blocks of ``H`` rows in ``W_ih``: 4 (LSTM), 3 (GRU), 1 (RNN)."""
    return 4 if mode == _LSTM else (3 if mode == _GRU else 1)


def saved_per_step(int mode):
    """Width of the per-step gate buffer forward saves, in units of ``H``."""
    return 4 if mode == _LSTM or mode == _GRU else 1


# ----------------------------------------------------------------------- forward

cdef void _forward_rows(int mode, int n, int tt, int T, int I, int H,
                        const floating* x, const floating* xp, floating* hp, int64_t ldh,
                        const floating* b_ih, const floating* b_hh,
                        floating* h, floating* c,                          # INOUT (N, H)
                        floating* hprev, floating* cprev, floating* sv,    # OUT saved
                        bint save, bint staged, bint masked) noexcept nogil:
    """Advance sample ``n`` by one step (time index ``tt``): the fused gate pass.
    ``staged``: the step's saved inputs were written before its GEMM (_stage_rows)."""
    cdef int G = 4 * H if mode == _LSTM else (3 * H if mode == _GRU else H)
    cdef int S = 4 * H if mode == _LSTM or mode == _GRU else H
    cdef int64_t row = <int64_t> n * T + tt
    cdef const floating* xr = xp + <int64_t> n * G
    # hp rows hold h @ W_hhᵀ (G values; GRU rows have H more for scratch)
    cdef floating* hr = hp + <int64_t> n * ldh
    cdef floating* hn = h + <int64_t> n * H
    cdef floating* cn = c + <int64_t> n * H
    cdef floating* s = sv + row * S
    cdef floating one = 1
    cdef floating zero = 0
    cdef floating gi, gf, gg, go, r, z, nn, hh, pre, cnew
    cdef int j
    if save and not staged:
        # the saved step inputs [x_t | h_{t-1}], side by side: dW_ih and dW_hh are then one
        # GEMM (dAᵀ @ XH) after the loop
        memcpy(hprev + row * (I + H), x + row * I, I * sizeof(floating))
        memcpy(hprev + row * (I + H) + I, hn, H * sizeof(floating))
        if mode == _LSTM:
            memcpy(cprev + row * H, cn, H * sizeof(floating))
    if masked:
        return
    if floating is float:    # fast path: benchmarks/bench_recurrent.py "LSTM(128)"
        if mode == _LSTM:
            # hr is the saved row itself when saving (the GEMM wrote there): no copy
            minnet_lstm_fwd_row_f(hr, hn, cn, s, save and hr != s, H)
            return
        if mode == _GRU:
            minnet_gru_fwd_row_f(xr, hr, b_ih, b_hh, hn, s, save, H)
            return
        if mode == _RNN_TANH:
            minnet_rnn_tanh_fwd_row_f(xr, hr, b_ih, b_hh, hn, s, save, H)
            return
    if mode == _LSTM:
        # hr holds the whole pre-activation (the step's two GEMMs accumulated onto the biases)
        for j in range(H):
            gi = sigmoid(hr[j])
            gf = sigmoid(hr[H + j])
            gg = tanh_any(hr[2 * H + j])
            go = sigmoid(hr[3 * H + j])
            cnew = gf * cn[j] + gi * gg
            cn[j] = cnew
            hn[j] = go * tanh_any(cnew)
            if save:
                s[j] = gi
                s[H + j] = gf
                s[2 * H + j] = gg
                s[3 * H + j] = go
    elif mode == _GRU:
        for j in range(H):
            r = sigmoid((xr[j] + b_ih[j]) + (hr[j] + b_hh[j]))
            z = sigmoid((xr[H + j] + b_ih[H + j]) + (hr[H + j] + b_hh[H + j]))
            hh = hr[2 * H + j] + b_hh[2 * H + j]
            nn = tanh_any((xr[2 * H + j] + b_ih[2 * H + j]) + r * hh)
            hn[j] = nn + z * (hn[j] - nn)
            if save:
                s[j] = r
                s[H + j] = z
                s[2 * H + j] = nn
                s[3 * H + j] = hh
    else:
        for j in range(H):
            pre = (xr[j] + b_ih[j]) + (hr[j] + b_hh[j])
            if mode == _RNN_TANH:
                hn[j] = tanh_any(pre)
            else:
                hn[j] = pre if pre > zero else zero
            if save:
                s[j] = hn[j]


cdef inline void _prefetch_step(int mode, int N, int T, int I, int H, int tt,
                                floating* sv, floating* hprev, floating* cprev, floating* y,
                                bint write_seq) noexcept nogil:
    # The rows step `tt` will write into the saved arrays, requested while this step's
    # gate pass runs (benchmarks/bench_recurrent.py, LSTM(128) forward).
    cdef int64_t sz = sizeof(floating)
    cdef int S = 4 * H if mode == _LSTM or mode == _GRU else H
    minnet_prefetch_rows(hprev + <int64_t> tt * (I + H), <int64_t> T * (I + H) * sz, N, (I + H) * sz)
    minnet_prefetch_rows(sv + <int64_t> tt * S, <int64_t> T * S * sz, N, S * sz)
    if mode == _LSTM:
        minnet_prefetch_rows(cprev + <int64_t> tt * H, <int64_t> T * H * sz, N, H * sz)
    if write_seq:
        minnet_prefetch_rows(y + <int64_t> tt * H, <int64_t> T * H * sz, N, H * sz)


cdef void _stage_rows(int N, int T, int I, int H, int tt, const floating* x,
                      const floating* h, const floating* c, floating* hprev, floating* cprev,
                      bint save, const floating* rmask, floating* xh, int team) noexcept nogil:
    """LSTM, before step ``tt``'s GEMM: the saved rows [x_t | h_{t-1}] and c_{t-1} (``save``)
    and, when the GEMM cannot read those (not saving, or recurrent dropout: it reads
    [x_t | h * m]), the same rows in the scratch ``xh`` (N, I + H)."""
    cdef int n, j
    cdef floating* row
    cdef int64_t r
    for n in prange(N, schedule="static", num_threads=team):
        r = <int64_t> n * T + tt
        if save:
            row = hprev + r * (I + H)
            memcpy(row, x + r * I, I * sizeof(floating))
            memcpy(row + I, h + <int64_t> n * H, H * sizeof(floating))
            memcpy(cprev + r * H, c + <int64_t> n * H, H * sizeof(floating))
        if rmask != NULL or not save:
            row = xh + <int64_t> n * (I + H)
            memcpy(row, x + r * I, I * sizeof(floating))
            if rmask == NULL:
                memcpy(row + I, h + <int64_t> n * H, H * sizeof(floating))
            else:
                for j in range(H):
                    row[I + j] = h[<int64_t> n * H + j] * rmask[<int64_t> n * H + j]


cdef void _forward(int mode, int N, int T, int I, int H,
                   const floating* x, const floating* w_ih, const floating* w_hh,   # IN
                   const floating* b_ih, const floating* b_hh,                      # IN
                   const uint8_t* mask, bint has_mask, bint reverse,                # IN
                   floating* xp, floating* hp,                                      # scratch
                   floating* h, floating* c,                                        # INOUT
                   floating* y, bint write_seq,                                     # OUT
                   floating* hprev, floating* cprev, floating* sv, bint save,       # OUT
                   const floating* rmask, floating* hm,                             # IN, scratch
                   const floating* wpx, const floating* wph, floating* xh,          # IN, scratch
                   int n_threads) noexcept nogil:
    cdef int G = 4 * H if mode == _LSTM else (3 * H if mode == _GRU else H)
    cdef int step, tt, n, j
    cdef int team = _gate_team(<int64_t> N * G, n_threads)
    cdef bint masked
    cdef const floating* hsrc = h if rmask == NULL else hm
    cdef int64_t k
    # LSTM with save: the recurrent GEMM writes each step's rows straight into the saved
    # gate buffer (row stride T*4H) and the gate pass turns them into the gates in place,
    # so the gates are never copied. Otherwise the (N, G) scratch `hp`.
    cdef bint in_saved = mode == _LSTM and save
    cdef int64_t ldh = <int64_t> T * G if in_saved else (4 * H if mode == _GRU else G)
    cdef floating* hstep
    # float32: the step GEMMs run on weights packed once (stepgemm_kernels.h): wph is [W_ih | W_hh]ᵀ
    # for LSTM (one GEMM over the step's [x_t | h_{t-1}] rows), W_hhᵀ otherwise (wpx: W_ihᵀ)
    cdef bint packed = False
    cdef bint staged = False
    cdef const floating* xa
    cdef int64_t lda
    if floating is float:    # fast path: benchmarks/bench_recurrent.py "LSTM(128)"
        packed = wph != NULL
        staged = packed and mode == _LSTM
    if mode == _LSTM:
        for k in range(G):              # xp's first row: the summed biases b_ih + b_hh
            xp[k] = b_ih[k] + b_hh[k]
    for step in range(T):
        tt = T - 1 - step if reverse else step
        hstep = sv + <int64_t> tt * G if in_saved else hp
        if staged:
            # LSTM: the rows [x_t | h_{t-1}] (h * m under recurrent dropout) are the GEMM's A;
            # when saving without dropout they are the saved rows themselves
            _stage_rows(N, T, I, H, tt, x, h, c, hprev, cprev, save, rmask, xh, team)
            if save and rmask == NULL:
                xa = hprev + <int64_t> tt * (I + H)
                lda = <int64_t> T * (I + H)
            else:
                xa = xh
                lda = I + H
            # pre-activation = (b_ih + b_hh) + [x_t | h] @ [W_ih | W_hh]ᵀ: one GEMM, straight
            # into the saved gate rows (benchmarks/bench_recurrent.py, LSTM(128))
            if floating is float:    # fast path: benchmarks/bench_recurrent.py "LSTM(128)"
                step_gemm(N, G, I + H, xa, lda, wph, MINNET_SG_INIT_BIAS, xp, hstep, ldh,
                           n_threads)
        elif mode == _LSTM:
            # (float64) both GEMMs accumulate (beta = 1) onto rows holding b_ih + b_hh, so the
            # step's pre-activation is complete in `hstep` with no zeroing pass and no separate
            # projection to add.
            for n in range(N):
                memcpy(hstep + <int64_t> n * ldh, xp, G * sizeof(floating))
            gemm_blocks(False, True, N, G, I, <floating> 1, x + <int64_t> tt * I, T * I, w_ih, I,
                          <floating> 1, hstep, <int> ldh, n_threads)
        else:
            # This step's input projection XP (N, G) = X[:, tt] @ W_ihᵀ (rows T*I apart):
            # computed here rather than for all steps at once, it is still in cache when the
            # gate pass reads it (one (N*T, G) array read back step by step came from memory).
            if packed:
                if floating is float:    # fast path: benchmarks/bench_recurrent.py "GRU(128)"
                    step_gemm(N, G, I, x + <int64_t> tt * I, <int64_t> T * I, wpx,
                               MINNET_SG_INIT_ZERO, NULL, xp, G, n_threads)
            else:
                gemm_blocks(False, True, N, G, I, <floating> 1, x + <int64_t> tt * I, T * I,
                            w_ih, I, <floating> 0, xp, G, n_threads)
        if not staged:
            if rmask != NULL:
                # Recurrent dropout: the recurrent GEMM reads h * m (one mask per sample, fixed
                # over time); the state update itself uses the unmasked h.
                for k in range(<int64_t> N * H):
                    hm[k] = h[k] * rmask[k]
            if packed:
                if floating is float:    # fast path: benchmarks/bench_recurrent.py "GRU(128)"
                    step_gemm(N, G, H, hsrc, H, wph, MINNET_SG_INIT_ZERO, NULL, hstep, ldh,
                               n_threads)
            else:
                gemm_blocks(False, True, N, G, H, <floating> 1, hsrc, H, w_hh, H,
                            <floating> (1 if mode == _LSTM else 0), hstep, <int> ldh, n_threads)
        if save and step + 1 < T:
            _prefetch_step(mode, N, T, I, H, T - 2 - step if reverse else step + 1,
                           sv, hprev, cprev, y, write_seq)
        for n in prange(N, schedule="static", num_threads=team):
            masked = has_mask and mask[<int64_t> n * T + tt] == 0
            _forward_rows(mode, n, tt, T, I, H, x, xp, hstep, ldh, b_ih, b_hh, h, c, hprev, cprev, sv,
                          save, staged, masked)
            if write_seq:
                memcpy(y + (<int64_t> n * T + tt) * H, h + <int64_t> n * H, H * sizeof(floating))


cdef enum:
    _PART_ROWS = 32     # samples per part of the batch (_batch_parts)


cdef inline int _batch_parts(int N, int G, int n_threads) noexcept nogil:
    # How many parts of the batch run the recurrence side by side: a sample's state depends
    # only on its own past, so a thread can take whole samples through all T steps with no
    # synchronisation between steps (one parallel region, not three per step). Parts of
    # _PART_ROWS samples, a function of the shape alone: every sample gets the same
    # arithmetic (each part's GEMMs have the same shapes) whatever the thread count. At one
    # thread the batch stays whole (float64's BLAS GEMMs pack W once per step, not once per
    # part: benchmarks/bench_recurrent.py, LSTM(128) at 1 thread), except under
    # mn.config.set_deterministic(True), which keeps the parts so that 1 thread gives the
    # same bits as any other count.
    if 4 * <int64_t> N * G < parallel_min() or (n_threads <= 1 and not deterministic_mode()):
        return 1
    return (N + _PART_ROWS - 1) // _PART_ROWS


cdef void _forward_split(int mode, int N, int T, int I, int H,
                         const floating* x, const floating* w_ih, const floating* w_hh,
                         const floating* b_ih, const floating* b_hh,
                         const uint8_t* mask, bint has_mask, bint reverse,
                         floating* xp, floating* hp, floating* h, floating* c,
                         floating* y, bint write_seq,
                         floating* hprev, floating* cprev, floating* sv, bint save,
                         const floating* rmask, floating* hm,
                         const floating* wpx, const floating* wph, floating* xh,
                         int n_threads) noexcept nogil:
    """``_forward`` over the parts of the batch (``_batch_parts``), each part on one
    thread; one part (a small batch) runs ``_forward`` with the threads inside each step."""
    cdef int G = 4 * H if mode == _LSTM else (3 * H if mode == _GRU else H)
    cdef int S = 4 * H if mode == _LSTM or mode == _GRU else H
    cdef int64_t hp_row = 4 * H if mode == _GRU else G
    cdef int parts = _batch_parts(N, G, n_threads)
    cdef int part, n0, n1
    cdef bint lstm = mode == _LSTM
    cdef bint xh_rows = lstm and wph != NULL and (rmask != NULL or not save)   # xh is (N, I+H)
    if parts <= 1:
        _forward(mode, N, T, I, H, x, w_ih, w_hh, b_ih, b_hh, mask, has_mask, reverse, xp, hp,
                 h, c, y, write_seq, hprev, cprev, sv, save, rmask, hm, wpx, wph, xh, n_threads)
        return
    for part in prange(parts, schedule="static", num_threads=n_threads if n_threads > 1 else 1):
        n0 = <int> (<int64_t> part * N // parts)
        n1 = <int> ((<int64_t> part + 1) * N // parts)
        # Arrays the caller passed as one-element placeholders (no mask, no sequence
        # output, nothing saved, not LSTM) are passed on as they are.
        _forward(mode, n1 - n0, T, I, H, x + <int64_t> n0 * T * I, w_ih, w_hh, b_ih, b_hh,
                 mask + (<int64_t> n0 * T if has_mask else 0), has_mask, reverse,
                 xp + <int64_t> n0 * G, hp + n0 * hp_row, h + <int64_t> n0 * H,
                 c + (<int64_t> n0 * H if lstm else 0),
                 y + (<int64_t> n0 * T * H if write_seq else 0), write_seq,
                 hprev + (<int64_t> n0 * T * (I + H) if save else 0),
                 cprev + (<int64_t> n0 * T * H if save and lstm else 0),
                 sv + (<int64_t> n0 * T * S if save else 0), save,
                 rmask + <int64_t> n0 * H if rmask != NULL else NULL,
                 hm + (<int64_t> n0 * H if rmask != NULL else 0),
                 wpx, wph, xh + (<int64_t> n0 * (I + H) if xh_rows else 0), 1)


# ----------------------------------------------------------------------- backward

# Alike by shape (duplicates): _backward_rows dispatches on the cell as _forward_rows does
# (the float C rows, then the generic loop per cell).
cdef void _backward_rows(int mode, int n, int tt, int T, int I, int H,
                         const floating* hprev, const floating* cprev, const floating* sv,
                         const floating* dy, bint has_dy,
                         const floating* dh, floating* dc, floating* dh_next,
                         floating* dgx, floating* dgh, bint masked) noexcept nogil:
    """Gate gradients of sample ``n`` at time ``tt``; ``dh_next`` gets the direct part of dh_{t-1}."""
    cdef int G = 4 * H if mode == _LSTM else (3 * H if mode == _GRU else H)
    cdef int S = 4 * H if mode == _LSTM or mode == _GRU else H
    cdef int64_t row = <int64_t> n * T + tt
    cdef const floating* s = sv + row * S
    cdef const floating* hp = hprev + row * (I + H) + I      # h_{t-1} of [x_t | h_{t-1}]
    cdef const floating* cp = cprev + row * H
    cdef const floating* dyr = dy + (row * H if has_dy else 0)   # absent: one zero row
    cdef const floating* dhr = dh + <int64_t> n * H
    cdef floating* dcr = dc + <int64_t> n * H
    cdef floating* dnext = dh_next + <int64_t> n * H
    cdef floating* gx = dgx + row * G
    cdef floating* gh = dgh + row * G
    cdef floating one = 1
    cdef floating zero = 0
    cdef floating d, dcj, gi, gf, gg, go, cnew, tc, r, z, nn, hh, dn, dr, dz, hv
    cdef int j
    if masked:
        for j in range(H):
            dnext[j] = dhr[j] + dyr[j] if has_dy else dhr[j]
        memset(gx, 0, G * sizeof(floating))
        if mode == _GRU:
            memset(gh, 0, G * sizeof(floating))
        return
    if floating is float:    # fast path: benchmarks/bench_recurrent.py "LSTM(128)"
        if mode == _LSTM:
            minnet_lstm_bwd_row_f(<float*> s, cp, dhr, dyr, dcr, gx, dnext, H)   # gx may be s
            return
        if mode == _GRU:
            minnet_gru_bwd_row_f(s, hp, dhr, dyr, gx, gh, dnext, H)
            return
    if mode == _LSTM:
        for j in range(H):
            d = dhr[j] + dyr[j] if has_dy else dhr[j]
            gi = s[j]
            gf = s[H + j]
            gg = s[2 * H + j]
            go = s[3 * H + j]
            cnew = gf * cp[j] + gi * gg
            tc = tanh_any(cnew)
            dcj = dcr[j] + d * go * (one - tc * tc)
            gx[j] = dcj * gg * gi * (one - gi)
            gx[H + j] = dcj * cp[j] * gf * (one - gf)
            gx[2 * H + j] = dcj * gi * (one - gg * gg)
            gx[3 * H + j] = d * tc * go * (one - go)
            dcr[j] = dcj * gf
            dnext[j] = zero
    elif mode == _GRU:
        for j in range(H):
            d = dhr[j] + dyr[j] if has_dy else dhr[j]
            r = s[j]
            z = s[H + j]
            nn = s[2 * H + j]
            hh = s[3 * H + j]
            dn = d * (one - z) * (one - nn * nn)
            dz = d * (hp[j] - nn) * z * (one - z)
            dr = dn * hh * r * (one - r)
            gx[j] = dr
            gx[H + j] = dz
            gx[2 * H + j] = dn
            gh[j] = dr
            gh[H + j] = dz
            gh[2 * H + j] = dn * r
            dnext[j] = d * z
    else:
        for j in range(H):
            d = dhr[j] + dyr[j] if has_dy else dhr[j]
            hv = s[j]
            if mode == _RNN_TANH:
                gx[j] = d * (one - hv * hv)
            else:
                gx[j] = d if hv > zero else zero
            dnext[j] = zero


cdef void _column_sums(int64_t rows, int cols, const floating* a, floating* out,
                       int n_threads) noexcept nogil:
    """out[j] = sum_i a[i, j], rows added in order; threads split the columns into
    contiguous chunks (one streaming pass over the rows each)."""
    cdef int team = _gate_team(rows * cols, n_threads)
    cdef int chunk = ((cols + team - 1) // team + 15) // 16 * 16
    cdef int n_chunks = (cols + chunk - 1) // chunk
    cdef int block, j, j0, j1
    cdef int64_t i
    for block in prange(n_chunks, schedule="static", num_threads=team):
        j0 = block * chunk
        j1 = j0 + chunk if j0 + chunk < cols else cols
        for j in range(j0, j1):
            out[j] = 0
        for i in range(rows):
            for j in range(j0, j1):
                out[j] += a[i * cols + j]


cdef void _backward_time(int mode, int N, int T, int I, int H, const floating* w_hh,
                         const floating* hprev, const floating* cprev, const floating* sv,
                         const uint8_t* mask, bint has_mask, bint reverse,
                         const floating* dy, bint has_dy,
                         floating* dh, floating* dc, floating* dh_next,
                         floating* dgx, floating* dgh,
                         const floating* rmask, floating* scratch, const floating* wpb,
                         const floating* wpx, floating* dx,
                         int n_threads) noexcept nogil:
    """Backpropagation through time for N samples: every step's gate gradients dA (into
    dgx, and dgh for GRU) and dh_{t-1}; dh ends as dL/dh_0 (dc as dL/dc_0). With ``wpx``
    (float32: W_ih packed) also each step's input gradient dx_t = dA_t @ W_ih, while dA_t is
    in cache."""
    cdef int G = 4 * H if mode == _LSTM else (3 * H if mode == _GRU else H)
    cdef int step, tt, n
    cdef int team = _gate_team(<int64_t> N * G, n_threads)
    cdef bint masked
    cdef floating* cur = dh
    cdef floating* nxt = dh_next
    cdef floating* tmp
    cdef const floating* gh = dgh if mode == _GRU else dgx
    cdef int64_t ld = <int64_t> T * G
    cdef int64_t k
    for step in range(T):
        tt = step if reverse else T - 1 - step
        for n in prange(N, schedule="static", num_threads=team):
            masked = has_mask and mask[<int64_t> n * T + tt] == 0
            _backward_rows(mode, n, tt, T, I, H, hprev, cprev, sv, dy, has_dy, cur, dc, nxt,
                           dgx, dgh, masked)
        # dh_{t-1} += dG_t (N, G) @ W_hh (G, H); a step's rows of dG are T*G apart.
        # float32: W_hh packed once (wpb, stepgemm_kernels.h)
        if floating is float:    # fast path: benchmarks/bench_recurrent.py "LSTM(128)"
            if wpx != NULL:
                step_gemm(N, I, G, dgx + <int64_t> tt * G, ld, wpx, MINNET_SG_INIT_ZERO, NULL,
                           dx + <int64_t> tt * I, <int64_t> T * I, n_threads)
            if wpb != NULL:
                if rmask == NULL:
                    step_gemm(N, H, G, gh + <int64_t> tt * G, ld, wpb, MINNET_SG_INIT_C, NULL,
                               nxt, H, n_threads)
                else:
                    step_gemm(N, H, G, gh + <int64_t> tt * G, ld, wpb, MINNET_SG_INIT_ZERO,
                               NULL, scratch, H, n_threads)
                    for k in range(<int64_t> N * H):
                        nxt[k] += scratch[k] * rmask[k]
                tmp = cur
                cur = nxt
                nxt = tmp
                continue
        if rmask == NULL:
            gemm_blocks(False, False, N, H, G, <floating> 1, gh + <int64_t> tt * G, <int> ld,
                          w_hh, H, <floating> 1, nxt, H, n_threads)
        else:
            # recurrent dropout: the recurrent path read h * m, so its gradient is masked too
            gemm_blocks(False, False, N, H, G, <floating> 1, gh + <int64_t> tt * G, <int> ld,
                          w_hh, H, <floating> 0, scratch, H, n_threads)
            for k in range(<int64_t> N * H):
                nxt[k] += scratch[k] * rmask[k]
        tmp = cur
        cur = nxt
        nxt = tmp
    if cur != dh:
        memcpy(dh, cur, <int64_t> N * H * sizeof(floating))


cdef void _backward(int mode, int N, int T, int I, int H,
                    floating* dw_cat, const floating* w_ih, const floating* w_hh,      # scratch, IN
                    const floating* hprev, const floating* cprev, const floating* sv,  # IN
                    const uint8_t* mask, bint has_mask, bint reverse,                  # IN
                    const floating* dy, bint has_dy,                                   # IN
                    floating* dh, floating* dc, floating* dh_next,                     # INOUT
                    floating* dgx, floating* dgh,                                      # scratch
                    floating* dx, floating* dw_ih, floating* dw_hh,                    # OUT
                    floating* db_ih, floating* db_hh, bint want_bias,                  # OUT
                    const floating* rmask, floating* scratch,                          # IN, scratch
                    const floating* hprev_w, const floating* wpb,                      # IN
                    const floating* wpx,                                               # IN
                    int n_threads) noexcept nogil:
    cdef int G = 4 * H if mode == _LSTM else (3 * H if mode == _GRU else H)
    cdef int S = 4 * H if mode == _LSTM or mode == _GRU else H
    cdef const floating* gh = dgh if mode == _GRU else dgx
    cdef int64_t rows = <int64_t> N * T
    cdef int64_t k
    cdef int parts = _batch_parts(N, G, n_threads)
    cdef int part, n0, n1
    cdef bint lstm = mode == _LSTM, gru = mode == _GRU
    if parts <= 1:
        _backward_time(mode, N, T, I, H, w_hh, hprev, cprev, sv, mask, has_mask, reverse, dy,
                       has_dy, dh, dc, dh_next, dgx, dgh, rmask, scratch, wpb,
                       wpx if dx != NULL else NULL, dx, n_threads)
    else:
        # As the forward (_forward_split): samples are independent through time, so each
        # thread takes whole samples through all T steps; the weight gradients below sum
        # over all samples and steps in one order whatever the split.
        for part in prange(parts, schedule="static", num_threads=n_threads if n_threads > 1 else 1):
            n0 = <int> (<int64_t> part * N // parts)
            n1 = <int> ((<int64_t> part + 1) * N // parts)
            _backward_time(mode, n1 - n0, T, I, H, w_hh,
                           hprev + <int64_t> n0 * T * (I + H),
                           cprev + (<int64_t> n0 * T * H if lstm else 0),
                           sv + <int64_t> n0 * T * S,
                           mask + (<int64_t> n0 * T if has_mask else 0), has_mask, reverse,
                           dy + (<int64_t> n0 * T * H if has_dy else 0), has_dy,
                           dh + <int64_t> n0 * H, dc + (<int64_t> n0 * H if lstm else 0),
                           dh_next + <int64_t> n0 * H, dgx + <int64_t> n0 * T * G,
                           dgh + (<int64_t> n0 * T * G if gru else 0),
                           rmask + <int64_t> n0 * H if rmask != NULL else NULL,
                           scratch + (<int64_t> n0 * H if rmask != NULL else 0), wpb,
                           wpx if dx != NULL else NULL,
                           dx + (<int64_t> n0 * T * I if dx != NULL else 0), 1)
    # The weight gradients of all steps: dAᵀ @ [X | H_prev], one GEMM (LSTM, RNN: the
    # input and recurrent sides share dA), then split; GRU (dA^(h) != dA): two GEMMs.
    if dw_ih != NULL:
        if mode == _GRU:
            gemm_blocks(True, False, G, I, <int> rows, <floating> 1, dgx, G, hprev_w, I + H,
                          <floating> 0, dw_ih, I, n_threads)
            gemm_blocks(True, False, G, H, <int> rows, <floating> 1, gh, G, hprev_w + I,
                          I + H, <floating> 0, dw_hh, H, n_threads)
        else:
            gemm_blocks(True, False, G, I + H, <int> rows, <floating> 1, dgx, G, hprev_w,
                          I + H, <floating> 0, dw_cat, I + H, n_threads)
            for k in range(G):
                memcpy(dw_ih + k * I, dw_cat + k * (I + H), I * sizeof(floating))
                memcpy(dw_hh + k * H, dw_cat + k * (I + H) + I, H * sizeof(floating))
    if dx != NULL and wpx == NULL:      # (float32: computed step by step above)
        gemm_blocks(False, False, <int> rows, I, G, <floating> 1, dgx, G, w_ih, I,
                      <floating> 0, dx, I, n_threads)
    if want_bias:
        _column_sums(rows, G, dgx, db_ih, n_threads)
        if mode == _GRU:
            _column_sums(rows, G, gh, db_hh, n_threads)
        else:   # LSTM/RNN: dA^(h) is dA, so db_hh = db_ih
            memcpy(db_hh, db_ih, G * sizeof(floating))


# ----------------------------------------------------------------------- Python wrappers

def recurrent_forward(int mode, x, w_ih, w_hh, b_ih, b_hh, h0, c0, mask, bint reverse=False,
                      bint write_seq=True, bint save=True, int n_threads=1, rmask=None):
    """Run a whole sequence forward.

    Args:
        mode: LSTM, GRU, RNN_TANH or RNN_RELU.
        x: (N, T, I) C-contiguous float32/float64.
        w_ih: (G*H, I); w_hh: (G*H, H); b_ih, b_hh: (G*H,) or None (no bias).
        h0: (N, H) or None (zeros); c0: (N, H) or None (zeros; LSTM only).
        mask: (N, T) uint8 (0 = padded step) or None.
        reverse: run from the last time step to the first (outputs stay aligned with inputs).
        write_seq: fill the (N, T, H) output sequence (else ``y`` is None).
        save: keep what backward needs (else the saved arrays are None).
        rmask: (N, H) recurrent dropout mask (already scaled, e.g. 0 or 1/(1-p)) or None:
            the recurrent GEMM of every step reads ``h * rmask`` instead of ``h``.

    Returns:
        ``(y, h_n, c_n, hprev, cprev, saved)``; ``c_n``/``cprev`` are None except for LSTM.
    """
    dtype = x.dtype
    if dtype != np.float32 and dtype != np.float64:
        raise TypeError(f"Invalid argument `x`: expected float32 or float64. Received: dtype={dtype}")
    if x.ndim != 3:
        raise ValueError(f"Invalid argument `x`: expected (N, T, I). Received: shape={x.shape}")
    N, T, I = x.shape
    H = w_hh.shape[1]
    G = gates_per_cell(mode) * H
    check_typed(x, "x", dtype, (N, T, I))
    check_typed(w_ih, "w_ih", dtype, (G, I))
    check_typed(w_hh, "w_hh", dtype, (G, H))
    has_bias = b_ih is not None
    if has_bias:
        check_typed(b_ih, "b_ih", dtype, (G,))
        check_typed(b_hh, "b_hh", dtype, (G,))
    else:
        b_ih = b_hh = np.zeros(G, dtype=dtype)
    h = np.zeros((N, H), dtype=dtype) if h0 is None \
        else np.array(check_typed(h0, "h0", dtype, (N, H)))
    is_lstm = mode == _LSTM
    c = np.zeros((N, H) if is_lstm else (1, 1), dtype=dtype) if c0 is None or not is_lstm \
        else np.array(check_typed(c0, "c0", dtype, (N, H)))
    has_mask = mask is not None
    if has_mask:
        check_typed(mask, "mask", np.uint8, (N, T))
    else:
        mask = np.ones((1, 1), dtype=np.uint8)
    S = saved_per_step(mode) * H
    y = np.empty((N, T, H), dtype=dtype) if write_seq else np.empty((1, 1, 1), dtype=dtype)
    if save:
        # What backward needs, as three views of ONE block: one allocation instead of three,
        # and, being the largest block a step frees, it lifts glibc's dynamic mmap/trim
        # thresholds above a step's other buffers, so they stay in the heap instead of being
        # returned to the kernel and faulted in again next step (benchmarks/bench_recurrent.py
        # counts the page faults per step).
        block = np.empty(N * T * ((I + H) + (H if is_lstm else 0) + S), dtype=dtype)
        hprev = block[:N * T * (I + H)].reshape(N, T, I + H)
        rest = block[N * T * (I + H):]
        cprev = rest[:N * T * H].reshape(N, T, H) if is_lstm else np.empty((1, 1, 1), dtype=dtype)
        sv = rest[(N * T * H if is_lstm else 0):].reshape(N, T, S)
    else:
        hprev = cprev = sv = np.empty((1, 1, 1), dtype=dtype)
    xp = np.empty((N, G), dtype=dtype)
    hp = np.empty((N, 4 * H if mode == GRU else G), dtype=dtype)   # GRU rows: H of scratch
    has_rmask = rmask is not None
    if has_rmask:
        check_typed(rmask, "rmask", dtype, (N, H))
        hm = np.empty((N, H), dtype=dtype)
    else:
        rmask = hm = np.empty((1, 1), dtype=dtype)
    if N > 0 and T > 0:
        _forward_dispatch(mode, x, w_ih, w_hh, b_ih, b_hh, mask, has_mask, reverse,
                                 xp, hp, h, c, y, write_seq, hprev, cprev, sv, save,
                                 rmask, hm, has_rmask, n_threads)
    return (y if write_seq else None, h, c if is_lstm else None, hprev if save else None,
            cprev if save and is_lstm else None, sv if save else None)


def _forward_dispatch(int mode, floating[:, :, ::1] x, floating[:, ::1] w_ih,
                      floating[:, ::1] w_hh, floating[::1] b_ih, floating[::1] b_hh,
                      const uint8_t[:, ::1] mask, bint has_mask, bint reverse,
                      floating[:, ::1] xp, floating[:, ::1] hp, floating[:, ::1] h,
                      floating[:, ::1] c, floating[:, :, ::1] y, bint write_seq,
                      floating[:, :, ::1] hprev, floating[:, :, ::1] cprev,
                      floating[:, :, ::1] sv, bint save, floating[:, ::1] rmask,
                      floating[:, ::1] hm, bint has_rmask, int n_threads):
    cdef int N = x.shape[0], T = x.shape[1], I = x.shape[2], H = w_hh.shape[1]
    cdef int G = w_hh.shape[0]
    cdef const floating* prm = &rmask[0, 0] if has_rmask else NULL
    # float32: the weights packed once for the step GEMMs (stepgemm_kernels.h). LSTM: [W_ih | W_hh]ᵀ
    # (its steps are one GEMM over [x_t | h_{t-1}]) and the (N, I + H) rows it reads when
    # they are not the saved ones; GRU/RNN: W_ihᵀ and W_hhᵀ.
    cdef floating[::1] pk_x, pk_h
    cdef floating[:, ::1] xh
    cdef const floating* wpx = NULL
    cdef const floating* wph = NULL
    if floating is float:    # fast path: benchmarks/bench_recurrent.py "LSTM(128)"
        if mode == _LSTM:
            pk_h = np.empty(minnet_sg_packed_size(I + H, G), dtype=np.float32)
            pk_x = pk_h
            xh = np.empty((N if has_rmask or not save else 1, I + H), dtype=np.float32)
            with nogil:
                minnet_sg_pack(I + H, 0, I, G, &w_ih[0, 0], I, 1, &pk_h[0])
                minnet_sg_pack(I + H, I, H, G, &w_hh[0, 0], H, 1, &pk_h[0])
        else:
            pk_x = np.empty(max(1, minnet_sg_packed_size(I, G)), dtype=np.float32)
            pk_h = np.empty(minnet_sg_packed_size(H, G), dtype=np.float32)
            xh = np.empty((1, 1), dtype=np.float32)
            with nogil:
                minnet_sg_pack(I, 0, I, G, &w_ih[0, 0], I, 1, &pk_x[0])
                minnet_sg_pack(H, 0, H, G, &w_hh[0, 0], H, 1, &pk_h[0])
        wpx = &pk_x[0]
        wph = &pk_h[0]
    else:
        xh = np.empty((1, 1), dtype=np.float64)
    with nogil:
        _forward_split(mode, N, T, I, H, &x[0, 0, 0], &w_ih[0, 0], &w_hh[0, 0], &b_ih[0], &b_hh[0],
                 &mask[0, 0], has_mask, reverse, &xp[0, 0], &hp[0, 0], &h[0, 0], &c[0, 0],
                 &y[0, 0, 0], write_seq, &hprev[0, 0, 0], &cprev[0, 0, 0], &sv[0, 0, 0], save,
                 prm, &hm[0, 0], wpx, wph, &xh[0, 0], n_threads)


def recurrent_backward(int mode, x, w_ih, w_hh, hprev, cprev, saved, mask, bint reverse,
                       dy, dh_n, dc_n, bint want_x=True, bint want_weights=True,
                       bint want_bias=True, int n_threads=1, rmask=None, bint reuse_saved=False):
    """Backpropagation through time for ``recurrent_forward``'s saved arrays.

    Args:
        x: the input (N, T, I), or None: backward reads the inputs from ``hprev`` (the
            saved ``[x_t | h_{t-1}]`` rows, (N, T, I + H)); only the shapes are taken from x.
        dy: (N, T, H) gradient of the output sequence, or None.
        dh_n, dc_n: (N, H) gradients of the final states, or None.
        rmask: the recurrent dropout mask forward used, or None.
        reuse_saved: this is the last use of ``saved`` (the autograd graph is not retained):
            LSTM and RNN write each step's gate gradients over its saved gates (same shape)
            instead of a new (N, T, G) array; ``saved`` is garbage afterwards.

    Returns:
        ``(dx, dw_ih, dw_hh, db_ih, db_hh, dh0, dc0)``; entries not asked for are None
        (``dc0`` is None except for LSTM).
    """
    dtype = hprev.dtype
    N, T = hprev.shape[0], hprev.shape[1]
    I = w_ih.shape[1]
    if x is not None and (x.shape != (N, T, I) or x.dtype != dtype):
        raise ValueError(f"Invalid argument `x`: expected shape {(N, T, I)} and dtype {dtype}. "
                         f"Received: shape={x.shape}, dtype={x.dtype}")
    H = w_hh.shape[1]
    G = gates_per_cell(mode) * H
    S = saved_per_step(mode) * H
    is_lstm = mode == _LSTM
    check_typed(hprev, "hprev", dtype, (N, T, I + H))
    check_typed(saved, "saved", dtype, (N, T, S))
    if is_lstm:
        check_typed(cprev, "cprev", dtype, (N, T, H))
    else:
        cprev = np.empty((1, 1, 1), dtype=dtype)
    has_mask = mask is not None
    if not has_mask:
        mask = np.ones((1, 1), dtype=np.uint8)
    # The float32 gate passes always read dy (no branch in their loops): when absent, every
    # row reads one row of zeros (the (N, T, H) gradient is never materialised).
    has_dy = dy is not None
    if dy is None:
        dy = np.zeros((1, 1, H), dtype=dtype)
    else:
        dy = check_typed(np.ascontiguousarray(dy, dtype=dtype), "dy", dtype, (N, T, H))
    dh = np.zeros((N, H), dtype=dtype) if dh_n is None else np.array(dh_n, dtype=dtype, order="C")
    dc = np.zeros((N, H) if is_lstm else (1, 1), dtype=dtype)
    if is_lstm and dc_n is not None:
        dc[...] = dc_n
    dh_next = np.empty((N, H), dtype=dtype)
    # LSTM/RNN: the gate gradients have the saved gates' shape, and step t's are computed
    # from step t's saved row alone, so on the last use they can overwrite it: one (N, T, G)
    # array less to allocate (and to fault in), written where the pass just read.
    if mode == _GRU:    # dA and dA^(h) as two views of one block (see recurrent_forward)
        block = np.empty(2 * N * T * G, dtype=dtype)
        dgx = block[:N * T * G].reshape(N, T, G)
        dgh = block[N * T * G:].reshape(N, T, G)
    else:
        dgx = saved if reuse_saved and S == G and saved.flags.writeable else \
            np.empty((N, T, G), dtype=dtype)
        dgh = np.empty((1, 1, 1), dtype=dtype)
    dx = np.empty((N, T, I), dtype=dtype) if want_x else None
    dw_ih = np.empty((G, I), dtype=dtype) if want_weights else None
    dw_hh = np.empty((G, H), dtype=dtype) if want_weights else None
    db_ih = np.empty(G, dtype=dtype) if want_bias else None
    db_hh = np.empty(G, dtype=dtype) if want_bias else None
    has_rmask = rmask is not None
    if has_rmask:
        check_typed(rmask, "rmask", dtype, (N, H))
        scratch = np.empty((N, H), dtype=dtype)
        # dW_hh reads what the recurrent GEMM read: h_{t-1} * m (a temporary, not saved)
        if want_weights:
            hprev_w = hprev.copy()
            hprev_w[:, :, I:] *= rmask[:, None, :]
        else:
            hprev_w = hprev
    else:
        rmask = scratch = np.empty((1, 1), dtype=dtype)
        hprev_w = hprev
    dw_cat = np.empty((G, I + H) if want_weights else (1, 1), dtype=dtype)
    if N > 0 and T > 0:
        _backward_dispatch(mode, dw_cat, w_ih, w_hh, hprev, cprev, saved, mask, has_mask,
                                  reverse, dy, has_dy, dh, dc, dh_next, dgx, dgh, dx, dw_ih,
                                  dw_hh, db_ih, db_hh, want_bias, rmask, scratch, has_rmask,
                                  hprev_w, n_threads)
    else:
        for a in (dx, dw_ih, dw_hh, db_ih, db_hh):
            if a is not None:
                a[...] = 0
    return dx, dw_ih, dw_hh, db_ih, db_hh, dh, dc if is_lstm else None


cdef inline floating* _ptr2(floating[:, ::1] a) noexcept:
    return NULL if a is None else &a[0, 0]


def _backward_dispatch(int mode, floating[:, ::1] dw_cat, floating[:, ::1] w_ih,
                       floating[:, ::1] w_hh, floating[:, :, ::1] hprev,
                       floating[:, :, ::1] cprev, floating[:, :, ::1] sv,
                       const uint8_t[:, ::1] mask, bint has_mask, bint reverse,
                       floating[:, :, ::1] dy, bint has_dy, floating[:, ::1] dh,
                       floating[:, ::1] dc, floating[:, ::1] dh_next,
                       floating[:, :, ::1] dgx, floating[:, :, ::1] dgh,
                       floating[:, :, ::1] dx, floating[:, ::1] dw_ih, floating[:, ::1] dw_hh,
                       floating[::1] db_ih, floating[::1] db_hh, bint want_bias,
                       floating[:, ::1] rmask, floating[:, ::1] scratch, bint has_rmask,
                       floating[:, :, ::1] hprev_w, int n_threads):
    cdef int N = sv.shape[0], T = sv.shape[1], I = w_ih.shape[1], H = w_hh.shape[1]
    cdef floating* pdx = NULL if dx is None else &dx[0, 0, 0]
    cdef floating* pw_ih = _ptr2(dw_ih)
    cdef floating* pw_hh = _ptr2(dw_hh)
    cdef floating* pb_ih = NULL if db_ih is None else &db_ih[0]
    cdef floating* pb_hh = NULL if db_hh is None else &db_hh[0]
    cdef int G = w_hh.shape[0]
    cdef floating[::1] pk, pkx
    cdef const floating* wpb = NULL
    cdef const floating* wpx = NULL
    # fast path: benchmarks/bench_recurrent.py "LSTM(128)"
    if floating is float:      # W_hh (and W_ih) packed once for the step GEMMs (stepgemm_kernels.h)
        pk = np.empty(minnet_sg_packed_size(G, H), dtype=np.float32)
        with nogil:
            minnet_sg_pack(G, 0, G, H, &w_hh[0, 0], H, 0, &pk[0])
        wpb = &pk[0]
        if dx is not None:
            pkx = np.empty(max(1, minnet_sg_packed_size(G, I)), dtype=np.float32)
            with nogil:
                minnet_sg_pack(G, 0, G, I, &w_ih[0, 0], I, 0, &pkx[0])
            wpx = &pkx[0]
    with nogil:
        _backward(mode, N, T, I, H, &dw_cat[0, 0], &w_ih[0, 0], &w_hh[0, 0], &hprev[0, 0, 0],
                  &cprev[0, 0, 0], &sv[0, 0, 0], &mask[0, 0], has_mask, reverse,
                  &dy[0, 0, 0], has_dy, &dh[0, 0], &dc[0, 0], &dh_next[0, 0],
                  &dgx[0, 0, 0], &dgh[0, 0, 0], pdx, pw_ih, pw_hh, pb_ih, pb_hh, want_bias,
                  &rmask[0, 0] if has_rmask else NULL, &scratch[0, 0], &hprev_w[0, 0, 0],
                  wpb, wpx, n_threads)
