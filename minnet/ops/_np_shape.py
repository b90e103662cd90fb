"""``keras.ops`` shape, joining, splitting, indexing and creation ops.

Shape ops move values without changing them, so each is differentiable (reshape, transpose,
concatenate, take, pad, roll...). Creation ops return new constant tensors; default float
dtype is ``mn.config.floatx()`` and Python ints give int32, as Keras.
"""
import builtins

import numpy as np

from minnet import config
from minnet.autograd import Tensor, cat, stack as _stack, where as _where

from ._dispatch import cast_to, convert, keras_op, norm_axes, norm_axis, promote, standardize_dtype, wrap

__all__ = ["reshape", "transpose", "expand_dims", "squeeze", "concatenate", "stack", "split", "array_split",
           "hsplit", "vsplit", "dsplit", "hstack", "vstack", "dstack", "append", "moveaxis", "swapaxes", "ravel",
           "flip", "fliplr", "flipud", "roll", "rot90", "tile", "repeat", "broadcast_to", "pad", "take",
           "take_along_axis", "get_item", "tril", "triu", "diag", "diagonal", "diagflat", "trace", "ndim",
           "size", "select", "unravel_index", "view", "isin",
           "zeros", "ones", "full", "empty", "zeros_like", "ones_like", "full_like", "empty_like", "eye",
           "identity", "tri", "arange", "linspace", "logspace", "geomspace", "array", "meshgrid", "vander",
           "bartlett", "blackman", "hamming", "hanning", "kaiser"]


def _shape_arg(newshape):
    if isinstance(newshape, (int, np.integer)):
        return (int(newshape),)
    return tuple(-1 if s is None else int(s) for s in newshape)


@keras_op("x")
def reshape(x, newshape):
    return x.reshape(*_shape_arg(newshape))


@keras_op("x")
def transpose(x, axes=None):
    axes = tuple(range(x.ndim))[::-1] if axes is None else tuple(norm_axis(a, x.ndim) for a in axes)
    return x.permute(*axes) if x.ndim > 1 else x


@keras_op("x")
def expand_dims(x, axis):
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    out_ndim = x.ndim + len(axes)
    axes = sorted(norm_axis(a, out_ndim) for a in axes)
    out = x
    for a in axes:
        out = out.unsqueeze(a)
    return out


@keras_op("x")
def squeeze(x, axis=None):
    if axis is None:
        return x.reshape(*[s for s in x.shape if s != 1])
    axes = norm_axes(axis, x.ndim)
    for a in axes:
        if x.shape[a] != 1:
            raise ValueError(f"Invalid argument `axis`: cannot squeeze axis {a} of size {x.shape[a]} "
                             f"(shape {x.shape}). Received: axis={axis}")
    return x.reshape(*[s for d, s in enumerate(x.shape) if d not in axes])


def _common(xs):
    dtype = promote(*xs)
    return [cast_to(t, dtype) for t in xs]


@keras_op("[xs]")
def concatenate(xs, axis=0):
    xs = _common(xs)
    if axis is None:
        return cat([t.reshape(-1) for t in xs], 0)
    return cat(xs, norm_axis(axis, xs[0].ndim))


@keras_op("[x]")
def stack(x, axis=0):
    x = _common(x)
    return _stack(x, norm_axis(axis, x[0].ndim + 1))


def _split_points(n, indices_or_sections, even):
    if isinstance(indices_or_sections, (int, np.integer)):
        sections = int(indices_or_sections)
        if sections <= 0:
            raise ValueError(f"Invalid argument `indices_or_sections`: expected a positive int. "
                             f"Received: {indices_or_sections}")
        if even and n % sections:
            raise ValueError(f"Invalid argument `indices_or_sections`: {sections} does not divide the "
                             f"axis size {n} evenly (use array_split).")
        base, extra = divmod(n, sections)
        sizes = [base + (1 if i < extra else 0) for i in range(sections)]
        return list(np.cumsum(sizes)[:-1])
    return [int(i) for i in indices_or_sections]


def _split(x, indices_or_sections, axis, even):
    axis = norm_axis(axis, x.ndim)
    points = [0] + _split_points(x.shape[axis], indices_or_sections, even) + [x.shape[axis]]
    lead = (builtins.slice(None),) * axis
    return [x[lead + (builtins.slice(a, builtins.max(a, b)),)] for a, b in zip(points[:-1], points[1:])]


@keras_op("x")
def split(x, indices_or_sections, axis=0):
    """A list of pieces: ``indices_or_sections`` an int (equal parts) or split points."""
    return _split(x, indices_or_sections, axis, True)


