"""channels_last (NHWC) kernels of minnet._ext.im2col_kernels and conv_kernels against plain NumPy
references (float32 and float64), and thread-count determinism of both layouts."""
import numpy as np
import pytest

from minnet._config import get_num_threads
from minnet._ext import conv_kernels, im2col_kernels, winograd_kernels

from _harness import TOLERANCES


@pytest.fixture(autouse=True, scope="module")
def _single_threaded_blas():
    get_num_threads()


TOL = TOLERANCES["gemm"]

# (N, H, W, C, F, kh, kw, stride, (pad_top, pad_left), dilation, out_size or None)
CASES = [
    (2, 7, 9, 3, 4, 2, 3, (2, 1), (1, 2), (1, 2), None),   # non-square kernel, stride, dilation
    (1, 5, 5, 2, 3, 5, 5, (1, 1), (0, 0), (1, 1), None),   # kernel = input, batch 1
    (3, 6, 6, 4, 2, 1, 1, (1, 1), (0, 0), (1, 1), None),   # 1x1 (identity fast path)
    (2, 8, 7, 3, 5, 3, 2, (3, 3), (0, 1), (2, 1), None),   # stride > kernel
    (2, 9, 4, 2, 3, 4, 1, (1, 2), (2, 0), (1, 1), None),   # tall kernel
    (3, 6, 7, 2, 3, 2, 2, (1, 1), (0, 0), (1, 1), (6, 7)),  # asymmetric "same" (pad bottom/right)
    (2, 5, 6, 1, 2, 3, 3, (2, 2), (1, 1), (1, 1), (2, 3)),  # output smaller than symmetric size
    (1, 3, 3, 3, 2, 1, 1, (2, 2), (1, 1), (1, 1), None),   # 1x1 with stride and padding
    (5, 11, 10, 3, 7, 3, 3, (1, 1), (1, 1), (1, 1), None),  # odd sizes
    (19, 7, 7, 16, 24, 3, 3, (1, 1), (1, 1), (1, 1), None),  # several samples per chunk
    # one input channel ("planes" under method="auto"): same padding, several samples per
    # chunk, stride with dilation
    (3, 9, 11, 1, 4, 3, 3, (1, 1), (1, 1), (1, 1), None),
    (24, 12, 12, 1, 4, 3, 3, (1, 1), (1, 1), (1, 1), None),
    (2, 10, 9, 1, 3, 3, 2, (2, 1), (2, 1), (2, 3), None),
    # few channels: the patch rows' border and dilated paths
    (2, 8, 9, 2, 3, 3, 3, (1, 2), (1, 1), (1, 2), None),
    (3, 7, 8, 5, 4, 3, 3, (1, 1), (1, 1), (1, 1), None),
    (2, 6, 13, 3, 2, 2, 5, (1, 3), (0, 2), (2, 1), None),
]


