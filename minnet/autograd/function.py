"""Function, its ctx, the backward graph and the engine that walks it.

A forward op is a ``Function`` subclass with two static methods working on ndarrays::

    class Sigmoid(Function):
        @staticmethod
        def forward(ctx, x):
            y = 1 / (1 + np.exp(-x))
            ctx.save_for_backward(y)        # keep only what backward needs
            return y
        @staticmethod
        def backward(ctx, grad_y):
            (y,) = ctx.saved_tensors
            return grad_y * y * (1 - y)

``Sigmoid.apply(t)`` runs forward on ``t.data`` and, when gradients are being recorded,
attaches one backward node (``SigmoidBackward``) to the output.  ``Tensor.backward()``
then visits the nodes in reverse topological order (iteratively, so a 100,000-op chain
is fine), calls each node's ``backward`` with the summed gradient of its output(s) and
hands the results to the nodes of its inputs.  Leaves end in ``AccumulateGrad``, which
adds into ``tensor.grad``.  Saved arrays are released as soon as a node has run, unless
``retain_graph=True``.

Double backward (``create_graph=True``): the engine then runs each node's
``backward_graph(ctx, *grads)``, the same vector-Jacobian product written with Tensor
operations (``grads`` and ``ctx.saved_tensors`` are Tensors connected to the forward
graph), so the backward pass is itself recorded.  A Function without ``backward_graph``
is once-differentiable, except a user-defined Function, whose ``backward`` is tried on
Tensors (it works when it uses only Tensor operations).
"""
import weakref

import numpy as np

from minnet._checks import check_hook_gradient
from minnet._config import get_num_threads
from minnet._ext import _select

from .grad_mode import (AnomalyError, anomaly_state, check_finite, detect_anomaly, enable_grad, grad_state,
                        is_grad_enabled, no_grad, set_grad_enabled)

__all__ = ["Function", "Context", "Node", "BackwardNode", "AccumulateGrad", "once_differentiable", "HookDict",
           "register_tensor_class",
           "no_grad", "enable_grad", "is_grad_enabled", "set_grad_enabled", "detect_anomaly",
           "AnomalyError", "RemovableHandle"]

# Old names, kept importable from here for code outside the autograd package (being
# moved to minnet.autograd.grad_mode's public grad_state / anomaly_state).
_GradMode = grad_state
_AnomalyMode = anomaly_state
_check_finite = check_finite


# --------------------------------------------------------------------------- ctx

_FREED = ("Trying to backward through the graph a second time (or to read saved arrays after "
          "they have been freed). Saved arrays are released when you call .backward(); "
          "call .backward(retain_graph=True) if you need to backward through the graph a second time.")


