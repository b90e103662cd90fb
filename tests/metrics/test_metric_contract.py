"""Keras 3's Metric contract (issue 27, item 4): add_variable, the __init__ order, and when
reset_state / update_state / result are called during fit and evaluate."""
import numpy as np
import pytest

import minnet as mn
from minnet import layers


def test_init_does_not_call_reset_state_before_the_subclass_made_its_state():
    calls = []

    class Counting(mn.metrics.Metric):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.seen = self.add_variable(shape=(), initializer="zeros", name="seen", dtype="int64")
            self.total_weight = self.add_variable(shape=(2,), initializer="ones", name="w")

        def update_state(self, y_true, y_pred, sample_weight=None):
            calls.append("update")
            self.seen.assign_add(len(np.asarray(y_true)))

        def result(self):
            calls.append("result")
            return self.seen

        def reset_state(self):
            calls.append("reset")
            self.seen.assign(0)        # would fail if called before __init__ made it

    metric = Counting(name="counting")
    assert calls == []
    assert metric.seen.dtype == np.int64 and metric.seen.data == 0
    np.testing.assert_array_equal(metric.total_weight.data, [1, 1])
    assert [v.name for v in metric.variables] == ["counting/seen", "counting/w"]
    metric.update_state([1, 2, 3], [1, 2, 3])
    assert int(metric.result().data) == 3


def test_default_reset_state_zeroes_the_variables():
    class Sum(mn.metrics.Metric):
        def __init__(self):
            super().__init__(name="sum")
            self.acc = self.add_variable((), "zeros")

        def update_state(self, values, sample_weight=None):
            self.acc.assign_add(float(np.sum(values)))

        def result(self):
            return self.acc

    metric = Sum()
    metric.update_state([1.0, 2.0])
    assert float(metric.result()) == 3.0
    metric.reset_state()
    assert float(metric.result()) == 0.0


def test_fit_and_evaluate_call_reset_update_result_when_keras_does():
    log = []

    class Spy(mn.metrics.Metric):
        def __init__(self):
            super().__init__(name="spy")
            self.n = self.add_variable((), "zeros")

        def update_state(self, y_true, y_pred, sample_weight=None):
            log.append("update")
            self.n.assign_add(1.0)

        def result(self):
            log.append("result")
            return self.n

        def reset_state(self):
            log.append("reset")
            self.n.assign(0.0)

    x = np.ones((8, 2), np.float32)
    y = np.zeros((8, 1), np.float32)
    model = mn.Sequential([layers.Input((2,)), layers.Dense(1)])
    model.compile("sgd", "mse", metrics=[Spy()])
    history = model.fit(x, y, batch_size=4, epochs=2, verbose=0)
    # each epoch: reset, then per batch one update and the logs' result
    assert log == ["reset", "update", "result", "update", "result"] * 2
    assert history.history["spy"] == [2.0, 2.0]
    log.clear()
    assert model.evaluate(x, y, batch_size=4, verbose=0, return_dict=True)["spy"] == 2.0
    assert log[0] == "reset" and log.count("update") == 2


def test_builtin_metrics_still_start_from_zero():
    for metric in (mn.metrics.Precision(), mn.metrics.AUC(), mn.metrics.MeanIoU(num_classes=2),
                   mn.metrics.R2Score(), mn.metrics.F1Score(), mn.metrics.Mean()):
        assert float(metric.result()) == 0.0 or np.all(np.asarray(metric.result()) == 0)


def test_add_variable_validates_through_the_initializer():
    class Bad(mn.metrics.Metric):
        def __init__(self):
            super().__init__()
            self.v = self.add_variable((2,), "no_such_initializer")

    with pytest.raises(ValueError, match="no_such_initializer"):
        Bad()


def test_a_subclass_making_its_state_in_reset_state_still_works():
    class OldStyle(mn.metrics.Metric):       # relies on the state being made by reset_state
        def reset_state(self):
            self.hits = 0.0

        def update_state(self, y_true, y_pred, sample_weight=None):
            self.hits += float(np.sum(np.asarray(y_true) == np.asarray(y_pred)))

        def result(self):
            return self.hits

    metric = OldStyle()
    metric.update_state([1, 2], [1, 3])
    assert metric.result() == 1.0
    with pytest.raises(AttributeError, match="nothing_here"):
        metric.nothing_here
