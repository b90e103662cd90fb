"""BackupAndRestore (#31 item 2): one atomic file, a crash at any write step resumes from a
state that is exactly one that was written, and a damaged or foreign backup is refused
(``BackupError``, naming the file and what is wrong) before anything is changed."""
import json
import os

import numpy as np
import pytest

import minnet as mn
from minnet import _random
from minnet.callbacks import BackupAndRestore, BackupError

X = np.random.default_rng(0).standard_normal((24, 4)).astype(np.float32)
Y = X[:, :2] * 2.0
EPOCHS = 4


def _model(optimizer="adam"):
    model = mn.Sequential([mn.Input((4,)), mn.layers.Dense(8, activation="relu"),
                           mn.layers.Dropout(0.3), mn.layers.Dense(2)])
    model.compile(optimizer=optimizer, loss="mse")
    return model


def _fit(model, backup_dir, epochs=EPOCHS, **kwargs):
    return model.fit(X, Y, epochs=epochs, batch_size=8, verbose=0,
                     callbacks=[BackupAndRestore(backup_dir, **kwargs)])


@pytest.fixture(scope="module")
def reference():
    mn.manual_seed(7)
    model = _model()
    model.fit(X, Y, epochs=EPOCHS, batch_size=8, verbose=0)
    return model.get_weights()


class _Crash(BaseException):
    """Stands for a kill: not an Exception, so nothing on the way catches it."""


# The write steps of one backup, each a place a kill can land. "write" crashes after half the
# archive's bytes reached the temporary file.
STEPS = ["open", "write", "fsync", "replace", "after_replace"]


