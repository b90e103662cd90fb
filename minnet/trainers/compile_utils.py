"""What ``compile`` resolves: the loss of every output, its weight, and the metrics of each.

A model has one or more outputs, named by ``model.output_names``. ``compile`` accepts, as
Keras 3 does:

- ``loss``: one loss (used for every output), a list (one per output, in order) or a dict
  ``{output name: loss}`` (an output without an entry has no loss);
- ``loss_weights``: a float, a list or a dict, multiplying each output's loss; the total
  loss is ``sum_i loss_weight_i * loss_i``;
- ``metrics``: a list (applied to every output), a list of lists (one per output) or a
  dict ``{output name: metric or list}``.

With several outputs the logs also hold ``<output>_loss`` and ``<output>_<metric>``.
"""
import numbers

import numpy as np

from minnet import losses as losses_module
from minnet import metrics as metrics_module
from minnet.layers.base import get_keras_mask
from minnet.trainers.data_adapters import leaf_data

__all__ = ["CompileLoss", "CompileMetrics", "is_sparse_loss"]


def is_sparse_loss(loss):
    """True for sparse categorical cross-entropy (integer class labels as targets): the
    compiled ``Loss``'s ``sparse_labels`` (compile wraps a user's function in one), or a
    loss name."""
    if isinstance(loss, losses_module.Loss):
        return loss.sparse_labels
    if isinstance(loss, str):
        name = loss.lower().replace("_", "")
        return name == "scce" or "sparse" in name and "crossentropy" in name
    return False


def _per_output(value, output_names, argument, broadcast):
    """``value`` (single, list or dict) as a list aligned with ``output_names``."""
    n = len(output_names)
    if isinstance(value, dict):
        unknown = sorted(set(value) - set(output_names))
        if unknown:
            raise ValueError(f"Invalid value for argument `{argument}`: keys {unknown} are not outputs "
                             f"of the model. Expected keys among {list(output_names)}. "
                             f"Received: {argument}={value!r}")
        return [value.get(name) for name in output_names]
    if isinstance(value, (list, tuple)) and not broadcast:
        if len(value) != n:
            raise ValueError(f"Invalid value for argument `{argument}`: the model has {n} output(s) "
                             f"{list(output_names)}, so a list needs {n} entries. Received "
                             f"{len(value)}: {argument}={value!r}")
        return list(value)
    return [value] * n


class CompileLoss:
    """The compiled loss: per-output loss objects and weights, summed.

    Args:
        loss: as ``compile``'s ``loss``.
        loss_weights: as ``compile``'s ``loss_weights``.
        output_names: names of the model's outputs.
    """

    def __init__(self, loss, loss_weights, output_names):
        self.output_names = list(output_names)
        n = len(self.output_names)
        specs = _per_output(loss, self.output_names, "loss", broadcast=not isinstance(loss, (list, tuple, dict)))
        self.losses = [None if spec is None else losses_module.get(spec) for spec in specs]
        if all(loss is None for loss in self.losses):
            self.losses = []
        if loss_weights is None:
            weights = [1.0] * n
        else:
            if isinstance(loss_weights, (list, tuple)) and n == 1 and len(loss_weights) == 1:
                loss_weights = loss_weights[0]
            weights = _per_output(loss_weights, self.output_names, "loss_weights",
                                  broadcast=not isinstance(loss_weights, (list, tuple, dict)))
            for w in weights:
                if w is not None and (isinstance(w, bool) or not isinstance(w, numbers.Real)):
                    raise ValueError(f"Invalid value for argument `loss_weights`: expected a float per "
                                     f"output (a float, a list or a dict). Received: "
                                     f"loss_weights={loss_weights!r}")
            weights = [1.0 if w is None else float(w) for w in weights]
        self.weights = weights
        self.trackers = []
        if n > 1:
            self.trackers = [metrics_module.Mean(name=f"{name}_loss") for name in self.output_names]
        self._single = n == 1 and bool(self.losses)

    @property
    def empty(self):
        return not self.losses

    def __call__(self, y_true, y_pred, sample_weight=None, batch_size=None):
        """Total loss (a scalar Tensor) for flat lists of targets and predictions."""
        if self._single:
            loss = self._one(self.losses[0], y_true[0], y_pred[0], sample_weight)
            return loss * self.weights[0] if self.weights[0] != 1.0 else loss
        total = None
        for i, loss_fn in enumerate(self.losses):
            if loss_fn is None or y_true[i] is None:
                continue
            weight = sample_weight[i] if isinstance(sample_weight, list) else sample_weight
            value = self._one(loss_fn, y_true[i], y_pred[i], weight)
            if self.trackers:
                self.trackers[i].update_state(float(value.item()),
                                              sample_weight=batch_size or 1)
            value = value * self.weights[i] if self.weights[i] != 1.0 else value
            total = value if total is None else total + value
        if total is None:
            raise ValueError("The model was compiled with losses, but no target (`y`) was given for "
                             "any output that has one.")
        return total

    @staticmethod
    def _one(loss_fn, y_true, y_pred, sample_weight):
        if sample_weight is None:
            return loss_fn(y_true, y_pred)
        if isinstance(sample_weight, np.ndarray) and sample_weight.dtype != y_pred.dtype:
            sample_weight = sample_weight.astype(y_pred.dtype)
        return loss_fn(y_true, y_pred, sample_weight=sample_weight)


