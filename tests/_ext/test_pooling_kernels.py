"""minnet._ext.pooling_kernels against plain-loop NumPy references."""
import numpy as np
import pytest

from minnet._ext import pooling_kernels as P

from _harness import TOLERANCES

TOL = TOLERANCES["kernel_pooling"]

# (input shape, pool, strides, pads (top, bottom, left, right))
CASES = [
    ((2, 3, 6, 6), (2, 2), (2, 2), (0, 0, 0, 0)),
    ((1, 2, 7, 5), (3, 2), (2, 1), (1, 1, 1, 1)),      # non-square, stride != pool, padding
    ((2, 1, 5, 8), (2, 3), (3, 2), (0, 1, 1, 1)),      # stride > pool on one axis, asymmetric pad
    ((1, 1, 4, 4), (4, 4), (1, 1), (0, 0, 0, 0)),      # kernel = input
    ((3, 2, 5, 5), (1, 1), (2, 2), (0, 0, 0, 0)),      # 1x1 pool, stride 2
    ((1, 4, 9, 7), (3, 3), (1, 1), (1, 1, 1, 1)),
]


def _windows(H, W, pool, strides, pads):
    kh, kw = pool
    sh, sw = strides
    pt, pb, pl, pr = pads
    OH = (H + pt + pb - kh) // sh + 1
    OW = (W + pl + pr - kw) // sw + 1
    for oh in range(OH):
        for ow in range(OW):
            h0, w0 = oh * sh - pt, ow * sw - pl
            rows = [h for h in range(h0, h0 + kh) if 0 <= h < H]
            cols = [w for w in range(w0, w0 + kw) if 0 <= w < W]
            full = (min(h0 + kh, H + pb) - h0) * (min(w0 + kw, W + pr) - w0)
            yield oh, ow, rows, cols, full, (OH, OW)


def ref_max(x, pool, strides, pads):
    N, C, H, W = x.shape
    wins = list(_windows(H, W, pool, strides, pads))
    OH, OW = wins[0][-1]
    out = np.empty((N, C, OH, OW), x.dtype)
    idx = np.empty((N, C, OH, OW), np.int64)
    for n in range(N):
        for c in range(C):
            for oh, ow, rows, cols, _, _ in wins:
                best, arg = -np.inf, rows[0] * W + cols[0]
                for h in rows:
                    for w in cols:
                        v = x[n, c, h, w]
                        # strict: the first maximum wins; a NaN replaces anything before it
                        if v > best or v != v:
                            best, arg = v, h * W + w
                out[n, c, oh, ow], idx[n, c, oh, ow] = best, arg
    return out, idx


def ref_avg(x, pool, strides, pads, include_pad):
    N, C, H, W = x.shape
    wins = list(_windows(H, W, pool, strides, pads))
    OH, OW = wins[0][-1]
    out = np.empty((N, C, OH, OW), np.float64)
    for oh, ow, rows, cols, full, _ in wins:
        block = x[:, :, rows][:, :, :, cols].astype(np.float64)
        out[:, :, oh, ow] = block.sum((2, 3)) / (full if include_pad else len(rows) * len(cols))
    return out


def ref_avg_backward(g, shape, pool, strides, pads, include_pad):
    N, C, H, W = shape
    dx = np.zeros(shape)
    for oh, ow, rows, cols, full, _ in _windows(H, W, pool, strides, pads):
        div = full if include_pad else len(rows) * len(cols)
        for h in rows:
            for w in cols:
                dx[:, :, h, w] += g[:, :, oh, ow] / div
    return dx


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,pool,strides,pads", CASES)
def test_max_pool_vs_reference(dtype, shape, pool, strides, pads):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(dtype)
    out, idx = P.max_pool2d_forward(x, pool, strides, pads, n_threads=2)
    ref_out, ref_idx = ref_max(x, pool, strides, pads)
    assert idx.dtype == np.int32
    np.testing.assert_array_equal(out, ref_out)
    np.testing.assert_array_equal(idx, ref_idx)
    g = rng.standard_normal(out.shape).astype(dtype)
    dx = P.max_pool2d_backward(g, idx, shape, n_threads=2)
    expected = np.zeros((shape[0] * shape[1], shape[2] * shape[3]), np.float64)
    for p in range(expected.shape[0]):
        np.add.at(expected[p], ref_idx.reshape(expected.shape[0], -1)[p], g.reshape(expected.shape[0], -1)[p])
    np.testing.assert_allclose(dx, expected.reshape(shape), **TOL[dtype])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(2, 3, 28, 28), (1, 2, 10, 19), (2, 1, 9, 8), (1, 1, 2, 2)])
