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
"""
import hashlib
import inspect
import io
import json
import math
import os
import struct
import tempfile
import time
import zipfile
import warnings
import zlib

import numpy as np

from minnet import _random, _registry
from minnet._version import __version__
from minnet import layers as layers_module
from minnet import losses, metrics, optimizers
from minnet.layers import serialize as serialize_layer

__all__ = ["save_model", "load_model", "save_weights", "load_weights", "ModelFileError"]

FORMAT_NAME = "minnet-model"
FORMAT_VERSION = 2   # 2: Keras meanings (data_format, BatchNormalization momentum)
WEIGHTS_FORMAT_VERSION = 1
_CONFIG_NAME = "config.json"
_WEIGHTS_MARKER = "__minnet_weights_format__"
_INPUT_SHAPE_KEY = "__input_shape__"


class ModelFileError(ValueError):
    """A file is not a (readable) minnet model or weights file: foreign, truncated or corrupted."""


# ---------------------------------------------------------------------------------------
# Paths and atomic writes
# ---------------------------------------------------------------------------------------

# A temporary file is ``.minnet-<16 hex digits of the target's name hash>-<pid>-<random>.tmp``
# in the target's directory: short whatever the target's name (a 250-character name is
# legal, the name plus a suffix may not be), and findable again from the target's name, so
# the next save to the same place removes what a killed save left behind.
_TEMP_PREFIX = ".minnet-"
_TEMP_SUFFIX = ".tmp"
# A temporary file whose process is gone, or older than this, is a leftover.
_TEMP_STALE_SECONDS = 3600
# Names minnet refuses to write under: they promise a format minnet does not write.
# ``.keras`` is accepted for whole models: Keras 3 tutorials must save under that suffix, and
# minnet's file is a zip as Keras's is (its contents are minnet's: JSON + .npy, no HDF5);
# loading a real Keras ``.keras`` file is recognised and named (``_foreign_format``).
_FOREIGN_SUFFIXES = {".h5": "HDF5", ".hdf5": "HDF5"}


def _fspath(path, name="filepath"):
    """``path`` (str, bytes or os.PathLike) as a str; a TypeError naming ``name`` otherwise."""
    try:
        path = os.fspath(path)
    except TypeError:
        raise TypeError(f"Invalid value for argument `{name}`: expected a str, bytes or "
                        f"os.PathLike file path. Received: {name}={path!r}") from None
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if not path:
        raise ValueError(f"Invalid value for argument `{name}`: expected a file path. "
                         f"Received: {name}={path!r}")
    if "\x00" in path:
        raise ValueError(f"Invalid value for argument `{name}`: a file path cannot contain a NUL "
                         f"character. Received: {name}={path!r}")
    return path


def _refuse_foreign_suffix(path, what, suggestion):
    lowered = path.lower()
    for suffix, kind in _FOREIGN_SUFFIXES.items():
        if lowered.endswith(suffix):
            raise ValueError(
                f"Invalid value for argument `filepath`: minnet does not write {kind} files, and "
                f"a {what} saved under the name {path!r} would not be one. minnet writes its own "
                f"format (a zip of JSON and .npy arrays, no pickle): use a name like "
                f"{suggestion}. Received: filepath={path!r}")


def _temp_tag(path):
    digest = hashlib.sha256(os.path.basename(path).encode("utf-8", "surrogateescape")).hexdigest()
    return _TEMP_PREFIX + digest[:16] + "-"


def _process_alive(pid):
    if pid == os.getpid():
        return True
    if os.name == "nt":
        # os.kill(pid, 0) terminates the process on Windows: rely on the age alone there.
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


def _remove_stale_temps(directory, tag):
    """Remove the temporary files a killed save to the same target left in ``directory``."""
    try:
        names = os.listdir(directory)
    except OSError:
        return
    now = time.time()
    for name in names:
        if not (name.startswith(tag) and name.endswith(_TEMP_SUFFIX)):
            continue
        parts = name[len(tag):-len(_TEMP_SUFFIX)].split("-")
        full = os.path.join(directory, name)
        try:
            pid = int(parts[0])
            stale = not _process_alive(pid) or now - os.stat(full).st_mtime > _TEMP_STALE_SECONDS
        except (ValueError, IndexError, OSError):
            stale = False
        if stale:
            try:
                os.unlink(full)
            except OSError:
                pass


def _current_umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _atomic_write(path, write):
    """Call ``write(file)`` on a temporary file beside ``path``, then move it over ``path``."""
    path = _fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"Cannot save to {path!r}: the directory {directory!r} does not exist.")
    if os.path.isdir(path):
        raise IsADirectoryError(f"Cannot save to {path!r}: it is a directory.")
    tag = _temp_tag(path)
    _remove_stale_temps(directory, tag)
    fd, temp_path = tempfile.mkstemp(prefix=f"{tag}{os.getpid()}-", suffix=_TEMP_SUFFIX,
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
    path = _fspath(path)
    _refuse_foreign_suffix(path, "model", "'net.minnet'")
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


# ---------------------------------------------------------------------------------------
# Reading: every failure is a ModelFileError naming the path and the part
# ---------------------------------------------------------------------------------------

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
_RATIO_FLOOR_BYTES = 2**20
_NUMERIC_KINDS = "biufc"
_HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"

# What zipfile/zlib/np.load raise on a damaged archive: a bad header, a CRC mismatch, a
# flipped compression-method byte (NotImplementedError), a truncated stream, a bad .npy.
_DAMAGE_ERRORS = (zipfile.BadZipFile, zlib.error, NotImplementedError, EOFError, ValueError,
                  struct.error, OverflowError, MemoryError, KeyError, TypeError, SyntaxError,
                  RecursionError)
# What a constructor or ``from_config`` raises on a bad value read from a file.
_CONFIG_ERRORS = (TypeError, ValueError, KeyError, IndexError, AttributeError, OverflowError,
                  MemoryError, RecursionError, ZeroDivisionError)


def _short(value, limit=120):
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def _clip(text, limit=120):
    return text if len(text) <= limit else text[:limit] + "..."


def _file_error(path, part, why):
    return ModelFileError(f"{path!r}: {part}: {why}")


def _foreign_kind(path):
    """What a file that is not minnet's is, when it is recognisable (HDF5, Keras zip)."""
    try:
        with open(path, "rb") as file:
            head = file.read(8)
    except OSError:
        return None
    if head == _HDF5_SIGNATURE:
        return ("an HDF5 file (Keras's legacy `.h5` format, or another HDF5 file). minnet does "
                "not read HDF5: it reads the `.minnet` files that `model.save('net.minnet')` "
                "writes and the `.npz` files of `model.save_weights`. To bring Keras weights over, "
                "rebuild the architecture in minnet and copy the arrays with `model.set_weights` "
                "(Dense and Conv2D kernels transposed to minnet's PyTorch layouts)")
    return None


