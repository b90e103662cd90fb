"""where, masked_fill, cat, stack and bmm on their kernels (minnet/_ext/select_kernels.pyx,
_blas.gemm_batched) and on the NumPy fallbacks (broadcast, strided, other dtypes): NumPy
reference, float64 gradcheck, PyTorch parity, double backward, and the same bits for any
thread count."""
import numpy as np
import pytest

import minnet as mn
from minnet._ext import _base, select_kernels

RNG = np.random.default_rng(23)
DTYPES = [np.float32, np.float64]


@pytest.fixture(params=[1, 2], ids=["1thread", "2threads"])
def threads(request):
    """Runs the test at 1 and at 2 threads, with thread teams even on small arrays."""
    old_threads = mn.get_num_threads()
    old_min = _base.set_parallel_min(0)
    mn.set_num_threads(request.param)
    yield request.param
    mn.set_num_threads(old_threads)
    _base.set_parallel_min(old_min)


def _grads(fn, arrays, weights):
    """(output, gradients) of sum(weights * fn(*tensors))."""
    tensors = [mn.tensor(a, requires_grad=True) for a in arrays]
    out = fn(*tensors)
    (out * mn.tensor(weights)).sum().backward()
    return out.numpy(), [t.grad for t in tensors]


# --------------------------------------------------------------------------- where / masked_fill

# (condition shape, a shape, b shape): same shape (the kernel), broadcast operands and a
# broadcast condition (NumPy), empty
WHERE_SHAPES = [((40, 300), (40, 300), (40, 300)), ((4, 5), (1, 5), (4, 5)),
                ((4, 1), (4, 5), (5,)), ((0, 3), (0, 3), (0, 3))]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shapes", WHERE_SHAPES)
def test_where_matches_numpy(shapes, dtype, threads):
    sc, sa, sb = shapes
    cond = RNG.random(sc) > 0.5
    a, b = RNG.standard_normal(sa).astype(dtype), RNG.standard_normal(sb).astype(dtype)
    out_shape = np.broadcast_shapes(sc, sa, sb)
    w = RNG.standard_normal(out_shape).astype(dtype)
    out, (ga, gb) = _grads(lambda x, y: mn.where(mn.tensor(cond), x, y), [a, b], w)
    assert out.dtype == dtype
    np.testing.assert_array_equal(out, np.where(cond, a, b))
    np.testing.assert_allclose(ga, _summed_to(np.where(cond, w, 0), sa), rtol=1e-6)
    np.testing.assert_allclose(gb, _summed_to(np.where(cond, 0, w), sb), rtol=1e-6)


def _summed_to(g, shape):
    """``g`` summed over the axes along which an operand of ``shape`` was broadcast."""
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(shape) if n == 1)
    return g.sum(axes).reshape(shape)


def test_where_on_strided_operands_and_sum_gradient(threads):
    cond = RNG.random((30, 20)) > 0.5
    a = RNG.standard_normal((20, 30)).T                  # a transposed view: NumPy's path
    b = RNG.standard_normal((30, 20))
    ta, tb = mn.tensor(a, requires_grad=True), mn.tensor(b, requires_grad=True)
    out = mn.where(mn.tensor(cond), ta, tb)
    out.sum().backward()                                 # a broadcast gradient: the kernel
    np.testing.assert_array_equal(out.numpy(), np.where(cond, a, b))
    np.testing.assert_array_equal(ta.grad, cond.astype(np.float64))
    np.testing.assert_array_equal(tb.grad, (~cond).astype(np.float64))


def test_where_gradient_only_for_the_operand_that_needs_it(threads):
    cond = RNG.random((3, 4)) > 0.5
    x = mn.tensor(RNG.standard_normal((3, 4)), requires_grad=True)
    mn.where(mn.tensor(cond), x, mn.tensor(np.zeros((3, 4)))).sum().backward()
    np.testing.assert_array_equal(x.grad, cond.astype(np.float64))


