"""Hinge losses: ``Hinge``, ``SquaredHinge`` (0/1 labels mapped to -1/1) and
``CategoricalHinge``."""
import numpy as np

from minnet.losses.base import ClassLoss, ElementwiseLoss, prediction_tensors, raw_data, torch_reduce

__all__ = ["Hinge", "SquaredHinge", "CategoricalHinge"]


def _hinge_labels(y_true):
    """Keras's ``convert_binary_labels_to_hinge``: 0/1 labels become -1/1, others stay."""
    data = raw_data(y_true)
    if data.size and np.all((data == 0) | (data == 1)):
        return y_true * 2.0 - 1.0
    return y_true


class Hinge(ElementwiseLoss):
    """Keras's ``mean(max(1 - y_true * y_pred, 0))`` over the last axis; labels 0/1 are
    mapped to -1/1 (labels already -1/1 are kept).

    Shape:
        y_true, y_pred: ``(N, ...)``, the same. Output: scalar or ``y_pred.shape[:-1]``.

    Example:
        >>> Hinge()([[1.0, 0.0]], mn.tensor([[0.5, -2.0]])).item()
        0.25
    """

    default_name = "hinge"

    def _margins(self, y_true, y_pred):
        y_true, y_pred = prediction_tensors(y_true, y_pred)
        return (1.0 - _hinge_labels(y_true) * y_pred).relu()

    def _elementwise(self, y_true, y_pred, reduction):
        return torch_reduce(self._margins(y_true, y_pred), reduction)


class SquaredHinge(Hinge):
    """Keras's ``mean(max(1 - y_true * y_pred, 0)**2)`` over the last axis (0/1 labels
    mapped to -1/1).

    Shape:
        y_true, y_pred: ``(N, ...)``, the same. Output: scalar or ``y_pred.shape[:-1]``.

    Example:
        >>> SquaredHinge()([[1.0, 0.0]], mn.tensor([[0.5, -2.0]])).item()
        0.125
    """

    default_name = "squared_hinge"

    def _elementwise(self, y_true, y_pred, reduction):
        return torch_reduce(self._margins(y_true, y_pred) ** 2, reduction)


class CategoricalHinge(ClassLoss):
    """Keras's ``max(neg - pos + 1, 0)`` per sample with ``pos = sum(t * y_pred)`` and
    ``neg = max((1 - t) * y_pred)`` over the last axis.

    Shape:
        y_true, y_pred: ``(N, C)``. Output: scalar or ``(N,)``.

    Example:
        >>> CategoricalHinge()([[1.0, 0.0]], mn.tensor([[0.3, 0.6]])).item()
        1.3
    """

    default_name = "categorical_hinge"

    def _values(self, y_true, y_pred):
        y_true, y_pred = prediction_tensors(y_true, y_pred)
        pos = (y_true * y_pred).sum(axis=-1)
        neg = ((1.0 - y_true) * y_pred).max(axis=-1)
        return (neg - pos + 1.0).relu()
