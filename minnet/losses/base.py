"""The loss protocol: ``Loss`` (Keras's call order and reductions), ``LossFunctionWrapper``,
the element-wise and class-axis bases every concrete loss builds on, and the argument
handling (``y_true`` / ``y_pred`` / ``sample_weight`` checks, reductions, masks) they share.
"""
import warnings

import numpy as np

from minnet import _registry
from minnet._checks import invalid
from minnet._utils import user_stacklevel
from minnet.autograd import Tensor
from minnet.layers.base import get_keras_mask

__all__ = ["Loss", "LossFunctionWrapper"]

# Keras 3's reduction names (and Keras 2's "auto") -> what the reduction does.
REDUCTIONS = {"sum_over_batch_size": "mean", "mean": "mean", "auto": "mean", "sum": "sum",
               "none": "none", None: "none", "mean_with_sample_weight": "weighted_mean"}



# ---------------------------------------------------------------------------------------
# Argument handling
# ---------------------------------------------------------------------------------------

def _carries_graph(x):
    return isinstance(x, Tensor) and (x.requires_grad or x.grad_fn is not None)


def raw_data(x):
    """The ndarray behind a Tensor / ndarray / list (no copy for arrays)."""
    if isinstance(x, Tensor):
        return x.data
    return np.asarray(x)


def check_numeric(array, argument):
    # numbers and bools: NumPy's kinds b(ool), i(nt), u(nsigned), f(loat), c(omplex)
    if array.dtype.kind not in "biufc":
        raise TypeError(f"Invalid value for argument `{argument}`: expected an array of numbers. "
                        f"Received: array of dtype {array.dtype}")


def as_prediction(y_pred):
    """A float Tensor (a graph-carrying Tensor is kept as it is)."""
    if isinstance(y_pred, Tensor):
        if y_pred.dtype.kind == "f" and y_pred.dtype.itemsize >= 4:
            return y_pred
        return y_pred.astype(np.float32) if _carries_graph(y_pred) \
            else Tensor(y_pred.data.astype(np.float32))
    array = np.asarray(y_pred)
    check_numeric(array, "y_pred")
    if array.dtype.kind != "f" or array.dtype.itemsize < 4:
        array = array.astype(np.float32)
    return Tensor(array)


def _as_float_target(y_true, y_pred):
    """The target in the prediction's dtype: a Tensor when it carries a graph (so its
    gradient flows, as ``nn.MSELoss`` gives one), otherwise a plain ndarray."""
    if _carries_graph(y_true):
        return y_true if y_true.dtype == y_pred.dtype else y_true.astype(y_pred.dtype)
    array = raw_data(y_true)
    check_numeric(array, "y_true")
    return array.astype(y_pred.dtype, copy=False)


def _shape_mismatch(y_true, y_pred, extra=""):
    return ValueError(f"`y_true` and `y_pred` must have the same shape{extra}. "
                      f"Received: y_true.shape={tuple(y_true.shape)}, "
                      f"y_pred.shape={tuple(y_pred.shape)}. Loss objects take Keras's order "
                      f"loss(y_true, y_pred); minnet.functional takes PyTorch's (input, target).")


def _line_up(y_true, y_pred):
    """Keras's ``squeeze_or_expand_to_same_rank``: when the ranks differ by one and the
    longer argument ends in an axis of 1, a rank-1 partner gains that axis (``(N,)`` against
    ``(N, 1)`` is N samples of one value), any other partner loses it; any other mismatch is
    an error. Returns both, reshaped (PyTorch would broadcast them to ``(N, N)``)."""
    true_shape, pred_shape = tuple(y_true.shape), tuple(y_pred.shape)
    if len(true_shape) == len(pred_shape) + 1 and true_shape[-1:] == (1,):
        if len(pred_shape) == 1:
            y_pred = y_pred.reshape(pred_shape + (1,))
        else:
            y_true = y_true.reshape(true_shape[:-1])
    elif len(pred_shape) == len(true_shape) + 1 and pred_shape[-1:] == (1,):
        if len(true_shape) == 1:
            y_true = y_true.reshape(true_shape + (1,))
        else:
            y_pred = y_pred.reshape(pred_shape[:-1])
    if tuple(y_true.shape) != tuple(y_pred.shape):
        raise _shape_mismatch(y_true, y_pred)
    return y_true, y_pred


