"""Small scripts written the way Keras 3's guides teach (custom layers, an endpoint layer,
a custom train_step, a custom Metric, optimizer.apply in a hand-written loop), run against
minnet and, where the ``keras`` fixture is available, against Keras with the same starting
weights: the numbers must agree.

Each script takes the framework as ``keras`` (``minnet`` or real Keras), so the code is the
same for both; ``no_grad`` is ``mn.no_grad`` or ``torch.no_grad`` (the torch backend's guides
use the latter), and a Dense kernel is copied transposed (minnet keeps PyTorch's layout).
Keras's guides write ``keras.ops.matmul`` and ``ops.sigmoid``; these scripts use ``@`` and
``keras.activations.sigmoid`` until ``minnet.ops`` lands.
"""
import numpy as np
import pytest

import minnet as mn


def _rng_data(n=32, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 4)).astype(np.float32)
    y = (x @ np.array([[1.0], [-2.0], [0.5], [0.0]], np.float32) + 0.3).astype(np.float32)
    return x, y


def _dense_kernel(framework, layer, kernel):
    """Set a Dense layer's (in, out) kernel whatever the framework's layout."""
    bias = np.zeros(kernel.shape[1], np.float32)
    if framework is mn:
        layer.set_weights([kernel.T.copy(), bias])
    else:
        layer.set_weights([kernel, bias])


def _numpy(value):
    value = getattr(value, "data", value) if not hasattr(value, "detach") else value.detach()
    return np.asarray(value)


# ---- 1. a custom layer whose call takes no training ("Making new layers and models") --------
def script_linear_layer(keras):
    class Linear(keras.layers.Layer):
        def __init__(self, units=32):
            super().__init__()
            self.units = units

        def build(self, input_shape):
            self.w = self.add_weight(shape=(input_shape[-1], self.units),
                                     initializer="random_normal", trainable=True)
            self.b = self.add_weight(shape=(self.units,), initializer="zeros", trainable=True)

        def call(self, inputs):
            return inputs @ self.w + self.b

    layer = Linear(3)
    x = np.ones((2, 4), np.float32)
    layer(x)
    layer.set_weights([np.arange(12, dtype=np.float32).reshape(4, 3) / 10, np.ones(3, np.float32)])
    inputs = keras.Input((4,))
    model = keras.Model(inputs, Linear(2)(layer(inputs)))
    return _numpy(layer(x)), len(layer.trainable_weights), model.output_shape


# ---- 2. an endpoint layer taking (targets, logits) and adding its loss ------------------------
def script_endpoint(keras, epochs=3):
    class LogisticEndpoint(keras.layers.Layer):
        def __init__(self, name=None):
            super().__init__(name=name)
            self.loss_fn = keras.losses.BinaryCrossentropy(from_logits=True)

        def call(self, targets, logits, sample_weights=None):
            loss = self.loss_fn(targets, logits, sample_weights)
            self.add_loss(loss)
            return keras.activations.sigmoid(logits)

    inputs = keras.Input(shape=(3,), name="inputs")
    targets = keras.Input(shape=(10,), name="targets")
    dense = keras.layers.Dense(10)
    logits = dense(inputs)
    predictions = LogisticEndpoint(name="predictions")(targets, logits)
    model = keras.Model(inputs=[inputs, targets], outputs=predictions)
    _dense_kernel(keras, dense, np.linspace(-1, 1, 30, dtype=np.float32).reshape(3, 10))
    model.compile(optimizer=keras.optimizers.SGD(0.1))      # no loss argument
    rng = np.random.default_rng(0)
    data = {"inputs": rng.random((8, 3)).astype(np.float32),
            "targets": (rng.random((8, 10)) > 0.5).astype(np.float32)}
    history = model.fit(data, batch_size=8, epochs=epochs, verbose=0, shuffle=False)
    return np.array(history.history["loss"])


# ---- 3. a custom train_step ("Customizing what happens in fit", torch backend) ----------------
def script_train_step(keras, no_grad):
    class CustomModel(keras.Model):
        def train_step(self, data):
            x, y = data
            self.zero_grad()
            y_pred = self(x, training=True)
            loss = self.compute_loss(y=y, y_pred=y_pred)
            loss.backward()
            trainable_weights = [v for v in self.trainable_weights]
            gradients = [v.value.grad for v in trainable_weights]
            with no_grad():
                self.optimizer.apply(gradients, trainable_weights)
            for metric in self.metrics:
                if metric.name == "loss":
                    metric.update_state(loss)
                else:
                    metric.update_state(y, y_pred)
            return {m.name: m.result() for m in self.metrics}

    inputs = keras.Input(shape=(4,))
    dense = keras.layers.Dense(1)
    model = CustomModel(inputs, dense(inputs))
    _dense_kernel(keras, dense, np.full((4, 1), 0.1, np.float32))
    model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse")
    x, y = _rng_data()
    history = model.fit(x, y, batch_size=8, epochs=3, verbose=0, shuffle=False)
    return np.array(history.history["loss"])


