"""Keras 3's confusion counts and operating-point metrics: ``TruePositives``,
``FalsePositives``, ``TrueNegatives``, ``FalseNegatives`` (streamed counts at one or more
thresholds) and ``PrecisionAtRecall``, ``RecallAtPrecision``, ``SensitivityAtSpecificity``,
``SpecificityAtSensitivity`` (the best value of one rate among the thresholds where the
other reaches ``value``; Keras's ``_find_max_under_constraint``).
"""
import numpy as np

from minnet._checks import check_float, check_int
from minnet.metrics.confusion import Precision

__all__ = ["TruePositives", "FalsePositives", "TrueNegatives", "FalseNegatives",
           "PrecisionAtRecall", "RecallAtPrecision", "SensitivityAtSpecificity",
           "SpecificityAtSensitivity"]


def _divide_no_nan(a, b):
    return np.divide(a, b, out=np.zeros(np.shape(a)), where=np.asarray(b) != 0)


class _Count(Precision):
    """One confusion count at ``thresholds`` (0.5 by default), weighted, streamed."""

    _count = None

    def __init__(self, thresholds=None, name=None, dtype=None):
        super().__init__(thresholds=thresholds, name=name, dtype=dtype)

    def result(self):
        return self._out(getattr(self, self._count).copy())

    def get_config(self):
        return {"thresholds": super().get_config()["thresholds"], "name": self.name}


class TruePositives(_Count):
    """Weighted count of ``y_true == 1`` and ``y_pred > threshold`` (Keras)."""
    _count = "true_positives"

    def __init__(self, thresholds=None, name="true_positives", dtype=None):
        super().__init__(thresholds, name, dtype)


class FalsePositives(_Count):
    """Weighted count of ``y_true == 0`` and ``y_pred > threshold``."""
    _count = "false_positives"

    def __init__(self, thresholds=None, name="false_positives", dtype=None):
        super().__init__(thresholds, name, dtype)


class TrueNegatives(_Count):
    """Weighted count of ``y_true == 0`` and ``y_pred <= threshold``."""
    _count = "true_negatives"

    def __init__(self, thresholds=None, name="true_negatives", dtype=None):
        super().__init__(thresholds, name, dtype)


class FalseNegatives(_Count):
    """Weighted count of ``y_true == 1`` and ``y_pred <= threshold``."""
    _count = "false_negatives"

    def __init__(self, thresholds=None, name="false_negatives", dtype=None):
        super().__init__(thresholds, name, dtype)


class _AtConstraint(Precision):
    """Counts at Keras's evenly spaced thresholds ``0, 1/(n-1), ..., 1`` (``[0.5]`` for n = 1)."""

    _value_name = "value"

    def __init__(self, value, num_thresholds=200, class_id=None, name=None, dtype=None):
        value = check_float(self._value_name, value, 0.0, 1.0)
        num_thresholds = check_int("num_thresholds", num_thresholds, minimum=1)
        if num_thresholds == 1:
            thresholds = [0.5]
        else:
            thresholds = [0.0] + [(i + 1) / (num_thresholds - 1)
                                  for i in range(num_thresholds - 2)] + [1.0]
        super().__init__(thresholds=thresholds, class_id=class_id, name=name, dtype=dtype)
        self.value = value
        self.num_thresholds = num_thresholds

    def _rates(self):
        tp, fp = self.true_positives, self.false_positives
        tn, fn = self.true_negatives, self.false_negatives
        return {"recall": _divide_no_nan(tp, tp + fn), "precision": _divide_no_nan(tp, tp + fp),
                "specificity": _divide_no_nan(tn, tn + fp)}

    def _best(self, constrained, dependent):
        feasible = constrained >= self.value
        return float(np.max(np.where(feasible, dependent, 0.0), initial=0.0))

    def get_config(self):
        return {self._value_name: self.value, "num_thresholds": self.num_thresholds,
                "class_id": self.class_id, "name": self.name}


class PrecisionAtRecall(_AtConstraint):
    """Best precision among the thresholds where recall >= ``recall``."""
    _value_name = "recall"

    def __init__(self, recall, num_thresholds=200, class_id=None, name=None, dtype=None):
        super().__init__(recall, num_thresholds, class_id, name or "precision_at_recall", dtype)

    def result(self):
        r = self._rates()
        return self._best(r["recall"], r["precision"])


class RecallAtPrecision(_AtConstraint):
    """Best recall among the thresholds where precision >= ``precision``."""
    _value_name = "precision"

    def __init__(self, precision, num_thresholds=200, class_id=None, name=None, dtype=None):
        super().__init__(precision, num_thresholds, class_id, name or "recall_at_precision", dtype)

    def result(self):
        r = self._rates()
        return self._best(r["precision"], r["recall"])


class SensitivityAtSpecificity(_AtConstraint):
    """Best sensitivity (recall) among the thresholds where specificity >= ``specificity``."""
    _value_name = "specificity"

    def __init__(self, specificity, num_thresholds=200, class_id=None, name=None, dtype=None):
        super().__init__(specificity, num_thresholds, class_id,
                         name or "sensitivity_at_specificity", dtype)

    def result(self):
        r = self._rates()
        return self._best(r["specificity"], r["recall"])


class SpecificityAtSensitivity(_AtConstraint):
    """Best specificity among the thresholds where sensitivity (recall) >= ``sensitivity``."""
    _value_name = "sensitivity"

    def __init__(self, sensitivity, num_thresholds=200, class_id=None, name=None, dtype=None):
        super().__init__(sensitivity, num_thresholds, class_id,
                         name or "specificity_at_sensitivity", dtype)

    def result(self):
        r = self._rates()
        return self._best(r["recall"], r["specificity"])
