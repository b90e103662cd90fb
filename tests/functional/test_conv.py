"""minnet.functional.conv2d / linear: NumPy reference, gradcheck, PyTorch parity, validation."""
import numpy as np
import pytest

import minnet as mn
import minnet.functional as F

TOL = {np.float32: dict(rtol=2e-4, atol=2e-5), np.float64: dict(rtol=1e-10, atol=1e-12)}

# (x shape, weight shape, stride, padding, dilation)
CONV_CASES = [
    ((2, 3, 7, 9), (4, 3, 2, 3), (2, 1), (1, 2), (1, 2)),
    ((1, 2, 5, 5), (3, 2, 5, 5), 1, 0, 1),             # kernel = input, batch 1
    ((3, 4, 6, 5), (2, 4, 1, 1), 1, 0, 1),             # 1x1
    ((2, 3, 8, 7), (5, 3, 3, 2), 3, (0, 1), 2),         # stride > kernel, dilation
    ((2, 2, 6, 7), (3, 2, 2, 4), 1, "same", 1),         # even kernel: extra pad bottom/right
    ((2, 2, 7, 6), (3, 2, 3, 2), 1, "same", (2, 1)),
    ((2, 2, 6, 6), (3, 2, 3, 3), 2, "valid", 1),
    ((1, 1, 5, 6), (2, 1, 2, 2), 2, ((1, 0), (0, 2)), 1),  # explicit asymmetric padding
]


def _conv_ref(x, w, b, stride, pads, dilation):
    """Direct definition: zero-pad, then sum over (c, i, j) of strided slices."""
    (top, bottom), (left, right) = pads
    sh, sw = stride
    dh, dw = dilation
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (top, bottom), (left, right)))
    f, c, kh, kw = w.shape
    oh = (xp.shape[2] - dh * (kh - 1) - 1) // sh + 1
    ow = (xp.shape[3] - dw * (kw - 1) - 1) // sw + 1
    y = np.zeros((x.shape[0], f, oh, ow))
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, :, i * dh:i * dh + sh * (oh - 1) + 1:sh, j * dw:j * dw + sw * (ow - 1) + 1:sw]
            y += np.einsum("nchw,fc->nfhw", patch, w[:, :, i, j].astype(np.float64))
    if b is not None:
        y += b[None, :, None, None]
    return y


def _pads(padding, w_shape, dilation):
    pair = lambda v: (v, v) if isinstance(v, int) else tuple(v)
    if padding == "valid":
        return (0, 0), (0, 0)
    if padding == "same":
        d = pair(dilation)
        totals = [d[0] * (w_shape[2] - 1), d[1] * (w_shape[3] - 1)]
        return tuple((t // 2, t - t // 2) for t in totals)
    if isinstance(padding, tuple) and isinstance(padding[0], tuple):
        return padding
    p = pair(padding)
    return (p[0], p[0]), (p[1], p[1])


def _torch_conv(torch, x, w, b, stride, padding, dilation):
    if isinstance(padding, tuple) and isinstance(padding[0], tuple):
        (top, bottom), (left, right) = padding
        x = torch.nn.functional.pad(x, (left, right, top, bottom))
        padding = 0
    return torch.nn.functional.conv2d(x, w, b, stride=stride, padding=padding, dilation=dilation)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CONV_CASES)
def test_conv2d_matches_numpy(case, dtype, rng):
    x_shape, w_shape, stride, padding, dilation = case
    x = rng.standard_normal(x_shape).astype(dtype)
    w = rng.standard_normal(w_shape).astype(dtype)
    b = rng.standard_normal(w_shape[0]).astype(dtype)
    y = F.conv2d(x, mn.Parameter(w), mn.Parameter(b), stride, padding, dilation)
    assert isinstance(y, mn.Tensor) and y.dtype == dtype
    pair = lambda v: (v, v) if isinstance(v, int) else tuple(v)
    want = _conv_ref(x, w, b, pair(stride), _pads(padding, w_shape, dilation), pair(dilation))
    np.testing.assert_allclose(y.data, want, **TOL[dtype])
    if padding == "same":
        assert y.shape[2:] == x_shape[2:]


@pytest.mark.parametrize("case", CONV_CASES)
def test_conv2d_gradcheck(case, rng):
    x_shape, w_shape, stride, padding, dilation = case
    x = mn.tensor(rng.standard_normal(x_shape), requires_grad=True)
    w = mn.Parameter(rng.standard_normal(w_shape))
    b = mn.Parameter(rng.standard_normal(w_shape[0]))
    assert mn.gradcheck(lambda x, w, b: F.conv2d(x, w, b, stride, padding, dilation), (x, w, b))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CONV_CASES)
