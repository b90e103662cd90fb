"""Keras 3 layers built on the existing kernels and Tensor operations: the adaptive poolings
(``AdaptiveAveragePooling1D/2D/3D``, ``AdaptiveMaxPooling1D/2D/3D``), ``Conv1DTranspose``
and ``EinsumDense``. Math in ``docs/math/simple_layers.md``."""
import re

import numpy as np

from minnet import activations, config, initializers
from minnet import functional as F
from minnet._checks import check_int, check_int_tuple, invalid
from minnet.autograd import cat, einsum
from minnet.layers.base import Layer
from minnet.layers.convolutional_variants import transpose_window

__all__ = ["AdaptiveAveragePooling1D", "AdaptiveAveragePooling2D", "AdaptiveAveragePooling3D",
           "AdaptiveMaxPooling1D", "AdaptiveMaxPooling2D", "AdaptiveMaxPooling3D",
           "Conv1DTranspose", "EinsumDense"]


def _first(result):
    return result[0] if isinstance(result, tuple) else result


def adaptive_bins(length, out):
    """PyTorch's (and Keras's) adaptive bins: ``[floor(i L / out), ceil((i + 1) L / out))``."""
    return [((i * length) // out, -(-((i + 1) * length) // out)) for i in range(out)]


class _AdaptivePooling(Layer):
    _ndim = None
    _max = False

    def __init__(self, output_size, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.output_size = check_int_tuple("output_size", output_size, self._ndim)
        self.data_format = config.normalize_data_format(data_format)

    def _axes(self):
        first = 1 if self.data_format == "channels_last" else 2
        return tuple(range(first, first + self._ndim))

    def call(self, x, training=False):
        self._check_input(x, ndim=self._ndim + 2)
        for axis, out in zip(self._axes(), self.output_size):
            if out > x.shape[axis]:
                raise ValueError(
                    f"Layer '{self.name}' ({type(self).__name__}): `output_size` {out} is larger than "
                    f"the input's size {x.shape[axis]} on axis {axis}. Adaptive pooling reduces; to "
                    f"enlarge, use an UpSampling or Resizing layer. Received: output_size="
                    f"{self.output_size}, input shape {tuple(x.shape)}")
        # Bins are products of intervals, so mean and max reduce one axis at a time.
        for axis, out in zip(self._axes(), self.output_size):
            parts = []
            for start, stop in adaptive_bins(x.shape[axis], out):
                piece = x[(slice(None),) * axis + (slice(start, stop),)]
                if self._max:          # the first maximum takes the gradient, as torch
                    parts.append(_first(piece.max(axis, keepdim=True)))
                else:
                    parts.append(piece.mean(axis=axis, keepdims=True))
            x = cat(parts, dim=axis)
        return x

    def compute_output_shape(self, input_shape):
        shape = list(input_shape)
        for axis, out in zip(self._axes(), self.output_size):
            shape[axis] = out
        return tuple(shape)

    def get_config(self):
        size = self.output_size[0] if self._ndim == 1 else list(self.output_size)
        return {**super().get_config(), "output_size": size, "data_format": self.data_format}


def _adaptive(name, ndim, is_max):
    kind = "maximum" if is_max else "mean"
    doc = (f"Keras's {name}: the {kind} over PyTorch's adaptive bins "
           f"``[floor(i L / out), ceil((i + 1) L / out))`` on each of the {ndim} spatial axes "
           f"(``torch.nn.Adaptive{'Max' if is_max else 'Avg'}Pool{ndim}d``).")
    return type(name, (_AdaptivePooling,), {"_ndim": ndim, "_max": is_max, "__doc__": doc,
                                            "__module__": __name__})


AdaptiveAveragePooling1D = _adaptive("AdaptiveAveragePooling1D", 1, False)
AdaptiveAveragePooling2D = _adaptive("AdaptiveAveragePooling2D", 2, False)
AdaptiveAveragePooling3D = _adaptive("AdaptiveAveragePooling3D", 3, False)
AdaptiveMaxPooling1D = _adaptive("AdaptiveMaxPooling1D", 1, True)
AdaptiveMaxPooling2D = _adaptive("AdaptiveMaxPooling2D", 2, True)
AdaptiveMaxPooling3D = _adaptive("AdaptiveMaxPooling3D", 3, True)


class Conv1DTranspose(Layer):
    """Transposed 1-D convolution with Keras's arguments and output window
    (``transpose_window``, as ``Conv2DTranspose``).

    Weights: ``kernel`` ``(in_channels, filters, kernel_size)`` (``torch.nn.ConvTranspose1d``;
    Keras's ``(k, filters, in)`` converts with ``np.transpose(k, (2, 1, 0))``), ``bias``.

    Shape:
        ``(N, L, C)`` (channels_last) -> ``(N, L_out, filters)``; ``L_out = L * s`` for
        ``"same"``, ``L * s + max(k - s, 0)`` for ``"valid"`` (``output_padding`` as Keras).
    """

    def __init__(self, filters, kernel_size, strides=1, padding="valid", output_padding=None,
                 data_format=None, dilation_rate=1, activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros", **kwargs):
        super().__init__(**kwargs)
        self.filters = check_int("filters", filters, minimum=1)
        self.kernel_size = check_int_tuple("kernel_size", kernel_size, 1)[0]
        self.strides = check_int_tuple("strides", strides, 1)[0]
        if padding not in ("valid", "same"):
            raise invalid("padding", "'valid' or 'same'", padding)
        self.padding = padding
        self.output_padding = None if output_padding is None else check_int_tuple(
            "output_padding", output_padding, 1, minimum=0)[0]
        self.data_format = config.normalize_data_format(data_format)
        self.dilation_rate = check_int_tuple("dilation_rate", dilation_rate, 1)[0]
        if self.output_padding is not None and self.output_padding >= max(self.strides,
                                                                         self.dilation_rate):
            raise invalid("output_padding", f"a value smaller than strides={self.strides}",
                          output_padding)
        self.activation = activations.get(activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel = self.bias = None

    def build(self, input_shape):
        channels = input_shape[-1 if self.data_format == "channels_last" else 1]
        if not channels:      # unknown (None) or 0
            raise ValueError(f"Layer '{self.name}' needs a known, non-zero number of channels. "
                             f"Received input_shape={tuple(input_shape)}")
        self.in_channels = int(channels)
        self.kernel = self.add_weight("kernel", (self.in_channels, self.filters, self.kernel_size),
                                      initializer=self.kernel_initializer)
        if self.use_bias:
            self.bias = self.add_weight("bias", (self.filters,), initializer=self.bias_initializer)
        super().build(input_shape)

    def _check_call_input(self, x):
        self._check_input(x, ndim=3, axis=2 if self.data_format == "channels_last" else 1,
                          size=self.in_channels)

    def _window(self, length):
        k = self.dilation_rate * (self.kernel_size - 1) + 1
        return transpose_window(length, k, self.strides, self.padding, self.output_padding)

    def call(self, x, training=False):
        last = self.data_format == "channels_last"
        if x.ndim != 3:
            self._check_input(x, ndim=3)
        h = x.transpose(0, 2, 1) if last else x
        length = h.shape[2]
        _, top, bottom, extra = self._window(length)
        h = h.reshape(h.shape[0], h.shape[1], 1, length)
        with self._explaining_refusal(x):   # the functional op validates
            y = F.conv_transpose2d(h, self.kernel.reshape(self.in_channels, self.filters, 1,
                                                          self.kernel_size),
                                   self.bias, stride=(1, self.strides),
                                   padding=((0, 0), (top, bottom)), output_padding=(0, extra),
                                   dilation=(1, self.dilation_rate))
        y = y.reshape(y.shape[0], y.shape[1], y.shape[3])
        return self.activation(y.transpose(0, 2, 1) if last else y)

    def compute_output_shape(self, input_shape):
        n, a, b = tuple(input_shape)
        last = self.data_format == "channels_last"
        length = a if last else b
        out = None if length is None else self._window(length)[0]
        return (n, out, self.filters) if last else (n, self.filters, out)

    def get_config(self):
        return {**super().get_config(), "filters": self.filters, "kernel_size": self.kernel_size,
                "strides": self.strides, "padding": self.padding,
                "output_padding": self.output_padding, "data_format": self.data_format,
                "dilation_rate": self.dilation_rate,
                "activation": activations.serialize(self.activation), "use_bias": self.use_bias,
                "kernel_initializer": initializers.serialize(self.kernel_initializer),
                "bias_initializer": initializers.serialize(self.bias_initializer)}


def _analyze(equation, bias_axes, input_shape, output_shape):
    """Keras's ``_analyze_einsum_string``: kernel shape, bias shape and full output shape."""
    plain = re.sub(r"\.\.\.", "0", equation)
    left = False
    match = re.match("([a-zA-Z]+),([a-zA-Z]+)->([a-zA-Z]+)$", plain)
    if not match:
        match = re.match("0([a-zA-Z]+),([a-zA-Z]+)->0([a-zA-Z]+)$", plain)
        left = bool(match)
    if not match:
        match = re.match("([a-zA-Z]{2,})0,([a-zA-Z]+)->([a-zA-Z]+)0$", plain)
    if not match:
        raise invalid("equation", "'[X],[Y]->[Z]', '...[X],[Y]->...[Z]' or '[X]...,[Y]->[Z]...'",
                      equation)
    input_spec, weight_spec, output_spec = match.groups()
    elided = len(input_shape) - len(input_spec)
    output = [output_shape] if isinstance(output_shape, int) else list(output_shape)
    output.insert(0, input_shape[0])
    if elided > 0 and left:
        for i in range(1, elided):
            output.insert(1, input_shape[i])
    elif elided > 0:
        output.extend(input_shape[len(input_shape) - elided:])
    if left:
        in_map = {d: (i + elided) - len(input_shape) for i, d in enumerate(input_spec)}
        out_map = {d: i + elided for i, d in enumerate(output_spec)}
    else:
        in_map = {d: i for i, d in enumerate(input_spec)}
        out_map = {d: i for i, d in enumerate(output_spec)}
    kernel = []
    for d in weight_spec:
        if d in out_map:
            kernel.append(output[out_map[d]])
        elif d in in_map:
            kernel.append(input_shape[in_map[d]])
        else:
            raise invalid("equation", f"every kernel axis in the input or the output ('{d}' is in "
                          f"neither)", equation)
    bias = None
    if bias_axes is not None:
        index = {c: output[i + (elided if left else 0)] for i, c in enumerate(output_spec)}
        if any(c not in output_spec for c in bias_axes):
            raise invalid("bias_axes", f"letters of the output spec '{output_spec}'", bias_axes)
        first = min(output_spec.find(c) for c in bias_axes)
        bias = [index[c] if c in bias_axes else 1 for c in output_spec[first:]]
        if not left:
            bias += [1] * elided
    return kernel, bias, output


class EinsumDense(Layer):
    """A dense layer written as an einsum (Keras's ``EinsumDense``): ``y = einsum(equation, x,
    kernel) (+ bias)``, e.g. ``"ab,bc->ac"`` is ``Dense``, ``"abc,cde->abde"`` projects the
    last axis of a sequence into (heads, size).

    Args:
        equation: ``"[X],[Y]->[Z]"`` (or with ``...`` on the left or right, as Keras).
        output_shape: the output shape without the batch axis (and the elided axes).
        activation, bias_axes (output letters that get a bias), kernel_initializer,
        bias_initializer: as Keras.

    Weights: ``kernel`` of the shape the equation's kernel letters give, **in Keras's own
    layout** (no PyTorch twin to follow), so Keras's weights copy as they are; ``bias``.
    """

    def __init__(self, equation, output_shape, activation=None, bias_axes=None,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros", **kwargs):
        super().__init__(**kwargs)
        self.equation = str(equation)
        self.partial_output_shape = output_shape if isinstance(output_shape, int) else \
            list(output_shape)
        self.activation = activations.get(activation)
        self.bias_axes = bias_axes
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel = self.bias = None

    def build(self, input_shape):
        kernel, bias, output = _analyze(self.equation, self.bias_axes, tuple(input_shape),
                                        self.partial_output_shape)
        self.full_output_shape = tuple(output)
        # Keras's fans for an einsum kernel: its own (in..., out...) layout, so reverse the
        # axes for minnet's (out, in) fan convention and back.
        self.kernel = self.add_weight("kernel", tuple(kernel),
                                      initializer=_keras_layout(self.kernel_initializer))
        if bias is not None:
            self.bias = self.add_weight("bias", tuple(bias), initializer=self.bias_initializer)
        super().build(input_shape)

    def call(self, x, training=False):
        y = einsum(self.equation, x, self.kernel)
        if self.bias is not None:
            y = y + self.bias
        return self.activation(y)

    def compute_output_shape(self, input_shape):
        _, _, output = _analyze(self.equation, self.bias_axes, tuple(input_shape),
                                self.partial_output_shape)
        return tuple(output)

    def get_config(self):
        return {**super().get_config(), "equation": self.equation,
                "output_shape": self.partial_output_shape,
                "activation": activations.serialize(self.activation), "bias_axes": self.bias_axes,
                "kernel_initializer": initializers.serialize(self.kernel_initializer),
                "bias_initializer": initializers.serialize(self.bias_initializer)}


def _keras_layout(initializer):
    """An initializer for a weight in Keras's ``(..., in, out)`` layout: minnet's fans read
    ``(out, in, ...)``, so draw the reversed shape and transpose back."""
    def init(shape, dtype=None):
        return np.ascontiguousarray(np.transpose(initializer(tuple(shape)[::-1], dtype)))
    return init
