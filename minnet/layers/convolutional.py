"""Conv2D: a 2-D convolution over images in either layout (Keras 3's arguments and
defaults; PyTorch's ``Conv2d`` weight layout and numerics).

The math is ``minnet.functional.conv2d`` (im2col + GEMM kernels in ``minnet._ext``, native
in both layouts); see docs/layers.md and docs/math/convolution.md.
"""
import numpy as np

from minnet import activations, config, initializers
from minnet import functional as F
from minnet import ops
from minnet._checks import check_int_tuple, check_padding
from minnet.layers.base import Layer

__all__ = ["Conv2D", "set_conv_arguments", "check_output_padding", "same_padding"]


# Kernel sizes, strides, dilations and explicit paddings are bounded by what the kernels'
# 32-bit index arithmetic holds.
_INT_MAX = 2**31 - 1


def _out_size(size, kernel, stride, dilation, padding):
    """Output length along one axis; ``padding`` is 'valid', 'same' or the per-side int pad."""
    if size is None:
        return None
    effective = dilation * (kernel - 1) + 1
    if padding == "same":
        return -(-size // stride)  # ceil(size / stride), as Keras/TensorFlow
    pad = 0 if padding == "valid" else padding
    return (size + 2 * pad - effective) // stride + 1


def same_padding(spatial, kernel_size, strides, dilation):
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


def set_conv_arguments(layer, rank, filters, kernel_size, strides, padding, data_format,
                       dilation_rate, groups, activation, use_bias, kernel_initializer,
                       bias_initializer):
    """Check and set the arguments every N-d convolution layer takes (``rank`` spatial axes):
    Keras's names, each refused by name when invalid."""
    if isinstance(filters, bool) or not isinstance(filters, (int, np.integer)) or filters <= 0:
        raise ValueError(f"Invalid value for argument `filters`: expected a positive int. "
                         f"Received: filters={filters!r}")
    layer.filters = int(filters)
    layer.kernel_size = check_int_tuple("kernel_size", kernel_size, rank, maximum=_INT_MAX,
                                        error=ValueError)
    layer.strides = check_int_tuple("strides", strides, rank, maximum=_INT_MAX, error=ValueError)
    layer.padding = check_padding("padding", padding, rank, maximum=_INT_MAX, error=ValueError)
    layer._data_format_explicit = data_format is not None
    layer.data_format = config.normalize_data_format(data_format)
    layer.dilation_rate = check_int_tuple("dilation_rate", dilation_rate, rank, maximum=_INT_MAX,
                                          error=ValueError)
    if (isinstance(groups, bool) or not isinstance(groups, (int, np.integer)) or groups < 1
            or layer.filters % groups):
        raise ValueError(f"Invalid value for argument `groups`: expected a positive int "
                         f"dividing filters={layer.filters}. Received: groups={groups!r}")
    layer.groups = int(groups)
    layer.use_bias = bool(use_bias)
    layer.activation = activations.get(activation)
    layer.kernel_initializer = initializers.get(kernel_initializer)
    layer.bias_initializer = initializers.get(bias_initializer)
    layer.kernel = None
    layer.bias = None


def check_output_padding(output_padding, strides, dilation_rate, rank):
    """A transposed convolution's ``output_padding`` (None, or ``rank`` ints each smaller
    than its stride or its dilation, as Keras and PyTorch require)."""
    if output_padding is None:
        return None
    value = check_int_tuple("output_padding", output_padding, rank, minimum=0)
    if any(op >= s and op >= d for op, s, d in zip(value, strides, dilation_rate)):
        raise ValueError(f"Invalid value for argument `output_padding`: expected values smaller "
                         f"than the strides {strides}. Received: output_padding={output_padding!r}")
    return value


class Conv2D(Layer):
    """2-D convolution (cross-correlation) over images, ``channels_last`` or ``channels_first``.

    ``y[n, f] = bias[f] + sum_c kernel[f, c] (*) x[n, c]`` (a 2-D cross-correlation per
    channel pair of the filter's group), with ``strides``, zero ``padding`` and
    ``dilation_rate``; then ``activation``.  Keras 3's arguments and defaults; the weights
    keep PyTorch's ``Conv2d`` layout whatever ``data_format``: ``kernel`` is
    ``(filters, in_channels // groups, kh, kw)`` and ``bias`` is ``(filters,)``.  A Keras
    kernel ``(kh, kw, in, filters)`` converts with ``np.transpose(k, (3, 2, 0, 1))``.

    Args:
        filters: number of output channels (positive int).
        kernel_size: int or ``(kh, kw)``.
        strides: int or ``(sh, sw)`` (default 1).
        padding: ``"valid"`` (none, default), ``"same"`` (output size ceil(input / stride);
            an odd total padding puts the extra row/column at the bottom/right, as Keras;
            at stride 1 this is PyTorch's "same"), or an int / ``(ph, pw)`` of zeros added on
            each side (a minnet extension).
        data_format: ``"channels_last"`` (``(N, H, W, C)``), ``"channels_first"``
            (``(N, C, H, W)``) or None: ``mn.config.image_data_format()`` read when the
            layer is created.
        dilation_rate: int or ``(dh, dw)`` (default 1).
        groups: int dividing the input channels and ``filters``: each group of
            ``in_channels // groups`` channels gets its own ``filters // groups`` filters
            (``groups == in_channels``: depthwise).
        activation: name, callable or None.
        use_bias: add ``bias`` (default True).
        kernel_initializer: default ``"glorot_uniform"`` (Keras), fans ``in/groups*kh*kw``
            and ``filters*kh*kw``.
        bias_initializer: default ``"zeros"``.
        **kwargs: ``name``, ``dtype``, ``trainable`` and the other arguments every layer takes.

    Shape:
        - Input: ``(N, H, W, C)`` (channels_last) or ``(N, C, H, W)`` (channels_first).
        - Output: ``(N, H_out, W_out, filters)`` or ``(N, filters, H_out, W_out)`` with
          ``H_out = floor((H + 2*ph - dh*(kh-1) - 1) / sh) + 1`` (int padding; 0 for
          "valid"; ``ceil(H / sh)`` for "same").

    Example:
        >>> conv = layers.Conv2D(8, 3, padding="same", data_format="channels_last")
        >>> conv(np.zeros((2, 28, 28, 1))).shape
        (2, 28, 28, 8)
    """

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", data_format=None,
                 dilation_rate=(1, 1), groups=1, activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros", **kwargs):
        super().__init__(**kwargs)
        set_conv_arguments(self, 2, filters, kernel_size, strides, padding, data_format,
                           dilation_rate, groups, activation, use_bias, kernel_initializer,
                           bias_initializer)

    # ------------------------------------------------------------------ layout helpers
    @property
    def _channels_last(self):
        return self.data_format == "channels_last"

    def _layout_name(self):
        return "(batch, height, width, channels)" if self._channels_last else \
            "(batch, channels, height, width)"

    def _split(self, shape):
        """``(batch, channels, (height, width))`` of a 4-D shape in this layer's layout."""
        if self._channels_last:
            return shape[0], shape[3], (shape[1], shape[2])
        return shape[0], shape[1], (shape[2], shape[3])

    def _check_shape(self, input_shape):
        """The 4-D input shape as a tuple, or a ValueError naming the layer and the layout."""
        shape = tuple(input_shape)
        if len(shape) != 4:
            raise ValueError(f"Input 0 of layer '{self.name}' is incompatible with the layer: "
                             f"expected ndim=4 {self._layout_name()} (data_format="
                             f"'{self.data_format}'), found ndim={len(shape)}. Full shape "
                             f"received: {shape}")
        _, channels, spatial = self._split(shape)
        kernel = tuple(d * (k - 1) + 1 for k, d in zip(self.kernel_size, self.dilation_rate))
        for axis, size, k, s, d, p in zip(("height", "width"), spatial, self.kernel_size,
                                          self.strides, self.dilation_rate,
                                          _pad_or_none(self.padding)):
            if size is None:
                continue
            out = _out_size(size, k, s, d, p)
            if out is None or out < 1:
                pad = 0 if p in ("valid", "same") else p
                raise ValueError(
                    f"Layer '{self.name}': the kernel does not fit the input. Input shape "
                    f"{shape}, read as data_format='{self.data_format}' {self._layout_name()}, "
                    f"has spatial size {tuple(spatial)}: with padding {self.padding!r} its "
                    f"{axis} {size} (+{2 * pad}) is smaller than the (dilated) kernel "
                    f"{kernel}, which would give an output {axis} of {out}. Use a smaller "
                    f"kernel_size/dilation_rate, more padding (or padding='same'), or check "
                    f"the layout (data_format=...).")
        if channels == 0:
            raise ValueError(f"Layer '{self.name}' needs a known, non-zero number of channels. "
                             f"Received input_shape={shape} (data_format='{self.data_format}')")
        if channels is not None and channels % self.groups:
            raise ValueError(f"Layer '{self.name}': the input's {channels} channels (shape "
                             f"{shape}, data_format='{self.data_format}') are not divisible by "
                             f"groups={self.groups}.")
        return shape

    # ------------------------------------------------------------------ Layer API
    def build(self, input_shape):
        shape = self._check_shape(input_shape)
        _, channels, _ = self._split(shape)
        if channels is None:  # 0 channels: refused by _check_shape
            raise ValueError(f"Layer '{self.name}' needs a known number of channels on the "
                             f"channel axis of {self._layout_name()} (data_format="
                             f"'{self.data_format}'). Received input_shape={shape}")
        in_channels = int(channels)
        self.in_channels = in_channels
        kh, kw = self.kernel_size
        self.kernel = self.add_weight("kernel", (self.filters, in_channels // self.groups, kh, kw),
                                      initializer=self.kernel_initializer)
        if self.use_bias:
            self.bias = self.add_weight("bias", (self.filters,), initializer=self.bias_initializer)
        super().build(input_shape)

    def convolution_op(self, inputs, kernel):
        """Keras's hook: the convolution of ``inputs`` with ``kernel`` in Keras's layout
        ``(kh, kw, in / groups, filters)``. A subclass that overrides it (a standardized
        convolution, say) gets the kernel in that layout, as in Keras; the layer adds the
        bias and the activation after it."""
        return ops.conv(inputs, kernel, strides=self.strides, padding=self.padding,
                        data_format=self.data_format, dilation_rate=self.dilation_rate)

    def _check_call_input(self, x):
        self._check_input(x, ndim=4, axis=3 if self._channels_last else 1, size=self.in_channels)
        self._check_shape(tuple(x.shape))

    def call(self, x, training=False):
        if x.ndim != 4:             # F.conv2d also takes one image without the batch axis
            self._check_input(x, ndim=4)
        if type(self).convolution_op is not Conv2D.convolution_op:
            self._check_call_input(x)           # a user's op: no boundary of ours below
            return self._overridden_convolution(x, self.kernel.permute(2, 3, 1, 0))
        padding = self.padding
        if padding == "same" and self.strides != (1, 1):
            _, _, spatial = self._split(tuple(x.shape))
            padding = same_padding(spatial, self.kernel_size, self.strides, self.dilation_rate)
        with self._explaining_refusal(x):   # the functional op validates
            y = F.conv2d(x, self.kernel, self.bias, stride=self.strides, padding=padding,
                         dilation=self.dilation_rate, groups=self.groups,
                         data_format=self.data_format)
        return self.activation(y)

    def _overridden_convolution(self, x, keras_kernel):
        y = self.convolution_op(x, keras_kernel)
        if self.use_bias:
            y = y + (self.bias if self._channels_last
                     else self.bias.reshape((-1,) + (1,) * (y.ndim - 2)))
        return self.activation(y)

    def compute_output_shape(self, input_shape):
        shape = self._check_shape(input_shape)
        n, _, spatial = self._split(shape)
        pads = _pad_or_none(self.padding)
        out = [_out_size(size, k, s, d, p) for size, k, s, d, p in
               zip(spatial, self.kernel_size, self.strides, self.dilation_rate, pads)]
        if self._channels_last:
            return (n, out[0], out[1], self.filters)
        return (n, self.filters, out[0], out[1])

    def set_weights(self, weights):
        """As ``Layer.set_weights``; a kernel of the wrong shape gets an error that states
        minnet's (PyTorch's) kernel layout and how to convert a Keras kernel."""
        weights = list(weights)
        if self.kernel is not None and weights:
            got = tuple(getattr(weights[0], "shape", np.shape(weights[0])))
            want = tuple(self.kernel.shape)
            if got != want:
                keras = (want[2], want[3], want[1], want[0])
                hint = (" It has the Keras layout (kh, kw, in, filters): convert it with "
                        "np.transpose(kernel, (3, 2, 0, 1))." if got == keras else
                        " A Keras kernel (kh, kw, in, filters) converts with "
                        "np.transpose(kernel, (3, 2, 0, 1)).")
                raise ValueError(f"Layer '{self.name}' weight 0 (kernel) has shape {want}: "
                                 f"Conv2D kernels use PyTorch's layout (filters, in_channels"
                                 f"/groups, kh, kw), whatever data_format. The array given "
                                 f"has shape {got}.{hint}")
        super().set_weights(weights)

    def count_flops(self, input_shape):
        """``2 * N * filters * H_out * W_out * in_channels/groups * kh * kw`` (+ one add per
        output for the bias)."""
        shape = tuple(input_shape)
        n, c, _ = self._split(shape)
        _, _, (oh, ow) = self._split(self.compute_output_shape(shape))
        n = 1 if n is None else n
        outputs = n * self.filters * oh * ow
        macs = (c // self.groups) * self.kernel_size[0] * self.kernel_size[1]
        return 2 * outputs * macs + (outputs if self.use_bias else 0)

    def get_config(self):
        return {**super().get_config(), "filters": self.filters,
                "kernel_size": list(self.kernel_size), "strides": list(self.strides),
                "padding": _padding_config(self.padding), "data_format": self.data_format,
                "dilation_rate": list(self.dilation_rate), "groups": self.groups,
                "activation": activations.serialize(self.activation), "use_bias": self.use_bias,
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
        parts.append(f"data_format={self.data_format!r}")
        if self.dilation_rate != (1, 1):
            parts.append(f"dilation_rate={self.dilation_rate}")
        if self.groups != 1:
            parts.append(f"groups={self.groups}")
        if not self.use_bias:
            parts.append("use_bias=False")
        act = activations.serialize(self.activation)
        if act != "linear":
            parts.append(f"activation={act}")
        return ", ".join(parts)
