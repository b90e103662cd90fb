"""Targets and weights: labels for the loss, class ids, sample and class weights, finiteness."""
import math
import numbers

import numpy as np

from minnet.data import as_array
from minnet.layers import IntegerLookup, StringLookup, TextVectorization
from minnet.trainers.compile_utils import is_sparse_loss

_INT64_MAX = np.iinfo(np.int64).max

__all__ = ["prepare_target", "class_ids", "sample_weights", "check_class_weight", "first_nonfinite_row",
           "string_input_hint"]


def prepare_target(y, loss, name="y"):
    """Targets for ``loss``: integer-valued float labels of sparse losses -> int64."""
    if is_sparse_loss(loss):
        if y.dtype.kind in "iu":
            if y.dtype.kind == "u" and y.dtype.itemsize == 8 and y.size and y.max() > _INT64_MAX:
                # int64 would wrap it to a negative label, and the error would show that one
                bad = int(np.flatnonzero(y > _INT64_MAX)[0])
                raise ValueError(f"Invalid value for argument `{name}`: expected class labels below "
                                 f"2**63. Received: {name}[{bad}]={int(y.flat[bad])} ({y.dtype})")
            return y.astype(np.int64, copy=False)
        if y.dtype.kind == "b" or y.dtype.kind not in "f":
            raise TypeError(f"Invalid value for argument `{name}`: expected integer class labels "
                            f"for loss {type(loss).__name__}. Received: {name} with dtype "
                            f"{y.dtype}")
        if not np.all(np.isfinite(y)) or np.any(y != np.round(y)):
            raise ValueError(f"Invalid value for argument `{name}`: expected integer class labels "
                             f"for loss {type(loss).__name__}; received float labels that are "
                             f"not whole numbers (one-hot targets need CategoricalCrossentropy)")
        if y.size and np.abs(y).max() >= 2.0 ** 63:
            bad = int(np.flatnonzero(np.abs(y) >= 2.0 ** 63)[0])
            raise ValueError(f"Invalid value for argument `{name}`: expected class labels below "
                             f"2**63. Received: {name}[{bad}]={y.flat[bad].item()!r}")
        return y.astype(np.int64)
    if y.dtype.kind not in "fiub":
        raise TypeError(f"Invalid value for argument `{name}`: expected a numeric array. "
                        f"Received: {name} with dtype {y.dtype}")
    return y


def class_ids(y, one_hot_only=False):
    """Class index per sample for integer labels or one-hot rows; None for other targets."""
    if not isinstance(y, np.ndarray):
        return None
    if y.dtype.kind == "u" and y.dtype.itemsize == 8 and y.size and y.max() > _INT64_MAX:
        bad = int(np.flatnonzero(y > _INT64_MAX)[0])
        raise ValueError(f"Invalid value for argument `y`: expected class labels below 2**63. "
                         f"Received: y[{bad}]={int(y.flat[bad])} ({y.dtype})")
    if y.ndim == 1 and y.dtype.kind in "iu":
        return y.astype(np.int64)
    if y.ndim == 2 and y.shape[1] > 1:
        if one_hot_only and not (np.all((y == 0) | (y == 1)) and np.all(y.sum(axis=1) == 1)):
            return None
        return np.argmax(y, axis=1)
    if y.ndim == 2 and y.shape[1] == 1 and y.dtype.kind in "iub":
        return y[:, 0].astype(np.int64)
    return None


def check_class_weight(class_weight, check_finite=True):
    """``class_weight`` as ``{int class: float weight}``, every key and weight checked.

    Keys are class indices: ints >= 0 (a whole float such as ``1.0`` is read as ``1``, as a
    dict lookup of Keras would). A key that names no class of the data is ignored, as Keras
    does; a negative key (it would wrap to the last class) or a fractional one is an error.
    Weights are real numbers, finite unless ``check_finite=False``.
    """
    if not isinstance(class_weight, dict):
        raise TypeError(f"Invalid value for argument `class_weight`: expected a dict "
                        f"{{class index: weight}}. Received: class_weight={class_weight!r}")
    table = {}
    for key, value in class_weight.items():
        if isinstance(key, (bool, np.bool_)) or not isinstance(key, (numbers.Integral, numbers.Real)) \
                or isinstance(key, numbers.Real) and not isinstance(key, numbers.Integral) \
                and not (math.isfinite(key) and float(key).is_integer()):
            raise ValueError(f"Invalid value for argument `class_weight`: expected int class indices "
                             f"as keys. Received: key {key!r} in class_weight={class_weight!r}")
        index = int(key)
        if index < 0:
            raise ValueError(f"Invalid value for argument `class_weight`: class indices are >= 0 "
                             f"(a negative key would weight another class). Received: key {key!r} "
                             f"in class_weight={class_weight!r}")
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
            raise TypeError(f"Invalid value for argument `class_weight`: expected real weights. "
                            f"Received: class_weight[{key!r}]={value!r}")
        if check_finite and not math.isfinite(value):
            raise ValueError(f"Invalid value for argument `class_weight`: expected finite weights "
                             f"(NaN or inf would turn every model weight into NaN). Received: "
                             f"class_weight[{key!r}]={value!r}. Pass `check_finite=False` to "
                             f"train anyway.")
        table[index] = float(value)
    return table


