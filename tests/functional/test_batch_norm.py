"""minnet.functional.batch_norm: NumPy reference, gradcheck, PyTorch parity, errors."""
import numpy as np
import pytest

import minnet as mn
import minnet.functional as F

from _harness import TOLERANCES

TOL = TOLERANCES["default"]
SHAPES = [(8, 5), (2, 3), (4, 3, 5, 7), (1, 2, 3, 3), (3, 6, 1, 1), (2, 1, 4, 6)]


def _axes(x):
    return (0,) + tuple(range(2, x.ndim))


def _bc(v, ndim):
    return np.asarray(v).reshape((1, -1) + (1,) * (ndim - 2))


def reference(x, rm, rv, w, b, training, momentum, eps):
    """Plain NumPy batch norm (float64); returns y and the updated running stats."""
    x = x.astype(np.float64)
    if training:
        mean, var = x.mean(_axes(x)), x.var(_axes(x))
        m = x.size // x.shape[1]
        rm = (1 - momentum) * rm + momentum * mean
        rv = (1 - momentum) * rv + momentum * var * m / (m - 1)
    else:
        mean, var = rm, rv
    y = (x - _bc(mean, x.ndim)) / np.sqrt(_bc(var, x.ndim) + eps) * _bc(w, x.ndim) + _bc(b, x.ndim)
    return y, rm, rv


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("training", [True, False])
def test_forward_and_running_stats_vs_numpy(dtype, shape, training):
    rng = np.random.default_rng(0)
    C = shape[1]
    x = (rng.standard_normal(shape) * 3 + 1).astype(dtype)
    w, b = rng.standard_normal(C).astype(dtype), rng.standard_normal(C).astype(dtype)
    rm, rv = rng.standard_normal(C).astype(dtype), rng.uniform(0.5, 2, C).astype(dtype)
    y_ref, rm_ref, rv_ref = reference(x, rm.astype(np.float64), rv.astype(np.float64), w, b, training, 0.1, 1e-5)
    y = F.batch_norm(x, rm, rv, w, b, training=training)
    assert y.dtype == dtype and y.shape == shape
    np.testing.assert_allclose(y.numpy(), y_ref, **TOL[dtype])
    np.testing.assert_allclose(rm, rm_ref, **TOL[dtype])
    np.testing.assert_allclose(rv, rv_ref, **TOL[dtype])


@pytest.mark.parametrize("shape", [(6, 3), (3, 2, 3, 4), (1, 2, 2, 3)])
@pytest.mark.parametrize("training", [True, False])
def test_gradcheck(shape, training):
    rng = np.random.default_rng(1)
    C = shape[1]
    x = mn.tensor(rng.standard_normal(shape), requires_grad=True)
    w = mn.tensor(rng.standard_normal(C), requires_grad=True)
    b = mn.tensor(rng.standard_normal(C), requires_grad=True)
    rm, rv = rng.standard_normal(C), rng.uniform(0.5, 2, C)

    def fn(x, w, b):
        return F.batch_norm(x, rm.copy(), rv.copy(), w, b, training=training)
    assert mn.gradcheck(fn, (x, w, b))
    assert mn.gradcheck(lambda x: F.batch_norm(x, None, None, training=True), (x,))


def test_closed_form_backward_vs_numpy():
    rng = np.random.default_rng(2)
    x = mn.tensor(rng.standard_normal((5, 4, 3, 3)), requires_grad=True)
    w = mn.tensor(rng.standard_normal(4), requires_grad=True)
    b = mn.tensor(rng.standard_normal(4), requires_grad=True)
    y = F.batch_norm(x, None, None, w, b, training=True)
    assert y.grad_fn.name() == "NativeBatchNormBackward"
    g = rng.standard_normal(y.shape)
    y.backward(g)
    X, ax, M = x.numpy(), (0, 2, 3), 5 * 9
    inv_std = 1 / np.sqrt(X.var(ax) + 1e-5)
    xhat = (X - _bc(X.mean(ax), 4)) * _bc(inv_std, 4)
    dx = _bc(w.numpy() * inv_std / M, 4) * (M * g - _bc(g.sum(ax), 4) - xhat * _bc((g * xhat).sum(ax), 4))
    np.testing.assert_allclose(x.grad, dx, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(w.grad, (g * xhat).sum(ax), rtol=1e-10)
    np.testing.assert_allclose(b.grad, g.sum(ax), rtol=1e-10)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(16, 5), (4, 3, 5, 7), (2, 8, 6, 6), (1, 2, 3, 3)])
