"""ReversibleEmbedding and SpectralNormalization (issue 28): by hand, gradcheck, Keras 3."""
import numpy as np
import pytest

import minnet as mn
from minnet import layers

RNG = np.random.default_rng(39)


def test_reversible_embedding_both_ways_and_gradcheck():
    emb = layers.ReversibleEmbedding(10, 4, dtype="float64")
    ids = np.array([[1, 2, 3], [4, 0, 9]])
    h = emb(ids)
    np.testing.assert_array_equal(h.numpy(), emb.embeddings.data[ids])
    logits = emb(h, reverse=True)
    np.testing.assert_allclose(logits.numpy(), h.numpy() @ emb.embeddings.data.T, rtol=1e-12)
    assert emb.reverse_output_shape((2, 3, 4)) == (2, 3, 10)
    capped = layers.ReversibleEmbedding(10, 4, tie_weights=False, logit_soft_cap=2.0,
                                        dtype="float64")
    capped(ids)
    assert capped.reverse_embeddings.shape == (4, 10)
    x = mn.tensor(RNG.normal(size=(2, 4)), requires_grad=True)
    assert mn.gradcheck(lambda a: capped(a, reverse=True), (x,))
    want = 2.0 * np.tanh(x.numpy() @ capped.reverse_embeddings.data / 2.0)
    np.testing.assert_allclose(capped(x, reverse=True).numpy(), want, rtol=1e-12)
    again = layers.ReversibleEmbedding.from_config(capped.get_config())
    assert again.tie_weights is False and again.logit_soft_cap == 2.0
    with pytest.raises(ValueError, match="features"):
        emb(mn.tensor(np.zeros((2, 5))), reverse=True)


def test_reversible_embedding_in_a_functional_model():
    ids = mn.Input((5,), dtype="int32")
    emb = layers.ReversibleEmbedding(20, 8)
    h = layers.Dense(8)(emb(ids))
    model = mn.Model(ids, emb(h, reverse=True))
    out = model.predict(np.array([[1, 2, 3, 4, 5]]), verbose=0)
    assert out.shape == (1, 5, 20)


def test_spectral_normalization_divides_by_the_largest_singular_value():
    dense = layers.Dense(3, dtype="float64")
    sn = layers.SpectralNormalization(dense, power_iterations=50, dtype="float64")
    x = RNG.normal(size=(4, 5))
    sn(x)                                     # build; inference leaves the kernel alone
    before = dense.kernel.data.copy()
    np.testing.assert_array_equal(dense.kernel.data, before)
    y = sn(x, training=True)
    sigma = np.linalg.svd(before, compute_uv=False)[0]
    np.testing.assert_allclose(dense.kernel.data, before / sigma, rtol=1e-8)
    np.testing.assert_allclose(y.numpy(), x @ dense.kernel.data.T + dense.bias.data, rtol=1e-10)
    assert sn.vector_u.shape == (1, 3)
    conv = layers.SpectralNormalization(layers.Conv2D(4, 3), power_iterations=50)
    conv(np.zeros((1, 6, 6, 2), "float32"))
    assert conv.vector_u.shape == (1, 4)
    again = layers.SpectralNormalization.from_config(sn.get_config())
    assert isinstance(again.layer, layers.Dense) and again.power_iterations == 50
    with pytest.raises(ValueError, match="`power_iterations`"):
        layers.SpectralNormalization(layers.Dense(2), power_iterations=0)
    with pytest.raises(ValueError, match="nor 'embeddings'"):
        layers.SpectralNormalization(layers.ReLU())(np.zeros((1, 2)))


@pytest.mark.slow_once
def test_against_keras(keras):
    ids = np.array([[1, 2, 3], [4, 0, 9]])
    theirs = keras.layers.ReversibleEmbedding(10, 4, tie_weights=False, logit_soft_cap=3.0)
    h_k = theirs(ids)
    ours = layers.ReversibleEmbedding(10, 4, tie_weights=False, logit_soft_cap=3.0)
    ours.build(ids.shape)
    ours.set_weights([keras.ops.convert_to_numpy(w) for w in theirs.get_weights()])
    np.testing.assert_allclose(ours(ids).numpy(), keras.ops.convert_to_numpy(h_k), rtol=1e-6)
    h = RNG.normal(size=(2, 3, 4)).astype("float32")
    np.testing.assert_allclose(ours(h, reverse=True).numpy(),
                               keras.ops.convert_to_numpy(theirs(h, reverse=True)), rtol=1e-5, atol=1e-6)
    x = RNG.normal(size=(4, 5)).astype("float32")
    for make_k, make_m, convert in (
            (lambda: keras.layers.Dense(3), lambda: layers.Dense(3), lambda k: k.T),
            (lambda: keras.layers.Conv2D(4, 3), lambda: layers.Conv2D(4, 3),
             lambda k: np.transpose(k, (3, 2, 0, 1)))):
        data = x if make_m().__class__ is layers.Dense else RNG.normal(size=(2, 6, 6, 2)).astype("float32")
        k_sn = keras.layers.SpectralNormalization(make_k(), power_iterations=2)
        k_sn(data)
        m_sn = layers.SpectralNormalization(make_m(), power_iterations=2)
        m_sn(data)
        kernel = keras.ops.convert_to_numpy(k_sn.layer.kernel)
        bias = keras.ops.convert_to_numpy(k_sn.layer.bias)
        m_sn.layer.set_weights([convert(kernel), bias])
        m_sn.vector_u.data[...] = keras.ops.convert_to_numpy(k_sn.vector_u)
        for _ in range(3):
            want = keras.ops.convert_to_numpy(k_sn(data, training=True))
            got = m_sn(data, training=True).numpy()
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(m_sn.vector_u.data, keras.ops.convert_to_numpy(k_sn.vector_u),
                                   rtol=1e-4, atol=1e-6)
