"""Core layers: Input, Dense, Flatten, Reshape, Lambda, Activation.

The math lives in ``minnet.functional`` (``F.linear`` for Dense); these classes hold the
weights and hyperparameters.  See docs/layers.md for the forward/backward formulas.
"""
import inspect
import math

import numpy as np

from minnet import _registry, activations, config, constraints, initializers, regularizers
from minnet import functional as F
from minnet.autograd.grad_mode import anomaly_state
from minnet.ops import symbolic
from minnet.layers.base import Layer, shape_str
from minnet.config import normalize_data_format

__all__ = ["Input", "InputLayer", "Dense", "Flatten", "Reshape", "Lambda", "Activation"]


def _positive_int(value, arg):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
        raise ValueError(f"Invalid value for argument `{arg}`: expected a positive int. "
                         f"Received: {arg}={value!r}")
    return int(value)


def _serialize_init(init):
    return initializers.serialize(init)


class InputLayer(Layer):
    """The layer behind ``Input``: declares the shape of one sample.

    As the first element of a ``Sequential`` it lets the model build itself eagerly; in a
    functional model it is the source of a symbolic input (``mn.Input`` creates one and
    returns its output). It does nothing to the data except check its shape.

    Args:
        shape: the shape of one sample, *without* the batch dimension: ``(28, 28, 1)``
            for MNIST images (channels_last), ``(20,)`` for 20 features. ``None`` entries
            match any size.
        batch_size: optional fixed batch size (None: any).
        name, dtype: as for every layer.

    Shape:
        - Input: ``(N, *shape)``.  Output: the same.
    """

    def __init__(self, shape=None, batch_size=None, name=None, dtype="float32", batch_shape=None,
                 **kwargs):
        input_dtype = _input_dtype(dtype)
        super().__init__(name=name, dtype=dtype if input_dtype in (np.float32, np.float64) else None,
                         **kwargs)
        # The input keeps its own dtype (integer token ids stay integers until an Embedding;
        # float layers cast what they receive).
        self.dtype = input_dtype
        if batch_shape is not None:
            if shape is not None:
                raise ValueError("Pass either `shape` or `batch_shape` to Input, not both. Received: "
                                 f"shape={shape!r}, batch_shape={batch_shape!r}")
            if not isinstance(batch_shape, (tuple, list)) or not batch_shape:
                raise ValueError(f"Invalid value for argument `batch_shape`: expected a tuple with the "
                                 f"batch size first. Received: batch_shape={batch_shape!r}")
            batch_size, shape = batch_shape[0], tuple(batch_shape[1:])
        if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
            shape = (int(shape),)
        if not isinstance(shape, (tuple, list)) or not all(
                s is None or (isinstance(s, (int, np.integer)) and not isinstance(s, bool) and s > 0)
                for s in shape):
            raise ValueError(f"Invalid value for argument `shape`: expected a tuple of positive "
                             f"ints (or None), without the batch dimension. Received: shape={shape!r}")
        if batch_size is not None:
            batch_size = _positive_int(batch_size, "batch_size")
        self.shape = tuple(None if s is None else int(s) for s in shape)
        self.batch_size = batch_size

    @property
    def batch_shape(self):
        """``(batch_size, *shape)``: the input shape including the batch dimension."""
        return (self.batch_size,) + self.shape

    def build(self, input_shape):
        self._check_shape(input_shape)
        super().build(input_shape)

    def _check_shape(self, input_shape):
        sample = tuple(input_shape)[1:]
        if len(sample) != len(self.shape) or any(
                want is not None and got is not None and want != got
                for want, got in zip(self.shape, sample)):
            raise ValueError(f"Input 0 of layer '{self.name}' is incompatible with the layer: "
                             f"expected shape {shape_str((None,) + self.shape)}, but received input "
                             f"with shape {shape_str(tuple(input_shape))}")

    def call(self, x, training=False):
        self._check_shape(x.shape)
        return x

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        config = {**super().get_config(), "shape": list(self.shape)}
        if self.batch_size is not None:
            config["batch_size"] = self.batch_size
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["shape"] = tuple(config["shape"])
        return cls(**config)

    def extra_repr(self):
        return f"shape={shape_str(self.shape)}"


