"""Train a small CNN, watch it in TensorBoard, export it to ONNX and run it in onnxruntime.

    python examples/tensorboard_onnx.py            # then: tensorboard --logdir logs
    python examples/tensorboard_onnx.py --quick    # a few steps (for CI)

The TensorBoard event files are written by minnet itself (no TensorFlow needed). The ONNX
part needs `pip install onnx onnxruntime` (minnet's `onnx` extra) and is skipped, with a
line saying so, when they are missing; reading the logs back needs the `tensorboard` package
and is skipped likewise. The model is also saved as a real Keras `.keras` file.
"""
import argparse
import os

import numpy as np

import minnet as mn
from minnet import layers


def make_data(n, seed):
    """8x8 grey images: class 1 has a bright vertical bar, class 0 a horizontal one."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    x = rng.normal(0.0, 0.3, size=(n, 8, 8, 1)).astype(np.float32)
    position = rng.integers(1, 7, n)
    for i in range(n):
        if y[i]:
            x[i, :, position[i], 0] += 2.0
        else:
            x[i, position[i], :, 0] += 2.0
    return x, y


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", "--short", action="store_true", help="a few steps (for CI)")
    parser.add_argument("--logdir", default="logs")
    args = parser.parse_args(argv)
    mn.manual_seed(0)
    x, y = make_data(256 if args.quick else 2048, seed=0)
    model = mn.models.Sequential([
        layers.Input((8, 8, 1)),
        layers.Conv2D(8, 3, padding="same", activation="relu"),
        layers.BatchNormalization(),
        layers.MaxPooling2D(2),
        layers.Flatten(),
        layers.Dropout(0.2),
        layers.Dense(2, activation="softmax"),
    ], name="bars")
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    board = mn.callbacks.TensorBoard(log_dir=args.logdir, histogram_freq=1, update_freq="batch")
    epochs = 2 if args.quick else 8
    history = model.fit(x, y, epochs=epochs, batch_size=32, validation_split=0.25,
                        callbacks=[board], verbose=0)
    print(f"val_accuracy after training: {history.history['val_accuracy'][-1]:.3f}")
    print(f"TensorBoard logs in {os.path.abspath(args.logdir)} (train/ and validation/)")

    try:
        from tensorboard.backend.event_processing import event_accumulator
    except ImportError:
        print("tensorboard is not installed: skipping the read-back (pip install tensorboard)")
    else:
        accumulator = event_accumulator.EventAccumulator(os.path.join(args.logdir, "train"))
        accumulator.Reload()
        # (a folder logged to twice holds both runs, as with Keras: show this run's epochs)
        losses = [round(e.value, 4) for e in accumulator.Scalars("epoch_loss")][-epochs:]
        print(f"tensorboard reads epoch_loss back: {losses}; histograms of "
              f"{len(accumulator.Tags()['histograms'])} weights")

    try:
        import onnx  # noqa: F401  (model.export needs it)
        import onnxruntime
    except ImportError:
        print("onnx / onnxruntime are not installed: skipping the export "
              "(pip install onnx onnxruntime)")
    else:
        model.export("bars.onnx", format="onnx")
        session = onnxruntime.InferenceSession("bars.onnx", providers=["CPUExecutionProvider"])
        onnx_out = session.run(None, {session.get_inputs()[0].name: x[:64]})[0]
        difference = float(np.abs(onnx_out - model.predict(x[:64], verbose=0)).max())
        print(f"onnxruntime vs predict: largest difference {difference:.2e}")

    model.save("bars.keras")      # a real Keras 3 file (with h5py; minnet's own zip otherwise)
    restored = mn.models.load_model("bars.keras")
    same = np.allclose(restored.predict(x[:16], verbose=0), model.predict(x[:16], verbose=0),
                       atol=1e-6)
    print(f"bars.keras reloaded with the same predictions: {same}")


if __name__ == "__main__":
    main()
