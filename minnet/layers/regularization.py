"""Dropout layers: Dropout, AlphaDropout, SpatialDropout2D.

Active only in training (``training=True`` or after ``layer.train()``); the identity in
eval mode and when ``rate == 0``.  The masks come from ``minnet.functional`` (a
counter-based RNG keyed by ``mn.manual_seed``, so results do not depend on the thread
count); the op keeps its 1-byte mask for backward.  As in Keras, ``seed=`` gives a layer its
own mask stream (``_random.DropoutStream``: the same masks whatever ``mn.manual_seed`` says,
two layers with one seed drop alike) and ``noise_shape=`` draws one mask of that shape,
broadcast over the input (a 1 in it shares a draw along that axis).
"""
import numbers

import numpy as np

from minnet import _random
from minnet import functional as F
from minnet._checks import invalid
from minnet.autograd import Tensor
from minnet.layers.base import Layer
from minnet.layers._layout import check_user_layout, resolve_data_format

__all__ = ["Dropout", "AlphaDropout", "SpatialDropout2D"]


def check_noise_shape(noise_shape):
    """Keras's ``noise_shape``: None, or a tuple of positive ints and Nones (None: the
    input's size on that axis)."""
    if noise_shape is None:
        return None
    expected = "a tuple of positive ints or None (one per input axis)"
    if isinstance(noise_shape, (str, bytes)) or not hasattr(noise_shape, "__iter__"):
        raise invalid("noise_shape", expected, noise_shape)
    shape = tuple(noise_shape)
    for dim in shape:
        if dim is not None and (isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or dim <= 0):
            raise invalid("noise_shape", expected, noise_shape)
    return tuple(None if d is None else int(d) for d in shape)


def _mask_shape(noise_shape, x_shape):
    """``noise_shape`` with its Nones filled from the input, checked to broadcast over it."""
    if len(noise_shape) != len(x_shape):
        raise ValueError(f"Invalid value for argument `noise_shape`: expected {len(x_shape)} entries, "
                         f"one per axis of the input of shape {tuple(x_shape)}. "
                         f"Received: noise_shape={noise_shape}")
    shape = tuple(n if d is None else d for d, n in zip(noise_shape, x_shape))
    if any(d not in (1, n) for d, n in zip(shape, x_shape)):
        raise ValueError(f"Invalid value for argument `noise_shape`: expected each entry to be 1, None "
                         f"or the input's size on that axis (input shape {tuple(x_shape)}). "
                         f"Received: noise_shape={noise_shape}")
    return shape


