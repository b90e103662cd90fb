"""DepthwiseConv1D / SeparableConv1D (issue 28): a NumPy reference, both layouts, gradcheck,
PyTorch's grouped conv1d, Keras 3 (oracle, weights converted from Keras's layouts)."""
import numpy as np
import pytest

import minnet as mn
from minnet import layers

RNG = np.random.default_rng(36)


def depthwise_reference(x, k, b, stride, pads, dilation):
    """x (N, L, C), k (C*m, 1, ks): output channel c*m + j reads input channel c."""
    x = np.pad(x, ((0, 0), pads, (0, 0)))
    n, length, c = x.shape
    cm, _, ks = k.shape
    m = cm // c
    out = (length - dilation * (ks - 1) - 1) // stride + 1
    y = np.zeros((n, out, cm))
    for o in range(cm):
        for t in range(ks):
            y[:, :, o] += x[:, t * dilation:t * dilation + (out - 1) * stride + 1:stride, o // m] * k[o, 0, t]
    return y + (0 if b is None else b)


@pytest.mark.parametrize("layout", ["channels_last", "channels_first"])
@pytest.mark.parametrize("options", [dict(), dict(strides=2, padding="same", depth_multiplier=2),
                                     dict(dilation_rate=2, padding="causal")], ids=str)
def test_depthwise_and_separable_match_numpy(layout, options):
    x = RNG.normal(size=(2, 9, 3))
    pads = {"valid": (0, 0), "causal": (2 * options.get("dilation_rate", 1), 0)}.get(
        options.get("padding", "valid"))
    layer = layers.DepthwiseConv1D(3, dtype="float64", data_format=layout, **options)
    xin = x if layout == "channels_last" else np.moveaxis(x, 1, 2)
    got = layer(xin).numpy()
    got = got if layout == "channels_last" else np.moveaxis(got, 1, 2)
    if pads is None:      # "same", stride 2 on 9 steps: 5 outputs, 2 pads (1 each side)
        pads = (1, 1)
    k, b = layer.get_weights()
    want = depthwise_reference(x, k, b, options.get("strides", 1), pads,
                               options.get("dilation_rate", 1))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    assert layer.compute_output_shape(xin.shape) == layer(xin).shape
    sep = layers.SeparableConv1D(4, 3, dtype="float64", data_format=layout, **options)
    y = sep(xin).numpy()
    y = y if layout == "channels_last" else np.moveaxis(y, 1, 2)
    dk, pk, pb = sep.get_weights()
    h = depthwise_reference(x, dk, None, options.get("strides", 1), pads,
                            options.get("dilation_rate", 1))
    np.testing.assert_allclose(y, h @ pk[:, :, 0].T + pb, rtol=1e-12, atol=1e-12)
    t = mn.tensor(np.ascontiguousarray(xin[:1, :7] if layout == "channels_last" else xin[:1, :, :7]),
                  requires_grad=True)
    assert mn.gradcheck(lambda a: sep(a), (t,))
    again = layers.SeparableConv1D.from_config(sep.get_config())
    assert again.depth_multiplier == sep.depth_multiplier and again.filters == 4
    assert layers.DepthwiseConv1D.from_config(layer.get_config()).depth_multiplier == layer.depth_multiplier


def test_against_torch(torch):
    x = RNG.normal(size=(2, 10, 4))
    layer = layers.DepthwiseConv1D(3, depth_multiplier=2, padding="same", dtype="float64")
    got = layer(x).numpy()
    k, b = layer.get_weights()
    want = torch.nn.functional.conv1d(torch.tensor(x).transpose(1, 2), torch.tensor(k),
                                      torch.tensor(b), padding=1, groups=4).transpose(1, 2).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_errors():
    with pytest.raises(ValueError, match="`depth_multiplier`"):
        layers.DepthwiseConv1D(3, depth_multiplier=0)
    with pytest.raises(ValueError, match="steps"):
        layers.SeparableConv1D(2, 5)(np.zeros((1, 3, 2), "float32"))
    assert layers.SeparableConvolution1D is layers.SeparableConv1D


@pytest.mark.slow_once
def test_against_keras(keras):
    x = RNG.normal(size=(2, 11, 3)).astype("float32")
    for options in (dict(), dict(strides=2, padding="same", depth_multiplier=2),
                    dict(dilation_rate=2)):
        theirs = keras.layers.DepthwiseConv1D(3, **options)
        want = keras.ops.convert_to_numpy(theirs(x))
        ours = layers.DepthwiseConv1D(3, **options)
        ours.build(x.shape)
        k, b = (keras.ops.convert_to_numpy(v) for v in theirs.weights)
        ours.set_weights([k.transpose(1, 2, 0).reshape(-1, 1, 3), b])
        np.testing.assert_allclose(ours(x).numpy(), want, rtol=1e-5, atol=1e-5)
        theirs = keras.layers.SeparableConv1D(5, 3, **options)
        want = keras.ops.convert_to_numpy(theirs(x))
        ours = layers.SeparableConv1D(5, 3, **options)
        ours.build(x.shape)
        dk, pk, b = (keras.ops.convert_to_numpy(v) for v in theirs.weights)
        ours.set_weights([dk.transpose(1, 2, 0).reshape(-1, 1, 3), pk.transpose(2, 1, 0), b])
        np.testing.assert_allclose(ours(x).numpy(), want, rtol=1e-5, atol=1e-5)
