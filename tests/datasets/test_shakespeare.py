"""The shipped public-domain text: present, the published bytes, refused when damaged."""
import hashlib
import pathlib
import shutil

import pytest

import minnet as mn
from minnet.datasets import shakespeare


def test_the_shipped_text_loads_and_is_what_the_docs_say():
    text = shakespeare.load_data()
    assert len(text) == 289_994 and text.isascii()
    assert text.startswith("First Citizen:\nBefore we proceed any further")
    assert "\nGLOUCESTER:\nNow is the winter of our discontent" in text
    raw = pathlib.Path(shakespeare.PATH).read_bytes()
    assert hashlib.sha256(raw).hexdigest() == shakespeare.SHA256
    assert len(raw) <= 300 * 1024
    assert mn.datasets.shakespeare is shakespeare
    licence = pathlib.Path(shakespeare.PATH).with_name("SHAKESPEARE_LICENSE.txt").read_text()
    assert shakespeare.SHA256 in licence and "public domain" in licence


def test_a_damaged_copy_is_refused_by_name(tmp_path, monkeypatch):
    copy = tmp_path / "shakespeare.txt"
    shutil.copy(shakespeare.PATH, copy)
    with open(copy, "ab") as handle:
        handle.write(b"x")
    monkeypatch.setattr(shakespeare, "PATH", str(copy))
    with pytest.raises(OSError, match="damaged.*reinstall"):
        shakespeare.load_data()
    monkeypatch.setattr(shakespeare, "PATH", str(tmp_path / "missing.txt"))
    with pytest.raises(OSError, match="Could not read the Shakespeare text"):
        shakespeare.load_data()
