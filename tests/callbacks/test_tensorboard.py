"""TensorBoard: event files written by minnet, read back by the tensorboard package's own reader."""
import glob
import os
import struct

import numpy as np
import pytest

import minnet as mn
from minnet import callbacks
from minnet.callbacks import _event_file


def test_crc32c_known_vectors():
    # RFC 3720 (iSCSI) test vectors for CRC-32C.
    assert _event_file.crc32c(b"123456789") == 0xE3069283
    assert _event_file.crc32c(bytes(32)) == 0x8A9136AA
    assert _event_file.crc32c(b"\xff" * 32) == 0x62A8AB43
    assert _event_file.crc32c(bytes(range(32))) == 0x46DD794E


def test_masked_crc_matches_tensorboard(tmp_path):
    crc_module = pytest.importorskip("tensorboard.compat.tensorflow_stub.pywrap_tensorflow")
    for data in (b"", b"a", b"123456789", bytes(range(256)) * 3):
        assert _event_file.masked_crc32c(data) == crc_module.masked_crc32c(data)


def test_record_framing():
    data = b"hello event"
    record = _event_file.frame_record(data)
    (length,) = struct.unpack("<Q", record[:8])
    assert length == len(data)
    assert struct.unpack("<I", record[8:12])[0] == _event_file.masked_crc32c(record[:8])
    assert record[12:12 + length] == data
    assert struct.unpack("<I", record[12 + length:])[0] == _event_file.masked_crc32c(data)


def _read(folder):
    """{tag: [(step, value)]} for scalars and {tag: [(step, histo proto)]} read by tensorboard."""
    loader_module = pytest.importorskip("tensorboard.backend.event_processing.event_file_loader")
    files = sorted(glob.glob(os.path.join(folder, "events.out.tfevents.*")))
    assert files, f"no event file in {folder}"
    scalars, histos, texts, versions = {}, {}, {}, []
    for path in files:
        for event in loader_module.RawEventFileLoader(path).Load():
            from tensorboard.compat.proto import event_pb2
            parsed = event_pb2.Event.FromString(event)
            if parsed.file_version:
                versions.append(parsed.file_version)
            for value in parsed.summary.value:
                kind = value.WhichOneof("value")
                if kind == "simple_value":
                    scalars.setdefault(value.tag, []).append((parsed.step, value.simple_value))
                elif kind == "histo":
                    histos.setdefault(value.tag, []).append((parsed.step, value.histo))
                elif kind == "tensor":
                    texts.setdefault(value.tag, []).append(
                        (parsed.step, value.tensor.string_val[0].decode(),
                         value.metadata.plugin_data.plugin_name))
    return scalars, histos, texts, versions


