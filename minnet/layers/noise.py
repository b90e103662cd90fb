"""Noise layers, active in training only: GaussianNoise and GaussianDropout (Keras's).

The noise comes from minnet's generator (``mn.manual_seed``), or from the layer's own
generator when it is given a ``seed``. In evaluation (``training=False``) both layers return
their input unchanged.
"""
import math

import numpy as np

from minnet import _random
from minnet._checks import check_float, check_int
from minnet.layers.base import Layer

__all__ = ["GaussianNoise", "GaussianDropout"]


class _Noise(Layer):
    def __init__(self, seed, name, dtype, trainable, **kwargs):
        super().__init__(name=name, dtype=dtype, trainable=trainable, **kwargs)
        self.seed = None if seed is None else check_int("seed", seed, 0)
        self._generator = None if seed is None else np.random.default_rng(self.seed)

    def _rng(self):
        return self._generator if self._generator is not None else _random.generator()

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)


class GaussianNoise(_Noise):
    """Add zero-mean Gaussian noise of standard deviation ``stddev`` (training only).

    The gradient passes through unchanged.

    Args:
        stddev: float >= 0.
        seed: optional int for the layer's own generator.

    Example:
        >>> layer = layers.GaussianNoise(0.1)
        >>> layer(np.zeros((2, 3))).numpy().tolist()       # eval: identity
        [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
    """

    def __init__(self, stddev, seed=None, name=None, dtype=None, trainable=True, **kwargs):
        super().__init__(seed, name, dtype, trainable, **kwargs)
        self.stddev = check_float("stddev", stddev, low=0.0)

    def call(self, x, training=False):
        if not training or self.stddev == 0:
            return x
        noise = self._rng().standard_normal(x.shape).astype(self.dtype) * self.dtype.type(self.stddev)
        return x + noise

    def get_config(self):
        return {**super().get_config(), "stddev": self.stddev, "seed": self.seed}

    def extra_repr(self):
        return f"stddev={self.stddev}"


class GaussianDropout(_Noise):
    """Multiply by Gaussian noise of mean 1 and standard deviation ``sqrt(rate / (1 - rate))``
    (training only); the gradient is multiplied by the same noise.

    Args:
        rate: float in [0, 1).
        seed: optional int for the layer's own generator.

    Example:
        >>> layers.GaussianDropout(0.2)(np.ones((1, 3))).numpy().tolist()   # eval: identity
        [[1.0, 1.0, 1.0]]
    """

    def __init__(self, rate, seed=None, name=None, dtype=None, trainable=True, **kwargs):
        super().__init__(seed, name, dtype, trainable, **kwargs)
        self.rate = check_float("rate", rate, low=0.0, high=1.0, high_open=True)

    def call(self, x, training=False):
        if not training or self.rate == 0:
            return x
        stddev = math.sqrt(self.rate / (1.0 - self.rate))
        noise = self._rng().normal(1.0, stddev, size=x.shape).astype(self.dtype)
        return x * noise

    def get_config(self):
        return {**super().get_config(), "rate": self.rate, "seed": self.seed}

    def extra_repr(self):
        return f"rate={self.rate}"
