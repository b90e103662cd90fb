"""mn.utils: split_dataset, train_test_split, normalize, image_dataset_from_directory."""
import struct
import zlib

import numpy as np
import pytest

from minnet.utils import (image_dataset_from_directory, normalize, split_dataset,
                          train_test_split)
from minnet.utils._dataset_utils import read_png, resize_bilinear


# ---------------------------------------------------------------------------------------
# Splitting
# ---------------------------------------------------------------------------------------

def test_split_dataset_sizes_and_order():
    x, y = np.arange(10.0), np.arange(10) * 10
    (xl, yl), (xr, yr) = split_dataset((x, y), left_size=0.8)
    np.testing.assert_array_equal(xl, x[:8])
    np.testing.assert_array_equal(yr, y[8:])
    left, right = split_dataset(x, right_size=3)
    assert len(left) == 7 and len(right) == 3
    left, right = split_dataset(x, left_size=2, right_size=3)
    assert len(left) == 2 and len(right) == 3


def test_split_dataset_shuffle_is_seeded_and_a_partition():
    x = np.arange(50)
    a = split_dataset(x, left_size=0.6, shuffle=True, seed=3)
    b = split_dataset(x, left_size=0.6, shuffle=True, seed=3)
    np.testing.assert_array_equal(a[0], b[0])
    assert not np.array_equal(a[0], x[:30])
    assert sorted(np.concatenate(a).tolist()) == list(range(50))


def test_split_dataset_stratified_keeps_proportions():
    y = np.array([0] * 80 + [1] * 20)
    x = np.arange(100)
    (xl, yl), (xr, yr) = split_dataset((x, y), left_size=0.5, stratify=y, seed=0)
    assert (yl == 1).sum() == 10 and (yr == 1).sum() == 10
    np.testing.assert_array_equal(y[xl], yl)


@pytest.mark.parametrize("kwargs, error", [
    ({}, ValueError), ({"left_size": 1.5}, ValueError), ({"left_size": 0}, ValueError),
    ({"left_size": 11}, ValueError), ({"left_size": 6, "right_size": 6}, ValueError),
    ({"left_size": "a"}, TypeError), ({"left_size": 0.5, "seed": -1}, ValueError),
])
def test_split_dataset_bad_arguments(kwargs, error):
    with pytest.raises(error):
        split_dataset(np.arange(10), **kwargs)


def test_split_dataset_mismatched_lengths():
    with pytest.raises(ValueError, match="same"):
        split_dataset((np.arange(3), np.arange(4)), left_size=1)


def test_train_test_split_as_scikit_learn():
    x, y = np.arange(20).reshape(10, 2), np.arange(10)
    x_train, x_test, y_train, y_test = train_test_split(x, y, seed=0)
    assert len(x_test) == 3 and len(x_train) == 7          # ceil(0.25 * 10)
    np.testing.assert_array_equal(x_train[:, 0] // 2, y_train)
    x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.2, shuffle=False)
    np.testing.assert_array_equal(y_test, [8, 9])
    _, _, y_train, y_test = train_test_split(x, y, train_size=6, random_state=1)
    assert len(y_train) == 6 and len(y_test) == 4
    again = train_test_split(x, y, train_size=6, seed=1)
    np.testing.assert_array_equal(again[3], y_test)


def test_train_test_split_stratified():
    y = np.array([0, 1, 2] * 10)
    _, _, y_train, y_test = train_test_split(np.zeros((30, 1)), y, test_size=0.3, stratify=y,
                                             seed=0)
    assert np.bincount(y_test).tolist() == [3, 3, 3]
    assert np.bincount(y_train).tolist() == [7, 7, 7]


def test_split_does_not_change_user_arrays():
    x = np.arange(10.0)
    before = x.copy()
    left, _ = split_dataset(x, left_size=5, shuffle=True, seed=0)
    left[:] = -1
    np.testing.assert_array_equal(x, before)


