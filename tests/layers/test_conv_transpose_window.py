"""Conv2DTranspose keeps Keras's window of the full transposed convolution (issue 28, item 1).

Keras defines the output as its JAX form: dilate the input by the stride, pad it with
(left, right) zeros and correlate with the flipped kernel. The NumPy reference below is
written that way (not through the crop formula minnet uses), so the two derivations check
each other; the Keras oracle test copies Keras's weights across.
"""
import numpy as np
import pytest

import minnet as mn
from minnet import layers

RNG = np.random.default_rng(28)

CASES = [(k, s, op, padding) for k in (1, 2, 3, 4, 5) for s in (1, 2, 3)
         for op in (None, 0, 1, 2) for padding in ("same", "valid")
         if op is None or op < s]


def _jax_pads(k, s, padding, op):
    """Keras's (left, right) padding of the stride-dilated input (its JAX definition)."""
    if padding == "valid":
        return k - 1, k - 1 + (max(k, s) - k if op is None else op)
    total = s + k - 2 if op is None else k + k % 2 - 2 + op
    left = min(total // 2 + total % 2, k - 1)
    return left, total - left


def _reference(x, kernel, s, padding, op, bias):
    """x (N, H, W, C); kernel (C_in, F, kh, kw) minnet's layout; dilate, pad, correlate."""
    n, h, w, c = x.shape
    _, f, kh, kw = kernel.shape
    (lt, rt), (ll, rl) = _jax_pads(kh, s, padding, op), _jax_pads(kw, s, padding, op)
    dil = np.zeros((n, (h - 1) * s + 1, (w - 1) * s + 1, c))
    dil[:, ::s, ::s] = x
    dil = np.pad(dil, ((0, 0), (lt, rt), (ll, rl), (0, 0)))
    flipped = kernel[:, :, ::-1, ::-1]
    oh, ow = dil.shape[1] - kh + 1, dil.shape[2] - kw + 1
    out = np.zeros((n, oh, ow, f))
    for i in range(kh):
        for j in range(kw):
            out += np.einsum("nhwc,cf->nhwf", dil[:, i:i + oh, j:j + ow], flipped[:, :, i, j])
    return out + bias


@pytest.mark.parametrize("k, s, op, padding", CASES)
def test_window_matches_numpy_reference(k, s, op, padding):
    x = RNG.normal(size=(2, 4, 5, 2))
    layer = layers.Conv2DTranspose(3, k, strides=s, padding=padding, output_padding=op,
                                   dtype="float64")
    y = layer(x).numpy()
    kernel, bias = layer.get_weights()
    bias = RNG.normal(size=3)
    layer.set_weights([kernel, bias])
    y = layer(x).numpy()
    want = _reference(x, kernel, s, padding, op, bias)
    assert y.shape == want.shape == layer.compute_output_shape(x.shape)
    np.testing.assert_allclose(y, want, rtol=1e-12, atol=1e-12)
    first = layers.Conv2DTranspose(3, k, strides=s, padding=padding, output_padding=op,
                                   data_format="channels_first", dtype="float64")
    first.build((2, 2, 4, 5))
    first.set_weights([kernel, bias])
    np.testing.assert_allclose(first(x.transpose(0, 3, 1, 2)).numpy(), want.transpose(0, 3, 1, 2),
                               rtol=1e-12, atol=1e-12)


def test_gradcheck_same_with_output_padding():
    layer = layers.Conv2DTranspose(2, 3, strides=2, padding="same", output_padding=1,
                                   dtype="float64")
    x = mn.tensor(RNG.normal(size=(1, 3, 2, 2)), requires_grad=True)
    layer(x)
    assert mn.gradcheck(lambda a: layer(a), (x,))


@pytest.mark.slow_once
@pytest.mark.parametrize("dilation", [1, 2])
def test_window_matches_keras(keras, dilation):
    for k, s, op, padding in CASES:
        if dilation > 1 and s > 1:
            continue                   # Keras refuses strides > 1 with dilation > 1
        x = RNG.normal(size=(2, 4, 5, 2)).astype("float32")
        theirs = keras.layers.Conv2DTranspose(3, k, strides=s, padding=padding,
                                              output_padding=op, dilation_rate=dilation)
        want = np.asarray(theirs(x).detach().cpu())
        kernel, bias = theirs.get_weights()
        ours = layers.Conv2DTranspose(3, k, strides=s, padding=padding, output_padding=op,
                                      dilation_rate=dilation)
        ours.build(x.shape)
        ours.set_weights([np.transpose(kernel, (3, 2, 0, 1)), bias])
        got = ours(x).numpy()
        assert got.shape == want.shape, (k, s, op, padding)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, err_msg=str((k, s, op, padding)))
