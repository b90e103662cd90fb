"""float64 gradcheck of every differentiable op in minnet.ops (tiny shapes), and
gradgradcheck of the elementwise Functions the ops floor adds (their backward is recorded)."""
import numpy as np
import pytest

import minnet as mn
from minnet import ops

pytestmark = [pytest.mark.filterwarnings("ignore:__array__ implementation:DeprecationWarning"),   # inside Keras/torch
              pytest.mark.filterwarnings("ignore:Using torch.cross:UserWarning")]


def r(*shape, low=-1.5, high=1.5):
    return lambda g: g.uniform(low, high, shape)


def away(*shape):
    # values away from the kinks of abs/max/round-type ops, so finite differences are exact
    return lambda g: g.choice([-1, 1], shape) * g.uniform(0.3, 1.5, shape)


def pos(*shape):
    return r(*shape, low=0.3, high=1.5)


def unit(*shape):
    return r(*shape, low=-0.8, high=0.8)


def spd(n):
    def make(g):
        a = g.normal(size=(n, n))
        return a @ a.T + n * np.eye(n)
    return make


def sym(n):
    def make(g):
        a = g.normal(size=(n, n))
        return a + a.T + np.diag(np.arange(n) * 3.0)   # distinct eigenvalues
    return make


GRAD_CASES = [
    (name, [r(2, 3)], {}) for name in
    ["negative", "square", "exp", "expm1", "sin", "cos", "tan", "tanh", "sinh", "cosh", "arctan", "arcsinh",
     "sigmoid", "softplus", "softsign", "silu", "log_sigmoid", "elu", "selu", "gelu", "celu", "squareplus",
     "tanh_shrink", "erf", "erfc", "exp2", "deg2rad", "softmax", "log_softmax", "cumsum", "cumprod", "mean",
     "sum", "var", "std", "logsumexp", "transpose", "ravel", "flip", "rot90", "sinc", "copy", "normalize",
     "layer_normalization", "rms_normalization", "glu_skip"]
    if not name.endswith("_skip")
] + [
    (name, [pos(2, 3)], {}) for name in ["sqrt", "log", "log2", "log10", "log1p", "rsqrt", "reciprocal", "cbrt"]
] + [
    (name, [unit(2, 3)], {}) for name in ["arcsin", "arccos", "arctanh", "erfinv"]
] + [
    (name, [away(2, 3)], {}) for name in ["abs", "relu", "leaky_relu", "fabs", "hard_tanh_skip", "max", "min",
                                          "amax", "prod", "median", "sort", "ptp"] if not name.endswith("_skip")
] + [
    ("arccosh", [r(2, 3, low=1.3, high=2.5)], {}), ("gelu", [r(2, 3)], {"approximate": False}),
    ("glu", [r(2, 4)], {}), ("sparsemax", [r(2, 4)], {}), ("sparse_plus", [r(2, 3, low=-0.9, high=0.9)], {}),
    ("add", [r(2, 3), r(3)], {}), ("subtract", [r(2, 3), r(2, 1)], {}), ("multiply", [r(2, 3), r(3)], {}),
    ("divide", [r(2, 3), pos(3)], {}), ("power", [pos(2, 3), r(2, 3)], {}), ("maximum", [away(2, 3), away(2, 3)], {}),
    ("minimum", [away(3), away(3)], {}), ("arctan2", [r(2, 3), r(2, 3)], {}), ("hypot", [pos(3), pos(3)], {}),
    ("logaddexp", [r(2, 3), r(2, 3)], {}), ("logaddexp2", [r(3), r(3)], {}), ("where", [lambda g: g.random((2, 3)) > 0.5,
                                                                                       r(2, 3), r(2, 3)], {}),
    ("matmul", [r(2, 3), r(3, 2)], {}), ("matmul", [r(2, 2, 3), r(3)], {}), ("dot", [r(2, 3), r(3, 2)], {}),
    ("tensordot", [r(2, 3), r(3, 2)], {"axes": 1}), ("outer", [r(2), r(3)], {}), ("inner", [r(3), r(3)], {}),
    ("kron", [r(2, 2), r(2, 1)], {}), ("cross", [r(2, 3), r(2, 3)], {}), ("vdot", [r(3), r(3)], {}),
    ("einsum", [lambda g: "ij,jk->ik", r(2, 3), r(3, 2)], {}),
    ("reshape", [r(2, 3)], {"newshape": (3, 2)}), ("expand_dims", [r(2, 3)], {"axis": 0}),
    ("squeeze", [r(2, 1)], {}), ("concatenate", [lambda g: [g.normal(size=(2, 2)), g.normal(size=(2, 1))]], {"axis": 1}),
    ("stack", [lambda g: [g.normal(size=(2,)), g.normal(size=(2,))]], {}), ("split", [r(4, 2), lambda g: 2], {}),
    ("tile", [r(2), lambda g: (2, 2)], {}), ("repeat", [r(2, 2), lambda g: 2], {"axis": 0}),
    ("broadcast_to", [r(3), lambda g: (2, 3)], {}), ("roll", [r(2, 3)], {"shift": 1, "axis": 1}),
    ("pad", [r(2, 3), lambda g: ((1, 1), (0, 2))], {}), ("pad", [r(2, 3), lambda g: ((1, 1), (2, 1))], {"mode": "reflect"}),
    ("take", [r(4, 2), lambda g: np.array([3, 0, 0])], {"axis": 0}), ("take_along_axis", [r(2, 3), lambda g: np.array([[2], [0]])],
                                                                          {"axis": 1}),
    ("tril", [r(3, 3)], {}), ("triu", [r(3, 3)], {}), ("diagonal", [r(3, 3)], {}), ("trace", [r(3, 3)], {}),
    ("diagflat", [r(3)], {}), ("moveaxis", [r(2, 3, 1), lambda g: 0, lambda g: 2], {}), ("swapaxes", [r(2, 3), lambda g: 0, lambda g: 1], {}),
    ("quantile", [r(2, 5), lambda g: 0.3], {"axis": 1}), ("average", [r(2, 3)], {"axis": 1, "weights": np.array([1.0, 2.0, 3.0])}),
    ("clip", [away(2, 3), lambda g: -0.2, lambda g: 0.2], {}), ("diff", [r(5)], {}), ("trapezoid", [r(5)], {}),
    ("correlate", [r(5), r(3)], {"mode": "full"}), ("corrcoef", [r(2, 5)], {}), ("nanmean", [r(2, 3)], {}),
    ("slice", [r(3, 4), lambda g: (1, 1), lambda g: (2, 2)], {}), ("slice_update", [r(3, 4), lambda g: (0, 1), r(2, 2)], {}),
    ("scatter_update", [r(3, 2), lambda g: np.array([[0], [2]]), r(2, 2)], {}),
    ("scatter", [lambda g: np.array([[0, 1], [0, 1], [2, 0]]), r(3), lambda g: (3, 2)], {}),
    ("get_item", [r(3, 4), lambda g: (slice(1, None), 2)], {}),
    ("moments", [r(2, 3), lambda g: [0]], {}), ("batch_normalization", [r(2, 3), r(3), pos(3)], {"axis": 1, "offset": np.ones(3),
                                                                                             "scale": np.full(3, 2.0)}),
    ("binary_crossentropy", [lambda g: (g.random((2, 3)) > 0.5) * 1.0, r(2, 3, low=0.1, high=0.9)], {}),
    ("binary_crossentropy", [lambda g: (g.random((2, 3)) > 0.5) * 1.0, r(2, 3)], {"from_logits": True}),
    ("categorical_crossentropy", [lambda g: np.eye(3)[[0, 2]], pos(2, 3)], {}),
    ("categorical_crossentropy", [lambda g: np.eye(3)[[0, 2]], r(2, 3)], {"from_logits": True}),
    ("sparse_categorical_crossentropy", [lambda g: np.array([0, 2]), r(2, 3)], {"from_logits": True}),
    ("conv", [r(1, 4, 4, 2), r(3, 3, 2, 2)], {"padding": "same"}), ("conv", [r(1, 5, 2), r(2, 2, 3)], {"strides": 2}),
    ("depthwise_conv", [r(1, 4, 4, 2), r(2, 2, 2, 2)], {}), ("conv", [r(1, 3, 3, 3, 2), r(2, 2, 2, 2, 2)], {"padding": "same"}),
    ("depthwise_conv", [r(1, 3, 3, 3, 2), r(2, 2, 2, 2, 1)], {}),
    ("conv_transpose", [r(1, 2, 2, 2, 1), r(2, 2, 2, 1, 1)], {"strides": 2}), ("average_pool", [r(1, 3, 3, 3, 1)], {"pool_size": 2, "padding": "same"}), ("conv_transpose", [r(1, 3, 3, 2), r(2, 2, 1, 2)], {"strides": 2}),
    ("max_pool", [away(1, 2, 4, 1)], {"pool_size": 2}), ("average_pool", [r(1, 3, 3, 1)], {"pool_size": 2, "padding": "same"}),
    ("adaptive_average_pool", [r(1, 5, 5, 1)], {"output_size": 2}), ("unfold", [r(1, 1, 4, 4)], {"kernel_size": 2}),
    ("fold", [r(1, 4, 9)], {"output_size": 4, "kernel_size": 2}), ("depth_to_space", [r(1, 1, 1, 4)], {"block_size": 2}),
    ("inv", [spd(3)], {}), ("det", [spd(2)], {}), ("logdet", [spd(3)], {}), ("solve", [spd(3), r(3, 2)], {}),
    ("solve", [spd(3), r(3)], {}), ("cholesky", [spd(3)], {}), ("norm", [r(2, 3)], {}), ("norm", [away(2, 3)], {"ord": 1, "axis": 1}),
    ("norm", [away(2, 3)], {"ord": np.inf, "axis": (0, 1)}), ("cholesky_inverse", [lambda g: np.linalg.cholesky(spd(3)(g))], {}),
    ("lstsq", [r(4, 2), r(4, 1)], {}), ("segment_sum", [r(4, 2), lambda g: np.array([0, 1, 1, 0])], {"num_segments": 2}),
    ("cdist", [r(2, 2), r(3, 2)], {}), ("extract_sequences", [r(7), lambda g: 3, lambda g: 2], {}),
    ("rearrange", [r(2, 3), lambda g: "a b -> b a"], {}),
    ("rfft", [r(2, 5)], {}), ("irfft", [lambda g: (g.normal(size=(2, 4)), g.normal(size=(2, 4)))], {}),
    ("stft", [r(12), lambda g: 4, lambda g: 2, lambda g: 4], {}),
]

