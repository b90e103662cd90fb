"""Conv2DTranspose, DepthwiseConv2D, SeparableConv2D: Keras's shapes, PyTorch's numbers, gradcheck."""
import numpy as np
import pytest

import minnet as mn
import minnet.functional as F
from minnet import layers

RNG = np.random.default_rng(0)


def _nhwc(a):
    return np.ascontiguousarray(a.transpose(0, 2, 3, 1))


def _reference_conv_transpose(x, w, stride, pad, out_pad):
    """Plain NumPy: scatter every input pixel's weights, then crop / pad (NCHW, groups=1)."""
    n, c, h, wd = x.shape
    _, f, kh, kw = w.shape
    full = np.zeros((n, f, (h - 1) * stride + kh, (wd - 1) * stride + kw))
    for i in range(h):
        for j in range(wd):
            full[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw] += np.einsum(
                "nc,cfab->nfab", x[:, :, i, j], w)
    full = np.pad(full, ((0, 0), (0, 0), (0, out_pad), (0, out_pad)))
    return full[:, :, pad:full.shape[2] - pad, pad:full.shape[3] - pad]


@pytest.mark.parametrize("stride, pad, out_pad", [(1, 0, 0), (2, 0, 1), (2, 1, 1), (3, 1, 0)])
def test_conv_transpose2d_matches_numpy_and_gradcheck(stride, pad, out_pad):
    x = RNG.normal(size=(2, 3, 4, 5))
    w = RNG.normal(size=(3, 2, 3, 3))
    y = F.conv_transpose2d(x, w, stride=stride, padding=pad, output_padding=out_pad)
    np.testing.assert_allclose(y.numpy(), _reference_conv_transpose(x, w, stride, pad, out_pad),
                               rtol=1e-12, atol=1e-12)
    yl = F.conv_transpose2d(_nhwc(x), w, stride=stride, padding=pad, output_padding=out_pad,
                            data_format="channels_last")
    np.testing.assert_allclose(yl.numpy(), _nhwc(y.numpy()), rtol=1e-12, atol=1e-12)
    xt, wt, bt = (mn.tensor(a, requires_grad=True) for a in (x, w, RNG.normal(size=2)))
    assert mn.gradcheck(lambda a, b, c: F.conv_transpose2d(a, b, c, stride=stride, padding=pad,
                                                           output_padding=out_pad), (xt, wt, bt))


@pytest.mark.parametrize("padding, strides, kernel, output_padding, expected", [
    ("same", 2, 3, None, (14, 14)), ("valid", 2, 3, None, (15, 15)), ("valid", 3, 2, None, (21, 21)),
    ("same", 2, 3, 1, (14, 14)), ("valid", 2, 3, 1, (16, 16)), ("same", 1, 4, None, (7, 7)),
])
def test_conv2d_transpose_output_shapes_are_keras(padding, strides, kernel, output_padding, expected):
    layer = layers.Conv2DTranspose(5, kernel, strides=strides, padding=padding,
                                   output_padding=output_padding, data_format="channels_last")
    y = layer(RNG.normal(size=(2, 7, 7, 3)).astype("float32"))
    assert y.shape == (2,) + expected + (5,)
    assert layer.compute_output_shape((None, 7, 7, 3)) == (None,) + expected + (5,)
    assert layer.kernel.shape == (3, 5, kernel, kernel)