def _crash_during_backup(monkeypatch, step, at_backup):
    """Patch the write steps so that backup number ``at_backup`` (0-based) dies at ``step``."""
    count = {"backups": 0}
    real_savez, real_fsync, real_replace = np.savez, os.fsync, os.replace
    real_open = open

    def crashing(name):
        return step == name and count["backups"] == at_backup

    def savez(file, **arrays):
        if crashing("open"):
            raise _Crash
        if crashing("write"):
            import io
            buffer = io.BytesIO()
            real_savez(buffer, **arrays)
            file.write(buffer.getvalue()[: len(buffer.getvalue()) // 2])
            file.flush()
            raise _Crash
        real_savez(file, **arrays)

    def fsync(fd):
        if crashing("fsync"):
            raise _Crash
        real_fsync(fd)

    def replace(src, dst):
        if crashing("replace"):
            raise _Crash
        real_replace(src, dst)
        count["backups"] += 1
        if step == "after_replace" and count["backups"] - 1 == at_backup:
            raise _Crash

    monkeypatch.setattr(np, "savez", savez)
    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    del real_open


@pytest.mark.parametrize("step", STEPS)
@pytest.mark.parametrize("at_backup", [0, 1, 2])
def test_a_kill_at_any_write_step_resumes_exactly(tmp_path, monkeypatch, reference, step, at_backup):
    backup_dir = tmp_path / "backup"
    mn.manual_seed(7)
    with monkeypatch.context() as patch:
        _crash_during_backup(patch, step, at_backup)
        with pytest.raises(_Crash):
            _fit(_model(), backup_dir)
    completed = at_backup + (1 if step == "after_replace" else 0)   # backups on disk
    leftovers = [name for name in os.listdir(backup_dir) if name != "backup.npz"]
    assert leftovers == []                     # no temporary file left behind
    # Another process with another random state; with no backup written, it starts over
    # (as the uninterrupted run did).
    mn.manual_seed(123 if completed else 7)
    resumed = _model()
    history = _fit(resumed, backup_dir)
    assert len(history.history["loss"]) == EPOCHS - completed
    for want, got in zip(reference, resumed.get_weights()):
        np.testing.assert_array_equal(got, want)


def test_resume_is_exact_and_the_backup_is_one_file(tmp_path, reference):
    class Kill(mn.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            if epoch == 1:
                raise KeyboardInterrupt

    mn.manual_seed(7)
    with pytest.raises(KeyboardInterrupt):
        _model().fit(X, Y, epochs=EPOCHS, batch_size=8, verbose=0,
                     callbacks=[BackupAndRestore(tmp_path), Kill()])
    assert sorted(os.listdir(tmp_path)) == ["backup.npz"]
    resumed = _model()
    assert len(_fit(resumed, tmp_path).history["loss"]) == 2
    for want, got in zip(reference, resumed.get_weights()):
        np.testing.assert_array_equal(got, want)


# ---- damaged and foreign backups ---------------------------------------------------------

@pytest.fixture
def backup(tmp_path):
    """A valid backup after 2 of 4 epochs: (path, arrays, metadata)."""
    mn.manual_seed(7)
    _fit(_model(), tmp_path, epochs=2, delete_checkpoint=False)
    path = tmp_path / "backup.npz"
    with np.load(path) as archive:
        arrays = {name: archive[name] for name in archive.files}
    meta = json.loads(arrays["metadata"].tobytes())
    assert meta["epoch"] == 2
    return path, arrays, meta


def _write(path, arrays, meta=None):
    arrays = dict(arrays)
    if meta is not None:
        text = meta if isinstance(meta, (str, bytes)) else json.dumps(meta)
        text = text.encode() if isinstance(text, str) else text
        arrays["metadata"] = np.frombuffer(text, dtype=np.uint8)
    os.remove(path)
    np.savez(path, **arrays)


def _meta_with(meta, **changes):
    meta = json.loads(json.dumps(meta))
    for key, value in changes.items():
        if value is _DELETE:
            del meta[key]
        else:
            meta[key] = value
    return meta


_DELETE = object()


def _weights_mutation(name):
    def mutate(arrays):
        arrays = dict(arrays)
        if name == "foreign_key":
            arrays["weight_99999"] = np.zeros(3, np.float32)
        elif name == "evil_key":
            arrays["evil"] = np.zeros(1)
        elif name == "missing_key":
            del arrays["weight_00001"]
        elif name == "wrong_shape":
            arrays["weight_00000"] = np.zeros((5, 8), np.float32)
        elif name == "wrong_dtype":
            arrays["weight_00000"] = arrays["weight_00000"].astype(np.float64)
        elif name == "optimizer_shape":
            key = next(k for k in arrays if k.startswith("optimizer/state.0."))
            arrays[key] = np.zeros((7,), np.float32)
        return arrays
    return mutate


CASES = {
    # name: (how the file is damaged, a fragment of the message)
    "empty_file": ("bytes", b"", "cannot be read"),
    "random_bytes": ("bytes", bytes(range(256)) * 8, "cannot be read"),
    "truncated_half": ("truncate", 0.5, "cannot be read"),
    "truncated_99": ("truncate", 0.99, "cannot be read"),
    "no_metadata": ("drop_meta", None, "no 'metadata'"),
    "empty_metadata": ("meta", "", "not JSON"),
    "partial_metadata": ("meta", '{"format": 1, "epoch": 2', "not JSON"),
    "metadata_a_list": ("meta", "[]", "JSON object"),
    "metadata_lacks_epoch": ("meta_change", {"epoch": _DELETE}, "lacks ['epoch']"),
    "metadata_lacks_random_state": ("meta_change", {"random_state": _DELETE}, "lacks ['random_state']"),
    "other_format": ("meta_change", {"format": 99}, "format 99"),
    "epoch_1e9": ("meta_change", {"epoch": 10 ** 9}, "epoch=1000000000"),
    "epoch_minus_3": ("meta_change", {"epoch": -3}, "epoch=-3"),
    "epoch_fraction": ("meta_change", {"epoch": 1.5}, "epoch=1.5"),
    "epoch_bool": ("meta_change", {"epoch": True}, "epoch=True"),
    "epoch_string": ("meta_change", {"epoch": "2"}, "epoch='2'"),
    "random_state_empty": ("meta_change", {"random_state": {}}, "random state needs"),
    "random_state_seed": ("meta_change", {"random_state": {"seed": -1, "offset": 0, "generator": {}}},
                          "random state needs a non-negative int 'seed'"),
    "random_state_generator": ("random_generator", None, "invalid 'generator'"),
    "n_weights_wrong": ("meta_change", {"n_weights": 2}, "do not match its metadata"),
    "n_weights_negative": ("meta_change", {"n_weights": -1}, "n_weights"),
    "foreign_weight_key": ("weights", "foreign_key", "unknown: ['weight_99999']"),
    "evil_key": ("weights", "evil_key", "unknown: ['evil']"),
    "missing_weight_key": ("weights", "missing_key", "missing: ['weight_00001']"),
    "wrong_shape": ("weights", "wrong_shape", "weight 0 is float32[5, 8]"),
    "wrong_dtype": ("weights", "wrong_dtype", "weight 0 is float64"),
    "other_optimizer": ("meta_change", {"optimizer": "SGD"}, "optimizer state is 'SGD'"),
    "optimizer_state_shape": ("weights", "optimizer_shape", "optimizer state does not fit"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_damaged_backup_is_refused_naming_the_file_and_nothing_changes(backup, case):
    path, arrays, meta = backup
    kind, value, fragment = CASES[case]
    if kind == "bytes":
        path.write_bytes(value)
    elif kind == "truncate":
        data = path.read_bytes()
        path.write_bytes(data[: int(len(data) * value)])
    elif kind == "drop_meta":
        _write(path, {k: v for k, v in arrays.items() if k != "metadata"})
    elif kind == "meta":
        _write(path, arrays, value)
    elif kind == "meta_change":
        _write(path, arrays, _meta_with(meta, **value))
    elif kind == "random_generator":
        state = dict(meta["random_state"], generator={"bit_generator": "PCG64", "state": "x"})
        _write(path, arrays, _meta_with(meta, random_state=state))
    elif kind == "weights":
        _write(path, _weights_mutation(value)(arrays))
    mn.manual_seed(5)
    model = _model()
    model.build((None, 4))
    before = model.get_weights()
    random_before = _random.get_state()
    with pytest.raises(BackupError) as info:
        _fit(model, path.parent)
    message = str(info.value)
    assert str(path) in message and fragment in message, message
    assert isinstance(info.value, ValueError)
    for a, b in zip(before, model.get_weights()):
        np.testing.assert_array_equal(a, b)
    assert _random.get_state()["offset"] == random_before["offset"]
    assert model.optimizer.iterations == 0


def test_a_backup_of_another_architecture_is_refused(backup):
    path = backup[0]
    model = mn.Sequential([mn.Input((4,)), mn.layers.Dense(3), mn.layers.Dense(2)])
    model.compile("adam", "mse")
    with pytest.raises(BackupError, match="weight 0 is"):
        _fit(model, path.parent)


def test_the_three_file_backup_of_an_older_minnet_is_named(tmp_path):
    (tmp_path / "training_metadata.json").write_text('{"epoch": 3}')
    with pytest.raises(BackupError, match="training_metadata.json.*older minnet"):
        _fit(_model(), tmp_path)


def test_a_stored_epoch_equal_to_epochs_trains_nothing_more(backup):
    path = backup[0]
    model = _model()
    history = _fit(model, path.parent, epochs=2)
    assert history.history == {} or len(history.history.get("loss", [])) == 0
