"""Data adapters: every data source ``fit``/``evaluate``/``predict`` accept, as batches.

A batch is what ``train_step(data)`` receives, as Keras 3 hands it over: for arrays,
``pack_x_y_sample_weight(x, y, sample_weight)`` (``(x, y)`` without weights, ``x`` alone
without targets), for other sources the batch as the source yields it
(``mn.utils.unpack_x_y_sample_weight`` takes it apart). The sources:

- arrays (and lists/dicts of arrays for several inputs or outputs): ``ArrayDataAdapter``
  slices them, shuffled per epoch (the permutation is drawn from
  ``numpy.random.default_rng([seed, epoch])``, or from minnet's generator when no seed);
- ``mn.utils.PyDataset`` (``__len__``, ``__getitem__``, ``on_epoch_end``):
  ``PyDatasetAdapter``;
- Python generators, iterators and other iterables of batches (a PyTorch ``DataLoader``,
  any object whose ``__iter__`` yields batches): ``GeneratorDataAdapter``. A plain list is
  not one: as in Keras 3, a list is read as a list of inputs, and a list of ``(x, y)`` tuples
  is refused with a message saying what to pass instead. Each batch is ``x``, ``(x,)``,
  ``(x, y)`` or ``(x, y, sample_weight)``; anything with a ``.numpy()`` method (a torch
  tensor) is converted (duck-typed: minnet never imports torch for it).

This module is the boundary where a foreign source is recognised (``is_dataset``,
``dataset_adapter``) and wrapped: past it, the epoch iterator and the distributed step ask
only the ``DataAdapter`` protocol (docs/internals.md), never the source itself.
"""
import collections
import collections.abc
import concurrent.futures
import warnings
import weakref

import numpy as np

from minnet import _random
from minnet.autograd import Tensor
from minnet.data import as_array
from minnet.utils import pack_x_y_sample_weight, unpack_x_y_sample_weight

__all__ = ["unpack_x_y_sample_weight", "pack_x_y_sample_weight", "to_numpy", "leaf_data",
           "is_array_data", "is_dataset", "dataset_adapter", "DataAdapter", "ArrayDataAdapter",
           "GeneratorDataAdapter", "PyDatasetAdapter", "flat_leaves", "pack_leaves"]