_KERAS_ZIP_MESSAGE = (
    "a Keras 3 `.keras` file (a zip of config.json and model.weights.h5). minnet does not read "
    "Keras files: it reads the `.minnet` files that `model.save('net.minnet')` writes. To bring "
    "a Keras model over, rebuild the architecture in minnet and copy the arrays with "
    "`model.set_weights` (Dense and Conv2D kernels transposed to minnet's PyTorch layouts)")


def _open_archive(path, what):
    if not os.path.exists(path):
        raise FileNotFoundError(f"No {what} file found at {path!r}.")
    if os.path.isdir(path):
        raise IsADirectoryError(f"Expected a {what} file at {path!r}, found a directory.")
    kind = _foreign_kind(path)
    if kind is not None:
        raise ModelFileError(f"{path!r} is not a minnet {what} file: it is {kind}.")
    try:
        archive = zipfile.ZipFile(path, "r")
    except (OSError, *_DAMAGE_ERRORS) as error:
        raise ModelFileError(f"{path!r} is not a minnet {what} file (not a zip archive, or "
                             f"truncated: {type(error).__name__}: {error}).") from None
    try:
        names = set(archive.namelist())
    except (OSError, *_DAMAGE_ERRORS) as error:
        archive.close()
        raise ModelFileError(f"{path!r} is damaged: its zip directory is unreadable "
                             f"({type(error).__name__}: {error}).") from None
    if "model.weights.h5" in names:
        archive.close()
        raise ModelFileError(f"{path!r} is not a minnet {what} file: it is {_KERAS_ZIP_MESSAGE}.")
    return archive


