"""Small Keras 3 layers composed from Tensor operations: ``Identity``,
``ActivityRegularization``, ``UnitNormalization``, ``RMSNormalization``, ``Dot``,
``SpatialDropout1D``, ``SpatialDropout3D``, ``GlobalAveragePooling3D``, ``GlobalMaxPooling3D``,
``Pipeline``, ``Wrapper`` and ``dot`` (math in ``docs/math/simple_layers.md``)."""
import numbers

import numpy as np

from minnet import _random, config, initializers, regularizers
from minnet import functional as F
from minnet._checks import check_axes_in_range, check_float, invalid
from minnet.autograd import Tensor, einsum
from minnet.layers.base import Layer

__all__ = ["Identity", "ActivityRegularization", "UnitNormalization", "RMSNormalization", "Dot",
           "SpatialDropout1D", "SpatialDropout3D", "dot", "GlobalAveragePooling3D",
           "GlobalMaxPooling3D", "Pipeline", "Wrapper"]


class Identity(Layer):
    """Returns its input unchanged (Keras's placeholder layer)."""

    def call(self, x, training=False):
        return x

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)


class ActivityRegularization(Layer):
    """Identity whose output adds ``l1 * sum(|y|) + l2 * sum(y**2)`` to ``layer.losses``.

    Args:
        l1, l2: the factors (>= 0, default 0).
    """

    def __init__(self, l1=0.0, l2=0.0, **kwargs):
        l1, l2 = check_float("l1", l1, 0.0), check_float("l2", l2, 0.0)
        super().__init__(activity_regularizer=regularizers.L1L2(l1=l1, l2=l2), **kwargs)
        self.l1, self.l2 = l1, l2

    def call(self, x, training=False):
        return x

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        config = super().get_config()
        config.pop("activity_regularizer", None)
        return {**config, "l1": self.l1, "l2": self.l2}


def _axes(value, name="axis"):
    if isinstance(value, (list, tuple)):
        return [int(a) for a in value]
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise invalid(name, "an int or a list of ints", value, TypeError)
    return [int(value)]


class UnitNormalization(Layer):
    """``x / ||x||`` over ``axis`` (Keras: ``x * min(rsqrt(sum(x**2)), 1e12)``).

    Args:
        axis: int or list of ints (default -1).
    """

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        self.axis = _axes(axis)

    def call(self, x, training=False):
        axis = check_axes_in_range(tuple(self.axis), x.shape, f"Layer '{self.name}'")
        inverse = (x * x).sum(axis=axis, keepdims=True).rsqrt().minimum(1e12)
        return x * inverse

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        return {**super().get_config(), "axis": self.axis if len(self.axis) > 1 else self.axis[0]}


class RMSNormalization(Layer):
    """Root-mean-square normalisation (Zhang and Sennrich, 2019), Keras's:
    ``y = x * rsqrt(mean(x**2, axis) + epsilon) * scale`` (``torch.nn.RMSNorm``).

    Args:
        axis: the normalised axis (default -1); ``scale`` has its size.
        epsilon: default 1e-6.

    Weights: ``scale`` (ones).
    """

    def __init__(self, axis=-1, epsilon=1e-6, **kwargs):
        super().__init__(**kwargs)
        self.axis = _axes(axis)
        self.epsilon = check_float("epsilon", epsilon, 0.0)
        self.scale = None

    def build(self, input_shape):
        axes = check_axes_in_range(tuple(self.axis), input_shape, f"Layer '{self.name}'")
        shape = tuple(input_shape[a] for a in axes)
        if any(s is None for s in shape):
            raise ValueError(f"Layer '{self.name}' needs a known size on axis {self.axis}. "
                             f"Received input_shape={tuple(input_shape)}")
        self.scale = self.add_weight("scale", shape, initializer="ones")
        super().build(input_shape)

    def call(self, x, training=False):
        axes = check_axes_in_range(tuple(self.axis), x.shape, f"Layer '{self.name}'")
        if tuple(x.shape[a] for a in axes) != tuple(self.scale.shape):
            raise ValueError(f"Layer '{self.name}' was built for size {tuple(self.scale.shape)} on "
                             f"axis {self.axis}; received an input of shape {tuple(x.shape)}.")
        rms = ((x * x).mean(axis=axes, keepdims=True) + self.epsilon).rsqrt()
        shape = [1] * x.ndim
        for a in axes:
            shape[a] = x.shape[a]
        return x * rms * self.scale.reshape(tuple(shape))

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        return {**super().get_config(), "axis": self.axis if len(self.axis) > 1 else self.axis[0],
                "epsilon": self.epsilon}


