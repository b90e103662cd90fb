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
from minnet.layers.convolutional1d import conv1d_padding
from minnet.models import Sequential

__all__ = ["Step", "Slot", "NamedSlot", "LayoutState", "TransposedGeometry", "plan", "plan_layer",
           "slots", "named_slots", "model_layers", "input_shape_of", "same_pads", "flip_momentum",
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
    """``Step(kind, layer, args)`` with the arguments as keywords."""
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
def conv_padding_plan(layer):
    """A 2-D convolution's padding as torch takes it: ``(torch_padding, pads)``, where ``pads``
    is an explicit ``(left, right, top, bottom)`` zero padding to put before the convolution
    (Keras's "same" with strides, which can be uneven) or None."""
    padding = layer.padding
    if padding == "valid":
        return (0, 0), None
    if padding == "same" and layer.strides == (1, 1):
        return "same", None
    if padding == "same":
        pads = spatial_same_pads(layer, layer.kernel_size, layer.strides, layer.dilation_rate)
        return (0, 0), (pads if any(pads) else None)
    return tuple(padding), None


def conv_plan(layer):
    """``Conv2D``: [ZeroPad2d +] Conv2d [+ activation]."""
    input_shape_of(layer)
    torch_padding, pads = conv_padding_plan(layer)
    steps = [] if pads is None else [make_step("pad", layer, pads=pads, value=0.0)]
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
    planner = EXTRA_PLANS.get(kind.__name__)
    if planner is not None and kind is getattr(L, kind.__name__, None):
        return planner(layer, state)
    why = NO_TWIN.get(kind.__name__) if kind is getattr(L, kind.__name__, None) else None
    raise ValueError(f"Layer '{layer.name}' of type {type(layer).__name__} has no PyTorch twin in "
                     f"minnet.interop" + (f": {why}" if why else "") + ". Supported layers: "
                     f"{', '.join(SUPPORTED_LAYERS)}. Replace Lambda and custom layers by "
                     f"built-in ones (or write the torch module by hand).")


# ---------------------------------------------------------------------------- more layers
def conv_variant_plan(layer, state):
    """``DepthwiseConv2D`` (a grouped Conv2D): the Conv2D plan, ``groups`` included."""
    return conv_plan(layer)


def separable_plan(layer, state):
    """``SeparableConv2D``: one ``nn.Sequential([ZeroPad2d,] depthwise Conv2d, 1x1 Conv2d)``."""
    input_shape_of(layer)
    torch_padding, pads = conv_padding_plan(layer)
    steps = [make_step("separable", layer, padding=torch_padding, pads=pads,
                       offset=0 if pads is None else 1)]
    name = activation_name(layer.activation, layer)
    return steps + ([] if name == "linear" else [activation_step(name, layer)])


class TransposedGeometry(NamedTuple):
    """How torch computes a ``Conv2DTranspose``: ``ConvTranspose2d(padding=padding,
    output_padding=output_padding)`` then ``ZeroPad2d(crop)`` (``crop`` is
    ``(left, right, top, bottom)``, zero or negative: rows cut at the end)."""

    padding: tuple
    output_padding: tuple
    crop: tuple


def transposed_geometry(layer):
    """``ConvTranspose2d``'s ``padding``/``output_padding`` and the crop after it that give
    ``Conv2DTranspose``'s output, or ValueError when torch cannot express it."""
    shape = input_shape_of(layer)
    spatial = hw_of(layer)
    if None in spatial:
        raise ValueError(f"Layer '{layer.name}' (Conv2DTranspose) needs a known image size to "
                         f"be translated; received input shape {shape}.")
    padding, output_padding, crop = [], [], []
    for axis, geometry in enumerate(layer._geometry(spatial)):
        length, top = geometry[0], geometry[1]
        k = layer.dilation_rate[axis] * (layer.kernel_size[axis] - 1) + 1
        full = (spatial[axis] - 1) * layer.strides[axis] + k
        # torch: output row j is row j + padding of the full output, length
        # full - 2*padding + output_padding; minnet's row j is row j + top.
        need = length - full + 2 * top
        if need >= max(layer.strides[axis], layer.dilation_rate[axis]):
            raise ValueError(f"Layer '{layer.name}' (Conv2DTranspose): its output on axis {axis} "
                             f"(length {length} from row {top} of the full output) needs "
                             f"output_padding={need}, which torch.nn.ConvTranspose2d refuses "
                             f"(it must be smaller than the stride or the dilation).")
        padding.append(top)
        output_padding.append(max(need, 0))
        crop.append(max(-need, 0))                  # rows cut at the end
    return TransposedGeometry(tuple(padding), tuple(output_padding), (0, -crop[1], 0, -crop[0]))


def transposed_plan(layer, state):
    """``Conv2DTranspose``: ConvTranspose2d [+ ZeroPad2d(negative: a crop)] [+ activation]."""
    geometry = transposed_geometry(layer)
    steps = [make_step("conv_transpose", layer, padding=geometry.padding,
                       output_padding=geometry.output_padding)]
    if any(geometry.crop):
        steps.append(make_step("pad", layer, pads=geometry.crop, value=0.0))
    name = activation_name(layer.activation, layer)
    return steps + ([] if name == "linear" else [activation_step(name, layer)])


def layer_norm_plan(layer, state):
    """``LayerNormalization`` over the last axes -> ``nn.LayerNorm(shape)``."""
    if layer.rms_scaling:
        raise ValueError(f"Layer '{layer.name}' (LayerNormalization, rms_scaling=True): Keras's "
                         f"variance scaling without centring has no torch.nn twin.")
    shape = input_shape_of(layer)
    ndim = len(shape)
    axes = layer._resolve(ndim)
    last = list(range(ndim - len(axes), ndim))
    value_axes = None
    image_last = ndim == 4 and state.layout == "channels_last"
    if image_last and axes == [1, 2, 3]:
        normalized = (shape[3], shape[1], shape[2])          # torch sees (C, H, W)
        value_axes = (2, 0, 1)
    elif axes == last and not image_last:
        normalized = tuple(shape[a] for a in axes)
    else:
        raise ValueError(f"Layer '{layer.name}' (LayerNormalization, axis={layer.axis}) normalises "
                         f"axes {axes} of input {shape}"
                         + (" (channels_last images, which torch holds as NCHW)" if image_last else "")
                         + "; torch.nn.LayerNorm normalises the last axes of the tensor it gets. "
                         "Use axis=-1 on (N, ..., features) input, all of [1, 2, 3] on images, "
                         "or data_format='channels_first'.")
    return [make_step("layernorm", layer, shape=tuple(int(s) for s in normalized),
                      value_axes=value_axes)]


def group_norm_plan(layer, state):
    """``GroupNormalization`` whose axis is torch's channel axis -> ``nn.GroupNorm``."""
    shape = input_shape_of(layer)
    ndim = len(shape)
    axis = layer._channel_axis(ndim)
    if ndim == 4:
        layout = state.layout or ("channels_last" if axis == 3 else "channels_first")
        ok = axis == (3 if layout == "channels_last" else 1)
        if ok:
            state.layout = layout
            if state.input_layout is None:
                state.input_layout = layout
    else:
        ok = axis == 1
    if not ok:
        raise ValueError(f"Layer '{layer.name}' (GroupNormalization, axis={layer.axis}) groups "
                         f"axis {axis} of input {shape}; torch.nn.GroupNorm groups axis 1 of "
                         f"(N, C, ...) input (the channel axis of NCHW images). Use the channel "
                         f"axis of the layout.")
    return [make_step("groupnorm", layer, channels=int(shape[axis]))]


def upsampling_plan(layer, state):
    """``UpSampling2D`` -> ``nn.Upsample(scale_factor=size, mode=..., align_corners=False)``."""
    return [make_step("upsample", layer)]


def zero_padding_plan(layer, state):
    """``ZeroPadding2D`` -> ``nn.ZeroPad2d((left, right, top, bottom))``."""
    (top, bottom), (left, right) = layer.padding
    return [make_step("pad", layer, pads=(left, right, top, bottom), value=0.0)]


def cropping_plan(layer, state):
    """``Cropping2D`` -> ``nn.ZeroPad2d`` with negative padding (torch crops then)."""
    (top, bottom), (left, right) = layer.cropping
    return [make_step("pad", layer, pads=(-left, -right, -top, -bottom), value=0.0)]


def prelu_plan(layer, state):
    """``PReLU`` with one slope per channel (axis 1 of the torch tensor) or one in all."""
    shape = input_shape_of(layer)
    alpha = tuple(layer.alpha.shape)
    if all(a == 1 for a in alpha):
        return [make_step("prelu", layer, count=1, minnet_shape=alpha)]
    channel = 3 if (len(shape) == 4 and state.layout == "channels_last") else 1
    others = [a for i, a in enumerate(alpha, start=1) if i != channel]
    if all(a == 1 for a in others):
        return [make_step("prelu", layer, count=int(alpha[channel - 1]), minnet_shape=alpha)]
    raise ValueError(f"Layer '{layer.name}' (PReLU) has slopes of shape {alpha} for input {shape}; "
                     f"torch.nn.PReLU holds one slope, or one per channel (axis 1 of the torch "
                     f"tensor). Share the other axes: shared_axes=[1, 2] on channels_last "
                     f"images, [2, 3] on channels_first ones, or all axes.")


def embedding_plan(layer, state):
    """``Embedding`` -> ``nn.Embedding`` (without ``mask_zero``: torch has no masks)."""
    input_shape_of(layer)
    if layer.mask_zero:
        raise ValueError(f"Layer '{layer.name}' (Embedding, mask_zero=True) has no PyTorch twin: "
                         f"torch.nn.Embedding returns no mask (padding_idx only freezes row 0), "
                         f"so the layers after it would see the padded steps.")
    return [make_step("embedding", layer)]


def length_pads(layer, length, kernel, stride, dilation, padding):
    """``(left, right)`` zero padding of a 1-D layer for a sequence of ``length`` steps (the
    layer's own rule, ``conv1d_padding``)."""
    if padding == "same" and length is None:
        raise ValueError(f"Layer '{layer.name}' uses padding='same': its padding depends on the "
                         f"number of steps, which is unknown. Build the model with a full "
                         f"input shape.")
    left, right = conv1d_padding(padding, length, kernel, stride, dilation)
    return int(left), int(right)


def sequence_length(layer):
    """The number of steps of a built 1-D layer's input (None when unknown)."""
    shape = input_shape_of(layer)
    return shape[1] if layer.data_format == "channels_last" else shape[2]


def conv1d_plan(layer, state):
    """``Conv1D`` -> ``nn.Conv1d`` (channels_last or uneven padding: minnet's subclass that
    transposes (N, L, C) <-> (N, C, L) and pads around it) [+ activation]."""
    pads = length_pads(layer, sequence_length(layer), layer.kernel_size, layer.strides,
                       layer.dilation_rate, layer.padding)
    steps = [make_step("conv1d", layer, pads=pads)]
    name = activation_name(layer.activation, layer)
    return steps + ([] if name == "linear" else [activation_step(name, layer)])


def pool1d_plan(layer, state):
    """``MaxPooling1D`` / ``AveragePooling1D`` -> ``nn.MaxPool1d`` / ``nn.AvgPool1d``."""
    is_max = type(layer).__name__ == "MaxPooling1D"
    pads = length_pads(layer, sequence_length(layer), layer.pool_size, layer.strides, 1,
                       layer.padding)
    include_pad = True
    if not is_max and layer.padding == "same":
        if pads[0] != pads[1]:
            raise ValueError(f"Layer '{layer.name}' (AveragePooling1D, padding='same') pads its "
                             f"input {input_shape_of(layer)} unevenly ({pads[0]} left, {pads[1]} "
                             f"right) and leaves the padding out of the mean; torch.nn.AvgPool1d "
                             f"cannot express that. Use padding='valid' or a length for which "
                             f"the padding is symmetric.")
        include_pad = False
    return [make_step("maxpool1d" if is_max else "avgpool1d", layer, pads=pads,
                      count_include_pad=include_pad)]


def global_pool1d_plan(layer, state):
    """``GlobalAverage/MaxPooling1D`` -> ``nn.AdaptiveAvg/MaxPool1d(1)`` [+ Flatten]."""
    input_shape_of(layer)
    average = type(layer).__name__ == "GlobalAveragePooling1D"
    step = make_step("adaptive_avg1d" if average else "adaptive_max1d", layer)
    return [step] if layer.keepdims else [step, make_step("flatten", layer)]


EXTRA_PLANS = {
    "DepthwiseConv2D": conv_variant_plan, "SeparableConv2D": separable_plan,
    "Conv2DTranspose": transposed_plan, "LayerNormalization": layer_norm_plan,
    "GroupNormalization": group_norm_plan, "UpSampling2D": upsampling_plan,
    "ZeroPadding2D": zero_padding_plan, "Cropping2D": cropping_plan, "PReLU": prelu_plan,
    "Embedding": embedding_plan, "Conv1D": conv1d_plan, "MaxPooling1D": pool1d_plan,
    "AveragePooling1D": pool1d_plan, "GlobalAveragePooling1D": global_pool1d_plan,
    "GlobalMaxPooling1D": global_pool1d_plan,
}

SUPPORTED_LAYERS = (
    "Input", "Dense", "Conv2D (groups too)", "DepthwiseConv2D", "SeparableConv2D",
    "Conv2DTranspose", "Conv1D", "BatchNormalization", "LayerNormalization",
    "GroupNormalization", "MaxPooling1D/2D", "AveragePooling1D/2D",
    "GlobalAveragePooling1D/2D", "GlobalMaxPooling1D/2D", "UpSampling2D", "ZeroPadding2D",
    "Cropping2D", "Flatten", "Reshape", "Embedding", "Dropout", "AlphaDropout",
    "SpatialDropout2D", "ReLU", "LeakyReLU", "PReLU", "ELU", "SELU", "Sigmoid", "Tanh",
    "Softmax", "Activation", "SimpleRNN", "LSTM", "GRU", "Bidirectional")

# Why a built-in layer has no twin (the error says it).
NO_TWIN = {
    "GaussianNoise": "it adds noise in training mode, and torch.nn has no such module (at "
                     "inference it is the identity: drop it before converting)",
    "GaussianDropout": "it multiplies by noise in training mode, and torch.nn has no such "
                       "module (at inference it is the identity: drop it before converting)",
    "Permute": "torch.nn has no permute module",
    "RepeatVector": "torch.nn has no repeat module",
    "Lambda": "its function is Python code minnet cannot translate",
    "Masking": "torch.nn modules take no masks",
    "TimeDistributed": "torch.nn has no module that maps another over the time axis",
}
PREPROCESSING = ("Rescaling", "Normalization", "Resizing", "CenterCrop", "RandomFlip",
                 "RandomTranslation", "RandomRotation", "RandomZoom", "RandomCrop",
                 "RandomContrast", "TextVectorization")
NO_TWIN.update({name: "a preprocessing layer; torch.nn has no such module (do it in the data "
                      "pipeline, e.g. torchvision.transforms)" for name in PREPROCESSING})


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
    if not inner.fused:
        raise ValueError(f"Layer '{layer.name}' ({type(inner).__name__}): its activations "
                         f"(or GRU reset_after=False) have no torch.nn.{type(inner).__name__[:4]} "
                         f"twin; torch's recurrent modules are tanh/sigmoid (RNN: tanh/relu) "
                         f"and reset_after=True.")
    input_shape_of(layer)
    cell = {L.LSTM: "LSTM", L.GRU: "GRU", L.SimpleRNN: "RNN"}[type(inner)]
    return [make_step("rnn", layer, cell=cell, bidirectional=bidirectional, inner=inner)]


def plan(model, state=None):
    """Every step of ``model``, in torch module order (``state`` is updated as it goes)."""
    steps = []
    state = LayoutState() if state is None else state
    layers = model_layers(model)
    if state.layout is None:
        # Layers before the first image layer (LayerNorm, GroupNorm, PReLU, BatchNorm) read
        # the model's input images, whose layout is the first image layer's.
        state.layout = state.input_layout = first_image_layout(layers)
    for layer in layers:
        steps.extend(plan_layer(layer, state))
    return steps


def first_image_layout(layers):
    """The ``data_format`` of the first layer that reads 4-D input, if the model's input is
    4-D images and every layer before it keeps them 4-D; else None."""
    for layer in layers:
        shape = getattr(layer, "_build_input_shape", None)
        if type(layer).__name__ == "Input":
            continue
        if shape is None or len(shape) != 4:
            return None
        if getattr(layer, "data_format", None) is not None:
            return layout_of(layer)
        try:
            out = layer.compute_output_shape(tuple(shape))
        except (AttributeError, NotImplementedError, TypeError, ValueError):
            return None
        if out is None or len(out) != 4:
            return None
    return None


# ---------------------------------------------------------------------------- state slots
def to_torch_value(step, suffix, array):
    """A minnet weight as torch holds it: Dense columns after a channels_last Flatten permuted,
    a channels_last LayerNorm's (H, W, C) weights as (C, H, W), PReLU slopes as a vector."""
    args = step.args
    if step.kind == "linear" and suffix == "weight" and args.get("perm") is not None:
        return np.ascontiguousarray(np.asarray(array)[:, args["perm"]])
    if args.get("value_axes") is not None:
        return np.ascontiguousarray(np.transpose(np.asarray(array), args["value_axes"]))
    if step.kind == "prelu":
        return np.asarray(array).reshape(-1)
    return array


def from_torch_value(step, suffix, array):
    """The inverse of ``to_torch_value``."""
    args = step.args
    if step.kind == "linear" and suffix == "weight" and args.get("perm") is not None:
        array = np.asarray(array)
        out = np.empty_like(array)
        out[:, args["perm"]] = array
        return out
    if args.get("value_axes") is not None:
        return np.ascontiguousarray(np.transpose(np.asarray(array),
                                                 np.argsort(args["value_axes"])))
    if step.kind == "prelu":
        return np.asarray(array).reshape(args["minnet_shape"])
    return array


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
    if step.kind in ("conv_transpose", "conv1d"):
        result = [Slot("weight", layer.kernel, None, True)]
        if layer.use_bias:
            result.append(Slot("bias", layer.bias, None, True))
        return result
    if step.kind == "separable":
        first = step.args["offset"]
        result = [Slot(f"{first}.weight", layer.depthwise_kernel, None, True),
                  Slot(f"{first + 1}.weight", layer.pointwise_kernel, None, True)]
        if layer.use_bias:
            result.append(Slot(f"{first + 1}.bias", layer.bias, None, True))
        return result
    if step.kind == "rnn":
        return recurrent_slots(step)
    if step.kind in ("layernorm", "groupnorm"):
        shape = tuple(layer.gamma.shape if layer.gamma is not None else
                      layer.beta.shape if layer.beta is not None else ())
        if step.args.get("value_axes") is not None:
            shape = tuple(shape[a] for a in step.args["value_axes"])
        result = []
        if layer.scale or layer.center:
            result.append(Slot("weight", layer.gamma, np.ones(shape, layer.dtype), True))
        if layer.center or (layer.scale and step.kind == "groupnorm"):
            result.append(Slot("bias", layer.beta, np.zeros(shape, layer.dtype), True))
        return result
    if step.kind == "prelu":
        return [Slot("weight", layer.alpha, None, True)]
    if step.kind == "embedding":
        return [Slot("weight", layer.embeddings, None, True)]
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