# ---- 4. a custom Metric with add_variable -----------------------------------------------------
def script_metric(keras):
    class CategoricalTruePositives(keras.metrics.Metric):
        def __init__(self, name="categorical_true_positives", **kwargs):
            super().__init__(name=name, **kwargs)
            self.true_positives = self.add_variable(shape=(), name="ctp", initializer="zeros")

        def update_state(self, y_true, y_pred, sample_weight=None):
            y_pred = np.argmax(_numpy(y_pred), axis=1).reshape(-1, 1)
            values = (_numpy(y_true).astype("int32") == y_pred.astype("int32")).astype("float32")
            if sample_weight is not None:
                values = values * _numpy(sample_weight).reshape(-1, 1)
            self.true_positives.assign_add(np.float32(values.sum()))

        def result(self):
            return self.true_positives

        def reset_state(self):
            self.true_positives.assign(0.0)

    metric = CategoricalTruePositives()
    first = float(_numpy(metric.result()))
    inputs = keras.Input((4,))
    dense = keras.layers.Dense(3)
    model = keras.Model(inputs, keras.layers.Softmax()(dense(inputs)))
    _dense_kernel(keras, dense, np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3))
    model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy", metrics=[metric])
    x, _ = _rng_data(30)
    labels = np.argmax(x[:, :3], axis=1).reshape(-1, 1)
    logs = model.evaluate(x, labels, batch_size=10, verbose=0, return_dict=True)
    again = model.evaluate(x, labels, batch_size=10, verbose=0, return_dict=True)
    return first, logs["categorical_true_positives"], again["categorical_true_positives"], logs["loss"]


# ---- 5. optimizer.apply in a hand-written loop ------------------------------------------------
def script_optimizer_apply(keras, no_grad):
    dense = keras.layers.Dense(1)
    model = keras.Sequential([keras.Input((4,)), dense])
    _dense_kernel(keras, dense, np.zeros((4, 1), np.float32))
    optimizer = keras.optimizers.Adam(learning_rate=0.05)      # built without parameters
    loss_fn = keras.losses.MeanSquaredError()
    x, y = _rng_data()
    losses = []
    for step in range(5):
        y_pred = model(x, training=True)
        loss = loss_fn(y, y_pred)
        model.zero_grad()
        loss.backward()
        weights = model.trainable_weights
        grads = [v.value.grad for v in weights]
        with no_grad():
            optimizer.apply(grads, weights)
        losses.append(float(_numpy(loss)))
    zipped = keras.optimizers.SGD(0.01)
    y_pred = model(x, training=True)
    loss = loss_fn(y, y_pred)
    model.zero_grad()
    loss.backward()
    with no_grad():
        zipped.apply_gradients(zip([v.value.grad for v in model.trainable_weights],
                                   model.trainable_weights))
    return np.array(losses), int(_numpy(optimizer.iterations)), int(_numpy(zipped.iterations))


# ---- minnet runs them --------------------------------------------------------------------------
def test_linear_layer_script_runs():
    out, n_weights, shape = script_linear_layer(mn)
    np.testing.assert_allclose(out, np.ones((2, 4)) @ (np.arange(12).reshape(4, 3) / 10) + 1,
                               rtol=1e-6)
    assert n_weights == 2 and shape == (None, 2)


def test_endpoint_script_trains_on_the_added_loss():
    losses = script_endpoint(mn)
    assert losses.shape == (3,) and losses[-1] < losses[0]


def test_train_step_script_trains():
    losses = script_train_step(mn, mn.no_grad)
    assert losses[-1] < losses[0]


def test_metric_script_counts_and_resets():
    first, count, again, _ = script_metric(mn)
    assert first == 0.0 and count == again and 0 < count <= 30


def test_optimizer_apply_script_descends():
    losses, iterations, zipped = script_optimizer_apply(mn, mn.no_grad)
    assert np.all(np.diff(losses) < 0) and iterations == 5 and zipped == 1


# ---- and Keras gives the same numbers ----------------------------------------------------------
def test_linear_layer_matches_keras(keras):
    ours, theirs = script_linear_layer(mn), script_linear_layer(keras)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-6)
    assert ours[1:] == theirs[1:]