def sample_weights(y, n, sample_weight, class_weight, check_finite=True):
    """Per-sample loss weights ``(n,)`` from ``sample_weight`` and ``class_weight`` (or None).

    Both are checked as ``x`` is: ``sample_weight`` numeric with one weight per sample and,
    unless ``check_finite=False``, no NaN/inf (the first bad sample is named); class weights
    by ``check_class_weight``.
    """
    weights = None
    if sample_weight is not None:
        weights = as_array(sample_weight, "sample_weight")
        if weights.dtype.kind not in "fiu":
            raise TypeError(f"Invalid value for argument `sample_weight`: expected numeric weights. "
                            f"Received: sample_weight with dtype {weights.dtype}")
        weights = weights.astype(np.float64)
        if weights.shape == (n, 1):
            weights = weights.reshape(n)      # Keras accepts a column of weights too
        if weights.shape != (n,):
            raise ValueError(f"Invalid value for argument `sample_weight`: expected shape "
                             f"({n},) (one weight per sample). Received: sample_weight "
                             f"with shape {weights.shape}")
        if check_finite:
            row = first_nonfinite_row(weights)
            if row is not None:
                raise ValueError(f"Invalid value for argument `sample_weight`: expected finite "
                                 f"weights (no NaN or inf). Received: sample_weight[{row}]="
                                 f"{weights[row]}. Pass `check_finite=False` to train anyway.")
    if class_weight is not None:
        table = check_class_weight(class_weight, check_finite)
        ids = class_ids(y)
        if ids is None:
            raise ValueError(f"Argument `class_weight` needs class labels (integers or one-hot "
                             f"rows) for a single output. Received targets "
                             + (f"with shape {y.shape} and dtype {y.dtype}" if isinstance(y, np.ndarray)
                                else f"of type {type(y).__name__}"))
        missing = sorted(set(np.unique(ids).tolist()) - set(table))
        if missing:
            raise ValueError(f"Invalid value for argument `class_weight`: no weight for "
                             f"class(es) {missing}. Received: class_weight={class_weight!r}")
        lookup = np.ones(int(ids.max()) + 1 if ids.size else 1)
        for index, value in table.items():
            if index < len(lookup):        # keys of classes absent from y are ignored (Keras)
                lookup[index] = value
        per_class = lookup[ids]
        weights = per_class if weights is None else weights * per_class
    return weights


def first_nonfinite_row(array, chunk_rows=4096):
    """Index of the first sample holding NaN/inf, or None (scanned in chunks: bounded memory).

    One summing pass settles the usual, clean case: a sum is finite only if every term is
    (NaN and inf propagate, and an overflow gives inf, never a finite value again), so only
    a non-finite sum needs the row-by-row scan that names the first bad sample.  The sum
    reads the data once and writes nothing (the scan writes a mask per chunk and reads it
    again): fit checks its whole ``x`` this way before every call.
    """
    if array.size == 0:
        return None
    with np.errstate(over="ignore", invalid="ignore"):
        if np.isfinite(np.add.reduce(array, axis=None)):
            return None
    rows = array.reshape(len(array), -1)
    for start in range(0, len(rows), chunk_rows):
        bad = np.flatnonzero(~np.isfinite(rows[start:start + chunk_rows]).all(axis=1))
        if bad.size:
            return start + int(bad[0])
    return None


def string_input_hint(layers, array):
    """For strings given to a model that starts with a TextVectorization: what to do instead."""
    if array.dtype.kind not in "USO" or not layers or not isinstance(
            layers[0], (TextVectorization, StringLookup, IntegerLookup)):
        return ""
    return (". A minnet model takes numbers: apply the TextVectorization to the strings outside "
            "the model (`tokens = vectorizer(texts)`) and give the model the token ids")
