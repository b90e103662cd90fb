"""``Sequential``: a linear stack of layers, a ``Model`` trained by the shared trainer.

Example:
    >>> model = mn.Sequential([mn.Input((20,)), layers.Dense(32, activation="relu"), layers.Dense(10)])
    >>> model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    >>> history = model.fit(x_train, y_train, epochs=5)
"""
import weakref

import numpy as np

from minnet._checks import check_int
from minnet.autograd import Tensor
from minnet.data import as_array
from minnet.layers import deserialize as deserialize_layer
from minnet.layers import serialize as serialize_layer
from minnet.layers._layout import check_user_layout, input_mismatch_hint
from minnet.ops import symbolic
from minnet.layers.base import Layer
from minnet.layers.core import Input, InputLayer
from minnet.models.model import Model, format_bytes, format_count
from minnet.models.summary_table import SummaryTable, show_table
from minnet.trainers.targets import string_input_hint

__all__ = ["Sequential"]


def _input_layer_shape(layer):
    """Full input shape (batch dim first, may be None) declared by an ``Input`` layer."""
    for attribute in ("batch_shape", "_batch_shape"):
        shape = getattr(layer, attribute, None)
        if shape is not None:
            return tuple(shape)
    for attribute in ("shape", "input_shape", "_shape"):
        shape = getattr(layer, attribute, None)
        if shape is not None:
            batch_size = getattr(layer, "batch_size", None)
            return (batch_size,) + tuple(shape)
    raise ValueError(f"Could not read the shape of input layer '{layer.name}'.")


def _build_layer(layer, input_shape):
    """Build ``layer`` for ``input_shape`` (as ``Layer.__call__`` would) and return its output shape."""
    if not layer.built:
        layer.build(input_shape)
        layer._build_input_shape = tuple(input_shape)
        layer.built = True
    return tuple(layer.compute_output_shape(input_shape))


def _optimizer_slots(optimizer):
    """Arrays of per-parameter state each optimizer keeps (for the memory estimate)."""
    if optimizer is None:
        return 0
    config = {}
    try:
        config = optimizer.get_config() or {}
    except Exception:
        pass
    name = type(optimizer).__name__.lower()
    if name in ("adam", "adamw"):
        return 3 if config.get("amsgrad") else 2
    if name == "rmsprop":
        return 1 + bool(config.get("momentum")) + bool(config.get("centered"))
    if name == "adagrad":
        return 1
    if name == "sgd":
        return 1 if config.get("momentum") else 0
    return 1


