"""Loss objects: Keras's classes and argument order, PyTorch's numbers.

A loss object is called as ``loss(y_true, y_pred, sample_weight=None)`` (Keras order) and
returns a scalar ``Tensor`` to call ``.backward()`` on. The PyTorch order
``loss(prediction, target)`` is recognised too, by these rules, in turn:

1. for ``SparseCategoricalCrossentropy``, the integer / label-shaped argument (rank one
   less than the other, or ``(N, 1)`` against ``(N, C)``) is the target;
2. an argument of integer or bool dtype is the target (predictions are never integers);
3. when exactly one argument carries a graph (a Tensor with ``requires_grad`` or a
   ``grad_fn``), it is the prediction;
4. when exactly one argument is a Tensor, it is the prediction;
5. otherwise the Keras order ``(y_true, y_pred)`` is assumed.

Reductions follow PyTorch: ``"none"`` returns the element-wise losses (per sample for the
cross-entropies), ``"sum"`` their sum and ``"mean"`` (alias ``"sum_over_batch_size"``)
their mean. ``sample_weight`` (a scalar, one weight per sample, or one per element)
multiplies the unreduced losses; ``"mean"`` then divides the weighted sum by the number
of loss elements, as Keras does (not by the sum of the weights).

Every loss is built on ``minnet.functional`` (``mse_loss``, ``cross_entropy``, ...), so
forward values and gradients are those of the matching PyTorch module
(``nn.MSELoss``, ``nn.L1Loss``, ``nn.HuberLoss``, ``nn.BCELoss``,
``nn.BCEWithLogitsLoss``, ``nn.CrossEntropyLoss``, ``nn.NLLLoss``).

Example:
    >>> loss_fn = SparseCategoricalCrossentropy(from_logits=True)
    >>> loss = loss_fn(y_batch, model(x_batch))      # or loss_fn(model(x_batch), y_batch)
    >>> loss.backward()
"""
import sys
import warnings

import numpy as np

from . import functional as F
from ._utils import did_you_mean
from .autograd import Tensor

__all__ = [
    "Loss", "LossFunctionWrapper", "MeanSquaredError", "MeanAbsoluteError", "Huber",
    "BinaryCrossentropy", "CategoricalCrossentropy", "SparseCategoricalCrossentropy",
    "get", "serialize", "deserialize",
]

_REDUCTIONS = {"mean": "mean", "sum_over_batch_size": "mean", "auto": "mean", "sum": "sum", "none": "none"}

# Keras's clipping of probabilities before the log (``backend.epsilon()``).
_EPSILON = 1e-7

# Names of the loss classes that already warned "these look like probabilities".
_warned_probabilities = set()


# ---------------------------------------------------------------------------------------
# Argument handling
# ---------------------------------------------------------------------------------------

def _carries_graph(x):
    return isinstance(x, Tensor) and (x.requires_grad or x.grad_fn is not None)


def _raw(x):
    """The ndarray behind a Tensor / ndarray / list (no copy for arrays)."""
    if isinstance(x, Tensor):
        return x.data
    return np.asarray(x)


def _check_numeric(array, argument):
    if array.dtype == object or not (np.issubdtype(array.dtype, np.number) or array.dtype == bool):
        raise TypeError(f"Invalid value for argument `{argument}`: expected an array of numbers. "
                        f"Received: array of dtype {array.dtype}")


def _is_integer(array):
    return array.dtype.kind in "iub"


def _as_prediction(y_pred):
    """A float Tensor (a graph-carrying Tensor is kept as it is)."""
    if isinstance(y_pred, Tensor):
        if y_pred.dtype.kind == "f" and y_pred.dtype.itemsize >= 4:
            return y_pred
        return y_pred.astype(np.float32) if y_pred.requires_grad or y_pred.grad_fn is not None \
            else Tensor(y_pred.data.astype(np.float32))
    array = np.asarray(y_pred)
    _check_numeric(array, "y_pred")
    if array.dtype.kind != "f" or array.dtype.itemsize < 4:
        array = array.astype(np.float32)
    return Tensor(array)


