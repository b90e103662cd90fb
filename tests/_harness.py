"""The shared test harness: one tolerance table, and one three-way check of an op.

Every op is tested three ways (docs/internals.md, STYLE.md): against a plain NumPy
reference, by a float64 finite-difference ``gradcheck``, and against PyTorch when it is
installed. ``check_three_ways`` does all three; ``check_forward``, ``check_gradcheck`` and
``check_torch`` are its parts, for tests that keep one pytest item per way (so a missing
torch shows up as a skip through the ``torch`` fixture instead of passing in silence).

Tolerances come from ``TOLERANCES[kind][dtype]`` (``dtype`` may be ``np.float32``,
``np.dtype("float32")`` or ``"float32"``). Every entry says why it is as loose as it is;
a test that can be tighter uses a tighter entry, never a looser one.

The tests folder is on ``sys.path`` (``pythonpath = ["tests"]`` in pyproject.toml), so a
test module anywhere under ``tests/`` imports it as ``from _harness import ...``.
"""
import numpy as np

import minnet as mn

__all__ = ["TOLERANCES", "ByDtype", "check_forward", "check_gradcheck", "check_torch",
           "check_three_ways", "torch_or_none"]

DTYPES = (np.float32, np.float64)


class ByDtype(dict):
    """``{np.float32: {...}, np.float64: {...}}`` that also answers to a dtype or its name."""

    def __getitem__(self, dtype):
        return dict.__getitem__(self, np.dtype(dtype).type)


def _entry(float32, float64):
    (r32, a32), (r64, a64) = float32, float64
    return ByDtype({np.float32: dict(rtol=r32, atol=a32), np.float64: dict(rtol=r64, atol=a64)})


# (rtol, atol) for float32 and for float64, compared with a float64 reference computed from
# the same (already rounded) inputs. float32's machine epsilon is 1.2e-7, float64's 2.2e-16.
TOLERANCES = {
    # A result built from a few reductions (batch mean/variance, a convolution layer's sums
    # over C*kh*kw, normalisation of a row) rounded in float32: about 1e3 terms, each adding
    # its rounding; float64 loses about as many ulps.
    "default": _entry((1e-4, 1e-5), (1e-10, 1e-12)),
    # BLAS GEMMs (linear, im2col convolution, Winograd's transforms, the recurrent input
    # projection): dot products of hundreds of terms in a blocked order that differs from
    # NumPy's, so float32 error grows like sqrt(K) * eps times the magnitudes summed.
    "gemm": _entry((2e-4, 2e-5), (1e-10, 1e-12)),
    # Recurrent layers: GEMM error compounded over the time steps of the forward pass and
    # again through backpropagation through time (gates saturate, so errors are amplified
    # where derivatives are large); float64 needs one decade more than "gemm".
    "recurrent": _entry((2e-4, 2e-5), (1e-9, 1e-11)),
    # One transcendental per element (exp, expm1, tanh, log) or a softmax row: a few ulps.
    "elementwise": _entry((1e-5, 1e-6), (1e-12, 1e-13)),
    # Composite activations (GELU's erf or tanh form, softplus inside mish, swish's
    # x * sigmoid(x)): two or three transcendentals chained, each rounding in float32.
    "composite_elementwise": _entry((2e-5, 2e-6), (1e-12, 1e-13)),
    # Short sums: a pooling window, the small Dense layers of the layer tests (tens of terms);
    # float64's atol is 1e-12 because windows average values of order 1.
    "short_sum": _entry((1e-5, 1e-6), (1e-12, 1e-12)),
    # Functional losses: log-softmax and a mean over the batch in float32; float64 keeps the
    # log-sum-exp's cancellation error (about 1e-12 relative).
    "loss": _entry((1e-5, 1e-6), (1e-11, 1e-12)),
    # Keras loss objects: on top of "loss", probability clipping, logit conversion and
    # weighted reductions (sum of weights, divide): more roundings chained.
    "keras_loss": _entry((2e-5, 1e-6), (1e-10, 1e-12)),
    # _ext activation kernels against the same formula in NumPy: one correctly rounded
    # transcendental and one multiply per element, so a couple of ulps suffices.
    "kernel_elementwise": _entry((2e-6, 1e-7), (1e-13, 1e-15)),
    # _ext pooling kernels: max is exact; an average of at most a window of values adds a
    # few ulps (atol 1e-6 covers averages of mixed-sign values that nearly cancel).
    "kernel_pooling": _entry((1e-6, 1e-6), (1e-13, 1e-13)),
    # _ext dropout kernels: one multiply by the mask and the scale per element.
    "kernel_dropout": _entry((1e-6, 1e-7), (1e-14, 1e-15)),
    # _ext batch-norm kernels: double accumulators, but the normalisation and the affine
    # map are computed in the data's dtype (atol 1e-5 for values that cancel near zero).
    "kernel_batchnorm": _entry((1e-5, 1e-5), (1e-12, 1e-12)),
    # The fuzzer draws random shapes, strides and paddings for the GEMM kernels: outputs
    # near zero from long cancelling sums need an atol as large as the rtol.
    "fuzz": _entry((2e-4, 2e-4), (1e-10, 1e-10)),
}


