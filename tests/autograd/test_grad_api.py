"""autograd.grad / backward(create_graph=True), tensor hooks, custom Functions under double
backward, and autograd.functional, against PyTorch."""
import numpy as np
import pytest

import minnet as mn

torch = pytest.importorskip("torch")
RNG = np.random.default_rng(3)


def _pair(shape):
    a = RNG.standard_normal(shape)
    return mn.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)


# --------------------------------------------------------------------------- autograd.grad

def test_grad_without_create_graph_returns_plain_tensors_and_leaves_grad_alone():
    x, xt = _pair((3, 4))
    (g,) = mn.autograd.grad((x.sin() * x).sum(), x)
    (gt,) = torch.autograd.grad((xt.sin() * xt).sum(), xt)
    np.testing.assert_allclose(g.data, gt.numpy())
    assert g.grad_fn is None and not g.requires_grad
    assert x.grad is None


def test_grad_frees_the_graph_unless_retained():
    x, _ = _pair((3,))
    y = (x.exp() * 2).sum()
    mn.autograd.grad(y, x)
    with pytest.raises(RuntimeError, match="retain_graph"):
        mn.autograd.grad(y, x)
    z = (x.exp() * 2).sum()
    (a,) = mn.autograd.grad(z, x, retain_graph=True)
    (b,) = mn.autograd.grad(z, x)
    np.testing.assert_allclose(a.data, b.data)


def test_grad_with_create_graph_gives_second_derivatives():
    x, xt = _pair((5,))
    (g,) = mn.autograd.grad((x ** 3).sum(), x, create_graph=True)
    assert g.requires_grad and g.grad_fn is not None
    np.testing.assert_allclose(g.data, 3 * x.data ** 2)
    (h,) = mn.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(h.data, 6 * x.data)


def test_backward_create_graph_then_backward_of_a_gradient_penalty():
    # WGAN-GP style: loss = f(x) + (||df/dx|| - 1)^2, differentiated w.r.t. the weights
    w, wt = _pair((4, 3))
    xa = RNG.standard_normal((2, 4))
    x, xt = mn.tensor(xa, requires_grad=True), torch.tensor(xa, requires_grad=True)
    out = (x @ w).tanh().sum()
    out_t = (xt @ wt).tanh().sum()
    (gx,) = mn.autograd.grad(out, x, create_graph=True)
    (gxt,) = torch.autograd.grad(out_t, xt, create_graph=True)
    penalty = ((gx.norm(dim=1) - 1) ** 2).mean()
    penalty_t = ((gxt.norm(dim=1) - 1) ** 2).mean()
    penalty.backward()
    penalty_t.backward()
    np.testing.assert_allclose(w.grad, wt.grad.numpy(), rtol=1e-10)


def test_allow_unused():
    x, _ = _pair((3,))
    y, _ = _pair((3,))
    with pytest.raises(RuntimeError, match="allow_unused=True"):
        mn.autograd.grad((x * 2).sum(), [x, y], retain_graph=True)
    gx, gy = mn.autograd.grad((x * 2).sum(), [x, y], allow_unused=True)
    np.testing.assert_allclose(gx.data, 2.0)
    assert gy is None
    gx, gy = mn.autograd.grad((x * 2).sum(), [x, y], materialize_grads=True)
    np.testing.assert_array_equal(gy.data, np.zeros(3))


def test_non_scalar_outputs_need_grad_outputs():
    x, xt = _pair((3, 2))
    y = x * x
    with pytest.raises(RuntimeError, match="scalar outputs"):
        mn.autograd.grad(y, x)
    v = RNG.standard_normal((3, 2))
    (g,) = mn.autograd.grad(y, x, grad_outputs=v)
    (gt,) = torch.autograd.grad(xt * xt, xt, grad_outputs=torch.tensor(v))
    np.testing.assert_allclose(g.data, gt.numpy())
    with pytest.raises(ValueError, match="grad_outputs"):
        mn.autograd.grad(x * x, x, grad_outputs=np.ones((2, 3)))


