"""The select and copy kernels (minnet/_ext/select_kernels.pyx): where, masked_fill, where's fused
backward and concat, against NumPy, bit for bit at any thread count, and their errors."""
import numpy as np
import pytest

from minnet._ext import _base, select_kernels

RNG = np.random.default_rng(11)
DTYPES = [np.float32, np.float64]
# empty, shorter than a block, several blocks with a ragged last one (BLOCK = 8192)
SHAPES = [(0,), (7,), (3, 5), (4, 0, 3), (33, 1001)]


@pytest.fixture
def parallel_always():
    old = _base.set_parallel_min(0)       # thread teams even on tiny arrays
    yield
    _base.set_parallel_min(old)


def _values(shape, dtype):
    x = RNG.standard_normal(shape).astype(dtype)
    if x.size >= 3:                          # selects must move these bits as they are
        x.reshape(-1)[:3] = [np.nan, -0.0, np.inf]
    return x


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("n_threads", [1, 2, 3])
def test_where_matches_numpy_bit_for_bit(shape, dtype, n_threads, parallel_always):
    cond = RNG.random(shape) > 0.5
    a, b = _values(shape, dtype), _values(shape, dtype)
    out = select_kernels.where(cond, a, b, n_threads=n_threads)
    assert out.dtype == dtype and out.shape == shape
    assert out.tobytes() == np.where(cond, a, b).tobytes()


@pytest.mark.parametrize("dtype", DTYPES)
def test_where_writes_in_place_into_a_or_b(dtype, parallel_always):
    cond = RNG.random((20, 30)) > 0.3
    a, b = _values((20, 30), dtype), _values((20, 30), dtype)
    expected = np.where(cond, a, b)
    assert select_kernels.where(cond, a, b, out=b, n_threads=2) is b
    assert b.tobytes() == expected.tobytes()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("n_threads", [1, 2])
def test_masked_fill_matches_numpy(shape, dtype, n_threads, parallel_always):
    mask = RNG.random(shape) > 0.5
    a = _values(shape, dtype)
    value = 0.1                               # not exact in float32: rounded as NumPy does
    out = select_kernels.masked_fill(a, mask, value, n_threads=n_threads)
    assert out.tobytes() == np.where(mask, np.asarray(value, dtype=dtype), a).tobytes()
    assert select_kernels.masked_fill(a, mask, -np.inf).tobytes() == np.where(mask, -np.inf, a).astype(dtype).tobytes()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("broadcast", [False, True])
def test_where_backward_splits_the_gradient(shape, dtype, n_threads, broadcast, parallel_always):
    cond = RNG.random(shape) > 0.5
    grad = (np.broadcast_to(np.asarray(1.5, dtype=dtype), shape) if broadcast
            else _values(shape, dtype))
    ga, gb = select_kernels.where_backward(cond, grad, n_threads=n_threads)
    assert ga.tobytes() == np.where(cond, grad, 0).astype(dtype).tobytes()
    assert gb.tobytes() == np.where(cond, 0, grad).astype(dtype).tobytes()
    only_b = select_kernels.where_backward(cond, grad, need_a=False, n_threads=n_threads)
    assert only_b[0] is None and only_b[1].tobytes() == gb.tobytes()
    only_a = select_kernels.where_backward(cond, grad, need_b=False, n_threads=n_threads)
    assert only_a[1] is None and only_a[0].tobytes() == ga.tobytes()
    assert select_kernels.where_backward(cond, grad, need_a=False, need_b=False) == (None, None)


def test_selects_are_bit_identical_at_any_thread_count(parallel_always):
    shape = (97, 1013)                        # ragged blocks
    cond = RNG.random(shape) > 0.5
    a, b = _values(shape, np.float32), _values(shape, np.float32)
    runs = [(select_kernels.where(cond, a, b, n_threads=t).tobytes(),
             select_kernels.masked_fill(a, cond, 2.0, n_threads=t).tobytes(),
             [g.tobytes() for g in select_kernels.where_backward(cond, a, n_threads=t)])
            for t in (1, 2, 4)]
    assert runs[1] == runs[0] and runs[2] == runs[0]


