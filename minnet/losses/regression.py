"""Regression losses: mean squared / absolute / squared logarithmic / absolute percentage
error, Huber, LogCosh and CosineSimilarity."""
import numpy as np

from minnet import functional as F
from minnet._checks import check_axes_in_range, check_float, invalid
from minnet.config import epsilon
from minnet.losses.base import ClassLoss, ElementwiseLoss, prediction_tensors, torch_reduce

__all__ = ["MeanSquaredError", "MeanAbsoluteError", "Huber", "MeanSquaredLogarithmicError",
           "MeanAbsolutePercentageError", "LogCosh", "CosineSimilarity"]


class MeanSquaredError(ElementwiseLoss):
    """Mean of ``(y_pred - y_true)**2`` over the last axis (``nn.MSELoss`` for the default
    reduction); the target gets a gradient too when it requires grad.

    Args:
        reduction: ``"sum_over_batch_size"``, ``"sum"``, ``"none"`` (Keras's meanings).
        name: log name (``"mean_squared_error"``).

    Shape:
        y_true, y_pred: ``(N, ...)``, the same (``(N,)`` against ``(N, 1)`` is N samples;
        ``(N,)`` against ``(N,)`` is one sample, as in Keras).
        Output: scalar, or ``y_pred.shape[:-1]`` with ``reduction="none"``.

    Example:
        >>> MeanSquaredError()([1.0, 2.0], mn.tensor([1.5, 2.0], requires_grad=True)).item()
        0.125
    """

    default_name = "mean_squared_error"

    def _elementwise(self, y_true, y_pred, reduction):
        return F.mse_loss(y_pred, y_true, reduction=reduction)


class MeanAbsoluteError(ElementwiseLoss):
    """Mean of ``|y_pred - y_true|`` over the last axis (``nn.L1Loss``; gradient
    ``sign(y_pred - y_true)``, 0 at 0).

    Args:
        reduction: ``"sum_over_batch_size"``, ``"sum"``, ``"none"``.
        name: log name (``"mean_absolute_error"``).

    Shape:
        y_true, y_pred: ``(N, ...)``, the same. Output: scalar or ``y_pred.shape[:-1]``.

    Example:
        >>> MeanAbsoluteError()([1.0, 2.0], mn.tensor([1.5, 2.0])).item()
        0.25
    """

    default_name = "mean_absolute_error"

    def _elementwise(self, y_true, y_pred, reduction):
        return F.l1_loss(y_pred, y_true, reduction=reduction)


class Huber(ElementwiseLoss):
    """Huber loss (``nn.HuberLoss``, Keras ``Huber``): with ``d = y_pred - y_true``,
    ``0.5 * d**2`` where ``|d| <= delta`` and ``delta * (|d| - 0.5 * delta)`` elsewhere,
    averaged over the last axis.

    Args:
        delta: positive float where the loss turns from quadratic to linear.
        reduction: ``"sum_over_batch_size"``, ``"sum"``, ``"none"``.
        name: log name (``"huber_loss"``).

    Shape:
        y_true, y_pred: ``(N, ...)``, the same. Output: scalar or ``y_pred.shape[:-1]``.

    Example:
        >>> Huber(delta=1.0)([0.0], mn.tensor([3.0])).item()
        2.5
    """

    default_name = "huber_loss"

    def __init__(self, delta=1.0, reduction="sum_over_batch_size", name=None, dtype=None):
        self.delta = check_float("delta", delta, 0.0, low_open=True)
        super().__init__(reduction=reduction, name=name, dtype=dtype)

    def _elementwise(self, y_true, y_pred, reduction):
        return F.huber_loss(y_pred, y_true, delta=self.delta, reduction=reduction)

    def get_config(self):
        return {"delta": self.delta, **super().get_config()}


