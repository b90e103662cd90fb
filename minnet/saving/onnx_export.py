"""``model.export(path, format="onnx")``: a minnet model as an ONNX graph (opset 17, float32).

The exporter walks the model's structure through its public description only: a
``Sequential``'s ``layers`` (and ``input_shape``), a functional model's ``get_config()``
nodes (each a layer name and references ``[layer, node, index]`` to the tensors it reads),
with each layer found by ``get_layer(name)``; a nested model is inlined the same way. Each
layer is translated by one emitter in ``minnet.saving._onnx_layers`` into ONNX nodes whose
weights are the layer's arrays (PyTorch layouts, which are ONNX's for Conv, ConvTranspose,
LSTM after a gate reorder, ...).

Tensors keep minnet's layout on the graph edges: a ``channels_last`` convolution transposes
its input to NCHW, runs ONNX's ``Conv`` and transposes back, so the exported model takes and
gives the same arrays as ``model.predict``.

The ``onnx`` package (``pip install onnx``; the ``onnx`` extra) is needed only here, and is
imported when ``export`` runs; ``onnx.checker`` validates the model before it is written.
"""
import os

import numpy as np

from minnet import _utils
from minnet.saving import _onnx_layers

__all__ = ["export_onnx", "OPSET"]

OPSET = 17


def _require_onnx():
    try:
        import onnx
    except ImportError as error:
        raise ImportError(_utils.missing_extra_message("onnx", "onnx", "model.export(format='onnx')")
                          ) from error
    return onnx


def _is_functional(model):
    config = model.get_config() if hasattr(model, "get_config") else {}
    return isinstance(config, dict) and "nodes" in config, config



def _emit_model(graph, model, inputs, shapes):
    """Emit ``model`` (Sequential, functional or a layer) reading ``inputs``; return output names."""
    functional, config = _is_functional(model)
    if functional:
        return _emit_functional(graph, model, config, inputs, shapes)
    layers = getattr(model, "layers", None)
    if layers is not None and hasattr(model, "add"):   # Sequential
        names, current = inputs, shapes
        for layer in layers:
            names, current = _emit_layer(graph, layer, names, current)
        return names, current
    if _is_model(model):
        raise _subclassed(model)
    return _emit_layer(graph, model, inputs, shapes)


def _is_model(layer):
    return hasattr(layer, "layers") and hasattr(layer, "get_config") and hasattr(layer, "fit")


def _subclassed(model):
    return _onnx_layers.ExportError(
        f"Cannot export model '{model.name}' ({type(model).__name__}) to ONNX: a subclassed "
        "model's `call` is Python code, not a graph of layers. Build the same layers as a "
        "functional model (mn.Model(inputs, outputs)) or a Sequential to export them.")


def _emit_layer(graph, layer, inputs, shapes, options=None):
    """Emit one layer call; ``options`` are the call's keyword arguments that are not
    tensors (``use_causal_mask=True``), which only a keyword emitter may take."""
    if _is_model(layer):
        return _emit_model(graph, layer, inputs, shapes)
    kind = type(layer).__name__
    keyword = _onnx_layers.KEYWORD_EMITTERS.get(kind)
    emitter = _onnx_layers.EMITTERS.get(kind) if keyword is None else (
        lambda g, lay, names, sizes: keyword(g, lay, names, sizes, options or {}))
    if emitter is None:
        raise _onnx_layers.ExportError(
            f"Cannot export layer '{layer.name}' ({kind}) to ONNX: minnet has no "
            f"ONNX translation for {kind}. Exported layers: "
            f"{', '.join(sorted(set(_onnx_layers.EMITTERS) | set(_onnx_layers.KEYWORD_EMITTERS)))}.")
    if options and keyword is None:
        raise _onnx_layers.ExportError(
            f"Cannot export layer '{layer.name}' ({kind}) to ONNX: it was called with the "
            f"keyword arguments {sorted(options)}, which the export does not translate.")
    if keyword is not None:
        out_shapes = [tuple(layer.compute_output_shape(*shapes))]
        outputs = emitter(graph, layer, list(inputs), [tuple(s) for s in shapes])
        return [outputs] if isinstance(outputs, str) else list(outputs), out_shapes
    shape_arg = shapes[0] if len(shapes) == 1 else list(shapes)
    out_shapes = layer.compute_output_shape(shape_arg)
    if isinstance(out_shapes, list):
        out_shapes = [tuple(s) for s in out_shapes]
    else:
        out_shapes = [tuple(out_shapes)]
    outputs = emitter(graph, layer, list(inputs), [tuple(s) for s in shapes])
    if isinstance(outputs, str):
        outputs = [outputs]
    return list(outputs), out_shapes