@pytest.mark.filterwarnings("ignore:Using padding=.same. with even kernel")
def test_conv2d_matches_torch(case, dtype, torch, rng):
    x_shape, w_shape, stride, padding, dilation = case
    x = rng.standard_normal(x_shape).astype(dtype)
    w = rng.standard_normal(w_shape).astype(dtype)
    b = rng.standard_normal(w_shape[0]).astype(dtype)
    mx, mw, mb = mn.tensor(x, requires_grad=True), mn.Parameter(w), mn.Parameter(b)
    y = F.conv2d(mx, mw, mb, stride, padding, dilation)
    g = rng.standard_normal(y.shape).astype(dtype)
    y.backward(g)
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    ty = _torch_conv(torch, tx, tw, tb, stride, padding, dilation)
    ty.backward(torch.tensor(g))
    tol = TOL[dtype] if dtype == np.float64 else dict(rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(y.data, ty.detach().numpy(), **tol)
    for mine, theirs in ((mx, tx), (mw, tw), (mb, tb)):
        assert mine.grad.dtype == dtype
        np.testing.assert_allclose(mine.grad, theirs.grad.numpy(), **tol)


def test_conv2d_thread_count_independent(rng):
    x = rng.standard_normal((4, 8, 20, 19)).astype(np.float32)   # > 1 MFLOP: really threaded
    w = rng.standard_normal((16, 8, 3, 3)).astype(np.float32)
    results = []
    previous = mn.get_num_threads()
    try:
        for n in (1, 2):
            mn.set_num_threads(n)
            mx, mw = mn.tensor(x, requires_grad=True), mn.Parameter(w)
            y = F.conv2d(mx, mw, None, 1, 1)
            y.sum().backward()
            results.append((y.data, mx.grad, mw.grad))
    finally:
        mn.set_num_threads(previous)
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6 * np.abs(a).max())


def test_conv2d_node_and_saved_arrays(rng):
    x = rng.standard_normal((2, 3, 5, 5)).astype(np.float32)
    w = mn.Parameter(rng.standard_normal((4, 3, 3, 3)).astype(np.float32))
    y = F.conv2d(x, w)          # x needs no grad: the weight is not needed in backward
    assert y.grad_fn.name() == "ConvolutionBackward"
    saved_x, saved_w = y.grad_fn.ctx.saved_tensors
    assert saved_x is not None and saved_x.shape == x.shape and saved_w is None
    y.sum().backward()
    # The gradient of sum(conv(x, w)) w.r.t. w[f, c, i, j] is the sum of the matching patches.
    want = np.stack([x[:, :, i:i + 3, j:j + 3].sum(axis=(0, 2, 3)) for i in range(3) for j in range(3)], axis=1)
    np.testing.assert_allclose(w.grad[0], want.reshape(3, 3, 3), rtol=1e-4, atol=1e-4)
    with mn.no_grad():
        assert F.conv2d(x, w).grad_fn is None


def test_conv2d_casts_input_to_weight_dtype(rng):
    x = mn.tensor(rng.standard_normal((1, 2, 4, 4)), requires_grad=True)      # float64
    w = mn.Parameter(rng.standard_normal((3, 2, 3, 3)).astype(np.float32))
    y = F.conv2d(x, w, padding=1)
    assert y.dtype == np.float32
    y.sum().backward()
    assert x.grad.dtype == np.float64 and w.grad.dtype == np.float32
    y_int = F.conv2d(np.ones((1, 2, 4, 4), np.int64), w)
    assert y_int.dtype == np.float32


