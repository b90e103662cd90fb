"""minnet.functional losses: NumPy reference, float64 gradcheck, PyTorch parity."""
import warnings

import numpy as np
import pytest

import minnet as mn
import minnet.functional as F

from _harness import TOLERANCES

DTYPES = [np.float32, np.float64]
REDUCTIONS = ["mean", "sum", "none"]
TOL = TOLERANCES["loss"]


def _reduce(v, reduction):
    return v.mean() if reduction == "mean" else v.sum() if reduction == "sum" else v


def _log_softmax(x):
    m = x.max(axis=1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=1, keepdims=True))


# ----------------------------------------------------------------------- NumPy references

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("eps", [0.0, 0.1])
@pytest.mark.parametrize("shape", [(1, 1), (1, 10), (5, 3), (64, 10)])
def test_cross_entropy_matches_numpy(rng, dtype, reduction, eps, shape):
    x = (rng.standard_normal(shape) * 2).astype(dtype)
    labels = rng.integers(0, shape[1], shape[0])
    t = (1 - eps) * np.eye(shape[1])[labels] + eps / shape[1]
    ref = _reduce(-(t * _log_softmax(x.astype(np.float64))).sum(1), reduction)
    out = F.cross_entropy(x, labels, label_smoothing=eps, reduction=reduction)
    assert out.dtype == dtype and out.shape == np.shape(ref)
    np.testing.assert_allclose(out.numpy(), ref, **TOL[dtype])
    # Probability targets give the same loss as the labels they encode.
    soft = F.cross_entropy(x, np.eye(shape[1], dtype=dtype)[labels], label_smoothing=eps,
                           reduction=reduction)
    np.testing.assert_allclose(soft.numpy(), ref, **TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_elementwise_losses_match_numpy(rng, dtype, reduction):
    p = rng.random((3, 7)).astype(dtype) * 0.98 + 0.01
    t = rng.random((3, 7)).astype(dtype)
    x = (rng.standard_normal((3, 7)) * 3).astype(dtype)
    d = x.astype(np.float64) - t
    p64, t64, x64 = p.astype(np.float64), t.astype(np.float64), x.astype(np.float64)
    cases = [
        (F.mse_loss(x, t, reduction=reduction), d * d),
        (F.l1_loss(x, t, reduction=reduction), np.abs(d)),
        (F.huber_loss(x, t, delta=1.5, reduction=reduction),
         np.where(np.abs(d) < 1.5, 0.5 * d * d, 1.5 * (np.abs(d) - 0.75))),
        (F.binary_cross_entropy(p, t, reduction=reduction),
         -(t64 * np.log(p64) + (1 - t64) * np.log(1 - p64))),
        (F.binary_cross_entropy_with_logits(x, t, reduction=reduction),
         -(t64 * np.log(1 / (1 + np.exp(-x64))) + (1 - t64) * np.log(1 - 1 / (1 + np.exp(-x64))))),
    ]
    for out, values in cases:
        assert out.dtype == dtype
        np.testing.assert_allclose(out.numpy(), _reduce(values, reduction), **TOL[dtype])


def test_nll_loss_matches_numpy(rng):
    lp = _log_softmax(rng.standard_normal((6, 4)))
    labels = rng.integers(0, 4, 6)
    np.testing.assert_allclose(F.nll_loss(lp, labels).item(), -lp[np.arange(6), labels].mean())
    np.testing.assert_allclose(F.nll_loss(lp, labels, reduction="none").numpy(),
                               -lp[np.arange(6), labels])


# ----------------------------------------------------------------------- gradcheck (float64)

@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_gradcheck_all_losses(rng, reduction):
    x = mn.tensor(rng.standard_normal((4, 5)), requires_grad=True)
    t = mn.tensor(rng.random((4, 5)), requires_grad=True)
    p = mn.tensor(rng.random((4, 5)) * 0.9 + 0.05, requires_grad=True)
    labels = rng.integers(0, 5, 4)
    r = reduction
    assert mn.gradcheck(lambda a: F.cross_entropy(a, labels, reduction=r), (x,))
    assert mn.gradcheck(lambda a: F.cross_entropy(a, labels, label_smoothing=0.3, reduction=r), (x,))
    assert mn.gradcheck(lambda a, b: F.cross_entropy(a, b, label_smoothing=0.2, reduction=r), (x, t))
    assert mn.gradcheck(lambda a: F.nll_loss(a, labels, reduction=r), (x,))
    assert mn.gradcheck(lambda a, b: F.mse_loss(a, b, reduction=r), (x, t))
    assert mn.gradcheck(lambda a, b: F.l1_loss(a, b, reduction=r), (x, t))
    assert mn.gradcheck(lambda a, b: F.huber_loss(a, b, delta=0.5, reduction=r), (x, t))
    assert mn.gradcheck(lambda a, b: F.binary_cross_entropy(a, b, reduction=r), (p, t))
    assert mn.gradcheck(lambda a, b: F.binary_cross_entropy_with_logits(a, b, reduction=r), (x, t))


def test_node_names(rng):
    x = mn.tensor(rng.standard_normal((2, 3)), requires_grad=True)
    names = {
        "CrossEntropyLossBackward": F.cross_entropy(x, np.array([0, 2])),
        "NllLossBackward": F.nll_loss(x, np.array([0, 2])),
        "MseLossBackward": F.mse_loss(x, np.zeros((2, 3))),
        "L1LossBackward": F.l1_loss(x, np.zeros((2, 3))),
        "HuberLossBackward": F.huber_loss(x, np.zeros((2, 3))),
        "BinaryCrossEntropyBackward": F.binary_cross_entropy(F.sigmoid(x), np.zeros((2, 3))),
        "BinaryCrossEntropyWithLogitsBackward": F.binary_cross_entropy_with_logits(x, np.zeros((2, 3))),
    }
    for name, out in names.items():
        assert out.grad_fn.name() == name
    assert F.cross_entropy(x, np.full((2, 3), 1 / 3)).grad_fn.name() == "CrossEntropyLossBackward"


def test_cross_entropy_keeps_logits_and_row_lse_only(rng):
    x = mn.tensor(rng.standard_normal((8, 5)), requires_grad=True)
    out = F.cross_entropy(x, rng.integers(0, 5, 8))
    logits, lse = out.grad_fn.ctx.saved_tensors
    assert logits is x.data and lse.shape == (8,)


# ----------------------------------------------------------------------- PyTorch parity

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("eps", [0.0, 0.1])
def test_cross_entropy_matches_torch(torch, rng, dtype, reduction, eps):
    x = (rng.standard_normal((7, 4)) * 3).astype(dtype)
    labels = rng.integers(0, 4, 7)
    probs = rng.random((7, 4)).astype(dtype)
    probs /= probs.sum(1, keepdims=True)
    g = rng.standard_normal(7).astype(dtype) if reduction == "none" else np.array(1.7, dtype)
    for target in (labels, probs):
        xm = mn.tensor(x, requires_grad=True)
        tm = mn.tensor(target, requires_grad=target.dtype.kind == "f")
        out = F.cross_entropy(xm, tm, label_smoothing=eps, reduction=reduction)
        out.backward(g)
        xt = torch.tensor(x, requires_grad=True)
        tt = torch.tensor(target, requires_grad=target.dtype.kind == "f")
        ref = torch.nn.functional.cross_entropy(xt, tt, label_smoothing=eps, reduction=reduction)
        ref.backward(torch.tensor(g))
        np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), **TOL[dtype])
        np.testing.assert_allclose(xm.grad, xt.grad.numpy(), **TOL[dtype])
        if target.dtype.kind == "f":
            np.testing.assert_allclose(tm.grad, tt.grad.numpy(), **TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_regression_and_bce_losses_match_torch(torch, rng, dtype, reduction):
    tF = torch.nn.functional
    x = (rng.standard_normal((5, 6)) * 2).astype(dtype)
    t = rng.random((5, 6)).astype(dtype)
    p = (rng.random((5, 6)) * 0.98 + 0.01).astype(dtype)
    g = rng.standard_normal((5, 6)).astype(dtype) if reduction == "none" else np.array(0.7, dtype)
    cases = [
        (F.mse_loss, tF.mse_loss, x, {}),
        (F.l1_loss, tF.l1_loss, x, {}),
        (lambda a, b, **k: F.huber_loss(a, b, delta=0.8, **k),
         lambda a, b, **k: tF.huber_loss(a, b, delta=0.8, **k), x, {}),
        (F.binary_cross_entropy, tF.binary_cross_entropy, p, {}),
        (F.binary_cross_entropy_with_logits, tF.binary_cross_entropy_with_logits, x, {}),
    ]
    for ours, theirs, inp, _ in cases:
        im, tm = mn.tensor(inp, requires_grad=True), mn.tensor(t, requires_grad=True)
        out = ours(im, tm, reduction=reduction)
        out.backward(g)
        it, tt = torch.tensor(inp, requires_grad=True), torch.tensor(t, requires_grad=True)
        ref = theirs(it, tt, reduction=reduction)
        ref.backward(torch.tensor(g))
        np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), **TOL[dtype])
        np.testing.assert_allclose(im.grad, it.grad.numpy(), **TOL[dtype])
        np.testing.assert_allclose(tm.grad, tt.grad.numpy(), **TOL[dtype])


