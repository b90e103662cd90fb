"""Real Keras 3 ``.keras`` files, both directions, with Keras itself as the oracle."""
import json
import zipfile

import numpy as np
import pytest

import minnet as mn
from minnet.saving import ModelFileError



@pytest.fixture
def h5py():
    return pytest.importorskip("h5py")


def sequential_dense(lib, models):
    L = lib
    return models.Sequential([L.Input((6,)), L.Dense(5, activation="relu"), L.BatchNormalization(),
                              L.Dropout(0.2), L.Dense(4, activation="tanh", use_bias=False),
                              L.LayerNormalization(), L.Dense(3, activation="softmax")])


def sequential_cnn(lib, models):
    L = lib
    return models.Sequential([L.Input((10, 9, 3)), L.Conv2D(4, 3, padding="same", strides=2),
                              L.DepthwiseConv2D(3, depth_multiplier=2, padding="same"),
                              L.SeparableConv2D(5, 2, activation="relu"),
                              L.Conv2DTranspose(3, 3, strides=2),
                              L.MaxPooling2D(2), L.BatchNormalization(), L.Flatten(), L.Dense(2)])


def sequential_cnn_channels_first(lib, models):
    L = lib
    f = "channels_first"
    return models.Sequential([L.Input((3, 9, 8)), L.Conv2D(4, 3, data_format=f),
                              L.AveragePooling2D(2, data_format=f), L.BatchNormalization(axis=1),
                              L.GlobalAveragePooling2D(data_format=f), L.Dense(2)])


def sequential_text(lib, models):
    L = lib
    return models.Sequential([L.Input((7,)), L.Embedding(20, 4), L.Conv1D(6, 3, padding="same"),
                              L.LSTM(5, return_sequences=True), L.GRU(4, return_sequences=True),
                              L.Bidirectional(L.SimpleRNN(3)), L.Dense(2)])


def functional_two_inputs(lib, models):
    L = lib
    a = L.Input((6,), name="a")
    b = L.Input((4,), name="b")
    deep = L.Dense(5, activation="relu", name="deep_1")(L.Dense(5, name="deep_0")(a))
    shallow = L.Dense(5, name="shallow")(b)
    merged = L.Concatenate()([L.Add()([deep, shallow]), L.Multiply()([deep, shallow])])
    return models.Model([a, b], [L.Dense(2, name="head")(merged), L.Dense(1, name="aux")(shallow)])


def functional_recurrent(lib, models):
    L = lib
    inputs = L.Input((6, 3))
    seq = L.LSTM(4, return_sequences=True)(inputs)
    last = L.Bidirectional(L.GRU(3), merge_mode="sum")(seq)
    skip = L.GlobalAveragePooling1D()(seq)
    return models.Model(inputs, L.Dense(2)(L.Concatenate()([last, skip])))


BUILDERS = [sequential_dense, sequential_cnn, sequential_cnn_channels_first, sequential_text,
            functional_two_inputs, functional_recurrent]


def _inputs(model_or_shapes, integer=False, n=3):
    rng = np.random.default_rng(0)
    shapes = model_or_shapes
    out = []
    for shape in shapes:
        if integer:
            out.append(rng.integers(0, 20, size=(n,) + tuple(shape[1:])).astype("float32"))
        else:
            out.append(rng.normal(size=(n,) + tuple(shape[1:])).astype("float32"))
    return out if len(out) > 1 else out[0]


def _input_shapes(keras_model):
    return [tuple(t.shape) for t in keras_model.inputs]


def _jitter(weights):
    # Non-trivial weights everywhere (BatchNorm statistics, zero biases) so layouts really matter.
    rng = np.random.default_rng(7)
    return [w + rng.uniform(0.05, 0.3, size=w.shape).astype(w.dtype) for w in weights]


