"""Regression metrics: mean squared / absolute / absolute percentage error (per-sample
functions and ``Metric`` objects), ``RootMeanSquaredError`` and ``R2Score``."""
import numpy as np

from minnet._checks import check_int, invalid
from minnet.metrics.base import Metric, MeanMetricWrapper, check_same_shape, per_sample_mean, \
    squeeze_or_expand, to_numpy

__all__ = [
    "mean_squared_error", "mean_absolute_error", "mse", "mae", "MeanSquaredError",
    "MeanAbsoluteError", "mean_absolute_percentage_error", "mape", "MeanAbsolutePercentageError",
    "RootMeanSquaredError", "R2Score",
]


def mean_squared_error(y_true, y_pred):
    """Mean of ``(y_true - y_pred)**2`` over the last axis.

    Returns:
        ndarray of float64 of shape ``(N,)``.

    Shape:
        y_true, y_pred: ``(N, ...)`` of the same shape (``(N,)`` vs ``(N, 1)`` is lined up).
    """
    y_true, y_pred = squeeze_or_expand(to_numpy(y_true, "y_true"), to_numpy(y_pred, "y_pred"))
    check_same_shape(y_true, y_pred, "mean_squared_error")
    diff = y_pred.astype(np.float64) - y_true.astype(np.float64)
    return per_sample_mean(diff * diff)


def mean_absolute_error(y_true, y_pred):
    """Mean of ``|y_true - y_pred|`` over the last axis.

    Returns:
        ndarray of float64 of shape ``(N,)``.

    Shape:
        y_true, y_pred: ``(N, ...)`` of the same shape (``(N,)`` vs ``(N, 1)`` is lined up).
    """
    y_true, y_pred = squeeze_or_expand(to_numpy(y_true, "y_true"), to_numpy(y_pred, "y_pred"))
    check_same_shape(y_true, y_pred, "mean_absolute_error")
    return per_sample_mean(np.abs(y_pred.astype(np.float64) - y_true.astype(np.float64)))


mse = mean_squared_error
mae = mean_absolute_error


class MeanSquaredError(MeanMetricWrapper):
    """Running mean of the squared error."""

    def __init__(self, name="mean_squared_error", dtype=None):
        super().__init__(mean_squared_error, name=name, dtype=dtype)


class MeanAbsoluteError(MeanMetricWrapper):
    """Running mean of the absolute error."""

    def __init__(self, name="mean_absolute_error", dtype=None):
        super().__init__(mean_absolute_error, name=name, dtype=dtype)


def mean_absolute_percentage_error(y_true, y_pred):
    """Keras's ``100 * mean(|y_true - y_pred| / max(|y_true|, 1e-7))`` over the last axis.

    Returns:
        ndarray of float64 of shape ``(N,)``.
    """
    y_true, y_pred = squeeze_or_expand(to_numpy(y_true, "y_true"), to_numpy(y_pred, "y_pred"))
    check_same_shape(y_true, y_pred, "mean_absolute_percentage_error")
    t, p = y_true.astype(np.float64), y_pred.astype(np.float64)
    return per_sample_mean(100.0 * np.abs((t - p) / np.maximum(np.abs(t), 1e-7)))


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
        y_true, y_pred = squeeze_or_expand(to_numpy(y_true, "y_true"), to_numpy(y_pred, "y_pred"))
        check_same_shape(y_true, y_pred, "root_mean_squared_error")
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
        self.reset_state()

    def reset_state(self):
        self.sums = self.squared_sums = self.residuals = self.weights = None
        self.num_samples = 0

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true, y_pred = squeeze_or_expand(to_numpy(y_true, "y_true"), to_numpy(y_pred, "y_pred"))
        check_same_shape(y_true, y_pred, "r2_score")
        t = y_true.astype(np.float64).reshape(len(y_true), -1)
        p = y_pred.astype(np.float64).reshape(len(y_pred), -1)
        w = np.ones((len(t), 1)) if sample_weight is None else \
            np.broadcast_to(to_numpy(sample_weight, "sample_weight").astype(np.float64).reshape(-1, 1)
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
