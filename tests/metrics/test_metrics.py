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
    expected = ((y_pred > threshold) == y_true).astype(float)   # element-wise, as Keras 3.15
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


# ---- metrics added with issue 18: Keras's documented values, streaming == whole set == NumPy --

def _stream(make, y_true, y_pred, sample_weight=None, splits=(0, 7, 8, 20, None)):
    """The metric fed in uneven batches, and the same metric fed the whole set at once."""
    whole = make()
    whole.update_state(y_true, y_pred, sample_weight=sample_weight)
    streamed = make()
    bounds = [b if b is not None else len(y_true) for b in splits]
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        if hi > lo:
            streamed.update_state(y_true[lo:hi], y_pred[lo:hi],
                                  sample_weight=None if sample_weight is None else sample_weight[lo:hi])
    return streamed.result(), whole.result()


def test_keras_documented_values():
    m = metrics.AUC(num_thresholds=3)
    m.update_state([0, 0, 1, 1], [0, 0.5, 0.3, 0.9])
    assert m.result() == pytest.approx(0.75)
    m = metrics.MeanIoU(num_classes=2)
    m.update_state([0, 0, 1, 1], [0, 1, 0, 1], sample_weight=[0.3, 0.3, 0.3, 0.1])
    assert m.result() == pytest.approx(0.23809525, rel=1e-6)
    m = metrics.R2Score()
    m.update_state(np.array([[1.0], [4.0], [3.0]]), np.array([[2.0], [4.0], [4.0]]))
    assert m.result() == pytest.approx(0.57142854, rel=1e-6)
    y_true = np.array([[1, 1, 1], [1, 0, 0], [1, 1, 0]], np.float32)
    y_pred = np.array([[0.2, 0.6, 0.7], [0.2, 0.6, 0.6], [0.6, 0.8, 0.0]], np.float32)
    m = metrics.F1Score(threshold=0.5)
    m.update_state(y_true, y_pred)
    np.testing.assert_allclose(m.result(), [0.5, 0.8, 0.6666667], rtol=1e-5)
    m = metrics.FBetaScore(beta=2.0, threshold=0.5)
    m.update_state(y_true, y_pred)
    np.testing.assert_allclose(m.result(), [0.3846154, 0.90909094, 0.8333334], rtol=1e-5)
    m = metrics.Precision(thresholds=[0.5, 0.8])
    m.update_state([0, 1, 1, 1], [1, 0, 0.6, 0.9])
    np.testing.assert_allclose(m.result(), [2 / 3, 0.5])


@pytest.mark.parametrize("weighted", [False, True])
def test_precision_recall_stream_and_match_numpy(rng, weighted):
    y_true = rng.integers(0, 2, (40, 3)).astype(np.float64)
    y_pred = rng.random((40, 3))
    w = rng.random(40) if weighted else None
    wb = np.ones((40, 3)) if w is None else np.repeat(w[:, None], 3, axis=1)
    for threshold in (0.5, 0.3):
        pos = y_pred > threshold
        tp = (wb * (pos & (y_true == 1))).sum()
        fp = (wb * (pos & (y_true == 0))).sum()
        fn = (wb * (~pos & (y_true == 1))).sum()
        for make, expected in ((lambda: metrics.Precision(thresholds=threshold), tp / (tp + fp)),
                               (lambda: metrics.Recall(thresholds=threshold), tp / (tp + fn))):
            streamed, whole = _stream(make, y_true, y_pred, w)
            assert streamed == pytest.approx(whole, rel=1e-12) and whole == pytest.approx(expected)
    # class_id and top_k
    m = metrics.Precision(class_id=1)
    m.update_state(y_true, y_pred)
    pos = y_pred[:, 1] > 0.5
    assert m.result() == pytest.approx((pos & (y_true[:, 1] == 1)).sum() / pos.sum())
    m = metrics.Recall(top_k=1)
    m.update_state(y_true, y_pred)
    top = y_pred == y_pred.max(axis=1, keepdims=True)
    hit = top                       # Keras: with top_k alone, no 0.5 threshold
    assert m.result() == pytest.approx((hit & (y_true == 1)).sum() / (y_true == 1).sum())


