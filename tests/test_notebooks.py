"""The example notebooks (examples/notebooks/) run in a real Jupyter kernel and look right.

Each notebook is executed with nbclient, as Jupyter would run it; then its outputs are
checked: ``model.summary()`` renders as an HTML table (with the same text as plain text
beside it), ``history.plot()`` as a cell's last line shows its figure once, and the
progress bar of ``fit(verbose=1)`` leaves one line per epoch once carriage returns are
applied. Slow (a kernel per notebook): CI runs it once, not again under the debug build.
"""
import os
import pathlib

import pytest

import minnet

pytestmark = pytest.mark.slow_once

ROOT = pathlib.Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "examples" / "notebooks").glob("*.ipynb"))


def _execute(path, tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    # The kernel imports the same minnet as this test (installed, or the checkout's).
    monkeypatch.setenv("PYTHONPATH", os.path.dirname(os.path.dirname(minnet.__file__)))
    monkeypatch.delenv("MPLBACKEND", raising=False)     # the kernel's inline backend
    notebook = nbformat.read(path, as_version=4)
    nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    return [cell for cell in notebook.cells if cell.cell_type == "code"]


def _screen_lines(text):
    """The lines a terminal shows for ``text``: each ``\\r`` returns to the line's start."""
    return [line.rsplit("\r", 1)[-1] for line in text.split("\n") if line.rsplit("\r", 1)[-1].strip()]


def _stream_text(cell):
    return "".join(out.get("text", "") for out in cell.outputs if out.output_type == "stream")


def _cell_with(cells, source):
    return next(cell for cell in cells if source in cell.source)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs(path, tmp_path, monkeypatch):
    cells = _execute(path, tmp_path, monkeypatch)
    errors = [out for cell in cells for out in cell.outputs if out.output_type == "error"]
    assert not errors, errors


def test_cnn_notebook_looks_right(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    cells = _execute(ROOT / "examples" / "notebooks" / "cnn_digits.ipynb", tmp_path, monkeypatch)

    summary = _cell_with(cells, "model.summary()")
    shown = [out for out in summary.outputs if out.output_type == "display_data"]
    assert len(shown) == 1 and "<table>" in shown[0].data["text/html"]
    assert 'Model: "sequential"' in shown[0].data["text/plain"]
    assert "conv2d (Conv2D)" in shown[0].data["text/html"]
    assert not _stream_text(summary), "summary() printed text beside its HTML table"

    fit = _cell_with(cells, "model.fit(")
    lines = _screen_lines(_stream_text(fit))
    assert [line for line in lines if line.startswith("Epoch")] == [f"Epoch {e}/5" for e in range(1, 6)]
    assert len(lines) == 10, lines          # "Epoch e/5" and its final bar, per epoch

    plot = _cell_with(cells, "history.plot()")
    images = [out for out in plot.outputs if "image/png" in out.get("data", {})]
    assert len(images) == 1, f"history.plot() showed {len(images)} figures"
