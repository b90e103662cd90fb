/* The C loops of optim_kernels.pyx, which declares them in `cdef extern from "optim_kernels.h"`. */
#ifndef MINNET_OPTIM_H
#define MINNET_OPTIM_H
#include <Python.h>
#include <stdint.h>

/* One block of the Adam update, the operations of Adam._update in its order.  Built
 * for the CPU it runs on (AVX-512 / AVX2 copies picked at load time with GCC).  setup.py
 * compiles this module with -ffp-contract=off, so that no `a * b + c` becomes a fused
 * multiply-add: each operation rounds as NumPy's ufunc does; and with -fno-math-errno,
 * so that sqrt (whose argument is never negative) needs no errno check and vectorises. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define MINNET_OPTIM_FN __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", \
    "default")))
#else
#define MINNET_OPTIM_FN
#endif
#if defined(__clang__)
#pragma clang fp contract(off)
#endif
#define MINNET_ADAM_BLOCK(NAME, T, SQRT)                                                 \
MINNET_OPTIM_FN                                                                         \
static void NAME(T *restrict p, const T *restrict g, T *restrict m, T *restrict v,      \
                 T *restrict vmax, int64_t n, int lerp_low, T w, T b2, T omb2, T bc2,   \
                 T eps, T neg) {                                                        \
    for (int64_t i = 0; i < n; i++) {                                                   \
        T gi = g[i], mi = m[i];                                                         \
        T d = gi - mi;                   /* lerp_: work = g - m */                      \
        T t = d * w;                     /* work *= weight (or 1 - weight) */           \
        mi = lerp_low ? mi + t : gi - t; /* m += work, or m = g - work */               \
        m[i] = mi;                                                                      \
        T vi = v[i] * b2;                /* v *= beta_2 */                              \
        T s = gi * gi;                   /* work = g * g */                             \
        s = s * omb2;                    /* work *= 1 - beta_2 */                       \
        vi = vi + s;                     /* v += work */                                \
        v[i] = vi;                                                                      \
        if (vmax) {                      /* amsgrad: maximum(v_max, v), NaN wins */     \
            T x = vmax[i];                                                              \
            x = (vi > x || vi != vi) ? vi : x;                                          \
            vmax[i] = x;                                                                \
            vi = x;                                                                     \
        }                                                                               \
        T r = SQRT(vi);                  /* work = sqrt(v) */                           \
        r = r / bc2;                     /* work /= sqrt(1 - beta_2 ** step) */         \
        r = r + eps;                     /* work += epsilon */                          \
        r = mi / r;                      /* work = m / work */                          \
        r = r * neg;                     /* work *= -step_size */                       \
        p[i] = p[i] + r;                 /* p += work */                                \
    }                                                                                   \
}
MINNET_ADAM_BLOCK(minnet_adam_block_f, float, __builtin_sqrtf)
MINNET_ADAM_BLOCK(minnet_adam_block_d, double, __builtin_sqrt)

/* One block of the SGD update, the operations of SGD._update in its order.  `buf`
 * NULL: plain SGD.  `mode`: 0 the buffer is not updated (its first step, a copy of g),
 * 1 buf = buf * momentum + g, 2 buf = buf * momentum + g * (1 - dampening). */
#define MINNET_SGD_BLOCK(NAME, T)                                                       \
MINNET_OPTIM_FN                                                                         \
static void NAME(T *restrict p, const T *restrict g, T *restrict buf, int64_t n,       \
                 int mode, int nesterov, T mom, T omd, T lr) {                          \
    for (int64_t i = 0; i < n; i++) {                                                   \
        T gi = g[i];                                                                    \
        if (buf) {                                                                      \
            T b = buf[i];                                                               \
            if (mode) {                                                                 \
                b = b * mom;                 /* buf *= momentum */                      \
                T t = mode == 2 ? gi * omd : gi; /* work = g * (1 - dampening) */       \
                b = b + t;                   /* buf += work (or g) */                   \
                buf[i] = b;                                                             \
            }                                                                           \
            if (nesterov) {                                                             \
                T t = b * mom;               /* work = buf * momentum */                \
                gi = gi + t;                 /* grad += work */                         \
            } else {                                                                    \
                gi = b;                      /* grad = buf */                           \
            }                                                                           \
        }                                                                               \
        T t = gi * lr;                       /* work = grad * lr */                     \
        p[i] = p[i] - t;                     /* p -= work */                            \
    }                                                                                   \
}
MINNET_SGD_BLOCK(minnet_sgd_block_f, float)
MINNET_SGD_BLOCK(minnet_sgd_block_d, double)

#endif  /* MINNET_OPTIM_H */
