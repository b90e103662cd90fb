"""Conv2DTranspose, DepthwiseConv2D and SeparableConv2D: Keras 3's arguments, PyTorch's weights.

* ``Conv2DTranspose`` (``torch.nn.ConvTranspose2d``): kernel ``(in_channels, filters, kh, kw)``;
  a Keras kernel ``(kh, kw, filters, in)`` converts with ``np.transpose(k, (3, 2, 0, 1))``.
* ``DepthwiseConv2D`` (``Conv2d(C, C*m, k, groups=C)``): kernel ``(C*m, 1, kh, kw)``; a Keras
  depthwise kernel ``(kh, kw, C, m)`` converts with ``k.transpose(2, 3, 0, 1).reshape(C*m, 1, kh, kw)``.
* ``SeparableConv2D``: a depthwise kernel as above, then a pointwise ``(filters, C*m, 1, 1)``
  kernel and one bias on the output.

All three are ``Conv2D``'s geometry (``strides``, ``padding``, ``data_format``,
``dilation_rate``) over ``functional.conv2d``/``conv_transpose2d``; the math is in
docs/math/convolution.md.
"""
from minnet import initializers
from minnet._checks import check_int
from minnet import functional as F
from minnet.layers.convolutional import Conv2D, check_output_padding, same_padding
from minnet.layers.weight_options import SEPARABLE_TARGETS

__all__ = ["transpose_window", "transposed_geometry", "Conv2DTranspose", "Depthwise", "DepthwiseConv2D", "SeparableConv2D"]


class Depthwise:
    """The depthwise rule of ``DepthwiseConv1D``/``DepthwiseConv2D`` (mixed in before the
    convolution class): ``groups`` = the input channels, ``filters`` = channels *
    ``depth_multiplier``, set when the input shape is known (``_input_channels``)."""

    # Keras's depthwise_ options name the kernel (kernel_ kept too: minnet took it before)
    weight_option_targets = {"depthwise": ("kernel",), "kernel": ("kernel",), "bias": ("bias",)}

    def _set_channels(self, input_shape):
        channels = self._input_channels(tuple(input_shape))
        if channels is not None:
            self.groups = int(channels)
            self.filters = int(channels) * self.depth_multiplier

    def build(self, input_shape):
        self._set_channels(input_shape)
        super().build(input_shape)

    def compute_output_shape(self, input_shape):
        self._set_channels(input_shape)
        return super().compute_output_shape(input_shape)

    def get_config(self):
        config = super().get_config()
        for key in ("filters", "groups"):
            config.pop(key)
        config["depthwise_initializer"] = config.pop("kernel_initializer")
        config["depth_multiplier"] = self.depth_multiplier
        return config


class DepthwiseConv2D(Depthwise, Conv2D):
    """Depthwise 2-D convolution: each input channel gets ``depth_multiplier`` filters of its own.

    Args:
        kernel_size, strides, padding, data_format, dilation_rate, activation, use_bias: as
            ``Conv2D``.
        depth_multiplier: output channels per input channel (default 1).
        depthwise_initializer: default ``"glorot_uniform"``; bias_initializer ``"zeros"``.

    Shape:
        ``(N, H, W, C)`` -> ``(N, H_out, W_out, C * depth_multiplier)`` (channels_last).
    """

    def __init__(self, kernel_size, strides=(1, 1), padding="valid", depth_multiplier=1,
                 data_format=None, dilation_rate=(1, 1), activation=None, use_bias=True,
                 depthwise_initializer="glorot_uniform", bias_initializer="zeros", **kwargs):
        super().__init__(1, kernel_size, strides=strides, padding=padding, data_format=data_format,
                         dilation_rate=dilation_rate, activation=activation, use_bias=use_bias,
                         kernel_initializer=depthwise_initializer,
                         bias_initializer=bias_initializer, **kwargs)
        self.depth_multiplier = check_int("depth_multiplier", depth_multiplier, minimum=1)

    def _input_channels(self, input_shape):
        _, channels, _ = self._split(self._check_shape(input_shape))   # the 4-D check first
        return channels