def _as_float_target(y_true, y_pred):
    """The target in the prediction's dtype: a Tensor when it carries a graph (so its
    gradient flows, as ``nn.MSELoss`` gives one), otherwise a plain ndarray."""
    if _carries_graph(y_true):
        return y_true if y_true.dtype == y_pred.dtype else y_true.astype(y_pred.dtype)
    array = _raw(y_true)
    _check_numeric(array, "y_true")
    return array.astype(y_pred.dtype, copy=False)


def _shape_mismatch(y_true, y_pred, extra=""):
    return ValueError(f"`y_true` and `y_pred` must have the same shape{extra}. "
                      f"Received: y_true.shape={tuple(y_true.shape)}, y_pred.shape={tuple(y_pred.shape)}")


def _line_up(y_true, y_pred):
    """Reshape a ``(N,)`` target to a ``(N, 1)`` prediction or the other way round, as Keras
    does (PyTorch would broadcast them to ``(N, N)``); any other mismatch is an error."""
    if tuple(y_true.shape) == tuple(y_pred.shape):
        return y_true
    if int(np.prod(y_true.shape)) == int(np.prod(y_pred.shape)) and \
            tuple(s for s in y_true.shape if s != 1) == tuple(s for s in y_pred.shape if s != 1) and \
            abs(len(y_true.shape) - len(y_pred.shape)) == 1:
        return y_true.reshape(y_pred.shape)
    raise _shape_mismatch(y_true, y_pred)


def _sample_weight(sample_weight, values):
    """``sample_weight`` as an ndarray that broadcasts to ``values.shape`` along the leading
    (batch) axes, in the dtype of ``values``."""
    weight = _raw(sample_weight)
    _check_numeric(weight, "sample_weight")
    weight = weight.astype(values.dtype, copy=False)
    shape = tuple(values.shape)
    if weight.ndim > len(shape) and weight.shape[-1] == 1:
        weight = weight.reshape(weight.shape[:-1])      # (N, 1) weights for (N,) losses
    if weight.ndim <= len(shape):
        weight = weight.reshape(weight.shape + (1,) * (len(shape) - weight.ndim))
        try:
            if np.broadcast_shapes(weight.shape, shape) == shape:
                return weight
        except ValueError:
            pass
    raise ValueError(f"Invalid value for argument `sample_weight`: expected a scalar, one weight per "
                     f"sample (shape {shape[:1]}) or one per loss element (shape {shape}). "
                     f"Received: sample_weight.shape={np.shape(_raw(sample_weight))}")


def _reduce(values, weight, reduction, count=None):
    """Weight the unreduced losses and reduce them (``count`` overrides the mean's divisor)."""
    if weight is not None:
        values = values * weight
    if reduction == "none":
        return values
    total = values.sum()
    if reduction == "sum":
        return total
    count = values.size if count is None else count
    return total * (1.0 / count if count else float("nan"))


def _check_reduction(reduction):
    if reduction not in _REDUCTIONS:
        raise ValueError(f"Invalid value for argument `reduction`: expected one of "
                         f"{sorted(_REDUCTIONS)}. Received: reduction={reduction!r}")
    return _REDUCTIONS[reduction]


def _check_fraction(value, argument):
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)) or not 0.0 <= value <= 1.0:
        raise ValueError(f"Invalid value for argument `{argument}`: expected a float in [0, 1]. "
                         f"Received: {argument}={value!r}")
    return float(value)


def _check_probabilities(y_pred, loss_name):
    data = y_pred.data
    if data.size and (np.any(data < 0) or np.any(data > 1)):
        raise ValueError(
            f"{loss_name}: `y_pred` must hold probabilities in [0, 1] when from_logits=False. "
            f"Received values in [{float(np.nanmin(data)):g}, {float(np.nanmax(data)):g}]; "
            f"pass from_logits=True if `y_pred` are logits (no softmax/sigmoid on the last layer).")