def _emit_functional(graph, model, config, inputs, shapes):
    produced = {}   # layer name -> list of node outputs (list of (name, shape))
    entries = {entry["name"]: entry for entry in config["layers"]}
    input_refs = _utils.spec_references(config["inputs"])
    if len(input_refs) != len(inputs):
        raise _onnx_layers.ExportError(f"Model '{model.name}' takes {len(input_refs)} inputs; "
                                       f"the export was given {len(inputs)}.")
    for (layer_name, _, _), name, shape in zip(input_refs, inputs, shapes):
        produced[layer_name] = [[(name, shape)]]

    def lookup(reference):
        layer_name, node, index = reference
        return produced[layer_name][node][index]

    for node in config["nodes"]:
        layer_name = node["layer"]
        if entries.get(layer_name, {}).get("class_name") in ("InputLayer", "Input"):
            continue
        layer = model.get_layer(layer_name)
        refs, options = _node_arguments(node, layer)
        arguments = [lookup(ref) for ref in refs]
        names, out_shapes = _emit_layer(graph, layer, [a[0] for a in arguments],
                                        [a[1] for a in arguments], options)
        produced.setdefault(layer_name, []).append(list(zip(names, out_shapes)))
    outputs = [lookup(ref) for ref in _utils.spec_references(config["outputs"])]
    return [o[0] for o in outputs], [o[1] for o in outputs]


def _node_arguments(node, layer):
    """The tensor references a functional node reads, in call order, and its constant
    keyword arguments. A node stores either ``arguments`` (one tensor, list or dict) or
    ``args``/``kwargs`` (a layer called with several inputs or keywords, e.g.
    ``MultiHeadAttention()(query, value, use_causal_mask=True)``); a tensor passed by
    keyword is taken in the layer's positional order (``key=`` after ``value``)."""
    if "arguments" in node:
        return _utils.spec_references(node["arguments"]), {}
    refs = []
    for arg in node.get("args") or []:
        if "tensor" not in arg:
            raise _onnx_layers.ExportError(
                f"Cannot export layer '{layer.name}' ({type(layer).__name__}) to ONNX: its "
                f"positional argument {arg} is not a tensor.")
        refs.append(arg["tensor"])
    options = {}
    for key, value in (node.get("kwargs") or {}).items():
        if "tensor" in value:
            if key != "key" or len(refs) != 2:
                raise _onnx_layers.ExportError(
                    f"Cannot export layer '{layer.name}' ({type(layer).__name__}) to ONNX: the "
                    f"tensor argument `{key}` is not translated (masks have no ONNX export).")
            refs.append(value["tensor"])
        elif "constant" in value:
            options[key] = value["constant"]
        else:
            raise _onnx_layers.ExportError(
                f"Cannot export layer '{layer.name}' ({type(layer).__name__}) to ONNX: its "
                f"argument `{key}` ({value}) is not translated.")
    return refs, options


