"""Pooling layers over NCHW images: MaxPooling2D, AveragePooling2D, GlobalAveragePooling2D.

The math is in ``minnet.functional`` (``max_pool2d``, ``avg_pool2d``, ``global_avg_pool2d``);
see docs/layers.md for forward/backward formulas.
"""

from minnet.layers.base import Layer
from minnet.layers.convolutional import _out_size, _pad_or_none, _pair, _padding, _padding_config
from minnet._utils import functional as _functional

__all__ = ["MaxPooling2D", "AveragePooling2D", "GlobalAveragePooling2D"]


class _Pooling2D(Layer):
    """Shared arguments and shape logic of max and average pooling."""

    _op = None  # name of the functional op

    def __init__(self, pool_size=2, strides=None, padding="valid", name=None, dtype="float32",
                 trainable=True):
        super().__init__(name=name, dtype=dtype, trainable=trainable)
        self.pool_size = _pair(pool_size, "pool_size")
        self.strides = self.pool_size if strides is None else _pair(strides, "strides")
        self.padding = _padding(padding)
        if isinstance(self.padding, tuple) and any(p * 2 > k for p, k in zip(self.padding, self.pool_size)):
            raise ValueError(f"Invalid value for argument `padding`: expected at most half the pool "
                             f"size {self.pool_size} on each side. Received: padding={self.padding}")

    def _check(self, x):
        self._check_input(x, ndim=4)
        if self.padding != "same":
            pads = (0, 0) if self.padding == "valid" else self.padding
            if any(s + 2 * p < k for s, p, k in zip(x.shape[2:], pads, self.pool_size)):
                raise ValueError(f"Input 0 of layer '{self.name}' is too small: spatial size "
                                 f"{tuple(x.shape[2:])} with padding {self.padding} is smaller than "
                                 f"pool_size {self.pool_size}.")

    def call(self, x, training=False):
        self._check(x)
        op = getattr(_functional(), self._op)
        return op(x, self.pool_size, strides=self.strides, padding=self.padding)

    def compute_output_shape(self, input_shape):
        n, c, h, w = tuple(input_shape)
        pads = _pad_or_none(self.padding)
        out = [_out_size(size, k, s, 1, p) for size, k, s, p in zip((h, w), self.pool_size, self.strides, pads)]
        return (n, c, out[0], out[1])

    def count_flops(self, input_shape):
        """One operation (compare or add) per window element per output: ``N*C*H_out*W_out*ph*pw``."""
        n, c, oh, ow = self.compute_output_shape(input_shape)
        return (1 if n is None else n) * c * oh * ow * self.pool_size[0] * self.pool_size[1]

    def get_config(self):
        return {**super().get_config(), "pool_size": list(self.pool_size),
                "strides": list(self.strides), "padding": _padding_config(self.padding)}

    def extra_repr(self):
        parts = [f"pool_size={self.pool_size}"]
        if self.strides != self.pool_size:
            parts.append(f"strides={self.strides}")
        if self.padding != "valid":
            parts.append(f"padding={self.padding!r}" if isinstance(self.padding, str) else f"padding={self.padding}")
        return ", ".join(parts)


class MaxPooling2D(_Pooling2D):
    """Max over ``pool_size`` windows of each channel.

    Backward sends each output's gradient to the position of its maximum (the first one
    on ties); the layer keeps only those argmax indices.

    Args:
        pool_size: int or ``(ph, pw)`` (default 2).
        strides: int or pair; None (default) means ``pool_size``.
        padding: ``"valid"`` (default), ``"same"`` (output ``ceil(H/stride)``) or an int / pair
            of implicit -inf padding per side (at most half the window, as PyTorch).

    Shape:
        - Input: ``(N, C, H, W)``.
        - Output: ``(N, C, H_out, W_out)``, ``H_out = floor((H + 2*p - ph) / sh) + 1``.

    Example:
        >>> layers.MaxPooling2D(2)(np.zeros((1, 3, 8, 8))).shape
        (1, 3, 4, 4)
    """

    _op = "max_pool2d"


class AveragePooling2D(_Pooling2D):
    """Mean over ``pool_size`` windows of each channel.

    With int padding the padded zeros count in the mean (PyTorch's
    ``count_include_pad=True``); with ``"same"`` they do not (Keras).

    Args:
        pool_size: int or ``(ph, pw)`` (default 2).
        strides: int or pair; None (default) means ``pool_size``.
        padding: ``"valid"`` (default), ``"same"`` or an int / pair of zeros per side.

    Shape:
        - Input: ``(N, C, H, W)``.
        - Output: ``(N, C, H_out, W_out)``, ``H_out = floor((H + 2*p - ph) / sh) + 1``.

    Example:
        >>> layers.AveragePooling2D(2)(np.ones((1, 3, 8, 8))).shape
        (1, 3, 4, 4)
    """

    _op = "avg_pool2d"

    def count_flops(self, input_shape):
        """Window sums plus one division per output."""
        n, c, oh, ow = self.compute_output_shape(input_shape)
        return super().count_flops(input_shape) + (1 if n is None else n) * c * oh * ow


class GlobalAveragePooling2D(Layer):
    """Mean over the spatial axes of each channel: ``(N, C, H, W) -> (N, C)``.

    Shape:
        - Input: ``(N, C, H, W)``.  Output: ``(N, C)``.

    Example:
        >>> layers.GlobalAveragePooling2D()(np.ones((2, 3, 5, 5))).shape
        (2, 3)
    """

    def call(self, x, training=False):
        self._check_input(x, ndim=4)
        return _functional().global_avg_pool2d(x)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)[:2]

    def count_flops(self, input_shape):
        """``N*C*H*W`` additions plus ``N*C`` divisions."""
        n, c, h, w = (1 if s is None else s for s in input_shape)
        return n * c * h * w + n * c
