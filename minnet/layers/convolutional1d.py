"""1-D convolution and pooling over sequences: Conv1D, MaxPooling1D, AveragePooling1D,
GlobalMaxPooling1D, GlobalAveragePooling1D.

Keras 3's arguments and default layout: ``data_format=None`` means
``mn.config.image_data_format()``, ``"channels_last"`` = ``(batch, steps, channels)``,
``"channels_first"`` = ``(batch, channels, steps)``. The weights are PyTorch's ``Conv1d``
layout whatever the data layout: ``kernel`` (filters, in_channels, kernel_size).

The math is the 2-D kernels' on a height-1 image: a sequence ``(N, C, L)`` is viewed as
``(N, C, 1, L)`` and goes through ``functional.conv2d`` (im2col + GEMM) or
``max_pool2d`` / ``avg_pool2d``; docs/math/convolution.md and pooling.md hold the formulas.
"""

import numpy as np

from minnet import activations, config, initializers
from minnet import functional as F
from minnet._checks import (check_choice, check_int, check_int_tuple,
                            check_padding, invalid)
from minnet.layers.base import Layer

__all__ = ["Conv1D", "MaxPooling1D", "AveragePooling1D", "GlobalMaxPooling1D",
           "GlobalAveragePooling1D"]


def _one(name, value, minimum=1):
    return check_int_tuple(name, value, 1, minimum=minimum)[0]


def to_ncl(x, channels_last):
    """(N, L, C) -> (N, C, 1, L) (or (N, C, L) -> (N, C, 1, L))."""
    n = x.shape[0]
    if channels_last:
        x = x.transpose(0, 2, 1)
    return x.reshape(n, x.shape[1], 1, x.shape[2])


def from_ncl(y, channels_last):
    """(N, C, 1, L) -> (N, L, C) (or (N, C, L))."""
    y = y.reshape(y.shape[0], y.shape[1], y.shape[3])
    return y.transpose(0, 2, 1) if channels_last else y


