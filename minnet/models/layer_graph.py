"""A functional model's graph of layer calls: the nodes between symbolic inputs and outputs,
sorted once.

``FunctionalGraph(inputs, outputs)`` walks back from the outputs through the recorded
``Node``s (``minnet.layers.symbolic``), checks that every path ends at one of the given
inputs, and sorts the nodes so each runs after the nodes it reads from. That sorted list
(the *plan*) is computed once; running the model on data is a loop over it::

    values[slot of each input] = the input arrays
    for layer, mode, argument_slots, output_slots in plan:
        values[output slot] = layer(values[argument slots], training=training)

so a functional model costs one list lookup per layer more than a ``Sequential``
(``benchmarks/bench_functional.py`` measures it).

Config (what ``save`` writes): the layers, the nodes in plan order (each the layer's name
and its arguments as references ``[layer name, node index, output index]``), and the
model's input and output references.
"""
import importlib

import numpy as np

from minnet.autograd import Tensor
from minnet.layers._layout import input_mismatch_hint
from minnet.layers.base import Layer
from minnet.ops import symbolic

__all__ = ["FunctionalGraph", "structure_spec", "resolve_spec", "encode_value", "decode_value",
           "operation_path", "resolve_operation"]

_SINGLE, _LIST, _DICT, _GENERAL, _FUNCTION = 0, 1, 2, 3, 4


def _as_tensor(value):
    return Tensor(value) if isinstance(value, np.ndarray) else value


class _Slot:
    """Where a node's argument reads its value: ``values[index]``."""

    __slots__ = ("index",)

    def __init__(self, index):
        self.index = index


def _check_structure(value, what):
    """``value`` as (kind, flat list of KerasTensors); lists/dicts one level deep."""
    if isinstance(value, symbolic.KerasTensor):
        return _SINGLE, [value]
    if isinstance(value, dict):
        items = [value[key] for key in sorted(value)]
        kind = _DICT
    elif isinstance(value, (list, tuple)):
        items = list(value)
        kind = _LIST
    else:
        raise TypeError(f"Invalid value for argument `{what}`: expected a symbolic tensor (from "
                        f"`mn.Input` or a layer called on one), or a list/dict of them. Received: "
                        f"{type(value).__name__}")
    if not items:
        raise ValueError(f"Invalid value for argument `{what}`: expected at least one tensor.")
    for item in items:
        if not isinstance(item, symbolic.KerasTensor):
            raise TypeError(f"Invalid value for argument `{what}`: every entry must be a symbolic "
                            f"tensor (from `mn.Input` or a layer called on one). Received: "
                            f"{type(item).__name__}")
    return kind, items


def structure_spec(structure, reference):
    """A JSON-able description of ``structure`` with ``reference(tensor)`` at the leaves."""
    if isinstance(structure, symbolic.KerasTensor):
        return {"tensor": reference(structure)}
    if isinstance(structure, dict):
        return {"dict": {key: reference(structure[key]) for key in sorted(structure)}}
    return {"list": [reference(t) for t in structure]}


def resolve_spec(spec, lookup):
    """Inverse of ``structure_spec``: ``lookup(reference)`` gives each tensor back."""
    if not isinstance(spec, dict) or len(spec) != 1:
        raise ValueError(f"Invalid functional model config: expected a tensor reference structure, "
                         f"received {spec!r}")
    (kind, value), = spec.items()
    if kind == "tensor":
        return lookup(value)
    if kind == "list":
        return [lookup(v) for v in value]
    if kind == "dict":
        return {key: lookup(v) for key, v in value.items()}
    raise ValueError(f"Invalid functional model config: unknown structure {kind!r}")


def encode_value(value, reference, where):
    """A JSON-able description of one call argument: tensors by reference, structures kept,
    constants (None, bool, int, float, str) as they are, slices and ``...`` (indices).

    Raises:
        ValueError: a constant that cannot be written to a file (an array, an object).
    """
    if isinstance(value, symbolic.KerasTensor):
        return {"tensor": reference(value)}
    if isinstance(value, (list, tuple)):
        return {"tuple" if isinstance(value, tuple) else "list":
                [encode_value(v, reference, where) for v in value]}
    if isinstance(value, dict):
        return {"dict": {str(k): encode_value(v, reference, where) for k, v in value.items()}}
    if value is None or isinstance(value, (bool, int, float, str)):
        return {"constant": value}
    if isinstance(value, (np.integer, np.floating, np.bool_)):
        return {"constant": value.item()}
    if isinstance(value, slice):            # an index such as x[:, -1] (``ops.get_item``)
        return {"slice": [encode_value(v, reference, where)
                          for v in (value.start, value.stop, value.step)]}
    if value is Ellipsis:
        return {"ellipsis": None}
    raise ValueError(f"{where}: the argument {value!r} ({type(value).__name__}) cannot be saved in "
                     f"a functional model's config; pass a tensor (from `mn.Input` or a layer), a "
                     f"constant (None, bool, int, float, str), a slice or `...`.")


