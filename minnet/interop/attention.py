"""``MultiHeadAttention`` <-> ``torch.nn.MultiheadAttention`` (batch_first), weights moved across.

minnet keeps Keras's einsum kernels; PyTorch packs the three input projections in one
``in_proj_weight`` (3E, E) when query, key and value have the model width E (separate
``q_proj_weight``/``k_proj_weight``/``v_proj_weight`` otherwise). For head h and feature i
of a head::

    in_proj_weight[h * key_dim + i, d]      = query_kernel[d, h, i]     (rows 0 .. E-1)
    (the key and value blocks follow, rows E .. 2E-1 and 2E .. 3E-1)
    in_proj_bias[h * key_dim + i]           = query_bias[h, i]
    out_proj.weight[o, h * value_dim + i]   = attention_output_kernel[h, i, o]
    out_proj.bias                           = attention_output_bias

i.e. ``in_proj`` block = ``kernel.reshape(d, E).T`` and ``out_proj.weight =
attention_output_kernel.reshape(E, d_out).T``. A twin exists when ``num_heads * key_dim``
equals the query width E, ``value_dim == key_dim`` and the output width is E (PyTorch's
heads split E; its output projection maps E to E); otherwise ``mha_to_torch`` raises a
ValueError naming the reason. PyTorch's ``add_bias_kv`` and ``add_zero_attn`` have no minnet
counterpart.

``mha_state_dict`` / ``load_mha_state_dict`` need no PyTorch (ndarrays in PyTorch's names).
"""
import numpy as np

from minnet import layers as L
from minnet.interop.torch_support import require_torch, torch_dtype

__all__ = ["mha_state_dict", "load_mha_state_dict", "mha_to_torch", "mha_from_torch"]


def _twin_problem(layer):
    """Why ``layer`` has no ``torch.nn.MultiheadAttention`` twin, or None."""
    if not isinstance(layer, L.MultiHeadAttention):
        return f"expected a MultiHeadAttention layer, received {type(layer).__name__}"
    if not layer.built:
        return "the layer is not built (call it or build(query_shape, value_shape) first)"
    if layer.key_kernel.shape[1] != layer.num_heads:
        return (f"its {layer.key_kernel.shape[1]} key/value heads are shared by "
                f"{layer.num_heads} query heads (grouped-query attention), which "
                f"torch.nn.MultiheadAttention cannot express")
    d_q = layer.query_kernel.shape[0]
    width = layer.num_heads * layer.key_dim
    if width != d_q:
        return (f"num_heads * key_dim = {layer.num_heads} * {layer.key_dim} = {width} must equal "
                f"the query width {d_q} (PyTorch splits the model width into the heads)")
    if layer.value_dim != layer.key_dim:
        return (f"value_dim ({layer.value_dim}) must equal key_dim ({layer.key_dim}): PyTorch's "
                f"heads have one size")
    out = tuple(layer.attention_output_kernel.shape[2:])
    if out != (d_q,):
        return f"the output shape {out} must be ({d_q},) (PyTorch's out_proj maps E to E)"
    if layer.use_gate:
        return "use_gate=True has no PyTorch counterpart"
    return None


def _check_twin(layer):
    problem = _twin_problem(layer)
    if problem is not None:
        raise ValueError(f"MultiHeadAttention '{getattr(layer, 'name', layer)}' has no "
                         f"torch.nn.MultiheadAttention twin: {problem}.")


def mha_state_dict(layer):
    """The layer's weights under ``torch.nn.MultiheadAttention``'s state_dict names (copies).

    Packed ``in_proj_weight`` when query, key and value have the same width, else
    ``q_proj_weight``, ``k_proj_weight``, ``v_proj_weight``; ``in_proj_bias`` and
    ``out_proj.bias`` when ``use_bias``. Raises ValueError when no twin exists.
    """
    _check_twin(layer)
    d_q, d_k, d_v = (w.shape[0] for w in (layer.query_kernel, layer.key_kernel, layer.value_kernel))
    e = d_q
    blocks = [np.asarray(w.data).reshape(w.shape[0], e).T
              for w in (layer.query_kernel, layer.key_kernel, layer.value_kernel)]
    result = {}
    if d_k == d_q and d_v == d_q:
        result["in_proj_weight"] = np.concatenate(blocks, axis=0)
    else:
        result["q_proj_weight"], result["k_proj_weight"], result["v_proj_weight"] = (
            np.array(b) for b in blocks)
    if layer.use_bias:
        result["in_proj_bias"] = np.concatenate(
            [np.asarray(b.data).reshape(-1) for b in (layer.query_bias, layer.key_bias,
                                                      layer.value_bias)])
    result["out_proj.weight"] = np.asarray(layer.attention_output_kernel.data).reshape(e, e).T.copy()
    if layer.use_bias:
        result["out_proj.bias"] = np.array(layer.attention_output_bias.data)
    return result