def test_torch_parity_training_steps_and_eval(torch, dtype, shape):
    rng = np.random.default_rng(3)
    C = shape[1]
    tdtype = torch.float32 if dtype == np.float32 else torch.float64
    bn = torch.nn.BatchNorm1d(C) if len(shape) == 2 else torch.nn.BatchNorm2d(C)
    bn = bn.to(tdtype)
    with torch.no_grad():
        bn.weight.copy_(torch.from_numpy(rng.standard_normal(C)))
        bn.bias.copy_(torch.from_numpy(rng.standard_normal(C)))
    w = mn.tensor(bn.weight.detach().numpy().copy(), requires_grad=True)
    b = mn.tensor(bn.bias.detach().numpy().copy(), requires_grad=True)
    rm, rv = np.zeros(C, dtype), np.ones(C, dtype)
    tol = TOL[dtype]
    for step in range(3):                                    # running stats after several steps
        xs = (rng.standard_normal(shape) * (step + 1) + step).astype(dtype)
        g = rng.standard_normal(shape).astype(dtype)
        x = mn.tensor(xs, requires_grad=True)
        xt = torch.from_numpy(xs.copy()).requires_grad_()
        w.grad = b.grad = None
        bn.zero_grad()
        y = F.batch_norm(x, rm, rv, w, b, training=True)
        yt = bn.train()(xt)
        y.backward(g)
        yt.backward(torch.from_numpy(g))
        np.testing.assert_allclose(y.numpy(), yt.detach().numpy(), **tol)
        np.testing.assert_allclose(x.grad, xt.grad.numpy(), **tol)
        np.testing.assert_allclose(w.grad, bn.weight.grad.numpy(), **tol)
        np.testing.assert_allclose(b.grad, bn.bias.grad.numpy(), **tol)
        np.testing.assert_allclose(rm, bn.running_mean.numpy(), **tol)
        np.testing.assert_allclose(rv, bn.running_var.numpy(), **tol)
    xs = rng.standard_normal(shape).astype(dtype)
    x = mn.tensor(xs, requires_grad=True)
    xt = torch.from_numpy(xs.copy()).requires_grad_()
    y = F.batch_norm(x, rm, rv, w, b, training=False)
    yt = bn.eval()(xt)
    g = rng.standard_normal(shape).astype(dtype)
    y.backward(g)
    yt.backward(torch.from_numpy(g))
    np.testing.assert_allclose(y.numpy(), yt.detach().numpy(), **tol)
    np.testing.assert_allclose(x.grad, xt.grad.numpy(), **tol)


def test_running_stats_accept_tensors_and_no_weight():
    rm, rv = mn.tensor(np.zeros(3)), mn.tensor(np.ones(3))
    x = np.random.default_rng(4).standard_normal((10, 3)) + 2
    F.batch_norm(x, rm, rv, training=True, momentum=0.5)
    np.testing.assert_allclose(rm.numpy(), 0.5 * x.mean(0))
    np.testing.assert_allclose(rv.numpy(), 0.5 + 0.5 * x.var(0, ddof=1))


def test_errors():
    with pytest.raises(ValueError, match=r"Expected more than 1 value per channel when training, got input size \(1, 4\)"):
        F.batch_norm(np.ones((1, 4)), np.zeros(4), np.ones(4), training=True)
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        F.batch_norm(np.ones((1, 4, 1, 1)), None, None)
    F.batch_norm(np.ones((1, 4)), np.zeros(4), np.ones(4), training=False)   # fine in eval
    with pytest.raises(ValueError, match="`running_mean`.*expected shape \\(3,\\)"):
        F.batch_norm(np.ones((2, 3)), np.zeros(4), np.ones(3), training=True)
    with pytest.raises(ValueError, match="`x`.*2-D"):
        F.batch_norm(np.ones((2, 3, 4)), np.zeros(3), np.ones(3))
    with pytest.raises(ValueError, match="`momentum`"):
        F.batch_norm(np.ones((2, 3)), np.zeros(3), np.ones(3), momentum=2.0)
    with pytest.raises(ValueError, match="`eps`"):
        F.batch_norm(np.ones((2, 3)), np.zeros(3), np.ones(3), eps=0)
    with pytest.raises(TypeError, match="`weight`"):
        F.batch_norm(np.ones((2, 3)), np.zeros(3), np.ones(3), weight="w")


# ---------------------------------------------------------------- channels_last (NHWC)

def _nhwc(a):
    return np.ascontiguousarray(np.moveaxis(a, 1, -1))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("training", [True, False])
