"""Keras 3's categorical preprocessing layers: ``CategoryEncoding``, ``Discretization``,
``StringLookup`` and ``IntegerLookup`` (no gradients: their outputs are indices or counts).

``StringLookup``/``IntegerLookup`` follow Keras's index layout: with ``output_mode="int"``,
index 0 is ``mask_token`` when one is given, then the ``num_oov_indices`` OOV indices, then the
vocabulary (most frequent first after ``adapt``; ties: the token sorting last first).
"""
import collections
import numbers

import numpy as np

from minnet._checks import check_choice, check_int, invalid
from minnet.autograd import Tensor
from minnet.layers.base import Layer

__all__ = ["CategoryEncoding", "Discretization", "StringLookup", "IntegerLookup"]


def _data(x):
    return np.asarray(x.data if isinstance(x, Tensor) else x)


def encode(indices, depth, mode, weights=None):
    """Keras's ``CategoryEncoding`` of integer ``indices``: ``"one_hot"`` (a trailing axis of
    1 is dropped first), ``"multi_hot"`` / ``"count"`` over the last axis (a rank-1 input is
    one sample); float32."""
    indices = np.asarray(indices, dtype=np.int64)
    if indices.size and (indices.min() < 0 or indices.max() >= depth):
        bad = indices[(indices < 0) | (indices >= depth)].flat[0]
        raise ValueError(f"Invalid value in the input: expected integers in [0, {depth}). "
                         f"Received: {int(bad)}")
    if mode == "one_hot":
        if indices.ndim >= 1 and indices.shape[-1:] == (1,) and indices.ndim > 1:
            indices = indices[..., 0]
        return np.eye(depth, dtype=np.float32)[indices]
    rows = indices.reshape(-1, indices.shape[-1]) if indices.ndim else indices.reshape(1, 1)
    out = np.zeros((rows.shape[0], depth), np.float64)
    w = None if weights is None else np.asarray(weights, dtype=np.float64).reshape(rows.shape)
    for i, row in enumerate(rows):
        np.add.at(out[i], row, 1.0 if w is None else w[i])
    if mode == "multi_hot":
        out = (out > 0).astype(np.float64)
    out = out.reshape(indices.shape[:-1] + (depth,)) if indices.ndim else out[0]
    return out.astype(np.float32)


class CategoryEncoding(Layer):
    """Integer categories to dense vectors (Keras's ``CategoryEncoding``).

    Args:
        num_tokens: the number of categories (inputs in ``[0, num_tokens)``).
        output_mode: ``"multi_hot"`` (default), ``"one_hot"`` or ``"count"``.

    ``layer(x, count_weights=w)`` weights the counts in ``"count"`` mode.
    """

    def __init__(self, num_tokens=None, output_mode="multi_hot", sparse=False, **kwargs):
        super().__init__(**kwargs)
        if num_tokens is None:
            raise invalid("num_tokens", "an int >= 1", None)
        self.num_tokens = check_int("num_tokens", num_tokens, minimum=1)
        self.output_mode = check_choice("output_mode", output_mode,
                                        ("multi_hot", "one_hot", "count"))
        if sparse:
            raise invalid("sparse", "False (minnet has dense arrays only)", sparse)
        self.built = True

    def __call__(self, x, count_weights=None, training=None):
        if count_weights is not None and self.output_mode != "count":
            raise invalid("count_weights", "None unless output_mode='count'", "an array")
        return Tensor(encode(_data(x), self.num_tokens, self.output_mode, count_weights))

    def call(self, x, training=False):
        return self(x)

    def compute_output_shape(self, input_shape):
        shape = tuple(input_shape)
        if self.output_mode == "one_hot" and shape[-1:] != (1,):
            return shape + (self.num_tokens,)
        return shape[:-1] + (self.num_tokens,)

    def get_config(self):
        return {**super().get_config(), "num_tokens": self.num_tokens,
                "output_mode": self.output_mode, "sparse": False}