# ---------------------------------------------------------------------------------------
# normalize
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("order, axis", [(2, -1), (1, -1), (2, 0), (np.inf, 1)])
def test_normalize_matches_numpy(order, axis):
    x = np.random.default_rng(0).standard_normal((4, 5)).astype(np.float32)
    x[1] = 0
    out = normalize(x, axis=axis, order=order)
    norm = np.linalg.norm(x, order, axis=axis, keepdims=True)
    norm[norm == 0] = 1
    np.testing.assert_allclose(out, x / norm, rtol=1e-6)
    assert out.dtype == np.float32


def test_normalize_bad_input():
    with pytest.raises(ValueError, match="axis"):
        normalize(np.ones((2, 3)), axis=2)
    with pytest.raises(TypeError):
        normalize(np.array(["a"]))


# ---------------------------------------------------------------------------------------
# Images from a directory
# ---------------------------------------------------------------------------------------

def _png(path, image, filter_type=0):
    """Write an 8-bit PNG (grey, grey+alpha, RGB or RGBA) with one filter type per row."""
    image = np.asarray(image, np.uint8)
    if image.ndim == 2:
        image = image[:, :, None]
    height, width, channels = image.shape
    colour = {1: 0, 2: 4, 3: 2, 4: 6}[channels]
    rows = image.reshape(height, width * channels).astype(np.int32)
    raw = bytearray()
    previous = np.zeros(width * channels, np.int32)
    for row in rows:
        left = np.concatenate([np.zeros(channels, np.int32), row[:-channels]])
        if filter_type == 1:
            line = row - left
        elif filter_type == 2:
            line = row - previous
        elif filter_type == 3:
            line = row - (left + previous) // 2
        else:
            line = row
        raw += bytes([filter_type]) + (line & 0xFF).astype(np.uint8).tobytes()
        previous = row

    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(
            ">I", zlib.crc32(kind + body) & 0xFFFFFFFF)
    data = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8,
                                                               colour, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(bytes(raw))) + chunk(b"IEND", b""))
    with open(path, "wb") as file:
        file.write(data)


@pytest.mark.parametrize("filter_type", [0, 1, 2, 3])
@pytest.mark.parametrize("channels", [1, 2, 3, 4])
def test_png_decoder_round_trip(tmp_path, filter_type, channels):
    image = np.random.default_rng(channels).integers(0, 256, (5, 7, channels), dtype=np.uint8)
    _png(tmp_path / "a.png", image, filter_type)
    np.testing.assert_array_equal(read_png(str(tmp_path / "a.png")), image)


def test_png_paeth_filter(tmp_path):
    # Filter 4 written by zlib-free hand: rows of a constant image predict perfectly.
    image = np.full((3, 4, 3), 77, np.uint8)
    rows = bytearray()
    for r in range(3):
        rows += b"\x04" + (bytes([77] * 3) + bytes(9) if r == 0 else bytes(12))
    body = struct.pack(">IIBBBBB", 4, 3, 8, 2, 0, 0, 0)

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(
            ">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    (tmp_path / "p.png").write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", body)
                                     + chunk(b"IDAT", zlib.compress(bytes(rows)))
                                     + chunk(b"IEND", b""))
    np.testing.assert_array_equal(read_png(str(tmp_path / "p.png")), image)


def test_resize_bilinear_half_pixel_centres():
    image = np.arange(4, dtype=np.float32).reshape(1, 4, 1)
    out = resize_bilinear(np.repeat(image, 2, axis=0), (2, 2))
    np.testing.assert_allclose(out[0, :, 0], [0.5, 2.5])
    up = resize_bilinear(np.repeat(image, 2, axis=0), (2, 8))
    np.testing.assert_allclose(up[0, :, 0], [0, 0.25, 0.75, 1.25, 1.75, 2.25, 2.75, 3])


def test_resize_bilinear_matches_torch():
    torch = pytest.importorskip("torch")
    image = np.random.default_rng(0).random((7, 9, 3)).astype(np.float32)
    ours = resize_bilinear(image, (4, 13))
    theirs = torch.nn.functional.interpolate(
        torch.from_numpy(image.transpose(2, 0, 1))[None], size=(4, 13), mode="bilinear",
        align_corners=False, antialias=False)[0].numpy().transpose(1, 2, 0)
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)


