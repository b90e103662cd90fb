"""Activation functions by name: what ``Dense(..., activation="relu")`` looks up.

``get(identifier)`` turns a name (``"relu"``, ``"sigmoid"``, ``"tanh"``, ``"softmax"``,
``"elu"``, ``"selu"``, ``"leaky_relu"``, ``"linear"``), ``None`` (= linear) or a
callable into a function ``Tensor -> Tensor``; ``serialize`` turns it back into its name.
The functions themselves are the differentiable ops of ``minnet.functional``.

Example:
    >>> from minnet import activations
    >>> act = activations.get("relu")
    >>> activations.serialize(act)
    'relu'
"""

__all__ = ["relu", "sigmoid", "tanh", "softmax", "elu", "selu", "leaky_relu", "linear",
           "get", "serialize", "deserialize"]

from minnet._utils import did_you_mean
from minnet._utils import functional as _functional


def relu(x):
    """``max(x, 0)``."""
    return _functional().relu(x)


def sigmoid(x):
    """``1 / (1 + exp(-x))``."""
    return _functional().sigmoid(x)


def tanh(x):
    """Hyperbolic tangent."""
    return _functional().tanh(x)


def softmax(x, axis=-1):
    """``exp(x) / sum(exp(x))`` along ``axis`` (the last one by default)."""
    return _functional().softmax(x, axis=axis)


def elu(x, alpha=1.0):
    """``x`` for ``x > 0``, ``alpha * (exp(x) - 1)`` otherwise."""
    return _functional().elu(x, alpha=alpha)


def selu(x):
    """Scaled ELU with the self-normalising constants (Klambauer et al., 2017)."""
    return _functional().selu(x)


def leaky_relu(x, negative_slope=0.01):
    """``x`` for ``x > 0``, ``negative_slope * x`` otherwise (PyTorch's default slope 0.01)."""
    return _functional().leaky_relu(x, negative_slope=negative_slope)


def linear(x):
    """The identity (no activation)."""
    return x


_ACTIVATIONS = {f.__name__: f for f in (relu, sigmoid, tanh, softmax, elu, selu, leaky_relu, linear)}
_ALIASES = {"leakyrelu": "leaky_relu", "identity": "linear", "none": "linear"}


def get(identifier):
    """Resolve an activation.

    Args:
        identifier: a name (``"relu"``, ``"sigmoid"``, ``"tanh"``, ``"softmax"``, ``"elu"``,
            ``"selu"``, ``"leaky_relu"``, ``"linear"``), ``None`` (linear) or a callable.

    Returns:
        A callable ``Tensor -> Tensor``.

    Raises:
        ValueError: unknown name.  TypeError: neither a string, None nor a callable.
    """
    if identifier is None:
        return linear
    if isinstance(identifier, str):
        key = identifier.strip().lower()
        key = _ALIASES.get(key, key)
        if key not in _ACTIVATIONS:
            raise ValueError(f"Invalid value for argument `activation`: expected one of "
                             f"{sorted(_ACTIVATIONS)}, None or a callable. "
                             f"Received: activation={identifier!r}."
                             + did_you_mean(key, list(_ACTIVATIONS) + list(_ALIASES)))
        return _ACTIVATIONS[key]
    if callable(identifier):
        return identifier
    raise TypeError(f"Invalid value for argument `activation`: expected a string, None or a "
                    f"callable. Received: activation={identifier!r} of type "
                    f"{type(identifier).__name__}")


def serialize(activation):
    """The name of ``activation`` (``"linear"`` for None); other callables by ``__name__``."""
    if activation is None:
        return "linear"
    for name, fn in _ACTIVATIONS.items():
        if activation is fn:
            return name
    return getattr(activation, "__name__", repr(activation))


def deserialize(name, custom_objects=None):
    """Inverse of ``serialize``: a name (or a key of ``custom_objects``) to a function."""
    if custom_objects and name in custom_objects:
        return custom_objects[name]
    return get(name)
