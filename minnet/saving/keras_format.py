"""Real Keras 3 ``.keras`` files: read the ones Keras writes, write ones Keras loads.

A ``.keras`` file is a zip of three entries:

* ``metadata.json``: ``{"keras_version": ..., "date_saved": ...}``;
* ``config.json``: ``{"module": "keras", "class_name": "Sequential" | "Functional", "config":
  {...}, "build_config": ..., "compile_config": ...}`` with every nested object (layer,
  initializer, optimizer, ...) as ``{"module", "class_name", "config", "registered_name"}``;
* ``model.weights.h5``: each layer's variables under ``layers/<key>/vars/<i>`` (a
  recurrent layer's under ``layers/<key>/cell/vars``, a Bidirectional's under
  ``forward_layer/cell/vars`` and ``backward_layer/cell/vars``). ``<key>`` is NOT the layer's
  name: Keras names each entry of ``model.layers`` by its class in snake case, numbered in
  order (``dense``, ``dense_1``, ...), so the order of ``model.layers`` decides which weights
  go where. For a functional model that order is Keras's (``map_graph``: by decreasing depth,
  then by discovery from the outputs); ``_keras_layer_order`` computes it the same way.

Weight layouts differ (minnet keeps PyTorch's): the conversions are in
``minnet.saving._keras_weights`` and ``docs/working_with_other_tools.md``. The HDF5 part
needs ``h5py`` (the ``h5`` extra), imported when a ``.keras`` file is read or written. Optimizer variables are not
carried over (a loaded model is compiled with a fresh optimizer state).
"""
import datetime
import inspect
import io
import json
import zipfile

import numpy as np

from minnet import _registry, _utils
from minnet._registry import snake_case
from minnet.layers import serialize as serialize_layer
from minnet.layers.weight_options import options_taken_by
from minnet.saving._keras_weights import from_keras, to_keras
from minnet.saving.archive import ModelFileError, atomic_write, write_member
from minnet.saving.keras_nodes import node_references, order_nodes
from minnet.saving.keras_subclassed import (is_subclassed, read_subclassed, read_subclassed_weights,
                                            subclassed_document, write_subclassed_weights)
from minnet.saving.model_config import build_compile, build_model, compile_config_of

__all__ = ["is_keras_file", "save_keras", "load_keras", "KERAS_VERSION"]

# The Keras release whose file layout this module writes (the layout is the same for 3.x).
KERAS_VERSION = "3.15.1"


def _require_h5py():
    try:
        import h5py
    except ImportError as error:
        raise ImportError(_utils.missing_extra_message("h5py", "h5", "Reading or writing a "
                                                       "Keras `.keras` file")) from error
    return h5py


def h5py_available():
    """Whether h5py can be imported (without it, ``.keras`` saves fall back to minnet's format)."""
    try:
        import h5py  # noqa: F401
    except ImportError:
        return False
    return True


def is_keras_file(path):
    """Whether ``path`` is a zip holding ``model.weights.h5`` (a Keras 3 ``.keras`` file)."""
    try:
        with zipfile.ZipFile(path) as archive:
            return "model.weights.h5" in archive.namelist()
    except (OSError, zipfile.BadZipFile):
        return False


def _keys(class_names):
    """Keras's container keys: snake-case class name, ``_1``, ``_2`` ... on repeats."""
    used, keys = {}, []
    for class_name in class_names:
        key = snake_case(class_name)
        if key in used:
            used[key] += 1
            key = f"{key}_{used[key]}"
        else:
            used[key] = 0
        keys.append(key)
    return keys


def _arrays(layer):
    return [np.asarray(w, dtype=np.float32) for w in layer.get_weights()]


# ---- configs: minnet -> Keras --------------------------------------------------------------
_MODULES = (("_initializer", "keras.initializers"), ("_regularizer", "keras.regularizers"),
            ("_constraint", "keras.constraints"))
_DTYPE_POLICY = {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float32"},
                 "registered_name": None}


def _keras_object(entry, module):
    if isinstance(entry, str) and module == "keras.initializers":
        return entry
    if not isinstance(entry, dict) or "class_name" not in entry:
        return entry
    config = entry.get("config") or {}
    if module == "keras.layers":
        config = _layer_config_to_keras(config)
    return {"module": module, "class_name": entry["class_name"], "config": config,
            "registered_name": None}


def _layer_config_to_keras(config):
    out = {}
    for key, value in config.items():
        module = next((m for suffix, m in _MODULES if key.endswith(suffix)), None)
        if module is not None:
            value = _keras_object(value, module)
        elif key in ("layer", "backward_layer", "cell"):
            value = _keras_object(value, "keras.layers")
        elif key == "cells" and isinstance(value, list):     # StackedRNNCells
            value = [_keras_object(v, "keras.layers") for v in value]
        elif key == "dtype" and value in ("float32", None):
            value = dict(_DTYPE_POLICY, config={"name": "float32"})
        out[key] = value
    return out


