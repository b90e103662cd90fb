"""Finite-difference gradient checking (``mn.gradcheck``)."""
import numpy as np

from .differentiate import grad
from .grad_mode import enable_grad, no_grad
from .tensor import Tensor

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    """Raised by ``gradcheck`` when the analytical and numerical gradients disagree."""


def _outputs(result):
    if isinstance(result, Tensor):
        return [result]
    if isinstance(result, (tuple, list)):
        return [r for r in result if isinstance(r, Tensor)]
    raise TypeError(f"gradcheck: `fn` must return a Tensor or a tuple of Tensors. "
                    f"Received: {type(result).__name__}")


def gradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, seed=0):
    """Compare backward's gradients with central finite differences in float64.

    The check projects the outputs on a fixed random direction ``v`` and compares
    ``d(sum(v * fn(inputs)))/d(input)`` from ``backward`` with
    ``(f(x + eps) - f(x - eps)) / (2 eps)`` element by element, for every input that
    requires grad.  An element passes when ``|analytical - numerical| <= atol + rtol * |numerical|``.

    Args:
        fn: a callable taking the inputs and returning a Tensor (or tuple of Tensors), or
            a Layer / model: then ``inputs`` is its input and all its parameters are
            checked too (the layer is run as it is, so put it in eval mode or use
            deterministic layers).
        inputs: a Tensor or a tuple of Tensors / arrays. Those with ``requires_grad=True``
            must be float64.
        eps: finite-difference step.
        atol, rtol: tolerances.
        raise_exception: raise ``GradcheckError`` on failure (else return False).

    Returns:
        True when every element agrees.

    Example:
        >>> x = mn.tensor(np.random.rand(3, 4) + 0.5, requires_grad=True)
        >>> mn.gradcheck(lambda t: (t * t).sigmoid(), (x,))
        True
    """
    if isinstance(inputs, (Tensor, np.ndarray)):
        inputs = (inputs,)
    inputs = tuple(inputs)
    checked = [t for t in inputs if isinstance(t, Tensor) and t.requires_grad]
    call = fn
    if hasattr(fn, "parameters") and callable(getattr(fn, "parameters")) and hasattr(fn, "build"):
        layer = fn
        checked = checked + [p for p in layer.parameters() if p.requires_grad]
        call = layer
    if not checked:
        raise ValueError("gradcheck: no input requires grad; create inputs with requires_grad=True")
    for t in checked:
        if t.dtype != np.float64:
            raise TypeError(f"gradcheck needs float64 tensors for finite differences to be accurate. "
                            f"Received: a tensor of shape {t.shape} with dtype {t.dtype}")

    def evaluate():
        return _outputs(call(*inputs))

    outs = evaluate()
    rng = np.random.default_rng(seed)
    directions = [rng.standard_normal(o.shape) for o in outs]

    for t in checked:
        t.grad = None
    total = None
    for o, v in zip(outs, directions):
        if not o.requires_grad:
            continue
        term = (o * v).sum()
        total = term if total is None else total + term
    if total is not None:
        total.backward()
    analytical = [np.zeros(t.shape) if t.grad is None else t.grad.copy() for t in checked]

    def projected():
        with no_grad():
            return sum(float(np.sum(o.data * v)) for o, v in zip(evaluate(), directions))

    worst = None
    for k, t in enumerate(checked):
        flat = t.data.reshape(-1)
        if not t.data.flags.c_contiguous:
            raise ValueError("gradcheck: inputs must be C-contiguous")
        numerical = np.zeros(flat.size)
        for i in range(flat.size):
            orig = flat[i]
            flat[i] = orig + eps
            plus = projected()
            flat[i] = orig - eps
            minus = projected()
            flat[i] = orig
            numerical[i] = (plus - minus) / (2 * eps)
        a = analytical[k].reshape(-1)
        err = np.abs(a - numerical) - (atol + rtol * np.abs(numerical))
        if err.size and err.max() > 0:
            i = int(np.argmax(err))
            index = np.unravel_index(i, t.shape)
            cand = (err[i], k, index, a[i], numerical[i])
            if worst is None or cand[0] > worst[0]:
                worst = cand
    for t in checked:
        t.grad = None
    if worst is not None:
        _, k, index, a_val, n_val = worst
        msg = (f"gradcheck failed for input {k} (shape {checked[k].shape}) at index {tuple(int(i) for i in index)}: "
               f"analytical {a_val:.8g} vs numerical {n_val:.8g} "
               f"(|diff| = {abs(a_val - n_val):.3g}, allowed {atol + rtol * abs(n_val):.3g})")
        if raise_exception:
            raise GradcheckError(msg)
        return False
    return True


def gradgradcheck(fn, inputs, grad_outputs=None, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, seed=0):
    """Check second derivatives: ``gradcheck`` of the function that maps the inputs (and the
    output gradients ``v``) to ``autograd.grad(fn(inputs), inputs, v, create_graph=True)``.

    Args:
        fn, inputs, eps, atol, rtol, raise_exception: as ``gradcheck``.
        grad_outputs: the ``v`` per output (float64 Tensors); random when None. Those that
            require grad are checked too.

    Example:
        >>> x = mn.tensor(np.random.rand(3) + 0.5, requires_grad=True)
        >>> mn.autograd.gradgradcheck(lambda t: t.log().sin(), (x,))
        True
    """
    if isinstance(inputs, (Tensor, np.ndarray)):
        inputs = (inputs,)
    inputs = tuple(inputs)
    diff = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]
    if not diff:
        raise ValueError("gradgradcheck: no input requires grad; create inputs with requires_grad=True")
    with enable_grad():
        outs = _outputs(fn(*inputs))
    outs = [o for o in outs if o.requires_grad]
    if grad_outputs is None:
        rng = np.random.default_rng(seed + 1)
        grad_outputs = tuple(Tensor(rng.standard_normal(o.shape), requires_grad=True) for o in outs)
    elif isinstance(grad_outputs, Tensor):
        grad_outputs = (grad_outputs,)
    grad_outputs = tuple(grad_outputs)
    n_in = len(inputs)

    def first_derivatives(*args):
        xs, vs = args[:n_in], args[n_in:]
        with enable_grad():
            ys = [o for o in _outputs(fn(*xs)) if o.requires_grad]
            return grad(ys, [xs[i] for i in diff], grad_outputs=list(vs), create_graph=True,
                        allow_unused=True, materialize_grads=True)

    return gradcheck(first_derivatives, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception, seed=seed)
