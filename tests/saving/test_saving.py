import json
import os
import zipfile

import numpy as np
import pytest

import minnet as mn
from minnet import _random, layers, losses, optimizers, saving
from minnet.datasets import make_blobs


def _data(n=64):
    return make_blobs(n, n_features=6, centers=3, cluster_std=1.5, seed=0)


def _model(seed=0, compiled=True):
    mn.manual_seed(seed)
    model = mn.Sequential([
        layers.Input((6,)),
        layers.Dense(12),
        layers.BatchNormalization(),
        layers.ReLU(),
        layers.Dropout(0.25),
        layers.Dense(3),
    ])
    if compiled:
        model.compile(optimizer=optimizers.Adam(learning_rate=0.01),
                      loss=losses.SparseCategoricalCrossentropy(from_logits=True),
                      metrics=["accuracy"])
    return model


def _assert_weights_equal(a, b):
    assert len(a) == len(b)
    for wa, wb in zip(a, b):
        assert wa.dtype == wb.dtype
        np.testing.assert_array_equal(wa, wb)


def _assert_state_equal(a, b):
    assert sorted(a) == sorted(b)
    for key in a:
        np.testing.assert_array_equal(np.asarray(a[key]), np.asarray(b[key]), err_msg=key)


def test_save_load_round_trip(tmp_path):
    x, y = _data()
    model = _model()
    model.fit(x, y, batch_size=16, epochs=2, verbose=0)
    path = tmp_path / "net.minnet"
    model.save(path)
    assert zipfile.is_zipfile(path)
    loaded = mn.load_model(path)
    assert [type(l) for l in loaded.layers] == [type(l) for l in model.layers]
    assert [l.name for l in loaded.layers] == [l.name for l in model.layers]
    _assert_weights_equal(model.get_weights(), loaded.get_weights())   # BN moving stats included
    np.testing.assert_array_equal(model.predict(x), loaded.predict(x))
    assert type(loaded.optimizer) is optimizers.Adam
    assert loaded.optimizer.learning_rate == pytest.approx(0.01)
    assert isinstance(loaded.loss, losses.SparseCategoricalCrossentropy)
    assert loaded.metrics_names == ["loss", "accuracy"]
    _assert_state_equal(model.optimizer.state_dict(), loaded.optimizer.state_dict())
    assert loaded.optimizer.iterations == model.optimizer.iterations == 8
    assert loaded.evaluate(x, y, verbose=0) == model.evaluate(x, y, verbose=0)


def test_config_is_json_and_records_versions(tmp_path):
    model = _model()
    path = tmp_path / "net.minnet"
    model.save(path)
    with zipfile.ZipFile(path) as archive:
        config = json.loads(archive.read("config.json"))
        names = archive.namelist()
    assert config["format"] == "minnet-model" and config["format_version"] == saving.FORMAT_VERSION
    assert config["minnet_version"] == mn.__version__
    assert config["compile"]["metrics"] == ["accuracy"]
    assert len([n for n in names if n.startswith("weights/")]) == len(model.weights)
    assert config["model"]["config"]["layers"][0]["class_name"] == "Input"


def test_string_compile_identifiers_round_trip(tmp_path):
    mn.manual_seed(0)
    model = mn.Sequential([layers.Dense(2)])
    model.compile(optimizer="sgd", loss="mse", metrics=["mae"])
    x = np.ones((4, 3), np.float32)
    model.fit(x, np.zeros((4, 2), np.float32), verbose=0)
    model.save(tmp_path / "m.minnet")
    loaded = mn.load_model(tmp_path / "m.minnet")
    assert isinstance(loaded.optimizer, optimizers.SGD) and isinstance(loaded.loss, losses.MeanSquaredError)
    assert loaded.metrics_names == ["loss", "mae"]
    np.testing.assert_array_equal(loaded.predict(x), model.predict(x))


def test_uncompiled_and_unbuilt_models(tmp_path):
    model = _model(compiled=False)
    model.save(tmp_path / "a.minnet")
    loaded = mn.load_model(tmp_path / "a.minnet")
    assert loaded.optimizer is None and loaded.built
    empty = mn.Sequential([layers.Dense(3)])
    empty.save(tmp_path / "b.minnet")
    loaded = mn.load_model(tmp_path / "b.minnet")
    assert not loaded.built and len(loaded.layers) == 1


