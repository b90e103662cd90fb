/* The float32 gate passes of minnet._ext.recurrent_kernels (declared there): branch-free exp/tanh
 * from _fastmath.h, so GCC vectorises the loop over the units. */
#ifndef MINNET_RECURRENT_H
#define MINNET_RECURRENT_H
#include "_fastmath.h"

/* Each row is done in short single-purpose loops over the gate values (pre-activation,
 * then sigmoid or tanh in place, then the state update): loops this simple GCC
 * vectorises (one long loop with several selects it left scalar). `hr` is the row of
 * the step's scratch h @ W_hhᵀ, overwritten with the gates; `restrict`: rows never
 * overlap. */
#define MINNET_INLINE static inline __attribute__((always_inline))

/* Ask for `rows` rows of `bytes` bytes, `stride` bytes apart, to be brought into cache
 * for writing: the next step's rows of the saved buffers (rows T steps apart, so each
 * step writes memory the previous step did not touch). */
static inline void minnet_prefetch_rows(const void *base, int64_t stride, int rows,
                                        int64_t bytes) {
    const char *p = (const char *) base;
    for (int r = 0; r < rows; r++)
        for (int64_t b = 0; b < bytes; b += 64)
            __builtin_prefetch(p + r * stride + b, 1, 3);
}
MINNET_INLINE void minnet_sigmoid_inplace(float *restrict v, int n) {
    for (int j = 0; j < n; j++) v[j] = minnet_sigmoid1_f(v[j]);
}
MINNET_INLINE void minnet_tanh_inplace(float *restrict v, int n) {
    for (int j = 0; j < n; j++) v[j] = minnet_tanh_f(v[j]);
}
MINNET_INLINE void minnet_preact(const float *restrict xr, float *restrict hr,
                                 const float *restrict bi, const float *restrict bh, int n) {
    for (int j = 0; j < n; j++) hr[j] = (xr[j] + bi[j]) + (hr[j] + bh[j]);
}

MINNET_FAST_CLONES __attribute__((noinline))
static void minnet_lstm_update(const float *restrict gi, const float *restrict gf,
                               const float *restrict gg, const float *restrict go,
                               float *restrict c, float *restrict h, int H) {
    for (int j = 0; j < H; j++) {
        float cn = gf[j] * c[j] + gi[j] * gg[j];
        c[j] = cn;
        h[j] = cn;
    }
    minnet_tanh_inplace(h, H);
    for (int j = 0; j < H; j++) h[j] *= go[j];
}

/* LSTM: `hr` holds the whole pre-activation already ((b_ih + b_hh) + x W_ihᵀ + h W_hhᵀ,
 * accumulated by the step's two GEMMs with beta = 1), so the row pass starts at the gates. */
MINNET_FAST_CLONES
static void minnet_lstm_fwd_row_f(float *restrict hr, float *restrict h, float *restrict c,
                                  float *restrict s, int save, int H) {
    minnet_sigmoid_inplace(hr, 2 * H);
    minnet_tanh_inplace(hr + 2 * H, H);
    minnet_sigmoid_inplace(hr + 3 * H, H);
    minnet_lstm_update(hr, hr + H, hr + 2 * H, hr + 3 * H, c, h, H);
    if (save) memcpy(s, hr, 4 * (size_t)H * sizeof(float));
}

/* The gate blocks of a row are passed as separate restrict pointers: with one pointer
 * and offsets H, 2H, 3H GCC could not prove the blocks disjoint and fell back to its
 * scalar loop at run time. */
MINNET_FAST_CLONES __attribute__((noinline))
static void minnet_lstm_bwd_body(const float *restrict gi, const float *restrict gf,
                                 const float *restrict gg, const float *restrict go,
                                 const float *restrict cp, const float *restrict dh,
                                 const float *restrict dy, const float *restrict tc,
                                 float *restrict dc, float *restrict dai,
                                 float *restrict daf, float *restrict dag,
                                 float *restrict dao, int H) {
    for (int j = 0; j < H; j++) {
        float d = dh[j] + dy[j];
        float dcj = dc[j] + d * go[j] * (1.0f - tc[j] * tc[j]);
        dai[j] = dcj * gg[j] * gi[j] * (1.0f - gi[j]);
        daf[j] = dcj * cp[j] * gf[j] * (1.0f - gf[j]);
        dag[j] = dcj * gi[j] * (1.0f - gg[j] * gg[j]);
        dao[j] = d * tc[j] * go[j] * (1.0f - go[j]);
        dc[j] = dcj * gf[j];
    }
}

MINNET_FAST_CLONES __attribute__((noinline))
static void minnet_lstm_cell_tanh(const float *restrict gi, const float *restrict gf,
                                  const float *restrict gg, const float *restrict cp,
                                  float *restrict out, int H) {
    for (int j = 0; j < H; j++) out[j] = gf[j] * cp[j] + gi[j] * gg[j];
    minnet_tanh_inplace(out, H);
}

/* The same, writing each gate's gradient over the gate itself (backward's last use of
 * the saved gates: recurrent_backward(reuse_saved=True)). Separate from the function
 * above because its restrict pointers promise that inputs and outputs never overlap. */
