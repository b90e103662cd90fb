"""The attention layers called as Keras code calls them: ``mha(q, v, use_causal_mask=True)``,
``Attention()([q, v], mask=...)``, inside functional Models and subclassed Transformer blocks.

These need ``Layer.__call__`` to take several positional inputs and keyword arguments and to
pass ``training``/``mask`` only to a ``call`` that declares them (the `contracts` branch).
Until that branch is merged they fail on this branch (``Layer.__call__(x, training=None)``);
the same computations through ``layer.call(...)`` are tested in test_attention.py."""
import numpy as np

import minnet as mn
from minnet import layers
from minnet.layers.base import get_keras_mask


def test_mha_called_with_query_value_and_keywords(rng):
    q = rng.standard_normal((2, 5, 8)).astype("float32")
    v = rng.standard_normal((2, 7, 8)).astype("float32")
    mha = layers.MultiHeadAttention(num_heads=2, key_dim=4)
    out = mha(q, v, use_causal_mask=True)
    assert out.shape == (2, 5, 8)
    np.testing.assert_allclose(out.numpy(), mha.call(q, v, use_causal_mask=True).numpy(),
                               rtol=1e-6, atol=1e-6)
    out, scores = mha(q, v, return_attention_scores=True)
    assert scores.shape == (2, 2, 5, 7)
    assert mha(query=q, value=v, key=v).shape == (2, 5, 8)


def test_mha_propagates_embedding_masks_through_call(rng):
    tokens = np.array([[3, 4, 0, 0], [1, 2, 3, 4]])
    x = layers.Embedding(10, 8, mask_zero=True)(tokens)
    mha = layers.MultiHeadAttention(num_heads=2, key_dim=4)
    out = mha(x, x)
    assert np.array_equal(get_keras_mask(out), tokens != 0)


def test_attention_layers_called_on_lists(rng):
    q = rng.standard_normal((2, 3, 4)).astype("float32")
    v = rng.standard_normal((2, 5, 4)).astype("float32")
    vm = np.arange(5)[None] < np.array([[3], [5]])
    for layer in (layers.Attention(), layers.AdditiveAttention()):
        out = layer([q, v], mask=[None, vm], use_causal_mask=True)
        np.testing.assert_allclose(out.numpy(), layer.call([q, v], mask=[None, vm],
                                                           use_causal_mask=True).numpy(),
                                   rtol=1e-6, atol=1e-6)


def test_mha_in_a_functional_model(rng):
    inp = mn.Input((6, 8))
    h = layers.MultiHeadAttention(num_heads=2, key_dim=4)(inp, inp, use_causal_mask=True)
    out = layers.Dense(3)(layers.GlobalAveragePooling1D()(h))
    model = mn.Model(inputs=inp, outputs=out)
    x = rng.standard_normal((4, 6, 8)).astype("float32")
    assert model.predict(x, verbose=0).shape == (4, 3)


def test_transformer_block_by_subclassing_trains(rng):
    class Block(layers.Layer):
        def __init__(self, width, heads):
            super().__init__()
            self.att = layers.MultiHeadAttention(num_heads=heads, key_dim=width // heads)
            self.norm = layers.LayerNormalization()
            self.dense = layers.Dense(width)

        def call(self, x):
            return self.norm(x + self.dense(self.att(x, x, use_causal_mask=True)))

    model = mn.Sequential([mn.Input((6, 8)), Block(8, 2), layers.GlobalAveragePooling1D(),
                           layers.Dense(2)])
    model.compile(optimizer="adam", loss=mn.losses.SparseCategoricalCrossentropy(from_logits=True))
    x = rng.standard_normal((16, 6, 8)).astype("float32")
    y = (x[:, 0, 0] > 0).astype("int64")
    history = model.fit(x, y, epochs=3, batch_size=8, verbose=0)
    assert np.isfinite(history.history["loss"][-1])
