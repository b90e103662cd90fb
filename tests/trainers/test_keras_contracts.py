"""Keras 3's Model/trainer contracts (issue 27, item 4; issue 31, item 8): what train_step
receives, sample weights of shape (N,) and (N, 1), dict logs for callbacks, the variable
lists, zero_grad, and the train/eval mode passed down the call so threads cannot flip it."""
import threading

import numpy as np
import pytest

import minnet as mn
from minnet import layers


def _data(n=16, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, 3)).astype(np.float32), rng.standard_normal((n, 1)).astype(np.float32)


class Recording(mn.Model):
    def __init__(self):
        super().__init__()
        self.dense = layers.Dense(1)
        self.received = []

    def call(self, inputs):
        return self.dense(inputs)

    def train_step(self, data):
        self.received.append(data)
        return super().train_step(data)


def _structure(data):
    if isinstance(data, tuple):
        return ("tuple", len(data))
    return (type(data).__name__,)


@pytest.mark.parametrize("with_weights", [False, True])
def test_train_step_receives_the_batch_as_keras_packs_it(with_weights):
    x, y = _data()
    model = Recording()
    model.compile("sgd", "mse")
    weights = np.ones(len(x)) if with_weights else None
    model.fit(x, y, batch_size=8, epochs=1, verbose=0, sample_weight=weights, shuffle=False)
    expected = ("tuple", 3) if with_weights else ("tuple", 2)
    assert [_structure(d) for d in model.received] == [expected, expected]
    np.testing.assert_array_equal(np.asarray(model.received[0][0]), x[:8])


def test_train_step_receives_a_generator_batch_unchanged():
    x, y = _data()
    batches = [(x[:8], y[:8]), (x[8:], y[8:])]
    model = Recording()
    model.compile("sgd", "mse")
    model.fit(iter(batches), epochs=1, steps_per_epoch=2, verbose=0)
    assert [_structure(d) for d in model.received] == [("tuple", 2), ("tuple", 2)]
    for got, sent in zip(model.received, batches):
        np.testing.assert_array_equal(got[0], sent[0])
        np.testing.assert_array_equal(got[1], sent[1])


def test_unsupervised_train_step_gets_x_alone():
    seen = []

    class AutoEncoder(mn.Model):
        def __init__(self):
            super().__init__()
            self.dense = layers.Dense(3)

        def call(self, inputs):
            return self.dense(inputs)

        def train_step(self, data):
            seen.append(type(data))
            x = data
            self.optimizer.zero_grad()
            loss = ((self(x, training=True) - mn.Tensor(x)) ** 2).mean()
            loss.backward()
            self.optimizer.step()
            return {"loss": float(loss.item())}

    model = AutoEncoder()
    model.compile("sgd")
    model.fit(_data()[0], epochs=1, batch_size=8, verbose=0)
    assert seen == [np.ndarray, np.ndarray]


def test_keras_train_step_receives_the_same_structure(keras):
    x, y = _data()
    seen = []

    class KerasRecording(keras.Model):
        def __init__(self):
            super().__init__()
            self.dense = keras.layers.Dense(1)

        def call(self, inputs):
            return self.dense(inputs)

        def train_step(self, data):
            seen.append(_structure(data))
            return super().train_step(data)

    for weights in (None, np.ones(len(x))):
        seen.clear()
        model = KerasRecording()
        model.compile("sgd", "mse")
        model.fit(x, y, batch_size=8, epochs=1, verbose=0, sample_weight=weights, shuffle=False)
        ours = Recording()
        ours.compile("sgd", "mse")
        ours.fit(x, y, batch_size=8, epochs=1, verbose=0, sample_weight=weights, shuffle=False)
        assert seen == [_structure(d) for d in ours.received]


def _fixed_model():
    model = mn.Sequential([layers.Input((3,)), layers.Dense(1)])
    # minnet keeps PyTorch's (out, in) kernel layout
    model.set_weights([np.array([[0.5, -1.0, 2.0]], np.float32), np.array([0.1], np.float32)])
    model.compile("sgd", "mse")
    return model