def _warn_if_probabilities(loss, y_pred):
    """Logit losses fed with softmax outputs train badly; say so once per loss class."""
    name = type(loss).__name__
    if name in _warned_probabilities:
        return
    data = y_pred.data
    if data.ndim < 2 or data.shape[-1] < 2 or data.size == 0:
        return
    # Every row must qualify, so a first row that does not settles it (logits almost always
    # have a negative entry there): the whole-array checks run only when it looks like one.
    first = data.reshape(-1, data.shape[-1])[0]
    if first.min() < 0 or first.max() > 1 or abs(float(first.sum()) - 1.0) > 2e-3:
        return
    if np.all((data >= 0) & (data <= 1)) and np.allclose(data.sum(axis=-1), 1.0, atol=1e-3):
        _warned_probabilities.add(name)
        warnings.warn(
            f"{name}(from_logits=True) received `y_pred` that look like probabilities (values in "
            f"[0, 1], rows summing to 1): was a Softmax applied already? Then use "
            f"{name}(from_logits=False), or drop the Softmax and keep from_logits=True.",
            UserWarning, stacklevel=_user_stacklevel())


def _user_stacklevel():
    """``stacklevel`` pointing at the first caller outside this module."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename == __file__:
        frame, level = frame.f_back, level + 1
    return level


# ---------------------------------------------------------------------------------------
# Base classes
# ---------------------------------------------------------------------------------------

class Loss:
    """Base class of the losses.

    A custom loss subclasses ``Loss`` and implements ``call(y_true, y_pred)`` returning the
    unreduced losses as a Tensor (one per sample or per element); ``__call__`` puts the
    arguments in order, applies ``sample_weight`` and the reduction.

    Args:
        reduction: ``"mean"`` (alias ``"sum_over_batch_size"``), ``"sum"`` or ``"none"``.
        name: a name for logs (defaults to the Keras function name, e.g. ``"mean_squared_error"``).

    Example:
        >>> class Quartic(Loss):
        ...     def call(self, y_true, y_pred):
        ...         return ((y_pred - y_true) ** 2) ** 2
    """

    default_name = None
    _sparse = False  # arguments ordered by the sparse-label rule

    def __init__(self, reduction="mean", name=None):
        self.reduction = _check_reduction(reduction)
        if name is not None and not isinstance(name, str):
            raise TypeError(f"Invalid value for argument `name`: expected a str. Received: name={name!r}")
        self.name = name or self.default_name or _snake_case(type(self).__name__)

    # -- public -----------------------------------------------------------------------
    def __call__(self, y_true, y_pred, sample_weight=None):
        """Compute the loss.

        Args:
            y_true: targets (ndarray, list or Tensor).
            y_pred: predictions (Tensor, usually carrying a graph). The PyTorch order
                ``loss(y_pred, y_true)`` is recognised (see the module docstring).
            sample_weight: optional scalar, ``(N,)`` or element-wise weights.

        Returns:
            A scalar Tensor (``"mean"``/``"sum"``) or the unreduced losses (``"none"``).
        """
        y_true, y_pred = self._arrange(y_true, y_pred)
        y_true, y_pred = self._prepare(y_true, y_pred)
        if sample_weight is None:
            return self._forward(y_true, y_pred, self.reduction)
        values = _as_tensor(self._forward(y_true, y_pred, "none"))
        return _reduce(values, _sample_weight(sample_weight, values), self.reduction)

    def call(self, y_true, y_pred):
        """The unreduced losses (override in custom losses)."""
        raise NotImplementedError(f"{type(self).__name__} must implement call(y_true, y_pred).")

    def get_config(self):
        """JSON-able constructor arguments."""
        return {"reduction": self.reduction, "name": self.name}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        args = ", ".join(f"{key}={value!r}" for key, value in self.get_config().items())
        return f"{type(self).__name__}({args})"

    # -- hooks ------------------------------------------------------------------------
    def _prepare(self, y_true, y_pred):
        """Convert and validate: ``y_pred`` becomes a float Tensor, ``y_true`` a Tensor in
        its dtype (custom losses get Tensors for both)."""
        y_pred = _as_prediction(y_pred)
        y_true = _as_float_target(y_true, y_pred)
        if not isinstance(y_true, Tensor):
            y_true = Tensor(y_true)
        return y_true, y_pred

    def _forward(self, y_true, y_pred, reduction):
        return _reduce(_as_tensor(self.call(y_true, y_pred)), None, reduction)

    def _arrange(self, first, second):
        """(y_true, y_pred) from the two arguments, in either order (rules in the module doc)."""
        a, b = _raw(first), _raw(second)
        if self._sparse:
            a_label, b_label = _looks_like_labels(a, b), _looks_like_labels(b, a)
            if a_label != b_label:
                return (first, second) if a_label else (second, first)
        a_int, b_int = _is_integer(a), _is_integer(b)
        if a_int != b_int:
            return (first, second) if a_int else (second, first)
        a_graph, b_graph = _carries_graph(first), _carries_graph(second)
        if a_graph != b_graph:
            return (second, first) if a_graph else (first, second)
        a_tensor, b_tensor = isinstance(first, Tensor), isinstance(second, Tensor)
        if a_tensor != b_tensor:
            return (second, first) if a_tensor else (first, second)
        return first, second


def _looks_like_labels(x, other):
    if _is_integer(x):
        return True
    if x.ndim == other.ndim - 1:
        return True
    return x.ndim == other.ndim >= 2 and x.shape[-1] == 1 and other.shape[-1] > 1


def _as_tensor(values):
    return values if isinstance(values, Tensor) else Tensor(np.asarray(values))


def _snake_case(name):
    out = []
    for i, char in enumerate(name):
        if char.isupper() and i and not name[i - 1].isupper():
            out.append("_")
        out.append(char.lower())
    return "".join(out)


class LossFunctionWrapper(Loss):
    """A loss from a function ``fn(y_true, y_pred, **kwargs) -> unreduced losses``.

    Args:
        fn: the function; it receives Tensors (``y_true`` in ``y_pred``'s dtype).
        reduction: as for ``Loss``.
        name: defaults to ``fn.__name__``.
        **kwargs: passed to ``fn``.
    """

    def __init__(self, fn, reduction="mean", name=None, **kwargs):
        if not callable(fn):
            raise TypeError(f"Invalid value for argument `fn`: expected a callable. Received: fn={fn!r}")
        self.fn = fn
        self._fn_kwargs = kwargs
        super().__init__(reduction=reduction, name=name or getattr(fn, "__name__", "loss"))

    def call(self, y_true, y_pred):
        return self.fn(y_true, y_pred, **self._fn_kwargs)

    def get_config(self):
        return {"reduction": self.reduction, "name": self.name, **self._fn_kwargs}


# ---------------------------------------------------------------------------------------
# Regression losses
# ---------------------------------------------------------------------------------------

class _ElementwiseLoss(Loss):
    """Losses on two same-shaped arrays (targets may carry a graph and get gradients)."""

    def _prepare(self, y_true, y_pred):
        y_pred = _as_prediction(y_pred)
        y_true = _line_up(_as_float_target(y_true, y_pred), y_pred)
        return y_true, y_pred

    def call(self, y_true, y_pred):
        """Element-wise losses (no reduction, no weighting)."""
        return self._forward(*self._prepare(*self._arrange(y_true, y_pred)), "none")


class MeanSquaredError(_ElementwiseLoss):
    """Mean of ``(y_pred - y_true)**2`` (``nn.MSELoss``); the target gets a gradient too
    when it requires grad.

    Args:
        reduction: ``"mean"``, ``"sum"`` or ``"none"``.
        name: log name (``"mean_squared_error"``).

    Shape:
        y_true, y_pred: any shape, the same (``(N,)`` against ``(N, 1)`` is lined up).
        Output: scalar, or the shape of ``y_pred`` with ``reduction="none"``.

    Example:
        >>> MeanSquaredError()([1.0, 2.0], mn.tensor([1.5, 2.0], requires_grad=True)).item()
        0.125
    """

    default_name = "mean_squared_error"

    def _forward(self, y_true, y_pred, reduction):
        return F.mse_loss(y_pred, y_true, reduction=reduction)


class MeanAbsoluteError(_ElementwiseLoss):
    """Mean of ``|y_pred - y_true|`` (``nn.L1Loss``; gradient ``sign(y_pred - y_true)``, 0 at 0).

    Args:
        reduction: ``"mean"``, ``"sum"`` or ``"none"``.
        name: log name (``"mean_absolute_error"``).

    Shape:
        y_true, y_pred: any shape, the same. Output: scalar, or ``y_pred``'s shape.

    Example:
        >>> MeanAbsoluteError()([1.0, 2.0], mn.tensor([1.5, 2.0])).item()
        0.25
    """

    default_name = "mean_absolute_error"

    def _forward(self, y_true, y_pred, reduction):
        return F.l1_loss(y_pred, y_true, reduction=reduction)


class Huber(_ElementwiseLoss):
    """Huber loss (``nn.HuberLoss``, Keras ``Huber``): with ``d = y_pred - y_true``,
    ``0.5 * d**2`` where ``|d| <= delta`` and ``delta * (|d| - 0.5 * delta)`` elsewhere.

    Args:
        delta: positive float where the loss turns from quadratic to linear.
        reduction: ``"mean"``, ``"sum"`` or ``"none"``.
        name: log name (``"huber_loss"``).

    Shape:
        y_true, y_pred: any shape, the same. Output: scalar, or ``y_pred``'s shape.

    Example:
        >>> Huber(delta=1.0)([0.0], mn.tensor([3.0])).item()
        2.5
    """

    default_name = "huber_loss"

    def __init__(self, delta=1.0, reduction="mean", name=None):
        if isinstance(delta, bool) or not isinstance(delta, (int, float, np.number)) \
                or not np.isfinite(delta) or delta <= 0:
            raise ValueError(f"Invalid value for argument `delta`: expected a positive float. "
                             f"Received: delta={delta!r}")
        self.delta = float(delta)
        super().__init__(reduction=reduction, name=name)

    def _forward(self, y_true, y_pred, reduction):
        return F.huber_loss(y_pred, y_true, delta=self.delta, reduction=reduction)

    def get_config(self):
        return {"delta": self.delta, **super().get_config()}


# ---------------------------------------------------------------------------------------
# Classification losses
# ---------------------------------------------------------------------------------------

class BinaryCrossentropy(_ElementwiseLoss):
    """Binary cross-entropy ``-(t log p + (1 - t) log(1 - p))`` per element.

    With ``from_logits=False`` (``nn.BCELoss``) ``y_pred`` are probabilities and each log is
    clamped at -100 as PyTorch does; with ``from_logits=True`` (``nn.BCEWithLogitsLoss``)
    ``y_pred`` are logits and the sigmoid is fused in, stable for any magnitude.

    Args:
        from_logits: whether ``y_pred`` are logits rather than probabilities.
        label_smoothing: float in [0, 1]; targets become ``t * (1 - s) + 0.5 * s``.
        reduction: ``"mean"``, ``"sum"`` or ``"none"``.
        name: log name (``"binary_crossentropy"``).

    Shape:
        y_true, y_pred: any shape, the same (``(N,)`` labels against ``(N, 1)`` outputs is
        lined up). Output: scalar, or ``y_pred``'s shape with ``reduction="none"``.

    Example:
        >>> BinaryCrossentropy(from_logits=True)([1, 0], mn.tensor([[2.0], [-1.0]]))
    """

    default_name = "binary_crossentropy"

    def __init__(self, from_logits=False, label_smoothing=0.0, reduction="mean", name=None):
        self.from_logits = bool(from_logits)
        self.label_smoothing = _check_fraction(label_smoothing, "label_smoothing")
        super().__init__(reduction=reduction, name=name)

    def _prepare(self, y_true, y_pred):
        y_true, y_pred = super()._prepare(y_true, y_pred)
        if not self.from_logits:
            _check_probabilities(y_pred, type(self).__name__)
        if self.label_smoothing:
            y_true = y_true * (1.0 - self.label_smoothing) + 0.5 * self.label_smoothing
        return y_true, y_pred

    def _forward(self, y_true, y_pred, reduction):
        if self.from_logits:
            return F.binary_cross_entropy_with_logits(y_pred, y_true, reduction=reduction)
        return F.binary_cross_entropy(y_pred, y_true, reduction=reduction)

    def get_config(self):
        return {"from_logits": self.from_logits, "label_smoothing": self.label_smoothing,
                **super().get_config()}


def _clipped_log(probabilities):
    """``log(clip(p, eps, 1 - eps))`` as Keras computes it (zero gradient where clipped)."""
    return probabilities.clip(_EPSILON, 1.0 - _EPSILON).log()


def _check_class_axis(y_pred, loss_name):
    if y_pred.ndim < 2:
        raise ValueError(f"{loss_name}: expected `y_pred` of shape (batch, classes) (or (..., classes)). "
                         f"Received: y_pred.shape={tuple(y_pred.shape)}")


class CategoricalCrossentropy(Loss):
    """Cross-entropy with one-hot or probability targets, per sample:
    ``-sum_c t_c log q_c`` with ``q = softmax(y_pred)`` (``from_logits=True``, the fused
    ``nn.CrossEntropyLoss`` with probability targets) or ``q = clip(y_pred, 1e-7, 1 - 1e-7)``
    (``from_logits=False``, Keras's probabilities).

    Label smoothing is PyTorch's (and Keras's): ``t <- (1 - s) t + s / C``.

    Args:
        from_logits: whether ``y_pred`` are logits (recommended: drop the final Softmax).
        label_smoothing: float in [0, 1].
        reduction: ``"mean"``, ``"sum"`` or ``"none"`` (one loss per sample).
        name: log name (``"categorical_crossentropy"``).

    Shape:
        y_true, y_pred: ``(N, C)`` (or ``(..., C)``), the same. Output: scalar or ``(N,)``.

    Example:
        >>> CategoricalCrossentropy(from_logits=True)(np.eye(3)[[0, 2]], mn.tensor(np.zeros((2, 3))))
    """

    default_name = "categorical_crossentropy"

    def __init__(self, from_logits=False, label_smoothing=0.0, reduction="mean", name=None):
        self.from_logits = bool(from_logits)
        self.label_smoothing = _check_fraction(label_smoothing, "label_smoothing")
        super().__init__(reduction=reduction, name=name)

    def _prepare(self, y_true, y_pred):
        y_pred = _as_prediction(y_pred)
        name = type(self).__name__
        _check_class_axis(y_pred, name)
        y_true = _as_float_target(y_true, y_pred)
        if tuple(y_true.shape) != tuple(y_pred.shape):
            hint = ""
            if len(y_true.shape) == len(y_pred.shape) - 1:
                hint = " (integer labels need SparseCategoricalCrossentropy)"
            raise _shape_mismatch(y_true, y_pred, hint)
        if self.from_logits:
            _warn_if_probabilities(self, y_pred)
        else:
            _check_probabilities(y_pred, name)
        return y_true, y_pred

    def call(self, y_true, y_pred):
        """Per-sample losses (no reduction, no weighting)."""
        return self._forward(*self._prepare(*self._arrange(y_true, y_pred)), "none")

    def _forward(self, y_true, y_pred, reduction):
        n_classes = y_pred.shape[-1]
        if self.from_logits:
            batch_shape = tuple(y_pred.shape[:-1])
            if len(batch_shape) != 1:  # (..., C) -> (M, C) for the fused kernel
                y_pred = y_pred.reshape(-1, n_classes)
                y_true = y_true.reshape(-1, n_classes)
            out = F.cross_entropy(y_pred, y_true, label_smoothing=self.label_smoothing,
                                  reduction=reduction)
            if reduction == "none" and len(batch_shape) != 1:
                out = out.reshape(batch_shape)
            return out
        if self.label_smoothing:
            y_true = y_true * (1.0 - self.label_smoothing) + self.label_smoothing / n_classes
        values = -(_clipped_log(y_pred) * y_true).sum(axis=-1)
        return _reduce(values, None, reduction)

    def get_config(self):
        return {"from_logits": self.from_logits, "label_smoothing": self.label_smoothing,
                **super().get_config()}


class SparseCategoricalCrossentropy(Loss):
    """Cross-entropy with integer class labels (``nn.CrossEntropyLoss`` on logits with
    ``from_logits=True``, ``nn.NLLLoss`` on ``log(clip(y_pred, 1e-7, 1 - 1e-7))`` otherwise).

    Args:
        from_logits: whether ``y_pred`` are logits (recommended: drop the final Softmax).
        ignore_class: optional label whose samples contribute nothing (PyTorch's
            ``ignore_index``); ``"mean"`` then averages over the other samples only.
        reduction: ``"mean"``, ``"sum"`` or ``"none"`` (one loss per sample, 0 where ignored).
        name: log name (``"sparse_categorical_crossentropy"``).

    Shape:
        y_true: ``(N,)`` or ``(N, 1)`` integer labels in ``[0, C)`` (or ``(...)`` with
        ``y_pred`` of shape ``(..., C)``); y_pred: ``(N, C)``. Output: scalar or ``(N,)``.

    Example:
        >>> SparseCategoricalCrossentropy(from_logits=True)([0, 2], mn.tensor(np.zeros((2, 3))))
    """

    default_name = "sparse_categorical_crossentropy"
    _sparse = True

    def __init__(self, from_logits=False, ignore_class=None, reduction="mean", name=None):
        self.from_logits = bool(from_logits)
        if ignore_class is not None and (isinstance(ignore_class, bool)
                                         or not isinstance(ignore_class, (int, np.integer))):
            raise ValueError(f"Invalid value for argument `ignore_class`: expected an int or None. "
                             f"Received: ignore_class={ignore_class!r}")
        self.ignore_class = None if ignore_class is None else int(ignore_class)
        super().__init__(reduction=reduction, name=name)

    def __call__(self, y_true, y_pred, sample_weight=None):
        if self.ignore_class is None:
            return super().__call__(y_true, y_pred, sample_weight)
        y_true, y_pred = self._prepare(*self._arrange(y_true, y_pred))
        valid = y_true != self.ignore_class
        labels = np.where(valid, y_true, 0)
        values = self._forward(labels, y_pred, "none")
        weight = valid.astype(values.dtype)
        if sample_weight is not None:
            weight = weight * _sample_weight(sample_weight, values)
        return _reduce(values, weight, self.reduction, count=int(valid.sum()))

    def _prepare(self, y_true, y_pred):
        name = type(self).__name__
        y_pred = _as_prediction(y_pred)
        _check_class_axis(y_pred, name)
        labels = _raw(y_true)
        _check_numeric(labels, "y_true")
        batch_shape = tuple(y_pred.shape[:-1])
        if labels.shape != batch_shape and labels.shape == batch_shape + (1,):
            labels = labels.reshape(batch_shape)
        if labels.shape != batch_shape:
            hint = ", one-hot targets need CategoricalCrossentropy" if labels.shape == tuple(y_pred.shape) else ""
            raise ValueError(f"{name}: expected integer labels `y_true` of shape {batch_shape} (or "
                             f"{batch_shape + (1,)}) for y_pred.shape={tuple(y_pred.shape)}{hint}. "
                             f"Received: y_true.shape={labels.shape}")
        if not _is_integer(labels):
            if labels.size and not np.all(np.isfinite(labels) & (labels == np.round(labels))):
                raise ValueError(f"Invalid value for argument `y_true`: expected integer class labels. "
                                 f"Received non-integer values, e.g. {labels[labels != np.round(labels)][:3]}")
        labels = labels.astype(np.int64, copy=False)
        n_classes = y_pred.shape[-1]
        checked = labels if self.ignore_class is None else labels[labels != self.ignore_class]
        if checked.size and (checked.min() < 0 or checked.max() >= n_classes):
            bad = checked[(checked < 0) | (checked >= n_classes)]
            raise ValueError(f"Invalid value for argument `y_true`: expected class labels in "
                             f"[0, {n_classes}) for y_pred with {n_classes} classes. Received: "
                             f"{bad.size} label(s) out of range, e.g. {int(bad[0])} "
                             f"(min {int(checked.min())}, max {int(checked.max())})")
        if self.from_logits:
            _warn_if_probabilities(self, y_pred)
        else:
            _check_probabilities(y_pred, name)
        return labels, y_pred

    def call(self, y_true, y_pred):
        """Per-sample losses (no reduction, no weighting, ignored samples not masked)."""
        return self._forward(*self._prepare(*self._arrange(y_true, y_pred)), "none")

    def _forward(self, labels, y_pred, reduction):
        batch_shape = tuple(y_pred.shape[:-1])
        if len(batch_shape) != 1:  # (..., C) -> (M, C)
            y_pred = y_pred.reshape(-1, y_pred.shape[-1])
            labels = labels.reshape(-1)
        if self.from_logits:
            out = F.cross_entropy(y_pred, labels, reduction=reduction)
        else:
            out = F.nll_loss(_clipped_log(y_pred), labels, reduction=reduction)
        if reduction == "none" and len(batch_shape) != 1:
            out = out.reshape(batch_shape)
        return out

    def get_config(self):
        return {"from_logits": self.from_logits, "ignore_class": self.ignore_class,
                **super().get_config()}


# ---------------------------------------------------------------------------------------
# Lookup by name, serialisation
# ---------------------------------------------------------------------------------------

_CLASSES = {cls.__name__: cls for cls in (
    MeanSquaredError, MeanAbsoluteError, Huber, BinaryCrossentropy, CategoricalCrossentropy,
    SparseCategoricalCrossentropy,
)}

_ALIASES = {
    "mse": MeanSquaredError, "mean_squared_error": MeanSquaredError,
    "mae": MeanAbsoluteError, "mean_absolute_error": MeanAbsoluteError,
    "huber": Huber, "huber_loss": Huber,
    "binary_crossentropy": BinaryCrossentropy, "bce": BinaryCrossentropy,
    "categorical_crossentropy": CategoricalCrossentropy, "cce": CategoricalCrossentropy,
    "sparse_categorical_crossentropy": SparseCategoricalCrossentropy,
    "scce": SparseCategoricalCrossentropy,
}


def get(identifier):
    """Resolve a loss identifier.

    Args:
        identifier: a ``Loss`` instance (returned as is), a ``Loss`` subclass, a name
            (``"mse"``, ``"mae"``, ``"huber"``, ``"binary_crossentropy"``,
            ``"categorical_crossentropy"``, ``"sparse_categorical_crossentropy"``, their long
            forms, or a class name), a ``serialize`` dict, a callable
            ``fn(y_true, y_pred) -> unreduced losses`` (wrapped in ``LossFunctionWrapper``),
            or None (returned as is).

    Returns:
        A ``Loss`` (or None).

    Example:
        >>> get("sparse_categorical_crossentropy")
        SparseCategoricalCrossentropy(from_logits=False, ignore_class=None, reduction='mean', ...)
    """
    if identifier is None or isinstance(identifier, Loss):
        return identifier
    if isinstance(identifier, type) and issubclass(identifier, Loss):
        return identifier()
    if isinstance(identifier, str):
        if identifier in _ALIASES:
            return _ALIASES[identifier]()
        if identifier in _CLASSES:
            return _CLASSES[identifier]()
        known = sorted(set(_ALIASES) | set(_CLASSES))
        raise ValueError(f"Invalid value for argument `identifier`: expected one of "
                         f"{known}, a Loss or a callable. "
                         f"Received: identifier={identifier!r}." + did_you_mean(identifier, known))
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if callable(identifier):
        return LossFunctionWrapper(identifier)
    raise TypeError(f"Invalid value for argument `identifier`: expected a str, a Loss or a callable. "
                    f"Received: identifier={identifier!r}")


def serialize(loss):
    """``{"class_name": ..., "config": ...}`` (JSON-able) for a loss object."""
    if not isinstance(loss, Loss):
        raise TypeError(f"Invalid value for argument `loss`: expected a Loss. Received: loss={loss!r}")
    if isinstance(loss, LossFunctionWrapper):
        raise ValueError(f"Cannot serialize loss {loss.name!r} made from a function; subclass Loss "
                         f"and register it with custom_objects instead.")
    return {"class_name": type(loss).__name__, "config": loss.get_config()}


def deserialize(config, custom_objects=None):
    """Inverse of ``serialize``; ``custom_objects`` maps class names to custom Loss classes."""
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError(f"Invalid value for argument `config`: expected a dict with 'class_name'. "
                         f"Received: config={config!r}")
    classes = dict(_CLASSES, **(custom_objects or {}))
    name = config["class_name"]
    if name not in classes:
        raise ValueError(f"Unknown loss class {name!r}: expected one of {sorted(classes)}; pass "
                         f"custom ones in `custom_objects`." + did_you_mean(name, classes))
    return classes[name].from_config(dict(config.get("config", {})))