def test_layers_against_torch():
    torch = pytest.importorskip("torch")
    x = RNG.normal(size=(2, 4, 9, 9))
    # Conv2DTranspose(valid, output_padding) == torch ConvTranspose2d
    layer = layers.Conv2DTranspose(3, 3, strides=2, output_padding=1, data_format="channels_first",
                                   dtype="float64")
    ours = layer(x)
    twin = torch.nn.ConvTranspose2d(4, 3, 3, stride=2, output_padding=1).double()
    with torch.no_grad():
        twin.weight.copy_(torch.tensor(layer.kernel.numpy()))
        twin.bias.copy_(torch.tensor(layer.bias.numpy()))
    np.testing.assert_allclose(ours.numpy(), twin(torch.tensor(x)).detach().numpy(), rtol=1e-10, atol=1e-10)
    # DepthwiseConv2D(depth_multiplier=2) == Conv2d(groups=C)
    dw = layers.DepthwiseConv2D(3, depth_multiplier=2, padding="same", data_format="channels_last",
                                dtype="float64")
    ours = dw(_nhwc(x))
    assert dw.kernel.shape == (8, 1, 3, 3)
    twin = torch.nn.Conv2d(4, 8, 3, padding=1, groups=4).double()
    with torch.no_grad():
        twin.weight.copy_(torch.tensor(dw.kernel.numpy()))
        twin.bias.copy_(torch.tensor(dw.bias.numpy()))
    np.testing.assert_allclose(ours.numpy(), _nhwc(twin(torch.tensor(x)).detach().numpy()),
                               rtol=1e-10, atol=1e-10)
    # SeparableConv2D == depthwise then pointwise
    sep = layers.SeparableConv2D(6, 3, data_format="channels_first", dtype="float64")
    ours = sep(x)
    depth = torch.nn.Conv2d(4, 4, 3, groups=4, bias=False).double()
    point = torch.nn.Conv2d(4, 6, 1).double()
    with torch.no_grad():
        depth.weight.copy_(torch.tensor(sep.depthwise_kernel.numpy()))
        point.weight.copy_(torch.tensor(sep.pointwise_kernel.numpy()))
        point.bias.copy_(torch.tensor(sep.bias.numpy()))
    np.testing.assert_allclose(ours.numpy(), point(depth(torch.tensor(x))).detach().numpy(),
                               rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("make", [
    lambda: layers.Conv2DTranspose(2, 3, strides=2, padding="same", data_format="channels_last", dtype="float64"),
    lambda: layers.DepthwiseConv2D(3, data_format="channels_last", dtype="float64"),
    lambda: layers.SeparableConv2D(2, 3, strides=2, padding="same", data_format="channels_last", dtype="float64"),
])
def test_layers_gradcheck_train_and_round_trip_config(make):
    layer = make()
    x = mn.tensor(RNG.normal(size=(2, 5, 5, 3)), requires_grad=True)
    layer(x)
    params = layer.parameters()
    assert mn.gradcheck(lambda a, *w: layer(a), (x, *params))
    clone = type(layer).from_config(layer.get_config())
    clone(x.numpy())
    assert [w.shape for w in clone.get_weights()] == [w.shape for w in layer.get_weights()]


def test_in_a_keras_autoencoder():
    mn.manual_seed(0)
    model = mn.Sequential([
        layers.Input((8, 8, 1)),
        layers.Conv2D(4, 3, strides=2, padding="same", activation="relu"),
        layers.SeparableConv2D(8, 3, padding="same", activation="relu"),
        layers.Conv2DTranspose(4, 3, strides=2, padding="same", activation="relu"),
        layers.DepthwiseConv2D(3, padding="same"),
        layers.Conv2D(1, 1),
    ])
    assert model.output_shape == (None, 8, 8, 1)
    x = RNG.random((32, 8, 8, 1)).astype("float32")
    model.compile(optimizer="adam", loss="mse")
    history = model.fit(x, x, epochs=3, batch_size=16, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]


def test_flop_counts_follow_the_arithmetic():
    sep = layers.SeparableConv2D(6, 3, depth_multiplier=2, data_format="channels_last")
    sep.build((None, 8, 8, 4))
    # depthwise: 2*N*(4*2)*6*6*3*3; pointwise: 2*N*6*6*6*8; bias: N*6*6*6 (N = 1)
    assert sep.count_flops((1, 8, 8, 4)) == 2 * 8 * 36 * 9 + 2 * 216 * 8 + 216
    up = layers.Conv2DTranspose(5, 3, strides=2, padding="same", data_format="channels_last")
    up.build((None, 7, 7, 3))
    assert up.count_flops((2, 7, 7, 3)) == 2 * 2 * 3 * 49 * 5 * 9 + 2 * 5 * 14 * 14


@pytest.mark.parametrize("make", [lambda: layers.Conv2D(4, 3), lambda: layers.DepthwiseConv2D(3),
                                  lambda: layers.SeparableConv2D(4, 3), lambda: layers.Conv1D(2, 3)])
def test_inputs_without_channels_are_refused_by_name(make):
    layer = make()
    shape = (2, 8, 0) if isinstance(layer, layers.Conv1D) else (2, 8, 8, 0)
    with pytest.raises(ValueError, match=f"Layer '{layer.name}'.* known, non-zero number of channels"):
        layer(np.zeros(shape, np.float32))
