"""Kernels of minnet._ext.linear_kernels against plain NumPy references (float32 and float64)."""
import numpy as np
import pytest

import minnet as mn

from minnet._config import get_num_threads
from minnet._ext import linear_kernels
from minnet._ext._blas import py_gemm
from minnet._ext.conv_kernels import gemm_f32

from _harness import TOLERANCES


@pytest.fixture(autouse=True, scope="module")
def _single_threaded_blas():
    get_num_threads()


TOL = TOLERANCES["gemm"]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(1, 1, 1), (5, 7, 3), (64, 33, 17), (3, 300, 1)])
def test_linear(shape, dtype, rng):
    n, n_in, n_out = shape
    x = rng.standard_normal((n, n_in)).astype(dtype)
    w = rng.standard_normal((n_out, n_in)).astype(dtype)
    b = rng.standard_normal(n_out).astype(dtype)
    dy = rng.standard_normal((n, n_out)).astype(dtype)
    for n_threads in (1, 2):
        y = linear_kernels.linear_forward(x, w, b, n_threads=n_threads)
        np.testing.assert_allclose(y, x.astype(np.float64) @ w.T + b, **TOL[dtype])
        np.testing.assert_allclose(linear_kernels.linear_forward(x, w, None, n_threads=n_threads),
                                   x.astype(np.float64) @ w.T, **TOL[dtype])
        dx, dw, db = linear_kernels.linear_backward(x, w, dy, n_threads=n_threads)
        np.testing.assert_allclose(dx, dy.astype(np.float64) @ w, **TOL[dtype])
        np.testing.assert_allclose(dw, dy.astype(np.float64).T @ x, **TOL[dtype])
        np.testing.assert_allclose(db, dy.astype(np.float64).sum(0), **TOL[dtype])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("shape", [(64, 784, 256), (33, 600, 130), (2, 1000, 70), (17, 129, 1025)])
