/* A caching NumPy allocator (NEP 49 handler) for the array buffers of a training step.
 *
 * Why: a training step allocates the same large buffers every step (activations, their
 * gradients, im2col workspaces, masks) and frees them at its end.  glibc returns big
 * freed blocks to the kernel (munmap, or trimming the heap top), so the next step
 * faults every page in again, and the kernel zeroes each one: the CNN of
 * benchmarks/bench_training.py --threads 1 (page faults per step and samples/s, with and
 * without the cache: docs/performance.md, "Page faults").
 *
 * What: blocks of at least MINNET_CACHE_MIN_BYTES (256 KiB; smaller ones are reused by
 * malloc itself) that are freed while a minnet loop (fit / evaluate / predict) runs are
 * kept, keyed by their exact size, and handed out again for the next request of that
 * size.  Everything else, and every block freed
 * when no loop runs, goes to the handler that was there before (NumPy's default).  The
 * cache holds at most MINNET_CACHE_SLOTS blocks and `limit` bytes (least recently
 * freed block evicted first) and is emptied when the outermost loop ends.
 *
 * The handler's functions may run without the GIL (NumPy frees buffers wherever the
 * last reference goes), so the cache is guarded by a PyThread lock.
 */
#ifndef MINNET_MEMORY_H
#define MINNET_MEMORY_H

#include <Python.h>
#include <pythread.h>
#include <string.h>
#include "numpy/ndarraytypes.h"

#define MINNET_CACHE_MIN_BYTES ((size_t) 256 * 1024)
#define MINNET_CACHE_SLOTS 128

typedef struct {
    void *ptr;
    size_t size;
    unsigned long long stamp;   /* when it was freed: the smallest is evicted first */
} minnet_slot;

static struct {
    PyThread_type_lock lock;
    PyDataMemAllocator base;    /* the allocator delegated to (NumPy's default) */
    minnet_slot slots[MINNET_CACHE_SLOTS];
    int n;
    size_t bytes, peak_bytes, limit;
    int active;                 /* loops in progress (fit runs evaluate inside) */
    unsigned long long clock, hits, misses;
} minnet_cache;

static void minnet_cache_lock(void) { PyThread_acquire_lock(minnet_cache.lock, WAIT_LOCK); }
static void minnet_cache_unlock(void) { PyThread_release_lock(minnet_cache.lock); }

/* A cached block of exactly `size` bytes (the most recently freed one), or NULL. */
static void *minnet_cache_take(size_t size) {
    void *ptr = NULL;
    int i, best = -1;
    minnet_cache_lock();
    for (i = 0; i < minnet_cache.n; i++)
        if (minnet_cache.slots[i].size == size
                && (best < 0 || minnet_cache.slots[i].stamp > minnet_cache.slots[best].stamp))
            best = i;
    if (best >= 0) {
        ptr = minnet_cache.slots[best].ptr;
        minnet_cache.bytes -= size;
        minnet_cache.slots[best] = minnet_cache.slots[--minnet_cache.n];
        minnet_cache.hits++;
    } else {
        minnet_cache.misses++;
    }
    minnet_cache_unlock();
    return ptr;
}

static void *minnet_cache_malloc(void *ctx, size_t size) {
    (void) ctx;
    if (size >= MINNET_CACHE_MIN_BYTES) {
        void *ptr = minnet_cache_take(size);
        if (ptr != NULL)
            return ptr;
    }
    return minnet_cache.base.malloc(minnet_cache.base.ctx, size);
}

static void *minnet_cache_calloc(void *ctx, size_t nelem, size_t elsize) {
    (void) ctx;
    if (elsize != 0 && nelem > (size_t) -1 / elsize)
        return NULL;    /* the size overflows: as calloc */
    if (nelem * elsize >= MINNET_CACHE_MIN_BYTES) {
        void *ptr = minnet_cache_take(nelem * elsize);
        if (ptr != NULL)
            return memset(ptr, 0, nelem * elsize);
    }
    return minnet_cache.base.calloc(minnet_cache.base.ctx, nelem, elsize);
}

static void *minnet_cache_realloc(void *ctx, void *ptr, size_t new_size) {
    (void) ctx;    /* every block came from base (cached or not): base can resize it */
    return minnet_cache.base.realloc(minnet_cache.base.ctx, ptr, new_size);
}

