"""``keras.ops.core``: conversion, casting, shapes, control flow and scatter/slice updates.

Control flow (``cond``, ``while_loop``, ``fori_loop``, ``scan``, ``map``, ``switch``,
``associative_scan``, ``vectorized_map``) runs eagerly in Python, as Keras's torch backend
does, so gradients flow through every step that ran.
"""
import builtins

import numpy as np

from minnet.autograd import Function, Tensor, no_grad, stack as _stack_tensors

from ._dispatch import cast_to, convert, keras_op, norm_axis, standardize_dtype, wrap

__all__ = ["convert_to_tensor", "convert_to_numpy", "cast", "saturate_cast", "shape", "dtype",
           "is_tensor", "stop_gradient", "cond", "while_loop", "fori_loop", "scan", "associative_scan",
           "map", "switch", "slice", "slice_update", "scatter", "scatter_update", "unstack",
           "vectorized_map", "custom_gradient"]


def convert_to_tensor(x, dtype=None, sparse=None, ragged=None):
    """``x`` (array, Tensor, number, nested list) as an ``mn.Tensor``, optionally cast.

    Python ints become int32 and Python floats floatx (Keras's dtypes); NumPy arrays keep
    theirs and share memory. ``sparse``/``ragged`` must be None or False (minnet is dense).
    """
    for name, value in (("sparse", sparse), ("ragged", ragged)):
        if value:
            raise ValueError(f"Invalid argument `{name}`: minnet has dense tensors only. "
                             f"Received: {name}={value!r}")
    return convert(x, dtype)


def convert_to_numpy(x):
    """The values of ``x`` as a NumPy array (no graph)."""
    if isinstance(x, Tensor):
        return x.data
    if isinstance(x, (list, tuple)) and any(isinstance(v, Tensor) for v in x):
        return np.asarray([convert_to_numpy(v) for v in x])
    return np.asarray(x)


@keras_op("x")
def cast(x, dtype):
    """``x`` in ``dtype`` (gradients flow back between float dtypes)."""
    dtype = np.dtype(standardize_dtype(dtype))
    if x.dtype == dtype:
        return x
    if dtype.kind == "f" or x.dtype.kind != "f":
        return x.astype(dtype)
    return wrap(x.data.astype(dtype))          # float -> int/bool: no gradient (as Keras)


@keras_op("x")
def saturate_cast(x, dtype):
    """Cast, clipping first to the range of ``dtype`` (no wrap-around)."""
    dtype = np.dtype(standardize_dtype(dtype))
    info = np.iinfo(dtype) if dtype.kind in "iu" else np.finfo(dtype) if dtype.kind == "f" else None
    if info is None:
        return cast(x, dtype)
    data = x.data
    if dtype.kind in "iu" and data.dtype.kind == "f":
        data = np.nan_to_num(data, nan=0.0)
    if np.dtype(data.dtype).kind == "b":
        return wrap(data.astype(dtype))
    lo, hi = max(info.min, _min_of(data.dtype)), min(info.max, _max_of(data.dtype))
    if x.dtype.kind == "f" and dtype.kind == "f":
        return x.clip(float(lo), float(hi)).astype(dtype)
    return wrap(np.clip(data, lo, hi).astype(dtype))


def _min_of(dtype):
    dtype = np.dtype(dtype)
    return np.iinfo(dtype).min if dtype.kind in "iu" else -np.inf


def _max_of(dtype):
    dtype = np.dtype(dtype)
    return np.iinfo(dtype).max if dtype.kind in "iu" else np.inf


def shape(x):
    """The shape of ``x`` as a tuple of ints (a symbolic tensor's may hold None)."""
    if isinstance(x, Tensor):
        return tuple(x.shape)
    if hasattr(x, "shape") and not isinstance(x, (list, tuple)):
        return tuple(x.shape)
    return tuple(np.shape(x))


def dtype(x):
    """The dtype of ``x`` as Keras's string (``"float32"``, ``"int32"``...)."""
    if isinstance(x, Tensor):
        return x.dtype.name
    if hasattr(x, "dtype"):
        return standardize_dtype(x.dtype)
    return convert(x).dtype.name