def broadcast_sample_weight(sample_weight, values):
    """``sample_weight`` as an ndarray that broadcasts to ``values.shape`` along the leading
    (batch) axes, in the dtype of ``values``. A single loss value (rank 0: rank-1 inputs are
    one sample, as in Keras) takes a weight of any shape, and the weighted values then have
    the weight's shape (Keras's broadcasting)."""
    weight = raw_data(sample_weight)
    check_numeric(weight, "sample_weight")
    weight = weight.astype(values.dtype, copy=False)
    shape = tuple(values.shape)
    if not shape:
        return weight
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
                     f"Received: sample_weight.shape={np.shape(raw_data(sample_weight))}")


def reduce_values(values, weight, reduction, count=None):
    """Weight the per-sample losses and reduce them as Keras 3 does (``reduce_weighted_values``).

    ``"mean_with_sample_weight"`` divides by the sum of the weights as given (a scalar
    weight ``w`` divides by ``w``, as Keras does, not by ``w`` times the count). ``count``
    overrides the divisor of the mean (the non-ignored samples); a divisor of 0 gives 0 with
    a zero gradient (Keras's ``divide_no_nan``), never NaN.
    """
    kind = REDUCTIONS[reduction]
    if weight is not None:
        values = values * weight
    if kind == "none" or values.ndim == 0 or tuple(values.shape) == (0,):
        return values
    total = values.sum()
    if kind == "sum":
        return total
    if kind == "weighted_mean" and weight is not None:
        count = float(np.sum(weight))
    elif count is None:
        count = values.size
    return total * (1.0 / count if count else 0.0)


def masked_reduce(values, mask, sample_weight, reduction):
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
    if REDUCTIONS[reduction] == "mean":
        valid = int(mask.sum())
        weight = weight * (mask.size / valid if valid else 0.0)
    if sample_weight is not None:
        weight = weight * broadcast_sample_weight(sample_weight, values)
    return reduce_values(values, weight, reduction)


def _check_reduction(reduction):
    if reduction not in REDUCTIONS:
        raise invalid("reduction", "one of 'sum_over_batch_size', 'sum', 'none', None, 'mean' or "
                      "'mean_with_sample_weight'", reduction)
    return reduction


def _hard_values(x, one_hot):
    """True when ``x`` holds only exact 0/1 values (and, with ``one_hot``, one 1 per row)."""
    data = raw_data(x)
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


def warn_if_swapped(loss, y_true, y_pred, probability=None):
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


def _per_sample_mean(values, axis=-1):
    """Keras's mean over the last axis (or ``axis``): rank-1 values are one sample."""
    return values if values.ndim == 0 else values.mean(axis=axis)


def _per_sample_sum(values, axis=-1):
    return values if values.ndim == 0 else values.sum(axis=axis)


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
    # "binary" / "one_hot" for the probability losses (see warn_if_swapped).
    _probability = None
    # What fit asks of a loss (docs/internals.md): the label whose samples count for nothing
    # (SparseCategoricalCrossentropy sets it), and whether targets are integer class ids.
    ignore_class = None

    @property
    def sparse_labels(self):
        """True when the targets are integer class ids (sparse categorical cross-entropy,
        or a loss named so: a wrapped ``sparse_categorical_crossentropy`` function)."""
        name = self.name.lower().replace("_", "")
        return "sparse" in name and "crossentropy" in name

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
        warn_if_swapped(self, y_true, y_pred, self._probability)
        mask = get_keras_mask(y_pred)
        y_true, y_pred = self._prepare(y_true, y_pred)
        if mask is not None:
            return masked_reduce(_as_tensor(self._values(y_true, y_pred)), mask, sample_weight,
                                  self.reduction)
        if sample_weight is None:
            fast = self._reduced(y_true, y_pred, REDUCTIONS[self.reduction])
            if fast is not None:
                return fast
        values = _as_tensor(self._values(y_true, y_pred))
        own = get_keras_mask(values)       # a loss that masks its own values (Keras's Circle)
        if own is not None:
            return masked_reduce(values, own, sample_weight, self.reduction)
        weight = None if sample_weight is None else broadcast_sample_weight(sample_weight, values)
        return reduce_values(values, weight, self.reduction)

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
        y_pred = as_prediction(y_pred)
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