# Keras layers whose constructor takes no `trainable` (nor **kwargs).
_NO_TRAINABLE_ARGUMENT = {"SpatialDropout1D", "SpatialDropout2D", "SpatialDropout3D",
                          "Discretization"}


def _layer_entry(layer, input_shape):
    entry = serialize_layer(layer)
    if type(layer).__name__ == "InputLayer" or entry["class_name"] in ("Input", "InputLayer"):
        shape = list(getattr(layer, "batch_shape", None) or [None] + list(entry["config"]["shape"]))
        return {"module": "keras.layers", "class_name": "InputLayer",
                "config": {"batch_shape": shape, "dtype": entry["config"].get("dtype", "float32"),
                           "sparse": False, "ragged": False, "name": layer.name},
                "registered_name": None}
    config = _layer_config_to_keras(entry["config"])
    if entry["class_name"] in _NO_TRAINABLE_ARGUMENT:
        config.pop("trainable", None)
    result = {"module": "keras.layers", "class_name": entry["class_name"],
              "config": config, "registered_name": None}
    if ">" in entry["class_name"]:
        # a registered custom layer, as Keras writes it: its class name (which names its entry
        # in model.weights.h5), its module, and "package>Name" as the registered name
        result.update(module=type(layer).__module__, class_name=type(layer).__name__,
                      registered_name=entry["class_name"])
    if not getattr(type(layer).build_from_config, "keras_default", False):
        result["build_config"] = layer.get_build_config()   # the layer's own build state
    elif input_shape is not None:
        result["build_config"] = {"input_shape": input_shape}
    return result


def _shape_list(shape):
    if shape is None:
        return None
    if isinstance(shape, list) and shape and isinstance(shape[0], (tuple, list)):
        return [_shape_list(s) for s in shape]
    return [None if s is None else int(s) for s in shape]



def _keras_layer_order(config):
    """Layer names in the order Keras's ``Functional.layers`` will have (``map_graph``)."""
    node_inputs = {}   # (layer, node index) -> [(layer, node index)] of its parents
    node_count = {}
    for entry in config["layers"]:
        if entry.get("class_name") in ("Input", "InputLayer"):
            node_inputs[(entry["name"], 0)] = []
            node_count[entry["name"]] = 1
    for node in config["nodes"]:
        name = node["layer"]
        index = node_count.get(name, 0)
        node_count[name] = index + 1
        node_inputs[(name, index)] = [(r[0], r[1]) for r in node_references(node)]
    finished, order, operation_indices = set(), [], {}

    def visit(key):
        if key in finished:
            return
        if key[0] not in operation_indices:
            operation_indices[key[0]] = len(operation_indices)
        for parent in node_inputs[key]:
            visit(parent)
        finished.add(key)
        order.append(key)

    for reference in _utils.spec_references(config["outputs"]):
        visit((reference[0], reference[1]))
    node_depth, layer_depth = {}, {}
    for key in reversed(order):
        depth = max(node_depth.setdefault(key, 0), layer_depth.get(key[0], 0))
        layer_depth[key[0]] = depth
        node_depth[key] = depth
        for parent in node_inputs[key]:
            node_depth[parent] = max(depth + 1, node_depth.get(parent, 0))
    for reference in _utils.spec_references(config["inputs"]):
        if reference[0] not in layer_depth:
            layer_depth[reference[0]] = 0
            operation_indices[reference[0]] = -1
    by_depth = {}
    for name, depth in layer_depth.items():
        by_depth.setdefault(depth, []).append(name)
    names = []
    for depth in sorted(by_depth, reverse=True):
        names.extend(sorted(by_depth[depth], key=lambda n: operation_indices[n]))
    return names


def _keras_tensor(reference, shapes):
    return {"class_name": "__keras_tensor__",
            "config": {"shape": _shape_list(shapes[tuple(reference)]), "dtype": "float32",
                       "keras_history": list(reference)}}


