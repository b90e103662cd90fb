import pytest

from minnet._ext import _batchnorm, _dropout


@pytest.fixture(autouse=True)
def parallel_paths_for_small_inputs():
    """Kernel tests use small arrays: lower the serial cutoff so the parallel paths run too."""
    old = [m._set_parallel_min(0) for m in (_batchnorm, _dropout)]
    yield
    for m, value in zip((_batchnorm, _dropout), old):
        m._set_parallel_min(value)
