"""Early stopping and checkpoints: ``EarlyStopping``, ``ModelCheckpoint``, ``BackupAndRestore``."""
import json
import math
import numbers
import os
import warnings

import numpy as np

from minnet import _random

from minnet.callbacks._common import (check_mode, check_non_negative_int, check_real, monitor_is_max,
                                      print_line, scalar_value)
from minnet.callbacks.callback import Callback

__all__ = ["EarlyStopping", "ModelCheckpoint", "BackupAndRestore"]


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
        self.min_delta = abs(check_real("min_delta", min_delta))
        self.patience = check_non_negative_int("patience", patience)
        self.verbose = verbose
        self.mode = check_mode(mode)
        self.baseline = None if baseline is None else check_real("baseline", baseline)
        self.restore_best_weights = bool(restore_best_weights)
        self.start_from_epoch = check_non_negative_int("start_from_epoch", start_from_epoch)
        self._maximize = monitor_is_max(monitor, mode)
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
        current = scalar_value((logs or {}).get(self.monitor))
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
            print_line(f"Epoch {self.stopped_epoch + 1}: early stopping")
        if self.restore_best_weights and self.best_weights is not None:
            if self.verbose:
                print_line(f"Restoring model weights from the end of the best epoch: {self.best_epoch + 1}.")
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
        self.mode = check_mode(mode)
        if save_freq != "epoch" and (isinstance(save_freq, bool) or not isinstance(save_freq, numbers.Integral)
                                     or save_freq < 1):
            raise ValueError("Invalid value for argument `save_freq`: expected 'epoch' or a positive "
                             f"int. Received: save_freq={save_freq!r}")
        self.save_freq = save_freq
        self._maximize = monitor_is_max(monitor, mode) if save_best_only else mode == "max"
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
        fields = {k: (scalar_value(v) if scalar_value(v) is not None else v) for k, v in fields.items()}
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
            current = scalar_value(logs.get(self.monitor))
            if current is None:
                warnings.warn(f"Can save best model only with {self.monitor} available, skipping.",
                              stacklevel=2)
                return
            better = current > self.best if self._maximize else current < self.best
            if not better:
                if self.verbose:
                    print_line(f"\nEpoch {epoch + 1}: {self.monitor} did not improve from {self.best:.5f}")
                return
            if self.verbose:
                print_line(f"\nEpoch {epoch + 1}: {self.monitor} improved from {self.best:.5f} to "
                       f"{current:.5f}, saving model to {path}")
            self.best = current
        elif self.verbose:
            print_line(f"\nEpoch {epoch + 1}: saving model to {path}")
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


def _atomic_savez(path, arrays):
    temporary = path + ".tmp.npz"
    np.savez(temporary, **arrays)
    os.replace(temporary, path)


class BackupAndRestore(Callback):
    """Resume a killed ``fit`` exactly where its last completed epoch left it (Keras 3).

    At the end of every epoch (or every ``save_freq`` batches) it writes, atomically, into
    ``backup_dir``: the weights, the optimizer state (step counter, moments), the next
    epoch and minnet's random state (dropout masks, shuffling with ``seed=None``). When
    ``fit`` starts with a backup present it restores all four, and training continues from
    that epoch as if it had never stopped: the same seed gives the same final weights.
    The backup is deleted when training ends normally (``delete_checkpoint=True``).

    Args:
        backup_dir: a directory for the backup files (created if missing).
        save_freq: ``"epoch"`` or an int number of batches between backups.
        delete_checkpoint: remove the backup after a completed ``fit``.

    Example:
        >>> model.fit(x, y, epochs=50, callbacks=[BackupAndRestore("backup")])   # rerun after a crash
    """

    def __init__(self, backup_dir, save_freq="epoch", delete_checkpoint=True):
        super().__init__()
        if not isinstance(backup_dir, (str, os.PathLike)) or not os.fspath(backup_dir):
            raise TypeError(f"Invalid value for argument `backup_dir`: expected a directory path. "
                            f"Received: backup_dir={backup_dir!r}")
        if save_freq != "epoch" and (isinstance(save_freq, bool) or not isinstance(save_freq, numbers.Integral)
                                     or save_freq < 1):
            raise ValueError(f"Invalid value for argument `save_freq`: expected 'epoch' or an int >= 1. "
                             f"Received: save_freq={save_freq!r}")
        self.backup_dir = os.fspath(backup_dir)
        self.save_freq = save_freq
        self.delete_checkpoint = bool(delete_checkpoint)
        self._epoch = 0
        self._batches = 0
        self._weights_path = os.path.join(self.backup_dir, "weights.npz")
        self._optimizer_path = os.path.join(self.backup_dir, "optimizer.npz")
        self._meta_path = os.path.join(self.backup_dir, "training_metadata.json")

    def on_train_begin(self, logs=None):
        if not os.path.exists(self._meta_path):
            return
        with open(self._meta_path, encoding="utf-8") as file:
            meta = json.load(file)
        with np.load(self._weights_path, allow_pickle=False) as archive:
            self.model.set_weights([archive[f"w{i:05d}"] for i in range(len(archive.files))])
        optimizer = getattr(self.model, "optimizer", None)
        if optimizer is not None and os.path.exists(self._optimizer_path):
            if not getattr(optimizer, "params", None):
                optimizer.set_parameters(self.model.parameters())
            with np.load(self._optimizer_path, allow_pickle=False) as archive:
                optimizer.load_state_dict({key: archive[key] for key in archive.files})
        _random.set_state(meta["random_state"])
        self._epoch = int(meta["epoch"])
        self.model.resume_epoch = self._epoch

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        if self.save_freq != "epoch":
            self._batches += 1
            if self._batches % self.save_freq == 0:
                self._backup(self._epoch)

    def on_epoch_end(self, epoch, logs=None):
        if self.save_freq == "epoch":
            self._backup(epoch + 1)

    def _backup(self, next_epoch):
        os.makedirs(self.backup_dir, exist_ok=True)
        _atomic_savez(self._weights_path, {f"w{i:05d}": w for i, w in enumerate(self.model.get_weights())})
        optimizer = getattr(self.model, "optimizer", None)
        if optimizer is not None and getattr(optimizer, "params", None):
            _atomic_savez(self._optimizer_path, optimizer.state_dict())
        temporary = self._meta_path + ".tmp"
        with open(temporary, "w", encoding="utf-8") as file:
            json.dump({"epoch": next_epoch, "random_state": _random.get_state()}, file)
        os.replace(temporary, self._meta_path)

    def on_train_end(self, logs=None):
        if self.delete_checkpoint:
            for path in (self._meta_path, self._weights_path, self._optimizer_path):
                if os.path.exists(path):
                    os.remove(path)