@pytest.mark.parametrize("n_threads", [1, 2])
def test_max_pool_2x2_fast_path_ties_nan_inf(dtype, shape, n_threads):
    # The 2x2 / stride 2 path (SSE, four windows at a time, for float32; a scalar remainder
    # for the last OW % 4) must keep the generic rule exactly: first maximum on ties
    # (0.0 and -0.0 tie), the last NaN of a window wins, -inf windows point inside.
    rng = np.random.default_rng(sum(shape))
    x = np.round(rng.standard_normal(shape), 0).astype(dtype)         # many ties
    flat = x.reshape(-1)
    flat[rng.random(flat.size) < 0.05] = np.nan
    flat[rng.random(flat.size) < 0.05] = -np.inf
    flat[rng.random(flat.size) < 0.05] = np.inf
    flat[rng.random(flat.size) < 0.05] = -0.0
    x[..., :2, :2] = -np.inf                                          # an all -inf window
    out, idx = P.max_pool2d_forward(x, (2, 2), (2, 2), n_threads=n_threads)
    ref_out, ref_idx = ref_max(x, (2, 2), (2, 2), (0, 0, 0, 0))
    np.testing.assert_array_equal(out, ref_out)
    np.testing.assert_array_equal(np.signbit(out), np.signbit(ref_out))
    np.testing.assert_array_equal(idx, ref_idx)


def test_max_pool_ties_first_and_nan():
    x = np.zeros((1, 1, 4, 4))
    out, idx = P.max_pool2d_forward(x, (2, 2), (2, 2))
    np.testing.assert_array_equal(idx[0, 0], [[0, 2], [8, 10]])     # top-left of each window
    x[0, 0, 1, 1] = np.nan
    out, idx = P.max_pool2d_forward(x, (2, 2), (2, 2))
    assert np.isnan(out[0, 0, 0, 0]) and idx[0, 0, 0, 0] == 5
    x = np.full((1, 1, 3, 3), -np.inf)
    out, idx = P.max_pool2d_forward(x, (2, 2), (1, 1), (1, 1, 1, 1))
    assert np.all(out == -np.inf) and idx.min() >= 0 and idx.max() < 9


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("include_pad", [True, False])
@pytest.mark.parametrize("shape,pool,strides,pads", CASES)
def test_avg_pool_vs_reference(dtype, include_pad, shape, pool, strides, pads):
    rng = np.random.default_rng(1)
    x = rng.standard_normal(shape).astype(dtype)
    out = P.avg_pool2d_forward(x, pool, strides, pads, include_pad, n_threads=2)
    np.testing.assert_allclose(out, ref_avg(x, pool, strides, pads, include_pad), **TOL[dtype])
    g = rng.standard_normal(out.shape).astype(dtype)
    dx = P.avg_pool2d_backward(g, shape, pool, strides, pads, include_pad, n_threads=2)
    np.testing.assert_allclose(dx, ref_avg_backward(g.astype(np.float64), shape, pool, strides, pads,
                                                    include_pad), **TOL[dtype])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(2, 3, 5, 7), (1, 1, 1, 1), (3, 2, 10, 10)])
def test_global_avg_pool_vs_numpy(dtype, shape):
    rng = np.random.default_rng(2)
    x = rng.standard_normal(shape).astype(dtype)
    out = P.global_avg_pool2d_forward(x, n_threads=2)
    np.testing.assert_allclose(out, x.astype(np.float64).mean((2, 3)), **TOL[dtype])
    g = rng.standard_normal(out.shape).astype(dtype)
    dx = P.global_avg_pool2d_backward(g, shape, n_threads=2)
    np.testing.assert_allclose(dx, np.broadcast_to(g[:, :, None, None] / (shape[2] * shape[3]), shape),
                               **TOL[dtype])


def test_threads_do_not_change_results():
    x = np.random.default_rng(3).standard_normal((4, 5, 9, 9))
    a = P.max_pool2d_forward(x, (3, 3), (2, 2), (1, 1, 1, 1), n_threads=1)
    b = P.max_pool2d_forward(x, (3, 3), (2, 2), (1, 1, 1, 1), n_threads=3)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])


def test_errors():
    with pytest.raises(ValueError, match="4-D"):
        P.max_pool2d_forward(np.ones((2, 3, 4)), (2, 2), (2, 2))
    with pytest.raises(TypeError, match="float32 or float64"):
        P.avg_pool2d_forward(np.ones((1, 1, 4, 4), np.int64), (2, 2), (2, 2))
    with pytest.raises(ValueError, match="does not fit"):
        P.max_pool2d_forward(np.ones((1, 1, 2, 2)), (3, 3), (1, 1))
    with pytest.raises(ValueError, match="`padding`"):
        P.max_pool2d_forward(np.ones((1, 1, 4, 4)), (2, 2), (1, 1), (2, 0, 0, 0))
    with pytest.raises(ValueError, match="`indices`"):
        P.max_pool2d_backward(np.ones((1, 1, 2, 2)), np.full((1, 1, 2, 2), 99, np.int32), (1, 1, 4, 4))


