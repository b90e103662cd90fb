"""The bridge to PyTorch: move a model across, check that two models agree, share weights.

minnet is for learning; PyTorch is where a project goes next (GPUs, many machines).
This module moves a ``Sequential`` model to an equivalent ``torch.nn.Sequential`` and
back, compares the two numerically, and writes weights in PyTorch's ``state_dict``
naming as a plain ``.npz`` file (no pickle)::

    import minnet.interop as interop
    module = interop.to_torch(model)                      # torch.nn.Sequential, same weights
    model2 = interop.from_torch(module, input_shape=(1, 28, 28))
    print(interop.compare(model, module, x))              # table of max differences
    interop.save_torch_state_dict(model, "weights.npz")   # 0.weight, 0.bias, 1.running_mean, ...

PyTorch is optional (``pip install torch``): it is imported inside the functions that
need it, and nothing else in minnet imports it.  ``state_dict``,
``save_torch_state_dict`` and ``load_torch_state_dict`` work without it.

Layouts.  The torch side is always PyTorch's NCHW.  A channels_last minnet model (the
default image layout) stays exact across the bridge: ``compare`` permutes NHWC input to
NCHW at the boundary (and image-shaped outputs and input gradients back), BatchNorm's
momentum is translated (torch ``momentum`` = 1 - Keras ``momentum``), and the columns of a
Dense kernel that follows a channels_last ``Flatten`` are permuted from minnet's (H, W, C)
order to torch's (C, H, W) order (and back).  Weight layouts need nothing: minnet's are
PyTorch's whatever the data layout.

Module numbering: each minnet layer becomes one or more torch modules, numbered in
order.  A ``Dense`` or ``Conv2D`` with ``activation=`` becomes two (the ``Linear`` /
``Conv2d`` at index ``i``, the activation at ``i + 1``); ``GlobalAveragePooling2D``
becomes ``AdaptiveAvgPool2d(1)`` + ``Flatten``; a strided ``Conv2D`` with
``padding="same"`` becomes ``ZeroPad2d`` + ``Conv2d``.  ``state_dict(model)`` uses the
same numbering, so its keys are exactly ``to_torch(model).state_dict().keys()``.
"""
import inspect
import math
import os
import warnings

import numpy as np

from minnet import activations
from minnet import functional as F
from minnet import layers as L
from minnet.config import normalize_data_format
from minnet.autograd import Parameter, Tensor, enable_grad
from minnet.layers.base import Layer
from minnet.models import Sequential
from minnet.optimizers import SGD

__all__ = ["to_torch", "from_torch", "compare", "ComparisonReport", "ComparisonRow",
           "state_dict", "save_torch_state_dict", "load_torch_state_dict"]

# Default tolerances of ``compare`` per dtype: (rtol, atol).
TOLERANCES = {"float32": (1e-4, 1e-5), "float64": (1e-10, 1e-12)}

_ACTIVATION_NAMES = ("relu", "sigmoid", "tanh", "softmax", "elu", "selu", "leaky_relu", "linear")


def _torch():
    try:
        import torch
    except ImportError as error:
        raise ImportError("minnet.interop needs PyTorch for this function. Install it with "
                          "`pip install torch`.") from error
    return torch


# ---------------------------------------------------------------------------- the plan
class _Step:
    """One torch module of the translation: ``kind`` plus the minnet layer it comes from.

    ``to_torch`` turns steps into modules and ``state_dict`` reads weights through them,
    so the two always agree on the numbering.
    """

    __slots__ = ("kind", "layer", "args")

    def __init__(self, kind, layer, **args):
        self.kind = kind
        self.layer = layer
        self.args = args

    def __repr__(self):
        return f"_Step({self.kind!r}, {self.layer.name!r}, {self.args})"


def _model_layers(model):
    """The layers of a Sequential (Input excluded), or ``[model]`` for a single layer."""
    if isinstance(model, Sequential):
        return model.layers
    if isinstance(model, Layer):
        return [model]
    raise TypeError(f"Invalid value for argument `model`: expected a minnet Sequential model or "
                    f"Layer. Received: {type(model).__name__}")


def _input_shape(layer):
    shape = getattr(layer, "_build_input_shape", None)
    if not layer.built or shape is None:
        raise ValueError(f"Layer '{layer.name}' is not built, so its weights and shapes are not known "
                         f"yet. Build the model first: start it with `layers.Input(shape)`, call "
                         f"`model.build((None, ...))`, or run it once on a batch.")
    return tuple(shape)


def _activation_name(function, layer):
    """The name of a minnet activation function, or ValueError naming the layer."""
    name = activations.serialize(function)
    if name in _ACTIVATION_NAMES and activations.get(name) is function:
        return name
    raise ValueError(f"Layer '{layer.name}' ({type(layer).__name__}) uses the custom activation "
                     f"{name!r}, which has no PyTorch twin. Supported activations: "
                     f"{', '.join(_ACTIVATION_NAMES)}.")


def _activation_step(name, layer):
    """The step of a named activation (None for ``linear`` inside Dense/Conv2D)."""
    args = {"name": name}
    if name == "softmax":
        args["dim"] = -1
    if name == "leaky_relu":
        args["negative_slope"] = 0.2      # keras.activations.leaky_relu's slope
    return _Step("act", layer, **args)


