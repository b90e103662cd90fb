"""TextVectorization: strings to token indices (``output_mode="int"``) or to one vector per
string (``"multi_hot"``, ``"count"``, ``"tf_idf"``), Keras 3's surface.

With ``"int"`` index 0 is the padding token ``""`` and index 1 the out-of-vocabulary token
``"[UNK]"``; the other modes have no padding token (index 0 is ``"[UNK]"``, as Keras).
``adapt`` fills the rest with the most frequent tokens (ties: the token that sorts last
comes first, as Keras's lookup orders them).
"""
import collections
import re

import numpy as np

from minnet._checks import UnsupportedArgumentError, check_choice, check_int, invalid
from minnet.autograd import Tensor
from minnet.layers.base import Layer

__all__ = ["TextVectorization"]

_PUNCTUATION = re.compile(r'[!"#$%&()\*\+,\-\./:;<=>?@\[\\\]^_`{|}~\']')
_PAD, _OOV = "", "[UNK]"


class TextVectorization(Layer):
    """Maps strings to integer token sequences, as ``keras.layers.TextVectorization``.

    Args:
        max_tokens: vocabulary size including the padding and OOV tokens (None: no limit).
        standardize: ``"lower_and_strip_punctuation"`` (default), ``"lower"``,
            ``"strip_punctuation"``, None, or a callable ``str -> str``.
        split: ``"whitespace"`` (default), ``"character"``, None (the whole string is one
            token) or a callable ``str -> list of str``.
        output_mode: ``"int"`` (index sequences), ``"multi_hot"`` (1.0 where a vocabulary
            entry occurs in the string; alias ``"binary"``), ``"count"`` (how often) or
            ``"tf_idf"`` (count times ``idf = log(1 + documents / (1 + documents with the
            token))`` from ``adapt``; the OOV entry gets the mean idf), as Keras.
        output_sequence_length: pad (with 0, at the end) or cut every output to this length;
            None pads to the longest string of the batch.
        vocabulary: an optional list of tokens (without the two special ones) to use
            instead of ``adapt``.

        pad_to_max_tokens: with the vector modes, make the output ``max_tokens`` wide.
        idf_weights: with ``"tf_idf"`` and a ``vocabulary``, the idf of each token.

    Shape:
        - Input: a list (or 1-D array) of N strings. Output: ``(N, length)`` int64 Tensor
          (``"int"``), else ``(N, vocabulary_size())`` float32 (``max_tokens`` with
          ``pad_to_max_tokens``).

    Example:
        >>> tv = layers.TextVectorization(output_sequence_length=4)
        >>> tv.adapt(["the cat sat", "the dog"])
        >>> tv.get_vocabulary()[:3]
        ['', '[UNK]', 'the']
        >>> tv(["the bird sat"]).numpy()
        array([[2, 1, 4, 0]])
    """

    def __init__(self, max_tokens=None, standardize="lower_and_strip_punctuation",
                 split="whitespace", ngrams=None, output_mode="int",
                 output_sequence_length=None, pad_to_max_tokens=False, vocabulary=None,
                 idf_weights=None, name=None, dtype="float32", trainable=True, **kwargs):
        super().__init__(name=name, dtype=dtype, trainable=trainable, **kwargs)
        self.max_tokens = None if max_tokens is None else check_int("max_tokens", max_tokens,
                                                                     minimum=3)
        if not callable(standardize):
            check_choice("standardize", standardize,
                         ("lower_and_strip_punctuation", "lower", "strip_punctuation", None))
        if not callable(split):
            check_choice("split", split, ("whitespace", "character", None))
        if ngrams is not None:
            raise UnsupportedArgumentError(f"Invalid value for argument `ngrams`: not implemented; "
                                      f"expected None. Received: ngrams={ngrams!r}")
        output_mode = {"binary": "multi_hot", "tf-idf": "tf_idf"}.get(output_mode, output_mode)
        check_choice("output_mode", output_mode, ("int", "multi_hot", "count", "tf_idf"))
        if idf_weights is not None and output_mode != "tf_idf":
            raise invalid("idf_weights", "None unless output_mode='tf_idf'", "an array")
        self.standardize = standardize
        self.split = split
        self.output_mode = output_mode
        self.output_sequence_length = None if output_sequence_length is None else check_int(
            "output_sequence_length", output_sequence_length, minimum=1)
        self.pad_to_max_tokens = bool(pad_to_max_tokens)
        self._special = [_PAD, _OOV] if output_mode == "int" else [_OOV]
        self._vocabulary = list(self._special)
        self._index = {}
        self._idf = None
        if vocabulary is not None:
            self.set_vocabulary(vocabulary, idf_weights)
        elif output_mode == "tf_idf" and idf_weights is not None:
            raise invalid("idf_weights", "to come with a `vocabulary`", "idf_weights alone")
        self.built = True

    # ------------------------------------------------------------------ text -> tokens
    def _tokens(self, text):
        if isinstance(text, bytes):
            text = text.decode("utf-8")
        if not isinstance(text, str):
            raise invalid("inputs", "strings", type(text).__name__, TypeError)
        if callable(self.standardize):
            text = self.standardize(text)
        elif self.standardize is not None:
            if "lower" in self.standardize:
                text = text.lower()
            if "punctuation" in self.standardize:
                text = _PUNCTUATION.sub("", text)
        if callable(self.split):
            return list(self.split(text))
        if self.split == "whitespace":
            return text.split()
        if self.split == "character":
            return list(text)
        return [text]

    @staticmethod
    def _strings(data):
        if isinstance(data, (str, bytes)):
            return [data]
        if isinstance(data, Tensor):
            data = data.data
        array = np.asarray(data, dtype=object)
        return list(array.reshape(-1))

    # ------------------------------------------------------------------ vocabulary
    def adapt(self, data, batch_size=None, steps=None):
        """Build the vocabulary from ``data`` (strings, or an iterable of batches of strings)."""
        counts = collections.Counter()
        documents = collections.Counter()
        n_documents = 0
        if isinstance(data, (str, bytes, np.ndarray, Tensor)) or (
                isinstance(data, (list, tuple)) and all(isinstance(d, (str, bytes)) for d in data)):
            batches = [data]
        else:
            batches = data
        for batch in batches:
            for text in self._strings(batch):
                tokens = self._tokens(text)
                counts.update(tokens)
                documents.update(set(tokens))
                n_documents += 1
        for special in (_PAD, _OOV):
            counts.pop(special, None)
        ordered = sorted(counts.items(), key=lambda item: (item[1], item[0]), reverse=True)
        tokens = [token for token, _ in ordered]
        if self.max_tokens is not None:
            tokens = tokens[:self.max_tokens - len(self._special)]
        idf = None
        if self.output_mode == "tf_idf":
            idf = np.log(1.0 + n_documents / (1.0 + np.array([documents[t] for t in tokens],
                                                              dtype=np.float64)))
        self._set(tokens, idf)

    def set_vocabulary(self, vocabulary, idf_weights=None):
        """Use ``vocabulary`` (a list of token strings), by Keras 3's rules (``IndexLookup``),
        and, for ``"tf_idf"``, ``idf_weights`` (one per token given).

        The vocabulary may start with the reserved tokens in precisely this order,
        ``["", "[UNK]"]`` (``"int"`` mode) or ``["[UNK]"]`` (the vector modes), as
        ``get_vocabulary()`` returns them; they are then dropped (a given ``"[UNK]"`` idf
        weight is kept for the OOV entry, as Keras). Otherwise it holds ordinary tokens only.
        Raised, as Keras raises (a ValueError): an empty vocabulary; a repeated token; the
        mask token ``""`` anywhere else; more than ``max_tokens`` indices in all.
        """
        if isinstance(vocabulary, (str, bytes)) or not hasattr(vocabulary, "__iter__"):
            raise invalid("vocabulary", "a list of token strings (a vocabulary file path is not "
                                        "supported)", vocabulary, TypeError)
        tokens = [t.decode("utf-8") if isinstance(t, bytes) else t for t in vocabulary]
        if not tokens:
            raise ValueError(f"Cannot set an empty vocabulary. Received: vocabulary={vocabulary!r}")
        wrong = [t for t in tokens if not isinstance(t, str)]
        if wrong:
            raise invalid("vocabulary", "a list of token strings", f"a {type(wrong[0]).__name__} "
                          f"token {wrong[0]!r}", TypeError)
        weights = None
        if self.output_mode == "tf_idf":
            if idf_weights is None:
                raise invalid("idf_weights", "one weight per vocabulary token with "
                              "output_mode='tf_idf'", None)
            weights = np.asarray(idf_weights, dtype=np.float64).reshape(-1)
            if weights.size != len(tokens):
                raise invalid("idf_weights", f"{len(tokens)} weights (one per token)",
                              f"{weights.size} weights")
        special = list(self._special)
        start = len(special) if tokens[:len(special)] == special else 0
        oov_weight = None
        if start and weights is not None:
            oov_weight = float(weights[special.index(_OOV)])
        body = tokens[start:]
        if weights is not None:
            weights = weights[start:]
        repeated = [token for token, count in collections.Counter(body).items() if count > 1]
        if repeated:
            raise ValueError(f"The passed vocabulary has at least one repeated term. Please uniquify "
                             f"your dataset. The repeated terms are: {repeated}")
        if _PAD in body:
            raise ValueError(f"Found reserved mask token {_PAD!r} (an empty token) at unexpected "
                             f"location in `vocabulary`. The vocabulary does not need to include "
                             f"the OOV and mask tokens: remove them, or include them only at the "
                             f"start in precisely this order: {special}. Received: mask_token="
                             f"{_PAD!r} at vocabulary index {start + body.index(_PAD)}")
        if self.max_tokens is not None and len(body) + len(special) > self.max_tokens:
            raise ValueError(f"Attempted to set a vocabulary larger than the maximum vocab size. "
                             f"Received vocabulary size is {len(body) + len(special)} (with the "
                             f"{len(special)} reserved tokens); `max_tokens` is {self.max_tokens}.")
        self._set(body, weights, oov_weight)

    def _set(self, tokens, idf=None, oov_weight=None):
        start = len(self._special)
        self._vocabulary = list(self._special) + list(tokens)
        self._index = {token: i for i, token in enumerate(self._vocabulary) if i >= start}
        if self.output_mode == "tf_idf":
            idf = np.zeros(0) if idf is None else np.asarray(idf, dtype=np.float64)
            # Keras: the OOV entry gets the mean idf of the tokens unless one was given
            if oov_weight is None:
                oov_weight = idf.mean() if idf.size else 0.0
            self._idf = np.concatenate([[oov_weight], idf])

    def get_vocabulary(self, include_special_tokens=True):
        """The tokens by index: ``["", "[UNK]", most frequent, ...]`` (no ``""`` outside
        ``"int"`` mode)."""
        return list(self._vocabulary if include_special_tokens
                    else self._vocabulary[len(self._special):])

    def vocabulary_size(self):
        """Number of indices the output may hold (special tokens included)."""
        return len(self._vocabulary)

    # ------------------------------------------------------------------ call
    def __call__(self, x, training=None):
        return self.call(x, training=False)

    def call(self, x, training=False):
        oov = self._special.index(_OOV)
        rows = [[self._index.get(token, oov) for token in self._tokens(text)]
                for text in self._strings(x)]
        if self.output_mode != "int":
            return Tensor(self._vectors(rows))
        length = self.output_sequence_length
        if length is None:
            length = max((len(r) for r in rows), default=0)
        out = np.zeros((len(rows), length), np.int64)
        for i, row in enumerate(rows):
            row = row[:length]
            out[i, :len(row)] = row
        return Tensor(out)

    def _vectors(self, rows):
        """``(N, width)`` float32: counts per index, then multi-hot / tf-idf (Keras)."""
        width = self.vocabulary_size()
        if self.pad_to_max_tokens and self.max_tokens is not None:
            width = self.max_tokens
        out = np.zeros((len(rows), width), np.float64)
        for i, row in enumerate(rows):
            np.add.at(out[i], np.asarray(row, dtype=np.int64), 1.0)
        if self.output_mode == "multi_hot":
            out = (out > 0).astype(np.float64)
        elif self.output_mode == "tf_idf":
            idf = np.zeros(width)
            idf[:self._idf.size] = self._idf[:width]
            out = out * idf
        return out.astype(np.float32)

    def compute_output_shape(self, input_shape):
        if self.output_mode != "int":
            width = self.max_tokens if self.pad_to_max_tokens and self.max_tokens else \
                self.vocabulary_size()
            return (tuple(input_shape)[0], width)
        return (tuple(input_shape)[0], self.output_sequence_length)

    def get_config(self):
        if callable(self.standardize) or callable(self.split):
            raise ValueError(f"Layer '{self.name}' uses a callable `standardize`/`split`, which "
                             f"cannot be serialised; use the built-in names.")
        return {**super().get_config(), "max_tokens": self.max_tokens,
                "standardize": self.standardize, "split": self.split,
                "output_mode": self.output_mode,
                "output_sequence_length": self.output_sequence_length,
                "pad_to_max_tokens": self.pad_to_max_tokens,
                # tf_idf keeps the leading "[UNK]" so that its idf weight travels too
                "vocabulary": self.get_vocabulary(include_special_tokens=self._idf is not None),
                "idf_weights": None if self._idf is None else [float(v) for v in self._idf]}

    def extra_repr(self):
        return f"vocabulary_size={self.vocabulary_size()}, output_mode={self.output_mode!r}"
