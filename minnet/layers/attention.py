"""Attention layers with Keras 3's signatures and meanings: ``MultiHeadAttention``,
``Attention`` (Luong, dot or concat scores) and ``AdditiveAttention`` (Bahdanau).

``MultiHeadAttention`` keeps Keras's weight layout (``get_weights()`` reads as Keras's):

| weight | shape |
|---|---|
| ``query_kernel``, ``query_bias`` | (d_query, heads, key_dim), (heads, key_dim) |
| ``key_kernel``, ``key_bias`` | (d_key, heads, key_dim), (heads, key_dim) |
| ``value_kernel``, ``value_bias`` | (d_value, heads, value_dim), (heads, value_dim) |
| ``attention_output_kernel``, ``attention_output_bias`` | (heads, value_dim, d_out), (d_out,) |

so ``q = query @ query_kernel + query_bias`` is (B, T, heads, key_dim), and the attention
runs in that (B, T, heads, dim) layout on the fused kernel (``functional.fused_attention``)
without transposes. ``docs/math/attention.md`` gives the conversion to PyTorch's packed
``in_proj_weight`` (``minnet.interop`` does it for ``torch.nn.MultiheadAttention``).

The scores are materialised (a composed path of Tensor ops) only when they are returned
(``return_attention_scores=True``) or dropout is active; otherwise the fused kernel runs,
with padding masks from ``Embedding(mask_zero=True)`` turned into key lengths.
"""
import numbers

import numpy as np

from minnet import constraints, initializers, regularizers
from minnet import functional as F
from minnet.autograd import Tensor
from minnet.layers.base import Layer, get_keras_mask, set_keras_mask

__all__ = ["MultiHeadAttention", "Attention", "AdditiveAttention"]

_LARGE = 1.0e9      # Keras's Attention subtracts this from masked scores


def _positive_int(value, arg, allow_none=False):
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
        raise ValueError(f"Invalid value for argument `{arg}`: expected a positive int"
                         f"{' or None' if allow_none else ''}. Received: {arg}={value!r}")
    return int(value)


def _rate(value, arg="dropout"):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0.0 <= value < 1.0:
        raise ValueError(f"Invalid value for argument `{arg}`: expected a float in [0, 1). "
                         f"Received: {arg}={value!r}")
    return float(value)


def _keras_fans(initializer):
    """``initializer`` drawing with Keras's fans for an einsum kernel: Keras counts
    ``fan_in = shape[-2] * prod(shape[:-2])``, ``fan_out = shape[-1] * prod(shape[:-2])``;
    minnet's ``(out, in, *field)`` rule gives those for the shape
    ``(shape[-1], shape[-2], *shape[:-2])``, drawn there and reshaped (iid values)."""
    def draw(shape, dtype=None):
        shape = tuple(shape)
        flipped = (shape[-1], shape[-2]) + shape[:-2]
        return np.reshape(initializers.checked_call(initializer, flipped, dtype), shape)
    return draw


def _mask_array(mask, name, shape):
    if mask is None:
        return None
    array = mask.data if isinstance(mask, Tensor) else np.asarray(mask)
    if tuple(array.shape) != tuple(shape):
        raise ValueError(f"Invalid value for argument `{name}`: expected shape {tuple(shape)}. "
                         f"Received: shape={tuple(array.shape)}")
    return array.astype(bool, copy=False)


def _axes_arg(axes):
    """``attention_axes`` as Keras takes it (None, an int, or a list/tuple of ints)."""
    if axes is None:
        return None
    items = (axes,) if isinstance(axes, (int, np.integer)) else axes
    if not isinstance(items, (list, tuple)) or not items or any(
            isinstance(a, bool) or not isinstance(a, (int, np.integer)) for a in items):
        raise ValueError(f"Invalid value for argument `attention_axes`: expected None, an int or "
                         f"a non-empty list/tuple of ints. Received: attention_axes={axes!r}")
    return tuple(int(a) for a in items)


