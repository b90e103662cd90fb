"""Model configs: the ``compile`` settings to JSON and back, and the rebuilding of a model
(layer by layer, each value through its constructor's checks, under a parameter budget)
and of its compile settings from a file's config.
"""
import inspect
import math
import warnings

import numpy as np

import minnet.saving
from minnet import _registry
from minnet import layers as layers_module
from minnet import losses, metrics, optimizers
from minnet.saving.archive import CONFIG_ERRORS, ModelFileError, clip_text, file_error, short_repr


# Compile settings <-> JSON
# ---------------------------------------------------------------------------------------

def _serialize_identifier(identifier, obj, module):
    """A string identifier is kept; a named function (``metrics=[rmse]``) is saved by its
    name, as Keras does, for ``load_model(..., custom_objects={"rmse": rmse})`` or the
    registry to give back; an object becomes its ``serialize`` dict."""
    if isinstance(identifier, str):
        return identifier
    if inspect.isfunction(identifier):
        return None if identifier.__name__ == "<lambda>" else identifier.__name__
    try:
        return module.serialize(obj)
    except (TypeError, ValueError, AttributeError):
        return None


def _per_output(value):
    """True for a per-output list/dict of losses or metrics (a multi-output compile)."""
    if isinstance(value, dict):
        return "class_name" not in value
    return isinstance(value, (list, tuple)) and any(isinstance(v, (list, tuple)) for v in value)


def _map_per_output(value, fn):
    if isinstance(value, dict) and "class_name" not in value:
        return {key: _map_per_output(item, fn) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_map_per_output(item, fn) for item in value]
    return fn(value)


def compile_config_of(model):
    if model.optimizer is None:
        return None
    ids = model._compile_identifiers or {}
    loss_ids, metric_ids = ids.get("loss"), ids.get("metrics")
    if isinstance(loss_ids, (list, tuple, dict)) or _per_output(metric_ids):
        # Several outputs: each entry a name or its serialize() dict.
        def entry(module):
            return lambda item: item if item is None or isinstance(item, str) else \
                item.__name__ if inspect.isfunction(item) else module.serialize(item)
        return {"optimizer": optimizers.serialize(model.optimizer), "per_output": True,
                "loss": _map_per_output(loss_ids, entry(losses)),
                "metrics": _map_per_output(metric_ids, entry(metrics)),
                "loss_weights": ids.get("loss_weights"), "loss_saved": True}
    warnings_list = []
    loss = None
    if model.loss is not None:
        loss = _serialize_identifier(ids.get("loss"), model.loss, losses)
        if loss is None:
            warnings_list.append(f"loss {getattr(model.loss, 'name', model.loss)!r}")
    metric_entries = []
    for identifier, metric in zip(ids.get("metrics", []), model.compiled_metrics):
        entry = _serialize_identifier(identifier, metric, metrics)
        if entry is None:
            warnings_list.append(f"metric {metric.name!r}")
        else:
            metric_entries.append(entry)
    if warnings_list:
        warnings.warn(f"Could not serialize {', '.join(warnings_list)} (a lambda, or an object "
                      f"without a config); the loaded model will need `compile()` again for "
                      f"them. Use a named function (given back by load_model's `custom_objects`) "
                      f"or subclass Loss / Metric to make them savable.", UserWarning, stacklevel=4)
    config = {"optimizer": optimizers.serialize(model.optimizer), "loss": loss,
              "metrics": metric_entries, "loss_weights": ids.get("loss_weights"),
              "loss_saved": model.loss is None or loss is not None}
    if isinstance(ids.get("weighted_metrics"), list):     # Keras's weighted_metrics, by name/config
        config["weighted_metrics"] = [item if isinstance(item, str) else metrics.serialize(item)
                                      for item in ids["weighted_metrics"]]
    return config


def _deserialize_identifier(entry, module, custom_objects):
    if entry is None or isinstance(entry, str):
        if isinstance(entry, str) and custom_objects and entry in custom_objects:
            return custom_objects[entry]
        return entry
    return module.deserialize(entry, custom_objects=custom_objects)


# Rebuilding objects from the config, each value through its constructor's checks
# ---------------------------------------------------------------------------------------

def _size_ints(value, key=""):
    """The ints of a layer config that can size something (seeds excluded)."""
    if "seed" in key:
        return
    if isinstance(value, bool):
        return
    if isinstance(value, int):
        yield key, value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _size_ints(item, key)
    elif isinstance(value, dict):
        for k, item in value.items():
            yield from _size_ints(item, str(k))


