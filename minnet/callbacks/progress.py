"""Progress and logging: ``History``, ``ProgbarLogger``, ``CSVLogger``."""
import csv
import math
import os
import sys
import time

import numpy as np

from minnet.callbacks._common import print_line, resolve_verbose, scalar_value
from minnet.callbacks.callback import Callback

__all__ = ["History", "ProgbarLogger", "CSVLogger"]


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
        return scalar_value(lr) if lr is not None else None

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
            scalar = scalar_value(value)
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
            The matplotlib Figure when it was saved to ``path``; None when it was shown
            (so that in Jupyter, where ``plt.show()`` already displays it, a cell ending in
            ``history.plot()`` shows the figure once, not a second time as the cell's value).

        Raises:
            ImportError: matplotlib is not installed (``pip install matplotlib``).
        """
        try:
            if path is not None:   # no pyplot: works without a display, leaves the backend alone
                from matplotlib.figure import Figure
                plt = None
            else:
                import matplotlib.pyplot as plt
        except ImportError:
            raise ImportError("History.plot needs matplotlib, which is not installed. Install it "
                              "with `pip install matplotlib`.") from None
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
            return fig
        plt.show()
        return None


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
        scalar = scalar_value(value)
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

    chief_only = True          # data parallelism: rank 0 only

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
            print_line(f"Epoch {epoch + 1}/{self.epochs}")

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
            print_line(f"{self._count(self.seen)} - {elapsed:.0f}s - {per_step}{_format_logs(logs or {})}")
        self._last_width = 0
        self.target = self.params.get("steps")


class CSVLogger(Callback):
    """Write one CSV row per epoch: ``epoch`` then the log keys (sorted, fixed by epoch 0).

    As in Keras, when epoch 0's logs hold no ``val_`` key, a ``val_`` column per key follows
    (filled with ``NA``), so the header does not change when validation starts later.

    Args:
        filename: CSV file path.
        separator: field separator.
        append: append to an existing file (the header is written only if it is empty).

    Example:
        >>> model.fit(x, y, epochs=10, callbacks=[CSVLogger("training.csv")])
    """

    chief_only = True          # data parallelism: rank 0 only

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
        scalar = scalar_value(value)
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
            # Keras's columns: without validation logs at epoch 0, the val_ columns are
            # still written (as "NA"), appended after the sorted training keys.
            if self.keys and not any(k.startswith("val_") for k in self.keys):
                self.keys.extend([f"val_{k}" for k in self.keys])
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
