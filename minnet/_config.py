"""One thread setting for minnet's OpenMP kernels and the BLAS they call.

minnet parallelises its kernels itself (``prange`` over samples, channels or GEMM
blocks) and calls single-threaded BLAS inside those threads.  Letting scipy's OpenBLAS
start its own thread pool as well would oversubscribe the cores, so
``set_num_threads(n)`` gives the OpenMP kernels ``n`` threads and pins the BLAS that
minnet's kernels use (scipy's) to one thread per caller.
"""
import ctypes
import glob
import os
import platform
import sys
import warnings

import numpy
import scipy
import scipy.linalg.cython_blas  # noqa: F401  (loads scipy's BLAS into the process)

from minnet._ext import _openmp
from minnet._version import __version__

try:
    import resource
except ImportError:  # not on POSIX (Windows)
    resource = None

_state = {"num_threads": None, "blas_libs": None,
          # True once minnet handed a kernel more than one thread: the OpenMP runtime may then
          # hold a thread pool, which a fork() does not copy (the child has only the caller).
          "team_started": False,
          # True in a child forked after that: its OpenMP pool is broken, so it runs on 1 thread.
          "forked_pool": False, "fork_warned": False}

# Symbols by which the OpenBLAS builds shipped in scipy / numpy wheels set their pool size.
_OPENBLAS_SETTERS = (
    "scipy_openblas_set_num_threads64_",
    "scipy_openblas_set_num_threads",
    "openblas_set_num_threads64_",
    "openblas_set_num_threads",
)
_OPENBLAS_GETTERS = (
    "scipy_openblas_get_num_threads64_",
    "scipy_openblas_get_num_threads",
    "openblas_get_num_threads64_",
    "openblas_get_num_threads",
)


def _default_num_threads():
    for var in ("MINNET_NUM_THREADS", "OMP_NUM_THREADS"):
        value = os.environ.get(var, "")
        if value.strip().isdigit() and int(value) > 0:
            return min(int(value), max_num_threads())
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def _find_blas_libs():
    """Locate the OpenBLAS shared libraries loaded for scipy (and numpy): (path, CDLL) pairs."""
    if _state["blas_libs"] is not None:
        return _state["blas_libs"]
    paths = set()
    maps = "/proc/self/maps"
    if os.path.exists(maps):
        with open(maps) as f:
            for line in f:
                path = line.rstrip("\n").split(" ")[-1]
                if "openblas" in os.path.basename(path).lower():
                    paths.add(path)
    else:  # macOS / Windows: look beside the scipy and numpy packages
        for mod in (scipy, numpy):
            root = os.path.dirname(os.path.dirname(mod.__file__))
            for pattern in ("*.libs/*openblas*", "*/.dylibs/*openblas*"):
                paths.update(glob.glob(os.path.join(root, pattern)))
    libs = []
    for path in sorted(paths):
        try:
            libs.append((path, ctypes.CDLL(path)))
        except OSError:
            continue
    _state["blas_libs"] = libs
    return libs


def _set_blas_threads(n):
    # Only scipy's BLAS (the one minnet's kernels call); numpy's copy is left alone so a
    # user's own numpy code keeps its threads.
    for path, lib in _find_blas_libs():
        if "scipy" not in os.path.basename(os.path.dirname(path)):
            continue
        for name in _OPENBLAS_SETTERS:
            fn = getattr(lib, name, None)
            if fn is not None:
                fn(ctypes.c_int(n))
                break


def _get_blas_threads():
    counts = {}
    for path, lib in _find_blas_libs():
        for name in _OPENBLAS_GETTERS:
            fn = getattr(lib, name, None)
            if fn is not None:
                fn.restype = ctypes.c_int
                counts[os.path.join(os.path.basename(os.path.dirname(path)), os.path.basename(path))] = fn()
                break
    return counts


# set_num_threads accepts at most THREADS_PER_CPU threads per CPU (oversubscription beyond
# that only slows a run down), and never more than the system lets the process create.
THREADS_PER_CPU = 64


def _read_int(path):
    try:
        with open(path) as f:
            text = f.read().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _system_thread_limit():
    """The most threads the system lets this process have, where it says (else None):
    ``RLIMIT_NPROC`` (per user), ``/proc/sys/kernel/threads-max`` and the cgroup's
    ``pids.max``, less the threads the process already runs."""
    limits = []
    try:
        soft, _ = resource.getrlimit(resource.RLIMIT_NPROC)
        if soft != resource.RLIM_INFINITY and soft > 0:
            limits.append(soft)
    except (AttributeError, OSError, ValueError):    # no resource module, or no such limit
        pass
    for path in ("/proc/sys/kernel/threads-max", "/sys/fs/cgroup/pids.max",
                 "/sys/fs/cgroup/pids/pids.max"):
        value = _read_int(path)
        if value:
            limits.append(value)
    if not limits:
        return None
    try:
        running = len(os.listdir("/proc/self/task"))
    except OSError:
        running = 1
    return max(1, min(limits) - running)


def max_num_threads():
    """The largest ``n`` that ``set_num_threads`` accepts: ``64 * os.cpu_count()``, or what the
    system lets this process create (``RLIMIT_NPROC``, ``threads-max``, cgroup ``pids.max``)
    when that is less."""
    bound = THREADS_PER_CPU * max(1, os.cpu_count() or 1)
    system = _system_thread_limit()
    return bound if system is None else max(1, min(bound, system))


