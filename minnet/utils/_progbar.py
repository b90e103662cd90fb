"""``Progbar``: Keras's text progress bar for custom loops."""
import math
import sys
import time

import numpy as np

__all__ = ["Progbar"]


class Progbar:
    """A progress bar with running averages of values (Keras's ``keras.utils.Progbar``).

    Args:
        target: the total number of steps, or None when unknown.
        width: the bar's width in characters.
        verbose: 0 (silent), 1 (a bar redrawn in place) or 2 (one line when done).
        interval: the least seconds between two redraws.
        stateful_metrics: names whose values are shown as given, not averaged.
        unit_name: the word after the step counts ("step").

    Example:
        >>> bar = mn.utils.Progbar(100)
        >>> for step in range(100):
        ...     bar.update(step + 1, values=[("loss", 0.5)])
    """

    def __init__(self, target, width=20, verbose=1, interval=0.05, stateful_metrics=None,
                 unit_name="step"):
        self.target = target
        self.width = int(width)
        self.verbose = verbose
        self.interval = float(interval)
        self.unit_name = unit_name
        self.stateful_metrics = set(stateful_metrics or ())
        self._values = {}          # name -> [weighted sum, weight] or the stateful value
        self._names = []
        self._seen_so_far = 0
        self._start = time.time()
        self._last_update = 0.0
        self._line_length = 0

    def _record(self, current, values):
        for name, value in values or []:
            if name not in self._names:
                self._names.append(name)
            if name in self.stateful_metrics:
                self._values[name] = value
                continue
            steps = max(current - self._seen_so_far, 1)
            total, weight = self._values.get(name, [0.0, 0])
            self._values[name] = [total + float(np.mean(value)) * steps, weight + steps]
        self._seen_so_far = current

    def _value(self, name):
        value = self._values[name]
        if name in self.stateful_metrics:
            return float(np.mean(value))
        return value[0] / max(value[1], 1)

    def _text(self, current, finalize):
        parts = []
        if self.target is not None:
            digits = int(math.log10(max(self.target, 1))) + 1
            done = int(self.width * current / self.target) if self.target else self.width
            bar = "=" * max(done - 1, 0) + (">" if done < self.width else "=") if done else ""
            parts.append(f"{current:{digits}d}/{self.target} [{bar:.<{self.width}}]")
        else:
            parts.append(f"{current:7d}/Unknown")
        elapsed = time.time() - self._start
        per_unit = elapsed / current if current else 0.0
        if finalize:
            parts.append(f"{elapsed:.0f}s {per_unit * 1e3:.0f}ms/{self.unit_name}")
        elif self.target is not None and current:
            parts.append(f"ETA: {per_unit * (self.target - current):.0f}s")
        for name in self._names:
            value = self._value(name)
            parts.append(f"{name}: {value:.4f}" if abs(value) > 1e-3 else f"{name}: {value:.4e}")
        return " - ".join(parts)

    def update(self, current, values=None, finalize=None):
        """Move to step ``current``; ``values`` is a list of ``(name, value)`` pairs."""
        if finalize is None:
            finalize = self.target is not None and current >= self.target
        self._record(current, values)
        if self.verbose == 0:
            return
        now = time.time()
        if not finalize and now - self._last_update < self.interval:
            return
        self._last_update = now
        if self.verbose == 1:
            text = self._text(current, finalize)
            padding = " " * max(self._line_length - len(text), 0)
            sys.stdout.write("\r" + text + padding + ("\n" if finalize else ""))
            self._line_length = len(text)
            sys.stdout.flush()
        elif finalize:
            sys.stdout.write(self._text(current, True) + "\n")
            sys.stdout.flush()

    def add(self, n, values=None):
        """Advance by ``n`` steps."""
        self.update(self._seen_so_far + n, values)
