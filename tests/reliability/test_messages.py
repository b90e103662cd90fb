"""Messages that name the cause (#31 item 9): a step returning None, wrapped recurrent layers
with an unknown time axis, gradient hooks returning non-gradients, labels beyond int64, and
unknown names (one suggestion helper, ``minnet._registry.did_you_mean``, for every kind)."""
import re

import numpy as np
import pytest

import minnet as mn
from minnet import _registry


# ---- a step that returns None -------------------------------------------------------------

class _ForgetsReturn(mn.Model):
    def __init__(self, which):
        super().__init__()
        self.dense = mn.layers.Dense(1)
        self.which = which

    def call(self, x, training=False):
        return self.dense(x)

    def train_step(self, data):
        if self.which != "train_step":
            return super().train_step(data)
        super().train_step(data)               # forgot the `return`

    def test_step(self, data):
        if self.which != "test_step":
            return super().test_step(data)
        super().test_step(data)

    def predict_step(self, data):
        if self.which != "predict_step":
            return super().predict_step(data)
        super().predict_step(data)


@pytest.mark.parametrize("which", ["train_step", "test_step", "predict_step"])
def test_a_step_returning_none_is_named_not_reported_as_empty_data(which):
    model = _ForgetsReturn(which)
    model.compile("sgd", "mse")
    x, y = np.ones((4, 2), np.float32), np.ones((4, 1), np.float32)
    call = {"train_step": lambda: model.fit(x, y, verbose=0),
            "test_step": lambda: model.evaluate(x, y, verbose=0),
            "predict_step": lambda: model.predict(x, verbose=0)}[which]
    with pytest.raises(TypeError) as info:
        call()
    message = str(info.value)
    assert f"_ForgetsReturn.{which}" in message and "return" in message
    assert "empty" not in message


# ---- wrappers take what the wrapped layer takes --------------------------------------------

@pytest.mark.parametrize("kwargs", [{}, {"return_sequences": True}, {"return_state": True},
                                    {"return_sequences": True, "return_state": True}])
@pytest.mark.parametrize("merge_mode", ["concat", "sum", "mul", "ave", None])
def test_bidirectional_accepts_an_unknown_time_axis_like_the_plain_layer(merge_mode, kwargs):
    plain = mn.Sequential([mn.Input((None, 2)), mn.layers.LSTM(3, **kwargs)])     # accepted
    wrapper = mn.layers.Bidirectional(mn.layers.LSTM(3, **kwargs), merge_mode=merge_mode)
    inputs = mn.Input((None, 2))
    symbolic = wrapper(inputs)                                                  # functional
    x = np.random.default_rng(0).standard_normal((2, 5, 2)).astype(np.float32)
    real = wrapper(x)
    declared = wrapper.compute_output_shape((2, 5, 2))
    flat = real if isinstance(real, (list, tuple)) else [real]
    flat_declared = declared if isinstance(declared, list) else [declared]
    assert [tuple(t.shape) for t in flat] == [tuple(s) for s in flat_declared]
    unknown = wrapper.compute_output_shape((None, None, 2))
    assert len(unknown if isinstance(unknown, list) else [unknown]) == len(flat)
    assert plain.built and symbolic is not None
    if not kwargs and merge_mode is not None:
        model = mn.Sequential([mn.Input((None, 2)), mn.layers.Bidirectional(mn.layers.LSTM(3),
                                                                             merge_mode=merge_mode)])
        assert model.predict(x, verbose=0).shape == tuple(declared)


def test_time_distributed_accepts_an_unknown_time_axis():
    model = mn.Sequential([mn.Input((None, 3)), mn.layers.TimeDistributed(mn.layers.Dense(4))])
    assert model.predict(np.ones((2, 7, 3), np.float32), verbose=0).shape == (2, 7, 4)
    assert mn.layers.TimeDistributed(mn.layers.Dense(4)).compute_output_shape((None, None, 3)) \
        == (None, None, 4)


# ---- hooks that return something that is not a gradient ------------------------------------

def _string_hook(*args):
    return "oops"


def test_a_tensor_hook_returning_a_string_is_named():
    t = mn.tensor(np.ones(3), requires_grad=True)
    y = t * 2.0
    y.register_hook(_string_hook)
    with pytest.raises(TypeError) as info:
        y.sum().backward()
    message = str(info.value)
    assert "tensor hook '_string_hook'" in message and "str 'oops'" in message
    assert "shape (3,)" in message


