"""minnet.functional pooling: NumPy reference, gradcheck, PyTorch parity, Keras 'same', errors."""
import numpy as np
import pytest

import minnet as mn
import minnet.functional as F

from _harness import TOLERANCES

TOL = TOLERANCES["short_sum"]
# (shape, pool_size, strides, padding): stride != pool, non-square, padding, batch 1, kernel = input
CASES = [
    ((2, 3, 6, 6), 2, None, 0),
    ((1, 2, 7, 5), (3, 2), (2, 1), (1, 1)),
    ((2, 1, 5, 8), (2, 3), (3, 2), (1, 0)),
    ((1, 1, 4, 4), 4, 1, 0),
    ((3, 2, 5, 5), 1, 2, 0),
    ((1, 4, 9, 7), 3, 1, 1),
]


def _distinct(shape, rng, dtype=np.float64):
    # No ties (and gaps >> eps), so max pooling is differentiable for gradcheck.
    return (rng.permutation(int(np.prod(shape))).reshape(shape) * 0.1).astype(dtype)


def ref_pool(x, pool, strides, padding, op):
    """Plain NumPy pooling through an explicitly padded array (NaN marks padding)."""
    kh, kw = (pool, pool) if isinstance(pool, int) else pool
    sh, sw = (kh, kw) if strides is None else ((strides, strides) if isinstance(strides, int) else strides)
    ph, pw = (padding, padding) if isinstance(padding, int) else padding
    N, C, H, W = x.shape
    xp = np.full((N, C, H + 2 * ph, W + 2 * pw), np.nan)
    xp[:, :, ph:ph + H, pw:pw + W] = x
    OH, OW = (H + 2 * ph - kh) // sh + 1, (W + 2 * pw - kw) // sw + 1
    out = np.empty((N, C, OH, OW))
    for i in range(OH):
        for j in range(OW):
            win = xp[:, :, i * sh:i * sh + kh, j * sw:j * sw + kw]
            out[:, :, i, j] = np.nanmax(win, (2, 3)) if op == "max" else np.nan_to_num(win).mean((2, 3))
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,pool,strides,padding", CASES)
def test_forward_vs_numpy(dtype, shape, pool, strides, padding):
    x = np.random.default_rng(0).standard_normal(shape).astype(dtype)
    y = F.max_pool2d(x, pool, strides, padding)
    assert y.dtype == dtype
    np.testing.assert_allclose(y.numpy(), ref_pool(x, pool, strides, padding, "max"), **TOL[dtype])
    y = F.avg_pool2d(x, pool, strides, padding)
    np.testing.assert_allclose(y.numpy(), ref_pool(x, pool, strides, padding, "avg"), **TOL[dtype])
    y = F.global_avg_pool2d(x)
    np.testing.assert_allclose(y.numpy(), x.astype(np.float64).mean((2, 3)), **TOL[dtype])


@pytest.mark.parametrize("shape,pool,strides,padding", CASES + [((2, 2, 5, 6), 3, 2, "same")])
def test_gradcheck(shape, pool, strides, padding):
    rng = np.random.default_rng(1)
    x = mn.tensor(_distinct(shape, rng), requires_grad=True)
    assert mn.gradcheck(lambda t: F.max_pool2d(t, pool, strides, padding), (x,))
    assert mn.gradcheck(lambda t: F.avg_pool2d(t, pool, strides, padding), (x,))
    assert mn.gradcheck(F.global_avg_pool2d, (x,))


def test_node_names_and_ties():
    x = mn.tensor(np.ones((1, 1, 4, 4)), requires_grad=True)
    y = F.max_pool2d(x, 2)
    assert y.grad_fn.name() == "MaxPool2DWithIndicesBackward"
    assert F.avg_pool2d(x, 2).grad_fn.name() == "AvgPool2DBackward"
    assert F.global_avg_pool2d(x).grad_fn.name() == "MeanBackward"
    y.backward(np.ones(y.shape))
    expected = np.zeros((4, 4))
    expected[::2, ::2] = 1                          # ties: the first element of each window
    np.testing.assert_array_equal(x.grad[0, 0], expected)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,pool,strides,padding", CASES)
