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
then visits the nodes in reverse topological order (iteratively, so a 10,000-op chain
is fine), calls each node's ``backward`` with the summed gradient of its output(s) and
hands the results to the nodes of its inputs.  Leaves end in ``AccumulateGrad``, which
adds into ``tensor.grad``.  Saved arrays are released as soon as a node has run, unless
``retain_graph=True``.
"""
import threading
import weakref

import numpy as np

__all__ = ["Function", "Context", "Node", "BackwardNode", "AccumulateGrad",
           "no_grad", "enable_grad", "is_grad_enabled", "set_grad_enabled", "detect_anomaly",
           "AnomalyError"]


# --------------------------------------------------------------------------- grad mode

class _GradModeState(threading.local):
    # Per thread, as in PyTorch: a backward or `no_grad` in one thread must not stop
    # graph recording in another. Class attribute = the default each new thread sees.
    enabled = True


_GradMode = _GradModeState()


def is_grad_enabled():
    """True when operations are recorded for backward (outside ``no_grad``)."""
    return _GradMode.enabled


class set_grad_enabled:
    """Context manager (and decorator) that turns graph recording on or off."""

    def __init__(self, mode):
        self.mode = bool(mode)
        self.prev = _GradMode.enabled
        _GradMode.enabled = self.mode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _GradMode.enabled = self.prev
        return False


class no_grad:
    """Context manager and decorator: nothing inside is recorded for backward.

    Example:
        >>> with mn.no_grad():
        ...     y = model(x)          # y.grad_fn is None, no buffers are kept
    """

    def __enter__(self):
        self.prev = _GradMode.enabled
        _GradMode.enabled = False
        return self

    def __exit__(self, *exc):
        _GradMode.enabled = self.prev
        return False

    def __call__(self, func):
        import functools

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self.__class__():
                return func(*args, **kwargs)
        return wrapper


class enable_grad(no_grad):
    """Context manager and decorator that records operations even inside ``no_grad``."""

    def __enter__(self):
        self.prev = _GradMode.enabled
        _GradMode.enabled = True
        return self


# --------------------------------------------------------------------------- anomaly mode

class _AnomalyModeState(threading.local):
    enabled = False


_AnomalyMode = _AnomalyModeState()


class AnomalyError(FloatingPointError):
    """Raised under ``detect_anomaly()`` when an op produces NaN or inf."""


class detect_anomaly:
    """Context manager: name the first op whose forward or backward produces NaN/inf.

    Checking every array costs a pass over it, so use it to hunt a NaN, not to train.

    Example:
        >>> with mn.detect_anomaly():
        ...     loss = model(x, training=True).log().sum()
        ...     loss.backward()   # AnomalyError: Function 'Log' returned nan/inf values ...
    """

    def __init__(self, enabled=True):
        self.enabled = bool(enabled)

    def __enter__(self):
        self.prev = _AnomalyMode.enabled
        _AnomalyMode.enabled = self.enabled
        return self

    def __exit__(self, *exc):
        _AnomalyMode.enabled = self.prev
        return False


def _check_finite(arrays, what):
    for i, a in enumerate(arrays):
        if a is None or not isinstance(a, np.ndarray) or a.dtype.kind not in "fc":
            continue
        if not np.all(np.isfinite(a)):
            n_nan = int(np.isnan(a).sum())
            n_inf = int(np.isinf(a).sum())
            raise AnomalyError(f"{what} {i} contains nan/inf values ({n_nan} nan, {n_inf} inf, "
                               f"shape {a.shape}, dtype {a.dtype})")


# --------------------------------------------------------------------------- ctx

_FREED = ("Trying to backward through the graph a second time (or to read saved arrays after "
          "they have been freed). Saved arrays are released when you call .backward(); "
          "call .backward(retain_graph=True) if you need to backward through the graph a second time.")


class Context:
    """The ``ctx`` a Function's forward and backward share.

    ``save_for_backward(*arrays)`` keeps arrays for backward (``ctx.saved_tensors``);
    ``needs_input_grad`` is a tuple of bools, one per positional forward argument.
    Any other attribute (``ctx.stride = 2``) may be set in forward and read in backward.
    """

    def __init__(self):
        self._saved = ()
        self._versions = None
        self._released = False
        self.needs_input_grad = ()
        self.non_differentiable = ()

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
            for ref, version, position in self._versions:
                tensor = ref()
                if tensor is not None and tensor._version.value != version:
                    raise RuntimeError(
                        f"One of the arrays needed for gradient computation has been modified by an "
                        f"in-place operation: saved array {position} of {self._node_name} (shape "
                        f"{tuple(tensor.shape)}, dtype {tensor.dtype}) is at version "
                        f"{tensor._version.value}; expected version {version}. Use an out-of-place "
                        f"operation (y = y + 1 instead of y += 1 / y.add_(1)) or .clone() first.")
        return self._saved

    def _release(self):
        self._saved = ()
        self._versions = None
        self._released = True
        keep = ("_saved", "_versions", "_released", "needs_input_grad", "non_differentiable", "_node_name")
        for name in [k for k in self.__dict__ if k not in keep]:
            del self.__dict__[name]


# --------------------------------------------------------------------------- nodes

class Node:
    """A node of the backward graph. ``next_functions`` lists ``(node, output_index)`` per input."""

    next_functions = ()

    def name(self):
        return type(self).__name__

    def __repr__(self):
        return f"<{self.name()}>"


class AccumulateGrad(Node):
    """Leaf node: adds the incoming gradient into ``variable.grad``."""

    def __init__(self, variable):
        self.variable = variable

    def accumulate(self, grad, owned):
        var = self.variable
        if grad.shape != var.data.shape:
            raise RuntimeError(f"AccumulateGrad: gradient of shape {grad.shape} does not match the "
                               f"leaf tensor's shape {var.data.shape}")
        if grad.dtype != var.data.dtype:
            grad = grad.astype(var.data.dtype)
            owned = True
        if var.grad is None:
            var.grad = grad if owned else grad.copy()
        else:
            var.grad += grad


class BackwardNode(Node):
    """The backward of one application of a Function (``SigmoidBackward``, ``AddmmBackward``...)."""

    def __init__(self, fn_cls, ctx, next_functions, input_meta, output_meta):
        self.fn_cls = fn_cls
        self.ctx = ctx
        self.next_functions = next_functions
        self._input_meta = input_meta        # (shape, dtype) or None per positional input
        self._output_meta = output_meta      # (shape, dtype) per output

    def name(self):
        return self.fn_cls._node_name()

    def apply(self, grads):
        ctx = self.ctx
        if ctx._released:
            raise RuntimeError(_FREED)
        for i, g in enumerate(grads):
            if g is None:
                shape, dtype = self._output_meta[i]
                grads[i] = np.zeros(shape, dtype=dtype)
        result = self.fn_cls.backward(ctx, *grads)
        if not isinstance(result, tuple):
            result = (result,)
        if _AnomalyMode.enabled:
            _check_finite(result, f"Function '{self.name()}' returned nan/inf values in its gradient for input")
        n_inputs = len(self._input_meta)
        if len(result) != n_inputs:
            raise RuntimeError(
                f"{self.fn_cls.__name__}.backward returned an incorrect number of gradients: expected "
                f"{n_inputs} (one per positional argument of forward, None for those that need none), "
                f"got {len(result)}")
        out = []
        for i, (g, meta) in enumerate(zip(result, self._input_meta)):
            if g is None or meta is None or self.next_functions[i][0] is None:
                out.append(None)
                continue
            g = np.asarray(g)
            shape, dtype = meta
            if g.shape != shape:
                if g.size == int(np.prod(shape, dtype=np.int64)) and g.ndim == 0:
                    g = g.reshape(shape)
                else:
                    raise RuntimeError(
                        f"{self.fn_cls.__name__}.backward returned a gradient of shape {g.shape} for "
                        f"input {i}, but that input has shape {shape}")
            if g.dtype != dtype:
                g = g.astype(dtype)
            out.append(g)
        return out, result, grads

    def release(self):
        self.ctx._release()


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

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("A Function subclass must implement forward(ctx, *args)")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("A Function subclass must implement backward(ctx, *grads)")

    @classmethod
    def _node_name(cls):
        return cls.node_name or f"{cls.__name__}Backward"

    @classmethod
    def apply(cls, *args, **kwargs):
        """Run forward on the arguments and record the backward node when needed."""
        Tensor = _tensor_class()

        record = _GradMode.enabled
        arrays = []
        needs = []
        any_needs = False
        for a in args:
            if isinstance(a, Tensor):
                arrays.append(a.data)
                r = record and a.requires_grad
                needs.append(r)
                any_needs = any_needs or r
            else:
                arrays.append(a)
                needs.append(False)
        ctx = Context()
        ctx.needs_input_grad = tuple(needs)
        raw = cls.forward(ctx, *arrays, **kwargs)
        multiple = isinstance(raw, tuple)
        raw_outputs = raw if multiple else (raw,)
        if _AnomalyMode.enabled:
            _check_finite(raw_outputs, f"Function '{cls.__name__}' returned nan/inf values in its forward output")
        outputs = []
        for r in raw_outputs:
            if isinstance(r, Tensor):
                raise TypeError(f"{cls.__name__}.forward must return ndarrays, not Tensors")
            outputs.append(Tensor._make(r if isinstance(r, np.ndarray) else np.asarray(r)))
        if any_needs:
            next_functions = []
            input_meta = []
            for a, r in zip(args, needs):
                if r:
                    next_functions.append(a._gradient_edge())
                    input_meta.append((a.data.shape, a.data.dtype))
                else:
                    next_functions.append((None, 0))
                    input_meta.append(None)
            output_meta = tuple((o.data.shape, o.data.dtype) for o in outputs)
            node = BackwardNode(cls, ctx, tuple(next_functions), tuple(input_meta), output_meta)
            ctx._node_name = node.name()
            for i, o in enumerate(outputs):
                if i in ctx.non_differentiable:
                    continue
                o.requires_grad = True
                o.grad_fn = node
                o._output_nr = i
            if ctx._saved:
                ctx._versions = _version_refs(ctx._saved, args, outputs)
        else:
            ctx._saved = ()
        return tuple(outputs) if multiple else outputs[0]


_TENSOR = []


def _tensor_class():
    """``Tensor`` (tensor.py imports this module, so it is looked up on first use and
    kept: an import statement per op costs ~0.6 us, a tenth of a small op's overhead)."""
    if not _TENSOR:
        from .tensor import Tensor
        _TENSOR.append(Tensor)
    return _TENSOR[0]


def _version_refs(saved, args, outputs):
    Tensor = _tensor_class()

    refs = []
    candidates = [a for a in args if isinstance(a, Tensor)] + list(outputs)
    for position, s in enumerate(saved):
        if s is None:
            continue
        for t in candidates:
            if s is t.data:
                refs.append((weakref.ref(t), t._version.value, position))
                break
    return refs


# --------------------------------------------------------------------------- engine

def run_backward(tensor, gradient, retain_graph=False):
    """Backpropagate ``gradient`` (d loss / d tensor) through the graph that made ``tensor``."""
    root = tensor.grad_fn
    if root is None:
        if not tensor.requires_grad:
            raise RuntimeError("element 0 of tensors does not require grad and does not have a grad_fn: "
                               "nothing to backpropagate to (was it computed under mn.no_grad(), or "
                               "from tensors without requires_grad=True?)")
        tensor._gradient_edge()[0].accumulate(gradient, owned=False)
        return

    # Count, for every node reachable from the root, how many edges lead into it.
    dependencies = {}
    stack = [root]
    seen = {root}
    while stack:
        node = stack.pop()
        for child, _ in node.next_functions:
            if child is None:
                continue
            dependencies[child] = dependencies.get(child, 0) + 1
            if child not in seen:
                seen.add(child)
                stack.append(child)

    buffers = {root: [None] * len(root._output_meta)}
    buffers[root][tensor._output_nr] = gradient
    owned = {}  # (node, index) -> True when the buffer array is ours to add into
    ready = [root]
    prev_mode = _GradMode.enabled
    _GradMode.enabled = False
    try:
        while ready:
            node = ready.pop()
            grads = buffers.pop(node, None)
            if isinstance(node, AccumulateGrad):
                if grads is not None and grads[0] is not None:
                    node.accumulate(grads[0], owned.pop((node, 0), False))
                continue
            if grads is None or all(g is None for g in grads):
                input_grads = [None] * len(node.next_functions)
                raw = ()
                incoming = ()
            else:
                for i in range(len(grads)):
                    owned.pop((node, i), None)
                input_grads, raw, incoming = node.apply(grads)
            for i, (child, index) in enumerate(node.next_functions):
                if child is None:
                    continue
                g = input_grads[i]
                if g is not None:
                    slot = buffers.get(child)
                    if slot is None:
                        n_out = len(child._output_meta) if isinstance(child, BackwardNode) else 1
                        slot = buffers[child] = [None] * n_out
                    current = slot[index]
                    if current is None:
                        slot[index] = g
                        owned[(child, index)] = _is_fresh(g, i, raw, incoming)
                    elif owned.get((child, index)) and current.shape == g.shape and current.flags.writeable:
                        current += g
                    else:
                        slot[index] = current + g
                        owned[(child, index)] = True
                dependencies[child] -= 1
                if dependencies[child] == 0:
                    ready.append(child)
            if not retain_graph:
                node.release()
    finally:
        _GradMode.enabled = prev_mode


def _is_fresh(g, position, raw, incoming):
    """True when ``g`` is a new array that nothing else refers to (safe to add into in place)."""
    if g.base is not None or not g.flags.writeable:
        return False
    for other in incoming:
        if other is g:
            return False
    for j, other in enumerate(raw):
        if j != position and other is g:
            return False
    return True
