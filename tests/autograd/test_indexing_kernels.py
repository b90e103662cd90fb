"""The gather / scatter-add / index-select / index-add / cumsum kernels (minnet/_ext/indexing_kernels.pyx)
and the ops on them: NumPy reference, float64 gradcheck, PyTorch parity, and the same bits
for any thread count."""
import numpy as np
import pytest

import minnet as mn
from minnet._ext import _base, indexing_kernels

RNG = np.random.default_rng(7)
DTYPES = [np.float32, np.float64]
# (shape, dim): last dim (inner = 1), first dim (outer = 1, columns split in blocks),
# a middle dim, and wide rows (inner > 64, so small outer splits columns)
SHAPES = [((6, 9), 1), ((5, 300), 0), ((3, 7, 4), 1), ((2, 5, 130), 1), ((4, 3, 2, 5), 2)]


@pytest.fixture
def parallel_always():
    old = _base.set_parallel_min(0)     # thread teams even on tiny arrays
    yield
    _base.set_parallel_min(old)


@pytest.fixture
def restore_threads():
    old = mn.get_num_threads()
    yield
    mn.set_num_threads(old)


def _as_3d(a, dim):
    return a.reshape(int(np.prod(a.shape[:dim])), a.shape[dim], int(np.prod(a.shape[dim + 1:])))


def _reference_scatter_add(out, dim, index, src):
    out = out.astype(np.float64)
    for pos in np.ndindex(*index.shape):
        target = list(pos)
        target[dim] = index[pos] % out.shape[dim]
        out[tuple(target)] += src[pos]
    return out