@pytest.mark.parametrize("builder", BUILDERS, ids=lambda b: b.__name__)
def test_load_a_file_keras_saved(tmp_path, keras, h5py, builder):
    keras.utils.set_random_seed(0)
    k_model = builder(keras.layers, keras)
    k_model.set_weights(_jitter(k_model.get_weights()))
    path = tmp_path / "k.keras"
    k_model.save(path)
    x = _inputs(_input_shapes(k_model), integer=builder is sequential_text)
    model = mn.models.load_model(path)
    expected = k_model.predict(x, verbose=0)
    got = model.predict(x, verbose=0)
    for e, g in zip(expected if isinstance(expected, list) else [expected],
                    got if isinstance(got, list) else [got]):
        np.testing.assert_allclose(g, np.asarray(e), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("builder", BUILDERS, ids=lambda b: b.__name__)
def test_keras_loads_a_file_minnet_saved(tmp_path, keras, h5py, builder):
    mn.manual_seed(0)
    model = builder(mn.layers, mn.models)
    model.set_weights(_jitter(model.get_weights()))
    path = tmp_path / "m.keras"
    model.save(path)
    with zipfile.ZipFile(path) as archive:
        assert sorted(archive.namelist()) == ["config.json", "metadata.json", "model.weights.h5"]
    k_model = keras.models.load_model(path)
    x = _inputs(_input_shapes(k_model), integer=builder is sequential_text)
    expected = model.predict(x, verbose=0)
    got = k_model.predict(x, verbose=0)
    for e, g in zip(expected if isinstance(expected, list) else [expected],
                    got if isinstance(got, list) else [got]):
        np.testing.assert_allclose(np.asarray(g), e, atol=1e-5, rtol=1e-5)
    # ... and minnet reads its own .keras file back to the same predictions.
    again = mn.models.load_model(path).predict(x, verbose=0)
    for e, g in zip(expected if isinstance(expected, list) else [expected],
                    again if isinstance(again, list) else [again]):
        np.testing.assert_allclose(g, e, atol=1e-5, rtol=1e-5)


def test_compile_settings_cross_over(tmp_path, keras, h5py):
    mn.manual_seed(0)
    model = sequential_dense(mn.layers, mn.models)
    model.compile(optimizer=mn.optimizers.SGD(0.05, momentum=0.9),
                  loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    model.save(tmp_path / "m.keras")
    k_model = keras.models.load_model(tmp_path / "m.keras")
    assert type(k_model.optimizer).__name__ == "SGD"
    assert float(k_model.optimizer.learning_rate) == pytest.approx(0.05)
    assert float(k_model.optimizer.momentum) == pytest.approx(0.9)
    k_model.save(tmp_path / "k.keras")
    restored = mn.models.load_model(tmp_path / "k.keras")
    assert isinstance(restored.optimizer, mn.optimizers.SGD)
    assert restored.optimizer.learning_rate == pytest.approx(0.05)
    x = np.random.default_rng(0).normal(size=(8, 6)).astype("float32")
    y = np.arange(8) % 3
    loss, accuracy = restored.evaluate(x, y, verbose=0)
    k_loss, k_accuracy = k_model.evaluate(x, y, verbose=0)
    assert loss == pytest.approx(k_loss, rel=1e-5) and accuracy == pytest.approx(k_accuracy)


def test_minnet_keras_file_layout(tmp_path, h5py):
    mn.manual_seed(0)
    model = sequential_cnn(mn.layers, mn.models)
    model.save(tmp_path / "m.keras")
    with zipfile.ZipFile(tmp_path / "m.keras") as archive:
        config = json.loads(archive.read("config.json"))
        metadata = json.loads(archive.read("metadata.json"))
    assert config["class_name"] == "Sequential" and config["module"] == "keras"
    assert metadata["keras_version"].startswith("3.")
    with zipfile.ZipFile(tmp_path / "m.keras") as archive:
        archive.extract("model.weights.h5", tmp_path)
    with h5py.File(tmp_path / "model.weights.h5") as h5:
        assert h5["layers/conv2d/vars/0"].shape == (3, 3, 3, 4)          # (kh, kw, in, out)
        assert h5["layers/depthwise_conv2d/vars/0"].shape == (3, 3, 4, 2)  # (kh, kw, in, m)
        assert h5["layers/conv2d_transpose/vars/0"].shape == (3, 3, 3, 5)  # (kh, kw, out, in)
        assert h5["layers/dense/vars/0"].shape[1] == 2                     # (in, out)


def test_minnet_format_stays_minnet(tmp_path):
    mn.manual_seed(0)
    model = sequential_dense(mn.layers, mn.models)
    model.save(tmp_path / "m.minnet")
    with zipfile.ZipFile(tmp_path / "m.minnet") as archive:
        assert "model.weights.h5" not in archive.namelist()
    restored = mn.models.load_model(tmp_path / "m.minnet")
    for a, b in zip(model.get_weights(), restored.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_layers_without_weights_and_user_layers_are_written(tmp_path, h5py):
    model = mn.models.Sequential([mn.layers.Input((4,)), mn.layers.Dense(3),
                                  mn.layers.Lambda(lambda t: t * 2, name="twice"),
                                  mn.layers.PReLU(name="prelu")])
    model.save(tmp_path / "fine.keras")     # Lambda has no weights; PReLU converts
    class Scale(mn.layers.Layer):
        def build(self, input_shape):
            self.factor = self.add_weight("factor", (input_shape[-1],), initializer="ones")
            self.built = True

        def call(self, x, training=False):
            return x * self.factor

    # a user's own layer: its weights are written as Keras writes them
    # (tests/saving/test_keras_file_custom_layers.py)
    mn.models.Sequential([mn.layers.Input((4,)), Scale(name="scale")]).save(tmp_path / "own.keras")



def test_keras_argument_minnet_lacks_is_named(tmp_path, keras, h5py):
    k_model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, lora_rank=2)]) \
        if "lora_rank" in keras.layers.Dense.__init__.__code__.co_varnames else None
    if k_model is None:
        pytest.skip("this Keras has no lora_rank")
    k_model.save(tmp_path / "k.keras")
    with pytest.raises(ModelFileError, match="lora_rank"):
        mn.models.load_model(tmp_path / "k.keras")


