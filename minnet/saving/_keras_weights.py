"""Keras 3 weight layouts <-> minnet's (PyTorch's), per layer class (used by ``keras_format``).

``TO_KERAS[class name](layer, arrays)`` takes ``layer.get_weights()`` and returns
``{sub-path: Keras arrays}``, the sub-path being where Keras keeps them under the layer's
entry of ``model.weights.h5`` (``""`` for its own ``vars``, ``"cell"`` for a recurrent
layer's cell, ``"forward_layer/cell"``, ``"layer"`` for a wrapper). ``FROM_KERAS`` is the
inverse: ``{sub-path: arrays read}`` -> the arrays for ``layer.set_weights`` (None: keep the
layer as its config built it).

``to_keras(layer, arrays)`` / ``from_keras(layer, groups)`` pick the converter: the layer's
class's, else (a user's subclass of a built-in layer) the nearest built-in base class's, else
Keras's rule for a user's own layer (``save_own_variables``): its own weights as they are
(the user wrote them in Keras's layout), then each sublayer under the attribute that holds it
(a list's items by snake-case class name, ``_1``, ``_2`` for repeats), as Keras's saving walks
the layer.
"""
import numpy as np

from minnet._registry import snake_case
from minnet.layers import Layer

__all__ = ["TO_KERAS", "FROM_KERAS", "to_keras", "from_keras"]


def _reorder_gru(array):
    """PyTorch's r, z, n gate blocks <-> Keras's z, r, h (the swap is its own inverse)."""
    r, z, n = np.split(array, 3, axis=0)
    return np.concatenate([z, r, n], axis=0)


def _is_gru(layer):
    return type(layer).__name__ in ("GRU", "GRUCell")


def _rnn_to_keras(layer, arrays):
    w_ih, w_hh = arrays[0], arrays[1]
    if _is_gru(layer):
        out = [_reorder_gru(w_ih).T, _reorder_gru(w_hh).T]
        if layer.use_bias:
            out.append(np.stack([_reorder_gru(arrays[2]), _reorder_gru(arrays[3])]))
        return out
    out = [w_ih.T, w_hh.T]
    if layer.use_bias:
        out.append(arrays[2] + arrays[3])
    return out


def _rnn_from_keras(layer, arrays):
    kernel, recurrent = arrays[0], arrays[1]
    if _is_gru(layer):
        out = [_reorder_gru(kernel.T), _reorder_gru(recurrent.T)]
        if layer.use_bias:
            bias = arrays[2]
            if bias.ndim != 2:
                raise ValueError(f"GRU '{layer.name}': the Keras file's bias has shape "
                                 f"{bias.shape}; minnet's GRU is Keras's reset_after=True cell "
                                 "(bias of shape (2, 3 * units)).")
            out += [_reorder_gru(bias[0]), _reorder_gru(bias[1])]
        return out
    out = [kernel.T, recurrent.T]
    if layer.use_bias:
        out += [arrays[2], np.zeros_like(arrays[2])]
    return out


def _conv_to(array):
    return array.transpose(tuple(range(2, array.ndim)) + (1, 0))     # (out, in, *k) -> (*k, in, out)


def _conv_from(array):
    n = array.ndim
    return array.transpose((n - 1, n - 2) + tuple(range(n - 2)))     # (*k, in, out) -> (out, in, *k)


