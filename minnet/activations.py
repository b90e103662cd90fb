"""Activation functions by name (Keras's ``keras.activations``): what
``Dense(..., activation="relu")`` and ``Activation("gelu")`` look up.

``get(identifier)`` turns a name, ``None`` (= linear) or a callable into a function
``Tensor -> Tensor``; ``serialize`` turns it back into its name. Names and defaults are
Keras 3's: ``relu``, ``relu6``, ``leaky_relu`` (slope 0.2), ``elu``, ``selu``, ``sigmoid``,
``hard_sigmoid`` (``clip(x/6 + 1/2, 0, 1)``), ``hard_silu``/``hard_swish``, ``tanh``,
``softmax``, ``log_softmax``, ``softplus``, ``softsign``, ``silu``/``swish``, ``gelu``
(exact erf form; ``approximate=True`` for the tanh form), ``mish``, ``exponential``,
``linear``, and ``celu``, ``glu``, ``hard_shrink``, ``hard_tanh``, ``log_sigmoid``,
``soft_shrink``, ``sparse_plus``, ``sparse_sigmoid``, ``sparsemax``, ``squareplus``,
``tanh_shrink``, ``threshold`` (composed from Tensor operations). The functions run the differentiable ops of ``minnet.functional`` (fused Cython
forward/backward kernels; the math is in ``docs/math/activations.md``).

Example:
    >>> from minnet import activations
    >>> act = activations.get("swish")
    >>> activations.serialize(act)
    'silu'
"""
import numpy as np

from minnet import _registry
from minnet import functional as F
from minnet.autograd import Tensor, where

__all__ = ["relu", "relu6", "leaky_relu", "elu", "selu", "sigmoid", "hard_sigmoid", "hard_silu",
           "hard_swish", "tanh", "softmax", "log_softmax", "softplus", "softsign", "silu",
           "swish", "gelu", "mish", "exponential", "linear", "celu", "glu", "hard_shrink",
           "hard_tanh", "log_sigmoid", "soft_shrink", "sparse_plus", "sparse_sigmoid", "sparsemax",
           "squareplus", "tanh_shrink", "threshold", "get", "serialize", "deserialize",
           "is_builtin"]


def relu(x, negative_slope=0.0, max_value=None, threshold=0.0):
    """Keras's relu: ``max(x, 0)`` by default; with ``max_value`` the output is clipped
    to it, with ``threshold`` values at or below it become 0 (or ``negative_slope *
    (x - threshold)``), with ``negative_slope`` the negative side leaks."""
    if negative_slope == 0 and max_value is None and threshold == 0:
        return F.relu(x)
    if negative_slope != 0 and max_value is None and threshold == 0:
        return F.leaky_relu(x, negative_slope=negative_slope)
    if not isinstance(x, Tensor):
        x = Tensor(np.asarray(x, dtype=np.float32))
    negative = F.relu(-x + threshold) if negative_slope != 0 else None
    clip_max = max_value is not None
    if threshold != 0:
        y = x * (x.data > threshold).astype(x.dtype)
    elif max_value == 6:
        y = F.relu6(x)
        clip_max = False
    else:
        y = F.relu(x)
    if clip_max:
        y = y.clip(0.0, float(max_value))
    if negative is not None:
        y = y - negative * negative_slope
    return y


def relu6(x):
    """``min(max(x, 0), 6)``."""
    return F.relu6(x)


def leaky_relu(x, negative_slope=0.2):
    """``x`` for ``x > 0``, ``negative_slope * x`` otherwise (Keras 3's default slope 0.2)."""
    return F.leaky_relu(x, negative_slope=negative_slope)


def elu(x, alpha=1.0):
    """``x`` for ``x > 0``, ``alpha * (exp(x) - 1)`` otherwise."""
    return F.elu(x, alpha=alpha)


def selu(x):
    """Scaled ELU with the self-normalising constants (Klambauer et al., 2017)."""
    return F.selu(x)


def sigmoid(x):
    """``1 / (1 + exp(-x))``."""
    return F.sigmoid(x)


