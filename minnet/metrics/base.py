"""The metric protocol: ``Metric`` (a weighted running mean), ``Mean``, ``MeanMetricWrapper``,
and the array helpers every metric module shares.

Every metric computes one value per sample (for example 1.0/0.0 for "was this sample
classified correctly") and keeps ``total = sum(value * weight)`` and ``count = sum(weight)``;
``result() = total / count`` (0.0 before the first update). Metrics never build an autograd
graph: Tensors are read through ``.numpy()``.
"""
import numpy as np

from minnet import _registry, initializers
from minnet.autograd import Tensor

__all__ = ["Metric", "Mean", "MeanMetricWrapper"]

# ---------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------

def to_numpy(value, argument):
    """ndarray view of a Tensor / ndarray / list / scalar, never part of a graph."""
    if hasattr(value, "numpy") and callable(value.numpy) and not isinstance(value, np.ndarray):
        value = value.numpy()
    try:
        array = np.asarray(value)
    except Exception as error:  # ragged lists and the like
        raise TypeError(
            f"Invalid value for argument `{argument}`: expected an array-like of numbers. "
            f"Received: {type(value).__name__} ({error})"
        ) from None
    if array.dtype == object or not (np.issubdtype(array.dtype, np.number) or array.dtype == bool):
        raise TypeError(
            f"Invalid value for argument `{argument}`: expected an array-like of numbers. "
            f"Received: array of dtype {array.dtype}"
        )
    return array


def log_value(result):
    """A metric's ``result()`` as a log entry: a float for one value, an ndarray for several
    (``F1Score(average=None)``'s per-class scores), as Keras's logs hold them."""
    data = np.asarray(result.data if isinstance(result, Tensor) else result)
    return float(data.reshape(())) if data.size == 1 else data.astype(np.float64)


def squeeze_or_expand(y_true, y_pred):
    """Line up ``(N,)`` against ``(N, 1)`` the way Keras does; other shapes are left alone."""
    if y_pred.ndim == y_true.ndim + 1 and y_pred.shape[-1] == 1:
        y_pred = y_pred.reshape(y_pred.shape[:-1])
    elif y_true.ndim == y_pred.ndim + 1 and y_true.shape[-1] == 1:
        y_true = y_true.reshape(y_true.shape[:-1])
    return y_true, y_pred


def check_same_shape(y_true, y_pred, what):
    if y_true.shape != y_pred.shape:
        raise ValueError(
            f"{what}: `y_true` and `y_pred` must have the same shape. "
            f"Received: y_true.shape={y_true.shape}, y_pred.shape={y_pred.shape}"
        )


def per_sample_mean(values):
    """Mean over the last axis for arrays of rank >= 2 (one value per sample), as Keras."""
    values = np.asarray(values, dtype=np.float64)
    if values.ndim >= 2:
        return values.mean(axis=-1)
    return values


# ---------------------------------------------------------------------------------------
# Metric objects
# ---------------------------------------------------------------------------------------

