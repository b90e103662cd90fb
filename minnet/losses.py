"""Loss objects: Keras's classes, argument order and reductions; PyTorch's numbers.

A loss object is called as ``loss(y_true, y_pred, sample_weight=None)``, **always in
Keras's order**, and returns a scalar ``Tensor`` to call ``.backward()`` on. (The
functions of ``minnet.functional`` take PyTorch's order, ``(input, target)``.) Nothing is
guessed: a call that looks swapped still computes what it was asked, and warns, naming
both orders, when ``y_true`` carries a graph from an operation while ``y_pred`` carries
none, or (probability losses) when ``y_pred`` holds only exact 0/1 values or one-hot rows
while ``y_true`` does not. A ``y_true`` that requires grad gets its gradient.

Each loss first computes one value per sample (Keras: the mean over the last axis for the
element-wise losses, the sum over classes for the cross-entropies), then reduces them as
Keras 3 does: ``"sum_over_batch_size"`` (default; alias ``"mean"``) divides the weighted
sum by the number of per-sample values (0 when there are none, never NaN), ``"sum"``
returns the weighted sum, ``"none"`` / ``None`` the weighted per-sample values, and
``"mean_with_sample_weight"`` divides by the sum of the weights. Inputs of rank 1 are
one value per sample (``(N,)`` against ``(N, 1)`` is lined up, as Keras does).

Every loss is built on ``minnet.functional`` and the autograd, so values and gradients
are those of the matching PyTorch module where there is one (``nn.MSELoss``,
``nn.L1Loss``, ``nn.HuberLoss``, ``nn.BCELoss``, ``nn.BCEWithLogitsLoss``,
``nn.CrossEntropyLoss``, ``nn.KLDivLoss``, ``nn.PoissonNLLLoss``, ...).

Example:
    >>> loss_fn = SparseCategoricalCrossentropy(from_logits=True)
    >>> loss = loss_fn(y_batch, model(x_batch))      # Keras order: (y_true, y_pred)
    >>> loss.backward()
"""
import warnings

import numpy as np

from minnet import _registry
from minnet import functional as F
from minnet._checks import check_float, check_labels, invalid
from minnet._utils import user_stacklevel
from minnet.autograd import Tensor
from minnet.layers.base import get_keras_mask

__all__ = [
    "Loss", "LossFunctionWrapper", "MeanSquaredError", "MeanAbsoluteError", "Huber",
    "BinaryCrossentropy", "CategoricalCrossentropy", "SparseCategoricalCrossentropy",
    "KLDivergence", "Hinge", "SquaredHinge", "CategoricalHinge", "CosineSimilarity",
    "MeanSquaredLogarithmicError", "MeanAbsolutePercentageError", "Poisson", "LogCosh",
    "CategoricalFocalCrossentropy", "BinaryFocalCrossentropy",
    "get", "serialize", "deserialize",
]

# Keras 3's reduction names (and Keras 2's "auto") -> what the reduction does.
_REDUCTIONS = {"sum_over_batch_size": "mean", "mean": "mean", "auto": "mean", "sum": "sum",
               "none": "none", None: "none", "mean_with_sample_weight": "weighted_mean"}

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


def _as_prediction(y_pred):
    """A float Tensor (a graph-carrying Tensor is kept as it is)."""
    if isinstance(y_pred, Tensor):
        if y_pred.dtype.kind == "f" and y_pred.dtype.itemsize >= 4:
            return y_pred
        return y_pred.astype(np.float32) if _carries_graph(y_pred) \
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
                      f"Received: y_true.shape={tuple(y_true.shape)}, "
                      f"y_pred.shape={tuple(y_pred.shape)}. Loss objects take Keras's order "
                      f"loss(y_true, y_pred); minnet.functional takes PyTorch's (input, target).")


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
                     f"sample (shape {shape[:1]}) or one per loss value (shape {shape}). "
                     f"Received: sample_weight.shape={np.shape(_raw(sample_weight))}")


def _reduce(values, weight, reduction, count=None):
    """Weight the per-sample losses and reduce them as Keras 3 does.

    ``count`` overrides the divisor of the mean (the non-ignored samples); a divisor of 0
    gives 0 with a zero gradient (Keras's ``divide_no_nan``), never NaN.
    """
    kind = _REDUCTIONS[reduction]
    if weight is not None:
        values = values * weight
    if kind == "none" or values.ndim == 0:
        return values
    total = values.sum()
    if kind == "sum":
        return total
    if kind == "weighted_mean" and weight is not None:
        count = float(np.broadcast_to(weight, values.shape).sum())
    elif count is None:
        count = values.size
    return total * (1.0 / count if count else 0.0)


def _masked_reduce(values, mask, sample_weight, reduction):
    """Keras 3's ``apply_mask``: the per-step losses weighted by the (batch, timesteps) mask
    carried by ``y_pred`` (``Embedding(mask_zero=True)``, ``Masking``, ...).

    Masked steps get weight 0. For ``"sum_over_batch_size"`` the unmasked ones get
    ``total / valid`` (mask size over unmasked count, 0 when nothing is unmasked), so the
    mean over all values is ``sum(loss * sample_weight * mask) / valid``: the mean over the
    unmasked steps. ``"sum"`` sums the unmasked steps; ``"mean_with_sample_weight"`` divides
    by ``sum(sample_weight * mask)``; ``"none"`` returns the values times the mask.
    """
    mask = np.asarray(mask, dtype=bool)
    shape = tuple(values.shape)
    if shape[:mask.ndim] != mask.shape:
        raise ValueError(f"The mask carried by `y_pred` has shape {mask.shape} (batch, timesteps) "
                         f"but the per-sample losses have shape {shape}: a masked output needs "
                         f"one loss per time step (e.g. targets of shape {mask.shape}).")
    weight = mask.astype(values.dtype).reshape(mask.shape + (1,) * (len(shape) - mask.ndim))
    if _REDUCTIONS[reduction] == "mean":
        valid = int(mask.sum())
        weight = weight * (mask.size / valid if valid else 0.0)
    if sample_weight is not None:
        weight = weight * _sample_weight(sample_weight, values)
    return _reduce(values, weight, reduction)


