"""Confusion-based classification metrics (issue 18): streamed true/false positive and
negative counts with Keras's formulas (``Precision``, ``Recall``, ``AUC``, ``FBetaScore``,
``F1Score``, ``MeanIoU``) and the one-shot ``confusion_matrix`` and ``classification_report``."""
import numpy as np

from minnet._checks import check_float, check_int, check_labels, invalid
from minnet.metrics.base import Metric, check_same_shape, squeeze_or_expand, to_numpy

__all__ = ["Precision", "Recall", "AUC", "FBetaScore", "F1Score", "MeanIoU", "confusion_matrix",
           "classification_report"]


def _divide_no_nan(a, b):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return np.divide(a, b, out=np.zeros(np.broadcast(a, b).shape), where=b != 0)


def _check_thresholds(thresholds, default):
    if thresholds is None:
        return np.array([default]), True
    single = np.ndim(thresholds) == 0
    values = np.atleast_1d(np.asarray(thresholds, dtype=np.float64))
    if values.ndim != 1 or values.size == 0 or not np.all(np.isfinite(values)):
        raise invalid("thresholds", "a float or a list of floats", thresholds)
    return values, single


# Keras's metrics_utils.NEG_INF: the score of the entries outside the top k.
NEG_INF = -1e10


def _filter_top_k(scores, k):
    """Keras's ``_filter_top_k``: the ``k`` highest scores of each row (the first index wins a
    tie) keep their value, every other entry becomes ``NEG_INF``."""
    order = np.argsort(-scores, axis=-1, kind="stable")[..., :k]
    keep = np.zeros(scores.shape, dtype=bool)
    np.put_along_axis(keep, order, True, axis=-1)
    return np.where(keep, scores, NEG_INF)


def _sample_weights(sample_weight, shape):
    """Weights broadcast over ``shape`` (one per sample along the first axis), float64."""
    if sample_weight is None:
        return np.ones(shape)
    w = to_numpy(sample_weight, "sample_weight").astype(np.float64)
    if w.ndim and w.shape[-1] == 1 and w.ndim > 1:
        w = w.reshape(w.shape[:-1])
    try:
        return np.broadcast_to(w.reshape(w.shape + (1,) * (len(shape) - w.ndim)), shape)
    except ValueError:
        raise ValueError(f"Invalid value for argument `sample_weight`: expected a scalar or one "
                         f"weight per sample (shape {shape[:1]}). Received: "
                         f"sample_weight.shape={w.shape}") from None


class _ConfusionCounts(Metric):
    """True/false positives/negatives of ``y_pred > threshold`` at each threshold (Keras's
    ``update_confusion_matrix_variables``), optionally for one ``class_id`` or with only
    the ``top_k`` scores of each row counting as positive."""

    def __init__(self, thresholds=None, top_k=None, class_id=None, name=None, dtype=None):
        self.init_thresholds = thresholds
        self.top_k = None if top_k is None else check_int("top_k", top_k, minimum=1)
        # Keras: with top_k and no thresholds, only the top k count (threshold NEG_INF).
        self.thresholds, self._single = _check_thresholds(
            thresholds, 0.5 if self.top_k is None else NEG_INF)
        self.class_id = None if class_id is None else check_int("class_id", class_id, minimum=0)
        super().__init__(name=name, dtype=dtype)
        self.reset_state()

    def reset_state(self):
        zeros = np.zeros(len(self.thresholds))
        self.true_positives, self.false_positives = zeros.copy(), zeros.copy()
        self.true_negatives, self.false_negatives = zeros.copy(), zeros.copy()

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true, y_pred = squeeze_or_expand(to_numpy(y_true, "y_true"), to_numpy(y_pred, "y_pred"))
        check_same_shape(y_true, y_pred, self.name)
        t = y_true.astype(np.float64)
        p = y_pred.astype(np.float64)
        w = _sample_weights(sample_weight, p.shape)
        if self.top_k is not None:
            p = _filter_top_k(p, self.top_k)
        if self.class_id is not None:
            t, p, w = t[..., self.class_id], p[..., self.class_id], w[..., self.class_id]
        t, p, w = t.reshape(-1) > 0.5, p.reshape(-1), w.reshape(-1)
        # compared in float32, Keras's metric dtype: a float32 score equal to the threshold
        # (0.3 against thresholds=0.3) is not above it, as in Keras
        above = p.astype(np.float32)[None, :] > self.thresholds.astype(np.float32)[:, None]
        self.true_positives += (above & t).astype(np.float64) @ w
        self.false_positives += (above & ~t).astype(np.float64) @ w
        self.true_negatives += (~above & ~t).astype(np.float64) @ w
        self.false_negatives += (~above & t).astype(np.float64) @ w

    def _out(self, values):
        return float(values[0]) if self._single else values

    def get_config(self):
        thresholds = self.init_thresholds
        if thresholds is not None and np.ndim(thresholds):
            thresholds = [float(v) for v in np.asarray(thresholds).ravel()]
        return {"thresholds": thresholds, "top_k": self.top_k, "class_id": self.class_id,
                "name": self.name}


