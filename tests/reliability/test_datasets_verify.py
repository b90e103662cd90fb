"""Data sets verify their content (#31 item 10): every loader checks its files' published hash,
records each accepted cached file's SHA-256 (and refuses one that changed after), and checks
label ranges and shapes after reading, naming the file. Small files made here, never the
network."""
import gzip
import hashlib
import io
import shutil
import tarfile

import numpy as np
import pytest

from minnet.datasets import _download, cifar10, cifar100, fashion_mnist, mnist


@pytest.fixture(autouse=True)
def offline_cache(monkeypatch, tmp_path):
    def offline(*args, **kwargs):
        raise OSError("network unreachable (test)")
    monkeypatch.setattr(_download.urllib.request, "urlopen", offline)
    monkeypatch.setenv("MINNET_HOME", str(tmp_path / "home"))
    return tmp_path / "home" / "datasets"


def _md5(path):
    return hashlib.md5(path.read_bytes()).hexdigest()


def _idx(path, array):
    header = (0x800 | array.ndim).to_bytes(4, "big") + b"".join(
        int(d).to_bytes(4, "big") for d in array.shape)
    with gzip.open(path, "wb") as file:
        file.write(header + array.astype(np.uint8).tobytes())


def _fashion_files(folder, y_train=None, image_shape=(28, 28)):
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    y_train = rng.integers(0, 10, 4) if y_train is None else np.asarray(y_train)
    arrays = (y_train, rng.integers(0, 256, (len(y_train),) + image_shape),
              rng.integers(0, 10, 2), rng.integers(0, 256, (2,) + image_shape))
    for name, array in zip(fashion_mnist.FILES, arrays):
        _idx(folder / name, array)
    return {name: _md5(folder / name) for name in fashion_mnist.FILES}


def test_a_cached_fashion_mnist_file_with_labels_of_200_is_refused_naming_it(offline_cache, monkeypatch):
    folder = offline_cache / "fashion-mnist"
    hashes = _fashion_files(folder, y_train=[0, 3, 200, 9])
    with pytest.raises(ValueError) as info:             # the published MD5 refuses it first
        fashion_mnist.load_data()
    assert str(folder / "train-labels-idx1-ubyte.gz") in str(info.value) and "MD5" in str(info.value)
    monkeypatch.setattr(fashion_mnist, "MD5", hashes)   # as if the hash matched: content checked
    with pytest.raises(ValueError) as info:
        fashion_mnist.load_data()
    message = str(info.value)
    assert str(folder / "train-labels-idx1-ubyte.gz") in message
    assert "[0, 10). Received: 200 at flat index 2" in message


def test_fashion_mnist_images_of_another_size_are_refused(offline_cache, monkeypatch):
    folder = offline_cache / "fashion-mnist"
    monkeypatch.setattr(fashion_mnist, "MD5", _fashion_files(folder, image_shape=(27, 28)))
    with pytest.raises(ValueError, match="train-images-idx3-ubyte.gz"):
        fashion_mnist.load_data()


def _mnist(path, y_train=(1, 2, 3), x_dtype=np.uint8, x_shape=(28, 28)):
    path.parent.mkdir(parents=True, exist_ok=True)
    n = len(y_train)
    np.savez(path, x_train=np.zeros((n,) + x_shape, x_dtype), y_train=np.asarray(y_train, np.uint8),
             x_test=np.zeros((2,) + x_shape, x_dtype), y_test=np.array([0, 9], np.uint8))
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("kwargs, fragment", [
    ({"y_train": (1, 10, 3)}, "[0, 10). Received: 10 at flat index 1"),
    ({"y_train": (255,)}, "Received: 255 at flat index 0"),
    ({"x_dtype": np.float32}, "dtype float32"),
    ({"x_shape": (28, 27)}, "(n, 28, 28)"),
])
def test_mnist_content_is_checked_after_reading(offline_cache, monkeypatch, kwargs, fragment):
    path = offline_cache / "mnist" / "mnist.npz"
    monkeypatch.setattr(mnist, "SHA256", _mnist(path, **kwargs))
    with pytest.raises(ValueError) as info:
        mnist.load_data()
    assert str(path) in str(info.value) and fragment in str(info.value)


