"""``keras.ops`` reductions (sum, mean, max, var, median, quantile, the nan- variants...),
cumulative ops, and sorting/searching (sort, argsort, top_k, searchsorted, unique...).

``axis`` is None (all axes), an int or a tuple, ``keepdims`` keeps reduced axes as size 1,
as in NumPy. Reductions are differentiable where their value is (sum, mean, max/min with
ties sharing the gradient, prod, var/std, median/quantile through the selected elements);
arg-reductions, counts and sorting indices are constant.
"""
import builtins

import numpy as np

from minnet.autograd import Tensor, cat, where as _where
from minnet.autograd.reduction_ops import CumSum

from ._dispatch import cast_to, keras_op, norm_axes, norm_axis, promote, to_float, wrap

__all__ = ["sum", "mean", "max", "min", "amax", "amin", "prod", "var", "std", "all", "any", "argmax",
           "argmin", "count_nonzero", "cumsum", "cumprod", "median", "quantile", "percentile", "average",
           "ptp", "logsumexp", "nansum", "nanmean", "nanmax", "nanmin", "nanprod", "nanvar", "nanstd",
           "nanargmax", "nanargmin", "nancumsum", "nancumprod", "nanmedian", "nanquantile",
           "nanpercentile", "sort", "argsort", "argpartition", "top_k", "in_top_k", "searchsorted",
           "unique", "digitize", "bincount", "histogram", "nonzero"]


def _axes(axis, x):
    return norm_axes(axis, x.ndim)


def _sum_dtype(x):
    # Keras: bool and small ints sum in int32, other ints keep their dtype
    if x.dtype == bool or x.dtype.name in ("int8", "int16", "uint8", "uint16"):
        return np.dtype(np.int32)
    return x.dtype


@keras_op("x")
def sum(x, axis=None, keepdims=False):
    axes = _axes(axis, x)
    if x.dtype.kind != "f":
        return wrap(np.sum(x.data, axis=axes, keepdims=keepdims, dtype=_sum_dtype(x)))
    return x.sum(axis=axes, keepdims=keepdims)


@keras_op("x")
def mean(x, axis=None, keepdims=False):
    """The mean (integers average in floatx)."""
    return to_float(x).mean(axis=_axes(axis, x), keepdims=keepdims)


def _extreme(x, axis, keepdims, initial, largest):
    axes = _axes(axis, x)
    if x.dtype.kind != "f":
        fn = np.max if largest else np.min
        out = fn(x.data, axis=axes, keepdims=keepdims) if x.data.size else fn(
            x.data, axis=axes, keepdims=keepdims, initial=initial)
        if initial is not None:
            out = (np.maximum if largest else np.minimum)(out, initial)
        return wrap(np.asarray(out).astype(x.dtype))
    if x.data.size == 0 and initial is None:
        raise ValueError("Cannot compute the max/min of an empty tensor without `initial`.")
    out = x.amax(axes if axes is not None else (), keepdims) if largest else x.amin(
        axes if axes is not None else (), keepdims)
    if initial is not None:
        bound = Tensor(np.asarray(initial, dtype=x.dtype))
        out = out.maximum(bound) if largest else out.minimum(bound)
    return out


@keras_op("x")
def max(x, axis=None, keepdims=False, initial=None):
    """The largest value (ties share the gradient equally, as ``torch.amax``)."""
    return _extreme(x, axis, keepdims, initial, True)


@keras_op("x")
def min(x, axis=None, keepdims=False, initial=None):
    return _extreme(x, axis, keepdims, initial, False)


@keras_op("x")
def amax(x, axis=None, keepdims=False):
    return _extreme(x, axis, keepdims, None, True)


@keras_op("x")
def amin(x, axis=None, keepdims=False):
    return _extreme(x, axis, keepdims, None, False)


@keras_op("x")
def prod(x, axis=None, keepdims=False, dtype=None):
    if dtype is not None:
        x = cast_to(x, np.dtype(dtype))
    axes = _axes(axis, x)
    if x.dtype.kind != "f":
        return wrap(np.prod(x.data, axis=axes, keepdims=keepdims, dtype=_sum_dtype(x)))
    if axes is None:
        return x.reshape(-1).prod(0).reshape((1,) * x.ndim if keepdims else ())
    out = x
    for a in sorted(axes, reverse=True):
        out = out.prod(a, keepdim=True)
    return out if keepdims else out.squeeze(axes) if len(axes) else out