def test_h5_is_refused(tmp_path):
    model = sequential_dense(mn.layers, mn.models)
    with pytest.raises(ValueError, match="minnet does not write"):
        model.save(tmp_path / "m.h5")


def test_without_h5py_keras_suffix_falls_back_with_a_note(tmp_path, monkeypatch, capsys):
    import minnet.saving
    from minnet.saving import keras_format
    monkeypatch.setattr(keras_format, "h5py_available", lambda: False)
    monkeypatch.setattr(minnet.saving, "_KERAS_FALLBACK_NOTED", [])
    mn.manual_seed(0)
    model = sequential_dense(mn.layers, mn.models)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")            # a note, not a warning: `-W error` scripts run
        model.save(tmp_path / "m.keras")
        model.save(tmp_path / "m.keras")
    err = capsys.readouterr().err
    assert err.count("Keras cannot read") == 1 and 'pip install "minnet-dl[h5]"' in err
    with zipfile.ZipFile(tmp_path / "m.keras") as archive:
        assert "model.weights.h5" not in archive.namelist()
    restored = mn.models.load_model(tmp_path / "m.keras")
    for a, b in zip(model.get_weights(), restored.get_weights()):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("case", ["loss_object", "schedule", "rmsprop_weight_decay", "adamw_clipnorm"])
