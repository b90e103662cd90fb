"""Symbolic tensors: what the functional API builds a graph from.

``mn.Input(shape)`` returns a ``KerasTensor``: a shape (batch first, ``None`` for unknown
sizes) and a dtype, with no values. Calling a layer, or an op, on one computes nothing: it
works out the output's shape and dtype and records a ``Node`` (the operation, the positional
and keyword arguments it was called with, the outputs). A ``Model(inputs, outputs)`` then
walks the nodes from the outputs back to the inputs once, sorts them, and runs that list on
real data::

    inp = mn.Input(shape=(8,))
    h = layers.Dense(16, activation="relu")(inp)      # a KerasTensor of shape (None, 16)
    out = layers.Dense(1)(h + inp)                     # arithmetic records a node too

This module sits on the ops floor (below ``layers``), so that an op such as
``ops.matmul`` on a symbolic tensor records a node as a layer does. It knows nothing of
layers: ``Layer.__call__`` works out a layer's output itself (build, ``compute_output_shape``)
and calls ``record``; a plain function goes through ``symbolic_call``.

How an output is inferred without values (``infer_outputs``): the function runs twice on
zero-filled concrete tensors, each unknown size replaced by a placeholder size that differs
between the two runs (batch axis 2 then 3; every other unknown axis its own size, 7, 9, 11,
... then 8, 10, 12, ...). An output size that is the same in both runs is known; one that
differs depends on an unknown input size and becomes ``None``. Two runs, rather than one run
whose placeholder sizes are mapped back to None, never mistake a constant size that happens
to equal a placeholder for an unknown one, and also catch sizes derived from unknown ones
(``Flatten`` of ``(None, T, 4)`` gives ``4 T``). When the distinct sizes are refused (an op
that needs two unknown axes to agree), the runs are repeated with one size for every
unknown non-batch axis.
"""
import numbers

import numpy as np

from minnet.autograd import Tensor, no_grad

__all__ = ["KerasTensor", "Node", "is_symbolic", "any_symbolic", "flatten", "pack_like",
           "shape_str", "describe", "operation_name", "record", "infer_outputs",
           "symbolic_call", "map_structure", "flatten_specs"]


def shape_str(shape):
    """``(None, 3)`` as Keras prints shapes."""
    return ("(" + ", ".join("None" if s is None else str(s) for s in shape)
            + ("," if len(shape) == 1 else "") + ")")


def flatten(structure):
    """The leaves of a tensor, a list/tuple of them or a dict of them (dicts in key order)."""
    if isinstance(structure, dict):
        return [v for key in sorted(structure, key=str) for v in flatten(structure[key])]
    if isinstance(structure, (list, tuple)):
        return [v for item in structure for v in flatten(item)]
    return [structure]


def pack_like(structure, flat):
    """Inverse of ``flatten``: put the values of ``flat`` back into ``structure``'s shape."""
    iterator = iter(flat)

    def pack(item):
        if isinstance(item, dict):
            packed = {key: pack(item[key]) for key in sorted(item, key=str)}
            return {key: packed[key] for key in item}
        if isinstance(item, (list, tuple)):
            return type(item)(pack(v) for v in item) if isinstance(item, tuple) else [pack(v) for v in item]
        return next(iterator)

    return pack(structure)


def map_structure(fn, structure):
    """``structure`` with every leaf replaced by ``fn(leaf)`` (lists, tuples, dicts kept)."""
    if isinstance(structure, dict):
        return {key: map_structure(fn, value) for key, value in structure.items()}
    if isinstance(structure, tuple):
        return tuple(map_structure(fn, value) for value in structure)
    if isinstance(structure, list):
        return [map_structure(fn, value) for value in structure]
    return fn(structure)


def is_symbolic(value):
    """True for a KerasTensor or a (possibly nested) list/tuple/dict holding one."""
    if isinstance(value, KerasTensor):
        return True
    if isinstance(value, (list, tuple, dict)):
        return any(isinstance(v, KerasTensor) for v in flatten(value))
    return False


def any_symbolic(args, kwargs=None):
    """True when a positional or keyword argument is (or holds) a KerasTensor."""
    return any(is_symbolic(a) for a in args) or bool(kwargs) and any(
        is_symbolic(v) for v in kwargs.values())


def describe(inputs):
    """``tensor 'dense' of shape (None, 3)`` for error messages."""
    flat = flatten(inputs)
    parts = [f"tensor '{t.name}' of shape {shape_str(t.shape)}" if isinstance(t, KerasTensor)
             else f"{type(t).__name__}" for t in flat]
    return parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"


