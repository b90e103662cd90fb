"""Shape operations as Functions: reshape, permute/transpose, expand, repeat, flip, cat and
stack.  Each backward moves the gradient back to the input's layout (reshape back, the
inverse permutation, ``unbroadcast`` for expand, a sum over the tiles for repeat, slices for
cat/stack); the math is in ``docs/math/autograd_ops.md``.
"""
import numpy as np

from minnet._config import get_num_threads
from minnet._ext import select_kernels

from .function import Function
from .op_helpers import is_tensor, norm_dim, norm_dims, unbroadcast

__all__ = ["Reshape", "Permute", "Transpose", "Expand", "Repeat", "Flip", "Cat", "Stack",
           "broadcast_to", "permute", "flip"]


# NumPy's function on an ndarray, the recorded op on a Tensor (for the backwards of other ops).


def broadcast_to(g, shape):
    """``g`` broadcast to ``shape`` (a view for an ndarray, ``Expand`` for a Tensor)."""
    if is_tensor(g):
        return g if tuple(g.shape) == tuple(shape) else Expand.apply(g, shape=tuple(shape))
    return np.broadcast_to(g, shape)


def permute(x, axes):
    return Permute.apply(x, dims=tuple(axes)) if is_tensor(x) else np.transpose(x, axes)


def flip(x, dims):
    return Flip.apply(x, dims=dims) if is_tensor(x) else np.flip(x, dims)


class Reshape(Function):
    node_name = "ViewBackward"
    is_view = True

    @staticmethod
    def forward(ctx, a, shape=()):
        ctx.in_shape = a.shape
        try:
            return np.reshape(a, shape)
        except ValueError:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {a.size}") from None

    @staticmethod
    def backward(ctx, g):
        return g.reshape(ctx.in_shape)

    backward_graph = backward


class Permute(Function):
    is_view = True

    @staticmethod
    def forward(ctx, a, dims=None):
        if dims is None:
            dims = tuple(reversed(range(a.ndim)))
        dims = tuple(int(d) % max(a.ndim, 1) for d in dims)
        if sorted(dims) != list(range(a.ndim)):
            raise RuntimeError(f"permute(): the number of dims don't match or a dim is repeated: "
                               f"dims={dims} for a tensor of {a.ndim} dimensions")
        ctx.dims = dims
        return np.transpose(a, dims)

    @staticmethod
    def backward(ctx, g):
        return permute(g, tuple(np.argsort(ctx.dims)))

    backward_graph = backward


Transpose = Permute


class Expand(Function):
    is_view = True

    @staticmethod
    def forward(ctx, a, shape=()):
        ctx.in_shape = a.shape
        lead = len(shape) - a.ndim
        if lead < 0:
            raise RuntimeError(f"expand: the number of sizes provided ({len(shape)}) must be greater or "
                               f"equal to the number of dimensions in the tensor ({a.ndim})")
        target = tuple(a.shape[i - lead] if (s == -1 and i >= lead) else s for i, s in enumerate(shape))
        try:
            return np.broadcast_to(a, target)
        except ValueError:
            raise RuntimeError(f"The expanded size of the tensor {target} must match the existing size "
                               f"{a.shape} at non-singleton dimensions") from None

    @staticmethod
    def backward(ctx, g):
        return unbroadcast(g, ctx.in_shape)

    backward_graph = backward


class Repeat(Function):
    @staticmethod
    def forward(ctx, a, repeats=()):
        repeats = tuple(int(r) for r in repeats)
        if len(repeats) < a.ndim:
            raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of "
                               "dimensions of tensor")
        ctx.in_shape = a.shape
        ctx.repeats = repeats
        return np.tile(a.reshape((1,) * (len(repeats) - a.ndim) + a.shape), repeats)

    @staticmethod
    def backward(ctx, g):
        repeats = ctx.repeats
        padded = (1,) * (len(repeats) - len(ctx.in_shape)) + tuple(ctx.in_shape)
        split = []
        for r, s in zip(repeats, padded):
            split += [r, s]
        g = g.reshape(tuple(split)).sum(axis=tuple(range(0, 2 * len(repeats), 2)))
        return g.reshape(ctx.in_shape)

    backward_graph = backward


class Flip(Function):
    @staticmethod
    def forward(ctx, a, dims=()):
        ctx.dims = norm_dims(dims, a.ndim)
        return np.flip(a, ctx.dims).copy()      # torch.flip copies

    @staticmethod
    def backward(ctx, g):
        return flip(g, ctx.dims)

    backward_graph = backward


# Below this many bytes NumPy's single-threaded copy is as fast as a thread team.
_PARALLEL_COPY_BYTES = 1 << 17


def _concat(arrays, axis):
    """``np.concatenate(arrays, axis)``; with more than one thread, C-contiguous arrays of one
    dtype and matching shapes are copied by ``select_kernels.concat`` (the copy shared among the
    threads; benchmarks/bench_autograd.py, "cat" and "stack"), anything else by NumPy (which
    also raises the errors)."""
    n_threads = get_num_threads()
    first = arrays[0]
    if n_threads > 1 and 0 <= axis < first.ndim and \
            sum(a.nbytes for a in arrays) >= _PARALLEL_COPY_BYTES:
        head, tail = first.shape[:axis], first.shape[axis + 1:]
        for a in arrays:
            if a.dtype != first.dtype or not a.flags.c_contiguous or a.ndim != first.ndim \
                    or a.shape[:axis] != head or a.shape[axis + 1:] != tail:
                break
        else:
            out = np.empty(head + (sum(a.shape[axis] for a in arrays),) + tail, dtype=first.dtype)
            return select_kernels.concat(arrays, axis, out, n_threads=n_threads)
    return np.concatenate(arrays, axis=axis)


class Cat(Function):
    @staticmethod
    def forward(ctx, *tensors, dim=0):
        arrays = [np.asarray(t) for t in tensors]
        d = ctx.dim = norm_dim(dim, arrays[0].ndim)
        ctx.sizes = [a.shape[d] for a in arrays]
        try:
            return _concat(arrays, d)
        except ValueError as err:
            raise RuntimeError(f"cat(): {err}") from None

    @staticmethod
    def backward(ctx, g):
        d = ctx.dim
        grads = []
        start = 0
        for size, need in zip(ctx.sizes, ctx.needs_input_grad):
            if need:
                grads.append(g[(slice(None),) * d + (slice(start, start + size),)])
            else:
                grads.append(None)
            start += size
        return tuple(grads)

    backward_graph = backward


class Stack(Function):
    @staticmethod
    def forward(ctx, *tensors, dim=0):
        arrays = [np.asarray(t) for t in tensors]
        d = ctx.dim = norm_dim(dim, arrays[0].ndim + 1)
        shape = arrays[0].shape
        if all(a.shape == shape for a in arrays):
            # stacking is concatenating along a new axis of size 1 (a free reshape)
            return _concat([a.reshape(shape[:d] + (1,) + shape[d:]) for a in arrays], d)
        try:
            return np.stack(arrays, axis=d)
        except ValueError as err:
            raise RuntimeError(f"stack(): {err}") from None

    @staticmethod
    def backward(ctx, g):
        d = ctx.dim
        return tuple(g[(slice(None),) * d + (i,)] if need else None
                     for i, need in enumerate(ctx.needs_input_grad))

    backward_graph = backward
