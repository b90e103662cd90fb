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

Loading is bounded and validated: every failure is a ``ModelFileError`` naming the path
and the part; ``.npy`` headers, entry sizes and the limits below (``MAX_LOAD_BYTES``,
``MAX_PARAMETERS``, ...) are checked before anything is allocated, and every config value
goes through its constructor's checks. Model files are format version 2 (Keras meanings);
version-1 files load with their meanings translated (see ``docs/reliability.md``).

The package is split by job: ``archive`` (the file format, atomic writes, bounded reading),
``model_config`` (compile settings and model rebuilding from a config) and this module
(the entry points and the limits).
"""
import json
import sys
import zipfile

import numpy as np

from minnet import _random, _utils
from minnet._version import __version__
from minnet.layers import serialize as serialize_layer
from minnet.saving import keras_format
from minnet.saving.onnx_export import export_onnx
from minnet.saving.archive import CONFIG_ERRORS, CONFIG_NAME, FORMAT_NAME, FORMAT_VERSION, \
    WEIGHTS_FORMAT_VERSION, ModelFileError, array_bytes, atomic_write, check_weights, clip_text, \
    file_error, fspath, open_archive, read_array, read_arrays, read_config, read_data, \
    read_header, refuse_foreign_suffix, short_repr, write_member
from minnet.saving.model_config import build_compile, build_model, compile_config_of
from minnet.saving.registration import (CustomObjectScope, custom_object_scope,
                                        deserialize_keras_object, get_custom_objects,
                                        get_registered_name, get_registered_object,
                                        register_keras_serializable, serialize_keras_object)

__all__ = ["save_model", "load_model", "save_weights", "load_weights", "ModelFileError",
           "register_keras_serializable", "get_custom_objects", "custom_object_scope",
           "CustomObjectScope", "serialize_keras_object", "deserialize_keras_object",
           "get_registered_name", "get_registered_object"]

# Limits on what a file may make ``load_model``/``load_weights`` allocate. They are checked
# before anything is allocated, from the archive's directory and the .npy headers. Raise
# them (``minnet.saving.MAX_LOAD_BYTES = ...``) to load a larger model on purpose.
MAX_LOAD_BYTES = 4 * 2**30          # all arrays of one file together
MAX_PARAMETERS = 2**30              # estimated weights of the architecture (elements)
MAX_DIMENSION = 2**24               # any size in a layer's config or the input shape
MAX_CONFIG_BYTES = 16 * 2**20       # config.json
MAX_CONFIG_DEPTH = 64               # nesting of config.json
# An entry larger than 1 MiB may not inflate more than this many times its stored size
# (trained weights barely compress; a 1 MB entry inflating to 1 GiB is a zip bomb).
MAX_COMPRESSION_RATIO = 100

_WEIGHTS_MARKER = "__minnet_weights_format__"
_INPUT_SHAPE_KEY = "__input_shape__"


# ---------------------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------------------

__all__ += ["export_onnx"]      # model.export's ONNX writer (minnet.saving.onnx_export)

_KERAS_FALLBACK_NOTED = []


def _note_keras_fallback(path):
    if not _KERAS_FALLBACK_NOTED:
        _KERAS_FALLBACK_NOTED.append(path)
        sys.stderr.write(f"minnet: {path!r} is written in minnet's own format, which Keras cannot "
                         "read (this note shows once): " + _utils.missing_extra_message(
                             "h5py", "h5", "writing a Keras 3 `.keras` file") + "\n")


def save_model(model, path):
    """Write ``model`` (architecture, weights, compile settings, optimizer state) to ``path``.

    Args:
        model: a ``Sequential`` model (built, or unbuilt with no weights yet).
        path: file path; conventionally ``*.minnet``. An existing file is replaced
            atomically.
    """
    path = fspath(path)
    refuse_foreign_suffix(path, "model", "'net.minnet'")
    if path.lower().endswith(".keras"):   # a real Keras 3 file (minnet's own format is .minnet)
        if keras_format.h5py_available():
            keras_format.save_keras(model, path)
            return
        # Keras scripts must keep running without the extra (also under `-W error`): minnet's
        # own zip under the name, and a note on stderr (not a warning), once per process.
        _note_keras_fallback(path)
    weights = model.get_weights()
    weight_info = [{"name": getattr(w, "name", None), "shape": list(a.shape), "dtype": a.dtype.name}
                   for w, a in zip(model.weights, weights)]
    optimizer_state = {}
    if model.optimizer is not None:
        optimizer_state = model.optimizer.state_dict()
    model_entry = {**serialize_layer(model), "build_config": model.get_build_config()}
    if weights and not model.built:
        # Layers built one by one (each called on data, the model never called): record each
        # layer's build so the loader rebuilds exactly this state (Keras's build_config).
        model_entry["layer_build_configs"] = [layer.get_build_config() if layer.built else None
                                              for layer in model.layers]
    config = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "minnet_version": __version__,
        "model": model_entry,
        "compile": compile_config_of(model),
        "weights": weight_info,
        "optimizer_state": sorted(optimizer_state),
        "random_state": _random.get_state(),
    }
    if "layer_build_configs" in model_entry:
        _check_rebuilds(model, config, path, weight_info)
    config_bytes = json.dumps(config, indent=1).encode("utf-8")

    def write(file):
        with zipfile.ZipFile(file, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            write_member(archive, CONFIG_NAME, config_bytes)
            for i, array in enumerate(weights):
                write_member(archive, f"weights/{i:05d}.npy", array_bytes(array))
            for key in sorted(optimizer_state):
                write_member(archive, f"optimizer/{key}.npy", array_bytes(optimizer_state[key]))

    atomic_write(path, write)


def _check_rebuilds(model, config, path, weight_info):
    """Before writing a model that is not built as a whole: rebuild it from ``config`` as the
    loader will and refuse to save when that does not give back every weight."""
    try:
        rebuilt = build_model(json.loads(json.dumps(config)), path, None)
    except ModelFileError:
        return      # e.g. a custom class the loader will get through custom_objects
    shapes = [tuple(w.shape) for w in rebuilt.weights]
    if shapes != [tuple(entry["shape"]) for entry in weight_info]:
        unbuilt = [f"{i} ({type(layer).__name__})" for i, layer in enumerate(model.layers)
                   if layer.weights and layer.get_build_config() is None]
        raise ValueError(
            f"Cannot save model '{model.name}' to {path!r}: it is not built, and its layers' "
            f"weights ({len(weight_info)}) cannot be rebuilt from the file (the loader would get "
            f"{len(shapes)}{'; layers without a recorded build: ' + ', '.join(unbuilt) if unbuilt else ''}). "
            f"Build the model first: call it on a batch (`model(x)`), call "
            f"`model.build(input_shape)`, or start it with `mn.Input(shape)`. Nothing was written.")


def load_model(path, custom_objects=None, compile=True, restore_random_state=True):
    """Load a model saved with ``model.save(path)``.

    Every value in the file goes through the checks its constructor applies; sizes are
    checked against the archive and against ``MAX_LOAD_BYTES``/``MAX_PARAMETERS`` before
    anything is allocated. Files of format version 1 (written before minnet took Keras's
    meanings) load with their meanings translated: image layers get
    ``data_format="channels_first"`` and BatchNormalization's momentum becomes ``1 - momentum``.

    Args:
        path: the file written by ``save`` (str, bytes or os.PathLike).
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
        ModelFileError (a ValueError): not a minnet model file (a Keras ``.keras``/``.h5``
            file is named as such), truncated, corrupted, or a value no constructor accepts.
    """
    path = fspath(path)
    if custom_objects is not None and not isinstance(custom_objects, dict):
        raise TypeError(f"Invalid value for argument `custom_objects`: expected a dict or None. "
                        f"Received: custom_objects={short_repr(custom_objects)}")
    if keras_format.is_keras_file(path):
        return keras_format.load_keras(path, custom_objects=custom_objects, compile=compile)
    with open_archive(path, "model") as archive:
        config = read_config(archive, path)
        weight_info = config["weights"]
        weight_names = [f"weights/{i:05d}.npy" for i in range(len(weight_info))]
        state_keys = config.get("optimizer_state", [])
        state_names = [f"optimizer/{key}.npy" for key in state_keys]
        # Headers and budget first: nothing the file declares is allocated before this.
        headers = [read_header(archive, name, path) for name in weight_names + state_names]
        declared = sum(h.nbytes for h in headers)
        if declared > MAX_LOAD_BYTES:
            raise ModelFileError(f"{path!r}: its arrays hold {declared} bytes, more than "
                                 f"minnet.saving.MAX_LOAD_BYTES={MAX_LOAD_BYTES}: refused before "
                                 f"reading them (raise the limit to load it on purpose).")
        for i, (header, entry) in enumerate(zip(headers, weight_info)):
            if list(header.shape) != list(entry["shape"]):
                raise ModelFileError(f"{path!r} is damaged: weight {i} has shape {header.shape}, "
                                     f"the config says {tuple(entry['shape'])}.")
        model = build_model(config, path, custom_objects)
        expected = [tuple(w.shape) for w in model.weights]
        if len(expected) != len(weight_info):
            raise ModelFileError(f"{path!r}: the rebuilt model has {len(expected)} weights but the "
                                 f"file holds {len(weight_info)} (was the model built when it was "
                                 f"saved?).")
        for i, (shape, header) in enumerate(zip(expected, headers)):
            if shape != header.shape:
                raise ModelFileError(f"{path!r}: weight {i} ({model.weights[i].name}) has shape "
                                     f"{header.shape} in the file but the architecture in its "
                                     f"config gives {shape}.")
        arrays = [read_data(archive, h, path) for h in headers]
    weights, state_arrays = arrays[:len(weight_names)], arrays[len(weight_names):]
    try:
        model.set_weights(weights)
    except CONFIG_ERRORS as error:
        raise file_error(path, "weights", f"{type(error).__name__}: {clip_text(str(error), 300)}") \
            from None
    optimizer_state = dict(zip(state_keys, state_arrays))

    compile_config = config.get("compile")
    if compile and compile_config:
        build_compile(model, compile_config, optimizer_state, path, custom_objects)
    if restore_random_state and config.get("random_state") is not None:
        _restore_random_state(config["random_state"], path)
    return model


def _restore_random_state(state, path):
    """Check the config's ``random_state`` entry completely, then restore it (all or nothing)."""
    def damaged(why):
        shown = repr(state)
        shown = shown if len(shown) <= 200 else shown[:200] + "..."
        return ModelFileError(f"{path!r} is damaged: the {CONFIG_NAME} entry 'random_state' "
                              f"{why}. Received: random_state={shown}")

    problem = _random.state_problem(state)
    if problem is not None:
        raise damaged(problem)
    _random.set_state(state)


