"""Callbacks, driven by a tiny fake model and a fake fit loop (Keras hook order)."""
import csv
import math
import re
import sys

import numpy as np
import pytest

import minnet as mn
from minnet import callbacks, layers, optimizers


class FakeLayer:
    def __init__(self, name, params):
        self.name = name
        self._params = params

    def parameters(self):
        return self._params


class FakeModel:
    """What callbacks may use of a model: stop_training, optimizer, weights, save, layers, history."""

    def __init__(self, learning_rate=0.1):
        self.stop_training = False
        self.optimizer = optimizers.SGD(learning_rate=learning_rate)
        self.weights = [np.zeros(2)]
        self.saved = []
        self.layers = []
        self.history = None

    def get_weights(self):
        return [w.copy() for w in self.weights]

    def set_weights(self, weights):
        self.weights = [np.array(w) for w in weights]

    def save(self, path):
        self.saved.append(("model", path))

    def save_weights(self, path):
        self.saved.append(("weights", path))


def fake_fit(model, cbs, epoch_logs, steps=3, verbose=0, batch_losses=None, add_progbar=False):
    """Run the hooks as fit does; epoch e sets the weights to [e, e] and ends with epoch_logs[e]."""
    cb_list = callbacks.CallbackList(cbs, add_history=True, add_progbar=add_progbar, model=model,
                                     epochs=len(epoch_logs), steps=steps, verbose=verbose)
    model.stop_training = False
    cb_list.on_train_begin()
    for epoch, end_logs in enumerate(epoch_logs):
        cb_list.on_epoch_begin(epoch)
        model.weights = [np.full(2, float(epoch))]
        for batch in range(steps):
            cb_list.on_train_batch_begin(batch)
            loss = batch_losses[epoch][batch] if batch_losses else end_logs.get("loss", 1.0)
            cb_list.on_train_batch_end(batch, {"loss": loss})
            if model.stop_training:
                break
        cb_list.on_epoch_end(epoch, dict(end_logs))
        if model.stop_training:
            break
    cb_list.on_train_end()
    return cb_list


def losses(values, key="val_loss"):
    return [{"loss": 1.0, key: v} for v in values]


# ---- CallbackList and History -----------------------------------------------------------
def test_callback_list_order_params_and_model():
    calls = []

    class Recorder(callbacks.Callback):
        def on_train_begin(self, logs=None): calls.append("train_begin")
        def on_epoch_begin(self, epoch, logs=None): calls.append(f"epoch_begin{epoch}")
        def on_batch_end(self, batch, logs=None): calls.append(f"batch_end{batch}")  # Keras 2 alias
        def on_epoch_end(self, epoch, logs=None): calls.append(f"epoch_end{epoch}")
        def on_train_end(self, logs=None): calls.append("train_end")

    model = FakeModel()
    rec = Recorder()
    cb_list = fake_fit(model, [rec], losses([1.0]), steps=2, add_progbar=True)
    assert calls == ["train_begin", "epoch_begin0", "batch_end0", "batch_end1", "epoch_end0", "train_end"]
    assert rec.model is model and rec.params == {"epochs": 1, "steps": 2, "verbose": 0}
    assert isinstance(cb_list.callbacks[-2], callbacks.History)
    assert isinstance(cb_list.callbacks[-1], callbacks.ProgbarLogger)
    with pytest.raises(TypeError, match="callbacks"):
        callbacks.CallbackList([object()])


def test_history_records_epochs_learning_rate_and_time():
    model = FakeModel(learning_rate=0.05)
    cb_list = fake_fit(model, [], [{"loss": 0.5, "accuracy": np.float32(0.75)},
                                   {"loss": 0.25, "accuracy": 0.875}])
    history = cb_list.history
    assert history.epoch == [0, 1]
    assert history.history["loss"] == [0.5, 0.25]
    assert history.history["accuracy"] == [0.75, 0.875]
    assert history.history["learning_rate"] == [0.05, 0.05]
    assert all(t >= 0 for t in history.history["epoch_time"])
    assert model.history is history


def test_history_plot(tmp_path):
    pytest.importorskip("matplotlib")
    history = callbacks.History()
    for e, (l, v) in enumerate([(1.0, 1.2), (0.5, 0.9)]):
        history.on_epoch_begin(e)
        history.on_epoch_end(e, {"loss": l, "val_loss": v, "accuracy": 0.5 + e / 4})
    path = tmp_path / "curves.png"
    fig = history.plot(str(path))
    assert path.stat().st_size > 0
    assert [ax.get_title() for ax in fig.axes] == ["loss", "accuracy"]
    with pytest.raises(ValueError, match="metrics"):
        history.plot(str(path), metrics=["nope"])