class Precision(_ConfusionCounts):
    """``TP / (TP + FP)`` of ``y_pred > threshold`` (0.5 by default), streamed (Keras).

    Args:
        thresholds: a float, or a list (then ``result()`` is one value per threshold).
        top_k: only the ``k`` highest scores of each row count as positive; without
            ``thresholds`` nothing else is asked of them (Keras: the threshold is then
            ``-1e10``, not 0.5).
        class_id: score only this class (column).
        name: metric name.

    Example:
        >>> m = Precision(); m.update_state([0, 1, 1, 1], [1, 0, 1, 1]); m.result()
        0.6666666666666666
    """

    def __init__(self, thresholds=None, top_k=None, class_id=None, name="precision", dtype=None):
        super().__init__(thresholds, top_k, class_id, name, dtype)

    def result(self):
        return self._out(_divide_no_nan(self.true_positives,
                                        self.true_positives + self.false_positives))


class Recall(_ConfusionCounts):
    """``TP / (TP + FN)`` of ``y_pred > threshold`` (0.5 by default), streamed (Keras).

    Args: as ``Precision``.

    Example:
        >>> m = Recall(); m.update_state([0, 1, 1, 1], [1, 0, 1, 1]); m.result()
        0.6666666666666666
    """

    def __init__(self, thresholds=None, top_k=None, class_id=None, name="recall", dtype=None):
        super().__init__(thresholds, top_k, class_id, name, dtype)

    def result(self):
        return self._out(_divide_no_nan(self.true_positives,
                                        self.true_positives + self.false_negatives))