@keras_op("x")
def var(x, axis=None, keepdims=False):
    """The biased variance (divides by N, as NumPy and Keras)."""
    return to_float(x).var(axis=_axes(axis, x), keepdims=keepdims, correction=0)


@keras_op("x")
def std(x, axis=None, keepdims=False):
    return to_float(x).std(axis=_axes(axis, x), keepdims=keepdims, correction=0)


@keras_op("x")
def all(x, axis=None, keepdims=False):
    return wrap(np.all(x.data, axis=_axes(axis, x), keepdims=keepdims))


@keras_op("x")
def any(x, axis=None, keepdims=False):
    return wrap(np.any(x.data, axis=_axes(axis, x), keepdims=keepdims))


def _arg(fn, x, axis, keepdims):
    if axis is None:
        out = fn(x.data.reshape(-1))
        out = np.reshape(out, (1,) * x.ndim) if keepdims else out
    else:
        out = fn(x.data, axis=norm_axis(axis, x.ndim), keepdims=keepdims)
    return wrap(np.asarray(out, dtype=np.int32))


@keras_op("x")
def argmax(x, axis=None, keepdims=False):
    """Index of the largest value (int32; the first one on ties)."""
    return _arg(np.argmax, x, axis, keepdims)


@keras_op("x")
def argmin(x, axis=None, keepdims=False):
    return _arg(np.argmin, x, axis, keepdims)


@keras_op("x")
def count_nonzero(x, axis=None):
    return wrap(np.asarray(np.count_nonzero(x.data, axis=_axes(axis, x)), dtype=np.int32))


def _cum_input(x, axis, dtype):
    if dtype is not None:
        x = cast_to(x, np.dtype(dtype))
    elif x.dtype == bool:
        x = x.astype(np.int32)
    if axis is None:
        return x.reshape(-1), 0
    return x, norm_axis(axis, x.ndim)


@keras_op("x")
def cumsum(x, axis=None, dtype=None):
    """Running sum along ``axis`` (None: over the flattened tensor)."""
    x, axis = _cum_input(x, axis, dtype)
    if x.dtype.kind != "f":
        return wrap(np.cumsum(x.data, axis=axis, dtype=x.dtype))
    return CumSum.apply(x, dim=axis) if x.ndim else x


@keras_op("x")
def cumprod(x, axis=None, dtype=None):
    """Running product; differentiable as the product of the prefixes (log-free, safe at 0)."""
    x, axis = _cum_input(x, axis, dtype)
    if x.dtype.kind != "f":
        return wrap(np.cumprod(x.data, axis=axis, dtype=x.dtype))
    parts, running = [], None
    for i in range(x.shape[axis]):
        item = x[(builtins.slice(None),) * axis + (builtins.slice(i, i + 1),)]
        running = item if running is None else running * item
        parts.append(running)
    return cat(parts, axis) if len(parts) > 1 else x.clone()


def _move_last(x, axis):
    """``x`` with the reduced axes flattened into one last axis, and the kept shape."""
    axes = norm_axes(axis, x.ndim) if axis is not None else tuple(range(x.ndim))
    kept = [d for d in range(x.ndim) if d not in axes]
    moved = x.permute(*(kept + list(axes))) if x.ndim else x.reshape(1)
    kept_shape = tuple(x.shape[d] for d in kept)
    return moved.reshape(*kept_shape, -1), axes, kept_shape


def _restore(out, x, axes, kept_shape, keepdims, extra=()):
    if not keepdims:
        return out
    shape = tuple(1 if d in axes else x.shape[d] for d in range(x.ndim))
    return out.reshape(*extra, *shape)


