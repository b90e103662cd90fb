"""Automatic names of layers and models (``dense``, ``dense_1``, ...), as Keras gives them.

The counters are global to the process; ``minnet.utils.clear_session()`` resets them, as
``keras.utils.clear_session()`` does, so that a script, a notebook cell run again, or a
doc example numbers its layers from the start.
"""
__all__ = ["unique_name", "reset_names"]

_NAME_COUNTS = {}


def unique_name(base):
    """``base``, then ``base_1``, ``base_2``, ... on later calls with the same ``base``."""
    count = _NAME_COUNTS.get(base, 0)
    _NAME_COUNTS[base] = count + 1
    return base if count == 0 else f"{base}_{count}"


def reset_names():
    """Forget every name given so far: the next ``Dense`` is ``dense`` again."""
    _NAME_COUNTS.clear()
