"""Data sources lose nothing (#31 item 3): prefetching never draws a batch that no step uses,
batches drawn ahead of a stop or an error go back to the generator for the next call, and
a list of (x, y) tuples (which Keras 3 refuses too) is refused with what to pass instead."""
import time

import numpy as np
import pytest

import minnet as mn


class Counting:
    """A one-shot generator of numbered batches (x filled with the batch's number)."""

    def __init__(self, delay=0.0):
        self.drawn = 0
        self.delay = delay

    def __iter__(self):
        return self

    def __next__(self):
        index = self.drawn
        self.drawn += 1
        if self.delay:
            time.sleep(self.delay)
        x = np.full((2, 1), index, np.float32)
        return x, x.copy()


def _identity_model():
    """predict(x) == x and training does not move it (lr 0), so outputs name the batches."""
    model = mn.Sequential([mn.Input((1,)), mn.layers.Dense(1, use_bias=False, kernel_initializer="ones")])
    model.compile(mn.optimizers.SGD(learning_rate=0.0), "mse")
    return model


def _batch_numbers(model, source, steps):
    return model.predict(source, steps=steps, verbose=0)[::2, 0].astype(int).tolist()


@pytest.mark.parametrize("prefetch", [True, False])
def test_fit_evaluate_predict_draw_exactly_the_steps_they_use(prefetch):
    # The counts Keras 3.15 (torch backend) gives for the same calls: 2, 8, 10, 12.
    model, source = _identity_model(), Counting()
    model.fit(source, steps_per_epoch=2, epochs=1, verbose=0, prefetch=prefetch)
    assert source.drawn == 2
    model.fit(source, steps_per_epoch=2, epochs=3, verbose=0, prefetch=prefetch)
    assert source.drawn == 8
    model.evaluate(source, steps=2, verbose=0)
    assert source.drawn == 10
    assert _batch_numbers(model, source, 2) == [10, 11]      # the next batches, none skipped
    assert source.drawn == 12


def test_a_generator_function_is_read_exactly_too():
    drawn = []

    def batches():
        for i in range(100):
            drawn.append(i)
            x = np.full((2, 1), i, np.float32)
            yield x, x

    model, source = _identity_model(), batches()
    model.fit(source, steps_per_epoch=3, epochs=2, verbose=0)
    assert drawn == list(range(6))
    assert next(source)[0][0, 0] == 6                          # the user's next batch is #6


class _StopAfterFirstBatch(mn.callbacks.Callback):
    def __init__(self, how):
        super().__init__()
        self.how = how

    def on_train_batch_end(self, batch, logs=None):
        time.sleep(0.2)                 # the prefetch thread draws ahead meanwhile
        if self.how == "stop":
            self.model.stop_training = True
        else:
            raise RuntimeError("boom")


@pytest.mark.parametrize("how", ["stop", "error"])
def test_batches_drawn_ahead_of_a_stop_go_back_to_the_generator(how):
    model, source = _identity_model(), Counting(delay=0.01)
    callback = _StopAfterFirstBatch(how)
    if how == "stop":
        model.fit(source, steps_per_epoch=5, epochs=2, verbose=0, callbacks=[callback])
    else:
        with pytest.raises(RuntimeError, match="boom"):
            model.fit(source, steps_per_epoch=5, epochs=2, verbose=0, callbacks=[callback])
    assert 2 <= source.drawn <= 5                              # drawn ahead, within the epoch
    ahead = source.drawn
    # Batch 0 was used; the next call sees 1, 2, ... in order, handed back then fresh.
    assert _batch_numbers(model, source, 4) == [1, 2, 3, 4]
    assert source.drawn == max(ahead, 5)


def test_a_reiterable_source_restarts_and_loses_nothing():
    class Loader:
        def __init__(self):
            self.started = 0

        def __iter__(self):
            self.started += 1
            return (self._batch(i) for i in range(4))

        @staticmethod
        def _batch(i):
            x = np.full((2, 1), i, np.float32)
            return x, x

    model, loader = _identity_model(), Loader()
    model.fit(loader, epochs=2, verbose=0)
    assert loader.started >= 2             # a fresh pass per epoch
    assert _batch_numbers(model, loader, None) == [0, 1, 2, 3]


@pytest.mark.parametrize("call", ["fit", "evaluate", "predict"])
def test_a_list_of_xy_tuples_is_refused_as_keras_does_with_what_to_pass(call):
    model = _identity_model()
    batches = [(np.ones((2, 1), np.float32), np.ones((2, 1), np.float32)) for _ in range(3)]
    kwargs = {"verbose": 0}
    with pytest.raises(ValueError) as info:
        getattr(model, call)(batches, **kwargs)
    message = str(info.value)
    assert "list of (x, y) tuples" in message and "PyDataset" in message and "3 tuples" in message


def test_the_keras_oracle_refuses_a_list_of_tuples_too(keras):
    model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    batches = [(np.ones((2, 1), np.float32), np.ones((2, 1), np.float32)) for _ in range(3)]
    with pytest.raises((ValueError, TypeError)):
        model.fit(batches, epochs=1, verbose=0)