def _check_reduction(reduction):
    if reduction not in _REDUCTIONS:
        raise invalid("reduction", "one of 'sum_over_batch_size', 'sum', 'none', None, 'mean' or "
                      "'mean_with_sample_weight'", reduction)
    return reduction


def _check_fraction(value, argument):
    return check_float(argument, value, 0.0, 1.0)


def _check_probabilities(y_pred, loss_name):
    data = y_pred.data
    if data.size and not (data.min() >= 0 and data.max() <= 1):
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
            UserWarning, stacklevel=user_stacklevel())


def _hard_values(x, one_hot):
    """True when ``x`` holds only exact 0/1 values (and, with ``one_hot``, one 1 per row)."""
    data = _raw(x)
    if data.size == 0 or data.dtype.kind not in "fiub":
        return False
    first = data.flat[0]
    if first != 0 and first != 1:        # the usual prediction settles it at once
        return False
    if not np.all((data == 0) | (data == 1)):
        return False
    if one_hot:
        return data.ndim >= 1 and bool(np.all(data.sum(axis=-1) == 1))
    return True


def _warn_if_swapped(loss, y_true, y_pred, probability=None):
    """Warn (never swap) when a call looks like PyTorch's order ``loss(y_pred, y_true)``.

    Args:
        probability: None for losses of any values; ``"binary"`` or ``"one_hot"`` for the
            probability losses, whose targets are 0/1 values or one-hot rows.
    """
    reason = None
    if isinstance(y_true, Tensor) and y_true.grad_fn is not None and not _carries_graph(y_pred):
        reason = ("`y_true` carries a graph from an operation (it looks like a model output) "
                  "while `y_pred` carries none")
    elif probability is not None and not _carries_graph(y_pred):
        one_hot = probability == "one_hot"
        if _hard_values(y_pred, one_hot) and not _hard_values(y_true, one_hot):
            what = "one-hot rows" if one_hot else "exact 0/1 values"
            reason = (f"`y_pred` holds only {what} (it looks like the targets) while `y_true` "
                      f"does not")
    if reason is not None:
        name = type(loss).__name__
        warnings.warn(
            f"{name} was called as loss(y_true, y_pred), but the arguments look swapped: {reason}. "
            f"Loss objects take Keras's order, {name}()(y_true, y_pred); minnet.functional takes "
            f"PyTorch's order, (input, target). If the first argument is the prediction, swap "
            f"them.", UserWarning, stacklevel=user_stacklevel())


def _as_tensor(values):
    return values if isinstance(values, Tensor) else Tensor(np.asarray(values))


def _per_sample_mean(values):
    """Keras's mean over the last axis; rank-1 values are already one per sample."""
    return values if values.ndim <= 1 else values.mean(axis=-1)


def _per_sample_sum(values):
    return values if values.ndim <= 1 else values.sum(axis=-1)


# ---------------------------------------------------------------------------------------
# Base classes
# ---------------------------------------------------------------------------------------

class Loss:
    """Base class of the losses.

    A custom loss subclasses ``Loss`` and implements ``call(y_true, y_pred)`` returning the
    per-sample losses as a Tensor; ``__call__`` converts the arguments to Tensors (``y_true``
    in ``y_pred``'s dtype), applies ``sample_weight`` and the reduction.

    Args:
        reduction: ``"sum_over_batch_size"`` (default; alias ``"mean"``), ``"sum"``,
            ``"none"`` / ``None`` or ``"mean_with_sample_weight"`` (Keras 3's meanings).
        name: a name for logs (defaults to the Keras function name, e.g. ``"mean_squared_error"``).

    Example:
        >>> class Quartic(Loss):
        ...     def call(self, y_true, y_pred):
        ...         return (((y_pred - y_true) ** 2) ** 2).mean(axis=-1)
    """

    default_name = None
    # "binary" / "one_hot" for the probability losses (see _warn_if_swapped).
    _probability = None

    def __init__(self, reduction="sum_over_batch_size", name=None, dtype=None):
        self.reduction = _check_reduction(reduction)
        if name is not None and not isinstance(name, str):
            raise TypeError(f"Invalid value for argument `name`: expected a str. Received: name={name!r}")
        self.name = name or self.default_name or _registry.snake_case(type(self).__name__)
        self.dtype = dtype

    # -- public -----------------------------------------------------------------------
    def __call__(self, y_true, y_pred, sample_weight=None):
        """Compute the loss.

        Args:
            y_true: targets (ndarray, list or Tensor; a Tensor that requires grad gets one).
            y_pred: predictions (Tensor, usually carrying a graph).
            sample_weight: optional scalar, ``(N,)`` or per-value weights.

        When ``y_pred`` carries a (batch, timesteps) mask (``Embedding(mask_zero=True)``,
        ``Masking``), the masked steps weigh 0 and the default reduction averages over the
        unmasked steps only (Keras 3's ``apply_mask``).

        Returns:
            A scalar Tensor, or the per-sample losses with ``reduction="none"``.
        """
        _warn_if_swapped(self, y_true, y_pred, self._probability)
        mask = get_keras_mask(y_pred)
        y_true, y_pred = self._prepare(y_true, y_pred)
        if mask is not None:
            return _masked_reduce(_as_tensor(self._values(y_true, y_pred)), mask, sample_weight,
                                  self.reduction)
        if sample_weight is None:
            fast = self._reduced(y_true, y_pred, _REDUCTIONS[self.reduction])
            if fast is not None:
                return fast
        values = _as_tensor(self._values(y_true, y_pred))
        weight = None if sample_weight is None else _sample_weight(sample_weight, values)
        return _reduce(values, weight, self.reduction)

    def call(self, y_true, y_pred):
        """The per-sample losses (override in custom losses)."""
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

    def _values(self, y_true, y_pred):
        """Per-sample losses of prepared arguments."""
        return self.call(y_true, y_pred)

    def _reduced(self, y_true, y_pred, kind):
        """A fused reduced loss for ``kind`` ("mean"/"sum"/...), or None to reduce the
        per-sample values (the default)."""
        return None


