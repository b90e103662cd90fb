"""minnet._ext.activations_kernels against plain NumPy references (float32 and float64)."""
import numpy as np
import pytest

from minnet._ext import activations_kernels as K
from minnet._ext import softmax_kernels as S
from minnet._ext import unary_kernels as U

from _harness import TOLERANCES

TOL = TOLERANCES["kernel_elementwise"]
DTYPES = [np.float32, np.float64]
# Odd sizes on purpose; 70001 is above the parallel threshold and not a multiple of a block.
SHAPES = [(1,), (7,), (3, 5), (2, 3, 4, 5), (70001,)]


def _ref_sigmoid(x):
    x = x.astype(np.float64)
    return np.where(x >= 0, 1 / (1 + np.exp(-np.abs(x))), np.exp(-np.abs(x)) / (1 + np.exp(-np.abs(x))))


def _ref_elu(x, alpha, scale):
    x = x.astype(np.float64)
    return scale * np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0)))


def _data(rng, shape, dtype, scale=3.0):
    return (rng.standard_normal(shape) * scale).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_sigmoid_forward_backward(rng, dtype, shape):
    x = _data(rng, shape, dtype)
    g = _data(rng, shape, dtype, 1.0)
    y = K.sigmoid_forward(x)
    assert y.dtype == dtype and y.shape == shape
    np.testing.assert_allclose(y, _ref_sigmoid(x), **TOL[dtype])
    dx = K.sigmoid_backward(y, g)
    np.testing.assert_allclose(dx, g * y * (1 - y), **TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_tanh_forward_backward(rng, dtype, shape):
    x = _data(rng, shape, dtype)
    g = _data(rng, shape, dtype, 1.0)
    y = K.tanh_forward(x)
    np.testing.assert_allclose(y, np.tanh(x.astype(np.float64)), **TOL[dtype])
    np.testing.assert_allclose(K.tanh_backward(y, g), g * (1 - y * y), **TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("slope", [0.0, 0.01, 0.3, -0.5])
def test_leaky_relu(rng, dtype, slope):
    x = _data(rng, (3, 77), dtype)
    x[0, :3] = 0
    g = _data(rng, x.shape, dtype, 1.0)
    y = K.leaky_relu_forward(x, slope)
    np.testing.assert_array_equal(y, np.where(x > 0, x, x * dtype(slope)))
    ref_dx = np.where(x > 0, g, g * dtype(slope))
    np.testing.assert_array_equal(K.leaky_relu_backward(x, g, slope), ref_dx)
    if slope >= 0:          # the output marks the same elements as the input
        np.testing.assert_array_equal(K.leaky_relu_backward(y, g, slope), ref_dx)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n_threads", [1, 2])
def test_relu_backward_is_a_select_on_the_output(rng, dtype, n_threads):
    # torch's threshold_backward: 0 where y <= 0 (also for an infinite gradient, where
    # g * 0 would be NaN), g elsewhere (also where y is NaN)
    y = np.maximum(_data(rng, (3, 70001), dtype), 0)
    y.flat[:6] = [0.0, -0.0, np.nan, np.inf, 2.0, 0.0]
    g = _data(rng, y.shape, dtype, 1.0)
    g.flat[:6] = [np.inf, -np.inf, 1.5, -2.0, np.nan, -1.0]
    dx = K.relu_backward(y, g, n_threads=n_threads)
    ref = np.where(y <= 0, dtype(0), g)
    np.testing.assert_array_equal(dx.view(np.uint8), ref.view(np.uint8))    # +0, never -0
    assert dx.dtype == dtype and dx[0, 2] == dtype(1.5)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("alpha,scale", [(1.0, 1.0), (0.5, 1.0), (0.0, 1.0),
                                         (K.SELU_ALPHA, K.SELU_SCALE)])
def test_elu_and_selu(rng, dtype, alpha, scale):
    x = _data(rng, (5, 101), dtype)
    x[0, :2] = 0
    g = _data(rng, x.shape, dtype, 1.0)
    y = K.elu_forward(x, alpha, scale)
    np.testing.assert_allclose(y, _ref_elu(x, alpha, scale), **TOL[dtype])
    x64 = x.astype(np.float64)
    ref_dx = g * np.where(x64 > 0, scale, scale * alpha * np.exp(np.minimum(x64, 0)))
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else TOL[dtype]
    np.testing.assert_allclose(K.elu_backward(y, g, alpha, scale, from_output=True), ref_dx, **tol)
    np.testing.assert_allclose(K.elu_backward(x, g, alpha, scale, from_output=False), ref_dx, **tol)


def test_elu_backward_from_output_needs_nonnegative_alpha(rng):
    y = np.zeros(3)
    with pytest.raises(ValueError, match="alpha"):
        K.elu_backward(y, y, alpha=-1.0, from_output=True)


def _ref_softmax(x):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (1, 10), (7, 3), (64, 10), (3, 1001), (2000, 33)])
@pytest.mark.parametrize("log", [False, True])
def test_softmax_forward_backward(rng, dtype, shape, log):
    x = _data(rng, shape, dtype)
    g = _data(rng, shape, dtype, 1.0)
    y = S.softmax_forward(x, log=log)
    p = _ref_softmax(x)
    # Sums over a row cancel: compare with an absolute tolerance at the row's scale.
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(y, np.log(p) if log else p, **tol)
    dx = S.softmax_backward(y, g, log=log)
    g64 = g.astype(np.float64)
    if log:
        ref = g64 - p * g64.sum(axis=1, keepdims=True)
    else:
        ref = p * (g64 - (g64 * p).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(dx, ref, **tol)


def test_extreme_values_stay_finite():
    for dtype in DTYPES:
        x = np.array([-1e4, -500, -100, -88, -87, 0, 87, 88, 100, 500, 1e4], dtype)
        y = K.sigmoid_forward(x)
        assert np.all(np.isfinite(y)) and np.all((y >= 0) & (y <= 1))
        assert y[0] == 0 and y[-1] == 1 and y[5] == 0.5
        assert np.all(np.isfinite(K.tanh_forward(x)))
        assert np.all(np.isfinite(K.elu_forward(x)))
        rows = np.array([[1e4, -1e4, 0], [-1e4, -1e4, -1e4]], dtype)
        p = S.softmax_forward(rows)
        np.testing.assert_allclose(p, [[1, 0, 0], [1 / 3, 1 / 3, 1 / 3]], rtol=1e-6)
        lp = S.softmax_forward(rows, log=True)
        assert np.all(np.isfinite(lp))
        np.testing.assert_allclose(lp[0], [0, -2e4, -1e4], rtol=1e-6)


def test_nan_propagates():
    x = np.array([np.nan, 1.0, -1.0], np.float32)
    assert np.isnan(K.sigmoid_forward(x)[0])
    assert np.isnan(K.leaky_relu_forward(x, 0.0)[0])
    assert np.isnan(S.softmax_forward(x.reshape(1, 3))).all()


@pytest.mark.parametrize("dtype", DTYPES)
def test_thread_count_does_not_change_results(rng, dtype):
    x = _data(rng, (300, 1001), dtype)
    g = _data(rng, x.shape, dtype, 1.0)
    for fwd in (K.sigmoid_forward, K.tanh_forward, K.elu_forward,
                lambda a, n_threads: S.softmax_forward(a, log=True, n_threads=n_threads)):
        np.testing.assert_array_equal(fwd(x, n_threads=1), fwd(x, n_threads=3))
    y = S.softmax_forward(x)
    np.testing.assert_array_equal(S.softmax_backward(y, g, n_threads=1),
                                  S.softmax_backward(y, g, n_threads=2))


def test_out_argument_and_in_place(rng):
    x = _data(rng, (4, 9), np.float64)
    expected = K.sigmoid_forward(x)
    out = np.empty_like(x)
    assert K.sigmoid_forward(x, out=out) is out
    np.testing.assert_array_equal(out, expected)
    K.sigmoid_forward(x, out=x)
    np.testing.assert_array_equal(x, expected)


def test_empty_arrays():
    for dtype in DTYPES:
        assert K.sigmoid_forward(np.empty((0, 3), dtype)).shape == (0, 3)
        assert S.softmax_forward(np.empty((0, 3), dtype)).shape == (0, 3)
        assert S.softmax_forward(np.empty((2, 0), dtype)).shape == (2, 0)


def test_bad_arguments_raise_named_errors():
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(TypeError, match="`x`.*float32 or float64"):
        K.sigmoid_forward(np.zeros(3, np.int64))
    with pytest.raises(TypeError, match="`x`.*ndarray"):
        K.sigmoid_forward([1.0, 2.0])
    with pytest.raises(ValueError, match="`x`.*C-contiguous"):
        K.sigmoid_forward(np.zeros((3, 4), np.float32).T)
    with pytest.raises(ValueError, match="`grad`.*shape"):
        K.sigmoid_backward(x, np.zeros((3, 2), np.float32))
    with pytest.raises(TypeError, match="`grad`.*float32"):
        K.sigmoid_backward(x, np.zeros((2, 3), np.float64))
    with pytest.raises(ValueError, match="`out`.*shape"):
        K.tanh_forward(x, out=np.zeros(6, np.float32))
    with pytest.raises(ValueError, match="`x`.*2-D"):
        S.softmax_forward(np.zeros(3, np.float32))
    with pytest.raises(ValueError, match="`n_threads`"):
        K.sigmoid_forward(x, n_threads=0)


def test_float32_gelu_accuracy_against_float64_erf():
    # Phi(x) in float32 is erf's Taylor series near 0 and 0.5 t R(t) exp(-x^2/2) beyond
    # (R fitted to erfcx, docs/math/activations.md); the reference is math.erfc in float64,
    # with Phi(x) = erfc(-x / sqrt 2) / 2 (no cancellation in the left tail).
    import math
    x = np.linspace(-12, 12, 200_001).astype(np.float32)
    xd = x.astype(np.float64)
    phi = 0.5 * np.array([math.erfc(-v / math.sqrt(2)) for v in xd])
    ref_y = xd * phi
    ref_d = phi + xd * np.exp(-0.5 * xd * xd) / math.sqrt(2 * math.pi)
    y = U.unary_forward(x, "gelu").astype(np.float64)
    d = U.unary_backward(x, np.ones_like(x), "gelu").astype(np.float64)
    big = np.abs(ref_y) > 1e-6
    assert np.abs(y - ref_y).max() <= 4e-7                       # measured 3.84e-7
    assert (np.abs(y - ref_y)[big] / np.abs(ref_y[big])).max() <= 2.2e-6   # measured 1.79e-6
    assert np.abs(d - ref_d).max() <= 2e-7                       # measured 1.24e-7
    # left tail: relative error grows with x^2 (float32 rounding of x^2 / 2 before the exp)
    tail = (x < 0) & (np.abs(ref_y) > 1e-30)
    assert (np.abs(y - ref_y)[tail] / np.abs(ref_y[tail])).max() <= 2e-5
    # the switch between the two forms at |x| = sqrt(2) / 2 is continuous to a few ulp
    edge = np.float32(math.sqrt(2) / 2)
    xs = np.array([np.nextafter(edge, np.float32(0)), edge, np.nextafter(edge, np.float32(1))],
                  np.float32)
    xs = np.concatenate([xs, -xs])
    ys = U.unary_forward(xs, "gelu")
    assert np.abs(np.diff(ys[:3])).max() < 1e-6 and np.abs(np.diff(ys[3:])).max() < 1e-6


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(1, 1), (3, 7), (64, 1000), (5, 33)])
def test_logsumexp_rows_against_numpy_and_thread_counts(rng, dtype, shape):
    x = (rng.standard_normal(shape) * 20).astype(dtype)
    x64 = x.astype(np.float64)
    m = x64.max(axis=1, keepdims=True)
    want = (m + np.log(np.exp(x64 - m).sum(axis=1, keepdims=True)))[:, 0]
    got = S.logsumexp_rows(x, n_threads=1)
    assert got.dtype == dtype and got.shape == (shape[0],)
    np.testing.assert_allclose(got, want, rtol=2e-7 if dtype == np.float32 else 1e-14, atol=1e-6)
    # one row's sum never depends on the thread count
    np.testing.assert_array_equal(S.logsumexp_rows(x, n_threads=2), got)
    # the same row code as log_softmax: x - lse
    np.testing.assert_array_equal(S.softmax_forward(x, log=True), x - got[:, None])


