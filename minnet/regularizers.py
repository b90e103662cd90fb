"""Weight regularizers (Keras's ``keras.regularizers``): penalties added to the training loss.

A regularizer is a callable ``Tensor -> scalar Tensor``. Give one to a layer
(``Dense(64, kernel_regularizer="l2")``, ``kernel_regularizer=regularizers.L1L2(1e-5, 1e-4)``,
``activity_regularizer=...``) and its value, computed from the current weights with its
graph, appears in ``layer.losses`` / ``model.losses``; ``fit`` adds ``sum(model.losses)``
to the loss it minimises (and reports), as Keras does. In a hand-written loop add it
yourself: ``loss = loss_fn(y, model(x, training=True)) + sum(model.losses)``.

Formulas (Keras 3's): ``L1(l1)``: ``l1 * sum(|w|)``; ``L2(l2)``: ``l2 * sum(w**2)``
(no factor 1/2: PyTorch's ``weight_decay=wd`` in SGD equals ``L2(wd / 2)``);
``L1L2(l1, l2)``: both. The strings ``"l1"``, ``"l2"`` build ``L1()``/``L2()`` with
``0.01``; ``"l1_l2"`` builds ``L1L2()`` (Keras 3: both factors 0.0 unless given).

Example:
    >>> from minnet import regularizers
    >>> reg = regularizers.get("l2")
    >>> float(reg(mn.tensor([1.0, 2.0])).numpy())
    0.05
"""
import numpy as np

from minnet import _registry
from minnet._checks import check_float
from minnet.autograd import Tensor

__all__ = ["Regularizer", "L1", "L2", "L1L2", "l1", "l2", "l1_l2", "OrthogonalRegularizer",
           "orthogonal_regularizer", "get", "serialize", "deserialize"]


def _as_tensor(x):
    return x if isinstance(x, Tensor) else Tensor(np.asarray(x))


class Regularizer:
    """Base class: ``__call__(x) -> scalar Tensor`` and ``get_config()``."""

    def __call__(self, x):
        raise NotImplementedError

    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        return f"{type(self).__name__}({args})"


class L1(Regularizer):
    """``l1 * sum(|x|)``.

    Args:
        l1: float >= 0 (default 0.01).
    """

    def __init__(self, l1=0.01):
        self.l1 = check_float("l1", l1, low=0.0)

    def __call__(self, x):
        return _as_tensor(x).abs().sum() * self.l1

    def get_config(self):
        return {"l1": self.l1}


class L2(Regularizer):
    """``l2 * sum(x ** 2)``.

    Args:
        l2: float >= 0 (default 0.01).
    """

    def __init__(self, l2=0.01):
        self.l2 = check_float("l2", l2, low=0.0)

    def __call__(self, x):
        x = _as_tensor(x)
        return (x * x).sum() * self.l2

    def get_config(self):
        return {"l2": self.l2}


class L1L2(Regularizer):
    """``l1 * sum(|x|) + l2 * sum(x ** 2)``.

    Args:
        l1: float >= 0 (default 0.0, as Keras 3).
        l2: float >= 0 (default 0.0).
    """

    def __init__(self, l1=0.0, l2=0.0):
        self.l1 = check_float("l1", l1, low=0.0)
        self.l2 = check_float("l2", l2, low=0.0)

    def __call__(self, x):
        x = _as_tensor(x)
        terms = []
        if self.l1:
            terms.append(x.abs().sum() * self.l1)
        if self.l2:
            terms.append((x * x).sum() * self.l2)
        if not terms:
            return (x * 0.0).sum()
        return terms[0] + terms[1] if len(terms) == 2 else terms[0]

    def get_config(self):
        return {"l1": self.l1, "l2": self.l2}


# Keras's lower-case names are the classes themselves (``regularizers.l2(1e-4)``).
l1 = L1
l2 = L2
l1_l2 = L1L2

class OrthogonalRegularizer(Regularizer):
    """Keras's ``OrthogonalRegularizer(factor=0.01, mode="rows")``: with the weight's vectors
    normalised to unit length, ``factor * 0.5 * sum(|dot products of distinct pairs|) / pairs``
    (``pairs = n (n - 1) / 2``), pushing them towards orthogonality.

    ``mode`` keeps Keras's meaning for a Dense kernel: ``"rows"`` are the vectors of Keras's
    ``(in, out)`` kernel rows, one per input, which are the **columns** of minnet's
    ``(out, in)`` kernel; ``"columns"`` (one per unit) are minnet's rows. 2-D weights only.
    """

    def __init__(self, factor=0.01, mode="rows"):
        self.factor = check_float("factor", factor, 0.0)
        if mode not in ("rows", "columns"):
            raise ValueError(f"Invalid value for argument `mode`: expected 'rows' or 'columns'. "
                             f"Received: mode={mode!r}")
        self.mode = mode

    def __call__(self, x):
        x = _as_tensor(x)
        if x.ndim != 2:
            raise ValueError(f"OrthogonalRegularizer needs a 2-D weight. Received: "
                             f"shape={tuple(x.shape)}")
        vectors = x.transpose() if self.mode == "rows" else x      # one vector per row
        norms = ((vectors * vectors).sum(axis=1, keepdims=True)).maximum(1e-12).sqrt()
        unit = vectors / norms
        product = unit @ unit.transpose()
        size = product.shape[0]
        off_diagonal = product * (1.0 - np.eye(size, dtype=product.dtype))
        pairs = size * (size - 1.0) / 2.0
        return off_diagonal.abs().sum() * (self.factor * 0.5 / pairs if pairs else 0.0)

    def get_config(self):
        return {"factor": self.factor, "mode": self.mode}


orthogonal_regularizer = OrthogonalRegularizer

_registry.register("regularizer", OrthogonalRegularizer, aliases=("orthogonal_regularizer",))
_registry.register("regularizer", L1, aliases=("l1",))
_registry.register("regularizer", L2, aliases=("l2",))
_registry.register("regularizer", L1L2, aliases=("l1_l2",))


def get(identifier):
    """A regularizer from ``None`` (None), a name (``"l1"``, ``"l2"``, ``"l1_l2"``,
    ``"L2"``), a config dict (``serialize``'s output), a Regularizer or a callable.

    Raises:
        ValueError: unknown name. TypeError: anything else.
    """
    if isinstance(identifier, (int, float)) and not isinstance(identifier, bool):
        raise TypeError(f"Invalid value for argument `regularizer`: expected a name ('l1', 'l2', "
                        f"'l1_l2'), a Regularizer or a callable. Received: {identifier!r} (a "
                        f"number: write regularizers.l2({identifier!r}))")
    return _registry.get("regularizer", identifier)


def serialize(regularizer):
    """``{"class_name": "L2", "config": {"l2": 0.01}}`` (None stays None)."""
    if regularizer is None:
        return None
    return _registry.serialize("regularizer", regularizer)


def deserialize(config, custom_objects=None):
    """Inverse of ``serialize``."""
    if config is None:
        return None
    found = _registry.deserialize("regularizer", config, custom_objects)
    return found() if isinstance(found, type) else found
