"""One registry for every kind of named object minnet builds from a string or a config.

Kinds: ``"layer"``, ``"loss"``, ``"metric"``, ``"optimizer"``, ``"initializer"``,
``"activation"``, ``"regularizer"``, ``"constraint"``, ``"schedule"``, ``"callback"``.
Each module registers its built-ins at import (``register("loss", MeanSquaredError,
aliases=("mse",))``) and exposes Keras's ``get``/``serialize``/``deserialize`` as thin calls
into this one. Names are looked up as Keras 3 looks them up: exactly (``"binary_crossentropy"``
and ``"BinaryCrossentropy"`` are both registered; ``"binary_cross_entropy"`` is refused, as
Keras refuses it), and optimizers also ignoring case (Keras lower-cases them: ``"ADAM"``). An
unknown name raises :func:`unknown_name_error`, the one message for every kind: the closest
spelling suggested once (:func:`did_you_mean`) and the known names listed once.

This module imports nothing above itself.
"""
import difflib
import re
import threading

__all__ = ["register", "lookup", "get", "serialize", "deserialize", "normalize_name",
           "snake_case", "names", "did_you_mean", "unknown_name_error", "get_custom_objects",
           "custom_object_scope", "CustomObjectScope", "custom_object", "register_custom_object"]

# Keras's global custom objects (``keras.saving.get_custom_objects()``): one dict for every
# kind, consulted by ``lookup`` before the tables (after a ``custom_objects`` argument and any
# ``custom_object_scope``). ``register_custom_object`` also remembers the name an object was
# registered under, which ``registered_name`` (and so every ``serialize``) then writes.
_GLOBAL_CUSTOM_OBJECTS = {}
_GLOBAL_CUSTOM_NAMES = {}      # id(object) -> (object, registered name)


class _ScopeState(threading.local):
    def __init__(self):
        self.stack = []


_SCOPES = _ScopeState()


def get_custom_objects():
    """The global dict of custom objects (Keras's ``get_custom_objects()``): adding an entry
    (``get_custom_objects()["MyLayer"] = MyLayer``) makes every loader find it."""
    return _GLOBAL_CUSTOM_OBJECTS


def register_custom_object(obj, name):
    """Put ``obj`` in the global custom objects under ``name`` and remember that name."""
    _GLOBAL_CUSTOM_OBJECTS[name] = obj
    _GLOBAL_CUSTOM_NAMES[id(obj)] = (obj, name)
    return obj


def custom_object(name):
    """The object a ``custom_object_scope`` (innermost first) or the global custom objects
    hold under ``name``, or None."""
    for scope in reversed(_SCOPES.stack):
        if name in scope:
            return scope[name]
    return _GLOBAL_CUSTOM_OBJECTS.get(name)


class CustomObjectScope:
    """``with custom_object_scope({"MyLayer": MyLayer}): load_model(...)`` (Keras): the
    objects are found by every lookup inside the block, in this thread.

    Args:
        *objects: dicts ``{name: class or function}`` (None entries are skipped).
    """

    def __init__(self, *objects):
        merged = {}
        for item in objects:
            if item is None:
                continue
            if not isinstance(item, dict):
                raise TypeError(f"Invalid value for argument `custom_objects`: expected dicts "
                                f"{{name: object}}. Received: {item!r}")
            merged.update(item)
        self.custom_objects = merged

    def __enter__(self):
        _SCOPES.stack.append(self.custom_objects)
        return self

    def __exit__(self, *exc_info):
        _SCOPES.stack.pop()
        return False


custom_object_scope = CustomObjectScope

_KINDS = ("layer", "loss", "metric", "optimizer", "initializer", "activation", "regularizer",
          "constraint", "schedule", "callback")
KINDS = _KINDS
_tables = {kind: {} for kind in _KINDS}        # kind -> {exact name: object}
_canonical = {kind: {} for kind in _KINDS}     # kind -> {id(object): registered name}


_HOW_TO_REGISTER = {"layer": "@mn.register_layer on the class or function"}