def test_endpoint_matches_keras(keras):
    np.testing.assert_allclose(script_endpoint(mn), script_endpoint(keras), rtol=1e-4)


def test_train_step_matches_keras(keras):
    import torch
    np.testing.assert_allclose(script_train_step(mn, mn.no_grad), script_train_step(keras, torch.no_grad),
                               rtol=1e-4)


def test_metric_matches_keras(keras):
    ours, theirs = script_metric(mn), script_metric(keras)
    assert ours[:3] == theirs[:3]
    assert ours[3] == pytest.approx(theirs[3], rel=1e-5)


def test_optimizer_apply_matches_keras(keras):
    import torch
    ours = script_optimizer_apply(mn, mn.no_grad)
    theirs = script_optimizer_apply(keras, torch.no_grad)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-4)
    assert ours[1:] == theirs[1:]


# ---- 6. feature extraction from a Sequential model ("The Sequential model" guide) -------------
def script_feature_extraction(keras):
    first, second = keras.layers.Dense(5, activation="relu"), keras.layers.Dense(2)
    initial_model = keras.Sequential([keras.Input(shape=(4,)), first, second])
    _dense_kernel(keras, first, np.linspace(-1, 1, 20, dtype=np.float32).reshape(4, 5))
    _dense_kernel(keras, second, np.linspace(1, -1, 10, dtype=np.float32).reshape(5, 2))
    feature_extractor = keras.Model(inputs=initial_model.inputs,
                                    outputs=[layer.output for layer in initial_model.layers])
    x, _ = _rng_data(3)
    features = feature_extractor(x)
    return [_numpy(f) for f in features], [tuple(layer.output.shape) for layer in initial_model.layers]


def test_feature_extraction_script_runs():
    features, shapes = script_feature_extraction(mn)
    assert [f.shape for f in features] == [(3, 5), (3, 2)] and shapes == [(None, 5), (None, 2)]


def test_feature_extraction_matches_keras(keras):
    ours, theirs = script_feature_extraction(mn), script_feature_extraction(keras)
    for a, b in zip(ours[0], theirs[0]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert ours[1] == theirs[1]


def script_functional_feature_extraction(keras):
    inputs = keras.Input((4,))
    hidden = keras.layers.Dense(3, name="hidden")(inputs)
    model = keras.Model(inputs, keras.layers.Dense(1)(hidden))
    extractor = keras.Model(model.input, model.get_layer("hidden").output)
    return tuple(extractor.output.shape), model.input is inputs, tuple(model.output.shape)


def test_functional_model_input_and_output():
    assert script_functional_feature_extraction(mn) == ((None, 3), True, (None, 1))


def test_functional_model_input_and_output_as_in_keras(keras):
    assert script_functional_feature_extraction(mn) == script_functional_feature_extraction(keras)


# ---- 7. the lower-level custom step: own loss, own trackers, `metrics` overridden -------------
def script_own_trackers(keras, no_grad):
    class CustomModel(keras.Model):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.loss_tracker = keras.metrics.Mean(name="loss")
            self.mae_metric = keras.metrics.MeanAbsoluteError(name="mae")
            self.loss_fn = keras.losses.MeanSquaredError()

        def train_step(self, data):
            x, y = data
            self.zero_grad()
            y_pred = self(x, training=True)
            loss = self.loss_fn(y, y_pred)
            loss.backward()
            trainable_weights = [v for v in self.trainable_weights]
            gradients = [v.value.grad for v in trainable_weights]
            with no_grad():
                self.optimizer.apply(gradients, trainable_weights)
            self.loss_tracker.update_state(loss)
            self.mae_metric.update_state(y, y_pred)
            return {"loss": self.loss_tracker.result(), "mae": self.mae_metric.result()}

        @property
        def metrics(self):
            return [self.loss_tracker, self.mae_metric]

    inputs = keras.Input(shape=(4,))
    dense = keras.layers.Dense(1)
    model = CustomModel(inputs, dense(inputs))
    _dense_kernel(keras, dense, np.full((4, 1), -0.2, np.float32))
    model.compile(optimizer=keras.optimizers.SGD(0.05))
    x, y = _rng_data()
    history = model.fit(x, y, batch_size=8, epochs=3, verbose=0, shuffle=False)
    return np.array(history.history["loss"]), np.array(history.history["mae"])


def test_own_trackers_script_trains():
    losses, maes = script_own_trackers(mn, mn.no_grad)
    assert losses[-1] < losses[0] and maes[-1] < maes[0]


def test_own_trackers_match_keras(keras):
    import torch
    ours, theirs = script_own_trackers(mn, mn.no_grad), script_own_trackers(keras, torch.no_grad)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-4)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-4)
