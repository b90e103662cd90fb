"""The argument checks every public entry point shares (one place, one wording).

Each function validates one kind of argument and returns it normalised, or raises
``TypeError``/``ValueError`` in minnet's one wording: the argument's name, what was
expected, and what was received ("Invalid value for argument `rate`: expected a float in
[0, 1). Received: rate=1.5"). Checks happen once, at the public boundary (functional ops,
layers' ``__init__``/``build``, ``compile``/``fit``); kernels in ``_ext`` keep only O(1)
checks (dtype, shape, contiguity).

This module imports nothing above itself (numpy only).
"""
import numbers
import math

import numpy as np

__all__ = ["invalid", "check_int", "check_float", "check_int_tuple", "check_padding",
           "check_choice", "check_labels"]


def invalid(name, expected, value, error=ValueError):
    """Build (not raise) the standard error for argument ``name``."""
    return error(f"Invalid value for argument `{name}`: expected {expected}. "
                 f"Received: {name}={value!r}")


def _is_int(value):
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def check_int(name, value, minimum=None, maximum=None):
    """An int (bools refused) within ``[minimum, maximum]``; returns ``int(value)``."""
    bounds = (f" >= {minimum}" if maximum is None else f" in [{minimum}, {maximum}]") \
        if minimum is not None else (f" <= {maximum}" if maximum is not None else "")
    if not _is_int(value):
        raise invalid(name, f"an int{bounds}", value, TypeError)
    value = int(value)
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise invalid(name, f"an int{bounds}", value)
    return value


def check_float(name, value, low=None, high=None, low_open=False, high_open=False):
    """A finite real number within the given interval; returns ``float(value)``."""
    lo = "" if low is None else ("(" if low_open else "[") + f"{low}"
    hi = "" if high is None else f"{high}" + (")" if high_open else "]")
    where = f" in {lo or '(-inf'}, {hi or 'inf)'}" if (low is not None or high is not None) else ""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise invalid(name, f"a float{where}", value, TypeError)
    value = float(value)
    if not math.isfinite(value):
        raise invalid(name, f"a finite float{where}", value)
    if low is not None and (value < low or (low_open and value == low)):
        raise invalid(name, f"a float{where}", value)
    if high is not None and (value > high or (high_open and value == high)):
        raise invalid(name, f"a float{where}", value)
    return value


def check_int_tuple(name, value, n, minimum=1):
    """An int or a sequence of ``n`` ints, each ``>= minimum``; returns a tuple of ``n`` ints.

    The one parser of kernel sizes, strides, dilations and pool sizes (Keras accepts an int
    for "the same along every axis").
    """
    expected = f"an int >= {minimum} or a tuple of {n} such ints"
    if _is_int(value):
        items = (int(value),) * n
    elif isinstance(value, (tuple, list)) and len(value) == n and all(_is_int(v) for v in value):
        items = tuple(int(v) for v in value)
    else:
        raise invalid(name, expected, value, TypeError if not isinstance(value, (tuple, list, int))
                      else ValueError)
    if any(v < minimum for v in items):
        raise invalid(name, expected, value)
    return items


def check_padding(name, value, n, allow_causal=False):
    """Keras's ``"valid"``/``"same"`` (and ``"causal"`` for 1-D), or explicit zero padding.

    Returns ``"valid"``, ``"same"``, ``"causal"``, or a tuple of ``n`` non-negative ints
    (an int pads every axis alike; PyTorch-style explicit padding is an extension).
    """
    names = ("valid", "same", "causal") if allow_causal else ("valid", "same")
    if isinstance(value, str):
        if value.lower() in names:
            return value.lower()
        raise invalid(name, " or ".join(repr(s) for s in names) + f", or an int or tuple of {n} "
                      "ints >= 0", value)
    return check_int_tuple(name, value, n, minimum=0)


def check_choice(name, value, choices):
    """``value`` if it is one of ``choices``; else a ValueError listing them."""
    if value not in choices:
        raise invalid(name, "one of " + ", ".join(repr(c) for c in choices), value)
    return value


def check_labels(name, labels, n_classes, ignore_index=None):
    """Integer class labels in ``[0, n_classes)`` (``ignore_index`` allowed): one scan.

    Returns the labels as an ``int64`` array. A float array holding whole numbers is
    accepted (Keras accepts ``y`` as floats); anything else raises a ``ValueError`` naming
    the first bad value, its position and the valid range. Unsigned labels too large for
    int64 are reported as they are, never wrapped.
    """
    labels = np.asarray(labels)
    if labels.dtype.kind == "b" or labels.dtype.kind not in "iuf":
        raise TypeError(f"Invalid value for argument `{name}`: expected integer class labels. "
                        f"Received: an array of dtype {labels.dtype}")
    if labels.dtype.kind == "f":
        bad = ~np.isfinite(labels) | (labels != np.floor(labels))
        if bad.any():
            i = int(np.flatnonzero(bad.ravel())[0])
            raise ValueError(f"Invalid value for argument `{name}`: expected integer class "
                             f"labels. Received: {labels.ravel()[i]!r} at flat index {i}")
    if labels.size:
        valid = (labels >= 0) & (labels < n_classes)
        if ignore_index is not None:
            valid |= labels == ignore_index
        if not valid.all():
            i = int(np.flatnonzero(~valid.ravel())[0])
            raise ValueError(f"Invalid value for argument `{name}`: expected class labels in "
                             f"[0, {n_classes})" + (f" or {ignore_index}" if ignore_index is not
                                                    None else "")
                             + f". Received: {labels.ravel()[i]!r} at flat index {i}")
    return labels.astype(np.int64, copy=False)


class UnsupportedArgumentError(ValueError, NotImplementedError):
    """A valid Keras argument value that minnet does not implement (yet).

    A ``ValueError`` (the argument cannot be taken, and the message names it, what minnet
    takes and what it received) and a ``NotImplementedError`` (it is a gap, not a mistake).
    """