def set_num_threads(n):
    """Set the number of threads minnet's kernels use.

    Args:
        n: an int from 1 to ``max_num_threads()`` (``64 * os.cpu_count()``, or what the
           system lets a process create when that is less).  The OpenMP kernels use ``n``
           threads; the BLAS library they call runs single-threaded inside each of them, so
           the cores are never oversubscribed by BLAS.  Results do not depend on ``n``.
           In a process forked (``os.fork``, multiprocessing's "fork" start method) after
           minnet's kernels ran on 2+ threads, the OpenMP pool is unusable: ``n > 1`` warns
           once (``RuntimeWarning``) and 1 thread is kept.

    Raises:
        TypeError: ``n`` is not an int.
        ValueError: ``n`` is below 1 or above ``max_num_threads()``.

    Example:
        >>> import minnet as mn
        >>> mn.set_num_threads(2)
        >>> mn.get_num_threads()
        2
    """
    if isinstance(n, bool) or not isinstance(n, (int,)) and not hasattr(n, "__index__"):
        raise TypeError(f"Invalid value for argument `n`: expected an int. Received: n={n!r}")
    n = int(n.__index__())
    bound = max_num_threads()
    if n < 1 or n > bound:
        raise ValueError(f"Invalid value for argument `n`: expected an int in [1, {bound}] "
                         f"(64 threads per CPU, at most what the system lets a process "
                         f"create). Received: n={n}")
    if n > 1 and _state["forked_pool"]:
        if not _state["fork_warned"]:
            _state["fork_warned"] = True
            warnings.warn(
                f"minnet stays at 1 thread in this process (asked for {n}): it was forked after "
                f"minnet's OpenMP kernels ran on several threads, and the OpenMP runtime's thread "
                f"pool does not survive fork() (a kernel on 2+ threads would hang). Start worker "
                f"processes with multiprocessing's 'spawn' or 'forkserver' method to use more "
                f"threads in them.", RuntimeWarning, stacklevel=2)
        n = 1
    _openmp.omp_set_num_threads(n)
    _set_blas_threads(1)
    _state["num_threads"] = n


def get_num_threads():
    """Number of threads minnet's kernels use (see ``set_num_threads``)."""
    n = _state["num_threads"]
    if n is None:       # resolved once at import (minnet/__init__.py), before any kernel asks
        set_num_threads(_default_num_threads())
        return _state["num_threads"]
    if n > 1 and not _state["team_started"]:       # a kernel is about to use n threads
        _state["team_started"] = True
    return n


def _after_fork_in_child():
    """In a child made by fork(): one thread, as PyTorch's DataLoader workers run.

    An OpenMP runtime's worker threads are not copied by fork(), but the pool's bookkeeping
    is, so the child's first parallel region waits for threads that do not exist (libgomp
    hangs there). When the parent may have started that pool, the child drops to 1 thread
    (a team of one never touches the pool) and ``set_num_threads(n > 1)`` warns once and keeps
    1. A parent that never ran a kernel on 2+ threads leaves a child free to use any count.
    """
    # Only minnet's own state and OpenMP's default team here: no dlopen or /proc reads, which
    # are not safe in a child of a threaded parent. scipy's BLAS is already pinned to one
    # thread per caller by the parent (set_num_threads), and OpenBLAS handles fork itself.
    if _state["team_started"] and _openmp.openmp_enabled():
        _state["forked_pool"] = True
        _state["fork_warned"] = False
        _state["num_threads"] = 1
        _openmp.omp_set_num_threads(1)


if hasattr(os, "register_at_fork"):        # POSIX
    os.register_at_fork(after_in_child=_after_fork_in_child)


def config_dict():
    """The facts ``show_config`` prints, as a dict."""
    num_threads = get_num_threads()
    blas = "unknown"
    try:
        info = scipy.show_config(mode="dicts")
        dep = info["Build Dependencies"]["blas"]
        blas = f"{dep.get('name')} {dep.get('version', '')}".strip()
    except Exception:
        pass
    return {
        "minnet": __version__,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "numpy": numpy.__version__,
        "scipy": scipy.__version__,
        "openmp": _openmp.openmp_enabled(),
        "debug_build": _openmp.debug_build(),
        "blas": blas,
        "blas_libraries": _get_blas_threads(),
        "num_threads": num_threads,
        "cpu_count": os.cpu_count(),
    }


def show_config():
    """Print minnet's version, build (OpenMP, debug), the BLAS scipy uses and thread counts."""
    c = config_dict()
    openmp = "yes" if c["openmp"] else "no (kernels run serially: the compiler had no OpenMP)"
    lines = [
        f"minnet {c['minnet']}",
        f"  python:        {c['python']} ({c['platform']})",
        f"  numpy, scipy:  {c['numpy']}, {c['scipy']}",
        f"  OpenMP:        {openmp}",
        f"  debug build:   {'yes (bounds checks on)' if c['debug_build'] else 'no'}",
        f"  BLAS (scipy):  {c['blas']}",
    ]
    for lib, threads in c["blas_libraries"].items():
        lines.append(f"    {lib}: {threads} thread(s)")
    lines.append(f"  threads:       {c['num_threads']} (minnet kernels), {c['cpu_count']} CPU(s)")
    print("\n".join(lines))
