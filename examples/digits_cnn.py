"""Train a small CNN on the handwritten digits that ship with minnet (Keras style).

    python examples/digits_cnn.py            # ~97-99% test accuracy in well under a minute
    python examples/digits_cnn.py --quick    # 1 epoch on a subset (smoke test)

The 8x8 digit images (UCI, Alpaydin & Kaynak, CC BY 4.0) are tiny, so a two-block CNN
trains in seconds on a laptop CPU. The script saves the trained model
(``digits_cnn.minnet``) and its training curves (``digits_cnn_history.png`` when
matplotlib is installed), then reloads the model to show the file round-trips.
"""
import argparse
import os
import time

import numpy as np

import minnet as mn
from minnet import callbacks, layers, losses, optimizers
from minnet.datasets import load_digits


def build_model():
    """Conv-BN-ReLU-MaxPool, Conv-BN-ReLU, Flatten-Dropout-Dense: 8x8x1 -> 10 logits."""
    return mn.Sequential([
        layers.Input((8, 8, 1)),                  # channels_last, Keras's default layout
        layers.Conv2D(16, 3, padding="same"),     # (N, 8, 8, 16)
        layers.BatchNormalization(),
        layers.ReLU(),
        layers.MaxPooling2D(2),                   # (N, 4, 4, 16)
        layers.Conv2D(32, 3, padding="same"),     # (N, 4, 4, 32)
        layers.BatchNormalization(),
        layers.ReLU(),
        layers.Flatten(),                         # (N, 512)
        layers.Dropout(0.3),
        layers.Dense(10),                         # logits
    ])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 epoch on 256 samples (for CI)")
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument("--output-dir", default=".", help="where to write the model and the plot")
    args = parser.parse_args(argv)

    mn.manual_seed(0)
    (x_train, y_train), (x_test, y_test) = load_digits()
    epochs = args.epochs
    if args.quick:
        x_train, y_train, epochs = x_train[:256], y_train[:256], 1
    print(f"train {x_train.shape}, test {x_test.shape}")

    model = build_model()
    model.compile(optimizer=optimizers.Adam(learning_rate=3e-3),
                  loss=losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    model.summary(batch_size=32)

    start = time.perf_counter()
    history = model.fit(x_train, y_train, batch_size=32, epochs=epochs, validation_split=0.1,
                        verbose=2, seed=0,
                        callbacks=[callbacks.ReduceLROnPlateau(monitor="val_loss", factor=0.5,
                                                               patience=3)])
    seconds = time.perf_counter() - start
    result = model.evaluate(x_test, y_test, batch_size=256, verbose=0, return_dict=True)
    print(f"test loss {result['loss']:.4f}, test accuracy {result['accuracy']:.2%} "
          f"(trained in {seconds:.1f}s on {mn.get_num_threads()} thread(s))")

    os.makedirs(args.output_dir, exist_ok=True)
    model_path = os.path.join(args.output_dir, "digits_cnn.minnet")
    model.save(model_path)
    reloaded = mn.load_model(model_path)
    same = np.array_equal(reloaded.predict(x_test), model.predict(x_test))
    print(f"saved {model_path}; reloaded model gives identical predictions: {same}")

    plot_path = os.path.join(args.output_dir, "digits_cnn_history.png")
    try:
        history.plot(plot_path)
        print(f"training curves written to {plot_path}")
    except ImportError:
        print("matplotlib is not installed: no plot (pip install matplotlib). Final epoch: "
              + ", ".join(f"{k}={v[-1]:.4f}" for k, v in history.history.items()))
    return result["accuracy"]


if __name__ == "__main__":
    main()