def test_conv2d_unbatched(rng):
    x = rng.standard_normal((2, 5, 5))
    w = rng.standard_normal((3, 2, 3, 3))
    y = F.conv2d(x, w, padding=1)
    assert y.shape == (3, 5, 5)
    np.testing.assert_allclose(y.data, F.conv2d(x[None], w, padding=1).data[0])


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(x=np.zeros((2, 3, 5))), ValueError, "input channels"),
    (dict(x=np.zeros((2, 5, 5))), ValueError, "input channels"),
    (dict(x=np.zeros((5, 5))), ValueError, "`x`"),
    (dict(weight=np.zeros((4, 3, 3))), ValueError, "`weight`"),
    (dict(weight=np.zeros((4, 2, 3, 3))), ValueError, "input channels"),
    (dict(weight=np.zeros((4, 3, 9, 3))), ValueError, "larger than the padded input"),
    (dict(weight=np.zeros((4, 3, 3, 3)), dilation=4), ValueError, "larger than the padded input"),
    (dict(weight=np.zeros((4, 3, 3, 3), np.int32)), TypeError, "`weight`"),
    (dict(stride=0), ValueError, "`stride`"),
    (dict(stride=1.5), ValueError, "`stride`"),
    (dict(stride=True), ValueError, "`stride`"),
    (dict(dilation=(1, 0)), ValueError, "`dilation`"),
    (dict(padding=-1), ValueError, "`padding`"),
    (dict(padding="full"), ValueError, "`padding`"),
    (dict(padding="same", stride=2), ValueError, "strided"),
    (dict(bias=np.zeros(3)), ValueError, "`bias`"),
    (dict(x=np.zeros((2, 3, 5, 5), dtype=object)), TypeError, "`x`"),
])
def test_conv2d_validation(kwargs, error, match):
    args = dict(x=np.zeros((2, 3, 5, 5)), weight=np.zeros((4, 3, 3, 3)), bias=None, stride=1,
                padding=0, dilation=1)
    args.update(kwargs)
    with pytest.raises(error, match=match):
        F.conv2d(**args)


# --------------------------------------------------------------------------- linear

LINEAR_SHAPES = [((1, 1), 1), ((5, 7), 3), ((4, 2, 6), 5), ((6,), 2), ((33, 17), 9)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("x_shape, out_features", LINEAR_SHAPES)
def test_linear_matches_numpy(x_shape, out_features, dtype, rng):
    x = rng.standard_normal(x_shape).astype(dtype)
    w = rng.standard_normal((out_features, x_shape[-1])).astype(dtype)
    b = rng.standard_normal(out_features).astype(dtype)
    y = F.linear(x, mn.Parameter(w), mn.Parameter(b))
    assert y.dtype == dtype and y.shape == x_shape[:-1] + (out_features,)
    np.testing.assert_allclose(y.data, x.astype(np.float64) @ w.T + b, **TOL[dtype])
    np.testing.assert_allclose(F.linear(x, w).data, x.astype(np.float64) @ w.T, **TOL[dtype])


@pytest.mark.parametrize("x_shape, out_features", LINEAR_SHAPES)
def test_linear_gradcheck(x_shape, out_features, rng):
    x = mn.tensor(rng.standard_normal(x_shape), requires_grad=True)
    w = mn.Parameter(rng.standard_normal((out_features, x_shape[-1])))
    b = mn.Parameter(rng.standard_normal(out_features))
    assert mn.gradcheck(lambda x, w, b: F.linear(x, w, b), (x, w, b))
    assert mn.gradcheck(lambda x, w: F.linear(x, w), (x, w))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("x_shape, out_features", LINEAR_SHAPES)
def test_linear_matches_torch(x_shape, out_features, dtype, torch, rng):
    x = rng.standard_normal(x_shape).astype(dtype)
    w = rng.standard_normal((out_features, x_shape[-1])).astype(dtype)
    b = rng.standard_normal(out_features).astype(dtype)
    mx, mw, mb = mn.tensor(x, requires_grad=True), mn.Parameter(w), mn.Parameter(b)
    y = F.linear(mx, mw, mb)
    g = rng.standard_normal(y.shape).astype(dtype)
    y.backward(g)
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    ty = torch.nn.functional.linear(tx, tw, tb)
    ty.backward(torch.tensor(g))
    np.testing.assert_allclose(y.data, ty.detach().numpy(), **TOL[dtype])
    for mine, theirs in ((mx, tx), (mw, tw), (mb, tb)):
        np.testing.assert_allclose(mine.grad, theirs.grad.numpy(), **TOL[dtype])


def test_linear_nodes_and_partial_grads(rng):
    x = rng.standard_normal((4, 3)).astype(np.float32)
    w = mn.Parameter(rng.standard_normal((2, 3)).astype(np.float32))
    b = mn.Parameter(np.zeros(2, np.float32))
    y = F.linear(x, w, b)
    assert y.grad_fn.name() == "AddmmBackward"
    assert F.linear(x, w).grad_fn.name() == "MmBackward"
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


def test_conv2d_rejects_a_linear_weight():
    # a 2-D weight must not be taken for a linear layer's
    with pytest.raises(ValueError, match="weight"):
        F.conv2d(mn.tensor(np.ones((2, 3), np.float32)), mn.Parameter(np.ones((4, 3), np.float32)))