def test_a_layer_backward_hook_returning_a_string_is_named():
    layer = mn.layers.Dense(2)
    layer.register_full_backward_hook(_string_hook)
    x = mn.tensor(np.ones((1, 3), np.float32), requires_grad=True)
    with pytest.raises(TypeError) as info:
        layer(x).sum().backward()
    message = str(info.value)
    assert f"backward hook of layer '{layer.name}'" in message and "_string_hook" in message


def test_hooks_returning_gradients_or_none_still_work():
    t = mn.tensor(np.ones(3), requires_grad=True)
    y = t * 2.0
    y.register_hook(lambda g: None)
    y.register_hook(lambda g: g * 0.5)
    y.sum().backward()
    np.testing.assert_array_equal(t.grad, [1.0, 1.0, 1.0])


# ---- labels beyond int64 ---------------------------------------------------------------------

@pytest.mark.parametrize("label, shown", [(np.uint64(2 ** 64 - 1), "18446744073709551615"),
                                          (np.uint64(2 ** 63), "9223372036854775808"),
                                          (np.float64(1e30), "1e+30")])
def test_a_label_beyond_int64_is_reported_as_received(label, shown):
    model = mn.Sequential([mn.Input((2,)), mn.layers.Dense(3)])
    model.compile("sgd", mn.losses.SparseCategoricalCrossentropy(from_logits=True))
    y = np.array([0, label], dtype=np.asarray(label).dtype)
    with pytest.raises(ValueError) as info:
        model.fit(np.ones((2, 2), np.float32), y, verbose=0)
    message = str(info.value)
    assert f"y[1]={shown}" in message and "-1" not in message


# ---- unknown names: refused as Keras refuses them, one suggestion -----------------------------

@pytest.mark.parametrize("get, name, suggestion", [
    (mn.losses.get, "categorical_cross_entropy", "categorical_crossentropy"),
    (mn.losses.get, "CategoricalCrossEntropy", "CategoricalCrossentropy"),
    (mn.losses.get, "mean_squared_eror", "mean_squared_error"),
    (mn.optimizers.get, "adma", "Adam"),
    (mn.optimizers.get, "rms_prop", "rmsprop"),
    (mn.metrics.get, "acuracy", "accuracy"),
    (mn.activations.get, "rellu", "relu"),
    (mn.activations.get, "ReLU", "relu"),
    (mn.initializers.get, "glorot_unifrom", "glorot_uniform"),
])
def test_an_unknown_name_is_refused_with_one_suggestion_and_the_list_once(get, name, suggestion):
    with pytest.raises(ValueError) as info:
        get(name)
    message = str(info.value)
    assert repr(name) in message
    assert re.findall(r"Did you mean '([^']*)'\?", message) == [suggestion]
    # The known names are listed once (and left out when there are more than _MAX_LISTED).
    assert message.count("Known names") <= 1
    if "Known names" in message:
        known = message.split("Known names: ", 1)[1].rstrip(".").split(", ")
        assert len({k.lower() for k in known}) == len(known)      # each name once


def test_compile_refuses_a_misspelt_loss_before_training():
    model = mn.Sequential([mn.Input((2,)), mn.layers.Dense(2)])
    with pytest.raises(ValueError, match="Did you mean 'categorical_crossentropy'"):
        model.compile("adam", "categorical_cross_entropy")


def test_names_keras_accepts_are_accepted():
    assert isinstance(mn.optimizers.get("ADAM"), mn.optimizers.Adam)   # Keras lower-cases these
    assert isinstance(mn.optimizers.get("RMSProp"), mn.optimizers.RMSprop)
    for name in ["categorical_crossentropy", "CategoricalCrossentropy", "mse", "MSE"]:
        mn.losses.get(name)


def test_the_keras_oracle_refuses_the_same_loss_names(keras):
    for name in ["categorical_cross_entropy", "CategoricalCrossEntropy"]:
        with pytest.raises(ValueError):
            keras.losses.get(name)
    keras.optimizers.get("ADAM")


def test_the_suggestion_helper_is_the_one_in_the_registry():
    from minnet import _utils
    assert _utils.did_you_mean is _registry.did_you_mean
    assert _registry.did_you_mean("adma", ["SGD", "Adam", "Adamax", "adam"]) == " Did you mean 'Adam'?"
    assert _registry.did_you_mean("zzzzzz", ["SGD", "Adam"]) == ""
    assert _registry.did_you_mean(3, ["SGD"]) == ""
