"""Kernels of minnet._ext.conv_kernels and im2col_kernels (channels_first) against plain NumPy references
(float32 and float64); channels_last in test_conv_nhwc_kernels.py."""
import numpy as np
import pytest

from minnet._config import get_num_threads
from minnet._ext import conv_kernels, im2col_kernels, linear_kernels, winograd_kernels

from _harness import TOLERANCES



@pytest.fixture(autouse=True, scope="module")
def _single_threaded_blas():
    # Pin BLAS to one thread (as minnet does on first use) so kernels that call it inside
    # prange never oversubscribe the cores.
    get_num_threads()


TOL = TOLERANCES["gemm"]

# (N, C, H, W, F, kh, kw, stride, (pad_top, pad_left), dilation, out_size or None)
CASES = [
    (2, 3, 7, 9, 4, 2, 3, (2, 1), (1, 2), (1, 2), None),   # non-square kernel, stride, dilation
    (1, 2, 5, 5, 3, 5, 5, (1, 1), (0, 0), (1, 1), None),   # kernel = input, batch 1
    (3, 4, 6, 6, 2, 1, 1, (1, 1), (0, 0), (1, 1), None),   # 1x1 (identity fast path)
    (2, 3, 8, 7, 5, 3, 2, (3, 3), (0, 1), (2, 1), None),   # stride > kernel
    (2, 2, 9, 4, 3, 4, 1, (1, 2), (2, 0), (1, 1), None),   # tall kernel
    (3, 2, 6, 7, 3, 2, 2, (1, 1), (0, 0), (1, 1), (6, 7)),  # asymmetric "same" (pad bottom/right)
    (2, 1, 5, 6, 2, 3, 3, (2, 2), (1, 1), (1, 1), (2, 3)),  # output smaller than symmetric size
    (1, 3, 3, 3, 2, 1, 1, (2, 2), (1, 1), (1, 1), None),   # 1x1 with stride and padding
    (5, 3, 11, 10, 7, 3, 3, (1, 1), (1, 1), (1, 1), None),  # odd sizes, more samples than threads
    (2, 3, 9, 37, 4, 3, 3, (2, 2), (1, 1), (1, 1), None),   # stride 2, a row long enough to vectorise
]


