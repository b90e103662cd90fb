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
    "MeanSquaredError", "MeanAbsoluteError",
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