def operation_name(operation):
    """A readable name for a layer (its ``name``) or a function (its ``__name__``)."""
    name = getattr(operation, "name", None)
    if isinstance(name, str) and name:
        return name
    return getattr(operation, "__name__", type(operation).__name__)


class Node:
    """One call of an operation (a layer, or a plain function) on symbolic tensors.

    Args:
        operation: what was called: a layer, or a callable (an op).
        call_args: the positional arguments (KerasTensors, structures of them, constants).
        call_kwargs: the keyword arguments.
        outputs: the KerasTensors the call produced (one per output).
        name: the node's name (default: ``operation_name(operation)``).

    Attributes:
        operation (also ``layer``), call_args, call_kwargs, outputs, name;
        ``parents``: the KerasTensors among the arguments, flattened (positional first).
    """

    def __init__(self, operation, call_args=(), call_kwargs=None, outputs=(), name=None):
        self.operation = operation
        self.call_args = tuple(call_args)
        self.call_kwargs = dict(call_kwargs or {})
        self.outputs = list(outputs)
        self.name = name or operation_name(operation)
        self.parents = [t for t in flatten(list(self.call_args)) + flatten(self.call_kwargs)
                        if isinstance(t, KerasTensor)]

    @property
    def layer(self):
        """The operation called (kept under the name the functional graph has always used)."""
        return self.operation

    @property
    def arguments(self):
        """The first positional argument (the main input), as Keras's ``call_spec.first_arg``."""
        return self.call_args[0] if self.call_args else None

    @property
    def is_input(self):
        return not self.parents

    @property
    def input_tensors(self):
        return list(self.parents)

    @property
    def output_tensors(self):
        return list(self.outputs)

    def __repr__(self):
        return f"<Node {self.name}: {describe(self.parents)} -> {describe(self.outputs)}>"