def _model():
    mn.manual_seed(0)
    model = mn.models.Sequential([mn.layers.Input((4,)), mn.layers.Dense(8, activation="relu"),
                                  mn.layers.Dense(3, activation="softmax")])
    model.compile(optimizer=mn.optimizers.SGD(0.05), loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    return model


def _data():
    rng = np.random.default_rng(0)
    return rng.normal(size=(40, 4)).astype("float32"), rng.integers(0, 3, size=40)


def test_epoch_scalars_read_back_by_tensorboard(tmp_path):
    model = _model()
    x, y = _data()
    history = model.fit(x, y, epochs=3, batch_size=10, validation_split=0.25, verbose=0,
                        callbacks=[callbacks.TensorBoard(log_dir=tmp_path / "logs")])
    train, _, texts, versions = _read(tmp_path / "logs" / "train")
    assert versions == ["brain.Event:2"]
    for key in ("loss", "accuracy"):
        assert train[f"epoch_{key}"] == [(e, pytest.approx(v, rel=1e-6))
                                         for e, v in enumerate(history.history[key])]
    assert train["epoch_learning_rate"] == [(e, pytest.approx(0.05)) for e in range(3)]
    assert not any(tag.startswith("batch_") for tag in train)  # update_freq="epoch"
    # write_graph=True: the model config as the Keras graph plugin's "keras" tensor.
    step, text, plugin = texts["keras"][0]
    assert plugin == "graph_keras_model" and '"Sequential"' in text

    val, _, _, _ = _read(tmp_path / "logs" / "validation")
    for key in ("loss", "accuracy"):
        assert val[f"epoch_{key}"] == [(e, pytest.approx(v, rel=1e-6))
                                       for e, v in enumerate(history.history[f"val_{key}"])]
    # evaluation_*_vs_iterations at the optimizer's step count (3 batches of 10 per epoch).
    assert [s for s, _ in val["evaluation_loss_vs_iterations"]] == [3, 6, 9]
    assert [v for _, v in val["evaluation_loss_vs_iterations"]] == pytest.approx(
        history.history["val_loss"], rel=1e-6)


def test_event_accumulator_sees_the_scalars(tmp_path):
    accumulator_module = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
    model = _model()
    x, y = _data()
    history = model.fit(x, y, epochs=2, batch_size=20, verbose=0,
                        callbacks=[callbacks.TensorBoard(log_dir=str(tmp_path))])
    acc = accumulator_module.EventAccumulator(str(tmp_path / "train"))
    acc.Reload()
    assert "epoch_loss" in acc.Tags()["scalars"]
    events = acc.Scalars("epoch_loss")
    assert [e.step for e in events] == [0, 1]
    assert [e.value for e in events] == pytest.approx(history.history["loss"], rel=1e-6)
    assert not (tmp_path / "validation").exists()  # no validation data: no folder


@pytest.mark.parametrize("update_freq, expected_steps", [("batch", [1, 2, 3, 4, 5, 6]),
                                                         (2, [2, 4, 6])])
def test_batch_scalars(tmp_path, update_freq, expected_steps):
    model = _model()
    x, y = _data()
    seen = []

    class Record(callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            seen.append(float(logs["loss"]))

    model.fit(x, y, epochs=2, batch_size=14, verbose=0,
              callbacks=[callbacks.TensorBoard(tmp_path, update_freq=update_freq,
                                               write_steps_per_second=True), Record()])
    train, _, _, _ = _read(tmp_path / "train")
    assert [s for s, _ in train["batch_loss"]] == expected_steps
    assert [v for _, v in train["batch_loss"]] == pytest.approx(
        [seen[s - 1] for s in expected_steps], rel=1e-6)
    assert [s for s, _ in train["batch_steps_per_second"]] == expected_steps
    assert all(v > 0 for _, v in train["epoch_steps_per_second"])


def test_weight_histograms(tmp_path):
    model = _model()
    x, y = _data()
    model.fit(x, y, epochs=3, batch_size=20, verbose=0,
              callbacks=[callbacks.TensorBoard(tmp_path, histogram_freq=2)])
    _, histos, _, _ = _read(tmp_path / "train")
    dense = model.layers[0]
    kernel = dense.weights[0]
    tag = f"{dense.name}/kernel/histogram"     # Keras's tag: the weight's path
    assert tag in histos and len(histos) == 4   # two Dense layers, kernel and bias each
    assert [s for s, _ in histos[tag]] == [0, 2]
    histo = histos[tag][-1][1]
    values = np.asarray(kernel.data, dtype=np.float64).ravel()
    assert histo.num == values.size
    assert histo.min == values.min() and histo.max == values.max()
    assert histo.sum == pytest.approx(values.sum()) and histo.sum_squares == pytest.approx(values @ values)
    assert sum(histo.bucket) == values.size and list(histo.bucket_limit)[-1] == values.max()
    counts, _ = np.histogram(values, bins=30)
    assert list(histo.bucket) == counts.tolist()


def test_histogram_of_a_constant():
    limits, counts = _event_file.histogram_buckets(np.full(5, 2.0))
    assert limits.tolist() == [2.0] and counts.tolist() == [5.0]


def test_arguments_are_checked(tmp_path):
    with pytest.raises(ValueError, match="update_freq"):
        callbacks.TensorBoard(tmp_path, update_freq="sometimes")
    with pytest.raises(ValueError, match="profile_batch"):
        callbacks.TensorBoard(tmp_path, profile_batch=2)
    with pytest.warns(UserWarning, match="embeddings_freq=1.*projector"):
        callbacks.TensorBoard(tmp_path, embeddings_freq=1)
    # Keras's default arguments construct as in Keras.
    board = callbacks.TensorBoard()
    assert board.log_dir == "logs" and board.update_freq == "epoch"


def test_same_tags_as_keras(tmp_path, keras):
    # Keras needs TensorFlow's summary writer; compare against the tags its code would write.
    import inspect
    source = inspect.getsource(inspect.getmodule(keras.callbacks.TensorBoard))
    for fragment in ('"train"', '"validation"', 'f"epoch_{name}"', 'f"batch_{name}"',
                     'f"evaluation_{name}_vs_iterations"', 'logs["learning_rate"]',
                     'f"{weight_name}/histogram"'):
        assert fragment in source, fragment


def test_weight_images(tmp_path):
    accumulator_module = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
    PIL = pytest.importorskip("PIL.Image")
    import io
    mn.manual_seed(0)
    model = mn.models.Sequential([mn.layers.Input((6, 2)), mn.layers.Conv1D(4, 3, name="conv"),
                                  mn.layers.Flatten(), mn.layers.Dense(3, name="out")])
    model.compile("sgd", "mse")
    x = np.random.default_rng(0).normal(size=(8, 6, 2)).astype("float32")
    model.fit(x, np.zeros((8, 3), "float32"), epochs=1, verbose=0,
              callbacks=[callbacks.TensorBoard(tmp_path, histogram_freq=1, write_images=True)])
    acc = accumulator_module.EventAccumulator(str(tmp_path / "train"))
    acc.Reload()
    tags = set(acc.Tags()["images"])
    assert tags == {"conv/kernel/image/0", "conv/kernel/image/1", "conv/kernel/image/2",
                    "conv/bias/image", "out/kernel/image", "out/bias/image"}

    def pixels(tag):
        event = acc.Images(tag)[0]
        return np.asarray(PIL.open(io.BytesIO(event.encoded_image_string)))

    kernel = np.asarray(model.get_layer("out").weights[0].data)     # (3, 8): drawn as is
    expected = (np.clip(kernel, 0, 1) * 255 + 0.5).astype(np.uint8)
    np.testing.assert_array_equal(pixels("out/kernel/image"), expected)
    conv = np.asarray(model.get_layer("conv").weights[0].data)      # (out, in, k) -> (k, in)
    np.testing.assert_array_equal(pixels("conv/kernel/image/1"),
                                  (np.clip(conv[1].T, 0, 1) * 255 + 0.5).astype(np.uint8))
    assert acc.Images("out/bias/image")[0].height == 3 and acc.Images("out/bias/image")[0].width == 1


def test_png_encoder_round_trip():
    PIL = pytest.importorskip("PIL.Image")
    import io
    rng = np.random.default_rng(0)
    for shape in [(5, 7), (4, 3, 3), (2, 6, 4)]:
        pixels = rng.integers(0, 256, size=shape, dtype=np.uint8)
        decoded = np.asarray(PIL.open(io.BytesIO(_event_file.encode_png(pixels))))
        np.testing.assert_array_equal(decoded, pixels)
