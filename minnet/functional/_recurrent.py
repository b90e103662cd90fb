"""Recurrent ops: ``lstm``, ``gru``, ``rnn`` over whole sequences (PyTorch's layouts and gate orders).

Each op is one ``Function`` whose forward and backward are one call each into the fused
sequence kernels of ``minnet._ext.recurrent_kernels`` (the time loop runs in C). Inputs are
batch-first, ``(N, T, I)``. Weights are PyTorch's: ``weight_ih`` (G*H, I), ``weight_hh``
(G*H, H), ``bias_ih``/``bias_hh`` (G*H,), with G = 4 (LSTM: i, f, g, o), 3 (GRU: r, z, n)
or 1 (RNN). The math is in docs/math/recurrent.md.

A ``mask`` (N, T) of booleans (False = padded step) leaves the state unchanged at padded
steps, wherever they are; the output at a padded step is the state carried through it
(the last output, or the initial state before the first real step).
"""
import numpy as np

from minnet._config import get_num_threads
from minnet._checks import check_choice, invalid
from minnet._ext import embedding_kernels
from minnet._ext import recurrent_kernels as _kernels
from minnet.autograd import Function, Tensor

__all__ = ["lstm", "gru", "rnn", "embedding", "reverse_sequence", "concat_features"]

_MODES = {"lstm": _kernels.LSTM, "gru": _kernels.GRU, "rnn_tanh": _kernels.RNN_TANH,
          "rnn_relu": _kernels.RNN_RELU}
_NAMES = {_kernels.LSTM: "lstm", _kernels.GRU: "gru", _kernels.RNN_TANH: "rnn",
          _kernels.RNN_RELU: "rnn"}


class Recurrent(Function):
    """A whole recurrent layer over a sequence: outputs ``(y?, h_n, c_n?)``.

    ``y`` (N, T, H) is returned when ``return_sequences``; ``c_n`` for LSTM only.
    """

    node_name = "RecurrentBackward"

    @staticmethod
    def forward(ctx, x, weight_ih, weight_hh, bias_ih, bias_hh, h0, c0, mode=0, mask=None,
                reverse=False, return_sequences=True, recurrent_mask=None):
        x = np.ascontiguousarray(x)
        save = any(ctx.needs_input_grad)
        y, h_n, c_n, hprev, cprev, saved = _kernels.recurrent_forward(
            mode, x, weight_ih, weight_hh, bias_ih, bias_hh, h0, c0, mask, reverse,
            return_sequences, save, get_num_threads(), recurrent_mask)
        if save:
            # hprev holds [x_t | h_{t-1}] for every step: the input itself is not kept
            ctx.save_for_backward(weight_ih, weight_hh, hprev, cprev, saved)
            ctx.mode, ctx.mask, ctx.reverse = mode, mask, reverse
            ctx.recurrent_mask = recurrent_mask
            ctx.return_sequences = return_sequences
            ctx.has_bias = bias_ih is not None
        outputs = ([y] if return_sequences else []) + [h_n]
        if mode == _kernels.LSTM:
            outputs.append(c_n)
        return tuple(outputs)

    @staticmethod
    def backward(ctx, *grads):
        weight_ih, weight_hh, hprev, cprev, saved = ctx.saved_tensors
        mode = ctx.mode
        grads = list(grads)
        dy = grads.pop(0) if ctx.return_sequences else None
        dh_n = grads.pop(0)
        dc_n = grads.pop(0) if mode == _kernels.LSTM else None
        needs = ctx.needs_input_grad
        dx, dw_ih, dw_hh, db_ih, db_hh, dh0, dc0 = _kernels.recurrent_backward(
            mode, None, weight_ih, weight_hh, hprev, cprev, saved, ctx.mask, ctx.reverse, dy,
            dh_n, dc_n, want_x=needs[0], want_weights=needs[1] or needs[2],
            want_bias=ctx.has_bias and (needs[3] or needs[4]), n_threads=get_num_threads(),
            rmask=ctx.recurrent_mask, reuse_saved=ctx.last_use)
        return (dx, dw_ih if needs[1] else None, dw_hh if needs[2] else None,
                db_ih if needs[3] else None, db_hh if needs[4] else None,
                dh0 if needs[5] else None, dc0 if needs[6] else None)


