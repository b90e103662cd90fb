"""Embedding and Masking layers."""
import numpy as np
import pytest

import minnet as mn
from minnet import layers
from minnet.layers.embedding import get_keras_mask


def test_embedding_lookup_defaults_and_gradient():
    mn.manual_seed(0)
    layer = layers.Embedding(10, 4)
    ids = np.array([[1, 2, 2], [9, 0, 1]])
    y = layer(ids)
    assert y.shape == (2, 3, 4) and y.dtype == np.float32
    table = layer.embeddings.data
    np.testing.assert_array_equal(y.numpy(), table[ids])
    assert np.abs(table).max() <= 0.05                       # Keras's "uniform": U(-0.05, 0.05)
    assert get_keras_mask(y) is None
    y.sum().backward()
    counts = np.bincount(ids.ravel(), minlength=10)
    np.testing.assert_array_equal(layer.embeddings.grad, np.repeat(counts[:, None], 4, axis=1))


def test_embedding_large_indices_not_rounded_through_float32():
    layer = layers.Embedding(2**24 + 2, 1, embeddings_initializer="zeros")
    layer.build((1, 1))
    layer.embeddings.data[2**24 + 1] = 7.0
    assert layer(np.array([[2**24 + 1]])).numpy()[0, 0, 0] == 7.0


def test_mask_zero_and_masking():
    y = layers.Embedding(5, 2, mask_zero=True)(np.array([[0, 3, 0]]))
    np.testing.assert_array_equal(get_keras_mask(y), [[False, True, False]])
    x = np.array([[[1.0, 2.0], [-1.0, -1.0], [0.0, 3.0]]])
    out = layers.Masking(mask_value=-1.0)(x)
    np.testing.assert_array_equal(get_keras_mask(out), [[True, False, True]])
    np.testing.assert_array_equal(out.numpy()[0, 1], 0.0)


def test_bad_arguments_and_config():
    with pytest.raises(ValueError, match="input_dim"):
        layers.Embedding(0, 3)
    with pytest.raises(TypeError, match="output_dim"):
        layers.Embedding(3, 2.5)
    with pytest.raises(ValueError, match=r"\[0, 3\)"):
        layers.Embedding(3, 2)(np.array([[3]]))
    layer = layers.Embedding(7, 3, mask_zero=True, input_length=5)
    clone = layers.deserialize(layers.serialize(layer))
    assert clone.input_dim == 7 and clone.output_dim == 3 and clone.mask_zero


def test_embedding_matches_torch_text_classifier_gradient(torch):
    rng = np.random.default_rng(0)
    ids = rng.integers(0, 50, size=(4, 9))
    emb = layers.Embedding(50, 6, dtype="float64")
    lstm = layers.LSTM(5, dtype="float64")
    out = lstm(emb(ids))
    out.sum().backward()
    t_emb = torch.nn.Embedding(50, 6).double()
    t_lstm = torch.nn.LSTM(6, 5, batch_first=True).double()
    with torch.no_grad():
        t_emb.weight.copy_(torch.from_numpy(emb.embeddings.data))
        for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            getattr(t_lstm, name + "_l0").copy_(torch.from_numpy(getattr(lstm, name).data))
    _, (h, _) = t_lstm(t_emb(torch.from_numpy(ids)))
    h[0].sum().backward()
    np.testing.assert_allclose(out.numpy(), h[0].detach().numpy(), rtol=1e-10)
    np.testing.assert_allclose(emb.embeddings.grad, t_emb.weight.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_weights_gives_the_initial_matrix_as_keras():
    """Keras 3's ``Embedding(..., weights=matrix)`` (pretrained vectors): built at once with
    that matrix (a list of one matrix too); a matrix of another shape is refused by name."""
    matrix = np.arange(12, dtype=np.float32).reshape(6, 2)
    for given in (matrix, [matrix]):
        layer = layers.Embedding(6, 2, weights=given)
        assert layer.built
        np.testing.assert_array_equal(layer(np.array([[5, 0]])).numpy(), matrix[[[5, 0]]])
    with pytest.raises(ValueError, match=r"\(6, 2\)"):
        layers.Embedding(6, 2, weights=np.zeros((5, 2), np.float32))