def test_mse_target_grad_is_minus_input_grad(rng):
    a = mn.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    b = mn.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    F.mse_loss(a, b).backward()
    np.testing.assert_array_equal(b.grad, -a.grad)
    np.testing.assert_allclose(a.grad, 2 * (a.data - b.data) / 12)


def test_bce_clamps_log_as_torch(torch):
    p = np.array([0.0, 1.0, 0.0, 1.0], np.float32)
    t = np.array([1.0, 0.0, 0.0, 1.0], np.float32)
    with np.errstate(all="raise"):
        ours = F.binary_cross_entropy(p, t, reduction="none").numpy()
    np.testing.assert_allclose(ours, [100, 100, 0, 0])
    ref = torch.nn.functional.binary_cross_entropy(torch.tensor(p), torch.tensor(t), reduction="none")
    np.testing.assert_allclose(ours, ref.numpy())


# ----------------------------------------------------------------------- extremes, threads

@pytest.mark.parametrize("dtype", DTYPES)
def test_extreme_logits_no_overflow_no_warnings(dtype):
    x = np.array([[1e4, -1e4, 0.0], [-1e4, -1e4, -1e4], [-1e4, 1e4, 1e4]], dtype)
    labels = np.array([1, 2, 0])
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        for make in (lambda t: F.cross_entropy(t, labels, label_smoothing=0.1),
                     lambda t: F.cross_entropy(t, np.full((3, 3), 1 / 3, dtype)),
                     lambda t: F.binary_cross_entropy_with_logits(t, np.ones((3, 3), dtype)),
                     lambda t: F.mse_loss(t, np.zeros((3, 3), dtype))):
            xt = mn.tensor(x, requires_grad=True)
            out = make(xt)
            out.backward()
            assert np.isfinite(out.item()) and np.all(np.isfinite(xt.grad))
    np.testing.assert_allclose(F.binary_cross_entropy_with_logits(x, np.ones((3, 3), dtype),
                                                                  reduction="none").numpy()[0],
                               [0, 1e4, np.log(2)], rtol=1e-6)