def decode_value(spec, lookup):
    """Inverse of ``encode_value``."""
    if not isinstance(spec, dict) or len(spec) != 1:
        raise ValueError(f"Invalid functional model config: expected an argument description, "
                         f"received {spec!r}")
    (kind, value), = spec.items()
    if kind == "tensor":
        return lookup(value)
    if kind == "constant":
        return value
    if kind in ("list", "tuple"):
        items = [decode_value(v, lookup) for v in value]
        return tuple(items) if kind == "tuple" else items
    if kind == "dict":
        return {key: decode_value(v, lookup) for key, v in value.items()}
    if kind == "slice" and isinstance(value, list) and len(value) == 3:
        return slice(*(decode_value(v, lookup) for v in value))
    if kind == "ellipsis":
        return Ellipsis
    raise ValueError(f"Invalid functional model config: unknown argument kind {kind!r}")


def operation_path(operation):
    """``"minnet.ops.numpy:add"`` for a function of minnet called in a graph, or None."""
    module = getattr(operation, "__module__", None) or ""
    name = getattr(operation, "__qualname__", None) or ""
    if module.split(".")[0] != "minnet" or not name or "<" in name:
        return None
    return f"{module}:{name}"


def resolve_operation(path):
    """The function ``operation_path`` named (only functions inside minnet are looked up).

    Raises:
        ValueError: a path outside minnet, or one that names nothing.
    """
    module_name, _, name = str(path).partition(":")
    if module_name.split(".")[0] != "minnet" or not name:
        raise ValueError(f"Invalid functional model config: the operation {path!r} is not a "
                         f"function of minnet.")
    try:
        target = importlib.import_module(module_name)
        for part in name.split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError):
        raise ValueError(f"Invalid functional model config: no operation {path!r} in this version "
                         f"of minnet.") from None
    return target


