"""Metrics: each against a plain NumPy reference, weighting, reset, lookup by name."""
import numpy as np
import pytest

from minnet import metrics


def _scores(rng, n, c):
    return rng.standard_normal((n, c))


# ---- functional forms vs NumPy ---------------------------------------------------------

def test_accuracy_exact_match(rng):
    y_true = rng.integers(0, 3, size=17)
    y_pred = y_true.copy()
    y_pred[::3] = (y_pred[::3] + 1) % 3
    expected = (y_true == y_pred).astype(float)
    np.testing.assert_array_equal(metrics.accuracy(y_true, y_pred), expected)
    # (N,) vs (N, 1) is lined up, not broadcast to (N, N)
    np.testing.assert_array_equal(metrics.accuracy(y_true, y_pred[:, None]), expected)


@pytest.mark.parametrize("shape", [(1,), (9,), (9, 1), (5, 3)])
@pytest.mark.parametrize("threshold", [0.5, 0.2])
def test_binary_accuracy(rng, shape, threshold):
    y_true = rng.integers(0, 2, size=shape)
    y_pred = rng.random(shape)
    expected = ((y_pred > threshold) == y_true).astype(float)
    if expected.ndim == 2:
        expected = expected.mean(axis=-1)
    np.testing.assert_allclose(metrics.binary_accuracy(y_true, y_pred, threshold=threshold), expected)
    m = metrics.BinaryAccuracy(threshold=threshold)
    m.update_state(y_true, y_pred)
    assert m.result() == pytest.approx(expected.mean())


def test_binary_accuracy_column_predictions_against_flat_labels(rng):
    y_true = rng.integers(0, 2, size=12)
    y_pred = rng.random((12, 1))
    expected = ((y_pred[:, 0] > 0.5) == y_true).mean()
    assert metrics.BinaryAccuracy()(y_true, y_pred) == pytest.approx(expected)


@pytest.mark.parametrize("n,c", [(1, 4), (13, 5), (8, 2)])
def test_categorical_and_sparse_accuracy(rng, n, c):
    labels = rng.integers(0, c, size=n)
    one_hot = np.eye(c)[labels]
    scores = _scores(rng, n, c)
    expected = (scores.argmax(1) == labels).astype(float)
    np.testing.assert_array_equal(metrics.categorical_accuracy(one_hot, scores), expected)
    np.testing.assert_array_equal(metrics.sparse_categorical_accuracy(labels, scores), expected)
    np.testing.assert_array_equal(metrics.sparse_categorical_accuracy(labels[:, None], scores), expected)
    np.testing.assert_array_equal(metrics.sparse_categorical_accuracy(labels.astype(np.float32), scores),
                                  expected)
    m = metrics.CategoricalAccuracy()
    m.update_state(one_hot, scores)
    assert m.result() == pytest.approx(expected.mean())
    s = metrics.SparseCategoricalAccuracy()
    s.update_state(labels, scores)
    assert s.result() == pytest.approx(expected.mean())


def _top_k_reference(labels, scores, k):
    out = []
    for row, label in zip(scores, labels):
        out.append(float(np.sum(row > row[label]) < k))
    return np.array(out)


@pytest.mark.parametrize("k", [1, 2, 3, 7])
def test_top_k(rng, k):
    n, c = 11, 6
    labels = rng.integers(0, c, size=n)
    scores = _scores(rng, n, c)
    expected = _top_k_reference(labels, scores, k)
    np.testing.assert_array_equal(metrics.sparse_top_k_categorical_accuracy(labels, scores, k=k), expected)
    np.testing.assert_array_equal(metrics.top_k_categorical_accuracy(np.eye(c)[labels], scores, k=k), expected)
    m = metrics.SparseTopKCategoricalAccuracy(k=k)
    m.update_state(labels, scores)
    assert m.result() == pytest.approx(expected.mean())
    m = metrics.TopKCategoricalAccuracy(k=k)
    m.update_state(np.eye(c)[labels], scores)
    assert m.result() == pytest.approx(expected.mean())
    if k == 1:  # top-1 is plain accuracy when there are no ties
        np.testing.assert_array_equal(expected, (scores.argmax(1) == labels).astype(float))


def test_top_k_ties_at_the_boundary_count_as_hits():
    scores = np.array([[0.5, 0.5, 0.0], [0.1, 0.2, 0.7]])
    assert metrics.sparse_top_k_categorical_accuracy([1, 0], scores, k=1).tolist() == [1.0, 0.0]


