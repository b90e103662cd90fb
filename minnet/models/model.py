"""``Model``: the structure of a network that the trainer trains (Keras 3's ``keras.Model``).

Three kinds, one trainer (``minnet.trainers.Trainer``, inherited unchanged):

- **functional**: ``mn.Model(inputs, outputs)`` over symbolic tensors from ``mn.Input``;
  the graph is sorted once at construction (``models/layer_graph.py``);
- **subclassed**: ``class Net(mn.Model)`` creating layers in ``__init__`` (attributes, also
  inside lists and dicts, are tracked) and computing in ``call(x, training=False)``;
- **Sequential** (``models/sequential.py``): a stack of layers.

Example:
    >>> inp = mn.Input(shape=(8,))
    >>> h = layers.Dense(16, activation="relu")(inp)
    >>> model = mn.Model(inp, layers.Dense(1)(h))
    >>> model.compile(optimizer="adam", loss="mse")
"""
import json

import numpy as np

from minnet import saving
from minnet.autograd import Tensor, no_grad
from minnet.layers import deserialize as deserialize_layer
from minnet.layers import serialize as serialize_layer
from minnet.ops import symbolic
from minnet.layers.base import Layer
from minnet.layers import call_spec
from minnet.layers.call_context import call_context, current_training
from minnet.layers.core import InputLayer
from minnet.models.layer_graph import (FunctionalGraph, decode_value, encode_value, operation_path,
                                     resolve_operation, resolve_spec, structure_spec)
from minnet.models.summary_table import SummaryTable, show_table
from minnet.trainers import Trainer
from minnet.trainers.data_adapters import flat_leaves

__all__ = ["Model", "format_bytes", "format_count"]


def format_bytes(n_bytes):
    value = float(n_bytes)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024


def format_count(n):
    value = float(n)
    for unit in ("", "K", "M", "G", "T"):
        if abs(value) < 1000 or unit == "T":
            return f"{int(value)}" if unit == "" else f"{value:.2f} {unit}"
        value /= 1000


def _is_functional_call(args, kwargs):
    return (len(args) >= 2 or ("inputs" in kwargs and "outputs" in kwargs)
            or (len(args) == 1 and "outputs" in kwargs))


