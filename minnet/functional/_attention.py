"""Scaled dot-product attention: PyTorch's ``scaled_dot_product_attention`` and Keras's
``ops.dot_product_attention`` on the fused kernel of ``minnet._ext.attention_kernels``.

``softmax(q kᵀ * scale + mask) v`` per batch and head. The fused path never stores the
(L, S) scores: forward keeps the output and one log-sum-exp per query row, backward
recomputes the score blocks from them (FlashAttention-2). Three cases take a composed path
of differentiable Tensor ops instead (matmul, softmax, dropout): dropout (``dropout_p > 0``),
a float mask that itself requires a gradient, and double backward: under
``create_graph=True`` the fused op's backward is written with those Tensor ops
(``backward_graph``), so it can be differentiated again. The math is in
docs/math/attention.md.

Masks follow PyTorch: a boolean mask is True where a key may be attended, a float mask is
added to the scores, ``is_causal`` allows key j for query i iff j <= i (top-left aligned).
A query row with no allowed key gives output 0 (and gradient 0), as PyTorch 2.13's CPU
kernels do (older PyTorch gave NaN; Keras's ``ops.dot_product_attention`` gives uniform
weights over the keys there, since it masks with a large finite negative).
"""
import math
import numbers

import numpy as np

from minnet._config import get_num_threads
from minnet._ext import attention_kernels as _kernels
from minnet.autograd import Function, Tensor
from minnet.functional._common import as_float_input
from minnet.functional._dropout import dropout

__all__ = ["scaled_dot_product_attention", "dot_product_attention_keras",
           "ScaledDotProductAttention", "attention_mask_parts", "fused_attention", "kernel_mask"]

_BHLD = "bhld"      # PyTorch: (batch, heads, L, dim)
_BLHD = "blhd"      # Keras: (batch, L, heads, dim)


def _kernel_view(a):
    """``a`` as the kernel reads it: contiguous last axis, non-negative aligned strides."""
    item = a.itemsize
    if (a.shape[-1] > 1 and a.strides[-1] != item) or any(s < 0 or s % item for s in a.strides):
        return np.ascontiguousarray(a)
    return a


def _heads_first(a, layout):
    return a if layout == _BHLD else a.transpose(0, 2, 1, 3)


