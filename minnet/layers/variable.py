"""Keras's ``keras.Variable``: a weight made outside ``add_weight``.

``mn.Variable(initializer, shape=None, dtype=None, trainable=True, name=None)`` returns an
``mn.Parameter`` (trainable: it gets gradients) or a plain ``mn.Tensor`` (non-trainable
state), both with Keras's ``assign``/``assign_add``/``assign_sub``/``numpy()``/``value``.
Assigned as an attribute of a layer (``self.scale = mn.Variable(...)``), it becomes one of
that layer's weights, as Keras tracks it: in ``weights``, ``trainable_weights`` (or
``non_trainable_weights``), ``get_weights``/``set_weights``, the optimizer's step and the
saved files.
"""
import weakref

import numpy as np

from minnet import initializers
from minnet.autograd import Parameter, Tensor

__all__ = ["Variable", "variable_trainable"]

# id(variable) -> (weak reference, trainable): the tensors made by Variable(), so a layer can
# tell them from other tensors it keeps as attributes (a cached mask, a constant).
_MADE = {}


def Variable(initializer, shape=None, dtype=None, trainable=True, autocast=True,   # noqa: N802 - Keras's name
             aggregation="none", synchronization="auto", name=None):
    """A Keras variable (see the module docstring).

    Args:
        initializer: the initial value (an array, a Tensor, a number), or an initializer
            (``"zeros"``, ``mn.initializers.RandomNormal()``, a callable ``(shape, dtype)``),
            which then needs ``shape``.
        shape: the shape (required with an initializer; checked against a value).
        dtype: default: an array's or Tensor's own dtype; ``float32`` (Keras's floatx) for
            an initializer or a Python float, ``int32`` for a Python int (as Keras).
        trainable: True gives an ``mn.Parameter``.
        autocast, aggregation, synchronization: accepted for Keras's signature (minnet has
            no mixed precision and no distribution strategies).
        name: the variable's name.
    """
    is_initializer = isinstance(initializer, str) or (callable(initializer)
                                                      and not isinstance(initializer, Tensor))
    if is_initializer:
        dtype = np.dtype("float32" if dtype is None else dtype)
        if shape is None:
            raise ValueError(f"Invalid value for argument `shape`: Variable({initializer!r}) needs "
                             f"the shape to initialize. Received: shape=None")
        shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)
        value = initializers.checked_call(initializers.get(initializer), shape,
                                          dtype if dtype.kind == "f" else np.dtype("float64"),
                                          where=f"variable {name or ''}".strip())
    else:
        value = np.asarray(initializer.data if isinstance(initializer, Tensor) else initializer)
        if dtype is None:
            typed = isinstance(initializer, (np.ndarray, np.generic, Tensor))
            dtype = value.dtype if typed else {"f": "float32", "i": "int32", "u": "int32",
                                               "b": "bool"}.get(value.dtype.kind, "float32")
        dtype = np.dtype(dtype)
        if shape is not None and tuple(value.shape) != tuple(shape):
            raise ValueError(f"Invalid value for argument `shape`: the initial value has shape "
                             f"{tuple(value.shape)}. Received: shape={tuple(shape)}")
    value = np.array(value, dtype=dtype)
    if trainable and dtype.kind != "f":
        raise ValueError(f"Invalid value for argument `trainable`: a {dtype.name} variable gets no "
                         f"gradients, so it cannot be trainable. Received: trainable=True")
    variable = Parameter(value) if trainable else Tensor(value)
    variable.name = "variable" if name is None else str(name)
    key = id(variable)
    _MADE[key] = (weakref.ref(variable, lambda _ref, key=key: _MADE.pop(key, None)), bool(trainable))
    return variable


def variable_trainable(value):
    """True/False for a tensor made by ``Variable`` (trainable or not), None for anything else."""
    entry = _MADE.get(id(value))
    if entry is None or entry[0]() is not value:
        return None
    return entry[1]
