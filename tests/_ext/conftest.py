import pytest

from minnet._ext import _base


@pytest.fixture(autouse=True)
def parallel_paths_for_small_inputs():
    """Kernel tests use small arrays: lower the serial cutoff so the parallel paths run too."""
    old = _base.set_parallel_min(0)
    yield
    _base.set_parallel_min(old)
