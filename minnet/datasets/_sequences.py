"""The word-index processing Keras's ``imdb`` and ``reuters`` loaders share: shuffle with
``np.random.RandomState(seed)``, shift the indices by ``index_from`` after a ``start_char``,
drop sequences longer than ``maxlen``, keep ``skip_top <= w < num_words`` (others become
``oov_char``, or are removed when it is None)."""
import numpy as np

from minnet._checks import check_int

__all__ = ["check_options", "shuffled", "encode", "remove_long", "as_object_array"]


def check_options(num_words, skip_top, maxlen, start_char, oov_char, index_from):
    for name, value in (("num_words", num_words), ("maxlen", maxlen)):
        if value is not None:
            check_int(name, value, 1)
    check_int("skip_top", skip_top, 0)
    check_int("index_from", index_from, 0)
    for name, value in (("start_char", start_char), ("oov_char", oov_char)):
        if value is not None:
            check_int(name, value, 0)


def shuffled(rng, *arrays):
    indices = np.arange(len(arrays[0]))
    rng.shuffle(indices)
    return [a[indices] for a in arrays]


def encode(sequences, start_char, index_from):
    if start_char is not None:
        return [[start_char] + [w + index_from for w in s] for s in sequences]
    return [[w + index_from for w in s] for s in sequences]


def remove_long(maxlen, sequences, labels):
    keep = [i for i, s in enumerate(sequences) if len(s) < maxlen]
    return [sequences[i] for i in keep], labels[keep]


def limit(sequences, num_words, skip_top, oov_char):
    if not num_words:
        num_words = max((max(s) for s in sequences if s), default=0)
    if oov_char is not None:
        return [[w if skip_top <= w < num_words else oov_char for w in s] for s in sequences]
    return [[w for w in s if skip_top <= w < num_words] for s in sequences]


def as_object_array(sequences):
    out = np.empty(len(sequences), dtype=object)
    out[:] = sequences
    return out
