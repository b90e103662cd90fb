"""``Trainer``: compile / fit / evaluate / predict / ``*_on_batch`` for every kind of model.

``Model`` (and so ``Sequential``, functional and subclassed models) inherits this class.
The loop is Keras 3's: ``fit`` asks a data adapter for batches and calls
``train_step(data)`` on each; the default step is written out so a student can read it::

    def train_step(self, data):
        x, y, sample_weight = mn.utils.unpack_x_y_sample_weight(data)
        self.optimizer.zero_grad()
        y_pred = self(x, training=True)
        loss = self.compute_loss(x, y, y_pred, sample_weight)
        loss.backward()
        self.optimizer.step()
        self.loss_tracker.update_state(loss.item(), batch size)
        return self.compute_metrics(x, y, y_pred, sample_weight)

**The custom-step contract** (override any of the three):

- ``train_step(data)`` / ``test_step(data)``: ``data`` is one batch as the data source gives
  it, as Keras 3 hands it over: ``(x, y)`` for arrays (``(x, y, sample_weight)`` with
  weights or class weights, ``x`` alone without targets), whatever a generator or
  PyDataset yields otherwise; take it apart with
  ``mn.utils.unpack_x_y_sample_weight(data)``. Return a dict of logs ``{name: float}``
  (``self.compute_metrics(...)`` or ``{m.name: m.result() for m in self.metrics}``); the
  epoch's logs are the last step's, so return running means (the metrics' results).
- ``self.compute_loss(x, y, y_pred, sample_weight)``: the compiled loss(es) as a scalar
  ``mn.Tensor`` (call ``backward()`` on it); ``self.optimizer`` (``zero_grad``, ``step``);
  ``self.metrics`` (reset at each epoch start: list your own ``Mean`` trackers there by
  overriding the property).
- ``predict_step(data)``: returns the model's outputs for the batch (Tensors or arrays).

Logs are running means over the epoch so far, weighted by batch size (Keras 3); the
validation values are prefixed ``val_``.
"""
import functools
import math
import numbers
import warnings

import numpy as np

from minnet import config
from minnet import optimizers as optimizers_module
from minnet.autograd import Tensor, no_grad
from minnet.callbacks import CallbackList, History, TerminateOnNaN, resolve_verbose
from minnet.data import as_array, train_validation_split
from minnet.layers.call_context import call_context
from minnet.metrics import Mean
from minnet.metrics.base import log_value
from minnet.trainers import data_adapters, distributed_step
from minnet.trainers.compile_utils import CompileLoss, CompileMetrics, is_sparse_loss
from minnet.trainers.data_adapters import (ArrayDataAdapter, GeneratorDataAdapter, dataset_adapter,
                                           flat_leaves, is_dataset, leaf_data,
                                           pack_x_y_sample_weight,
                                           unpack_x_y_sample_weight)
from minnet.trainers.epoch_iterator import EpochIterator
from minnet.trainers.interrupts import StepGuard
from minnet.trainers.targets import (check_class_weight, class_ids, first_nonfinite_row, prepare_target,
                                     sample_weights, string_input_hint)
from minnet._checks import check_int
from minnet._ext import _memory

__all__ = ["Trainer", "NotCompiledError"]


class NotCompiledError(ValueError, RuntimeError):
    """fit/evaluate/train_on_batch called before ``compile()`` (a ValueError, as in Keras)."""


class LossTracker(Mean):
    """The running mean of the loss, weighted by batch size (a fast path for Python floats)."""

    def update_state(self, values, sample_weight=None):
        if type(values) is float and (sample_weight is None or type(sample_weight) is int):
            weight = 1 if sample_weight is None else sample_weight
            self.total += values * weight
            self.count += weight
            return
        super().update_state(values, sample_weight=sample_weight)


def _check_optional_int(value, name, minimum):
    return None if value is None else check_int(name, value, minimum=minimum)


def _check_verbose(verbose, default):
    if verbose == "auto":
        # "auto": the live bar on a terminal or notebook, one line per epoch in a log file;
        # `default` is what "auto" means when a bar would be 1 (predict passes 0).
        return resolve_verbose("auto") if default == 1 else default
    if isinstance(verbose, bool) or verbose not in (0, 1, 2):
        raise ValueError(f"Invalid value for argument `verbose`: expected 'auto', 0, 1 or 2. "
                         f"Received: verbose={verbose!r}")
    return int(verbose)


def _check_batch_size(batch_size):
    if batch_size is None:
        return 32
    return check_int("batch_size", batch_size, minimum=1)


def _check_seed(seed):
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValueError(f"Invalid value for argument `seed`: expected None or an int >= 0. "
                         f"Received: seed={seed!r}")
    return int(seed)


def _reusing_buffers(method):
    """Run a loop inside ``_memory.buffer_cache()``: the large buffers a step frees are kept
    for the next step (docs/performance.md, "Page faults")."""
    @functools.wraps(method)
    def loop(self, *args, **kwargs):
        with _memory.buffer_cache(), distributed_step.errors_reach_all_ranks():
            return method(self, *args, **kwargs)
    return loop


