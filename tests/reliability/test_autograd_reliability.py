"""Autograd regression tests from the reliability issue: in-place edits caught through views,
no aliasing of user memory, no_grad on generators, print_graph bounded on deep graphs."""
import io
import tracemalloc

import numpy as np
import pytest

import minnet as mn


def _saved_input_setup():
    w = mn.tensor(np.array([1.0, 2.0, 3.0, 4.0]), requires_grad=True)
    a = mn.tensor(np.array([1.0, 1.0, 1.0, 1.0]))      # saved by Mul for w's gradient
    return w, a, (w * a).sum()


@pytest.mark.parametrize("edit", [
    lambda a: a.reshape(2, 2).add_(10),
    lambda a: a[1:3].fill_(100),
    lambda a: a.view(4, 1).transpose(0, 1).mul_(2),
    lambda a: a.unsqueeze(0)[0, :2].zero_(),
    lambda a: a.detach().sub_(1),
    lambda a: a.__setitem__(slice(0, 1), 7.0),
    lambda a: a.reshape(2, 2).__setitem__((0, 0), 7.0),
])
def test_in_place_edit_through_a_view_is_caught_at_backward(edit):
    w, a, loss = _saved_input_setup()
    edit(a)
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        loss.backward()


def test_views_share_the_version_counter_but_copies_do_not():
    a = mn.tensor(np.arange(6.0))
    assert a.reshape(2, 3)._version is a._version
    assert a[1:4]._version is a._version
    assert a.reshape(3, 2).transpose(0, 1)._version is a._version
    assert a[[0, 1]]._version is not a._version           # advanced indexing copies
    assert a.clone()._version is not a._version
    w, b, loss = _saved_input_setup()
    b.clone().add_(1)                                   # editing a copy is harmless
    loss.backward()
    np.testing.assert_array_equal(w.grad, np.ones(4))


def test_tensor_copies_the_callers_array_and_from_numpy_shares_it():
    user = np.array([1.0, 2.0, 3.0])
    p = mn.tensor(user, requires_grad=True)
    opt_step = mn.tensor(np.ones(3))
    with mn.no_grad():
        p -= opt_step
    np.testing.assert_array_equal(user, [1.0, 2.0, 3.0])
    shared = mn.from_numpy(user)
    shared.add_(1)
    np.testing.assert_array_equal(user, [2.0, 3.0, 4.0])


def test_custom_backward_returning_a_saved_input_does_not_alias_grad():
    class Leak(mn.Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.save_for_backward(y)
            ctx.extra = y
            return x + y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return ctx.extra, y

    x = mn.tensor(np.zeros(2), requires_grad=True)
    y = mn.tensor(np.array([1.0, 2.0]), requires_grad=True)
    Leak.apply(x, y).sum().backward()
    assert not np.shares_memory(x.grad, y.data) and not np.shares_memory(y.grad, y.data)
    x.grad += 100                                       # an accumulation / optimizer write
    y.grad *= 0
    np.testing.assert_array_equal(y.data, [1.0, 2.0])


def test_no_grad_decorator_covers_a_generator_body():
    x = mn.tensor(np.ones(2), requires_grad=True)

    @mn.no_grad()
    def gen():
        for _ in range(3):
            yield x * 2, mn.is_grad_enabled()

    outputs = list(gen())
    assert all(not flag for _, flag in outputs)
    assert all(y.grad_fn is None for y, _ in outputs)
    assert mn.is_grad_enabled()

    @mn.enable_grad()
    def gen2():
        yield mn.is_grad_enabled()

    with mn.no_grad():
        it = gen2()
        assert next(it) is True
        assert not mn.is_grad_enabled()


def test_generator_wrapper_passes_send_and_close():
    @mn.no_grad()
    def echo():
        received = yield "ready"
        while True:
            received = yield (received, mn.is_grad_enabled())

    g = echo()
    assert next(g) == "ready"
    assert g.send(5) == (5, False)
    g.close()
    assert mn.is_grad_enabled()


def test_print_graph_of_a_100k_op_chain_is_bounded():
    x = mn.tensor(np.ones(2), requires_grad=True)
    y = x
    for _ in range(100_000):
        y = y * 1.0
    tracemalloc.start()
    buf = io.StringIO()
    mn.print_graph(y, file=buf)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    text = buf.getvalue()
    assert len(text.splitlines()) == 101
    assert "cut at max_depth=100" in text
    assert peak < 20e6
    y.sum().backward()                                  # the chain itself still backpropagates
    np.testing.assert_allclose(x.grad, 1.0)


def test_print_graph_max_depth_is_validated_and_shows_everything_when_large():
    x = mn.tensor(np.ones(2), requires_grad=True)
    y = (x * 2).exp().sum()
    buf = io.StringIO()
    mn.print_graph(y, file=buf, max_depth=10)
    assert buf.getvalue().splitlines()[-1].strip().startswith("└── AccumulateGrad")
    with pytest.raises(ValueError, match="max_depth"):
        mn.print_graph(y, max_depth=0)


def test_grad_and_anomaly_modes_live_in_grad_mode_and_old_names_still_import():
    from minnet.autograd import grad_mode
    from minnet.autograd.function import _AnomalyMode, _GradMode
    assert _GradMode is grad_mode.grad_state and _AnomalyMode is grad_mode.anomaly_state
