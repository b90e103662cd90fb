"""Watch gradients vanish through a deep sigmoid stack (and not through ReLU + BatchNorm).

GradientMonitor records each layer's parameter-gradient L2 norm, averaged over the
epoch, into History as "grad_norm/<layer>". Through 8 sigmoid layers the first layer's
gradient is orders of magnitude smaller than the last's: each sigmoid multiplies the
backward signal by sigma'(x) <= 1/4. With ReLU and BatchNormalization it stays healthy.

Run:  python examples/vanishing_gradients.py [--quick]
"""
import argparse

import numpy as np

import minnet as mn
from minnet import callbacks, layers


def deep_model(activation, depth, batch_norm=False):
    stack = [layers.Input((20,))]
    for i in range(depth):
        stack.append(layers.Dense(32, name=f"dense_{i}"))
        if batch_norm:
            stack.append(layers.BatchNormalization())
        stack.append(layers.Activation(activation))
    stack.append(layers.Dense(2, name="output"))
    return mn.Sequential(stack)


def main(quick=False):
    mn.manual_seed(0)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((512, 20)).astype(np.float32)
    y = (x[:, 0] * x[:, 1] > 0).astype(np.int64)
    depth = 8
    epochs = 1 if quick else 3
    for label, model in [("sigmoid x8", deep_model("sigmoid", depth)),
                         ("relu + batchnorm x8", deep_model("relu", depth, batch_norm=True))]:
        model.compile(optimizer=mn.optimizers.SGD(learning_rate=0.1),
                      loss=mn.losses.SparseCategoricalCrossentropy(from_logits=True))
        history = model.fit(x, y, batch_size=64, epochs=epochs, verbose=0,
                            callbacks=[callbacks.GradientMonitor()])
        norms = [history.history[f"grad_norm/dense_{i}"][-1] for i in range(depth)]
        norms.append(history.history["grad_norm/output"][-1])
        print(f"{label}: gradient norm per layer, first -> last (epoch {epochs})")
        print("   " + "  ".join(f"{n:.1e}" for n in norms))
        print(f"   first/last ratio: {norms[0] / norms[-1]:.1e}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one epoch (smoke test)")
    main(parser.parse_args().quick)
