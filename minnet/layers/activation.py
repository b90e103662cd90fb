"""Activation layers: ReLU, LeakyReLU, PReLU, ELU, SELU, Sigmoid, Tanh, Softmax.

Each is one call to the matching ``minnet.functional`` op; see docs/layers.md for the
formulas and what their backward passes keep.
"""
import numbers

import numpy as np

from minnet import activations, constraints, initializers, regularizers
from minnet import functional as F
from minnet._checks import check_float
from minnet.layers.base import Layer

__all__ = ["ReLU", "LeakyReLU", "PReLU", "ELU", "SELU", "Sigmoid", "Tanh", "Softmax"]


class _Elementwise(Layer):
    _op = None

    def call(self, x, training=False):
        return self._op(x)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)


class ReLU(Layer):
    """``y = max(x, 0)``; backward ``dx = dy * (x > 0)``.

    Keras's options: ``max_value`` clips the output (``ReLU(6.0)`` is relu6),
    ``negative_slope`` leaks the negative side, ``threshold`` moves the kink (see
    ``minnet.activations.relu``).

    Args:
        max_value: None or a float >= 0.
        negative_slope: float >= 0 (default 0).
        threshold: float (default 0).

    Shape:
        - Input: any.  Output: the same.

    Example:
        >>> layers.ReLU()(np.array([[-1.0, 2.0]])).numpy()
        array([[0., 2.]], dtype=float32)
    """

    def __init__(self, max_value=None, negative_slope=0.0, threshold=0.0, name=None, dtype=None,
                 trainable=True, **kwargs):
        super().__init__(name=name, dtype=dtype, trainable=trainable, **kwargs)
        self.max_value = None if max_value is None else check_float("max_value", max_value, low=0.0)
        self.negative_slope = check_float("negative_slope", negative_slope, low=0.0)
        self.threshold = check_float("threshold", threshold)

    def call(self, x, training=False):
        if self.max_value is None and self.negative_slope == 0 and self.threshold == 0:
            return F.relu(x)
        return activations.relu(x, negative_slope=self.negative_slope, max_value=self.max_value,
                                threshold=self.threshold)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        return {**super().get_config(), "max_value": self.max_value,
                "negative_slope": self.negative_slope, "threshold": self.threshold}

    def extra_repr(self):
        parts = []
        if self.max_value is not None:
            parts.append(f"max_value={self.max_value}")
        if self.negative_slope:
            parts.append(f"negative_slope={self.negative_slope}")
        if self.threshold:
            parts.append(f"threshold={self.threshold}")
        return ", ".join(parts)


class Sigmoid(_Elementwise):
    """``y = 1 / (1 + exp(-x))``; backward from the saved output: ``dx = dy * y * (1 - y)``.

    Shape:
        - Input: any.  Output: the same.

    Example:
        >>> layers.Sigmoid()(np.zeros((1, 2))).numpy()
        array([[0.5, 0.5]], dtype=float32)
    """

    _op = staticmethod(F.sigmoid)


class Tanh(_Elementwise):
    """``y = tanh(x)``; backward from the saved output: ``dx = dy * (1 - y**2)``.

    Shape:
        - Input: any.  Output: the same.

    Example:
        >>> layers.Tanh()(np.zeros((1, 2))).numpy()
        array([[0., 0.]], dtype=float32)
    """

    _op = staticmethod(F.tanh)


class SELU(_Elementwise):
    """Scaled ELU, ``scale * (x if x > 0 else alpha * (exp(x) - 1))`` with the fixed
    constants ``alpha ~ 1.6733``, ``scale ~ 1.0507`` (Klambauer et al., 2017).

    Shape:
        - Input: any.  Output: the same.

    Example:
        >>> y = layers.SELU()(np.random.randn(2, 3))
    """

    _op = staticmethod(F.selu)


