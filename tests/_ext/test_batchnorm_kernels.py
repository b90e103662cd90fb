"""minnet._ext.batchnorm_kernels against plain NumPy (float64 references)."""
import numpy as np
import pytest

from minnet._ext import batchnorm_kernels as B

from _harness import TOLERANCES

TOL = TOLERANCES["kernel_batchnorm"]

# (N, C) features, few channels (C < threads: "by sample"), many channels ("by channel"),
# short planes (L < 16), batch of 1, odd sizes.
SHAPES = [(33, 17), (2, 1), (5, 3, 7, 9), (2, 1, 20, 20), (1, 6, 5, 5), (4, 8, 6, 6), (3, 2, 1, 1)]


def _axes(x):
    return (0,) + tuple(range(2, x.ndim))


def _bc(v, x):
    return v.reshape((1, -1) + (1,) * (x.ndim - 2))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("n_threads", [1, 2, 3])
def test_stats_vs_numpy(dtype, shape, n_threads):
    x = (np.random.default_rng(0).standard_normal(shape) * 2 + 3).astype(dtype)
    mean, var = B.batch_norm_stats(x, n_threads)
    x64 = x.astype(np.float64)
    assert mean.dtype == np.float64 and mean.shape == (shape[1],)
    np.testing.assert_allclose(mean, x64.mean(_axes(x)), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(var, x64.var(_axes(x)), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("shape", [(64, 3), (8, 4, 32, 32), (8, 1, 32, 32)])
def test_stats_accurate_with_large_mean(shape):
    # float32 data with mean/std = 1e4: E[x^2] - E[x]^2 would lose every digit.
    x = (1e4 + np.random.default_rng(1).standard_normal(shape)).astype(np.float32)
    for n_threads in (1, 2):
        mean, var = B.batch_norm_stats(x, n_threads)
        np.testing.assert_allclose(var, x.astype(np.float64).var(_axes(x)), rtol=1e-9)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", SHAPES)
def test_affine_vs_numpy(dtype, shape):
    rng = np.random.default_rng(2)
    x = rng.standard_normal(shape).astype(dtype)
    a, b = rng.standard_normal(shape[1]), rng.standard_normal(shape[1])
    out = B.batch_norm_affine(x, a, b, n_threads=2)
    assert out.dtype == dtype and out.shape == shape
    np.testing.assert_allclose(out, x * _bc(a, x).astype(dtype) + _bc(b, x).astype(dtype), **TOL[dtype])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("n_threads", [1, 2])
def test_grad_sums_and_dx_vs_numpy(dtype, shape, n_threads):
    rng = np.random.default_rng(3)
    x = rng.standard_normal(shape).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    mean = x.astype(np.float64).mean(_axes(x))
    sum_g, dot = B.batch_norm_grad_sums(g, x, mean, n_threads)
    g64, x64 = g.astype(np.float64), x.astype(np.float64)
    np.testing.assert_allclose(sum_g, g64.sum(_axes(x)), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(dot, (g64 * (x64 - _bc(mean, x))).sum(_axes(x)), rtol=1e-10, atol=1e-10)
    mg, proj, k = rng.standard_normal((3, shape[1]))
    dx = B.batch_norm_backward_input(g, x, mean, mg, proj, k, n_threads)
    expected = (g64 - _bc(mg, x) - (x64 - _bc(mean, x)) * _bc(proj, x)) * _bc(k, x)
    np.testing.assert_allclose(dx, expected, **TOL[dtype])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("n_threads", [1, 2])
def test_fused_training_passes_vs_numpy(dtype, shape, n_threads):
    # Covers both the fused by-channel path and the composed fallback (short planes, few C).
    rng = np.random.default_rng(5)
    x = (rng.standard_normal(shape) + 2).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    w, b = rng.standard_normal((2, shape[1]))
    eps = 1e-5
    out, mean, var = B.batch_norm_forward_training(x, w, b, eps, n_threads)
    x64, g64, ax = x.astype(np.float64), g.astype(np.float64), _axes(x)
    mu, v = x64.mean(ax), x64.var(ax)
    np.testing.assert_allclose(mean, mu, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(var, v, rtol=1e-12, atol=1e-12)
    inv = 1 / np.sqrt(v + eps)
    xhat = (x64 - _bc(mu, x)) * _bc(inv, x)
    np.testing.assert_allclose(out, xhat * _bc(w, x) + _bc(b, x), **TOL[dtype])
    M = x.size // shape[1]
    dx, sum_g, dot = B.batch_norm_backward_training(g, x, mu, inv, w, True, n_threads)
    np.testing.assert_allclose(sum_g, g64.sum(ax), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(dot * inv, (g64 * xhat).sum(ax), rtol=1e-10, atol=1e-10)
    expected = _bc(w * inv / M, x) * (M * g64 - _bc(g64.sum(ax), x) - xhat * _bc((g64 * xhat).sum(ax), x))
    np.testing.assert_allclose(dx, expected, rtol=TOL[dtype]["rtol"], atol=10 * TOL[dtype]["atol"])
    assert B.batch_norm_backward_training(g, x, mu, inv, w, False, n_threads)[0] is None


def test_results_do_not_depend_on_threads_by_channel():
    x = np.random.default_rng(4).standard_normal((4, 8, 6, 6))
    m1, v1 = B.batch_norm_stats(x, 1)
    m2, v2 = B.batch_norm_stats(x, 2)
    np.testing.assert_array_equal(m1, m2)
    np.testing.assert_array_equal(v1, v2)


def test_errors():
    with pytest.raises(TypeError, match="`x`.*float32 or float64"):
        B.batch_norm_stats(np.ones((2, 3), np.int32))
    with pytest.raises(ValueError, match="`x`.*Received: shape="):
        B.batch_norm_stats(np.ones(3))
    with pytest.raises(ValueError, match="`alpha`.*expected shape \\(3,\\)"):
        B.batch_norm_affine(np.ones((2, 3)), np.ones(2), np.ones(3))
    with pytest.raises(ValueError, match="`grad`"):
        B.batch_norm_grad_sums(np.ones((2, 4)), np.ones((2, 3)), np.zeros(3))


# ------------------------------------------------------------ channels-last (M, C)

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(33, 17), (2, 1), (5, 7, 9, 3), (1, 20, 20, 2), (300, 5),
                                   (3, 1, 1, 2),
                                   # more channels than one 64-channel block of the sums
                                   (3, 5, 11, 64), (2, 9, 8, 70), (130, 129)])
def test_channels_last_kernels_vs_numpy_and_thread_count(dtype, shape):
    rng = np.random.default_rng(31)
    x = (rng.standard_normal(shape) * 3 + 2).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    C = shape[-1]
    ax = tuple(range(len(shape) - 1))
    x64, g64 = x.astype(np.float64), g.astype(np.float64)
    gamma, beta = rng.standard_normal(C), rng.standard_normal(C)
    results = []
    for nt in (1, 2, 3, 7):
        mean, var = B.batch_norm_stats(x, nt, channels_last=True)
        out, m2, v2 = B.batch_norm_forward_training(x, gamma, beta, 1e-5, nt, channels_last=True)
        inv = 1 / np.sqrt(var + 1e-5)
        dx, sg, dot = B.batch_norm_backward_training(g, x, mean, inv, gamma, True, nt,
                                                     channels_last=True)
        results.append((mean, var, out, dx, sg, dot))
    for other in results[1:]:                        # fixed-order sums: bit-identical
        for a, b in zip(results[0], other):
            np.testing.assert_array_equal(a, b)
    mean, var, out, dx, sg, dot = results[0]
    np.testing.assert_allclose(mean, x64.mean(ax), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(var, x64.var(ax), rtol=1e-10, atol=1e-12)
    xhat = (x64 - mean) / np.sqrt(var + 1e-5)
    np.testing.assert_allclose(out, xhat * gamma + beta, **TOL[dtype])
    M = x.size // C
    np.testing.assert_allclose(sg, g64.sum(ax), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(dot, (g64 * (x64 - mean)).sum(ax), rtol=1e-9, atol=1e-9)
    ref = gamma / np.sqrt(var + 1e-5) / M * (M * g64 - g64.sum(ax) - xhat * (g64 * xhat).sum(ax))
    np.testing.assert_allclose(dx, ref, rtol=1e-4 if dtype == np.float32 else 1e-9,
                               atol=1e-4 if dtype == np.float32 else 1e-10)
    y = B.batch_norm_affine(x, gamma, beta, 2, channels_last=True)
    np.testing.assert_allclose(y, x64 * gamma + beta, **TOL[dtype])


def test_channels_last_shape_errors():
    with pytest.raises(ValueError, match="grad"):
        B.batch_norm_grad_sums(np.zeros((2, 3), np.float32), np.zeros((3, 2), np.float32),
                               np.zeros(2), channels_last=True)
    with pytest.raises(ValueError, match="alpha"):
        B.batch_norm_affine(np.zeros((2, 3)), np.ones(2), np.ones(3), channels_last=True)