class ScaledDotProductAttention(Function):
    """Fused attention over 4-D inputs: ``softmax(q kᵀ scale + mask) v``.

    ``layout`` ``"bhld"``: q (B, H, L, E), k (B, H, S, E), v (B, H, S, Ev), output
    (B, H, L, Ev); ``"blhd"``: the same with the L and H axes swapped (Keras), read and
    written in place through strides. ``mask``: an additive array broadcast to
    (B, H, L, S) (a view); ``kv_len``: int64 (B,) key lengths; ``causal``: j <= i.
    """

    node_name = "ScaledDotProductAttentionBackward"

    @staticmethod
    def forward(ctx, q, k, v, scale=1.0, causal=False, kv_len=None, mask=None, layout=_BHLD):
        q, k, v = _kernel_view(q), _kernel_view(k), _kernel_view(v)
        out_shape = q.shape[:-1] + (v.shape[-1],)
        out = np.empty(out_shape, dtype=q.dtype)
        block = (_kernels.DEFAULT_BLOCK_Q, _kernels.DEFAULT_BLOCK_K)
        _, lse = _kernels.attention_forward(
            _heads_first(q, layout), _heads_first(k, layout), _heads_first(v, layout), scale,
            causal, kv_len, mask, out=_heads_first(out, layout), n_threads=get_num_threads(),
            block=block)
        if any(ctx.needs_input_grad):
            ctx.save_for_backward(q, k, v, out)
            ctx.lse = lse
            ctx.options = (scale, causal, kv_len, mask, layout)
        return out

    @staticmethod
    def backward(ctx, grad):
        q, k, v, out = ctx.saved_tensors
        scale, causal, kv_len, mask, layout = ctx.options
        grad = _kernel_view(np.asarray(grad, dtype=q.dtype))
        dq, dk, dv = np.empty_like(q), np.empty_like(k), np.empty_like(v)
        _kernels.attention_backward(
            _heads_first(q, layout), _heads_first(k, layout), _heads_first(v, layout),
            _heads_first(out, layout), ctx.lse, _heads_first(grad, layout), scale, causal, kv_len,
            mask, dq=_heads_first(dq, layout), dk=_heads_first(dk, layout),
            dv=_heads_first(dv, layout), n_threads=get_num_threads())
        needs = ctx.needs_input_grad
        return (dq if needs[0] else None, dk if needs[1] else None, dv if needs[2] else None)

    @staticmethod
    def backward_graph(ctx, grad):
        # Double backward: the same vector-Jacobian product written with Tensor operations
        # on recomputed probabilities, so the gradients are differentiable again.
        q, k, v, _ = ctx.saved_arrays
        scale, causal, kv_len, mask, layout = ctx.options
        tq, tk, tv = ctx.graph_input(0, q), ctx.graph_input(1, k), ctx.graph_input(2, v)
        g = grad
        if layout == _BLHD:
            tq, tk, tv, g = (t.transpose(1, 2) for t in (tq, tk, tv, g))
        additive, valid = attention_mask_parts(q.dtype, _seq_len(q, layout), _seq_len(k, layout),
                                               causal, kv_len, mask)
        probs = _probabilities(tq, tk, scale, additive, valid)
        dv = probs.transpose(-2, -1).matmul(g)
        dp = g.matmul(tv.transpose(-2, -1))
        ds = probs * (dp - (dp * probs).sum(axis=-1, keepdims=True))
        dq = ds.matmul(tk) * scale
        dk = ds.transpose(-2, -1).matmul(tq) * scale
        if layout == _BLHD:
            dq, dk, dv = (t.transpose(1, 2) for t in (dq, dk, dv))
        needs = ctx.needs_input_grad
        return (dq if needs[0] else None, dk if needs[1] else None, dv if needs[2] else None)


def _seq_len(a, layout):
    return a.shape[2] if layout == _BHLD else a.shape[1]


def attention_mask_parts(dtype, n_queries, n_keys, causal=False, kv_len=None, mask=None):
    """The masks of the fused kernel as one additive array and a row-validity array.

    Returns ``(additive, valid)``: ``additive`` (B or 1, H or 1, L, S) holds the mask plus
    -inf where causal/kv_len forbid a key, with 0 on rows that allow no key; ``valid``
    (same leading axes, L, 1) is 1 on rows with an allowed key and 0 elsewhere. The
    composed path computes ``softmax(s + additive) * valid``: 0 on fully masked rows, with
    finite gradients.
    """
    total = np.zeros((1, 1, n_queries, n_keys), dtype=dtype)
    if mask is not None:
        total = total + mask
    if causal:
        total = np.where(np.tril(np.ones((n_queries, n_keys), dtype=bool)), total, -np.inf)
    if kv_len is not None:
        keys = np.arange(n_keys)[None, :] < np.asarray(kv_len)[:, None]       # (B, S)
        total = np.where(keys[:, None, None, :], total, -np.inf)
    total = total.astype(dtype, copy=False)
    valid = np.any(total > -np.inf, axis=-1, keepdims=True)
    additive = np.where(valid, total, 0).astype(dtype, copy=False)
    return additive, valid.astype(dtype)


def _probabilities(q, k, scale, additive, valid):
    scores = q.matmul(k.transpose(-2, -1)) * scale + additive
    return scores.softmax(dim=-1) * valid


def fused_attention(q, k, v, scale, causal=False, kv_len=None, mask=None, layout=_BHLD):
    """The fused op on 4-D Tensors/arrays (masks already in the kernel's form); a Tensor."""
    return ScaledDotProductAttention.apply(q, k, v, scale=float(scale), causal=bool(causal),
                                           kv_len=kv_len, mask=mask, layout=layout)


