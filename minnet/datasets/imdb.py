"""IMDB movie-review sentiment, as ``keras.datasets.imdb`` (downloaded once, verified).

25,000 training and 25,000 test reviews, each a list of word indices (by frequency rank,
``index_from`` added), labelled 0 (negative) or 1 (positive). The file is Keras's
``imdb.npz``; its ragged arrays are read with an unpickler that only builds NumPy arrays
(``minnet/datasets/_ragged.py``), never with ``allow_pickle=True``.
"""
import json

import numpy as np

from minnet.datasets import _sequences as seq
from minnet.datasets._download import fetch
from minnet.datasets._ragged import read_sequences

__all__ = ["load_data", "get_word_index"]

ORIGIN = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/imdb.npz"
# The SHA-256 in Keras 3's keras/src/datasets/imdb.py.
SHA256 = "69664113be75683a8fe16e3ed0ab59fda8886cb3cd7ada244f7d9544e4676b9f"
INDEX_ORIGIN = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/imdb_word_index.json"
INDEX_MD5 = "bfafd718b763782e994055a2d397834f"        # Keras's (an MD5)


def load_data(path=None, num_words=None, skip_top=0, maxlen=None, seed=113, start_char=1,
              oov_char=2, index_from=3):
    """Load IMDB with Keras's processing (same shuffle, indices and filtering for a seed).

    Args:
        path: an existing local copy of ``imdb.npz`` (verified), or None for the cache
            (``$MINNET_HOME/datasets``), downloading Keras's file on first use.
        num_words: keep the ``num_words`` most frequent words (indices below it); others
            become ``oov_char``. None: all.
        skip_top: also replace the ``skip_top`` most frequent indices by ``oov_char``.
        maxlen: drop sequences of ``maxlen`` or more words.
        seed: the shuffle's seed (``np.random.RandomState``, as Keras).
        start_char: index put at the start of every sequence (None: none).
        oov_char: index of removed words (None: drop them).
        index_from: added to every word index (0 padding, 1 start, 2 out-of-vocabulary).

    Returns:
        ``(x_train, y_train), (x_test, y_test)``: object arrays of lists of ints, and int
        label arrays (0 or 1), as Keras returns them.
    """
    seq.check_options(num_words, skip_top, maxlen, start_char, oov_char, index_from)
    local = fetch("imdb.npz", ORIGIN, "sha256", SHA256, "imdb", path=path)
    arrays = read_sequences(local, ("x_train", "y_train", "x_test", "y_test"))
    rng = np.random.RandomState(seed)
    x_train, y_train = seq.shuffled(rng, arrays["x_train"], arrays["y_train"])
    x_test, y_test = seq.shuffled(rng, arrays["x_test"], arrays["y_test"])
    x_train = seq.encode(x_train, start_char, index_from)
    x_test = seq.encode(x_test, start_char, index_from)
    if maxlen:
        x_train, y_train = seq.remove_long(maxlen, x_train, y_train)
        x_test, y_test = seq.remove_long(maxlen, x_test, y_test)
        if not x_train or not x_test:
            raise ValueError(f"Invalid value for argument `maxlen`: no sequence is shorter than "
                             f"maxlen={maxlen}, so none was kept. Increase maxlen.")
    xs = seq.limit(x_train + x_test, num_words, skip_top, oov_char)
    cut = len(x_train)
    return ((seq.as_object_array(xs[:cut]), np.asarray(y_train)),
            (seq.as_object_array(xs[cut:]), np.asarray(y_test)))


def get_word_index(path=None):
    """``{word: index}`` (before ``index_from``), from Keras's ``imdb_word_index.json``."""
    local = fetch("imdb_word_index.json", INDEX_ORIGIN, "md5", INDEX_MD5, "imdb", path=path)
    with open(local, encoding="utf-8") as handle:
        return json.load(handle)