class Context:
    """The ``ctx`` a Function's forward and backward share.

    ``save_for_backward(*arrays)`` keeps arrays for backward (``ctx.saved_tensors``);
    ``needs_input_grad`` is a tuple of bools, one per positional forward argument.
    Any other attribute (``ctx.stride = 2``) may be set in forward and read in backward.
    Under ``create_graph=True``, ``saved_tensors`` gives Tensors connected to the graph
    (an input's own Tensor, the output's Tensor) instead of the arrays.
    """

    # Class-level defaults instead of an __init__: one Context per op, so the attribute
    # stores an __init__ would do are a measurable share of a small op.
    _saved = ()
    _versions = None
    _released = False
    _graph_saved = None
    needs_input_grad = ()
    non_differentiable = ()
    # True while backward runs for the last time through this ctx (no retain_graph): the
    # saved arrays are dropped right after, so a backward may overwrite them as scratch
    # (the recurrent kernels write the gate gradients over the saved gates).
    last_use = False

    def save_for_backward(self, *arrays):
        """Keep ``arrays`` (ndarrays or None) for backward; checked for in-place changes."""
        self._saved = arrays

    def mark_non_differentiable(self, *output_indices):
        """Declare outputs (by index) that receive no gradient (e.g. argmax indices)."""
        self.non_differentiable = tuple(output_indices)

    @property
    def saved_tensors(self):
        """The arrays given to ``save_for_backward``, in order."""
        if self._released:
            raise RuntimeError(_FREED)
        if self._versions:
            for counter, version, position, _, _ in self._versions:
                if counter.value != version:
                    array = self._saved[position]
                    raise RuntimeError(
                        f"One of the arrays needed for gradient computation has been modified by an "
                        f"in-place operation: saved array {position} of {self._fn_cls._node_name()} (shape "
                        f"{tuple(array.shape)}, dtype {array.dtype}) is at version "
                        f"{counter.value}; expected version {version}. Use an out-of-place "
                        f"operation (y = y + 1 instead of y += 1 / y.add_(1)) or .clone() first "
                        f"(views share their base's version counter).")
        if self._graph_saved is not None:
            return self._graph_saved
        return self._saved

    @property
    def saved_arrays(self):
        """The saved arrays as ndarrays, also under ``create_graph`` (checked like ``saved_tensors``)."""
        if self._graph_saved is None:
            return self.saved_tensors
        self.saved_tensors      # the version check
        return self._saved

    def graph_input(self, index, data):
        """In ``backward_graph``: a Tensor holding ``data`` (the values of forward input
        ``index``, e.g. a saved contiguous copy of it) wired to that input's place in the
        graph, so what is computed from it is differentiated with respect to the input."""
        Tensor = _TENSOR[0]
        t = Tensor._make(data)
        node = self._graph_node
        fn, nr = node.next_functions[index] if node is not None else (None, 0)
        if fn is None:
            return t
        shape = node._input_meta[index][0]
        if data.shape != shape:
            raise RuntimeError(f"graph_input({index}): data of shape {data.shape} given for an input of "
                               f"shape {shape}")
        t.requires_grad = True
        if type(fn) is AccumulateGrad:
            if fn.variable.data is data:
                return fn.variable
            t._accumulator = weakref.ref(fn)
        else:
            t.grad_fn, t._output_nr = fn, nr
        return t

    def graph_output(self, index, data):
        """In ``backward_graph``: a Tensor holding output ``index``'s values, wired to this node."""
        Tensor = _TENSOR[0]
        t = Tensor._make(data)
        if self._graph_node is not None:
            t.requires_grad = True
            t.grad_fn, t._output_nr = self._graph_node, index
        return t

    _graph_node = None

    def _release(self):
        keep = ("needs_input_grad", "non_differentiable", "_fn_cls")
        d = self.__dict__
        for name in [k for k in d if k not in keep]:
            del d[name]
        self._released = True


# --------------------------------------------------------------------------- nodes

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
    threads (``_select.materialize``; NumPy copies a strided view on one thread:
    benchmarks/bench_autograd.py, "sum dim 0" and "stack"); anything else keeps NumPy's
    copy in the view's own memory order."""
    if grad.ndim >= 2 and grad.strides[-1] in (0, grad.itemsize) and grad.nbytes >= 1 << 20:
        return _select.materialize(grad, n_threads=get_num_threads())
    return np.array(grad, order="K")


class AccumulateGrad(Node):
    """Leaf node: adds the incoming gradient into ``variable.grad``."""

    __slots__ = ("variable", "__weakref__")
    observer = None     # observer(variable) after each accumulation: a post-accumulate-grad hook, one slot

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
        AccumulateGrad.observer is None or AccumulateGrad.observer(var)


