"""Early stopping and checkpoints: ``EarlyStopping``, ``ModelCheckpoint``, ``BackupAndRestore``."""
import json
import math
import numbers
import os
import warnings
import zipfile
import zlib

import numpy as np

from minnet import _random, config

from minnet.callbacks._common import (check_mode, check_non_negative_int, check_real, monitor_is_max,
                                      print_line, scalar_value)
from minnet.callbacks.callback import Callback

__all__ = ["EarlyStopping", "ModelCheckpoint", "BackupAndRestore", "BackupError"]


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

    chief_only = True          # data parallelism: rank 0 only

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
    """Write ``arrays`` to ``path`` so that a crash leaves the old file or the new one whole:
    a temporary file beside it, flushed to disk, then ``os.replace``."""
    temporary = f"{path}.{os.getpid()}.tmp.npz"
    try:
        with open(temporary, "wb") as file:
            np.savez(file, **arrays)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.remove(temporary)
        raise


class BackupError(ValueError):
    """A ``BackupAndRestore`` file that cannot be restored exactly: the message names the file
    and what is wrong (a ValueError)."""


_BACKUP_NAME = "backup.npz"
_BACKUP_FORMAT = 1
_LEGACY_NAMES = ("training_metadata.json", "weights.npz", "optimizer.npz")
_READ_ERRORS = (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile, zlib.error, TypeError)


