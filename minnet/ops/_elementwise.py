"""Elementwise Functions the autograd floor does not have (arctan, sinh, erfinv, ...).

``unary(name, forward, grad)`` makes a Function ``y = forward(x)`` whose backward is
``grad(g, x, y)``, written in operations ndarrays and Tensors share (``*``, ``/``, ``**``),
so the same body serves the NumPy backward and the recorded one (``create_graph=True``):
each op is twice differentiable. The derivatives are the textbook ones
(docs/ops.md lists them).
"""
import math

import numpy as np
from scipy import special

from minnet.autograd import Function, unbroadcast

__all__ = ["unary", "Arctan2", "Tan", "Sinh", "Cosh", "Tanh", "Arcsin", "Arccos", "Arctan", "Arcsinh",
           "Arccosh", "Arctanh", "Erfinv", "Cbrt", "I0", "Sinc", "Trunc"]


def unary(name, forward, grad, twice=True):
    def fwd(ctx, a):
        y = forward(a)
        ctx.save_for_backward(a, y)
        return y

    def bwd(ctx, g):
        a, y = ctx.saved_tensors
        return grad(g, a, y)

    cls = type(name, (Function,), {"forward": staticmethod(fwd), "backward": staticmethod(bwd),
                                   "backward_graph": staticmethod(bwd) if twice else None,
                                   "node_name": f"{name}Backward"})
    return cls


def _exp(t):
    return t.exp() if hasattr(t, "exp") else np.exp(t)


Tan = unary("Tan", np.tan, lambda g, a, y: g * (y * y + 1))
Sinh = unary("Sinh", np.sinh, lambda g, a, y: g * ((_exp(a) + _exp(-a)) * 0.5))
Cosh = unary("Cosh", np.cosh, lambda g, a, y: g * ((_exp(a) - _exp(-a)) * 0.5))
Tanh = unary("Tanh", np.tanh, lambda g, a, y: g * (1 - y * y))
Arcsin = unary("Arcsin", np.arcsin, lambda g, a, y: g * (1 - a * a) ** -0.5)
Arccos = unary("Arccos", np.arccos, lambda g, a, y: -g * (1 - a * a) ** -0.5)
Arctan = unary("Arctan", np.arctan, lambda g, a, y: g / (a * a + 1))
Arcsinh = unary("Arcsinh", np.arcsinh, lambda g, a, y: g * (a * a + 1) ** -0.5)
Arccosh = unary("Arccosh", np.arccosh, lambda g, a, y: g * (a * a - 1) ** -0.5)
Arctanh = unary("Arctanh", np.arctanh, lambda g, a, y: g / (1 - a * a))
Erfinv = unary("Erfinv", special.erfinv, lambda g, a, y: g * (_exp(y * y) * (math.sqrt(math.pi) / 2)))
Cbrt = unary("Cbrt", np.cbrt, lambda g, a, y: g / (y * y * 3))
I0 = unary("I0", lambda a: special.i0(a).astype(a.dtype),
           lambda g, a, y: g * special.i1(a).astype(a.dtype), twice=False)
Trunc = unary("Trunc", np.trunc, lambda g, a, y: g * 0)


def _sinc_grad(g, a, y):
    # d/dx sin(pi x)/(pi x) = (cos(pi x) - sinc(x)) / x, and 0 at x = 0 (once differentiable)
    safe = np.where(a == 0, 1, a)
    return g * np.where(a == 0, 0, (np.cos(np.pi * a) - y) / safe).astype(a.dtype)


Sinc = unary("Sinc", np.sinc, _sinc_grad, twice=False)


class Arctan2(Function):
    """``atan2(y, x)``; ``d/dy = x / (x² + y²)``, ``d/dx = -y / (x² + y²)``."""

    @staticmethod
    def forward(ctx, y, x):
        ctx.save_for_backward(y, x)
        return np.arctan2(y, x)

    @staticmethod
    def backward(ctx, g):
        y, x = ctx.saved_tensors
        r2 = x * x + y * y
        return unbroadcast(g * x / r2, y.shape), unbroadcast(-g * y / r2, x.shape)

    backward_graph = backward

