"""The Layer base class: weights, tracking, build-on-call, modes, config, registry."""
import json

import numpy as np
import pytest

import minnet as mn
from minnet import layers


class Scale(layers.Layer):
    """y = x * alpha + shift, with a non-trainable call counter."""

    def __init__(self, init=1.0, **kwargs):
        super().__init__(**kwargs)
        self.init = init

    def build(self, input_shape):
        self.alpha = self.add_weight("alpha", (input_shape[-1],), initializer=mn.initializers.Constant(self.init))
        self.calls = self.add_weight("calls", (1,), trainable=False)
        self.shift = self.add_weight("shift", (input_shape[-1],), initializer="ones")

    def call(self, x, training=False):
        self.calls.data += 1
        return x * self.alpha + self.shift

    def get_config(self):
        return {**super().get_config(), "init": self.init}


class Block(layers.Layer):
    """A layer made of sublayers (an attribute and a list)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.first = Scale(2.0, dtype=self.dtype)
        self.rest = [Scale(3.0, dtype=self.dtype), Scale(4.0, dtype=self.dtype)]

    def call(self, x, training=False):
        x = self.first(x, training=training)
        for layer in self.rest:
            x = layer(x, training=training)
        return x


def test_build_on_first_call_infers_input_size():
    layer = Scale(2.0)
    assert not layer.built and layer.weights == []
    y = layer(np.ones((3, 4)))
    assert layer.built and isinstance(y, mn.Tensor)
    np.testing.assert_allclose(y.numpy(), 3.0)
    assert [tuple(w.shape) for w in layer.weights] == [(4,), (4,), (1,)]


def test_weights_order_trainable_then_state():
    layer = Scale()
    layer(np.ones((1, 2)))
    names = [w.name for w in layer.weights]
    assert names == [f"{layer.name}/alpha", f"{layer.name}/shift", f"{layer.name}/calls"]
    assert [w.name for w in layer.trainable_weights] == names[:2]
    assert [w.name for w in layer.non_trainable_weights] == names[2:]
    assert all(isinstance(p, mn.Parameter) for p in layer.parameters())
    assert not isinstance(layer.calls, mn.Parameter) and not layer.calls.requires_grad


def test_nested_layers_are_tracked_and_modes_recurse():
    block = Block()
    block(np.ones((2, 3)))
    assert len(block.weights) == 9 and len(block.parameters()) == 6
    assert block.train() is block
    assert all(l.training for l in [block, block.first, *block.rest])
    assert block.eval() is block
    assert not any(l.training for l in [block, block.first, *block.rest])
    assert block.count_params() == 3 * (3 + 3 + 1)
    assert "Scale" in repr(block) and block.name in repr(block)


def test_gradients_reach_all_nested_parameters():
    block = Block(dtype="float64")
    x = mn.tensor(np.random.default_rng(0).standard_normal((2, 3)), requires_grad=True)
    assert mn.gradcheck(block, x)
    out = block(x).sum()
    out.backward()
    assert all(p.grad is not None for p in block.parameters())


def test_training_flag_defaults_to_layer_mode():
    seen = []

    class Probe(layers.Layer):
        def call(self, x, training=False):
            seen.append(training)
            return x

    probe = Probe()
    probe(np.ones((1, 1)))
    probe.train()
    probe(np.ones((1, 1)))
    probe(np.ones((1, 1)), training=False)
    probe.eval()
    probe(np.ones((1, 1)), training=1)
    assert seen == [False, True, False, True]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_inputs_are_cast_to_the_layer_dtype(dtype):
    layer = Scale(dtype=dtype)
    for x in (np.ones((2, 2), np.float32), np.ones((2, 2), np.float64), np.ones((2, 2), np.int64),
              [[1, 2], [3, 4]], np.array([[True, False]] * 2)):
        assert layer(x).dtype == np.dtype(dtype)
    assert all(w.dtype == np.dtype(dtype) for w in layer.weights)


def test_cast_of_a_graph_tensor_keeps_the_gradient():
    layer = Scale(dtype="float64")
    x = mn.tensor(np.ones((2, 2), np.float32), requires_grad=True)
    layer(x).sum().backward()
    assert x.grad is not None and x.grad.dtype == np.float32
    np.testing.assert_allclose(x.grad, 1.0)


def test_get_set_weights_round_trip_copies():
    a, b = Block(), Block()
    a(np.ones((1, 3)))
    b(np.ones((1, 3)))
    weights = a.get_weights()
    weights[0][...] = 42          # a copy: the layer is untouched
    assert not np.any(a.first.alpha.data == 42)
    b.set_weights(weights)
    for wa, wb in zip(b.get_weights(), weights):
        np.testing.assert_array_equal(wa, wb)
    np.testing.assert_allclose(b(np.ones((1, 3))).numpy(), 42 * 3 * 4 + 3 * 4 + 4 + 1)


def test_set_weights_validates_count_and_shapes():
    layer = Scale()
    layer(np.ones((1, 2)))
    with pytest.raises(ValueError, match=f"'{layer.name}' expected 3 weight arrays.*received 2"):
        layer.set_weights([np.ones(2), np.ones(2)])
    with pytest.raises(ValueError, match="weight 1 has shape \\(2,\\).*\\(3,\\)"):
        layer.set_weights([np.ones(2), np.ones(3), np.ones(1)])


def test_trainable_false_freezes_parameters():
    block = Block()
    block(np.ones((1, 2)))
    block.trainable = False
    assert block.trainable_weights == [] and len(block.non_trainable_weights) == 9
    assert not any(p.requires_grad for p in block.parameters())
    block.first.trainable = True
    assert len(block.first.trainable_weights) == 2
    frozen = Scale(trainable=False)
    frozen(np.ones((1, 2)))
    assert not any(p.requires_grad for p in frozen.parameters())


def test_parameter_attribute_is_tracked_pytorch_style():
    class Bias(layers.Layer):
        def __init__(self):
            super().__init__()
            self.b = mn.Parameter(np.zeros(3, np.float32))

        def call(self, x, training=False):
            return x + self.b

    layer = Bias()
    assert layer.parameters() == [layer.b] and layer.count_params() == 3


def test_names_are_unique_and_validated():
    a, b = Scale(), Scale()
    assert a.name != b.name and a.name.startswith("scale")
    assert Scale(name="mine").name == "mine"
    with pytest.raises(ValueError, match="`name`"):
        Scale(name="")
    with pytest.raises(ValueError, match="`dtype`.*'int32'"):
        Scale(dtype="int32")


def test_count_params_before_build_raises():
    with pytest.raises(ValueError, match="isn't built"):
        Scale(name="unbuilt").count_params()


def test_bad_input_type_names_the_layer():
    with pytest.raises(TypeError, match="'s1'"):
        Scale(name="s1")(["a", "b"])


def test_default_compute_output_shape_probes_the_layer():
    assert Scale().compute_output_shape((None, 5)) == (None, 5)


def test_init_without_super_gives_clear_error():
    class Broken(layers.Layer):
        def __init__(self):
            self.units = 3

    with pytest.raises(RuntimeError, match="super\\(\\).__init__"):
        Broken()


def test_register_layer_and_round_trip_through_json():
    @mn.register_layer
    class Scale2(Scale):
        pass

    layer = Scale2(init=0.5, dtype="float64", name="s2")
    data = json.loads(json.dumps(layers.serialize(layer)))
    again = layers.deserialize(data)
    assert type(again) is Scale2 and again.init == 0.5 and again.dtype == np.float64
    assert again.name == "s2"


def test_deserialize_unknown_class_says_how_to_fix():
    with pytest.raises(ValueError, match="register_layer"):
        layers.deserialize({"class_name": "NoSuchLayer", "config": {}})
    again = layers.deserialize({"class_name": "Scale", "config": {"init": 2.0}},
                               custom_objects={"Scale": Scale})
    assert isinstance(again, Scale)


def test_register_layer_with_explicit_name_and_conflicts():
    @mn.register_layer("tests>Twice")
    class Twice(layers.Layer):
        def call(self, x, training=False):
            return x * 2

    assert layers.serialize(Twice())["class_name"] == "tests>Twice"
    with pytest.raises(ValueError, match="already registered"):
        mn.register_layer("tests>Twice")(Scale)


def test_build_config_round_trip():
    layer = Scale()
    layer(np.ones((2, 5)))
    again = Scale.from_config(layer.get_config())
    again.build_from_config(layer.get_build_config())
    assert again.built and [w.shape for w in again.weights] == [w.shape for w in layer.weights]


def test_default_names_follow_keras():
    assert layers.Conv2D(2, 3).name.startswith("conv2d")
    assert layers.MaxPooling2D().name.startswith("max_pooling2d")
    assert layers.BatchNormalization().name.startswith("batch_normalization")
    assert layers.ReLU().name.startswith("re_lu")


# ---------------------------------------------------------------- Keras's declaration keywords
def test_every_layer_takes_keras_declaration_kwargs():
    dense = layers.Dense(64, activation="relu", input_shape=(784,))
    assert dense._batch_input_shape == (None, 784)
    assert layers.Dense(3, input_dim=5)._batch_input_shape == (None, 5)
    assert layers.Dense(3, input_shape=(5,), batch_size=8)._batch_input_shape == (8, 5)
    assert layers.Dense(3, batch_input_shape=(4, 5))._batch_input_shape == (4, 5)
    # layers whose own __init__ does not list them (and a custom one) take them too
    conv = layers.Conv2D(4, 3, input_shape=(8, 8, 1))
    assert conv._batch_input_shape == (None, 8, 8, 1)
    assert layers.Flatten(input_shape=(2, 3))._batch_input_shape == (None, 2, 3)
    assert Scale(2.0, input_shape=(3,))._batch_input_shape == (None, 3)
    assert layers.ReLU()._batch_input_shape is None
    config = dense.get_config()
    assert config["batch_input_shape"] == [None, 784]
    again = layers.Dense.from_config(config)
    assert again._batch_input_shape == (None, 784)
    json.dumps(config)


@pytest.mark.parametrize("kwargs, match", [
    (dict(input_shape=(0,)), "`input_shape`"),
    (dict(input_shape="abc"), "`input_shape`"),
    (dict(input_dim=0), "`input_dim`"),
    (dict(input_dim=3, input_shape=(3,)), "either `input_shape` or `input_dim`"),
    (dict(batch_input_shape=(None, 3), input_shape=(3,)), "either `batch_input_shape`"),
    (dict(batch_size=4), "`batch_size` needs `input_shape`"),
    (dict(input_shape=(3,), batch_size=-1), "`batch_size`"),
])
def test_bad_declaration_kwargs(kwargs, match):
    with pytest.raises(ValueError, match=match):
        layers.Dense(2, **kwargs)


def test_dtype_none_follows_floatx():
    assert layers.Dense(2).dtype == np.float32
    mn.config.set_floatx("float64")
    try:
        assert layers.Dense(2).dtype == np.float64
        assert layers.ReLU().dtype == np.float64
        assert layers.Dense(2, dtype="float32").dtype == np.float32
    finally:
        mn.config.set_floatx("float32")


def test_default_names_are_keras_snake_case():
    assert layers.Conv2D(2, 3).name.startswith("conv2d")
    assert layers.BatchNormalization().name.startswith("batch_normalization")
    assert layers.MaxPooling2D().name.startswith("max_pooling2d")


def test_count_params():
    layer = layers.Dense(4)
    with pytest.raises(ValueError, match="isn't built"):
        layer.count_params()
    layer(np.ones((1, 3)))
    assert layer.count_params() == 16


def test_add_weight_copies_the_initializer_result_and_checks_it():
    pretrained = np.arange(6.0).reshape(2, 3).astype(np.float32)
    before = pretrained.copy()
    a = layers.Dense(2, kernel_initializer=lambda shape, dtype: pretrained)
    b = layers.Dense(2, kernel_initializer=lambda shape, dtype: pretrained)
    a(np.ones((1, 3))), b(np.ones((1, 3)))
    assert not np.shares_memory(a.kernel.data, pretrained)
    a.kernel.data[...] = 100
    np.testing.assert_array_equal(pretrained, before)
    np.testing.assert_array_equal(b.kernel.data, before)
    with pytest.raises(ValueError, match=r"returned shape \(3, 2\); expected \(2, 3\)"):
        layers.Dense(2, kernel_initializer=lambda s, d: np.zeros((3, 2)))(np.ones((1, 3)))
    with pytest.raises(TypeError, match="real-valued"):
        layers.Dense(2, kernel_initializer=lambda s, d: np.full(s, "x"))(np.ones((1, 3)))


def test_add_weight_keras3_order_and_keywords():
    class Keras3(layers.Layer):
        def build(self, input_shape):
            self.w = self.add_weight(shape=(input_shape[-1], 2), initializer="ones", name="w")
            self.v = self.add_weight((2,), initializer="zeros")

        def call(self, x, training=False):
            return x @ self.w + self.v

    layer = Keras3()
    assert layer(np.ones((1, 3))).shape == (1, 2)
    assert layer.w.name.endswith("/w") and layer.v.name.endswith("/weight_1")


def test_losses_from_regularizers_follow_the_current_weights():
    layer = layers.Dense(2, kernel_initializer="ones", bias_initializer="ones",
                         kernel_regularizer=mn.regularizers.L2(0.5), bias_regularizer="l1",
                         dtype="float64")
    assert layer.losses == []
    layer(np.ones((4, 3)))
    losses = layer.losses
    assert [float(t.numpy()) for t in losses] == pytest.approx([0.5 * 6, 0.01 * 2])
    layer.kernel.data[...] = 2.0
    assert float(layer.losses[0].numpy()) == pytest.approx(0.5 * 6 * 4)
    sum(layer.losses).backward()
    np.testing.assert_allclose(layer.kernel.grad, 0.5 * 2 * 2.0)
    np.testing.assert_allclose(layer.bias.grad, 0.01)


def test_activity_regularizer_is_divided_by_the_batch_size():
    layer = layers.Dense(2, kernel_initializer="ones", use_bias=False,
                         activity_regularizer=mn.regularizers.L1(0.1), dtype="float64")
    layer(np.ones((4, 3)))
    (activity,) = layer.losses
    assert float(activity.numpy()) == pytest.approx(0.1 * 4 * 2 * 3 / 4)
    # a layer whose own __init__ does not list it takes it too (2 channels in either layout)
    conv = layers.Conv2D(2, 1, activity_regularizer="l2")
    conv(np.ones((1, 2, 2, 2), np.float32))
    assert len(conv.losses) == 1 and conv.activity_regularizer.l2 == 0.01


def test_nested_losses_and_constraint_attribute():
    block = Block()
    block(np.ones((1, 2)))
    assert block.losses == []
    layer = layers.Dense(2, kernel_constraint="non_neg", bias_constraint=mn.constraints.MaxNorm(1))
    layer(np.ones((1, 3)))
    assert isinstance(layer.kernel.constraint, mn.constraints.NonNeg)
    assert isinstance(layer.bias.constraint, mn.constraints.MaxNorm)
    assert mn.Parameter(np.zeros(2)).constraint is None
    config = layer.get_config()
    again = layers.Dense.from_config(json.loads(json.dumps(config)))
    assert again.get_config() == config


def test_model_losses_gather_the_tree_in_order_and_ask_overridden_losses():
    """model.losses: each layer's regularization terms, activity terms and add_loss terms,
    in the order of the layers; a sublayer whose class overrides `losses` is asked through
    it. An InputLayer holds no sublayer list (its bookkeeping does not make it look)."""
    class Fixed(layers.Layer):
        @property
        def losses(self):
            return [mn.tensor(np.float64(7.0))]

        def call(self, x):
            return x

    class AddsLoss(layers.Layer):
        def call(self, x):
            self.add_loss(x.sum() * 0 + 3.0)
            return x

    model = mn.Sequential([layers.Input((2,)),
                           layers.Dense(2, kernel_initializer="ones", kernel_regularizer=mn.regularizers.L1(1.0),
                                        dtype="float64"),
                           Fixed(dtype="float64"), AddsLoss(dtype="float64")])
    model(np.ones((1, 2)))
    assert [float(t.numpy()) for t in model.losses] == [4.0, 7.0, 3.0]
    assert not model._input_layer.__dict__.get("_may_hold_layers")
    inputs = layers.Input((2,))
    assert not inputs.node.operation.__dict__.get("_may_hold_layers")


def test_kernel_and_bias_options_reach_layers_that_do_not_list_them():
    conv = layers.Conv2D(2, 3, kernel_regularizer=mn.regularizers.L2(0.5),
                         kernel_constraint=mn.constraints.MaxNorm(1.0, axis=[0, 1, 2]),
                         bias_constraint="non_neg", dtype="float64")
    conv(np.ones((1, 5, 5, 2)))                       # channels_last (the default): 2 channels
    (term,) = conv.losses
    assert float(term.numpy()) == pytest.approx(0.5 * np.sum(conv.kernel.data ** 2))
    assert conv.kernel.constraint.axis == [0, 1, 2]
    assert isinstance(conv.bias.constraint, mn.constraints.NonNeg)
    config = json.loads(json.dumps(conv.get_config()))
    again = layers.Conv2D.from_config(config)
    again(np.ones((1, 5, 5, 2)))
    assert len(again.losses) == 1 and again.get_config() == conv.get_config()

    class MyDense(layers.Dense):                      # a subclass passing **kwargs on
        def __init__(self, units, **kwargs):
            super().__init__(units, **kwargs)

    dense = MyDense(3, kernel_regularizer="l1")
    dense(np.ones((1, 2)))
    assert isinstance(dense.kernel_regularizer, mn.regularizers.L1) and len(dense.losses) == 1


def test_a_layer_that_lists_a_declaration_keyword_itself_receives_it():
    class LikeKerasInput(layers.Layer):
        def __init__(self, shape, batch_size=None, **kwargs):
            super().__init__(**kwargs)
            self.shape, self.batch = shape, batch_size

    layer = LikeKerasInput((3,), batch_size=4, name="inp")
    assert layer.batch == 4 and layer._batch_input_shape is None and layer.name == "inp"