def load_mha_state_dict(layer, state):
    """Copy a ``torch.nn.MultiheadAttention`` state_dict (ndarrays or tensors) into ``layer``.

    All or nothing: every key and shape is checked before any weight changes.
    """
    _check_twin(layer)
    d_q, d_k, d_v = (w.shape[0] for w in (layer.query_kernel, layer.key_kernel, layer.value_kernel))
    e, heads, kd = d_q, layer.num_heads, layer.key_dim
    arrays = {k: np.asarray(v.detach().cpu().numpy() if hasattr(v, "detach") else v)
              for k, v in state.items()}
    expected = mha_state_dict(layer)
    unknown = sorted(set(arrays) - set(expected))
    missing = sorted(set(expected) - set(arrays))
    if unknown or missing:
        raise ValueError(f"Invalid argument `state`: keys do not match MultiHeadAttention "
                         f"'{layer.name}' (missing {missing}, unexpected {unknown}; PyTorch's "
                         f"add_bias_kv has no minnet counterpart)")
    for key, value in expected.items():
        if arrays[key].shape != value.shape:
            raise ValueError(f"Invalid argument `state`: `{key}` has shape {arrays[key].shape}; "
                             f"expected {value.shape}")
    if "in_proj_weight" in arrays:
        wq, wk, wv = np.split(arrays["in_proj_weight"], 3, axis=0)
    else:
        wq, wk, wv = arrays["q_proj_weight"], arrays["k_proj_weight"], arrays["v_proj_weight"]
    updates = [(layer.query_kernel, wq.T.reshape(d_q, heads, kd)),
               (layer.key_kernel, wk.T.reshape(d_k, heads, kd)),
               (layer.value_kernel, wv.T.reshape(d_v, heads, kd)),
               (layer.attention_output_kernel, arrays["out_proj.weight"].T.reshape(heads, kd, e))]
    if layer.use_bias:
        bq, bk, bv = np.split(arrays["in_proj_bias"], 3)
        updates += [(layer.query_bias, bq.reshape(heads, kd)), (layer.key_bias, bk.reshape(heads, kd)),
                    (layer.value_bias, bv.reshape(heads, kd)),
                    (layer.attention_output_bias, arrays["out_proj.bias"])]
    for weight, value in updates:
        weight.data[...] = value.astype(weight.dtype)
    return layer


def mha_to_torch(layer):
    """A ``torch.nn.MultiheadAttention(batch_first=True)`` with ``layer``'s weights and dropout.

    Raises:
        ValueError: the layer has no twin (the message says why).
    """
    _check_twin(layer)
    torch = require_torch()
    d_q, d_k, d_v = (w.shape[0] for w in (layer.query_kernel, layer.key_kernel, layer.value_kernel))
    module = torch.nn.MultiheadAttention(d_q, layer.num_heads, dropout=layer.dropout,
                                         bias=layer.use_bias, kdim=d_k, vdim=d_v,
                                         batch_first=True, dtype=torch_dtype(torch, layer.dtype))
    state = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in mha_state_dict(layer).items()}
    module.load_state_dict(state)
    return module


def mha_from_torch(module, dtype=None):
    """A built ``MultiHeadAttention`` with a ``torch.nn.MultiheadAttention``'s weights.

    The module must be ``batch_first`` in use (minnet's inputs are (B, T, d)); its
    ``add_bias_kv``/``add_zero_attn`` must be off.
    """
    torch = require_torch()
    if not isinstance(module, torch.nn.MultiheadAttention):
        raise ValueError(f"Invalid argument `module`: expected a torch.nn.MultiheadAttention. "
                         f"Received: {type(module).__name__}")
    if module.bias_k is not None or module.add_zero_attn:
        raise ValueError("Invalid argument `module`: add_bias_kv and add_zero_attn have no minnet "
                         "counterpart")
    e, heads = module.embed_dim, module.num_heads
    if dtype is None:
        dtype = "float64" if module.out_proj.weight.dtype == torch.float64 else "float32"
    layer = L.MultiHeadAttention(heads, e // heads, dropout=module.dropout,
                                 use_bias=module.in_proj_bias is not None, dtype=dtype)
    layer.build((None, None, e), (None, None, module.vdim), (None, None, module.kdim))
    return load_mha_state_dict(layer, module.state_dict())
