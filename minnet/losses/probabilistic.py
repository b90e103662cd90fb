"""Probabilistic losses: binary, categorical and sparse categorical cross-entropy (plain
and focal), Kullback-Leibler divergence and Poisson, with the checks and the one-time
"these look like probabilities" warning of the ``from_logits`` losses."""
import warnings

import numpy as np

from minnet import functional as F
from minnet._config import get_num_threads
from minnet._ext import reduce_kernels
from minnet.autograd import Function, Tensor
from minnet._checks import check_float, check_labels, invalid
from minnet._utils import user_stacklevel
from minnet.config import epsilon
from minnet.layers.base import get_keras_mask
from minnet.losses.base import REDUCTIONS, ClassLoss, ElementwiseLoss, Loss, as_prediction, \
    broadcast_sample_weight, check_class_axis, check_numeric, masked_reduce, prediction_tensors, \
    raw_data, reduce_values, torch_reduce, warn_if_swapped

__all__ = ["BinaryCrossentropy", "BinaryFocalCrossentropy", "CategoricalCrossentropy",
           "CategoricalFocalCrossentropy", "SparseCategoricalCrossentropy", "KLDivergence", "Poisson"]

# Names of the loss classes that already warned "these look like probabilities".
_warned_probabilities = set()
# Names of the loss classes that already warned "these look like logits".
_warned_logits = set()


def _check_fraction(value, argument):
    return check_float(argument, value, 0.0, 1.0)


def _check_probabilities(y_pred, loss_name):
    """Keras computes on values outside [0, 1] (renormalised and clipped, as documented):
    so does minnet, saying once per loss class that they look like logits."""
    data = y_pred.data
    if loss_name in _warned_logits or not data.size or (data.min() >= 0 and data.max() <= 1):
        return
    _warned_logits.add(loss_name)
    warnings.warn(
        f"{loss_name}(from_logits=False) received `y_pred` outside [0, 1] (values in "
        f"[{float(np.nanmin(data)):g}, {float(np.nanmax(data)):g}]): computed as Keras does "
        f"(clipped to [1e-7, 1 - 1e-7], rows renormalised for the categorical losses), but if `y_pred` are logits (no "
        f"softmax/sigmoid on the last layer), pass from_logits=True.",
        UserWarning, stacklevel=user_stacklevel())


def _warn_if_probabilities(loss, y_pred):
    """Logit losses fed with softmax outputs train badly; say so once per loss class.

    A loss object that has once received logits (a batch that is not all probability rows)
    stops looking: its model gives logits, and ``fit`` asks at every step.
    """
    name = type(loss).__name__
    if name in _warned_probabilities or loss.__dict__.get("_saw_logits"):
        return
    data = y_pred.data
    if data.ndim < 2 or data.shape[-1] < 2 or data.size == 0:
        return
    # Every row must qualify, so a first row that does not settles it (logits almost always
    # have a negative entry there): the whole-array checks run only when it looks like one.
    first = data.reshape(-1, data.shape[-1])[0]
    if first.min() < 0 or first.max() > 1 or abs(float(first.sum()) - 1.0) > 2e-3:
        loss._saw_logits = True
        return
    if not (np.all((data >= 0) & (data <= 1)) and np.allclose(data.sum(axis=-1), 1.0, atol=1e-3)):
        loss._saw_logits = True
    else:
        _warned_probabilities.add(name)
        warnings.warn(
            f"{name}(from_logits=True) received `y_pred` that look like probabilities (values in "
            f"[0, 1], rows summing to 1): was a Softmax applied already? Then use "
            f"{name}(from_logits=False), or drop the Softmax and keep from_logits=True.",
            UserWarning, stacklevel=user_stacklevel())


def _check_axis(axis):
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise invalid("axis", "an int", axis, TypeError)
    return int(axis)


def _axis_last(y_true, y_pred, axis):
    """Both arguments with ``axis`` moved to the end (a no-op for -1)."""
    ndim = len(y_pred.shape)
    if not -ndim <= axis < ndim:
        raise invalid("axis", f"an axis of `y_pred` (rank {ndim})", axis)
    axis %= ndim
    if axis == ndim - 1:
        return y_true, y_pred
    order = tuple(i for i in range(ndim) if i != axis) + (axis,)
    y_true = y_true.permute(order) if hasattr(y_true, "permute") else np.transpose(y_true, order)
    return y_true, y_pred.permute(order)


