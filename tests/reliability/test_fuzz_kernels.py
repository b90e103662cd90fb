"""Property-based fuzzing of minnet's kernels against plain NumPy references.

Every reference here is written from the definition (loops over the kernel window,
explicit padding) and shares no code with minnet.  Hypothesis draws shapes, strides,
paddings, dilations, dtypes and memory layouts (C order, Fortran order, strided views),
so the Cython kernels see inputs they were never hand-tested on.  Under a bounds-checked
build (``MINNET_DEBUG_BUILD=1``) an out-of-bounds access would surface as an IndexError.

Volume: see ``EXAMPLES`` below (the sum is reported in docs/reliability.md).
"""
import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import minnet as mn  # noqa: E402
import minnet.functional as F  # noqa: E402

from _harness import TOLERANCES  # noqa: E402

# max_examples per fuzzed op; keep the file under ~60 s on 2 cores.
EXAMPLES = {
    "conv2d": 500, "conv2d_grad": 200, "linear": 300, "pool2d": 300, "batch_norm": 250,
    "activations": 400, "softmax": 300, "cross_entropy": 300, "dropout_stats": 60,
    "dropout_determinism": 100, "global_avg_pool2d": 100, "alpha_dropout": 40,
}
# pool2d runs once for max and once for avg.
TOTAL_EXAMPLES = sum(EXAMPLES.values()) + EXAMPLES["pool2d"]