MINNET_FAST_CLONES __attribute__((noinline))
static void minnet_lstm_bwd_body_inplace(float *restrict gi, float *restrict gf,
                                         float *restrict gg, float *restrict go,
                                         const float *restrict cp, const float *restrict dh,
                                         const float *restrict dy, const float *restrict tc,
                                         float *restrict dc, int H) {
    for (int j = 0; j < H; j++) {
        float i = gi[j], f = gf[j], g = gg[j], o = go[j];
        float d = dh[j] + dy[j];
        float dcj = dc[j] + d * o * (1.0f - tc[j] * tc[j]);
        gi[j] = dcj * g * i * (1.0f - i);
        gf[j] = dcj * cp[j] * f * (1.0f - f);
        gg[j] = dcj * i * (1.0f - g * g);
        go[j] = d * tc[j] * o * (1.0f - o);
        dc[j] = dcj * f;
    }
}

static void minnet_lstm_bwd_row_f(float *s, const float *cp, const float *dh,
                                  const float *dy, float *dc, float *gx, float *dnext,
                                  int H) {
    minnet_lstm_cell_tanh(s, s + H, s + 2 * H, cp, dnext, H);   /* tanh(c_t), recomputed */
    if (gx == s)
        minnet_lstm_bwd_body_inplace(s, s + H, s + 2 * H, s + 3 * H, cp, dh, dy, dnext, dc, H);
    else
        minnet_lstm_bwd_body(s, s + H, s + 2 * H, s + 3 * H, cp, dh, dy, dnext, dc,
                             gx, gx + H, gx + 2 * H, gx + 3 * H, H);
    memset(dnext, 0, (size_t)H * sizeof(float));
}

/* GRU: hr has 4H columns, [h W_rᵀ, h W_zᵀ, h W_nᵀ, scratch]. */
MINNET_FAST_CLONES __attribute__((noinline))
static void minnet_gru_n_pre(const float *restrict xn, const float *restrict bin,
                             const float *restrict bhn, const float *restrict r,
                             float *restrict hn, float *restrict npre, int H) {
    for (int j = 0; j < H; j++) {
        float hh = hn[j] + bhn[j];
        hn[j] = hh;
        npre[j] = (xn[j] + bin[j]) + r[j] * hh;
    }
    minnet_tanh_inplace(npre, H);
}

MINNET_FAST_CLONES __attribute__((noinline))
static void minnet_gru_update(const float *restrict z, const float *restrict n,
                              float *restrict h, int H) {
    for (int j = 0; j < H; j++) h[j] = n[j] + z[j] * (h[j] - n[j]);
}

MINNET_FAST_CLONES __attribute__((noinline))
static void minnet_gru_gates_rz(const float *restrict xr, float *restrict hr,
                                const float *restrict bi, const float *restrict bh, int n) {
    minnet_preact(xr, hr, bi, bh, n);
    minnet_sigmoid_inplace(hr, n);
}

static void minnet_gru_fwd_row_f(const float *xr, float *hr, const float *bi,
                                 const float *bh, float *h, float *s, int save, int H) {
    minnet_gru_gates_rz(xr, hr, bi, bh, 2 * H);
    minnet_gru_n_pre(xr + 2 * H, bi + 2 * H, bh + 2 * H, hr, hr + 2 * H, hr + 3 * H, H);
    minnet_gru_update(hr + H, hr + 3 * H, h, H);
    if (save) {   /* saved order: r, z, n, W_hn h + b_hn */
        memcpy(s, hr, 2 * (size_t)H * sizeof(float));
        memcpy(s + 2 * H, hr + 3 * H, (size_t)H * sizeof(float));
        memcpy(s + 3 * H, hr + 2 * H, (size_t)H * sizeof(float));
    }
}

MINNET_FAST_CLONES __attribute__((noinline))
static void minnet_gru_bwd_body(const float *restrict r, const float *restrict z,
                                const float *restrict n, const float *restrict hh,
                                const float *restrict hp, const float *restrict dh,
                                const float *restrict dy, float *restrict dxr,
                                float *restrict dxz, float *restrict dxn,
                                float *restrict dhr, float *restrict dhz,
                                float *restrict dhn, float *restrict dnext, int H) {
    for (int j = 0; j < H; j++) {
        float d = dh[j] + dy[j];
        float dn = d * (1.0f - z[j]) * (1.0f - n[j] * n[j]);
        float dz = d * (hp[j] - n[j]) * z[j] * (1.0f - z[j]);
        float dr = dn * hh[j] * r[j] * (1.0f - r[j]);
        dxr[j] = dr; dxz[j] = dz; dxn[j] = dn;
        dhr[j] = dr; dhz[j] = dz; dhn[j] = dn * r[j];
        dnext[j] = d * z[j];
    }
}

static void minnet_gru_bwd_row_f(const float *s, const float *hp, const float *dh,
                                 const float *dy, float *gx, float *gh, float *dnext,
                                 int H) {
    minnet_gru_bwd_body(s, s + H, s + 2 * H, s + 3 * H, hp, dh, dy, gx, gx + H, gx + 2 * H,
                        gh, gh + H, gh + 2 * H, dnext, H);
}

MINNET_FAST_CLONES
static void minnet_rnn_tanh_fwd_row_f(const float *restrict xr, float *restrict hr,
                                      const float *restrict bi, const float *restrict bh,
                                      float *restrict h, float *restrict s, int save, int H) {
    minnet_preact(xr, hr, bi, bh, H);
    minnet_tanh_inplace(hr, H);
    memcpy(h, hr, (size_t)H * sizeof(float));
    if (save) memcpy(s, hr, (size_t)H * sizeof(float));
}

#endif
