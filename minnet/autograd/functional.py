"""Jacobians and their products, as ``torch.autograd.functional``: vjp, jvp, jacobian,
hessian, hvp, vhp.

Backward computes a vector-Jacobian product ``v^T J`` per node and never forms ``J``;
these functions show the difference.  ``jacobian`` builds ``J`` row by row (one
backward per output element), so its cost and memory grow with the output size, while
``vjp`` is a single backward.  ``jvp``, ``hvp`` and ``vhp`` use double backward.

Example:
    >>> f = lambda x: (x ** 3).sum()
    >>> x = mn.tensor([1.0, 2.0], dtype="float64")
    >>> mn.autograd.functional.hessian(f, x)          # diag(6x)
"""
import numpy as np

from .creation import stack
from .differentiate import grad
from .grad_mode import enable_grad
from .tensor import Tensor

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]


def _as_tuple(value, name, fn):
    is_tuple = isinstance(value, (tuple, list))
    values = tuple(value) if is_tuple else (value,)
    for i, v in enumerate(values):
        if not isinstance(v, Tensor):
            raise TypeError(f"The {name} given to {fn} must be either a Tensor or a tuple of Tensors but "
                            f"the value at index {i} has type {type(v).__name__}.")
    return is_tuple, values


def _prepare_inputs(inputs, create_graph):
    out = []
    for x in inputs:
        if create_graph and x.requires_grad:
            out.append(x.view_as(x))              # stays connected to the caller's graph
        else:
            t = x.detach()
            t.requires_grad_(x.dtype.kind in "fc")
            out.append(t)
    return tuple(out)


def _finish(values, create_graph):
    if create_graph:
        return values
    return tuple(None if v is None else v.detach() for v in values)


def _grads(outputs, inputs, grad_outputs, create_graph, strict, fn):
    differentiable = [(o, g) for o, g in zip(outputs, grad_outputs) if o.requires_grad]
    if not differentiable:
        if strict:
            raise RuntimeError(f"{fn}: the output of the user-provided function is independent of the inputs "
                               f"(strict=True)")
        return tuple(Tensor._make(np.zeros_like(x.data)) for x in inputs)
    outs, gs = zip(*differentiable)
    result = grad(list(outs), list(inputs), grad_outputs=list(gs), retain_graph=True,
                  create_graph=create_graph, allow_unused=True)
    if strict and any(r is None for r in result):
        raise RuntimeError(f"{fn}: an input is independent of the outputs (strict=True)")
    return tuple(Tensor._make(np.zeros_like(x.data)) if r is None else r for r, x in zip(result, inputs))