def _functional_config(model, config):
    for node in config["nodes"]:        # before the layer order, which knows only layer nodes
        if "op" in node:
            raise _unsupported(model, f"the function {node['op']!r} called in the graph")
    order = _keras_layer_order(config)
    entries = {entry["name"]: entry for entry in config["layers"]}
    inbound = {name: [] for name in order}
    shapes, counts = {}, {}     # (layer, node, index) -> shape, as the graph runs
    build_shapes = {}           # layer -> Keras's build shapes_dict, for calls with several arguments
    for entry in config["layers"]:
        if entry.get("class_name") in ("Input", "InputLayer"):
            shapes[(entry["name"], 0, 0)] = tuple(model.get_layer(entry["name"]).batch_shape)
            counts[entry["name"]] = 1
    for node in config["nodes"]:
        name = node["layer"]
        layer = model.get_layer(name)
        if "arguments" in node:
            (kind, value), = node["arguments"].items()
            if kind == "tensor":
                args = [_keras_tensor(value, shapes)]
                in_shape = shapes[tuple(value)]
            elif kind == "list":
                args = [[_keras_tensor(v, shapes) for v in value]]
                in_shape = [shapes[tuple(v)] for v in value]
            else:
                raise _unsupported(model, "a layer called on a dict of tensors")
            kwargs = {}
            out = layer.compute_output_shape(in_shape)
        else:       # several arguments (mha(query, value, key=k)): Keras's args and kwargs
            args, kwargs, out, shapes_dict = _call_with_arguments(model, layer, node, shapes)
            build_shapes.setdefault(name, shapes_dict)
        index = counts.get(name, 0)
        counts[name] = index + 1
        outs = out if isinstance(out, list) else [out]
        for i, shape in enumerate(outs):
            shapes[(name, index, i)] = tuple(shape)
        inbound[name].append({"args": args, "kwargs": kwargs})
    layers = []
    for name in order:
        layer = model.get_layer(name)
        if entries[name].get("class_name") in ("Input", "InputLayer"):
            entry = _layer_entry(layer, None)
        else:
            if _is_model(layer):
                entry = _nested_sequential_entry(layer, model)
            else:
                shape = getattr(layer, "_build_input_shape", None)
                entry = _layer_entry(layer, _shape_list(list(shape) if shape is not None else None))
        entry["name"] = name
        entry["inbound_nodes"] = inbound[name]
        if name in build_shapes:        # Keras builds such a layer from each argument's shape
            entry["build_config"] = {"shapes_dict": build_shapes[name]}
        layers.append(entry)

    def refs(spec):
        flat = [list(r) for r in _utils.spec_references(spec)]
        return flat[0] if "tensor" in spec else flat

    keras_config = {"name": model.name, "trainable": config.get("trainable", True),
                    "layers": layers, "input_layers": refs(config["inputs"]),
                    "output_layers": refs(config["outputs"])}
    return keras_config, [model.get_layer(name) for name in order]


def _call_with_arguments(model, layer, node, shapes):
    """Keras's ``args``/``kwargs`` for a node minnet wrote with several arguments, and the
    call's output shape (``compute_output_shape(*shapes, <kwarg>_shape=...)``, as Keras's
    layers name them)."""
    def keras_value(spec):
        (kind, value), = spec.items()
        if kind == "tensor":
            return _keras_tensor(value, shapes)
        if kind in ("list", "tuple"):
            return [keras_value(v) for v in value]
        if kind == "dict":
            return {k: keras_value(v) for k, v in value.items()}
        return value

    def shape_of(spec):
        (kind, value), = spec.items()
        return shapes[tuple(value)] if kind == "tensor" else None

    args = [keras_value(a) for a in node.get("args") or []]
    kwargs = {k: keras_value(v) for k, v in (node.get("kwargs") or {}).items()}
    arg_shapes = [shape_of(a) for a in node.get("args") or []]
    kwarg_shapes = {f"{k}_shape": shape_of(v) for k, v in (node.get("kwargs") or {}).items()
                    if shape_of(v) is not None}
    if None in arg_shapes:
        raise _unsupported(model, f"the call of layer '{layer.name}' with a constant positional argument")
    try:
        out = layer.compute_output_shape(*arg_shapes, **kwarg_shapes)
    except TypeError as error:
        raise _unsupported(model, f"the call of layer '{layer.name}' with several arguments "
                                  f"({error})") from None
    if (node.get("kwargs") or {}).get("return_attention_scores", {}).get("constant"):
        raise _unsupported(model, f"the call of layer '{layer.name}' with return_attention_scores=True")
    # Keras's build_config names each tensor argument's shape after the call's parameter
    bound = inspect.signature(layer.call).bind_partial(*node.get("args") or [], **node.get("kwargs") or {})
    shapes_dict = {f"{key}_shape": _shape_list(shape_of(spec)) for key, spec in bound.arguments.items()
                   if isinstance(spec, dict) and shape_of(spec) is not None}
    return args, kwargs, out, shapes_dict


def _unsupported(model, what):
    return ValueError(f"Cannot save model '{model.name}' as a Keras `.keras` file: {what} has no "
                      "Keras equivalent here. Save it in minnet's own format instead: "
                      "model.save('model.minnet').")


