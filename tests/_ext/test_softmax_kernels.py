"""Softmax backward on gradient views (minnet/_ext/softmax_kernels.pyx reads a gradient whose rows
are contiguous or one value without copying it) and the fused logsumexp backward: float64
references, the same bits as a contiguous copy where the arithmetic is the same, the same
bits for any thread count, and named errors."""
import numpy as np
import pytest

from minnet._ext import softmax_kernels as S

DTYPES = [np.float32, np.float64]
TOL = {np.float32: dict(rtol=1e-5, atol=1e-6), np.float64: dict(rtol=1e-12, atol=1e-13)}


def _ref_softmax(x):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _ref_backward(p, g, log):
    g = np.asarray(g, np.float64)
    if log:
        return g - p * g.sum(axis=1, keepdims=True)
    return p * (g - (g * p).sum(axis=1, keepdims=True))


def _grad_views(rng, shape, dtype):
    """name -> a (rows, cols) gradient view of each layout the kernel reads as it is."""
    rows, cols = shape
    wide = rng.standard_normal((rows, cols + 5)).astype(dtype)
    per_row = rng.standard_normal((rows, 1)).astype(dtype)
    one_row = rng.standard_normal((1, cols)).astype(dtype)
    return {
        "one value (.sum())": np.broadcast_to(dtype(0.75), shape),
        "one value per row": np.broadcast_to(per_row, shape),
        "one row for all rows": np.broadcast_to(one_row, shape),
        "rows of a wider array": wide[:, :cols],
    }


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (7, 3), (64, 10), (3, 1001), (300, 129)])
@pytest.mark.parametrize("log", [False, True])
def test_backward_reads_gradient_views(rng, dtype, shape, log):
    x = rng.standard_normal(shape).astype(dtype)
    y = S.softmax_forward(x, log=log)
    p = _ref_softmax(x)
    for name, g in _grad_views(rng, shape, dtype).items():
        dx = S.softmax_backward(y, g, log=log)
        np.testing.assert_allclose(dx, _ref_backward(p, g, log), **TOL[dtype], err_msg=name)
        if g.strides[1] != 0:
            # contiguous rows: the same arithmetic as on a C-contiguous copy
            np.testing.assert_array_equal(dx, S.softmax_backward(y, np.ascontiguousarray(g), log=log))
        for threads in (2, 3):
            np.testing.assert_array_equal(S.softmax_backward(y, g, log=log, n_threads=threads), dx)


def test_backward_copies_other_layouts_through_the_caller():
    # a column-strided gradient is neither layout: the kernel wrapper refuses it by name
    y = S.softmax_forward(np.zeros((3, 4)))
    with pytest.raises(ValueError, match="`grad`.*C-contiguous"):
        S.softmax_backward(y, np.zeros((3, 8))[:, ::2])
    with pytest.raises(ValueError, match="`grad`.*expected shape"):
        S.softmax_backward(y, np.broadcast_to(np.zeros(5), (3, 5)))
    with pytest.raises(TypeError, match="`grad`.*float64"):
        S.softmax_backward(y, np.zeros((3, 4), np.float32))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (7, 3), (3, 1001), (300, 129)])
def test_logsumexp_backward(rng, dtype, shape):
    x = (3 * rng.standard_normal(shape)).astype(dtype)
    out = S.logsumexp_rows(x)
    g = rng.standard_normal(shape[0]).astype(dtype)
    dx = S.logsumexp_backward(x, out, g)
    ref = g.astype(np.float64)[:, None] * _ref_softmax(x)
    np.testing.assert_allclose(dx, ref, **TOL[dtype])
    # strided and broadcast operands are read as they are
    wide = np.repeat(g, 2)[::2]
    np.testing.assert_array_equal(S.logsumexp_backward(x, out, wide), dx)
    const = np.broadcast_to(dtype(1.5), (shape[0],))
    np.testing.assert_allclose(S.logsumexp_backward(x, out, const), 1.5 * _ref_softmax(x), **TOL[dtype])
    for threads in (2, 3):
        np.testing.assert_array_equal(S.logsumexp_backward(x, out, g, n_threads=threads), dx)
    into = np.empty_like(x)
    assert S.logsumexp_backward(x, out, g, out=into) is into
    np.testing.assert_array_equal(into, dx)


def test_logsumexp_backward_non_finite_rows():
    # as PyTorch's g * exp(x - out): a row of -inf or holding +inf gives NaN
    x = np.array([[-np.inf, -np.inf], [np.inf, 0.0], [0.0, 0.0]], np.float32)
    dx = S.logsumexp_backward(x, S.logsumexp_rows(x), np.ones(3, np.float32))
    assert np.isnan(dx[0]).all() and np.isnan(dx[1, 0])
    np.testing.assert_allclose(dx[2], [0.5, 0.5], rtol=1e-6)


def test_logsumexp_backward_bad_arguments_raise_named_errors():
    x = np.zeros((3, 4))
    out = np.zeros(3)
    with pytest.raises(ValueError, match="`lse`.*expected shape"):
        S.logsumexp_backward(x, np.zeros(4), out)
    with pytest.raises(ValueError, match="`out`.*expected shape"):
        S.logsumexp_backward(x, out, out, out=np.zeros((4, 3)))
    with pytest.raises(TypeError, match="`grad`.*float64"):
        S.logsumexp_backward(x, out, np.zeros(3, np.float32))
    with pytest.raises(ValueError, match="`x`.*2-D"):
        S.logsumexp_backward(np.zeros(3), out, out)
    with pytest.raises(ValueError, match="`n_threads`"):
        S.logsumexp_backward(x, out, out, n_threads=0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("cols", [3, 40])          # the short-row path and the general one
def test_log_softmax_of_a_row_holding_inf_is_nan(dtype, cols):
    # as PyTorch (x - max - log(sum exp(x - max)) meets inf - inf); logsumexp stays +inf
    x = np.zeros((2, cols), dtype)
    x[0, 1] = np.inf
    y = S.softmax_forward(x, log=True)
    assert np.isnan(y[0]).all() and np.isfinite(y[1]).all()
    assert S.logsumexp_rows(x)[0] == np.inf
