import os
import re

import numpy as np
import pytest


@pytest.fixture
def torch():
    """The torch module, or skip the test when PyTorch is not installed."""
    torch = pytest.importorskip("torch")
    torch.set_num_threads(1)
    return torch


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


# Tolerances per dtype (and per kind of op) live in one table: TOLERANCES in tests/_harness.py.


@pytest.fixture
def deterministic():
    """mn.config.set_deterministic(True) for one test (bit-identical for any thread count)."""
    import minnet as mn
    mn.config.set_deterministic(True)
    yield
    mn.config.set_deterministic(False)


@pytest.fixture
def keras():
    """Keras 3 on its torch backend (the oracle for Keras meanings), or skip when it is missing."""
    os.environ.setdefault("KERAS_BACKEND", "torch")
    pytest.importorskip("torch")
    keras = pytest.importorskip("keras")
    if keras.config.backend() != "torch":
        pytest.skip(f"keras runs on the {keras.config.backend()!r} backend; the oracle tests use torch")
    return keras


# ---- optional packages in CI ------------------------------------------------------------
# `.ci/run` runs the README's `pytest` without any optional package, then installs them
# (tests/requirements-optional.txt) and runs again exactly the tests that skipped for one,
# so that no oracle test only ever skips:
#   MINNET_RECORD_OPTIONAL_SKIPS=FILE  appends "nodeid<TAB>reason" for each test (or module)
#                                      skipped because an optional package is missing;
#   MINNET_RUN_ONLY=FILE               runs only the node ids (or modules) listed in FILE.
OPTIONAL_PACKAGES = ("torch", "keras", "matplotlib", "nbclient", "ipykernel", "nbformat", "onnx",
                     "onnxruntime", "tensorboard", "h5py", "PIL", "Pillow", "mpi4py")
_OPTIONAL_SKIP = re.compile(
    r"\b(?:could not import|No module named|requires?|needs?)\b[^\n]*?['\"]?\b("
    + "|".join(OPTIONAL_PACKAGES) + r")\b")


def _skip_reason(report):
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2])
    return str(longrepr)


def _record_optional_skip(report):
    path = os.environ.get("MINNET_RECORD_OPTIONAL_SKIPS")
    if not path or not report.skipped:
        return
    reason = _skip_reason(report)
    if _OPTIONAL_SKIP.search(reason):
        with open(path, "a") as f:
            f.write(f"{report.nodeid}\t{' '.join(reason.split())}\n")


def pytest_runtest_logreport(report):
    if report.when in ("setup", "call"):
        _record_optional_skip(report)


def pytest_collectreport(report):
    _record_optional_skip(report)


def pytest_collection_modifyitems(config, items):
    path = os.environ.get("MINNET_RUN_ONLY")
    if not path:
        return
    with open(path) as f:
        wanted = {line.split("\t", 1)[0].strip() for line in f if line.strip()}
    keep = [item for item in items
            if item.nodeid in wanted or item.nodeid.split("::", 1)[0] in wanted]
    deselected = [item for item in items if item not in keep]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
    items[:] = keep
