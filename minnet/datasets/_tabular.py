"""Keras's regression tables ``boston_housing.npz`` and ``california_housing.npz``: float
arrays ``x`` (n, features) and ``y`` (n,), read without pickle, shuffled with
``np.random.RandomState(seed)`` and split by ``test_split``, as Keras does."""
import numpy as np

from minnet._checks import check_float
from minnet.datasets._download import fetch

__all__ = ["load_table"]


def load_table(name, origin, sha256, features, path, test_split, seed, rows=None):
    test_split = check_float("test_split", test_split, low=0.0, high=1.0, high_open=True)
    local = fetch(f"{name}.npz", origin, "sha256", sha256, name, path=path)
    try:
        with np.load(local, allow_pickle=False) as archive:
            x, y = archive["x"], archive["y"]
    except (OSError, KeyError, ValueError) as error:
        raise ValueError(f"{local!r} is not a {name}.npz file (arrays x and y): {error}") from None
    if x.ndim != 2 or x.shape[1] != features or y.shape != (x.shape[0],) or \
            x.dtype.kind != "f" or y.dtype.kind != "f":
        raise ValueError(f"{local!r} is damaged or not the right data set: expected float x of "
                         f"shape (n, {features}) and y of shape (n,); found {x.dtype} "
                         f"{x.shape} and {y.dtype} {y.shape}.")
    if rows is not None:
        x, y = x[:rows], y[:rows]
    indices = np.arange(len(x))
    np.random.RandomState(seed).shuffle(indices)
    x, y = x[indices], y[indices]
    cut = int(len(x) * (1 - test_split))
    return (np.array(x[:cut]), np.array(y[:cut])), (np.array(x[cut:]), np.array(y[cut:]))
