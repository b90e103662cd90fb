"""The optimizer base class: parameters, per-parameter state, clipping, learning rate.

An optimizer holds a list of parameters (``mn.Parameter``/``mn.Tensor`` objects with
``.data`` and ``.grad`` ndarrays) and, in ``step()``, updates each ``p.data`` **in
place**: layers hold the very same array, so rebinding ``p.data`` would silently
detach the optimizer from the model.  Subclasses implement one method,
``_update(data, grad, state, lr, work)``, the update rule for one parameter written
with NumPy ``out=`` operations into a scratch buffer (no new arrays per step).

``step()`` does, in order (as ``torch.nn.utils.clip_grad_norm_`` + ``opt.step()``):

1. evaluate the learning rate (a float, or a schedule at ``iterations``; a parameter group
   may set its own ``learning_rate`` and ``weight_decay``);
2. clip gradients: ``clipnorm`` per parameter or ``global_clipnorm`` over all of them
   (PyTorch's formula ``g *= min(1, max_norm / (norm + 1e-6))``), then ``clipvalue``
   (``g = clip(g, -v, v)``).  Clipping works on a copy: ``p.grad`` is left as the
   backward pass wrote it;
3. for every parameter whose ``grad`` is not None: Keras 3's decoupled weight decay
   ``p -= learning_rate * weight_decay * p``, then the update rule, then the projection
   by the parameter's ``constraint`` when it has one (``p.data[...] = constraint(p.data)``);
4. ``iterations += 1``.

The constructor takes the learning rate as the first positional argument when that is a
number or a schedule (``Adam(1e-3)``, as Keras); parameters for a hand-written loop come as
the first positional iterable or ``params=`` (``Adam(model.parameters(), learning_rate=1e-3)``),
optionally as PyTorch-style groups: ``[{"params": [...], "learning_rate": 0.1,
"weight_decay": 0.0}, {"params": [...]}]`` (keys left out take the optimizer's values).
"""
import inspect
import math
import numbers

import numpy as np

from minnet import _registry
from minnet.optimizers import ema
from minnet.optimizers import schedules as _schedules

__all__ = ["Optimizer"]

_PARAMS_MESSAGE = ("expected an iterable of minnet Parameters (Tensors whose `.data` is a "
                   "floating-point ndarray)")


def check_number(name, value, low=None, high=None, low_open=False, high_open=False):
    """Return ``value`` as a float, or raise naming the argument (shared by the optimizers)."""
    return _schedules._check_number(name, value, low=low, high=high, low_open=low_open,
                                    high_open=high_open)


def check_bool(name, value):
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"Invalid value for argument `{name}`: expected a bool. "
                        f"Received: {name}={value!r}")
    return bool(value)


def _optional_positive(name, value):
    if value is None:
        return None
    return check_number(name, value, low=0, low_open=True)


def _is_learning_rate(value):
    return (isinstance(value, (numbers.Real, _schedules.LearningRateSchedule))
            and not isinstance(value, bool)) or (isinstance(value, np.ndarray) and value.ndim == 0)


def _check_kwargs(cls_name, kwargs):
    if "lr" in kwargs:
        raise TypeError(f"{cls_name}() got the argument `lr`: minnet's optimizers take Keras's "
                        f"name `learning_rate` (e.g. {cls_name}(learning_rate={kwargs['lr']!r})).")
    if "decay" in kwargs:
        raise TypeError(f"{cls_name}() got the argument `decay` (Keras 2's learning-rate decay): "
                        f"use a schedule from minnet.optimizers.schedules as `learning_rate`, "
                        f"or `weight_decay` for weight decay.")
    if kwargs:
        raise TypeError(f"{cls_name}() got unexpected keyword argument(s) {sorted(kwargs)}.")


