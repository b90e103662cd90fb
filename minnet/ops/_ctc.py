"""CTC: ``ctc_loss`` (the forward algorithm in log space, Graves et al. 2006) and
``ctc_decode`` (greedy, or Keras's beam search), with the argument meanings of Keras (``output`` logits ``(batch, time,
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
    """CTC decoding: ``(decoded (top_paths, batch, time) with -1 padding, scores (batch, top_paths))``;
    ``strategy`` "greedy" (one path) or "beam_search" (Keras's algorithm, ported to NumPy)."""
    if strategy == "beam_search":
        x = to_float(inputs)
        paths, scores = _beam_search(x.data, sequence_lengths.data.reshape(-1), int(beam_width), int(top_paths),
                                     mask_index)
        return wrap(paths), wrap(scores.astype(x.dtype))
    if strategy != "greedy":
        raise ValueError(f"Invalid argument `strategy`: expected 'greedy' or 'beam_search'. "
                         f"Received: strategy={strategy!r}")
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


# ----------------------------------------------------------------------------- beam search
# A NumPy port of Keras's torch `_ctc_beam_search_decode` (itself a port of its JAX one), down
# to the path hashing that orders the unique paths, so ties break the same way.

_KNUTH = 2654435769


def _unique_padded(paths, size, pad):
    n, t = paths.shape
    with np.errstate(over="ignore"):
        powers = np.full(t, _KNUTH, np.int64) ** np.arange(t, dtype=np.int64) if t else np.zeros(0, np.int64)
        hashes = ((paths.astype(np.int64) + 1) * powers).sum(1)
    order = np.argsort(hashes, kind="stable")
    sorted_paths, sorted_hashes = paths[order], hashes[order]
    is_dup = (sorted_hashes[1:] == sorted_hashes[:-1]) & (sorted_paths[1:] == sorted_paths[:-1]).all(1)
    is_first = np.concatenate([[True], ~is_dup])
    inverse = np.empty(n, np.int64)
    inverse[order] = np.cumsum(is_first) - 1
    unique = sorted_paths[is_first]
    if unique.shape[0] < size:
        unique = np.concatenate([unique, np.full((size - unique.shape[0], t), pad, unique.dtype)])
    return unique, inverse


def _merge_scores(inverse, scores, n):
    top = scores.max()
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.zeros(n, scores.dtype)
        np.add.at(out, inverse, np.exp(scores - top))
        return np.log(out) + top


def _beam_extend(paths, scores, masked, x, n_classes, blank, pad):
    paths = np.repeat(paths, n_classes, axis=0)
    scores = np.repeat(scores, n_classes)
    prev_masked = np.repeat(masked, n_classes)
    tail_index = (paths == pad).argmax(1)
    rows = np.arange(paths.shape[0])
    tails = np.where(tail_index == 0, pad, paths[rows, tail_index - 1])
    classes = np.arange(n_classes, dtype=paths.dtype)
    classes[blank] = pad
    classes = np.tile(classes, paths.shape[0] // n_classes)
    masked = classes == pad
    classes = np.where(~prev_masked & (tails == classes), pad, classes)
    paths[rows, tail_index] = classes
    return paths, scores + np.tile(x, paths.shape[0] // n_classes), masked


def _beam_prune(paths, scores, masked, n_classes, beam_width, pad):
    unique, inverse = _unique_padded(paths, 2 * n_classes * beam_width, pad)
    emit = _merge_scores(inverse, np.where(masked, -np.inf, scores), unique.shape[0])
    blank = _merge_scores(inverse, np.where(masked, scores, -np.inf), unique.shape[0])
    top = np.argsort(np.logaddexp(emit, blank), kind="stable")[-beam_width:]
    paths = np.tile(unique[top], (2, 1))
    scores = np.concatenate([emit[top], blank[top]])
    return paths, scores, np.concatenate([np.zeros(beam_width, bool), np.ones(beam_width, bool)])


def _beam_search(logits, lengths, beam_width, top_paths, mask_index):
    n, t_max, c = logits.shape
    log_p = logits - logits.max(-1, keepdims=True)
    log_p = log_p - np.log(np.exp(log_p).sum(-1, keepdims=True))
    blank = c - 1 if mask_index is None else mask_index
    log_p = log_p[:, :, ::-1]
    blank = c - blank - 1
    pad = -1
    n_init = min(c, beam_width)
    all_paths, all_scores = [], []
    for b in range(n):
        x = log_p[b]
        paths = np.full((2 * beam_width, t_max), pad, np.int32)
        best = np.argsort(x[0], kind="stable")[-n_init:]
        paths[:n_init, 0] = np.where(best == blank, pad, best)
        scores = np.full(2 * beam_width, -np.inf, x.dtype)
        scores[:n_init] = x[0, best]
        masked = paths[:, 0] == pad
        for t in range(1, int(lengths[b])):
            paths, scores, masked = _beam_extend(paths, scores, masked, x[t], c, blank, pad)
            paths, scores, masked = _beam_prune(paths, scores, masked, c, beam_width, pad)
        unique, inverse = _unique_padded(paths, 2 * c * beam_width, pad)
        merged = _merge_scores(inverse, scores, unique.shape[0])
        top = np.argsort(merged, kind="stable")[-top_paths:][::-1]
        all_paths.append(unique[top])
        all_scores.append(merged[top])
    paths = np.stack(all_paths)
    paths = np.where(paths == pad, pad, c - paths - 1).transpose(1, 0, 2)
    return paths.astype(np.int32), np.stack(all_scores)