def hard_sigmoid(x):
    """Keras 3's (and PyTorch's) ``clip(x / 6 + 1/2, 0, 1)`` (Keras 2 used ``0.2 x + 0.5``)."""
    return F.hardsigmoid(x)


def hard_silu(x):
    """``x * hard_sigmoid(x)`` (also ``hard_swish``)."""
    return F.hardswish(x)


def tanh(x):
    """Hyperbolic tangent."""
    return F.tanh(x)


def softmax(x, axis=-1):
    """``exp(x) / sum(exp(x))`` along ``axis`` (the last one by default)."""
    return F.softmax(x, axis=axis)


def log_softmax(x, axis=-1):
    """``x - logsumexp(x)`` along ``axis``."""
    return F.log_softmax(x, axis=axis)


def softplus(x):
    """``log(1 + exp(x))``."""
    return F.softplus(x)


def softsign(x):
    """``x / (1 + |x|)``."""
    return F.softsign(x)


def silu(x):
    """``x * sigmoid(x)`` (also ``swish``)."""
    return F.silu(x)


def gelu(x, approximate=False):
    """Gaussian error linear unit: ``x * Phi(x)`` (Keras 3's default exact form);
    ``approximate=True`` uses the tanh approximation."""
    return F.gelu(x, approximate="tanh" if approximate else "none")


def mish(x):
    """``x * tanh(softplus(x))``."""
    return F.mish(x)


def exponential(x):
    """``exp(x)``."""
    if not isinstance(x, Tensor):
        array = np.asarray(x)
        keep = isinstance(x, np.ndarray) and array.dtype in (np.float32, np.float64)
        x = Tensor(array if keep else array.astype(np.float32))
    return x.exp()


def linear(x):
    """The identity (no activation)."""
    return x


def _tensor(x):
    if isinstance(x, Tensor):
        return x
    array = np.asarray(x)
    return Tensor(array if array.dtype in (np.float32, np.float64) else array.astype(np.float32))


def celu(x, alpha=1.0):
    """``max(x, 0) + min(alpha * (exp(x / alpha) - 1), 0)``."""
    x = _tensor(x)
    # exp of the clipped input: the unused branch must not overflow (0 * inf in backward)
    return where(x.data > 0, x, ((x.clip(max=0.0) * (1.0 / alpha)).exp() - 1.0) * alpha)


def glu(x, axis=-1):
    """Gated linear unit: ``a * sigmoid(b)`` with ``a, b`` the two halves of ``axis``."""
    x = _tensor(x)
    if x.shape[axis] % 2:
        raise ValueError(f"Invalid value for argument `x`: glu needs an even size on axis "
                         f"{axis}. Received: x.shape={tuple(x.shape)}")
    a, b = x.chunk(2, dim=axis)
    return a * F.sigmoid(b)


def hard_shrink(x, threshold=0.5):
    """``x`` where ``|x| > threshold``, else 0."""
    x = _tensor(x)
    return x * (np.abs(x.data) > threshold).astype(x.dtype)


def hard_tanh(x):
    """``clip(x, -1, 1)``."""
    return _tensor(x).clip(-1.0, 1.0)


def log_sigmoid(x):
    """``log(sigmoid(x)) = -softplus(-x)``, stable for any ``x``."""
    return -F.softplus(-_tensor(x))


def soft_shrink(x, threshold=0.5):
    """``x - threshold`` above it, ``x + threshold`` below ``-threshold``, 0 between."""
    x = _tensor(x)
    inside = (np.abs(x.data) > threshold).astype(x.dtype)
    return (x - np.sign(x.data).astype(x.dtype) * threshold) * inside


def sparse_plus(x):
    """0 for ``x <= -1``, ``(x + 1)**2 / 4`` between, ``x`` for ``x >= 1``."""
    x = _tensor(x)
    middle = (x + 1.0) * (x + 1.0) * 0.25
    return where(x.data >= 1, x, where(x.data <= -1, x * 0.0, middle))