class Discretization(Layer):
    """Bucket values by ``bin_boundaries`` (Keras's ``Discretization``): value ``v`` goes to
    bucket ``i`` with ``boundaries[i-1] <= v < boundaries[i]`` (``np.digitize``).

    Args:
        bin_boundaries: sorted boundaries; or None and ``adapt`` on data with ``num_bins``.
        num_bins: the bucket count ``adapt`` aims at (boundaries at the quantiles
            ``1/num_bins, ..., (num_bins-1)/num_bins``).
        epsilon: kept for Keras's signature; minnet's ``adapt`` computes exact quantiles,
            where Keras's (TensorFlow-based) ``adapt`` computes approximate ones within
            ``epsilon``.
        output_mode: ``"int"`` (default), ``"one_hot"``, ``"multi_hot"`` or ``"count"``.
    """

    def __init__(self, bin_boundaries=None, num_bins=None, epsilon=0.01, output_mode="int",
                 sparse=False, dtype=None, name=None):
        super().__init__(name=name, dtype=dtype)
        if bin_boundaries is None and num_bins is None:
            raise invalid("bin_boundaries", "a list of boundaries, or num_bins for adapt()", None)
        self.bin_boundaries = None if bin_boundaries is None else [float(b) for b in
                                                                   bin_boundaries]
        self.num_bins = None if num_bins is None else check_int("num_bins", num_bins, minimum=2)
        self.epsilon = float(epsilon)
        self.output_mode = check_choice("output_mode", output_mode,
                                        ("int", "one_hot", "multi_hot", "count"))
        if sparse:
            raise invalid("sparse", "False (minnet has dense arrays only)", sparse)
        self.built = True

    def adapt(self, data, batch_size=None, steps=None):
        values = _data(data).astype(np.float64).ravel()
        quantiles = np.arange(1, self.num_bins) / self.num_bins
        self.bin_boundaries = [float(v) for v in np.quantile(values, quantiles)]

    def __call__(self, x, training=None):
        if self.bin_boundaries is None:
            raise ValueError(f"Layer '{self.name}' has no bin boundaries: call adapt() first.")
        index = np.digitize(_data(x), np.asarray(self.bin_boundaries), right=False)
        if self.output_mode == "int":
            return Tensor(index.astype(np.int64))
        return Tensor(encode(index, len(self.bin_boundaries) + 1, self.output_mode))

    def call(self, x, training=False):
        return self(x)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        return {**super().get_config(), "bin_boundaries": self.bin_boundaries,
                "num_bins": self.num_bins, "epsilon": self.epsilon,
                "output_mode": self.output_mode, "sparse": False}


class _Lookup(Layer):
    """Shared by StringLookup and IntegerLookup."""

    _default_oov = None

    def __init__(self, max_tokens=None, num_oov_indices=1, mask_token=None, oov_token=None,
                 vocabulary=None, idf_weights=None, invert=False, output_mode="int",
                 pad_to_max_tokens=False, sparse=False, **kwargs):
        super().__init__(**kwargs)
        self.max_tokens = None if max_tokens is None else check_int("max_tokens", max_tokens,
                                                                     minimum=1)
        self.num_oov_indices = check_int("num_oov_indices", num_oov_indices, minimum=0)
        self.mask_token = mask_token
        self.oov_token = self._default_oov if oov_token is None else oov_token
        self.invert = bool(invert)
        self.output_mode = check_choice("output_mode", output_mode,
                                        ("int", "one_hot", "multi_hot", "count"))
        if idf_weights is not None:
            raise invalid("idf_weights", "None (tf_idf is TextVectorization's in minnet)",
                          "weights")
        if self.invert and self.output_mode != "int":
            raise invalid("output_mode", "'int' with invert=True", output_mode)
        if sparse:
            raise invalid("sparse", "False (minnet has dense arrays only)", sparse)
        self.pad_to_max_tokens = bool(pad_to_max_tokens)
        self._tokens = []
        if vocabulary is not None:
            self.set_vocabulary(vocabulary)
        self.built = True

    # index layout: [mask] [oov * num_oov_indices] tokens...
    def _special(self):
        out = []
        if self.mask_token is not None and self.output_mode == "int":
            out.append(self.mask_token)
        out += [self.oov_token] * self.num_oov_indices
        return out

    def _start(self):
        return len(self._special())

    def _normalise(self, token):
        return token

    def set_vocabulary(self, vocabulary, idf_weights=None):
        tokens = [self._normalise(t) for t in vocabulary]
        special = set(t for t in (self.mask_token, self.oov_token) if t is not None)
        tokens = [t for t in tokens if t not in special]
        if len(set(tokens)) != len(tokens):
            raise invalid("vocabulary", "distinct tokens", vocabulary)
        if self.max_tokens is not None and len(tokens) + self._start() > self.max_tokens:
            raise invalid("vocabulary", f"at most {self.max_tokens - self._start()} tokens",
                          f"{len(tokens)} tokens")
        self._tokens = tokens

    def adapt(self, data, batch_size=None, steps=None):
        counts = collections.Counter(self._normalise(t) for t in _data(data).ravel().tolist())
        for t in (self.mask_token, self.oov_token):
            counts.pop(t, None)
        ordered = sorted(counts.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)
        tokens = [t for t, _ in ordered]
        if self.max_tokens is not None:
            tokens = tokens[:self.max_tokens - self._start()]
        self._tokens = tokens

    def get_vocabulary(self, include_special_tokens=True):
        return (self._special() if include_special_tokens else []) + list(self._tokens)

    def vocabulary_size(self):
        return self._start() + len(self._tokens)

    def _oov_index(self, token):
        base = 1 if (self.mask_token is not None and self.output_mode == "int") else 0
        return base

    def __call__(self, x, training=None):
        data = _data(x)
        if self.invert:
            vocab = self.get_vocabulary()
            flat = [vocab[i] if 0 <= i < len(vocab) else self.oov_token
                    for i in data.astype(np.int64).ravel().tolist()]
            return np.array(flat, dtype=object).reshape(data.shape)
        index = {t: i + self._start() for i, t in enumerate(self._tokens)}
        mask_index = 0 if self.mask_token is not None and self.output_mode == "int" else None
        if self.num_oov_indices == 0:
            def lookup(t):
                if t not in index and t != self.mask_token:
                    raise ValueError(f"Layer '{self.name}': token {t!r} is not in the vocabulary "
                                     f"and num_oov_indices=0.")
                return index.get(t, mask_index)
        else:
            oov = self._oov_index(None)

            def lookup(t):
                if self.mask_token is not None and t == self.mask_token:
                    return mask_index if mask_index is not None else 0
                return index.get(t, self._oov_for(t, oov))
        out = np.array([lookup(self._normalise(t)) for t in data.ravel().tolist()],
                       dtype=np.int64).reshape(data.shape)
        if self.output_mode == "int":
            return Tensor(out)
        depth = self.max_tokens if self.pad_to_max_tokens and self.max_tokens else \
            self.vocabulary_size()
        return Tensor(encode(out, depth, self.output_mode))

    def _oov_for(self, token, first):
        return first

    def call(self, x, training=False):
        return self(x)

    def compute_output_shape(self, input_shape):
        if self.output_mode == "int":
            return tuple(input_shape)
        return tuple(input_shape)[:-1] + (self.vocabulary_size(),)

    def get_config(self):
        return {**super().get_config(), "max_tokens": self.max_tokens,
                "num_oov_indices": self.num_oov_indices, "mask_token": self.mask_token,
                "oov_token": self.oov_token, "vocabulary": list(self._tokens),
                "invert": self.invert, "output_mode": self.output_mode,
                "pad_to_max_tokens": self.pad_to_max_tokens}


