"""Keras 3's ``OptimizerMap`` and ``MultiOptimizer``: a different optimizer per parameter.

``OptimizerMap(default_optimizer, optimizer_map=None)`` maps a parameter's name to an
optimizer with Keras's rule: the exact key first, else every key taken as a regular
expression and matched with ``re.fullmatch`` (more than one match is an error), else the
default. ``MultiOptimizer(optimizer_map_or_callable)`` routes each parameter to the
optimizer the map (or a callable ``f(parameter) -> optimizer``) gives, and ``step()``
steps them all.

The key is the parameter's ``name``, minnet's counterpart of Keras's ``variable.path``:
``"encoder/kernel"`` for the kernel of a layer named ``encoder``. Keras prefixes the
model's name inside a ``Sequential`` (``"sequential/encoder/kernel"``), minnet does not; a
pattern such as ``".*encoder/.*"`` matches both.
"""
import re
from collections.abc import MutableMapping

from minnet import _registry
from minnet.optimizers.keras_only import LossScaleOptimizer
from minnet.optimizers.optimizer import Optimizer

__all__ = ["OptimizerMap", "MultiOptimizer"]


def _check_inner(optimizer, what):
    """Raise unless ``optimizer`` may serve inside a MultiOptimizer (Keras's three checks)."""
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"Invalid value for {what}: expected a minnet Optimizer. "
                        f"Received: {optimizer!r} of type {type(optimizer).__name__}")
    if isinstance(optimizer, LossScaleOptimizer):
        raise ValueError(f"Invalid value for {what}: a LossScaleOptimizer cannot be used inside a "
                         f"MultiOptimizer. Received: {optimizer!r}")
    if isinstance(optimizer, MultiOptimizer):
        raise ValueError(f"Invalid value for {what}: a MultiOptimizer cannot be used inside a "
                         f"MultiOptimizer. Received: {optimizer!r}")


def _parameter_key(parameter):
    """The name the map looks up: ``path`` when the object has one (a Keras variable), else ``name``."""
    key = getattr(parameter, "path", None) or getattr(parameter, "name", None)
    if not isinstance(key, str):
        raise ValueError(f"OptimizerMap looks parameters up by name, and this one has none: "
                         f"{parameter!r}. Give it a name (mn.Parameter(data, name=...)) or pass "
                         f"MultiOptimizer a callable instead of an OptimizerMap.")
    return key


class OptimizerMap(MutableMapping):
    """Parameter name (or regular expression over names) -> optimizer, Keras's ``OptimizerMap``.

    Args:
        default_optimizer: the optimizer of every parameter no key matches.
        optimizer_map: optional dict ``{name or pattern: optimizer}``.

    Lookup (``optimizer_map[name]``): the exact key, else the one key ``k`` with
    ``re.fullmatch(k, name)`` (ValueError when several match), else ``default_optimizer``.
    Calling the map on a parameter looks up its name.

    Example:
        >>> opt_map = OptimizerMap(SGD(0.1), {"encoder/.*": Adam(1e-3)})
        >>> opt_map["encoder/kernel"].name, opt_map["decoder/kernel"].name
        ('adam', 'sgd')
    """

    def __init__(self, default_optimizer, optimizer_map=None):
        if not isinstance(default_optimizer, Optimizer):
            raise TypeError(f"Invalid value for argument `default_optimizer`: expected a minnet "
                            f"Optimizer. Received: {default_optimizer!r}")
        if optimizer_map is not None and not isinstance(optimizer_map, dict):
            raise TypeError(f"Invalid value for argument `optimizer_map`: expected a dict "
                            f"{{name or pattern: optimizer}}. Received: {optimizer_map!r}")
        self._default_optimizer = default_optimizer
        self._optimizer_map = {}
        for key, optimizer in (optimizer_map or {}).items():
            self[key] = optimizer

    @property
    def default_optimizer(self):
        return self._default_optimizer

    def __getitem__(self, key):
        if key in self._optimizer_map:
            return self._optimizer_map[key]
        matching = [pattern for pattern in self._optimizer_map if re.fullmatch(pattern, key)]
        if len(matching) > 1:
            raise ValueError(f"Multiple optimizers assigned to variable {key}: the patterns "
                             f"{matching} all match it.")
        if matching:
            return self._optimizer_map[matching[0]]
        return self._default_optimizer

    def __setitem__(self, key, optimizer):
        if key in self._optimizer_map:
            raise ValueError(f"'{key}' already exists in the OptimizerMap with value "
                             f"{self._optimizer_map[key]!r}. Please make sure to not use "
                             f"duplicated keys.")
        if not isinstance(key, str):
            raise ValueError(f"Invalid key for an OptimizerMap: expected a str (a parameter name "
                             f"or a regular expression). Received: {key!r}")
        _check_inner(optimizer, f"the OptimizerMap entry {key!r}")
        self._optimizer_map[key] = optimizer

    def __delitem__(self, key):
        del self._optimizer_map[key]

    def __len__(self):
        return len(self._optimizer_map)

    def __iter__(self):
        return iter(self._optimizer_map)

    def __call__(self, parameter):
        return self[_parameter_key(parameter)]

    def __repr__(self):
        return f"OptimizerMap({self._default_optimizer!r}, {self._optimizer_map!r})"

    def get_config(self):
        return {"default_optimizer": _registry.serialize("optimizer", self._default_optimizer),
                "optimizer_map": {key: _registry.serialize("optimizer", optimizer)
                                  for key, optimizer in self._optimizer_map.items()}}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        default = _registry.deserialize("optimizer", config["default_optimizer"], custom_objects)
        mapping = {key: _registry.deserialize("optimizer", value, custom_objects)
                   for key, value in (config.get("optimizer_map") or {}).items()}
        return cls(default, mapping)