def fuzz(name):
    return settings(max_examples=EXAMPLES[name], deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


class n_threads:
    """Run a block with ``mn.set_num_threads(n)`` (the fuzzers draw 1, 2 or 3 threads)."""

    def __init__(self, n):
        self.n = n

    def __enter__(self):
        self.previous = mn.get_num_threads()
        mn.set_num_threads(self.n)

    def __exit__(self, *exc):
        mn.set_num_threads(self.previous)


threads = st.sampled_from([1, 2, 3])

TOL = TOLERANCES["fuzz"]
dtypes = st.sampled_from([np.float32, np.float64])
layouts = st.sampled_from(["C", "F", "strided"])


def make_array(rng, shape, dtype, layout, low=-2.0, high=2.0):
    """An array of ``shape`` with the requested memory layout (the values do not depend on it)."""
    values = rng.uniform(low, high, size=shape).astype(dtype)
    if layout == "F":
        out = np.asfortranarray(values)
    elif layout == "strided":
        # Interleave with junk along the last axis, then take every other element.
        big = np.full(shape[:-1] + (2 * shape[-1],), np.nan, dtype=dtype) if shape else values
        if shape:
            big[..., ::2] = values
            out = big[..., ::2]
        else:
            out = values
    else:
        out = np.ascontiguousarray(values)
    np.testing.assert_array_equal(out, values)
    return out


# ---------------------------------------------------------------------------- references
def ref_conv2d(x, w, b, stride, pad, dilation):
    """Direct convolution (cross-correlation), computed in float64; pad = ((t, b), (l, r))."""
    x = x.astype(np.float64)
    w = w.astype(np.float64)
    n, c, h, wd = x.shape
    f, _, kh, kw = w.shape
    (pt, pb), (pl, pr) = pad
    xp = np.zeros((n, c, h + pt + pb, wd + pl + pr))
    xp[:, :, pt:pt + h, pl:pl + wd] = x
    sh, sw = stride
    dh, dw = dilation
    oh = (h + pt + pb - dh * (kh - 1) - 1) // sh + 1
    ow = (wd + pl + pr - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((n, f, oh, ow))
    for i in range(kh):
        for j in range(kw):
            rows = slice(i * dh, i * dh + sh * (oh - 1) + 1, sh)
            cols = slice(j * dw, j * dw + sw * (ow - 1) + 1, sw)
            patch = xp[:, :, rows, cols]
            out += np.einsum("nchw,fc->nfhw", patch, w[:, :, i, j])
    if b is not None:
        out += b.astype(np.float64)[None, :, None, None]
    return out


def ref_pool(x, pool, stride, pads, mode, include_pad=True):
    """Windows over a padded input; pads = (top, bottom, left, right).

    Max pooling pads with -inf.  Average pooling divides by the full window when
    ``include_pad`` (PyTorch's count_include_pad=True) and by the real elements otherwise.
    """
    x = x.astype(np.float64)
    n, c, h, w = x.shape
    kh, kw = pool
    sh, sw = stride
    pt, pb, pl, pr = pads
    fill = -np.inf if mode == "max" else 0.0
    xp = np.full((n, c, h + pt + pb, w + pl + pr), fill)
    xp[:, :, pt:pt + h, pl:pl + w] = x
    real = np.zeros((h + pt + pb, w + pl + pr))
    real[pt:pt + h, pl:pl + w] = 1.0
    oh = (h + pt + pb - kh) // sh + 1
    ow = (w + pl + pr - kw) // sw + 1
    out = np.empty((n, c, oh, ow))
    for a in range(oh):
        for b in range(ow):
            win = xp[:, :, a * sh:a * sh + kh, b * sw:b * sw + kw]
            if mode == "max":
                out[:, :, a, b] = win.max(axis=(2, 3))
            else:
                inside = real[a * sh:a * sh + kh, b * sw:b * sw + kw].sum()
                count = kh * kw if include_pad else inside
                out[:, :, a, b] = win.sum(axis=(2, 3)) / count
    return out


def same_pool_pads(size, k, s):
    """Keras 'same': out = ceil(size / s), the odd pixel of padding at the end."""
    out = -(-size // s)
    total = max((out - 1) * s + k - size, 0)
    return total // 2, total - total // 2


def ref_log_softmax(z, axis):
    z = z.astype(np.float64)
    m = z.max(axis=axis, keepdims=True)
    return z - m - np.log(np.exp(z - m).sum(axis=axis, keepdims=True))


ACTIVATIONS = {
    "relu": (F.relu, lambda x: np.maximum(x, 0.0)),
    "leaky_relu": (lambda x: F.leaky_relu(x, 0.2), lambda x: np.where(x > 0, x, 0.2 * x)),
    "elu": (lambda x: F.elu(x, 0.7),
            lambda x: np.where(x > 0, x, 0.7 * np.expm1(np.minimum(x, 0)))),
    "selu": (F.selu, lambda x: 1.0507009873554804934193349852946 * np.where(
        x > 0, x, 1.6732632423543772848170429916717 * np.expm1(np.minimum(x, 0)))),
    "sigmoid": (F.sigmoid, lambda x: 0.5 * (1.0 + np.tanh(0.5 * x))),
    "tanh": (F.tanh, np.tanh),
}


# ---------------------------------------------------------------------------- strategies
@st.composite
def conv_case(draw):
    n = draw(st.integers(1, 3))
    c = draw(st.integers(1, 4))
    f = draw(st.integers(1, 5))
    kh, kw = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    sh, sw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    dh, dw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    mode = draw(st.sampled_from(["int", "pair", "asym", "valid", "same"]))
    if mode == "same":
        sh = sw = 1
    ph, pw = draw(st.integers(0, 3)), draw(st.integers(0, 3))
    eff_h, eff_w = dh * (kh - 1) + 1, dw * (kw - 1) + 1
    # Large enough that the (padded) input holds at least one window.
    h = draw(st.integers(max(1, eff_h - (2 * ph if mode in ("int", "pair") else 0)), eff_h + 6))
    w = draw(st.integers(max(1, eff_w - (2 * pw if mode in ("int", "pair") else 0)), eff_w + 6))
    if mode == "int":
        pw = ph
        w = max(w, eff_w - 2 * pw)
        padding, pad = ph, ((ph, ph), (ph, ph))
    elif mode == "pair":
        padding, pad = (ph, pw), ((ph, ph), (pw, pw))
    elif mode == "asym":
        pb, pr = draw(st.integers(0, 2)), draw(st.integers(0, 2))
        h, w = max(h, eff_h), max(w, eff_w)
        padding, pad = ((ph, pb), (pw, pr)), ((ph, pb), (pw, pr))
    elif mode == "valid":
        h, w = max(h, eff_h), max(w, eff_w)
        padding, pad = "valid", ((0, 0), (0, 0))
    else:
        # PyTorch "same": total = d*(k-1); the extra pixel of an odd total goes bottom/right.
        th, tw = dh * (kh - 1), dw * (kw - 1)
        padding, pad = "same", ((th // 2, th - th // 2), (tw // 2, tw - tw // 2))
    return dict(shape=(n, c, h, w), wshape=(f, c, kh, kw), stride=(sh, sw), dilation=(dh, dw),
                padding=padding, pad=pad, bias=draw(st.booleans()), threads=draw(threads),
                dtype=draw(dtypes), layout=draw(layouts), seed=draw(st.integers(0, 2**31)))


@fuzz("conv2d")
@given(conv_case())
def test_conv2d_matches_direct_convolution(case):
    rng = np.random.default_rng(case["seed"])
    dtype = case["dtype"]
    x = make_array(rng, case["shape"], dtype, case["layout"])
    w = make_array(rng, case["wshape"], dtype, case["layout"])
    b = rng.standard_normal(case["wshape"][0]).astype(dtype) if case["bias"] else None
    x_before = x.copy()
    with n_threads(case["threads"]):
        y = F.conv2d(x, w, b, stride=case["stride"], padding=case["padding"],
                     dilation=case["dilation"])
    expected = ref_conv2d(x, w, b, case["stride"], case["pad"], case["dilation"])
    assert y.dtype == dtype
    assert y.shape == expected.shape
    np.testing.assert_allclose(y.numpy(), expected, **TOL[dtype])
    np.testing.assert_array_equal(x, x_before)  # inputs are never written


@fuzz("conv2d_grad")
@given(conv_case())
def test_conv2d_backward_matches_adjoint(case):
    """<dY, conv(x)> is linear in x and w: its gradients are checked via the reference.

    d<G, conv(x, w)>/dx is the adjoint of the convolution applied to G; we compare it
    with central differences of the float64 reference along one random direction.
    """
    rng = np.random.default_rng(case["seed"])
    x = make_array(rng, case["shape"], np.float64, case["layout"])
    w = make_array(rng, case["wshape"], np.float64, case["layout"])
    b = rng.standard_normal(case["wshape"][0]) if case["bias"] else None
    xt, wt = mn.tensor(x, requires_grad=True), mn.tensor(w, requires_grad=True)
    bt = mn.tensor(b, requires_grad=True) if b is not None else None
    g_shape = ref_conv2d(x[:1, :1], w[:1, :1], None, case["stride"], case["pad"],
                         case["dilation"]).shape[2:]
    g = make_array(rng, (x.shape[0], w.shape[0]) + g_shape, np.float64, case["layout"])
    with n_threads(case["threads"]):
        y = F.conv2d(xt, wt, bt, stride=case["stride"], padding=case["padding"],
                     dilation=case["dilation"])
        y.backward(g)  # upstream grad in any layout
    # The map is bilinear, so a directional derivative is exact with a central difference.
    vx, vw = rng.standard_normal(x.shape), rng.standard_normal(w.shape)
    args = (case["stride"], case["pad"], case["dilation"])
    fx = (ref_conv2d(x + vx, w, b, *args) - ref_conv2d(x - vx, w, b, *args)) / 2
    fw = (ref_conv2d(x, w + vw, b, *args) - ref_conv2d(x, w - vw, b, *args)) / 2
    np.testing.assert_allclose(np.sum(xt.grad * vx), np.sum(g * fx), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(np.sum(wt.grad * vw), np.sum(g * fw), rtol=1e-9, atol=1e-9)
    if b is not None:
        np.testing.assert_allclose(bt.grad, g.sum(axis=(0, 2, 3)), rtol=1e-10, atol=1e-10)


@fuzz("linear")
@given(lead=st.lists(st.integers(1, 4), min_size=1, max_size=3), n_in=st.integers(1, 17),
       n_out=st.integers(1, 13), bias=st.booleans(), dtype=dtypes, layout=layouts,
       seed=st.integers(0, 2**31))
def test_linear_matches_matmul(lead, n_in, n_out, bias, dtype, layout, seed):
    rng = np.random.default_rng(seed)
    x = make_array(rng, tuple(lead) + (n_in,), dtype, layout)
    w = make_array(rng, (n_out, n_in), dtype, layout)
    b = rng.standard_normal(n_out).astype(dtype) if bias else None
    xt, wt = mn.tensor(x, requires_grad=True), mn.tensor(w, requires_grad=True)
    bt = None if b is None else mn.tensor(b, requires_grad=True)
    y = F.linear(xt, wt, bt)
    expected = x.astype(np.float64) @ w.astype(np.float64).T + (0 if b is None else b)
    assert y.shape == expected.shape and y.dtype == dtype
    np.testing.assert_allclose(y.numpy(), expected, **TOL[dtype])
    g = rng.standard_normal(y.shape).astype(dtype)
    y.backward(g)
    g64 = g.astype(np.float64)
    np.testing.assert_allclose(xt.grad, g64 @ w.astype(np.float64), **TOL[dtype])
    np.testing.assert_allclose(wt.grad, g64.reshape(-1, n_out).T @ x.reshape(-1, n_in),
                               **TOL[dtype])
    if bt is not None:
        np.testing.assert_allclose(bt.grad, g64.reshape(-1, n_out).sum(axis=0), **TOL[dtype])


@st.composite
def pool_case(draw):
    kh, kw = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    strides = draw(st.one_of(st.none(), st.tuples(st.integers(1, 4), st.integers(1, 4))))
    sh, sw = (kh, kw) if strides is None else strides
    same = draw(st.booleans())
    if same:
        h, w = draw(st.integers(1, kh + 7)), draw(st.integers(1, kw + 7))
        pads = same_pool_pads(h, kh, sh) + same_pool_pads(w, kw, sw)
        padding = "same"
    else:
        ph, pw = draw(st.integers(0, kh // 2)), draw(st.integers(0, kw // 2))
        h = draw(st.integers(max(1, kh - 2 * ph), kh + 7))
        w = draw(st.integers(max(1, kw - 2 * pw), kw + 7))
        pads, padding = (ph, ph, pw, pw), draw(st.sampled_from([(ph, pw), "int"]))
        if padding == "int":
            padding = ph
            pads = (ph, ph, ph, ph)
            w = max(w, kw - 2 * ph)
            if 2 * ph > kw:
                padding, pads = (ph, 0), (ph, ph, 0, 0)
                w = max(w, kw)
    return dict(shape=(draw(st.integers(1, 3)), draw(st.integers(1, 4)), h, w),
                pool=(kh, kw), strides=strides, stride=(sh, sw), pads=pads, padding=padding,
                same=same, dtype=draw(dtypes), layout=draw(layouts), threads=draw(threads),
                seed=draw(st.integers(0, 2**31)))


@pytest.mark.parametrize("mode", ["max", "avg"])
@fuzz("pool2d")
@given(case=pool_case())
def test_pool2d_matches_window_reference(mode, case):
    rng = np.random.default_rng(case["seed"])
    dtype = case["dtype"]
    x = make_array(rng, case["shape"], dtype, case["layout"])
    op = F.max_pool2d if mode == "max" else F.avg_pool2d
    xt = mn.tensor(x, requires_grad=True)
    expected = ref_pool(x, case["pool"], case["stride"], case["pads"], mode,
                        include_pad=not case["same"])
    g = make_array(rng, expected.shape, dtype, case["layout"], 0.5, 1.5)
    with n_threads(case["threads"]):
        y = op(xt, case["pool"], strides=case["strides"], padding=case["padding"])
        y.backward(g)
    assert y.shape == expected.shape and y.dtype == dtype
    np.testing.assert_allclose(y.numpy(), expected, **TOL[dtype])
    assert xt.grad.shape == x.shape and np.all(np.isfinite(xt.grad))
    g64 = g.astype(np.float64)
    # Backward = adjoint of forward: <g, pool(x + v)> - <g, pool(x)> is linear in v for avg;
    # for max it routes each window's gradient to the (first) arg-max.
    if mode == "avg":
        v = rng.standard_normal(x.shape)
        lhs = np.sum(xt.grad * v)
        rhs = np.sum(g64 * ref_pool(v, case["pool"], case["stride"], case["pads"], "avg",
                                    include_pad=not case["same"]))
        np.testing.assert_allclose(lhs, rhs, rtol=1e-4 if dtype == np.float32 else 1e-10,
                                   atol=1e-4 if dtype == np.float32 else 1e-10)
    else:
        expected_grad = ref_max_pool_grad(x, g64, case["pool"], case["stride"], case["pads"])
        np.testing.assert_allclose(xt.grad, expected_grad, **TOL[dtype])


def ref_max_pool_grad(x, g, pool, stride, pads):
    """Each window sends its gradient to its first maximum (row-major), as PyTorch."""
    n, c, h, w = x.shape
    kh, kw = pool
    sh, sw = stride
    pt, pb, pl, pr = pads
    xp = np.full((n, c, h + pt + pb, w + pl + pr), -np.inf)
    xp[:, :, pt:pt + h, pl:pl + w] = x
    grad = np.zeros_like(xp)
    for a in range(g.shape[2]):
        for b in range(g.shape[3]):
            win = xp[:, :, a * sh:a * sh + kh, b * sw:b * sw + kw].reshape(n, c, -1)
            first = win.argmax(axis=2)
            i, j = np.divmod(first, kw)
            for ni in range(n):
                for ci in range(c):
                    grad[ni, ci, a * sh + i[ni, ci], b * sw + j[ni, ci]] += g[ni, ci, a, b]
    return grad[:, :, pt:pt + h, pl:pl + w]


@fuzz("batch_norm")
@given(n=st.integers(2, 5), c=st.integers(1, 5), spatial=st.one_of(
    st.none(), st.tuples(st.integers(1, 5), st.integers(1, 5))), dtype=dtypes, layout=layouts,
    momentum=st.floats(0.0, 1.0), eps=st.sampled_from([1e-5, 1e-3, 0.1]), affine=st.booleans(),
    seed=st.integers(0, 2**31), threads_=threads)
def test_batch_norm_training_matches_reference(n, c, spatial, dtype, layout, momentum, eps,
                                               affine, seed, threads_):
    with n_threads(threads_):
        _check_batch_norm(n, c, spatial, dtype, layout, momentum, eps, affine, seed)


def _check_batch_norm(n, c, spatial, dtype, layout, momentum, eps, affine, seed):
    rng = np.random.default_rng(seed)
    shape = (n, c) if spatial is None else (n, c) + spatial
    x = make_array(rng, shape, dtype, layout, -3.0, 5.0)
    gamma = rng.uniform(0.5, 2, c).astype(dtype) if affine else None
    beta = rng.standard_normal(c).astype(dtype) if affine else None
    rm = rng.standard_normal(c).astype(dtype)
    rv = rng.uniform(0.5, 2, c).astype(dtype)
    rm0, rv0 = rm.copy(), rv.copy()
    y = F.batch_norm(x, rm, rv, gamma, beta, training=True, momentum=momentum, eps=eps)
    axes = (0,) if spatial is None else (0, 2, 3)
    bshape = (1, c) + (() if spatial is None else (1, 1))
    x64 = x.astype(np.float64)
    mean, var = x64.mean(axis=axes), x64.var(axis=axes)
    expected = (x64 - mean.reshape(bshape)) / np.sqrt(var.reshape(bshape) + eps)
    if affine:
        expected = expected * gamma.reshape(bshape) + beta.reshape(bshape)
    count = x.size // c
    tol = TOL[dtype] if dtype == np.float64 else dict(rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(y.numpy(), expected, **tol)
    np.testing.assert_allclose(rm, (1 - momentum) * rm0 + momentum * mean, **tol)
    np.testing.assert_allclose(rv, (1 - momentum) * rv0 + momentum * var * count / (count - 1),
                               **tol)
    # Closed-form backward (biased variance): dx = gamma*r/N * (N g - sum g - xhat sum(g xhat)).
    xt = mn.tensor(x, requires_grad=True)
    gt = mn.tensor(gamma, requires_grad=True) if affine else None
    bt = mn.tensor(beta, requires_grad=True) if affine else None
    yt = F.batch_norm(xt, rm0.copy(), rv0.copy(), gt, bt, training=True, momentum=momentum, eps=eps)
    g = make_array(rng, shape, dtype, layout)
    yt.backward(g)
    g64 = g.astype(np.float64)
    r = 1.0 / np.sqrt(var.reshape(bshape) + eps)
    xhat = (x64 - mean.reshape(bshape)) * r
    scale = gamma.reshape(bshape).astype(np.float64) if affine else 1.0
    sum_g = g64.sum(axis=axes).reshape(bshape)
    sum_gx = (g64 * xhat).sum(axis=axes).reshape(bshape)
    dx = scale * r / count * (count * g64 - sum_g - xhat * sum_gx)
    gtol = TOL[dtype] if dtype == np.float64 else dict(rtol=2e-3, atol=2e-3)
    np.testing.assert_allclose(xt.grad, dx, **gtol)
    if affine:
        np.testing.assert_allclose(gt.grad, sum_gx.ravel(), **gtol)
        np.testing.assert_allclose(bt.grad, sum_g.ravel(), **gtol)
    # Eval mode uses the running statistics just computed.
    y_eval = F.batch_norm(x, rm, rv, gamma, beta, training=False, eps=eps)
    running_var = rv.reshape(bshape).astype(np.float64)
    expected_eval = (x64 - rm.reshape(bshape)) / np.sqrt(running_var + eps)
    if affine:
        expected_eval = expected_eval * gamma.reshape(bshape) + beta.reshape(bshape)
    np.testing.assert_allclose(y_eval.numpy(), expected_eval, **tol)


@fuzz("activations")
@given(name=st.sampled_from(sorted(ACTIVATIONS)),
       shape=st.lists(st.integers(1, 6), min_size=1, max_size=4), dtype=dtypes, layout=layouts,
       scale=st.sampled_from([1.0, 10.0, 100.0]), seed=st.integers(0, 2**31))
def test_activations_match_reference(name, shape, dtype, layout, scale, seed):
    rng = np.random.default_rng(seed)
    x = make_array(rng, tuple(shape), dtype, layout, -scale, scale)
    op, ref = ACTIVATIONS[name]
    xt = mn.tensor(x, requires_grad=True)
    with np.errstate(over="raise", invalid="raise"):
        y = op(xt)
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(y.numpy(), ref(x64), **TOL[dtype])
    y.backward(np.ones(y.shape, dtype))
    # Gradient against a central difference of the float64 reference (away from kinks at 0).
    h = 1e-6
    numeric = (ref(x64 + h) - ref(x64 - h)) / (2 * h)
    smooth = np.abs(x64) > 1e-3
    np.testing.assert_allclose(xt.grad[smooth], numeric[smooth], rtol=1e-3, atol=1e-4)


@fuzz("softmax")
@given(shape=st.lists(st.integers(1, 6), min_size=1, max_size=4), data=st.data(), dtype=dtypes,
       layout=layouts, scale=st.sampled_from([1.0, 30.0, 1e3]), seed=st.integers(0, 2**31))
def test_softmax_and_log_softmax_match_reference(shape, data, dtype, layout, scale, seed):
    rng = np.random.default_rng(seed)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    x = make_array(rng, tuple(shape), dtype, layout, -scale, scale)
    expected = ref_log_softmax(x, axis)
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        log_p = F.log_softmax(x, axis=axis).numpy()
        p = F.softmax(x, axis=axis).numpy()
    tol = TOL[dtype] if dtype == np.float64 else dict(rtol=1e-4, atol=1e-4 * max(1.0, scale / 10))
    np.testing.assert_allclose(log_p, expected, **tol)
    np.testing.assert_allclose(p, np.exp(expected), **TOL[dtype])
    np.testing.assert_allclose(p.sum(axis=axis), 1.0, rtol=1e-5)


@fuzz("cross_entropy")
@given(n=st.integers(1, 8), c=st.integers(1, 9), dtype=dtypes, layout=layouts,
       smoothing=st.sampled_from([0.0, 0.1, 0.5]),
       reduction=st.sampled_from(["mean", "sum", "none"]),
       soft=st.booleans(), seed=st.integers(0, 2**31))
def test_cross_entropy_matches_reference(n, c, dtype, layout, smoothing, reduction, soft, seed):
    rng = np.random.default_rng(seed)
    logits = make_array(rng, (n, c), dtype, layout, -5, 5)
    if soft:
        q = rng.uniform(0, 1, (n, c))
        target = (q / q.sum(axis=1, keepdims=True)).astype(dtype)
        q = target.astype(np.float64)
    else:
        target = rng.integers(0, c, n)
        q = np.eye(c)[target]
    q = q * (1 - smoothing) + smoothing / c
    lt = mn.tensor(logits, requires_grad=True)
    loss = F.cross_entropy(lt, target, label_smoothing=smoothing, reduction=reduction)
    log_p = ref_log_softmax(logits, 1)
    per_row = -(q * log_p).sum(axis=1)
    expected = {"none": per_row, "sum": per_row.sum(), "mean": per_row.mean()}[reduction]
    np.testing.assert_allclose(loss.numpy(), expected, **TOL[dtype])
    g = np.ones(loss.shape, dtype)
    loss.backward(g if loss.ndim else None)
    row_scale = 1.0 / n if reduction == "mean" else 1.0
    # d(-sum q log softmax)/dz = softmax * sum(q) - q
    expected_grad = (np.exp(log_p) * q.sum(axis=1, keepdims=True) - q) * row_scale
    np.testing.assert_allclose(lt.grad, expected_grad, **TOL[dtype])


@fuzz("dropout_stats")
@given(rate=st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.9]), dtype=dtypes, layout=layouts,
       seed=st.integers(0, 2**31), kind=st.sampled_from(["dropout", "spatial"]), threads_=threads)
def test_dropout_statistics(rate, dtype, layout, seed, kind, threads_):
    with n_threads(threads_):
        _check_dropout_statistics(rate, dtype, layout, seed, kind)


def _check_dropout_statistics(rate, dtype, layout, seed, kind):
    mn.manual_seed(seed)
    shape = (20, 50, 4, 5) if kind == "spatial" else (40, 1000)
    x = make_array(np.random.default_rng(seed), shape, dtype, layout, 1.0, 2.0)
    op = F.dropout if kind == "dropout" else F.spatial_dropout2d
    xt = mn.tensor(x, requires_grad=True)
    y = op(xt, rate, training=True)
    out = y.numpy()
    kept = out != 0
    # Kept entries are scaled by exactly 1/(1-rate); dropped ones are exactly 0.
    np.testing.assert_allclose(out[kept], x[kept] / (1 - rate), rtol=1e-6)
    if kind == "spatial":
        per_channel = kept.reshape(shape[0], shape[1], -1)
        assert np.all(per_channel.all(axis=2) | ~per_channel.any(axis=2))
        units = per_channel[:, :, 0]
    else:
        units = kept
    m = units.size
    # Keep fraction within 5 standard deviations of 1 - rate.
    sd = np.sqrt(rate * (1 - rate) / m)
    assert abs(units.mean() - (1 - rate)) <= 5 * sd + 1e-12
    y.backward(np.ones(shape, dtype))
    np.testing.assert_array_equal(xt.grad != 0, kept)
    # Eval mode is the identity.
    np.testing.assert_array_equal(op(x, rate, training=False).numpy(), x)


@fuzz("dropout_determinism")
@given(rate=st.floats(0.05, 0.95), seed=st.integers(0, 2**31), threads=st.sampled_from([1, 2, 4]),
       n=st.integers(1, 5000))
def test_dropout_same_seed_same_mask_any_thread_count(rate, seed, threads, n):
    x = np.ones(n, np.float32)
    previous = mn.get_num_threads()
    try:
        mn.set_num_threads(1)
        mn.manual_seed(seed)
        a = F.dropout(x, rate).numpy()
        a2 = F.dropout(x, rate).numpy()
        mn.set_num_threads(threads)
        mn.manual_seed(seed)
        b = F.dropout(x, rate).numpy()
        b2 = F.dropout(x, rate).numpy()
    finally:
        mn.set_num_threads(previous)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a2, b2)
    if n >= 200:
        assert not np.array_equal(a, a2)  # successive calls draw fresh masks


@fuzz("global_avg_pool2d")
@given(n=st.integers(1, 4), c=st.integers(1, 5), h=st.integers(1, 7), w=st.integers(1, 7),
       dtype=dtypes, layout=layouts, seed=st.integers(0, 2**31))
def test_global_avg_pool_matches_mean(n, c, h, w, dtype, layout, seed):
    rng = np.random.default_rng(seed)
    x = make_array(rng, (n, c, h, w), dtype, layout)
    xt = mn.tensor(x, requires_grad=True)
    y = F.global_avg_pool2d(xt)
    np.testing.assert_allclose(y.numpy(), x.astype(np.float64).mean(axis=(2, 3)), **TOL[dtype])
    g = rng.standard_normal((n, c)).astype(dtype)
    y.backward(g)
    np.testing.assert_allclose(xt.grad, np.broadcast_to(g[:, :, None, None] / (h * w), x.shape),
                               **TOL[dtype])


@fuzz("alpha_dropout")
@given(rate=st.sampled_from([0.05, 0.2, 0.5]), seed=st.integers(0, 2**31),
       dtype=dtypes, layout=layouts)
def test_alpha_dropout_keeps_mean_and_variance(rate, seed, dtype, layout):
    """SELU's fixed point (mean 0, variance 1) survives alpha dropout, up to sampling error."""
    mn.manual_seed(seed)
    x = make_array(np.random.default_rng(seed), (200, 250), dtype, layout)
    x = np.asarray(np.random.default_rng(seed).standard_normal(x.shape), dtype=dtype)
    y = F.alpha_dropout(x, rate, training=True).numpy().astype(np.float64)
    assert abs(y.mean()) < 0.03 and abs(y.var() - 1.0) < 0.05
    # Every output is either the affine image of its input or the one dropped value.
    alpha_p = -1.7580993408473766
    a = ((1 - rate) * (1 + rate * alpha_p ** 2)) ** -0.5
    b = -a * alpha_p * rate
    kept = np.isclose(y, a * x + b, rtol=1e-5, atol=1e-5)
    dropped = np.isclose(y, a * alpha_p + b, rtol=1e-5, atol=1e-5)
    assert np.all(kept | dropped)
    assert abs(dropped.mean() - rate) < 5 * np.sqrt(rate * (1 - rate) / y.size) + 1e-3
    np.testing.assert_array_equal(F.alpha_dropout(x, rate, training=False).numpy(), x)
