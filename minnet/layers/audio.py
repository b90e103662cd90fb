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

from minnet import config, initializers, ops
from minnet._checks import check_choice, check_int, check_float, invalid
from minnet._utils import get_window
from minnet.layers.base import Layer

__all__ = ["STFTSpectrogram", "MelSpectrogram", "mel_weight_matrix"]

# HTK's mel scale, as Keras (and TensorFlow) write it: mel(f) = 1127 ln(1 + f / 700).
_MEL_BREAK_FREQUENCY_HERTZ = 700.0
_MEL_HIGH_FREQUENCY_Q = 1127.0
_MODES = ("log", "magnitude", "psd", "real", "imag", "angle", "stft")


def _check_window(window):
    if isinstance(window, str):
        get_window(window, 1)      # raises on an unknown window name
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



def _hertz_to_mel(frequencies):
    return _MEL_HIGH_FREQUENCY_Q * np.log(1.0 + frequencies / _MEL_BREAK_FREQUENCY_HERTZ)


def mel_weight_matrix(num_mel_bins, num_spectrogram_bins, sampling_rate, lower_edge_hertz,
                      upper_edge_hertz):
    """Keras's (TensorFlow's) ``linear_to_mel_weight_matrix``, ``(spectrogram bins, mel bins)``.

    Bin ``j`` of the spectrogram sits at ``f_j = j * (sampling_rate / 2) / (bins - 1)``; band
    ``m`` is the triangle over ``[e_m, e_{m+2}]`` peaking at ``e_{m+1}`` (value 1), the edges
    ``e`` equally spaced in mel from ``mel(lower_edge_hertz)`` to ``mel(upper_edge_hertz)``:
    ``W[j, m] = max(0, min((mel(f_j) - e_m) / (e_{m+1} - e_m), (e_{m+2} - mel(f_j)) / (e_{m+2} -
    e_{m+1})))``, and the DC row is 0. Computed in float64.
    """
    frequencies = np.linspace(0.0, sampling_rate / 2.0, num_spectrogram_bins)[1:]
    bins_mel = _hertz_to_mel(frequencies)[:, None]
    edges = np.linspace(_hertz_to_mel(float(lower_edge_hertz)),
                        _hertz_to_mel(float(upper_edge_hertz)), num_mel_bins + 2)
    lower, center, upper = edges[:-2][None], edges[1:-1][None], edges[2:][None]
    weights = np.maximum(0.0, np.minimum((bins_mel - lower) / (center - lower),
                                         (upper - bins_mel) / (upper - center)))
    return np.pad(weights, [(1, 0), (0, 0)])