class Sequential(Model):
    """A linear stack of layers, trained with ``compile`` and ``fit`` (Keras) or by hand.

    Args:
        layers: optional list of layers, added in order with ``add``.
        name: the model's name (default ``sequential``, ``sequential_1``, ...).
        dtype: recorded for the config; each layer keeps its own dtype and casts its inputs.
        trainable: False freezes every layer.

    Shape:
        - Input: whatever the first layer accepts, batch first, e.g. ``(N, C, H, W)``.
        - Output: the last layer's output, batch first.

    Example:
        >>> model = Sequential([layers.Dense(32, activation="relu"), layers.Dense(10)])
        >>> model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
        >>> history = model.fit(x_train, y_train, epochs=5)
    """

    # minnet.saving checks a Sequential's config layer by layer (sizes, parameter budget)
    # before building it.
    _config_is_layer_stack = True

    def __init__(self, layers=None, name=None, dtype="float32", trainable=True):
        super().__init__(name=name, dtype=dtype, trainable=trainable)
        self._input_layer = None      # set first so repr lists the Input layer first
        self._layers = []
        self._output_shapes = []
        if layers is not None:
            if isinstance(layers, Layer) or not isinstance(layers, (list, tuple)):
                raise TypeError(f"Invalid value for argument `layers`: expected a list of layers. "
                                f"Received: layers of type {type(layers).__name__}")
            for layer in layers:
                self.add(layer)

    # ------------------------------------------------------------------ structure
    @property
    def layers(self):
        """The layers of the model in order (an ``Input`` layer is not listed, as in Keras)."""
        return list(self._layers)

    def _tracked_layers(self):
        tracked = [] if self._input_layer is None else [self._input_layer]
        return tracked + list(self._layers)

    @property
    def output_names(self):
        return [self._layers[-1].name] if self._layers else ["output"]

    def structured_inputs(self, value):
        return False

    def structured_outputs(self, value):
        return False

    @property
    def input_shape(self):
        """The input shape, batch first (``None`` batch size)."""
        if self._build_input_shape is None:
            raise AttributeError(f"Model '{self.name}' has no defined input shape yet: start it with "
                                 f"`mn.Input(shape)`, call it on data or `build(input_shape)` first.")
        return tuple(self._build_input_shape)

    @property
    def output_shape(self):
        """The last layer's output shape, batch first."""
        if self._build_input_shape is None:
            raise AttributeError(f"Model '{self.name}' has no defined output shape yet: start it with "
                                 f"`mn.Input(shape)`, call it on data or `build(input_shape)` first.")
        return tuple(self._output_shapes[-1]) if self._output_shapes else tuple(self._build_input_shape)

    def check_input_shapes(self, x):
        """Raise a ValueError when the array ``x`` cannot be the input of this built model.

        A model declared for a shape (``Input``, ``input_shape=``, ``build``) takes that
        shape; one built from the first batch it saw (no declaration) takes any sizes of the
        same rank and feature axis, as Keras runs it (sequences of another length)."""
        expected = self._build_input_shape
        if not self.built or expected is None:
            return
        shape = np.shape(x)
        free = self.__dict__.get("_built_from_data") and len(shape) == len(expected)
        checked = zip(expected[-1:], shape[-1:]) if free else zip(expected[1:], shape[1:])
        if len(shape) != len(expected) or any(e is not None and e != s for e, s in checked):
            raise ValueError(f"Input 0 of model '{self.name}' is incompatible with the model: "
                             f"expected shape {symbolic.shape_str(expected)}, found shape {tuple(shape)}."
                             + input_mismatch_hint(expected, shape))

    def build_from_data(self, x):
        """Build for the arrays ``x`` (batch first)."""
        if not self.built:
            self.build((None,) + tuple(np.shape(x)[1:]))
            self.__dict__["_built_from_data"] = True

    def add(self, layer):
        """Append ``layer``; a model with a known input shape builds the new layer right away.

        Args:
            layer: a ``minnet.layers.Layer`` instance. An ``Input`` layer may only come first.
        """
        if layer is self:
            raise ValueError("A Sequential model cannot be added to itself.")
        if isinstance(layer, symbolic.KerasTensor):
            if layer.node is None or not isinstance(layer.node.layer, InputLayer):
                raise TypeError(f"Invalid value for argument `layer`: a Sequential model accepts a "
                                f"symbolic tensor only from `mn.Input(...)` as its first element. "
                                f"Received: {layer!r}")
            layer = layer.node.layer
        if not isinstance(layer, Layer):
            raise TypeError(f"Invalid value for argument `layer`: expected an instance of "
                            f"minnet.layers.Layer. Received: layer={layer!r} of type "
                            f"{type(layer).__name__}")
        if isinstance(layer, InputLayer):
            if self._layers or self._input_layer is not None:
                raise ValueError(f"An Input layer can only be the first layer of a Sequential model. "
                                 f"Received an Input layer after {len(self._layers)} layer(s).")
            self._input_layer = layer
            self.build(_input_layer_shape(layer))
            return
        if any(existing is layer for existing in self._layers):
            raise ValueError(f"Layer '{layer.name}' is already in model '{self.name}'; create a new "
                             f"layer to stack another one (weights would be shared otherwise).")
        self._layers = self._layers + [layer]
        declared = getattr(layer, "_batch_input_shape", None)
        if not self.built and len(self._layers) == 1 and declared is not None:
            self.build(tuple(declared))
        elif self.built:
            shape = self._output_shapes[-1] if self._output_shapes else self._build_input_shape
            try:
                if getattr(layer, "data_format", None) is not None and not any(
                        getattr(e, "data_format", None) is not None for e in self._layers[:-1]):
                    check_user_layout(layer, shape)     # the first image layer (see build)
                self._output_shapes.append(_build_layer(layer, shape))
            except (ValueError, TypeError):
                self._layers = self._layers[:-1]        # a layer that does not fit is not kept
                raise
            layer.__dict__["_trace_owner"] = weakref.ref(self)
            self._optimizer_params_changed()

    def pop(self):
        """Remove and return the last layer."""
        if not self._layers:
            raise ValueError(f"There are no layers in model '{self.name}' to pop.")
        layer = self._layers[-1]
        self._layers = self._layers[:-1]
        if self._output_shapes:
            self._output_shapes = self._output_shapes[:-1]
        self._optimizer_params_changed()
        return layer

    def _optimizer_params_changed(self):
        if self.optimizer is not None and self._optimizer_needs_params and self.built:
            self.optimizer.set_parameters(self.parameters())

    # ------------------------------------------------------------------ layer interface
    def build(self, input_shape=None):
        """Build every layer for inputs of ``input_shape`` (batch dim first, may be None).

        Args:
            input_shape: tuple such as ``(None, 1, 8, 8)``; may be omitted when the model
                starts with an ``Input`` layer.
        """
        if input_shape is None:
            if self._input_layer is None:
                raise ValueError(f"Model '{self.name}': `build()` needs `input_shape` (batch dim "
                                 f"first, e.g. (None, 1, 28, 28)) when there is no Input layer.")
            input_shape = _input_layer_shape(self._input_layer)
        try:
            input_shape = tuple(None if s is None else int(s) for s in input_shape)
        except (TypeError, ValueError):
            raise TypeError(f"Invalid value for argument `input_shape`: expected a tuple of ints "
                            f"(None allowed for the batch size). Received: input_shape={input_shape!r}") from None
        if len(input_shape) < 1:
            raise ValueError(f"Invalid value for argument `input_shape`: expected the batch dimension "
                             f"first, e.g. (None, 16). Received: input_shape={input_shape!r}")
        shape = (None,) + input_shape[1:]
        shapes = []
        checked_layout = False
        for layer in self._layers:
            if not checked_layout and getattr(layer, "data_format", None) is not None:
                # The first image layer sees the user's array (shape-preserving layers such as
                # Rescaling may come before it): a layout left to the default must fit it.
                check_user_layout(layer, shape)
                checked_layout = True
            shape = _build_layer(layer, shape)
            shapes.append(shape)
        self._output_shapes = shapes
        self._build_input_shape = (None,) + input_shape[1:]
        self.built = True
        self.__dict__["_graph_trace"] = None
        owner = weakref.ref(self)
        for layer in self._layers:       # layer.output asks the model to trace its graph (below)
            layer.__dict__["_trace_owner"] = owner
        if self.optimizer is not None and self._optimizer_needs_params:
            self.optimizer.set_parameters(self.parameters())

    # ------------------------------------------------------------------ the symbolic graph
    def _trace_graph(self):
        """Call the layers on a symbolic input once (Keras's Sequential does this when it is
        built), so that ``model.inputs``/``outputs`` and every ``layer.input``/``output`` exist:
        ``mn.Model(seq.inputs, seq.layers[-2].output)`` is a feature extractor."""
        trace = self.__dict__.get("_graph_trace")
        if trace is not None and trace[2] == len(self._layers):
            return trace
        if not self.built or self._build_input_shape is None:
            raise AttributeError(f"Sequential model '{self.name}' has no symbolic input yet: start it "
                                 f"with `mn.Input(shape)` or build it first.")
        nodes = None if self._input_layer is None else self._input_layer.__dict__.get("_inbound_nodes")
        if nodes:
            inputs = nodes[0].outputs[0]
        else:
            inputs = Input(batch_shape=self._build_input_shape,
                           dtype=self._layers[0].dtype if self._layers else None)
        outputs = inputs
        for layer in self._layers:
            outputs = layer(outputs)
        trace = (inputs, outputs, len(self._layers))
        self.__dict__["_graph_trace"] = trace
        return trace

    @property
    def inputs(self):
        """``[the symbolic input]`` (Keras), once the model is built."""
        return [self._trace_graph()[0]]

    @property
    def outputs(self):
        """``[the symbolic output]`` (Keras), once the model is built."""
        return [self._trace_graph()[1]]

    @property
    def input(self):
        return self._trace_graph()[0]

    @property
    def output(self):
        return self._trace_graph()[1]

    def __call__(self, x, training=None):
        """Run the layers in order. ``x`` is an ndarray, list or ``mn.Tensor``; returns a Tensor.

        Each layer casts the input to its own dtype, so a float64 model keeps float64 inputs.
        """
        if not isinstance(x, Tensor):
            if type(x) is not np.ndarray and symbolic.is_symbolic(x):
                return self._symbolic_call((x,), {}, training=training)
            array = as_array(x, "x")
            if array.dtype.kind not in "fiub":
                raise TypeError(f"Model '{self.name}' expected a numeric array or Tensor as input. "
                                f"Received dtype {array.dtype}{string_input_hint(self._layers, array)}")
            x = Tensor(array)
        if not self.built:
            if x.ndim < 1:
                raise ValueError(f"Model '{self.name}' expected a batch of inputs (batch dim first). "
                                 f"Received a scalar")
            self.build(tuple(x.shape))
            self.__dict__["_built_from_data"] = True
        elif self._build_input_shape is not None and x.shape[1:] != self._build_input_shape[1:]:
            self.check_input_shapes(x.data)
        training = self.training if training is None else bool(training)
        return self.call(x, training=training)

    def call(self, x, training=False):
        for layer in self._layers:
            x = layer(x, training=training)
        return x

    def compute_output_shape(self, input_shape):
        shape = tuple(input_shape)
        for layer in self._layers:
            shape = tuple(layer.compute_output_shape(shape))
        return shape

    def count_flops(self, input_shape):
        total = 0
        shape = tuple(input_shape)
        for layer in self._layers:
            total += int(layer.count_flops(shape))
            shape = tuple(layer.compute_output_shape(shape))
        return total

    def train(self, mode=True):
        """Training mode (dropout on, batch statistics) for the model and every layer; returns self."""
        return super().train(mode)

    def get_config(self):
        layers = []
        if self._input_layer is not None:
            layers.append(serialize_layer(self._input_layer))
        layers.extend(serialize_layer(layer) for layer in self._layers)
        config = super().get_config()
        config["layers"] = layers
        config["build_input_shape"] = (None if self._build_input_shape is None else
                                       [None if s is None else int(s) for s in self._build_input_shape])
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        layer_configs = config.pop("layers", [])
        build_input_shape = config.pop("build_input_shape", None)
        model = cls(**config)
        for layer_config in layer_configs:
            model.add(deserialize_layer(layer_config, custom_objects=custom_objects))
        if build_input_shape is not None and not model.built:
            model.build(tuple(build_input_shape))
        return model

    def extra_repr(self):
        n = len(self._layers)
        return f"{n} layer" if n == 1 else f"{n} layers"

    # ------------------------------------------------------------------ summary
    def summary(self, batch_size=None, print_fn=print):
        """Print a table of the layers: output shape, parameters, activation memory and FLOPs.

        Args:
            batch_size: batch size for the activation memory, FLOP and training-step
                columns (default: 1, i.e. per sample).
            print_fn: called with each line (default ``print``).

        A model not built yet prints its layers with output shape ``?`` and ``0 (unbuilt)``
        parameters, as Keras does (build it, or start it with ``layers.Input(shape)``, to
        see the shapes).
        """
        if not self.built:
            rows = [(f"{layer.name} ({type(layer).__name__})", "?",
                     f"{layer.count_params():,}" if layer.built else "0 (unbuilt)")
                    for layer in self._layers]
            footer = ["Total params: 0 (the model is not built: call `model.build(input_shape)`, "
                      "start it with `layers.Input(shape)`, or call it on a batch)"]
            show_table(SummaryTable(f'Model: "{self.name}"', ("Layer (type)", "Output Shape", "Param #"),
                                    rows, footer), print_fn)
            return
        if batch_size is not None:
            batch_size = check_int("batch_size", batch_size, 1)
        batch = 1 if batch_size is None else batch_size
        rows = []
        # A dimension other than the batch may be None (variable-length sequences): then the
        # activation and FLOP figures that depend on it are unknown, shown as "?".
        shape = (batch,) + tuple(self._build_input_shape[1:])
        known = None not in shape
        input_bytes = int(np.prod(shape)) * self._layers[0].dtype.itemsize if self._layers and known else 0
        total_activations = input_bytes if known else None
        total_flops = 0 if known else None
        for layer, output_shape in zip(self._layers, self._output_shapes):
            concrete = (batch,) + tuple(output_shape[1:])
            n_bytes = int(np.prod(concrete)) * layer.dtype.itemsize if None not in concrete else None
            flops = int(layer.count_flops(shape)) if None not in shape else None
            total_activations = None if n_bytes is None or total_activations is None \
                else total_activations + n_bytes
            total_flops = None if flops is None or total_flops is None else total_flops + flops
            rows.append((f"{layer.name} ({type(layer).__name__})", symbolic.shape_str(output_shape),
                         f"{layer.count_params():,}", "?" if n_bytes is None else format_bytes(n_bytes),
                         "?" if flops is None else format_count(flops)))
            shape = concrete
        headers = ("Layer (type)", "Output Shape", "Param #",
                   f"Activations (B={batch})", f"FLOPs (B={batch})")
        trainable = sum(int(np.prod(w.shape)) for w in self.trainable_weights)
        non_trainable = sum(int(np.prod(w.shape)) for w in self.non_trainable_weights)
        param_bytes = sum(int(np.prod(w.shape)) * w.dtype.itemsize for w in self.weights)
        trainable_bytes = sum(int(np.prod(w.shape)) * w.dtype.itemsize for w in self.trainable_weights)
        slots = _optimizer_slots(self.optimizer)
        optimizer_bytes = slots * trainable_bytes
        optimizer_name = type(self.optimizer).__name__ if self.optimizer is not None else "no optimizer yet"
        unknown = "? (a dimension besides the batch is None)"
        if total_activations is None:
            step, activations = unknown, "?"
        else:
            step = "~" + format_bytes(total_activations + param_bytes + trainable_bytes + optimizer_bytes)
            activations = format_bytes(total_activations)
        footer = [f"Total params: {trainable + non_trainable:,} ({format_bytes(param_bytes)})",
                  f"Trainable params: {trainable:,}",
                  f"Non-trainable params: {non_trainable:,}",
                  f"Forward FLOPs at batch size {batch}: "
                  f"{unknown if total_flops is None else format_count(total_flops)}",
                  f"One training step at batch size {batch}: {step} "
                  f"(activations {activations} + params "
                  f"{format_bytes(param_bytes)} + grads {format_bytes(trainable_bytes)} + "
                  f"optimizer state {format_bytes(optimizer_bytes)} [{optimizer_name}, "
                  f"{slots} slot(s)])"]
        show_table(SummaryTable(f'Model: "{self.name}"', headers, rows, footer), print_fn)

    def _layer_outputs(self, x):
        """``(layer, output)`` in order (``locate_nonfinite`` finds the first bad output)."""
        for layer in self._layers:
            x = layer(x, training=True)
            yield layer, x

