"""Loss objects: NumPy references (float32/float64), float64 gradcheck, PyTorch parity,
Keras's argument order (with the swapped-call warning), Keras's reductions, sample_weight,
label/shape errors, warnings, lookup through the registry."""
import warnings

import numpy as np
import pytest

import minnet as mn
from minnet import losses

from _harness import TOLERANCES

TOL = TOLERANCES["keras_loss"]
EPS = 1e-7


# ---- NumPy references (element-wise / per-sample losses, float64) ----------------------

def _log_softmax(x):
    x = x - x.max(axis=-1, keepdims=True)
    return x - np.log(np.exp(x).sum(axis=-1, keepdims=True))


def ref_mse(t, p):
    return (p - t) ** 2


def ref_mae(t, p):
    return np.abs(p - t)


def ref_huber(t, p, delta=1.0):
    d = np.abs(p - t)
    return np.where(d <= delta, 0.5 * d * d, delta * (d - 0.5 * delta))


def ref_bce(t, p):
    return -(t * np.maximum(np.log(p), -100) + (1 - t) * np.maximum(np.log1p(-p), -100))


def ref_bce_logits(t, x):
    return np.maximum(x, 0) - x * t + np.log1p(np.exp(-np.abs(x)))


def ref_cce(t, p, from_logits, smoothing=0.0):
    c = p.shape[-1]
    t = (1 - smoothing) * t + smoothing / c
    logq = _log_softmax(p) if from_logits else np.log(np.clip(p / p.sum(-1, keepdims=True), EPS,
                                                              1 - EPS))   # Keras renormalises
    return -(t * logq).sum(axis=-1)


def ref_scce(labels, p, from_logits):
    logq = _log_softmax(p) if from_logits else np.log(np.clip(p / p.sum(-1, keepdims=True), EPS,
                                                              1 - EPS))
    return -np.take_along_axis(logq, labels[..., None], axis=-1)[..., 0]


ELEMENTWISE = ("mse", "mae", "huber", "bce", "bce_logits")


def _per_sample(kind, values):
    """Keras: element-wise losses are averaged over the last axis, one value per sample."""
    return values.mean(axis=-1) if kind in ELEMENTWISE and values.ndim >= 2 else values


def _reduce(values, reduction, weight=None):
    """Keras 3's reductions of per-sample values."""
    if weight is not None:
        values = values * weight
    return {"none": values, "sum": values.sum(), "mean": values.mean(),
            "sum_over_batch_size": values.mean()}[reduction]


def _softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _case(kind, rng, shape, dtype):
    """(loss, y_true, y_pred, reference per-element function) for one loss kind."""
    n_classes = shape[-1]
    logits = rng.standard_normal(shape) * 2
    if kind == "mse":
        return losses.MeanSquaredError, rng.standard_normal(shape), logits, ref_mse
    if kind == "mae":
        return losses.MeanAbsoluteError, rng.standard_normal(shape), logits, ref_mae
    if kind == "huber":
        return (lambda **kw: losses.Huber(delta=0.7, **kw)), rng.standard_normal(shape), logits, \
            (lambda t, p: ref_huber(t, p, 0.7))
    if kind == "bce":
        return losses.BinaryCrossentropy, rng.integers(0, 2, shape).astype(dtype), \
            1 / (1 + np.exp(-logits)), ref_bce
    if kind == "bce_logits":
        return (lambda **kw: losses.BinaryCrossentropy(from_logits=True, **kw)), \
            rng.random(shape), logits, ref_bce_logits
    if kind == "cce":
        return losses.CategoricalCrossentropy, np.eye(n_classes)[rng.integers(0, n_classes, shape[:-1])], \
            _softmax(logits), (lambda t, p: ref_cce(t, p, False))
    if kind == "cce_logits":
        return (lambda **kw: losses.CategoricalCrossentropy(from_logits=True, **kw)), \
            _softmax(rng.standard_normal(shape)), logits, (lambda t, p: ref_cce(t, p, True))
    if kind == "scce":
        return losses.SparseCategoricalCrossentropy, rng.integers(0, n_classes, shape[:-1]), \
            _softmax(logits), (lambda t, p: ref_scce(t, p, False))
    if kind == "scce_logits":
        return (lambda **kw: losses.SparseCategoricalCrossentropy(from_logits=True, **kw)), \
            rng.integers(0, n_classes, shape[:-1]), logits, (lambda t, p: ref_scce(t, p, True))
    raise AssertionError(kind)


