"""Custom train_step / test_step / predict_step: the contract a GAN or gradient penalty needs."""
import numpy as np
import pytest

import minnet as mn
from minnet import layers, losses, metrics


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, 4)).astype(np.float32)
    return x, (x @ np.array([[1.0], [-2.0], [0.5], [0.0]], np.float32)).astype(np.float32)


class PenalisedRegressor(mn.Model):
    """Gradient-penalty style step: the loss plus the mean squared weight, own trackers."""

    def __init__(self):
        super().__init__()
        self.dense = layers.Dense(1)
        self.penalty_tracker = metrics.Mean(name="penalty")
        self.total_tracker = metrics.Mean(name="total")

    def call(self, x, training=False):
        return self.dense(x)

    @property
    def metrics(self):
        return [self.total_tracker, self.penalty_tracker]

    def train_step(self, data):
        x, y, sample_weight = mn.utils.unpack_x_y_sample_weight(data)
        self.optimizer.zero_grad()
        y_pred = self(x, training=True)
        loss = self.compute_loss(x, y, y_pred, sample_weight)
        penalty = (self.dense.kernel * self.dense.kernel).mean()
        total = loss + 0.1 * penalty
        total.backward()
        self.optimizer.step()
        self.total_tracker.update_state(total.item())
        self.penalty_tracker.update_state(penalty.item())
        return {m.name: m.result() for m in self.metrics}

    def test_step(self, data):
        x, y, _ = mn.utils.unpack_x_y_sample_weight(data)
        with mn.no_grad():
            loss = self.compute_loss(x, y, self(x))
        self.total_tracker.update_state(loss.item())
        return {"total": self.total_tracker.result()}

    def predict_step(self, data):
        x, _, _ = mn.utils.unpack_x_y_sample_weight(data)
        return self(x) * 2.0


def test_custom_train_step_drives_fit(data):
    x, y = data
    model = PenalisedRegressor()
    model.compile(optimizer=mn.optimizers.SGD(learning_rate=0.05), loss="mse")
    history = model.fit(x, y, epochs=3, batch_size=8, verbose=0, validation_data=(x, y))
    assert set(history.history) >= {"total", "penalty", "val_total"}
    assert history.history["total"][-1] < history.history["total"][0]
    np.testing.assert_allclose(model.predict(x), 2.0 * model(x).numpy(), rtol=1e-6)
    assert set(model.evaluate(x, y, verbose=0, return_dict=True)) == {"total"}


def test_custom_step_receives_what_the_generator_yields(data):
    x, y = data
    seen = []

    class Recorder(mn.Model):
        def __init__(self):
            super().__init__()
            self.dense = layers.Dense(1)

        def call(self, x, training=False):
            return self.dense(x)

        def train_step(self, data):
            seen.append(type(data).__name__ + str(len(data)))
            return super().train_step(data)

    def batches():
        for i in range(0, 32, 8):
            yield x[i:i + 8], y[i:i + 8], np.ones(8, np.float32)

    model = Recorder()
    model.compile("sgd", loss="mse")
    model.fit(batches(), steps_per_epoch=4, epochs=1, verbose=0)
    assert seen == ["tuple3"] * 4


def test_gan_style_two_optimizers_inside_fit():
    rng = np.random.default_rng(1)
    real = rng.standard_normal((64, 2)).astype(np.float32) + 3.0

    class GAN(mn.Model):
        def __init__(self):
            super().__init__()
            self.generator = mn.Sequential([mn.Input((2,)), layers.Dense(2)])
            self.discriminator = mn.Sequential([mn.Input((2,)), layers.Dense(4, activation="relu"),
                                                layers.Dense(1)])
            self.bce = losses.BinaryCrossentropy(from_logits=True)
            self.d_tracker, self.g_tracker = metrics.Mean(name="d_loss"), metrics.Mean(name="g_loss")

        @property
        def metrics(self):
            return [self.d_tracker, self.g_tracker]

        def compile(self, d_optimizer, g_optimizer):
            super().compile(optimizer=d_optimizer)
            self.d_optimizer, self.g_optimizer = d_optimizer, g_optimizer
            d_optimizer.set_parameters(self.discriminator.parameters())
            g_optimizer.set_parameters(self.generator.parameters())

        def call(self, x, training=False):
            return self.generator(x, training=training)

        def train_step(self, data):
            x, _, _ = mn.utils.unpack_x_y_sample_weight(data)
            noise = np.random.default_rng(len(self.d_tracker.__dict__)).standard_normal(x.shape).astype(np.float32)
            self.d_optimizer.zero_grad()
            fake = self.generator(noise).detach()
            d_loss = (self.bce(np.ones((len(x), 1), np.float32), self.discriminator(x))
                      + self.bce(np.zeros((len(x), 1), np.float32), self.discriminator(fake)))
            d_loss.backward()
            self.d_optimizer.step()
            self.g_optimizer.zero_grad()
            g_loss = self.bce(np.ones((len(x), 1), np.float32), self.discriminator(self.generator(noise)))
            g_loss.backward()
            self.g_optimizer.step()
            self.d_tracker.update_state(d_loss.item())
            self.g_tracker.update_state(g_loss.item())
            return {"d_loss": self.d_tracker.result(), "g_loss": self.g_tracker.result()}

    gan = GAN()
    gan.compile(mn.optimizers.Adam(learning_rate=1e-2), mn.optimizers.Adam(learning_rate=1e-2))
    before = gan.generator.get_weights()
    history = gan.fit(real, epochs=2, batch_size=16, verbose=0)
    assert set(history.history) >= {"d_loss", "g_loss"}
    assert not np.array_equal(before[0], gan.generator.get_weights()[0])


def test_default_step_without_loss_says_so(data):
    x, y = data
    model = mn.Sequential([mn.Input((4,)), layers.Dense(1)])
    model.compile("sgd")
    with pytest.raises(ValueError, match="without a loss"):
        model.fit(x, y, verbose=0)
