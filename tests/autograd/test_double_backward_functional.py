"""Double backward of the functional ops (linear, conv2d, activations, softmax, losses):
gradients and second derivatives against PyTorch in float64, plus gradgradcheck."""
import numpy as np
import pytest

import minnet as mn
import minnet.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional
RNG = np.random.default_rng(21)
LABELS = np.array([0, 2, 1, 4])
PROBS = RNG.random((4, 5))
PROBS /= PROBS.sum(1, keepdims=True)


def _t(m, a):
    return mn.tensor(a) if m is mn else torch.tensor(a)


# name -> (fn(module, functional, *tensors), input shapes)
CASES = {
    "sigmoid": (lambda m, f, x: f.sigmoid(x), [(4, 5)]),
    "tanh": (lambda m, f, x: f.tanh(x), [(4, 5)]),
    "relu_times_x": (lambda m, f, x: f.relu(x) * x, [(4, 5)]),
    "leaky_relu_times_x": (lambda m, f, x: f.leaky_relu(x, 0.1) * x, [(4, 5)]),
    "elu": (lambda m, f, x: f.elu(x, 1.3) if m is mn else f.elu(x, alpha=1.3), [(4, 5)]),
    "selu": (lambda m, f, x: f.selu(x), [(4, 5)]),
    "softplus": (lambda m, f, x: f.softplus(x * 3), [(4, 5)]),
    "gelu": (lambda m, f, x: f.gelu(x * 2), [(4, 5)]),
    "gelu_tanh": (lambda m, f, x: f.gelu(x * 2, approximate="tanh"), [(4, 5)]),
    "softmax": (lambda m, f, x: f.softmax(x, 1) if m is mn else f.softmax(x, dim=1), [(4, 5)]),
    "log_softmax_dim0": (lambda m, f, x: f.log_softmax(x, 0) if m is mn else f.log_softmax(x, dim=0), [(4, 5)]),
    "linear": (lambda m, f, x, w, b: f.linear(x, w, b).tanh(), [(4, 5), (3, 5), (3,)]),
    "linear_3d_no_bias": (lambda m, f, x, w: f.linear(x, w).sigmoid(), [(2, 4, 5), (3, 5)]),
    "conv2d": (lambda m, f, x, w, b: f.conv2d(x, w, b, stride=(2, 1), padding=1).tanh(),
               [(2, 3, 6, 5), (4, 3, 3, 2), (4,)]),
    "conv2d_dilated": (lambda m, f, x, w: f.conv2d(x, w, dilation=2, padding=2) ** 2, [(1, 2, 5, 5), (3, 2, 2, 3)]),
    "mse_loss": (lambda m, f, x, t: f.mse_loss(x.sin(), t), [(4, 5), (4, 5)]),
    "mse_loss_sum": (lambda m, f, x, t: f.mse_loss(x * x, t, reduction="sum"), [(4, 5), (4, 5)]),
    "mse_loss_none": (lambda m, f, x, t: f.mse_loss(x * x, t, reduction="none"), [(4, 5), (4, 5)]),
    "cross_entropy": (lambda m, f, x: f.cross_entropy(x, _t(m, LABELS)) if m is torch
                      else f.cross_entropy(x, LABELS), [(4, 5)]),
    "cross_entropy_smoothing_none": (
        lambda m, f, x: (f.cross_entropy(x, _t(m, LABELS), label_smoothing=0.1, reduction="none") if m is torch
                         else f.cross_entropy(x, LABELS, label_smoothing=0.1, reduction="none")), [(4, 5)]),
    "cross_entropy_probabilities": (lambda m, f, x, p: f.cross_entropy(x, p), [(4, 5), None]),
}


def _arrays(shapes):
    return [PROBS.copy() if s is None else RNG.standard_normal(s) for s in shapes]