class _Fold:
    """Inputs of rank > 3 as (batch', T, features) for the 3-D attention, and back.

    The axes between the batch and the features split into the attention axes (Keras's
    ``attention_axes``, in the order given; default all of them) and the others, which act
    as batch axes: ``x`` is permuted to (B, <others>, <attention axes>, d) and reshaped to
    (B * prod(others), prod(attention axes), d), as Keras's einsum equations treat them.
    """

    def __init__(self, q_shape, v_shape, k_shape, axes, layer):
        rank = len(q_shape)
        given = tuple(range(1, rank - 1)) if axes is None else tuple(
            a if a >= 0 else rank + a for a in axes)
        if any(not 1 <= a <= rank - 2 for a in given) or len(set(given)) != len(given):
            raise ValueError(f"Invalid value for argument `attention_axes` of layer '{layer}': "
                             f"expected distinct axes between the batch axis and the feature "
                             f"axis of inputs of rank {rank} (1..{rank - 2}, or "
                             f"{-(rank - 1)}..-2). Received: attention_axes={axes!r}")
        for name, shape in (("value", v_shape), ("key", k_shape)):
            if shape is None:
                continue
            if len(shape) != rank or any(shape[i] != q_shape[i] for i in range(rank - 1)
                                         if i not in given):
                raise ValueError(f"Layer '{layer}': `{name}` must have the rank of `query` "
                                 f"({rank}) and its sizes on the batch and non-attention axes. "
                                 f"Received: query.shape={q_shape}, {name}.shape={shape}, "
                                 f"attention_axes={given}")
        self.others = tuple(a for a in range(1, rank - 1) if a not in given)
        self.axes = given
        self.perm = (0,) + self.others + given + (rank - 1,)
        self.q_shape, self.k_shape = q_shape, v_shape
        self.lead = (q_shape[0],) + tuple(q_shape[a] for a in self.others)

    def _length(self, shape):
        return int(np.prod([shape[a] for a in self.axes], dtype=np.int64))

    def inputs(self, x):
        shape = tuple(x.shape)
        if self.perm != tuple(range(len(shape))):
            x = x.permute(*self.perm)
        return x.reshape(int(np.prod(self.lead, dtype=np.int64)), self._length(shape), shape[-1])

    def mask(self, m, name):
        if m is None:
            return None
        array = np.asarray(getattr(m, "data", m)).astype(bool, copy=False)
        if array.ndim != len(self.perm) - 1:
            raise ValueError(f"Invalid value for argument `{name}`: expected the input's shape "
                             f"without its feature axis ({len(self.perm) - 1} axes). Received: "
                             f"shape={array.shape}")
        lead = int(np.prod(self.lead, dtype=np.int64))
        return np.transpose(array, self.perm[:-1]).reshape(lead, -1)

    def attention_mask(self, mask):
        """(B, <others>, <query attention axes>, <key attention axes>), missing axes added
        before the attention axes (Keras's expansion), as (batch', Tq, Tk)."""
        array = np.asarray(getattr(mask, "data", mask)).astype(bool, copy=False)
        n = len(self.axes)
        q_axes = tuple(self.q_shape[a] for a in self.axes)
        k_axes = tuple(self.k_shape[a] for a in self.axes)
        target = self.lead + q_axes + k_axes
        if 2 * n <= array.ndim < len(target):
            split = array.ndim - 2 * n
            array = array.reshape(array.shape[:split] + (1,) * (len(target) - array.ndim)
                                  + array.shape[split:])
        try:
            array = np.broadcast_to(array, target)
        except ValueError:
            raise ValueError(f"Invalid value for argument `attention_mask`: expected shape "
                             f"{target} (batch, other inner axes, query attention axes, key "
                             f"attention axes). Received: shape={np.shape(mask)}") from None
        return array.reshape(int(np.prod(self.lead, dtype=np.int64)),
                             int(np.prod(q_axes, dtype=np.int64)),
                             int(np.prod(k_axes, dtype=np.int64)))

    def output(self, y, out_dims):
        """(batch', Tq, *out_dims) back to the query's axes, features last."""
        rank = len(self.perm)
        y = y.reshape(self.lead + tuple(self.q_shape[a] for a in self.axes) + tuple(out_dims))
        inverse = tuple(int(i) for i in np.argsort(self.perm[:-1])) + tuple(
            range(rank - 1, rank - 1 + len(out_dims)))
        return y if inverse == tuple(range(len(inverse))) else y.permute(*inverse)

    def unfold_mask(self, rows):
        shape = self.lead + tuple(self.q_shape[a] for a in self.axes)
        return np.transpose(rows.reshape(shape), np.argsort(self.perm[:-1]))

    def scores(self, s):
        """(batch', heads, Tq, Tk) as (B, <others>, heads, <query axes>, <key axes>)."""
        return s.reshape(self.lead + (s.shape[1],) + tuple(self.q_shape[a] for a in self.axes)
                         + tuple(self.k_shape[a] for a in self.axes))