KINDS = ["mse", "mae", "huber", "bce", "bce_logits", "cce", "cce_logits", "scce", "scce_logits"]
SHAPES = [(1, 3), (7, 5), (4, 2)]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_matches_numpy_reference(kind, shape, dtype, reduction, rng):
    make, y_true, y_pred, ref = _case(kind, rng, shape, dtype)
    y_pred = y_pred.astype(dtype)
    if y_true.dtype.kind == "f":
        y_true = y_true.astype(dtype)
    out = make(reduction=reduction)(y_true, mn.tensor(y_pred, requires_grad=True))
    assert isinstance(out, mn.Tensor) and out.dtype == dtype
    expected = _reduce(_per_sample(kind, ref(y_true.astype(np.float64) if y_true.dtype.kind == "f"
                                             else y_true, y_pred.astype(np.float64))), reduction)
    np.testing.assert_allclose(out.numpy(), expected, **TOL[dtype])


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_gradcheck_float64(kind, reduction, rng):
    make, y_true, y_pred, _ = _case(kind, rng, (3, 4), np.float64)
    if kind in ("bce", "cce", "scce"):  # keep probabilities away from the clip points
        y_pred = np.clip(y_pred, 0.05, 0.95)
    loss = make(reduction=reduction)
    x = mn.tensor(y_pred, requires_grad=True)
    assert mn.gradcheck(lambda p: loss(y_true, p), (x,))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_gradient_reaches_the_target(reduction, rng):
    p = mn.tensor(rng.standard_normal((3, 2)), requires_grad=True)
    t = mn.tensor(rng.standard_normal((3, 2)), requires_grad=True)
    loss = losses.MeanSquaredError(reduction=reduction)
    assert mn.gradcheck(lambda a, b: loss(b, a), (p, t))
    loss(t, p).sum().backward()
    np.testing.assert_allclose(t.grad, -p.grad)


def test_sample_weight_gradcheck(rng):
    p = mn.tensor(rng.standard_normal((5, 3)), requires_grad=True)
    t = rng.integers(0, 3, 5)
    w = rng.random(5)
    loss = losses.SparseCategoricalCrossentropy(from_logits=True)
    assert mn.gradcheck(lambda x: loss(t, x, sample_weight=w), (p,))


# ---- PyTorch parity: forward and gradients, both argument orders ----------------------

def _torch_loss(torch, kind, reduction):
    nn = torch.nn
    if kind == "mse":
        return nn.MSELoss(reduction=reduction)
    if kind == "mae":
        return nn.L1Loss(reduction=reduction)
    if kind == "huber":
        return nn.HuberLoss(reduction=reduction, delta=0.7)
    if kind == "bce":
        return nn.BCELoss(reduction=reduction)
    if kind == "bce_logits":
        return nn.BCEWithLogitsLoss(reduction=reduction)
    if kind in ("cce_logits", "scce_logits"):
        return nn.CrossEntropyLoss(reduction=reduction)
    if kind in ("cce", "scce"):
        nll = nn.NLLLoss(reduction=reduction)

        def loss(p, t):
            # Keras's probabilities: rows rescaled to sum 1 first (the gradient includes it)
            logq = torch.log(torch.clamp(p / p.sum(-1, keepdim=True), EPS, 1 - EPS))
            if kind == "scce":
                return nll(logq, t)
            per_sample = -(t * logq).sum(dim=-1)
            return _reduce_torch(per_sample, reduction)
        return loss
    raise AssertionError(kind)


def _reduce_torch(values, reduction):
    return {"none": values, "sum": values.sum(), "mean": values.mean()}[reduction]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("reduction", ["sum_over_batch_size", "sum", "none"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_pytorch_parity(torch, kind, reduction, dtype, rng):
    make, y_true, y_pred, _ = _case(kind, rng, (6, 5), dtype)
    y_pred = y_pred.astype(dtype)
    if y_true.dtype.kind == "f":
        y_true = y_true.astype(dtype)
    x = mn.tensor(y_pred, requires_grad=True)
    loss = make(reduction=reduction)
    out = loss(y_true, x)
    upstream = rng.standard_normal(out.shape).astype(dtype)
    (out * upstream).sum().backward()

    tx = torch.tensor(y_pred, requires_grad=True)
    tt = torch.tensor(y_true)
    if reduction == "sum_over_batch_size":      # Keras's default is PyTorch's "mean"
        expected = _torch_loss(torch, kind, "mean")(tx, tt)
    else:                                       # Keras: per-sample values first
        per_sample = _torch_loss(torch, kind, "none")(tx, tt)
        if kind in ELEMENTWISE:
            per_sample = per_sample.mean(dim=-1)
        expected = _reduce_torch(per_sample, reduction)
    (expected * torch.tensor(upstream)).sum().backward()
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), **TOL[dtype])
    np.testing.assert_allclose(x.grad, tx.grad.numpy(), **TOL[dtype])