def _check_layer_entry(entry, where, path, custom_objects):
    """Build one layer from its config entry (constructor checks), converting any error."""
    if not isinstance(entry, dict) or not isinstance(entry.get("class_name"), str) or \
            not isinstance(entry.get("config", {}), dict):
        raise file_error(path, where, f"expected {{'class_name': str, 'config': dict}}, found "
                                       f"{short_repr(entry)}")
    name = entry["class_name"]
    for key, value in _size_ints(entry.get("config", {})):
        if not -minnet.saving.MAX_DIMENSION <= value <= minnet.saving.MAX_DIMENSION:
            raise file_error(path, f"{where} ({name})",
                              f"{key}={value} is larger than minnet.saving.MAX_DIMENSION="
                              f"{minnet.saving.MAX_DIMENSION}; refused before allocating anything")
    try:
        layer = layers_module.deserialize(entry, custom_objects=custom_objects)
    except CONFIG_ERRORS as error:
        raise file_error(path, f"{where} ({name})",
                          f"{type(error).__name__}: {clip_text(str(error), 400)}") from None
    return layer


def _estimate_parameters(layer, config, in_shape, out_shape):
    """An upper estimate of the weights a standard layer creates when built on ``in_shape``.

    Dense, convolutions, normalisation: at most (largest input dim + 1) x (largest output
    dim + 1) x (kernel area).
    """
    kernel = config.get("kernel_size", 1)
    area = math.prod(kernel) if isinstance(kernel, (list, tuple)) else kernel
    area = area if isinstance(area, int) and area > 0 else 1
    largest_in = max([s for s in in_shape[1:] if s] or [1])
    largest_out = max([s for s in out_shape[1:] if s] or [1])
    return (largest_in + 1) * (largest_out + 1) * area


def _check_sequential(model_config, path, custom_objects):
    """Validate a Sequential config layer by layer, with a parameter budget, before building."""
    entries = model_config.get("layers", [])
    if not isinstance(entries, list):
        raise file_error(path, "the model's 'layers'", f"expected a list, found {short_repr(entries)}")
    built = [(i, entry, _check_layer_entry(entry, f"layer {i}", path, custom_objects))
             for i, entry in enumerate(entries)]
    shape = model_config.get("build_input_shape")
    if shape is None:
        return
    if not isinstance(shape, list) or not shape or not all(
            s is None or (isinstance(s, int) and not isinstance(s, bool)
                          and 0 < s <= minnet.saving.MAX_DIMENSION) for s in shape[1:]):
        raise file_error(path, "the model's 'build_input_shape'",
                          f"expected a list of sizes in [1, {minnet.saving.MAX_DIMENSION}] after the batch "
                          f"size, found {short_repr(shape)}")
    shape = (None,) + tuple(shape[1:])
    total = 0
    for i, entry, layer in built:
        if entry.get("class_name") == "Input":
            continue
        where = f"layer {i} ({entry.get('class_name')})"
        try:
            out_shape = tuple(layer.compute_output_shape(shape))
        except Exception:  # noqa: BLE001 - the estimate stops; the build itself checks the rest
            # A layer whose shape needs it built (or a custom one without
            # compute_output_shape): the real build decides, its errors converted too.
            return
        if not all(s is None or isinstance(s, (int, np.integer)) for s in out_shape):
            return    # several outputs or a structured shape: the build checks it
        if any(s is not None and s < 0 for s in out_shape):
            raise file_error(path, where, f"gives the output shape {out_shape}")
        if math.prod(s for s in out_shape[1:] if s) > minnet.saving.MAX_PARAMETERS:
            raise file_error(path, where, f"gives outputs of shape {out_shape}, more than "
                                           f"{minnet.saving.MAX_PARAMETERS} values per sample")
        total += _estimate_parameters(layer, entry.get("config", {}), shape, out_shape)
        if total > minnet.saving.MAX_PARAMETERS:
            raise file_error(path, where, f"the architecture would create about {total} "
                                           f"weights, more than minnet.saving.MAX_PARAMETERS="
                                           f"{minnet.saving.MAX_PARAMETERS}; refused before allocating them")
        shape = out_shape


def build_model(config, path, custom_objects):
    """The model a file describes, built through the one registry (saving imports no model
    class: Sequential and Model register themselves, custom models with ``register_layer``)."""
    model_entry = config["model"]
    class_name = model_entry.get("class_name")
    model_config = model_entry.get("config", {})
    if not isinstance(model_config, dict):
        raise file_error(path, "the model's config", f"expected a dict, found "
                                                      f"{short_repr(model_config)}")
    try:
        cls = _registry.lookup("layer", class_name, custom_objects) \
            if isinstance(class_name, str) else None
    except ValueError:
        cls = None
    if not isinstance(cls, type):
        raise ModelFileError(f"{path!r}: unknown model class {short_repr(class_name)}; pass it in "
                             f"`custom_objects` (or import minnet.models, where Sequential and "
                             f"Model register themselves).")
    if getattr(cls, "_config_is_layer_stack", False):
        _check_sequential(model_config, path, custom_objects)
    try:
        if "custom_objects" in inspect.signature(cls.from_config).parameters:
            model = cls.from_config(dict(model_config), custom_objects=custom_objects)
        else:   # a registered subclass whose from_config takes only the config
            model = cls.from_config(dict(model_config))
        if not model.weights and model_entry.get("build_config"):
            model.build_from_config(model_entry["build_config"])     # a subclassed model
    except CONFIG_ERRORS as error:
        raise file_error(path, f"the model ({class_name})",
                          f"{type(error).__name__}: {clip_text(str(error), 400)}") from None
    if "layer_build_configs" in model_entry:
        _build_layers(model, model_entry["layer_build_configs"], path)
    return model