def test_compile_variants_both_ways(tmp_path, keras, h5py, case):
    x = np.random.default_rng(0).normal(size=(8, 4)).astype("float32")
    y = np.arange(8) % 3
    logits = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    settings = {
        "loss_object": dict(optimizer=keras.optimizers.Adam(1e-3), loss=logits,
                            metrics=[keras.metrics.SparseCategoricalAccuracy()]),
        "schedule": dict(optimizer=keras.optimizers.SGD(
            keras.optimizers.schedules.ExponentialDecay(0.1, 10, 0.9)), loss=logits),
        "rmsprop_weight_decay": dict(optimizer=keras.optimizers.RMSprop(1e-3, weight_decay=1e-4),
                                     loss=logits),
        "adamw_clipnorm": dict(optimizer=keras.optimizers.AdamW(1e-3, clipnorm=1.0), loss=logits,
                               metrics=["accuracy", keras.metrics.SparseTopKCategoricalAccuracy(k=2)]),
    }[case]
    k_model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
    k_model.compile(**settings)
    k_model.save(tmp_path / "k.keras")
    model = mn.models.load_model(tmp_path / "k.keras")
    assert type(model.optimizer).__name__ == type(k_model.optimizer).__name__
    np.testing.assert_allclose(model.evaluate(x, y, verbose=0), k_model.evaluate(x, y, verbose=0),
                               rtol=1e-5)
    model.save(tmp_path / "m.keras")
    back = keras.models.load_model(tmp_path / "m.keras")
    assert type(back.optimizer).__name__ == type(k_model.optimizer).__name__
    np.testing.assert_allclose(back.evaluate(x, y, verbose=0), k_model.evaluate(x, y, verbose=0),
                               rtol=1e-5)


LAYER_CASES = {
    "GroupNormalization": ((6, 8), lambda K: K.GroupNormalization(2)),
    "Normalization_config": ((5,), lambda K: K.Normalization(mean=[1, 2, 3, 4, 5],
                                                             variance=[1, 2, 3, 4, 5])),
    "TimeDistributed": ((4, 5), lambda K: K.TimeDistributed(K.Dense(3))),
    "Cropping2D": ((6, 6, 2), lambda K: K.Cropping2D(1)),
    "ZeroPadding2D": ((6, 6, 2), lambda K: K.ZeroPadding2D(1)),
    "UpSampling2D": ((3, 3, 2), lambda K: K.UpSampling2D(2)),
    "RepeatVector": ((3,), lambda K: K.RepeatVector(2)),
    "PReLU": ((3, 4), lambda K: K.PReLU()),
    "SpatialDropout2D": ((4, 4, 2), lambda K: K.SpatialDropout2D(0.2)),
    "Rescaling": ((4,), lambda K: K.Rescaling(0.5, 1.0)),
    "Conv1D_channels_first": ((3, 8), lambda K: K.Conv1D(4, 3, data_format="channels_first")),
    "LSTM_no_bias": ((4, 3), lambda K: K.LSTM(2, use_bias=False)),
    "GRU_backwards": ((4, 3), lambda K: K.GRU(2, go_backwards=True)),
    "Bidirectional_LSTM_ave": ((4, 3), lambda K: K.Bidirectional(K.LSTM(2, return_sequences=True),
                                                                 merge_mode="ave")),
    "Dense_regularized": ((4,), lambda K: K.Dense(2, kernel_regularizer="l2",
                                                  bias_constraint="non_neg")),
    "Activation_gelu": ((4,), lambda K: K.Activation("gelu")),
    "LeakyReLU": ((4,), lambda K: K.LeakyReLU(0.1)),
    "GlobalMaxPooling2D": ((4, 4, 2), lambda K: K.GlobalMaxPooling2D(keepdims=True)),
    "Permute": ((3, 4), lambda K: K.Permute((2, 1))),
    "Conv3D": ((4, 4, 4, 2), lambda K: K.Conv3D(3, 2)),
    "Conv3D_channels_first": ((2, 4, 4, 4), lambda K: K.Conv3D(3, 2, data_format="channels_first")),
    "Conv1DTranspose": ((5, 2), lambda K: K.Conv1DTranspose(3, 3, strides=2)),
    "Conv3DTranspose": ((3, 3, 3, 2), lambda K: K.Conv3DTranspose(3, 2)),
    "DepthwiseConv1D": ((7, 2), lambda K: K.DepthwiseConv1D(3, depth_multiplier=2)),
    "SeparableConv1D": ((7, 2), lambda K: K.SeparableConv1D(3, 3, depth_multiplier=2)),
    "ConvLSTM1D": ((2, 6, 2), lambda K: K.ConvLSTM1D(2, 3)),
    "ConvLSTM2D": ((2, 5, 5, 2), lambda K: K.ConvLSTM2D(2, 3, return_sequences=True)),
    "ConvLSTM3D": ((2, 4, 4, 4, 2), lambda K: K.ConvLSTM3D(2, 2)),
    "RNN_LSTMCell": ((4, 3), lambda K: K.RNN(K.LSTMCell(2))),
    "RNN_GRUCell": ((4, 3), lambda K: K.RNN(K.GRUCell(2), return_sequences=True)),
    "RNN_stacked_cells": ((4, 3), lambda K: K.RNN([K.LSTMCell(2), K.SimpleRNNCell(3)])),
}


