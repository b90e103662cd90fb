"""MultiHeadAttention, Attention and AdditiveAttention: NumPy reference, float64 gradcheck of
inputs and every weight, Keras parity with the weights copied, torch.nn.MultiheadAttention
parity through interop (both directions), masks, dropout, config, errors.

The layers are called through ``layer.call(...)`` here; the ``layer(q, v, ...)`` and
functional-Model forms are in test_attention_call_contract.py."""
import numpy as np
import pytest

import minnet as mn
from minnet import interop, layers
from minnet.layers.base import get_keras_mask
from _harness import TOLERANCES

TOL32 = TOLERANCES["gemm"][np.float32]


def _softmax(s):
    m = s.max(-1, keepdims=True)
    m = np.where(np.isinf(m), 0, m)
    e = np.exp(s - m)
    total = e.sum(-1, keepdims=True)
    return np.where(total > 0, e / np.where(total > 0, total, 1), 0)


def mha_reference(weights, q, v, k=None, allowed=None, causal=False, use_bias=True):
    """NumPy MultiHeadAttention with Keras's kernels; ``allowed`` (B, T, S) booleans."""
    k = v if k is None else k
    if use_bias:
        wq, bq, wk, bk, wv, bv, wo, bo = weights
    else:
        (wq, wk, wv, wo), bq = weights, None
        bk = bv = bo = 0
    qp = np.einsum("btd,dnh->btnh", q, wq) + (0 if bq is None else bq)
    kp = np.einsum("bsd,dnh->bsnh", k, wk) + bk
    vp = np.einsum("bsd,dnh->bsnh", v, wv) + bv
    s = np.einsum("btnh,bsnh->bnts", qp, kp) / np.sqrt(wq.shape[-1])
    t, sl = s.shape[-2:]
    ok = np.ones((q.shape[0], t, sl), bool) if allowed is None else allowed
    if causal:
        ok = ok & np.tril(np.ones((t, sl), bool))
    p = _softmax(np.where(ok[:, None], s, -np.inf))
    out = np.einsum("bnts,bsnh->btnh", p, vp)
    return np.einsum("btnh,nho->bto", out, wo) + bo, p


def _mha(rng, dtype="float64", q_dim=6, v_dim=5, k_dim=None, **kw):
    layer = layers.MultiHeadAttention(num_heads=2, key_dim=3, dtype=dtype, **kw)
    layer.build((None, 4, q_dim), (None, 7, v_dim), None if k_dim is None else (None, 7, k_dim))
    for w in layer.weights:     # non-zero biases, so that they are checked too
        w.data[...] = rng.standard_normal(w.shape) * 0.5
    return layer


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("masks", ["none", "causal", "value_mask", "attention_mask", "all"])
def test_mha_matches_numpy(rng, dtype, masks):
    layer = _mha(rng, dtype)
    q = rng.standard_normal((3, 4, 6)).astype(dtype)
    v = rng.standard_normal((3, 7, 5)).astype(dtype)
    kwargs, allowed = {}, np.ones((3, 4, 7), bool)
    if masks in ("value_mask", "all"):
        vm = np.arange(7)[None] < np.array([[2], [7], [5]])
        kwargs["value_mask"] = vm
        allowed = allowed & vm[:, None, :]
    if masks in ("attention_mask", "all"):
        am = rng.random((3, 4, 7)) > 0.3
        am[:, :, 0] = True
        kwargs["attention_mask"] = am
        allowed = allowed & am
    causal = masks in ("causal", "all")
    out = layer.call(q, v, use_causal_mask=causal, **kwargs)
    want, _ = mha_reference([w.astype(np.float64) for w in layer.get_weights()], q.astype(np.float64),
                            v.astype(np.float64), allowed=allowed, causal=causal)
    tol = TOLERANCES["gemm"][np.dtype(dtype).type]
    assert out.dtype == np.dtype(dtype) and out.shape == (3, 4, 6)
    np.testing.assert_allclose(out.numpy(), want, rtol=tol["rtol"] * 5, atol=tol["atol"] * 5)


