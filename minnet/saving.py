"""Saving and loading models and weights, without pickle.

A model file (``model.save("net.minnet")``) is ONE zip archive:

* ``config.json``: format name and version, minnet version, the architecture
  (each layer's ``minnet.layers.serialize``), the ``compile`` settings (optimizer
  config, loss and metric identifiers), the list of weights (names, shapes, dtypes),
  the keys of the optimizer state and minnet's random state;
* ``weights/00000.npy``, ...: the arrays of ``model.get_weights()`` (BatchNorm's
  moving statistics included), in that order;
* ``optimizer/<key>.npy``: the optimizer's ``state_dict()`` (moments, step counts, ...).

Every array is read back with ``allow_pickle=False``. Writes are atomic: the archive is
written to a temporary file in the same directory and moved over the target with
``os.replace``, so an interrupted save leaves any previous file untouched.

A weights file (``model.save_weights("w.npz")``) is a plain ``.npz`` of the
``get_weights()`` arrays (``weight_00000``, ...) that ``np.load`` can open too.
"""
import io
import json
import os
import struct
import tempfile
import zipfile
import zlib

import numpy as np

from minnet import _random
from minnet.layers import serialize as serialize_layer

__all__ = ["save_model", "load_model", "save_weights", "load_weights", "ModelFileError"]

FORMAT_NAME = "minnet-model"
FORMAT_VERSION = 1
WEIGHTS_FORMAT_VERSION = 1
_CONFIG_NAME = "config.json"
_WEIGHTS_MARKER = "__minnet_weights_format__"
_INPUT_SHAPE_KEY = "__input_shape__"


class ModelFileError(ValueError):
    """A file is not a (readable) minnet model or weights file: foreign, truncated or corrupted."""


# ---------------------------------------------------------------------------------------
# Atomic writes
# ---------------------------------------------------------------------------------------

def _current_umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _atomic_write(path, write):
    """Call ``write(file)`` on a temporary file beside ``path``, then move it over ``path``."""
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"Cannot save to {path!r}: the directory {directory!r} does not exist.")
    if os.path.isdir(path):
        raise IsADirectoryError(f"Cannot save to {path!r}: it is a directory.")
    fd, temp_path = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp",
                                     dir=directory)
    try:
        with os.fdopen(fd, "wb") as file:
            write(file)
            file.flush()
            os.fsync(file.fileno())
        os.chmod(temp_path, 0o666 & ~_current_umask())
        os.replace(temp_path, path)
    except BaseException:
        try:
            os.unlink(temp_path)
        except OSError:
            pass
        raise


def _array_bytes(array):
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, np.asarray(array), allow_pickle=False)
    return buffer.getvalue()


def _write_member(archive, name, data):
    archive.writestr(name, data)


# ---------------------------------------------------------------------------------------
# Compile settings <-> JSON
# ---------------------------------------------------------------------------------------

def _serialize_identifier(identifier, obj, module):
    """A string identifier is kept; an object becomes its ``serialize`` dict."""
    if isinstance(identifier, str):
        return identifier
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


def _compile_config(model):
    if model.optimizer is None:
        return None
    from minnet import losses, metrics, optimizers

    ids = model._compile_identifiers or {}
    loss_ids, metric_ids = ids.get("loss"), ids.get("metrics")
    if isinstance(loss_ids, (list, tuple, dict)) or _per_output(metric_ids):
        # Several outputs: each entry a name or its serialize() dict.
        def entry(module):
            return lambda item: item if item is None or isinstance(item, str) else module.serialize(item)
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
        import warnings
        warnings.warn(f"Could not serialize {', '.join(warnings_list)} (made from plain functions); "
                      f"the loaded model will need `compile()` again for them. Subclass Loss / "
                      f"Metric to make them savable.", UserWarning, stacklevel=4)
    return {"optimizer": optimizers.serialize(model.optimizer), "loss": loss,
            "metrics": metric_entries, "loss_weights": ids.get("loss_weights"),
            "loss_saved": model.loss is None or loss is not None}


def _deserialize_identifier(entry, module, custom_objects):
    if entry is None or isinstance(entry, str):
        if isinstance(entry, str) and custom_objects and entry in custom_objects:
            return custom_objects[entry]
        return entry
    return module.deserialize(entry, custom_objects=custom_objects)


# ---------------------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------------------

