"""The epoch iterator: how many steps an epoch has, where its batches come from, prefetching.

``EpochIterator.epoch(epoch)`` yields ``(step, batch)``:

- without ``steps_per_epoch`` an epoch is one pass over the source (arrays, a PyDataset, a
  re-iterable such as a DataLoader); a generator without a length is refused by ``fit``
  because it may never end;
- with ``steps_per_epoch`` an epoch is that many batches; a one-shot generator continues
  where the last epoch stopped, and an array source or re-iterable that runs out first
  ends the epoch there with a warning (and ``exhausted`` is set so that ``fit`` stops,
  as Keras does).

With ``prefetch`` a background thread draws the next batches while the current step
computes (for slow sources: generators, PyDataset, DataLoader). It never draws more than
``depth`` batches ahead; a batch drawn but not used in an epoch is kept for the next one,
so the order of batches is the same with and without prefetching.
"""
import queue
import threading
import warnings

from minnet import config

__all__ = ["EpochIterator", "Prefetcher"]

_ITEM, _END, _ERROR = 0, 1, 2


class Prefetcher:
    """Draws from ``iterator`` in a daemon thread into a bounded queue.

    Args:
        iterator: any iterator.
        depth: how many batches may wait in the queue.
    """

    def __init__(self, iterator, depth=2):
        self._iterator = iterator
        self._queue = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="minnet-prefetch", daemon=True)
        self._finished = False
        self._thread.start()

    def _put(self, item):
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def _run(self):
        try:
            for batch in self._iterator:
                if not self._put((_ITEM, batch)):
                    return
            self._put((_END, None))
        except BaseException as error:  # noqa: BLE001 - handed to the consumer, re-raised there
            self._put((_ERROR, error))

    def __iter__(self):
        return self

    def __next__(self):
        if self._finished:
            raise StopIteration
        kind, value = self._queue.get()
        if kind == _ITEM:
            return value
        self._finished = True
        if kind == _ERROR:
            raise value
        raise StopIteration

    def close(self):
        self._stop.set()
        self._thread.join(timeout=5)


class EpochIterator:
    """Steps of each epoch over a data adapter.

    Args:
        adapter: an adapter from ``data_adapters``.
        steps_per_epoch: None (one pass) or the number of batches per epoch.
        prefetch: draw batches in a background thread (default: the adapter's choice,
            off for arrays).
        prepare: optional function applied to every batch (in the prefetch thread when on).
        stacklevel: ``warnings`` stack level of the user's call.
    """

    def __init__(self, adapter, steps_per_epoch=None, prefetch=None, prepare=None, stacklevel=4):
        self.adapter = adapter
        steps_per_epoch = config.capped_steps_per_epoch(steps_per_epoch)   # set_max_steps_per_epoch
        self.steps_per_epoch = steps_per_epoch
        self.prefetch = adapter.prefetch_default if prefetch is None else bool(prefetch)
        self.prepare = prepare
        self.exhausted = False
        self.stacklevel = stacklevel
        self._persistent = None        # the iterator kept across epochs (steps_per_epoch set)
        self._prefetcher = None

    @property
    def num_steps(self):
        """Steps per epoch, or None when unknown until the source ends."""
        if self.steps_per_epoch is not None:
            return self.steps_per_epoch
        return self.adapter.num_batches

    def _prepared(self, batches):
        prepare = self.prepare
        if prepare is None:
            return batches
        return (prepare(batch) for batch in batches)

    def _source(self, epoch):
        """The iterator of batches for this epoch (a persistent one with steps_per_epoch)."""
        one_shot = getattr(self.adapter, "one_shot", False)
        if self.steps_per_epoch is not None and one_shot:
            if self._persistent is None:
                self._persistent = self._start(self._prepared(self.adapter.epoch_batches(epoch)))
            return self._persistent
        return self._start(self._prepared(self.adapter.epoch_batches(epoch)))

    def _start(self, iterator):
        if not self.prefetch:
            return iter(iterator)
        prefetcher = Prefetcher(iterator)
        self._prefetcher = prefetcher
        return prefetcher

    def epoch(self, epoch):
        """Yield ``(step, batch)`` for one epoch."""
        source = self._source(epoch)
        limit = self.steps_per_epoch
        step = 0
        try:
            while limit is None or step < limit:
                try:
                    batch = next(source)
                except StopIteration:
                    if limit is not None:
                        self.exhausted = True
                        warnings.warn(
                            f"Your input ran out of data after {step} step(s) of epoch {epoch + 1} "
                            f"(steps_per_epoch={limit}); ending the epoch and training here. Make "
                            f"sure the dataset or generator can give at least "
                            f"`steps_per_epoch * epochs` batches.", UserWarning,
                            stacklevel=self.stacklevel)
                    break
                yield step, batch
                step += 1
        finally:
            if source is not self._persistent and self._prefetcher is source:
                source.close()
                self._prefetcher = None
        end = getattr(self.adapter, "on_epoch_end", None)
        if end is not None:
            end()

    def close(self):
        """Stop the prefetch thread (if any)."""
        if self._prefetcher is not None:
            self._prefetcher.close()
            self._prefetcher = None
        self._persistent = None
