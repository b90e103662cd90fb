"""``TensorBoard``: Keras's callback, writing TensorBoard event files without TensorFlow.

The folder layout, tags and steps are Keras 3's::

    log_dir/train/events.out.tfevents...        epoch_loss, epoch_accuracy, epoch_learning_rate
                                                (step = epoch), batch_loss ... (step = global
                                                batch, when update_freq is "batch" or an int),
                                                <layer>/<weight>/histogram (step = epoch)
    log_dir/validation/events.out.tfevents...   epoch_loss, epoch_accuracy (from val_*, step =
                                                epoch), evaluation_loss_vs_iterations (step =
                                                optimizer iterations)

The records are framed and encoded by ``minnet.callbacks._event_file`` (TFRecord with
masked CRC-32C, protobuf ``Event``/``Summary``), so neither TensorFlow nor the
``tensorboard`` package is needed to write them; ``tensorboard --logdir logs`` reads them.
"""
import json
import numbers
import os
import time

import numpy as np

from minnet import _utils
from minnet.callbacks import _event_file
from minnet.callbacks._common import check_non_negative_int, scalar_value
from minnet.callbacks.callback import Callback

__all__ = ["TensorBoard"]


def _weight_images(tag, values):
    """Keras's ``_log_weight_as_image``: a weight as up to 3 images of uint8 pixels.

    minnet's Conv1D kernel ``(out, in, k)`` is Keras's ``(k, in, out)`` transposed, so both
    draw one ``(k, in)`` image per filter; a matrix is drawn with its shorter side first,
    whichever layout it is kept in (Dense: ``(units, in)`` here, ``(in, units)`` in Keras).
    """
    w = np.squeeze(values)
    if w.ndim == 1:
        images = w.reshape(1, w.shape[0], 1, 1)
    elif w.ndim == 2:
        if w.shape[0] > w.shape[1]:
            w = w.T
        images = w.reshape(1, w.shape[0], w.shape[1], 1)
    elif w.ndim == 3:
        images = w.transpose(0, 2, 1)[..., None]
    else:
        return []
    pixels = (np.clip(images, 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)   # convert_image_dtype
    if len(pixels) == 1:
        return [_event_file.image_summary(tag, pixels[0])]
    return [_event_file.image_summary(f"{tag}/{i}", p) for i, p in enumerate(pixels[:3])]


class TensorBoard(Callback):
    """Log scalars (and optionally weight histograms) for TensorBoard, as Keras's callback does.

    Args:
        log_dir: folder for the logs; the run writes ``log_dir/train`` and ``log_dir/validation``.
        histogram_freq: every how many epochs to write each weight's histogram (0: never).
        write_graph: write the model's config (TensorBoard's Keras "conceptual graph").
        write_images: with ``histogram_freq``, also draw each weight as an image, as Keras
            does (a vector as a column, a matrix with its shorter side first, a Conv1D
            kernel as one (k, in) image per filter, up to 3; values clipped to [0, 1] as
            ``tf.summary.image`` does); 4-D kernels are not drawn.
        write_steps_per_second: also log ``batch_steps_per_second`` / ``epoch_steps_per_second``.
        update_freq: ``"epoch"`` (default), ``"batch"`` or an int ``n``: also write the batch
            logs (``batch_loss``, ...) every ``n`` training batches (step = global batch).
        profile_batch: must be 0 (profiling needs TensorFlow or JAX, as in Keras's torch backend).
        embeddings_freq: accepted; the embedding projector is not written (a warning says so).
        embeddings_metadata: accepted for Keras compatibility; unused.

    Example:
        >>> model.fit(x, y, epochs=5, validation_split=0.2,
        ...           callbacks=[callbacks.TensorBoard(log_dir="logs")])
        >>> # then, in a shell: tensorboard --logdir logs
    """

    chief_only = True          # data parallelism: rank 0 only

    def __init__(self, log_dir="logs", histogram_freq=0, write_graph=True, write_images=False,
                 write_steps_per_second=False, update_freq="epoch", profile_batch=0,
                 embeddings_freq=0, embeddings_metadata=None):
        super().__init__()
        if not isinstance(log_dir, (str, os.PathLike)):
            raise TypeError("Invalid value for argument `log_dir`: expected a str or path. "
                            f"Received: log_dir={log_dir!r}")
        self.log_dir = os.fspath(log_dir)
        self.histogram_freq = check_non_negative_int("histogram_freq", histogram_freq)
        self.write_graph = bool(write_graph)
        self.write_images = bool(write_images)
        self.write_steps_per_second = bool(write_steps_per_second)
        if update_freq == "batch":
            update_freq = 1
        if update_freq != "epoch" and (isinstance(update_freq, bool)
                                       or not isinstance(update_freq, numbers.Integral)
                                       or update_freq < 1):
            raise ValueError("Invalid value for argument `update_freq`: expected 'epoch', 'batch' "
                             f"or a positive int. Received: update_freq={update_freq!r}")
        self.update_freq = update_freq if update_freq == "epoch" else int(update_freq)
        if profile_batch not in (0, None, (0, 0), [0, 0]):
            raise ValueError("Profiling is not available in minnet (Keras offers it on its "
                             "TensorFlow and JAX backends only). Received: "
                             f"profile_batch={profile_batch!r} (must be 0)")
        self.embeddings_freq = check_non_negative_int("embeddings_freq", embeddings_freq)
        if self.embeddings_freq:
            # Training is unaffected, so a Keras script that asks for it still runs.
            _utils.warn(f"TensorBoard(embeddings_freq={embeddings_freq!r}): minnet does not "
                        "write the embedding projector; scalars and histograms are written.")
        self.embeddings_metadata = embeddings_metadata
        self._writers = {}
        self._global_train_batch = 0
        self._batch_start_time = 0.0
        self._epoch_start_time = 0.0
        self._epoch_start_iterations = 0

    # -- writers ---------------------------------------------------------------------------
    def _writer(self, which):
        if which not in self._writers:
            folder = "train" if which == "train" else "validation"
            self._writers[which] = _event_file.EventFileWriter(os.path.join(self.log_dir, folder))
        return self._writers[which]

    def _write_scalars(self, which, step, values):
        summaries = [_event_file.scalar_summary(tag, value) for tag, value in values.items()]
        if summaries:
            self._writer(which).write(step, summaries)

    def _close_writers(self):
        for writer in self._writers.values():
            writer.close()
        self._writers = {}

    @staticmethod
    def _scalars(logs, prefix):
        out = {}
        for name, value in (logs or {}).items():
            scalar = scalar_value(value)
            if scalar is not None:
                out[prefix + name] = scalar
        return out

    def _iterations(self):
        optimizer = getattr(self.model, "optimizer", None)
        return int(getattr(optimizer, "iterations", 0) or 0)

    # -- hooks -----------------------------------------------------------------------------
    def set_model(self, model):
        super().set_model(model)
        self._close_writers()
        if self.write_graph:
            self._write_model_config()

    def _write_model_config(self):
        to_json = getattr(self.model, "to_json", None)
        try:
            text = to_json() if to_json is not None else None
        except Exception:  # noqa: BLE001 - a model without a config is logged without a graph
            text = None
        if text is None:
            return
        json.loads(text)  # the graph plugin parses it: write only valid JSON
        value = _event_file.text_summary("keras", text, plugin_name="graph_keras_model")
        self._writer("train").write(0, [value])

    def on_train_begin(self, logs=None):
        self._global_train_batch = 0

    def on_train_end(self, logs=None):
        self._close_writers()

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch_start_time = time.time()
        self._epoch_start_iterations = self._iterations()

    def on_train_batch_begin(self, batch, logs=None):
        self._global_train_batch += 1
        self._batch_start_time = time.time()

    def _batch_due(self):
        return self.update_freq != "epoch" and self._global_train_batch % self.update_freq == 0

    def on_train_batch_end(self, batch, logs=None):
        if not self._batch_due():
            return
        values = self._scalars(logs, "batch_")
        if self.write_steps_per_second:
            elapsed = time.time() - self._batch_start_time
            values["batch_steps_per_second"] = 1.0 / elapsed if elapsed > 0 else 0.0
        self._write_scalars("train", self._global_train_batch, values)

    def on_test_end(self, logs=None):
        if getattr(self.model, "optimizer", None) is None:
            return
        values = {f"evaluation_{name}_vs_iterations": v
                  for name, v in self._scalars(logs, "").items()}
        self._write_scalars("validation", self._iterations(), values)

    def _learning_rate(self):
        optimizer = getattr(self.model, "optimizer", None)
        try:
            lr = getattr(optimizer, "learning_rate", None)
        except Exception:  # noqa: BLE001 - a broken schedule must not stop training
            return None
        return scalar_value(lr) if lr is not None else None

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        train = {k: v for k, v in logs.items() if not k.startswith("val_")}
        val = {k[4:]: v for k, v in logs.items() if k.startswith("val_")}
        train_values = self._scalars(train, "epoch_")
        lr = self._learning_rate()
        if lr is not None:
            train_values["epoch_learning_rate"] = lr
        if self.write_steps_per_second:
            elapsed = time.time() - self._epoch_start_time
            steps = self._iterations() - self._epoch_start_iterations
            train_values["epoch_steps_per_second"] = steps / elapsed if elapsed > 0 else 0.0
        self._write_scalars("train", epoch, train_values)
        self._write_scalars("validation", epoch, self._scalars(val, "epoch_"))
        if self.histogram_freq and epoch % self.histogram_freq == 0:
            self._write_histograms(epoch)

    def _write_histograms(self, epoch):
        summaries = []
        for layer in getattr(self.model, "layers", []):
            for index, weight in enumerate(layer.weights):
                # Keras's tag is the weight's path, "dense/kernel"; minnet's weight names are
                # paths already ("layer/weight"), a bare name gets its layer's in front.
                name = getattr(weight, "name", None) or f"weight_{index}"
                path = name if "/" in name else f"{layer.name}/{name}"
                values = np.asarray(getattr(weight, "data", weight))
                summaries.append(_event_file.histogram_summary(f"{path}/histogram", values))
                if self.write_images:
                    summaries.extend(_weight_images(f"{path}/image", values))
        if summaries:
            self._writer("train").write(epoch, summaries)

    def __repr__(self):
        return f"TensorBoard(log_dir={self.log_dir!r}, update_freq={self.update_freq!r})"