# ---------------------------------------------------------------------------------------
# Weights only
# ---------------------------------------------------------------------------------------

def save_weights(model, path):
    """Write ``model.get_weights()`` to an ``.npz`` file at ``path`` (atomically); a name
    ending in ``.weights.h5`` writes Keras 3's weights file instead (Keras reads it).

    The file also records the shape the model was built with, so ``load_weights`` can
    build an unbuilt model of the same architecture first.
    """
    path = fspath(path)
    if path.lower().endswith(".weights.h5"):       # Keras 3's weights file (needs h5py)
        keras_format.save_keras_weights(model, path)
        return
    refuse_foreign_suffix(path, "weights file", "'net.weights.npz' (or Keras's 'net.weights.h5')")
    arrays = {f"weight_{i:05d}": a for i, a in enumerate(model.get_weights())}
    arrays[_WEIGHTS_MARKER] = np.array(WEIGHTS_FORMAT_VERSION)
    shape = model._build_input_shape
    if shape is not None:
        arrays[_INPUT_SHAPE_KEY] = np.array([-1 if s is None else int(s) for s in shape], dtype=np.int64)
    atomic_write(path, lambda file: np.savez(file, **arrays))


def _weights_from_model_file(archive, path):
    config = read_config(archive, path)
    names = [f"weights/{i:05d}.npy" for i in range(len(config["weights"]))]
    arrays = read_arrays(archive, names, path)
    check_weights(arrays, config["weights"], path)
    model_config = config["model"].get("config")
    build_shape = model_config.get("build_input_shape") if isinstance(model_config, dict) else None
    return arrays, _build_shape(build_shape, path)


