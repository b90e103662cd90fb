"""Keras 3 files for a subclassed Model (``model.save("m.keras")``) and Keras 3 weights files
(``save_weights("w.weights.h5")`` / ``load_weights``) for Sequential, functional and
subclassed models: minnet both ways, and Keras 3 as the oracle (each reads the other's file;
guides/serialization_and_saving.py)."""
import numpy as np
import pytest

import minnet as mn

h5py = pytest.importorskip("h5py")
X = np.linspace(-1, 1, 15).reshape(3, 5).astype("float32")


def subclassed_class(keras):
    @keras.saving.register_keras_serializable(package="guide_tests")
    class Blocks(keras.Model):
        def __init__(self, hidden=(4,), **kwargs):
            super().__init__(**kwargs)
            self.hidden = list(hidden)
            self.blocks = [keras.layers.Dense(u, activation="tanh") for u in hidden]
            self.out = keras.layers.Dense(2)        # Keras saves it under layers/dense_1
            self.scale = self.add_weight(shape=(2,), initializer="random_normal")

        def call(self, x):
            for block in self.blocks:
                x = block(x)
            return self.out(x) * self.scale

        def get_config(self):
            return {"hidden": self.hidden}

    return Blocks


def models(keras):
    inputs = keras.Input((5,))
    functional = keras.Model(inputs, keras.layers.Dense(2)(keras.layers.Dense(4)(inputs)))
    sequential = keras.Sequential([keras.Input((5,)), keras.layers.Dense(4), keras.layers.Dense(2)])
    subclassed = subclassed_class(keras)(hidden=(4, 3))
    subclassed(X)
    return {"functional": functional, "sequential": sequential, "subclassed": subclassed}


def _out(keras, model):
    return keras.ops.convert_to_numpy(model(X))


def test_subclassed_model_round_trips_through_a_keras_file(tmp_path):
    model = models(mn)["subclassed"]
    model.save(tmp_path / "m.keras")
    loaded = mn.models.load_model(tmp_path / "m.keras")
    assert type(loaded).__name__ == "Blocks" and loaded.hidden == [4, 3]
    np.testing.assert_allclose(_out(mn, loaded), _out(mn, model), rtol=1e-6)


@pytest.mark.parametrize("kind", ["functional", "sequential", "subclassed"])
def test_weights_h5_round_trip(kind, tmp_path):
    model, other = models(mn)[kind], models(mn)[kind]
    model.save_weights(tmp_path / "w.weights.h5")
    other.load_weights(tmp_path / "w.weights.h5")
    np.testing.assert_allclose(_out(mn, other), _out(mn, model), rtol=1e-6)
    with pytest.raises(ValueError, match="w.weights.h5"):
        mn.Sequential([mn.Input((5,)), mn.layers.Dense(3)]).load_weights(tmp_path / "w.weights.h5")


@pytest.mark.slow_once
@pytest.mark.parametrize("kind", ["functional", "sequential", "subclassed"])
def test_weights_h5_files_as_keras_both_ways(keras, kind, tmp_path):
    mine, theirs = models(mn)[kind], models(keras)[kind]
    theirs.save_weights(str(tmp_path / "keras.weights.h5"))
    mine.load_weights(tmp_path / "keras.weights.h5")
    np.testing.assert_allclose(_out(mn, mine), _out(keras, theirs), rtol=1e-5, atol=1e-6)
    fresh = models(mn)[kind]
    fresh.save_weights(tmp_path / "minnet.weights.h5")
    theirs.load_weights(str(tmp_path / "minnet.weights.h5"))
    np.testing.assert_allclose(_out(keras, theirs), _out(mn, fresh), rtol=1e-5, atol=1e-6)


@pytest.mark.slow_once
def test_subclassed_keras_files_as_keras_both_ways(keras, tmp_path):
    mine, theirs = models(mn)["subclassed"], models(keras)["subclassed"]
    mine.save(tmp_path / "minnet.keras")
    theirs.save(str(tmp_path / "keras.keras"))
    np.testing.assert_allclose(_out(mn, mn.models.load_model(tmp_path / "keras.keras")),
                               _out(keras, theirs), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_out(keras, keras.models.load_model(str(tmp_path / "minnet.keras"))),
                               _out(mn, mine), rtol=1e-5, atol=1e-6)
