"""Conv2D in both layouts: NumPy reference, float64 gradcheck, PyTorch parity, Keras
defaults, config, shape errors, validation."""
import json
import math

import numpy as np
import pytest

import minnet as mn
from minnet import layers

from _harness import TOLERANCES

TOL = TOLERANCES["default"]


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


LAYOUTS = ["channels_last", "channels_first"]


def _to(layout, x):
    """An NCHW array in ``layout``."""
    return np.ascontiguousarray(np.moveaxis(x, 1, -1)) if layout == "channels_last" else x


def _back(layout, y):
    """An array of ``layout`` as NCHW."""
    y = np.asarray(y)
    return np.moveaxis(y, -1, 1) if layout == "channels_last" else y


def _shape(layout, shape):
    return tuple(_to(layout, np.empty(shape, np.int8)).shape)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape, filters, kernel, strides, padding, dilation", CASES)
def test_conv2d_matches_numpy(rng, dtype, shape, filters, kernel, strides, padding, dilation,
                              layout):
    x = rng.standard_normal(shape).astype(dtype)
    layer = layers.Conv2D(filters, kernel, strides=strides, padding=padding, dilation_rate=dilation,
                          data_format=layout, dtype=np.dtype(dtype).name)
    y = layer(_to(layout, x)).numpy()
    kernel_w, bias = layer.get_weights()
    # PyTorch's kernel layout whatever the data layout
    assert kernel_w.shape == (filters, shape[1]) + _pair(kernel) and bias.shape == (filters,)
    pad = padding if isinstance(padding, str) else _pair(padding)
    expected = conv2d_reference(x.astype(np.float64), kernel_w.astype(np.float64), bias.astype(np.float64),
                                _pair(strides), pad, _pair(dilation))
    assert y.dtype == dtype
    np.testing.assert_allclose(_back(layout, y), expected, **TOL[dtype])
    in_shape = (None,) + _shape(layout, shape)[1:]
    assert layer.compute_output_shape(in_shape) == (None,) + y.shape[1:]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape, filters, kernel, strides, padding, dilation", [
    ((2, 2, 5, 4), 2, (3, 2), 1, "valid", 1),
    ((1, 2, 5, 5), 2, 2, 2, 1, 1),
    ((2, 1, 6, 5), 2, (2, 3), 1, "same", (2, 1)),
])
@pytest.mark.parametrize("use_bias", [True, False])
def test_conv2d_gradcheck(rng, shape, filters, kernel, strides, padding, dilation, use_bias, layout):
    layer = layers.Conv2D(filters, kernel, strides=strides, padding=padding, dilation_rate=dilation,
                          use_bias=use_bias, data_format=layout, dtype="float64")
    x = mn.tensor(_to(layout, rng.standard_normal(shape)), requires_grad=True)
    assert mn.gradcheck(layer, x)


def _torch_conv(torch, layer, dtype):
    kh, kw = layer.kernel_size
    padding = layer.padding if isinstance(layer.padding, str) else layer.padding
    ref = torch.nn.Conv2d(layer.in_channels, layer.filters, (kh, kw), stride=layer.strides,
                          padding=padding, dilation=layer.dilation_rate, bias=layer.use_bias,
                          groups=layer.groups)
    ref = ref.to(getattr(torch, dtype))
    with torch.no_grad():
        ref.weight.copy_(torch.from_numpy(layer.kernel.data))
        if layer.use_bias:
            ref.bias.copy_(torch.from_numpy(layer.bias.data))
    return ref


