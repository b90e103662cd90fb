"""utils: get_file (against a local HTTP server), image helpers, Progbar, timeseries and text data sets."""
import functools
import hashlib
import http.server
import io
import os
import tarfile
import threading
import zipfile

import numpy as np
import pytest

import minnet as mn
from minnet import utils


# ---- get_file -----------------------------------------------------------------------------
@pytest.fixture
def server(tmp_path):
    """A static HTTP server on 127.0.0.1 serving tmp_path/served; counts GET requests."""
    root = tmp_path / "served"
    root.mkdir()
    hits = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def do_GET(self):
            hits.append(self.path)
            return super().do_GET()

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                            functools.partial(Handler, directory=str(root)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield root, f"http://127.0.0.1:{httpd.server_address[1]}", hits
    httpd.shutdown()
    httpd.server_close()


def test_get_file_downloads_verifies_and_caches(server, tmp_path):
    root, url, hits = server
    payload = b"a,b\n1,2\n" * 100
    (root / "data.csv").write_bytes(payload)
    digest = hashlib.sha256(payload).hexdigest()
    cache = tmp_path / "cache"
    path = utils.get_file(origin=f"{url}/data.csv", file_hash=digest, cache_dir=cache)
    assert path == os.path.join(cache, "datasets", "data.csv")
    assert open(path, "rb").read() == payload
    assert len(hits) == 1
    again = utils.get_file(origin=f"{url}/data.csv", file_hash=digest, cache_dir=cache)
    assert again == path and len(hits) == 1            # cached: no second request
    utils.get_file("data.csv", f"{url}/data.csv", cache_dir=cache, force_download=True)
    assert len(hits) == 2
    assert not [n for n in os.listdir(cache / "datasets") if n.endswith(".tmp")]


def test_get_file_refuses_a_wrong_hash_and_keeps_nothing(server, tmp_path):
    root, url, _ = server
    (root / "data.bin").write_bytes(b"tampered")
    cache = tmp_path / "cache"
    with pytest.raises(ValueError, match="hash does not match"):
        utils.get_file(origin=f"{url}/data.bin", file_hash="0" * 64, cache_dir=cache)
    assert os.listdir(cache / "datasets") == []


def test_get_file_redownloads_a_damaged_cache(server, tmp_path, capsys):
    root, url, hits = server
    (root / "d.txt").write_bytes(b"good")
    cache = tmp_path / "cache"
    (cache / "datasets").mkdir(parents=True)
    (cache / "datasets" / "d.txt").write_bytes(b"bad")
    md5 = hashlib.md5(b"good").hexdigest()
    path = utils.get_file(origin=f"{url}/d.txt", file_hash=md5, cache_dir=cache)
    assert open(path, "rb").read() == b"good" and len(hits) == 1
    assert "hash does not match" in capsys.readouterr().out


def test_get_file_default_cache_is_minnet_home(server, tmp_path, monkeypatch):
    root, url, _ = server
    (root / "x.txt").write_bytes(b"x")
    monkeypatch.setenv("MINNET_HOME", str(tmp_path / "home"))
    path = utils.get_file(origin=f"{url}/x.txt", cache_subdir="mine")
    assert path == os.path.join(tmp_path / "home", "mine", "x.txt")


def _tar_bytes(members):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data, link in members:
            info = tarfile.TarInfo(name)
            if link is not None:
                info.type, info.linkname = tarfile.SYMTYPE, link
                archive.addfile(info)
            else:
                info.size = len(data)
                archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def test_get_file_extracts_tar_and_zip(server, tmp_path):
    root, url, _ = server
    (root / "pack.tar.gz").write_bytes(_tar_bytes([("pack/a.txt", b"A", None),
                                                   ("pack/sub/b.txt", b"B", None)]))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("z/c.txt", "C")
    (root / "pack.zip").write_bytes(buffer.getvalue())
    cache = tmp_path / "cache"
    folder = utils.get_file("pack.tar.gz", f"{url}/pack.tar.gz", extract=True, cache_dir=cache)
    assert folder == os.path.join(cache, "datasets", "pack_extracted")
    assert open(os.path.join(folder, "pack", "sub", "b.txt")).read() == "B"
    folder = utils.get_file(origin=f"{url}/pack.zip", extract=True, cache_dir=cache)
    assert folder == os.path.join(cache, "datasets", "pack.zip")
    assert open(os.path.join(folder, "z", "c.txt")).read() == "C"


@pytest.mark.parametrize("members", [
    [("../evil.txt", b"x", None)],
    [("/tmp/evil_absolute.txt", b"x", None)],
    [("ok/../../evil.txt", b"x", None)],
    [("link", None, "../../outside")],
    [("link", None, "/etc/passwd")],
], ids=["dotdot", "absolute", "nested_dotdot", "relative_link", "absolute_link"])
def test_extraction_refuses_paths_outside_the_target(server, tmp_path, members):
    root, url, _ = server
    (root / "bad.tar.gz").write_bytes(_tar_bytes([("fine.txt", b"f", None)] + members))
    cache = tmp_path / "cache"
    with pytest.raises(ValueError, match="Refusing to extract"):
        utils.get_file("bad.tar.gz", f"{url}/bad.tar.gz", extract=True, cache_dir=cache)
    assert not os.path.exists(os.path.join(cache, "datasets", "bad_extracted"))
    assert not (tmp_path / "evil.txt").exists() and not (cache / "evil.txt").exists()


def test_zip_extraction_refuses_dotdot(tmp_path):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("../evil.txt", "x")
    (tmp_path / "bad.zip").write_bytes(buffer.getvalue())
    from minnet.utils import _file_utils
    with pytest.raises(ValueError, match="outside"):
        _file_utils.extract_archive(str(tmp_path / "bad.zip"), str(tmp_path / "out"))
    assert not (tmp_path / "evil.txt").exists()


def test_get_file_arguments():
    with pytest.raises(ValueError, match="origin"):
        utils.get_file("x")
    with pytest.raises(ValueError, match="Paths are no longer accepted"):
        utils.get_file(os.path.join("a", "b"), "http://127.0.0.1:9/x")


# ---- images -------------------------------------------------------------------------------
@pytest.fixture
def image_file(tmp_path):
    PIL = pytest.importorskip("PIL.Image")
    rng = np.random.default_rng(0)
    pixels = rng.integers(0, 256, size=(12, 16, 3), dtype=np.uint8)
    path = tmp_path / "img.png"
    PIL.fromarray(pixels).save(path)
    return path, pixels


def test_load_img_and_img_to_array(image_file):
    path, pixels = image_file
    image = utils.load_img(path)
    assert image.size == (16, 12) and image.mode == "RGB"
    array = utils.img_to_array(image, data_format="channels_last")
    assert array.dtype == np.float32 and array.shape == (12, 16, 3)
    np.testing.assert_array_equal(array, pixels)
    first = utils.img_to_array(image, data_format="channels_first")
    np.testing.assert_array_equal(first, pixels.transpose(2, 0, 1))
    gray = utils.img_to_array(utils.load_img(path, color_mode="grayscale"))
    assert gray.shape == (12, 16, 1)
    resized = utils.load_img(path, target_size=(6, 8), interpolation="bilinear")
    assert resized.size == (8, 6)


@pytest.mark.parametrize("kwargs", [{}, {"color_mode": "grayscale"}, {"color_mode": "rgba"},
                                    {"target_size": (5, 7)},
                                    {"target_size": (5, 5), "keep_aspect_ratio": True,
                                     "interpolation": "bicubic"}])
def test_load_img_matches_keras(image_file, keras, kwargs):
    path, _ = image_file
    expected = keras.utils.img_to_array(keras.utils.load_img(path, **kwargs))
    got = utils.img_to_array(utils.load_img(path, **kwargs), data_format="channels_last")
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("scale", [True, False])
@pytest.mark.parametrize("channels", [1, 3, 4])
def test_array_to_img_matches_keras(keras, scale, channels):
    pytest.importorskip("PIL")
    x = np.random.default_rng(1).uniform(0, 200, size=(5, 6, channels)).astype("float32")
    expected = np.asarray(keras.utils.array_to_img(x, data_format="channels_last", scale=scale))
    got = np.asarray(utils.array_to_img(x, data_format="channels_last", scale=scale))
    np.testing.assert_array_equal(got, expected)
    first = np.asarray(utils.array_to_img(x.transpose(2, 0, 1), data_format="channels_first",
                                          scale=scale))
    np.testing.assert_array_equal(first, expected)


@pytest.mark.parametrize("layout", ["channels_last", "channels_first"])
def test_save_img_round_trip(tmp_path, layout):
    pytest.importorskip("PIL")
    pixels = np.random.default_rng(2).integers(0, 256, size=(7, 9, 3)).astype("float32")
    x = pixels if layout == "channels_last" else pixels.transpose(2, 0, 1)
    utils.save_img(tmp_path / "a.png", x, data_format=layout, scale=False)
    back = utils.img_to_array(utils.load_img(tmp_path / "a.png"), data_format=layout)
    np.testing.assert_array_equal(back, x)
    rgba = np.concatenate([pixels, np.full((7, 9, 1), 255.0, np.float32)], axis=-1)
    with pytest.warns(UserWarning, match="RGBA"):
        utils.save_img(tmp_path / "b.jpg", rgba, data_format="channels_last", scale=False)
    assert utils.load_img(tmp_path / "b.jpg").size == (9, 7)


def test_image_dataset_from_real_jpeg_and_png(tmp_path):
    PIL = pytest.importorskip("PIL.Image")
    rng = np.random.default_rng(3)
    for label, (name, suffix) in enumerate([("cats", ".jpg"), ("dogs", ".png")]):
        (tmp_path / name).mkdir()
        for i in range(3):
            pixels = np.full((10, 12, 3), 40 + 150 * label, np.uint8) + rng.integers(0, 5, (10, 12, 3),
                                                                                      dtype=np.uint8)
            PIL.fromarray(pixels).save(tmp_path / name / f"{i}{suffix}", quality=95)
    dataset = utils.image_dataset_from_directory(tmp_path, image_size=(10, 12), batch_size=6,
                                                 shuffle=False, verbose=False)
    x, y = next(iter(dataset))
    assert x.shape == (6, 10, 12, 3) and y.tolist() == [0, 0, 0, 1, 1, 1]
    assert dataset.class_names == ["cats", "dogs"]
    assert np.all(np.abs(x[:3].mean(axis=(1, 2, 3)) - 42) < 4)     # JPEG: lossy but close
    assert np.all(np.abs(x[3:].mean(axis=(1, 2, 3)) - 192) < 3)


# ---- Progbar ------------------------------------------------------------------------------
def test_progbar(capsys):
    bar = utils.Progbar(4, verbose=1, interval=0.0)
    for step in range(4):
        bar.update(step + 1, values=[("loss", float(step))])
    out = capsys.readouterr().out
    assert "4/4" in out and out.endswith("\n")
    assert "loss: 1.5000" in out       # the running average of 0, 1, 2, 3
    bar = utils.Progbar(None, verbose=2, stateful_metrics=["acc"])
    bar.add(2, values=[("acc", 0.25)])
    bar.update(5, values=[("acc", 0.75)], finalize=True)
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "acc: 0.7500" in out and "5/Unknown" in out
    silent = utils.Progbar(3, verbose=0)
    silent.update(3)
    assert capsys.readouterr().out == ""


# ---- timeseries_dataset_from_array ----------------------------------------------------------
def _reference_windows(data, targets, length, stride, rate, start, end):
    end = len(data) if end is None else end
    start = start or 0
    count = end - start - (length - 1) * rate
    if targets is not None:
        count = min(count, len(targets) - start)
    windows, ys = [], []
    for p in range(0, count, stride):
        windows.append([data[start + p + k * rate] for k in range(length)])
        if targets is not None:
            ys.append(targets[start + p])
    return np.array(windows), np.array(ys)


@pytest.mark.parametrize("length, stride, rate, start, end", [
    (3, 1, 1, None, None), (4, 2, 1, None, None), (3, 1, 2, 2, 17), (5, 3, 2, 1, None)])
def test_timeseries_windows(length, stride, rate, start, end):
    data = np.arange(20) * 10
    targets = np.arange(20) + 1000
    ds = utils.timeseries_dataset_from_array(data, targets, length, sequence_stride=stride,
                                             sampling_rate=rate, batch_size=4,
                                             start_index=start, end_index=end)
    xs, ys = zip(*list(ds))
    windows, expected_y = _reference_windows(data, targets, length, stride, rate, start, end)
    np.testing.assert_array_equal(np.concatenate(xs), windows)
    np.testing.assert_array_equal(np.concatenate(ys), expected_y)
    assert len(ds) == -(-len(windows) // 4)


def test_timeseries_keras_docstring_example():
    # keras.utils.timeseries_dataset_from_array's own example: steps 0..99, sampling_rate=2,
    # sequence_length=10: the first window is [0, 2, 4, ..., 18], its target 0's successor.
    data = np.arange(100)
    ds = utils.timeseries_dataset_from_array(data[:-10], data[10:], sequence_length=10,
                                             sampling_rate=2, batch_size=2)
    x, y = next(iter(ds))
    assert x[0].tolist() == list(range(0, 20, 2)) and y[0] == 10


def test_timeseries_shuffle_and_no_targets():
    data = np.arange(30).reshape(15, 2).astype("float32")
    ds = utils.timeseries_dataset_from_array(data, None, 4, batch_size=None, shuffle=True, seed=3)
    windows = np.stack(list(ds))
    assert windows.shape == (12, 4, 2)
    starts = sorted(int(w[0, 0]) // 2 for w in windows)
    assert starts == list(range(12))
    with pytest.raises(ValueError, match="sequence_length"):
        utils.timeseries_dataset_from_array(data, None, 0)


def test_timeseries_trains_a_model():
    series = np.sin(np.arange(200) / 5).astype("float32")[:, None]
    ds = utils.timeseries_dataset_from_array(series[:-5], series[5:, 0], sequence_length=5,
                                             batch_size=32)
    mn.manual_seed(0)
    model = mn.models.Sequential([mn.layers.Input((5, 1)), mn.layers.Flatten(), mn.layers.Dense(1)])
    model.compile("adam", "mse")
    history = model.fit(ds, epochs=3, verbose=0)
    assert len(history.history["loss"]) == 3


# ---- text_dataset_from_directory ----------------------------------------------------------
def test_text_dataset_from_directory(tmp_path):
    for name, texts in {"neg": ["bad", "awful film"], "pos": ["good", "great fun", "fine"]}.items():
        (tmp_path / name).mkdir()
        for i, text in enumerate(texts):
            (tmp_path / name / f"{i}.txt").write_text(text, encoding="utf-8")
    (tmp_path / "pos" / "ignored.md").write_text("not a txt")
    ds = utils.text_dataset_from_directory(tmp_path, batch_size=8, shuffle=False, verbose=False)
    x, y = next(iter(ds))
    assert list(x) == ["bad", "awful film", "good", "great fun", "fine"]
    assert y.tolist() == [0, 0, 1, 1, 1] and y.dtype == np.int32
    assert ds.class_names == ["neg", "pos"]
    ds = utils.text_dataset_from_directory(tmp_path, label_mode="binary", max_length=4,
                                           shuffle=False, verbose=False)
    x, y = next(iter(ds))
    assert list(x)[1] == "awfu" and y.shape == (5, 1)
    train, val = utils.text_dataset_from_directory(tmp_path, validation_split=0.4, subset="both",
                                                   seed=1, verbose=False)
    assert len(train.x) == 3 and len(val.x) == 2
    assert not set(train.file_paths) & set(val.file_paths)
    with pytest.raises(ValueError, match="seed"):
        utils.text_dataset_from_directory(tmp_path, validation_split=0.2, subset="training")
    cat = utils.text_dataset_from_directory(tmp_path, label_mode="categorical", shuffle=False,
                                            verbose=False)
    assert next(iter(cat))[1].shape == (5, 2)