class MelSpectrogram(Layer):
    """Mel-scaled power spectrogram, in decibels by default: Keras's ``MelSpectrogram``.

    ``S = |stft(x)| ** mag_exp`` (``ops.stft`` with ``center=True``: the signal is reflected
    by ``fft_length // 2`` at both ends, frames of ``sequence_length`` samples every
    ``sequence_stride``, a periodic window zero-padded to ``fft_length``), ``M = S @ W`` with
    the mel filter bank ``W`` of ``mel_weight_matrix``, and with ``power_to_db``
    ``D = 10 log10(max(M, min_power)) - 10 log10(max(|ref_power|, min_power))`` clipped from
    below at ``max(D) - top_db`` (the maximum over the whole batch, as Keras). Differentiable
    (every step is a minnet op), unlike a NumPy preprocessing step.

    Args:
        fft_length (2048), sequence_stride (512), sequence_length (None: ``fft_length``; at
        most ``fft_length``), window (``"hann"``, ``"hamming"``, an array of
        ``sequence_length`` values or None), sampling_rate (16000), num_mel_bins (128),
        min_freq (20.0), max_freq (None: ``sampling_rate // 2``), power_to_db (True), top_db
        (80.0; None: no clipping), mag_exp (2.0: power; 1.0: magnitude), min_power (1e-10),
        ref_power (1.0): as Keras.

    Shape:
        ``(batch, samples)`` -> ``(batch, num_mel_bins, frames)``, or ``(samples,)`` ->
        ``(num_mel_bins, frames)``, with ``frames = 1 + samples // sequence_stride`` for an
        even ``fft_length``.

    Example:
        >>> layer = MelSpectrogram(num_mel_bins=64, sampling_rate=8000, sequence_stride=256,
        ...                        fft_length=2048)
        >>> layer(np.zeros((2, 16000), "float32")).shape
        (2, 64, 63)
    """

    def __init__(self, fft_length=2048, sequence_stride=512, sequence_length=None,
                 window="hann", sampling_rate=16000, num_mel_bins=128, min_freq=20.0,
                 max_freq=None, power_to_db=True, top_db=80.0, mag_exp=2.0, min_power=1e-10,
                 ref_power=1.0, **kwargs):
        super().__init__(**kwargs)
        self.fft_length = check_int("fft_length", fft_length, minimum=1)
        self.sequence_stride = check_int("sequence_stride", sequence_stride, minimum=1)
        self.sequence_length = check_int("sequence_length", sequence_length or fft_length,
                                         minimum=1, maximum=self.fft_length)
        if isinstance(window, str):
            check_choice("window", window, ("hann", "hamming"))
        self.window = _check_window(window)
        self.sampling_rate = check_float("sampling_rate", sampling_rate, low=0, low_open=True)
        if float(sampling_rate).is_integer():
            self.sampling_rate = int(sampling_rate)
        self.num_mel_bins = check_int("num_mel_bins", num_mel_bins, minimum=1)
        self.min_freq = check_float("min_freq", min_freq, low=0)
        self.max_freq = check_float("max_freq", max_freq or int(self.sampling_rate / 2),
                                    low=self.min_freq, low_open=True)
        self.power_to_db = bool(power_to_db)
        self.top_db = None if top_db is None else check_float("top_db", top_db, low=0)
        self.mag_exp = check_float("mag_exp", mag_exp)
        self.min_power = check_float("min_power", min_power, low=0, low_open=True)
        self.ref_power = check_float("ref_power", ref_power)

    def _n_frames(self, samples):
        return 1 + (samples + 2 * (self.fft_length // 2) - self.fft_length) // self.sequence_stride

    def call(self, x, training=False):
        if x.ndim not in (1, 2):
            raise ValueError(f"Layer '{self.name}' expects inputs of shape (batch, samples) or "
                             f"(samples,). Received: input shape {tuple(x.shape)}")
        if x.shape[-1] <= self.fft_length // 2:
            raise ValueError(f"Layer '{self.name}': the signal must be longer than fft_length // 2 "
                             f"= {self.fft_length // 2} samples (it is reflected by that much at "
                             f"both ends). Received: {x.shape[-1]} samples")
        real, imag = ops.stft(x, self.sequence_length, self.sequence_stride, self.fft_length,
                              window=self.window, center=True)
        spectrogram = ops.power(ops.sqrt(real * real + imag * imag), self.mag_exp)
        weights = mel_weight_matrix(self.num_mel_bins, spectrogram.shape[-1], self.sampling_rate,
                                    self.min_freq, self.max_freq)
        mel = ops.tensordot(spectrogram, weights.astype(spectrogram.dtype), axes=1)
        if self.power_to_db:
            db = 10.0 * ops.log10(ops.maximum(mel, self.min_power))
            db = db - 10.0 * math.log10(max(abs(self.ref_power), self.min_power))
            if self.top_db is not None:
                db = ops.maximum(db, ops.max(db).detach() - self.top_db)
            mel = db
        return ops.swapaxes(mel, -1, -2)

    def compute_output_shape(self, input_shape):
        input_shape = tuple(input_shape)
        samples = input_shape[-1]
        frames = None if samples is None else self._n_frames(samples)
        return input_shape[:-1] + (self.num_mel_bins, frames)

    def get_config(self):
        window = self.window.tolist() if isinstance(self.window, np.ndarray) else self.window
        return {**super().get_config(), "fft_length": self.fft_length,
                "sequence_stride": self.sequence_stride, "sequence_length": self.sequence_length,
                "window": window, "sampling_rate": self.sampling_rate,
                "num_mel_bins": self.num_mel_bins, "min_freq": self.min_freq,
                "max_freq": self.max_freq, "power_to_db": self.power_to_db, "top_db": self.top_db,
                "mag_exp": self.mag_exp, "min_power": self.min_power, "ref_power": self.ref_power}
