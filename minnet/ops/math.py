"""``keras.ops`` math names (``keras.src.ops.math``): segment reductions, top-k, erf,
logsumexp, sequence framing, pairwise distances. The FFT ops take and return complex tensors as
``(real, imag)`` pairs, as Keras does."""
import numpy as np

from minnet.autograd import Tensor, cat

from ._dispatch import keras_op, promote, cast_to, to_float, wrap
from ._fft import fft, fft2, ifft2, irfft, istft, rfft, stft  # noqa: F401
from ._np_math import erf, erfc, erfinv, rsqrt  # noqa: F401
from ._np_reduce import in_top_k, logsumexp, top_k  # noqa: F401
from .linalg import logdet  # noqa: F401

__all__ = ["erf", "erfc", "erfinv", "rsqrt", "logsumexp", "top_k", "in_top_k", "logdet", "segment_sum",
           "segment_max", "segment_min", "segment_prod", "extract_sequences", "cdist", "fft", "fft2", "ifft2",
           "rfft", "irfft", "stft", "istft"]


def _segments(data, segment_ids, num_segments):
    ids = segment_ids.data.astype(np.int64)
    n = int(num_segments) if num_segments is not None else (int(ids.max()) + 1 if ids.size else 0)
    return ids, n


@keras_op("data", "segment_ids")
def segment_sum(data, segment_ids, num_segments=None, sorted=False):
    """Sums of the rows of ``data`` per segment id (ids outside [0, num_segments) dropped)."""
    ids, n = _segments(data, segment_ids, num_segments)
    keep = (ids >= 0) & (ids < n)
    onehot = (ids[keep][None, :] == np.arange(n)[:, None]).astype(to_float(data).dtype)
    rows = data[np.nonzero(keep)[0]] if not keep.all() else data
    if data.dtype.kind != "f":
        out = np.zeros((n,) + data.shape[1:], data.dtype)
        np.add.at(out, ids[keep], data.data[keep])
        return wrap(out)
    flat = rows.reshape(rows.shape[0], -1)
    return (Tensor(onehot) @ flat).reshape(n, *data.shape[1:])


def _segment_extreme(data, segment_ids, num_segments, largest):
    ids, n = _segments(data, segment_ids, num_segments)
    parts = []
    fill = np.finfo(data.dtype).min if largest else np.finfo(data.dtype).max
    for s in range(n):
        rows = np.nonzero(ids == s)[0]
        if rows.size:
            chosen = data[rows]
            parts.append((chosen.amax(0, True) if largest else chosen.amin(0, True)))
        else:
            parts.append(Tensor(np.full((1,) + data.shape[1:], fill, data.dtype)))
    return cat(parts, 0) if parts else Tensor(np.zeros((0,) + data.shape[1:], data.dtype))


@keras_op("data", "segment_ids")
def segment_max(data, segment_ids, num_segments=None, sorted=False):
    return _segment_extreme(to_float(data), segment_ids, num_segments, True)


@keras_op("data", "segment_ids")
def segment_min(data, segment_ids, num_segments=None, sorted=False):
    return _segment_extreme(to_float(data), segment_ids, num_segments, False)


@keras_op("data", "segment_ids")
def segment_prod(data, segment_ids, num_segments=None, sorted=False):
    ids, n = _segments(data, segment_ids, num_segments)
    data = to_float(data)
    parts = []
    for s in range(n):
        rows = np.nonzero(ids == s)[0]
        out = Tensor(np.ones((1,) + data.shape[1:], data.dtype))
        for r in rows:
            out = out * data[int(r):int(r) + 1]
        parts.append(out)
    return cat(parts, 0)


@keras_op("x")
def extract_sequences(x, sequence_length, sequence_stride):
    """Frames of ``sequence_length`` samples every ``sequence_stride`` along the last axis."""
    length, stride = int(sequence_length), int(sequence_stride)
    n_frames = 1 + (x.shape[-1] - length) // stride
    index = np.arange(n_frames)[:, None] * stride + np.arange(length)[None, :]
    return x[..., index]


@keras_op("x", "y")
def cdist(x, y):
    """Euclidean distances between the rows of ``x`` (..., P, M) and ``y`` (..., R, M)."""
    dtype = promote(to_float(x), to_float(y))
    x, y = cast_to(x, dtype), cast_to(y, dtype)
    diff = x.unsqueeze(-2) - y.unsqueeze(-3)
    return (diff * diff).sum(axis=-1).sqrt()
