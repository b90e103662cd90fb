"""minnet.ops against plain NumPy/SciPy references (no Keras needed): every case of the
oracle table whose op NumPy has with the same meaning, plus hand-written references for the
nn, linalg, math and core ops NumPy lacks."""
import numpy as np
import pytest
from scipy import special

from minnet import ops
from _ops_cases import CASES

# ops whose NumPy function has the same meaning and arguments (the probe that made this list
# found every other NumPy-named op covered by a hand-written reference below)
NUMPY_SAME = sorted({
    "abs", "add", "all", "amax", "amin", "any", "arange", "arccos", "arccosh", "arcsin", "arcsinh", "arctan",
    "arctan2", "arctanh", "argmax", "argmin", "argsort", "array", "array_split", "average", "bincount",
    "bitwise_and", "bitwise_invert", "broadcast_to", "cbrt", "ceil", "clip", "concatenate", "copy", "corrcoef",
    "correlate", "cos", "cosh", "count_nonzero", "cumprod", "cumsum", "deg2rad", "diag", "diagflat", "diagonal",
    "diff", "digitize", "divide", "dot", "dsplit", "dstack", "einsum", "equal", "exp", "exp2", "expand_dims",
    "expm1", "eye", "fabs", "flip", "fliplr", "flipud", "floor", "floor_divide", "fmax", "fmin", "fmod", "full",
    "full_like", "gcd", "geomspace", "greater", "greater_equal", "hamming", "heaviside", "histogram", "hsplit",
    "hstack", "hypot", "identity", "inner", "isclose", "isfinite", "isin", "isnan", "kaiser", "kron", "lcm",
    "ldexp", "left_shift", "less", "less_equal", "linspace", "log", "log10", "log1p", "log2", "logaddexp",
    "logaddexp2", "logical_and", "logical_not", "logical_or", "logical_xor", "logspace", "matmul", "max",
    "maximum", "mean", "median", "meshgrid", "min", "minimum", "mod", "moveaxis", "multiply", "nan_to_num",
    "nanargmax", "nancumsum", "nanmax", "nanmean", "nanmedian", "nanmin", "nanprod", "nanquantile", "nanstd",
    "nansum", "nanvar", "negative", "nextafter", "nonzero", "not_equal", "ones_like", "outer", "pad",
    "percentile", "power", "prod", "ptp", "quantile", "rad2deg", "ravel", "reciprocal", "repeat", "right_shift",
    "roll", "rot90", "round", "searchsorted", "select", "sign", "signbit", "sin", "sinc", "sinh", "sort",
    "split", "sqrt", "square", "squeeze", "stack", "std", "subtract", "sum", "swapaxes", "take",
    "take_along_axis", "tan", "tanh", "tensordot", "tile", "trace", "transpose", "trapezoid", "tri", "tril",
    "triu", "trunc", "unique", "unravel_index", "vander", "var", "vdot", "vsplit", "vstack", "where",
    "zeros", "zeros_like",
})


def _np(value):
    if isinstance(value, (list, tuple)):
        return [_np(v) for v in value]
    return np.asarray(ops.convert_to_numpy(value))


def _close(mine, ref, name, rtol=2e-5, atol=2e-5):
    if isinstance(ref, (list, tuple)):
        assert isinstance(mine, list) and len(mine) == len(ref), name
        for m, r in zip(mine, ref):
            _close(m, r, name, rtol, atol)
        return
    ref = np.asarray(ref)
    assert mine.shape == ref.shape, (name, mine.shape, ref.shape)
    np.testing.assert_allclose(mine.astype(np.float64), ref.astype(np.float64), rtol=rtol, atol=atol,
                               equal_nan=True, err_msg=name)


SAME_CASES = [c for c in CASES if c[0] in NUMPY_SAME]


def test_the_table_covers_every_numpy_op():
    assert {c[0] for c in SAME_CASES} == set(NUMPY_SAME)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("name, builders, kwargs", SAME_CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(SAME_CASES)])