class Model(Trainer, Layer):
    """A network with ``compile``/``fit``/``evaluate``/``predict`` (see the module docstring).

    Args:
        inputs: (functional) a symbolic tensor from ``mn.Input``, or a list/dict of them.
        outputs: (functional) the symbolic tensor(s) computed from ``inputs``.
        name: the model's name; ``trainable``, ``dtype`` as for layers.

    A subclass calls ``super().__init__()`` (optionally with ``name=``) before assigning
    layers, and defines ``call(self, x, training=False)``.
    """

    def __init__(self, *args, **kwargs):
        functional = _is_functional_call(args, kwargs)
        if functional:
            inputs = kwargs.pop("inputs", None) if "inputs" in kwargs else args[0]
            outputs = kwargs.pop("outputs", None) if "outputs" in kwargs else args[1]
            args = args[2:] if len(args) >= 2 else ()
            if args:
                raise TypeError(f"Model(inputs, outputs) takes keyword arguments after the outputs. "
                                f"Received {len(args)} extra positional argument(s).")
        elif args:
            raise TypeError(f"Model() takes `inputs` and `outputs` (a functional model), or nothing "
                            f"(a subclass). Received {len(args)} positional argument(s).")
        name = kwargs.pop("name", None)
        trainable = kwargs.pop("trainable", True)
        dtype = kwargs.pop("dtype", "float32")
        if kwargs:
            raise TypeError(f"Model() got unexpected keyword argument(s) {sorted(kwargs)}.")
        Layer.__init__(self, name=name, dtype=dtype, trainable=trainable)
        self._init_trainer()
        self._graph = None
        if functional:
            self._graph = FunctionalGraph(inputs, outputs, model_name=self.name)
            self._build_input_shape = (self._graph.input_shapes[0] if len(self._graph.input_shapes) == 1
                                       else list(self._graph.input_shapes))
            self.built = True

    # ------------------------------------------------------------------ tracking
    def _tracked_layers(self):
        """Sublayers: the graph's layers (functional), or attributes holding layers, also in
        lists, tuples and dicts (subclassed)."""
        if self.__dict__.get("_graph") is not None:
            return list(self._graph.layers)
        found, seen = [], {id(self)}
        for value in self.__dict__.values():
            if isinstance(value, Layer):
                candidates = (value,)
            elif isinstance(value, (list, tuple)):
                candidates = [v for v in value if isinstance(v, Layer)]
            elif isinstance(value, dict):
                candidates = [v for v in value.values() if isinstance(v, Layer)]
            else:
                continue
            for layer in candidates:
                if id(layer) not in seen:
                    seen.add(id(layer))
                    found.append(layer)
        return found

    @property
    def layers(self):
        """The model's layers (a functional model lists its InputLayers first, as Keras)."""
        return self._tracked_layers()

    def get_layer(self, name=None, index=None):
        """The layer called ``name``, or the one at position ``index`` of ``layers``."""
        if (name is None) == (index is None):
            raise ValueError(f"Pass exactly one of `name` or `index` to get_layer. Received: "
                             f"name={name!r}, index={index!r}")
        layers = self.layers
        if index is not None:
            if isinstance(index, bool) or not isinstance(index, (int, np.integer)):
                raise TypeError(f"Invalid value for argument `index`: expected an int. Received: "
                                f"index={index!r}")
            if not -len(layers) <= index < len(layers):
                raise ValueError(f"Invalid value for argument `index`: model '{self.name}' has "
                                 f"{len(layers)} layers. Received: index={index}")
            return layers[index]
        for layer in layers:
            if layer.name == name:
                return layer
        raise ValueError(f"No such layer: {name!r} in model '{self.name}'. Existing layers are: "
                         f"{[layer.name for layer in layers]}.")

    # ------------------------------------------------------------------ structure
    @property
    def inputs(self):
        """The symbolic input tensor(s) of a functional model (None for a subclassed one)."""
        return None if self._graph is None else self._graph.inputs

    @property
    def outputs(self):
        """The symbolic output tensor(s) of a functional model (None for a subclassed one)."""
        return None if self._graph is None else self._graph.outputs

    @property
    def input(self):
        """Keras's ``model.input``: the input tensor (a list or dict for several); for a
        subclassed model, that of its first call on symbolic tensors."""
        if self._graph is None:
            return Layer.input.fget(self)
        inputs = self._graph.inputs
        return inputs[0] if isinstance(inputs, (list, tuple)) and len(inputs) == 1 else inputs

    @property
    def output(self):
        """Keras's ``model.output``: the output tensor (a list or dict for several)."""
        if self._graph is None:
            return Layer.output.fget(self)
        outputs = self._graph.outputs
        return outputs[0] if isinstance(outputs, (list, tuple)) and len(outputs) == 1 else outputs

    @property
    def input_names(self):
        if self._graph is None:
            return ["input"]
        return self._graph.input_keys or [t.name for t in self._graph.flat_inputs]

    @property
    def output_names(self):
        """Names of the outputs: a dict's keys, else the layers (or ops: ``"mean"`` for
        ``ops.mean``) that produce them, as Keras names them."""
        if self._graph is None:
            return ["output"]
        if self._graph.output_keys is not None:
            return list(self._graph.output_keys)
        names = []
        for tensor in self._graph.flat_outputs:
            name = tensor.node.name
            names.append(name if name not in names else f"{name}_{len(names)}")
        return names

    def structured_inputs(self, value):
        """Whether a list ``x`` means several inputs (True) rather than one array-like."""
        if self._graph is not None:
            return len(self._graph.flat_inputs) > 1
        return all(isinstance(v, (np.ndarray, Tensor)) for v in value) and len(value) > 1

    def structured_outputs(self, value):
        """Whether a list ``y`` means several outputs (True) rather than one array-like."""
        if self._graph is not None:
            return len(self._graph.flat_outputs) > 1
        return False

    def check_input_shapes(self, x):
        """Raise a ValueError when the arrays ``x`` cannot be inputs of this built model."""
        if self._graph is not None:
            self._graph.check_inputs(self._graph.input_values(x))

    @property
    def input_shape(self):
        """The input shape, batch first (a list of shapes for several inputs)."""
        if self._graph is not None:
            shapes = [tuple(s) for s in self._graph.input_shapes]
            return shapes[0] if len(shapes) == 1 else shapes
        if self._build_input_shape is None:
            raise AttributeError(f"Model '{self.name}' has no defined input shape yet: call it on "
                                 f"data or build it first.")
        return tuple(self._build_input_shape)

    @property
    def output_shape(self):
        """The output shape, batch first (a list of shapes for several outputs)."""
        if self._graph is not None:
            shapes = [tuple(t.shape) for t in self._graph.flat_outputs]
            return shapes[0] if len(shapes) == 1 else shapes
        if self._build_input_shape is None:
            raise AttributeError(f"Model '{self.name}' has no defined output shape yet: call it on "
                                 f"data or build it first.")
        return self.compute_output_shape(self._build_input_shape)

    def compute_output_shape(self, input_shape):
        if self._graph is not None:
            return self.output_shape
        return Layer.compute_output_shape(self, input_shape)

    # ------------------------------------------------------------------ building and calling
    def build(self, input_shape=None):
        """Create the weights: a subclassed model runs once on zeros of ``input_shape``."""
        if self._graph is not None or self.built:
            return
        if input_shape is None:
            raise ValueError(f"Model '{self.name}': `build()` needs `input_shape` (batch dim first).")
        shapes = input_shape if isinstance(input_shape, list) else [input_shape]
        probes = [np.zeros(tuple(1 if s is None else int(s) for s in shape), dtype=self.dtype)
                  for shape in shapes]
        self.build_from_data(probes[0] if len(probes) == 1 else probes)

    def build_from_data(self, x):
        """Build (create every weight) from real inputs: one forward pass on the first sample."""
        if self.built and self._graph is not None:
            return
        leaves = flat_leaves(x)
        first = [leaf[:1] for leaf in leaves]
        sample = first[0] if not isinstance(x, (list, tuple, dict)) else \
            (dict(zip(sorted(x), first)) if isinstance(x, dict) else first)
        with no_grad():
            self(sample, training=False)
        shapes = [(None,) + tuple(leaf.shape[1:]) for leaf in leaves]
        self._build_input_shape = shapes[0] if len(shapes) == 1 else shapes
        self.built = True

    def __call__(self, *args, **kwargs):
        """Run the model (``x``: array, Tensor, or list/dict for several inputs); or, on
        symbolic tensors, record the model as one layer of a bigger functional model.

        ``training`` is resolved as for layers (the argument, else the enclosing call's or
        loop's mode, else the flag) and passed down to every layer called inside; a
        subclass's ``call`` receives it only if it declares ``training``; other arguments
        (``mask=``, ...) go to ``call``.
        """
        training = kwargs.pop("training", None)
        if not args:
            if "inputs" not in kwargs:
                raise TypeError(f"Model '{self.name}' was called without an input.")
            args = (kwargs.pop("inputs"),)
        x = args[0]
        if symbolic.any_symbolic(args, kwargs):
            return self._symbolic_call(args, kwargs, training=training)
        added = self.__dict__.get("_added_losses")
        if added:          # add_loss terms are those of the last call, as for layers (Keras)
            added.clear()
        if training is None:
            if self._graph is not None and current_training() is None:
                # No mode given (Keras's training=None): a node keeps a mode given when the
                # graph was made (`Dropout(0.5)(x, training=True)`), the others use their flag.
                return self._graph.run(x, None)
            training = self.training
        else:
            training = bool(training)
        with call_context(training):
            if self._graph is not None:
                return self._graph.run(x, training)
            if not self.built:
                leaves = flat_leaves(x)
                shapes = [(None,) + tuple(getattr(leaf, "shape", np.shape(leaf))[1:]) for leaf in leaves]
                self._build_input_shape = shapes[0] if len(shapes) == 1 else shapes
                self.built = True
            info = call_spec.call_info(self)
            if info.training:
                kwargs["training"] = training
            if "mask" in kwargs and not info.mask and not info.var_keyword:
                kwargs.pop("mask")
            return self.call(*args, **kwargs)

    def call(self, x, training=False):
        """The forward computation: the graph for a functional model; a subclass overrides it."""
        if self._graph is not None:
            return self._graph.run(x, training)
        raise NotImplementedError(f"Model {type(self).__name__} must define `call(self, x, "
                                  f"training=False)` (a subclassed model), or be created as "
                                  f"`Model(inputs, outputs)`.")

    def _layer_outputs(self, x):
        """``(layer, output)`` pairs in order (functional models), for ``locate_nonfinite``;
        None for a subclassed model (its own output is checked)."""
        if self._graph is None:
            return None
        return self._graph.layer_outputs(x, True)

    def get_build_config(self):
        """The input shape(s) a subclassed model was built with (None for a functional one)."""
        if self._graph is not None or self._build_input_shape is None:
            return None
        shapes = self._build_input_shape
        as_list = lambda shape: [None if s is None else int(s) for s in shape]  # noqa: E731
        if isinstance(shapes, list):
            return {"input_shape": [as_list(s) for s in shapes]}
        return {"input_shape": as_list(shapes)}

    def build_from_config(self, config):
        """Build a subclassed model from ``get_build_config()`` (runs it once on zeros)."""
        shape = (config or {}).get("input_shape")
        if shape is None or self.weights:
            return
        if shape and isinstance(shape[0], list):
            self.build([tuple(s) for s in shape])
        else:
            self.build(tuple(shape))

    def count_params(self):
        """Number of scalars in all weights (the model must be built)."""
        if not self.built:
            raise ValueError(f"You tried to call count_params on model '{self.name}', but the model "
                             f"isn't built. Build it first by calling it on a batch, with "
                             f"`build(input_shape)`, or by starting it with `mn.Input`.")
        return int(sum(int(np.prod(w.shape)) for w in self.weights))

    # ------------------------------------------------------------------ summary
    def summary(self, print_fn=print, **kwargs):
        """Print a table of the layers: output shape, parameters and (functional) connections."""
        if not self.built:
            raise ValueError(f"Model '{self.name}' has not been built yet, so its weights and output "
                             f"shapes are unknown. Call it on a batch or `build(input_shape)` first.")
        rows = []
        if self._graph is not None:
            connections = self._graph.connections()
            shapes = {}
            for tensor in self._graph.flat_inputs:
                shapes[tensor.node.name] = symbolic.shape_str(tensor.shape)
            for node in self._graph.nodes:
                text = ", ".join(symbolic.shape_str(t.shape) for t in node.outputs)
                shapes.setdefault(node.name, text)
            for layer in self.layers:
                params = int(sum(int(np.prod(w.shape)) for w in layer.weights))
                rows.append((f"{layer.name} ({type(layer).__name__})", shapes.get(layer.name, "?"),
                             f"{params:,}", ", ".join(connections.get(layer.name, [])) or "-"))
            headers = ("Layer (type)", "Output Shape", "Param #", "Connected to")
        else:
            for layer in self.layers:
                params = int(sum(int(np.prod(w.shape)) for w in layer.weights))
                rows.append((f"{layer.name} ({type(layer).__name__})", "?" if not layer.built else
                             "built", f"{params:,}"))
            headers = ("Layer (type)", "Built", "Param #")
        kind = "Functional" if self._graph is not None else type(self).__name__
        trainable = sum(int(np.prod(w.shape)) for w in self.trainable_weights)
        non_trainable = sum(int(np.prod(w.shape)) for w in self.non_trainable_weights)
        param_bytes = sum(int(np.prod(w.shape)) * w.dtype.itemsize for w in self.weights)
        footer = [f"Total params: {trainable + non_trainable:,} ({format_bytes(param_bytes)})",
                  f"Trainable params: {trainable:,}",
                  f"Non-trainable params: {non_trainable:,}"]
        show_table(SummaryTable(f'Model: "{self.name}" ({kind})', headers, rows, footer,
                                left=2, left_also=(3,)), print_fn)

    # ------------------------------------------------------------------ config
    def get_config(self):
        """Functional: layers, nodes and input/output references; subclassed: name and
        trainable (override it, with ``from_config``, to save a subclass with arguments)."""
        config = {"name": self.name, "trainable": self._trainable}
        if self._graph is None:
            return config
        node_index, references = self._graph.node_references()

        def reference(tensor):
            return references[id(tensor)]

        layer_configs = []
        for layer in self._graph.layers:
            entry = serialize_layer(layer)
            entry["name"] = layer.name
            layer_configs.append(entry)
        nodes = [self._node_config(node, reference) for node in self._graph.nodes]
        config.update({"layers": layer_configs, "nodes": nodes,
                       "inputs": structure_spec(self._graph.inputs, reference),
                       "outputs": structure_spec(self._graph.outputs, reference)})
        return config

    def _node_config(self, node, reference):
        """One node of ``get_config``: the layer (or op) and its arguments. A layer called on
        one tensor, list or dict keeps the original ``arguments`` form."""
        args, kwargs = node.call_args, node.call_kwargs
        if not isinstance(node.operation, Layer):
            path = operation_path(node.operation)
            if path is None:
                raise ValueError(f"Model '{self.name}': the function {node.name!r} called in the "
                                 f"graph is not a function of minnet, so the config cannot name it; "
                                 f"wrap it in a Layer subclass (registered with "
                                 f"`mn.saving.register_keras_serializable`) to save the model.")
            entry = {"op": path, "name": FunctionalGraph.reference_name(node)}
        else:
            entry = {"layer": node.name}
            first = args[0] if len(args) == 1 and not kwargs else None
            if first is not None:
                try:
                    entry["arguments"] = structure_spec(first, reference)
                    return entry
                except (TypeError, KeyError):
                    pass
        where = f"Model '{self.name}', node '{node.name}'"
        entry["args"] = [encode_value(a, reference, where) for a in args]
        entry["kwargs"] = {k: encode_value(v, reference, where) for k, v in kwargs.items()}
        return entry

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        if "nodes" not in config:
            return cls(**config)
        layers = {}
        produced = {}      # layer name -> list of node outputs (list of KerasTensors)
        for entry in config.get("layers", []):
            if not isinstance(entry, dict) or "name" not in entry:
                raise ValueError(f"Invalid functional model config: a layer entry without a name: "
                                 f"{entry!r}")
            if entry.get("class_name") in ("Input", "InputLayer"):
                layer = InputLayer.from_config(dict(entry.get("config") or {}))
                tensor = symbolic.KerasTensor(layer.batch_shape, dtype=layer.dtype, name=layer.name)
                tensor.node = symbolic.Node(layer, outputs=[tensor])
                # bookkeeping, not a list of sublayers: set past __setattr__'s layer tracking
                layer.__dict__["_inbound_nodes"] = [tensor.node]
                layer.built = True
                layer._build_input_shape = layer.batch_shape
                produced[entry["name"]] = [[tensor]]
            else:
                layer = deserialize_layer({"class_name": entry["class_name"],
                                           "config": entry.get("config") or {}},
                                          custom_objects=custom_objects)
                # keyed by the config's name, as Keras: a get_config without "name" gives
                # the new layer a fresh name; it takes the saved one, which the nodes and
                # the weights in a model file refer to
                if layer.name != entry["name"] and "name" not in (entry.get("config") or {}):
                    layer.name = str(entry["name"])
                produced[entry["name"]] = []
            layers[entry["name"]] = layer

        def lookup(reference):
            try:
                name, node, index = reference
                return produced[name][node][index]
            except (KeyError, IndexError, TypeError, ValueError):
                raise ValueError(f"Invalid functional model config: the reference {reference!r} "
                                 f"names no tensor made before it.") from None

        for node in config["nodes"]:
            if isinstance(node, dict) and "op" in node:
                name = str(node.get("name"))
                operation = resolve_operation(node["op"])
                produced.setdefault(name, [])
            else:
                name = node.get("layer") if isinstance(node, dict) else None
                if name not in layers:
                    raise ValueError(f"Invalid functional model config: a node names unknown layer "
                                     f"{name!r}.")
                operation = layers[name]
            if "arguments" in node:
                out = operation(resolve_spec(node.get("arguments"), lookup))
            else:
                args = [decode_value(a, lookup) for a in node.get("args") or []]
                kwargs = {k: decode_value(v, lookup) for k, v in (node.get("kwargs") or {}).items()}
                if isinstance(operation, Layer):
                    out = operation(*args, **kwargs)
                else:     # a function (an op): recorded as it was, whatever it does itself
                    out = symbolic.symbolic_call(operation, args, kwargs,
                                                 name=name.removeprefix("op:"))
            produced[name].append(symbolic.flatten(out))
        inputs = resolve_spec(config["inputs"], lookup)
        outputs = resolve_spec(config["outputs"], lookup)
        return cls(inputs, outputs, name=config.get("name"), trainable=config.get("trainable", True))

    def to_json(self, **kwargs):
        """The architecture as a JSON string (``mn.models.model_from_json`` reads it back)."""
        return json.dumps({"class_name": "Functional" if self._graph is not None else type(self).__name__,
                           "config": self.get_config()}, **kwargs)

    def extra_repr(self):
        if self._graph is not None:
            return f"{len(self._graph.nodes)} nodes"
        return ""

    # ------------------------------------------------------------------ saving
    def save(self, path):
        """Save architecture, weights, compile settings and optimizer state to ONE file
        (atomic write; see ``minnet.saving.save_model``)."""
        saving.save_model(self, path)

    def export(self, filepath, format="onnx", verbose=None, input_signature=None, **kwargs):
        """Export the model for inference outside minnet (Keras 3's ``Model.export``).

        Args:
            filepath: the file to write (``model.onnx``).
            format: ``"onnx"`` (the only format minnet writes; Keras's ``"tf_saved_model"``
                needs TensorFlow).
            verbose: print a summary line of what was written.
            input_signature: accepted for Keras compatibility; the inputs' shapes are the
                model's own (the batch axis stays dynamic).
            **kwargs: ``opset`` (17 by default).

        Returns:
            The ``onnx.ModelProto`` that was written (needs the ``onnx`` package).
        """
        if format != "onnx":
            raise ValueError("Invalid value for argument `format`: expected 'onnx' (minnet's only "
                             f"export format). Received: format={format!r}")
        unknown = sorted(set(kwargs) - {"opset"})
        if unknown:
            raise TypeError(f"export() got unexpected keyword arguments {unknown}; it accepts "
                            "filepath, format, verbose, input_signature and opset.")
        return saving.export_onnx(self, filepath, verbose=bool(verbose), **kwargs)

    def save_weights(self, path):
        """Save ``get_weights()`` to an ``.npz`` file (atomic write); ``*.weights.h5``: Keras 3's file."""
        saving.save_weights(self, path)

    def load_weights(self, path):
        """Load weights saved by ``save_weights`` or Keras's ``*.weights.h5`` (shapes are checked)."""
        saving.load_weights(self, path)
