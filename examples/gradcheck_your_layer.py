"""Check the gradients of your own layer with finite differences, in float64.

``mn.gradcheck(layer, x)`` compares backward's gradients for the input and every
parameter of the layer with central differences (f(w+eps) - f(w-eps)) / 2eps.

Run:  python examples/gradcheck_your_layer.py [--quick]
"""
import argparse

import numpy as np

import minnet as mn
from minnet import layers


class Swish(layers.Layer):
    """y = x * sigmoid(beta * x) with a trainable beta per feature."""

    def build(self, input_shape):
        self.beta = self.add_weight("beta", (input_shape[-1],), initializer="ones")

    def call(self, x, training=False):
        return x * (x * self.beta).sigmoid()


def main(quick=False):
    mn.manual_seed(0)
    x = mn.tensor(np.random.default_rng(0).standard_normal((5, 4)), requires_grad=True)
    for layer in [Swish(dtype="float64"), layers.Dense(3, activation="tanh", dtype="float64"),
                  layers.Conv2D(2, (3, 2), strides=2, padding=1, dtype="float64")]:
        inp = x if not isinstance(layer, layers.Conv2D) else mn.tensor(
            np.random.default_rng(1).standard_normal((2, 3, 6, 5)), requires_grad=True)
        ok = mn.gradcheck(layer, inp)
        print(f"{type(layer).__name__:8s} gradcheck: {ok} "
              f"({len(layer.parameters())} parameters and the input checked)")

    class Broken(Swish):
        def call(self, x, training=False):
            return BrokenMul.apply(x, self.beta)

    class BrokenMul(mn.Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a * b

        @staticmethod
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            return g * b, (g * a).sum(axis=0) * 1.01   # a 1% error in d/db

    try:
        mn.gradcheck(Broken(dtype="float64"), x)
    except mn.GradcheckError as err:
        print("a broken backward is caught:", err)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke-test mode (already fast)")
    main(parser.parse_args().quick)