def torch_or_none():
    """The torch module, or None when PyTorch is not installed."""
    try:
        import torch
    except ImportError:
        return None
    return torch


def _is_float_array(value):
    return isinstance(value, np.ndarray) and value.dtype.kind == "f"


def _cast(inputs, dtype):
    """Float arrays cast to ``dtype``; anything else (int labels, None, ints) as it is."""
    return [np.ascontiguousarray(a, dtype=dtype) if _is_float_array(a) else a for a in inputs]


def _grad_indices(inputs, grad_inputs):
    if grad_inputs is None:
        return tuple(i for i, a in enumerate(inputs) if _is_float_array(a))
    return tuple(grad_inputs)


def _tensors(arrays, grad_indices):
    return [mn.tensor(a, requires_grad=i in grad_indices) if _is_float_array(a) else a
            for i, a in enumerate(arrays)]


def check_forward(fn, reference, inputs, dtype, kind="default", tol=None):
    """``fn(*tensors)`` equals ``reference(*float64 arrays)``, with the input's dtype and shape.

    Args:
        fn: the minnet op; takes one Tensor per float array of ``inputs`` (other items,
            e.g. int labels, are passed as they are) and returns a Tensor.
        reference: the NumPy formula; receives the same inputs, float arrays cast to
            ``dtype`` and then promoted to float64 (so only the op's rounding is measured).
        inputs: a sequence of arrays (and other arguments).
        dtype: ``np.float32`` or ``np.float64``.
        kind: the ``TOLERANCES`` entry; ``tol`` (a ``dict(rtol=, atol=)``) overrides it.

    Returns:
        The op's output Tensor.
    """
    tol = TOLERANCES[kind][dtype] if tol is None else tol
    arrays = _cast(inputs, dtype)
    out = fn(*_tensors(arrays, ()))
    expected = np.asarray(reference(*[a.astype(np.float64) if _is_float_array(a) else a
                                      for a in arrays]))
    assert isinstance(out, mn.Tensor), f"expected a Tensor, got {type(out).__name__}"
    assert out.dtype == np.dtype(dtype), f"dtype {out.dtype} for {np.dtype(dtype)} inputs"
    assert out.shape == expected.shape, f"shape {out.shape}, the reference has {expected.shape}"
    np.testing.assert_allclose(out.numpy(), expected, **tol,
                               err_msg=f"forward against the NumPy reference ({np.dtype(dtype)})")
    return out