def test_select_errors_name_the_argument():
    a = np.zeros((3, 4), np.float32)
    cond = np.zeros((3, 4), bool)
    with pytest.raises(TypeError, match="`condition`.*bool.*int64"):
        select_kernels.where(np.zeros((3, 4), np.int64), a, a)
    with pytest.raises(TypeError, match="`condition`.*list"):
        select_kernels.where([[True]], a, a)
    with pytest.raises(ValueError, match="`condition`.*shape \\(3, 4\\).*\\(4, 3\\)"):
        select_kernels.where(np.zeros((4, 3), bool), a, a)
    with pytest.raises(ValueError, match="`condition`.*C-contiguous"):
        select_kernels.where(np.zeros((4, 3), bool).T, a, a)
    with pytest.raises(ValueError, match="`a`.*C-contiguous"):
        select_kernels.where(np.zeros((4, 3), bool), np.zeros((3, 4), np.float32).T, a.T)
    with pytest.raises(TypeError, match="`b`.*float32.*float64"):
        select_kernels.where(cond, a, a.astype(np.float64))
    with pytest.raises(TypeError, match="`a`.*int32"):
        select_kernels.where(cond, a.astype(np.int32), a)
    with pytest.raises(ValueError, match="`n_threads`"):
        select_kernels.where(cond, a, a, n_threads=0)
    with pytest.raises(ValueError, match="`out`"):
        select_kernels.where(cond, a, a, out=np.zeros((3, 5), np.float32))
    with pytest.raises(TypeError, match="`mask`.*bool"):
        select_kernels.masked_fill(a, np.zeros((3, 4), np.uint8), 1.0)
    with pytest.raises(ValueError, match="`grad`.*C-contiguous"):
        select_kernels.where_backward(cond, np.zeros((4, 3), np.float32).T)
    with pytest.raises(TypeError, match="`grad`"):
        select_kernels.where_backward(cond, "g")


# --------------------------------------------------------------------------- concat

CAT_CASES = [
    # (shapes, axis): first axis (outer = 1, rows longer than one 64 KiB chunk), a middle
    # axis, the last axis, an empty input among others, many inputs
    ([(20000,), (30001,), (5,)], 0),
    ([(3, 20000), (3, 7), (3, 16384)], 1),
    ([(4, 2, 5), (4, 3, 5), (4, 1, 5)], 1),
    ([(6, 5, 2), (6, 5, 3)], 2),
    ([(4, 3), (0, 3), (2, 3)], 0),
    ([(2, 1 + i % 5) for i in range(37)], 1),
    ([(0, 4), (0, 2)], 1),
]


@pytest.mark.parametrize("shapes, axis", CAT_CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.bool_, np.int8])
@pytest.mark.parametrize("n_threads", [1, 2, 3])
def test_concat_matches_numpy(shapes, axis, dtype, n_threads, parallel_always):
    arrays = [(RNG.standard_normal(s) * 10).astype(dtype) for s in shapes]
    expected = np.concatenate(arrays, axis)
    out = np.empty(expected.shape, dtype)
    assert select_kernels.concat(arrays, axis, out, n_threads=n_threads) is out
    assert out.tobytes() == expected.tobytes()


def test_concat_copies_into_the_stacking_shape(parallel_always):
    arrays = [RNG.standard_normal((5, 7)) for _ in range(3)]
    out = np.empty((5, 3, 7))
    select_kernels.concat([a.reshape(5, 1, 7) for a in arrays], 1, out, n_threads=2)
    assert out.tobytes() == np.stack(arrays, 1).tobytes()


