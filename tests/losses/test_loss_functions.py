"""Keras 3's loss functions (``losses.mean_squared_error`` ...) and the losses added in issue 28
(Dice, Tversky, CategoricalGeneralizedCrossEntropy): NumPy, gradcheck, Keras 3 (oracle)."""
import numpy as np
import pytest

import minnet as mn
from minnet import losses

RNG = np.random.default_rng(21)
EPS = 1e-7


def _inputs(name):
    p = RNG.uniform(0.05, 0.95, (4, 3))
    if name == "sparse_categorical_crossentropy" or name == "categorical_generalized_cross_entropy":
        return np.array([0, 2, 1, 1]), p / p.sum(-1, keepdims=True)
    if name in ("categorical_crossentropy", "categorical_focal_crossentropy", "kl_divergence",
                "categorical_hinge"):
        return np.eye(3)[[0, 2, 1, 1]], p / p.sum(-1, keepdims=True)
    if name in ("hinge", "squared_hinge", "binary_crossentropy", "binary_focal_crossentropy",
                "dice", "tversky"):
        return RNG.integers(0, 2, (4, 3)).astype(float), p
    return RNG.uniform(0.1, 2.0, (4, 3)), RNG.uniform(0.1, 2.0, (4, 3))


FUNCTIONS = sorted(losses.functions.__all__)
EXTRA = {"categorical_generalized_cross_entropy": {"q": 0.5}}


def test_hinge_is_a_function_not_a_module():
    assert callable(losses.hinge)
    out = losses.hinge([[1.0, 0.0]], mn.tensor([[0.3, -0.2]]))
    assert out.numpy().tolist() == pytest.approx([(0.7 + 0.8) / 2])


def test_functions_are_the_classes_unreduced():
    t, p = _inputs("mean_squared_error")
    np.testing.assert_allclose(losses.mean_squared_error(t, mn.tensor(p)).numpy(),
                               ((t - p) ** 2).mean(-1), rtol=1e-12)
    t, p = _inputs("categorical_crossentropy")
    np.testing.assert_allclose(losses.categorical_crossentropy(t, mn.tensor(p)).numpy(),
                               -(t * np.log(p)).sum(-1), rtol=1e-12)
    for name in FUNCTIONS:
        t, p = _inputs(name)
        out = getattr(losses, name)(t, mn.tensor(p), **EXTRA.get(name, {}))
        assert isinstance(out, mn.Tensor)


def test_dice_tversky_gce_numpy_and_gradcheck():
    t = RNG.integers(0, 2, (2, 3, 4)).astype(float)
    p = RNG.uniform(0.05, 0.95, (2, 3, 4))
    dice = 1 - 2 * (t * p).sum((1, 2)) / (t.sum((1, 2)) + p.sum((1, 2)) + EPS)
    np.testing.assert_allclose(losses.Dice(axis=(1, 2), reduction="none")(t, mn.tensor(p)).numpy(),
                               dice, rtol=1e-12)
    whole = 1 - 2 * (t * p).sum() / (t.sum() + p.sum() + EPS)
    assert losses.dice(t, mn.tensor(p)).item() == pytest.approx(whole, rel=1e-12)
    tp, fp, fn = (t * p).sum(), ((1 - p) * t).sum(), (p * (1 - t)).sum()
    want = 1 - tp / (tp + 0.3 * fp + 0.7 * fn + EPS)
    assert losses.Tversky(0.3, 0.7)(t, mn.tensor(p)).item() == pytest.approx(want, rel=1e-12)
    labels = np.array([1, 0, 2])
    q = RNG.uniform(0.1, 0.9, (3, 3))
    want = (1 - q[np.arange(3), labels] ** 0.3) / 0.3
    got = losses.CategoricalGeneralizedCrossEntropy(q=0.3, reduction="none")(labels, mn.tensor(q))
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
    x = mn.tensor(p, requires_grad=True)
    assert mn.gradcheck(lambda a: losses.Dice(axis=(1, 2))(t, a), (x,))
    assert mn.gradcheck(lambda a: losses.Tversky(0.2, 0.8)(t, a), (x,))
    xq = mn.tensor(q, requires_grad=True)
    assert mn.gradcheck(lambda a: losses.CategoricalGeneralizedCrossEntropy()(labels, a), (xq,))
    with pytest.raises(ValueError, match="q"):
        losses.CategoricalGeneralizedCrossEntropy(q=1.0)
    for cls in (losses.Dice, losses.Tversky, losses.CategoricalGeneralizedCrossEntropy):
        loss = cls()
        assert type(losses.deserialize(losses.serialize(loss))) is cls


@pytest.mark.slow_once
def test_functions_against_keras(keras):
    import torch
    for name in FUNCTIONS:
        t, p = _inputs(name)
        extra = EXTRA.get(name, {})
        got = getattr(losses, name)(t, mn.tensor(p), **extra).numpy()
        want = getattr(keras.losses, name)(torch.tensor(t), torch.tensor(p), **extra)
        want = np.asarray(want.detach().cpu())
        assert got.shape == want.shape, name
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=name)
    t = RNG.integers(0, 2, (2, 3, 4)).astype("float32")
    p = RNG.uniform(0.05, 0.95, (2, 3, 4)).astype("float32")
    for ours, theirs in ((losses.Dice(axis=(1, 2)), keras.losses.Dice(axis=(1, 2))),
                         (losses.Tversky(0.3, 0.7), keras.losses.Tversky(0.3, 0.7))):
        assert ours(t, p).item() == pytest.approx(float(theirs(t, p)), rel=1e-5)
