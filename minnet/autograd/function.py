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

    # Class-level defaults instead of an __init__: one Context per op, so the five
    # attribute stores an __init__ would do are a measurable share of a small op.
    _saved = ()
    _versions = None
    _released = False
    needs_input_grad = ()
    non_differentiable = ()

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
                        f"in-place operation: saved array {position} of {self._fn_cls._node_name()} (shape "
                        f"{tuple(tensor.shape)}, dtype {tensor.dtype}) is at version "
                        f"{tensor._version.value}; expected version {version}. Use an out-of-place "
                        f"operation (y = y + 1 instead of y += 1 / y.add_(1)) or .clone() first.")
        return self._saved

    def _release(self):
        keep = ("needs_input_grad", "non_differentiable", "_fn_cls")
        d = self.__dict__
        for name in [k for k in d if k not in keep]:
            del d[name]
        self._released = True


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
        next_functions = self.next_functions
        for i, (g, meta) in enumerate(zip(result, self._input_meta)):
            if g is None or meta is None or next_functions[i][0] is None:
                out.append(None)
                continue
            if type(g) is not np.ndarray:
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
        Tensor = _TENSOR[0] if _TENSOR else _tensor_class()

        record = _GradMode.enabled
        arrays = []
        any_needs = False
        for a in args:
            if isinstance(a, Tensor):
                arrays.append(a.data)
                if record and a.requires_grad:
                    any_needs = True
            else:
                arrays.append(a)
        ctx = Context()
        if any_needs:
            needs = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
            ctx.needs_input_grad = needs
        else:
            ctx.needs_input_grad = (False,) * len(args)
        raw = cls.forward(ctx, *arrays, **kwargs)
        make = Tensor._make
        if type(raw) is np.ndarray:  # the common case: one ndarray output
            multiple = False
            outputs = [make(raw)]
            raw_outputs = (raw,)
        else:
            multiple = isinstance(raw, tuple)
            raw_outputs = raw if multiple else (raw,)
            outputs = []
            for r in raw_outputs:
                if isinstance(r, Tensor):
                    raise TypeError(f"{cls.__name__}.forward must return ndarrays, not Tensors")
                outputs.append(make(r if isinstance(r, np.ndarray) else np.asarray(r)))
        if _AnomalyMode.enabled:
            _check_finite(raw_outputs, f"Function '{cls.__name__}' returned nan/inf values in its forward output")
        if any_needs:
            next_functions = []
            input_meta = []
            for a, r in zip(args, needs):
                if r:
                    next_functions.append(a.grad_fn is not None and (a.grad_fn, a._output_nr)
                                          or a._gradient_edge())
                    d = a.data
                    input_meta.append((d.shape, d.dtype))
                else:
                    next_functions.append((None, 0))
                    input_meta.append(None)
            if multiple:
                output_meta = tuple((r.shape, r.dtype) for r in (o.data for o in outputs))
            else:
                output_meta = ((raw.shape, raw.dtype),)
            node = BackwardNode(cls, ctx, tuple(next_functions), tuple(input_meta), output_meta)
            ctx._fn_cls = cls
            non_diff = ctx.non_differentiable
            for i, o in enumerate(outputs):
                if non_diff and i in non_diff:
                    continue
                o.requires_grad = True
                o.grad_fn = node
                o._output_nr = i
            if ctx._saved:
                ctx._versions = _version_refs(ctx._saved, args, outputs)
        elif ctx._saved:
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
    """``(weakref to tensor, its version now, position)`` for each saved array that is the
    data of an input or output Tensor, so ``saved_tensors`` can detect in-place changes."""
    Tensor = _TENSOR[0]
    refs = []
    for position, s in enumerate(saved):
        if s is None:
            continue
        found = None
        for t in args:
            if isinstance(t, Tensor) and s is t.data:
                found = t
                break
        else:
            for t in outputs:
                if s is t.data:
                    found = t
                    break
        if found is not None:
            refs.append((weakref.ref(found), found._version.value, position))
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

    # Count, for every node reachable from the root, how many edges lead into it (the
    # root is no node's child: the graph is acyclic).
    dependencies = {}
    stack = [root]
    while stack:
        node = stack.pop()
        for child, _ in node.next_functions:
            if child is None:
                continue
            if child in dependencies:
                dependencies[child] += 1
            else:
                dependencies[child] = 1
                stack.append(child)

    # Per node: the summed gradient of each output, and whether that array is ours to add
    # into in place (a fresh array nothing else refers to).
    n_root = len(root._output_meta)
    buffers = {root: [None] * n_root}
    buffers[root][tensor._output_nr] = gradient
    owned = {root: [False] * n_root}
    ready = [root]
    prev_mode = _GradMode.enabled
    _GradMode.enabled = False
    try:
        while ready:
            node = ready.pop()
            grads = buffers.pop(node, None)
            grads_owned = owned.pop(node, None)
            if type(node) is AccumulateGrad or isinstance(node, AccumulateGrad):
                if grads is not None and grads[0] is not None:
                    node.accumulate(grads[0], grads_owned[0])
                continue
            if grads is None or _all_none(grads):
                input_grads = [None] * len(node.next_functions)
                raw = ()
                incoming = ()
            else:
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
                        owned[child] = [False] * n_out
                    current = slot[index]
                    if current is None:
                        slot[index] = g
                        owned[child][index] = _is_fresh(g, i, raw, incoming)
                    elif owned[child][index] and current.shape == g.shape and current.flags.writeable:
                        current += g
                    else:
                        slot[index] = current + g
                        owned[child][index] = True
                remaining = dependencies[child] - 1
                dependencies[child] = remaining
                if remaining == 0:
                    ready.append(child)
            if not retain_graph:
                node.release()
    finally:
        _GradMode.enabled = prev_mode


def _all_none(grads):
    for g in grads:
        if g is not None:
            return False
    return True


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
