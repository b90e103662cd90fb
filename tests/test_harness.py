"""The shared harness (tests/_harness.py) can fail: each way catches a planted error."""
import sys

import numpy as np
import pytest

import minnet as mn
import minnet.functional as F
from _harness import (TOLERANCES, check_forward, check_gradcheck, check_three_ways,
                      check_torch)


def _sigmoid_ref(x):
    return 1 / (1 + np.exp(-x))


class _WrongBackward(mn.Function):
    """sigmoid with a backward that forgets the factor (1 - y): forward right, gradient wrong."""

    @staticmethod
    def forward(ctx, x):
        y = 1 / (1 + np.exp(-x))
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * y


def _x(rng, shape=(3, 4)):
    return rng.standard_normal(shape)


def test_right_op_passes_all_three_ways(rng):
    done = check_three_ways(F.sigmoid, _sigmoid_ref, [_x(rng)], torch_fn=lambda t: t.sigmoid(),
                            kind="elementwise")
    assert done["numpy"] == [np.float32, np.float64] and done["gradcheck"] is True


def test_right_op_passes_against_torch(torch, rng):
    done = check_three_ways(F.sigmoid, _sigmoid_ref, [_x(rng)], torch_fn=torch.sigmoid,
                            kind="elementwise", torch=torch)
    assert done["torch"] == [np.float32, np.float64]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_wrong_reference_fails(rng, dtype):
    with pytest.raises(AssertionError, match="NumPy reference"):
        check_forward(F.sigmoid, np.tanh, [_x(rng)], dtype, "elementwise")
    with pytest.raises(AssertionError):
        check_three_ways(F.sigmoid, np.tanh, [_x(rng)], kind="elementwise")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_tolerance_is_the_dtypes_entry(rng, dtype):
    """An error of 10 x rtol fails, one of rtol / 10 passes: the entry is really applied."""
    rtol = TOLERANCES["elementwise"][dtype]["rtol"]
    x = rng.uniform(1, 2, (3, 4))        # sigmoid(x) >= 0.73: the rtol term dominates atol
    check_forward(F.sigmoid, lambda a: _sigmoid_ref(a) * (1 + rtol / 10), [x], dtype,
                  "elementwise")
    with pytest.raises(AssertionError):
        check_forward(F.sigmoid, lambda a: _sigmoid_ref(a) * (1 + 10 * rtol), [x], dtype,
                      "elementwise")


def test_wrong_dtype_or_shape_fails(rng):
    x = _x(rng)
    with pytest.raises(AssertionError, match="dtype"):
        check_forward(lambda t: F.sigmoid(t.astype(np.float64)), _sigmoid_ref, [x], np.float32)
    with pytest.raises(AssertionError, match="shape"):
        check_forward(F.sigmoid, lambda a: _sigmoid_ref(a)[None], [x], np.float64)


def test_wrong_backward_fails_gradcheck(rng):
    with pytest.raises(mn.GradcheckError):
        check_gradcheck(_WrongBackward.apply, [_x(rng) + 0.5])
    with pytest.raises(mn.GradcheckError):
        check_three_ways(_WrongBackward.apply, _sigmoid_ref, [_x(rng) + 0.5])


def test_wrong_second_derivative_fails_gradgradcheck(rng):
    class FrozenBackward(mn.Function):
        """x**3 whose backward is right at first order but computed on plain arrays, so it
        builds no graph: its own derivative comes out as zero."""

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * 3 * np.asarray(x) ** 2

    x = [rng.uniform(0.5, 1.5, 4)]
    check_gradcheck(FrozenBackward.apply, x)                 # first order is right
    with pytest.raises(mn.GradcheckError, match="analytical 0 vs numerical"):
        check_gradcheck(FrozenBackward.apply, x, gradgrad=True)
    check_gradcheck(lambda t: t * t * t, x, gradgrad=True)   # the graph-building form passes


def test_wrong_torch_op_or_gradient_fails(torch, rng):
    x = [_x(rng)]
    with pytest.raises(AssertionError, match="forward against PyTorch"):
        check_torch(F.sigmoid, torch.tanh, x, np.float64, "elementwise", torch)
    with pytest.raises(AssertionError, match="gradient of input 0"):
        check_torch(_WrongBackward.apply, torch.sigmoid, x, np.float64, "elementwise", torch)


def test_without_torch_the_torch_part_is_skipped(rng, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)       # `import torch` raises ImportError
    assert check_torch(F.sigmoid, None, [_x(rng)], np.float32) is False
    done = check_three_ways(F.sigmoid, _sigmoid_ref, [_x(rng)], torch_fn=lambda t: t.sigmoid())
    assert done["torch"] == [] and done["gradcheck"] is True


def test_int_inputs_pass_through_as_labels(torch, rng):
    logits, labels = rng.standard_normal((5, 3)), rng.integers(0, 3, 5)
    check_three_ways(F.cross_entropy, lambda z, t: -np.mean(
        (z - np.log(np.exp(z).sum(1, keepdims=True)))[np.arange(len(t)), t]),
        [logits, labels], torch_fn=torch.nn.functional.cross_entropy, kind="loss", torch=torch)


def test_tolerance_table():
    for kind, entry in TOLERANCES.items():
        assert set(entry) == {np.float32, np.float64}, kind
        for dtype in (np.float32, "float32", np.dtype("float32")):
            assert entry[dtype] is entry[np.float32]
        assert set(entry[np.float64]) == {"rtol", "atol"}
        # float64 is always held at least three decades tighter than float32
        assert entry[np.float64]["rtol"] <= entry[np.float32]["rtol"] * 1e-3, kind
    with pytest.raises(KeyError):
        TOLERANCES["default"][np.float16]
