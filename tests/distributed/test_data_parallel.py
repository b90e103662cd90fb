"""Data parallelism (minnet.distribution) against one process with the same global batch.

Run as they are (one process) these tests check the one-process path cheaply. The MPI
cases run when the same file runs under a launcher, as `.ci/run` does:

    mpiexec -n 2 pytest -q -p no:cacheprovider tests/distributed
    mpiexec -n 3 pytest -q -p no:cacheprovider tests/distributed

Every rank runs every test in the same order (their collectives pair up). Each test trains
the reference in the same process with the distribution switched off, then the same model
under DataParallel, and compares: float64, 1e-10 after >= 20 steps, with uneven shards, a
rank left empty by a short last batch (3 ranks), dropout and synchronized BatchNormalization.
"""
import io
import os
import contextlib
import tempfile

import numpy as np
import pytest

import minnet as mn
from minnet import distribution as dist_api

L = mn.layers
UNDER_LAUNCHER = dist_api._under_launcher()
if UNDER_LAUNCHER:
    pytest.importorskip("mpi4py", reason="the MPI cases need mpi4py (pip install 'minnet[mpi]')")


@pytest.fixture(scope="module", autouse=True)
def world():
    threads = mn.get_num_threads()
    mn.set_num_threads(1)
    dist_api.initialize()
    yield
    dist_api.set_distribution(None)
    mn.set_num_threads(threads)


@pytest.fixture
def float64():
    mn.config.set_floatx("float64")
    yield
    mn.config.set_floatx("float32")
    dist_api.set_distribution(None)


def ranks():
    return dist_api.DataParallel().num_processes


def _mlp():
    return [L.Input((5,)), L.Dense(7, activation="tanh", kernel_regularizer="l2"), L.Dropout(0.3),
            L.Dense(3, activation="softmax")]


def _cnn():
    return [L.Input((6, 6, 2)), L.Conv2D(3, 3), L.BatchNormalization(synchronized=True, momentum=0.8),
            L.ReLU(), L.Flatten(), L.Dropout(0.25), L.Dense(3, activation="softmax")]


