"""TextVectorization: Keras's vocabulary order, standardisation, splits, output length."""
import numpy as np
import pytest

from minnet import layers


def test_adapt_vocabulary_and_int_output():
    tv = layers.TextVectorization(output_sequence_length=5)
    tv.adapt(["The cat sat.", "the dog sat!", "THE end"])
    vocab = tv.get_vocabulary()
    assert vocab[:4] == ["", "[UNK]", "the", "sat"]
    assert sorted(vocab[4:]) == ["cat", "dog", "end"]
    assert vocab[4:] == ["end", "dog", "cat"]              # ties: the later token first (Keras)
    out = tv(["the bird sat", "cat"]).numpy()
    np.testing.assert_array_equal(out, [[2, 1, 3, 0, 0], [vocab.index("cat"), 0, 0, 0, 0]])
    assert out.dtype == np.int64
    assert tv.vocabulary_size() == 7
    assert tv.get_vocabulary(include_special_tokens=False)[0] == "the"


def test_max_tokens_character_split_and_ragged_padding():
    tv = layers.TextVectorization(max_tokens=4, split="character", standardize=None)
    tv.adapt(["aab", "ab", "c"])
    assert tv.get_vocabulary() == ["", "[UNK]", "a", "b"]
    out = tv(["abc", "a"]).numpy()
    np.testing.assert_array_equal(out, [[2, 3, 1], [2, 0, 0]])


def test_truncation_set_vocabulary_and_config():
    tv = layers.TextVectorization(output_sequence_length=2, vocabulary=["x", "y"])
    np.testing.assert_array_equal(tv(["y x z"]).numpy(), [[3, 2]])
    clone = layers.deserialize(layers.serialize(tv))
    assert clone.get_vocabulary() == tv.get_vocabulary()
    with pytest.raises(ValueError, match="output_mode"):
        layers.TextVectorization(output_mode="one_hot")     # tf_idf & co: test_text_vectorization_modes.py
    with pytest.raises(ValueError, match="split"):
        layers.TextVectorization(split="comma")
    with pytest.raises(TypeError, match="strings"):
        tv([1, 2])


def test_feeds_an_embedding():
    tv = layers.TextVectorization(output_sequence_length=3)
    tv.adapt(["a b c d"])
    y = layers.Embedding(tv.vocabulary_size(), 2, mask_zero=True)(tv(["a b"]))
    assert y.shape == (1, 3, 2)
