"""Keras's FFT ops on real tensors: a complex tensor is the pair ``(real, imag)``, as in
``keras.ops.fft``. Each transform is a product with the DFT matrices ``C = cos(2πkn/N)``
and ``S = sin(2πkn/N)`` (for ``a + ib``: ``Re = aC + bS``, ``Im = bC - aS``), so it is
differentiable; the cost is O(N²) per transformed axis, fine for the short signals of
coursework.
"""
import numpy as np

from minnet.autograd import Tensor

from . import _np_shape
from ._dispatch import cast_to, convert, keras_op, promote, to_float

__all__ = ["fft", "fft2", "ifft2", "rfft", "irfft", "stft", "istft"]


def _pair(x, name="x"):
    if not isinstance(x, (tuple, list)) or len(x) != 2:
        raise ValueError(f"Invalid argument `{name}`: expected a tuple (real, imag) of two tensors. "
                         f"Received: {type(x).__name__}")
    real, imag = (to_float(convert(v)) for v in x)
    if tuple(real.shape) != tuple(imag.shape):
        raise ValueError(f"Invalid argument `{name}`: real and imaginary parts must have the same shape. "
                         f"Received: {real.shape} and {imag.shape}")
    dtype = promote(real, imag)
    return cast_to(real, dtype), cast_to(imag, dtype)


def _cs(n_in, n_out, dtype):
    k = np.arange(n_out)[None, :] * np.arange(n_in)[:, None]
    angle = 2 * np.pi * (k % max(n_in, 1)) / max(n_in, 1)
    return Tensor(np.cos(angle).astype(dtype)), Tensor(np.sin(angle).astype(dtype))


def _dft_last(real, imag, inverse=False):
    n = real.shape[-1]
    c, s = _cs(n, n, real.dtype)
    if inverse:
        return (real @ c - imag @ s) * (1.0 / n), (imag @ c + real @ s) * (1.0 / n)
    return real @ c + imag @ s, imag @ c - real @ s


def _on_axis(fn, real, imag, axis):
    real, imag = real.transpose(axis, -1), imag.transpose(axis, -1)
    out_r, out_i = fn(real, imag)
    return out_r.transpose(axis, -1), out_i.transpose(axis, -1)


@keras_op("[x]")
def fft(x):
    """The DFT along the last axis of ``x = (real, imag)``; returns ``(real, imag)``."""
    return _dft_last(*_pair(x))


@keras_op("[x]")
def fft2(x):
    """The 2-D DFT over the last two axes of ``x = (real, imag)``."""
    real, imag = _dft_last(*_pair(x))
    return _on_axis(_dft_last, real, imag, -2)


@keras_op("[x]")
def ifft2(x):
    real, imag = _pair(x)
    real, imag = _dft_last(real, imag, inverse=True)
    return _on_axis(lambda r, i: _dft_last(r, i, inverse=True), real, imag, -2)


def _fit_length(t, n):
    """``t`` cut or zero-padded to ``n`` entries along the last axis."""
    size = t.shape[-1]
    if size >= n:
        return t[..., :n]
    return _np_shape.pad(t, [(0, 0)] * (t.ndim - 1) + [(0, n - size)])