def test_mha_weights_have_keras_layout_and_order(rng):
    layer = layers.MultiHeadAttention(num_heads=2, key_dim=3, value_dim=4, output_shape=5)
    layer.build((None, 4, 6), (None, 7, 8), (None, 7, 9))
    assert [w.shape for w in layer.get_weights()] == [
        (6, 2, 3), (2, 3), (9, 2, 3), (2, 3), (8, 2, 4), (2, 4), (2, 4, 5), (5,)]
    assert layers.MultiHeadAttention(2, 3, use_bias=False).__class__ is layers.MultiHeadAttention


def test_mha_gradcheck_of_inputs_and_every_weight(rng):
    layer = _mha(rng, "float64", q_dim=4, v_dim=3, k_dim=2)
    q, v, k = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 4, 3)), rng.standard_normal((2, 4, 2))
    names = ["query_kernel", "query_bias", "key_kernel", "key_bias", "value_kernel", "value_bias",
             "attention_output_kernel", "attention_output_bias"]

    def fn(tq, tv, tk, *weights):
        for name, w in zip(names, weights):
            object.__setattr__(layer, name, w)
        return layer.call(tq, tv, key=tk, value_mask=np.array([[1, 1, 1, 0], [1, 1, 1, 1]], bool),
                          use_causal_mask=True)

    inputs = [mn.tensor(a, requires_grad=True) for a in (q, v, k)]
    inputs += [mn.tensor(getattr(layer, n).numpy(), requires_grad=True) for n in names]
    assert mn.gradcheck(fn, inputs)


def test_mha_scores_path_gradcheck_and_scores(rng):
    layer = _mha(rng, "float64", q_dim=3, v_dim=3)
    q, v = rng.standard_normal((1, 3, 3)), rng.standard_normal((1, 4, 3))
    out, scores = layer.call(q, v, return_attention_scores=True, use_causal_mask=True)
    want, p = mha_reference(layer.get_weights(), q, v, causal=True)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(scores.numpy(), p, rtol=1e-12, atol=1e-12)
    fn = lambda a, b: layer.call(a, b, return_attention_scores=True)[0]
    assert mn.gradcheck(fn, [mn.tensor(q, requires_grad=True), mn.tensor(v, requires_grad=True)])


def test_mha_reads_the_keras_masks_of_its_inputs(rng):
    emb = layers.Embedding(10, 6, mask_zero=True)
    tokens = np.array([[3, 4, 5, 0, 0], [1, 2, 3, 4, 5]])
    x = emb(tokens)
    layer = layers.MultiHeadAttention(num_heads=2, key_dim=3)
    layer.build(x.shape, x.shape)
    out = layer.call(x, x)
    m = tokens != 0
    explicit = layer.call(mn.tensor(x.numpy()), mn.tensor(x.numpy()), query_mask=m, value_mask=m)
    np.testing.assert_allclose(out.numpy(), explicit.numpy(), rtol=1e-6, atol=1e-6)
    assert np.array_equal(get_keras_mask(out), m)
    unmasked = layer.call(mn.tensor(x.numpy()), mn.tensor(x.numpy()))
    assert not np.allclose(unmasked.numpy()[0, :3], out.numpy()[0, :3])


def test_mha_dropout_only_in_training_and_seeded(rng):
    layer = _mha(rng, "float64", dropout=0.5)
    q, v = rng.standard_normal((2, 4, 6)), rng.standard_normal((2, 7, 5))
    plain = layer.call(q, v, training=False).numpy()
    want, _ = mha_reference(layer.get_weights(), q, v)
    np.testing.assert_allclose(plain, want, rtol=1e-12, atol=1e-12)
    mn.manual_seed(1)
    a = layer.call(q, v, training=True).numpy()
    mn.manual_seed(1)
    b = layer.call(q, v, training=True).numpy()
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, plain)


def test_mha_rank4_inputs_attend_over_the_flattened_axes(rng):
    layer = _mha(rng, "float64", q_dim=6, v_dim=6)
    x = rng.standard_normal((2, 2, 3, 6))
    out = layer.call(x, x)
    want, _ = mha_reference(layer.get_weights(), x.reshape(2, 6, 6), x.reshape(2, 6, 6))
    np.testing.assert_allclose(out.numpy(), want.reshape(2, 2, 3, 6), rtol=1e-12, atol=1e-12)