def _entry_info(archive, name, path):
    try:
        return archive.getinfo(name)
    except KeyError:
        raise ModelFileError(f"{path!r} is damaged: the entry {name!r} is missing.") from None


def _check_entry_size(info, path):
    """Refuse an entry whose inflated size is out of proportion to its stored size."""
    if info.file_size > _RATIO_FLOOR_BYTES and \
            info.file_size > MAX_COMPRESSION_RATIO * max(info.compress_size, 1):
        raise ModelFileError(
            f"{path!r}: entry {info.filename!r}: declares {info.file_size} bytes stored in "
            f"{info.compress_size} (more than {MAX_COMPRESSION_RATIO}x compression): refused "
            f"before reading it (a zip bomb, or raise minnet.saving.MAX_COMPRESSION_RATIO).")


class _ArrayHeader:
    """An .npy entry's header, read and checked without reading its data."""

    def __init__(self, info, shape, dtype, fortran, offset):
        self.info, self.shape, self.dtype, self.fortran, self.offset = \
            info, shape, dtype, fortran, offset
        self.nbytes = math.prod(shape) * dtype.itemsize


def _read_header(archive, name, path):
    info = _entry_info(archive, name, path)
    _check_entry_size(info, path)
    try:
        with archive.open(info) as member:
            version = np.lib.format.read_magic(member)
            if version == (1, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_1_0(member)
            elif version in ((2, 0), (3, 0)):
                shape, fortran, dtype = np.lib.format.read_array_header_2_0(member)
            else:
                raise ValueError(f"unsupported .npy version {version}")
            offset = member.tell()
    except (OSError, *_DAMAGE_ERRORS) as error:
        raise ModelFileError(f"{path!r} is damaged: entry {name!r} has no valid .npy header "
                             f"({type(error).__name__}: {error}).") from None
    if dtype.hasobject or dtype.kind not in _NUMERIC_KINDS or dtype.itemsize == 0:
        raise ModelFileError(f"{path!r}: entry {name!r} holds dtype {dtype}; minnet files hold "
                             f"numeric arrays only (object arrays are never unpickled).")
    if not all(isinstance(s, int) and 0 <= s for s in shape):
        raise ModelFileError(f"{path!r}: entry {name!r} declares an invalid shape {shape!r}.")
    header = _ArrayHeader(info, tuple(shape), dtype, fortran, offset)
    if offset + header.nbytes != info.file_size:
        raise ModelFileError(
            f"{path!r} is damaged: entry {name!r} declares shape {header.shape} of {dtype} "
            f"({header.nbytes} bytes) but holds {info.file_size - offset} bytes of data.")
    return header


def _read_data(archive, header, path, chunk=2**22):
    """The array of a checked header: one allocation, filled in chunks."""
    buffer = np.empty(header.nbytes, dtype=np.uint8)
    try:
        with archive.open(header.info) as member:
            member.read(header.offset)
            view = memoryview(buffer)
            done = 0
            while done < header.nbytes:
                data = member.read(min(chunk, header.nbytes - done))
                if not data:
                    raise EOFError("the entry ends early")
                view[done:done + len(data)] = data
                done += len(data)
            if member.read(1):
                raise ValueError("the entry holds more data than its header declares")
    except (OSError, *_DAMAGE_ERRORS) as error:
        raise ModelFileError(f"{path!r} is damaged: could not read {header.info.filename!r} "
                             f"({type(error).__name__}: {error}).") from None
    array = buffer.view(header.dtype)
    return array.reshape(header.shape, order="F" if header.fortran else "C")


def _read_arrays(archive, names, path):
    """Read the entries ``names`` after checking every header and the total budget."""
    headers = [_read_header(archive, name, path) for name in names]
    total = sum(h.nbytes for h in headers)
    if total > MAX_LOAD_BYTES:
        raise ModelFileError(f"{path!r}: its arrays hold {total} bytes, more than "
                             f"minnet.saving.MAX_LOAD_BYTES={MAX_LOAD_BYTES}: refused before "
                             f"reading them (raise the limit to load it on purpose).")
    return [_read_data(archive, h, path) for h in headers]


def _read_array(archive, name, path):
    return _read_arrays(archive, [name], path)[0]


def _depth(value):
    """Nesting depth of a JSON value, without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        deepest = max(deepest, level)
        if level > MAX_CONFIG_DEPTH:
            return level
        if isinstance(item, dict):
            stack.extend((v, level + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, level + 1) for v in item)
    return deepest


def _read_config(archive, path):
    try:
        info = archive.getinfo(_CONFIG_NAME)
    except KeyError:
        raise ModelFileError(f"{path!r} is not a minnet model file (it has no {_CONFIG_NAME}; for "
                             f"a weights file use `model.load_weights`).") from None
    if info.file_size > MAX_CONFIG_BYTES:
        raise ModelFileError(f"{path!r}: {_CONFIG_NAME}: declares {info.file_size} bytes, more "
                             f"than minnet.saving.MAX_CONFIG_BYTES={MAX_CONFIG_BYTES}.")
    try:
        raw = archive.read(info)
    except (OSError, *_DAMAGE_ERRORS) as error:
        raise ModelFileError(f"{path!r} is damaged: could not read {_CONFIG_NAME} "
                             f"({type(error).__name__}: {error}).") from None
    try:
        config = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError, ValueError) as error:
        raise ModelFileError(f"{path!r} is damaged: {_CONFIG_NAME} is not valid JSON "
                             f"({type(error).__name__}: {_clip(str(error))}).") from None
    if _depth(config) > MAX_CONFIG_DEPTH:
        raise ModelFileError(f"{path!r}: {_CONFIG_NAME} is nested more than {MAX_CONFIG_DEPTH} "
                             f"levels deep; minnet never writes such a file.")
    if not isinstance(config, dict) or config.get("format") != FORMAT_NAME:
        if isinstance(config, dict) and "class_name" in config and "module" in config:
            raise ModelFileError(f"{path!r} is not a minnet model file: it is {_KERAS_ZIP_MESSAGE}.")
        raise ModelFileError(f"{path!r} is not a minnet model file (its {_CONFIG_NAME} does not "
                             f"declare format {FORMAT_NAME!r}).")
    version = config.get("format_version")
    if isinstance(version, bool) or not isinstance(version, int) or version > FORMAT_VERSION \
            or version < 1:
        raise ModelFileError(f"{path!r} uses model file format version {_short(version)}; this "
                             f"minnet reads versions 1 to {FORMAT_VERSION}. Upgrade minnet to "
                             f"load it.")
    for key, kind in (("model", dict), ("weights", list)):
        if key not in config:
            raise ModelFileError(f"{path!r} is damaged: {_CONFIG_NAME} has no {key!r} entry.")
        if not isinstance(config[key], kind):
            raise _file_error(path, f"{_CONFIG_NAME} entry {key!r}",
                              f"expected a {kind.__name__}, found {_short(config[key])}")
    for i, entry in enumerate(config["weights"]):
        shape = entry.get("shape") if isinstance(entry, dict) else None
        if not isinstance(shape, list) or not all(
                isinstance(s, int) and not isinstance(s, bool) and 0 <= s <= 2**62
                for s in shape):
            raise _file_error(path, f"{_CONFIG_NAME} entry 'weights'[{i}]",
                              f"expected a dict with a 'shape' list of ints >= 0, found "
                              f"{_short(entry)}")
    keys = config.get("optimizer_state", [])
    if not isinstance(keys, list) or not all(isinstance(k, str) and k and "/" not in k
                                             for k in keys):
        raise _file_error(path, f"{_CONFIG_NAME} entry 'optimizer_state'",
                          f"expected a list of names, found {_short(keys)}")
    if not isinstance(config.get("compile"), (dict, type(None))):
        raise _file_error(path, f"{_CONFIG_NAME} entry 'compile'",
                          f"expected a dict or null, found {_short(config.get('compile'))}")
    if version < FORMAT_VERSION:
        _upgrade_config(config, version, path)
    return config


def _check_weights(arrays, info, path):
    for i, (array, entry) in enumerate(zip(arrays, info)):
        if list(array.shape) != list(entry["shape"]):
            raise ModelFileError(f"{path!r} is damaged: weight {i} has shape {array.shape}, the "
                                 f"config says {tuple(entry['shape'])}.")


# ---------------------------------------------------------------------------------------
# Format versions
# ---------------------------------------------------------------------------------------

# Version 1 files were written when layers had PyTorch's meanings: image layers read NCHW
# and BatchNormalization's momentum was the weight of the new batch. Version 2 stores
# Keras's meanings. A version-1 config is translated, never reinterpreted.
_V1_IMAGE_LAYERS = {"Conv2D", "Convolution2D", "MaxPooling2D", "MaxPool2D", "AveragePooling2D",
                    "AvgPool2D", "AveragePool2D", "GlobalAveragePooling2D", "GlobalAvgPool2D",
                    "SpatialDropout2D", "Flatten"}


def _accepts(class_name, argument):
    cls = getattr(layers_module, class_name, None)
    if not isinstance(cls, type):
        return None
    try:
        return inspect.signature(cls.__init__).parameters.get(argument)
    except (TypeError, ValueError):
        return None


def _upgrade_config(config, version, path):
    """Translate a version-1 config in place to version 2's meanings."""
    model_config = config["model"].get("config")
    entries = model_config.get("layers") if isinstance(model_config, dict) else None
    if not isinstance(entries, list):
        return
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("config"), dict):
            continue
        name, layer_config = entry.get("class_name"), entry["config"]
        if name in _V1_IMAGE_LAYERS and "data_format" not in layer_config \
                and _accepts(name, "data_format") is not None:
            layer_config["data_format"] = "channels_first"
        if name in ("BatchNormalization", "BatchNorm") and "momentum" in layer_config:
            momentum = layer_config["momentum"]
            parameter = _accepts(name, "momentum")
            # Translate only where this minnet's BatchNormalization takes Keras's meaning
            # (its default is Keras's 0.99; PyTorch's meaning defaults to 0.1).
            keras_meaning = parameter is not None and parameter.default == 0.99
            if keras_meaning and isinstance(momentum, (int, float)) and \
                    not isinstance(momentum, bool):
                layer_config["momentum"] = 1.0 - float(momentum)
    config["format_version"] = FORMAT_VERSION