class KerasTensor:
    """A symbolic tensor: shape (``None`` for unknown sizes) and dtype, no values.

    Args:
        shape: full shape, batch dimension first (``None`` allowed).
        dtype: ``"float32"`` (default) or another NumPy dtype name.
        name: a readable name (``"input_layer"``, ``"dense"``).

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
        """Record ``layer(arguments)`` (kept for layers that override ``__call__``)."""
        return layer._symbolic_call((arguments,), {})

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
        # Float tensors with a float tensor or a Python number: a TensorOperation layer (a
        # layer of the model's config). Integer tensors, arrays and other constants: the
        # ops function (`ops.add`, ...), which keeps Keras's dtypes (`ids + 1` stays int).
        from_layers = _OPERATION_LAYER[0]
        if isinstance(other, KerasTensor):
            if self.dtype.kind == "f" and other.dtype.kind == "f":
                layer = from_layers(op=op, dtype=_float_name(np.result_type(self.dtype, other.dtype)))
                return layer([other, self] if reverse else [self, other])
        elif self.dtype.kind == "f" and isinstance(other, numbers.Real) and not isinstance(other, bool):
            layer = from_layers(op=op, constant=float(other), reverse=reverse,
                                dtype=_float_name(self.dtype))
            return layer(self)
        elif not isinstance(other, (numbers.Number, np.ndarray, np.generic, Tensor)):
            return NotImplemented
        return self._record(op, other, self) if reverse else self._record(op, self, other)

    def __add__(self, other): return self._op("add", other)
    def __radd__(self, other): return self._op("add", other, reverse=True)
    def __sub__(self, other): return self._op("subtract", other)
    def __rsub__(self, other): return self._op("subtract", other, reverse=True)
    def __mul__(self, other): return self._op("multiply", other)
    def __rmul__(self, other): return self._op("multiply", other, reverse=True)
    def __truediv__(self, other): return self._op("divide", other)
    def __rtruediv__(self, other): return self._op("divide", other, reverse=True)
    def __neg__(self):
        return self._op("multiply", -1.0) if self.dtype.kind == "f" else self._record("negative", self)

    # ---- the other operators of Keras 3's KerasTensor (all but ==, which stays identity so
    # tensors can be dict keys, as in Keras): each records the minnet.ops function of that
    # name (symbolic_call), as `ops.greater(h, 0)` would.
    def _record(self, name, *args, **kwargs):
        return symbolic_call(_OPERATOR_OPS[name], args, kwargs)

    def __matmul__(self, other): return self._record("matmul", self, other)
    def __rmatmul__(self, other): return self._record("matmul", other, self)
    def __pow__(self, other): return self._record("power", self, other)
    def __rpow__(self, other): return self._record("power", other, self)
    def __floordiv__(self, other): return self._record("floor_divide", self, other)
    def __rfloordiv__(self, other): return self._record("floor_divide", other, self)
    def __mod__(self, other): return self._record("mod", self, other)
    def __rmod__(self, other): return self._record("mod", other, self)
    def __lt__(self, other): return self._record("less", self, other)
    def __le__(self, other): return self._record("less_equal", self, other)
    def __gt__(self, other): return self._record("greater", self, other)
    def __ge__(self, other): return self._record("greater_equal", self, other)
    def __ne__(self, other): return self._record("not_equal", self, other)
    def __and__(self, other): return self._record("logical_and", self, other)
    def __rand__(self, other): return self._record("logical_and", other, self)
    def __or__(self, other): return self._record("logical_or", self, other)
    def __ror__(self, other): return self._record("logical_or", other, self)
    def __xor__(self, other): return self._record("logical_xor", self, other)
    def __rxor__(self, other): return self._record("logical_xor", other, self)
    def __invert__(self): return self._record("logical_not", self)
    def __abs__(self): return self._record("absolute", self)
    def __getitem__(self, key): return self._record("get_item", self, key)
    def __round__(self, ndigits=None): return self._record("round", self, decimals=ndigits or 0)

    __hash__ = object.__hash__    # __ne__ is an operator: hashing stays by identity

    def __iter__(self):
        # with __getitem__ defined, Python would otherwise iterate x[0], x[1], ... forever
        raise TypeError(f"A symbolic tensor ({self!r}) cannot be iterated: it holds no data "
                        f"(index it, `x[:, 0]`, or use `ops.unstack`).")

    __array_priority__ = 1000     # `2.0 * h` with a NumPy scalar comes to __rmul__


def _float_name(dtype):
    dtype = np.dtype(dtype)
    return dtype.name if dtype.kind == "f" and dtype.itemsize >= 4 else "float32"


# The layer class that symbolic arithmetic creates (minnet.layers.merging.TensorOperation);
# set by that module, which imports the Layer base class this module must not import.
_OPERATION_LAYER = [None]


def set_operation_layer(cls):
    """Register the layer class that records ``+ - * /`` on symbolic tensors."""
    _OPERATION_LAYER[0] = cls


# The minnet.ops functions the other operators record (``"greater"``: ``ops.greater``, ...);
# set by minnet.ops, which this module sits below.
_OPERATOR_OPS = {}


def set_operator_ops(functions):
    """Register the ops functions behind ``@ ** // % < <= > >= != & | ^ ~ abs() [] round()``
    (and ``+ - * /`` of integer tensors or array constants)."""
    _OPERATOR_OPS.update(functions)


# ---- recording ---------------------------------------------------------------------------
def record(operation, args, kwargs, output_specs, name=None, track=True):
    """Record ``operation(*args, **kwargs)`` as a Node whose outputs have ``output_specs``.

    Args:
        operation: a layer or a callable.
        args, kwargs: the call's arguments (KerasTensors among them).
        output_specs: ``(shape, dtype)`` for one output, or a list/tuple/dict of them.
        name: the node's name (default: the operation's).
        track: append the node to ``operation._inbound_nodes`` (layers: ``layer.input`` and
            ``layer.output`` read it); a plain function is not given a list that would keep
            every graph it was ever used in alive.

    Returns:
        The output KerasTensor(s), in the structure of ``output_specs``.
    """
    name = name or operation_name(operation)
    single = _is_spec(output_specs)
    flat = [output_specs] if single else flatten_specs(output_specs)
    outputs = [KerasTensor(shape, dtype=dtype, name=name if len(flat) == 1 else f"{name}_{i}",
                           index=i) for i, (shape, dtype) in enumerate(flat)]
    node = Node(operation, args, kwargs, outputs, name=name)
    for tensor in outputs:
        tensor.node = node
    if track:
        nodes = operation.__dict__.get("_inbound_nodes")
        if nodes is None:
            nodes = []
            operation.__dict__["_inbound_nodes"] = nodes
        nodes.append(node)
    if single:
        return outputs[0]
    return _pack_specs(output_specs, outputs)


def _is_spec(value):
    return (isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], tuple)
            and not isinstance(value[1], tuple))


def flatten_specs(specs):
    if _is_spec(specs):
        return [specs]
    if isinstance(specs, dict):
        return [s for key in sorted(specs, key=str) for s in flatten_specs(specs[key])]
    return [s for item in specs for s in flatten_specs(item)]


def _pack_specs(specs, outputs):
    iterator = iter(outputs)

    def pack(item):
        if _is_spec(item):
            return next(iterator)
        if isinstance(item, dict):
            packed = {key: pack(item[key]) for key in sorted(item, key=str)}
            return {key: packed[key] for key in item}
        return type(item)(pack(v) for v in item) if isinstance(item, tuple) else [pack(v) for v in item]

    return pack(specs)


# ---- inference by running on placeholders ------------------------------------------------
_BATCH_SIZES = (2, 3)


def _concrete(args, kwargs, run, shared):
    """Args/kwargs with every KerasTensor replaced by zeros (ones for booleans) of placeholder sizes."""
    counter = [0]

    def fill(value):
        if not isinstance(value, KerasTensor):
            return value
        shape = []
        for axis, size in enumerate(value.shape):
            if size is not None:
                shape.append(size)
            elif axis == 0:
                shape.append(_BATCH_SIZES[run])
            elif shared:
                shape.append(7 + run)
            else:
                shape.append(7 + 2 * counter[0] + run)
                counter[0] += 1
        # a boolean placeholder (a mask) keeps every step: all True
        return Tensor((np.ones if value.dtype == bool else np.zeros)(shape, dtype=value.dtype))

    return map_structure(fill, tuple(args)), map_structure(fill, dict(kwargs))


def _output_specs(out):
    """``(shape, dtype)`` for each leaf of a function's output, structure kept."""
    if isinstance(out, (list, tuple)) and not isinstance(out, Tensor):
        return type(out)(_output_specs(v) for v in out) if isinstance(out, tuple) else \
            [_output_specs(v) for v in out]
    if isinstance(out, dict):
        return {key: _output_specs(value) for key, value in out.items()}
    data = out.data if isinstance(out, Tensor) else np.asarray(out)
    return (tuple(data.shape), data.dtype)