def _out(case):
    n, h, w, c, f, kh, kw, s, p, d, out = case
    if out is not None:
        return out
    return ((h + 2 * p[0] - d[0] * (kh - 1) - 1) // s[0] + 1,
            (w + 2 * p[1] - d[1] * (kw - 1) - 1) // s[1] + 1)


def _padded(x, kh, kw, s, p, d, out):
    """x (N, H, W, C) zero-padded so that every patch of the output is inside."""
    n, h, w, c = x.shape
    bottom = max(0, (out[0] - 1) * s[0] + (kh - 1) * d[0] + 1 - h - p[0])
    right = max(0, (out[1] - 1) * s[1] + (kw - 1) * d[1] + 1 - w - p[1])
    return np.pad(x.astype(np.float64), ((0, 0), (p[0], bottom), (p[1], right), (0, 0)))


def im2col_ref(x, kh, kw, s, p, d, out):
    """cols[n, oh*out_w + ow, (i*kw + j)*C + c] = x_padded[n, oh*sh + i*dh, ow*sw + j*dw, c]."""
    xp = _padded(x, kh, kw, s, p, d, out)
    n, c = x.shape[0], x.shape[3]
    cols = np.empty((n, out[0], out[1], kh, kw, c))
    for i in range(kh):
        for j in range(kw):
            cols[:, :, :, i, j] = xp[:, i * d[0]:i * d[0] + (out[0] - 1) * s[0] + 1:s[0],
                                     j * d[1]:j * d[1] + (out[1] - 1) * s[1] + 1:s[1]]
    return cols.reshape(n, out[0] * out[1], kh * kw * c)


def col2im_ref(cols, shape, kh, kw, s, p, d, out):
    n, h, w, c = shape
    xp = _padded(np.zeros(shape), kh, kw, s, p, d, out)
    blocks = cols.reshape(n, out[0], out[1], kh, kw, c)
    for i in range(kh):
        for j in range(kw):
            xp[:, i * d[0]:i * d[0] + (out[0] - 1) * s[0] + 1:s[0],
               j * d[1]:j * d[1] + (out[1] - 1) * s[1] + 1:s[1]] += blocks[:, :, :, i, j]
    return xp[:, p[0]:p[0] + h, p[1]:p[1] + w]


def conv_ref(x, weight, bias, s, p, d, out):
    f, c, kh, kw = weight.shape
    w2 = weight.transpose(0, 2, 3, 1).reshape(f, -1).astype(np.float64)
    y = im2col_ref(x, kh, kw, s, p, d, out) @ w2.T
    if bias is not None:
        y += bias
    return y.reshape(x.shape[0], out[0], out[1], f)


def conv_grads_ref(x, weight, dy, s, p, d, out):
    f, c, kh, kw = weight.shape
    w2 = weight.transpose(0, 2, 3, 1).reshape(f, -1).astype(np.float64)
    cols = im2col_ref(x, kh, kw, s, p, d, out).reshape(-1, w2.shape[1])
    dy2 = dy.reshape(-1, f).astype(np.float64)
    dw = (dy2.T @ cols).reshape(f, kh, kw, c).transpose(0, 3, 1, 2)
    dx = col2im_ref((dy2 @ w2).reshape(x.shape[0], -1, w2.shape[1]), x.shape, kh, kw, s, p, d, out)
    return dx, dw, dy2.sum(axis=0)


def _make(case, dtype, rng):
    n, h, w, c, f, kh, kw, s, p, d, _ = case
    out = _out(case)
    x = rng.standard_normal((n, h, w, c)).astype(dtype)
    weight = rng.standard_normal((f, c, kh, kw)).astype(dtype)
    bias = rng.standard_normal(f).astype(dtype)
    dy = rng.standard_normal((n, *out, f)).astype(dtype)
    return x, weight, bias, dy, s, p, d, out


NHWC = dict(data_format="channels_last")


def test_reference_agrees_with_the_nchw_kernels(rng):
    # The NHWC reference, checked once against the channels_first kernel on the same data.
    x, weight, bias, _, s, p, d, out = _make(CASES[0], np.float64, rng)
    y_nchw = conv_kernels.conv2d_forward(np.ascontiguousarray(x.transpose(0, 3, 1, 2)), weight, bias,
                                  s, p, d, out)
    np.testing.assert_allclose(conv_ref(x, weight, bias, s, p, d, out),
                               y_nchw.transpose(0, 2, 3, 1), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CASES)
def test_im2col_col2im_nhwc(case, dtype, rng):
    x, weight, _, _, s, p, d, out = _make(case, dtype, rng)
    kh, kw = weight.shape[2:]
    cols = im2col_kernels.im2col(x, (kh, kw), s, p, d, out, n_threads=2, **NHWC)
    assert cols.dtype == dtype and cols.shape == (x.shape[0], out[0] * out[1], kh * kw * x.shape[3])
    np.testing.assert_array_equal(cols, im2col_ref(x, kh, kw, s, p, d, out))
    back = im2col_kernels.col2im(cols, x.shape, (kh, kw), s, p, d, out, n_threads=2, **NHWC)
    np.testing.assert_allclose(back, col2im_ref(cols, x.shape, kh, kw, s, p, d, out), **TOL[dtype])


def test_im2col_nhwc_is_the_nchw_patches_reordered(rng):
    x = rng.standard_normal((2, 9, 8, 3))
    cols = im2col_kernels.im2col(x, (2, 3), (2, 1), (1, 2), (2, 1), **NHWC)
    nchw = im2col_kernels.im2col(np.ascontiguousarray(x.transpose(0, 3, 1, 2)), (2, 3), (2, 1), (1, 2), (2, 1))
    # NCHW row (c*kh + i)*kw + j == NHWC column (i*kw + j)*C + c
    want = nchw.reshape(2, 3, 2, 3, -1).transpose(0, 4, 2, 3, 1).reshape(cols.shape)
    np.testing.assert_array_equal(cols, want)


@pytest.mark.parametrize("method", ["auto", "per_sample", "batched"])
@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CASES)
def test_conv2d_nhwc_forward_backward(case, dtype, n_threads, method, rng):
    x, weight, bias, dy, s, p, d, out = _make(case, dtype, rng)
    y = conv_kernels.conv2d_forward(x, weight, bias, s, p, d, out, n_threads=n_threads, method=method,
                             **NHWC)
    assert y.shape == (x.shape[0], *out, weight.shape[0]) and y.dtype == dtype
    np.testing.assert_allclose(y, conv_ref(x, weight, bias, s, p, d, out), **TOL[dtype])
    got = conv_kernels.conv2d_backward(x, weight, dy, s, p, d, n_threads=n_threads, method=method, **NHWC)
    for g, want in zip(got, conv_grads_ref(x, weight, dy, s, p, d, out)):
        assert g.dtype == dtype
        np.testing.assert_allclose(g, want, **TOL[dtype])
    for mask, want in zip([(True, False, False), (False, True, False), (False, False, True)], got):
        alone = conv_kernels.conv2d_backward(x, weight, dy, s, p, d, *mask, n_threads=n_threads,
                                      method=method, **NHWC)
        assert [a is None for a in alone] == [not m for m in mask]
        np.testing.assert_array_equal(alone[mask.index(True)], want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_one_channel_planes_path_matches_the_patch_rows_path(dtype, rng):
    # The same convolution through "planes" (auto) and the patch rows (forced per_sample):
    # two GEMM orders, so equal to rounding.
    x, weight, bias, dy, s, p, d, out = _make((6, 13, 11, 1, 5, 3, 3, (1, 1), (1, 1), (1, 1), None),
                                              dtype, rng)
    assert conv_kernels._plan("auto", im2col_kernels.geometry((6, 1, 13, 11), 5, 3, 1, 1, 1), True, 4)[0] == "planes"
    for method in ("auto", "per_sample"):
        y = conv_kernels.conv2d_forward(x, weight, bias, s, p, d, out, method=method, **NHWC)
        grads = conv_kernels.conv2d_backward(x, weight, dy, s, p, d, method=method, **NHWC)
        if method == "auto":
            ref = (y,) + grads
        else:
            for a, b in zip((y,) + grads, ref):
                np.testing.assert_allclose(a, b, **TOL[dtype])


def test_conv2d_nhwc_without_bias(rng):
    x, weight, _, _, s, p, d, out = _make(CASES[3], np.float64, rng)
    y = conv_kernels.conv2d_forward(x, weight, None, s, p, d, out, **NHWC)
    np.testing.assert_allclose(y, conv_ref(x, weight, None, s, p, d, out), rtol=1e-10, atol=1e-12)


def test_conv2d_nhwc_validation(rng):
    x = rng.standard_normal((2, 5, 5, 3))
    w = rng.standard_normal((4, 3, 3, 3))
    with pytest.raises(ValueError, match="input channels"):
        conv_kernels.conv2d_forward(x, np.ascontiguousarray(w[:, :2]), **NHWC)
    with pytest.raises(ValueError, match="`data_format`"):
        conv_kernels.conv2d_forward(x, w, data_format="NHWC")
    with pytest.raises(ValueError, match="'winograd'"):
        conv_kernels.conv2d_forward(x, rng.standard_normal((4, 3, 2, 2)), method="winograd", **NHWC)
    with pytest.raises(ValueError, match="`grad_output`"):
        conv_kernels.conv2d_backward(x, w, np.zeros((2, 3, 3, 5)), **NHWC)
    with pytest.raises(ValueError, match="`cols`"):
        im2col_kernels.col2im(np.zeros((2, 27, 9)), x.shape, 3, **NHWC)


@pytest.mark.parametrize("data_format", ["channels_first", "channels_last"])
@pytest.mark.parametrize("method", ["auto", "per_sample", "batched"])
@pytest.mark.parametrize("shape", [
    (64, 3, 16, 16, 16, 3),    # many samples, 3 input channels
    (37, 32, 14, 14, 32, 3),   # Winograd size (channels_first), odd batch
    (9, 16, 7, 7, 64, 3),      # small image: widened GEMMs
    (1, 8, 21, 21, 16, 3),     # one sample
    (16, 8, 12, 12, 24, 1),    # 1x1
    (64, 1, 28, 28, 16, 3),    # one input channel (channels_last: "planes")
])
def test_kernels_bit_identical_for_any_thread_count(shape, method, data_format, rng, deterministic):
    n, c, h, w, f, k = shape
    x_shape = (n, h, w, c) if data_format == "channels_last" else (n, c, h, w)
    x = rng.standard_normal(x_shape).astype(np.float32)
    weight = rng.standard_normal((f, c, k, k)).astype(np.float32)
    bias = rng.standard_normal(f).astype(np.float32)
    kwargs = dict(method=method, data_format=data_format)
    ref = None
    for n_threads in (1, 2, 3, 4, 7):
        y = conv_kernels.conv2d_forward(x, weight, bias, 1, k // 2, n_threads=n_threads, **kwargs)
        grads = conv_kernels.conv2d_backward(x, weight, np.cos(y), 1, k // 2, n_threads=n_threads,
                                      **kwargs)
        got = (y,) + grads
        if ref is None:
            ref = got
        for a, b in zip(got, ref):
            np.testing.assert_array_equal(a, b)


# Winograd F(2x2, 3x3) in channels_last (winograd_kernels.pyx): 3x3, stride 1, dilation 1.
WINOGRAD_CASES = [  # (N, H, W, C, F, (pad_top, pad_left), out_size or None)
    (2, 7, 9, 3, 4, (1, 1), None),        # odd output: half-empty edge tiles
    (3, 7, 10, 4, 5, (2, 2), None),       # padding 2, C and F odd
    (2, 8, 7, 3, 4, (0, 1), (8, 7)),      # asymmetric padding
    (1, 3, 3, 1, 1, (0, 0), None),        # kernel = input, one output
    (2, 6, 6, 3, 2, (3, 0), (6, 3)),      # padding > kernel - 1 (dX padding < 0)
    (5, 13, 5, 7, 9, (1, 0), None),       # tile blocks spanning samples
]


def _winograd_operands(case, dtype, rng):
    n, h, w, c, f, p, out = case
    x = rng.standard_normal((n, h, w, c)).astype(dtype)
    weight = rng.standard_normal((f, c, 3, 3)).astype(dtype)
    bias = rng.standard_normal(f).astype(dtype)
    y = conv_kernels.conv2d_forward(x, weight, bias, 1, p, 1, out, **NHWC)
    dy = rng.standard_normal(y.shape).astype(dtype)
    return x, weight, bias, dy, p, out, (y.shape[1], y.shape[2])


@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", WINOGRAD_CASES)
def test_winograd_nhwc_matches_reference_and_channels_first(case, dtype, n_threads, rng):
    x, weight, bias, dy, p, out, size = _winograd_operands(case, dtype, rng)
    kw = dict(n_threads=n_threads, method="winograd")
    y = conv_kernels.conv2d_forward(x, weight, bias, 1, p, 1, out, **kw, **NHWC)
    np.testing.assert_allclose(y, conv_ref(x, weight, bias, (1, 1), p, (1, 1), size), **TOL[dtype])
    got = conv_kernels.conv2d_backward(x, weight, dy, 1, p, 1, **kw, **NHWC)
    for g, want in zip(got, conv_grads_ref(x, weight, dy, (1, 1), p, (1, 1), size)):
        assert g.dtype == dtype
        np.testing.assert_allclose(g, want, **TOL[dtype])
    dx, dw, db = conv_kernels.conv2d_backward(x, weight, dy, 1, p, 1, True, False, False, **kw, **NHWC)
    assert dw is None and db is None
    np.testing.assert_array_equal(dx, got[0])
    if dtype == np.float32:
        # The same products summed in the same order as channels_first Winograd: same bits.
        x_cf = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
        dy_cf = np.ascontiguousarray(dy.transpose(0, 3, 1, 2))
        y_cf = conv_kernels.conv2d_forward(x_cf, weight, bias, 1, p, 1, out, **kw)
        np.testing.assert_array_equal(y, y_cf.transpose(0, 2, 3, 1))
        dx_cf = conv_kernels.conv2d_backward(x_cf, weight, dy_cf, 1, p, 1, True, False, False, **kw)[0]
        np.testing.assert_array_equal(dx, dx_cf.transpose(0, 2, 3, 1))
        dw_cf = conv_kernels.conv2d_backward(x_cf, weight, dy_cf, 1, p, 1, False, True, False, **kw)[1]
        np.testing.assert_array_equal(got[1], dw_cf)


@pytest.mark.parametrize("block", [1, 3, 10**6])
def test_winograd_nhwc_block_sizes_and_threads(block, monkeypatch, rng):
    monkeypatch.setattr(winograd_kernels, "BLOCK_TILES", block)
    x, weight, bias, dy, p, out, size = _winograd_operands(WINOGRAD_CASES[5], np.float32, rng)
    first = None
    for n_threads in (1, 2, 3):
        kw = dict(n_threads=n_threads, method="winograd", **NHWC)
        got = (conv_kernels.conv2d_forward(x, weight, bias, 1, p, 1, out, **kw),
               *conv_kernels.conv2d_backward(x, weight, dy, 1, p, 1, True, True, False, **kw)[:2])
        first = first or got
        for a, b in zip(got, first):
            np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(first[0], conv_ref(x, weight, bias, (1, 1), p, (1, 1), size),
                               **TOL[np.float32])


def test_winograd_nhwc_auto_rule(monkeypatch, rng):
    # 32 -> 32 channels on 14x14: "auto" takes Winograd for y, dX and dW in channels_last too.
    x = rng.standard_normal((3, 14, 14, 32)).astype(np.float32)
    weight = (rng.standard_normal((32, 32, 3, 3)) * 0.1).astype(np.float32)
    dy = rng.standard_normal((3, 14, 14, 32)).astype(np.float32)
    y_auto = conv_kernels.conv2d_forward(x, weight, None, 1, 1, n_threads=2, **NHWC)
    g_auto = conv_kernels.conv2d_backward(x, weight, dy, 1, 1, n_threads=2, **NHWC)
    monkeypatch.setattr(winograd_kernels, "WINOGRAD", False)
    y_gemm = conv_kernels.conv2d_forward(x, weight, None, 1, 1, n_threads=2, **NHWC)
    g_gemm = conv_kernels.conv2d_backward(x, weight, dy, 1, 1, n_threads=2, **NHWC)
    np.testing.assert_allclose(y_auto, y_gemm, **TOL[np.float32])
    np.testing.assert_allclose(g_auto[0], g_gemm[0], **TOL[np.float32])
    assert not np.array_equal(y_auto, y_gemm)
    assert not np.array_equal(g_auto[0], g_gemm[0])
    assert not np.array_equal(g_auto[1], g_gemm[1])          # dW by Winograd too


def test_winograd_rounding_within_twice_im2col(rng):
    """docs/math/convolution.md's promise: F(2x2, 3x3)'s float32 error against a float64
    reference is within twice the im2col path's (both layouts)."""
    x = rng.standard_normal((4, 16, 16, 64)).astype(np.float32)
    weight = (rng.standard_normal((64, 64, 3, 3)) * 0.1).astype(np.float32)
    want = conv_ref(x.astype(np.float64), weight.astype(np.float64), None, (1, 1), (1, 1),
                    (1, 1), (16, 16))
    errors = {m: np.abs(conv_kernels.conv2d_forward(x, weight, None, 1, 1, method=m, **NHWC)
                        - want).max() for m in ("winograd", "per_sample")}
    assert errors["winograd"] <= 2 * errors["per_sample"], errors
