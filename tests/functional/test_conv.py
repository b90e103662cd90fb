"""minnet.functional.conv2d (both layouts): NumPy reference, gradcheck, PyTorch parity,
thread-count determinism, validation."""
import numpy as np
import pytest

import minnet as mn
import minnet.functional as F

from _harness import TOLERANCES

TOL = TOLERANCES["gemm"]

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
    # one input channel (channels_last runs it on the channels_first plane im2col), few
    # channels, odd sizes
    ((3, 1, 9, 7), (4, 1, 3, 3), 1, "same", 1),
    ((2, 1, 9, 8), (3, 1, 3, 3), 2, "valid", (1, 2)),
    ((2, 1, 7, 7), (2, 1, 3, 3), 1, "same", 2),
    ((2, 3, 7, 6), (4, 3, 3, 3), 2, 1, 1),
    ((2, 5, 6, 7), (3, 5, 3, 3), 1, "same", (2, 1)),
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


@pytest.mark.parametrize("data_format", ["channels_first", "channels_last"])
def test_conv2d_gradcheck_through_winograd(data_format, monkeypatch, rng):
    # The Winograd paths (forward, dX, dW) on a float64 problem small enough for finite
    # differences: the auto rule's thresholds lowered so that "auto" takes them.
    from minnet._ext import winograd_kernels
    for name in ("MIN_PIXELS", "MIN_CHANNELS"):
        monkeypatch.setattr(winograd_kernels, name, 1)
    shape = (2, 3, 5, 7) if data_format == "channels_first" else (2, 5, 7, 3)
    x = mn.tensor(rng.standard_normal(shape), requires_grad=True)
    w = mn.Parameter(rng.standard_normal((4, 3, 3, 3)))
    b = mn.Parameter(rng.standard_normal(4))
    assert mn.gradcheck(lambda x, w, b: F.conv2d(x, w, b, 1, 1, data_format=data_format),
                        (x, w, b))


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


@pytest.mark.parametrize("data_format", ["channels_first", "channels_last"])
@pytest.mark.parametrize("shape, w_shape, stride, padding", [
    ((4, 8, 20, 19), (16, 8, 3, 3), 1, 1),        # > 1 MFLOP: really threaded
    ((37, 32, 16, 16), (32, 32, 3, 3), 1, 1),     # Winograd (channels_first), odd batch
    ((9, 16, 7, 7), (64, 16, 3, 3), 1, 1),        # small image: chunked GEMMs
    ((1, 8, 21, 21), (16, 8, 3, 3), 2, 1),        # one sample: batched GEMM blocks
    ((16, 8, 12, 12), (24, 8, 1, 1), 1, 0),       # 1x1
])
def test_conv2d_bit_identical_for_any_thread_count(shape, w_shape, stride, padding,
                                                   data_format, rng, deterministic):
    x = rng.standard_normal(shape).astype(np.float32)
    if data_format == "channels_last":
        x = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    w = rng.standard_normal(w_shape).astype(np.float32)
    b = rng.standard_normal(w_shape[0]).astype(np.float32)
    results = []
    previous = mn.get_num_threads()
    try:
        for n in (1, 2, 3, 4, 7):
            mn.set_num_threads(n)
            mx, mw, mb = mn.tensor(x, requires_grad=True), mn.Parameter(w), mn.Parameter(b)
            y = F.conv2d(mx, mw, mb, stride, padding, data_format=data_format)
            (y * y).sum().backward()
            results.append((y.data, mx.grad, mw.grad, mb.grad))
    finally:
        mn.set_num_threads(previous)
    for other in results[1:]:
        for a, b in zip(results[0], other):
            np.testing.assert_array_equal(a, b)


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
    (dict(input=np.zeros((2, 3, 5))), ValueError, "input channels"),
    (dict(input=np.zeros((2, 5, 5))), ValueError, "input channels"),
    (dict(input=np.zeros((5, 5))), ValueError, "`input`"),
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
    (dict(input=np.zeros((2, 3, 5, 5), dtype=object)), TypeError, "`input`"),
    (dict(data_format="NHWC"), ValueError, "`data_format`"),
    (dict(input=np.zeros((2, 5, 5, 4))), ValueError, "channels_first"),
    (dict(input=np.zeros((2, 3, 5, 5)), data_format="channels_last"), ValueError,
     "channels_last"),
    (dict(groups=0), ValueError, "`groups`"),
    (dict(groups=2), ValueError, "input channels"),
])
def test_conv2d_validation(kwargs, error, match):
    args = dict(input=np.zeros((2, 3, 5, 5)), weight=np.zeros((4, 3, 3, 3)), bias=None, stride=1,
                padding=0, dilation=1)
    args.update(kwargs)
    with pytest.raises(error, match=match):
        F.conv2d(**args)


def test_conv2d_rejects_a_linear_weight():
    # a 2-D weight must not be taken for a linear layer's
    with pytest.raises(ValueError, match="weight"):
        F.conv2d(mn.tensor(np.ones((2, 3), np.float32)), mn.Parameter(np.ones((4, 3), np.float32)))


# --------------------------------------------------------------------------- channels_last

def _nhwc(a):
    return np.ascontiguousarray(np.moveaxis(a, 1, -1))


def _nchw(a):
    return np.moveaxis(np.asarray(a), -1, 1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CONV_CASES)
