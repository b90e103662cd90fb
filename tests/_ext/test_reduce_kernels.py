"""The threaded sums and means (minnet/_ext/reduce_kernels.pyx): NumPy's result bit for bit over
an axis that is not the last, a float64 reference over the last axis and over all
elements, the same bits for any thread count, empty inputs, and named errors."""
import numpy as np
import pytest

from minnet._ext import reduce_kernels

DTYPES = [np.float32, np.float64]
TOL = {np.float32: dict(rtol=2e-6, atol=1e-6), np.float64: dict(rtol=1e-13, atol=1e-13)}
SHAPES = [(1,), (7,), (6, 9), (5, 300), (3, 7, 4), (2, 5, 3000), (4, 3, 2, 5), (20000,)]


def _numpy(x, axis, mean):
    return (np.mean if mean else np.sum)(x, axis=axis)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("mean", [False, True])
def test_each_axis_and_all(rng, dtype, shape, mean):
    x = rng.standard_normal(shape).astype(dtype)
    for axis in [None] + list(range(-len(shape), len(shape))):
        got = reduce_kernels.sum_axis(x, axis, mean)
        expected = _numpy(x, axis, mean)
        assert got.dtype == x.dtype and got.shape == np.shape(expected)
        if axis is not None and axis % len(shape) < len(shape) - 1:
            # over an axis that is not the last: NumPy's own order of additions
            np.testing.assert_array_equal(got, expected)
        else:
            # rows summed in float64: compare with the exact (float64) sum, at the scale
            # of the sum of |x|
            exact = _numpy(x.astype(np.float64), axis, mean)
            scale = _numpy(np.abs(x.astype(np.float64)), axis, mean)
            assert np.all(np.abs(got - exact) <= TOL[dtype]["rtol"] * scale + TOL[dtype]["atol"])


def test_float32_last_axis_is_within_one_rounding_of_the_exact_sum(rng):
    # the float64 accumulation leaves only the final rounding to float32
    x = rng.standard_normal((5, 100000)).astype(np.float32)
    got = reduce_kernels.sum_axis(x, 1)
    exact = x.astype(np.float64).sum(axis=1)
    np.testing.assert_array_equal(got, exact.astype(np.float32))


@pytest.mark.parametrize("dtype", DTYPES)
def test_thread_count_does_not_change_results(rng, dtype):
    # above the 32768-element team threshold; outer < threads splits columns
    for shape in [(1, 300, 200), (4, 300, 200), (300, 200), (3, 70000), (100001,)]:
        x = rng.standard_normal(shape).astype(dtype)
        for axis in [None] + list(range(len(shape))):
            for mean in (False, True):
                one = reduce_kernels.sum_axis(x, axis, mean, n_threads=1)
                for threads in (2, 3, 4):
                    got = reduce_kernels.sum_axis(x, axis, mean, n_threads=threads)
                    assert got.tobytes() == one.tobytes(), (shape, axis, mean, threads)


def test_signed_zero_and_non_finite_as_numpy():
    x = np.array([[-0.0, 1.0, np.inf, np.nan], [-0.0, 2.0, -np.inf, 1.0]], np.float32)
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(reduce_kernels.sum_axis(x, 0), np.sum(x, axis=0))   # [0, 3, nan, nan]
    assert not np.signbit(reduce_kernels.sum_axis(x, 0)[0])          # 0 + -0 + -0 is +0, as NumPy
    np.testing.assert_array_equal(reduce_kernels.sum_axis(x, 1), [np.nan, -np.inf])
    assert np.isnan(reduce_kernels.sum_axis(x, None))


def test_empty_axis():
    for dtype in DTYPES:
        x = np.empty((3, 0, 2), dtype)
        np.testing.assert_array_equal(reduce_kernels.sum_axis(x, 1), np.zeros((3, 2), dtype))
        assert np.isnan(reduce_kernels.sum_axis(x, 1, mean=True)).all()
        assert reduce_kernels.sum_axis(x, 0).shape == (0, 2)
        assert reduce_kernels.sum_axis(x, None) == 0


def test_bad_arguments_raise_named_errors():
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(TypeError, match="`x`.*float32 or float64"):
        reduce_kernels.sum_axis(np.zeros(3, np.int64), 0)
    with pytest.raises(ValueError, match="`x`.*C-contiguous"):
        reduce_kernels.sum_axis(x.T, 0)
    with pytest.raises(ValueError, match="`axis`.*Received: axis=2"):
        reduce_kernels.sum_axis(x, 2)
    with pytest.raises(ValueError, match="`axis`"):
        reduce_kernels.sum_axis(x, True)
    with pytest.raises(ValueError, match="`n_threads`"):
        reduce_kernels.sum_axis(x, 0, n_threads=0)