def _depthwise_to(array, multiplier):
    """(C*m, 1, *k) -> Keras's (*k, C, m), for 1-D and 2-D depthwise kernels."""
    spatial = array.shape[2:]
    n = len(spatial)
    grouped = array.reshape((array.shape[0] // multiplier, multiplier) + spatial)
    return grouped.transpose(tuple(range(2, n + 2)) + (0, 1))


def _depthwise_from(array):
    """Keras's (*k, C, m) -> (C*m, 1, *k)."""
    n = array.ndim - 2
    channels, multiplier = array.shape[n], array.shape[n + 1]
    return array.transpose((n, n + 1) + tuple(range(n))).reshape((channels * multiplier, 1) + array.shape[:n])


def _plain(layer, arrays):
    return {"": arrays}


def _kernel_first(to):
    def convert(layer, arrays):
        return {"": [to(arrays[0])] + arrays[1:]}
    return convert


def _separable_to(layer, arrays):
    return {"": [_depthwise_to(arrays[0], layer.depth_multiplier), _conv_to(arrays[1])] + arrays[2:]}


def _separable_from(layer, groups):
    arrays = groups[""]
    return [_depthwise_from(arrays[0]), _conv_from(arrays[1])] + arrays[2:]


def _bidirectional_to(layer, arrays):
    n = len(layer.forward_layer.weights)
    return {"forward_layer/cell": _rnn_to_keras(layer.forward_layer, arrays[:n]),
            "backward_layer/cell": _rnn_to_keras(layer.backward_layer, arrays[n:]),
            "forward_layer": [], "backward_layer": []}


def _bidirectional_from(layer, groups):
    return (_rnn_from_keras(layer.forward_layer, groups["forward_layer/cell"])
            + _rnn_from_keras(layer.backward_layer, groups["backward_layer/cell"]))


def _normalization_to(layer, arrays):
    if layer.get_config().get("mean") is not None:
        return {"": []}                 # the statistics are in the config, as Keras keeps them
    return {"": arrays[:2] + [np.asarray(0, dtype=np.int64)]}   # Keras's adapted count last


def _normalization_from(layer, groups):
    arrays = groups.get("", [])
    return arrays[:2] if arrays else None    # None: the config's mean and variance stand


def _time_distributed_to(layer, arrays):
    inner = TO_KERAS[type(layer.layer).__name__](layer.layer, arrays)
    return {("layer/" + sub if sub else "layer"): values for sub, values in inner.items()}


def _time_distributed_from(layer, groups):
    inner = {sub[len("layer/"):] if sub.startswith("layer/") else "": values
             for sub, values in groups.items() if sub == "layer" or sub.startswith("layer/")}
    return FROM_KERAS[type(layer.layer).__name__](layer.layer, inner)


def _conv_lstm_to(layer, arrays):
    return {"cell": [_conv_to(arrays[0]), _conv_to(arrays[1])] + arrays[2:]}


def _conv_lstm_from(layer, groups):
    arrays = groups["cell"]
    return [_conv_from(arrays[0]), _conv_from(arrays[1])] + arrays[2:]


_ATTENTION_PARTS = ("query_dense", "key_dense", "value_dense", "output_dense")


def _attention_to(layer, arrays):
    """minnet's eight (four without biases) arrays, already in Keras's shapes, under
    Keras's four EinsumDense sublayers."""
    per = 2 if layer.use_bias else 1
    return {part: arrays[i * per:(i + 1) * per] for i, part in enumerate(_ATTENTION_PARTS)}


def _attention_from(layer, groups):
    return [a for part in _ATTENTION_PARTS for a in groups[part]]


_RNN = ("LSTM", "GRU", "SimpleRNN")
_CELLS = ("LSTMCell", "GRUCell", "SimpleRNNCell")
_CONV = ("Conv1D", "Conv2D", "Conv3D", "Conv1DTranspose", "Conv2DTranspose", "Conv3DTranspose")
_CONV_LSTM = ("ConvLSTM1D", "ConvLSTM2D", "ConvLSTM3D")
_SAME = ("BatchNormalization", "LayerNormalization", "GroupNormalization", "Embedding", "PReLU")

# class name -> layer, minnet arrays -> {sub-path: Keras arrays}
TO_KERAS = {name: _plain for name in _SAME}
TO_KERAS.update({
    "Dense": lambda layer, a: {"": [a[0].T] + a[1:]},
    "DepthwiseConv1D": lambda layer, a: {"": [_depthwise_to(a[0], layer.depth_multiplier)] + a[1:]},
    "DepthwiseConv2D": lambda layer, a: {"": [_depthwise_to(a[0], layer.depth_multiplier)] + a[1:]},
    "SeparableConv1D": _separable_to, "SeparableConv2D": _separable_to,
    "MultiHeadAttention": _attention_to,
    "Bidirectional": _bidirectional_to,
    "Normalization": _normalization_to, "TimeDistributed": _time_distributed_to,
    "STFTSpectrogram": lambda layer, a: {"": [_conv_to(kernel) for kernel in a]},
})
TO_KERAS.update({name: (lambda layer, a: {"cell": _rnn_to_keras(layer, a)}) for name in _RNN})
TO_KERAS.update({name: (lambda layer, a: {"": _rnn_to_keras(layer, a)}) for name in _CELLS})
TO_KERAS.update({name: _kernel_first(_conv_to) for name in _CONV})
TO_KERAS.update({name: _conv_lstm_to for name in _CONV_LSTM})

# class name -> layer, {sub-path: Keras arrays} -> minnet arrays (``get_weights`` order)
FROM_KERAS = {name: (lambda layer, g: g[""]) for name in _SAME}
FROM_KERAS.update({
    "Dense": lambda layer, g: [g[""][0].T] + g[""][1:],
    "DepthwiseConv1D": lambda layer, g: [_depthwise_from(g[""][0])] + g[""][1:],
    "DepthwiseConv2D": lambda layer, g: [_depthwise_from(g[""][0])] + g[""][1:],
    "SeparableConv1D": _separable_from, "SeparableConv2D": _separable_from,
    "MultiHeadAttention": _attention_from,
    "Bidirectional": _bidirectional_from,
    "Normalization": _normalization_from, "TimeDistributed": _time_distributed_from,
    "STFTSpectrogram": lambda layer, g: [_conv_from(kernel) for kernel in g[""]],
})
FROM_KERAS.update({name: (lambda layer, g: _rnn_from_keras(layer, g["cell"])) for name in _RNN})
FROM_KERAS.update({name: (lambda layer, g: _rnn_from_keras(layer, g[""])) for name in _CELLS})
FROM_KERAS.update({name: (lambda layer, g: [_conv_from(g[""][0])] + g[""][1:]) for name in _CONV})
FROM_KERAS.update({name: _conv_lstm_from for name in _CONV_LSTM})


def _builtin_name(layer):
    """The class name of ``layer``'s nearest minnet base class that has a converter, or None."""
    for cls in type(layer).__mro__:
        if cls.__module__.startswith("minnet.") and cls.__name__ in TO_KERAS:
            return cls.__name__
        if cls is Layer:
            return None
    return None


def _name_key(name):
    return f"~{name}" if name.startswith("_") else name      # private attributes last, as Keras


def _is_graph_model(layer):
    """A Sequential or functional model (Keras walks only its ``layers``)."""
    return hasattr(layer, "fit") and (getattr(layer, "_graph", None) is not None
                                      or hasattr(layer, "pop"))


def _walk(layer):
    """``(sub-path, sublayer)`` as Keras's saving walks a layer (``saving_lib._walk_saveable``):
    a Sequential's or functional model's ``layers``; else the attributes, public ones in
    sorted order then private ones, a subclassed model's ``layers`` among them; a list's
    items named by snake-case class name (``_1``, ``_2`` counted over the whole list). A
    sublayer reached twice keeps its first path."""
    if _is_graph_model(layer):
        items = [("layers", list(layer.layers))]
    else:
        items = sorted(layer.__dict__.items(), key=lambda item: _name_key(item[0]))
        if hasattr(layer, "fit"):
            items = sorted(items + [("layers", list(layer.layers))], key=lambda item: _name_key(item[0]))
    seen = {id(layer)}
    for attr, value in items:
        found = []
        if isinstance(value, Layer):
            found = [(attr, value)]
        elif isinstance(value, (list, tuple)):
            used = {}
            for item in value:
                if isinstance(item, Layer):
                    name = snake_case(type(item).__name__)
                    used[name] = used.get(name, -1) + 1
                    found.append((f"{attr}/{name}" + (f"_{used[name]}" if used[name] else ""), item))
        for path, sub in found:
            if id(sub) not in seen:
                seen.add(id(sub))
                yield path, sub


def _own_weights(layer, parts):
    inner = {id(w) for _, sub in parts for w in sub.weights}
    return [w for w in layer.weights if id(w) not in inner]


def to_keras(layer, arrays):
    """``{sub-path: Keras arrays}`` for ``layer.get_weights()`` (see the module docstring).

    Raises:
        ValueError: weights minnet cannot place in Keras's file (held in a dict, say).
    """
    name = _builtin_name(layer)
    if name is not None and not hasattr(layer, "fit"):
        return TO_KERAS[name](layer, arrays)
    parts = [(path, sub) for path, sub in _walk(layer) if sub.weights]
    result = {"": [np.asarray(w.data) for w in _own_weights(layer, parts)]}
    placed = len(result[""])
    for path, sub in parts:
        for key, values in to_keras(sub, sub.get_weights()).items():
            result[f"{path}/{key}" if key else path] = values
        placed += len(sub.weights)
    if placed != len(arrays):
        raise ValueError(f"the weights of layer '{layer.name}' ({type(layer).__name__}) are held "
                         f"where Keras's saving does not look (not in the layer, an attribute or a list)")
    return result


def from_keras(layer, groups):
    """The arrays for ``layer.set_weights`` from ``{sub-path: arrays read}`` (or None)."""
    name = _builtin_name(layer)
    if name is not None and not hasattr(layer, "fit"):
        return FROM_KERAS[name](layer, groups)
    parts = [(path, sub) for path, sub in _walk(layer) if sub.weights]
    own = _own_weights(layer, parts)
    given = list(groups.get("", []))
    if len(given) != len(own):
        raise ValueError(f"layer '{layer.name}' has {len(own)} weights of its own; the file holds "
                         f"{len(given)}")
    values = {id(w): a for w, a in zip(own, given)}
    for path, sub in parts:
        inner = {key[len(path) + 1:] if key != path else "": arrays for key, arrays in groups.items()
                 if key == path or key.startswith(path + "/")}
        found = from_keras(sub, inner)
        values.update(zip((id(w) for w in sub.weights), sub.get_weights() if found is None else found))
    return [values[id(w)] for w in layer.weights]
