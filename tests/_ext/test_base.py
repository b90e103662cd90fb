"""The shared base of minnet._ext (_base.pyx/.pxd): one thread policy with one test hook,
one argument check, one determinism flag, and no module redeclaring them."""
import re
from pathlib import Path

import numpy as np
import pytest

import minnet as mn
import minnet.functional as F
from minnet._ext import _base, conv_kernels, linear_kernels

EXT = Path(mn.__file__).parent / "_ext"


def test_set_parallel_min_is_one_hook_that_returns_the_old_value():
    old = _base.set_parallel_min(123)
    try:
        assert _base.set_parallel_min(7) == 123
    finally:
        _base.set_parallel_min(old)


def test_check_array_returns_the_array_itself_and_never_copies():
    a = np.zeros((2, 3), np.float32)
    assert _base.check_array(a, "a") is a
    assert _base.check_array(a, "a", np.dtype(np.float32), (2, 3), 2) is a
    t = a.T
    assert _base.check_array(t, "t", None, None, -1, False) is t


@pytest.mark.parametrize("bad, kind, words", [
    ([1.0], TypeError, "numpy.ndarray"),
    (np.zeros(3, np.int64), TypeError, "float32 or float64"),
    (np.zeros((3, 2))[:, 0], ValueError, "C-contiguous"),
])
def test_check_array_names_the_argument_expected_and_received(bad, kind, words):
    with pytest.raises(kind, match=f"`arg`.*{words}"):
        _base.check_array(bad, "arg")


def test_check_array_dtype_shape_and_ndim():
    a = np.zeros((2, 3))
    with pytest.raises(TypeError, match="expected dtype float32"):
        _base.check_array(a, "a", np.float32)
    with pytest.raises(ValueError, match=r"expected shape \(3, 2\)"):
        _base.check_array(a, "a", None, (3, 2))
    with pytest.raises(ValueError, match="expected a 3-D array"):
        _base.check_array(a, "a", None, None, 3)


def test_kernels_refuse_strided_operands_and_the_public_ops_convert(rng):
    x = rng.standard_normal((4, 5))
    w_t = rng.standard_normal((5, 3)).T          # (3, 5), not C-contiguous
    with pytest.raises(ValueError, match="`weight`: expected a C-contiguous"):
        linear_kernels.linear_forward(x, w_t)
    np.testing.assert_array_equal(F.linear(x, w_t).numpy(),
                                  linear_kernels.linear_forward(x, np.ascontiguousarray(w_t)))
    xi = rng.standard_normal((2, 5, 5, 3))
    w = rng.standard_normal((4, 3, 3, 3))[:, :, ::-1]   # a reversed view
    with pytest.raises(ValueError, match="`weight`: expected a C-contiguous"):
        conv_kernels.conv2d_forward(xi.transpose(0, 3, 1, 2).copy(), w)
    np.testing.assert_array_equal(
        F.conv2d(xi, w, data_format="channels_last").numpy(),
        conv_kernels.conv2d_forward(xi, np.ascontiguousarray(w), data_format="channels_last"))


def test_check_threads():
    assert _base.check_threads(2) == 2
    for bad in (0, True, 1.5):
        with pytest.raises(ValueError, match="`n_threads`"):
            _base.check_threads(bad)


def test_set_deterministic_is_the_config_flag():
    assert not _base.is_deterministic()
    mn.config.set_deterministic(True)
    try:
        assert _base.is_deterministic()
    finally:
        mn.config.set_deterministic(False)


SOURCES = sorted(p for p in EXT.rglob("*") if p.suffix in (".pyx", ".pxd", ".h", ".py"))


@pytest.mark.parametrize("pattern, home", [
    (r"^\s*(cdef\s+\S+\s+)?_?PARALLEL_MIN\s*=", "_base.pxd"),       # the thread-team threshold
    (r"def _?set_parallel_min\b", "_base.pyx"),                       # its one test hook
    (r"^(cpdef object |def )check_array\b", "_base.pxd _base.pyx"),     # the argument check
    (r"^cdef inline int _?team\(Py_ssize_t work, int n_threads\)", "_base.pxd"),
    (r"^cdef bint _deterministic\b", "_base.pyx"),                     # the determinism flag
    (r"^cdef void gemm_blocks\(", "_blas.pxd _blas.pyx"),               # the blocked GEMM
    (r"^cdef inline floating _?exp(_nonpos)?\(floating v\)", "_fastmath.pxd"),
])
def test_the_base_is_defined_once(pattern, home):
    homes = [p.name for p in SOURCES if re.search(pattern, p.read_text(), re.M)]
    assert homes == home.split(), f"{pattern!r} is defined in {homes}; its one home is {home}"
