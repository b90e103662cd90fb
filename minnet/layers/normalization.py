"""BatchNormalization over the channel axis of ``(N, C)`` or NCHW ``(N, C, H, W)`` input.

The math is ``minnet.functional.batch_norm`` (PyTorch semantics: normalise with the
biased batch variance, update ``moving_variance`` with the unbiased one); see
docs/layers.md and docs/math/ for the backward.
"""
import math
import numbers

import numpy as np

from minnet import initializers
from minnet.layers.base import Layer
from minnet._utils import functional as _functional

__all__ = ["BatchNormalization"]


class BatchNormalization(Layer):
    """Normalise each channel with batch statistics (training) or running ones (eval).

    Training: ``y = gamma * (x - mean_B) / sqrt(var_B + epsilon) + beta`` with the mean and
    biased variance of the batch over every axis but the channel axis, and
    ``moving_mean = (1 - momentum) * moving_mean + momentum * mean_B`` (likewise
    ``moving_variance`` with the *unbiased* batch variance).  Eval: the moving
    statistics replace the batch ones.  ``momentum`` has PyTorch's meaning (the weight of
    the new batch, 0.1 by default), not Keras's (0.99 = weight of the old value).

    Weights (``get_weights()`` order): ``gamma`` (if ``scale``), ``beta`` (if ``center``),
    then the non-trainable state ``moving_mean``, ``moving_variance``; all ``(C,)``.

    Args:
        axis: the channel axis: 1 (default; the only one for NCHW) or -1 for ``(N, C)`` input.
        momentum: float in [0, 1] (default 0.1, PyTorch's meaning).
        epsilon: positive float added to the variance (default 1e-5).
        center: learn the offset ``beta`` (default True).
        scale: learn the scale ``gamma`` (default True).
        gamma_initializer, beta_initializer, moving_mean_initializer,
        moving_variance_initializer: names/Initializers (defaults ones, zeros, zeros, ones).
        name, dtype, trainable: as for every layer.

    Shape:
        - Input: ``(N, C)`` or ``(N, C, H, W)``.  Output: the same.

    Example:
        >>> bn = layers.BatchNormalization()
        >>> y = bn(np.random.randn(8, 3, 4, 4), training=True)
        >>> [w.shape for w in bn.get_weights()]
        [(3,), (3,), (3,), (3,)]
    """

    def __init__(self, axis=1, momentum=0.1, epsilon=1e-5, center=True, scale=True,
                 gamma_initializer="ones", beta_initializer="zeros",
                 moving_mean_initializer="zeros", moving_variance_initializer="ones",
                 name=None, dtype="float32", trainable=True):
        super().__init__(name=name, dtype=dtype, trainable=trainable)
        if axis not in (1, -1) or isinstance(axis, bool):
            raise ValueError(f"Invalid value for argument `axis`: expected 1 (channels of NCHW or "
                             f"(N, C) input) or -1 (for (N, C) input). Received: axis={axis!r}")
        if (isinstance(momentum, bool) or not isinstance(momentum, numbers.Real)
                or not 0.0 <= momentum <= 1.0):
            raise ValueError(f"Invalid value for argument `momentum`: expected a float in [0, 1] "
                             f"(PyTorch's meaning: the weight of the new batch statistics). "
                             f"Received: momentum={momentum!r}")
        if (isinstance(epsilon, bool) or not isinstance(epsilon, numbers.Real)
                or not epsilon > 0 or not np.isfinite(epsilon)):
            raise ValueError(f"Invalid value for argument `epsilon`: expected a positive float. "
                             f"Received: epsilon={epsilon!r}")
        self.axis = int(axis)
        self.momentum = float(momentum)
        self.epsilon = float(epsilon)
        self.center = bool(center)
        self.scale = bool(scale)
        self.gamma_initializer = initializers.get(gamma_initializer)
        self.beta_initializer = initializers.get(beta_initializer)
        self.moving_mean_initializer = initializers.get(moving_mean_initializer)
        self.moving_variance_initializer = initializers.get(moving_variance_initializer)
        self.gamma = self.beta = self.moving_mean = self.moving_variance = None

    def build(self, input_shape):
        input_shape = tuple(input_shape)
        if len(input_shape) not in (2, 4):
            raise ValueError(f"Layer '{self.name}' expects input of shape (N, C) or (N, C, H, W). "
                             f"Received input_shape={input_shape}")
        if self.axis == -1 and len(input_shape) != 2:
            raise ValueError(f"Layer '{self.name}': axis=-1 is only supported for (N, C) input; "
                             f"NCHW input has its channels on axis 1. Received input_shape={input_shape}")
        if input_shape[1] is None:
            raise ValueError(f"Layer '{self.name}' needs a known number of channels. Received "
                             f"input_shape={input_shape}")
        channels = int(input_shape[1])
        self.num_features = channels
        if self.scale:
            self.gamma = self.add_weight("gamma", (channels,), initializer=self.gamma_initializer)
        if self.center:
            self.beta = self.add_weight("beta", (channels,), initializer=self.beta_initializer)
        self.moving_mean = self.add_weight("moving_mean", (channels,),
                                           initializer=self.moving_mean_initializer, trainable=False)
        self.moving_variance = self.add_weight("moving_variance", (channels,),
                                               initializer=self.moving_variance_initializer, trainable=False)
        super().build(input_shape)

    def call(self, x, training=False):
        if x.ndim not in (2, 4):
            raise ValueError(f"Input 0 of layer '{self.name}' is incompatible with the layer: "
                             f"expected ndim=2 or 4, found ndim={x.ndim}. Full shape received: "
                             f"{tuple(x.shape)}")
        self._check_input(x, axis=1, size=self.num_features)
        if training:
            values_per_channel = math.prod(x.shape) // self.num_features
            if values_per_channel <= 1:
                raise ValueError(f"Layer '{self.name}' got one value per channel in training mode "
                                 f"(input shape {tuple(x.shape)}): batch statistics need more than one "
                                 f"value per channel. Use a batch larger than 1 or call the layer in "
                                 f"eval mode (training=False).")
        out = _functional().batch_norm(
            x, self.moving_mean.data, self.moving_variance.data, self.gamma, self.beta,
            training=training, momentum=self.momentum, eps=self.epsilon)
        if training:
            self.moving_mean._bump_version()
            self.moving_variance._bump_version()
        return out

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def count_flops(self, input_shape):
        """Four operations per element: subtract the mean, multiply by 1/std, scale, shift."""
        return 4 * int(np.prod([1 if s is None else s for s in input_shape]))

    def get_config(self):
        return {**super().get_config(), "axis": self.axis, "momentum": self.momentum,
                "epsilon": self.epsilon, "center": self.center, "scale": self.scale,
                "gamma_initializer": initializers.serialize(self.gamma_initializer),
                "beta_initializer": initializers.serialize(self.beta_initializer),
                "moving_mean_initializer": initializers.serialize(self.moving_mean_initializer),
                "moving_variance_initializer": initializers.serialize(self.moving_variance_initializer)}

    def extra_repr(self):
        parts = [str(self.num_features)] if self.built else []
        parts += [f"momentum={self.momentum}", f"epsilon={self.epsilon}"]
        if not self.center:
            parts.append("center=False")
        if not self.scale:
            parts.append("scale=False")
        return ", ".join(parts)
