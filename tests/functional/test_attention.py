"""functional.scaled_dot_product_attention (PyTorch's meaning) and
functional.dot_product_attention_keras (Keras's layout): NumPy reference, float64 gradcheck
(and double backward through the composed path), PyTorch / Keras parity, masks, errors."""
import numpy as np
import pytest

import minnet as mn
import minnet.functional as F
from _harness import TOLERANCES, check_forward, check_gradcheck, check_torch

KIND = "gemm"


def reference(q, k, v, mask=None, causal=False, scale=None):
    scale = 1.0 / np.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ np.swapaxes(k, -1, -2) * scale
    if mask is not None:
        s = s + (np.where(mask, 0.0, -np.inf) if mask.dtype == bool else mask)
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
    m = s.max(-1, keepdims=True)
    m = np.where(np.isinf(m), 0, m)
    e = np.exp(s - m)
    total = e.sum(-1, keepdims=True)
    return np.where(total > 0, e / np.where(total > 0, total, 1), 0) @ v


CASES = {
    "plain": dict(),
    "causal": dict(is_causal=True),
    "scale": dict(scale=0.7),
    "bool_mask": dict(attn_mask=np.random.default_rng(0).random((7, 9)) > 0.3),
    "key_padding": dict(attn_mask=np.arange(9)[None, None, None, :]
                        < np.array([3, 9])[:, None, None, None]),
    "float_mask": dict(attn_mask=np.random.default_rng(1).standard_normal((2, 1, 7, 9))),
}


def _qkv(rng, shape_q=(2, 3, 7, 5), shape_k=(2, 3, 9, 5), ev=4):
    return [rng.standard_normal(shape_q), rng.standard_normal(shape_k),
            rng.standard_normal(shape_k[:-1] + (ev,))]


def _call(kw, dtype):
    kw = dict(kw)
    if "attn_mask" in kw and kw["attn_mask"].dtype.kind == "f":
        kw["attn_mask"] = kw["attn_mask"].astype(dtype)
    return kw


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_numpy(rng, dtype, case):
    kw = CASES[case]
    check_forward(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, **_call(kw, dtype)),
                  lambda q, k, v: reference(q, k, v, kw.get("attn_mask"), kw.get("is_causal", False),
                                            kw.get("scale")),
                  _qkv(rng), dtype, kind=KIND)


@pytest.mark.parametrize("shapes", [((4, 3), (6, 3)), ((1, 1, 2), (1, 1, 2)), ((3, 5, 2), (3, 1, 2)),
                                    ((2, 2, 2, 1, 3), (2, 2, 2, 4, 3))])
def test_other_ranks_and_sizes(rng, shapes):
    q = rng.standard_normal(shapes[0])
    k = rng.standard_normal(shapes[1])
    v = rng.standard_normal(shapes[1][:-1] + (2,))
    out = F.scaled_dot_product_attention(q, k, v)
    np.testing.assert_allclose(out.numpy(), reference(q, k, v), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", sorted(CASES))
def test_gradcheck(rng, case):
    kw = CASES[case]
    inputs = _qkv(rng, (1, 2, 3, 4), (1, 2, 5, 4), 3)
    mask = kw.get("attn_mask")
    if mask is not None:
        kw = dict(kw, attn_mask=mask[..., :3, :5] if mask.ndim == 2 else
                  (np.arange(5) < 2)[None, None, None, :] if mask.dtype == bool else
                  mask[:1, :, :3, :5])
    check_gradcheck(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, **kw), inputs)


@pytest.mark.parametrize("case", ["plain", "causal", "key_padding"])
def test_double_backward_through_the_composed_path(rng, case):
    kw = CASES[case]
    if "attn_mask" in kw:
        kw = dict(attn_mask=(np.arange(4) < 3)[None, None, None, :])
    inputs = _qkv(rng, (1, 2, 3, 2), (1, 2, 4, 2), 2)
    check_gradcheck(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, **kw), inputs,
                    gradgrad=True)


def test_gradient_reaches_a_float_mask_that_requires_it(rng):
    q, k, v = _qkv(rng, (1, 1, 3, 2), (1, 1, 4, 2), 2)
    mask = rng.standard_normal((3, 4))
    inputs = [mn.tensor(a, requires_grad=True) for a in (q, k, v, mask)]
    assert mn.gradcheck(lambda a, b, c, m: F.scaled_dot_product_attention(a, b, c, attn_mask=m),
                        inputs)


