"""The buffer cache of fit / evaluate / predict (minnet._ext._memory, a NEP 49 NumPy allocator)."""
import threading

import numpy as np
import pytest

import minnet as mn
from minnet import layers
from minnet._ext import _memory


@pytest.fixture(autouse=True, scope="module")
def _channels_first_images():
    # The image models here are built for NCHW data; Conv2D and the image layers follow
    # mn.config.image_data_format(), whose default is Keras's channels_last.
    mn.config.set_image_data_format("channels_first")
    yield
    mn.config.set_image_data_format("channels_last")

get_handler_name = pytest.importorskip("numpy._core.multiarray").get_handler_name

BIG = 512 * 1024 // 8        # float64 elements in one cached-size block (512 KiB)


@pytest.fixture(autouse=True)
def _default_limit():
    yield
    _memory.set_limit(_memory.DEFAULT_LIMIT)


def _cnn():
    mn.manual_seed(0)
    model = mn.Sequential([layers.Input((1, 16, 16)), layers.Conv2D(32, 3, padding=1),
                           layers.BatchNormalization(), layers.ReLU(), layers.MaxPooling2D(2),
                           layers.Flatten(), layers.Dropout(0.25), layers.Dense(10)])
    model.compile(optimizer="adam", loss=mn.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def _data(n=256):
    rng = np.random.default_rng(0)
    return rng.standard_normal((n, 1, 16, 16)).astype(np.float32), rng.integers(0, 10, n)


class _Spy(mn.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.names = set()

    def on_train_batch_end(self, batch, logs=None):
        self.names.add(get_handler_name())

    def on_predict_batch_end(self, batch, logs=None):
        self.names.add(get_handler_name())


def test_loops_run_inside_the_cache_and_restore_numpy_allocator():
    model, (x, y), spy = _cnn(), _data(), _Spy()
    model.fit(x, y, batch_size=64, epochs=2, verbose=0, callbacks=[spy], validation_split=0.25)
    model.predict(x, batch_size=64, callbacks=[spy])
    assert spy.names == {"minnet_buffer_cache"}
    assert get_handler_name() == "default_allocator"
    st = _memory.stats()
    assert st["active"] == 0 and st["cached_bytes"] == 0 and st["cached_blocks"] == 0


def test_training_is_bit_identical_with_and_without_the_cache():
    results = []
    for limit in (_memory.DEFAULT_LIMIT, 0):
        _memory.set_limit(limit)
        model, (x, y) = _cnn(), _data()
        hits = _memory.stats()["hits"]
        history = model.fit(x, y, batch_size=64, epochs=2, verbose=0)
        results.append((history.history["loss"], [w.copy() for w in model.get_weights()],
                        model.predict(x), _memory.stats()["hits"] - hits))
    (loss_on, w_on, p_on, hits_on), (loss_off, w_off, p_off, hits_off) = results
    assert loss_on == loss_off
    for a, b in zip(w_on, w_off):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(p_on, p_off)
    assert hits_on > 0 and hits_off == 0          # the cache was used, and off means off


def test_an_exception_inside_fit_restores_the_allocator_and_empties_the_cache():
    class Boom(mn.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            if batch == 2:
                raise RuntimeError("boom")

    model, (x, y) = _cnn(), _data()
    with pytest.raises(RuntimeError, match="boom"):
        model.fit(x, y, batch_size=32, epochs=1, verbose=0, callbacks=[Boom()])
    assert get_handler_name() == "default_allocator"
    assert _memory.stats()["active"] == 0 and _memory.stats()["cached_bytes"] == 0


def test_reused_buffers_hold_correct_values_and_calloc_is_zeroed():
    with _memory.buffer_cache():
        for i in range(5):
            a = np.full(BIG, float(i + 1))        # a dirty block goes back to the cache ...
            assert (a == i + 1).all()
            del a
            z = np.zeros(BIG)                      # ... and a zeroed request must not see it
            assert not z.any()
            del z
        assert _memory.stats()["cached_blocks"] >= 1
    assert _memory.stats()["cached_blocks"] == 0


def test_nesting_and_small_buffers():
    before = _memory.stats()
    with _memory.buffer_cache():
        with _memory.buffer_cache():               # fit runs evaluate inside: a no-op
            assert _memory.stats()["active"] == 1
            small = np.ones(10)                    # below 256 KiB: never cached
            del small
        assert get_handler_name() == "minnet_buffer_cache"
        assert _memory.stats()["hits"] + _memory.stats()["misses"] == before["hits"] + before["misses"]
    assert get_handler_name() == "default_allocator"


def test_the_limit_bounds_what_is_kept():
    _memory.set_limit(3 * BIG * 8)                # room for two of the blocks below
    with _memory.buffer_cache():
        arrays = [np.ones(BIG + i) for i in range(6)]    # six sizes, each > BIG * 8 bytes
        del arrays
        st = _memory.stats()
        assert st["cached_bytes"] <= 3 * BIG * 8 and st["cached_blocks"] == 2
    _memory.set_limit(0)
    with _memory.buffer_cache():                   # off: NumPy's allocator stays
        assert get_handler_name() == "default_allocator"


@pytest.mark.parametrize("bad", [-1, 1.5, "1", True, None])
def test_set_limit_rejects_bad_values(bad):
    with pytest.raises(ValueError, match="`limit`"):
        _memory.set_limit(bad)


def test_threads_allocating_and_freeing_at_once():
    errors = []

    def work(seed):
        try:
            with _memory.buffer_cache():
                rng = np.random.default_rng(seed)
                for _ in range(200):
                    n = BIG + int(rng.integers(0, 3)) * 1024
                    a = np.full(n, float(seed))
                    b = np.zeros(n)
                    if not ((a == seed).all() and not b.any()):
                        errors.append(seed)
                    del a, b
        except Exception as exc:                   # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert _memory.stats()["active"] == 0 and _memory.stats()["cached_bytes"] == 0


def test_public_name_and_a_custom_loop():
    assert mn.buffer_cache is _memory.buffer_cache
    model, (x, y) = _cnn(), _data(128)
    hits = _memory.stats()["hits"]
    with mn.buffer_cache():
        for xb, yb in mn.data.batches(x, y, batch_size=32):
            model.train_on_batch(xb, yb)
        assert get_handler_name() == "minnet_buffer_cache"
    assert _memory.stats()["hits"] > hits
    assert get_handler_name() == "default_allocator"


def test_peak_is_per_outermost_loop():
    with _memory.buffer_cache():
        a = np.ones(4 * BIG)
        del a
    assert _memory.stats()["peak_cached_bytes"] >= 4 * BIG * 8
    with _memory.buffer_cache():
        b = np.ones(BIG)
        del b
    assert BIG * 8 <= _memory.stats()["peak_cached_bytes"] < 4 * BIG * 8
