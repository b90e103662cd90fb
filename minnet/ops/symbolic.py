"""Symbolic tensors: what the functional API builds a graph from.

``mn.Input(shape)`` returns a ``KerasTensor``: a shape (batch first, ``None`` for the batch
size) and a dtype, with no values. Calling a layer on one does not compute anything; it
builds the layer for that shape, works out the output shape (``compute_output_shape``) and
records a ``Node`` (the layer and the tensors it was called on). Arithmetic on symbolic
tensors (``h + x``, ``h * 0.5``) records a node of a ``TensorOperation`` layer. A
``Model(inputs, outputs)`` then walks the nodes from the outputs back to the inputs once,
sorts them, and runs that list on real data::

    inp = mn.Input(shape=(8,))
    h = layers.Dense(16, activation="relu")(inp)      # a KerasTensor of shape (None, 16)
    out = layers.Dense(1)(h + inp @ ...)               # (only the ops listed below)

``Layer.__call__`` hands a symbolic input to ``x.symbolic_call(layer, x)`` (duck-typed, so
the layer base class needs nothing from this module).
"""
import numbers

import numpy as np

from minnet.autograd import no_grad
from minnet.layers._layout import check_user_layout

__all__ = ["KerasTensor", "Node", "is_symbolic", "flatten", "pack_like", "shape_str",
           "record_call", "describe"]


def shape_str(shape):
    """``(None, 3)`` as Keras prints shapes."""
    return ("(" + ", ".join("None" if s is None else str(s) for s in shape)
            + ("," if len(shape) == 1 else "") + ")")


def flatten(structure):
    """The leaves of a tensor, a list/tuple of them or a dict of them (dicts in key order)."""
    if isinstance(structure, dict):
        return [v for key in sorted(structure) for v in flatten(structure[key])]
    if isinstance(structure, (list, tuple)):
        return [v for item in structure for v in flatten(item)]
    return [structure]


def pack_like(structure, flat):
    """Inverse of ``flatten``: put the values of ``flat`` back into ``structure``'s shape."""
    iterator = iter(flat)

    def pack(item):
        if isinstance(item, dict):
            return {key: pack(item[key]) for key in sorted(item)}
        if isinstance(item, (list, tuple)):
            return type(item)(pack(v) for v in item) if isinstance(item, tuple) else [pack(v) for v in item]
        return next(iterator)

    return pack(structure)


def is_symbolic(value):
    """True for a KerasTensor or a (possibly nested) list/tuple/dict holding one."""
    if isinstance(value, KerasTensor):
        return True
    if isinstance(value, (list, tuple, dict)):
        return any(isinstance(v, KerasTensor) for v in flatten(value))
    return False


def describe(inputs):
    """``tensor 'dense/out' of shape (None, 3)`` for error messages."""
    flat = flatten(inputs)
    parts = [f"tensor '{t.name}' of shape {shape_str(t.shape)}" if isinstance(t, KerasTensor)
             else f"{type(t).__name__}" for t in flat]
    return parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"


class Node:
    """One call of a layer on symbolic tensors.

    Attributes:
        layer: the layer called.
        arguments: what it was called on (a KerasTensor, or a list/dict of them).
        parents: the KerasTensors among ``arguments``, flattened.
        outputs: the KerasTensors the call produced (one per output).
    """

    def __init__(self, layer, arguments, outputs):
        self.layer = layer
        self.arguments = arguments
        self.parents = [t for t in flatten(arguments) if isinstance(t, KerasTensor)]
        self.outputs = list(outputs)

    @property
    def is_input(self):
        return not self.parents

    def __repr__(self):
        return f"<Node {self.layer.name}: {describe(self.arguments)} -> {describe(self.outputs)}>"