@pytest.mark.filterwarnings("ignore:Using padding='same'")
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape, filters, kernel, strides, padding, dilation", CASES)
def test_conv2d_matches_torch(torch, rng, dtype, shape, filters, kernel, strides, padding, dilation,
                              layout):
    layer = layers.Conv2D(filters, kernel, strides=strides, padding=padding, dilation_rate=dilation,
                          data_format=layout, dtype=dtype)
    layer.build((None,) + _shape(layout, shape)[1:])
    ref = _torch_conv(torch, layer, dtype)
    x = rng.standard_normal(shape).astype(dtype)
    xm = mn.tensor(_to(layout, x), requires_grad=True)
    xt = torch.from_numpy(x).requires_grad_(True)
    if layout == "channels_last":
        ref = ref.to(memory_format=torch.channels_last)
        xt = torch.from_numpy(x).to(memory_format=torch.channels_last).requires_grad_(True)
    y, yt = layer(xm), ref(xt)
    g = rng.standard_normal(tuple(yt.shape)).astype(dtype)
    (y * mn.tensor(_to(layout, g))).sum().backward()
    (yt * torch.from_numpy(g)).sum().backward()
    tol = TOL[np.dtype(dtype).type]
    np.testing.assert_allclose(_back(layout, y.numpy()), yt.detach().numpy(), **tol)
    np.testing.assert_allclose(_back(layout, xm.grad), xt.grad.numpy(), **tol)
    np.testing.assert_allclose(layer.kernel.grad, ref.weight.grad.numpy(), **tol)
    np.testing.assert_allclose(layer.bias.grad, ref.bias.grad.numpy(), **tol)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("groups, in_channels, filters", [(2, 4, 6), (4, 4, 4), (3, 6, 3)])