def snake_case(name):
    """Keras's ``to_snake_case``: ``"Conv2D"`` -> ``"conv2d"``, ``"GRUCell"`` -> ``"gru_cell"``.

    The same two rules as ``keras.src.utils.naming.to_snake_case``, so a layer's default
    name is the one Keras gives it: a capitalised word after any character starts a new
    word (``"GRUCell"`` -> ``"gru_cell"``, ``"MaxPooling2D"`` -> ``"max_pooling2d"``), then
    an upper-case letter after a lower-case one does (``"PReLU"`` -> ``"p_re_lu"``, as in
    Keras); digits and trailing acronyms stay attached (``"Conv2D"``, ``"GRU"`` -> ``"gru"``).
    """
    name = re.sub(r"\W+", "", name)
    name = re.sub("(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub("([a-z])([A-Z])", r"\1_\2", name).lower()


def normalize_name(name):
    """The key two spellings of one name share: lower case, no underscores or hyphens."""
    return name.replace("_", "").replace("-", "").lower()


def _check_kind(kind):
    if kind not in _tables:
        raise ValueError(f"Invalid value for argument `kind`: expected one of {_KINDS}. "
                         f"Received: kind={kind!r}")


def register(kind, obj, name=None, aliases=()):
    """Register ``obj`` (a class or function) under ``name`` (default: its ``__name__``).

    Registering the same object again is a no-op; another object under a taken name
    raises ``ValueError``. Returns ``obj`` so this can serve as a decorator body.
    """
    _check_kind(kind)
    name = name or obj.__name__
    for key in (name,) + tuple(aliases):
        existing = _tables[kind].get(key)
        if existing is not None and existing is not obj and not _same_definition(existing, obj):
            raise ValueError(f"A different {kind} is already registered under the name {key!r} "
                             f"({existing!r}). Register this one under another name, such as "
                             f"'package>{key}'.")
        _tables[kind][key] = obj      # a re-run definition replaces its twin
    _canonical[kind][id(obj)] = _canonical[kind].get(id(obj), name)
    return obj


def _same_definition(a, b):
    """The same class or function defined again (a notebook cell or a script run twice)."""
    return ((getattr(a, "__module__", None), getattr(a, "__qualname__", None))
            == (getattr(b, "__module__", None), getattr(b, "__qualname__", None)))


def names(kind):
    """Every registered name (aliases included) of ``kind``, sorted."""
    _check_kind(kind)
    return sorted(_tables[kind])


# Kinds Keras looks up ignoring case (``keras.optimizers.get("ADAM")``); every other kind is exact.
_CASE_INSENSITIVE = ("optimizer",)
# Above this many names the list is left out of the message (the layers); the suggestion stays.
_MAX_LISTED = 60


def _osa_distance(a, b):
    """Edits (insert, delete, substitute, swap two neighbours) from ``a`` to ``b``."""
    previous2, previous = None, list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        current = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                current[j] = min(current[j], previous2[j - 2] + 1)
        previous2, previous = previous, current
    return previous[-1]


def did_you_mean(name, candidates):
    """A " Did you mean 'x'?" hint for an unknown name, or ``""`` when nothing is close.

    The one suggestion helper of minnet (every kind of name uses it). A candidate equal to
    ``name`` but for case, underscores and hyphens comes first, the one fewest edits away
    (``"categorical_cross_entropy"`` -> ``"categorical_crossentropy"``,
    ``"CategoricalCrossEntropy"`` -> ``"CategoricalCrossentropy"``). Otherwise, ignoring case,
    the candidate fewest edits away wins, a swap of two neighbours counting as one (``"adma"``
    is one edit from ``"adam"``, three from ``"adamax"``), ties broken by difflib's
    similarity, when it is within a third of the name's length; else
    ``difflib.get_close_matches``. The suggestion is spelled as the first candidate of that
    name (the class name before its lower-case alias: ``"Adam"``).

    Args:
        name: the name that was not found (anything; non-strings give ``""``).
        candidates: the valid names (an iterable of str).

    Returns:
        ``" Did you mean 'Adam'?"`` (leading space, ready to append to a message) or ``""``.

    Example:
        >>> did_you_mean("adma", ["SGD", "Adam", "Adamax", "adam"])
        " Did you mean 'Adam'?"
    """
    if not isinstance(name, str):
        return ""
    pool = list(dict.fromkeys(c for c in candidates if isinstance(c, str)))
    wanted = normalize_name(name)
    same = [c for c in pool if normalize_name(c) == wanted]
    if same:
        return f" Did you mean {min(same, key=lambda c: _osa_distance(name, c))!r}?"
    by_lower = {}
    for candidate in pool:
        by_lower.setdefault(candidate.lower(), candidate)
    typed = name.lower()
    scored = sorted((_osa_distance(typed, key), -difflib.SequenceMatcher(None, typed, key).ratio(), key)
                    for key in by_lower)
    if scored and scored[0][0] <= max(1, len(typed) // 3):
        return f" Did you mean {by_lower[scored[0][2]]!r}?"
    matches = difflib.get_close_matches(typed, list(by_lower), n=1, cutoff=0.6)
    return f" Did you mean {by_lower[matches[0]]!r}?" if matches else ""


def unknown_name_error(kind, name, candidates=None, argument=None):
    """The error for a name that names no registered ``kind`` (returned, not raised).

    One message for every kind: the argument (when given), the name received, one
    suggestion, how a custom object is found, and the known names once, each name once
    whatever its case (left out above 60 names).
    """
    if candidates is None:
        candidates = names(kind)
    head = (f"Invalid value for argument `{argument}`: unknown {kind} {name!r}." if argument
            else f"Unknown {kind}: {name!r}.")
    # Each name once, whatever its case ("Adam" and its alias "adam": the class name is shown).
    unique = sorted({c.lower(): c for c in sorted((c for c in candidates if isinstance(c, str)),
                                                  reverse=True)}.values())
    known = f" Known names: {', '.join(unique)}." if len(unique) <= _MAX_LISTED else ""
    return ValueError(f"{head}{did_you_mean(name, candidates)} A custom {kind} is found when it is "
                      f"registered ({_HOW_TO_REGISTER.get(kind, 'register it')}) or passed in "
                      f"`custom_objects`.{known}")


def lookup(kind, name, custom_objects=None, argument=None, also=()):
    """The object registered as ``name`` (or in ``custom_objects``), else ``unknown_name_error``
    (``also``: names the caller resolves itself, such as ``"accuracy"``, offered as suggestions)."""
    _check_kind(kind)
    if custom_objects and name in custom_objects:
        return custom_objects[name]
    if isinstance(name, str):
        found = custom_object(name)
        if found is not None:
            return found
    table = _tables[kind]
    if name in table:
        return table[name]
    if isinstance(name, str) and kind in _CASE_INSENSITIVE:
        for key, obj in table.items():
            if key.lower() == name.lower():
                return obj
    raise unknown_name_error(kind, name, list(also) + list(table) + list(custom_objects or ()), argument)


def registered_name(kind, obj):
    """The name ``obj`` (or its class) was registered under, or ``None``."""
    _check_kind(kind)
    for candidate in (obj, type(obj)):
        entry = _GLOBAL_CUSTOM_NAMES.get(id(candidate))
        if entry is not None and entry[0] is candidate:
            return entry[1]
        name = _canonical[kind].get(id(candidate))
        if name is not None:
            return name
    return None


def serialize(kind, obj):
    """``{"class_name": name, "config": obj.get_config()}`` for an object with a config;
    the registered name for a registered function."""
    name = registered_name(kind, obj)
    if callable(obj) and not hasattr(obj, "get_config"):
        if name is None:
            raise ValueError(f"Cannot serialize the {kind} {obj!r}: it is not registered. "
                             f"Register it first.")
        return name
    if name is None:
        name = type(obj).__name__
    return {"class_name": name, "config": obj.get_config()}


def deserialize(kind, config, custom_objects=None):
    """Rebuild an object from what :func:`serialize` returned (a name or a dict)."""
    if isinstance(config, str):
        return lookup(kind, config, custom_objects)
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError(f"Invalid {kind} config: expected a name or a dict with 'class_name' "
                         f"and 'config'. Received: {config!r}")
    cls = lookup(kind, config["class_name"], custom_objects)
    inner = config.get("config") or {}
    if not isinstance(inner, dict):
        raise ValueError(f"Invalid {kind} config for {config['class_name']!r}: 'config' must be "
                         f"a dict. Received: {type(inner).__name__}")
    from_config = getattr(cls, "from_config", None)
    return from_config(inner) if from_config is not None else cls(**inner)


def get(kind, identifier, custom_objects=None):
    """Keras's ``get``: ``None`` -> ``None``; a string or config -> the built object
    (classes are instantiated with no arguments); an instance or callable -> itself."""
    if identifier is None:
        return None
    if isinstance(identifier, (str, dict)):
        found = (lookup(kind, identifier, custom_objects) if isinstance(identifier, str)
                 else deserialize(kind, identifier, custom_objects))
        return found() if isinstance(found, type) else found
    if callable(identifier) or hasattr(identifier, "get_config"):
        return identifier
    raise TypeError(f"Could not interpret {kind} identifier: expected a name, a config dict, "
                    f"an object or a callable. Received: {identifier!r}")