class BackwardNode(Node):
    """The backward of one application of a Function (``SigmoidBackward``, ``AddmmBackward``...)."""

    __slots__ = ("fn_cls", "ctx", "next_functions", "_input_meta", "_output_meta", "_tensor_hooks",
                 "_retained", "__weakref__")

    def __init__(self, fn_cls, ctx, next_functions, input_meta, output_meta):
        self.fn_cls = fn_cls
        self.ctx = ctx
        self.next_functions = next_functions
        self._input_meta = input_meta        # (shape, dtype) or None per positional input
        self._output_meta = output_meta      # (shape, dtype) per output
        self._tensor_hooks = None
        self._retained = None

    def name(self):
        return self.fn_cls._node_name()

    def apply(self, grads):
        ctx = self.ctx
        if ctx._released:
            raise RuntimeError(_FREED)
        if len(grads) > 1:      # one output: the engine only calls with its gradient set
            for i, g in enumerate(grads):
                if g is None:
                    shape, dtype = self._output_meta[i]
                    grads[i] = np.zeros(shape, dtype=dtype)
        result = self.fn_cls.backward(ctx, *grads)
        if type(result) is not tuple:
            result = (result,)
        if anomaly_state.enabled:
            check_finite(result, f"Function '{self.name()}' returned nan/inf values in its gradient for input")
        input_meta = self._input_meta
        if len(result) != len(input_meta):
            raise RuntimeError(
                f"{self.fn_cls.__name__}.backward returned an incorrect number of gradients: expected "
                f"{len(input_meta)} (one per positional argument of forward, None for those that need "
                f"none), got {len(result)}")
        out = []
        i = 0
        for g, meta in zip(result, input_meta):
            if g is not None and meta is not None:       # meta is None: the input needs no gradient
                if type(g) is not np.ndarray:
                    g = np.asarray(g.data if isinstance(g, _TENSOR[0]) else g)
                shape, dtype = meta
                if g.shape != shape:
                    if g.ndim == 0 and g.size == int(np.prod(shape, dtype=np.int64)):
                        g = g.reshape(shape)
                    else:
                        raise RuntimeError(
                            f"{self.fn_cls.__name__}.backward returned a gradient of shape {g.shape} "
                            f"for input {i}, but that input has shape {shape}")
                if g.dtype is not dtype and g.dtype != dtype:
                    g = g.astype(dtype)
                out.append(g)
            else:
                out.append(None)
            i += 1
        return out, result, grads

    # ------------------------------------------------------------ double backward
    def _saved_as_tensors(self):
        """``ctx``'s saved arrays as Tensors wired into the forward graph."""
        Tensor = _TENSOR[0]
        make = Tensor._make
        saved = self.ctx.saved_tensors
        out = [make(s) if isinstance(s, np.ndarray) else s for s in saved]     # scalars stay scalars
        for _, _, position, kind, index in self.ctx._versions or ():
            s = saved[position]
            if kind == 0:
                fn, nr = self.next_functions[index]
                if fn is None:
                    continue
                if type(fn) is AccumulateGrad and fn.variable.data is s:
                    out[position] = fn.variable
                    continue
                t = make(s)
                t.grad_fn, t._output_nr = (None, 0) if type(fn) is AccumulateGrad else (fn, nr)
                t.requires_grad = True
                if t.grad_fn is None:
                    t._accumulator = weakref.ref(fn)
            else:
                t = make(s)
                t.requires_grad = True
                t.grad_fn = self
                t._output_nr = index
            out[position] = t
        return tuple(out)

    def apply_graph(self, grads):
        """The backward with Tensor operations, recorded (``create_graph=True``)."""
        ctx = self.ctx
        if ctx._released:
            raise RuntimeError(_FREED)
        Tensor = _TENSOR[0]
        cls = self.fn_cls
        for i, g in enumerate(grads):
            if g is None:
                shape, dtype = self._output_meta[i]
                grads[i] = Tensor._make(np.zeros(shape, dtype=dtype))
        fn = cls.backward_graph
        user_backward = False
        if fn is None:
            if cls._once_differentiable or not cls._user_defined():
                raise RuntimeError(
                    f"{self.name()} is not twice differentiable: its backward works on ndarrays, so it "
                    f"cannot be recorded under create_graph=True. Use an op with a double backward, or "
                    f"give {cls.__name__} a backward written with Tensor operations "
                    f"(backward_graph).")
            fn = cls.backward
            user_backward = True
        ctx._graph_saved = self._saved_as_tensors() if ctx._saved else ()
        ctx._graph_node = self
        try:
            result = fn(ctx, *grads)
        except TypeError as err:
            if not user_backward:
                raise
            raise RuntimeError(
                f"{self.name()} is once differentiable: under create_graph=True its backward receives "
                f"Tensors and failed on them ({err}). Write the backward with Tensor operations "
                f"(x * y, x.exp(), ...) rather than NumPy functions to make it twice differentiable."
            ) from err
        finally:
            ctx._graph_saved = None
            ctx._graph_node = None       # no lasting node -> ctx -> node cycle
        if not isinstance(result, tuple):
            result = (result,)
        if anomaly_state.enabled:
            check_finite(result, f"Function '{self.name()}' returned nan/inf values in its gradient for input")
        if len(result) != len(self._input_meta):
            raise RuntimeError(
                f"{cls.__name__}.backward returned an incorrect number of gradients: expected "
                f"{len(self._input_meta)}, got {len(result)}")
        out = []
        for i, (g, meta) in enumerate(zip(result, self._input_meta)):
            if g is None or meta is None or self.next_functions[i][0] is None:
                out.append(None)
                continue
            if not isinstance(g, Tensor):
                if user_backward and isinstance(g, np.ndarray):
                    raise RuntimeError(
                        f"{self.name()} is once differentiable: under create_graph=True its backward "
                        f"returned an ndarray for input {i}, not a Tensor, so the gradient cannot be "
                        f"differentiated again. Write the backward with Tensor operations.")
                g = Tensor._make(np.asarray(g))
            shape, dtype = meta
            if g.shape != shape:
                if g.ndim == 0:
                    g = g.expand(shape)
                else:
                    raise RuntimeError(
                        f"{cls.__name__}.backward returned a gradient of shape {g.shape} for "
                        f"input {i}, but that input has shape {shape}")
            if g.dtype != dtype:
                g = g.astype(dtype)
            out.append(g)
        return out

    def release(self):
        # Drop the ctx (and with it every saved array) in one store; the shared released
        # ctx makes a second backward through this node raise the retain_graph error.
        self.ctx = _RELEASED