static void minnet_cache_free(void *ctx, void *ptr, size_t size) {
    (void) ctx;
    if (ptr != NULL && size >= MINNET_CACHE_MIN_BYTES) {
        minnet_cache_lock();
        if (minnet_cache.active > 0 && size <= minnet_cache.limit) {
            /* make room: evict the least recently freed blocks */
            while (minnet_cache.n > 0 && (minnet_cache.n == MINNET_CACHE_SLOTS
                                          || minnet_cache.bytes + size > minnet_cache.limit)) {
                int i, old = 0;
                for (i = 1; i < minnet_cache.n; i++)
                    if (minnet_cache.slots[i].stamp < minnet_cache.slots[old].stamp)
                        old = i;
                minnet_cache.base.free(minnet_cache.base.ctx, minnet_cache.slots[old].ptr,
                                       minnet_cache.slots[old].size);
                minnet_cache.bytes -= minnet_cache.slots[old].size;
                minnet_cache.slots[old] = minnet_cache.slots[--minnet_cache.n];
            }
            minnet_cache.slots[minnet_cache.n].ptr = ptr;
            minnet_cache.slots[minnet_cache.n].size = size;
            minnet_cache.slots[minnet_cache.n].stamp = ++minnet_cache.clock;
            minnet_cache.n++;
            minnet_cache.bytes += size;
            if (minnet_cache.bytes > minnet_cache.peak_bytes)
                minnet_cache.peak_bytes = minnet_cache.bytes;
            minnet_cache_unlock();
            return;
        }
        minnet_cache_unlock();
    }
    minnet_cache.base.free(minnet_cache.base.ctx, ptr, size);
}

/* Give every cached block back to the base allocator. */
static void minnet_cache_release(void) {
    int i;
    minnet_cache_lock();
    for (i = 0; i < minnet_cache.n; i++)
        minnet_cache.base.free(minnet_cache.base.ctx, minnet_cache.slots[i].ptr,
                               minnet_cache.slots[i].size);
    minnet_cache.n = 0;
    minnet_cache.bytes = 0;
    minnet_cache_unlock();
}

/* A loop starts: frees are cached from now on (the outermost one restarts the peak). */
static void minnet_cache_enter(void) {
    minnet_cache_lock();
    if (minnet_cache.active++ == 0)
        minnet_cache.peak_bytes = 0;
    minnet_cache_unlock();
}

/* A loop ends; the outermost one empties the cache. */
static void minnet_cache_exit(void) {
    int left;
    minnet_cache_lock();
    left = --minnet_cache.active;
    minnet_cache_unlock();
    if (left == 0)
        minnet_cache_release();
}

static void minnet_cache_set_limit(size_t limit) {
    int over;
    minnet_cache_lock();
    minnet_cache.limit = limit;
    over = minnet_cache.bytes > limit;
    minnet_cache_unlock();
    if (over)
        minnet_cache_release();
}

typedef struct {
    int active, blocks;
    size_t bytes, peak_bytes, limit;
    unsigned long long hits, misses;
} minnet_cache_stats;

static minnet_cache_stats minnet_cache_get_stats(void) {
    minnet_cache_stats st;
    minnet_cache_lock();
    st.active = minnet_cache.active;
    st.blocks = minnet_cache.n;
    st.bytes = minnet_cache.bytes;
    st.peak_bytes = minnet_cache.peak_bytes;
    st.limit = minnet_cache.limit;
    st.hits = minnet_cache.hits;
    st.misses = minnet_cache.misses;
    minnet_cache_unlock();
    return st;
}

static PyDataMem_Handler minnet_cache_handler = {
    "minnet_buffer_cache",
    1,
    {NULL, minnet_cache_malloc, minnet_cache_calloc, minnet_cache_realloc, minnet_cache_free},
};

/* 0 on success; -1 with a Python exception set. */
static int minnet_cache_init(PyObject *default_handler, size_t limit) {
    PyDataMem_Handler *base = (PyDataMem_Handler *) PyCapsule_GetPointer(default_handler,
                                                                         "mem_handler");
    if (base == NULL)
        return -1;
    minnet_cache.base = base->allocator;
    minnet_cache.lock = PyThread_allocate_lock();
    if (minnet_cache.lock == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    minnet_cache.limit = limit;
    return 0;
}

#endif /* MINNET_MEMORY_H */
