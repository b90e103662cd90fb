"""The trainer under a Sequential: compile/fit/evaluate/predict, modes, callback hooks, seeds, argument validation, a PyTorch loop (minnet.trainers)."""
import numpy as np
import pytest

import minnet as mn
from minnet import layers, losses, optimizers
from minnet.datasets import make_blobs, make_regression


@pytest.fixture(autouse=True, scope="module")
def _channels_first_images():
    # The image models here are built for NCHW data; Conv2D and the image layers follow
    # mn.config.image_data_format(), whose default is Keras's channels_last.
    mn.config.set_image_data_format("channels_first")
    yield
    mn.config.set_image_data_format("channels_last")


def _blobs(n=120, seed=0):
    x, y = make_blobs(n, n_features=4, centers=3, cluster_std=1.0, seed=seed)
    return x, y


def _classifier(seed=0, dropout=0.0, n_features=4):
    mn.manual_seed(seed)
    model = mn.Sequential([layers.Input((n_features,)), layers.Dense(16, activation="relu")]
                          + ([layers.Dropout(dropout)] if dropout else []) + [layers.Dense(3)])
    return model


def _compiled_classifier(seed=0, dropout=0.0, optimizer=None, metrics=("accuracy",)):
    model = _classifier(seed, dropout)
    model.compile(optimizer=optimizer or optimizers.Adam(learning_rate=0.01),
                  loss=losses.SparseCategoricalCrossentropy(from_logits=True), metrics=list(metrics))
    return model


def test_fit_decreases_loss_and_learns_separable_blobs():
    x, y = _blobs(150)
    model = _compiled_classifier()
    history = model.fit(x, y, batch_size=16, epochs=15, verbose=0, seed=0)
    losses_ = history.history["loss"]
    assert len(losses_) == 15 and losses_[-1] < 0.5 * losses_[0]
    assert history.history["accuracy"][-1] > 0.95
    result = model.evaluate(x, y, verbose=0, return_dict=True)
    assert set(result) == {"loss", "accuracy"} and result["accuracy"] > 0.95
    loss_value, accuracy = model.evaluate(x, y, verbose=0)
    assert loss_value == pytest.approx(result["loss"]) and accuracy == pytest.approx(result["accuracy"])
    probs = model.predict(x, batch_size=7)
    assert isinstance(probs, np.ndarray) and probs.shape == (150, 3)
    assert (probs.argmax(1) == y).mean() == pytest.approx(result["accuracy"])


def test_evaluate_loss_is_batch_size_weighted_mean():
    x, y = _blobs(50)
    model = _compiled_classifier(metrics=())
    full = model.evaluate(x, y, batch_size=50, verbose=0)
    batched = model.evaluate(x, y, batch_size=7, verbose=0)
    assert isinstance(full, float)
    assert batched == pytest.approx(full, rel=1e-5)
    logits = model.predict(x)
    shifted = logits - logits.max(1, keepdims=True)
    reference = -(shifted[np.arange(50), y] - np.log(np.exp(shifted).sum(1))).mean()
    assert full == pytest.approx(reference, rel=1e-5)


