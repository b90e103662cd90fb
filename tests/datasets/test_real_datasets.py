"""mnist, fashion_mnist, cifar10, cifar100: small files in the real formats, no network."""
import gzip
import hashlib
import io
import os
import tarfile

import numpy as np
import pytest

from minnet import config
from minnet.datasets import _download, cifar10, cifar100, fashion_mnist, mnist


@pytest.fixture(autouse=True)
def no_network(monkeypatch, tmp_path):
    """Any download attempt fails as it would offline; the cache is a fresh directory."""
    def offline(*args, **kwargs):
        raise OSError("network unreachable (test)")
    monkeypatch.setattr(_download.urllib.request, "urlopen", offline)
    monkeypatch.setenv("MINNET_HOME", str(tmp_path / "home"))


@pytest.fixture
def layout():
    previous = config.image_data_format()
    yield config.set_image_data_format
    config.set_image_data_format(previous)


def _sha256(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def _mnist_file(path, n_train=5, n_test=3):
    rng = np.random.default_rng(0)
    arrays = {"x_train": rng.integers(0, 256, (n_train, 28, 28), dtype=np.uint8),
              "y_train": rng.integers(0, 10, n_train, dtype=np.uint8),
              "x_test": rng.integers(0, 256, (n_test, 28, 28), dtype=np.uint8),
              "y_test": rng.integers(0, 10, n_test, dtype=np.uint8)}
    np.savez_compressed(path, **arrays)
    return arrays


def test_mnist_from_cache_checks_the_hash(tmp_path, monkeypatch):
    target = tmp_path / "home" / "datasets" / "mnist"
    target.mkdir(parents=True)
    arrays = _mnist_file(target / "mnist.npz")
    monkeypatch.setattr(mnist, "SHA256", _sha256(target / "mnist.npz"))
    (x_train, y_train), (x_test, y_test) = mnist.load_data()
    assert x_train.shape == (5, 28, 28) and x_train.dtype == np.uint8 and y_test.shape == (3,)
    np.testing.assert_array_equal(x_train, arrays["x_train"])
    np.testing.assert_array_equal(y_test, arrays["y_test"])
    monkeypatch.setattr(mnist, "SHA256", "0" * 64)
    with pytest.raises(ValueError, match="SHA256"):
        mnist.load_data()


def test_mnist_hash_is_keras(tmp_path):
    assert mnist.SHA256 == "731c5ac602752760c8e48fbffcf8c3b850d9dc2a2aedcf2cc48468fc17b673d1"
    assert mnist.ORIGIN.startswith("https://storage.googleapis.com/tensorflow/tf-keras-datasets/")


def test_mnist_path_argument_and_pickle_refused(tmp_path, monkeypatch):
    _mnist_file(tmp_path / "m.npz")
    monkeypatch.setattr(mnist, "SHA256", _sha256(tmp_path / "m.npz"))
    (x_train, _), _ = mnist.load_data(path=tmp_path / "m.npz")
    assert x_train.shape == (5, 28, 28)
    np.savez(tmp_path / "evil.npz", x_train=np.array([object()]), y_train=np.zeros(1),
             x_test=np.zeros(1), y_test=np.zeros(1))
    with pytest.raises(ValueError, match="not an mnist.npz"):
        mnist.read_npz(str(tmp_path / "evil.npz"))


def test_no_network_says_where_to_put_the_file():
    with pytest.raises(OSError, match=r"put it at .*mnist\.npz.*path="):
        mnist.load_data()


def test_missing_local_path():
    with pytest.raises(FileNotFoundError, match="no file at"):
        mnist.load_data(path="/nonexistent/mnist.npz")


def _idx(path, array):
    ndim = array.ndim
    header = (0x800 | ndim).to_bytes(4, "big") + b"".join(
        int(d).to_bytes(4, "big") for d in array.shape)
    with gzip.open(path, "wb") as file:
        file.write(header + array.astype(np.uint8).tobytes())


def test_fashion_mnist_idx_files(tmp_path, monkeypatch):
    rng = np.random.default_rng(1)
    x_train = rng.integers(0, 256, (4, 28, 28)).astype(np.uint8)
    y_train = rng.integers(0, 10, 4).astype(np.uint8)
    x_test = rng.integers(0, 256, (2, 28, 28)).astype(np.uint8)
    y_test = rng.integers(0, 10, 2).astype(np.uint8)
    for name, array in zip(fashion_mnist.FILES, (y_train, x_train, y_test, x_test)):
        _idx(tmp_path / name, array)
    monkeypatch.setattr(fashion_mnist, "MD5", {name: hashlib.md5((tmp_path / name).read_bytes()).hexdigest()
                                               for name in fashion_mnist.FILES})
    (a, b), (c, d) = fashion_mnist.load_data(path=tmp_path)
    for got, want in ((a, x_train), (b, y_train), (c, x_test), (d, y_test)):
        np.testing.assert_array_equal(got, want)
    assert a.shape == (4, 28, 28)
    (tmp_path / fashion_mnist.FILES[1]).write_bytes(gzip.compress(b"\x00\x00\x08\x01rubbish"))
    with pytest.raises(ValueError, match="MD5"):                 # the published hash first
        fashion_mnist.load_data(path=tmp_path)
    fashion_mnist.MD5[fashion_mnist.FILES[1]] = hashlib.md5(
        (tmp_path / fashion_mnist.FILES[1]).read_bytes()).hexdigest()
    with pytest.raises(ValueError, match="IDX"):
        fashion_mnist.load_data(path=tmp_path)


def _cifar_archive(path, members, n_labels, n_per_member=3):
    rng = np.random.default_rng(2)
    images, labels = [], []
    with tarfile.open(path, "w:gz") as archive:
        for name in members:
            lab = rng.integers(0, 10, (n_per_member, n_labels)).astype(np.uint8)
            img = rng.integers(0, 256, (n_per_member, 3, 32, 32)).astype(np.uint8)
            data = np.concatenate([lab, img.reshape(n_per_member, -1)], axis=1).tobytes()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
            images.append(img)
            labels.append(lab)
    return images, labels


@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
def test_cifar10_binary_release(tmp_path, monkeypatch, layout, data_format):
    layout(data_format)
    archive = tmp_path / "cifar-10-binary.tar.gz"
    images, labels = _cifar_archive(archive, cifar10.TRAIN + cifar10.TEST, 1)
    monkeypatch.setattr(cifar10, "MD5", hashlib.md5(archive.read_bytes()).hexdigest())
    (x_train, y_train), (x_test, y_test) = cifar10.load_data(path=archive)
    want = np.concatenate(images[:5])
    if data_format == "channels_last":
        assert x_train.shape == (15, 32, 32, 3)
        want = want.transpose(0, 2, 3, 1)
    else:
        assert x_train.shape == (15, 3, 32, 32)
    np.testing.assert_array_equal(x_train, want)
    np.testing.assert_array_equal(y_train, np.concatenate(labels[:5]))
    assert y_test.shape == (3, 1) and y_test.dtype == np.uint8 and x_test.dtype == np.uint8
    # Pixel (row 0, col 1) of channel G comes from byte 1 + 1024 + 1 of the record.
    record = np.concatenate([labels[0][0], images[0][0].ravel()])
    assert (x_train[0, 0, 1, 1] if data_format == "channels_last" else x_train[0, 1, 0, 1]) \
        == record[1 + 1024 + 1]


def test_cifar_checksum_and_format_errors(tmp_path, monkeypatch):
    archive = tmp_path / "c.tar.gz"
    _cifar_archive(archive, cifar10.TRAIN, 1)                       # no test batch
    with pytest.raises(ValueError, match="MD5"):
        cifar10.load_data(path=archive)
    monkeypatch.setattr(cifar10, "MD5", hashlib.md5(archive.read_bytes()).hexdigest())
    with pytest.raises(ValueError, match="test_batch.bin"):
        cifar10.load_data(path=archive)
    assert cifar10.MD5 != "c32a1d4ab5d03f1284b67883e8d87530"
    assert cifar10.ORIGIN.endswith("cifar-10-binary.tar.gz")


def test_cifar10_published_md5():
    assert cifar10.MD5 == "c32a1d4ab5d03f1284b67883e8d87530"
    assert cifar100.MD5 == "03b5dce01913d631647c71ecec9e9cb8"
    assert "python" not in cifar10.ORIGIN and "python" not in cifar100.ORIGIN


@pytest.mark.parametrize("label_mode", ["fine", "coarse"])
def test_cifar100_label_modes(tmp_path, monkeypatch, layout, label_mode):
    layout("channels_last")
    archive = tmp_path / "cifar-100-binary.tar.gz"
    _, labels = _cifar_archive(archive, cifar100.TRAIN + cifar100.TEST, 2)
    monkeypatch.setattr(cifar100, "MD5", hashlib.md5(archive.read_bytes()).hexdigest())
    (x_train, y_train), _ = cifar100.load_data(label_mode=label_mode, path=archive)
    assert x_train.shape == (3, 32, 32, 3) and y_train.shape == (3, 1)
    np.testing.assert_array_equal(y_train[:, 0], labels[0][:, 1 if label_mode == "fine" else 0])
    with pytest.raises(ValueError, match="label_mode"):
        cifar100.load_data(label_mode="medium", path=archive)


def test_cache_dir_follows_minnet_home(tmp_path, monkeypatch):
    monkeypatch.setenv("MINNET_HOME", str(tmp_path / "x"))
    assert _download.cache_dir() == os.path.join(str(tmp_path / "x"), "datasets")
    monkeypatch.delenv("MINNET_HOME")
    assert _download.cache_dir() == os.path.join(os.path.expanduser("~"), ".minnet", "datasets")


class _Response(io.BytesIO):
    def __init__(self, data):
        super().__init__(data)
        self.headers = {"Content-Length": str(len(data))}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def test_download_verifies_before_caching(tmp_path, monkeypatch, capsys):
    _mnist_file(tmp_path / "src.npz")
    payload = (tmp_path / "src.npz").read_bytes()
    calls = []

    def fake_urlopen(url, timeout=None):
        calls.append(url)
        return _Response(payload)
    monkeypatch.setattr(_download.urllib.request, "urlopen", fake_urlopen)
    monkeypatch.setattr(mnist, "SHA256", "f" * 64)
    with pytest.raises(ValueError, match="SHA256"):
        mnist.load_data()
    cache = tmp_path / "home" / "datasets" / "mnist"
    assert os.listdir(cache) == [], "a file failing its hash must not stay in the cache"
    monkeypatch.setattr(mnist, "SHA256", hashlib.sha256(payload).hexdigest())
    (x_train, _), _ = mnist.load_data()
    assert calls == [mnist.ORIGIN] * 2 and x_train.shape == (5, 28, 28)
    assert "mnist.npz" in capsys.readouterr().err          # the progress bar
    mnist.load_data()                                       # cached: no third download
    assert len(calls) == 2 and sorted(os.listdir(cache)) == ["SHA256SUMS", "mnist.npz"]
    assert (cache / "SHA256SUMS").read_text() == f"{hashlib.sha256(payload).hexdigest()}  mnist.npz\n"