class LossFunctionWrapper(Loss):
    """A loss from a function ``fn(y_true, y_pred, **kwargs) -> per-sample losses``.

    Args:
        fn: the function; it receives Tensors (``y_true`` in ``y_pred``'s dtype).
        reduction: as for ``Loss``.
        name: defaults to ``fn.__name__``.
        **kwargs: passed to ``fn``.
    """

    def __init__(self, fn, reduction="sum_over_batch_size", name=None, **kwargs):
        if not callable(fn):
            raise TypeError(f"Invalid value for argument `fn`: expected a callable. Received: fn={fn!r}")
        self.fn = fn
        self._fn_kwargs = kwargs
        super().__init__(reduction=reduction, name=name or getattr(fn, "__name__", "loss"))

    def call(self, y_true, y_pred):
        return self.fn(y_true, y_pred, **self._fn_kwargs)

    def get_config(self):
        return {"reduction": self.reduction, "name": self.name, **self._fn_kwargs}


class _ElementwiseLoss(Loss):
    """Losses on two same-shaped arrays, averaged over the last axis per sample (Keras);
    the target may carry a graph and gets its gradient."""

    def _prepare(self, y_true, y_pred):
        y_pred = _as_prediction(y_pred)
        y_true = _line_up(_as_float_target(y_true, y_pred), y_pred)
        return y_true, y_pred

    def call(self, y_true, y_pred):
        """Per-sample losses (no reduction, no weighting)."""
        return self._values(*self._prepare(y_true, y_pred))

    def _values(self, y_true, y_pred):
        return _per_sample_mean(_as_tensor(self._elementwise(y_true, y_pred, "none")))

    def _elementwise(self, y_true, y_pred, reduction):
        """The element-wise losses reduced by PyTorch's ``reduction`` (mean/sum/none)."""
        raise NotImplementedError

    def _reduced(self, y_true, y_pred, kind):
        # The mean of per-sample means of equal-size rows is the mean of all elements, and
        # Keras's "sum" of them is the element sum over the row size: one fused reduction.
        if kind == "mean":
            return self._elementwise(y_true, y_pred, "mean")
        if kind == "sum":
            row = y_pred.shape[-1] if len(y_pred.shape) >= 2 else 1
            total = self._elementwise(y_true, y_pred, "sum")
            return total if row == 1 else total * (1.0 / row)
        return None


def _prediction_tensors(y_true, y_pred):
    """``y_true`` as a Tensor (kept if it carries a graph) for losses built from Tensor ops."""
    return (y_true if isinstance(y_true, Tensor) else Tensor(np.asarray(y_true))), y_pred


# ---------------------------------------------------------------------------------------
# Regression losses
# ---------------------------------------------------------------------------------------

class MeanSquaredError(_ElementwiseLoss):
    """Mean of ``(y_pred - y_true)**2`` over the last axis (``nn.MSELoss`` for the default
    reduction); the target gets a gradient too when it requires grad.

    Args:
        reduction: ``"sum_over_batch_size"``, ``"sum"``, ``"none"`` (Keras's meanings).
        name: log name (``"mean_squared_error"``).

    Shape:
        y_true, y_pred: ``(N, ...)``, the same (``(N,)`` against ``(N, 1)`` is lined up).
        Output: scalar, or ``y_pred.shape[:-1]`` with ``reduction="none"``.

    Example:
        >>> MeanSquaredError()([1.0, 2.0], mn.tensor([1.5, 2.0], requires_grad=True)).item()
        0.125
    """

    default_name = "mean_squared_error"

    def _elementwise(self, y_true, y_pred, reduction):
        return F.mse_loss(y_pred, y_true, reduction=reduction)


class MeanAbsoluteError(_ElementwiseLoss):
    """Mean of ``|y_pred - y_true|`` over the last axis (``nn.L1Loss``; gradient
    ``sign(y_pred - y_true)``, 0 at 0).

    Args:
        reduction: ``"sum_over_batch_size"``, ``"sum"``, ``"none"``.
        name: log name (``"mean_absolute_error"``).

    Shape:
        y_true, y_pred: ``(N, ...)``, the same. Output: scalar or ``y_pred.shape[:-1]``.

    Example:
        >>> MeanAbsoluteError()([1.0, 2.0], mn.tensor([1.5, 2.0])).item()
        0.25
    """

    default_name = "mean_absolute_error"

    def _elementwise(self, y_true, y_pred, reduction):
        return F.l1_loss(y_pred, y_true, reduction=reduction)