def test_regression_with_mse_strings():
    x, y = make_regression(200, n_features=3, noise=0.1, seed=0)
    mn.manual_seed(0)
    model = mn.Sequential([layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse", metrics=["mae"])
    assert isinstance(model.optimizer, optimizers.SGD) and isinstance(model.loss, losses.MeanSquaredError)
    model.optimizer.learning_rate = 0.1
    history = model.fit(x, y, epochs=20, batch_size=32, verbose=0)
    assert history.history["loss"][-1] < 0.05 and "mae" in history.history
    assert model.optimizer.params and len(model.optimizer.params) == 2


def test_optimizer_created_with_params_is_kept():
    model = _classifier()
    opt = optimizers.SGD(model.parameters(), learning_rate=0.05)
    model.compile(optimizer=opt, loss="sparse_categorical_crossentropy")
    assert model.optimizer is opt and len(opt.params) == 4


def test_compile_strings_resolve():
    model = _classifier()
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy", "acc"])
    assert type(model.optimizer).__name__ == "Adam"
    assert model.metrics_names == ["loss", "accuracy", "acc"]
    with pytest.raises(ValueError):
        model.compile(optimizer="no-such-optimizer", loss="mse")
    with pytest.raises(ValueError):
        model.compile(optimizer="sgd", loss="no-such-loss")
    with pytest.raises(TypeError, match="metrics"):
        model.compile(optimizer="sgd", loss="mse", metrics="accuracy")
    with pytest.raises(ValueError, match="loss_weights"):
        model.compile(optimizer="sgd", loss="mse", loss_weights="big")


def test_loss_weights_scale_loss():
    x, y = _blobs(40)
    model = _compiled_classifier(metrics=())
    base = model.evaluate(x, y, verbose=0)
    model.compile(optimizer="sgd", loss=losses.SparseCategoricalCrossentropy(from_logits=True),
                  loss_weights=0.5)
    assert model.evaluate(x, y, verbose=0) == pytest.approx(0.5 * base, rel=1e-6)


def test_validation_data_and_split_logs():
    x, y = _blobs(100)
    model = _compiled_classifier()
    history = model.fit(x, y, epochs=2, verbose=0, validation_split=0.2)
    assert set(history.history) >= {"loss", "accuracy", "val_loss", "val_accuracy"}
    model2 = _compiled_classifier()
    history2 = model2.fit(x[:80], y[:80], epochs=2, verbose=0, validation_data=(x[80:], y[80:]), shuffle=False)
    model3 = _compiled_classifier()
    history3 = model3.fit(x, y, epochs=2, verbose=0, validation_split=0.2, shuffle=False)
    np.testing.assert_allclose(history2.history["val_loss"], history3.history["val_loss"], rtol=1e-6)
    val_loss = model2.evaluate(x[80:], y[80:], verbose=0)[0]
    assert history2.history["val_loss"][-1] == pytest.approx(val_loss, rel=1e-5)


def test_validation_split_warns_when_a_class_is_only_in_validation():
    x = np.random.default_rng(0).normal(size=(40, 4)).astype(np.float32)
    y = np.concatenate([np.arange(32) % 2, np.full(8, 2)])   # sorted data: class 2 comes last
    model = _compiled_classifier()
    with pytest.warns(UserWarning, match=r"class\(es\) \[2\]"):
        model.fit(x, y, epochs=1, verbose=0, validation_split=0.2)


def test_sample_weight_and_class_weight_agree():
    x, y = _blobs(60)
    class_weight = {0: 2.0, 1: 0.5, 2: 1.0}
    sample_weight = np.array([class_weight[int(k)] for k in y])
    a = _compiled_classifier(metrics=())
    a.fit(x, y, epochs=2, batch_size=8, verbose=0, class_weight=class_weight, seed=1)
    b = _compiled_classifier(metrics=())
    b.fit(x, y, epochs=2, batch_size=8, verbose=0, sample_weight=sample_weight, seed=1)
    for wa, wb in zip(a.get_weights(), b.get_weights()):
        np.testing.assert_array_equal(wa, wb)
    c = _compiled_classifier(metrics=())
    c.fit(x, y, epochs=2, batch_size=8, verbose=0, seed=1)
    assert not np.array_equal(a.get_weights()[0], c.get_weights()[0])
    zero = a.evaluate(x, y, sample_weight=np.zeros(60), verbose=0)
    assert zero == 0.0


def test_predict_builds_no_graph_and_leaves_no_grads():
    x, y = _blobs(20)
    model = _compiled_classifier()
    model.predict(x)
    model.evaluate(x, y, verbose=0)
    assert all(p.grad is None for p in model.parameters())


def test_batch_methods():
    x, y = _blobs(32)
    model = _compiled_classifier()
    before = model.get_weights()[0].copy()
    loss_value, accuracy = model.train_on_batch(x, y)
    assert np.isfinite(loss_value) and 0 <= accuracy <= 1
    assert not np.array_equal(before, model.get_weights()[0])
    result = model.test_on_batch(x, y, return_dict=True)
    assert set(result) == {"loss", "accuracy"}
    np.testing.assert_allclose(model.predict_on_batch(x), model.predict(x), rtol=1e-6)


def test_modes_are_restored_after_fit_evaluate_predict():
    x, y = _blobs(30)
    model = _compiled_classifier(dropout=0.5)
    assert model.training is False
    model.fit(x, y, epochs=1, verbose=0)
    assert model.training is False and all(not layer.training for layer in model.layers)
    model.train()
    assert model.training and all(layer.training for layer in model.layers)
    model.evaluate(x, y, verbose=0)
    model.predict(x)
    assert model.training and all(layer.training for layer in model.layers)
    model.fit(x, y, epochs=1, verbose=0)
    assert model.training
    assert model.eval() is model and not model.layers[1].training


def test_predict_uses_eval_mode_dropout_off():
    x, _ = _blobs(30)
    model = _compiled_classifier(dropout=0.5)
    model.train()
    np.testing.assert_array_equal(model.predict(x), model.predict(x))
    a, b = model(x).numpy(), model(x).numpy()           # training mode: dropout active
    assert not np.array_equal(a, b)


def test_training_flag_seen_by_layers_during_fit():
    seen = []

    class Spy(layers.Layer):
        def call(self, x, training=False):
            seen.append(training)
            return x

    x, y = _blobs(20)
    model = mn.Sequential([layers.Dense(3), Spy()])
    model.compile(optimizer="sgd", loss=losses.SparseCategoricalCrossentropy(from_logits=True))
    model.build((None, 4))
    seen.clear()  # building may probe the layer once in eval mode
    model.fit(x, y, batch_size=10, epochs=1, verbose=0, validation_data=(x, y))
    assert seen == [True, True, False, False]


def test_stop_training_checked_after_each_batch():
    from minnet.callbacks import Callback

    class StopAfterThree(Callback):
        def __init__(self):
            super().__init__()
            self.batches = 0

        def on_train_batch_end(self, batch, logs=None):
            self.batches += 1
            if self.batches == 3:
                self.model.stop_training = True

    x, y = _blobs(100)
    model = _compiled_classifier()
    stopper = StopAfterThree()
    history = model.fit(x, y, batch_size=10, epochs=5, verbose=0, callbacks=[stopper])
    assert stopper.batches == 3 and len(history.history["loss"]) == 1


def test_callback_hooks_order_and_params():
    from minnet.callbacks import Callback
    events = []

    class Recorder(Callback):
        def on_train_begin(self, logs=None):
            events.append(("train_begin", dict(self.params)))

        def on_epoch_begin(self, epoch, logs=None):
            events.append(("epoch_begin", epoch))

        def on_train_batch_end(self, batch, logs=None):
            events.append(("batch_end", batch, sorted(logs)))

        def on_epoch_end(self, epoch, logs=None):
            events.append(("epoch_end", epoch, sorted(logs)))

        def on_test_begin(self, logs=None):
            events.append(("test_begin",))

    x, y = _blobs(20)
    model = _compiled_classifier()
    model.fit(x, y, batch_size=10, epochs=2, verbose=0, callbacks=[Recorder()], validation_data=(x, y))
    params = events[0][1]
    assert params["epochs"] == 2 and params["steps"] == 2 and params["verbose"] == 0
    assert [e[0] for e in events[1:]] == ["epoch_begin", "batch_end", "batch_end", "test_begin",
                                          "epoch_end"] * 2
    assert events[2][2] == ["accuracy", "loss"]
    assert events[5][2] == ["accuracy", "loss", "val_accuracy", "val_loss"]


def test_progress_output_modes(capsys):
    x, y = _blobs(40)
    model = _compiled_classifier()
    model.fit(x, y, batch_size=10, epochs=2, verbose=0)
    assert capsys.readouterr().out == ""
    model.fit(x, y, batch_size=10, epochs=2, verbose=2)
    out = capsys.readouterr().out
    assert "loss" in out and "accuracy" in out and "Epoch 2/2" in out
    model.fit(x, y, batch_size=10, epochs=2, verbose=1)
    out = capsys.readouterr().out
    assert "loss" in out and "Epoch 1/2" in out
    model.evaluate(x, y, verbose=1)
    assert "loss" in capsys.readouterr().out
    model.evaluate(x, y, verbose=0)
    model.predict(x)
    assert capsys.readouterr().out == ""


def test_epochs_zero_and_initial_epoch():
    x, y = _blobs(20)
    model = _compiled_classifier()
    before = model.get_weights()
    history = model.fit(x, y, epochs=0, verbose=0)
    assert history.history == {} or all(len(v) == 0 for v in history.history.values())
    for a, b in zip(before, model.get_weights()):
        np.testing.assert_array_equal(a, b)
    history = model.fit(x, y, epochs=3, initial_epoch=1, verbose=0)
    assert len(history.history["loss"]) == 2


def _train_once(seed, threads=None, fit_seed=None):
    if threads is not None:
        mn.set_num_threads(threads)
    x, y = _blobs(64, seed=5)
    model = _compiled_classifier(seed=seed, dropout=0.3)
    model.fit(x, y, batch_size=8, epochs=2, verbose=0, seed=fit_seed)
    return model.get_weights()


def test_manual_seed_gives_bit_identical_training():
    threads = mn.get_num_threads()
    try:
        a = _train_once(7, threads=1)
        b = _train_once(7, threads=2)
        c = _train_once(8)
    finally:
        mn.set_num_threads(threads)
    for wa, wb in zip(a, b):
        np.testing.assert_array_equal(wa, wb)
    assert not np.array_equal(a[0], c[0])


def test_fit_seed_controls_shuffling():
    x, y = _blobs(64)
    runs = []
    for fit_seed in (1, 1, 2):
        model = _compiled_classifier(seed=0)
        mn.manual_seed(123)  # same dropout/generator state; only the fit seed differs
        model.fit(x, y, batch_size=8, epochs=1, verbose=0, seed=fit_seed)
        runs.append(model.get_weights()[0])
    np.testing.assert_array_equal(runs[0], runs[1])
    assert not np.array_equal(runs[0], runs[2])


def test_fit_before_compile_raises():
    x, y = _blobs(10)
    with pytest.raises(RuntimeError, match="compile"):
        _classifier().fit(x, y)
    with pytest.raises(RuntimeError, match="compile"):
        _classifier().evaluate(x, y)
    model = _classifier()
    model.compile(optimizer="sgd")
    with pytest.raises(RuntimeError, match="loss"):
        model.fit(x, y)


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(batch_size=0), ValueError, "batch_size"),
    (dict(batch_size=2.5), TypeError, "batch_size"),
    (dict(epochs=-1), ValueError, "epochs"),
    (dict(epochs=1.5), TypeError, "epochs"),
    (dict(initial_epoch=-2), ValueError, "initial_epoch"),
    (dict(verbose=3), ValueError, "verbose"),
    (dict(validation_split=1.5), ValueError, "validation_split"),
    (dict(validation_data=(1, 2, 3, 4)), ValueError, "validation_data"),
    (dict(validation_data=(np.zeros((3, 4)), np.zeros(2, np.int64))), ValueError, "validation_data"),
    (dict(sample_weight=np.ones(3)), ValueError, "sample_weight"),
    (dict(class_weight={0: 1.0}), ValueError, "class_weight"),
    (dict(class_weight=[1, 2, 3]), TypeError, "class_weight"),
    (dict(seed=-1), ValueError, "seed"),
    (dict(callbacks="history"), TypeError, "callbacks"),
])
def test_fit_argument_validation(kwargs, error, match):
    x, y = _blobs(20)
    model = _compiled_classifier()
    with pytest.raises(error, match=match):
        model.fit(x, y, **{"verbose": 0, **kwargs})