class AUC(Metric):
    """Area under the ROC or precision-recall curve, from confusion counts at fixed
    thresholds (Keras's ``AUC``: the same thresholds, summation and PR interpolation).

    Thresholds: ``num_thresholds`` values ``[-1e-7, 1/(n-1), ..., (n-2)/(n-1), 1 + 1e-7]``,
    or the given ``thresholds`` with ``-1e-7`` and ``1 + 1e-7`` added. ROC sums trapezoids of
    (FPR, TPR); ``curve="PR"`` with ``"interpolation"`` uses Davis & Goadrich's
    interpolation, as Keras; ``"minoring"``/``"majoring"`` take the lower/upper rectangle.

    Args:
        num_thresholds: number of thresholds (> 1), default 200.
        curve: ``"ROC"`` or ``"PR"``.
        summation_method: ``"interpolation"``, ``"minoring"`` or ``"majoring"``.
        thresholds: optional explicit thresholds in [0, 1].
        multi_label: one curve per label (column), averaged (weighted by ``label_weights``).
        num_labels: kept for Keras compatibility (found from the data).
        label_weights: optional weights of the labels when averaging (``multi_label``).
        from_logits: apply a sigmoid to ``y_pred`` first.
        name: metric name.

    Example:
        >>> m = AUC(); m.update_state([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8]); round(m.result(), 3)
        0.75
    """

    def __init__(self, num_thresholds=200, curve="ROC", summation_method="interpolation",
                 name="auc", dtype=None, thresholds=None, multi_label=False, num_labels=None,
                 label_weights=None, from_logits=False):
        self.curve = str(curve).upper() if isinstance(curve, str) else curve
        if self.curve not in ("ROC", "PR"):
            raise invalid("curve", "'ROC' or 'PR'", curve)
        self.summation_method = summation_method.lower() if isinstance(summation_method, str) \
            else summation_method
        if self.summation_method not in ("interpolation", "minoring", "majoring"):
            raise invalid("summation_method", "'interpolation', 'minoring' or 'majoring'",
                          summation_method)
        eps = 1e-7
        if thresholds is not None:
            values, _ = _check_thresholds(thresholds, 0.5)
            self._init_thresholds = [float(v) for v in values]
            self.num_thresholds = len(values) + 2
            inner = np.sort(values)
        else:
            self.num_thresholds = check_int("num_thresholds", num_thresholds, minimum=2, maximum=10**6)
            self._init_thresholds = None
            n = self.num_thresholds
            inner = np.array([(i + 1) * 1.0 / (n - 1) for i in range(n - 2)])
        self.thresholds = np.concatenate([[0.0 - eps], inner, [1.0 + eps]])
        self.multi_label = bool(multi_label)
        self.num_labels = num_labels
        self.label_weights = None if label_weights is None else \
            np.asarray(label_weights, dtype=np.float64)
        self.from_logits = bool(from_logits)
        super().__init__(name=name, dtype=dtype)
        self.reset_state()

    def reset_state(self):
        self.true_positives = self.false_positives = None
        self.true_negatives = self.false_negatives = None

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true, y_pred = squeeze_or_expand(to_numpy(y_true, "y_true"), to_numpy(y_pred, "y_pred"))
        check_same_shape(y_true, y_pred, self.name)
        p = y_pred.astype(np.float64)
        if self.from_logits:
            p = 1.0 / (1.0 + np.exp(-p))
        t = y_true.astype(np.float64) > 0.5
        w = _sample_weights(sample_weight, p.shape)
        if self.multi_label:
            t, p, w = (a.reshape(-1, a.shape[-1]) if a.ndim > 1 else a.reshape(-1, 1) for a in (t, p, w))
        else:
            t, p, w = t.reshape(-1, 1), p.reshape(-1, 1), w.reshape(-1, 1)
        # (thresholds, N, labels), compared in float32 as Keras (see update_state above)
        above = p.astype(np.float32)[None, :, :] > self.thresholds.astype(np.float32)[:, None, None]
        counts = [np.einsum("tnl,nl->tl", (above & t).astype(np.float64), w),
                  np.einsum("tnl,nl->tl", (above & ~t).astype(np.float64), w),
                  np.einsum("tnl,nl->tl", (~above & ~t).astype(np.float64), w),
                  np.einsum("tnl,nl->tl", (~above & t).astype(np.float64), w)]
        if self.true_positives is None:
            self.true_positives, self.false_positives, self.true_negatives, self.false_negatives = counts
        else:
            if counts[0].shape != self.true_positives.shape:
                raise ValueError(f"{self.name}: expected {self.true_positives.shape[1]} labels as in "
                                 f"earlier batches. Received: y_pred.shape={y_pred.shape}")
            self.true_positives = self.true_positives + counts[0]
            self.false_positives = self.false_positives + counts[1]
            self.true_negatives = self.true_negatives + counts[2]
            self.false_negatives = self.false_negatives + counts[3]

    def _interpolate_pr_auc(self):
        tp, fp, fn = self.true_positives, self.false_positives, self.false_negatives
        n = self.num_thresholds
        dtp = tp[: n - 1] - tp[1:]
        p = tp + fp
        dp = p[: n - 1] - p[1:]
        prec_slope = _divide_no_nan(dtp, np.maximum(dp, 0))
        intercept = tp[1:] - prec_slope * p[1:]
        safe_p_ratio = np.where((p[: n - 1] > 0) & (p[1:] > 0),
                                _divide_no_nan(p[: n - 1], np.maximum(p[1:], 0)), 1.0)
        return _divide_no_nan(prec_slope * (dtp + intercept * np.log(safe_p_ratio)),
                              np.maximum(tp[1:] + fn[1:], 0))

    def result(self):
        if self.true_positives is None:
            return 0.0
        n = self.num_thresholds
        if self.curve == "PR" and self.summation_method == "interpolation":
            terms = self._interpolate_pr_auc()
        else:
            tp, fp, tn, fn = (self.true_positives, self.false_positives, self.true_negatives,
                              self.false_negatives)
            recall = _divide_no_nan(tp, tp + fn)
            if self.curve == "ROC":
                x, y = _divide_no_nan(fp, fp + tn), recall
            else:
                x, y = recall, _divide_no_nan(tp, tp + fp)
            if self.summation_method == "interpolation":
                heights = (y[: n - 1] + y[1:]) / 2.0
            elif self.summation_method == "minoring":
                heights = np.minimum(y[: n - 1], y[1:])
            else:
                heights = np.maximum(y[: n - 1], y[1:])
            terms = (x[: n - 1] - x[1:]) * heights
        per_label = terms.sum(axis=0)
        if not self.multi_label:
            return float(per_label[0])
        if self.label_weights is None:
            return float(per_label.mean())
        return float(_divide_no_nan((per_label * self.label_weights).sum(), self.label_weights.sum()))

    def get_config(self):
        return {"num_thresholds": self.num_thresholds if self._init_thresholds is None else None,
                "curve": self.curve, "summation_method": self.summation_method, "name": self.name,
                "thresholds": self._init_thresholds, "multi_label": self.multi_label,
                "num_labels": self.num_labels,
                "label_weights": None if self.label_weights is None else self.label_weights.tolist(),
                "from_logits": self.from_logits}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if config.get("num_thresholds") is None:
            config.pop("num_thresholds", None)
        return cls(**config)