def conv1d_padding(padding, length, kernel, stride, dilation):
    """(left, right) zero padding for Keras's "valid" / "same" / "causal" or an int."""
    effective = dilation * (kernel - 1) + 1
    if padding == "valid":
        return 0, 0
    if padding == "causal":
        return effective - 1, 0
    if padding == "same":
        out = -(-length // stride)
        total = max((out - 1) * stride + effective - length, 0)
        return total // 2, total - total // 2
    return padding[0], padding[0]


class Conv1D(Layer):
    """1-D convolution (cross-correlation) over sequences, Keras 3's ``Conv1D``.

    ``y[n, t, f] = bias[f] + sum_{c, k} kernel[f, c, k] * x_padded[n, t*stride + k*dilation, c]``.

    Args:
        filters: number of output channels.
        kernel_size: int (or a 1-tuple).
        strides: int >= 1.
        padding: ``"valid"`` (none), ``"same"`` (output length ``ceil(L / strides)``, the
            odd padding on the right, as Keras), ``"causal"`` (``dilation*(k-1)`` zeros on
            the left only: step t sees no later step) or an int (both sides).
        data_format: None (``mn.config.image_data_format()``), ``"channels_last"``
            ``(N, L, C)`` or ``"channels_first"`` ``(N, C, L)``.
        dilation_rate: int >= 1.
        groups: split the channels into ``groups`` independent convolutions (``C`` and
            ``filters`` divisible by it), as Keras and PyTorch's ``Conv1d(groups=)``.
        activation: name, callable or None.
        use_bias: add ``bias`` (filters,).
        kernel_initializer, bias_initializer: Keras's defaults glorot_uniform and zeros.

    Shape:
        - Input: ``(N, L, C)`` (channels_last). Output: ``(N, L_out, filters)``.
        - ``kernel``: ``(filters, C // groups, kernel_size)`` (PyTorch's ``Conv1d`` layout).

    Example:
        >>> layer = layers.Conv1D(8, 3, padding="causal", data_format="channels_last")
        >>> layer(np.zeros((2, 10, 4), np.float32)).shape
        (2, 10, 8)
    """

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None,
                 dilation_rate=1, groups=1, activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros", name=None,
                 dtype="float32", trainable=True, **kwargs):
        super().__init__(name=name, dtype=dtype, trainable=trainable, **kwargs)
        self.filters = check_int("filters", filters, minimum=1)
        self.kernel_size = _one("kernel_size", kernel_size)
        self.strides = _one("strides", strides)
        self.padding = check_padding("padding", padding, 1, allow_causal=True)
        self.data_format = config.normalize_data_format(data_format)
        self.dilation_rate = _one("dilation_rate", dilation_rate)
        self.groups = check_int("groups", groups, minimum=1)
        if self.filters % self.groups:
            raise invalid("groups", f"a divisor of filters={self.filters}", groups)
        if self.strides > 1 and self.dilation_rate > 1:
            raise invalid("dilation_rate", "1 when strides > 1 (as Keras)", dilation_rate)
        self.activation = activations.get(activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel = None
        self.bias = None

    @property
    def _channels_last(self):
        return self.data_format == "channels_last"

    def build(self, input_shape):
        input_shape = tuple(input_shape)
        axis = -1 if self._channels_last else 1
        if len(input_shape) != 3 or not input_shape[axis]:
            raise ValueError(f"Layer '{self.name}' expects inputs of shape "
                             f"{'(batch, steps, channels)' if self._channels_last else '(batch, channels, steps)'}"
                             f" with a known, non-zero number of channels. Received input_shape={input_shape}")
        self.in_channels = int(input_shape[axis])
        if self.in_channels % self.groups:
            raise ValueError(f"Layer '{self.name}': the number of input channels "
                             f"({self.in_channels}) must be divisible by groups={self.groups}. "
                             f"Received input_shape={input_shape}")
        self.kernel = self.add_weight("kernel", (self.filters, self.in_channels // self.groups,
                                                 self.kernel_size),
                                      initializer=self.kernel_initializer)
        if self.use_bias:
            self.bias = self.add_weight("bias", (self.filters,), initializer=self.bias_initializer)
        super().build(input_shape)

    def call(self, x, training=False):
        if x.ndim != 3:
            self._check_input(x, ndim=3)
        left, right = self._steps_padding(x)
        weight = self.kernel.reshape(self.filters, self.in_channels // self.groups, 1,
                                     self.kernel_size)
        with self._explaining_refusal(x):   # the functional op validates
            y = F.conv2d(to_ncl(x, self._channels_last), weight, self.bias,
                         stride=(1, self.strides), padding=((0, 0), (left, right)),
                         dilation=(1, self.dilation_rate), groups=self.groups)
        return self.activation(from_ncl(y, self._channels_last))

    def _steps_padding(self, x):
        """(left, right) zeros on the step axis of ``x``."""
        return conv1d_padding(self.padding, x.shape[1 if self._channels_last else 2],
                              self.kernel_size, self.strides, self.dilation_rate)

    def _check_call_input(self, x):
        """The channels, then whether the (dilated) kernel spans more steps than the padded
        input has, in the layer's words."""
        self._check_input(x, ndim=3, axis=2 if self._channels_last else 1, size=self.in_channels)
        length = x.shape[1 if self._channels_last else 2]
        left, right = self._steps_padding(x)
        if length + left + right < self.dilation_rate * (self.kernel_size - 1) + 1:
            raise ValueError(f"Layer '{self.name}': the input has {length} steps, fewer than the "
                             f"kernel spans ({self.dilation_rate * (self.kernel_size - 1) + 1}) "
                             f"with padding={self.padding!r}. Received input shape "
                             f"{tuple(x.shape)}")

    def compute_output_shape(self, input_shape):
        n, a, b = tuple(input_shape)
        length = a if self._channels_last else b
        if length is not None:
            left, right = conv1d_padding(self.padding, length, self.kernel_size, self.strides,
                                        self.dilation_rate)
            effective = self.dilation_rate * (self.kernel_size - 1) + 1
            length = (length + left + right - effective) // self.strides + 1
        return (n, length, self.filters) if self._channels_last else (n, self.filters, length)

    def get_config(self):
        return {**super().get_config(), "filters": self.filters,
                "kernel_size": self.kernel_size, "strides": self.strides,
                "padding": self.padding if isinstance(self.padding, str) else self.padding[0],
                "data_format": self.data_format, "dilation_rate": self.dilation_rate,
                "groups": self.groups,
                "activation": activations.serialize(self.activation), "use_bias": self.use_bias,
                "kernel_initializer": initializers.serialize(self.kernel_initializer),
                "bias_initializer": initializers.serialize(self.bias_initializer)}

    def extra_repr(self):
        return (f"{self.filters}, kernel_size={self.kernel_size}, strides={self.strides}, "
                f"padding={self.padding!r}, data_format={self.data_format!r}")


class _Pooling1D(Layer):
    _op = None

    def __init__(self, pool_size=2, strides=None, padding="valid", data_format=None, name=None,
                 dtype="float32", trainable=True, **kwargs):
        super().__init__(name=name, dtype=dtype, trainable=trainable, **kwargs)
        self.pool_size = _one("pool_size", pool_size)
        self.strides = self.pool_size if strides is None else _one("strides", strides)
        self.padding = check_choice("padding", str(padding).lower(), ("valid", "same"))
        self.data_format = config.normalize_data_format(data_format)

    def call(self, x, training=False):
        if x.ndim != 3:
            self._check_input(x, ndim=3)
        channels_last = self.data_format == "channels_last"
        pool = type(self)._op
        y = pool(to_ncl(x, channels_last), (1, self.pool_size), (1, self.strides), self.padding)
        return from_ncl(y, channels_last)

    def compute_output_shape(self, input_shape):
        n, a, b = tuple(input_shape)
        channels_last = self.data_format == "channels_last"
        length = a if channels_last else b
        if length is not None:
            if self.padding == "same":
                length = -(-length // self.strides)
            else:
                length = (length - self.pool_size) // self.strides + 1
        return (n, length, b) if channels_last else (n, a, length)

    def get_config(self):
        return {**super().get_config(), "pool_size": self.pool_size, "strides": self.strides,
                "padding": self.padding, "data_format": self.data_format}

    def extra_repr(self):
        return f"pool_size={self.pool_size}, strides={self.strides}, padding={self.padding!r}"


class MaxPooling1D(_Pooling1D):
    """Max over windows of ``pool_size`` steps (Keras's ``MaxPooling1D``; ties: first wins).

    Args:
        pool_size: window length (default 2). strides: step (None = pool_size).
        padding: ``"valid"`` or ``"same"`` (output ``ceil(L / strides)``).
        data_format: None (the global setting), ``"channels_last"`` or ``"channels_first"``.

    Shape:
        - Input: ``(N, L, C)`` (channels_last). Output: ``(N, L_out, C)``.

    Example:
        >>> layers.MaxPooling1D(2, data_format="channels_last")(np.zeros((1, 6, 3))).shape
        (1, 3, 3)
    """

    _op = staticmethod(F.max_pool2d)


class AveragePooling1D(_Pooling1D):
    """Mean over windows of ``pool_size`` steps (``"same"`` padding excludes the pad, as Keras).

    Args, Shape: as ``MaxPooling1D``.

    Example:
        >>> layers.AveragePooling1D(3, strides=1, data_format="channels_last")(np.ones((1, 5, 2))).shape
        (1, 3, 2)
    """

    _op = staticmethod(F.avg_pool2d)


class _GlobalPooling1D(Layer):
    def __init__(self, data_format=None, keepdims=False, name=None, dtype="float32",
                 trainable=True, **kwargs):
        super().__init__(name=name, dtype=dtype, trainable=trainable, **kwargs)
        self.data_format = config.normalize_data_format(data_format)
        self.keepdims = bool(keepdims)

    @property
    def _axis(self):
        return 1 if self.data_format == "channels_last" else 2

    def call(self, x, training=False):
        if x.ndim != 3:
            self._check_input(x, ndim=3)
        return self._reduce(x, self._axis)

    def compute_output_shape(self, input_shape):
        shape = list(input_shape)
        if self.keepdims:
            shape[self._axis] = 1
        else:
            del shape[self._axis]
        return tuple(shape)

    def get_config(self):
        return {**super().get_config(), "data_format": self.data_format,
                "keepdims": self.keepdims}


class GlobalAveragePooling1D(_GlobalPooling1D):
    """Mean over the steps: ``(N, L, C) -> (N, C)`` (``keepdims``: ``(N, 1, C)``).

    Example:
        >>> layers.GlobalAveragePooling1D(data_format="channels_last")(np.ones((2, 5, 3))).shape
        (2, 3)
    """

    # Keras: the input's (N, L) mask picks the steps averaged; the output carries no mask.
    supports_masking = True

    def call(self, x, mask=None):
        if x.ndim != 3:
            self._check_input(x, ndim=3)
        if mask is None:
            return self._reduce(x, self._axis)
        steps = np.asarray(getattr(mask, "data", mask))
        if steps.shape != (x.shape[0], x.shape[self._axis]):
            raise ValueError(f"Layer '{self.name}': expected a mask of shape (batch, steps) = "
                             f"{(x.shape[0], x.shape[self._axis])}. Received: mask.shape={steps.shape}")
        weights = steps.astype(x.dtype)[:, :, None] if self._axis == 1 else \
            steps.astype(x.dtype)[:, None, :]
        # sum(x * m) / sum(m) over the steps, as Keras (a row with no step kept gives NaN)
        return (x * weights).sum(axis=self._axis, keepdims=self.keepdims) / \
            weights.sum(axis=self._axis, keepdims=self.keepdims)

    def compute_mask(self, inputs, previous_mask=None):
        return None

    def _reduce(self, x, axis):
        return x.mean(axis=axis, keepdims=self.keepdims)


class GlobalMaxPooling1D(_GlobalPooling1D):
    """Max over the steps: ``(N, L, C) -> (N, C)`` (``keepdims``: ``(N, 1, C)``).

    Example:
        >>> layers.GlobalMaxPooling1D(data_format="channels_last")(np.ones((2, 5, 3))).shape
        (2, 3)
    """

    def _reduce(self, x, axis):
        return x.max(axis=axis, keepdims=self.keepdims)