class MultiOptimizer(Optimizer):
    """An optimizer that hands each parameter to its own optimizer (Keras's ``MultiOptimizer``).

    Args:
        optimizer_map: an ``OptimizerMap``, or a callable ``f(parameter) -> Optimizer``.
        loss_scale_factor: Keras's loss scale, set on the sub-optimizers too. minnet trains in
            float32/float64 and scales neither the loss nor the gradients (Keras multiplies the
            loss by it and divides the gradients by it, which leaves the step unchanged), so
            it is kept for the config only.
        name: optional name.
        params: (minnet) the parameters, for a hand-written loop; ``model.compile`` and
            ``set_parameters`` give them otherwise.

    ``step()`` steps every sub-optimizer that holds parameters (each with its own learning
    rate, clipping and ``iterations``), then ``iterations += 1``. The sub-optimizers are
    ``.optimizers``: the map's values and default first, then any a callable returns, in
    the order first seen. ``learning_rate`` raises AttributeError, as in Keras: set it on
    the sub-optimizers.

    Example:
        >>> opt = MultiOptimizer(OptimizerMap(SGD(0.1), {"encoder/.*": Adam(1e-3)}))
        >>> model.compile(optimizer=opt, loss="mse")
    """

    def __init__(self, optimizer_map, loss_scale_factor=None, name=None, *, params=None):
        if not callable(optimizer_map):
            raise TypeError(f"Invalid value for argument `optimizer_map`: expected an OptimizerMap "
                            f"or a callable returning an optimizer for a parameter. "
                            f"Received: {optimizer_map!r}")
        self._optimizer_map = optimizer_map
        self._inner_optimizers = []
        self._loss_scale_factor = loss_scale_factor
        self._routes = []                 # per parameter: index into _inner_optimizers
        if isinstance(optimizer_map, OptimizerMap):
            for optimizer in list(optimizer_map.values()) + [optimizer_map.default_optimizer]:
                self._add_inner(optimizer)
        self._building = True
        super().__init__(None, 0.0, name="multi_optimizer" if name is None else name)   # Keras's
        self._building = False
        if params is not None:
            self.set_parameters(params)

    def _add_inner(self, optimizer):
        for k, known in enumerate(self._inner_optimizers):
            if known is optimizer:
                return k
        optimizer.loss_scale_factor = self._loss_scale_factor
        self._inner_optimizers.append(optimizer)
        return len(self._inner_optimizers) - 1

    def _route(self, parameters):
        """Sub-optimizer index per parameter (adds the optimizers a callable returns)."""
        routes = []
        for p in parameters:
            optimizer = self._optimizer_map(p)
            _check_inner(optimizer, f"the optimizer of parameter {getattr(p, 'name', None)!r}")
            routes.append(self._add_inner(optimizer))
        return routes

    @property
    def optimizers(self):
        """The sub-optimizers."""
        return self._inner_optimizers

    @property
    def learning_rate(self):
        raise AttributeError("Learning rate cannot be accessed on a MultiOptimizer. Access the "
                             "learning rate on the individual sub-optimizers instead "
                             "(`for opt in optimizer.optimizers: opt.learning_rate`).")

    @learning_rate.setter
    def learning_rate(self, value):
        if not getattr(self, "_building", False):
            raise AttributeError("Learning rate cannot be set on a MultiOptimizer. Set the "
                                 "learning rate on the individual sub-optimizers instead.")

    lr = learning_rate

    @property
    def loss_scale_factor(self):
        return self._loss_scale_factor

    @loss_scale_factor.setter
    def loss_scale_factor(self, value):
        self._loss_scale_factor = value
        for optimizer in self._inner_optimizers:
            optimizer.loss_scale_factor = value

    # ---- parameters: routed to the sub-optimizers --------------------------------------
    def set_parameters(self, params):
        """Route the parameters to the sub-optimizers and give each its share."""
        super().set_parameters(params)
        self._routes = self._route(self._params)
        for k, optimizer in enumerate(self._inner_optimizers):
            optimizer.set_parameters([p for p, r in zip(self._params, self._routes) if r == k])
        return self

    def build(self, variables):
        variables = list(variables)
        if self._params is None:
            return self.set_parameters(variables)
        known = {id(p) for p in self._params}
        new = [v for v in dict.fromkeys(variables, None) if id(v) not in known]
        if new:
            routes = self._route(new)
            self._params = list(self._params) + new
            self._routes = list(self._routes) + routes
            for k, optimizer in enumerate(self._inner_optimizers):
                mine = [p for p, r in zip(new, routes) if r == k]
                if mine:
                    optimizer.build(mine)
        return self

    def step(self):
        """Step every sub-optimizer that holds parameters, then ``iterations += 1``."""
        if self._params is None:
            raise RuntimeError("MultiOptimizer has no parameters: pass them as `params=` or call "
                               "`set_parameters(params)` (`model.compile(optimizer=...)` does this).")
        for optimizer in self._inner_optimizers:
            if optimizer.params:
                optimizer.step()
        self._iterations += 1

    def finalize_variable_values(self, var_list=None):
        for optimizer in self._inner_optimizers:
            if optimizer.params:
                optimizer.finalize_variable_values()

    # ---- state and config ----------------------------------------------------------
    def state_dict(self):
        """``{"iterations": n}`` and each sub-optimizer's state under ``"optimizers.<k>."``."""
        d = {"iterations": self._iterations}
        for k, optimizer in enumerate(self._inner_optimizers):
            for key, value in optimizer.state_dict().items():
                d[f"optimizers.{k}.{key}"] = value
        return d

    def load_state_dict(self, state_dict):
        if not hasattr(state_dict, "keys"):
            raise TypeError("Invalid value for argument `state_dict`: expected a dict (or an npz "
                            f"mapping). Received: {type(state_dict).__name__}")
        parts = [{} for _ in self._inner_optimizers]
        for key in state_dict.keys():
            if key == "iterations":
                continue
            head = str(key).split(".", 2)
            if len(head) != 3 or head[0] != "optimizers" or not head[1].isdigit() \
                    or int(head[1]) >= len(parts):
                raise ValueError(f"Invalid key {key!r} in `state_dict`: expected 'iterations' or "
                                 f"'optimizers.<k>.<key>' with k < {len(parts)} (the number of "
                                 f"sub-optimizers).")
            parts[int(head[1])][head[2]] = state_dict[key]
        for optimizer, part in zip(self._inner_optimizers, parts):
            if part:
                optimizer.load_state_dict(part)
        if "iterations" in state_dict.keys():
            self.iterations = int(state_dict["iterations"])

    def get_config(self):
        if not isinstance(self._optimizer_map, OptimizerMap):
            raise TypeError("A MultiOptimizer built from a callable cannot be serialized: build it "
                            "from an OptimizerMap to save it.")
        return {"optimizer_map": {"class_name": "OptimizerMap",
                                  "config": self._optimizer_map.get_config()},
                "loss_scale_factor": self._loss_scale_factor, "name": self.name}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        mapping = config["optimizer_map"]
        if isinstance(mapping, dict):
            mapping = OptimizerMap.from_config(mapping.get("config", mapping), custom_objects)
        config["optimizer_map"] = mapping
        return cls(**config)

    def __repr__(self):
        return (f"MultiOptimizer({self._optimizer_map!r}"
                + (f", name={self.name!r}" if self.name != "multi_optimizer" else "") + ")")
