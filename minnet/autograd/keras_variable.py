"""Keras's Variable API on minnet's Tensor: ``assign`` / ``assign_add`` / ``assign_sub``,
``value`` and the sequence mask ``_keras_mask``.

Keras 3 code updates state with ``variable.assign_add(x)`` (a metric's counters, a layer's
running statistics) and reads gradients as ``variable.value.grad``; ``Tensor`` inherits
this mixin so those lines run unchanged. An assignment is a state update outside the
graph, allowed on a weight too (as Keras allows it on a trainable variable).
"""
import numpy as np

from .masks import get_keras_mask, set_keras_mask

__all__ = ["KerasVariable"]


class KerasVariable:
    """Mixin of ``Tensor`` (no state of its own)."""

    __slots__ = ()

    @property
    def _keras_mask(self):
        """Keras's sequence mask attached to this tensor (an ndarray of bools), or None."""
        return get_keras_mask(self)

    @_keras_mask.setter
    def _keras_mask(self, mask):
        set_keras_mask(self, mask)

    @property
    def value(self):
        """The tensor itself (Keras's ``variable.value``: ``v.value.grad`` reads the gradient)."""
        return self

    # Keras's Variable API: a state update, outside the graph (allowed on a weight too, as
    # Keras allows it on a trainable variable); the value keeps this tensor's dtype and shape.
    def assign(self, value):
        """``self = value`` in place (Keras ``Variable.assign``); returns self."""
        value = value.data if hasattr(value, "grad_fn") else np.asarray(value)
        if value.shape != self.data.shape and value.size != self.data.size and value.ndim > 0:
            raise ValueError(f"Cannot assign a value of shape {value.shape} to a variable of shape "
                             f"{self.data.shape}.")
        self.data[...] = value.reshape(self.data.shape) if value.ndim else value
        self._bump_version()
        return self

    def assign_add(self, value):
        """``self += value`` in place (Keras ``Variable.assign_add``); returns self."""
        return self.assign(self.data + (value.data if hasattr(value, "grad_fn") else np.asarray(value)))

    def assign_sub(self, value):
        """``self -= value`` in place (Keras ``Variable.assign_sub``); returns self."""
        return self.assign(self.data - (value.data if hasattr(value, "grad_fn") else np.asarray(value)))