@pytest.mark.parametrize("case", sorted(LAYER_CASES))
def test_layer_kinds_both_ways(tmp_path, keras, h5py, case):
    shape, make = LAYER_CASES[case]
    keras.utils.set_random_seed(0)
    k_model = keras.Sequential([keras.Input(shape), make(keras.layers)])
    _both_ways(tmp_path, keras, k_model, np.random.default_rng(1).normal(size=(2,) + shape).astype("float32"))


def _both_ways(tmp_path, keras, k_model, x):
    """Keras's file of ``k_model`` (jittered weights) predicts ``x`` in minnet as in Keras,
    and minnet's file of it loads back in Keras predicting the same."""
    k_model.set_weights(_jitter(k_model.get_weights()))
    k_model.save(tmp_path / "k.keras")
    model = mn.models.load_model(tmp_path / "k.keras")
    np.testing.assert_allclose(model.predict(x, verbose=0), np.asarray(k_model.predict(x, verbose=0)),
                               atol=1e-5, rtol=1e-5)
    model.save(tmp_path / "m.keras")
    back = keras.models.load_model(tmp_path / "m.keras")
    np.testing.assert_allclose(np.asarray(back.predict(x, verbose=0)), model.predict(x, verbose=0),
                               atol=1e-5, rtol=1e-5)


def test_adapted_normalization_both_ways(tmp_path, keras, h5py):
    data = np.random.default_rng(0).random((20, 5)).astype("float32")
    x = np.random.default_rng(1).random((3, 5)).astype("float32")
    layer = keras.layers.Normalization()
    layer.adapt(data)
    k_model = keras.Sequential([keras.Input((5,)), layer])
    k_model.save(tmp_path / "k.keras")
    model = mn.models.load_model(tmp_path / "k.keras")
    np.testing.assert_allclose(model.predict(x, verbose=0), np.asarray(k_model.predict(x, verbose=0)),
                               atol=1e-5)
    mine = mn.layers.Normalization()
    mine.adapt(data)
    model = mn.models.Sequential([mn.layers.Input((5,)), mine])
    model.save(tmp_path / "m.keras")
    back = keras.models.load_model(tmp_path / "m.keras")
    np.testing.assert_allclose(np.asarray(back.predict(x, verbose=0)), model.predict(x, verbose=0),
                               atol=1e-5)


@pytest.mark.parametrize("outer", ["functional", "sequential"])
def test_nested_sequential_both_ways(tmp_path, keras, h5py, outer):
    K = keras.layers
    keras.utils.set_random_seed(0)
    inner = keras.Sequential([keras.Input((5,)), K.Dense(4, activation="relu"), K.Dense(3)],
                             name="inner")
    if outer == "functional":
        i = keras.Input((5,))
        k_model = keras.Model(i, K.Dense(2)(K.Concatenate()([inner(i), K.Dense(3)(i)])))
    else:
        k_model = keras.Sequential([keras.Input((5,)), inner, K.Dense(2)])
    k_model.set_weights(_jitter(k_model.get_weights()))
    k_model.save(tmp_path / "k.keras")
    x = np.random.default_rng(0).normal(size=(3, 5)).astype("float32")
    model = mn.models.load_model(tmp_path / "k.keras")
    np.testing.assert_allclose(model.predict(x, verbose=0), np.asarray(k_model.predict(x, verbose=0)),
                               atol=1e-5, rtol=1e-5)
    model.save(tmp_path / "m.keras")
    back = keras.models.load_model(tmp_path / "m.keras")
    np.testing.assert_allclose(np.asarray(back.predict(x, verbose=0)), model.predict(x, verbose=0),
                               atol=1e-5, rtol=1e-5)


