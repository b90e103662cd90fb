/* The C loops of _openmp.pyx, which declares them in `cdef extern from "_openmp.h"`. */
#ifndef MINNET_OPENMP_H
#define MINNET_OPENMP_H
#include <Python.h>

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

#endif  /* MINNET_OPENMP_H */