class Dot(Layer):
    """Dot product of two batches of tensors along ``axes`` (Keras's ``batch_dot``).

    Args:
        axes: int, or a pair (one axis of each input; the batch axis 0 excluded).
        normalize: L2-normalise both along those axes first (the result is then the cosine
            similarity).

    Shape:
        ``(N, d)`` and ``(N, d)`` give ``(N, 1)``; ``(N, m, k)`` and ``(N, k, n)`` with
        ``axes=(2, 1)`` give ``(N, m, n)``; in general the remaining axes of the first input
        followed by those of the second.
    """

    def __init__(self, axes, normalize=False, **kwargs):
        super().__init__(**kwargs)
        if isinstance(axes, (list, tuple)):
            if len(axes) != 2:
                raise invalid("axes", "an int or a pair of ints", axes)
            self.axes = [int(a) for a in axes]
        else:
            self.axes = int(axes)
        self.normalize = bool(normalize)

    def __call__(self, inputs, training=None):
        if not isinstance(inputs, (list, tuple)) or len(inputs) != 2:
            raise ValueError(f"Layer '{self.name}' (Dot) takes a list of 2 inputs. "
                             f"Received: {type(inputs).__name__}")
        if any(hasattr(v, "symbolic_call") for v in inputs):     # functional API
            return inputs[0].symbolic_call(self, list(inputs))
        tensors = [v if type(v) is Tensor and v.dtype == self.dtype else self._to_tensor(v)
                   for v in inputs]
        self.built = True
        return self.call(tensors)

    def build(self, input_shape):
        self.built = True

    def call(self, inputs, training=False):
        x, y = inputs
        axes = self.axes if isinstance(self.axes, list) else [self.axes, self.axes]
        ax, ay = axes[0] % x.ndim, axes[1] % y.ndim
        if ax == 0 or ay == 0:
            raise invalid("axes", "axes other than the batch axis 0", self.axes)
        if x.shape[ax] != y.shape[ay]:
            raise ValueError(f"Layer '{self.name}' (Dot): the sizes on axes {axes} differ: "
                             f"{tuple(x.shape)} and {tuple(y.shape)}.")
        if self.normalize:
            x = x * (x * x).sum(axis=ax, keepdims=True).rsqrt().minimum(1e12)
            y = y * (y * y).sum(axis=ay, keepdims=True).rsqrt().minimum(1e12)
        letters = "bcdefghijklmnopqrstuvwxyz"
        xs = ["a"] + [letters[i] for i in range(x.ndim - 1)]
        ys = ["a"] + [letters[x.ndim - 1 + i] for i in range(y.ndim - 1)]
        ys[ay] = xs[ax]
        out = [c for i, c in enumerate(xs) if i != ax] + [c for i, c in enumerate(ys)
                                                          if i not in (0, ay)]
        result = einsum(f"{''.join(xs)},{''.join(ys)}->{''.join(out)}", x, y)
        return result.reshape(tuple(result.shape) + (1,)) if result.ndim == 1 else result

    def compute_output_shape(self, input_shape):
        a, b = (tuple(s) for s in input_shape)
        axes = self.axes if isinstance(self.axes, list) else [self.axes, self.axes]
        ax, ay = axes[0] % len(a), axes[1] % len(b)
        out = tuple(s for i, s in enumerate(a) if i != ax) + tuple(
            s for i, s in enumerate(b) if i not in (0, ay))
        return out + (1,) if len(out) == 1 else out

    def get_config(self):
        return {**super().get_config(), "axes": self.axes, "normalize": self.normalize}


