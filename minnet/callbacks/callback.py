"""The ``Callback`` base class: the hooks ``fit``, ``evaluate`` and ``predict`` call."""

__all__ = ["Callback"]


class Callback:
    """Base class: override the hooks you need (all do nothing by default).

    Attributes:
        model: the model being trained (set by ``set_model``).
        params: dict with "epochs", "steps" and "verbose" (set by ``set_params``).
        chief_only: class attribute; True for callbacks that print or write files (the
            progress bar, CSVLogger, ModelCheckpoint, TensorBoard): under data parallelism
            only rank 0 calls their hooks (``mn.config.is_chief()``).

    Example:
        >>> class PrintLoss(Callback):
        ...     def on_epoch_end(self, epoch, logs=None):
        ...         print(epoch, logs["loss"])
    """

    chief_only = False

    def __init__(self):
        self.model = None
        self.params = {}

    def set_params(self, params):
        self.params = dict(params)

    def set_model(self, model):
        self.model = model

    def on_train_begin(self, logs=None): pass
    def on_train_end(self, logs=None): pass
    def on_epoch_begin(self, epoch, logs=None): pass
    def on_epoch_end(self, epoch, logs=None): pass
    def on_train_batch_begin(self, batch, logs=None): self.on_batch_begin(batch, logs)
    def on_train_batch_end(self, batch, logs=None): self.on_batch_end(batch, logs)
    def on_batch_begin(self, batch, logs=None): pass  # Keras 2 name of on_train_batch_begin
    def on_batch_end(self, batch, logs=None): pass    # Keras 2 name of on_train_batch_end
    def on_test_begin(self, logs=None): pass
    def on_test_end(self, logs=None): pass
    def on_test_batch_begin(self, batch, logs=None): pass
    def on_test_batch_end(self, batch, logs=None): pass
    def on_predict_begin(self, logs=None): pass
    def on_predict_end(self, logs=None): pass
    def on_predict_batch_begin(self, batch, logs=None): pass
    def on_predict_batch_end(self, batch, logs=None): pass

    def __repr__(self):
        return f"{type(self).__name__}()"
