"""Fork safety (#31 item 1): a child made by fork() after minnet's kernels ran on 2+ threads
works, on one thread, and computes the same numbers as the parent; PyDataset's ``workers``
read batches in threads (Keras's meaning) and ``use_multiprocessing=True`` is refused.

Every child runs under a timeout, so a regression (libgomp's pool hanging in the child) fails
the test instead of hanging pytest."""
import multiprocessing
import os
import warnings

import numpy as np
import pytest

import minnet as mn
from minnet._ext import _openmp

FORK = "fork" in multiprocessing.get_all_start_methods()
needs_fork = pytest.mark.skipif(not FORK, reason="no fork start method on this platform")
TIMEOUT = 60      # seconds a child may take before the test calls it a hang


@pytest.fixture(autouse=True)
def _threads_and_determinism():
    threads = mn.get_num_threads()
    deterministic = mn.config.is_deterministic()
    mn.config.set_deterministic(True)     # same bits at 1 thread (child) and 2 (parent)
    yield
    mn.config.set_deterministic(deterministic)
    mn.set_num_threads(threads)


def _models():
    mn.manual_seed(3)
    conv = mn.layers.Conv2D(16, 3)
    dense = mn.layers.Dense(64)
    rng = np.random.default_rng(0)
    x_conv = rng.standard_normal((64, 16, 16, 8)).astype("float32")
    x_dense = rng.standard_normal((512, 256)).astype("float32")
    return conv, dense, x_conv, x_dense


_PARENT = {}


def _child(queue, raise_threads):
    conv, dense, x_conv, x_dense = _PARENT["models"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if raise_threads:
            mn.set_num_threads(2)
            mn.set_num_threads(3)
        threads = mn.get_num_threads()
        y_conv, y_dense = conv(x_conv).numpy(), dense(x_dense).numpy()
    queue.put((threads, y_conv, y_dense, [str(w.message) for w in caught
                                          if issubclass(w.category, RuntimeWarning)]))


def _run_child(raise_threads):
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    process = context.Process(target=_child, args=(queue, raise_threads))
    process.start()
    try:
        return queue.get(timeout=TIMEOUT)
    except Exception:        # queue.Empty: the child hung or died
        pytest.fail(f"the forked child gave no result within {TIMEOUT} s (exit code "
                    f"{process.exitcode}): its first kernel call hung")
    finally:
        process.join(5)
        if process.is_alive():
            process.kill()
            process.join()


@needs_fork
@pytest.mark.parametrize("raise_threads", [False, True], ids=["as_forked", "asks_for_more_threads"])
def test_a_forked_child_computes_the_parents_numbers(raise_threads):
    mn.set_num_threads(2)
    conv, dense, x_conv, x_dense = _models()
    want_conv, want_dense = conv(x_conv).numpy(), dense(x_dense).numpy()   # a 2-thread team ran
    _PARENT["models"] = (conv, dense, x_conv, x_dense)
    threads, y_conv, y_dense, messages = _run_child(raise_threads)
    np.testing.assert_array_equal(y_conv, want_conv)
    np.testing.assert_array_equal(y_dense, want_dense)
    if _openmp.openmp_enabled():
        assert threads == 1
        if raise_threads:        # warned once, not once per call
            assert len(messages) == 1 and "stays at 1 thread" in messages[0]
            assert "spawn" in messages[0]
    assert mn.get_num_threads() == 2      # the parent keeps its threads


@pytest.mark.slow_once          # a fresh interpreter: about 2 s
@needs_fork
def test_a_child_of_a_single_threaded_parent_keeps_its_thread_choice():
    # No team of 2+ threads ever ran in this fresh interpreter, so the child's pool is intact.
    code = ("import os, minnet as mn, numpy as np\n"
            "mn.set_num_threads(1)\n"
            "mn.layers.Dense(4)(np.ones((2, 3), 'float32'))\n"
            "pid = os.fork()\n"
            "if pid == 0:\n"
            "    mn.set_num_threads(2)\n"
            "    os._exit(0 if mn.get_num_threads() == 2 else 3)\n"
            "_, status = os.waitpid(pid, 0)\n"
            "raise SystemExit(os.waitstatus_to_exitcode(status))\n")
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("MINNET_NUM_THREADS", None)
    result = subprocess.run([sys.executable, "-c", code], env=env, timeout=TIMEOUT,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


class _Batches(mn.utils.PyDataset):
    def __init__(self, n, **kwargs):
        super().__init__(**kwargs)
        self.n = n
        self.calls = []

    def __len__(self):
        return self.n

    def __getitem__(self, index):
        self.calls.append(index)
        x = np.full((4, 3), index, "float32")
        return x, x[:, :1] * 2.0


def test_pydataset_workers_read_in_threads_and_keep_the_order():
    def trained(workers):
        mn.manual_seed(0)
        model = mn.Sequential([mn.layers.Input((3,)), mn.layers.Dense(1)])
        model.compile("sgd", "mse")
        data = _Batches(9, workers=workers, max_queue_size=4)
        model.fit(data, epochs=2, verbose=0)
        return model.get_weights(), sorted(data.calls)

    (w1, calls1), (w3, calls3) = trained(1), trained(3)
    for a, b in zip(w1, w3):
        np.testing.assert_array_equal(a, b)      # same batches, same order
    assert calls1 == calls3 == sorted(list(range(9)) * 2)


def test_pydataset_use_multiprocessing_is_refused_with_the_reason():
    with pytest.raises(ValueError, match="use_multiprocessing.*threads"):
        _Batches(3, use_multiprocessing=True, workers=2)
    assert _Batches(3, use_multiprocessing=False, workers=2).workers == 2
