"""MNIST handwritten digits, as ``keras.datasets.mnist`` (downloaded once, verified, no pickle)."""
import numpy as np

from minnet.datasets._download import check_file_labels, fetch

__all__ = ["load_data"]

ORIGIN = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/mnist.npz"
# The SHA-256 in Keras 3's keras/src/datasets/mnist.py.
SHA256 = "731c5ac602752760c8e48fbffcf8c3b850d9dc2a2aedcf2cc48468fc17b673d1"


def load_data(path=None):
    """Load MNIST: 60,000 training and 10,000 test 28x28 grey-scale digit images.

    Args:
        path: an existing local copy of ``mnist.npz`` (verified against its SHA-256), or
            None to use the cache (``$MINNET_HOME/datasets``, default ``~/.minnet``),
            downloading from Keras's URL on first use.

    Returns:
        ``(x_train, y_train), (x_test, y_test)``: uint8 images (0..255) and uint8 labels,
        as Keras returns them (no channel axis).

    Shape:
        - x_train: ``(60000, 28, 28)``, y_train: ``(60000,)``
        - x_test: ``(10000, 28, 28)``, y_test: ``(10000,)``
    """
    local = fetch("mnist.npz", ORIGIN, "sha256", SHA256, "mnist", path=path)
    return read_npz(local)


def read_npz(local):
    """The four arrays of an ``mnist.npz``-format file, read without pickle and checked."""
    try:
        with np.load(local, allow_pickle=False) as archive:
            arrays = [archive[key] for key in ("x_train", "y_train", "x_test", "y_test")]
    except (OSError, KeyError, ValueError) as error:
        raise ValueError(f"{local!r} is not an mnist.npz file (x_train, y_train, x_test, "
                         f"y_test arrays): {error}") from None
    x_train, y_train, x_test, y_test = arrays
    for x, y, part in ((x_train, y_train, "train"), (x_test, y_test, "test")):
        if x.ndim != 3 or x.shape[1:] != (28, 28) or y.shape != (x.shape[0],):
            raise ValueError(f"{local!r}: the {part} arrays have shapes {x.shape} and {y.shape}; "
                             f"expected (n, 28, 28) and (n,).")
        if x.dtype != np.uint8:
            raise ValueError(f"{local!r}: the {part} images have dtype {x.dtype}; expected uint8.")
        check_file_labels(y, 10, local, part)
    return (x_train, y_train), (x_test, y_test)
