"""Reuters newswire topics, as ``keras.datasets.reuters`` (downloaded once, verified).

11,228 newswires, each a list of word indices, labelled with one of 46 topics; split into
train and test by ``test_split`` after a seeded shuffle. Read as ``imdb`` is (an unpickler
that only builds NumPy arrays; ``minnet/datasets/_ragged.py``).
"""
import json

import numpy as np

from minnet._checks import check_float
from minnet.datasets import _sequences as seq
from minnet.datasets._download import fetch
from minnet.datasets._ragged import read_sequences

__all__ = ["load_data", "get_word_index", "get_label_names"]

ORIGIN = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/reuters.npz"
# The SHA-256 in Keras 3's keras/src/datasets/reuters.py.
SHA256 = "d6586e694ee56d7a4e65172e12b3e987c03096cb01eab99753921ef915959916"
INDEX_ORIGIN = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/reuters_word_index.json"
INDEX_MD5 = "4d44cc38712099c9e383dc6e5f11a921"        # Keras's (an MD5)

_LABELS = ("cocoa", "grain", "veg-oil", "earn", "acq", "wheat", "copper", "housing",
           "money-supply", "coffee", "sugar", "trade", "reserves", "ship", "cotton", "carcass",
           "crude", "nat-gas", "cpi", "money-fx", "interest", "gnp", "meal-feed", "alum",
           "oilseed", "gold", "tin", "strategic-metal", "livestock", "retail", "ipi",
           "iron-steel", "rubber", "heat", "jobs", "lei", "bop", "zinc", "orange", "pet-chem",
           "dlr", "gas", "silver", "wpi", "hog", "lead")


def load_data(path=None, num_words=None, skip_top=0, maxlen=None, test_split=0.2, seed=113,
              start_char=1, oov_char=2, index_from=3):
    """Load Reuters with Keras's processing; the arguments are ``imdb.load_data``'s, plus
    ``test_split`` (the fraction of the shuffled newswires kept for testing, in [0, 1)).

    Returns:
        ``(x_train, y_train), (x_test, y_test)``: object arrays of lists of ints, and int
        labels in 0..45 (``get_label_names()`` names them).
    """
    seq.check_options(num_words, skip_top, maxlen, start_char, oov_char, index_from)
    test_split = check_float("test_split", test_split, low=0.0, high=1.0, high_open=True)
    local = fetch("reuters.npz", ORIGIN, "sha256", SHA256, "reuters", path=path)
    arrays = read_sequences(local, ("x", "y"))
    xs, labels = seq.shuffled(np.random.RandomState(seed), arrays["x"], arrays["y"])
    xs = seq.encode(xs, start_char, index_from) if (start_char is not None or index_from) \
        else list(xs)
    if maxlen:
        xs, labels = seq.remove_long(maxlen, xs, labels)
    xs = seq.limit(xs, num_words, skip_top, oov_char)
    cut = int(len(xs) * (1 - test_split))
    return ((seq.as_object_array(xs[:cut]), np.asarray(labels[:cut])),
            (seq.as_object_array(xs[cut:]), np.asarray(labels[cut:])))


def get_word_index(path=None):
    """``{word: index}`` (before ``index_from``), from Keras's ``reuters_word_index.json``."""
    local = fetch("reuters_word_index.json", INDEX_ORIGIN, "md5", INDEX_MD5, "reuters", path=path)
    with open(local, encoding="utf-8") as handle:
        return json.load(handle)


def get_label_names():
    """The 46 topic names, in label order (Keras's tuple)."""
    return _LABELS