IMAGE_GRAD_CASES = [
    ("gaussian_blur", [r(1, 4, 4, 1)], {}), ("sobel_edges", [r(1, 4, 4, 1)], {}),
    ("resize", [r(1, 3, 4, 1)], {"size": (5, 3)}), ("resize", [r(1, 3, 3, 1)], {"size": (4, 5), "interpolation": "bicubic"}),
    ("affine_transform", [r(1, 4, 4, 1), lambda g: np.array([1.1, 0.2, -0.3, 0.1, 0.9, 0.4, 0, 0])], {}),
    ("rgb_to_grayscale", [r(1, 2, 2, 3)], {}), ("ssim", [r(1, 5, 5, 1), r(1, 5, 5, 1)], {"filter_size": 3}),
    ("perspective_transform", [r(1, 4, 4, 1), lambda g: np.array([[0, 0], [3, 0], [0, 3], [3, 3]]),
                               lambda g: np.array([[0.2, 0], [3, 0.4], [0, 2.6], [2.9, 3]])], {}),
    ("extract_patches_3d", [r(1, 3, 3, 3, 1)], {"size": 2, "strides": 1}),
    ("scale_and_translate", [r(1, 3, 4, 1), lambda g: (1, 5, 3, 1), lambda g: [1.5, 0.8], lambda g: [0.2, 0.0],
                             lambda g: (1, 2), lambda g: "cubic"], {}), ("extract_patches", [r(1, 4, 4, 1)], {"size": 2}),
    ("pad_images", [r(1, 2, 2, 1)], {"top_padding": 1, "bottom_padding": 0, "left_padding": 1, "right_padding": 2}),
]


