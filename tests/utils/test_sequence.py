"""pad_sequences: Keras's behaviour (pre/post padding and truncation, dtype, value, errors)."""
import numpy as np
import pytest

from minnet.utils import pad_sequences


def test_defaults_pad_and_truncate_at_the_front():
    out = pad_sequences([[1, 2, 3], [4], []])
    np.testing.assert_array_equal(out, [[1, 2, 3], [0, 0, 4], [0, 0, 0]])
    assert out.dtype == np.int32
    np.testing.assert_array_equal(pad_sequences([[1, 2, 3], [4]], maxlen=2), [[2, 3], [0, 4]])


def test_post_padding_truncating_value_dtype():
    out = pad_sequences([[1, 2, 3], [4]], maxlen=2, padding="post", truncating="post",
                        value=-1, dtype="float32")
    np.testing.assert_array_equal(out, [[1, 2], [4, -1]])
    assert out.dtype == np.float32
    strings = pad_sequences([["a", "b"], ["c"]], dtype=object, value="<pad>")
    assert strings.tolist() == [["a", "b"], ["<pad>", "c"]]


def test_feature_vectors_and_input_unchanged():
    seqs = [np.ones((3, 2)), np.zeros((1, 2))]
    out = pad_sequences(seqs, dtype="float64")
    assert out.shape == (2, 3, 2)
    np.testing.assert_array_equal(out[1, :2], 0)
    assert seqs[0].shape == (3, 2)


def test_errors():
    with pytest.raises(ValueError, match="padding"):
        pad_sequences([[1]], padding="middle")
    with pytest.raises(ValueError, match="truncating"):
        pad_sequences([[1]], truncating="both")
    with pytest.raises(ValueError, match="value"):
        pad_sequences([[1]], value="x")
    with pytest.raises(ValueError, match="shape"):
        pad_sequences([np.ones((2, 2)), np.ones((2, 3))], dtype="float32")
    with pytest.raises(ValueError, match="maxlen"):
        pad_sequences([[1]], maxlen=-1)
    with pytest.raises(ValueError, match="sequences"):
        pad_sequences([1, 2])
