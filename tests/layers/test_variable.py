"""``mn.Variable`` (Keras's ``keras.Variable``): made from a value or an initializer, tracked as a
weight of the layer it is assigned to, trained, saved; Keras 3 as the oracle for the tracking."""
import numpy as np
import pytest

import minnet as mn
from minnet import layers


def shifted_class(framework):
    """guides/customizing_saving_and_serialization.py's layer: a Dense plus a Variable."""

    class Shifted(framework.layers.Dense):
        def __init__(self, units, **kwargs):
            super().__init__(units, **kwargs)
            self.shift = framework.Variable(np.arange(units, dtype="float32"), name="shift")

        def call(self, inputs):
            return super().call(inputs) + self.shift

    return Shifted


Shifted = shifted_class(mn)


def test_from_a_value_or_an_initializer():
    v = mn.Variable(np.arange(3.0), name="v")      # a value keeps its dtype, as Keras
    assert isinstance(v, mn.Parameter) and v.dtype == np.float64 and v.name == "v"
    assert mn.Variable(0.5).dtype == np.float32 and mn.Variable("zeros", shape=2).dtype == np.float32
    np.testing.assert_array_equal(v.numpy(), [0, 1, 2])
    w = mn.Variable("ones", shape=(2, 2), trainable=False)
    assert not isinstance(w, mn.Parameter) and not w.requires_grad
    w.assign_add(np.ones((2, 2)))
    np.testing.assert_array_equal(w.numpy(), 2)
    counter = mn.Variable(0, dtype="int32", trainable=False)
    assert counter.dtype == np.int32
    with pytest.raises(ValueError, match="`shape`"):
        mn.Variable("zeros")
    with pytest.raises(ValueError, match="`shape`"):
        mn.Variable(np.zeros(3), shape=(4,))
    with pytest.raises(ValueError, match="`trainable`"):
        mn.Variable(0, dtype="int32")


def test_a_variable_assigned_to_a_layer_is_one_of_its_weights_and_trains():
    layer = Shifted(2)
    x = np.ones((4, 3), "float32")
    layer(x)
    assert layer.weights[0] is layer.shift and len(layer.trainable_weights) == 3
    assert len(layer.get_weights()) == 3
    model = mn.Sequential([mn.Input((3,)), layer])
    model.compile(optimizer="sgd", loss="mse")
    before = layer.shift.numpy().copy()
    model.fit(x, np.zeros((4, 2), "float32"), epochs=1, verbose=0)
    assert not np.allclose(layer.shift.numpy(), before)
    # a plain tensor kept as an attribute is not a weight
    layer.cache = mn.Tensor(np.zeros(2))
    assert len(layer.weights) == 3
    state = mn.Variable("zeros", shape=(2,), trainable=False)
    layer.state = state
    assert layer.non_trainable_weights == [state]


def test_tracked_as_keras_tracks_it(keras):
    mine, theirs = Shifted(2), shifted_class(keras)(2)
    mine(np.ones((1, 3), "float32"))
    theirs(np.ones((1, 3), "float32"))
    assert [w.name for w in mine.weights][0] == theirs.weights[0].name == "shift"
    assert tuple(mine.weights[0].shape) == tuple(theirs.weights[0].shape) == (2,)
    assert len(mine.weights) == len(theirs.weights) and \
        len(mine.trainable_weights) == len(theirs.trainable_weights)
