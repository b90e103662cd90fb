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
import numpy as np

from .backward_node import BackwardNode
from .context import Context
from .engine import run_backward
from .grad_mode import (AnomalyError, anomaly_state, check_finite, detect_anomaly, enable_grad, grad_state,
                        is_grad_enabled, no_grad, set_grad_enabled)
from .nodes import TENSOR_CLASS, AccumulateGrad, HookDict, Node, RemovableHandle, register_tensor_class

__all__ = ["Function", "Context", "Node", "BackwardNode", "AccumulateGrad", "once_differentiable", "HookDict",
           "register_tensor_class", "run_backward",
           "no_grad", "enable_grad", "is_grad_enabled", "set_grad_enabled", "detect_anomaly",
           "AnomalyError", "RemovableHandle"]

# Old names, kept importable from here for code outside the autograd package (being
# moved to minnet.autograd.grad_mode's public grad_state / anomaly_state).
_GradMode = grad_state
_AnomalyMode = anomaly_state
_check_finite = check_finite

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
        """Run forward on the arguments' arrays; when an input needs a gradient, attach one
        backward node (``<Name>Backward``) to the outputs."""
        # The arguments' arrays, and which need a gradient (recorded only in grad mode).
        # This and the one-output case below are inline, not helpers: two calls less per
        # operation, 0.2-0.4 us of its ~6 us (benchmarks/bench_autograd.py "mlp100 (fwd+bwd)").
        Tensor = TENSOR_CLASS[0]
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
        needs = tuple(needs)
        ctx = Context()
        ctx.needs_input_grad = needs
        raw = cls.forward(ctx, *arrays, **kwargs)
        if type(raw) is np.ndarray and not cls.is_view and not anomaly_state.enabled:
            outputs = (Tensor._make(raw),)      # one output, not a view, no anomaly check
        else:
            outputs = _wrap_outputs(cls, raw, args, arrays)
        if any_needs:
            _record(cls, ctx, args, arrays, needs, outputs)
        elif ctx._saved:
            ctx._saved = ()         # no backward will read them
        return outputs if isinstance(raw, tuple) else outputs[0]

def _wrap_outputs(cls, raw, args, arrays):
    """Forward's result (an ndarray or a tuple of them) as a tuple of output Tensors; the
    output of a view op shares its input's version counter."""
    make = TENSOR_CLASS[0]._make
    if type(raw) is np.ndarray:     # the common case: one ndarray output
        raw_outputs = (raw,)
        out = make(raw)
        outputs = (out,)
        if cls.is_view and raw.base is not None and isinstance(args[0], TENSOR_CLASS[0]) \
                and np.may_share_memory(raw, arrays[0]):
            out._version = args[0]._version
    else:
        raw_outputs = raw if isinstance(raw, tuple) else (raw,)
        outputs = []
        for r in raw_outputs:
            if isinstance(r, TENSOR_CLASS[0]):
                raise TypeError(f"{cls.__name__}.forward must return ndarrays, not Tensors")
            outputs.append(make(r if isinstance(r, np.ndarray) else np.asarray(r)))
        outputs = tuple(outputs)
    if anomaly_state.enabled:
        check_finite(raw_outputs, f"Function '{cls.__name__}' returned nan/inf values in its forward output")
    return outputs

def _record(cls, ctx, args, arrays, needs, outputs):
    """Attach the backward node of this application to the outputs that carry a gradient
    (floating outputs not marked non-differentiable) and note the saved arrays' versions."""
    next_functions = []
    input_meta = []
    for a, r in zip(args, needs):
        if r:
            fn = a.grad_fn
            next_functions.append((fn, a._output_nr) if fn is not None else a._gradient_edge())
            d = a.data
            input_meta.append((d.shape, d.dtype))
        else:
            next_functions.append(_NO_EDGE)
            input_meta.append(None)
    if len(outputs) == 1:
        d = outputs[0].data
        output_meta = ((d.shape, d.dtype),)
    else:
        output_meta = tuple([(o.data.shape, o.data.dtype) for o in outputs])
    node = BackwardNode(cls, ctx, tuple(next_functions), _shared_meta(tuple(input_meta)),
                        _shared_meta(output_meta))
    ctx._fn_cls = cls
    non_diff = ctx.non_differentiable
    i = 0
    for o in outputs:
        if o.data.dtype.kind in "fc" and not (non_diff and i in non_diff):
            # integer/bool outputs (indices, masks) carry no gradient
            o.requires_grad = True
            o.grad_fn = node
            o._output_nr = i
        i += 1
    if ctx._saved:
        versions = _version_refs(ctx._saved, args, arrays, outputs)
        if versions:
            ctx._versions = versions

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

def _version_refs(saved, args, arrays, outputs):
    """``(version counter, its value now, position, kind, index)`` for each saved array
    that is the data of an input (kind 0) or output (kind 1) Tensor, so ``saved_tensors``
    can detect in-place changes (through the tensor or any view sharing its counter) and
    double backward can reconnect it to the graph.  ``arrays`` are the arrays forward
    received (``args[i].data`` for a Tensor argument)."""
    Tensor = TENSOR_CLASS[0]
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
