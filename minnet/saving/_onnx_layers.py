"""One ONNX emitter per exportable layer kind (used by ``minnet.saving.onnx_export``).

An emitter ``emit(graph, layer, inputs, shapes)`` reads tensor names ``inputs`` whose minnet
shapes (batch axis ``None``) are ``shapes`` and returns the names of the layer's outputs; it
adds nodes and weight constants to ``graph`` (a ``GraphBuilder``), never imports ``onnx``.
"""
import math

import numpy as np

from minnet import activations
from minnet.layers.convolutional import same_padding
from minnet.layers.convolutional1d import conv1d_padding

__all__ = ["ExportError", "GraphBuilder", "EMITTERS"]


class ExportError(ValueError):
    """A layer (or an option of it) that has no ONNX translation."""


class GraphBuilder:
    """Nodes ``(op, inputs, outputs, attributes)`` and named constants, in creation order."""

    def __init__(self):
        self.nodes = []
        self.constants = []
        self._count = 0

    def fresh(self, stem):
        self._count += 1
        return f"{stem}_{self._count}"

    def const(self, array, stem="const", dtype=np.float32):
        name = self.fresh(stem)
        self.constants.append((name, np.ascontiguousarray(np.asarray(array, dtype=dtype))))
        return name

    def ints(self, values, stem="shape"):
        return self.const(np.asarray(values, dtype=np.int64), stem, dtype=np.int64)

    def node(self, op, inputs, outputs=None, **attributes):
        if outputs is None:
            outputs = [self.fresh(op.lower())]
        self.nodes.append((op, list(inputs), list(outputs), attributes))
        return outputs[0] if len(outputs) == 1 else outputs


def _array(weight):
    return np.asarray(getattr(weight, "data", weight), dtype=np.float32)


def _fail(layer, why):
    raise ExportError(f"Cannot export layer '{layer.name}' ({type(layer).__name__}) to ONNX: {why}")


# ---- activations ---------------------------------------------------------------------------
def _gelu(g, x, approximate):
    if approximate:
        inner = g.node("Mul", [g.node("Add", [x, g.node("Mul", [g.const(0.044715),
                                                               g.node("Pow", [x, g.const(3.0)])])]),
                              g.const(math.sqrt(2 / math.pi))])
        half = g.node("Add", [g.const(1.0), g.node("Tanh", [inner])])
    else:
        half = g.node("Add", [g.const(1.0), g.node("Erf", [g.node("Mul", [x, g.const(1 / math.sqrt(2))])])])
    return g.node("Mul", [g.node("Mul", [x, g.const(0.5)]), half])


def _softmax_axis(g, op, x, axis):
    return g.node(op, [x], axis=int(axis))


ACTIVATIONS = {
    "linear": lambda g, x: x,
    "relu": lambda g, x: g.node("Relu", [x]),
    "relu6": lambda g, x: g.node("Clip", [x, g.const(0.0), g.const(6.0)]),
    "leaky_relu": lambda g, x: g.node("LeakyRelu", [x], alpha=0.2),
    "elu": lambda g, x: g.node("Elu", [x], alpha=1.0),
    "selu": lambda g, x: g.node("Selu", [x]),
    "sigmoid": lambda g, x: g.node("Sigmoid", [x]),
    "hard_sigmoid": lambda g, x: g.node("HardSigmoid", [x], alpha=1 / 6, beta=0.5),
    "hard_silu": lambda g, x: g.node("HardSwish", [x]),
    "hard_swish": lambda g, x: g.node("HardSwish", [x]),
    "tanh": lambda g, x: g.node("Tanh", [x]),
    "softmax": lambda g, x: g.node("Softmax", [x], axis=-1),
    "log_softmax": lambda g, x: g.node("LogSoftmax", [x], axis=-1),
    "softplus": lambda g, x: g.node("Softplus", [x]),
    "softsign": lambda g, x: g.node("Softsign", [x]),
    "silu": lambda g, x: g.node("Mul", [x, g.node("Sigmoid", [x])]),
    "swish": lambda g, x: g.node("Mul", [x, g.node("Sigmoid", [x])]),
    "gelu": lambda g, x: _gelu(g, x, approximate=False),
    "mish": lambda g, x: g.node("Mul", [x, g.node("Tanh", [g.node("Softplus", [x])])]),
    "exponential": lambda g, x: g.node("Exp", [x]),
}