def _build_layers(model, entries, path):
    """Build each layer as it was built when saved (a model whose layers were built one by one)."""
    layers = model.layers
    if not isinstance(entries, list) or len(entries) != len(layers):
        raise file_error(path, "the model's 'layer_build_configs'",
                          f"expected a list of {len(layers)} entries (one per layer), found "
                          f"{short_repr(entries)}")
    total = 0
    for i, (layer, entry) in enumerate(zip(layers, entries)):
        if entry is None or layer.built:
            continue
        shape = entry.get("input_shape") if isinstance(entry, dict) else None
        if not isinstance(shape, list) or not all(
                s is None or (isinstance(s, int) and not isinstance(s, bool)
                              and 0 <= s <= minnet.saving.MAX_DIMENSION) for s in shape):
            raise file_error(path, f"layer {i} ({type(layer).__name__})'s build config",
                              f"expected {{'input_shape': [sizes in [0, {minnet.saving.MAX_DIMENSION}] "
                              f"or null]}}, found {short_repr(entry)}")
        try:
            out_shape = tuple(layer.compute_output_shape(tuple(shape)))
        except Exception:  # noqa: BLE001 - no estimate; the build itself checks the rest
            out_shape = None
        if out_shape is not None and all(s is None or isinstance(s, (int, np.integer)) for s in out_shape):
            total += _estimate_parameters(layer, layer.get_config(), tuple(shape), out_shape)
            if total > minnet.saving.MAX_PARAMETERS:
                raise file_error(path, f"layer {i} ({type(layer).__name__})",
                                  f"its build would create about {total} weights, more than "
                                  f"minnet.saving.MAX_PARAMETERS={minnet.saving.MAX_PARAMETERS}; "
                                  f"refused before allocating them")
        try:
            layer.build_from_config({"input_shape": shape})
        except CONFIG_ERRORS as error:
            raise file_error(path, f"layer {i} ({type(layer).__name__})",
                              f"{type(error).__name__}: {clip_text(str(error), 400)}") from None


def build_compile(model, compile_config, optimizer_state, path, custom_objects):
    def convert(part, build):
        try:
            return build()
        except CONFIG_ERRORS as error:
            raise file_error(path, part, f"{type(error).__name__}: {clip_text(str(error), 400)}") \
                from None

    optimizer_entry = compile_config.get("optimizer")
    optimizer = convert("compile.optimizer", lambda: optimizers.deserialize(
        optimizer_entry, custom_objects=custom_objects))
    metric_entries = compile_config.get("metrics") or []
    per_output = bool(compile_config.get("per_output"))
    if per_output:   # a multi-output model: losses and metrics keyed by output
        loss = convert("compile.loss", lambda: _map_per_output(
            compile_config.get("loss"), lambda m: _deserialize_identifier(m, losses, custom_objects)))
        metric_list = convert("compile.metrics", lambda: _map_per_output(
            metric_entries, lambda m: _deserialize_identifier(m, metrics, custom_objects)))
    else:
        loss = convert("compile.loss", lambda: _deserialize_identifier(
            compile_config.get("loss"), losses, custom_objects))
        if not isinstance(metric_entries, list):
            raise file_error(path, "compile.metrics", f"expected a list, found "
                                                       f"{short_repr(metric_entries)}")
        metric_list = [convert(f"compile.metrics[{i}]", lambda m=m: _deserialize_identifier(
            m, metrics, custom_objects)) for i, m in enumerate(metric_entries)]
    weighted = compile_config.get("weighted_metrics") if not per_output else None
    weighted_list = None if not weighted else [
        convert(f"compile.weighted_metrics[{i}]", lambda m=m: _deserialize_identifier(
            m, metrics, custom_objects)) for i, m in enumerate(weighted)]
    convert("compile", lambda: model.compile(optimizer=optimizer, loss=loss, metrics=metric_list,
                                             loss_weights=compile_config.get("loss_weights"),
                                             weighted_metrics=weighted_list))
    if model._compile_identifiers is not None and not per_output:
        # Keep the saved identifiers so a re-save writes the same strings.
        model._compile_identifiers["loss"] = compile_config.get("loss") \
            if isinstance(compile_config.get("loss"), str) else loss
        model._compile_identifiers["metrics"] = [
            saved if isinstance(saved, str) else obj
            for saved, obj in zip(metric_entries, metric_list)]
    if optimizer_state:
        try:
            optimizer.load_state_dict(optimizer_state)
        except CONFIG_ERRORS as error:
            raise ModelFileError(f"{path!r} is damaged: its optimizer state does not fit the "
                                 f"saved optimizer ({error}).") from None
        # Hyper-parameters read from the state go through the constructor's checks too.
        convert("optimizer state (hyper-parameters)",
                lambda: type(optimizer).from_config(dict(optimizer.get_config())))