def test_fit_data_validation():
    x, y = _blobs(20)
    model = _compiled_classifier()
    with pytest.raises(ValueError, match=r"len\(x\)=20"):
        model.fit(x, y[:10], verbose=0)
    with pytest.raises(ValueError, match="at least one sample"):
        model.fit(x[:0], y[:0], verbose=0)
    with pytest.raises(ValueError, match="`y` is required"):
        model.fit(x, verbose=0)
    with pytest.raises(ValueError, match="whole numbers"):
        model.fit(x, y + 0.5, verbose=0)
    with pytest.raises(TypeError, match="integer class labels"):
        model.fit(x, np.array(["a"] * 20), verbose=0)
    with pytest.raises(ValueError, match="incompatible"):
        model.fit(np.zeros((20, 5), np.float32), y, verbose=0)
    with pytest.raises(ValueError, match="batch_size"):
        model.evaluate(x, y, batch_size=0, verbose=0)
    with pytest.raises(ValueError, match="batch_size"):
        model.predict(x, batch_size=-1)
    with pytest.raises(ValueError, match="at least one sample"):
        model.predict(np.zeros((0, 4)))
    # float labels that are whole numbers are accepted for sparse losses
    model.fit(x, y.astype(np.float32), verbose=0)


def test_fit_matches_a_pytorch_training_loop(torch):
    x, y = _blobs(40)
    x = x.astype(np.float64)
    mn.manual_seed(0)
    model = mn.Sequential([layers.Dense(8, activation="relu", dtype="float64"),
                           layers.Dense(3, dtype="float64")])
    model.build((None, 4))
    w1, b1, w2, b2 = model.get_weights()
    model.compile(optimizer=optimizers.SGD(learning_rate=0.1, momentum=0.9),
                  loss=losses.SparseCategoricalCrossentropy(from_logits=True))
    class_weight = {0: 1.0, 1: 2.0, 2: 0.5}
    history = model.fit(x, y, batch_size=8, epochs=3, shuffle=False, verbose=0, class_weight=class_weight)

    net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3)).double()
    with torch.no_grad():
        for parameter, value in zip(net.parameters(), (w1, b1, w2, b2)):
            parameter.copy_(torch.from_numpy(value))
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    weights = torch.tensor([class_weight[k] for k in range(3)], dtype=torch.float64)
    epoch_losses = []
    for _ in range(3):
        total = 0.0
        for start in range(0, 40, 8):
            xb = torch.from_numpy(x[start:start + 8])
            yb = torch.from_numpy(y[start:start + 8])
            opt.zero_grad()
            per_sample = torch.nn.functional.cross_entropy(net(xb), yb, reduction="none")
            loss = (per_sample * weights[yb]).mean()          # Keras: sum(w * l) / batch size
            loss.backward()
            opt.step()
            total += loss.item() * len(xb)
        epoch_losses.append(total / 40)
    for ours, theirs in zip(model.get_weights(), [p.detach().numpy() for p in net.parameters()]):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(history.history["loss"], epoch_losses, rtol=1e-10, atol=1e-14)  # the last loss is ~2e-7