def _exact_roc_auc(t, p):
    """Probability that a positive outranks a negative (ties count half)."""
    pos, neg = p[t == 1], p[t == 0]
    return ((pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()) / (
        len(pos) * len(neg))


def _keras_auc_numpy(t, p, w, n, curve, method):
    """Keras's AUC written out once more, directly on the whole set."""
    th = np.concatenate([[-1e-7], [(i + 1) / (n - 1) for i in range(n - 2)], [1 + 1e-7]])
    above = p[None, :] > th[:, None]
    tp = (above & (t == 1)) @ w
    fp = (above & (t == 0)) @ w
    tn = (~above & (t == 0)) @ w
    fn = (~above & (t == 1)) @ w
    div = lambda a, b: np.where(b != 0, a / np.where(b != 0, b, 1), 0.0)
    if curve == "PR" and method == "interpolation":
        dtp = tp[:-1] - tp[1:]
        pp = tp + fp
        dp = pp[:-1] - pp[1:]
        slope = div(dtp, np.maximum(dp, 0))
        intercept = tp[1:] - slope * pp[1:]
        ratio = np.where((pp[:-1] > 0) & (pp[1:] > 0), div(pp[:-1], np.maximum(pp[1:], 0)), 1.0)
        return div(slope * (dtp + intercept * np.log(ratio)), np.maximum(tp[1:] + fn[1:], 0)).sum()
    rec = div(tp, tp + fn)
    x, y = (div(fp, fp + tn), rec) if curve == "ROC" else (rec, div(tp, tp + fp))
    h = {"interpolation": (y[:-1] + y[1:]) / 2, "minoring": np.minimum(y[:-1], y[1:]),
         "majoring": np.maximum(y[:-1], y[1:])}[method]
    return ((x[:-1] - x[1:]) * h).sum()


@pytest.mark.parametrize("curve,method", [("ROC", "interpolation"), ("ROC", "minoring"),
                                          ("ROC", "majoring"), ("PR", "interpolation"),
                                          ("PR", "majoring")])
def test_auc_streams_and_matches_keras_formula(rng, curve, method):
    t = rng.integers(0, 2, 300)
    p = np.clip(0.3 * t + rng.random(300) * 0.7, 0, 1)
    w = rng.random(300)
    make = lambda: metrics.AUC(num_thresholds=50, curve=curve, summation_method=method)
    streamed, whole = _stream(make, t, p, w, splits=(0, 100, 101, 250, None))
    assert streamed == pytest.approx(whole, rel=1e-12)
    assert whole == pytest.approx(_keras_auc_numpy(t, p, w, 50, curve, method), rel=1e-10)
    if curve == "ROC" and method == "interpolation":     # close to the exact area
        m = metrics.AUC(num_thresholds=1000)
        m.update_state(t, p)
        assert m.result() == pytest.approx(_exact_roc_auc(t, p), abs=2e-3)


def test_auc_from_logits_and_multi_label(rng):
    t = rng.integers(0, 2, (60, 2))
    logits = rng.standard_normal((60, 2)) + t
    m = metrics.AUC(from_logits=True, multi_label=True, label_weights=[1.0, 3.0])
    m.update_state(t, logits)
    parts = []
    for j in range(2):
        a = metrics.AUC()
        a.update_state(t[:, j], 1 / (1 + np.exp(-logits[:, j])))
        parts.append(a.result())
    assert m.result() == pytest.approx((parts[0] + 3 * parts[1]) / 4)


@pytest.mark.parametrize("average", [None, "micro", "macro", "weighted"])
@pytest.mark.parametrize("threshold", [None, 0.4])
def test_fbeta_streams_and_matches_numpy(rng, average, threshold):
    labels = rng.integers(0, 4, 50)
    y_true = np.eye(4)[labels]
    y_pred = rng.random((50, 4))
    make = lambda: metrics.FBetaScore(average=average, beta=0.5, threshold=threshold)
    streamed, whole = _stream(make, y_true, y_pred)
    np.testing.assert_allclose(streamed, whole, rtol=1e-12)
    pred = (y_pred >= y_pred.max(1, keepdims=True)) if threshold is None else (y_pred > threshold)
    axis = None if average == "micro" else 0
    tp = (pred & (y_true == 1)).sum(axis)
    fp = (pred & (y_true == 0)).sum(axis)
    fn = (~pred & (y_true == 1)).sum(axis)
    prec, rec = tp / (tp + fp + 1e-7), tp / (tp + fn + 1e-7)
    f = 1.25 * prec * rec / (0.25 * prec + rec + 1e-7)
    if average == "weighted":
        support = y_true.sum(0)
        f = (f * support / support.sum()).sum()
    elif average is not None:
        f = np.mean(f)
    np.testing.assert_allclose(whole, f, rtol=1e-6)


def test_meaniou_rmse_mape_r2_stream_and_match_numpy(rng):
    t = rng.integers(0, 3, 40)
    scores = rng.random((40, 3))
    make = lambda: metrics.MeanIoU(num_classes=3, sparse_y_pred=False)
    streamed, whole = _stream(make, t, scores)
    cm = np.zeros((3, 3))
    for a, b in zip(t, scores.argmax(1)):
        cm[a, b] += 1
    iou = np.diag(cm) / (cm.sum(0) + cm.sum(1) - np.diag(cm))
    assert streamed == pytest.approx(whole) and whole == pytest.approx(iou.mean())
    np.testing.assert_array_equal(metrics.confusion_matrix(t, scores.argmax(1), 3), cm)

    y, p, w = rng.standard_normal((40, 2)) + 3, rng.standard_normal((40, 2)) + 3, rng.random(40)
    streamed, whole = _stream(metrics.RootMeanSquaredError, y, p, w)
    expected = np.sqrt((w[:, None] * (y - p) ** 2).sum() / (2 * w.sum()))
    assert streamed == pytest.approx(whole) and whole == pytest.approx(expected)
    streamed, whole = _stream(metrics.MeanAbsolutePercentageError, y, p)
    assert streamed == pytest.approx(whole) and whole == pytest.approx(100 * np.mean(np.abs((y - p) / y)))
    for aggregation in ("uniform_average", "variance_weighted_average", None):
        streamed, whole = _stream(lambda: metrics.R2Score(class_aggregation=aggregation), y, p)
        ss_res = ((y - p) ** 2).sum(0)
        ss_tot = ((y - y.mean(0)) ** 2).sum(0)
        r2 = 1 - ss_res / ss_tot
        expected = {"uniform_average": r2.mean(), None: r2,
                    "variance_weighted_average": (r2 * ss_tot).sum() / ss_tot.sum()}[aggregation]
        np.testing.assert_allclose(streamed, whole, rtol=1e-10)
        np.testing.assert_allclose(whole, expected, rtol=1e-10)


def test_classification_report_and_confusion_matrix_errors():
    report = metrics.classification_report([0, 1, 1, 2], [0, 0, 1, 2], output_dict=True)
    assert report["1"] == {"precision": 1.0, "recall": 0.5, "f1-score": pytest.approx(2 / 3),
                           "support": 2}
    assert report["accuracy"] == 0.75
    assert report["macro avg"]["precision"] == pytest.approx((0.5 + 1 + 1) / 3)
    text = metrics.classification_report([0, 1], np.array([[0.9, 0.1], [0.2, 0.8]]),
                                         target_names=["cat", "dog"])
    assert "cat" in text and "weighted avg" in text and "1.00" in text
    with pytest.raises(ValueError, match=r"y_true.*\[0, 2\)"):
        metrics.confusion_matrix([0, 5], [0, 1], num_classes=2)


@pytest.mark.parametrize("name,cls", [
    ("precision", metrics.Precision), ("recall", metrics.Recall), ("auc", metrics.AUC),
    ("f1_score", metrics.F1Score), ("fbeta_score", metrics.FBetaScore),
    ("rmse", metrics.RootMeanSquaredError), ("mape", metrics.MeanAbsolutePercentageError),
    ("r2_score", metrics.R2Score), ("AUC", metrics.AUC),
])
def test_new_metric_names_and_config_round_trip(name, cls):
    m = metrics.get(name)
    assert type(m) is cls
    clone = metrics.deserialize(metrics.serialize(m))
    assert type(clone) is cls and clone.get_config() == m.get_config()
    iou = metrics.MeanIoU(num_classes=4, ignore_class=0)
    assert metrics.deserialize(metrics.serialize(iou)).get_config() == iou.get_config()


def test_compiled_accuracy_follows_the_loss_in_fit(rng):
    """Issue 13.6 and issue 17 through compile/fit: logits BCE thresholds at 0; a fully
    ignored batch neither fails the metric nor turns the weights to NaN."""
    import minnet as mn
    from minnet import layers, losses
    x = rng.standard_normal((64, 4)).astype(np.float32)
    y = (x[:, :1] > 0).astype(np.float32)
    model = mn.Sequential([layers.Dense(1)])
    model.compile(optimizer="sgd", loss=losses.BinaryCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    model.fit(x, y, epochs=1, batch_size=16, verbose=0)
    logits = model.predict(x)
    result = model.evaluate(x, y, return_dict=True, verbose=0)
    assert result["accuracy"] == pytest.approx(((logits > 0) == (y > 0.5)).mean())

    labels = rng.integers(0, 3, 64)
    labels[:16] = -1                        # the first batch is entirely padding
    model = mn.Sequential([layers.Dense(3)])
    model.compile(optimizer="sgd", loss=losses.SparseCategoricalCrossentropy(from_logits=True,
                                                                            ignore_class=-1),
                  metrics=["accuracy"])
    model.fit(x, labels, epochs=1, batch_size=16, shuffle=False, verbose=0)
    assert all(np.all(np.isfinite(w)) for w in model.get_weights())
    result = model.evaluate(x, labels, return_dict=True, verbose=0)
    keep = labels != -1
    assert result["accuracy"] == pytest.approx((model.predict(x).argmax(1)[keep] == labels[keep]).mean())