def test_matches_numpy(name, builders, kwargs):
    rng = np.random.default_rng(7)
    args = [b(rng) for b in builders]
    _close(_np(getattr(ops, name)(*args, **kwargs)), getattr(np, name)(*args, **kwargs), name)


def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _conv2d_nhwc(x, k, stride=1, pads=((0, 0), (0, 0)), dilation=1):
    x = np.pad(x, ((0, 0), *pads, (0, 0)))
    kh, kw, c, f = k.shape
    n, h, w, _ = x.shape
    oh = (h - dilation * (kh - 1) - 1) // stride + 1
    ow = (w - dilation * (kw - 1) - 1) // stride + 1
    out = np.zeros((n, oh, ow, f))
    for i in range(oh):
        for j in range(ow):
            patch = x[:, i * stride:i * stride + dilation * (kh - 1) + 1:dilation,
                      j * stride:j * stride + dilation * (kw - 1) + 1:dilation, :]
            out[:, i, j] = np.einsum("nhwc,hwcf->nf", patch, k)
    return out


def _pool(x, size, stride, reduce):
    n, h, w, c = x.shape
    oh, ow = (h - size) // stride + 1, (w - size) // stride + 1
    return np.stack([np.stack([reduce(x[:, i * stride:i * stride + size, j * stride:j * stride + size], axis=(1, 2))
                               for j in range(ow)], 1) for i in range(oh)], 1)


G = np.random.default_rng(3)
X = G.normal(size=(3, 4)).astype(np.float32)
IMG = G.normal(size=(2, 5, 5, 3)).astype(np.float32)
KER = G.normal(size=(3, 3, 3, 4)).astype(np.float32)
SPD = (lambda a: a @ a.T + 3 * np.eye(3))(G.normal(size=(3, 3)))
LABELS = np.array([0, 3, 1])
P = _softmax(X)

