"""Data-parallel training over MPI, named and shaped like Keras 3's ``keras.distribution``.

The same script runs as one process or as N, unchanged below two lines::

    import minnet as mn
    mn.distribution.initialize()                                    # MPI; a no-op without mpiexec
    mn.distribution.set_distribution(mn.distribution.DataParallel())
    model.fit(x, y, batch_size=256)          # the GLOBAL batch: each rank trains on its share

and is started with ``mpiexec -n 4 python train.py`` (``srun python train.py`` under SLURM).
N ranks with global batch B end with the same weights as one process with batch B (to
float rounding; docs/distributed.md says what is synchronised and what is not).

mpi4py (``pip install "minnet[mpi]"``) is imported only by ``initialize()``, and only when
the script runs under an MPI launcher. ``set_distribution`` stores the object in
``mn.config``, where the trainer and the callbacks find it: they call only the small
interface below (shard bounds, all-reduce, broadcast, gather, ``is_chief``), so nothing
under ``minnet.trainers`` imports MPI.
"""
import contextlib
import os

from minnet import config
from minnet._checks import check_int
from minnet.distribution import _mpi
from minnet.distribution._errors import DistributedTimeoutError, RemoteRankError

__all__ = ["initialize", "set_distribution", "distribution", "list_devices", "get_device_count",
           "DataParallel", "RemoteRankError", "DistributedTimeoutError"]

# Set by the MPI launchers (MPICH/Intel MPI's hydra, Open MPI, PMIx, SLURM's srun --mpi).
_LAUNCHER_VARIABLES = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS")
_state = {"communicator": None, "initialized": False}


def _under_launcher():
    return any(os.environ.get(name) for name in _LAUNCHER_VARIABLES)


def initialize(job_addresses=None, num_processes=None, process_id=None):
    """Start MPI when the script runs under ``mpiexec``/``srun``; without one, do nothing.

    Args:
        job_addresses: Keras's argument for JAX's coordinator; MPI's launcher finds the
            ranks itself, so it must be None.
        num_processes, process_id: when given, checked against what the launcher started.

    Returns:
        None. ``list_devices()`` then names the ranks.
    """
    if job_addresses is not None:
        raise ValueError(f"Invalid value for argument `job_addresses`: minnet's distribution runs "
                         f"on MPI, whose launcher (mpiexec, srun) connects the ranks: expected None. "
                         f"Received: job_addresses={job_addresses!r}")
    if not _state["initialized"] and _under_launcher():
        _state["communicator"] = _mpi.Communicator()
    _state["initialized"] = True
    size, rank = _world()
    if num_processes is not None and check_int("num_processes", num_processes, minimum=1) != size:
        raise ValueError(f"Invalid value for argument `num_processes`: the launcher started {size} "
                         f"process(es). Received: num_processes={num_processes}")
    if process_id is not None and check_int("process_id", process_id, minimum=0) != rank:
        raise ValueError(f"Invalid value for argument `process_id`: this process is rank {rank}. "
                         f"Received: process_id={process_id}")


def _world():
    comm = _state["communicator"]
    return (1, 0) if comm is None else (comm.size, comm.rank)


def list_devices(device_type=None):
    """The ranks as device names, ``["cpu:0", "cpu:1", ...]`` (one CPU process per rank)."""
    if device_type not in (None, "cpu", "CPU"):
        raise ValueError(f"Invalid value for argument `device_type`: minnet runs on CPUs: expected "
                         f"None or 'cpu'. Received: device_type={device_type!r}")
    return [f"cpu:{rank}" for rank in range(_world()[0])]


def get_device_count(device_type=None):
    """The number of ranks (``len(list_devices())``)."""
    return len(list_devices(device_type))


def set_distribution(value):
    """Make ``value`` (a ``DataParallel``, or None for one process) the distribution ``fit`` uses."""
    if value is not None and not isinstance(value, DataParallel):
        raise TypeError(f"Invalid value for argument `value`: expected a "
                        f"mn.distribution.DataParallel or None. Received: {type(value).__name__}")
    config.store_distribution(value)


def distribution():
    """The distribution set by ``set_distribution`` (None when none is)."""
    return config.current_distribution()


