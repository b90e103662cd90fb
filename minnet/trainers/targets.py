"""Targets and weights: labels for the loss, class ids, sample and class weights, finiteness."""
import numpy as np

from minnet.data import as_array
from minnet.trainers.compile_utils import is_sparse_loss

__all__ = ["prepare_target", "class_ids", "sample_weights", "first_nonfinite_row"]


def prepare_target(y, loss, name="y"):
    """Targets for ``loss``: integer-valued float labels of sparse losses -> int64."""
    if is_sparse_loss(loss):
        if y.dtype.kind in "iu":
            return y.astype(np.int64, copy=False)
        if y.dtype.kind == "b" or y.dtype.kind not in "f":
            raise TypeError(f"Invalid value for argument `{name}`: expected integer class labels "
                            f"for loss {type(loss).__name__}. Received: {name} with dtype "
                            f"{y.dtype}")
        if not np.all(np.isfinite(y)) or np.any(y != np.round(y)):
            raise ValueError(f"Invalid value for argument `{name}`: expected integer class labels "
                             f"for loss {type(loss).__name__}; received float labels that are "
                             f"not whole numbers (one-hot targets need CategoricalCrossentropy)")
        return y.astype(np.int64)
    if y.dtype.kind not in "fiub":
        raise TypeError(f"Invalid value for argument `{name}`: expected a numeric array. "
                        f"Received: {name} with dtype {y.dtype}")
    return y


def class_ids(y, one_hot_only=False):
    """Class index per sample for integer labels or one-hot rows; None for other targets."""
    if not isinstance(y, np.ndarray):
        return None
    if y.ndim == 1 and y.dtype.kind in "iu":
        return y.astype(np.int64)
    if y.ndim == 2 and y.shape[1] > 1:
        if one_hot_only and not (np.all((y == 0) | (y == 1)) and np.all(y.sum(axis=1) == 1)):
            return None
        return np.argmax(y, axis=1)
    if y.ndim == 2 and y.shape[1] == 1 and y.dtype.kind in "iub":
        return y[:, 0].astype(np.int64)
    return None


def sample_weights(y, n, sample_weight, class_weight):
    weights = None
    if sample_weight is not None:
        weights = as_array(sample_weight, "sample_weight").astype(np.float64)
        if weights.shape == (n, 1):
            weights = weights.reshape(n)      # Keras accepts a column of weights too
        if weights.shape != (n,):
            raise ValueError(f"Invalid value for argument `sample_weight`: expected shape "
                             f"({n},) (one weight per sample). Received: sample_weight "
                             f"with shape {weights.shape}")
    if class_weight is not None:
        if not isinstance(class_weight, dict):
            raise TypeError(f"Invalid value for argument `class_weight`: expected a dict "
                            f"{{class index: weight}}. Received: class_weight={class_weight!r}")
        ids = class_ids(y)
        if ids is None:
            raise ValueError(f"Argument `class_weight` needs class labels (integers or one-hot "
                             f"rows) for a single output. Received targets "
                             + (f"with shape {y.shape} and dtype {y.dtype}" if isinstance(y, np.ndarray)
                                else f"of type {type(y).__name__}"))
        missing = sorted(set(np.unique(ids).tolist()) - set(int(k) for k in class_weight))
        if missing:
            raise ValueError(f"Invalid value for argument `class_weight`: no weight for "
                             f"class(es) {missing}. Received: class_weight={class_weight!r}")
        table = np.ones(int(max(max(class_weight), ids.max())) + 1)
        for key, value in class_weight.items():
            table[int(key)] = float(value)
        per_class = table[ids]
        weights = per_class if weights is None else weights * per_class
    return weights


def first_nonfinite_row(array, chunk_rows=4096):
    """Index of the first sample holding NaN/inf, or None (scanned in chunks: bounded memory)."""
    rows = array.reshape(len(array), -1)
    for start in range(0, len(rows), chunk_rows):
        bad = np.flatnonzero(~np.isfinite(rows[start:start + chunk_rows]).all(axis=1))
        if bad.size:
            return start + int(bad[0])
    return None