class Metric:
    """Base class: a weighted running mean of per-sample values.

    Subclasses either override ``update_state`` / ``result`` / ``reset_state`` entirely, or
    (the usual case) implement ``compute(y_true, y_pred)`` returning one value per sample
    and let this class keep ``total`` and ``count``.

    Args:
        name: the key under which ``fit`` logs the result (``"accuracy"``, ``"mae"``, ...).
        dtype: kept for Keras compatibility; results are Python floats computed in float64.
    """

    def __init__(self, name=None, dtype=None):
        if name is not None and not isinstance(name, str):
            raise TypeError(f"Invalid value for argument `name`: expected a str. Received: name={name!r}")
        self.name = name if name is not None else _registry.snake_case(type(self).__name__)
        self.dtype = dtype
        self._metric_variables = []
        # The running-mean state of the built-in metrics. reset_state() is not called here:
        # a Keras subclass makes its state (add_variable) after this __init__ returns.
        self.total = 0.0
        self.count = 0.0

    # -- state (Keras 3) --------------------------------------------------------------
    def add_variable(self, shape, initializer="zeros", dtype=None, aggregation="sum", name=None):
        """A state variable of the metric (Keras 3): an ``mn.Tensor`` with ``assign``,
        ``assign_add`` and ``assign_sub``, zeroed by the default ``reset_state``.

        Args:
            shape: tuple of ints (``()`` for a scalar).
            initializer: a name (``"zeros"``, ``"ones"``, ...), an Initializer or a callable
                ``(shape, dtype) -> ndarray``.
            dtype: the variable's dtype (default: the metric's dtype, else float32); integer
                dtypes are allowed (counters).
            aggregation: Keras's distribution hint ("sum", "mean", ...); kept, no effect here.
            name: the variable's name.
        """
        shape = () if shape is None else ((int(shape),) if isinstance(shape, (int, np.integer))
                                          else tuple(int(s) for s in shape))
        dtype = np.dtype(dtype or self.dtype or "float32")
        init = initializers.get(initializer)
        value = initializers.checked_call(init, shape, dtype if dtype.kind == "f" else np.float64,
                                          where=f"variable '{name}' of metric '{self.name}'")
        variable = Tensor(value.astype(dtype, copy=False))
        variable.name = f"{self.name}/{name or f'variable_{len(self._metric_variables)}'}"
        self._metric_variables.append(variable)
        return variable

    add_weight = add_variable

    def __getattr__(self, name):
        # Only reached for a missing attribute. A subclass that makes its state in
        # reset_state() (relying on __init__ to call it, as minnet's metrics once did) gets
        # it made on first use, once; any other missing name is an AttributeError.
        state = self.__dict__
        if name.startswith("_") or "_metric_variables" not in state or state.get("_state_made"):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        state["_state_made"] = True
        self.reset_state()
        return getattr(self, name)

    @property
    def variables(self):
        """The state variables made by ``add_variable``, in creation order."""
        return list(self._metric_variables)

    # -- the protocol ---------------------------------------------------------------
    def compute(self, y_true, y_pred):
        """Per-sample values for one batch (ndarray of shape ``(N,)``)."""
        raise NotImplementedError(f"{type(self).__name__} must implement compute() or update_state().")

    def update_state(self, y_true, y_pred, sample_weight=None):
        """Add one batch.

        Args:
            y_true: true values (ndarray, list or Tensor).
            y_pred: predictions (ndarray, list or Tensor).
            sample_weight: optional weights, one per sample (shape ``(N,)``) or a scalar.
        """
        values = np.asarray(self.compute(y_true, y_pred), dtype=np.float64)
        self._accumulate(values, sample_weight)

    def _accumulate(self, values, sample_weight):
        values = np.atleast_1d(values)
        skipped = np.isnan(values)        # samples a metric skips (ignore_class): weight 0
        if sample_weight is None and not skipped.any():
            self.total += float(values.sum())
            self.count += float(values.size)
            return
        if sample_weight is None:
            weight = np.ones(values.shape)
        else:
            weight = to_numpy(sample_weight, "sample_weight").astype(np.float64)
            if weight.ndim > values.ndim and weight.shape[-1] == 1:
                weight = weight.reshape(weight.shape[:-1])
            try:
                weight = np.broadcast_to(
                    weight.reshape(weight.shape + (1,) * (values.ndim - weight.ndim)), values.shape)
            except ValueError:
                raise ValueError(
                    f"Invalid value for argument `sample_weight`: expected a scalar or one weight "
                    f"per sample (shape {values.shape[:1]}). Received: "
                    f"sample_weight.shape={weight.shape}") from None
        if skipped.any():
            weight = np.where(skipped, 0.0, weight)
            values = np.where(skipped, 0.0, values)
        self.total += float(np.sum(values * weight))
        self.count += float(np.sum(weight))

    def result(self):
        """The weighted mean of everything added since the last reset (0.0 if nothing)."""
        return float(self.total / self.count) if self.count else 0.0

    def reset_state(self):
        """Forget all batches: the running mean and every ``add_variable`` variable go to 0."""
        self.total = 0.0
        self.count = 0.0
        for variable in self._metric_variables:
            variable.assign(0)

    # Keras 2 spelling.
    def reset_states(self):
        self.reset_state()

    def __call__(self, y_true, y_pred, sample_weight=None):
        """Update with one batch and return the running result."""
        self.update_state(y_true, y_pred, sample_weight=sample_weight)
        return self.result()

    # -- config -----------------------------------------------------------------------
    def get_config(self):
        """JSON-able constructor arguments."""
        return {"name": self.name}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        args = ", ".join(f"{key}={value!r}" for key, value in self.get_config().items())
        return f"{type(self).__name__}({args})"


class Mean(Metric):
    """Weighted mean of the values passed to ``update_state(values, sample_weight=None)``.

    Example:
        >>> m = Mean(); m.update_state([1.0, 3.0]); m.result()
        2.0
    """

    def __init__(self, name="mean", dtype=None):
        super().__init__(name=name, dtype=dtype)

    def update_state(self, values, sample_weight=None):
        values = to_numpy(values, "values").astype(np.float64)
        self._accumulate(values.reshape(-1) if sample_weight is None else values, sample_weight)


class MeanMetricWrapper(Metric):
    """Turns a function ``fn(y_true, y_pred, **kwargs) -> per-sample values`` into a metric.

    Args:
        fn: the per-sample function.
        name: metric name (default: ``fn.__name__``).
        **kwargs: extra keyword arguments passed to ``fn`` (e.g. ``threshold``).
    """

    def __init__(self, fn, name=None, dtype=None, **kwargs):
        if not callable(fn):
            raise TypeError(f"Invalid value for argument `fn`: expected a callable. Received: fn={fn!r}")
        self._fn = fn
        self._fn_kwargs = kwargs
        super().__init__(name=name if name is not None else getattr(fn, "__name__", "metric"), dtype=dtype)

    def compute(self, y_true, y_pred):
        values = self._fn(y_true, y_pred, **self._fn_kwargs)
        return to_numpy(values, "values").astype(np.float64)

    def get_config(self):
        return {"name": self.name, **self._fn_kwargs}
