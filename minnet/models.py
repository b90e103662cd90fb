"""``Sequential``: a stack of layers with Keras's compile / fit / evaluate / predict.

The training loop is written out in ``Sequential.fit`` and ``Sequential._train_step``,
so a student can read exactly what one step does::

    optimizer.zero_grad()
    y_pred = model(x_batch, training=True)
    loss = loss_fn(y_batch, y_pred, sample_weight)
    loss.backward()
    optimizer.step()

``fit``, ``evaluate`` and ``predict`` share one batch iterator (``minnet.data.Batches``)
and one callback list (``minnet.callbacks.CallbackList``, which adds ``History`` and
the progress bar).
"""
import functools
import numbers
import warnings

import numpy as np

from minnet import _random
from minnet import callbacks as _callbacks
from minnet._ext import _memory
from minnet.autograd import Tensor, no_grad
from minnet.data import Batches, _check_batch_size, _check_seed, as_array, train_validation_split
from minnet.layers.base import Layer, _shape_str

__all__ = ["Sequential", "load_model"]


def _is_input_layer(layer):
    return type(layer).__name__ in ("Input", "InputLayer")


def _input_layer_shape(layer):
    """Full input shape (batch dim first, may be None) declared by an ``Input`` layer."""
    for attribute in ("batch_shape", "_batch_shape"):
        shape = getattr(layer, attribute, None)
        if shape is not None:
            return tuple(shape)
    for attribute in ("shape", "input_shape", "_shape"):
        shape = getattr(layer, attribute, None)
        if shape is not None:
            batch_size = getattr(layer, "batch_size", None)
            return (batch_size,) + tuple(shape)
    raise ValueError(f"Could not read the shape of input layer '{layer.name}'.")


def _build_layer(layer, input_shape):
    """Build ``layer`` for ``input_shape`` (as ``Layer.__call__`` would) and return its output shape."""
    if not layer.built:
        layer.build(input_shape)
        layer._build_input_shape = tuple(input_shape)
        layer.built = True
    return tuple(layer.compute_output_shape(input_shape))


def _check_int(value, name, minimum):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"Invalid value for argument `{name}`: expected an int >= {minimum}. "
                        f"Received: {name}={value!r}")
    if value < minimum:
        raise ValueError(f"Invalid value for argument `{name}`: expected an int >= {minimum}. "
                         f"Received: {name}={value!r}")
    return int(value)


class NotCompiledError(ValueError, RuntimeError):
    """fit/evaluate/train_on_batch called before ``compile()`` (a ValueError, as in Keras)."""


def _check_verbose(verbose, default):
    if verbose == "auto":
        # "auto": the live bar on a terminal or notebook, one line per epoch in a log
        # file (callbacks.resolve_verbose); `default` is what "auto" means when a bar
        # would be 1 (predict passes 0: silent unless asked).
        return _callbacks.resolve_verbose("auto") if default == 1 else default
    if isinstance(verbose, bool) or verbose not in (0, 1, 2):
        raise ValueError(f"Invalid value for argument `verbose`: expected 'auto', 0, 1 or 2. "
                         f"Received: verbose={verbose!r}")
    return int(verbose)


def _format_bytes(n_bytes):
    value = float(n_bytes)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024


def _format_count(n):
    value = float(n)
    for unit in ("", "K", "M", "G", "T"):
        if abs(value) < 1000 or unit == "T":
            return f"{int(value)}" if unit == "" else f"{value:.2f} {unit}"
        value /= 1000


def _loss_name(loss):
    return (getattr(loss, "name", None) or getattr(loss, "__name__", None)
            or type(loss).__name__).lower()


def _is_sparse_loss(loss):
    name = type(loss).__name__ if not isinstance(loss, str) else loss
    name = name.lower().replace("_", "")
    if name in ("sparsecategoricalcrossentropy", "scce"):
        return True
    return "sparse" in _loss_name(loss).replace("_", "") and "crossentropy" in _loss_name(loss).replace("_", "")


def _optimizer_slots(optimizer):
    """Arrays of per-parameter state each optimizer keeps (for the memory estimate)."""
    if optimizer is None:
        return 0
    config = {}
    try:
        config = optimizer.get_config() or {}
    except Exception:
        pass
    name = type(optimizer).__name__.lower()
    if name in ("adam", "adamw"):
        return 3 if config.get("amsgrad") else 2
    if name == "rmsprop":
        return 1 + bool(config.get("momentum")) + bool(config.get("centered"))
    if name == "adagrad":
        return 1
    if name == "sgd":
        return 1 if config.get("momentum") else 0
    return 1


def _reusing_buffers(method):
    """Run a loop (fit / evaluate / predict) inside ``_memory.buffer_cache()``: the large
    NumPy buffers a step frees are kept for the next step instead of being returned to
    the OS and faulted in again (docs/performance.md, "Page faults")."""
    @functools.wraps(method)
    def loop(self, *args, **kwargs):
        with _memory.buffer_cache():
            return method(self, *args, **kwargs)
    return loop


