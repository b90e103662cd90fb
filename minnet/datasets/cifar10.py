"""CIFAR-10 from its authors' binary release (never the pickled one), as ``keras.datasets.cifar10``."""
from minnet.datasets._cifar import read_records, to_layout
from minnet.datasets._download import check_file_labels, fetch

__all__ = ["load_data"]

ORIGIN = "https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz"
# The MD5 published on https://www.cs.toronto.edu/~kriz/cifar.html for the binary version.
MD5 = "c32a1d4ab5d03f1284b67883e8d87530"
TRAIN = tuple(f"cifar-10-batches-bin/data_batch_{i}.bin" for i in range(1, 6))
TEST = ("cifar-10-batches-bin/test_batch.bin",)


def load_data(path=None):
    """Load CIFAR-10: 50,000 training and 10,000 test 32x32 colour images in 10 classes.

    Args:
        path: an existing ``cifar-10-binary.tar.gz`` (verified against the published MD5),
            or None to use the cache (``$MINNET_HOME/datasets/cifar10``), downloading it
            from the authors' site on first use.

    Returns:
        ``(x_train, y_train), (x_test, y_test)``: uint8 images in the configured layout
        (``mn.config.image_data_format()``) and uint8 labels of shape ``(n, 1)``, as Keras.

    Shape:
        - x_train: ``(50000, 32, 32, 3)`` (channels_last) or ``(50000, 3, 32, 32)``
        - y_train: ``(50000, 1)``; x_test/y_test: 10,000 likewise.
    """
    local = fetch("cifar-10-binary.tar.gz", ORIGIN, "md5", MD5, "cifar10", path=path)
    x_train, y_train = read_records(local, TRAIN, 1)
    x_test, y_test = read_records(local, TEST, 1)
    check_file_labels(y_train, 10, local, "train")
    check_file_labels(y_test, 10, local, "test")
    return (to_layout(x_train), y_train.copy()), (to_layout(x_test), y_test.copy())