def _axes_reference(layer, q, v, axes):
    """Attention along ``axes`` of rank-4 inputs, the other inner axis a batch axis: a loop
    over that axis of the 3-D NumPy reference."""
    other = ({1, 2} - set(axes)).pop() if len(axes) == 1 else None
    if other is None:
        want, probs = mha_reference(layer.get_weights(), q.reshape(q.shape[0], -1, q.shape[-1]),
                                    v.reshape(v.shape[0], -1, v.shape[-1]))
        return want.reshape(q.shape[:-1] + want.shape[-1:]), probs
    outs, scores = [], []
    for i in range(q.shape[other]):
        qi, vi = np.take(q, i, axis=other), np.take(v, i, axis=other)
        out, probs = mha_reference(layer.get_weights(), qi, vi)
        outs.append(out)
        scores.append(probs)
    return np.stack(outs, axis=other), np.stack(scores, axis=1)


@pytest.mark.parametrize("axes", [(2,), -2, (1,), (1, 2), (2, 1)], ids=str)
def test_mha_attention_axes_match_numpy(rng, axes):
    layer = _mha(rng, "float64", q_dim=6, v_dim=5)
    layer.attention_axes = layers.MultiHeadAttention(2, 3, attention_axes=axes).attention_axes
    q, v = rng.standard_normal((2, 3, 4, 6)), rng.standard_normal((2, 3, 4, 5))
    if axes == (1,):
        v = rng.standard_normal((2, 5, 4, 5))         # the attention axis may differ in size
    out, scores = layer.call(q, v, return_attention_scores=True)
    normal = (1,) if axes == (1,) else (2,) if axes in ((2,), -2) else axes
    if normal == (2, 1):        # order given: scores (B, heads, q1, q2, k1, k2) in that order
        want = _axes_reference(layer, q.transpose(0, 2, 1, 3), v.transpose(0, 2, 1, 3), (1, 2))[0]
        want = want.transpose(0, 2, 1, 3)
        assert scores.shape == (2, 2, 4, 3, 4, 3)
    else:
        want, want_scores = _axes_reference(layer, q, v, normal)
        if len(normal) == 1:
            np.testing.assert_allclose(scores.numpy(), want_scores, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-12, atol=1e-12)
    fused = layer.call(q, v)                             # no scores: the fused kernel
    np.testing.assert_allclose(fused.numpy(), want, rtol=1e-12, atol=1e-12)