class _SpatialDropout(Layer):
    """Drop whole channels: one Bernoulli draw per (sample, channel), kept ones scaled by
    ``1 / (1 - rate)``, the same over every step / voxel."""

    _ndim = None

    def __init__(self, rate, data_format=None, seed=None, **kwargs):
        super().__init__(**kwargs)
        if isinstance(rate, bool) or not isinstance(rate, numbers.Real) or not 0 <= rate < 1:
            raise invalid("rate", "a float in [0, 1)", rate)
        self.rate = float(rate)
        self.data_format = config.normalize_data_format(data_format)
        self._stream = _random.stream_for(seed)     # None without a seed (the global stream)
        self.seed = None if seed is None else int(seed)

    def call(self, x, training=False):
        self._check_input(x, ndim=self._ndim)
        if not training or self.rate == 0:
            return x
        shape = [1] * x.ndim
        shape[0] = x.shape[0]
        channel = x.ndim - 1 if self.data_format == "channels_last" else 1
        shape[channel] = x.shape[channel]
        with _random.drawing_from(self._stream):     # the layer's own seed (Keras's seed=)
            return x * F.dropout(Tensor(np.ones(shape, dtype=x.dtype)), self.rate)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        return {**super().get_config(), "rate": self.rate, "data_format": self.data_format,
                "seed": self.seed}


class SpatialDropout1D(_SpatialDropout):
    """``SpatialDropout2D`` for sequences ``(N, T, C)``: whole channels dropped (Keras's
    SpatialDropout1D has no ``data_format``: channels last)."""

    _ndim = 3

    def __init__(self, rate, **kwargs):
        super().__init__(rate, data_format="channels_last", **kwargs)

    def get_config(self):
        config = super().get_config()
        config.pop("data_format")
        return config


class SpatialDropout3D(_SpatialDropout):
    """``SpatialDropout2D`` for volumes ``(N, D, H, W, C)`` / ``(N, C, D, H, W)``."""

    _ndim = 5


def dot(inputs, axes=-1, normalize=False, **kwargs):
    """The functional form of ``Dot``: ``Dot(axes, normalize, **kwargs)(inputs)``."""
    return Dot(axes=axes, normalize=normalize, **kwargs)(inputs)


class _GlobalPooling3D(Layer):
    _max = False

    def __init__(self, data_format=None, keepdims=False, **kwargs):
        super().__init__(**kwargs)
        self.data_format = config.normalize_data_format(data_format)
        self.keepdims = bool(keepdims)

    def _axes(self):
        return (1, 2, 3) if self.data_format == "channels_last" else (2, 3, 4)

    def call(self, x, training=False):
        self._check_input(x, ndim=5)
        if self._max:
            return x.amax(dim=self._axes(), keepdim=self.keepdims)
        return x.mean(axis=self._axes(), keepdims=self.keepdims)

    def compute_output_shape(self, input_shape):
        shape = list(input_shape)
        if self.keepdims:
            for a in self._axes():
                shape[a] = 1
            return tuple(shape)
        return tuple(s for i, s in enumerate(shape) if i not in self._axes())

    def get_config(self):
        return {**super().get_config(), "data_format": self.data_format, "keepdims": self.keepdims}


class GlobalAveragePooling3D(_GlobalPooling3D):
    """Mean over depth, height and width of volumes ``(N, D, H, W, C)`` / ``(N, C, D, H, W)``."""


class GlobalMaxPooling3D(_GlobalPooling3D):
    """Maximum over depth, height and width (ties share the gradient, as ``torch.amax``)."""
    _max = True


class Pipeline(Layer):
    """Keras's ``Pipeline(layers)``: the layers applied in order (a preprocessing chain that
    is a layer, not a model).

    Args:
        layers: a list of layers (or callables).
    """

    def __init__(self, layers, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self._steps = list(layers)
        for i, layer in enumerate(self._steps):
            if isinstance(layer, Layer):
                setattr(self, f"layer_{i}", layer)

    @property
    def layers(self):
        return list(self._steps)

    def __call__(self, x, training=None):
        for layer in self._steps:
            x = layer(x, training=training) if isinstance(layer, Layer) else layer(x)
        return x

    def call(self, x, training=False):
        return self(x, training=training)


class Wrapper(Layer):
    """Keras's ``Wrapper(layer)``: the base of layers that wrap another one; by default it
    calls the wrapped layer (subclasses override ``call``)."""

    def __init__(self, layer, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(layer, Layer):
            raise invalid("layer", "a Layer", layer, TypeError)
        self.layer = layer

    def call(self, x, training=False):
        return self.layer(x, training=training)

    def compute_output_shape(self, input_shape):
        return self.layer.compute_output_shape(input_shape)