def _as_float(name, value, dtype=None):
    if isinstance(value, Tensor):
        array = value.data
    else:
        try:
            array = np.asarray(value)
        except Exception:
            raise invalid(name, "a Tensor or a float array", type(value).__name__, TypeError) from None
        value = array
    if array.dtype not in (np.float32, np.float64):
        raise TypeError(f"Invalid value for argument `{name}`: expected a float32 or float64 "
                        f"array. Received: dtype={array.dtype}")
    if dtype is not None and array.dtype != dtype:
        raise TypeError(f"Invalid value for argument `{name}`: expected dtype {np.dtype(dtype).name} "
                        f"(the dtype of `x`). Received: dtype={array.dtype}")
    return value, array


def _check_shape(name, array, shape):
    if tuple(array.shape) != tuple(shape):
        raise ValueError(f"Invalid value for argument `{name}`: expected shape {tuple(shape)}. "
                         f"Received: shape={tuple(array.shape)}")


def _mask_array(mask, name, shape, axes, kinds_word):
    """``mask`` (array or Tensor) as an ndarray of ``shape``, numeric, or an error naming it."""
    array = mask.data if isinstance(mask, Tensor) else np.asarray(mask)
    if array.shape != shape:
        raise ValueError(f"Invalid value for argument `{name}`: expected shape {shape} "
                         f"({axes}). Received: shape={array.shape}")
    if array.dtype.kind not in "biuf":
        raise TypeError(f"Invalid value for argument `{name}`: expected {kinds_word}. "
                        f"Received: dtype={array.dtype}")
    return array


def as_mask(mask, n, t):
    """A (N, T) mask (bool/int/Tensor, nonzero = real step) as C-contiguous uint8, or None."""
    if mask is None:
        return None
    array = _mask_array(mask, "mask", (n, t), "batch, timesteps", "booleans")
    return np.ascontiguousarray(array != 0, dtype=np.uint8)


def as_recurrent_mask(recurrent_mask, n, h, dtype):
    """A (N, H) recurrent dropout mask as a C-contiguous array of ``dtype``, or None."""
    if recurrent_mask is None:
        return None
    array = _mask_array(recurrent_mask, "recurrent_mask", (n, h), "batch, units", "numbers")
    return np.ascontiguousarray(array, dtype=dtype)


