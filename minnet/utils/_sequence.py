"""``pad_sequences``: Keras's, for ragged lists of token ids (or of feature vectors)."""
import numbers

import numpy as np

from minnet._checks import check_choice, check_int, invalid

__all__ = ["pad_sequences"]


def pad_sequences(sequences, maxlen=None, dtype="int32", padding="pre", truncating="pre",
                  value=0.0):
    """Pad (or cut) a list of sequences to one length, as ``keras.utils.pad_sequences``.

    Args:
        sequences: a list of sequences (lists or arrays; each may hold scalars or arrays of
            one common shape).
        maxlen: the length of the result; None: the longest sequence's length.
        dtype: dtype of the result (``"int32"`` by default, as Keras).
        padding: ``"pre"`` (default: pad at the front, so the last step is the last token)
            or ``"post"``.
        truncating: ``"pre"`` (drop the start of long sequences, default) or ``"post"``.
        value: the padding value (0 by default, the index ``Embedding(mask_zero=True)`` masks).

    Returns:
        An ndarray of shape ``(len(sequences), maxlen) + sample_shape``.

    Example:
        >>> pad_sequences([[1, 2, 3], [4]], maxlen=2)
        array([[2, 3],
               [0, 4]], dtype=int32)
    """
    if isinstance(sequences, (str, bytes)) or not hasattr(sequences, "__len__"):
        raise invalid("sequences", "a list of sequences", sequences, TypeError)
    check_choice("padding", padding, ("pre", "post"))
    check_choice("truncating", truncating, ("pre", "post"))
    lengths = []
    sample_shape = ()
    found_shape = False
    for i, s in enumerate(sequences):
        if not hasattr(s, "__len__") or isinstance(s, (str, bytes)):
            raise ValueError(f"Invalid value for argument `sequences`: expected a list of "
                             f"sequences. Received: {type(s).__name__} at index {i}")
        lengths.append(len(s))
        if not found_shape and len(s):
            sample_shape = np.asarray(s).shape[1:]
            found_shape = True
    if maxlen is None:
        maxlen = max(lengths, default=0)
    maxlen = check_int("maxlen", maxlen, minimum=0)
    dtype = np.dtype(dtype)
    is_text = dtype.kind in "US" or dtype == object
    if isinstance(value, str) and not is_text:
        raise ValueError(f"Invalid value for argument `value`: `dtype` {dtype} is not compatible "
                         f"with a string padding value. Received: value={value!r}; use "
                         f"dtype=object to pad with strings.")
    if not isinstance(value, (numbers.Number, str, np.generic)):
        raise invalid("value", "a number (or a string with dtype=object)", value, TypeError)
    x = np.full((len(lengths), maxlen) + sample_shape, value, dtype=dtype)
    for i, s in enumerate(sequences):
        if not len(s) or maxlen == 0:
            continue
        trunc = s[-maxlen:] if truncating == "pre" else s[:maxlen]
        trunc = np.asarray(trunc, dtype=dtype)
        if trunc.shape[1:] != sample_shape:
            raise ValueError(f"Invalid value for argument `sequences`: the elements of sequence "
                             f"{i} have shape {trunc.shape[1:]}, expected {sample_shape} (the "
                             f"shape of the first non-empty sequence's elements)")
        if padding == "post":
            x[i, :len(trunc)] = trunc
        else:
            x[i, maxlen - len(trunc):] = trunc
    return x