@pytest.mark.parametrize("from_logits", [True, False])
@pytest.mark.parametrize("smoothing", [0.1, 0.35])
def test_label_smoothing_matches_pytorch(torch, from_logits, smoothing, rng):
    labels = rng.integers(0, 4, 5)
    logits = rng.standard_normal((5, 4))
    one_hot = np.eye(4)[labels]
    x = mn.tensor(logits if from_logits else _softmax(logits), requires_grad=True)
    out = losses.CategoricalCrossentropy(from_logits=from_logits, label_smoothing=smoothing)(one_hot, x)
    out.backward()
    tx = torch.tensor(x.numpy(), requires_grad=True)
    if from_logits:
        expected = torch.nn.CrossEntropyLoss(label_smoothing=smoothing)(tx, torch.tensor(labels))
    else:
        target = torch.tensor((1 - smoothing) * one_hot + smoothing / 4)
        expected = -(target * torch.log(torch.clamp(tx / tx.sum(-1, keepdim=True), EPS,
                                                    1 - EPS))).sum(-1).mean()
    expected.backward()
    np.testing.assert_allclose(out.item(), expected.item(), rtol=1e-10)
    np.testing.assert_allclose(x.grad, tx.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_bce_label_smoothing(rng):
    t = rng.integers(0, 2, (4, 1)).astype(np.float64)
    x = rng.standard_normal((4, 1))
    out = losses.BinaryCrossentropy(from_logits=True, label_smoothing=0.2)(t, mn.tensor(x))
    np.testing.assert_allclose(out.item(), ref_bce_logits(t * 0.8 + 0.1, x).mean(), rtol=1e-12)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_ignore_class_matches_pytorch_ignore_index(torch, reduction, rng):
    labels = np.array([0, 3, -1, 2, -1, 1])
    logits = rng.standard_normal((6, 4))
    x = mn.tensor(logits, requires_grad=True)
    out = losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=-1, reduction=reduction)(labels, x)
    out.sum().backward() if reduction == "none" else out.backward()
    tx = torch.tensor(logits, requires_grad=True)
    expected = torch.nn.CrossEntropyLoss(ignore_index=-1, reduction=reduction)(tx, torch.tensor(labels))
    expected.sum().backward()
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=1e-10)
    np.testing.assert_allclose(x.grad, tx.grad.numpy(), rtol=1e-10, atol=1e-14)


