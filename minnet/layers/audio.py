"""Audio layers, Keras 3's: ``STFTSpectrogram`` (the STFT as two strided convolutions with
fixed, trainable kernels) and ``MelSpectrogram`` (``ops.stft`` -> power -> mel filter bank ->
decibels). Both are compositions of differentiable minnet ops (``ops.conv``, ``ops.stft``),
so gradients flow through them; the math is in docs/math/audio.md.

minnet keeps PyTorch's convolution kernel layout, so ``STFTSpectrogram.real_kernel`` and
``imag_kernel`` are ``(bins, 1, frame_length)``, the transpose of Keras's
``(frame_length, 1, bins)`` (``get_weights``/``set_weights`` use minnet's layout, the
``.keras`` reader and writer transpose).
"""
import math
import warnings

import numpy as np
import scipy.signal

from minnet import config, initializers, ops
from minnet._checks import check_choice, check_int, check_float, invalid
from minnet.layers.base import Layer

__all__ = ["STFTSpectrogram"]

_MODES = ("log", "magnitude", "psd", "real", "imag", "angle", "stft")


def _check_window(window):
    if isinstance(window, str):
        scipy.signal.get_window(window, 1)      # raises on an unknown window name
        return window
    if window is None:
        return None
    window = np.asarray(window, dtype=np.float64)
    if window.ndim != 1:
        raise invalid("window", "a window name, None or a 1-D array", window)
    return window