def _renormalised_rows(p):
    """``S`` (N, 1), ``q = p / S`` and ``clip(q, eps, 1 - eps)`` of C-contiguous rows ``p``,
    as the composite computes them (``np.clip`` is this minimum of a maximum, without its
    wrapper; the sum is the kernel ``Tensor.sum`` runs)."""
    total = reduce_kernels.sum_axis(p, 1, False, n_threads=get_num_threads()).reshape(-1, 1)
    q = np.true_divide(p, total)
    eps = epsilon()
    return total, q, np.minimum(np.maximum(q, eps), 1.0 - eps)


def _renormalised_log_backward(p, d_log):
    """The gradient, with respect to ``p``, of ``log(clip(p / S, eps, 1 - eps))`` given its
    gradient ``d_log``: the composite's steps in its order (log's ``g / c``, the clip's mask,
    the division's two gradients, the sum's broadcast), so the same bits."""
    total, q, clipped = _renormalised_rows(p)
    d_q = d_log / clipped * (clipped == q)      # the clip passes where it changed nothing
    d_total = (np.negative(d_q) * p / (total * total)).sum(axis=1, keepdims=True)
    return d_q / total + d_total


def _renormalised_log_backward_graph(p, d_log):
    """``_renormalised_log_backward`` in Tensor operations (recorded: double backward)."""
    total = p.sum(axis=-1, keepdims=True)
    q = p / total
    eps = epsilon()
    passes = ((q.data >= eps) & (q.data <= 1.0 - eps)).astype(q.dtype)
    d_q = d_log / q.clip(eps, 1.0 - eps) * passes
    return d_q / total - (d_q * p / (total * total)).sum(axis=-1, keepdims=True)


class SparseProbabilityNll(Function):
    """Keras's sparse cross-entropy of probabilities as one node: per row ``i`` with label
    ``k``, ``S = sum_j p_j``, ``q = p / S``, ``loss_i = -log(clip(q, eps, 1 - eps))[k]``.

    Forward and backward run the NumPy operations of the seven-node composite
    ``-_renormalised_log(p)[rows, labels]`` in its order (the same sum kernel, divisions,
    clip, log and gather; backward: log's ``g / c``, the clip's mask, the division's two
    gradients and the sum's broadcast), so values and gradients are the composite's bits,
    NaN and clipped rows included, for one node's bookkeeping instead of seven
    (``docs/math/losses.md``; ``benchmarks/bench_training.py --profile``, "smx").
    """

    node_name = "SparseCategoricalCrossentropyBackward"

    @staticmethod
    def forward(ctx, p, labels):
        p = np.ascontiguousarray(p)
        _, _, clipped = _renormalised_rows(p)
        ctx.save_for_backward(p)
        ctx.labels = labels
        return np.negative(np.log(clipped)[np.arange(p.shape[0]), labels])

    @staticmethod
    def backward(ctx, g):
        (p,) = ctx.saved_tensors
        d_log = np.zeros(p.shape, p.dtype)
        d_log[np.arange(p.shape[0]), ctx.labels] = np.negative(g)
        return _renormalised_log_backward(p, d_log), None

    @staticmethod
    def backward_graph(ctx, g):
        # double backward: the composite itself, recorded on the graph input
        (p_arr,) = ctx.saved_arrays
        p = ctx.graph_input(0, p_arr)
        n = p_arr.shape[0]
        rows = np.arange(n)
        one_hot = np.zeros(p_arr.shape, p_arr.dtype)
        one_hot[rows, ctx.labels] = 1.0
        return _renormalised_log_backward_graph(p, -(g.reshape(n, 1) * one_hot)), None


