"""Weight constraints (Keras's ``keras.constraints``): projections applied after each step.

A constraint is a callable ``ndarray -> ndarray``. ``Dense(64, kernel_constraint=
constraints.MaxNorm(3))`` stores it on the weight (``layer.kernel.constraint``); every
optimizer applies ``p.data[...] = p.constraint(p.data)`` after its update, in ``fit`` and in a
hand-written loop's ``opt.step()`` alike.

**Axes.** ``axis`` keeps Keras's meaning, given on Keras's kernel layout ``(*spatial, in, out)``
(Dense ``(in, units)``, Conv2D ``(kh, kw, in, filters)``), and is translated to minnet's
PyTorch layout ``(out, in, *spatial)`` when the constraint runs: Keras's last axis (out) is
minnet's axis 0, Keras's ``in`` axis is minnet's axis 1, and the spatial axes follow. So the
default ``axis=0`` of ``MaxNorm`` bounds, for a Dense kernel ``(units, in)``, the norm of each
unit's incoming weights (each row, minnet's axis 1), exactly as in Keras; for a Conv2D kernel
use Keras's ``axis=[0, 1, 2]`` (each filter: minnet's axes 1, 2, 3). A 1-D weight (a bias)
uses its only axis.

Formulas (Keras 3's, ``eps = 1e-7``, ``n`` the L2 norm along the axes): ``MaxNorm``:
``w * clip(n, 0, max_value) / (eps + n)``; ``NonNeg``: ``w * (w >= 0)``; ``UnitNorm``:
``w / (eps + n)``; ``MinMaxNorm``: ``w * (rate * clip(n, min_value, max_value) + (1 - rate) * n)
/ (eps + n)``.

Example:
    >>> from minnet import constraints
    >>> c = constraints.MaxNorm(1.0)
    >>> c(np.array([[3.0, 4.0]], dtype=np.float32)).round(3)   # one unit, norm 5 -> 1
    array([[0.6, 0.8]], dtype=float32)
"""
import numpy as np

from minnet import _registry
from minnet._checks import check_float, invalid
from minnet.config import epsilon

__all__ = ["Constraint", "MaxNorm", "NonNeg", "UnitNorm", "MinMaxNorm", "max_norm", "non_neg",
           "unit_norm", "min_max_norm", "get", "serialize", "deserialize", "keras_axis_to_minnet"]



def _check_axis(axis):
    if isinstance(axis, (int, np.integer)) and not isinstance(axis, bool):
        return int(axis)
    if isinstance(axis, (tuple, list)) and axis and all(
            isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in axis):
        return [int(a) for a in axis]
    raise invalid("axis", "an int or a non-empty list of ints", axis, TypeError)


def keras_axis_to_minnet(axis, ndim):
    """Translate Keras's kernel axis (layout ``(*spatial, in, out)``) to minnet's
    ``(out, in, *spatial)`` for a weight of ``ndim`` dimensions; 1-D weights are unchanged."""
    axes = [axis] if isinstance(axis, int) else list(axis)
    out = []
    for a in axes:
        if not -ndim <= a < ndim:
            raise ValueError(f"Invalid value for argument `axis`: expected axes in [{-ndim}, "
                             f"{ndim}) for a {ndim}-D weight. Received: axis={axis!r}")
        a %= ndim
        if ndim == 1:
            out.append(a)
        elif a == ndim - 1:
            out.append(0)
        elif a == ndim - 2:
            out.append(1)
        else:
            out.append(2 + a)
    return tuple(sorted(set(out)))


def _norms(w, axis):
    return np.sqrt(np.sum(np.square(w), axis=keras_axis_to_minnet(axis, w.ndim), keepdims=True))


class Constraint:
    """Base class: ``__call__(w: ndarray) -> ndarray`` (a new array) and ``get_config()``."""

    def __call__(self, w):
        return w

    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        return f"{type(self).__name__}({args})"


class MaxNorm(Constraint):
    """Rescale so that the norm along ``axis`` is at most ``max_value``.

    Args:
        max_value: float > 0 (default 2).
        axis: Keras's axis (see the module docstring; default 0: per output unit).
    """

    def __init__(self, max_value=2, axis=0):
        self.max_value = check_float("max_value", max_value, low=0.0, low_open=True)
        self.axis = _check_axis(axis)

    def __call__(self, w):
        w = np.asarray(w)
        norms = _norms(w, self.axis)
        desired = np.clip(norms, 0, self.max_value)
        return (w * (desired / (epsilon() + norms))).astype(w.dtype, copy=False)

    def get_config(self):
        return {"max_value": self.max_value, "axis": self.axis}


class NonNeg(Constraint):
    """Zero out negative weights."""

    def __call__(self, w):
        w = np.asarray(w)
        return w * (w >= 0).astype(w.dtype)


class UnitNorm(Constraint):
    """Rescale to unit norm along ``axis`` (Keras's axis, default 0)."""

    def __init__(self, axis=0):
        self.axis = _check_axis(axis)

    def __call__(self, w):
        w = np.asarray(w)
        return (w / (epsilon() + _norms(w, self.axis))).astype(w.dtype, copy=False)

    def get_config(self):
        return {"axis": self.axis}


class MinMaxNorm(Constraint):
    """Keep the norm along ``axis`` within ``[min_value, max_value]``, moving a ``rate`` of the way.

    Args:
        min_value: float >= 0 (default 0.0).
        max_value: float >= min_value (default 1.0).
        rate: float in [0, 1] (default 1.0: project exactly).
        axis: Keras's axis (default 0).
    """

    def __init__(self, min_value=0.0, max_value=1.0, rate=1.0, axis=0):
        self.min_value = check_float("min_value", min_value, low=0.0)
        self.max_value = check_float("max_value", max_value, low=self.min_value)
        self.rate = check_float("rate", rate, low=0.0, high=1.0)
        self.axis = _check_axis(axis)

    def __call__(self, w):
        w = np.asarray(w)
        norms = _norms(w, self.axis)
        desired = self.rate * np.clip(norms, self.min_value, self.max_value) + (1 - self.rate) * norms
        return (w * (desired / (epsilon() + norms))).astype(w.dtype, copy=False)

    def get_config(self):
        return {"min_value": self.min_value, "max_value": self.max_value, "rate": self.rate,
                "axis": self.axis}


max_norm = MaxNorm
non_neg = NonNeg
unit_norm = UnitNorm
min_max_norm = MinMaxNorm

_registry.register("constraint", MaxNorm, aliases=("max_norm", "maxnorm"))
_registry.register("constraint", NonNeg, aliases=("non_neg", "nonneg"))
_registry.register("constraint", UnitNorm, aliases=("unit_norm", "unitnorm"))
_registry.register("constraint", MinMaxNorm, aliases=("min_max_norm", "minmaxnorm"))


def get(identifier):
    """A constraint from None, a name (``"max_norm"``, ``"non_neg"``, ``"unit_norm"``,
    ``"min_max_norm"``), a config dict, a Constraint or a callable."""
    return _registry.get("constraint", identifier)


def serialize(constraint):
    """``{"class_name": "MaxNorm", "config": {...}}`` (None stays None)."""
    if constraint is None:
        return None
    return _registry.serialize("constraint", constraint)


def deserialize(config, custom_objects=None):
    """Inverse of ``serialize``."""
    if config is None:
        return None
    found = _registry.deserialize("constraint", config, custom_objects)
    return found() if isinstance(found, type) else found
