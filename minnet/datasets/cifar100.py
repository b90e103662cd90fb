"""CIFAR-100 from its authors' binary release (never the pickled one), as ``keras.datasets.cifar100``."""
from minnet._checks import check_choice
from minnet.datasets._cifar import read_records, to_layout
from minnet.datasets._download import check_file_labels, fetch

__all__ = ["load_data"]

ORIGIN = "https://www.cs.toronto.edu/~kriz/cifar-100-binary.tar.gz"
# The MD5 published on https://www.cs.toronto.edu/~kriz/cifar.html for the binary version.
MD5 = "03b5dce01913d631647c71ecec9e9cb8"
TRAIN = ("cifar-100-binary/train.bin",)
TEST = ("cifar-100-binary/test.bin",)


def load_data(label_mode="fine", path=None):
    """Load CIFAR-100: 50,000 training and 10,000 test 32x32 colour images.

    Args:
        label_mode: ``"fine"`` (100 classes, default) or ``"coarse"`` (20 superclasses).
        path: an existing ``cifar-100-binary.tar.gz`` (verified against the published
            MD5), or None to use the cache, downloading on first use.

    Returns:
        ``(x_train, y_train), (x_test, y_test)``: uint8 images in the configured layout and
        uint8 labels of shape ``(n, 1)``, as Keras.
    """
    label_mode = check_choice("label_mode", label_mode, ("fine", "coarse"))
    local = fetch("cifar-100-binary.tar.gz", ORIGIN, "md5", MD5, "cifar100", path=path)
    column = 1 if label_mode == "fine" else 0      # each record: coarse byte, fine byte
    x_train, y_train = read_records(local, TRAIN, 2)
    x_test, y_test = read_records(local, TEST, 2)
    for labels, part in ((y_train, "train"), (y_test, "test")):
        check_file_labels(labels[:, 0], 20, local, f"{part} coarse")
        check_file_labels(labels[:, 1], 100, local, f"{part} fine")
    return ((to_layout(x_train), y_train[:, column:column + 1].copy()),
            (to_layout(x_test), y_test[:, column:column + 1].copy()))
