"""The activations added in issue 28: NumPy references, float64 gradcheck, PyTorch where it
has the function, Keras 3 (oracle)."""
import numpy as np
import pytest

import minnet as mn
from minnet import activations

RNG = np.random.default_rng(8)
X = np.concatenate([RNG.normal(size=11) * 2, [-1.5, -0.7, 0.3, 0.8, 1.5, 40.0, -40.0]])


def _sparsemax(z):
    s = np.sort(z)[::-1]
    k = np.arange(1, z.size + 1)
    support = 1 + k * s > np.cumsum(s)
    kz = k[support][-1]
    tau = (np.cumsum(s)[kz - 1] - 1) / kz
    return np.maximum(z - tau, 0)


REFERENCES = {
    "celu": lambda x: np.maximum(x, 0) + np.minimum(0, 0.7 * (np.exp(np.minimum(x, 0) / 0.7) - 1)),
    "hard_shrink": lambda x: np.where(np.abs(x) > 0.5, x, 0),
    "hard_tanh": lambda x: np.clip(x, -1, 1),
    "log_sigmoid": lambda x: -np.logaddexp(0, -x),
    "soft_shrink": lambda x: np.where(x > 0.5, x - 0.5, np.where(x < -0.5, x + 0.5, 0)),
    "sparse_plus": lambda x: np.where(x <= -1, 0, np.where(x >= 1, x, (x + 1) ** 2 / 4)),
    "sparse_sigmoid": lambda x: np.clip((x + 1) / 2, 0, 1),
    "squareplus": lambda x: (x + np.sqrt(x * x + 4)) / 2,
    "tanh_shrink": lambda x: x - np.tanh(x),
    "threshold": lambda x: np.where(x > 0.3, x, -2.0),
}
ARGS = {"celu": {"alpha": 0.7}, "threshold": {"threshold": 0.3, "default_value": -2.0}}


@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_reference_and_gradcheck(name):
    fn = getattr(activations, name)
    np.testing.assert_allclose(fn(mn.tensor(X), **ARGS.get(name, {})).numpy(), REFERENCES[name](X),
                               rtol=1e-12, atol=1e-12)
    assert activations.get(name) is fn
    away = X[np.all(np.abs(X[:, None] - np.array([-1, -0.5, 0, 0.3, 0.5, 1])) > 1e-2, axis=1)]
    x = mn.tensor(away[np.abs(away) < 10], requires_grad=True)     # off the kinks
    assert mn.gradcheck(lambda a: fn(a, **ARGS.get(name, {})), (x,))
    y = fn(mn.tensor(np.array([-40.0, 40.0]), requires_grad=True), **ARGS.get(name, {}))
    assert np.all(np.isfinite(y.numpy()))


def test_glu_and_sparsemax():
    x = RNG.normal(size=(3, 6))
    a, b = x[:, :3], x[:, 3:]
    np.testing.assert_allclose(activations.glu(mn.tensor(x)).numpy(), a / (1 + np.exp(-b)), rtol=1e-12)
    got = activations.sparsemax(mn.tensor(x * 2)).numpy()
    np.testing.assert_allclose(got, np.stack([_sparsemax(r) for r in x * 2]), atol=1e-12)
    np.testing.assert_allclose(got.sum(-1), 1.0, atol=1e-12)
    col = activations.sparsemax(mn.tensor(x * 2), axis=0).numpy()
    np.testing.assert_allclose(col, np.stack([_sparsemax(c) for c in (x * 2).T]).T, atol=1e-12)
    t = mn.tensor(x, requires_grad=True)
    assert mn.gradcheck(lambda v: activations.glu(v, axis=-1), (t,))
    assert mn.gradcheck(lambda v: activations.sparsemax(v * 2.0), (t,))
    with pytest.raises(ValueError, match="even"):
        activations.glu(mn.tensor(np.ones((2, 3))))


def test_against_torch(torch):
    t = torch.tensor(X)
    F = torch.nn.functional
    pairs = {"celu": F.celu(t, alpha=0.7), "hard_shrink": F.hardshrink(t, 0.5),
             "hard_tanh": F.hardtanh(t), "log_sigmoid": F.logsigmoid(t),
             "soft_shrink": F.softshrink(t, 0.5), "tanh_shrink": F.tanhshrink(t),
             "threshold": F.threshold(t, 0.3, -2.0)}
    for name, want in pairs.items():
        got = getattr(activations, name)(mn.tensor(X), **ARGS.get(name, {})).numpy()
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-12, atol=1e-12, err_msg=name)


@pytest.mark.slow_once
def test_against_keras(keras):
    import torch
    x = (RNG.normal(size=(8, 6)) * np.array([[4.0]] * 4 + [[0.5]] * 4)).astype("float32")
    for name in sorted(REFERENCES) + ["glu"]:
        want = np.asarray(getattr(keras.activations, name)(torch.tensor(x), **ARGS.get(name, {})).cpu())
        got = getattr(activations, name)(mn.tensor(x), **ARGS.get(name, {})).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=name)
    # sparsemax: Keras 3.15 (every backend) computes tau from the sum of the cumulative sums
    # over the support instead of the cumulative sum at its end, so its rows sum to 1 only
    # when the support has one entry. minnet keeps Martins and Astudillo's projection
    # (docs/coming_from_keras.md); the two agree exactly on one-entry supports.
    want = np.asarray(keras.activations.sparsemax(torch.tensor(x)).cpu())
    got = activations.sparsemax(mn.tensor(x)).numpy()
    single = (got > 0).sum(-1) == 1
    np.testing.assert_allclose(got[single], want[single], atol=1e-6)
    np.testing.assert_allclose(got.sum(-1), 1.0, atol=1e-5)
    assert not np.allclose(want[~single].sum(-1), 1.0)
