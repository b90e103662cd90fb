"""Graph semantics of the autograd engine."""
import numpy as np
import pytest

import minnet as mn
from minnet.autograd import GradcheckError


def test_gradients_accumulate_across_backward_calls():
    x = mn.tensor(np.array([1.0, 2.0, 3.0]), requires_grad=True)
    (x * 3).sum().backward()
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad, 3 + 2 * x.data)
    x.grad = None
    (x * 2).sum().backward()
    np.testing.assert_allclose(x.grad, [2.0, 2.0, 2.0])


def test_tensor_used_twice_receives_the_sum():
    x = mn.tensor(np.array([0.5, -1.5]), requires_grad=True)
    y = x * x + x.exp() * x          # x reaches the loss through four edges
    y.sum().backward()
    expected = 2 * x.data + np.exp(x.data) * x.data + np.exp(x.data)
    np.testing.assert_allclose(x.grad, expected)


def test_diamond_graph_with_shared_intermediate():
    x = mn.tensor(np.array([[1.0, 2.0], [3.0, 4.0]]), requires_grad=True)
    h = x.sigmoid()
    out = (h * 2 + h.exp()).sum()
    out.backward()
    s = 1 / (1 + np.exp(-x.data))
    np.testing.assert_allclose(x.grad, (2 + np.exp(s)) * s * (1 - s))


def test_second_backward_through_freed_graph_raises():
    x = mn.tensor(np.ones(3), requires_grad=True)
    y = (x.sigmoid() * 2).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        y.backward()


def test_retain_graph_allows_second_backward():
    x = mn.tensor(np.ones(3), requires_grad=True)
    y = (x.sigmoid() * 2).sum()
    y.backward(retain_graph=True)
    first = x.grad.copy()
    y.backward()
    np.testing.assert_allclose(x.grad, 2 * first)


def test_saved_arrays_released_after_backward():
    x = mn.tensor(np.ones((50, 50)), requires_grad=True)
    y = x.exp()
    node = y.grad_fn
    assert len(node.ctx._saved) == 1
    y.sum().backward()
    assert node.ctx._saved == ()
    with pytest.raises(RuntimeError, match="second time"):
        node.ctx.saved_tensors


def test_detach_shares_memory_and_stops_gradient():
    x = mn.tensor(np.array([1.0, 2.0]), requires_grad=True)
    d = x.detach()
    assert d.grad_fn is None and not d.requires_grad
    assert np.shares_memory(d.data, x.data)
    y = (x * d).sum()
    y.backward()
    np.testing.assert_allclose(x.grad, d.data)   # d is a constant


def test_clone_copies_and_passes_gradient():
    x = mn.tensor(np.array([1.0, 2.0]), requires_grad=True)
    c = x.clone()
    assert not np.shares_memory(c.data, x.data)
    assert c.grad_fn.name() == "CloneBackward"
    (c * c).sum().backward()
    np.testing.assert_allclose(x.grad, 2 * x.data)


def test_no_grad_records_nothing():
    x = mn.tensor(np.ones(3), requires_grad=True)
    with mn.no_grad():
        y = (x * 2).sigmoid()
        assert not mn.is_grad_enabled()
    assert mn.is_grad_enabled()
    assert y.grad_fn is None and not y.requires_grad

    @mn.no_grad()
    def f(t):
        return t * 3
    assert f(x).grad_fn is None
    with mn.no_grad():
        with mn.enable_grad():
            assert (x * 2).grad_fn is not None


def test_inplace_modification_of_saved_array_is_detected():
    x = mn.tensor(np.ones(3), requires_grad=True)
    y = x.exp()                      # ExpBackward saves its output y
    with mn.no_grad():
        y.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        y.sum().backward()


def test_inplace_modification_of_saved_input_is_detected():
    a = mn.tensor(np.ones(3))
    w = mn.Parameter(np.full(3, 2.0))
    out = (a * w).sum()              # MulBackward saves a for w's gradient
    a.add_(1.0)
    with pytest.raises(RuntimeError, match="MulBackward"):
        out.backward()


def test_inplace_through_detached_view_is_detected():
    x = mn.tensor(np.ones(3), requires_grad=True)
    y = x.exp()
    y.detach().add_(1.0)             # detach shares the version counter
    with pytest.raises(RuntimeError, match="in-place"):
        y.sum().backward()


def test_inplace_on_leaf_requiring_grad_raises():
    w = mn.Parameter(np.ones(3))
    with pytest.raises(RuntimeError, match="leaf tensor that requires grad"):
        w.add_(1.0)
    with mn.no_grad():
        w.add_(1.0)
    np.testing.assert_allclose(w.data, 2.0)


def test_augmented_assignment_keeps_graph_correct():
    x = mn.tensor(np.array([1.0, 2.0]), requires_grad=True)
    y = x * 3
    y += x                           # out of place when gradients are recorded
    y.sum().backward()
    np.testing.assert_allclose(x.grad, [4.0, 4.0])


def test_ten_thousand_op_chain():
    x = mn.tensor(np.array([1.0]), requires_grad=True)
    y = x
    for _ in range(10_000):
        y = y * 1.0001
    y.sum().backward()
    np.testing.assert_allclose(x.grad, [1.0001 ** 10_000], rtol=1e-9)
    assert len(mn.autograd.graph.graph_lines(y, max_depth=20_000)) == 10_001
    assert len(mn.autograd.graph.graph_lines(y)) == 101      # cut at the default max_depth