class ProbabilityCrossEntropy(Function):
    """Keras's categorical cross-entropy of probabilities against target rows ``t`` (an
    array: no gradient to it) as one node: ``loss_i = -sum_j t_j log(clip(p_j / S, eps,
    1 - eps))``. As ``SparseProbabilityNll``, it runs the composite's NumPy operations
    (``-(_renormalised_log(p) * t).sum(-1)``) in their order: the same bits, one node
    (``docs/math/losses.md``)."""

    node_name = "CategoricalCrossentropyBackward"

    @staticmethod
    def forward(ctx, p, target):
        p = np.ascontiguousarray(p)
        _, _, clipped = _renormalised_rows(p)
        ctx.save_for_backward(p, target)
        weighted = np.ascontiguousarray(np.multiply(np.log(clipped), target))
        return np.negative(reduce_kernels.sum_axis(weighted, 1, False, n_threads=get_num_threads()))

    @staticmethod
    def backward(ctx, g):
        p, target = ctx.saved_tensors
        return _renormalised_log_backward(p, np.negative(g).reshape(-1, 1) * target), None

    @staticmethod
    def backward_graph(ctx, g):
        # double backward: the composite itself, recorded on the graph input
        p_arr, target = ctx.saved_arrays
        p = ctx.graph_input(0, p_arr)
        return _renormalised_log_backward_graph(p, -(g.reshape(-1, 1) * target)), None


def _renormalised_log(probabilities):
    """Keras's ``log(clip(p / sum(p), eps, 1 - eps))`` over the last axis: rows that do not
    sum to 1 are rescaled first (the gradient includes the rescaling; 0 where clipped)."""
    return (probabilities / probabilities.sum(axis=-1, keepdims=True)).clip(
        epsilon(), 1.0 - epsilon()).log()


class Poisson(ElementwiseLoss):
    """Keras's ``mean(y_pred - y_true * log(y_pred + eps))`` over the last axis
    (``nn.PoissonNLLLoss(log_input=False, eps=1e-7)``).

    Shape:
        y_true, y_pred: ``(N, ...)``, the same. Output: scalar or ``y_pred.shape[:-1]``.

    Example:
        >>> Poisson()([[1.0, 0.0]], mn.tensor([[1.0, 2.0]])).item()
        1.5
    """

    default_name = "poisson"

    def _elementwise(self, y_true, y_pred, reduction):
        y_true, y_pred = prediction_tensors(y_true, y_pred)
        return torch_reduce(y_pred - y_true * (y_pred + epsilon()).log(), reduction)


class BinaryCrossentropy(ElementwiseLoss):
    """Binary cross-entropy ``-(t log p + (1 - t) log(1 - p))``, averaged over the last axis.

    With ``from_logits=False`` ``y_pred`` are probabilities, clipped to ``[1e-7, 1 - 1e-7]``
    as Keras does, then ``nn.BCELoss``; with ``from_logits=True`` (``nn.BCEWithLogitsLoss``)
    ``y_pred`` are logits and the sigmoid is fused in, stable for any magnitude.

    Args:
        from_logits: whether ``y_pred`` are logits rather than probabilities.
        label_smoothing: float in [0, 1]; targets become ``t * (1 - s) + 0.5 * s``.
        axis: the axis averaged per sample (default -1).
        reduction: ``"sum_over_batch_size"``, ``"sum"``, ``"none"``.
        name: log name (``"binary_crossentropy"``).

    Shape:
        y_true, y_pred: ``(N, ...)``, the same (``(N,)`` labels against ``(N, 1)`` outputs are
        N samples; ``(N,)`` against ``(N,)`` is one sample, as in Keras). Output: scalar, or
        the shape without ``axis`` with ``reduction="none"``.

    Example:
        >>> BinaryCrossentropy(from_logits=True)([1, 0], mn.tensor([[2.0], [-1.0]]))
    """

    default_name = "binary_crossentropy"
    _probability = "binary"

    def __init__(self, from_logits=False, label_smoothing=0.0, axis=-1,
                 reduction="sum_over_batch_size", name=None, dtype=None):
        self.from_logits = bool(from_logits)
        self.label_smoothing = _check_fraction(label_smoothing, "label_smoothing")
        self.axis = _check_axis(axis)
        super().__init__(reduction=reduction, name=name, dtype=dtype)

    def _prepare(self, y_true, y_pred):
        y_true, y_pred = super()._prepare(y_true, y_pred)
        if not self.from_logits:
            _check_probabilities(y_pred, type(self).__name__)
        if self.label_smoothing:
            y_true = y_true * (1.0 - self.label_smoothing) + 0.5 * self.label_smoothing
        return y_true, y_pred

    def _elementwise(self, y_true, y_pred, reduction):
        if self.from_logits:
            return F.binary_cross_entropy_with_logits(y_pred, y_true, reduction=reduction)
        return F.binary_cross_entropy(y_pred.clip(epsilon(), 1.0 - epsilon()), y_true,
                                      reduction=reduction)

    def get_config(self):
        return {"from_logits": self.from_logits, "label_smoothing": self.label_smoothing,
                "axis": self.axis, **super().get_config()}


