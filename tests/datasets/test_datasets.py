import numpy as np
import pytest

import minnet as mn
from minnet import _random
from minnet.datasets import load_digits, make_blobs, make_regression


def test_load_digits_shapes_types_and_ranges():
    (x_train, y_train), (x_test, y_test) = load_digits()
    assert mn.config.image_data_format() == "channels_last"
    assert x_train.shape == (1437, 8, 8, 1) and x_test.shape == (360, 8, 8, 1)
    assert x_train.dtype == np.float32 and y_train.dtype == np.int64
    assert x_train.flags.c_contiguous
    assert 0.0 <= x_train.min() and x_train.max() == 1.0
    assert set(np.unique(y_train).tolist()) == set(range(10))
    # every class is represented in the test split with a sensible share
    counts = np.bincount(y_test, minlength=10)
    assert counts.min() >= 20 and counts.sum() == 360
    # pixel values are multiples of 1/16
    np.testing.assert_array_equal(x_test * 16, np.round(x_test * 16))


def test_load_digits_split_is_fixed_and_disjoint():
    (a, ya), (b, yb) = load_digits()
    (a2, ya2), (b2, yb2) = load_digits()
    np.testing.assert_array_equal(a, a2)
    np.testing.assert_array_equal(yb, yb2)
    (raw_train, _), (raw_test, _) = load_digits(normalize=False)
    assert raw_train.dtype == np.uint8 and raw_train.max() == 16
    np.testing.assert_array_equal(raw_train.astype(np.float32) / 16, a)
    everything = np.concatenate([raw_train, raw_test]).reshape(1797, -1)
    assert len(np.unique(everything, axis=0)) > 1700  # no sample duplicated across splits


def test_load_digits_follows_the_configured_layout():
    (last, _), _ = load_digits()
    try:
        mn.config.set_image_data_format("channels_first")
        (first, y), (first_test, _) = load_digits()
    finally:
        mn.config.set_image_data_format("channels_last")
    assert first.shape == (1437, 1, 8, 8) and first_test.shape == (360, 1, 8, 8)
    assert first.flags.c_contiguous and last.flags.c_contiguous
    np.testing.assert_array_equal(first[:, 0], last[..., 0])       # same images, same order
    (explicit, _), _ = load_digits(data_format="channels_first")
    np.testing.assert_array_equal(explicit, first)
    with pytest.raises(ValueError, match="data_format"):
        load_digits(data_format="NCHW")


def test_load_digits_first_image_is_a_zero():
    # sklearn's first digit (index 0 of the csv) is a "0"; the split permutation is seed 0.
    from minnet.datasets import _digits_raw
    images, labels = _digits_raw()
    assert labels[0] == 0 and labels[1] == 1
    assert images[0, 0].tolist() == [0, 0, 5, 13, 9, 1, 0, 0]


def test_make_blobs():
    x, y = make_blobs(301, n_features=4, centers=3, cluster_std=0.5, seed=0)
    assert x.shape == (301, 4) and x.dtype == np.float32 and y.dtype == np.int64
    assert np.bincount(y).tolist() == [101, 100, 100]
    # each point is closer to its own cluster mean than to the others
    means = np.stack([x[y == k].mean(0) for k in range(3)])
    nearest = np.argmin(((x[:, None, :] - means[None]) ** 2).sum(-1), axis=1)
    assert (nearest == y).mean() > 0.95
    x2, y2 = make_blobs(301, n_features=4, centers=3, cluster_std=0.5, seed=0)
    np.testing.assert_array_equal(x, x2)
    x3, _ = make_blobs(10, n_features=2, centers=[[0, 0], [5, 5]], cluster_std=0.0, seed=1)
    assert set(map(tuple, x3.tolist())) == {(0.0, 0.0), (5.0, 5.0)}


def test_make_blobs_uses_minnet_generator_without_seed():
    _random.manual_seed(11)
    a = make_blobs(20)
    _random.manual_seed(11)
    b = make_blobs(20)
    np.testing.assert_array_equal(a[0], b[0])


def test_make_regression_is_linear_plus_noise():
    x, y, coef = make_regression(500, n_features=3, noise=0.0, bias=2.0, seed=0, return_coef=True)
    assert x.shape == (500, 3) and y.shape == (500, 1) and y.dtype == np.float32
    np.testing.assert_allclose(y[:, 0], x.astype(np.float64) @ coef + 2.0, rtol=1e-5, atol=1e-4)
    x, y, coef = make_regression(2000, n_features=2, noise=0.5, seed=1, return_coef=True)
    residual = y[:, 0] - x @ coef
    assert 0.45 < residual.std() < 0.55


@pytest.mark.parametrize("kwargs, name", [
    (dict(n_samples=0), "n_samples"), (dict(n_features=-1), "n_features"),
    (dict(centers=0), "centers"), (dict(cluster_std=-1.0), "cluster_std"),
    (dict(centers=np.zeros((2, 3))), "centers"), (dict(seed=-2), "seed"),
])
def test_make_blobs_validation(kwargs, name):
    with pytest.raises(ValueError, match=name):
        make_blobs(**kwargs)


@pytest.mark.parametrize("kwargs, name", [
    (dict(n_samples=1.5), "n_samples"), (dict(noise=-0.1), "noise"),
    (dict(noise=float("nan")), "noise"), (dict(bias="x"), "bias"),
])
def test_make_regression_validation(kwargs, name):
    with pytest.raises(ValueError, match=name):
        make_regression(**kwargs)
