"""keras.saving's registration and (de)serialisation functions over minnet's one registry."""
import numpy as np
import pytest

import minnet as mn
from minnet import layers


@mn.saving.register_keras_serializable(package="contract_tests")
class Scale(layers.Layer):
    def __init__(self, factor=2.0, **kwargs):
        super().__init__(**kwargs)
        self.factor = factor

    def call(self, inputs):
        return inputs * self.factor

    def get_config(self):
        return {**super().get_config(), "factor": self.factor}


@mn.saving.register_keras_serializable(package="contract_tests", name="halve")
def halve_activation(x):
    return x * 0.5


class Unregistered(layers.Layer):
    def __init__(self, factor=1.0, **kwargs):
        super().__init__(**kwargs)
        self.factor = factor

    def call(self, inputs):
        return inputs + self.factor

    def get_config(self):
        return {**super().get_config(), "factor": self.factor}


def _model(layer):
    inp = mn.Input((3,))
    return mn.Model(inp, layers.Dense(2)(layer(inp)))


def test_registered_names():
    assert mn.saving.get_registered_name(Scale) == "contract_tests>Scale"
    assert mn.saving.get_registered_name(halve_activation) == "contract_tests>halve"
    assert mn.saving.get_registered_object("contract_tests>Scale") is Scale
    assert mn.saving.get_registered_object("nothing>here") is None
    assert mn.saving.get_custom_objects()["contract_tests>Scale"] is Scale
    assert mn.saving.get_registered_name(layers.Dense) == "Dense"


def test_a_saved_model_with_a_registered_custom_layer_loads(tmp_path):
    model = _model(Scale(3.0))
    path = tmp_path / "model.minnet"
    model.save(path)
    loaded = mn.saving.load_model(path)
    x = np.ones((2, 3), np.float32)
    np.testing.assert_allclose(loaded.predict(x), model.predict(x))
    assert isinstance(loaded.layers[1], Scale) and loaded.layers[1].factor == 3.0


def test_custom_object_scope_and_get_custom_objects_reach_the_loader(tmp_path):
    model = _model(Unregistered(0.5))
    path = tmp_path / "model.minnet"
    model.save(path)
    with pytest.raises(Exception, match="Unregistered"):
        mn.saving.load_model(path)
    with mn.saving.custom_object_scope({"Unregistered": Unregistered}):
        assert isinstance(mn.saving.load_model(path).layers[1], Unregistered)
    with mn.utils.custom_object_scope({"Unregistered": Unregistered}):
        assert isinstance(mn.saving.load_model(path).layers[1], Unregistered)
    with pytest.raises(Exception, match="Unregistered"):       # the scope ended
        mn.saving.load_model(path)
    mn.saving.get_custom_objects()["Unregistered"] = Unregistered
    try:
        assert isinstance(mn.saving.load_model(path).layers[1], Unregistered)
    finally:
        del mn.saving.get_custom_objects()["Unregistered"]


def test_serialize_and_deserialize_keras_object_round_trip():
    config = mn.saving.serialize_keras_object(Scale(4.0, name="s"))
    assert config["registered_name"] == "contract_tests>Scale" and config["class_name"] == "Scale"
    assert config["config"]["factor"] == 4.0
    rebuilt = mn.saving.deserialize_keras_object(config)
    assert isinstance(rebuilt, Scale) and rebuilt.factor == 4.0
    fn = mn.saving.serialize_keras_object(halve_activation)
    assert fn["class_name"] == "function"
    assert mn.saving.deserialize_keras_object(fn) is halve_activation
    adam = mn.saving.deserialize_keras_object(mn.saving.serialize_keras_object(
        mn.optimizers.Adam(0.003)))
    assert isinstance(adam, mn.optimizers.Adam) and adam.learning_rate == pytest.approx(0.003)
    loss = mn.saving.deserialize_keras_object(mn.saving.serialize_keras_object(
        mn.losses.Huber(delta=2.0)))
    assert isinstance(loss, mn.losses.Huber)
    plain = {"a": [1, 2.5, "x", None, True]}
    assert mn.saving.deserialize_keras_object(mn.saving.serialize_keras_object(plain)) == plain
    array = mn.saving.deserialize_keras_object(mn.saving.serialize_keras_object(np.eye(2)))
    np.testing.assert_array_equal(array, np.eye(2))
    with pytest.raises(ValueError, match="register"):
        mn.saving.deserialize_keras_object({"class_name": "Nope", "config": {}})
    with pytest.raises(TypeError, match="get_config"):
        mn.saving.serialize_keras_object(object())


def test_custom_objects_argument_of_deserialize():
    config = mn.saving.serialize_keras_object(Unregistered(2.0))
    rebuilt = mn.saving.deserialize_keras_object(config, custom_objects={"Unregistered": Unregistered})
    assert rebuilt.factor == 2.0


def test_registration_refuses_bad_names():
    with pytest.raises(ValueError, match="package"):
        mn.saving.register_keras_serializable(package="a>b")
    with pytest.raises(ValueError, match="get_config"):
        mn.saving.register_keras_serializable()(type("NoConfig", (), {}))


def test_the_same_names_in_keras(keras):
    @keras.saving.register_keras_serializable(package="contract_tests")
    class KScale(keras.layers.Layer):
        def get_config(self):
            return super().get_config()

    @mn.saving.register_keras_serializable(package="contract_tests")
    class KScale(layers.Layer):          # noqa: F811 - the same spelling under minnet
        pass

    ours = mn.saving.serialize_keras_object(KScale())
    theirs = keras.saving.serialize_keras_object(keras.saving.get_registered_object(
        "contract_tests>KScale")())
    assert ours["registered_name"] == theirs["registered_name"] == "contract_tests>KScale"
    assert ours["class_name"] == theirs["class_name"]


def _rmse_metric(y_true, y_pred):
    return mn.ops.sqrt(mn.ops.mean(mn.ops.square(y_true - y_pred)))


def _quartic_loss(y_true, y_pred):
    return mn.ops.mean(mn.ops.square(mn.ops.square(y_true - y_pred)), axis=-1)


@pytest.mark.parametrize("name", ["m.keras", "m.minnet"])
def test_plain_function_loss_and_metric_are_saved_by_name_as_keras(tmp_path, name):
    """compile(loss=fn, metrics=[fn]) saves each function by its name (Keras writes the
    function's name), so load_model(custom_objects={name: fn}) compiles it again; before,
    the metric was saved as a MeanMetricWrapper without its function and could not load."""
    model = mn.Sequential([mn.Input((6,)), mn.layers.Dense(2)])
    model.compile(optimizer="adam", loss=_quartic_loss, metrics=[_rmse_metric, "mae"])
    x = np.random.default_rng(0).standard_normal((16, 6)).astype(np.float32)
    y = np.random.default_rng(1).standard_normal((16, 2)).astype(np.float32)
    model.fit(x, y, epochs=1, verbose=0)
    model.save(tmp_path / name)
    custom = {"_quartic_loss": _quartic_loss, "_rmse_metric": _rmse_metric}
    loaded = mn.load_model(tmp_path / name, custom_objects=custom)
    assert loaded.evaluate(x, y, verbose=0, return_dict=True) == \
        model.evaluate(x, y, verbose=0, return_dict=True)
    with pytest.raises(ValueError, match="_quartic_loss"):
        mn.load_model(tmp_path / name)                # as Keras: the function is not found
    assert mn.load_model(tmp_path / name, compile=False).optimizer is None
