"""Merge layers (Keras 3): combine a list of tensors into one.

``Add``, ``Subtract`` (exactly two inputs), ``Multiply``, ``Average``, ``Maximum``,
``Minimum`` take tensors of one shape (NumPy broadcasting of size-1 axes is allowed, as in
Keras) and combine them elementwise; ``Concatenate(axis=-1)`` joins them along ``axis``.
``TensorOperation`` is the layer that arithmetic on symbolic tensors records
(``h + x``, ``h * 0.5``) so that a functional model can run and save it.

Gradients: a sum passes the gradient to every input; ``Maximum``/``Minimum`` pass it to the
larger/smaller input and split it in half on ties (as ``torch.maximum``); ``Concatenate``
hands each input its slice (docs/math/merging.md).

Example:
    >>> a, b = mn.Input((4,)), mn.Input((4,))
    >>> out = layers.Add()([a, b])
    >>> layers.Concatenate()([a, b]).shape
    (None, 8)
"""
import numpy as np

from minnet._checks import check_choice, check_int, invalid
from minnet.autograd import Function, Tensor
from minnet.ops import symbolic
from minnet.layers.base import Layer

__all__ = ["Add", "Subtract", "Multiply", "Average", "Maximum", "Minimum", "Concatenate",
           "TensorOperation", "ConcatenateFunction", "add", "subtract", "multiply", "average",
           "maximum", "minimum", "concatenate"]


class ConcatenateFunction(Function):
    """``np.concatenate(inputs, axis)``; backward hands each input its slice of the gradient."""

    @staticmethod
    def forward(ctx, axis, *arrays):
        ctx.axis = axis
        ctx.sizes = [a.shape[axis] for a in arrays]
        return np.concatenate(arrays, axis=axis)

    @staticmethod
    def backward(ctx, grad):
        bounds = np.cumsum(ctx.sizes)[:-1]
        pieces = np.split(grad, bounds, axis=ctx.axis)
        return (None,) + tuple(np.ascontiguousarray(p) if need else None
                               for p, need in zip(pieces, ctx.needs_input_grad[1:]))


def _broadcast_shape(shapes, layer):
    """The elementwise result shape of ``shapes`` (None = unknown, broadcasts like 1)."""
    ndim = max(len(s) for s in shapes)
    result = []
    for axis in range(ndim):
        sizes = {s[axis - ndim + len(s)] for s in shapes if axis - ndim + len(s) >= 0}
        known = {v for v in sizes if v is not None and v != 1}
        if len(known) > 1:
            raise ValueError(f"Inputs of layer '{layer.name}' must have compatible shapes; received "
                             f"shapes {[symbolic.shape_str(s) for s in shapes]}")
        if known:
            result.append(known.pop())
        elif None in sizes:
            result.append(None)
        else:
            result.append(1)
    return tuple(result)


class _Merge(Layer):
    """Shared parts of the merge layers: a list of inputs, checked, then ``_merge``."""

    min_inputs = 2
    max_inputs = None

    def _check_count(self, n):
        if n < self.min_inputs or (self.max_inputs is not None and n > self.max_inputs):
            exact = self.min_inputs == self.max_inputs
            expected = (f"exactly {self.min_inputs}" if exact else f"at least {self.min_inputs}")
            raise ValueError(f"Layer '{self.name}' ({type(self).__name__}) expects a list of "
                             f"{expected} inputs. Received: {n} input(s)")

    def __call__(self, inputs, training=None):
        if not isinstance(inputs, (list, tuple)):
            raise TypeError(f"Layer '{self.name}' ({type(self).__name__}) expects a list of "
                            f"tensors. Received: {type(inputs).__name__}")
        self._check_count(len(inputs))
        if symbolic.is_symbolic(inputs):
            return self._symbolic_call((list(inputs),), {})
        tensors = [x if type(x) is Tensor and x.dtype == self.dtype else self._to_tensor(x)
                   for x in inputs]
        if not self.built:
            self.build([tuple(t.shape) for t in tensors])
            self.built = True
        shapes = [tuple(t.shape) for t in tensors]
        self._check_shapes(shapes)
        return self._merge(tensors)

    def build(self, input_shape):
        if not isinstance(input_shape, (list, tuple)) or not all(
                isinstance(s, (list, tuple)) for s in input_shape):
            raise ValueError(f"Layer '{self.name}' ({type(self).__name__}) must be built with a list "
                             f"of shapes. Received: input_shape={input_shape!r}")
        self._check_count(len(input_shape))
        self._check_shapes([tuple(s) for s in input_shape])
        self.built = True

    def _check_shapes(self, shapes):
        _broadcast_shape(shapes, self)

    def compute_output_shape(self, input_shape):
        shapes = [tuple(s) for s in input_shape]
        self._check_count(len(shapes))
        return _broadcast_shape(shapes, self)

    def count_flops(self, input_shape):
        shapes = [tuple(1 if d is None else d for d in s) for s in input_shape]
        return int(np.prod(_broadcast_shape(shapes, self))) * (len(shapes) - 1)