def test_torch_parity(torch, dtype, shape, pool, strides, padding):
    rng = np.random.default_rng(2)
    xs = rng.standard_normal(shape).astype(dtype)
    for ours_fn, torch_fn in ((F.max_pool2d, torch.nn.functional.max_pool2d),
                              (F.avg_pool2d, torch.nn.functional.avg_pool2d)):
        x = mn.tensor(xs, requires_grad=True)
        xt = torch.from_numpy(xs.copy()).requires_grad_()
        y = ours_fn(x, pool, strides, padding)
        yt = torch_fn(xt, pool, strides, padding)
        g = rng.standard_normal(y.shape).astype(dtype)
        y.backward(g)
        yt.backward(torch.from_numpy(g))
        np.testing.assert_allclose(y.numpy(), yt.detach().numpy(), **TOL[dtype])
        np.testing.assert_allclose(x.grad, xt.grad.numpy(), **TOL[dtype])
    x = mn.tensor(xs, requires_grad=True)
    xt = torch.from_numpy(xs.copy()).requires_grad_()
    y, yt = F.global_avg_pool2d(x), xt.mean((2, 3))
    g = rng.standard_normal(y.shape).astype(dtype)
    y.backward(g)
    yt.backward(torch.from_numpy(g))
    np.testing.assert_allclose(y.numpy(), yt.detach().numpy(), **TOL[dtype])
    np.testing.assert_allclose(x.grad, xt.grad.numpy(), **TOL[dtype])


def test_torch_max_pool_indices_and_ties(torch):
    xs = np.round(np.random.default_rng(3).standard_normal((2, 3, 7, 6)), 0)    # many ties
    out = F.max_pool2d(xs, 3, 2, 1)
    _, idx_t = torch.nn.functional.max_pool2d(torch.from_numpy(xs), 3, 2, 1, return_indices=True)
    x = mn.tensor(xs, requires_grad=True)
    xt = torch.from_numpy(xs.copy()).requires_grad_()
    F.max_pool2d(x, 3, 2, 1).sum().backward()
    torch.nn.functional.max_pool2d(xt, 3, 2, 1).sum().backward()
    np.testing.assert_array_equal(x.grad, xt.grad.numpy())
    assert out.grad_fn is None


def test_same_padding_like_keras():
    # Keras "same": out = ceil(in / stride), extra padding at the bottom/right, and
    # average pooling divides by the number of real elements only.
    x = np.arange(30, dtype=np.float64).reshape(1, 1, 5, 6)
    y = F.avg_pool2d(x, 2, 2, "same").numpy()[0, 0]
    assert y.shape == (3, 3)
    np.testing.assert_allclose(y[2], [(24 + 25) / 2, (26 + 27) / 2, (28 + 29) / 2])
    np.testing.assert_allclose(y[0, 0], (0 + 1 + 6 + 7) / 4)
    z = F.max_pool2d(x, 3, 1, "same").numpy()[0, 0]
    assert z.shape == (5, 6) and z[0, 0] == 7 and z[4, 5] == 29
    w = F.avg_pool2d(x, 3, 1, "same").numpy()[0, 0]
    np.testing.assert_allclose(w[0, 0], (0 + 1 + 6 + 7) / 4)


def test_int_input_and_errors():
    assert F.max_pool2d(np.ones((1, 1, 4, 4), np.int32), 2).dtype == np.float32
    with pytest.raises(ValueError, match="4-D"):
        F.max_pool2d(np.ones((4, 4)), 2)
    with pytest.raises(ValueError, match="`pool_size`.*Received: pool_size=0"):
        F.max_pool2d(np.ones((1, 1, 4, 4)), 0)
    with pytest.raises(ValueError, match="`strides`"):
        F.avg_pool2d(np.ones((1, 1, 4, 4)), 2, (1, -1))
    with pytest.raises(ValueError, match="`padding`.*at most half"):
        F.max_pool2d(np.ones((1, 1, 4, 4)), 2, 1, 2)
    with pytest.raises(ValueError, match="`padding`"):
        F.max_pool2d(np.ones((1, 1, 4, 4)), 2, 1, "full")
    with pytest.raises(ValueError, match="`pool_size`.*larger"):
        F.avg_pool2d(np.ones((1, 1, 2, 2)), 3)


# ---------------------------------------------------------------- channels_last (NHWC)

def _nhwc(a):
    return np.ascontiguousarray(np.moveaxis(a, 1, -1))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,pool,strides,padding",
                         CASES + [((2, 6, 8, 8), 2, None, 0), ((1, 5, 9, 9), 2, 2, 0),
                                  ((2, 3, 7, 6), 3, 2, "same")])
def test_channels_last_equals_channels_first(dtype, shape, pool, strides, padding):
    # The NHWC kernels scan each window in the NCHW order: identical values and gradients.
    rng = np.random.default_rng(4)
    x = rng.standard_normal(shape).astype(dtype)
    g_shape = None
    for op in (F.max_pool2d, F.avg_pool2d):
        a = mn.tensor(x, requires_grad=True)
        b = mn.tensor(_nhwc(x), requires_grad=True)
        ya = op(a, pool, strides, padding)
        yb = op(b, pool, strides, padding, data_format="channels_last")
        np.testing.assert_array_equal(_nhwc(ya.numpy()), yb.numpy())
        g = rng.standard_normal(ya.shape).astype(dtype)
        ya.backward(g)
        yb.backward(_nhwc(g))
        np.testing.assert_array_equal(_nhwc(a.grad), b.grad)
    for op in (F.global_avg_pool2d, F.global_max_pool2d):
        a = mn.tensor(x, requires_grad=True)
        b = mn.tensor(_nhwc(x), requires_grad=True)
        ya, yb = op(a), op(b, data_format="channels_last")
        np.testing.assert_allclose(ya.numpy(), yb.numpy(), **TOL[dtype])
        g = rng.standard_normal(ya.shape).astype(dtype)
        ya.backward(g)
        yb.backward(g)
        np.testing.assert_allclose(_nhwc(a.grad), b.grad, **TOL[dtype])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,pool,strides,padding", CASES[:3])