def _flatten_groups(params):
    """PyTorch-style parameter groups -> (flat list of params, per-param (lr, wd) overrides)."""
    if isinstance(params, dict):
        params = [params]
    elif not (isinstance(params, (list, tuple)) and params
              and all(isinstance(g, dict) for g in params)):
        return params, None
    flat, overrides = [], []
    for k, group in enumerate(params):
        unknown = set(group) - {"params", "learning_rate", "weight_decay"}
        if "lr" in unknown:
            raise TypeError(f"Invalid value for argument `params`: parameter group {k} has the key "
                            f"'lr'; minnet's groups take Keras's name 'learning_rate'.")
        if unknown or "params" not in group:
            raise ValueError(f"Invalid value for argument `params`: expected parameter groups as "
                             f"dicts with 'params' and optional 'learning_rate', 'weight_decay'. "
                             f"Received: group {k} with keys {sorted(group)}")
        lr = group.get("learning_rate")
        lr = None if lr is None else check_number("learning_rate", lr, low=0)
        wd = group.get("weight_decay")
        wd = None if wd is None else check_number("weight_decay", wd, low=0)
        members = group["params"]
        members = [members] if hasattr(members, "data") and not isinstance(members, (list, tuple)) \
            else list(members)
        flat.extend(members)
        overrides.extend([(lr, wd)] * len(members))
    return flat, overrides



def fusable(data, *arrays):
    """True when a fused update of ``_ext.optim_kernels`` can take these arrays: float32/float64,
    C-contiguous, one dtype and shape, ``data`` writeable (None entries are absent state).
    Anything else runs the NumPy calls of the optimizer's ``_update``."""
    dtype = data.dtype
    if dtype not in _FUSED_DTYPES or not data.flags.writeable:
        return False
    shape = data.shape
    for a in (data,) + arrays:
        if a is None:
            continue
        if type(a) is not np.ndarray or a.dtype != dtype or a.shape != shape \
                or not a.flags.c_contiguous:
            return False
    return True


_FUSED_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))   # what fusable takes


def _unique(values):
    seen, result = set(), []
    for v in values:
        if id(v) not in seen:
            seen.add(id(v))
            result.append(v)
    return result


def _as_grad(grad):
    """A gradient as ``step`` reads it: an ndarray (a Tensor's data), or None."""
    if grad is None:
        return None
    return np.asarray(getattr(grad, "data", grad))


class _Probe:
    """A bare object ``set_parameters`` can run on to validate a list without touching state."""
    _pending_state = None