REFERENCES = [
    ("relu", (X,), {}, np.maximum(X, 0)), ("relu6", (X * 4,), {}, np.clip(X * 4, 0, 6)),
    ("sigmoid", (X,), {}, 1 / (1 + np.exp(-X))), ("softplus", (X,), {}, np.log1p(np.exp(X))),
    ("softsign", (X,), {}, X / (1 + np.abs(X))), ("silu", (X,), {}, X / (1 + np.exp(-X))),
    ("log_sigmoid", (X,), {}, -np.log1p(np.exp(-X))), ("leaky_relu", (X,), {}, np.where(X > 0, X, 0.2 * X)),
    ("elu", (X,), {}, np.where(X > 0, X, np.expm1(X))), ("hard_sigmoid", (X,), {}, np.clip(X / 6 + 0.5, 0, 1)),
    ("gelu", (X,), {"approximate": False}, X * 0.5 * (1 + special.erf(X / np.sqrt(2)))),
    ("gelu", (X,), {}, 0.5 * X * (1 + np.tanh(np.sqrt(2 / np.pi) * (X + 0.044715 * X ** 3)))),
    ("selu", (X,), {}, 1.0507009873554805 * np.where(X > 0, X, 1.6732632423543772 * np.expm1(X))),
    ("softmax", (X,), {}, P), ("log_softmax", (X,), {"axis": 0}, np.log(_softmax(X, 0))),
    ("one_hot", (LABELS, 4), {}, np.eye(4)[LABELS]), ("logsumexp", (X,), {"axis": 1}, special.logsumexp(X, 1)),
    ("erf", (X,), {}, special.erf(X)), ("erfinv", (np.clip(X, -0.9, 0.9),), {}, special.erfinv(np.clip(X, -0.9, 0.9))),
    ("rsqrt", (np.abs(X) + 0.5,), {}, 1 / np.sqrt(np.abs(X) + 0.5)),
    ("moments", (X, [0]), {}, (X.mean(0), X.var(0))),
    ("batch_normalization", (X, X.mean(0), X.var(0), 1), {"epsilon": 1e-3}, (X - X.mean(0)) / np.sqrt(X.var(0) + 1e-3)),
    ("layer_normalization", (X,), {"epsilon": 1e-3},
     (X - X.mean(1, keepdims=True)) / np.sqrt(X.var(1, keepdims=True) + 1e-3)),
    ("normalize", (X,), {}, X / np.linalg.norm(X, axis=-1, keepdims=True)),
    ("categorical_crossentropy", (np.eye(4)[LABELS], X), {"from_logits": True},
     -np.log(P[np.arange(3), LABELS])),
    ("sparse_categorical_crossentropy", (LABELS, X), {"from_logits": True}, -np.log(P[np.arange(3), LABELS])),
    ("sparse_categorical_crossentropy", (LABELS, P), {}, -np.log(P[np.arange(3), LABELS])),
    ("binary_crossentropy", ((X > 0) * 1.0, 1 / (1 + np.exp(-X))), {},
     -((X > 0) * np.log(1 / (1 + np.exp(-X))) + (X <= 0) * np.log(1 - 1 / (1 + np.exp(-X))))),
    ("conv", (IMG, KER), {}, _conv2d_nhwc(IMG, KER)),
    ("conv", (IMG, KER), {"padding": "same"}, _conv2d_nhwc(IMG, KER, pads=((1, 1), (1, 1)))),
    ("conv", (IMG, KER), {"strides": 2, "padding": "same"}, _conv2d_nhwc(IMG, KER, 2, ((1, 1), (1, 1)))),
    ("conv", (IMG, KER[:2, :2]), {"dilation_rate": 2}, _conv2d_nhwc(IMG, KER[:2, :2], dilation=2)),
    ("max_pool", (IMG, 2), {}, _pool(IMG, 2, 2, np.max)), ("average_pool", (IMG, 3), {"strides": 1}, _pool(IMG, 3, 1, np.mean)),
    ("inv", (SPD,), {}, np.linalg.inv(SPD)), ("det", (SPD,), {}, np.linalg.det(SPD)),
    ("solve", (SPD, X[:, :2].astype(np.float64)), {}, np.linalg.solve(SPD, X[:, :2])),
    ("cholesky", (SPD,), {}, np.linalg.cholesky(SPD)), ("logdet", (SPD,), {}, np.log(np.linalg.det(SPD))),
    ("slogdet", (SPD,), {}, np.linalg.slogdet(SPD)), ("norm", (X,), {}, np.linalg.norm(X)),
    ("norm", (X,), {"ord": 1, "axis": 0}, np.linalg.norm(X, 1, axis=0)),
    ("norm", (X,), {"ord": "nuc", "axis": (0, 1)}, np.linalg.norm(X, "nuc")),
    ("pinv", (X,), {}, np.linalg.pinv(X)), ("lstsq", (X.T.astype(np.float64), np.ones(4)), {},
                                           np.linalg.lstsq(X.T, np.ones(4), rcond=None)[0]),
    ("top_k", (X, 2), {}, (-np.sort(-X, 1)[:, :2], np.argsort(-X, 1, kind="stable")[:, :2])),
    ("cast", (X, "int32"), {}, X.astype(np.int32)), ("divide_no_nan", (X, np.array([0, 1, 0, 2.0], np.float32)), {},
                                                     np.where([0, 1, 0, 2] == np.zeros(4), 0, X / np.array([1, 1, 1, 2.0]))),
    ("slice", (X, (1, 1), (2, 2)), {}, X[1:3, 1:3]),
    ("slice_update", (X, (1, 0), np.zeros((1, 4), np.float32)), {}, np.concatenate([X[:1], np.zeros((1, 4)), X[2:]])),
    ("scatter", (np.array([[0, 0], [1, 1], [0, 0]]), np.array([1.0, 2.0, 3.0]), (2, 2)), {}, np.array([[4.0, 0], [0, 2.0]])),
    ("segment_sum", (X, np.array([0, 1, 0])), {}, np.stack([X[0] + X[2], X[1]])),
    ("segment_max", (X, np.array([0, 1, 0])), {}, np.stack([np.maximum(X[0], X[2]), X[1]])),
    ("rfft", (X,), {}, (np.fft.rfft(X).real, np.fft.rfft(X).imag)),
    ("fft", ((X, X * 0.5),), {}, (np.fft.fft(X + 0.5j * X).real, np.fft.fft(X + 0.5j * X).imag)),
    ("fft2", ((X, X * 0.5),), {}, (np.fft.fft2(X + 0.5j * X).real, np.fft.fft2(X + 0.5j * X).imag)),
    ("irfft", ((np.fft.rfft(X).real, np.fft.rfft(X).imag),), {"fft_length": 4}, X),
    ("cdist", (X, X[:2]), {}, np.sqrt(((X[:, None] - X[None, :2]) ** 2).sum(-1))),
    ("extract_sequences", (X, 2, 1), {}, np.stack([X[:, i:i + 2] for i in range(3)], 1)),
    ("depth_to_space", (np.arange(16.0).reshape(1, 2, 2, 4), 2), {},
     np.arange(16.0).reshape(1, 2, 2, 2, 2, 1).transpose(0, 1, 3, 2, 4, 5).reshape(1, 4, 4, 1)),
    ("rearrange", (X, "a b -> b a"), {}, X.T), ("glu", (X,), {}, X[:, :2] / (1 + np.exp(-X[:, 2:]))),
    ("in_top_k", (LABELS, X, 2), {}, np.array([(X[i] > X[i, LABELS[i]]).sum() < 2 for i in range(3)])),
]


