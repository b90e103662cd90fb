"""Sequential's structure: add/pop/build, calling it, summary, structure errors (minnet.models)."""
import numpy as np
import pytest

import minnet as mn
from minnet import layers


@pytest.fixture(autouse=True, scope="module")
def _channels_first_images():
    # The image models here are built for NCHW data; Conv2D and the image layers follow
    # mn.config.image_data_format(), whose default is Keras's channels_last.
    mn.config.set_image_data_format("channels_first")
    yield
    mn.config.set_image_data_format("channels_last")


def _classifier(seed=0, dropout=0.0, n_features=4):
    mn.manual_seed(seed)
    model = mn.Sequential([layers.Input((n_features,)), layers.Dense(16, activation="relu")]
                          + ([layers.Dropout(dropout)] if dropout else []) + [layers.Dense(3)])
    return model


def test_add_pop_layers_and_build():
    model = mn.Sequential()
    assert not model.built and model.layers == []
    model.add(layers.Dense(5))
    model.add(layers.Dense(2))
    model.build((None, 3))
    assert model.built and [tuple(w.shape) for w in model.weights] == [(5, 3), (5,), (2, 5), (2,)]
    popped = model.pop()
    assert isinstance(popped, layers.Dense) and len(model.layers) == 1
    model.add(layers.Dense(4))          # a built model builds the new layer at once
    assert model.layers[-1].built and tuple(model.layers[-1].kernel.shape) == (4, 5)
    assert model(np.zeros((2, 3), np.float32)).shape == (2, 4)


def test_input_layer_builds_eagerly_and_is_not_listed():
    model = mn.Sequential([layers.Input((1, 8, 8)), layers.Conv2D(4, 3), layers.Flatten(), layers.Dense(2)])
    assert model.built and len(model.layers) == 3
    assert model.compute_output_shape((None, 1, 8, 8)) == (None, 2)
    assert len(model.parameters()) == 4


def test_call_accepts_ndarray_list_and_tensor_and_keeps_graph():
    model = _classifier()
    x = np.random.default_rng(0).normal(size=(5, 4)).astype(np.float32)
    out = model(x)
    assert isinstance(out, mn.Tensor) and out.shape == (5, 3) and out.dtype == np.float32
    np.testing.assert_allclose(model(x.tolist()).numpy(), out.numpy(), rtol=1e-6)
    out = model(mn.tensor(x))
    out.sum().backward()
    assert all(p.grad is not None for p in model.parameters())


def test_numpy_reference_forward():
    model = _classifier()
    x = np.random.default_rng(1).normal(size=(7, 4))
    w1, b1, w2, b2 = model.get_weights()
    expected = np.maximum(x @ w1.T.astype(np.float64) + b1, 0) @ w2.T + b2
    np.testing.assert_allclose(model.predict(x), expected, rtol=1e-4, atol=1e-5)


def test_float64_model_keeps_float64():
    model = mn.Sequential([layers.Dense(3, dtype="float64"), layers.Dense(1, dtype="float64")])
    out = model(np.ones((2, 4)))
    assert out.dtype == np.float64
    assert model.predict(np.ones((2, 4), np.float32)).dtype == np.float64


def test_gradcheck_through_sequential():
    mn.manual_seed(3)
    model = mn.Sequential([layers.Dense(3, activation="tanh", dtype="float64"),
                           layers.Dense(2, dtype="float64")])
    x = mn.tensor(np.random.default_rng(2).normal(size=(4, 5)), requires_grad=True)
    model.build((None, 5))
    assert mn.gradcheck(lambda inp: model(inp), [x])


def test_summary_table(capsys):
    model = mn.Sequential([layers.Input((1, 8, 8)), layers.Conv2D(4, 3, padding="same"),
                           layers.BatchNormalization(), layers.ReLU(), layers.Flatten(), layers.Dense(10)])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    model.summary(batch_size=16)
    out = capsys.readouterr().out
    for layer in model.layers:
        assert layer.name in out and type(layer).__name__ in out
    assert "(None, 4, 8, 8)" in out and "(None, 10)" in out
    n_params = 4 * 9 + 4 + 8 + 8 + 256 * 10 + 10
    assert f"Total params: {n_params:,}" in out and "Non-trainable params: 8" in out
    assert "One training step at batch size 16" in out and "Adam" in out
    lines = []
    model.summary(print_fn=lines.append)
    assert any("Total params" in line for line in lines)
    flops = model.count_flops((16, 1, 8, 8))
    assert flops >= 2 * 16 * (4 * 9 * 64 + 256 * 10)


