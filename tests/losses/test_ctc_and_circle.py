"""CTC and Circle losses (issue 28): a NumPy reference, gradcheck, PyTorch's ctc_loss, and
Keras 3 (oracle) on the same inputs, classes and function forms, config, errors."""
import itertools

import numpy as np
import pytest

import minnet as mn
from minnet import losses

RNG = np.random.default_rng(37)


def _ctc_brute_force(labels, logits):
    """-log sum over every path of T steps that collapses to ``labels`` (blank 0)."""
    t, c = logits.shape
    logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    total = 0.0
    for path in itertools.product(range(c), repeat=t):
        collapsed = [k for i, k in enumerate(path) if k != 0 and (i == 0 or path[i - 1] != k)]
        if collapsed == list(labels):
            total += np.exp(sum(logp[i, k] for i, k in enumerate(path)))
    return -np.log(total)


def _ctc_inputs(dtype="float64"):
    y_true = np.array([[1, 2, 0], [3, 3, 1], [2, 0, 0]])
    y_pred = RNG.normal(size=(3, 5, 4)).astype(dtype)
    return y_true, y_pred


def test_ctc_matches_brute_force_and_gradchecks():
    y_true, y_pred = _ctc_inputs()
    per = losses.ctc(y_true, y_pred).numpy()
    want = [_ctc_brute_force([k for k in row if k], y_pred[i]) for i, row in enumerate(y_true)]
    np.testing.assert_allclose(per, want, rtol=1e-10)
    assert losses.CTC()(y_true, y_pred).item() == pytest.approx(np.mean(want), rel=1e-10)
    x = mn.tensor(y_pred[:, :4], requires_grad=True)
    assert mn.gradcheck(lambda a: losses.CTC()(y_true, a), (x,))
    assert losses.get("ctc").__class__ is losses.CTC


def test_ctc_against_torch(torch):
    y_true, y_pred = _ctc_inputs()
    logp = torch.log_softmax(torch.tensor(y_pred), -1).transpose(0, 1)
    lengths = torch.tensor((y_true != 0).sum(-1))
    want = torch.nn.functional.ctc_loss(logp, torch.tensor(y_true), torch.full((3,), 5), lengths,
                                        blank=0, reduction="none").numpy()
    np.testing.assert_allclose(losses.ctc(y_true, y_pred).numpy(), want, rtol=1e-10)


def _circle_reference(labels, emb, gamma=80.0, margin=0.4, remove_diagonal=True):
    d = np.maximum(1 - emb @ emb.T, 0)
    pos = labels[:, None] == labels[None, :]
    neg = ~pos
    if remove_diagonal:
        pos &= ~np.eye(len(labels), dtype=bool)
    out = []
    for i in range(len(labels)):
        a = -gamma * np.maximum(margin + d[i], 0) * (margin - d[i])
        b = gamma * np.maximum(1 + margin - d[i], 0) * (1 - margin - d[i])
        p = np.log(np.sum(np.exp(a[pos[i]]))) if pos[i].any() else -np.inf
        n = np.log(np.sum(np.exp(b[neg[i]]))) if neg[i].any() else -np.inf
        out.append(np.logaddexp(0, p + n))
    return np.array(out)


def _embeddings(n=6, dim=4):
    e = RNG.normal(size=(n, dim))
    return e / np.linalg.norm(e, axis=1, keepdims=True)


def test_circle_matches_numpy_and_gradchecks():
    labels, emb = np.array([0, 1, 0, 2, 1, 2]), _embeddings()
    per = losses.circle(labels, emb, gamma=4.0).numpy()
    np.testing.assert_allclose(per, _circle_reference(labels, emb, gamma=4.0), rtol=1e-10)
    loss = losses.Circle(gamma=4.0)
    values = _circle_reference(labels, emb, gamma=4.0)
    assert loss(labels, emb).item() == pytest.approx(values[values > 0].mean(), rel=1e-10)
    x = mn.tensor(emb, requires_grad=True)
    assert mn.gradcheck(lambda a: losses.Circle(gamma=4.0, margin=0.25)(labels, a), (x,))
    again = losses.Circle.from_config(losses.Circle(gamma=10.0, remove_diagonal=False).get_config())
    assert again.gamma == 10.0 and again.remove_diagonal is False


def test_errors_name_the_argument():
    with pytest.raises(ValueError, match="y_true"):
        losses.ctc(np.zeros(3), np.zeros((3, 4, 2)))
    with pytest.raises(ValueError, match="y_pred"):
        losses.CTC()(np.zeros((3, 2)), np.zeros((3, 4)))
    with pytest.raises(ValueError, match="`y_true`"):
        losses.circle(np.zeros(2), _embeddings(3))


@pytest.mark.slow_once
def test_against_keras(keras):
    y_true, y_pred = _ctc_inputs("float32")
    for ours, theirs in ((losses.CTC(), keras.losses.CTC()),
                         (losses.CTC(reduction="sum"), keras.losses.CTC(reduction="sum"))):
        want = keras.ops.convert_to_numpy(theirs(y_true, y_pred))
        np.testing.assert_allclose(ours(y_true, y_pred).numpy(), want, rtol=1e-5)
    np.testing.assert_allclose(losses.ctc(y_true, y_pred).numpy(),
                               keras.ops.convert_to_numpy(keras.losses.ctc(y_true, y_pred)), rtol=1e-5)
    labels, emb = np.array([0, 1, 0, 2, 1, 2, 3, 3]), _embeddings(8).astype("float32")
    for kwargs in (dict(), dict(gamma=5.0, margin=0.2), dict(remove_diagonal=False, gamma=3.0)):
        want = keras.ops.convert_to_numpy(keras.losses.Circle(**kwargs)(labels, emb))
        np.testing.assert_allclose(losses.Circle(**kwargs)(labels, emb).numpy(), want, rtol=1e-5)
        fn = {k: v for k, v in kwargs.items()}
        np.testing.assert_allclose(losses.circle(labels, emb, **fn).numpy(),
                                   keras.ops.convert_to_numpy(keras.losses.circle(labels, emb, **fn)),
                                   rtol=1e-5, atol=1e-6)