def test_mha_attention_axes_gradcheck_and_masks(rng):
    layer = _mha(rng, "float64", q_dim=4, v_dim=4)
    layer.attention_axes = (2,)
    q = mn.tensor(rng.standard_normal((2, 2, 3, 4)), requires_grad=True)
    v = mn.tensor(rng.standard_normal((2, 2, 3, 4)), requires_grad=True)
    assert mn.autograd.gradcheck(lambda a, b: layer.call(a, b), (q, v))
    mask = rng.random((2, 2, 3, 3)) > 0.3
    mask[..., 0] = True
    got = layer.call(q.detach(), v.detach(), attention_mask=mask).numpy()
    for i in range(2):
        want = layer.call(q.detach().numpy()[:, i], v.detach().numpy()[:, i],
                          attention_mask=mask[:, i]).numpy()
        np.testing.assert_allclose(got[:, i], want, rtol=1e-12, atol=1e-12)
    value_mask = np.ones((2, 2, 3), bool)
    value_mask[0, 1, 2] = False
    got = layer.call(q.detach(), v.detach(), value_mask=value_mask).numpy()
    want = layer.call(q.detach().numpy()[:, 1], v.detach().numpy()[:, 1],
                      value_mask=value_mask[:, 1]).numpy()
    np.testing.assert_allclose(got[:, 1], want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("axes", [(2,), (1,), (1, 2), None, (-2,)], ids=str)
@pytest.mark.parametrize("call", ["plain", "scores", "attention_mask"])
def test_mha_attention_axes_match_keras(keras, rng, axes, call):
    q = rng.standard_normal((2, 3, 4, 6)).astype("float32")
    v = rng.standard_normal((2, 3, 4, 5)).astype("float32")
    kw = {"plain": {}, "scores": dict(return_attention_scores=True),
          "attention_mask": dict(attention_mask=rng.random((2, 3, 4, 3, 4) if axes in
                                 ((1, 2), None) else (2, 3, 4, 4) if axes != (1,) else
                                 (2, 4, 3, 3)) > 0.2)}[call]
    theirs = keras.layers.MultiHeadAttention(num_heads=2, key_dim=3, attention_axes=axes)
    want = theirs(q, v, **kw)
    ours = layers.MultiHeadAttention(num_heads=2, key_dim=3, attention_axes=axes)
    ours.build(q.shape, v.shape)
    _copy_keras_weights(ours, theirs)
    got = ours.call(q, v, **kw)
    if call == "scores":
        (got, got_scores), (want, want_scores) = got, want
        np.testing.assert_allclose(got_scores.numpy(), keras.ops.convert_to_numpy(want_scores), **TOL32)
    np.testing.assert_allclose(got.numpy(), keras.ops.convert_to_numpy(want), **TOL32)


def test_mha_config_round_trip():
    layer = layers.MultiHeadAttention(num_heads=4, key_dim=8, value_dim=6, dropout=0.1,
                                      use_bias=False, output_shape=(5,), kernel_initializer="he_normal",
                                      attention_axes=(2,))
    again = layers.MultiHeadAttention.from_config(layer.get_config())
    config = again.get_config()
    config.pop("name")
    expected = layer.get_config()
    expected.pop("name")
    assert config == expected and again.value_dim == 6 and again.output_shape_arg == (5,)


def test_mha_errors(rng):
    with pytest.raises(ValueError, match="`attention_axes`"):
        layers.MultiHeadAttention(2, 3, attention_axes="1")
    with pytest.raises(ValueError, match="`attention_axes`"):
        layers.MultiHeadAttention(2, 3, attention_axes=())
    with pytest.raises(ValueError, match="`attention_axes`"):   # the feature axis
        layers.MultiHeadAttention(2, 3, attention_axes=3).call(np.zeros((1, 2, 3, 4)),
                                                              np.zeros((1, 2, 3, 4)))
    with pytest.raises(ValueError, match="`attention_axes`"):   # named twice
        layers.MultiHeadAttention(2, 3, attention_axes=(1, -3)).call(np.zeros((1, 2, 3, 4)),
                                                                    np.zeros((1, 2, 3, 4)))
    with pytest.raises(ValueError, match="non-attention axes"):
        layers.MultiHeadAttention(2, 3, attention_axes=2).call(np.zeros((1, 2, 3, 4)),
                                                              np.zeros((1, 5, 3, 4)))
    with pytest.raises(ValueError, match="`num_heads`"):
        layers.MultiHeadAttention(0, 3)
    with pytest.raises(ValueError, match="`dropout`"):
        layers.MultiHeadAttention(2, 3, dropout=1.5)
    layer = layers.MultiHeadAttention(2, 3)
    with pytest.raises(ValueError, match="except the last one"):
        layer.build((None, 4, 6), (None, 7, 5), (None, 6, 5))
    layer.build((None, 4, 6), (None, 7, 5))
    q, v = rng.standard_normal((2, 4, 6)), rng.standard_normal((2, 7, 5))
    with pytest.raises(ValueError, match="`value`"):
        layer.call(q, rng.standard_normal((2, 7, 4)))
    with pytest.raises(ValueError, match="`value_mask`"):
        layer.call(q, v, value_mask=np.ones((2, 6), bool))
    with pytest.raises(ValueError, match="`attention_mask`"):
        layer.call(q, v, attention_mask=np.ones((2, 4, 6), bool))


def _copy_keras_weights(ours, theirs):
    ours.set_weights([np.asarray(w) for w in theirs.get_weights()])


@pytest.mark.parametrize("options", [dict(), dict(value_dim=2), dict(output_shape=(4,)),
                                     dict(use_bias=False)], ids=str)
@pytest.mark.parametrize("call", ["plain", "causal", "attention_mask", "value_mask", "key",
                                  "scores"])
def test_mha_matches_keras(keras, rng, options, call):
    q = rng.standard_normal((2, 5, 6)).astype("float32")
    v = rng.standard_normal((2, 7, 4)).astype("float32")
    k = rng.standard_normal((2, 7, 3)).astype("float32")
    kw = {"plain": {}, "causal": dict(use_causal_mask=True),
          "attention_mask": dict(attention_mask=rng.random((2, 5, 7)) > 0.2),
          "value_mask": dict(value_mask=np.arange(7)[None] < np.array([[3], [7]])),
          "key": dict(key=k), "scores": dict(return_attention_scores=True)}[call]
    theirs = keras.layers.MultiHeadAttention(num_heads=2, key_dim=3, **options)
    want = theirs(q, v, **kw)
    ours = layers.MultiHeadAttention(num_heads=2, key_dim=3, **options)
    ours.build(q.shape, v.shape, None if "key" not in kw else k.shape)
    _copy_keras_weights(ours, theirs)
    got = ours.call(q, v, **kw)
    if call == "scores":
        (got, got_scores), (want, want_scores) = got, want
        np.testing.assert_allclose(got_scores.numpy(), keras.ops.convert_to_numpy(want_scores), **TOL32)
    np.testing.assert_allclose(got.numpy(), keras.ops.convert_to_numpy(want), **TOL32)


def test_mha_with_embedding_masks_matches_keras_on_real_steps(keras, rng):
    tokens = np.array([[3, 4, 5, 0, 0], [1, 2, 3, 4, 5]])
    k_emb = keras.layers.Embedding(10, 6, mask_zero=True)
    k_mha = keras.layers.MultiHeadAttention(num_heads=2, key_dim=3)
    kx = k_emb(tokens)
    want = keras.ops.convert_to_numpy(k_mha(kx, kx))
    emb = layers.Embedding(10, 6, mask_zero=True)
    emb.build((None, 5))
    emb.set_weights([keras.ops.convert_to_numpy(w) for w in k_emb.get_weights()])
    x = emb(tokens)
    mha = layers.MultiHeadAttention(num_heads=2, key_dim=3)
    mha.build(x.shape, x.shape)
    _copy_keras_weights(mha, k_mha)
    got = mha.call(x, x).numpy()
    real = tokens != 0
    # masked query steps: Keras's fused path gives uniform weights there, minnet 0 (documented)
    np.testing.assert_allclose(got[real], want[real], **TOL32)


@pytest.mark.parametrize("kdim", [None, 5])
@pytest.mark.parametrize("bias", [True, False])
def test_mha_matches_torch_multihead_attention_both_ways(torch, rng, kdim, bias):
    layer = _mha(rng, "float64", q_dim=6, v_dim=kdim or 6, k_dim=kdim, use_bias=bias)
    module = interop.mha_to_torch(layer)
    q = rng.standard_normal((2, 4, 6))
    k = rng.standard_normal((2, 7, kdim or 6))
    v = rng.standard_normal((2, 7, kdim or 6))
    padding = np.arange(7)[None] >= np.array([[5], [7]])         # torch: True = ignore
    future = np.triu(np.ones((4, 7), bool), 1)
    want, weights = module(*(torch.tensor(a) for a in (q, k, v)), key_padding_mask=torch.tensor(padding),
                           attn_mask=torch.tensor(future))
    got, scores = layer.call(q, v, key=k, value_mask=~padding, use_causal_mask=True,
                             return_attention_scores=True)
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(scores.numpy().mean(axis=1), weights.detach().numpy(), rtol=1e-12,
                               atol=1e-12)
    fused = layer.call(q, v, key=k, value_mask=~padding, use_causal_mask=True)
    np.testing.assert_allclose(fused.numpy(), want.detach().numpy(), rtol=1e-12, atol=1e-12)
    back = interop.mha_from_torch(module)
    for a, b in zip(back.get_weights(), layer.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_interop_names_why_there_is_no_twin(rng):
    layer = layers.MultiHeadAttention(2, 4, value_dim=3)
    layer.build((None, 3, 8), (None, 3, 8))
    with pytest.raises(ValueError, match="value_dim"):
        interop.mha_state_dict(layer)
    layer = layers.MultiHeadAttention(2, 3)
    layer.build((None, 3, 8), (None, 3, 8))
    with pytest.raises(ValueError, match="num_heads \\* key_dim"):
        interop.mha_state_dict(layer)
    layer = layers.MultiHeadAttention(2, 4, output_shape=5)
    layer.build((None, 3, 8), (None, 3, 8))
    with pytest.raises(ValueError, match="output shape"):
        interop.mha_state_dict(layer)


def test_interop_state_dict_needs_no_torch_and_round_trips(rng):
    layer = _mha(rng, "float64", q_dim=6, v_dim=6)
    state = interop.mha_state_dict(layer)
    assert sorted(state) == ["in_proj_bias", "in_proj_weight", "out_proj.bias", "out_proj.weight"]
    assert state["in_proj_weight"].shape == (18, 6)
    other = _mha(np.random.default_rng(9), "float64", q_dim=6, v_dim=6)
    interop.load_mha_state_dict(other, state)
    for a, b in zip(other.get_weights(), layer.get_weights()):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="missing"):
        interop.load_mha_state_dict(other, {"in_proj_weight": state["in_proj_weight"]})


# ---- Attention / AdditiveAttention ---------------------------------------------------------

def attention_reference(q, v, k=None, scale=1.0, v_mask=None, q_mask=None, causal=False,
                        additive=None):
    k = v if k is None else k
    if additive is None:
        s = q @ np.swapaxes(k, -1, -2) * scale
    else:
        s = (additive * np.tanh(q[:, :, None, :] + k[:, None, :, :])).sum(-1)
    ok = np.ones(s.shape, bool)
    if v_mask is not None:
        ok = ok & v_mask[:, None, :]
    if causal:
        ok = ok & np.tril(np.ones(s.shape[-2:], bool))
    s = np.where(ok, s, s - 1e9)
    p = np.exp(s - s.max(-1, keepdims=True))
    p = p / p.sum(-1, keepdims=True)
    out = p @ v
    if q_mask is not None:
        out = out * q_mask[:, :, None]
    return out, p


@pytest.mark.parametrize("causal", [False, True])
def test_attention_matches_numpy(rng, causal):
    q, v, k = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 5, 4)), rng.standard_normal((2, 5, 4))
    vm = np.arange(5)[None] < np.array([[3], [5]])
    qm = np.array([[True, True, False], [True, True, True]])
    layer = layers.Attention(use_scale=True, dtype="float64")
    layer.build([q.shape, v.shape, k.shape])
    layer.scale.data[...] = 0.7
    out, p = layer.call([q, v, k], mask=[qm, vm], use_causal_mask=causal, return_attention_scores=True)
    want, wp = attention_reference(q, v, k, 0.7, vm, qm, causal)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(p.numpy(), wp, rtol=1e-12, atol=1e-12)