def _sequential_config(model):
    shape = model.input_shape
    layers = [{"module": "keras.layers", "class_name": "InputLayer",
               "config": {"batch_shape": _shape_list(shape), "dtype": "float32", "sparse": False,
                          "ragged": False, "name": "input_layer"}, "registered_name": None}]
    current = tuple(shape)
    for layer in model.layers:
        layers.append(_nested_sequential_entry(layer, model) if _is_model(layer)
                      else _layer_entry(layer, _shape_list(current)))
        current = layer.compute_output_shape(current)
    return ({"name": model.name, "trainable": True, "dtype": dict(_DTYPE_POLICY), "layers": layers,
             "build_input_shape": _shape_list(shape)}, list(model.layers))


# minnet optimizer arguments Keras's optimizers lack, with the value that means "off".
_MINNET_ONLY_OPTIMIZER_ARGUMENTS = {"dampening": 0.0, "lr_decay": 0.0}


def _optimizer_to_keras(model, optimizer):
    """A minnet optimizer's ``{"class_name", "config"}`` as Keras's entry; a MultiOptimizer's
    default and mapped optimizers are converted the same way."""
    config = dict(optimizer.get("config") or {})
    if optimizer.get("class_name") == "MultiOptimizer":
        mapping = dict(config["optimizer_map"])
        inner = dict(mapping.get("config") or {})
        inner["default_optimizer"] = _optimizer_to_keras(model, inner["default_optimizer"])
        inner["optimizer_map"] = {key: _optimizer_to_keras(model, value)
                                  for key, value in (inner.get("optimizer_map") or {}).items()}
        config["optimizer_map"] = _keras_object(dict(mapping, config=inner), "keras.optimizers")
        return _keras_object(dict(optimizer, config=config), "keras.optimizers")
    for key, off in _MINNET_ONLY_OPTIMIZER_ARGUMENTS.items():
        if key in config:
            if config[key] != off:
                raise _unsupported(model, f"the optimizer argument {key}={config[key]!r}")
            del config[key]
    if isinstance(config.get("learning_rate"), dict):
        config["learning_rate"] = _keras_object(config["learning_rate"], "keras.optimizers.schedules")
    return _keras_object(dict(optimizer, config=config), "keras.optimizers")


def _compile_to_keras(model):
    compile_config = compile_config_of(model)
    if not compile_config:
        return None
    optimizer = compile_config.get("optimizer")
    entry = {"optimizer": _optimizer_to_keras(model, optimizer) if isinstance(optimizer, dict)
             else optimizer,
             "loss": compile_config.get("loss"), "loss_weights": compile_config.get("loss_weights"),
             "metrics": compile_config.get("metrics") or None, "weighted_metrics": None,
             "run_eagerly": False, "steps_per_execution": 1, "jit_compile": False}
    for key, module in (("loss", "keras.losses"), ("metrics", "keras.metrics")):
        value = entry[key]
        if isinstance(value, dict) and "class_name" in value:
            entry[key] = _keras_object(value, module)
        elif isinstance(value, list):
            entry[key] = [_keras_object(v, module) if isinstance(v, dict) else v for v in value]
    return entry


def _is_model(layer):
    return hasattr(layer, "layers") and hasattr(layer, "fit")


def _weight_layers_of(model):
    """A nested model's ``layers`` in Keras's order (a Sequential's, without its input)."""
    config = model.get_config()
    if isinstance(config, dict) and "nodes" in config:
        raise _unsupported(model, f"the nested functional model '{model.name}'")
    return list(model.layers)


def _build_wrapped(layer, input_shape):
    """Build a wrapper's inner layer (TimeDistributed builds it on its first call), so its
    weights exist to be written or set."""
    inner = getattr(layer, "layer", None)
    if type(layer).__name__ == "TimeDistributed" and inner is not None and not inner.built \
            and input_shape is not None and len(input_shape) > 2:
        inner.build((None,) + tuple(input_shape[2:]))


def _write_layers(layers_group, layers, model):
    """Each layer's variables under ``layers_group/<key>/vars`` (nested models recursively)."""
    for key, layer in zip(_keys([type(layer).__name__ for layer in layers]), layers):
        group = layers_group.create_group(key)
        group.create_group("vars").attrs["name"] = layer.name
        if _is_model(layer):
            _write_layers(group.create_group("layers"), _weight_layers_of(layer), model)
            continue
        _build_wrapped(layer, getattr(layer, "_build_input_shape", None))
        arrays = _arrays(layer)
        if not arrays:
            continue
        try:
            converted = to_keras(layer, arrays)
        except ValueError as error:
            raise _unsupported(model, f"{error}; layer '{layer.name}'") from None
        for sub, values in converted.items():
            variables = (group.require_group(sub) if sub else group).require_group("vars")
            for i, array in enumerate(values):
                variables.create_dataset(str(i), data=np.asarray(array, dtype=np.float32))