def is_tensor(x):
    """True for an ``mn.Tensor`` (NumPy arrays are not tensors, as in Keras)."""
    return isinstance(x, Tensor)


@keras_op("variable")
def stop_gradient(variable):
    """The same values, cut from the graph (no gradient flows through)."""
    return variable.detach()


def cond(pred, true_fn, false_fn):
    """``true_fn()`` if ``pred`` else ``false_fn()`` (``pred`` a bool or a scalar tensor)."""
    return true_fn() if bool(_scalar(pred, "pred")) else false_fn()


def _scalar(value, name):
    if isinstance(value, Tensor):
        if value.data.size != 1:
            raise ValueError(f"Invalid argument `{name}`: expected a scalar. Received: shape {value.shape}")
        return value.data.reshape(()).item()
    if isinstance(value, np.ndarray):
        return value.reshape(()).item()
    return value


def while_loop(cond, body, loop_vars, maximum_iterations=None):
    """Run ``loop_vars = body(*loop_vars)`` while ``cond(*loop_vars)``; returns the final loop
    vars as a tuple (a single, non-sequence loop var comes back alone), as Keras."""
    if maximum_iterations is not None and (isinstance(maximum_iterations, bool)
                                           or int(maximum_iterations) < 0):
        raise ValueError(f"Invalid argument `maximum_iterations`: expected a non-negative int. "
                         f"Received: maximum_iterations={maximum_iterations!r}")
    single = not isinstance(loop_vars, (list, tuple))
    state = (loop_vars,) if single else tuple(loop_vars)
    done = 0
    while bool(_scalar(cond(*state), "cond")):
        if maximum_iterations is not None and done >= int(maximum_iterations):
            break
        out = body(*state)
        state = (out,) if single else tuple(out) if isinstance(out, (list, tuple)) else (out,)
        done += 1
    return state[0] if single else state        # a tuple, as Keras returns for a list too


def fori_loop(lower, upper, body_fun, init_val):
    """``val = body_fun(i, val)`` for ``i`` in ``range(lower, upper)``."""
    val = init_val
    for i in range(int(_scalar(lower, "lower")), int(_scalar(upper, "upper"))):
        val = body_fun(i, val)
    return val


def _tree_leaves(tree):
    if isinstance(tree, dict):
        return [v for k in sorted(tree) for v in _tree_leaves(tree[k])]
    if isinstance(tree, (list, tuple)):
        return [v for item in tree for v in _tree_leaves(item)]
    return [tree]


def _tree_pack(tree, leaves):
    iterator = iter(leaves)

    def pack(item):
        if isinstance(item, dict):
            return {k: pack(item[k]) for k in sorted(item)}
        if isinstance(item, (list, tuple)):
            packed = [pack(v) for v in item]
            return tuple(packed) if isinstance(item, tuple) else packed
        return next(iterator)

    return pack(tree)


def _tree_index(tree, i):
    return _tree_pack(tree, [convert(leaf)[i] for leaf in _tree_leaves(tree)])


def _tree_stack(items):
    if not items:
        return []
    first = items[0]
    columns = zip(*(_tree_leaves(item) for item in items))
    return _tree_pack(first, [_stack_tensors([convert(v) for v in column]) for column in columns])


def _length(xs, length):
    leaves = [convert(leaf) for leaf in _tree_leaves(xs)] if xs is not None else []
    if leaves:
        return leaves[0].shape[0]
    if length is None:
        raise ValueError("Invalid arguments: give `xs` or `length`. Received: xs=None, length=None")
    return int(length)


def scan(f, init, xs=None, length=None, reverse=False, unroll=1):
    """``carry, y = f(carry, x)`` over the leading axis of ``xs``; returns ``(carry, stacked ys)``."""
    n = _length(xs, length)
    carry, ys = init, [None] * n
    for i in (range(n - 1, -1, -1) if reverse else range(n)):
        carry, ys[i] = f(carry, None if xs is None else _tree_index(xs, i))
    if n == 0 or ys[0] is None:
        return carry, None
    return carry, _tree_stack(ys)


