"""convgemm_kernels.h, the convolution's own float32 GEMM (``conv_kernels.gemm_f32``): against a float64
NumPy product for every instruction-set copy this CPU runs, every transpose and beta, and
bit-identical however C is split into blocks or threads (the property conv_kernels.pyx and
winograd_kernels.pyx rely on to split the products freely; the convolutions' own thread-count tests
are in test_conv_kernels.py and test_conv_nhwc_kernels.py)."""
import numpy as np
import pytest

from minnet._ext import conv_kernels

BEST_ISA = conv_kernels.gemm_f32(np.zeros((1, 1), np.float32), np.zeros((1, 1), np.float32),
                          np.zeros((1, 1), np.float32), isa=99)
ISAS = list(range(BEST_ISA + 1))


@pytest.fixture(autouse=True)
def restore_isa():
    yield
    conv_kernels.gemm_f32(np.zeros((1, 1), np.float32), np.zeros((1, 1), np.float32),
                   np.zeros((1, 1), np.float32), isa=BEST_ISA)


def operands(rng, m, n, k, trans_a, trans_b):
    a = rng.standard_normal((k, m) if trans_a else (m, k)).astype(np.float32)
    b = rng.standard_normal((n, k) if trans_b else (k, n)).astype(np.float32)
    c = rng.standard_normal((m, n)).astype(np.float32)
    return a, b, c


def reference(a, b, c, beta, trans_a, trans_b):
    a64 = (a.T if trans_a else a).astype(np.float64)
    b64 = (b.T if trans_b else b).astype(np.float64)
    return beta * c.astype(np.float64) + a64 @ b64


@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("m, n, k", [(1, 1, 1), (3, 5, 7), (8, 32, 16), (9, 33, 300),
                                     (64, 784, 288), (97, 40, 530), (6, 64, 0)])
@pytest.mark.parametrize("trans_a, trans_b", [(False, False), (True, False), (False, True),
                                              (True, True)])
@pytest.mark.parametrize("beta", [0.0, 1.0, 0.5])
def test_matches_a_float64_product(isa, m, n, k, trans_a, trans_b, beta):
    conv_kernels.gemm_f32(np.zeros((1, 1), np.float32), np.zeros((1, 1), np.float32),
                   np.zeros((1, 1), np.float32), isa=isa)
    rng = np.random.default_rng(m * 1000 + n * 10 + k)
    a, b, c = operands(rng, m, n, k, trans_a, trans_b)
    out = c.copy()
    if beta == 0.0:
        out[...] = np.nan            # beta = 0: C is not read
    assert conv_kernels.gemm_f32(a, b, out, beta, trans_a, trans_b, isa=isa) == isa
    expected = reference(a, b, c, beta, trans_a, trans_b)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=2e-6 * max(k, 1) ** 0.5 * 4)


def test_2048_cube_against_numpy():
    """Several K, M and N blocks (KC = 256, MC = 96, NC = 2048) at once."""
    rng = np.random.default_rng(7)
    a, b, _ = operands(rng, 300, 2100, 600, False, False)
    out = np.empty((300, 2100), np.float32)
    conv_kernels.gemm_f32(a, b, out)
    np.testing.assert_allclose(out, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("isa", ISAS)
def test_splitting_c_or_threads_does_not_change_a_bit(isa):
    rng = np.random.default_rng(3)
    a, b, c = operands(rng, 101, 333, 517, True, False)
    whole = c.copy()
    conv_kernels.gemm_f32(a, b, whole, 1.0, True, False, n_threads=1, isa=isa)
    for threads in (2, 3, 7):
        other = c.copy()
        conv_kernels.gemm_f32(a, b, other, 1.0, True, False, n_threads=threads, isa=isa)
        np.testing.assert_array_equal(other, whole)
    rows = c.copy()       # each row alone: edge tiles of one row instead of full tiles
    for i in range(101):
        conv_kernels.gemm_f32(np.ascontiguousarray(a[:, i:i + 1]), b, rows[i:i + 1], 1.0, True, False,
                       isa=isa)
    np.testing.assert_array_equal(rows, whole)
    cols = c.copy()
    for j0 in range(0, 333, 50):
        part = np.ascontiguousarray(cols[:, j0:j0 + 50])
        conv_kernels.gemm_f32(a, np.ascontiguousarray(b[:, j0:j0 + 50]), part, 1.0, True, False,
                       isa=isa)
        cols[:, j0:j0 + 50] = part
    np.testing.assert_array_equal(cols, whole)


def test_bad_shapes_are_named():
    a = np.zeros((3, 4), np.float32)
    with pytest.raises(ValueError, match="`a`, `b`, `c`"):
        conv_kernels.gemm_f32(a, np.zeros((5, 2), np.float32), np.zeros((3, 2), np.float32))