def test_conv2d_groups_match_torch(torch, rng, groups, in_channels, filters, layout):
    layer = layers.Conv2D(filters, (3, 2), strides=(1, 2), padding=1, groups=groups,
                          data_format=layout, dtype="float64")
    x = rng.standard_normal((2, in_channels, 6, 7))
    xm = mn.tensor(_to(layout, x), requires_grad=True)
    y = layer(xm)
    assert layer.kernel.shape == (filters, in_channels // groups, 3, 2)
    ref = _torch_conv(torch, layer, "float64")
    xt = torch.from_numpy(x).requires_grad_(True)
    yt = ref(xt)
    np.testing.assert_allclose(_back(layout, y.numpy()), yt.detach().numpy(), rtol=1e-10, atol=1e-12)
    y.sum().backward()
    yt.sum().backward()
    np.testing.assert_allclose(_back(layout, xm.grad), xt.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(layer.kernel.grad, ref.weight.grad.numpy(), rtol=1e-10, atol=1e-12)
    assert mn.gradcheck(layer, mn.tensor(np.ascontiguousarray(_to(layout, x[:1, :, :4, :4])),
                                           requires_grad=True))


def test_conv2d_groups_validation():
    with pytest.raises(ValueError, match="`groups`"):
        layers.Conv2D(6, 3, groups=4)
    with pytest.raises(ValueError, match="`groups`"):
        layers.Conv2D(6, 3, groups=0)
    with pytest.raises(ValueError, match="not divisible by groups=3"):
        layers.Conv2D(6, 3, groups=3, data_format="channels_last").build((None, 8, 8, 4))


@pytest.mark.filterwarnings("ignore:Using padding='same'")
@pytest.mark.parametrize("layout", LAYOUTS)
def test_conv2d_same_even_kernel_matches_torch_same(torch, rng, layout):
    layer = layers.Conv2D(3, (4, 2), padding="same", dilation_rate=(1, 3), data_format=layout,
                          dtype="float64")
    x = rng.standard_normal((2, 2, 7, 8))
    y = layer(_to(layout, x))
    assert y.shape == _shape(layout, (2, 3, 7, 8))
    ref = _torch_conv(torch, layer, "float64")
    np.testing.assert_allclose(_back(layout, y.numpy()), ref(torch.from_numpy(x)).detach().numpy(),
                               rtol=1e-10, atol=1e-12)


def test_conv2d_keras_defaults_and_data_format_from_config():
    layer = layers.Conv2D(4, 3)
    assert layer.data_format == mn.config.image_data_format() == "channels_last"
    assert layer._data_format_explicit is False
    assert (layer.strides, layer.padding, layer.dilation_rate, layer.groups, layer.use_bias) == \
        ((1, 1), "valid", (1, 1), 1, True)
    assert layers.Conv2D(4, 3, data_format="channels_first")._data_format_explicit is True
    mn.config.set_image_data_format("channels_first")
    try:
        late = layers.Conv2D(4, 3)
    finally:
        mn.config.set_image_data_format("channels_last")
    # read at construction: switching back later does not move the layer
    assert late.data_format == "channels_first"
    assert late(np.zeros((1, 2, 5, 5))).shape == (1, 4, 3, 3)
    with pytest.raises(ValueError, match="`data_format`"):
        layers.Conv2D(4, 3, data_format="NHWC")


@pytest.mark.parametrize("layout", LAYOUTS)
def test_conv2d_activation_and_glorot_uniform_default_init(layout):
    mn.manual_seed(1)
    layer = layers.Conv2D(16, (3, 5), activation="relu", data_format=layout, dtype="float64")
    y = layer(_to(layout, np.random.default_rng(0).standard_normal((2, 4, 6, 7))))
    assert y.numpy().min() >= 0 and y.shape == _shape(layout, (2, 16, 4, 3))
    # Keras: glorot_uniform kernel, fans in*kh*kw and filters*kh*kw; zero bias
    bound = math.sqrt(6 / (4 * 3 * 5 + 16 * 3 * 5))
    kernel, bias = layer.get_weights()
    assert np.abs(kernel).max() <= bound and np.abs(kernel).max() > 0.8 * bound
    np.testing.assert_array_equal(bias, 0)


def test_conv2d_kernel_initializer_uses_conv_fans():
    layer = layers.Conv2D(8, 3, kernel_initializer="he_uniform", bias_initializer="zeros",
                          data_format="channels_first", dtype="float64")
    layer(np.zeros((1, 5, 4, 4)))
    assert np.abs(layer.kernel.data).max() <= math.sqrt(6 / (5 * 9))
    np.testing.assert_array_equal(layer.bias.data, 0)


def test_conv2d_wrong_channels_after_build_names_the_layer():
    layer = layers.Conv2D(4, 3, name="conv_a", data_format="channels_first")
    layer(np.zeros((1, 3, 8, 8)))
    with pytest.raises(ValueError, match="'conv_a'.*axis 1.*value 3.*\\(1, 2, 8, 8\\)"):
        layer(np.zeros((1, 2, 8, 8)))
    with pytest.raises(ValueError, match="'conv_a'.*ndim=4"):
        layer(np.zeros((3, 8, 8)))
    with pytest.raises(ValueError, match="'conv_a'.*does not fit"):
        layer(np.zeros((1, 3, 2, 8)))
    last = layers.Conv2D(4, 3, name="conv_b", data_format="channels_last")
    last(np.zeros((1, 8, 8, 3)))
    with pytest.raises(ValueError, match="'conv_b'.*axis 3.*value 3"):
        last(np.zeros((1, 8, 8, 2)))


@pytest.mark.parametrize("layout, shape, kwargs", [
    ("channels_last", (None, 8, 8, 1), dict(kernel_size=9)),
    ("channels_last", (None, 2, 8, 3), dict(kernel_size=3)),
    ("channels_first", (None, 3, 8, 2), dict(kernel_size=3)),
    ("channels_first", (None, 3, 8, 8), dict(kernel_size=3, dilation_rate=5)),
    ("channels_last", (None, 4, 4, 3), dict(kernel_size=3, strides=2, padding=0, dilation_rate=2)),
])
def test_conv2d_kernel_that_does_not_fit_raises_naming_layer_shape_and_layout(layout, shape, kwargs):
    layer = layers.Conv2D(32, name="conv_fit", data_format=layout, **kwargs)
    for call in (layer.compute_output_shape, layer.build):
        with pytest.raises(ValueError) as info:
            call(shape)
        message = str(info.value)
        assert "'conv_fit'" in message and str(shape) in message and layout in message
    assert not layer.built


def test_conv2d_input_shape_of_a_keras_tutorial():
    # Keras: Input(shape=(8, 8, 1)) + Conv2D(32, 3): (None, 6, 6, 32), never a negative size
    layer = layers.Conv2D(32, 3)
    assert layer.compute_output_shape((None, 8, 8, 1)) == (None, 6, 6, 32)
    layer.build((None, 8, 8, 1))
    assert layer.kernel.shape == (32, 1, 3, 3)


def test_conv2d_set_weights_with_a_keras_kernel_says_how_to_convert(rng):
    layer = layers.Conv2D(8, (3, 2), data_format="channels_last")
    layer.build((None, 6, 6, 4))
    keras_kernel = rng.standard_normal((3, 2, 4, 8)).astype(np.float32)
    with pytest.raises(ValueError, match=r"\(filters, in_channels/groups, kh, kw\).*"
                                         r"np\.transpose\(kernel, \(3, 2, 0, 1\)\)"):
        layer.set_weights([keras_kernel, np.zeros(8)])
    with pytest.raises(ValueError, match="np.transpose"):
        layer.set_weights([np.zeros((8, 4, 3, 3)), np.zeros(8)])
    layer.set_weights([np.transpose(keras_kernel, (3, 2, 0, 1)), np.zeros(8)])
    np.testing.assert_array_equal(layer.kernel.data, np.transpose(keras_kernel, (3, 2, 0, 1)))


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
    (dict(filters=2, kernel_size=3, data_format="channels_middle"), "data_format"),
])
def test_conv2d_rejects_bad_hyperparameters(kwargs, arg):
    with pytest.raises(ValueError, match=f"`{arg}`"):
        layers.Conv2D(**kwargs)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_conv2d_config_round_trip_flops_repr(layout):
    layer = layers.Conv2D(6, (3, 2), strides=(2, 1), padding=(1, 0), dilation_rate=(1, 2),
                          use_bias=False, activation="relu", kernel_initializer="glorot_normal",
                          data_format=layout, dtype="float64", name="c1")
    config = layer.get_config()
    assert config["data_format"] == layout and config["groups"] == 1
    again = layers.deserialize(json.loads(json.dumps(layers.serialize(layer))))
    assert again.get_config() == config and again.data_format == layout
    assert (again.kernel_size, again.strides, again.padding, again.dilation_rate) == ((3, 2), (2, 1), (1, 0), (1, 2))
    layer(_to(layout, np.zeros((1, 3, 8, 8))))
    again(_to(layout, np.zeros((1, 3, 8, 8))))
    again.set_weights(layer.get_weights())
    x = _to(layout, np.random.default_rng(0).standard_normal((2, 3, 8, 8)))
    np.testing.assert_array_equal(again(x).numpy(), layer(x).numpy())
    # outputs (2, 6, 4, 6): 2 * outputs * C*kh*kw, no bias
    assert layer.count_flops(_shape(layout, (2, 3, 8, 8))) == 2 * (2 * 6 * 4 * 6) * 3 * 3 * 2
    assert layers.Conv2D(6, 3, data_format=layout).count_flops(
        (None,) + _shape(layout, (1, 3, 8, 8))[1:]) == 2 * (6 * 6 * 6) * 27 + 6 * 6 * 6
    text = repr(layer)
    assert "Conv2D(3, 6" in text and "strides=(2, 1)" in text and "relu" in text and layout in text


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("size", [7, 8])
@pytest.mark.parametrize("kernel", [2, 3, (3, 2)])
def test_conv2d_same_padding_with_strides_as_keras(size, kernel, layout, torch):
    """Keras "same" at stride 2: output ceil(size/2), the odd padding pixel at the bottom/right."""
    layer = layers.Conv2D(3, kernel, strides=2, padding="same", data_format=layout, dtype="float64")
    x = np.random.default_rng(size).standard_normal((2, 2, size, size + 1))
    y = layer(_to(layout, x))
    kh, kw = (kernel, kernel) if isinstance(kernel, int) else kernel
    pads = []
    for n, k in ((size, kh), (size + 1, kw)):
        total = max((-(-n // 2) - 1) * 2 + k - n, 0)
        pads.append((total // 2, total - total // 2))
    xt = torch.nn.functional.pad(torch.tensor(x), (pads[1][0], pads[1][1], pads[0][0], pads[0][1]))
    yt = torch.nn.functional.conv2d(xt, torch.tensor(layer.kernel.data), torch.tensor(layer.bias.data),
                                    stride=2)
    assert y.shape == layer.compute_output_shape(_shape(layout, x.shape)) == _shape(layout, tuple(yt.shape))
    np.testing.assert_allclose(_back(layout, y.numpy()), yt.numpy(), rtol=1e-12, atol=1e-12)
