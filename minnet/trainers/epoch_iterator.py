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
``depth`` batches ahead, nor more than the steps of the epoch under way (so after
``fit(generator, steps_per_epoch=2)`` the generator has given exactly 2 batches per epoch);
batches drawn for steps that a stop or an error then skipped are handed back to a one-shot
source (``GeneratorDataAdapter.give_back``): the next ``fit``/``evaluate``/``predict`` on that
generator uses them first. The order of batches is the same with and without prefetching.
"""
import queue
import threading
import warnings

from minnet import config

__all__ = ["EpochIterator", "Prefetcher"]

_ITEM, _END, _ERROR = 0, 1, 2


class Prefetcher:
    """Draws from ``iterator`` in a daemon thread into a bounded queue, never more than allowed.

    The thread draws only against permits (``allow(n)``): ``EpochIterator`` grants an epoch's
    steps when the epoch starts, so a source is never asked for a batch that no step will
    use. Batches drawn but not consumed when ``close()`` is called (a stop or an error in
    the middle of an epoch) are returned by ``close`` in the order they were drawn, to be
    handed back to their source.

    Args:
        iterator: any iterator of raw batches.
        depth: how many batches may wait in the queue.
        transform: applied to each batch in the thread; ``__next__`` returns the result.
        permits: batches the thread may draw before ``allow`` grants more (None: no limit).
    """

    def __init__(self, iterator, depth=2, transform=None, permits=None):
        self._iterator = iterator
        self._transform = transform
        self._queue = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._permits = permits
        self._granted = threading.Condition()
        self._held = []           # a batch drawn, not queued, when the consumer stopped
        self._thread = threading.Thread(target=self._run, name="minnet-prefetch", daemon=True)
        self._finished = False
        self._thread.start()

    def allow(self, n):
        """Let the thread draw ``n`` more batches (None: any number)."""
        with self._granted:
            self._permits = None if n is None or self._permits is None else self._permits + n
            self._granted.notify()

    def _take_permit(self):
        with self._granted:
            while self._permits is not None and self._permits <= 0 and not self._stop.is_set():
                self._granted.wait(0.05)
            if self._stop.is_set():
                return False
            if self._permits is not None:
                self._permits -= 1
            return True

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
            while self._take_permit():
                try:
                    raw = next(self._iterator)
                except StopIteration:
                    self._put((_END, None, None))
                    return
                value = raw if self._transform is None else self._transform(raw)
                if not self._put((_ITEM, raw, value)):
                    self._held.append(raw)
                    return
        except BaseException as error:  # noqa: BLE001 - handed to the consumer, re-raised there
            self._put((_ERROR, None, error))

    def __iter__(self):
        return self

    def __next__(self):
        if self._finished:
            raise StopIteration
        kind, _, value = self._queue.get()
        if kind == _ITEM:
            return value
        self._finished = True
        if kind == _ERROR:
            raise value
        raise StopIteration

    def close(self):
        """Stop the thread; return the raw batches it drew that nobody consumed."""
        self._stop.set()
        with self._granted:
            self._granted.notify()
        self._thread.join(timeout=5)
        unused = []
        while True:
            try:
                kind, raw, _ = self._queue.get_nowait()
            except queue.Empty:
                break
            if kind == _ITEM:
                unused.append(raw)
        return unused + self._held


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
        if self.steps_per_epoch is not None and self.adapter.one_shot:
            if self._persistent is None:
                self._persistent = self._start(self.adapter.epoch_batches(epoch))
            elif self.prefetch:
                self._persistent.allow(self.steps_per_epoch)     # this epoch's steps, no more
            return self._persistent
        return self._start(self.adapter.epoch_batches(epoch))

    def _start(self, iterator):
        if not self.prefetch:
            return iter(self._prepared(iterator))
        prefetcher = Prefetcher(iter(iterator), transform=self.prepare, permits=self.steps_per_epoch)
        self._prefetcher = prefetcher
        return prefetcher

    def _close_prefetcher(self, prefetcher):
        unused = prefetcher.close()
        if unused:
            self.adapter.give_back(unused)

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
                self._close_prefetcher(source)
                self._prefetcher = None
        self.adapter.on_epoch_end()

    def close(self):
        """Stop the prefetch thread (if any)."""
        if self._prefetcher is not None:
            self._close_prefetcher(self._prefetcher)
            self._prefetcher = None
        self._persistent = None
