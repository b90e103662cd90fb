"""Keras's registration and (de)serialisation functions (``keras.saving``), over minnet's one
registry (``minnet/_registry.py``).

- ``register_keras_serializable(package="Custom", name=None)`` registers a class or function
  as ``"package>name"``; every ``serialize`` then writes that name and every loader
  (``load_model``, ``layers.deserialize``, ``losses.get``, ...) finds it, with no
  ``custom_objects``.
- ``get_custom_objects()`` is the global dict the loaders consult;
  ``custom_object_scope({...})`` adds objects for the length of a ``with`` block.
- ``serialize_keras_object(obj)`` / ``deserialize_keras_object(config)``: Keras's dict form
  ``{"module", "class_name", "config", "registered_name"}`` for objects with a config and
  for functions; plain values, lists and dicts pass through.
- ``get_registered_name(obj)`` / ``get_registered_object(name)``.

Example:
    >>> @mn.saving.register_keras_serializable(package="my_package")
    ... class Scale(mn.layers.Layer): ...
    >>> mn.saving.get_registered_name(Scale)
    'my_package>Scale'
"""
import inspect

import numpy as np

from minnet import _registry
from minnet._registry import CustomObjectScope, custom_object_scope, get_custom_objects

__all__ = ["register_keras_serializable", "get_custom_objects", "custom_object_scope",
           "CustomObjectScope", "serialize_keras_object", "deserialize_keras_object",
           "get_registered_name", "get_registered_object"]


def register_keras_serializable(package="Custom", name=None):
    """Decorator: register a class or function under ``"package>name"`` (Keras's rule).

    Args:
        package: the package part of the name (default ``"Custom"``).
        name: the name part (default: the class or function's ``__name__``).

    Raises:
        ValueError: ``package`` or ``name`` contains ``">"``; a class without ``get_config``.
    """
    if not isinstance(package, str) or ">" in package:
        raise ValueError(f"Invalid value for argument `package`: expected a string without '>'. "
                         f"Received: package={package!r}")

    def decorator(obj):
        serialized = name if name is not None else getattr(obj, "__name__", None)
        if not isinstance(serialized, str) or not serialized or ">" in serialized:
            raise ValueError(f"Invalid value for argument `name`: expected a non-empty string "
                             f"without '>'. Received: name={serialized!r}")
        if inspect.isclass(obj) and not hasattr(obj, "get_config"):
            raise ValueError(f"Cannot register {obj.__name__}: a class registered for "
                             f"serialization must define `get_config()`.")
        return _registry.register_custom_object(obj, f"{package}>{serialized}")

    return decorator


def get_registered_name(obj):
    """The name ``obj`` was registered under (``"package>name"``), else its ``__name__``."""
    for kind in _registry.KINDS:
        name = _registry.registered_name(kind, obj)
        if name is not None and (name == getattr(obj, "__name__", None) or ">" in name
                                 or get_custom_objects().get(name) is obj):
            return name
    return getattr(obj, "__name__", type(obj).__name__)


def get_registered_object(name, custom_objects=None, module_objects=None):
    """The class or function registered as ``name`` (Keras's order: an active
    ``custom_object_scope``, the global custom objects, ``custom_objects``,
    ``module_objects``), else None."""
    found = _registry.custom_object(name)
    if found is not None:
        return found
    for table in (custom_objects, module_objects):
        if table and name in table:
            return table[name]
    return None


def _lookup_any(name, custom_objects):
    """``name`` in custom objects, then in every kind of the registry."""
    found = get_registered_object(name, custom_objects)
    if found is not None:
        return found
    for kind in _registry.KINDS:
        try:
            return _registry.lookup(kind, name)
        except ValueError:
            continue
    raise ValueError(f"Could not locate {name!r}: it is neither a minnet object nor registered. "
                     f"Register it with `@mn.saving.register_keras_serializable()`, add it to "
                     f"`mn.saving.get_custom_objects()`, or pass it in `custom_objects`.")


def serialize_keras_object(obj):
    """Keras's serialised form of ``obj`` (JSON-able).

    Returns:
        ``None``/bools/numbers/strings as they are; lists and dicts element by element; an
        ndarray as ``{"class_name": "__numpy__", ...}``; a function as
        ``{"module", "class_name": "function", "config": name, "registered_name"}``; an
        object with ``get_config`` as ``{"module", "class_name", "config", "registered_name"}``.

    Raises:
        TypeError: an object without ``get_config``.
    """
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if isinstance(obj, (np.integer, np.floating, np.bool_)):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return {"class_name": "__numpy__", "config": {"value": obj.tolist(), "dtype": obj.dtype.name}}
    if isinstance(obj, (list, tuple)):
        return [serialize_keras_object(v) for v in obj]
    if isinstance(obj, dict):
        return {key: serialize_keras_object(value) for key, value in obj.items()}
    if inspect.isfunction(obj) or inspect.isbuiltin(obj):
        name = get_registered_name(obj)
        return {"module": obj.__module__, "class_name": "function", "config": obj.__name__,
                "registered_name": name}
    get_config = getattr(obj, "get_config", None)
    if get_config is None:
        raise TypeError(f"Cannot serialize {obj!r}: it has no `get_config()` (define it, and "
                        f"register the class with `@mn.saving.register_keras_serializable()`).")
    cls = type(obj)
    return {"module": cls.__module__, "class_name": cls.__name__,
            "config": serialize_keras_object(get_config()),
            "registered_name": get_registered_name(cls)}


def deserialize_keras_object(config, custom_objects=None, safe_mode=True, **kwargs):
    """Rebuild what ``serialize_keras_object`` produced (or a registered name).

    Args:
        config: a dict as ``serialize_keras_object`` returns, or a plain value (a string
            stays a string unless ``custom_objects`` names it, as in Keras).
        custom_objects: ``{name: class or function}`` consulted first.
        safe_mode: Keras's guard against code in files; minnet never runs code from a file,
            so it changes nothing here.

    Raises:
        ValueError: a name nothing is registered under.
    """
    if isinstance(config, str) and custom_objects and custom_objects.get(config) is not None:
        return custom_objects[config]          # a function saved by its name
    if config is None or isinstance(config, (bool, int, float, str)):
        return config                          # plain values, strings included (Keras)
    if isinstance(config, (list, tuple)):
        return [deserialize_keras_object(v, custom_objects) for v in config]
    if not isinstance(config, dict):
        raise TypeError(f"Invalid value for argument `config`: expected a dict, a name or a plain "
                        f"value. Received: {config!r}")
    if "class_name" not in config or "config" not in config:
        return {key: deserialize_keras_object(value, custom_objects) for key, value in config.items()}
    class_name, inner = config["class_name"], config.get("config")
    if class_name == "__numpy__":
        return np.asarray(inner["value"], dtype=inner.get("dtype"))
    if class_name == "function":
        return _lookup_any(config.get("registered_name") or inner, custom_objects)
    cls = None
    for candidate in (config.get("registered_name"), class_name):
        if candidate:
            try:
                cls = _lookup_any(candidate, custom_objects)
                break
            except ValueError:
                continue
    if cls is None:
        raise ValueError(f"Could not locate class {class_name!r} (registered name "
                         f"{config.get('registered_name')!r}). Register it with "
                         f"`@mn.saving.register_keras_serializable()` or pass it in `custom_objects`.")
    inner = inner or {}
    if hasattr(cls, "from_config"):
        with custom_object_scope(custom_objects):
            return cls.from_config(inner)
    return cls(**inner)
