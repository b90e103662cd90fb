"""LayerNormalization and GroupNormalization (Keras's arguments and defaults).

Both run the fused row kernels of ``minnet._ext.layernorm_kernels`` through
``minnet.functional.layer_norm`` / ``group_norm`` (math in ``docs/math/layernorm.md``).
The variance is the biased one (as Keras and PyTorch); ``epsilon`` defaults to Keras's 1e-3
(PyTorch's ``nn.LayerNorm`` uses 1e-5).
"""
import warnings

import numpy as np

from minnet import constraints, initializers, regularizers
from minnet import functional as F
from minnet._checks import check_float, check_int, invalid
from minnet._utils import user_stacklevel
from minnet.layers.base import Layer  # noqa: F401 (the base of _AffineNorm)

__all__ = ["LayerNormalization", "GroupNormalization"]


class _AffineNorm(Layer):
    """Shared arguments: epsilon, center/scale and gamma/beta's initializer, regularizer and constraint."""

    def __init__(self, epsilon, center, scale, beta_initializer, gamma_initializer,
                 beta_regularizer, gamma_regularizer, beta_constraint, gamma_constraint,
                 name, dtype, trainable, **kwargs):
        super().__init__(name=name, dtype=dtype, trainable=trainable, **kwargs)
        self.epsilon = check_float("epsilon", epsilon, low=0.0)
        self.center = bool(center)
        self.scale = bool(scale)
        self.beta_initializer = initializers.get(beta_initializer)
        self.gamma_initializer = initializers.get(gamma_initializer)
        self.beta_regularizer = regularizers.get(beta_regularizer)
        self.gamma_regularizer = regularizers.get(gamma_regularizer)
        self.beta_constraint = constraints.get(beta_constraint)
        self.gamma_constraint = constraints.get(gamma_constraint)
        self.gamma = None
        self.beta = None

    def _make_weights(self, shape):
        if self.scale:
            self.gamma = self.add_weight("gamma", shape, initializer=self.gamma_initializer,
                                         regularizer=self.gamma_regularizer,
                                         constraint=self.gamma_constraint)
        if self.center:
            self.beta = self.add_weight("beta", shape, initializer=self.beta_initializer,
                                        regularizer=self.beta_regularizer,
                                        constraint=self.beta_constraint)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        return {**super().get_config(), "epsilon": self.epsilon, "center": self.center,
                "scale": self.scale,
                "beta_initializer": initializers.serialize(self.beta_initializer),
                "gamma_initializer": initializers.serialize(self.gamma_initializer),
                "beta_regularizer": regularizers.serialize(self.beta_regularizer),
                "gamma_regularizer": regularizers.serialize(self.gamma_regularizer),
                "beta_constraint": constraints.serialize(self.beta_constraint),
                "gamma_constraint": constraints.serialize(self.gamma_constraint)}


def _axes(value):
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return [int(value)]
    if isinstance(value, (tuple, list)) and value and all(
            isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in value):
        return [int(a) for a in value]
    raise invalid("axis", "an int or a non-empty list of ints", value, TypeError)


class LayerNormalization(_AffineNorm):
    """Normalise each sample over ``axis``: ``y = (x - mean) / sqrt(var + epsilon) * gamma + beta``.

    Args:
        axis: int or list of ints (default -1: the features of each position).
        epsilon: default 1e-3 (Keras's).
        center, scale: learn ``beta`` / ``gamma`` (shape: the input's sizes on ``axis``).
        beta_initializer ("zeros"), gamma_initializer ("ones"), *_regularizer, *_constraint.
        rms_scaling: Keras 3's deprecated mode, kept with its meaning (and its warning):
            ``y = x / sqrt(var + epsilon) * gamma``, no mean subtracted and no ``beta``
            (``RMSNormalization`` is the root-mean-square one).

    Shape:
        - Input: any ``(N, *)``.  Output: the same.

    Example:
        >>> y = layers.LayerNormalization()(np.random.randn(2, 5, 8))
        >>> y.shape
        (2, 5, 8)
    """

    def __init__(self, axis=-1, epsilon=1e-3, center=True, scale=True,
                 beta_initializer="zeros", gamma_initializer="ones", beta_regularizer=None,
                 gamma_regularizer=None, beta_constraint=None, gamma_constraint=None,
                 name=None, dtype=None, trainable=True, rms_scaling=False, **kwargs):
        super().__init__(epsilon, center, scale, beta_initializer, gamma_initializer,
                         beta_regularizer, gamma_regularizer, beta_constraint, gamma_constraint,
                         name, dtype, trainable, **kwargs)
        self.axis = _axes(axis)
        self.rms_scaling = bool(rms_scaling)
        if self.rms_scaling:
            warnings.warn("You passed `rms_scaling=True`, which is deprecated (Keras 3). This "
                          "argument scales the input by the variance, not the root mean square. "
                          "To use RMS Normalization, use `layers.RMSNormalization` instead.",
                          UserWarning, stacklevel=user_stacklevel())

    def _resolve(self, ndim):
        axes = []
        for a in self.axis:
            if not -ndim < a < ndim or a % ndim == 0:
                raise ValueError(f"Layer '{self.name}': axis {a} is out of range for inputs of "
                                 f"{ndim} dimensions (the batch axis 0 cannot be normalised).")
            axes.append(a % ndim)
        if len(set(axes)) != len(axes):
            raise ValueError(f"Layer '{self.name}': duplicate axes in axis={self.axis}.")
        return axes

    def build(self, input_shape):
        input_shape = tuple(input_shape)
        axes = self._resolve(len(input_shape))
        shape = tuple(input_shape[a] for a in axes)
        if any(s is None for s in shape):
            raise ValueError(f"Layer '{self.name}' needs the sizes on axis {self.axis} to be "
                             f"known. Received input_shape={input_shape}")
        if self.rms_scaling:        # Keras: gamma if scale or rms_scaling, never beta
            center, scale = self.center, self.scale
            self.center, self.scale = False, True
            self._make_weights(shape)
            self.center, self.scale = center, scale
        else:
            self._make_weights(shape)
        super().build(input_shape)

    def call(self, x, training=False):
        axes = self._resolve(x.ndim)
        ndim = x.ndim
        # Move the normalised axes to the end (in the order given, matching gamma's shape).
        order = [a for a in range(ndim) if a not in axes] + axes
        moved = order != list(range(ndim))
        h = x.transpose(order) if moved else x
        shape = tuple(h.shape[ndim - len(axes):])
        gamma, beta = self.gamma, self.beta
        if self.rms_scaling:
            reduce = tuple(range(ndim - len(axes), ndim))
            centred = h - h.mean(axis=reduce, keepdims=True)
            variance = (centred * centred).mean(axis=reduce, keepdims=True)
            y = h * (variance + self.epsilon).rsqrt() * gamma
            return y.transpose(list(np.argsort(order))) if moved else y
        if gamma is not None or beta is not None:
            if gamma is None:
                gamma = np.ones(shape, dtype=self.dtype)
            if beta is None:
                beta = np.zeros(shape, dtype=self.dtype)
        y = F.layer_norm(h, shape, gamma, beta, eps=self.epsilon)
        if moved:
            y = y.transpose(list(np.argsort(order)))
        return y

    def get_config(self):
        return {**super().get_config(), "axis": self.axis if len(self.axis) > 1 else self.axis[0],
                "rms_scaling": self.rms_scaling}

    def extra_repr(self):
        return f"axis={self.axis if len(self.axis) > 1 else self.axis[0]}, epsilon={self.epsilon}"


