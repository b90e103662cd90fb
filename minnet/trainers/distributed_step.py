"""The trainer's side of data parallelism (``mn.distribution.DataParallel``), without MPI.

``fit``/``evaluate``/``predict`` ask this module for their step. With no distribution set
(or one process) they get the model's own step back, untouched. With N ranks:

- **fit on arrays**: every rank draws the same global batch (the shuffle seed is rank 0's)
  and trains on its rows ``shard_bounds(B)`` (contiguous; the first ``B % N`` ranks hold one
  more sample). **fit on a PyDataset or generator**: rank r takes the batches ``r, r + N, ...``
  (sharded by batch index), so a step trains on N of the source's batches at once.
- **the gradient**: each trainable parameter's ``grad`` is a view of one flat buffer per
  dtype, cut into buckets of ``bucket_mb``. As backward finishes a bucket's gradients
  (``AccumulateGrad.observer``), the bucket is scaled by ``n_local / n_global`` and its
  in-place all-reduce starts; ``optimizer.step`` waits for the rest. A rank's loss is the
  mean over its ``n_local`` samples, so the sum is the mean over the global batch: the same
  gradient as one process with batch B, to float rounding. A rank left without samples
  (a short last batch) adds zeros.
- **the logs**: the metrics' states (``total``/``count``, confusion counts, ``add_variable``
  state) are summed over the ranks after each step and the logs computed from the sums, so
  every rank sees (and every callback decides on) the global numbers.
- **dropout**: ``_random.sample_window`` makes each mask element the one its sample has at
  its global position; BatchNormalization(synchronized=True) sums its statistics over the
  ranks holding samples (``distribution.step_group``).
- **first step**: the ranks compare minnet's version, the weights' names/shapes/dtypes and
  the data's length, then take rank 0's weights and optimizer state.
- **errors**: ``errors_reach_all_ranks`` tells the other ranks when this one raises, and
  their waits stop with that error (``RemoteRankError``) instead of hanging.
"""
import contextlib
import time

import numpy as np

from minnet import _random, config
from minnet._version import __version__
from minnet.autograd import AccumulateGrad
from minnet.metrics.base import log_value
from minnet.trainers.data_adapters import (ArrayDataAdapter, DataAdapter, flat_leaves,
                                           pack_leaves, pack_x_y_sample_weight,
                                           unpack_x_y_sample_weight)

__all__ = ["active", "errors_reach_all_ranks", "wrap_fit", "test_step_for", "predict_step_for",
           "gathered"]

# Metric attributes that hold summable state (besides add_variable's variables).
_STATE_NAMES = ("total", "count", "total_cm", "true_positives", "false_positives", "true_negatives",
                "false_negatives", "sums", "num_samples", "intermediate_weights")


def active():
    """The distribution when one is set and has several ranks, else None."""
    value = config.current_distribution()
    return value if value is not None and value.num_processes > 1 else None


@contextlib.contextmanager
def errors_reach_all_ranks():
    """Around fit/evaluate/predict: an error raised here is sent to the other ranks."""
    dist = active()
    if dist is None:
        yield
        return
    try:
        yield
    except BaseException as error:
        if not isinstance(error, StartupMismatch):     # the start-up check fails everywhere
            dist.notify(error)       # a no-op when the error came from another rank
        raise


# ---------------------------------------------------------------------------- batches
def _rows(batch):
    x = unpack_x_y_sample_weight(batch)[0]
    return len(flat_leaves(x)[0])


def _cut(structure, lo, hi):
    if structure is None:
        return None
    return pack_leaves(structure, [leaf[lo:hi] for leaf in flat_leaves(structure)])


def _local_batch(batch, lo, hi):
    x, y, w = unpack_x_y_sample_weight(batch)
    return pack_x_y_sample_weight(_cut(x, lo, hi), _cut(y, lo, hi), None if w is None else w[lo:hi])


class StartupMismatch(ValueError):
    """The ranks disagree at the start-up check: every rank finds it, none needs telling."""


