"""Conv3D and Conv3DTranspose: convolutions over volumes (video clips, scans) in either layout,
with Keras 3's arguments and defaults and PyTorch's ``Conv3d``/``ConvTranspose3d`` weight
layouts and numerics.

The math is ``minnet.functional.conv3d`` / ``conv_transpose3d``: sums over the kernel's depth
taps of 2-D convolutions (docs/math/convolution.md, "3-D convolution").
"""
from minnet import activations, initializers
from minnet import functional as F
from minnet.layers.base import Layer
from minnet.layers.convolutional import check_output_padding, same_padding, set_conv_arguments
from minnet.layers.convolutional_variants import transposed_geometry

__all__ = ["Conv3D", "Conv3DTranspose"]

_AXES = ("depth", "height", "width")


class Conv3D(Layer):
    """3-D convolution (cross-correlation), ``channels_last`` ``(N, D, H, W, C)`` or
    ``channels_first`` ``(N, C, D, H, W)``.

    ``y[n, f] = bias[f] + sum_c kernel[f, c] (*) x[n, c]`` (a 3-D cross-correlation per
    channel pair of the filter's group), then ``activation``. Keras 3's arguments and
    defaults; ``kernel`` keeps PyTorch's ``Conv3d`` layout ``(filters, in_channels // groups,
    kd, kh, kw)`` whatever ``data_format`` (a Keras kernel ``(kd, kh, kw, in, filters)``
    converts with ``np.transpose(k, (4, 3, 0, 1, 2))``), ``bias`` is ``(filters,)``.

    Args:
        filters: number of output channels.
        kernel_size, strides, dilation_rate: int or a triple.
        padding: ``"valid"``, ``"same"`` (output ``ceil(size / stride)``, the odd plane at
            the end, as Keras), or an int / triple of zeros on each side (a minnet extension).
        data_format: ``"channels_last"``, ``"channels_first"`` or None (the configured one).
        groups: int dividing the input channels and ``filters``.
        activation, use_bias, kernel_initializer, bias_initializer: as ``Conv2D``.

    Example:
        >>> conv = layers.Conv3D(4, 3, padding="same", data_format="channels_last")
        >>> conv(np.zeros((2, 5, 6, 7, 1))).shape
        (2, 5, 6, 7, 4)
    """

    def __init__(self, filters, kernel_size, strides=(1, 1, 1), padding="valid",
                 data_format=None, dilation_rate=(1, 1, 1), groups=1, activation=None,
                 use_bias=True, kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 **kwargs):
        super().__init__(**kwargs)
        set_conv_arguments(self, 3, filters, kernel_size, strides, padding, data_format,
                           dilation_rate, groups, activation, use_bias, kernel_initializer,
                           bias_initializer)

    @property
    def _channels_last(self):
        return self.data_format == "channels_last"

    def _layout_name(self):
        return ("(batch, depth, height, width, channels)" if self._channels_last else
                "(batch, channels, depth, height, width)")

    def _split(self, shape):
        """``(batch, channels, (depth, height, width))`` of a 5-D shape in this layout."""
        if self._channels_last:
            return shape[0], shape[4], tuple(shape[1:4])
        return shape[0], shape[1], tuple(shape[2:5])

    def _check_shape(self, input_shape):
        shape = tuple(input_shape)
        if len(shape) != 5:
            raise ValueError(f"Input 0 of layer '{self.name}' is incompatible with the layer: "
                             f"expected ndim=5 {self._layout_name()} (data_format="
                             f"'{self.data_format}'), found ndim={len(shape)}. Full shape "
                             f"received: {shape}")
        return shape

    def _out_sizes(self, spatial):
        out = []
        for axis, size, k, s, d, i in zip(_AXES, spatial, self.kernel_size, self.strides,
                                          self.dilation_rate, range(3)):
            if size is None:
                out.append(None)
                continue
            if self.padding == "same":
                out.append(-(-size // s))
                continue
            pad = 0 if self.padding == "valid" else self.padding[i]
            length = (size + 2 * pad - d * (k - 1) - 1) // s + 1
            if length < 1:
                raise ValueError(f"Layer '{self.name}': the kernel does not fit the input. Its "
                                 f"{axis} {size} (+{2 * pad} padding) is smaller than the "
                                 f"(dilated) kernel {d * (k - 1) + 1}. Input shape received: "
                                 f"{tuple(spatial)} (data_format='{self.data_format}').")
            out.append(length)
        return out

    def build(self, input_shape):
        shape = self._check_shape(input_shape)
        _, channels, spatial = self._split(shape)
        if not channels:      # unknown (None) or 0
            raise ValueError(f"Layer '{self.name}' needs a known, non-zero number of channels on the "
                             f"channel axis of {self._layout_name()}. Received input_shape={shape}")
        if channels % self.groups:
            raise ValueError(f"Layer '{self.name}': the input's {channels} channels are not "
                             f"divisible by groups={self.groups}.")
        self._out_sizes(spatial)
        self.in_channels = int(channels)
        self.kernel = self.add_weight(
            "kernel", (self.filters, self.in_channels // self.groups) + self.kernel_size,
            initializer=self.kernel_initializer)
        if self.use_bias:
            self.bias = self.add_weight("bias", (self.filters,), initializer=self.bias_initializer)
        super().build(input_shape)

    def _check_call_input(self, x):
        self._check_input(x, ndim=5, axis=4 if self._channels_last else 1, size=self.in_channels)
        self._out_sizes(self._split(tuple(x.shape))[2])

    def call(self, x, training=False):
        if x.ndim != 5:             # F.conv3d also takes one volume without the batch axis
            self._check_input(x, ndim=5)
        _, _, spatial = self._split(tuple(x.shape))
        padding = self.padding
        if padding == "same":            # Keras's pads (the odd plane at the end), any stride
            padding = same_padding(spatial, self.kernel_size, self.strides, self.dilation_rate)
        with self._explaining_refusal(x):   # the functional op validates
            y = F.conv3d(x, self.kernel, self.bias, stride=self.strides, padding=padding,
                         dilation=self.dilation_rate, groups=self.groups,
                         data_format=self.data_format)
        return self.activation(y)

    def compute_output_shape(self, input_shape):
        shape = self._check_shape(input_shape)
        n, _, spatial = self._split(shape)
        out = self._out_sizes(spatial)
        return (n, *out, self.filters) if self._channels_last else (n, self.filters, *out)

    def get_config(self):
        return {**super().get_config(), "filters": self.filters,
                "kernel_size": list(self.kernel_size), "strides": list(self.strides),
                "padding": self.padding if isinstance(self.padding, str) else list(self.padding),
                "data_format": self.data_format, "dilation_rate": list(self.dilation_rate),
                "groups": self.groups, "activation": activations.serialize(self.activation),
                "use_bias": self.use_bias,
                "kernel_initializer": initializers.serialize(self.kernel_initializer),
                "bias_initializer": initializers.serialize(self.bias_initializer)}


class Conv3DTranspose(Conv3D):
    """Transposed 3-D convolution, Keras 3's arguments (``padding`` "valid" or "same",
    ``output_padding``); which planes of the full transposed convolution are kept is Keras's
    rule, as ``Conv2DTranspose`` (``transpose_window``). ``kernel`` is PyTorch's
    ``ConvTranspose3d`` layout ``(in_channels, filters, kd, kh, kw)``."""

    def __init__(self, filters, kernel_size, strides=(1, 1, 1), padding="valid",
                 output_padding=None, data_format=None, dilation_rate=(1, 1, 1), activation=None,
                 use_bias=True, kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 **kwargs):
        super().__init__(filters, kernel_size, strides=strides, padding=padding,
                         data_format=data_format, dilation_rate=dilation_rate,
                         activation=activation, use_bias=use_bias,
                         kernel_initializer=kernel_initializer,
                         bias_initializer=bias_initializer, **kwargs)
        if self.padding not in ("valid", "same"):
            raise ValueError(f"Invalid value for argument `padding`: expected 'valid' or 'same'. "
                             f"Received: padding={padding!r}")
        self.output_padding = check_output_padding(output_padding, self.strides,
                                                   self.dilation_rate, 3)

    def _geometry(self, spatial):
        return transposed_geometry(self, spatial)

    def _out_sizes(self, spatial):
        return [None if size is None else g[0]
                for size, g in zip(spatial, self._geometry([s or 1 for s in spatial]))]

    def build(self, input_shape):
        shape = self._check_shape(input_shape)
        _, channels, _ = self._split(shape)
        if not channels:      # unknown (None) or 0
            raise ValueError(f"Layer '{self.name}' needs a known, non-zero number of channels. "
                             f"Received input_shape={shape}")
        self.in_channels = int(channels)
        self.kernel = self.add_weight("kernel", (self.in_channels, self.filters) + self.kernel_size,
                                      initializer=self.kernel_initializer)
        if self.use_bias:
            self.bias = self.add_weight("bias", (self.filters,), initializer=self.bias_initializer)
        self.built = True
        self._build_input_shape = tuple(input_shape)

    def call(self, x, training=False):
        if x.ndim != 5:
            self._check_input(x, ndim=5)
        _, _, spatial = self._split(tuple(x.shape))
        geometry = self._geometry(spatial)
        with self._explaining_refusal(x):   # the functional op validates
            y = F.conv_transpose3d(x, self.kernel, self.bias, stride=self.strides,
                                   padding=tuple((top, bottom) for _, top, bottom, _ in geometry),
                                   output_padding=tuple(extra for *_, extra in geometry),
                                   dilation=self.dilation_rate, data_format=self.data_format)
        return self.activation(y)

    def get_config(self):
        config = super().get_config()
        config.pop("groups")
        config["output_padding"] = None if self.output_padding is None else list(self.output_padding)
        return config
