"""The plan: a minnet model walked into the torch modules it becomes, and their state.

Each minnet layer becomes one or more ``Step`` records (one per torch module, in order);
``to_torch`` turns steps into modules, ``state_dict`` and ``compare`` read weights through
them, so every function of ``minnet.interop`` numbers the modules alike.  While walking,
a ``LayoutState`` follows the image layout (channels_last / channels_first) and the
permutations the torch side needs.  Needs no PyTorch.
"""
import dataclasses
import math
from typing import Any, NamedTuple, Optional

import numpy as np

from minnet import activations
from minnet import layers as L
from minnet.autograd import Tensor
from minnet.layers.base import Layer
from minnet.models import Sequential

__all__ = ["Step", "Slot", "NamedSlot", "LayoutState", "plan", "plan_layer", "slots",
           "named_slots", "model_layers", "input_shape_of", "same_pads", "flip_momentum",
           "to_torch_value", "from_torch_value", "num_batches_tracked",
           "set_num_batches_tracked", "hwc_to_chw", "ACTIVATION_NAMES"]

ACTIVATION_NAMES = ("relu", "sigmoid", "tanh", "softmax", "elu", "selu", "leaky_relu", "linear")


@dataclasses.dataclass
class Step:
    """One torch module of the translation: ``kind`` plus the minnet layer it comes from.

    ``args`` holds what the module needs beyond the layer's own attributes (padding,
    a column permutation, ...).
    """

    kind: str
    layer: Any
    args: dict = dataclasses.field(default_factory=dict)

    def __repr__(self):
        return f"Step({self.kind!r}, {self.layer.name!r}, {self.args})"


def make_step(kind, layer, **args):
    return Step(kind, layer, args)


class Slot(NamedTuple):
    """One torch parameter or buffer of a step, in ``state_dict`` order.

    ``weight`` is the minnet weight (None when minnet has no twin); ``default`` is the fixed
    value used then (BatchNormalization without ``scale``/``center``; the batch counter).
    """

    suffix: str
    weight: Optional[Any]
    default: Optional[np.ndarray]
    is_parameter: bool


class NamedSlot(NamedTuple):
    """A ``Slot`` with its ``state_dict`` key (``"<module index>.<suffix>"``) and step."""

    key: str
    step: Step
    suffix: str
    weight: Optional[Any]
    default: Optional[np.ndarray]
    is_parameter: bool


@dataclasses.dataclass
class LayoutState:
    """What ``plan`` tracks from layer to layer.

    Attributes:
        layout: the layout of image tensors so far (None before the first image layer).
        input_layout: the layout of the model's input images (None: not images).
        perm: a pending (H, W, C) -> (C, H, W) column permutation for the next Dense.
        flatten: the name of the channels_last Flatten that made ``perm``.
    """

    layout: Optional[str] = None
    input_layout: Optional[str] = None
    perm: Optional[np.ndarray] = None
    flatten: Optional[str] = None


# ---------------------------------------------------------------------------- helpers
def model_layers(model):
    """The layers of a Sequential (Input excluded), or ``[model]`` for a single layer."""
    if isinstance(model, Sequential):
        return model.layers
    if isinstance(model, Layer):
        return [model]
    raise TypeError(f"Invalid value for argument `model`: expected a minnet Sequential model or "
                    f"Layer. Received: {type(model).__name__}")


def input_shape_of(layer):
    """The built input shape of ``layer`` (batch axis included), or ValueError if not built."""
    shape = getattr(layer, "_build_input_shape", None)
    if not layer.built or shape is None:
        raise ValueError(f"Layer '{layer.name}' is not built, so its weights and shapes are not known "
                         f"yet. Build the model first: start it with `layers.Input(shape)`, call "
                         f"`model.build((None, ...))`, or run it once on a batch.")
    return tuple(shape)


