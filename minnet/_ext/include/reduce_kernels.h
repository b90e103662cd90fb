/* The C loops of reduce_kernels.pyx, which declares them in `cdef extern from "reduce_kernels.h"`. */
#ifndef MINNET_REDUCE_H
#define MINNET_REDUCE_H
#include <Python.h>
#include "_fastmath.h"

/* The two loops of this module as C with restrict pointers (no aliasing check) and,
 * on x86-64 Linux with GCC, AVX2 / AVX-512 copies picked at load time
 * (MINNET_FAST_CLONES, _fastmath.pxd), as NumPy dispatches its own add loops. */
#define MINNET_SUM_LANES 32
#define MINNET_DEFINE_REDUCE(T, SUFFIX)                                               \
/* acc[k] += x[i * stride + k] for i < n_rows, k < width, rows added in order; eight   \
 * rows per load/store of acc (the additions stay one after another, in row order). */ \
MINNET_FAST_CLONES                                                                    \
static void minnet_add_rows_##SUFFIX(T *restrict acc, const T *restrict x,            \
                                     Py_ssize_t stride, Py_ssize_t n_rows,            \
                                     Py_ssize_t width) {                              \
    Py_ssize_t i = 0, k;                                                              \
    for (; i + 8 <= n_rows; i += 8) {                                                 \
        const T *r = x + i * stride;                                                  \
        for (k = 0; k < width; k++)                                                   \
            acc[k] = ((((((((acc[k] + r[k]) + r[stride + k]) + r[2 * stride + k])      \
                     + r[3 * stride + k]) + r[4 * stride + k]) + r[5 * stride + k])   \
                     + r[6 * stride + k]) + r[7 * stride + k]);                       \
    }                                                                                 \
    for (; i < n_rows; i++)                                                           \
        for (k = 0; k < width; k++) acc[k] += x[i * stride + k];                      \
}                                                                                     \
/* float64 sum of x[0..n): MINNET_SUM_LANES interleaved partial sums (independent     \
 * chains the compiler keeps in vector registers), combined in lane order. */         \
MINNET_FAST_CLONES                                                                    \
static double minnet_block_sum_##SUFFIX(const T *restrict x, Py_ssize_t n) {          \
    double acc[MINNET_SUM_LANES] = {0};                                               \
    double total = 0;                                                                 \
    Py_ssize_t j = 0;                                                                 \
    int k;                                                                            \
    for (; j + MINNET_SUM_LANES <= n; j += MINNET_SUM_LANES)                          \
        for (k = 0; k < MINNET_SUM_LANES; k++) acc[k] += (double)x[j + k];            \
    for (; j < n; j++) total += (double)x[j];                                         \
    for (k = 0; k < MINNET_SUM_LANES; k++) total += acc[k];                           \
    return total;                                                                     \
}
MINNET_DEFINE_REDUCE(float, f)
MINNET_DEFINE_REDUCE(double, d)

#endif  /* MINNET_REDUCE_H */