def associative_scan(f, elems, reverse=False, axis=0):
    """Inclusive scan of the associative ``f`` along ``axis`` (a sequential loop, same result)."""
    leaves = [convert(leaf) for leaf in _tree_leaves(elems)]
    axis = norm_axis(axis, leaves[0].ndim)
    moved = [leaf.permute(*_to_front(leaf.ndim, axis)) for leaf in leaves]
    n = moved[0].shape[0]
    order = range(n - 1, -1, -1) if reverse else range(n)
    outs, acc = [None] * n, None
    for i in order:
        current = _tree_pack(elems, [m[i] for m in moved])
        acc = current if acc is None else f(acc, current)
        outs[i] = acc
    stacked = [_stack_tensors([convert(v) for v in column]) for column in zip(*(_tree_leaves(o) for o in outs))]
    back = [s.permute(*np.argsort(_to_front(s.ndim, axis))) for s in stacked]
    return _tree_pack(elems, back)


def _to_front(ndim, axis):
    return [axis] + [d for d in range(ndim) if d != axis]


def map(f, xs):
    """``stack([f(x) for x in xs])`` over the leading axis (structures allowed)."""
    n = _length(xs, None)
    return _tree_stack([f(_tree_index(xs, i)) for i in range(n)])


def vectorized_map(function, elements):
    """As ``map``: ``function`` applied to each slice along axis 0, results stacked."""
    return map(function, elements)


def switch(index, branches, *operands):
    """``branches[index](*operands)``, ``index`` clamped to the valid range (as Keras)."""
    i = int(np.clip(int(_scalar(index, "index")), 0, len(branches) - 1))
    return branches[i](*operands)


def _starts(start_indices, name="start_indices"):
    if isinstance(start_indices, Tensor):
        return [int(v) for v in start_indices.data.reshape(-1)]
    return [int(_scalar(v, name)) for v in start_indices]


@keras_op("inputs")
def slice(inputs, start_indices, shape):
    """``inputs[start:start + shape]`` per axis (``shape`` entries of -1: to the end)."""
    starts = _starts(start_indices)
    if len(starts) != inputs.ndim or len(shape) != inputs.ndim:
        raise ValueError(f"Invalid arguments `start_indices`/`shape`: expected {inputs.ndim} entries each "
                         f"(the rank of `inputs`). Received: start_indices={start_indices}, shape={shape}")
    key = tuple(builtins.slice(s, None if int(n) == -1 else s + int(n)) for s, n in zip(starts, shape))
    return inputs[key]


@keras_op("inputs", "updates")
def slice_update(inputs, start_indices, updates):
    """A copy of ``inputs`` with ``updates`` written at ``start_indices`` (differentiable in both)."""
    starts = _starts(start_indices)
    if len(starts) != inputs.ndim or updates.ndim != inputs.ndim:
        raise ValueError(f"Invalid arguments: `start_indices` and `updates` must have the rank of `inputs` "
                         f"({inputs.ndim}). Received: start_indices={start_indices}, updates.shape={updates.shape}")
    key = tuple(builtins.slice(s, s + n) for s, n in zip(starts, updates.shape))
    return _Overwrite.apply(inputs, cast_to(updates, inputs.dtype), key=key)


class _Overwrite(Function):
    """``out = x; out[key] = u`` (``key`` basic or integer-array indexing, no duplicates);
    backward: ``dx = g`` with ``g[key] = 0``, ``du = g[key]``."""

    @staticmethod
    def forward(ctx, x, u, key=None):
        ctx.key = key
        out = np.array(x, copy=True)
        out[key] = u
        return out

    @staticmethod
    def backward(ctx, g):
        gx = np.array(g, copy=True)
        gx[ctx.key] = 0
        return gx, g[ctx.key]