_RELEASED = Context()
_RELEASED._released = True


def once_differentiable(cls):
    """Class decorator: mark a custom Function as once differentiable (a clear error under
    ``create_graph=True`` instead of trying its backward on Tensors)."""
    cls._once_differentiable = True
    return cls


# --------------------------------------------------------------------------- Function

class _FunctionMeta(type):
    def __repr__(cls):
        return f"<Function {cls.__name__}>"


class Function(metaclass=_FunctionMeta):
    """Base class of every differentiable op (as ``torch.autograd.Function``).

    Subclasses define ``forward(ctx, *args, **kwargs)`` and ``backward(ctx, *grads)`` as
    static methods on ndarrays and are called through ``apply``.  Positional arguments
    that are Tensors are the op's inputs: forward receives their ``.data`` and backward
    returns one gradient (or None) per positional argument.  ``node_name`` overrides the
    name of the backward node (default ``<ClassName>Backward``).

    Optional: ``backward_graph(ctx, *grads)``, the backward written with Tensor operations,
    used under ``create_graph=True`` (double backward).  A Function defined outside minnet
    without it has its ``backward`` called with Tensors in that case.

    Example:
        >>> class InvSqrt(mn.Function):
        ...     @staticmethod
        ...     def forward(ctx, x):
        ...         y = 1.0 / np.sqrt(x)
        ...         ctx.save_for_backward(y)
        ...         return y
        ...     @staticmethod
        ...     def backward(ctx, grad_y):
        ...         (y,) = ctx.saved_tensors
        ...         return -0.5 * y**3 * grad_y
        >>> z = InvSqrt.apply(x)
    """

    node_name = None
    backward_graph = None
    # True for ops whose output is a view of input 0 (reshape, slicing, transpose...):
    # the output then shares the input's version counter, so an in-place edit through
    # either is seen by every saved copy.
    is_view = False
    _once_differentiable = False

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("A Function subclass must implement forward(ctx, *args)")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("A Function subclass must implement backward(ctx, *grads)")

    @classmethod
    def _node_name(cls):
        return cls.node_name or f"{cls.__name__}Backward"

    # True for Functions defined outside minnet (set per class below): their backward
    # results are never trusted to be fresh arrays the engine may own.
    _user = True

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._user = not cls.__module__.startswith("minnet.")

    @classmethod
    def _user_defined(cls):
        return cls._user

    @classmethod
    def apply(cls, *args, **kwargs):
        """Run forward on the arguments and record the backward node when needed."""
        Tensor = _TENSOR[0]

        record = grad_state.enabled
        arrays = list(args)
        needs = [False] * len(args)
        any_needs = False
        i = 0
        for a in args:
            if isinstance(a, Tensor):
                arrays[i] = a.data
                if record and a.requires_grad:
                    needs[i] = any_needs = True
            i += 1
        ctx = Context()
        ctx.needs_input_grad = needs = tuple(needs)
        raw = cls.forward(ctx, *arrays, **kwargs)
        make = Tensor._make
        if type(raw) is np.ndarray:  # the common case: one ndarray output
            multiple = False
            out = make(raw)
            outputs = (out,)
            if cls.is_view and raw.base is not None and isinstance(args[0], Tensor) \
                    and np.may_share_memory(raw, arrays[0]):
                out._version = args[0]._version
            if anomaly_state.enabled:
                check_finite((raw,), f"Function '{cls.__name__}' returned nan/inf values in its forward output")
        else:
            multiple = isinstance(raw, tuple)
            raw_outputs = raw if multiple else (raw,)
            outputs = []
            for r in raw_outputs:
                if isinstance(r, Tensor):
                    raise TypeError(f"{cls.__name__}.forward must return ndarrays, not Tensors")
                outputs.append(make(r if isinstance(r, np.ndarray) else np.asarray(r)))
            if anomaly_state.enabled:
                check_finite(raw_outputs, f"Function '{cls.__name__}' returned nan/inf values in its "
                                          f"forward output")
        if any_needs:
            next_functions = []
            input_meta = []
            for a, r in zip(args, needs):
                if r:
                    fn = a.grad_fn
                    if fn is not None:
                        next_functions.append((fn, a._output_nr))
                    else:
                        next_functions.append(a._gradient_edge())
                    d = a.data
                    input_meta.append((d.shape, d.dtype))
                else:
                    next_functions.append(_NO_EDGE)
                    input_meta.append(None)
            if multiple:
                output_meta = tuple([(o.data.shape, o.data.dtype) for o in outputs])
            else:
                output_meta = ((raw.shape, raw.dtype),)
            node = BackwardNode(cls, ctx, tuple(next_functions), _shared_meta(tuple(input_meta)),
                                _shared_meta(output_meta))
            ctx._fn_cls = cls
            non_diff = ctx.non_differentiable
            i = 0
            for o in outputs:
                if not (non_diff and i in non_diff) and o.data.dtype.kind in "fc":
                    # integer/bool outputs (indices, masks) carry no gradient
                    o.requires_grad = True
                    o.grad_fn = node
                    o._output_nr = i
                i += 1
            if ctx._saved:
                versions = _version_refs(ctx._saved, args, arrays, outputs)
                if versions:
                    ctx._versions = versions
        elif ctx._saved:
            ctx._saved = ()
        return tuple(outputs) if multiple else outputs[0]


