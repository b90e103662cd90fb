"""Fashion-MNIST, as ``keras.datasets.fashion_mnist`` (downloaded once, no pickle).

Keras 3 downloads the four gzipped IDX files below and passes no hash for them
(``keras/src/datasets/fashion_mnist.py``). Zalando Research publishes an MD5 for each file
(the README of github.com/zalandoresearch/fashion-mnist; torchvision checks the same ones),
so minnet checks those MD5s for Keras's copies too, records each
accepted file's SHA-256 in the cache (``_download``), and after reading checks each IDX
header (magic number, counts, 28x28), that images and labels agree, and that every label is
one of the 10 classes.
"""
import gzip
import os
import zlib

import numpy as np

from minnet.datasets._download import check_file_labels, fetch

__all__ = ["load_data"]

BASE = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/"
FILES = ("train-labels-idx1-ubyte.gz", "train-images-idx3-ubyte.gz",
         "t10k-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz")
# The MD5s Zalando Research publishes for the four files.
MD5 = {"train-labels-idx1-ubyte.gz": "25c81989df183df01b3e8a0aad5dffbe",
       "train-images-idx3-ubyte.gz": "8d4fb7e6c68d591d4c3dfef9ec88bf0d",
       "t10k-labels-idx1-ubyte.gz": "bb300cfdad3c16e7a12a480ee83cd310",
       "t10k-images-idx3-ubyte.gz": "bef4ecab320f06d8554ea6380940ec79"}
N_CLASSES = 10


def load_data(path=None):
    """Load Fashion-MNIST: 60,000 training and 10,000 test 28x28 grey-scale clothing images.

    Args:
        path: a directory holding the four ``*-ubyte.gz`` files (verified against the
            published MD5s), or None to use the cache (``$MINNET_HOME/datasets/fashion-mnist``),
            downloading from Keras's URLs.

    Returns:
        ``(x_train, y_train), (x_test, y_test)``: uint8 images and uint8 labels 0..9.

    Shape:
        - x_train: ``(60000, 28, 28)``, y_train: ``(60000,)``
        - x_test: ``(10000, 28, 28)``, y_test: ``(10000,)``
    """
    paths = []
    for name in FILES:
        local = None if path is None else os.path.join(os.fsdecode(os.fspath(path)), name)
        paths.append(fetch(name, BASE + name, "md5", MD5[name], "fashion-mnist", path=local))
    y_train, x_train = read_idx(paths[0], 1), read_idx(paths[1], 3)
    y_test, x_test = read_idx(paths[2], 1), read_idx(paths[3], 3)
    if len(x_train) != len(y_train) or len(x_test) != len(y_test):
        raise ValueError(f"The Fashion-MNIST files disagree on the number of samples: images "
                         f"{len(x_train)}/{len(x_test)} in {paths[1]!r}/{paths[3]!r}, labels "
                         f"{len(y_train)}/{len(y_test)} in {paths[0]!r}/{paths[2]!r}.")
    check_file_labels(y_train, N_CLASSES, paths[0], "train")
    check_file_labels(y_test, N_CLASSES, paths[2], "test")
    return (x_train, y_train), (x_test, y_test)


def read_idx(path, ndim):
    """A gzipped IDX file of unsigned bytes (labels: ndim 1; images: ndim 3, 28x28)."""
    try:
        with gzip.open(path, "rb") as file:
            data = file.read()
    except (OSError, EOFError, zlib.error) as error:
        raise ValueError(f"{path!r} is not a gzipped IDX file: {error}") from None
    magic = 0x800 | ndim
    header = 4 + 4 * ndim
    if len(data) < header or int.from_bytes(data[:4], "big") != magic:
        raise ValueError(f"{path!r} is not an IDX file of {ndim}-d unsigned bytes (magic "
                         f"{magic} expected).")
    dims = tuple(int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim))
    if (ndim == 3 and dims[1:] != (28, 28)) or len(data) - header != int(np.prod(dims)):
        raise ValueError(f"{path!r}: the IDX header declares {dims} but holds "
                         f"{len(data) - header} bytes.")
    return np.frombuffer(data, np.uint8, offset=header).reshape(dims).copy()