_METHODS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(x, q, axis, method, keepdims, ignore_nan=False):
    if method not in _METHODS:
        raise ValueError(f"Invalid argument `method`: expected one of {_METHODS}. Received: method={method!r}")
    qs = np.asarray(q.data if isinstance(q, Tensor) else q, dtype=np.float64)
    if qs.size and (qs.min() < 0 or qs.max() > 1):
        raise ValueError(f"Invalid argument `q`: expected values in [0, 1] (percentile: [0, 100]). Received: q={q}")
    x = to_float(x)
    flat, axes, kept_shape = _move_last(x, axis)
    n = flat.shape[-1]
    if ignore_nan:
        nan = np.isnan(flat.data)
        count = (~nan).sum(-1)                                   # NaNs sort last
        fill = Tensor(np.full((), np.inf, flat.dtype))
        flat = _where(Tensor(nan), fill, flat)
    else:
        count = np.full(flat.shape[:-1], n)
    ordered = flat.gather(-1, Tensor(np.argsort(flat.data, axis=-1, kind="stable")))
    outs = []
    for qv in qs.reshape(-1):
        pos = qv * (np.maximum(count, 1) - 1)
        lo, hi = np.floor(pos).astype(np.int64), np.ceil(pos).astype(np.int64)
        if method == "lower":
            hi = lo
        elif method == "higher":
            lo = hi
        elif method == "nearest":
            lo = hi = np.round(pos).astype(np.int64)
        frac = (pos - lo) if method == "linear" else np.full(pos.shape, 0.5 if method == "midpoint" else 0.0)
        a = ordered.gather(-1, Tensor(lo[..., None])).squeeze(-1)
        b = ordered.gather(-1, Tensor(hi[..., None])).squeeze(-1)
        w = Tensor(np.asarray(frac, dtype=x.dtype))
        value = a + (b - a) * w if method in ("linear", "midpoint") else a
        if ignore_nan:
            value = _where(Tensor(count == 0), Tensor(np.full((), np.nan, x.dtype)), value)
        outs.append(_restore(value, x, axes, kept_shape, keepdims))
    if qs.ndim == 0:
        return outs[0]
    stacked = cat([o.reshape(1, *o.shape) for o in outs], 0)
    return stacked.reshape(*qs.shape, *outs[0].shape)


@keras_op("x")
def quantile(x, q, axis=None, method="linear", keepdims=False):
    """The ``q``-th quantile(s) (``q`` in [0, 1]), NumPy's methods; differentiable."""
    return _quantile(x, q, axis, method, keepdims)


@keras_op("x")
def percentile(x, q, axis=None, method="linear", keepdims=False):
    return _quantile(x, np.asarray(_data_or(q)) / 100.0, axis, method, keepdims)


@keras_op("x")
def median(x, axis=None, keepdims=False):
    return _quantile(x, 0.5, axis, "linear", keepdims)


@keras_op("x")
def nanquantile(x, q, axis=None, method="linear", keepdims=False):
    return _quantile(x, q, axis, method, keepdims, ignore_nan=True)


@keras_op("x")
def nanpercentile(x, q, axis=None, method="linear", keepdims=False):
    return _quantile(x, np.asarray(_data_or(q)) / 100.0, axis, method, keepdims, ignore_nan=True)


@keras_op("x")
def nanmedian(x, axis=None, keepdims=False):
    return _quantile(x, 0.5, axis, "linear", keepdims, ignore_nan=True)


def _data_or(q):
    return q.data if isinstance(q, Tensor) else q


@keras_op("x", "weights")
def average(x, axis=None, weights=None):
    """The (weighted) mean along ``axis``; ``weights`` 1-D along ``axis`` or shaped like ``x``."""
    if weights is None:
        return mean(x, axis=axis)
    dtype = promote(x, weights, float)
    x, w = cast_to(x, dtype), cast_to(weights, dtype)
    if axis is not None and w.ndim == 1 and x.ndim > 1:
        a = norm_axis(axis, x.ndim)
        w = w.reshape(*[x.shape[a] if d == a else 1 for d in range(x.ndim)])
    axes = _axes(axis, x)
    return (x * w).sum(axis=axes) / (w * Tensor(np.ones(x.shape, dtype))).sum(axis=axes)


@keras_op("x")
def ptp(x, axis=None, keepdims=False):
    return max(x, axis, keepdims) - min(x, axis, keepdims)


