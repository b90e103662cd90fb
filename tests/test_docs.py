"""Every Python code block of the README and docs/ runs, so none can go stale (issue #13).

Blocks of one file run in order in one namespace (a later block may use an earlier block's
names), in a temporary working directory. The first line of a block may carry a marker:

* ``# doc: requires torch`` -- skipped when PyTorch is not importable;
* ``# doc: requires network`` -- never run here (the test suite has no network);
* ``# doc: fragment`` -- an excerpt that is not meant to run on its own (use sparingly:
  the test lists how many there are, and a file made only of fragments fails).

The package docstring (``help(minnet)``) and ``minnet.config`` run as doctests.
"""
import doctest
import os
import pathlib
import re

import numpy as np
import pytest

import minnet

# Slow (every docs code block): CI runs this once, not again under the debug build (-m "not slow_once").
pytestmark = pytest.mark.slow_once

ROOT = pathlib.Path(__file__).resolve().parent.parent
FILES = [ROOT / "README.md"] + sorted((ROOT / "docs").rglob("*.md"))
_BLOCK = re.compile(r"^```python[ \t]*\n(.*?)^```", re.M | re.S)


def _blocks(path):
    return [m.group(1) for m in _BLOCK.finditer(path.read_text())]


DOC_FILES = [p for p in FILES if _blocks(p)]


def _has_torch():
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.parametrize("path", DOC_FILES, ids=[str(p.relative_to(ROOT)) for p in DOC_FILES])
def test_doc_code_blocks_run(path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    namespace = {"__name__": "__doc_block__"}
    ran = 0
    fragments = 0
    for index, block in enumerate(_blocks(path)):
        first = block.lstrip().splitlines()[0] if block.strip() else ""
        if "# doc: fragment" in first:
            fragments += 1
            continue
        if "# doc: requires network" in first:
            continue
        if "# doc: requires torch" in first and not _has_torch():
            continue
        # Each file starts from minnet's defaults, whatever an earlier file set.
        if ran == 0:
            minnet.config.set_image_data_format("channels_last")
            minnet.manual_seed(0)
        try:
            exec(compile(block, f"{path.name}[block {index}]", "exec"), namespace)
        except Exception as error:  # noqa: BLE001 - report which block failed and how
            raise AssertionError(f"{path.relative_to(ROOT)} block {index} failed: "
                                 f"{type(error).__name__}: {error}\n--- block ---\n{block}") from error
        ran += 1
    minnet.config.set_image_data_format("channels_last")
    assert ran or not fragments, f"{path.name}: every block is a fragment"


@pytest.mark.parametrize("module_name", ["minnet", "minnet.config"])
def test_docstring_examples_run(module_name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    module = __import__(module_name, fromlist=["_"])
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    globs = {"mn": minnet, "minnet": minnet, "np": np}
    tests = [t for t in finder.find(module, module_name, globs=globs) if t.examples]
    assert tests, f"{module_name} has no docstring example"
    for test in tests:
        runner.run(test)
    results = runner.summarize(verbose=False)
    assert results.failed == 0, f"{results.failed} docstring example(s) of {module_name} failed"