class BinaryFocalCrossentropy(BinaryCrossentropy):
    """Keras's binary focal cross-entropy: ``(1 - p_t)**gamma * bce`` (optionally times
    ``alpha_t``), averaged over the last axis, with ``p_t = t p + (1 - t)(1 - p)`` and
    ``bce`` Keras's (probabilities clipped to ``[1e-7, 1 - 1e-7]``).

    Args:
        apply_class_balancing: weight by ``alpha`` for 1s and ``1 - alpha`` for 0s.
        alpha: balancing weight in [0, 1].
        gamma: focusing parameter >= 0.
        from_logits, label_smoothing, reduction, name: as ``BinaryCrossentropy``.

    Shape:
        y_true, y_pred: ``(N, ...)``, the same. Output: scalar or ``y_pred.shape[:-1]``.

    Example:
        >>> BinaryFocalCrossentropy(gamma=2.0)([[1.0]], mn.tensor([[0.9]]))
    """

    default_name = "binary_focal_crossentropy"

    def __init__(self, apply_class_balancing=False, alpha=0.25, gamma=2.0, from_logits=False,
                 label_smoothing=0.0, axis=-1, reduction="sum_over_batch_size", name=None,
                 dtype=None):
        self.apply_class_balancing = bool(apply_class_balancing)
        self.alpha = check_float("alpha", alpha, 0.0, 1.0)
        self.gamma = check_float("gamma", gamma, 0.0)
        super().__init__(from_logits=from_logits, label_smoothing=label_smoothing, axis=axis,
                         reduction=reduction, name=name, dtype=dtype)

    def _elementwise(self, y_true, y_pred, reduction):
        y_true, y_pred = prediction_tensors(y_true, y_pred)
        p = y_pred.sigmoid() if self.from_logits else y_pred
        clipped = p.clip(epsilon(), 1.0 - epsilon())
        bce = -(y_true * clipped.log() + (1.0 - y_true) * (1.0 - clipped).log())
        p_t = y_true * p + (1.0 - y_true) * (1.0 - p)
        values = (1.0 - p_t) ** self.gamma * bce if self.gamma else bce
        if self.apply_class_balancing:
            values = (y_true * self.alpha + (1.0 - y_true) * (1.0 - self.alpha)) * values
        return torch_reduce(values, reduction)

    def get_config(self):
        return {"apply_class_balancing": self.apply_class_balancing, "alpha": self.alpha,
                "gamma": self.gamma, **super().get_config()}