def _step_logs(logs, step_name, model):
    """A step's logs, which must be a dict: a None (a forgotten ``return``) is named as such
    rather than read as "no batch"."""
    if not isinstance(logs, dict):
        hint = " (a missing `return`?)" if logs is None else ""
        raise TypeError(f"{type(model).__name__}.{step_name} must return a dict of logs "
                        f"{{name: value}}, as Keras's does. Received: {type(logs).__name__}{hint}")
    return logs


def _check_finite(leaf, label):
    """No NaN/inf in a float array given to fit (x or y), naming the first bad sample."""
    if leaf.dtype.kind != "f":
        return
    row = first_nonfinite_row(leaf)
    if row is not None:
        raise ValueError(f"Invalid value for argument `{label}`: expected finite values "
                         f"(no NaN or inf). Received: {label}[{row}] (the first bad sample) "
                         f"holds NaN or inf. Clean or impute the data, or pass "
                         f"`check_finite=False` to train anyway.")


class Trainer:
    """The training loop shared by every model (a mixin of ``Model``).

    The model provides ``__call__``, ``parameters()``, ``train()``/``eval()``,
    ``output_names`` and ``structured_inputs``/``structured_outputs`` (whether a list
    ``x``/``y`` means several inputs/outputs). What the loop asks of the optimizer, the
    losses, the metrics, the layers and the data adapter is a protocol with defaults on
    their base classes (docs/internals.md), asked without probing.
    """

    def _init_trainer(self):
        self.optimizer = None
        self.loss = None
        self.compiled_loss = None
        self.compiled_metrics = []
        self._compiled_metrics = None
        self.loss_weight = 1.0
        self.stop_training = False
        self.history = None
        self.nonfinite_layer = None
        self._compile_identifiers = None
        self._optimizer_needs_params = False
        self.loss_tracker = LossTracker(name="loss")
        self._locate_nonfinite = False
        self._compile_output_names = None
        self.resume_epoch = None

    # ------------------------------------------------------------------ compile
    def compile(self, optimizer="rmsprop", loss=None, metrics=None, loss_weights=None, *,
                weighted_metrics=None, run_eagerly=False, steps_per_execution=1, jit_compile="auto",
                auto_scale_loss=True):
        """Choose the optimizer, the loss(es) and the metrics for ``fit`` / ``evaluate``.

        Args:
            optimizer: an optimizer instance or a name (``"sgd"``, ``"adam"``, ...). One
                created without parameters receives ``model.parameters()`` once the
                model is built.
            loss: a Loss instance, a name (``"mse"``, ...) or a callable
                ``loss(y_true, y_pred)``; for several outputs a list (in output order)
                or a dict ``{output name: loss}`` (a single loss applies to every output).
            metrics: list of metric names / instances (``"accuracy"`` picks the right
                accuracy for the loss); for several outputs a list of lists or a dict.
            loss_weights: a float, a list or a dict: the weight of each output's loss.
            weighted_metrics: metrics updated with the sample (or class) weights; as in
                Keras 3, ``metrics`` are updated without them.
            run_eagerly, steps_per_execution, jit_compile, auto_scale_loss: Keras's
                execution options; minnet always runs eagerly, one step at a time, so they
                are accepted and change nothing (``steps_per_execution`` must be >= 1).
        """
        check_int("steps_per_execution", steps_per_execution, minimum=1)
        optimizer_object = optimizers_module.get(optimizer)
        output_names = self.output_names
        compiled_loss = CompileLoss(loss, loss_weights, output_names)
        compiled_metrics = CompileMetrics(metrics, compiled_loss.losses or [None] * len(output_names),
                                          output_names, weighted_metrics=weighted_metrics)
        self.optimizer = optimizer_object
        self.compiled_loss = None if compiled_loss.empty else compiled_loss
        self.loss = (None if compiled_loss.empty else
                     compiled_loss.losses[0] if len(output_names) == 1 else compiled_loss.losses)
        self._compiled_metrics = compiled_metrics
        self.compiled_metrics = compiled_metrics.metrics
        self.loss_weight = compiled_loss.weights[0] if len(output_names) == 1 else 1.0
        self._compile_output_names = list(output_names)
        self._compile_identifiers = {"optimizer": optimizer, "loss": loss,
                                     "metrics": metrics if isinstance(metrics, dict) else list(metrics or []),
                                     "loss_weights": loss_weights}
        if weighted_metrics:
            self._compile_identifiers["weighted_metrics"] = list(weighted_metrics) \
                if isinstance(weighted_metrics, (list, tuple)) else weighted_metrics
        self._optimizer_needs_params = not optimizer_object.params
        if self._optimizer_needs_params and self.built:
            optimizer_object.set_parameters(self.parameters())

    @property
    def compiled(self):
        return self.optimizer is not None

    @property
    def metrics(self):
        """Every metric ``fit`` resets at an epoch start: the loss tracker(s), then the compiled ones."""
        result = [self.loss_tracker]
        if self.compiled_loss is not None:
            result.extend(self.compiled_loss.trackers)
        result.extend(self.compiled_metrics)
        return result

    @property
    def metrics_names(self):
        return [m.name for m in self.metrics]

    def reset_metrics(self):
        for metric in self.metrics:
            metric.reset_state()

    def get_metrics_result(self):
        """``{name: result}`` of every metric in ``self.metrics``: a float, or an ndarray for
        a metric with several values (``F1Score`` per class), as in Keras."""
        return {m.name: log_value(m.result()) for m in self.metrics}

    def _require_compiled(self, method, need_loss=True):
        if self.optimizer is None:
            raise NotCompiledError(f"You must call `compile(optimizer, loss)` on model '{self.name}' "
                                   f"before `{method}()`.")
        # A model compiled without `loss=` may add its losses in call (add_loss); the first
        # step says so when it adds none (compute_loss).

    def _ensure_optimizer_params(self):
        if self.optimizer is not None and self._optimizer_needs_params and self.built \
                and not self.optimizer.params:
            self.optimizer.set_parameters(self.parameters())

    # ------------------------------------------------------------------ the steps
    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        """The compiled loss(es) of ``y_pred`` against ``y``, plus ``self.losses``: a scalar ``mn.Tensor``.

        Several outputs: ``y`` and ``y_pred`` are lists (output order) or dicts (by output
        name); the result is ``sum_i loss_weight_i * loss_i``.
        """
        if self.compiled_loss is None:
            terms = self.losses
            if not terms:
                raise NotCompiledError(f"Model '{self.name}' was compiled without a loss and adds "
                                       f"none with `add_loss`: pass `loss=` to `compile()` (or "
                                       f"compute the loss yourself in train_step).")
            loss = terms[0]
            for term in terms[1:]:
                loss = loss + term
            return loss
        y_true = self._flat_outputs(y)
        predictions = self._flat_outputs(y_pred)
        batch = len(predictions[0]) if predictions and predictions[0] is not None else None
        loss = self.compiled_loss(y_true, predictions, sample_weight, batch_size=batch)
        # Regularization terms (kernel/bias/activity regularizers) join the loss, as in Keras:
        # History's "loss" includes them.
        for term in self.losses:
            loss = loss + term
        return loss

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        """Update the compiled metrics with one batch and return ``get_metrics_result()``."""
        if self._compiled_metrics is not None and self._compiled_metrics.entries:
            self._compiled_metrics.update_state(self._flat_outputs(y), self._flat_outputs(y_pred),
                                                sample_weight)
        return self.get_metrics_result()

    def _flat_outputs(self, value):
        """Targets or predictions as a list in output order (dicts by output name)."""
        if type(value) is Tensor or type(value) is np.ndarray:
            return [value]
        if isinstance(value, dict):
            return [value.get(name) for name in self._compile_output_names or self.output_names]
        if isinstance(value, (list, tuple)):
            return list(value)
        return [value]

    def train_step(self, data):
        """One optimisation step on one batch; returns the logs (see the module docstring)."""
        x, y, sample_weight = unpack_x_y_sample_weight(data)
        self.optimizer.zero_grad()
        y_pred = self(x, training=True)
        loss = self.compute_loss(x, y, y_pred, sample_weight)
        loss_value = float(loss.item())
        if self._locate_nonfinite and not math.isfinite(loss_value):
            self.nonfinite_layer = self.locate_nonfinite(x)
        if loss.requires_grad or self.trainable_weights:
            loss.backward()
            self.optimizer.step()
        else:                                # Keras's torch trainer: nothing to train, a warning
            warnings.warn(f"Model '{self.name}' has no trainable weights: fit() computes the loss "
                          f"but changes nothing.", stacklevel=2)
        self.loss_tracker.update_state(loss_value, len(x) if type(x) is np.ndarray else len(flat_leaves(x)[0]))
        return self.compute_metrics(x, y, y_pred, sample_weight)

    def test_step(self, data):
        """Loss and metrics on one batch in eval mode, without a graph; returns the logs."""
        x, y, sample_weight = unpack_x_y_sample_weight(data)
        with no_grad():
            y_pred = self(x, training=False)
            loss = self.compute_loss(x, y, y_pred, sample_weight, training=False)
        self.loss_tracker.update_state(float(loss.item()), len(flat_leaves(x)[0]))
        return self.compute_metrics(x, y, y_pred, sample_weight)

    def predict_step(self, data):
        """The model's outputs for one batch (eval mode; ``predict`` runs it under no_grad)."""
        x, _, _ = unpack_x_y_sample_weight(data)
        return self(x, training=False)

    def _layer_outputs(self, x):
        """``(layer, output)`` pairs in order, or None (the default) for a model that cannot
        list them: then ``locate_nonfinite`` checks the model's own output."""
        return None

    def locate_nonfinite(self, x):
        """Name of the first layer whose output is NaN/inf for input ``x`` (None if none).

        The model class supplies ``_layer_outputs(x)`` (Sequential and functional models
        do); for other models (None) the answer is the model's own name when its output is
        not finite.
        """
        with no_grad():
            outputs = self._layer_outputs(x)
            if outputs is not None:
                for layer, value in outputs:
                    if not np.isfinite(value.data).all():
                        return layer.name
                return None
            out = self(x, training=True)
        values = [leaf_data(v) for v in self._flat_outputs(out)]
        return None if all(np.isfinite(v).all() for v in values) else self.name

    # ------------------------------------------------------------------ data
    _prepare_target = staticmethod(prepare_target)
    _class_ids = staticmethod(class_ids)

    def _sample_weights(self, y, n, sample_weight, class_weight, check_finite=True):
        return sample_weights(y, n, sample_weight, class_weight, check_finite)

    def _losses_per_output(self):
        if self.compiled_loss is None:
            return [None] * len(self.output_names)
        return self.compiled_loss.losses

    def _prepare_targets(self, y, name="y"):
        if y is None:
            return None
        losses = self._losses_per_output()
        if isinstance(y, dict):
            names = self._compile_output_names or self.output_names
            return {key: self._prepare_target(value, losses[names.index(key)] if key in names else None,
                                              f"{name}[{key!r}]") for key, value in y.items()}
        if isinstance(y, list):
            return [self._prepare_target(value, losses[i] if i < len(losses) else None, f"{name}[{i}]")
                    for i, value in enumerate(y)]
        return self._prepare_target(y, losses[0] if losses else None, name)

    def _structure(self, value, name, structured):
        """Arrays as the model expects them: one array, or a list/dict for several inputs/outputs."""
        if value is None:
            return None
        if isinstance(value, dict):
            return {key: as_array(item, f"{name}[{key!r}]") for key, item in value.items()}
        if isinstance(value, (list, tuple)) and structured(value):
            return [as_array(item, f"{name}[{i}]") for i, item in enumerate(value)]
        return as_array(value, name)

    def _check_arrays(self, x, y=None, need_y=True, check_finite=False, name="x"):
        """Checked array structures for ``x`` and ``y``; labels converted for sparse losses."""
        if isinstance(x, list) and x and all(isinstance(item, tuple) and len(item) in (2, 3) for item in x):
            raise ValueError(f"Invalid value for argument `{name}`: a list is read as a list of inputs, "
                             f"not as batches, so a list of (x, y) tuples is not a data source (Keras "
                             f"3 refuses it too). Concatenate the batches into arrays, or yield them "
                             f"from a generator (with `steps_per_epoch=`) or a "
                             f"`mn.utils.PyDataset`. Received: a list of {len(x)} tuples")
        x = self._structure(x, name, self.structured_inputs)
        if need_y and y is None:
            raise ValueError("Argument `y` is required: pass the targets for `x`.")
        leaves = flat_leaves(x)
        if not leaves:
            raise ValueError(f"Invalid value for argument `{name}`: expected at least one array.")
        n = None
        for i, leaf in enumerate(leaves):
            label = name if len(leaves) == 1 else f"{name}[{i}]"
            if leaf.ndim == 0 or len(leaf) == 0:
                raise ValueError(f"Invalid value for argument `{label}`: expected at least one sample "
                                 f"(batch dimension first). Received: {label} with shape {leaf.shape}")
            if leaf.dtype.kind not in "fiub":
                raise TypeError(f"Invalid value for argument `{label}`: expected a numeric array. "
                                f"Received: {label} with dtype {leaf.dtype}"
                                f"{string_input_hint(self.layers, leaf)}")
            if n is None:
                n = len(leaf)
            elif len(leaf) != n:
                raise ValueError(f"All inputs must have the same number of samples. Received: "
                                 f"{[len(v) for v in leaves]} samples")
            if check_finite:
                _check_finite(leaf, label)
        if y is not None:
            y = self._structure(y, "y", self.structured_outputs)
            y_leaves = flat_leaves(y)
            for i, leaf in enumerate(y_leaves):
                if leaf.ndim == 0 or len(leaf) != n:
                    raise ValueError(f"Arguments `x` and `y` must have the same number of samples. "
                                     f"Received: len(x)={n}, y with shape {leaf.shape}")
                if check_finite:
                    _check_finite(leaf, "y" if len(y_leaves) == 1 else f"y[{i}]")
            y = self._prepare_targets(y)
        return x, y, n

    def _check_label_range(self, y, name):
        """Sparse labels against the number of classes of a built single-output model."""
        if not isinstance(y, np.ndarray) or y.dtype.kind not in "iu" or not is_sparse_loss(self.loss) \
                or not self.built or len(self.output_names) != 1:
            return
        try:
            n_classes = self.output_shape[-1]
        except (AttributeError, ValueError, TypeError, IndexError):
            return
        if not isinstance(n_classes, int) or y.size == 0:
            return
        ignore = self.loss.ignore_class
        labels = y if ignore is None else y[y != ignore]
        if labels.size and (labels.min() < 0 or labels.max() >= n_classes):
            bad = int(np.flatnonzero((y < 0) | (y >= n_classes) & (y != (ignore if ignore is not None else -1)))[0]) \
                if ignore is not None else int(np.flatnonzero((y < 0) | (y >= n_classes))[0])
            raise ValueError(f"Invalid value for argument `{name}`: expected class labels (the loss's "
                             f"y_true) in [0, {n_classes}) for a model with {n_classes} outputs. "
                             f"Received: {name}[{bad}]={int(y.flat[bad])}")

    def _batch_preparer(self, class_weight=None):
        """A function applied to each batch of a non-array source (sparse labels, class weights)."""
        losses = self._losses_per_output()
        sparse = len(losses) == 1 and is_sparse_loss(losses[0])

        def prepare(batch):
            x, y, w = x0, y0, w0 = unpack_x_y_sample_weight(batch)
            if isinstance(x, (list, tuple)) and not self.structured_inputs(x):
                x = as_array(x, "x")
            if y is not None:
                y = self._structure(y, "y", self.structured_outputs)
                if sparse and isinstance(y, np.ndarray):
                    y = self._prepare_target(y, losses[0])
            if class_weight is not None and y is not None:
                w = self._sample_weights(y, len(flat_leaves(y)[0]), w, class_weight)
            if w is not None and not isinstance(w, np.ndarray):
                w = as_array(w, "sample_weight")
            if x is x0 and y is y0 and w is w0:
                return batch            # train_step gets the batch exactly as the source gave it
            return pack_x_y_sample_weight(x, y, w)

        return prepare

    # ------------------------------------------------------------------ callbacks and modes
    def _callback_list(self, callbacks, verbose, epochs, steps):
        if isinstance(callbacks, CallbackList):
            return callbacks
        if callbacks is not None and not isinstance(callbacks, (list, tuple)):
            raise TypeError(f"Invalid value for argument `callbacks`: expected a list of Callback "
                            f"objects. Received: callbacks={callbacks!r}")
        return CallbackList(list(callbacks or []), add_history=True, add_progbar=verbose != 0,
                            model=self, verbose=verbose, epochs=epochs, steps=steps)


    def _warn_missing_classes(self, y_train, y_val, stacklevel):
        train_ids = self._class_ids(y_train, one_hot_only=True)
        val_ids = self._class_ids(y_val, one_hot_only=True)
        if train_ids is None or val_ids is None:
            return
        missing = sorted(set(np.unique(val_ids).tolist()) - set(np.unique(train_ids).tolist()))
        if missing:
            warnings.warn(f"validation_split takes the last samples before shuffling, and class(es) "
                          f"{missing} occur only in that validation part, so the model never trains "
                          f"on them. Shuffle x and y before fit (e.g. with a permutation) if the "
                          f"data is sorted by class.", UserWarning, stacklevel=stacklevel)

    def _build_from(self, x):
        """Build the model for the arrays ``x`` when it is not built yet."""
        if not self.built:
            self.build_from_data(x)

    # ------------------------------------------------------------------ fit
    @_reusing_buffers
    def fit(self, x=None, y=None, batch_size=None, epochs=1, verbose="auto", callbacks=None,
            validation_split=0.0, validation_data=None, shuffle=True, class_weight=None,
            sample_weight=None, initial_epoch=0, steps_per_epoch=None, validation_steps=None,
            validation_batch_size=None, validation_freq=1, seed=None, check_finite=True,
            prefetch=None):
        """Train the model for ``epochs`` passes over the data.

        Args:
            x: inputs: an array (a list/dict of arrays for several inputs), a
                ``PyDataset``, a generator or any iterable of batches ``(x, y[, w])``
                (a PyTorch DataLoader works; its tensors are converted).
            y: targets for array ``x`` (a list/dict for several outputs); None otherwise.
            batch_size: samples per step for arrays (default 32).
            epochs: index of the last epoch (trains ``epochs - initial_epoch`` epochs).
            verbose: ``"auto"``/1 progress bar, 2 one line per epoch, 0 silent.
            callbacks: list of ``minnet.callbacks.Callback``.
            validation_split: fraction in [0, 1) of the LAST samples of array data (taken
                before shuffling) held out for validation.
            validation_data: ``(x_val, y_val[, w_val])`` arrays, or a dataset/iterable.
            shuffle: shuffle array samples (PyDataset batch order) before each epoch.
            class_weight: dict ``{class index: weight}`` multiplying each sample's loss.
            sample_weight: per-sample loss weights ``(N,)`` for array data.
            initial_epoch: epoch to start from (to resume a previous run).
            steps_per_epoch: batches per epoch (needed for a generator, which may be
                infinite; a source that runs out first ends training with a warning).
            validation_steps: batches per validation run (default: the whole source).
            validation_batch_size: batch size for array validation data (default batch_size).
            validation_freq: validate every this many epochs (int) or after the listed
                epochs (a list of 1-based epoch numbers).
            seed: int seed for shuffling (epoch ``e`` uses ``default_rng([seed, e])``, so a
                resumed run sees the same order); None draws from ``mn.manual_seed``'s generator.
            check_finite: check once, before training, that the float arrays ``x`` and ``y``,
                ``sample_weight`` and the ``class_weight`` values hold no NaN/inf (False trains
                anyway). ``class_weight`` keys are always checked: ints >= 0 (keys of classes
                absent from ``y`` are ignored, as in Keras).
            prefetch: draw batches in a background thread (default: on for generators,
                PyDataset and iterables, off for arrays).

        Returns:
            History: ``history.history`` maps each log name to its list of epoch values.
        """
        stacklevel = 4      # the user's call: fit <- _reusing_buffers.loop <- user
        self._require_compiled("fit")
        epochs = check_int("epochs", epochs, minimum=0)
        epochs = config.capped_epochs(epochs)          # keras.config.set_max_epochs
        initial_epoch = check_int("initial_epoch", initial_epoch, minimum=0)
        verbose = _check_verbose(verbose, 1)
        seed = _check_seed(seed)
        steps_per_epoch = _check_optional_int(steps_per_epoch, "steps_per_epoch", 1)
        validation_steps = _check_optional_int(validation_steps, "validation_steps", 1)
        validation_freq = self._check_validation_freq(validation_freq)
        batch_size = _check_batch_size(batch_size)
        validation_batch_size = (batch_size if validation_batch_size is None
                                 else _check_batch_size(validation_batch_size))

        validation = None
        if is_dataset(x):
            if y is not None:
                raise ValueError(f"Argument `y` must be None when `x` is a dataset or generator (it "
                                 f"yields the targets). Received: y of type {type(y).__name__}")
            if sample_weight is not None:
                raise ValueError("Argument `sample_weight` must be None when `x` is a dataset or "
                                 "generator (yield (x, y, sample_weight) batches instead).")
            if validation_split:
                raise ValueError("Argument `validation_split` only works with array data; pass "
                                 "`validation_data=` for a dataset or generator.")
            adapter = dataset_adapter(x, shuffle, seed)
            if isinstance(adapter, GeneratorDataAdapter) and adapter.one_shot \
                    and steps_per_epoch is None and adapter.num_batches is None:
                raise ValueError(f"`x` is a generator (an iterator without a length), which may be "
                                 f"infinite, so fit cannot tell where an epoch ends: pass "
                                 f"`steps_per_epoch=` (batches per epoch). Received: x of type "
                                 f"{type(x).__name__}, steps_per_epoch=None")
            if class_weight is not None:
                class_weight = check_class_weight(class_weight, check_finite)
            prepare = self._batch_preparer(class_weight)
        else:
            default_step = type(self).train_step is Trainer.train_step and self.compiled_loss is not None
            x, y, n = self._check_arrays(x, y, need_y=default_step, check_finite=check_finite)
            weights = self._sample_weights(y, n, sample_weight, class_weight, check_finite)
            if validation_data is None and validation_split:
                (x_train, y_train), (x_val, y_val) = self._split(x, y, validation_split)
                w_val = None
                if weights is not None:
                    n_train = len(flat_leaves(x_train)[0])
                    weights, w_val = weights[:n_train], weights[n_train:]
                self._warn_missing_classes(y_train, y_val, stacklevel)
                x, y = x_train, y_train
                validation = ("arrays", (x_val, y_val, w_val))
            self._build_from(x)
            self._check_label_range(y, "y")
            adapter = ArrayDataAdapter(x, y, weights, batch_size=batch_size, shuffle=shuffle, seed=seed)
            prepare = None
        if validation_data is not None:
            validation = self._validation_source(validation_data)

        adapter, train_step = distributed_step.wrap_fit(self, adapter)     # the model's own in one process
        iterator = EpochIterator(adapter, steps_per_epoch=steps_per_epoch, prefetch=prefetch,
                                 prepare=prepare, stacklevel=stacklevel)
        callback_list = self._callback_list(callbacks, verbose, epochs, iterator.num_steps)
        self.history = next((cb for cb in callback_list.callbacks if isinstance(cb, History)), None)
        self._locate_nonfinite = any(isinstance(cb, TerminateOnNaN) for cb in callback_list.callbacks)
        self.nonfinite_layer = None
        self.stop_training = False
        guard = StepGuard()
        self._ensure_optimizer_params()
        try:
            # The mode is passed down each call (train_step calls `self(x, training=True)`),
            # never stored on the layers, so a predict in another thread cannot flip it
            # (layers/call_context.py). As in Keras, the loop itself sets no mode: a custom
            # train_step that calls `self(x)` without `training` runs in inference mode.
            with guard, call_context(training=None):
                self.resume_epoch = None
                callback_list.on_train_begin()
                if self.resume_epoch is not None:     # set by BackupAndRestore
                    initial_epoch = max(initial_epoch, self.resume_epoch)
                epoch_logs = {}
                for epoch in range(initial_epoch, epochs):
                    self.reset_metrics()
                    callback_list.on_epoch_begin(epoch)
                    logs = None
                    for step, data in iterator.epoch(epoch):
                        callback_list.on_train_batch_begin(step)
                        guard.begin_step()
                        if not self.built:       # a model first seen with a generator's batch
                            self._build_from(unpack_x_y_sample_weight(data)[0])
                            self._ensure_optimizer_params()
                        logs = _step_logs(train_step(data), "train_step", self)
                        guard.end_step()
                        callback_list.on_train_batch_end(step, logs)
                        if self.stop_training:
                            break
                    if logs is None:
                        if iterator.exhausted:
                            break
                        if epoch > initial_epoch:     # a one-shot iterator used up by earlier epochs
                            warnings.warn(f"Your input ran out of data: epoch {epoch + 1} got no batch; "
                                          f"ending training here. Pass a re-iterable source or "
                                          f"`steps_per_epoch=`.", UserWarning, stacklevel=stacklevel)
                            break
                        raise ValueError(f"Epoch {epoch + 1} had no batch: the data source `x` is empty.")
                    epoch_logs = self._pythonify(logs)
                    if validation is not None and self._validate_now(epoch, validation_freq):
                        val_logs = self._run_validation(validation, validation_batch_size,
                                                        validation_steps, callback_list)
                        epoch_logs.update({"val_" + k: v for k, v in val_logs.items()})
                    callback_list.on_epoch_end(epoch, epoch_logs)
                    if self.stop_training or iterator.exhausted:
                        break
                self.optimizer.finalize_variable_values()   # Keras: use_ema
                callback_list.on_train_end(epoch_logs)
        finally:
            iterator.close()
        return self.history

    @staticmethod
    def _pythonify(logs):
        if not isinstance(logs, dict):
            raise TypeError(f"train_step/test_step must return a dict of logs {{name: value}}. "
                            f"Received: {type(logs).__name__}")
        result = {}
        for key, value in logs.items():
            if isinstance(value, Tensor):
                value = value.data
            if isinstance(value, np.ndarray) and value.size == 1:
                value = float(value.reshape(()))
            elif isinstance(value, (np.floating, np.integer)):
                value = float(value)
            result[key] = value
        return result

    @staticmethod
    def _check_validation_freq(validation_freq):
        if isinstance(validation_freq, (list, tuple, set)):
            return set(check_int("validation_freq", v, minimum=1) for v in validation_freq)
        return check_int("validation_freq", validation_freq, minimum=1)

    @staticmethod
    def _validate_now(epoch, validation_freq):
        if isinstance(validation_freq, set):
            return epoch + 1 in validation_freq
        return (epoch + 1) % validation_freq == 0

    @staticmethod
    def _split(x, y, validation_split):
        leaves_x, leaves_y = flat_leaves(x), ([] if y is None else flat_leaves(y))
        (first, _), (first_val, _) = train_validation_split(leaves_x[0], None, validation_split)
        n_train = len(first)

        def part(structure, leaves, lo, hi):
            if structure is None:
                return None
            cut = [leaf[lo:hi] for leaf in leaves]
            return data_adapters.pack_leaves(structure, cut)

        n = len(leaves_x[0])
        return ((part(x, leaves_x, 0, n_train), part(y, leaves_y, 0, n_train)),
                (part(x, leaves_x, n_train, n), part(y, leaves_y, n_train, n)))

    def _validation_source(self, validation_data):
        """Check validation data before the first epoch: arrays fully, datasets as given."""
        if is_dataset(validation_data):
            return ("dataset", validation_data)
        if not isinstance(validation_data, (tuple, list)) or len(validation_data) not in (2, 3):
            raise ValueError(f"Invalid value for argument `validation_data`: expected a tuple "
                             f"(x_val, y_val) or (x_val, y_val, sample_weight_val), or a dataset. "
                             f"Received: {type(validation_data).__name__}"
                             + (f" of length {len(validation_data)}"
                                if isinstance(validation_data, (tuple, list)) else ""))
        x_val, y_val = validation_data[0], validation_data[1]
        try:
            x_val, y_val, n = self._check_arrays(x_val, y_val, name="x")
            if self.built:
                self.check_input_shapes(x_val)
            self._check_label_range(y_val, "y")
        except (ValueError, TypeError) as error:
            raise type(error)(f"Invalid `validation_data`: {error}") from None
        w_val = None
        if len(validation_data) == 3 and validation_data[2] is not None:
            w_val = self._sample_weights(y_val, n, validation_data[2], None)
        return ("arrays", (x_val, y_val, w_val))

    def _run_validation(self, validation, batch_size, steps, callback_list):
        kind, source = validation
        if kind == "arrays":
            adapter = ArrayDataAdapter(*source, batch_size=batch_size)
            prepare = None
        else:
            adapter = dataset_adapter(source, False, None)
            prepare = self._batch_preparer()
        iterator = EpochIterator(adapter, steps_per_epoch=steps, prepare=prepare, prefetch=False)
        try:
            return self._run_test_loop(iterator, callback_list)
        finally:
            iterator.close()

    def _run_test_loop(self, iterator, callback_list):
        self.reset_metrics()
        logs = None
        with call_context(training=False):
            callback_list.on_test_begin()
            test_step = distributed_step.test_step_for(self)
            for step, data in iterator.epoch(0):
                callback_list.on_test_batch_begin(step)
                logs = _step_logs(test_step(data), "test_step", self)
                callback_list.on_test_batch_end(step, logs)
        logs = self._pythonify(logs) if logs is not None else self.get_metrics_result()
        callback_list.on_test_end(logs)
        return logs

    # ------------------------------------------------------------------ evaluate / predict
    def _adapter_for(self, x, y, sample_weight, batch_size, need_y, steps):
        """(adapter, prepare, number of samples or None) for evaluate/predict."""
        if is_dataset(x):
            if y is not None:
                raise ValueError(f"Argument `y` must be None when `x` is a dataset or generator. "
                                 f"Received: y of type {type(y).__name__}")
            return dataset_adapter(x, False, None), self._batch_preparer()
        x, y, n = self._check_arrays(x, y, need_y=need_y)
        weights = self._sample_weights(y, n, sample_weight, None)
        self._build_from(x)
        if need_y:
            self._check_label_range(y, "y")
        return ArrayDataAdapter(x, y, weights, batch_size=batch_size), None

    @_reusing_buffers
    def evaluate(self, x=None, y=None, batch_size=None, verbose="auto", sample_weight=None,
                 steps=None, callbacks=None, return_dict=False):
        """Loss and metrics over the data in eval mode, without building a graph.

        Args:
            x, y: arrays (``y`` the targets), or a dataset/generator/iterable yielding
                ``(x, y[, w])`` batches (``y`` None then).
            batch_size: samples per batch for arrays (default 32).
            verbose: ``"auto"``/1 progress bar, 0 silent.
            sample_weight: optional per-sample loss weights ``(N,)``.
            steps: number of batches to evaluate (default: the whole source).
            callbacks: list of callbacks (``on_test_*`` hooks).
            return_dict: return ``{"loss": ..., metric: ...}`` instead of a list.

        Returns:
            The loss (float) when no metrics are compiled, else ``[loss, *metrics]``, or a dict.
        """
        self._require_compiled("evaluate")
        batch_size = _check_batch_size(batch_size)
        verbose = _check_verbose(verbose, 1)
        steps = _check_optional_int(steps, "steps", 1)
        adapter, prepare = self._adapter_for(x, y, sample_weight, batch_size,
                                             type(self).test_step is Trainer.test_step
                                             and self.compiled_loss is not None, steps)
        iterator = EpochIterator(adapter, steps_per_epoch=steps, prepare=prepare, prefetch=False)
        callback_list = self._callback_list(callbacks, verbose, 1, iterator.num_steps)
        try:
            logs = self._run_test_loop(iterator, callback_list)
        finally:
            iterator.close()
        if return_dict:
            return logs
        values = [logs[name] for name in self.metrics_names if name in logs]
        return values[0] if len(values) == 1 else values

    @_reusing_buffers
    def predict(self, x, batch_size=None, verbose=0, steps=None, callbacks=None):
        """Outputs for ``x``, in eval mode and without building a graph.

        Args:
            x: inputs (arrays, or a dataset/generator/iterable of batches).
            batch_size: samples per batch for arrays (default 32).
            verbose: 0 silent (default), 1 progress bar.
            steps: number of batches (default: the whole source).
            callbacks: list of callbacks (``on_predict_*`` hooks).

        Returns:
            np.ndarray with the model's outputs, batch first (a list/dict of them for a
            model with several outputs).
        """
        batch_size = _check_batch_size(batch_size)
        verbose = _check_verbose(verbose, 1)
        steps = _check_optional_int(steps, "steps", 1)
        adapter, prepare = self._adapter_for(x, None, None, batch_size, False, steps)
        iterator = EpochIterator(adapter, steps_per_epoch=steps, prepare=prepare, prefetch=False)
        callback_list = self._callback_list(callbacks, verbose, 1, iterator.num_steps)
        outputs = []
        structure = None
        try:
            with call_context(training=False), no_grad():
                callback_list.on_predict_begin()
                predict_step = distributed_step.predict_step_for(self)
                for step, data in iterator.epoch(0):
                    callback_list.on_predict_batch_begin(step)
                    out = predict_step(data)
                    if out is None:
                        raise TypeError(f"{type(self).__name__}.predict_step returned None: it must "
                                        f"return the model's outputs for the batch (a missing "
                                        f"`return`?).")
                    structure = out
                    leaves = [np.asarray(leaf_data(v)) for v in flat_leaves(out)]
                    outputs.append(leaves)
                    callback_list.on_predict_batch_end(step, {"outputs": leaves[0] if len(leaves) == 1
                                                              else leaves})
                callback_list.on_predict_end()
        finally:
            iterator.close()
        if not outputs:
            raise ValueError("predict received no batch: the data source `x` is empty.")
        merged = distributed_step.gathered(predict_step, [np.concatenate([batch[i] for batch in outputs], axis=0)
                                                          for i in range(len(outputs[0]))])
        return data_adapters.pack_leaves(structure, merged)

    # ------------------------------------------------------------------ single batches
    def train_on_batch(self, x, y=None, sample_weight=None, class_weight=None, return_dict=False):
        """One optimisation step on one batch; returns the loss (and metrics) for that batch."""
        self._require_compiled("train_on_batch")
        x, y, n = self._check_arrays(x, y)
        weights = self._sample_weights(y, n, sample_weight, class_weight)
        self._build_from(x)
        with call_context(training=None):
            self.reset_metrics()
            self._ensure_optimizer_params()
            logs = self._pythonify(self.train_step(pack_x_y_sample_weight(x, y, weights)))
        return self._batch_result(logs, return_dict)

    def test_on_batch(self, x, y=None, sample_weight=None, return_dict=False):
        """Loss (and metrics) on one batch in eval mode."""
        self._require_compiled("test_on_batch")
        x, y, n = self._check_arrays(x, y)
        weights = self._sample_weights(y, n, sample_weight, None)
        self._build_from(x)
        with call_context(training=False):
            self.reset_metrics()
            logs = self._pythonify(self.test_step(pack_x_y_sample_weight(x, y, weights)))
        return self._batch_result(logs, return_dict)

    def predict_on_batch(self, x):
        """Outputs for one batch (eval mode, no graph) as an ndarray (list/dict for several)."""
        x, _, _ = self._check_arrays(x, need_y=False)
        with call_context(training=False), no_grad():
            out = self.predict_step((x,))
        leaves = [np.asarray(leaf_data(v)) for v in flat_leaves(out)]
        return data_adapters.pack_leaves(out, leaves)

    def _batch_result(self, logs, return_dict):
        if return_dict:
            return logs
        values = [logs[name] for name in self.metrics_names if name in logs]
        return values[0] if len(values) == 1 else values