def test_thread_count_independent(rng):
    x = rng.standard_normal((5000, 10)).astype(np.float32)
    labels = rng.integers(0, 10, 5000)
    previous = mn.get_num_threads()
    try:
        results = []
        for n in (1, 2):
            mn.set_num_threads(n)
            xt = mn.tensor(x, requires_grad=True)
            loss = F.cross_entropy(xt, labels) + F.mse_loss(xt, np.zeros_like(x))
            loss.backward()
            results.append((loss.item(), xt.grad))
        assert results[0][0] == results[1][0]
        np.testing.assert_array_equal(results[0][1], results[1][1])
    finally:
        mn.set_num_threads(previous)


# ----------------------------------------------------------------------- bad input

def test_bad_arguments():
    x = np.zeros((3, 4), np.float32)
    with pytest.raises(ValueError, match=r"`target`.*\[0, 4\).*Received: a label -1"):
        F.cross_entropy(x, np.array([0, -1, 2]))
    with pytest.raises(ValueError, match=r"`target`.*\[0, 4\).*Received: .*4.* at flat index 1"):
        F.nll_loss(x, np.array([0, 4, 2]))
    with pytest.raises(ValueError, match=r"`target`.*\[0, 4\).*Received: a label 7"):
        F.cross_entropy(x, np.array([0, 7, 2]))           # caught inside the kernel's row loop
    with pytest.raises(ValueError, match="18446744073709551615"):
        F.cross_entropy(x, np.array([0, 2**64 - 1, 2], dtype=np.uint64))   # never wrapped to -1
    with pytest.raises(ValueError, match=r"`target`.*\(3,\)"):
        F.cross_entropy(x, np.array([0, 1]))
    with pytest.raises(ValueError, match="`target`.*integer"):
        F.cross_entropy(x, np.array([0.5, 1.0, 2.0]))
    assert np.isfinite(F.cross_entropy(x, np.array([0.0, 1.0, 2.0])).item())   # whole floats ok
    with pytest.raises(ValueError, match="`logits`.*2-D"):
        F.cross_entropy(np.zeros(4), np.array([0]))
    with pytest.raises(ValueError, match="`reduction`.*Received: reduction='avg'"):
        F.mse_loss(x, x, reduction="avg")
    with pytest.raises(ValueError, match="`label_smoothing`"):
        F.cross_entropy(x, np.array([0, 1, 2]), label_smoothing=-0.1)
    with pytest.raises(ValueError, match=r"`target`.*\(3, 4\).*\(4, 3\)"):
        F.mse_loss(x, np.zeros((4, 3)))
    with pytest.raises(ValueError, match="`delta`"):
        F.huber_loss(x, x, delta=0)
    with pytest.raises(ValueError, match="`input`.*probabilities"):
        F.binary_cross_entropy(np.array([0.5, 1.5]), np.array([1.0, 0.0]))
    with pytest.raises(ValueError, match="`input`.*probabilities"):
        F.binary_cross_entropy(np.array([np.nan]), np.array([1.0]))


