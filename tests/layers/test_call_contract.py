"""Keras 3's Layer call contract (issue 27, item 3): what ``Layer.__call__`` passes to ``call``
and ``build``, masks carried on outputs, several tensor arguments, symbolic calls,
``layer.input``/``output``, ``add_weight``/``add_variable`` and ``Input(dtype=...)``."""
import numpy as np
import pytest

import minnet as mn
from minnet import layers
from minnet.ops import symbolic


class Double(layers.Layer):
    """A custom layer whose call takes no `training` (Keras's documentation style)."""

    def call(self, inputs):
        return inputs * 2.0


class Recorder(layers.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.seen = []

    def call(self, inputs, training=None, mask=None):
        self.seen.append((training, None if mask is None else np.asarray(mask).tolist()))
        return inputs


class ToyAttention(layers.Layer):
    """The signature the attention helper's MultiHeadAttention uses."""

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.build_args = None

    def get_config(self):
        return {**super().get_config(), "units": self.units}

    def build(self, query_shape, value_shape, key_shape=None):
        self.build_args = (query_shape, value_shape, key_shape)
        self.wq = self.add_weight(shape=(query_shape[-1], self.units), initializer="ones", name="wq")
        self.wv = self.add_weight(shape=(value_shape[-1], self.units), initializer="ones", name="wv")

    def call(self, query, value, key=None, attention_mask=None, return_attention_scores=False,
             training=None, use_causal_mask=False):
        q = query @ self.wq                                 # (B, Tq, U)
        v = value @ self.wv                                 # (B, Tv, U)
        scores = q @ v.transpose(0, 2, 1)                   # (B, Tq, Tv)
        if use_causal_mask:
            tq, tv = scores.shape[1], scores.shape[2]
            keep = np.tril(np.ones((tq, tv), dtype=bool))
            scores = scores * mn.Tensor(keep.astype(scores.dtype))
        if attention_mask is not None:
            scores = scores * mn.Tensor(np.asarray(attention_mask.data, dtype=scores.dtype))
        out = scores @ v
        return (out, scores) if return_attention_scores else out


def test_custom_call_without_training_runs_eagerly_in_sequential_functional_and_fit():
    x = np.ones((4, 3), np.float32)
    np.testing.assert_allclose(Double()(x).data, 2 * x)
    model = mn.Sequential([layers.Input((3,)), Double(), layers.Dense(1)])
    model.compile("sgd", "mse")
    model.fit(x, np.zeros((4, 1)), epochs=1, verbose=0)
    inp = mn.Input((3,))
    out = Double()(inp)
    assert out.shape == (None, 3)
    np.testing.assert_allclose(mn.Model(inp, out).predict(x), 2 * x)


def test_training_and_mask_are_passed_only_when_call_declares_them():
    layer = Recorder()
    x = mn.Tensor(np.ones((2, 3, 1), np.float32))
    layer(x)
    layer(x, training=True)
    mask = np.array([[1, 1, 0], [1, 0, 0]], bool)
    layer(x, mask=mask)
    assert layer.seen == [(False, None), (True, None), (False, mask.tolist())]
    # A call without those parameters is never given them (no TypeError).
    Double()(x, training=True, mask=mask)


def test_the_mask_comes_from_the_input_and_compute_mask_sets_the_output_mask():
    emb = layers.Embedding(5, 2, mask_zero=True)
    tokens = np.array([[1, 2, 0], [3, 0, 0]])
    h = emb(tokens)
    assert h._keras_mask.tolist() == (tokens != 0).tolist()
    rec = Recorder()
    rec(h)
    assert rec.seen[-1][1] == (tokens != 0).tolist()

    class FirstTwo(layers.Layer):
        def call(self, inputs):
            return inputs

        def compute_mask(self, inputs, previous_mask=None):
            mask = np.zeros(inputs.shape[:2], bool)
            mask[:, :2] = True
            return mask

    out = FirstTwo()(mn.Tensor(np.ones((2, 4, 1), np.float32)))
    assert out._keras_mask.tolist() == [[True, True, False, False]] * 2
    # Dense (supports_masking) passes the mask on; a layer without it drops it.
    assert layers.Dense(3)(h)._keras_mask.tolist() == (tokens != 0).tolist()
    assert Double()(h)._keras_mask is None


def test_several_tensor_arguments_build_by_name_and_run_eagerly():
    rng = np.random.default_rng(0)
    q = rng.standard_normal((2, 3, 4)).astype(np.float32)
    v = rng.standard_normal((2, 5, 6)).astype(np.float32)
    layer = ToyAttention(2)
    out = layer(q, v)
    assert layer.build_args == ((2, 3, 4), (2, 5, 6), None)
    assert out.shape == (2, 3, 2)
    qq = q @ np.ones((4, 2), np.float32)
    vv = v @ np.ones((6, 2), np.float32)
    np.testing.assert_allclose(out.data, (qq @ vv.transpose(0, 2, 1)) @ vv, rtol=1e-5)
    causal = layer(q, v, use_causal_mask=True)
    scores = (qq @ vv.transpose(0, 2, 1)) * np.tril(np.ones((3, 5)))
    np.testing.assert_allclose(causal.data, scores @ vv, rtol=1e-5)
    out, att = layer(q, v, return_attention_scores=True)
    assert att.shape == (2, 3, 5)
    mask = np.ones((2, 3, 5), bool)
    mask[:, :, -1] = False
    masked = layer(q, v, attention_mask=mask)        # a bool array kwarg becomes a Tensor
    np.testing.assert_allclose(masked.data, ((qq @ vv.transpose(0, 2, 1)) * mask) @ vv, rtol=1e-5)


def test_several_tensor_arguments_in_a_functional_model_run_and_reload():
    q_in, v_in = mn.Input((None, 4)), mn.Input((None, 6))
    layer = ToyAttention(2, name="toy")
    out = layer(q_in, v_in, use_causal_mask=True)
    assert out.shape == (None, None, 2)
    assert layer.build_args == ((None, None, 4), (None, None, 6), None)
    model = mn.Model([q_in, v_in], out)
    rng = np.random.default_rng(1)
    q = rng.standard_normal((2, 3, 4)).astype(np.float32)
    v = rng.standard_normal((2, 3, 6)).astype(np.float32)
    np.testing.assert_allclose(model.predict([q, v]), layer(q, v, use_causal_mask=True).data,
                               rtol=1e-6)
    config = model.get_config()
    assert config["nodes"][-1]["kwargs"] == {"use_causal_mask": {"constant": True}}
    clone = mn.Model.from_config(config, custom_objects={"ToyAttention": ToyAttention})
    clone.set_weights(model.get_weights())
    np.testing.assert_allclose(clone.predict([q, v]), model.predict([q, v]), rtol=1e-6)
    # layer.input / layer.output / shapes of a layer with two tensor inputs
    assert layer.input == [q_in, v_in]
    assert layer.output is out
    assert layer.input_shape == [(None, None, 4), (None, None, 6)]
    assert layer.output_shape == (None, None, 2)


def test_endpoint_layer_with_targets_and_logits():
    # Keras's "endpoint layer" pattern: call(targets, logits) adds a loss and returns predictions.
    class Endpoint(layers.Layer):
        def call(self, targets, logits, sample_weights=None):
            return mn.Tensor(1.0 / (1.0 + np.exp(-logits.data))) + 0.0 * targets

    x_in, t_in = mn.Input((3,)), mn.Input((1,))
    logits = layers.Dense(1)(x_in)
    predictions = Endpoint()(t_in, logits)
    assert predictions.shape == (None, 1)
    model = mn.Model([x_in, t_in], predictions)
    out = model.predict([np.ones((2, 3), np.float32), np.zeros((2, 1), np.float32)])
    assert out.shape == (2, 1) and np.all((out > 0) & (out < 1))


def test_functional_graph_views_of_a_layer():
    inp = mn.Input((4,), name="features")
    dense = layers.Dense(3)
    out = dense(inp)
    assert dense.input is inp and dense.output is out
    assert dense.input_shape == (None, 4) and dense.output_shape == (None, 3)
    # Keras's feature-extraction idiom: a model from an inner layer's output
    model = mn.Model(inp, layers.Dense(1)(out))
    features = mn.Model(model.inputs, model.layers[1].output)
    assert features.predict(np.ones((2, 4), np.float32)).shape == (2, 3)
    with pytest.raises(AttributeError, match="never been called"):
        layers.Dense(2).output


def test_unknown_non_batch_sizes_are_inferred_by_running_on_placeholders():
    class Repeat(layers.Layer):          # no compute_output_shape: the output is inferred
        def call(self, inputs):
            return mn.Tensor(np.concatenate([inputs.data, inputs.data], axis=1))

    out = Repeat()(mn.Input((None, 4)))
    assert out.shape == (None, None, 4)
    flat = layers.Flatten()(mn.Input((None, 4)))
    assert flat.shape == (None, None)
    known = Repeat()(mn.Input((3, 4)))
    assert known.shape == (None, 6, 4)        # a size equal in both runs stays known

    def outer(a, b):                           # a plain function on two symbolic tensors
        return mn.Tensor(a.data[:, :, None] * b.data[:, None, :])

    a, b = mn.Input((None,)), mn.Input((None,))
    product = symbolic.symbolic_call(outer, (a, b))
    assert product.shape == (None, None, None) and product.node.name == "outer"
    model = mn.Model([a, b], product)
    res = model.predict([np.ones((2, 3), np.float32), np.full((2, 5), 2.0, np.float32)])
    np.testing.assert_allclose(res, np.full((2, 3, 5), 2.0))


def test_shared_axes_fall_back_to_one_placeholder_size():
    a, b = mn.Input((None, 2)), mn.Input((None, 2))
    total = symbolic.symbolic_call(lambda u, v: u + v, (a, b), name="add_them")
    assert total.shape == (None, None, 2)


def test_training_given_to_an_outer_call_reaches_inner_layers():
    class Block(layers.Layer):           # its call takes no training; the Dropout inside is reached
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.drop = layers.Dropout(0.5)

        def call(self, inputs):
            return self.drop(inputs)

    block = Block()
    x = np.ones((64, 32), np.float32)
    assert np.array_equal(block(x).data, x)
    assert not np.array_equal(block(x, training=True).data, x)
    # the mode is not left behind
    assert np.array_equal(block(x).data, x) and block.training is False
    # an inner explicit training wins over the outer mode
    class Frozen(layers.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.drop = layers.Dropout(0.5)

        def call(self, inputs, training=None):
            return self.drop(inputs, training=False)

    assert np.array_equal(Frozen()(x, training=True).data, x)


def test_a_layer_reading_self_training_sees_the_mode_of_the_call():
    class TorchStyle(layers.Layer):
        def call(self, inputs):
            return inputs + (1.0 if self.training else 0.0)

    class Outer(layers.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.inner = TorchStyle()

        def call(self, inputs):
            return self.inner(inputs)

    x = np.zeros((1, 2), np.float32)
    outer = Outer()
    assert outer(x).data.sum() == 0 and outer(x, training=True).data.sum() == 2
    outer.train()
    assert outer(x).data.sum() == 2        # PyTorch's flag still works outside fit


def test_main_input_by_keyword_and_other_positional_arguments():
    class Scale(layers.Layer):
        def call(self, inputs, factor):
            return inputs * factor

    layer = Scale()
    np.testing.assert_allclose(layer(inputs=np.ones((1, 2))).data if False else
                               layer(np.ones((1, 2)), 3.0).data, [[3.0, 3.0]])
    np.testing.assert_allclose(Scale()(inputs=np.ones((1, 2)), factor=2.0).data, [[2.0, 2.0]])
    with pytest.raises(TypeError, match="without an input"):
        Scale()()


def test_build_with_several_shape_parameters_must_match_call_arguments():
    class Bad(layers.Layer):
        def build(self, a_shape, wrong):
            pass

        def call(self, a, b):
            return a

    with pytest.raises(ValueError, match="does not end in `_shape`"):
        Bad()(np.ones((1, 2)), np.ones((1, 2)))


def test_add_weight_and_add_variable_take_keras_arguments():
    class Custom(layers.Layer):
        def build(self, input_shape):
            self.w = self.add_weight(shape=(input_shape[-1], 2), initializer="random_normal",
                                     trainable=True, name="w")
            self.b = self.add_weight(shape=(2,), initializer="zeros", regularizer="l2",
                                     constraint="non_neg", name="b")
            self.count = self.add_weight(shape=(), dtype="int32", trainable=False,
                                         initializer="zeros", name="count")
            self.v = self.add_variable((2,), "ones", name="v")
            self.default = self.add_weight(shape=(3, 3))

        def call(self, inputs):
            return inputs @ self.w + self.b

    layer = Custom()
    layer(np.ones((1, 4), np.float32))
    assert layer.w.shape == (4, 2) and layer.count.dtype == np.int32 and layer.count.shape == ()
    assert layer.b.constraint is not None and len(layer.losses) == 1
    np.testing.assert_array_equal(layer.v.data, [1, 1])
    assert layer.default.data.std() > 0          # None -> glorot_uniform, as in Keras
    assert [w.name for w in layer.trainable_weights] == ["custom/w", "custom/b", "custom/v",
                                                         "custom/weight_4"]
    with pytest.raises(ValueError, match="dtype"):
        Custom().add_weight(shape=(2,), dtype="int32", trainable=True)


@pytest.mark.parametrize("dtype", ["int32", "int64", "int8", "uint8", "bool", "float16",
                                   "float32", "float64"])
def test_input_accepts_every_integer_bool_and_float_dtype(dtype):
    inp = mn.Input((3,), dtype=dtype)
    assert inp.dtype == np.dtype(dtype)
    out = layers.Dense(2, dtype="float64")(inp)     # a float layer casts what it receives
    model = mn.Model(inp, out)
    result = model.predict(np.ones((2, 3), dtype=dtype))
    assert result.dtype == np.float64 and result.shape == (2, 2)


def test_integer_input_stays_integer_until_the_embedding():
    inp = mn.Input((4,), dtype="int32")
    seen = []

    class Spy(layers.Layer):
        def call(self, inputs):
            seen.append(inputs.dtype)
            return inputs

    out = layers.GlobalAveragePooling1D()(layers.Embedding(10, 3)(Spy(dtype="float32")(inp)))
    model = mn.Model(inp, out)
    model.predict(np.array([[1, 2, 3, 9]]))
    # Spy is a float32 layer, so it casts; Embedding reads indices of any dtype.
    assert seen[-1] == np.float32
    with pytest.raises(ValueError, match="dtype"):
        mn.Input((3,), dtype="string")


@pytest.mark.parametrize("name, reference", [
    ("add", lambda a, b: a + b), ("subtract", lambda a, b: a - b),
    ("multiply", lambda a, b: a * b), ("average", lambda a, b: (a + b) / 2),
    ("maximum", np.maximum), ("minimum", np.minimum),
    ("concatenate", lambda a, b: np.concatenate([a, b], axis=-1))])
def test_functional_merge_forms_call_the_merge_layers(name, reference):
    form = getattr(layers, name)
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 3)).astype(np.float32), rng.standard_normal((2, 3)).astype(np.float32)
    np.testing.assert_allclose(form([a, b]).data, reference(a, b), rtol=1e-6)
    ia, ib = mn.Input((3,)), mn.Input((3,))
    out = form([ia, ib], name=f"my_{name}")
    assert out.node.operation.name == f"my_{name}"
    model = mn.Model([ia, ib], out)
    np.testing.assert_allclose(model.predict([a, b]), reference(a, b), rtol=1e-6)


def test_concatenate_form_takes_the_axis():
    a = mn.Input((2, 3))
    assert layers.concatenate([a, a], axis=1).shape == (None, 4, 3)


def test_global_max_pooling_accepts_a_small_channels_last_feature_map():
    # (None, 4, 4, 16) is a valid channels_last input (4 x 4 pixels, 16 channels); the layout
    # guard used to refuse it as "channels_first".
    out = layers.GlobalMaxPooling2D()(mn.Input((4, 4, 16)))
    assert out.shape == (None, 16)
    x = np.random.default_rng(0).standard_normal((2, 4, 4, 16)).astype(np.float32)
    np.testing.assert_allclose(layers.GlobalMaxPooling2D()(x).data, x.max(axis=(1, 2)))
    # a real image in the wrong layout is still refused
    with pytest.raises(ValueError, match="channels_first"):
        layers.GlobalMaxPooling2D()(mn.Input((3, 32, 32)))


def _recorded_mode_fractions(framework):
    x = np.ones((1, 400), np.float32)

    def zeros(value):
        value = value.detach().numpy() if hasattr(value, "detach") else getattr(value, "data", value)
        return float((np.asarray(value) == 0).mean())

    inp = framework.Input((400,))
    always = framework.Model(inp, framework.layers.Dropout(0.5)(inp, training=True))
    inp = framework.Input((400,))
    never = framework.Model(inp, framework.layers.Dropout(0.5)(inp, training=False))
    return (zeros(always(x)), zeros(always.predict(x, verbose=0)), zeros(never(x)),
            zeros(never(x, training=True)))


def test_a_mode_recorded_in_the_graph_applies_when_the_model_is_given_none():
    called, predicted, never, forced = _recorded_mode_fractions(mn)
    assert 0.3 < called < 0.7          # model(x): the recorded training=True holds
    assert predicted == 0.0            # predict's inference mode wins (Keras's rule)
    assert never == 0.0
    assert 0.3 < forced < 0.7          # model(x, training=True) wins over the recorded False


def test_recorded_modes_as_in_keras(keras):
    ours, theirs = _recorded_mode_fractions(mn), _recorded_mode_fractions(keras)
    assert [0.3 < v < 0.7 for v in ours] == [0.3 < v < 0.7 for v in theirs]
    assert [v == 0 for v in ours] == [v == 0 for v in theirs]


def test_a_minnet_function_called_in_a_graph_is_saved_by_name(tmp_path):
    inp = mn.Input((4,))
    hidden = symbolic.symbolic_call(mn.functional.relu, (layers.Dense(4)(inp),))
    model = mn.Model(inp, layers.Dense(2)(hidden))
    config = model.get_config()
    op_nodes = [n for n in config["nodes"] if "op" in n]
    assert op_nodes and op_nodes[0]["op"].endswith(":relu")
    model.save(tmp_path / "m.minnet")
    loaded = mn.saving.load_model(tmp_path / "m.minnet")
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    np.testing.assert_allclose(loaded.predict(x), model.predict(x), rtol=1e-6)


def test_a_foreign_function_in_a_graph_cannot_be_saved():
    inp = mn.Input((4,))
    out = symbolic.symbolic_call(lambda t: t * 2.0, (inp,), name="twice")
    model = mn.Model(inp, out)
    np.testing.assert_allclose(model.predict(np.ones((1, 4), np.float32)), 2.0)
    with pytest.raises(ValueError, match="twice"):
        model.get_config()


def test_a_subclassed_model_called_on_symbolic_tensors():
    class Net(mn.Model):
        def __init__(self):
            super().__init__()
            self.dense = layers.Dense(3)

        def call(self, inputs):
            return self.dense(inputs)

    inp = mn.Input((5,))
    out = Net()(inp)
    assert out.shape == (None, 3)
    assert mn.Model(inp, out).predict(np.ones((2, 5), np.float32)).shape == (2, 3)


def test_hooks_do_not_see_the_placeholder_runs():
    class NoFormula(layers.Layer):
        def call(self, inputs):
            return inputs * 1.0

    layer = NoFormula()
    seen = []
    layer.register_forward_hook(lambda module, args, output: seen.append(output.shape))
    out = layer(mn.Input((None, 3)))
    assert out.shape == (None, None, 3) and seen == []
    layer(np.ones((2, 4, 3), np.float32))
    assert seen == [(2, 4, 3)]


def test_argument_masks_are_filled_from_each_tensor_argument():
    class TwoMasks(layers.Layer):
        def call(self, query, value, query_mask=None, value_mask=None):
            self.got = (None if query_mask is None else query_mask.tolist(),
                        None if value_mask is None else value_mask.tolist())
            return query

    emb = layers.Embedding(10, 2, mask_zero=True)
    q, v = emb(np.array([[1, 0]])), emb(np.array([[3, 4, 0]]))
    layer = TwoMasks()
    layer(q, v)
    assert layer.got == ([[True, False]], [[True, True, False]])
    layer(q, v, value_mask=np.array([[True, False, False]]))
    assert layer.got == ([[True, False]], [[True, False, False]])


def test_keras_layer_keywords_and_dtype_names():
    class Plain(layers.Layer):
        def __init__(self, **kwargs):
            super().__init__(autocast=False, **kwargs)

        def call(self, inputs):
            return inputs

    layer = Plain(dtype="float64")
    assert layer.compute_dtype == layer.variable_dtype == "float64"


def test_an_input_layer_has_its_tensor_as_input_and_output():
    x = mn.Input((3,))
    layer = x.node.layer
    assert layer.input is x and layer.output is x
    assert layer.input_shape == layer.output_shape == (None, 3)


def test_symbolic_outputs_carry_a_description_of_their_mask():
    # guides/understanding_masking_and_padding.py prints `x._keras_mask` in a functional model
    inputs = mn.Input(shape=(None,), dtype="int32")
    embedded = layers.Embedding(50, 4, mask_zero=True)(inputs)
    assert isinstance(embedded._keras_mask, symbolic.KerasTensor)
    assert embedded._keras_mask.shape == (None, None) and embedded._keras_mask.dtype == bool
    passed = layers.Activation("relu")(embedded)          # supports_masking: passed on
    assert passed._keras_mask is embedded._keras_mask
    assert not hasattr(layers.Dense(3)(mn.Input((5,))), "_keras_mask")
    assert not hasattr(layers.LSTM(3)(embedded), "_keras_mask")   # a last-step output: no mask


def test_a_call_that_declares_mask_is_probed_with_the_mask_in_a_functional_model():
    class NeedsMask(layers.Layer):
        def __init__(self):
            super().__init__()
            self.supports_masking = True

        def call(self, inputs, mask=None):
            assert mask is not None               # Keras passes it when building the graph too
            return inputs * mn.ops.expand_dims(mn.ops.cast(mask, "float32"), -1)

    inputs = mn.Input(shape=(None,), dtype="int32")
    x = layers.Embedding(10, 3, mask_zero=True)(inputs)
    model = mn.Model(inputs, NeedsMask()(x))
    tokens = np.array([[1, 2, 0, 0], [3, 0, 0, 0]])
    out = model(tokens).numpy()
    assert np.all(out[tokens == 0] == 0) and np.any(out[tokens != 0] != 0)
