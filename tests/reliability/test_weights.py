"""Weights are validated like x (#31 item 4): class_weight keys are class indices (ints >= 0;
keys of classes absent from y are ignored, as in Keras 3), and NaN/inf in y, sample_weight or
a class weight is refused up front, with the same ``check_finite=False`` escape as x."""
import numpy as np
import pytest

import minnet as mn

X = np.random.default_rng(0).random((12, 3)).astype(np.float32)
Y = np.array([0, 1, 2] * 4)


def _model(loss=None, units=3):
    mn.manual_seed(0)
    model = mn.Sequential([mn.Input((3,)), mn.layers.Dense(units)])
    model.compile("sgd", loss or mn.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def _fit(model, y=Y, **kwargs):
    model.fit(X, y, epochs=2, batch_size=4, verbose=0, shuffle=False, **kwargs)
    return model.get_weights()


@pytest.mark.parametrize("key", [-1, -3, 1.7, 0.5, float("nan"), "1", None, (1,)])
@pytest.mark.parametrize("source", ["arrays", "generator"])
def test_a_class_weight_key_that_is_not_a_class_index_is_refused(key, source):
    weights = {0: 1.0, 1: 2.0, 2: 1.0, key: 5.0}
    model = _model()
    with pytest.raises(ValueError, match="class_weight") as info:
        if source == "arrays":
            _fit(model, class_weight=weights)
        else:
            batches = ((X[i:i + 4], Y[i:i + 4]) for i in range(0, 12, 4))
            model.fit(batches, steps_per_epoch=3, class_weight=weights, verbose=0)
    assert repr(key) in str(info.value)
    assert model.optimizer.iterations == 0            # refused before the first step


def test_keys_of_absent_classes_are_ignored_as_keras_does_and_whole_floats_are_indices():
    plain = _fit(_model(), class_weight={0: 1.0, 1: 2.0, 2: 3.0})
    extra = _fit(_model(), class_weight={0: 1.0, 1: 2.0, 2: 3.0, 7: 9.0, 10 ** 12: 4.0})
    floats = _fit(_model(), class_weight={0.0: 1.0, 1.0: 2.0, np.int64(2): 3.0})
    for a, b, c in zip(plain, extra, floats):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, c)


def test_the_keras_oracle_ignores_an_unknown_class_key(keras):
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(3, activation="softmax")])
    model.compile("sgd", "sparse_categorical_crossentropy")
    model.fit(X, Y, epochs=1, verbose=0, class_weight={0: 1.0, 1: 2.0, 2: 3.0, 7: 9.0})


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("where", ["class_weight", "sample_weight", "y"])
def test_nonfinite_weights_and_targets_are_refused_like_x_with_the_same_escape(where, bad):
    def kwargs_and_y():
        if where == "class_weight":
            return {"class_weight": {0: 1.0, 1: bad, 2: 1.0}}, Y, _model()
        if where == "sample_weight":
            weights = np.ones(12)
            weights[5] = bad
            return {"sample_weight": weights}, Y, _model()
        y = np.ones((12, 1), np.float32)
        y[5] = bad
        return {}, y, _model("mse", units=1)

    kwargs, y, model = kwargs_and_y()
    before = model.get_weights()
    with pytest.raises(ValueError) as info:
        _fit(model, y=y, **kwargs)
    message = str(info.value)
    assert where in message and "check_finite=False" in message
    if where != "class_weight":
        assert "[5]" in message                       # the first bad sample is named
    for a, b in zip(before, model.get_weights()):
        np.testing.assert_array_equal(a, b)
    kwargs, y, model = kwargs_and_y()
    _fit(model, y=y, check_finite=False, **kwargs)   # the escape trains anyway (to NaN)
    assert not all(np.isfinite(w).all() for w in model.get_weights())


@pytest.mark.parametrize("call", ["train_on_batch", "test_on_batch"])
def test_single_batch_calls_refuse_nonfinite_sample_weights_too(call):
    model = _model()
    model.build((None, 3))
    weights = np.ones(12)
    weights[2] = np.nan
    with pytest.raises(ValueError, match=r"sample_weight\[2\]"):
        getattr(model, call)(X, Y, sample_weight=weights)


def test_sample_weight_of_strings_or_bools_is_refused():
    with pytest.raises(TypeError, match="sample_weight"):
        _fit(_model(), sample_weight=np.array(["a"] * 12))
    with pytest.raises(TypeError, match="class_weight"):
        _fit(_model(), class_weight={0: 1.0, 1: "2", 2: 1.0})