class FBetaScore(Metric):
    """F-beta score per class, streamed (Keras 3's ``FBetaScore``):
    ``(1 + b**2) P R / (b**2 P + R)`` with ``P = TP / (TP + FP)``, ``R = TP / (TP + FN)``
    (each denominator plus 1e-7).

    ``y_pred`` is binarised by ``threshold`` (``y_pred > threshold``), or, with
    ``threshold=None``, by taking each row's maximum as the one positive.

    Args:
        average: None (one score per class), ``"micro"`` (counts pooled over classes),
            ``"macro"`` (mean of the class scores) or ``"weighted"`` (weighted by the number
            of true instances of each class).
        beta: weight of recall, > 0.
        threshold: float in (0, 1], or None for the row maximum.
        name: metric name.

    Shape:
        y_true, y_pred: ``(N, C)`` (one-hot / multi-hot targets, scores).
    """

    def __init__(self, average=None, beta=1.0, threshold=None, name="fbeta_score", dtype=None):
        if average not in (None, "micro", "macro", "weighted"):
            raise invalid("average", "None, 'micro', 'macro' or 'weighted'", average)
        self.average = average
        self.beta = check_float("beta", beta, 0.0, low_open=True)
        self.threshold = None if threshold is None else check_float("threshold", threshold, 0.0, 1.0,
                                                                    low_open=True)
        super().__init__(name=name, dtype=dtype)
        self.reset_state()

    def reset_state(self):
        self.true_positives = self.false_positives = self.false_negatives = None
        self.intermediate_weights = None

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true, y_pred = to_numpy(y_true, "y_true"), to_numpy(y_pred, "y_pred")
        check_same_shape(y_true, y_pred, self.name)
        if y_pred.ndim != 2:
            raise ValueError(f"{self.name}: expected `y_pred` of shape (batch, classes). "
                             f"Received: y_pred.shape={y_pred.shape}")
        t = y_true.astype(np.float64)
        p = y_pred.astype(np.float64)
        if self.threshold is None:
            p = (p >= p.max(axis=-1, keepdims=True)).astype(np.float64)
        else:
            p = (p > self.threshold).astype(np.float64)
        w = _sample_weights(sample_weight, p.shape)
        axis = None if self.average == "micro" else 0
        counts = [np.sum(p * t * w, axis=axis), np.sum(p * (1 - t) * w, axis=axis),
                  np.sum((1 - p) * t * w, axis=axis), np.sum(t * w, axis=axis)]
        if self.true_positives is None:
            (self.true_positives, self.false_positives, self.false_negatives,
             self.intermediate_weights) = counts
        else:
            if np.shape(counts[0]) != np.shape(self.true_positives):
                raise ValueError(f"{self.name}: expected {np.size(self.true_positives)} classes as "
                                 f"in earlier batches. Received: y_pred.shape={y_pred.shape}")
            self.true_positives = self.true_positives + counts[0]
            self.false_positives = self.false_positives + counts[1]
            self.false_negatives = self.false_negatives + counts[2]
            self.intermediate_weights = self.intermediate_weights + counts[3]

    def result(self):
        if self.true_positives is None:
            return 0.0
        eps = 1e-7
        precision = self.true_positives / (self.true_positives + self.false_positives + eps)
        recall = self.true_positives / (self.true_positives + self.false_negatives + eps)
        b2 = self.beta ** 2
        score = (1 + b2) * (precision * recall) / (b2 * precision + recall + eps)
        if self.average == "weighted":
            weights = self.intermediate_weights / (np.sum(self.intermediate_weights) + eps)
            return float(np.sum(score * weights))
        if self.average is not None:
            return float(np.mean(score))
        return np.asarray(score)

    def get_config(self):
        return {"average": self.average, "beta": self.beta, "threshold": self.threshold,
                "name": self.name}


