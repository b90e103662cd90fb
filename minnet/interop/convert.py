"""Conversion: ``to_torch`` (a minnet model -> ``torch.nn.Sequential``) and ``from_torch``.

``to_torch`` turns the plan's steps (``minnet.interop.plan``) into torch modules and copies
the weights through the plan's slots; ``from_torch`` maps each torch module back to a
minnet layer, then copies the state through the same slots, so the two are inverses.
PyTorch is imported when a function runs (``torch_support.require_torch``).
"""
import inspect
import math
import warnings
from typing import Any, NamedTuple

import numpy as np

from minnet import layers as L
from minnet.config import normalize_data_format
from minnet.interop.plan import (flip_momentum, from_torch_value, plan, same_pads,
                                 set_num_batches_tracked, slots, to_torch_value)
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


def _recurrent_from_module(nn, module, common):
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
    top, bottom = same_pads(shape[2], kernel[0], stride[0], dilation[0])
    left, right = same_pads(shape[3], kernel[1], stride[1], dilation[1])
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
        return _recurrent_from_module(nn, module, common), 1
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
            return L.BatchNormalization(axis=axis, momentum=flip_momentum(module.momentum),
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
        pairs.append(Translated(layer, source, i + used - 1))
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
                    tensor = getattr(source, suffix, None)
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
