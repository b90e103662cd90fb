"""A custom train_step inside fit: regression with a smoothness (input-gradient) penalty.

    python examples/custom_train_step.py
    python examples/custom_train_step.py --short

The model subclasses mn.Model and overrides train_step(data): it takes the batch apart
with mn.utils.unpack_x_y_sample_weight, computes the compiled loss with
self.compute_loss, adds lambda * mean(((f(x + h u) - f(x)) / h)^2) for a random unit
direction u (a finite-difference estimate of the squared input gradient, the penalty of
WGAN-GP and of Lipschitz regularisation), steps self.optimizer and returns its own Mean trackers, which it lists in `metrics`
so fit resets them every epoch. Everything else (callbacks, validation, History) is
the standard fit.
"""
import argparse

import numpy as np

import minnet as mn
from minnet import layers, metrics


class PenalisedRegressor(mn.Model):
    def __init__(self, penalty=0.1, **kwargs):
        super().__init__(**kwargs)
        self.penalty = penalty
        self.hidden = layers.Dense(32, activation="tanh", dtype="float64")
        self.out = layers.Dense(1, dtype="float64")
        self.loss_mean = metrics.Mean(name="mse")
        self.penalty_mean = metrics.Mean(name="penalty")
        self.rng = np.random.default_rng(0)

    def call(self, x, training=False):
        return self.out(self.hidden(x))

    @property
    def metrics(self):
        return [self.loss_mean, self.penalty_mean]

    def train_step(self, data):
        x, y, sample_weight = mn.utils.unpack_x_y_sample_weight(data)
        self.optimizer.zero_grad()
        y_pred = self(x, training=True)
        loss = self.compute_loss(x, y, y_pred, sample_weight)
        step = 1e-2
        direction = self.rng.standard_normal(x.shape)
        direction /= np.linalg.norm(direction, axis=1, keepdims=True)
        slope = (self(x + step * direction, training=True) - y_pred) * (1.0 / step)
        penalty = (slope * slope).mean()
        (loss + self.penalty * penalty).backward()
        self.optimizer.step()
        self.loss_mean.update_state(loss.item())
        self.penalty_mean.update_state(penalty.item())
        return {m.name: m.result() for m in self.metrics}

    def test_step(self, data):
        x, y, _ = mn.utils.unpack_x_y_sample_weight(data)
        with mn.no_grad():
            self.loss_mean.update_state(self.compute_loss(x, y, self(x)).item())
        return {"mse": self.loss_mean.result()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--short", "--quick", action="store_true", help="a few epochs (for CI)")
    args = parser.parse_args(argv)
    mn.manual_seed(0)
    rng = np.random.default_rng(1)
    x = rng.uniform(-2, 2, size=(512, 2))
    y = np.sin(3 * x[:, :1]) + 0.1 * x[:, 1:] + 0.05 * rng.standard_normal((512, 1))
    for penalty in (0.0, 0.1):
        model = PenalisedRegressor(penalty=penalty)
        model.compile(optimizer=mn.optimizers.Adam(learning_rate=1e-2), loss="mse")
        history = model.fit(x, y, epochs=2 if args.short else 60, batch_size=64, verbose=0,
                            validation_split=0.2)
        print(f"penalty {penalty}: train mse {history.history['mse'][-1]:.4f}, "
              f"input-gradient penalty {history.history['penalty'][-1]:.4f}, "
              f"validation mse {history.history['val_mse'][-1]:.4f}")


if __name__ == "__main__":
    main()
