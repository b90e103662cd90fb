"""The errors a data-parallel run raises (apart from mpi4py, so they import without it)."""

__all__ = ["RemoteRankError", "DistributedTimeoutError"]


class RemoteRankError(RuntimeError):
    """Another rank raised; this rank stops with that rank's error (the message names it)."""


class DistributedTimeoutError(TimeoutError):
    """A rank waited longer than ``DataParallel(timeout=...)`` for the others."""