def activation(g, layer, x, function):
    """Apply ``function`` (a minnet activation) to ``x``."""
    if function is None:
        return x
    name = activations.serialize(function)
    if not isinstance(name, str) or name not in ACTIVATIONS or not activations.is_builtin(name, function):
        _fail(layer, f"its activation {name!r} has no ONNX translation (exported: "
                     f"{', '.join(sorted(ACTIVATIONS))}).")
    return ACTIVATIONS[name](g, x)


# ---- layout helpers ------------------------------------------------------------------------
def _to_channels_first(g, layer, x, rank):
    if getattr(layer, "data_format", "channels_last") == "channels_first":
        return x
    return g.node("Transpose", [x], perm=[0, rank - 1] + list(range(1, rank - 1)))


def _from_channels_first(g, layer, x, rank):
    if getattr(layer, "data_format", "channels_last") == "channels_first":
        return x
    return g.node("Transpose", [x], perm=[0] + list(range(2, rank)) + [1])


def _spatial(layer, shape):
    if getattr(layer, "data_format", "channels_last") == "channels_first":
        return shape[2:]
    return shape[1:-1]


def _tuple(value, n):
    return tuple(value) if isinstance(value, (tuple, list)) else (value,) * n


def _known(layer, sizes):
    if any(s is None for s in sizes):
        _fail(layer, "'same' padding needs known spatial sizes; give the Input a full shape.")


def _conv_pads(layer, shape, kernel, strides, dilation):
    n = len(kernel)
    spatial = _spatial(layer, shape)
    padding = layer.padding
    if n == 1:
        if padding in ("same", "causal"):
            _known(layer, spatial)
        left, right = conv1d_padding(padding, spatial[0], kernel[0], strides[0], dilation[0])
        return [left, right]
    if padding == "valid":
        return [0] * (2 * n)
    if padding == "same":
        _known(layer, spatial)
        pairs = same_padding(spatial, kernel, strides, dilation)
    elif isinstance(padding, (tuple, list)):
        pairs = [p if isinstance(p, (tuple, list)) else (p, p) for p in padding]
    else:
        _fail(layer, f"padding={padding!r} has no ONNX translation.")
    return [p[0] for p in pairs] + [p[1] for p in pairs]


# ---- core ----------------------------------------------------------------------------------
def emit_identity(g, layer, inputs, shapes):
    return g.node("Identity", [inputs[0]])


def emit_dense(g, layer, inputs, shapes):
    y = g.node("MatMul", [inputs[0], g.const(_array(layer.kernel).T, f"{layer.name}_kernel")])
    if layer.bias is not None:
        y = g.node("Add", [y, g.const(_array(layer.bias), f"{layer.name}_bias")])
    return activation(g, layer, y, layer.activation)


def emit_activation_layer(g, layer, inputs, shapes):
    return activation(g, layer, inputs[0], layer.activation)


def emit_relu(g, layer, inputs, shapes):
    x = inputs[0]
    if layer.negative_slope == 0 and layer.threshold == 0:
        y = g.node("Relu", [x])
    else:
        shifted = g.node("Mul", [g.node("Sub", [x, g.const(layer.threshold)]),
                                 g.const(layer.negative_slope)])
        y = g.node("Where", [g.node("GreaterOrEqual", [x, g.const(layer.threshold)]), x, shifted])
    if layer.max_value is not None:
        y = g.node("Min", [y, g.const(layer.max_value)])
    return y


def emit_leaky_relu(g, layer, inputs, shapes):
    return g.node("LeakyRelu", [inputs[0]], alpha=float(layer.negative_slope))


def emit_elu(g, layer, inputs, shapes):
    return g.node("Elu", [inputs[0]], alpha=float(layer.alpha))


def emit_softmax(g, layer, inputs, shapes):
    axis = layer.axis
    if isinstance(axis, (tuple, list)):
        if len(axis) != 1:
            _fail(layer, f"softmax over several axes {axis} has no single ONNX op.")
        axis = axis[0]
    return g.node("Softmax", [inputs[0]], axis=int(axis))


def _unary(op):
    return lambda g, layer, inputs, shapes: g.node(op, [inputs[0]])


