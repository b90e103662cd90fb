"""Keras 3's overlap and noise-robust losses: ``Dice``, ``Tversky`` and
``CategoricalGeneralizedCrossEntropy`` (formulas in ``docs/math/losses.md``)."""
import numpy as np

from minnet._checks import check_axes_in_range, check_float, check_labels, invalid
from minnet.config import epsilon
from minnet.losses.base import Loss, as_prediction, check_class_axis, raw_data

__all__ = ["Dice", "Tversky", "CategoricalGeneralizedCrossEntropy"]


def _check_axis(axis):
    if axis is None:
        return None
    if isinstance(axis, (list, tuple)):
        return tuple(int(a) for a in axis)
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise invalid("axis", "None, an int or a tuple of ints", axis, TypeError)
    return int(axis)


class Dice(Loss):
    """Keras's Dice loss ``1 - 2 sum(t p) / (sum(t) + sum(p) + 1e-7)`` over ``axis``.

    Args:
        axis: the axes summed (None: all, one value for the batch; ``(1, 2, 3)`` for one
            value per image).
        reduction, name: as ``Loss``.

    Example:
        >>> Dice()([[1.0, 0.0]], mn.tensor([[1.0, 0.0]])).item()
        0.0...
    """

    default_name = "dice"

    def __init__(self, reduction="sum_over_batch_size", name=None, axis=None, dtype=None):
        self.axis = _check_axis(axis)
        super().__init__(reduction=reduction, name=name, dtype=dtype)

    def call(self, y_true, y_pred):
        check_axes_in_range(self.axis, y_pred.shape, type(self).__name__)
        intersection = (y_true * y_pred).sum(axis=self.axis)
        total = y_true.sum(axis=self.axis) + y_pred.sum(axis=self.axis) + epsilon()
        return 1.0 - 2.0 * intersection / total

    def get_config(self):
        return {**super().get_config(), "axis": self.axis}


class Tversky(Loss):
    """Keras's Tversky loss ``1 - TP / (TP + alpha FP + beta FN + 1e-7)`` over ``axis``, with
    ``TP = sum(t p)``, ``FP = sum((1 - p) t)``, ``FN = sum(p (1 - t))`` (Keras's naming).

    Args:
        alpha, beta: the weights of the two error terms (0.5 each: the Dice loss).
        axis, reduction, name: as ``Dice``.
    """

    default_name = "tversky"

    def __init__(self, alpha=0.5, beta=0.5, reduction="sum_over_batch_size", name=None,
                 axis=None, dtype=None):
        self.alpha = check_float("alpha", alpha)
        self.beta = check_float("beta", beta)
        self.axis = _check_axis(axis)
        super().__init__(reduction=reduction, name=name, dtype=dtype)

    def call(self, y_true, y_pred):
        check_axes_in_range(self.axis, y_pred.shape, type(self).__name__)
        intersection = (y_true * y_pred).sum(axis=self.axis)
        fp = ((1.0 - y_pred) * y_true).sum(axis=self.axis)
        fn = (y_pred * (1.0 - y_true)).sum(axis=self.axis)
        return 1.0 - intersection / (intersection + fp * self.alpha + fn * self.beta + epsilon())

    def get_config(self):
        return {**super().get_config(), "alpha": self.alpha, "beta": self.beta, "axis": self.axis}


class CategoricalGeneralizedCrossEntropy(Loss):
    """Zhang and Sabuncu's generalized cross-entropy, Keras's form: ``(1 - p_y**q) / q`` with
    ``p_y`` the predicted probability of the integer label ``y``.

    Args:
        q: in (0, 1): near 0 it behaves as cross-entropy, near 1 as mean absolute error.
        reduction, name: as ``Loss``.

    Shape:
        y_true: ``(N,)`` or ``(N, 1)`` integer labels; y_pred: ``(N, C)`` probabilities.
    """

    default_name = "categorical_generalized_cross_entropy"

    def __init__(self, q=0.5, reduction="sum_over_batch_size", name=None, dtype=None):
        self.q = check_float("q", q, 0.0, 1.0, low_open=True, high_open=True)
        super().__init__(reduction=reduction, name=name, dtype=dtype)

    def _prepare(self, y_true, y_pred):
        y_pred = as_prediction(y_pred)
        check_class_axis(y_pred, type(self).__name__)
        labels = raw_data(y_true)
        if labels.shape == tuple(y_pred.shape[:-1]) + (1,):
            labels = labels.reshape(labels.shape[:-1])
        labels = check_labels("y_true", labels, y_pred.shape[-1])
        return labels, y_pred

    def _values(self, labels, y_pred):
        one_hot = np.eye(y_pred.shape[-1], dtype=y_pred.dtype)[labels]
        p = (y_pred * one_hot).sum(axis=-1)
        return (1.0 - p ** self.q) * (1.0 / self.q)

    def call(self, y_true, y_pred):
        return self._values(*self._prepare(y_true, y_pred))

    def get_config(self):
        return {**super().get_config(), "q": self.q}
