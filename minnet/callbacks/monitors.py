"""Monitors: ``TerminateOnNaN``, ``GradientMonitor``, ``LambdaCallback``."""
import math

import numpy as np

from minnet.callbacks._common import print_line, scalar_value
from minnet.callbacks.callback import Callback

__all__ = ["TerminateOnNaN", "GradientMonitor", "LambdaCallback"]


class TerminateOnNaN(Callback):
    """Stop training at the first batch whose loss is NaN or infinite.

    ``fit`` sees this callback and, on that batch, runs the forward pass again layer by
    layer (with the weights from before the step) to name the first layer whose output
    turned non-finite; the message and ``model.nonfinite_layer`` carry it.

    Args:
        raise_error: False (default): stop after that batch (``model.stop_training``, the
            other callbacks' ``on_train_end`` run). True: raise ``RuntimeError`` at once
            (Keras's strict mode: no cleanup runs, backups stay as they were).

    Example:
        >>> model.fit(x, y, callbacks=[TerminateOnNaN()])
    """

    def __init__(self, raise_error=False):
        super().__init__()
        if not isinstance(raise_error, bool):
            raise TypeError(f"Invalid value for argument `raise_error`: expected a bool. "
                            f"Received: raise_error={raise_error!r}")
        self.raise_error = raise_error

    def on_train_batch_end(self, batch, logs=None):
        loss = scalar_value((logs or {}).get("loss"))
        if loss is not None and not math.isfinite(loss):
            layer = getattr(self.model, "nonfinite_layer", None)
            where = f" (first non-finite output: layer '{layer}')" if layer else ""
            if self.raise_error:
                raise RuntimeError(f"NaN or Inf loss encountered at batch {batch}. Loss value: "
                                   f"{loss}{where}. Terminating training immediately.")
            print_line(f"Batch {batch}: Invalid loss, terminating training{where}")
            self.model.stop_training = True


class LambdaCallback(Callback):
    """A callback made of functions, as ``keras.callbacks.LambdaCallback``.

    Args:
        on_epoch_begin, on_epoch_end: ``f(epoch, logs)``.
        on_train_begin, on_train_end: ``f(logs)``.
        on_train_batch_begin, on_train_batch_end: ``f(batch, logs)``.
        **kwargs: any other hook by name (``on_test_end=f``, ...).

    Example:
        >>> LambdaCallback(on_epoch_end=lambda epoch, logs: print(epoch, logs["loss"]))
    """

    def __init__(self, on_epoch_begin=None, on_epoch_end=None, on_train_begin=None, on_train_end=None,
                 on_train_batch_begin=None, on_train_batch_end=None, **kwargs):
        super().__init__()
        hooks = dict(on_epoch_begin=on_epoch_begin, on_epoch_end=on_epoch_end,
                     on_train_begin=on_train_begin, on_train_end=on_train_end,
                     on_train_batch_begin=on_train_batch_begin, on_train_batch_end=on_train_batch_end,
                     **kwargs)
        for name, fn in hooks.items():
            if fn is None:
                continue
            if not name.startswith("on_") or not callable(getattr(Callback, name, None)):
                raise ValueError(f"Invalid keyword argument `{name}` for LambdaCallback: expected a "
                                 f"callback hook name such as on_epoch_end.")
            if not callable(fn):
                raise TypeError(f"Invalid value for argument `{name}`: expected a callable. Received: "
                                f"{name}={fn!r}")
            setattr(self, name, fn)


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
