"""``InputSpec``, Keras 3's description of what a layer accepts (rank, dtype, sizes of given
axes), and the check a layer runs on each call when its ``input_spec`` is set::

    class Scale(layers.Layer):
        def __init__(self):
            super().__init__()
            self.input_spec = layers.InputSpec(ndim=2, axes={-1: 3})

A call on an input that breaks the spec raises a ValueError naming the layer, the input and
the rule, before ``build`` or ``call`` runs (Keras's ``assert_input_compatibility``).
"""
import numpy as np

__all__ = ["InputSpec", "check_input_spec"]


class InputSpec:
    """What one input of a layer must be (Keras 3's arguments; None: anything).

    Args:
        dtype: the dtype, e.g. ``"float32"``.
        shape: the full shape (None entries free); sets ``ndim``.
        ndim, max_ndim, min_ndim: the rank, or its bounds.
        axes: ``{axis: size}`` for given axes (negative axes count from the end).
        allow_last_axis_squeeze: accept a rank one off ``ndim`` (a last axis of 1 squeezed).
        name: the input's name (for dict inputs). optional: the input may be None.
    """

    def __init__(self, dtype=None, shape=None, ndim=None, max_ndim=None, min_ndim=None,
                 axes=None, allow_last_axis_squeeze=False, name=None, optional=False):
        self.dtype = None if dtype is None else np.dtype(dtype).name
        if shape is not None:
            self.shape = tuple(None if s is None else int(s) for s in shape)
            self.ndim = len(self.shape)
        else:
            self.shape = None
            self.ndim = ndim
        self.max_ndim, self.min_ndim = max_ndim, min_ndim
        self.name, self.optional = name, bool(optional)
        self.allow_last_axis_squeeze = bool(allow_last_axis_squeeze)
        try:
            self.axes = {int(k): v for k, v in (axes or {}).items()}
        except (ValueError, TypeError, AttributeError):
            raise TypeError(f"Argument `axes` must be a dict with integer keys. "
                            f"Received: axes={axes}") from None
        top = self.ndim if self.ndim is not None else self.max_ndim
        if self.axes and top is not None and max(self.axes) > top - 1:
            raise ValueError(f"Axis {max(self.axes)} is greater than the maximum allowed value: "
                             f"{top - 1}")

    def __repr__(self):
        parts = [f"{key}={value}" for key, value in (
            ("dtype", self.dtype), ("shape", self.shape), ("ndim", self.ndim),
            ("max_ndim", self.max_ndim), ("min_ndim", self.min_ndim), ("axes", self.axes))
            if value]
        return f"InputSpec({', '.join(parts)})"

    def get_config(self):
        return {"dtype": self.dtype, "shape": self.shape, "ndim": self.ndim,
                "max_ndim": self.max_ndim, "min_ndim": self.min_ndim, "axes": self.axes,
                "optional": self.optional}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def _flat(value):
    if isinstance(value, (list, tuple)):
        return [leaf for item in value for leaf in _flat(item)]
    if isinstance(value, dict):
        return [leaf for key in value for leaf in _flat(value[key])]
    return [value]


def check_input_spec(layer, inputs):
    """Raise a ValueError when ``inputs`` break ``layer.input_spec`` (a spec or a list)."""
    specs = _flat(layer.input_spec)
    if isinstance(inputs, dict) and specs and all(s is not None and s.name for s in specs):
        missing = [s.name for s in specs if s.name not in inputs]
        if missing:
            raise ValueError(f'Missing data for input "{missing[0]}". You passed a data '
                             f'dictionary with keys {list(inputs)}. Expected the following '
                             f'keys: {[s.name for s in specs]}')
        inputs = [inputs[s.name] for s in specs]
    values = _flat(inputs)
    if len(values) != len(specs):
        raise ValueError(f"Layer '{layer.name}' expects {len(specs)} input(s), but it received "
                         f"{len(values)} input tensors.")
    for index, (x, spec) in enumerate(zip(values, specs)):
        if spec is None or (x is None and spec.optional):
            continue
        if not hasattr(x, "shape"):
            raise ValueError(f"Inputs to a layer should be tensors. Got '{x}' (of type "
                             f"{type(x)}) as input for layer '{layer.name}'.")
        shape = tuple(x.shape)
        where = (f"Input {index} with name '{spec.name}' of layer '{layer.name}' is "
                 f"incompatible with the layer")
        ndim = len(shape)
        if spec.ndim is not None and ndim != spec.ndim and not (
                spec.allow_last_axis_squeeze and abs(ndim - spec.ndim) == 1):
            raise ValueError(f"{where}: expected ndim={spec.ndim}, found ndim={ndim}. Full shape "
                             f"received: {shape}")
        if spec.max_ndim is not None and ndim > spec.max_ndim:
            raise ValueError(f"{where}: expected max_ndim={spec.max_ndim}, found ndim={ndim}")
        if spec.min_ndim is not None and ndim < spec.min_ndim:
            raise ValueError(f"{where}: expected min_ndim={spec.min_ndim}, found ndim={ndim}. "
                             f"Full shape received: {shape}")
        if spec.dtype is not None and np.dtype(x.dtype).name != spec.dtype:
            raise ValueError(f"{where}: expected dtype={spec.dtype}, found "
                             f"dtype={np.dtype(x.dtype).name}")
        for axis, size in spec.axes.items():
            if size is not None and -ndim <= axis < ndim and shape[axis] not in (size, None):
                raise ValueError(f"{where}: expected axis {axis} of input shape to have value "
                                 f"{size}, but received input with shape {shape}")
        if spec.shape is not None and ndim == len(spec.shape):
            for got, want in zip(shape, spec.shape):
                if want is not None and got is not None and got != want:
                    raise ValueError(f"{where}: expected shape={spec.shape}, found "
                                     f"shape={shape}")
