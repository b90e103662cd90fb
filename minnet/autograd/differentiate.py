"""``mn.autograd.grad`` and ``mn.autograd.backward``: the engine's two entry points."""
import numpy as np

from .function import run_backward
from .tensor import Tensor, root_gradient

__all__ = ["grad", "backward"]


def _as_tensor_list(value, name):
    if isinstance(value, Tensor):
        return [value]
    if isinstance(value, (list, tuple)) and all(isinstance(v, Tensor) for v in value):
        return list(value)
    raise TypeError(f"Invalid argument `{name}`: expected a Tensor or a sequence of Tensors. "
                    f"Received: {type(value).__name__}")


def _root_gradients(outputs, grad_outputs, create_graph, name):
    if grad_outputs is None:
        grad_outputs = [None] * len(outputs)
    elif isinstance(grad_outputs, (Tensor, np.ndarray)):
        grad_outputs = [grad_outputs]
    else:
        grad_outputs = list(grad_outputs)
    if len(grad_outputs) != len(outputs):
        raise ValueError(f"Invalid argument `{name}`: expected {len(outputs)} gradients (one per "
                         f"output). Received: {len(grad_outputs)}")
    return [root_gradient(t, g, create_graph, name) for t, g in zip(outputs, grad_outputs)]


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         allow_unused=False, materialize_grads=False):
    """The gradients of ``outputs`` with respect to ``inputs``, returned (as PyTorch's).

    Nothing is accumulated into any ``.grad``.  With ``create_graph=True`` the backward
    pass is recorded, so the returned gradients can be differentiated again (gradient
    penalties, Hessian-vector products, meta-learning).

    Args:
        outputs: a Tensor or a sequence of Tensors.
        inputs: a Tensor or a sequence of Tensors that require grad.
        grad_outputs: d(loss)/d(output) per output (Tensor, array or None for a scalar output).
        retain_graph: keep the graph for another backward (default: ``create_graph``).
        create_graph: record the backward (gradients are Tensors with a ``grad_fn``).
        allow_unused: return None for an input the outputs do not depend on (else an error).
        materialize_grads: return zeros instead of None for unused inputs.

    Returns:
        A tuple of Tensors (or None), one per input.

    Example:
        >>> x = mn.tensor([1.0, 2.0], requires_grad=True)
        >>> (g,) = mn.autograd.grad((x ** 3).sum(), x, create_graph=True)   # 3x^2
        >>> (h,) = mn.autograd.grad(g.sum(), x)                             # 6x
    """
    outputs = _as_tensor_list(outputs, "outputs")
    inputs = _as_tensor_list(inputs, "inputs")
    if not inputs:
        raise ValueError("Invalid argument `inputs`: expected at least one Tensor. Received: an empty sequence")
    if retain_graph is None:
        retain_graph = create_graph
    roots = _root_gradients(outputs, grad_outputs, create_graph, "grad_outputs")
    result = run_backward(outputs, roots, retain_graph=retain_graph, create_graph=create_graph,
                          inputs=inputs, allow_unused=allow_unused or materialize_grads)
    if materialize_grads:
        result = tuple(Tensor._make(np.zeros_like(t.data)) if g is None else g for g, t in zip(result, inputs))
    return result


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False):
    """Accumulate into ``.grad`` the gradients of ``tensors`` (the sum over all of them)."""
    tensors = _as_tensor_list(tensors, "tensors")
    if retain_graph is None:
        retain_graph = create_graph
    roots = _root_gradients(tensors, grad_tensors, create_graph, "grad_tensors")
    run_backward(tensors, roots, retain_graph=retain_graph, create_graph=create_graph)
