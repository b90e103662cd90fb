/* The float32 elementwise passes of the attention kernel (_attention.pyx) over one block
 * of scores: rows of `nk` values, `ld` apart. Written as plain loops over a row so GCC
 * vectorises them, and compiled as AVX-512 / AVX2 / baseline copies picked at load time
 * (MINNET_FAST_CLONES from _fastmath.pxd, which _attention.pyx cimports first, as it does
 * minnet_exp_nonpos_f): the Cython loops are compiled for baseline x86-64 only.
 */
#ifndef MINNET_ATTENTION_H
#define MINNET_ATTENTION_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#ifndef MINNET_FAST_CLONES          /* _fastmath.pxd's block defines it first; a plain build otherwise */
#define MINNET_FAST_CLONES
#endif

/* p = exp(s - lse_r) in place for each row r; a row with lse_r = -inf (no allowed key)
 * becomes 0. Every s - lse_r <= 0 up to rounding (lse_r >= max of the row). */
MINNET_FAST_CLONES
static void minnet_att_probs_f(float *s, Py_ssize_t ld, Py_ssize_t nq, Py_ssize_t nk,
                               const float *lse) {
    for (Py_ssize_t r = 0; r < nq; r++) {
        float *row = s + r * ld;
        const float li = lse[r];
        if (li == -INFINITY) {
            memset(row, 0, (size_t) nk * sizeof(float));
            continue;
        }
        for (Py_ssize_t c = 0; c < nk; c++) row[c] = minnet_exp_nonpos_f(row[c] - li);
    }
}

/* ds = p * (dp - D_r) written over dp. */
MINNET_FAST_CLONES
static void minnet_att_dscores_f(const float *p, float *dp, Py_ssize_t ld, Py_ssize_t nq,
                                 Py_ssize_t nk, const double *D) {
    for (Py_ssize_t r = 0; r < nq; r++) {
        const float *prow = p + r * ld;
        float *drow = dp + r * ld;
        const float d = (float) D[r];
        for (Py_ssize_t c = 0; c < nk; c++) drow[c] = prow[c] * (drow[c] - d);
    }
}

/* s += mask rows (row stride m_sl, column stride 1). */
MINNET_FAST_CLONES
static void minnet_att_add_mask_f(float *s, Py_ssize_t ld, Py_ssize_t nq, Py_ssize_t nk,
                                  const float *mask, Py_ssize_t m_sl) {
    for (Py_ssize_t r = 0; r < nq; r++) {
        float *row = s + r * ld;
        const float *mrow = mask + r * m_sl;
        for (Py_ssize_t c = 0; c < nk; c++) row[c] = row[c] + mrow[c];
    }
}

/* D_r = <do_r, o_r> in double for nq rows of n values. */
MINNET_FAST_CLONES
static void minnet_att_rowdot_f(const float *o, Py_ssize_t o_sl, const float *g,
                                Py_ssize_t g_sl, Py_ssize_t nq, Py_ssize_t n, double *D) {
    for (Py_ssize_t r = 0; r < nq; r++) {
        const float *orow = o + r * o_sl, *grow = g + r * g_sl;
        double acc[8] = {0};
        Py_ssize_t c = 0;
        for (; c + 8 <= n; c += 8)
            for (int j = 0; j < 8; j++) acc[j] += (double) orow[c + j] * (double) grow[c + j];
        double total = 0;
        for (; c < n; c++) total += (double) orow[c] * (double) grow[c];
        for (int j = 0; j < 8; j++) total += acc[j];
        D[r] = total;
    }
}

/* The forward's online-softmax step over one block of scores, for each row r:
 *     m_new = max(m[r], max_c s[r][c]);  alpha[r] = exp(m[r] - m_new);
 *     s[r][c] = exp(s[r][c] - m_new);    l[r] = l[r] * alpha[r] + sum_c s[r][c];  m[r] = m_new
 * (a row whose m_new is -inf allows no key yet: it becomes 0 and keeps alpha[r] = 1). The
 * block's sum is kept in MINNET_ATT_LANES float partial sums (a block row has at most
 * block_k terms, each <= 1) and added to l[r] in double. */
