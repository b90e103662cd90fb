"""Keras 3's intersection-over-union metrics over chosen classes: ``IoU``, ``BinaryIoU``,
``OneHotIoU``, ``OneHotMeanIoU`` (``MeanIoU`` is in ``confusion.py``).

``IoU_c = TP_c / (TP_c + FP_c + FN_c)`` from a streamed confusion matrix; the result is the
mean over the ``target_class_ids`` whose denominator is not 0 (Keras's ``IoU.result``).
"""
import numpy as np

from minnet._checks import check_float, invalid
from minnet.metrics.base import to_numpy
from minnet.metrics.confusion import MeanIoU

__all__ = ["IoU", "BinaryIoU", "OneHotIoU", "OneHotMeanIoU"]


def _class_ids(target_class_ids, num_classes):
    try:
        ids = [int(i) for i in target_class_ids]
    except TypeError:
        raise invalid("target_class_ids", "a list or tuple of class indices",
                      target_class_ids, TypeError) from None
    if not ids or any(not 0 <= i < num_classes for i in ids):
        raise invalid("target_class_ids", f"class indices in [0, {num_classes})", target_class_ids)
    return ids


class IoU(MeanIoU):
    """IoU averaged over ``target_class_ids`` (Keras's ``keras.metrics.IoU``).

    Args:
        num_classes: number of classes.
        target_class_ids: the classes whose IoU is averaged.
        ignore_class, sparse_y_true, sparse_y_pred, axis, name: as ``MeanIoU``.

    Example:
        >>> m = IoU(num_classes=2, target_class_ids=[0]); m.update_state([0, 0, 1, 1], [0, 1, 0, 1])
        >>> m.result()
        0.3333333333333333
    """

    def __init__(self, num_classes, target_class_ids, name=None, dtype=None, ignore_class=None,
                 sparse_y_true=True, sparse_y_pred=True, axis=-1):
        super().__init__(num_classes, name=name if name is not None else "io_u", dtype=dtype,
                         ignore_class=ignore_class, sparse_y_true=sparse_y_true,
                         sparse_y_pred=sparse_y_pred, axis=axis)
        self.target_class_ids = _class_ids(target_class_ids, self.num_classes)

    def result(self):
        cm = self.total_cm
        tp = np.diag(cm)
        denominator = (cm.sum(axis=0) + cm.sum(axis=1) - tp)[self.target_class_ids]
        tp = tp[self.target_class_ids]
        valid = denominator > 1e-9
        iou = np.divide(tp, denominator, out=np.zeros_like(tp), where=valid)
        count = int(valid.sum())
        return float(iou.sum() / count) if count else 0.0

    def get_config(self):
        return {**super().get_config(), "target_class_ids": list(self.target_class_ids)}


class BinaryIoU(IoU):
    """IoU of binary predictions: ``y_pred >= threshold`` is class 1 (Keras).

    Args:
        target_class_ids: ``(0, 1)`` (default: the mean of both), ``[0]`` or ``[1]``.
        threshold: the decision threshold (0.5).
    """

    def __init__(self, target_class_ids=(0, 1), threshold=0.5, name=None, dtype=None):
        super().__init__(2, target_class_ids, name=name if name is not None else "binary_io_u",
                         dtype=dtype)
        self.threshold = check_float("threshold", threshold)

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_pred = (to_numpy(y_pred, "y_pred") >= self.threshold).astype(np.int64)
        super().update_state(to_numpy(y_true, "y_true").astype(np.int64), y_pred, sample_weight)

    def get_config(self):
        return {"target_class_ids": list(self.target_class_ids), "threshold": self.threshold,
                "name": self.name}


class OneHotIoU(IoU):
    """``IoU`` for one-hot ``y_true`` and class scores ``y_pred`` (argmax over ``axis``)."""

    def __init__(self, num_classes, target_class_ids, name=None, dtype=None, ignore_class=None,
                 sparse_y_pred=False, axis=-1):
        super().__init__(num_classes, target_class_ids,
                         name=name if name is not None else "one_hot_io_u", dtype=dtype,
                         ignore_class=ignore_class, sparse_y_true=False,
                         sparse_y_pred=sparse_y_pred, axis=axis)

    def get_config(self):
        config = super().get_config()
        config.pop("sparse_y_true")
        return config


class OneHotMeanIoU(MeanIoU):
    """``MeanIoU`` for one-hot ``y_true`` and class scores ``y_pred``."""

    def __init__(self, num_classes, name=None, dtype=None, ignore_class=None, sparse_y_pred=False,
                 axis=-1):
        super().__init__(num_classes, name=name if name is not None else "one_hot_mean_io_u",
                         dtype=dtype, ignore_class=ignore_class, sparse_y_true=False,
                         sparse_y_pred=sparse_y_pred, axis=axis)

    def get_config(self):
        config = super().get_config()
        config.pop("sparse_y_true")
        return config
