"""Metrics: running averages of a quantity over the batches of an epoch (Keras style).

A metric is a small accumulator: ``update_state(y_true, y_pred, sample_weight=None)``
adds one batch, ``result()`` returns the weighted mean so far as a float and
``reset_state()`` starts again (``fit`` resets every metric at the start of each epoch).
Metrics never build an autograd graph: Tensors are read through ``.numpy()``.

Every metric here computes one value per sample (for example 1.0/0.0 for "was this
sample classified correctly") and keeps ``total = sum(value * weight)`` and
``count = sum(weight)``; ``result() = total / count`` (0.0 before the first update).

The functional forms (``accuracy``, ``binary_accuracy``, ``categorical_accuracy``,
``sparse_categorical_accuracy``, ``top_k_categorical_accuracy``,
``sparse_top_k_categorical_accuracy``, ``mean_squared_error``, ``mean_absolute_error``)
return those per-sample values as an ndarray.

Example:
    >>> m = SparseCategoricalAccuracy()
    >>> m.update_state([0, 2], [[0.9, 0.1, 0.0], [0.2, 0.7, 0.1]])
    >>> m.result()
    0.5
"""
import numpy as np

from minnet import _registry
from minnet._checks import check_float, check_int, check_labels, invalid

__all__ = [
    "Metric", "Mean", "MeanMetricWrapper", "Accuracy", "BinaryAccuracy", "CategoricalAccuracy",
    "SparseCategoricalAccuracy", "TopKCategoricalAccuracy", "SparseTopKCategoricalAccuracy",
    "MeanSquaredError", "MeanAbsoluteError", "MeanAbsolutePercentageError", "RootMeanSquaredError",
    "R2Score", "Precision", "Recall", "AUC", "FBetaScore", "F1Score", "MeanIoU",
    "confusion_matrix", "classification_report", "mean_absolute_percentage_error", "mape",
    "accuracy", "binary_accuracy", "categorical_accuracy", "sparse_categorical_accuracy",
    "top_k_categorical_accuracy", "sparse_top_k_categorical_accuracy",
    "mean_squared_error", "mean_absolute_error", "mse", "mae", "get", "serialize", "deserialize",
]


# ---------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------

def _to_numpy(value, argument):
    """ndarray view of a Tensor / ndarray / list / scalar, never part of a graph."""
    if hasattr(value, "numpy") and callable(value.numpy) and not isinstance(value, np.ndarray):
        value = value.numpy()
    try:
        array = np.asarray(value)
    except Exception as error:  # ragged lists and the like
        raise TypeError(
            f"Invalid value for argument `{argument}`: expected an array-like of numbers. "
            f"Received: {type(value).__name__} ({error})"
        ) from None
    if array.dtype == object or not (np.issubdtype(array.dtype, np.number) or array.dtype == bool):
        raise TypeError(
            f"Invalid value for argument `{argument}`: expected an array-like of numbers. "
            f"Received: array of dtype {array.dtype}"
        )
    return array


def _squeeze_or_expand(y_true, y_pred):
    """Line up ``(N,)`` against ``(N, 1)`` the way Keras does; other shapes are left alone."""
    if y_pred.ndim == y_true.ndim + 1 and y_pred.shape[-1] == 1:
        y_pred = y_pred.reshape(y_pred.shape[:-1])
    elif y_true.ndim == y_pred.ndim + 1 and y_true.shape[-1] == 1:
        y_true = y_true.reshape(y_true.shape[:-1])
    return y_true, y_pred


def _check_same_shape(y_true, y_pred, what):
    if y_true.shape != y_pred.shape:
        raise ValueError(
            f"{what}: `y_true` and `y_pred` must have the same shape. "
            f"Received: y_true.shape={y_true.shape}, y_pred.shape={y_pred.shape}"
        )


def _per_sample_mean(values):
    """Mean over the last axis for arrays of rank >= 2 (one value per sample), as Keras."""
    values = np.asarray(values, dtype=np.float64)
    if values.ndim >= 2:
        return values.mean(axis=-1)
    return values


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
    y_true, y_pred = _squeeze_or_expand(_to_numpy(y_true, "y_true"), _to_numpy(y_pred, "y_pred"))
    _check_same_shape(y_true, y_pred, "accuracy")
    return _per_sample_mean(y_true == y_pred)