class _BaseDropout(Layer):
    _op = None

    def __init__(self, rate, noise_shape=None, seed=None, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        if isinstance(rate, bool) or not isinstance(rate, numbers.Real) or not 0.0 <= rate < 1.0:
            raise ValueError(f"Invalid value for argument `rate`: expected a float in [0, 1). "
                             f"Received: rate={rate!r}")
        self.rate = float(rate)
        self.noise_shape = check_noise_shape(noise_shape)
        self._stream = _random.stream_for(seed)     # None without a seed (the global stream)
        self.seed = None if seed is None else int(seed)

    def _apply(self, x):
        raise NotImplementedError

    def call(self, x, training=False):
        if not training or self.rate == 0.0:
            self._check_call_input(x)       # the op is not called: the layer checks its contract
            return x
        with self._explaining_refusal(x), _random.drawing_from(self._stream):
            return self._apply(x)               # the functional op validates

    def _kept(self, x):
        """1 where ``noise_shape``'s mask keeps, 0 where it drops: a ``(noise_shape)`` array
        drawn by the dropout kernel (the same stream and seed as the element-wise masks)."""
        shape = _mask_shape(self.noise_shape, x.shape)
        drawn = F.dropout(Tensor(np.ones(shape, dtype=x.dtype)), self.rate).numpy()
        return (drawn != 0).astype(x.dtype)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        return {**super().get_config(), "rate": self.rate, "noise_shape": self.noise_shape,
                "seed": self.seed}

    def extra_repr(self):
        return f"rate={self.rate}"


class Dropout(_BaseDropout):
    """Zero each element with probability ``rate`` and scale the rest by ``1/(1-rate)``.

    ``y = x * m / (1 - rate)`` with ``m ~ Bernoulli(1 - rate)`` per element; backward is
    ``dx = dy * m / (1 - rate)`` (the mask is kept as uint8).  Identity in eval mode.

    Args:
        rate: float in [0, 1): the probability of dropping an element.
        noise_shape: optional tuple, one entry per input axis (an int, or None for the
            input's size): one mask of that shape is drawn and broadcast, so
            ``(batch, 1, features)`` drops the same features at every timestep.
        seed: optional int >= 0: the layer's own mask stream (Keras's), unaffected by
            ``mn.manual_seed``.

    Shape:
        - Input: any.  Output: the same.

    Example:
        >>> drop = layers.Dropout(0.5)
        >>> y = drop(np.ones((2, 4)), training=True)   # entries 0.0 or 2.0
    """

    supports_masking = True   # passes a (batch, timesteps) mask on (Keras)

    def _apply(self, x):
        if self.noise_shape is None:
            return F.dropout(x, self.rate, training=True)
        return x * Tensor(self._kept(x) * x.dtype.type(1.0 / (1.0 - self.rate)))


class AlphaDropout(_BaseDropout):
    """Dropout for SELU networks: keeps the mean and variance of its input.

    Dropped elements are set to SELU's negative saturation ``-scale*alpha`` and the result
    is transformed by ``a * y + b`` so that zero-mean unit-variance inputs stay so.

    Args:
        rate: float in [0, 1).
        noise_shape: optional tuple (as ``Dropout``'s): one mask of that shape, broadcast.
        seed: optional int >= 0: the layer's own mask stream (as ``Dropout``'s).

    Shape:
        - Input: any.  Output: the same.

    Example:
        >>> y = layers.AlphaDropout(0.1)(np.random.randn(4, 8), training=True)
    """

    def _apply(self, x):
        if self.noise_shape is None:
            return F.alpha_dropout(x, self.rate, training=True)
        # a * (x * kept + alpha' * (1 - kept)) + b, as F.alpha_dropout's kernel per element
        alpha_p = -F.SELU_SCALE * F.SELU_ALPHA
        a = ((1.0 - self.rate) * (1.0 + self.rate * alpha_p ** 2)) ** -0.5
        b = -a * alpha_p * self.rate
        kept = self._kept(x)
        one = x.dtype.type
        return x * Tensor(kept * one(a)) + Tensor((1 - kept) * one(a * alpha_p) + one(b))


class SpatialDropout2D(_BaseDropout):
    """Drop whole channels of images (one Bernoulli draw per ``(n, c)``), as Keras's.

    Neighbouring pixels are strongly correlated, so element-wise dropout barely
    regularises conv features; dropping entire feature maps does.  The mask is drawn per
    (sample, channel) in both layouts, so a seed drops the same channels either way.

    Args:
        rate: float in [0, 1).
        data_format: ``"channels_last"`` (N, H, W, C), ``"channels_first"`` (N, C, H, W) or
            None (default: ``mn.config.image_data_format()``, read at construction).
        seed: optional int >= 0: the layer's own mask stream (as ``Dropout``'s).

    Shape:
        - Input: ``(N, H, W, C)`` (channels_last) or ``(N, C, H, W)``.  Output: the same.

    Example:
        >>> y = layers.SpatialDropout2D(0.5)(np.ones((2, 4, 4, 8)), training=True)
    """

    def __init__(self, rate, data_format=None, seed=None, name=None, **kwargs):
        super().__init__(rate, seed=seed, name=name, **kwargs)
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
        config = {**super().get_config(), "data_format": self.data_format}
        config.pop("noise_shape")           # Keras's SpatialDropout2D has none
        return config

    def extra_repr(self):
        return f"rate={self.rate}, data_format={self.data_format!r}"
