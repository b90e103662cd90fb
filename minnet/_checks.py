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
           "check_pad_pairs", "check_choice", "check_labels", "check_hook_gradient",
           "check_axes_in_range", "matmul_shape_error"]


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


def check_int_tuple(name, value, n, minimum=1, maximum=None, error=None):
    """An int or a sequence of ``n`` ints, each in ``[minimum, maximum]``; returns a tuple of ``n`` ints.

    The one parser of kernel sizes, strides, dilations and pool sizes (Keras accepts an int
    for "the same along every axis").

    Args:
        name: the argument's name, for the message.
        value: what the caller passed.
        n: the number of axes.
        minimum, maximum: bounds of every entry (``maximum=None``: unbounded).
        error: the exception class for every failure; None raises a ``TypeError`` for a value
            that is neither an int nor a list/tuple and a ``ValueError`` otherwise. The
            functional ops and ``Conv2D`` pass ``ValueError``, as Keras's
            ``standardize_tuple`` raises for all of them.
    """
    what = f"an int >= {minimum}" if maximum is None else f"an int in [{minimum}, {maximum}]"
    expected = f"{what} or a tuple of {n} such ints"
    if _is_int(value):
        items = (int(value),) * n
    elif isinstance(value, (tuple, list)) and len(value) == n and all(_is_int(v) for v in value):
        items = tuple(int(v) for v in value)
    else:
        kind = TypeError if not isinstance(value, (tuple, list, int)) else ValueError
        raise invalid(name, expected, value, error or kind)
    if any(v < minimum or (maximum is not None and v > maximum) for v in items):
        raise invalid(name, expected, value, error or ValueError)
    return items


def check_padding(name, value, n, allow_causal=False, maximum=None, error=None):
    """Keras's ``"valid"``/``"same"`` (and ``"causal"`` for 1-D), or explicit zero padding.

    Returns ``"valid"``, ``"same"``, ``"causal"`` (lower case, any case accepted), or a tuple
    of ``n`` non-negative ints (an int pads every axis alike; PyTorch-style explicit padding
    is an extension). ``maximum`` and ``error`` as ``check_int_tuple``.
    """
    names = ("valid", "same", "causal") if allow_causal else ("valid", "same")
    if isinstance(value, str):
        if value.lower() in names:
            return value.lower()
        raise invalid(name, " or ".join(repr(s) for s in names) + f", or an int or tuple of {n} "
                      "ints >= 0", value)
    return check_int_tuple(name, value, n, minimum=0, maximum=maximum, error=error)


def check_pad_pairs(name, value):
    """2-D zero padding or cropping per side: ``((top, bottom), (left, right))``.

    Accepts an int (every side), ``(height, width)`` (symmetric per axis) or
    ``((top, bottom), (left, right))`` (Keras's ``ZeroPadding2D``/``Cropping2D`` spec, and
    the explicit padding of ``functional.conv2d``); every entry an int >= 0. Raises a
    ``ValueError`` naming ``name`` otherwise.
    """
    def ok(v):
        return _is_int(v) and v >= 0
    if ok(value):
        return ((int(value),) * 2, (int(value),) * 2)
    if isinstance(value, (tuple, list)) and len(value) == 2:
        if all(ok(v) for v in value):
            return ((int(value[0]),) * 2, (int(value[1]),) * 2)
        if all(isinstance(v, (tuple, list)) and len(v) == 2 and all(ok(u) for u in v) for v in value):
            return tuple(tuple(int(u) for u in v) for v in value)
    raise invalid(name, "an int >= 0, a tuple of 2 such ints, or a tuple of 2 tuples of 2 such "
                  "ints ((top, bottom), (left, right))", value)


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
                             f"labels. Received: {labels.ravel()[i].item()!r} at flat index {i}")
    # min/max first (two reductions, no temporaries); the mask only on the error path
    # or when an ignore_index may sit outside the range
    if labels.size and not (labels.min() >= 0 and labels.max() < n_classes):
        valid = (labels >= 0) & (labels < n_classes)
        if ignore_index is not None:
            valid |= labels == ignore_index
        if not valid.all():
            i = int(np.flatnonzero(~valid.ravel())[0])
            raise ValueError(f"Invalid value for argument `{name}`: expected class labels in "
                             f"[0, {n_classes})" + (f" or {ignore_index}" if ignore_index is not
                                                    None else "")
                             + f". Received: {labels.ravel()[i].item()!r} at flat index {i}")
    return labels.astype(np.int64, copy=False)


