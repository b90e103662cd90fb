"""minnet._ext.layernorm_kernels against NumPy, both dtypes, with and without the affine step."""
import numpy as np
import pytest

import minnet  # noqa: F401
from minnet._ext import layernorm_kernels as K


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("rows, d", [(1, 1), (5, 7), (70, 33)])
def test_forward_backward_match_numpy(rng, dtype, rows, d):
    x = (rng.standard_normal((rows, d)) * 3 + 2).astype(dtype)
    gamma = rng.standard_normal(d).astype(dtype)
    beta = rng.standard_normal(d).astype(dtype)
    g = rng.standard_normal((rows, d)).astype(dtype)
    y, mean, rstd = K.layernorm_forward(x, gamma, beta, 1e-3)
    x64 = x.astype(np.float64)
    mu = x64.mean(1, keepdims=True)
    inv = 1 / np.sqrt(x64.var(1, keepdims=True) + 1e-3)
    xhat = (x64 - mu) * inv
    tol = dict(rtol=2e-4, atol=2e-5) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(y, xhat * gamma + beta, **tol)
    dx, dgamma, dbeta = K.layernorm_backward(x, g, mean, rstd, gamma)
    dxhat = g * gamma
    want = inv * (dxhat - dxhat.mean(1, keepdims=True) - xhat * (dxhat * xhat).mean(1, keepdims=True))
    np.testing.assert_allclose(dx, want, **tol)
    np.testing.assert_allclose(dgamma, (g * xhat).sum(0), **tol)
    np.testing.assert_allclose(dbeta, g.sum(0), **tol)
    y2, _, _ = K.layernorm_forward(x, None, None, 1e-3)
    np.testing.assert_allclose(y2, xhat, **tol)
    dx2, none1, none2 = K.layernorm_backward(x, g, mean, rstd, None)
    assert none1 is None and none2 is None


def test_bad_inputs():
    with pytest.raises(ValueError, match="`gamma`"):
        K.layernorm_forward(np.zeros((2, 3)), np.zeros(4), np.zeros(3))
    with pytest.raises(ValueError, match="`x`"):
        K.layernorm_forward(np.zeros(3))
    with pytest.raises(ValueError, match="`eps`"):
        K.layernorm_forward(np.zeros((2, 3)), eps=-1.0)
