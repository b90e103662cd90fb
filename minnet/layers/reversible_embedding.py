"""``ReversibleEmbedding``, Keras 3's: an ``Embedding`` that can also be called in reverse,
``layer(hidden, reverse=True)``, projecting hidden states back onto the vocabulary with the
transposed embedding matrix (``tie_weights=True``, the weight tying of language models) or
its own ``reverse_embeddings`` (output_dim, input_dim); ``logit_soft_cap`` ``c`` gives
``c · tanh(logits / c)``."""
from minnet._checks import check_float
from minnet.layers.base import Layer
from minnet.layers.embedding import Embedding

__all__ = ["ReversibleEmbedding"]


class ReversibleEmbedding(Embedding):
    """Embedding with a reverse projection (Keras 3's arguments).

    Args:
        input_dim, output_dim, embeddings_initializer, mask_zero: as ``Embedding``.
        tie_weights: reverse with ``embeddings.T`` (default) or a separate
            ``reverse_embeddings`` weight (output_dim, input_dim).
        reverse_dtype: accepted for Keras's signature; the reverse runs in the layer's dtype.
        logit_soft_cap: None or a positive float ``c``: reverse logits ``c tanh(logits / c)``.

    Example:
        >>> emb = layers.ReversibleEmbedding(100, 8)
        >>> h = emb(np.array([[1, 2, 3]]))            # (1, 3, 8)
        >>> emb(h, reverse=True).shape                  # logits over the vocabulary
        (1, 3, 100)
    """

    def __init__(self, input_dim, output_dim, tie_weights=True, embeddings_initializer="uniform",
                 mask_zero=False, reverse_dtype=None, logit_soft_cap=None, **kwargs):
        super().__init__(input_dim, output_dim, embeddings_initializer=embeddings_initializer,
                         mask_zero=mask_zero, **kwargs)
        self.tie_weights = bool(tie_weights)
        self.reverse_dtype = reverse_dtype
        self.logit_soft_cap = None if logit_soft_cap is None else check_float(
            "logit_soft_cap", logit_soft_cap, low=0.0, low_open=True)
        self.reverse_embeddings = None

    def build(self, input_shape=None):
        super().build(input_shape)
        if not self.tie_weights:
            self.reverse_embeddings = self.add_weight(
                "reverse_embeddings", (self.output_dim, self.input_dim),
                initializer=self.embeddings_initializer)

    def __call__(self, x, training=None, reverse=False):
        if reverse:                # float hidden states: the general Layer path
            return Layer.__call__(self, x, training=training, reverse=True)
        return super().__call__(x, training=training)

    def call(self, x, training=False, reverse=False):
        if not reverse:
            return super().call(x, training=training)
        if x.shape[-1] != self.output_dim:
            raise ValueError(f"Layer '{self.name}' (reverse=True) expects hidden states with "
                             f"{self.output_dim} features on the last axis. Received: "
                             f"shape={tuple(x.shape)}")
        kernel = self.embeddings.transpose(1, 0) if self.tie_weights else self.reverse_embeddings
        logits = x.matmul(kernel)
        if self.logit_soft_cap is not None:
            cap = self.logit_soft_cap
            logits = (logits / cap).tanh() * cap
        return logits

    def compute_mask(self, inputs, mask=None):
        return None if getattr(inputs, "dtype", None) is not None and \
            inputs.dtype.kind == "f" else super().compute_mask(inputs, mask)

    def compute_output_shape(self, input_shape):
        """The forward call's shape (``reverse_output_shape`` gives the reverse one)."""
        return tuple(input_shape) + (self.output_dim,)

    def reverse_output_shape(self, input_shape):
        return tuple(input_shape)[:-1] + (self.input_dim,)

    def _infer_output(self, info, args, kwargs):
        if kwargs.get("reverse"):           # a symbolic reverse call: its own shape rule
            if not self.built:
                self.build(None)
                self.built = True
            shape = self.reverse_output_shape(args[0].shape)
            return (shape, self.dtype)
        return super()._infer_output(info, args, kwargs)

    def get_config(self):
        return {**super().get_config(), "tie_weights": self.tie_weights,
                "reverse_dtype": self.reverse_dtype, "logit_soft_cap": self.logit_soft_cap}
