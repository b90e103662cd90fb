"""Write your own layer: weights from add_weight, a hand-written backward, save/load.

    python examples/custom_layer.py
    python examples/custom_layer.py --quick

``Swish`` computes ``y = x * sigmoid(beta * x)`` with a learnable ``beta`` per feature.
Its math lives in a ``mn.Function`` (forward and backward on ndarrays, as
``torch.autograd.Function``); the layer owns the weight and calls the function. The
backward is checked against finite differences with ``mn.gradcheck``, the layer is
trained inside a Sequential model, and ``@mn.register_layer`` lets ``mn.load_model``
re-create it from a saved file.
"""
import argparse
import os
import tempfile

import numpy as np

import minnet as mn
from minnet import layers
from minnet.datasets import make_blobs


class SwishFunction(mn.Function):
    """y = x * s with s = sigmoid(beta * x); beta has shape (features,)."""

    @staticmethod
    def forward(ctx, x, beta):
        s = 1.0 / (1.0 + np.exp(-np.clip(beta * x, -60, 60)))
        ctx.save_for_backward(x, beta, s)
        return x * s

    @staticmethod
    def backward(ctx, grad_y):
        x, beta, s = ctx.saved_tensors
        ds = s * (1.0 - s)                       # d sigmoid(u) / du
        grad_x = grad_beta = None
        if ctx.needs_input_grad[0]:
            grad_x = grad_y * (s + x * ds * beta)
        if ctx.needs_input_grad[1]:
            # beta is broadcast over the batch (and any other leading axes): sum them out
            grad_beta = (grad_y * x * x * ds).reshape(-1, beta.shape[0]).sum(axis=0)
        return grad_x, grad_beta


@mn.register_layer
class Swish(layers.Layer):
    """Swish activation with a learnable slope per feature.

    Args:
        beta_init: initial value of every ``beta``.

    Shape:
        - Input: ``(N, *, features)``; Output: the same.
    """

    def __init__(self, beta_init=1.0, **kwargs):
        super().__init__(**kwargs)
        self.beta_init = float(beta_init)

    def build(self, input_shape):
        self.beta = self.add_weight("beta", (input_shape[-1],),
                                    initializer=mn.initializers.Constant(self.beta_init))

    def call(self, x, training=False):
        return SwishFunction.apply(x, self.beta)

    def get_config(self):
        return {**super().get_config(), "beta_init": self.beta_init}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 epochs (for CI)")
    args = parser.parse_args(argv)

    # 1. the hand-written backward agrees with finite differences (float64)
    generator = np.random.default_rng(0)
    x = mn.tensor(generator.normal(size=(5, 3)), requires_grad=True)
    beta = mn.tensor(generator.uniform(0.5, 2.0, size=3), requires_grad=True)
    print("gradcheck(SwishFunction):", mn.gradcheck(SwishFunction.apply, [x, beta]))

    # 2. use it like any built-in layer
    mn.manual_seed(0)
    x_data, y_data = make_blobs(600, n_features=2, centers=4, cluster_std=1.5, seed=0)
    model = mn.Sequential([layers.Input((2,)), layers.Dense(32), Swish(), layers.Dense(4)])
    model.compile(optimizer="adam", loss=mn.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    model.optimizer.learning_rate = 0.01
    history = model.fit(x_data, y_data, epochs=2 if args.quick else 30, batch_size=32, verbose=0)
    print(f"accuracy {history.history['accuracy'][-1]:.2%}, learned beta "
          f"{np.round(model.layers[1].beta.numpy()[:4], 3)} ...")

    # 3. save and load: the registered class is found by name
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "swish.minnet")
        model.save(path)
        loaded = mn.load_model(path)
    same = np.array_equal(loaded.predict(x_data), model.predict(x_data))
    print(f"reloaded {type(loaded.layers[1]).__name__} layer; identical predictions: {same}")
    return same


if __name__ == "__main__":
    main()