def test_backward_needs_scalar_or_gradient():
    x = mn.tensor(np.ones((2, 2)), requires_grad=True)
    y = x * 2
    with pytest.raises(RuntimeError, match="scalar"):
        y.backward()
    y.backward(np.full((2, 2), 0.5))
    np.testing.assert_allclose(x.grad, 1.0)
    with pytest.raises(ValueError, match="gradient"):
        (x * 2).backward(np.ones(3))


def test_backward_on_tensor_without_graph_raises():
    with pytest.raises(RuntimeError, match="does not require grad"):
        mn.tensor(np.ones(2)).sum().backward()


class WrongCount(mn.Function):
    @staticmethod
    def forward(ctx, a, b):
        return a + b

    @staticmethod
    def backward(ctx, g):
        return g


class WrongShape(mn.Function):
    @staticmethod
    def forward(ctx, a):
        return a.sum()

    @staticmethod
    def backward(ctx, g):
        return np.ones(7)


def test_backward_returning_wrong_number_of_gradients_names_the_function():
    a = mn.tensor(np.ones(2), requires_grad=True)
    with pytest.raises(RuntimeError, match="WrongCount.backward returned an incorrect number"):
        WrongCount.apply(a, a).backward(np.ones(2))


def test_backward_returning_wrong_shape_names_the_function():
    a = mn.tensor(np.ones(2), requires_grad=True)
    with pytest.raises(RuntimeError, match=r"WrongShape.backward returned a gradient of shape \(7,\)"):
        WrongShape.apply(a).backward()


class InvSqrt(mn.Function):
    @staticmethod
    def forward(ctx, x):
        y = 1.0 / np.sqrt(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, dLdy):
        (y,) = ctx.saved_tensors
        return -0.5 * y ** 3 * dLdy if ctx.needs_input_grad[0] else None


def test_custom_function_invsqrt():
    x = mn.tensor(np.random.default_rng(0).random((3, 4)) + 0.5, requires_grad=True)
    z = InvSqrt.apply(x)
    assert z.grad_fn.name() == "InvSqrtBackward"
    np.testing.assert_allclose(z.data, x.data ** -0.5)
    assert mn.gradcheck(InvSqrt.apply, (x,))


def test_needs_input_grad_reflects_inputs():
    seen = {}

    class Probe(mn.Function):
        @staticmethod
        def forward(ctx, a, b, k):
            seen["needs"] = ctx.needs_input_grad
            return a * b * k

        @staticmethod
        def backward(ctx, g):
            return g, None, None

    a = mn.tensor(np.ones(2), requires_grad=True)
    b = mn.tensor(np.ones(2))
    Probe.apply(a, b, 3).sum().backward()
    assert seen["needs"] == (True, False, False)
    with mn.no_grad():
        Probe.apply(a, b, 3)
    assert seen["needs"] == (False, False, False)


def test_print_graph_and_dot(capsys):
    x = mn.tensor(np.random.randn(4, 3), requires_grad=True)
    y = (x * 2).sigmoid().sum()
    mn.print_graph(y)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "SumBackward"
    assert "SigmoidBackward" in out[1] and "MulBackward" in out[2]
    assert "AccumulateGrad" in out[3] and "(4, 3)" in out[3]
    dot = mn.graph_to_dot(y)
    assert dot.startswith("digraph") and dot.count("->") == 3


def test_gradcheck_reports_worst_element():
    class Bad(mn.Function):
        @staticmethod
        def forward(ctx, a):
            return a * a

        @staticmethod
        def backward(ctx, g):
            return g * 3.0    # wrong: should be 2a

    x = mn.tensor(np.linspace(0.1, 1.0, 6), requires_grad=True)
    with pytest.raises(GradcheckError, match=r"input 0 .* at index \(\d+,\): analytical"):
        mn.gradcheck(Bad.apply, (x,))
    assert mn.gradcheck(Bad.apply, (x,), raise_exception=False) is False


def test_gradcheck_requires_float64():
    x = mn.tensor(np.ones(3, dtype=np.float32), requires_grad=True)
    with pytest.raises(TypeError, match="float64"):
        mn.gradcheck(lambda t: t * 2, (x,))


def test_gradients_are_not_shared_between_leaves():
    # Add passes the same gradient array to both inputs: the leaves must not alias it.
    a = mn.tensor(np.ones(3), requires_grad=True)
    b = mn.tensor(np.ones(3), requires_grad=True)
    (a + b).sum().backward()
    a.grad += 10
    np.testing.assert_allclose(b.grad, 1.0)


def test_detect_anomaly_names_forward_op():
    x = mn.tensor(np.array([1.0, -1.0]), requires_grad=True)
    with mn.detect_anomaly(), np.errstate(invalid="ignore"):
        with pytest.raises(mn.AnomalyError, match="Function 'Log' returned nan/inf values in its forward"):
            x.log()
    with np.errstate(invalid="ignore"):
        assert np.isnan(x.log().data[1])           # off by default: no check


def test_detect_anomaly_names_backward_op():
    x = mn.tensor(np.array([0.0, 1.0]), requires_grad=True)
    with mn.detect_anomaly():
        y = x.sqrt().sum()                         # forward finite, d sqrt/dx at 0 is inf
        with pytest.raises(mn.AnomalyError, match="SqrtBackward"):
            with np.errstate(divide="ignore"):
                y.backward()
