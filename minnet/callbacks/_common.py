"""Helpers shared by the callback modules: verbosity, argument checks, log values."""
import math
import numbers
import sys

import numpy as np

__all__ = ["in_notebook", "resolve_verbose", "check_mode", "check_non_negative_int", "check_real",
           "monitor_is_max", "scalar_value", "print_line"]


def in_notebook():
    ipython = sys.modules.get("IPython")   # only loaded when running under IPython/Jupyter
    get_ipython = getattr(ipython, "get_ipython", None)
    shell = get_ipython() if get_ipython is not None else None
    return shell is not None and type(shell).__name__ != "TerminalInteractiveShell"


def resolve_verbose(verbose):
    """Resolve ``verbose`` ("auto", 0, 1, 2) to an int, as ``fit`` does.

    "auto" is 1 (live progress bar) when ``sys.stdout`` is a terminal or when running
    in Jupyter/IPython, otherwise 2 (one line per epoch, friendlier to log files).
    """
    if verbose == "auto":
        isatty = getattr(sys.stdout, "isatty", None)
        try:
            tty = bool(isatty()) if isatty is not None else False
        except (ValueError, OSError):  # closed stream
            tty = False
        return 1 if tty or in_notebook() else 2
    if isinstance(verbose, bool) or not isinstance(verbose, numbers.Integral) or verbose not in (0, 1, 2):
        raise ValueError("Invalid value for argument `verbose`: expected 0, 1, 2 or 'auto'. "
                         f"Received: verbose={verbose!r}")
    return int(verbose)


def check_mode(mode):
    if mode not in ("auto", "min", "max"):
        raise ValueError("Invalid value for argument `mode`: expected 'auto', 'min' or 'max'. "
                         f"Received: mode={mode!r}")
    return mode


def check_non_negative_int(name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        raise ValueError(f"Invalid value for argument `{name}`: expected a non-negative int. "
                         f"Received: {name}={value!r}")
    return int(value)


def check_real(name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise ValueError(f"Invalid value for argument `{name}`: expected a finite number. "
                         f"Received: {name}={value!r}")
    return float(value)


_MAX_WORDS = ("acc", "auc", "precision", "recall", "f1", "iou", "r2")
_MIN_WORDS = ("loss", "error", "mse", "mae", "crossentropy", "hinge", "divergence", "mape", "msle")


def monitor_is_max(monitor, mode):
    """True when larger values of ``monitor`` are better (``mode="auto"`` guesses from the name)."""
    if mode != "auto":
        return mode == "max"
    name = monitor[4:] if monitor.startswith("val_") else monitor
    if any(word in name for word in _MIN_WORDS):
        return False
    if any(word in name for word in _MAX_WORDS):
        return True
    raise ValueError(f"Cannot tell whether monitor={monitor!r} should be minimized or maximized. "
                     "Pass mode='min' for the lowest value or mode='max' for the highest one.")


def scalar_value(value):
    """A float from a log value (float, numpy scalar, 0-d array or Tensor), else None."""
    value = getattr(value, "data", value)
    try:
        array = np.asarray(value)
    except Exception:  # noqa: BLE001 - anything unconvertible is "not a scalar"
        return None
    if array.ndim != 0 or not np.issubdtype(array.dtype, np.number):
        return None
    return float(array)


def print_line(message):
    # Look sys.stdout up at call time so that redirection (pytest's capsys) works.
    sys.stdout.write(message + "\n")
    sys.stdout.flush()