def save_model(model, path):
    """Write ``model`` (architecture, weights, compile settings, optimizer state) to ``path``.

    Args:
        model: a ``Sequential`` model (built, or unbuilt with no weights yet).
        path: file path; conventionally ``*.minnet``. An existing file is replaced
            atomically.
    """
    from minnet import __version__
    weights = model.get_weights()
    weight_info = [{"name": getattr(w, "name", None), "shape": list(a.shape), "dtype": a.dtype.name}
                   for w, a in zip(model.weights, weights)]
    optimizer_state = {}
    if model.optimizer is not None:
        optimizer_state = model.optimizer.state_dict()
    config = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "minnet_version": __version__,
        "model": {**serialize_layer(model), "build_config": model.get_build_config()},
        "compile": _compile_config(model),
        "weights": weight_info,
        "optimizer_state": sorted(optimizer_state),
        "random_state": _random.get_state(),
    }
    config_bytes = json.dumps(config, indent=1).encode("utf-8")

    def write(file):
        with zipfile.ZipFile(file, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            _write_member(archive, _CONFIG_NAME, config_bytes)
            for i, array in enumerate(weights):
                _write_member(archive, f"weights/{i:05d}.npy", _array_bytes(array))
            for key in sorted(optimizer_state):
                _write_member(archive, f"optimizer/{key}.npy", _array_bytes(optimizer_state[key]))

    _atomic_write(path, write)


# What zipfile/zlib/np.load raise on a damaged archive: a bad header, a CRC mismatch, a
# flipped compression-method byte (NotImplementedError), a truncated stream, a bad .npy.
_DAMAGE_ERRORS = (zipfile.BadZipFile, zlib.error, NotImplementedError, EOFError, ValueError,
                  struct.error, OverflowError, MemoryError)


def _open_archive(path, what):
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"No {what} file found at {path!r}.")
    if os.path.isdir(path):
        raise IsADirectoryError(f"Expected a {what} file at {path!r}, found a directory.")
    try:
        return zipfile.ZipFile(path, "r")
    except (KeyError, *_DAMAGE_ERRORS) as error:
        raise ModelFileError(f"{path!r} is not a minnet {what} file (not a zip archive, or "
                             f"truncated: {type(error).__name__}: {error}).") from None


def _read_array(archive, name, path):
    try:
        with archive.open(name) as member:
            return np.lib.format.read_array(io.BytesIO(member.read()), allow_pickle=False)
    except KeyError:
        raise ModelFileError(f"{path!r} is damaged: the entry {name!r} is missing.") from None
    except (OSError, *_DAMAGE_ERRORS) as error:
        raise ModelFileError(f"{path!r} is damaged: could not read {name!r} "
                             f"({type(error).__name__}: {error}).") from None


def _read_config(archive, path):
    try:
        raw = archive.read(_CONFIG_NAME)
    except KeyError:
        raise ModelFileError(f"{path!r} is not a minnet model file (it has no {_CONFIG_NAME}; for "
                             f"a weights file use `model.load_weights`).") from None
    except (OSError, *_DAMAGE_ERRORS) as error:
        raise ModelFileError(f"{path!r} is damaged: could not read {_CONFIG_NAME} "
                             f"({type(error).__name__}: {error}).") from None
    try:
        config = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ModelFileError(f"{path!r} is damaged: {_CONFIG_NAME} is not valid JSON ({error}).") from None
    if not isinstance(config, dict) or config.get("format") != FORMAT_NAME:
        raise ModelFileError(f"{path!r} is not a minnet model file (its {_CONFIG_NAME} does not "
                             f"declare format {FORMAT_NAME!r}).")
    version = config.get("format_version")
    if not isinstance(version, int) or version > FORMAT_VERSION or version < 1:
        raise ModelFileError(f"{path!r} uses model file format version {version!r}; this minnet "
                             f"reads versions 1 to {FORMAT_VERSION}. Upgrade minnet to load it.")
    for key in ("model", "weights"):
        if key not in config:
            raise ModelFileError(f"{path!r} is damaged: {_CONFIG_NAME} has no {key!r} entry.")
    return config


def _check_weights(arrays, info, path):
    for i, (array, entry) in enumerate(zip(arrays, info)):
        if list(array.shape) != list(entry["shape"]):
            raise ModelFileError(f"{path!r} is damaged: weight {i} has shape {array.shape}, the "
                                 f"config says {tuple(entry['shape'])}.")