class LeakyReLU(Layer):
    """``y = x`` for ``x > 0``, ``negative_slope * x`` otherwise.

    The default slope is Keras's 0.3 (PyTorch's ``nn.LeakyReLU`` uses 0.01: pass
    ``negative_slope=0.01`` for it).  Keras 2's argument name ``alpha`` is accepted as an alias.

    Args:
        negative_slope: float >= 0 (default 0.3).
        alpha: alias of ``negative_slope`` (keyword only; give one or the other).

    Shape:
        - Input: any.  Output: the same.

    Example:
        >>> layers.LeakyReLU(0.1)(np.array([[-1.0, 2.0]])).numpy()
        array([[-0.1,  2. ]], dtype=float32)
    """

    def __init__(self, negative_slope=0.3, name=None, dtype=None, trainable=True, *, alpha=None,
                 **kwargs):
        super().__init__(name=name, dtype=dtype, trainable=trainable, **kwargs)
        if alpha is not None:
            if negative_slope != 0.3:
                raise ValueError(f"Give either `negative_slope` or its alias `alpha`, not both. "
                                 f"Received: negative_slope={negative_slope!r}, alpha={alpha!r}")
            negative_slope = alpha
        if (isinstance(negative_slope, bool) or not isinstance(negative_slope, numbers.Real)
                or not negative_slope >= 0 or not np.isfinite(negative_slope)):
            raise ValueError(f"Invalid value for argument `negative_slope`: expected a "
                             f"non-negative float. Received: negative_slope={negative_slope!r}")
        self.negative_slope = float(negative_slope)

    def call(self, x, training=False):
        return F.leaky_relu(x, negative_slope=self.negative_slope)

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

    def __init__(self, alpha=1.0, name=None, dtype=None, trainable=True, **kwargs):
        super().__init__(name=name, dtype=dtype, trainable=trainable, **kwargs)
        if (isinstance(alpha, bool) or not isinstance(alpha, numbers.Real)
                or not alpha > 0 or not np.isfinite(alpha)):
            raise ValueError(f"Invalid value for argument `alpha`: expected a positive float. "
                             f"Received: alpha={alpha!r}")
        self.alpha = float(alpha)

    def call(self, x, training=False):
        return F.elu(x, alpha=self.alpha)

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

    def __init__(self, axis=-1, name=None, dtype=None, trainable=True, **kwargs):
        super().__init__(name=name, dtype=dtype, trainable=trainable, **kwargs)
        if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
            raise ValueError(f"Invalid value for argument `axis`: expected an int. "
                             f"Received: axis={axis!r}")
        self.axis = int(axis)

    def call(self, x, training=False):
        if not -x.ndim <= self.axis < x.ndim:
            raise ValueError(f"Layer '{self.name}': axis={self.axis} is out of range for input of "
                             f"shape {tuple(x.shape)}.")
        return F.softmax(x, axis=self.axis)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        return {**super().get_config(), "axis": self.axis}

    def extra_repr(self):
        return f"axis={self.axis}"


class PReLU(Layer):
    """Parametric ReLU: ``y = x`` for ``x > 0``, ``alpha * x`` otherwise, ``alpha`` learned.

    As Keras: ``alpha`` has the shape of one sample (``input_shape[1:]``), with size 1 on
    each of ``shared_axes`` (one slope shared along them). For images give the spatial axes:
    ``shared_axes=[1, 2]`` for channels_last ``(N, H, W, C)`` (one slope per channel, as
    PyTorch's ``nn.PReLU(C)``), ``[2, 3]`` for channels_first.

    Args:
        alpha_initializer: default ``"zeros"`` (Keras's; PyTorch starts at 0.25:
            ``initializers.Constant(0.25)``).
        alpha_regularizer, alpha_constraint: as for Dense's kernel.
        shared_axes: int or list of ints (axes of the input, the batch axis being 0).

    Shape:
        - Input: any ``(N, *)``.  Output: the same.

    Example:
        >>> layer = layers.PReLU(alpha_initializer=mn.initializers.Constant(0.25))
        >>> layer(np.array([[-1.0, 2.0]])).numpy()
        array([[-0.25,  2.  ]], dtype=float32)
    """

    def __init__(self, alpha_initializer="zeros", alpha_regularizer=None, alpha_constraint=None,
                 shared_axes=None, name=None, dtype=None, trainable=True, **kwargs):
        super().__init__(name=name, dtype=dtype, trainable=trainable, **kwargs)
        self.alpha_initializer = initializers.get(alpha_initializer)
        self.alpha_regularizer = regularizers.get(alpha_regularizer)
        self.alpha_constraint = constraints.get(alpha_constraint)
        if shared_axes is None:
            self.shared_axes = None
        else:
            axes = [shared_axes] if isinstance(shared_axes, (int, np.integer)) else shared_axes
            if (not isinstance(axes, (list, tuple)) or not all(
                    isinstance(a, (int, np.integer)) and not isinstance(a, bool) and a >= 1
                    for a in axes)):
                raise ValueError(f"Invalid value for argument `shared_axes`: expected an int >= 1 "
                                 f"or a list of them (axes of the input, batch axis 0). "
                                 f"Received: shared_axes={shared_axes!r}")
            self.shared_axes = [int(a) for a in axes]
        self.alpha = None

    def build(self, input_shape):
        input_shape = tuple(input_shape)
        param_shape = list(input_shape[1:])
        for axis in self.shared_axes or ():
            if axis >= len(input_shape):
                raise ValueError(f"Layer '{self.name}': shared axis {axis} is out of range for "
                                 f"inputs of shape {input_shape}.")
            param_shape[axis - 1] = 1
        if any(s is None for s in param_shape):
            raise ValueError(f"Layer '{self.name}' needs every non-shared axis of its input to be "
                             f"known. Received input_shape={input_shape}")
        self.alpha = self.add_weight("alpha", tuple(param_shape), initializer=self.alpha_initializer,
                                     regularizer=self.alpha_regularizer,
                                     constraint=self.alpha_constraint)
        super().build(input_shape)

    def call(self, x, training=False):
        if x.ndim != self.alpha.ndim + 1:
            self._check_input(x, ndim=self.alpha.ndim + 1)
        return F.prelu_broadcast(x, self.alpha)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        return {**super().get_config(),
                "alpha_initializer": initializers.serialize(self.alpha_initializer),
                "alpha_regularizer": regularizers.serialize(self.alpha_regularizer),
                "alpha_constraint": constraints.serialize(self.alpha_constraint),
                "shared_axes": self.shared_axes}

    def extra_repr(self):
        return "" if self.shared_axes is None else f"shared_axes={self.shared_axes}"
