"""A user's own layer (``add_weight`` in ``build``, sublayers as attributes, in lists, a
Sequential inside) in a Keras 3 ``.keras`` file: its weights where Keras's saving puts them
(own ``vars``, then each sublayer under its attribute; a list's items by snake-case class
name), both ways; Keras 3 as the oracle (guides/serialization_and_saving.py's pattern)."""
import io
import zipfile

import numpy as np
import pytest

import minnet as mn

h5py = pytest.importorskip("h5py")


def block_class(keras):
    ops, layers = keras.ops, keras.layers

    @keras.saving.register_keras_serializable(package="guide_tests")
    class Block(layers.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.d = layers.Dense(3)
            self.ffn = keras.Sequential([layers.Dense(4), layers.Dense(3)])
            self.blocks = [layers.Dense(3), layers.Dense(3)]
            self.norm = layers.LayerNormalization()

        def build(self, input_shape):
            self.scale = self.add_weight(shape=(3,), initializer="random_normal")

        def call(self, x):
            y = self.norm(self.ffn(self.d(x)) * self.scale)
            for block in self.blocks:
                y = block(y)
            return ops.relu(y) + 0.1 * y

    return Block


X = np.linspace(-1, 1, 8).reshape(2, 4).astype("float32")


def _saved_model(keras, path):
    inputs = keras.Input((4,))
    model = keras.Model(inputs, block_class(keras)()(inputs))
    model.save(str(path))
    return keras.ops.convert_to_numpy(model(X))


def _datasets(path):
    with zipfile.ZipFile(path) as archive, h5py.File(io.BytesIO(archive.read("model.weights.h5"))) as h5:
        found = []
        h5.visititems(lambda name, obj: found.append(name) if isinstance(obj, h5py.Dataset) else None)
    return sorted(found)


def test_a_custom_layer_with_weights_and_sublayers_round_trips(tmp_path):
    expected = _saved_model(mn, tmp_path / "m.keras")
    assert _datasets(tmp_path / "m.keras") == sorted(
        [f"layers/block/{p}/vars/{i}" for p in ("d", "blocks/dense", "blocks/dense_1", "norm",
                                                "ffn/layers/dense", "ffn/layers/dense_1") for i in (0, 1)]
        + ["layers/block/vars/0"])
    loaded = mn.models.load_model(tmp_path / "m.keras")
    np.testing.assert_allclose(loaded(X).numpy(), expected, rtol=1e-6)


@pytest.mark.slow_once
def test_the_same_file_as_keras_both_ways(keras, tmp_path):
    theirs = _saved_model(keras, tmp_path / "keras.keras")
    mine = _saved_model(mn, tmp_path / "minnet.keras")
    assert _datasets(tmp_path / "keras.keras") == _datasets(tmp_path / "minnet.keras")
    np.testing.assert_allclose(mn.models.load_model(tmp_path / "keras.keras")(X).numpy(), theirs,
                               rtol=1e-5, atol=1e-6)
    reloaded = keras.models.load_model(str(tmp_path / "minnet.keras"))
    np.testing.assert_allclose(keras.ops.convert_to_numpy(reloaded(X)), mine, rtol=1e-5, atol=1e-6)


def test_a_registered_layer_is_written_with_keras_class_and_registered_names(tmp_path):
    _saved_model(mn, tmp_path / "m.keras")
    import json
    with zipfile.ZipFile(tmp_path / "m.keras") as archive:
        entry = json.loads(archive.read("config.json"))["config"]["layers"][1]
    assert entry["class_name"] == "Block" and entry["registered_name"] == "guide_tests>Block"


def initialized_class(keras):
    """guides/customizing_saving_and_serialization.py's pattern: build takes an initializer."""

    @keras.saving.register_keras_serializable(package="guide_tests")
    class Initialized(keras.layers.Layer):
        def __init__(self, units=3, **kwargs):
            super().__init__(**kwargs)
            self.units = units

        def build(self, input_shape, layer_init):
            super().build(input_shape)
            self._input_shape = input_shape
            self.w = self.add_weight(shape=(input_shape[-1], self.units), initializer=layer_init)
            self.layer_init = layer_init

        def call(self, x):
            return keras.ops.matmul(x, self.w)

        def get_config(self):
            return dict(units=self.units, **super().get_config())

        def get_build_config(self):
            return {"layer_init": self.layer_init, "input_shape": self._input_shape}

        def build_from_config(self, config):
            self.build(config["input_shape"], config["layer_init"])

    return Initialized


def _built_model(keras, path):
    layer = initialized_class(keras)()
    layer.build(input_shape=(4,), layer_init="random_normal")
    model = keras.Sequential([layer, keras.layers.Dense(1)])
    out = keras.ops.convert_to_numpy(model(X))
    model.save(str(path))
    return out


def test_get_build_config_and_build_from_config_are_used_on_saving_and_loading(tmp_path):
    expected = _built_model(mn, tmp_path / "m.keras")
    layer = mn.layers.Dense(2)
    assert layer.get_build_config() is None
    layer.build_from_config({"input_shape": [None, 5]})
    assert layer.built and layer.get_build_config() == {"input_shape": [None, 5]}
    loaded = mn.models.load_model(tmp_path / "m.keras")
    assert loaded.layers[0].layer_init == "random_normal"
    np.testing.assert_allclose(loaded(X).numpy(), expected, rtol=1e-6)


@pytest.mark.slow_once
def test_build_config_files_as_keras_both_ways(keras, tmp_path):
    theirs = _built_model(keras, tmp_path / "keras.keras")
    mine = _built_model(mn, tmp_path / "minnet.keras")
    np.testing.assert_allclose(mn.models.load_model(tmp_path / "keras.keras")(X).numpy(), theirs,
                               rtol=1e-5, atol=1e-6)
    reloaded = keras.models.load_model(str(tmp_path / "minnet.keras"))
    assert reloaded.layers[0].layer_init == "random_normal"
    np.testing.assert_allclose(keras.ops.convert_to_numpy(reloaded(X)), mine, rtol=1e-5, atol=1e-6)