def test_additive_attention_matches_numpy_and_gradchecks(rng):
    q, v = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 5, 4))
    layer = layers.AdditiveAttention(dtype="float64")
    layer.build([q.shape, v.shape])
    out = layer.call([q, v])
    want, _ = attention_reference(q, v, additive=layer.scale.numpy())
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-12, atol=1e-12)

    def fn(tq, tv, scale):
        object.__setattr__(layer, "scale", scale)
        return layer.call([tq, tv], mask=[None, np.array([[1, 1, 0, 1, 1]] * 2, bool)])

    inputs = [mn.tensor(a, requires_grad=True) for a in (q, v, layer.scale.numpy())]
    assert mn.gradcheck(fn, inputs)


def test_attention_concat_gradchecks_its_weights(rng):
    q, v = rng.standard_normal((1, 2, 3)), rng.standard_normal((1, 4, 3))
    layer = layers.Attention(use_scale=True, score_mode="concat", dtype="float64")
    layer.build([q.shape, v.shape])

    def fn(tq, tv, scale, weight):
        object.__setattr__(layer, "scale", scale)
        object.__setattr__(layer, "concat_score_weight", weight)
        return layer.call([tq, tv], use_causal_mask=True)

    inputs = [mn.tensor(a, requires_grad=True) for a in (q, v, np.array(0.8), np.array(1.3))]
    assert mn.gradcheck(fn, inputs)


