/* The C side of dropout_kernels.pyx, which declares it in `cdef extern from "dropout_kernels.h"`:
 * the counter-based hash (one definition, which the Cython loops call too) and the float32
 * dropout loop in the per-CPU copies of _base.h.  The Cython loop compiled to the default
 * SSE2 code, which has no 64-bit multiply, and spent ~5 cycles per element on the hash
 * (benchmarks/bench_autograd.py, dropout layer); AVX-512's copy multiplies 8 lanes at a
 * time.  Integer arithmetic, so every copy gives the same mask and output. */
#ifndef MINNET_DROPOUT_H
#define MINNET_DROPOUT_H
#include <Python.h>
#include <stdint.h>
#include "_base.h"

/* splitmix64's finaliser (Stafford's "Mix13"): a bijection that scrambles all bits. */
static inline uint64_t minnet_mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* base = mix(seed); splitmix64 output number `counter` of the stream starting at base,
 * its top 53 bits compared with the threshold: 1 = kept. */
static inline uint8_t minnet_keep(uint64_t base, uint64_t counter, uint64_t threshold) {
    return (minnet_mix64(base + (counter + 1) * 0x9E3779B97F4A7C15ULL) >> 11) >= threshold;
}

/* Dropout of n floats whose first counter is `first`: mask[i] = keep, out[i] =
 * x[i] * (scale * keep) (a multiply, not a branch: NaN * 0 stays NaN, as in PyTorch). */
MINNET_TARGET_CLONES
static void minnet_dropout_block_f(const float *x, uint64_t base, uint64_t first,
                                   uint64_t threshold, float scale, float *out,
                                   uint8_t *mask, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) {
        uint8_t keep = minnet_keep(base, first + (uint64_t)i, threshold);
        mask[i] = keep;
        out[i] = x[i] * (scale * keep);
    }
}

#endif  /* MINNET_DROPOUT_H */
