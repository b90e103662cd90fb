"""Grad mode and anomaly mode: the two per-thread switches the engine reads.

``no_grad`` / ``enable_grad`` / ``set_grad_enabled`` turn graph recording off and on;
``detect_anomaly`` makes every op check its outputs for NaN/inf.  Both are thread-local,
as in PyTorch: a ``no_grad`` block in one thread does not stop recording in another.
"""
import functools
import inspect
import threading

import numpy as np

__all__ = ["no_grad", "enable_grad", "is_grad_enabled", "set_grad_enabled", "detect_anomaly",
           "is_anomaly_enabled", "AnomalyError", "grad_state", "anomaly_state", "check_finite"]


class _GradModeState(threading.local):
    # Class attribute = the default each new thread sees.
    enabled = True


class _AnomalyModeState(threading.local):
    enabled = False


grad_state = _GradModeState()
anomaly_state = _AnomalyModeState()
# Old spellings, still imported by code outside the autograd package.
_GradMode = grad_state
_AnomalyMode = anomaly_state


def is_grad_enabled():
    """True when operations are recorded for backward (outside ``no_grad``)."""
    return grad_state.enabled


def is_anomaly_enabled():
    """True inside ``detect_anomaly()``."""
    return anomaly_state.enabled


class _Mode:
    """A context manager that is also a decorator; on a generator function it covers
    the generator's body (each resumption runs under the mode, as in PyTorch)."""

    def _clone(self):
        return self.__class__()

    def __call__(self, func):
        if inspect.isgeneratorfunction(func):
            @functools.wraps(func)
            def generator_wrapper(*args, **kwargs):
                gen = func(*args, **kwargs)
                try:
                    with self._clone():
                        response = gen.send(None)
                    while True:
                        try:
                            request = yield response
                        except GeneratorExit:
                            with self._clone():
                                gen.close()
                            raise
                        except BaseException as err:  # thrown into us: pass it on
                            with self._clone():
                                response = gen.throw(err)
                        else:
                            with self._clone():
                                response = gen.send(request)
                except StopIteration as stop:
                    return stop.value
            return generator_wrapper

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self._clone():
                return func(*args, **kwargs)
        return wrapper


class no_grad(_Mode):
    """Context manager and decorator: nothing inside is recorded for backward.

    Example:
        >>> with mn.no_grad():
        ...     y = model(x)          # y.grad_fn is None, no buffers are kept
    """

    def __enter__(self):
        self.prev = grad_state.enabled
        grad_state.enabled = False
        return self

    def __exit__(self, *exc):
        grad_state.enabled = self.prev
        return False


class enable_grad(no_grad):
    """Context manager and decorator that records operations even inside ``no_grad``."""

    def __enter__(self):
        self.prev = grad_state.enabled
        grad_state.enabled = True
        return self


class set_grad_enabled(_Mode):
    """Turn graph recording on or off: as a call (takes effect at once), a context
    manager (restores the previous mode on exit) or a decorator."""

    def __init__(self, mode):
        self.mode = bool(mode)
        self.prev = grad_state.enabled
        grad_state.enabled = self.mode

    def _clone(self):
        # as a decorator the switch happens per call, not at decoration time
        clone = self.__class__.__new__(self.__class__)
        clone.mode = self.mode
        return clone

    def __enter__(self):
        self.prev = grad_state.enabled
        grad_state.enabled = self.mode
        return self

    def __exit__(self, *exc):
        grad_state.enabled = self.prev
        return False

    def __call__(self, func):
        grad_state.enabled = self.prev     # decorating must not change the current mode
        return super().__call__(func)


class AnomalyError(FloatingPointError):
    """Raised under ``detect_anomaly()`` when an op produces NaN or inf."""


class detect_anomaly(_Mode):
    """Context manager: name the first op whose forward or backward produces NaN/inf.

    Checking every array costs a pass over it, so use it to hunt a NaN, not to train.

    Example:
        >>> with mn.detect_anomaly():
        ...     loss = model(x, training=True).log().sum()
        ...     loss.backward()   # AnomalyError: Function 'Log' returned nan/inf values ...
    """

    def __init__(self, enabled=True):
        self.enabled = bool(enabled)

    def _clone(self):
        return self.__class__(self.enabled)

    def __enter__(self):
        self.prev = anomaly_state.enabled
        anomaly_state.enabled = self.enabled
        return self

    def __exit__(self, *exc):
        anomaly_state.enabled = self.prev
        return False


def check_finite(arrays, what):
    """Raise ``AnomalyError`` when one of ``arrays`` (ndarrays, Tensors or None) holds NaN/inf."""
    for i, a in enumerate(arrays):
        if hasattr(a, "grad_fn"):     # a Tensor
            a = a.data
        if a is None or not isinstance(a, np.ndarray) or a.dtype.kind not in "fc":
            continue
        if not np.all(np.isfinite(a)):
            n_nan = int(np.isnan(a).sum())
            n_inf = int(np.isinf(a).sum())
            raise AnomalyError(f"{what} {i} contains nan/inf values ({n_nan} nan, {n_inf} inf, "
                               f"shape {a.shape}, dtype {a.dtype})")