@pytest.mark.parametrize("cls, options", [("Attention", dict()), ("Attention", dict(use_scale=True)),
                                          ("Attention", dict(score_mode="concat", use_scale=True)),
                                          ("AdditiveAttention", dict()),
                                          ("AdditiveAttention", dict(use_scale=False))], ids=str)
def test_attention_layers_match_keras(keras, rng, cls, options):
    q = rng.standard_normal((2, 5, 6)).astype("float32")
    v = rng.standard_normal((2, 7, 6)).astype("float32")
    k = rng.standard_normal((2, 7, 6)).astype("float32")
    vm = np.arange(7)[None] < np.array([[4], [7]])
    qm = np.arange(5)[None] < np.array([[5], [2]])
    theirs = getattr(keras.layers, cls)(**options)
    want, want_p = theirs([q, v, k], mask=[qm, vm], use_causal_mask=True, return_attention_scores=True)
    ours = getattr(layers, cls)(**options)
    ours.build([q.shape, v.shape, k.shape])
    ours.set_weights([keras.ops.convert_to_numpy(w) for w in theirs.get_weights()])
    got, got_p = ours.call([q, v, k], mask=[qm, vm], use_causal_mask=True, return_attention_scores=True)
    np.testing.assert_allclose(got.numpy(), keras.ops.convert_to_numpy(want), **TOL32)
    np.testing.assert_allclose(got_p.numpy(), keras.ops.convert_to_numpy(want_p), **TOL32)