def activation_name(function, layer):
    """The name of a minnet activation function, or ValueError naming the layer."""
    name = activations.serialize(function)
    if name in ACTIVATION_NAMES and activations.get(name) is function:
        return name
    raise ValueError(f"Layer '{layer.name}' ({type(layer).__name__}) uses the custom activation "
                     f"{name!r}, which has no PyTorch twin. Supported activations: "
                     f"{', '.join(ACTIVATION_NAMES)}.")


def activation_step(name, layer):
    """The step of a named activation (None for ``linear`` inside Dense/Conv2D)."""
    args = {"name": name}
    if name == "softmax":
        args["dim"] = -1
    if name == "leaky_relu":
        args["negative_slope"] = 0.2      # keras.activations.leaky_relu's slope
    return Step("act", layer, args)


def same_pads(size, kernel, stride, dilation):
    """(before, after) zero padding of TensorFlow/Keras ``"same"``: output ``ceil(size/stride)``."""
    effective = dilation * (kernel - 1) + 1
    out = -(-size // stride)
    total = max((out - 1) * stride + effective - size, 0)
    return total // 2, total - total // 2


def layout_of(layer):
    """The image layout a spatial layer reads (a layer without ``data_format`` is NCHW)."""
    return getattr(layer, "data_format", None) or "channels_first"


def hw_of(layer):
    """``(H, W)`` of a spatial layer's 4-D input, in its layout."""
    shape = input_shape_of(layer)
    return (shape[1], shape[2]) if layout_of(layer) == "channels_last" else (shape[2], shape[3])


def spatial_same_pads(layer, kernel, stride, dilation):
    """``(left, right, top, bottom)`` of Keras's ``"same"`` for a built 2-D layer."""
    shape = input_shape_of(layer)
    if len(shape) != 4 or None in hw_of(layer):
        raise ValueError(f"Layer '{layer.name}' uses padding='same' with strides {stride}: its "
                         f"padding depends on the image size, which is unknown (input shape "
                         f"{shape}). Build the model with a full input shape.")
    height, width = hw_of(layer)
    (top, bottom) = same_pads(height, kernel[0], stride[0], dilation[0])
    (left, right) = same_pads(width, kernel[1], stride[1], dilation[1])
    return left, right, top, bottom


def hwc_to_chw(height, width, channels):
    """Column permutation: torch's (C, H, W) feature j is minnet's (H, W, C) feature perm[j]."""
    return np.arange(height * width * channels).reshape(height, width, channels) \
        .transpose(2, 0, 1).ravel()


def flip_momentum(momentum):
    """Keras's momentum <-> PyTorch's (``1 - m``), rounded to 15 digits so 0.2 -> 0.8 -> 0.2."""
    return float(f"{1.0 - float(momentum):.15g}")


# ---------------------------------------------------------------------------- layout tracking
# layers that act elementwise on (N, features): a pending Flatten permutation passes them
ELEMENTWISE = ("Dropout", "AlphaDropout", "ReLU", "LeakyReLU", "ELU", "SELU", "Sigmoid", "Tanh",
               "Activation")


def track_layout(layer, state):
    """Update ``state`` for ``layer``; raise where the channels_last order cannot be expressed."""
    name = type(layer).__name__
    if name == "Input":
        return
    if state.perm is not None and name not in ("Dense",) + ELEMENTWISE:
        raise ValueError(f"Layer '{layer.name}' ({name}) follows the channels_last Flatten "
                         f"'{state.flatten}': its features are in (H, W, C) order, torch's "
                         f"Flatten gives (C, H, W), and only a Dense (possibly after dropout or "
                         f"activations) can absorb the permutation. Put a Dense right after the "
                         f"Flatten, or use data_format='channels_first'.")
    shape = getattr(layer, "_build_input_shape", None)
    if name == "Flatten":
        layout = state.layout or getattr(layer, "data_format", None) or "channels_first"
        if shape is not None and len(shape) == 4 and layout == "channels_last":
            if any(s is None for s in shape[1:]):
                raise ValueError(f"Layer '{layer.name}' (Flatten) needs a known input shape to "
                                 f"be translated; received {shape}.")
            state.perm = hwc_to_chw(*(int(s) for s in shape[1:]))
            state.flatten = layer.name
        if shape is not None and len(shape) == 4 and state.input_layout is None:
            state.input_layout = layout            # the model's input is these images
        return
    if name == "Reshape" and shape is not None and len(shape) > 2 \
            and state.layout == "channels_last":
        raise ValueError(f"Layer '{layer.name}' (Reshape) reshapes channels_last images; torch's "
                         f"order is (C, H, W), so the translation would reorder the values. Use "
                         f"Flatten followed by Dense, or data_format='channels_first'.")
    if hasattr(layer, "data_format") or name == "Conv2D":
        state.layout = layout_of(layer)
        if state.input_layout is None:
            state.input_layout = state.layout


def bn_dims(layer, state):
    """1 or 2 (BatchNorm1d/2d), or ValueError when torch's channel axis is not the layer's."""
    shape = input_shape_of(layer)
    axis = layer.axis % len(shape)
    if len(shape) == 2 and axis == 1:
        return 1
    layout = state.layout or ("channels_last" if axis == 3 else "channels_first")
    if len(shape) == 4 and axis == (3 if layout == "channels_last" else 1):
        state.layout = layout
        if state.input_layout is None:
            state.input_layout = layout
        return 2
    raise ValueError(f"Layer '{layer.name}' (BatchNormalization, axis={layer.axis}) normalises "
                     f"axis {axis} of input {shape}; torch's BatchNorm1d/2d normalise the channel "
                     f"axis of (N, C) or NCHW (here: {layout}) input only.")


# ---------------------------------------------------------------------------- the plan
def conv_plan(layer):
    """``Conv2D``: [ZeroPad2d +] Conv2d [+ activation]."""
    input_shape_of(layer)
    steps = []
    padding = layer.padding
    if padding == "valid":
        torch_padding = (0, 0)
    elif padding == "same" and layer.strides == (1, 1):
        torch_padding = "same"
    elif padding == "same":
        pads = spatial_same_pads(layer, layer.kernel_size, layer.strides, layer.dilation_rate)
        if any(pads):
            steps.append(make_step("pad", layer, pads=pads, value=0.0))
        torch_padding = (0, 0)
    else:
        torch_padding = tuple(padding)
    steps.append(make_step("conv", layer, padding=torch_padding))
    name = activation_name(layer.activation, layer)
    return steps + ([] if name == "linear" else [activation_step(name, layer)])


def pool_plan(layer, is_max):
    """``MaxPooling2D`` / ``AveragePooling2D``: [ConstantPad2d(-inf) +] MaxPool2d / AvgPool2d."""
    padding = layer.padding
    steps = []
    include_pad = True
    if padding == "valid":
        torch_padding = (0, 0)
    elif padding == "same":
        left, right, top, bottom = spatial_same_pads(layer, layer.pool_size, layer.strides, (1, 1))
        if is_max:
            if any((left, right, top, bottom)):
                steps.append(make_step("pad", layer, pads=(left, right, top, bottom),
                                       value=-math.inf))
            torch_padding = (0, 0)
        elif left == right and top == bottom:
            torch_padding, include_pad = (top, left), False
        else:
            raise ValueError(
                f"Layer '{layer.name}' (AveragePooling2D, padding='same') pads its input "
                f"{input_shape_of(layer)} unevenly (top/bottom {top}/{bottom}, left/right "
                f"{left}/{right}) and leaves the padding out of the mean; torch.nn.AvgPool2d "
                f"cannot express that. Use padding='valid' or an int padding, or an input "
                f"size for which the padding is symmetric.")
    else:
        torch_padding = tuple(padding)
    steps.append(make_step("maxpool" if is_max else "avgpool", layer, padding=torch_padding,
                           count_include_pad=include_pad))
    return steps


def plan_layer(layer, state=None):
    """The torch modules (as steps) one minnet layer becomes."""
    state = LayoutState() if state is None else state
    track_layout(layer, state)
    kind = type(layer)
    if kind is L.Input:
        return []
    if kind is L.Dense:
        input_shape_of(layer)
        steps = [make_step("linear", layer, perm=state.perm)]
        state.perm = None
        name = activation_name(layer.activation, layer)
        return steps + ([] if name == "linear" else [activation_step(name, layer)])
    if kind is L.Conv2D:
        return conv_plan(layer)
    if kind is L.BatchNormalization:
        return [make_step("bn", layer, dims=bn_dims(layer, state))]
    if kind in (L.MaxPooling2D, L.AveragePooling2D):
        return pool_plan(layer, kind is L.MaxPooling2D)
    if kind in (L.GlobalAveragePooling2D, L.GlobalMaxPooling2D):
        step = make_step("adaptive_avg" if kind is L.GlobalAveragePooling2D else "adaptive_max",
                         layer)
        return [step] if layer.keepdims else [step, make_step("flatten", layer)]
    if kind is L.Flatten:
        return [make_step("flatten", layer)]
    if kind is L.Reshape:
        shape = input_shape_of(layer)
        if any(s is None for s in shape[1:]):
            raise ValueError(f"Layer '{layer.name}' (Reshape) needs a known input shape to be "
                             f"translated; received {shape}.")
        target = layer._resolve(tuple(shape[1:]))
        steps = [] if len(shape) == 2 else [make_step("flatten", layer)]
        return steps + [make_step("unflatten", layer, sizes=tuple(int(s) for s in target))]
    if kind is L.Dropout:
        return [make_step("dropout", layer, p=layer.rate)]
    if kind is L.AlphaDropout:
        return [make_step("alpha_dropout", layer, p=layer.rate)]
    if kind is L.SpatialDropout2D:
        return [make_step("dropout2d", layer, p=layer.rate)]
    if kind is L.ReLU:
        if layer.max_value is not None or layer.negative_slope or layer.threshold:
            raise ValueError(f"Layer '{layer.name}' (ReLU with max_value/negative_slope/threshold) "
                             f"has no PyTorch twin in this converter; use ReLU() or LeakyReLU.")
        return [make_step("act", layer, name="relu")]
    if kind is L.LeakyReLU:
        return [make_step("act", layer, name="leaky_relu", negative_slope=layer.negative_slope)]
    if kind is L.ELU:
        return [make_step("act", layer, name="elu", alpha=layer.alpha)]
    if kind is L.SELU:
        return [make_step("act", layer, name="selu")]
    if kind is L.Sigmoid:
        return [make_step("act", layer, name="sigmoid")]
    if kind is L.Tanh:
        return [make_step("act", layer, name="tanh")]
    if kind is L.Softmax:
        return [make_step("act", layer, name="softmax", dim=layer.axis)]
    if kind is L.Activation:
        return [activation_step(activation_name(layer.activation, layer), layer)]
    if kind in (L.SimpleRNN, L.LSTM, L.GRU, L.Bidirectional):
        return recurrent_plan(layer)
    raise ValueError(f"Layer '{layer.name}' of type {type(layer).__name__} has no PyTorch twin in "
                     f"minnet.interop. Supported layers: Input, Dense, Conv2D, BatchNormalization, "
                     f"MaxPooling2D, AveragePooling2D, GlobalAveragePooling2D, GlobalMaxPooling2D, "
                     f"Flatten, Reshape, "
                     f"Dropout, AlphaDropout, SpatialDropout2D, ReLU, LeakyReLU, ELU, SELU, "
                     f"Sigmoid, Tanh, Softmax, Activation. Replace Lambda and custom layers by "
                     f"built-in ones (or write the torch module by hand).")


# SimpleRNN / LSTM / GRU (and Bidirectional over one of them, merge_mode="concat") become a
# torch.nn.RNN / LSTM / GRU (batch_first=True) whose forward returns what the minnet layer
# returns: the output sequence, or the last hidden state. Same weight layouts, so the
# weights copy as they are. Masks, go_backwards and return_state have no twin here.
def recurrent_plan(layer):
    inner = layer.forward_layer if isinstance(layer, L.Bidirectional) else layer
    bidirectional = isinstance(layer, L.Bidirectional)
    if bidirectional and layer.merge_mode != "concat":
        raise ValueError(f"Layer '{layer.name}': only merge_mode='concat' has a PyTorch twin "
                         f"(bidirectional=True). Received merge_mode={layer.merge_mode!r}")
    if inner.go_backwards or inner.return_state or inner.stateful:
        raise ValueError(f"Layer '{layer.name}': go_backwards, return_state and stateful have no "
                         f"PyTorch twin in minnet.interop.")
    input_shape_of(layer)
    cell = {L.LSTM: "LSTM", L.GRU: "GRU", L.SimpleRNN: "RNN"}[type(inner)]
    return [make_step("rnn", layer, cell=cell, bidirectional=bidirectional, inner=inner)]


def plan(model, state=None):
    """Every step of ``model``, in torch module order (``state`` is updated as it goes)."""
    steps = []
    state = LayoutState() if state is None else state
    for layer in model_layers(model):
        steps.extend(plan_layer(layer, state))
    return steps


# ---------------------------------------------------------------------------- state slots
def to_torch_value(step, suffix, array):
    """A minnet weight as torch holds it: Dense columns after a channels_last Flatten permuted."""
    perm = step.args.get("perm") if step.kind == "linear" and suffix == "weight" else None
    return array if perm is None else np.ascontiguousarray(np.asarray(array)[:, perm])


def from_torch_value(step, suffix, array):
    """The inverse of ``to_torch_value``."""
    perm = step.args.get("perm") if step.kind == "linear" and suffix == "weight" else None
    if perm is None:
        return array
    array = np.asarray(array)
    out = np.empty_like(array)
    out[:, perm] = array
    return out


def num_batches_tracked(layer):
    value = getattr(layer, "num_batches_tracked", 0)
    if isinstance(value, Tensor):
        value = value.data
    return int(np.asarray(value))


def set_num_batches_tracked(layer, value):
    existing = getattr(layer, "num_batches_tracked", None)
    if isinstance(existing, Tensor):
        existing.data[...] = value
        existing._bump_version()
    else:
        layer.num_batches_tracked = int(value)


def recurrent_slots(step):
    layers_and_suffix = [(step.args["inner"], "_l0")]
    if step.args["bidirectional"]:
        layers_and_suffix = [(step.layer.forward_layer, "_l0"),
                             (step.layer.backward_layer, "_l0_reverse")]
    result = []
    for layer, suffix in layers_and_suffix:
        names = ("weight_ih", "weight_hh") + (("bias_ih", "bias_hh") if layer.use_bias else ())
        result.extend(Slot(name + suffix, getattr(layer, name), None, True) for name in names)
    return result


def slots(step):
    """The torch state of one step, in ``state_dict`` order, as ``Slot`` records."""
    layer = step.layer
    if step.kind in ("linear", "conv"):
        result = [Slot("weight", layer.kernel, None, True)]
        if layer.use_bias:
            result.append(Slot("bias", layer.bias, None, True))
        return result
    if step.kind == "rnn":
        return recurrent_slots(step)
    if step.kind == "bn":
        result = []
        channels = layer.num_features
        if layer.scale or layer.center:
            result.append(Slot("weight", layer.gamma, np.ones(channels, layer.dtype), True))
            result.append(Slot("bias", layer.beta, np.zeros(channels, layer.dtype), True))
        result.append(Slot("running_mean", layer.moving_mean, None, False))
        result.append(Slot("running_var", layer.moving_variance, None, False))
        result.append(Slot("num_batches_tracked", None,
                           np.array(num_batches_tracked(layer), dtype=np.int64), False))
        return result
    return []


def named_slots(model, state=None):
    """Every slot of ``model`` with its ``state_dict`` key, as ``NamedSlot`` records."""
    result = []
    for index, step in enumerate(plan(model, state)):
        for slot in slots(step):
            result.append(NamedSlot(f"{index}.{slot.suffix}", step, *slot))
    return result