def _input_dtype(dtype):
    """Any bool, integer or float dtype (Keras's ``Input(dtype=...)``)."""
    if dtype is None:
        return np.dtype(config.floatx())
    try:
        result = np.dtype(dtype)
    except TypeError:
        result = None
    if result is None or result.kind not in "biuf" or (result.kind == "f" and result.itemsize < 2):
        raise ValueError(f"Invalid value for argument `dtype`: expected a bool, integer or float "
                         f"dtype ('float32', 'int32', 'bool', ...). Received: dtype={dtype!r}")
    return result


def Input(shape=None, batch_size=None, dtype=None, name=None, batch_shape=None, **kwargs):
    """A symbolic input tensor (Keras's ``keras.Input``): the start of a functional model.

    Calling a layer on the returned tensor records the graph; ``mn.Model(inputs, outputs)``
    turns it into a model. As the first element of a ``Sequential`` it declares the input
    shape, so the model builds at once.

    Args:
        shape: the shape of one sample, without the batch dimension (``None`` entries allowed).
        batch_size: optional fixed batch size.
        dtype: ``"float32"`` by default (``mn.config.floatx()``), or any bool, integer or
            float dtype (``"int32"`` token ids stay integers until an ``Embedding``; float
            layers cast what they receive to their own dtype).
        name: a name for the input (its ``InputLayer``); unique by default.
        batch_shape: the full shape, batch first, instead of ``shape`` and ``batch_size``.

    Returns:
        A ``KerasTensor`` of shape ``(batch_size, *shape)``.

    Example:
        >>> x = mn.Input(shape=(16,))
        >>> x.shape
        (None, 16)
    """
    layer = InputLayer(shape=shape, batch_size=batch_size, name=name,
                       dtype=config.floatx() if dtype is None else dtype, batch_shape=batch_shape,
                       **kwargs)
    tensor = symbolic.KerasTensor(layer.batch_shape, dtype=layer.dtype, name=layer.name)
    tensor.node = symbolic.Node(layer, outputs=[tensor])
    # bookkeeping, not a list of sublayers: set past __setattr__'s layer tracking
    layer.__dict__["_inbound_nodes"] = [tensor.node]
    layer.built = True
    layer._build_input_shape = layer.batch_shape
    return tensor