class _ScatterAdd(Function):
    """``out = x; out[key] += u`` (duplicates accumulate, ``np.add.at``); backward: ``dx = g``,
    ``du = g[key]``."""

    @staticmethod
    def forward(ctx, x, u, key=None):
        ctx.key = key
        out = np.array(x, copy=True)
        np.add.at(out, key, u)
        return out

    @staticmethod
    def backward(ctx, g):
        return g, g[ctx.key]


def _index_key(indices, ndim_target):
    idx = np.asarray(indices.data if isinstance(indices, Tensor) else indices)
    if idx.dtype.kind not in "iu":
        idx = idx.astype(np.int64)
    if idx.ndim == 1:
        idx = idx[:, None] if ndim_target > 1 and idx.shape[0] != ndim_target else idx[None, :]
    depth = idx.shape[-1]
    if depth > ndim_target:
        raise ValueError(f"Invalid argument `indices`: its last axis ({depth}) is longer than the rank "
                         f"of the target ({ndim_target}).")
    flat = idx.reshape(-1, depth)
    return tuple(flat[:, j] for j in range(depth)), idx.shape[:-1]


@keras_op("values")
def scatter(indices, values, shape):
    """A zeros tensor of ``shape`` with ``values`` added at ``indices`` (duplicates summed)."""
    shape = tuple(int(s) for s in shape)
    key, lead = _index_key(indices, len(shape))
    target = Tensor(np.zeros(shape, dtype=values.dtype))
    updates = values.reshape(-1, *shape[len(key):])
    return _ScatterAdd.apply(target, updates, key=key)


@keras_op("inputs", "updates")
def scatter_update(inputs, indices, updates, reduction=None):
    """``inputs`` with ``updates`` written at ``indices`` (``reduction``: None, "add", "max",
    "min" or "mul"; None overwrites)."""
    key, lead = _index_key(indices, inputs.ndim)
    updates = cast_to(updates, inputs.dtype).reshape(-1, *inputs.shape[len(key):])
    if reduction is None:
        return _Overwrite.apply(inputs, updates, key=key)
    if reduction == "add":
        return _ScatterAdd.apply(inputs, updates, key=key)
    ufunc = {"max": np.maximum, "min": np.minimum, "mul": np.multiply}.get(reduction)
    if ufunc is None:
        raise ValueError(f"Invalid argument `reduction`: expected None, 'add', 'max', 'min' or 'mul'. "
                         f"Received: reduction={reduction!r}")
    out = np.array(inputs.data, copy=True)
    ufunc.at(out, key, updates.data)
    return wrap(out)


@keras_op("x")
def unstack(x, num=None, axis=0):
    """The slices of ``x`` along ``axis``, as a list."""
    axis = norm_axis(axis, x.ndim)
    if num is not None and int(num) != x.shape[axis]:
        raise ValueError(f"Invalid argument `num`: expected {x.shape[axis]} (the size of axis {axis}). "
                         f"Received: num={num}")
    return list(x.unbind(axis))


def custom_gradient(f):
    """Decorator: ``f(*args)`` returns ``(y, grad_fn)``; backward calls ``grad_fn(*upstream)``
    (Keras's torch form; ``grad_fn`` may also accept ``upstream=`` as a keyword) and uses
    its result as the gradients of ``args``."""

    def wrapped(*args):
        tensors = [convert(a) for a in args]
        return _CustomGradient.apply(*tensors, fn=f)

    return wrapped


class _CustomGradient(Function):
    @staticmethod
    def forward(ctx, *arrays, fn=None):
        with no_grad():
            out, grad_fn = fn(*[Tensor(a) for a in arrays])
        ctx.grad_fn = grad_fn
        ctx.n = len(arrays)
        return convert(out).data

    @staticmethod
    def backward(ctx, g):
        with no_grad():
            try:
                grads = ctx.grad_fn(Tensor(g))
            except TypeError:
                grads = ctx.grad_fn(upstream=Tensor(g))
        if not isinstance(grads, (list, tuple)):
            grads = (grads,)
        out = tuple(None if v is None else convert(v).data for v in grads)
        return out if ctx.n > 1 else out[0]