def composed_attention(q, k, v, scale, causal=False, kv_len=None, mask=None, mask_tensor=None,
                       dropout_p=0.0, layout=_BHLD):
    """The same attention from differentiable Tensor ops: ``(output, probabilities)``.

    ``mask_tensor``: a float mask Tensor added to the scores (gradients reach it); the
    probabilities (before dropout) are (B, H, L, S) in either layout.
    """
    q, k, v = (x if isinstance(x, Tensor) else Tensor(x) for x in (q, k, v))
    if layout == _BLHD:
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
    n_queries, n_keys = q.shape[-2], k.shape[-2]
    if mask_tensor is None:
        additive, valid = attention_mask_parts(q.dtype, n_queries, n_keys, causal, kv_len, mask)
        probs = _probabilities(q, k, scale, additive, valid)
    else:
        # the float mask enters as a Tensor (gradients reach it); rows it leaves with no
        # allowed key are set to 0 before the softmax so that nothing there is NaN
        full = mask_tensor.data if mask is None else mask_tensor.data + mask
        _, valid = attention_mask_parts(q.dtype, n_queries, n_keys, causal, kv_len, full)
        others, _ = attention_mask_parts(q.dtype, n_queries, n_keys, causal, kv_len, mask)
        rows = valid > 0
        scores = (q.matmul(k.transpose(-2, -1)) * scale
                  + mask_tensor.masked_fill(~rows, 0) + np.where(rows, others, 0))
        probs = scores.softmax(dim=-1) * valid
    weights = dropout(probs, dropout_p) if dropout_p > 0 else probs
    out = weights.matmul(v)
    if layout == _BLHD:
        out = out.transpose(1, 2)
    return out, probs


# ---------------------------------------------------------------------------------------
# Argument handling shared by the two public functions.
# ---------------------------------------------------------------------------------------

def _float_operand(value, name):
    value = as_float_input(value, name)
    return value, (value.data if isinstance(value, Tensor) else value)


def _mask_operand(mask, dtype, target, name):
    """``mask`` as ``(array, tensor)``: a bool array, or a float array of ``dtype`` (tensor:
    the Tensor when it requires a gradient), broadcastable to ``target``."""
    tensor = None
    if isinstance(mask, Tensor):
        if mask.requires_grad and mask.dtype.kind == "f":
            tensor = mask if mask.dtype == dtype else mask.astype(dtype)
        array = mask.data
    else:
        array = np.asarray(mask)
    if array.dtype.kind not in "bf":
        raise TypeError(f"Invalid argument `{name}`: expected a boolean mask (True = attend) or "
                        f"a float mask added to the scores. Received: dtype={array.dtype}")
    try:
        np.broadcast_shapes(array.shape, target)
    except ValueError:
        raise ValueError(f"Invalid argument `{name}`: expected a shape broadcastable to "
                         f"{target}. Received: shape={array.shape}") from None
    if array.ndim > len(target) or np.broadcast_shapes(array.shape, target) != target:
        raise ValueError(f"Invalid argument `{name}`: expected a shape broadcastable to "
                         f"{target}. Received: shape={array.shape}")
    if array.dtype.kind == "f":
        array = array.astype(dtype, copy=False)
    return array, tensor


def kernel_mask(mask4, dtype):
    """A 4-D (broadcast) mask as ``(kv_len, additive)`` for the kernel: a boolean mask that
    depends only on (batch, key) and keeps a prefix of the keys becomes key lengths (whole
    key blocks skipped); any other boolean mask an additive 0 / -inf array."""
    if mask4 is None:
        return None, None
    if mask4.dtype == bool:
        if mask4.strides[1] == 0 and mask4.strides[2] == 0:
            rows = mask4[:, 0, 0, :]
            lengths = rows.sum(axis=1)
            if np.array_equal(rows, np.arange(rows.shape[1])[None, :] < lengths[:, None]):
                return lengths.astype(np.int64), None
        small = np.where(_compact(mask4), 0, -np.inf).astype(dtype)
        return None, np.broadcast_to(small, mask4.shape)
    return None, mask4