@pytest.mark.parametrize("name, args, kwargs, expected", REFERENCES, ids=[f"{r[0]}-{i}" for i, r in enumerate(REFERENCES)])
def test_matches_reference(name, args, kwargs, expected):
    _close(_np(getattr(ops, name)(*args, **kwargs)), expected, name, rtol=1e-4, atol=1e-5)


def test_image_resize_reference():
    # bilinear with half-pixel centres: doubling a 2x2 image, by hand
    x = np.array([[0.0, 1.0], [2.0, 3.0]]).reshape(1, 2, 2, 1)
    out = ops.image.resize(x, (4, 4)).numpy()[0, :, :, 0]
    rows = np.array([0.0, 0.5, 1.5, 2.0])         # 0, 0.25, 0.75, 1 of the way, times 2 (row step)
    cols = np.array([0.0, 0.25, 0.75, 1.0])
    np.testing.assert_allclose(out, rows[:, None] + cols[None, :])


def test_factorisations_reconstruct():
    a = G.normal(size=(4, 3))
    q, r = ops.qr(a)
    np.testing.assert_allclose((q.numpy() @ r.numpy()), a, atol=1e-10)
    u, s, vh = ops.svd(a, full_matrices=False)
    np.testing.assert_allclose(u.numpy() * s.numpy() @ vh.numpy(), a, atol=1e-10)
    np.testing.assert_allclose(ops.svd(a, compute_uv=False).numpy(), np.linalg.svd(a, compute_uv=False))
    w, v = ops.eigh(SPD)
    np.testing.assert_allclose(w.numpy(), np.linalg.eigvalsh(SPD))
    np.testing.assert_allclose(SPD @ v.numpy(), v.numpy() * w.numpy(), atol=1e-10)
    w, v = ops.eig(SPD)
    np.testing.assert_allclose(np.sort(w.numpy()), np.linalg.eigvalsh(SPD))
    with pytest.raises(ValueError, match="complex"):
        ops.eig(np.array([[0.0, -1.0], [1.0, 0.0]]))
    assert int(ops.matrix_rank(np.outer([1.0, 2.0], [3.0, 4.0])).numpy()) == 1
