"""With mn.config.set_deterministic(True), the same seed trains to bit-identical weights
whatever the thread count (issue #17 item 2).

A CNN epoch (conv, batch norm, ReLU, max pooling, dropout, dense, Adam) in the default
channels_last layout, run at 1, 2, 3, 4 and 7 threads: every weight must be identical to the
last bit, so no kernel may sum per-thread partials or switch algorithm on the thread count.
"""
import numpy as np
import pytest

import minnet as mn
from minnet import layers


@pytest.fixture(autouse=True)
def _deterministic():
    mn.config.set_deterministic(True)
    yield
    mn.config.set_deterministic(False)


def _train(threads, data_format):
    previous = mn.get_num_threads()
    mn.set_num_threads(threads)
    try:
        mn.manual_seed(0)
        rng = np.random.default_rng(0)
        shape = (96, 12, 12, 3) if data_format == "channels_last" else (96, 3, 12, 12)
        x = rng.normal(size=shape).astype("float32")
        y = rng.integers(0, 5, size=96)
        model = mn.Sequential([
            layers.Conv2D(8, 3, padding="same", data_format=data_format),
            layers.BatchNormalization(axis=-1 if data_format == "channels_last" else 1),
            layers.ReLU(),
            layers.MaxPooling2D(2, data_format=data_format),
            layers.Conv2D(16, 3, strides=2, data_format=data_format),
            layers.ReLU(),
            layers.Flatten(data_format=data_format),
            layers.Dropout(0.25),
            layers.Dense(5),
        ])
        model.compile(optimizer="adam", loss=mn.losses.SparseCategoricalCrossentropy(from_logits=True))
        model.fit(x, y, batch_size=32, epochs=1, verbose=0, seed=0)
        return model.get_weights()
    finally:
        mn.set_num_threads(previous)


@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
def test_cnn_epoch_is_bit_identical_for_any_thread_count(data_format):
    reference = _train(1, data_format)
    for threads in (2, 3, 4, 7):
        for i, (a, b) in enumerate(zip(reference, _train(threads, data_format))):
            assert np.array_equal(a, b), (f"weight {i} differs between 1 and {threads} threads "
                                          f"({data_format}): max |diff| {np.max(np.abs(a - b))}")


def _train_mlp(threads):
    previous = mn.get_num_threads()
    mn.set_num_threads(threads)
    try:
        mn.manual_seed(0)
        rng = np.random.default_rng(1)
        x = rng.normal(size=(256, 20)).astype("float32")
        y = rng.integers(0, 3, size=256)
        model = mn.Sequential([layers.Dense(64, activation="relu"), layers.BatchNormalization(),
                               layers.Dropout(0.2), layers.Dense(3)])
        model.compile(optimizer="sgd", loss=mn.losses.SparseCategoricalCrossentropy(from_logits=True))
        model.fit(x, y, batch_size=128, epochs=1, verbose=0, seed=0)
        return model.get_weights()
    finally:
        mn.set_num_threads(previous)


def test_mlp_with_batch_norm_is_bit_identical_for_any_thread_count():
    reference = _train_mlp(1)
    for threads in (2, 3, 4, 7):
        assert all(np.array_equal(a, b) for a, b in zip(reference, _train_mlp(threads))), threads


def _recurrent_grads(kind, threads, masked):
    """Outputs and every gradient of one recurrent layer (batch 70: three parts of the
    batch, the last one short) at ``threads`` threads."""
    previous = mn.get_num_threads()
    mn.set_num_threads(threads)
    try:
        mn.manual_seed(0)
        rng = np.random.default_rng(1)
        layer = {"lstm": layers.LSTM, "gru": layers.GRU, "rnn": layers.SimpleRNN}[kind](
            48, return_sequences=True)
        x = mn.tensor(rng.normal(size=(70, 9, 13)).astype("float32"), requires_grad=True)
        mask = None
        if masked:
            mask = rng.random((70, 9)) > 0.3
        y = layer(x, training=True, mask=mask) if masked else layer(x, training=True)
        y.backward(rng.normal(size=y.shape).astype("float32"))
        return [y.data.copy(), x.grad.copy()] + [p.grad.copy() for p in layer.parameters()]
    finally:
        mn.set_num_threads(previous)


@pytest.mark.parametrize("kind", ["lstm", "gru", "rnn"])
@pytest.mark.parametrize("masked", [False, True])
def test_recurrent_layers_are_bit_identical_for_any_thread_count(kind, masked):
    # The weight gradients are GEMMs over all samples and steps (GRU and SimpleRNN used to
    # split them by the thread count even here); the time loop runs the batch in parts of
    # 32 samples fixed by the shape.
    reference = _recurrent_grads(kind, 1, masked)
    for threads in (2, 3, 4):
        for a, b in zip(reference, _recurrent_grads(kind, threads, masked)):
            np.testing.assert_array_equal(a, b)