def test_keras_file_with_assets_is_refused(tmp_path, keras, h5py):
    k_model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    k_model.save(tmp_path / "k.keras")
    with zipfile.ZipFile(tmp_path / "k.keras", "a") as archive:
        archive.writestr("assets/layers/string_lookup/vocabulary.txt", "a\nb\n")
    with pytest.raises(ModelFileError, match="assets.*vocabulary"):
        mn.models.load_model(tmp_path / "k.keras")


@pytest.mark.parametrize("writer", ["keras", "minnet"])
def test_dict_outputs_with_per_output_compile(tmp_path, keras, h5py, writer):
    lib, models = (keras.layers, keras) if writer == "keras" else (mn.layers, mn.models)
    a = lib.Input((4,), name="a")
    h = lib.Dense(5, name="h")(a)
    model = models.Model(a, {"head": lib.Dense(2, name="head")(h), "aux": lib.Dense(1, name="aux")(h)})
    model.compile("adam", loss={"head": "mse", "aux": "mae"}, loss_weights={"head": 1.0, "aux": 0.5},
                  metrics={"head": ["mae"]})
    model.save(tmp_path / "m.keras")
    other = (mn.models.load_model if writer == "keras" else keras.models.load_model)(tmp_path / "m.keras")
    x = np.random.default_rng(0).normal(size=(6, 4)).astype("float32")
    y = {"head": np.ones((6, 2), "float32"), "aux": np.zeros((6, 1), "float32")}
    mine = model.evaluate(x, y, verbose=0, return_dict=True)
    theirs = other.evaluate(x, y, verbose=0, return_dict=True)
    assert set(mine) == set(theirs) == {"loss", "head_loss", "aux_loss", "head_mae"}
    for key in mine:
        assert mine[key] == pytest.approx(theirs[key], rel=1e-5)


@pytest.mark.parametrize("writer", ["keras", "minnet"])
def test_shared_layer_called_three_times(tmp_path, keras, h5py, writer):
    lib, models = (keras.layers, keras) if writer == "keras" else (mn.layers, mn.models)
    a, b = lib.Input((4,), name="a"), lib.Input((4,), name="b")
    shared = lib.Dense(3, name="shared")
    merged = lib.Concatenate()([shared(a), shared(b), shared(lib.Dense(4, name="pre")(a))])
    model = models.Model([a, b], lib.Dense(2, name="out")(merged))
    model.save(tmp_path / "m.keras")
    other = (mn.models.load_model if writer == "keras" else keras.models.load_model)(tmp_path / "m.keras")
    x = [np.random.default_rng(i).normal(size=(3, 4)).astype("float32") for i in range(2)]
    np.testing.assert_allclose(np.asarray(other.predict(x, verbose=0)),
                               np.asarray(model.predict(x, verbose=0)), atol=1e-5, rtol=1e-5)


