"""``from_torch``'s dictionary: the minnet layer for each torch module (or pair of modules).

``layer_from_module(nn, modules, i, shape, dtype, data_format)`` reads ``modules[i]`` (and
the module after it where two make one layer, e.g. ``ZeroPad2d`` + ``Conv2d`` for a strided
``"same"`` convolution) and returns the layer, unbuilt, and how many modules it used.  The
weights are copied afterwards by ``from_torch``, through the plan's slots.
"""
import math
import warnings

from minnet import layers as L
from minnet.interop.plan import (TransposedGeometry, flip_momentum, same_pads,
                                 transposed_geometry)

__all__ = ["layer_from_module", "module_dtype", "unsupported"]


def recurrent_from_module(nn, module, common):
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


def module_dtype(module):
    import torch
    for tensor in list(module.parameters()) + list(module.buffers()):
        if tensor.is_floating_point():
            if tensor.dtype not in (torch.float32, torch.float64):
                raise ValueError(f"Invalid value for argument `module`: minnet supports float32 and "
                                 f"float64 weights. Received a module with {tensor.dtype} weights; "
                                 f"convert it with `module.float()` first.")
            return "float64" if tensor.dtype == torch.float64 else "float32"
    return "float32"


def pair_of(value):
    return tuple(value) if isinstance(value, (tuple, list)) else (value, value)


SUPPORTED_MODULES = (
    "Linear, Conv2d (groups too), ConvTranspose2d (+ a cropping ZeroPad2d), Conv1d, BatchNorm1d, "
    "BatchNorm2d, LayerNorm, GroupNorm, ReLU, LeakyReLU, PReLU, ELU, SELU, Sigmoid, Tanh, "
    "Softmax(dim=...), Identity, MaxPool1d/2d, AvgPool1d/2d, AdaptiveAvgPool1d/2d(1), "
    "AdaptiveMaxPool1d/2d(1), Upsample, ZeroPad2d, Flatten, Unflatten, Embedding, Dropout, "
    "AlphaDropout, Dropout2d, RNN/LSTM/GRU (batch_first), and the nn.Sequential of a depthwise "
    "and a 1x1 Conv2d that to_torch writes for SeparableConv2D")


def unsupported(module, index, why=""):
    return ValueError(f"Module {index} of the torch Sequential ({module!r}) has no minnet twin"
                      + (f": {why}" if why else "") + f". Supported: {SUPPORTED_MODULES}.")


def is_same_padding(pads, shape, kernel, stride, dilation):
    if shape is None or len(shape) != 4 or shape[2] is None:
        return False
    top, bottom = same_pads(shape[2], kernel[0], stride[0], dilation[0])
    left, right = same_pads(shape[3], kernel[1], stride[1], dilation[1])
    return tuple(pads) == (left, right, top, bottom)