class Huber(_ElementwiseLoss):
    """Huber loss (``nn.HuberLoss``, Keras ``Huber``): with ``d = y_pred - y_true``,
    ``0.5 * d**2`` where ``|d| <= delta`` and ``delta * (|d| - 0.5 * delta)`` elsewhere,
    averaged over the last axis.

    Args:
        delta: positive float where the loss turns from quadratic to linear.
        reduction: ``"sum_over_batch_size"``, ``"sum"``, ``"none"``.
        name: log name (``"huber_loss"``).

    Shape:
        y_true, y_pred: ``(N, ...)``, the same. Output: scalar or ``y_pred.shape[:-1]``.

    Example:
        >>> Huber(delta=1.0)([0.0], mn.tensor([3.0])).item()
        2.5
    """

    default_name = "huber_loss"

    def __init__(self, delta=1.0, reduction="sum_over_batch_size", name=None, dtype=None):
        self.delta = check_float("delta", delta, 0.0, low_open=True)
        super().__init__(reduction=reduction, name=name, dtype=dtype)

    def _elementwise(self, y_true, y_pred, reduction):
        return F.huber_loss(y_pred, y_true, delta=self.delta, reduction=reduction)

    def get_config(self):
        return {"delta": self.delta, **super().get_config()}


class MeanSquaredLogarithmicError(_ElementwiseLoss):
    """Keras's ``mean((log(max(y_pred, eps) + 1) - log(max(y_true, eps) + 1))**2)`` over
    the last axis (``eps = 1e-7``).

    Shape:
        y_true, y_pred: ``(N, ...)``, the same. Output: scalar or ``y_pred.shape[:-1]``.

    Example:
        >>> MeanSquaredLogarithmicError()([[0.0, 1.0]], mn.tensor([[1.0, 1.0]])).item()
    """

    default_name = "mean_squared_logarithmic_error"

    def _elementwise(self, y_true, y_pred, reduction):
        y_true, y_pred = _prediction_tensors(y_true, y_pred)
        first = (y_pred.maximum(_EPSILON) + 1.0).log()
        second = (y_true.maximum(_EPSILON) + 1.0).log()
        return _torch_reduce((first - second) ** 2, reduction)


class MeanAbsolutePercentageError(_ElementwiseLoss):
    """Keras's ``100 * mean(|y_true - y_pred| / max(|y_true|, eps))`` over the last axis.

    Shape:
        y_true, y_pred: ``(N, ...)``, the same. Output: scalar or ``y_pred.shape[:-1]``.

    Example:
        >>> MeanAbsolutePercentageError()([[2.0, 4.0]], mn.tensor([[1.0, 4.0]])).item()
        25.0
    """

    default_name = "mean_absolute_percentage_error"

    def _elementwise(self, y_true, y_pred, reduction):
        y_true, y_pred = _prediction_tensors(y_true, y_pred)
        diff = ((y_true - y_pred) / y_true.abs().maximum(_EPSILON)).abs()
        return _torch_reduce(diff * 100.0, reduction)


class Poisson(_ElementwiseLoss):
    """Keras's ``mean(y_pred - y_true * log(y_pred + eps))`` over the last axis
    (``nn.PoissonNLLLoss(log_input=False, eps=1e-7)``).

    Shape:
        y_true, y_pred: ``(N, ...)``, the same. Output: scalar or ``y_pred.shape[:-1]``.

    Example:
        >>> Poisson()([[1.0, 0.0]], mn.tensor([[1.0, 2.0]])).item()
        1.5
    """

    default_name = "poisson"

    def _elementwise(self, y_true, y_pred, reduction):
        y_true, y_pred = _prediction_tensors(y_true, y_pred)
        return _torch_reduce(y_pred - y_true * (y_pred + _EPSILON).log(), reduction)


def _softplus(x):
    """``log(1 + exp(x))`` without overflow: ``max(x, 0) + log(1 + exp(-|x|))``."""
    return x.maximum(0.0) + ((-x.abs()).exp() + 1.0).log()   # ties split: exact at 0


class LogCosh(_ElementwiseLoss):
    """Keras's ``mean(log(cosh(y_pred - y_true)))`` over the last axis, computed as
    ``d + softplus(-2 d) - log 2`` so that it never overflows.

    Shape:
        y_true, y_pred: ``(N, ...)``, the same. Output: scalar or ``y_pred.shape[:-1]``.

    Example:
        >>> LogCosh()([[0.0]], mn.tensor([[0.0]])).item()
        0.0
    """

    default_name = "log_cosh"

    def _elementwise(self, y_true, y_pred, reduction):
        y_true, y_pred = _prediction_tensors(y_true, y_pred)
        d = y_pred - y_true
        return _torch_reduce(d + _softplus(d * -2.0) - float(np.log(2.0)), reduction)


def _torch_reduce(values, reduction):
    if reduction == "mean":
        return values.mean()
    if reduction == "sum":
        return values.sum()
    return values


def _hinge_labels(y_true):
    """Keras's ``convert_binary_labels_to_hinge``: 0/1 labels become -1/1, others stay."""
    data = _raw(y_true)
    if data.size and np.all((data == 0) | (data == 1)):
        return y_true * 2.0 - 1.0
    return y_true


class Hinge(_ElementwiseLoss):
    """Keras's ``mean(max(1 - y_true * y_pred, 0))`` over the last axis; labels 0/1 are
    mapped to -1/1 (labels already -1/1 are kept).

    Shape:
        y_true, y_pred: ``(N, ...)``, the same. Output: scalar or ``y_pred.shape[:-1]``.

    Example:
        >>> Hinge()([[1.0, 0.0]], mn.tensor([[0.5, -2.0]])).item()
        0.25
    """

    default_name = "hinge"

    def _margins(self, y_true, y_pred):
        y_true, y_pred = _prediction_tensors(y_true, y_pred)
        return (1.0 - _hinge_labels(y_true) * y_pred).relu()

    def _elementwise(self, y_true, y_pred, reduction):
        return _torch_reduce(self._margins(y_true, y_pred), reduction)


