"""Embedding and Masking, and the sequence mask that flows from them into recurrent layers.

Keras attaches a (batch, timesteps) boolean mask to a layer's output (``_keras_mask``);
layers that understand it (``LSTM``, ``GRU``, ``SimpleRNN``, ``Bidirectional``,
``TimeDistributed``) read it from their input, layers with ``supports_masking`` (``Dense``,
``Dropout``, ``Activation``) pass it on, and the losses skip the masked steps. minnet's
``Tensor`` has fixed slots, so the mask lives in a side table keyed by the tensor
(``get_keras_mask(t)`` / ``set_keras_mask``, defined in ``layers/base.py`` and re-exported
here), dropped when the tensor is garbage-collected.
"""
import numpy as np

from minnet import functional as F
from minnet import initializers
from minnet._checks import check_float, check_int, invalid
from minnet.autograd import Tensor
from minnet.layers.base import Layer, get_keras_mask, set_keras_mask

__all__ = ["Embedding", "Masking", "get_keras_mask", "set_keras_mask"]


class Embedding(Layer):
    """Turns integer indices into dense vectors: ``y = embeddings[x]``.

    Args:
        input_dim: size of the vocabulary (largest index + 1).
        output_dim: size of each vector.
        embeddings_initializer: Keras's default ``"uniform"`` is U(-0.05, 0.05).
        mask_zero: index 0 is padding: the output carries a mask (``x != 0``) that recurrent
            layers use to skip padded steps (``input_dim`` must then count index 0).
        input_length: accepted for Keras 2 scripts and ignored (Keras 3 removed it).
        name, dtype, trainable: as for every layer.

    Shape:
        - Input: ``(N, *)`` integer indices in ``[0, input_dim)``.
        - Output: ``(N, *, output_dim)``. Weight ``embeddings``: ``(input_dim, output_dim)``.

    Example:
        >>> layer = layers.Embedding(1000, 8, mask_zero=True)
        >>> y = layer(np.array([[4, 9, 0, 0]]))
        >>> y.shape, get_keras_mask(y).tolist()
        ((1, 4, 8), [[True, True, False, False]])
    """

    weight_option_targets = {"embeddings": ("embeddings",)}

    def __init__(self, input_dim, output_dim, embeddings_initializer="uniform", mask_zero=False,
                 input_length=None, weights=None, name=None, dtype="float32", trainable=True,
                 **kwargs):
        super().__init__(name=name, dtype=dtype, trainable=trainable, **kwargs)
        self.input_dim = check_int("input_dim", input_dim, minimum=1)
        self.output_dim = check_int("output_dim", output_dim, minimum=1)
        if embeddings_initializer == "uniform":
            embeddings_initializer = initializers.RandomUniform(-0.05, 0.05)
        self.embeddings_initializer = initializers.get(embeddings_initializer)
        self.mask_zero = bool(mask_zero)
        self.input_length = input_length
        self.embeddings = None
        if weights is not None:         # Keras's initial matrix (pretrained word vectors, ...)
            self.build(None)
            self.built = True
            self.set_weights(weights if isinstance(weights, list) and len(weights) == 1 else [weights])

    def build(self, input_shape):
        self.embeddings = self.add_weight("embeddings", (self.input_dim, self.output_dim),
                                          initializer=self.embeddings_initializer)
        super().build(input_shape)

    def __call__(self, x, training=None):
        if hasattr(x, "symbolic_call"):   # functional API: record a node (ops/symbolic.py)
            return self._symbolic_call((x,), {}, training=training)
        # Indices are not cast to the layer's float dtype (float32 cannot hold every int).
        indices = x.data if isinstance(x, Tensor) else np.asarray(x)
        if not self.built:
            self.build(tuple(indices.shape))
            self._build_input_shape = tuple(indices.shape)
            self.built = True
        return self.call(indices, training=bool(self.training if training is None else training))

    def call(self, x, training=False):
        indices = x.data if isinstance(x, Tensor) else np.asarray(x)
        out = F.embedding(indices, self.embeddings)
        if self.mask_zero:
            set_keras_mask(out, indices != 0)
        return out

    def compute_mask(self, inputs, mask=None):
        """``inputs != 0`` when ``mask_zero``, else None."""
        if not self.mask_zero:
            return None
        return np.asarray(inputs.data if isinstance(inputs, Tensor) else inputs) != 0

    def compute_output_shape(self, input_shape):
        return tuple(input_shape) + (self.output_dim,)

    def get_config(self):
        return {**super().get_config(), "input_dim": self.input_dim, "output_dim": self.output_dim,
                "embeddings_initializer": initializers.serialize(self.embeddings_initializer),
                "mask_zero": self.mask_zero}

    def extra_repr(self):
        return f"{self.input_dim}, {self.output_dim}" + (", mask_zero=True" if self.mask_zero else "")


class Masking(Layer):
    """Masks time steps whose features all equal ``mask_value`` (Keras's ``Masking``).

    The output equals the input with masked steps set to 0 and carries the mask
    ``any(x != mask_value, axis=-1)`` for the recurrent layers downstream.

    Args:
        mask_value: the padding value (default 0.0).

    Shape:
        - Input: ``(N, T, features)``. Output: the same.

    Example:
        >>> x = np.array([[[1.0], [0.0]]])
        >>> get_keras_mask(layers.Masking()(x)).tolist()
        [[True, False]]
    """

    def __init__(self, mask_value=0.0, name=None, dtype="float32", trainable=True, **kwargs):
        super().__init__(name=name, dtype=dtype, trainable=trainable, **kwargs)
        self.mask_value = check_float("mask_value", mask_value)

    def call(self, x, training=False):
        if x.ndim < 2:
            raise invalid("inputs", "at least 2 axes (batch, timesteps, ...)", tuple(x.shape))
        keep = np.any(x.data != self.mask_value, axis=-1)
        out = x * Tensor(keep[..., None].astype(x.dtype))
        return set_keras_mask(out, keep)

    def compute_mask(self, inputs, mask=None):
        data = inputs.data if isinstance(inputs, Tensor) else np.asarray(inputs)
        return np.any(data != self.mask_value, axis=-1)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        return {**super().get_config(), "mask_value": self.mask_value}

    def extra_repr(self):
        return f"mask_value={self.mask_value}"
