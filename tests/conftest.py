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


# Tolerances per dtype for comparing a kernel with its reference.
TOL = {np.float32: dict(rtol=1e-4, atol=1e-5), np.float64: dict(rtol=1e-10, atol=1e-12)}


@pytest.fixture
def deterministic():
    """mn.config.set_deterministic(True) for one test (bit-identical for any thread count)."""
    import minnet as mn
    mn.config.set_deterministic(True)
    yield
    mn.config.set_deterministic(False)