@keras_op("x")
def array_split(x, indices_or_sections, axis=0):
    return _split(x, indices_or_sections, axis, False)


@keras_op("x")
def hsplit(x, indices_or_sections):
    return _split(x, indices_or_sections, 1 if x.ndim > 1 else 0, True)


@keras_op("x")
def vsplit(x, indices_or_sections):
    return _split(x, indices_or_sections, 0, True)


@keras_op("x")
def dsplit(x, indices_or_sections):
    return _split(x, indices_or_sections, 2, True)


def _at_least(t, n):
    if t.ndim >= n:
        return t
    if n == 2:
        return t.reshape(1, -1) if t.ndim == 1 else t.reshape(1, 1)
    shape = {0: (1, 1, 1), 1: (1, -1, 1), 2: (*t.shape, 1)}[t.ndim]
    return t.reshape(*shape)


@keras_op("[xs]")
def hstack(xs):
    xs = _common(xs)
    return cat(xs, 0 if xs[0].ndim == 1 else 1)


@keras_op("[xs]")
def vstack(xs):
    return cat([_at_least(t, 2) for t in _common(xs)], 0)


@keras_op("[xs]")
def dstack(xs):
    return cat([_at_least(t, 3) for t in _common(xs)], 2)


@keras_op("x1", "x2")
def append(x1, x2, axis=None):
    a, b = _common([x1, x2])
    if axis is None:
        return cat([a.reshape(-1), b.reshape(-1)], 0)
    return cat([a, b], norm_axis(axis, a.ndim))


