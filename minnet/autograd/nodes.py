"""The nodes of the backward graph: ``Node``, the leaf's ``AccumulateGrad``, tensor hook
dicts and their handles, and the Tensor class the engine makes (registered by tensor.py,
which sits above this module).

A node's ``next_functions`` lists ``(node, output_index)`` per input of the op it
differentiates; ``BackwardNode`` (backward_node.py) is the node of one Function
application, ``AccumulateGrad`` the end of every path at a leaf tensor.
"""
import weakref

import numpy as np

from minnet._config import get_num_threads
from minnet._ext import select_kernels

__all__ = ["Node", "AccumulateGrad", "HookDict", "RemovableHandle", "TENSOR_CLASS", "register_tensor_class"]

# [Tensor], filled once by tensor.py through register_tensor_class: the modules of the
# engine sit below tensor.py, yet make Tensors (double backward) and recognise them.
TENSOR_CLASS = []

def register_tensor_class(cls):
    """Called once by tensor.py: the engine creates and recognises Tensors of this class."""
    TENSOR_CLASS[:] = [cls]

class RemovableHandle:
    """Returned by ``register_*hook``: ``handle.remove()`` unregisters the hook."""

    _next_id = [0]

    def __init__(self, hooks_dict):
        self._ref = weakref.ref(hooks_dict) if hooks_dict is not None else None
        RemovableHandle._next_id[0] += 1
        self.id = RemovableHandle._next_id[0]

    def remove(self):
        hooks = self._ref() if self._ref is not None else None
        if hooks is not None:
            hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
        return False

class HookDict(dict):
    """id -> hook, in registration order (a dict subclass so a handle can hold a weakref);
    ``add`` returns a handle whose ``remove()`` unregisters."""

    def add(self, hook):
        if not callable(hook):
            raise TypeError(f"Invalid argument `hook`: expected a callable. Received: {type(hook).__name__}")
        handle = RemovableHandle(self)
        self[handle.id] = hook
        return handle

class Node:
    """A node of the backward graph. ``next_functions`` lists ``(node, output_index)`` per input."""

    # Nodes hold their fields in slots: a graph has one node per op, and a __dict__ each
    # is one more object for the garbage collector to walk (benchmarks/bench_autograd.py,
    # chain1000).
    __slots__ = ()
    next_functions = ()
    # tensor hooks of this node's outputs: {output_nr: HookDict}; retained grads: {output_nr: weakref}
    _tensor_hooks = None
    _retained = None

    def name(self):
        return type(self).__name__

    def __repr__(self):
        return f"<{self.name()}>"

    def _add_tensor_hook(self, output_nr, fn):
        if self._tensor_hooks is None:
            self._tensor_hooks = {}
        hooks = self._tensor_hooks.get(output_nr)
        if hooks is None:
            hooks = self._tensor_hooks[output_nr] = HookDict()
        return hooks.add(fn)

def _own_copy(grad):
    """A copy of ``grad`` the leaf can keep.  A large view whose last axis is contiguous or
    broadcast (the gradient ``sum``/``expand`` send back) is copied row by row on the
    threads (``select_kernels.materialize``; NumPy copies a strided view on one thread:
    benchmarks/bench_autograd.py, "sum dim 0" and "stack"); anything else keeps NumPy's
    copy in the view's own memory order."""
    if grad.ndim >= 2 and grad.strides[-1] in (0, grad.itemsize) and grad.nbytes >= 1 << 20:
        return select_kernels.materialize(grad, n_threads=get_num_threads())
    return np.array(grad, order="K")

class AccumulateGrad(Node):
    """Leaf node: adds the incoming gradient into ``variable.grad``."""

    __slots__ = ("variable", "__weakref__")
    # observer(variable), called after each accumulation into a leaf's grad (PyTorch's
    # post-accumulate-grad hook, one global slot): data parallelism starts a bucket's
    # all-reduce from it (minnet/trainers/distributed_step.py). None: nothing is called.
    observer = None

    def __init__(self, variable):
        self.variable = variable

    def accumulate(self, grad, owned):
        var = self.variable
        data = var.data
        if grad.shape != data.shape:
            raise RuntimeError(f"AccumulateGrad: gradient of shape {grad.shape} does not match the "
                               f"leaf tensor's shape {data.shape}")
        if grad.dtype is not data.dtype and grad.dtype != data.dtype:
            grad = grad.astype(data.dtype)
            owned = True
        if var.grad is None:
            # never alias memory someone else holds: copy unless the engine owns the array
            var.grad = grad if owned else _own_copy(grad)
        else:
            var.grad += grad
        if AccumulateGrad.observer is not None:
            AccumulateGrad.observer(var)
