"""``CallbackList``: calls every hook on a list of callbacks (adds History and the progress bar)."""
from minnet import config
from minnet.callbacks.callback import Callback
from minnet.callbacks.progress import History, ProgbarLogger

__all__ = ["CallbackList"]


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
        chief = config.is_chief()
        for cb in self.callbacks:
            if chief or not cb.chief_only:
                cb.set_model(model)
            else:                    # a writer's set_model may write (TensorBoard's graph)
                cb.model = model

    def _call(self, hook, *args):
        # Keras hands every hook a dict of logs, an empty one when there is nothing to report.
        if args[-1] is None:
            args = args[:-1] + ({},)
        chief = config.is_chief()       # data parallelism: only rank 0 prints and writes
        for cb in self.callbacks:
            if chief or not cb.chief_only:
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
