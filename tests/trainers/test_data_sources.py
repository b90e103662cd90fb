"""fit / evaluate / predict on every data source: arrays, generators, PyDataset, DataLoader."""
import warnings

import numpy as np
import pytest

import minnet as mn
from minnet import layers, losses
from minnet.trainers.epoch_iterator import Prefetcher


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    return rng.standard_normal((48, 5)).astype(np.float32), rng.integers(0, 3, 48)


def _model():
    mn.manual_seed(2)
    model = mn.Sequential([mn.Input((5,)), layers.Dense(6, activation="tanh"), layers.Dense(3)])
    model.compile(optimizer=mn.optimizers.SGD(learning_rate=0.1, momentum=0.9),
                  loss=losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    return model


def _reference(x, y, epochs=2):
    model = _model()
    model.fit(x, y, batch_size=8, epochs=epochs, shuffle=False, verbose=0)
    return model.get_weights()


def _same(a, b):
    assert len(a) == len(b)
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)


def test_generator_with_steps_gives_the_same_weights_as_arrays(data):
    x, y = data

    def forever():
        while True:
            for i in range(0, 48, 8):
                yield x[i:i + 8], y[i:i + 8]

    for prefetch in (False, True):
        model = _model()
        history = model.fit(forever(), steps_per_epoch=6, epochs=2, verbose=0, prefetch=prefetch)
        _same(model.get_weights(), _reference(x, y))
        assert len(history.history["loss"]) == 2


def test_pydataset_and_reiterable_sources(data):
    x, y = data

    class Batches(mn.utils.PyDataset):
        def __init__(self):
            super().__init__()
            self.epochs_ended = 0

        def __len__(self):
            return 6

        def __getitem__(self, index):
            return x[8 * index:8 * index + 8], y[8 * index:8 * index + 8]

        def on_epoch_end(self):
            self.epochs_ended += 1

    dataset = Batches()
    model = _model()
    model.fit(dataset, epochs=2, verbose=0, shuffle=False)
    _same(model.get_weights(), _reference(x, y))
    assert dataset.epochs_ended == 2
    listed = [(x[i:i + 8], y[i:i + 8]) for i in range(0, 48, 8)]
    model = _model()
    model.fit(listed_iterable(listed), epochs=2, verbose=0)
    _same(model.get_weights(), _reference(x, y))
    assert model.evaluate(dataset, verbose=0) == pytest.approx(model.evaluate(x, y, verbose=0))
    np.testing.assert_allclose(model.predict(dataset), model.predict(x), rtol=1e-6)


class listed_iterable:
    """A re-iterable with no length (each iter() starts again), like a DataLoader."""

    def __init__(self, batches):
        self.batches = batches

    def __iter__(self):
        return iter(self.batches)


def test_torch_dataloader_is_duck_typed(data):
    torch = pytest.importorskip("torch")
    x, y = data
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(torch.from_numpy(x), torch.from_numpy(y)), batch_size=8)
    model = _model()
    model.fit(loader, epochs=2, verbose=0)
    _same(model.get_weights(), _reference(x, y))
    assert model.predict(loader).shape == (48, 3)


def test_infinite_generator_needs_steps_per_epoch(data):
    x, y = data

    def forever():
        while True:
            yield x[:8], y[:8]

    with pytest.raises(ValueError, match="steps_per_epoch"):
        _model().fit(forever(), epochs=1, verbose=0)


def test_exhausted_generator_ends_with_a_warning(data):
    x, y = data
    model = _model()
    batches = ((x[i:i + 8], y[i:i + 8]) for i in range(0, 24, 8))
    with pytest.warns(UserWarning, match="ran out of data") as record:
        history = model.fit(batches, steps_per_epoch=2, epochs=3, verbose=0)
    assert record[0].filename == __file__
    assert len(history.history["loss"]) == 2      # epoch 2 ran out after one batch: it ends, fit stops