class Optimizer:
    """Base class of minnet's optimizers.

    Args:
        params: iterable of Parameters to optimize (``model.parameters()``), or None
            when ``model.compile`` will call ``set_parameters`` later.
        learning_rate: a non-negative float or a ``schedules.LearningRateSchedule``.
        clipnorm: clip each parameter's gradient to this L2 norm.
        clipvalue: clip each gradient element to ``[-clipvalue, clipvalue]``.
        global_clipnorm: clip all gradients together to this total L2 norm.
        name: optional name (used in ``get_config``).

    Subclasses set ``_hyper_names`` (numeric hyperparameters saved by ``state_dict``) and
    implement ``_update``.
    """

    _hyper_names = ()
    # Per-parameter state entries that are floats rather than arrays (Nadam's mu_product).
    _scalar_state = ()
    # Slots of scratch memory the update rule needs (one flat buffer per dtype and slot,
    # sized for the largest parameter and shared by all parameters).
    _n_work = 1

    def __init__(self, params=None, learning_rate=0.01, clipnorm=None, clipvalue=None,
                 global_clipnorm=None, name=None, **kwargs):
        self._ema = ema.pop_ema_arguments(kwargs)     # use_ema, ema_momentum, ...: optimizers/ema.py
        _check_kwargs(type(self).__name__, kwargs)
        if _is_learning_rate(params):          # Keras: Adam(1e-3)
            default = inspect.signature(type(self).__init__).parameters.get("learning_rate")
            if default is not None and learning_rate != default.default:
                raise TypeError(f"{type(self).__name__}() got the learning rate twice: as the first "
                                f"positional argument ({params!r}) and as `learning_rate` "
                                f"({learning_rate!r}). Pass other hyperparameters by name "
                                f"(e.g. beta_1=0.9).")
            params, learning_rate = None, params
        if not hasattr(self, "weight_decay"):
            self.weight_decay = 0.0
        self._learning_rate = None
        self.learning_rate = learning_rate if not isinstance(learning_rate, dict) \
            else _schedules.deserialize(learning_rate)
        self.clipnorm = _optional_positive("clipnorm", clipnorm)
        self.clipvalue = _optional_positive("clipvalue", clipvalue)
        self.global_clipnorm = _optional_positive("global_clipnorm", global_clipnorm)
        if self.clipnorm is not None and self.global_clipnorm is not None:
            raise ValueError("Only one of `clipnorm` and `global_clipnorm` can be set. "
                             f"Received: clipnorm={clipnorm}, global_clipnorm={global_clipnorm}")
        self.name = type(self).__name__.lower() if name is None else str(name)
        self._iterations = 0
        self._params = None
        self._state = []          # one dict per parameter: name -> ndarray or int
        self._pending_state = None
        self._work = {}           # (dtype, slot) -> flat scratch buffer
        self._groups = []         # per parameter: (learning_rate or None, weight_decay or None)
        if params is not None:
            self.set_parameters(params)

    # ---- parameters --------------------------------------------------------------
    def set_parameters(self, params):
        """Set the parameters to optimize (``model.compile`` calls this).

        Args:
            params: iterable of Parameters (duplicates are kept once, first occurrence),
                or an object with a ``parameters()`` method such as a layer or model.
        """
        if hasattr(params, "parameters") and callable(params.parameters):
            params = params.parameters()
        params, groups = _flatten_groups(params)
        if isinstance(params, np.ndarray) or hasattr(params, "data") and not isinstance(params, (list, tuple)):
            raise TypeError(f"Invalid value for argument `params`: {_PARAMS_MESSAGE}. "
                            f"Received: a single {type(params).__name__}; wrap it in a list")
        try:
            params = list(params)
        except TypeError:
            raise TypeError(f"Invalid value for argument `params`: {_PARAMS_MESSAGE}. "
                            f"Received: {type(params).__name__}") from None
        if groups is None:
            groups = [(None, None)] * len(params)
        unique, seen, kept_groups = [], set(), []
        for i, p in enumerate(params):
            # An ndarray has a `.data` too (a memoryview): name the element's own type.
            data = None if isinstance(p, np.ndarray) else getattr(p, "data", None)
            if not isinstance(data, np.ndarray) or not np.issubdtype(data.dtype, np.floating):
                kind = type(p) if data is None else type(data)
                kind = kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__name__}"
                received = (f"element {i} of type {kind}" if data is None
                            else f"element {i} with data of type {kind}"
                            f"{'' if not isinstance(data, np.ndarray) else ' dtype ' + str(data.dtype)}")
                if isinstance(p, np.ndarray):
                    received += " (wrap arrays in mn.Parameter)"
                raise TypeError(f"Invalid value for argument `params`: {_PARAMS_MESSAGE}. "
                                f"Received: {received}")
            if id(p) not in seen:
                seen.add(id(p))
                unique.append(p)
                kept_groups.append(groups[i])
        self._params = unique
        self._groups = kept_groups
        self._state = [{} for _ in unique]
        self._work = {}
        if self._pending_state is not None:
            pending, self._pending_state = self._pending_state, None
            self.load_state_dict(pending)
        return self

    # ---- Keras 3's entry points: gradients and variables given at the call ------------
    def build(self, variables):
        """Create the state for ``variables`` (Keras's ``optimizer.build``); ``apply`` calls it
        for variables it has not seen, so the state of the others is kept."""
        variables = list(variables)
        if self._params is None:
            self.set_parameters(variables)
            return self
        known = {id(p) for p in self._params}
        new = [v for v in variables if id(v) not in known]
        if new:
            Optimizer.set_parameters(_Probe(), new)     # validates the list, keeps nothing
            self._params = list(self._params) + _unique(new)
            self._groups = list(self._groups) + [(None, None)] * (len(self._params) - len(self._groups))
            self._state = list(self._state) + [{} for _ in range(len(self._params) - len(self._state))]
        return self

    def apply(self, grads, trainable_variables=None):
        """Update ``trainable_variables`` with ``grads`` (two lists in the same order), Keras 3's
        ``optimizer.apply``: the state is built on first use, a None gradient is skipped,
        ``iterations`` goes up by one. ``trainable_variables`` may be left out when the
        optimizer already holds its parameters.

        Example:
            >>> loss.backward()
            >>> optimizer.apply([v.grad for v in model.trainable_variables], model.trainable_variables)
        """
        grads = list(grads)
        if trainable_variables is None:
            if self._params is None:
                raise ValueError(f"{type(self).__name__}.apply(grads) needs `trainable_variables` "
                                 f"the first time (the optimizer holds no variables yet).")
            variables = list(self._params)
        else:
            variables = list(trainable_variables)
        if len(grads) != len(variables):
            raise ValueError(f"Invalid value for argument `grads`: expected one gradient per variable "
                             f"({len(variables)}). Received: {len(grads)} gradients")
        self.build(variables)
        saved = [p.grad for p in self._params]
        given = {id(v): g for v, g in zip(variables, grads)}
        try:
            for p in self._params:
                p.grad = _as_grad(given.get(id(p)))
            self.step()
        finally:
            for p, grad in zip(self._params, saved):
                p.grad = grad
        return self.iterations

    def apply_gradients(self, grads_and_vars):
        """``apply`` from ``zip(grads, variables)`` (Keras's ``apply_gradients``); returns
        ``iterations``."""
        pairs = list(grads_and_vars)
        if not pairs:
            return self.iterations
        grads, variables = zip(*pairs)
        return self.apply(list(grads), list(variables))

    @property
    def params(self):
        """The list of parameters (empty before ``set_parameters``)."""
        return list(self._params or [])

    def zero_grad(self, set_to_none=True):
        """Clear the gradients (``p.grad = None``, or zero them in place)."""
        for p in self._params or []:
            if set_to_none or p.grad is None:
                p.grad = None
            else:
                p.grad[...] = 0

    # ---- learning rate -----------------------------------------------------------
    @property
    def learning_rate(self):
        """The current learning rate as a float (a schedule is evaluated at ``iterations``)."""
        lr = self._learning_rate
        if isinstance(lr, _schedules.LearningRateSchedule):
            return float(lr(self._iterations))
        return lr

    @learning_rate.setter
    def learning_rate(self, value):
        if isinstance(self._learning_rate, _schedules.LearningRateSchedule):
            raise TypeError("This optimizer was created with a `LearningRateSchedule` object as its "
                            "`learning_rate` constructor argument, hence its learning rate is not "
                            "settable. If you need the learning rate to be settable, create the "
                            "optimizer with a float `learning_rate`.")
        if isinstance(value, _schedules.LearningRateSchedule):
            self._learning_rate = value
            return
        if isinstance(value, np.ndarray) and value.ndim == 0:
            value = value.item()
        self._learning_rate = check_number("learning_rate", value, low=0)

    @property
    def lr(self):
        """Alias of ``learning_rate``."""
        return self.learning_rate

    @lr.setter
    def lr(self, value):
        self.learning_rate = value

    @property
    def iterations(self):
        """Number of ``step()`` calls so far."""
        return self._iterations

    @iterations.setter
    def iterations(self, value):
        if isinstance(value, np.ndarray):
            value = value.item()
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
            raise ValueError(f"Invalid value for argument `iterations`: expected a non-negative int. "
                             f"Received: iterations={value!r}")
        self._iterations = int(value)

    # ---- the step ----------------------------------------------------------------
    def _scratch(self, slot, shape, dtype):
        """A view of the shared scratch buffer ``slot`` with this shape (no allocation per step)."""
        work = self._work
        view = work.get((slot, shape, dtype))    # the view itself is kept (benchmarks/bench_optimizers.py)
        if view is not None:
            return view
        key = (np.dtype(dtype).str, slot)
        size = math.prod(shape)
        flat = work.get(key)
        if flat is None or flat.size < size:
            flat = np.empty(size, dtype=dtype)
            # Views of the old, smaller buffer go with it.
            for k in [k for k in work if len(k) == 3 and k[0] == slot and np.dtype(k[2]) == flat.dtype]:
                del work[k]
            work[key] = flat
        view = flat[:size].reshape(shape)
        work[(slot, shape, dtype)] = view
        return view

    def _needs_grad_copy(self):
        """True when the update rule writes into the gradient (e.g. adds weight decay)."""
        return False

    def _gradients(self):
        """Yield (index, param, grad) for every parameter with a gradient, clipped as configured.

        A generator on purpose: the clipped copies share one scratch buffer, so each must
        be consumed (the parameter updated) before the next is produced.
        """
        items = []
        for i, p in enumerate(self._params):
            grad = p.grad
            if grad is None:
                continue
            if type(grad) is not np.ndarray:
                grad = np.asarray(getattr(grad, "data", grad))   # a Tensor grad is accepted too
            if grad.shape != p.data.shape:
                raise ValueError(f"Parameter {i} has shape {p.data.shape} but its gradient has shape "
                                 f"{grad.shape}: the gradient must match the parameter's shape.")
            items.append((i, p, grad))
        if not items:
            return

        scale = None
        if self.global_clipnorm is not None:
            total = math.sqrt(sum(self._sq_norm(g) for _, _, g in items))
            scale = min(1.0, self.global_clipnorm / (total + 1e-6))
        copy = (self.clipnorm is not None or scale is not None or self.clipvalue is not None
                or self._needs_grad_copy())
        for i, p, grad in items:
            data = p.data
            if copy or grad.dtype != data.dtype:
                buf = self._scratch(0, data.shape, data.dtype)
                np.copyto(buf, grad, casting="same_kind")
                grad = buf
                coef = scale
                if self.clipnorm is not None:
                    coef = min(1.0, self.clipnorm / (math.sqrt(self._sq_norm(grad)) + 1e-6))
                if coef is not None and coef < 1.0:
                    np.multiply(grad, coef, out=grad)
                if self.clipvalue is not None:
                    np.clip(grad, -self.clipvalue, self.clipvalue, out=grad)
            yield i, p, grad

    @staticmethod
    def _sq_norm(g):
        flat = g.reshape(-1)
        return float(np.dot(flat, flat)) if flat.dtype != np.float16 else float(np.sum(flat.astype(np.float64) ** 2))

    def step(self):
        """Update every parameter that has a gradient, in place, then ``iterations += 1``."""
        if self._params is None:
            raise RuntimeError(f"{type(self).__name__} has no parameters: pass them to the constructor "
                               "(`optimizer(model.parameters())`) or call `set_parameters(params)` "
                               "(`model.compile(optimizer=...)` does this).")
        lr = self.learning_rate
        groups = self._groups
        for i, p, grad in self._gradients():
            data = p.data
            work = self._scratch(1, data.shape, data.dtype) if self._n_work else None
            p_lr, p_wd = groups[i] if i < len(groups) else (None, None)
            p_lr = lr if p_lr is None else p_lr
            p_wd = self.weight_decay if p_wd is None else p_wd
            if p_wd:
                np.multiply(data, 1.0 - p_lr * p_wd, out=data)
            self._update(data, grad, self._state[i], p_lr, work)
            constraint = getattr(p, "constraint", None)
            if constraint is not None:
                data[...] = constraint(data)
            bump = getattr(p, "_bump_version", None)
            if bump is not None:
                bump()
        if self._ema is not None: self._ema.after_step(self._params, self._iterations)  # noqa: E701
        self._iterations += 1

    finalize_variable_values = ema.finalize_variable_values   # Keras's: use_ema's weights at the end

    def _update(self, data, grad, state, lr, work):
        """Update one parameter in place.

        Args:
            data: the parameter's ndarray (INOUT, update in place).
            grad: its gradient (IN; writable scratch when ``_needs_grad_copy()``).
            state: this parameter's state dict (INOUT).
            lr: the learning rate for this step (float).
            work: scratch ndarray of the parameter's shape and dtype.
        """
        raise NotImplementedError

    # ---- state and config --------------------------------------------------------
    def _hyperparameters(self):
        return {name: getattr(self, name) for name in self._hyper_names}

    def state_dict(self):
        """The optimizer state as a flat dict of str -> ndarray / float / int / bool.

        Keys: ``"iterations"``, ``"learning_rate"`` (when it is a float), the numeric
        hyperparameters by name, and ``"state.<param index>.<name>"`` per parameter.
        Arrays are copies; everything can go through ``np.savez`` without pickle.
        """
        d = {"iterations": self._iterations}
        if not isinstance(self._learning_rate, _schedules.LearningRateSchedule):
            d["learning_rate"] = float(self._learning_rate)
        for name, value in self._hyperparameters().items():
            if value is not None:
                d[name] = value
        for i, state in enumerate(self._state):
            for name, value in state.items():
                d[f"state.{i}.{name}"] = value.copy() if isinstance(value, np.ndarray) else value
        return d

    def load_state_dict(self, state_dict):
        """Restore ``state_dict()``'s output (values may be 0-d arrays, as from ``np.load``).

        When the optimizer has no parameters yet, the per-parameter state is kept and
        applied by ``set_parameters``.
        """
        if not hasattr(state_dict, "keys"):
            raise TypeError("Invalid value for argument `state_dict`: expected a dict (or an npz "
                            f"mapping). Received: {type(state_dict).__name__}")
        d = {k: state_dict[k] for k in state_dict.keys()}
        per_param = {k: v for k, v in d.items() if k.startswith("state.")}
        if per_param and self._params is None:
            self._pending_state = d
        new_state = [{} for _ in (self._params or [])]
        if self._params is not None:
            for key, value in per_param.items():
                parts = key.split(".")
                if len(parts) != 3 or not parts[1].isdigit():
                    raise ValueError(f"Invalid key {key!r} in `state_dict`: expected "
                                     "'state.<param index>.<name>'.")
                index, name = int(parts[1]), parts[2]
                if index >= len(self._params):
                    raise ValueError(f"`state_dict` has state for parameter {index} but this optimizer "
                                     f"has {len(self._params)} parameters.")
                value = np.asarray(value)
                if value.ndim == 0 and name == "step":
                    new_state[index][name] = int(value)
                    continue
                if value.ndim == 0 and name in self._scalar_state:
                    new_state[index][name] = float(value)
                    continue
                shape = self._params[index].data.shape
                if value.shape != shape:
                    raise ValueError(f"`state_dict` entry {key!r} has shape {value.shape} but parameter "
                                     f"{index} has shape {shape}.")
                new_state[index][name] = np.array(value, dtype=self._params[index].data.dtype, copy=True)
        self._check_state_keys(d)
        for name in self._hyper_names:
            if name in d:
                value = np.asarray(d[name]).item()
                current = getattr(self, name)
                setattr(self, name, type(current)(value) if current is not None else value)
        if "learning_rate" in d and not isinstance(self._learning_rate, _schedules.LearningRateSchedule):
            self.learning_rate = float(np.asarray(d["learning_rate"]))
        if "iterations" in d:
            self.iterations = int(np.asarray(d["iterations"]))
        if self._params is not None:
            self._state = new_state

    def _state_slots(self, d):
        """Names of the per-parameter state a first step creates, under ``d``'s hyperparameters.

        Found by running the update rule once on a 2-element scratch parameter, so it follows
        the configuration (``amsgrad``, ``momentum``, ``centered``, ...) and works for custom
        subclasses too.  None when that dry run fails (then slot names are not checked).
        """
        saved = {name: getattr(self, name) for name in self._hyper_names}
        try:
            for name in self._hyper_names:
                if name in d and saved[name] is not None:
                    setattr(self, name, type(saved[name])(np.asarray(d[name]).item()))
            state = {}
            with np.errstate(all="ignore"):
                data, grad = np.zeros(2), np.zeros(2)
                self._update(data, grad, state, 0.0, np.zeros(2) if self._n_work else None)
            return set(state)
        except Exception:
            return None
        finally:
            for name, value in saved.items():
                setattr(self, name, value)

    def _check_state_keys(self, d):
        """Raise ValueError when ``d`` has keys this optimizer does not know or lacks some.

        Each parameter's state must be complete (all the entries a step creates) or absent
        (the parameter never had a gradient), so a truncated or foreign state dict cannot
        silently drop the moments.
        """
        known = {"iterations", "learning_rate", *self._hyper_names}
        slots = self._state_slots(d)
        unknown, missing = [], []
        if "iterations" not in d:
            missing.append("iterations")
        present = {}
        for key in d:
            parts = str(key).split(".")
            if len(parts) == 3 and parts[0] == "state" and parts[1].isdigit():
                if slots is not None and parts[2] not in slots:
                    unknown.append(key)
                else:
                    present.setdefault(int(parts[1]), set()).add(parts[2])
            elif key not in known:
                unknown.append(key)
        if slots:
            for index in sorted(present):
                missing += [f"state.{index}.{name}" for name in sorted(slots - present[index])]
        if not unknown and not missing:
            return
        cls = type(self).__name__
        problems = []
        if unknown:
            problems.append(f"unknown keys {sorted(map(str, unknown))}")
        if missing:
            problems.append(f"missing keys {missing}")
        hint = ""
        top = {str(k) for k in d if not str(k).startswith("state.")}
        others = [_registry.lookup("optimizer", name) for name in _registry.names("optimizer")]
        for other in dict.fromkeys(others):
            if other is not type(self) and top - {"iterations", "learning_rate"} \
                    and top <= {"iterations", "learning_rate", *other._hyper_names}:
                hint = f" It looks like the state of the {other.__name__} optimizer, not {cls}."
                break
        raise ValueError(f"Invalid value for argument `state_dict`: expected the state of the {cls} "
                         f"optimizer (keys 'iterations', 'learning_rate', {list(self._hyper_names)} "
                         f"and 'state.<param index>.<name>' with name in "
                         f"{sorted(slots) if slots is not None else 'its state'}). "
                         f"Received: {'; '.join(problems)}.{hint}")

    def get_config(self):
        """JSON-able constructor arguments (a schedule is stored as its ``serialize`` dict)."""
        lr = self._learning_rate
        if isinstance(lr, _schedules.LearningRateSchedule):
            lr = _schedules.serialize(lr)
        config = {"name": self.name, "learning_rate": lr}
        config.update(self._hyperparameters())
        config.update(clipnorm=self.clipnorm, clipvalue=self.clipvalue,
                      global_clipnorm=self.global_clipnorm)
        config.update(ema.ema_config(self._ema))
        return config

    @classmethod
    def from_config(cls, config):
        """Create an optimizer (without parameters) from ``get_config()``'s output."""
        config = dict(config)
        lr = config.get("learning_rate")
        if isinstance(lr, dict):
            config["learning_rate"] = _schedules.deserialize(lr)
        return cls(**config)

    def __repr__(self):
        config = self.get_config()
        config.pop("name", None)
        args = ", ".join(f"{k}={v!r}" for k, v in config.items() if v is not None)
        return f"{type(self).__name__}({args})"