def test_resume_equals_uninterrupted_training(tmp_path):
    x, y = _data(80)
    # uninterrupted: 4 epochs, shuffling from minnet's generator, dropout active
    model = _model(seed=3)
    model.fit(x, y, batch_size=16, epochs=4, verbose=0)
    straight = model.get_weights()
    # interrupted: 2 epochs, save, disturb the RNG, load, 2 more epochs
    model = _model(seed=3)
    model.fit(x, y, batch_size=16, epochs=2, verbose=0)
    model.save(tmp_path / "ckpt.minnet")
    del model
    mn.manual_seed(999)
    _random.generator().random(10)
    resumed = mn.load_model(tmp_path / "ckpt.minnet")
    history = resumed.fit(x, y, batch_size=16, epochs=4, initial_epoch=2, verbose=0)
    assert history.epoch == [2, 3]
    _assert_weights_equal(straight, resumed.get_weights())


def test_resume_with_fit_seed(tmp_path):
    x, y = _data(48)
    model = _model(seed=1)
    model.fit(x, y, batch_size=8, epochs=3, verbose=0, seed=5)
    straight = model.get_weights()
    model = _model(seed=1)
    model.fit(x, y, batch_size=8, epochs=1, verbose=0, seed=5)
    model.save(tmp_path / "c.minnet")
    resumed = mn.load_model(tmp_path / "c.minnet")
    resumed.fit(x, y, batch_size=8, epochs=3, initial_epoch=1, verbose=0, seed=5)
    _assert_weights_equal(straight, resumed.get_weights())


def test_interrupted_save_keeps_previous_file(tmp_path, monkeypatch):
    x, y = _data()
    model = _model()
    path = tmp_path / "net.minnet"
    model.save(path)
    original = path.read_bytes()
    model.fit(x, y, epochs=1, verbose=0)
    calls = {"n": 0}
    real_write = saving.write_member

    def failing_write(archive, name, data):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt("simulated crash during save")
        real_write(archive, name, data)

    monkeypatch.setattr(saving, "write_member", failing_write)
    with pytest.raises(KeyboardInterrupt):
        model.save(path)
    assert path.read_bytes() == original
    assert os.listdir(tmp_path) == ["net.minnet"]          # no temporary file left behind
    monkeypatch.setattr(saving, "write_member", real_write)
    mn.load_model(path)                                     # the old file still loads