class Add(_Merge):
    """Elementwise sum of a list of tensors of one shape."""

    def _merge(self, tensors):
        out = tensors[0]
        for t in tensors[1:]:
            out = out + t
        return out


class Subtract(_Merge):
    """``inputs[0] - inputs[1]`` (exactly two tensors)."""

    max_inputs = 2

    def _merge(self, tensors):
        return tensors[0] - tensors[1]


class Multiply(_Merge):
    """Elementwise product of a list of tensors."""

    def _merge(self, tensors):
        out = tensors[0]
        for t in tensors[1:]:
            out = out * t
        return out


class Average(_Merge):
    """Elementwise mean of a list of tensors."""

    def _merge(self, tensors):
        out = tensors[0]
        for t in tensors[1:]:
            out = out + t
        return out * (1.0 / len(tensors))


class Maximum(_Merge):
    """Elementwise maximum (ties split the gradient in half, as ``torch.maximum``)."""

    def _merge(self, tensors):
        out = tensors[0]
        for t in tensors[1:]:
            out = out.maximum(t)
        return out


class Minimum(_Merge):
    """Elementwise minimum (ties split the gradient in half, as ``torch.minimum``)."""

    def _merge(self, tensors):
        out = tensors[0]
        for t in tensors[1:]:
            out = out.minimum(t)
        return out


class Concatenate(_Merge):
    """Join a list of tensors along ``axis`` (default -1, the last axis).

    Args:
        axis: the axis to join along (not the batch axis 0); every other axis must match.

    Shape:
        - Inputs: ``(N, ..., d_i, ...)`` for each input i.  Output: ``(N, ..., sum(d_i), ...)``.
    """

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        self.axis = check_int("axis", axis)

    def _resolve_axis(self, ndim):
        axis = self.axis + ndim if self.axis < 0 else self.axis
        if not 0 < axis < ndim:
            raise ValueError(f"Invalid value for argument `axis` of layer '{self.name}': expected an "
                             f"axis in [1, {ndim}) or [-{ndim - 1}, 0) (not the batch axis) for "
                             f"inputs of rank {ndim}. Received: axis={self.axis}")
        return axis

    def compute_output_shape(self, input_shape):
        shapes = [tuple(s) for s in input_shape]
        self._check_count(len(shapes))
        self._check_shapes(shapes)
        axis = self._resolve_axis(len(shapes[0]))
        sizes = [s[axis] for s in shapes]
        out = list(shapes[0])
        for s in shapes[1:]:
            out = [a if a is not None else b for a, b in zip(out, s)]
        out[axis] = None if any(v is None for v in sizes) else int(sum(sizes))
        return tuple(out)

    def _check_shapes(self, shapes):
        ranks = {len(s) for s in shapes}
        if len(ranks) != 1:
            raise ValueError(f"Layer '{self.name}' (Concatenate) needs inputs of one rank. Received "
                             f"shapes {[symbolic.shape_str(s) for s in shapes]}")
        axis = self._resolve_axis(len(shapes[0]))
        for i in range(len(shapes[0])):
            if i == axis:
                continue
            sizes = {s[i] for s in shapes if s[i] is not None}
            if len(sizes) > 1:
                raise ValueError(f"Layer '{self.name}' (Concatenate) needs inputs whose shapes match "
                                 f"except on the concatenation axis {self.axis}. Received shapes "
                                 f"{[symbolic.shape_str(s) for s in shapes]}")

    def _merge(self, tensors):
        return ConcatenateFunction.apply(self._resolve_axis(tensors[0].ndim), *tensors)

    def count_flops(self, input_shape):
        return 0

    def get_config(self):
        return {**super().get_config(), "axis": self.axis}

    def extra_repr(self):
        return f"axis={self.axis}"


