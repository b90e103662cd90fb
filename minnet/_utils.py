"""Small helpers shared by several minnet modules."""
import os
import sys
import warnings

from minnet._registry import did_you_mean  # noqa: F401  (the one suggestion helper lives there)


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def user_stacklevel():
    """The ``stacklevel`` (for a ``warnings.warn`` in the caller) of the first frame outside minnet.

    Counting frames by hand breaks as soon as a wrapper or a helper sits between the user's
    line and the warning; walking the stack to the first frame outside the package does not.
    """
    frame, level = sys._getframe(2), 2
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR):
        frame, level = frame.f_back, level + 1
    return level


def warn(message, category=UserWarning):
    """``warnings.warn`` pointing at the user's line (the first caller outside minnet)."""
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level + 1)


# The distribution's name on PyPI, for the `pip install "<name>[extra]"` hints.
DISTRIBUTION = "minnet-dl"


def missing_extra_message(module, extra, feature):
    """The ImportError text when an optional package is missing: what needs it and how to get it.

    ``missing_extra_message("onnx", "onnx", "model.export")`` reads: model.export needs the
    `onnx` package: pip install "minnet-dl[onnx]" (or pip install onnx).
    """
    return (f"{feature} needs the `{module}` package: pip install \"{DISTRIBUTION}[{extra}]\" "
            f"(or pip install {module}).")


def spec_references(spec):
    """The tensor references of a functional config's inputs/outputs spec
    (``{"tensor": ref}``, ``{"list": [refs]}`` or ``{"dict": {key: ref}}``, keys sorted)."""
    (kind, value), = spec.items()
    if kind == "tensor":
        return [value]
    if kind == "list":
        return list(value)
    return [value[key] for key in sorted(value)]


def get_window(window, length, fftbins=True):
    """``scipy.signal.get_window``, with ``scipy.signal`` imported on first use.

    ``scipy.signal`` pulls in scipy.stats, scipy.optimize and scipy.interpolate: about 40 MiB
    of resident memory in every process that imports minnet (``benchmarks/bench_training.py``'s
    minnet process peak RSS for the MLP: 125 MiB, 154 MiB while it was imported at module top), for the
    STFT initializer and layer only. The one lazy import of a required package
    (``tests/test_architecture.py``'s ``LAZY``).
    """
    import scipy.signal
    return scipy.signal.get_window(window, length, fftbins=fftbins)
