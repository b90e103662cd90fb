"""California housing prices, as ``keras.datasets.california_housing`` (downloaded once,
verified): 20,640 districts, 8 features, the median house value to predict."""
from minnet._checks import check_choice
from minnet.datasets._tabular import load_table

__all__ = ["load_data"]

ORIGIN = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/california_housing.npz"
# The SHA-256 in Keras 3's keras/src/datasets/california_housing.py.
SHA256 = "1a2e3a52e0398de6463aebe6f4a8da34fb21fbb6b934cf88c3425e766f2a1a6f"


def load_data(version="large", path=None, test_split=0.2, seed=113):
    """``(x_train, y_train), (x_test, y_test)``: float ``(n, 8)`` features and ``(n,)``
    targets; ``version="small"`` keeps the first 600 rows (Keras's), ``"large"`` all 20,640;
    shuffled with ``seed`` and split by ``test_split`` as Keras does."""
    version = check_choice("version", version, ("large", "small"))
    return load_table("california_housing", ORIGIN, SHA256, 8, path, test_split, seed,
                      rows=600 if version == "small" else None)
