"""``Tensor``'s arithmetic: the operators (``+``, ``@``, ``**``, comparisons, bitwise) and
the elementwise and matrix methods (``exp``, ``clip``, ``matmul``, ``sigmoid``, ``astype``...).

A mixin of ``Tensor`` (tensor.py), holding no state: each method applies one Function of
the op modules (elementwise_ops, linalg_ops, activation_ops); comparisons give boolean
tensors without gradient.
"""
import numpy as np

from . import activation_ops, elementwise_ops, linalg_ops
from .op_helpers import raw

__all__ = ["TensorMath"]


class TensorMath:
    """Operators and elementwise/matrix methods of ``Tensor`` (no state of its own)."""

    __slots__ = ()

    # ------------------------------------------------------------------ operators
    def __add__(self, other):
        return elementwise_ops.Add.apply(self, other)

    def __radd__(self, other):
        return elementwise_ops.Add.apply(other, self)

    def __sub__(self, other):
        return elementwise_ops.Sub.apply(self, other)

    def __rsub__(self, other):
        return elementwise_ops.Sub.apply(other, self)

    def __mul__(self, other):
        return elementwise_ops.Mul.apply(self, other)

    def __rmul__(self, other):
        return elementwise_ops.Mul.apply(other, self)

    def __truediv__(self, other):
        return elementwise_ops.Div.apply(self, other)

    def __rtruediv__(self, other):
        return elementwise_ops.Div.apply(other, self)

    def __matmul__(self, other):
        return linalg_ops.MatMul.apply(self, other)

    def __rmatmul__(self, other):
        return linalg_ops.MatMul.apply(other, self)

    def __pow__(self, other):
        return elementwise_ops.Pow.apply(self, other)

    def __rpow__(self, other):
        return elementwise_ops.Pow.apply(other, self)

    def __neg__(self):
        return elementwise_ops.Neg.apply(self)

    def __pos__(self):
        return self

    def __abs__(self):          # abs(t), as torch.Tensor: the same node as t.abs()
        return elementwise_ops.Abs.apply(self)

    # tensors can be kept in lists, sets and dicts; use eq() / ne() for elementwise)
    def __lt__(self, other):
        return self._make(np.less(self.data, raw(other)))

    def __le__(self, other):
        return self._make(np.less_equal(self.data, raw(other)))

    def __gt__(self, other):
        return self._make(np.greater(self.data, raw(other)))

    def __ge__(self, other):
        return self._make(np.greater_equal(self.data, raw(other)))

    lt, le, gt, ge = __lt__, __le__, __gt__, __ge__

    def eq(self, other):
        return self._make(np.equal(self.data, raw(other)))

    def ne(self, other):
        return self._make(np.not_equal(self.data, raw(other)))

    def logical_not(self):
        return self._make(np.logical_not(self.data))

    def __invert__(self):
        return self._make(np.invert(self.data))

    def __and__(self, other):
        return self._make(np.bitwise_and(self.data, raw(other)))

    def __or__(self, other):
        return self._make(np.bitwise_or(self.data, raw(other)))

    def __xor__(self, other):
        return self._make(np.bitwise_xor(self.data, raw(other)))

    __hash__ = object.__hash__

    # ------------------------------------------------------------------ math
    def exp(self):
        return elementwise_ops.Exp.apply(self)

    def expm1(self):
        return elementwise_ops.Expm1.apply(self)

    def log(self):
        return elementwise_ops.Log.apply(self)

    def log1p(self):
        return elementwise_ops.Log1p.apply(self)

    def sqrt(self):
        return elementwise_ops.Sqrt.apply(self)

    def rsqrt(self):
        return self.sqrt().reciprocal()

    def reciprocal(self):
        return elementwise_ops.Div.apply(1.0, self)

    def square(self):
        return elementwise_ops.Mul.apply(self, self)

    def sin(self):
        return elementwise_ops.Sin.apply(self)

    def cos(self):
        return elementwise_ops.Cos.apply(self)

    def abs(self):
        return elementwise_ops.Abs.apply(self)

    def sign(self):
        return elementwise_ops.Sign.apply(self)

    def floor(self):
        return elementwise_ops.Floor.apply(self)

    def ceil(self):
        return elementwise_ops.Ceil.apply(self)

    def round(self):
        return elementwise_ops.Round.apply(self)

    def neg(self):
        return elementwise_ops.Neg.apply(self)

    def pow(self, exponent):
        return elementwise_ops.Pow.apply(self, exponent)

    def add(self, other, alpha=1):
        return elementwise_ops.Add.apply(self, other if alpha == 1 else other * alpha)

    def sub(self, other, alpha=1):
        return elementwise_ops.Sub.apply(self, other if alpha == 1 else other * alpha)

    def mul(self, other):
        return elementwise_ops.Mul.apply(self, other)

    def div(self, other):
        return elementwise_ops.Div.apply(self, other)

    def clip(self, min=None, max=None):
        return elementwise_ops.Clamp.apply(self, min=raw(min), max=raw(max))

    clamp = clip

    def maximum(self, other):
        return elementwise_ops.Maximum.apply(self, other)

    def minimum(self, other):
        return elementwise_ops.Minimum.apply(self, other)

    def matmul(self, other):
        return linalg_ops.MatMul.apply(self, other)

    def mm(self, other):
        if self.ndim != 2 or np.ndim(raw(other)) != 2:
            raise RuntimeError("mm(): both arguments must be 2-D")
        return linalg_ops.MatMul.apply(self, other)

    def bmm(self, other):
        if self.ndim != 3 or np.ndim(raw(other)) != 3:
            raise RuntimeError(f"bmm(): both arguments must be 3-D. Received: {self.ndim}-D and "
                               f"{np.ndim(raw(other))}-D")
        if self.shape[0] != np.shape(raw(other))[0]:
            raise RuntimeError(f"bmm(): batch sizes differ: {self.shape[0]} vs {np.shape(raw(other))[0]}")
        return linalg_ops.MatMul.apply(self, other)

    def dot(self, other):
        return linalg_ops.MatMul.apply(self, other)

    def sigmoid(self):
        return activation_ops.Sigmoid.apply(self)

    def tanh(self):
        return activation_ops.Tanh.apply(self)

    def relu(self):
        return activation_ops.Relu.apply(self)

    def softmax(self, dim=-1, *, axis=None):
        return activation_ops.Softmax.apply(self, dim=dim if axis is None else axis)

    def log_softmax(self, dim=-1, *, axis=None):
        return activation_ops.LogSoftmax.apply(self, dim=dim if axis is None else axis)

    def astype(self, dtype):
        """A copy converted to ``dtype`` (gradients flow back, converted to the source dtype)."""
        return elementwise_ops.Cast.apply(self, dtype=np.dtype(dtype))

    def float(self):
        return self.astype(np.float32)

    def double(self):
        return self.astype(np.float64)