@keras_op("x")
def moveaxis(x, source, destination):
    src = [norm_axis(a, x.ndim) for a in ((source,) if isinstance(source, int) else source)]
    dst = [norm_axis(a, x.ndim) for a in ((destination,) if isinstance(destination, int) else destination)]
    order = [d for d in range(x.ndim) if d not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return x.permute(*order) if x.ndim > 1 else x


@keras_op("x")
def swapaxes(x, axis1, axis2):
    order = list(range(x.ndim))
    a, b = norm_axis(axis1, x.ndim), norm_axis(axis2, x.ndim)
    order[a], order[b] = order[b], order[a]
    return x.permute(*order) if x.ndim > 1 else x


@keras_op("x")
def ravel(x):
    return x.reshape(-1)


@keras_op("x")
def flip(x, axis=None):
    axes = tuple(range(x.ndim)) if axis is None else norm_axes(axis, x.ndim)
    return x.flip(*axes) if axes else x


@keras_op("x")
def fliplr(x):
    return x.flip(1)


@keras_op("x")
def flipud(x):
    return x.flip(0)


def _index_along(x, axis, index):
    return x.index_select(axis, Tensor(np.asarray(index, dtype=np.int64)))


@keras_op("x")
def roll(x, shift, axis=None):
    """Entries shifted by ``shift`` along ``axis`` (None: the flattened tensor), wrapping around."""
    if axis is None:
        flat = x.reshape(-1)
        return _index_along(flat, 0, (np.arange(flat.shape[0]) - int(shift)) % builtins.max(flat.shape[0], 1)
                            ).reshape(*x.shape)
    shifts = (shift,) if isinstance(shift, (int, np.integer)) else tuple(shift)
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    out = x
    for s, a in zip(shifts, axes):
        a = norm_axis(a, x.ndim)
        n = x.shape[a]
        out = _index_along(out, a, (np.arange(n) - int(s)) % builtins.max(n, 1))
    return out


@keras_op("array")
def rot90(array, k=1, axes=(0, 1)):
    if array.ndim < 2:
        raise ValueError(f"Invalid argument `array`: expected at least 2 dimensions. Received: ndim={array.ndim}")
    a, b = (norm_axis(v, array.ndim) for v in axes)
    if a == b:
        raise ValueError(f"Invalid argument `axes`: expected two different axes. Received: axes={axes}")
    k = int(k) % 4
    out = array
    for _ in range(k):
        out = swapaxes(out.flip(b), a, b)
    return out


@keras_op("x")
def tile(x, repeats):
    reps = (repeats,) if isinstance(repeats, (int, np.integer)) else tuple(int(r) for r in repeats)
    ndim = builtins.max(x.ndim, len(reps))
    reps = (1,) * (ndim - len(reps)) + tuple(reps)
    x = x.reshape(*((1,) * (ndim - x.ndim) + tuple(x.shape)))
    return x.repeat(*reps)


@keras_op("x")
def repeat(x, repeats, axis=None):
    """Each entry repeated ``repeats`` times along ``axis`` (None: flattened first)."""
    if axis is None:
        x, axis = x.reshape(-1), 0
    axis = norm_axis(axis, x.ndim)
    counts = repeats.data if isinstance(repeats, Tensor) else repeats
    index = np.repeat(np.arange(x.shape[axis]), counts)
    return _index_along(x, axis, index)


@keras_op("x")
def broadcast_to(x, shape):
    shape = tuple(int(s) for s in shape)
    if x.ndim > len(shape):
        raise ValueError(f"Invalid argument `shape`: cannot broadcast shape {x.shape} to {shape}.")
    x = x.reshape(*((1,) * (len(shape) - x.ndim) + tuple(x.shape)))
    np.broadcast_shapes(x.shape, shape)
    return x.expand(*shape)


_PAD_MODES = ("constant", "edge", "linear_ramp", "maximum", "mean", "median", "minimum", "reflect",
              "symmetric", "wrap", "empty")


@keras_op("x")
def pad(x, pad_width, mode="constant", constant_values=None):
    """Pad each axis by ``pad_width`` (``((before, after), ...)``, ``(before, after)`` or an int).

    Modes "constant", "edge", "reflect", "symmetric" and "wrap" are differentiable (the
    padding is an index gather); Keras's torch backend supports constant, reflect, symmetric.
    """
    if mode not in _PAD_MODES:
        raise ValueError(f"Invalid argument `mode`: expected one of {_PAD_MODES}. Received: mode={mode!r}")
    widths = np.broadcast_to(np.asarray(pad_width, dtype=np.int64).reshape(-1, 2) if np.ndim(pad_width)
                             else np.full((1, 2), int(pad_width)), (x.ndim, 2)) if x.ndim else np.zeros((0, 2), int)
    if constant_values is not None and mode != "constant":
        raise ValueError(f"Invalid argument `constant_values`: only for mode='constant'. Received: mode={mode!r}")
    out = x
    for axis, (before, after) in enumerate(widths):
        before, after = int(before), int(after)
        if before < 0 or after < 0:
            raise ValueError(f"Invalid argument `pad_width`: expected non-negative widths. Received: {pad_width}")
        if before == after == 0:
            continue
        if mode == "constant":
            value = 0 if constant_values is None else constant_values
            parts = []
            for width in (before, after):
                shape = list(out.shape)
                shape[axis] = width
                parts.append(Tensor(np.full(shape, value, dtype=out.dtype)))
            out = cat([parts[0], out, parts[1]], axis)
        elif mode in ("edge", "reflect", "symmetric", "wrap"):
            index = np.pad(np.arange(out.shape[axis]), (before, after), mode=mode)
            out = _index_along(out, axis, index)
        else:
            return wrap(np.pad(x.data, widths, mode=mode))
    return out


@keras_op("x", "indices")
def take(x, indices, axis=None):
    """``x`` indexed by ``indices`` along ``axis`` (None: the flattened tensor); negative
    indices count from the end. Differentiable in ``x``."""
    if axis is None:
        x, axis = x.reshape(-1), 0
    axis = norm_axis(axis, x.ndim)
    idx = indices.data.astype(np.int64)
    idx = np.where(idx < 0, idx + x.shape[axis], idx)
    out = x.index_select(axis, Tensor(idx.reshape(-1)))
    return out.reshape(*x.shape[:axis], *idx.shape, *x.shape[axis + 1:])


@keras_op("x", "indices")
def take_along_axis(x, indices, axis=None):
    if axis is None:
        x, axis = x.reshape(-1), 0
    axis = norm_axis(axis, x.ndim)
    idx = indices.data.astype(np.int64)
    idx = np.where(idx < 0, idx + x.shape[axis], idx)
    shape = np.broadcast_shapes(tuple(s if d != axis else 1 for d, s in enumerate(x.shape)),
                                tuple(s if d != axis else 1 for d, s in enumerate(idx.shape)))
    x_shape = tuple(shape[d] if d != axis else x.shape[axis] for d in range(x.ndim))
    i_shape = tuple(shape[d] if d != axis else idx.shape[axis] for d in range(x.ndim))
    if tuple(x.shape) != x_shape:
        x = x.expand(*x_shape)
    return x.gather(axis, Tensor(np.ascontiguousarray(np.broadcast_to(idx, i_shape))))


@keras_op("x")
def get_item(x, key):
    if isinstance(key, Tensor):
        key = key.data
    return x[key]


@keras_op("x")
def tril(x, k=0):
    mask = np.tril(np.ones(x.shape[-2:], dtype=bool), int(k))
    return x * Tensor(mask.astype(x.dtype)) if x.dtype.kind == "f" else wrap(np.where(mask, x.data, np.zeros((), x.dtype)))


@keras_op("x")
def triu(x, k=0):
    mask = np.triu(np.ones(x.shape[-2:], dtype=bool), int(k))
    return x * Tensor(mask.astype(x.dtype)) if x.dtype.kind == "f" else wrap(np.where(mask, x.data, np.zeros((), x.dtype)))


@keras_op("x")
def diagonal(x, offset=0, axis1=0, axis2=1):
    """The diagonal(s) of ``x`` over ``axis1``/``axis2``, appended as the last axis."""
    a, b = norm_axis(axis1, x.ndim), norm_axis(axis2, x.ndim)
    rest = [d for d in range(x.ndim) if d not in (a, b)]
    moved = x.permute(*rest, a, b)
    n, m = moved.shape[-2], moved.shape[-1]
    rows = np.arange(builtins.max(-offset, 0), n)
    cols = rows + offset
    keep = (cols >= 0) & (cols < m)
    rows, cols = rows[keep], cols[keep]
    lead = (builtins.slice(None),) * len(rest)
    return moved[lead + (rows, cols)]


@keras_op("x")
def diag(x, k=0):
    if x.ndim == 1:
        return diagflat(x, k)
    if x.ndim != 2:
        raise ValueError(f"Invalid argument `x`: expected a 1-D or 2-D tensor. Received: ndim={x.ndim}")
    return diagonal(x, k, 0, 1)


@keras_op("x")
def diagflat(x, k=0):
    flat = x.reshape(-1)
    n = flat.shape[0] + builtins.abs(int(k))
    rows = np.arange(flat.shape[0]) + builtins.max(-int(k), 0)
    cols = np.arange(flat.shape[0]) + builtins.max(int(k), 0)
    onehot = np.zeros((n * n, flat.shape[0]), dtype=x.dtype if x.dtype.kind == "f" else np.float64)
    onehot[rows * n + cols, np.arange(flat.shape[0])] = 1
    if x.dtype.kind != "f":
        out = np.zeros((n, n), dtype=x.dtype)
        out[rows, cols] = flat.data
        return wrap(out)
    return (Tensor(onehot) @ flat).reshape(n, n)


@keras_op("x")
def trace(x, offset=0, axis1=0, axis2=1):
    d = diagonal(x, offset, axis1, axis2)
    if d.dtype.kind != "f":
        return wrap(d.data.sum(-1, dtype=np.int32 if d.dtype.itemsize < 4 or d.dtype == bool else d.dtype))
    return d.sum(axis=-1)


def ndim(x):
    return convert(x).ndim if not hasattr(x, "ndim") else x.ndim


def size(x):
    return int(np.prod(convert(x).shape if not hasattr(x, "shape") else x.shape, dtype=np.int64))


@keras_op("[condlist]", "[choicelist]", "default", weak=True)
def select(condlist, choicelist, default=0):
    """The first ``choicelist[i]`` whose ``condlist[i]`` holds, else ``default`` (differentiable)."""
    if len(condlist) != len(choicelist):
        raise ValueError(f"Invalid arguments: `condlist` and `choicelist` must have the same length. "
                         f"Received: {len(condlist)} and {len(choicelist)}")
    choices = [convert(c) for c in choicelist]
    dtype = promote(*choices, default)
    out = Tensor(np.asarray(default, dtype=dtype))
    for cond, choice in zip(reversed(condlist), reversed(choices)):
        out = _where(Tensor(convert(cond).data.astype(bool)), cast_to(choice, dtype), out)
    return out


@keras_op("indices")
def unravel_index(indices, shape):
    return tuple(wrap(i.astype(np.int32)) for i in np.unravel_index(indices.data, tuple(shape)))


@keras_op("x")
def view(x, dtype=None):
    if dtype is None:
        return x
    return wrap(x.data.view(np.dtype(standardize_dtype(dtype))))


@keras_op("x1", "x2")
def isin(x1, x2, assume_unique=False, invert=False):
    return wrap(np.isin(x1.data, x2.data, assume_unique=assume_unique, invert=invert))


# ----------------------------------------------------------------------------- creation


def _dtype(dtype, default=None):
    return np.dtype(standardize_dtype(dtype if dtype is not None else (default or config.floatx())))


def _shape(shape):
    return (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)


def zeros(shape, dtype=None):
    return wrap(np.zeros(_shape(shape), _dtype(dtype)))


def ones(shape, dtype=None):
    return wrap(np.ones(_shape(shape), _dtype(dtype)))


def empty(shape, dtype=None):
    """As ``zeros`` (minnet never hands out uninitialised memory)."""
    return zeros(shape, dtype)


def _fill_dtype(fill_value, dtype):
    return _dtype(dtype)          # Keras: floatx unless `dtype` says otherwise


@keras_op("fill_value", weak=True)
def full(shape, fill_value, dtype=None):
    value = fill_value.data if isinstance(fill_value, Tensor) else np.asarray(fill_value)
    return wrap(np.full(_shape(shape), value, _fill_dtype(fill_value, dtype)))


@keras_op("x")
def zeros_like(x, dtype=None):
    return wrap(np.zeros(x.shape, _dtype(dtype, x.dtype)))


@keras_op("x")
def ones_like(x, dtype=None):
    return wrap(np.ones(x.shape, _dtype(dtype, x.dtype)))


@keras_op("x")
def empty_like(x, dtype=None):
    return zeros_like(x, dtype)


@keras_op("x")
def full_like(x, fill_value, dtype=None):
    value = fill_value.data if isinstance(fill_value, Tensor) else fill_value
    return wrap(np.full(x.shape, value, _dtype(dtype, x.dtype)))


def eye(N, M=None, k=0, dtype=None):
    return wrap(np.eye(int(N), None if M is None else int(M), int(k), dtype=_dtype(dtype)))


def identity(n, dtype=None):
    return eye(n, dtype=dtype)


def tri(N, M=None, k=0, dtype=None):
    return wrap(np.tri(int(N), None if M is None else int(M), int(k), dtype=_dtype(dtype)))


def arange(start, stop=None, step=None, dtype=None):
    """Values from ``start`` to ``stop`` (excluded) by ``step``: int32 for Python ints, else floatx."""
    if stop is None:
        start, stop = 0, start
    step = 1 if step is None else step
    if step == 0:
        raise ValueError("Invalid argument `step`: expected a nonzero number. Received: step=0")
    if dtype is None:
        dtype = promote(*(v for v in (start, stop, step)))
        if all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in (start, stop, step)):
            dtype = np.dtype(np.int32)
    return wrap(np.arange(start, stop, step).astype(_dtype(dtype)))