@pytest.mark.parametrize("bad", [-1, 16, 2**31 - 1, -2**31])
@pytest.mark.parametrize("n_threads", [1, 2])
def test_max_pool_backward_rejects_any_index_outside_the_plane(bad, n_threads):
    # checked inside the scatter (no write happens for it), not by a pre-pass
    g = np.ones((2, 3, 2, 2), np.float32)
    idx = np.zeros((2, 3, 2, 2), np.int32)
    idx[1, 2, 1, 1] = bad
    with pytest.raises(ValueError, match=r"`indices`.*\[0, 16\).*1 value"):
        P.max_pool2d_backward(g, idx, (2, 3, 4, 4), n_threads=n_threads)
    idx[1, 2, 1, 1] = 15
    dx = P.max_pool2d_backward(g, idx, (2, 3, 4, 4), n_threads=n_threads)
    assert dx.sum() == g.sum() and dx[1, 2, 3, 3] == 1 and dx[0, 0, 0, 0] == 4


def test_max_pool_backward_zeroes_every_plane():
    # dx comes from np.empty: a stale buffer must never leak into the gradient
    g = np.zeros((64, 8, 7, 7), np.float32)
    idx = np.zeros(g.shape, np.int32)
    for _ in range(3):
        junk = np.full((64, 8, 14, 14), np.nan, np.float32)   # a freed dirty block to reuse
        del junk
        dx = P.max_pool2d_backward(g, idx, (64, 8, 14, 14), n_threads=2)
        assert not dx.any() and not np.isnan(dx).any()


# ------------------------------------------------------------------ NHWC kernels

def _nhwc(a):
    return np.ascontiguousarray(a.transpose(0, 2, 3, 1))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,pool,strides,pads",
                         CASES + [((2, 7, 8, 8), (2, 2), (2, 2), (0, 0, 0, 0)),    # SSE + tail
                                  ((1, 13, 9, 7), (2, 2), (2, 2), (0, 0, 0, 0))])  # odd H, W, C
@pytest.mark.parametrize("n_threads", [1, 3])
def test_nhwc_kernels_equal_nchw(dtype, shape, pool, strides, pads, n_threads):
    rng = np.random.default_rng(21)
    x = rng.standard_normal(shape).astype(dtype)
    xl = _nhwc(x)
    o, i = P.max_pool2d_forward(x, pool, strides, pads, n_threads)
    ol, il = P.max_pool2d_forward(xl, pool, strides, pads, n_threads, channels_last=True)
    np.testing.assert_array_equal(_nhwc(o), ol)
    np.testing.assert_array_equal(_nhwc(i), il)
    g = rng.standard_normal(o.shape).astype(dtype)
    np.testing.assert_array_equal(
        _nhwc(P.max_pool2d_backward(g, i, x.shape, n_threads)),
        P.max_pool2d_backward(_nhwc(g), il, xl.shape, n_threads, channels_last=True))
    for include in (True, False):
        a = P.avg_pool2d_forward(x, pool, strides, pads, include, n_threads)
        al = P.avg_pool2d_forward(xl, pool, strides, pads, include, n_threads, channels_last=True)
        np.testing.assert_array_equal(_nhwc(a), al)
        np.testing.assert_array_equal(
            _nhwc(P.avg_pool2d_backward(g, x.shape, pool, strides, pads, include, n_threads)),
            P.avg_pool2d_backward(_nhwc(g), xl.shape, pool, strides, pads, include, n_threads,
                                  channels_last=True))
    m = P.global_avg_pool2d_forward(xl, n_threads, channels_last=True)
    np.testing.assert_allclose(m, x.astype(np.float64).mean((2, 3)), **TOL[dtype])
    gg = rng.standard_normal(shape[:2]).astype(dtype)
    np.testing.assert_allclose(P.global_avg_pool2d_backward(gg, xl.shape, n_threads,
                                                            channels_last=True),
                               _nhwc(np.broadcast_to(gg[:, :, None, None] / (shape[2] * shape[3]),
                                                     shape)), **TOL[dtype])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nhwc_max_2x2_nan_inf_ties(dtype):
    # The SSE path over channels keeps the scalar rules: first maximum, NaN wins, -inf.
    x = np.zeros((2, 4, 4, 9), dtype)
    x[0, 1, 1, :] = np.nan
    x[1, :, :, 2] = -np.inf
    x[1, 0, 1, 3] = x[1, 1, 0, 3] = 1.0
    o, i = P.max_pool2d_forward(x, (2, 2), (2, 2), channels_last=True)
    oc, ic = P.max_pool2d_forward(np.ascontiguousarray(x.transpose(0, 3, 1, 2)), (2, 2), (2, 2))
    np.testing.assert_array_equal(o, _nhwc(oc))
    np.testing.assert_array_equal(i, _nhwc(ic))
    assert np.isnan(o[0, 0, 0]).all() and (i[0, 0, 0] == 5).all()
    assert i[1, 0, 0, 3] == 1 and o[1, 0, 0, 2] == -np.inf and i[1, 0, 0, 2] == 0


def test_nhwc_bad_indices_are_refused():
    g = np.ones((1, 2, 2, 3), np.float32)
    idx = np.zeros((1, 2, 2, 3), np.int32)
    idx[0, 1, 1, 2] = 99
    with pytest.raises(ValueError, match="indices"):
        P.max_pool2d_backward(g, idx, (1, 4, 4, 3), channels_last=True)