def test_history_plot_without_matplotlib(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match=re.escape("pip install matplotlib")):
        callbacks.History().plot()


# ---- EarlyStopping ----------------------------------------------------------------------
def test_early_stopping_patience_and_restore():
    model = FakeModel()
    stop = callbacks.EarlyStopping(patience=2, restore_best_weights=True)
    cb_list = fake_fit(model, [stop], losses([1.0, 0.5, 0.7, 0.6, 0.4, 0.3]))
    # best at epoch 1; epochs 2 and 3 do not improve -> stop after epoch 3
    assert stop.stopped_epoch == 3 and stop.best_epoch == 1 and stop.best == 0.5
    assert len(cb_list.history.epoch) == 4
    np.testing.assert_array_equal(model.weights[0], [1.0, 1.0])


def test_early_stopping_restores_when_not_stopped_early():
    model = FakeModel()
    stop = callbacks.EarlyStopping(patience=5, restore_best_weights=True)
    fake_fit(model, [stop], losses([1.0, 0.2, 0.7]))
    assert stop.stopped_epoch == 0
    np.testing.assert_array_equal(model.weights[0], [1.0, 1.0])


def test_early_stopping_max_mode_min_delta_and_start_epoch():
    model = FakeModel()
    stop = callbacks.EarlyStopping(monitor="val_accuracy", patience=1, min_delta=0.05)
    fake_fit(model, [stop], losses([0.5, 0.52, 0.9, 0.91, 0.92], key="val_accuracy"))
    assert stop.stopped_epoch == 1           # +0.02 < min_delta: no improvement, patience 1
    stop = callbacks.EarlyStopping(patience=0, start_from_epoch=3)
    fake_fit(model, [stop], losses([1.0, 2.0, 3.0, 4.0, 5.0, 6.0]))
    assert stop.stopped_epoch == 4


def test_early_stopping_baseline():
    model = FakeModel()
    stop = callbacks.EarlyStopping(patience=2, baseline=0.5)
    fake_fit(model, [stop], losses([0.9, 0.8, 0.7, 0.6]))
    assert stop.stopped_epoch == 1          # never beats the baseline: stop after `patience` epochs


def test_early_stopping_missing_monitor_warns():
    model = FakeModel()
    stop = callbacks.EarlyStopping(monitor="val_loss")
    with pytest.warns(UserWarning, match="val_loss"):
        fake_fit(model, [stop], [{"loss": 1.0}, {"loss": 2.0}])
    assert not model.stop_training


@pytest.mark.parametrize("make,arg", [
    (lambda: callbacks.EarlyStopping(mode="maximum"), "mode"),
    (lambda: callbacks.EarlyStopping(patience=-1), "patience"),
    (lambda: callbacks.EarlyStopping(monitor="val_custom"), "mode"),
    (lambda: callbacks.ReduceLROnPlateau(factor=1.0), "factor"),
    (lambda: callbacks.ReduceLROnPlateau(patience=1.5), "patience"),
    (lambda: callbacks.ReduceLROnPlateau(min_lr=-1), "min_lr"),
    (lambda: callbacks.ModelCheckpoint("x", save_freq=0), "save_freq"),
    (lambda: callbacks.ModelCheckpoint("x", mode="best"), "mode"),
    (lambda: callbacks.CSVLogger("x.csv", separator=";;"), "separator"),
    (lambda: callbacks.LearningRateScheduler(0.1), "schedule"),
    (lambda: callbacks.resolve_verbose(3), "verbose"),
])
def test_bad_arguments(make, arg):
    with pytest.raises((ValueError, TypeError), match=arg):
        make()


# ---- ModelCheckpoint --------------------------------------------------------------------
def test_model_checkpoint_file_names(tmp_path):
    model = FakeModel()
    path = str(tmp_path / "ckpt" / "model-{epoch:02d}-{val_loss:.2f}.minnet")
    fake_fit(model, [callbacks.ModelCheckpoint(path)], losses([0.5, 0.25]))
    assert model.saved == [("model", str(tmp_path / "ckpt" / "model-01-0.50.minnet")),
                           ("model", str(tmp_path / "ckpt" / "model-02-0.25.minnet"))]
    assert (tmp_path / "ckpt").is_dir()


