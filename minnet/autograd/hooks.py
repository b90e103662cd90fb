"""Hooks on layers (``register_forward_pre_hook``, ``register_forward_hook``,
``register_full_backward_hook``), as ``torch.nn.Module``'s.

A full backward hook sees the gradients with respect to a layer's input and output:
``hook(layer, grad_input, grad_output)``.  It is wired with two identity Functions: one on
the layer's output (its backward receives ``grad_output``) and one on its input (its
backward receives ``grad_input`` and may replace it with what the hook returns).
"""
import numpy as np

from minnet._checks import check_hook_gradient

from .function import Function, HookDict
from .tensor import Tensor

__all__ = ["HookDict", "call_with_hooks"]


def _as_tensor(g):
    return g if g is None or isinstance(g, Tensor) else Tensor._make(g)


def _as_grad(r, like):
    if r is None:
        return None
    if isinstance(like, Tensor):
        return r if isinstance(r, Tensor) else Tensor._make(np.asarray(r, dtype=like.dtype))
    return np.asarray(r.data if isinstance(r, Tensor) else r, dtype=like.dtype)


class _State:
    def __init__(self, layer, hooks):
        self.layer = layer
        self.hooks = hooks
        self.grad_output = None
        self.input_wrapped = False

    def run(self, grad_input):
        for hook in self.hooks:
            result = hook(self.layer, grad_input, self.grad_output)
            if result is not None:
                result = tuple(result) if isinstance(result, (tuple, list)) else (result,)
                if len(result) != len(grad_input):
                    raise RuntimeError(f"A backward hook of layer '{self.layer.name}' returned {len(result)} "
                                       f"gradients; expected {len(grad_input)} (one per input)")
                for new, old in zip(result, grad_input):
                    check_hook_gradient(new, None if old is None else old.shape, hook,
                                        f"backward hook of layer '{self.layer.name}'")
                grad_input = result
        return grad_input


class _BackwardHookOutput(Function):
    node_name = "BackwardHookFunctionBackward"

    @staticmethod
    def forward(ctx, x, state=None):
        ctx.state = state
        return x.view()

    @staticmethod
    def backward(ctx, g):
        state = ctx.state
        state.grad_output = (_as_tensor(g),)
        if not state.input_wrapped:          # nothing upstream to wait for
            state.run((None,))
        return g

    backward_graph = backward


class _BackwardHookInput(Function):
    node_name = "BackwardHookFunctionBackward"

    @staticmethod
    def forward(ctx, x, state=None):
        ctx.state = state
        return x.view()

    @staticmethod
    def backward(ctx, g):
        (new,) = ctx.state.run((_as_tensor(g),))
        return g if new is None else _as_grad(new, g)

    backward_graph = backward


def call_with_hooks(layer, call, x, training, pre_hooks, forward_hooks, backward_hooks):
    """Run ``call(x, training)`` with the layer's hooks around it."""
    for hook in list(pre_hooks.values()) if pre_hooks else ():
        result = hook(layer, (x,))
        if result is not None:
            x = result[0] if isinstance(result, tuple) else result
    state = None
    if backward_hooks:
        state = _State(layer, list(backward_hooks.values()))
        if isinstance(x, Tensor) and x.requires_grad:
            x = _BackwardHookInput.apply(x, state=state)
            state.input_wrapped = True
    out = call(x, training)
    for hook in list(forward_hooks.values()) if forward_hooks else ():
        result = hook(layer, (x,), out)
        if result is not None:
            out = result
    if state is not None and isinstance(out, Tensor) and out.requires_grad:
        out = _BackwardHookOutput.apply(out, state=state)
    return out