class SquaredHinge(Hinge):
    """Keras's ``mean(max(1 - y_true * y_pred, 0)**2)`` over the last axis (0/1 labels
    mapped to -1/1).

    Shape:
        y_true, y_pred: ``(N, ...)``, the same. Output: scalar or ``y_pred.shape[:-1]``.

    Example:
        >>> SquaredHinge()([[1.0, 0.0]], mn.tensor([[0.5, -2.0]])).item()
        0.125
    """

    default_name = "squared_hinge"

    def _elementwise(self, y_true, y_pred, reduction):
        return _torch_reduce(self._margins(y_true, y_pred) ** 2, reduction)


# ---------------------------------------------------------------------------------------
# Classification and distribution losses
# ---------------------------------------------------------------------------------------

class BinaryCrossentropy(_ElementwiseLoss):
    """Binary cross-entropy ``-(t log p + (1 - t) log(1 - p))``, averaged over the last axis.

    With ``from_logits=False`` (``nn.BCELoss``) ``y_pred`` are probabilities and each log is
    clamped at -100 as PyTorch does; with ``from_logits=True`` (``nn.BCEWithLogitsLoss``)
    ``y_pred`` are logits and the sigmoid is fused in, stable for any magnitude.

    Args:
        from_logits: whether ``y_pred`` are logits rather than probabilities.
        label_smoothing: float in [0, 1]; targets become ``t * (1 - s) + 0.5 * s``.
        reduction: ``"sum_over_batch_size"``, ``"sum"``, ``"none"``.
        name: log name (``"binary_crossentropy"``).

    Shape:
        y_true, y_pred: ``(N, ...)``, the same (``(N,)`` labels against ``(N, 1)`` outputs is
        lined up). Output: scalar, or ``y_pred.shape[:-1]`` with ``reduction="none"``.

    Example:
        >>> BinaryCrossentropy(from_logits=True)([1, 0], mn.tensor([[2.0], [-1.0]]))
    """

    default_name = "binary_crossentropy"
    _probability = "binary"

    def __init__(self, from_logits=False, label_smoothing=0.0, reduction="sum_over_batch_size",
                 name=None, dtype=None):
        self.from_logits = bool(from_logits)
        self.label_smoothing = _check_fraction(label_smoothing, "label_smoothing")
        super().__init__(reduction=reduction, name=name, dtype=dtype)

    def _prepare(self, y_true, y_pred):
        y_true, y_pred = super()._prepare(y_true, y_pred)
        if not self.from_logits:
            _check_probabilities(y_pred, type(self).__name__)
        if self.label_smoothing:
            y_true = y_true * (1.0 - self.label_smoothing) + 0.5 * self.label_smoothing
        return y_true, y_pred

    def _elementwise(self, y_true, y_pred, reduction):
        if self.from_logits:
            return F.binary_cross_entropy_with_logits(y_pred, y_true, reduction=reduction)
        return F.binary_cross_entropy(y_pred, y_true, reduction=reduction)

    def get_config(self):
        return {"from_logits": self.from_logits, "label_smoothing": self.label_smoothing,
                **super().get_config()}


class BinaryFocalCrossentropy(BinaryCrossentropy):
    """Keras's binary focal cross-entropy: ``(1 - p_t)**gamma * bce`` (optionally times
    ``alpha_t``), averaged over the last axis, with ``p_t = t p + (1 - t)(1 - p)`` and
    ``bce`` Keras's (probabilities clipped to ``[1e-7, 1 - 1e-7]``).

    Args:
        apply_class_balancing: weight by ``alpha`` for 1s and ``1 - alpha`` for 0s.
        alpha: balancing weight in [0, 1].
        gamma: focusing parameter >= 0.
        from_logits, label_smoothing, reduction, name: as ``BinaryCrossentropy``.

    Shape:
        y_true, y_pred: ``(N, ...)``, the same. Output: scalar or ``y_pred.shape[:-1]``.

    Example:
        >>> BinaryFocalCrossentropy(gamma=2.0)([[1.0]], mn.tensor([[0.9]]))
    """

    default_name = "binary_focal_crossentropy"

    def __init__(self, apply_class_balancing=False, alpha=0.25, gamma=2.0, from_logits=False,
                 label_smoothing=0.0, reduction="sum_over_batch_size", name=None, dtype=None):
        self.apply_class_balancing = bool(apply_class_balancing)
        self.alpha = check_float("alpha", alpha, 0.0, 1.0)
        self.gamma = check_float("gamma", gamma, 0.0)
        super().__init__(from_logits=from_logits, label_smoothing=label_smoothing,
                         reduction=reduction, name=name, dtype=dtype)

    def _elementwise(self, y_true, y_pred, reduction):
        y_true, y_pred = _prediction_tensors(y_true, y_pred)
        p = y_pred.sigmoid() if self.from_logits else y_pred
        clipped = p.clip(_EPSILON, 1.0 - _EPSILON)
        bce = -(y_true * clipped.log() + (1.0 - y_true) * (1.0 - clipped).log())
        p_t = y_true * p + (1.0 - y_true) * (1.0 - p)
        values = (1.0 - p_t) ** self.gamma * bce if self.gamma else bce
        if self.apply_class_balancing:
            values = (y_true * self.alpha + (1.0 - y_true) * (1.0 - self.alpha)) * values
        return _torch_reduce(values, reduction)

    def get_config(self):
        return {"apply_class_balancing": self.apply_class_balancing, "alpha": self.alpha,
                "gamma": self.gamma, **super().get_config()}


def _clipped_log(probabilities):
    """``log(clip(p, eps, 1 - eps))`` as Keras computes it (zero gradient where clipped)."""
    return probabilities.clip(_EPSILON, 1.0 - _EPSILON).log()


