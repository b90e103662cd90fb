"""The file level of minnet's model and weights files: format constants, ``ModelFileError``,
atomic writes of a zip archive, and bounded, validated reading (entry sizes, ``.npy``
headers, ``config.json``) with the translation of format-version-1 configs.

The limits it enforces are ``minnet.saving``'s settings (``minnet.saving.MAX_LOAD_BYTES``,
...), looked up there at each call so that raising them takes effect.
"""
import hashlib
import inspect
import io
import json
import math
import os
import re
import struct
import tempfile
import time
import warnings
import zipfile
import zlib

import numpy as np

import minnet.saving
from minnet._version import __version__
from minnet import layers as layers_module

FORMAT_NAME = "minnet-model"
FORMAT_VERSION = 2   # 2: Keras meanings (data_format, BatchNormalization momentum)
WEIGHTS_FORMAT_VERSION = 1
CONFIG_NAME = "config.json"


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
# ``.keras`` is a real Keras 3 file, written and read by ``minnet.saving.keras_format``;
# minnet's own format is ``.minnet``.
_FOREIGN_SUFFIXES = {".h5": "HDF5", ".hdf5": "HDF5"}


def fspath(path, name="filepath"):
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


def refuse_foreign_suffix(path, what, suggestion):
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


def atomic_write(path, write):
    """Call ``write(file)`` on a temporary file beside ``path``, then move it over ``path``."""
    path = fspath(path)
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


def array_bytes(array):
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, np.asarray(array), allow_pickle=False)
    return buffer.getvalue()


def write_member(archive, name, data):
    archive.writestr(name, data)


# Reading: every failure is a ModelFileError naming the path and the part
# ---------------------------------------------------------------------------------------


_RATIO_FLOOR_BYTES = 2**20
_NUMERIC_KINDS = "biufc"
_HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"

# What zipfile/zlib/np.load raise on a damaged archive: a bad header, a CRC mismatch, a
# flipped compression-method byte (NotImplementedError), a truncated stream, a bad .npy.
_DAMAGE_ERRORS = (zipfile.BadZipFile, zlib.error, NotImplementedError, EOFError, ValueError,
                  struct.error, OverflowError, MemoryError, KeyError, TypeError, SyntaxError,
                  RecursionError)
# What a constructor or ``from_config`` raises on a bad value read from a file.
CONFIG_ERRORS = (TypeError, ValueError, KeyError, IndexError, AttributeError, OverflowError,
                  MemoryError, RecursionError, ZeroDivisionError)


def short_repr(value, limit=120):
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def clip_text(text, limit=120):
    return text if len(text) <= limit else text[:limit] + "..."


def file_error(path, part, why):
    return ModelFileError(f"{path!r}: {part}: {why}")


def _foreign_kind(path):
    """What a file that is not minnet's is, when it is recognisable (HDF5, Keras zip)."""
    try:
        with open(path, "rb") as file:
            head = file.read(8)
    except OSError:
        return None
    if len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5:     # pickle protocol 2-5
        return ("a Python pickle (PyTorch's legacy `torch.save` format, or another pickle). "
                + _TORCH_FILE_ADVICE)
    if head == _HDF5_SIGNATURE:
        return ("an HDF5 file (Keras's legacy `.h5` format, or another HDF5 file). minnet does "
                "not read HDF5: it reads the `.minnet` files that `model.save('net.minnet')` "
                "writes and the `.npz` files of `model.save_weights`. To bring Keras weights over, "
                "rebuild the architecture in minnet and copy the arrays with `model.set_weights` "
                "(Dense and Conv2D kernels transposed to minnet's PyTorch layouts)")
    return None


_TORCH_FILE_ADVICE = (
    "minnet never unpickles a file (a pickle can run any code). Load it with `torch.load` in "
    "PyTorch, then bring the weights over with `minnet.interop.load_torch_state_dict(model, "
    "module.state_dict())` or a whole module with `minnet.interop.from_torch(module)` "
    "(docs/moving_to_pytorch.md shows both)")

_KERAS_ZIP_MESSAGE = (
    "a Keras 3 `.keras` file (a zip of config.json and model.weights.h5). `mn.models.load_model` "
    "reads a complete one (with h5py installed); `load_weights` reads minnet's weight files and "
    "the `.minnet` files that `model.save('net.minnet')` writes")


def open_archive(path, what):
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
    if any(name == "data.pkl" or name.endswith("/data.pkl") for name in names):
        archive.close()
        raise ModelFileError(f"{path!r} is not a minnet {what} file: it is a PyTorch file "
                             f"(`torch.save`'s zip format). {_TORCH_FILE_ADVICE}.")
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
            info.file_size > minnet.saving.MAX_COMPRESSION_RATIO * max(info.compress_size, 1):
        raise ModelFileError(
            f"{path!r}: entry {info.filename!r}: declares {info.file_size} bytes stored in "
            f"{info.compress_size} (more than {minnet.saving.MAX_COMPRESSION_RATIO}x compression): refused "
            f"before reading it (a zip bomb, or raise minnet.saving.MAX_COMPRESSION_RATIO).")


class _ArrayHeader:
    """An .npy entry's header, read and checked without reading its data."""

    def __init__(self, info, shape, dtype, fortran, offset):
        self.info, self.shape, self.dtype, self.fortran, self.offset = \
            info, shape, dtype, fortran, offset
        self.nbytes = math.prod(shape) * dtype.itemsize


def read_header(archive, name, path):
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


def read_data(archive, header, path, chunk=2**22):
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