def emit_prelu(g, layer, inputs, shapes):
    return g.node("PRelu", [inputs[0], g.const(_array(layer.alpha), f"{layer.name}_alpha")])


def emit_flatten(g, layer, inputs, shapes):
    return g.node("Flatten", [inputs[0]], axis=1)


def emit_reshape(g, layer, inputs, shapes):
    return g.node("Reshape", [inputs[0], g.ints([0] + list(layer.target_shape))])


def emit_permute(g, layer, inputs, shapes):
    return g.node("Transpose", [inputs[0]], perm=[0] + [int(d) for d in layer.dims])


def emit_rescaling(g, layer, inputs, shapes):
    y = g.node("Mul", [inputs[0], g.const(np.asarray(layer.scale))])
    return g.node("Add", [y, g.const(np.asarray(layer.offset))])


def _channel_shape(rank, axis, size):
    shape = [1] * rank
    shape[axis] = size
    return shape


def emit_batch_norm(g, layer, inputs, shapes):
    rank = len(shapes[0])
    axis = layer.axis % rank
    mean = _array(layer.moving_mean).astype(np.float64)
    variance = _array(layer.moving_variance).astype(np.float64)
    gamma = _array(layer.gamma).astype(np.float64) if layer.gamma is not None else 1.0
    beta = _array(layer.beta).astype(np.float64) if layer.beta is not None else 0.0
    scale = gamma / np.sqrt(variance + layer.epsilon)
    shift = beta - mean * scale
    shape = _channel_shape(rank, axis, mean.size)
    y = g.node("Mul", [inputs[0], g.const(np.reshape(scale, shape), f"{layer.name}_scale")])
    return g.node("Add", [y, g.const(np.reshape(shift, shape), f"{layer.name}_shift")])


def emit_layer_norm(g, layer, inputs, shapes):
    rank = len(shapes[0])
    axes = sorted(a % rank for a in _tuple(layer.axis, 1))
    x = inputs[0]
    mean = g.node("ReduceMean", [x], axes=axes, keepdims=1)
    centred = g.node("Sub", [x, mean])
    variance = g.node("ReduceMean", [g.node("Mul", [centred, centred])], axes=axes, keepdims=1)
    y = g.node("Div", [centred, g.node("Sqrt", [g.node("Add", [variance, g.const(layer.epsilon)])])])
    shape = [shapes[0][a] if a in axes else 1 for a in range(1, rank)]
    if layer.gamma is not None:
        y = g.node("Mul", [y, g.const(np.reshape(_array(layer.gamma), shape), f"{layer.name}_gamma")])
    if layer.beta is not None:
        y = g.node("Add", [y, g.const(np.reshape(_array(layer.beta), shape), f"{layer.name}_beta")])
    return y


def emit_normalization(g, layer, inputs, shapes):
    if getattr(layer, "invert", False):
        _fail(layer, "invert=True is not exported.")
    mean, variance = _array(layer.mean), _array(layer.variance)
    rank = len(shapes[0])
    axes = [a % rank for a in _tuple(layer.axis, 1)]
    shape = [shapes[0][a] if a in axes else 1 for a in range(1, rank)]
    std = np.sqrt(np.maximum(variance, 1e-7))   # Keras's floor, as the layer
    y = g.node("Sub", [inputs[0], g.const(np.reshape(mean, shape))])
    return g.node("Div", [y, g.const(np.reshape(std, shape))])


# ---- convolution and pooling ---------------------------------------------------------------
def _conv(g, layer, x, shape, kernel_weight, bias, groups, kernel_size, strides, dilation):
    rank = len(shape)
    n = rank - 2
    kernel_size, strides, dilation = (_tuple(kernel_size, n), _tuple(strides, n),
                                      _tuple(dilation, n))
    pads = _conv_pads(layer, shape, kernel_size, strides, dilation)
    ins = [x, g.const(_array(kernel_weight), f"{layer.name}_kernel")]
    if bias is not None:
        ins.append(g.const(_array(bias), f"{layer.name}_bias"))
    return g.node("Conv", ins, kernel_shape=list(kernel_size), strides=list(strides),
                  dilations=list(dilation), pads=pads, group=int(groups))


