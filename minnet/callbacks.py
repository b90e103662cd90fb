"""Callbacks: objects that watch (and steer) ``fit``, ``evaluate`` and ``predict``.

The hooks and their order are Keras's.  In ``fit``::

    on_train_begin
      on_epoch_begin(epoch)
        on_train_batch_begin(batch) ... on_train_batch_end(batch, logs)   # per batch
        (validation: on_test_begin, on_test_batch_*, on_test_end)
      on_epoch_end(epoch, logs)        # logs: loss, metrics, val_loss, val_metrics
    on_train_end

``logs`` values are running averages over the epoch so far (Keras 3), and callbacks
may add entries (``ReduceLROnPlateau`` adds ``learning_rate``, ``GradientMonitor``
adds ``grad_norm/<layer>``).  ``CallbackList`` appends ``History`` and
``ProgbarLogger`` after the user's callbacks, so they see those entries.

The model a callback sees (``self.model``) offers ``stop_training``, ``optimizer``,
``get_weights``/``set_weights``, ``save(path)``, ``save_weights(path)``, ``layers``
and ``history``.

Example:
    >>> from minnet import callbacks
    >>> model.fit(x, y, epochs=50, validation_split=0.1,
    ...           callbacks=[callbacks.EarlyStopping(patience=3, restore_best_weights=True),
    ...                      callbacks.ReduceLROnPlateau(factor=0.5, patience=2)])
"""
import csv
import inspect
import math
import numbers
import os
import sys
import time
import warnings

import numpy as np

__all__ = [
    "Callback",
    "CallbackList",
    "History",
    "ProgbarLogger",
    "EarlyStopping",
    "ModelCheckpoint",
    "LearningRateScheduler",
    "ReduceLROnPlateau",
    "CSVLogger",
    "TerminateOnNaN",
    "GradientMonitor",
    "resolve_verbose",
]


# ---- helpers ---------------------------------------------------------------------
def _in_notebook():
    ipython = sys.modules.get("IPython")   # only loaded when running under IPython/Jupyter
    get_ipython = getattr(ipython, "get_ipython", None)
    shell = get_ipython() if get_ipython is not None else None
    return shell is not None and type(shell).__name__ != "TerminalInteractiveShell"


def resolve_verbose(verbose):
    """Resolve ``verbose`` ("auto", 0, 1, 2) to an int, as ``fit`` does.

    "auto" is 1 (live progress bar) when ``sys.stdout`` is a terminal or when running
    in Jupyter/IPython, otherwise 2 (one line per epoch, friendlier to log files).
    """
    if verbose == "auto":
        isatty = getattr(sys.stdout, "isatty", None)
        try:
            tty = bool(isatty()) if isatty is not None else False
        except (ValueError, OSError):  # closed stream
            tty = False
        return 1 if tty or _in_notebook() else 2
    if isinstance(verbose, bool) or not isinstance(verbose, numbers.Integral) or verbose not in (0, 1, 2):
        raise ValueError("Invalid value for argument `verbose`: expected 0, 1, 2 or 'auto'. "
                         f"Received: verbose={verbose!r}")
    return int(verbose)


def _check_mode(mode):
    if mode not in ("auto", "min", "max"):
        raise ValueError("Invalid value for argument `mode`: expected 'auto', 'min' or 'max'. "
                         f"Received: mode={mode!r}")
    return mode


