"""Accuracy metrics: exact, binary, categorical, sparse categorical and top-k, as
per-sample functions and as ``Metric`` objects, and the ``"accuracy"`` that picks its
kind from the shapes of the first batch (``AutoAccuracy``)."""
import numpy as np

from minnet._checks import check_int, check_labels
from minnet.metrics.base import Metric, MeanMetricWrapper, check_same_shape, per_sample_mean, \
    squeeze_or_expand, to_numpy

__all__ = [
    "accuracy", "binary_accuracy", "categorical_accuracy", "sparse_categorical_accuracy",
    "top_k_categorical_accuracy", "sparse_top_k_categorical_accuracy",
    "Accuracy", "BinaryAccuracy", "CategoricalAccuracy", "SparseCategoricalAccuracy",
    "TopKCategoricalAccuracy", "SparseTopKCategoricalAccuracy",
]


def _check_batch(y_true, y_pred, what):
    if y_true.ndim == 0 or y_pred.ndim == 0 or y_true.shape[0] != y_pred.shape[0]:
        raise ValueError(
            f"{what}: `y_true` and `y_pred` must have the same batch size. "
            f"Received: y_true.shape={y_true.shape}, y_pred.shape={y_pred.shape}"
        )


def _sparse_labels(y_true, y_pred, what, ignore_class=None):
    """Integer labels ``(N,)`` from ``(N,)`` or ``(N, 1)`` for scores ``(N, C)``."""
    if y_pred.ndim != 2:
        raise ValueError(
            f"{what}: expected `y_pred` of shape (batch, classes). Received: y_pred.shape={y_pred.shape}"
        )
    if y_true.ndim == 2 and y_true.shape[1] == 1:
        y_true = y_true.reshape(-1)
    if y_true.ndim != 1:
        raise ValueError(
            f"{what}: expected integer labels `y_true` of shape (batch,) or (batch, 1). "
            f"Received: y_true.shape={y_true.shape}"
        )
    _check_batch(y_true, y_pred, what)
    # Scoring out-of-range labels as misses would hide a label/model mismatch: one scan,
    # the same check (and wording) as the loss.
    return check_labels("y_true", y_true, y_pred.shape[1], ignore_index=ignore_class)


# ---------------------------------------------------------------------------------------
# Functional forms: one value per sample
# ---------------------------------------------------------------------------------------

def accuracy(y_true, y_pred):
    """Exact-match accuracy per sample: 1.0 where ``y_true == y_pred``.

    Args:
        y_true: true values, any shape.
        y_pred: predicted values, same shape (``(N,)`` vs ``(N, 1)`` is lined up).

    Returns:
        ndarray of float64, one value per sample (mean over the last axis when rank >= 2).

    Shape:
        y_true, y_pred: ``(N, ...)``; output ``(N,)``.
    """
    y_true, y_pred = squeeze_or_expand(to_numpy(y_true, "y_true"), to_numpy(y_pred, "y_pred"))
    check_same_shape(y_true, y_pred, "accuracy")
    return per_sample_mean(y_true == y_pred)


def binary_accuracy(y_true, y_pred, threshold=0.5):
    """1.0 where ``y_true == (y_pred > threshold)``, element by element (Keras 3.15).

    Args:
        y_true: labels in {0, 1} (a soft label such as 0.7 never matches, as in Keras).
        y_pred: probabilities (or scores: choose ``threshold=0`` for logits).
        threshold: the decision threshold.

    Returns:
        ndarray of float64 of ``y_pred``'s shape (``(N,)`` against ``(N, 1)``: ``(N, 1)``,
        Keras's ``squeeze_or_expand_to_same_rank``). ``BinaryAccuracy`` averages them.

    Shape:
        y_true, y_pred: ``(N,)``, ``(N, 1)`` or ``(N, D)``.
    """
    y_true, y_pred = to_numpy(y_true, "y_true"), to_numpy(y_pred, "y_pred")
    if y_pred.ndim == y_true.ndim + 1 and y_pred.shape[-1:] == (1,):
        y_true = y_true.reshape(y_true.shape + (1,)) if y_true.ndim == 1 else y_true
        y_pred = y_pred if y_true.ndim == y_pred.ndim else y_pred.reshape(y_pred.shape[:-1])
    elif y_true.ndim == y_pred.ndim + 1 and y_true.shape[-1:] == (1,):
        y_pred = y_pred.reshape(y_pred.shape + (1,)) if y_pred.ndim == 1 else y_pred
        y_true = y_true if y_true.ndim == y_pred.ndim else y_true.reshape(y_true.shape[:-1])
    check_same_shape(y_true, y_pred, "binary_accuracy")
    return (y_true == (y_pred > threshold)).astype(np.float64)