class SeparableConv2D(Conv2D):
    """Depthwise convolution, then a 1x1 pointwise convolution to ``filters`` channels.

    Weights: ``depthwise_kernel`` ``(C*m, 1, kh, kw)``, ``pointwise_kernel``
    ``(filters, C*m, 1, 1)``, ``bias`` ``(filters,)``.
    """

    weight_option_targets = SEPARABLE_TARGETS     # Keras's depthwise_/pointwise_/bias_ options

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", data_format=None,
                 dilation_rate=(1, 1), depth_multiplier=1, activation=None, use_bias=True,
                 depthwise_initializer="glorot_uniform", pointwise_initializer="glorot_uniform",
                 bias_initializer="zeros", **kwargs):
        super().__init__(filters, kernel_size, strides=strides, padding=padding,
                         data_format=data_format, dilation_rate=dilation_rate,
                         activation=activation, use_bias=use_bias,
                         kernel_initializer=depthwise_initializer,
                         bias_initializer=bias_initializer, **kwargs)
        if isinstance(depth_multiplier, bool) or not isinstance(depth_multiplier, int) or \
                depth_multiplier < 1:
            raise ValueError(f"Invalid value for argument `depth_multiplier`: expected a positive "
                             f"int. Received: depth_multiplier={depth_multiplier!r}")
        self.depth_multiplier = depth_multiplier
        self.pointwise_initializer = initializers.get(pointwise_initializer)

    def build(self, input_shape):
        shape = self._check_shape(input_shape)
        _, channels, _ = self._split(shape)
        if channels is None:  # 0 channels: refused by Conv2D._check_shape
            raise ValueError(f"Layer '{self.name}' needs a known number of channels. "
                             f"Received input_shape={shape}")
        self.in_channels = int(channels)
        middle = self.in_channels * self.depth_multiplier
        kh, kw = self.kernel_size
        self.depthwise_kernel = self.add_weight("depthwise_kernel", (middle, 1, kh, kw),
                                                initializer=self.kernel_initializer)
        self.pointwise_kernel = self.add_weight("pointwise_kernel", (self.filters, middle, 1, 1),
                                                initializer=self.pointwise_initializer)
        if self.use_bias:
            self.bias = self.add_weight("bias", (self.filters,), initializer=self.bias_initializer)
        self.built = True
        self._build_input_shape = tuple(input_shape)

    def call(self, x, training=False):
        if x.ndim != 4:
            self._check_input(x, ndim=4)
        padding = self.padding
        if padding == "same" and self.strides != (1, 1):
            _, _, spatial = self._split(tuple(x.shape))
            padding = same_padding(spatial, self.kernel_size, self.strides, self.dilation_rate)
        with self._explaining_refusal(x):   # the functional op validates
            h = F.conv2d(x, self.depthwise_kernel, None, stride=self.strides, padding=padding,
                         dilation=self.dilation_rate, groups=self.in_channels,
                         data_format=self.data_format)
        y = F.conv2d(h, self.pointwise_kernel, self.bias, data_format=self.data_format)
        return self.activation(y)

    def count_flops(self, input_shape):
        """Depthwise ``2*N*C*m*H_out*W_out*kh*kw`` plus pointwise ``2*N*H_out*W_out*filters*C*m``
        (plus one add per output for the bias)."""
        n, c, _ = self._split(tuple(input_shape))
        _, _, (oh, ow) = self._split(self.compute_output_shape(tuple(input_shape)))
        n = 1 if n is None else n
        middle = c * self.depth_multiplier
        kh, kw = self.kernel_size
        outputs = n * self.filters * oh * ow
        return (2 * n * middle * oh * ow * kh * kw + 2 * outputs * middle
                + (outputs if self.use_bias else 0))

    def get_config(self):
        config = super().get_config()
        config.pop("groups")
        config["depthwise_initializer"] = config.pop("kernel_initializer")
        config["pointwise_initializer"] = initializers.serialize(self.pointwise_initializer)
        config["depth_multiplier"] = self.depth_multiplier
        return config


