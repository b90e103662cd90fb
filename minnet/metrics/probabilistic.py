"""Keras 3's loss-shaped metrics (the running mean of a loss function's per-sample values:
the cross-entropies, KL divergence, Poisson, the hinges, log-cosh, MSLE), ``CosineSimilarity``
(positive, unlike the loss), ``Sum``, ``PearsonCorrelation``, ``ConcordanceCorrelation`` and
their function forms, which return ndarrays as the other ``metrics`` functions do."""
import numpy as np

from minnet import losses
from minnet.config import epsilon
from minnet.metrics.base import Metric, MeanMetricWrapper, squeeze_or_expand, to_numpy
from minnet._checks import check_axes_in_range

__all__ = [
    "BinaryCrossentropy", "CategoricalCrossentropy", "SparseCategoricalCrossentropy",
    "KLDivergence", "Poisson", "Hinge", "SquaredHinge", "CategoricalHinge", "LogCoshError",
    "MeanSquaredLogarithmicError", "CosineSimilarity", "Sum", "PearsonCorrelation",
    "ConcordanceCorrelation", "binary_crossentropy", "binary_focal_crossentropy",
    "categorical_crossentropy", "categorical_focal_crossentropy",
    "sparse_categorical_crossentropy", "kl_divergence", "poisson", "hinge", "squared_hinge",
    "categorical_hinge", "huber", "log_cosh", "mean_squared_logarithmic_error",
    "pearson_correlation", "concordance_correlation",
]


def _numpy_of(fn):
    def metric_function(y_true, y_pred, **kwargs):
        return to_numpy(fn(y_true, y_pred, **kwargs), "values").astype(np.float64)
    metric_function.__name__ = fn.__name__
    metric_function.__doc__ = f"``losses.{fn.__name__}``'s per-sample values as an ndarray."
    return metric_function


binary_crossentropy = _numpy_of(losses.binary_crossentropy)
binary_focal_crossentropy = _numpy_of(losses.binary_focal_crossentropy)
categorical_crossentropy = _numpy_of(losses.categorical_crossentropy)
categorical_focal_crossentropy = _numpy_of(losses.categorical_focal_crossentropy)
sparse_categorical_crossentropy = _numpy_of(losses.sparse_categorical_crossentropy)
kl_divergence = _numpy_of(losses.kl_divergence)
poisson = _numpy_of(losses.poisson)
hinge = _numpy_of(losses.hinge)
squared_hinge = _numpy_of(losses.squared_hinge)
categorical_hinge = _numpy_of(losses.categorical_hinge)
huber = _numpy_of(losses.huber)
log_cosh = _numpy_of(losses.log_cosh)
mean_squared_logarithmic_error = _numpy_of(losses.mean_squared_logarithmic_error)


def _paired(y_true, y_pred):
    y_true, y_pred = to_numpy(y_true, "y_true"), to_numpy(y_pred, "y_pred")
    return squeeze_or_expand(y_true.astype(np.float64), y_pred.astype(np.float64))