def _inputs(builders, seed):
    g = np.random.default_rng(seed)
    return [b(g) for b in builders]


def _float_arrays(args):
    """Positions of the float64 array arguments (the ones gradcheck differentiates)."""
    return [i for i, a in enumerate(args) if isinstance(a, np.ndarray) and a.dtype == np.float64]


@pytest.mark.parametrize("name, builders, kwargs", GRAD_CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(GRAD_CASES)])
def test_gradcheck(name, builders, kwargs):
    args = _inputs(builders, 11)
    if name == "irfft":
        tensors = [mn.tensor(a, requires_grad=True) for a in args[0]]
        assert mn.gradcheck(lambda a, b: ops.irfft((a, b), **kwargs), tuple(tensors))
        return
    if name in ("concatenate", "stack"):
        tensors = [mn.tensor(a, requires_grad=True) for a in args[0]]
        assert mn.gradcheck(lambda *ts: getattr(ops, name)(list(ts), **kwargs), tuple(tensors))
        return
    positions = _float_arrays(args)
    if name in ("where",):
        positions = [1, 2]
    tensors = {i: mn.tensor(args[i], requires_grad=True) for i in positions}

    def fn(*ts):
        full = list(args)
        for i, t in zip(positions, ts):
            full[i] = t
        if name in ("cholesky", "cholesky_inverse_skip"):
            full[0] = (full[0] + ops.transpose(full[0])) * 0.5     # the op reads one triangle only
        out = getattr(ops, name)(*full, **kwargs)
        if isinstance(out, (list, tuple)):
            return tuple(o for o in out if isinstance(o, mn.Tensor) and o.dtype.kind == "f")
        return out

    assert mn.gradcheck(fn, tuple(tensors[i] for i in positions), atol=1e-5, rtol=1e-3)