def test_channels_last_vs_numpy(dtype, shape, pool, strides, padding):
    x = np.random.default_rng(5).standard_normal(shape).astype(dtype)
    for op, name in ((F.max_pool2d, "max"), (F.avg_pool2d, "avg")):
        y = op(_nhwc(x), pool, strides, padding, data_format="channels_last")
        np.testing.assert_allclose(y.numpy(), _nhwc(ref_pool(x, pool, strides, padding, name)),
                                   **TOL[dtype])
    np.testing.assert_allclose(F.global_max_pool2d(_nhwc(x), data_format="channels_last").numpy(),
                               x.max((2, 3)), **TOL[dtype])


@pytest.mark.parametrize("shape,pool,strides,padding", CASES[:4] + [((2, 3, 5, 6), 3, 2, "same")])
def test_channels_last_gradcheck(shape, pool, strides, padding):
    x = mn.tensor(_nhwc(_distinct(shape, np.random.default_rng(6))), requires_grad=True)
    cl = dict(data_format="channels_last")
    assert mn.gradcheck(lambda t: F.max_pool2d(t, pool, strides, padding, **cl), (x,))
    assert mn.gradcheck(lambda t: F.avg_pool2d(t, pool, strides, padding, **cl), (x,))
    assert mn.gradcheck(lambda t: F.global_avg_pool2d(t, **cl), (x,))
    assert mn.gradcheck(lambda t: F.global_max_pool2d(t, **cl), (x,))


def test_channels_last_nan_and_ties_as_channels_first():
    x = np.zeros((1, 8, 4, 4), np.float32)         # all ties: first element wins
    x[0, 1, 1, 1] = np.nan
    x[0, 2] = -np.inf
    x[0, 3, ::2, ::2] = 5.0
    ya = F.max_pool2d(x, 2)
    yb = F.max_pool2d(_nhwc(x), 2, data_format="channels_last")
    np.testing.assert_array_equal(_nhwc(ya.numpy()), yb.numpy())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,pool,strides,padding", CASES[:3] + [((2, 8, 8, 8), 2, None, 0)])
def test_channels_last_torch_parity(torch, dtype, shape, pool, strides, padding):
    # PyTorch in its channels_last memory format, permuted to NHWC at the boundary.
    x = np.random.default_rng(7).standard_normal(shape).astype(dtype)
    xt = torch.from_numpy(x).contiguous(memory_format=torch.channels_last).requires_grad_()
    b = mn.tensor(_nhwc(x), requires_grad=True)
    st = pool if strides is None else strides
    for op, top in ((F.max_pool2d, torch.nn.functional.max_pool2d),
                    (F.avg_pool2d, torch.nn.functional.avg_pool2d)):
        xt.grad, b.grad = None, None
        yt = top(xt, pool, st, padding)
        y = op(b, pool, strides, padding, data_format="channels_last")
        np.testing.assert_allclose(y.numpy(), _nhwc(yt.detach().numpy()), **TOL[dtype])
        g = np.random.default_rng(8).standard_normal(yt.shape).astype(dtype)
        yt.backward(torch.from_numpy(g))
        y.backward(_nhwc(g))
        np.testing.assert_allclose(b.grad, _nhwc(xt.grad.numpy()), **TOL[dtype])
    xt.grad, b.grad = None, None
    yt = torch.nn.functional.adaptive_avg_pool2d(xt, 1).flatten(1)
    y = F.global_avg_pool2d(b, data_format="channels_last")
    np.testing.assert_allclose(y.numpy(), yt.detach().numpy(), **TOL[dtype])


def test_data_format_errors():
    with pytest.raises(ValueError, match="data_format"):
        F.max_pool2d(np.zeros((1, 4, 4, 2)), 2, data_format="NHWC")
    with pytest.raises(ValueError, match=r"\(N, H, W, C\)"):
        F.avg_pool2d(np.zeros((4, 4, 2)), 2, data_format="channels_last")
    with pytest.raises(ValueError, match="pool_size"):
        F.max_pool2d(np.zeros((1, 3, 3, 8)), 4, data_format="channels_last")
