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
    import os
    os.environ.setdefault("KERAS_BACKEND", "torch")
    pytest.importorskip("torch")
    keras = pytest.importorskip("keras")
    if keras.config.backend() != "torch":
        pytest.skip(f"keras runs on the {keras.config.backend()!r} backend; the oracle tests use torch")
    return keras