class Dense(Layer):
    """Fully connected layer: ``y = activation(x @ kernel.T + bias)``.

    Weights use PyTorch's ``Linear`` layout: ``kernel`` is ``(units, in_features)`` and
    ``bias`` is ``(units,)``.  ``in_features`` is read from the first input (``build``) or
    declared with ``input_shape=(in_features,)`` / ``input_dim=in_features``. Defaults are
    Keras's: a ``glorot_uniform`` kernel and a zero bias (``kernel_initializer=
    initializers.KaimingUniform()`` and ``bias_initializer=initializers.FanInUniform(in)``
    give PyTorch's ``Linear`` initialisation).

    Args:
        units: number of output features (positive int).
        activation: name (``"relu"``, ...), callable or None (linear).
        use_bias: add ``bias`` (default True).
        kernel_initializer: name/Initializer/callable (default ``"glorot_uniform"``).
        bias_initializer: name/Initializer/callable (default ``"zeros"``).
        kernel_regularizer, bias_regularizer: regularizers whose values join
            ``layer.losses`` (``"l2"``, ``regularizers.L1L2(1e-5, 1e-4)``, ...).
        activity_regularizer: a regularizer on the output (divided by the batch size).
        kernel_constraint, bias_constraint: constraints applied after each optimizer step
            (``constraints.MaxNorm(3)``; axes as Keras's, see ``minnet.constraints``).
        name, dtype, trainable, input_shape, input_dim, batch_size: as for every layer.

    Shape:
        - Input: ``(N, *, in_features)`` (``*``: any number of extra axes).
        - Output: ``(N, *, units)``.

    Example:
        >>> layer = layers.Dense(4, activation="relu")
        >>> layer(np.ones((2, 3))).shape
        (2, 4)
        >>> [w.shape for w in layer.get_weights()]
        [(4, 3), (4,)]
    """

    supports_masking = True   # passes a (batch, timesteps) mask on (Keras)

    def __init__(self, units, activation=None, use_bias=True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
                 name=None, dtype=None, trainable=True, **kwargs):
        super().__init__(name=name, dtype=dtype, trainable=trainable,
                         activity_regularizer=activity_regularizer, **kwargs)
        self.units = _positive_int(units, "units")
        self.activation = activations.get(activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.bias_constraint = constraints.get(bias_constraint)
        self.kernel = None
        self.bias = None

    def build(self, input_shape):
        input_shape = tuple(input_shape)
        if len(input_shape) < 2 or input_shape[-1] is None:
            raise ValueError(f"Layer '{self.name}' needs inputs of shape (batch, ..., features) "
                             f"with a known number of features. Received input_shape="
                             f"{shape_str(input_shape)}")
        in_features = int(input_shape[-1])
        self.in_features = in_features
        self.kernel = self.add_weight("kernel", (self.units, in_features),
                                      initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        if self.use_bias:
            self.bias = self.add_weight("bias", (self.units,), initializer=self.bias_initializer,
                                        regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint)
        super().build(input_shape)

    def _check_call_input(self, x):
        self._check_input(x, min_ndim=2, axis=-1, size=self.in_features)

    def call(self, x, training=False):
        if x.ndim < 2:              # F.linear also takes one sample without the batch axis
            self._check_input(x, min_ndim=2)
        activation = self.activation
        # No graph to record (predict, evaluate, no_grad): one kernel call, ReLU fused.
        y = F.linear_no_graph(x, self.kernel, self.bias, relu=activation is activations.relu)
        if y is not None:
            if activation is activations.relu or activation is activations.linear:
                return y
            return activation(y)
        with self._explaining_refusal(x):   # the functional op validates
            if activation is activations.relu and not anomaly_state.enabled:
                # one node for relu(linear(x)), the same bits (benchmarks/bench_training.py
                # "mlp"); detect_anomaly checks the linear output on its own, so it keeps two
                return F.linear_relu(x, self.kernel, self.bias)
            y = F.linear(x, self.kernel, self.bias)
        return activation(y)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)[:-1] + (self.units,)

    def count_flops(self, input_shape):
        """``2 * rows * in_features * units`` (+ ``rows * units`` for the bias)."""
        input_shape = tuple(input_shape)
        rows = int(np.prod([1 if s is None else s for s in input_shape[:-1]]))
        flops = 2 * rows * int(input_shape[-1]) * self.units
        return flops + (rows * self.units if self.use_bias else 0)

    def set_weights(self, weights):
        """As ``Layer.set_weights``; a kernel of the wrong shape gets an error that states
        minnet's (PyTorch's) ``(units, in_features)`` layout and how to convert a Keras kernel."""
        weights = list(weights)
        if self.kernel is not None and weights:
            got = tuple(getattr(weights[0], "shape", np.shape(weights[0])))
            want = tuple(self.kernel.shape)
            if got != want:
                hint = (" It has the Keras layout (in_features, units): pass kernel.T."
                        if got == want[::-1] else
                        " A Keras kernel (in_features, units) converts with kernel.T.")
                raise ValueError(f"Layer '{self.name}' weight 0 (kernel) has shape {want}: Dense "
                                 f"kernels use PyTorch's layout (units, in_features). The array "
                                 f"given has shape {got}.{hint}")
        super().set_weights(weights)

    def get_config(self):
        return {**super().get_config(), "units": self.units,
                "activation": activations.serialize(self.activation), "use_bias": self.use_bias,
                "kernel_initializer": _serialize_init(self.kernel_initializer),
                "bias_initializer": _serialize_init(self.bias_initializer),
                "kernel_regularizer": regularizers.serialize(self.kernel_regularizer),
                "bias_regularizer": regularizers.serialize(self.bias_regularizer),
                "kernel_constraint": constraints.serialize(self.kernel_constraint),
                "bias_constraint": constraints.serialize(self.bias_constraint)}

    def extra_repr(self):
        parts = [str(self.units)]
        if self.built:
            parts.append(f"in_features={self.in_features}")
        act = activations.serialize(self.activation)
        if act != "linear":
            parts.append(f"activation={act}")
        if not self.use_bias:
            parts.append("use_bias=False")
        return ", ".join(parts)


class Flatten(Layer):
    """Flatten every axis but the batch axis: ``(N, H, W, C) -> (N, H*W*C)``.

    A plain reshape in both layouts: channels_last images flatten in (H, W, C) order (as
    Keras), channels_first ones in (C, H, W) order (as ``torch.flatten``; Keras would
    transpose to HWC first).  ``data_format`` is kept so that ``interop`` can permute the
    next Dense kernel's columns when converting between the two orders.

    Args:
        data_format: ``"channels_last"``, ``"channels_first"`` or None (the global setting).

    Shape:
        - Input: ``(N, *)``.  Output: ``(N, prod(*))``; a 1-D input becomes ``(N, 1)``.

    Example:
        >>> layers.Flatten()(np.zeros((2, 3, 4, 5))).shape
        (2, 60)
    """

    def __init__(self, data_format=None, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.data_format = normalize_data_format(data_format)
        self._data_format_explicit = data_format is not None

    def get_config(self):
        return {**super().get_config(), "data_format": self.data_format}

    def call(self, x, training=False):
        n = x.shape[0] if x.ndim else 1
        features = math.prod(x.shape[1:]) if x.ndim > 1 else 1
        if x.ndim == 2:
            return x
        return x.reshape(n, features)

    def compute_output_shape(self, input_shape):
        input_shape = tuple(input_shape)
        rest = input_shape[1:]
        features = None if any(s is None for s in rest) else int(np.prod(rest)) if rest else 1
        return (input_shape[0], features)


class Reshape(Layer):
    """Reshape each sample to ``target_shape`` (the batch axis is kept).

    Args:
        target_shape: tuple of positive ints, without the batch axis; one entry may be -1
            (inferred from the sample size).

    Shape:
        - Input: ``(N, *)``.  Output: ``(N, *target_shape)``.

    Example:
        >>> layers.Reshape((3, -1))(np.zeros((2, 12))).shape
        (2, 3, 4)
    """

    def __init__(self, target_shape, name=None, dtype=None, trainable=True, **kwargs):
        super().__init__(name=name, dtype=dtype, trainable=trainable, **kwargs)
        if isinstance(target_shape, (int, np.integer)) and not isinstance(target_shape, bool):
            target_shape = (int(target_shape),)
        ok = isinstance(target_shape, (tuple, list)) and all(
            isinstance(s, (int, np.integer)) and not isinstance(s, bool) and (s > 0 or s == -1)
            for s in target_shape)
        if not ok or list(target_shape).count(-1) > 1:
            raise ValueError(f"Invalid value for argument `target_shape`: expected a tuple of "
                             f"positive ints with at most one -1, without the batch axis. "
                             f"Received: target_shape={target_shape!r}")
        self.target_shape = tuple(int(s) for s in target_shape)

    def _resolve(self, sample_shape):
        """``target_shape`` with -1 filled in for samples of ``sample_shape`` (error if impossible)."""
        size = int(np.prod(sample_shape)) if sample_shape else 1
        known = int(np.prod([s for s in self.target_shape if s != -1])) if self.target_shape else 1
        if -1 in self.target_shape:
            if known == 0 or size % known:
                raise ValueError(self._mismatch(sample_shape))
            return tuple(size // known if s == -1 else s for s in self.target_shape)
        if known != size:
            raise ValueError(self._mismatch(sample_shape))
        return self.target_shape

    def _mismatch(self, sample_shape):
        return (f"Layer '{self.name}' cannot reshape samples of shape {shape_str(tuple(sample_shape))} "
                f"({int(np.prod(sample_shape))} values) to target_shape "
                f"{shape_str(self.target_shape)}.")

    def call(self, x, training=False):
        return x.reshape((x.shape[0],) + self._resolve(tuple(x.shape[1:])))

    def compute_output_shape(self, input_shape):
        input_shape = tuple(input_shape)
        if any(s is None for s in input_shape[1:]):
            return (input_shape[0],) + tuple(None if s == -1 else s for s in self.target_shape)
        return (input_shape[0],) + self._resolve(input_shape[1:])

    def get_config(self):
        return {**super().get_config(), "target_shape": list(self.target_shape)}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["target_shape"] = tuple(config["target_shape"])
        return cls(**config)

    def extra_repr(self):
        return f"target_shape={shape_str(self.target_shape)}"


class Lambda(Layer):
    """Wrap a function ``Tensor -> Tensor`` as a layer (no weights).

    A Lambda layer is saved by the *name* of its function: it can be loaded again only
    when that function is registered (``@mn.register_layer`` on the function) or passed
    in ``custom_objects``.  Lambdas (``lambda x: ...``) cannot be loaded; write a
    ``Layer`` subclass for anything that must survive ``save``/``load_model``.

    Args:
        function: callable taking a Tensor (and optionally ``training=``) and returning one.
        output_shape: optional shape of one output sample (without batch) or a callable
            ``input_shape -> output_shape``; otherwise found by running the function once.
        arguments: optional dict of keyword arguments passed to ``function`` on each call
            (Keras's). As in Keras, ``function`` also gets ``training=`` and ``mask=`` when
            its signature names them.

    Shape:
        - Whatever ``function`` does.

    Example:
        >>> double = layers.Lambda(lambda x: x * 2)
        >>> double(np.ones((2, 3))).numpy()[0, 0]
        2.0
    """

    def __init__(self, function, output_shape=None, arguments=None, name=None, dtype=None,
                 trainable=True, **kwargs):
        super().__init__(name=name, dtype=dtype, trainable=trainable, **kwargs)
        if isinstance(function, str):
            function = activations.get(function)
        if not callable(function):
            raise TypeError(f"Invalid value for argument `function`: expected a callable. "
                            f"Received: function={function!r}")
        if output_shape is not None and not callable(output_shape):
            output_shape = tuple(output_shape)
        if arguments is not None and not isinstance(arguments, dict):
            raise TypeError(f"Invalid value for argument `arguments`: expected a dict of keyword "
                            f"arguments for the function. Received: arguments={arguments!r}")
        self.function = function
        self.output_shape = output_shape
        self.arguments = dict(arguments or {})
        try:
            names = inspect.signature(function).parameters
        except (TypeError, ValueError):     # a builtin without a signature
            names = {}
        self._passes = tuple(n for n in ("training", "mask") if n in names)

    def call(self, x, training=False, mask=None):
        extra = {"training": training, "mask": mask}
        return self.function(x, **self.arguments, **{n: extra[n] for n in self._passes})

    def compute_output_shape(self, input_shape):
        if self.output_shape is None:
            return super().compute_output_shape(input_shape)
        if callable(self.output_shape):
            return tuple(self.output_shape(tuple(input_shape)))
        return (tuple(input_shape)[0],) + self.output_shape

    def _function_name(self):
        return getattr(self.function, "__name__", type(self.function).__name__)

    def get_config(self):
        registered = _registry.registered_name("layer", self.function)
        name = registered or self._function_name()
        is_builtin_activation = activations.is_builtin(name, self.function)
        config = {**super().get_config(), "function": name,
                  "function_serializable": registered is not None or is_builtin_activation}
        if self.arguments:
            config["arguments"] = dict(self.arguments)
        if self.output_shape is not None and not callable(self.output_shape):
            config["output_shape"] = list(self.output_shape)
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        name = config.pop("function")
        config.pop("function_serializable", None)
        function = (custom_objects or {}).get(name)
        if function is None and name in _registry.names("layer"):
            function = _registry.lookup("layer", name)
        if function is None and activations.is_builtin(name):
            function = activations.get(name)
        if function is None:
            raise ValueError(f"Cannot deserialize Lambda layer '{config.get('name')}': its function "
                             f"{name!r} is not registered. Register it with @mn.register_layer "
                             f"(a named def, not a lambda) or pass custom_objects={{{name!r}: fn}}.")
        if config.get("output_shape") is not None:
            config["output_shape"] = tuple(config["output_shape"])
        return cls(function, **config)

    def extra_repr(self):
        return f"function={self._function_name()}"


class Activation(Layer):
    """Apply an activation function by name: ``Activation("relu")``.

    Args:
        activation: a name (``"relu"``, ``"gelu"``, ``"silu"``/``"swish"``, ``"softplus"``,
            ``"log_softmax"``, ...: every name of ``minnet.activations``) or a callable.

    Shape:
        - Input: any.  Output: the same.

    Example:
        >>> layers.Activation("relu")(np.array([[-1.0, 2.0]])).numpy()
        array([[0., 2.]], dtype=float32)
    """

    supports_masking = True   # passes a (batch, timesteps) mask on (Keras)

    def __init__(self, activation, name=None, dtype=None, trainable=True, **kwargs):
        super().__init__(name=name, dtype=dtype, trainable=trainable, **kwargs)
        self.activation = activations.get(activation)

    def call(self, x, training=False):
        return self.activation(x)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        return {**super().get_config(), "activation": activations.serialize(self.activation)}

    def extra_repr(self):
        return activations.serialize(self.activation)