def test_several_outputs_and_inputs_and_grad_outputs_with_a_graph():
    x, xt = _pair((3,))
    y, yt = _pair((3,))
    outs = [x * y, (x + y).exp()]
    outs_t = [xt * yt, (xt + yt).exp()]
    v = [mn.tensor(RNG.standard_normal(3), requires_grad=True), RNG.standard_normal(3)]
    vt = [torch.tensor(v[0].data, requires_grad=True), torch.tensor(v[1])]
    gs = mn.autograd.grad(outs, [x, y], grad_outputs=v, create_graph=True)
    gts = torch.autograd.grad(outs_t, [xt, yt], grad_outputs=vt, create_graph=True)
    for g, gt in zip(gs, gts):
        np.testing.assert_allclose(g.data, gt.detach().numpy())
    (dv,) = mn.autograd.grad(gs[0].sum(), v[0])       # the gradient is differentiable in v too
    (dvt,) = torch.autograd.grad(gts[0].sum(), vt[0])
    np.testing.assert_allclose(dv.data, dvt.numpy())


def test_grad_with_respect_to_a_non_leaf():
    x, xt = _pair((4,))
    h, ht = x.sin(), xt.sin()
    (g,) = mn.autograd.grad((h * h).sum(), h)
    (gt,) = torch.autograd.grad((ht * ht).sum(), ht)
    np.testing.assert_allclose(g.data, gt.numpy())


def test_grad_rejects_bad_arguments():
    x, _ = _pair((2,))
    with pytest.raises(TypeError, match="inputs"):
        mn.autograd.grad(x.sum(), [np.ones(2)])
    with pytest.raises(RuntimeError, match="does not require grad"):
        mn.autograd.grad(mn.tensor(np.ones(2)).sum(), x)


# --------------------------------------------------------------------------- custom Functions

