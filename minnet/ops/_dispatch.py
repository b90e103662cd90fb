"""The one door every public op of ``minnet.ops`` goes through, and Keras's dtype rules.

``keras_op("x1", "x2")`` wraps an op: the named parameters (NumPy arrays, minnet Tensors,
Python numbers, nested lists) are converted to Tensors before the body runs, so each op is
written once, over Tensors. A name written ``"[xs]"`` is a list of tensors, ``"*operands"``
the variadic parameter. With ``weak=True`` Python ``bool``/``int``/``float`` arguments stay
Python numbers, so the body can apply Keras's weak typing (``int32_tensor + 1.5`` is float32,
``float16_tensor * 2.0`` stays float16): ``promote`` does that.

dtype promotion follows Keras 3 (``keras.backend.result_type``): the JAX-style lattice
``bool < int weak < u8/i8 < ... < i64 < float weak < f16/bf16 < f32 < f64``, a Python number
counting as a *weak* type. Keras's torch backend returns float64 from float64 inputs (it
calls torch), so minnet keeps 64-bit results too; the one place minnet differs from
``keras.backend.result_type`` itself is that Keras (on torch) reports float64/int64 there as
their 32-bit types. ``result_type`` is exported from ``minnet.ops``.
"""
import functools
import inspect

import numpy as np

from minnet import config
from minnet.autograd import Tensor, stack
from minnet.ops.symbolic import any_symbolic, symbolic_call

__all__ = ["keras_op", "convert", "standardize_dtype", "result_type", "promote", "cast_to",
           "binary", "to_float", "floatx", "is_float", "is_int", "norm_axis", "norm_axes", "wrap",
           "data_of"]

_BOOL = ("bool",)
_INTS = ("uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64")
_FLOATS = ("bfloat16", "float16", "float32", "float64")

# Keras's type-promotion lattice (keras/src/backend/common/dtypes.py): each type maps to the
# types just above it; "int"/"float" are the weak types of Python numbers.
_LATTICE = {
    "bool": ["int"],
    "uint8": ["int16", "uint16"], "uint16": ["int32", "uint32"], "uint32": ["int64", "uint64"],
    "uint64": ["float"],
    "int": ["uint8", "int8"],
    "int8": ["int16"], "int16": ["int32"], "int32": ["int64"], "int64": ["float"],
    "float": ["float16"],
    "float16": ["float32"], "float32": ["float64"], "float64": [],
}


def _upper_bounds():
    bounds = {node: {node} for node in _LATTICE}
    for node in _LATTICE:
        while True:
            grown = set().union(*(set(_LATTICE[b]) for b in bounds[node])) | bounds[node]
            if grown == bounds[node]:
                break
            bounds[node] = grown
    return bounds


_UPPER = _upper_bounds()


@functools.lru_cache(maxsize=512)
def _least_upper_bound(*nodes):
    common = set.intersection(*(_UPPER[n] for n in nodes))
    lub = (common & set(nodes)) or {c for c in common if common.issubset(_UPPER[c])}
    if len(lub) != 1:
        raise ValueError(f"Input dtypes {nodes} have no implicit dtype promotion path. "
                         f"Cast the inputs explicitly (ops.cast).")
    return lub.pop()


def floatx():
    return config.floatx()


def standardize_dtype(dtype):
    """A dtype as Keras's string (``"float32"``, ``"int32"``, ``"bool"``); None gives floatx."""
    if dtype is None:
        return config.floatx()
    if dtype is int:
        return "int32"
    if dtype is float:
        return "float32"
    if dtype is bool:
        return "bool"
    if isinstance(dtype, str) and dtype in ("int", "float"):
        return {"int": "int32", "float": "float32"}[dtype]
    if hasattr(dtype, "name") and not isinstance(dtype, np.dtype) and not isinstance(dtype, type):
        name = str(dtype.name)              # a torch dtype or Keras dtype policy-like object
    else:
        try:
            name = np.dtype(dtype).name
        except TypeError:
            name = str(dtype).replace("torch.", "")
    if name not in _BOOL + _INTS + _FLOATS:
        raise ValueError(f"Invalid value for argument `dtype`: expected one of "
                         f"{list(_BOOL + _INTS + ('float16', 'float32', 'float64'))}. Received: dtype={dtype!r}")
    if name == "bfloat16":
        raise ValueError("Invalid value for argument `dtype`: minnet has no bfloat16 (NumPy has none). "
                         "Received: dtype='bfloat16'")
    return name


