"""Vocabularies follow Keras's rules (#31 item 6): ``TextVectorization.set_vocabulary`` raises
where Keras 3.15's ``IndexLookup.set_vocabulary`` raises (an empty vocabulary, a repeated
token, the mask token ``""`` after the start, too many tokens), accepts the reserved tokens
only at the start in Keras's order, and the constructor's ``vocabulary=`` (so a loaded file)
goes through the same checks. Keras's TextVectorization needs TensorFlow, so its rules are
taken from keras/src/layers/preprocessing/index_lookup.py rather than run here."""
import json
import zipfile

import numpy as np
import pytest

import minnet as mn
from minnet.saving import ModelFileError

TV = mn.layers.TextVectorization


@pytest.mark.parametrize("vocabulary, fragment", [
    ([], "Cannot set an empty vocabulary"),
    (["a", "b", "a"], "repeated terms are: ['a']"),
    (["", "[UNK]", "a", "a"], "repeated terms are: ['a']"),
    (["a", "", "b"], "at vocabulary index 1"),
    (["", "a"], "at vocabulary index 0"),          # not the reserved pair: "" is then a token
    (["[UNK]", "", "a"], "at vocabulary index 1"),   # the pair in the wrong order
    (["", "[UNK]", "a", ""], "at vocabulary index 3"),
])
def test_set_vocabulary_raises_where_keras_raises(vocabulary, fragment):
    layer = TV()
    before = layer.get_vocabulary()
    with pytest.raises(ValueError) as info:
        layer.set_vocabulary(vocabulary)
    assert fragment in str(info.value)
    assert layer.get_vocabulary() == before           # nothing changed


def test_max_tokens_counts_the_reserved_tokens_as_keras_does():
    with pytest.raises(ValueError, match="vocabulary size is 6.*`max_tokens` is 5"):
        TV(max_tokens=5).set_vocabulary(["a", "b", "c", "d"])
    layer = TV(max_tokens=5)
    layer.set_vocabulary(["a", "b", "c"])
    assert layer.vocabulary_size() == 5


@pytest.mark.parametrize("vocabulary", ["words.txt", b"a", 3, [b"a", 3], ["a", None]])
def test_a_vocabulary_that_is_not_a_list_of_strings_is_a_type_error(vocabulary):
    with pytest.raises(TypeError, match="vocabulary"):
        TV().set_vocabulary(vocabulary)


def test_reserved_tokens_at_the_start_in_keras_order_are_dropped():
    layer = TV()
    layer.set_vocabulary(["", "[UNK]", "cat", "dog"])
    assert layer.get_vocabulary() == ["", "[UNK]", "cat", "dog"]
    again = TV()
    again.set_vocabulary(layer.get_vocabulary())      # get_vocabulary round-trips
    assert again.get_vocabulary() == layer.get_vocabulary()
    np.testing.assert_array_equal(layer(["dog cat bird"]).numpy(), [[3, 2, 1]])


def test_unk_after_the_start_is_an_ordinary_token_as_in_keras_without_invert():
    # IndexLookup raises for the OOV token only when invert=True; TextVectorization's lookup
    # is not inverted, so Keras takes "[UNK]" there as a token of its own, and so does minnet.
    layer = TV(standardize=None)
    layer.set_vocabulary(["a", "[UNK]", "b"])
    assert layer.get_vocabulary() == ["", "[UNK]", "a", "[UNK]", "b"]
    np.testing.assert_array_equal(layer(["a [UNK] b zzz"]).numpy(), [[2, 3, 4, 1]])


@pytest.mark.parametrize("vocabulary", [["a", "", "b"], ["x", "x"], []])
def test_the_constructor_and_from_config_apply_the_same_rules(vocabulary):
    with pytest.raises(ValueError):
        TV(vocabulary=vocabulary)
    config = TV(vocabulary=["a", "b"]).get_config()
    config["vocabulary"] = vocabulary
    with pytest.raises(ValueError):
        TV.from_config(config)


@pytest.mark.parametrize("vocabulary", [["a", "", "b"], ["cat", "cat"]])
def test_a_saved_file_with_a_bad_vocabulary_is_a_model_file_error(tmp_path, vocabulary):
    vectorizer = TV(vocabulary=["cat", "dog"], output_sequence_length=3)
    model = mn.Sequential([vectorizer])
    path = tmp_path / "text.minnet"
    model.save(path)
    with zipfile.ZipFile(path) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    config = json.loads(members["config.json"])
    config["model"]["config"]["layers"][0]["config"]["vocabulary"] = vocabulary
    members["config.json"] = json.dumps(config).encode()
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    with pytest.raises(ModelFileError) as info:
        mn.load_model(path)
    message = str(info.value)
    assert str(path) in message and "TextVectorization" in message
