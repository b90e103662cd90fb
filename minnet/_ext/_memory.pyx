"""The buffer cache of minnet's loops: a NumPy allocator (NEP 49) that keeps large freed buffers for the next step.

``fit``, ``evaluate`` and ``predict`` run inside ``buffer_cache()``.  While one is
active, NumPy array buffers of at least 256 KiB that are freed are kept (up to ``limit``
bytes and 128 blocks) and handed out again for the next request of the same size,
instead of going back to the C library, which returns big blocks to the kernel and then
has to fault every page in (zeroed) again at the next step.  ``_memory.h`` has the
mechanism, docs/performance.md ("Page faults") the measurements.

Only NumPy's default allocator is wrapped: if another handler is installed (with
``PyDataMem_SetHandler``) the loops leave it alone.  Small buffers, and everything freed
while no loop runs, go straight to NumPy's default allocator.  Values are unaffected:
a reused buffer is an uninitialised buffer, as ``np.empty`` gives anyway, and a
``calloc`` request is zeroed.
"""
cimport numpy as cnp
from cpython.pycapsule cimport PyCapsule_GetPointer, PyCapsule_New

cdef extern from "_memory.h":
    ctypedef struct minnet_cache_stats:
        int active, blocks
        size_t bytes, peak_bytes, limit
        unsigned long long hits, misses
    cnp.PyDataMem_Handler minnet_cache_handler
    int minnet_cache_init(object default_handler, size_t limit) except -1
    void minnet_cache_enter() nogil
    void minnet_cache_exit() nogil
    void minnet_cache_set_limit(size_t limit) nogil
    minnet_cache_stats minnet_cache_get_stats() nogil

cnp.import_array()

DEFAULT_LIMIT = 512 * 2**20
_DEFAULT_NAME = "default_allocator"

# The cache delegates to the allocator that is current at import: NumPy's default.
minnet_cache_init(cnp.PyDataMem_GetHandler(), DEFAULT_LIMIT)
_handler = PyCapsule_New(<void*> &minnet_cache_handler, "mem_handler", NULL)


cdef str _name_of(object capsule):
    cdef cnp.PyDataMem_Handler* h = <cnp.PyDataMem_Handler*> PyCapsule_GetPointer(capsule, "mem_handler")
    return (<bytes> h.name).decode()


class buffer_cache:
    """Context manager: large NumPy buffers freed inside are kept for reuse (module doc).

    Re-entrant (``fit`` runs ``evaluate`` inside it); the cache is emptied when the
    outermost one exits.  A no-op when another NumPy allocator is installed or when
    the limit is 0.

    ``fit``, ``evaluate`` and ``predict`` use it already; wrap your own training loop
    in it (``mn.buffer_cache()``) to get the same reuse.

    Example:
        >>> with mn.buffer_cache():
        ...     for xb, yb in mn.data.batches(x, y, batch_size=64, shuffle=True):
        ...         model.train_on_batch(xb, yb)
    """

    __slots__ = ("_previous",)

    def __enter__(self):
        self._previous = None
        if minnet_cache_get_stats().limit == 0 or _name_of(cnp.PyDataMem_GetHandler()) != _DEFAULT_NAME:
            return self
        minnet_cache_enter()
        self._previous = cnp.PyDataMem_SetHandler(_handler)
        return self

    def __exit__(self, *exc):
        if self._previous is not None:
            cnp.PyDataMem_SetHandler(self._previous)
            self._previous = None
            minnet_cache_exit()
        return False


def set_limit(limit):
    """Most bytes the cache may hold (int >= 0); 0 turns it off."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise ValueError(f"Invalid value for argument `limit`: expected an int >= 0 (bytes). "
                         f"Received: limit={limit!r}")
    minnet_cache_set_limit(limit)


def stats():
    """The cache's state: ``active`` (loops running), ``cached_blocks``, ``cached_bytes``,
    ``peak_cached_bytes`` (the most it held during the current or last outermost loop),
    ``limit``, and the ``hits`` / ``misses`` of requests of at least 256 KiB since import."""
    cdef minnet_cache_stats st = minnet_cache_get_stats()
    return {"active": st.active, "cached_blocks": st.blocks, "cached_bytes": st.bytes,
            "peak_cached_bytes": st.peak_bytes, "limit": st.limit, "hits": st.hits,
            "misses": st.misses}