@pytest.fixture
def image_tree(tmp_path):
    rng = np.random.default_rng(0)
    for name, count in (("cats", 5), ("dogs", 3)):
        (tmp_path / name).mkdir()
        for i in range(count):
            _png(tmp_path / name / f"{i}.png", rng.integers(0, 256, (6, 6, 3), dtype=np.uint8))
    (tmp_path / "dogs" / "notes.txt").write_text("not an image")
    return tmp_path


def test_image_dataset_inferred_labels(image_tree):
    ds = image_dataset_from_directory(image_tree, image_size=(6, 6), batch_size=3,
                                      shuffle=False, data_format="channels_last", verbose=False)
    assert ds.class_names == ["cats", "dogs"] and len(ds) == 3
    batches = list(ds)
    x = np.concatenate([b[0] for b in batches])
    y = np.concatenate([b[1] for b in batches])
    assert x.shape == (8, 6, 6, 3) and x.dtype == np.float32 and y.dtype == np.int32
    assert y.tolist() == [0] * 5 + [1] * 3
    np.testing.assert_array_equal(x[0], read_png(ds.file_paths[0]).astype(np.float32))


def test_image_dataset_layouts_modes_and_split(image_tree):
    train, val = image_dataset_from_directory(
        image_tree, image_size=(4, 5), batch_size=2, label_mode="categorical",
        color_mode="grayscale", validation_split=0.25, subset="both", seed=1,
        data_format="channels_first", verbose=False)
    xb, yb = next(iter(train))
    assert xb.shape == (2, 1, 4, 5) and yb.shape == (2, 2)
    assert sorted(train.file_paths + val.file_paths) == sorted(
        str(p) for p in image_tree.rglob("*.png"))
    assert len(val.file_paths) == 2 and not set(train.file_paths) & set(val.file_paths)
    binary = image_dataset_from_directory(image_tree, image_size=(3, 3), label_mode="binary",
                                          data_format="channels_last", verbose=False, seed=0)
    _, y = next(iter(binary))
    assert y.shape == (8, 1) and y.dtype == np.float32
    unlabeled = image_dataset_from_directory(image_tree, labels=None, image_size=(3, 3),
                                             batch_size=None, verbose=False, seed=0)
    first = next(iter(unlabeled))
    assert first.ndim == 3 and len(unlabeled) == 8


def test_image_dataset_reshuffles_each_pass(image_tree):
    ds = image_dataset_from_directory(image_tree, image_size=(2, 2), batch_size=8, seed=0,
                                      data_format="channels_last", verbose=False)
    orders = [next(iter(ds))[0][:, 0, 0, 0].tolist() for _ in range(4)]
    assert any(o != orders[0] for o in orders[1:])


@pytest.mark.parametrize("kwargs", [
    {"label_mode": "sparse"}, {"color_mode": "cmyk"}, {"batch_size": 0},
    {"image_size": (0, 4)}, {"validation_split": 0.2, "subset": "training"},
    {"validation_split": 1.5, "subset": "training", "seed": 0}, {"subset": "training"},
    {"labels": [0, 1]}, {"class_names": ["cats", "birds"]},
    {"crop_to_aspect_ratio": True, "pad_to_aspect_ratio": True}, {"data_format": "nhwc"},
])
def test_image_dataset_bad_arguments(image_tree, kwargs):
    with pytest.raises((ValueError, TypeError)):
        image_dataset_from_directory(image_tree, verbose=False, **kwargs)


def test_image_dataset_binary_needs_two_classes(image_tree):
    (image_tree / "birds").mkdir()
    _png(image_tree / "birds" / "b.png", np.zeros((2, 2, 3)))
    with pytest.raises(ValueError, match="exactly 2"):
        image_dataset_from_directory(image_tree, label_mode="binary", verbose=False)


def test_jpeg_without_pillow_says_what_to_install(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.jpg").write_bytes(b"\xff\xd8\xff\xe0 not really a jpeg")
    try:
        import PIL  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="pip install Pillow"):
            image_dataset_from_directory(tmp_path, verbose=False)
    else:
        with pytest.raises(Exception):
            image_dataset_from_directory(tmp_path, verbose=False)


def test_empty_directory(tmp_path):
    with pytest.raises(ValueError, match="No images found"):
        image_dataset_from_directory(tmp_path, verbose=False)
