"""TextVectorization(output_mode="multi_hot"/"count"/"tf_idf") (issue 28, item 2).

Keras's TextVectorization needs TensorFlow, which the oracle environment lacks, so the
expected values are Keras's own documented examples (``StringLookup``'s tf_idf docstring,
the same IndexLookup code) and a NumPy reference of its formulas."""
import numpy as np
import pytest

from minnet import layers

TEXTS = ["the cat sat on the mat", "the dog sat", "a bird", "the end"]


def _reference(texts, query, mode, max_tokens=None):
    """Keras's IndexLookup in NumPy: vocabulary by count (ties: later token first), OOV at 0."""
    counts, docs = {}, {}
    for text in texts:
        tokens = text.split()
        for t in tokens:
            counts[t] = counts.get(t, 0) + 1
        for t in set(tokens):
            docs[t] = docs.get(t, 0) + 1
    vocab = [t for t, _ in sorted(counts.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)]
    if max_tokens:
        vocab = vocab[:max_tokens - 1]
    index = {t: i + 1 for i, t in enumerate(vocab)}
    out = np.zeros((len(query), len(vocab) + 1))
    for row, text in enumerate(query):
        for t in text.split():
            out[row, index.get(t, 0)] += 1
    if mode == "multi_hot":
        return (out > 0).astype(float)
    if mode == "tf_idf":
        idf = np.log(1 + len(texts) / (1 + np.array([docs[t] for t in vocab], float)))
        return out * np.concatenate([[idf.mean()], idf])
    return out


@pytest.mark.parametrize("mode", ["multi_hot", "count", "tf_idf"])
@pytest.mark.parametrize("max_tokens", [None, 5])
def test_modes_match_reference(mode, max_tokens):
    tv = layers.TextVectorization(output_mode=mode, max_tokens=max_tokens, standardize=None)
    tv.adapt(TEXTS)
    query = ["the the cat flew", "a dog and a bird", ""]
    got = tv(query).numpy()
    assert got.dtype == np.float32 and tv.get_vocabulary()[0] == "[UNK]"
    np.testing.assert_allclose(got, _reference(TEXTS, query, mode, max_tokens), rtol=1e-6)
    assert tv.compute_output_shape((3,)) == got.shape
    again = layers.TextVectorization.from_config(tv.get_config())
    np.testing.assert_array_equal(again(query).numpy(), got)


def test_pad_to_max_tokens_and_binary_alias():
    tv = layers.TextVectorization(output_mode="binary", max_tokens=10, pad_to_max_tokens=True)
    tv.adapt(["a b", "b c"])
    assert tv.output_mode == "multi_hot"
    np.testing.assert_array_equal(tv(["b b z"]).numpy()[0], [1, 1, 0, 0, 0, 0, 0, 0, 0, 0])


def test_tf_idf_documented_values():
    """StringLookup's docstring in Keras 3.15 (both cases: OOV weight averaged / given)."""
    tv = layers.TextVectorization(output_mode="tf_idf", vocabulary=["a", "b", "c", "d"],
                                  idf_weights=[0.25, 0.75, 0.6, 0.4])
    np.testing.assert_allclose(tv(["a c d d", "d z b z"]).numpy(),
                               [[0.0, 0.25, 0.0, 0.6, 0.8], [1.0, 0.0, 0.75, 0.0, 0.4]], rtol=1e-6)
    tv = layers.TextVectorization(output_mode="tf_idf", vocabulary=["[UNK]", "a", "b", "c", "d"],
                                  idf_weights=[0.9, 0.25, 0.75, 0.6, 0.4])
    np.testing.assert_allclose(tv(["a c d d", "d z b z"]).numpy(),
                               [[0.0, 0.25, 0.0, 0.6, 0.8], [1.8, 0.0, 0.75, 0.0, 0.4]], rtol=1e-6)
    with pytest.raises(ValueError, match="idf_weights"):
        layers.TextVectorization(output_mode="tf_idf", vocabulary=["a"])
    with pytest.raises(ValueError, match="idf_weights"):
        layers.TextVectorization(output_mode="count", idf_weights=[1.0])


def test_int_mode_unchanged():
    tv = layers.TextVectorization(output_sequence_length=4)
    tv.adapt(["foo bar", "bar baz", "baz bada boom"])         # Keras's docstring example
    np.testing.assert_array_equal(tv(["foo qux bar", "qux baz"]).numpy(), [[4, 1, 3, 0], [1, 2, 0, 0]])
