"""set_num_threads: 1 .. a documented bound (64 per CPU, never above what the system lets a
process create); clear errors beyond it; within it the requested count really runs."""
import os

import numpy as np
import pytest

import minnet as mn
from minnet import _config
from minnet._ext import conv_kernels, _openmp


@pytest.fixture(autouse=True)
def _restore_threads():
    previous = mn.get_num_threads()
    yield
    mn.set_num_threads(previous)


def test_bound_is_64_per_cpu_or_the_system_limit():
    bound = _config.max_num_threads()
    assert 1 <= bound <= 64 * os.cpu_count()
    system = _config._system_thread_limit()
    if system is None:
        assert bound == 64 * os.cpu_count()
    else:
        assert bound == min(64 * os.cpu_count(), system)


@pytest.mark.parametrize("n", [0, -1, "bound+1", 40000, 100000, 2 ** 31, 2 ** 63, 10 ** 30])
def test_counts_outside_the_bound_raise_a_clear_value_error(n):
    bound = _config.max_num_threads()
    if n == "bound+1":
        n = bound + 1
    if 1 <= n <= bound:
        pytest.skip("inside the bound on this machine")
    before = mn.get_num_threads()
    with pytest.raises(ValueError) as info:
        mn.set_num_threads(n)
    message = str(info.value)
    assert "`n`" in message and f"n={n}" in message and f"[1, {bound}]" in message
    assert mn.get_num_threads() == before and _openmp.omp_get_max_threads() == before


@pytest.mark.parametrize("n", [1.0, 2.5, "4", None, True])
def test_non_ints_raise_type_error_naming_n(n):
    with pytest.raises(TypeError, match="`n`"):
        mn.set_num_threads(n)


def test_numpy_ints_are_accepted():
    mn.set_num_threads(np.int64(3))
    assert mn.get_num_threads() == 3


def test_the_bound_itself_is_accepted_and_kernels_run():
    bound = _config.max_num_threads()
    mn.set_num_threads(bound)
    assert mn.get_num_threads() == bound and _openmp.omp_get_max_threads() == bound
    x = np.random.default_rng(0).standard_normal((4, 2, 9, 9)).astype(np.float32)
    w = np.ones((3, 2, 3, 3), np.float32)
    y = conv_kernels.conv2d_forward(x, w, None, 1, 1, n_threads=bound)
    np.testing.assert_array_equal(y, conv_kernels.conv2d_forward(x, w, None, 1, 1, n_threads=1))
    relu = mn.functional.relu(mn.tensor(np.linspace(-1, 1, 1 << 16, dtype=np.float32)))
    assert relu.data.min() == 0


@pytest.mark.skipif(not _openmp.openmp_enabled(), reason="serial build: no thread team")
@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="needs /proc to count threads")
def test_the_requested_count_really_runs():
    n = min(7, _config.max_num_threads())
    mn.set_num_threads(n)
    # enough work for every thread (the kernels use at most one thread per MFLOP)
    x = np.random.default_rng(0).standard_normal((32, 8, 16, 16)).astype(np.float32)
    w = np.ones((16, 8, 3, 3), np.float32)
    conv_kernels.conv2d_forward(x, w, None, 1, 1, n_threads=mn.get_num_threads())
    # libgomp keeps its team's threads alive between regions: the process now has >= n
    assert len(os.listdir("/proc/self/task")) >= n
