import numpy as np
import pytest

from minnet import _random
from minnet.data import batches, train_validation_split


def _xy(n=10):
    return np.arange(n * 3, dtype=np.float32).reshape(n, 3), np.arange(n)


def test_batches_in_order_covers_all_samples():
    x, y = _xy(10)
    parts = list(batches(x, y, batch_size=4))
    assert [len(yb) for _, yb in parts] == [4, 4, 2]
    np.testing.assert_array_equal(np.concatenate([xb for xb, _ in parts]), x)
    np.testing.assert_array_equal(np.concatenate([yb for _, yb in parts]), y)
    assert len(batches(x, y, batch_size=4)) == 3


def test_batches_x_only_and_drop_last():
    x, _ = _xy(10)
    parts = list(batches(x, batch_size=4, drop_last=True))
    assert [p.shape for p in parts] == [(4, 3), (4, 3)]
    assert len(batches(x, batch_size=4, drop_last=True)) == 2
    assert len(list(batches(x, batch_size=100))) == 1


def test_batches_shuffle_is_a_permutation_and_seeded():
    x, y = _xy(37)
    first = np.concatenate([yb for _, yb in batches(x, y, batch_size=5, shuffle=True, seed=3)])
    again = np.concatenate([yb for _, yb in batches(x, y, batch_size=5, shuffle=True, seed=3)])
    other = np.concatenate([yb for _, yb in batches(x, y, batch_size=5, shuffle=True, seed=4)])
    assert sorted(first.tolist()) == list(range(37))
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other)
    assert not np.array_equal(first, y)
    # x and y stay paired
    for xb, yb in batches(x, y, batch_size=5, shuffle=True, seed=3):
        np.testing.assert_array_equal(xb[:, 0], yb * 3)


def test_batches_shuffle_without_seed_uses_minnet_generator():
    x, y = _xy(20)
    _random.manual_seed(7)
    a = np.concatenate([yb for _, yb in batches(x, y, batch_size=6, shuffle=True)])
    _random.manual_seed(7)
    b = np.concatenate([yb for _, yb in batches(x, y, batch_size=6, shuffle=True)])
    np.testing.assert_array_equal(a, b)
    c = np.concatenate([yb for _, yb in batches(x, y, batch_size=6, shuffle=True)])
    assert not np.array_equal(a, c)  # generator advanced: a new order for the next pass


@pytest.mark.parametrize("batch_size", [0, -3])
def test_batches_rejects_bad_batch_size(batch_size):
    x, y = _xy()
    with pytest.raises(ValueError, match="batch_size"):
        batches(x, y, batch_size=batch_size)


@pytest.mark.parametrize("batch_size", [2.5, "8", True, None])
def test_batches_rejects_non_int_batch_size(batch_size):
    x, y = _xy()
    with pytest.raises(TypeError, match="batch_size"):
        batches(x, y, batch_size=batch_size)


def test_batches_rejects_length_mismatch_empty_and_scalar():
    x, y = _xy()
    with pytest.raises(ValueError, match=r"len\(x\)=10, len\(y\)=9"):
        batches(x, y[:9])
    with pytest.raises(ValueError, match="at least one sample"):
        batches(np.zeros((0, 3)), np.zeros(0))
    with pytest.raises(ValueError, match="`x`"):
        batches(np.float32(3.0))
    with pytest.raises(ValueError, match="seed"):
        batches(x, y, shuffle=True, seed=-1)
    with pytest.raises(TypeError, match="`x`"):
        batches([[1, 2], [3]])


def test_batches_accepts_lists():
    parts = list(batches([[1, 2], [3, 4], [5, 6]], [0, 1, 0], batch_size=2))
    np.testing.assert_array_equal(parts[1][0], [[5, 6]])


def test_train_validation_split_takes_last_fraction():
    x, y = _xy(10)
    (x_tr, y_tr), (x_val, y_val) = train_validation_split(x, y, 0.2)
    np.testing.assert_array_equal(y_tr, np.arange(8))
    np.testing.assert_array_equal(y_val, [8, 9])
    np.testing.assert_array_equal(x_val, x[8:])
    (x_tr, y_tr), (x_val, y_val) = train_validation_split(x, None, 0.25)
    assert x_tr.shape == (7, 3) and x_val.shape == (3, 3) and y_tr is None


@pytest.mark.parametrize("split", [0.0, 1.0, -0.1, 1.5, "0.2", True])
def test_train_validation_split_rejects_bad_fraction(split):
    x, y = _xy(10)
    with pytest.raises(ValueError, match="validation_split"):
        train_validation_split(x, y, split)


def test_train_validation_split_rejects_too_few_samples():
    with pytest.raises(ValueError, match="leaves 0 for training and 1"):
        train_validation_split(np.zeros((1, 2)), np.zeros(1), 0.3)
