"""The torch module each plan step becomes (``build_module``), and the few torch module
subclasses minnet writes where ``torch.nn`` has no module that computes the same.

* ``KerasLSTM`` / ``KerasGRU`` / ``KerasRNN``: ``nn.LSTM``/``GRU``/``RNN`` (batch_first)
  whose forward returns what the minnet layer returns (the sequence or the last state).
* ``KerasConv1d``, ``KerasMaxPool1d``, ``KerasAvgPool1d``, ``KerasAdaptiveAvgPool1d``,
  ``KerasAdaptiveMaxPool1d``: the ``nn`` module applied to ``(N, L, C)`` input
  (``channels_last = True``: transposed to ``(N, C, L)`` and back) after an uneven
  padding (``keras_pad = (left, right)``, filled with ``pad_value``).  Their state is the
  base module's, so their ``state_dict`` loads into the plain module.

Classes are made on first use (torch is imported lazily) and cached.
"""
from minnet.interop.plan import flip_momentum

__all__ = ["build_module", "keras_class"]

_CLASSES = {}


def keras_class(nn, base):
    """The subclass of ``nn.<base>`` minnet uses for (N, L, C) input or uneven padding."""
    key = ("1d", base)
    cls = _CLASSES.get(key)
    if cls is None:
        torch_base = getattr(nn, base)
        functional = nn.functional

        def forward(self, x):
            if self.channels_last:
                x = x.transpose(1, 2)
            if any(self.keras_pad):
                x = functional.pad(x, tuple(self.keras_pad), value=self.pad_value)
            y = torch_base.forward(self, x)
            return y.transpose(1, 2) if self.channels_last else y

        def extra_repr(self):
            return (torch_base.extra_repr(self) + f", channels_last={self.channels_last}, "
                    f"keras_pad={tuple(self.keras_pad)}")

        cls = type(f"Keras{base}", (torch_base,), {"forward": forward, "extra_repr": extra_repr})
        _CLASSES[key] = cls
    return cls


def with_layout(nn, base, layer, pads, pad_value, *args, **kwargs):
    """``nn.<base>(*args, **kwargs)``, or its Keras subclass when the layer reads (N, L, C)
    or pads unevenly (symmetric padding goes to ``padding=``)."""
    last = layer.data_format == "channels_last"
    left, right = pads
    if not last and left == right:
        if left and base != "AdaptiveAvgPool1d" and base != "AdaptiveMaxPool1d":
            kwargs["padding"] = left
        return getattr(nn, base)(*args, **kwargs)
    module = keras_class(nn, base)(*args, **kwargs)
    module.channels_last = last
    module.keras_pad = (left, right)
    module.pad_value = pad_value
    return module


def activation_module(nn, step):
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


def recurrent_module(nn, step):
    inner = step.args["inner"]
    base = getattr(nn, step.args["cell"])
    cls = _CLASSES.get(base)
    if cls is None:
        def forward(self, x):
            y, state = base.forward(self, x)
            if self.return_sequences:
                return y
            h = state[0] if isinstance(state, tuple) else state
            return h.transpose(0, 1).reshape(h.shape[1], -1)   # (N, directions * units)

        cls = type(f"Keras{base.__name__}", (base,), {"forward": forward})
        _CLASSES[base] = cls
    kwargs = dict(batch_first=True, bias=inner.use_bias, bidirectional=step.args["bidirectional"])
    if step.args["cell"] == "RNN":
        kwargs["nonlinearity"] = "relu" if inner._mode == "relu" else "tanh"
    module = cls(inner.input_dim, inner.units, **kwargs)
    module.return_sequences = inner.return_sequences
    return module


def pad_module(nn, pads, value):
    if value == 0.0:
        return nn.ZeroPad2d(pads)
    return nn.ConstantPad2d(pads, value)


def separable_module(nn, step):
    layer, args = step.layer, step.args
    middle = layer.in_channels * layer.depth_multiplier
    modules = [] if args["pads"] is None else [nn.ZeroPad2d(args["pads"])]
    modules.append(nn.Conv2d(layer.in_channels, middle, layer.kernel_size, stride=layer.strides,
                             padding=args["padding"], dilation=layer.dilation_rate,
                             groups=layer.in_channels, bias=False))
    modules.append(nn.Conv2d(middle, layer.filters, 1, bias=layer.use_bias))
    return nn.Sequential(*modules)


