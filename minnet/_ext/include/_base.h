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

#endif