def test_fully_masked_rows_are_zero_with_finite_gradients(rng):
    q, k, v = (mn.tensor(a, requires_grad=True) for a in _qkv(rng, (1, 1, 3, 2), (1, 1, 4, 2), 2))
    mask = np.ones((3, 4), bool)
    mask[1] = False
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    assert np.all(out.numpy()[0, 0, 1] == 0)
    out.sum().backward()
    assert np.all(q.grad[0, 0, 1] == 0) and all(np.all(np.isfinite(t.grad)) for t in (q, k, v))


def test_dropout_path_is_seeded_and_scales(rng):
    q, k, v = _qkv(rng)
    mn.manual_seed(3)
    a = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5).numpy()
    mn.manual_seed(3)
    b = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5).numpy()
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, reference(q, k, v))
    x = mn.tensor(np.ones((1, 1, 1, 1)))
    ones = F.scaled_dot_product_attention(x, mn.tensor(np.ones((1, 1, 400, 1))),
                                          mn.tensor(np.ones((1, 1, 400, 1))), dropout_p=0.5)
    assert 0.7 < ones.numpy().item() < 1.3     # E[kept / (1 - p)] = 1


def test_grouped_query_attention(rng):
    q = rng.standard_normal((2, 4, 5, 3))
    k = rng.standard_normal((2, 2, 6, 3))
    v = rng.standard_normal((2, 2, 6, 3))
    out = F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    want = reference(q, np.repeat(k, 2, axis=1), np.repeat(v, 2, axis=1))
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="`key`"):
        F.scaled_dot_product_attention(q, k, v)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_torch(torch, rng, dtype, case):
    kw = CASES[case]

    def torch_fn(q, k, v):
        tkw = {key: (torch.tensor(val.astype(dtype) if val.dtype.kind == "f" else val)
                     if isinstance(val, np.ndarray) else val) for key, val in kw.items()}
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, **tkw)

    tol = TOLERANCES[KIND][dtype]
    check_torch(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, **_call(kw, dtype)),
                torch_fn, _qkv(rng), dtype, kind=KIND, torch=torch,
                grad_tol=dict(rtol=tol["rtol"] * 10, atol=tol["atol"] * 10))


def test_fully_masked_rows_match_torch(torch, rng):
    q, k, v = _qkv(rng, (1, 1, 3, 2), (1, 1, 4, 2), 2)
    mask = np.ones((3, 4), bool)
    mask[1] = False
    want = torch.nn.functional.scaled_dot_product_attention(
        *(torch.tensor(a) for a in (q, k, v)), attn_mask=torch.tensor(mask)).numpy()
    np.testing.assert_allclose(F.scaled_dot_product_attention(q, k, v, attn_mask=mask).numpy(),
                               want, rtol=1e-12, atol=1e-12)


def _keras_qkv(rng, t=5, s=6, n=2, h=3):
    return (rng.standard_normal((2, t, n, h)).astype(np.float32),
            rng.standard_normal((2, s, n, h)).astype(np.float32),
            rng.standard_normal((2, s, n, h)).astype(np.float32))


@pytest.mark.parametrize("kw", [dict(), dict(is_causal=True), dict(scale=0.3),
                                dict(mask="keys"), dict(mask="pairs", is_causal=True),
                                dict(bias=True)], ids=str)
def test_keras_layout_matches_keras_ops(keras, rng, kw):
    q, k, v = _keras_qkv(rng)
    kw = dict(kw)
    if kw.get("mask") == "keys":
        kw["mask"] = (np.arange(6) < np.array([[4], [6]]))[:, None, None, :]
    elif kw.get("mask") == "pairs":
        kw["mask"] = rng.random((2, 2, 5, 6)) > 0.3
        kw["mask"][..., 0] = True       # every row keeps a key (Keras differs on empty rows)
    if kw.get("bias"):
        kw["bias"] = rng.standard_normal((2, 2, 5, 6)).astype(np.float32)
    want = keras.ops.convert_to_numpy(keras.ops.dot_product_attention(q, k, v, **kw))
    got = F.dot_product_attention_keras(q, k, v, **kw).numpy()
    np.testing.assert_allclose(got, want, **TOLERANCES[KIND][np.float32])