def _nested_sequential_entry(layer, model):
    if layer.get_config().get("nodes") is not None:
        raise _unsupported(model, f"the nested functional model '{layer.name}' (a nested "
                                  "Sequential is written; a nested functional model is only read)")
    if getattr(layer, "input_shape", None) is None:
        raise _unsupported(model, f"the unbuilt nested model '{layer.name}'")
    config, _ = _sequential_config(layer)
    return {"module": "keras", "class_name": "Sequential", "config": config,
            "registered_name": None, "build_config": {"input_shape": config["build_input_shape"]}}


def _graph_parts(model):
    """``(class_name, keras_config, weight_layers)`` of a functional or built Sequential
    model, else ``(None, None, None)``."""
    config = model.get_config()
    if isinstance(config, dict) and "nodes" in config:
        keras_config, ordered = _functional_config(model, config)
        return "Functional", keras_config, ordered
    if hasattr(model, "add") and getattr(model, "input_shape", None) is not None:
        keras_config, weight_layers = _sequential_config(model)
        return "Sequential", keras_config, weight_layers
    return None, None, None


def _write_weights(h5, model, class_name, weight_layers):
    """Keras's ``model.weights.h5`` content into the open ``h5`` file."""
    h5.create_group("vars").attrs["name"] = model.name
    if class_name is None:
        try:
            write_subclassed_weights(h5, model)
        except ValueError as error:
            raise _unsupported(model, str(error)) from None
    else:
        _write_layers(h5.create_group("layers"), weight_layers, model)


def save_keras_weights(model, path):
    """Write ``model``'s weights as a Keras 3 ``.weights.h5`` file (``model.save_weights``)."""
    h5py = _require_h5py()
    class_name, _, weight_layers = _graph_parts(model)
    if class_name is None and not is_subclassed(model):
        raise _unsupported(model, "an unbuilt model (call it on a batch first)")
    buffer = io.BytesIO()
    with h5py.File(buffer, "w") as h5:
        _write_weights(h5, model, class_name, weight_layers)
    atomic_write(path, lambda file: file.write(buffer.getvalue()))


def load_keras_weights(model, path):
    """Set ``model``'s weights from a Keras 3 ``.weights.h5`` file (``model.load_weights``)."""
    h5py = _require_h5py()
    class_name, keras_config, _ = _graph_parts(model)
    try:
        with h5py.File(path, "r") as h5:
            if class_name is None:
                if not is_subclassed(model):
                    raise ModelFileError(f"{path!r}: build model '{model.name}' (call it on a "
                                         f"batch) before loading weights into it.")
                model.set_weights(read_subclassed_weights(h5py, h5, model))
            else:
                _read_layers(h5py, h5["layers"], model, {"class_name": class_name,
                                                         "config": keras_config}, path)
    except ModelFileError:
        raise
    except (OSError, KeyError, IndexError, ValueError) as error:
        raise ModelFileError(f"{path!r} is not a Keras weights file minnet can read into model "
                             f"'{model.name}': {type(error).__name__}: {error}") from None


def save_keras(model, path):
    """Write ``model`` as a Keras 3 ``.keras`` file (config, metadata and ``model.weights.h5``)."""
    h5py = _require_h5py()
    class_name, keras_config, weight_layers = _graph_parts(model)
    if class_name is not None:
        pass
    elif is_subclassed(model):
        class_name = None
        try:
            document = subclassed_document(model)
        except ValueError as error:
            raise _unsupported(model, f"the subclassed model: {error}") from None
    else:
        raise _unsupported(model, "an unbuilt model (call it on a batch first)")
    if class_name is not None:
        document = {"module": "keras" if class_name == "Sequential" else "keras.src.models.functional",
                    "class_name": class_name, "config": keras_config, "registered_name": None}
    if class_name == "Sequential":
        document["build_config"] = {"input_shape": keras_config["build_input_shape"]}
    elif class_name is not None:
        document["build_config"] = {"input_shape": None}
    compile_entry = _compile_to_keras(model)
    if compile_entry is not None:
        document["compile_config"] = compile_entry
    buffer = io.BytesIO()
    with h5py.File(buffer, "w") as h5:
        _write_weights(h5, model, class_name, weight_layers)
    metadata = {"keras_version": KERAS_VERSION,
                "date_saved": datetime.datetime.now().strftime("%Y-%m-%d@%H:%M:%S")}

    def write(file):
        with zipfile.ZipFile(file, "w", compression=zipfile.ZIP_STORED) as archive:
            write_member(archive, "metadata.json", json.dumps(metadata).encode())
            write_member(archive, "config.json", json.dumps(document).encode())
            write_member(archive, "model.weights.h5", buffer.getvalue())

    atomic_write(path, write)


