"""Subclassed models: tracked attributes, the shared trainer, saving through registration."""
import numpy as np
import pytest

import minnet as mn
from minnet import layers, losses


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    return rng.standard_normal((40, 5)).astype(np.float32), rng.integers(0, 3, 40)


@mn.register_layer("tests>TwoLayerNet")
class TwoLayerNet(mn.Model):
    def __init__(self, hidden=8, **kwargs):
        super().__init__(**kwargs)
        self.hidden = hidden
        self.blocks = {"first": layers.Dense(hidden, activation="relu")}
        self.heads = [layers.Dropout(0.0), layers.Dense(3)]

    def call(self, x, training=False):
        h = self.blocks["first"](x, training=training)
        for layer in self.heads:
            h = layer(h, training=training)
        return h

    def get_config(self):
        return {**super().get_config(), "hidden": self.hidden}


class NoTrainingArg(mn.Model):
    def __init__(self):
        super().__init__()
        self.dense = layers.Dense(3)

    def call(self, x):
        return self.dense(x)


def _compile(model):
    model.compile(optimizer=mn.optimizers.SGD(learning_rate=0.1),
                  loss=losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    return model


def test_layers_in_lists_and_dicts_are_tracked(data):
    x, _ = data
    model = TwoLayerNet()
    model(x)
    assert len(model.layers) == 3
    assert len(model.weights) == 4 and len(model.parameters()) == 4
    assert model.count_params() == 5 * 8 + 8 + 8 * 3 + 3
    model.summary(print_fn=lambda line: None)
    model.train()
    assert all(layer.training for layer in model.layers)


def test_subclassed_trains_like_the_sequential_model(data):
    x, y = data
    mn.manual_seed(5)
    seq = _compile(mn.Sequential([mn.Input((5,)), layers.Dense(8, activation="relu"),
                                  layers.Dropout(0.0), layers.Dense(3)]))
    mn.manual_seed(5)
    sub = TwoLayerNet()
    sub.build((None, 5))
    _compile(sub)
    for model in (seq, sub):
        model.fit(x, y, epochs=2, batch_size=8, verbose=0, seed=1)
    for a, b in zip(seq.get_weights(), sub.get_weights()):
        np.testing.assert_array_equal(a, b)
    logs = sub.evaluate(x, y, verbose=0, return_dict=True)
    assert set(logs) == {"loss", "accuracy"}
    assert sub.predict(x).shape == (40, 3)


def test_unbuilt_subclassed_model_is_built_by_fit(data):
    x, y = data
    model = _compile(TwoLayerNet())
    history = model.fit(x, y, epochs=2, verbose=0)
    assert model.built and len(history.history["loss"]) == 2
    no_training = _compile(NoTrainingArg())
    no_training.fit(x, y, epochs=1, verbose=0)


def test_save_and_load_through_registration(tmp_path, data):
    x, y = data
    model = _compile(TwoLayerNet(hidden=6))
    model.fit(x, y, epochs=1, verbose=0)
    model.save(tmp_path / "sub.minnet")
    loaded = mn.load_model(tmp_path / "sub.minnet")
    assert isinstance(loaded, TwoLayerNet) and loaded.hidden == 6
    np.testing.assert_array_equal(loaded.predict(x), model.predict(x))
    model.save_weights(tmp_path / "w.npz")
    other = TwoLayerNet(hidden=6)
    other.build((None, 5))
    other.load_weights(tmp_path / "w.npz")
    np.testing.assert_array_equal(other.predict(x), model.predict(x))


def test_missing_call_and_bad_constructor_arguments():
    class Empty(mn.Model):
        pass

    with pytest.raises(NotImplementedError, match="call"):
        Empty()(np.ones((1, 2)))
    with pytest.raises(TypeError, match="positional"):
        mn.Model(1)


def test_a_subclassed_models_add_loss_terms_are_those_of_its_last_call():
    # guides/making_new_layers_and_models_via_subclassing.py: a VAE adds its KL term in call
    class WithLoss(mn.Model):
        def __init__(self):
            super().__init__()
            self.dense = mn.layers.Dense(3)

        def call(self, x):
            y = self.dense(x)
            self.add_loss(mn.ops.mean(y ** 2))
            return y

    model = WithLoss()
    x = np.ones((2, 3), "float32")
    model(x)
    model(x)
    assert len(model.losses) == 1
    model.compile(optimizer="adam", loss="mse")
    history = model.fit(x, x, epochs=2, batch_size=1, verbose=0)
    assert np.isfinite(history.history["loss"]).all()
