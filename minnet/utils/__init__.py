"""Keras's ``keras.utils``: helpers for data preparation."""
from minnet.utils._sequence import pad_sequences

__all__ = ["pad_sequences"]
