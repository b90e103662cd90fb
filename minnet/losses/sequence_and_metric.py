"""Keras 3's ``CTC`` (sequence labelling without alignments) and ``Circle`` (metric
learning on embeddings) losses, with their function forms ``ctc`` and ``circle``
(formulas in ``docs/math/losses.md``)."""
import numpy as np

from minnet import ops
from minnet._checks import check_float
from minnet.autograd import Tensor
from minnet.autograd.masks import set_keras_mask
from minnet.losses.base import Loss, as_prediction

__all__ = ["CTC", "Circle", "ctc", "circle"]


class CTC(Loss):
    """Connectionist Temporal Classification (Graves et al. 2006), as ``keras.losses.CTC``.

    ``y_true`` (batch, max_length) integer labels, padded with 0, which is also the blank
    (Keras's ``mask_index=0``: classes are 1..C-1); ``y_pred`` (batch, T, C) logits (not
    softmaxed). Each sample's label length is its count of non-zero labels and every sample
    uses all T steps. The per-sample loss is ``-log p(labels | logits)`` summed over every
    alignment (``ops.ctc_loss``, the forward algorithm in log space).
    """

    default_name = "ctc"

    def _prepare(self, y_true, y_pred):
        pred = as_prediction(y_pred)
        true = np.asarray(getattr(y_true, "data", y_true))
        if true.ndim != 2:
            raise ValueError(f"Targets `y_true` are expected to be a tensor of shape (batch_size, "
                             f"max_length) in integer format. Received: y_true.shape={true.shape}")
        if pred.ndim != 3:
            raise ValueError(f"Logits `y_pred` are expected to be a tensor of shape (batch_size, "
                             f"max_length, num_classes). Received: y_pred.shape={tuple(pred.shape)}")
        return Tensor(true.astype(np.int64)), pred

    def call(self, y_true, y_pred):
        return ctc(y_true, y_pred)


def ctc(y_true, y_pred):
    """Per-sample CTC loss (``CTC``), shape ``(batch,)``."""
    labels = np.asarray(getattr(y_true, "data", y_true)).astype(np.int64)
    if labels.ndim != 2:
        raise ValueError(f"Targets `y_true` are expected to be a tensor of shape (batch_size, "
                         f"max_length) in integer format. Received: y_true.shape={labels.shape}")
    shape = tuple(getattr(y_pred, "shape", np.shape(y_pred)))
    if len(shape) != 3:
        raise ValueError(f"Logits `y_pred` are expected to be a tensor of shape (batch_size, "
                         f"max_length, num_classes). Received: y_pred.shape={shape}")
    batch, steps = shape[0], shape[1]
    label_length = (labels != 0).sum(axis=-1).astype(np.int32)
    return ops.ctc_loss(labels, y_pred, label_length, np.full((batch,), steps, np.int32),
                        mask_index=0)


class Circle(Loss):
    """Circle loss (Sun et al. 2020) on L2-normalised embeddings, as ``keras.losses.Circle``.

    With cosine distances ``d_ij = max(1 - e_i·r_j, 0)`` between each embedding and each
    reference embedding (default: the batch itself), positives ``j`` sharing ``i``'s label
    (``i`` itself left out when ``remove_diagonal``) and negatives the others::

        p_i = logsumexp_{j pos} (-gamma · max(margin + d_ij, 0) · (margin - d_ij))
        n_i = logsumexp_{j neg} ( gamma · max(1 + margin - d_ij, 0) · (1 - margin - d_ij))
        loss_i = softplus(p_i + n_i)

    and, as Keras, the loss values that are 0 are masked, so the default reduction averages
    over the samples with a positive loss.

    Args:
        gamma: the scale (default 80). margin: the relaxation (default 0.4).
        remove_diagonal: leave each sample out of its own positives (default True).
    """

    default_name = "circle"

    def __init__(self, gamma=80.0, margin=0.4, remove_diagonal=True,
                 reduction="sum_over_batch_size", name=None, dtype=None):
        self.gamma = check_float("gamma", gamma)
        self.margin = check_float("margin", margin)
        self.remove_diagonal = bool(remove_diagonal)
        super().__init__(reduction=reduction, name=name, dtype=dtype)

    def call(self, y_true, y_pred):
        return circle(y_true, y_pred, gamma=self.gamma, margin=self.margin,
                      remove_diagonal=self.remove_diagonal)

    def get_config(self):
        return {**super().get_config(), "gamma": self.gamma, "margin": self.margin,
                "remove_diagonal": self.remove_diagonal}


def circle(y_true, y_pred, ref_labels=None, ref_embeddings=None, remove_diagonal=True, gamma=80,
           margin=0.4):
    """Per-sample Circle loss (``Circle``), shape ``(batch,)``, carrying the mask
    ``loss > 0``."""
    pred = as_prediction(y_pred)
    if pred.ndim != 2:
        raise ValueError(f"Invalid value for argument `y_pred`: expected embeddings of shape "
                         f"(batch, dim). Received: shape={tuple(pred.shape)}")
    labels = np.asarray(getattr(y_true, "data", y_true)).reshape(-1).astype(np.int64)
    if labels.shape[0] != pred.shape[0]:
        raise ValueError(f"Invalid value for argument `y_true`: expected one label per embedding "
                         f"({pred.shape[0]}). Received: {labels.shape[0]} labels")
    ref = pred if ref_embeddings is None else (
        ref_embeddings if isinstance(ref_embeddings, Tensor) else Tensor(
            np.asarray(ref_embeddings, pred.dtype)))
    ref_labels = labels if ref_labels is None else np.asarray(
        getattr(ref_labels, "data", ref_labels)).reshape(-1).astype(np.int64)
    distances = (1.0 - pred.matmul(ref.transpose(1, 0))).clamp(min=0.0)
    positive = labels[:, None] == ref_labels[None, :]
    negative = ~positive
    if remove_diagonal:
        positive = positive & ~np.eye(len(labels), len(ref_labels), dtype=bool)
    dtype = distances.dtype
    pos_weights = ((margin + distances) * positive.astype(dtype)).clamp(min=0.0)
    neg_weights = ((1.0 + margin - distances) * negative.astype(dtype)).clamp(min=0.0)
    pos = -float(gamma) * pos_weights * (margin - distances)
    neg = float(gamma) * neg_weights * ((1.0 - margin) - distances)
    minus_inf = Tensor(np.full((), -np.inf, dtype))
    p_loss = ops.logsumexp(ops.where(positive, pos, minus_inf), axis=1)
    n_loss = ops.logsumexp(ops.where(negative, neg, minus_inf), axis=1)
    loss = ops.softplus(p_loss + n_loss)
    set_keras_mask(loss, np.asarray(loss.data) > 0)
    return loss