def load_model(path, custom_objects=None, compile=True, restore_random_state=True):
    """Load a model saved with ``model.save(path)``.

    Args:
        path: the file written by ``save``.
        custom_objects: dict mapping class names to custom classes (layers, losses,
            metrics, optimizers) that are not registered with minnet.
        compile: re-compile with the saved optimizer (and its state), loss and metrics.
        restore_random_state: restore minnet's random state (shuffling, dropout) as it
            was at save time, so that ``fit(..., initial_epoch=...)`` continues the run
            exactly as if it had not stopped.

    Returns:
        The model, built and compiled (if it was), with identical predictions.

    Raises:
        FileNotFoundError: nothing at ``path``.
        ModelFileError (a ValueError): not a minnet model file, truncated or corrupted.
    """
    from minnet import layers as layers_module
    from minnet import losses, metrics, optimizers
    from minnet.models import Model, Sequential

    path = os.fspath(path)
    with _open_archive(path, "model") as archive:
        config = _read_config(archive, path)
        weight_info = config["weights"]
        arrays = [_read_array(archive, f"weights/{i:05d}.npy", path) for i in range(len(weight_info))]
        _check_weights(arrays, weight_info, path)
        optimizer_state = {key: _read_array(archive, f"optimizer/{key}.npy", path)
                           for key in config.get("optimizer_state", [])}

    model_entry = config["model"]
    class_name = model_entry.get("class_name")
    classes = {"Sequential": Sequential, "Model": Model, "Functional": Model}
    classes.update(custom_objects or {})
    cls = classes.get(class_name)
    if cls is None:
        cls = getattr(layers_module, "_REGISTRY", {}).get(class_name) if class_name else None
    if cls is None:
        raise ModelFileError(f"{path!r}: unknown model class {class_name!r}; pass it in "
                             f"`custom_objects`.")
    if cls in (Sequential, Model):
        model = cls.from_config(dict(model_entry.get("config", {})), custom_objects=custom_objects)
    else:   # a registered subclass: its from_config may or may not take custom_objects
        model = layers_module.deserialize({"class_name": class_name, "config": dict(
            model_entry.get("config", {}))}, custom_objects={**(custom_objects or {}), class_name: cls})
    if not model.weights and model_entry.get("build_config"):
        model.build_from_config(model_entry["build_config"])     # a subclassed model
    if len(model.weights) != len(arrays):
        raise ModelFileError(f"{path!r}: the rebuilt model has {len(model.weights)} weights but the "
                             f"file holds {len(arrays)} (was the model built when it was saved?).")
    model.set_weights(arrays)

    compile_config = config.get("compile")
    if compile and compile_config:
        optimizer = optimizers.deserialize(compile_config["optimizer"], custom_objects=custom_objects)
        loss = compile_config.get("loss")
        metric_list = compile_config.get("metrics") or []
        if compile_config.get("per_output"):
            loss = _map_per_output(loss, lambda m: _deserialize_identifier(m, losses, custom_objects))
            metric_list = _map_per_output(
                metric_list, lambda m: _deserialize_identifier(m, metrics, custom_objects))
        else:
            loss = _deserialize_identifier(loss, losses, custom_objects)
            metric_list = [_deserialize_identifier(m, metrics, custom_objects) for m in metric_list]
        model.compile(optimizer=optimizer, loss=loss, metrics=metric_list,
                      loss_weights=compile_config.get("loss_weights"))
        if model._compile_identifiers is not None and not compile_config.get("per_output"):
            # Keep the saved identifiers so a re-save writes the same strings.
            model._compile_identifiers["loss"] = compile_config.get("loss") \
                if isinstance(compile_config.get("loss"), str) else loss
            model._compile_identifiers["metrics"] = [
                saved if isinstance(saved, str) else obj
                for saved, obj in zip(compile_config.get("metrics", []), metric_list)]
        if optimizer_state:
            try:
                optimizer.load_state_dict(optimizer_state)
            except (TypeError, ValueError) as error:
                raise ModelFileError(f"{path!r} is damaged: its optimizer state does not fit the "
                                     f"saved optimizer ({error}).") from None
    if restore_random_state and config.get("random_state") is not None:
        _restore_random_state(config["random_state"], path)
    return model


