"""A model with two inputs and two outputs (functional API): per-output losses and weights.

    python examples/two_input_model.py
    python examples/two_input_model.py --short

Input "features" (8 numbers) and input "tag" (a one-hot of 4 categories) meet in a
Concatenate layer; one head classifies (sparse cross-entropy, with accuracy), the other
regresses a score (mse, weighted 0.5). Inputs and targets are passed as dicts keyed by
the Input and output names.
"""
import argparse

import numpy as np

import minnet as mn
from minnet import layers


def make_data(n, seed):
    rng = np.random.default_rng(seed)
    features = rng.standard_normal((n, 8)).astype(np.float32)
    tag = mn.utils.to_categorical(rng.integers(0, 4, n), num_classes=4)
    label = (features[:, 0] + tag[:, 1] > 0.5).astype(np.int64)
    score = (features[:, :3].sum(axis=1, keepdims=True) + tag[:, 2:3]).astype(np.float32)
    return {"features": features, "tag": tag}, {"label": label, "score": score}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--short", "--quick", action="store_true", help="a few epochs (for CI)")
    args = parser.parse_args(argv)
    mn.manual_seed(0)
    features = mn.Input(shape=(8,), name="features")
    tag = mn.Input(shape=(4,), name="tag")
    h = layers.Concatenate()([layers.Dense(16, activation="relu")(features), tag])
    h = layers.Dense(16, activation="relu")(h)
    outputs = {"label": layers.Dense(2, name="label")(h), "score": layers.Dense(1, name="score")(h)}
    model = mn.Model({"features": features, "tag": tag}, outputs, name="two_inputs")
    model.summary()
    model.compile(optimizer="adam",
                  loss={"label": mn.losses.SparseCategoricalCrossentropy(from_logits=True), "score": "mse"},
                  loss_weights={"label": 1.0, "score": 0.5}, metrics={"label": ["accuracy"]})
    x_train, y_train = make_data(256 if args.short else 4096, seed=1)
    x_test, y_test = make_data(512, seed=2)
    model.fit(x_train, y_train, epochs=2 if args.short else 20, batch_size=64, verbose=2,
              validation_split=0.1)
    logs = model.evaluate(x_test, y_test, verbose=0, return_dict=True)
    print("test:", ", ".join(f"{k} {v:.4f}" for k, v in logs.items()))
    predictions = model.predict(x_test)
    print("prediction shapes:", {k: v.shape for k, v in predictions.items()})


if __name__ == "__main__":
    main()
