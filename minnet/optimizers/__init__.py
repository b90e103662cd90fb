"""Optimizers: SGD, Adam, AdamW, Nadam, Adamax, RMSprop, Adagrad, Adadelta, Lion, and
learning-rate ``schedules``; ``MultiOptimizer``/``OptimizerMap`` give parameters different optimizers.

Keras argument names and defaults (Keras 3's decoupled ``weight_decay`` for every
optimizer), PyTorch update formulas; every update is done in place on ``p.data``.
``get(identifier)`` resolves the strings ``model.compile`` accepts, through the one
registry (``minnet._registry``).

Example:
    >>> from minnet import optimizers
    >>> opt = optimizers.get("adam")            # Adam(learning_rate=0.001)
    >>> opt = optimizers.Adam(1e-3)             # Keras: the learning rate first
    >>> opt = optimizers.SGD(model.parameters(), learning_rate=0.1, momentum=0.9)
"""
from minnet import _registry
from minnet.optimizers import schedules
from minnet.optimizers.adadelta import Adadelta
from minnet.optimizers.adagrad import Adagrad
from minnet.optimizers.adam import Adam, AdamW
from minnet.optimizers.adamax import Adamax
from minnet.optimizers.keras_only import Adafactor, Ftrl, Lamb, LossScaleOptimizer
from minnet.optimizers.lion import Lion
from minnet.optimizers.multi_optimizer import MultiOptimizer, OptimizerMap
from minnet.optimizers.muon import Muon, ScheduleFreeAdamW
from minnet.optimizers.nadam import Nadam
from minnet.optimizers.optimizer import Optimizer
from minnet.optimizers.rmsprop import RMSprop
from minnet.optimizers.sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "Nadam", "Adamax", "RMSprop", "Adagrad",
           "Adadelta", "Lion", "schedules", "get", "serialize", "deserialize",
           "Ftrl", "Lamb", "Adafactor", "LossScaleOptimizer", "Muon",
           "ScheduleFreeAdamW", "MultiOptimizer", "OptimizerMap"]

for _cls in (SGD, Adam, AdamW, Nadam, Adamax, RMSprop, Adagrad, Adadelta, Lion, Ftrl, Lamb,
             Adafactor, LossScaleOptimizer, Muon, ScheduleFreeAdamW, MultiOptimizer):
    _registry.register("optimizer", _cls, aliases=(_cls.__name__.lower(),))
del _cls


def serialize(optimizer):
    """``{"class_name": ..., "config": ...}`` (JSON-able) for an optimizer."""
    if not isinstance(optimizer, Optimizer):
        raise TypeError("Invalid value for argument `optimizer`: expected a minnet Optimizer. "
                        f"Received: {type(optimizer).__name__}")
    return _registry.serialize("optimizer", optimizer)


def deserialize(config, custom_objects=None):
    """Rebuild an optimizer (without parameters) from ``serialize``'s output."""
    if not isinstance(config, dict):
        raise ValueError("Invalid value for argument `config`: expected a dict with keys "
                         f"'class_name' and 'config'. Received: {config!r}")
    return _registry.deserialize("optimizer", config, custom_objects)


def get(identifier, custom_objects=None):
    """An optimizer from a name ("sgd", "adam", "adamw", "nadam", "adamax", "rmsprop",
    "adagrad", "adadelta", "lion", any case),
    an Optimizer instance (returned as is), an Optimizer subclass, or a ``serialize`` dict."""
    if isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, type) and issubclass(identifier, Optimizer):
        return identifier()
    if isinstance(identifier, (str, dict)):
        return _registry.get("optimizer", identifier, custom_objects)
    raise TypeError(f"Could not interpret optimizer identifier: {identifier!r}. Expected a name, "
                    f"a config dict or an Optimizer instance.")