def _check_class_axis(y_pred, loss_name):
    if y_pred.ndim < 2:
        raise ValueError(f"{loss_name}: expected `y_pred` of shape (batch, classes) (or "
                         f"(..., classes)). Received: y_pred.shape={tuple(y_pred.shape)}. Loss "
                         f"objects take Keras's order loss(y_true, y_pred); minnet.functional "
                         f"takes PyTorch's (input, target).")


class _ClassLoss(Loss):
    """Losses over a class axis: ``y_true`` and ``y_pred`` both ``(..., C)``."""

    def _prepare(self, y_true, y_pred):
        y_pred = _as_prediction(y_pred)
        _check_class_axis(y_pred, type(self).__name__)
        y_true = _as_float_target(y_true, y_pred)
        if tuple(y_true.shape) != tuple(y_pred.shape):
            hint = ""
            if len(y_true.shape) == len(y_pred.shape) - 1:
                hint = " (integer labels need SparseCategoricalCrossentropy)"
            raise _shape_mismatch(y_true, y_pred, hint)
        return y_true, y_pred

    def call(self, y_true, y_pred):
        """Per-sample losses (no reduction, no weighting)."""
        return self._values(*self._prepare(y_true, y_pred))


class CategoricalCrossentropy(_ClassLoss):
    """Cross-entropy with one-hot or probability targets, per sample:
    ``-sum_c t_c log q_c`` with ``q = softmax(y_pred)`` (``from_logits=True``, the fused
    ``nn.CrossEntropyLoss`` with probability targets) or ``q = clip(y_pred, 1e-7, 1 - 1e-7)``
    (``from_logits=False``, Keras's probabilities).

    Label smoothing is PyTorch's (and Keras's): ``t <- (1 - s) t + s / C``.

    Args:
        from_logits: whether ``y_pred`` are logits (recommended: drop the final Softmax).
        label_smoothing: float in [0, 1].
        reduction: ``"sum_over_batch_size"``, ``"sum"``, ``"none"`` (one loss per sample).
        name: log name (``"categorical_crossentropy"``).

    Shape:
        y_true, y_pred: ``(N, C)`` (or ``(..., C)``), the same. Output: scalar or ``(N,)``.

    Example:
        >>> CategoricalCrossentropy(from_logits=True)(np.eye(3)[[0, 2]], mn.tensor(np.zeros((2, 3))))
    """

    default_name = "categorical_crossentropy"
    _probability = "one_hot"

    def __init__(self, from_logits=False, label_smoothing=0.0, axis=-1,
                 reduction="sum_over_batch_size", name=None, dtype=None):
        self.from_logits = bool(from_logits)
        self.label_smoothing = _check_fraction(label_smoothing, "label_smoothing")
        if axis != -1:
            raise invalid("axis", "-1 (the class axis is the last one)", axis)
        self.axis = -1
        super().__init__(reduction=reduction, name=name, dtype=dtype)

    def _prepare(self, y_true, y_pred):
        y_true, y_pred = super()._prepare(y_true, y_pred)
        if self.from_logits:
            _warn_if_probabilities(self, y_pred)
        else:
            _check_probabilities(y_pred, type(self).__name__)
        return y_true, y_pred

    def _values(self, y_true, y_pred):
        return self._compute(y_true, y_pred, "none")

    def _reduced(self, y_true, y_pred, kind):
        return self._compute(y_true, y_pred, kind) if kind in ("mean", "sum") else None

    def _compute(self, y_true, y_pred, reduction):
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
        return _reduce(values, None, {"none": "none", "sum": "sum", "mean": "mean"}[reduction])

    def get_config(self):
        return {"from_logits": self.from_logits, "label_smoothing": self.label_smoothing,
                "axis": self.axis, **super().get_config()}


class CategoricalFocalCrossentropy(CategoricalCrossentropy):
    """Keras's categorical focal cross-entropy, per sample:
    ``sum_c alpha (1 - q_c)**gamma (-t_c log q_c)`` with ``q`` the probabilities
    (``softmax(y_pred)`` with ``from_logits``), renormalised to sum to 1 and clipped to
    ``[1e-7, 1 - 1e-7]``.

    Args:
        alpha: weighting factor (default 0.25).
        gamma: focusing parameter >= 0 (default 2.0).
        from_logits, label_smoothing, reduction, name: as ``CategoricalCrossentropy``.

    Shape:
        y_true, y_pred: ``(N, C)``. Output: scalar or ``(N,)``.

    Example:
        >>> CategoricalFocalCrossentropy()(np.eye(3)[[0]], mn.tensor([[0.8, 0.1, 0.1]]))
    """

    default_name = "categorical_focal_crossentropy"

    def __init__(self, alpha=0.25, gamma=2.0, from_logits=False, label_smoothing=0.0, axis=-1,
                 reduction="sum_over_batch_size", name=None, dtype=None):
        self.alpha = check_float("alpha", alpha)
        self.gamma = check_float("gamma", gamma, 0.0)
        super().__init__(from_logits=from_logits, label_smoothing=label_smoothing, axis=axis,
                         reduction=reduction, name=name, dtype=dtype)

    def _reduced(self, y_true, y_pred, kind):
        return None

    def _values(self, y_true, y_pred):
        y_true, y_pred = _prediction_tensors(y_true, y_pred)
        n_classes = y_pred.shape[-1]
        if self.label_smoothing:
            y_true = y_true * (1.0 - self.label_smoothing) + self.label_smoothing / n_classes
        probs = y_pred.softmax(axis=-1) if self.from_logits else y_pred
        output = (probs / probs.sum(axis=-1, keepdims=True)).clip(_EPSILON, 1.0 - _EPSILON)
        cce = -(y_true * output.log())
        focal = ((1.0 - output) ** self.gamma if self.gamma else 1.0) * self.alpha * cce
        return focal.sum(axis=-1)

    def get_config(self):
        return {"alpha": self.alpha, "gamma": self.gamma, **super().get_config()}


