"""A small ResNet (residual blocks joined with layers.Add) on CIFAR-shaped data, functional API.

    python examples/resnet_cifar_shaped.py
    python examples/resnet_cifar_shaped.py --short

The data are random 32x32x3 images whose class is the brightest colour channel, so the
network has something learnable without a download. Each residual block computes
relu(x + conv(relu(conv(x)))); a 1x1 convolution matches the channels where they change.
The script prints the summary (with its "Connected to" column) and the test accuracy.
"""
import argparse

import numpy as np

import minnet as mn
from minnet import layers


def make_data(n, seed):
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 1, size=(n, 3, 32, 32)).astype(np.float32)
    y = rng.integers(0, 3, n)
    x[np.arange(n), y] += 0.5                      # the class is the brightest channel
    return x, y


def residual_block(x, filters, name):
    shortcut = x
    h = layers.Conv2D(filters, 3, padding="same", name=f"{name}_conv1")(x)
    h = layers.ReLU(name=f"{name}_relu1")(h)
    h = layers.Conv2D(filters, 3, padding="same", name=f"{name}_conv2")(h)
    if shortcut.shape[1] != filters:               # channels_first: axis 1 holds the channels
        shortcut = layers.Conv2D(filters, 1, name=f"{name}_project")(shortcut)
    return layers.ReLU(name=f"{name}_out")(layers.Add(name=f"{name}_add")([shortcut, h]))


def build_model():
    inputs = mn.Input(shape=(3, 32, 32), name="image")
    h = layers.Conv2D(8, 3, strides=2, padding="same", activation="relu", name="stem")(inputs)
    h = residual_block(h, 8, "block1")
    h = layers.MaxPooling2D(2, name="pool")(h)
    h = residual_block(h, 16, "block2")
    h = layers.GlobalAveragePooling2D(name="gap")(h)
    outputs = layers.Dense(3, name="logits")(h)
    return mn.Model(inputs, outputs, name="tiny_resnet")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--short", "--quick", action="store_true", help="a few steps (for CI)")
    args = parser.parse_args(argv)
    # PyTorch's NCHW layout keeps the shapes readable next to the kernels; the same model
    # runs channels_last with shape=(32, 32, 3) and data of that shape.
    mn.config.set_image_data_format("channels_first")
    mn.manual_seed(0)
    n_train = 128 if args.short else 2048
    x_train, y_train = make_data(n_train, seed=1)
    x_test, y_test = make_data(256, seed=2)
    model = build_model()
    model.summary()
    model.compile(optimizer=mn.optimizers.Adam(learning_rate=3e-3),
                  loss=mn.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    model.fit(x_train, y_train, batch_size=32, epochs=1 if args.short else 5, verbose=2, seed=0)
    loss, accuracy = model.evaluate(x_test, y_test, verbose=0)
    print(f"test loss {loss:.4f}, test accuracy {accuracy:.3f} (chance: 0.333)")


if __name__ == "__main__":
    main()
