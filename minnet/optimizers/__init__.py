"""Optimizers: SGD, Adam, AdamW, RMSprop, Adagrad, and learning-rate ``schedules``.

Keras argument names and defaults, PyTorch update formulas; every update is done in
place on ``p.data``.  ``get(identifier)`` resolves the strings ``model.compile`` accepts.

Example:
    >>> from minnet import optimizers
    >>> opt = optimizers.get("adam")            # Adam(learning_rate=0.001)
    >>> opt = optimizers.SGD(model.parameters(), learning_rate=0.1, momentum=0.9)
"""
from minnet._utils import did_you_mean
from minnet.optimizers import schedules
from minnet.optimizers.adagrad import Adagrad
from minnet.optimizers.adam import Adam, AdamW
from minnet.optimizers.optimizer import Optimizer
from minnet.optimizers.rmsprop import RMSprop
from minnet.optimizers.sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "schedules",
           "get", "serialize", "deserialize"]

_OPTIMIZERS = {cls.__name__.lower(): cls for cls in (SGD, Adam, AdamW, RMSprop, Adagrad)}


def serialize(optimizer):
    """``{"class_name": ..., "config": ...}`` (JSON-able) for an optimizer."""
    if not isinstance(optimizer, Optimizer):
        raise TypeError("Invalid value for argument `optimizer`: expected a minnet Optimizer. "
                        f"Received: {type(optimizer).__name__}")
    return {"class_name": type(optimizer).__name__, "config": optimizer.get_config()}


def deserialize(config, custom_objects=None):
    """Rebuild an optimizer (without parameters) from ``serialize``'s output."""
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError("Invalid value for argument `config`: expected a dict with keys "
                         f"'class_name' and 'config'. Received: {config!r}")
    table = dict(_OPTIMIZERS)
    for name, cls in (custom_objects or {}).items():
        table[name.lower()] = cls
    name = str(config["class_name"]).lower()
    if name not in table:
        raise ValueError(f"Unknown optimizer: {config['class_name']!r}. Known optimizers: "
                         f"{sorted(_OPTIMIZERS)} (pass custom ones in `custom_objects`)."
                         + did_you_mean(str(config["class_name"]), table))
    return table[name].from_config(dict(config.get("config", {})))


def get(identifier):
    """An optimizer from a name ("sgd", "adam", "adamw", "rmsprop", "adagrad", any case),
    an Optimizer instance (returned as is), an Optimizer subclass, or a ``serialize`` dict."""
    if isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, type) and issubclass(identifier, Optimizer):
        return identifier()
    if isinstance(identifier, str):
        cls = _OPTIMIZERS.get(identifier.lower())
        if cls is None:
            raise ValueError(f"Could not interpret optimizer identifier: {identifier!r}. "
                             f"Expected one of {sorted(_OPTIMIZERS)} or an Optimizer instance."
                             + did_you_mean(identifier, _OPTIMIZERS))
        return cls()
    if isinstance(identifier, dict):
        return deserialize(identifier)
    raise ValueError(f"Could not interpret optimizer identifier: {identifier!r}. "
                     f"Expected one of {sorted(_OPTIMIZERS)} or an Optimizer instance.")
