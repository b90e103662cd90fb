"""The unary activation family (gelu, silu, softplus, softsign, relu6, hardsigmoid, hardswish,
mish) and prelu: NumPy reference, float64 gradcheck, PyTorch parity, extremes, threads."""
import math
import warnings

import numpy as np
import pytest

import minnet as mn
import minnet.functional as F

from _harness import TOLERANCES, check_forward, check_gradcheck, check_torch

DTYPES = [np.float32, np.float64]
TOL = TOLERANCES["composite_elementwise"]
_erf = np.vectorize(math.erf)


def _sig(x):
    return 1 / (1 + np.exp(-x))


def _softplus(x):
    return np.where(x > 20, x, np.log1p(np.exp(np.minimum(x, 20))))


# name -> (minnet op, numpy reference, torch call)
OPS = {
    "gelu": (F.gelu, lambda x: 0.5 * x * (1 + _erf(x / math.sqrt(2))),
             lambda t, x: t.nn.functional.gelu(x)),
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"),
                  lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3))),
                  lambda t, x: t.nn.functional.gelu(x, approximate="tanh")),
    "silu": (F.silu, lambda x: x * _sig(x), lambda t, x: t.nn.functional.silu(x)),
    "softplus": (F.softplus, _softplus, lambda t, x: t.nn.functional.softplus(x)),
    "softsign": (F.softsign, lambda x: x / (1 + np.abs(x)), lambda t, x: t.nn.functional.softsign(x)),
    "relu6": (F.relu6, lambda x: np.clip(x, 0, 6), lambda t, x: t.nn.functional.relu6(x)),
    "hardsigmoid": (F.hardsigmoid, lambda x: np.clip(x / 6 + 0.5, 0, 1),
                    lambda t, x: t.nn.functional.hardsigmoid(x)),
    "hardswish": (F.hardswish, lambda x: x * np.clip(x / 6 + 0.5, 0, 1),
                  lambda t, x: t.nn.functional.hardswish(x)),
    "mish": (F.mish, lambda x: x * np.tanh(_softplus(x)), lambda t, x: t.nn.functional.mish(x)),
}
SHAPES = [(1, 1), (3, 5), (2, 3, 4), (40000,)]


def _input(rng, shape, dtype):
    x = rng.standard_normal(shape) * 4
    # keep finite differences away from the kinks (0, 6, +-3)
    for kink in (0.0, 6.0, 3.0, -3.0):
        near = np.abs(x - kink) < 1e-3
        x[near] = kink + 0.5
    return x.astype(dtype)


@pytest.mark.parametrize("name", OPS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_matches_numpy(rng, name, dtype, shape):
    op, ref, _ = OPS[name]
    check_forward(op, ref, [_input(rng, shape, dtype)], dtype, "composite_elementwise")


@pytest.mark.parametrize("name", OPS)
@pytest.mark.parametrize("shape", [(1, 1), (3, 5), (2, 3, 4)])
def test_gradcheck(rng, name, shape):
    check_gradcheck(OPS[name][0], [_input(rng, shape, np.float64)])


@pytest.mark.parametrize("name", OPS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_matches_torch(torch, rng, name, dtype):
    op, _, top = OPS[name]
    x = _input(rng, (4, 3, 5), dtype)
    x.flat[:6] = [-30.0, -3.0, 0.0, 3.0, 6.0, 25.0]         # the edges, where PyTorch chose
    # PyTorch's float64 hardsigmoid backward multiplies by the float32 constant 1.0f/6.0f.
    grad_tol = TOL[np.float32] if name == "hardsigmoid" else TOL[dtype]
    check_torch(op, lambda t: top(torch, t), [x], dtype, "composite_elementwise", torch,
                grad_tol=grad_tol)


@pytest.mark.parametrize("name", OPS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_extreme_values_finite_without_warnings(name, dtype):
    op = OPS[name][0]
    x = np.array([[-1e4, -100.0, -1.0, 0.0, 1.0, 100.0, 1e4]], dtype)
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        xt = mn.tensor(x, requires_grad=True)
        y = op(xt)
        y.sum().backward()
    assert np.all(np.isfinite(y.numpy())) and np.all(np.isfinite(xt.grad))


def test_results_do_not_depend_on_thread_count(rng):
    x = rng.standard_normal((64, 3000)).astype(np.float32)
    previous = mn.get_num_threads()
    try:
        results = []
        for n in (1, 2, 3):
            mn.set_num_threads(n)
            xt = mn.tensor(x, requires_grad=True)
            (F.gelu(xt) * F.mish(xt)).sum().backward()
            results.append(xt.grad)
        np.testing.assert_array_equal(results[0], results[1])
        np.testing.assert_array_equal(results[0], results[2])
    finally:
        mn.set_num_threads(previous)


def test_bad_arguments():
    with pytest.raises(ValueError, match="`approximate`"):
        F.gelu(np.zeros(2), approximate=True)
    with pytest.raises(TypeError):
        F.silu(np.array(["a"]))
    with pytest.raises(ValueError, match="`weight`"):
        F.prelu(np.zeros((2, 3)), mn.tensor(np.zeros(4)))


def test_input_array_not_changed(rng):
    x = _input(rng, (3, 4), np.float64)
    before = x.copy()
    for op, _, _ in OPS.values():
        op(x)
    np.testing.assert_array_equal(x, before)


@pytest.mark.parametrize("dtype", DTYPES)
def test_prelu_matches_torch_and_gradcheck(torch, rng, dtype):
    x = _input(rng, (2, 3, 4, 5), dtype)
    w = np.array([0.1, -0.2, 0.3], dtype)
    xm, wm = mn.tensor(x, requires_grad=True), mn.tensor(w, requires_grad=True)
    ym = F.prelu(xm, wm)
    np.testing.assert_allclose(ym.numpy(), np.where(x > 0, x, w[None, :, None, None] * x), **TOL[dtype])
    g = rng.standard_normal(x.shape).astype(dtype)
    ym.backward(g)
    xt, wt = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    torch.nn.functional.prelu(xt, wt).backward(torch.tensor(g))
    np.testing.assert_allclose(xm.grad, xt.grad.numpy(), **TOL[dtype])
    np.testing.assert_allclose(wm.grad, wt.grad.numpy(), rtol=1e-4 if dtype == np.float32 else 1e-10)
    x64 = mn.tensor(_input(rng, (2, 3, 2), np.float64), requires_grad=True)
    w64 = mn.tensor(np.array([0.25, 0.5, -0.1]), requires_grad=True)
    assert mn.gradcheck(lambda a, b: F.prelu(a, b), (x64, w64))