def _cifar(path, members, labels):
    with tarfile.open(path, "w:gz") as archive:
        for name in members:
            lab = np.asarray(labels, np.uint8).reshape(len(labels), -1)
            data = np.concatenate([lab, np.zeros((len(lab), 3072), np.uint8)], axis=1).tobytes()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return _md5(path)


@pytest.mark.parametrize("module, labels, fragment", [
    (cifar10, [[3], [10]], "[0, 10). Received: 10 at flat index 1"),
    (cifar100, [[19, 99], [20, 5]], "coarse labels`: expected class labels in [0, 20)"),
    (cifar100, [[19, 99], [2, 100]], "fine labels`: expected class labels in [0, 100)"),
])
def test_cifar_labels_are_checked_after_reading(tmp_path, monkeypatch, module, labels, fragment):
    name = "cifar-10-binary.tar.gz" if module is cifar10 else "cifar-100-binary.tar.gz"
    path = tmp_path / name
    monkeypatch.setattr(module, "MD5", _cifar(path, module.TRAIN + module.TEST, labels))
    with pytest.raises(ValueError) as info:
        module.load_data(path=path)
    assert str(path) in str(info.value) and fragment in str(info.value)


def test_an_accepted_file_has_its_sha256_recorded_and_a_later_change_is_refused(offline_cache, monkeypatch):
    path = offline_cache / "mnist" / "mnist.npz"
    monkeypatch.setattr(mnist, "SHA256", _mnist(path))
    mnist.load_data()
    manifest = offline_cache / "mnist" / _download.MANIFEST
    assert manifest.read_text() == f"{hashlib.sha256(path.read_bytes()).hexdigest()}  mnist.npz\n"
    # A Fashion-MNIST file (only an MD5 is published) changes after it was accepted, and its MD5
    # is made to match again (the MD5 collision a SHA-256 record guards against):
    folder = offline_cache / "fashion-mnist"
    monkeypatch.setattr(fashion_mnist, "MD5", _fashion_files(folder))
    fashion_mnist.load_data()
    recorded = (folder / _download.MANIFEST).read_text().splitlines()
    assert sorted(line.split("  ")[1] for line in recorded) == sorted(fashion_mnist.FILES)
    labels = folder / "t10k-labels-idx1-ubyte.gz"
    _idx(labels, np.array([1, 1]))
    fashion_mnist.MD5["t10k-labels-idx1-ubyte.gz"] = _md5(labels)
    with pytest.raises(ValueError) as info:
        fashion_mnist.load_data()
    assert str(labels) in str(info.value) and "changed after minnet accepted it" in str(info.value)


def test_every_downloaded_file_has_a_published_hash():
    assert len(mnist.SHA256) == 64
    assert sorted(fashion_mnist.MD5) == sorted(fashion_mnist.FILES)
    assert all(len(digest) == 32 for digest in fashion_mnist.MD5.values())
    assert len(cifar10.MD5) == 32 and len(cifar100.MD5) == 32


def test_the_shipped_digits_are_verified(tmp_path, monkeypatch):
    from minnet import datasets
    (x, y), _ = datasets.load_digits()
    assert x.shape[1:] == (8, 8, 1) and y.max() == 9
    copy = tmp_path / "digits.npz"
    shutil.copy(datasets._DIGITS_PATH, copy)
    with np.load(copy) as archive:
        images, labels = archive["images"], archive["labels"].copy()
    labels[0] = 12
    np.savez(copy, images=images, labels=labels)
    monkeypatch.setattr(datasets, "_DIGITS_PATH", str(copy))
    with pytest.raises(OSError, match="SHA-256"):
        datasets.load_digits()
    monkeypatch.setattr(datasets, "DIGITS_SHA256", hashlib.sha256(copy.read_bytes()).hexdigest())
    with pytest.raises(OSError, match=r"\[0, 10\)\. Received: 12 at flat index 0"):
        datasets.load_digits()