def test_generator_errors_reach_the_caller(data):
    x, y = data

    def broken():
        yield x[:8], y[:8]
        raise RuntimeError("disk on fire")

    for prefetch in (False, True):
        with pytest.raises(RuntimeError, match="disk on fire"):
            _model().fit(broken(), steps_per_epoch=3, epochs=1, verbose=0, prefetch=prefetch)


def test_validation_freq_steps_and_dataset_validation(data):
    x, y = data
    model = _model()
    history = model.fit(x, y, epochs=4, verbose=0, validation_data=(x, y), validation_freq=2)
    assert len(history.history["val_loss"]) == 2
    seen = []

    class Counter(mn.callbacks.Callback):
        def on_test_batch_end(self, batch, logs=None):
            seen.append(batch)

    val = [(x[i:i + 8], y[i:i + 8]) for i in range(0, 48, 8)]
    model.fit(x, y, epochs=1, verbose=0, validation_data=listed_iterable(val), validation_steps=2,
              callbacks=[Counter()])
    assert seen == [0, 1]
    history = model.fit(x, y, epochs=3, verbose=0, validation_data=(x, y), validation_freq=[1, 3])
    assert len(history.history["val_loss"]) == 2


def test_sample_weights_from_a_generator_and_class_weight(data):
    x, y = data
    w = np.linspace(0.5, 1.5, 48).astype(np.float32)
    model = _model()
    model.fit(((x[i:i + 8], y[i:i + 8], w[i:i + 8]) for i in range(0, 48, 8)), steps_per_epoch=6,
              epochs=1, verbose=0)
    reference = _model()
    reference.fit(x, y, sample_weight=w, batch_size=8, shuffle=False, epochs=1, verbose=0)
    _same(model.get_weights(), reference.get_weights())
    gen_cw = _model()
    gen_cw.fit(((x[i:i + 8], y[i:i + 8]) for i in range(0, 48, 8)), steps_per_epoch=6, epochs=1,
               verbose=0, class_weight={0: 1.0, 1: 2.0, 2: 0.5})
    arr_cw = _model()
    arr_cw.fit(x, y, batch_size=8, shuffle=False, epochs=1, verbose=0, class_weight={0: 1.0, 1: 2.0, 2: 0.5})
    _same(gen_cw.get_weights(), arr_cw.get_weights())


def test_bad_combinations_are_refused(data):
    x, y = data
    model = _model()
    gen = ((x[:8], y[:8]) for _ in range(3))
    with pytest.raises(ValueError, match="`y` must be None"):
        model.fit(gen, y, steps_per_epoch=1, verbose=0)
    with pytest.raises(ValueError, match="validation_split"):
        model.fit(gen, steps_per_epoch=1, validation_split=0.2, verbose=0)
    with pytest.raises(ValueError, match="steps_per_epoch"):
        model.fit(x, y, steps_per_epoch=0, verbose=0)


def test_prefetcher_keeps_order_and_stops():
    prefetcher = Prefetcher(iter(range(100)), depth=3)
    assert [next(prefetcher) for _ in range(10)] == list(range(10))
    prefetcher.close()
    assert list(Prefetcher(iter(range(5)))) == [0, 1, 2, 3, 4]


def test_one_shot_iterator_with_a_length_runs_out_with_a_warning(data):
    x, y = data

    class Once:
        def __init__(self):
            self.batches = iter([(x[i:i + 8], y[i:i + 8]) for i in range(0, 48, 8)])

        def __iter__(self):
            return self

        def __next__(self):
            return next(self.batches)

        def __len__(self):
            return 6

    model = _model()
    with pytest.warns(UserWarning, match="ran out of data"):
        history = model.fit(Once(), epochs=3, verbose=0)
    assert len(history.history["loss"]) == 1
    with pytest.raises(ValueError, match="no batch"):
        model.fit(listed_iterable([]), epochs=1, verbose=0)