def _build_shape(shape, path):
    if shape is None:
        return None
    if not isinstance(shape, list) or not shape or not all(
            s is None or (isinstance(s, int) and not isinstance(s, bool) and 0 < s <= MAX_DIMENSION)
            for s in shape[1:]):
        raise file_error(path, "the recorded input shape",
                          f"expected a list of sizes in [1, {MAX_DIMENSION}] after the batch size, "
                          f"found {short_repr(shape)}")
    return (None,) + tuple(shape[1:])


def load_weights(model, path):
    """Copy the weights stored in ``path`` (``save_weights`` or ``save`` output) into ``model``.

    Raises:
        FileNotFoundError: nothing at ``path``.
        ModelFileError (a ValueError): not a minnet weights file, damaged, or weights whose
            count or shapes do not match the model.
    """
    path = fspath(path)
    if path.lower().endswith(".weights.h5"):
        keras_format.load_keras_weights(model, path)
        return
    with open_archive(path, "weights") as archive:
        names = archive.namelist()
        if CONFIG_NAME in names:
            arrays, build_shape = _weights_from_model_file(archive, path)
        else:
            marker = _WEIGHTS_MARKER + ".npy"
            if marker not in names:
                raise ModelFileError(f"{path!r} is not a minnet weights file (no {_WEIGHTS_MARKER} "
                                     f"entry).")
            version = read_array(archive, marker, path)
            if version.shape != () or version.dtype.kind not in "iu" or \
                    not 1 <= int(version) <= WEIGHTS_FORMAT_VERSION:
                raise ModelFileError(f"{path!r} uses weights format version {version!r}; this minnet "
                                     f"reads version {WEIGHTS_FORMAT_VERSION}.")
            keys = sorted(n[:-4] for n in names if n.startswith("weight_") and n.endswith(".npy"))
            if keys != [f"weight_{i:05d}" for i in range(len(keys))]:
                raise ModelFileError(f"{path!r} is damaged: weight entries are not numbered "
                                     f"0..{len(keys) - 1}.")
            build_shape = None
            if _INPUT_SHAPE_KEY + ".npy" in names:
                raw = read_array(archive, _INPUT_SHAPE_KEY + ".npy", path)
                if raw.ndim != 1 or raw.dtype.kind not in "iu" or raw.size > 16:
                    raise file_error(path, _INPUT_SHAPE_KEY, f"expected a short vector of ints, "
                                                              f"found {raw.dtype} {raw.shape}")
                build_shape = _build_shape([None if s < 0 else int(s) for s in raw.tolist()], path)
            if model.built:
                _match_model(model, [read_header(archive, key + ".npy", path).shape
                                     for key in keys], path)
            arrays = read_arrays(archive, [key + ".npy" for key in keys], path)
    if not model.built:
        if build_shape is None:
            raise ValueError(f"Model '{model.name}' is not built and {path!r} does not record an "
                             f"input shape: call `model.build(input_shape)` before `load_weights`.")
        model.build(build_shape)
    _match_model(model, [a.shape for a in arrays], path)
    model.set_weights(arrays)


def _match_model(model, received, path):
    """Raise a ModelFileError unless the weight shapes ``received`` fit ``model``."""
    expected = [tuple(w.shape) for w in model.weights]
    if len(expected) != len(received):
        raise ModelFileError(f"{path!r} holds {len(received)} weight arrays but model '{model.name}' "
                             f"has {len(expected)} (shapes {expected}).")
    for i, (e, r) in enumerate(zip(expected, received)):
        if e != r:
            raise ModelFileError(f"{path!r}: weight {i} has shape {r} but model '{model.name}' expects "
                                 f"{e}.")
