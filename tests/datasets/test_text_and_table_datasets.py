"""imdb, reuters, boston_housing, california_housing: small files in Keras's formats, no
network; the processing checked against Keras 3's own loaders on the same files."""
import hashlib
import io
import pickle
import zipfile

import numpy as np
import pytest

from minnet.datasets import (_download, boston_housing, california_housing, imdb, reuters)


@pytest.fixture(autouse=True)
def no_network(monkeypatch, tmp_path):
    def offline(*args, **kwargs):
        raise OSError("network unreachable (test)")
    monkeypatch.setattr(_download.urllib.request, "urlopen", offline)
    monkeypatch.setenv("MINNET_HOME", str(tmp_path / "home"))


def _sha256(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def _ragged(rng, n, vocab=60):
    out = np.empty(n, dtype=object)
    out[:] = [list(map(int, rng.integers(1, vocab, rng.integers(1, 12)))) for _ in range(n)]
    return out


def _imdb_file(path, n_train=30, n_test=20):
    rng = np.random.default_rng(0)
    np.savez(path, x_train=_ragged(rng, n_train), y_train=rng.integers(0, 2, n_train),
             x_test=_ragged(rng, n_test), y_test=rng.integers(0, 2, n_test))
    return path


def _reuters_file(path, n=40):
    rng = np.random.default_rng(1)
    np.savez(path, x=_ragged(rng, n), y=rng.integers(0, 46, n))
    return path


def _table_file(path, n, features):
    rng = np.random.default_rng(2)
    np.savez(path, x=rng.normal(size=(n, features)), y=rng.normal(size=n))
    return path


def _same(ours, theirs):
    (a, b), (c, d) = ours
    (e, f), (g, h) = theirs
    assert [list(s) for s in a] == [list(s) for s in e] and [list(s) for s in c] == [list(s) for s in g]
    np.testing.assert_array_equal(np.asarray(b), np.asarray(f))
    np.testing.assert_array_equal(np.asarray(d), np.asarray(h))


OPTIONS = [dict(), dict(num_words=20, skip_top=3), dict(maxlen=8, oov_char=None),
           dict(start_char=None, index_from=0, seed=7)]


@pytest.mark.parametrize("options", OPTIONS, ids=str)
def test_imdb_and_reuters_match_keras(keras, tmp_path, monkeypatch, options):
    import keras.src.datasets.imdb as kimdb
    import keras.src.datasets.reuters as kreuters
    for ours, theirs, make in ((imdb, kimdb, _imdb_file), (reuters, kreuters, _reuters_file)):
        path = make(tmp_path / f"{ours.__name__.rsplit('.', 1)[1]}.npz")
        monkeypatch.setattr(ours, "SHA256", _sha256(path))
        monkeypatch.setattr(theirs, "get_file", lambda *a, **k: str(path))
        _same(ours.load_data(path=path, **options), theirs.load_data(**options))


@pytest.mark.parametrize("module, rows, features, keras_name",
                         [(boston_housing, 50, 13, "boston_housing"),
                          (california_housing, 700, 8, "california_housing")])
def test_tables_match_keras(keras, tmp_path, monkeypatch, module, rows, features, keras_name):
    import importlib
    theirs = importlib.import_module(f"keras.src.datasets.{keras_name}")
    path = _table_file(tmp_path / f"{keras_name}.npz", rows, features)
    monkeypatch.setattr(module, "SHA256", _sha256(path))
    monkeypatch.setattr(theirs, "get_file", lambda *a, **k: str(path))
    for kwargs in (dict(), dict(test_split=0.3, seed=5)):
        _same(module.load_data(path=path, **kwargs), theirs.load_data(**kwargs))
    if module is california_housing:
        _same(module.load_data(version="small", path=path), theirs.load_data(version="small"))


def test_imdb_processing_by_hand(tmp_path, monkeypatch):
    path = tmp_path / "imdb.npz"
    x = np.empty(2, dtype=object)
    x[:] = [[1, 5, 9], [2, 2]]
    np.savez(path, x_train=x, y_train=np.array([0, 1]), x_test=x, y_test=np.array([1, 0]))
    monkeypatch.setattr(imdb, "SHA256", _sha256(path))
    (a, b), (c, d) = imdb.load_data(path=path, seed=0, num_words=10)
    assert a.dtype == object and sorted(map(tuple, a)) == [(1, 4, 8, 2), (1, 5, 5)]
    assert sorted(b.tolist()) == [0, 1] and len(c) == 2


def test_cache_hash_and_offline_message(tmp_path, monkeypatch):
    target = tmp_path / "home" / "datasets" / "reuters"
    target.mkdir(parents=True)
    _reuters_file(target / "reuters.npz")
    monkeypatch.setattr(reuters, "SHA256", _sha256(target / "reuters.npz"))
    (x, y), _ = reuters.load_data()
    assert len(x) == 32 and y.max() < 46
    monkeypatch.setattr(reuters, "SHA256", "0" * 64)
    with pytest.raises(ValueError, match="SHA256"):
        reuters.load_data()
    with pytest.raises(OSError, match=r"put it at .*imdb\.npz.*path="):
        imdb.load_data()
    assert imdb.SHA256 == "69664113be75683a8fe16e3ed0ab59fda8886cb3cd7ada244f7d9544e4676b9f"
    assert len(reuters.get_label_names()) == 46


class _Evil:
    def __reduce__(self):
        import os
        return (os.system, ("echo pwned",))


def test_a_pickle_that_asks_for_more_than_arrays_is_refused(tmp_path, monkeypatch):
    path = tmp_path / "imdb.npz"
    member = io.BytesIO()
    np.lib.format.write_array_header_1_0(member, {"descr": "|O", "fortran_order": False,
                                                  "shape": (1,)})
    pickle.dump(_Evil(), member, protocol=3)
    with zipfile.ZipFile(path, "w") as archive:
        for key in ("x_train", "y_train", "x_test", "y_test"):
            archive.writestr(f"{key}.npy", member.getvalue())
    monkeypatch.setattr(imdb, "SHA256", _sha256(path))
    with pytest.raises(ValueError, match=r"refused to build posix\.system|refused to build os\.system"):
        imdb.load_data(path=path)


def test_damaged_content_is_refused(tmp_path, monkeypatch):
    path = tmp_path / "reuters.npz"
    x = np.empty(2, dtype=object)
    x[:] = [[1, 2], "not a list"]
    np.savez(path, x=x, y=np.array([0, 1]))
    monkeypatch.setattr(reuters, "SHA256", _sha256(path))
    with pytest.raises(ValueError, match=r"x\[1\] is not a list of word indices"):
        reuters.load_data(path=path)
    np.savez(path, x=np.zeros((3, 2)), y=np.zeros(3))
    monkeypatch.setattr(boston_housing, "SHA256", _sha256(path))
    with pytest.raises(ValueError, match=r"expected float x of shape \(n, 13\)"):
        boston_housing.load_data(path=path)


def test_argument_errors():
    with pytest.raises(ValueError, match="`test_split`"):
        boston_housing.load_data(test_split=1.0)
    with pytest.raises(ValueError, match="`version`"):
        california_housing.load_data(version="medium")
    with pytest.raises(ValueError, match="`num_words`"):
        imdb.load_data(num_words=0)