class ElementwiseLoss(Loss):
    """Losses on two same-shaped arrays, averaged over the last axis (``axis``) per sample
    (Keras: rank-1 inputs of shape ``(N,)`` are one sample); the target may carry a graph
    and gets its gradient."""

    axis = -1

    def _prepare(self, y_true, y_pred):
        y_pred = as_prediction(y_pred)
        return _line_up(_as_float_target(y_true, y_pred), y_pred)

    def call(self, y_true, y_pred):
        """Per-sample losses (no reduction, no weighting)."""
        return self._values(*self._prepare(y_true, y_pred))

    def _values(self, y_true, y_pred):
        return _per_sample_mean(_as_tensor(self._elementwise(y_true, y_pred, "none")), self.axis)

    def _elementwise(self, y_true, y_pred, reduction):
        """The element-wise losses reduced by PyTorch's ``reduction`` (mean/sum/none)."""
        raise NotImplementedError

    def _reduced(self, y_true, y_pred, kind):
        # The mean of per-sample means of equal-size rows is the mean of all elements, and
        # Keras's "sum" of them is the element sum over the row size: one fused reduction.
        if len(y_pred.shape) == 0:
            return None
        if kind == "mean":
            return self._elementwise(y_true, y_pred, "mean")
        if kind == "sum":
            row = y_pred.shape[self.axis]
            total = self._elementwise(y_true, y_pred, "sum")
            return total if row == 1 else total * (1.0 / row)
        return None


def prediction_tensors(y_true, y_pred):
    """``y_true`` as a Tensor (kept if it carries a graph) for losses built from Tensor ops."""
    return (y_true if isinstance(y_true, Tensor) else Tensor(np.asarray(y_true))), y_pred


def torch_reduce(values, reduction):
    if reduction == "mean":
        return values.mean()
    if reduction == "sum":
        return values.sum()
    return values


def check_class_axis(y_pred, loss_name, minimum=2):
    if y_pred.ndim < minimum:
        raise ValueError(f"{loss_name}: expected `y_pred` of shape (batch, classes) (or "
                         f"(..., classes){' or (classes,), one sample' if minimum == 1 else ''}). "
                         f"Received: y_pred.shape={tuple(y_pred.shape)}. Loss "
                         f"objects take Keras's order loss(y_true, y_pred); minnet.functional "
                         f"takes PyTorch's (input, target).")


class ClassLoss(Loss):
    """Losses over a class axis: ``y_true`` and ``y_pred`` both ``(..., C)``."""

    def _prepare(self, y_true, y_pred):
        y_pred = as_prediction(y_pred)
        check_class_axis(y_pred, type(self).__name__, minimum=1)
        y_true = _as_float_target(y_true, y_pred)
        try:
            return _line_up(y_true, y_pred)
        except ValueError:
            hint = ""
            if len(y_true.shape) == len(y_pred.shape) - 1:
                hint = " (integer labels need SparseCategoricalCrossentropy)"
            raise _shape_mismatch(y_true, y_pred, hint) from None

    def call(self, y_true, y_pred):
        """Per-sample losses (no reduction, no weighting)."""
        return self._values(*self._prepare(y_true, y_pred))
