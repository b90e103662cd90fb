"""Bounded, validated loading and safe file names (issues #17 and #13 item 7).

Every failure to load a file is a ``ModelFileError`` (a ValueError) naming the path and
the part; sizes are checked before anything is allocated; each config value goes through
its constructor's checks. File names: long names, bytes and PathLike paths, leftovers of
killed saves, foreign suffixes and foreign (Keras) files. Format version 1 translation.
"""
import io
import json
import os
import signal
import subprocess
import sys
import time
import tracemalloc
import zipfile

import numpy as np
import pytest

import minnet as mn
from minnet import config as mn_config
from minnet import layers, losses, optimizers, saving
from minnet.saving import ModelFileError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _model(seed=0):
    mn.manual_seed(seed)
    model = mn.Sequential([layers.Input((6,)), layers.Dense(8), layers.BatchNormalization(),
                           layers.ReLU(), layers.Dropout(0.2), layers.Dense(3)])
    model.compile(optimizer=optimizers.Adam(learning_rate=1e-2),
                  loss=losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    return model


def _data(n=16):
    rng = np.random.default_rng(0)
    return rng.standard_normal((n, 6)).astype(np.float32), rng.integers(0, 3, n)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    path = tmp_path_factory.mktemp("loading") / "net.minnet"
    model = _model()
    x, y = _data()
    model.fit(x, y, epochs=1, batch_size=8, verbose=0)
    model.save(path)
    return {"path": path, "bytes": path.read_bytes(), "x": x,
            "pred": model.predict(x, verbose=0)}


def _rewrite(data, replace):
    source = zipfile.ZipFile(io.BytesIO(data))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for info in source.infolist():
            content = replace(info.filename, source.read(info.filename))
            if content is not None:
                archive.writestr(info.filename, content)
    return buffer.getvalue()


def _edit(edit):
    def replace(name, content):
        if name != "config.json":
            return content
        config = json.loads(content)
        edit(config)
        return json.dumps(config).encode()
    return replace


def _raw_config(text):
    return lambda name, content: text.encode() if name == "config.json" else content


def _npy(array):
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def _layer(config, i):
    return config["model"]["config"]["layers"][i]["config"]


def _set(path_keys, value):
    def edit(config):
        target = config
        for key in path_keys[:-1]:
            target = target[key]
        target[path_keys[-1]] = value
    return _edit(edit)


# Structure-aware tampering: the variants of #17 (first ten escaped as non-file errors),
# then one per kind of config field and weight header.
TAMPER = {
    "weights entry shape is an int": _edit(lambda c: c["weights"][0].update(shape=5)),
    "weights entry without shape": _edit(lambda c: c["weights"][0].pop("shape")),
    "unknown keyword argument": _edit(lambda c: _layer(c, 1).update(evil=1)),
    "units=1e11": _edit(lambda c: _layer(c, 1).update(units=10**11)),
    "units float 1e11": _edit(lambda c: _layer(c, 1).update(units=1e11)),
    "deeply nested json": _raw_config("[" * 100000 + "]" * 100000),
    "nested json below the recursion limit": _edit(
        lambda c: c.update(extra=json.loads("[" * 500 + "]" * 500))),
    "config is a list": _raw_config("[1, 2]"),
    "unknown optimizer": _edit(lambda c: c["compile"]["optimizer"].update(class_name="Evil")),
    "optimizer beta_1=1.0 in config": _edit(
        lambda c: c["compile"]["optimizer"]["config"].update(beta_1=1.0)),
    "optimizer config not a dict": _edit(lambda c: c["compile"].update(optimizer=7)),
    "layers not a list": _edit(lambda c: c["model"]["config"].update(layers=3)),
    "layer entry not a dict": _edit(lambda c: c["model"]["config"]["layers"].__setitem__(1, 5)),
    "layer config not a dict": _edit(
        lambda c: c["model"]["config"]["layers"][1].update(config=[1])),
    "layer class not a string": _edit(
        lambda c: c["model"]["config"]["layers"][1].update(class_name=["Dense"])),
    "units negative": _edit(lambda c: _layer(c, 1).update(units=-3)),
    "units a string": _edit(lambda c: _layer(c, 1).update(units="8")),
    "dropout rate 7": _edit(lambda c: _layer(c, 4).update(rate=7)),
    "activation unknown": _edit(lambda c: _layer(c, 1).update(activation="evil")),
    "input shape huge": _edit(lambda c: _layer(c, 0).update(shape=[10**9])),
    "build_input_shape huge": _set(["model", "config", "build_input_shape"], [None, 10**9]),
    "build_input_shape a string": _set(["model", "config", "build_input_shape"], "x"),
    "model config not a dict": _set(["model", "config"], 5),
    "weights not a list": _set(["weights"], {"a": 1}),
    "optimizer_state not a list": _set(["optimizer_state"], 5),
    "optimizer_state key with a slash": _set(["optimizer_state"], ["../../x"]),
    "compile is a string": _set(["compile"], "adam"),
    "metrics not a list": _edit(lambda c: c["compile"].update(metrics=5)),
    "loss unknown": _edit(lambda c: c["compile"].update(loss="evil")),
    "random_state generator garbage": _edit(
        lambda c: c["random_state"].update(generator={"state": 5})),
    "weight header shape differs from config": lambda n, c: _npy(np.zeros((7, 7), np.float32))
    if n == "weights/00000.npy" else c,
    "weight shape consistent but not the architecture's": lambda n, c: (
        _npy(np.zeros((7, 7), np.float32)) if n == "weights/00000.npy" else
        json.dumps({**json.loads(c), "weights": [{**w, "shape": [7, 7]} if i == 0 else w
                                                  for i, w in enumerate(json.loads(c)["weights"])]}
                   ).encode() if n == "config.json" else c),
    "weight header of object dtype": lambda n, c: c.replace(b"'descr': '<f4'", b"'descr': '|O'")
    if n == "weights/00000.npy" else c,
    "weight header larger shape than data": lambda n, c: c.replace(b"(8, 6)", b"(8000, 6000)")
    if n == "weights/00000.npy" else c,
    "weight header not a dict": lambda n, c: c[:10] + b"[1, 2, 3]".ljust(len(c[10:c.index(b"\n") + 1]) - 1) + b"\n" + c[c.index(b"\n") + 1:]
    if n == "weights/00000.npy" else c,
    "optimizer state wrong shape": lambda n, c: _npy(np.zeros(3, np.float32))
    if n.startswith("optimizer/state.0.exp_avg.") else c,
}


@pytest.mark.parametrize("name", list(TAMPER))
def test_tampered_file_raises_model_file_error_naming_path(saved, tmp_path, name):
    path = tmp_path / "bad.minnet"
    path.write_bytes(_rewrite(saved["bytes"], TAMPER[name]))
    with pytest.raises(ModelFileError) as info:
        mn.load_model(path)
    assert str(path) in str(info.value)


def test_unknown_keyword_names_the_layer(saved, tmp_path):
    path = tmp_path / "bad.minnet"
    path.write_bytes(_rewrite(saved["bytes"], TAMPER["unknown keyword argument"]))
    with pytest.raises(ModelFileError, match=r"layer 1 \(Dense\).*evil"):
        mn.load_model(path)


def test_absurd_units_refused_before_allocating(saved, tmp_path):
    path = tmp_path / "bad.minnet"
    path.write_bytes(_rewrite(saved["bytes"], _edit(lambda c: _layer(c, 1).update(units=10**7))))
    tracemalloc.start()
    try:
        with pytest.raises(ModelFileError, match="MAX_PARAMETERS|MAX_DIMENSION|shape"):
            mn.load_model(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 32 * 2**20, f"{peak} bytes allocated before refusing"


def test_optimizer_hyperparameter_from_state_is_validated(saved, tmp_path):
    """#17: beta_1=1.0 read from the optimizer state loaded, then ZeroDivisionError in fit."""
    def replace(name, content):
        if name == "optimizer/beta_1.npy":
            return _npy(np.array(1.0))
        return content
    path = tmp_path / "bad.minnet"
    data = _rewrite(saved["bytes"], replace)
    assert "optimizer/beta_1.npy" in zipfile.ZipFile(io.BytesIO(data)).namelist()
    path.write_bytes(data)
    with pytest.raises(ModelFileError, match="beta_1"):
        mn.load_model(path)


def _inflating_entry(data, n_bytes):
    """``data`` with weight 0 replaced by a zero array of ``n_bytes`` (stored ~1000x smaller)."""
    source = zipfile.ZipFile(io.BytesIO(data))
    buffer = io.BytesIO()
    n = n_bytes // 4
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as out:
        for info in source.infolist():
            content = source.read(info.filename)
            if info.filename == "config.json":
                config = json.loads(content)
                config["weights"][0]["shape"] = [n]
                out.writestr("config.json", json.dumps(config))
            elif info.filename == "weights/00000.npy":
                header = io.BytesIO()
                np.lib.format.write_array_header_1_0(
                    header, {"descr": "<f4", "fortran_order": False, "shape": (n,)})
                with out.open(info.filename, "w", force_zip64=True) as member:
                    member.write(header.getvalue())
                    chunk = bytes(2**22)
                    for _ in range(n_bytes // len(chunk)):
                        member.write(chunk)
            else:
                out.writestr(info.filename, content)
    return buffer.getvalue()


def test_inflating_entry_refused_before_allocating(saved, tmp_path):
    """#17: a small file whose weight entry inflates to 1 GiB used 2 GiB before refusing.

    Reproduced at 256 MiB (the refusal reads only the zip directory and the .npy header).
    """
    data = _inflating_entry(saved["bytes"], 256 * 2**20)
    assert len(data) < 2 * 2**20
    path = tmp_path / "bomb.minnet"
    path.write_bytes(data)
    tracemalloc.start()
    try:
        with pytest.raises(ModelFileError, match="bomb.minnet.*weights/00000.npy"):
            mn.load_model(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 * 2**20


def test_total_budget_is_checked_before_reading(saved, tmp_path, monkeypatch):
    path = tmp_path / "net.minnet"
    path.write_bytes(saved["bytes"])
    monkeypatch.setattr(saving, "MAX_LOAD_BYTES", 64)
    with pytest.raises(ModelFileError, match="MAX_LOAD_BYTES"):
        mn.load_model(path)
    with pytest.raises(ModelFileError, match="MAX_LOAD_BYTES"):
        _model().load_weights(path)


def test_clean_file_still_round_trips(saved):
    model = mn.load_model(saved["path"])
    np.testing.assert_array_equal(model.predict(saved["x"], verbose=0), saved["pred"])


# ---------------------------------------------------------------------------------------
# File names
# ---------------------------------------------------------------------------------------

def test_long_file_name_saves_and_loads(tmp_path):
    name = "m" * 243 + ".minnet"
    assert len(name) == 250
    model = _model()
    x, _ = _data()
    model.save(tmp_path / name)
    assert sorted(os.listdir(tmp_path)) == [name]
    np.testing.assert_array_equal(mn.load_model(tmp_path / name).predict(x, verbose=0),
                                  model.predict(x, verbose=0))
    weights = "w" * 246 + ".npz"
    model.save_weights(tmp_path / weights)
    _model(seed=1).load_weights(tmp_path / weights)


@pytest.mark.parametrize("kind", ["str", "bytes", "pathlike"])
def test_path_types(tmp_path, kind):
    target = tmp_path / "net.minnet"
    path = {"str": str(target), "bytes": os.fsencode(str(target)), "pathlike": target}[kind]
    model = _model()
    model.save(path)
    mn.load_model(path)
    weights = {"str": str(target) + ".npz", "bytes": os.fsencode(str(target) + ".npz"),
               "pathlike": tmp_path / "net.minnet.npz"}[kind]
    model.save_weights(weights)
    model.load_weights(weights)


@pytest.mark.parametrize("bad", [3, None, 1.5, ["a"]])
def test_path_of_wrong_type(bad):
    with pytest.raises(TypeError, match="filepath"):
        _model().save(bad)
    with pytest.raises(TypeError, match="filepath"):
        mn.load_model(bad)


def test_killed_save_leftovers_are_cleaned_at_next_save(tmp_path):
    target = tmp_path / "net.minnet"
    script = (
        "import sys, time\n"
        "import minnet as mn\n"
        "from minnet import layers, saving\n"
        "original = saving.array_bytes\n"
        "def slow(array):\n"
        "    print('writing', flush=True)\n"
        "    time.sleep(60)\n"
        "saving.array_bytes = slow\n"
        "model = mn.Sequential([layers.Input((3,)), layers.Dense(2)])\n"
        "model.save(sys.argv[1])\n")
    process = subprocess.Popen([sys.executable, "-c", script, str(target)], cwd=ROOT,
                               stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout.readline().strip() == "writing"
        left = os.listdir(tmp_path)
        assert len(left) == 1 and left[0].endswith(".tmp") and len(left[0]) < 64
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    assert os.listdir(tmp_path) == left, "the killed save should leave its temp file"
    # A leftover of another target in the same directory is not touched.
    other = tmp_path / (saving.archive._temp_tag(str(tmp_path / "other.minnet")) + "1-abc.tmp")
    other.write_bytes(b"x")
    _model().save(target)
    assert sorted(os.listdir(tmp_path)) == sorted(["net.minnet", other.name])


def test_temp_file_of_a_live_save_is_kept(tmp_path):
    target = tmp_path / "net.minnet"
    live = tmp_path / (saving.archive._temp_tag(str(target)) + f"{os.getppid()}-abc.tmp")
    live.write_bytes(b"x")
    _model().save(target)
    assert live.exists()


def test_keras_suffix_writes_a_keras_file(tmp_path):
    # "name.keras" is a real Keras 3 file (tests/saving/test_keras_files.py); minnet reads it back.
    pytest.importorskip("h5py")
    model = _model()
    model.save(tmp_path / "m.keras")
    assert "model.weights.h5" in zipfile.ZipFile(tmp_path / "m.keras").namelist()
    restored = mn.load_model(tmp_path / "m.keras")
    for a, b in zip(model.get_weights(), restored.get_weights()):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", ["m.h5", "M.HDF5", "w.weights.h5"])
def test_foreign_suffix_refused(tmp_path, name):
    model = _model()
    with pytest.raises(ValueError, match="minnet does not write.*\\.minnet|minnet does not write"):
        model.save(tmp_path / name)
    if not name.endswith(".weights.h5"):      # Keras 3's weights file is written (test_keras_weights_h5)
        with pytest.raises(ValueError, match="minnet does not write"):
            model.save_weights(tmp_path / name)
    assert os.listdir(tmp_path) == []


def test_keras_h5_file_is_named(tmp_path):
    path = tmp_path / "model.h5"
    path.write_bytes(b"\x89HDF\r\n\x1a\n" + bytes(504))
    for load in (mn.load_model, _model().load_weights):
        with pytest.raises(ModelFileError, match="HDF5.*it reads the `.minnet`"):
            load(path)


def test_keras_zip_file_is_named(tmp_path):
    path = tmp_path / "model.keras"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("metadata.json", json.dumps({"keras_version": "3.5.0"}))
        archive.writestr("config.json", json.dumps(
            {"module": "keras", "class_name": "Sequential", "config": {}}))
        archive.writestr("model.weights.h5", b"\x89HDF\r\n\x1a\n" + bytes(100))
    pytest.importorskip("h5py")
    with pytest.raises(ModelFileError, match="Keras 3 `.keras` file, but a damaged one"):
        mn.load_model(path)
    # Without the weights entry, the config alone still says what it is.
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("config.json", json.dumps(
            {"module": "keras", "class_name": "Sequential", "config": {}}))
    with pytest.raises(ModelFileError, match="Keras 3"):
        mn.load_model(path)


# ---------------------------------------------------------------------------------------
# Format version 1: old meanings translated
# ---------------------------------------------------------------------------------------

def _strip_data_format(entries):
    for entry in entries:
        entry["config"].pop("data_format", None)


def test_version_1_file_loads_with_old_meanings(tmp_path):
    """Version 1 = channels_first image layers and PyTorch's BatchNormalization momentum."""
    previous = mn_config.image_data_format()
    mn_config.set_image_data_format("channels_first")
    try:
        mn.manual_seed(0)
        model = mn.Sequential([layers.Input((1, 6, 6)), layers.Conv2D(2, 3),
                               layers.BatchNormalization(axis=1), layers.ReLU(),
                               layers.MaxPooling2D(2), layers.Flatten(), layers.Dense(3)])
        x = np.random.default_rng(0).standard_normal((4, 1, 6, 6)).astype(np.float32)
        expected = model.predict(x, verbose=0)
        model.save(tmp_path / "new.minnet")
    finally:
        mn_config.set_image_data_format(previous)

    def to_version_1(config):
        config["format_version"] = 1
        entries = config["model"]["config"]["layers"]
        _strip_data_format(entries)
        for entry in entries:
            if entry["class_name"] == "BatchNormalization":
                entry["config"]["momentum"] = 0.25      # PyTorch's meaning in version 1
    data = _rewrite((tmp_path / "new.minnet").read_bytes(), _edit(to_version_1))
    (tmp_path / "old.minnet").write_bytes(data)
    loaded = mn.load_model(tmp_path / "old.minnet")
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), expected)
    # The momentum keeps its old meaning: moving = 0.75 * moving + 0.25 * batch.
    bn = loaded.layers[1]
    before = bn.get_weights()[2].copy()
    h = loaded.layers[0](mn.Tensor(x))
    bn(h, training=True)
    batch_mean = h.numpy().mean(axis=(0, 2, 3))
    np.testing.assert_allclose(bn.get_weights()[2], 0.75 * before + 0.25 * batch_mean, rtol=1e-5,
                               atol=1e-6)
    # A re-save writes the current version.
    loaded.save(tmp_path / "resaved.minnet")
    with zipfile.ZipFile(tmp_path / "resaved.minnet") as archive:
        assert json.loads(archive.read("config.json"))["format_version"] == saving.FORMAT_VERSION


def test_format_version_is_2():
    assert saving.FORMAT_VERSION == 2


def test_limits_do_not_refuse_ordinary_models(tmp_path):
    """A CIFAR-sized CNN and a wide MLP load: the estimates refuse only absurd sizes."""
    previous = mn_config.image_data_format()
    mn_config.set_image_data_format("channels_first")
    try:
        mn.manual_seed(0)
        cnn = mn.Sequential([layers.Input((3, 32, 32)), layers.Conv2D(32, 3, padding="same"),
                             layers.BatchNormalization(axis=1), layers.ReLU(),
                             layers.MaxPooling2D(2), layers.Conv2D(64, 5, padding="same"),
                             layers.GlobalAveragePooling2D(), layers.Dense(10)])
        mlp = mn.Sequential([layers.Input((3072,)), layers.Dense(1024), layers.Dense(1024),
                             layers.Dense(10)])
        for name, model in (("cnn.minnet", cnn), ("mlp.minnet", mlp)):
            model.save(tmp_path / name)
            loaded = mn.load_model(tmp_path / name)
            for a, b in zip(loaded.get_weights(), model.get_weights()):
                np.testing.assert_array_equal(a, b)
    finally:
        mn_config.set_image_data_format(previous)