def read_arrays(archive, names, path):
    """Read the entries ``names`` after checking every header and the total budget."""
    headers = [read_header(archive, name, path) for name in names]
    total = sum(h.nbytes for h in headers)
    if total > minnet.saving.MAX_LOAD_BYTES:
        raise ModelFileError(f"{path!r}: its arrays hold {total} bytes, more than "
                             f"minnet.saving.MAX_LOAD_BYTES={minnet.saving.MAX_LOAD_BYTES}: refused before "
                             f"reading them (raise the limit to load it on purpose).")
    return [read_data(archive, h, path) for h in headers]


def read_array(archive, name, path):
    return read_arrays(archive, [name], path)[0]


def _depth(value):
    """Nesting depth of a JSON value, without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        deepest = max(deepest, level)
        if level > minnet.saving.MAX_CONFIG_DEPTH:
            return level
        if isinstance(item, dict):
            stack.extend((v, level + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, level + 1) for v in item)
    return deepest


def read_config(archive, path):
    try:
        info = archive.getinfo(CONFIG_NAME)
    except KeyError:
        raise ModelFileError(f"{path!r} is not a minnet model file (it has no {CONFIG_NAME}; for "
                             f"a weights file use `model.load_weights`).") from None
    if info.file_size > minnet.saving.MAX_CONFIG_BYTES:
        raise ModelFileError(f"{path!r}: {CONFIG_NAME}: declares {info.file_size} bytes, more "
                             f"than minnet.saving.MAX_CONFIG_BYTES={minnet.saving.MAX_CONFIG_BYTES}.")
    try:
        raw = archive.read(info)
    except (OSError, *_DAMAGE_ERRORS) as error:
        raise ModelFileError(f"{path!r} is damaged: could not read {CONFIG_NAME} "
                             f"({type(error).__name__}: {error}).") from None
    try:
        config = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError, ValueError) as error:
        raise ModelFileError(f"{path!r} is damaged: {CONFIG_NAME} is not valid JSON "
                             f"({type(error).__name__}: {clip_text(str(error))}).") from None
    if _depth(config) > minnet.saving.MAX_CONFIG_DEPTH:
        raise ModelFileError(f"{path!r}: {CONFIG_NAME} is nested more than {minnet.saving.MAX_CONFIG_DEPTH} "
                             f"levels deep; minnet never writes such a file.")
    if not isinstance(config, dict) or config.get("format") != FORMAT_NAME:
        if isinstance(config, dict) and "class_name" in config and "module" in config:
            raise ModelFileError(f"{path!r} is not a minnet model file: it is {_KERAS_ZIP_MESSAGE}.")
        raise ModelFileError(f"{path!r} is not a minnet model file (its {CONFIG_NAME} does not "
                             f"declare format {FORMAT_NAME!r}).")
    version = config.get("format_version")
    if isinstance(version, bool) or not isinstance(version, int) or version > FORMAT_VERSION \
            or version < 1:
        raise ModelFileError(f"{path!r} uses model file format version {short_repr(version)}; this "
                             f"minnet reads versions 1 to {FORMAT_VERSION}. Upgrade minnet to "
                             f"load it.")
    for key, kind in (("model", dict), ("weights", list)):
        if key not in config:
            raise ModelFileError(f"{path!r} is damaged: {CONFIG_NAME} has no {key!r} entry.")
        if not isinstance(config[key], kind):
            raise file_error(path, f"{CONFIG_NAME} entry {key!r}",
                              f"expected a {kind.__name__}, found {short_repr(config[key])}")
    for i, entry in enumerate(config["weights"]):
        shape = entry.get("shape") if isinstance(entry, dict) else None
        if not isinstance(shape, list) or not all(
                isinstance(s, int) and not isinstance(s, bool) and 0 <= s <= 2**62
                for s in shape):
            raise file_error(path, f"{CONFIG_NAME} entry 'weights'[{i}]",
                              f"expected a dict with a 'shape' list of ints >= 0, found "
                              f"{short_repr(entry)}")
    keys = config.get("optimizer_state", [])
    if not isinstance(keys, list) or not all(isinstance(k, str) and k and "/" not in k
                                             for k in keys):
        raise file_error(path, f"{CONFIG_NAME} entry 'optimizer_state'",
                          f"expected a list of names, found {short_repr(keys)}")
    if not isinstance(config.get("compile"), (dict, type(None))):
        raise file_error(path, f"{CONFIG_NAME} entry 'compile'",
                          f"expected a dict or null, found {short_repr(config.get('compile'))}")
    _warn_if_newer(config.get("minnet_version"), path)
    if version < FORMAT_VERSION:
        _upgrade_config(config, version, path)
    return config


def _version_tuple(text):
    match = re.match(r"^(\d+)\.(\d+)(?:\.(\d+))?", text) if isinstance(text, str) else None
    return tuple(int(part or 0) for part in match.groups()) if match else None


def _warn_if_newer(written_by, path):
    """Warn once per load when a newer minnet wrote the file (same format, so it loads)."""
    theirs, ours = _version_tuple(written_by), _version_tuple(__version__)
    if theirs is not None and ours is not None and theirs > ours:
        warnings.warn(f"{path!r} was written by minnet {written_by}, newer than this minnet "
                      f"({__version__}). Its file format is one this version reads, so it loads; "
                      f"a layer or argument added after {__version__} would be refused. To be "
                      f"sure, upgrade: `pip install -U minnet-dl`.", UserWarning, stacklevel=3)


def check_weights(arrays, info, path):
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