class MultiHeadAttention(Layer):
    """Multi-head attention (Vaswani et al. 2017), as ``keras.layers.MultiHeadAttention``.

    Each head projects query, key and value (``key_dim``, ``key_dim``, ``value_dim``
    features), computes ``softmax(q kᵀ / sqrt(key_dim) + mask) v``, and the heads' outputs
    are projected back to ``output_shape`` (default: the query's last dimension).

    Args:
        num_heads: number of heads.
        key_dim: size of each head for query and key.
        value_dim: size of each head for value (default ``key_dim``).
        dropout: dropout rate on the attention probabilities (training only).
        use_bias: projections with biases.
        output_shape: int or tuple, the output's trailing shape (default: query's last dim).
        attention_axes: the axes attention runs over (an int or a tuple, counted in the
            input's axes, negative from the end), as Keras: None means every axis between
            the batch and the features (inputs of rank > 3 attend over those axes jointly);
            the other inner axes act as batch axes. ``(B, H, W, d)`` inputs with
            ``attention_axes=(2,)`` attend along W for each row separately.
        sliding_window: None or a positive int: query i sees keys with |i - j| < window.
        flash_attention: accepted for Keras's signature; the fused kernel always runs.
        kernel_initializer, bias_initializer, kernel_regularizer, bias_regularizer,
        kernel_constraint, bias_constraint: for the four projections, as Keras.
        use_gate: a sigmoid gate ``sigmoid(query @ gate_kernel + gate_bias)`` multiplying
            the heads' outputs before the output projection.
        seed: accepted for Keras's signature (minnet's dropout draws from ``mn.manual_seed``).

    Call arguments (``call``): ``query`` (B, T, d_q), ``value`` (B, S, d_v), ``key``
    (B, S, d_k, default ``value``), ``query_mask`` (B, T), ``value_mask`` / ``key_mask``
    (B, S) (by default the Keras masks of the inputs, e.g. from ``Embedding(mask_zero=
    True)``), ``attention_mask`` (B, T, S) booleans (True = attend),
    ``return_attention_scores``, ``training``, ``use_causal_mask``.

    Returns:
        (B, T, *output_shape), and the (B, heads, T, S) probabilities when
        ``return_attention_scores`` (for inputs of rank > 3: (B, <other inner axes>, heads,
        <query attention axes>, <key attention axes>), Keras's layout). The output carries the query's mask. A query row with
        no allowed key gives output 0 (before the output projection; Keras's fused path on
        torch gives uniform weights there, its score path 0).

    Example:
        >>> mha = layers.MultiHeadAttention(num_heads=2, key_dim=4)
        >>> x = mn.randn(3, 5, 8)
        >>> mha.build(x.shape, x.shape)
        >>> mha.call(x, x, use_causal_mask=True).shape
        (3, 5, 8)
    """

    supports_masking = True

    def __init__(self, num_heads, key_dim, value_dim=None, dropout=0.0, use_bias=True,
                 output_shape=None, attention_axes=None, sliding_window=None,
                 flash_attention=None, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
                 use_gate=False, seed=None, name=None, dtype=None, trainable=True, **kwargs):
        super().__init__(name=name, dtype=dtype, trainable=trainable,
                         activity_regularizer=activity_regularizer, **kwargs)
        self.num_heads = _positive_int(num_heads, "num_heads")
        self.key_dim = _positive_int(key_dim, "key_dim")
        self.value_dim = _positive_int(value_dim, "value_dim", allow_none=True) or self.key_dim
        self.dropout = _rate(dropout)
        self.use_bias = bool(use_bias)
        if output_shape is not None and not isinstance(output_shape, (list, tuple)):
            output_shape = (output_shape,)
        self.output_shape_arg = None if output_shape is None else tuple(
            _positive_int(s, "output_shape") for s in output_shape)
        self.attention_axes = _axes_arg(attention_axes)
        self.sliding_window = _positive_int(sliding_window, "sliding_window", allow_none=True)
        self.flash_attention = flash_attention
        self.use_gate = bool(use_gate)
        self.seed = seed
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.bias_constraint = constraints.get(bias_constraint)
        self._scale = 1.0 / float(np.sqrt(self.key_dim))

    # ------------------------------------------------------------------ weights
    def _kv_heads(self):
        """Key/value heads: ``num_heads`` here; fewer in ``GroupQueryAttention``."""
        return self.num_heads

    def _kernel(self, name, shape):
        return self.add_weight(f"{name}_kernel", shape,
                               initializer=_keras_fans(self.kernel_initializer),
                               regularizer=self.kernel_regularizer,
                               constraint=self.kernel_constraint)

    def _bias(self, name, shape):
        if not self.use_bias:
            return None
        return self.add_weight(f"{name}_bias", shape, initializer=self.bias_initializer,
                               regularizer=self.bias_regularizer, constraint=self.bias_constraint)

    def build(self, query_shape, value_shape=None, key_shape=None):
        """Create the projections for query (B, ..., d_q), value and key shapes (Keras's order);
        ``value_shape`` defaults to ``query_shape`` (self-attention)."""
        query_shape = tuple(query_shape)
        value_shape = query_shape if value_shape is None else tuple(value_shape)
        key_shape = value_shape if key_shape is None else tuple(key_shape)
        if value_shape[1:-1] != key_shape[1:-1]:
            raise ValueError("All dimensions of `value` and `key`, except the last one, must be "
                             f"equal. Received: value_shape={value_shape} and "
                             f"key_shape={key_shape}")
        for name, shape in (("query", query_shape), ("value", value_shape), ("key", key_shape)):
            if len(shape) < 3 or shape[-1] is None:
                raise ValueError(f"Layer '{self.name}' needs `{name}` of shape (batch, ..., "
                                 f"features) with known features. Received: {name}_shape={shape}")
        heads, kd, vd = self.num_heads, self.key_dim, self.value_dim
        d_q, d_k, d_v = int(query_shape[-1]), int(key_shape[-1]), int(value_shape[-1])
        out = self.output_shape_arg or (d_q,)
        self.query_kernel = self._kernel("query", (d_q, heads, kd))
        self.query_bias = self._bias("query", (heads, kd))
        kv_heads = self._kv_heads()
        self.key_kernel = self._kernel("key", (d_k, kv_heads, kd))
        self.key_bias = self._bias("key", (kv_heads, kd))
        if self.use_gate:
            self.gate_kernel = self._kernel("gate", (d_q, heads, vd))
            self.gate_bias = self._bias("gate", (heads, vd))
        self.value_kernel = self._kernel("value", (d_v, kv_heads, vd))
        self.value_bias = self._bias("value", (kv_heads, vd))
        self.attention_output_kernel = self._kernel("attention_output", (heads, vd) + tuple(out))
        self.attention_output_bias = self._bias("attention_output", tuple(out))
        self._dims = (d_q, d_k, d_v)
        self._build_input_shape = query_shape
        self.built = True

    # ------------------------------------------------------------------ call
    def _project(self, x, kernel, bias):
        """(B, T, d) @ (d, heads, dim) + (heads, dim) -> (B, T, heads, dim)."""
        d, heads, dim = kernel.shape
        y = x.reshape(x.shape[0] * x.shape[1], d).matmul(kernel.reshape(d, heads * dim))
        if bias is not None:
            y = y + bias.reshape(heads * dim)
        return y.reshape(x.shape[0], x.shape[1], heads, dim)

    def _flat(self, x, name, d):
        x = self._to_tensor(x)
        if x.ndim < 3 or x.shape[-1] != d:
            raise ValueError(f"Input `{name}` of layer '{self.name}' is incompatible with the "
                             f"layer: expected shape (batch, ..., {d}). Received: "
                             f"{name}.shape={tuple(x.shape)}")
        return x

    def call(self, query, value, key=None, query_mask=None, value_mask=None, key_mask=None,
             attention_mask=None, return_attention_scores=False, training=None,
             use_causal_mask=False):
        if not self.built:
            self.build(tuple(np.shape(getattr(query, "data", query))),
                       tuple(np.shape(getattr(value, "data", value))),
                       None if key is None else tuple(np.shape(getattr(key, "data", key))))
        training = self.training if training is None else bool(training)
        if query_mask is None:
            query_mask = get_keras_mask(query)
        if value_mask is None:
            value_mask = get_keras_mask(value)
        if key is not None and key_mask is None:
            key_mask = get_keras_mask(key)
        d_q, d_k, d_v = self._dims
        query, value = self._to_tensor(query), self._to_tensor(value)
        key = None if key is None else self._to_tensor(key)
        q_shape = tuple(query.shape)
        fold = None
        if len(q_shape) > 3:      # fold the other inner axes into the batch (Keras's einsums)
            fold = _Fold(q_shape, tuple(value.shape), None if key is None else tuple(key.shape),
                         self.attention_axes, self.name)
            query, value = fold.inputs(query), fold.inputs(value)
            key = None if key is None else fold.inputs(key)
            query_mask, value_mask, key_mask = (fold.mask(m, name) for m, name in (
                (query_mask, "query_mask"), (value_mask, "value_mask"), (key_mask, "key_mask")))
            if attention_mask is not None:
                attention_mask = fold.attention_mask(attention_mask)
        q_in = self._flat(query, "query", d_q)
        v_in = self._flat(value, "value", d_v)
        k_in = v_in if key is None else self._flat(key, "key", d_k)
        if k_in.shape[:2] != v_in.shape[:2] or q_in.shape[0] != v_in.shape[0]:
            raise ValueError(f"Layer '{self.name}': `query`, `value` and `key` must share the "
                             f"batch size and `value`/`key` the sequence axes. Received: "
                             f"query {tuple(q_in.shape)}, value {tuple(v_in.shape)}, key "
                             f"{tuple(k_in.shape)}")
        batch, n_q, n_k = q_in.shape[0], q_in.shape[1], v_in.shape[1]
        if fold is not None and (use_causal_mask or self.sliding_window):
            raise ValueError(f"Layer '{self.name}': `use_causal_mask` and `sliding_window` need "
                             f"3-D inputs (batch, T, features). Received: query.shape={q_shape}")
        rows = _mask_array(query_mask, "query_mask", (batch, n_q))
        keys = None
        for name, m in (("value_mask", value_mask), ("key_mask", key_mask)):
            if m is not None:
                arr = _mask_array(m, name, (batch, n_k))
                keys = arr if keys is None else keys & arr
        pairs = None
        if attention_mask is not None:
            am = np.asarray(getattr(attention_mask, "data", attention_mask)).astype(bool)
            try:
                pairs = np.broadcast_to(am, (batch, n_q, n_k))
            except ValueError:
                raise ValueError(f"Invalid value for argument `attention_mask`: expected shape "
                                 f"({batch}, {n_q}, {n_k}). Received: shape={am.shape}") from None
        if self.sliding_window:
            i = np.arange(n_q)[:, None]
            j = np.arange(n_k)[None, :]
            band = np.abs(i - j) < self.sliding_window
            pairs = band[None] if pairs is None else pairs & band[None]

        q = self._project(q_in, self.query_kernel, self.query_bias)
        k = self._project(k_in, self.key_kernel, self.key_bias)
        v = self._project(v_in, self.value_kernel, self.value_bias)
        if self._kv_heads() != self.num_heads:     # grouped-query: each key/value head serves
            share = np.arange(self.num_heads) // (self.num_heads // self._kv_heads())
            k, v = k[:, :, share], v[:, :, share]  # num_heads / kv_heads query heads in a row
        dropout_on = training and self.dropout > 0
        if return_attention_scores or dropout_on:
            full = np.ones((batch, n_q, n_k), bool)
            for part in (None if rows is None else rows[:, :, None],
                         None if keys is None else keys[:, None, :], pairs):
                if part is not None:
                    full = full & part
            additive = np.where(full, 0, -np.inf).astype(q.dtype)[:, None]
            out, scores = F.composed_attention(
                q, k, v, self._scale, causal=use_causal_mask, mask=additive,
                dropout_p=self.dropout if dropout_on else 0.0, layout="blhd")
        else:
            if pairs is not None:
                m = pairs if keys is None else pairs & keys[:, None, :]
                mask4 = np.broadcast_to(m[:, None], (batch, self.num_heads, n_q, n_k))
            elif keys is not None:
                mask4 = np.broadcast_to(keys[:, None, None, :], (batch, self.num_heads, n_q, n_k))
            else:
                mask4 = None
            kv_len, additive = F.kernel_mask(mask4, q.dtype)
            out = F.fused_attention(q, k, v, self._scale, use_causal_mask, kv_len, additive,
                                    layout="blhd")
            if rows is not None:      # a masked query row attends nowhere: output 0
                out = out * rows[:, :, None, None].astype(out.dtype)
            scores = None
        if self.use_gate:
            out = out * self._project(q_in, self.gate_kernel, self.gate_bias).sigmoid()
        heads, vd = self.num_heads, self.value_dim
        kernel = self.attention_output_kernel
        out_dims = tuple(kernel.shape[2:])
        y = out.reshape(batch * n_q, heads * vd).matmul(
            kernel.reshape(heads * vd, int(np.prod(out_dims))))
        if self.attention_output_bias is not None:
            y = y + self.attention_output_bias.reshape(-1)
        if fold is None:
            y = y.reshape(q_shape[:-1] + out_dims)
        else:
            y = fold.output(y, out_dims)
            scores = None if scores is None else fold.scores(scores)
        query_mask = rows if fold is None or rows is None else fold.unfold_mask(rows)
        if query_mask is not None:
            set_keras_mask(y, np.asarray(getattr(query_mask, "data", query_mask), bool))
        if return_attention_scores:
            return y, scores
        return y

    def _infer_output(self, info, args, kwargs):
        # Symbolic call (a functional model): with return_attention_scores=True the layer
        # gives (output, scores), which the shape formula below does not describe; run it
        # on placeholders instead.
        if kwargs.get("return_attention_scores"):
            if not self.built:
                self._maybe_build(info, args, kwargs)
            return self._run_on_placeholders(args, kwargs)
        return super()._infer_output(info, args, kwargs)

    def compute_output_shape(self, query_shape, value_shape=None, key_shape=None):
        query_shape = tuple(query_shape)
        if self.output_shape_arg:
            return query_shape[:-1] + self.output_shape_arg
        return query_shape

    def get_config(self):
        return {**super().get_config(), "num_heads": self.num_heads, "key_dim": self.key_dim,
                "value_dim": self.value_dim, "dropout": self.dropout, "use_bias": self.use_bias,
                "output_shape": None if self.output_shape_arg is None else list(self.output_shape_arg),
                "attention_axes": None if self.attention_axes is None else list(
                    self.attention_axes), "sliding_window": self.sliding_window,
                "flash_attention": self.flash_attention, "use_gate": self.use_gate,
                "seed": self.seed,
                "kernel_initializer": initializers.serialize(self.kernel_initializer),
                "bias_initializer": initializers.serialize(self.bias_initializer),
                "kernel_regularizer": regularizers.serialize(self.kernel_regularizer),
                "bias_regularizer": regularizers.serialize(self.bias_regularizer),
                "kernel_constraint": constraints.serialize(self.kernel_constraint),
                "bias_constraint": constraints.serialize(self.bias_constraint)}

    def extra_repr(self):
        return f"num_heads={self.num_heads}, key_dim={self.key_dim}" + (
            f", value_dim={self.value_dim}" if self.value_dim != self.key_dim else "")