def to_numpy(value):
    """Leaves with ``.numpy()`` (torch tensors, ``mn.Tensor``) become ndarrays; structures kept."""
    if value is None or isinstance(value, np.ndarray):
        return value
    if isinstance(value, dict):
        return {key: to_numpy(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(to_numpy(item) for item in value)
    if hasattr(value, "numpy"):
        # torch: a tensor that requires grad or lives on a GPU needs detach()/cpu() first.
        if hasattr(value, "detach"):
            value = value.detach()
        if hasattr(value, "cpu"):
            value = value.cpu()
        return np.asarray(value.numpy())
    return value


def leaf_data(value):
    """A Tensor's ndarray; any other value as it is."""
    return value.data if isinstance(value, Tensor) else value


def is_array_data(value):
    """True for an ndarray/Tensor/array-like, or a list/tuple/dict made only of them."""
    if value is None:
        return True
    if isinstance(value, np.ndarray):
        return True
    if isinstance(value, dict):
        return all(is_array_data(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return True
    if isinstance(value, Tensor):
        return True
    return hasattr(value, "__array__") or hasattr(value, "shape")     # a foreign array-like


def _indexable(value):
    return hasattr(value, "__getitem__") and isinstance(value, collections.abc.Sized)


def is_dataset(value):
    """A data source other than arrays: a PyDataset, a generator or an iterable of batches."""
    if isinstance(value, (dict, str, bytes)) or is_array_data(value):
        return False
    return _indexable(value) or isinstance(value, collections.abc.Iterable)


def dataset_adapter(source, shuffle, seed):
    """The adapter of a non-array source (``is_dataset``), chosen once, here: ``len`` and
    ``[i]`` without being an iterator (and with ``on_epoch_end`` when it also iterates, as
    Keras's PyDataset) -> ``PyDatasetAdapter``; anything else iterable ->
    ``GeneratorDataAdapter``."""
    if _indexable(source) and not isinstance(source, collections.abc.Iterator) and (
            hasattr(source, "on_epoch_end") or not isinstance(source, collections.abc.Iterable)):
        return PyDatasetAdapter(source, shuffle=shuffle, seed=seed)
    return GeneratorDataAdapter(source)


def flat_leaves(structure):
    """Leaves of an array structure (dicts in key order); None stays None."""
    if isinstance(structure, dict):
        return [structure[key] for key in sorted(structure)]
    if isinstance(structure, (list, tuple)):
        return list(structure)
    return [structure]


def pack_leaves(structure, leaves):
    """Leaves back in ``structure``'s form (the inverse of ``flat_leaves``)."""
    if isinstance(structure, dict):
        return dict(zip(sorted(structure), leaves))
    if isinstance(structure, (list, tuple)):
        return list(leaves)
    return leaves[0]


class DataAdapter:
    """What the epoch iterator and the distributed step ask of a data source (the defaults).

    A subclass yields the batches of an epoch (``epoch_batches``) and says how many there
    are (``num_batches``, None when unknown); the rest has defaults: no shuffling, a source
    that restarts every epoch (``one_shot = False``), nothing to do at an epoch end, and
    no batches to keep when an epoch stops early (``give_back``).
    """

    prefetch_default = False    # read the next batch on a thread while a step runs
    shuffle = False
    seed = None
    one_shot = False            # True: an iterator that continues where it stopped

    @property
    def num_batches(self):
        raise NotImplementedError

    def epoch_batches(self, epoch, shuffle=None):
        raise NotImplementedError

    def give_back(self, batches):
        """Keep ``batches`` drawn ahead but not used (a one-shot source); default: drop them."""

    def on_epoch_end(self):
        """Called after every epoch."""


class ArrayDataAdapter(DataAdapter):
    """Batches sliced from in-memory arrays (or lists/dicts of arrays).

    Args:
        x, y, sample_weight: arrays, or structures of arrays with one first axis length.
        batch_size: samples per batch; the last batch may be smaller.
        shuffle: a new permutation per epoch.
        seed: None (minnet's generator) or an int: epoch ``e`` uses ``default_rng([seed, e])``.
    """

    def __init__(self, x, y=None, sample_weight=None, batch_size=32, shuffle=False, seed=None):
        self.x, self.y, self.sample_weight = x, y, sample_weight
        self._x_leaves = flat_leaves(x)
        self._y_leaves = None if y is None else flat_leaves(y)
        self._single = not isinstance(x, (list, tuple, dict)) and not isinstance(y, (list, tuple, dict))
        self.n_samples = len(self._x_leaves[0])
        self.batch_size = batch_size
        self.shuffle = bool(shuffle)
        self.seed = seed

    @property
    def num_batches(self):
        return -(-self.n_samples // self.batch_size)

    def _slice(self, index):
        w = None if self.sample_weight is None else self.sample_weight[index]
        if self._single:
            return pack_x_y_sample_weight(self.x[index], None if self.y is None else self.y[index], w)
        xb = pack_leaves(self.x, [leaf[index] for leaf in self._x_leaves])
        yb = None if self.y is None else pack_leaves(self.y, [leaf[index] for leaf in self._y_leaves])
        return pack_x_y_sample_weight(xb, yb, w)

    def epoch_batches(self, epoch, shuffle=None):
        """The batches of one epoch, in order (shuffled when the adapter shuffles)."""
        shuffle = self.shuffle if shuffle is None else shuffle
        n, size = self.n_samples, self.batch_size
        order = None
        if shuffle:
            generator = (np.random.default_rng([self.seed, epoch]) if self.seed is not None
                         else _random.generator())
            order = generator.permutation(n)
        for start in range(0, n, size):
            stop = min(start + size, n)
            yield self._slice(slice(start, stop) if order is None else order[start:stop])


class PyDatasetAdapter(DataAdapter):
    """Batches from a ``PyDataset``: ``dataset[i]`` for ``i`` in ``range(len(dataset))``.

    ``on_epoch_end()`` is called after every epoch; with ``shuffle=True`` the batch order is
    a new permutation each epoch (the items themselves are what ``__getitem__`` returns).
    Any object with ``len`` and ``[i]`` is accepted (a Keras PyDataset, a torch Dataset of
    batches): its options ``workers``, ``max_queue_size`` and ``on_epoch_end``, where it has
    them, are read once, here.
    """

    prefetch_default = True

    def __init__(self, dataset, shuffle=False, seed=None):
        self.dataset = dataset
        self.shuffle = bool(shuffle)
        self.seed = seed
        workers = getattr(dataset, "workers", 1)
        self._workers = workers if isinstance(workers, int) else 1
        self._queue_size = getattr(dataset, "max_queue_size", 10)
        self._epoch_end = getattr(dataset, "on_epoch_end", None)

    @property
    def num_batches(self):
        return len(self.dataset)

    def epoch_batches(self, epoch, shuffle=None):
        shuffle = self.shuffle if shuffle is None else shuffle
        n = len(self.dataset)
        order = range(n)
        if shuffle:
            generator = (np.random.default_rng([self.seed, epoch]) if self.seed is not None
                         else _random.generator())
            order = generator.permutation(n).tolist()
        if self._workers <= 1:
            for index in order:
                yield to_numpy(self.dataset[index])
            return
        yield from self._parallel_batches(order, self._workers, self._queue_size)

    def _parallel_batches(self, order, workers, depth):
        """``dataset[i]`` read by ``workers`` threads, at most ``depth`` ahead, yielded in order."""
        depth = max(int(depth) if isinstance(depth, int) else 10, workers)
        pending = collections.deque()
        indices = iter(order)
        with concurrent.futures.ThreadPoolExecutor(workers, thread_name_prefix="minnet-pydataset") as pool:
            try:
                for index in indices:
                    pending.append(pool.submit(self.dataset.__getitem__, index))
                    if len(pending) >= depth:
                        yield to_numpy(pending.popleft().result())
                while pending:
                    yield to_numpy(pending.popleft().result())
            finally:
                for future in pending:
                    future.cancel()

    def on_epoch_end(self):
        if self._epoch_end is not None:
            self._epoch_end()


class GeneratorDataAdapter(DataAdapter):
    """Batches from a generator, an iterator or a re-iterable (a DataLoader).

    A one-shot iterator (a generator: ``iter(g) is g``) continues where it stopped at the next
    epoch; a re-iterable restarts. ``num_batches`` is ``len(source)`` when it has one.
    """

    prefetch_default = True

    def __init__(self, source):
        self.source = source
        try:
            self.one_shot = iter(source) is source
        except TypeError:
            raise TypeError(f"Invalid value for argument `x`: expected arrays, a PyDataset, a "
                            f"generator or an iterable of batches. Received: {type(source).__name__}") from None
        self._iterator = None

    @property
    def num_batches(self):
        try:
            return len(self.source)
        except TypeError:
            return None

    def iterator(self, restart):
        """The iterator to draw from: the same one across epochs for one-shot sources."""
        if self.one_shot:
            return self.source
        if restart or self._iterator is None:
            self._iterator = iter(self.source)
        return self._iterator

    def epoch_batches(self, epoch, shuffle=None):
        if self.one_shot:
            while True:         # batches handed back by an earlier call come first
                handed = _HANDED_BACK.get(self.source) if _weakref_able(self.source) else None
                if not handed:
                    break
                yield handed.popleft()
        for batch in self.iterator(restart=True):
            yield to_numpy(batch)

    def give_back(self, batches):
        """Keep ``batches`` (drawn from a one-shot source, never used) for the next call that
        reads this source; a re-iterable restarts anyway, so nothing is kept for it."""
        if not self.one_shot or not batches:
            return
        if not _weakref_able(self.source):
            warnings.warn(f"{len(batches)} batch(es) drawn ahead from this "
                          f"{type(self.source).__name__} were not used and cannot be handed back "
                          f"(it cannot be weakly referenced); pass a generator to keep them.",
                          UserWarning, stacklevel=2)
            return
        kept = _HANDED_BACK.setdefault(self.source, collections.deque())
        kept.extendleft(reversed(batches))


# Batches drawn ahead from a one-shot source and not used, by source (weakly: they go with it).
_HANDED_BACK = weakref.WeakKeyDictionary()


def _weakref_able(source):
    try:
        weakref.ref(source)
    except TypeError:
        return False
    return True


def as_array_structure(value, name, structured):
    """``value`` as an ndarray, or (``structured``) a list/dict of ndarrays."""
    if value is None:
        return None
    if structured and isinstance(value, dict):
        return {key: as_array(item, f"{name}[{key!r}]") for key, item in value.items()}
    if structured and isinstance(value, (list, tuple)):
        return [as_array(item, f"{name}[{i}]") for i, item in enumerate(value)]
    return as_array(value, name)