def test_model_checkpoint_save_best_only_weights(tmp_path):
    model = FakeModel()
    ckpt = callbacks.ModelCheckpoint(str(tmp_path / "w{epoch}.npz"), save_best_only=True,
                                     save_weights_only=True, verbose=1)
    fake_fit(model, [ckpt], losses([0.5, 0.7, 0.4, 0.4]))
    assert model.saved == [("weights", str(tmp_path / "w1.npz")), ("weights", str(tmp_path / "w3.npz"))]
    assert ckpt.best == 0.4


def test_model_checkpoint_max_mode_and_batch_frequency(tmp_path):
    model = FakeModel()
    fake_fit(model, [callbacks.ModelCheckpoint(str(tmp_path / "m.minnet"), monitor="val_accuracy",
                                               save_best_only=True)],
             losses([0.5, 0.7, 0.6], key="val_accuracy"))
    assert len(model.saved) == 2
    model = FakeModel()
    fake_fit(model, [callbacks.ModelCheckpoint(str(tmp_path / "e{epoch}-b{batch}.minnet"), save_freq=2)],
             losses([1.0, 1.0]), steps=3)
    assert [p for _, p in model.saved] == [str(tmp_path / n) for n in ("e1-b2.minnet", "e2-b1.minnet",
                                                                       "e2-b3.minnet")]


def test_model_checkpoint_unknown_field(tmp_path):
    with pytest.raises(KeyError, match="val_acc"):
        fake_fit(FakeModel(), [callbacks.ModelCheckpoint(str(tmp_path / "{val_acc}.minnet"))], losses([1.0]))


# ---- learning-rate callbacks ------------------------------------------------------------
def test_learning_rate_scheduler_new_and_old_signatures(capsys):
    model = FakeModel(learning_rate=1.0)
    sched = callbacks.LearningRateScheduler(lambda epoch, lr: lr * 0.5 if epoch > 0 else lr, verbose=1)
    cb_list = fake_fit(model, [sched], losses([1.0, 1.0, 1.0]))
    assert model.optimizer.learning_rate == 0.25
    assert cb_list.history.history["learning_rate"] == [1.0, 0.5, 0.25]
    assert "LearningRateScheduler setting learning rate to 0.25" in capsys.readouterr().out
    model = FakeModel()
    fake_fit(model, [callbacks.LearningRateScheduler(lambda epoch: 0.1 / (epoch + 1))], losses([1.0] * 4))
    assert model.optimizer.learning_rate == pytest.approx(0.025)
    with pytest.raises(ValueError, match="should be a float"):
        fake_fit(FakeModel(), [callbacks.LearningRateScheduler(lambda epoch: "fast")], losses([1.0]))


def test_reduce_lr_on_plateau():
    model = FakeModel(learning_rate=1.0)
    reduce = callbacks.ReduceLROnPlateau(factor=0.5, patience=2, min_lr=0.3)
    cb_list = fake_fit(model, [reduce], losses([1.0, 1.0, 1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.5]))
    # no improvement at epochs 1,2 -> 0.5; epochs 3,4 -> max(0.25, 0.3)=0.3; then min_lr reached
    assert cb_list.history.history["learning_rate"] == [1.0, 1.0, 1.0, 0.5, 0.5, 0.3, 0.3, 0.3, 0.3]
    assert model.optimizer.learning_rate == 0.3


def test_reduce_lr_on_plateau_cooldown():
    model = FakeModel(learning_rate=1.0)
    reduce = callbacks.ReduceLROnPlateau(factor=0.1, patience=1, cooldown=2, min_delta=0.0)
    cb_list = fake_fit(model, [reduce], losses([1.0] * 6))
    lr = cb_list.history.history["learning_rate"]
    # Keras semantics: the cooldown counter is decremented before the check, so with
    # cooldown=2 the rate is reduced at epochs 1, 3, 5 (logged before the reduction).
    assert lr == pytest.approx([1.0, 1.0, 0.1, 0.1, 0.01, 0.01])


# ---- CSVLogger, TerminateOnNaN, GradientMonitor -----------------------------------------
def test_csv_logger(tmp_path):
    path = tmp_path / "log.csv"
    fake_fit(FakeModel(), [callbacks.CSVLogger(str(path))],
             [{"loss": 0.5, "val_loss": 0.75}, {"loss": 0.25, "val_loss": np.float64(0.5)}])
    rows = list(csv.reader(open(path)))
    assert rows == [["epoch", "loss", "val_loss"], ["0", "0.5", "0.75"], ["1", "0.25", "0.5"]]
    fake_fit(FakeModel(), [callbacks.CSVLogger(str(path), separator=";", append=True)],
             [{"loss": 0.125, "val_loss": 0.25}])
    lines = open(path).read().splitlines()
    assert lines[-1] == "0;0.125;0.25" and len(lines) == 4