def categorical_accuracy(y_true, y_pred):
    """1.0 where ``argmax(y_pred) == argmax(y_true)`` (one-hot or probability targets).

    Args:
        y_true: one-hot (or soft) targets.
        y_pred: class scores (probabilities or logits).

    Returns:
        ndarray of float64 of shape ``(N,)``.

    Shape:
        y_true, y_pred: ``(N, C)``.
    """
    y_true, y_pred = to_numpy(y_true, "y_true"), to_numpy(y_pred, "y_pred")
    check_same_shape(y_true, y_pred, "categorical_accuracy")
    if y_pred.ndim < 1:
        raise ValueError(f"categorical_accuracy: expected `y_pred` of shape (batch, classes). "
                         f"Received: y_pred.shape={y_pred.shape}")
    return (np.argmax(y_true, axis=-1) == np.argmax(y_pred, axis=-1)).astype(np.float64)


def sparse_categorical_accuracy(y_true, y_pred, ignore_class=None):
    """1.0 where ``argmax(y_pred) == y_true`` for integer labels.

    Args:
        y_true: integer labels.
        y_pred: class scores (probabilities or logits).
        ignore_class: optional label whose samples score NaN (``SparseCategoricalAccuracy``
            gives them zero weight, so they do not count).

    Returns:
        ndarray of float64 of shape ``(N,)``.

    Shape:
        y_true: ``(N,)`` or ``(N, 1)``; y_pred: ``(N, C)``.
    """
    y_pred = to_numpy(y_pred, "y_pred")
    y_true = _sparse_labels(to_numpy(y_true, "y_true"), y_pred, "sparse_categorical_accuracy",
                            ignore_class)
    values = (np.argmax(y_pred, axis=-1) == y_true).astype(np.float64)
    if ignore_class is not None:
        values[y_true == ignore_class] = np.nan
    return values


def _in_top_k(scores, labels, k):
    # A label counts as in the top k when fewer than k classes score strictly higher
    # (ties at the boundary count as hits, as tf.math.in_top_k / Keras do).
    label_scores = scores[np.arange(scores.shape[0]), np.clip(labels, 0, scores.shape[1] - 1)]
    n_higher = np.sum(scores > label_scores[:, None], axis=1)
    hit = n_higher < k
    hit &= (labels >= 0) & (labels < scores.shape[1]) & np.isfinite(label_scores)
    return hit.astype(np.float64)


def _check_k(k):
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"Invalid value for argument `k`: expected a positive int. Received: k={k!r}")
    return int(k)


def top_k_categorical_accuracy(y_true, y_pred, k=5):
    """1.0 where the true class (argmax of ``y_true``) is among the ``k`` highest scores.

    Args:
        y_true: one-hot targets.
        y_pred: class scores.
        k: how many top classes count as a hit.

    Returns:
        ndarray of float64 of shape ``(N,)``.

    Shape:
        y_true, y_pred: ``(N, C)``.
    """
    k = _check_k(k)
    y_true, y_pred = to_numpy(y_true, "y_true"), to_numpy(y_pred, "y_pred")
    check_same_shape(y_true, y_pred, "top_k_categorical_accuracy")
    if y_pred.ndim != 2:
        raise ValueError(f"top_k_categorical_accuracy: expected `y_pred` of shape (batch, classes). "
                         f"Received: y_pred.shape={y_pred.shape}")
    return _in_top_k(y_pred, np.argmax(y_true, axis=-1), k)


def sparse_top_k_categorical_accuracy(y_true, y_pred, k=5):
    """1.0 where the integer label is among the ``k`` highest scores.

    Args:
        y_true: integer labels.
        y_pred: class scores.
        k: how many top classes count as a hit.

    Returns:
        ndarray of float64 of shape ``(N,)``.

    Shape:
        y_true: ``(N,)`` or ``(N, 1)``; y_pred: ``(N, C)``.
    """
    k = _check_k(k)
    y_pred = to_numpy(y_pred, "y_pred")
    y_true = _sparse_labels(to_numpy(y_true, "y_true"), y_pred, "sparse_top_k_categorical_accuracy")
    return _in_top_k(y_pred, y_true, k)