class MeanSquaredLogarithmicError(ElementwiseLoss):
    """Keras's ``mean((log(max(y_pred, eps) + 1) - log(max(y_true, eps) + 1))**2)`` over
    the last axis (``eps = 1e-7``).

    Shape:
        y_true, y_pred: ``(N, ...)``, the same. Output: scalar or ``y_pred.shape[:-1]``.

    Example:
        >>> MeanSquaredLogarithmicError()([[0.0, 1.0]], mn.tensor([[1.0, 1.0]])).item()
    """

    default_name = "mean_squared_logarithmic_error"

    def _elementwise(self, y_true, y_pred, reduction):
        y_true, y_pred = prediction_tensors(y_true, y_pred)
        first = (y_pred.maximum(epsilon()) + 1.0).log()
        second = (y_true.maximum(epsilon()) + 1.0).log()
        return torch_reduce((first - second) ** 2, reduction)


class MeanAbsolutePercentageError(ElementwiseLoss):
    """Keras's ``100 * mean(|y_true - y_pred| / max(|y_true|, eps))`` over the last axis.

    Shape:
        y_true, y_pred: ``(N, ...)``, the same. Output: scalar or ``y_pred.shape[:-1]``.

    Example:
        >>> MeanAbsolutePercentageError()([[2.0, 4.0]], mn.tensor([[1.0, 4.0]])).item()
        25.0
    """

    default_name = "mean_absolute_percentage_error"

    def _elementwise(self, y_true, y_pred, reduction):
        y_true, y_pred = prediction_tensors(y_true, y_pred)
        diff = ((y_true - y_pred) / y_true.abs().maximum(epsilon())).abs()
        return torch_reduce(diff * 100.0, reduction)


def _softplus(x):
    """``log(1 + exp(x))`` without overflow: ``max(x, 0) + log(1 + exp(-|x|))``."""
    return x.maximum(0.0) + ((-x.abs()).exp() + 1.0).log()   # ties split: exact at 0


class LogCosh(ElementwiseLoss):
    """Keras's ``mean(log(cosh(y_pred - y_true)))`` over the last axis, computed as
    ``d + softplus(-2 d) - log 2`` so that it never overflows.

    Shape:
        y_true, y_pred: ``(N, ...)``, the same. Output: scalar or ``y_pred.shape[:-1]``.

    Example:
        >>> LogCosh()([[0.0]], mn.tensor([[0.0]])).item()
        0.0
    """

    default_name = "log_cosh"

    def _elementwise(self, y_true, y_pred, reduction):
        y_true, y_pred = prediction_tensors(y_true, y_pred)
        d = y_pred - y_true
        return torch_reduce(d + _softplus(d * -2.0) - float(np.log(2.0)), reduction)


class CosineSimilarity(ClassLoss):
    """Keras's ``-sum(l2_normalize(t) * l2_normalize(y_pred))`` over ``axis`` (values in
    [-1, 1]; -1 when the vectors point the same way), ``l2_normalize(x) = x /
    sqrt(max(sum(x**2), 1e-12))``.

    Args:
        axis: the axis of the vectors (default -1).
        reduction, name: as ``Loss``.

    Shape:
        y_true, y_pred: ``(N, D)``, the same. Output: scalar or ``(N,)``.

    Example:
        >>> CosineSimilarity()([[1.0, 0.0]], mn.tensor([[2.0, 0.0]])).item()
        -1.0
    """

    default_name = "cosine_similarity"

    def __init__(self, axis=-1, reduction="sum_over_batch_size", name=None, dtype=None):
        if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
            raise invalid("axis", "an int", axis, TypeError)
        self.axis = int(axis)
        super().__init__(reduction=reduction, name=name, dtype=dtype)

    def _values(self, y_true, y_pred):
        y_true, y_pred = prediction_tensors(y_true, y_pred)
        axis = check_axes_in_range(self.axis, y_pred.shape, type(self).__name__)

        def normalize(x):
            return x / ((x * x).sum(axis=axis, keepdims=True).maximum(1e-12)).sqrt()

        return -(normalize(y_true) * normalize(y_pred)).sum(axis=axis)

    def get_config(self):
        return {"axis": self.axis, **super().get_config()}
