"""Read the ragged word-index sequences of Keras's ``imdb.npz`` and ``reuters.npz``.

Those files store each split as a NumPy object array of Python lists, which ``.npy`` can
only hold as a pickle stream, so ``np.load(allow_pickle=False)`` refuses them. minnet reads
them with an unpickler that may build exactly three things: ``numpy.ndarray``,
``numpy.dtype`` and the array reconstructor (``numpy._core.multiarray._reconstruct``, or
``numpy.core`` in files written by NumPy 1.x); lists and ints are pickle's own opcodes. Any
other global (``os.system``, ``builtins.eval``, ...) stops the read with an error naming
the file, so a tampered file cannot run code. After reading, every sequence is checked to
be a list of non-negative ints and every label an int.
"""
import io
import pickle
import zipfile

import numpy as np

__all__ = ["read_sequences"]

_GLOBALS = {("numpy", "ndarray"), ("numpy", "dtype"),
            ("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct")}


class _ArrayOnlyUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        if (module, name) not in _GLOBALS:
            raise pickle.UnpicklingError(f"refused to build {module}.{name} (only NumPy arrays "
                                         f"of lists are read)")
        return super().find_class(module, name)


def _read_member(raw):
    buffer = io.BytesIO(raw)
    version = np.lib.format.read_magic(buffer)
    if version == (1, 0):
        shape, _, dtype = np.lib.format.read_array_header_1_0(buffer)
    elif version in ((2, 0), (3, 0)):
        shape, _, dtype = np.lib.format.read_array_header_2_0(buffer)
    else:
        raise ValueError(f"unsupported .npy version {version}")
    if dtype.hasobject:
        return _ArrayOnlyUnpickler(buffer).load()
    buffer.seek(0)
    return np.lib.format.read_array(buffer, allow_pickle=False)


def read_sequences(path, keys):
    """``{key: array}`` for ``keys`` of the ``.npz`` at ``path``: object arrays of int
    sequences (the ``x`` keys) and int label arrays (the ``y`` keys), checked.

    Raises:
        ValueError: the file is not such an archive, holds something else, or its pickle
            stream asks for anything but NumPy arrays (the message names the file).
    """
    arrays = {}
    try:
        with zipfile.ZipFile(path) as archive:
            for key in keys:
                arrays[key] = _read_member(archive.read(f"{key}.npy"))
    except (OSError, KeyError, ValueError, zipfile.BadZipFile, pickle.UnpicklingError,
            EOFError, TypeError, AttributeError) as error:
        raise ValueError(f"{path!r} is damaged or not the right data set (delete it and "
                         f"download it again): {error}") from None
    for key, array in arrays.items():
        if not isinstance(array, np.ndarray) or array.ndim != 1:
            raise ValueError(f"{path!r}: {key} is not a 1-D array (found "
                             f"{type(array).__name__} {getattr(array, 'shape', '')}).")
        if key.startswith("x"):
            for i, seq in enumerate(array):
                if not isinstance(seq, list) or not all(
                        isinstance(w, int) and not isinstance(w, bool) and w >= 0 for w in seq):
                    raise ValueError(f"{path!r}: {key}[{i}] is not a list of word indices "
                                     f"(non-negative ints).")
        elif array.dtype.kind not in "iu":
            raise ValueError(f"{path!r}: the labels {key} have dtype {array.dtype}; expected "
                             f"integers.")
    return arrays
