"""Conv2D: NumPy reference, float64 gradcheck, PyTorch parity, config, validation."""
import json
import math

import numpy as np
import pytest

import minnet as mn
from minnet import layers

TOL = {np.float32: dict(rtol=1e-4, atol=1e-5), np.float64: dict(rtol=1e-10, atol=1e-12)}


def _same_pads(kernel, dilation):
    total = dilation * (kernel - 1)
    return total // 2, total - total // 2          # the extra one at the bottom/right (PyTorch)


def conv2d_reference(x, w, b, stride, padding, dilation):
    """Direct sum over kernel offsets: y[n,f,i,j] = b[f] + sum_{c,p,q} w[f,c,p,q] x[n,c,i*s+p*d,j*s+q*d]."""
    (sh, sw), (dh, dw) = stride, dilation
    kh, kw = w.shape[2:]
    if padding == "same":
        (pt, pb), (pl, pr) = _same_pads(kh, dh), _same_pads(kw, dw)
    elif padding == "valid":
        pt = pb = pl = pr = 0
    else:
        (pt, pl), (pb, pr) = padding, padding
    xp = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    oh = (xp.shape[2] - dh * (kh - 1) - 1) // sh + 1
    ow = (xp.shape[3] - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((x.shape[0], w.shape[0], oh, ow))
    for p in range(kh):
        for q in range(kw):
            patch = xp[:, :, p * dh: p * dh + sh * (oh - 1) + 1: sh, q * dw: q * dw + sw * (ow - 1) + 1: sw]
            out += np.einsum("nchw,fc->nfhw", patch, w[:, :, p, q])
    if b is not None:
        out += b[None, :, None, None]
    return out


# (input shape, filters, kernel_size, strides, padding, dilation_rate)
CASES = [
    ((1, 1, 5, 5), 1, 1, 1, "valid", 1),                # 1x1, batch of 1
    ((2, 3, 7, 6), 4, (3, 2), 1, "valid", 1),           # non-square kernel, odd sizes
    ((2, 3, 9, 8), 2, 3, 2, 1, 1),                      # stride 2, padding 1
    ((1, 2, 9, 10), 3, 3, 1, 2, 2),                     # dilation 2
    ((2, 2, 6, 7), 3, (2, 4), 1, "same", 1),            # even kernel, "same"
    ((1, 3, 4, 5), 2, (4, 5), 1, "valid", 1),           # kernel = input
    ((2, 1, 8, 9), 2, 2, (3, 2), (1, 0), (1, 2)),       # stride > kernel, asymmetric everything
]


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape, filters, kernel, strides, padding, dilation", CASES)
def test_conv2d_matches_numpy(rng, dtype, shape, filters, kernel, strides, padding, dilation):
    x = rng.standard_normal(shape).astype(dtype)
    layer = layers.Conv2D(filters, kernel, strides=strides, padding=padding, dilation_rate=dilation,
                          dtype=np.dtype(dtype).name)
    y = layer(x).numpy()
    kernel_w, bias = layer.get_weights()
    assert kernel_w.shape == (filters, shape[1]) + _pair(kernel) and bias.shape == (filters,)
    pad = padding if isinstance(padding, str) else _pair(padding)
    expected = conv2d_reference(x.astype(np.float64), kernel_w.astype(np.float64), bias.astype(np.float64),
                                _pair(strides), pad, _pair(dilation))
    assert y.dtype == dtype
    np.testing.assert_allclose(y, expected, **TOL[dtype])
    assert layer.compute_output_shape((None,) + shape[1:]) == (None,) + y.shape[1:]


@pytest.mark.parametrize("shape, filters, kernel, strides, padding, dilation", [
    ((2, 2, 5, 4), 2, (3, 2), 1, "valid", 1),
    ((1, 2, 5, 5), 2, 2, 2, 1, 1),
    ((2, 1, 6, 5), 2, (2, 3), 1, "same", (2, 1)),
])
@pytest.mark.parametrize("use_bias", [True, False])
def test_conv2d_gradcheck(rng, shape, filters, kernel, strides, padding, dilation, use_bias):
    layer = layers.Conv2D(filters, kernel, strides=strides, padding=padding, dilation_rate=dilation,
                          use_bias=use_bias, dtype="float64")
    x = mn.tensor(rng.standard_normal(shape), requires_grad=True)
    assert mn.gradcheck(layer, x)


def _torch_conv(torch, layer, dtype):
    kh, kw = layer.kernel_size
    padding = layer.padding if isinstance(layer.padding, str) else layer.padding
    ref = torch.nn.Conv2d(layer.in_channels, layer.filters, (kh, kw), stride=layer.strides,
                          padding=padding, dilation=layer.dilation_rate, bias=layer.use_bias)
    ref = ref.to(getattr(torch, dtype))
    with torch.no_grad():
        ref.weight.copy_(torch.from_numpy(layer.kernel.data))
        if layer.use_bias:
            ref.bias.copy_(torch.from_numpy(layer.bias.data))
    return ref


@pytest.mark.filterwarnings("ignore:Using padding='same'")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape, filters, kernel, strides, padding, dilation", CASES)
def test_conv2d_matches_torch(torch, rng, dtype, shape, filters, kernel, strides, padding, dilation):
    layer = layers.Conv2D(filters, kernel, strides=strides, padding=padding, dilation_rate=dilation,
                          dtype=dtype)
    layer.build((None,) + shape[1:])
    ref = _torch_conv(torch, layer, dtype)
    x = rng.standard_normal(shape).astype(dtype)
    xm = mn.tensor(x, requires_grad=True)
    xt = torch.from_numpy(x).requires_grad_(True)
    y, yt = layer(xm), ref(xt)
    g = rng.standard_normal(yt.shape).astype(dtype)
    (y * mn.tensor(g)).sum().backward()
    (yt * torch.from_numpy(g)).sum().backward()
    tol = TOL[np.dtype(dtype).type]
    np.testing.assert_allclose(y.numpy(), yt.detach().numpy(), **tol)
    np.testing.assert_allclose(xm.grad, xt.grad.numpy(), **tol)
    np.testing.assert_allclose(layer.kernel.grad, ref.weight.grad.numpy(), **tol)
    np.testing.assert_allclose(layer.bias.grad, ref.bias.grad.numpy(), **tol)


@pytest.mark.filterwarnings("ignore:Using padding='same'")
def test_conv2d_same_even_kernel_matches_torch_same(torch, rng):
    layer = layers.Conv2D(3, (4, 2), padding="same", dilation_rate=(1, 3), dtype="float64")
    x = rng.standard_normal((2, 2, 7, 8))
    y = layer(x)
    assert y.shape == (2, 3, 7, 8)
    ref = _torch_conv(torch, layer, "float64")
    np.testing.assert_allclose(y.numpy(), ref(torch.from_numpy(x)).detach().numpy(), rtol=1e-10, atol=1e-12)


def test_conv2d_activation_and_default_init():
    mn.manual_seed(1)
    layer = layers.Conv2D(16, (3, 5), activation="relu", dtype="float64")
    y = layer(np.random.default_rng(0).standard_normal((2, 4, 6, 7)))
    assert y.numpy().min() >= 0 and y.shape == (2, 16, 4, 3)
    bound = 1 / math.sqrt(4 * 3 * 5)           # fan_in = in_channels*kh*kw
    for w in layer.get_weights():
        assert np.abs(w).max() <= bound and np.abs(w).max() > 0.8 * bound


def test_conv2d_kernel_initializer_uses_conv_fans():
    layer = layers.Conv2D(8, 3, kernel_initializer="he_uniform", bias_initializer="zeros", dtype="float64")
    layer(np.zeros((1, 5, 4, 4)))
    assert np.abs(layer.kernel.data).max() <= math.sqrt(6 / (5 * 9))
    np.testing.assert_array_equal(layer.bias.data, 0)


def test_conv2d_wrong_channels_after_build_names_the_layer():
    layer = layers.Conv2D(4, 3, name="conv_a")
    layer(np.zeros((1, 3, 8, 8)))
    with pytest.raises(ValueError, match="'conv_a'.*axis 1.*value 3.*\\(1, 2, 8, 8\\)"):
        layer(np.zeros((1, 2, 8, 8)))
    with pytest.raises(ValueError, match="'conv_a'.*ndim=4"):
        layer(np.zeros((3, 8, 8)))
    with pytest.raises(ValueError, match="'conv_a'.*too small"):
        layer(np.zeros((1, 3, 2, 8)))


@pytest.mark.parametrize("kwargs, arg", [
    (dict(filters=0, kernel_size=3), "filters"),
    (dict(filters=2.0, kernel_size=3), "filters"),
    (dict(filters=2, kernel_size=0), "kernel_size"),
    (dict(filters=2, kernel_size=(3, 3, 3)), "kernel_size"),
    (dict(filters=2, kernel_size=3, strides=0), "strides"),
    (dict(filters=2, kernel_size=3, padding="full"), "padding"),
    (dict(filters=2, kernel_size=3, padding=-1), "padding"),
    (dict(filters=2, kernel_size=3, dilation_rate=(1, 0)), "dilation_rate"),
    (dict(filters=2, kernel_size=3, activation="nope"), "activation"),
])
def test_conv2d_rejects_bad_hyperparameters(kwargs, arg):
    with pytest.raises(ValueError, match=f"`{arg}`"):
        layers.Conv2D(**kwargs)


def test_conv2d_config_round_trip_flops_repr():
    layer = layers.Conv2D(6, (3, 2), strides=(2, 1), padding=(1, 0), dilation_rate=(1, 2),
                          use_bias=False, activation="relu", kernel_initializer="glorot_normal",
                          dtype="float64", name="c1")
    again = layers.deserialize(json.loads(json.dumps(layers.serialize(layer))))
    assert again.get_config() == layer.get_config()
    assert (again.kernel_size, again.strides, again.padding, again.dilation_rate) == ((3, 2), (2, 1), (1, 0), (1, 2))
    layer(np.zeros((1, 3, 8, 8)))
    again(np.zeros((1, 3, 8, 8)))
    again.set_weights(layer.get_weights())
    x = np.random.default_rng(0).standard_normal((2, 3, 8, 8))
    np.testing.assert_array_equal(again(x).numpy(), layer(x).numpy())
    # outputs (2, 6, 4, 6): 2 * outputs * C*kh*kw, no bias
    assert layer.count_flops((2, 3, 8, 8)) == 2 * (2 * 6 * 4 * 6) * 3 * 3 * 2
    assert layers.Conv2D(6, 3).count_flops((None, 3, 8, 8)) == 2 * (6 * 6 * 6) * 27 + 6 * 6 * 6
    text = repr(layer)
    assert "Conv2D(3, 6" in text and "strides=(2, 1)" in text and "relu" in text


@pytest.mark.parametrize("size", [7, 8])
@pytest.mark.parametrize("kernel", [2, 3, (3, 2)])
def test_conv2d_same_padding_with_strides_as_keras(size, kernel, torch):
    """Keras "same" at stride 2: output ceil(size/2), the odd padding pixel at the bottom/right."""
    layer = layers.Conv2D(3, kernel, strides=2, padding="same", dtype="float64")
    x = np.random.default_rng(size).standard_normal((2, 2, size, size + 1))
    y = layer(x)
    kh, kw = (kernel, kernel) if isinstance(kernel, int) else kernel
    pads = []
    for n, k in ((size, kh), (size + 1, kw)):
        total = max((-(-n // 2) - 1) * 2 + k - n, 0)
        pads.append((total // 2, total - total // 2))
    xt = torch.nn.functional.pad(torch.tensor(x), (pads[1][0], pads[1][1], pads[0][0], pads[0][1]))
    yt = torch.nn.functional.conv2d(xt, torch.tensor(layer.kernel.data), torch.tensor(layer.bias.data),
                                    stride=2)
    assert y.shape == layer.compute_output_shape(x.shape) == tuple(yt.shape)
    np.testing.assert_allclose(y.numpy(), yt.numpy(), rtol=1e-12, atol=1e-12)