@pytest.mark.parametrize("name, builders, kwargs", IMAGE_GRAD_CASES, ids=[c[0] for c in IMAGE_GRAD_CASES])
def test_image_gradcheck(name, builders, kwargs):
    args = _inputs(builders, 5)
    x = mn.tensor(args[0], requires_grad=True)
    assert mn.gradcheck(lambda t: getattr(ops.image, name)(t, *args[1:], **kwargs), (x,))


def test_map_coordinates_gradcheck():
    g = np.random.default_rng(8)
    x = mn.tensor(g.normal(size=(4, 5)), requires_grad=True)
    coords = g.uniform(-0.5, 4.5, (2, 3, 3))
    for mode in ("constant", "reflect", "wrap"):
        assert mn.gradcheck(lambda t: ops.image.map_coordinates(t, coords, 1, fill_mode=mode), (x,))


def test_fft_gradcheck():
    g = np.random.default_rng(4)
    re, im = (mn.tensor(g.normal(size=(2, 3)), requires_grad=True) for _ in range(2))
    for fn in (ops.fft, ops.fft2, ops.ifft2):
        assert mn.gradcheck(lambda a, b: fn((a, b)), (re, im))


def test_ctc_loss_gradcheck():
    g = np.random.default_rng(6)
    logits = mn.tensor(g.normal(size=(2, 5, 3)), requires_grad=True)
    target, t_len, o_len = np.array([[1, 2], [2, 2]]), np.array([2, 2]), np.array([5, 4])
    assert mn.gradcheck(lambda x: ops.ctc_loss(target, x, t_len, o_len), (logits,))


def test_eigh_gradient():
    a = sym(3)(np.random.default_rng(0))

    def fn(t):
        t = (t + ops.transpose(t)) * 0.5
        w, v = ops.eigh(t)
        return w, v * v           # the sign of an eigenvector is arbitrary: square it

    assert mn.gradcheck(fn, (mn.tensor(a, requires_grad=True),))


@pytest.mark.parametrize("name", ["tan", "sinh", "cosh", "arctan", "arcsin", "arcsinh", "arctanh", "cbrt", "erfinv"])
def test_second_derivatives(name):
    x = mn.tensor(np.random.default_rng(2).uniform(0.2, 0.7, (3,)), requires_grad=True)
    assert mn.autograd.gradgradcheck(lambda t: getattr(ops, name)(t), (x,))


def test_stop_gradient_blocks():
    x = mn.tensor(np.ones(3), requires_grad=True)
    y = ops.sum(ops.stop_gradient(x) * x)
    y.backward()
    np.testing.assert_array_equal(x.grad, np.ones(3))


def test_custom_gradient():
    @ops.custom_gradient
    def clip_grad(x):
        def grad(upstream):
            return ops.clip(upstream, -0.5, 0.5)
        return x * 1.0, grad

    x = mn.tensor(np.array([1.0, 2.0]), requires_grad=True)
    (clip_grad(x) * 3.0).sum().backward()
    np.testing.assert_array_equal(x.grad, [0.5, 0.5])


def test_jvp_matches_finite_differences():
    x, v = np.array([0.3, -0.7]), np.array([1.0, 2.0])
    out, tangent = ops.linalg.jvp(lambda t: ops.sin(t) * t, (x,), (v,))
    eps = 1e-6
    numeric = (np.sin(x + eps * v) * (x + eps * v) - np.sin(x - eps * v) * (x - eps * v)) / (2 * eps)
    np.testing.assert_allclose(tangent.numpy(), numeric, rtol=1e-6)
    np.testing.assert_allclose(out.numpy(), np.sin(x) * x)