class GroupNormalization(_AffineNorm):
    """Normalise each sample over groups of channels (Wu and He, 2018).

    The channels (``axis``, default -1: channels_last) are split into ``groups`` groups;
    mean and variance are taken per sample and group over the group's channels and every
    other non-batch axis. ``groups=1`` is layer norm over all features; ``groups=C`` is
    instance norm.

    Args:
        groups: positive divisor of the channel count (default 32, as Keras), or -1 for one
            group per channel (instance normalisation; ``n_groups`` holds the resolved count).
        axis: the channel axis (default -1; use 1 for channels_first images).
        epsilon: default 1e-3.
        center, scale, initializers, regularizers, constraints: as LayerNormalization
            (``gamma``/``beta`` have one value per channel).

    Example:
        >>> layers.GroupNormalization(groups=2)(np.random.randn(2, 4, 4, 6)).shape
        (2, 4, 4, 6)
    """

    def __init__(self, groups=32, axis=-1, epsilon=1e-3, center=True, scale=True,
                 beta_initializer="zeros", gamma_initializer="ones", beta_regularizer=None,
                 gamma_regularizer=None, beta_constraint=None, gamma_constraint=None,
                 name=None, dtype=None, trainable=True, **kwargs):
        super().__init__(epsilon, center, scale, beta_initializer, gamma_initializer,
                         beta_regularizer, gamma_regularizer, beta_constraint, gamma_constraint,
                         name, dtype, trainable, **kwargs)
        # Keras: groups=-1 is one group per channel (instance normalisation).
        self.groups = -1 if groups == -1 and not isinstance(groups, bool) else \
            check_int("groups", groups, 1)
        self.n_groups = None if self.groups == -1 else self.groups
        if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
            raise invalid("axis", "an int", axis, TypeError)
        self.axis = int(axis)

    def _channel_axis(self, ndim):
        if not -ndim < self.axis < ndim or self.axis % ndim == 0:
            raise ValueError(f"Layer '{self.name}': axis {self.axis} is out of range for inputs "
                             f"of {ndim} dimensions.")
        return self.axis % ndim

    def build(self, input_shape):
        input_shape = tuple(input_shape)
        axis = self._channel_axis(len(input_shape))
        channels = input_shape[axis]
        if self.groups == -1 and channels is not None:
            self.n_groups = int(channels)
        if channels is None or channels % self.n_groups:
            raise ValueError(f"Layer '{self.name}': the number of groups ({self.groups}) must "
                             f"divide the number of channels ({channels}, axis {self.axis} of "
                             f"input shape {input_shape}).")
        self._make_weights((channels,))
        super().build(input_shape)

    def call(self, x, training=False):
        axis = self._channel_axis(x.ndim)
        ndim = x.ndim
        order = [0, axis] + [a for a in range(1, ndim) if a != axis]
        moved = order != list(range(ndim))
        h = x.transpose(order) if moved else x
        y = F.group_norm(h, self.n_groups, self.gamma, self.beta, eps=self.epsilon)
        if moved:
            y = y.transpose(list(np.argsort(order)))
        return y

    def get_config(self):
        return {**super().get_config(), "groups": self.groups, "axis": self.axis}

    def extra_repr(self):
        return f"groups={self.groups}, axis={self.axis}, epsilon={self.epsilon}"