def test_sample_weight_of_shape_n_and_n_by_1_give_the_same_loss():
    x, y = _data()
    w = np.linspace(0.1, 2.0, len(x))
    model = _fixed_model()
    flat = model.evaluate(x, y, sample_weight=w, verbose=0)
    column = model.evaluate(x, y, sample_weight=w[:, None], verbose=0)
    assert flat == pytest.approx(column, rel=1e-6)
    per_sample = ((x @ np.array([0.5, -1.0, 2.0]) + 0.1 - y[:, 0]) ** 2)
    assert flat == pytest.approx(float(np.mean(per_sample * w)), rel=1e-5)
    history = model.fit(x, y, sample_weight=w[:, None], epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])


def test_weighted_loss_matches_keras(keras):
    x, y = _data()
    w = np.linspace(0.1, 2.0, len(x)).astype(np.float32)
    ours = _fixed_model()
    theirs = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    kernel, bias = ours.get_weights()
    theirs.set_weights([kernel.T, bias])
    theirs.compile("sgd", "mse")
    for weights in (w, w[:, None]):
        assert ours.evaluate(x, y, sample_weight=weights, verbose=0) == pytest.approx(
            theirs.evaluate(x, y, sample_weight=weights, verbose=0), rel=1e-5)


def test_callbacks_always_get_a_dict():
    received = []

    class Spy(mn.callbacks.Callback):
        def _record(self, name, logs):
            received.append((name, type(logs)))

        def on_train_begin(self, logs=None): self._record("train_begin", logs)
        def on_epoch_begin(self, epoch, logs=None): self._record("epoch_begin", logs)
        def on_train_batch_begin(self, batch, logs=None): self._record("batch_begin", logs)
        def on_test_begin(self, logs=None): self._record("test_begin", logs)
        def on_predict_begin(self, logs=None): self._record("predict_begin", logs)
        def on_predict_end(self, logs=None): self._record("predict_end", logs)
        def on_train_end(self, logs=None): self._record("train_end", logs)

    x, y = _data()
    model = _fixed_model()
    model.fit(x, y, epochs=1, verbose=0, callbacks=[Spy()], validation_split=0.25)
    model.predict(x, callbacks=[Spy()])
    names = {name for name, _ in received}
    assert {"train_begin", "epoch_begin", "batch_begin", "test_begin", "train_end",
            "predict_begin", "predict_end"} <= names
    assert all(kind is dict for _, kind in received)


def test_variable_lists_and_zero_grad():
    model = mn.Sequential([layers.Input((3,)), layers.Dense(2), layers.BatchNormalization()])
    assert [id(v) for v in model.variables] == [id(w) for w in model.weights]
    assert len(model.trainable_variables) == 4 and len(model.non_trainable_variables) == 2
    loss = model(np.ones((4, 3), np.float32), training=True).sum()
    loss.backward()
    assert all(p.grad is not None for p in model.trainable_variables)
    model.zero_grad()
    assert all(p.grad is None for p in model.trainable_variables)
    loss = model(np.ones((4, 3), np.float32), training=True).sum()
    loss.backward()
    model.zero_grad(set_to_none=False)
    assert all(np.all(p.grad == 0) for p in model.trainable_variables)


