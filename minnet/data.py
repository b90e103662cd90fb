"""Mini-batches and train/validation splits over NumPy arrays.

``batches`` is the one batch iterator behind ``Sequential.fit``, ``evaluate`` and
``predict``, and the one a PyTorch-style loop uses::

    for xb, yb in mn.data.batches(x, y, batch_size=32, shuffle=True, seed=0):
        ...

Shuffling draws its permutation from a ``numpy.random.Generator`` seeded with
``seed`` or, when ``seed`` is None, from minnet's own generator
(``minnet._random.generator()``, seeded by ``mn.manual_seed``). NumPy's global RNG is
never touched.
"""
import numbers

import numpy as np

from minnet import _random

__all__ = ["batches", "Batches", "train_validation_split", "as_array"]


def as_array(value, name):
    """Return ``value`` as an ndarray (Tensors are unwrapped, lists converted).

    Args:
        value: an ndarray, an ``mn.Tensor`` or anything ``np.asarray`` accepts.
        name: the argument name used in error messages.

    Returns:
        np.ndarray: ``value`` itself when it already is one (no copy).
    """
    if isinstance(value, np.ndarray):
        return value
    data = getattr(value, "data", None)
    if isinstance(data, np.ndarray) and hasattr(value, "requires_grad"):  # an mn.Tensor
        return data
    try:
        array = np.asarray(value)
    except (ValueError, TypeError) as error:
        raise TypeError(f"Invalid value for argument `{name}`: expected an array-like. "
                        f"Received: {name} of type {type(value).__name__} ({error})") from None
    if array.dtype == object:
        raise TypeError(f"Invalid value for argument `{name}`: expected a numeric array-like. "
                        f"Received: {name} of type {type(value).__name__} that converts to an "
                        f"object array (ragged lists?)")
    return array


def _check_batch_size(batch_size):
    if isinstance(batch_size, bool) or not isinstance(batch_size, numbers.Integral):
        raise TypeError(f"Invalid value for argument `batch_size`: expected an int >= 1. "
                        f"Received: batch_size={batch_size!r}")
    if batch_size < 1:
        raise ValueError(f"Invalid value for argument `batch_size`: expected an int >= 1. "
                         f"Received: batch_size={batch_size!r}")
    return int(batch_size)


def _check_seed(seed):
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValueError(f"Invalid value for argument `seed`: expected None or an int >= 0. "
                         f"Received: seed={seed!r}")
    return int(seed)


def _check_xy(x, y):
    x = as_array(x, "x")
    if x.ndim == 0:
        raise ValueError(f"Invalid value for argument `x`: expected an array with a batch "
                         f"dimension (ndim >= 1). Received: x with shape {x.shape}")
    if len(x) == 0:
        raise ValueError(f"Invalid value for argument `x`: expected at least one sample. "
                         f"Received: x with shape {x.shape}")
    if y is not None:
        y = as_array(y, "y")
        if y.ndim == 0:
            raise ValueError(f"Invalid value for argument `y`: expected an array with a batch "
                             f"dimension (ndim >= 1). Received: y with shape {y.shape}")
        if len(y) != len(x):
            raise ValueError(f"Arguments `x` and `y` must have the same number of samples. "
                             f"Received: len(x)={len(x)}, len(y)={len(y)}")
    return x, y