_OPERATIONS = ("add", "subtract", "multiply", "divide")


class TensorOperation(Layer):
    """``+ - * /`` recorded on symbolic tensors: of two tensors, or of one and a constant.

    Args:
        op: ``"add"``, ``"subtract"``, ``"multiply"`` or ``"divide"``.
        constant: None (two tensor inputs) or a float (one tensor input).
        reverse: with a constant, compute ``constant op x`` instead of ``x op constant``.
    """

    def __init__(self, op, constant=None, reverse=False, **kwargs):
        super().__init__(**kwargs)
        self.op = check_choice("op", op, _OPERATIONS)
        if constant is not None and (isinstance(constant, bool) or not isinstance(constant, (int, float))):
            raise invalid("constant", "None or a float", constant, TypeError)
        self.constant = None if constant is None else float(constant)
        self.reverse = bool(reverse)

    def _apply(self, a, b):
        if self.op == "add":
            return a + b
        if self.op == "subtract":
            return a - b
        if self.op == "multiply":
            return a * b
        return a / b

    def __call__(self, inputs, training=None):
        if symbolic.is_symbolic(inputs):
            return self._symbolic_call((list(inputs) if isinstance(inputs, (list, tuple)) else inputs,), {})
        if self.constant is None:
            a, b = (self._to_tensor(x) for x in inputs)
            return self._apply(a, b)
        x = self._to_tensor(inputs)
        return self._apply(self.constant, x) if self.reverse else self._apply(x, self.constant)

    def build(self, input_shape):
        self.built = True

    def compute_output_shape(self, input_shape):
        if self.constant is None:
            return _broadcast_shape([tuple(s) for s in input_shape], self)
        return tuple(input_shape)

    def count_flops(self, input_shape):
        shape = input_shape[0] if self.constant is None else input_shape
        return int(np.prod([1 if d is None else d for d in shape]))

    def get_config(self):
        return {**super().get_config(), "op": self.op, "constant": self.constant,
                "reverse": self.reverse}

    def extra_repr(self):
        return f"op={self.op!r}" + ("" if self.constant is None else f", constant={self.constant}")


symbolic.set_operation_layer(TensorOperation)


# ---- Keras's functional forms: `layers.add([a, b])` is `layers.Add()([a, b])` ---------------
def add(inputs, **kwargs):
    """``Add(**kwargs)(inputs)``: the elementwise sum of a list of tensors."""
    return Add(**kwargs)(inputs)


def subtract(inputs, **kwargs):
    """``Subtract(**kwargs)(inputs)``: ``inputs[0] - inputs[1]``."""
    return Subtract(**kwargs)(inputs)


def multiply(inputs, **kwargs):
    """``Multiply(**kwargs)(inputs)``: the elementwise product of a list of tensors."""
    return Multiply(**kwargs)(inputs)


def average(inputs, **kwargs):
    """``Average(**kwargs)(inputs)``: the elementwise mean of a list of tensors."""
    return Average(**kwargs)(inputs)


def maximum(inputs, **kwargs):
    """``Maximum(**kwargs)(inputs)``: the elementwise maximum of a list of tensors."""
    return Maximum(**kwargs)(inputs)


def minimum(inputs, **kwargs):
    """``Minimum(**kwargs)(inputs)``: the elementwise minimum of a list of tensors."""
    return Minimum(**kwargs)(inputs)


def concatenate(inputs, axis=-1, **kwargs):
    """``Concatenate(axis=axis, **kwargs)(inputs)``: the tensors joined along ``axis``."""
    return Concatenate(axis=axis, **kwargs)(inputs)