# ---- configs: Keras -> minnet --------------------------------------------------------------
def _minnet_object(value):
    """Strip Keras's ``module`` / ``registered_name`` / ``shared_object_id`` from nested objects."""
    if isinstance(value, dict):
        if value.get("class_name") == "DTypePolicy":
            return (value.get("config") or {}).get("name", "float32")
        return {k: _minnet_object(v) for k, v in value.items()
                if k not in ("module", "registered_name", "shared_object_id")}
    if isinstance(value, list):
        return [_minnet_object(v) for v in value]
    return value


def _accepted(cls):
    parameters = inspect.signature(cls.__init__).parameters
    names = set(parameters) - {"self"}
    return names, any(p.kind == p.VAR_KEYWORD for p in parameters.values())


# Keras arguments minnet's layers do not take, dropped whatever they hold: they change nothing
# in inference (seeds, mask bookkeeping, renormalisation settings used only when renorm=True).
_IGNORED_KERAS_ARGUMENTS = {"seed", "zero_output_for_mask", "renorm_momentum", "renorm_clipping",
                            "quantization_config", "noise_shape", "sparse", "ragged", "optional"}


def _droppable(key, value):
    """A Keras-only argument minnet can ignore: a listed one, or one left at None / False / empty."""
    return key in _IGNORED_KERAS_ARGUMENTS or value is None or value is False \
        or (isinstance(value, (list, dict)) and not value)


def _nested_object(kind, entry, path, custom_objects):
    """An initializer/regularizer/constraint entry with the Keras-only arguments left out."""
    try:
        cls = _registry.lookup(kind, entry["class_name"], custom_objects)
    except ValueError:
        if kind == "initializer":
            return None
        raise ModelFileError(f"{path!r}: the Keras file uses the {kind} {entry['class_name']!r}, "
                             "which minnet does not have.") from None
    if not isinstance(cls, type):
        return entry
    names, _ = _accepted(cls)
    config = entry.get("config") or {}
    dropped = {k: v for k, v in config.items() if k not in names and not _droppable(k, v)}
    if dropped:
        raise ModelFileError(f"{path!r}: the {kind} {entry['class_name']!r} uses Keras arguments "
                             f"minnet's does not have: {dropped}.")
    return {"class_name": entry["class_name"], "config": {k: v for k, v in config.items() if k in names}}


def _class_of(entry):
    """The name to look a layer up by: Keras's ``registered_name`` (``"package>Name"``) for a
    registered custom layer, else its ``class_name``."""
    return entry.get("registered_name") or entry["class_name"]


def _inner_layer(entry, path, custom_objects):
    """A wrapped layer's or a recurrent cell's entry, with minnet's config."""
    inner_name, inner = _layer_config_to_minnet(_class_of(entry), entry.get("config", {}), path,
                                                custom_objects)
    return {"class_name": inner_name, "config": inner}


def _layer_config_to_minnet(class_name, config, path, custom_objects):
    if class_name in ("Sequential", "Functional"):      # a nested model
        return _minnet_model_config({"class_name": class_name, "config": config}, path,
                                    custom_objects)
    config = _minnet_object(config)
    if class_name == "InputLayer":
        shape = config.get("batch_shape") or config.get("batch_input_shape")
        return "InputLayer", {"batch_shape": shape, "dtype": config.get("dtype", "float32"),
                              "name": config.get("name")}
    try:
        cls = _registry.lookup("layer", class_name, custom_objects)
    except ValueError:
        raise ModelFileError(f"{path!r}: the Keras file uses layer {class_name!r}, which minnet "
                             "does not have.") from None
    names, _ = _accepted(cls)
    names |= {"name", "dtype", "trainable"} | set(options_taken_by(cls))
    kept, dropped = {}, {}
    for key, value in config.items():
        if key in ("layer", "backward_layer", "cell") and isinstance(value, dict) and "class_name" in value:
            value = _inner_layer(value, path, custom_objects)
        elif key == "cells" and isinstance(value, list):     # StackedRNNCells
            value = [_inner_layer(v, path, custom_objects) if isinstance(v, dict) else v for v in value]
        kind = next((k for suffix, k in (("_initializer", "initializer"),
                                         ("_regularizer", "regularizer"),
                                         ("_constraint", "constraint")) if key.endswith(suffix)), None)
        if kind is not None and isinstance(value, dict) and "class_name" in value:
            value = _nested_object(kind, value, path, custom_objects)
            if value is None:       # an initializer minnet lacks: the file's weights replace it
                continue
        if key in names:
            kept[key] = value
        elif not _droppable(key, value):
            dropped[key] = value
    if class_name == "Conv1D" and config.get("groups", 1) == 1:
        dropped.pop("groups", None)
    if dropped:
        raise ModelFileError(f"{path!r}: layer {config.get('name')!r} ({class_name}) uses Keras "
                             f"arguments minnet's {class_name} does not have: {dropped}.")
    return class_name, kept


