"""``SwapEMAWeights``: evaluate and predict with the optimizer's moving averages (Keras 3)."""
from minnet.callbacks.callback import Callback
from minnet.optimizers.ema import copy_weights_into_averages, swap_variables

__all__ = ["SwapEMAWeights"]


class SwapEMAWeights(Callback):
    """Swap the weights with the optimizer's moving averages (``use_ema=True``) around every
    evaluation and prediction, and with ``swap_on_epoch=True`` from the end of each epoch to
    the start of the next (so the callbacks after it, ``ModelCheckpoint`` for one, see the
    averaged weights), as Keras's callback does. Put it before the callbacks that should see
    the averages.

    Args:
        swap_on_epoch: also swap at the end of each epoch.
    """

    def __init__(self, swap_on_epoch=False):
        super().__init__()
        self.swap_on_epoch = bool(swap_on_epoch)
        self._swapped = False

    def _swap(self):
        optimizer = getattr(self.model, "optimizer", None)
        return optimizer is not None and swap_variables(optimizer)

    def on_epoch_begin(self, epoch, logs=None):
        if self.swap_on_epoch and self._swapped:
            self._swap()
            self._swapped = False

    def on_epoch_end(self, epoch, logs=None):
        if self.swap_on_epoch and not self._swapped:
            self._swapped = self._swap()
            if self._swapped and epoch == self.params.get("epochs", 0) - 1:
                # fit's finalize_variable_values copies the averages into the weights next:
                # make them the averaged weights now in the model
                copy_weights_into_averages(self.model.optimizer)

    def on_test_begin(self, logs=None):
        if not self._swapped:
            self._swapped = self._swap()

    def on_test_end(self, logs=None):
        if self._swapped:
            self._swap()
            self._swapped = False

    def on_predict_begin(self, logs=None):
        self.on_test_begin(logs)

    def on_predict_end(self, logs=None):
        self.on_test_end(logs)
