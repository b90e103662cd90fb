"""Activation layers: ReLU, LeakyReLU, ELU, SELU, Sigmoid, Tanh, Softmax.

Each is one call to the matching ``minnet.functional`` op; see docs/layers.md for the
formulas and what their backward passes keep.
"""
import numbers

import numpy as np

from minnet.layers.base import Layer
from minnet._utils import functional as _functional

__all__ = ["ReLU", "LeakyReLU", "ELU", "SELU", "Sigmoid", "Tanh", "Softmax"]


class _Elementwise(Layer):
    _op = None

    def call(self, x, training=False):
        return getattr(_functional(), self._op)(x)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)


class ReLU(_Elementwise):
    """``y = max(x, 0)``; backward ``dx = dy * (x > 0)``.

    Shape:
        - Input: any.  Output: the same.

    Example:
        >>> layers.ReLU()(np.array([[-1.0, 2.0]])).numpy()
        array([[0., 2.]], dtype=float32)
    """

    _op = "relu"


class Sigmoid(_Elementwise):
    """``y = 1 / (1 + exp(-x))``; backward from the saved output: ``dx = dy * y * (1 - y)``.

    Shape:
        - Input: any.  Output: the same.

    Example:
        >>> layers.Sigmoid()(np.zeros((1, 2))).numpy()
        array([[0.5, 0.5]], dtype=float32)
    """

    _op = "sigmoid"


class Tanh(_Elementwise):
    """``y = tanh(x)``; backward from the saved output: ``dx = dy * (1 - y**2)``.

    Shape:
        - Input: any.  Output: the same.

    Example:
        >>> layers.Tanh()(np.zeros((1, 2))).numpy()
        array([[0., 0.]], dtype=float32)
    """

    _op = "tanh"


class SELU(_Elementwise):
    """Scaled ELU, ``scale * (x if x > 0 else alpha * (exp(x) - 1))`` with the fixed
    constants ``alpha ~ 1.6733``, ``scale ~ 1.0507`` (Klambauer et al., 2017).

    Shape:
        - Input: any.  Output: the same.

    Example:
        >>> y = layers.SELU()(np.random.randn(2, 3))
    """

    _op = "selu"


class LeakyReLU(Layer):
    """``y = x`` for ``x > 0``, ``negative_slope * x`` otherwise.

    The default slope is PyTorch's 0.01 (Keras 3 uses 0.3): pass ``negative_slope=0.3``
    for Keras's behaviour.  Keras 2's argument name ``alpha`` is accepted as an alias.

    Args:
        negative_slope: float >= 0 (default 0.01).
        alpha: alias of ``negative_slope`` (keyword only; give one or the other).

    Shape:
        - Input: any.  Output: the same.

    Example:
        >>> layers.LeakyReLU(0.1)(np.array([[-1.0, 2.0]])).numpy()
        array([[-0.1,  2. ]], dtype=float32)
    """

    def __init__(self, negative_slope=0.01, name=None, dtype="float32", trainable=True, *, alpha=None):
        super().__init__(name=name, dtype=dtype, trainable=trainable)
        if alpha is not None:
            if negative_slope != 0.01:
                raise ValueError(f"Give either `negative_slope` or its alias `alpha`, not both. "
                                 f"Received: negative_slope={negative_slope!r}, alpha={alpha!r}")
            negative_slope = alpha
        if (isinstance(negative_slope, bool) or not isinstance(negative_slope, numbers.Real)
                or not negative_slope >= 0 or not np.isfinite(negative_slope)):
            raise ValueError(f"Invalid value for argument `negative_slope`: expected a "
                             f"non-negative float. Received: negative_slope={negative_slope!r}")
        self.negative_slope = float(negative_slope)

    def call(self, x, training=False):
        return _functional().leaky_relu(x, negative_slope=self.negative_slope)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        return {**super().get_config(), "negative_slope": self.negative_slope}

    def extra_repr(self):
        return f"negative_slope={self.negative_slope}"


class ELU(Layer):
    """``y = x`` for ``x > 0``, ``alpha * (exp(x) - 1)`` otherwise.

    Args:
        alpha: float > 0 (default 1.0).

    Shape:
        - Input: any.  Output: the same.

    Example:
        >>> y = layers.ELU(alpha=1.0)(np.array([[-1.0, 2.0]]))
    """

    def __init__(self, alpha=1.0, name=None, dtype="float32", trainable=True):
        super().__init__(name=name, dtype=dtype, trainable=trainable)
        if (isinstance(alpha, bool) or not isinstance(alpha, numbers.Real)
                or not alpha > 0 or not np.isfinite(alpha)):
            raise ValueError(f"Invalid value for argument `alpha`: expected a positive float. "
                             f"Received: alpha={alpha!r}")
        self.alpha = float(alpha)

    def call(self, x, training=False):
        return _functional().elu(x, alpha=self.alpha)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        return {**super().get_config(), "alpha": self.alpha}

    def extra_repr(self):
        return f"alpha={self.alpha}"


class Softmax(Layer):
    """``y = exp(x) / sum(exp(x))`` along ``axis``; backward ``dx = y * (dy - sum(dy * y))``.

    Args:
        axis: int (default -1).

    Shape:
        - Input: any.  Output: the same.

    Example:
        >>> layers.Softmax()(np.zeros((1, 4))).numpy()
        array([[0.25, 0.25, 0.25, 0.25]], dtype=float32)
    """

    def __init__(self, axis=-1, name=None, dtype="float32", trainable=True):
        super().__init__(name=name, dtype=dtype, trainable=trainable)
        if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
            raise ValueError(f"Invalid value for argument `axis`: expected an int. "
                             f"Received: axis={axis!r}")
        self.axis = int(axis)

    def call(self, x, training=False):
        if not -x.ndim <= self.axis < x.ndim:
            raise ValueError(f"Layer '{self.name}': axis={self.axis} is out of range for input of "
                             f"shape {tuple(x.shape)}.")
        return _functional().softmax(x, axis=self.axis)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        return {**super().get_config(), "axis": self.axis}

    def extra_repr(self):
        return f"axis={self.axis}"
