"""InputSpec (issue 28): a custom layer's spec is checked on every call, eager and
functional, with Keras's rules and messages; against Keras 3 on the same cases."""
import numpy as np
import pytest

import minnet as mn
from minnet import layers


class Scale(layers.Layer):
    def __init__(self, spec):
        super().__init__()
        self.input_spec = spec

    def call(self, x):
        return x * 2.0


CASES = [(dict(ndim=2), (4, 3), True), (dict(ndim=2), (4, 3, 1), False),
         (dict(min_ndim=3), (4, 3), False), (dict(max_ndim=2), (1, 2, 3), False),
         (dict(axes={-1: 3}), (5, 3), True), (dict(axes={-1: 3}), (5, 4), False),
         (dict(shape=(None, 3)), (7, 3), True), (dict(shape=(None, 3)), (7, 2), False),
         (dict(dtype="float32"), (2, 2), True), (dict(dtype="float64"), (2, 2), False)]


@pytest.mark.parametrize("kwargs, shape, ok", CASES, ids=str)
def test_eager_and_functional_calls_check_the_spec(kwargs, shape, ok):
    layer = Scale(layers.InputSpec(**kwargs))
    x = np.ones(shape, "float32")
    if ok:
        np.testing.assert_array_equal(layer(x).numpy(), 2 * x)
        np.testing.assert_array_equal(layer(x).numpy(), 2 * x)      # the built fast path too
        assert layer(mn.Input(shape[1:])).shape[1:] == shape[1:]
    else:
        with pytest.raises(ValueError, match="is incompatible with the layer"):
            layer(x)
        with pytest.raises(ValueError, match="is incompatible with the layer"):
            layer(mn.tensor(x))
        with pytest.raises(ValueError, match="incompatible"):
            layer(mn.Input(shape[1:]))


def test_spec_object():
    spec = layers.InputSpec(ndim=3, axes={2: 4})
    assert repr(spec) == "InputSpec(ndim=3, axes={2: 4})"
    assert layers.InputSpec.from_config(spec.get_config()).axes == {2: 4}
    with pytest.raises(TypeError, match="`axes`"):
        layers.InputSpec(axes={"a": 1})
    with pytest.raises(ValueError, match="greater than the maximum"):
        layers.InputSpec(ndim=2, axes={3: 1})
    with pytest.raises(ValueError, match="expects 2 input"):
        Scale([layers.InputSpec(ndim=2), layers.InputSpec(ndim=2)])(np.ones((1, 2), "float32"))


@pytest.mark.slow_once
@pytest.mark.parametrize("kwargs, shape, ok", CASES, ids=str)
def test_same_verdicts_as_keras(keras, kwargs, shape, ok):
    class KScale(keras.layers.Layer):
        def __init__(self):
            super().__init__()
            self.input_spec = keras.layers.InputSpec(**kwargs)

        def call(self, x):
            return x * 2.0

    try:
        KScale()(np.ones(shape, "float32"))
        keras_ok = True
    except ValueError:
        keras_ok = False
    assert keras_ok == ok