class Accuracy(MeanMetricWrapper):
    """Fraction of predictions exactly equal to the targets (``y_pred == y_true``)."""

    def __init__(self, name="accuracy", dtype=None):
        super().__init__(accuracy, name=name, dtype=dtype)

    def get_config(self):
        return {"name": self.name}


class BinaryAccuracy(MeanMetricWrapper):
    """Fraction of ``y_pred > threshold`` matching binary labels.

    Args:
        name: metric name.
        threshold: decision threshold (0.5 for probabilities; use 0.0 for logits).
    """

    def __init__(self, name="binary_accuracy", dtype=None, threshold=0.5):
        threshold = _check_threshold(threshold)
        super().__init__(binary_accuracy, name=name, dtype=dtype, threshold=threshold)
        self.threshold = threshold


def _check_threshold(threshold):
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float, np.number)) \
            or not np.isfinite(threshold):
        raise ValueError(f"Invalid value for argument `threshold`: expected a finite float. "
                         f"Received: threshold={threshold!r}")
    return float(threshold)


class CategoricalAccuracy(MeanMetricWrapper):
    """Fraction of samples whose highest score is the one-hot target's class."""

    def __init__(self, name="categorical_accuracy", dtype=None):
        super().__init__(categorical_accuracy, name=name, dtype=dtype)


class SparseCategoricalAccuracy(MeanMetricWrapper):
    """Fraction of samples whose highest score is the integer label.

    Args:
        name: metric name.
        ignore_class: optional label whose samples are skipped (as the loss's
            ``ignore_class``); ``compile`` sets it from the loss for ``"accuracy"``.
    """

    def __init__(self, name="sparse_categorical_accuracy", dtype=None, ignore_class=None):
        if ignore_class is not None:
            ignore_class = check_int("ignore_class", ignore_class)
        kwargs = {} if ignore_class is None else {"ignore_class": ignore_class}
        super().__init__(sparse_categorical_accuracy, name=name, dtype=dtype, **kwargs)
        self.ignore_class = ignore_class


class TopKCategoricalAccuracy(MeanMetricWrapper):
    """Fraction of samples whose one-hot target class is among the ``k`` highest scores.

    Args:
        k: number of top classes that count (default 5).
        name: metric name.
    """

    def __init__(self, k=5, name="top_k_categorical_accuracy", dtype=None):
        k = _check_k(k)
        super().__init__(top_k_categorical_accuracy, name=name, dtype=dtype, k=k)
        self.k = k


class SparseTopKCategoricalAccuracy(MeanMetricWrapper):
    """Fraction of samples whose integer label is among the ``k`` highest scores.

    Args:
        k: number of top classes that count (default 5).
        name: metric name.
    """

    def __init__(self, k=5, name="sparse_top_k_categorical_accuracy", dtype=None):
        k = _check_k(k)
        super().__init__(sparse_top_k_categorical_accuracy, name=name, dtype=dtype, k=k)
        self.k = k

class AutoAccuracy(Metric):
    """``"accuracy"`` whose kind (binary / categorical / sparse) is decided from the shapes
    of the first batch, as Keras's ``compile`` does when the loss does not tell.

    * ``y_pred`` last dimension 1, or ``y_pred`` the same shape as a 1-D ``y_true``: binary;
    * ``y_true`` of rank one less than ``y_pred`` (or ``(N, 1)`` against ``(N, C>1)``): sparse;
    * otherwise (same shape ``(N, C)``): categorical.
    """

    def __init__(self, name="accuracy", dtype=None):
        self._resolved = None
        super().__init__(name=name, dtype=dtype)

    def update_state(self, y_true, y_pred, sample_weight=None):
        if self._resolved is None:
            true_array, pred_array = to_numpy(y_true, "y_true"), to_numpy(y_pred, "y_pred")
            self._resolved = _accuracy_from_shapes(true_array.shape, pred_array.shape)
        values = np.asarray(self._resolved(y_true, y_pred), dtype=np.float64)
        self._accumulate(values, sample_weight)

    @property
    def resolved(self):
        """The per-sample function chosen at the first update (None before it)."""
        return self._resolved


def _accuracy_from_shapes(true_shape, pred_shape):
    true_rank, pred_rank = len(true_shape), len(pred_shape)
    if pred_rank == 0 or pred_shape[-1] == 1 or (true_rank == 1 and tuple(true_shape) == tuple(pred_shape)):
        return binary_accuracy
    if true_rank == pred_rank - 1 or (true_rank == pred_rank and true_shape[-1] == 1 and pred_shape[-1] > 1):
        return sparse_categorical_accuracy
    return categorical_accuracy


