"""The stable radix argsort (minnet/_ext/sort_kernels.pyx): NumPy's stable argsort as the
reference (ties, NaN, signed zeros, infinities), descending order, every axis, the same
result for any thread count, and named errors."""
import numpy as np
import pytest

from minnet._ext import _base, sort_kernels

DTYPES = [np.float32, np.float64]
SHAPES = [((1,), 0), ((7,), 0), ((6, 9), 1), ((6, 9), 0), ((3, 7, 4), 1), ((2, 5, 300), 2),
          ((3, 4000), 1), ((4, 3, 2, 5), -2)]


@pytest.fixture
def parallel_always():
    old = _base.set_parallel_min(0)       # thread teams even on tiny arrays
    yield
    _base.set_parallel_min(old)


def _awkward(rng, shape, dtype):
    """Normal data with repeated values, both zeros, both infinities and NaNs mixed in."""
    x = rng.standard_normal(shape).astype(dtype)
    flat = x.reshape(-1)
    flat[::5] = 1.5
    flat[::7] = 0.0
    flat[::11] = -0.0
    flat[::13] = np.nan
    flat[::17] = np.inf
    flat[::19] = -np.inf
    flat[3::23] = -np.nan                  # a NaN with the sign bit set
    return x


def _descending_reference(x, d):
    # stable descending: equal elements keep their order (NaNs first, as PyTorch)
    order = np.argsort(np.flip(x, d), axis=d, kind="stable")
    return x.shape[d] - 1 - np.flip(order, d)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,dim", SHAPES)
def test_matches_numpy_stable_argsort(rng, dtype, shape, dim):
    x = _awkward(rng, shape, dtype)
    got = sort_kernels.argsort_along(x, dim)
    assert got.dtype == np.int64 and got.shape == x.shape
    np.testing.assert_array_equal(got, np.argsort(x, axis=dim, kind="stable"))
    np.testing.assert_array_equal(sort_kernels.argsort_along(x, dim, descending=True),
                                  _descending_reference(x, dim))


@pytest.mark.parametrize("dtype", DTYPES)
def test_non_contiguous_input(rng, dtype):
    x = _awkward(rng, (8, 30), dtype).T[::2]         # (15, 8), strided both ways
    for dim in (0, 1):
        np.testing.assert_array_equal(sort_kernels.argsort_along(x, dim),
                                      np.argsort(x, axis=dim, kind="stable"))


def test_all_equal_and_sorted_rows_keep_their_order():
    for dtype in DTYPES:
        n = 1000
        np.testing.assert_array_equal(sort_kernels.argsort_along(np.full(n, 3.0, dtype), 0), np.arange(n))
        np.testing.assert_array_equal(sort_kernels.argsort_along(np.full(n, 3.0, dtype), 0, descending=True),
                                      np.arange(n))
        up = np.arange(n, dtype=dtype)
        np.testing.assert_array_equal(sort_kernels.argsort_along(up, 0), np.arange(n))
        np.testing.assert_array_equal(sort_kernels.argsort_along(up, 0, descending=True), np.arange(n)[::-1])


def test_extreme_magnitudes_order():
    for dtype in DTYPES:
        info = np.finfo(dtype)
        x = np.array([info.max, -info.max, info.tiny, -info.tiny, info.smallest_subnormal,
                      -info.smallest_subnormal, 1.0, -1.0, 0.0], dtype)
        np.testing.assert_array_equal(sort_kernels.argsort_along(x, 0), np.argsort(x, kind="stable"))


@pytest.mark.parametrize("dtype", DTYPES)
def test_thread_count_does_not_change_results(rng, parallel_always, dtype):
    for shape, dim in [((50, 301), 1), ((301, 50), 0), ((5, 40, 30), 1)]:
        x = _awkward(rng, shape, dtype)
        for descending in (False, True):
            one = sort_kernels.argsort_along(x, dim, descending, n_threads=1)
            for threads in (2, 3):
                np.testing.assert_array_equal(sort_kernels.argsort_along(x, dim, descending, n_threads=threads), one)


def test_empty_and_zero_dim():
    for dtype in DTYPES:
        assert sort_kernels.argsort_along(np.empty((0, 5), dtype), 1).shape == (0, 5)
        assert sort_kernels.argsort_along(np.empty((3, 0), dtype), 1).shape == (3, 0)
        assert sort_kernels.argsort_along(np.empty((3, 0), dtype), 0).shape == (3, 0)
        assert sort_kernels.argsort_along(np.array(2.0, dtype), 0).shape == ()


def test_bad_arguments_raise_named_errors():
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(TypeError, match="`a`.*numpy.ndarray"):
        sort_kernels.argsort_along([1.0, 2.0], 0)
    with pytest.raises(TypeError, match="`a`.*float32 or float64"):
        sort_kernels.argsort_along(np.zeros(3, np.int64), 0)
    with pytest.raises(ValueError, match="`dim`.*Received: dim=2"):
        sort_kernels.argsort_along(x, 2)
    with pytest.raises(ValueError, match="`n_threads`"):
        sort_kernels.argsort_along(x, 1, n_threads=0)
    with pytest.raises(ValueError, match="`out`.*expected shape"):
        sort_kernels.argsort(x.reshape(1, 2, 3), np.empty((1, 3, 2), np.int64))
