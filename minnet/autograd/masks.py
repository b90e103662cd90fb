"""Keras's sequence masks, attached to tensors (``_keras_mask``).

Keras attaches a (batch, timesteps) boolean mask to a layer's output. minnet's Tensor has
fixed slots, so the mask lives in a side table keyed by the tensor, dropped when the tensor
is garbage-collected; ``Tensor._keras_mask`` reads and writes it. ``Embedding(mask_zero=True)``
and ``Masking`` create masks, ``Layer.__call__`` passes them to a ``call`` that takes
``mask`` and attaches ``compute_mask``'s result to the output, the recurrent layers read
them and the losses weight the per-step losses by them.
"""
import weakref

import numpy as np

__all__ = ["MASKS", "get_keras_mask", "set_keras_mask"]

MASKS = {}   # id(tensor) -> (weakref to the tensor, mask ndarray of bools)


def _drop_mask(key, ref):
    entry = MASKS.get(key)
    if entry is not None and entry[0] is ref:
        del MASKS[key]


def set_keras_mask(tensor, mask):
    """Attach a (batch, timesteps) boolean mask to ``tensor`` (None removes it); returns ``tensor``."""
    key = id(tensor)
    if mask is None:
        MASKS.pop(key, None)
        return tensor
    mask = getattr(mask, "data", mask)          # a Tensor's values
    ref = weakref.ref(tensor, lambda r, key=key: _drop_mask(key, r))
    MASKS[key] = (ref, np.asarray(mask, dtype=bool))
    return tensor


def get_keras_mask(tensor):
    """The mask attached to ``tensor`` (an ndarray of bools), or None."""
    if not MASKS:
        return None
    entry = MASKS.get(id(tensor))
    if entry is None or entry[0]() is not tensor:
        return None
    return entry[1]