def test_keras_layout_equals_torch_layout_and_gradchecks(rng):
    q, k, v = (a.astype(np.float64) for a in _keras_qkv(rng, 3, 4, 2, 2))
    swap = lambda a: np.ascontiguousarray(a.transpose(0, 2, 1, 3))
    got = F.dot_product_attention_keras(q, k, v, is_causal=True).numpy()
    want = F.scaled_dot_product_attention(swap(q), swap(k), swap(v), is_causal=True).numpy()
    np.testing.assert_allclose(got, swap(want), rtol=1e-13, atol=1e-13)
    check_gradcheck(lambda a, b, c: F.dot_product_attention_keras(a, b, c, is_causal=True),
                    [q, k, v], gradgrad=True)
    check_gradcheck(lambda a, b, c: F.dot_product_attention_keras(
        a, b, c, mask=np.array([True, True, False, True])), [q, k, v])
    as_ints = F.dot_product_attention_keras(q, k, v, mask=np.array([1, 1, 0, 1])).numpy()
    as_bools = F.dot_product_attention_keras(q, k, v, mask=np.array([True, True, False, True]))
    np.testing.assert_array_equal(as_ints, as_bools.numpy())     # Keras casts masks to bool


def test_keras_grouped_query_heads(rng):
    q = rng.standard_normal((1, 3, 4, 2))
    k = rng.standard_normal((1, 5, 2, 2))
    out = F.dot_product_attention_keras(q, k, k).numpy()
    sq = q.transpose(0, 2, 1, 3)
    sk = np.repeat(k.transpose(0, 2, 1, 3), 2, axis=1)
    np.testing.assert_allclose(out, reference(sq, sk, sk).transpose(0, 2, 1, 3), rtol=1e-12)


def test_named_errors(rng):
    q, k, v = _qkv(rng)
    with pytest.raises(ValueError, match="`key`: expected last dimension"):
        F.scaled_dot_product_attention(q, k[..., :2], v)
    with pytest.raises(ValueError, match="`value`"):
        F.scaled_dot_product_attention(q, k, v[..., :3, :])
    with pytest.raises(TypeError, match="one float dtype"):
        F.scaled_dot_product_attention(q.astype(np.float32), k, v)
    with pytest.raises(ValueError, match="`attn_mask`: expected a shape broadcastable"):
        F.scaled_dot_product_attention(q, k, v, attn_mask=np.ones((3, 3), bool))
    with pytest.raises(TypeError, match="`attn_mask`"):
        F.scaled_dot_product_attention(q, k, v, attn_mask=np.ones((7, 9), np.int64))
    with pytest.raises(ValueError, match="`attn_mask` and `is_causal`"):
        F.scaled_dot_product_attention(q, k, v, attn_mask=np.ones((7, 9), bool), is_causal=True)
    with pytest.raises(ValueError, match="`dropout_p`"):
        F.scaled_dot_product_attention(q, k, v, dropout_p=1.0)
    with pytest.raises(TypeError, match="`scale`"):
        F.scaled_dot_product_attention(q, k, v, scale="big")
    with pytest.raises(ValueError, match="`query`: expected at least 2"):
        F.scaled_dot_product_attention(q[0, 0, 0], k, v)
    kq, kk, kv = _keras_qkv(rng)
    with pytest.raises(ValueError, match="only supports 4-D"):
        F.dot_product_attention_keras(kq[0], kk, kv)
    with pytest.raises(ValueError, match="Only one of `bias` and `mask`"):
        F.dot_product_attention_keras(kq, kk, kv, bias=np.zeros((5, 6)), mask=np.ones((5, 6), bool))
    with pytest.raises(ValueError, match="`attn_logits_soft_cap`"):
        F.dot_product_attention_keras(kq, kk, kv, attn_logits_soft_cap=20.0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_one_and_two_threads_give_the_same_bits(rng, dtype):
    q, k, v = (a.astype(dtype) for a in _qkv(rng, (2, 4, 33, 8), (2, 4, 45, 8), 8))
    results = []
    before = mn.get_num_threads()
    try:
        for n in (1, 2):
            mn.set_num_threads(n)
            tensors = [mn.tensor(a, requires_grad=True) for a in (q, k, v)]
            out = F.scaled_dot_product_attention(*tensors, is_causal=True)
            out.backward(np.ones_like(out.numpy()))
            results.append([out.numpy()] + [t.grad for t in tensors])
    finally:
        mn.set_num_threads(before)
    for a, b in zip(*results):
        assert np.array_equal(a, b)
