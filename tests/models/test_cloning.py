"""clone_model and model_from_json for each model kind."""
import numpy as np
import pytest

import minnet as mn
from minnet import layers


def test_clone_sequential_has_new_weights_and_same_architecture():
    model = mn.Sequential([mn.Input((4,)), layers.Dense(3, activation="relu"), layers.Dense(2)])
    clone = mn.models.clone_model(model)
    assert isinstance(clone, mn.Sequential) and clone.built
    assert [type(layer) for layer in clone.layers] == [type(layer) for layer in model.layers]
    assert [w.shape for w in clone.weights] == [w.shape for w in model.weights]
    assert not any(a is b for a, b in zip(clone.weights, model.weights))
    clone.set_weights(model.get_weights())
    x = np.ones((2, 4), np.float32)
    np.testing.assert_array_equal(clone.predict(x), model.predict(x))
    again = mn.models.model_from_json(model.to_json())
    assert isinstance(again, mn.Sequential) and len(again.weights) == 4


def test_clone_with_a_clone_function():
    inp = mn.Input((4,))
    model = mn.Model(inp, layers.Dense(2, name="head")(layers.Dense(3, name="body")(inp)))
    clone = mn.models.clone_model(model, clone_function=lambda layer: layers.Dense(layer.units, use_bias=False))
    assert len(clone.weights) == 2
    assert clone.output_shape == (None, 2)
    with pytest.raises(TypeError, match="clone_function"):
        mn.models.clone_model(model, clone_function=3)
    with pytest.raises(TypeError, match="`model`"):
        mn.models.clone_model(layers.Dense(2))


def test_model_from_json_rejects_garbage():
    with pytest.raises(ValueError, match="json_string"):
        mn.models.model_from_json("{not json")
    with pytest.raises(ValueError, match="class_name"):
        mn.models.model_from_json("[1, 2]")