def test_target_gradient_matches_pytorch(torch, rng):
    p, t = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))
    a, b = mn.tensor(p, requires_grad=True), mn.tensor(t, requires_grad=True)
    losses.MeanSquaredError()(b, a).backward()
    ta, tb = torch.tensor(p, requires_grad=True), torch.tensor(t, requires_grad=True)
    torch.nn.MSELoss()(ta, tb).backward()
    np.testing.assert_allclose(a.grad, ta.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(b.grad, tb.grad.numpy(), rtol=1e-12)


# ---- argument order: Keras's, always; a call that looks swapped warns -------------------

def test_keras_order_is_never_guessed(rng):
    logits = rng.standard_normal((5, 3))
    labels = rng.integers(0, 3, 5)
    scce = losses.SparseCategoricalCrossentropy(from_logits=True)
    assert scce(labels, logits).item() == pytest.approx(ref_scce(labels, logits, True).mean())
    assert scce(labels[:, None], logits).item() == pytest.approx(ref_scce(labels, logits, True).mean())
    with pytest.raises(ValueError, match=r"Keras's order loss\(y_true, y_pred\)"):
        scce(logits, labels)
    # Both plain arrays: taken as (y_true, y_pred), computed as asked.
    p = 1 / (1 + np.exp(-logits[:, :1]))
    t = (rng.random((5, 1)) > 0.5).astype(np.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert losses.BinaryCrossentropy()(t, p).item() == pytest.approx(ref_bce(t, p).mean())
        assert losses.BinaryCrossentropy()(t, mn.tensor(p, requires_grad=True)).item() == \
            pytest.approx(ref_bce(t, p).mean())


def test_pytorch_order_bce_under_no_grad_warns_at_the_callers_line(rng):
    """Issue 17: BinaryCrossentropy()(pred, target) with float Tensors under no_grad."""
    pred = mn.tensor(np.array([0.2, 0.7, 0.9, 0.4], np.float32))
    target = mn.tensor(np.array([0.0, 1.0, 1.0, 0.0], np.float32))
    with mn.no_grad():
        with pytest.warns(UserWarning, match=r"look swapped.*y_true, y_pred.*\(input, target\)") as record:
            losses.BinaryCrossentropy()(pred, target)
    assert record[0].filename == __file__
    with mn.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error")
        value = losses.BinaryCrossentropy()(target, pred).item()
    assert value == pytest.approx(ref_bce(target.numpy().astype(np.float64),
                                          pred.numpy().astype(np.float64)).mean(), rel=1e-6)


def test_pytorch_order_categorical_one_hot_warns(rng):
    probs = _softmax(rng.standard_normal((4, 3)))
    one_hot = np.eye(3)[[0, 2, 1, 0]]
    with pytest.warns(UserWarning, match="one-hot rows"):
        losses.CategoricalCrossentropy()(probs, one_hot)
    with pytest.warns(UserWarning, match="one-hot rows"):
        losses.CategoricalFocalCrossentropy()(probs, one_hot)


def test_graph_carrying_y_true_against_plain_y_pred_warns(rng):
    x = mn.tensor(rng.standard_normal((4, 2)), requires_grad=True)
    out = x * 2.0                                      # a model output: carries a grad_fn
    with pytest.warns(UserWarning, match="carries a graph from an operation"):
        losses.MeanSquaredError()(out, rng.standard_normal((4, 2)))


def test_target_that_requires_grad_does_not_warn_and_gets_its_gradient(rng):
    p = mn.tensor(rng.standard_normal((3, 2)))                     # no graph
    t = mn.tensor(rng.standard_normal((3, 2)), requires_grad=True)  # a leaf that requires grad
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        losses.MeanSquaredError()(t, p).backward()
    np.testing.assert_allclose(t.grad, 2 * (t.numpy() - p.numpy()) / 6)
    # and through the functional entry point (PyTorch order)
    t.grad = None
    mn.functional.mse_loss(p, t).backward()
    np.testing.assert_allclose(t.grad, 2 * (t.numpy() - p.numpy()) / 6)


def test_column_predictions_against_flat_targets(rng):
    t = rng.standard_normal(6)
    p = rng.standard_normal((6, 1))
    out = losses.MeanSquaredError(reduction="none")(t, mn.tensor(p))
    assert out.shape == (6,)                   # Keras: one value per sample
    np.testing.assert_allclose(out.numpy(), ((p - t[:, None]) ** 2)[:, 0])
    np.testing.assert_allclose(losses.MeanSquaredError()(t[:, None], mn.tensor(p[:, 0])).item(),
                               ((p - t[:, None]) ** 2).mean())


def test_sequence_shaped_class_axis(rng):
    logits = rng.standard_normal((2, 3, 4))
    labels = rng.integers(0, 4, (2, 3))
    out = losses.SparseCategoricalCrossentropy(from_logits=True, reduction="none")(labels, mn.tensor(logits))
    assert out.shape == (2, 3)
    np.testing.assert_allclose(out.numpy(), ref_scce(labels, logits, True), rtol=1e-12)
    out = losses.CategoricalCrossentropy(from_logits=True)(np.eye(4)[labels], mn.tensor(logits))
    np.testing.assert_allclose(out.item(), ref_cce(np.eye(4)[labels], logits, True).mean(), rtol=1e-12)


# ---- reductions and sample_weight ---------------------------------------------------------

@pytest.mark.parametrize("reduction", ["mean", "sum", "none", "sum_over_batch_size", None])
@pytest.mark.parametrize("weight_shape", ["scalar", "per_sample", "per_sample_column"])
def test_sample_weight_elementwise(reduction, weight_shape, rng):
    t, p = rng.standard_normal((5, 3)), rng.standard_normal((5, 3))
    w = {"scalar": 0.7, "per_sample": rng.random(5), "per_sample_column": rng.random((5, 1))}[weight_shape]
    out = losses.MeanSquaredError(reduction=reduction)(t, mn.tensor(p), sample_weight=w)
    wb = np.asarray(w).reshape(5) if np.ndim(w) else w
    expected = _reduce(ref_mse(t, p).mean(axis=-1), reduction or "none", wb)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12)


def test_sample_weight_per_element_is_refused_for_per_sample_losses(rng):
    t, p = rng.standard_normal((5, 3)), rng.standard_normal((5, 3))
    with pytest.raises(ValueError, match="sample_weight"):
        losses.MeanSquaredError()(t, mn.tensor(p), sample_weight=rng.random((5, 3)))


def test_mean_with_sample_weight_divides_by_the_weights(rng):
    labels, logits, w = rng.integers(0, 4, 6), rng.standard_normal((6, 4)), rng.random(6)
    out = losses.SparseCategoricalCrossentropy(from_logits=True, reduction="mean_with_sample_weight")(
        labels, logits, sample_weight=w)
    np.testing.assert_allclose(out.item(), (ref_scce(labels, logits, True) * w).sum() / w.sum(),
                               rtol=1e-12)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_sample_weight_per_sample_losses(reduction, rng):
    labels, logits, w = rng.integers(0, 4, 6), rng.standard_normal((6, 4)), rng.random(6)
    out = losses.SparseCategoricalCrossentropy(from_logits=True, reduction=reduction)(labels, logits,
                                                                                      sample_weight=w)
    np.testing.assert_allclose(out.numpy(), _reduce(ref_scce(labels, logits, True), reduction, w), rtol=1e-12)
    with pytest.raises(ValueError, match="sample_weight"):
        losses.SparseCategoricalCrossentropy()(labels, _softmax(logits), sample_weight=np.ones(4))


@pytest.mark.parametrize("from_logits", [True, False])
def test_all_ignored_batch_gives_zero_loss_and_zero_gradient(from_logits):
    """Issue 17: a fully padded batch must not turn the weights into NaN."""
    x = mn.tensor(np.full((2, 3), 0.0 if from_logits else 1 / 3), requires_grad=True)
    out = losses.SparseCategoricalCrossentropy(from_logits=from_logits, ignore_class=-1)([-1, -1], x)
    out.backward()
    assert out.item() == 0.0
    np.testing.assert_array_equal(x.grad, np.zeros((2, 3)))


# ---- errors and warnings -----------------------------------------------------------------

def test_label_range_errors(rng):
    logits = rng.standard_normal((3, 4))
    scce = losses.SparseCategoricalCrossentropy(from_logits=True)
    with pytest.raises(ValueError, match=r"`y_true`.*\[0, 4\).*Received: .*4.* at flat index 1"):
        scce([0, 4, 1], logits)
    big = np.array([0, 2**64 - 1, 1], dtype=np.uint64)
    with pytest.raises(ValueError, match="18446744073709551615"):
        scce(big, logits)
    with pytest.raises(ValueError, match="`y_true`"):
        scce(np.array([0, -2, 1]), logits)
    with pytest.raises(ValueError, match="`y_true`.*integer"):
        scce(np.array([0.5, 1.0, 2.0]), logits)
    # ignored labels are allowed outside the range
    losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=-100)([0, -100, 3], logits)