def _recurrent(mode, x, weight_ih, weight_hh, bias_ih, bias_hh, h0, c0, mask, reverse,
               return_sequences, recurrent_mask=None):
    x, xa = _as_float("x", x)
    if xa.ndim != 3:
        raise ValueError(f"Invalid value for argument `x`: expected a 3-D input (batch, "
                         f"timesteps, features). Received: shape={xa.shape}")
    n, t, i = xa.shape
    dtype = xa.dtype
    weight_ih, w_ih = _as_float("weight_ih", weight_ih, dtype)
    weight_hh, w_hh = _as_float("weight_hh", weight_hh, dtype)
    gates = _kernels.gates_per_cell(mode)
    if w_hh.ndim != 2 or w_hh.shape[0] % gates or w_hh.shape[0] != gates * w_hh.shape[1]:
        raise ValueError(f"Invalid value for argument `weight_hh`: expected shape ({gates}*H, H) "
                         f"for {_NAMES[mode]}. Received: shape={w_hh.shape}")
    h = w_hh.shape[1]
    _check_shape("weight_ih", w_ih, (gates * h, i))
    if (bias_ih is None) != (bias_hh is None):
        raise ValueError("Invalid value for arguments `bias_ih`, `bias_hh`: expected both or "
                         "neither. Received: one of them is None")
    if bias_ih is not None:
        bias_ih, b_ih = _as_float("bias_ih", bias_ih, dtype)
        bias_hh, b_hh = _as_float("bias_hh", bias_hh, dtype)
        _check_shape("bias_ih", b_ih, (gates * h,))
        _check_shape("bias_hh", b_hh, (gates * h,))
    if h0 is not None:
        h0, h0a = _as_float("h0", h0, dtype)
        _check_shape("h0", h0a, (n, h))
    if c0 is not None:
        if mode != _kernels.LSTM:
            raise ValueError(f"Invalid value for argument `c0`: only an LSTM has a cell state. "
                             f"Received: c0 for {_NAMES[mode]}")
        c0, c0a = _as_float("c0", c0, dtype)
        _check_shape("c0", c0a, (n, h))
    mask = as_mask(mask, n, t)
    recurrent_mask = as_recurrent_mask(recurrent_mask, n, h, dtype)
    for name, value in (("weight_ih", weight_ih), ("weight_hh", weight_hh), ("bias_ih", bias_ih),
                        ("bias_hh", bias_hh), ("h0", h0), ("c0", c0)):
        if isinstance(value, np.ndarray) and not value.flags.c_contiguous:
            raise ValueError(f"Invalid value for argument `{name}`: expected a C-contiguous array")
    return Recurrent.apply(x, weight_ih, weight_hh, bias_ih, bias_hh, h0, c0, mode=mode,
                           mask=mask, reverse=bool(reverse),
                           return_sequences=bool(return_sequences), recurrent_mask=recurrent_mask)


def _contiguous(value):
    if isinstance(value, Tensor) or value is None:
        return value
    return np.ascontiguousarray(value)


def lstm(x, weight_ih, weight_hh, bias_ih=None, bias_hh=None, h0=None, c0=None, mask=None,
         reverse=False, return_sequences=True, recurrent_mask=None):
    """One LSTM layer over a batch-first sequence, as ``torch.nn.LSTM(batch_first=True)``.

    ``i, f, g, o = σ, σ, tanh, σ (x W_ihᵀ + b_ih + h W_hhᵀ + b_hh)`` (gate blocks in that
    order), ``c' = f * c + i * g``, ``h' = o * tanh(c')``.

    Args:
        x: (N, T, I) Tensor or array (float32 or float64).
        weight_ih: (4H, I); weight_hh: (4H, H); bias_ih, bias_hh: (4H,) or both None.
        h0, c0: (N, H) initial states, or None for zeros.
        mask: (N, T) booleans (False = padded step: the state passes through unchanged).
        reverse: run from the last step to the first (outputs stay aligned with inputs).
        return_sequences: also return the (N, T, H) sequence of hidden states.
        recurrent_mask: (N, H) recurrent dropout mask (0 or ``1/(1-rate)``), or None: every
            step's recurrent product reads ``(h * recurrent_mask) W_hhᵀ``; the state update
            uses the unmasked ``h`` (Keras's recurrent dropout, one mask shared by the gates).

    Returns:
        ``(output, h_n, c_n)``; ``output`` is None when ``return_sequences`` is False.

    Shape:
        x: (N, T, I); output: (N, T, H); h_n, c_n: (N, H).

    Example:
        >>> w_ih, w_hh = np.random.randn(32, 3), np.random.randn(32, 8)
        >>> y, h, c = F.lstm(np.random.randn(2, 5, 3), w_ih, w_hh)
        >>> y.shape, h.shape
        ((2, 5, 8), (2, 8))
    """
    out = _recurrent(_kernels.LSTM, x, _contiguous(weight_ih), _contiguous(weight_hh),
                     _contiguous(bias_ih), _contiguous(bias_hh), _contiguous(h0), _contiguous(c0),
                     mask, reverse, return_sequences, recurrent_mask)
    return out if return_sequences else (None,) + out