class SparseCategoricalCrossentropy(Loss):
    """Cross-entropy with integer class labels (``nn.CrossEntropyLoss`` on logits with
    ``from_logits=True``; ``-log(clip(y_pred, 1e-7, 1 - 1e-7))[label]`` otherwise).

    Labels are checked once per call (``_checks.check_labels``: integer values in
    ``[0, C)`` or ``ignore_class``; unsigned labels too large for int64 reported as they are).

    Args:
        from_logits: whether ``y_pred`` are logits (recommended: drop the final Softmax).
        ignore_class: optional label whose samples contribute nothing (PyTorch's
            ``ignore_index``); ``"sum_over_batch_size"`` then averages over the other samples
            only, and a batch where every label is ignored gives 0 with a zero gradient.
        reduction: ``"sum_over_batch_size"``, ``"sum"``, ``"none"`` (one loss per sample, 0
            where ignored).
        name: log name (``"sparse_categorical_crossentropy"``).

    Shape:
        y_true: ``(N,)`` or ``(N, 1)`` integer labels in ``[0, C)`` (or ``(...)`` with
        ``y_pred`` of shape ``(..., C)``); y_pred: ``(N, C)``. Output: scalar or ``(N,)``.

    Example:
        >>> SparseCategoricalCrossentropy(from_logits=True)([0, 2], mn.tensor(np.zeros((2, 3))))
    """

    default_name = "sparse_categorical_crossentropy"

    def __init__(self, from_logits=False, ignore_class=None, reduction="sum_over_batch_size",
                 name=None, dtype=None):
        self.from_logits = bool(from_logits)
        if ignore_class is not None and (isinstance(ignore_class, bool)
                                         or not isinstance(ignore_class, (int, np.integer))):
            raise invalid("ignore_class", "an int or None", ignore_class)
        self.ignore_class = None if ignore_class is None else int(ignore_class)
        super().__init__(reduction=reduction, name=name, dtype=dtype)

    def __call__(self, y_true, y_pred, sample_weight=None):
        _warn_if_swapped(self, y_true, y_pred)
        mask = get_keras_mask(y_pred)
        labels, y_pred = self._prepare(y_true, y_pred)
        if mask is not None:
            if self.ignore_class is None:
                return _masked_reduce(self._compute(labels, y_pred, "none"), mask, sample_weight,
                                      self.reduction)
            # Keras: the ignored labels' mask joins the input mask (in_mask & out_mask).
            valid = labels != self.ignore_class
            values = self._compute(np.where(valid, labels, 0), y_pred, "none")
            return _masked_reduce(values, np.logical_and(mask, valid.reshape(values.shape)),
                                  sample_weight, self.reduction)
        if self.ignore_class is None:
            kind = _REDUCTIONS[self.reduction]
            if sample_weight is None and kind in ("mean", "sum"):
                return self._compute(labels, y_pred, kind)
            values = self._compute(labels, y_pred, "none")
            weight = None if sample_weight is None else _sample_weight(sample_weight, values)
            return _reduce(values, weight, self.reduction)
        valid = labels != self.ignore_class
        values = self._compute(np.where(valid, labels, 0), y_pred, "none")
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
            hint = (", one-hot targets need CategoricalCrossentropy"
                    if labels.shape == tuple(y_pred.shape) else "")
            raise ValueError(f"{name}: expected integer labels `y_true` of shape {batch_shape} (or "
                             f"{batch_shape + (1,)}) for y_pred.shape={tuple(y_pred.shape)}{hint}. "
                             f"Received: y_true.shape={labels.shape}. Loss objects take Keras's "
                             f"order loss(y_true, y_pred); minnet.functional takes PyTorch's "
                             f"(input, target).")
        labels = check_labels("y_true", labels, y_pred.shape[-1], ignore_index=self.ignore_class)
        if self.from_logits:
            _warn_if_probabilities(self, y_pred)
        else:
            _check_probabilities(y_pred, name)
        return labels, y_pred

    def call(self, y_true, y_pred):
        """Per-sample losses (no reduction, no weighting; ignored samples give 0)."""
        labels, y_pred = self._prepare(y_true, y_pred)
        if self.ignore_class is None:
            return self._compute(labels, y_pred, "none")
        valid = labels != self.ignore_class
        values = self._compute(np.where(valid, labels, 0), y_pred, "none")
        return values * valid.astype(values.dtype)

    def _compute(self, labels, y_pred, reduction):
        """Losses of checked labels (int64, in range): PyTorch's reduction names."""
        batch_shape = tuple(y_pred.shape[:-1])
        if len(batch_shape) != 1:  # (..., C) -> (M, C)
            y_pred = y_pred.reshape(-1, y_pred.shape[-1])
            labels = labels.reshape(-1)
        if self.from_logits:
            out = F.cross_entropy(y_pred, labels, reduction=reduction)
        else:
            # The labels were checked above: gather without another scan.
            out = -_clipped_log(y_pred)[np.arange(labels.shape[0]), labels]
            out = _torch_reduce(out, reduction)
        if reduction == "none" and len(batch_shape) != 1:
            out = out.reshape(batch_shape)
        return out

    def get_config(self):
        return {"from_logits": self.from_logits, "ignore_class": self.ignore_class,
                **super().get_config()}


class KLDivergence(_ClassLoss):
    """Keras's Kullback-Leibler divergence per sample:
    ``sum(t * log(t / p))`` over the last axis with ``t, p`` clipped to ``[1e-7, 1]``
    (``nn.KLDivLoss(reduction="none")(log p, t).sum(-1)`` for values inside that range).

    Shape:
        y_true, y_pred: ``(N, C)``. Output: scalar or ``(N,)``.

    Example:
        >>> KLDivergence()([[0.5, 0.5]], mn.tensor([[0.5, 0.5]])).item()
        0.0
    """

    default_name = "kl_divergence"

    def _values(self, y_true, y_pred):
        y_true, y_pred = _prediction_tensors(y_true, y_pred)
        t = y_true.clip(_EPSILON, 1.0)
        p = y_pred.clip(_EPSILON, 1.0)
        return (t * (t / p).log()).sum(axis=-1)