def _make(layers, optimizer):
    mn.manual_seed(3)
    model = mn.models.Sequential(layers())
    model.compile(optimizer=optimizer(), loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


def _both(layers, optimizer, fit):
    """(one-process model and history, data-parallel model and history)."""
    dist_api.set_distribution(None)
    reference = _make(layers, optimizer)
    reference_history = fit(reference)
    dist_api.set_distribution(dist_api.DataParallel())
    model = _make(layers, optimizer)
    return reference, reference_history, model, fit(model)


def _max_difference(a, b):
    return max(float(np.abs(u - v).max()) for u, v in zip(a.get_weights(), b.get_weights()))


def _same_on_every_rank(model):
    dist = dist_api.DataParallel()
    if dist.num_processes == 1:
        return
    flat = np.concatenate([w.ravel() for w in model.get_weights()])
    everyone = dist.allgather_object(flat, "the test's weights")
    assert max(float(np.abs(w - everyone[0]).max()) for w in everyone) < 1e-12


def _data(n, shape):
    rng = np.random.default_rng(0)
    return rng.normal(size=(n,) + shape), rng.integers(0, 3, n)


@pytest.mark.parametrize("layers, optimizer, shape", [
    (_mlp, lambda: mn.optimizers.Adam(0.01), (5,)),
    (_cnn, lambda: mn.optimizers.SGD(0.1, momentum=0.9), (6, 6, 2)),
], ids=["mlp-dropout-adam", "cnn-syncbn-dropout-sgd"])
def test_fit_on_arrays_matches_one_process(float64, layers, optimizer, shape):
    # 44 samples, batch 7: shards 4/3 (2 ranks) and 3/2/2 (3 ranks); the last batch of 2
    # leaves rank 2 of 3 empty. 3 epochs = 21 steps; validation in batches of 7 and 3.
    x, y = _data(54, shape)
    x, y, validation = x[:44], y[:44], (x[44:], y[44:])
    fit = lambda m: m.fit(x, y, batch_size=7, epochs=3, seed=5, verbose=0, validation_data=validation,
                          class_weight={0: 1.0, 1: 2.0, 2: 0.5})       # weights: sum / B, as one process
    reference, h_ref, model, h = _both(layers, optimizer, fit)
    assert _max_difference(reference, model) < 1e-10
    for key in ("loss", "accuracy", "val_loss", "val_accuracy"):
        np.testing.assert_allclose(h.history[key], h_ref.history[key], rtol=0, atol=1e-10)
    _same_on_every_rank(model)
    np.testing.assert_allclose(model.predict(x, batch_size=5), reference.predict(x, batch_size=5),
                               rtol=0, atol=1e-10)
    np.testing.assert_allclose(model.evaluate(x, y, batch_size=9, verbose=0),
                               reference.evaluate(x, y, batch_size=9, verbose=0), rtol=0, atol=1e-10)


def test_shuffling_without_a_seed_is_the_same_on_every_rank(float64):
    x, y = _data(30, (5,))
    dist_api.set_distribution(dist_api.DataParallel())
    model = _make(_mlp, lambda: mn.optimizers.SGD(0.05))
    model.fit(x, y, batch_size=8, epochs=2, verbose=0)
    _same_on_every_rank(model)


class _Batches(mn.utils.PyDataset):
    def __init__(self, x, y, size, group=1):
        super().__init__()
        self.x, self.y, self.size, self.group = x, y, size, group

    def __len__(self):
        return -(-len(self.x) // (self.size * self.group))

    def __getitem__(self, i):
        lo = i * self.size * self.group
        hi = lo + self.size * self.group
        return self.x[lo:hi], self.y[lo:hi]


def test_pydataset_and_generator_shard_by_batch_index(float64):
    # N ranks take batches r, r + N, ...: one step trains on N consecutive batches, the same
    # as one process reading batches N times as large (the last step's share is short).
    n = ranks()
    x, y = _data(46, (5,))
    dist_api.set_distribution(None)
    reference = _make(_mlp, lambda: mn.optimizers.Adam(0.01))
    reference.fit(_Batches(x, y, 3, group=n), epochs=3, shuffle=False, verbose=0)
    dist_api.set_distribution(dist_api.DataParallel())
    model = _make(_mlp, lambda: mn.optimizers.Adam(0.01))
    model.fit(_Batches(x, y, 3), epochs=3, shuffle=False, verbose=0)
    assert _max_difference(reference, model) < 1e-10

    def batches():
        while True:
            for i in range(0, 24, 4):
                yield x[i:i + 4], y[i:i + 4]

    dist_api.set_distribution(None)
    reference = _make(_mlp, lambda: mn.optimizers.Adam(0.01))

    def grouped():
        source = batches()
        while True:
            parts = [next(source) for _ in range(n)]
            yield np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])

    reference.fit(grouped(), steps_per_epoch=5, epochs=4, verbose=0)
    dist_api.set_distribution(dist_api.DataParallel())
    model = _make(_mlp, lambda: mn.optimizers.Adam(0.01))
    model.fit(batches(), steps_per_epoch=5, epochs=4, verbose=0)
    assert _max_difference(reference, model) < 1e-10


def test_only_rank_0_prints_and_writes_and_all_stop_together(float64):
    x, y = _data(40, (5,))
    dist_api.set_distribution(dist_api.DataParallel())
    chief = dist_api.distribution().is_chief
    folder = tempfile.mkdtemp(prefix="minnet-dp-")
    csv_path = os.path.join(folder, "log.csv")
    checkpoint = os.path.join(folder, "best.weights.npz")
    model = _make(_mlp, lambda: mn.optimizers.SGD(0.05))
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        history = model.fit(x, y, batch_size=8, epochs=30, seed=0, verbose=2, validation_split=0.2,
                            callbacks=[mn.callbacks.CSVLogger(csv_path),
                                       mn.callbacks.TensorBoard(os.path.join(folder, "tb")),
                                       mn.callbacks.BackupAndRestore(os.path.join(folder, "backup"),
                                                                     delete_checkpoint=False),
                                       mn.callbacks.ModelCheckpoint(checkpoint, save_weights_only=True),
                                       mn.callbacks.EarlyStopping(monitor="val_loss", patience=1,
                                                                  min_delta=0.5)])
    assert os.path.exists(csv_path) == chief
    assert os.path.exists(checkpoint) == chief
    assert os.path.isdir(os.path.join(folder, "tb")) == chief
    assert bool(os.path.isdir(os.path.join(folder, "backup")) and
                os.listdir(os.path.join(folder, "backup"))) == chief
    assert ("Epoch 1/30" in printed.getvalue()) == chief
    stopped = dist_api.distribution().allgather_object(len(history.history["loss"]), "epochs") \
        if ranks() > 1 else [len(history.history["loss"])]
    assert len(set(stopped)) == 1 and stopped[0] < 30