def test_logsumexp_rows_infinite_rows_and_bad_input():
    x = np.array([[-np.inf, -np.inf], [np.inf, 1.0], [np.nan, 1.0], [1e30, 1e30]], np.float32)
    out = S.logsumexp_rows(x)
    assert out[0] == -np.inf and out[1] == np.inf and np.isnan(out[2])
    assert out[3] == pytest.approx(1e30 + np.log(2), rel=1e-6)
    with pytest.raises(ValueError, match="at least one column"):
        S.logsumexp_rows(np.zeros((3, 0), np.float32))
    with pytest.raises(TypeError, match="`x`"):
        S.logsumexp_rows(np.zeros((3, 2), np.int64))


# The gradient of `.sum().backward()` is one value broadcast to the whole shape (every
# stride 0); the kernels read it once (float32: MINNET_FOR_GRAD in _base.h) instead of a
# full array.  The result must be the same bits as with that value written out in full.
_BACKWARDS = {
    "sigmoid": lambda s, g, t: K.sigmoid_backward(s, g, n_threads=t),
    "tanh": lambda s, g, t: K.tanh_backward(s, g, n_threads=t),
    "relu": lambda s, g, t: K.relu_backward(s, g, n_threads=t),
    "leaky_relu_0": lambda s, g, t: K.leaky_relu_backward(s, g, 0.0, n_threads=t),
    "leaky_relu": lambda s, g, t: K.leaky_relu_backward(s, g, 0.1, n_threads=t),
    "elu_from_output": lambda s, g, t: K.elu_backward(s, g, 1.3, 1.0, True, n_threads=t),
    "selu_from_input": lambda s, g, t: K.elu_backward(s, g, K.SELU_ALPHA, K.SELU_SCALE, False, n_threads=t),
    **{f"unary_{op}": (lambda op: lambda s, g, t: U.unary_backward(s, g, op, n_threads=t))(op)
       for op in sorted(U.UNARY_OPS)},
}


@pytest.mark.parametrize("name", sorted(_BACKWARDS))
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n_threads", [1, 2])
def test_broadcast_gradient_gives_the_bits_of_the_full_gradient(name, dtype, n_threads):
    rng = np.random.default_rng(3)
    shape = (2 * 8192 + 37, 3)          # several blocks, the last one short
    s = (rng.standard_normal(shape) * 4).astype(dtype)
    s.flat[:8] = [0.0, -0.0, np.inf, -np.inf, np.nan, 30.0, -30.0, 3.0]
    value = dtype(-1.75)
    full = _BACKWARDS[name](s, np.full(shape, value), n_threads)
    one = _BACKWARDS[name](s, np.broadcast_to(value, shape), n_threads)
    assert one.shape == shape and one.flags.c_contiguous
    np.testing.assert_array_equal(one.view(np.uint8), full.view(np.uint8))