def _restore_random_state(state, path):
    """Check the config's ``random_state`` entry completely, then restore it (all or nothing)."""
    def damaged(why):
        shown = repr(state)
        shown = shown if len(shown) <= 200 else shown[:200] + "..."
        return ModelFileError(f"{path!r} is damaged: the {_CONFIG_NAME} entry 'random_state' "
                              f"{why}. Received: random_state={shown}")

    if not isinstance(state, dict):
        raise damaged("must be a dict with 'seed', 'offset' and 'generator'")
    for key in ("seed", "offset"):
        value = state.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise damaged(f"needs a non-negative int {key!r} (got {value!r})")
    try:
        np.random.default_rng().bit_generator.state = state.get("generator")
    except (TypeError, ValueError, KeyError, AttributeError, OverflowError) as error:
        raise damaged(f"has an invalid 'generator' state ({type(error).__name__}: {error})") from None
    _random.set_state(state)


# ---------------------------------------------------------------------------------------
# Weights only
# ---------------------------------------------------------------------------------------

def save_weights(model, path):
    """Write ``model.get_weights()`` to an ``.npz`` file at ``path`` (atomically).

    The file also records the shape the model was built with, so ``load_weights`` can
    build an unbuilt model of the same architecture first.
    """
    arrays = {f"weight_{i:05d}": a for i, a in enumerate(model.get_weights())}
    arrays[_WEIGHTS_MARKER] = np.array(WEIGHTS_FORMAT_VERSION)
    shape = model._build_input_shape
    if shape is not None:
        arrays[_INPUT_SHAPE_KEY] = np.array([-1 if s is None else int(s) for s in shape], dtype=np.int64)
    _atomic_write(path, lambda file: np.savez(file, **arrays))


def _weights_from_model_file(archive, path):
    config = _read_config(archive, path)
    arrays = [_read_array(archive, f"weights/{i:05d}.npy", path) for i in range(len(config["weights"]))]
    _check_weights(arrays, config["weights"], path)
    build_shape = config["model"].get("config", {}).get("build_input_shape")
    return arrays, None if build_shape is None else tuple(build_shape)


def load_weights(model, path):
    """Copy the weights stored in ``path`` (``save_weights`` or ``save`` output) into ``model``.

    Raises:
        FileNotFoundError: nothing at ``path``.
        ModelFileError (a ValueError): not a minnet weights file, damaged, or weights whose
            count or shapes do not match the model.
    """
    path = os.fspath(path)
    with _open_archive(path, "weights") as archive:
        names = archive.namelist()
        if _CONFIG_NAME in names:
            arrays, build_shape = _weights_from_model_file(archive, path)
        else:
            marker = _WEIGHTS_MARKER + ".npy"
            if marker not in names:
                raise ModelFileError(f"{path!r} is not a minnet weights file (no {_WEIGHTS_MARKER} "
                                     f"entry).")
            version = _read_array(archive, marker, path)
            if version.shape != () or int(version) > WEIGHTS_FORMAT_VERSION:
                raise ModelFileError(f"{path!r} uses weights format version {version!r}; this minnet "
                                     f"reads version {WEIGHTS_FORMAT_VERSION}.")
            keys = sorted(n[:-4] for n in names if n.startswith("weight_") and n.endswith(".npy"))
            if keys != [f"weight_{i:05d}" for i in range(len(keys))]:
                raise ModelFileError(f"{path!r} is damaged: weight entries are not numbered "
                                     f"0..{len(keys) - 1}.")
            arrays = [_read_array(archive, key + ".npy", path) for key in keys]
            build_shape = None
            if _INPUT_SHAPE_KEY + ".npy" in names:
                raw = _read_array(archive, _INPUT_SHAPE_KEY + ".npy", path)
                build_shape = tuple(None if s < 0 else int(s) for s in raw.tolist())
    if not model.built:
        if build_shape is None:
            raise ValueError(f"Model '{model.name}' is not built and {path!r} does not record an "
                             f"input shape: call `model.build(input_shape)` before `load_weights`.")
        model.build(build_shape)
    expected = [tuple(w.shape) for w in model.weights]
    received = [a.shape for a in arrays]
    if len(expected) != len(received):
        raise ModelFileError(f"{path!r} holds {len(received)} weight arrays but model '{model.name}' "
                             f"has {len(expected)} (shapes {expected}).")
    for i, (e, r) in enumerate(zip(expected, received)):
        if e != r:
            raise ModelFileError(f"{path!r}: weight {i} has shape {r} but model '{model.name}' expects "
                                 f"{e}.")
    model.set_weights(arrays)
