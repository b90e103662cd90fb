"""Keras's meanings where they differ from PyTorch's (issue 28, items 1.2, 1.3 and 2):
probabilities renormalised by the categorical cross-entropies, rank-1 inputs as one sample,
``axis=`` on the cross-entropies. NumPy references here; Keras 3 as the oracle (slow_once)."""
import numpy as np
import pytest

import minnet as mn
from minnet import losses

RNG = np.random.default_rng(2028)
EPS = 1e-7


def _keras_reduce(values, weight, reduction):
    """Keras's reduce_weighted_values, in NumPy (values: the per-sample losses)."""
    if weight is not None:
        weight = np.asarray(weight, dtype=float)
        values = values * weight
    if reduction == "none" or np.ndim(values) == 0:
        return values
    total = values.sum()
    if reduction == "sum":
        return total
    divisor = weight.sum() if reduction == "mean_with_sample_weight" and weight is not None \
        else values.size
    return total / divisor


# ---- 1.2: (Sparse)CategoricalCrossentropy(from_logits=False) renormalises -----------------

def _cce(t, p, axis=-1):
    q = np.clip(p / p.sum(axis, keepdims=True), EPS, 1 - EPS)
    return -(t * np.log(q)).sum(axis)


def test_rows_not_summing_to_one_are_renormalised():
    t = np.eye(3)[[0, 2]]
    p = np.array([[0.3, 0.1, 0.1], [0.2, 0.2, 0.2]])        # rows sum to 0.5 and 0.6
    out = losses.CategoricalCrossentropy()(t, mn.tensor(p))
    np.testing.assert_allclose(out.item(), _cce(t, p).mean(), rtol=1e-12)
    assert out.item() == pytest.approx((np.log(5 / 3) + np.log(3)) / 2)   # not -log(p) = 1.41
    sparse = losses.SparseCategoricalCrossentropy()([0, 2], mn.tensor(p))
    np.testing.assert_allclose(sparse.item(), out.item(), rtol=1e-12)


@pytest.mark.parametrize("cls", ["CategoricalCrossentropy", "SparseCategoricalCrossentropy"])
def test_renormalised_gradient(cls):
    p = mn.tensor(RNG.uniform(0.1, 0.9, (4, 3)), requires_grad=True)
    labels = np.array([0, 2, 1, 1])
    t = np.eye(3)[labels] if cls == "CategoricalCrossentropy" else labels
    loss = getattr(losses, cls)()
    assert mn.gradcheck(lambda a: loss(t, a), (p,))
    loss(t, p).backward()
    # d/dp of -log(p_y / sum p) = -1/p_y [c == y] + 1/sum p, over the batch of 4
    want = (1.0 / p.data.sum(-1, keepdims=True) - np.eye(3)[labels] / p.data) / 4
    np.testing.assert_allclose(p.grad, want, rtol=1e-10)


def test_functional_cross_entropy_keeps_pytorchs_meaning():
    logits = RNG.normal(size=(3, 4))
    labels = np.array([1, 0, 3])
    out = mn.functional.cross_entropy(mn.tensor(logits), labels).item()
    shifted = logits - logits.max(-1, keepdims=True)
    logq = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    assert out == pytest.approx(-logq[np.arange(3), labels].mean(), rel=1e-12)


# ---- 1.3: rank-1 y_true / y_pred are one sample ---------------------------------------

RANK1 = {
    "MeanSquaredError": lambda t, p: ((p - t) ** 2).mean(-1),
    "MeanAbsoluteError": lambda t, p: np.abs(p - t).mean(-1),
    "BinaryCrossentropy": lambda t, p: -(t * np.log(np.clip(p, EPS, 1 - EPS)) + (1 - t) * np.log(
        1 - np.clip(p, EPS, 1 - EPS))).mean(-1),
}


@pytest.mark.parametrize("name", sorted(RANK1))
@pytest.mark.parametrize("reduction", ["sum_over_batch_size", "sum", "none",
                                       "mean_with_sample_weight"])