@keras_op("x")
def logsumexp(x, axis=None, keepdims=False):
    """``log(sum(exp(x)))``, stably (differentiable: the gradient is softmax)."""
    x = to_float(x)
    axes = _axes(axis, x)
    if axes is None:
        axes = tuple(range(x.ndim))
    if not axes:
        return x
    return x.logsumexp(axes, keepdim=keepdims)


def _nan_filled(x, value):
    x = to_float(x) if x.dtype.kind != "f" else x
    return _where(Tensor(np.isnan(x.data)), Tensor(np.full((), value, x.dtype)), x)


@keras_op("x")
def nansum(x, axis=None, keepdims=False):
    if x.dtype.kind != "f":
        return sum(x, axis, keepdims)
    return sum(_nan_filled(x, 0.0), axis, keepdims)


@keras_op("x")
def nanmean(x, axis=None, keepdims=False):
    x = to_float(x)
    valid = Tensor((~np.isnan(x.data)).astype(x.dtype))
    axes = _axes(axis, x)
    return _nan_filled(x, 0.0).sum(axis=axes, keepdims=keepdims) / valid.sum(axis=axes, keepdims=keepdims)


@keras_op("x")
def nanmax(x, axis=None, keepdims=False):
    if x.dtype.kind != "f":
        return max(x, axis, keepdims)
    out = max(_nan_filled(x, -np.inf), axis, keepdims)
    all_nan = np.all(np.isnan(x.data), axis=_axes(axis, x), keepdims=keepdims)
    return _where(Tensor(all_nan), Tensor(np.full((), np.nan, x.dtype)), out)


@keras_op("x")
def nanmin(x, axis=None, keepdims=False):
    if x.dtype.kind != "f":
        return min(x, axis, keepdims)
    out = min(_nan_filled(x, np.inf), axis, keepdims)
    all_nan = np.all(np.isnan(x.data), axis=_axes(axis, x), keepdims=keepdims)
    return _where(Tensor(all_nan), Tensor(np.full((), np.nan, x.dtype)), out)


@keras_op("x")
def nanprod(x, axis=None, keepdims=False):
    if x.dtype.kind != "f":
        return prod(x, axis, keepdims)
    return prod(_nan_filled(x, 1.0), axis, keepdims)


@keras_op("x")
def nanvar(x, axis=None, keepdims=False):
    x = to_float(x)
    m = nanmean(x, axis, keepdims=True)
    return nanmean((x - m) * (x - m), axis, keepdims)


@keras_op("x")
def nanstd(x, axis=None, keepdims=False):
    return nanvar(x, axis, keepdims).sqrt()


@keras_op("x")
def nanargmax(x, axis=None, keepdims=False):
    if x.dtype.kind != "f":
        return argmax(x, axis, keepdims)
    return _arg(np.nanargmax, x, axis, keepdims)


@keras_op("x")
def nanargmin(x, axis=None, keepdims=False):
    if x.dtype.kind != "f":
        return argmin(x, axis, keepdims)
    return _arg(np.nanargmin, x, axis, keepdims)


@keras_op("x")
def nancumsum(x, axis=None, dtype=None):
    if x.dtype.kind != "f":
        return cumsum(x, axis, dtype)
    return cumsum(_nan_filled(x, 0.0), axis, dtype)


@keras_op("x")
def nancumprod(x, axis=None, dtype=None):
    if x.dtype.kind != "f":
        return cumprod(x, axis, dtype)
    return cumprod(_nan_filled(x, 1.0), axis, dtype)


# ----------------------------------------------------------------------------- sorting, searching


@keras_op("x")
def sort(x, axis=-1):
    """Values sorted ascending along ``axis`` (differentiable: gradients go back to where
    each value came from)."""
    if x.ndim == 0:
        return x
    axis = norm_axis(axis, x.ndim)
    if x.dtype.kind != "f":
        return wrap(np.sort(x.data, axis=axis, kind="stable"))
    index = np.argsort(x.data, axis=axis, kind="stable")
    return x.gather(axis, Tensor(index))


@keras_op("x")
def argsort(x, axis=-1):
    """Indices that sort ``x`` along ``axis`` (stable; int32)."""
    if x.ndim == 0:
        return wrap(np.asarray(0, np.int32))
    return wrap(np.argsort(x.data, axis=norm_axis(axis, x.ndim), kind="stable").astype(np.int32))