def test_elastic_transform_is_seeded_and_warps_smoothly():
    x = np.random.default_rng(0).uniform(size=(1, 12, 12, 2)).astype(np.float32)
    a = ops.image.elastic_transform(x, alpha=3.0, sigma=2.0, seed=4).numpy()
    b = ops.image.elastic_transform(x, alpha=3.0, sigma=2.0, seed=4).numpy()
    np.testing.assert_array_equal(a, b)
    assert a.shape == x.shape and a.dtype == np.float32
    assert not np.allclose(a, x)
    still = ops.image.elastic_transform(x, alpha=0.0, sigma=2.0, seed=4).numpy()
    np.testing.assert_allclose(still, x, atol=1e-6)          # no displacement: the image itself


KERAS_GRAD_CASES = [
    ("softmax", [r(2, 4)]), ("log_softmax", [r(2, 4)]), ("logsumexp", [r(2, 4)]), ("gelu", [r(2, 3)]),
    ("silu", [r(2, 3)]), ("elu", [r(2, 3)]), ("selu", [r(2, 3)]), ("softplus", [r(2, 3)]), ("sigmoid", [r(2, 3)]),
    ("tanh", [r(2, 3)]), ("relu", [away(2, 3)]), ("leaky_relu", [away(2, 3)]), ("hard_sigmoid", [r(2, 3)]),
    ("log_sigmoid", [r(2, 3)]), ("sqrt", [pos(2, 3)]), ("rsqrt", [pos(2, 3)]), ("log", [pos(2, 3)]), ("exp", [r(2, 3)]),
    ("square", [r(2, 3)]), ("abs", [away(2, 3)]), ("max", [r(2, 3)]), ("min", [r(2, 3)]), ("mean", [r(2, 3)]),
    ("var", [r(2, 3)]), ("std", [r(2, 3)]), ("prod", [r(2, 3)]), ("cumsum", [r(2, 3)]), ("cumprod", [r(2, 3)]),
    ("sort", [r(2, 3)]), ("median", [r(2, 5)]), ("norm", [r(2, 3)]), ("normalize", [r(2, 3)]), ("arctan", [r(2, 3)]),
    ("sinh", [r(2, 3)]), ("erf", [r(2, 3)]), ("erfinv", [unit(2, 3)]), ("arcsin", [unit(2, 3)]), ("tan", [r(2, 3)]),
    ("add", [r(2, 3), r(3)]), ("multiply", [r(2, 3), r(2, 1)]), ("divide", [r(2, 3), pos(3)]),
    ("power", [pos(2, 3), r(2, 3)]), ("maximum", [away(2, 3), away(2, 3)]), ("matmul", [r(2, 3), r(3, 2)]),
    ("arctan2", [r(3), r(3)]), ("hypot", [pos(3), pos(3)]), ("logaddexp", [r(3), r(3)]), ("outer", [r(2), r(3)]),
    ("inv", [spd(3)]), ("det", [spd(3)]), ("solve", [spd(3), r(3, 2)]), ("cholesky", [spd(3)]), ("cross", [r(2, 3), r(2, 3)]),
]


@pytest.mark.parametrize("name, builders", KERAS_GRAD_CASES, ids=[c[0] for c in KERAS_GRAD_CASES])
def test_gradients_match_keras(keras, torch, name, builders):
    args = _inputs(builders, 21)
    mine_in = [mn.tensor(a, requires_grad=True) for a in args]
    theirs_in = [torch.tensor(a, requires_grad=True) for a in args]
    out = getattr(ops, name)(*mine_in)
    direction = np.random.default_rng(0).normal(size=out.shape)
    (out * mn.tensor(direction)).sum().backward()
    theirs = getattr(keras.ops, name)(*theirs_in)
    (theirs * torch.tensor(direction)).sum().backward()
    # float32 tolerance: Keras on torch computes some of these float64 ops in float32
    np.testing.assert_allclose(out.numpy(), theirs.detach().numpy(), rtol=1e-5, atol=1e-6)
    for m, t in zip(mine_in, theirs_in):
        np.testing.assert_allclose(m.grad, t.grad.numpy(), rtol=1e-5, atol=1e-6, err_msg=name)