class ModeSpy(layers.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.modes = []

    def call(self, inputs, training=None):
        self.modes.append((threading.get_ident(), training, self.training))
        return inputs


def test_predict_in_one_thread_never_flips_a_concurrent_fit():
    spy = ModeSpy()
    model = mn.Sequential([layers.Input((3,)), layers.Dense(8), spy, layers.Dropout(0.5),
                           layers.Dense(1)])
    model.compile("sgd", "mse")
    x, y = _data(64)
    errors = []
    fit_thread_id = []

    def fit():
        fit_thread_id.append(threading.get_ident())
        try:
            for _ in range(20):
                model.fit(x, y, batch_size=8, epochs=1, verbose=0)
        except Exception as error:      # noqa: BLE001 - reported by the assertion below
            errors.append(error)

    def predict():
        try:
            for _ in range(60):
                model.predict(x, batch_size=16)
                model.evaluate(x, y, batch_size=16, verbose=0)
        except Exception as error:      # noqa: BLE001
            errors.append(error)

    threads = [threading.Thread(target=fit), threading.Thread(target=predict)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    fit_modes = {(a, b) for thread, a, b in spy.modes if thread == fit_thread_id[0]}
    other_modes = {(a, b) for thread, a, b in spy.modes if thread != fit_thread_id[0]}
    assert fit_modes == {(True, True)}
    assert other_modes == {(False, False)}
    # nothing left behind: the model is in inference mode, so predictions are deterministic
    assert model.training is False and all(layer.training is False for layer in model.layers)
    np.testing.assert_array_equal(model.predict(x), model.predict(x))
    np.testing.assert_array_equal(model(x).data, model(x).data)


def _spy_model(framework):
    seen = []

    class Spy(framework.layers.Layer):
        def call(self, inputs, training=None):
            seen.append(training)
            return inputs

    class WithCustomStep(framework.Model):
        def __init__(self):
            super().__init__()
            self.spy = Spy()
            self.dense = framework.layers.Dense(1)

        def call(self, inputs, training=None):
            return self.dense(self.spy(inputs, training=training))

        def train_step(self, data):
            x, _ = data
            seen.append("custom")
            self(x)                         # no training=: inference mode, as in Keras
            seen.append("default")
            return super().train_step(data)

    return WithCustomStep(), seen


def test_a_custom_step_calling_self_without_training_runs_in_inference_mode():
    model, seen = _spy_model(mn)
    model.compile("sgd", "mse")
    model.fit(np.ones((4, 2), np.float32), np.ones((4, 1), np.float32), batch_size=4, verbose=0)
    after = seen[seen.index("custom"):]
    assert after == ["custom", False, "default", True]


def test_the_same_modes_in_keras(keras):
    model, seen = _spy_model(keras)
    model.compile("sgd", "mse")
    model.fit(np.ones((4, 2), np.float32), np.ones((4, 1), np.float32), batch_size=4, verbose=0)
    after = seen[seen.index("custom"):]
    # Keras passes None (the Spy's default) where minnet resolves it to False: both infer.
    assert after[0] == "custom" and after[1] in (None, False) and after[2:] == ["default", True]


def test_default_step_trains_a_model_whose_call_takes_no_training():
    # A difference from Keras (docs/coming_from_keras.md): Keras's default train_step calls
    # `self(x)` without `training` when `call` lacks it, so a Dropout inside stays off;
    # minnet's passes training=True down, so it trains.
    class NoTrainingArg(mn.Model):
        def __init__(self):
            super().__init__()
            self.drop = layers.Dropout(0.5)
            self.spy = ModeSpy()
            self.dense = layers.Dense(2)

        def call(self, inputs):
            return self.dense(self.spy(self.drop(inputs)))

    model = NoTrainingArg()
    model.compile("sgd", "mse")
    model.build((None, 2))                    # builds on zeros in inference mode
    model.spy.modes.clear()
    model.fit(np.ones((8, 2), np.float32), np.ones((8, 2), np.float32), batch_size=4, verbose=0)
    assert [mode for _, mode, _ in model.spy.modes] == [True, True]


def test_compile_takes_keras_execution_options():
    model = _fixed_model()
    model.compile("sgd", "mse", run_eagerly=True, jit_compile=False, steps_per_execution=8,
                  auto_scale_loss=True)
    x, y = _data()
    assert np.isfinite(model.fit(x, y, epochs=1, verbose=0).history["loss"][0])
    with pytest.raises(ValueError, match="steps_per_execution"):
        model.compile("sgd", "mse", steps_per_execution=0)


def _weighted_accuracy_logs(framework):
    x = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 1.0]], np.float32)
    y = np.array([0, 0, 0, 1])                   # predictions right, wrong, right, right
    w = np.array([1.0, 3.0, 1.0, 1.0])
    model = framework.Sequential([framework.Input((2,)), framework.layers.Softmax()])
    model.compile("sgd", "sparse_categorical_crossentropy", metrics=["accuracy"],
                  weighted_metrics=["accuracy"])
    logs = model.evaluate(x, y, sample_weight=w, verbose=0, return_dict=True)
    return {k: round(float(v), 6) for k, v in logs.items() if "accuracy" in k}


