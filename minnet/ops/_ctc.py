"""CTC: ``ctc_loss`` (the forward algorithm in log space, Graves et al. 2006) and the greedy
``ctc_decode``, with the argument meanings of Keras (``output`` logits ``(batch, time,
classes)``, ``mask_index`` the blank class).

The loss is written with recorded ops (logsumexp over the three predecessor states of
each step), so its gradient comes from the autograd. Impossible alignments give a very
large finite loss instead of ``inf``.
"""
import numpy as np

from minnet.autograd import Tensor, cat, stack, where as _where

from ._dispatch import keras_op, to_float, wrap

__all__ = ["ctc_loss", "ctc_decode"]

_NEG = -1e30


@keras_op("target", "output", "target_length", "output_length")
def ctc_loss(target, output, target_length, output_length, mask_index=0):
    """Per-sequence CTC negative log-likelihood, shape ``(batch,)``."""
    logits = to_float(output)
    if logits.ndim != 3:
        raise ValueError(f"Invalid argument `output`: expected (batch, time, classes). Received: shape {logits.shape}")
    log_probs = logits - logits.logsumexp(2, keepdim=True)
    labels = target.data.astype(np.int64)
    n, t_max, _ = logits.shape
    s_max = labels.shape[1]
    t_len = output_length.data.astype(np.int64).reshape(n)
    s_len = target_length.data.astype(np.int64).reshape(n)
    width = 2 * s_max + 1
    ext = np.full((n, width), mask_index, np.int64)
    ext[:, 1::2] = labels
    # a skip from s-2 to s is allowed for a label that differs from the label two back
    skip = np.zeros((n, width), bool)
    skip[:, 2:] = (ext[:, 2:] != mask_index) & (ext[:, 2:] != ext[:, :-2])
    valid = np.arange(width)[None, :] < (2 * s_len + 1)[:, None]
    dtype = log_probs.dtype
    neg = Tensor(np.full((), _NEG, dtype))
    emit = [log_probs[:, t].gather(1, Tensor(ext)) for t in range(t_max)]
    init = np.full((n, width), _NEG, dtype)
    init[:, 0] = 0.0
    init[:, 1] = np.where(s_len > 0, 0.0, _NEG)
    alpha = Tensor(init) + emit[0]
    alpha = _where(Tensor(valid), alpha, neg)
    pad1 = Tensor(np.full((n, 1), _NEG, dtype))
    pad2 = Tensor(np.full((n, 2), _NEG, dtype))
    for t in range(1, t_max):
        stay = alpha
        step = cat([pad1, alpha[:, :-1]], 1)
        jump = _where(Tensor(skip), cat([pad2, alpha[:, :-2]], 1), neg)
        new = stack([stay, step, jump], 2).logsumexp(2) + emit[t]
        new = _where(Tensor(valid), new, neg)
        alpha = _where(Tensor((t < t_len)[:, None]), new, alpha)
    last = Tensor(2 * s_len)
    before = Tensor(np.maximum(2 * s_len - 1, 0))
    end = alpha.gather(1, last.unsqueeze(1)).squeeze(1)
    prev = alpha.gather(1, before.unsqueeze(1)).squeeze(1)
    prev = _where(Tensor(s_len > 0), prev, neg.expand(n))
    return -stack([end, prev], 1).logsumexp(1)


@keras_op("inputs", "sequence_lengths")
def ctc_decode(inputs, sequence_lengths, strategy="greedy", beam_width=100, top_paths=1, merge_repeated=True,
               mask_index=0):
    """Greedy CTC decoding: ``(decoded (1, batch, time) with -1 padding, scores (batch, 1))``.
    ``strategy="beam_search"`` is not provided."""
    if strategy != "greedy":
        raise ValueError(f"Invalid argument `strategy`: minnet decodes with 'greedy' only. Received: strategy={strategy!r}")
    x = inputs.data
    n, t_max, c = x.shape
    blank = c - 1 if mask_index is None else mask_index
    indices = x.argmax(-1).astype(np.int32)
    scores = x.max(-1)
    beyond = np.arange(t_max)[None, :] >= sequence_lengths.data.reshape(-1)[:, None]
    indices = np.where(beyond, blank, indices)
    scores = np.where(beyond, 0.0, scores)
    if merge_repeated:
        repeat = np.pad(indices[:, 1:] == indices[:, :-1], ((0, 0), (1, 0)))
        indices = np.where(repeat, blank, indices)
    invalid = indices == blank
    indices = np.where(invalid, -1, indices)
    order = np.argsort(np.where(invalid, t_max, np.arange(t_max)[None, :]), axis=-1, kind="stable")
    indices = np.take_along_axis(indices, order, -1)
    return wrap(indices[None].astype(np.int32)), wrap((-scores.sum(1))[:, None].astype(to_float(inputs).dtype))