class Cube(mn.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * x * x * g            # Tensor operations when ctx hands out Tensors


class NumpyCube(mn.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * np.square(x) * g      # a NumPy function: once differentiable


def test_custom_function_with_tensor_backward_is_twice_differentiable():
    x, _ = _pair((4,))
    (g,) = mn.autograd.grad(Cube.apply(x).sum(), x, create_graph=True)
    np.testing.assert_allclose(g.data, 3 * x.data ** 2)
    (h,) = mn.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(h.data, 6 * x.data)
    assert mn.autograd.gradgradcheck(Cube.apply, (x,))


def test_custom_function_with_numpy_backward_is_once_differentiable_with_a_clear_error():
    x, _ = _pair((4,))
    NumpyCube.apply(x).sum().backward()          # plain backward still works
    np.testing.assert_allclose(x.grad, 3 * x.data ** 2)
    with pytest.raises(RuntimeError, match="NumpyCubeBackward is once differentiable"):
        mn.autograd.grad(NumpyCube.apply(x).sum(), x, create_graph=True)


def test_builtin_op_without_double_backward_names_itself():
    x = mn.tensor(RNG.standard_normal((2, 3, 4, 4)), requires_grad=True)
    y = mn.functional.max_pool2d(x, 2)
    with pytest.raises(RuntimeError, match="is not twice differentiable"):
        mn.autograd.grad(y.sum(), x, create_graph=True)


def test_custom_backward_returning_a_saved_array_is_not_aliased_into_grad():
    class PassSaved(mn.Function):
        @staticmethod
        def forward(ctx, x, w):
            ctx.save_for_backward(w)
            return x * w

        @staticmethod
        def backward(ctx, g):
            (w,) = ctx.saved_tensors
            return w, None          # (wrong on purpose) returns the saved array itself

    w_arr = np.array([1.0, 2.0, 3.0])
    x = mn.tensor(np.zeros(3), requires_grad=True)
    w = mn.tensor(w_arr)
    PassSaved.apply(x, w).sum().backward()
    PassSaved.apply(x, w).sum().backward()        # accumulates into x.grad in place
    np.testing.assert_array_equal(w.data, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(x.grad, [2.0, 4.0, 6.0])
    assert not np.shares_memory(x.grad, w.data)


# --------------------------------------------------------------------------- hooks

def test_tensor_hooks_run_in_order_may_replace_and_can_be_removed():
    x, xt = _pair((3,))
    calls = []
    y, yt = x * 2, xt * 2
    h1 = y.register_hook(lambda g: calls.append(("first", g.data.copy())))
    y.register_hook(lambda g: g * 10)
    y.register_hook(lambda g: calls.append(("third", g.data.copy())))
    yt.register_hook(lambda g: g * 10)
    (y * y).sum().backward()
    (yt * yt).sum().backward()
    np.testing.assert_allclose(x.grad, xt.grad.numpy())
    assert [c[0] for c in calls] == ["first", "third"]
    np.testing.assert_allclose(calls[1][1], 10 * calls[0][1])
    h1.remove()
    calls.clear()
    x.grad = None
    y = x * 2
    y.register_hook(lambda g: calls.append("again"))
    y.sum().backward()
    assert calls == ["again"]


def test_leaf_hook_and_removal():
    x, xt = _pair((3,))
    handle = x.register_hook(lambda g: g.clamp(-0.5, 0.5))
    xt.register_hook(lambda g: g.clamp(-0.5, 0.5))
    (x * mn.tensor([1.0, -2.0, 0.25])).sum().backward()
    (xt * torch.tensor([1.0, -2.0, 0.25], dtype=torch.float64)).sum().backward()
    np.testing.assert_allclose(x.grad, xt.grad.numpy())
    handle.remove()
    x.grad = None
    (x * 3).sum().backward()
    np.testing.assert_allclose(x.grad, 3.0)


def test_hooks_see_the_summed_gradient_and_work_under_create_graph():
    x, _ = _pair((3,))
    y = x * 1.0
    seen = []
    y.register_hook(lambda g: seen.append(g.data.copy()))
    (y * 2 + y * 3).sum().backward()
    assert len(seen) == 1
    np.testing.assert_allclose(seen[0], 5.0)
    z = x * x
    z.register_hook(lambda g: g * 2)
    (g,) = mn.autograd.grad(z.sum(), x, create_graph=True)
    np.testing.assert_allclose(g.data, 4 * x.data)
    (h,) = mn.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(h.data, 4.0)


def test_retain_grad_for_a_non_leaf():
    x, xt = _pair((3,))
    h, ht = x.exp(), xt.exp()
    h.retain_grad()
    ht.retain_grad()
    assert h.retains_grad and not x.retains_grad
    (h * h).sum().backward()
    (ht * ht).sum().backward()
    np.testing.assert_allclose(h.grad, ht.grad.numpy())
    w = x.exp()
    (w * w).sum().backward()
    assert w.grad is None           # not retained


def test_register_hook_on_a_tensor_without_grad_fails():
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        mn.tensor([1.0]).register_hook(lambda g: g)


# --------------------------------------------------------------------------- autograd.functional

def _f(x, y):
    return (x.sin() * y).sum(dim=0) + (x * x).sum()


def _ft(x, y):
    return (x.sin() * y).sum(dim=0) + (x * x).sum()


def test_jacobian_matches_torch():
    a, b = RNG.standard_normal((3, 2)), RNG.standard_normal((3, 2))
    J = mn.autograd.functional.jacobian(_f, (mn.tensor(a), mn.tensor(b)))
    Jt = torch.autograd.functional.jacobian(_ft, (torch.tensor(a), torch.tensor(b)))
    for j, jt in zip(J, Jt):
        assert j.shape == tuple(jt.shape)
        np.testing.assert_allclose(j.data, jt.numpy())
    single = mn.autograd.functional.jacobian(lambda x: x.exp() @ mn.tensor(b.T), mn.tensor(a))
    single_t = torch.autograd.functional.jacobian(lambda x: x.exp() @ torch.tensor(b.T), torch.tensor(a))
    np.testing.assert_allclose(single.data, single_t.numpy())


def test_hessian_vhp_hvp_vjp_jvp_match_torch():
    a = RNG.standard_normal(4)
    v = RNG.standard_normal(4)

    def f(x):
        return (x.sin() * x.exp()).sum() + x.logsumexp(0)

    def ft(x):
        return (x.sin() * x.exp()).sum() + x.logsumexp(0)

    F, T = mn.autograd.functional, torch.autograd.functional
    np.testing.assert_allclose(F.hessian(f, mn.tensor(a)).data, T.hessian(ft, torch.tensor(a)).numpy())
    for name in ("vhp", "hvp"):
        out, r = getattr(F, name)(f, mn.tensor(a), mn.tensor(v))
        out_t, r_t = getattr(T, name)(ft, torch.tensor(a), torch.tensor(v))
        np.testing.assert_allclose(out.data, out_t.numpy())
        np.testing.assert_allclose(r.data, r_t.numpy())

    def g(x):
        return x.exp() * x.sum()

    def gt(x):
        return x.exp() * x.sum()

    out, r = F.vjp(g, mn.tensor(a), mn.tensor(v))
    _, r_t = T.vjp(gt, torch.tensor(a), torch.tensor(v))
    np.testing.assert_allclose(r.data, r_t.numpy())
    out, r = F.jvp(g, mn.tensor(a), mn.tensor(v))
    _, r_t = T.jvp(gt, torch.tensor(a), torch.tensor(v))
    np.testing.assert_allclose(r.data, r_t.numpy())


def test_dense_jacobian_is_the_weight_matrix():
    w = RNG.standard_normal((3, 5))
    x = mn.tensor(RNG.standard_normal(5))
    J = mn.autograd.functional.jacobian(lambda t: mn.functional.linear(t, mn.tensor(w)), x)
    np.testing.assert_allclose(J.data, w)
    batch = mn.tensor(RNG.standard_normal((4, 5)))
    Jb = mn.autograd.functional.jacobian(lambda t: mn.functional.linear(t, mn.tensor(w)), batch)
    assert Jb.shape == (4, 3, 4, 5)
    np.testing.assert_allclose(Jb.data.reshape(12, 20), np.kron(np.eye(4), w))


# --------------------------------------------------------------------------- factories

def test_factories_dtypes_and_shapes_follow_torch():
    assert mn.zeros(2, 3).dtype == np.float32 and mn.zeros((2, 3)).shape == (2, 3)
    assert mn.ones(4, dtype="float64").dtype == np.float64
    assert mn.full((2,), 3).dtype == np.int64 and mn.full((2,), 1.5).dtype == np.float32
    assert mn.arange(5).dtype == np.int64 and mn.arange(0, 1, 0.25).shape == (4,)
    np.testing.assert_allclose(mn.arange(1, 2, 0.25).data, torch.arange(1, 2, 0.25).numpy())
    np.testing.assert_allclose(mn.linspace(0, 1, 5).data, torch.linspace(0, 1, 5).numpy())
    np.testing.assert_array_equal(mn.eye(3, 2).data, torch.eye(3, 2).numpy())
    assert mn.empty(3).shape == (3,)
    assert mn.randint(0, 10, (5,)).dtype == np.int64
    t = mn.randn(3, 2, dtype="float64", requires_grad=True)
    assert t.requires_grad and mn.zeros_like(t).dtype == np.float64
    assert mn.rand_like(t).shape == (3, 2) and mn.full_like(t, 7).data.max() == 7


def test_random_factories_are_seeded_by_manual_seed_only():
    mn.manual_seed(123)
    a = (mn.randn(4), mn.rand(3), mn.randint(10, (3,)))
    np.random.seed(0)              # NumPy's global state plays no part
    mn.manual_seed(123)
    b = (mn.randn(4), mn.rand(3), mn.randint(10, (3,)))
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x.data, y.data)
    assert np.all((a[1].data >= 0) & (a[1].data < 1))


def test_tensor_copies_and_from_numpy_shares():
    arr = np.ones(3)
    t = mn.tensor(arr, requires_grad=True)
    with mn.no_grad():
        t -= 1.0
    np.testing.assert_array_equal(arr, np.ones(3))
    s = mn.from_numpy(arr)
    s.data[0] = 5
    assert arr[0] == 5
    with pytest.raises(TypeError, match="from_numpy"):
        mn.from_numpy([1.0])


def test_factories_reject_bad_sizes():
    with pytest.raises(ValueError, match="size"):
        mn.zeros(-1)
    with pytest.raises(ValueError, match="step"):
        mn.arange(0, 1, 0)