def _copy_metric(metric):
    """A fresh metric of the same kind (a broadcast metric gets one object per output)."""
    if isinstance(metric, metrics_module.Metric):
        try:
            return metrics_module.deserialize(metrics_module.serialize(metric))
        except (TypeError, ValueError):
            return metric
    return metric


class CompileMetrics:
    """The compiled metrics: ``entries`` is a list of ``(output index, Metric)``.

    As in Keras 3, ``metrics`` are updated without the sample weights and
    ``weighted_metrics`` with them (a weighted metric whose name is taken already is
    logged as ``weighted_<name>``).

    Args:
        metrics: as ``compile``'s ``metrics``.
        losses: the per-output loss objects (``"accuracy"`` picks its kind from them).
        output_names: names of the model's outputs.
        weighted_metrics: as ``compile``'s ``weighted_metrics``.
    """

    def __init__(self, metrics, losses, output_names, weighted_metrics=None):
        self._build(metrics, losses, output_names)
        plain = list(self.entries)
        self.weighted = set()
        if weighted_metrics:
            self._build(weighted_metrics, losses, output_names, argument="weighted_metrics")
            names = {metric.name for _, metric in plain}
            weighted = []
            for index, metric in self.entries:
                if any(metric is existing for _, existing in plain):
                    metric = _copy_metric(metric)
                if metric.name in names:
                    metric.name = f"weighted_{metric.name}"
                names.add(metric.name)
                weighted.append((index, metric))
            self.weighted = {id(metric) for _, metric in weighted}
            self.entries = plain + weighted
            self.identifiers = [list(a) for a in self._plain_identifiers]
        self._unique_names()

    def _unique_names(self):
        """Two metrics of one name (``[AUC(), AUC(curve="PR")]``) would share one log entry:
        the later ones become ``auc_1``, ``auc_2``, ..., the names Keras gives such objects."""
        taken, seen = set(), set()
        for _, metric in self.entries:
            if id(metric) in seen:            # the same object listed twice: one entry
                continue
            seen.add(id(metric))
            base, k = metric.name, 0
            while metric.name in taken:
                k += 1
                metric.name = f"{base}_{k}"
            taken.add(metric.name)

    def _build(self, metrics, losses, output_names, argument="metrics"):
        self.output_names = list(output_names)
        n = len(self.output_names)
        if metrics is None:
            metrics = []
        if isinstance(metrics, str) or not isinstance(metrics, (list, tuple, dict)):
            raise TypeError(f"Invalid value for argument `{argument}`: expected a list of metrics "
                            f"(or, for several outputs, a list of lists or a dict). Received: "
                            f"{argument}={metrics!r}")
        if isinstance(metrics, dict):
            per_output = _per_output(metrics, self.output_names, "metrics", broadcast=False)
            identifiers = [[] if m is None else (list(m) if isinstance(m, (list, tuple)) else [m])
                           for m in per_output]
        elif n > 1 and metrics and all(isinstance(m, (list, tuple)) for m in metrics):
            identifiers = [list(m) for m in _per_output(list(metrics), self.output_names, "metrics",
                                                        broadcast=False)]
        else:
            identifiers = [list(metrics)] * n
        if argument == "metrics":
            self._plain_identifiers = identifiers
        self.identifiers = identifiers
        self.entries = []
        for index, ids in enumerate(identifiers):
            loss = losses[index] if index < len(losses) else None
            for identifier in ids:
                metric = metrics_module.get(identifier, loss=loss)
                if n > 1:
                    if any(metric is existing for _, existing in self.entries):
                        metric = _copy_metric(metric)
                    metric.name = f"{self.output_names[index]}_{metric.name}"
                self.entries.append((index, metric))

    @property
    def metrics(self):
        return [metric for _, metric in self.entries]

    def update_state(self, y_true, y_pred, sample_weight=None):
        for index, metric in self.entries:
            target = y_true[index]
            if target is None:
                continue
            weight = None
            if id(metric) in self.weighted:     # Keras: only weighted_metrics see the weights
                weight = sample_weight[index] if isinstance(sample_weight, list) else sample_weight
            prediction = y_pred[index]
            mask = get_keras_mask(prediction)
            prediction = leaf_data(prediction)
            if mask is not None:
                target, prediction, weight = _unmasked_steps(target, prediction, weight, mask)
            metric.update_state(target, prediction, sample_weight=weight)


def _unmasked_steps(target, prediction, weight, mask):
    """The unmasked (batch, timesteps) entries of a masked output, flattened into one batch:
    metrics see only the real steps (the weighted mean Keras 3 gives with a sample weight)."""
    target = np.asarray(leaf_data(target))
    if target.shape[:mask.ndim] != mask.shape or prediction.shape[:mask.ndim] != mask.shape:
        raise ValueError(f"The output carries a (batch, timesteps) mask of shape {mask.shape}, but "
                         f"the targets have shape {target.shape} and the predictions "
                         f"{prediction.shape}: expected both to start with {mask.shape}.")
    if weight is not None:
        weight = np.asarray(leaf_data(weight), dtype=np.float64)
        if weight.ndim and weight.shape[-1] == 1 and weight.ndim > 1:
            weight = weight.reshape(weight.shape[:-1])
        weight = np.broadcast_to(weight.reshape(weight.shape + (1,) * (mask.ndim - weight.ndim))
                                 if weight.ndim <= mask.ndim else weight, mask.shape)[mask]
    return target[mask], prediction[mask], weight