def norm_module(nn, step):
    layer = step.layer
    if step.kind == "layernorm":
        affine = layer.scale or layer.center
        kwargs = {} if not affine or layer.center else {"bias": False}
        return nn.LayerNorm(step.args["shape"], eps=layer.epsilon, elementwise_affine=affine,
                            **kwargs)
    return nn.GroupNorm(layer.n_groups, step.args["channels"], eps=layer.epsilon,
                        affine=layer.scale or layer.center)


def one_d_module(nn, step):
    layer, args = step.layer, step.args
    kind = step.kind
    if kind == "conv1d":
        return with_layout(nn, "Conv1d", layer, args["pads"], 0.0, layer.in_channels,
                           layer.filters, layer.kernel_size, stride=layer.strides,
                           dilation=layer.dilation_rate, groups=layer.groups, bias=layer.use_bias)
    if kind == "maxpool1d":
        return with_layout(nn, "MaxPool1d", layer, args["pads"], -float("inf"), layer.pool_size,
                           stride=layer.strides)
    if kind == "avgpool1d":
        pads = args["pads"]
        if not args["count_include_pad"]:       # symmetric "same": the pad is left out
            module = with_layout(nn, "AvgPool1d", layer, (0, 0), 0.0, layer.pool_size,
                                 stride=layer.strides, padding=pads[0], count_include_pad=False)
            return module
        return with_layout(nn, "AvgPool1d", layer, pads, 0.0, layer.pool_size,
                           stride=layer.strides)
    base = "AdaptiveAvgPool1d" if kind == "adaptive_avg1d" else "AdaptiveMaxPool1d"
    return with_layout(nn, base, layer, (0, 0), 0.0, 1)


def build_module(nn, step):
    """The torch module of one step (weights left at torch's initialisation)."""
    layer, args = step.layer, step.args
    kind = step.kind
    if kind == "linear":
        return nn.Linear(layer.in_features, layer.units, bias=layer.use_bias)
    if kind == "conv":
        return nn.Conv2d(layer.in_channels, layer.filters, layer.kernel_size, stride=layer.strides,
                         padding=args["padding"], dilation=layer.dilation_rate,
                         groups=getattr(layer, "groups", 1), bias=layer.use_bias)
    if kind == "conv_transpose":
        return nn.ConvTranspose2d(layer.in_channels, layer.filters, layer.kernel_size,
                                  stride=layer.strides, padding=args["padding"],
                                  output_padding=args["output_padding"],
                                  dilation=layer.dilation_rate, bias=layer.use_bias)
    if kind == "separable":
        return separable_module(nn, step)
    if kind == "pad":
        return pad_module(nn, args["pads"], args["value"])
    if kind == "bn":
        cls = nn.BatchNorm1d if args["dims"] == 1 else nn.BatchNorm2d
        # Keras's momentum weighs the old statistic, PyTorch's the new batch
        return cls(layer.num_features, eps=layer.epsilon, momentum=flip_momentum(layer.momentum),
                   affine=layer.scale or layer.center)
    if kind in ("layernorm", "groupnorm"):
        return norm_module(nn, step)
    if kind == "maxpool":
        return nn.MaxPool2d(layer.pool_size, stride=layer.strides, padding=args["padding"])
    if kind == "avgpool":
        return nn.AvgPool2d(layer.pool_size, stride=layer.strides, padding=args["padding"],
                            count_include_pad=args["count_include_pad"])
    if kind in ("conv1d", "maxpool1d", "avgpool1d", "adaptive_avg1d", "adaptive_max1d"):
        return one_d_module(nn, step)
    if kind == "adaptive_avg":
        return nn.AdaptiveAvgPool2d(1)
    if kind == "adaptive_max":
        return nn.AdaptiveMaxPool2d(1)
    if kind == "upsample":
        return nn.Upsample(scale_factor=tuple(float(s) for s in layer.size),
                           mode=layer.interpolation,
                           **({"align_corners": False} if layer.interpolation == "bilinear" else {}))
    if kind == "prelu":
        return nn.PReLU(args["count"])
    if kind == "embedding":
        return nn.Embedding(layer.input_dim, layer.output_dim)
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
        return activation_module(nn, step)
    if kind == "rnn":
        return recurrent_module(nn, step)
    raise AssertionError(f"unknown step kind {kind!r}")
