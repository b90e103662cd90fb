"""Faults under data parallelism: a rank that raises stops every rank with its error; a rank
that stops answering makes the others give up after the timeout, with a message.

These run last under mpiexec (pytest takes files in order): a fault leaves collectives
unpaired, so each test ends by giving the ranks a fresh communicator, as a new run would.
"""
import time

import numpy as np
import pytest

import minnet as mn
from minnet import distribution as dist_api

L = mn.layers


@pytest.fixture
def ranks():
    dist_api.initialize()
    if dist_api.DataParallel().num_processes == 1:
        pytest.skip("needs several ranks (run under mpiexec)")
    mn.set_num_threads(1)
    yield
    dist_api.set_distribution(None)
    from minnet.distribution import _mpi
    dist_api._state["communicator"] = _mpi.Communicator()       # a fresh start for the next test


class _Failing(mn.models.Sequential):
    def train_step(self, data):
        if dist_api.distribution().process_id == 1 and self.optimizer.iterations == 3:
            raise RuntimeError("boom in rank 1's step 4")
        return super().train_step(data)


def _model(cls=mn.models.Sequential):
    mn.manual_seed(0)
    model = cls([L.Input((4,)), L.Dense(3)])
    model.compile(optimizer="sgd", loss="mse")
    return model


def test_a_rank_that_raises_stops_every_rank_with_its_error(ranks):
    dist_api.set_distribution(dist_api.DataParallel(timeout=20))
    rank = dist_api.distribution().process_id
    x = np.ones((40, 4))
    y = np.zeros((40, 3))
    start = time.monotonic()
    expected = (RuntimeError, "boom in rank 1's step 4") if rank == 1 else \
        (dist_api.RemoteRankError, "rank 1 raised RuntimeError: boom in rank 1's step 4")
    with pytest.raises(expected[0], match=expected[1]):
        _model(_Failing).fit(x, y, batch_size=4, epochs=1, verbose=0)
    assert time.monotonic() - start < 10          # stopped by the notice, not by the timeout


class _TwoBackwards(mn.models.Sequential):
    def train_step(self, data):
        x, y, _ = mn.utils.unpack_x_y_sample_weight(data)
        self.optimizer.zero_grad()
        for _ in range(2):
            self.compute_loss(x, y, self(x, training=True)).backward()
        self.optimizer.step()
        return {}


def test_two_backwards_in_one_step_are_refused_by_name(ranks):
    # Its bucket's all-reduce already runs when the second backward would write into it.
    dist_api.set_distribution(dist_api.DataParallel(timeout=20))
    mn.manual_seed(0)
    model = _TwoBackwards([L.Input((5,)), L.Dense(3)])
    model.compile(optimizer="sgd", loss="mse")
    with pytest.raises((RuntimeError, dist_api.RemoteRankError), match="backward\\(\\) more than once"):
        model.fit(np.ones((8, 5)), np.zeros((8, 3)), batch_size=4, epochs=1, verbose=0)


def test_a_rank_that_stops_answering_ends_in_a_timeout_with_a_message(ranks):
    dist_api.set_distribution(dist_api.DataParallel(timeout=1.5))
    if dist_api.distribution().process_id == 1:
        time.sleep(3.5)                 # a rank that hangs (or died): it never joins the fit
        return
    with pytest.raises(dist_api.DistributedTimeoutError, match=r"waited \d+ s for the other ranks"):
        _model().fit(np.ones((8, 4)), np.zeros((8, 3)), batch_size=4, epochs=1, verbose=0)