#define MINNET_ATT_LANES 16

/* max of row[0 .. n) (-inf for n = 0), NaNs skipped as `v > m ? v : m`. GCC leaves a lane
 * array of float selects scalar (see _fastmath's minnet_row_max_f), so the lanes are one
 * 16-float vector and the select a compare-and-blend; the 16 lanes are then combined as a
 * tree (_fastmath's helper combines its 32 lanes one after the other, which costs as much
 * again as the scan of a 128-key block row). */
#if defined(__GNUC__)
typedef float minnet_att_v16 __attribute__((vector_size(64), aligned(4)));
typedef int32_t minnet_att_i16 __attribute__((vector_size(64), aligned(4)));
#endif
static inline __attribute__((always_inline)) float minnet_att_row_max_f(const float *row,
                                                                       Py_ssize_t n) {
    float m = -INFINITY;
    Py_ssize_t c = 0;
#if defined(__GNUC__)
    if (n >= MINNET_ATT_LANES) {
        minnet_att_v16 acc = *(const minnet_att_v16 *) row;
        float lanes[MINNET_ATT_LANES];
        for (c = MINNET_ATT_LANES; c + MINNET_ATT_LANES <= n; c += MINNET_ATT_LANES) {
            minnet_att_v16 v = *(const minnet_att_v16 *) (row + c);
            minnet_att_i16 gt = (minnet_att_i16) (v > acc);
            acc = (minnet_att_v16) ((gt & (minnet_att_i16) v) | (~gt & (minnet_att_i16) acc));
        }
        memcpy(lanes, &acc, sizeof lanes);
        for (int w = MINNET_ATT_LANES / 2; w > 0; w /= 2)
            for (int j = 0; j < w; j++) lanes[j] = lanes[j + w] > lanes[j] ? lanes[j + w] : lanes[j];
        m = lanes[0];
    }
#endif
    for (; c < n; c++) m = row[c] > m ? row[c] : m;
    return m;
}

MINNET_FAST_CLONES
static void minnet_att_online_f(float *s, Py_ssize_t ld, Py_ssize_t nq, Py_ssize_t nk,
                                float *m, double *l, float *alpha) {
    for (Py_ssize_t r = 0; r < nq; r++) {
        float *row = s + r * ld;
        float mx = minnet_att_row_max_f(row, nk);
        float mn = mx > m[r] ? mx : m[r];
        if (mn == -INFINITY) {
            memset(row, 0, (size_t) nk * sizeof(float));
            alpha[r] = 1.0f;
            continue;
        }
        float acc[MINNET_ATT_LANES] = {0};
        Py_ssize_t c = 0;
        for (; c + MINNET_ATT_LANES <= nk; c += MINNET_ATT_LANES)
            for (int j = 0; j < MINNET_ATT_LANES; j++) {
                float e = minnet_exp_nonpos_f(row[c + j] - mn);
                row[c + j] = e;
                acc[j] += e;
            }
        float tail = 0.0f;
        for (; c < nk; c++) {
            float e = minnet_exp_nonpos_f(row[c] - mn);
            row[c] = e;
            tail += e;
        }
        /* lanes summed as a tree (16 -> 8 -> 4 -> 2 -> 1), a fixed order: summed one after
         * the other, the 16 dependent adds of every row cost about as much as its exps */
        for (int w = MINNET_ATT_LANES / 2; w > 0; w /= 2)
            for (int j = 0; j < w; j++) acc[j] += acc[j + w];
        tail += acc[0];
        float a = m[r] == -INFINITY ? 0.0f : minnet_exp_nonpos_f(m[r] - mn);
        alpha[r] = a;
        l[r] = l[r] * (double) a + (double) tail;
        m[r] = mn;
    }
}

#endif
