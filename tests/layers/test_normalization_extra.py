"""LayerNormalization and GroupNormalization: NumPy reference, gradcheck, PyTorch parity."""
import json

import numpy as np
import pytest

import minnet as mn
from minnet import layers

from _harness import TOLERANCES

TOL = TOLERANCES["default"]


def _layer_norm_ref(x, axes, gamma, beta, eps):
    mean = x.mean(axis=tuple(axes), keepdims=True)
    var = x.var(axis=tuple(axes), keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_layer_norm_matches_torch(torch, rng, dtype):
    x = rng.standard_normal((4, 7, 10)).astype(dtype) * 3 + 1
    layer = layers.LayerNormalization(dtype=dtype)
    layer.build(x.shape)
    gamma = rng.standard_normal(10).astype(dtype)
    beta = rng.standard_normal(10).astype(dtype)
    layer.set_weights([gamma, beta])
    xm = mn.tensor(x, requires_grad=True)
    y = layer(xm)
    np.testing.assert_allclose(y.numpy(), _layer_norm_ref(x.astype(np.float64), [-1], gamma, beta, 1e-3),
                               **TOL[dtype])
    g = rng.standard_normal(x.shape).astype(dtype)
    y.backward(g)
    ref = torch.nn.LayerNorm(10, eps=1e-3).to(torch.float64 if dtype == np.float64 else torch.float32)
    with torch.no_grad():
        ref.weight.copy_(torch.tensor(gamma))
        ref.bias.copy_(torch.tensor(beta))
    xt = torch.tensor(x, requires_grad=True)
    yt = ref(xt)
    yt.backward(torch.tensor(g))
    np.testing.assert_allclose(y.numpy(), yt.detach().numpy(), **TOL[dtype])
    np.testing.assert_allclose(xm.grad, xt.grad.numpy(), **TOL[dtype])
    np.testing.assert_allclose(layer.gamma.grad, ref.weight.grad.numpy(), **TOL[dtype])
    np.testing.assert_allclose(layer.beta.grad, ref.bias.grad.numpy(), **TOL[dtype])


@pytest.mark.parametrize("axis", [-1, [1, 2], [1, 3], 1])
@pytest.mark.parametrize("center, scale", [(True, True), (False, True), (True, False), (False, False)])
def test_layer_norm_axes_reference_and_gradcheck(rng, axis, center, scale):
    x = rng.standard_normal((2, 3, 4, 5))
    layer = layers.LayerNormalization(axis=axis, center=center, scale=scale, dtype="float64")
    layer.build(x.shape)
    axes = [a % 4 for a in ([axis] if isinstance(axis, int) else axis)]
    shape = [1] * 4
    for a in axes:
        shape[a] = x.shape[a]
    weights = []
    gamma = np.ones(shape)
    beta = np.zeros(shape)
    if scale:
        gamma = rng.standard_normal(shape)
        weights.append(gamma.reshape(layer.gamma.shape))
    if center:
        beta = rng.standard_normal(shape)
        weights.append(beta.reshape(layer.beta.shape))
    layer.set_weights(weights)
    np.testing.assert_allclose(layer(x).numpy(), _layer_norm_ref(x, axes, gamma, beta, 1e-3),
                               rtol=1e-10, atol=1e-12)
    assert mn.gradcheck(lambda t: layer(t), (mn.tensor(x, requires_grad=True),))
    params = layer.parameters()
    if params:
        assert mn.gradcheck(lambda *p: layer(mn.tensor(x)), tuple(params))


def test_layer_norm_thread_count_independent(rng):
    x = rng.standard_normal((300, 200)).astype(np.float32)
    g = rng.standard_normal(x.shape).astype(np.float32)
    previous = mn.get_num_threads()
    results = []
    try:
        for n in (1, 2, 3):
            mn.set_num_threads(n)
            layer = layers.LayerNormalization()
            layer.build(x.shape)
            xm = mn.tensor(x, requires_grad=True)
            layer(xm).backward(g)
            results.append((xm.grad, layer.gamma.grad, layer.beta.grad))
    finally:
        mn.set_num_threads(previous)
    for other in results[1:]:
        for a, b in zip(results[0], other):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
@pytest.mark.parametrize("groups", [1, 2, 6])
def test_group_norm_matches_torch(torch, rng, data_format, groups):
    x = rng.standard_normal((2, 6, 3, 4)) * 2                       # NCHW
    gamma, beta = rng.standard_normal(6), rng.standard_normal(6)
    axis = -1 if data_format == "channels_last" else 1
    xin = x.transpose(0, 2, 3, 1).copy() if data_format == "channels_last" else x
    layer = layers.GroupNormalization(groups=groups, axis=axis, dtype="float64")
    layer.build(xin.shape)
    layer.set_weights([gamma, beta])
    xm = mn.tensor(xin, requires_grad=True)
    y = layer(xm)
    (y * mn.tensor(np.cos(np.arange(y.size)).reshape(y.shape))).sum().backward()
    ref = torch.nn.GroupNorm(groups, 6, eps=1e-3).double()
    with torch.no_grad():
        ref.weight.copy_(torch.tensor(gamma))
        ref.bias.copy_(torch.tensor(beta))
    xt = torch.tensor(x, requires_grad=True)
    yt = ref(xt)
    w = np.cos(np.arange(y.size)).reshape(y.shape)
    wt = w.transpose(0, 3, 1, 2) if data_format == "channels_last" else w
    (yt * torch.tensor(wt.copy())).sum().backward()
    out = yt.detach().numpy()
    grad = xt.grad.numpy()
    if data_format == "channels_last":
        out, grad = out.transpose(0, 2, 3, 1), grad.transpose(0, 2, 3, 1)
    np.testing.assert_allclose(y.numpy(), out, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(xm.grad, grad, rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(layer.gamma.grad, ref.weight.grad.numpy(), rtol=1e-9, atol=1e-11)
    small = mn.tensor(rng.standard_normal((1, 2, 2, 6)), requires_grad=True)
    layer2 = layers.GroupNormalization(groups=3, dtype="float64")
    assert mn.gradcheck(lambda t: layer2(t), (small,))


def test_bad_arguments_and_config():
    with pytest.raises(ValueError, match="must divide"):
        layers.GroupNormalization(groups=4)(np.ones((1, 2, 2, 6)))
    with pytest.raises(ValueError, match="`epsilon`"):
        layers.LayerNormalization(epsilon=-1)
    with pytest.raises(TypeError, match="`axis`"):
        layers.LayerNormalization(axis="last")
    with pytest.raises(ValueError, match="batch axis"):
        layers.LayerNormalization(axis=0)(np.ones((2, 3)))
    for layer in (layers.LayerNormalization(axis=[1, 2], gamma_regularizer="l2"),
                  layers.GroupNormalization(groups=2, beta_constraint="non_neg")):
        config = json.loads(json.dumps(layers.serialize(layer)))
        assert layers.deserialize(config).get_config() == layer.get_config()
    assert layers.LayerNormalization().epsilon == 1e-3           # Keras's default
