"""datasets.make_sequence_task: shapes, determinism, the adding target, the copy layout."""
import numpy as np
import pytest

from minnet import datasets


def test_adding_problem():
    x, y = datasets.make_sequence_task("adding", 64, seq_len=30, seed=1)
    assert x.shape == (64, 30, 2) and y.shape == (64, 1) and x.dtype == np.float32
    np.testing.assert_array_equal(x[..., 1].sum(axis=1), 2.0)
    np.testing.assert_allclose(y[:, 0], (x[..., 0] * x[..., 1]).sum(axis=1), rtol=1e-6)
    assert (x[:, :15, 1].sum(axis=1) == 1).all()          # one marker in each half
    x2, y2 = datasets.make_sequence_task("adding", 64, seq_len=30, seed=1)
    np.testing.assert_array_equal(x, x2)
    assert not np.array_equal(x, datasets.make_sequence_task("adding", 64, 30, seed=2)[0])


def test_copy_problem():
    x, y = datasets.make_sequence_task("copy", 5, seq_len=7, seed=0, copy_length=4, n_symbols=3)
    assert x.shape == y.shape == (5, 15)
    np.testing.assert_array_equal(y[:, -4:], x[:, :4])
    assert ((x[:, :4] >= 1) & (x[:, :4] <= 3)).all()
    np.testing.assert_array_equal(x[:, 10], 4)              # delimiter at copy_length + seq_len - 1
    np.testing.assert_array_equal(y[:, :-4], 0)


def test_bad_arguments():
    with pytest.raises(ValueError, match="task"):
        datasets.make_sequence_task("reverse")
    with pytest.raises(ValueError, match="seq_len"):
        datasets.make_sequence_task("adding", 4, seq_len=1)
    with pytest.raises(ValueError, match="seed"):
        datasets.make_sequence_task("copy", 4, seed=-1)