def test_sparse_labels_are_scanned_at_most_once_per_loss_call(monkeypatch):
    """Validate once: int64 labels with from_logits=True are checked by the cross-entropy
    kernel inside its row loop, with no Python scan; other labels (int32, or the
    probability path, which gathers with them) are scanned once by the loss object, and
    functional does not scan them again."""
    import minnet.functional._losses as functional_losses
    from minnet import _checks, losses
    calls = []

    def counting(*args, **kwargs):
        calls.append(args[0])
        return _checks.check_labels(*args, **kwargs)

    monkeypatch.setattr(losses.probabilistic, "check_labels", counting)
    monkeypatch.setattr(functional_losses, "check_labels", counting)
    logits = mn.tensor(np.zeros((5, 3)), requires_grad=True)
    labels = np.array([0, 1, 2, 1, 0], dtype=np.int64)
    losses.SparseCategoricalCrossentropy(from_logits=True)(labels, logits).backward()
    assert calls == []
    losses.SparseCategoricalCrossentropy(from_logits=True)(labels.astype(np.int32), logits)
    losses.SparseCategoricalCrossentropy()(labels, np.full((5, 3), 1 / 3))
    assert calls == ["y_true", "y_true"]


@pytest.mark.parametrize("shape", [(5,), (5, 1)])
@pytest.mark.parametrize("bad", [3, -1])
def test_sparse_label_out_of_range_found_by_the_kernel_names_y_true(shape, bad):
    """The kernel's check (int64 labels, from_logits=True) reports as the loss's own check
    does: the argument `y_true`, the value and its flat index."""
    labels = np.array([0, 1, 2, 1, 0], dtype=np.int64)
    labels[3] = bad
    logits = mn.tensor(np.zeros((5, 3), np.float32), requires_grad=True)
    loss = mn.losses.SparseCategoricalCrossentropy(from_logits=True)
    with pytest.raises(ValueError, match=rf"`y_true`: expected class labels in \[0, 3\)\. "
                                         rf"Received: {bad} at flat index 3"):
        loss(labels.reshape(shape), logits)
    assert logits.grad is None
