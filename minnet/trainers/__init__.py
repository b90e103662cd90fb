"""The training loop for every model kind: compile / fit / evaluate / predict / ``*_on_batch``.

``Trainer`` (trainer.py) is the mixin ``minnet.models.Model`` inherits; data sources are
turned into batches by ``data_adapters``, walked per epoch by ``epoch_iterator`` (with an
optional prefetch thread), and ``compile_utils`` resolves per-output losses and metrics.
"""
from minnet.trainers.data_adapters import pack_x_y_sample_weight, unpack_x_y_sample_weight
from minnet.trainers.trainer import NotCompiledError, Trainer

__all__ = ["Trainer", "NotCompiledError", "unpack_x_y_sample_weight", "pack_x_y_sample_weight"]
