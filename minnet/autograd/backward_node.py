"""``BackwardNode``: the backward of one application of a Function, run on ndarrays
(``apply``) or, under ``create_graph=True``, recorded with Tensor operations
(``apply_graph``)."""
import weakref

import numpy as np

from .context import FREED_MESSAGE, RELEASED
from .grad_mode import anomaly_state, check_finite
from .nodes import TENSOR_CLASS, AccumulateGrad, Node

__all__ = ["BackwardNode"]


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
            raise RuntimeError(FREED_MESSAGE)
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
                    g = np.asarray(g.data if isinstance(g, TENSOR_CLASS[0]) else g)
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
        Tensor = TENSOR_CLASS[0]
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
            raise RuntimeError(FREED_MESSAGE)
        Tensor = TENSOR_CLASS[0]
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
        self.ctx = RELEASED