@pytest.mark.parametrize("weight", [None, "per_sample", 2.0])
@pytest.mark.parametrize("shapes", [((5,), (5,)), ((5,), (5, 1)), ((5, 1), (5,))])
def test_rank1_inputs_are_one_sample(name, reduction, weight, shapes):
    t = RNG.integers(0, 2, 5).astype(float)
    p = RNG.uniform(0.05, 0.95, 5)
    w = RNG.uniform(0.5, 2.0, 5) if weight == "per_sample" else weight
    a, b = t.reshape(shapes[0]), p.reshape(shapes[1])
    got = getattr(losses, name)(reduction=reduction)(a, mn.tensor(b), sample_weight=w).numpy()
    rows = (t, p) if shapes == ((5,), (5,)) else (t[:, None], p[:, None])
    want = _keras_reduce(RANK1[name](*rows), w, reduction)
    assert got.shape == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_rank1_gradcheck():
    p = mn.tensor(RNG.uniform(0.1, 0.9, 6), requires_grad=True)
    t = RNG.integers(0, 2, 6).astype(float)
    w = RNG.uniform(0.5, 2.0, 6)
    for loss in (losses.MeanSquaredError(reduction="sum"), losses.BinaryCrossentropy()):
        assert mn.gradcheck(lambda a: loss(t, a, sample_weight=w), (p,))


# ---- 2: axis= on the cross-entropies ------------------------------------------------------

def test_categorical_crossentropy_axis0():
    p = RNG.uniform(0.1, 0.9, (4, 3))
    t = RNG.uniform(0.0, 1.0, (4, 3))
    for from_logits in (False, True):
        loss = losses.CategoricalCrossentropy(from_logits=from_logits, axis=0, reduction="none")
        got = loss(t, mn.tensor(p)).numpy()
        if from_logits:
            logq = p - np.log(np.exp(p).sum(0, keepdims=True))
            want = -(t * logq).sum(0)
        else:
            want = _cce(t, p, axis=0)
        assert got.shape == (3,)
        np.testing.assert_allclose(got, want, rtol=1e-12)
    x = mn.tensor(p, requires_grad=True)
    assert mn.gradcheck(lambda a: losses.CategoricalCrossentropy(axis=0)(t, a), (x,))


def test_binary_crossentropy_axis():
    p = RNG.uniform(0.05, 0.95, (3, 4, 2))
    t = RNG.integers(0, 2, (3, 4, 2)).astype(float)
    bce = -(t * np.log(p) + (1 - t) * np.log(1 - p))
    for axis in (0, 1, -1):
        got = losses.BinaryCrossentropy(axis=axis, reduction="none")(t, mn.tensor(p)).numpy()
        np.testing.assert_allclose(got, bce.mean(axis), rtol=1e-12)
    with pytest.raises(TypeError, match="axis"):
        losses.BinaryCrossentropy(axis="last")


# ---- Keras 3 as the oracle ------------------------------------------------------------------

def _keras_value(keras, loss, t, p, w=None):
    import torch
    tp = torch.tensor(p, requires_grad=True)
    out = loss(torch.tensor(t), tp, sample_weight=w)      # Keras computes in float32
    out.sum().backward()
    return out.detach().numpy(), tp.grad.numpy()