class Batches:
    """An iterable of mini-batches; see ``batches``.

    ``len(Batches)`` is the number of batches per pass. Each ``iter()`` starts a new
    pass; with ``shuffle=True`` each pass draws a new permutation from the generator.
    """

    def __init__(self, x, y=None, batch_size=32, shuffle=False, seed=None, drop_last=False,
                 sample_weight=None):
        self.x, self.y = _check_xy(x, y)
        self.batch_size = _check_batch_size(batch_size)
        self.shuffle = bool(shuffle)
        self.drop_last = bool(drop_last)
        self.sample_weight = None
        if sample_weight is not None:
            sample_weight = as_array(sample_weight, "sample_weight")
            if sample_weight.shape != (len(self.x),):
                raise ValueError(f"Invalid value for argument `sample_weight`: expected shape "
                                 f"({len(self.x)},) (one weight per sample). Received: "
                                 f"sample_weight with shape {sample_weight.shape}")
            self.sample_weight = sample_weight
        seed = _check_seed(seed)
        self._generator = np.random.default_rng(seed) if seed is not None else None

    @property
    def n_samples(self):
        return len(self.x)

    def __len__(self):
        n = self.n_samples
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def __iter__(self):
        n = self.n_samples
        order = None
        if self.shuffle:
            generator = self._generator if self._generator is not None else _random.generator()
            order = generator.permutation(n)
        for step in range(len(self)):
            start = step * self.batch_size
            stop = min(start + self.batch_size, n)
            index = slice(start, stop) if order is None else order[start:stop]
            parts = [self.x[index]]
            if self.y is not None:
                parts.append(self.y[index])
            if self.sample_weight is not None:
                parts.append(self.sample_weight[index])
            yield parts[0] if len(parts) == 1 else tuple(parts)

    def __repr__(self):
        return (f"Batches(n_samples={self.n_samples}, batch_size={self.batch_size}, "
                f"shuffle={self.shuffle}, drop_last={self.drop_last}, n_batches={len(self)})")


def batches(x, y=None, batch_size=32, shuffle=False, seed=None, drop_last=False):
    """Iterate over ``(x, y)`` in mini-batches.

    Arguments are checked when ``batches`` is called, not at the first ``next()``.

    Args:
        x: inputs, an array-like whose first axis is the sample axis.
        y: optional targets with the same number of samples as ``x``.
        batch_size: samples per batch (int >= 1); the last batch may be smaller.
        shuffle: draw a new random order for each pass over the data.
        seed: int seed for the shuffling generator; None uses minnet's generator
            (seeded by ``mn.manual_seed``).
        drop_last: skip the last batch when it is smaller than ``batch_size``.

    Returns:
        Batches: an iterable (with ``len``) yielding ``(xb, yb)`` ndarray pairs, or
        ``xb`` alone when ``y`` is None.

    Shape:
        - x: ``(N, *)``, y: ``(N, *)``
        - xb: ``(B, *)``, yb: ``(B, *)`` with ``B <= batch_size``

    Example:
        >>> x, y = np.arange(10.0).reshape(5, 2), np.arange(5)
        >>> [yb.tolist() for _, yb in batches(x, y, batch_size=2)]
        [[0, 1], [2, 3], [4]]
    """
    return Batches(x, y, batch_size=batch_size, shuffle=shuffle, seed=seed, drop_last=drop_last)


def train_validation_split(x, y, validation_split):
    """Split off the LAST ``validation_split`` fraction of the samples (Keras semantics).

    The split happens before any shuffling, so the validation set is always the same
    samples; shuffle your data first if it is sorted (e.g. by class).

    Args:
        x: inputs, an array-like with the sample axis first.
        y: targets with the same number of samples (or None).
        validation_split: float in (0, 1), the fraction held out for validation.

    Returns:
        ``((x_train, y_train), (x_val, y_val))``; views of the inputs, not copies.

    Shape:
        - x_train: ``(T, *)``, x_val: ``(N - T, *)`` with
          ``T = floor(N * (1 - validation_split))`` (as Keras); each side needs a sample

    Example:
        >>> (x_tr, y_tr), (x_val, y_val) = train_validation_split(np.zeros((10, 3)), np.arange(10), 0.2)
        >>> y_val.tolist()
        [8, 9]
    """
    x, y = _check_xy(x, y)
    if (isinstance(validation_split, bool) or not isinstance(validation_split, numbers.Real)
            or not 0.0 < float(validation_split) < 1.0):
        raise ValueError(f"Invalid value for argument `validation_split`: expected a float in "
                         f"(0, 1). Received: validation_split={validation_split!r}")
    n = len(x)
    n_train = int(n * (1.0 - float(validation_split)))
    n_val = n - n_train
    if n_train < 1 or n_val < 1:
        raise ValueError(f"Invalid value for argument `validation_split`: splitting {n} samples "
                         f"with validation_split={validation_split} leaves {n_train} for training "
                         f"and {n_val} for validation; each needs at least one sample")
    x_train, x_val = x[:n_train], x[n_train:]
    if y is None:
        return (x_train, None), (x_val, None)
    return (x_train, y[:n_train]), (x_val, y[n_train:])
