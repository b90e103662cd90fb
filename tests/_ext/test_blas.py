"""The BLAS layer: row-major GEMM over scipy's sgemm/dgemm, against NumPy."""
import numpy as np
import pytest

from minnet._ext._blas import py_gemm

SHAPES = [(1, 1, 1), (3, 5, 7), (17, 1, 9), (64, 33, 129), (5, 200, 3), (128, 96, 80)]


@pytest.mark.parametrize("dtype,tol", [(np.float32, 2e-5), (np.float64, 1e-12)])
@pytest.mark.parametrize("m,n,k", SHAPES)
@pytest.mark.parametrize("trans_a", [False, True])
@pytest.mark.parametrize("trans_b", [False, True])
@pytest.mark.parametrize("n_threads", [1, 2])
def test_gemm_matches_numpy(dtype, tol, m, n, k, trans_a, trans_b, n_threads):
    rng = np.random.default_rng(m * 1000 + n * 10 + k)
    a = rng.standard_normal((k, m) if trans_a else (m, k)).astype(dtype)
    b = rng.standard_normal((n, k) if trans_b else (k, n)).astype(dtype)
    ref = (a.T if trans_a else a).astype(np.float64) @ (b.T if trans_b else b).astype(np.float64)
    c = py_gemm(a, b, trans_a=trans_a, trans_b=trans_b, n_threads=n_threads)
    assert c.dtype == dtype and c.shape == (m, n)
    np.testing.assert_allclose(c, ref, rtol=tol, atol=tol * np.sqrt(k))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gemm_alpha_beta_accumulate(dtype):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((40, 30)).astype(dtype)
    b = rng.standard_normal((30, 50)).astype(dtype)
    c = rng.standard_normal((40, 50)).astype(dtype)
    expected = 0.5 * (a @ b) + 2.0 * c
    out = py_gemm(a, b, alpha=0.5, beta=2.0, c=c.copy(), n_threads=2)
    np.testing.assert_allclose(out, expected, rtol=1e-4 if dtype == np.float32 else 1e-12, atol=1e-4)


def test_gemm_empty_inner_dimension_gives_zeros():
    c = py_gemm(np.ones((3, 0)), np.ones((0, 4)))
    np.testing.assert_array_equal(c, np.zeros((3, 4)))


def test_gemm_rejects_bad_input():
    with pytest.raises(ValueError, match="inner dimensions"):
        py_gemm(np.ones((3, 4)), np.ones((5, 2)))
    with pytest.raises(TypeError, match="dtype"):
        py_gemm(np.ones((3, 4)), np.ones((4, 2), dtype=np.float32))
    with pytest.raises(TypeError, match="float32 or float64"):
        py_gemm(np.ones((3, 4), dtype=int), np.ones((4, 2), dtype=int))
    with pytest.raises(ValueError, match="2-D"):
        py_gemm(np.ones(3), np.ones((3, 2)))


def test_gemm_noncontiguous_operands_are_handled():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((8, 12))[:, ::2]
    b = rng.standard_normal((6, 9))
    np.testing.assert_allclose(py_gemm(a, b), a @ b, rtol=1e-12)
