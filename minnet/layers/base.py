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
"""
import re

import numpy as np

from minnet import initializers
from minnet.autograd import Parameter, Tensor, no_grad
from minnet.autograd.hooks import HookDict, call_with_hooks

__all__ = ["Layer"]

_NAME_COUNTS = {}


def _snake_case(name):
    """``Conv2D -> conv2d``, ``MaxPooling2D -> max_pooling2d``, ``ReLU -> re_lu`` (Keras's rule)."""
    name = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower()


def _unique_name(base):
    """``dense``, ``dense_1``, ``dense_2``, ... (as Keras names layers)."""
    count = _NAME_COUNTS.get(base, 0)
    _NAME_COUNTS[base] = count + 1
    return base if count == 0 else f"{base}_{count}"


def _check_dtype(dtype):
    try:
        dt = np.dtype(dtype)
    except TypeError:
        dt = None
    if dt is None or dt not in (np.float32, np.float64):
        raise ValueError(f"Invalid value for argument `dtype`: expected 'float32' or 'float64'. "
                         f"Received: dtype={dtype!r}")
    return dt


def _shape_str(shape):
    return "(" + ", ".join("None" if s is None else str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


class Layer:
    """Base class of all layers (and of ``Sequential``).

    Args:
        name: a name for the layer; by default the snake-cased class name made unique
            (``dense``, ``dense_1``, ...).
        dtype: ``"float32"`` (default) or ``"float64"``: the dtype of the weights and of
            the computation; inputs of another dtype are cast to it.
        trainable: when False, the layer's weights get no gradients (``requires_grad``
            is switched off) and are listed as non-trainable.

    Attributes:
        name, dtype (``np.dtype``), built (bool), training (bool, False until ``train()``).
    """

    def __init__(self, name=None, dtype="float32", trainable=True):
        object.__setattr__(self, "_own_weights", [])     # (name, Tensor, trainable) in creation order
        if name is None:
            name = _unique_name(_snake_case(type(self).__name__))
        elif not isinstance(name, str) or not name:
            raise ValueError(f"Invalid value for argument `name`: expected a non-empty string. "
                             f"Received: name={name!r}")
        self.name = name
        self.dtype = _check_dtype(dtype)
        self._trainable = bool(trainable)
        self.built = False
        self.training = False
        self._build_input_shape = None

    # ------------------------------------------------------------------ tracking
    def __setattr__(self, key, value):
        if "_own_weights" not in self.__dict__:
            raise RuntimeError(f"{type(self).__name__}.__init__ must call super().__init__() "
                               f"before assigning attributes (tried to set `{key}`).")
        object.__setattr__(self, key, value)

    def _tracked_layers(self):
        """Sublayers: attributes that are Layers or lists/tuples of Layers, in assignment order.

        Found by looking at the attributes each time, so a list of layers that grows later
        (``self.blocks.append(...)``) is seen too.
        """
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
    def add_weight(self, name, shape, initializer="zeros", trainable=True, dtype=None):
        """Create a weight, track it, and return it.

        Args:
            name: the weight's name (``"kernel"``, ``"bias"``, ...).
            shape: tuple of ints.
            initializer: a name (``"zeros"``, ``"glorot_uniform"``, ...), an Initializer or
                a callable ``(shape, dtype) -> ndarray``.
            trainable: True gives an ``mn.Parameter`` (gets gradients); False a plain
                ``mn.Tensor`` buffer (state such as BatchNormalization's moving mean).
            dtype: defaults to the layer's dtype.

        Returns:
            The new ``Parameter`` (trainable) or ``Tensor`` (non-trainable).
        """
        if not isinstance(name, str) or not name:
            raise ValueError(f"Invalid value for argument `name`: expected a non-empty string. "
                             f"Received: name={name!r}")
        if isinstance(shape, (int, np.integer)):
            shape = (int(shape),)
        try:
            shape = tuple(int(s) for s in shape)
        except (TypeError, ValueError):
            raise TypeError(f"Invalid value for argument `shape` of weight '{name}' in layer "
                            f"'{self.name}': expected a tuple of ints. Received: shape={shape!r}") from None
        dtype = self.dtype if dtype is None else _check_dtype(dtype)
        init = initializers.get(initializer)
        value = np.asarray(init(shape, dtype))
        if value.shape != shape:
            raise ValueError(f"Initializer {init!r} for weight '{name}' of layer '{self.name}' "
                             f"returned shape {value.shape}; expected {shape}.")
        value = np.ascontiguousarray(value, dtype=dtype)
        if trainable:
            weight = Parameter(value)
            if not self._trainable:
                weight.requires_grad = False
        else:
            weight = Tensor(value)
        weight.name = f"{self.name}/{name}"
        self._own_weights.append((name, weight, bool(trainable)))
        return weight

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
    def train(self, mode=True):
        """Set training mode (dropout active, batch statistics) here and in sublayers."""
        self.training = bool(mode)
        for layer in self._tracked_layers():
            layer.train(mode)
        return self

    def eval(self):
        """Evaluation mode: ``train(False)``."""
        return self.train(False)

    # ------------------------------------------------------------------ lifecycle
    def build(self, input_shape):
        """Create the weights for inputs of ``input_shape`` (batch dim included, may be None)."""
        self._build_input_shape = tuple(input_shape) if input_shape is not None else None
        self.built = True

    def call(self, x, training=False):
        """The forward computation; subclasses override it."""
        raise NotImplementedError(f"Layer {type(self).__name__} does not implement call(x, training).")

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

    def __call__(self, x, training=None):
        """Convert ``x``, build on the first call, run ``call``.

        Args:
            x: ``mn.Tensor``, ndarray or nested list.  Float inputs of another dtype (and
                integer/bool inputs) are cast to the layer's dtype.
            training: True/False, or None to use ``self.training``.

        Returns:
            ``mn.Tensor``.
        """
        if self._has_hooks and not self.__dict__.get("_in_hooks"):
            return self._call_with_hooks(x, training)
        if type(x) is not Tensor or x.data.dtype != self.dtype:
            if hasattr(x, "symbolic_call"):   # functional API: record a node (layers/symbolic.py)
                return x.symbolic_call(self, x)
            x = self._to_tensor(x)
        if not self.built:
            self.build(tuple(x.shape))
            self._build_input_shape = tuple(x.shape)
            self.built = True
        if training is None:
            training = self.training
        elif training is not True and training is not False:
            training = bool(training)
        out = self.call(x, training=training)
        if not isinstance(out, Tensor):
            out = Tensor(np.asarray(out))
        return out

    # ------------------------------------------------------------------ hooks (as torch.nn.Module's)
    _has_hooks = False

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

    def _call_with_hooks(self, x, training):
        def call(inner_x, inner_training):
            self.__dict__["_in_hooks"] = True
            try:
                return self(inner_x, training=inner_training)
            finally:
                self.__dict__["_in_hooks"] = False
        d = self.__dict__
        return call_with_hooks(self, call, x, training, d.get("_forward_pre_hooks"),
                               d.get("_forward_hooks"), d.get("_backward_hooks"))

    def compute_output_shape(self, input_shape):
        """Output shape for ``input_shape`` (batch dim included, may be None).

        The default runs the layer once on zeros (batch of 1, eval mode, no graph), which
        builds it; layers with a formula override it.
        """
        input_shape = tuple(input_shape)
        if any(s is None for s in input_shape[1:]):
            raise ValueError(f"Layer '{self.name}' cannot infer its output shape from "
                             f"{_shape_str(input_shape)}: only the batch size may be None.")
        probe = tuple(1 if s is None else s for s in input_shape)
        with no_grad():
            out = self(np.zeros(probe, dtype=self.dtype), training=False)
        shape = tuple(out.shape)
        if input_shape and input_shape[0] is None and shape:
            shape = (None,) + shape[1:]
        return shape

    def count_flops(self, input_shape):
        """Forward floating-point operations for one batch of ``input_shape`` (multiply-add = 2)."""
        return 0

    def get_build_config(self):
        """The input shape the layer was built with (so a loader can build it before set_weights)."""
        if self._build_input_shape is None:
            return None
        return {"input_shape": [None if s is None else int(s) for s in self._build_input_shape]}

    def build_from_config(self, config):
        """Build from what ``get_build_config`` returned."""
        if config and config.get("input_shape") is not None and not self.built:
            shape = tuple(config["input_shape"])
            self.build(shape)
            self._build_input_shape = shape
            self.built = True

    def get_config(self):
        """JSON-able hyperparameters: ``cls.from_config(layer.get_config())`` re-creates the layer."""
        return {"name": self.name, "dtype": self.dtype.name, "trainable": self._trainable}

    @classmethod
    def from_config(cls, config):
        """Create a layer from ``get_config()``'s output."""
        return cls(**config)

    # ------------------------------------------------------------------ helpers for subclasses
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