class CategoricalCrossentropy(ClassLoss):
    """Cross-entropy with one-hot or probability targets, per sample:
    ``-sum_c t_c log q_c`` with ``q = softmax(y_pred)`` (``from_logits=True``, the fused
    ``nn.CrossEntropyLoss`` with probability targets) or, Keras's probabilities
    (``from_logits=False``), ``q = clip(y_pred / sum_c y_pred, 1e-7, 1 - 1e-7)``: rows that
    do not sum to 1 are rescaled first, and the gradient includes that rescaling.
    (``mn.functional.cross_entropy`` is PyTorch's: logits only.)

    Label smoothing is PyTorch's (and Keras's): ``t <- (1 - s) t + s / C``.

    Args:
        from_logits: whether ``y_pred`` are logits (recommended: drop the final Softmax).
        label_smoothing: float in [0, 1].
        axis: the class axis (default -1; any axis of ``y_pred``, as Keras).
        reduction: ``"sum_over_batch_size"``, ``"sum"``, ``"none"`` (one loss per sample).
        name: log name (``"categorical_crossentropy"``).

    Shape:
        y_true, y_pred: ``(N, C)`` (or ``(..., C)``), the same. Output: scalar or ``(N,)``.

    Example:
        >>> CategoricalCrossentropy(from_logits=True)(np.eye(3)[[0, 2]], mn.tensor(np.zeros((2, 3))))
    """

    default_name = "categorical_crossentropy"
    _probability = "one_hot"

    def __init__(self, from_logits=False, label_smoothing=0.0, axis=-1,
                 reduction="sum_over_batch_size", name=None, dtype=None):
        self.from_logits = bool(from_logits)
        self.label_smoothing = _check_fraction(label_smoothing, "label_smoothing")
        self.axis = _check_axis(axis)
        super().__init__(reduction=reduction, name=name, dtype=dtype)

    def _prepare(self, y_true, y_pred):
        y_true, y_pred = super()._prepare(y_true, y_pred)
        y_true, y_pred = _axis_last(y_true, y_pred, self.axis)
        if self.from_logits:
            _warn_if_probabilities(self, y_pred)
        else:
            _check_probabilities(y_pred, type(self).__name__)
        return y_true, y_pred

    def _values(self, y_true, y_pred):
        return self._compute(y_true, y_pred, "none")

    def _reduced(self, y_true, y_pred, kind):
        return self._compute(y_true, y_pred, kind) if kind in ("mean", "sum") else None

    def _compute(self, y_true, y_pred, reduction):
        n_classes = y_pred.shape[-1]
        if self.from_logits:
            batch_shape = tuple(y_pred.shape[:-1])
            if len(batch_shape) != 1:  # (..., C) -> (M, C) for the fused kernel
                y_pred = y_pred.reshape(-1, n_classes)
                y_true = y_true.reshape(-1, n_classes)
            out = F.cross_entropy(y_pred, y_true, label_smoothing=self.label_smoothing,
                                  reduction=reduction)
            if reduction == "none" and len(batch_shape) != 1:
                out = out.reshape(batch_shape)
            return out
        if self.label_smoothing:
            y_true = y_true * (1.0 - self.label_smoothing) + self.label_smoothing / n_classes
        if isinstance(y_true, Tensor) and y_true.requires_grad:   # soft targets with a graph
            values = -(_renormalised_log(y_pred) * y_true).sum(axis=-1)
        else:                          # one node, the same bits
            rows = y_pred if y_pred.ndim == 2 else y_pred.reshape(-1, n_classes)
            values = ProbabilityCrossEntropy.apply(rows, np.ascontiguousarray(
                raw_data(y_true).reshape(-1, n_classes), dtype=rows.dtype))
            if y_pred.ndim != 2:
                values = values.reshape(y_pred.shape[:-1])
        return reduce_values(values, None, {"none": "none", "sum": "sum", "mean": "mean"}[reduction])

    def get_config(self):
        return {"from_logits": self.from_logits, "label_smoothing": self.label_smoothing,
                "axis": self.axis, **super().get_config()}


class CategoricalFocalCrossentropy(CategoricalCrossentropy):
    """Keras's categorical focal cross-entropy, per sample:
    ``sum_c alpha (1 - q_c)**gamma (-t_c log q_c)`` with ``q`` the probabilities
    (``softmax(y_pred)`` with ``from_logits``), renormalised to sum to 1 and clipped to
    ``[1e-7, 1 - 1e-7]``.

    Args:
        alpha: weighting factor (default 0.25).
        gamma: focusing parameter >= 0 (default 2.0).
        from_logits, label_smoothing, reduction, name: as ``CategoricalCrossentropy``.

    Shape:
        y_true, y_pred: ``(N, C)``. Output: scalar or ``(N,)``.

    Example:
        >>> CategoricalFocalCrossentropy()(np.eye(3)[[0]], mn.tensor([[0.8, 0.1, 0.1]]))
    """

    default_name = "categorical_focal_crossentropy"

    def __init__(self, alpha=0.25, gamma=2.0, from_logits=False, label_smoothing=0.0, axis=-1,
                 reduction="sum_over_batch_size", name=None, dtype=None):
        self.alpha = check_float("alpha", alpha)
        self.gamma = check_float("gamma", gamma, 0.0)
        super().__init__(from_logits=from_logits, label_smoothing=label_smoothing, axis=axis,
                         reduction=reduction, name=name, dtype=dtype)

    def _reduced(self, y_true, y_pred, kind):
        return None

    def _values(self, y_true, y_pred):
        y_true, y_pred = prediction_tensors(y_true, y_pred)
        n_classes = y_pred.shape[-1]
        if self.label_smoothing:
            y_true = y_true * (1.0 - self.label_smoothing) + self.label_smoothing / n_classes
        probs = y_pred.softmax(axis=-1) if self.from_logits else y_pred
        output = (probs / probs.sum(axis=-1, keepdims=True)).clip(epsilon(), 1.0 - epsilon())
        cce = -(y_true * output.log())
        focal = ((1.0 - output) ** self.gamma if self.gamma else 1.0) * self.alpha * cce
        return focal.sum(axis=-1)

    def get_config(self):
        return {"alpha": self.alpha, "gamma": self.gamma, **super().get_config()}