def test_conv2d_channels_last_matches_numpy(case, dtype, rng):
    x_shape, w_shape, stride, padding, dilation = case
    x = rng.standard_normal(x_shape).astype(dtype)
    w = rng.standard_normal(w_shape).astype(dtype)
    b = rng.standard_normal(w_shape[0]).astype(dtype)
    y = F.conv2d(_nhwc(x), mn.Parameter(w), mn.Parameter(b), stride, padding, dilation,
                 data_format="channels_last")
    pair = lambda v: (v, v) if isinstance(v, int) else tuple(v)
    want = _conv_ref(x, w, b, pair(stride), _pads(padding, w_shape, dilation), pair(dilation))
    assert y.dtype == dtype and y.shape == _nhwc(want).shape
    np.testing.assert_allclose(_nchw(y.data), want, **TOL[dtype])


@pytest.mark.parametrize("case", CONV_CASES)
def test_conv2d_channels_last_gradcheck(case, rng):
    x_shape, w_shape, stride, padding, dilation = case
    x = mn.tensor(_nhwc(rng.standard_normal(x_shape)), requires_grad=True)
    w = mn.Parameter(rng.standard_normal(w_shape))
    b = mn.Parameter(rng.standard_normal(w_shape[0]))
    assert mn.gradcheck(lambda x, w, b: F.conv2d(x, w, b, stride, padding, dilation,
                                                 data_format="channels_last"), (x, w, b))


@pytest.mark.parametrize("memory_format", ["contiguous", "channels_last"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CONV_CASES)
@pytest.mark.filterwarnings("ignore:Using padding=.same. with even kernel")
def test_conv2d_channels_last_matches_torch(case, dtype, memory_format, torch, rng):
    """NHWC minnet against torch on the same numbers, NCHW-contiguous or in torch's
    channels_last memory format (permuted views compared)."""
    x_shape, w_shape, stride, padding, dilation = case
    x = rng.standard_normal(x_shape).astype(dtype)
    w = rng.standard_normal(w_shape).astype(dtype)
    b = rng.standard_normal(w_shape[0]).astype(dtype)
    mx, mw, mb = mn.tensor(_nhwc(x), requires_grad=True), mn.Parameter(w), mn.Parameter(b)
    y = F.conv2d(mx, mw, mb, stride, padding, dilation, data_format="channels_last")
    g = rng.standard_normal(y.shape).astype(dtype)
    y.backward(g)
    fmt = getattr(torch, "channels_last" if memory_format == "channels_last" else "contiguous_format")
    tx = torch.tensor(x).to(memory_format=fmt).requires_grad_(True)
    tw = torch.tensor(w).to(memory_format=fmt).requires_grad_(True)
    tb = torch.tensor(b, requires_grad=True)
    ty = _torch_conv(torch, tx, tw, tb, stride, padding, dilation)
    ty.backward(torch.tensor(_nchw(g)).to(memory_format=fmt))
    tol = TOL[dtype] if dtype == np.float64 else dict(rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(_nchw(y.data), ty.detach().numpy(), **tol)
    np.testing.assert_allclose(_nchw(mx.grad), tx.grad.numpy(), **tol)
    np.testing.assert_allclose(mw.grad, tw.grad.numpy(), **tol)
    np.testing.assert_allclose(mb.grad, tb.grad.numpy(), **tol)


@pytest.mark.parametrize("data_format", ["channels_first", "channels_last"])
@pytest.mark.parametrize("groups, c, f", [(2, 4, 6), (3, 3, 3), (4, 4, 8)])   # (3,3,3): depthwise
def test_conv2d_groups_match_torch(groups, c, f, data_format, torch, rng):
    x = rng.standard_normal((2, c, 7, 6))
    w = rng.standard_normal((f, c // groups, 3, 2))
    b = rng.standard_normal(f)
    xin = _nhwc(x) if data_format == "channels_last" else x
    mx, mw, mb = mn.tensor(xin, requires_grad=True), mn.Parameter(w), mn.Parameter(b)
    y = F.conv2d(mx, mw, mb, (2, 1), 1, 1, groups, data_format=data_format)
    g = rng.standard_normal(y.shape)
    y.backward(g)
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    ty = torch.nn.functional.conv2d(tx, tw, tb, (2, 1), 1, 1, groups)
    back = _nchw if data_format == "channels_last" else np.asarray
    ty.backward(torch.tensor(np.ascontiguousarray(back(g))))
    np.testing.assert_allclose(back(y.data), ty.detach().numpy(), **TOL[np.float64])
    np.testing.assert_allclose(back(mx.grad), tx.grad.numpy(), **TOL[np.float64])
    np.testing.assert_allclose(mw.grad, tw.grad.numpy(), **TOL[np.float64])
    np.testing.assert_allclose(mb.grad, tb.grad.numpy(), **TOL[np.float64])
    assert mn.gradcheck(lambda x, w, b: F.conv2d(x, w, b, (2, 1), 1, 1, groups,
                                                 data_format=data_format), (mx, mw, mb))


def test_conv2d_channels_last_unbatched(rng):
    x = rng.standard_normal((5, 5, 2))
    w = rng.standard_normal((3, 2, 3, 3))
    y = F.conv2d(x, w, padding=1, data_format="channels_last")
    assert y.shape == (5, 5, 3)
    np.testing.assert_allclose(
        y.data, F.conv2d(np.moveaxis(x, -1, 0), w, padding=1).data.transpose(1, 2, 0), rtol=1e-12)