@keras_op("start", "stop", weak=True)
def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    start_v = start.data if isinstance(start, Tensor) else np.asarray(start)
    stop_v = stop.data if isinstance(stop, Tensor) else np.asarray(stop)
    values, step = np.linspace(start_v, stop_v, int(num), endpoint=endpoint, retstep=True, axis=axis)
    out = wrap(values.astype(_dtype(dtype)))
    return (out, wrap(np.asarray(step, _dtype(dtype)))) if retstep else out


def logspace(start, stop, num=50, endpoint=True, base=10, dtype=None, axis=0):
    return wrap(np.logspace(start, stop, int(num), endpoint=endpoint, base=base, axis=axis).astype(_dtype(dtype)))


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    return wrap(np.geomspace(start, stop, int(num), endpoint=endpoint, axis=axis).astype(_dtype(dtype)))


@keras_op("x")
def array(x, dtype=None):
    return convert(x, dtype)


@keras_op("*x")
def meshgrid(*x, indexing="xy"):
    if indexing not in ("xy", "ij"):
        raise ValueError(f"Invalid argument `indexing`: expected 'xy' or 'ij'. Received: indexing={indexing!r}")
    xs = [convert(v).reshape(-1) for v in x]
    n = len(xs)
    sizes = [t.shape[0] for t in xs]
    if indexing == "xy" and n >= 2:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    out = []
    for i, t in enumerate(xs):
        shape = [1] * n
        place = i
        if indexing == "xy" and n >= 2 and i < 2:
            place = 1 - i
        shape[place] = t.shape[0]
        out.append(t.reshape(*shape).expand(*sizes))
    return out


@keras_op("x")
def vander(x, N=None, increasing=False):
    n = x.shape[0] if N is None else int(N)
    powers = np.arange(n) if increasing else np.arange(n)[::-1]
    if x.dtype.kind != "f":
        return wrap(np.vander(x.data, n, increasing))
    cols = [x ** float(p) if p else Tensor(np.ones(x.shape, x.dtype)) for p in powers]
    return _stack(cols, 1)


def _window(fn, x, *args):
    return wrap(fn(int(convert(x).data), *args).astype(config.floatx()))


def bartlett(x):
    return _window(np.bartlett, x)


def blackman(x):
    return _window(np.blackman, x)


def hamming(x):
    return _window(np.hamming, x)


def hanning(x):
    return _window(np.hanning, x)


def kaiser(x, beta):
    return _window(np.kaiser, x, beta)
