"""``GroupQueryAttention`` (Ainslie et al. 2023), Keras 3's ``keras.layers.GroupQueryAttention``:
multi-head attention whose ``num_query_heads`` query heads share ``num_key_value_heads``
key/value heads, each key/value head serving ``num_query_heads / num_key_value_heads``
consecutive query heads (Keras's ``ops.repeat`` on the head axis).

It is ``MultiHeadAttention`` with key and value projections of ``num_key_value_heads``
heads (``key_kernel`` (d_k, kv_heads, head_dim), ``value_kernel`` (d_v, kv_heads,
head_dim)); the rest, the fused kernel, the masks and the weight order are
``MultiHeadAttention``'s, so ``get_weights()`` reads as Keras's.
"""
from minnet._checks import check_int
from minnet.layers.attention import MultiHeadAttention

__all__ = ["GroupQueryAttention"]


class GroupQueryAttention(MultiHeadAttention):
    """Grouped-query attention with Keras 3's arguments.

    Args:
        head_dim: size of each head (query, key and value).
        num_query_heads: query heads; num_key_value_heads: key/value heads (a divisor).
        dropout, use_bias, sliding_window, flash_attention, kernel_initializer,
        bias_initializer, kernel_regularizer, bias_regularizer, activity_regularizer,
        kernel_constraint, bias_constraint, use_gate, seed: as ``MultiHeadAttention``.

    Call arguments: as ``MultiHeadAttention`` (``query``, ``value``, ``key``, the masks,
    ``return_attention_scores``, ``training``, ``use_causal_mask``); 3-D inputs.
    """

    def __init__(self, head_dim, num_query_heads, num_key_value_heads, dropout=0.0,
                 use_bias=True, sliding_window=None, flash_attention=None,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, use_gate=False, seed=None,
                 **kwargs):
        query_heads = check_int("num_query_heads", num_query_heads, 1)
        kv_heads = check_int("num_key_value_heads", num_key_value_heads, 1)
        if query_heads % kv_heads:
            raise ValueError(f"Invalid value for argument `num_key_value_heads`: "
                             f"`num_query_heads` ({query_heads}) must be divisible by it. "
                             f"Received: num_key_value_heads={kv_heads}")
        super().__init__(num_heads=query_heads, key_dim=head_dim, value_dim=head_dim,
                         dropout=dropout, use_bias=use_bias, sliding_window=sliding_window,
                         flash_attention=flash_attention, kernel_initializer=kernel_initializer,
                         bias_initializer=bias_initializer, kernel_regularizer=kernel_regularizer,
                         bias_regularizer=bias_regularizer,
                         activity_regularizer=activity_regularizer,
                         kernel_constraint=kernel_constraint, bias_constraint=bias_constraint,
                         use_gate=use_gate, seed=seed, **kwargs)
        self.num_key_value_heads = kv_heads
        self.head_dim = self.key_dim
        self.num_query_heads = self.num_heads

    def _kv_heads(self):
        return self.num_key_value_heads

    def call(self, query, value, key=None, query_mask=None, value_mask=None, key_mask=None,
             attention_mask=None, return_attention_scores=False, training=None,
             use_causal_mask=False):
        if len(getattr(query, "shape", ())) != 3:
            raise ValueError(f"Layer '{self.name}' takes 3-D inputs (batch, T, features). "
                             f"Received: query.shape={tuple(getattr(query, 'shape', ()))}")
        return super().call(query, value, key=key, query_mask=query_mask, value_mask=value_mask,
                            key_mask=key_mask, attention_mask=attention_mask,
                            return_attention_scores=return_attention_scores, training=training,
                            use_causal_mask=use_causal_mask)

    def get_config(self):
        config = super().get_config()
        for key in ("num_heads", "key_dim", "value_dim", "output_shape", "attention_axes"):
            config.pop(key, None)
        return {**config, "head_dim": self.head_dim, "num_query_heads": self.num_query_heads,
                "num_key_value_heads": self.num_key_value_heads}

    def extra_repr(self):
        return (f"head_dim={self.head_dim}, num_query_heads={self.num_query_heads}, "
                f"num_key_value_heads={self.num_key_value_heads}")
