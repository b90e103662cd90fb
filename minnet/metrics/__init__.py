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

The package is split by job: ``base`` (the ``Metric`` protocol, ``Mean``,
``MeanMetricWrapper``), ``accuracy``, ``regression`` and ``confusion`` (precision, recall,
AUC, F-scores, IoU, confusion matrix); this module re-exports every public name and
resolves metrics by name (``get`` / ``serialize`` / ``deserialize``).
"""
from minnet import _registry
from minnet.metrics.accuracy import Accuracy, AutoAccuracy, BinaryAccuracy, CategoricalAccuracy, \
    SparseCategoricalAccuracy, SparseTopKCategoricalAccuracy, TopKCategoricalAccuracy, accuracy, \
    binary_accuracy, categorical_accuracy, sparse_categorical_accuracy, \
    sparse_top_k_categorical_accuracy, top_k_categorical_accuracy
from minnet.metrics.base import Mean, MeanMetricWrapper, Metric
from minnet.metrics.confusion import AUC, F1Score, FBetaScore, MeanIoU, Precision, Recall, \
    classification_report, confusion_matrix
from minnet.metrics.regression import MeanAbsoluteError, MeanAbsolutePercentageError, \
    MeanSquaredError, R2Score, RootMeanSquaredError, mae, mape, mean_absolute_error, \
    mean_absolute_percentage_error, mean_squared_error, mse
from minnet.metrics.iou import BinaryIoU, IoU, OneHotIoU, OneHotMeanIoU
from minnet.metrics.thresholds import FalseNegatives, FalsePositives, PrecisionAtRecall, \
    RecallAtPrecision, SensitivityAtSpecificity, SpecificityAtSensitivity, TrueNegatives, \
    TruePositives
from minnet.metrics.probabilistic import BinaryCrossentropy, CategoricalCrossentropy, \
    CategoricalHinge, ConcordanceCorrelation, CosineSimilarity, Hinge, KLDivergence, \
    LogCoshError, MeanSquaredLogarithmicError, PearsonCorrelation, Poisson, \
    SparseCategoricalCrossentropy, SquaredHinge, Sum, binary_crossentropy, \
    binary_focal_crossentropy, categorical_crossentropy, categorical_focal_crossentropy, \
    categorical_hinge, concordance_correlation, hinge, huber, kl_divergence, log_cosh, \
    mean_squared_logarithmic_error, pearson_correlation, poisson, \
    sparse_categorical_crossentropy, squared_hinge

__all__ = [
    "Metric", "Mean", "MeanMetricWrapper", "Accuracy", "BinaryAccuracy", "CategoricalAccuracy",
    "SparseCategoricalAccuracy", "TopKCategoricalAccuracy", "SparseTopKCategoricalAccuracy",
    "MeanSquaredError", "MeanAbsoluteError", "MeanAbsolutePercentageError", "RootMeanSquaredError",
    "R2Score", "Precision", "Recall", "AUC", "FBetaScore", "F1Score", "MeanIoU",
    "confusion_matrix", "classification_report", "mean_absolute_percentage_error", "mape",
    "accuracy", "binary_accuracy", "categorical_accuracy", "sparse_categorical_accuracy",
    "top_k_categorical_accuracy", "sparse_top_k_categorical_accuracy",
    "mean_squared_error", "mean_absolute_error", "mse", "mae", "get", "serialize", "deserialize",
    "IoU", "BinaryIoU", "OneHotIoU", "OneHotMeanIoU", "TruePositives", "FalsePositives",
    "TrueNegatives", "FalseNegatives", "PrecisionAtRecall", "RecallAtPrecision",
    "SensitivityAtSpecificity", "SpecificityAtSensitivity", "BinaryCrossentropy",
    "CategoricalCrossentropy", "SparseCategoricalCrossentropy", "KLDivergence", "Poisson",
    "Hinge", "SquaredHinge", "CategoricalHinge", "LogCoshError", "MeanSquaredLogarithmicError",
    "CosineSimilarity", "Sum", "PearsonCorrelation", "ConcordanceCorrelation",
    "binary_crossentropy", "binary_focal_crossentropy", "categorical_crossentropy",
    "categorical_focal_crossentropy", "sparse_categorical_crossentropy", "kl_divergence",
    "poisson", "hinge", "squared_hinge", "categorical_hinge", "huber", "log_cosh",
    "mean_squared_logarithmic_error", "pearson_correlation", "concordance_correlation",
]


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
    IoU: (), BinaryIoU: (), OneHotIoU: (), OneHotMeanIoU: (), TruePositives: (),
    FalsePositives: (), TrueNegatives: (), FalseNegatives: (), PrecisionAtRecall: (),
    RecallAtPrecision: (), SensitivityAtSpecificity: (), SpecificityAtSensitivity: (),
    BinaryCrossentropy: ("binary_crossentropy",),
    CategoricalCrossentropy: ("categorical_crossentropy",),
    SparseCategoricalCrossentropy: ("sparse_categorical_crossentropy",),
    KLDivergence: ("kl_divergence", "kld"), Poisson: ("poisson",), Hinge: ("hinge",),
    SquaredHinge: ("squared_hinge",), CategoricalHinge: ("categorical_hinge",),
    LogCoshError: ("logcosh", "log_cosh"),
    MeanSquaredLogarithmicError: ("msle", "mean_squared_logarithmic_error"),
    CosineSimilarity: ("cosine_similarity",), Sum: (), PearsonCorrelation: (),
    ConcordanceCorrelation: (),
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
            return metric if metric is not None else AutoAccuracy(name=identifier)
        cls = _registry.lookup("metric", identifier, custom_objects, also=("accuracy", "acc"))
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
    if isinstance(metric, AutoAccuracy):
        return {"class_name": "accuracy", "config": {"name": metric.name}}
    return _registry.serialize("metric", metric)


def deserialize(config, custom_objects=None):
    """Inverse of ``serialize``."""
    if isinstance(config, dict) and config.get("class_name") == "accuracy":
        return AutoAccuracy(**dict(config.get("config") or {}))
    if not isinstance(config, dict):
        raise ValueError(f"Invalid value for argument `config`: expected a dict with 'class_name'. "
                         f"Received: config={config!r}")
    return _registry.deserialize("metric", config, custom_objects)