def pearson_correlation(y_true, y_pred, axis=-1):
    """Keras's Pearson correlation of each row along ``axis`` (population std)."""
    t, p = _paired(y_true, y_pred)
    t = t - t.mean(axis=axis, keepdims=True)
    p = p - p.mean(axis=axis, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = t / t.std(axis=axis, keepdims=True)
        p = p / p.std(axis=axis, keepdims=True)
    return (t * p).mean(axis=axis)


def concordance_correlation(y_true, y_pred, axis=-1):
    """Keras's concordance correlation along ``axis``, term for term as Keras 3.15 writes it:
    ``mean(2 (t - mean p)(p - mean p) / (var t + var p + (mean t - mean p)**2 + eps))``."""
    t, p = _paired(y_true, y_pred)
    t_mean, p_mean = t.mean(axis=axis, keepdims=True), p.mean(axis=axis, keepdims=True)
    t_var, p_var = t.var(axis=axis, keepdims=True), p.var(axis=axis, keepdims=True)
    covariance = (t - p_mean) * (p - p_mean)
    norm = t_var + p_var + (t_mean - p_mean) ** 2
    return (2.0 * covariance / (norm + epsilon())).mean(axis=axis)


def _cosine(y_true, y_pred, axis=-1):
    t, p = _paired(y_true, y_pred)
    axis = check_axes_in_range(axis, p.shape, "CosineSimilarity")
    t = t / np.sqrt(np.maximum((t * t).sum(axis=axis, keepdims=True), 1e-12))
    p = p / np.sqrt(np.maximum((p * p).sum(axis=axis, keepdims=True), 1e-12))
    return (t * p).sum(axis=axis)


class _Wrapper(MeanMetricWrapper):
    """A MeanMetricWrapper whose function is fixed by the subclass (config: name + kwargs)."""


class BinaryCrossentropy(_Wrapper):
    """Running mean of ``losses.binary_crossentropy``."""

    def __init__(self, name="binary_crossentropy", dtype=None, from_logits=False,
                 label_smoothing=0.0):
        MeanMetricWrapper.__init__(self, binary_crossentropy, name=name, dtype=dtype,
                                   from_logits=from_logits, label_smoothing=label_smoothing)


class CategoricalCrossentropy(_Wrapper):
    """Running mean of ``losses.categorical_crossentropy``."""

    def __init__(self, name="categorical_crossentropy", dtype=None, from_logits=False,
                 label_smoothing=0.0, axis=-1):
        MeanMetricWrapper.__init__(self, categorical_crossentropy, name=name, dtype=dtype,
                                   from_logits=from_logits, label_smoothing=label_smoothing,
                                   axis=axis)


class SparseCategoricalCrossentropy(_Wrapper):
    """Running mean of ``losses.sparse_categorical_crossentropy``."""

    def __init__(self, name="sparse_categorical_crossentropy", dtype=None, from_logits=False,
                 axis=-1):
        MeanMetricWrapper.__init__(self, sparse_categorical_crossentropy, name=name, dtype=dtype,
                                   from_logits=from_logits, axis=axis)


def _simple(class_name, fn, default, doc):
    def __init__(self, name=default, dtype=None):
        MeanMetricWrapper.__init__(self, fn, name=name, dtype=dtype)
    return type(class_name, (_Wrapper,), {"__init__": __init__, "__doc__": doc,
                                          "__module__": __name__})


KLDivergence = _simple("KLDivergence", kl_divergence, "kl_divergence",
                       "Running mean of ``losses.kl_divergence``.")
Poisson = _simple("Poisson", poisson, "poisson", "Running mean of ``losses.poisson``.")
Hinge = _simple("Hinge", hinge, "hinge", "Running mean of ``losses.hinge``.")
SquaredHinge = _simple("SquaredHinge", squared_hinge, "squared_hinge",
                       "Running mean of ``losses.squared_hinge``.")
CategoricalHinge = _simple("CategoricalHinge", categorical_hinge, "categorical_hinge",
                           "Running mean of ``losses.categorical_hinge``.")
LogCoshError = _simple("LogCoshError", log_cosh, "logcosh", "Running mean of ``losses.log_cosh``.")
MeanSquaredLogarithmicError = _simple(
    "MeanSquaredLogarithmicError", mean_squared_logarithmic_error,
    "mean_squared_logarithmic_error", "Running mean of ``losses.mean_squared_logarithmic_error``.")


class CosineSimilarity(_Wrapper):
    """Running mean of the cosine similarity ``sum(t^ p^)`` along ``axis`` (positive: the
    metric, not the loss)."""

    def __init__(self, name="cosine_similarity", dtype=None, axis=-1):
        MeanMetricWrapper.__init__(self, _cosine, name=name, dtype=dtype, axis=axis)


class PearsonCorrelation(_Wrapper):
    """Running mean of the per-row ``pearson_correlation`` (Keras)."""

    def __init__(self, name="pearson_correlation", dtype=None, axis=-1):
        MeanMetricWrapper.__init__(self, pearson_correlation, name=name, dtype=dtype, axis=axis)


class ConcordanceCorrelation(_Wrapper):
    """Running mean of the per-row ``concordance_correlation`` (Keras)."""

    def __init__(self, name="concordance_correlation", dtype=None, axis=-1):
        MeanMetricWrapper.__init__(self, concordance_correlation, name=name, dtype=dtype,
                                   axis=axis)


class Sum(Metric):
    """Weighted sum of the values given to ``update_state(values, sample_weight=None)``.

    Example:
        >>> m = Sum(); m.update_state([1.0, 3.0, 5.0]); m.result()
        9.0
    """

    def __init__(self, name="sum", dtype=None):
        super().__init__(name=name, dtype=dtype)

    def reset_state(self):
        self.total = 0.0

    def update_state(self, values, sample_weight=None):
        values = to_numpy(values, "values").astype(np.float64)
        if sample_weight is not None:
            weight = to_numpy(sample_weight, "sample_weight").astype(np.float64)
            values = values * weight.reshape(weight.shape + (1,) * (values.ndim - weight.ndim))
        self.total += float(values.sum())

    def result(self):
        return self.total

    def __call__(self, values, sample_weight=None):
        self.update_state(values, sample_weight=sample_weight)
        return self.result()