def _compact(a):
    """A broadcast view with its stride-0 axes shrunk to length 1 (a real, small array)."""
    index = tuple(slice(0, 1) if s == 0 else slice(None) for s in a.strides)
    return np.ascontiguousarray(a[index])


def _check_dropout(dropout_p):
    if isinstance(dropout_p, bool) or not isinstance(dropout_p, numbers.Real) \
            or not 0.0 <= dropout_p < 1.0:
        raise ValueError(f"Invalid value for argument `dropout_p`: expected a float in [0, 1). "
                         f"Received: dropout_p={dropout_p!r}")
    return float(dropout_p)


def _check_scale(scale, dim):
    if scale is None:
        return 1.0 / math.sqrt(dim) if dim > 0 else 1.0
    if isinstance(scale, bool) or not isinstance(scale, numbers.Real):
        raise TypeError(f"Invalid value for argument `scale`: expected a float or None. "
                        f"Received: scale={scale!r}")
    return float(scale)


def _reshape(x, shape):
    return x.reshape(shape) if isinstance(x, Tensor) else np.reshape(x, shape)


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    """Attention as ``torch.nn.functional.scaled_dot_product_attention``.

    ``softmax(query @ keyᵀ * scale + mask) @ value`` over the last two axes; the leading
    axes are batch axes (the one before L is the heads axis for ``enable_gqa``).

    Args:
        query: (..., L, E); key: (..., S, E); value: (..., S, Ev). One float dtype.
        attn_mask: None; a boolean mask (True = the key may be attended) or a float mask
            added to the scores, broadcastable to (..., L, S). A float mask Tensor that
            requires a gradient receives one (through the composed path).
        dropout_p: dropout on the attention probabilities (always applied, as PyTorch's
            functional; pass 0.0 in evaluation).
        is_causal: key j allowed for query i iff j <= i (top-left aligned); not together
            with ``attn_mask`` (as PyTorch).
        scale: the factor on the scores; None gives ``1 / sqrt(E)``.
        enable_gqa: key/value may have fewer heads (axis -3) than the query, dividing them
            (grouped-query attention: query head h reads key head h // (Hq / Hkv)).

    Returns:
        A Tensor (..., L, Ev). A row with no allowed key is 0.

    Shape:
        query (..., L, E), key (..., S, E), value (..., S, Ev) -> (..., L, Ev)

    Example:
        >>> q = mn.randn(2, 4, 16, 8)          # (batch, heads, L, E)
        >>> F.scaled_dot_product_attention(q, q, q, is_causal=True).shape
        (2, 4, 16, 8)
    """
    query, qa = _float_operand(query, "query")
    key, ka = _float_operand(key, "key")
    value, va = _float_operand(value, "value")
    for name, a in (("query", qa), ("key", ka), ("value", va)):
        if a.ndim < 2:
            raise ValueError(f"Invalid argument `{name}`: expected at least 2 dimensions "
                             f"(..., L, E). Received: shape={a.shape}")
    if not qa.dtype == ka.dtype == va.dtype:
        raise TypeError(f"Invalid arguments `query`, `key`, `value`: expected one float dtype. "
                        f"Received: {qa.dtype}, {ka.dtype}, {va.dtype}")
    if ka.shape[-1] != qa.shape[-1]:
        raise ValueError(f"Invalid argument `key`: expected last dimension {qa.shape[-1]} (the "
                         f"query's E). Received: key.shape={ka.shape}")
    if va.shape[:-1] != ka.shape[:-1]:
        raise ValueError(f"Invalid argument `value`: expected shape {ka.shape[:-1]} + (Ev,) "
                         f"(key's leading axes and S). Received: value.shape={va.shape}")
    batch = qa.shape[:-2]
    if ka.shape[:-2] != batch:
        groups_ok = (enable_gqa and ka.ndim == qa.ndim and ka.ndim >= 3
                     and ka.shape[:-3] == qa.shape[:-3] and ka.shape[-3] > 0
                     and qa.shape[-3] % ka.shape[-3] == 0)
        if not groups_ok:
            raise ValueError(f"Invalid argument `key`: expected batch axes {batch} (the query's)"
                             f"{' or a head count dividing the query`s' if enable_gqa else ''}. "
                             f"Received: key.shape={ka.shape}")
        repeats = qa.shape[-3] // ka.shape[-3]
        index = np.repeat(np.arange(ka.shape[-3]), repeats)
        key, value = (_repeat_heads(t, index) for t in (key, value))
        ka, va = (t.data if isinstance(t, Tensor) else t for t in (key, value))
    dropout_p = _check_dropout(dropout_p)
    scale = _check_scale(scale, qa.shape[-1])
    n_queries, n_keys = qa.shape[-2], ka.shape[-2]
    mask_array = mask_tensor = None
    if attn_mask is not None:
        if is_causal:
            raise ValueError("Invalid arguments `attn_mask` and `is_causal`: expected at most one "
                             "of them (as PyTorch). Received both; fold the causal mask into "
                             "`attn_mask`")
        mask_array, mask_tensor = _mask_operand(attn_mask, qa.dtype, batch + (n_queries, n_keys),
                                                "attn_mask")
    # (..., L, E) -> (B, H, L, E): the batch axes merged into two
    lead = (int(np.prod(batch[:-1], dtype=np.int64)) if len(batch) > 1 else 1,
            batch[-1] if batch else 1)
    q4, k4, v4 = (_reshape(t, lead + tuple(a.shape[-2:]))
                  for t, a in ((query, qa), (key, ka), (value, va)))
    mask4 = None
    if mask_array is not None:
        mask4 = np.broadcast_to(mask_array, batch + (n_queries, n_keys)).reshape(
            lead + (n_queries, n_keys))
    if dropout_p > 0 or mask_tensor is not None:
        mask_t4 = None if mask_tensor is None else _reshape(
            mask_tensor + np.zeros(batch + (n_queries, n_keys), qa.dtype), lead + (n_queries, n_keys))
        plain = None if mask_tensor is not None or mask4 is None else (
            np.where(mask4, 0, -np.inf).astype(qa.dtype) if mask4.dtype == bool else mask4)
        out, _ = composed_attention(q4, k4, v4, scale, bool(is_causal), None, plain, mask_t4,
                                    dropout_p)
    else:
        kv_len, additive = kernel_mask(mask4, qa.dtype)
        out = fused_attention(q4, k4, v4, scale, is_causal, kv_len, additive)
    return out.reshape(batch + (n_queries, va.shape[-1]))