def test_reads_a_nested_functional_model(tmp_path, keras, h5py):
    K = keras.layers
    keras.utils.set_random_seed(0)
    inner_input = keras.Input((5,))
    encoder = keras.Model(inner_input, K.Dense(3)(K.Dense(4, activation="relu")(inner_input)),
                          name="encoder")
    outer_input = keras.Input((5,))
    k_model = keras.Model(outer_input, K.Dense(2)(encoder(outer_input)))
    k_model.set_weights(_jitter(k_model.get_weights()))
    k_model.save(tmp_path / "k.keras")
    model = mn.models.load_model(tmp_path / "k.keras")
    x = np.random.default_rng(0).normal(size=(3, 5)).astype("float32")
    np.testing.assert_allclose(model.predict(x, verbose=0), np.asarray(k_model.predict(x, verbose=0)),
                               atol=1e-5, rtol=1e-5)
    with pytest.raises(ValueError, match="nested functional model 'encoder'.*model.minnet"):
        model.save(tmp_path / "m.keras")      # writing one is not supported (named)


WEIGHT_OPTION_CASES = {
    "LSTM": ((4, 3), lambda K, R: K.LSTM(2, kernel_regularizer=R.L2(0.1), recurrent_regularizer=R.L1(0.2),
                                         bias_regularizer=R.L2(0.3))),
    "GRU": ((4, 3), lambda K, R: K.GRU(2, recurrent_regularizer=R.L1L2(0.1, 0.2), bias_regularizer=R.L1(0.3))),
    "SimpleRNN": ((4, 3), lambda K, R: K.SimpleRNN(2, recurrent_regularizer=R.L2(0.2))),
    "ConvLSTM2D": ((2, 5, 5, 2), lambda K, R: K.ConvLSTM2D(2, 3, recurrent_regularizer=R.L2(0.2),
                                                           kernel_regularizer=R.L1(0.1))),
    "Conv2D": ((5, 5, 2), lambda K, R: K.Conv2D(3, 3, kernel_regularizer=R.L2(0.1), bias_regularizer=R.L1(0.2))),
    "DepthwiseConv2D": ((5, 5, 2), lambda K, R: K.DepthwiseConv2D(3, depthwise_regularizer=R.L2(0.1))),
    "SeparableConv2D": ((5, 5, 2), lambda K, R: K.SeparableConv2D(3, 3, depthwise_regularizer=R.L2(0.1),
                                                                  pointwise_regularizer=R.L1(0.2))),
    "SeparableConv1D": ((6, 2), lambda K, R: K.SeparableConv1D(3, 3, pointwise_regularizer=R.L2(0.1))),
    "BatchNormalization": ((4,), lambda K, R: K.BatchNormalization(gamma_regularizer=R.L2(0.1),
                                                                   beta_regularizer=R.L1(0.2))),
    "Embedding": ((3,), lambda K, R: K.Embedding(6, 2, embeddings_regularizer=R.L2(0.1))),
}


@pytest.mark.parametrize("case", sorted(WEIGHT_OPTION_CASES))
def test_keras_per_weight_regularizers_give_keras_penalty(tmp_path, keras, h5py, case):
    """Keras's <weight>_regularizer keywords (recurrent_, depthwise_, pointwise_, gamma_,
    embeddings_, ...) reach the weight Keras means: a model file written by Keras loads and
    its regularization losses equal Keras's on the same weights; the keywords work when
    given to minnet's layer directly, and stay in its config."""
    shape, make = WEIGHT_OPTION_CASES[case]
    keras.utils.set_random_seed(0)
    k_model = keras.Sequential([keras.Input(shape), make(keras.layers, keras.regularizers)])
    k_model.set_weights(_jitter(k_model.get_weights()))
    k_model.save(tmp_path / "k.keras")
    expected = float(sum(np.asarray(loss.detach()) for loss in k_model.losses))
    model = mn.models.load_model(tmp_path / "k.keras")
    got = float(sum(np.asarray(loss.numpy() if hasattr(loss, "numpy") else loss) for loss in model.losses))
    np.testing.assert_allclose(got, expected, rtol=1e-5)
    direct = make(mn.layers, mn.regularizers)
    mn.models.Sequential([mn.layers.Input(shape), direct])
    assert len(direct.losses) == len(model.layers[-1].losses) > 0
    options = {k for k, v in direct.get_config().items() if k.endswith("_regularizer") and v is not None}
    k_options = {k for k, v in k_model.layers[-1].get_config().items()
                 if k.endswith("_regularizer") and v is not None}
    assert options == k_options


