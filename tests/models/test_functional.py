"""The functional API: symbolic inputs, graphs, many inputs/outputs, shared layers, saving."""
import json

import numpy as np
import pytest

import minnet as mn
from minnet import layers, losses


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    return rng.standard_normal((48, 6)).astype(np.float32), rng.integers(0, 3, 48)


def _sequential():
    mn.manual_seed(3)
    return mn.Sequential([mn.Input((6,)), layers.Dense(8, activation="relu"), layers.Dense(3)])


def _functional():
    mn.manual_seed(3)
    inp = mn.Input((6,))
    return mn.Model(inp, layers.Dense(3)(layers.Dense(8, activation="relu")(inp)))


def _compile(model):
    model.compile(optimizer=mn.optimizers.SGD(learning_rate=0.1, momentum=0.9),
                  loss=losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    return model


def test_input_is_symbolic():
    x = mn.Input(shape=(4, 5), name="pixels")
    assert x.shape == (None, 4, 5) and x.dtype == np.float32 and x.name == "pixels"
    assert mn.Input((3,), batch_size=8).shape == (8, 3)
    assert mn.Input(batch_shape=(None, 7), dtype="float64").dtype == np.float64
    h = layers.Dense(2)(x)
    assert h.shape == (None, 4, 2)
    with pytest.raises(TypeError, match="no values"):
        np.asarray(x)


def test_functional_trains_to_the_same_weights_as_sequential(data):
    x, y = data
    weights = []
    for make in (_sequential, _functional):
        model = _compile(make())
        history = model.fit(x, y, epochs=2, batch_size=16, verbose=0, seed=0)
        weights.append(model.get_weights())
    for a, b in zip(*weights):
        np.testing.assert_array_equal(a, b)
    assert history.history["loss"][1] < history.history["loss"][0]


def test_inputs_outputs_layers_and_shapes():
    inp = mn.Input((6,), name="features")
    dense = layers.Dense(4, name="hidden")
    out = layers.Dense(2, name="head")(dense(inp))
    model = mn.Model(inputs=inp, outputs=out, name="net")
    assert model.inputs is inp and model.outputs is out
    assert [layer.name for layer in model.layers] == ["features", "hidden", "head"]
    assert model.get_layer("hidden") is dense and model.get_layer(index=1) is dense
    assert model.input_shape == (None, 6) and model.output_shape == (None, 2)
    assert model.count_params() == 6 * 4 + 4 + 4 * 2 + 2
    with pytest.raises(ValueError, match="No such layer: 'nope'"):
        model.get_layer("nope")
    with pytest.raises(ValueError, match="exactly one"):
        model.get_layer()


def test_shared_layer_shares_weights_and_gradients():
    a, b = mn.Input((3,)), mn.Input((3,))
    shared = layers.Dense(2, use_bias=False)
    model = mn.Model([a, b], layers.Add()([shared(a), shared(b)]))
    assert len(model.weights) == 1
    xa = np.ones((2, 3), np.float32)
    xb = 2 * np.ones((2, 3), np.float32)
    kernel = shared.kernel.data
    np.testing.assert_allclose(model([xa, xb]).numpy(), (xa + xb) @ kernel.T, rtol=1e-6)


def test_symbolic_arithmetic_records_nodes_and_runs():
    inp = mn.Input((3,), dtype="float64")
    h = layers.Dense(3, dtype="float64")(inp)
    out = (h + inp) * 0.5 - 1.0
    out = 2.0 / (1.0 + out * out)
    model = mn.Model(inp, out)
    x = np.random.default_rng(1).standard_normal((4, 3))
    dense = model.layers[1]
    hv = x @ dense.kernel.data.T + dense.bias.data
    ref = (hv + x) * 0.5 - 1.0
    np.testing.assert_allclose(model(x).numpy(), 2.0 / (1.0 + ref * ref), rtol=1e-12)
    assert mn.gradcheck(lambda t: model(t), mn.tensor(x, requires_grad=True))


def test_multi_input_multi_output_compile_fit_evaluate_predict(data):
    x, y = data
    rng = np.random.default_rng(1)
    x2 = rng.standard_normal((48, 4)).astype(np.float32)
    target = rng.standard_normal((48, 1)).astype(np.float32)
    a, b = mn.Input((6,), name="a"), mn.Input((4,), name="b")
    h = layers.Concatenate()([layers.Dense(5, activation="relu")(a), b])
    model = mn.Model({"a": a, "b": b}, [layers.Dense(3, name="cls")(h), layers.Dense(1, name="reg")(h)])
    assert model.output_names == ["cls", "reg"]
    model.compile("adam", loss=[losses.SparseCategoricalCrossentropy(from_logits=True), "mse"],
                  loss_weights=[1.0, 0.5], metrics=[["accuracy"], []])
    history = model.fit({"a": x, "b": x2}, [y, target], epochs=2, batch_size=16, verbose=0,
                        validation_split=0.25)
    assert {"loss", "cls_loss", "reg_loss", "cls_accuracy", "val_loss", "val_cls_accuracy"} <= set(history.history)
    logs = model.evaluate({"a": x, "b": x2}, [y, target], verbose=0, return_dict=True)
    np.testing.assert_allclose(logs["loss"], logs["cls_loss"] + 0.5 * logs["reg_loss"], rtol=1e-5)
    cls, reg = model.predict({"a": x, "b": x2})
    assert cls.shape == (48, 3) and reg.shape == (48, 1)
    # the total is the weighted sum of the per-output losses, computed by hand
    logits, reg_out = model({"a": x, "b": x2})
    by_hand = (losses.SparseCategoricalCrossentropy(from_logits=True)(y, logits).item()
               + 0.5 * float(np.mean((reg_out.numpy() - target) ** 2)))
    np.testing.assert_allclose(logs["loss"], by_hand, rtol=1e-5)


def test_dict_outputs_and_dict_losses(data):
    x, y = data
    inp = mn.Input((6,))
    h = layers.Dense(4)(inp)
    model = mn.Model(inp, {"label": layers.Dense(3)(h), "score": layers.Dense(1)(h)})
    model.compile("sgd", loss={"label": losses.SparseCategoricalCrossentropy(from_logits=True)},
                  metrics={"label": "accuracy"})
    history = model.fit(x, {"label": y}, epochs=1, verbose=0)
    assert set(history.history) >= {"loss", "label_loss", "label_accuracy"}
    out = model.predict(x)
    assert set(out) == {"label", "score"}
    with pytest.raises(ValueError, match="not outputs of the model"):
        model.compile("sgd", loss={"lable": "mse"})


def test_shape_error_names_layer_and_tensor():
    inp = mn.Input((5,), name="pixels")
    dense = layers.Dense(2, name="proj")
    dense(inp)
    other = mn.Input((7,), name="other")
    with pytest.raises(ValueError, match=r"'proj'.*'other' of shape \(None, 7\)"):
        dense(other)
    with pytest.raises(ValueError, match="Add"):
        layers.Add()([mn.Input((3,)), mn.Input((4,))])


def test_graph_disconnected_and_bad_arguments():
    a, b = mn.Input((3,)), mn.Input((3,))
    out = layers.Add()([a, b])
    with pytest.raises(ValueError, match="Graph disconnected"):
        mn.Model(a, out)
    with pytest.raises(TypeError, match="`outputs`"):
        mn.Model(a, np.ones(3))
    model = mn.Model([a, b], out)
    with pytest.raises(ValueError, match="expects 2 input"):
        model(np.ones((2, 3)))
    with pytest.raises(ValueError, match="incompatible"):
        model([np.ones((2, 3)), np.ones((2, 4))])


def test_config_round_trip_json_clone_and_save(tmp_path, data):
    x, y = data
    inp = mn.Input((6,))
    h = layers.Dense(8, activation="relu")(inp)
    h = layers.Add()([h, layers.Dense(8)(h)]) * 0.5
    model = _compile(mn.Model(inp, layers.Dense(3)(h)))
    model.fit(x, y, epochs=1, verbose=0)
    expected = model.predict(x)

    rebuilt = mn.Model.from_config(json.loads(json.dumps(model.get_config())))
    rebuilt.set_weights(model.get_weights())
    np.testing.assert_array_equal(rebuilt.predict(x), expected)

    from_json = mn.models.model_from_json(model.to_json())
    assert [type(layer) for layer in from_json.layers] == [type(layer) for layer in model.layers]

    clone = mn.models.clone_model(model)
    assert len(clone.weights) == len(model.weights)
    assert not any(c is w for c, w in zip(clone.weights, model.weights))

    path = tmp_path / "graph.minnet"
    model.save(path)
    loaded = mn.load_model(path)
    np.testing.assert_array_equal(loaded.predict(x), expected)
    assert loaded.optimizer is not None
    loaded.fit(x, y, epochs=1, verbose=0)


def test_multi_output_model_saves_and_loads_compiled(tmp_path, data):
    x, y = data
    inp = mn.Input((6,))
    model = mn.Model(inp, {"c": layers.Dense(3)(inp), "r": layers.Dense(1)(inp)})
    model.compile("adam", loss={"c": losses.SparseCategoricalCrossentropy(from_logits=True), "r": "mse"},
                  loss_weights={"c": 1.0, "r": 0.1}, metrics={"c": ["accuracy"]})
    target = {"c": y, "r": np.zeros((48, 1), np.float32)}
    model.fit(x, target, epochs=1, verbose=0)
    model.save(tmp_path / "m.minnet")
    loaded = mn.load_model(tmp_path / "m.minnet")
    a = model.evaluate(x, target, verbose=0, return_dict=True)
    b = loaded.evaluate(x, target, verbose=0, return_dict=True)
    assert a.keys() == b.keys()
    np.testing.assert_allclose(a["loss"], b["loss"], rtol=1e-6)


def test_nested_models_and_functional_in_sequential(data):
    x, _ = data
    inner_in = mn.Input((6,))
    inner = mn.Model(inner_in, layers.Dense(4)(inner_in), name="inner")
    outer_in = mn.Input((6,))
    outer = mn.Model(outer_in, layers.Dense(2)(inner(outer_in)))
    assert outer.output_shape == (None, 2)
    assert len(outer.weights) == 4
    np.testing.assert_allclose(outer.predict(x), outer(x).numpy(), rtol=1e-6)
    stacked = mn.Sequential([mn.Input((6,)), inner, layers.Dense(1)])
    assert stacked.output_shape == (None, 1)


def test_summary_has_connected_to_column():
    a, b = mn.Input((3,), name="left"), mn.Input((3,), name="right")
    model = mn.Model([a, b], layers.Concatenate(name="join")([a, b]))
    lines = []
    model.summary(print_fn=lines.append)
    text = "\n".join(lines)
    assert "Connected to" in text and "left[0][0], right[0][0]" in text
    assert "(None, 6)" in text


def test_sequential_accepts_the_symbolic_input_and_first_layer_input_shape():
    model = mn.Sequential([mn.Input((5,)), layers.Dense(3)])
    assert model.built and model.input_shape == (None, 5) and model.output_shape == (None, 3)
    assert isinstance(model, mn.Model)
    with pytest.raises(TypeError, match="only from `mn.Input"):
        mn.Sequential([layers.Dense(2)(mn.Input((3,)))])


def test_first_layer_declared_input_shape_builds_the_sequential():
    first = layers.Dense(3)
    first._batch_input_shape = (None, 4)      # what Layer(input_shape=(4,)) records
    model = mn.Sequential([first, layers.Dense(2)])
    assert model.built and model.input_shape == (None, 4) and model.output_shape == (None, 2)
    assert model.count_params() == 4 * 3 + 3 + 3 * 2 + 2


def test_from_config_of_a_custom_layer_whose_config_has_no_name():
    # guides/functional_api.py: `get_config` returns {"units": ...} only; Keras keys the
    # rebuilt layers by the names in the model's config
    class NoNameDense(mn.layers.Layer):
        def __init__(self, units=3):
            super().__init__()
            self.units = units

        def build(self, input_shape):
            self.w = self.add_weight(shape=(input_shape[-1], self.units), initializer="ones")

        def call(self, inputs):
            return mn.ops.matmul(inputs, self.w)

        def get_config(self):
            return {"units": self.units}

    inputs = mn.Input((4,))
    model = mn.Model(inputs, NoNameDense(5)(inputs))
    NoNameDense(2)                     # takes the next automatic name
    config = model.get_config()
    rebuilt = mn.Model.from_config(config, custom_objects={"NoNameDense": NoNameDense})
    assert [layer.name for layer in rebuilt.layers] == [layer.name for layer in model.layers]
    assert rebuilt(np.ones((2, 4), "float32")).shape == (2, 5)


def test_a_model_whose_output_is_an_op_compiles_and_names_it_as_keras():
    """Keras 3 names the output after the op (`ops.mean` -> "mean"); minnet read
    `node.layer.name` of the plain function and raised AttributeError in compile."""
    inp = mn.Input((10, 6))
    model = mn.Model(inp, mn.ops.mean(layers.Dense(4)(inp), axis=1))
    model.compile(optimizer="adam", loss="mse")
    assert model.output_names == ["mean"]
    x = np.random.default_rng(0).random((8, 10, 6), dtype=np.float32)
    history = model.fit(x, np.zeros((8, 4), np.float32), verbose=0)
    assert np.isfinite(history.history["loss"][0])
