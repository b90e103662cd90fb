"""minnet.functional activations: NumPy reference, float64 gradcheck, PyTorch parity.

The three ways run through the shared harness (tests/_harness.py), one pytest item each, so
a missing PyTorch shows as skipped.
"""
import warnings

import numpy as np
import pytest

import minnet as mn
import minnet.functional as F
from minnet.functional._activations import SELU_ALPHA, SELU_SCALE

from _harness import check_forward, check_gradcheck, check_torch

DTYPES = [np.float32, np.float64]

# name -> (minnet op, numpy reference, torch op name, torch kwargs)
OPS = {
    "relu": (F.relu, lambda x: np.maximum(x, 0), "relu", {}),
    "sigmoid": (F.sigmoid, lambda x: 1 / (1 + np.exp(-x)), "sigmoid", {}),
    "tanh": (F.tanh, np.tanh, "tanh", {}),
    "leaky_relu": (lambda x: F.leaky_relu(x, 0.2), lambda x: np.where(x > 0, x, 0.2 * x),
                   "leaky_relu", {"negative_slope": 0.2}),
    "leaky_relu_negative": (lambda x: F.leaky_relu(x, -0.5), lambda x: np.where(x > 0, x, -0.5 * x),
                            "leaky_relu", {"negative_slope": -0.5}),
    "elu": (lambda x: F.elu(x, 0.7), lambda x: np.where(x > 0, x, 0.7 * np.expm1(np.minimum(x, 0))),
            "elu", {"alpha": 0.7}),
    "selu": (F.selu, lambda x: SELU_SCALE * np.where(x > 0, x, SELU_ALPHA * np.expm1(np.minimum(x, 0))),
             "selu", {}),
    "softmax": (lambda x: F.softmax(x, axis=1),
                lambda x: np.exp(x - x.max(1, keepdims=True)) / np.exp(x - x.max(1, keepdims=True)).sum(1, keepdims=True),
                "softmax", {"dim": 1}),
    "log_softmax": (F.log_softmax,
                    lambda x: x - x.max(-1, keepdims=True) - np.log(np.exp(x - x.max(-1, keepdims=True)).sum(-1, keepdims=True)),
                    "log_softmax", {"dim": -1}),
}
NODE_NAMES = {"relu": "ReluBackward", "sigmoid": "SigmoidBackward", "tanh": "TanhBackward",
              "leaky_relu": "LeakyReluBackward", "leaky_relu_negative": "LeakyReluBackward",
              "elu": "EluBackward", "selu": "SeluBackward", "softmax": "SoftmaxBackward",
              "log_softmax": "LogSoftmaxBackward"}
SHAPES = [(1, 1), (3, 5), (2, 3, 4), (1, 7, 2, 3)]


def _input(rng, shape, dtype):
    x = rng.standard_normal(shape) * 2
    x[np.abs(x) < 1e-3] = 0.5          # keep finite differences away from kinks
    return x.astype(dtype)