def test_shape_errors(rng):
    with pytest.raises(ValueError, match=r"y_true.shape=\(4, 3\), y_pred.shape=\(4, 2\)"):
        losses.MeanSquaredError()(np.zeros((4, 3)), mn.tensor(np.zeros((4, 2)), requires_grad=True))
    with pytest.raises(ValueError, match=r"SparseCategoricalCrossentropy.*y_true.shape=\(5,\)"):
        losses.CategoricalCrossentropy()(np.array([0.0, 1, 2, 1, 0]), mn.tensor(np.full((5, 3), 1 / 3),
                                                                                  requires_grad=True))
    with pytest.raises(ValueError, match=r"y_true.shape=\(4,\)"):
        losses.SparseCategoricalCrossentropy()(np.array([0, 1, 2, 1]), np.full((5, 3), 1 / 3))
    # Rank 1 is one sample of 3 classes (Keras accepts it too); rank 0 has no class axis.
    out = losses.CategoricalCrossentropy()(np.ones(3), mn.tensor(np.ones(3) / 3, requires_grad=True))
    assert out.shape == () and out.item() == pytest.approx(3 * np.log(3))
    with pytest.raises(ValueError, match="y_pred.shape"):
        losses.CategoricalCrossentropy()(np.ones(()), mn.tensor(np.ones(()), requires_grad=True))


def test_logits_without_from_logits_are_computed_as_keras_and_named(rng, monkeypatch):
    # Keras computes on them (clipped); minnet too, with a warning naming from_logits=True
    # (values: tests/losses/test_keras_meanings.py::test_values_outside_0_1_*)
    from minnet.losses import probabilistic
    monkeypatch.setattr(probabilistic, "_warned_logits", set())
    logits = rng.standard_normal((4, 3)) * 3
    with pytest.warns(UserWarning, match="from_logits=True"):
        losses.CategoricalCrossentropy()(np.eye(3)[[0, 1, 2, 0]], mn.tensor(logits, requires_grad=True))
    with pytest.warns(UserWarning, match="from_logits=True"):
        losses.BinaryCrossentropy()(np.ones((4, 1)), mn.tensor(logits[:, :1] + 5, requires_grad=True))


def test_bad_constructor_arguments():
    with pytest.raises(ValueError, match=r"`reduction`.*Received: reduction='avg'"):
        losses.MeanSquaredError(reduction="avg")
    with pytest.raises(ValueError, match="`delta`"):
        losses.Huber(delta=0)
    with pytest.raises(ValueError, match="`label_smoothing`"):
        losses.CategoricalCrossentropy(label_smoothing=1.5)
    with pytest.raises(ValueError, match="`ignore_class`"):
        losses.SparseCategoricalCrossentropy(ignore_class=1.5)
    with pytest.raises(TypeError, match="`y_pred`"):
        losses.MeanSquaredError()(np.zeros(2), np.array(["a", "b"]))


@pytest.mark.parametrize("cls,target", [
    (losses.SparseCategoricalCrossentropy, np.array([0, 2, 1])),
    (losses.CategoricalCrossentropy, np.eye(3)[[0, 2, 1]]),
])
def test_probabilities_passed_as_logits_warn_once(cls, target, rng, monkeypatch):
    monkeypatch.setattr(losses.probabilistic, "_warned_probabilities", set())
    probs = _softmax(rng.standard_normal((3, 3)))
    loss = cls(from_logits=True)
    with pytest.warns(UserWarning, match="look like probabilities"):
        loss(target, mn.tensor(probs, requires_grad=True))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loss(target, mn.tensor(probs, requires_grad=True))      # second time: silent
        cls(from_logits=True)(target, probs)                     # new instance, same class: silent
        cls(from_logits=True)(target, rng.standard_normal((3, 3)) * 4)  # logits: never warns