def _minnet_model_config(document, path, custom_objects):
    class_name = document.get("class_name")
    config = document.get("config") or {}
    if class_name == "Sequential":
        layers = []
        for entry in config.get("layers", []):
            name, layer_config = _layer_config_to_minnet(_class_of(entry), entry.get("config", {}),
                                                         path, custom_objects)
            layers.append({"class_name": name, "config": layer_config,
                           "build_config": entry.get("build_config")})
        shape = config.get("build_input_shape")
        if layers and layers[0]["class_name"] == "InputLayer":
            shape = layers[0]["config"]["batch_shape"]
            layers = layers[1:]
        return "Sequential", {"name": config.get("name"), "layers": layers,
                              "build_input_shape": shape}
    if class_name in ("Functional", "Model"):
        layers, nodes, pending = [], [], []
        for entry in config.get("layers", []):
            name, layer_config = _layer_config_to_minnet(_class_of(entry), entry.get("config", {}),
                                                         path, custom_objects)
            if name == "InputLayer":
                layers.append({"class_name": "Input", "name": entry["name"],
                               "config": {"name": entry["name"], "dtype": layer_config["dtype"],
                                          "shape": list(layer_config["batch_shape"][1:]),
                                          "batch_size": layer_config["batch_shape"][0]}})
                continue
            layers.append({"class_name": name, "config": layer_config, "name": entry["name"],
                           "build_config": entry.get("build_config")})
            for node in entry.get("inbound_nodes", []):
                pending.append((entry["name"], node))
        nodes = order_nodes(pending, {e["name"] for e in layers if e["class_name"] == "Input"},
                             path)

        def spec(references):
            if isinstance(references, dict):
                return {"dict": {key: list(value) for key, value in references.items()}}
            if references and isinstance(references[0], str):
                return {"tensor": list(references)}
            return {"list": [list(r) for r in references]}

        return "Functional", {"name": config.get("name"), "trainable": config.get("trainable", True),
                              "layers": layers, "nodes": nodes,
                              "inputs": spec(config["input_layers"]),
                              "outputs": spec(config["output_layers"])}
    raise ModelFileError(f"{path!r}: a Keras {class_name!r} model; minnet reads Sequential and "
                         "functional models.")


def _known_arguments(kind, entry, keep_name=False):
    """``{"class_name", "config"}`` keeping the arguments minnet's class takes (None values left
    to minnet's defaults): a Keras optimizer's ``use_ema``, a schedule's ``name``, ..."""
    cls = _registry.lookup(kind, entry["class_name"])
    names, _ = _accepted(cls)
    config = {k: v for k, v in (entry.get("config") or {}).items()
              if (k in names or (keep_name and k == "name")) and v is not None}
    return {"class_name": entry["class_name"], "config": config}


def _optimizer_to_minnet(optimizer):
    """Keras's optimizer entry (``module`` etc. already stripped) as minnet's, keeping the
    arguments minnet takes; a MultiOptimizer's sub-optimizers likewise."""
    if optimizer.get("class_name") == "MultiOptimizer":
        config = dict(optimizer.get("config") or {})
        mapping = dict(config.get("optimizer_map") or {})
        inner = dict(mapping.get("config") or {})
        inner["default_optimizer"] = _optimizer_to_minnet(inner["default_optimizer"])
        inner["optimizer_map"] = {key: _optimizer_to_minnet(value)
                                  for key, value in (inner.get("optimizer_map") or {}).items()}
        config = {k: v for k, v in config.items() if k in ("name", "loss_scale_factor")}
        return {"class_name": "MultiOptimizer", "config": dict(config, optimizer_map=dict(
            mapping, config=inner))}
    optimizer = _known_arguments("optimizer", optimizer, keep_name=True)
    rate = optimizer["config"].get("learning_rate")
    if isinstance(rate, dict) and "class_name" in rate:
        optimizer["config"]["learning_rate"] = _known_arguments("schedule", rate)
    return optimizer