def test_attention_errors_and_config(rng):
    with pytest.raises(ValueError, match="score_mode"):
        layers.Attention(score_mode="general")
    layer = layers.Attention()
    with pytest.raises(ValueError, match="list of inputs"):
        layer.call(rng.standard_normal((1, 2, 3)))
    with pytest.raises(ValueError, match="length 2 or 3"):
        layer.call([rng.standard_normal((1, 2, 3))])
    with pytest.raises(ValueError, match="must be 3-D"):
        layer.call([rng.standard_normal((2, 3)), rng.standard_normal((2, 3))])
    config = layers.AdditiveAttention(use_scale=False, dropout=0.2).get_config()
    assert "score_mode" not in config and config["dropout"] == 0.2
    again = layers.Attention.from_config(layers.Attention(score_mode="concat").get_config())
    assert again.score_mode == "concat"


def _gqa_reference(layer, q, v, causal=False):
    """Grouped-query attention in NumPy: key/value head u // repeats serves query head u."""
    w = layer.get_weights()
    qk, qb, kk, kb, vk, vb, ok, ob = w
    heads, kv = layer.num_query_heads, layer.num_key_value_heads
    qh = np.einsum("btm,muh->btuh", q, qk) + qb
    kh = np.repeat(np.einsum("bsm,mvh->bsvh", v, kk) + kb, heads // kv, axis=2)
    vh = np.repeat(np.einsum("bsm,mvh->bsvh", v, vk) + vb, heads // kv, axis=2)
    s = np.einsum("btuh,bsuh->buts", qh, kh) / np.sqrt(layer.head_dim)
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
    p = _softmax(s)
    out = np.einsum("buts,bsuh->btuh", p, vh)
    return np.einsum("btuh,uhm->btm", out, ok) + ob, p


@pytest.mark.parametrize("causal", [False, True])
def test_group_query_attention_matches_numpy_and_gradchecks(rng, causal):
    layer = layers.GroupQueryAttention(head_dim=3, num_query_heads=4, num_key_value_heads=2,
                                       dtype="float64")
    q, v = rng.standard_normal((2, 5, 6)), rng.standard_normal((2, 7, 4))
    layer.build(q.shape, v.shape)
    assert layer.key_kernel.shape == (4, 2, 3) and layer.query_kernel.shape == (6, 4, 3)
    layer.set_weights([w + rng.normal(0, 0.3, w.shape) for w in layer.get_weights()])
    want, probs = _gqa_reference(layer, q, v, causal)
    np.testing.assert_allclose(layer.call(q, v, use_causal_mask=causal).numpy(), want,
                               rtol=1e-12, atol=1e-12)
    out, scores = layer.call(q, v, use_causal_mask=causal, return_attention_scores=True)
    np.testing.assert_allclose(scores.numpy(), probs, rtol=1e-12, atol=1e-12)
    x = mn.tensor(q[:1, :3], requires_grad=True)
    assert mn.autograd.gradcheck(lambda a: layer.call(a, v[:1, :4], use_causal_mask=causal), (x,))
    again = layers.GroupQueryAttention.from_config(layer.get_config())
    assert (again.num_query_heads, again.num_key_value_heads, again.head_dim) == (4, 2, 3)


def test_group_query_attention_errors():
    gqa = layers.GroupQueryAttention(2, num_query_heads=4, num_key_value_heads=2)
    gqa.build((1, 3, 8), (1, 3, 8))
    with pytest.raises(ValueError, match="grouped-query"):
        interop.mha_state_dict(gqa)
    with pytest.raises(ValueError, match="`num_key_value_heads`"):
        layers.GroupQueryAttention(2, num_query_heads=4, num_key_value_heads=3)
    with pytest.raises(ValueError, match="3-D"):
        layers.GroupQueryAttention(2, 4, 2)(np.zeros((1, 2, 3, 4)), np.zeros((1, 2, 3, 4)))


@pytest.mark.parametrize("call", ["plain", "causal", "value_mask", "scores"])
def test_group_query_attention_matches_keras(keras, rng, call):
    q = rng.standard_normal((2, 5, 6)).astype("float32")
    v = rng.standard_normal((2, 7, 4)).astype("float32")
    kw = {"plain": {}, "causal": dict(use_causal_mask=True),
          "value_mask": dict(value_mask=np.arange(7)[None] < np.array([[3], [7]])),
          "scores": dict(return_attention_scores=True)}[call]
    theirs = keras.layers.GroupQueryAttention(head_dim=3, num_query_heads=4, num_key_value_heads=2)
    want = theirs(q, v, **kw)
    ours = layers.GroupQueryAttention(head_dim=3, num_query_heads=4, num_key_value_heads=2)
    ours.build(q.shape, v.shape)
    _copy_keras_weights(ours, theirs)
    got = ours.call(q, v, **kw)
    if call == "scores":
        (got, got_scores), (want, want_scores) = got, want
        np.testing.assert_allclose(got_scores.numpy(), keras.ops.convert_to_numpy(want_scores), **TOL32)
    np.testing.assert_allclose(got.numpy(), keras.ops.convert_to_numpy(want), **TOL32)


@pytest.mark.parametrize("shape", [(0, 5, 4), (2, 5, 0)])
def test_multi_head_attention_on_empty_batches_and_features_gives_keras_shapes(shape):
    """Keras 3.15 (torch backend): (0, 5, 4) -> (0, 5, 4); (2, 5, 0) -> (2, 5, 0)."""
    layer = mn.layers.MultiHeadAttention(2, 2)
    x = mn.tensor(np.zeros(shape, np.float32), requires_grad=True)
    y = layer(x, x)
    assert y.shape == shape
    y.sum().backward()
    assert x.grad.shape == shape


def test_dot_product_attention_layer_on_an_empty_batch():
    x = mn.tensor(np.zeros((0, 5, 4), np.float32), requires_grad=True)
    y = mn.layers.Attention()([x, x])
    assert y.shape == (0, 5, 4)
    y.sum().backward()
    assert x.grad.shape == (0, 5, 4)
