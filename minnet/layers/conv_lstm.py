"""``ConvLSTM1D``, ``ConvLSTM2D``, ``ConvLSTM3D`` (Shi et al. 2015), Keras 3's: an LSTM whose
input and recurrent transforms are convolutions, over sequences of 1-D, 2-D or 3-D frames
``(batch, time, *spatial, channels)`` (channels_first ``(batch, time, channels, *spatial)``).

Per step, with Keras's gate order i, f, c, o::

    z = conv(x_t, kernel) + conv_same(h, recurrent_kernel) + bias       (4 * filters channels)
    i, f, o = recurrent_activation(z_i, z_f, z_o);  c = f * c + i * activation(z_c)
    h = o * activation(c)

The input convolution runs once over all steps (time folded into the batch), with the
layer's ``strides``/``padding``/``dilation_rate`` (Keras's ``"same"``: the odd pad at the
end); the recurrent one is ``"same"`` at stride 1 every step. Both are minnet's conv2d /
conv3d kernels; the backward is the autograd's. Weights keep PyTorch's convolution layouts:
``kernel`` ``(4F, C, *k)``, ``recurrent_kernel`` ``(4F, F, *k)``, ``bias`` ``(4F,)``; a Keras
kernel ``(*k, C, 4F)`` converts with ``np.transpose(k, (r + 1, r, 0, ..., r - 1))``.
"""
import numpy as np

from minnet import _random, activations, config, initializers
from minnet import functional as F
from minnet._checks import check_float, check_int, check_int_tuple, check_padding
from minnet.autograd import Tensor, stack
from minnet.layers.base import Layer
from minnet.layers.convolutional import same_padding

__all__ = ["ConvLSTM1D", "ConvLSTM2D", "ConvLSTM3D"]


def _conv(x, w, stride, pads, dilation, data_format, rank):
    """One convolution of ``rank`` spatial axes (1-D runs as 2-D of height 1)."""
    if rank == 3:
        return F.conv3d(x, w, stride=stride, padding=pads, dilation=dilation,
                        data_format=data_format)
    if rank == 2:
        return F.conv2d(x, w, stride=stride, padding=pads, dilation=dilation,
                        data_format=data_format)
    last = data_format == "channels_last"
    x4 = x.reshape(x.shape[0], 1, *x.shape[1:]) if last else x.reshape(x.shape[0], x.shape[1], 1,
                                                                        x.shape[2])
    y = F.conv2d(x4, w.reshape(*w.shape[:2], 1, w.shape[2]), stride=(1,) + tuple(stride),
                 padding=((0, 0),) + tuple(pads), dilation=(1,) + tuple(dilation),
                 data_format=data_format)
    return y.reshape(y.shape[0], *y.shape[2:]) if last else y.reshape(y.shape[0], y.shape[1],
                                                                       y.shape[3])