def _check_non_negative_int(name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        raise ValueError(f"Invalid value for argument `{name}`: expected a non-negative int. "
                         f"Received: {name}={value!r}")
    return int(value)


def _check_real(name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise ValueError(f"Invalid value for argument `{name}`: expected a finite number. "
                         f"Received: {name}={value!r}")
    return float(value)


_MAX_WORDS = ("acc", "auc", "precision", "recall", "f1", "iou", "r2")
_MIN_WORDS = ("loss", "error", "mse", "mae", "crossentropy", "hinge", "divergence", "mape", "msle")


def _monitor_is_max(monitor, mode):
    """True when larger values of ``monitor`` are better (``mode="auto"`` guesses from the name)."""
    if mode != "auto":
        return mode == "max"
    name = monitor[4:] if monitor.startswith("val_") else monitor
    if any(word in name for word in _MIN_WORDS):
        return False
    if any(word in name for word in _MAX_WORDS):
        return True
    raise ValueError(f"Cannot tell whether monitor={monitor!r} should be minimized or maximized. "
                     "Pass mode='min' for the lowest value or mode='max' for the highest one.")


def _scalar(value):
    """A float from a log value (float, numpy scalar, 0-d array or Tensor), else None."""
    value = getattr(value, "data", value)
    try:
        array = np.asarray(value)
    except Exception:  # noqa: BLE001 - anything unconvertible is "not a scalar"
        return None
    if array.ndim != 0 or not np.issubdtype(array.dtype, np.number):
        return None
    return float(array)


def _print(message):
    # Look sys.stdout up at call time so that redirection (pytest's capsys) works.
    sys.stdout.write(message + "\n")
    sys.stdout.flush()


# ---- base classes ----------------------------------------------------------------
class Callback:
    """Base class: override the hooks you need (all do nothing by default).

    Attributes:
        model: the model being trained (set by ``set_model``).
        params: dict with "epochs", "steps" and "verbose" (set by ``set_params``).

    Example:
        >>> class PrintLoss(Callback):
        ...     def on_epoch_end(self, epoch, logs=None):
        ...         print(epoch, logs["loss"])
    """

    def __init__(self):
        self.model = None
        self.params = {}

    def set_params(self, params):
        self.params = dict(params)

    def set_model(self, model):
        self.model = model

    def on_train_begin(self, logs=None): pass
    def on_train_end(self, logs=None): pass
    def on_epoch_begin(self, epoch, logs=None): pass
    def on_epoch_end(self, epoch, logs=None): pass
    def on_train_batch_begin(self, batch, logs=None): self.on_batch_begin(batch, logs)
    def on_train_batch_end(self, batch, logs=None): self.on_batch_end(batch, logs)
    def on_batch_begin(self, batch, logs=None): pass  # Keras 2 name of on_train_batch_begin
    def on_batch_end(self, batch, logs=None): pass    # Keras 2 name of on_train_batch_end
    def on_test_begin(self, logs=None): pass
    def on_test_end(self, logs=None): pass
    def on_test_batch_begin(self, batch, logs=None): pass
    def on_test_batch_end(self, batch, logs=None): pass
    def on_predict_begin(self, logs=None): pass
    def on_predict_end(self, logs=None): pass
    def on_predict_batch_begin(self, batch, logs=None): pass
    def on_predict_batch_end(self, batch, logs=None): pass

    def __repr__(self):
        return f"{type(self).__name__}()"


class CallbackList:
    """Calls every hook on a list of callbacks, in order.

    Args:
        callbacks: list of Callback (or None).
        add_history: append a ``History`` unless the list has one.
        add_progbar: append a ``ProgbarLogger`` unless the list has one.
        model: the model, given to every callback.
        **params: "epochs", "steps", "verbose", given to every callback's ``set_params``.

    Attributes:
        history: the ``History`` in the list (or None).
        progbar: the ``ProgbarLogger`` in the list (or None).

    Example:
        >>> cbs = CallbackList([EarlyStopping()], model=model, epochs=5, steps=40, verbose=2)
        >>> cbs.on_train_begin()
    """

    def __init__(self, callbacks=None, add_history=True, add_progbar=True, model=None, **params):
        if callbacks is None:
            callbacks = []
        elif isinstance(callbacks, Callback):
            callbacks = [callbacks]
        callbacks = list(callbacks)
        for i, cb in enumerate(callbacks):
            if not isinstance(cb, Callback):
                raise TypeError("Invalid value for argument `callbacks`: expected a list of "
                                f"minnet.callbacks.Callback. Received: element {i} of type "
                                f"{type(cb).__name__}")
        self.callbacks = callbacks
        self.history = next((cb for cb in callbacks if isinstance(cb, History)), None)
        self.progbar = next((cb for cb in callbacks if isinstance(cb, ProgbarLogger)), None)
        if self.history is None and add_history:
            self.history = History()
            self.callbacks.append(self.history)
        if self.progbar is None and add_progbar:
            self.progbar = ProgbarLogger()
            self.callbacks.append(self.progbar)
        self.model = None
        self.params = {}
        if model is not None:
            self.set_model(model)
        if params:
            self.set_params(params)

    def append(self, callback):
        self.callbacks.append(callback)

    def set_params(self, params):
        self.params = dict(params)
        for cb in self.callbacks:
            cb.set_params(params)

    def set_model(self, model):
        self.model = model
        for cb in self.callbacks:
            cb.set_model(model)

    def _call(self, hook, *args):
        for cb in self.callbacks:
            getattr(cb, hook)(*args)

    def on_train_begin(self, logs=None): self._call("on_train_begin", logs)
    def on_train_end(self, logs=None): self._call("on_train_end", logs)
    def on_epoch_begin(self, epoch, logs=None): self._call("on_epoch_begin", epoch, logs)
    def on_epoch_end(self, epoch, logs=None): self._call("on_epoch_end", epoch, logs)
    def on_train_batch_begin(self, batch, logs=None): self._call("on_train_batch_begin", batch, logs)
    def on_train_batch_end(self, batch, logs=None): self._call("on_train_batch_end", batch, logs)
    def on_test_begin(self, logs=None): self._call("on_test_begin", logs)
    def on_test_end(self, logs=None): self._call("on_test_end", logs)
    def on_test_batch_begin(self, batch, logs=None): self._call("on_test_batch_begin", batch, logs)
    def on_test_batch_end(self, batch, logs=None): self._call("on_test_batch_end", batch, logs)
    def on_predict_begin(self, logs=None): self._call("on_predict_begin", logs)
    def on_predict_end(self, logs=None): self._call("on_predict_end", logs)
    def on_predict_batch_begin(self, batch, logs=None): self._call("on_predict_batch_begin", batch, logs)
    def on_predict_batch_end(self, batch, logs=None): self._call("on_predict_batch_end", batch, logs)

    def __iter__(self):
        return iter(self.callbacks)

    def __len__(self):
        return len(self.callbacks)


# ---- History ---------------------------------------------------------------------
class History(Callback):
    """Records the epoch logs; ``fit`` returns it.

    ``history[key]`` is a list with one value per epoch for every key of the epoch logs,
    plus ``"learning_rate"`` (the optimizer's rate at the start of that epoch, unless a
    callback such as ``ReduceLROnPlateau`` already logged it) and ``"epoch_time"`` (seconds).

    Example:
        >>> history = model.fit(x, y, epochs=3)
        >>> history.history["loss"]
        [0.71, 0.43, 0.35]
        >>> history.plot("curves.png")
    """

    def __init__(self):
        super().__init__()
        self.history = {}
        self.epoch = []
        self._epoch_start = None

    def on_train_begin(self, logs=None):
        self.epoch = []

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch_start = time.perf_counter()
        self._epoch_lr = self._current_lr()

    def _current_lr(self):
        optimizer = getattr(self.model, "optimizer", None)
        try:
            lr = getattr(optimizer, "learning_rate", None)
        except Exception:  # noqa: BLE001 - a broken schedule must not stop training
            return None
        return _scalar(lr) if lr is not None else None

    def on_epoch_end(self, epoch, logs=None):
        logs = dict(logs or {})
        self.epoch.append(epoch)
        if "learning_rate" not in logs:
            lr = getattr(self, "_epoch_lr", None)
            if lr is None:
                lr = self._current_lr()
            if lr is not None:
                logs["learning_rate"] = lr
        if self._epoch_start is not None:
            logs["epoch_time"] = time.perf_counter() - self._epoch_start
        for key, value in logs.items():
            scalar = _scalar(value)
            self.history.setdefault(key, []).append(value if scalar is None else scalar)
        if self.model is not None:
            try:
                self.model.history = self
            except AttributeError:
                pass

    def plot(self, path=None, metrics=None):
        """Plot the training curves, one panel per metric with its ``val_`` counterpart.

        Args:
            path: file to save the figure to (png, pdf, svg, ...); None shows it.
            metrics: names to plot (default: every key except ``val_*``,
                ``learning_rate``, ``epoch_time`` and ``grad_norm/*``).

        Returns:
            The matplotlib Figure.

        Raises:
            ImportError: matplotlib is not installed (``pip install minnet[plot]``).
        """
        try:
            if path is not None:   # no pyplot: works without a display, leaves the backend alone
                from matplotlib.figure import Figure
                plt = None
            else:
                import matplotlib.pyplot as plt
        except ImportError:
            raise ImportError("History.plot needs matplotlib, which is not installed. Install it "
                              "with `pip install minnet[plot]` (or `pip install matplotlib`).") from None
        if not self.history:
            raise ValueError("Nothing to plot: the history is empty (train for at least one epoch).")
        if metrics is None:
            metrics = [k for k in self.history
                       if not k.startswith("val_") and k not in ("learning_rate", "epoch_time")
                       and not k.startswith("grad_norm/")]
            if not metrics:
                metrics = [k for k in self.history if k.startswith("val_")]
        elif isinstance(metrics, str):
            metrics = [metrics]
        unknown = [m for m in metrics if m not in self.history]
        if unknown:
            raise ValueError(f"Invalid value for argument `metrics`: {unknown} not in the history. "
                             f"Available: {sorted(self.history)}")
        figsize = (4.5 * len(metrics), 3.5)
        if plt is None:
            fig = Figure(figsize=figsize)
            axes = fig.subplots(1, len(metrics), squeeze=False)
        else:
            fig, axes = plt.subplots(1, len(metrics), figsize=figsize, squeeze=False)
        for ax, name in zip(axes[0], metrics):
            values = self.history[name]
            epochs = range(1, len(values) + 1)
            ax.plot(epochs, values, marker="o", label=name)
            if "val_" + name in self.history:
                val = self.history["val_" + name]
                ax.plot(range(1, len(val) + 1), val, marker="o", label="val_" + name)
            ax.set_xlabel("epoch")
            ax.set_title(name)
            ax.grid(alpha=0.3)
            ax.legend()
        fig.tight_layout()
        if plt is None:
            fig.savefig(path)
        else:
            plt.show()
        return fig


# ---- progress bar ----------------------------------------------------------------
def _format_time_per_step(seconds, unit="step"):
    if seconds >= 1 or seconds == 0:
        return f"{seconds:.0f}s/{unit}"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.0f}ms/{unit}"
    return f"{seconds * 1e6:.0f}us/{unit}"


def _format_eta(seconds):
    if seconds > 3600:
        return f"{int(seconds) // 3600}:{(int(seconds) % 3600) // 60:02d}:{int(seconds) % 60:02d}"
    if seconds > 60:
        return f"{int(seconds) // 60}:{int(seconds) % 60:02d}"
    return f"{seconds:.0f}s"


def _format_logs(logs):
    parts = []
    for key, value in logs.items():
        if key.startswith("grad_norm/") or key == "epoch_time":
            continue
        scalar = _scalar(value)
        if scalar is None:
            parts.append(f" - {key}: {value}")
        elif abs(scalar) > 1e-3 or scalar == 0 or not math.isfinite(scalar):
            parts.append(f" - {key}: {scalar:.4f}")
        else:
            parts.append(f" - {key}: {scalar:.4e}")
    return "".join(parts)


class ProgbarLogger(Callback):
    """Prints progress to ``sys.stdout``: a live bar (verbose 1) or one line per epoch (verbose 2).

    verbose 1, redrawn in place with ``\\r`` while an epoch runs, then kept::

        12/50 [=====>........................] - ETA: 3s - loss: 0.4321 - accuracy: 0.8750
        50/50 [==============================] - 1s 20ms/step - loss: 0.3120 - val_loss: 0.3301

    verbose 2::

        Epoch 1/5
        50/50 - 1s - 20ms/step - loss: 0.3120 - val_loss: 0.3301

    ``Epoch i/N`` is printed when there is more than one epoch.  The values shown are
    the logs as given (running averages).  ``verbose`` comes from ``set_params``
    ("auto" is resolved by ``resolve_verbose``).

    Args:
        interval: minimum seconds between two redraws of the live bar.
        width: number of characters of the bar.
    """

    def __init__(self, interval=0.05, width=30):
        super().__init__()
        self.interval = float(interval)
        self.width = int(width)
        self.verbose = 1
        self.epochs = 1
        self.target = None
        self._in_fit = False
        self._reset()

    def _reset(self):
        self.seen = 0
        self._start = None
        self._last_update = None
        self._last_width = 0

    def set_params(self, params):
        super().set_params(params)
        self.verbose = resolve_verbose(params.get("verbose", 1))
        self.epochs = params.get("epochs", 1) or 1
        self.target = params.get("steps")

    def on_train_begin(self, logs=None):
        self._in_fit = True

    def on_train_end(self, logs=None):
        self._in_fit = False

    def on_epoch_begin(self, epoch, logs=None):
        self._reset()
        self._start = time.perf_counter()
        if self.verbose and self.epochs > 1:
            _print(f"Epoch {epoch + 1}/{self.epochs}")

    def on_train_batch_end(self, batch, logs=None):
        self._update(batch + 1, logs)

    def on_epoch_end(self, epoch, logs=None):
        self._finalize(logs)

    def on_test_begin(self, logs=None):
        if not self._in_fit:
            self._reset()
            self._start = time.perf_counter()

    def on_test_batch_end(self, batch, logs=None):
        if not self._in_fit:
            self._update(batch + 1, logs)

    def on_test_end(self, logs=None):
        if not self._in_fit:
            self._finalize(logs)

    def on_predict_begin(self, logs=None):
        self._reset()
        self._start = time.perf_counter()

    def on_predict_batch_end(self, batch, logs=None):
        self._update(batch + 1, None)

    def on_predict_end(self, logs=None):
        self._finalize(None)

    def _count(self, current):
        if self.target is None:
            return f"{current}/Unknown"
        digits = len(str(self.target))
        return f"{current:{digits}d}/{self.target}"

    def _bar(self, current):
        if self.target is None or self.target <= 0:
            return ""
        done = int(self.width * min(current, self.target) / self.target)
        bar = ""
        if done > 0:
            bar = "=" * (done - 1) + (">" if current < self.target else "=")
        return " [" + bar + "." * (self.width - done) + "]"

    def _write_live(self, line):
        # Pad with spaces so a shorter line fully covers the previous one.
        pad = max(0, self._last_width - len(line))
        sys.stdout.write("\r" + line + " " * pad)
        sys.stdout.flush()
        self._last_width = len(line)

    def _update(self, current, logs):
        self.seen = current
        if self.verbose != 1:
            return
        now = time.perf_counter()
        if self._start is None:
            self._start = now
        if (self._last_update is not None and now - self._last_update < self.interval
                and (self.target is None or current < self.target)):
            return
        self._last_update = now
        line = self._count(current) + self._bar(current)
        if self.target is not None and current < self.target:
            per_step = (now - self._start) / current
            line += f" - ETA: {_format_eta(per_step * (self.target - current))}"
        line += _format_logs(logs or {})
        self._write_live(line)

    def _finalize(self, logs):
        if not self.verbose:
            return
        now = time.perf_counter()
        elapsed = now - (self._start if self._start is not None else now)
        if self.target is None:
            self.target = self.seen
        steps = max(self.seen, 1)
        per_step = _format_time_per_step(elapsed / steps)
        if self.verbose == 1:
            line = (f"{self._count(self.seen)}{self._bar(self.seen)} - {elapsed:.0f}s {per_step}"
                    f"{_format_logs(logs or {})}")
            self._write_live(line)
            sys.stdout.write("\n")
            sys.stdout.flush()
        else:
            _print(f"{self._count(self.seen)} - {elapsed:.0f}s - {per_step}{_format_logs(logs or {})}")
        self._last_width = 0
        self.target = self.params.get("steps")


# ---- EarlyStopping ---------------------------------------------------------------
class EarlyStopping(Callback):
    """Stop training when a monitored quantity has stopped improving (Keras 3 semantics).

    An epoch improves when ``current - min_delta`` beats the best so far (``min`` mode:
    ``current < best - min_delta``).  Training stops once ``patience`` epochs in a row
    have not improved (not before epoch 1).  With ``restore_best_weights`` the weights
    of the best epoch are put back at the end of training, whether it stopped early or
    ran all its epochs.

    Args:
        monitor: log key to watch ("val_loss", "val_accuracy", "loss", ...).
        min_delta: minimum change that counts as an improvement (absolute value used).
        patience: epochs without improvement before stopping (>= 0).
        verbose: 1 prints a message when stopping / restoring.
        mode: "min", "max" or "auto" (from the name: accuracies are maximised, losses
            and errors minimised).
        baseline: training stops unless the monitored value beats it within ``patience`` epochs.
        restore_best_weights: restore the weights of the best epoch at the end.
        start_from_epoch: epochs to wait before monitoring (warm-up).

    Example:
        >>> stop = EarlyStopping(monitor="val_loss", patience=3, restore_best_weights=True)
        >>> model.fit(x, y, epochs=100, validation_split=0.1, callbacks=[stop])
        >>> stop.stopped_epoch, stop.best_epoch
    """

    def __init__(self, monitor="val_loss", min_delta=0, patience=0, verbose=0, mode="auto", baseline=None,
                 restore_best_weights=False, start_from_epoch=0):
        super().__init__()
        if not isinstance(monitor, str):
            raise TypeError(f"Invalid value for argument `monitor`: expected a str. Received: {monitor!r}")
        self.monitor = monitor
        self.min_delta = abs(_check_real("min_delta", min_delta))
        self.patience = _check_non_negative_int("patience", patience)
        self.verbose = verbose
        self.mode = _check_mode(mode)
        self.baseline = None if baseline is None else _check_real("baseline", baseline)
        self.restore_best_weights = bool(restore_best_weights)
        self.start_from_epoch = _check_non_negative_int("start_from_epoch", start_from_epoch)
        self._maximize = _monitor_is_max(monitor, mode)
        self.wait = 0
        self.stopped_epoch = 0
        self.best = None
        self.best_epoch = 0
        self.best_weights = None

    def on_train_begin(self, logs=None):
        self.wait = 0
        self.stopped_epoch = 0
        self.best = None
        self.best_epoch = 0
        self.best_weights = None

    def _is_improvement(self, current, reference):
        if reference is None:
            return True
        if self._maximize:
            return current - self.min_delta > reference
        return current + self.min_delta < reference

    def on_epoch_end(self, epoch, logs=None):
        current = _scalar((logs or {}).get(self.monitor))
        if current is None:
            warnings.warn(f"EarlyStopping is conditioned on metric `{self.monitor}` which is not "
                          f"available. Available metrics are: {','.join(logs or {})}", stacklevel=2)
            return
        if epoch < self.start_from_epoch:
            return
        if self.restore_best_weights and self.best_weights is None:
            self.best_weights = self.model.get_weights()
            self.best_epoch = epoch
        self.wait += 1
        if self._is_improvement(current, self.best):
            self.best = current
            self.best_epoch = epoch
            if self.restore_best_weights:
                self.best_weights = self.model.get_weights()
            # Only a value that also beats the baseline restarts the patience count; an
            # improvement still short of the baseline counts towards `patience` (Keras 3
            # returns here and so never stops while such values keep improving).
            if self.baseline is None or self._is_improvement(current, self.baseline):
                self.wait = 0
                return
        if self.wait >= self.patience and epoch > 0:
            self.stopped_epoch = epoch
            self.model.stop_training = True

    def on_train_end(self, logs=None):
        if self.stopped_epoch > 0 and self.verbose:
            _print(f"Epoch {self.stopped_epoch + 1}: early stopping")
        if self.restore_best_weights and self.best_weights is not None:
            if self.verbose:
                _print(f"Restoring model weights from the end of the best epoch: {self.best_epoch + 1}.")
            self.model.set_weights(self.best_weights)

    def __repr__(self):
        return (f"EarlyStopping(monitor={self.monitor!r}, patience={self.patience}, "
                f"min_delta={self.min_delta}, mode={self.mode!r})")


# ---- ModelCheckpoint -------------------------------------------------------------
class ModelCheckpoint(Callback):
    """Save the model (or its weights) during training.

    ``filepath`` may contain ``str.format`` fields filled from the epoch (1-based) and the
    logs: ``"ckpt/model-{epoch:02d}-{val_loss:.2f}.minnet"``.

    Args:
        filepath: path, possibly with ``{epoch}``, ``{batch}`` and log-key fields.
        monitor: log key for ``save_best_only``.
        verbose: 1 prints a message at every save.
        save_best_only: only save when ``monitor`` improves on the best so far.
        save_weights_only: call ``model.save_weights(path)`` instead of ``model.save(path)``.
        mode: "min", "max" or "auto".
        save_freq: "epoch", or an int: save every that many training batches.
        initial_value_threshold: best value to beat at the start (``save_best_only``).

    Example:
        >>> ckpt = ModelCheckpoint("best.minnet", monitor="val_accuracy", save_best_only=True)
    """

    def __init__(self, filepath, monitor="val_loss", verbose=0, save_best_only=False,
                 save_weights_only=False, mode="auto", save_freq="epoch", initial_value_threshold=None):
        super().__init__()
        if not isinstance(filepath, (str, os.PathLike)):
            raise TypeError("Invalid value for argument `filepath`: expected a str or path. "
                            f"Received: {filepath!r}")
        self.filepath = os.fspath(filepath)
        self.monitor = monitor
        self.verbose = verbose
        self.save_best_only = bool(save_best_only)
        self.save_weights_only = bool(save_weights_only)
        self.mode = _check_mode(mode)
        if save_freq != "epoch" and (isinstance(save_freq, bool) or not isinstance(save_freq, numbers.Integral)
                                     or save_freq < 1):
            raise ValueError("Invalid value for argument `save_freq`: expected 'epoch' or a positive "
                             f"int. Received: save_freq={save_freq!r}")
        self.save_freq = save_freq
        self._maximize = _monitor_is_max(monitor, mode) if save_best_only else mode == "max"
        self.initial_value_threshold = initial_value_threshold
        self.best = None
        self._current_epoch = 0
        self._batches_since_save = 0
        self._last_batch = -1
        self.on_train_begin()

    def on_train_begin(self, logs=None):
        if self.initial_value_threshold is not None:
            self.best = float(self.initial_value_threshold)
        else:
            self.best = -math.inf if self._maximize else math.inf

    def on_epoch_begin(self, epoch, logs=None):
        self._current_epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        if self.save_freq == "epoch":
            return
        added = batch + 1 if batch <= self._last_batch else batch - self._last_batch  # new epoch restarts at 0
        self._last_batch = batch
        self._batches_since_save += added
        if self._batches_since_save >= self.save_freq:
            self._batches_since_save = 0
            self._save(self._current_epoch, batch, logs)

    def on_epoch_end(self, epoch, logs=None):
        if self.save_freq == "epoch":
            self._save(epoch, None, logs)

    def _file_path(self, epoch, batch, logs):
        fields = {k: v for k, v in (logs or {}).items() if isinstance(k, str)}
        fields = {k: (_scalar(v) if _scalar(v) is not None else v) for k, v in fields.items()}
        fields["epoch"] = epoch + 1
        if batch is not None:
            fields.setdefault("batch", batch + 1)
        try:
            return self.filepath.format(**fields)
        except (KeyError, IndexError, ValueError) as e:
            raise KeyError(f"Failed to format this callback filepath: {self.filepath!r}. Reason: "
                           f"{type(e).__name__}: {e}. Available fields: {sorted(fields)}") from None

    def _save(self, epoch, batch, logs):
        logs = logs or {}
        path = self._file_path(epoch, batch, logs)
        if self.save_best_only:
            current = _scalar(logs.get(self.monitor))
            if current is None:
                warnings.warn(f"Can save best model only with {self.monitor} available, skipping.",
                              stacklevel=2)
                return
            better = current > self.best if self._maximize else current < self.best
            if not better:
                if self.verbose:
                    _print(f"\nEpoch {epoch + 1}: {self.monitor} did not improve from {self.best:.5f}")
                return
            if self.verbose:
                _print(f"\nEpoch {epoch + 1}: {self.monitor} improved from {self.best:.5f} to "
                       f"{current:.5f}, saving model to {path}")
            self.best = current
        elif self.verbose:
            _print(f"\nEpoch {epoch + 1}: saving model to {path}")
        directory = os.path.dirname(path)
        if directory:
            os.makedirs(directory, exist_ok=True)
        if self.save_weights_only:
            self.model.save_weights(path)
        else:
            self.model.save(path)

    def __repr__(self):
        return (f"ModelCheckpoint(filepath={self.filepath!r}, monitor={self.monitor!r}, "
                f"save_best_only={self.save_best_only})")


# ---- learning-rate callbacks -----------------------------------------------------
class LearningRateScheduler(Callback):
    """Set the learning rate at the start of every epoch from ``schedule(epoch, lr)``.

    Args:
        schedule: function ``(epoch, lr) -> new lr`` (epoch from 0), or ``(epoch) -> lr``.
        verbose: 1 prints the new rate each epoch.

    Example:
        >>> LearningRateScheduler(lambda epoch, lr: lr if epoch < 10 else lr * 0.9)
    """

    def __init__(self, schedule, verbose=0):
        super().__init__()
        if not callable(schedule):
            raise TypeError("Invalid value for argument `schedule`: expected a function "
                            f"(epoch, lr) -> lr. Received: {schedule!r}")
        self.schedule = schedule
        self.verbose = verbose
        self._n_args = 2
        try:
            params = inspect.signature(schedule).parameters.values()
            positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
            if len(positional) == 1 and not any(p.kind == p.VAR_POSITIONAL for p in params):
                self._n_args = 1
        except (TypeError, ValueError):  # builtins without a signature
            pass

    def on_epoch_begin(self, epoch, logs=None):
        optimizer = self.model.optimizer
        if self._n_args == 2:
            lr = self.schedule(epoch, float(optimizer.learning_rate))
        else:
            lr = self.schedule(epoch)
        value = _scalar(lr)
        if value is None or isinstance(lr, bool) or not math.isfinite(value):
            raise ValueError(f"The output of the `schedule` function should be a float. Got: {lr!r}")
        optimizer.learning_rate = value
        if self.verbose:
            _print(f"\nEpoch {epoch + 1}: LearningRateScheduler setting learning rate to {value}.")

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["learning_rate"] = float(self.model.optimizer.learning_rate)


class ReduceLROnPlateau(Callback):
    """Multiply the learning rate by ``factor`` when ``monitor`` has stopped improving.

    Args:
        monitor: log key to watch.
        factor: new_lr = lr * factor, in [0, 1).
        patience: epochs without improvement before reducing (>= 0).
        verbose: 1 prints a message at every reduction.
        mode: "min", "max" or "auto".
        min_delta: threshold for an improvement.
        cooldown: epochs to wait after a reduction before counting again.
        min_lr: lower bound on the learning rate.

    Example:
        >>> ReduceLROnPlateau(monitor="val_loss", factor=0.5, patience=2, min_lr=1e-5)
    """

    def __init__(self, monitor="val_loss", factor=0.1, patience=10, verbose=0, mode="auto", min_delta=1e-4,
                 cooldown=0, min_lr=0.0):
        super().__init__()
        self.monitor = monitor
        factor = _check_real("factor", factor)
        if not 0 <= factor < 1:
            raise ValueError("Invalid value for argument `factor`: ReduceLROnPlateau expects a factor in "
                             f"[0, 1). Received: factor={factor}")
        self.factor = factor
        self.patience = _check_non_negative_int("patience", patience)
        self.verbose = verbose
        self.mode = _check_mode(mode)
        self.min_delta = _check_real("min_delta", min_delta)
        self.cooldown = _check_non_negative_int("cooldown", cooldown)
        self.min_lr = _check_real("min_lr", min_lr)
        if self.min_lr < 0:
            raise ValueError(f"Invalid value for argument `min_lr`: expected >= 0. Received: min_lr={min_lr}")
        # Keras: "auto" maximises only monitors whose name contains "acc".
        self._maximize = mode == "max" or (mode == "auto" and "acc" in monitor)
        self._reset()

    def _reset(self):
        self.best = -math.inf if self._maximize else math.inf
        self.cooldown_counter = 0
        self.wait = 0

    def on_train_begin(self, logs=None):
        self._reset()

    def _improved(self, current):
        if self._maximize:
            return current > self.best + self.min_delta
        return current < self.best - self.min_delta

    def on_epoch_end(self, epoch, logs=None):
        logs = logs if logs is not None else {}
        optimizer = self.model.optimizer
        logs["learning_rate"] = float(optimizer.learning_rate)
        current = _scalar(logs.get(self.monitor))
        if current is None:
            warnings.warn(f"Learning rate reduction is conditioned on metric `{self.monitor}` which is "
                          f"not available. Available metrics are: {','.join(logs)}", stacklevel=2)
            return
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.wait = 0
        if self._improved(current):
            self.best = current
            self.wait = 0
        elif self.cooldown_counter <= 0:
            self.wait += 1
            if self.wait >= self.patience:
                old_lr = float(optimizer.learning_rate)
                if old_lr > np.float32(self.min_lr):
                    new_lr = max(old_lr * self.factor, self.min_lr)
                    optimizer.learning_rate = new_lr
                    if self.verbose:
                        _print(f"\nEpoch {epoch + 1}: ReduceLROnPlateau reducing learning rate to {new_lr}.")
                    self.cooldown_counter = self.cooldown
                    self.wait = 0


# ---- logging and safety ----------------------------------------------------------
class CSVLogger(Callback):
    """Write one CSV row per epoch: ``epoch`` then the log keys (sorted, fixed by epoch 0).

    Args:
        filename: CSV file path.
        separator: field separator.
        append: append to an existing file (the header is written only if it is empty).

    Example:
        >>> model.fit(x, y, epochs=10, callbacks=[CSVLogger("training.csv")])
    """

    def __init__(self, filename, separator=",", append=False):
        super().__init__()
        if not isinstance(filename, (str, os.PathLike)):
            raise TypeError(f"Invalid value for argument `filename`: expected a str or path. Received: {filename!r}")
        if not isinstance(separator, str) or len(separator) != 1:
            raise ValueError("Invalid value for argument `separator`: expected a one-character str. "
                             f"Received: separator={separator!r}")
        self.filename = os.fspath(filename)
        self.sep = separator
        self.append = bool(append)
        self.keys = None
        self.writer = None
        self.csv_file = None
        self._write_header = True

    def on_train_begin(self, logs=None):
        self._write_header = True
        if self.append and os.path.exists(self.filename):
            with open(self.filename) as f:
                self._write_header = not f.readline()
        self.csv_file = open(self.filename, "a" if self.append else "w", newline="")
        self.keys = None
        self.writer = None

    @staticmethod
    def _value(value):
        scalar = _scalar(value)
        if scalar is not None:
            return scalar
        if isinstance(value, str):
            return value
        if isinstance(value, (list, tuple, np.ndarray)):
            return "[" + ", ".join(map(str, np.ravel(value))) + "]"
        return value

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        if self.csv_file is None:  # used outside fit: open lazily
            self.on_train_begin()
        if self.keys is None:
            self.keys = sorted(logs)
        if self.writer is None:
            self.writer = csv.writer(self.csv_file, delimiter=self.sep)
            if self._write_header:
                self.writer.writerow(["epoch"] + self.keys)
        self.writer.writerow([epoch] + [self._value(logs.get(k, "NA")) for k in self.keys])
        self.csv_file.flush()

    def on_train_end(self, logs=None):
        if self.csv_file is not None:
            self.csv_file.close()
        self.csv_file = None
        self.writer = None


class TerminateOnNaN(Callback):
    """Stop training at the first batch whose loss is NaN or infinite.

    Example:
        >>> model.fit(x, y, callbacks=[TerminateOnNaN()])
    """

    def on_train_batch_end(self, batch, logs=None):
        loss = _scalar((logs or {}).get("loss"))
        if loss is not None and not math.isfinite(loss):
            _print(f"Batch {batch}: Invalid loss, terminating training")
            self.model.stop_training = True


class GradientMonitor(Callback):
    """Log each layer's gradient L2 norm, averaged over the epoch's batches.

    After every training batch it reads ``p.grad`` of each layer's ``parameters()``
    (the model leaves the gradients in place after ``optimizer.step()``) and computes
    ``sqrt(sum of squares over the layer's parameter gradients)``.  At the end of the
    epoch the batch average goes into the logs (and so into ``History``) as
    ``"grad_norm/<layer name>"``.  Vanishing gradients show as norms near 0 in the
    first layers, exploding ones as large norms.

    Example:
        >>> history = model.fit(x, y, epochs=5, callbacks=[GradientMonitor()])
        >>> history.history["grad_norm/dense"]
    """

    def __init__(self):
        super().__init__()
        self._sums = {}
        self._counts = {}

    def _layers(self):
        layers = getattr(self.model, "layers", None)
        return list(layers) if layers is not None else []

    def on_epoch_begin(self, epoch, logs=None):
        self._sums = {}
        self._counts = {}

    def on_train_batch_end(self, batch, logs=None):
        for index, layer in enumerate(self._layers()):
            params = layer.parameters() if hasattr(layer, "parameters") else []
            grads = [np.asarray(getattr(p.grad, "data", p.grad)) for p in params if p.grad is not None]
            if not grads:
                continue
            total = 0.0
            for g in grads:
                flat = g.reshape(-1)
                total += float(np.dot(flat, flat))
            name = getattr(layer, "name", None) or f"layer_{index}"
            self._sums[name] = self._sums.get(name, 0.0) + math.sqrt(total)
            self._counts[name] = self._counts.get(name, 0) + 1

    def on_epoch_end(self, epoch, logs=None):
        if logs is None:
            return
        for name, total in self._sums.items():
            logs[f"grad_norm/{name}"] = total / self._counts[name]