def _kind(value):
    """(lattice node, weak) of one value or dtype."""
    if isinstance(value, bool):
        return "bool", True
    if isinstance(value, int):
        return "int", True
    if isinstance(value, float):
        return "float", True
    if value is int:
        return "int", True
    if value is float:
        return "float", True
    if isinstance(value, Tensor):
        return value.dtype.name, False
    if isinstance(value, (np.ndarray, np.generic)):
        return value.dtype.name, False
    return standardize_dtype(value), False


def _promote_nodes(kinds):
    nodes = tuple(sorted({k for k, _ in kinds}))
    out = _least_upper_bound(*nodes) if len(nodes) > 1 else nodes[0]
    if out == "int":
        return "int32"
    if out == "float":
        return config.floatx()
    return out


def promote(*values):
    """The np.dtype Keras gives an op on these values (Tensors, arrays, Python numbers)."""
    if len(values) == 2 and isinstance(values[0], Tensor) and isinstance(values[1], Tensor) \
            and values[0].dtype == values[1].dtype:
        return values[0].dtype                       # the common case, without the lattice
    return np.dtype(_promote_nodes([_kind(v) for v in values if v is not None]))


def result_type(*dtypes):
    """Keras's ``result_type``: the dtype of an op on inputs of these dtypes, as a string.

    Python's ``int``/``float`` (the types, or numbers) count as weak types, as in Keras.
    Unlike ``keras.backend.result_type`` on its torch backend, 64-bit results stay 64-bit
    (they do in Keras's torch ops too).

    Example:
        >>> ops.result_type("int32", "float32"), ops.result_type("int8", int), ops.result_type("float16", float)
        ('float32', 'int8', 'float16')
    """
    if not dtypes:
        return config.floatx()
    return _promote_nodes([_kind(config.floatx() if d is None else d) for d in dtypes])


def is_float(dtype):
    return np.dtype(dtype).kind == "f"


def is_int(dtype):
    return np.dtype(dtype).kind in "iu"


def _python_array(value):
    """A Python number or (nested) list as an array with Keras's dtypes (int32, floatx, bool)."""
    arr = np.asarray(value)
    if arr.dtype.kind == "f":
        return arr.astype(config.floatx())
    if arr.dtype.kind in "iu":
        if arr.size and (arr.max() > 2**31 - 1 or arr.min() < -2**31):
            return arr.astype(np.int64)
        return arr.astype(np.int32)
    if arr.dtype.kind == "b":
        return arr
    raise TypeError(f"Expected numbers (bool, int or float). Received: {value!r}")


def convert(value, dtype=None):
    """``value`` as a Tensor (Tensors as they are, arrays shared, Python data with Keras's dtypes)."""
    if isinstance(value, Tensor):
        t = value
    elif isinstance(value, np.ndarray):
        t = Tensor(value if value.dtype.kind in "biuf" else _bad(value))
    elif isinstance(value, np.generic):
        t = Tensor(np.asarray(value))
    elif isinstance(value, (bool, int, float)):
        t = Tensor(_python_array(value))
    elif isinstance(value, (list, tuple)):
        if any(isinstance(v, Tensor) for v in _leaves(value)):
            items = [convert(v) for v in value]
            common = promote(*items)
            t = stack([cast_to(v, common) for v in items])
        else:
            t = Tensor(_python_array(value) if _all_python(value) else np.asarray(value))
    elif hasattr(value, "numpy") and hasattr(value, "detach"):     # a torch tensor
        t = Tensor(np.asarray(value.detach().cpu().numpy()))
    elif hasattr(value, "__array__"):
        t = Tensor(np.asarray(value))
    else:
        raise TypeError(f"Expected a tensor, an array or a number. Received: {type(value).__name__} {value!r}")
    if dtype is not None:
        dtype = np.dtype(standardize_dtype(dtype))
        if t.dtype != dtype:
            t = t.astype(dtype)
    return t


def _bad(value):
    raise TypeError(f"Expected numbers (bool, int or float). Received: an array of dtype {value.dtype}")


def _leaves(value):
    if isinstance(value, (list, tuple)):
        for v in value:
            yield from _leaves(v)
    else:
        yield value


def _all_python(value):
    return all(isinstance(v, (bool, int, float)) for v in _leaves(value))


