"""Conv2D: a 2-D convolution over NCHW images (PyTorch's ``Conv2d`` layout and numerics).

The math is ``minnet.functional.conv2d`` (im2col + GEMM kernels in ``minnet._ext``);
see docs/layers.md and docs/math/ for the forward and backward formulas.
"""
import math

import numpy as np

from minnet import activations, initializers
from minnet.layers.base import Layer
from minnet._utils import functional as _functional

__all__ = ["Conv2D"]


def _pair(value, arg, minimum=1):
    """``3 -> (3, 3)``, ``(3, 2) -> (3, 2)``; every entry an int >= minimum, else ValueError naming ``arg``."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        value = (int(value), int(value))
    if (not isinstance(value, (tuple, list)) or len(value) != 2 or not all(
            isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v >= minimum for v in value)):
        what = "a positive int" if minimum == 1 else f"an int >= {minimum}"
        raise ValueError(f"Invalid value for argument `{arg}`: expected {what} or a pair of them. "
                         f"Received: {arg}={value!r}")
    return (int(value[0]), int(value[1]))


def _padding(value):
    """``"valid"``/``"same"`` (any case) or a non-negative int / pair of them."""
    if isinstance(value, str):
        key = value.lower()
        if key not in ("valid", "same"):
            raise ValueError(f"Invalid value for argument `padding`: expected 'valid', 'same', a "
                             f"non-negative int or a pair of them. Received: padding={value!r}")
        return key
    try:
        return _pair(value, "padding", minimum=0)
    except ValueError:
        raise ValueError(f"Invalid value for argument `padding`: expected 'valid', 'same', a "
                         f"non-negative int or a pair of them. Received: padding={value!r}") from None


def _out_size(size, kernel, stride, dilation, padding):
    """Output length along one axis; ``padding`` is 'valid', 'same' or the per-side int pad."""
    if size is None:
        return None
    effective = dilation * (kernel - 1) + 1
    if padding == "same":
        return -(-size // stride)  # ceil(size / stride), as Keras/TensorFlow
    pad = 0 if padding == "valid" else padding
    return (size + 2 * pad - effective) // stride + 1


def _same_padding(spatial, kernel_size, strides, dilation):
    """Keras/TensorFlow "same": output ceil(size / stride), the odd pixel of padding at the end.

    Returns ``((top, bottom), (left, right))``; for stride 1 this equals PyTorch's "same".
    """
    pads = []
    for size, k, s, d in zip(spatial, kernel_size, strides, dilation):
        out = -(-size // s)
        total = max((out - 1) * s + d * (k - 1) + 1 - size, 0)
        pads.append((total // 2, total - total // 2))
    return tuple(pads)


def _pad_or_none(padding):
    """Per-axis padding for ``_out_size``: ``("same", "same")``, ``("valid", "valid")`` or ``(ph, pw)``."""
    return (padding, padding) if isinstance(padding, str) else padding


def _padding_config(padding):
    return list(padding) if isinstance(padding, tuple) else padding


class Conv2D(Layer):
    """2-D convolution (cross-correlation) over NCHW images.

    ``y[n, f] = bias[f] + sum_c kernel[f, c] * x[n, c]`` (a 2-D cross-correlation per
    channel pair), with ``strides``, zero ``padding`` and ``dilation_rate``; then
    ``activation``.  The weights use PyTorch's ``Conv2d`` layout: ``kernel`` is
    ``(filters, in_channels, kh, kw)`` and ``bias`` is ``(filters,)``.  By default both
    are U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with ``fan_in = in_channels*kh*kw`` (PyTorch).

    Args:
        filters: number of output channels (positive int).
        kernel_size: int or ``(kh, kw)``.
        strides: int or ``(sh, sw)`` (default 1).
        padding: ``"valid"`` (none, default), ``"same"`` (output size ceil(input / stride);
            when the padding is odd the extra row/column of zeros goes at the bottom/right, as
            Keras; at stride 1 this is PyTorch's "same"), or an int / ``(ph, pw)`` of zeros
            added on each side.
        dilation_rate: int or ``(dh, dw)`` (default 1).
        use_bias: add ``bias`` (default True).
        activation: name, callable or None.
        kernel_initializer, bias_initializer: None (PyTorch default) or a
            name/Initializer/callable (fans: ``in_channels*kh*kw`` / ``filters*kh*kw``).
        name, dtype, trainable: as for every layer.

    Shape:
        - Input: ``(N, C, H, W)``.
        - Output: ``(N, filters, H_out, W_out)`` with
          ``H_out = floor((H + 2*ph - dh*(kh-1) - 1) / sh) + 1`` (int padding; 0 for "valid").

    Example:
        >>> conv = layers.Conv2D(8, 3, padding="same")
        >>> conv(np.zeros((2, 1, 28, 28))).shape
        (2, 8, 28, 28)
    """

    def __init__(self, filters, kernel_size, strides=1, padding="valid", dilation_rate=1,
                 use_bias=True, activation=None, kernel_initializer=None, bias_initializer=None,
                 name=None, dtype="float32", trainable=True):
        super().__init__(name=name, dtype=dtype, trainable=trainable)
        if isinstance(filters, bool) or not isinstance(filters, (int, np.integer)) or filters <= 0:
            raise ValueError(f"Invalid value for argument `filters`: expected a positive int. "
                             f"Received: filters={filters!r}")
        self.filters = int(filters)
        self.kernel_size = _pair(kernel_size, "kernel_size")
        self.strides = _pair(strides, "strides")
        self.padding = _padding(padding)
        self.dilation_rate = _pair(dilation_rate, "dilation_rate")
        self.use_bias = bool(use_bias)
        self.activation = activations.get(activation)
        self.kernel_initializer = None if kernel_initializer is None else initializers.get(kernel_initializer)
        self.bias_initializer = None if bias_initializer is None else initializers.get(bias_initializer)
        self.kernel = None
        self.bias = None

    def build(self, input_shape):
        input_shape = tuple(input_shape)
        if len(input_shape) != 4 or input_shape[1] is None:
            raise ValueError(f"Layer '{self.name}' expects NCHW input (batch, channels, height, "
                             f"width) with a known number of channels. Received input_shape="
                             f"{input_shape}")
        in_channels = int(input_shape[1])
        self.in_channels = in_channels
        kh, kw = self.kernel_size
        fan_in = in_channels * kh * kw
        kernel_init = self.kernel_initializer or initializers.KaimingUniform(a=math.sqrt(5.0))
        self.kernel = self.add_weight("kernel", (self.filters, in_channels, kh, kw), initializer=kernel_init)
        if self.use_bias:
            bias_init = self.bias_initializer or initializers.FanInUniform(fan_in)
            self.bias = self.add_weight("bias", (self.filters,), initializer=bias_init)
        super().build(input_shape)

    def _check_spatial(self, shape):
        for axis, (size, k, d, p) in enumerate(zip(shape[2:], self.kernel_size, self.dilation_rate,
                                                   (0, 0) if self.padding in ("valid", "same") else self.padding)):
            if size is None or self.padding == "same":
                continue
            if size + 2 * p < d * (k - 1) + 1:
                raise ValueError(
                    f"Input 0 of layer '{self.name}' is too small: spatial size {tuple(shape[2:])} "
                    f"with padding {self.padding} is smaller than the dilated kernel "
                    f"{tuple(d_ * (k_ - 1) + 1 for k_, d_ in zip(self.kernel_size, self.dilation_rate))}.")

    def call(self, x, training=False):
        self._check_input(x, ndim=4, axis=1, size=self.in_channels)
        self._check_spatial(tuple(x.shape))
        F = _functional()
        padding = self.padding
        if padding == "same" and self.strides != (1, 1):
            padding = _same_padding(tuple(x.shape[2:]), self.kernel_size, self.strides, self.dilation_rate)
        y = F.conv2d(x, self.kernel, self.bias, stride=self.strides, padding=padding,
                     dilation=self.dilation_rate)
        return self.activation(y)

    def compute_output_shape(self, input_shape):
        n, _, h, w = tuple(input_shape)
        pads = _pad_or_none(self.padding)
        out = [_out_size(size, k, s, d, p) for size, k, s, d, p in
               zip((h, w), self.kernel_size, self.strides, self.dilation_rate, pads)]
        return (n, self.filters, out[0], out[1])

    def count_flops(self, input_shape):
        """``2 * N * filters * H_out * W_out * in_channels * kh * kw`` (+ one add per output for the bias)."""
        n, c, _, _ = tuple(input_shape)
        _, f, oh, ow = self.compute_output_shape(input_shape)
        n = 1 if n is None else n
        outputs = n * f * oh * ow
        return 2 * outputs * c * self.kernel_size[0] * self.kernel_size[1] + (outputs if self.use_bias else 0)

    def get_config(self):
        return {**super().get_config(), "filters": self.filters,
                "kernel_size": list(self.kernel_size), "strides": list(self.strides),
                "padding": _padding_config(self.padding), "dilation_rate": list(self.dilation_rate),
                "use_bias": self.use_bias, "activation": activations.serialize(self.activation),
                "kernel_initializer": initializers.serialize(self.kernel_initializer),
                "bias_initializer": initializers.serialize(self.bias_initializer)}

    def extra_repr(self):
        parts = []
        if self.built:
            parts.append(f"{self.in_channels}")
        parts += [f"{self.filters}", f"kernel_size={self.kernel_size}"]
        if self.strides != (1, 1):
            parts.append(f"strides={self.strides}")
        if self.padding != "valid":
            parts.append(f"padding={self.padding!r}" if isinstance(self.padding, str) else f"padding={self.padding}")
        if self.dilation_rate != (1, 1):
            parts.append(f"dilation_rate={self.dilation_rate}")
        if not self.use_bias:
            parts.append("use_bias=False")
        act = activations.serialize(self.activation)
        if act != "linear":
            parts.append(f"activation={act}")
        return ", ".join(parts)