class SparseCategoricalCrossentropy(Loss):
    """Cross-entropy with integer class labels (``nn.CrossEntropyLoss`` on logits with
    ``from_logits=True``; otherwise Keras's ``-log(clip(y_pred / sum_c y_pred, 1e-7,
    1 - 1e-7))[label]``: rows that do not sum to 1 are rescaled first, and the gradient
    includes that rescaling).

    Labels are checked once per call: integer values in ``[0, C)`` or ``ignore_class``,
    unsigned labels too large for int64 reported as they are (``_checks.check_labels``;
    int64 labels with ``from_logits=True`` and no ``ignore_class`` are checked by the
    cross-entropy kernel as it reads them, and reported the same way).

    Args:
        from_logits: whether ``y_pred`` are logits (recommended: drop the final Softmax).
        ignore_class: optional label whose samples contribute nothing (PyTorch's
            ``ignore_index``); ``"sum_over_batch_size"`` then averages over the other samples
            only, and a batch where every label is ignored gives 0 with a zero gradient.
        reduction: ``"sum_over_batch_size"``, ``"sum"``, ``"none"`` (one loss per sample, 0
            where ignored).
        name: log name (``"sparse_categorical_crossentropy"``).

    Shape:
        y_true: ``(N,)`` or ``(N, 1)`` integer labels in ``[0, C)`` (or ``(...)`` with
        ``y_pred`` of shape ``(..., C)``); y_pred: ``(N, C)``. Output: scalar or ``(N,)``.

    Example:
        >>> SparseCategoricalCrossentropy(from_logits=True)([0, 2], mn.tensor(np.zeros((2, 3))))
    """

    default_name = "sparse_categorical_crossentropy"
    sparse_labels = True

    def __init__(self, from_logits=False, ignore_class=None, reduction="sum_over_batch_size",
                 name=None, dtype=None):
        self.from_logits = bool(from_logits)
        if ignore_class is not None and (isinstance(ignore_class, bool)
                                         or not isinstance(ignore_class, (int, np.integer))):
            raise invalid("ignore_class", "an int or None", ignore_class)
        self.ignore_class = None if ignore_class is None else int(ignore_class)
        super().__init__(reduction=reduction, name=name, dtype=dtype)

    def __call__(self, y_true, y_pred, sample_weight=None):
        warn_if_swapped(self, y_true, y_pred)
        mask = get_keras_mask(y_pred)
        labels, y_pred = self._prepare(y_true, y_pred)
        if mask is not None:
            if self.ignore_class is None:
                return masked_reduce(self._compute(labels, y_pred, "none"), mask, sample_weight,
                                      self.reduction)
            # Keras: the ignored labels' mask joins the input mask (in_mask & out_mask).
            valid = labels != self.ignore_class
            values = self._compute(np.where(valid, labels, 0), y_pred, "none")
            return masked_reduce(values, np.logical_and(mask, valid.reshape(values.shape)),
                                  sample_weight, self.reduction)
        if self.ignore_class is None:
            kind = REDUCTIONS[self.reduction]
            if sample_weight is None and kind in ("mean", "sum"):
                return self._compute(labels, y_pred, kind)
            values = self._compute(labels, y_pred, "none")
            weight = None if sample_weight is None else broadcast_sample_weight(sample_weight, values)
            return reduce_values(values, weight, self.reduction)
        valid = labels != self.ignore_class
        values = self._compute(np.where(valid, labels, 0), y_pred, "none")
        weight = valid.astype(values.dtype)
        if sample_weight is not None:
            weight = weight * broadcast_sample_weight(sample_weight, values)
        return reduce_values(values, weight, self.reduction, count=int(valid.sum()))

    def _prepare(self, y_true, y_pred):
        name = type(self).__name__
        y_pred = as_prediction(y_pred)
        check_class_axis(y_pred, name)
        labels = raw_data(y_true)
        check_numeric(labels, "y_true")
        batch_shape = tuple(y_pred.shape[:-1])
        if labels.shape != batch_shape and labels.shape == batch_shape + (1,):
            labels = labels.reshape(batch_shape)
        if labels.shape != batch_shape:
            hint = (", one-hot targets need CategoricalCrossentropy"
                    if labels.shape == tuple(y_pred.shape) else "")
            if y_pred.ndim > 2 and labels.shape in ((y_pred.shape[0],), (y_pred.shape[0], 1)):
                hint += (" (the model gives one prediction per position, not per sample: a Dense "
                         "layer acts on the last axis only, so on images or sequences add "
                         "`layers.Flatten()` or `layers.GlobalAveragePooling2D()` before it)")
            raise ValueError(f"{name}: expected integer labels `y_true` of shape {batch_shape} (or "
                             f"{batch_shape + (1,)}) for y_pred.shape={tuple(y_pred.shape)}{hint}. "
                             f"Received: y_true.shape={labels.shape}. Loss objects take Keras's "
                             f"order loss(y_true, y_pred); minnet.functional takes PyTorch's "
                             f"(input, target).")
        if not (self.from_logits and self.ignore_class is None and labels.dtype == np.int64):
            labels = check_labels("y_true", labels, y_pred.shape[-1], ignore_index=self.ignore_class)
        # else the cross-entropy kernel checks each row's label in its loop (_compute)
        if self.from_logits:
            _warn_if_probabilities(self, y_pred)
        else:
            _check_probabilities(y_pred, name)
        return labels, y_pred

    def call(self, y_true, y_pred):
        """Per-sample losses (no reduction, no weighting; ignored samples give 0)."""
        labels, y_pred = self._prepare(y_true, y_pred)
        if self.ignore_class is None:
            return self._compute(labels, y_pred, "none")
        valid = labels != self.ignore_class
        values = self._compute(np.where(valid, labels, 0), y_pred, "none")
        return values * valid.astype(values.dtype)

    def _compute(self, labels, y_pred, reduction):
        """Losses of int64 labels, checked in range by ``_prepare`` (or, with
        ``from_logits``, by the cross-entropy kernel): PyTorch's reduction names."""
        batch_shape = tuple(y_pred.shape[:-1])
        if len(batch_shape) != 1:  # (..., C) -> (M, C)
            y_pred = y_pred.reshape(-1, y_pred.shape[-1])
            labels = labels.reshape(-1)
        if self.from_logits:
            try:
                out = F.cross_entropy(y_pred, labels, reduction=reduction)
            except ValueError:
                # a label out of range, found by the kernel: say it as this loss does
                check_labels("y_true", labels, y_pred.shape[-1], ignore_index=self.ignore_class)
                raise
        else:
            # The labels were checked above: gather without another scan, in one node.
            out = torch_reduce(SparseProbabilityNll.apply(y_pred, labels), reduction)
        if reduction == "none" and len(batch_shape) != 1:
            out = out.reshape(batch_shape)
        return out

    def get_config(self):
        return {"from_logits": self.from_logits, "ignore_class": self.ignore_class,
                **super().get_config()}


class KLDivergence(ClassLoss):
    """Keras's Kullback-Leibler divergence per sample:
    ``sum(t * log(t / p))`` over the last axis with ``t, p`` clipped to ``[1e-7, 1]``
    (``nn.KLDivLoss(reduction="none")(log p, t).sum(-1)`` for values inside that range).

    Shape:
        y_true, y_pred: ``(N, C)``. Output: scalar or ``(N,)``.

    Example:
        >>> KLDivergence()([[0.5, 0.5]], mn.tensor([[0.5, 0.5]])).item()
        0.0
    """

    default_name = "kl_divergence"

    def _values(self, y_true, y_pred):
        y_true, y_pred = prediction_tensors(y_true, y_pred)
        t = y_true.clip(epsilon(), 1.0)
        p = y_pred.clip(epsilon(), 1.0)
        return (t * (t / p).log()).sum(axis=-1)