@pytest.mark.slow_once
def test_against_keras(keras):
    cases = []
    p = RNG.uniform(0.05, 0.95, (4, 3))
    t = np.eye(3)[[0, 2, 1, 1]]
    cases.append(("CategoricalCrossentropy", {}, t, p))
    cases.append(("CategoricalCrossentropy", {"axis": 0}, RNG.uniform(size=(4, 3)), p))
    cases.append(("CategoricalCrossentropy", {"axis": 0, "from_logits": True},
                  RNG.uniform(size=(4, 3)), RNG.normal(size=(4, 3))))
    cases.append(("SparseCategoricalCrossentropy", {}, np.array([0, 2, 1, 1]), p))
    q = RNG.uniform(0.05, 0.95, (3, 4, 2))
    s = RNG.integers(0, 2, (3, 4, 2)).astype(float)
    for axis in (0, 1):
        cases.append(("BinaryCrossentropy", {"axis": axis}, s, q))
        cases.append(("BinaryFocalCrossentropy", {"axis": axis}, s, q))
    for name in RANK1:
        for reduction in ("sum_over_batch_size", "sum", "none", "mean_with_sample_weight"):
            for shapes in (((5,), (5,)), ((5,), (5, 1)), ((5, 1), (5,))):
                t1 = RNG.integers(0, 2, 5).astype(float).reshape(shapes[0])
                p1 = RNG.uniform(0.05, 0.95, 5).reshape(shapes[1])
                cases.append((name, {"reduction": reduction, "w": RNG.uniform(0.5, 2, 5)}, t1, p1))
                cases.append((name, {"reduction": reduction, "w": 2.0}, t1, p1))
    for name, kwargs, t, p in cases:
        kwargs = dict(kwargs)
        w = kwargs.pop("w", None)
        ours = getattr(losses, name)(**kwargs)
        x = mn.tensor(p, requires_grad=True)
        got = ours(t, x, sample_weight=w)
        got.sum().backward()
        want, grad = _keras_value(keras, getattr(keras.losses, name)(**kwargs), t, p, w)
        assert got.shape == want.shape, (name, kwargs)
        np.testing.assert_allclose(got.numpy(), want, rtol=2e-5, atol=1e-6, err_msg=f"{name} {kwargs}")
        np.testing.assert_allclose(x.grad, grad, rtol=2e-5, atol=1e-6, err_msg=f"{name} {kwargs}")


# ---- from_logits=False on values outside [0, 1]: Keras computes (clipped), minnet too ------
@pytest.mark.parametrize("name", ["BinaryCrossentropy", "CategoricalCrossentropy",
                                  "SparseCategoricalCrossentropy"])
def test_values_outside_0_1_are_clipped_as_keras_with_one_warning(name, monkeypatch):
    # guides/training_with_built_in_methods.py: CategoricalCrossentropy() on a Dense output
    from minnet.losses import probabilistic
    monkeypatch.setattr(probabilistic, "_warned_logits", set())
    rng = np.random.default_rng(3)
    y_pred = rng.standard_normal((5, 4)) * 0.5 + 0.3
    clipped = np.clip(y_pred, EPS, 1 - EPS)
    if name == "BinaryCrossentropy":
        y_true = rng.integers(0, 2, (5, 4)).astype(float)
        expected = -np.mean(y_true * np.log(clipped) + (1 - y_true) * np.log(1 - clipped))
    else:
        labels = rng.integers(0, 4, 5)
        y_true = labels if name.startswith("Sparse") else np.eye(4)[labels]
        q = np.clip(y_pred / y_pred.sum(-1, keepdims=True), EPS, 1 - EPS)
        expected = -np.mean(np.log(q[np.arange(5), labels]))
    loss = getattr(losses, name)()
    with pytest.warns(UserWarning, match="outside \\[0, 1\\]"):
        value = float(loss(y_true, mn.tensor(y_pred)).item())
    np.testing.assert_allclose(value, expected, rtol=1e-6)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loss(y_true, mn.tensor(y_pred))                      # once per loss class


@pytest.mark.slow_once
@pytest.mark.parametrize("name", ["BinaryCrossentropy", "CategoricalCrossentropy",
                                  "SparseCategoricalCrossentropy"])
def test_values_outside_0_1_as_keras_computes_them(keras, name):
    rng = np.random.default_rng(4)
    y_pred = (rng.standard_normal((6, 4)) * 0.5 + 0.3).astype("float32")
    labels = rng.integers(0, 4, 6)
    y_true = {"BinaryCrossentropy": rng.integers(0, 2, (6, 4)).astype("float32"),
              "CategoricalCrossentropy": np.eye(4, dtype="float32")[labels],
              "SparseCategoricalCrossentropy": labels}[name]
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mine = float(getattr(losses, name)()(y_true, mn.tensor(y_pred)).item())
    theirs = float(getattr(keras.losses, name)()(y_true, y_pred))
    np.testing.assert_allclose(mine, theirs, rtol=1e-5)
