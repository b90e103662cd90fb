"""The ``Layer`` base class: weights, build-on-first-call, train/eval, config.

A layer owns state (its weights and its ``training`` flag) and delegates the math to
``minnet.functional``.  Its lifecycle is Keras's:

1. ``__init__`` stores and validates hyperparameters (no weights yet);
2. ``build(input_shape)`` creates the weights once the input size is known
   (``Dense(64)`` needs no input size) - ``__call__`` does this on the first call;
3. ``call(x, training)`` computes the output;
4. ``get_config()`` / ``from_config(config)`` describe and re-create the layer.

A custom layer subclasses ``Layer``::

    class Scale(mn.layers.Layer):
        def build(self, input_shape):
            self.alpha = self.add_weight("alpha", (input_shape[-1],), initializer="ones")
        def call(self, x, training=False):
            return x * self.alpha

Sublayers assigned as attributes (or in lists/tuples of layers) are tracked: their
weights appear in ``weights`` / ``parameters()``, and ``train()`` / ``eval()`` reach them.

Every layer takes Keras's declaration keywords (``input_shape=``, ``batch_size=``,
``batch_input_shape=``, ``input_dim=``) whatever its own ``__init__`` spells out: they are
taken off before the subclass's ``__init__`` runs and stored as ``_batch_input_shape``
(see ``Layer.__init_subclass__``), which a ``Sequential`` reads to build itself from its
first layer.

Regularization: ``add_weight(..., regularizer=, constraint=)`` and the layer's
``activity_regularizer`` feed ``layer.losses`` (Tensors computed from the current weights
and the last call's output, with their graphs), which a training step adds to its loss.
"""
import functools
import inspect
import math

import numpy as np

from minnet import config, constraints, initializers, regularizers
from minnet._naming import unique_name
from minnet.layers.devices import PyTorchDeviceMethods
from minnet._registry import snake_case
from minnet.autograd import Parameter, Tensor, no_grad
from minnet.autograd.hooks import HookDict, call_with_hooks
from minnet.autograd.masks import MASKS, get_keras_mask, set_keras_mask
from minnet.layers import call_spec
from minnet.layers.call_spec import CALL_INFO as _CALL_INFO
from minnet.layers.call_context import STATE as _CALL_STATE
from minnet.layers.declaration import declared_batch_shape
from minnet.layers.input_spec import check_input_spec
from minnet.layers.symbolic_layer import SymbolicLayer
from minnet.layers.variable import variable_trainable
from minnet.layers.weight_options import DEFAULT_TARGETS, option_for, option_keywords
from minnet.ops import symbolic

__all__ = ["Layer", "get_keras_mask", "set_keras_mask"]

# Keras's sequence masks live in a side table (minnet/autograd/masks.py); ``Tensor._keras_mask``
# reads it. Embedding(mask_zero=True) and Masking create masks, Layer.__call__ passes them to a
# ``call`` that takes ``mask`` and attaches ``compute_mask``'s result to the output.

# One weight larger than this is refused with a ValueError naming the layer, before anything
# is allocated (a typo such as units=2**31 must not end in a MemoryError or a swapping machine).
MAX_WEIGHT_BYTES = 4 * 2**30


def _check_dtype(dtype):
    if dtype is None:
        dtype = config.floatx()
    try:
        dt = np.dtype(dtype)
    except TypeError:
        dt = None
    if dt is None or dt not in (np.float32, np.float64):
        raise ValueError(f"Invalid value for argument `dtype`: expected 'float32' or 'float64'. "
                         f"Received: dtype={dtype!r}")
    return dt


def _is_int_or_bool(dtype):
    try:
        return np.dtype(dtype).kind in "iub"
    except TypeError:
        return False


