"""minnet._ext.attention_kernels against a NumPy reference: softmax(q kᵀ scale + mask) v, its
gradients, masks (causal, key lengths, additive, fully masked rows), odd sizes and block
sizes that do not divide the sequence, strided (Keras-layout) operands, thread counts."""
import numpy as np
import pytest

from _harness import TOLERANCES
from minnet._ext import attention_kernels as A

TOL = TOLERANCES["gemm"]


def reference(q, k, v, scale, mask=None, causal=False, kv_len=None):
    """Output, probabilities (rows with no allowed key are 0) in float64."""
    s = np.einsum("bhie,bhje->bhij", q.astype(np.float64), k.astype(np.float64)) * scale
    if mask is not None:
        s = s + mask
    n_q, n_k = s.shape[-2:]
    if causal:
        s = np.where(np.tril(np.ones((n_q, n_k), bool)), s, -np.inf)
    if kv_len is not None:
        keys = np.arange(n_k)[None, :] < kv_len[:, None]
        s = np.where(keys[:, None, None, :], s, -np.inf)
    m = s.max(-1, keepdims=True)
    m = np.where(np.isinf(m), 0, m)
    e = np.exp(s - m)
    total = e.sum(-1, keepdims=True)
    p = np.where(total > 0, e / np.where(total > 0, total, 1), 0)
    return p @ v.astype(np.float64), p


def reference_grads(q, k, v, p, g, scale):
    g = g.astype(np.float64)
    dp = g @ np.swapaxes(v, -1, -2)
    ds = p * (dp - (dp * p).sum(-1, keepdims=True))
    return ds @ k * scale, np.swapaxes(ds, -1, -2) @ q * scale, np.swapaxes(p, -1, -2) @ g


def _data(rng, dtype, b, h, n_q, n_k, e, ev):
    return [rng.standard_normal(s).astype(dtype)
            for s in ((b, h, n_q, e), (b, h, n_k, e), (b, h, n_k, ev), (b, h, n_q, ev))]