class STFTSpectrogram(Layer):
    """Short-time Fourier transform of 1-D signals by convolution, Keras's ``STFTSpectrogram``.

    Args:
        mode: ``"log"`` (log magnitude, default), ``"magnitude"``, ``"psd"`` (power, the
            interior bins doubled), ``"real"``, ``"imag"``, ``"angle"`` (phase) or ``"stft"``
            (real then imaginary bins).
        frame_length: samples per frame (default 256).
        frame_step: hop between frames (default ``frame_length // 2``), in
            ``[1, frame_length]``.
        fft_length: DFT size, ``>= frame_length`` (default the next power of two).
        window: ``"hann"`` (default), any ``scipy.signal.get_window`` name, an array of
            ``frame_length`` values, or None.
        periodic: periodic (True) or symmetric (False, default) window.
        scaling: ``"density"`` (divide by ``sqrt(sum(w**2))``, default), ``"spectrum"``
            (by ``sum(|w|)``) or None.
        padding: ``"valid"`` (default) or ``"same"`` (Keras's convolution padding).
        expand_dims: put the channels on their own axis (an image for image models).
        data_format: ``"channels_last"`` ``(batch, time, channels)`` or ``"channels_first"``;
            None: ``mn.config.image_data_format()``.

    Shape:
        channels_last: ``(batch, time, channels)`` -> ``(batch, frames, channels * bins')``,
        or ``(batch, frames, bins', channels)`` with ``expand_dims``; channels_first:
        ``(batch, channels * bins', frames)`` or ``(batch, channels, frames, bins')``;
        ``bins' = fft_length // 2 + 1`` (twice that for ``"stft"``).

    Weights: ``real_kernel`` (not for ``"imag"``) and ``imag_kernel`` (not for ``"real"``),
    ``(bins, 1, frame_length)``, trainable as in Keras (pass ``trainable=False`` to keep them).

    Example:
        >>> layer = STFTSpectrogram(mode="log", frame_length=256, frame_step=128, fft_length=512)
        >>> layer(np.zeros((3, 16000, 1), "float32")).shape
        (3, 124, 257)
    """

    def __init__(self, mode="log", frame_length=256, frame_step=None, fft_length=None,
                 window="hann", periodic=False, scaling="density", padding="valid",
                 expand_dims=False, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.frame_length = check_int("frame_length", frame_length, minimum=1)
        if frame_step is not None:
            frame_step = check_int("frame_step", frame_step, minimum=1, maximum=self.frame_length)
        if fft_length is not None:
            fft_length = check_int("fft_length", fft_length, minimum=self.frame_length)
            if fft_length & -fft_length != fft_length:
                warnings.warn(f"`fft_length` is recommended to be a power of two. "
                              f"Received fft_length={fft_length}", stacklevel=2)
        self.mode = check_choice("mode", mode, _MODES)
        if scaling is not None:
            check_choice("scaling", scaling, ("density", "spectrum", None))
        self.frame_step, self.fft_length = frame_step, fft_length
        self._frame_step = frame_step or self.frame_length // 2
        if self._frame_step < 1:
            raise invalid("frame_step", "given when frame_length is 1 (frame_length // 2 is 0)",
                          frame_step)
        self._fft_length = fft_length or 2 ** int(math.ceil(math.log2(self.frame_length)))
        self.window = _check_window(window)
        self.periodic = bool(periodic)
        self.scaling = scaling
        self.padding = check_choice("padding", padding, ("valid", "same"))
        self.expand_dims = bool(expand_dims)
        self.data_format = config.normalize_data_format(data_format)
        self.real_kernel = None
        self.imag_kernel = None

    @property
    def _bins(self):
        return self._fft_length // 2 + 1

    def build(self, input_shape):
        input_shape = tuple(input_shape)
        if len(input_shape) != 3:
            raise ValueError(f"Layer '{self.name}' expects 3-D inputs "
                             f"{'(batch, time, channels)' if self.data_format == 'channels_last' else '(batch, channels, time)'}."
                             f" Received input_shape={input_shape}")
        shape = (self._bins, 1, self.frame_length)          # minnet's (PyTorch's) conv layout
        for side in ("real", "imag"):
            if self.mode != ("imag" if side == "real" else "real"):
                init = initializers.STFT(side, self.window, self.scaling, self.periodic,
                                         layout="conv")
                setattr(self, f"{side}_kernel", self.add_weight(f"{side}_kernel", shape, init))

    def _conv(self, x, kernel):
        """``x`` as ``(batch * channels, 1, time)`` through one kernel -> ``(batch, channels, bins, frames)``."""
        if self.data_format == "channels_last":
            batch, time, channels = x.shape
            x = x.permute(0, 2, 1)
        else:
            batch, channels, time = x.shape
        x = x.reshape(batch * channels, 1, time)
        keras_kernel = ops.cast(kernel, x.dtype).permute(2, 1, 0)   # (frame_length, 1, bins)
        out = ops.conv(x, keras_kernel, strides=self._frame_step, padding=self.padding,
                       data_format="channels_first")
        return out.reshape(batch, channels, out.shape[1], out.shape[2])

    def _arrange(self, out):
        """``(batch, channels, bins, frames)`` -> the layer's output layout."""
        batch, channels, bins, frames = out.shape
        if self.expand_dims:
            return out.permute(0, 3, 2, 1) if self.data_format == "channels_last" \
                else out.permute(0, 1, 3, 2)
        out = out.reshape(batch, channels * bins, frames)
        return out.permute(0, 2, 1) if self.data_format == "channels_last" else out

    def call(self, x, training=False):
        real = self._conv(x, self.real_kernel) if self.mode != "imag" else None
        imag = self._conv(x, self.imag_kernel) if self.mode != "real" else None
        if self.mode == "real":
            return self._arrange(real)
        if self.mode == "imag":
            return self._arrange(imag)
        if self.mode == "angle":
            return self._arrange(ops.arctan2(imag, real))
        if self.mode == "stft":
            return self._arrange(ops.concatenate([real, imag], axis=2))
        power = real * real + imag * imag
        if self.mode == "psd":
            return self._arrange(power + ops.pad(power[:, :, 1:-1, :],
                                                 [[0, 0], [0, 0], [1, 1], [0, 0]]))
        eps = config.epsilon()
        magnitude = self._arrange(ops.sqrt(ops.maximum(power, eps)))
        if self.mode == "magnitude":
            return magnitude
        return ops.log(ops.maximum(magnitude, eps))

    def compute_output_shape(self, input_shape):
        batch = input_shape[0]
        time, channels = (input_shape[1], input_shape[2]) if self.data_format == "channels_last" \
            else (input_shape[2], input_shape[1])
        bins = self._bins * (2 if self.mode == "stft" else 1)
        if time is None:
            frames = None
        elif self.padding == "same":
            frames = -(-time // self._frame_step)
        else:
            frames = (time - self.frame_length) // self._frame_step + 1
        if self.expand_dims:
            return (batch, frames, bins, channels) if self.data_format == "channels_last" \
                else (batch, channels, frames, bins)
        features = None if channels is None else channels * bins
        return (batch, frames, features) if self.data_format == "channels_last" \
            else (batch, features, frames)

    def get_config(self):
        window = self.window.tolist() if isinstance(self.window, np.ndarray) else self.window
        return {**super().get_config(), "mode": self.mode, "frame_length": self.frame_length,
                "frame_step": self.frame_step, "fft_length": self.fft_length, "window": window,
                "periodic": self.periodic, "scaling": self.scaling, "padding": self.padding,
                "data_format": self.data_format, "expand_dims": self.expand_dims}