class Sequential(Layer):
    """A linear stack of layers, trained with ``compile`` and ``fit`` (Keras) or by hand.

    Args:
        layers: optional list of layers, added in order with ``add``.
        name: the model's name (default ``sequential``, ``sequential_1``, ...).
        dtype: recorded for the config; each layer keeps its own dtype and casts its inputs.
        trainable: False freezes every layer.

    Shape:
        - Input: whatever the first layer accepts, batch first, e.g. ``(N, C, H, W)``.
        - Output: the last layer's output, batch first.

    Example:
        >>> model = Sequential([layers.Dense(32, activation="relu"), layers.Dense(10)])
        >>> model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
        >>> history = model.fit(x_train, y_train, epochs=5)
    """

    def __init__(self, layers=None, name=None, dtype="float32", trainable=True):
        super().__init__(name=name, dtype=dtype, trainable=trainable)
        self._input_layer = None      # set first so repr lists the Input layer first
        self._layers = []
        self._output_shapes = []
        self.optimizer = None
        self.loss = None
        self.compiled_metrics = []
        self.loss_weight = 1.0
        self.stop_training = False
        self.history = None
        self._compile_identifiers = None
        self._optimizer_needs_params = False
        if layers is not None:
            if isinstance(layers, Layer) or not isinstance(layers, (list, tuple)):
                raise TypeError(f"Invalid value for argument `layers`: expected a list of layers. "
                                f"Received: layers of type {type(layers).__name__}")
            for layer in layers:
                self.add(layer)

    # ------------------------------------------------------------------ structure
    @property
    def layers(self):
        """The layers of the model in order (an ``Input`` layer is not listed, as in Keras)."""
        return list(self._layers)

    def add(self, layer):
        """Append ``layer``; a model with a known input shape builds the new layer right away.

        Args:
            layer: a ``minnet.layers.Layer`` instance. An ``Input`` layer may only come first.
        """
        if not isinstance(layer, Layer):
            raise TypeError(f"Invalid value for argument `layer`: expected an instance of "
                            f"minnet.layers.Layer. Received: layer={layer!r} of type "
                            f"{type(layer).__name__}")
        if layer is self:
            raise ValueError("A Sequential model cannot be added to itself.")
        if _is_input_layer(layer):
            if self._layers or self._input_layer is not None:
                raise ValueError(f"An Input layer can only be the first layer of a Sequential model. "
                                 f"Received an Input layer after {len(self._layers)} layer(s).")
            self._input_layer = layer
            self.build(_input_layer_shape(layer))
            return
        if any(existing is layer for existing in self._layers):
            raise ValueError(f"Layer '{layer.name}' is already in model '{self.name}'; create a new "
                             f"layer to stack another one (weights would be shared otherwise).")
        self._layers = self._layers + [layer]
        if self.built:
            shape = self._output_shapes[-1] if self._output_shapes else self._build_input_shape
            self._output_shapes.append(_build_layer(layer, shape))
            self._optimizer_params_changed()

    def pop(self):
        """Remove and return the last layer."""
        if not self._layers:
            raise ValueError(f"There are no layers in model '{self.name}' to pop.")
        layer = self._layers[-1]
        self._layers = self._layers[:-1]
        if self._output_shapes:
            self._output_shapes = self._output_shapes[:-1]
        self._optimizer_params_changed()
        return layer

    def _optimizer_params_changed(self):
        if self.optimizer is not None and self._optimizer_needs_params and self.built:
            self.optimizer.set_parameters(self.parameters())

    # ------------------------------------------------------------------ layer interface
    def build(self, input_shape=None):
        """Build every layer for inputs of ``input_shape`` (batch dim first, may be None).

        Args:
            input_shape: tuple such as ``(None, 1, 8, 8)``; may be omitted when the model
                starts with an ``Input`` layer.
        """
        if input_shape is None:
            if self._input_layer is None:
                raise ValueError(f"Model '{self.name}': `build()` needs `input_shape` (batch dim "
                                 f"first, e.g. (None, 1, 28, 28)) when there is no Input layer.")
            input_shape = _input_layer_shape(self._input_layer)
        try:
            input_shape = tuple(None if s is None else int(s) for s in input_shape)
        except (TypeError, ValueError):
            raise TypeError(f"Invalid value for argument `input_shape`: expected a tuple of ints "
                            f"(None allowed for the batch size). Received: input_shape={input_shape!r}") from None
        if len(input_shape) < 1:
            raise ValueError(f"Invalid value for argument `input_shape`: expected the batch dimension "
                             f"first, e.g. (None, 16). Received: input_shape={input_shape!r}")
        shape = (None,) + input_shape[1:]
        shapes = []
        for layer in self._layers:
            shape = _build_layer(layer, shape)
            shapes.append(shape)
        self._output_shapes = shapes
        self._build_input_shape = (None,) + input_shape[1:]
        self.built = True
        if self.optimizer is not None and self._optimizer_needs_params:
            self.optimizer.set_parameters(self.parameters())

    def __call__(self, x, training=None):
        """Run the layers in order. ``x`` is an ndarray, list or ``mn.Tensor``; returns a Tensor.

        Each layer casts the input to its own dtype, so a float64 model keeps float64 inputs.
        """
        if not isinstance(x, Tensor):
            array = as_array(x, "x")
            if array.dtype.kind not in "fiub":
                raise TypeError(f"Model '{self.name}' expected a numeric array or Tensor as input. "
                                f"Received dtype {array.dtype}")
            x = Tensor(array)
        if not self.built:
            if x.ndim < 1:
                raise ValueError(f"Model '{self.name}' expected a batch of inputs (batch dim first). "
                                 f"Received a scalar")
            self.build(tuple(x.shape))
        elif self._build_input_shape is not None and x.shape[1:] != self._build_input_shape[1:]:
            expected = self._build_input_shape
            if len(x.shape) != len(expected) or any(
                    e is not None and e != s for e, s in zip(expected[1:], x.shape[1:])):
                raise ValueError(f"Input 0 of model '{self.name}' is incompatible with the model: "
                                 f"expected shape {_shape_str(expected)}, found shape {tuple(x.shape)}")
        training = self.training if training is None else bool(training)
        return self.call(x, training=training)

    def call(self, x, training=False):
        for layer in self._layers:
            x = layer(x, training=training)
        return x

    def compute_output_shape(self, input_shape):
        shape = tuple(input_shape)
        for layer in self._layers:
            shape = tuple(layer.compute_output_shape(shape))
        return shape

    def count_flops(self, input_shape):
        total = 0
        shape = tuple(input_shape)
        for layer in self._layers:
            total += int(layer.count_flops(shape))
            shape = tuple(layer.compute_output_shape(shape))
        return total

    def train(self, mode=True):
        """Training mode (dropout on, batch statistics) for the model and every layer; returns self."""
        return super().train(mode)

    def get_config(self):
        layers = []
        from minnet.layers import serialize
        if self._input_layer is not None:
            layers.append(serialize(self._input_layer))
        layers.extend(serialize(layer) for layer in self._layers)
        config = super().get_config()
        config["layers"] = layers
        config["build_input_shape"] = (None if self._build_input_shape is None else
                                       [None if s is None else int(s) for s in self._build_input_shape])
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        from minnet.layers import deserialize
        config = dict(config)
        layer_configs = config.pop("layers", [])
        build_input_shape = config.pop("build_input_shape", None)
        model = cls(**config)
        for layer_config in layer_configs:
            model.add(deserialize(layer_config, custom_objects=custom_objects))
        if build_input_shape is not None and not model.built:
            model.build(tuple(build_input_shape))
        return model

    def extra_repr(self):
        n = len(self._layers)
        return f"{n} layer" if n == 1 else f"{n} layers"

    # ------------------------------------------------------------------ summary
    def summary(self, batch_size=None, print_fn=print):
        """Print a table of the layers: output shape, parameters, activation memory and FLOPs.

        Args:
            batch_size: batch size for the activation memory, FLOP and training-step
                columns (default: 1, i.e. per sample).
            print_fn: called with each line (default ``print``).

        Raises:
            ValueError: the model is not built yet.
        """
        if not self.built:
            raise ValueError(f"Model '{self.name}' has not been built yet, so its weights and output "
                             f"shapes are unknown. Call `model.build(input_shape)`, start the model "
                             f"with `layers.Input(shape)`, or call it on a batch first.")
        if batch_size is not None:
            batch_size = _check_int(batch_size, "batch_size", 1)
        batch = 1 if batch_size is None else batch_size
        rows = []
        shape = (batch,) + tuple(self._build_input_shape[1:])
        input_bytes = int(np.prod(shape)) * self._layers[0].dtype.itemsize if self._layers else 0
        total_activations = input_bytes
        total_flops = 0
        for layer, output_shape in zip(self._layers, self._output_shapes):
            concrete = (batch,) + tuple(output_shape[1:])
            n_bytes = int(np.prod(concrete)) * layer.dtype.itemsize
            flops = int(layer.count_flops(shape))
            total_activations += n_bytes
            total_flops += flops
            rows.append((f"{layer.name} ({type(layer).__name__})", _shape_str(output_shape),
                         f"{layer.count_params():,}", _format_bytes(n_bytes), _format_count(flops)))
            shape = concrete
        headers = ("Layer (type)", "Output Shape", "Param #",
                   f"Activations (B={batch})", f"FLOPs (B={batch})")
        widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
                  for i, h in enumerate(headers)]
        widths[0] = max(widths[0], 28)
        widths[1] = max(widths[1], 18)

        def line(cells):
            return "  ".join([cells[0].ljust(widths[0]), cells[1].ljust(widths[1])]
                             + [c.rjust(w) for c, w in zip(cells[2:], widths[2:])])

        width = sum(widths) + 2 * (len(widths) - 1)
        print_fn(f'Model: "{self.name}"')
        print_fn("_" * width)
        print_fn(line(headers))
        print_fn("=" * width)
        for row in rows:
            print_fn(line(row))
        print_fn("=" * width)
        trainable = sum(int(np.prod(w.shape)) for w in self.trainable_weights)
        non_trainable = sum(int(np.prod(w.shape)) for w in self.non_trainable_weights)
        param_bytes = sum(int(np.prod(w.shape)) * w.dtype.itemsize for w in self.weights)
        trainable_bytes = sum(int(np.prod(w.shape)) * w.dtype.itemsize for w in self.trainable_weights)
        slots = _optimizer_slots(self.optimizer)
        optimizer_bytes = slots * trainable_bytes
        step_bytes = total_activations + param_bytes + trainable_bytes + optimizer_bytes
        print_fn(f"Total params: {trainable + non_trainable:,} ({_format_bytes(param_bytes)})")
        print_fn(f"Trainable params: {trainable:,}")
        print_fn(f"Non-trainable params: {non_trainable:,}")
        print_fn(f"Forward FLOPs at batch size {batch}: {_format_count(total_flops)}")
        optimizer_name = type(self.optimizer).__name__ if self.optimizer is not None else "no optimizer yet"
        print_fn(f"One training step at batch size {batch}: ~{_format_bytes(step_bytes)} "
                 f"(activations {_format_bytes(total_activations)} + params "
                 f"{_format_bytes(param_bytes)} + grads {_format_bytes(trainable_bytes)} + "
                 f"optimizer state {_format_bytes(optimizer_bytes)} [{optimizer_name}, "
                 f"{slots} slot(s)])")
        print_fn("_" * width)

    # ------------------------------------------------------------------ compile
    def compile(self, optimizer="rmsprop", loss=None, metrics=None, loss_weights=None):
        """Choose the optimizer, the loss and the metrics for ``fit`` / ``evaluate``.

        Args:
            optimizer: an optimizer instance or a name (``"sgd"``, ``"adam"``, ...). One
                created without parameters receives ``model.parameters()`` once the
                model is built.
            loss: a Loss instance, a name (``"mse"``, ``"sparse_categorical_crossentropy"``,
                ...) or a callable ``loss(y_true, y_pred)`` returning a scalar Tensor.
            metrics: list of metric names / instances; ``"accuracy"`` picks the right
                accuracy for the loss.
            loss_weights: optional float (or a one-element list) multiplying the loss.
        """
        from minnet import losses as losses_module
        from minnet import metrics as metrics_module
        from minnet import optimizers as optimizers_module

        optimizer_object = optimizers_module.get(optimizer)
        loss_object = None if loss is None else losses_module.get(loss)
        if metrics is None:
            metrics = []
        if isinstance(metrics, (str, dict)) or not isinstance(metrics, (list, tuple)):
            raise TypeError(f"Invalid value for argument `metrics`: expected a list of metrics. "
                            f"Received: metrics={metrics!r}")
        metric_objects = [metrics_module.get(m, loss=loss if loss is not None else None)
                          for m in metrics]
        if loss_weights is not None:
            if isinstance(loss_weights, (list, tuple)) and len(loss_weights) == 1:
                loss_weights = loss_weights[0]
            if isinstance(loss_weights, bool) or not isinstance(loss_weights, numbers.Real):
                raise ValueError(f"Invalid value for argument `loss_weights`: expected a float (this "
                                 f"model has one output). Received: loss_weights={loss_weights!r}")
        self.optimizer = optimizer_object
        self.loss = loss_object
        self.compiled_metrics = metric_objects
        self.loss_weight = 1.0 if loss_weights is None else float(loss_weights)
        self._compile_identifiers = {"optimizer": optimizer, "loss": loss, "metrics": list(metrics),
                                     "loss_weights": loss_weights}
        self._optimizer_needs_params = not getattr(optimizer_object, "params", None) and not \
            getattr(optimizer_object, "param_groups", None)
        if self._optimizer_needs_params and self.built:
            optimizer_object.set_parameters(self.parameters())

    @property
    def compiled(self):
        return self.optimizer is not None

    @property
    def metrics_names(self):
        return ["loss"] + [m.name for m in self.compiled_metrics]

    def _require_compiled(self, method, need_loss=True):
        if self.optimizer is None:
            raise NotCompiledError(f"You must call `compile(optimizer, loss)` on model '{self.name}' "
                               f"before `{method}()`.")
        if need_loss and self.loss is None:
            raise NotCompiledError(f"Model '{self.name}' was compiled without a loss: pass `loss=` to "
                               f"`compile()` before `{method}()`.")

    # ------------------------------------------------------------------ data checks
    def _prepare_targets(self, y, name="y"):
        """Check the targets for the loss; integer-valued float labels of sparse losses -> int64."""
        if _is_sparse_loss(self.loss):
            if y.dtype.kind in "iu":
                return y.astype(np.int64, copy=False)
            if y.dtype.kind == "b" or y.dtype.kind not in "f":
                raise TypeError(f"Invalid value for argument `{name}`: expected integer class labels "
                                f"for loss {type(self.loss).__name__}. Received: {name} with dtype "
                                f"{y.dtype}")
            if not np.all(np.isfinite(y)) or np.any(y != np.round(y)):
                raise ValueError(f"Invalid value for argument `{name}`: expected integer class labels "
                                 f"for loss {type(self.loss).__name__}; received float labels that are "
                                 f"not whole numbers (one-hot targets need CategoricalCrossentropy)")
            return y.astype(np.int64)
        if y.dtype.kind not in "fiub":
            raise TypeError(f"Invalid value for argument `{name}`: expected a numeric array. "
                            f"Received: {name} with dtype {y.dtype}")
        return y

    @staticmethod
    def _class_ids(y, one_hot_only=False):
        """Class index per sample for integer labels or one-hot rows; None for other targets.

        With ``one_hot_only`` 2-D float targets count as classes only when every row is
        one-hot (so multi-output regression targets are not mistaken for classes);
        otherwise the argmax of each row is used (soft / smoothed labels).
        """
        if y.ndim == 1 and y.dtype.kind in "iu":
            return y.astype(np.int64)
        if y.ndim == 2 and y.shape[1] > 1:
            if one_hot_only and not (np.all((y == 0) | (y == 1)) and np.all(y.sum(axis=1) == 1)):
                return None
            return np.argmax(y, axis=1)
        if y.ndim == 2 and y.shape[1] == 1 and y.dtype.kind in "iub":
            return y[:, 0].astype(np.int64)
        return None

    def _sample_weights(self, y, sample_weight, class_weight):
        weights = None
        if sample_weight is not None:
            weights = as_array(sample_weight, "sample_weight").astype(np.float64)
            if weights.shape != (len(y),):
                raise ValueError(f"Invalid value for argument `sample_weight`: expected shape "
                                 f"({len(y)},) (one weight per sample). Received: sample_weight "
                                 f"with shape {weights.shape}")
        if class_weight is not None:
            if not isinstance(class_weight, dict):
                raise TypeError(f"Invalid value for argument `class_weight`: expected a dict "
                                f"{{class index: weight}}. Received: class_weight={class_weight!r}")
            ids = self._class_ids(y)
            if ids is None:
                raise ValueError(f"Argument `class_weight` needs class labels (integers or one-hot "
                                 f"rows). Received targets with shape {y.shape} and dtype {y.dtype}")
            missing = sorted(set(np.unique(ids).tolist()) - set(int(k) for k in class_weight))
            if missing:
                raise ValueError(f"Invalid value for argument `class_weight`: no weight for "
                                 f"class(es) {missing}. Received: class_weight={class_weight!r}")
            table = np.ones(int(max(max(class_weight), ids.max())) + 1)
            for key, value in class_weight.items():
                table[int(key)] = float(value)
            per_class = table[ids]
            weights = per_class if weights is None else weights * per_class
        return weights

    def _check_inputs(self, x, y=None, need_y=True):
        x = as_array(x, "x")
        if need_y and y is None:
            raise ValueError("Argument `y` is required: pass the targets for `x`.")
        if x.ndim == 0 or len(x) == 0:
            raise ValueError(f"Invalid value for argument `x`: expected at least one sample (batch "
                             f"dimension first). Received: x with shape {x.shape}")
        if x.dtype.kind not in "fiub":
            raise TypeError(f"Invalid value for argument `x`: expected a numeric array. Received: x "
                            f"with dtype {x.dtype}")
        if y is not None:
            y = as_array(y, "y")
            if y.ndim == 0 or len(y) != len(x):
                raise ValueError(f"Arguments `x` and `y` must have the same number of samples. "
                                 f"Received: len(x)={len(x)}, y with shape {y.shape}")
            y = self._prepare_targets(y)
        return x, y

    # ------------------------------------------------------------------ one step
    def _compute_loss(self, y_true, y_pred, sample_weight=None):
        if sample_weight is None:
            loss = self.loss(y_true, y_pred)
        else:
            loss = self.loss(y_true, y_pred, sample_weight=sample_weight.astype(y_pred.dtype))
        if self.loss_weight != 1.0:
            loss = loss * self.loss_weight
        return loss

    def _train_step(self, x, y, sample_weight=None):
        """One optimisation step on a batch; returns (loss value, predictions ndarray)."""
        self.optimizer.zero_grad()
        y_pred = self(x, training=True)
        loss = self._compute_loss(y, y_pred, sample_weight)
        loss.backward()
        self.optimizer.step()
        return float(loss.item()), y_pred.data

    def _test_step(self, x, y, sample_weight=None):
        with no_grad():
            y_pred = self(x, training=False)
            loss = self._compute_loss(y, y_pred, sample_weight)
        return float(loss.item()), y_pred.data

    def _reset_metrics(self):
        for metric in self.compiled_metrics:
            metric.reset_state()

    def _update_metrics(self, y, y_pred, sample_weight):
        for metric in self.compiled_metrics:
            metric.update_state(y, y_pred, sample_weight=sample_weight)

    def _logs(self, loss_total, count, prefix=""):
        logs = {prefix + "loss": loss_total / count if count else float("nan")}
        for metric in self.compiled_metrics:
            logs[prefix + metric.name] = float(metric.result())
        return logs

    # ------------------------------------------------------------------ modes
    def _save_modes(self):
        return [(self, self.training)] + [(layer, layer.training) for layer in self._layers]

    @staticmethod
    def _restore_modes(modes):
        (model, model_mode), rest = modes[0], modes[1:]
        model.training = model_mode
        for layer, mode in rest:
            layer.train(mode)

    def _callback_list(self, callbacks, verbose, epochs, steps):
        from minnet.callbacks import CallbackList
        if isinstance(callbacks, CallbackList):
            return callbacks
        if callbacks is not None and not isinstance(callbacks, (list, tuple)):
            raise TypeError(f"Invalid value for argument `callbacks`: expected a list of Callback "
                            f"objects. Received: callbacks={callbacks!r}")
        return CallbackList(list(callbacks or []), add_history=True, add_progbar=verbose != 0,
                            model=self, verbose=verbose, epochs=epochs, steps=steps)

    # ------------------------------------------------------------------ fit
    @_reusing_buffers
    def fit(self, x=None, y=None, batch_size=32, epochs=1, verbose="auto", callbacks=None,
            validation_split=0.0, validation_data=None, shuffle=True, class_weight=None,
            sample_weight=None, initial_epoch=0, seed=None):
        """Train the model for ``epochs`` passes over ``(x, y)``.

        Each step: ``zero_grad``, forward with ``training=True``, loss (weighted by
        ``sample_weight * class_weight``), ``backward``, ``step``. The logs are epoch means
        weighted by batch size; validation values are prefixed ``val_``.

        Args:
            x: inputs, batch first (ndarray, list or Tensor).
            y: targets (integer labels for sparse cross-entropy).
            batch_size: samples per step (int >= 1).
            epochs: index of the last epoch (trains ``epochs - initial_epoch`` epochs).
            verbose: ``"auto"``/1 progress bar, 2 one line per epoch, 0 silent.
            callbacks: list of ``minnet.callbacks.Callback``.
            validation_split: fraction in [0, 1) of the LAST samples (taken before
                shuffling) held out for validation.
            validation_data: ``(x_val, y_val)`` or ``(x_val, y_val, sample_weight_val)``;
                overrides ``validation_split``.
            shuffle: shuffle the training samples before each epoch.
            class_weight: dict ``{class index: weight}`` multiplying each sample's loss.
            sample_weight: array of per-sample loss weights, shape ``(N,)``.
            initial_epoch: epoch to start from (to resume a previous run).
            seed: int seed for shuffling (epoch ``e`` uses ``default_rng([seed, e])``, so a
                resumed run sees the same order); None draws from ``mn.manual_seed``'s generator.

        Returns:
            History: ``history.history`` maps each log name to its list of epoch values.

        Shape:
            - x: ``(N, *input_shape)``, y: ``(N,)`` or ``(N, *output_shape)``
        """
        self._require_compiled("fit")
        x, y = self._check_inputs(x, y)
        batch_size = _check_batch_size(batch_size)
        epochs = _check_int(epochs, "epochs", 0)
        initial_epoch = _check_int(initial_epoch, "initial_epoch", 0)
        verbose = _check_verbose(verbose, 1)
        seed = _check_seed(seed)
        weights = self._sample_weights(y, sample_weight, class_weight)

        validation = None
        if validation_data is not None:
            validation = self._unpack_validation_data(validation_data)
        elif validation_split:
            (x, y), (x_val, y_val) = train_validation_split(x, y, validation_split)
            w_val = None
            if weights is not None:
                weights, w_val = weights[:len(x)], weights[len(x):]
            self._warn_missing_classes(y, y_val)
            validation = (x_val, y_val, w_val)

        if not self.built:
            self.build((None,) + tuple(x.shape[1:]))
        batches = Batches(x, y, batch_size=batch_size, shuffle=shuffle, sample_weight=weights)
        callback_list = self._callback_list(callbacks, verbose, epochs, len(batches))
        self.history = self._find_history(callback_list)
        modes = self._save_modes()
        self.stop_training = False
        try:
            self.train()
            callback_list.on_train_begin()
            epoch_logs = {}
            for epoch in range(initial_epoch, epochs):
                self._reset_metrics()
                callback_list.on_epoch_begin(epoch)
                generator = (np.random.default_rng([seed, epoch]) if seed is not None
                             else _random.generator())
                loss_total, count = 0.0, 0
                for step, batch in enumerate(self._iterate(batches, generator)):
                    xb, yb, wb = batch
                    callback_list.on_train_batch_begin(step)
                    loss_value, y_pred = self._train_step(xb, yb, wb)
                    self._update_metrics(yb, y_pred, wb)
                    loss_total += loss_value * len(xb)
                    count += len(xb)
                    callback_list.on_train_batch_end(step, self._logs(loss_total, count))
                    if self.stop_training:
                        break
                epoch_logs = self._logs(loss_total, count)
                if validation is not None:
                    x_val, y_val, w_val = validation
                    val_logs = self._run_evaluation(x_val, y_val, w_val, batch_size, callback_list)
                    epoch_logs.update({"val_" + k: v for k, v in val_logs.items()})
                    self.train()
                callback_list.on_epoch_end(epoch, epoch_logs)
                if self.stop_training:
                    break
            callback_list.on_train_end(epoch_logs)
        finally:
            self._restore_modes(modes)
        return self.history

    @staticmethod
    def _iterate(batches, generator):
        """Batches of ``(x, y, sample_weight)`` in the order drawn from ``generator``."""
        n = batches.n_samples
        order = generator.permutation(n) if batches.shuffle else None
        for start in range(0, n, batches.batch_size):
            stop = min(start + batches.batch_size, n)
            index = slice(start, stop) if order is None else order[start:stop]
            weights = None if batches.sample_weight is None else batches.sample_weight[index]
            yield batches.x[index], batches.y[index], weights

    @staticmethod
    def _find_history(callback_list):
        from minnet.callbacks import History
        for callback in getattr(callback_list, "callbacks", []):
            if isinstance(callback, History):
                return callback
        return None

    def _unpack_validation_data(self, validation_data):
        if not isinstance(validation_data, (tuple, list)) or len(validation_data) not in (2, 3):
            raise ValueError(f"Invalid value for argument `validation_data`: expected a tuple "
                             f"(x_val, y_val) or (x_val, y_val, sample_weight_val). Received: "
                             f"{type(validation_data).__name__}"
                             + (f" of length {len(validation_data)}"
                                if isinstance(validation_data, (tuple, list)) else ""))
        x_val, y_val = validation_data[0], validation_data[1]
        try:
            x_val, y_val = self._check_inputs(x_val, y_val)
        except (ValueError, TypeError) as error:
            raise type(error)(f"Invalid `validation_data`: {error}") from None
        w_val = None
        if len(validation_data) == 3 and validation_data[2] is not None:
            w_val = self._sample_weights(y_val, validation_data[2], None)
        return x_val, y_val, w_val

    def _warn_missing_classes(self, y_train, y_val):
        train_ids = self._class_ids(y_train, one_hot_only=True)
        val_ids = self._class_ids(y_val, one_hot_only=True)
        if train_ids is None or val_ids is None:
            return
        missing = sorted(set(np.unique(val_ids).tolist()) - set(np.unique(train_ids).tolist()))
        if missing:
            warnings.warn(f"validation_split takes the last samples before shuffling, and class(es) "
                          f"{missing} occur only in that validation part, so the model never trains "
                          f"on them. Shuffle x and y before fit (e.g. with a permutation) if the "
                          f"data is sorted by class.", UserWarning, stacklevel=3)

    # ------------------------------------------------------------------ evaluate / predict
    def _run_evaluation(self, x, y, weights, batch_size, callback_list):
        batches = Batches(x, y, batch_size=batch_size, sample_weight=weights)
        self._reset_metrics()
        self.eval()
        callback_list.on_test_begin()
        loss_total, count = 0.0, 0
        for step, (xb, yb, wb) in enumerate(self._iterate(batches, None)):
            callback_list.on_test_batch_begin(step)
            loss_value, y_pred = self._test_step(xb, yb, wb)
            self._update_metrics(yb, y_pred, wb)
            loss_total += loss_value * len(xb)
            count += len(xb)
            callback_list.on_test_batch_end(step, self._logs(loss_total, count))
        logs = self._logs(loss_total, count)
        callback_list.on_test_end(logs)
        return logs

    @_reusing_buffers
    def evaluate(self, x=None, y=None, batch_size=32, verbose="auto", sample_weight=None,
                 callbacks=None, return_dict=False):
        """Loss and metrics over ``(x, y)`` in eval mode, without building a graph.

        Args:
            x: inputs; y: targets.
            batch_size: samples per batch (int >= 1).
            verbose: ``"auto"``/1 progress bar, 0 silent.
            sample_weight: optional per-sample loss weights ``(N,)``.
            callbacks: list of callbacks (``on_test_*`` hooks).
            return_dict: return ``{"loss": ..., metric: ...}`` instead of a list.

        Returns:
            The loss (float) when no metrics are compiled, else ``[loss, *metrics]``, or a dict.
        """
        self._require_compiled("evaluate")
        x, y = self._check_inputs(x, y)
        batch_size = _check_batch_size(batch_size)
        verbose = _check_verbose(verbose, 1)
        weights = self._sample_weights(y, sample_weight, None)
        if not self.built:
            self.build((None,) + tuple(x.shape[1:]))
        steps = -(-len(x) // batch_size)
        callback_list = self._callback_list(callbacks, verbose, 1, steps)
        modes = self._save_modes()
        try:
            logs = self._run_evaluation(x, y, weights, batch_size, callback_list)
        finally:
            self._restore_modes(modes)
        if return_dict:
            return logs
        values = [logs["loss"]] + [logs[m.name] for m in self.compiled_metrics]
        return values[0] if len(values) == 1 else values

    @_reusing_buffers
    def predict(self, x, batch_size=32, verbose=0, callbacks=None):
        """Outputs for ``x`` as one ndarray, in eval mode and without building a graph.

        Args:
            x: inputs, batch first.
            batch_size: samples per batch (int >= 1).
            verbose: 0 silent (default), 1 progress bar.
            callbacks: list of callbacks (``on_predict_*`` hooks).

        Returns:
            np.ndarray with the model's outputs, batch first.
        """
        x, _ = self._check_inputs(x, need_y=False)
        batch_size = _check_batch_size(batch_size)
        verbose = _check_verbose(verbose, 1)
        if not self.built:
            self.build((None,) + tuple(x.shape[1:]))
        batches = Batches(x, batch_size=batch_size)
        callback_list = self._callback_list(callbacks, verbose, 1, len(batches))
        modes = self._save_modes()
        outputs = []
        try:
            self.eval()
            callback_list.on_predict_begin()
            with no_grad():
                for step, xb in enumerate(batches):
                    callback_list.on_predict_batch_begin(step)
                    out = self(xb, training=False).data
                    outputs.append(out)
                    callback_list.on_predict_batch_end(step, {"outputs": out})
            callback_list.on_predict_end()
        finally:
            self._restore_modes(modes)
        return np.concatenate(outputs, axis=0)

    # ------------------------------------------------------------------ single batches
    def train_on_batch(self, x, y, sample_weight=None, class_weight=None, return_dict=False):
        """One optimisation step on one batch; returns the loss (and metrics) for that batch."""
        self._require_compiled("train_on_batch")
        x, y = self._check_inputs(x, y)
        weights = self._sample_weights(y, sample_weight, class_weight)
        if not self.built:
            self.build((None,) + tuple(x.shape[1:]))
        modes = self._save_modes()
        try:
            self.train()
            self._reset_metrics()
            loss_value, y_pred = self._train_step(x, y, weights)
            self._update_metrics(y, y_pred, weights)
        finally:
            self._restore_modes(modes)
        return self._batch_result(loss_value, len(x), return_dict)

    def test_on_batch(self, x, y, sample_weight=None, return_dict=False):
        """Loss (and metrics) on one batch in eval mode."""
        self._require_compiled("test_on_batch")
        x, y = self._check_inputs(x, y)
        weights = self._sample_weights(y, sample_weight, None)
        if not self.built:
            self.build((None,) + tuple(x.shape[1:]))
        modes = self._save_modes()
        try:
            self.eval()
            self._reset_metrics()
            loss_value, y_pred = self._test_step(x, y, weights)
            self._update_metrics(y, y_pred, weights)
        finally:
            self._restore_modes(modes)
        return self._batch_result(loss_value, len(x), return_dict)

    def predict_on_batch(self, x):
        """Outputs for one batch (eval mode, no graph) as an ndarray."""
        x, _ = self._check_inputs(x, need_y=False)
        modes = self._save_modes()
        try:
            self.eval()
            with no_grad():
                return self(x, training=False).data
        finally:
            self._restore_modes(modes)

    def _batch_result(self, loss_value, n, return_dict):
        logs = self._logs(loss_value * n, n)
        if return_dict:
            return logs
        values = [logs["loss"]] + [logs[m.name] for m in self.compiled_metrics]
        return values[0] if len(values) == 1 else values

    # ------------------------------------------------------------------ saving
    def save(self, path):
        """Save architecture, weights, compile settings and optimizer state to ONE file.

        The write is atomic: an interrupted save never destroys an existing file.
        See ``minnet.saving.save_model``.
        """
        from minnet import saving
        saving.save_model(self, path)

    def save_weights(self, path):
        """Save ``get_weights()`` to an ``.npz`` file (atomic write)."""
        from minnet import saving
        saving.save_weights(self, path)

    def load_weights(self, path):
        """Load weights saved by ``save_weights`` (count and shapes are checked)."""
        from minnet import saving
        saving.load_weights(self, path)


def load_model(path, custom_objects=None, compile=True, restore_random_state=True):
    """Load a model saved with ``Sequential.save`` (see ``minnet.saving.load_model``)."""
    from minnet import saving
    return saving.load_model(path, custom_objects=custom_objects, compile=compile,
                             restore_random_state=restore_random_state)