class KerasTensor:
    """A symbolic tensor: shape (batch size ``None``) and dtype, no values.

    Args:
        shape: full shape, batch dimension first (``None`` allowed).
        dtype: ``"float32"`` (default) or another NumPy dtype name.
        name: a readable name (``"input_layer"``, ``"dense/out"``).

    Attributes:
        shape, dtype, name, ndim; ``node`` (the Node that produced it) and ``index`` (which
        output of that node it is).
    """

    def __init__(self, shape, dtype="float32", name=None, node=None, index=0):
        self.shape = tuple(None if s is None else int(s) for s in shape)
        self.dtype = np.dtype(dtype)
        self.name = name
        self.node = node
        self.index = index

    @property
    def ndim(self):
        return len(self.shape)

    def symbolic_call(self, layer, arguments):
        """Record ``layer(arguments)`` (called by ``Layer.__call__``); returns the output(s)."""
        return record_call(layer, arguments)

    def __repr__(self):
        return f"<KerasTensor shape={shape_str(self.shape)}, dtype={self.dtype.name}, name={self.name}>"

    def __array__(self, *args, **kwargs):
        raise TypeError(f"A symbolic tensor ({self!r}) has no values: it describes the input of a "
                        f"functional model. Build the model with `mn.Model(inputs, outputs)` and call "
                        f"the model on arrays instead.")

    def __bool__(self):
        raise TypeError(f"A symbolic tensor ({self!r}) has no truth value: it holds no data.")

    def __len__(self):
        raise TypeError(f"A symbolic tensor ({self!r}) has no length (its batch size is unknown).")

    # ---- arithmetic records a TensorOperation node (Keras 3 allows `h + x`, `h * 0.5`)
    def _op(self, op, other, reverse=False):
        from_layers = _OPERATION_LAYER[0]
        if isinstance(other, KerasTensor):
            layer = from_layers(op=op, dtype=np.result_type(self.dtype, other.dtype).name)
            arguments = [other, self] if reverse else [self, other]
            return layer(arguments)
        if isinstance(other, bool) or not isinstance(other, numbers.Real):
            return NotImplemented
        layer = from_layers(op=op, constant=float(other), reverse=reverse, dtype=self.dtype.name)
        return layer(self)

    def __add__(self, other): return self._op("add", other)
    def __radd__(self, other): return self._op("add", other, reverse=True)
    def __sub__(self, other): return self._op("subtract", other)
    def __rsub__(self, other): return self._op("subtract", other, reverse=True)
    def __mul__(self, other): return self._op("multiply", other)
    def __rmul__(self, other): return self._op("multiply", other, reverse=True)
    def __truediv__(self, other): return self._op("divide", other)
    def __rtruediv__(self, other): return self._op("divide", other, reverse=True)
    def __neg__(self): return self._op("multiply", -1.0)

    __array_priority__ = 1000     # `2.0 * h` with a NumPy scalar comes to __rmul__


# The layer class that symbolic arithmetic creates (minnet.layers.merging.TensorOperation);
# set by that module, which imports the Layer base class this module must not import.
_OPERATION_LAYER = [None]


def set_operation_layer(cls):
    """Register the layer class that records ``+ - * /`` on symbolic tensors."""
    _OPERATION_LAYER[0] = cls


def _shapes(arguments):
    if isinstance(arguments, dict):
        return {key: _shapes(value) for key, value in arguments.items()}
    if isinstance(arguments, (list, tuple)):
        return [_shapes(value) for value in arguments]
    return tuple(arguments.shape)


def record_call(layer, arguments):
    """Build ``layer`` for the symbolic ``arguments``, infer its output and record the node.

    Raises:
        ValueError / TypeError: the layer cannot take tensors of that shape; the message
            names the layer and the tensor(s).
    """
    for value in flatten(arguments):
        if not isinstance(value, KerasTensor):
            raise TypeError(f"Layer '{layer.name}' was called on a mix of symbolic tensors and "
                            f"{type(value).__name__}; in a functional model every input of a layer "
                            f"must come from `mn.Input` or another layer's output.")
    shapes = _shapes(arguments)
    if isinstance(shapes, tuple) and isinstance(arguments, KerasTensor) and \
            arguments.node is not None and not arguments.node.parents:
        # The user's own array enters here (straight from mn.Input): an image layer whose
        # layout was left to the default checks that the shape fits it.
        check_user_layout(layer, shapes)
    try:
        if not layer.built:
            layer.build(shapes)
            layer._build_input_shape = shapes if isinstance(shapes, tuple) else None
            layer.built = True
        elif isinstance(shapes, tuple) and all(s is not None for s in shapes[1:]):
            # A layer built before (a shared layer): run it once on zeros, so weights that do
            # not fit this input fail here, naming the tensor, and not at the first batch.
            with no_grad():
                layer(np.zeros((1,) + shapes[1:], dtype=layer.dtype), training=False)
        output_shape = layer.compute_output_shape(shapes)
    except (ValueError, TypeError, IndexError) as error:
        kind = TypeError if isinstance(error, TypeError) else ValueError
        raise kind(f"Layer '{layer.name}' ({type(layer).__name__}) cannot be called on "
                   f"{describe(arguments)}: {error}") from None
    multiple = isinstance(output_shape, list)
    shapes_out = output_shape if multiple else [output_shape]
    dtype = getattr(layer, "dtype", np.dtype("float32"))
    outputs = [KerasTensor(shape, dtype=dtype, name=layer.name if len(shapes_out) == 1
                           else f"{layer.name}_{i}", index=i)
               for i, shape in enumerate(shapes_out)]
    node = Node(layer, arguments, outputs)
    for tensor in outputs:
        tensor.node = node
    nodes = layer.__dict__.get("_inbound_nodes")
    if nodes is None:
        nodes = []
        layer._inbound_nodes = nodes
    nodes.append(node)
    return outputs if multiple else outputs[0]