@pytest.mark.parametrize("name", sorted(CASES))
def test_double_backward_matches_torch(name):
    fn, shapes = CASES[name]
    arrays = _arrays(shapes)
    xs = [mn.tensor(a, requires_grad=True) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    y, yt = fn(mn, F, *xs), fn(torch, TF, *ts)
    np.testing.assert_allclose(y.data, yt.detach().numpy(), rtol=1e-10, atol=1e-12)
    v = RNG.standard_normal(y.shape)
    gs = mn.autograd.grad(y, xs, grad_outputs=mn.tensor(v), create_graph=True)
    gts = torch.autograd.grad(yt, ts, grad_outputs=torch.tensor(v), create_graph=True)
    for g, gt in zip(gs, gts):
        np.testing.assert_allclose(g.data, gt.detach().numpy(), rtol=1e-9, atol=1e-11)
    ws = [RNG.standard_normal(a.shape) for a in arrays]
    total = sum((g * mn.tensor(w)).sum() for g, w in zip(gs, ws))
    total_t = sum((g * torch.tensor(w)).sum() for g, w in zip(gts, ws))
    hs = mn.autograd.grad(total, xs, allow_unused=True)
    hts = torch.autograd.grad(total_t, ts, allow_unused=True)
    for h, ht, a in zip(hs, hts, arrays):
        expected = np.zeros_like(a) if ht is None else ht.numpy()
        got = np.zeros_like(a) if h is None else h.data
        np.testing.assert_allclose(got, expected, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("name", ["sigmoid", "elu", "softplus", "gelu", "gelu_tanh", "softmax", "linear",
                                  "conv2d", "mse_loss", "cross_entropy", "cross_entropy_probabilities"])
def test_gradgradcheck(name):
    fn, shapes = CASES[name]
    if name == "conv2d":
        shapes = [(1, 2, 4, 3), (2, 2, 3, 2), (2,)]
    xs = [mn.tensor(a, requires_grad=True) for a in _arrays(shapes)]
    assert mn.autograd.gradgradcheck(lambda *a: fn(mn, F, *a), xs)


def test_conv2d_hessian_vector_product_without_create_graph_on_the_second_pass():
    # the gradient's own nodes (ConvInputGrad / ConvWeightGrad) also run on plain arrays
    x = mn.tensor(RNG.standard_normal((1, 2, 5, 5)), requires_grad=True)
    w = mn.tensor(RNG.standard_normal((3, 2, 3, 3)), requires_grad=True)
    xt = torch.tensor(x.data, requires_grad=True)
    wt = torch.tensor(w.data, requires_grad=True)
    gx, gw = mn.autograd.grad((F.conv2d(x, w) ** 2).sum(), [x, w], create_graph=True)
    gxt, gwt = torch.autograd.grad((TF.conv2d(xt, wt) ** 2).sum(), [xt, wt], create_graph=True)
    ((gx * gx).sum() + (gw * gw).sum()).backward()
    ((gxt * gxt).sum() + (gwt * gwt).sum()).backward()
    np.testing.assert_allclose(x.grad, xt.grad.numpy(), rtol=1e-9)
    np.testing.assert_allclose(w.grad, wt.grad.numpy(), rtol=1e-9)


def test_dense_layer_gradient_penalty_matches_torch():
    from minnet import layers
    dense = layers.Dense(3, activation="tanh", dtype="float64")
    dense.build((None, 4))
    w, b = dense.get_weights()
    lin = torch.nn.Linear(4, 3).double()
    with torch.no_grad():
        lin.weight.copy_(torch.tensor(w))
        lin.bias.copy_(torch.tensor(b))
    xa = RNG.standard_normal((5, 4))
    x, xt = mn.tensor(xa, requires_grad=True), torch.tensor(xa, requires_grad=True)
    (g,) = mn.autograd.grad(dense(x).sum(), x, create_graph=True)
    (gt,) = torch.autograd.grad(torch.tanh(lin(xt)).sum(), xt, create_graph=True)
    (g.norm(dim=1) ** 2).mean().backward()
    (gt.norm(dim=1) ** 2).mean().backward()
    np.testing.assert_allclose(dense.kernel.grad, lin.weight.grad.numpy(), rtol=1e-9)
    np.testing.assert_allclose(dense.bias.grad, lin.bias.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_softplus_second_derivative_across_the_threshold_matches_torch():
    # softplus is x itself above 20: first derivative 1 there, second 0; at exactly 20 the
    # first derivative is sigmoid(20) and (as PyTorch's) the second is 0
    xa = np.array([-30.0, -1.0, 0.0, 2.5, 19.0, 19.999, 20.0, 20.001, 21.0, 40.0])
    x, xt = mn.tensor(xa, requires_grad=True), torch.tensor(xa, requires_grad=True)
    (g,) = mn.autograd.grad(F.softplus(x).sum(), [x], create_graph=True)
    (gt,) = torch.autograd.grad(TF.softplus(xt).sum(), [xt], create_graph=True)
    np.testing.assert_allclose(g.data, gt.detach().numpy(), rtol=1e-12, atol=0)
    (h,) = mn.autograd.grad(g.sum(), [x])
    (ht,) = torch.autograd.grad(gt.sum(), [xt])
    np.testing.assert_allclose(h.data, ht.numpy(), rtol=1e-9, atol=1e-300)
    assert h.data[-3:].tolist() == [0.0, 0.0, 0.0] and h.data[6] == 0.0


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_third_derivative_matches_torch(approximate):
    # the recorded backward is itself differentiable (erf and tanh record their own)
    xa = np.linspace(-4.0, 4.0, 17)
    x, xt = mn.tensor(xa, requires_grad=True), torch.tensor(xa, requires_grad=True)
    (g,) = mn.autograd.grad(F.gelu(x, approximate=approximate).sum(), [x], create_graph=True)
    (gt,) = torch.autograd.grad(TF.gelu(xt, approximate=approximate).sum(), [xt], create_graph=True)
    (h,) = mn.autograd.grad(g.sum(), [x], create_graph=True)
    (ht,) = torch.autograd.grad(gt.sum(), [xt], create_graph=True)
    np.testing.assert_allclose(h.data, ht.detach().numpy(), rtol=1e-9, atol=1e-12)
    (k,) = mn.autograd.grad(h.sum(), [x])
    (kt,) = torch.autograd.grad(ht.sum(), [xt])
    np.testing.assert_allclose(k.data, kt.numpy(), rtol=1e-8, atol=1e-11)


def test_gelu_and_softplus_double_backward_in_float32():
    xa = RNG.standard_normal((3, 4)).astype(np.float32) * 3
    for fn, tfn in [(F.softplus, TF.softplus), (F.gelu, TF.gelu),
                    (lambda t: F.gelu(t, approximate="tanh"), lambda t: TF.gelu(t, approximate="tanh"))]:
        x, xt = mn.tensor(xa, requires_grad=True), torch.tensor(xa, requires_grad=True)
        (g,) = mn.autograd.grad(fn(x).sum(), [x], create_graph=True)
        (gt,) = torch.autograd.grad(tfn(xt).sum(), [xt], create_graph=True)
        (h,) = mn.autograd.grad((g * g).sum(), [x])
        (ht,) = torch.autograd.grad((gt * gt).sum(), [xt])
        assert g.dtype == np.float32 and h.dtype == np.float32
        np.testing.assert_allclose(h.data, ht.numpy(), rtol=1e-4, atol=1e-5)