def test_save_to_missing_directory(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        _model().save(tmp_path / "nope" / "net.minnet")


def test_load_errors_name_the_path(tmp_path):
    model = _model()
    good = tmp_path / "good.minnet"
    model.save(good)
    data = good.read_bytes()

    missing = tmp_path / "missing.minnet"
    with pytest.raises(FileNotFoundError, match="missing.minnet"):
        mn.load_model(missing)

    truncated = tmp_path / "truncated.minnet"
    truncated.write_bytes(data[: len(data) // 2])
    with pytest.raises(saving.ModelFileError, match="truncated.minnet"):
        mn.load_model(truncated)

    corrupted = tmp_path / "corrupted.minnet"
    with zipfile.ZipFile(good) as archive:
        info = archive.getinfo("weights/00000.npy")
    blob = bytearray(data)
    start = info.header_offset + 30 + len(info.filename) + len(info.extra) + 5
    for i in range(start, start + 20):
        blob[i] ^= 0xFF
    corrupted.write_bytes(bytes(blob))
    with pytest.raises(ValueError, match="corrupted.minnet"):
        mn.load_model(corrupted)

    text = tmp_path / "notes.txt"
    text.write_text("hello")
    with pytest.raises(saving.ModelFileError, match="not a minnet model file"):
        mn.load_model(text)

    foreign = tmp_path / "foreign.zip"
    with zipfile.ZipFile(foreign, "w") as archive:
        archive.writestr("config.json", json.dumps({"format": "keras"}))
    with pytest.raises(saving.ModelFileError, match="foreign.zip"):
        mn.load_model(foreign)

    other = tmp_path / "other.npz"
    np.savez(other, a=np.zeros(3))
    with pytest.raises(saving.ModelFileError, match="no config.json"):
        mn.load_model(other)

    future = tmp_path / "future.minnet"
    with zipfile.ZipFile(good) as src, zipfile.ZipFile(future, "w") as dst:
        for item in src.infolist():
            content = src.read(item.filename)
            if item.filename == "config.json":
                config = json.loads(content)
                config["format_version"] = 99
                content = json.dumps(config).encode()
            dst.writestr(item.filename, content)
    with pytest.raises(saving.ModelFileError, match="version 99"):
        mn.load_model(future)

    with pytest.raises(IsADirectoryError):
        mn.load_model(tmp_path)


def test_pickled_member_is_refused(tmp_path):
    model = _model()
    good = tmp_path / "good.minnet"
    model.save(good)
    evil = tmp_path / "evil.minnet"
    import io
    buffer = io.BytesIO()
    np.save(buffer, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with zipfile.ZipFile(good) as src, zipfile.ZipFile(evil, "w") as dst:
        for item in src.infolist():
            content = src.read(item.filename)
            if item.filename == "weights/00000.npy":
                content = buffer.getvalue()
            dst.writestr(item.filename, content)
    with pytest.raises(saving.ModelFileError, match="evil.minnet"):
        mn.load_model(evil)


def test_save_and_load_weights(tmp_path):
    x, y = _data()
    model = _model()
    model.fit(x, y, epochs=1, verbose=0)
    path = tmp_path / "w.npz"
    model.save_weights(path)
    with np.load(path, allow_pickle=False) as archive:        # a plain npz
        assert "weight_00000" in archive.files
    other = _model(seed=9)
    other.load_weights(path)
    _assert_weights_equal(model.get_weights(), other.get_weights())
    # an unbuilt model of the same architecture is built from the recorded input shape
    unbuilt = mn.Sequential([layers.Dense(12), layers.BatchNormalization(), layers.ReLU(),
                             layers.Dropout(0.25), layers.Dense(3)])
    unbuilt.load_weights(path)
    np.testing.assert_array_equal(unbuilt.predict(x), model.predict(x))
    # the weights inside a full model file load too
    model.save(tmp_path / "full.minnet")
    third = _model(seed=4)
    third.load_weights(tmp_path / "full.minnet")
    _assert_weights_equal(model.get_weights(), third.get_weights())


def test_load_weights_validation(tmp_path):
    model = _model()
    path = tmp_path / "w.npz"
    model.save_weights(path)
    wrong = mn.Sequential([layers.Input((6,)), layers.Dense(5), layers.Dense(3)])
    with pytest.raises(saving.ModelFileError, match="holds 8 weight arrays but model .* has 4"):
        wrong.load_weights(path)
    wrong_shape = mn.Sequential([layers.Input((6,)), layers.Dense(13), layers.BatchNormalization(),
                                 layers.ReLU(), layers.Dense(3)])
    with pytest.raises(saving.ModelFileError, match="shape"):
        wrong_shape.load_weights(path)
    with pytest.raises(FileNotFoundError, match="nothing.npz"):
        model.load_weights(tmp_path / "nothing.npz")
    plain = tmp_path / "plain.npz"
    np.savez(plain, a=np.zeros(3))
    with pytest.raises(saving.ModelFileError, match="not a minnet weights file"):
        model.load_weights(plain)
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"\x00" * 100)
    with pytest.raises(saving.ModelFileError, match="bad.npz"):
        model.load_weights(bad)


def test_custom_layer_round_trip(tmp_path):
    @mn.register_layer("test_saving>Scale")
    class Scale(layers.Layer):
        def __init__(self, init=2.0, **kwargs):
            super().__init__(**kwargs)
            self.init = float(init)

        def build(self, input_shape):
            self.alpha = self.add_weight("alpha", (input_shape[-1],),
                                         initializer=lambda shape, dtype: np.full(shape, self.init, dtype))

        def call(self, x, training=False):
            return x * self.alpha

        def get_config(self):
            return {**super().get_config(), "init": self.init}

    mn.manual_seed(0)
    model = mn.Sequential([layers.Input((4,)), layers.Dense(3), Scale(3.0)])
    model.compile(optimizer="adam", loss="mse")
    x = np.random.default_rng(0).normal(size=(8, 4)).astype(np.float32)
    model.fit(x, np.ones((8, 3), np.float32), epochs=2, batch_size=4, verbose=0)
    model.save(tmp_path / "custom.minnet")
    loaded = mn.load_model(tmp_path / "custom.minnet")
    assert type(loaded.layers[-1]).__name__ == "Scale"
    np.testing.assert_array_equal(loaded.predict(x), model.predict(x))


@pytest.mark.parametrize("limit,value,message", [
    ("MAX_CONFIG_BYTES", 64, "MAX_CONFIG_BYTES"),          # read in saving.archive
    ("MAX_CONFIG_DEPTH", 2, "nested more than 2"),         # read in saving.archive
    ("MAX_DIMENSION", 4, "MAX_DIMENSION"),                 # read in saving.model_config
    ("MAX_PARAMETERS", 10, "more than 10"),                # read in saving.model_config
])
def test_limits_set_on_the_package_are_enforced_by_its_modules(tmp_path, monkeypatch, limit, value,
                                                               message):
    """The limits are minnet.saving's settings; the modules that check them read them there."""
    path = tmp_path / "net.minnet"
    _model().save(path)
    mn.load_model(path)
    monkeypatch.setattr(saving, limit, value)
    with pytest.raises(saving.ModelFileError, match=message):
        mn.load_model(path)