_NO_EDGE = (None, 0)     # next_functions entry of an input that needs no gradient

# Equal (shape, dtype) records share one tuple.  A dtype keeps a tuple tracked by the
# garbage collector, so a graph held ~4 more tracked objects per op without this, which
# the collector walked over and over while the graph was built (benchmarks/bench_autograd.py,
# chain1000).  Cleared when full, so programs whose shapes keep changing stay bounded.
_META = {}
_META_MAX = 4096


def _shared_meta(meta):
    shared = _META.get(meta)
    if shared is None:
        if len(_META) >= _META_MAX:
            _META.clear()
        shared = _META[meta] = meta
    return shared


_TENSOR = []     # [Tensor], filled by tensor.py through register_tensor_class (this module sits below it)


def register_tensor_class(cls):
    """Called once by tensor.py: the engine creates and recognises Tensors of this class."""
    _TENSOR[:] = [cls]


def _version_refs(saved, args, arrays, outputs):
    """``(version counter, its value now, position, kind, index)`` for each saved array
    that is the data of an input (kind 0) or output (kind 1) Tensor, so ``saved_tensors``
    can detect in-place changes (through the tensor or any view sharing its counter) and
    double backward can reconnect it to the graph.  ``arrays`` are the arrays forward
    received (``args[i].data`` for a Tensor argument)."""
    Tensor = _TENSOR[0]
    refs = []
    position = 0
    for s in saved:
        if type(s) is np.ndarray:      # None, Python scalars: nothing to track
            index = 0
            for d in arrays:
                if d is s and isinstance(args[index], Tensor):
                    counter = args[index]._version
                    refs.append((counter, counter.value, position, 0, index))
                    break
                index += 1
            else:
                index = 0
                for t in outputs:
                    if t.data is s:
                        counter = t._version
                        refs.append((counter, counter.value, position, 1, index))
                        break
                    index += 1
        position += 1
    return refs


# --------------------------------------------------------------------------- engine