class F1Score(FBetaScore):
    """F1 score (``FBetaScore`` with ``beta=1``), Keras 3's arguments.

    Example:
        >>> m = F1Score(average="macro"); m.update_state(np.eye(3), np.eye(3)); round(m.result(), 4)
        1.0
    """

    def __init__(self, average=None, threshold=None, name="f1_score", dtype=None):
        super().__init__(average=average, beta=1.0, threshold=threshold, name=name, dtype=dtype)

    def get_config(self):
        config = super().get_config()
        config.pop("beta")
        return config


class MeanIoU(Metric):
    """Mean intersection-over-union over the classes, from a streamed confusion matrix
    (Keras): ``IoU_c = TP_c / (TP_c + FP_c + FN_c)``, averaged over the classes that occur
    (in the targets or the predictions).

    Args:
        num_classes: number of classes (>= 2).
        ignore_class: optional label whose pixels/samples are skipped.
        sparse_y_true: ``y_true`` holds labels (else one-hot on the last axis).
        sparse_y_pred: ``y_pred`` holds labels (else scores: argmax of the last axis).
        name: metric name.

    Example:
        >>> m = MeanIoU(num_classes=2); m.update_state([0, 0, 1, 1], [0, 1, 0, 1]); m.result()
        0.3333333333333333
    """

    def __init__(self, num_classes, name=None, dtype=None, ignore_class=None, sparse_y_true=True,
                 sparse_y_pred=True, axis=-1):
        self.num_classes = check_int("num_classes", num_classes, minimum=1)
        self.ignore_class = None if ignore_class is None else check_int("ignore_class", ignore_class)
        self.sparse_y_true = bool(sparse_y_true)
        self.sparse_y_pred = bool(sparse_y_pred)
        self.axis = check_int("axis", axis)
        super().__init__(name=name if name is not None else "mean_io_u", dtype=dtype)
        self.reset_state()

    def reset_state(self):
        self.total_cm = np.zeros((self.num_classes, self.num_classes))

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true, y_pred = to_numpy(y_true, "y_true"), to_numpy(y_pred, "y_pred")
        if not self.sparse_y_true:
            y_true = np.argmax(y_true, axis=self.axis)
        if not self.sparse_y_pred:
            y_pred = np.argmax(y_pred, axis=self.axis)
        self.total_cm += confusion_matrix(y_true, y_pred, self.num_classes,
                                          weights=sample_weight, ignore_class=self.ignore_class)

    def result(self):
        cm = self.total_cm
        tp = np.diag(cm)
        denominator = cm.sum(axis=0) + cm.sum(axis=1) - tp
        valid = np.sum(denominator != 0)
        return float(_divide_no_nan(np.sum(_divide_no_nan(tp, denominator)), valid))

    def get_config(self):
        return {"num_classes": self.num_classes, "name": self.name, "ignore_class": self.ignore_class,
                "sparse_y_true": self.sparse_y_true, "sparse_y_pred": self.sparse_y_pred,
                "axis": self.axis}


