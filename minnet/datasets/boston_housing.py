"""Boston housing prices, as ``keras.datasets.boston_housing`` (downloaded once, verified):
506 suburbs, 13 features, the median home value (in $1000s) to predict."""
from minnet.datasets._tabular import load_table

__all__ = ["load_data"]

ORIGIN = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/boston_housing.npz"
# The SHA-256 in Keras 3's keras/src/datasets/boston_housing.py.
SHA256 = "f553886a1f8d56431e820c5b82552d9d95cfcb96d1e678153f8839538947dff5"


def load_data(path=None, test_split=0.2, seed=113):
    """``(x_train, y_train), (x_test, y_test)``: float64 ``(n, 13)`` features and ``(n,)``
    targets, shuffled with ``seed`` and split by ``test_split`` as Keras does; ``path`` a
    local copy of ``boston_housing.npz`` (verified) or None for the cache."""
    return load_table("boston_housing", ORIGIN, SHA256, 13, path, test_split, seed)
