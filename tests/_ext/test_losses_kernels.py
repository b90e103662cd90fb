"""minnet._ext.losses_kernels against plain NumPy references (float32 and float64)."""
import numpy as np
import pytest

from minnet._ext import losses_kernels as K

from _harness import TOLERANCES

DTYPES = [np.float32, np.float64]
TOL = TOLERANCES["elementwise"]


def _log_softmax(x):
    x = x.astype(np.float64)
    m = x.max(axis=1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=1, keepdims=True))


def _smoothed(target, eps):
    return (1 - eps) * target + eps / target.shape[1]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (1, 10), (7, 3), (64, 10), (3, 1001), (4000, 17)])
@pytest.mark.parametrize("eps", [0.0, 0.1, 1.0])
def test_cross_entropy_with_labels(rng, dtype, shape, eps):
    n, c = shape
    x = (rng.standard_normal(shape) * 3).astype(dtype)
    labels = rng.integers(0, c, n)
    onehot = np.eye(c)[labels]
    t = _smoothed(onehot, eps)
    logp = _log_softmax(x)
    loss, lse = K.cross_entropy_forward(x, labels, eps)
    assert loss.dtype == dtype and loss.shape == (n,)
    np.testing.assert_allclose(loss, -(t * logp).sum(axis=1), **TOL[dtype])
    g = rng.standard_normal(n).astype(dtype)
    dx = K.cross_entropy_backward(x, labels, lse, g, eps)
    np.testing.assert_allclose(dx, (np.exp(logp) - t) * g[:, None], **TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("eps", [0.0, 0.2])
@pytest.mark.parametrize("normalised", [True, False])
def test_cross_entropy_with_probabilities(rng, dtype, eps, normalised):
    x = (rng.standard_normal((9, 5)) * 3).astype(dtype)
    p = rng.random((9, 5))
    if normalised:
        p /= p.sum(axis=1, keepdims=True)
    p = p.astype(dtype)
    t = _smoothed(p.astype(np.float64), eps)
    logp = _log_softmax(x)
    loss, lse = K.soft_cross_entropy_forward(x, p, eps)
    np.testing.assert_allclose(loss, -(t * logp).sum(axis=1), **TOL[dtype])
    g = rng.standard_normal(9).astype(dtype)
    dx = K.soft_cross_entropy_backward(x, p, lse, g, eps)
    ref = (t.sum(axis=1, keepdims=True) * np.exp(logp) - t) * g[:, None]
    np.testing.assert_allclose(dx, ref, **TOL[dtype])


def test_cross_entropy_extreme_logits_are_finite():
    for dtype in DTYPES:
        x = np.array([[1e4, -1e4, 0.0], [-1e4, -1e4, -1e4], [-1e4, 1e4, 1e4]], dtype)
        labels = np.array([1, 2, 0])
        loss, lse = K.cross_entropy_forward(x, labels, 0.1)
        assert np.all(np.isfinite(loss)) and np.all(np.isfinite(lse))
        np.testing.assert_allclose(loss[:2], [0.9 * 2e4 + 0.1 / 3 * 3e4, np.log(3)], rtol=1e-5)
        dx = K.cross_entropy_backward(x, labels, lse, np.ones(3, dtype), 0.1)
        assert np.all(np.isfinite(dx))
        np.testing.assert_allclose(dx.sum(axis=1), 0, atol=1e-5)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("size", [1, 7, 4096, 4097, 100003])
def test_squared_error(rng, dtype, size):
    p = rng.standard_normal(size).astype(dtype)
    t = rng.standard_normal(size).astype(dtype)
    d = p.astype(np.float64) - t
    total = K.squared_error_sum(p, t)
    assert isinstance(total, float)
    np.testing.assert_allclose(total, (d * d).sum(), rtol=1e-12)
    dp, dt = K.squared_error_backward(p, t, 0.5, want_target=True)
    np.testing.assert_allclose(dp, 0.5 * d, **TOL[dtype])
    np.testing.assert_array_equal(dt, -dp)
    dp2, none = K.squared_error_backward(p.reshape(1, -1), t.reshape(1, -1), 0.5)
    assert none is None and dp2.shape == (1, size)


def test_thread_count_does_not_change_results(rng):
    x = rng.standard_normal((3000, 21))
    labels = rng.integers(0, 21, 3000)
    a = K.cross_entropy_forward(x, labels, 0.1, n_threads=1)
    b = K.cross_entropy_forward(x, labels, 0.1, n_threads=2)
    np.testing.assert_array_equal(a[0], b[0])
    g = rng.standard_normal(3000)
    np.testing.assert_array_equal(K.cross_entropy_backward(x, labels, a[1], g, 0.1, n_threads=1),
                                  K.cross_entropy_backward(x, labels, a[1], g, 0.1, n_threads=3))
    p, t = rng.standard_normal((2, 200001))
    # Fixed blocks summed in order: the same bits for any thread count.
    assert K.squared_error_sum(p, t, n_threads=1) == K.squared_error_sum(p, t, n_threads=2)


def test_bad_arguments_raise_named_errors():
    x = np.zeros((3, 4))
    with pytest.raises(ValueError, match=r"`target`.*\[0, 4\).*-1"):
        K.cross_entropy_forward(x, np.array([0, -1, 2]))
    with pytest.raises(ValueError, match=r"`target`.*\[0, 4\).*4"):
        K.cross_entropy_forward(x, np.array([0, 4, 2]))
    with pytest.raises(ValueError, match=r"`target`.*\(3,\)"):
        K.cross_entropy_forward(x, np.array([0, 1]))
    with pytest.raises(TypeError, match="`target`.*int64"):
        K.cross_entropy_forward(x, np.array([0.0, 1.0, 2.0]))
    with pytest.raises(ValueError, match="`logits`.*2-D"):
        K.cross_entropy_forward(np.zeros(4), np.array([0]))
    with pytest.raises(ValueError, match="`logits`.*at least one class"):
        K.cross_entropy_forward(np.zeros((3, 0)), np.array([0, 0, 0]))
    with pytest.raises(ValueError, match="`label_smoothing`"):
        K.cross_entropy_forward(x, np.array([0, 1, 2]), 1.5)
    with pytest.raises(ValueError, match="`target`.*shape"):
        K.soft_cross_entropy_forward(x, np.zeros((3, 5)))
    with pytest.raises(TypeError, match="`target`.*float64"):
        K.squared_error_sum(x, x.astype(np.float32))