def test_per_weight_options_keras_refuses_are_refused():
    """SeparableConv2D has no ``kernel``, BatchNormalization no ``kernel``/``bias``: Keras
    refuses those keywords, and minnet no longer takes and ignores them."""
    with pytest.raises(TypeError, match="kernel_regularizer"):
        mn.layers.SeparableConv2D(2, 3, kernel_regularizer="l2")
    with pytest.raises(TypeError, match="kernel_constraint"):
        mn.layers.BatchNormalization(kernel_constraint="non_neg")
    lstm = mn.layers.LSTM(3, kernel_constraint="non_neg", recurrent_constraint=mn.constraints.MaxNorm(1.0))
    lstm(np.ones((1, 4, 2), np.float32))
    assert [type(w.constraint).__name__ for w in lstm.weights] == ["NonNeg", "MaxNorm", "NoneType", "NoneType"]


@pytest.mark.parametrize("call", ["query_value", "query_value_key", "keywords", "causal"])
def test_functional_attention_called_with_several_arguments_both_ways(tmp_path, keras, h5py, call):
    """A functional model calling ``MultiHeadAttention(query, value, key=..., use_causal_mask=...)``
    (Keras's transformer examples): Keras's file loads, predicts as Keras, and minnet's file of
    it loads back in Keras; the call's arguments and the four projections' weights cross over."""
    calls = {"query_value": lambda mha, q, v: mha(q, v),
             "query_value_key": lambda mha, q, v: mha(q, v, key=v),
             "keywords": lambda mha, q, v: mha(query=q, value=v),
             "causal": lambda mha, q, v: mha(q, q, use_causal_mask=True)}
    keras.utils.set_random_seed(0)
    q, v = keras.Input((5, 4)), keras.Input((6, 4))
    use_bias = call != "query_value_key"
    out = calls[call](keras.layers.MultiHeadAttention(2, 3, use_bias=use_bias), q, v)
    k_model = keras.Model([q, v], keras.layers.Dense(2)(out))
    rng = np.random.default_rng(1)
    _both_ways(tmp_path, keras, k_model, [rng.normal(size=(2, 5, 4)).astype("float32"),
                                          rng.normal(size=(2, 6, 4)).astype("float32")])


def test_attention_scores_in_a_functional_model(tmp_path, keras):
    """``mha(q, v, return_attention_scores=True)`` on symbolic inputs gives (output, scores)
    with Keras's shapes; the model predicts both and round-trips as .minnet; writing it as
    .keras is refused by name (not yet translated)."""
    k_out, k_scores = keras.layers.MultiHeadAttention(2, 3)(np.ones((1, 5, 4), np.float32),
                                                            np.ones((1, 6, 4), np.float32),
                                                            return_attention_scores=True)
    assert (tuple(k_out.shape), tuple(k_scores.shape)) == ((1, 5, 4), (1, 2, 5, 6))
    # (Keras 3.15's own symbolic scores say (None, 2, 5, 5) here: its shape formula reuses
    # the query's length; the arrays it computes are (1, 2, 5, 6), as minnet's.)
    q, v = mn.layers.Input((5, 4)), mn.layers.Input((6, 4))
    out, scores = mn.layers.MultiHeadAttention(2, 3)(q, v, return_attention_scores=True)
    assert (tuple(out.shape), tuple(scores.shape)) == ((None, 5, 4), (None, 2, 5, 6))
    model = mn.models.Model([q, v], [out, scores])
    x = [np.ones((2, 5, 4), np.float32), np.ones((2, 6, 4), np.float32)]
    model.save(tmp_path / "m.minnet")
    again = mn.models.load_model(tmp_path / "m.minnet")
    for a, b in zip(model.predict(x, verbose=0), again.predict(x, verbose=0)):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="return_attention_scores=True"):
        model.save(tmp_path / "m.keras")