def layer_from_module(nn, modules, i, shape, dtype, data_format="channels_first"):
    """The minnet layer for ``modules[i]`` (and how many modules it used).

    ``shape`` is the input shape as the torch module sees it (NCHW for images).
    """
    found = more_layer_from_module(nn, modules, i, shape, dtype, data_format)
    if found is not None:
        return found
    module = modules[i]
    kind = type(module)
    common = {"dtype": dtype}
    spatial = {"dtype": dtype, "data_format": data_format}
    last = data_format == "channels_last"
    if kind is nn.Linear:
        return L.Dense(module.out_features, use_bias=module.bias is not None, **common), 1
    if isinstance(module, (nn.RNN, nn.LSTM, nn.GRU)):
        return recurrent_from_module(nn, module, common), 1
    if kind is nn.Conv2d:
        return conv_from_module(module, i, module.padding,
                                 spatial), 1
    if kind in (nn.ZeroPad2d, nn.ConstantPad2d):
        following = modules[i + 1] if i + 1 < len(modules) else None
        pads = tuple(module.padding)
        value = float(getattr(module, "value", 0.0))
        if type(following) is nn.Conv2d and value == 0.0 and tuple(following.padding) == (0, 0) \
                and is_same_padding(pads, shape, following.kernel_size, following.stride,
                                     following.dilation):
            return conv_from_module(following, i + 1, "same",
                                     spatial), 2
        if type(following) is nn.MaxPool2d and value == -math.inf and pair_of(following.padding) == (0, 0) \
                and is_same_padding(pads, shape, pair_of(following.kernel_size),
                                     pair_of(following.stride or following.kernel_size), (1, 1)):
            return pool_from_module(nn, following, i + 1, spatial, "same", shape), 2
        if value == 0.0 and len(pads) == 4:
            left, right, top, bottom = (int(p) for p in pads)
            if min(pads) >= 0:
                return L.ZeroPadding2D(((top, bottom), (left, right)), **spatial), 1
            if max(pads) <= 0:               # negative padding crops
                return L.Cropping2D(((-top, -bottom), (-left, -right)), **spatial), 1
        raise unsupported(module, i, "a padding module is a ZeroPad2d (all pads >= 0, or all "
                                      "<= 0 to crop), or the TensorFlow-style 'same' padding "
                                      "right before a Conv2d (zeros) or a MaxPool2d (-inf)")
    if kind in (nn.BatchNorm1d, nn.BatchNorm2d):
        if not module.track_running_stats or module.running_mean is None:
            raise unsupported(module, i, "track_running_stats=False")
        if module.momentum is None:
            raise unsupported(module, i, "momentum=None (cumulative averages)")
        want = 2 if kind is nn.BatchNorm1d else 4
        if shape is not None and len(shape) != want:
            raise unsupported(module, i, f"its input would have shape {shape} (BatchNorm1d over "
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
        return pool_from_module(nn, module, i, spatial, None, shape), 1
    if kind in (nn.AdaptiveAvgPool2d, nn.AdaptiveMaxPool2d):
        if pair_of(module.output_size) != (1, 1):
            raise unsupported(module, i, "only output_size=1 (global pooling)")
        if kind is nn.AdaptiveMaxPool2d and module.return_indices:
            raise unsupported(module, i, "return_indices=True")
        cls = L.GlobalAveragePooling2D if kind is nn.AdaptiveAvgPool2d else L.GlobalMaxPooling2D
        following = modules[i + 1] if i + 1 < len(modules) else None
        if type(following) is nn.Flatten and following.start_dim == 1 and following.end_dim == -1:
            return cls(**spatial), 2
        return cls(keepdims=True, **spatial), 1
    if kind is nn.Flatten:
        if module.start_dim != 1 or module.end_dim != -1:
            raise unsupported(module, i, "only Flatten(start_dim=1, end_dim=-1)")
        return L.Flatten(**spatial), 1
    if kind is nn.Unflatten:
        if module.dim not in (1, -1) or (module.dim == -1 and shape is not None and len(shape) != 2):
            raise unsupported(module, i, "only Unflatten(1, sizes) of (N, features) input")
        if last and len(module.unflattened_size) > 1:
            raise unsupported(module, i, "Unflatten to images under channels_last (torch's "
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
            raise unsupported(module, i, "Softmax needs an explicit dim")
        return L.Softmax(axis=int(module.dim), **common), 1
    if kind is nn.Identity:
        return L.Activation("linear", **common), 1
    raise unsupported(module, i)


def conv_from_module(module, i, padding, common):
    if module.padding_mode != "zeros":
        raise unsupported(module, i, f"padding_mode={module.padding_mode!r}")
    if isinstance(padding, str):
        minnet_padding = padding
    else:
        minnet_padding = tuple(int(p) for p in padding)
        if minnet_padding == (0, 0):
            minnet_padding = "valid"
    geometry = dict(strides=tuple(module.stride), padding=minnet_padding,
                    dilation_rate=tuple(module.dilation), use_bias=module.bias is not None,
                    **common)
    if module.groups > 1 and module.groups == module.in_channels:
        # one group per input channel: Keras's DepthwiseConv2D
        return L.DepthwiseConv2D(tuple(module.kernel_size),
                                 depth_multiplier=module.out_channels // module.in_channels,
                                 **geometry)
    return L.Conv2D(module.out_channels, tuple(module.kernel_size), groups=module.groups,
                    **geometry)


def pool_from_module(nn, module, i, common, padding, shape=None):
    is_max = type(module) is nn.MaxPool2d
    if module.ceil_mode:
        raise unsupported(module, i, "ceil_mode=True")
    if is_max and pair_of(module.dilation) != (1, 1):
        raise unsupported(module, i, "dilation != 1")
    if not is_max and module.divisor_override is not None:
        raise unsupported(module, i, "divisor_override")
    pool = pair_of(module.kernel_size)
    strides = pair_of(module.stride or module.kernel_size)
    if padding is None:
        padding = pair_of(module.padding)
        if padding == (0, 0):
            padding = "valid"
        elif not is_max and not module.count_include_pad:
            # Keras "same" leaves the padding out of the mean; only a symmetric "same" matches.
            ph, pw = padding
            if not is_same_padding((pw, pw, ph, ph), shape, pool, strides, (1, 1)):
                raise unsupported(module, i, "count_include_pad=False with a padding that is not "
                                              "Keras's 'same' padding for this input")
            padding = "same"
    cls = L.MaxPooling2D if is_max else L.AveragePooling2D
    return cls(pool, strides=strides, padding=padding, **common)




# ---------------------------------------------------------------------------- more modules
def more_layer_from_module(nn, modules, i, shape, dtype, data_format):
    """The layers added after the first converter: None when ``modules[i]`` is not one."""
    module = modules[i]
    kind = type(module)
    common = {"dtype": dtype}
    spatial = {"dtype": dtype, "data_format": data_format}
    last = data_format == "channels_last"
    following = modules[i + 1] if i + 1 < len(modules) else None
    if kind is nn.ConvTranspose2d:
        return transposed_from_module(nn, module, following, i, shape, spatial)
    if kind is nn.Sequential:
        return separable_from_module(nn, module, i, spatial), 1
    if kind is nn.LayerNorm:
        count = len(module.normalized_shape)
        if shape is None or count >= len(shape) or tuple(shape[-count:]) != tuple(
                module.normalized_shape):
            raise unsupported(module, i, f"normalized_shape {tuple(module.normalized_shape)} "
                                         f"does not end the input shape {shape}")
        if last and len(shape) == 4 and count != 3:
            raise unsupported(module, i, "LayerNorm over part of NCHW images under "
                                         "channels_last; use data_format='channels_first'")
        affine = bool(module.elementwise_affine)
        center = affine and getattr(module, "bias", None) is not None
        axes = list(range(len(shape) - count, len(shape)))
        return L.LayerNormalization(axis=axes if count > 1 else -1, epsilon=float(module.eps),
                                    center=center, scale=affine, **common), 1
    if kind is nn.GroupNorm:
        axis = -1 if (last and shape is not None and len(shape) == 4) else 1
        return L.GroupNormalization(module.num_groups, axis=axis, epsilon=float(module.eps),
                                    center=bool(module.affine), scale=bool(module.affine),
                                    **common), 1
    if kind is nn.Upsample:
        return upsample_from_module(module, i, spatial), 1
    if kind is nn.PReLU:
        if shape is None:
            raise unsupported(module, i, "unknown input shape")
        rank = len(shape) - 1
        if module.num_parameters == 1:
            shared = list(range(1, rank + 1))
        else:
            channel = rank if (last and rank == 3) else 1
            shared = [a for a in range(1, rank + 1) if a != channel] or None
        with_init = {"alpha_initializer": "zeros"}
        return L.PReLU(shared_axes=shared, **with_init, **common), 1
    if kind is nn.Embedding:
        if module.padding_idx is not None or module.max_norm is not None or module.sparse:
            raise unsupported(module, i, "padding_idx, max_norm and sparse have no minnet twin")
        return L.Embedding(module.num_embeddings, module.embedding_dim, **common), 1
    if isinstance(module, (nn.Conv1d, nn.MaxPool1d, nn.AvgPool1d, nn.AdaptiveAvgPool1d,
                           nn.AdaptiveMaxPool1d)):
        return one_d_from_module(nn, module, following, i, shape, dtype)
    return None


def transposed_from_module(nn, module, following, i, shape, spatial):
    """``ConvTranspose2d`` [+ a cropping ZeroPad2d] -> the Conv2DTranspose with that geometry."""
    if module.padding_mode != "zeros" or module.groups != 1:
        raise unsupported(module, i, "padding_mode other than 'zeros' or groups != 1")
    crop = (0, 0, 0, 0)
    used = 1
    if type(following) is nn.ZeroPad2d and max(following.padding) <= 0 and \
            following.padding[0] == 0 and following.padding[2] == 0:
        crop, used = tuple(int(p) for p in following.padding), 2
    want = TransposedGeometry(tuple(module.padding), tuple(module.output_padding), crop)
    limits = [max(s, d) for s, d in zip(module.stride, module.dilation)]
    candidates = [(padding, None) for padding in ("valid", "same")]
    candidates += [(padding, (a, b)) for padding in ("valid", "same")
                   for a in range(limits[0]) for b in range(limits[1])]
    for padding, output_padding in candidates:
        try:
            layer = L.Conv2DTranspose(module.out_channels, tuple(module.kernel_size),
                                      strides=tuple(module.stride), padding=padding,
                                      output_padding=output_padding,
                                      dilation_rate=tuple(module.dilation),
                                      use_bias=module.bias is not None, **spatial)
            last = spatial["data_format"] == "channels_last"
            layer.build(shape if not last else (shape[0], shape[2], shape[3], shape[1]))
            found = transposed_geometry(layer)
        except ValueError:
            continue
        if found == want:
            return layer, used
    if used == 2:      # the crop may belong to another layer: try the module alone
        return transposed_from_module(nn, module, None, i, shape, spatial)
    raise unsupported(module, i, "no Conv2DTranspose (padding 'valid'/'same', output_padding) "
                                 "gives this geometry")


def separable_from_module(nn, module, i, spatial):
    """The ``nn.Sequential([ZeroPad2d,] depthwise Conv2d, 1x1 Conv2d)`` of a SeparableConv2D."""
    parts = list(module.children())
    pads = None
    if parts and type(parts[0]) is nn.ZeroPad2d:
        pads, parts = tuple(parts[0].padding), parts[1:]
    if len(parts) != 2 or not all(type(p) is nn.Conv2d for p in parts):
        raise unsupported(module, i, "a nested nn.Sequential is translated only as the "
                                     "[ZeroPad2d,] depthwise Conv2d + 1x1 Conv2d of a SeparableConv2D")
    depthwise, pointwise = parts
    if depthwise.groups != depthwise.in_channels or depthwise.bias is not None \
            or tuple(pointwise.kernel_size) != (1, 1) or pointwise.groups != 1 \
            or tuple(pointwise.stride) != (1, 1) or tuple(pointwise.padding) != (0, 0):
        raise unsupported(module, i, "not the depthwise (groups=in_channels, no bias) + 1x1 "
                                     "Conv2d pair of a SeparableConv2D")
    if pads is not None:
        padding = "same"
    elif isinstance(depthwise.padding, str):
        padding = depthwise.padding
    else:
        padding = tuple(int(p) for p in depthwise.padding)
        padding = "valid" if padding == (0, 0) else padding
    return L.SeparableConv2D(pointwise.out_channels, tuple(depthwise.kernel_size),
                             strides=tuple(depthwise.stride), padding=padding,
                             dilation_rate=tuple(depthwise.dilation),
                             depth_multiplier=depthwise.out_channels // depthwise.in_channels,
                             use_bias=pointwise.bias is not None, **spatial)


def upsample_from_module(module, i, spatial):
    if module.size is not None or module.scale_factor is None:
        raise unsupported(module, i, "only scale_factor (integer factors), not size")
    factors = pair_of(module.scale_factor)
    if not all(float(f).is_integer() and f >= 1 for f in factors):
        raise unsupported(module, i, f"scale_factor {module.scale_factor} is not a whole number")
    if module.mode not in ("nearest", "bilinear") or (module.mode == "bilinear"
                                                       and module.align_corners):
        raise unsupported(module, i, "only mode='nearest' or 'bilinear' with "
                                     "align_corners=False (half-pixel centres, as Keras)")
    return L.UpSampling2D(tuple(int(f) for f in factors), interpolation=module.mode, **spatial)


def keras_pad_padding(pads, length, kernel, stride, dilation, allow_causal):
    """Keras's padding for a 1-D layer whose torch twin pads ``(left, right)``, or None."""
    left, right = pads
    if (left, right) == (0, 0):
        return "valid"
    if allow_causal and (left, right) == (dilation * (kernel - 1), 0):
        return "causal"
    if length is not None and (left, right) == same_pads(length, kernel, stride, dilation):
        return "same"
    if allow_causal and left == right:
        return left
    return None


def one_d_from_module(nn, module, following, i, shape, dtype):
    """Conv1d / MaxPool1d / AvgPool1d / AdaptiveAvg/MaxPool1d(1) (plain: channels_first;
    minnet's Keras subclass: its ``channels_last``) -> the 1-D layer."""
    last = bool(getattr(module, "channels_last", False))
    pads = tuple(getattr(module, "keras_pad", (0, 0)))
    if getattr(module, "pad_value", 0.0) not in (0.0, -math.inf):
        raise unsupported(module, i, "padding value")
    options = {"dtype": dtype, "data_format": "channels_last" if last else "channels_first"}
    length = None if shape is None or len(shape) != 3 else shape[1 if last else 2]
    if isinstance(module, (nn.AdaptiveAvgPool1d, nn.AdaptiveMaxPool1d)):
        if pair_of(module.output_size)[0] != 1:
            raise unsupported(module, i, "only output_size=1 (global pooling)")
        cls = (L.GlobalAveragePooling1D if isinstance(module, nn.AdaptiveAvgPool1d)
               else L.GlobalMaxPooling1D)
        if type(following) is nn.Flatten and following.start_dim == 1 and following.end_dim == -1:
            return cls(**options), 2
        return cls(keepdims=True, **options), 1
    kernel = int(pair_of(module.kernel_size)[0])
    stride = int(pair_of(module.stride if module.stride else module.kernel_size)[0])
    if isinstance(module, nn.Conv1d):
        if module.padding_mode != "zeros":
            raise unsupported(module, i, "padding_mode other than 'zeros'")
        dilation = int(module.dilation[0])
        if module.padding == "same":
            padding = "same"
        else:
            inner = int(module.padding[0])
            padding = keras_pad_padding((pads[0] + inner, pads[1] + inner), length,
                                        kernel, stride, dilation, True)
        if padding is None:
            raise unsupported(module, i, f"the padding {pads} has no Conv1D twin")
        return L.Conv1D(module.out_channels, kernel, strides=stride, padding=padding,
                        dilation_rate=dilation, groups=module.groups,
                        use_bias=module.bias is not None, **options), 1
    if module.ceil_mode:
        raise unsupported(module, i, "ceil_mode=True")
    is_max = isinstance(module, nn.MaxPool1d)
    inner = int(pair_of(module.padding)[0])
    if is_max:
        if int(pair_of(module.dilation)[0]) != 1 or inner:
            raise unsupported(module, i, "dilation or padding= (minnet pads 'same' with -inf)")
        padding = keras_pad_padding(pads, length, kernel, stride, 1, False)
    elif inner and not module.count_include_pad and pads == (0, 0):
        padding = "same" if length is not None and same_pads(length, kernel, stride, 1) == (
            inner, inner) else None
    elif not inner and pads == (0, 0):
        padding = "valid"
    else:
        padding = None
    if padding is None:
        raise unsupported(module, i, "a padding that is not Keras's 'valid' or 'same'")
    cls = L.MaxPooling1D if is_max else L.AveragePooling1D
    return cls(kernel, strides=stride, padding=padding, **options), 1