def confusion_matrix(y_true, y_pred, num_classes=None, weights=None, ignore_class=None):
    """Confusion matrix of integer labels: entry ``[i, j]`` counts (or sums the weights of)
    samples of true class ``i`` predicted as ``j`` (``tf.math.confusion_matrix``).

    Args:
        y_true: integer labels, any shape.
        y_pred: integer predicted labels, the same number of elements (scores: take
            ``argmax(axis=-1)`` first).
        num_classes: number of classes (default: 1 + the largest label seen).
        weights: optional weight per sample (same shape as the labels), or a scalar.
        ignore_class: optional label of ``y_true`` whose samples are left out.

    Returns:
        ndarray ``(num_classes, num_classes)`` of float64.

    Example:
        >>> confusion_matrix([0, 1, 1], [0, 0, 1])
        array([[1., 0.],
               [1., 1.]])
    """
    t = to_numpy(y_true, "y_true").reshape(-1)
    p = to_numpy(y_pred, "y_pred").reshape(-1)
    if t.size != p.size:
        raise ValueError(f"confusion_matrix: `y_true` and `y_pred` must have as many labels. "
                         f"Received: {t.size} and {p.size}")
    w = np.ones(t.size) if weights is None else np.broadcast_to(
        to_numpy(weights, "weights").astype(np.float64).reshape(-1) if np.ndim(weights)
        else np.float64(weights), (t.size,))
    if ignore_class is not None:
        keep = t != ignore_class
        t, p, w = t[keep], p[keep], w[keep]
    if num_classes is None:
        num_classes = int(max(t.max(initial=-1), p.max(initial=-1))) + 1 if t.size else 0
    num_classes = check_int("num_classes", num_classes, minimum=0)
    t = check_labels("y_true", t, num_classes)
    p = check_labels("y_pred", p, num_classes)
    cm = np.zeros((num_classes, num_classes))
    np.add.at(cm, (t, p), w)
    return cm


def classification_report(y_true, y_pred, target_names=None, digits=2, output_dict=False):
    """Per-class precision, recall, F1 and support, with macro and weighted averages, as
    scikit-learn's ``classification_report`` lays them out.

    Args:
        y_true: integer labels ``(N,)``.
        y_pred: integer predicted labels ``(N,)``, or scores ``(N, C)`` (argmax taken).
        target_names: optional names of the classes.
        digits: decimals in the text.
        output_dict: return a dict ``{class name: {"precision", "recall", "f1-score",
            "support"}, "accuracy": float, "macro avg": {...}, "weighted avg": {...}}``.

    Returns:
        The report as a str (or a dict).
    """
    y_pred = to_numpy(y_pred, "y_pred")
    n_classes = y_pred.shape[-1] if y_pred.ndim == 2 else None
    if y_pred.ndim == 2:
        y_pred = np.argmax(y_pred, axis=-1)
    cm = confusion_matrix(y_true, y_pred, n_classes)
    tp = np.diag(cm)
    support = cm.sum(axis=1)
    precision = _divide_no_nan(tp, cm.sum(axis=0))
    recall = _divide_no_nan(tp, support)
    f1 = _divide_no_nan(2 * precision * recall, precision + recall)
    names = [str(i) for i in range(len(cm))] if target_names is None else [str(n) for n in target_names]
    if len(names) != len(cm):
        raise ValueError(f"Invalid value for argument `target_names`: expected {len(cm)} names. "
                         f"Received: {len(names)}")
    report = {name: {"precision": float(precision[i]), "recall": float(recall[i]),
                     "f1-score": float(f1[i]), "support": int(support[i])}
              for i, name in enumerate(names)}
    total = support.sum()
    report["accuracy"] = float(tp.sum() / total) if total else 0.0
    report["macro avg"] = {"precision": float(precision.mean()), "recall": float(recall.mean()),
                           "f1-score": float(f1.mean()), "support": int(total)}
    weights = _divide_no_nan(support, total)
    report["weighted avg"] = {"precision": float(precision @ weights),
                              "recall": float(recall @ weights), "f1-score": float(f1 @ weights),
                              "support": int(total)}
    if output_dict:
        return report
    width = max(len("weighted avg"), *(len(n) for n in names))
    head = f"{'':>{width}} {'precision':>9} {'recall':>9} {'f1-score':>9} {'support':>9}"
    lines = [head, ""]
    row = "{:>{w}} {:>9.{d}f} {:>9.{d}f} {:>9.{d}f} {:>9}"
    for name in names:
        r = report[name]
        lines.append(row.format(name, r["precision"], r["recall"], r["f1-score"], r["support"],
                                w=width, d=digits))
    lines.append("")
    lines.append(f"{'accuracy':>{width}} {'':>9} {'':>9} {report['accuracy']:>9.{digits}f} "
                 f"{int(total):>9}")
    for key in ("macro avg", "weighted avg"):
        r = report[key]
        lines.append(row.format(key, r["precision"], r["recall"], r["f1-score"], r["support"],
                                w=width, d=digits))
    return "\n".join(lines) + "\n"

