"""minnet.functional.SyncBatchNorm in one process: with a reduce that sums nothing it is
NativeBatchNorm (itself checked against NumPy and PyTorch in test_batch_norm.py), and
float64 finite differences agree with its backward. Its sums over ranks are checked against
one process under mpiexec in tests/distributed/test_data_parallel.py (cnn-syncbn)."""
import numpy as np
import pytest

import minnet as mn
import minnet.functional as F


def _alone(buffer):          # one rank: the sum over ranks is the buffer itself
    return buffer


@pytest.mark.parametrize("shape, channels_last", [((6, 3), True), ((4, 3, 5, 2), False),
                                                  ((3, 4, 4, 2), True), ((2, 5, 3, 3), False)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_alone_it_is_native_batch_norm(shape, channels_last, dtype):
    rng = np.random.default_rng(0)
    C = shape[-1] if channels_last else shape[1]
    x = rng.normal(size=shape).astype(dtype)
    g = rng.normal(size=shape).astype(dtype)
    results = []
    for sync in (False, True):
        xt = mn.tensor(x, requires_grad=True)
        w = mn.tensor(np.linspace(0.5, 2, C).astype(dtype), requires_grad=True)
        b = mn.tensor(np.linspace(-1, 1, C).astype(dtype), requires_grad=True)
        rm, rv = np.zeros(C, dtype), np.ones(C, dtype)
        if sync:
            y = F.SyncBatchNorm.apply(xt, w, b, running_mean=rm, running_var=rv, momentum=0.1,
                                      eps=1e-3, channels_last=channels_last, reduce=_alone)
        else:
            y = F.NativeBatchNorm.apply(xt, w, b, running_mean=rm, running_var=rv, training=True,
                                        momentum=0.1, eps=1e-3, channels_last=channels_last)
        y.backward(g)
        results.append([y.data, xt.grad, w.grad, b.grad, rm, rv])
    tol = 1e-12 if dtype == np.float64 else 2e-5
    for native, synced in zip(*results):
        np.testing.assert_allclose(synced, native, rtol=tol, atol=tol)


def test_gradcheck_float64():
    rng = np.random.default_rng(1)
    x = mn.tensor(rng.normal(size=(5, 3, 2, 2)), requires_grad=True)
    w = mn.tensor(rng.uniform(0.5, 2, 3), requires_grad=True)
    b = mn.tensor(rng.normal(size=3), requires_grad=True)
    assert mn.autograd.gradcheck(
        lambda x, w, b: F.SyncBatchNorm.apply(x, w, b, eps=1e-3, reduce=_alone), (x, w, b))


def test_a_share_of_the_batch_returns_dx_in_the_arriving_units():
    # scale = n_local / n_global: the sums are of scale * g, dx comes back per unit of g.
    # With one rank and scale s, the statistics are the same and dx must not change.
    rng = np.random.default_rng(2)
    x, g = rng.normal(size=(6, 4)), rng.normal(size=(6, 4))
    grads = []
    for scale in (1.0, 0.25):
        xt = mn.tensor(x, requires_grad=True)
        F.SyncBatchNorm.apply(xt, None, None, channels_last=True, reduce=_alone, scale=scale).backward(g)
        grads.append(xt.grad)
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-12, atol=1e-12)
