"""Every Python code block of the README and docs/ runs, so none can go stale (issue #13).

Blocks of one file run in order in one namespace (a later block may use an earlier block's
names), in a temporary working directory. The first line of a block may carry a marker:

* ``# doc: requires torch`` (or other optional packages: ``# doc: requires onnx onnxruntime``) --
  skipped when that package is not importable; a file whose every block is skipped so
  is reported as skipped, naming the package;
* ``# doc: requires network`` -- never run here (the test suite has no network);
* ``# doc: fragment`` -- an excerpt that is not meant to run on its own (use sparingly:
  the test lists how many there are, and a file made only of fragments fails).

A python block followed directly by a ```` ```text ```` block is checked against it: the
block's printed output must equal that text (trailing spaces ignored). A statement that ends
in a comment ``# -> TEXT`` must print TEXT (whitespace runs compared as one space). So a doc
that shows output cannot drift from what the code prints.

The package docstring (``help(minnet)``) and ``minnet.config`` run as doctests.
"""
import ast
import contextlib
import doctest
import importlib.util
import io
import pathlib
import re

import numpy as np
import pytest

import minnet

# Slow (every docs code block): CI runs this once, not again under the debug build (-m "not slow_once").
pytestmark = pytest.mark.slow_once

ROOT = pathlib.Path(__file__).resolve().parent.parent
FILES = [ROOT / "README.md"] + sorted((ROOT / "docs").rglob("*.md"))
_BLOCK = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*\n(?:\s*^```text[ \t]*\n(.*?)^```)?",
                    re.M | re.S)
_REQUIRES = re.compile(r"# doc: requires ([A-Za-z_][\w.]*(?:[ ,]+[A-Za-z_][\w.]*)*)")


def _blocks_with_output(path):
    """``(code, expected output or None)`` for each python block of ``path``."""
    return [(m.group(1), m.group(2)) for m in _BLOCK.finditer(path.read_text())]


def _blocks(path):
    return [code for code, _ in _blocks_with_output(path)]


def _missing(package):
    return importlib.util.find_spec(package) is None


_SHOWS = re.compile(r"#\s*->\s*(.+?)\s*$")


def _run_block(block, filename, namespace):
    """Run ``block`` statement by statement; return (printed output, [(shown, printed)])."""
    lines = block.splitlines()
    printed = io.StringIO()
    checks = []
    for statement in ast.parse(block, filename).body:
        shown = _SHOWS.search(lines[statement.end_lineno - 1])
        code = compile(ast.Module([statement], type_ignores=[]), filename, "exec")
        this = io.StringIO()
        with contextlib.redirect_stdout(this):
            exec(code, namespace)
        printed.write(this.getvalue())
        if shown:
            checks.append((shown.group(1), this.getvalue()))
    return printed.getvalue(), checks


def _normalise(text):
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines())


DOC_FILES = [p for p in FILES if _blocks(p)]


@pytest.mark.parametrize("path", DOC_FILES, ids=[str(p.relative_to(ROOT)) for p in DOC_FILES])
def test_doc_code_blocks_run(path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    namespace = {"__name__": "__doc_block__"}
    ran = 0
    fragments = 0
    skipped_for = set()
    for index, (block, expected) in enumerate(_blocks_with_output(path)):
        first = block.lstrip().splitlines()[0] if block.strip() else ""
        if "# doc: fragment" in first:
            fragments += 1
            continue
        requires = _REQUIRES.search(first)
        needed = re.split(r"[ ,]+", requires.group(1)) if requires else []
        if "network" in needed:
            continue
        missing = [package for package in needed if _missing(package)]
        if missing:
            skipped_for.update(missing)
            continue
        # Each file starts from minnet's defaults, whatever an earlier file set.
        if ran == 0:
            minnet.config.set_image_data_format("channels_last")
            minnet.manual_seed(0)
        try:
            printed, checks = _run_block(block, f"{path.name}[block {index}]", namespace)
        except Exception as error:  # noqa: BLE001 - report which block failed and how
            raise AssertionError(f"{path.relative_to(ROOT)} block {index} failed: "
                                 f"{type(error).__name__}: {error}\n--- block ---\n{block}") from error
        if expected is not None:
            assert _normalise(printed) == _normalise(expected), (
                f"{path.relative_to(ROOT)} block {index} printed\n{printed}\nbut the doc shows\n{expected}")
        for shown, out in checks:
            assert " ".join(out.split()) == " ".join(shown.split()), (
                f"{path.relative_to(ROOT)} block {index}: a line shows `# -> {shown}` but printed {out!r}")
        ran += 1
    minnet.config.set_image_data_format("channels_last")
    if not ran and skipped_for:
        pytest.skip(f"could not import {', '.join(repr(p) for p in sorted(skipped_for))}: "
                    f"every block of {path.name} that is not a fragment requires it")
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


def test_shown_output_is_what_the_statement_prints():
    printed, checks = _run_block("x = 3\nprint(x * 2)  # -> 6\nprint([[1, 2],\n       [3, 4]])  # -> [[1, 2], [3, 4]]\n",
                                 "check", {})
    assert printed == "6\n[[1, 2], [3, 4]]\n"
    assert checks == [("6", "6\n"), ("[[1, 2], [3, 4]]", "[[1, 2], [3, 4]]\n")]
    _, wrong = _run_block("print(7)  # -> 6\n", "check", {})
    assert [" ".join(out.split()) == shown for shown, out in wrong] == [False]