def test_concat_errors_name_the_argument():
    a = np.zeros((2, 3), np.float32)
    with pytest.raises(ValueError, match="`arrays`.*at least one"):
        select_kernels.concat([], 0, a)
    with pytest.raises(TypeError, match="`arrays\\[1\\]`.*float32.*float64"):
        select_kernels.concat([a, a.astype(np.float64)], 0, np.zeros((4, 3), np.float32))
    with pytest.raises(TypeError, match="`arrays\\[0\\]`.*list"):
        select_kernels.concat([[1.0]], 0, a)
    with pytest.raises(ValueError, match="`arrays\\[1\\]`.*C-contiguous"):
        select_kernels.concat([a, np.zeros((3, 2), np.float32).T], 0, np.zeros((4, 3), np.float32))
    with pytest.raises(ValueError, match="`arrays\\[1\\]`.*every dimension but 0.*\\(2, 4\\)"):
        select_kernels.concat([a, np.zeros((2, 4), np.float32)], 0, np.zeros((4, 3), np.float32))
    with pytest.raises(ValueError, match="`axis`.*\\[0, 2\\).*axis=2"):
        select_kernels.concat([a, a], 2, np.zeros((2, 6), np.float32))
    with pytest.raises(ValueError, match="`out`.*\\(4, 3\\).*out.shape=\\(3, 4\\)"):
        select_kernels.concat([a, a], 0, np.zeros((3, 4), np.float32))
    with pytest.raises(ValueError, match="`out`.*writeable"):
        read_only = np.zeros((4, 3), np.float32)
        read_only.flags.writeable = False
        select_kernels.concat([a, a], 0, read_only)
    with pytest.raises(ValueError, match="`n_threads`"):
        select_kernels.concat([a, a], 0, np.zeros((4, 3), np.float32), n_threads=0)


# --------------------------------------------------------------------------- materialize

def _views():
    rng = np.random.default_rng(7)
    base = rng.standard_normal((6, 5, 300))
    yield np.broadcast_to(rng.standard_normal(300).astype(np.float32), (40, 300))   # sum(0)'s grad
    yield np.broadcast_to(np.float64(2.5), (7, 3, 100))                             # sum()'s grad
    yield np.broadcast_to(rng.standard_normal((4, 1, 200)), (4, 9, 200))             # middle broadcast
    yield base[::-2, 1:, :]                                                         # negative outer stride
    yield base.transpose(1, 0, 2)                                                   # permuted outer axes
    yield np.broadcast_to(np.arange(120, dtype=np.int16), (33, 120))                 # 2-byte items
    yield np.broadcast_to((rng.standard_normal(80) + 1j).astype(np.complex128), (10, 80))
    yield np.broadcast_to(rng.random(600) > 0.5, (9, 600))                          # 1-byte items


@pytest.mark.parametrize("view", list(_views()), ids=lambda v: f"{v.dtype}{v.shape}{v.strides}")
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_materialize_copies_any_view_into_a_new_c_array(view, threads):
    old = _base.set_parallel_min(0)
    try:
        out = select_kernels.materialize(view, n_threads=threads)
    finally:
        _base.set_parallel_min(old)
    assert out.flags.c_contiguous and out.flags.writeable and out.dtype == view.dtype
    assert not np.shares_memory(out, view)
    np.testing.assert_array_equal(out, view)


def test_materialize_falls_back_for_what_it_does_not_take():
    a = np.arange(24.0).reshape(4, 6)
    for view in (a.T, a[:, ::-1], np.arange(5.0), np.array(3.0), a.astype(object)):
        out = select_kernels.materialize(view, n_threads=2)
        np.testing.assert_array_equal(out, view)
        assert out.flags.c_contiguous
    with pytest.raises(TypeError, match="`a`"):
        select_kernels.materialize([1.0, 2.0])


def test_a_leaf_keeps_its_own_copy_of_a_broadcast_gradient():
    import minnet as mn
    x = mn.tensor(np.ones((800, 400), np.float32), requires_grad=True)    # 1.28 MB: the threaded copy
    (x.sum(0) * mn.tensor(np.arange(400, dtype=np.float32))).sum().backward()
    g = x.grad
    assert g.flags.c_contiguous and g.flags.writeable and g.base is None
    np.testing.assert_array_equal(g, np.broadcast_to(np.arange(400, dtype=np.float32), (800, 400)))
    g += 1                                                 # its own memory: nothing else changes
    assert x.grad[0, 0] == 1 and x.data[0, 0] == 1