def _repeat_heads(t, index):
    """Heads (axis -3) repeated for grouped-query attention (differentiable for Tensors)."""
    if isinstance(t, Tensor):
        return t[(Ellipsis, index, slice(None), slice(None))]
    return np.take(t, index, axis=-3)


def dot_product_attention_keras(query, key, value, bias=None, mask=None, scale=None,
                                is_causal=False, flash_attention=None,
                                attn_logits_soft_cap=None):
    """Attention as ``keras.ops.dot_product_attention``: (B, T, N, H) layout.

    Args:
        query: (B, T, N, H); key: (B, S, K, H); value: (B, S, K, Hv); K divides N
            (grouped-query attention when K < N).
        bias: optional float array added to the scores, broadcastable to (B, N, T, S).
        mask: optional boolean mask (True = attend), broadcastable to (B, N, T, S); not
            together with ``bias`` (as Keras). Combined with ``is_causal``.
        scale: None gives ``1 / sqrt(H)``.
        is_causal: key j allowed for query i iff j <= i.
        flash_attention: accepted for Keras's signature; minnet always runs its fused kernel.
        attn_logits_soft_cap: not supported (Keras supports it on JAX only); must be None.

    Returns:
        A Tensor (B, T, N, Hv). A row with no allowed key is 0 (Keras on the torch backend
        gives uniform weights over all keys there).

    Shape:
        query (B, T, N, H), key (B, S, K, H), value (B, S, K, Hv) -> (B, T, N, Hv)
    """
    query, qa = _float_operand(query, "query")
    key, ka = _float_operand(key, "key")
    value, va = _float_operand(value, "value")
    for name, a in (("query", qa), ("key", ka), ("value", va)):
        if a.ndim != 4:
            raise ValueError(f"Invalid argument `{name}`: `dot_product_attention` only supports "
                             f"4-D inputs (B, T, N, H). Received: {name}.shape={a.shape}")
    if attn_logits_soft_cap is not None:
        raise ValueError("Invalid argument `attn_logits_soft_cap`: expected None (minnet has no "
                         f"soft-capped attention). Received: {attn_logits_soft_cap!r}")
    if bias is not None and mask is not None:
        raise ValueError("Only one of `bias` and `mask` can be provided. Received both.")
    dtype = np.result_type(qa.dtype, ka.dtype, va.dtype)
    if not qa.dtype == ka.dtype == va.dtype:
        query, key, value = (t.astype(dtype) if isinstance(t, Tensor) else t.astype(dtype)
                             for t in (query, key, value))
        qa, ka, va = (t.data if isinstance(t, Tensor) else t for t in (query, key, value))
    b, t_len, heads, dim = qa.shape
    if ka.shape[0] != b or ka.shape[3] != dim or va.shape[:3] != ka.shape[:3]:
        raise ValueError(f"Invalid arguments `key`, `value`: expected key (B={b}, S, K, H={dim}) "
                         f"and value (B, S, K, Hv) with key's B, S, K. Received: "
                         f"key.shape={ka.shape}, value.shape={va.shape}")
    kv_heads = ka.shape[2]
    if kv_heads != heads:
        if kv_heads == 0 or heads % kv_heads:
            raise ValueError(f"Invalid argument `key`: expected a head count dividing the "
                             f"query's {heads}. Received: key.shape={ka.shape}")
        index = np.repeat(np.arange(kv_heads), heads // kv_heads)
        key, value = (t[:, :, index, :] if isinstance(t, Tensor) else np.take(t, index, axis=2)
                      for t in (key, value))
    scale = _check_scale(scale, dim)
    s_len = ka.shape[1]
    target = (b, heads, t_len, s_len)
    kv_len = additive = None
    bias_tensor = None
    if mask is not None:
        raw = mask.data if isinstance(mask, Tensor) else np.asarray(mask)
        if raw.dtype.kind in "iu":          # Keras casts the mask to bool
            raw = raw != 0
        array, _ = _mask_operand(raw, dtype, target, "mask")
        if array.dtype != bool:
            array = array != 0
        kv_len, additive = kernel_mask(np.broadcast_to(array, target), dtype)
    if bias is not None:
        array, bias_tensor = _mask_operand(bias, dtype, target, "bias")
        if array.dtype == bool:
            raise TypeError("Invalid argument `bias`: expected a float array added to the scores. "
                            "Received: dtype=bool (pass a boolean mask as `mask`)")
        additive = np.broadcast_to(array, target)
    if bias_tensor is not None:
        out, _ = composed_attention(query, key, value, scale, is_causal, kv_len, None,
                                    bias_tensor + np.zeros(target, dtype), layout=_BLHD)
        return out
    return fused_attention(query, key, value, scale, is_causal, kv_len, additive, layout=_BLHD)