class CategoricalHinge(_ClassLoss):
    """Keras's ``max(neg - pos + 1, 0)`` per sample with ``pos = sum(t * y_pred)`` and
    ``neg = max((1 - t) * y_pred)`` over the last axis.

    Shape:
        y_true, y_pred: ``(N, C)``. Output: scalar or ``(N,)``.

    Example:
        >>> CategoricalHinge()([[1.0, 0.0]], mn.tensor([[0.3, 0.6]])).item()
        1.3
    """

    default_name = "categorical_hinge"

    def _values(self, y_true, y_pred):
        y_true, y_pred = _prediction_tensors(y_true, y_pred)
        pos = (y_true * y_pred).sum(axis=-1)
        neg = ((1.0 - y_true) * y_pred).max(axis=-1)
        return (neg - pos + 1.0).relu()


class CosineSimilarity(_ClassLoss):
    """Keras's ``-sum(l2_normalize(t) * l2_normalize(y_pred))`` over ``axis`` (values in
    [-1, 1]; -1 when the vectors point the same way), ``l2_normalize(x) = x /
    sqrt(max(sum(x**2), 1e-12))``.

    Args:
        axis: the axis of the vectors (default -1).
        reduction, name: as ``Loss``.

    Shape:
        y_true, y_pred: ``(N, D)``, the same. Output: scalar or ``(N,)``.

    Example:
        >>> CosineSimilarity()([[1.0, 0.0]], mn.tensor([[2.0, 0.0]])).item()
        -1.0
    """

    default_name = "cosine_similarity"

    def __init__(self, axis=-1, reduction="sum_over_batch_size", name=None, dtype=None):
        if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
            raise invalid("axis", "an int", axis, TypeError)
        self.axis = int(axis)
        super().__init__(reduction=reduction, name=name, dtype=dtype)

    def _values(self, y_true, y_pred):
        y_true, y_pred = _prediction_tensors(y_true, y_pred)
        axis = self.axis

        def normalize(x):
            return x / ((x * x).sum(axis=axis, keepdims=True).maximum(1e-12)).sqrt()

        return -(normalize(y_true) * normalize(y_pred)).sum(axis=axis)

    def get_config(self):
        return {"axis": self.axis, **super().get_config()}


# ---------------------------------------------------------------------------------------
# Lookup by name, serialisation (through the one registry)
# ---------------------------------------------------------------------------------------

_ALIASES = {
    MeanSquaredError: ("mse", "mean_squared_error", "MSE"),
    MeanAbsoluteError: ("mae", "mean_absolute_error", "MAE"),
    Huber: ("huber", "huber_loss"),
    BinaryCrossentropy: ("binary_crossentropy", "bce"),
    CategoricalCrossentropy: ("categorical_crossentropy", "cce"),
    SparseCategoricalCrossentropy: ("sparse_categorical_crossentropy", "scce"),
    KLDivergence: ("kl_divergence", "kld", "kullback_leibler_divergence", "KLD"),
    Hinge: ("hinge",),
    SquaredHinge: ("squared_hinge",),
    CategoricalHinge: ("categorical_hinge",),
    CosineSimilarity: ("cosine_similarity",),
    MeanSquaredLogarithmicError: ("msle", "mean_squared_logarithmic_error", "MSLE"),
    MeanAbsolutePercentageError: ("mape", "mean_absolute_percentage_error", "MAPE"),
    Poisson: ("poisson",),
    LogCosh: ("log_cosh", "logcosh"),
    CategoricalFocalCrossentropy: ("categorical_focal_crossentropy",),
    BinaryFocalCrossentropy: ("binary_focal_crossentropy",),
}

for _cls, _names in _ALIASES.items():
    _registry.register("loss", _cls, aliases=_names)
del _cls, _names


def get(identifier, custom_objects=None):
    """Resolve a loss identifier.

    Args:
        identifier: a ``Loss`` instance (returned as is), a ``Loss`` subclass, a name
            (Keras's: ``"mse"``, ``"mae"``, ``"huber"``, ``"binary_crossentropy"``/``"bce"``,
            ``"categorical_crossentropy"``, ``"sparse_categorical_crossentropy"``, ``"kld"``,
            ``"hinge"``, ``"msle"``, ``"mape"``, ``"poisson"``, ``"log_cosh"``, ... or a class
            name), a ``serialize`` dict, a callable ``fn(y_true, y_pred) -> per-sample
            losses`` (wrapped in ``LossFunctionWrapper``), or None (returned as is).
        custom_objects: optional ``{name: class}`` for custom losses.

    Returns:
        A ``Loss`` (or None).

    Example:
        >>> get("sparse_categorical_crossentropy")
        SparseCategoricalCrossentropy(from_logits=False, ignore_class=None, ...)
    """
    if identifier is None or isinstance(identifier, Loss):
        return identifier
    if isinstance(identifier, type) and issubclass(identifier, Loss):
        return identifier()
    if isinstance(identifier, (str, dict)):
        return _registry.get("loss", identifier, custom_objects)
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
                         f"and pass it in custom_objects instead.")
    return _registry.serialize("loss", loss)


def deserialize(config, custom_objects=None):
    """Inverse of ``serialize``; ``custom_objects`` maps class names to custom Loss classes."""
    return _registry.deserialize("loss", config, custom_objects)
