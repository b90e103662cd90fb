"""Stops between optimizer steps, never inside one.

``fit`` runs each ``train_step`` between ``StepGuard.begin_step()`` and ``end_step()``. A Ctrl-C (SIGINT) that arrives
during a step is held until the step has finished (every parameter updated, the optimizer's
step counter advanced), then raised as ``KeyboardInterrupt``; one that arrives between
steps (while data loads or callbacks run) is raised at once. ``stop_training`` and an
exception in a callback are seen between steps by construction: callbacks run there.

Only the main thread can receive signals, so elsewhere the guard does nothing; a handler
installed by the user (not Python's default) is left alone.
"""
import signal
import threading

__all__ = ["StepGuard"]


class StepGuard:
    """Defers SIGINT while a step runs (``with guard:`` around the loop, ``begin_step()`` /
    ``end_step()`` around each step)."""

    def __init__(self):
        self._in_step = False
        self._pending = False
        self._previous = None
        self._installed = False

    def _handler(self, signum, frame):
        if self._in_step:
            self._pending = True
            return
        raise KeyboardInterrupt

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            try:
                current = signal.getsignal(signal.SIGINT)
            except (ValueError, OSError):
                current = None
            if current is signal.default_int_handler:
                self._previous = current
                signal.signal(signal.SIGINT, self._handler)
                self._installed = True
        return self

    def __exit__(self, *exc_info):
        self._in_step = False
        self._pending = False
        if self._installed:
            signal.signal(signal.SIGINT, self._previous)
            self._installed = False
        return False

    def begin_step(self):
        """A step starts: hold SIGINT until ``end_step``."""
        self._in_step = True

    def end_step(self):
        """The step is complete: raise KeyboardInterrupt now if a SIGINT came during it.

        An exception inside the step skips this call; ``__exit__`` then clears the flag.
        """
        self._in_step = False
        if self._pending:
            self._pending = False
            raise KeyboardInterrupt
