/* What every kernel module of minnet._ext includes (through _base.pxd). */
#ifndef MINNET_BASE_H
#define MINNET_BASE_H

/* Sigmoid of n floats, the one kernel here bound by arithmetic rather than memory.
 * On x86-64 Linux GCC also compiles AVX2 and AVX-512 copies of it and picks one at
 * load time for the CPU it runs on (target_clones); elsewhere it is the plain
 * SSE2 loop. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define MINNET_TARGET_CLONES \
    __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define MINNET_TARGET_CLONES
#endif

/* The loop of an elementwise backward kernel, over i < n with `gi` the gradient of
 * element i: g[i] when g_step is 1, or g[0] for every element when g_step is 0 (one
 * value broadcast to the whole shape, the gradient `.sum().backward()` sends).  The
 * value is then read once and kept in a register: the block of BLOCK copies the loop
 * read before took the whole L1 cache beside the streamed arrays and cost about a
 * third of a 3.2 M-float backward (benchmarks/bench_autograd.py, relu layer).  The
 * body is the same either way, so both give the same bits. */
#define MINNET_FOR_GRAD(n, g, g_step, ...)                                            \
    do {                                                                              \
        if (g_step) {                                                                 \
            for (Py_ssize_t i = 0; i < (n); i++) { const float gi = (g)[i]; __VA_ARGS__ } \
        } else {                                                                      \
            const float g0 = (g)[0];                                                  \
            for (Py_ssize_t i = 0; i < (n); i++) { const float gi = g0; __VA_ARGS__ } \
        }                                                                             \
    } while (0)

#endif