def shape_str(shape):
    return "(" + ", ".join("None" if s is None else str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


# Keras's declaration keywords every layer accepts (Keras 2's and Keras 3's spellings).
_DECLARATION_KWARGS = ("input_shape", "batch_size", "batch_input_shape", "input_dim")


def _accepted_kwargs(cls):
    """Keyword names some ``__init__`` in ``cls``'s MRO (below ``Layer``) lists explicitly."""
    names = set()
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None or klass is object or klass is Layer:
            continue
        init = getattr(init, "__wrapped__", init)
        try:
            names.update(inspect.signature(init).parameters)
        except (TypeError, ValueError):
            pass
    return names


class Layer(SymbolicLayer, PyTorchDeviceMethods):
    """Base class of all layers (and of ``Sequential``).

    Args:
        name: a name for the layer; by default the snake-cased class name made unique
            (``dense``, ``conv2d``, ``dense_1``, ...).
        dtype: ``"float32"`` or ``"float64"``: the dtype of the weights and of the
            computation; inputs of another dtype are cast to it. None (default) means
            ``mn.config.floatx()``.
        trainable: when False, the layer's weights get no gradients (``requires_grad``
            is switched off) and are listed as non-trainable.
        activity_regularizer: a regularizer (``"l2"``, ``mn.regularizers.L1(0.01)``, ...)
            applied to the layer's output; its value joins ``layer.losses`` after each call.
        input_shape, batch_size, batch_input_shape, input_dim: Keras's declaration of the
            input (``Dense(64, input_shape=(784,))``), accepted by every layer; stored as
            ``_batch_input_shape`` (batch dimension included, None when unknown).
        autocast: Keras's mixed-precision switch; accepted, without effect (one dtype).

    Attributes:
        name, dtype (``np.dtype``), built (bool), training (bool, False until ``train()``).
    """

    def __init_subclass__(cls, **kwargs):
        """Let every subclass take Keras's declaration keywords, whatever its own signature.

        The subclass's ``__init__`` is wrapped once: ``input_shape``, ``batch_size``,
        ``batch_input_shape``, ``input_dim`` and ``activity_regularizer`` are taken off the
        keywords before it runs and stored (``_batch_input_shape``, ``activity_regularizer``)
        after it ran (the outermost call wins, so a subclass
        of a subclass declares once).
        """
        super().__init_subclass__(**kwargs)
        # Keywords the subclass (or a base below Layer) lists itself go to it unchanged
        # (keras.Input's own `batch_size`, for one); the others are taken off here.
        accepted = _accepted_kwargs(cls)
        # Keras's per-weight options the class does not list (layers/weight_options.py): the
        # instance's own class decides which (a subclass may name other weights)
        cls._option_kwargs = tuple(k for k in option_keywords(cls.weight_option_targets)
                                   if k not in accepted)
        init = cls.__dict__.get("__init__")
        if init is None or getattr(init, "_keras_declarations", False):
            return
        declaration_kwargs = tuple(k for k in _DECLARATION_KWARGS if k not in accepted)
        takes_activity = "activity_regularizer" in accepted

        @functools.wraps(init)
        def __init__(self, *args, **kwargs):
            declared = {k: kwargs.pop(k) for k in declaration_kwargs if k in kwargs}
            activity = None if takes_activity else kwargs.pop("activity_regularizer", None)
            options = {k: kwargs.pop(k) for k in type(self)._option_kwargs if k in kwargs}
            init(self, *args, **kwargs)
            if activity is not None:
                object.__setattr__(self, "activity_regularizer", regularizers.get(activity))
            options = {k: (regularizers.get(v) if k.endswith("regularizer") else constraints.get(v))
                       for k, v in options.items() if v is not None}
            if options:
                object.__setattr__(self, "_weight_options", options)
            if declared:
                shape = declared_batch_shape(**declared)
                if shape is not None:
                    object.__setattr__(self, "_batch_input_shape", shape)

        __init__._keras_declarations = True
        cls.__init__ = __init__

    def __init__(self, name=None, dtype=None, trainable=True, activity_regularizer=None,
                 input_shape=None, batch_size=None, batch_input_shape=None, input_dim=None,
                 autocast=True):
        object.__setattr__(self, "_own_weights", [])     # (name, Tensor, trainable) in creation order
        object.__setattr__(self, "_regularized", [])     # (regularizer, weight) pairs
        object.__setattr__(self, "_activity_losses", [])
        object.__setattr__(self, "_added_losses", [])      # add_loss() during the last call
        object.__setattr__(self, "_batch_input_shape", declared_batch_shape(
            input_shape, batch_size, batch_input_shape, input_dim))
        if name is None:
            name = unique_name(snake_case(type(self).__name__))
        elif not isinstance(name, str) or not name:
            raise ValueError(f"Invalid value for argument `name`: expected a non-empty string. "
                             f"Received: name={name!r}")
        self.name = name
        self.dtype = _check_dtype(dtype)
        self._trainable = bool(trainable)
        self.built = False
        self._training = False
        self._build_input_shape = None
        self.activity_regularizer = regularizers.get(activity_regularizer)

    # ------------------------------------------------------------------ tracking
    def __setattr__(self, key, value):
        if "_own_weights" not in self.__dict__:
            raise RuntimeError(f"{type(self).__name__}.__init__ must call super().__init__() "
                               f"before assigning attributes (tried to set `{key}`).")
        if isinstance(value, Tensor):
            trainable = variable_trainable(value)
            # a keras.Variable (mn.Variable) assigned here becomes one of this layer's weights
            if trainable is not None and not any(w is value for _, w, _ in self._own_weights):
                self._own_weights.append((key, value, trainable))
        elif isinstance(value, (Layer, list)) or (
                isinstance(value, tuple) and any(isinstance(v, Layer) for v in value)):
            # what _tracked_layers looks through (a list may get layers later)
            self.__dict__["_may_hold_layers"] = True
        object.__setattr__(self, key, value)

    def _tracked_layers(self):
        """Sublayers: attributes that are Layers or lists/tuples of Layers, in assignment order.

        Found by looking at the attributes each time, so a list of layers that grows later
        (``self.blocks.append(...)``) is seen too.  A layer that was never assigned a layer,
        a list or a tuple holding a layer (most built-in layers) has none, known without the
        look: ``losses``, ``train()`` and the weight lists ask this of every layer, ``fit``
        at every step.
        """
        if not self.__dict__.get("_may_hold_layers"):
            return []
        found = []
        seen = {id(self)}
        for value in self.__dict__.values():
            if isinstance(value, Layer):
                candidates = (value,)
            elif isinstance(value, (list, tuple)):
                candidates = [v for v in value if isinstance(v, Layer)]
            else:
                continue
            for layer in candidates:
                if id(layer) not in seen:
                    seen.add(id(layer))
                    found.append(layer)
        return found

    def _own(self):
        """(name, weight, trainable) of this layer: add_weight's, then Parameters set as attributes."""
        own = list(self._own_weights)
        ids = {id(w) for _, w, _ in own}
        for key, value in self.__dict__.items():
            if isinstance(value, Parameter) and id(value) not in ids:
                ids.add(id(value))
                own.append((key, value, True))
        return own

    # ------------------------------------------------------------------ weights
    def add_weight(self, name=None, shape=None, initializer=None, trainable=True, dtype=None,
                   regularizer=None, constraint=None, autocast=True, aggregation="none",
                   overwrite_with_gradient=False):
        """Create a weight, track it, and return it.

        Args:
            name: the weight's name (``"kernel"``, ``"bias"``, ...); None gives
                ``"weight_<i>"``. Keras 3's order (``add_weight(shape, ...)`` with the shape
                first, or every argument by keyword) is accepted too: a tuple in the first
                place is the shape.
            shape: tuple of ints (``()`` for a scalar).
            initializer: a name (``"zeros"``, ``"glorot_uniform"``, ...), an Initializer or
                a callable ``(shape, dtype) -> ndarray``; None (Keras's default) means
                ``"glorot_uniform"`` for a float weight and ``"zeros"`` otherwise. Its
                result is always copied: the weight never shares memory with an array the
                callable keeps or returns.
            trainable: True gives an ``mn.Parameter`` (gets gradients); False a plain
                ``mn.Tensor`` buffer (state such as BatchNormalization's moving mean).
            dtype: defaults to the layer's dtype.
            regularizer: a regularizer (name, object or callable ``Tensor -> Tensor``) whose
                value on the weight joins ``layer.losses``.
            constraint: a constraint (name, object or callable ``ndarray -> ndarray``),
                stored as ``param.constraint``; optimizers apply it after each step.
            autocast, aggregation, overwrite_with_gradient: Keras's (mixed precision and
                distribution hints); accepted and without effect here.

        A non-trainable weight may have an integer or bool dtype (a counter, a state index).

        Returns:
            The new ``Parameter`` (trainable) or ``Tensor`` (non-trainable).
        """
        if shape is None and isinstance(name, (tuple, list, int, np.integer)) \
                and not isinstance(name, bool):
            name, shape = None, name          # Keras 3's order: add_weight(shape, ...)
        if name is None:
            name = f"weight_{len(self._own_weights)}"
        if not isinstance(name, str) or not name:
            raise ValueError(f"Invalid value for argument `name`: expected a non-empty string. "
                             f"Received: name={name!r}")
        if shape is None:
            raise ValueError(f"Invalid value for argument `shape` of weight '{name}' in layer "
                             f"'{self.name}': expected a tuple of ints. Received: shape=None")
        if isinstance(shape, (int, np.integer)):
            shape = (int(shape),)
        try:
            shape = tuple(int(s) for s in shape)
        except (TypeError, ValueError):
            raise TypeError(f"Invalid value for argument `shape` of weight '{name}' in layer "
                            f"'{self.name}': expected a tuple of ints. Received: shape={shape!r}") from None
        if any(s < 0 for s in shape):
            raise ValueError(f"Invalid value for argument `shape` of weight '{name}' in layer "
                             f"'{self.name}': expected non-negative sizes. Received: shape={shape}")
        if dtype is None:
            dtype = self.dtype
        elif not trainable and _is_int_or_bool(dtype):
            dtype = np.dtype(dtype)
        else:
            dtype = _check_dtype(dtype)
        if initializer is None:
            initializer = "glorot_uniform" if dtype.kind == "f" else "zeros"
        n_bytes = math.prod(shape) * np.dtype(dtype).itemsize
        if n_bytes > MAX_WEIGHT_BYTES:
            raise ValueError(f"Layer '{self.name}': weight '{name}' of shape {shape} would need "
                             f"{n_bytes / 2**30:.1f} GiB, more than minnet.layers.base."
                             f"MAX_WEIGHT_BYTES ({MAX_WEIGHT_BYTES / 2**30:.0f} GiB). Check the "
                             f"layer's arguments (units, filters, kernel_size, input size).")
        init = initializers.get(initializer)
        try:
            # An integer/bool state starts from the initializer's float values, cast.
            value = initializers.checked_call(init, shape, dtype if dtype.kind == "f" else np.float64,
                                              where=f"weight '{name}' of layer '{self.name}'")
            if value.dtype != dtype:
                value = value.astype(dtype)
        except MemoryError:
            raise ValueError(f"Layer '{self.name}': weight '{name}' of shape {shape} "
                             f"({n_bytes / 2**30:.1f} GiB) does not fit in memory. Check the "
                             f"layer's arguments (units, filters, kernel_size, input size).") from None
        options = self.__dict__.get("_weight_options") or {}
        targets = self.weight_option_targets
        regularizer = regularizers.get(regularizer) or option_for(targets, options, name, "regularizer")
        constraint = constraints.get(constraint) or (option_for(targets, options, name, "constraint")
                                                     if trainable else None)
        if trainable:
            weight = Parameter(value)
            if not self._trainable:
                weight.requires_grad = False
            weight.constraint = constraint
        else:
            if constraint is not None:
                raise ValueError(f"Weight '{name}' of layer '{self.name}' is not trainable, so "
                                 f"no optimizer step would apply its constraint. Received: "
                                 f"constraint={constraint!r}")
            weight = Tensor(value)
        weight.name = f"{self.name}/{name}"
        self._own_weights.append((name, weight, bool(trainable)))
        if regularizer is not None:
            self._regularized.append((regularizer, weight))
        return weight

    def add_variable(self, shape, initializer, dtype=None, trainable=True, autocast=True,
                     regularizer=None, constraint=None, name=None):
        """Keras 3's ``add_variable``: ``add_weight`` with the shape and initializer first."""
        return self.add_weight(name=name, shape=shape, initializer=initializer, dtype=dtype,
                               trainable=trainable, regularizer=regularizer, constraint=constraint)

    def add_loss(self, loss):
        """Add a scalar loss term (a Tensor with its graph) computed in ``call`` (Keras): it
        joins ``layer.losses`` until the layer's next call, and a training step adds it to
        the loss (a model compiled without ``loss=`` trains on these terms alone)."""
        if not isinstance(loss, Tensor):
            loss = Tensor(np.asarray(loss, dtype=self.dtype))
        self.__dict__.setdefault("_added_losses", []).append(loss)

    @property
    def losses(self):
        """The regularization terms, as scalar Tensors with their graphs (Keras's ``losses``).

        One per regularized weight of this layer and its sublayers, computed now from the
        current weights, then the activity-regularization and ``add_loss`` terms of each
        layer's last call. A training step adds their sum to the loss ([] when there are none).
        """
        result = []
        self._gather_losses(result)
        return [t if isinstance(t, Tensor) else Tensor(np.asarray(t, dtype=self.dtype))
                for t in result]

    def _gather_losses(self, out):
        """Append this layer's loss terms, then its sublayers' (through ``losses`` where a
        class overrides it), to ``out``: one list for the whole tree."""
        out.extend([regularizer(weight) for regularizer, weight in self._regularized])
        out.extend(self._activity_losses)
        out.extend(self.__dict__.get("_added_losses", ()))
        for layer in self._tracked_layers():
            if type(layer).losses is Layer.losses:
                layer._gather_losses(out)
            else:
                out.extend(layer.losses)

    @property
    def compute_dtype(self):
        """Keras's name for the dtype the layer computes in (``"float32"``, ...)."""
        return self.dtype.name

    @property
    def variable_dtype(self):
        """Keras's name for the dtype of the layer's weights (the same here: no mixed precision)."""
        return self.dtype.name

    @property
    def trainable(self):
        """Whether the layer's weights are trained (setting it recurses into sublayers)."""
        return self._trainable

    @trainable.setter
    def trainable(self, value):
        self._trainable = bool(value)
        for _, w, is_trainable in self._own():
            if is_trainable:
                w.requires_grad = self._trainable
        for layer in self._tracked_layers():
            layer.trainable = value

    def _all_weights(self):
        """(weight, trainable) for own weights then each sublayer's, without duplicates."""
        seen = set()
        result = []
        mine = self._own()
        own = [(w, t) for _, w, t in mine if t] + [(w, t) for _, w, t in mine if not t]
        for w, t in own:
            if id(w) not in seen:
                seen.add(id(w))
                result.append((w, t and self._trainable))
        for layer in self._tracked_layers():
            for w, t in layer._all_weights():
                if id(w) not in seen:
                    seen.add(id(w))
                    result.append((w, t and self._trainable))
        return result

    @property
    def weights(self):
        """All weights: this layer's (trainable then non-trainable), then each sublayer's."""
        return [w for w, _ in self._all_weights()]

    @property
    def trainable_weights(self):
        """The weights that are trained, in ``weights`` order."""
        return [w for w, t in self._all_weights() if t]

    @property
    def non_trainable_weights(self):
        """State and frozen weights, in ``weights`` order."""
        return [w for w, t in self._all_weights() if not t]

    # Keras 3's names for the same lists.
    variables = weights
    trainable_variables = trainable_weights
    non_trainable_variables = non_trainable_weights

    def zero_grad(self, set_to_none=True):
        """Clear the gradients of every Parameter (``grad = None``, or zeroed in place)."""
        for p in self.parameters():
            if set_to_none or p.grad is None:
                p.grad = None
            else:
                p.grad[...] = 0

    def parameters(self):
        """Every ``Parameter`` of the layer and its sublayers (for a PyTorch-style optimizer).

        Frozen layers' Parameters are included with ``requires_grad=False``, as in PyTorch;
        they receive no gradient and optimizers skip them.
        """
        return [w for w in self.weights if isinstance(w, Parameter)]

    def get_weights(self):
        """Copies of the weights as ndarrays, in ``weights`` order."""
        return [np.array(w.data, copy=True) for w in self.weights]

    def set_weights(self, weights):
        """Copy ``weights`` (a list of arrays, ``get_weights`` order) into the layer in place.

        Raises:
            ValueError: wrong number of arrays or a shape that does not match.
        """
        own = self.weights
        weights = list(weights)
        if len(weights) != len(own):
            raise ValueError(f"Layer '{self.name}' expected {len(own)} weight arrays "
                             f"(shapes {[tuple(w.shape) for w in own]}), but received "
                             f"{len(weights)}.")
        arrays = []
        for i, (w, value) in enumerate(zip(own, weights)):
            value = np.asarray(value.data if isinstance(value, Tensor) else value)
            if value.shape != tuple(w.shape):
                raise ValueError(f"Layer '{self.name}' weight {i} has shape {tuple(w.shape)}, but "
                                 f"the array given for it has shape {value.shape}.")
            if value.dtype.kind not in "fiub":
                raise TypeError(f"Layer '{self.name}' weight {i}: expected a numeric array. "
                                f"Received dtype {value.dtype}.")
            arrays.append(value)
        for w, value in zip(own, arrays):
            w.data[...] = value
            w._bump_version()

    def count_params(self):
        """Number of scalars in all weights (trainable and not).

        Raises:
            ValueError: the layer is not built yet (its weights do not exist).
        """
        if not self.built and not self.weights:
            raise ValueError(f"You tried to call count_params on layer '{self.name}', but the layer "
                             f"isn't built. Build it first by calling it on a batch or with "
                             f"`build(input_shape)`.")
        return int(sum(int(np.prod(w.shape)) for w in self.weights))

    # ------------------------------------------------------------------ modes
    @property
    def training(self):
        """The mode: inside a call (or fit/evaluate/predict), the mode passed down that call
        (``layers/call_context.py``); outside, the flag ``train()``/``eval()`` set."""
        mode = _CALL_STATE.training
        return self.__dict__.get("_training", False) if mode is None else mode

    @training.setter
    def training(self, value):
        object.__setattr__(self, "_training", bool(value))

    def train(self, mode=True):
        """Set the training-mode flag (dropout active, batch statistics) here and in sublayers
        (PyTorch style; ``fit`` and ``layer(x, training=True)`` pass the mode down instead)."""
        self.training = bool(mode)
        for layer in self._tracked_layers():
            layer.train(mode)
        return self

    def eval(self):
        """Evaluation mode: ``train(False)``."""
        return self.train(False)

    # ------------------------------------------------------------------ lifecycle
    def build(self, input_shape):
        """Create the weights for inputs of ``input_shape`` (batch dim included, may be None).

        A layer called with several tensor arguments may instead declare one parameter per
        argument, named ``<argument>_shape`` (``build(self, query_shape, value_shape)`` for
        ``call(self, query, value)``), as in Keras.
        """
        self._build_input_shape = tuple(input_shape) if isinstance(input_shape, (tuple, list)) \
            and all(s is None or isinstance(s, (int, np.integer)) for s in input_shape) else None
        self.built = True

    def call(self, inputs, *args, **kwargs):
        """The forward computation; subclasses override it (``call(self, inputs)``, with
        ``training=`` and ``mask=`` parameters only when they need them)."""
        raise NotImplementedError(f"Layer {type(self).__name__} does not implement call().")

    def compute_mask(self, inputs, previous_mask=None):
        """The mask of the output (Keras's hook): by default the input's mask for a layer
        with ``supports_masking``, else None. Override it to create or change a mask."""
        return previous_mask if self.supports_masking else None

    compute_mask.keras_default = True

    def _to_tensor(self, x):
        """Convert the input to a Tensor of the layer's dtype (differentiably for Tensors)."""
        if isinstance(x, Tensor):
            if x.dtype == self.dtype:
                return x
            if np.dtype(x.dtype).kind == "f" and x.requires_grad:
                return x.astype(self.dtype)      # differentiable: the gradient is cast back
            return Tensor(np.asarray(x.data, dtype=self.dtype))
        try:
            array = np.asarray(x)
        except Exception:
            array = None
        if array is None or array.dtype.kind not in "fiub":
            raise TypeError(f"Layer '{self.name}' expected a Tensor or a numeric array as input. "
                            f"Received: {type(x).__name__}"
                            + ("" if array is None else f" with dtype {array.dtype}"))
        return Tensor(np.ascontiguousarray(array, dtype=self.dtype))

    def _convert_input(self, x):
        """The main input as a Tensor of the layer's dtype; a list/tuple/dict of tensors
        (a layer taking several tensors in one argument) is converted leaf by leaf."""
        if isinstance(x, dict) or (isinstance(x, (list, tuple)) and x and any(
                isinstance(v, (Tensor, np.ndarray)) for v in symbolic.flatten(x))):
            return symbolic.map_structure(lambda v: v if v is None else self._to_tensor(v), x)
        return self._to_tensor(x)

    def _convert_other(self, value):
        """Another tensor argument: arrays become Tensors, floats in the layer's dtype, integer
        and bool arrays (indices, attention masks) keep their dtype; other values pass."""
        if isinstance(value, Tensor):
            if value.dtype.kind == "f" and value.dtype != self.dtype:
                return self._to_tensor(value)
            return value
        if isinstance(value, np.ndarray):
            if value.dtype.kind == "f":
                return self._to_tensor(value)
            return Tensor(value) if value.dtype.kind in "iub" else value
        if isinstance(value, (list, tuple)) and value and all(
                isinstance(v, (Tensor, np.ndarray)) for v in value):
            return type(value)(self._convert_other(v) for v in value)
        return value

    def __call__(self, *args, **kwargs):
        """Convert the inputs, build on the first call, run ``call`` (Keras 3's contract).

        Args:
            *args: the main input first (``mn.Tensor``, ndarray, nested list, or a list/dict
                of tensors), then any other positional arguments ``call`` takes; arrays among
                them become Tensors (float ones in the layer's dtype).
            training: True/False; None (default) takes the mode of the enclosing call or
                loop, else the layer's flag. Passed to ``call`` only if it declares ``training``;
                given here, it becomes the mode of every layer called inside.
            mask: the main input's mask; by default its ``_keras_mask``. Passed to ``call``
                only if it declares ``mask``.
            **kwargs: passed to ``call`` (arrays converted as positional ones).

        Returns:
            What ``call`` returns (a Tensor, or a tuple/list/dict of them); the output mask
            (``compute_mask``) is attached as ``_keras_mask``. On symbolic inputs, KerasTensors.
        """
        if len(args) == 1 and not self._has_hooks and self.built and self.input_spec is None:
            # The common case, kept short: one built layer on one Tensor of its dtype.
            x = args[0]
            if type(x) is Tensor and x.data.dtype == self.dtype and (
                    not kwargs or (len(kwargs) == 1 and "training" in kwargs)):
                info = _CALL_INFO.get(type(self)) or call_spec.call_info(self)
                if not info.plain:
                    return self._call_impl(args, kwargs)
                if self._added_losses:
                    self._added_losses.clear()
                context = _CALL_STATE.training
                training = kwargs.get("training") if kwargs else None
                if training is None:
                    training = self.__dict__.get("_training", False) if context is None else context
                    out = self.call(x, training=training) if info.training else self.call(x)
                else:
                    training = training is True or (training is not False and bool(training))
                    _CALL_STATE.training = training
                    try:
                        out = self.call(x, training=training) if info.training else self.call(x)
                    finally:
                        _CALL_STATE.training = context
                if type(out) is not Tensor:
                    if isinstance(out, (list, tuple, dict)):
                        return out
                    out = Tensor(np.asarray(out))
                if MASKS and self.supports_masking:
                    in_mask = get_keras_mask(x)
                    if in_mask is not None:
                        self._set_output_mask(x, out, in_mask)
                if self.activity_regularizer is not None:
                    batch = out.shape[0] if out.ndim else 1
                    self._activity_losses[:] = [self.activity_regularizer(out) / max(batch, 1)]
                return out
        if self._has_hooks and not self.__dict__.get("_in_hooks") \
                and not symbolic.any_symbolic(args, kwargs):
            return self._call_with_hooks(args, kwargs)
        return self._call_impl(args, kwargs)

    __call__.keras_default = True

    def _call_impl(self, args, kwargs):
        info = call_spec.call_info(self)
        training = kwargs.pop("training", None)
        mask = kwargs.pop("mask", None)
        if not args:
            if info.first not in kwargs:
                raise TypeError(f"Layer '{self.name}' was called without an input: pass it as the "
                                f"first positional argument (or as `{info.first}=`).")
            args = (kwargs.pop(info.first),)
        x = args[0]
        if self.input_spec is not None:         # Keras's InputSpec, set by a custom layer
            check_input_spec(self, x if len(args) == 1 else list(args))
        if (type(x) is not Tensor or len(args) > 1 or kwargs) and symbolic.any_symbolic(args, kwargs):
            return self._symbolic_call(args, kwargs, training=training, mask=mask)
        in_mask = mask
        if in_mask is None and MASKS and isinstance(x, Tensor):
            in_mask = get_keras_mask(x)
        if type(x) is not Tensor or x.data.dtype != self.dtype:
            x = self._convert_input(x)
        rest = args[1:]
        if rest:
            rest = tuple(self._convert_other(a) for a in rest)
        if kwargs:
            kwargs = {k: self._convert_other(v) for k, v in kwargs.items()}
        if not self.built:
            self._maybe_build(info, (x,) + rest, kwargs)
        if self._added_losses:
            self._added_losses.clear()
        context = _CALL_STATE.training
        push = False
        if training is None:
            training = self.__dict__.get("_training", False) if context is None else context
        else:
            training = training is True or (training is not False and bool(training))
            push = training is not context
        if info.training:
            kwargs["training"] = training
        if info.mask and in_mask is not None:
            kwargs["mask"] = in_mask
        if info.argument_masks and MASKS:
            self._fill_argument_masks(info, (x,) + rest, kwargs)
        if push:
            _CALL_STATE.training = training
            try:
                out = self.call(x, *rest, **kwargs)
            finally:
                _CALL_STATE.training = context
        else:
            out = self.call(x, *rest, **kwargs)
        if not isinstance(out, (Tensor, list, tuple, dict)):
            out = Tensor(np.asarray(out))
        if self.supports_masking or type(self).compute_mask is not Layer.compute_mask:
            self._set_output_mask(x, out, in_mask)
        if self.activity_regularizer is not None and isinstance(out, Tensor):
            # Keras divides the activity penalty by the batch size.
            batch = out.shape[0] if out.ndim else 1
            self._activity_losses[:] = [self.activity_regularizer(out) / max(batch, 1)]
        return out

    def _fill_argument_masks(self, info, args, kwargs):
        """Keras's rule for several tensor arguments: ``call``'s ``<argument>_mask`` parameter,
        when not given, gets that argument's ``_keras_mask`` (MultiHeadAttention's
        ``query_mask``, ``value_mask``, ``key_mask``)."""
        for name, value in call_spec.bind(info, args, kwargs).items():
            target = f"{name}_mask"
            if target in info.argument_masks and kwargs.get(target) is None \
                    and isinstance(value, Tensor):
                mask = get_keras_mask(value)
                if mask is not None:
                    kwargs[target] = mask

    def _set_output_mask(self, x, out, in_mask):
        """Attach ``compute_mask(x, in_mask)`` to the outputs that carry no mask yet."""
        outputs = symbolic.flatten(out)
        if all(get_keras_mask(t) is not None for t in outputs if isinstance(t, Tensor)):
            return
        if type(self).compute_mask is Layer.compute_mask:
            if in_mask is None:
                return
            for t in outputs:          # the default passes the mask to outputs it still fits
                if isinstance(t, Tensor) and tuple(t.shape[:in_mask.ndim]) == in_mask.shape \
                        and get_keras_mask(t) is None:
                    set_keras_mask(t, in_mask)
            return
        masks = self.compute_mask(x, in_mask)
        if masks is None:
            return
        flat_masks = [masks] if not isinstance(masks, (list, tuple)) else list(masks)
        for t, m in zip(outputs, flat_masks):
            if isinstance(t, Tensor) and m is not None and get_keras_mask(t) is None:
                set_keras_mask(t, m)

    def _maybe_build(self, info, args, kwargs):
        """Build with the shapes Keras passes: ``build(first shape)``, or one shape per
        ``<argument>_shape`` parameter of ``build``."""
        shapes = call_spec.shapes_dict(call_spec.bind(info, args, kwargs))
        first = next(iter(shapes.values()), None)
        build = self.build
        if type(self).build is Layer.build:
            build(first)
        else:
            build(**call_spec.shapes_for(build, shapes, info, type(self).__name__))
        self._build_input_shape = first if isinstance(first, tuple) else None
        self.built = True

    # ------------------------------------------------------------------ hooks (as torch.nn.Module's)
    _has_hooks = False
    _added_losses = ()          # per instance: a list, once __init__ or add_loss made one
    # Keras's flag: True on layers whose output keeps the input's (batch, timesteps) mask
    # (Dense, Dropout, Activation, ...); Layer.__call__ then attaches it to the output.
    supports_masking = False
    # Keras's <prefix>_regularizer/_constraint keywords and the weights they apply to
    weight_option_targets = DEFAULT_TARGETS
    _option_kwargs = option_keywords(DEFAULT_TARGETS)
    input_spec = None           # a custom layer's Keras InputSpec (layers/input_spec.py)
    # What data-parallel fit asks every layer: sum its batch statistics over the ranks
    # (BatchNormalization(synchronized=True)).
    synchronized = False

    def register_forward_pre_hook(self, hook):
        """Call ``hook(layer, (x,))`` before each forward; it may return a replacement input.
        Returns a handle: ``handle.remove()``."""
        return self._add_hook("_forward_pre_hooks", hook)

    def register_forward_hook(self, hook):
        """Call ``hook(layer, (x,), output)`` after each forward; it may return a replacement
        output. Returns a handle: ``handle.remove()``."""
        return self._add_hook("_forward_hooks", hook)

    def register_full_backward_hook(self, hook):
        """Call ``hook(layer, grad_input, grad_output)`` (tuples of Tensors, ``None`` for an input
        that needs no gradient) when the gradient reaches this layer's input; it may return a
        replacement ``grad_input``. Returns a handle: ``handle.remove()``."""
        return self._add_hook("_backward_hooks", hook)

    def _add_hook(self, kind, hook):
        hooks = self.__dict__.get(kind)
        if hooks is None:
            hooks = self.__dict__[kind] = HookDict()
        self.__dict__["_has_hooks"] = True
        return hooks.add(hook)

    def _call_with_hooks(self, args, kwargs):
        """The hooks see the main input (the first argument); the others pass through."""
        training = kwargs.pop("training", None)
        if not args:
            info = call_spec.call_info(self)
            args = (kwargs.pop(info.first),) if info.first in kwargs else ()
        if not args:
            return self._call_impl(args, dict(kwargs, training=training))

        def call(inner_x, inner_training):
            self.__dict__["_in_hooks"] = True
            try:
                return self(inner_x, *args[1:], training=inner_training, **kwargs)
            finally:
                self.__dict__["_in_hooks"] = False
        d = self.__dict__
        return call_with_hooks(self, call, args[0], training, d.get("_forward_pre_hooks"),
                               d.get("_forward_hooks"), d.get("_backward_hooks"))

    def count_flops(self, input_shape):
        """Forward floating-point operations for one batch of ``input_shape`` (multiply-add = 2)."""
        return 0

    def get_config(self):
        """JSON-able hyperparameters: ``cls.from_config(layer.get_config())`` re-creates the layer."""
        config = {"name": self.name, "dtype": self.dtype.name, "trainable": self._trainable}
        if self._batch_input_shape is not None:
            config["batch_input_shape"] = list(self._batch_input_shape)
        if self.activity_regularizer is not None:
            config["activity_regularizer"] = regularizers.serialize(self.activity_regularizer)
        for key, value in (self.__dict__.get("_weight_options") or {}).items():
            config[key] = (regularizers.serialize(value) if key.endswith("regularizer")
                           else constraints.serialize(value))
        return config

    @classmethod
    def from_config(cls, config):
        """Create a layer from ``get_config()``'s output."""
        return cls(**config)

    # ------------------------------------------------------------------ helpers for subclasses
    def _check_call_input(self, x):
        """The layer's own contract on the input of a call, with its Keras-style message
        (rank, channel count, the kernel fitting). A layer over a functional op runs it only
        when the op refused the input (``_explaining_refusal``): the op validates once, at the public
        boundary, and the layer's message explains the refusal in the layer's terms."""

    def _explaining_refusal(self, x):
        """``with self._explaining_refusal(x): y = F.op(x, ...)``: the functional op validates;
        when it refuses ``x`` (a ValueError), the layer's message is raised instead where
        ``_check_call_input`` explains the refusal (chained to the op's), else the op's own."""
        return _ExplainRefusal(self, x)

    def _check_input(self, x, ndim=None, axis=None, size=None, min_ndim=None):
        """Raise a ValueError naming the layer when ``x`` has the wrong rank or size on ``axis``."""
        shape = tuple(x.shape)
        if ndim is not None and len(shape) != ndim:
            raise ValueError(f"Input 0 of layer '{self.name}' is incompatible with the layer: "
                             f"expected ndim={ndim}, found ndim={len(shape)}. Full shape received: "
                             f"{shape}")
        if min_ndim is not None and len(shape) < min_ndim:
            raise ValueError(f"Input 0 of layer '{self.name}' is incompatible with the layer: "
                             f"expected min_ndim={min_ndim}, found ndim={len(shape)}. Full shape "
                             f"received: {shape}")
        if axis is not None and size is not None and shape[axis] != size:
            raise ValueError(f"Input 0 of layer '{self.name}' is incompatible with the layer: "
                             f"expected axis {axis} of input shape to have value {size}, but "
                             f"received input with shape {shape}")

    def extra_repr(self):
        """The arguments shown inside ``repr(layer)``."""
        return ""

    def __repr__(self):
        extra = self.extra_repr()
        head = f"{type(self).__name__}({extra}{', ' if extra else ''}name={self.name!r})"
        if not self._tracked_layers():
            return head
        lines = [head[:-1] + ", layers=["]
        for layer in self._tracked_layers():
            lines.extend("  " + line for line in repr(layer).splitlines())
        lines.append("])")
        return "\n".join(lines)


class _ExplainRefusal:
    """The context of ``Layer._explaining_refusal`` (a class, not a generator: it sits on
    every call of the layers over a functional op)."""
    __slots__ = ("layer", "x")

    def __init__(self, layer, x):
        self.layer, self.x = layer, x

    def __enter__(self):
        return self

    def __exit__(self, kind, error, traceback):
        if kind is not None and issubclass(kind, ValueError):
            try:
                self.layer._check_call_input(self.x)
            except ValueError as layer_error:
                raise layer_error from error
        return False