@keras_op("x")
def argpartition(x, kth, axis=-1):
    return wrap(np.argpartition(x.data, kth, axis=norm_axis(axis, x.ndim)).astype(np.int32))


@keras_op("x")
def top_k(x, k, sorted=True):
    """``(values, indices)`` of the ``k`` largest entries along the last axis (values
    differentiable; ties: the lower index first)."""
    k = int(k)
    if not 0 <= k <= x.shape[-1]:
        raise ValueError(f"Invalid argument `k`: expected an int in [0, {x.shape[-1]}] (the size of the last "
                         f"axis). Received: k={k}")
    index = np.argsort(-x.data if x.dtype.kind == "f" else -x.data.astype(np.int64), axis=-1, kind="stable")[..., :k]
    values = x.gather(-1, Tensor(index)) if x.dtype.kind == "f" else wrap(np.take_along_axis(x.data, index, -1))
    return values, wrap(index.astype(np.int64))      # int64, as Keras on torch


@keras_op("targets", "predictions")
def in_top_k(targets, predictions, k):
    """Whether each ``targets[i]`` is among the ``k`` largest ``predictions[i]`` (ties count in)."""
    p = predictions.data
    t = targets.data.astype(np.int64)
    target_values = np.take_along_axis(p, t[:, None], axis=-1)
    return wrap((p > target_values).sum(-1) < int(k))


@keras_op("sorted_sequence", "values")
def searchsorted(sorted_sequence, values, side="left"):
    if side not in ("left", "right"):
        raise ValueError(f"Invalid argument `side`: expected 'left' or 'right'. Received: side={side!r}")
    if sorted_sequence.ndim != 1:
        raise ValueError(f"Invalid argument `sorted_sequence`: expected a 1-D tensor. "
                         f"Received: shape {sorted_sequence.shape}")
    out = np.searchsorted(sorted_sequence.data, values.data, side=side)
    return wrap(out.astype(np.int32 if sorted_sequence.shape[0] < 2**31 else np.int64))


@keras_op("x")
def unique(x, sorted=True, return_index=False, return_inverse=False, return_counts=False, axis=None,
           size=None, fill_value=None):
    """NumPy's ``unique`` (sorted); ``size`` pads/truncates to a static length with ``fill_value``."""
    out = np.unique(x.data, return_index=return_index, return_inverse=return_inverse,
                    return_counts=return_counts, axis=axis)
    out = out if isinstance(out, tuple) else (out,)
    values = out[0]
    if size is not None:
        fill = values.min() if fill_value is None and values.size else (fill_value or 0)
        padded = np.full((int(size),) + values.shape[1:], fill, dtype=values.dtype)
        padded[:builtins.min(int(size), values.shape[0])] = values[:int(size)]
        values = padded
    results = [wrap(values)] + [wrap(o.astype(np.int64)) for o in out[1:]]
    return results[0] if len(results) == 1 else tuple(results)


@keras_op("x", "bins")
def digitize(x, bins):
    return wrap(np.digitize(x.data, bins.data).astype(np.int32))


@keras_op("x", "weights")
def bincount(x, weights=None, minlength=0, sparse=False):
    if sparse:
        raise ValueError("Invalid argument `sparse`: minnet has dense tensors only. Received: sparse=True")
    data = x.data
    if data.ndim == 1:
        out = np.bincount(data, None if weights is None else weights.data, minlength=minlength)
    else:
        length = builtins.max(int(data.max()) + 1 if data.size else 0, minlength)
        out = np.stack([np.bincount(row, None if weights is None else w, minlength=length)
                        for row, w in zip(data, weights.data if weights is not None else [None] * len(data))])
    dtype = np.int32 if weights is None else weights.dtype
    return wrap(out.astype(dtype))


@keras_op("x")
def histogram(x, bins=10, range=None):
    counts, edges = np.histogram(x.data, bins=bins, range=range)
    dtype = to_float(x).dtype                   # Keras: counts in the input's float dtype
    return wrap(counts.astype(dtype)), wrap(edges.astype(dtype))


@keras_op("x")
def nonzero(x):
    return tuple(wrap(i.astype(np.int32)) for i in np.nonzero(x.data))

