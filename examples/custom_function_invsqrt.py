"""A custom differentiable op: y = 1/sqrt(x), with its backward written by hand.

    forward:  y = x^(-1/2)
    backward: dL/dx = dL/dy * dy/dx = dL/dy * (-1/2) x^(-3/2) = -1/2 * y^3 * dL/dy

The backward is computed from the saved OUTPUT y (no need to keep x), as the seed
example of minnet's autograd: see docs/autograd.md.

Run:  python examples/custom_function_invsqrt.py [--quick]
"""
import argparse

import numpy as np

import minnet as mn


class InvSqrt(mn.Function):
    @staticmethod
    def forward(ctx, x):
        if np.any(x <= 0):
            raise ValueError("InvSqrt: expected x > 0 everywhere")
        y = 1.0 / np.sqrt(x)            # forward receives and returns np.ndarray
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, dLdy):
        (y,) = ctx.saved_tensors
        return -0.5 * y ** 3 * dLdy if ctx.needs_input_grad[0] else None


def main(quick=False):
    mn.manual_seed(0)
    x = mn.tensor(np.random.default_rng(0).random((4, 3)) + 0.5, requires_grad=True)
    z = InvSqrt.apply(x)
    loss = (z * z).sum()                # = sum(1/x), so dL/dx = -1/x^2
    loss.backward()
    print("graph:")
    mn.print_graph(loss)
    print("max |x.grad - (-1/x^2)| =", float(np.max(np.abs(x.grad + 1 / x.data ** 2))))
    print("gradcheck:", mn.gradcheck(InvSqrt.apply, (x,)))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke-test mode (already fast)")
    main(parser.parse_args().quick)