@pytest.mark.parametrize("shape", [(7,), (7, 1), (7, 3), (2, 3, 4)])
def test_mse_mae(rng, shape):
    y_true = rng.standard_normal(shape)
    y_pred = rng.standard_normal(shape)
    d = y_pred - y_true
    ref_mse = (d ** 2).mean(axis=-1) if d.ndim >= 2 else d ** 2
    ref_mae = np.abs(d).mean(axis=-1) if d.ndim >= 2 else np.abs(d)
    np.testing.assert_allclose(metrics.mean_squared_error(y_true, y_pred), ref_mse)
    np.testing.assert_allclose(metrics.mean_absolute_error(y_true, y_pred), ref_mae)
    m, a = metrics.MeanSquaredError(), metrics.MeanAbsoluteError()
    m.update_state(y_true, y_pred)
    a.update_state(y_true, y_pred)
    assert m.result() == pytest.approx((d ** 2).mean())
    assert a.result() == pytest.approx(np.abs(d).mean())


# ---- running state -----------------------------------------------------------------

def test_update_accumulates_over_batches_and_resets(rng):
    labels = rng.integers(0, 4, size=30)
    scores = _scores(rng, 30, 4)
    m = metrics.SparseCategoricalAccuracy()
    for start in range(0, 30, 7):  # uneven batches: 7, 7, 7, 7, 2
        m.update_state(labels[start:start + 7], scores[start:start + 7])
    assert m.result() == pytest.approx((scores.argmax(1) == labels).mean())
    m.reset_state()
    assert m.result() == 0.0
    m.update_state(labels[:1], scores[:1])
    assert m.result() == float(scores[0].argmax() == labels[0])


def test_sample_weight(rng):
    y_true = rng.standard_normal((6, 3))
    y_pred = rng.standard_normal((6, 3))
    w = rng.random(6)
    per_sample = ((y_pred - y_true) ** 2).mean(1)
    m = metrics.MeanSquaredError()
    m.update_state(y_true, y_pred, sample_weight=w)
    assert m.result() == pytest.approx(np.sum(per_sample * w) / np.sum(w))
    m.update_state(y_true, y_pred, sample_weight=w[:, None])  # (N, 1) weights also accepted
    assert m.result() == pytest.approx(np.sum(per_sample * w) / np.sum(w))
    with pytest.raises(ValueError, match="sample_weight"):
        m.update_state(y_true, y_pred, sample_weight=np.ones(5))


def test_mean_metric():
    m = metrics.Mean()
    m.update_state([1.0, 2.0, 3.0])
    m.update_state(5.0)
    assert m.result() == pytest.approx(11.0 / 4)
    m.reset_state()
    m.update_state([1.0, 3.0], sample_weight=[3.0, 1.0])
    assert m.result() == pytest.approx(1.5)


def test_metrics_accept_tensors(rng):
    mn = pytest.importorskip("minnet")
    if not hasattr(mn, "tensor"):
        pytest.skip("minnet.tensor not available yet")
    scores = _scores(rng, 5, 3)
    labels = rng.integers(0, 3, size=5)
    x = mn.tensor(scores, requires_grad=True)
    m = metrics.SparseCategoricalAccuracy()
    m.update_state(labels, x)
    assert m.result() == pytest.approx((scores.argmax(1) == labels).mean())


# ---- errors ---------------------------------------------------------------------------

def test_errors_name_the_argument(rng):
    with pytest.raises(ValueError, match=r"y_true.shape=\(3, 2\).*y_pred.shape=\(3, 4\)"):
        metrics.categorical_accuracy(np.zeros((3, 2)), np.zeros((3, 4)))
    with pytest.raises(ValueError, match="batch size"):
        metrics.sparse_categorical_accuracy([0, 1], np.zeros((3, 4)))
    with pytest.raises(ValueError, match="integer class labels"):
        metrics.sparse_categorical_accuracy([0.5, 1, 2], np.zeros((3, 4)))
    with pytest.raises(ValueError, match="`k`"):
        metrics.TopKCategoricalAccuracy(k=0)
    with pytest.raises(ValueError, match="`threshold`"):
        metrics.BinaryAccuracy(threshold="half")
    with pytest.raises(TypeError, match="y_pred"):
        metrics.accuracy([1, 2], ["a", "b"])


# ---- lookup ---------------------------------------------------------------------------

@pytest.mark.parametrize("loss,expected", [
    ("binary_crossentropy", metrics.BinaryAccuracy),
    ("categorical_crossentropy", metrics.CategoricalAccuracy),
    ("sparse_categorical_crossentropy", metrics.SparseCategoricalAccuracy),
    ("BinaryCrossentropy", metrics.BinaryAccuracy),
])
def test_accuracy_resolved_from_loss_name(loss, expected):
    m = metrics.get("accuracy", loss=loss)
    assert type(m) is expected and m.name == "accuracy"
    assert metrics.get("acc", loss=loss).name == "acc"


def test_accuracy_resolved_from_loss_object():
    losses = pytest.importorskip("minnet.losses")
    assert type(metrics.get("accuracy", loss=losses.SparseCategoricalCrossentropy(from_logits=True))) \
        is metrics.SparseCategoricalAccuracy
    assert type(metrics.get("accuracy", loss=losses.BinaryCrossentropy())) is metrics.BinaryAccuracy
    assert type(metrics.get("accuracy", loss=losses.CategoricalCrossentropy)) is metrics.CategoricalAccuracy


