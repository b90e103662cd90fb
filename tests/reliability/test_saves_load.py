"""A saved file always loads (#31 item 5): ``save`` records what the loader needs to rebuild
exactly the saved state (a Sequential whose layers were built one by one, each called on data,
the model never called: each layer's build), or refuses before writing and says how to build
the model."""
import json
import zipfile

import numpy as np
import pytest

import minnet as mn
from minnet.saving import ModelFileError

RNG = np.random.default_rng(0)


def _layer_by_layer(layers, x):
    """Call each layer on the previous one's output (the model is never called)."""
    out = x
    for layer in layers:
        out = layer(out)
    model = mn.Sequential(layers)
    assert not model.built and model.get_weights()
    return model, np.asarray(out.numpy())


CASES = {
    "dense": (lambda: [mn.layers.Dense(4, activation="relu"), mn.layers.Dense(2)],
              lambda: RNG.standard_normal((3, 5)).astype(np.float32)),
    "conv_bn_pool_dense": (lambda: [mn.layers.Conv2D(3, 3), mn.layers.BatchNormalization(),
                                    mn.layers.MaxPooling2D(), mn.layers.Flatten(), mn.layers.Dense(2)],
                           lambda: RNG.standard_normal((2, 8, 8, 2)).astype(np.float32)),
    "embedding_lstm": (lambda: [mn.layers.Embedding(10, 4), mn.layers.LSTM(3), mn.layers.Dense(1)],
                       lambda: RNG.integers(0, 10, (2, 5))),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_sequential_of_layers_built_one_by_one_saves_and_loads(tmp_path, case):
    make_layers, make_x = CASES[case]
    x = make_x()
    model, want = _layer_by_layer(make_layers(), x)
    path = tmp_path / "m.minnet"
    model.save(path)
    loaded = mn.load_model(path)
    assert len(loaded.get_weights()) == len(model.get_weights())
    for a, b in zip(model.get_weights(), loaded.get_weights()):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), want)
    np.testing.assert_array_equal(model.predict(x, verbose=0), want)


def _text_model():
    texts = np.array(["the cat sat", "a dog ran far", "the dog"])
    vectorizer = mn.layers.TextVectorization(max_tokens=12, output_sequence_length=4)
    vectorizer.adapt(texts)
    layers = [vectorizer, mn.layers.Embedding(12, 3), mn.layers.GlobalAveragePooling1D(),
              mn.layers.Dense(1)]
    return layers, texts


def test_a_sequential_starting_with_text_vectorization_saves_and_loads(tmp_path):
    layers, texts = _text_model()
    model, want = _layer_by_layer(layers, texts)
    model.save(tmp_path / "text.minnet")
    loaded = mn.load_model(tmp_path / "text.minnet")
    assert loaded.layers[0].get_vocabulary() == model.layers[0].get_vocabulary()
    out = texts
    for layer in loaded.layers:
        out = layer(out)
    np.testing.assert_array_equal(out.numpy(), want)


def test_an_unbuilt_text_model_saves_its_exact_state_and_strings_get_a_hint(tmp_path):
    layers, texts = _text_model()
    model = mn.Sequential(layers)
    model.save(tmp_path / "unbuilt.minnet")               # no weights yet: the same state loads
    loaded = mn.load_model(tmp_path / "unbuilt.minnet")
    assert not loaded.built and loaded.get_weights() == []
    assert loaded.layers[0].get_vocabulary() == model.layers[0].get_vocabulary()
    with pytest.raises(TypeError, match="apply the TextVectorization to the strings outside"):
        model(texts)
    model.compile("sgd", "mse")
    with pytest.raises(TypeError, match="apply the TextVectorization to the strings outside"):
        model.predict(texts, verbose=0)


def test_save_refuses_before_writing_a_state_the_file_cannot_rebuild(tmp_path):
    x = RNG.standard_normal((3, 5)).astype(np.float32)
    model, _ = _layer_by_layer([mn.layers.Dense(4), mn.layers.Dense(2)], x)
    model.layers[1].get_build_config = lambda: None       # a layer whose build is not recorded
    path = tmp_path / "m.minnet"
    path.write_bytes(b"previous file")
    with pytest.raises(ValueError) as info:
        model.save(path)
    message = str(info.value)
    assert "Build the model first" in message and "model.build(input_shape)" in message
    assert "1 (Dense)" in message and "Nothing was written" in message
    assert path.read_bytes() == b"previous file"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.minnet"]


def _rewrite_config(path, change):
    with zipfile.ZipFile(path) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    config = json.loads(members["config.json"])
    change(config["model"])
    members["config.json"] = json.dumps(config).encode()
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)


@pytest.mark.parametrize("entries, fragment", [
    ("short", "one per layer"),
    ([{"input_shape": [None, -1]}, None], "build config"),
    ([{"input_shape": [None, 2 ** 40]}, None], "build config"),
    ([{"input_shape": "x"}, None], "build config"),
    ([{"input_shape": [None, 5, True]}, None], "build config"),
    ([{"input_shape": [None, 5000]}, None], "MAX_PARAMETERS"),
])
def test_a_tampered_layer_build_config_is_a_model_file_error(tmp_path, monkeypatch, entries, fragment):
    monkeypatch.setattr(mn.saving, "MAX_PARAMETERS", 10_000)     # the budget, scaled down
    x = RNG.standard_normal((3, 5)).astype(np.float32)
    model, _ = _layer_by_layer([mn.layers.Dense(4), mn.layers.Dense(2)], x)
    path = tmp_path / "m.minnet"
    model.save(path)

    def change(entry):
        entry["layer_build_configs"] = entry["layer_build_configs"][:1] if entries == "short" else entries
    _rewrite_config(path, change)
    with pytest.raises(ModelFileError) as info:
        mn.load_model(path)
    assert str(path) in str(info.value) and fragment in str(info.value)


def test_a_layer_whose_build_takes_more_than_the_shape_saves_and_loads(tmp_path):
    """Keras's build-config contract in minnet's own file too: the layer's get_build_config
    is written with it and build_from_config rebuilds it (Sequential would call build(shape))."""
    import minnet as mn
    from minnet import layers

    class CustomBuild(layers.Layer):
        def __init__(self, units=3, **kwargs):
            super().__init__(**kwargs)
            self.units = units

        def build(self, input_shape, init):
            self.w = self.add_weight("w", (input_shape[-1], self.units), initializer=init)
            self.init = init

        def call(self, x):
            return x.matmul(self.w)

        def get_config(self):
            return {**super().get_config(), "units": self.units}

        def get_build_config(self):
            return {"input_shape": list(self._build_input_shape or (None, 4)), "init": self.init}

        def build_from_config(self, config):
            self.build(tuple(config["input_shape"]), config["init"])
            self._build_input_shape = tuple(config["input_shape"])
            self.built = True

    layer = CustomBuild()
    layer.build((None, 4), "ones")
    layer._build_input_shape = (None, 4)
    layer.built = True
    model = mn.Sequential([layer, layers.Dense(1)])
    x = np.ones((2, 4), "float32")
    want = model(x).numpy()
    model.save(tmp_path / "m.minnet")
    again = mn.models.load_model(tmp_path / "m.minnet", custom_objects={"CustomBuild": CustomBuild})
    assert again.layers[0].init == "ones"
    np.testing.assert_allclose(again(x).numpy(), want, rtol=1e-6)
