"""Layer hooks (forward pre, forward, full backward) against torch.nn.Module's."""
import numpy as np
import pytest

import minnet as mn
from minnet import layers

torch = pytest.importorskip("torch")
RNG = np.random.default_rng(5)


def _pair():
    w, b = RNG.standard_normal((3, 4)), RNG.standard_normal(3)
    dense = layers.Dense(3, dtype="float64")
    dense.build((None, 4))
    dense.set_weights([w, b])
    lin = torch.nn.Linear(4, 3).double()
    with torch.no_grad():
        lin.weight.copy_(torch.tensor(w))
        lin.bias.copy_(torch.tensor(b))
    return dense, lin


def test_forward_hooks_order_replacement_and_removal():
    dense, lin = _pair()
    x = RNG.standard_normal((2, 4))
    calls = []
    h1 = dense.register_forward_pre_hook(lambda layer, args: calls.append("pre") or (args[0] * 2,))
    h2 = dense.register_forward_hook(lambda layer, args, out: calls.append("post") or out + 1)
    lin.register_forward_pre_hook(lambda m, args: (args[0] * 2,))
    lin.register_forward_hook(lambda m, args, out: out + 1)
    out = dense(mn.tensor(x))
    np.testing.assert_allclose(out.data, lin(torch.tensor(x)).detach().numpy())
    assert calls == ["pre", "post"]
    h1.remove()
    h2.remove()
    calls.clear()
    out = dense(mn.tensor(x))
    assert calls == []
    np.testing.assert_allclose(out.data, x @ dense.get_weights()[0].T + dense.get_weights()[1])


def test_full_backward_hook_sees_grad_input_and_grad_output_and_may_replace():
    dense, lin = _pair()
    x = RNG.standard_normal((2, 4))
    seen, seen_t = [], []

    def hook(layer, grad_input, grad_output):
        seen.append((grad_input[0].data.copy(), grad_output[0].data.copy()))
        return (grad_input[0] * 3,)

    def hook_t(module, grad_input, grad_output):
        seen_t.append((grad_input[0].numpy().copy(), grad_output[0].numpy().copy()))
        return (grad_input[0] * 3,)

    handle = dense.register_full_backward_hook(hook)
    lin.register_full_backward_hook(hook_t)
    xm = mn.tensor(x, requires_grad=True)
    xt = torch.tensor(x, requires_grad=True)
    (dense(xm).tanh() ** 2).sum().backward()
    (lin(xt).tanh() ** 2).sum().backward()
    assert len(seen) == 1
    np.testing.assert_allclose(seen[0][0], seen_t[0][0])
    np.testing.assert_allclose(seen[0][1], seen_t[0][1])
    np.testing.assert_allclose(xm.grad, xt.grad.numpy())
    np.testing.assert_allclose(dense.kernel.grad, lin.weight.grad.numpy())
    handle.remove()
    xm.grad = None
    (dense(xm).tanh() ** 2).sum().backward()
    assert len(seen) == 1
    np.testing.assert_allclose(xm.grad, xt.grad.numpy() / 3)


def test_full_backward_hook_on_an_input_without_grad_gets_none():
    dense, _ = _pair()
    seen = []
    dense.register_full_backward_hook(lambda layer, gi, go: seen.append((gi, go[0].shape)))
    dense(RNG.standard_normal((5, 4))).sum().backward()
    assert seen == [((None,), (5, 3))]


def test_hooks_in_a_sequential_run_in_layer_order():
    model = mn.Sequential([layers.Dense(4, dtype="float64"), layers.Dense(2, dtype="float64")])
    order = []
    for i, layer in enumerate(model.layers):
        layer.register_forward_hook(lambda l, a, o, i=i: order.append(("fwd", i)))
        layer.register_full_backward_hook(lambda l, gi, go, i=i: order.append(("bwd", i)))
    x = mn.tensor(RNG.standard_normal((3, 5)), requires_grad=True)
    model(x).sum().backward()
    assert order == [("fwd", 0), ("fwd", 1), ("bwd", 1), ("bwd", 0)]


def test_register_hook_needs_a_callable():
    with pytest.raises(TypeError, match="hook"):
        layers.Dense(2).register_forward_hook(3)