def test_where_and_masked_fill_gradcheck(threads):
    cond = RNG.random((6, 7)) > 0.5
    x = mn.tensor(RNG.standard_normal((6, 7)), requires_grad=True)
    y = mn.tensor(RNG.standard_normal((6, 7)), requires_grad=True)
    row = mn.tensor(RNG.standard_normal((1, 7)), requires_grad=True)
    assert mn.gradcheck(lambda a, b: mn.where(mn.tensor(cond), a * b, b), (x, y))
    assert mn.gradcheck(lambda a, b: mn.where(mn.tensor(cond), a, b), (x, row))
    assert mn.gradcheck(lambda a: (a * a).masked_fill(mn.tensor(cond), 3.0), (x,))


def test_where_and_masked_fill_double_backward(threads):
    # d/dx of sum(where(c, x^3, y)) = 3 x^2 on c; its gradient again: 6 x on c
    cond = RNG.random((5, 8)) > 0.5
    x0 = RNG.standard_normal((5, 8))
    x = mn.tensor(x0, requires_grad=True)
    y = mn.tensor(RNG.standard_normal((5, 8)), requires_grad=True)
    (gx,) = mn.autograd.grad(mn.where(mn.tensor(cond), x * x * x, y).sum(), [x], create_graph=True)
    np.testing.assert_allclose(gx.numpy(), np.where(cond, 3 * x0 ** 2, 0), rtol=1e-12)
    gx.sum().backward()
    np.testing.assert_allclose(x.grad, np.where(cond, 6 * x0, 0), rtol=1e-12)
    x.grad = None
    (gx,) = mn.autograd.grad((x * x * x).masked_fill(mn.tensor(cond), 0.0).sum(), [x],
                             create_graph=True)
    gx.sum().backward()
    np.testing.assert_allclose(x.grad, np.where(cond, 0, 6 * x0), rtol=1e-12)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mask_shape", [(20, 50), (1, 50), (0, 50)])
def test_masked_fill_matches_numpy(mask_shape, dtype, threads):
    shape = (20 if mask_shape[0] else 0, 50)
    mask = RNG.random(mask_shape) > 0.5
    a = RNG.standard_normal(shape).astype(dtype)
    w = RNG.standard_normal(shape).astype(dtype)
    out, (ga,) = _grads(lambda x: x.masked_fill(mn.tensor(mask), -1.25), [a], w)
    np.testing.assert_array_equal(out, np.where(mask, np.asarray(-1.25, dtype), a))
    np.testing.assert_array_equal(ga, np.where(mask, 0, w))


def test_masked_fill_with_a_tensor_value(threads):
    mask = RNG.random((4, 5)) > 0.5
    a = RNG.standard_normal((4, 5))
    x = mn.tensor(a)
    np.testing.assert_array_equal(x.masked_fill(mn.tensor(mask), mn.tensor(2.5)).numpy(),
                                  np.where(mask, 2.5, a))
    row = np.arange(5.0)                                  # a value per column broadcasts
    np.testing.assert_array_equal(x.masked_fill(mn.tensor(mask), mn.tensor(row)).numpy(),
                                  np.where(mask, row, a))


def test_where_and_masked_fill_match_torch(torch, threads):
    cond = RNG.random((64, 33)) > 0.5
    a = RNG.standard_normal((64, 33)).astype(np.float32)
    b = RNG.standard_normal((64, 33)).astype(np.float32)
    w = RNG.standard_normal((64, 33)).astype(np.float32)
    out, (ga, gb) = _grads(lambda x, y: mn.where(mn.tensor(cond), x, y).masked_fill(
        mn.tensor(~cond & (a > 0)), 2.0), [a, b], w)
    ta = torch.tensor(a, requires_grad=True)
    tb = torch.tensor(b, requires_grad=True)
    tout = torch.where(torch.tensor(cond), ta, tb).masked_fill(torch.tensor(~cond & (a > 0)), 2.0)
    (tout * torch.tensor(w)).sum().backward()
    np.testing.assert_array_equal(out, tout.detach().numpy())
    np.testing.assert_array_equal(ga, ta.grad.numpy())
    np.testing.assert_array_equal(gb, tb.grad.numpy())


def test_where_rejects_a_non_bool_condition():
    x = mn.tensor(np.zeros((2, 2)), requires_grad=True)
    with pytest.raises(TypeError, match="boolean.*float64"):
        mn.where(mn.tensor(np.zeros((2, 2))), x, x)
    with pytest.raises(TypeError, match="`mask`.*boolean"):
        x.masked_fill(mn.tensor(np.zeros((2, 2))), 1.0)