@pytest.mark.parametrize("cls,target", [
    (losses.SparseCategoricalCrossentropy, np.array([0, 2, 1])),
    (losses.CategoricalCrossentropy, np.eye(3)[[0, 2, 1]]),
])
def test_a_loss_that_saw_logits_stops_looking_for_probabilities(cls, target, rng, monkeypatch):
    """fit asks at every step: once a loss object has seen logits it asks no more (a new
    object still looks)."""
    monkeypatch.setattr(losses.probabilistic, "_warned_probabilities", set())
    probs = _softmax(rng.standard_normal((3, 3)))
    loss = cls(from_logits=True)
    loss(target, rng.standard_normal((3, 3)) * 4 - 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loss(target, probs)
    with pytest.warns(UserWarning, match="look like probabilities"):
        cls(from_logits=True)(target, probs)


# ---- lookup, config, custom losses --------------------------------------------------------

@pytest.mark.parametrize("name,cls", [
    ("mse", losses.MeanSquaredError), ("mae", losses.MeanAbsoluteError), ("huber", losses.Huber),
    ("binary_crossentropy", losses.BinaryCrossentropy),
    ("categorical_crossentropy", losses.CategoricalCrossentropy),
    ("sparse_categorical_crossentropy", losses.SparseCategoricalCrossentropy),
    ("mean_squared_error", losses.MeanSquaredError), ("Huber", losses.Huber),
])
def test_get_by_name(name, cls):
    assert type(losses.get(name)) is cls


def test_get_instances_classes_callables_and_errors(rng):
    inst = losses.Huber(delta=2.0)
    assert losses.get(inst) is inst
    assert type(losses.get(losses.MeanAbsoluteError)) is losses.MeanAbsoluteError
    assert losses.get(None) is None

    def quartic(y_true, y_pred):
        return ((y_pred - y_true) ** 2) ** 2

    loss = losses.get(quartic)
    assert loss.name == "quartic"
    t, p = rng.standard_normal(4), rng.standard_normal(4)
    x = mn.tensor(p, requires_grad=True)
    np.testing.assert_allclose(loss(x, t).item(), ((p - t) ** 4).mean())
    assert mn.gradcheck(lambda a: loss(t, a, sample_weight=np.arange(4.0)), (x,))
    with pytest.raises(ValueError, match=r"Unknown loss: 'msee'.*mse"):
        losses.get("msee")
    with pytest.raises(TypeError, match="identifier"):
        losses.get(3)


def test_custom_loss_subclass(rng):
    class Scaled(losses.Loss):
        def call(self, y_true, y_pred):
            return (y_pred - y_true).abs() * 3.0

    t, p = rng.standard_normal((3, 2)), rng.standard_normal((3, 2))
    assert Scaled(reduction="sum")(t, mn.tensor(p)).item() == pytest.approx(3 * np.abs(p - t).sum())
    assert Scaled().name == "scaled"


@pytest.mark.parametrize("loss", [
    losses.MeanSquaredError(reduction="sum"), losses.MeanAbsoluteError(name="l1"), losses.Huber(delta=0.3),
    losses.BinaryCrossentropy(from_logits=True, label_smoothing=0.1),
    losses.CategoricalCrossentropy(label_smoothing=0.2),
    losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=-1, reduction="none"),
])
def test_config_round_trip(loss):
    clone = losses.deserialize(losses.serialize(loss))
    assert type(clone) is type(loss) and clone.get_config() == loss.get_config()
    assert type(loss).__name__ in repr(loss)


# ---- the Keras losses added with issue 18: NumPy, gradcheck, PyTorch where it has them ----

def _np_softmax(x):
    return _softmax(x)


def _new_loss_cases(rng):
    """name -> (loss, y_true, y_pred, per-sample NumPy reference (float64))."""
    n, c = 5, 4
    probs = _softmax(rng.standard_normal((n, c)))
    one_hot = np.eye(c)[rng.integers(0, c, n)]
    soft = _softmax(rng.standard_normal((n, c)))
    signs = rng.integers(0, 2, (n, c)).astype(np.float64)
    scores = rng.standard_normal((n, c))
    positive = rng.random((n, c)) + 0.1
    counts = rng.integers(0, 4, (n, c)).astype(np.float64)

    def kld(t, p):
        t, p = np.clip(t, EPS, 1), np.clip(p, EPS, 1)
        return (t * np.log(t / p)).sum(-1)

    def hinge(t, p):
        return np.maximum(1 - (2 * t - 1) * p, 0).mean(-1)

    def squared_hinge(t, p):
        return (np.maximum(1 - (2 * t - 1) * p, 0) ** 2).mean(-1)

    def categorical_hinge(t, p):
        return np.maximum(((1 - t) * p).max(-1) - (t * p).sum(-1) + 1, 0)

    def cosine(t, p):
        tn = t / np.sqrt(np.maximum((t * t).sum(-1, keepdims=True), 1e-12))
        pn = p / np.sqrt(np.maximum((p * p).sum(-1, keepdims=True), 1e-12))
        return -(tn * pn).sum(-1)

    def msle(t, p):
        return ((np.log(np.maximum(p, EPS) + 1) - np.log(np.maximum(t, EPS) + 1)) ** 2).mean(-1)

    def mape(t, p):
        return 100 * np.abs((t - p) / np.maximum(np.abs(t), EPS)).mean(-1)

    def poisson(t, p):
        return (p - t * np.log(p + EPS)).mean(-1)

    def log_cosh(t, p):
        return np.log(np.cosh(p - t)).mean(-1)

    def cat_focal(t, p, alpha=0.25, gamma=2.0):
        q = np.clip(p / p.sum(-1, keepdims=True), EPS, 1 - EPS)
        return (alpha * (1 - q) ** gamma * -t * np.log(q)).sum(-1)

    def bin_focal(t, p, gamma=2.0, alpha=None):
        q = np.clip(p, EPS, 1 - EPS)
        bce = -(t * np.log(q) + (1 - t) * np.log(1 - q))
        p_t = t * p + (1 - t) * (1 - p)
        out = (1 - p_t) ** gamma * bce
        if alpha is not None:
            out = (t * alpha + (1 - t) * (1 - alpha)) * out
        return out.mean(-1)

    sig = 1 / (1 + np.exp(-scores))
    return {
        "kld": (losses.KLDivergence(), soft, probs, kld),
        "hinge": (losses.Hinge(), signs, scores, hinge),
        "squared_hinge": (losses.SquaredHinge(), signs, scores, squared_hinge),
        "categorical_hinge": (losses.CategoricalHinge(), one_hot, scores, categorical_hinge),
        "cosine_similarity": (losses.CosineSimilarity(), scores[::-1].copy(), scores, cosine),
        "msle": (losses.MeanSquaredLogarithmicError(), positive, positive[::-1].copy(), msle),
        "mape": (losses.MeanAbsolutePercentageError(), positive, scores, mape),
        "poisson": (losses.Poisson(), counts, positive, poisson),
        "log_cosh": (losses.LogCosh(), scores[::-1].copy(), scores, log_cosh),
        "categorical_focal": (losses.CategoricalFocalCrossentropy(), one_hot, probs, cat_focal),
        "categorical_focal_logits": (losses.CategoricalFocalCrossentropy(from_logits=True, gamma=1.5),
                                     one_hot, scores,
                                     lambda t, p: cat_focal(t, _softmax(p), gamma=1.5)),
        "binary_focal": (losses.BinaryFocalCrossentropy(), signs, sig, bin_focal),
        "binary_focal_logits_balanced": (
            losses.BinaryFocalCrossentropy(from_logits=True, apply_class_balancing=True, alpha=0.3),
            signs, scores, lambda t, p: bin_focal(t, 1 / (1 + np.exp(-p)), alpha=0.3)),
    }


