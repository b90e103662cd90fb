"""Precision/Recall(top_k=...) and binary_accuracy with Keras 3.15's meanings (issue 28,
items 1.4 and 1.5): NumPy references, and Keras 3 as the oracle (slow_once)."""
import numpy as np
import pytest

from minnet import metrics

RNG = np.random.default_rng(1528)


def _top_k_counts(t, p, k, threshold=None):
    """NumPy reference: the k highest scores of a row (first index on ties) are the
    positives (and, with a threshold, only those above it)."""
    order = np.argsort(-p, axis=-1, kind="stable")[:, :k]
    positive = np.zeros(p.shape, dtype=bool)
    np.put_along_axis(positive, order, True, axis=-1)
    if threshold is not None:
        positive &= p > threshold
    truth = t > 0.5
    return (positive & truth).sum(), (positive & ~truth).sum(), (~positive & truth).sum()


@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("threshold", [None, 0.3])
def test_top_k_counts_only_the_top_k(k, threshold):
    t = RNG.integers(0, 2, (7, 4)).astype(float)
    p = RNG.uniform(0, 0.6, (7, 4))               # most scores below 0.5
    tp, fp, fn = _top_k_counts(t, p, k, threshold)
    precision = metrics.Precision(top_k=k, thresholds=threshold)
    recall = metrics.Recall(top_k=k, thresholds=threshold)
    precision.update_state(t, p)
    recall.update_state(t, p)
    assert precision.result() == pytest.approx(tp / (tp + fp))
    assert recall.result() == pytest.approx(tp / (tp + fn))


def test_top_k_ties_keep_k_entries():
    m = metrics.Precision(top_k=1)
    m.update_state([[0, 1, 0]], [[0.2, 0.2, 0.1]])   # tie: the first index is the one kept
    assert m.true_positives[0] == 0 and m.false_positives[0] == 1


@pytest.mark.parametrize("shapes", [((6,), (6,)), ((6,), (6, 1)), ((6, 1), (6,)), ((6, 3), (6, 3))])
def test_binary_accuracy_is_elementwise(shapes):
    t = RNG.integers(0, 2, shapes[0]).astype(float)
    p = RNG.uniform(size=shapes[1])
    got = metrics.binary_accuracy(t, p)
    a, b = t, p
    if a.ndim != b.ndim:          # the rank-1 one gains the axis of 1
        a, b = (a[:, None], b) if a.ndim == 1 else (a, b[:, None])
    want = (a == (b > 0.5)).astype(float)
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    w = RNG.uniform(0.5, 2, 6)
    m = metrics.BinaryAccuracy()
    m.update_state(t, p, sample_weight=w)
    per_sample = want.reshape(6, -1).mean(-1)
    assert m.result() == pytest.approx((per_sample * w).sum() / w.sum())


@pytest.mark.slow_once
def test_against_keras(keras):
    for k in (1, 2, 3):
        for threshold in (None, 0.3):
            t = RNG.integers(0, 2, (9, 4)).astype("float32")
            p = RNG.uniform(0, 0.6, (9, 4)).astype("float32")
            for name in ("Precision", "Recall"):
                ours = getattr(metrics, name)(top_k=k, thresholds=threshold)
                theirs = getattr(keras.metrics, name)(top_k=k, thresholds=threshold)
                ours.update_state(t, p)
                theirs.update_state(t, p)
                assert ours.result() == pytest.approx(float(theirs.result()), rel=1e-6), (name, k)
    for shapes in (((6,), (6,)), ((6,), (6, 1)), ((6, 1), (6,)), ((6, 3), (6, 3))):
        t = RNG.integers(0, 2, shapes[0]).astype("float32")
        p = RNG.uniform(size=shapes[1]).astype("float32")
        want = np.asarray(keras.metrics.binary_accuracy(t, p).cpu())
        got = metrics.binary_accuracy(t, p)
        assert got.shape == want.shape, shapes
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", ["Precision", "Recall", "TruePositives", "FalsePositives",
                                  "TrueNegatives", "FalseNegatives"])
@pytest.mark.parametrize("thresholds", [0.3, [0.1, 0.5, 0.7]])
def test_a_float32_score_equal_to_the_threshold_is_not_above_it(name, thresholds):
    """Keras compares in its metric dtype, float32: a score of float32(0.3) against
    thresholds=0.3 is not above it (minnet compared in float64, where it is 0.30000001)."""
    rng = np.random.default_rng(7)
    y_true = rng.integers(0, 2, 400).astype(np.float32)
    y_pred = np.round(rng.random(400), 1).astype(np.float32)     # many ties with thresholds
    metric = getattr(metrics, name)(thresholds=thresholds)
    metric.update_state(y_true, y_pred)
    levels = np.atleast_1d(np.asarray(thresholds, np.float32))
    above = y_pred[None, :] > levels[:, None]
    truth = y_true > 0.5
    tp, fp = (above & truth).sum(1), (above & ~truth).sum(1)
    tn, fn = (~above & ~truth).sum(1), (~above & truth).sum(1)
    expected = {"Precision": tp / (tp + fp), "Recall": tp / (tp + fn), "TruePositives": tp,
                "FalsePositives": fp, "TrueNegatives": tn, "FalseNegatives": fn}[name]
    np.testing.assert_allclose(np.atleast_1d(np.asarray(metric.result())), expected, rtol=1e-6)