# --------------------------------------------------------------------------- cat / stack

CAT_SHAPES = [([(300, 7), (200, 7)], 0), ([(5, 300), (5, 1), (5, 200)], 1),
              ([(4, 30, 5), (4, 2, 5)], -2), ([(0, 3), (6, 3)], 0)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shapes, dim", CAT_SHAPES)
def test_cat_matches_numpy(shapes, dim, dtype, threads, monkeypatch):
    monkeypatch.setattr(mn.autograd.shape_ops, "_PARALLEL_COPY_BYTES", 0)   # the kernel, small
    arrays = [RNG.standard_normal(s).astype(dtype) for s in shapes]
    expected = np.concatenate(arrays, dim)
    w = RNG.standard_normal(expected.shape).astype(dtype)
    out, grads = _grads(lambda *ts: mn.cat(list(ts), dim), arrays, w)
    assert out.tobytes() == expected.tobytes()
    splits = np.cumsum([s[dim] for s in shapes])[:-1]
    for g, ref in zip(grads, np.split(w, splits, axis=dim)):
        np.testing.assert_array_equal(g, ref)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_stack_matches_numpy(dim, dtype, threads, monkeypatch):
    monkeypatch.setattr(mn.autograd.shape_ops, "_PARALLEL_COPY_BYTES", 0)
    arrays = [RNG.standard_normal((6, 40)).astype(dtype) for _ in range(3)]
    expected = np.stack(arrays, dim)
    w = RNG.standard_normal(expected.shape).astype(dtype)
    out, grads = _grads(lambda *ts: mn.stack(list(ts), dim), arrays, w)
    assert out.tobytes() == expected.tobytes()
    for i, g in enumerate(grads):
        np.testing.assert_array_equal(g, np.take(w, i, axis=dim))


def test_cat_and_stack_fall_back_for_strided_and_mixed_inputs(threads, monkeypatch):
    monkeypatch.setattr(mn.autograd.shape_ops, "_PARALLEL_COPY_BYTES", 0)
    a = RNG.standard_normal((8, 5)).T                     # non-contiguous
    b = RNG.standard_normal((5, 8))
    c = RNG.standard_normal((5, 8)).astype(np.float32)    # another dtype: NumPy promotes
    np.testing.assert_array_equal(mn.cat([mn.tensor(a), mn.tensor(b)], 1).numpy(),
                                  np.concatenate([a, b], 1))
    np.testing.assert_array_equal(mn.stack([mn.tensor(a), mn.tensor(b)], 1).numpy(),
                                  np.stack([a, b], 1))
    mixed = mn.cat([mn.tensor(b), mn.tensor(c)], 0).numpy()
    assert mixed.dtype == np.float64
    np.testing.assert_array_equal(mixed, np.concatenate([b, c], 0))
    with pytest.raises(RuntimeError, match="cat\\(\\)"):
        mn.cat([mn.tensor(b), mn.tensor(np.zeros((5, 3)))], 0)
    with pytest.raises(RuntimeError, match="stack\\(\\)"):
        mn.stack([mn.tensor(b), mn.tensor(np.zeros((5, 3)))], 0)


def test_cat_and_stack_gradcheck_and_torch(torch, threads, monkeypatch):
    monkeypatch.setattr(mn.autograd.shape_ops, "_PARALLEL_COPY_BYTES", 0)
    x = mn.tensor(RNG.standard_normal((3, 4)), requires_grad=True)
    y = mn.tensor(RNG.standard_normal((3, 4)), requires_grad=True)
    assert mn.gradcheck(lambda a, b: mn.cat([a * b, b], 1), (x, y))
    assert mn.gradcheck(lambda a, b: mn.stack([a, b * b], 1), (x, y))
    a = RNG.standard_normal((64, 50)).astype(np.float32)
    b = RNG.standard_normal((64, 50)).astype(np.float32)
    w = RNG.standard_normal((64, 2, 50)).astype(np.float32)
    out, grads = _grads(lambda s, t: mn.stack([s, t], 1), [a, b], w)
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    tout = torch.stack([ta, tb], 1)
    (tout * torch.tensor(w)).sum().backward()
    np.testing.assert_array_equal(out, tout.detach().numpy())
    np.testing.assert_array_equal(grads[0], ta.grad.numpy())
    np.testing.assert_array_equal(grads[1], tb.grad.numpy())


# --------------------------------------------------------------------------- bmm

@pytest.mark.parametrize("dtype, tol", [(np.float32, 1e-4), (np.float64, 1e-12)])
@pytest.mark.parametrize("batch", [1, 6])
def test_bmm_matches_numpy(batch, dtype, tol, threads):
    a = RNG.standard_normal((batch, 9, 13)).astype(dtype)
    b = RNG.standard_normal((batch, 13, 7)).astype(dtype)
    w = RNG.standard_normal((batch, 9, 7)).astype(dtype)
    out, (ga, gb) = _grads(lambda s, t: mn.bmm(s, t), [a, b], w)
    a64, b64, w64 = a.astype(np.float64), b.astype(np.float64), w.astype(np.float64)
    np.testing.assert_allclose(out, a64 @ b64, rtol=tol, atol=tol)
    np.testing.assert_allclose(ga, w64 @ b64.transpose(0, 2, 1), rtol=tol, atol=tol)
    np.testing.assert_allclose(gb, a64.transpose(0, 2, 1) @ w64, rtol=tol, atol=tol)


def test_bmm_of_transposed_and_sliced_operands(threads):
    base = RNG.standard_normal((5, 11, 8))
    a = mn.tensor(base, requires_grad=True)
    b = mn.tensor(RNG.standard_normal((5, 11, 6)), requires_grad=True)
    out = a.transpose(1, 2).bmm(b[:, :, 1:5])              # (5, 8, 4): strided operands
    out.sum().backward()                                   # a broadcast gradient
    np.testing.assert_allclose(out.numpy(), base.transpose(0, 2, 1) @ b.numpy()[:, :, 1:5],
                               rtol=1e-12)
    np.testing.assert_allclose(a.grad, b.numpy()[:, :, 1:5].sum(2, keepdims=True)
                               .repeat(8, 2), rtol=1e-12)
    assert mn.gradcheck(lambda s, t: s.transpose(1, 2).bmm(t), (a, b))


def test_bmm_matches_torch(torch, threads):
    a = RNG.standard_normal((12, 20, 30)).astype(np.float32)
    b = RNG.standard_normal((12, 30, 10)).astype(np.float32)
    w = RNG.standard_normal((12, 20, 10)).astype(np.float32)
    out, (ga, gb) = _grads(lambda s, t: mn.bmm(s, t), [a, b], w)
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    tout = torch.bmm(ta, tb)
    (tout * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(out, tout.detach().numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ga, ta.grad.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(gb, tb.grad.numpy(), rtol=1e-5, atol=1e-5)


# --------------------------------------------------------------------------- thread counts

def test_ops_give_the_same_bits_at_1_2_and_3_threads(monkeypatch):
    monkeypatch.setattr(mn.autograd.shape_ops, "_PARALLEL_COPY_BYTES", 0)
    cond = RNG.random((40, 500)) > 0.5
    a0 = RNG.standard_normal((40, 500)).astype(np.float32)
    b0 = RNG.standard_normal((40, 500)).astype(np.float32)
    p0 = RNG.standard_normal((40, 50, 30)).astype(np.float32)
    q0 = RNG.standard_normal((40, 30, 20)).astype(np.float32)
    old_threads, old_min = mn.get_num_threads(), _base.set_parallel_min(0)
    results = []
    try:
        for n in (1, 2, 3):
            mn.set_num_threads(n)
            a, b = mn.tensor(a0, requires_grad=True), mn.tensor(b0, requires_grad=True)
            p, q = mn.tensor(p0, requires_grad=True), mn.tensor(q0, requires_grad=True)
            c = mn.tensor(cond)
            y = mn.where(c, a, b * 2).masked_fill(c, 0.5)
            z = mn.stack([y, a], 0).sum() + (mn.cat([y, b], 1) ** 2).sum() + (p.bmm(q) ** 2).sum()
            z.backward()
            results.append([z.numpy().tobytes()] + [t.grad.tobytes() for t in (a, b, p, q)])
    finally:
        mn.set_num_threads(old_threads)
        _base.set_parallel_min(old_min)
    assert results[1] == results[0] and results[2] == results[0]
