"""DepthwiseConv1D and SeparableConv1D: Keras 3's arguments, PyTorch's weights, over
``Conv1D``'s geometry (``strides``, ``padding``, ``data_format``, ``dilation_rate``).

* ``DepthwiseConv1D`` (``Conv1d(C, C*m, k, groups=C)``): kernel ``(C*m, 1, k)``; a Keras
  depthwise kernel ``(k, C, m)`` converts with ``k.transpose(1, 2, 0).reshape(C*m, 1, k)``.
* ``SeparableConv1D``: that depthwise convolution, then a pointwise ``(filters, C*m, 1)``
  kernel (Keras's ``(1, C*m, filters)`` transposed) and one bias on the output.

The math is ``Conv1D``'s (a 2-D convolution of height 1; docs/math/convolution.md), as
``DepthwiseConv2D``/``SeparableConv2D`` are ``Conv2D``'s.
"""
from minnet import functional as F
from minnet import initializers
from minnet._checks import check_int
from minnet.layers.convolutional1d import Conv1D, from_ncl, to_ncl
from minnet.layers.convolutional_variants import Depthwise
from minnet.layers.weight_options import SEPARABLE_TARGETS

__all__ = ["DepthwiseConv1D", "SeparableConv1D"]


class DepthwiseConv1D(Depthwise, Conv1D):
    """Depthwise 1-D convolution: each input channel gets ``depth_multiplier`` filters of
    its own. ``(N, L, C)`` -> ``(N, L_out, C * depth_multiplier)`` (channels_last).

    Args:
        kernel_size, strides, padding, data_format, dilation_rate, activation, use_bias: as
            ``Conv1D``.
        depth_multiplier: output channels per input channel (default 1).
        depthwise_initializer: default ``"glorot_uniform"``; bias_initializer ``"zeros"``.
    """

    def __init__(self, kernel_size, strides=1, padding="valid", depth_multiplier=1,
                 data_format=None, dilation_rate=1, activation=None, use_bias=True,
                 depthwise_initializer="glorot_uniform", bias_initializer="zeros", **kwargs):
        super().__init__(1, kernel_size, strides=strides, padding=padding, data_format=data_format,
                         dilation_rate=dilation_rate, activation=activation, use_bias=use_bias,
                         kernel_initializer=depthwise_initializer,
                         bias_initializer=bias_initializer, **kwargs)
        self.depth_multiplier = check_int("depth_multiplier", depth_multiplier, minimum=1)

    def _input_channels(self, input_shape):
        if len(input_shape) != 3:
            return None                    # Conv1D's build names the expected shape
        return input_shape[-1] if self._channels_last else input_shape[1]


class SeparableConv1D(Conv1D):
    """Depthwise 1-D convolution, then a pointwise (size-1) convolution to ``filters``.

    Weights: ``depthwise_kernel`` ``(C*m, 1, k)``, ``pointwise_kernel`` ``(filters, C*m, 1)``,
    ``bias`` ``(filters,)``.
    """

    weight_option_targets = SEPARABLE_TARGETS     # Keras's depthwise_/pointwise_/bias_ options

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None,
                 dilation_rate=1, depth_multiplier=1, activation=None, use_bias=True,
                 depthwise_initializer="glorot_uniform", pointwise_initializer="glorot_uniform",
                 bias_initializer="zeros", **kwargs):
        super().__init__(filters, kernel_size, strides=strides, padding=padding,
                         data_format=data_format, dilation_rate=dilation_rate,
                         activation=activation, use_bias=use_bias,
                         kernel_initializer=depthwise_initializer,
                         bias_initializer=bias_initializer, **kwargs)
        self.depth_multiplier = check_int("depth_multiplier", depth_multiplier, minimum=1)
        self.pointwise_initializer = initializers.get(pointwise_initializer)

    def build(self, input_shape):
        input_shape = tuple(input_shape)
        axis = -1 if self._channels_last else 1
        if len(input_shape) != 3 or not input_shape[axis]:
            raise ValueError(f"Layer '{self.name}' expects inputs of shape "
                             f"{'(batch, steps, channels)' if self._channels_last else '(batch, channels, steps)'}"
                             f" with a known, non-zero number of channels. Received input_shape={input_shape}")
        self.in_channels = int(input_shape[axis])
        middle = self.in_channels * self.depth_multiplier
        self.depthwise_kernel = self.add_weight("depthwise_kernel", (middle, 1, self.kernel_size),
                                                initializer=self.kernel_initializer)
        self.pointwise_kernel = self.add_weight("pointwise_kernel", (self.filters, middle, 1),
                                                initializer=self.pointwise_initializer)
        if self.use_bias:
            self.bias = self.add_weight("bias", (self.filters,), initializer=self.bias_initializer)
        self.built = True
        self._build_input_shape = input_shape

    def call(self, x, training=False):
        if x.ndim != 3:
            self._check_input(x, ndim=3)
        left, right = self._steps_padding(x)
        middle = self.in_channels * self.depth_multiplier
        with self._explaining_refusal(x):   # the functional op validates
            h = F.conv2d(to_ncl(x, self._channels_last),
                         self.depthwise_kernel.reshape(middle, 1, 1, self.kernel_size), None,
                         stride=(1, self.strides), padding=((0, 0), (left, right)),
                         dilation=(1, self.dilation_rate), groups=self.in_channels)
        y = F.conv2d(h, self.pointwise_kernel.reshape(self.filters, middle, 1, 1), self.bias)
        return self.activation(from_ncl(y, self._channels_last))

    def get_config(self):
        config = super().get_config()
        config.pop("groups")
        config["depthwise_initializer"] = config.pop("kernel_initializer")
        config["pointwise_initializer"] = initializers.serialize(self.pointwise_initializer)
        config["depth_multiplier"] = self.depth_multiplier
        return config