def emit_conv(g, layer, inputs, shapes):
    rank = len(shapes[0])
    x = _to_channels_first(g, layer, inputs[0], rank)
    y = _conv(g, layer, x, shapes[0], layer.kernel, layer.bias, getattr(layer, "groups", 1),
              layer.kernel_size, layer.strides, layer.dilation_rate)
    return activation(g, layer, _from_channels_first(g, layer, y, rank), layer.activation)


def emit_separable_conv(g, layer, inputs, shapes):
    rank = len(shapes[0])
    x = _to_channels_first(g, layer, inputs[0], rank)
    y = _conv(g, layer, x, shapes[0], layer.depthwise_kernel, None, layer.in_channels,
              layer.kernel_size, layer.strides, layer.dilation_rate)
    ins = [y, g.const(_array(layer.pointwise_kernel), f"{layer.name}_pointwise")]
    if layer.bias is not None:
        ins.append(g.const(_array(layer.bias), f"{layer.name}_bias"))
    y = g.node("Conv", ins, kernel_shape=[1] * (rank - 2))
    return activation(g, layer, _from_channels_first(g, layer, y, rank), layer.activation)


def emit_conv_transpose(g, layer, inputs, shapes):
    rank = len(shapes[0])
    n = rank - 2
    spatial = _spatial(layer, shapes[0])
    _known(layer, spatial)
    # The layer's own window of the full transposed output (length, cropped at the start,
    # cropped at the end, zeros added at the end) per axis: ONNX's pads and output_padding.
    # Asking the layer keeps one copy of Keras's cropping rule.
    geometry = (layer._geometry(tuple(spatial)) if hasattr(layer, "_geometry")
                else [layer._window(spatial[0])])              # Conv1DTranspose
    pads_begin = [top for _, top, _, _ in geometry]
    pads_end = [bottom for _, _, bottom, _ in geometry]
    extras = [extra for _, _, _, extra in geometry]
    x = _to_channels_first(g, layer, inputs[0], rank)
    ins = [x, g.const(_array(layer.kernel), f"{layer.name}_kernel")]
    if layer.bias is not None:
        ins.append(g.const(_array(layer.bias), f"{layer.name}_bias"))
    y = g.node("ConvTranspose", ins, kernel_shape=list(_tuple(layer.kernel_size, n)),
               strides=list(_tuple(layer.strides, n)),
               dilations=list(_tuple(layer.dilation_rate, n)),
               pads=pads_begin + pads_end, output_padding=extras,
               group=int(getattr(layer, "groups", 1)))
    return activation(g, layer, _from_channels_first(g, layer, y, rank), layer.activation)


def _pool(op):
    def emit(g, layer, inputs, shapes):
        rank = len(shapes[0])
        n = rank - 2
        pool, strides = _tuple(layer.pool_size, n), _tuple(layer.strides, n)
        padding = layer.padding
        attributes = {}
        if padding == "valid":
            pads = [0] * (2 * n)
        elif padding == "same":
            spatial = _spatial(layer, shapes[0])
            _known(layer, spatial)
            pairs = same_padding(spatial, pool, strides, (1,) * n)
            pads = [p[0] for p in pairs] + [p[1] for p in pairs]
            attributes["count_include_pad"] = 0
        else:
            pairs = [p if isinstance(p, (tuple, list)) else (p, p) for p in _tuple(padding, n)]
            pads = [p[0] for p in pairs] + [p[1] for p in pairs]
            attributes["count_include_pad"] = 1
        if op == "MaxPool":
            attributes.pop("count_include_pad", None)
        x = _to_channels_first(g, layer, inputs[0], rank)
        y = g.node(op, [x], kernel_shape=list(pool), strides=list(strides), pads=pads, **attributes)
        return _from_channels_first(g, layer, y, rank)
    return emit


def _global_pool(op):
    def emit(g, layer, inputs, shapes):
        rank = len(shapes[0])
        if getattr(layer, "data_format", "channels_last") == "channels_first":
            axes = list(range(2, rank))
        else:
            axes = list(range(1, rank - 1))
        return g.node(op, [inputs[0]], axes=axes, keepdims=int(bool(getattr(layer, "keepdims", False))))
    return emit