def test_start_up_check_names_what_differs(float64, monkeypatch):
    dist_api.set_distribution(dist_api.DataParallel())
    dist = dist_api.distribution()
    if dist.num_processes == 1:
        pytest.skip("needs several ranks (run under mpiexec)")
    x, y = _data(20 + (dist.process_id == 1), (5,))
    model = _make(_mlp, lambda: mn.optimizers.SGD(0.05))
    with pytest.raises(ValueError, match="rank 1's data-set length differs"):
        model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    x, y = _data(20, (5,))
    width = 7 if dist.process_id != 1 else 8
    mn.manual_seed(0)
    model = mn.models.Sequential([L.Input((5,)), L.Dense(width), L.Dense(3, activation="softmax")])
    model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    with pytest.raises(ValueError, match="rank 1's model structure"):
        model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    if dist.process_id == 1:
        monkeypatch.setattr("minnet.trainers.distributed_step.__version__", "0.0.0-other")
    model = _make(_mlp, lambda: mn.optimizers.SGD(0.05))
    with pytest.raises(ValueError, match="rank 1's minnet version"):
        model.fit(x, y, batch_size=8, epochs=1, verbose=0)


# ---------------------------------------------------------------------------- one process
def test_one_process_without_a_launcher():
    if UNDER_LAUNCHER:
        pytest.skip("checks the run without mpiexec")
    dist_api.initialize()
    dist = dist_api.DataParallel()
    assert (dist.num_processes, dist.process_id, dist.is_chief) == (1, 0, True)
    assert dist_api.list_devices() == ["cpu:0"] and dist_api.get_device_count() == 1
    assert "mpi4py" not in __import__("sys").modules


def test_scope_sets_the_distribution_for_a_block():
    strategy = dist_api.DataParallel()
    with strategy.scope() as inside:
        assert dist_api.distribution() is strategy is inside
    assert dist_api.distribution() is None


def test_shard_bounds_are_contiguous_and_cover_the_batch():
    dist = dist_api.DataParallel()
    for size in (1, 2, 3, 5, 8):
        dist.num_processes = size
        for n in (0, 1, 2, 7, 10):
            bounds = [dist.shard_bounds(n, r) for r in range(size)]
            assert bounds[0][0] == 0 and bounds[-1][1] == n
            assert all(a[1] == b[0] for a, b in zip(bounds, bounds[1:]))
            assert max(hi - lo for lo, hi in bounds) - min(hi - lo for lo, hi in bounds) <= 1


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="`timeout`"):
        dist_api.DataParallel(timeout=0)
    with pytest.raises(ValueError, match="`bucket_mb`"):
        dist_api.DataParallel(bucket_mb=-1)
    with pytest.raises(ValueError, match="`job_addresses`"):
        dist_api.initialize(job_addresses="host:1234")
    with pytest.raises(ValueError, match="`num_processes`"):
        dist_api.initialize(num_processes=ranks() + 1)
    with pytest.raises(TypeError, match="DataParallel"):
        dist_api.set_distribution("data")
    with pytest.raises(ValueError, match="`device_type`"):
        dist_api.list_devices("gpu")


def test_dropout_window_leaves_one_process_unchanged():
    from minnet import _random
    mn.manual_seed(0)
    plain = mn.functional.dropout(np.ones((6, 4)), 0.5).data
    mn.manual_seed(0)
    _random.set_sample_window((2, 3, 6))        # samples 2..4 of a batch of 6
    try:
        part = mn.functional.dropout(np.ones((3, 4)), 0.5).data
        offset = _random.dropout_offset()
    finally:
        _random.set_sample_window(None)
    np.testing.assert_array_equal(part, plain[2:5])
    assert offset == 24