class StringLookup(_Lookup):
    """Strings to integer indices (or one/multi-hot, counts), Keras's ``StringLookup``.

    ``num_oov_indices`` must be 0 or 1: Keras spreads OOV strings over several indices with
    TensorFlow's FarmHash, which minnet does not reproduce (a ValueError says so).
    """

    _default_oov = "[UNK]"

    def __init__(self, max_tokens=None, num_oov_indices=1, mask_token=None, oov_token="[UNK]",
                 vocabulary=None, idf_weights=None, invert=False, output_mode="int",
                 pad_to_max_tokens=False, sparse=False, encoding="utf-8", name=None, **kwargs):
        if num_oov_indices not in (0, 1):
            raise invalid("num_oov_indices", "0 or 1 (Keras hashes OOV strings over several "
                          "indices with TensorFlow's FarmHash, which minnet does not reproduce)",
                          num_oov_indices)
        super().__init__(max_tokens, num_oov_indices, mask_token, oov_token, None,
                         idf_weights, invert, output_mode, pad_to_max_tokens, sparse, name=name,
                         **kwargs)
        self.encoding = encoding
        if vocabulary is not None:
            self.set_vocabulary(vocabulary)

    def _normalise(self, token):
        return token.decode(self.encoding) if isinstance(token, bytes) else token

    def get_config(self):
        return {**super().get_config(), "encoding": self.encoding}


class IntegerLookup(_Lookup):
    """Integers to contiguous indices, Keras's ``IntegerLookup`` (OOV values spread over
    ``num_oov_indices`` by ``value % num_oov_indices``, Keras's ``oov_method="floormod"``)."""

    _default_oov = -1

    def __init__(self, max_tokens=None, num_oov_indices=1, mask_token=None, oov_token=-1,
                 vocabulary=None, vocabulary_dtype="int64", idf_weights=None, invert=False,
                 output_mode="int", sparse=False, pad_to_max_tokens=False,
                 oov_method="floormod", salt=None, name=None, **kwargs):
        check_choice("oov_method", oov_method, ("floormod",))
        super().__init__(max_tokens, num_oov_indices, mask_token, oov_token, vocabulary,
                         idf_weights, invert, output_mode, pad_to_max_tokens, sparse, name=name,
                         **kwargs)
        self.vocabulary_dtype = vocabulary_dtype

    def _normalise(self, token):
        if isinstance(token, numbers.Real) and not isinstance(token, bool):
            return int(token)
        return token

    def _oov_for(self, token, first):
        return first + (int(token) % self.num_oov_indices if self.num_oov_indices > 1 else 0)

    def get_config(self):
        return {**super().get_config(), "vocabulary_dtype": self.vocabulary_dtype}