def test_terminate_on_nan(capsys):
    model = FakeModel()
    batch_losses = [[1.0, 0.9, 0.8], [0.7, math.nan, 0.5], [0.4, 0.3, 0.2]]
    cb_list = fake_fit(model, [callbacks.TerminateOnNaN()], losses([1.0, 1.0, 1.0]),
                       batch_losses=batch_losses)
    assert model.stop_training and cb_list.history.epoch == [0, 1]
    assert "Batch 1: Invalid loss, terminating training" in capsys.readouterr().out
    model = FakeModel()
    fake_fit(model, [callbacks.TerminateOnNaN()], losses([1.0]), batch_losses=[[1.0, math.inf, 1.0]])
    assert model.stop_training


def test_terminate_on_nan_raise_error_is_keras_strict_mode():
    """Keras 3's ``TerminateOnNaN(raise_error=True)``: a RuntimeError at that batch instead
    of a graceful stop."""
    model = FakeModel()
    with pytest.raises(RuntimeError, match="NaN or Inf loss encountered at batch 1"):
        fake_fit(model, [callbacks.TerminateOnNaN(raise_error=True)], losses([1.0]),
                 batch_losses=[[1.0, math.nan, 1.0]])
    assert not model.stop_training
    with pytest.raises(TypeError, match="`raise_error`"):
        callbacks.TerminateOnNaN(raise_error="yes")


def test_gradient_monitor():
    model = FakeModel()
    w1, b1, w2 = mn.Parameter(np.zeros((2, 2))), mn.Parameter(np.zeros(2)), mn.Parameter(np.zeros(3))
    model.layers = [FakeLayer("dense", [w1, b1]), FakeLayer("flatten", []), FakeLayer("out", [w2])]
    monitor = callbacks.GradientMonitor()
    grads = iter([3.0, 1.0, 5.0, 2.0])

    class SetGrads(callbacks.Callback):     # plays the model's backward pass
        def on_train_batch_end(self, batch, logs=None):
            g = next(grads)
            w1.grad = np.full((2, 2), g)
            b1.grad = None if batch else np.full(2, g)
            w2.grad = np.full(3, 2 * g)

    cb_list = fake_fit(model, [SetGrads(), monitor], losses([1.0, 1.0]), steps=2)
    h = cb_list.history.history
    dense = [(math.sqrt(6 * 9) + math.sqrt(4)) / 2, (math.sqrt(6 * 25) + math.sqrt(4 * 4)) / 2]
    out = [(math.sqrt(3 * 36) + math.sqrt(3 * 4)) / 2, (math.sqrt(3 * 100) + math.sqrt(3 * 16)) / 2]
    assert h["grad_norm/dense"] == pytest.approx(dense)
    assert h["grad_norm/out"] == pytest.approx(out)
    assert "grad_norm/flatten" not in h


# ---- ProgbarLogger ----------------------------------------------------------------------
def test_progbar_verbose_1(capsys):
    bar = callbacks.ProgbarLogger(interval=0.0)
    fake_fit(FakeModel(), [bar], [{"loss": 0.4321, "accuracy": 0.875, "val_loss": 0.5}] * 2,
             steps=4, verbose=1)
    out = capsys.readouterr().out
    lines = out.split("\n")
    assert lines[0] == "Epoch 1/2"
    frames = lines[1].split("\r")[1:]
    assert frames[0].startswith("1/4 [======>.......................] - ETA: ")
    assert frames[0].rstrip().endswith(" - loss: 0.4321")
    assert re.fullmatch(r"4/4 \[==============================\] - \d+s \d+(us|ms|s)/step"
                        r" - loss: 0\.4321 - accuracy: 0\.8750 - val_loss: 0\.5000", frames[-1].rstrip())
    assert lines[2] == "Epoch 2/2"
    assert out.endswith("\n")


def test_progbar_verbose_2(capsys):
    fake_fit(FakeModel(), [callbacks.ProgbarLogger()], [{"loss": 0.25, "val_loss": 0.0005}] * 3,
             steps=50, verbose=2)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0::2] == ["Epoch 1/3", "Epoch 2/3", "Epoch 3/3"]
    for line in lines[1::2]:
        assert re.fullmatch(r"50/50 - \d+s - \d+(us|ms|s)/step - loss: 0\.2500 - val_loss: 5\.0000e-04", line)
    assert "\r" not in "".join(lines)


