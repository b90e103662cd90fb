"""minnet.functional.linear: NumPy reference, gradcheck, PyTorch parity (the shared harness), validation."""
import numpy as np
import pytest

import minnet as mn
import minnet.functional as F

from _harness import check_forward, check_gradcheck, check_torch


LINEAR_SHAPES = [((1, 1), 1), ((5, 7), 3), ((4, 2, 6), 5), ((6,), 2), ((33, 17), 9)]


def _operands(rng, x_shape, out_features):
    return (rng.standard_normal(x_shape), rng.standard_normal((out_features, x_shape[-1])),
            rng.standard_normal(out_features))


def _with_bias(x, w, b):
    return F.linear(x, w, b)


def _without_bias(x, w):
    return F.linear(x, w)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("x_shape, out_features", LINEAR_SHAPES)
def test_linear_matches_numpy(x_shape, out_features, dtype, rng):
    x, w, b = _operands(rng, x_shape, out_features)
    y = check_forward(_with_bias, lambda x, w, b: x @ w.T + b, [x, w, b], dtype, "gemm")
    assert y.shape == x_shape[:-1] + (out_features,)
    check_forward(_without_bias, lambda x, w: x @ w.T, [x, w], dtype, "gemm")


@pytest.mark.parametrize("x_shape, out_features", LINEAR_SHAPES)
def test_linear_gradcheck(x_shape, out_features, rng):
    x, w, b = _operands(rng, x_shape, out_features)
    check_gradcheck(_with_bias, [x, w, b])
    check_gradcheck(_without_bias, [x, w])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("x_shape, out_features", LINEAR_SHAPES)
def test_linear_matches_torch(x_shape, out_features, dtype, torch, rng):
    x, w, b = _operands(rng, x_shape, out_features)
    check_torch(_with_bias, torch.nn.functional.linear, [x, w, b], dtype, "gemm", torch)
    check_torch(_without_bias, torch.nn.functional.linear, [x, w], dtype, "gemm", torch)


def test_linear_nodes_and_partial_grads(rng):
    x = rng.standard_normal((4, 3)).astype(np.float32)
    w = mn.Parameter(rng.standard_normal((2, 3)).astype(np.float32))
    b = mn.Parameter(np.zeros(2, np.float32))
    y = F.linear(x, w, b)
    # One Function with or without bias (node named as PyTorch names a linear's).
    assert y.grad_fn.name() == "AddmmBackward"
    assert F.linear(x, w).grad_fn.name() == "AddmmBackward"
    saved_x, saved_w = y.grad_fn.ctx.saved_tensors
    assert saved_w is None            # x needs no gradient, so the weight is not kept
    y.sum().backward()
    np.testing.assert_allclose(w.grad, np.ones((4, 2)).T @ x, rtol=1e-6)
    np.testing.assert_allclose(b.grad, [4, 4])
    # Only the input requires grad: dx = dy @ W.
    xt = mn.tensor(x, requires_grad=True)
    F.linear(xt, w.data).sum().backward()
    np.testing.assert_allclose(xt.grad, np.ones((4, 2)) @ w.data, rtol=1e-6)


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(x=np.zeros((2, 4))), ValueError, "`x`"),
    (dict(weight=np.zeros(3)), ValueError, "`weight`"),
    (dict(weight=np.zeros((2, 3), np.int64)), TypeError, "`weight`"),
    (dict(bias=np.zeros(3)), ValueError, "`bias`"),
])
def test_linear_validation(kwargs, error, match):
    args = dict(x=np.zeros((2, 3)), weight=np.zeros((2, 3)), bias=None)
    args.update(kwargs)
    with pytest.raises(error, match=match):
        F.linear(**args)


def test_linear_bit_identical_for_any_thread_count(rng, deterministic):
    x = rng.standard_normal((96, 784)).astype(np.float32)
    w = rng.standard_normal((256, 784)).astype(np.float32)
    b = rng.standard_normal(256).astype(np.float32)
    results = []
    previous = mn.get_num_threads()
    try:
        for n in (1, 2, 3, 4, 7):
            mn.set_num_threads(n)
            mx, mw, mb = mn.tensor(x, requires_grad=True), mn.Parameter(w), mn.Parameter(b)
            y = F.linear(mx, mw, mb)
            (y * y).sum().backward()
            results.append((y.data, mx.grad, mw.grad, mb.grad))
    finally:
        mn.set_num_threads(previous)
    for other in results[1:]:
        for a, c in zip(results[0], other):
            np.testing.assert_array_equal(a, c)