def _out_size(case):
    n, c, h, w, f, kh, kw, s, p, d, out = case
    if out is not None:
        return out
    return ((h + 2 * p[0] - d[0] * (kh - 1) - 1) // s[0] + 1,
            (w + 2 * p[1] - d[1] * (kw - 1) - 1) // s[1] + 1)


def _indices(h, w, kh, kw, s, p, d, out):
    """Row/column indices into x padded by (pad_top, pad_left) and enough zeros after."""
    ih = np.arange(out[0])[None, :] * s[0] + np.arange(kh)[:, None] * d[0]   # (kh, out_h)
    iw = np.arange(out[1])[None, :] * s[1] + np.arange(kw)[:, None] * d[1]   # (kw, out_w)
    pad_bottom = max(0, ih.max() + 1 - (h + p[0]))
    pad_right = max(0, iw.max() + 1 - (w + p[1]))
    return ih, iw, pad_bottom, pad_right


def im2col_ref(x, kh, kw, s, p, d, out):
    n, c, h, w = x.shape
    ih, iw, pb, pr = _indices(h, w, kh, kw, s, p, d, out)
    xp = np.pad(x, ((0, 0), (0, 0), (p[0], pb), (p[1], pr)))
    cols = xp[:, :, ih[:, None, :, None], iw[None, :, None, :]]   # (N, C, kh, kw, oh, ow)
    return cols.reshape(n, c * kh * kw, out[0] * out[1])


def col2im_ref(cols, shape, kh, kw, s, p, d, out):
    n, c, h, w = shape
    ih, iw, pb, pr = _indices(h, w, kh, kw, s, p, d, out)
    xp = np.zeros((n, c, h + p[0] + pb, w + p[1] + pr), dtype=np.float64)
    blocks = cols.reshape(n, c, kh, kw, out[0], out[1])
    for i in range(kh):
        for j in range(kw):
            rows = ih[i][:, None]
            columns = iw[j][None, :]
            np.add.at(xp, (slice(None), slice(None), rows, columns), blocks[:, :, i, j])
    return xp[:, :, p[0]:p[0] + h, p[1]:p[1] + w].astype(cols.dtype)


def conv_ref(x, weight, bias, s, p, d, out):
    f, c, kh, kw = weight.shape
    cols = im2col_ref(x.astype(np.float64), kh, kw, s, p, d, out)
    y = np.einsum("fk,nkl->nfl", weight.reshape(f, -1).astype(np.float64), cols)
    if bias is not None:
        y += bias[None, :, None]
    return y.reshape(x.shape[0], f, *out)


def conv_grads_ref(x, weight, dy, s, p, d, out):
    f, c, kh, kw = weight.shape
    cols = im2col_ref(x.astype(np.float64), kh, kw, s, p, d, out)
    dy2 = dy.reshape(dy.shape[0], f, -1).astype(np.float64)
    dw = np.einsum("nfl,nkl->fk", dy2, cols).reshape(weight.shape)
    dcols = np.einsum("fk,nfl->nkl", weight.reshape(f, -1).astype(np.float64), dy2)
    dx = col2im_ref(dcols, x.shape, kh, kw, s, p, d, out)
    return dx, dw, dy2.sum(axis=(0, 2))


def _make(case, dtype, rng):
    n, c, h, w, f, kh, kw, s, p, d, _ = case
    out = _out_size(case)
    x = rng.standard_normal((n, c, h, w)).astype(dtype)
    weight = rng.standard_normal((f, c, kh, kw)).astype(dtype)
    bias = rng.standard_normal(f).astype(dtype)
    dy = rng.standard_normal((n, f, *out)).astype(dtype)
    return x, weight, bias, dy, s, p, d, out


def test_direct_loop_reference_agrees_with_fancy_indexing(rng):
    # The references above use fancy indexing; check them once against the definition.
    x, weight, bias, _, s, p, d, out = _make(CASES[0], np.float64, rng)
    n, c, h, w = x.shape
    f, _, kh, kw = weight.shape
    y = np.zeros((n, f, *out))
    for oh in range(out[0]):
        for ow in range(out[1]):
            for i in range(kh):
                for j in range(kw):
                    r, q = oh * s[0] - p[0] + i * d[0], ow * s[1] - p[1] + j * d[1]
                    if 0 <= r < h and 0 <= q < w:
                        y[:, :, oh, ow] += x[:, :, r, q] @ weight[:, :, i, j].T
    y += bias[None, :, None, None]
    np.testing.assert_allclose(conv_ref(x, weight, bias, s, p, d, out), y, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CASES)
def test_im2col_col2im(case, dtype, rng):
    x, weight, _, _, s, p, d, out = _make(case, dtype, rng)
    kh, kw = weight.shape[2:]
    cols = im2col_kernels.im2col(x, (kh, kw), s, p, d, out, n_threads=2)
    assert cols.dtype == dtype
    np.testing.assert_array_equal(cols, im2col_ref(x, kh, kw, s, p, d, out))
    back = im2col_kernels.col2im(cols, x.shape, (kh, kw), s, p, d, out, n_threads=2)
    np.testing.assert_allclose(back, col2im_ref(cols, x.shape, kh, kw, s, p, d, out), **TOL[dtype])


# Strided layers whose taps read every phase of the stride gather from phase planes
# (im2col_kernels._use_phases): odd and even sizes, each stride, padding on one side or
# beyond the kernel, an output size that implies extra bottom/right padding, a row and a
# column stride that differ, and images smaller than the stride.
PHASE_CASES = [
    # (N, C, H, W, kh, kw, stride, (pad_top, pad_left), out_size or None)
    (2, 3, 32, 32, 3, 3, (2, 2), (1, 1), None),      # the CIFAR / ResNet stride-2 layer
    (1, 2, 17, 15, 3, 3, (2, 2), (1, 1), None),      # odd sizes: phases of unequal size
    (2, 2, 9, 10, 3, 3, (2, 2), (0, 0), None),       # no padding
    (1, 3, 12, 11, 5, 5, (3, 3), (2, 2), None),      # stride 3, 5x5
    (2, 1, 8, 13, 2, 3, (2, 3), (0, 1), None),       # kernel = stride in one direction
    (1, 2, 10, 9, 3, 2, (2, 1), (1, 0), None),       # stride 1 across, 2 down
    (1, 2, 7, 10, 2, 4, (1, 2), (1, 3), None),       # stride 2 across only, left pad 3
    (2, 2, 6, 6, 3, 3, (2, 2), (4, 4), None),        # padding beyond the kernel
    (1, 2, 9, 9, 3, 3, (2, 2), (1, 1), (6, 6)),      # out_size: extra bottom/right padding
    (1, 1, 1, 1, 3, 3, (2, 2), (1, 1), None),        # a 1x1 image
    (1, 2, 3, 2, 4, 4, (3, 3), (2, 1), None),        # image smaller than the kernel
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", PHASE_CASES)
def test_im2col_phase_planes(case, dtype, rng):
    n, c, h, w, kh, kw, s, p, out = case
    out = out or ((h + 2 * p[0] - kh) // s[0] + 1, (w + 2 * p[1] - kw) // s[1] + 1)
    x = rng.standard_normal((n, c, h, w)).astype(dtype)
    cols = im2col_kernels.im2col(x, (kh, kw), s, p, 1, out, n_threads=2)
    np.testing.assert_array_equal(cols, im2col_ref(x, kh, kw, s, p, (1, 1), out))
    # col2im adds tap by tap in (i, j) order, as the reference does: float64 bit for bit.
    dcols = rng.standard_normal(cols.shape).astype(dtype)
    back = im2col_kernels.col2im(dcols, x.shape, (kh, kw), s, p, 1, out, n_threads=2)
    want_back = col2im_ref(dcols.astype(np.float64), x.shape, kh, kw, s, p, (1, 1), out)
    if dtype == np.float64:
        np.testing.assert_array_equal(back, want_back)
    np.testing.assert_allclose(back, want_back, **TOL[dtype])
    # One sample at a time (the per-sample convolution), and the one-channel NHWC
    # "planes" path, which gathers with the same function.
    weight = rng.standard_normal((3, c, kh, kw)).astype(dtype)
    want = conv_ref(x, weight, None, s, p, (1, 1), out)
    for method in ("per_sample", "batched"):
        y = conv_kernels.conv2d_forward(x, weight, None, s, p, 1, out, method=method)
        np.testing.assert_allclose(y, want, **TOL[dtype])
    if c == 1:
        y = conv_kernels.conv2d_forward(x.transpose(0, 2, 3, 1).copy(), weight, None, s, p, 1,
                                        out, data_format="channels_last")
        np.testing.assert_allclose(y.transpose(0, 3, 1, 2), want, **TOL[dtype])


@pytest.mark.parametrize("method", ["per_sample", "batched"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CASES)
def test_conv2d_forward_backward(case, dtype, method, rng):
    x, weight, bias, dy, s, p, d, out = _make(case, dtype, rng)
    y = conv_kernels.conv2d_forward(x, weight, bias, s, p, d, out, n_threads=2, method=method)
    assert y.dtype == dtype and y.shape == (x.shape[0], weight.shape[0], *out)
    np.testing.assert_allclose(y, conv_ref(x, weight, bias, s, p, d, out), **TOL[dtype])
    dx, dw, db = conv_kernels.conv2d_backward(x, weight, dy, s, p, d, n_threads=2, method=method)
    ref = conv_grads_ref(x, weight, dy, s, p, d, out)
    for got, want in zip((dx, dw, db), ref):
        assert got.dtype == dtype
        np.testing.assert_allclose(got, want, **TOL[dtype])


# Large enough (> 3 MFLOP) that the kernels really use the threads they are given.
THREADED_CASES = [
    (8, 8, 16, 16, 12, 3, 3, (1, 1), (1, 1), (1, 1), None),
    (8, 8, 30, 30, 16, 2, 3, (2, 1), (1, 2), (1, 2), None),
    (2, 8, 30, 30, 16, 3, 2, (1, 1), (0, 0), (1, 1), (30, 30)),   # asymmetric "same"
    (1, 16, 30, 30, 16, 3, 3, (1, 1), (1, 1), (1, 1), None),      # one sample, threaded GEMM
    (1, 64, 32, 32, 32, 1, 1, (1, 1), (0, 0), (1, 1), None),      # one sample, 1x1
    (3, 64, 32, 32, 32, 1, 1, (1, 1), (0, 0), (1, 1), None),      # 1x1, odd batch
]


@pytest.mark.parametrize("case", THREADED_CASES)
@pytest.mark.parametrize("method", ["per_sample", "batched"])
def test_conv2d_threaded_matches_reference(case, method, rng):
    x, weight, bias, dy, s, p, d, out = _make(case, np.float64, rng)
    y = conv_kernels.conv2d_forward(x, weight, bias, s, p, d, out, n_threads=2, method=method)
    np.testing.assert_allclose(y, conv_ref(x, weight, bias, s, p, d, out), **TOL[np.float64])
    got = conv_kernels.conv2d_backward(x, weight, dy, s, p, d, n_threads=2, method=method)
    for g, want in zip(got, conv_grads_ref(x, weight, dy, s, p, d, out)):
        np.testing.assert_allclose(g, want, rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("case", THREADED_CASES)
@pytest.mark.parametrize("method", ["per_sample", "batched"])
def test_conv2d_thread_count_independent(case, method, rng):
    x, weight, bias, dy, s, p, d, out = _make(case, np.float32, rng)
    results = []
    for n_threads in (1, 2, 3):
        y = conv_kernels.conv2d_forward(x, weight, bias, s, p, d, out, n_threads=n_threads, method=method)
        results.append((y,) + conv_kernels.conv2d_backward(x, weight, dy, s, p, d, n_threads=n_threads,
                                                     method=method))
    for other in results[1:]:
        for a, b in zip(results[0], other):
            # Only the order of float32 additions may change with the thread count.
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6 * np.abs(a).max())


def test_conv2d_partial_gradients(rng):
    x, weight, bias, dy, s, p, d, out = _make(CASES[0], np.float64, rng)
    full = conv_kernels.conv2d_backward(x, weight, dy, s, p, d)
    for mask in [(True, False, False), (False, True, False), (False, False, True)]:
        got = conv_kernels.conv2d_backward(x, weight, dy, s, p, d, *mask)
        for want, g, needed in zip(full, got, mask):
            if needed:
                np.testing.assert_allclose(g, want, rtol=1e-12, atol=1e-12)
            else:
                assert g is None


def test_conv2d_without_bias(rng):
    x, weight, _, _, s, p, d, out = _make(CASES[3], np.float64, rng)
    y = conv_kernels.conv2d_forward(x, weight, None, s, p, d, out)
    np.testing.assert_allclose(y, conv_ref(x, weight, None, s, p, d, out), rtol=1e-10, atol=1e-12)


def test_bias_sum_float32_uses_double_accumulator():
    # 2^24 + many small values: a float32 running sum would lose them all.
    dy = np.full((1, 1, 1, 4097), 1.0, np.float32)
    dy[0, 0, 0, 0] = 2.0 ** 24
    x = np.zeros((1, 1, 1, 4097), np.float32)
    w = np.zeros((1, 1, 1, 1), np.float32)
    _, _, db = conv_kernels.conv2d_backward(x, w, dy)
    assert db[0] == np.float32(2.0 ** 24 + 4096)
    _, _, db = linear_kernels.linear_backward(np.zeros((4097, 1), np.float32), np.zeros((1, 1), np.float32),
                                     dy.reshape(4097, 1))
    assert db[0] == np.float32(2.0 ** 24 + 4096)


def test_kernel_wrappers_validate(rng):
    x = rng.standard_normal((2, 3, 5, 5))
    w = rng.standard_normal((4, 3, 3, 3))
    with pytest.raises(TypeError, match="`weight`"):
        conv_kernels.conv2d_forward(x, w.astype(np.float32))
    with pytest.raises(TypeError, match="`x`"):
        conv_kernels.conv2d_forward(x.astype(np.int64), w)
    with pytest.raises(ValueError, match="input channels"):
        conv_kernels.conv2d_forward(x, np.ascontiguousarray(w[:, :2]))
    with pytest.raises(ValueError, match="`weight`: expected a C-contiguous"):
        conv_kernels.conv2d_forward(x, w[:, :2])      # the kernels refuse; F.conv2d converts
    with pytest.raises(ValueError, match="`stride`"):
        conv_kernels.conv2d_forward(x, w, stride=0)
    with pytest.raises(ValueError, match="`padding`"):
        conv_kernels.conv2d_forward(x, w, padding=-1)
    with pytest.raises(ValueError, match="`out_size`"):
        conv_kernels.conv2d_forward(x, w, out_size=(0, 3))
    with pytest.raises(ValueError, match="`method`"):
        conv_kernels.conv2d_forward(x, w, method="fast")
    with pytest.raises(ValueError, match="`n_threads`"):
        conv_kernels.conv2d_forward(x, w, n_threads=0)
    with pytest.raises(ValueError, match="`bias`"):
        conv_kernels.conv2d_forward(x, w, np.zeros(3))
    with pytest.raises(ValueError, match="`grad_output`"):
        conv_kernels.conv2d_backward(x, w, np.zeros((2, 5, 3, 3)))
    with pytest.raises(ValueError, match="`cols`"):
        im2col_kernels.col2im(np.zeros((2, 27, 8)), x.shape, 3)
    with pytest.raises(ValueError, match="`weight`"):
        linear_kernels.linear_forward(np.zeros((2, 3)), np.zeros((4, 5)))


def test_out_of_range_geometry_is_safe(rng):
    # Output sizes far beyond the input only read zeros (never out of bounds).
    x = rng.standard_normal((1, 1, 2, 2))
    w = np.ones((1, 1, 2, 2))
    y = conv_kernels.conv2d_forward(x, w, None, 1, (1, 1), 1, (6, 6))
    np.testing.assert_allclose(y, conv_ref(x, w, None, (1, 1), (1, 1), (1, 1), (6, 6)))
    dx, dw, _ = conv_kernels.conv2d_backward(x, w, np.ones((1, 1, 6, 6)), 1, (1, 1), 1)
    want = conv_grads_ref(x, w, np.ones((1, 1, 6, 6)), (1, 1), (1, 1), (1, 1), (6, 6))
    np.testing.assert_allclose(dx, want[0])
    np.testing.assert_allclose(dw, want[1])


def test_im2col_matches_torch_unfold(torch, rng):
    x = rng.standard_normal((2, 3, 9, 8))
    cols = im2col_kernels.im2col(x, (2, 3), (2, 1), (1, 2), (2, 1))
    want = torch.nn.functional.unfold(torch.tensor(x), (2, 3), dilation=(2, 1), padding=(1, 2),
                                      stride=(2, 1)).numpy()
    np.testing.assert_array_equal(cols, want)
    back = im2col_kernels.col2im(cols, x.shape, (2, 3), (2, 1), (1, 2), (2, 1))
    want = torch.nn.functional.fold(torch.tensor(cols), (9, 8), (2, 3), dilation=(2, 1),
                                    padding=(1, 2), stride=(2, 1)).numpy()
    np.testing.assert_allclose(back, want, rtol=1e-12, atol=1e-12)


@pytest.fixture
def force_chunks(monkeypatch):
    # Widen every per-sample GEMM as far as the batch allows (several samples per GEMM,
    # with a shorter last chunk when the batch does not divide), whatever the image size.
    monkeypatch.setattr(conv_kernels, "_SMALL_GEMM", 0)
    monkeypatch.setattr(conv_kernels, "_MIN_COLUMNS", 10**9)


@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CASES)
def test_conv2d_chunked_samples_match_reference(case, dtype, n_threads, force_chunks, rng):
    x, weight, bias, dy, s, p, d, out = _make(case, dtype, rng)
    y = conv_kernels.conv2d_forward(x, weight, bias, s, p, d, out, n_threads=n_threads,
                             method="per_sample")
    np.testing.assert_allclose(y, conv_ref(x, weight, bias, s, p, d, out), **TOL[dtype])
    got = conv_kernels.conv2d_backward(x, weight, dy, s, p, d, n_threads=n_threads, method="per_sample")
    for g, want in zip(got, conv_grads_ref(x, weight, dy, s, p, d, out)):
        np.testing.assert_allclose(g, want, **TOL[dtype])
    # Each gradient alone (the scratch layout depends on which are requested).
    for mask, want in zip([(True, False, False), (False, True, False), (False, False, True)], got):
        alone = conv_kernels.conv2d_backward(x, weight, dy, s, p, d, *mask, n_threads=n_threads,
                                      method="per_sample")
        np.testing.assert_allclose(alone[mask.index(True)], want, **TOL[dtype])


def _plan(n, c, h, w, f, k=3, pad=1, channels_last=False, method="auto"):
    g = im2col_kernels.geometry((n, c, h, w), f, k, 1, pad, 1)
    return conv_kernels._plan(method, g, channels_last, 4)


def test_plan_rule():
    # Large per-sample products keep one sample per GEMM ...
    assert _plan(64, 32, 28, 28, 64) == ("per_sample", 1, 16)
    # ... tiny ones too (OpenBLAS's small-matrix path is fastest unwidened) ...
    assert _plan(64, 16, 8, 8, 32)[:2] == ("per_sample", 1)
    # ... narrow but large ones (7x7 images, 128 filters) are widened to >= 256 columns,
    strategy, chunk, parts = _plan(64, 64, 7, 7, 128)
    assert chunk > 1 and chunk * 49 >= conv_kernels._MIN_COLUMNS and parts == -(-64 // chunk)
    # never beyond the batch; one sample runs batched (threads split the GEMMs).
    assert _plan(5, 64, 7, 7, 128)[1] <= 5
    assert _plan(1, 64, 7, 7, 128) == ("batched", 1, 1)
    # channels_last chunks: a long patch (K = 16*9 >= _NHWC_LONG_PATCH) gets about
    # _NHWC_MIN_ROWS_LONG_PATCH rows (here one 14x14 sample) ...
    strategy, chunk, parts = _plan(64, 16, 14, 14, 32, channels_last=True)
    assert strategy == "per_sample" and chunk == 1 and parts == 16
    strategy, chunk, parts = _plan(64, 16, 7, 7, 32, channels_last=True)
    assert chunk * 49 >= conv_kernels._NHWC_MIN_ROWS_LONG_PATCH and (chunk - 1) * 49 < 128
    # ... a short one about _NHWC_MIN_ROWS, with at least 8 chunks,
    strategy, chunk, parts = _plan(64, 3, 28, 28, 32, channels_last=True)
    assert strategy == "per_sample" and chunk * 784 >= conv_kernels._NHWC_MIN_ROWS and 64 // chunk >= 8
    assert parts == min(16, -(-64 // chunk))
    # and one input channel takes the channels_first plane im2col ("planes"), unless forced.
    assert _plan(64, 1, 28, 28, 16, channels_last=True)[0] == "planes"
    assert _plan(64, 1, 28, 28, 16, channels_last=True, method="per_sample")[0] == "per_sample"
    assert _plan(64, 1, 28, 28, 16, k=1, pad=0, channels_last=True)[0] == "per_sample"


def test_plan_never_depends_on_the_thread_count():
    import inspect
    assert "thread" not in str(inspect.signature(conv_kernels._plan))


def test_conv2d_widened_gemm_real_shape(rng):
    # 7x7 images with 64 -> 128 channels take the widened path without any patching; an
    # odd batch gives a short last chunk.
    x = rng.standard_normal((7, 64, 7, 7))
    weight = rng.standard_normal((128, 64, 3, 3)) * 0.1
    bias = rng.standard_normal(128)
    dy = rng.standard_normal((7, 128, 7, 7))
    assert _plan(7, 64, 7, 7, 128)[1] > 1
    args = ((1, 1), (1, 1), (1, 1), (7, 7))
    y = conv_kernels.conv2d_forward(x, weight, bias, *args, n_threads=2)
    np.testing.assert_allclose(y, conv_ref(x, weight, bias, *args), rtol=1e-10, atol=1e-10)
    got = conv_kernels.conv2d_backward(x, weight, dy, *args[:3], n_threads=2)
    for g, want in zip(got, conv_grads_ref(x, weight, dy, *args)):
        np.testing.assert_allclose(g, want, rtol=1e-9, atol=1e-9)


# ---- Winograd F(2x2, 3x3): 3x3 kernels, stride 1, dilation 1 -----------------------------

# (N, C, H, W, F, kh, kw, stride, (pad_top, pad_left), dilation, out_size or None)
WINOGRAD_CASES = [
    (2, 3, 8, 8, 4, 3, 3, (1, 1), (1, 1), (1, 1), None),     # even sizes, "same"
    (1, 5, 9, 11, 3, 3, 3, (1, 1), (0, 0), (1, 1), None),    # batch 1, odd sizes, valid
    (3, 4, 7, 10, 5, 3, 3, (1, 1), (2, 2), (1, 1), None),    # padding 2, odd output, C/F odd
    (2, 3, 8, 7, 4, 3, 3, (1, 1), (0, 1), (1, 1), (8, 7)),   # asymmetric padding
    (1, 1, 3, 3, 1, 3, 3, (1, 1), (0, 0), (1, 1), None),     # kernel = input, one output
    (2, 3, 6, 6, 2, 3, 3, (1, 1), (3, 0), (1, 1), (6, 3)),   # padding > kernel - 1 (dX pad < 0)
    (5, 7, 13, 5, 9, 3, 3, (1, 1), (1, 0), (1, 1), None),    # tile blocks spanning samples
]


@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", WINOGRAD_CASES)
def test_winograd_matches_reference(case, dtype, n_threads, rng):
    x, weight, bias, dy, s, p, d, out = _make(case, dtype, rng)
    y = conv_kernels.conv2d_forward(x, weight, bias, s, p, d, out, n_threads=n_threads,
                             method="winograd")
    assert y.dtype == dtype and y.shape == (x.shape[0], weight.shape[0], *out)
    np.testing.assert_allclose(y, conv_ref(x, weight, bias, s, p, d, out), **TOL[dtype])
    got = conv_kernels.conv2d_backward(x, weight, dy, s, p, d, n_threads=n_threads, method="winograd")
    for g, want in zip(got, conv_grads_ref(x, weight, dy, s, p, d, out)):
        assert g.dtype == dtype
        np.testing.assert_allclose(g, want, **TOL[dtype])
    # dX alone (Winograd only, no im2col pass afterwards).
    dx, dw, db = conv_kernels.conv2d_backward(x, weight, dy, s, p, d, True, False, False,
                                       n_threads=n_threads, method="winograd")
    assert dw is None and db is None
    np.testing.assert_allclose(dx, got[0], **TOL[dtype])


@pytest.mark.parametrize("block", [1, 3, 10**6])
def test_winograd_block_sizes(block, monkeypatch, rng):
    # One tile row per block, blocks cutting across samples, and the whole batch in one block.
    monkeypatch.setattr(winograd_kernels, "BLOCK_TILES", block)
    case = (3, 4, 9, 6, 5, 3, 3, (1, 1), (1, 1), (1, 1), None)
    x, weight, bias, dy, s, p, d, out = _make(case, np.float64, rng)
    for n_threads in (1, 2):
        y = conv_kernels.conv2d_forward(x, weight, bias, s, p, d, out, n_threads=n_threads,
                                 method="winograd")
        np.testing.assert_allclose(y, conv_ref(x, weight, bias, s, p, d, out), **TOL[np.float64])
        got = conv_kernels.conv2d_backward(x, weight, dy, s, p, d, n_threads=n_threads,
                                    method="winograd")
        for g, want in zip(got, conv_grads_ref(x, weight, dy, s, p, d, out)):
            np.testing.assert_allclose(g, want, **TOL[np.float64])


def test_winograd_auto_rule_and_real_shape(monkeypatch, rng):
    # 32 -> 32 channels on 14x14 images is large enough for "auto" to pick Winograd; the
    # result must equal the im2col path within float32 tolerance, forward and backward.
    x = rng.standard_normal((3, 32, 14, 14)).astype(np.float32)
    weight = (rng.standard_normal((32, 32, 3, 3)) * 0.1).astype(np.float32)
    bias = rng.standard_normal(32).astype(np.float32)
    dy = rng.standard_normal((3, 32, 14, 14)).astype(np.float32)
    y_auto = conv_kernels.conv2d_forward(x, weight, bias, 1, 1, n_threads=2)
    g_auto = conv_kernels.conv2d_backward(x, weight, dy, 1, 1, n_threads=2)
    monkeypatch.setattr(winograd_kernels, "WINOGRAD", False)
    y_gemm = conv_kernels.conv2d_forward(x, weight, bias, 1, 1, n_threads=2)
    g_gemm = conv_kernels.conv2d_backward(x, weight, dy, 1, 1, n_threads=2)
    np.testing.assert_allclose(y_auto, y_gemm, **TOL[np.float32])
    for a, b in zip(g_auto, g_gemm):
        np.testing.assert_allclose(a, b, **TOL[np.float32])
    # Winograd sums in a different order than im2col, so float32 results differ in the last
    # bits: this proves "auto" took the Winograd path for y, dX and dW.
    assert not np.array_equal(y_auto, y_gemm)
    assert not np.array_equal(g_auto[0], g_gemm[0])
    assert not np.array_equal(g_auto[1], g_gemm[1])
    np.testing.assert_array_equal(g_auto[2], g_gemm[2])      # db is the same plain sum
    want = conv_ref(x, weight, bias, (1, 1), (1, 1), (1, 1), (14, 14))
    np.testing.assert_allclose(y_auto, want, **TOL[np.float32])


def test_winograd_matches_torch(torch, rng):
    x = rng.standard_normal((2, 6, 11, 9)).astype(np.float32)
    weight = rng.standard_normal((5, 6, 3, 3)).astype(np.float32)
    bias = rng.standard_normal(5).astype(np.float32)
    y = conv_kernels.conv2d_forward(x, weight, bias, 1, (2, 1), n_threads=2, method="winograd")
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(weight, requires_grad=True)
    ty = torch.nn.functional.conv2d(tx, tw, torch.tensor(bias), padding=(2, 1))
    np.testing.assert_allclose(y, ty.detach().numpy(), rtol=2e-4, atol=2e-5)
    dy = rng.standard_normal(y.shape).astype(np.float32)
    ty.backward(torch.tensor(dy))
    dx, dw, _ = conv_kernels.conv2d_backward(x, weight, dy, 1, (2, 1), n_threads=2, method="winograd")
    np.testing.assert_allclose(dx, tx.grad.numpy(), rtol=2e-4, atol=2e-5)
    np.testing.assert_allclose(dw, tw.grad.numpy(), rtol=2e-4, atol=2e-4)


@pytest.mark.parametrize("channels_last", [False, True])
def test_winograd_weight_grad_auto_rule_threads_and_accuracy(channels_last, monkeypatch, rng):
    # 32 -> 32 channels on 28 x 28 outputs: "auto" takes Winograd for dW too;
    # its bits do not depend on the thread count (a fixed number of partial sums); its
    # float32 error against float64 stays within twice im2col's (it is smaller: shorter sums).
    layout = dict(data_format="channels_last" if channels_last else "channels_first")
    shape = (4, 28, 28, 32) if channels_last else (4, 32, 28, 28)
    x = rng.standard_normal(shape).astype(np.float32)
    weight = (rng.standard_normal((32, 32, 3, 3)) * 0.1).astype(np.float32)
    dy = rng.standard_normal(shape).astype(np.float32)
    assert winograd_kernels.MIN_PIXELS <= 28 * 28
    dws = [conv_kernels.conv2d_backward(x, weight, dy, 1, 1, 1, False, True, False,
                                        n_threads=t, **layout)[1] for t in (1, 2, 3)]
    for dw in dws[1:]:
        np.testing.assert_array_equal(dw, dws[0])
    want = conv_kernels.conv2d_backward(x.astype(np.float64), weight.astype(np.float64),
                                        dy.astype(np.float64), 1, 1, 1, False, True, False,
                                        **layout)[1]
    monkeypatch.setattr(winograd_kernels, "WINOGRAD", False)
    im2col = conv_kernels.conv2d_backward(x, weight, dy, 1, 1, 1, False, True, False, **layout)[1]
    assert not np.array_equal(dws[0], im2col)            # auto took Winograd for dW
    assert np.abs(dws[0] - want).max() <= 2 * np.abs(im2col - want).max()
    np.testing.assert_allclose(dws[0], want, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("parts", [1, 3, 8])
def test_winograd_weight_grad_parts(parts, monkeypatch, rng):
    # One partial sum or several, and a cap on their size: the same gradient within rounding.
    monkeypatch.setattr(winograd_kernels, "DW_PARTS", parts)
    case = (5, 7, 13, 5, 9, 3, 3, (1, 1), (1, 0), (1, 1), None)
    x, weight, bias, dy, s, p, d, out = _make(case, np.float64, rng)
    want = conv_grads_ref(x, weight, dy, s, p, d, out)[1]
    for elements in (1 << 24, 1):
        monkeypatch.setattr(winograd_kernels, "DW_PART_ELEMENTS", elements)
        dw = conv_kernels.conv2d_backward(x, weight, dy, s, p, d, False, True, False,
                                          n_threads=2, method="winograd")[1]
        np.testing.assert_allclose(dw, want, **TOL[np.float64])


def test_winograd_rejects_other_geometries(rng):
    x = rng.standard_normal((1, 2, 8, 8))
    for w_shape, kwargs in [((3, 2, 3, 3), dict(stride=2)), ((3, 2, 3, 3), dict(dilation=2)),
                            ((3, 2, 5, 5), {}), ((3, 2, 3, 2), {})]:
        w = rng.standard_normal(w_shape)
        with pytest.raises(ValueError, match="`method`.*'winograd'"):
            conv_kernels.conv2d_forward(x, w, method="winograd", **kwargs)




def test_winograd_infinite_input_reaches_the_same_outputs(rng):
    # docs/math/convolution.md, "Numerics": an inf reaches the outputs im2col's inf reaches,
    # as NaN or inf there (inf - inf in the transforms), and nothing else.
    x = rng.standard_normal((1, 32, 8, 8)).astype(np.float32)
    w = rng.standard_normal((32, 32, 3, 3)).astype(np.float32)
    x[0, 0, 3, 3] = np.inf
    wino = conv_kernels.conv2d_forward(x, w, None, 1, 1, method="winograd")
    gemm = conv_kernels.conv2d_forward(x, w, None, 1, 1, method="per_sample")
    np.testing.assert_array_equal(~np.isfinite(wino), np.isinf(gemm))
    assert np.isinf(gemm).sum() == 9 * 32 and np.isnan(wino).any()