class Attention(Layer):
    """Dot-product (Luong) attention, as ``keras.layers.Attention``.

    ``scores = query @ keyᵀ`` (``score_mode="dot"``, times the scalar ``scale`` when
    ``use_scale``) or ``concat_score_weight * sum(tanh(scale * (q_i + k_j)))``
    (``score_mode="concat"``); masked scores get ``-1e9`` (Keras's rule, so a row with no
    allowed key gets uniform weights), ``weights = softmax(scores)`` (dropout on them in
    training), ``output = weights @ value``, zeroed at masked query steps.

    Args:
        use_scale: a trainable scalar ``scale`` (initialised to 1) on the scores.
        score_mode: ``"dot"`` or ``"concat"``.
        dropout: dropout rate on the attention weights (training only).
        seed: accepted for Keras's signature (dropout draws from ``mn.manual_seed``).

    Call arguments (``call``): ``inputs`` = ``[query (B, Tq, dim), value (B, Tv, dim)]``
    or ``[query, value, key (B, Tv, dim)]``; ``mask`` = ``[query_mask (B, Tq),
    value_mask (B, Tv)]`` (either None); ``return_attention_scores``; ``training``;
    ``use_causal_mask``.

    Returns:
        (B, Tq, dim) (and the (B, Tq, Tv) weights when ``return_attention_scores``).

    Example:
        >>> att = layers.Attention()
        >>> q, v = mn.randn(2, 3, 4), mn.randn(2, 5, 4)
        >>> att.call([q, v]).shape
        (2, 3, 4)
    """

    supports_masking = True
    _default_use_scale = False

    def __init__(self, use_scale=False, score_mode="dot", dropout=0.0, seed=None, name=None,
                 dtype=None, trainable=True, **kwargs):
        super().__init__(name=name, dtype=dtype, trainable=trainable, **kwargs)
        self.use_scale = bool(use_scale)
        if score_mode not in ("dot", "concat"):
            raise ValueError("Invalid value for argument score_mode. Expected one of "
                             f"{{'dot', 'concat'}}. Received: score_mode={score_mode}")
        self.score_mode = score_mode
        self.dropout = _rate(dropout)
        self.seed = seed
        self.scale = None
        self.concat_score_weight = None

    def _validate(self, inputs, mask=None):
        name = type(self).__name__
        if not isinstance(inputs, (list, tuple)):
            raise ValueError(f"{name} layer must be called on a list of inputs, namely "
                             f"[query, value] or [query, value, key]. Received: "
                             f"inputs={type(inputs).__name__}.")
        if len(inputs) < 2 or len(inputs) > 3:
            raise ValueError(f"{name} layer accepts inputs list of length 2 or 3, namely "
                             f"[query, value] or [query, value, key]. Received length: "
                             f"{len(inputs)}.")
        if mask is not None and (not isinstance(mask, (list, tuple)) or len(mask) > 2):
            raise ValueError(f"{name} layer mask must be a list of length 2, namely "
                             f"[query_mask, value_mask]. Received: mask={mask!r}.")

    def build(self, input_shape):
        """``input_shape``: the list of the inputs' shapes (Keras)."""
        self._validate(input_shape)
        if self.use_scale:
            self.scale = self.add_weight("scale", (), initializer="ones")
        if self.score_mode == "concat":
            self.concat_score_weight = self.add_weight("concat_score_weight", (),
                                                       initializer="ones")
        self.built = True

    def _scores(self, query, key):
        if self.score_mode == "dot":
            scores = query.matmul(key.transpose(-2, -1))
            return scores * self.scale if self.scale is not None else scores
        q = query.reshape(query.shape[0], query.shape[1], 1, query.shape[2])
        k = key.reshape(key.shape[0], 1, key.shape[1], key.shape[2])
        total = q + k
        if self.scale is not None:
            total = total * self.scale
        return total.tanh().sum(axis=-1) * self.concat_score_weight

    def call(self, inputs, mask=None, training=None, return_attention_scores=False,
             use_causal_mask=False):
        self._validate(inputs, mask)
        if not self.built:
            self.build([tuple(np.shape(getattr(x, "data", x))) for x in inputs])
        training = self.training if training is None else bool(training)
        q = self._to_tensor(inputs[0])
        v = self._to_tensor(inputs[1])
        k = self._to_tensor(inputs[2]) if len(inputs) > 2 else v
        for name, x in (("query", q), ("value", v), ("key", k)):
            if x.ndim != 3:
                raise ValueError(f"Input `{name}` of layer '{self.name}' must be 3-D (batch, T, "
                                 f"dim). Received: {name}.shape={tuple(x.shape)}")
        q_mask = mask[0] if mask else None
        v_mask = mask[1] if mask and len(mask) > 1 else None
        if q_mask is None:
            q_mask = get_keras_mask(inputs[0])
        if v_mask is None:
            v_mask = get_keras_mask(inputs[1])
        scores = self._scores(q, k)
        allowed = None
        if v_mask is not None:
            allowed = _mask_array(v_mask, "mask[1]", (v.shape[0], v.shape[1]))[:, None, :]
        if use_causal_mask:
            causal = np.tril(np.ones((scores.shape[-2], scores.shape[-1]), bool))[None]
            allowed = causal if allowed is None else allowed & causal
        if allowed is not None:
            scores = scores - np.where(allowed, 0.0, _LARGE).astype(scores.dtype)
        weights = scores.softmax(dim=-1)
        applied = F.dropout(weights, self.dropout, training=training) if self.dropout > 0 \
            else weights
        out = applied.matmul(v)
        if q_mask is not None:
            rows = _mask_array(q_mask, "mask[0]", (q.shape[0], q.shape[1]))
            out = out * rows[:, :, None].astype(out.dtype)
            set_keras_mask(out, rows)
        if return_attention_scores:
            return out, weights
        return out

    def compute_mask(self, inputs, mask=None):
        """The output's mask is the query's (Keras)."""
        if not mask or mask[0] is None:
            return None
        return np.asarray(getattr(mask[0], "data", mask[0]), bool)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[0][:-1]) + (input_shape[1][-1],)

    def get_config(self):
        return {**super().get_config(), "use_scale": self.use_scale,
                "score_mode": self.score_mode, "dropout": self.dropout, "seed": self.seed}


