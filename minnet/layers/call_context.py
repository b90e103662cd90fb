"""The call context: the train/eval mode passed down a call, one per thread (Keras's ``CallContext``).

``layer(x, training=True)`` makes ``training`` the mode of every layer called inside that
call, unless one is given its own ``training=``; ``fit`` runs its steps inside
``call_context(training=True)``, ``evaluate``/``predict`` inside ``call_context(training=False)``.
The mode is never stored on the layers, so a ``predict`` in one thread while ``fit`` runs in
another cannot flip the mode of either (issue 31, item 8).

Resolution of a layer's mode, highest first (Keras's order, then PyTorch's flag):

1. the ``training`` argument given to this call;
2. the mode of the call this one runs inside (``current_training()``), or the ``fit``/
   ``evaluate``/``predict`` loop this thread is in;
3. the layer's own flag, ``layer.training``, set by ``layer.train()`` / ``layer.eval()``
   (PyTorch style; False by default, Keras's inference default).

``layer.training`` read inside a call returns the resolved mode, so code written against
PyTorch's ``self.training`` sees the same mode as code reading the ``training`` argument.
"""
import threading

__all__ = ["call_context", "current_training"]


class _State(threading.local):
    training = None


STATE = _State()


def current_training():
    """The mode of the call (or loop) this thread is inside: True, False, or None (none)."""
    return STATE.training


class call_context:
    """``with call_context(training=True): ...``: the mode of every layer call inside.

    Args:
        training: True (training mode), False (inference), or None (no mode: each layer
            falls back to its own flag).
    """

    def __init__(self, training):
        self.training = None if training is None else bool(training)
        self._previous = []

    def __enter__(self):
        self._previous.append(STATE.training)
        STATE.training = self.training
        return self

    def __exit__(self, *exc_info):
        STATE.training = self._previous.pop()
        return False