def test_channels_last_vs_numpy(dtype, shape, training):
    rng = np.random.default_rng(11)
    x = (rng.standard_normal(shape) * 2 + 1).astype(dtype)
    C = shape[1]
    w, b = rng.standard_normal(C).astype(dtype), rng.standard_normal(C).astype(dtype)
    rm, rv = rng.standard_normal(C).astype(dtype), rng.random(C).astype(dtype) + 0.5
    y_ref, rm_ref, rv_ref = reference(x, rm, rv, w, b, training, 0.1, 1e-5)
    y = F.batch_norm(_nhwc(x), rm, rv, w, b, training=training, data_format="channels_last")
    np.testing.assert_allclose(y.numpy(), _nhwc(y_ref), **TOL[dtype])
    np.testing.assert_allclose(rm, rm_ref, **TOL[dtype])
    np.testing.assert_allclose(rv, rv_ref, **TOL[dtype])


@pytest.mark.parametrize("shape", [(4, 3, 5, 7), (6, 4), (2, 1, 4, 6)])
@pytest.mark.parametrize("training", [True, False])
def test_channels_last_gradcheck(shape, training):
    rng = np.random.default_rng(12)
    C = shape[1]
    x = mn.tensor(_nhwc(rng.standard_normal(shape)), requires_grad=True)
    w = mn.tensor(rng.standard_normal(C), requires_grad=True)
    b = mn.tensor(rng.standard_normal(C), requires_grad=True)
    rm, rv = rng.standard_normal(C), rng.random(C) + 0.5
    assert mn.gradcheck(lambda t, ww, bb: F.batch_norm(t, rm.copy(), rv.copy(), ww, bb,
                                                       training=training,
                                                       data_format="channels_last"), (x, w, b))


def test_channels_last_independent_of_thread_count():
    rng = np.random.default_rng(13)
    x = rng.standard_normal((8, 16, 16, 24)).astype(np.float32) * 5 + 3
    g = rng.standard_normal(x.shape).astype(np.float32)
    results = []
    old = mn.get_num_threads()
    try:
        for n in (1, 2, 3, 4, 7):
            mn.set_num_threads(n)
            t = mn.tensor(x, requires_grad=True)
            w = mn.tensor(np.ones(24, np.float32), requires_grad=True)
            rm, rv = np.zeros(24, np.float32), np.ones(24, np.float32)
            y = F.batch_norm(t, rm, rv, w, None, training=True, data_format="channels_last")
            y.backward(g)
            results.append((y.numpy(), t.grad, w.grad, rm, rv))
    finally:
        mn.set_num_threads(old)
    for other in results[1:]:
        for a, b in zip(results[0], other):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(16, 5), (4, 3, 5, 7), (2, 8, 6, 6)])
def test_channels_last_torch_parity(torch, dtype, shape):
    rng = np.random.default_rng(14)
    C = shape[1]
    tdtype = torch.float32 if dtype == np.float32 else torch.float64
    bn = (torch.nn.BatchNorm1d(C) if len(shape) == 2 else torch.nn.BatchNorm2d(C)).to(tdtype)
    fmt = torch.channels_last if len(shape) == 4 else torch.contiguous_format
    w = mn.tensor(bn.weight.detach().numpy().copy(), requires_grad=True)
    b = mn.tensor(bn.bias.detach().numpy().copy(), requires_grad=True)
    rm, rv = np.zeros(C, dtype), np.ones(C, dtype)
    tol = TOL[dtype]
    for training in (True, True, False):
        xs = (rng.standard_normal(shape) * 2 + 1).astype(dtype)
        g = rng.standard_normal(shape).astype(dtype)
        xt = torch.from_numpy(xs.copy()).contiguous(memory_format=fmt).requires_grad_()
        x = mn.tensor(_nhwc(xs), requires_grad=True)
        w.grad = b.grad = None
        bn.zero_grad()
        yt = bn.train(training)(xt)
        y = F.batch_norm(x, rm, rv, w, b, training=training, data_format="channels_last")
        yt.backward(torch.from_numpy(g))
        y.backward(_nhwc(g))
        np.testing.assert_allclose(y.numpy(), _nhwc(yt.detach().numpy()), **tol)
        np.testing.assert_allclose(x.grad, _nhwc(xt.grad.numpy()), **tol)
        np.testing.assert_allclose(w.grad, bn.weight.grad.numpy(), **tol)
        np.testing.assert_allclose(b.grad, bn.bias.grad.numpy(), **tol)
        np.testing.assert_allclose(rm, bn.running_mean.numpy(), **tol)
        np.testing.assert_allclose(rv, bn.running_var.numpy(), **tol)


def test_channels_last_errors():
    with pytest.raises(ValueError, match="data_format"):
        F.batch_norm(np.zeros((2, 3)), None, None, data_format="NHWC")
    with pytest.raises(ValueError, match=r"shape \(3,\)"):
        F.batch_norm(np.zeros((2, 4, 4, 3)), np.zeros(4), np.ones(4), training=True,
                     data_format="channels_last")
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        F.batch_norm(np.zeros((1, 1, 1, 3)), None, None, training=True,
                     data_format="channels_last")