class UnsupportedArgumentError(ValueError, NotImplementedError):
    """A valid Keras argument value that minnet does not implement (yet).

    A ``ValueError`` (the argument cannot be taken, and the message names it, what minnet
    takes and what it received) and a ``NotImplementedError`` (it is a gap, not a mistake).
    """


def check_hook_gradient(result, shape, hook, where):
    """What a gradient hook returned, checked: None, or a Tensor / array of numbers (else a
    TypeError naming the hook, what it returned and what was expected)."""
    if result is None:
        return
    try:
        kind = np.asarray(getattr(result, "data", result)).dtype.kind
    except (TypeError, ValueError):
        kind = "O"
    if kind not in "fiub":
        shown = repr(result)
        shown = shown if len(shown) <= 80 else shown[:80] + "..."
        name = getattr(hook, "__qualname__", None) or repr(hook)
        expected = "" if shape is None else f" of shape {tuple(shape)}"
        raise TypeError(f"The {where} {name!r} returned {type(result).__name__} {shown}: a gradient "
                        f"hook must return None (keep the gradient) or a gradient{expected} (a Tensor "
                        f"or an array of numbers).")


def check_axes_in_range(axis, shape, owner, name="axis"):
    """``axis`` (None, an int or a sequence of ints) made non-negative for an input of
    ``shape``, or a ValueError that names ``owner`` (a layer or loss), the argument, the
    input's rank and the axis received. None stays None (all axes)."""
    if axis is None:
        return None
    ndim = len(shape)
    axes = list(axis) if isinstance(axis, (list, tuple)) else [axis]
    bad = [a for a in axes if not -ndim <= a < ndim]
    if bad:
        raise ValueError(f"{owner}: invalid value for argument `{name}`: expected axes in "
                         f"[{-ndim}, {ndim}) for an input of rank {ndim} (shape {tuple(shape)}). "
                         f"Received: {name}={axis!r}")
    normalized = [a % ndim for a in axes]
    if len(set(normalized)) != len(normalized):
        raise ValueError(f"{owner}: invalid value for argument `{name}`: expected distinct axes "
                         f"for an input of rank {ndim} (shape {tuple(shape)}); {axis!r} names an "
                         f"axis twice. Received: {name}={axis!r}")
    return tuple(normalized) if isinstance(axis, (list, tuple)) else normalized[0]


def matmul_shape_error(shape_a, shape_b):
    """The error (built, not raised) for operands of these shapes that ``matmul`` cannot
    multiply, naming the mismatched axes; ``None`` when they can be multiplied."""
    shape_a, shape_b = tuple(shape_a), tuple(shape_b)
    head = f"matmul: shapes {shape_a} and {shape_b} cannot be multiplied: "
    if not shape_a or not shape_b:
        return ValueError(head + "both operands need at least one axis")
    k_b = shape_b[-2] if len(shape_b) >= 2 else shape_b[0]
    if shape_a[-1] != k_b:
        where = "second-to-last axis" if len(shape_b) >= 2 else "length"
        return ValueError(head + f"expected the last axis of the first operand ({shape_a[-1]}) "
                          f"to equal the {where} of the second ({k_b})")
    batch_a, batch_b = shape_a[:-2], shape_b[:-2]
    try:
        np.broadcast_shapes(batch_a, batch_b)
    except ValueError:
        return ValueError(head + f"their batch axes {batch_a} and {batch_b} do not broadcast")
    return None
