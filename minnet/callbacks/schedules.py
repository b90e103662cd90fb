"""Learning-rate schedules driven by epochs or by a monitored value."""
import inspect
import math
import warnings

import numpy as np

from minnet.callbacks._common import (check_mode, check_non_negative_int, check_real,
                                      print_line, scalar_value)
from minnet.callbacks.callback import Callback

__all__ = ["LearningRateScheduler", "ReduceLROnPlateau"]


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
        value = scalar_value(lr)
        if value is None or isinstance(lr, bool) or not math.isfinite(value):
            raise ValueError(f"The output of the `schedule` function should be a float. Got: {lr!r}")
        optimizer.learning_rate = value
        if self.verbose:
            print_line(f"\nEpoch {epoch + 1}: LearningRateScheduler setting learning rate to {value}.")

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
        factor = check_real("factor", factor)
        if not 0 <= factor < 1:
            raise ValueError("Invalid value for argument `factor`: ReduceLROnPlateau expects a factor in "
                             f"[0, 1). Received: factor={factor}")
        self.factor = factor
        self.patience = check_non_negative_int("patience", patience)
        self.verbose = verbose
        self.mode = check_mode(mode)
        self.min_delta = check_real("min_delta", min_delta)
        self.cooldown = check_non_negative_int("cooldown", cooldown)
        self.min_lr = check_real("min_lr", min_lr)
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
        current = scalar_value(logs.get(self.monitor))
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
                        print_line(f"\nEpoch {epoch + 1}: ReduceLROnPlateau reducing learning rate to {new_lr}.")
                    self.cooldown_counter = self.cooldown
                    self.wait = 0