# ---------------------------------------------------------------------------------------
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
        raise _file_error(path, where, f"expected {{'class_name': str, 'config': dict}}, found "
                                       f"{_short(entry)}")
    name = entry["class_name"]
    for key, value in _size_ints(entry.get("config", {})):
        if not -MAX_DIMENSION <= value <= MAX_DIMENSION:
            raise _file_error(path, f"{where} ({name})",
                              f"{key}={value} is larger than minnet.saving.MAX_DIMENSION="
                              f"{MAX_DIMENSION}; refused before allocating anything")
    try:
        layer = layers_module.deserialize(entry, custom_objects=custom_objects)
    except _CONFIG_ERRORS as error:
        raise _file_error(path, f"{where} ({name})",
                          f"{type(error).__name__}: {_clip(str(error), 400)}") from None
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
        raise _file_error(path, "the model's 'layers'", f"expected a list, found {_short(entries)}")
    built = [(i, entry, _check_layer_entry(entry, f"layer {i}", path, custom_objects))
             for i, entry in enumerate(entries)]
    shape = model_config.get("build_input_shape")
    if shape is None:
        return
    if not isinstance(shape, list) or not shape or not all(
            s is None or (isinstance(s, int) and not isinstance(s, bool)
                          and 0 < s <= MAX_DIMENSION) for s in shape[1:]):
        raise _file_error(path, "the model's 'build_input_shape'",
                          f"expected a list of sizes in [1, {MAX_DIMENSION}] after the batch "
                          f"size, found {_short(shape)}")
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
            raise _file_error(path, where, f"gives the output shape {out_shape}")
        if math.prod(s for s in out_shape[1:] if s) > MAX_PARAMETERS:
            raise _file_error(path, where, f"gives outputs of shape {out_shape}, more than "
                                           f"{MAX_PARAMETERS} values per sample")
        total += _estimate_parameters(layer, entry.get("config", {}), shape, out_shape)
        if total > MAX_PARAMETERS:
            raise _file_error(path, where, f"the architecture would create about {total} "
                                           f"weights, more than minnet.saving.MAX_PARAMETERS="
                                           f"{MAX_PARAMETERS}; refused before allocating them")
        shape = out_shape