SHAPES = [  # b, h, Lq, Lk, E, Ev, block
    (2, 3, 37, 53, 16, 8, (16, 16)),
    (1, 1, 1, 1, 4, 4, (64, 128)),
    (2, 2, 70, 70, 8, 8, (64, 64)),
    (1, 2, 5, 130, 7, 3, (3, 5)),
    (3, 1, 129, 17, 5, 9, (64, 128)),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("masks", ["none", "kv_len", "additive", "both"])
def test_forward_backward_match_numpy(rng, dtype, shape, causal, masks):
    b, h, n_q, n_k, e, ev, block = shape
    q, k, v, g = _data(rng, dtype, b, h, n_q, n_k, e, ev)
    kv_len = mask = None
    if masks in ("kv_len", "both"):
        kv_len = rng.integers(1, n_k + 1, size=b).astype(np.int64)
    if masks in ("additive", "both"):
        mask = np.broadcast_to(rng.standard_normal((n_q, n_k)).astype(dtype), (b, h, n_q, n_k))
    out, lse = A.attention_forward(q, k, v, 0.3, causal, kv_len, mask, block=block)
    ref, p = reference(q, k, v, 0.3, mask, causal, kv_len)
    tol = TOL[dtype]
    np.testing.assert_allclose(out, ref, **tol)
    assert out.dtype == dtype and lse.shape == (b, h, n_q)
    dq, dk, dv = A.attention_backward(q, k, v, out, lse, g, 0.3, causal, kv_len, mask, block=block)
    for got, want in zip((dq, dk, dv), reference_grads(q, k, v, p, g, 0.3)):
        np.testing.assert_allclose(got, want, rtol=tol["rtol"] * 10, atol=tol["atol"] * 10)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_saved_lse_is_the_row_logsumexp(rng, dtype):
    q, k, v, _ = _data(rng, dtype, 2, 2, 9, 11, 4, 4)
    _, lse = A.attention_forward(q, k, v, 0.5, block=(4, 4))
    s = np.einsum("bhie,bhje->bhij", q.astype(np.float64), k) * 0.5
    want = np.log(np.exp(s - s.max(-1, keepdims=True)).sum(-1)) + s.max(-1)
    np.testing.assert_allclose(lse, want, **TOL[dtype])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fully_masked_rows_give_zero_output_and_gradient(rng, dtype):
    q, k, v, g = _data(rng, dtype, 2, 1, 6, 5, 3, 3)
    mask = np.zeros((2, 1, 6, 5), dtype)
    mask[0, 0, 2] = -np.inf                      # one row allows no key
    kv_len = np.array([5, 0], np.int64)          # the second batch has no keys at all
    out, lse = A.attention_forward(q, k, v, 1.0, mask=mask, kv_len=kv_len)
    assert np.all(out[0, 0, 2] == 0) and np.all(out[1] == 0)
    assert lse[0, 0, 2] == -np.inf and np.all(lse[1] == -np.inf)
    assert np.all(np.isfinite(out))
    dq, dk, dv = A.attention_backward(q, k, v, out, lse, g, 1.0, mask=mask, kv_len=kv_len)
    assert np.all(dq[0, 0, 2] == 0) and np.all(dq[1] == 0) and np.all(dk[1] == 0)
    assert all(np.all(np.isfinite(a)) for a in (dq, dk, dv))


def test_causal_with_more_queries_than_keys_is_top_left_aligned(rng):
    q, k, v, _ = _data(rng, np.float64, 1, 1, 6, 3, 4, 2)
    out, _ = A.attention_forward(q, k, v, 1.0, causal=True, block=(2, 2))
    ref, p = reference(q, k, v, 1.0, causal=True)
    np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(out[0, 0, 0], v[0, 0, 0], rtol=1e-12)   # query 0 sees key 0 only


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_strided_operands_in_keras_layout(rng, dtype):
    # (B, T, H, E) arrays passed as (B, H, T, E) views: read and written through strides
    b, t, s, h, e = 2, 7, 9, 3, 5
    qb, kb, vb = (rng.standard_normal(sh).astype(dtype) for sh in ((b, t, h, e), (b, s, h, e),
                                                                  (b, s, h, e)))
    out_b = np.empty((b, t, h, e), dtype)
    view = lambda a: a.transpose(0, 2, 1, 3)
    A.attention_forward(view(qb), view(kb), view(vb), 0.4, True, out=view(out_b), block=(4, 4))
    ref, _ = reference(view(qb), view(kb), view(vb), 0.4, causal=True)
    np.testing.assert_allclose(view(out_b), ref, **TOL[dtype])


@pytest.mark.parametrize("level", [0, 1, 2])
@pytest.mark.parametrize("shape", SHAPES + [(2, 2, 150, 300, 64, 64, (64, 128))])
def test_every_tile_copy_matches_numpy(rng, level, shape):
    # float32 runs convgemm_kernels.h's tiles (and the AVX2 online step from level 1): every copy
    # this CPU can run, with causal + additive masks; the panels of K/V are NR = 8/16/32 wide
    b, h, n_q, n_k, e, ev, block = shape
    q, k, v, g = _data(rng, np.float32, b, h, n_q, n_k, e, ev)
    mask = np.broadcast_to(rng.standard_normal((n_q, n_k)).astype(np.float32), (b, h, n_q, n_k))
    best = A._set_isa(99)
    try:
        used = A._set_isa(level)
        if used != level:
            pytest.skip(f"this CPU runs tile copies up to level {best}")
        out, lse = A.attention_forward(q, k, v, 0.3, True, None, mask, block=block)
        dq, dk, dv = A.attention_backward(q, k, v, out, lse, g, 0.3, True, None, mask,
                                          block=block)
    finally:
        A._set_isa(best)
    ref, p = reference(q, k, v, 0.3, mask, True)
    tol = TOL[np.float32]
    np.testing.assert_allclose(out, ref, **tol)
    for got, want in zip((dq, dk, dv), reference_grads(q, k, v, p, g, 0.3)):
        np.testing.assert_allclose(got, want, rtol=tol["rtol"] * 10, atol=tol["atol"] * 10)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_results_do_not_depend_on_the_thread_count(rng, dtype):
    q, k, v, g = _data(rng, dtype, 3, 4, 40, 50, 8, 8)
    mask = np.broadcast_to(rng.standard_normal((40, 50)).astype(dtype), (3, 4, 40, 50))
    results = []
    for n in (1, 2, 3):
        out, lse = A.attention_forward(q, k, v, 0.3, True, None, mask, n_threads=n,
                                       block=(16, 16))
        grads = A.attention_backward(q, k, v, out, lse, g, 0.3, True, None, mask, n_threads=n,
                                     block=(16, 16))
        results.append((out, lse) + grads)
    for other in results[1:]:
        for a, b in zip(results[0], other):
            assert np.array_equal(a, b)


def test_shape_dtype_and_argument_errors(rng):
    q, k, v, _ = _data(rng, np.float32, 1, 1, 4, 5, 3, 3)
    with pytest.raises(ValueError, match="`k`"):
        A.attention_forward(q, k[0], v, 1.0)
    with pytest.raises(ValueError, match="`k`: expected shape"):
        A.attention_forward(q, k[..., :2], v, 1.0)
    with pytest.raises(TypeError, match="`v`: expected dtype float32"):
        A.attention_forward(q, k, v.astype(np.float64), 1.0)
    with pytest.raises(ValueError, match="`kv_len`"):
        A.attention_forward(q, k, v, 1.0, kv_len=np.array([1, 2]))
    with pytest.raises(ValueError, match="`mask`"):
        A.attention_forward(q, k, v, 1.0, mask=np.zeros((4, 5), np.float32))
    with pytest.raises(ValueError, match="`block`"):
        A.attention_forward(q, k, v, 1.0, block=(0, 4))
    with pytest.raises(ValueError, match="`n_threads`"):
        A.attention_forward(q, k, v, 1.0, n_threads=0)
    with pytest.raises(ValueError, match="contiguous last axis"):
        A.attention_forward(np.asfortranarray(q), k, v, 1.0)
    out, lse = A.attention_forward(q, k, v, 1.0)
    with pytest.raises(ValueError, match="`lse`"):
        A.attention_backward(q, k, v, out, lse[..., :2], out, 1.0)
    with pytest.raises(ValueError, match="`grad`: expected shape"):
        A.attention_backward(q, k, v, out, lse, out[..., :2], 1.0)


@pytest.mark.parametrize("b, lq, lk", [(0, 5, 5), (2, 0, 5), (2, 5, 0)])
def test_empty_batch_queries_or_keys(rng, b, lq, lk):
    """Empty operands give empty results (any strides: numpy's views of empty arrays have
    zero strides); no keys give zero outputs, as torch's SDPA; no queries zero dk, dv."""
    q = rng.standard_normal((b, 2, lq, 4)).astype(np.float32)
    k = rng.standard_normal((b, 2, lk, 4)).astype(np.float32)
    v = rng.standard_normal((b, 2, lk, 3)).astype(np.float32)
    out, lse = A.attention_forward(q, k, v, 0.5, out=np.empty((b, 2, lq, 3), np.float32)[..., ::1])
    assert out.shape == (b, 2, lq, 3) and not out.any()
    dq, dk, dv = A.attention_backward(q, k, v, out, lse, np.ones_like(out), 0.5,
                                      dk=np.full(k.shape, 7, np.float32))
    assert dq.shape == q.shape and dk.shape == k.shape and dv.shape == v.shape
    assert not dq.any() and not dk.any() and not dv.any()
    view = np.empty((b, lq, 2, 3), np.float32).transpose(0, 2, 1, 3)   # a strided empty out
    A.attention_forward(q, k, v, 0.5, out=view)