class AdditiveAttention(Attention):
    """Additive (Bahdanau) attention, as ``keras.layers.AdditiveAttention``.

    ``scores_ij = sum(scale * tanh(q_i + k_j))`` with a trainable ``scale`` of shape
    (dim,) (``use_scale=True``, glorot-uniform initialised) or 1; the rest is
    ``Attention``'s (masks, softmax, dropout, ``value`` combination).

    Example:
        >>> att = layers.AdditiveAttention()
        >>> q, v = mn.randn(2, 3, 4), mn.randn(2, 5, 4)
        >>> att.call([q, v]).shape
        (2, 3, 4)
    """

    def __init__(self, use_scale=True, dropout=0.0, name=None, dtype=None, trainable=True,
                 **kwargs):
        super().__init__(use_scale=use_scale, dropout=dropout, name=name, dtype=dtype,
                         trainable=trainable, **kwargs)

    def build(self, input_shape):
        self._validate(input_shape)
        dim = int(input_shape[0][-1])
        if self.use_scale:
            self.scale = self.add_weight("scale", (dim,), initializer="glorot_uniform")
        self.built = True

    def _scores(self, query, key):
        q = query.reshape(query.shape[0], query.shape[1], 1, query.shape[2])
        k = key.reshape(key.shape[0], 1, key.shape[1], key.shape[2])
        total = (q + k).tanh()
        if self.scale is not None:
            total = total * self.scale
        return total.sum(axis=-1)

    def get_config(self):
        config = super().get_config()
        del config["score_mode"]
        return config