NEW_LOSSES = ["kld", "hinge", "squared_hinge", "categorical_hinge", "cosine_similarity", "msle",
              "mape", "poisson", "log_cosh", "categorical_focal", "categorical_focal_logits",
              "binary_focal", "binary_focal_logits_balanced"]


@pytest.mark.parametrize("name", NEW_LOSSES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reduction", ["sum_over_batch_size", "sum", "none"])
def test_new_losses_match_numpy(name, dtype, reduction, rng):
    loss, y_true, y_pred, ref = _new_loss_cases(rng)[name]
    loss = type(loss).from_config({**loss.get_config(), "reduction": reduction})
    out = loss(y_true.astype(dtype), mn.tensor(y_pred.astype(dtype), requires_grad=True))
    assert out.dtype == dtype
    expected = _reduce(ref(y_true.astype(dtype).astype(np.float64),
                           y_pred.astype(dtype).astype(np.float64)), reduction)
    np.testing.assert_allclose(out.numpy(), expected, rtol=2e-5 if dtype == np.float32 else 1e-10,
                               atol=1e-6 if dtype == np.float32 else 1e-12)


@pytest.mark.parametrize("name", NEW_LOSSES)
def test_new_losses_gradcheck(name, rng):
    loss, y_true, y_pred, _ = _new_loss_cases(rng)[name]
    x = mn.tensor(y_pred, requires_grad=True)
    assert mn.gradcheck(lambda p: loss(y_true, p, sample_weight=np.linspace(0.5, 1.5, 5)), (x,))


def test_new_losses_match_pytorch(torch, rng):
    cases = _new_loss_cases(rng)
    F_t = torch.nn.functional

    def check(name, torch_fn):
        loss, y_true, y_pred, _ = cases[name]
        x = mn.tensor(y_pred, requires_grad=True)
        out = loss(y_true, x)
        out.backward()
        tx = torch.tensor(y_pred, requires_grad=True)
        expected = torch_fn(tx, torch.tensor(y_true))
        expected.backward()
        np.testing.assert_allclose(out.item(), expected.item(), rtol=1e-10)
        np.testing.assert_allclose(x.grad, tx.grad.numpy(), rtol=1e-8, atol=1e-12)

    check("kld", lambda p, t: F_t.kl_div(torch.log(p), t, reduction="none").sum(-1).mean())
    check("poisson", lambda p, t: F_t.poisson_nll_loss(p, t, log_input=False, eps=1e-7))
    check("cosine_similarity", lambda p, t: -F_t.cosine_similarity(p, t, dim=-1, eps=1e-12).mean())
    check("log_cosh", lambda p, t: torch.log(torch.cosh(p - t)).mean())


@pytest.mark.parametrize("name,cls", [
    ("kld", losses.KLDivergence), ("kl_divergence", losses.KLDivergence),
    ("hinge", losses.Hinge), ("squared_hinge", losses.SquaredHinge),
    ("categorical_hinge", losses.CategoricalHinge), ("cosine_similarity", losses.CosineSimilarity),
    ("msle", losses.MeanSquaredLogarithmicError), ("mape", losses.MeanAbsolutePercentageError),
    ("poisson", losses.Poisson), ("log_cosh", losses.LogCosh), ("logcosh", losses.LogCosh),
    ("categorical_focal_crossentropy", losses.CategoricalFocalCrossentropy),
    ("binary_focal_crossentropy", losses.BinaryFocalCrossentropy), ("bce", losses.BinaryCrossentropy),
    ("BinaryFocalCrossentropy", losses.BinaryFocalCrossentropy),
])
def test_new_loss_aliases(name, cls):
    assert type(losses.get(name)) is cls


def test_keras_reduction_names_and_config_round_trip():
    for reduction in ("sum_over_batch_size", "sum", "none", None, "mean_with_sample_weight"):
        loss = losses.CategoricalFocalCrossentropy(alpha=0.5, gamma=1.0, reduction=reduction)
        clone = losses.deserialize(losses.serialize(loss))
        assert clone.get_config() == loss.get_config()
    assert losses.MeanSquaredError().reduction == "sum_over_batch_size"
    with pytest.raises(ValueError, match="reduction"):
        losses.Hinge(reduction="avg")
    with pytest.raises(ValueError, match="`gamma`"):
        losses.BinaryFocalCrossentropy(gamma=-1)


# ---- sparse categorical cross-entropy of probabilities: one node, the composite's bits ----

def _composite_sparse_probability_loss(labels, p, reduction):
    """The seven-node composite the fused node replaces (Keras's formula, op by op)."""
    from minnet.losses.probabilistic import _renormalised_log
    from minnet.losses.base import torch_reduce
    return torch_reduce(-_renormalised_log(p)[np.arange(len(labels)), labels], reduction)


def _probability_rows(rng, n, c, dtype, kind):
    if kind == "raw":                               # rows not summing to 1 (renormalised)
        return (rng.random((n, c)) * 2).astype(dtype)
    p = _softmax(rng.standard_normal((n, c)) * 3)
    if kind == "edge":
        p[0] = 0.0
        p[0, 0] = 1.0                               # a certain, correct row: clipped at 1 - eps
        p[1] = 1e-9                                 # tiny mass, renormalised
        p[2, 1] = 0.0                               # the label's probability 0: clipped at eps
        p[3] = np.nan
    return p.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind", ["softmax", "raw", "edge"])
@pytest.mark.parametrize("reduction", ["sum_over_batch_size", "sum", "none"])
def test_sparse_probability_loss_is_one_node_with_the_composite_bits(dtype, kind, reduction, rng):
    n, c = 33, 7
    p = _probability_rows(rng, n, c, dtype, kind)
    labels = rng.integers(0, c, n)
    labels[2] = 1
    loss = losses.SparseCategoricalCrossentropy(reduction=reduction)
    fused_input, composite_input = (mn.tensor(p, requires_grad=True) for _ in range(2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")             # the NaN row
        fused = loss(labels, fused_input)
        reference = _composite_sparse_probability_loss(labels, composite_input,
                                                       "none" if reduction == "none" else
                                                       "sum" if reduction == "sum" else "mean")
        fused.sum().backward()
        reference.sum().backward()
    node = fused.grad_fn if reduction == "none" else fused.grad_fn.next_functions[0][0]
    assert node.name() == "SparseCategoricalCrossentropyBackward"
    assert fused.numpy().tobytes() == reference.numpy().tobytes()
    assert fused_input.grad.tobytes() == composite_input.grad.tobytes()


@pytest.mark.parametrize("reduction", ["sum_over_batch_size", "sum", "none"])
def test_sparse_probability_loss_gradcheck_and_double_backward(reduction, rng):
    p = _softmax(rng.standard_normal((5, 4))) * 1.3
    labels = np.array([0, 3, 1, 1, 2])
    loss = losses.SparseCategoricalCrossentropy(reduction=reduction)
    assert mn.autograd.gradcheck(lambda t: loss(labels, t), (mn.tensor(p, requires_grad=True),))
    assert mn.autograd.gradgradcheck(lambda t: loss(labels, t), (mn.tensor(p, requires_grad=True),))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind", ["softmax", "raw", "edge"])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.1])
def test_categorical_probability_loss_is_one_node_with_the_composite_bits(dtype, kind,
                                                                         label_smoothing, rng):
    from minnet.losses.probabilistic import _renormalised_log
    n, c = 33, 7
    p = _probability_rows(rng, n, c, dtype, kind)
    target = rng.random((n, c)) if kind == "raw" else np.eye(c)[rng.integers(0, c, n)]
    loss = losses.CategoricalCrossentropy(label_smoothing=label_smoothing, reduction="none")
    fused_input, composite_input = (mn.tensor(p, requires_grad=True) for _ in range(2))
    smoothed = mn.tensor(target.astype(dtype)) * (1.0 - label_smoothing) + label_smoothing / c
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fused = loss(target, fused_input)
        reference = -(_renormalised_log(composite_input) * smoothed).sum(axis=-1)
        fused.sum().backward()
        reference.sum().backward()
    assert fused.grad_fn.name() == "CategoricalCrossentropyBackward"
    assert fused.numpy().tobytes() == reference.numpy().tobytes()
    assert fused_input.grad.tobytes() == composite_input.grad.tobytes()


def test_categorical_probability_loss_gradients_and_targets_with_a_graph(rng):
    p = _softmax(rng.standard_normal((5, 4))) * 1.3
    t = _softmax(rng.standard_normal((5, 4)))
    loss = losses.CategoricalCrossentropy()
    assert mn.autograd.gradcheck(lambda x: loss(t, x), (mn.tensor(p, requires_grad=True),))
    assert mn.autograd.gradgradcheck(lambda x: loss(t, x), (mn.tensor(p, requires_grad=True),))
    # soft targets that require a gradient keep the composite, which gives them one
    target = mn.tensor(t, requires_grad=True)
    loss(target, mn.tensor(p)).backward()
    expected = -np.log(np.clip(p / p.sum(-1, keepdims=True), 1e-7, 1 - 1e-7)) / 5
    np.testing.assert_allclose(target.grad, expected, rtol=1e-6)
