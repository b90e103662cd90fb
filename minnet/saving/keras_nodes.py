"""The calls of a functional model, as Keras's ``config.json`` writes them and as minnet's
config does (``models/layer_graph.py``), for ``keras_format``.

Keras writes each call of a layer as an inbound node ``{"args": [...], "kwargs": {...}}``
whose tensors are ``__keras_tensor__`` entries with their ``keras_history``
``[layer, node index, tensor index]``; minnet writes a call on one tensor or list as
``{"layer", "arguments"}`` and any other (``mha(query, value, key=k)``) as ``{"layer",
"args", "kwargs"}`` with ``layer_graph.encode_value``'s encoding.
"""
from minnet import _utils
from minnet.saving.archive import ModelFileError

__all__ = ["node_references", "order_nodes"]


def _encoded_references(spec):
    """The tensor references inside one encoded argument (``layer_graph.encode_value``)."""
    (kind, value), = spec.items()
    if kind == "tensor":
        return [value]
    if kind in ("list", "tuple"):
        return [r for v in value for r in _encoded_references(v)]
    if kind == "dict":
        return [r for key in sorted(value) for r in _encoded_references(value[key])]
    return []


def node_references(node):
    """The tensor references a node of minnet's functional config reads, in order."""
    if "arguments" in node:
        return _utils.spec_references(node["arguments"])
    return [r for a in node.get("args") or [] for r in _encoded_references(a)] + \
        [r for k in node.get("kwargs") or {} for r in _encoded_references(node["kwargs"][k])]


def _history(tensor, path):
    if not (isinstance(tensor, dict) and tensor.get("class_name") == "__keras_tensor__"):
        raise ModelFileError(f"{path!r}: a layer call with a non-tensor argument {tensor!r}; "
                             "minnet reads layer calls on tensors and lists of tensors.")
    return list(tensor["config"]["keras_history"])


def _keras_argument(value, path, refs):
    """One argument of a Keras node as minnet's config writes it (``layer_graph.encode_value``):
    tensors by reference (collected in ``refs``), lists and dicts kept, constants as they are."""
    if isinstance(value, dict) and value.get("class_name") == "__keras_tensor__":
        reference = _history(value, path)
        refs.append(reference)
        return {"tensor": reference}
    if isinstance(value, (list, tuple)):
        return {"list": [_keras_argument(v, path, refs) for v in value]}
    if isinstance(value, dict):
        return {"dict": {str(k): _keras_argument(v, path, refs) for k, v in value.items()}}
    if value is None or isinstance(value, (bool, int, float, str)):
        return {"constant": value}
    raise ModelFileError(f"{path!r}: a layer call with the argument {value!r}; minnet reads layer "
                         "calls on tensors, lists and dicts of them, and constants.")


def _node_arguments(name, node, path):
    """``(minnet node, the tensors it reads)`` for one Keras inbound node: a call on one tensor
    or list keeps minnet's short ``arguments`` form; others (``mha(query, value, key=k)``)
    become ``args``/``kwargs``."""
    args, kwargs = node.get("args", []), node.get("kwargs") or {}
    if not isinstance(args, list) or not isinstance(kwargs, dict):
        raise ModelFileError(f"{path!r}: layer {name!r} has a call that is not args/kwargs: {node!r}")
    kwargs = {k: v for k, v in kwargs.items() if v is not None}     # Keras writes mask=None, ...
    if len(args) == 1 and not kwargs:
        argument = args[0]
        if isinstance(argument, list):
            refs = [_history(t, path) for t in argument]
            return {"layer": name, "arguments": {"list": refs}}, refs
        refs = [_history(argument, path)]
        return {"layer": name, "arguments": {"tensor": refs[0]}}, refs
    refs = []
    encoded = {"layer": name, "args": [_keras_argument(a, path, refs) for a in args],
               "kwargs": {k: _keras_argument(v, path, refs) for k, v in kwargs.items()}}
    return encoded, refs


def order_nodes(pending, inputs, path):
    """minnet's node list (in an order where every node's inputs were made before it)."""
    made = {(name, 0) for name in inputs}
    counts = {}
    nodes = []
    while pending:
        progressed = False
        rest = []
        for name, node in pending:
            entry, refs = _node_arguments(name, node, path)
            if all((r[0], r[1]) in made for r in refs) and (name, counts.get(name, 0)) not in made:
                index = counts.get(name, 0)
                counts[name] = index + 1
                made.add((name, index))
                nodes.append(entry)
                progressed = True
            else:
                rest.append((name, node))
        if not progressed:
            raise ModelFileError(f"{path!r}: the functional graph has nodes whose inputs are never "
                                 f"made: {[n for n, _ in rest]}")
        pending = rest
    return nodes