def test_linear_forward_transposed_path_matches_numpy(dtype, n_threads, shape):
    # out_features * in_features >= linear_kernels.TRANSPOSED_MIN: computed as (W X^T)^T + b
    n, k, m = shape
    assert m * k >= linear_kernels.TRANSPOSED_MIN
    rng = np.random.default_rng(n + k + m)
    x = rng.standard_normal((n, k)).astype(dtype)
    w = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal(m).astype(dtype)
    y = linear_kernels.linear_forward(x, w, b, n_threads=n_threads)
    ref = x.astype(np.float64) @ w.T.astype(np.float64) + b
    tol = 1e-4 if dtype == np.float32 else 1e-11
    assert y.shape == (n, m) and y.dtype == dtype and y.flags.c_contiguous
    np.testing.assert_allclose(y, ref, rtol=tol, atol=tol * np.sqrt(k))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("shape", [
    (64, 784, 256),    # transposed path, every 4 x 4 SSE block full
    (67, 600, 131),    # transposed path, 3 rows and 3 columns left over the 4 x 4 blocks
    (3, 1000, 70),     # transposed path, fewer rows than one block
    (300, 520, 129),   # transposed path, more than one 16-row task per thread
    (64, 256, 128),    # direct path
    (5, 7, 3),         # direct path, tiny
    (4, 0, 3),         # no input features: Y is the bias
])
def test_linear_forward_fused_relu_is_relu_of_linear(dtype, n_threads, shape):
    # relu=True must give exactly where(y < 0, 0, y) of the unfused output: the same add,
    # then the select (NaN and -0.0 pass through, as the relu kernel and torch.relu).
    n, k, m = shape
    rng = np.random.default_rng(n * 7 + k + m)
    x = rng.standard_normal((n, k)).astype(dtype)
    w = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal(m).astype(dtype)
    if k:
        x[n // 2, 0] = np.nan                  # one NaN row in the output
        w[m // 2] = 0.0                        # one output column of exactly the bias ...
    b[m // 2] = -0.0                           # ... which is -0.0: stays -0.0
    for bias in (b, None):
        y = linear_kernels.linear_forward(x, w, bias, n_threads=n_threads)
        yr = linear_kernels.linear_forward(x, w, bias, n_threads=n_threads, relu=True)
        expected = np.where(y < 0, 0, y).astype(dtype)
        assert yr.dtype == dtype and yr.shape == (n, m) and yr.flags.c_contiguous
        np.testing.assert_array_equal(yr, expected)
        assert np.array_equal(np.signbit(yr), np.signbit(expected))
        if k:
            assert np.isnan(yr[n // 2]).any()
    ref = x.astype(np.float64) @ w.T.astype(np.float64) + b
    ref = np.maximum(ref, 0)
    tol = 1e-4 if dtype == np.float32 else 1e-11
    rows = [i for i in range(n) if i != n // 2] if k else list(range(n))
    np.testing.assert_allclose(linear_kernels.linear_forward(x, w, b, n_threads=n_threads, relu=True)[rows],
                               ref[rows], rtol=tol, atol=tol * np.sqrt(max(k, 1)))


def _takes_own_gemm(m, n, k):
    return m * n * k <= linear_kernels.OWN_GEMM_MAX and m * n <= linear_kernels.OWN_GEMM_MAX_OUT


# (batch, in, out) on each side of the rule: 784 -> 256 at batch 64, all three products on
# minnet's own float32 GEMM; 1024 -> 1024 at batch 128 all on the BLAS (too many
# multiply-adds); 1024 -> 600 at batch 8, forward and dX own, dW's 600 x 1024 result BLAS.
@pytest.mark.parametrize("batch, fin, fout, owns", [(64, 784, 256, (True, True, True)),
                                                    (3, 5, 7, (True, True, True)),
                                                    (128, 1024, 1024, (False, False, False)),
                                                    (8, 1024, 600, (True, True, False))])
def test_float32_products_take_the_gemm_the_size_rule_names(batch, fin, fout, owns):
    rng = np.random.default_rng(batch + fin)
    x = rng.standard_normal((batch, fin)).astype(np.float32)
    w = rng.standard_normal((fout, fin)).astype(np.float32)
    dy = rng.standard_normal((batch, fout)).astype(np.float32)

    def product(own, a, b, trans_a=False, trans_b=False):
        m = a.shape[1] if trans_a else a.shape[0]
        n = b.shape[0] if trans_b else b.shape[1]
        k = a.shape[0] if trans_a else a.shape[1]
        assert _takes_own_gemm(m, n, k) == own
        c = np.empty((m, n), np.float32)
        if own:
            gemm_f32(a, b, c, trans_a=trans_a, trans_b=trans_b)
        else:
            py_gemm(a, b, trans_a=trans_a, trans_b=trans_b, c=c)
        return c

    y = linear_kernels.linear_forward(x, w, None, n_threads=1)
    dx, dw, _ = linear_kernels.linear_backward(x, w, dy, need_bias_grad=False, n_threads=1)
    np.testing.assert_array_equal(y, product(owns[0], x, w, trans_b=True))
    np.testing.assert_array_equal(dx, product(owns[1], dy, w))
    np.testing.assert_array_equal(dw, product(owns[2], dy, x, trans_a=True))
    reference = x.astype(np.float64) @ w.T.astype(np.float64)
    np.testing.assert_allclose(y, reference, rtol=1e-4, atol=1e-4 * np.sqrt(fin))


def test_own_gemm_path_gives_the_same_bits_for_any_thread_count():
    # The own GEMM adds every element in one order whatever the split; the bias column sums
    # are one thread's each. (784 -> 256 at batch 64: the coursework MLP's first layer.)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((64, 784)).astype(np.float32)
    w = rng.standard_normal((256, 784)).astype(np.float32)
    b = rng.standard_normal(256).astype(np.float32)
    dy = rng.standard_normal((64, 256)).astype(np.float32)
    results = [(linear_kernels.linear_forward(x, w, b, n_threads=t),)
               + linear_kernels.linear_backward(x, w, dy, n_threads=t) for t in (1, 2, 3)]
    for other in results[1:]:
        for first, second in zip(results[0], other):
            np.testing.assert_array_equal(first, second)


@pytest.mark.parametrize("trans_a, trans_b", [(False, False), (True, False), (False, True)])
def test_matmul_is_dense_gemm_rule_and_what_at_runs(trans_a, trans_b):
    # A 2-D float32 `@` within the rule gives minnet's own GEMM's bits, forward and
    # backward (the kernel entry at 1 and 2 threads).
    rng = np.random.default_rng(11)
    a = rng.standard_normal((40, 64) if trans_a else (64, 40)).astype(np.float32)
    b = rng.standard_normal((96, 40) if trans_b else (40, 96)).astype(np.float32)
    expected = np.empty((64, 96), np.float32)
    gemm_f32(a, b, expected, trans_a=trans_a, trans_b=trans_b)
    for threads in (1, 2):
        np.testing.assert_array_equal(
            linear_kernels.matmul(a, b, trans_a=trans_a, trans_b=trans_b, n_threads=threads), expected)
    ta = mn.Tensor(a.T.copy() if trans_a else a, requires_grad=True)
    tb = mn.Tensor(b.T.copy() if trans_b else b, requires_grad=True)
    y = ta @ tb
    np.testing.assert_array_equal(y.numpy(), expected)
    g = rng.standard_normal((64, 96)).astype(np.float32)
    y.backward(mn.Tensor(g))
    da = np.empty(ta.shape, np.float32)
    gemm_f32(g, tb.numpy(), da, trans_b=True)
    np.testing.assert_array_equal(np.asarray(ta.grad), da)
    np.testing.assert_allclose(np.asarray(tb.grad), ta.numpy().T.astype(np.float64) @ g, rtol=1e-4, atol=1e-4)


def test_matmul_checks_its_arguments_and_takes_read_only_and_empty_operands():
    a = np.ones((3, 4), np.float32)
    a.flags.writeable = False
    np.testing.assert_array_equal(linear_kernels.matmul(a, np.ones((4, 2), np.float32)),
                                  np.full((3, 2), 4, np.float32))
    np.testing.assert_array_equal(linear_kernels.matmul(np.ones((3, 0)), np.ones((0, 2))),
                                  np.zeros((3, 2)))
    with pytest.raises(ValueError, match="`a`, `b`.*inner dimensions"):
        linear_kernels.matmul(np.ones((3, 4)), np.ones((5, 2)))
    with pytest.raises(TypeError, match="`b`.*float64"):
        linear_kernels.matmul(np.ones((3, 4)), np.ones((4, 2), np.float32))