# --------------------------------------------------------------------------- NumPy reference

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, dim", SHAPES)
def test_gather_and_scatter_add_kernels_match_numpy(shape, dim, dtype, parallel_always):
    src = RNG.standard_normal(shape).astype(dtype)
    index_shape = shape[:dim] + (shape[dim] + 3,) + shape[dim + 1:]
    index = RNG.integers(-shape[dim], shape[dim], index_shape)        # negatives and repeats
    out = np.empty(index_shape, dtype)
    assert indexing_kernels.gather(_as_3d(src, dim), _as_3d(index, dim), _as_3d(out, dim), n_threads=2) == 0
    np.testing.assert_array_equal(out, np.take_along_axis(src, index % shape[dim], axis=dim))

    grad = RNG.standard_normal(index_shape).astype(dtype)
    acc = np.zeros(shape, dtype)
    assert indexing_kernels.scatter_add(_as_3d(grad, dim), _as_3d(index, dim), _as_3d(acc, dim), n_threads=2) == 0
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(acc, _reference_scatter_add(np.zeros(shape), dim, index, grad), rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, dim", SHAPES)
def test_index_select_index_add_and_cumsum_kernels_match_numpy(shape, dim, dtype, parallel_always):
    src = RNG.standard_normal(shape).astype(dtype)
    index = RNG.integers(0, shape[dim], 2 * shape[dim] + 1)
    out = np.empty(shape[:dim] + (index.size,) + shape[dim + 1:], dtype)
    indexing_kernels.index_select(_as_3d(src, dim), index, _as_3d(out, dim), n_threads=2)
    np.testing.assert_array_equal(out, np.take(src, index, axis=dim))

    acc = np.zeros(shape, dtype)
    indexing_kernels.index_add(_as_3d(out, dim), index, _as_3d(acc, dim), n_threads=2)
    expected = np.zeros(shape)
    np.add.at(np.moveaxis(expected, dim, 0), index, np.moveaxis(out.astype(np.float64), dim, 0))
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(acc, expected, rtol=tol, atol=tol)

    running = np.empty(shape, dtype)
    indexing_kernels.cumsum(_as_3d(src, dim), _as_3d(running, dim), reverse=False, n_threads=2)
    np.testing.assert_allclose(running, np.cumsum(src.astype(np.float64), axis=dim), rtol=tol, atol=tol)
    indexing_kernels.cumsum(_as_3d(src, dim), _as_3d(running, dim), reverse=True, n_threads=2)
    flipped = np.flip(np.cumsum(np.flip(src.astype(np.float64), dim), axis=dim), dim)
    np.testing.assert_allclose(running, flipped, rtol=tol, atol=tol)


def test_kernels_read_strided_and_broadcast_inputs_as_they_are():
    base = RNG.standard_normal((8, 6))
    transposed = base.T                                      # (6, 8), strides swapped
    index = RNG.integers(0, 6, (6, 8))
    out = np.empty((6, 8))
    indexing_kernels.gather(_as_3d(transposed, 0), _as_3d(index, 0), _as_3d(out, 0))
    np.testing.assert_array_equal(out, np.take_along_axis(transposed, index, 0))
    ones = np.broadcast_to(2.0, (6, 8))                      # stride 0, read-only
    acc = np.zeros((6, 8))
    indexing_kernels.index_add(ones.reshape(1, 6, 8), np.array([1, 1, 0, 5, 5, 5]), acc.reshape(1, 6, 8))
    np.testing.assert_array_equal(acc[:, 0], [2.0, 4.0, 0.0, 0.0, 0.0, 6.0])
    running = np.empty((6, 8))
    indexing_kernels.cumsum(ones.reshape(1, 6, 8), running.reshape(1, 6, 8), reverse=True)
    np.testing.assert_array_equal(running[:, 3], [12.0, 10.0, 8.0, 6.0, 4.0, 2.0])


def test_out_of_range_indices_are_counted_and_the_ops_raise():
    src = np.arange(12.0).reshape(3, 4)
    index = np.array([[0, 4], [-5, 1], [3, -1]])
    out = np.empty((3, 2))
    assert indexing_kernels.gather(_as_3d(src, 1), _as_3d(index, 1), _as_3d(out, 1)) == 2
    assert indexing_kernels.scatter_add(_as_3d(out, 1), _as_3d(index, 1), _as_3d(np.zeros((3, 4)), 1)) == 2
    x = mn.tensor(src, requires_grad=True)
    with pytest.raises(IndexError, match="gather.*dimension 1 with size 4"):
        x.gather(1, index)
    with pytest.raises(IndexError, match="scatter_add.*dimension 1 with size 4"):
        x.scatter_add(1, index, mn.ones((3, 2), dtype="float64"))
    with pytest.raises(IndexError):
        x[np.array([0, 3])]
    np.testing.assert_array_equal(x.gather(1, np.array([[-1], [-4], [2]])).numpy(), [[3.0], [4.0], [10.0]])


def test_float32_running_sums_accumulate_in_float64():
    # 1 + 2**-24 * n: a float32 accumulator stalls at 1.0, a float64 one does not
    x = np.concatenate([[1.0], np.full(1000, 2.0 ** -25)]).astype(np.float32)
    total = mn.tensor(x).cumsum(0).numpy()[-1]
    assert total == np.float32(1.0 + 1000 * 2.0 ** -25)
    assert np.cumsum(x)[-1] == np.float32(1.0)


# --------------------------------------------------------------------------- the same bits for any thread count

@pytest.mark.parametrize("shape, dim", SHAPES)
def test_ops_give_the_same_bits_at_1_2_and_3_threads(shape, dim, parallel_always, restore_threads):
    src = RNG.standard_normal(shape).astype(np.float32)
    index = RNG.integers(0, shape[dim], shape[:dim] + (3 * shape[dim],) + shape[dim + 1:])
    rows = RNG.integers(0, shape[0], 4 * shape[0])
    weights = RNG.standard_normal(index.shape).astype(np.float32)
    results = []
    for threads in (1, 2, 3):
        mn.set_num_threads(threads)
        x = mn.tensor(src, requires_grad=True)
        loss = ((x.gather(dim, index) * mn.tensor(weights)).sum() + (x[rows] ** 2).sum()
                + (x.cumsum(dim) * x).sum() + (x.index_select(dim, index.reshape(-1)[:7]) ** 2).sum())
        loss.backward()
        results.append((loss.numpy(), x.grad.copy()))
    for loss, grad in results[1:]:
        assert loss.tobytes() == results[0][0].tobytes()
        assert grad.tobytes() == results[0][1].tobytes()


def test_scatter_add_with_many_repeats_is_the_same_at_any_thread_count(parallel_always):
    index = RNG.integers(0, 3, (1, 5000))                       # 5,000 adds into 3 slots
    src = RNG.standard_normal((1, 5000)).astype(np.float32)
    outs = []
    for threads in (1, 2, 4):
        acc = np.zeros((1, 3), np.float32)
        indexing_kernels.scatter_add(_as_3d(src, 1), _as_3d(index, 1), _as_3d(acc, 1), n_threads=threads)
        outs.append(acc.tobytes())
    assert outs[0] == outs[1] == outs[2]


# --------------------------------------------------------------------------- gradcheck

@pytest.mark.parametrize("shape, dim", [((3, 4), 1), ((4, 3), 0), ((2, 3, 4), 1)])
def test_gradcheck_and_gradgradcheck(shape, dim):
    x = mn.tensor(RNG.standard_normal(shape), requires_grad=True)
    index = RNG.integers(-shape[dim], shape[dim], shape[:dim] + (shape[dim] + 2,) + shape[dim + 1:])
    src = mn.tensor(RNG.standard_normal(index.shape), requires_grad=True)
    rows = np.array([0, shape[0] - 1, 0, 1])
    select = np.array([shape[dim] - 1, 0, 0])
    cases = [
        (lambda t: t.gather(dim, index), [x]),
        (lambda t, s: t.scatter_add(dim, index, s), [x, src]),
        (lambda t: t.index_select(dim, select), [x]),
        (lambda t: t[rows], [x]),
        (lambda t: t.cumsum(dim), [x]),
        (lambda t: t.cumsum(dim).cumsum(dim) * t, [x]),
    ]
    for fn, inputs in cases:
        assert mn.gradcheck(fn, inputs)
        assert mn.autograd.gradgradcheck(lambda *a: fn(*a) ** 2, inputs)


# --------------------------------------------------------------------------- PyTorch parity

@pytest.mark.parametrize("dtype", DTYPES)
def test_forward_and_backward_match_torch(dtype, torch):
    shape = (40, 70)
    xa = RNG.standard_normal(shape).astype(dtype)
    index = RNG.integers(0, 70, (40, 90))
    rows = RNG.integers(0, 40, 200)
    select = RNG.integers(0, 70, 33)
    v = RNG.standard_normal((40, 90)).astype(dtype)
    cases = [
        (lambda m, t: t.gather(1, m.tensor(index)) * m.tensor(v)),
        (lambda m, t: t.gather(0, m.tensor(index[:, :70] % 40))),
        (lambda m, t: t[m.tensor(rows)] ** 2),
        (lambda m, t: t.index_select(1, m.tensor(select)) ** 2),
        (lambda m, t: t.cumsum(1) * t),
        (lambda m, t: t.cumsum(0) ** 2),
        (lambda m, t: t.scatter_add(1, m.tensor(index), m.tensor(v)) ** 2),
    ]
    tol = dict(rtol=1e-5, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-10)
    for fn in cases:
        x, xt = mn.tensor(xa, requires_grad=True), torch.tensor(xa, requires_grad=True)
        y, yt = fn(mn, x), fn(torch, xt)
        np.testing.assert_allclose(y.numpy(), yt.detach().numpy(), **tol)
        y.sum().backward()
        yt.sum().backward()
        np.testing.assert_allclose(x.grad, xt.grad.numpy(), **tol)