def _merge_specs(first, second):
    if _is_spec(first):
        if not _is_spec(second) or len(first[0]) != len(second[0]):
            raise ValueError("the output's rank depends on the unknown input sizes")
        shape = tuple(a if a == b else None for a, b in zip(first[0], second[0]))
        return (shape, first[1])
    if isinstance(first, dict):
        return {key: _merge_specs(first[key], second[key]) for key in first}
    if len(first) != len(second):
        raise ValueError("the number of outputs depends on the unknown input sizes")
    merged = [_merge_specs(a, b) for a, b in zip(first, second)]
    return tuple(merged) if isinstance(first, tuple) else merged


def infer_outputs(fn, args, kwargs=None):
    """The output spec(s) ``(shape, dtype)`` of ``fn(*args, **kwargs)`` for symbolic arguments.

    Runs ``fn`` twice under ``no_grad`` on zero-filled tensors (see the module docstring);
    a size that differs between the two runs is ``None``.

    Raises:
        Whatever ``fn`` raised on the first try, when both tries fail.
    """
    kwargs = kwargs or {}
    first_error = None
    for shared in (False, True):
        try:
            specs = []
            for run in (0, 1):
                concrete_args, concrete_kwargs = _concrete(args, kwargs, run, shared)
                with no_grad():
                    specs.append(_output_specs(fn(*concrete_args, **concrete_kwargs)))
            return _merge_specs(specs[0], specs[1])
        except Exception as error:        # noqa: BLE001 - re-raised below when no try works
            if first_error is None:
                first_error = error
            if not any(isinstance(t, KerasTensor) and t.shape[1:].count(None) > 0
                       for t in flatten(list(args)) + flatten(kwargs)):
                break                     # no non-batch unknown axis: sharing sizes changes nothing
    raise first_error


def symbolic_call(fn, args, kwargs=None, name=None):
    """Record a plain function (an op) called on symbolic tensors; returns its KerasTensor(s).

    The output shape and dtype are inferred by ``infer_outputs``; the functional model runs
    ``fn(*args, **kwargs)`` with the real values at this node.

    Example:
        >>> x = mn.Input((4,))
        >>> y = symbolic_call(np_like_square, (x,))      # a KerasTensor of shape (None, 4)
    """
    kwargs = dict(kwargs or {})
    return record(fn, tuple(args), kwargs, infer_outputs(fn, args, kwargs), name=name, track=False)
