"""What the build compiled in: OpenMP or not, and the OpenMP thread count."""

cdef extern from *:
    """
    #if defined(_OPENMP)
    #include <omp.h>
    static int minnet_openmp_enabled(void) { return 1; }
    static int minnet_omp_max_threads(void) { return omp_get_max_threads(); }
    static void minnet_omp_set_threads(int n) { omp_set_num_threads(n); }
    #else
    static int minnet_openmp_enabled(void) { return 0; }
    static int minnet_omp_max_threads(void) { return 1; }
    static void minnet_omp_set_threads(int n) { (void) n; }
    #endif
    """
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
