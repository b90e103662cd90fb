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
from minnet.callbacks._common import resolve_verbose
from minnet.callbacks.callback import Callback
from minnet.callbacks.callback_list import CallbackList
from minnet.callbacks.checkpoints import BackupAndRestore, BackupError, EarlyStopping, ModelCheckpoint
from minnet.callbacks.ema import SwapEMAWeights
from minnet.callbacks.monitors import GradientMonitor, LambdaCallback, TerminateOnNaN
from minnet.callbacks.progress import CSVLogger, History, ProgbarLogger
from minnet.callbacks.remote_monitor import RemoteMonitor
from minnet.callbacks.schedules import LearningRateScheduler, ReduceLROnPlateau
from minnet.callbacks.tensorboard import TensorBoard

__all__ = [
    "RemoteMonitor",
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
    "LambdaCallback",
    "BackupAndRestore",
    "BackupError",
    "resolve_verbose",
    "SwapEMAWeights",
    "TensorBoard",
]