def _graph_order(roots):
    """In-edge count of every node reachable from ``roots`` (iterative: deep chains are fine)."""
    dependencies = {}
    stack = list(roots)
    root_set = set(roots)
    get = dependencies.get
    while stack:
        for child, _ in stack.pop().next_functions:
            if child is not None:
                count = get(child)
                if count is None:           # first edge into child: visit it once
                    dependencies[child] = 1
                    if child not in root_set:
                        stack.append(child)
                else:
                    dependencies[child] = count + 1
    return dependencies


def _needed(roots, targets):
    """Nodes that must run for gradients to reach a target node (post-order, iterative)."""
    needed = {}
    stack = [(r, False) for r in roots]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            flag = False
            for child, _ in node.next_functions:
                if child is not None and (child in targets or needed.get(child)):
                    flag = True
                    break
            needed[node] = flag
            continue
        if node in needed:
            continue
        needed[node] = False      # placeholder while its children are visited
        stack.append((node, True))
        for child, _ in node.next_functions:
            if child is not None and child not in needed:
                stack.append((child, False))
    return needed


def _run_hooks(node, index, g, graph, owned):
    """Apply the tensor hooks registered for output ``index`` of ``node``; retain_grad last."""
    hooks = node._tensor_hooks.get(index) if node._tensor_hooks else None
    if hooks:
        g, owned = _apply_hooks(hooks, g, graph, owned)
    retained = node._retained.get(index) if node._retained else None
    if retained is not None:
        t = retained()
        if t is not None:
            data = g.data if graph else g
            if t.grad is None:
                t.grad = np.array(data)
            else:
                t.grad = t.grad + data
    return g, owned


def _apply_hooks(hooks, g, graph, owned):
    Tensor = _TENSOR[0]
    if hooks:
        for fn in list(hooks.values()):
            arg = g if graph else Tensor._make(g)
            r = fn(arg)
            if r is None:
                continue
            check_hook_gradient(r, g.shape, fn, "tensor hook")
            if graph:
                r = r if isinstance(r, Tensor) else Tensor._make(np.asarray(r, dtype=g.dtype))
            else:
                r = np.asarray(r.data if isinstance(r, Tensor) else r)
                if r.dtype != g.dtype:
                    r = r.astype(g.dtype)
            if r.shape != g.shape:
                raise RuntimeError(f"A hook returned a gradient of shape {tuple(r.shape)}, but the tensor "
                                   f"has shape {tuple(g.shape)}")
            g = r
            owned = False
    return g, owned