def check_gradcheck(fn, inputs, grad_inputs=None, gradgrad=False, **gradcheck_kwargs):
    """float64 finite differences (``mn.gradcheck``, and ``mn.autograd.gradgradcheck``).

    Raises ``mn.GradcheckError`` naming the input and the element that disagrees.

    Args:
        fn, inputs: as ``check_forward``; float arrays are cast to float64.
        grad_inputs: indices of the inputs to differentiate (default: every float array).
        gradgrad: check second derivatives too.
        **gradcheck_kwargs: ``eps``, ``atol``, ``rtol`` of ``mn.gradcheck``.
    """
    arrays = _cast(inputs, np.float64)
    tensors = _tensors(arrays, _grad_indices(arrays, grad_inputs))
    assert mn.gradcheck(fn, tensors, **gradcheck_kwargs)
    if gradgrad:
        assert mn.autograd.gradgradcheck(fn, tensors, **gradcheck_kwargs)
    return True


def check_torch(fn, torch_fn, inputs, dtype, kind="default", torch=None, grad_inputs=None,
                tol=None, grad_tol=None, seed=0):
    """Forward and gradients equal PyTorch's, for one random upstream gradient.

    Args:
        fn, inputs, dtype, kind, tol: as ``check_forward``.
        torch_fn: the PyTorch op; takes one ``torch.Tensor`` per array of ``inputs`` (int
            arrays become int64 tensors, as PyTorch's labels).
        torch: the torch module (the ``torch`` fixture); imported when None.
        grad_inputs: as ``check_gradcheck``.
        grad_tol: the gradients' tolerance when it must differ from the forward's (say why
            at the call).
        seed: seeds the random upstream gradient.

    Returns:
        False when torch is not installed (nothing checked), else True.
    """
    torch = torch_or_none() if torch is None else torch
    if torch is None:
        return False
    tol = TOLERANCES[kind][dtype] if tol is None else tol
    grad_tol = tol if grad_tol is None else grad_tol
    arrays = _cast(inputs, dtype)
    grads = _grad_indices(arrays, grad_inputs)
    ours = _tensors(arrays, grads)
    out = fn(*ours)
    upstream = np.random.default_rng(seed).standard_normal(out.shape).astype(out.dtype)
    out.backward(upstream)
    theirs = [torch.tensor(a, requires_grad=i in grads) if isinstance(a, np.ndarray) else a
              for i, a in enumerate(arrays)]
    expected = torch_fn(*theirs)
    expected.backward(torch.tensor(upstream))
    where = f"({np.dtype(dtype)})"
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), **tol,
                               err_msg=f"forward against PyTorch {where}")
    for i in grads:
        assert ours[i].grad is not None, f"input {i} got no gradient"
        np.testing.assert_allclose(ours[i].grad, theirs[i].grad.numpy(), **grad_tol,
                                   err_msg=f"gradient of input {i} against PyTorch {where}")
    return True


def check_three_ways(fn, reference, inputs, torch_fn=None, kind="default", dtypes=DTYPES,
                     grad_inputs=None, gradgrad=False, torch=None, **gradcheck_kwargs):
    """The NumPy reference for every dtype, float64 gradcheck, PyTorch parity when installed.

    Returns:
        ``{"numpy": [dtypes checked], "gradcheck": True, "torch": [dtypes checked]}``;
        ``"torch"`` is empty when ``torch_fn`` is None or PyTorch is not installed.
    """
    done = {"numpy": [], "gradcheck": False, "torch": []}
    for dtype in dtypes:
        check_forward(fn, reference, inputs, dtype, kind)
        done["numpy"].append(dtype)
    done["gradcheck"] = check_gradcheck(fn, inputs, grad_inputs, gradgrad, **gradcheck_kwargs)
    torch = torch_or_none() if torch is None and torch_fn is not None else torch
    if torch_fn is not None and torch is not None:
        for dtype in dtypes:
            check_torch(fn, torch_fn, inputs, dtype, kind, torch, grad_inputs)
            done["torch"].append(dtype)
    return done