class BackupAndRestore(Callback):
    """Resume a killed ``fit`` exactly where its last completed epoch left it (Keras 3).

    At the end of every epoch (or every ``save_freq`` batches) it writes ``backup_dir/backup.npz``:
    the weights, the optimizer state (step counter, moments), the next epoch and minnet's
    random state (dropout masks, shuffling with ``seed=None``), all in one file that replaces
    the previous one atomically (written beside it, then ``os.replace``), so a kill at any
    moment leaves either the old backup or the new one, never a mix. When ``fit`` starts with
    a backup present it checks the whole file first (the epoch is an int in ``[0, epochs]``,
    the random state is one ``get_state`` wrote, the weights have the model's names, count,
    shapes and dtypes, the optimizer class and state fit) and only then restores all four;
    a file that fails a check raises ``BackupError`` (a ValueError) naming the file and what
    is wrong, and nothing is changed. Training continues from the stored epoch as if it had
    never stopped: the same seed gives the same final weights. The backup is deleted when
    training ends normally (``delete_checkpoint=True``).

    Args:
        backup_dir: a directory for the backup file (created if missing).
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
        self._path = os.path.join(self.backup_dir, _BACKUP_NAME)

    # ---- reading: check everything, then restore everything ---------------------------

    def _damaged(self, why):
        return BackupError(f"BackupAndRestore cannot resume from {self._path!r}: {why}. Delete the "
                           f"file to train from the start.")

    def _read(self):
        """``(metadata, weights, optimizer_state)`` from the file, every part checked."""
        try:
            with np.load(self._path, allow_pickle=False) as archive:
                names = list(archive.files)
                if "metadata" not in names:
                    raise self._damaged("it has no 'metadata' entry (not a minnet backup, or "
                                        "truncated)")
                arrays = {name: archive[name] for name in names}
        except BackupError:
            raise
        except _READ_ERRORS as error:
            raise self._damaged(f"the archive cannot be read ({type(error).__name__}: {error}); "
                                f"it is truncated or not a backup") from None
        raw = arrays.pop("metadata")
        try:
            if raw.dtype != np.uint8 or raw.ndim != 1:
                raise ValueError("not a byte string")
            meta = json.loads(raw.tobytes().decode("utf-8"))
        except (ValueError, UnicodeDecodeError) as error:
            raise self._damaged(f"its metadata is not JSON ({error})") from None
        if not isinstance(meta, dict):
            raise self._damaged(f"its metadata must be a JSON object. Received: {type(meta).__name__}")
        missing = [key for key in ("format", "epoch", "random_state", "n_weights", "optimizer")
                   if key not in meta]
        if missing:
            raise self._damaged(f"its metadata lacks {missing}")
        if meta["format"] != _BACKUP_FORMAT:
            raise self._damaged(f"format {meta['format']!r} is not this minnet's ({_BACKUP_FORMAT})")
        epoch, epochs = meta["epoch"], self.params.get("epochs")
        if isinstance(epoch, bool) or not isinstance(epoch, int) or epoch < 0 \
                or (isinstance(epochs, int) and epoch > epochs):
            bound = f"[0, {epochs}] (fit's epochs)" if isinstance(epochs, int) else ">= 0"
            raise self._damaged(f"the stored epoch must be an int in {bound}. Received: epoch={epoch!r}")
        problem = _random.state_problem(meta["random_state"])
        if problem is not None:
            raise self._damaged(f"the random state {problem}")
        n_weights = meta["n_weights"]
        if isinstance(n_weights, bool) or not isinstance(n_weights, int) or n_weights < 0:
            raise self._damaged(f"n_weights must be an int >= 0. Received: {n_weights!r}")
        weight_keys = [f"weight_{i:05d}" for i in range(n_weights)]
        optimizer_keys = {name for name in arrays if name.startswith("optimizer/")}
        foreign = sorted(set(arrays) - set(weight_keys) - optimizer_keys)
        absent = [key for key in weight_keys if key not in arrays]
        if foreign or absent:
            raise self._damaged(f"its entries do not match its metadata (missing: {absent}, "
                                f"unknown: {foreign})")
        weights = [arrays[key] for key in weight_keys]
        current = self.model.get_weights()
        if len(weights) != len(current):
            raise self._damaged(f"it holds {len(weights)} weights but the model has {len(current)} "
                                f"(a backup of another model, or a model not built before fit)")
        for i, (stored, own) in enumerate(zip(weights, current)):
            if stored.shape != own.shape or stored.dtype != own.dtype:
                raise self._damaged(f"weight {i} is {stored.dtype}{list(stored.shape)} but the model's "
                                    f"is {own.dtype}{list(own.shape)}")
        optimizer = getattr(self.model, "optimizer", None)
        stored_class = meta["optimizer"]
        if optimizer_keys and (optimizer is None or type(optimizer).__name__ != stored_class):
            raise self._damaged(f"its optimizer state is {stored_class!r}'s but the model's optimizer "
                                f"is {type(optimizer).__name__ if optimizer is not None else None!r}")
        state = {name[len("optimizer/"):]: arrays[name] for name in optimizer_keys}
        return meta, weights, state

    def on_train_begin(self, logs=None):
        legacy = [name for name in _LEGACY_NAMES if os.path.exists(os.path.join(self.backup_dir, name))]
        if not os.path.exists(self._path):
            if legacy:
                raise BackupError(f"BackupAndRestore found {legacy} in {self.backup_dir!r}: a backup in "
                                  f"three files by an older minnet, which cannot be checked as one "
                                  f"unit. Delete them to train from the start.")
            return
        meta, weights, state = self._read()
        optimizer = getattr(self.model, "optimizer", None)
        if state and optimizer is not None:
            if not getattr(optimizer, "params", None):
                optimizer.set_parameters(self.model.parameters())
            previous = optimizer.state_dict()
            try:
                optimizer.load_state_dict(state)
            except (ValueError, TypeError, KeyError, IndexError, OverflowError) as error:
                optimizer.load_state_dict(previous)
                raise self._damaged(f"its optimizer state does not fit "
                                    f"({type(error).__name__}: {error})") from None
        self.model.set_weights(weights)
        _random.set_state(meta["random_state"])
        self._epoch = meta["epoch"]
        self.model.resume_epoch = self._epoch

    # ---- writing: one file, switched atomically ----------------------------------------

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
        if not config.is_chief():        # data parallelism: rank 0 writes, every rank reads
            return
        os.makedirs(self.backup_dir, exist_ok=True)
        weights = self.model.get_weights()
        arrays = {f"weight_{i:05d}": w for i, w in enumerate(weights)}
        optimizer = getattr(self.model, "optimizer", None)
        optimizer_class = None
        if optimizer is not None and getattr(optimizer, "params", None):
            optimizer_class = type(optimizer).__name__
            arrays.update({f"optimizer/{key}": value for key, value in optimizer.state_dict().items()})
        meta = {"format": _BACKUP_FORMAT, "epoch": int(next_epoch), "random_state": _random.get_state(),
                "n_weights": len(weights), "optimizer": optimizer_class}
        arrays["metadata"] = np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8)
        _atomic_savez(self._path, arrays)

    def on_train_end(self, logs=None):
        if self.delete_checkpoint and config.is_chief() and os.path.exists(self._path):
            os.remove(self._path)
