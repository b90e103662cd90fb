import numpy as np
import pytest

import minnet as mn


def test_set_and_get_num_threads():
    old = mn.get_num_threads()
    try:
        mn.set_num_threads(1)
        assert mn.get_num_threads() == 1
        mn.set_num_threads(2)
        assert mn.get_num_threads() == 2
    finally:
        mn.set_num_threads(old)


@pytest.mark.parametrize("bad", [0, -3, 1.5, "2", True])
def test_set_num_threads_rejects_bad_values(bad):
    with pytest.raises((TypeError, ValueError), match="`n`"):
        mn.set_num_threads(bad)


def test_show_config_reports_build(capsys):
    mn.show_config()
    out = capsys.readouterr().out
    assert out.startswith(f"minnet {mn.__version__}")
    assert "OpenMP:" in out and "BLAS (scipy):" in out and "threads:" in out
    cfg = mn._config.config_dict()
    assert isinstance(cfg["openmp"], bool)
    assert cfg["num_threads"] == mn.get_num_threads()


def test_scipy_blas_pinned_to_one_thread():
    mn.get_num_threads()
    counts = mn._config._get_blas_threads()
    scipy_libs = {k: v for k, v in counts.items() if k.startswith("scipy")}
    if not scipy_libs:
        pytest.skip("scipy's OpenBLAS not found (another BLAS)")
    assert all(v == 1 for v in scipy_libs.values())


def test_manual_seed_reproducible_and_validated():
    mn.manual_seed(3)
    a = mn._random.generator().random(4)
    k1 = mn._random.dropout_key(10)
    mn.manual_seed(3)
    np.testing.assert_array_equal(a, mn._random.generator().random(4))
    assert mn._random.dropout_key(10) == k1
    assert mn._random.dropout_key(5)[1] == k1[1] + 10
    with pytest.raises(ValueError, match="`seed`"):
        mn.manual_seed(-1)