def _compile_to_minnet(compile_config):
    entry = _minnet_object(compile_config)
    optimizer = entry.get("optimizer")
    if isinstance(optimizer, dict):
        optimizer = _optimizer_to_minnet(optimizer)
    loss, metrics = entry.get("loss"), entry.get("metrics") or []
    # Per-output settings (a dict or list of losses, a dict of metric lists) are minnet's
    # "per_output" compile entries.
    per_output = isinstance(loss, dict) or isinstance(metrics, dict) or (
        isinstance(loss, list) and len(loss) > 1)
    result = {"optimizer": optimizer, "loss": loss, "metrics": metrics,
              "loss_weights": entry.get("loss_weights")}
    if per_output:
        result["per_output"] = True
    return result


def load_keras(path, custom_objects=None, compile=True):
    """Read a Keras 3 ``.keras`` file into a minnet model (weights converted to minnet's layouts).

    Raises:
        ModelFileError: a layer or argument minnet does not have (named), or a damaged file.
        ImportError: h5py is missing.
    """
    h5py = _require_h5py()
    try:
        return _load_keras(h5py, path, custom_objects, compile)
    except ModelFileError:
        raise
    except (OSError, KeyError, IndexError, TypeError, ValueError, zipfile.BadZipFile) as error:
        raise ModelFileError(f"{path!r} is a Keras 3 `.keras` file, but a damaged one or one "
                             f"minnet cannot read: {type(error).__name__}: {error}") from None


def _read_layers(h5py, layers_group, model, document, path):
    """Set each layer's weights from ``layers_group/<key>`` (nested Sequentials recursively)."""
    if document.get("class_name") == "Sequential":
        layers = list(model.layers)
        keys = _keys([type(layer).__name__ for layer in layers])
        entries = [e for e in document["config"].get("layers", []) if e["class_name"] != "InputLayer"]
    else:
        entries = document["config"]["layers"]
        keys = _keys([entry["class_name"] for entry in entries])
        layers = [None if entry["class_name"] == "InputLayer"
                  else model.get_layer(entry["config"].get("name") or entry.get("name"))
                  for entry in entries]
    for key, layer, entry in zip(keys, layers, entries):
        if layer is not None:
            _build_wrapped(layer, (entry.get("build_config") or {}).get("input_shape"))
        if layer is None or not layer.weights:
            continue
        if _is_model(layer):
            _read_layers(h5py, layers_group[key]["layers"], layer, entry, path)
            continue
        kind = type(layer).__name__
        group = layers_group[key]
        groups = {}

        def collect(name, obj, groups=groups):
            if isinstance(obj, h5py.Group) and name.split("/")[-1] == "vars":
                sub = name[:-len("vars")].rstrip("/")
                groups[sub] = [np.asarray(obj[str(i)]) for i in range(len(obj))]

        group.visititems(collect)
        if "vars" in group:
            groups[""] = [np.asarray(group["vars"][str(i)]) for i in range(len(group["vars"]))]
        try:
            arrays = from_keras(layer, groups)
            if arrays is not None:
                layer.set_weights(arrays)
        except (ValueError, KeyError, IndexError) as error:
            raise ModelFileError(f"{path!r}: the weights of layer '{layer.name}' ({kind}) do "
                                 f"not fit: {error}") from None


def _load_keras(h5py, path, custom_objects, compile):
    with zipfile.ZipFile(path) as archive:
        document = json.loads(archive.read("config.json"))
        weights_bytes = archive.read("model.weights.h5")
        assets = sorted(n for n in archive.namelist() if n.startswith("assets/") and not n.endswith("/"))
    if assets:
        # A layer's state kept outside the weights (a lookup table's vocabulary, ...): minnet
        # would load the layer without it and compute something else, so it refuses.
        raise ModelFileError(f"{path!r}: the Keras file keeps layer state in assets ({assets[:3]}), "
                             "which minnet does not read; rebuild that layer in minnet (for a "
                             "TextVectorization, pass its vocabulary) and load the weights.")
    if document.get("class_name") not in ("Sequential", "Functional", "Model"):
        with h5py.File(io.BytesIO(weights_bytes), "r") as h5:
            model = read_subclassed(h5py, document, h5, path, custom_objects)
    else:
        class_name, config = _minnet_model_config(document, path, custom_objects)
        model = build_model({"model": {"class_name": class_name, "config": config}}, path,
                            custom_objects)
        with h5py.File(io.BytesIO(weights_bytes), "r") as h5:
            _read_layers(h5py, h5["layers"], model, document, path)
    if compile and document.get("compile_config"):
        build_compile(model, _compile_to_minnet(document["compile_config"]), None, path,
                      custom_objects)
    return model