def test_metrics_ignore_sample_weights_and_weighted_metrics_use_them():
    assert _weighted_accuracy_logs(mn) == {"accuracy": 0.75, "weighted_accuracy": 0.5}


def test_weighted_metrics_as_in_keras(keras):
    assert _weighted_accuracy_logs(mn) == _weighted_accuracy_logs(keras)


def test_weighted_metrics_survive_save_and_load(tmp_path):
    model = _fixed_model()
    model.compile("sgd", "mse", metrics=["mae"], weighted_metrics=["mae"])
    x, y = _data()
    model.save(tmp_path / "m.minnet")
    loaded = mn.saving.load_model(tmp_path / "m.minnet")
    w = np.linspace(0.0, 1.0, len(x))
    assert set(loaded.evaluate(x, y, sample_weight=w, verbose=0, return_dict=True)) == {
        "loss", "mae", "weighted_mae"}


def test_fit_on_a_model_without_trainable_weights_computes_the_loss_and_warns():
    # guides/making_new_layers_and_models_via_subclassing.py: Input -> an add_loss layer,
    # compile(optimizer="adam") without a loss; Keras's torch trainer skips the backward pass
    class ActivityLoss(layers.Layer):
        def call(self, inputs):
            self.add_loss(1e-2 * mn.ops.mean(inputs))
            return inputs

    inputs = mn.Input((3,))
    model = mn.Model(inputs, ActivityLoss()(inputs))
    model.compile(optimizer="adam")
    x = np.full((2, 3), 2.0, "float32")
    with pytest.warns(UserWarning, match="no trainable weights"):
        history = model.fit(x, x, verbose=0)
    np.testing.assert_allclose(history.history["loss"], [0.02], rtol=1e-6)


def test_a_metric_with_several_values_is_logged_as_an_array():
    """F1Score(average=None) gives one score per class: fit and evaluate log the array, as
    Keras does (float() of it raised TypeError)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 5)).astype(np.float32)
    y = np.eye(3, dtype=np.float32)[rng.integers(0, 3, 64)]
    model = mn.Sequential([layers.Input((5,)), layers.Dense(3, activation="softmax")])
    model.compile(optimizer="adam", loss="categorical_crossentropy",
                  metrics=[mn.metrics.F1Score(), "accuracy"])
    history = model.fit(x, y, epochs=2, batch_size=16, verbose=0)
    scores = history.history["f1_score"]
    assert len(scores) == 2 and all(np.shape(s) == (3,) for s in scores)
    assert isinstance(history.history["accuracy"][0], float)
    logs = model.evaluate(x, y, verbose=0, return_dict=True)
    metric = mn.metrics.F1Score()
    metric.update_state(y, model.predict(x, verbose=0))
    np.testing.assert_allclose(logs["f1_score"], np.asarray(metric.result()), rtol=1e-6)


def test_two_metrics_of_one_name_get_two_log_entries_as_keras():
    """[AUC(), AUC(curve="PR")]: Keras logs auc and auc_1; minnet logged one auc (the second
    overwrote the first)."""
    rng = np.random.default_rng(0)
    x = rng.random((32, 4)).astype(np.float32)
    y = (rng.random(32) > 0.5).astype(np.float32)
    model = mn.Sequential([layers.Input((4,)), layers.Dense(1, activation="sigmoid")])
    roc, pr = mn.metrics.AUC(), mn.metrics.AUC(curve="PR")
    model.compile(optimizer="adam", loss="binary_crossentropy", metrics=[roc, pr, roc])
    logs = model.evaluate(x, y, verbose=0, return_dict=True)
    assert {"auc", "auc_1"} <= set(logs) and "auc_2" not in logs
    reference = mn.metrics.AUC(curve="PR")
    reference.update_state(y, model.predict(x, verbose=0))
    assert logs["auc_1"] == pytest.approx(float(reference.result()))