def run_backward(tensors, grad_tensors, retain_graph=False, create_graph=False, inputs=None,
                 allow_unused=False):
    """Backpropagate ``grad_tensors`` (d loss / d tensor, one per tensor) through the graph.

    Without ``inputs``: accumulate into the ``.grad`` of every leaf reached.  With
    ``inputs`` (a list of Tensors): return their gradients instead and touch no ``.grad``
    (``autograd.grad``).  ``create_graph``: gradients are Tensors and the backward pass is
    recorded.
    """
    Tensor = _TENSOR[0]
    buffers = {}
    owned = {}
    roots = []
    for k, (t, g) in enumerate(zip(tensors, grad_tensors)):
        if not t.requires_grad:
            raise RuntimeError(f"element {k} of tensors does not require grad and does not have a grad_fn: "
                               f"nothing to backpropagate to (was it computed under mn.no_grad(), or "
                               f"from tensors without requires_grad=True?)")
        node, nr = t._gradient_edge()
        if node not in buffers:
            n_out = len(node._output_meta) if type(node) is BackwardNode else 1
            buffers[node] = [None] * n_out
            owned[node] = [False] * n_out
            roots.append(node)
        slot = buffers[node]
        slot[nr] = g if slot[nr] is None else slot[nr] + g
        owned[node][nr] = False

    targets = None
    if inputs is not None:
        targets = {}
        for k, t in enumerate(inputs):
            if not t.requires_grad:
                raise RuntimeError(f"One of the differentiated Tensors (input {k}) does not require grad")
            targets.setdefault(t._gradient_edge(), []).append(k)
        target_nodes = {node for node, _ in targets}
        needed = _needed(roots, target_nodes)
        captured = [None] * len(inputs)

    dependencies = _graph_order(roots)
    ready = [r for r in roots if dependencies.get(r, 0) == 0]
    prev_mode = grad_state.enabled
    grad_state.enabled = bool(create_graph)
    graph = bool(create_graph)
    direct = targets is None and not graph       # leaves may be accumulated as they are reached
    try:
        while ready:
            node = ready.pop()
            grads = buffers.pop(node, None)
            grads_owned = owned.pop(node, None)
            is_leaf = type(node) is AccumulateGrad
            if grads is not None:
                if is_leaf:
                    hooks = getattr(node.variable, "_hooks", None)
                    if hooks and grads[0] is not None:
                        grads[0], grads_owned[0] = _apply_hooks(hooks, grads[0], graph, grads_owned[0])
                elif node._tensor_hooks or node._retained:
                    for i, g in enumerate(grads):
                        if g is not None:
                            grads[i], grads_owned[i] = _run_hooks(node, i, g, graph, grads_owned[i])
                if targets is not None and node in target_nodes:
                    for i, g in enumerate(grads):
                        for k in targets.get((node, i), ()):
                            captured[k] = g if (graph or grads_owned[i]) else np.array(g)
            if is_leaf:
                if targets is None and grads is not None and grads[0] is not None:
                    g = grads[0]
                    if graph:
                        node.accumulate(g.data, False)
                    else:
                        node.accumulate(g, grads_owned[0])
                continue
            if targets is not None and not needed.get(node):
                continue
            if grads is None or (grads[0] is None and _all_none(grads)):
                input_grads = [None] * len(node.next_functions)
                raw = incoming = ()
            elif graph:
                input_grads = node.apply_graph(grads)
                raw = incoming = ()
            else:
                if not retain_graph and not node.ctx._released:
                    node.ctx.last_use = True
                input_grads, raw, incoming = node.apply(grads)
                if node.fn_cls._user:
                    raw = None        # a user's backward may return arrays it keeps: never own them
            i = 0
            for child, index in node.next_functions:
                if child is None:
                    i += 1
                    continue
                g = input_grads[i]
                if direct and g is not None and type(child) is AccumulateGrad \
                        and dependencies[child] == 1 and child not in buffers and not child.variable._hooks:
                    # The last edge into a leaf without hooks, and the only one with a gradient:
                    # accumulate now, as its own turn in the loop would
                    # (benchmarks/bench_autograd.py, mlp100).
                    child.accumulate(g, raw is not None and _is_fresh(g, i, raw, incoming, node.ctx._saved))
                    dependencies[child] = 0
                    i += 1
                    continue
                if g is not None:
                    slot = buffers.get(child)
                    if slot is None:
                        n_out = len(child._output_meta) if type(child) is BackwardNode else 1
                        if n_out == 1:
                            buffers[child] = [g]
                            owned[child] = [(not graph) and raw is not None and
                                            _is_fresh(g, i, raw, incoming, node.ctx._saved)]
                        else:
                            slot = buffers[child] = [None] * n_out
                            owned[child] = [False] * n_out
                    if slot is not None:
                        current = slot[index]
                        if current is None:
                            slot[index] = g
                            owned[child][index] = (not graph) and raw is not None and \
                                _is_fresh(g, i, raw, incoming, node.ctx._saved)
                        elif graph:
                            slot[index] = current + g
                        elif owned[child][index] and current.shape == g.shape and current.flags.writeable:
                            current += g
                        else:
                            slot[index] = current + g
                            owned[child][index] = True
                remaining = dependencies[child] - 1
                dependencies[child] = remaining
                if remaining == 0:
                    ready.append(child)
                i += 1
            if not retain_graph:
                node.release()
    finally:
        grad_state.enabled = prev_mode

    if targets is None:
        return None
    result = []
    for k, g in enumerate(captured):
        if g is None:
            if not allow_unused:
                raise RuntimeError(f"One of the differentiated Tensors (input {k}) appears to not have been "
                                   f"used in the graph. Set allow_unused=True if this is the desired behavior.")
            result.append(None)
        elif isinstance(g, Tensor):
            result.append(g)
        else:
            result.append(Tensor._make(g))
    return tuple(result)


def _all_none(grads):
    for g in grads:
        if g is not None:
            return False
    return True


def _is_fresh(g, position, raw, incoming, saved):
    """True when ``g`` is a new array that nothing else refers to (safe to add into in place)."""
    if g.base is not None or not g.flags.writeable:
        return False
    for other in incoming:
        if other is g:
            return False
    j = 0
    for other in raw:
        if other is g and j != position:
            return False
        j += 1
    for other in saved:
        if other is g:
            return False
    return True