def _build_model(config, path, custom_objects):
    """The model a file describes, built through the one registry (saving imports no model
    class: Sequential and Model register themselves, custom models with ``register_layer``)."""
    model_entry = config["model"]
    class_name = model_entry.get("class_name")
    model_config = model_entry.get("config", {})
    if not isinstance(model_config, dict):
        raise _file_error(path, "the model's config", f"expected a dict, found "
                                                      f"{_short(model_config)}")
    try:
        cls = _registry.lookup("layer", class_name, custom_objects) \
            if isinstance(class_name, str) else None
    except ValueError:
        cls = None
    if not isinstance(cls, type):
        raise ModelFileError(f"{path!r}: unknown model class {_short(class_name)}; pass it in "
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
    except _CONFIG_ERRORS as error:
        raise _file_error(path, f"the model ({class_name})",
                          f"{type(error).__name__}: {_clip(str(error), 400)}") from None
    return model


def _build_compile(model, compile_config, optimizer_state, path, custom_objects):
    def convert(part, build):
        try:
            return build()
        except _CONFIG_ERRORS as error:
            raise _file_error(path, part, f"{type(error).__name__}: {_clip(str(error), 400)}") \
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
            raise _file_error(path, "compile.metrics", f"expected a list, found "
                                                       f"{_short(metric_entries)}")
        metric_list = [convert(f"compile.metrics[{i}]", lambda m=m: _deserialize_identifier(
            m, metrics, custom_objects)) for i, m in enumerate(metric_entries)]
    convert("compile", lambda: model.compile(optimizer=optimizer, loss=loss, metrics=metric_list,
                                             loss_weights=compile_config.get("loss_weights")))
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
        except _CONFIG_ERRORS as error:
            raise ModelFileError(f"{path!r} is damaged: its optimizer state does not fit the "
                                 f"saved optimizer ({error}).") from None
        # Hyper-parameters read from the state go through the constructor's checks too.
        convert("optimizer state (hyper-parameters)",
                lambda: type(optimizer).from_config(dict(optimizer.get_config())))


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
    path = _fspath(path)
    if custom_objects is not None and not isinstance(custom_objects, dict):
        raise TypeError(f"Invalid value for argument `custom_objects`: expected a dict or None. "
                        f"Received: custom_objects={_short(custom_objects)}")
    with _open_archive(path, "model") as archive:
        config = _read_config(archive, path)
        weight_info = config["weights"]
        weight_names = [f"weights/{i:05d}.npy" for i in range(len(weight_info))]
        state_keys = config.get("optimizer_state", [])
        state_names = [f"optimizer/{key}.npy" for key in state_keys]
        # Headers and budget first: nothing the file declares is allocated before this.
        headers = [_read_header(archive, name, path) for name in weight_names + state_names]
        declared = sum(h.nbytes for h in headers)
        if declared > MAX_LOAD_BYTES:
            raise ModelFileError(f"{path!r}: its arrays hold {declared} bytes, more than "
                                 f"minnet.saving.MAX_LOAD_BYTES={MAX_LOAD_BYTES}: refused before "
                                 f"reading them (raise the limit to load it on purpose).")
        for i, (header, entry) in enumerate(zip(headers, weight_info)):
            if list(header.shape) != list(entry["shape"]):
                raise ModelFileError(f"{path!r} is damaged: weight {i} has shape {header.shape}, "
                                     f"the config says {tuple(entry['shape'])}.")
        model = _build_model(config, path, custom_objects)
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
        arrays = [_read_data(archive, h, path) for h in headers]
    weights, state_arrays = arrays[:len(weight_names)], arrays[len(weight_names):]
    try:
        model.set_weights(weights)
    except _CONFIG_ERRORS as error:
        raise _file_error(path, "weights", f"{type(error).__name__}: {_clip(str(error), 300)}") \
            from None
    optimizer_state = dict(zip(state_keys, state_arrays))

    compile_config = config.get("compile")
    if compile and compile_config:
        _build_compile(model, compile_config, optimizer_state, path, custom_objects)
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
    path = _fspath(path)
    _refuse_foreign_suffix(path, "weights file", "'net.weights.npz'")
    arrays = {f"weight_{i:05d}": a for i, a in enumerate(model.get_weights())}
    arrays[_WEIGHTS_MARKER] = np.array(WEIGHTS_FORMAT_VERSION)
    shape = model._build_input_shape
    if shape is not None:
        arrays[_INPUT_SHAPE_KEY] = np.array([-1 if s is None else int(s) for s in shape], dtype=np.int64)
    _atomic_write(path, lambda file: np.savez(file, **arrays))


def _weights_from_model_file(archive, path):
    config = _read_config(archive, path)
    names = [f"weights/{i:05d}.npy" for i in range(len(config["weights"]))]
    arrays = _read_arrays(archive, names, path)
    _check_weights(arrays, config["weights"], path)
    model_config = config["model"].get("config")
    build_shape = model_config.get("build_input_shape") if isinstance(model_config, dict) else None
    return arrays, _build_shape(build_shape, path)


def _build_shape(shape, path):
    if shape is None:
        return None
    if not isinstance(shape, list) or not shape or not all(
            s is None or (isinstance(s, int) and not isinstance(s, bool) and 0 < s <= MAX_DIMENSION)
            for s in shape[1:]):
        raise _file_error(path, "the recorded input shape",
                          f"expected a list of sizes in [1, {MAX_DIMENSION}] after the batch size, "
                          f"found {_short(shape)}")
    return (None,) + tuple(shape[1:])


def load_weights(model, path):
    """Copy the weights stored in ``path`` (``save_weights`` or ``save`` output) into ``model``.

    Raises:
        FileNotFoundError: nothing at ``path``.
        ModelFileError (a ValueError): not a minnet weights file, damaged, or weights whose
            count or shapes do not match the model.
    """
    path = _fspath(path)
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
                raw = _read_array(archive, _INPUT_SHAPE_KEY + ".npy", path)
                if raw.ndim != 1 or raw.dtype.kind not in "iu" or raw.size > 16:
                    raise _file_error(path, _INPUT_SHAPE_KEY, f"expected a short vector of ints, "
                                                              f"found {raw.dtype} {raw.shape}")
                build_shape = _build_shape([None if s < 0 else int(s) for s in raw.tolist()], path)
            if model.built:
                _match_model(model, [_read_header(archive, key + ".npy", path).shape
                                     for key in keys], path)
            arrays = _read_arrays(archive, [key + ".npy" for key in keys], path)
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
