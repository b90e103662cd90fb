"""The BLAS layer: row-major GEMM over scipy's sgemm/dgemm, against NumPy."""
import pathlib

import numpy as np
import pytest
from scipy.linalg import blas

from minnet._ext._blas import gemm_batched, py_gemm

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


# --------------------------------------------------------------------------- gemm_batched

def _op(x, trans):
    return np.swapaxes(x, 1, 2) if trans else x


@pytest.mark.parametrize("dtype, tol", [(np.float32, 1e-4), (np.float64, 1e-12)])
@pytest.mark.parametrize("batch, m, n, k", [(1, 40, 50, 60), (5, 3, 7, 4), (9, 60, 50, 70)])
@pytest.mark.parametrize("trans_a", [False, True])
@pytest.mark.parametrize("trans_b", [False, True])
@pytest.mark.parametrize("n_threads", [1, 2])
def test_gemm_batched_matches_numpy(dtype, tol, batch, m, n, k, trans_a, trans_b, n_threads):
    rng = np.random.default_rng(batch * m + n)
    a = rng.standard_normal((batch, k, m) if trans_a else (batch, m, k)).astype(dtype)
    b = rng.standard_normal((batch, n, k) if trans_b else (batch, k, n)).astype(dtype)
    c = np.full((batch, m, n), np.nan, dtype)
    assert gemm_batched(a, b, c, trans_a=trans_a, trans_b=trans_b, n_threads=n_threads) is c
    expected = np.matmul(_op(a, trans_a).astype(np.float64), _op(b, trans_b).astype(np.float64))
    np.testing.assert_allclose(c, expected, rtol=tol, atol=tol * k)


def test_gemm_batched_reads_strided_and_broadcast_operands():
    rng = np.random.default_rng(3)
    # items with a row stride longer than a row (a slice of wider rows), and an operand
    # broadcast over the batch (batch stride 0, read-only)
    wide = rng.standard_normal((6, 5, 11))
    a = wide[:, :, 2:9]                                   # (6, 5, 7), row stride 11
    b = np.broadcast_to(rng.standard_normal((1, 7, 4)), (6, 7, 4))
    c = np.empty((6, 5, 4))
    gemm_batched(a, b, c, n_threads=2)
    np.testing.assert_allclose(c, np.matmul(a, b), rtol=1e-12, atol=1e-12)


def test_gemm_batched_is_bit_identical_at_any_thread_count():
    rng = np.random.default_rng(5)
    a = rng.standard_normal((16, 64, 96)).astype(np.float32)
    b = rng.standard_normal((16, 96, 80)).astype(np.float32)
    results = []
    for n_threads in (1, 2, 3, 4):
        c = np.empty((16, 64, 80), np.float32)
        gemm_batched(a, b, c, n_threads=n_threads)
        results.append(c.tobytes())
    assert all(r == results[0] for r in results)
    single = np.empty((64, 80), np.float32)               # each item is the 2-D product
    py_gemm(a[3], b[3], c=single)
    assert single.tobytes() == np.frombuffer(results[0], np.float32).reshape(16, 64, 80)[3].tobytes()


def test_gemm_batched_empty_and_k_zero():
    c = np.full((3, 2, 4), np.nan)
    gemm_batched(np.zeros((3, 2, 0)), np.zeros((3, 0, 4)), c)
    np.testing.assert_array_equal(c, np.zeros((3, 2, 4)))
    gemm_batched(np.zeros((0, 2, 5)), np.zeros((0, 5, 4)), np.zeros((0, 2, 4)))


def test_gemm_batched_errors_name_the_argument():
    a = np.zeros((2, 3, 4), np.float32)
    b = np.zeros((2, 4, 5), np.float32)
    c = np.zeros((2, 3, 5), np.float32)
    with pytest.raises(ValueError, match="`a`.*3-D.*\\(3, 4\\)"):
        gemm_batched(a[0], b, c)
    with pytest.raises(TypeError, match="`b`.*float32.*float64"):
        gemm_batched(a, b.astype(np.float64), c)
    with pytest.raises(TypeError, match="`a`.*int64"):
        gemm_batched(a.astype(np.int64), b, c)
    with pytest.raises(ValueError, match="`a`, `b`.*\\(2, 3, 4\\).*\\(2, 3, 5\\)"):
        gemm_batched(a, np.zeros((2, 3, 5), np.float32), c)
    with pytest.raises(ValueError, match="`c`.*\\(2, 3, 5\\)"):
        gemm_batched(a, b, np.zeros((2, 5, 3), np.float32))
    with pytest.raises(ValueError, match="`a`.*unit column stride.*strides"):
        gemm_batched(np.zeros((2, 4, 3), np.float32).transpose(0, 2, 1), b, c)
    with pytest.raises(ValueError, match="`n_threads`"):
        gemm_batched(a, b, c, n_threads=0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gemm_calls_scipys_blas(dtype):
    # _blas takes sgemm/dgemm from scipy.linalg.cython_blas.__pyx_capi__ at import: the
    # same Fortran routine scipy.linalg.blas calls, so the same call gives the same bits
    # (minnet computes C^T = B^T A^T column-major, which is scipy's gemm(1, b.T, a.T)).
    rng = np.random.default_rng(7)
    a = rng.standard_normal((64, 80)).astype(dtype)
    b = rng.standard_normal((80, 48)).astype(dtype)
    scipy_gemm = blas.sgemm if dtype == np.float32 else blas.dgemm
    np.testing.assert_array_equal(py_gemm(a, b), scipy_gemm(1.0, b.T, a.T).T)


def _requirements(pyproject, section):
    """The quoted requirement lines of one ``[section]`` of pyproject.toml."""
    body = ("\n" + pyproject).split(f"\n[{section}]\n", 1)[1].split("\n[", 1)[0]
    return [line.strip() for line in body.splitlines() if line.strip().startswith('"')]


def test_building_needs_no_scipy():
    # The build environment pip makes installs only what pyproject.toml asks for; SciPy
    # is a runtime dependency only (its BLAS pointers are looked up at import).
    root = pathlib.Path(__file__).resolve().parents[2]
    pyproject = (root / "pyproject.toml").read_text()
    build = _requirements(pyproject, "build-system")
    assert build and not [r for r in build if "scipy" in r.lower()]
    assert [r for r in _requirements(pyproject, "project") if r.startswith('"scipy')]
    blas_source = (root / "minnet" / "_ext" / "_blas.pyx").read_text().splitlines()
    assert not [line for line in blas_source if "cimport" in line and "scipy" in line]
