"""Keras's ``convolution_op(inputs, kernel)`` hook on Conv2D: a subclass that overrides it
gets the kernel in Keras's layout and its result is used (bias and activation added after),
as keras-io's examples/keras_recipes/subclassing_conv_layers.py does; Keras 3 as the oracle."""
import numpy as np
import pytest

import minnet as mn
from minnet import layers, ops

RNG = np.random.default_rng(11)


def standardized(framework, base):
    class Standardized(base):
        def convolution_op(self, inputs, kernel):
            axes = list(range(kernel.ndim - 1))
            mean, var = framework.ops.moments(kernel, axes=axes, keepdims=True)
            return framework.ops.conv(inputs, (kernel - mean) / framework.ops.sqrt(var + 1e-10),
                                      padding="valid", strides=self.strides,
                                      dilation_rate=self.dilation_rate, data_format=self.data_format)
    return Standardized


def _numpy_standardized_conv2d(x, kernel, bias):
    k = (kernel - kernel.mean(axis=(0, 1, 2), keepdims=True)) / np.sqrt(
        kernel.var(axis=(0, 1, 2), keepdims=True) + 1e-10)
    kh, kw = k.shape[:2]
    n, h, w, _ = x.shape
    out = np.zeros((n, h - kh + 1, w - kw + 1, k.shape[-1]))
    for i in range(out.shape[1]):
        for j in range(out.shape[2]):
            out[:, i, j] = np.einsum("nhwc,hwcf->nf", x[:, i:i + kh, j:j + kw], k)
    return out + bias


def test_an_overridden_convolution_op_gets_keras_layout_and_is_used():
    layer = standardized(mn, layers.Conv2D)(3, 3, dtype="float64")
    x = RNG.standard_normal((2, 5, 6, 2))
    y = layer(x).numpy()
    keras_kernel = layer.kernel.numpy().transpose(2, 3, 1, 0)
    np.testing.assert_allclose(y, _numpy_standardized_conv2d(x, keras_kernel, layer.bias.numpy()),
                               rtol=1e-10, atol=1e-12)
    plain = layers.Conv2D(3, 3, dtype="float64")
    plain.build(x.shape)
    plain.set_weights(layer.get_weights())
    assert not np.allclose(plain(x).numpy(), y)          # the override is not ignored


def test_gradcheck_through_an_overridden_convolution_op():
    layer = standardized(mn, layers.Conv2D)(2, 2, dtype="float64", activation="tanh")
    x = mn.tensor(RNG.standard_normal((1, 3, 3, 2)), requires_grad=True)
    layer(x)
    assert mn.gradcheck(lambda x, *w: layer(x), (x, *layer.parameters()))


@pytest.mark.parametrize("rank", [1, 2])
def test_as_keras_with_the_same_weights(keras, rank):
    # Keras 3.15's Conv2D calls convolution_op; its Conv1D does not (its call convolves with
    # ops.conv directly): minnet follows both
    mine = standardized(mn, layers.Conv1D if rank == 1 else layers.Conv2D)(4, 3, activation="relu")
    theirs = standardized(keras, keras.layers.Conv1D if rank == 1 else keras.layers.Conv2D)(
        4, 3, activation="relu")
    x = RNG.standard_normal((2, 6, 3) if rank == 1 else (2, 6, 5, 3)).astype("float32")
    theirs(x)
    mine(x)
    kernel, bias = [np.asarray(w) for w in theirs.get_weights()]
    bias = RNG.standard_normal(bias.shape).astype("float32")
    theirs.set_weights([kernel, bias])
    order = (2, 1, 0) if rank == 1 else (3, 2, 0, 1)
    mine.set_weights([kernel.transpose(order), bias])
    np.testing.assert_allclose(mine(x).numpy(), keras.ops.convert_to_numpy(theirs(x)),
                               rtol=1e-4, atol=1e-5)
    if rank == 1:       # the override is not used: a plain Conv1D gives the same
        plain = layers.Conv1D(4, 3, activation="relu")
        plain(x)
        plain.set_weights(mine.get_weights())
        np.testing.assert_allclose(plain(x).numpy(), mine(x).numpy(), rtol=1e-6)