def binary_accuracy(y_true, y_pred, threshold=0.5):
    """Accuracy of ``y_pred > threshold`` against binary labels, per sample.

    Args:
        y_true: labels in {0, 1}.
        y_pred: probabilities (or scores: choose ``threshold=0`` for logits).
        threshold: the decision threshold.

    Returns:
        ndarray of float64 of shape ``(N,)``.

    Shape:
        y_true, y_pred: ``(N,)``, ``(N, 1)`` or ``(N, D)`` (mean over the last axis).
    """
    y_true, y_pred = _squeeze_or_expand(_to_numpy(y_true, "y_true"), _to_numpy(y_pred, "y_pred"))
    _check_same_shape(y_true, y_pred, "binary_accuracy")
    return _per_sample_mean((y_pred > threshold) == (y_true > 0.5))


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
    y_true, y_pred = _to_numpy(y_true, "y_true"), _to_numpy(y_pred, "y_pred")
    _check_same_shape(y_true, y_pred, "categorical_accuracy")
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
    y_pred = _to_numpy(y_pred, "y_pred")
    y_true = _sparse_labels(_to_numpy(y_true, "y_true"), y_pred, "sparse_categorical_accuracy",
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
    y_true, y_pred = _to_numpy(y_true, "y_true"), _to_numpy(y_pred, "y_pred")
    _check_same_shape(y_true, y_pred, "top_k_categorical_accuracy")
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
    y_pred = _to_numpy(y_pred, "y_pred")
    y_true = _sparse_labels(_to_numpy(y_true, "y_true"), y_pred, "sparse_top_k_categorical_accuracy")
    return _in_top_k(y_pred, y_true, k)


def mean_squared_error(y_true, y_pred):
    """Mean of ``(y_true - y_pred)**2`` over the last axis.

    Returns:
        ndarray of float64 of shape ``(N,)``.

    Shape:
        y_true, y_pred: ``(N, ...)`` of the same shape (``(N,)`` vs ``(N, 1)`` is lined up).
    """
    y_true, y_pred = _squeeze_or_expand(_to_numpy(y_true, "y_true"), _to_numpy(y_pred, "y_pred"))
    _check_same_shape(y_true, y_pred, "mean_squared_error")
    diff = y_pred.astype(np.float64) - y_true.astype(np.float64)
    return _per_sample_mean(diff * diff)


def mean_absolute_error(y_true, y_pred):
    """Mean of ``|y_true - y_pred|`` over the last axis.

    Returns:
        ndarray of float64 of shape ``(N,)``.

    Shape:
        y_true, y_pred: ``(N, ...)`` of the same shape (``(N,)`` vs ``(N, 1)`` is lined up).
    """
    y_true, y_pred = _squeeze_or_expand(_to_numpy(y_true, "y_true"), _to_numpy(y_pred, "y_pred"))
    _check_same_shape(y_true, y_pred, "mean_absolute_error")
    return _per_sample_mean(np.abs(y_pred.astype(np.float64) - y_true.astype(np.float64)))


mse = mean_squared_error
mae = mean_absolute_error


# ---------------------------------------------------------------------------------------
# Metric objects
# ---------------------------------------------------------------------------------------

class Metric:
    """Base class: a weighted running mean of per-sample values.

    Subclasses either override ``update_state`` / ``result`` / ``reset_state`` entirely, or
    (the usual case) implement ``compute(y_true, y_pred)`` returning one value per sample
    and let this class keep ``total`` and ``count``.

    Args:
        name: the key under which ``fit`` logs the result (``"accuracy"``, ``"mae"``, ...).
        dtype: kept for Keras compatibility; results are Python floats computed in float64.
    """

    def __init__(self, name=None, dtype=None):
        if name is not None and not isinstance(name, str):
            raise TypeError(f"Invalid value for argument `name`: expected a str. Received: name={name!r}")
        self.name = name if name is not None else _registry.snake_case(type(self).__name__)
        self.dtype = dtype
        self.reset_state()

    # -- the protocol ---------------------------------------------------------------
    def compute(self, y_true, y_pred):
        """Per-sample values for one batch (ndarray of shape ``(N,)``)."""
        raise NotImplementedError(f"{type(self).__name__} must implement compute() or update_state().")

    def update_state(self, y_true, y_pred, sample_weight=None):
        """Add one batch.

        Args:
            y_true: true values (ndarray, list or Tensor).
            y_pred: predictions (ndarray, list or Tensor).
            sample_weight: optional weights, one per sample (shape ``(N,)``) or a scalar.
        """
        values = np.asarray(self.compute(y_true, y_pred), dtype=np.float64)
        self._accumulate(values, sample_weight)

    def _accumulate(self, values, sample_weight):
        values = np.atleast_1d(values)
        skipped = np.isnan(values)        # samples a metric skips (ignore_class): weight 0
        if sample_weight is None and not skipped.any():
            self.total += float(values.sum())
            self.count += float(values.size)
            return
        if sample_weight is None:
            weight = np.ones(values.shape)
        else:
            weight = _to_numpy(sample_weight, "sample_weight").astype(np.float64)
            if weight.ndim > values.ndim and weight.shape[-1] == 1:
                weight = weight.reshape(weight.shape[:-1])
            try:
                weight = np.broadcast_to(
                    weight.reshape(weight.shape + (1,) * (values.ndim - weight.ndim)), values.shape)
            except ValueError:
                raise ValueError(
                    f"Invalid value for argument `sample_weight`: expected a scalar or one weight "
                    f"per sample (shape {values.shape[:1]}). Received: "
                    f"sample_weight.shape={weight.shape}") from None
        if skipped.any():
            weight = np.where(skipped, 0.0, weight)
            values = np.where(skipped, 0.0, values)
        self.total += float(np.sum(values * weight))
        self.count += float(np.sum(weight))

    def result(self):
        """The weighted mean of everything added since the last reset (0.0 if nothing)."""
        return float(self.total / self.count) if self.count else 0.0

    def reset_state(self):
        """Forget all batches."""
        self.total = 0.0
        self.count = 0.0

    # Keras 2 spelling.
    def reset_states(self):
        self.reset_state()

    def __call__(self, y_true, y_pred, sample_weight=None):
        """Update with one batch and return the running result."""
        self.update_state(y_true, y_pred, sample_weight=sample_weight)
        return self.result()

    # -- config -----------------------------------------------------------------------
    def get_config(self):
        """JSON-able constructor arguments."""
        return {"name": self.name}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        args = ", ".join(f"{key}={value!r}" for key, value in self.get_config().items())
        return f"{type(self).__name__}({args})"


class Mean(Metric):
    """Weighted mean of the values passed to ``update_state(values, sample_weight=None)``.

    Example:
        >>> m = Mean(); m.update_state([1.0, 3.0]); m.result()
        2.0
    """

    def __init__(self, name="mean", dtype=None):
        super().__init__(name=name, dtype=dtype)

    def update_state(self, values, sample_weight=None):
        values = _to_numpy(values, "values").astype(np.float64)
        self._accumulate(values.reshape(-1) if sample_weight is None else values, sample_weight)


class MeanMetricWrapper(Metric):
    """Turns a function ``fn(y_true, y_pred, **kwargs) -> per-sample values`` into a metric.

    Args:
        fn: the per-sample function.
        name: metric name (default: ``fn.__name__``).
        **kwargs: extra keyword arguments passed to ``fn`` (e.g. ``threshold``).
    """

    def __init__(self, fn, name=None, dtype=None, **kwargs):
        if not callable(fn):
            raise TypeError(f"Invalid value for argument `fn`: expected a callable. Received: fn={fn!r}")
        self._fn = fn
        self._fn_kwargs = kwargs
        super().__init__(name=name if name is not None else getattr(fn, "__name__", "metric"), dtype=dtype)

    def compute(self, y_true, y_pred):
        values = self._fn(y_true, y_pred, **self._fn_kwargs)
        return _to_numpy(values, "values").astype(np.float64)

    def get_config(self):
        return {"name": self.name, **self._fn_kwargs}


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


class MeanSquaredError(MeanMetricWrapper):
    """Running mean of the squared error."""

    def __init__(self, name="mean_squared_error", dtype=None):
        super().__init__(mean_squared_error, name=name, dtype=dtype)


class MeanAbsoluteError(MeanMetricWrapper):
    """Running mean of the absolute error."""

    def __init__(self, name="mean_absolute_error", dtype=None):
        super().__init__(mean_absolute_error, name=name, dtype=dtype)


class _AutoAccuracy(Metric):
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
            true_array, pred_array = _to_numpy(y_true, "y_true"), _to_numpy(y_pred, "y_pred")
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


# ---------------------------------------------------------------------------------------
# Regression metrics added with issue 18
# ---------------------------------------------------------------------------------------

def mean_absolute_percentage_error(y_true, y_pred):
    """Keras's ``100 * mean(|y_true - y_pred| / max(|y_true|, 1e-7))`` over the last axis.

    Returns:
        ndarray of float64 of shape ``(N,)``.
    """
    y_true, y_pred = _squeeze_or_expand(_to_numpy(y_true, "y_true"), _to_numpy(y_pred, "y_pred"))
    _check_same_shape(y_true, y_pred, "mean_absolute_percentage_error")
    t, p = y_true.astype(np.float64), y_pred.astype(np.float64)
    return _per_sample_mean(100.0 * np.abs((t - p) / np.maximum(np.abs(t), 1e-7)))


mape = mean_absolute_percentage_error


class MeanAbsolutePercentageError(MeanMetricWrapper):
    """Running mean of the absolute percentage error (Keras's formula)."""

    def __init__(self, name="mean_absolute_percentage_error", dtype=None):
        super().__init__(mean_absolute_percentage_error, name=name, dtype=dtype)


class RootMeanSquaredError(Metric):
    """``sqrt(weighted mean of (y_pred - y_true)**2)`` over every element seen (Keras).

    Example:
        >>> m = RootMeanSquaredError(); m.update_state([[0.0, 1.0]], [[1.0, 1.0]]); m.result()
        0.7071067811865476
    """

    def __init__(self, name="root_mean_squared_error", dtype=None):
        super().__init__(name=name, dtype=dtype)

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true, y_pred = _squeeze_or_expand(_to_numpy(y_true, "y_true"), _to_numpy(y_pred, "y_pred"))
        _check_same_shape(y_true, y_pred, "root_mean_squared_error")
        error = (y_pred.astype(np.float64) - y_true.astype(np.float64)) ** 2
        self._accumulate(error, sample_weight)

    def result(self):
        return float(np.sqrt(self.total / self.count)) if self.count else 0.0


class R2Score(Metric):
    """Coefficient of determination ``1 - SS_res / SS_tot`` per output, streamed as Keras
    does (sums of y, y**2 and squared residuals per output).

    Args:
        class_aggregation: ``"uniform_average"`` (mean over outputs), ``"variance_weighted_average"``
            (weighted by each output's total sum of squares) or None (one score per output).
        num_regressors: ``p`` for the adjusted score ``1 - (1 - r2) (n - 1) / (n - p - 1)``.

    Shape:
        y_true, y_pred: ``(N,)`` or ``(N, outputs)``.
    """

    def __init__(self, class_aggregation="uniform_average", num_regressors=0, name="r2_score",
                 dtype=None):
        if class_aggregation not in ("uniform_average", "variance_weighted_average", None):
            raise invalid("class_aggregation", "'uniform_average', 'variance_weighted_average' or "
                          "None", class_aggregation)
        self.class_aggregation = class_aggregation
        self.num_regressors = check_int("num_regressors", num_regressors, minimum=0)
        super().__init__(name=name, dtype=dtype)

    def reset_state(self):
        self.sums = self.squared_sums = self.residuals = self.weights = None
        self.num_samples = 0

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true, y_pred = _squeeze_or_expand(_to_numpy(y_true, "y_true"), _to_numpy(y_pred, "y_pred"))
        _check_same_shape(y_true, y_pred, "r2_score")
        t = y_true.astype(np.float64).reshape(len(y_true), -1)
        p = y_pred.astype(np.float64).reshape(len(y_pred), -1)
        w = np.ones((len(t), 1)) if sample_weight is None else \
            np.broadcast_to(_to_numpy(sample_weight, "sample_weight").astype(np.float64).reshape(-1, 1)
                            if np.ndim(sample_weight) else np.float64(sample_weight), (len(t), 1))
        if self.sums is None:
            zeros = np.zeros(t.shape[1])
            self.sums, self.squared_sums, self.residuals, self.weights = (
                zeros.copy(), zeros.copy(), zeros.copy(), zeros.copy())
        elif t.shape[1] != self.sums.shape[0]:
            raise ValueError(f"r2_score: expected {self.sums.shape[0]} outputs as in earlier "
                             f"batches. Received: y_true.shape={y_true.shape}")
        self.sums += (w * t).sum(0)
        self.squared_sums += (w * t * t).sum(0)
        self.residuals += (w * (t - p) ** 2).sum(0)
        self.weights += np.broadcast_to(w, t.shape).sum(0)
        self.num_samples += len(t)

    def result(self):
        if self.sums is None:
            return 0.0
        with np.errstate(divide="ignore", invalid="ignore"):
            mean = self.sums / self.weights
            total = self.squared_sums - self.sums * mean
            raw = self.residuals / total
        raw = np.where(np.isinf(raw), 0.0, raw)
        scores = 1.0 - raw
        if self.class_aggregation == "uniform_average":
            r2 = float(np.mean(scores))
        elif self.class_aggregation == "variance_weighted_average":
            r2 = float(np.sum(scores * total) / np.sum(total))
        else:
            r2 = scores
        if self.num_regressors:
            n, p = self.num_samples, self.num_regressors
            if n - p - 1 > 0:
                r2 = 1.0 - (1.0 - r2) * (n - 1) / (n - p - 1)
        return r2

    def get_config(self):
        return {"class_aggregation": self.class_aggregation, "num_regressors": self.num_regressors,
                "name": self.name}


# ---------------------------------------------------------------------------------------
# Confusion-based classification metrics (issue 18): streamed counts, Keras's formulas
# ---------------------------------------------------------------------------------------

def _divide_no_nan(a, b):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return np.divide(a, b, out=np.zeros(np.broadcast(a, b).shape), where=b != 0)


def _check_thresholds(thresholds, default):
    if thresholds is None:
        return np.array([default]), True
    single = np.ndim(thresholds) == 0
    values = np.atleast_1d(np.asarray(thresholds, dtype=np.float64))
    if values.ndim != 1 or values.size == 0 or not np.all(np.isfinite(values)):
        raise invalid("thresholds", "a float or a list of floats", thresholds)
    return values, single


def _sample_weights(sample_weight, shape):
    """Weights broadcast over ``shape`` (one per sample along the first axis), float64."""
    if sample_weight is None:
        return np.ones(shape)
    w = _to_numpy(sample_weight, "sample_weight").astype(np.float64)
    if w.ndim and w.shape[-1] == 1 and w.ndim > 1:
        w = w.reshape(w.shape[:-1])
    try:
        return np.broadcast_to(w.reshape(w.shape + (1,) * (len(shape) - w.ndim)), shape)
    except ValueError:
        raise ValueError(f"Invalid value for argument `sample_weight`: expected a scalar or one "
                         f"weight per sample (shape {shape[:1]}). Received: "
                         f"sample_weight.shape={w.shape}") from None


class _ConfusionCounts(Metric):
    """True/false positives/negatives of ``y_pred > threshold`` at each threshold (Keras's
    ``update_confusion_matrix_variables``), optionally for one ``class_id`` or with only
    the ``top_k`` scores of each row counting as positive."""

    def __init__(self, thresholds=None, top_k=None, class_id=None, name=None, dtype=None):
        self.init_thresholds = thresholds
        self.thresholds, self._single = _check_thresholds(thresholds, 0.5)
        self.top_k = None if top_k is None else check_int("top_k", top_k, minimum=1)
        self.class_id = None if class_id is None else check_int("class_id", class_id, minimum=0)
        super().__init__(name=name, dtype=dtype)

    def reset_state(self):
        zeros = np.zeros(len(self.thresholds))
        self.true_positives, self.false_positives = zeros.copy(), zeros.copy()
        self.true_negatives, self.false_negatives = zeros.copy(), zeros.copy()

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true, y_pred = _squeeze_or_expand(_to_numpy(y_true, "y_true"), _to_numpy(y_pred, "y_pred"))
        _check_same_shape(y_true, y_pred, self.name)
        t = y_true.astype(np.float64)
        p = y_pred.astype(np.float64)
        w = _sample_weights(sample_weight, p.shape)
        if self.top_k is not None:         # keep the k highest scores of each row, others -inf
            kth = -np.sort(-p, axis=-1)[..., min(self.top_k, p.shape[-1]) - 1:][..., :1]
            p = np.where(p >= kth, p, -np.inf)
        if self.class_id is not None:
            t, p, w = t[..., self.class_id], p[..., self.class_id], w[..., self.class_id]
        t, p, w = t.reshape(-1) > 0.5, p.reshape(-1), w.reshape(-1)
        above = p[None, :] > self.thresholds[:, None]           # (thresholds, elements)
        self.true_positives += (above & t).astype(np.float64) @ w
        self.false_positives += (above & ~t).astype(np.float64) @ w
        self.true_negatives += (~above & ~t).astype(np.float64) @ w
        self.false_negatives += (~above & t).astype(np.float64) @ w

    def _out(self, values):
        return float(values[0]) if self._single else values

    def get_config(self):
        thresholds = self.init_thresholds
        if thresholds is not None and np.ndim(thresholds):
            thresholds = [float(v) for v in np.asarray(thresholds).ravel()]
        return {"thresholds": thresholds, "top_k": self.top_k, "class_id": self.class_id,
                "name": self.name}


class Precision(_ConfusionCounts):
    """``TP / (TP + FP)`` of ``y_pred > threshold`` (0.5 by default), streamed (Keras).

    Args:
        thresholds: a float, or a list (then ``result()`` is one value per threshold).
        top_k: only the ``k`` highest scores of each row count as positive.
        class_id: score only this class (column).
        name: metric name.

    Example:
        >>> m = Precision(); m.update_state([0, 1, 1, 1], [1, 0, 1, 1]); m.result()
        0.6666666666666666
    """

    def __init__(self, thresholds=None, top_k=None, class_id=None, name="precision", dtype=None):
        super().__init__(thresholds, top_k, class_id, name, dtype)

    def result(self):
        return self._out(_divide_no_nan(self.true_positives,
                                        self.true_positives + self.false_positives))


class Recall(_ConfusionCounts):
    """``TP / (TP + FN)`` of ``y_pred > threshold`` (0.5 by default), streamed (Keras).

    Args: as ``Precision``.

    Example:
        >>> m = Recall(); m.update_state([0, 1, 1, 1], [1, 0, 1, 1]); m.result()
        0.6666666666666666
    """

    def __init__(self, thresholds=None, top_k=None, class_id=None, name="recall", dtype=None):
        super().__init__(thresholds, top_k, class_id, name, dtype)

    def result(self):
        return self._out(_divide_no_nan(self.true_positives,
                                        self.true_positives + self.false_negatives))


class AUC(Metric):
    """Area under the ROC or precision-recall curve, from confusion counts at fixed
    thresholds (Keras's ``AUC``: the same thresholds, summation and PR interpolation).

    Thresholds: ``num_thresholds`` values ``[-1e-7, 1/(n-1), ..., (n-2)/(n-1), 1 + 1e-7]``,
    or the given ``thresholds`` with ``-1e-7`` and ``1 + 1e-7`` added. ROC sums trapezoids of
    (FPR, TPR); ``curve="PR"`` with ``"interpolation"`` uses Davis & Goadrich's
    interpolation, as Keras; ``"minoring"``/``"majoring"`` take the lower/upper rectangle.

    Args:
        num_thresholds: number of thresholds (> 1), default 200.
        curve: ``"ROC"`` or ``"PR"``.
        summation_method: ``"interpolation"``, ``"minoring"`` or ``"majoring"``.
        thresholds: optional explicit thresholds in [0, 1].
        multi_label: one curve per label (column), averaged (weighted by ``label_weights``).
        num_labels: kept for Keras compatibility (found from the data).
        label_weights: optional weights of the labels when averaging (``multi_label``).
        from_logits: apply a sigmoid to ``y_pred`` first.
        name: metric name.

    Example:
        >>> m = AUC(); m.update_state([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8]); round(m.result(), 3)
        0.75
    """

    def __init__(self, num_thresholds=200, curve="ROC", summation_method="interpolation",
                 name="auc", dtype=None, thresholds=None, multi_label=False, num_labels=None,
                 label_weights=None, from_logits=False):
        self.curve = str(curve).upper() if isinstance(curve, str) else curve
        if self.curve not in ("ROC", "PR"):
            raise invalid("curve", "'ROC' or 'PR'", curve)
        self.summation_method = summation_method.lower() if isinstance(summation_method, str) \
            else summation_method
        if self.summation_method not in ("interpolation", "minoring", "majoring"):
            raise invalid("summation_method", "'interpolation', 'minoring' or 'majoring'",
                          summation_method)
        eps = 1e-7
        if thresholds is not None:
            values, _ = _check_thresholds(thresholds, 0.5)
            self._init_thresholds = [float(v) for v in values]
            self.num_thresholds = len(values) + 2
            inner = np.sort(values)
        else:
            self.num_thresholds = check_int("num_thresholds", num_thresholds, minimum=2, maximum=10**6)
            self._init_thresholds = None
            n = self.num_thresholds
            inner = np.array([(i + 1) * 1.0 / (n - 1) for i in range(n - 2)])
        self.thresholds = np.concatenate([[0.0 - eps], inner, [1.0 + eps]])
        self.multi_label = bool(multi_label)
        self.num_labels = num_labels
        self.label_weights = None if label_weights is None else \
            np.asarray(label_weights, dtype=np.float64)
        self.from_logits = bool(from_logits)
        super().__init__(name=name, dtype=dtype)

    def reset_state(self):
        self.true_positives = self.false_positives = None
        self.true_negatives = self.false_negatives = None

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true, y_pred = _squeeze_or_expand(_to_numpy(y_true, "y_true"), _to_numpy(y_pred, "y_pred"))
        _check_same_shape(y_true, y_pred, self.name)
        p = y_pred.astype(np.float64)
        if self.from_logits:
            p = 1.0 / (1.0 + np.exp(-p))
        t = y_true.astype(np.float64) > 0.5
        w = _sample_weights(sample_weight, p.shape)
        if self.multi_label:
            t, p, w = (a.reshape(-1, a.shape[-1]) if a.ndim > 1 else a.reshape(-1, 1) for a in (t, p, w))
        else:
            t, p, w = t.reshape(-1, 1), p.reshape(-1, 1), w.reshape(-1, 1)
        above = p[None, :, :] > self.thresholds[:, None, None]      # (thresholds, N, labels)
        counts = [np.einsum("tnl,nl->tl", (above & t).astype(np.float64), w),
                  np.einsum("tnl,nl->tl", (above & ~t).astype(np.float64), w),
                  np.einsum("tnl,nl->tl", (~above & ~t).astype(np.float64), w),
                  np.einsum("tnl,nl->tl", (~above & t).astype(np.float64), w)]
        if self.true_positives is None:
            self.true_positives, self.false_positives, self.true_negatives, self.false_negatives = counts
        else:
            if counts[0].shape != self.true_positives.shape:
                raise ValueError(f"{self.name}: expected {self.true_positives.shape[1]} labels as in "
                                 f"earlier batches. Received: y_pred.shape={y_pred.shape}")
            self.true_positives = self.true_positives + counts[0]
            self.false_positives = self.false_positives + counts[1]
            self.true_negatives = self.true_negatives + counts[2]
            self.false_negatives = self.false_negatives + counts[3]

    def _interpolate_pr_auc(self):
        tp, fp, fn = self.true_positives, self.false_positives, self.false_negatives
        n = self.num_thresholds
        dtp = tp[: n - 1] - tp[1:]
        p = tp + fp
        dp = p[: n - 1] - p[1:]
        prec_slope = _divide_no_nan(dtp, np.maximum(dp, 0))
        intercept = tp[1:] - prec_slope * p[1:]
        safe_p_ratio = np.where((p[: n - 1] > 0) & (p[1:] > 0),
                                _divide_no_nan(p[: n - 1], np.maximum(p[1:], 0)), 1.0)
        return _divide_no_nan(prec_slope * (dtp + intercept * np.log(safe_p_ratio)),
                              np.maximum(tp[1:] + fn[1:], 0))

    def result(self):
        if self.true_positives is None:
            return 0.0
        n = self.num_thresholds
        if self.curve == "PR" and self.summation_method == "interpolation":
            terms = self._interpolate_pr_auc()
        else:
            tp, fp, tn, fn = (self.true_positives, self.false_positives, self.true_negatives,
                              self.false_negatives)
            recall = _divide_no_nan(tp, tp + fn)
            if self.curve == "ROC":
                x, y = _divide_no_nan(fp, fp + tn), recall
            else:
                x, y = recall, _divide_no_nan(tp, tp + fp)
            if self.summation_method == "interpolation":
                heights = (y[: n - 1] + y[1:]) / 2.0
            elif self.summation_method == "minoring":
                heights = np.minimum(y[: n - 1], y[1:])
            else:
                heights = np.maximum(y[: n - 1], y[1:])
            terms = (x[: n - 1] - x[1:]) * heights
        per_label = terms.sum(axis=0)
        if not self.multi_label:
            return float(per_label[0])
        if self.label_weights is None:
            return float(per_label.mean())
        return float(_divide_no_nan((per_label * self.label_weights).sum(), self.label_weights.sum()))

    def get_config(self):
        return {"num_thresholds": self.num_thresholds if self._init_thresholds is None else None,
                "curve": self.curve, "summation_method": self.summation_method, "name": self.name,
                "thresholds": self._init_thresholds, "multi_label": self.multi_label,
                "num_labels": self.num_labels,
                "label_weights": None if self.label_weights is None else self.label_weights.tolist(),
                "from_logits": self.from_logits}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if config.get("num_thresholds") is None:
            config.pop("num_thresholds", None)
        return cls(**config)


class FBetaScore(Metric):
    """F-beta score per class, streamed (Keras 3's ``FBetaScore``):
    ``(1 + b**2) P R / (b**2 P + R)`` with ``P = TP / (TP + FP)``, ``R = TP / (TP + FN)``
    (each denominator plus 1e-7).

    ``y_pred`` is binarised by ``threshold`` (``y_pred > threshold``), or, with
    ``threshold=None``, by taking each row's maximum as the one positive.

    Args:
        average: None (one score per class), ``"micro"`` (counts pooled over classes),
            ``"macro"`` (mean of the class scores) or ``"weighted"`` (weighted by the number
            of true instances of each class).
        beta: weight of recall, > 0.
        threshold: float in (0, 1], or None for the row maximum.
        name: metric name.

    Shape:
        y_true, y_pred: ``(N, C)`` (one-hot / multi-hot targets, scores).
    """

    def __init__(self, average=None, beta=1.0, threshold=None, name="fbeta_score", dtype=None):
        if average not in (None, "micro", "macro", "weighted"):
            raise invalid("average", "None, 'micro', 'macro' or 'weighted'", average)
        self.average = average
        self.beta = check_float("beta", beta, 0.0, low_open=True)
        self.threshold = None if threshold is None else check_float("threshold", threshold, 0.0, 1.0,
                                                                    low_open=True)
        super().__init__(name=name, dtype=dtype)

    def reset_state(self):
        self.true_positives = self.false_positives = self.false_negatives = None
        self.intermediate_weights = None

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true, y_pred = _to_numpy(y_true, "y_true"), _to_numpy(y_pred, "y_pred")
        _check_same_shape(y_true, y_pred, self.name)
        if y_pred.ndim != 2:
            raise ValueError(f"{self.name}: expected `y_pred` of shape (batch, classes). "
                             f"Received: y_pred.shape={y_pred.shape}")
        t = y_true.astype(np.float64)
        p = y_pred.astype(np.float64)
        if self.threshold is None:
            p = (p >= p.max(axis=-1, keepdims=True)).astype(np.float64)
        else:
            p = (p > self.threshold).astype(np.float64)
        w = _sample_weights(sample_weight, p.shape)
        axis = None if self.average == "micro" else 0
        counts = [np.sum(p * t * w, axis=axis), np.sum(p * (1 - t) * w, axis=axis),
                  np.sum((1 - p) * t * w, axis=axis), np.sum(t * w, axis=axis)]
        if self.true_positives is None:
            (self.true_positives, self.false_positives, self.false_negatives,
             self.intermediate_weights) = counts
        else:
            if np.shape(counts[0]) != np.shape(self.true_positives):
                raise ValueError(f"{self.name}: expected {np.size(self.true_positives)} classes as "
                                 f"in earlier batches. Received: y_pred.shape={y_pred.shape}")
            self.true_positives = self.true_positives + counts[0]
            self.false_positives = self.false_positives + counts[1]
            self.false_negatives = self.false_negatives + counts[2]
            self.intermediate_weights = self.intermediate_weights + counts[3]

    def result(self):
        if self.true_positives is None:
            return 0.0
        eps = 1e-7
        precision = self.true_positives / (self.true_positives + self.false_positives + eps)
        recall = self.true_positives / (self.true_positives + self.false_negatives + eps)
        b2 = self.beta ** 2
        score = (1 + b2) * (precision * recall) / (b2 * precision + recall + eps)
        if self.average == "weighted":
            weights = self.intermediate_weights / (np.sum(self.intermediate_weights) + eps)
            return float(np.sum(score * weights))
        if self.average is not None:
            return float(np.mean(score))
        return np.asarray(score)

    def get_config(self):
        return {"average": self.average, "beta": self.beta, "threshold": self.threshold,
                "name": self.name}


class F1Score(FBetaScore):
    """F1 score (``FBetaScore`` with ``beta=1``), Keras 3's arguments.

    Example:
        >>> m = F1Score(average="macro"); m.update_state(np.eye(3), np.eye(3)); round(m.result(), 4)
        1.0
    """

    def __init__(self, average=None, threshold=None, name="f1_score", dtype=None):
        super().__init__(average=average, beta=1.0, threshold=threshold, name=name, dtype=dtype)

    def get_config(self):
        config = super().get_config()
        config.pop("beta")
        return config


class MeanIoU(Metric):
    """Mean intersection-over-union over the classes, from a streamed confusion matrix
    (Keras): ``IoU_c = TP_c / (TP_c + FP_c + FN_c)``, averaged over the classes that occur
    (in the targets or the predictions).

    Args:
        num_classes: number of classes (>= 2).
        ignore_class: optional label whose pixels/samples are skipped.
        sparse_y_true: ``y_true`` holds labels (else one-hot on the last axis).
        sparse_y_pred: ``y_pred`` holds labels (else scores: argmax of the last axis).
        name: metric name.

    Example:
        >>> m = MeanIoU(num_classes=2); m.update_state([0, 0, 1, 1], [0, 1, 0, 1]); m.result()
        0.3333333333333333
    """

    def __init__(self, num_classes, name=None, dtype=None, ignore_class=None, sparse_y_true=True,
                 sparse_y_pred=True, axis=-1):
        self.num_classes = check_int("num_classes", num_classes, minimum=1)
        self.ignore_class = None if ignore_class is None else check_int("ignore_class", ignore_class)
        self.sparse_y_true = bool(sparse_y_true)
        self.sparse_y_pred = bool(sparse_y_pred)
        self.axis = check_int("axis", axis)
        super().__init__(name=name if name is not None else "mean_io_u", dtype=dtype)

    def reset_state(self):
        self.total_cm = np.zeros((self.num_classes, self.num_classes))

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true, y_pred = _to_numpy(y_true, "y_true"), _to_numpy(y_pred, "y_pred")
        if not self.sparse_y_true:
            y_true = np.argmax(y_true, axis=self.axis)
        if not self.sparse_y_pred:
            y_pred = np.argmax(y_pred, axis=self.axis)
        self.total_cm += confusion_matrix(y_true, y_pred, self.num_classes,
                                          weights=sample_weight, ignore_class=self.ignore_class)

    def result(self):
        cm = self.total_cm
        tp = np.diag(cm)
        denominator = cm.sum(axis=0) + cm.sum(axis=1) - tp
        valid = np.sum(denominator != 0)
        return float(_divide_no_nan(np.sum(_divide_no_nan(tp, denominator)), valid))

    def get_config(self):
        return {"num_classes": self.num_classes, "name": self.name, "ignore_class": self.ignore_class,
                "sparse_y_true": self.sparse_y_true, "sparse_y_pred": self.sparse_y_pred,
                "axis": self.axis}


def confusion_matrix(y_true, y_pred, num_classes=None, weights=None, ignore_class=None):
    """Confusion matrix of integer labels: entry ``[i, j]`` counts (or sums the weights of)
    samples of true class ``i`` predicted as ``j`` (``tf.math.confusion_matrix``).

    Args:
        y_true: integer labels, any shape.
        y_pred: integer predicted labels, the same number of elements (scores: take
            ``argmax(axis=-1)`` first).
        num_classes: number of classes (default: 1 + the largest label seen).
        weights: optional weight per sample (same shape as the labels), or a scalar.
        ignore_class: optional label of ``y_true`` whose samples are left out.

    Returns:
        ndarray ``(num_classes, num_classes)`` of float64.

    Example:
        >>> confusion_matrix([0, 1, 1], [0, 0, 1])
        array([[1., 0.],
               [1., 1.]])
    """
    t = _to_numpy(y_true, "y_true").reshape(-1)
    p = _to_numpy(y_pred, "y_pred").reshape(-1)
    if t.size != p.size:
        raise ValueError(f"confusion_matrix: `y_true` and `y_pred` must have as many labels. "
                         f"Received: {t.size} and {p.size}")
    w = np.ones(t.size) if weights is None else np.broadcast_to(
        _to_numpy(weights, "weights").astype(np.float64).reshape(-1) if np.ndim(weights)
        else np.float64(weights), (t.size,))
    if ignore_class is not None:
        keep = t != ignore_class
        t, p, w = t[keep], p[keep], w[keep]
    if num_classes is None:
        num_classes = int(max(t.max(initial=-1), p.max(initial=-1))) + 1 if t.size else 0
    num_classes = check_int("num_classes", num_classes, minimum=0)
    t = check_labels("y_true", t, num_classes)
    p = check_labels("y_pred", p, num_classes)
    cm = np.zeros((num_classes, num_classes))
    np.add.at(cm, (t, p), w)
    return cm


def classification_report(y_true, y_pred, target_names=None, digits=2, output_dict=False):
    """Per-class precision, recall, F1 and support, with macro and weighted averages, as
    scikit-learn's ``classification_report`` lays them out.

    Args:
        y_true: integer labels ``(N,)``.
        y_pred: integer predicted labels ``(N,)``, or scores ``(N, C)`` (argmax taken).
        target_names: optional names of the classes.
        digits: decimals in the text.
        output_dict: return a dict ``{class name: {"precision", "recall", "f1-score",
            "support"}, "accuracy": float, "macro avg": {...}, "weighted avg": {...}}``.

    Returns:
        The report as a str (or a dict).
    """
    y_pred = _to_numpy(y_pred, "y_pred")
    n_classes = y_pred.shape[-1] if y_pred.ndim == 2 else None
    if y_pred.ndim == 2:
        y_pred = np.argmax(y_pred, axis=-1)
    cm = confusion_matrix(y_true, y_pred, n_classes)
    tp = np.diag(cm)
    support = cm.sum(axis=1)
    precision = _divide_no_nan(tp, cm.sum(axis=0))
    recall = _divide_no_nan(tp, support)
    f1 = _divide_no_nan(2 * precision * recall, precision + recall)
    names = [str(i) for i in range(len(cm))] if target_names is None else [str(n) for n in target_names]
    if len(names) != len(cm):
        raise ValueError(f"Invalid value for argument `target_names`: expected {len(cm)} names. "
                         f"Received: {len(names)}")
    report = {name: {"precision": float(precision[i]), "recall": float(recall[i]),
                     "f1-score": float(f1[i]), "support": int(support[i])}
              for i, name in enumerate(names)}
    total = support.sum()
    report["accuracy"] = float(tp.sum() / total) if total else 0.0
    report["macro avg"] = {"precision": float(precision.mean()), "recall": float(recall.mean()),
                           "f1-score": float(f1.mean()), "support": int(total)}
    weights = _divide_no_nan(support, total)
    report["weighted avg"] = {"precision": float(precision @ weights),
                              "recall": float(recall @ weights), "f1-score": float(f1 @ weights),
                              "support": int(total)}
    if output_dict:
        return report
    width = max(len("weighted avg"), *(len(n) for n in names))
    head = f"{'':>{width}} {'precision':>9} {'recall':>9} {'f1-score':>9} {'support':>9}"
    lines = [head, ""]
    row = "{:>{w}} {:>9.{d}f} {:>9.{d}f} {:>9.{d}f} {:>9}"
    for name in names:
        r = report[name]
        lines.append(row.format(name, r["precision"], r["recall"], r["f1-score"], r["support"],
                                w=width, d=digits))
    lines.append("")
    lines.append(f"{'accuracy':>{width}} {'':>9} {'':>9} {report['accuracy']:>9.{digits}f} "
                 f"{int(total):>9}")
    for key in ("macro avg", "weighted avg"):
        r = report[key]
        lines.append(row.format(key, r["precision"], r["recall"], r["f1-score"], r["support"],
                                w=width, d=digits))
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------
# Lookup by name
# ---------------------------------------------------------------------------------------

_ALIASES = {
    MeanSquaredError: ("mse", "mean_squared_error"),
    MeanAbsoluteError: ("mae", "mean_absolute_error"),
    BinaryAccuracy: ("binary_accuracy",),
    CategoricalAccuracy: ("categorical_accuracy",),
    SparseCategoricalAccuracy: ("sparse_categorical_accuracy",),
    TopKCategoricalAccuracy: ("top_k_categorical_accuracy",),
    SparseTopKCategoricalAccuracy: ("sparse_top_k_categorical_accuracy",),
    Mean: (), Accuracy: (),
    MeanAbsolutePercentageError: ("mape", "mean_absolute_percentage_error"),
    RootMeanSquaredError: ("rmse", "root_mean_squared_error"),
    R2Score: ("r2_score",),
    Precision: ("precision",),
    Recall: ("recall",),
    AUC: ("auc",),
    FBetaScore: ("fbeta_score",),
    F1Score: ("f1_score",),
    MeanIoU: ("mean_iou",),
}
_ALIAS_NAMES = {alias for names in _ALIASES.values() for alias in names}


def _register(table):
    for cls, names in table.items():
        _registry.register("metric", cls, aliases=names)


_register(_ALIASES)


def _loss_kind(loss):
    """'binary', 'categorical', 'sparse' or None, from a loss object, class or name."""
    if loss is None:
        return None
    if isinstance(loss, str):
        name = loss
    elif isinstance(loss, type):
        name = loss.__name__
    else:
        name = getattr(loss, "__name__", None) or type(loss).__name__
    key = _registry.normalize_name(name)
    if key in ("binarycrossentropy", "bce", "binaryfocalcrossentropy"):
        return "binary"
    if key in ("categoricalcrossentropy", "cce", "categoricalfocalcrossentropy"):
        return "categorical"
    if key in ("sparsecategoricalcrossentropy", "scce"):
        return "sparse"
    return None


def _accuracy_for_loss(name, loss):
    """``"accuracy"`` as the loss means it (#13.6): a logits loss thresholds at 0, a loss
    with ``ignore_class`` skips those labels; None when the loss does not tell."""
    kind = _loss_kind(loss)
    from_logits = bool(getattr(loss, "from_logits", False)) and not isinstance(loss, (str, type))
    if kind == "binary":
        return BinaryAccuracy(name=name, threshold=0.0 if from_logits else 0.5)
    if kind == "categorical":
        return CategoricalAccuracy(name=name)
    if kind == "sparse":
        ignore_class = None if isinstance(loss, (str, type)) else getattr(loss, "ignore_class", None)
        return SparseCategoricalAccuracy(name=name, ignore_class=ignore_class)
    return None


def get(identifier, loss=None, custom_objects=None):
    """Resolve a metric identifier to a ``Metric`` instance.

    Args:
        identifier: a ``Metric`` instance (returned as is), a ``Metric`` subclass, a name
            (``"accuracy"``/``"acc"``, ``"mse"``, ``"mae"``, ``"mape"``, ``"binary_accuracy"``,
            ``"top_k_categorical_accuracy"``, ``"precision"``, ``"auc"``, ..., or a class name),
            a ``serialize`` dict, or a callable ``fn(y_true, y_pred) -> per-sample values``
            (wrapped, named ``fn.__name__``).
        loss: the compiled loss (object, class or name), used to pick the accuracy kind
            for ``"accuracy"``: binary cross-entropy -> ``BinaryAccuracy`` (threshold 0 with
            ``from_logits=True``), categorical -> ``CategoricalAccuracy``, sparse categorical
            -> ``SparseCategoricalAccuracy`` (skipping the loss's ``ignore_class``). With any
            other loss the kind is decided from the shapes at the first update.
        custom_objects: optional ``{name: class}`` for custom metrics.

    Returns:
        A ``Metric``. ``"accuracy"``/``"acc"`` keep the identifier as their name, so the
        logs say ``accuracy`` / ``val_accuracy`` as in Keras.

    Example:
        >>> get("accuracy", loss="sparse_categorical_crossentropy")
        SparseCategoricalAccuracy(name='accuracy')
    """
    if isinstance(identifier, Metric):
        return identifier
    if isinstance(identifier, type) and issubclass(identifier, Metric):
        return identifier()
    if isinstance(identifier, str):
        if identifier in ("accuracy", "acc"):
            metric = _accuracy_for_loss(identifier, loss)
            return metric if metric is not None else _AutoAccuracy(name=identifier)
        cls = _registry.lookup("metric", identifier, custom_objects)
        if isinstance(cls, type) and identifier in _ALIAS_NAMES:
            return cls(name=identifier)      # logs say "mae", as the user wrote it
        return cls() if isinstance(cls, type) else MeanMetricWrapper(cls, name=identifier)
    if isinstance(identifier, dict):
        return deserialize(identifier, custom_objects)
    if callable(identifier):
        return MeanMetricWrapper(identifier)
    raise TypeError(f"Invalid value for argument `identifier`: expected a str, a Metric or a callable. "
                    f"Received: identifier={identifier!r}")


def serialize(metric):
    """``{"class_name": ..., "config": ...}`` for a built-in metric."""
    if isinstance(metric, _AutoAccuracy):
        return {"class_name": "accuracy", "config": {"name": metric.name}}
    return _registry.serialize("metric", metric)


def deserialize(config, custom_objects=None):
    """Inverse of ``serialize``."""
    if isinstance(config, dict) and config.get("class_name") == "accuracy":
        return _AutoAccuracy(**dict(config.get("config") or {}))
    if not isinstance(config, dict):
        raise ValueError(f"Invalid value for argument `config`: expected a dict with 'class_name'. "
                         f"Received: config={config!r}")
    return _registry.deserialize("metric", config, custom_objects)