def gru(x, weight_ih, weight_hh, bias_ih=None, bias_hh=None, h0=None, mask=None, reverse=False,
        return_sequences=True, recurrent_mask=None):
    """One GRU layer over a batch-first sequence, as ``torch.nn.GRU(batch_first=True)``.

    ``r, z = σ(x W_iᵀ + b_i + h W_hᵀ + b_h)``, ``n = tanh(x W_inᵀ + b_in + r * (h W_hnᵀ + b_hn))``,
    ``h' = (1 - z) * n + z * h`` (Keras's ``reset_after=True`` cell).

    Args:
        x: (N, T, I); weight_ih: (3H, I); weight_hh: (3H, H); bias_ih, bias_hh: (3H,) or None.
        h0: (N, H) or None; mask, reverse, return_sequences, recurrent_mask: as for ``lstm``
            (the mask multiplies ``h`` in ``h W_hᵀ`` of all three gates, not in the update).

    Returns:
        ``(output, h_n)``; ``output`` is None when ``return_sequences`` is False.

    Shape:
        x: (N, T, I); output: (N, T, H); h_n: (N, H).

    Example:
        >>> y, h = F.gru(np.random.randn(2, 5, 3), np.random.randn(24, 3), np.random.randn(24, 8))
        >>> y.shape
        (2, 5, 8)
    """
    out = _recurrent(_kernels.GRU, x, _contiguous(weight_ih), _contiguous(weight_hh),
                     _contiguous(bias_ih), _contiguous(bias_hh), _contiguous(h0), None, mask,
                     reverse, return_sequences, recurrent_mask)
    return out if return_sequences else (None,) + out


def rnn(x, weight_ih, weight_hh, bias_ih=None, bias_hh=None, h0=None, nonlinearity="tanh",
        mask=None, reverse=False, return_sequences=True, recurrent_mask=None):
    """One Elman RNN layer, as ``torch.nn.RNN(batch_first=True)``: ``h' = act(x W_ihᵀ + b_ih + h W_hhᵀ + b_hh)``.

    Args:
        x: (N, T, I); weight_ih: (H, I); weight_hh: (H, H); bias_ih, bias_hh: (H,) or None.
        h0: (N, H) or None; nonlinearity: ``"tanh"`` or ``"relu"``; mask, reverse,
            return_sequences, recurrent_mask: as for ``lstm``.

    Returns:
        ``(output, h_n)``; ``output`` is None when ``return_sequences`` is False.

    Shape:
        x: (N, T, I); output: (N, T, H); h_n: (N, H).

    Example:
        >>> y, h = F.rnn(np.random.randn(2, 5, 3), np.random.randn(8, 3), np.random.randn(8, 8))
        >>> h.shape
        (2, 8)
    """
    check_choice("nonlinearity", nonlinearity, ("tanh", "relu"))
    out = _recurrent(_MODES["rnn_" + nonlinearity], x, _contiguous(weight_ih),
                     _contiguous(weight_hh), _contiguous(bias_ih), _contiguous(bias_hh),
                     _contiguous(h0), None, mask, reverse, return_sequences, recurrent_mask)
    return out if return_sequences else (None,) + out


# ----------------------------------------------------------------------- embedding

class Embedding(Function):
    """``y = weight[indices]``; backward scatters the rows back, in order (deterministic)."""

    node_name = "EmbeddingBackward"

    @staticmethod
    def forward(ctx, weight, indices):
        ctx.indices = indices
        ctx.input_dim = weight.shape[0]
        return np.take(weight, indices, axis=0)

    @staticmethod
    def backward(ctx, grad):
        if not ctx.needs_input_grad[0]:
            return None, None
        indices = ctx.indices
        d = grad.shape[-1]
        dw = embedding_kernels.embedding_backward(indices.reshape(-1), grad.reshape(-1, d),
                                          ctx.input_dim, get_num_threads())
        return dw, None


