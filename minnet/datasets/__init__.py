"""Small data sets for learning and testing: real handwritten digits and synthetic data.

* ``load_digits()``: the UCI optical-recognition handwritten digits (1,797 8x8 images,
  shipped inside the package, no download).
* ``make_blobs(...)``: Gaussian clusters for classification.
* ``make_regression(...)``: a random linear model plus noise.

All generators use NumPy only and draw from ``seed`` or, when it is None, from
minnet's generator (seeded by ``mn.manual_seed``).
"""
import numbers
import os

import numpy as np

from minnet import _random
from minnet.datasets import (boston_housing, california_housing, cifar10, cifar100, fashion_mnist,
                             imdb, mnist, reuters, shakespeare)
from minnet.datasets._download import check_file_labels, file_hash
from minnet.config import normalize_data_format
from minnet.datasets.sequence_tasks import make_sequence_task  # noqa: F401

__all__ = ["load_digits", "make_blobs", "make_regression", "mnist", "fashion_mnist", "cifar10",
           "cifar100", "shakespeare", "imdb", "reuters", "boston_housing", "california_housing"]

_DATA_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
_DIGITS_PATH = os.path.join(_DATA_DIR, "digits.npz")
_DIGITS_N_SAMPLES = 1797
_DIGITS_N_TEST = 360
_DIGITS_SPLIT_SEED = 0
# SHA-256 of the shipped digits.npz (a file minnet itself publishes), checked on every load.
DIGITS_SHA256 = "b2dab7b501728c22e9119ad76740b2e17c77a231e42d1e592380d90886f1a05e"


def _digits_raw():
    """The shipped images (uint8 0..16, shape (1797, 8, 8)) and labels (uint8 0..9)."""
    try:
        digest = file_hash(_DIGITS_PATH, "sha256")
    except OSError as error:
        raise OSError(f"Could not read the digits data set at {_DIGITS_PATH!r} (the file ships "
                      f"with minnet; reinstall the package): {error}") from error
    if digest != DIGITS_SHA256:
        raise OSError(f"The digits data set at {_DIGITS_PATH!r} is damaged: its SHA-256 is {digest}, "
                      f"not the {DIGITS_SHA256} minnet ships; reinstall the package.")
    try:
        with np.load(_DIGITS_PATH, allow_pickle=False) as archive:
            images, labels = archive["images"], archive["labels"]
    except (OSError, KeyError, ValueError) as error:
        raise OSError(f"Could not read the digits data set at {_DIGITS_PATH!r} (the file ships "
                      f"with minnet; reinstall the package): {error}") from error
    if images.shape != (_DIGITS_N_SAMPLES, 8, 8) or labels.shape != (_DIGITS_N_SAMPLES,):
        raise OSError(f"The digits data set at {_DIGITS_PATH!r} is damaged: expected images "
                      f"(1797, 8, 8) and labels (1797,), found {images.shape} and {labels.shape}")
    if images.dtype != np.uint8 or images.max() > 16:
        raise OSError(f"The digits data set at {_DIGITS_PATH!r} is damaged: expected uint8 pixels "
                      f"0..16, found {images.dtype} up to {images.max()}")
    try:
        check_file_labels(labels, 10, _DIGITS_PATH, "digits")
    except ValueError as error:
        raise OSError(str(error)) from None
    return images, labels


def load_digits(normalize=True, data_format=None):
    """Load the UCI handwritten digits, split into a fixed training and test set.

    1,797 grey-scale 8x8 images of the digits 0-9 written by 43 people: NIST
    preprocessing counted the "on" pixels in each 4x4 block of a 32x32 bitmap, giving
    integers 0..16. The test set is a fixed random 20% (360 images, permutation with
    seed 0), so every run and every student sees the same split.

    Source: E. Alpaydin and C. Kaynak (1998), "Optical Recognition of Handwritten
    Digits", UCI Machine Learning Repository, https://doi.org/10.24432/C50P49,
    licensed CC BY 4.0 (see ``minnet/datasets/data/DIGITS_LICENSE.txt``).

    Args:
        normalize: if True (default) pixels are float32 in [0, 1] (value / 16); if
            False they are the raw uint8 counts 0..16.
        data_format: ``"channels_last"`` (N, 8, 8, 1), ``"channels_first"`` (N, 1, 8, 8),
            or None (default): the configured layout, ``mn.config.image_data_format()``.

    Returns:
        ``(x_train, y_train), (x_test, y_test)``: images in the layout and int64 labels.

    Shape:
        - x_train: ``(1437, 8, 8, 1)`` (channels_first: ``(1437, 1, 8, 8)``), y_train: ``(1437,)``
        - x_test: ``(360, 8, 8, 1)`` (channels_first: ``(360, 1, 8, 8)``), y_test: ``(360,)``

    Example:
        >>> (x_train, y_train), (x_test, y_test) = load_digits()
        >>> x_train.shape, x_train.dtype, y_test[:3].dtype
        ((1437, 8, 8, 1), dtype('float32'), dtype('int64'))
    """
    data_format = normalize_data_format(data_format)
    images, labels = _digits_raw()
    order = np.random.default_rng(_DIGITS_SPLIT_SEED).permutation(_DIGITS_N_SAMPLES)
    test, train = order[:_DIGITS_N_TEST], order[_DIGITS_N_TEST:]
    x = images[:, :, :, None] if data_format == "channels_last" else images[:, None, :, :]
    if normalize:
        x = x.astype(np.float32) / np.float32(16.0)
    y = labels.astype(np.int64)
    return (np.ascontiguousarray(x[train]), y[train]), (np.ascontiguousarray(x[test]), y[test])