def data_of(value):
    """The ndarray of a Tensor / array / number (no graph)."""
    return convert(value).data


def cast_to(t, dtype):
    """``t`` (a Tensor) in ``dtype``, differentiably; the same Tensor when it already is."""
    dtype = np.dtype(dtype)
    return t if t.dtype == dtype else t.astype(dtype)


def to_float(t, dtype=None):
    """Integer/bool tensors as floatx (Keras's rule for float-valued ops); floats unchanged."""
    if dtype is not None:
        return cast_to(t, standardize_dtype(dtype))
    return t if t.dtype.kind == "f" else t.astype(config.floatx())


def binary(x1, x2):
    """Both operands as Tensors of their promoted dtype (Keras's weak typing for numbers)."""
    if isinstance(x1, Tensor):
        if isinstance(x2, Tensor) and x1.dtype == x2.dtype:
            return x1, x2
        if type(x2) is float and x1.dtype.kind == "f":         # a weak float keeps the float dtype
            return x1, Tensor(np.asarray(x2, dtype=x1.dtype))
    dtype = promote(x1, x2)
    return _as(x1, dtype), _as(x2, dtype)


def _as(value, dtype):
    if isinstance(value, Tensor):
        return value if value.dtype == dtype else value.astype(dtype)
    return Tensor(np.asarray(value, dtype=dtype))


def wrap(array):
    """A result ndarray as a Tensor (no gradient)."""
    return Tensor(np.asarray(array))


def norm_axis(axis, ndim, name="axis"):
    """One axis as a non-negative int, checked."""
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"Invalid argument `{name}`: expected an int. Received: {name}={axis!r}")
    if not -max(ndim, 1) <= axis < max(ndim, 1):
        raise ValueError(f"Invalid argument `{name}`: expected an axis in [{-ndim}, {ndim}) for a "
                         f"tensor of rank {ndim}. Received: {name}={axis}")
    return int(axis) % max(ndim, 1)


def norm_axes(axis, ndim, name="axis"):
    """None, an int or a sequence of ints as a sorted tuple of axes (None stays None)."""
    if axis is None:
        return None
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    out = tuple(sorted({norm_axis(a, ndim, name) for a in axes}))
    if len(out) != len(axes):
        raise ValueError(f"Invalid argument `{name}`: an axis appears twice. Received: {name}={axis!r}")
    return out


def _converter(weak):
    if weak:
        def one(value):
            if value is None or isinstance(value, (Tensor, bool, int, float)):
                return value
            return convert(value)
    else:
        def one(value):
            if value is None or isinstance(value, Tensor):
                return value
            return convert(value)
    return one


def keras_op(*tensor_params, weak=False):
    """Decorate a public op: convert the named parameters to Tensors, then run the body.

    Args:
        *tensor_params: names of the parameters holding tensors; ``"[xs]"`` for a list of
            tensors, ``"*operands"`` for the variadic parameter.
        weak: keep Python numbers as they are (for ``promote``'s weak typing).
    """
    one = _converter(weak)

    def decorate(fn):
        names = list(inspect.signature(fn).parameters)
        plans = []                     # (position or None, name, kind) for each tensor parameter
        for spec in tensor_params:
            kind = "list" if spec.startswith("[") else "star" if spec.startswith("*") else "one"
            name = spec.strip("[]*")
            plans.append((names.index(name), name, kind))

        @functools.wraps(fn)
        def op(*args, **kwargs):
            # A symbolic tensor among the arguments (the functional API): record a graph node
            # that replays this public op (same conversion) on the real values.
            if any_symbolic(args, kwargs):
                return symbolic_call(op, args, kwargs)
            args = list(args)
            for position, name, kind in plans:
                if kind == "star":
                    args[position:] = [one(v) for v in args[position:]]
                elif position < len(args):
                    args[position] = _convert_as(args[position], kind, one)
                elif name in kwargs:
                    kwargs[name] = _convert_as(kwargs[name], kind, one)
            return fn(*args, **kwargs)

        op.keras_op = fn               # the unwrapped body (the symbolic path calls it too)
        return op

    return decorate


def _convert_as(value, kind, one):
    if kind == "list":
        if isinstance(value, (Tensor, np.ndarray)):
            return [one(v) for v in convert(value).unbind(0)]
        return [one(v) for v in value]
    return one(value)