def embedding(input, weight):
    """Look up rows of ``weight``, as ``torch.nn.functional.embedding(input, weight)``.

    Args:
        input: integer indices of any shape, each in ``[0, weight.shape[0])`` (floats
            holding whole numbers are accepted, as Keras does).
        weight: (V, D) Tensor (the table).

    Returns:
        A Tensor of shape ``input.shape + (D,)``; backward node ``EmbeddingBackward``.

    Shape:
        input: (*); weight: (V, D); output: (*, D).

    Example:
        >>> table = mn.tensor(np.eye(4), requires_grad=True)
        >>> F.embedding(np.array([[1, 3]]), table).shape
        (1, 2, 4)
    """
    weight, w = _as_float("weight", weight)
    if w.ndim != 2:
        raise ValueError(f"Invalid value for argument `weight`: expected a 2-D table (V, D). "
                         f"Received: shape={w.shape}")
    array = input.data if isinstance(input, Tensor) else np.asarray(input)
    if array.dtype.kind == "b" or array.dtype.kind not in "iuf":
        raise TypeError(f"Invalid value for argument `input`: expected integer indices. "
                        f"Received: dtype={array.dtype}")
    if array.dtype.kind == "f":
        bad = ~np.isfinite(array) | (array != np.floor(array))
        if bad.any():
            raise ValueError(f"Invalid value for argument `input`: expected integer indices. "
                             f"Received: {array[bad].ravel()[0]!r}")
    if array.size:
        low, high = array.min(), array.max()
        if low < 0 or high >= w.shape[0]:
            bad = low if low < 0 else high
            raise ValueError(f"Invalid value for argument `input`: expected indices in [0, "
                             f"{w.shape[0]}) (the table's input_dim). Received: index {bad!r}")
    indices = np.ascontiguousarray(array, dtype=np.int64)
    return Embedding.apply(weight, indices)


# ----------------------------------------------------------------------- sequence helpers

class ReverseSequence(Function):
    """``y = x[:, ::-1]`` (time reversed), as a contiguous array."""

    node_name = "ReverseSequenceBackward"

    @staticmethod
    def forward(ctx, x):
        return np.ascontiguousarray(x[:, ::-1])

    @staticmethod
    def backward(ctx, grad):
        return np.ascontiguousarray(grad[:, ::-1])


def reverse_sequence(x):
    """Reverse a (N, T, ...) sequence along its time axis (axis 1)."""
    if not isinstance(x, Tensor):
        x = Tensor(np.asarray(x))
    if x.ndim < 2:
        raise ValueError(f"Invalid value for argument `x`: expected at least 2 axes (batch, "
                         f"timesteps, ...). Received: shape={tuple(x.shape)}")
    return ReverseSequence.apply(x)


class ConcatFeatures(Function):
    """``y = concatenate([a, b], axis=-1)``."""

    node_name = "ConcatFeaturesBackward"

    @staticmethod
    def forward(ctx, a, b):
        ctx.split = a.shape[-1]
        return np.concatenate([a, b], axis=-1)

    @staticmethod
    def backward(ctx, grad):
        k = ctx.split
        return np.ascontiguousarray(grad[..., :k]), np.ascontiguousarray(grad[..., k:])


def concat_features(a, b):
    """Concatenate two Tensors of equal leading shape along the last axis."""
    a = a if isinstance(a, Tensor) else Tensor(np.asarray(a))
    b = b if isinstance(b, Tensor) else Tensor(np.asarray(b))
    if a.shape[:-1] != b.shape[:-1]:
        raise ValueError(f"Invalid value for arguments `a`, `b`: expected equal shapes but for "
                         f"the last axis. Received: {tuple(a.shape)} and {tuple(b.shape)}")
    return ConcatFeatures.apply(a, b)
