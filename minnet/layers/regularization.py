"""Dropout layers: Dropout, AlphaDropout, SpatialDropout2D.

Active only in training (``training=True`` or after ``layer.train()``); the identity in
eval mode and when ``rate == 0``.  The masks come from ``minnet.functional`` (a
counter-based RNG keyed by ``mn.manual_seed``, so results do not depend on the thread
count); the op keeps its 1-byte mask for backward.
"""
import numbers

import numpy as np

from minnet import functional as F
from minnet.autograd import Tensor
from minnet.layers.base import Layer
from minnet.layers._layout import check_user_layout, resolve_data_format

__all__ = ["Dropout", "AlphaDropout", "SpatialDropout2D"]


class _BaseDropout(Layer):
    _op = None

    def __init__(self, rate, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        if isinstance(rate, bool) or not isinstance(rate, numbers.Real) or not 0.0 <= rate < 1.0:
            raise ValueError(f"Invalid value for argument `rate`: expected a float in [0, 1). "
                             f"Received: rate={rate!r}")
        self.rate = float(rate)

    def _apply(self, x):
        raise NotImplementedError

    def call(self, x, training=False):
        if not training or self.rate == 0.0:
            self._check_call_input(x)       # the op is not called: the layer checks its contract
            return x
        with self._explaining_refusal(x):   # the functional op validates
            return self._apply(x)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        return {**super().get_config(), "rate": self.rate}

    def extra_repr(self):
        return f"rate={self.rate}"


class Dropout(_BaseDropout):
    """Zero each element with probability ``rate`` and scale the rest by ``1/(1-rate)``.

    ``y = x * m / (1 - rate)`` with ``m ~ Bernoulli(1 - rate)`` per element; backward is
    ``dx = dy * m / (1 - rate)`` (the mask is kept as uint8).  Identity in eval mode.

    Args:
        rate: float in [0, 1): the probability of dropping an element.

    Shape:
        - Input: any.  Output: the same.

    Example:
        >>> drop = layers.Dropout(0.5)
        >>> y = drop(np.ones((2, 4)), training=True)   # entries 0.0 or 2.0
    """

    supports_masking = True   # passes a (batch, timesteps) mask on (Keras)

    def _apply(self, x):
        return F.dropout(x, self.rate, training=True)


class AlphaDropout(_BaseDropout):
    """Dropout for SELU networks: keeps the mean and variance of its input.

    Dropped elements are set to SELU's negative saturation ``-scale*alpha`` and the result
    is transformed by ``a * y + b`` so that zero-mean unit-variance inputs stay so.

    Args:
        rate: float in [0, 1).

    Shape:
        - Input: any.  Output: the same.

    Example:
        >>> y = layers.AlphaDropout(0.1)(np.random.randn(4, 8), training=True)
    """

    def _apply(self, x):
        return F.alpha_dropout(x, self.rate, training=True)


class SpatialDropout2D(_BaseDropout):
    """Drop whole channels of images (one Bernoulli draw per ``(n, c)``), as Keras's.

    Neighbouring pixels are strongly correlated, so element-wise dropout barely
    regularises conv features; dropping entire feature maps does.  The mask is drawn per
    (sample, channel) in both layouts, so a seed drops the same channels either way.

    Args:
        rate: float in [0, 1).
        data_format: ``"channels_last"`` (N, H, W, C), ``"channels_first"`` (N, C, H, W) or
            None (default: ``mn.config.image_data_format()``, read at construction).

    Shape:
        - Input: ``(N, H, W, C)`` (channels_last) or ``(N, C, H, W)``.  Output: the same.

    Example:
        >>> y = layers.SpatialDropout2D(0.5)(np.ones((2, 4, 4, 8)), training=True)
    """

    def __init__(self, rate, data_format=None, name=None, **kwargs):
        super().__init__(rate, name=name, **kwargs)
        self.data_format, self._data_format_explicit = resolve_data_format(data_format)

    def __call__(self, x, *args, **kwargs):
        # The user's own array (not a Tensor from a previous layer): check its layout.
        if not isinstance(x, Tensor):
            check_user_layout(self, np.shape(x))
        return super().__call__(x, *args, **kwargs)

    def _check_call_input(self, x):
        self._check_input(x, ndim=4)

    def _apply(self, x):
        return F.spatial_dropout2d(x, self.rate, training=True, data_format=self.data_format)

    def get_config(self):
        return {**super().get_config(), "data_format": self.data_format}

    def extra_repr(self):
        return f"rate={self.rate}, data_format={self.data_format!r}"