def _model_inputs(model):
    """[(name, batch shape, numpy dtype)] of the model's inputs."""
    functional, config = _is_functional(model)
    if functional:
        entries = {entry["name"]: entry for entry in config["layers"]}
        result = []
        for layer_name, _, _ in _utils.spec_references(config["inputs"]):
            layer_config = entries[layer_name].get("config") or {}
            shape = layer_config.get("batch_shape") or layer_config.get("batch_input_shape")
            if shape is None:
                shape = [layer_config.get("batch_size")] + list(layer_config.get("shape") or [])
            result.append((layer_name, tuple(shape), np.dtype(layer_config.get("dtype") or "float32")))
        return result
    if not hasattr(model, "add"):
        raise _subclassed(model)
    shape = getattr(model, "input_shape", None)
    if shape is None:
        raise ValueError(f"Model '{model.name}' is not built, so its input shape is unknown: call "
                         "it on data (or give it an Input) before exporting.")
    return [("input", tuple(shape), np.dtype("float32"))]


_ONNX_TYPES = {"float32": 1, "uint8": 2, "int8": 3, "int32": 6, "int64": 7, "bool": 9, "float64": 11}


def export_onnx(model, path, opset=OPSET, verbose=False):
    """Write ``model`` as an ONNX file at ``path`` (checked with ``onnx.checker`` first).

    Args:
        model: a built Sequential or functional minnet model (or a single layer that was built).
        path: the ``.onnx`` file to write (atomically: a temporary file, then a rename).
        opset: the ONNX opset (17 by default; 17 or newer).
        verbose: print a line per exported layer kind.

    Returns:
        The ``onnx.ModelProto`` that was written.

    Raises:
        ImportError: the ``onnx`` package is missing.
        minnet.saving.onnx_export.ExportError (a ``ValueError``): a layer (named in the
            message) has no ONNX translation, or uses an option that has none.
    """
    onnx = _require_onnx()
    if opset < OPSET:
        raise ValueError(f"Invalid value for argument `opset`: expected {OPSET} or newer. "
                         f"Received: opset={opset!r}")
    graph = _onnx_layers.GraphBuilder()
    inputs = _model_inputs(model)
    input_names = [name for name, _, _ in inputs]
    output_names, output_shapes = _emit_model(graph, model, input_names,
                                              [shape for _, shape, _ in inputs])
    helper = onnx.helper
    final_outputs = []
    for index, name in enumerate(output_names):
        final = f"output_{index}" if len(output_names) > 1 else "output"
        # An Identity per output: an input passed through, or one tensor given twice (an RNN's
        # last output and its state), still gets its own graph output.
        graph.node("Identity", [name], [final])
        final_outputs.append(final)
    nodes = [helper.make_node(op, ins, outs, name=f"{op}_{i}", **attrs)
             for i, (op, ins, outs, attrs) in enumerate(graph.nodes)]
    initializers = [onnx.numpy_helper.from_array(array, name) for name, array in graph.constants]

    def dims(shape):
        return [d if d is not None else ("batch" if i == 0 else f"dim_{i}")
                for i, d in enumerate(shape)]

    graph_inputs = [helper.make_tensor_value_info(name, _ONNX_TYPES[str(dtype)], dims(shape))
                    for name, shape, dtype in inputs]
    graph_outputs = [helper.make_tensor_value_info(name, 1, dims(shape))
                     for name, shape in zip(final_outputs, output_shapes)]
    onnx_graph = helper.make_graph(nodes, getattr(model, "name", "model") or "model",
                                   graph_inputs, graph_outputs, initializers)
    proto = helper.make_model(onnx_graph, producer_name="minnet",
                              opset_imports=[helper.make_opsetid("", int(opset))])
    proto.ir_version = min(proto.ir_version, 8)   # readable by onnxruntime releases of 2023 on
    onnx.checker.check_model(proto)
    if verbose:
        print(f"ONNX export: {len(nodes)} nodes, {len(initializers)} weight tensors -> {path}")
    path = os.fspath(path)
    temporary = path + ".tmp"
    with open(temporary, "wb") as f:
        f.write(proto.SerializeToString())
    os.replace(temporary, path)
    return proto


ExportError = _onnx_layers.ExportError