class FunctionalGraph:
    """The sorted nodes of a functional model and how to run them.

    Args:
        inputs: a KerasTensor from ``mn.Input``, or a list/dict of them.
        outputs: KerasTensor(s) computed from those inputs.
        model_name: for error messages.

    Attributes:
        inputs, outputs: as given (structure kept); ``flat_inputs``/``flat_outputs``.
        nodes: the nodes in execution order (input nodes excluded).
        layers: every layer, input layers first, in first-use order.
    """

    def __init__(self, inputs, outputs, model_name="model"):
        self.model_name = model_name
        self.input_kind, self.flat_inputs = _check_structure(inputs, "inputs")
        self.output_kind, self.flat_outputs = _check_structure(outputs, "outputs")
        self.inputs, self.outputs = inputs, outputs
        self.input_keys = sorted(inputs) if isinstance(inputs, dict) else None
        self.output_keys = sorted(outputs) if isinstance(outputs, dict) else None
        for tensor in self.flat_inputs:
            if tensor.node is None or not tensor.node.is_input:
                raise ValueError(f"Model '{model_name}': every entry of `inputs` must be a tensor made "
                                 f"by `mn.Input(...)`. Received {tensor!r}, an output of layer "
                                 f"'{getattr(tensor.node, 'layer', None) and tensor.node.name}'.")
        if len({id(t) for t in self.flat_inputs}) != len(self.flat_inputs):
            raise ValueError(f"Model '{model_name}': the same Input appears twice in `inputs`.")
        self.nodes = self._sort()
        self.layers = self._layers()
        self._make_plan()

    # ---- construction -----------------------------------------------------------------
    def _sort(self):
        """Nodes from the inputs to the outputs, each after the nodes it reads (DFS post-order)."""
        input_ids = {id(t) for t in self.flat_inputs}
        order, done, active = [], set(), set()

        def visit(tensor, consumer):
            node = tensor.node
            if node is None:
                raise ValueError(f"Model '{self.model_name}': tensor {tensor!r} was not produced by a "
                                 f"layer or `mn.Input`.")
            if node.is_input:
                if id(tensor) not in input_ids:
                    raise ValueError(
                        f"Graph disconnected: model '{self.model_name}' cannot obtain a value for "
                        f"input {tensor!r}, which layer '{consumer}' needs; it is not among the "
                        f"model's `inputs` {[t.name for t in self.flat_inputs]}. Pass it in `inputs`.")
                return
            if id(node) in done:
                return
            if id(node) in active:
                raise ValueError(f"Model '{self.model_name}': the graph has a cycle at layer "
                                 f"'{node.name}'.")
            active.add(id(node))
            stack = [(node, iter(node.parents))]
            # Iterative DFS: deep graphs (hundreds of layers) do not hit the recursion limit.
            while stack:
                current, parents = stack[-1]
                advanced = False
                for parent in parents:
                    parent_node = parent.node
                    if parent_node is None:
                        raise ValueError(f"Model '{self.model_name}': tensor {parent!r} was not "
                                         f"produced by a layer or `mn.Input`.")
                    if parent_node.is_input:
                        if id(parent) not in input_ids:
                            raise ValueError(
                                f"Graph disconnected: model '{self.model_name}' cannot obtain a value "
                                f"for input {parent!r}, which layer '{current.name}' needs; it is "
                                f"not among the model's `inputs` "
                                f"{[t.name for t in self.flat_inputs]}. Pass it in `inputs`.")
                        continue
                    if id(parent_node) in done:
                        continue
                    if id(parent_node) in active:
                        raise ValueError(f"Model '{self.model_name}': the graph has a cycle at layer "
                                         f"'{parent_node.name}'.")
                    active.add(id(parent_node))
                    stack.append((parent_node, iter(parent_node.parents)))
                    advanced = True
                    break
                if not advanced:
                    stack.pop()
                    active.discard(id(current))
                    done.add(id(current))
                    order.append(current)

        for tensor in self.flat_outputs:
            visit(tensor, "(model output)")
        return order

    def _layers(self):
        layers, seen = [], set()
        for tensor in self.flat_inputs:
            layer = tensor.node.layer
            if id(layer) not in seen:
                seen.add(id(layer))
                layers.append(layer)
        for node in self.nodes:
            if isinstance(node.operation, Layer) and id(node.operation) not in seen:
                seen.add(id(node.operation))
                layers.append(node.operation)
        return layers

    def _make_plan(self):
        slots = {}
        for tensor in self.flat_inputs:
            slots[id(tensor)] = len(slots)

        def to_slot(value):
            return _Slot(slots[id(value)]) if isinstance(value, symbolic.KerasTensor) else value

        plan = []
        for node in self.nodes:
            operation, args, kwargs = node.operation, node.call_args, node.call_kwargs
            is_layer = isinstance(operation, Layer)
            first = args[0] if len(args) == 1 and not kwargs and is_layer else None
            if isinstance(first, symbolic.KerasTensor):
                mode, argument_slots = _SINGLE, slots[id(first)]
            elif isinstance(first, dict) and all(isinstance(t, symbolic.KerasTensor)
                                                 for t in first.values()):
                mode, argument_slots = _DICT, {key: slots[id(t)] for key, t in first.items()}
            elif isinstance(first, (list, tuple)) and all(isinstance(t, symbolic.KerasTensor)
                                                          for t in first):
                mode, argument_slots = _LIST, [slots[id(t)] for t in first]
            else:
                mode = _GENERAL if is_layer else _FUNCTION
                argument_slots = (symbolic.map_structure(to_slot, tuple(args)),
                                  symbolic.map_structure(to_slot, dict(kwargs)))
            output_slots = []
            for tensor in node.outputs:
                slots[id(tensor)] = len(slots)
                output_slots.append(slots[id(tensor)])
            plan.append((operation, mode, argument_slots,
                         output_slots[0] if len(output_slots) == 1 else output_slots))
        self.n_slots = len(slots)
        self.plan = plan
        self.input_slots = [slots[id(t)] for t in self.flat_inputs]
        self.output_slots = [slots[id(t)] for t in self.flat_outputs]
        self.input_shapes = [t.shape for t in self.flat_inputs]

    # ---- running ----------------------------------------------------------------------
    def input_values(self, x):
        """The model's input values as a flat list in ``flat_inputs`` order."""
        n = len(self.flat_inputs)
        if isinstance(x, dict):
            names = self.input_keys or [t.name for t in self.flat_inputs]
            missing = [k for k in names if k not in x]
            if missing:
                raise ValueError(f"Model '{self.model_name}' expects inputs {names}; missing "
                                 f"{missing} in the dict received (keys {sorted(x)}).")
            return [x[k] for k in names]
        if isinstance(x, (list, tuple)) and (n > 1 or (len(x) == 1 and not np.isscalar(x[0])
                                                       and getattr(x[0], "ndim", 0) >= 1)):
            if len(x) != n:
                raise ValueError(f"Model '{self.model_name}' expects {n} input(s) "
                                 f"{[t.name for t in self.flat_inputs]}; received a list of {len(x)}.")
            return list(x)
        if n != 1:
            raise ValueError(f"Model '{self.model_name}' expects {n} inputs "
                             f"{[t.name for t in self.flat_inputs]} (a list or a dict); received one "
                             f"{type(x).__name__}.")
        return [x]

    def check_inputs(self, values):
        for i, (value, expected) in enumerate(zip(values, self.input_shapes)):
            shape = getattr(value, "shape", None)
            if shape is None:
                value = np.asarray(value)
                shape = value.shape
            if len(shape) != len(expected) or any(
                    e is not None and e != s for e, s in zip(expected[1:], shape[1:])):
                raise ValueError(f"Input {i} ('{self.flat_inputs[i].name}') of model "
                                 f"'{self.model_name}' is incompatible with the model: expected "
                                 f"shape {symbolic.shape_str(expected)}, found shape {tuple(shape)}."
                                 + input_mismatch_hint(expected, shape))

    def run(self, x, training):
        """Run the plan on ``x`` (array/Tensor, or a list/dict for several inputs)."""
        inputs = self.input_values(x)
        self.check_inputs(inputs)
        values = self._input_slots(inputs)
        for _ in self._execute(values, training):
            pass
        outputs = [values[s] for s in self.output_slots]
        outputs = [o if isinstance(o, Tensor) else Tensor(np.asarray(o)) for o in outputs]
        if self.output_kind == _SINGLE:
            return outputs[0]
        if self.output_kind == _DICT:
            return dict(zip(self.output_keys, outputs))
        return outputs

    def layer_outputs(self, x, training):
        """Yield ``(layer, output)`` node by node (to find the first non-finite output)."""
        yield from self._execute(self._input_slots(self.input_values(x)), training)

    def _input_slots(self, inputs):
        values = [None] * self.n_slots
        for slot, value in zip(self.input_slots, inputs):
            values[slot] = value
        return values

    def _execute(self, values, training):
        """Run the plan over ``values`` (one per slot, filled in place), yielding
        ``(layer, output)`` for each output as it is computed: the one loop behind ``run``
        and ``layer_outputs``."""
        def fill(value):
            return values[value.index] if type(value) is _Slot else value

        for layer, mode, argument_slots, output_slots in self.plan:
            if mode == _SINGLE:
                out = layer(values[argument_slots], training=training)
            elif mode == _LIST:
                out = layer([values[s] for s in argument_slots], training=training)
            elif mode == _DICT:
                out = layer({key: values[s] for key, s in argument_slots.items()}, training=training)
            else:
                args = symbolic.map_structure(fill, argument_slots[0])
                kwargs = symbolic.map_structure(fill, argument_slots[1])
                if mode == _FUNCTION:
                    # A plain function (an op) gets Tensors, as when its output was inferred.
                    args = symbolic.map_structure(_as_tensor, args)
                if mode == _GENERAL and training is not None:
                    # Keras's rule: the model's mode, when it has one, wins over a mode given
                    # when the graph was made (`Dropout(0.5)(x, training=True)` is active in
                    # `model(x)`, not in `predict` or `fit`'s inference passes).
                    kwargs["training"] = training
                out = layer(*args, **kwargs)
            if type(output_slots) is int:
                values[output_slots] = out
                yield layer, out
            else:
                for slot, value in zip(output_slots, symbolic.flatten(out)):
                    values[slot] = value
                    yield layer, value

    # ---- description ------------------------------------------------------------------
    def node_references(self):
        """``{id(node): local index}`` per layer and ``{id(tensor): [layer, node, index]}``."""
        counts, node_index, references = {}, {}, {}
        for tensor in self.flat_inputs:
            layer = tensor.node.layer
            node_index[id(tensor.node)] = 0
            counts[id(layer)] = 1
            references[id(tensor)] = [layer.name, 0, 0]
        for node in self.nodes:
            name = self.reference_name(node)
            key = id(node.operation) if isinstance(node.operation, Layer) else name
            index = counts.get(key, 0)
            counts[key] = index + 1
            node_index[id(node)] = index
            for i, tensor in enumerate(node.outputs):
                references[id(tensor)] = [name, index, i]
        return node_index, references

    @staticmethod
    def reference_name(node):
        """A layer's name, or ``op:<name>`` for a plain function (an op) called in the graph."""
        return node.name if isinstance(node.operation, Layer) else f"op:{node.name}"

    def connections(self):
        """``{layer name: ["parent_layer[node][index]", ...]}`` for the summary's last column."""
        _, references = self.node_references()
        result = {}
        for node in self.nodes:
            parents = [references[id(t)] for t in node.parents]
            result.setdefault(self.reference_name(node), []).extend(
                f"{n}[{i}][{j}]" for n, i, j in parents)
        return result
