"""Fit a noisy 1-D curve with a small MLP and the mean squared error (Keras style).

    python examples/mlp_regression_mse.py
    python examples/mlp_regression_mse.py --quick

The target is y = sin(2x) + 0.3 x + noise on [-3, 3]. A linear model cannot follow it;
two tanh hidden layers can. The script prints the test MSE of both, and the noise
floor (the MSE a perfect model would still have).
"""
import argparse

import numpy as np

import minnet as mn
from minnet import layers, optimizers


def make_data(n, noise, seed):
    generator = np.random.default_rng(seed)
    x = generator.uniform(-3, 3, size=(n, 1)).astype(np.float32)
    y = (np.sin(2 * x) + 0.3 * x + noise * generator.standard_normal((n, 1))).astype(np.float32)
    return x, y


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few epochs (for CI)")
    args = parser.parse_args(argv)
    epochs = 3 if args.quick else 150
    noise = 0.1

    mn.manual_seed(0)
    x_train, y_train = make_data(512, noise, seed=1)
    x_test, y_test = make_data(256, noise, seed=2)

    linear = mn.Sequential([layers.Input((1,)), layers.Dense(1)])
    linear.compile(optimizer=optimizers.SGD(learning_rate=0.05), loss="mse")
    linear.fit(x_train, y_train, batch_size=32, epochs=min(epochs, 30), verbose=0)

    mlp = mn.Sequential([
        layers.Input((1,)),
        layers.Dense(64, activation="tanh"),
        layers.Dense(64, activation="tanh"),
        layers.Dense(1),
    ])
    mlp.compile(optimizer=optimizers.Adam(learning_rate=3e-3), loss="mse", metrics=["mae"])
    history = mlp.fit(x_train, y_train, batch_size=32, epochs=epochs, verbose=0, seed=0,
                      validation_split=0.2)

    print(f"epochs: {epochs}; final training loss {history.history['loss'][-1]:.4f}, "
          f"val_loss {history.history['val_loss'][-1]:.4f}")
    linear_mse = linear.evaluate(x_test, y_test, verbose=0)
    mlp_mse, mlp_mae = mlp.evaluate(x_test, y_test, verbose=0)
    print(f"test MSE: linear model {linear_mse:.4f}, MLP {mlp_mse:.4f} (MAE {mlp_mae:.4f}); "
          f"noise floor {noise ** 2:.4f}")
    return mlp_mse


if __name__ == "__main__":
    main()