@pytest.mark.parametrize("y_true,y_pred,expected", [
    (np.array([1, 0, 1]), np.array([[0.8], [0.3], [0.4]]), metrics.binary_accuracy),
    (np.array([1.0, 0.0, 1.0]), np.array([0.8, 0.3, 0.4]), metrics.binary_accuracy),
    (np.array([2, 0, 1]), np.array([[0.1, 0.2, 0.7], [0.9, 0.05, 0.05], [0.5, 0.2, 0.3]]),
     metrics.sparse_categorical_accuracy),
    (np.array([[2], [0], [1]]), np.array([[0.1, 0.2, 0.7], [0.9, 0.05, 0.05], [0.5, 0.2, 0.3]]),
     metrics.sparse_categorical_accuracy),
    (np.eye(3)[[2, 0, 1]], np.array([[0.1, 0.2, 0.7], [0.9, 0.05, 0.05], [0.5, 0.2, 0.3]]),
     metrics.categorical_accuracy),
])
def test_accuracy_resolved_from_shapes(y_true, y_pred, expected):
    m = metrics.get("accuracy", loss="mse")
    assert m.name == "accuracy"
    m.update_state(y_true, y_pred)
    assert m.resolved is expected
    assert m.result() == pytest.approx(expected(y_true, y_pred).mean())
    m.reset_state()
    assert m.result() == 0.0


def test_get_names_instances_and_callables():
    assert type(metrics.get("mse")) is metrics.MeanSquaredError and metrics.get("mse").name == "mse"
    assert type(metrics.get("mae")) is metrics.MeanAbsoluteError
    assert type(metrics.get("top_k_categorical_accuracy")) is metrics.TopKCategoricalAccuracy
    assert type(metrics.get("sparse_top_k_categorical_accuracy")) is metrics.SparseTopKCategoricalAccuracy
    assert type(metrics.get("BinaryAccuracy")) is metrics.BinaryAccuracy
    inst = metrics.BinaryAccuracy(threshold=0.3)
    assert metrics.get(inst) is inst

    def my_error(y_true, y_pred):
        return np.abs(np.asarray(y_true) - np.asarray(y_pred)) * 2

    m = metrics.get(my_error)
    assert m.name == "my_error"
    m.update_state([1.0, 2.0], [1.5, 2.0])
    assert m.result() == pytest.approx(0.5)
    with pytest.raises(ValueError, match=r"Unknown metric: 'accuracyy'.*Did you mean"):
        metrics.get("accuracyy")
    with pytest.raises(TypeError, match="identifier"):
        metrics.get(3)


def test_config_round_trip():
    for m in (metrics.BinaryAccuracy(threshold=0.3, name="ba"), metrics.SparseTopKCategoricalAccuracy(k=2),
              metrics.MeanAbsoluteError(), metrics.get("accuracy")):
        clone = metrics.deserialize(metrics.serialize(m))
        assert type(clone) is type(m) and clone.get_config() == m.get_config()
    assert "threshold=0.3" in repr(metrics.BinaryAccuracy(threshold=0.3))


# ---- "accuracy" knows the loss (issue 13.6, issue 17) ---------------------------------------

def test_accuracy_with_logits_loss_thresholds_at_zero(rng):
    from minnet import losses
    logits = rng.standard_normal((200, 1)) * 2
    labels = (rng.random((200, 1)) < 1 / (1 + np.exp(-3 * logits))).astype(np.float64)
    m = metrics.get("accuracy", loss=losses.BinaryCrossentropy(from_logits=True))
    assert type(m) is metrics.BinaryAccuracy and m.threshold == 0.0
    m.update_state(labels, logits)
    assert m.result() == pytest.approx(((logits > 0) == labels).mean())
    assert metrics.get("accuracy", loss=losses.BinaryCrossentropy()).threshold == 0.5
    assert metrics.get("accuracy", loss="binary_crossentropy").threshold == 0.5


def test_accuracy_with_ignore_class_skips_ignored_labels(rng):
    from minnet import losses
    scores = rng.standard_normal((10, 4))
    labels = rng.integers(0, 4, 10)
    labels[[1, 4, 7]] = -1
    m = metrics.get("accuracy", loss=losses.SparseCategoricalCrossentropy(ignore_class=-1))
    assert m.ignore_class == -1
    m.update_state(labels, scores)
    keep = labels != -1
    assert m.result() == pytest.approx((scores.argmax(1)[keep] == labels[keep]).mean())
    w = rng.random(10)
    m.reset_state()
    m.update_state(labels, scores, sample_weight=w)
    assert m.result() == pytest.approx(((scores.argmax(1) == labels) * w)[keep].sum() / w[keep].sum())
    with pytest.raises(ValueError, match=r"y_true.*\[0, 4\)"):
        metrics.SparseCategoricalAccuracy().update_state(labels, scores)