def emit_zero_padding(g, layer, inputs, shapes):
    (top, bottom), (left, right) = layer.padding
    if getattr(layer, "data_format", "channels_last") == "channels_first":
        pads = [0, 0, top, left, 0, 0, bottom, right]
    else:
        pads = [0, top, left, 0, 0, bottom, right, 0]
    return g.node("Pad", [inputs[0], g.ints(pads)])


def emit_upsampling(g, layer, inputs, shapes):
    if layer.interpolation != "nearest":
        _fail(layer, f"interpolation={layer.interpolation!r}: only 'nearest' is exported.")
    sh, sw = layer.size
    scales = [1, 1, sh, sw] if layer.data_format == "channels_first" else [1, sh, sw, 1]
    return g.node("Resize", [inputs[0], "", g.const(scales)], mode="nearest",
                  nearest_mode="floor", coordinate_transformation_mode="asymmetric")


def emit_cropping(g, layer, inputs, shapes):
    (top, bottom), (left, right) = layer.cropping
    first = getattr(layer, "data_format", "channels_last") == "channels_first"
    h_axis, w_axis = (2, 3) if first else (1, 2)
    big = 2 ** 62
    return g.node("Slice", [inputs[0], g.ints([top, left]),
                            g.ints([-bottom if bottom else big, -right if right else big]),
                            g.ints([h_axis, w_axis])])


def emit_repeat_vector(g, layer, inputs, shapes):
    expanded = g.node("Unsqueeze", [inputs[0], g.ints([1])])
    return g.node("Tile", [expanded, g.ints([1, int(layer.n), 1])])