@pytest.mark.parametrize("name", OPS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_matches_numpy(rng, name, dtype, shape):
    op, ref, _, _ = OPS[name]
    check_forward(op, ref, [_input(rng, shape, dtype)], dtype, "elementwise")


@pytest.mark.parametrize("name", OPS)
@pytest.mark.parametrize("shape", [(1, 1), (3, 5), (2, 3, 4)])
def test_gradcheck(rng, name, shape):
    op = OPS[name][0]
    x = _input(rng, shape, np.float64)
    check_gradcheck(op, [x])
    assert op(mn.tensor(x, requires_grad=True)).grad_fn.name() == NODE_NAMES[name]


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
@pytest.mark.parametrize("op", [F.softmax, F.log_softmax])
def test_softmax_any_axis_gradcheck(rng, op, axis):
    x = mn.tensor(rng.standard_normal((2, 3, 4)), requires_grad=True)
    assert mn.gradcheck(lambda t: op(t, axis=axis), (x,))
    y = F.softmax(x, axis=axis).numpy()
    np.testing.assert_allclose(y.sum(axis=axis), 1, rtol=1e-12)


@pytest.mark.parametrize("name", OPS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_matches_torch(torch, rng, name, dtype):
    op, _, torch_name, kwargs = OPS[name]
    torch_op = torch.sigmoid if torch_name == "sigmoid" else getattr(torch.nn.functional, torch_name)
    check_torch(op, lambda t: torch_op(t, **kwargs), [_input(rng, (4, 3, 5), dtype)], dtype,
                "elementwise", torch)


@pytest.mark.parametrize("name", OPS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_extreme_values_no_warnings_no_nan(name, dtype):
    op = OPS[name][0]
    x = np.array([[-1e4, -100.0, -1.0, 0.0, 1.0, 100.0, 1e4]], dtype)
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        xt = mn.tensor(x, requires_grad=True)
        y = op(xt)
        y.sum().backward()
    assert np.all(np.isfinite(y.numpy())) and np.all(np.isfinite(xt.grad))


def test_extreme_values_match_torch(torch):
    x = np.array([-1e4, -100.0, -20.0, 0.0, 20.0, 100.0, 1e4], np.float32)
    for op, top in [(F.sigmoid, torch.sigmoid), (F.tanh, torch.tanh), (F.elu, torch.nn.functional.elu)]:
        np.testing.assert_allclose(op(x).numpy(), top(torch.tensor(x)).numpy(), rtol=1e-6, atol=1e-30)


def test_saves_output_not_input(rng):
    x = mn.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    for op in (F.sigmoid, F.tanh, F.relu, F.elu, F.softmax):
        y = op(x)
        (saved,) = y.grad_fn.ctx.saved_tensors
        assert saved is y.data


def test_thread_count_independent(rng):
    x = rng.standard_normal((64, 3000)).astype(np.float32)
    previous = mn.get_num_threads()
    try:
        results = []
        for n in (1, 2):
            mn.set_num_threads(n)
            xt = mn.tensor(x, requires_grad=True)
            (F.sigmoid(xt) * F.softmax(xt)).sum().backward()
            results.append(xt.grad)
        np.testing.assert_array_equal(results[0], results[1])
    finally:
        mn.set_num_threads(previous)


def test_inputs_accepted_and_cast():
    y = F.relu([[-1, 2]])
    assert y.dtype == np.float32 and y.numpy().tolist() == [[0.0, 2.0]]
    assert F.sigmoid(np.array([0], np.int64)).numpy()[0] == 0.5
    assert F.softmax(np.zeros((3, 2)).T).shape == (2, 3)       # non-contiguous input
    assert F.relu(np.zeros((2, 0))).shape == (2, 0)


def test_bad_arguments():
    with pytest.raises(ValueError, match="`axis`.*Received: axis=2"):
        F.softmax(np.zeros((2, 3)), axis=2)
    with pytest.raises(TypeError, match="`axis`"):
        F.log_softmax(np.zeros((2, 3)), axis=1.0)
    with pytest.raises(ValueError, match="`x`.*0-d"):
        F.softmax(np.float32(1.0))
    with pytest.raises(TypeError, match="`negative_slope`"):
        F.leaky_relu(np.zeros(2), "0.1")
    with pytest.raises(TypeError, match="`alpha`"):
        F.elu(np.zeros(2), float("nan"))
    with pytest.raises(TypeError, match="`x`"):
        F.relu(np.array(["a"]))


def test_relu_elu_special_values_match_torch(torch):
    x = np.array([-0.0, -np.inf, np.inf, np.nan, 2.0, -3.0], np.float32)
    xt = torch.tensor(x)
    pairs = [(F.relu(x), torch.relu(xt)), (F.elu(x), torch.nn.functional.elu(xt)),
             (F.selu(x), torch.selu(xt)), (F.leaky_relu(x, 0.01), torch.nn.functional.leaky_relu(xt, 0.01))]
    for ours, theirs in pairs:
        np.testing.assert_array_equal(ours.numpy()[1:], theirs.numpy()[1:])
    assert np.signbit(F.relu(x).numpy()[0]) == np.signbit(torch.relu(xt).numpy()[0])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("grad", [1.0, np.inf])
def test_relu_gradient_special_values_match_torch(torch, dtype, grad):
    # torch's relu backward is threshold_backward: a NaN input passes the gradient and an
    # infinite gradient where x <= 0 gives 0 (not inf * 0 = NaN); Dense's fused node too
    x = np.array([np.nan, 1.0, -1.0, -0.0, 0.0, np.inf, -np.inf, 2.5], dtype)
    g = np.full(x.shape, grad, dtype)
    xt = torch.tensor(x, requires_grad=True)
    torch.relu(xt).backward(torch.tensor(g))
    for op in (F.relu, lambda t: t.relu(),
               lambda t: F.linear_relu(t.reshape(-1, 1), mn.Parameter(np.ones((1, 1), dtype)))):
        xm = mn.Tensor(x, requires_grad=True)
        op(xm).backward(mn.Tensor(g.reshape(op(xm).shape)))
        np.testing.assert_array_equal(np.asarray(xm.grad).ravel().view(np.uint8),
                                      xt.grad.numpy().view(np.uint8))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("cols", [3, 40])          # the short-row path and the general one
def test_log_softmax_special_rows_match_torch(torch, dtype, cols):
    # a row holding +inf is NaN throughout in torch (inf - inf in its sum), as are a row of
    # -inf and a row holding NaN; forward and gradient
    x = np.zeros((4, cols), dtype)
    x[0, 1], x[2], x[3, 0] = np.inf, -np.inf, np.nan
    x[1] = np.arange(cols) / 7
    xm = mn.Tensor(x, requires_grad=True)
    y = F.log_softmax(xm, axis=-1)
    y.sum().backward()
    xt = torch.tensor(x, requires_grad=True)
    yt = torch.log_softmax(xt, -1)
    yt.sum().backward()
    special = [0, 2, 3]
    assert np.isnan(y.numpy()[special]).all()
    np.testing.assert_array_equal(y.numpy()[special], yt.detach().numpy()[special])
    np.testing.assert_array_equal(np.asarray(xm.grad)[special], xt.grad.numpy()[special])
    np.testing.assert_allclose(y.numpy()[1], yt.detach().numpy()[1], rtol=1e-6)