class DataParallel:
    """Data parallelism: every rank holds the whole model and trains on its share of each batch.

    Rank 0's weights and optimizer state are broadcast when ``fit`` starts; each global batch
    is split into contiguous shards (the first ``B % N`` ranks get one sample more); the
    gradients, summed over the ranks in a few large buckets while backward still runs, give
    every rank the global mean. Metrics, losses and History are reduced over the ranks.

    Args:
        devices: Keras's argument: None, or the list ``list_devices()`` returns.
        timeout: seconds a rank waits for the others before it stops with a clear error
            (a rank that died or hangs); None waits forever. Default 30.
        bucket_mb: size of a gradient bucket in MiB (the all-reduce of one bucket starts as
            soon as backward has filled it).

    Attributes:
        num_processes, process_id: the number of ranks and this one's (1 and 0 without MPI).
        is_chief: rank 0, the rank that prints progress and writes files.
    """

    def __init__(self, devices=None, timeout=30.0, bucket_mb=1.0, device_mesh=None, auto_shard_dataset=True):
        if not _state["initialized"]:
            initialize()
        if devices is not None and list(devices) != list_devices():
            raise ValueError(f"Invalid value for argument `devices`: expected None or "
                             f"{list_devices()} (one per rank). Received: devices={devices!r}")
        if device_mesh is not None:
            raise ValueError("Invalid value for argument `device_mesh`: minnet's DataParallel uses "
                             "one axis, the ranks: expected None. Received: a device mesh")
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                    or timeout <= 0):
            raise ValueError(f"Invalid value for argument `timeout`: expected None or seconds > 0. "
                             f"Received: timeout={timeout!r}")
        if isinstance(bucket_mb, bool) or not isinstance(bucket_mb, (int, float)) or bucket_mb <= 0:
            raise ValueError(f"Invalid value for argument `bucket_mb`: expected a number > 0. "
                             f"Received: bucket_mb={bucket_mb!r}")
        self.timeout = None if timeout is None else float(timeout)
        self.bucket_bytes = int(bucket_mb * (1 << 20))
        self.auto_shard_dataset = bool(auto_shard_dataset)
        self._comm = _state["communicator"]
        if self._comm is not None:
            self._comm.timeout = self.timeout
        self.num_processes, self.process_id = _world()
        self.is_chief = self.process_id == 0
        # Set by fit for the length of one step: the ranks holding samples (the group
        # synchronized BatchNormalization sums over) and this rank's share of the batch.
        self.step_group = None
        self.step_scale = 1.0

    def __repr__(self):
        return (f"DataParallel(num_processes={self.num_processes}, process_id={self.process_id}, "
                f"timeout={self.timeout})")

    @contextlib.contextmanager
    def scope(self):
        """``with strategy.scope():`` this distribution inside the block (Keras's method)."""
        previous = config.current_distribution()
        set_distribution(self)
        try:
            yield self
        finally:
            config.store_distribution(previous)

    # ---------------------------------------------------------------- the trainer's interface
    def shard_bounds(self, n_samples, rank=None):
        """``(start, stop)`` of ``rank``'s (default: this rank's) rows of a global batch of ``n_samples``."""
        rank = self.process_id if rank is None else rank
        base, extra = divmod(int(n_samples), self.num_processes)
        start = rank * base + min(rank, extra)
        return start, start + base + (rank < extra)

    def start_allreduce(self, buffer, group=None):
        """Start summing the contiguous ndarray ``buffer`` over the ranks in place; ``wait`` ends it."""
        return self._comm.start_allreduce(buffer, group)

    def wait(self, request, what):
        self._comm.wait(request, what)

    def allreduce(self, buffer, what, group=None):
        """Sum ``buffer`` over the ranks (of ``group``, default all), in place; returns it."""
        return self._comm.allreduce(buffer, what, group)

    def allreduce_max(self, value, what):
        return self._comm.allreduce_max(value, what)

    def broadcast(self, buffer, what):
        """Overwrite the contiguous ndarray ``buffer`` with rank 0's, in place."""
        return self._comm.broadcast(buffer, what)

    def broadcast_object(self, value, what):
        return self._comm.broadcast_object(value, what)

    def allgather_array(self, array, what):
        """``(joined, rows)``: every rank's rows joined in rank order, and each rank's row count."""
        return self._comm.allgather_array(array, what)

    def allgather_object(self, value, what):
        return self._comm.allgather_object(value, what)

    def group(self, n_ranks):
        """A group of ranks ``0 .. n_ranks - 1`` for ``allreduce`` (all ranks must ask together)."""
        return self._comm.group(n_ranks)

    def notify(self, error):
        """Tell the other ranks this one raised ``error``, so they stop too."""
        self._comm.notify(error)