def test_progbar_verbose_0_and_evaluate(capsys):
    fake_fit(FakeModel(), [callbacks.ProgbarLogger()], losses([1.0]), verbose=0)
    assert capsys.readouterr().out == ""
    bar = callbacks.ProgbarLogger()
    cb_list = callbacks.CallbackList([bar], add_history=False, model=FakeModel(), epochs=1, steps=None,
                                     verbose=2)
    cb_list.on_test_begin()
    for b in range(7):
        cb_list.on_test_batch_end(b, {"loss": 2.0})
    cb_list.on_test_end({"loss": 2.0})
    assert re.fullmatch(r"7/7 - \d+s - \d+(us|ms|s)/step - loss: 2\.0000\n", capsys.readouterr().out)


def test_resolve_verbose(monkeypatch):
    assert callbacks.resolve_verbose(0) == 0 and callbacks.resolve_verbose(2) == 2

    class Stream:
        def __init__(self, tty): self.tty = tty
        def isatty(self): return self.tty
        def write(self, s): pass
    monkeypatch.setattr(sys, "stdout", Stream(True))
    assert callbacks.resolve_verbose("auto") == 1
    monkeypatch.setattr(sys, "stdout", Stream(False))
    assert callbacks.resolve_verbose("auto") == 2


# ---- LambdaCallback, BackupAndRestore, TerminateOnNaN's layer ------------------------
def _dropout_model():
    model = mn.Sequential([mn.Input((4,)), layers.Dense(8, activation="relu"), layers.Dropout(0.3),
                           layers.Dense(2)])
    model.compile(optimizer=optimizers.Adam(learning_rate=1e-2), loss="mse")
    return model


def test_lambda_callback_calls_the_functions():
    events = []
    model = _dropout_model()
    x = np.random.default_rng(0).standard_normal((16, 4)).astype(np.float32)
    cb = callbacks.LambdaCallback(on_epoch_end=lambda epoch, logs: events.append(("epoch", epoch)),
                                  on_train_end=lambda logs: events.append("end"),
                                  on_test_end=lambda logs: events.append("test"))
    model.fit(x, x[:, :2], epochs=2, verbose=0, validation_data=(x, x[:, :2]), callbacks=[cb])
    assert events == ["test", ("epoch", 0), "test", ("epoch", 1), "end"]
    with pytest.raises(ValueError, match="on_epoch_ended"):
        callbacks.LambdaCallback(on_epoch_ended=print)
    with pytest.raises(TypeError, match="on_epoch_end"):
        callbacks.LambdaCallback(on_epoch_end=3)


def test_backup_and_restore_resumes_a_killed_fit_exactly(tmp_path):
    x = np.random.default_rng(0).standard_normal((40, 4)).astype(np.float32)
    y = x[:, :2] * 2.0

    mn.manual_seed(7)
    reference = _dropout_model()
    reference.fit(x, y, epochs=4, batch_size=8, verbose=0)

    class Kill(callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            if epoch == 1:
                raise KeyboardInterrupt

    backup = callbacks.BackupAndRestore(tmp_path / "backup")
    mn.manual_seed(7)
    model = _dropout_model()
    with pytest.raises(KeyboardInterrupt):
        model.fit(x, y, epochs=4, batch_size=8, verbose=0, callbacks=[backup, Kill()])
    mn.manual_seed(123)                                   # another process: other random state
    resumed = _dropout_model()
    history = resumed.fit(x, y, epochs=4, batch_size=8, verbose=0,
                          callbacks=[callbacks.BackupAndRestore(tmp_path / "backup")])
    assert len(history.history["loss"]) == 2              # epochs 3 and 4 only
    for a, b in zip(reference.get_weights(), resumed.get_weights()):
        np.testing.assert_array_equal(a, b)
    assert resumed.optimizer.iterations == reference.optimizer.iterations
    assert not (tmp_path / "backup" / "backup.npz").exists()


def test_terminate_on_nan_names_the_first_bad_layer(capsys):
    model = mn.Sequential([mn.Input((3,)), layers.Dense(4, name="ok"), layers.Lambda(lambda t: t.log(), name="log"),
                           layers.Dense(1, name="after")])
    model.compile(optimizer="sgd", loss="mse")
    x = -np.ones((4, 3), np.float32) * 10
    with np.errstate(all="ignore"):
        model.fit(x, np.zeros((4, 1), np.float32), epochs=3, verbose=0,
                  callbacks=[callbacks.TerminateOnNaN()])
    out = capsys.readouterr().out
    assert "Invalid loss, terminating training" in out
    assert model.nonfinite_layer == "log" and "layer 'log'" in out
