"""The MPI side of ``minnet.distribution``: the only module of minnet that imports mpi4py
(when a ``Communicator`` is made, that is when ``initialize()`` runs under a launcher).

Every collective is started non-blocking and waited for by ``_Communicator.wait``, which
polls, so that a wait can (1) give up after ``timeout`` seconds with a message naming what
it waited for (a rank that died or hangs), and (2) notice that another rank raised: a rank
that raises sends its error to every other rank on a duplicate communicator (``notify``),
and their waits raise ``RemoteRankError`` with it instead of waiting for a step that will
never come.

Gradients and metric states travel as NumPy buffers (``Iallreduce`` in place, no pickle);
only the start-up check and ``predict``'s row counts are small pickled objects.
"""
import os
import pickle
import time

import numpy as np

from minnet.distribution._errors import DistributedTimeoutError, RemoteRankError

__all__ = ["Communicator"]

_ERROR_TAG = 77
_SPIN_SECONDS = 0.05        # how long a wait polls flat out (yielding the core) before it sleeps
_yield = getattr(os, "sched_yield", lambda: time.sleep(0))


class Communicator:
    """``MPI.COMM_WORLD`` with polled, time-limited waits and error propagation.

    Args:
        timeout: seconds a collective may wait for the other ranks (None: forever).
    """

    def __init__(self, timeout=30.0):
        from mpi4py import MPI     # the optional package: imported only here, under a launcher
        self.MPI = MPI
        self.world = MPI.COMM_WORLD
        self.comm = self.world.Dup()       # collectives of minnet only
        self.errors = self.world.Dup()     # error notices (point to point)
        self.rank = self.comm.Get_rank()
        self.size = self.comm.Get_size()
        self.timeout = timeout
        self.failed = False
        self._groups = {}

    # ---------------------------------------------------------------- waiting
    def wait(self, request, what):
        """Wait for ``request``; raise on another rank's error or after ``timeout`` seconds."""
        if request.Test():
            return
        start = time.monotonic()
        spins = 0
        while not request.Test():
            spins += 1
            if spins % 64 == 0:
                self._raise_remote_error()
                waited = time.monotonic() - start
                if self.timeout is not None and waited > self.timeout:
                    self.failed = True
                    raise DistributedTimeoutError(
                        f"rank {self.rank} of {self.size} waited {waited:.0f} s for the other ranks "
                        f"({what}) and gave up: a rank has died, hangs, or runs a different "
                        f"script or data. Raise the limit with "
                        f"mn.distribution.DataParallel(timeout=seconds) if a step is that slow.")
            if spins > 256:
                # Keep polling (MPI progresses only while a rank calls it, so a sleeping
                # waiter delays every message of the collective by its sleep), but give the
                # core to a rank that shares it; a long wait (the others in validation or
                # I/O) sleeps instead of burning the core.
                if time.monotonic() - start < _SPIN_SECONDS:
                    _yield()
                else:
                    time.sleep(0.001)

    def _raise_remote_error(self):
        if self.errors.Iprobe(source=self.MPI.ANY_SOURCE, tag=_ERROR_TAG):
            source, kind, message = self.errors.recv(source=self.MPI.ANY_SOURCE, tag=_ERROR_TAG)
            self.failed = True
            raise RemoteRankError(f"rank {source} raised {kind}: {message}")

    def notify(self, error):
        """Tell every other rank that this one raised ``error`` (once; never blocks)."""
        if self.failed:
            return
        self.failed = True
        notice = (self.rank, type(error).__name__, str(error))
        self._notices = [self.errors.isend(notice, dest=r, tag=_ERROR_TAG)
                         for r in range(self.size) if r != self.rank]

    # ---------------------------------------------------------------- collectives
    def start_allreduce(self, buffer, comm=None):
        """Start summing ``buffer`` (a contiguous ndarray) over the ranks, in place."""
        return (comm or self.comm).Iallreduce(self.MPI.IN_PLACE, buffer, op=self.MPI.SUM)

    def allreduce(self, buffer, what, comm=None):
        self.wait(self.start_allreduce(buffer, comm), what)
        return buffer

    def allreduce_max(self, value, what):
        buffer = np.array([value], dtype=np.uint64)
        self.wait(self.comm.Iallreduce(self.MPI.IN_PLACE, buffer, op=self.MPI.MAX), what)
        return int(buffer[0])

    def broadcast(self, buffer, what):
        """Overwrite ``buffer`` (a contiguous ndarray) with rank 0's, in place."""
        self.wait(self.comm.Ibcast(buffer, root=0), what)
        return buffer

    def allgather_array(self, array, what):
        """Every rank's ``array`` (same dtype, same trailing shape) joined along axis 0, rank order."""
        array = np.ascontiguousarray(array)
        rows = np.zeros(self.size, dtype=np.int64)
        rows[self.rank] = len(array)
        self.allreduce(rows, what)
        row_size = int(np.prod(array.shape[1:], dtype=np.int64))
        counts = rows * row_size
        out = np.empty((int(rows.sum()),) + array.shape[1:], dtype=array.dtype)
        displacements = np.concatenate([[0], np.cumsum(counts)[:-1]])
        self.wait(self.comm.Iallgatherv(array.reshape(-1), [out.reshape(-1), (counts, displacements)]),
                  what)
        return out, rows

    def allgather_object(self, value, what):
        """Every rank's small picklable ``value``, in rank order."""
        data = np.frombuffer(pickle.dumps(value), dtype=np.uint8)
        joined, rows = self.allgather_array(data, what)
        bounds = np.concatenate([[0], np.cumsum(rows)])
        return [pickle.loads(joined[bounds[r]:bounds[r + 1]].tobytes()) for r in range(self.size)]

    def broadcast_object(self, value, what):
        """Rank 0's small picklable ``value`` on every rank."""
        return self.allgather_object(value if self.rank == 0 else None, what)[0]

    def group(self, n_ranks):
        """A communicator of ranks ``0 .. n_ranks - 1`` (made collectively, once per size)."""
        if n_ranks >= self.size:
            return self.comm
        if n_ranks not in self._groups:
            self._groups[n_ranks] = self.comm.Split(0 if self.rank < n_ranks else self.MPI.UNDEFINED,
                                                    self.rank)
        return self._groups[n_ranks]