@keras_op("x")
def rfft(x, fft_length=None):
    """The DFT of the real ``x`` along its last axis: ``fft_length // 2 + 1`` frequencies."""
    x = to_float(convert(x))
    n = x.shape[-1] if fft_length is None else int(fft_length)
    x = _fit_length(x, n)
    c, s = _cs(n, n // 2 + 1, x.dtype)
    return x @ c, -(x @ s)


@keras_op("[x]")
def irfft(x, fft_length=None):
    """The inverse of ``rfft``: a real signal of ``fft_length`` (default ``2 * (m - 1)``)."""
    real, imag = _pair(x)
    m = real.shape[-1]
    n = 2 * (m - 1) if fft_length is None else int(fft_length)
    bins = n // 2 + 1
    real, imag = _fit_length(real, bins), _fit_length(imag, bins)
    weight = np.full(bins, 2.0)
    weight[0] = 1.0
    if n % 2 == 0:
        weight[-1] = 1.0
    angle = 2 * np.pi * np.arange(bins)[:, None] * np.arange(n)[None, :] / n
    c = Tensor((np.cos(angle) * weight[:, None] / n).astype(real.dtype))
    s = Tensor((np.sin(angle) * weight[:, None] / n).astype(real.dtype))
    return real @ c - imag @ s


def _window(window, length, dtype):
    if window is None:
        return np.ones(length, dtype)
    if isinstance(window, str):
        if window not in ("hann", "hamming"):
            raise ValueError(f"Invalid argument `window`: expected 'hann', 'hamming', a tensor or None. "
                             f"Received: window={window!r}")
        n = np.arange(length)
        a = 0.5 if window == "hann" else 0.54
        return (a - (1 - a) * np.cos(2 * np.pi * n / length)).astype(dtype)     # periodic, as torch
    win = np.asarray(convert(window).data, dtype)
    if win.shape != (length,):
        raise ValueError(f"Invalid argument `window`: expected shape ({length},) (sequence_length). "
                         f"Received: shape {win.shape}")
    return win


@keras_op("x")
def stft(x, sequence_length, sequence_stride, fft_length, window="hann", center=True):
    """Short-time Fourier transform (``torch.stft`` framing): ``(real, imag)`` of shape
    ``(..., frames, fft_length // 2 + 1)``."""
    x = convert(x)
    if x.dtype not in (np.float32, np.float64):
        raise TypeError(f"Invalid argument `x`: expected float32 or float64. Received: dtype={x.dtype}")
    if fft_length < sequence_length:
        raise ValueError(f"Invalid argument `fft_length`: must be >= sequence_length. Received: "
                         f"sequence_length={sequence_length}, fft_length={fft_length}")
    win = _window(window, int(sequence_length), x.dtype)
    left = (fft_length - sequence_length) // 2
    win = np.pad(win, (left, fft_length - sequence_length - left))
    if center:
        x = _np_shape.pad(x, [(0, 0)] * (x.ndim - 1) + [(fft_length // 2, fft_length // 2)], mode="reflect")
    n_frames = 1 + (x.shape[-1] - fft_length) // int(sequence_stride)
    index = np.arange(n_frames)[:, None] * int(sequence_stride) + np.arange(fft_length)[None, :]
    frames = x[..., index] * Tensor(win)
    return rfft(frames, fft_length)


def _overlap_add(frames, stride):
    """Sum the frames ``(..., N, L)`` into a signal, frame ``i`` starting at ``i * stride``."""
    n, length = frames.shape[-2], frames.shape[-1]
    total = stride * (n - 1) + length
    place = np.zeros((n * length, total), frames.dtype)
    rows = np.arange(n * length)
    place[rows, (rows // length) * stride + rows % length] = 1.0
    return frames.reshape(*frames.shape[:-2], n * length) @ Tensor(place)


@keras_op("[x]")
def istft(x, sequence_length, sequence_stride, fft_length, length=None, window="hann", center=True):
    """The inverse of ``stft`` from ``(real, imag)`` frames ``(..., frames, bins)``, with
    Keras's two rules: ``torch.istft`` (window-squared envelope) when ``sequence_length ==
    fft_length`` and ``center``, else TensorFlow's ``inverse_stft_window_fn`` normalisation."""
    real, imag = _pair(x)
    stride, n_fft = int(sequence_stride), int(fft_length)
    frames = irfft((real, imag), n_fft)
    win = None if window is None else _window(window, int(sequence_length), frames.dtype)
    if win is not None:
        left = (n_fft - int(sequence_length)) // 2
        win = np.pad(win, (left, n_fft - int(sequence_length) - left))
    if win is not None and int(sequence_length) == n_fft and center:
        signal = _overlap_add(frames * Tensor(win), stride)
        envelope = _overlap_add(Tensor(np.broadcast_to(win * win, frames.shape[-2:]).copy()), stride).data
        signal = signal / Tensor(np.where(envelope > 1e-11, envelope, 1.0))
        start = n_fft // 2
        end = start + int(length) if length is not None else signal.shape[-1] - n_fft // 2
        if end > signal.shape[-1]:
            signal = _np_shape.pad(signal, [(0, 0)] * (signal.ndim - 1) + [(0, end - signal.shape[-1])])
        return signal[..., start:end]
    if win is not None:
        overlaps = -(-n_fft // stride)
        denom = np.pad(win * win, (0, overlaps * stride - n_fft)).reshape(overlaps, stride).sum(0)
        frames = frames * Tensor((win / np.tile(denom, overlaps)[:n_fft]).astype(frames.dtype))
    signal = _overlap_add(frames, stride)
    start = n_fft // 2 if center else 0
    if length is not None:
        end = start + int(length)
    elif center:
        end = signal.shape[-1] - n_fft // 2
    else:
        end = n_fft + stride * (frames.shape[-2] - 1)
    return signal[..., start:end]