class _ConvLSTM(Layer):
    rank = 2
    # Keras's kernel_/recurrent_/bias_ options (layers/weight_options.py)
    weight_option_targets = {"kernel": ("kernel",), "recurrent": ("recurrent_kernel",), "bias": ("bias",)}

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None,
                 dilation_rate=1, activation="tanh", recurrent_activation="sigmoid",
                 use_bias=True, kernel_initializer="glorot_uniform",
                 recurrent_initializer="orthogonal", bias_initializer="zeros",
                 unit_forget_bias=True, dropout=0.0, recurrent_dropout=0.0, seed=None,
                 return_sequences=False, return_state=False, go_backwards=False, stateful=False,
                 **kwargs):
        super().__init__(**kwargs)
        r = self.rank
        self.filters = check_int("filters", filters, 1)
        self.kernel_size = check_int_tuple("kernel_size", kernel_size, r, error=ValueError)
        self.strides = check_int_tuple("strides", strides, r, error=ValueError)
        self.padding = check_padding("padding", padding, r, error=ValueError)
        if not isinstance(self.padding, str):
            raise ValueError(f"Invalid value for argument `padding`: expected 'valid' or 'same'. "
                             f"Received: padding={padding!r}")
        self.data_format = config.normalize_data_format(data_format)
        self.dilation_rate = check_int_tuple("dilation_rate", dilation_rate, r, error=ValueError)
        if max(self.strides) > 1 and max(self.dilation_rate) > 1:
            raise ValueError(f"Specifying `strides > 1` is not compatible with `dilation_rate > "
                             f"1`. Received: strides={self.strides} and "
                             f"dilation_rate={self.dilation_rate}")
        self.activation = activations.get(activation)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.recurrent_initializer = initializers.get(recurrent_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.unit_forget_bias = bool(unit_forget_bias)
        self.dropout = check_float("dropout", dropout, 0.0, 1.0, high_open=True)
        self.recurrent_dropout = check_float("recurrent_dropout", recurrent_dropout, 0.0, 1.0,
                                             high_open=True)
        self.seed = seed
        self._stream = _random.stream_for(seed)     # Keras's seed=: the masks' own stream
        self.return_sequences = bool(return_sequences)
        self.return_state = bool(return_state)
        self.go_backwards = bool(go_backwards)
        if stateful:
            raise ValueError(f"Invalid value for argument `stateful`: {type(self).__name__} in "
                             f"minnet keeps no state between batches (pass the states with "
                             f"`initial_state=` and `return_state=True`). Received: stateful=True")
        self.stateful = False

    @property
    def _channels_last(self):
        return self.data_format == "channels_last"

    def _split(self, shape):
        """(batch, time, channels, spatial) of a sequence shape."""
        if self._channels_last:
            return shape[0], shape[1], shape[-1], tuple(shape[2:-1])
        return shape[0], shape[1], shape[2], tuple(shape[3:])

    def _input_pads(self, spatial):
        if self.padding == "valid":
            return ((0, 0),) * self.rank
        return same_padding(spatial, self.kernel_size, self.strides, self.dilation_rate)

    def _out_spatial(self, spatial):
        pads = self._input_pads([s or 1 for s in spatial])
        out = []
        for size, k, s, d, (a, b) in zip(spatial, self.kernel_size, self.strides,
                                         self.dilation_rate, pads):
            out.append(None if size is None else (size + a + b - d * (k - 1) - 1) // s + 1)
        return tuple(out)

    def build(self, input_shape):
        shape = tuple(input_shape)
        if len(shape) != self.rank + 3:
            raise ValueError(f"Input 0 of layer '{self.name}' is incompatible with the layer: "
                             f"expected ndim={self.rank + 3} (batch, time, "
                             f"{'*spatial, channels' if self._channels_last else 'channels, *spatial'}"
                             f"), found ndim={len(shape)}. Full shape received: {shape}")
        _, _, channels, spatial = self._split(shape)
        if channels is None or None in spatial:
            raise ValueError(f"Layer '{self.name}' needs known channels and spatial sizes. "
                             f"Received input_shape={shape}")
        if any(s is not None and s < 1 for s in self._out_spatial(spatial)):
            raise ValueError(f"Layer '{self.name}': the kernel {self.kernel_size} does not fit "
                             f"the frames {spatial} with padding={self.padding!r}.")
        self.input_dim = int(channels)
        f = self.filters
        self.kernel = self.add_weight("kernel", (4 * f, self.input_dim) + self.kernel_size,
                                      initializer=self.kernel_initializer)
        self.recurrent_kernel = self.add_weight(
            "recurrent_kernel", (4 * f, f) + self.kernel_size,
            initializer=self.recurrent_initializer)
        if self.use_bias:
            self.bias = self.add_weight("bias", (4 * f,), initializer=self.bias_initializer)
            if self.unit_forget_bias:
                self.bias.data[f:2 * f] = 1.0
        else:
            self.bias = None
        super().build(input_shape)

    def _gates_bias(self, z):
        if self.bias is None:
            return z
        return z + (self.bias if self._channels_last else
                    self.bias.reshape(4 * self.filters, *([1] * self.rank)))

    def call(self, sequences, initial_state=None, mask=None, training=False):
        if mask is not None:
            raise ValueError(f"Layer '{self.name}' does not take a mask (minnet's ConvLSTM runs "
                             f"every step). Received a mask of shape {np.shape(mask)}")
        self._check_input(sequences, ndim=self.rank + 3,
                          axis=sequences.ndim - 1 if self._channels_last else 2,
                          size=self.input_dim)
        n, steps, channels, spatial = self._split(tuple(sequences.shape))
        x = sequences
        if training and self.dropout > 0:       # one mask per sequence, shared by the gates
            with _random.drawing_from(self._stream):
                keep = F.dropout(Tensor(np.ones((n, 1) + tuple(x.shape[2:]), x.dtype)), self.dropout)
            x = x * keep
        frames = x.reshape(n * steps, *x.shape[2:])
        z_x = _conv(frames, self.kernel, self.strides, self._input_pads(spatial),
                    self.dilation_rate, self.data_format, self.rank)
        z_x = self._gates_bias(z_x)
        z_x = z_x.reshape(n, steps, *z_x.shape[1:])
        state_shape = tuple(z_x.shape[2:])
        state_shape = state_shape[:-1] + (self.filters,) if self._channels_last else \
            (self.filters,) + state_shape[1:]
        if initial_state is None:
            h = Tensor(np.zeros((n,) + state_shape, x.dtype))
            c = Tensor(np.zeros((n,) + state_shape, x.dtype))
        else:
            h, c = (s if isinstance(s, Tensor) else Tensor(np.asarray(s, x.dtype))
                    for s in initial_state)
        rec_mask = None
        if training and self.recurrent_dropout > 0:
            with _random.drawing_from(self._stream):
                rec_mask = F.dropout(Tensor(np.ones((n,) + state_shape, x.dtype)),
                                     self.recurrent_dropout)
        same = same_padding(self._out_spatial(spatial), self.kernel_size, (1,) * self.rank,
                            (1,) * self.rank)
        axis = -1 if self._channels_last else 1
        f = self.filters
        order = range(steps - 1, -1, -1) if self.go_backwards else range(steps)
        outputs = []
        for t in order:
            h_in = h if rec_mask is None else h * rec_mask
            z = z_x[:, t] + _conv(h_in, self.recurrent_kernel, (1,) * self.rank, same,
                                  (1,) * self.rank, self.data_format, self.rank)
            parts = [z[(slice(None),) * (z.ndim - 1) + (slice(g * f, (g + 1) * f),)]
                     if axis == -1 else z[:, g * f:(g + 1) * f] for g in range(4)]
            i = self.recurrent_activation(parts[0])
            forget = self.recurrent_activation(parts[1])
            c = forget * c + i * self.activation(parts[2])
            o = self.recurrent_activation(parts[3])
            h = o * self.activation(c)
            if self.return_sequences:
                outputs.append(h)
        y = stack(outputs, 1) if self.return_sequences else h
        if self.return_state:
            return [y, h, c]
        return y

    def compute_output_shape(self, input_shape):
        shape = tuple(input_shape)
        n, steps, _, spatial = self._split(shape)
        out = self._out_spatial(spatial)
        state = out + (self.filters,) if self._channels_last else (self.filters,) + out
        y = (n, steps) + state if self.return_sequences else (n,) + state
        if self.return_state:
            return [y, (n,) + state, (n,) + state]
        return y

    def get_config(self):
        return {**super().get_config(), "filters": self.filters,
                "kernel_size": list(self.kernel_size), "strides": list(self.strides),
                "padding": self.padding, "data_format": self.data_format,
                "dilation_rate": list(self.dilation_rate),
                "activation": activations.serialize(self.activation),
                "recurrent_activation": activations.serialize(self.recurrent_activation),
                "use_bias": self.use_bias,
                "kernel_initializer": initializers.serialize(self.kernel_initializer),
                "recurrent_initializer": initializers.serialize(self.recurrent_initializer),
                "bias_initializer": initializers.serialize(self.bias_initializer),
                "unit_forget_bias": self.unit_forget_bias, "dropout": self.dropout,
                "recurrent_dropout": self.recurrent_dropout, "seed": self.seed,
                "return_sequences": self.return_sequences, "return_state": self.return_state,
                "go_backwards": self.go_backwards, "stateful": False}


class ConvLSTM1D(_ConvLSTM):
    """ConvLSTM over sequences of 1-D frames ``(batch, time, length, channels)``."""
    rank = 1


class ConvLSTM2D(_ConvLSTM):
    """ConvLSTM over sequences of images ``(batch, time, height, width, channels)``.

    Example:
        >>> layer = layers.ConvLSTM2D(4, 3, padding="same", return_sequences=True)
        >>> layer(np.zeros((2, 5, 8, 8, 1), np.float32)).shape
        (2, 5, 8, 8, 4)
    """
    rank = 2


class ConvLSTM3D(_ConvLSTM):
    """ConvLSTM over sequences of volumes ``(batch, time, depth, height, width, channels)``."""
    rank = 3