def transpose_window(size, k, s, padding, op):
    """Keras's window of a transposed convolution's full output ``(size - 1)*s + k`` (``k``
    the dilated kernel size): ``(length, cropped at the start, cropped at the end, zeros added
    at the end)``.

    Keras's rule (``compute_conv_transpose_output_crops_for_torch``, the same on every
    backend): crop ``k - 1 - left`` at the start and ``k - 1 - right`` at the end (a negative
    crop adds zeros), with ``"valid"``: ``left = k - 1``, ``right = k - 1 + op`` (``op``
    defaults to ``max(k, s) - k``); ``"same"``: ``n = s + k - 2`` without ``output_padding``,
    ``k + k % 2 - 2 + op`` with it, ``left = min(ceil(n / 2), k - 1)``, ``right = n - left``.
    """
    if padding == "valid":
        left = k - 1
        right = k - 1 + (max(k, s) - k if op is None else op)
    else:
        total = s + k - 2 if op is None else k + k % 2 - 2 + op
        left = min(total // 2 + total % 2, k - 1)
        right = total - left
    top, bottom = k - 1 - left, k - 1 - right
    length = (size - 1) * s + k - top - bottom
    if bottom >= 0:
        return (length, top, bottom, 0)
    return (length, top, 0, -bottom)


def transposed_geometry(layer, spatial):
    """``transpose_window`` per spatial axis of a transposed convolution ``layer`` (2-D or 3-D:
    its ``kernel_size``, ``strides``, ``dilation_rate``, ``padding``, ``output_padding``)."""
    extra = layer.output_padding
    return [transpose_window(size, layer.dilation_rate[i] * (layer.kernel_size[i] - 1) + 1,
                             layer.strides[i], layer.padding, None if extra is None else extra[i])
            for i, size in enumerate(spatial)]


class Conv2DTranspose(Conv2D):
    """Transposed 2-D convolution (upsampling by learned filters), Keras 3's arguments.

    Output size per axis (Keras's ``deconv_output_length``): ``"valid"``: ``H*s + max(k - s, 0)``;
    ``"same"``: ``H*s``; with ``output_padding`` ``op``: ``(H - 1)*s + k - 2*pad + op`` with
    ``pad = 0`` ("valid") or ``k // 2`` ("same"). ``k`` is the dilated kernel size. Which rows
    of the full transposed convolution are kept is Keras's rule (see ``_geometry``), which
    differs from PyTorch's symmetric ``padding`` when ``"same"`` meets ``s > 1`` and an odd ``k``
    or an even ``k`` (``mn.functional.conv_transpose2d`` keeps PyTorch's meaning).

    Args:
        filters, kernel_size, strides, padding ("valid"/"same"), data_format, dilation_rate,
        activation, use_bias, kernel_initializer, bias_initializer: as ``Conv2D``.
        output_padding: None, an int or a pair (< strides).

    Weights: ``kernel`` ``(in_channels, filters, kh, kw)`` (PyTorch's ``ConvTranspose2d``),
    ``bias`` ``(filters,)``.
    """

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", output_padding=None,
                 data_format=None, dilation_rate=(1, 1), activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros", **kwargs):
        super().__init__(filters, kernel_size, strides=strides, padding=padding,
                         data_format=data_format, dilation_rate=dilation_rate,
                         activation=activation, use_bias=use_bias,
                         kernel_initializer=kernel_initializer,
                         bias_initializer=bias_initializer, **kwargs)
        if self.padding not in ("valid", "same"):
            raise ValueError(f"Invalid value for argument `padding`: expected 'valid' or 'same'. "
                             f"Received: padding={padding!r}")
        self.output_padding = check_output_padding(output_padding, self.strides,
                                                   self.dilation_rate, 2)

    def _geometry(self, spatial):
        """Per axis: (output length, rows cropped at the top, at the bottom, zero rows added
        at the end) of ``conv_transpose2d``'s full output (``transpose_window``)."""
        return transposed_geometry(self, spatial)

    def _check_shape(self, input_shape):
        shape = tuple(input_shape)
        if len(shape) != 4:
            raise ValueError(f"Input 0 of layer '{self.name}' is incompatible with the layer: "
                             f"expected ndim=4 {self._layout_name()} (data_format="
                             f"'{self.data_format}'), found ndim={len(shape)}. Full shape "
                             f"received: {shape}")
        return shape

    def build(self, input_shape):
        shape = self._check_shape(input_shape)
        _, channels, _ = self._split(shape)
        if not channels:      # unknown (None) or 0
            raise ValueError(f"Layer '{self.name}' needs a known, non-zero number of channels. "
                             f"Received input_shape={shape}")
        self.in_channels = int(channels)
        kh, kw = self.kernel_size
        # Keras's fans for a transposed kernel: fan_in = filters*kh*kw, fan_out = in*kh*kw.
        self.kernel = self.add_weight("kernel", (self.in_channels, self.filters, kh, kw),
                                      initializer=self.kernel_initializer)
        if self.use_bias:
            self.bias = self.add_weight("bias", (self.filters,), initializer=self.bias_initializer)
        self.built = True
        self._build_input_shape = tuple(input_shape)

    def call(self, x, training=False):
        if x.ndim != 4:
            self._check_input(x, ndim=4)
        _, _, spatial = self._split(tuple(x.shape))
        geometry = self._geometry(spatial)
        padding = tuple((top, bottom) for _, top, bottom, _ in geometry)
        with self._explaining_refusal(x):   # the functional op validates
            y = F.conv_transpose2d(x, self.kernel, self.bias, stride=self.strides,
                                   padding=padding,
                                   output_padding=tuple(extra for *_, extra in geometry),
                                   dilation=self.dilation_rate, data_format=self.data_format)
        return self.activation(y)

    def compute_output_shape(self, input_shape):
        shape = self._check_shape(input_shape)
        n, _, spatial = self._split(shape)
        out = [None if size is None else g[0] for size, g in
               zip(spatial, self._geometry([s or 1 for s in spatial]))]
        if self._channels_last:
            return (n, out[0], out[1], self.filters)
        return (n, self.filters, out[0], out[1])

    def set_weights(self, weights):
        super(Conv2D, self).set_weights(weights)

    def count_flops(self, input_shape):
        """``2 * N * in_channels * H * W * filters * kh * kw`` (each input pixel scatters one
        filters x kh x kw block), plus one add per output for the bias."""
        shape = tuple(input_shape)
        n, c, (h, w) = self._split(shape)
        _, _, (oh, ow) = self._split(self.compute_output_shape(shape))
        n = 1 if n is None else n
        kh, kw = self.kernel_size
        return (2 * n * c * h * w * self.filters * kh * kw
                + (n * self.filters * oh * ow if self.use_bias else 0))

    def get_config(self):
        config = super().get_config()
        config.pop("groups")
        config["output_padding"] = None if self.output_padding is None else list(self.output_padding)
        return config

