"""sum/mean (threaded kernel of minnet/_ext/reduce_kernels.pyx), sort/argsort/topk (radix argsort
of minnet/_ext/sort_kernels.pyx), softmax/log-softmax backward on gradient views and the fused
logsumexp backward, as Tensor operations: NumPy reference, PyTorch parity, float64
gradcheck and gradgradcheck, and the same bits for any thread count."""
import numpy as np
import pytest

import minnet as mn

RNG = np.random.default_rng(11)
DTYPES = [np.float32, np.float64]


@pytest.fixture
def restore_threads():
    old = mn.get_num_threads()
    yield
    mn.set_num_threads(old)


def _ties(shape, dtype):
    x = RNG.standard_normal(shape).astype(dtype)
    flat = x.reshape(-1)
    flat[::4] = 0.5
    flat[::9] = -0.0
    flat[::10] = 0.0
    return x


# --------------------------------------------------------------------------- sum / mean

REDUCE_CASES = [((6, 9), None), ((6, 9), 0), ((6, 9), -1), ((3, 7, 4), 1), ((3, 7, 4), -3),
                ((3, 7, 4), (0, 2)), ((5,), 0), ((), None)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,dim", REDUCE_CASES)
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("op", ["sum", "mean"])
def test_sum_mean_match_numpy(dtype, shape, dim, keepdim, op):
    x = RNG.standard_normal(shape).astype(dtype)
    for a in (x, x.T):                                # contiguous, and a transposed view
        got = getattr(mn.tensor(a), op)(dim, keepdim).data
        expected = getattr(np, op)(a.astype(np.float64), axis=dim, keepdims=keepdim)
        scale = getattr(np, op)(np.abs(a.astype(np.float64)), axis=dim, keepdims=keepdim)
        assert got.dtype == a.dtype and got.shape == np.shape(expected)
        # sums cancel: the error is bounded at the scale of the sum of |x|
        assert np.all(np.abs(got - expected) <= (1e-6 if dtype == np.float32 else 1e-14) * scale)


def test_sum_over_a_leading_axis_is_numpys_result_bit_for_bit():
    x = RNG.standard_normal((300, 200)).astype(np.float32)
    np.testing.assert_array_equal(mn.tensor(x).sum(0).data, x.sum(0))
    np.testing.assert_array_equal(mn.tensor(x).mean(0).data, x.mean(0))


def test_sum_dtype_argument_and_empty():
    x = RNG.standard_normal((4, 5)).astype(np.float32)
    assert mn.tensor(x).sum(0, dtype=np.float64).dtype == np.float64
    empty = mn.tensor(np.empty((0, 3), np.float32))
    np.testing.assert_array_equal(empty.sum(0).data, np.zeros(3, np.float32))
    assert empty.sum().item() == 0


@pytest.mark.parametrize("shape,dim", REDUCE_CASES[:-1])
@pytest.mark.parametrize("op", ["sum", "mean"])
def test_sum_mean_torch_parity_and_gradients(torch, shape, dim, op):
    x = RNG.standard_normal(shape).astype(np.float32)
    w = RNG.standard_normal(np.shape(getattr(np, op)(x, axis=dim))).astype(np.float32)
    m = mn.tensor(x, requires_grad=True)
    t = torch.tensor(x, requires_grad=True)
    tdim = tuple(range(len(shape))) if dim is None else dim
    (getattr(m, op)(dim) * mn.tensor(w)).sum().backward()
    (getattr(t, op)(tdim) * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(getattr(m, op)(dim).data, getattr(t, op)(tdim).detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(m.grad, t.grad.numpy(), rtol=1e-6)
    x64 = mn.tensor(x.astype(np.float64), requires_grad=True)
    assert mn.gradcheck(lambda a: getattr(a, op)(dim), (x64,))
    assert mn.autograd.gradgradcheck(lambda a: getattr(a, op)(dim) ** 2, (x64,))


@pytest.mark.parametrize("dtype", DTYPES)
def test_sum_mean_thread_count_does_not_change_results(restore_threads, dtype):
    x = RNG.standard_normal((300, 250)).astype(dtype)
    results = []
    for threads in (1, 2):
        mn.set_num_threads(threads)
        t = mn.tensor(x)
        results.append([r.data.tobytes() for r in (t.sum(), t.sum(0), t.sum(1), t.mean(), t.mean(0), t.mean(1))])
    assert results[0] == results[1]


# --------------------------------------------------------------------------- sort / argsort / topk

SORT_CASES = [((7,), 0), ((6, 9), 1), ((6, 9), 0), ((3, 7, 4), 1), ((3, 7, 4), -1)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,dim", SORT_CASES)
@pytest.mark.parametrize("descending", [False, True])
def test_sort_torch_parity_with_ties(torch, dtype, shape, dim, descending):
    x = _ties(shape, dtype)
    values, index = mn.tensor(x).sort(dim, descending=descending)
    tv, ti = torch.tensor(x).sort(stable=True, dim=dim, descending=descending)
    np.testing.assert_array_equal(values.data, tv.numpy())
    np.testing.assert_array_equal(index.data, ti.numpy())
    np.testing.assert_array_equal(mn.tensor(x).argsort(dim, descending=descending).data,
                                  torch.tensor(x).argsort(stable=True, dim=dim, descending=descending).numpy())


def test_sort_nan_and_infinities_torch_parity(torch):
    x = np.array([[1.0, np.nan, -np.inf, 0.0, np.inf, np.nan, -1.0]], np.float32)
    for descending in (False, True):
        values, index = mn.tensor(x).sort(1, descending=descending)
        tv, ti = torch.tensor(x).sort(stable=True, dim=1, descending=descending)
        np.testing.assert_array_equal(values.data, tv.numpy())
        np.testing.assert_array_equal(index.data, ti.numpy())


@pytest.mark.parametrize("largest", [True, False])
def test_topk_torch_parity(torch, largest):
    x = _ties((5, 12), np.float32)
    values, index = mn.tensor(x).topk(4, 1, largest=largest)
    tv, ti = torch.tensor(x).topk(4, 1, largest=largest)
    np.testing.assert_array_equal(values.data, tv.numpy())
    # torch's topk does not promise an order among ties: compare the values they pick
    np.testing.assert_array_equal(np.take_along_axis(x, index.data, 1), tv.numpy())


def test_sort_and_topk_gradients():
    x = mn.tensor(RNG.standard_normal((4, 6)), requires_grad=True)
    assert mn.gradcheck(lambda a: a.sort(1)[0], (x,))
    assert mn.gradcheck(lambda a: a.sort(0, descending=True)[0], (x,))
    assert mn.gradcheck(lambda a: a.topk(3, 1)[0], (x,))
    assert mn.autograd.gradgradcheck(lambda a: a.sort(1)[0] ** 2, (x,))


def test_sort_of_other_dtypes_uses_numpys_stable_sort():
    x = np.array([[3, 1, 2, 1], [0, 0, -1, 5]], np.int64)
    np.testing.assert_array_equal(mn.tensor(x).argsort(1).data, np.argsort(x, axis=1, kind="stable"))
    np.testing.assert_array_equal(mn.tensor(x).argsort(1, descending=True).data, [[0, 2, 1, 3], [3, 0, 1, 2]])


def test_sort_thread_count_does_not_change_results(restore_threads):
    x = _ties((200, 300), np.float32)
    results = []
    for threads in (1, 2):
        mn.set_num_threads(threads)
        results.append([mn.tensor(x).argsort(d, descending=s).data.tobytes() for d in (0, 1) for s in (False, True)])
    assert results[0] == results[1]


# --------------------------------------------------------------------------- softmax / logsumexp backward

def _upstream(kind, m, y, d, w):
    """A loss over y whose gradient reaches the op in each layout: one value (.sum()), dense,
    one value per row (a sum over the softmax axis), one row for all rows (a sum over dim 0)."""
    if kind == "sum":
        return y.sum()
    if kind == "dense":
        return (y * m.tensor(w)).sum()
    if kind == "sum over dim":
        return (y.sum(d) * m.tensor(w.sum(d))).sum()
    return (y.sum(0) * m.tensor(w.sum(0))).sum()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,dim", [((6, 7), -1), ((6, 7), 0), ((3, 4, 5), 1), ((3, 4, 5), -1)])
@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("kind", ["sum", "dense", "sum over dim", "sum over dim 0"])
def test_softmax_backward_torch_parity(torch, dtype, shape, dim, log, kind):
    x = RNG.standard_normal(shape).astype(dtype)
    w = RNG.standard_normal(shape).astype(dtype)
    m = mn.tensor(x, requires_grad=True)
    t = torch.tensor(x, requires_grad=True)
    _upstream(kind, mn, m.log_softmax(dim) if log else m.softmax(dim), dim, w).backward()
    _upstream(kind, torch, t.log_softmax(dim) if log else t.softmax(dim), dim, w).backward()
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(m.grad, t.grad.numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,dim", [((6, 7), 1), ((6, 7), 0), ((3, 4, 5), 1), ((5,), 0)])
@pytest.mark.parametrize("keepdim", [False, True])
def test_logsumexp_backward_torch_parity(torch, dtype, shape, dim, keepdim):
    x = (3 * RNG.standard_normal(shape)).astype(dtype)
    m = mn.tensor(x, requires_grad=True)
    t = torch.tensor(x, requires_grad=True)
    w = RNG.standard_normal(t.logsumexp(dim, keepdim).shape).astype(dtype)
    (m.logsumexp(dim, keepdim) * mn.tensor(w)).sum().backward()
    (t.logsumexp(dim, keepdim) * torch.tensor(w)).sum().backward()
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(m.grad, t.grad.numpy(), **tol)
    m.grad = None
    m.logsumexp(dim, keepdim).sum().backward()             # a broadcast gradient
    np.testing.assert_allclose(m.grad, torch.softmax(torch.tensor(x), dim).numpy(), **tol)


def test_softmax_logsumexp_gradcheck_and_gradgradcheck():
    x = mn.tensor(RNG.standard_normal((4, 5)), requires_grad=True)
    w = mn.tensor(RNG.standard_normal((4, 5)))
    for fn in (lambda a: a.softmax(1), lambda a: a.log_softmax(0), lambda a: a.logsumexp(1),
               lambda a: a.softmax(1).sum(0), lambda a: a.logsumexp(0, True) * 2):
        assert mn.gradcheck(fn, (x,))
        assert mn.autograd.gradgradcheck(lambda a: (fn(a) ** 2).sum(), (x,))
        assert mn.autograd.gradgradcheck(lambda a: fn(a) * fn(a).shape[-1], (x,))
    assert mn.autograd.gradgradcheck(lambda a: (a.softmax(1) * w).sum(), (x,))


@pytest.mark.parametrize("dtype", DTYPES)
def test_softmax_logsumexp_thread_count_does_not_change_results(restore_threads, dtype):
    x = RNG.standard_normal((300, 200)).astype(dtype)
    results = []
    for threads in (1, 2):
        mn.set_num_threads(threads)
        grads = []
        for fn in (lambda a: a.softmax(1).sum(), lambda a: a.log_softmax(0).sum(),
                   lambda a: a.logsumexp(1).sum(), lambda a: (a.softmax(1).sum(0) ** 2).sum()):
            m = mn.tensor(x, requires_grad=True)
            out = fn(m)
            out.backward()
            grads.append(out.data.tobytes() + m.grad.tobytes())
        results.append(grads)
    assert results[0] == results[1]