def sparse_sigmoid(x):
    """0 for ``x <= -1``, ``(x + 1) / 2`` between, 1 for ``x >= 1``."""
    return ((_tensor(x) + 1.0) * 0.5).clip(0.0, 1.0)


def sparsemax(x, axis=-1):
    """Euclidean projection onto the probability simplex along ``axis`` (Martins and
    Astudillo, 2016): ``max(x - tau, 0)`` with ``tau`` making the row sum 1. The support
    is found in NumPy; ``tau = (sum of the support - 1) / |support|`` is differentiated."""
    x = _tensor(x)
    data = np.moveaxis(x.data, axis, -1)
    z = -np.sort(-data, axis=-1)
    k = np.arange(1, data.shape[-1] + 1, dtype=data.dtype)
    cumulative = np.cumsum(z, axis=-1)
    size = np.sum(1 + k * z > cumulative, axis=-1, keepdims=True)
    tau_data = (np.take_along_axis(cumulative, size - 1, axis=-1) - 1) / size
    support = np.moveaxis((data > tau_data).astype(x.dtype), -1, axis)
    count = np.moveaxis(size.astype(x.dtype), -1, axis)
    tau = ((x * support).sum(axis=axis, keepdims=True) - 1.0) * (1.0 / count)
    return (x - tau) * support


def squareplus(x, b=4):
    """``(x + sqrt(x**2 + b)) / 2``."""
    x = _tensor(x)
    return (x + (x * x + float(b)).sqrt()) * 0.5


def tanh_shrink(x):
    """``x - tanh(x)``."""
    x = _tensor(x)
    return x - F.tanh(x)


def threshold(x, threshold, default_value):
    """``x`` where ``x > threshold``, else ``default_value``."""
    x = _tensor(x)
    return where(x.data > threshold, x, x * 0.0 + float(default_value))


swish = silu
hard_swish = hard_silu

for _fn, _aliases in ((relu, ()), (relu6, ()), (leaky_relu, ()), (elu, ()), (selu, ()),
                      (sigmoid, ()), (hard_sigmoid, ()), (hard_silu, ("hard_swish",)),
                      (tanh, ()), (softmax, ()), (log_softmax, ()), (softplus, ()),
                      (softsign, ()), (silu, ("swish",)), (gelu, ()), (mish, ()),
                      (exponential, ()), (linear, ("identity", "none")), (celu, ()), (glu, ()),
                      (hard_shrink, ()), (hard_tanh, ()), (log_sigmoid, ()), (soft_shrink, ()),
                      (sparse_plus, ()), (sparse_sigmoid, ()), (sparsemax, ()), (squareplus, ()),
                      (tanh_shrink, ()), (threshold, ())):
    _registry.register("activation", _fn, aliases=_aliases)


def is_builtin(name, function=None):
    """Whether ``name`` is a built-in activation (and, if given, resolves to ``function``)."""
    try:
        found = _registry.lookup("activation", name)
    except (ValueError, TypeError):
        return False
    return function is None or found is function


def get(identifier):
    """Resolve an activation.

    Args:
        identifier: a name (see the module docstring), ``None`` (linear) or a callable.

    Returns:
        A callable ``Tensor -> Tensor``.

    Raises:
        ValueError: unknown name.  TypeError: neither a string, None nor a callable.
    """
    if identifier is None:
        return linear
    if isinstance(identifier, str):
        return _registry.lookup("activation", identifier.strip(), argument="activation")
    if callable(identifier):
        return identifier
    raise TypeError(f"Invalid value for argument `activation`: expected a string, None or a "
                    f"callable. Received: activation={identifier!r} of type "
                    f"{type(identifier).__name__}")


def serialize(activation):
    """The name of ``activation`` (``"linear"`` for None); other callables by ``__name__``."""
    if activation is None:
        return "linear"
    name = _registry.registered_name("activation", activation)
    if name is not None:
        return name
    return getattr(activation, "__name__", repr(activation))


def deserialize(name, custom_objects=None):
    """Inverse of ``serialize``: a name (or a key of ``custom_objects``) to a function."""
    if custom_objects and name in custom_objects:
        return custom_objects[name]
    return get(name)
