"""Keras's general utilities: labels to one-hot, seeding, the PyDataset protocol, batch tuples."""
import numbers
import random

import numpy as np

from minnet import _random
from minnet._checks import check_int, invalid
from minnet._naming import reset_names

__all__ = ["to_categorical", "set_random_seed", "PyDataset", "unpack_x_y_sample_weight",
           "pack_x_y_sample_weight", "clear_session"]


def clear_session(free_memory=True):
    """Reset the automatic layer and model names, as ``keras.utils.clear_session()``: the next
    ``Dense`` is named ``dense`` again. Models that exist keep their names and weights.

    Args:
        free_memory: accepted for Keras's signature (minnet keeps no graph between calls, so
            there is nothing else to free).
    """
    reset_names()


def to_categorical(x, num_classes=None):
    """Integer class labels to one-hot rows (float32), as ``keras.utils.to_categorical``.

    Args:
        x: array-like of integer labels in ``[0, num_classes)`` (a trailing axis of size 1
            is dropped, as Keras does).
        num_classes: number of classes; default ``max(x) + 1``.

    Returns:
        float32 array of shape ``x.shape + (num_classes,)``.

    Example:
        >>> to_categorical([0, 2], num_classes=3)
        array([[1., 0., 0.],
               [0., 0., 1.]], dtype=float32)
    """
    labels = np.asarray(x)
    if labels.dtype.kind == "f":
        if labels.size and (not np.all(np.isfinite(labels)) or np.any(labels != np.round(labels))):
            raise invalid("x", "integer class labels", "an array of non-integer floats")
        labels = labels.astype(np.int64)
    elif labels.dtype.kind not in "iu" or labels.dtype == np.uint64 and labels.size \
            and labels.max() > np.iinfo(np.int64).max:
        raise TypeError(f"Invalid value for argument `x`: expected integer class labels. Received: "
                        f"x with dtype {labels.dtype}")
    labels = labels.astype(np.int64)
    shape = labels.shape
    if len(shape) > 1 and shape[-1] == 1:
        shape = shape[:-1]
        labels = labels.reshape(shape)
    if num_classes is None:
        if labels.size == 0:
            raise ValueError("Invalid value for argument `num_classes`: it is required when `x` is "
                             "empty. Received: num_classes=None")
        num_classes = int(labels.max()) + 1
    num_classes = check_int("num_classes", num_classes, 1)
    if labels.size and (labels.min() < 0 or labels.max() >= num_classes):
        bad = int(np.flatnonzero((labels.reshape(-1) < 0) | (labels.reshape(-1) >= num_classes))[0])
        raise ValueError(f"Invalid value for argument `x`: expected labels in [0, {num_classes}). "
                         f"Received: label {int(labels.reshape(-1)[bad])} at flat index {bad}")
    out = np.zeros(labels.shape + (num_classes,), dtype=np.float32)
    np.put_along_axis(out, labels[..., None], 1.0, axis=-1)
    return out


def set_random_seed(seed):
    """Seed every random generator a Keras script relies on: Python's ``random``, NumPy's
    global generator and minnet's own (``mn.manual_seed``: initialisers, dropout, shuffling).

    Args:
        seed: an int >= 0.
    """
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or not 0 <= seed < 2 ** 32:
        raise invalid("seed", "an int in [0, 2**32)", seed, TypeError
                      if not isinstance(seed, numbers.Integral) or isinstance(seed, bool) else ValueError)
    seed = int(seed)
    random.seed(seed)
    np.random.seed(seed)     # as Keras does: the user asked for every generator to be seeded
    _random.manual_seed(seed)


class PyDataset:
    """Base class for a dataset of batches, as ``keras.utils.PyDataset``.

    Subclass it and define ``__len__`` (the number of batches) and ``__getitem__(index)``
    (batch ``index``: ``x``, ``(x, y)`` or ``(x, y, sample_weight)``); optionally
    ``on_epoch_end()`` (called after each epoch, e.g. to reshuffle). ``fit`` reads it batch
    by batch, in a background thread while the previous step computes.

    Args:
        workers: threads that call ``__getitem__`` at once (Keras's meaning with
            ``use_multiprocessing=False``): with ``workers > 1``, up to ``max_queue_size``
            batches are read ahead in parallel and handed to the model in index order.
        use_multiprocessing: must be False. Keras then reads batches in worker processes;
            minnet refuses it, because a fork()ed worker cannot use the OpenMP thread pool
            and a spawned one must re-import the dataset (use ``workers=`` threads, which
            share the dataset and release the GIL in NumPy code).
        max_queue_size: how many batches may be read ahead (an int >= 1).

    Example:
        >>> class Batches(mn.utils.PyDataset):
        ...     def __init__(self, x, y, batch_size):
        ...         super().__init__()
        ...         self.x, self.y, self.batch_size = x, y, batch_size
        ...     def __len__(self):
        ...         return -(-len(self.x) // self.batch_size)
        ...     def __getitem__(self, i):
        ...         s = slice(i * self.batch_size, (i + 1) * self.batch_size)
        ...         return self.x[s], self.y[s]
    """

    def __init__(self, workers=1, use_multiprocessing=False, max_queue_size=10):
        self.workers = check_int("workers", workers, 1)
        if use_multiprocessing:
            raise ValueError(f"Invalid value for argument `use_multiprocessing`: minnet's PyDataset "
                             f"reads batches in threads, not processes (a forked process cannot "
                             f"use minnet's OpenMP thread pool); pass use_multiprocessing=False and "
                             f"workers=N for N reading threads. Received: "
                             f"use_multiprocessing={use_multiprocessing!r}")
        self.use_multiprocessing = False
        self.max_queue_size = check_int("max_queue_size", max_queue_size, 1)

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__(index) returning a "
                                  f"batch.")

    def __len__(self):
        raise NotImplementedError(f"{type(self).__name__} must define __len__() (number of batches).")

    @property
    def num_batches(self):
        return len(self)

    def on_epoch_end(self):
        """Called after every epoch (override to reshuffle)."""


def unpack_x_y_sample_weight(data):
    """``(x, y, sample_weight)`` from a batch: ``x``, ``(x,)``, ``(x, y)`` or ``(x, y, w)``
    (missing parts are None); lists are read as tuples.

    Example:
        >>> x, y, w = unpack_x_y_sample_weight((xb, yb))      # w is None
    """
    if isinstance(data, list):
        data = tuple(data)
    if not isinstance(data, tuple):
        return data, None, None
    if len(data) == 1:
        return data[0], None, None
    if len(data) == 2:
        return data[0], data[1], None
    if len(data) == 3:
        return data[0], data[1], data[2]
    raise ValueError(f"Data is expected to be x, (x,), (x, y) or (x, y, sample_weight). Received a "
                     f"tuple of length {len(data)}")


def pack_x_y_sample_weight(x, y=None, sample_weight=None):
    """The inverse of ``unpack_x_y_sample_weight`` (Keras's rule): ``x`` itself when ``y`` is
    None and ``x`` is not a tuple/list (else ``(x,)``), ``(x, y)``, or ``(x, y, w)``."""
    if y is None:
        return x if not isinstance(x, (tuple, list)) else (x,)
    if sample_weight is None:
        return (x, y)
    return (x, y, sample_weight)
