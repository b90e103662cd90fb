"""stepgemm_kernels.h, the recurrent layers' per-step GEMM on a weight packed once: against a float64
NumPy product, for every instruction-set copy this CPU runs, and bit-identical however the
rows or the column panels are split (the property the batch parts and threads rely on; the
recurrent layers' thread-count test is in test_recurrent_kernels.py)."""
import numpy as np
import pytest

from minnet._ext import _base, stepgemm_kernels as R

BEST_ISA = R._stepgemm_isa(99)      # the best copy this CPU runs (capped); restored below
ISAS = list(range(BEST_ISA + 1))


@pytest.fixture(autouse=True)
def restore_isa_and_threads():
    old = _base.set_parallel_min(0)      # small products still take the threaded path
    yield
    R._stepgemm_isa(BEST_ISA)
    _base.set_parallel_min(old)


def reference(a, b, init, bias, c):
    start = {"c": c, "bias": np.broadcast_to(bias, c.shape), "zero": np.zeros_like(c)}[init]
    return start.astype(np.float64) + a.astype(np.float64) @ b.astype(np.float64)


def operands(rng, m, n, k, trans):
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((n, k) if trans else (k, n)).astype(np.float32)
    bias = rng.standard_normal(n).astype(np.float32)
    c = rng.standard_normal((m, n)).astype(np.float32)
    return a, b, bias, c


@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("m, n, k", [(1, 1, 1), (3, 5, 7), (8, 32, 16), (9, 33, 64),
                                     (13, 100, 130), (37, 40, 30), (64, 512, 192),
                                     (6, 64, 0), (7, 31, 3)])
@pytest.mark.parametrize("init", ["c", "bias", "zero"])
@pytest.mark.parametrize("trans", [False, True])
def test_matches_a_float64_product(isa, m, n, k, init, trans):
    R._stepgemm_isa(isa)
    rng = np.random.default_rng(m * 1000 + n * 10 + k)
    a, b, bias, c = operands(rng, m, n, k, trans)
    out = R._stepgemm(a, b, init, bias, c.copy(), trans=trans)
    expected = reference(a, b.T if trans else b, init, bias, c)
    # float32 sums of k products: error about k * eps * |terms|
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=2e-6 * max(k, 1) ** 0.5 * 4)


@pytest.mark.parametrize("isa", ISAS)
def test_splitting_rows_or_panels_does_not_change_a_bit(isa):
    R._stepgemm_isa(isa)
    rng = np.random.default_rng(3)
    a, b, bias, c = operands(rng, 37, 200, 75, True)
    whole = R._stepgemm(a, b, "bias", bias, c.copy(), trans=True)
    # each row alone: tiles of 1 row instead of the full tiles
    rows = np.concatenate([R._stepgemm(a[i:i + 1], b, "bias", bias, c[i:i + 1].copy(),
                                       trans=True) for i in range(37)])
    np.testing.assert_array_equal(rows, whole)
    # the column panels shared among threads
    for threads in (2, 3, 7):
        np.testing.assert_array_equal(
            R._stepgemm(a, b, "bias", bias, c.copy(), trans=True, n_threads=threads), whole)
    # columns 0..63 alone (two whole panels) are the first columns of the whole product
    np.testing.assert_array_equal(
        R._stepgemm(a, b[:64], "bias", bias[:64], c[:, :64].copy(), trans=True), whole[:, :64])


def test_accumulates_in_place_and_the_partial_last_panel_stays_in_its_rows():
    # n = 33: the second panel holds 1 real column and 31 of zero padding; writing them all
    # would overwrite the next row's first columns (computed before, in panel 0)
    rng = np.random.default_rng(4)
    a, b, _, c0 = operands(rng, 5, 33, 9, False)
    c = c0.copy()
    out = R._stepgemm(a, b, "c", None, c)
    assert out is c
    np.testing.assert_allclose(out, c0 + a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)


def test_nan_and_inf_propagate_like_a_product():
    a = np.ones((3, 4), np.float32)
    a[1, 2] = np.nan
    a[2, 0] = np.inf
    b = np.ones((4, 5), np.float32)
    out = R._stepgemm(a, b, "zero")
    assert np.all(out[0] == 4)
    assert np.all(np.isnan(out[1]))
    assert np.all(np.isposinf(out[2]))


def test_bad_operands_raise():
    a = np.ones((3, 4), np.float32)
    with pytest.raises(ValueError, match="Bfull"):
        R._stepgemm(a, np.ones((5, 5), np.float32))
    with pytest.raises(ValueError, match="`A`"):
        R._stepgemm(a.astype(np.float64), np.ones((4, 5), np.float32))
