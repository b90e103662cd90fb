"""Keras 3's loss functions (``losses.mean_squared_error(y_true, y_pred)``, ...): the
per-sample values of the matching loss class, unreduced and unweighted, as a Tensor.

Each is ``LossClass(reduction="none", **arguments)(y_true, y_pred)``, so the numbers,
gradients and shape rules are the class's (``docs/losses_and_metrics.md``).

Example:
    >>> mean_squared_error([[0.0, 1.0]], mn.tensor([[1.0, 1.0]])).numpy()
    array([0.5], dtype=float32)
"""
from minnet.losses.hinges import CategoricalHinge, Hinge, SquaredHinge
from minnet.losses.overlap import CategoricalGeneralizedCrossEntropy, Dice, Tversky
from minnet.losses.probabilistic import BinaryCrossentropy, BinaryFocalCrossentropy, \
    CategoricalCrossentropy, CategoricalFocalCrossentropy, KLDivergence, Poisson, \
    SparseCategoricalCrossentropy
from minnet.losses.regression import CosineSimilarity, Huber, LogCosh, MeanAbsoluteError, \
    MeanAbsolutePercentageError, MeanSquaredError, MeanSquaredLogarithmicError

__all__ = [
    "mean_squared_error", "mean_absolute_error", "mean_absolute_percentage_error",
    "mean_squared_logarithmic_error", "huber", "log_cosh", "cosine_similarity",
    "binary_crossentropy", "binary_focal_crossentropy", "categorical_crossentropy",
    "categorical_focal_crossentropy", "sparse_categorical_crossentropy", "kl_divergence",
    "poisson", "hinge", "squared_hinge", "categorical_hinge", "dice", "tversky",
    "categorical_generalized_cross_entropy",
]


def _values(cls, y_true, y_pred, **arguments):
    return cls(reduction="none", **arguments)(y_true, y_pred)


def mean_squared_error(y_true, y_pred):
    """``mean((y_true - y_pred)**2, axis=-1)``."""
    return _values(MeanSquaredError, y_true, y_pred)


def mean_absolute_error(y_true, y_pred):
    """``mean(abs(y_true - y_pred), axis=-1)``."""
    return _values(MeanAbsoluteError, y_true, y_pred)


def mean_absolute_percentage_error(y_true, y_pred):
    """``100 * mean(abs((y_true - y_pred) / max(abs(y_true), eps)), axis=-1)``."""
    return _values(MeanAbsolutePercentageError, y_true, y_pred)


def mean_squared_logarithmic_error(y_true, y_pred):
    """``mean((log(y_pred + 1) - log(y_true + 1))**2, axis=-1)`` (values clipped at eps)."""
    return _values(MeanSquaredLogarithmicError, y_true, y_pred)


def huber(y_true, y_pred, delta=1.0):
    """Huber loss per sample (``Huber(delta)``)."""
    return _values(Huber, y_true, y_pred, delta=delta)


def log_cosh(y_true, y_pred):
    """``mean(log(cosh(y_pred - y_true)), axis=-1)``."""
    return _values(LogCosh, y_true, y_pred)


def cosine_similarity(y_true, y_pred, axis=-1):
    """``-sum(l2_normalize(y_true) * l2_normalize(y_pred), axis)``."""
    return _values(CosineSimilarity, y_true, y_pred, axis=axis)


def binary_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    """Binary cross-entropy per sample (``BinaryCrossentropy``)."""
    return _values(BinaryCrossentropy, y_true, y_pred, from_logits=from_logits,
                   label_smoothing=label_smoothing, axis=axis)


def binary_focal_crossentropy(y_true, y_pred, apply_class_balancing=False, alpha=0.25, gamma=2.0,
                              from_logits=False, label_smoothing=0.0, axis=-1):
    """Binary focal cross-entropy per sample (``BinaryFocalCrossentropy``)."""
    return _values(BinaryFocalCrossentropy, y_true, y_pred,
                   apply_class_balancing=apply_class_balancing, alpha=alpha, gamma=gamma,
                   from_logits=from_logits, label_smoothing=label_smoothing, axis=axis)


def categorical_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    """Categorical cross-entropy per sample (``CategoricalCrossentropy``)."""
    return _values(CategoricalCrossentropy, y_true, y_pred, from_logits=from_logits,
                   label_smoothing=label_smoothing, axis=axis)


def categorical_focal_crossentropy(y_true, y_pred, alpha=0.25, gamma=2.0, from_logits=False,
                                   label_smoothing=0.0, axis=-1):
    """Categorical focal cross-entropy per sample (``CategoricalFocalCrossentropy``)."""
    return _values(CategoricalFocalCrossentropy, y_true, y_pred, alpha=alpha, gamma=gamma,
                   from_logits=from_logits, label_smoothing=label_smoothing, axis=axis)


def sparse_categorical_crossentropy(y_true, y_pred, from_logits=False, ignore_class=None,
                                    axis=-1):
    """Sparse categorical cross-entropy per sample (``SparseCategoricalCrossentropy``);
    ``axis`` must be -1 (the class axis last)."""
    if axis != -1:
        raise ValueError(f"Invalid value for argument `axis`: expected -1 (the class axis "
                         f"last). Received: axis={axis!r}")
    return _values(SparseCategoricalCrossentropy, y_true, y_pred, from_logits=from_logits,
                   ignore_class=ignore_class)


def kl_divergence(y_true, y_pred):
    """``sum(t * log(t / p), axis=-1)`` with both clipped to ``[eps, 1]``."""
    return _values(KLDivergence, y_true, y_pred)


def poisson(y_true, y_pred):
    """``mean(y_pred - y_true * log(y_pred + eps), axis=-1)``."""
    return _values(Poisson, y_true, y_pred)


def hinge(y_true, y_pred):
    """``mean(max(1 - y_true * y_pred, 0), axis=-1)`` (0/1 labels mapped to -1/1)."""
    return _values(Hinge, y_true, y_pred)


def squared_hinge(y_true, y_pred):
    """``mean(max(1 - y_true * y_pred, 0)**2, axis=-1)``."""
    return _values(SquaredHinge, y_true, y_pred)


def categorical_hinge(y_true, y_pred):
    """``max(max((1 - t) * p) - sum(t * p) + 1, 0)`` per sample."""
    return _values(CategoricalHinge, y_true, y_pred)


def dice(y_true, y_pred, axis=None):
    """``1 - 2 sum(t p) / (sum(t) + sum(p) + eps)`` over ``axis`` (None: everything)."""
    return _values(Dice, y_true, y_pred, axis=axis)


def tversky(y_true, y_pred, alpha=0.5, beta=0.5, axis=None):
    """The Tversky loss over ``axis`` (``Tversky``)."""
    return _values(Tversky, y_true, y_pred, alpha=alpha, beta=beta, axis=axis)


def categorical_generalized_cross_entropy(y_true, y_pred, q):
    """``(1 - p_y**q) / q`` per sample, integer labels ``y``."""
    return _values(CategoricalGeneralizedCrossEntropy, y_true, y_pred, q=q)
