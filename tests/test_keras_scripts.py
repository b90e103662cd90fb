"""Keras 3 tutorial scripts run under minnet with only their import lines changed (issue #13).

Each script in ``tests/keras_scripts/`` is written for Keras 3 (``import keras``,
``from keras import layers``); ``translate.to_minnet`` rewrites the imports and nothing else.
The data is minnet's digits made tutorial-shaped (``make_data.py``: 28x28 grey, 32x32x3
colour). Here each runs for a few epochs and must learn (accuracy well above chance); the
full-length comparison with Keras's own accuracy is ``benchmarks/keras_tutorial_parity.py``
(figures in ``docs/coming_from_keras.md``).
"""
import os
import pathlib
import re
import subprocess
import sys

import pytest

import minnet

# Slow (tutorial scripts in subprocesses): CI runs this once, not again under the debug build (-m "not slow_once").
pytestmark = pytest.mark.slow_once

HERE = pathlib.Path(__file__).resolve().parent / "keras_scripts"
sys.path.insert(0, str(HERE))
import make_data  # noqa: E402
import translate  # noqa: E402

SCRIPTS = sorted(HERE.glob("t[0-9][0-9]_*.py"))
# (epochs for the test, accuracy it must exceed). Chance is 0.1 (0.5 for the binary task).
SHORT = {"t05_binary_logits": (3, 0.75), "t06_regression_early_stopping": (8, 0.15),
         "t08_add_layers_and_save": (6, 0.25)}   # stride-2 convs + global pooling learn slowly


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    return make_data.make(tmp_path_factory.mktemp("tutorial_data"))


def test_translation_changes_only_imports():
    source = "import keras\nfrom keras import layers\nfrom keras.utils import to_categorical\nx = keras.Sequential()\n"
    assert translate.to_minnet(source) == ("import minnet as keras\nfrom minnet import layers\n"
                                           "from minnet.utils import to_categorical\nx = keras.Sequential()\n")


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.stem for s in SCRIPTS])
def test_keras_tutorial_runs_unchanged(script, data_dir, tmp_path):
    epochs, threshold = SHORT.get(script.stem, (2, 0.5))
    source = translate.to_minnet(script.read_text())
    assert "import minnet" in source
    target = tmp_path / script.name
    target.write_text(source)
    package_parent = str(pathlib.Path(minnet.__file__).resolve().parent.parent)
    env = dict(os.environ, TUTORIAL_DATA=str(data_dir), EPOCHS=str(epochs), MPLBACKEND="Agg",
               PYTHONPATH=os.pathsep.join(p for p in (package_parent, os.environ.get("PYTHONPATH")) if p))
    result = subprocess.run([sys.executable, "-W", "error::UserWarning", str(target)], cwd=tmp_path,
                            env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"{script.name} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    found = re.findall(r"^test_accuracy: ([0-9.eE+-]+)", result.stdout, re.M)
    assert found, result.stdout[-2000:]
    assert float(found[-1]) > threshold, f"{script.name}: accuracy {found[-1]} after {epochs} epochs"