def test_summary_of_an_unbuilt_model_lists_its_layers_as_keras():
    # Keras prints "?" and "0 (unbuilt)" (guides/working_with_rnns.py calls summary() first)
    lines = []
    mn.Sequential([layers.Embedding(10, 4), layers.Dense(3, name="head")]).summary(print_fn=lines.append)
    text = "\n".join(lines)
    assert "head (Dense)" in text and "0 (unbuilt)" in text and "?" in text
    assert "not built" in text


def test_summary_of_variable_length_sequences_marks_unknown_sizes():
    """Input(shape=(None,)) (Keras's idiom for sequences of any length): the parameter
    counts print, and the activation and FLOP figures a None length leaves unknown are
    "?" (this raised TypeError from np.prod over None)."""
    model = mn.Sequential([layers.Input(shape=(None,), dtype="int32"),
                           layers.Embedding(200, 16, mask_zero=True),
                           layers.Bidirectional(layers.LSTM(8)), layers.Dense(4, name="head")])
    lines = []
    model.summary(print_fn=lines.append)
    text = "\n".join(lines)
    assert f"Total params: {model.count_params():,}" in text
    embedding_row = next(line for line in lines if "embedding" in line)
    assert embedding_row.split()[-2:] == ["?", "?"]
    head_row = next(line for line in lines if line.startswith("head (Dense)"))
    assert head_row.split()[-1] == "132"          # 2 * 16 * 4 + 4 at batch 1: its input is known
    assert "Forward FLOPs at batch size 1: ? (a dimension besides the batch is None)" in text


def test_a_sequential_built_from_its_first_batch_takes_other_sequence_lengths():
    """Keras builds an Input-less Sequential from the first call and runs it on later
    batches of other lengths (a Sequential inside a custom layer, sequences of any length);
    the feature axis and the rank must still fit. One declared with Input keeps its shape."""
    block = mn.Sequential([layers.Dense(4, activation="relu"), layers.Dense(3)])
    assert block(np.zeros((2, 7, 5), np.float32)).shape == (2, 7, 3)
    assert block(np.ones((3, 9, 5), np.float32)).shape == (3, 9, 3)
    with pytest.raises(ValueError, match="incompatible"):
        block(np.ones((3, 9, 6), np.float32))
    with pytest.raises(ValueError, match="incompatible"):
        block(np.ones((3, 5), np.float32))
    declared = mn.Sequential([layers.Input((7, 5)), layers.Dense(3)])
    with pytest.raises(ValueError, match="incompatible"):
        declared(np.ones((3, 9, 5), np.float32))


def test_a_custom_layer_holding_a_sequential_on_variable_length_symbolic_input():
    """The keras.io transformer encoder pattern: a Sequential feed-forward block inside a
    layer called on Input(shape=(None,)) (placeholder lengths differ between probes)."""
    class Block(layers.Layer):
        def __init__(self):
            super().__init__()
            self.ffn = mn.Sequential([layers.Dense(8, activation="relu"), layers.Dense(4)])

        def call(self, x):
            return x + self.ffn(x)

    inputs = mn.Input((None, 4))
    model = mn.Model(inputs, Block()(inputs))
    assert model.output_shape == (None, None, 4)
    assert model(np.ones((2, 11, 4), np.float32)).shape == (2, 11, 4)


def test_structure_validation():
    model = mn.Sequential()
    with pytest.raises(TypeError, match="layer"):
        model.add("dense")
    with pytest.raises(ValueError, match="no layers"):
        model.pop()
    model.add(layers.Dense(2))
    with pytest.raises(ValueError, match="Input layer"):
        model.add(layers.Input((3,)))
    dense = model.layers[0]
    with pytest.raises(ValueError, match="already"):
        model.add(dense)
    with pytest.raises(TypeError, match="layers"):
        mn.Sequential(layers.Dense(2))
    with pytest.raises(ValueError, match="input_shape"):
        mn.Sequential([layers.Dense(2)]).build()