def emit_group_norm(g, layer, inputs, shapes):
    shape = shapes[0]
    rank = len(shape)
    axis = layer.axis % rank
    if axis != rank - 1 and axis != 1:
        _fail(layer, f"axis={layer.axis} is not exported (only the channel axis, first or last).")
    if any(s is None for s in shape[1:]):
        _fail(layer, "GroupNormalization needs the full input shape; give the Input one.")
    channels, groups = shape[axis], int(layer.groups)
    grouped = list(shape[1:])
    grouped[axis - 1:axis] = [groups, channels // groups]
    x = g.node("Reshape", [inputs[0], g.ints([0] + grouped)])
    group_axis = axis                      # the groups' axis in the grouped shape (batch first)
    axes = [a for a in range(1, rank + 1) if a != group_axis]
    mean = g.node("ReduceMean", [x], axes=axes, keepdims=1)
    centred = g.node("Sub", [x, mean])
    variance = g.node("ReduceMean", [g.node("Mul", [centred, centred])], axes=axes, keepdims=1)
    y = g.node("Div", [centred, g.node("Sqrt", [g.node("Add", [variance, g.const(layer.epsilon)])])])
    y = g.node("Reshape", [y, g.ints([0] + list(shape[1:]))])
    affine = [1] * (rank - 1)
    affine[axis - 1] = channels
    if layer.gamma is not None:
        y = g.node("Mul", [y, g.const(np.reshape(_array(layer.gamma), affine), f"{layer.name}_gamma")])
    if layer.beta is not None:
        y = g.node("Add", [y, g.const(np.reshape(_array(layer.beta), affine), f"{layer.name}_beta")])
    return y


def emit_time_distributed(g, layer, inputs, shapes):
    shape = shapes[0]
    inner = layer.layer
    inner_shape = (None,) + tuple(shape[2:])
    if shape[1] is None or any(s is None for s in shape[2:]):
        _fail(layer, "TimeDistributed needs the number of steps and the step shape; give the "
                     "Input a full shape.")
    if not inner.built:
        inner.build(inner_shape)
    emitter = EMITTERS.get(type(inner).__name__)
    if emitter is None:
        _fail(layer, f"its wrapped layer {type(inner).__name__} is not exported.")
    merged = g.node("Reshape", [inputs[0], g.ints([-1] + list(shape[2:]))])
    out = emitter(g, inner, [merged], [inner_shape])
    out_shape = tuple(inner.compute_output_shape(inner_shape))
    return g.node("Reshape", [out, g.ints([-1, int(shape[1])] + list(out_shape[1:]))])


def emit_resizing(g, layer, inputs, shapes):
    if layer.crop_to_aspect_ratio:
        _fail(layer, "crop_to_aspect_ratio=True is not exported.")
    first = getattr(layer, "data_format", "channels_last") == "channels_first"
    x = _to_channels_first(g, layer, inputs[0], 4)
    sizes = g.node("Concat", [g.node("Slice", [g.node("Shape", [x]), g.ints([0]), g.ints([2]),
                                               g.ints([0])]),
                              g.ints([int(layer.height), int(layer.width)])], axis=0)
    if layer.interpolation == "bilinear":
        attributes = {"mode": "linear", "coordinate_transformation_mode": "half_pixel"}
    else:      # Keras/TF's nearest: source = floor((dst + 0.5) * in / out)
        attributes = {"mode": "nearest", "coordinate_transformation_mode": "tf_half_pixel_for_nn",
                      "nearest_mode": "floor"}
    y = g.node("Resize", [x, "", "", sizes], **attributes)
    return y if first else _from_channels_first(g, layer, y, 4)


# ---- merging -------------------------------------------------------------------------------
def _variadic(op):
    return lambda g, layer, inputs, shapes: g.node(op, inputs)


def emit_subtract(g, layer, inputs, shapes):
    return g.node("Sub", inputs)


def emit_multiply(g, layer, inputs, shapes):
    y = inputs[0]
    for other in inputs[1:]:
        y = g.node("Mul", [y, other])
    return y


def emit_concatenate(g, layer, inputs, shapes):
    return g.node("Concat", inputs, axis=int(layer.axis))


# ---- embedding and recurrent ---------------------------------------------------------------
def emit_embedding(g, layer, inputs, shapes):
    if getattr(layer, "mask_zero", False):
        _fail(layer, "mask_zero=True: ONNX has no Keras mask; export the model without masking.")
    indices = g.node("Cast", [inputs[0]], to=7)
    return g.node("Gather", [g.const(_array(layer.embeddings), f"{layer.name}_embeddings"), indices],
                  axis=0)


_GATE_ORDER = {"LSTM": [0, 3, 1, 2],   # PyTorch i, f, g, o -> ONNX i, o, f, c
               "GRU": [1, 0, 2],       # PyTorch r, z, n   -> ONNX z, r, h
               "SimpleRNN": [0]}
_ONNX_OP = {"LSTM": "LSTM", "GRU": "GRU", "SimpleRNN": "RNN"}


def _reorder(array, kind, units):
    blocks = np.split(array, len(_GATE_ORDER[kind]), axis=0)
    return np.concatenate([blocks[i] for i in _GATE_ORDER[kind]], axis=0)


def _recurrent(g, layer, x, kind):
    """Run ``layer`` over ``x`` (N, T, F); returns (sequence (N, T, H), [final states (N, H)])."""
    if getattr(layer, "stateful", False):
        _fail(layer, "stateful=True keeps state between calls; ONNX graphs have none.")
    units = layer.units
    w = _reorder(_array(layer.weight_ih), kind, units)[None]
    r = _reorder(_array(layer.weight_hh), kind, units)[None]
    gates = len(_GATE_ORDER[kind]) * units
    if layer.bias_ih is not None:
        b = np.concatenate([_reorder(_array(layer.bias_ih), kind, units),
                            _reorder(_array(layer.bias_hh), kind, units)])[None]
    else:
        b = np.zeros((1, 2 * gates), np.float32)
    sequence = g.node("Transpose", [x], perm=[1, 0, 2])          # (T, N, F)
    if layer.go_backwards:
        sequence = g.node("Slice", [sequence, g.ints([-1]), g.ints([-(2 ** 62)]), g.ints([0]),
                                    g.ints([-1])])
    attributes = {"hidden_size": int(units)}
    if kind == "GRU":
        attributes["linear_before_reset"] = 1
    if kind == "SimpleRNN":
        attributes["activations"] = ["Relu" if activations.serialize(layer.activation) == "relu"
                                     else "Tanh"]
    outputs = [g.fresh("y"), g.fresh("y_h")] + ([g.fresh("y_c")] if kind == "LSTM" else [])
    g.node(_ONNX_OP[kind], [sequence, g.const(w, f"{layer.name}_W"), g.const(r, f"{layer.name}_R"),
                            g.const(b, f"{layer.name}_B")], outputs, **attributes)
    y = g.node("Transpose", [g.node("Squeeze", [outputs[0], g.ints([1])])], perm=[1, 0, 2])
    states = [g.node("Squeeze", [name, g.ints([0])]) for name in outputs[1:]]
    return y, states


def _rnn(kind):
    def emit(g, layer, inputs, shapes):
        y, states = _recurrent(g, layer, inputs[0], kind)
        out = y if layer.return_sequences else states[0]
        return [out] + states if layer.return_state else out
    return emit


def emit_bidirectional(g, layer, inputs, shapes):
    parts = []
    states = []
    for sub in (layer.forward_layer, layer.backward_layer):
        kind = type(sub).__name__
        if kind not in _GATE_ORDER:
            _fail(layer, f"its wrapped layer {kind} is not exported.")
        y, sub_states = _recurrent(g, sub, inputs[0], kind)
        parts.append(y if layer.return_sequences else sub_states[0])
        states.extend(sub_states)
    forward, backward = parts
    if layer.return_sequences:
        backward = g.node("Slice", [backward, g.ints([-1]), g.ints([-(2 ** 62)]), g.ints([1]),
                                    g.ints([-1])])
    mode = layer.merge_mode
    if mode == "concat":
        out = [g.node("Concat", [forward, backward], axis=-1)]
    elif mode == "sum":
        out = [g.node("Add", [forward, backward])]
    elif mode == "mul":
        out = [g.node("Mul", [forward, backward])]
    elif mode == "ave":
        out = [g.node("Mul", [g.node("Add", [forward, backward]), g.const(0.5)])]
    else:
        out = [forward, backward]
    return out + states if layer.return_state else (out if len(out) > 1 else out[0])


# ---- attention ------------------------------------------------------------------------------
def emit_multi_head_attention(g, layer, inputs, shapes, options):
    """``MultiHeadAttention()(query, value[, key])`` on (B, T, d) inputs: the projections as
    MatMul + Add, ``softmax(q kᵀ / sqrt(key_dim))`` per head (``use_causal_mask`` by Trilu +
    Where, so T may stay dynamic), the gate, the output projection."""
    unknown = set(options) - {"use_causal_mask", "training", "return_attention_scores"}
    if unknown or options.get("return_attention_scores"):
        _fail(layer, f"the call options {sorted(unknown) or ['return_attention_scores=True']} "
                     f"are not translated (use_causal_mask is).")
    if any(len(s) != 3 for s in shapes):
        _fail(layer, f"inputs of rank > 3 (attention_axes) are not translated; got {shapes}.")
    if layer.sliding_window:
        _fail(layer, "sliding_window is not translated.")
    heads, kd, vd = layer.num_heads, layer.key_dim, layer.value_dim
    query, value = inputs[0], inputs[1]
    key = inputs[2] if len(inputs) > 2 else value

    def project(x, kernel, bias, dim, stem):
        d = kernel.shape[0]
        y = g.node("MatMul", [x, g.const(_array(kernel).reshape(d, heads * dim), f"{stem}_kernel")])
        if bias is not None:
            y = g.node("Add", [y, g.const(_array(bias).reshape(heads * dim), f"{stem}_bias")])
        return g.node("Reshape", [y, g.ints([0, 0, heads, dim])])          # (B, T, heads, dim)

    name = layer.name
    q = g.node("Transpose", [project(query, layer.query_kernel, layer.query_bias, kd, f"{name}_query")],
               perm=[0, 2, 1, 3])
    k = g.node("Transpose", [project(key, layer.key_kernel, layer.key_bias, kd, f"{name}_key")],
               perm=[0, 2, 3, 1])
    v = g.node("Transpose", [project(value, layer.value_kernel, layer.value_bias, vd, f"{name}_value")],
               perm=[0, 2, 1, 3])
    scores = g.node("Mul", [g.node("MatMul", [q, k]), g.const(np.float32(layer._scale))])
    if options.get("use_causal_mask"):                 # query i sees keys j <= i (tril)
        size = g.node("Slice", [g.node("Shape", [scores]), g.ints([2]), g.ints([4])])
        ones = g.node("Expand", [g.const(np.ones((1, 1), np.float32)), size])
        allowed = g.node("Cast", [g.node("Trilu", [ones], upper=0)], to=9)
        scores = g.node("Where", [allowed, scores, g.const(np.float32(-np.inf))])
    out = g.node("MatMul", [g.node("Softmax", [scores], axis=-1), v])      # (B, heads, T, vd)
    out = g.node("Transpose", [out], perm=[0, 2, 1, 3])
    if layer.use_gate:
        gate = project(query, layer.gate_kernel, layer.gate_bias, vd, f"{name}_gate")
        out = g.node("Mul", [out, g.node("Sigmoid", [gate])])
    kernel = layer.attention_output_kernel
    out_dims = [int(d) for d in kernel.shape[2:]]
    y = g.node("MatMul", [g.node("Reshape", [out, g.ints([0, 0, heads * vd])]),
                          g.const(_array(kernel).reshape(heads * vd, -1), f"{name}_output_kernel")])
    if layer.attention_output_bias is not None:
        y = g.node("Add", [y, g.const(_array(layer.attention_output_bias).reshape(-1),
                                      f"{name}_output_bias")])
    return y if len(out_dims) == 1 else g.node("Reshape", [y, g.ints([0, 0] + out_dims)])


# Layers whose call takes keyword options (``emitter(g, layer, inputs, shapes, options)``).
KEYWORD_EMITTERS = {"MultiHeadAttention": emit_multi_head_attention}

EMITTERS = {
    "InputLayer": emit_identity,
    "Dropout": emit_identity, "AlphaDropout": emit_identity, "SpatialDropout1D": emit_identity,
    "SpatialDropout2D": emit_identity, "GaussianNoise": emit_identity,
    "GaussianDropout": emit_identity, "ActivityRegularization": emit_identity,
    # random augmentation: the identity at inference (predict runs with training=False)
    "RandomFlip": emit_identity, "RandomTranslation": emit_identity,
    "RandomRotation": emit_identity, "RandomZoom": emit_identity, "RandomContrast": emit_identity,
    "Dense": emit_dense,
    "Activation": emit_activation_layer,
    "ReLU": emit_relu, "LeakyReLU": emit_leaky_relu, "ELU": emit_elu, "Softmax": emit_softmax,
    "Sigmoid": _unary("Sigmoid"), "Tanh": _unary("Tanh"), "SELU": _unary("Selu"),
    "PReLU": emit_prelu,
    "Flatten": emit_flatten, "Reshape": emit_reshape, "Permute": emit_permute,
    "Rescaling": emit_rescaling, "Normalization": emit_normalization,
    "BatchNormalization": emit_batch_norm, "LayerNormalization": emit_layer_norm,
    "Conv1D": emit_conv, "Conv2D": emit_conv, "Conv3D": emit_conv, "DepthwiseConv2D": emit_conv,
    "SeparableConv2D": emit_separable_conv, "SeparableConv1D": emit_separable_conv,
    "DepthwiseConv1D": emit_conv, "Conv2DTranspose": emit_conv_transpose,
    "Conv1DTranspose": emit_conv_transpose, "Conv3DTranspose": emit_conv_transpose,
    "MaxPooling1D": _pool("MaxPool"), "MaxPooling2D": _pool("MaxPool"),
    "AveragePooling1D": _pool("AveragePool"), "AveragePooling2D": _pool("AveragePool"),
    "GlobalAveragePooling1D": _global_pool("ReduceMean"),
    "GlobalAveragePooling2D": _global_pool("ReduceMean"),
    "GlobalMaxPooling1D": _global_pool("ReduceMax"), "GlobalMaxPooling2D": _global_pool("ReduceMax"),
    "ZeroPadding2D": emit_zero_padding, "UpSampling2D": emit_upsampling,
    "Cropping2D": emit_cropping, "RepeatVector": emit_repeat_vector, "Resizing": emit_resizing,
    "GroupNormalization": emit_group_norm, "TimeDistributed": emit_time_distributed,
    "Add": _variadic("Sum"), "Average": _variadic("Mean"), "Maximum": _variadic("Max"),
    "Minimum": _variadic("Min"), "Subtract": emit_subtract, "Multiply": emit_multiply,
    "Concatenate": emit_concatenate,
    "Embedding": emit_embedding,
    "LSTM": _rnn("LSTM"), "GRU": _rnn("GRU"), "SimpleRNN": _rnn("SimpleRNN"),
    "Bidirectional": emit_bidirectional,
}
