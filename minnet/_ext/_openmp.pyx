"""What the build compiled in: OpenMP or not, and the OpenMP thread count."""

cdef extern from "_openmp.h":
    int minnet_openmp_enabled() nogil
    int minnet_omp_max_threads() nogil
    void minnet_omp_set_threads(int n) nogil


def openmp_enabled():
    """True when the kernels were compiled with OpenMP (``prange`` runs in parallel)."""
    return bool(minnet_openmp_enabled())


def omp_get_max_threads():
    """OpenMP's current default team size (1 in a serial build)."""
    return minnet_omp_max_threads()


def omp_set_num_threads(int n):
    """Set OpenMP's default team size (no effect in a serial build)."""
    minnet_omp_set_threads(n)


def debug_build():
    """True when built with MINNET_DEBUG_BUILD=1 (bounds checks on)."""
    return bool(MINNET_DEBUG)
