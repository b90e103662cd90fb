"""Conversion: ``to_torch`` (a minnet model -> ``torch.nn.Sequential``) and ``from_torch``.

``to_torch`` turns the plan's steps (``minnet.interop.plan``) into torch modules and copies
the weights through the plan's slots; ``from_torch`` maps each torch module back to a
minnet layer, then copies the state through the same slots, so the two are inverses.
PyTorch is imported when a function runs (``torch_support.require_torch``).
"""
from typing import Any, NamedTuple

import numpy as np

from minnet import layers as L
from minnet.config import normalize_data_format
from minnet.interop.plan import (from_torch_value, plan, set_num_batches_tracked, slots,
                                 to_torch_value)
from minnet.interop.layers_from_torch import layer_from_module, module_dtype
from minnet.interop.torch_modules import build_module
from minnet.interop.torch_support import require_torch, torch_dtype
from minnet.models import Sequential

__all__ = ["to_torch", "from_torch"]


class Translated(NamedTuple):
    """A minnet layer made by ``from_torch``, the torch module holding its state, and that
    module's index in the torch Sequential."""

    layer: Any
    source: Any
    index: int


def holder(modules):
    """The module of a group that holds state (the last one when none does)."""
    for module in modules:
        if any(True for _ in module.parameters()) or any(True for _ in module.buffers()):
            return module
    return modules[-1]


def attribute(module, dotted):
    """``module.a.b`` for ``"a.b"`` (a state_dict suffix inside a nested module), or None."""
    for name in dotted.split("."):
        module = getattr(module, name, None)
        if module is None:
            return None
    return module


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
    skipped.  Also: Conv2D(groups) / DepthwiseConv2D -> Conv2d(groups), SeparableConv2D ->
    an ``nn.Sequential`` of a depthwise and a 1x1 Conv2d, Conv2DTranspose ->
    ConvTranspose2d (+ a cropping ZeroPad2d for Keras's "same"), Conv1D and the 1-D
    poolings -> Conv1d / MaxPool1d / AvgPool1d / AdaptiveAvg/MaxPool1d(1) (minnet's
    ``Keras*`` subclasses where they read (N, L, C) or pad unevenly), LayerNormalization ->
    LayerNorm, GroupNormalization -> GroupNorm, UpSampling2D -> Upsample, ZeroPadding2D /
    Cropping2D -> ZeroPad2d (negative to crop), PReLU -> PReLU, Embedding -> Embedding
    (docs/moving_to_pytorch.md has the table).

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
    steps = plan(model)
    torch = require_torch()
    nn = torch.nn
    modules = []
    with torch.no_grad():
        for step in steps:
            module = build_module(nn, step)
            module.to(torch_dtype(torch, step.layer.dtype))
            params = dict(module.named_parameters())
            buffers = dict(module.named_buffers())
            for slot in slots(step):
                weight = slot.weight
                target = params[slot.suffix] if slot.is_parameter else buffers[slot.suffix]
                source = (to_torch_value(step, slot.suffix, weight.data) if weight is not None
                          else slot.default)
                target.copy_(torch.from_numpy(np.array(source, copy=True)))
                if slot.is_parameter:
                    target.requires_grad_(bool(weight is not None and weight.requires_grad))
            module.train(bool(step.layer.training))
            modules.append(module)
    sequential = nn.Sequential(*modules)
    sequential.training = bool(getattr(model, "training", False))
    return sequential


def from_torch(module, input_shape, data_format=None):
    """A built minnet ``Sequential`` equivalent to a ``torch.nn.Sequential``.

    The inverse of ``to_torch``: weights, BatchNorm buffers (``num_batches_tracked`` is kept
    on the layer), train/eval mode and dtype are copied.  Supported modules: Linear,
    Conv2d (zeros padding; ``groups`` = in_channels gives DepthwiseConv2D),
    ConvTranspose2d, Conv1d, BatchNorm1d/2d, LayerNorm, GroupNorm, ReLU, LeakyReLU, PReLU,
    ELU, SELU, Sigmoid, Tanh, Softmax(dim), Identity, MaxPool1d/2d, AvgPool1d/2d,
    AdaptiveAvg/MaxPool1d/2d(1) (+ Flatten), Upsample, ZeroPad2d, Flatten, Unflatten,
    Embedding, Dropout, AlphaDropout, Dropout2d, RNN/LSTM/GRU, the ``ZeroPad2d`` +
    ``Conv2d`` pair ``to_torch`` writes for a strided ``"same"`` convolution and the
    ``nn.Sequential`` it writes for a SeparableConv2D.  A plain Conv1d or 1-D pooling
    gives a channels_first layer (the model takes ``(N, C, L)`` as torch does); minnet's
    ``Keras*`` subclasses keep their ``channels_last``.  Each module becomes its
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
    torch = require_torch()
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
    dtype = module_dtype(module)
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
            layer, used = layer_from_module(nn, modules, i, torch_shape, dtype, data_format)
        except ValueError as error:
            if str(error).startswith("Module "):
                raise
            raise ValueError(f"Module {i} of the torch Sequential ({modules[i]!r}) cannot be "
                             f"translated: {error}") from error
        source = holder(modules[i:i + used])       # the module holding the state
        try:
            model.add(layer)
        except ValueError as error:
            raise ValueError(f"Module {i} of the torch Sequential ({modules[i]!r}) does not fit "
                             f"input of shape {shape}: {error}") from error
        shape = model._output_shapes[-1]
        pairs.append(Translated(layer, source, i + modules[i:i + used].index(source)))
        i += used
    # Copy the state through the same slots (and column permutations) to_torch uses.
    steps_of = {}
    for step in plan(model):
        steps_of.setdefault(id(step.layer), []).append(step)
    with torch.no_grad():
        for layer, source, index in pairs:
            for step in steps_of.get(id(layer), []):
                for slot in slots(step):
                    suffix, weight = slot.suffix, slot.weight
                    tensor = attribute(source, suffix)
                    if tensor is None:
                        continue
                    value = from_torch_value(step, suffix, tensor.detach().cpu().numpy())
                    if weight is not None and value.shape != tuple(weight.shape):
                        raise ValueError(
                            f"Module {index} of the torch Sequential ({modules[index]!r}) has "
                            f"{suffix} of shape {tuple(value.shape)}, but for input of shape "
                            f"{layer._build_input_shape} minnet's layer '{layer.name}' needs "
                            f"{tuple(weight.shape)}: check `input_shape`.")
                    if weight is not None:
                        weight.data[...] = value
                        weight._bump_version()
                        if slot.is_parameter:
                            weight.requires_grad = bool(tensor.requires_grad)
                    elif suffix == "num_batches_tracked":
                        set_num_batches_tracked(layer, int(value))
            layer.train(bool(source.training))
    model.training = bool(module.training)
    return model