def _check_positive_int(value, name):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"Invalid value for argument `{name}`: expected an int >= 1. "
                         f"Received: {name}={value!r}")
    return int(value)


def _check_non_negative_float(value, name):
    if (isinstance(value, bool) or not isinstance(value, numbers.Real)
            or not np.isfinite(value) or value < 0):
        raise ValueError(f"Invalid value for argument `{name}`: expected a finite float >= 0. "
                         f"Received: {name}={value!r}")
    return float(value)


def _generator(seed):
    if seed is None:
        return _random.generator()
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValueError(f"Invalid value for argument `seed`: expected None or an int >= 0. "
                         f"Received: seed={seed!r}")
    return np.random.default_rng(int(seed))


def make_blobs(n_samples=100, n_features=2, centers=3, cluster_std=1.0, seed=None):
    """Gaussian blobs for classification (NumPy-only cousin of scikit-learn's).

    Centers are drawn uniformly in [-10, 10]^n_features (or given); samples are spread
    as evenly as possible over the clusters and returned in shuffled order.

    Args:
        n_samples: total number of samples (int >= 1).
        n_features: number of features (int >= 1).
        centers: number of clusters (int >= 1) or an array of shape
            ``(n_centers, n_features)``.
        cluster_std: standard deviation of each cluster (float >= 0).
        seed: int seed, or None to use minnet's generator.

    Returns:
        ``(x, y)``: float32 features and int64 cluster labels.

    Shape:
        - x: ``(n_samples, n_features)``, y: ``(n_samples,)``

    Example:
        >>> x, y = make_blobs(200, n_features=2, centers=3, seed=0)
        >>> x.shape, sorted(set(y.tolist()))
        ((200, 2), [0, 1, 2])
    """
    n_samples = _check_positive_int(n_samples, "n_samples")
    n_features = _check_positive_int(n_features, "n_features")
    cluster_std = _check_non_negative_float(cluster_std, "cluster_std")
    generator = _generator(seed)
    if isinstance(centers, numbers.Integral) and not isinstance(centers, bool):
        n_centers = _check_positive_int(centers, "centers")
        center_points = generator.uniform(-10.0, 10.0, size=(n_centers, n_features))
    else:
        center_points = np.asarray(centers, dtype=np.float64)
        if center_points.ndim != 2 or center_points.shape[1] != n_features or len(center_points) < 1:
            raise ValueError(f"Invalid value for argument `centers`: expected an int >= 1 or an "
                             f"array of shape (n_centers, {n_features}). Received: centers with "
                             f"shape {center_points.shape}")
        n_centers = len(center_points)
    y = np.arange(n_samples, dtype=np.int64) % n_centers
    x = center_points[y] + cluster_std * generator.standard_normal((n_samples, n_features))
    order = generator.permutation(n_samples)
    return x[order].astype(np.float32), y[order]


def make_regression(n_samples=100, n_features=1, noise=0.0, bias=0.0, seed=None,
                    return_coef=False):
    """A random linear regression problem: ``y = x @ coef + bias + noise * N(0, 1)``.

    Args:
        n_samples: number of samples (int >= 1).
        n_features: number of features (int >= 1).
        noise: standard deviation of the Gaussian noise added to ``y`` (float >= 0).
        bias: the intercept.
        seed: int seed, or None to use minnet's generator.
        return_coef: also return the true coefficients.

    Returns:
        ``(x, y)`` float32 arrays, or ``(x, y, coef)`` when ``return_coef``. ``y`` has a
        trailing axis of size 1 so that it matches the output of ``Dense(1)``.

    Shape:
        - x: ``(n_samples, n_features)``, y: ``(n_samples, 1)``, coef: ``(n_features,)``

    Example:
        >>> x, y = make_regression(100, n_features=3, noise=0.1, seed=0)
        >>> x.shape, y.shape
        ((100, 3), (100, 1))
    """
    n_samples = _check_positive_int(n_samples, "n_samples")
    n_features = _check_positive_int(n_features, "n_features")
    noise = _check_non_negative_float(noise, "noise")
    if isinstance(bias, bool) or not isinstance(bias, numbers.Real) or not np.isfinite(bias):
        raise ValueError(f"Invalid value for argument `bias`: expected a finite float. "
                         f"Received: bias={bias!r}")
    generator = _generator(seed)
    x = generator.standard_normal((n_samples, n_features))
    coef = generator.uniform(-10.0, 10.0, size=n_features)
    y = x @ coef + float(bias)
    if noise > 0:
        y = y + noise * generator.standard_normal(n_samples)
    x, y = x.astype(np.float32), y.astype(np.float32)[:, None]
    if return_coef:
        return x, y, coef
    return x, y