def _same_pads(size, kernel, stride, dilation):
    """(before, after) zero padding of TensorFlow/Keras ``"same"``: output ``ceil(size/stride)``."""
    effective = dilation * (kernel - 1) + 1
    out = -(-size // stride)
    total = max((out - 1) * stride + effective - size, 0)
    return total // 2, total - total // 2


def _layout_of(layer):
    """The image layout a spatial layer reads (a layer without ``data_format`` is NCHW)."""
    return getattr(layer, "data_format", None) or "channels_first"


def _hw(layer):
    """``(H, W)`` of a spatial layer's 4-D input, in its layout."""
    shape = _input_shape(layer)
    return (shape[1], shape[2]) if _layout_of(layer) == "channels_last" else (shape[2], shape[3])


def _spatial_same_pads(layer, kernel, stride, dilation):
    shape = _input_shape(layer)
    if len(shape) != 4 or None in _hw(layer):
        raise ValueError(f"Layer '{layer.name}' uses padding='same' with strides {stride}: its "
                         f"padding depends on the image size, which is unknown (input shape "
                         f"{shape}). Build the model with a full input shape.")
    height, width = _hw(layer)
    (top, bottom) = _same_pads(height, kernel[0], stride[0], dilation[0])
    (left, right) = _same_pads(width, kernel[1], stride[1], dilation[1])
    return left, right, top, bottom


def _hwc_to_chw(height, width, channels):
    """Column permutation: torch's (C, H, W) feature j is minnet's (H, W, C) feature perm[j]."""
    return np.arange(height * width * channels).reshape(height, width, channels) \
        .transpose(2, 0, 1).ravel()


class _LayoutState:
    """What ``_plan`` tracks from layer to layer: the layout of image tensors, the layout of
    the model's input, and a pending (H, W, C) -> (C, H, W) permutation for the next Dense."""

    __slots__ = ("layout", "input_layout", "perm", "flatten")

    def __init__(self):
        self.layout = None
        self.input_layout = None
        self.perm = None
        self.flatten = None


# layers that act elementwise on (N, features): a pending Flatten permutation passes them
_ELEMENTWISE = ("Dropout", "AlphaDropout", "ReLU", "LeakyReLU", "ELU", "SELU", "Sigmoid", "Tanh",
                "Activation")


def _track_layout(layer, state):
    """Update ``state`` for ``layer``; raise where the channels_last order cannot be expressed."""
    name = type(layer).__name__
    if name == "Input":
        return
    if state.perm is not None and name not in ("Dense",) + _ELEMENTWISE:
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
            state.perm = _hwc_to_chw(*(int(s) for s in shape[1:]))
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
        state.layout = _layout_of(layer)
        if state.input_layout is None:
            state.input_layout = state.layout


def _bn_dims(layer, state):
    """1 or 2 (BatchNorm1d/2d), or ValueError when torch's channel axis is not the layer's."""
    shape = _input_shape(layer)
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


def _plan_layer(layer, state=None):
    """The torch modules (as steps) one minnet layer becomes."""
    state = _LayoutState() if state is None else state
    _track_layout(layer, state)
    kind = type(layer)
    if kind is L.Input:
        return []
    if kind is L.Dense:
        _input_shape(layer)
        steps = [_Step("linear", layer, perm=state.perm)]
        state.perm = None
        name = _activation_name(layer.activation, layer)
        return steps + ([] if name == "linear" else [_activation_step(name, layer)])
    if kind is L.Conv2D:
        _input_shape(layer)
        steps = []
        padding = layer.padding
        if padding == "valid":
            torch_padding = (0, 0)
        elif padding == "same" and layer.strides == (1, 1):
            torch_padding = "same"
        elif padding == "same":
            pads = _spatial_same_pads(layer, layer.kernel_size, layer.strides, layer.dilation_rate)
            if any(pads):
                steps.append(_Step("pad", layer, pads=pads, value=0.0))
            torch_padding = (0, 0)
        else:
            torch_padding = tuple(padding)
        steps.append(_Step("conv", layer, padding=torch_padding))
        name = _activation_name(layer.activation, layer)
        return steps + ([] if name == "linear" else [_activation_step(name, layer)])
    if kind is L.BatchNormalization:
        return [_Step("bn", layer, dims=_bn_dims(layer, state))]
    if kind in (L.MaxPooling2D, L.AveragePooling2D):
        is_max = kind is L.MaxPooling2D
        padding = layer.padding
        steps = []
        include_pad = True
        if padding == "valid":
            torch_padding = (0, 0)
        elif padding == "same":
            left, right, top, bottom = _spatial_same_pads(layer, layer.pool_size, layer.strides, (1, 1))
            if is_max:
                if any((left, right, top, bottom)):
                    steps.append(_Step("pad", layer, pads=(left, right, top, bottom), value=-math.inf))
                torch_padding = (0, 0)
            elif left == right and top == bottom:
                torch_padding, include_pad = (top, left), False
            else:
                raise ValueError(
                    f"Layer '{layer.name}' (AveragePooling2D, padding='same') pads its input "
                    f"{_input_shape(layer)} unevenly (top/bottom {top}/{bottom}, left/right "
                    f"{left}/{right}) and leaves the padding out of the mean; torch.nn.AvgPool2d "
                    f"cannot express that. Use padding='valid' or an int padding, or an input "
                    f"size for which the padding is symmetric.")
        else:
            torch_padding = tuple(padding)
        steps.append(_Step("maxpool" if is_max else "avgpool", layer, padding=torch_padding,
                           count_include_pad=include_pad))
        return steps
    if kind in (L.GlobalAveragePooling2D, L.GlobalMaxPooling2D):
        step = _Step("adaptive_avg" if kind is L.GlobalAveragePooling2D else "adaptive_max", layer)
        return [step] if layer.keepdims else [step, _Step("flatten", layer)]
    if kind is L.Flatten:
        return [_Step("flatten", layer)]
    if kind is L.Reshape:
        shape = _input_shape(layer)
        if any(s is None for s in shape[1:]):
            raise ValueError(f"Layer '{layer.name}' (Reshape) needs a known input shape to be "
                             f"translated; received {shape}.")
        target = layer._resolve(tuple(shape[1:]))
        steps = [] if len(shape) == 2 else [_Step("flatten", layer)]
        return steps + [_Step("unflatten", layer, sizes=tuple(int(s) for s in target))]
    if kind is L.Dropout:
        return [_Step("dropout", layer, p=layer.rate)]
    if kind is L.AlphaDropout:
        return [_Step("alpha_dropout", layer, p=layer.rate)]
    if kind is L.SpatialDropout2D:
        return [_Step("dropout2d", layer, p=layer.rate)]
    if kind is L.ReLU:
        if layer.max_value is not None or layer.negative_slope or layer.threshold:
            raise ValueError(f"Layer '{layer.name}' (ReLU with max_value/negative_slope/threshold) "
                             f"has no PyTorch twin in this converter; use ReLU() or LeakyReLU.")
        return [_Step("act", layer, name="relu")]
    if kind is L.LeakyReLU:
        return [_Step("act", layer, name="leaky_relu", negative_slope=layer.negative_slope)]
    if kind is L.ELU:
        return [_Step("act", layer, name="elu", alpha=layer.alpha)]
    if kind is L.SELU:
        return [_Step("act", layer, name="selu")]
    if kind is L.Sigmoid:
        return [_Step("act", layer, name="sigmoid")]
    if kind is L.Tanh:
        return [_Step("act", layer, name="tanh")]
    if kind is L.Softmax:
        return [_Step("act", layer, name="softmax", dim=layer.axis)]
    if kind is L.Activation:
        return [_activation_step(_activation_name(layer.activation, layer), layer)]
    if kind in (L.SimpleRNN, L.LSTM, L.GRU, L.Bidirectional):
        return _recurrent_plan(layer, L)
    raise ValueError(f"Layer '{layer.name}' of type {type(layer).__name__} has no PyTorch twin in "
                     f"minnet.interop. Supported layers: Input, Dense, Conv2D, BatchNormalization, "
                     f"MaxPooling2D, AveragePooling2D, GlobalAveragePooling2D, GlobalMaxPooling2D, "
                     f"Flatten, Reshape, "
                     f"Dropout, AlphaDropout, SpatialDropout2D, ReLU, LeakyReLU, ELU, SELU, "
                     f"Sigmoid, Tanh, Softmax, Activation. Replace Lambda and custom layers by "
                     f"built-in ones (or write the torch module by hand).")


def _plan(model, state=None):
    steps = []
    state = _LayoutState() if state is None else state
    for layer in _model_layers(model):
        steps.extend(_plan_layer(layer, state))
    return steps


def _flip_momentum(momentum):
    """Keras's momentum <-> PyTorch's (``1 - m``), rounded to 15 digits so 0.2 -> 0.8 -> 0.2."""
    return float(f"{1.0 - float(momentum):.15g}")


def _to_torch_value(step, suffix, array):
    """A minnet weight as torch holds it: Dense columns after a channels_last Flatten permuted."""
    perm = step.args.get("perm") if step.kind == "linear" and suffix == "weight" else None
    return array if perm is None else np.ascontiguousarray(np.asarray(array)[:, perm])


def _from_torch_value(step, suffix, array):
    """The inverse of ``_to_torch_value``."""
    perm = step.args.get("perm") if step.kind == "linear" and suffix == "weight" else None
    if perm is None:
        return array
    array = np.asarray(array)
    out = np.empty_like(array)
    out[:, perm] = array
    return out


# ---------------------------------------------------------------------------- state slots
def _num_batches_tracked(layer):
    value = getattr(layer, "num_batches_tracked", 0)
    if isinstance(value, Tensor):
        value = value.data
    return int(np.asarray(value))


def _set_num_batches_tracked(layer, value):
    existing = getattr(layer, "num_batches_tracked", None)
    if isinstance(existing, Tensor):
        existing.data[...] = value
        existing._bump_version()
    else:
        layer.num_batches_tracked = int(value)


def _slots(step):
    """The torch state of one step, in ``state_dict`` order.

    Returns:
        list of ``(suffix, minnet_weight_or_None, default, is_parameter)``; ``default`` is
        the fixed value used when minnet has no twin (BatchNormalization without ``scale``
        or ``center``; the batch counter).
    """
    layer = step.layer
    if step.kind in ("linear", "conv"):
        slots = [("weight", layer.kernel, None, True)]
        if layer.use_bias:
            slots.append(("bias", layer.bias, None, True))
        return slots
    if step.kind == "rnn":
        return _recurrent_slots(step)
    if step.kind == "bn":
        slots = []
        channels = layer.num_features
        if layer.scale or layer.center:
            slots.append(("weight", layer.gamma, np.ones(channels, layer.dtype), True))
            slots.append(("bias", layer.beta, np.zeros(channels, layer.dtype), True))
        slots.append(("running_mean", layer.moving_mean, None, False))
        slots.append(("running_var", layer.moving_variance, None, False))
        slots.append(("num_batches_tracked", None,
                      np.array(_num_batches_tracked(layer), dtype=np.int64), False))
        return slots
    return []


def _named_slots(model):
    """``(state_dict key, step, suffix, minnet weight or None, default, is_parameter)``."""
    out = []
    for index, step in enumerate(_plan(model)):
        for suffix, weight, default, is_param in _slots(step):
            out.append((f"{index}.{suffix}", step, suffix, weight, default, is_param))
    return out


def state_dict(model):
    """The model's weights in PyTorch ``state_dict`` naming, as ndarrays (copies).

    Keys are ``"<module index>.<name>"`` with the numbering of ``to_torch(model)``:
    ``0.weight``, ``0.bias`` (Linear/Conv2d), ``1.weight``, ``1.bias``, ``1.running_mean``,
    ``1.running_var``, ``1.num_batches_tracked`` (BatchNorm), ...  Needs no PyTorch.

    Args:
        model: a built minnet ``Sequential`` (or a single layer).

    Returns:
        dict ``str -> np.ndarray`` (``num_batches_tracked`` is a 0-d int64 array).

    Shape:
        Linear ``weight`` ``(out, in)``, Conv2d ``weight`` ``(F, C, kh, kw)``, biases and
        BatchNorm state ``(C,)``: the same layouts minnet uses.

    Example:
        >>> sd = interop.state_dict(model)
        >>> sorted(sd)[:2]
        ['0.bias', '0.weight']
    """
    result = {}
    for key, step, suffix, weight, default, _ in _named_slots(model):
        value = _to_torch_value(step, suffix, weight.data) if weight is not None else default
        result[key] = np.array(value, copy=True)
    return result


def save_torch_state_dict(model, path):
    """Write ``state_dict(model)`` to ``path`` as a plain ``.npz`` (no pickle).

    A PyTorch user loads it with::

        arrays = np.load(path)
        module.load_state_dict({k: torch.from_numpy(v) for k, v in arrays.items()})

    Args:
        model: a built minnet ``Sequential`` (or layer).
        path: file name (``.npz`` is appended by NumPy when missing) or an open binary file.

    Returns:
        The path written (with ``.npz``), or ``path`` itself for a file object.

    Shape:
        See ``state_dict``.

    Example:
        >>> interop.save_torch_state_dict(model, "weights.npz")
        'weights.npz'
    """
    arrays = state_dict(model)
    if isinstance(path, (str, os.PathLike)):
        path = os.fspath(path)
        if not path.endswith(".npz"):
            path += ".npz"
    np.savez(path, **arrays)
    return path


def _as_numpy(value, key):
    if hasattr(value, "detach") and hasattr(value, "cpu"):      # a torch.Tensor
        value = value.detach().cpu().numpy()
    elif isinstance(value, Tensor):
        value = value.data
    array = np.asarray(value)
    if array.dtype.kind not in "fiub":
        raise TypeError(f"State entry {key!r}: expected a numeric array. Received dtype {array.dtype}.")
    return array


def load_torch_state_dict(model, path):
    """Copy weights in PyTorch ``state_dict`` naming into a built minnet model, in place.

    Args:
        model: a built minnet ``Sequential`` (or layer) with the architecture the state
            was saved from.
        path: an ``.npz`` file written by ``save_torch_state_dict`` (or by a torch user with
            ``np.savez(path, **{k: v.numpy() for k, v in module.state_dict().items()})``),
            or a mapping ``name -> array`` (a torch ``state_dict()`` works as is).

    Returns:
        The model.

    Raises:
        ValueError: missing or unexpected keys, a shape that does not match, or a value that
            minnet cannot hold (a BatchNorm weight that is not all ones for a layer with
            ``scale=False``).

    Shape:
        See ``state_dict``.

    Example:
        >>> interop.load_torch_state_dict(model, "weights.npz")
    """
    if isinstance(path, (str, os.PathLike)) or hasattr(path, "read"):
        with np.load(path, allow_pickle=False) as data:
            arrays = {key: data[key] for key in data.files}
    elif hasattr(path, "items"):
        arrays = dict(path.items())
    else:
        raise TypeError(f"Invalid value for argument `path`: expected a file name, a binary file or "
                        f"a mapping of arrays. Received: {type(path).__name__}")
    slots = _named_slots(model)
    expected = [key for key, *_ in slots]
    missing = [key for key in expected if key not in arrays]
    unexpected = [key for key in arrays if key not in set(expected)]
    if missing or unexpected:
        raise ValueError(f"The state does not match model '{getattr(model, 'name', model)}': "
                         f"missing keys {missing}, unexpected keys {unexpected}. Expected keys: "
                         f"{expected}.")
    updates = []
    for key, step, suffix, weight, default, _ in slots:
        value = _as_numpy(arrays[key], key)
        want = tuple(weight.shape) if weight is not None else default.shape
        if value.shape != want:
            raise ValueError(f"State entry {key!r} (layer '{step.layer.name}') has shape "
                             f"{value.shape}; expected {want}.")
        if weight is None and suffix != "num_batches_tracked" and not np.array_equal(value, default):
            raise ValueError(f"State entry {key!r}: layer '{step.layer.name}' has no "
                             f"{'gamma (scale=False)' if suffix == 'weight' else 'beta (center=False)'}, "
                             f"so the value must be all {'ones' if suffix == 'weight' else 'zeros'}.")
        updates.append((step, suffix, weight, value))
    for step, suffix, weight, value in updates:
        if weight is not None:
            weight.data[...] = _from_torch_value(step, suffix, value)
            weight._bump_version()
        elif suffix == "num_batches_tracked":
            _set_num_batches_tracked(step.layer, int(value))
    return model


# ---------------------------------------------------------------------------- minnet -> torch
def _torch_dtype(torch, dtype):
    return torch.float64 if np.dtype(dtype) == np.float64 else torch.float32


def _activation_module(nn, step):
    name = step.args["name"]
    if name == "relu":
        return nn.ReLU()
    if name == "sigmoid":
        return nn.Sigmoid()
    if name == "tanh":
        return nn.Tanh()
    if name == "softmax":
        return nn.Softmax(dim=step.args.get("dim", -1))
    if name == "elu":
        return nn.ELU(alpha=step.args.get("alpha", 1.0))
    if name == "selu":
        return nn.SELU()
    if name == "leaky_relu":
        return nn.LeakyReLU(negative_slope=step.args.get("negative_slope", 0.01))
    return nn.Identity()       # "linear"


def _module(nn, step):
    layer, args = step.layer, step.args
    kind = step.kind
    if kind == "linear":
        return nn.Linear(layer.in_features, layer.units, bias=layer.use_bias)
    if kind == "conv":
        return nn.Conv2d(layer.in_channels, layer.filters, layer.kernel_size, stride=layer.strides,
                         padding=args["padding"], dilation=layer.dilation_rate, bias=layer.use_bias)
    if kind == "pad":
        if args["value"] == 0.0:
            return nn.ZeroPad2d(args["pads"])
        return nn.ConstantPad2d(args["pads"], args["value"])
    if kind == "bn":
        cls = nn.BatchNorm1d if args["dims"] == 1 else nn.BatchNorm2d
        # Keras's momentum weighs the old statistic, PyTorch's the new batch
        return cls(layer.num_features, eps=layer.epsilon, momentum=_flip_momentum(layer.momentum),
                   affine=layer.scale or layer.center)
    if kind == "maxpool":
        return nn.MaxPool2d(layer.pool_size, stride=layer.strides, padding=args["padding"])
    if kind == "avgpool":
        return nn.AvgPool2d(layer.pool_size, stride=layer.strides, padding=args["padding"],
                            count_include_pad=args["count_include_pad"])
    if kind == "adaptive_avg":
        return nn.AdaptiveAvgPool2d(1)
    if kind == "adaptive_max":
        return nn.AdaptiveMaxPool2d(1)
    if kind == "flatten":
        return nn.Flatten()
    if kind == "unflatten":
        return nn.Unflatten(1, args["sizes"])
    if kind == "dropout":
        return nn.Dropout(args["p"])
    if kind == "alpha_dropout":
        return nn.AlphaDropout(args["p"])
    if kind == "dropout2d":
        return nn.Dropout2d(args["p"])
    if kind == "act":
        return _activation_module(nn, step)
    if kind == "rnn":
        return _recurrent_module(nn, step)
    raise AssertionError(f"unknown step kind {kind!r}")


# ---------------------------------------------------------------------------- recurrent layers
# SimpleRNN / LSTM / GRU (and Bidirectional over one of them, merge_mode="concat") become a
# torch.nn.RNN / LSTM / GRU (batch_first=True) whose forward returns what the minnet layer
# returns: the output sequence, or the last hidden state. Same weight layouts, so the
# weights copy as they are. Masks, go_backwards and return_state have no twin here.

def _recurrent_plan(layer, L):
    inner = layer.forward_layer if isinstance(layer, L.Bidirectional) else layer
    bidirectional = isinstance(layer, L.Bidirectional)
    if bidirectional and layer.merge_mode != "concat":
        raise ValueError(f"Layer '{layer.name}': only merge_mode='concat' has a PyTorch twin "
                         f"(bidirectional=True). Received merge_mode={layer.merge_mode!r}")
    if inner.go_backwards or inner.return_state or inner.stateful:
        raise ValueError(f"Layer '{layer.name}': go_backwards, return_state and stateful have no "
                         f"PyTorch twin in minnet.interop.")
    _input_shape(layer)
    cell = {L.LSTM: "LSTM", L.GRU: "GRU", L.SimpleRNN: "RNN"}[type(inner)]
    return [_Step("rnn", layer, cell=cell, bidirectional=bidirectional, inner=inner)]


def _recurrent_slots(step):
    layers_and_suffix = [(step.args["inner"], "_l0")]
    if step.args["bidirectional"]:
        layers_and_suffix = [(step.layer.forward_layer, "_l0"),
                             (step.layer.backward_layer, "_l0_reverse")]
    slots = []
    for layer, suffix in layers_and_suffix:
        names = ("weight_ih", "weight_hh") + (("bias_ih", "bias_hh") if layer.use_bias else ())
        slots.extend((name + suffix, getattr(layer, name), None, True) for name in names)
    return slots


_RECURRENT_CLASSES = {}


def _recurrent_module(nn, step):
    inner = step.args["inner"]
    base = getattr(nn, step.args["cell"])
    cls = _RECURRENT_CLASSES.get(base)
    if cls is None:
        def forward(self, x):
            y, state = base.forward(self, x)
            if self.return_sequences:
                return y
            h = state[0] if isinstance(state, tuple) else state
            return h.transpose(0, 1).reshape(h.shape[1], -1)   # (N, directions * units)

        cls = type(f"Keras{base.__name__}", (base,), {"forward": forward})
        _RECURRENT_CLASSES[base] = cls
    kwargs = dict(batch_first=True, bias=inner.use_bias, bidirectional=step.args["bidirectional"])
    if step.args["cell"] == "RNN":
        kwargs["nonlinearity"] = "relu" if inner._mode == "relu" else "tanh"
    module = cls(inner.input_dim, inner.units, **kwargs)
    module.return_sequences = inner.return_sequences
    return module


def _recurrent_from_module(nn, module, common, L):
    """SimpleRNN/LSTM/GRU (or Bidirectional) for a one-layer, batch-first torch RNN, such as
    ``to_torch`` makes (its ``return_sequences`` attribute; True when absent)."""
    if not module.batch_first or module.num_layers != 1 or getattr(module, "proj_size", 0):
        raise ValueError("only one-layer, batch_first=True recurrent modules without proj_size "
                         "have a minnet twin")
    options = dict(use_bias=bool(module.bias),
                   return_sequences=bool(getattr(module, "return_sequences", True)), **common)
    if isinstance(module, nn.LSTM):
        layer = L.LSTM(module.hidden_size, unit_forget_bias=False, **options)
    elif isinstance(module, nn.GRU):
        layer = L.GRU(module.hidden_size, **options)
    else:
        layer = L.SimpleRNN(module.hidden_size, activation=module.nonlinearity, **options)
    return L.Bidirectional(layer) if module.bidirectional else layer


def to_torch(model):
    """An equivalent ``torch.nn.Sequential`` with copies of the model's weights.

    Weights, BatchNorm running statistics (and ``num_batches_tracked``), train/eval mode
    and dtype (float32 -> ``torch.float32``, float64 -> ``torch.float64``) are carried over;
    frozen weights get ``requires_grad=False``.  Layer by layer: Dense -> Linear,
    Conv2D -> Conv2d (``padding="same"`` with stride 1 -> ``padding="same"``; strided
    ``"same"`` -> ``ZeroPad2d`` + ``Conv2d``), an ``activation=`` -> one more module,
    BatchNormalization -> BatchNorm1d/2d, MaxPooling2D -> MaxPool2d, AveragePooling2D ->
    AvgPool2d, GlobalAveragePooling2D -> AdaptiveAvgPool2d(1) + Flatten, Flatten ->
    Flatten, Reshape -> Unflatten, Dropout/AlphaDropout/SpatialDropout2D ->
    Dropout/AlphaDropout/Dropout2d, activation layers -> their torch modules; Input is
    skipped.

    Args:
        model: a built minnet ``Sequential`` (or a single layer).

    Returns:
        ``torch.nn.Sequential``.

    Raises:
        ValueError: a layer without a PyTorch twin (``Lambda``, custom layers, custom
            activations), or a model that is not built.
        ImportError: PyTorch is not installed.

    Shape:
        The torch module takes NCHW images: a channels_last model's ``(N, H, W, C)`` input
        is ``x.transpose(0, 3, 1, 2)`` for it (``compare`` does this at the boundary);
        BatchNorm's momentum becomes ``1 - momentum`` and a Dense after a channels_last
        Flatten gets its columns in torch's (C, H, W) order.

    Example:
        >>> module = interop.to_torch(model)
        >>> module(torch.from_numpy(x)).shape == model(x).shape
        True
    """
    steps = _plan(model)
    torch = _torch()
    nn = torch.nn
    modules = []
    with torch.no_grad():
        for step in steps:
            module = _module(nn, step)
            module.to(_torch_dtype(torch, step.layer.dtype))
            params = dict(module.named_parameters(recurse=False))
            buffers = dict(module.named_buffers(recurse=False))
            for suffix, weight, default, is_param in _slots(step):
                target = params[suffix] if is_param else buffers[suffix]
                source = _to_torch_value(step, suffix, weight.data) if weight is not None else default
                target.copy_(torch.from_numpy(np.array(source, copy=True)))
                if is_param:
                    target.requires_grad_(bool(weight is not None and weight.requires_grad))
            module.train(bool(step.layer.training))
            modules.append(module)
    sequential = nn.Sequential(*modules)
    sequential.training = bool(getattr(model, "training", False))
    return sequential


# ---------------------------------------------------------------------------- torch -> minnet
def _module_dtype(module):
    import torch
    for tensor in list(module.parameters()) + list(module.buffers()):
        if tensor.is_floating_point():
            if tensor.dtype not in (torch.float32, torch.float64):
                raise ValueError(f"Invalid value for argument `module`: minnet supports float32 and "
                                 f"float64 weights. Received a module with {tensor.dtype} weights; "
                                 f"convert it with `module.float()` first.")
            return "float64" if tensor.dtype == torch.float64 else "float32"
    return "float32"


def _pair_of(value):
    return tuple(value) if isinstance(value, (tuple, list)) else (value, value)


def _unsupported(module, index, why=""):
    return ValueError(f"Module {index} of the torch Sequential ({module!r}) has no minnet twin"
                      + (f": {why}" if why else "") + ". Supported: Linear, Conv2d, BatchNorm1d, "
                      "BatchNorm2d, ReLU, LeakyReLU, ELU, SELU, Sigmoid, Tanh, Softmax(dim=...), "
                      "Identity, MaxPool2d, AvgPool2d, AdaptiveAvgPool2d(1), Flatten, Unflatten, "
                      "Dropout, AlphaDropout, Dropout2d (and ZeroPad2d before a Conv2d).")


def _is_same_padding(pads, shape, kernel, stride, dilation):
    if shape is None or len(shape) != 4 or shape[2] is None:
        return False
    top, bottom = _same_pads(shape[2], kernel[0], stride[0], dilation[0])
    left, right = _same_pads(shape[3], kernel[1], stride[1], dilation[1])
    return tuple(pads) == (left, right, top, bottom)


def _conv_layout_kwargs(L, data_format):
    """``data_format`` for Conv2D where it has the argument; a Conv2D without it is NCHW."""
    if "data_format" in inspect.signature(L.Conv2D.__init__).parameters:
        return {"data_format": data_format}
    if data_format != "channels_first":
        raise ValueError("this build's Conv2D reads channels_first (NCHW) images only: pass "
                         "data_format='channels_first' to from_torch")
    return {}


def _layer_from_module(nn, modules, i, shape, dtype, L, data_format="channels_first"):
    """The minnet layer for ``modules[i]`` (and how many modules it used).

    ``shape`` is the input shape as the torch module sees it (NCHW for images).
    """
    module = modules[i]
    kind = type(module)
    common = {"dtype": dtype}
    spatial = {"dtype": dtype, "data_format": data_format}
    last = data_format == "channels_last"
    if kind is nn.Linear:
        return L.Dense(module.out_features, use_bias=module.bias is not None, **common), 1
    if isinstance(module, (nn.RNN, nn.LSTM, nn.GRU)):
        return _recurrent_from_module(nn, module, common, L), 1
    if kind is nn.Conv2d:
        return _conv_from_module(module, i, module.padding,
                                 {**common, **_conv_layout_kwargs(L, data_format)}, L), 1
    if kind in (nn.ZeroPad2d, nn.ConstantPad2d):
        following = modules[i + 1] if i + 1 < len(modules) else None
        pads = tuple(module.padding)
        value = float(getattr(module, "value", 0.0))
        if type(following) is nn.Conv2d and value == 0.0 and tuple(following.padding) == (0, 0) \
                and _is_same_padding(pads, shape, following.kernel_size, following.stride,
                                     following.dilation):
            return _conv_from_module(following, i + 1, "same",
                                     {**common, **_conv_layout_kwargs(L, data_format)}, L), 2
        if type(following) is nn.MaxPool2d and value == -math.inf and _pair_of(following.padding) == (0, 0) \
                and _is_same_padding(pads, shape, _pair_of(following.kernel_size),
                                     _pair_of(following.stride or following.kernel_size), (1, 1)):
            return _pool_from_module(nn, following, i + 1, L, spatial, "same", shape), 2
        raise _unsupported(module, i, "padding modules are only supported as the TensorFlow-style "
                                      "'same' padding right before a Conv2d (zeros) or a MaxPool2d (-inf)")
    if kind in (nn.BatchNorm1d, nn.BatchNorm2d):
        if not module.track_running_stats or module.running_mean is None:
            raise _unsupported(module, i, "track_running_stats=False")
        if module.momentum is None:
            raise _unsupported(module, i, "momentum=None (cumulative averages)")
        want = 2 if kind is nn.BatchNorm1d else 4
        if shape is not None and len(shape) != want:
            raise _unsupported(module, i, f"its input would have shape {shape} (BatchNorm1d over "
                                          f"(N, C, L) input is not supported)")
        # PyTorch's momentum weighs the new batch, Keras's the old statistic
        axis = -1 if (last or want == 2) else 1
        with warnings.catch_warnings():
            # a torch momentum above 0.5 is translated exactly: no "Keras meaning" warning
            warnings.simplefilter("ignore", UserWarning)
            return L.BatchNormalization(axis=axis, momentum=_flip_momentum(module.momentum),
                                        epsilon=float(module.eps), center=module.affine,
                                        scale=module.affine, **common), 1
    if kind in (nn.MaxPool2d, nn.AvgPool2d):
        return _pool_from_module(nn, module, i, L, spatial, None, shape), 1
    if kind in (nn.AdaptiveAvgPool2d, nn.AdaptiveMaxPool2d):
        if _pair_of(module.output_size) != (1, 1):
            raise _unsupported(module, i, "only output_size=1 (global pooling)")
        if kind is nn.AdaptiveMaxPool2d and module.return_indices:
            raise _unsupported(module, i, "return_indices=True")
        cls = L.GlobalAveragePooling2D if kind is nn.AdaptiveAvgPool2d else L.GlobalMaxPooling2D
        following = modules[i + 1] if i + 1 < len(modules) else None
        if type(following) is nn.Flatten and following.start_dim == 1 and following.end_dim == -1:
            return cls(**spatial), 2
        return cls(keepdims=True, **spatial), 1
    if kind is nn.Flatten:
        if module.start_dim != 1 or module.end_dim != -1:
            raise _unsupported(module, i, "only Flatten(start_dim=1, end_dim=-1)")
        return L.Flatten(**spatial), 1
    if kind is nn.Unflatten:
        if module.dim not in (1, -1) or (module.dim == -1 and shape is not None and len(shape) != 2):
            raise _unsupported(module, i, "only Unflatten(1, sizes) of (N, features) input")
        if last and len(module.unflattened_size) > 1:
            raise _unsupported(module, i, "Unflatten to images under channels_last (torch's "
                                          "(C, H, W) order); use data_format='channels_first'")
        return L.Reshape(tuple(int(s) for s in module.unflattened_size), **common), 1
    if kind is nn.Dropout:
        return L.Dropout(float(module.p), **common), 1
    if kind is nn.AlphaDropout:
        return L.AlphaDropout(float(module.p), **common), 1
    if kind is nn.Dropout2d:
        return L.SpatialDropout2D(float(module.p), **spatial), 1
    if kind is nn.ReLU:
        return L.ReLU(**common), 1
    if kind is nn.LeakyReLU:
        return L.LeakyReLU(float(module.negative_slope), **common), 1
    if kind is nn.ELU:
        return L.ELU(alpha=float(module.alpha), **common), 1
    if kind is nn.SELU:
        return L.SELU(**common), 1
    if kind is nn.Sigmoid:
        return L.Sigmoid(**common), 1
    if kind is nn.Tanh:
        return L.Tanh(**common), 1
    if kind is nn.Softmax:
        if module.dim is None:
            raise _unsupported(module, i, "Softmax needs an explicit dim")
        return L.Softmax(axis=int(module.dim), **common), 1
    if kind is nn.Identity:
        return L.Activation("linear", **common), 1
    raise _unsupported(module, i)


def _conv_from_module(module, i, padding, common, L):
    if module.groups != 1:
        raise _unsupported(module, i, "groups != 1")
    if module.padding_mode != "zeros":
        raise _unsupported(module, i, f"padding_mode={module.padding_mode!r}")
    if isinstance(padding, str):
        minnet_padding = padding
    else:
        minnet_padding = tuple(int(p) for p in padding)
        if minnet_padding == (0, 0):
            minnet_padding = "valid"
    return L.Conv2D(module.out_channels, tuple(module.kernel_size), strides=tuple(module.stride),
                    padding=minnet_padding, dilation_rate=tuple(module.dilation),
                    use_bias=module.bias is not None, **common)


def _pool_from_module(nn, module, i, L, common, padding, shape=None):
    is_max = type(module) is nn.MaxPool2d
    if module.ceil_mode:
        raise _unsupported(module, i, "ceil_mode=True")
    if is_max and _pair_of(module.dilation) != (1, 1):
        raise _unsupported(module, i, "dilation != 1")
    if not is_max and module.divisor_override is not None:
        raise _unsupported(module, i, "divisor_override")
    pool = _pair_of(module.kernel_size)
    strides = _pair_of(module.stride or module.kernel_size)
    if padding is None:
        padding = _pair_of(module.padding)
        if padding == (0, 0):
            padding = "valid"
        elif not is_max and not module.count_include_pad:
            # Keras "same" leaves the padding out of the mean; only a symmetric "same" matches.
            ph, pw = padding
            if not _is_same_padding((pw, pw, ph, ph), shape, pool, strides, (1, 1)):
                raise _unsupported(module, i, "count_include_pad=False with a padding that is not "
                                              "Keras's 'same' padding for this input")
            padding = "same"
    cls = L.MaxPooling2D if is_max else L.AveragePooling2D
    return cls(pool, strides=strides, padding=padding, **common)


def from_torch(module, input_shape, data_format=None):
    """A built minnet ``Sequential`` equivalent to a ``torch.nn.Sequential``.

    The inverse of ``to_torch``: weights, BatchNorm buffers (``num_batches_tracked`` is kept
    on the layer), train/eval mode and dtype are copied.  Supported modules: Linear,
    Conv2d (zeros padding, groups 1), BatchNorm1d/2d, ReLU, LeakyReLU, ELU, SELU, Sigmoid,
    Tanh, Softmax(dim), Identity, MaxPool2d, AvgPool2d, AdaptiveAvgPool2d(1) + Flatten,
    Flatten, Unflatten, Dropout, AlphaDropout, Dropout2d, and the ``ZeroPad2d`` + ``Conv2d``
    pair ``to_torch`` writes for a strided ``"same"`` convolution.  Each module becomes its
    own layer (a Linear followed by a ReLU gives Dense + ReLU), so
    ``state_dict(from_torch(m, shape))`` has the keys of ``m.state_dict()``.

    Args:
        module: ``torch.nn.Sequential``.
        input_shape: the shape of one sample *as the torch module takes it*, without the
            batch dimension: ``(1, 28, 28)`` (C, H, W for images).
        data_format: the layout of the minnet model: ``"channels_last"``,
            ``"channels_first"`` or None (``mn.config.image_data_format()``).  Under
            channels_last an image model takes ``(N, H, W, C)``: BatchNorm2d becomes
            ``BatchNormalization(axis=-1)`` and a Linear after ``Flatten`` gets its columns
            permuted from (C, H, W) to (H, W, C) order, so the two compute the same.

    Returns:
        ``minnet.Sequential``, built for ``(None, *input_shape)`` (channels_last images:
        ``(None, H, W, C)``).

    Raises:
        ValueError: an unsupported module (the message names it and its index), or an
            invalid ``input_shape``.
        TypeError: ``module`` is not a ``torch.nn.Sequential``.

    Shape:
        The model takes ``(N, *input_shape)`` as the torch module does.

    Example:
        >>> model = interop.from_torch(torch.nn.Sequential(torch.nn.Linear(4, 2)), (4,))
        >>> model.layers[0].kernel.shape
        (2, 4)
    """
    torch = _torch()
    nn = torch.nn
    if not isinstance(module, nn.Sequential):
        raise TypeError(f"Invalid value for argument `module`: expected a torch.nn.Sequential. "
                        f"Received: {type(module).__name__} (wrap it: torch.nn.Sequential(module)).")
    if isinstance(input_shape, (int, np.integer)) and not isinstance(input_shape, bool):
        input_shape = (int(input_shape),)
    if not isinstance(input_shape, (tuple, list)) or not input_shape or not all(
            isinstance(s, (int, np.integer)) and not isinstance(s, bool) and s > 0 for s in input_shape):
        raise ValueError(f"Invalid value for argument `input_shape`: expected a tuple of positive "
                         f"ints without the batch dimension, e.g. (1, 28, 28). "
                         f"Received: input_shape={input_shape!r}")
    data_format = normalize_data_format(data_format)
    last = data_format == "channels_last"
    dtype = _module_dtype(module)
    modules = list(module.children())
    sample = tuple(int(s) for s in input_shape)
    if last and len(sample) == 3:
        sample = sample[1:] + sample[:1]           # (C, H, W) -> (H, W, C)
    model = Sequential([L.Input(sample, dtype=dtype)], dtype=dtype)
    shape = model._build_input_shape
    pairs = []                                     # (layer, the torch module holding its state)
    i = 0
    while i < len(modules):
        torch_shape = shape
        if last and shape is not None and len(shape) == 4:
            torch_shape = (shape[0], shape[3], shape[1], shape[2])
        try:
            layer, used = _layer_from_module(nn, modules, i, torch_shape, dtype, L, data_format)
        except ValueError as error:
            if str(error).startswith("Module "):
                raise
            raise ValueError(f"Module {i} of the torch Sequential ({modules[i]!r}) cannot be "
                             f"translated: {error}") from error
        source = modules[i + used - 1]             # the module holding the state
        try:
            model.add(layer)
        except ValueError as error:
            raise ValueError(f"Module {i} of the torch Sequential ({modules[i]!r}) does not fit "
                             f"input of shape {shape}: {error}") from error
        shape = model._output_shapes[-1]
        pairs.append((layer, source, i + used - 1))
        i += used
    # Copy the state through the same slots (and column permutations) to_torch uses.
    steps_of = {}
    for step in _plan(model):
        steps_of.setdefault(id(step.layer), []).append(step)
    with torch.no_grad():
        for layer, source, index in pairs:
            for step in steps_of.get(id(layer), []):
                for suffix, weight, default, is_param in _slots(step):
                    tensor = getattr(source, suffix, None)
                    if tensor is None:
                        continue
                    value = _from_torch_value(step, suffix, tensor.detach().cpu().numpy())
                    if weight is not None and value.shape != tuple(weight.shape):
                        raise ValueError(
                            f"Module {index} of the torch Sequential ({modules[index]!r}) has "
                            f"{suffix} of shape {tuple(value.shape)}, but for input of shape "
                            f"{layer._build_input_shape} minnet's layer '{layer.name}' needs "
                            f"{tuple(weight.shape)}: check `input_shape`.")
                    if weight is not None:
                        weight.data[...] = value
                        weight._bump_version()
                        if is_param:
                            weight.requires_grad = bool(tensor.requires_grad)
                    elif suffix == "num_batches_tracked":
                        _set_num_batches_tracked(layer, int(value))
            layer.train(bool(source.training))
    model.training = bool(module.training)
    return model


# ---------------------------------------------------------------------------- compare
class ComparisonRow(tuple):
    """``(name, max_abs, max_rel, ok)`` for one compared tensor."""

    __slots__ = ()

    def __new__(cls, name, max_abs, max_rel, ok):
        return super().__new__(cls, (name, float(max_abs), float(max_rel), bool(ok)))

    name = property(lambda self: self[0])
    max_abs = property(lambda self: self[1])
    max_rel = property(lambda self: self[2])
    ok = property(lambda self: self[3])


class ComparisonReport:
    """What ``compare`` found: one row per tensor and a verdict.

    Attributes:
        rows: list of ``ComparisonRow(name, max_abs, max_rel, ok)``; ``max_rel`` is the
            largest ``|mine - torch| / (|torch| + atol)``.
        ok: True when every row is within ``atol + rtol * |torch value|``.
        rtol, atol: the tolerances used.
        dtype: the dtype compared.
        notes: extra remarks (e.g. dropout active in training mode).
    """

    def __init__(self, rows, rtol, atol, dtype, notes=()):
        self.rows = list(rows)
        self.rtol = float(rtol)
        self.atol = float(atol)
        self.dtype = str(dtype)
        self.notes = list(notes)

    @property
    def ok(self):
        return all(row.ok for row in self.rows)

    @property
    def failed(self):
        """Names of the rows that are out of tolerance."""
        return [row.name for row in self.rows if not row.ok]

    def __bool__(self):
        return self.ok

    def __getitem__(self, name):
        for row in self.rows:
            if row.name == name:
                return row
        raise KeyError(name)

    def __str__(self):
        width = max([len("tensor")] + [len(row.name) for row in self.rows])
        lines = [f"{'tensor':<{width}}  {'max abs diff':>12}  {'max rel diff':>12}  ok",
                 "-" * (width + 34)]
        for row in self.rows:
            lines.append(f"{row.name:<{width}}  {row.max_abs:>12.3e}  {row.max_rel:>12.3e}  "
                         f"{'yes' if row.ok else 'NO'}")
        lines.append("-" * (width + 34))
        verdict = "OK" if self.ok else f"MISMATCH in {', '.join(self.failed)}"
        lines.append(f"{verdict} ({self.dtype}, rtol={self.rtol:g}, atol={self.atol:g})")
        lines.extend(f"note: {note}" for note in self.notes)
        return "\n".join(lines)

    def __repr__(self):
        return f"<ComparisonReport ok={self.ok} rows={len(self.rows)} failed={self.failed}>"


def _row(name, mine, theirs, rtol, atol):
    if mine is None or theirs is None:
        ok = mine is None and theirs is None
        return ComparisonRow(name, 0.0 if ok else math.inf, 0.0 if ok else math.inf, ok)
    mine = np.asarray(mine, dtype=np.float64)
    theirs = np.asarray(theirs, dtype=np.float64)
    if mine.shape != theirs.shape:
        return ComparisonRow(name, math.inf, math.inf, False)
    if mine.size == 0:
        return ComparisonRow(name, 0.0, 0.0, True)
    diff = np.abs(mine - theirs)
    scale = np.abs(theirs)
    # Relative to |torch value| + atol, so entries that should be 0 (and are, up to rounding)
    # do not show a relative difference of 1.
    rel = diff / (scale + max(atol, np.finfo(np.float64).tiny))
    ok = bool(np.all(diff <= atol + rtol * scale) and np.array_equal(np.isnan(mine), np.isnan(theirs)))
    return ComparisonRow(name, float(np.nanmax(diff)), float(np.nanmax(rel)), ok)


def _check_loss(loss, y):
    key = "sum" if loss is None else loss
    if key not in ("sum", "mse", "cross_entropy"):
        raise ValueError(f"Invalid value for argument `loss`: expected None/'sum' (sum of the "
                         f"outputs), 'mse' or 'cross_entropy'. Received: loss={loss!r}")
    if key != "sum" and y is None:
        raise ValueError(f"Argument `y` is required for loss={key!r}.")
    return key


def compare(model, torch_module, x, y=None, loss=None, rtol=None, atol=None):
    """Run a minnet model and a torch module on the same input and report the differences.

    Both are run as they are (their current train/eval modes; a training-mode forward
    updates BatchNorm running statistics, as any forward would).  Existing ``.grad``
    values are put back afterwards.  Compared, tensor by tensor (names are PyTorch
    ``state_dict`` names, numbered as ``to_torch`` numbers the model's modules):

    * ``output``: the forward result;
    * ``input.grad``: the gradient of the loss with respect to ``x``;
    * ``grad/<name>``: every parameter gradient;
    * ``param/<name>``: every parameter itself (a weight that differs is named here);
    * ``sgd_step/<name>``: every parameter after one SGD step (``lr=0.1``), done on copies
      with ``minnet.optimizers.SGD`` and ``torch.optim.SGD``;
    * ``buffer/<name>``: BatchNorm ``running_mean`` / ``running_var`` after the forward.

    Args:
        model: a minnet ``Sequential`` (or layer).
        torch_module: the torch module to compare against (e.g. ``to_torch(model)``).
        x: input batch (ndarray), cast to the model's dtype.
        y: targets, needed for ``loss="mse"`` (same shape as the output) or
            ``"cross_entropy"`` (int labels ``(N,)`` or probabilities ``(N, C)``).
        loss: ``None``/``"sum"`` (default: the sum of the outputs), ``"mse"`` or
            ``"cross_entropy"`` (mean reductions).
        rtol, atol: tolerances; defaults per dtype: float32 ``1e-4``/``1e-5``, float64
            ``1e-10``/``1e-12``.  A row is ok when ``|mine - torch| <= atol + rtol*|torch|``
            everywhere.

    Returns:
        ``ComparisonReport`` (``.rows``, ``.ok``; ``str()`` is a table; truthy when ok).

    Raises:
        ValueError: the torch module lacks a parameter the model has (another architecture),
            or bad ``loss``/``y``.

    Shape:
        ``x``: ``(N, *input_shape)`` in the model's layout; a channels_last model's NHWC
        images are given to the torch module as NCHW (``x.transpose(0, 3, 1, 2)``), and
        4-D outputs and ``input.grad`` are permuted back before comparing.

    Example:
        >>> report = interop.compare(model, interop.to_torch(model), x)
        >>> print(report); assert report.ok
    """
    torch = _torch()
    loss = _check_loss(loss, y)
    state = _LayoutState()
    _plan(model, state)
    slots = _named_slots(model)
    layers = _model_layers(model)
    dtype = layers[0].dtype if layers else np.dtype(getattr(model, "dtype", "float32"))
    default_rtol, default_atol = TOLERANCES[np.dtype(dtype).name]
    rtol = default_rtol if rtol is None else float(rtol)
    atol = default_atol if atol is None else float(atol)
    torch_dtype = _torch_dtype(torch, dtype)

    torch_params = dict(torch_module.named_parameters())
    torch_buffers = dict(torch_module.named_buffers())
    for key, step, suffix, weight, _, is_param in slots:
        table = torch_params if is_param else torch_buffers
        if key not in table:
            raise ValueError(f"Invalid value for argument `torch_module`: it has no "
                             f"{'parameter' if is_param else 'buffer'} {key!r} (from layer "
                             f"'{step.layer.name}'). compare() expects the module numbering of "
                             f"to_torch(model); its parameters are {sorted(torch_params)}.")

    notes = []
    if any(type(l).__name__ in ("Dropout", "AlphaDropout", "SpatialDropout2D") and l.training
           and l.rate > 0 for l in layers):
        notes.append("dropout is active (training mode): the two frameworks draw different masks, "
                     "so outputs differ; compare in eval mode or with rate 0.")

    x_array = np.ascontiguousarray(np.asarray(x), dtype=dtype)
    # channels_last images cross the boundary as NCHW; image outputs and gradients come back
    nhwc_in = state.input_layout == "channels_last" and x_array.ndim == 4
    nhwc_out = state.layout == "channels_last"

    def back(array, nhwc):
        return None if array is None else (
            np.ascontiguousarray(array.transpose(0, 2, 3, 1)) if nhwc and array.ndim == 4
            else array)
    minnet_params = [w for *_, w, _, p in slots if p and w is not None]
    saved_minnet = [(w, w.grad) for w in minnet_params]
    saved_torch = [(p, p.grad) for p in torch_module.parameters()]
    try:
        for w in minnet_params:
            w.grad = None
        for p in torch_module.parameters():
            p.grad = None
        # ---- minnet
        with enable_grad():
            x_mn = Tensor(x_array.copy(), requires_grad=True)
            out_mn = model(x_mn)
            loss_mn = _minnet_loss(out_mn, y, loss)
            loss_mn.backward()
        # ---- torch
        with torch.enable_grad():
            x_torch = x_array.transpose(0, 3, 1, 2) if nhwc_in else x_array
            x_t = torch.tensor(np.ascontiguousarray(x_torch), dtype=torch_dtype,
                               requires_grad=True)
            out_t = torch_module(x_t)
            loss_t = _torch_loss(torch, out_t, y, loss)
            loss_t.backward()

        rows = [_row("output", out_mn.data, back(out_t.detach().cpu().numpy(), nhwc_out),
                     rtol, atol),
                _row("loss", np.asarray(loss_mn.data), loss_t.detach().cpu().numpy(), rtol, atol),
                _row("input.grad", x_mn.grad,
                     None if x_t.grad is None else back(x_t.grad.cpu().numpy(), nhwc_in),
                     rtol, atol)]
        step_pairs, param_rows = [], []
        for key, step, suffix, weight, _, is_param in slots:
            if not is_param or weight is None:
                continue
            theirs = torch_params[key]
            grad_t = None if theirs.grad is None else theirs.grad.detach().cpu().numpy()
            param_rows.append(_row(f"param/{key}", _to_torch_value(step, suffix, weight.data),
                                   theirs.detach().cpu().numpy(), rtol, atol))
            grad_mn = None if weight.grad is None else _to_torch_value(step, suffix, weight.grad)
            rows.append(_row(f"grad/{key}", grad_mn, grad_t, rtol, atol))
            if weight.grad is not None and grad_t is not None:
                step_pairs.append((key, _to_torch_value(step, suffix, weight.data), grad_mn,
                                   theirs))
        rows.extend(_sgd_step_rows(torch, step_pairs, rtol, atol))
        rows.extend(param_rows)
        for key, step, suffix, weight, _, is_param in slots:
            if not is_param and weight is not None:
                rows.append(_row(f"buffer/{key}", weight.data,
                                 torch_buffers[key].detach().cpu().numpy(), rtol, atol))
    finally:
        for w, grad in saved_minnet:
            w.grad = grad
        for p, grad in saved_torch:
            p.grad = grad
    return ComparisonReport(rows, rtol, atol, np.dtype(dtype).name, notes)


def _minnet_loss(out, y, loss):
    if loss == "sum":
        return out.sum()
    if loss == "mse":
        return F.mse_loss(out, np.asarray(y, dtype=out.dtype))
    target = np.asarray(y)
    if target.dtype.kind == "f":
        target = target.astype(out.dtype)
    return F.cross_entropy(out, target)


def _torch_loss(torch, out, y, loss):
    if loss == "sum":
        return out.sum()
    if loss == "mse":
        return torch.nn.functional.mse_loss(out, torch.tensor(np.asarray(y), dtype=out.dtype))
    target = np.asarray(y)
    if target.dtype.kind == "f":
        target_t = torch.tensor(target, dtype=out.dtype)
    else:
        target_t = torch.tensor(target.astype(np.int64))
    return torch.nn.functional.cross_entropy(out, target_t)


def _sgd_step_rows(torch, pairs, rtol, atol):
    """One SGD step (lr 0.1) on copies of each parameter, minnet's SGD against torch's."""
    if not pairs:
        return []
    mine, theirs = [], []
    for _, data, grad, param in pairs:
        copy = Parameter(np.array(data, copy=True))
        copy.grad = np.array(grad, copy=True)
        mine.append(copy)
        twin = param.detach().clone().requires_grad_(True)
        twin.grad = param.grad.detach().clone()
        theirs.append(twin)
    SGD(mine, learning_rate=0.1).step()
    torch.optim.SGD(theirs, lr=0.1).step()
    return [_row(f"sgd_step/{key}", a.data, b.detach().cpu().numpy(), rtol, atol)
            for (key, *_), a, b in zip(pairs, mine, theirs)]