def _check_v(v, like, name, fn):
    if v is None:
        if len(like) != 1 or like[0].data.size != 1:
            raise RuntimeError(f"The vector v can only be None if the user-provided function returns a single "
                               f"Tensor with a single element ({fn}).")
        return (Tensor._make(np.ones_like(like[0].data)),)
    _, vs = _as_tuple(v, name, fn)
    if len(vs) != len(like):
        raise RuntimeError(f"{fn}: v has {len(vs)} elements but {len(like)} were expected")
    for a, b in zip(vs, like):
        if tuple(a.shape) != tuple(b.shape):
            raise RuntimeError(f"{fn}: mismatch in shape: v has shape {tuple(a.shape)}, expected {tuple(b.shape)}")
    return vs


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), v^T J)``: one backward pass."""
    is_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
    with enable_grad():
        xs = _prepare_inputs(inputs, create_graph)
        out = func(*xs)
        out_tuple, outs = _as_tuple(out, "outputs of the user-provided function", "vjp")
        vs = _check_v(v, outs, "v", "vjp")
        result = _grads(outs, xs, vs, create_graph, strict, "vjp")
    outs = _finish(outs, create_graph)
    result = _finish(result, create_graph)
    return (outs if out_tuple else outs[0]), (result if is_tuple else result[0])


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), J v)`` by the double-backward trick (a VJP of a VJP)."""
    is_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
    vs = _check_v(v, inputs, "v", "jvp")
    with enable_grad():
        xs = _prepare_inputs(inputs, create_graph)
        out = func(*xs)
        out_tuple, outs = _as_tuple(out, "outputs of the user-provided function", "jvp")
        dummies = tuple(Tensor(np.zeros_like(o.data), requires_grad=True) for o in outs)
        g = _grads(outs, xs, dummies, True, strict, "jvp")                 # u -> J^T u
        used = [(gi, vi) for gi, vi in zip(g, vs) if gi.requires_grad]
        if used:
            gs, vv = zip(*used)
            result = grad(list(gs), list(dummies), grad_outputs=list(vv), retain_graph=True,
                          create_graph=create_graph, allow_unused=True)
            result = tuple(Tensor._make(np.zeros_like(o.data)) if r is None else r for r, o in zip(result, outs))
        else:
            result = tuple(Tensor._make(np.zeros_like(o.data)) for o in outs)
    outs = _finish(outs, create_graph)
    result = _finish(result, create_graph)
    return (outs if out_tuple else outs[0]), (result if out_tuple else result[0])


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """The full Jacobian ``d func(inputs) / d inputs``, of shape ``output.shape + input.shape``.

    Built with one backward per output element (``J``'s rows are VJPs with unit vectors).
    For tuples of inputs/outputs the result is nested tuples, ``result[i][j]`` =
    d output_i / d input_j, as PyTorch's.
    """
    if strategy != "reverse-mode":
        raise ValueError(f"Invalid argument `strategy`: only 'reverse-mode' is implemented. Received: {strategy!r}")
    is_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
    with enable_grad():
        xs = _prepare_inputs(inputs, create_graph)
        out = func(*xs)
        out_tuple, outs = _as_tuple(out, "outputs of the user-provided function", "jacobian")
        blocks = []
        for o in outs:
            rows = [[] for _ in xs]
            flat = o.reshape(-1)
            for k in range(flat.shape[0]):
                if o.requires_grad:
                    gk = grad(flat[k], list(xs), retain_graph=True, create_graph=create_graph, allow_unused=True)
                else:
                    gk = (None,) * len(xs)
                for j, (g, x) in enumerate(zip(gk, xs)):
                    if g is None:
                        if strict:
                            raise RuntimeError("jacobian: an output is independent of an input (strict=True)")
                        g = Tensor._make(np.zeros_like(x.data))
                    rows[j].append(g)
            per_input = []
            for j, x in enumerate(xs):
                shape = tuple(o.shape) + tuple(x.shape)
                if rows[j]:
                    if create_graph:
                        block = stack(rows[j]).reshape(shape)
                    else:
                        block = Tensor._make(np.stack([r.data for r in rows[j]]).reshape(shape))
                else:
                    block = Tensor._make(np.zeros(shape, dtype=x.dtype))
                per_input.append(block)
            blocks.append(tuple(per_input))
    if not create_graph:
        blocks = [tuple(b.detach() for b in blk) for blk in blocks]
    if out_tuple:
        return tuple(blk if is_tuple else blk[0] for blk in blocks)
    return blocks[0] if is_tuple else blocks[0][0]


def _scalar_output(func, fn):
    def wrapped(*xs):
        out = func(*xs)
        if not isinstance(out, Tensor) or out.data.size != 1:
            raise RuntimeError(f"The function given to {fn} should return a single Tensor with a single element. "
                               f"Received: {type(out).__name__} of shape {getattr(out, 'shape', None)}")
        return out.reshape(())
    return wrapped


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False):
    """The Hessian of a scalar ``func``: shape ``input.shape + input.shape`` (nested tuples for
    several inputs)."""
    is_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    scalar = _scalar_output(func, "hessian")

    def gradient(*xs):
        with enable_grad():
            out = scalar(*xs)
            return _grads((out,), xs, (Tensor._make(np.ones_like(out.data)),), True, strict, "hessian")

    result = jacobian(gradient, inputs if is_tuple else inputs[0], create_graph=create_graph, strict=strict)
    if is_tuple:
        return result
    return result[0]


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), v^T H)`` for a scalar ``func``, by double backward."""
    is_tuple, inputs = _as_tuple(inputs, "inputs", "vhp")
    vs = _check_v(v, inputs, "v", "vhp")
    scalar = _scalar_output(func, "vhp")
    with enable_grad():
        xs = _prepare_inputs(inputs, create_graph)
        out = scalar(*xs)
        g = _grads((out,), xs, (Tensor._make(np.ones_like(out.data)),), True, strict, "vhp")
        used = [(gi, vi) for gi, vi in zip(g, vs) if gi.requires_grad]
        if used:
            gs, vv = zip(*used)
            result = grad(list(gs), list(xs), grad_outputs=list(vv), retain_graph=True,
                          create_graph=create_graph, allow_unused=True)
            result = tuple(Tensor._make(np.zeros_like(x.data)) if r is None else r for r, x in zip(result, xs))
        else:
            result = tuple(Tensor._make(np.zeros_like(x.data)) for x in xs)
    out = _finish((out,), create_graph)[0]
    result = _finish(result, create_graph)
    return out, (result if is_tuple else result[0])


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), H v)`` for a scalar ``func`` (H is symmetric for smooth functions,
    so this equals ``vhp``; computed the same way, as a VJP of the gradient)."""
    return vhp(func, inputs, v, create_graph=create_graph, strict=strict)