class _ByBatchIndex(DataAdapter):
    """An adapter's batches ``r, r + N, ...`` for rank r; an empty batch where a short last
    global step leaves this rank none (every rank takes part in every step).

    Batches a stopped epoch drew ahead are not handed back to a one-shot source (the
    default ``give_back``): they went through this rank's filter, and the next fit would
    filter them again."""

    def __init__(self, adapter, dist):
        self._adapter = adapter
        self._dist = dist
        self.prefetch_default = adapter.prefetch_default
        self.one_shot = adapter.one_shot
        self.on_epoch_end = adapter.on_epoch_end

    @property
    def num_batches(self):
        n = self._adapter.num_batches
        return None if n is None else -(-n // self._dist.num_processes)

    def epoch_batches(self, epoch, shuffle=None):
        size, rank = self._dist.num_processes, self._dist.process_id
        count, last = 0, None
        for index, batch in enumerate(self._adapter.epoch_batches(epoch, shuffle)):
            count, last = index + 1, batch
            if index % size == rank:
                yield batch
        if count % size and rank >= count % size and last is not None:
            yield _local_batch(last, 0, 0)


# ---------------------------------------------------------------------------- gradients
class _GradientBuckets:
    """One flat gradient buffer per dtype (each parameter's ``grad`` a view), in buckets
    whose all-reduce starts as soon as backward has filled them."""

    def __init__(self, params, dist):
        self.dist = dist
        self.params = params
        self.views = []
        self.buckets = []              # [segment, parameters left, request, start time]
        self.bucket_of = {}
        by_dtype = {}
        for p in reversed(params):     # backward reaches the last layers first
            by_dtype.setdefault(p.data.dtype, []).append(p)
        for dtype, group in by_dtype.items():
            flat = np.zeros(sum(p.data.size for p in group), dtype=dtype)
            start = first = 0
            members = []
            for p in group:
                stop = start + p.data.size
                self.views.append((p, flat[start:stop].reshape(p.data.shape)))
                members.append(p)
                start = stop
                if (start - first) * flat.itemsize >= dist.bucket_bytes or p is group[-1]:
                    for member in members:
                        self.bucket_of[id(member)] = len(self.buckets)
                    self.buckets.append([flat[first:start], len(members), None, 0.0, len(members)])
                    first, members = start, []
        self.scale = 1.0
        self.exposed = 0.0             # seconds step() waited for all-reduces (not hidden)

    def prepare(self, scale):
        """Zero the buffers, make every grad a view of them, arm the observer."""
        for p, view in self.views:
            if p.grad is not view:
                p.grad = view
        for bucket in self.buckets:
            bucket[0].fill(0)
            bucket[1], bucket[2] = bucket[4], None
        self.scale = scale
        AccumulateGrad.observer = self._ready

    def _ready(self, variable):
        index = self.bucket_of.get(id(variable))
        if index is None:
            return
        bucket = self.buckets[index]
        if bucket[2] is not None:
            # Its all-reduce already runs on this memory: a second backward before the step.
            self.release()
            raise RuntimeError("Data-parallel fit: a train_step ran backward() more than once before "
                               "optimizer.step() (gradient accumulation, or two losses each with its "
                               "own backward). Sum the losses and call backward() once per step.")
        bucket[1] -= 1
        if bucket[1] == 0:
            self._start(bucket)
        for other in self.buckets:     # MPI progresses only when called: poll what runs
            if other[2] is not None:
                other[2].Test()

    def _start(self, bucket):
        if self.scale != 1.0:
            bucket[0] *= self.scale
        bucket[3] = time.perf_counter()
        bucket[2] = self.dist.start_allreduce(bucket[0])

    def finish(self):
        """Start the buckets backward did not fill (unused parameters) and wait for all."""
        AccumulateGrad.observer = None
        begin = time.perf_counter()
        for bucket in self.buckets:
            if bucket[2] is None:
                self._start(bucket)
        for bucket in self.buckets:
            self.dist.wait(bucket[2], "the gradient all-reduce")
            bucket[2] = None
        self.exposed += time.perf_counter() - begin

    def release(self):
        AccumulateGrad.observer = None


# ---------------------------------------------------------------------------- metrics
def _metric_states(metrics):
    """``[(owner, attribute, value)]`` for every summable piece of the metrics' state."""
    states = []
    for metric in metrics:
        held = metric.__dict__
        for name in _STATE_NAMES:
            value = held.get(name)
            if isinstance(value, (int, float, np.ndarray)) and not isinstance(value, bool):
                states.append((metric, name, value))
        for variable in metric.variables:
            states.append((variable, "data", variable.data))
    return states


def reduced_logs(model, dist, logs):
    """``logs`` with every metric's result computed from its state summed over the ranks."""
    metrics = list(model.metrics)
    states = _metric_states(metrics)
    if not states:
        return logs
    summed = np.concatenate([np.ravel(np.asarray(value, dtype=np.float64)) for _, _, value in states])
    dist.allreduce(summed, "the metrics' all-reduce")
    at = 0
    for owner, name, value in states:
        size = np.size(value)
        part = summed[at:at + size]
        at += size
        if isinstance(value, np.ndarray):
            setattr(owner, name, part.reshape(value.shape).astype(value.dtype))
        else:
            setattr(owner, name, type(value)(part[0]))
    try:
        result = dict(logs)
        result.update({m.name: log_value(m.result()) for m in metrics})
    finally:
        for owner, name, value in states:
            setattr(owner, name, value)
    return result


# ---------------------------------------------------------------------------- fit
def _layers(layer):
    yield layer
    for child in layer._tracked_layers():
        yield from _layers(child)


class _DistributedTrainStep:
    """``train_step`` on this rank's share of each global batch, then the global gradient."""

    def __init__(self, model, dist, by_rows, length):
        self.model = model
        self.dist = dist
        self.by_rows = by_rows
        self.length = length
        self.buckets = None
        self.synchronized = False

    def begin(self):
        """The start-up check, then rank 0's weights and optimizer state everywhere."""
        model, dist = self.model, self.dist
        layout = [(w.name, tuple(w.shape), str(w.dtype)) for w in model.weights]
        mine = {"minnet": __version__, "weights": layout,
                "data": ("samples" if self.by_rows else "batches", self.length)}
        everyone = dist.allgather_object(mine, "the start-up check of model, version and data")
        for rank, theirs in enumerate(everyone):
            for key, label in (("minnet", "minnet version"), ("weights", "model structure (weights' "
                               "names, shapes, dtypes)"), ("data", "data-set length")):
                if theirs[key] != everyone[0][key]:
                    raise StartupMismatch(
                        f"Data-parallel fit: rank {rank}'s {label} differs from rank 0's: "
                        f"{theirs[key]!r} != {everyone[0][key]!r}. Every rank must run the same "
                        f"script on the same data.")
        _broadcast_weights(dist, model.weights)
        optimizer = model.optimizer
        state = dist.broadcast_object(optimizer.state_dict(), "the optimizer state")
        if not dist.is_chief:
            optimizer.load_state_dict(state)
        params = [p for p in model.parameters() if p.requires_grad]
        self.buckets = _GradientBuckets(params, dist)
        self.synchronized = any(layer.synchronized for layer in _layers(model))
        self.buffers = model.non_trainable_weights
        # What benchmarks/bench_distributed.py reads: the steps, the gradient's size and buckets,
        # and the seconds optimizer.step waited for all-reduces backward had not finished.
        dist.fit_stats = {"steps": 0, "exposed_s": 0.0, "buckets": len(self.buckets.buckets),
                          "gradient_bytes": sum(b[0].nbytes for b in self.buckets.buckets)}

    def __call__(self, data):
        if self.buckets is None:
            self.begin()
        dist, model = self.dist, self.model
        n_local = _rows(data)
        if self.by_rows:
            n_global = n_local
            start, stop = dist.shard_bounds(n_global)
            data, n_local = _local_batch(data, start, stop), stop - start
            holding = min(dist.num_processes, n_global)
        else:
            sizes = np.zeros(dist.num_processes, dtype=np.int64)
            sizes[dist.process_id] = n_local
            dist.allreduce(sizes, "the batch sizes")
            n_global, start = int(sizes.sum()), int(sizes[:dist.process_id].sum())
            holding = int(np.count_nonzero(sizes))
        dist.step_group = dist.group(holding) if self.synchronized else None
        dist.step_scale = n_local / n_global if n_global else 0.0
        optimizer = model.optimizer
        real_step = optimizer.step
        buckets = self.buckets
        scale = n_local / n_global if n_global else 0.0

        def step(*args, **kwargs):
            buckets.finish()
            return real_step(*args, **kwargs)

        optimizer.zero_grad = lambda set_to_none=True: buckets.prepare(scale)
        optimizer.step = step
        _random.set_sample_window((start, n_local, n_global))
        try:
            buckets.prepare(scale)
            if n_local:
                logs = model.train_step(data)
            else:                       # nothing to compute: add zeros, step with the others
                step()
                logs = {}
        finally:
            buckets.release()
            dist.step_group = None
            _random.set_sample_window(None)
            del optimizer.zero_grad, optimizer.step
        dist.fit_stats["steps"] += 1
        dist.fit_stats["exposed_s"] = buckets.exposed
        if holding < dist.num_processes:       # ranks without samples drew no dropout mask
            _random.set_dropout_offset(dist.allreduce_max(_random.dropout_offset(), "the dropout offset"))
        if self.buffers:                          # as DDP's broadcast_buffers: rank 0's statistics
            _broadcast_weights(dist, self.buffers)
        return reduced_logs(model, dist, logs if isinstance(logs, dict) else {})


def _broadcast_weights(dist, weights):
    """Rank 0's values of ``weights`` on every rank, in one broadcast per dtype."""
    by_dtype = {}
    for weight in weights:
        by_dtype.setdefault(weight.data.dtype, []).append(weight.data)
    for arrays in by_dtype.values():
        flat = dist.broadcast(np.concatenate([a.ravel() for a in arrays]), "rank 0's weights")
        if not dist.is_chief:
            at = 0
            for a in arrays:
                a[...] = flat[at:at + a.size].reshape(a.shape)
                at += a.size


def wrap_fit(model, adapter):
    """``(adapter, train_step)`` for ``fit``: the model's own with no distribution."""
    dist = active()
    if dist is None:
        return adapter, model.train_step
    if adapter.shuffle and adapter.seed is None:
        # One order for every rank, whatever their generators hold: rank 0 draws the seed.
        adapter.seed = dist.broadcast_object(int(_random.generator().integers(2 ** 31)),
                                             "the shuffling seed")
    if isinstance(adapter, ArrayDataAdapter):
        return adapter, _DistributedTrainStep(model, dist, True, adapter.n_samples)
    sharded = _ByBatchIndex(adapter, dist)
    return sharded, _DistributedTrainStep(model, dist, False, adapter.num_batches)


# ---------------------------------------------------------------------------- evaluate, predict
def test_step_for(model):
    """``test_step`` on this rank's rows of each batch, the logs reduced over the ranks."""
    dist = active()
    if dist is None:
        return model.test_step

    def test_step(data):
        start, stop = dist.shard_bounds(_rows(data))
        logs = model.test_step(_local_batch(data, start, stop)) if stop > start else {}
        return reduced_logs(model, dist, logs)

    return test_step


class _ShardedPredict:
    """``predict_step`` on this rank's rows; ``gather`` puts every rank's rows back in order."""

    def __init__(self, model, dist):
        self.model, self.dist = model, dist
        self.batch_sizes = []

    def __call__(self, data):
        n = _rows(data)
        self.batch_sizes.append(n)
        start, stop = self.dist.shard_bounds(n)
        return self.model.predict_step(_local_batch(data, start, stop))

    def gather(self, leaves):
        dist = self.dist
        bounds = [[dist.shard_bounds(n, rank) for n in self.batch_sizes]
                  for rank in range(dist.num_processes)]
        result = []
        for leaf in leaves:
            joined, rows = dist.allgather_array(leaf, "predict's gather")
            offsets = np.concatenate([[0], np.cumsum(rows)])
            pieces, taken = [], [0] * dist.num_processes
            for k in range(len(self.batch_sizes)):
                for rank in range(dist.num_processes):
                    lo, hi = bounds[rank][k]
                    at = offsets[rank] + taken[rank]
                    pieces.append(joined[at:at + hi - lo])
                    taken[rank] += hi - lo
            result.append(np.concatenate(pieces, axis=0))
        return result


def predict_step_for(model):
    dist = active()
    return model.predict_step if dist is None else _ShardedPredict(model, dist)


def gathered(predict_step, leaves):
    """Every rank's predictions, in the data's order (``leaves`` unchanged in one process)."""
    return predict_step.gather(leaves) if isinstance(predict_step, _ShardedPredict) else leaves
