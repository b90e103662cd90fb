"""model.export(path, format="onnx"): checked by onnx.checker and run by onnxruntime against predict."""
import numpy as np
import pytest

import minnet as mn
from minnet import layers as L
from minnet.saving import onnx_export

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

LAYOUTS = ["channels_last", "channels_first"]


def _run(model, x, tmp_path):
    path = tmp_path / "model.onnx"
    proto = model.export(str(path), format="onnx")
    onnx.checker.check_model(onnx.load(str(path)))
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    feeds = dict(zip(names, x if isinstance(x, list) else [x]))
    return proto, session.run(None, feeds)


def check(model, x, tmp_path, atol=1e-5, rtol=1e-5):
    expected = model.predict(x, verbose=0)
    _, got = _run(model, x, tmp_path)
    expected = expected if isinstance(expected, list) else [expected]
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g.shape == np.shape(e)
        np.testing.assert_allclose(g, e, atol=atol, rtol=rtol)
    return got


def _image(layout, h=9, w=8, c=3, n=2):
    rng = np.random.default_rng(0)
    shape = (n, h, w, c) if layout == "channels_last" else (n, c, h, w)
    return rng.normal(size=shape).astype("float32")


def _seq(layout, t=9, c=3, n=2):
    rng = np.random.default_rng(1)
    shape = (n, t, c) if layout == "channels_last" else (n, c, t)
    return rng.normal(size=shape).astype("float32")


def _sequential(x, *layers):
    mn.manual_seed(0)
    model = mn.models.Sequential([L.Input(x.shape[1:])] + list(layers))
    return model


def _randomize_state(model):
    # Non-trivial running statistics and affine parameters, so folding is really tested.
    rng = np.random.default_rng(5)
    model.set_weights([w + rng.uniform(0.1, 0.5, size=w.shape).astype(w.dtype)
                       for w in model.get_weights()])


ACTIVATION_NAMES = ["linear", "relu", "relu6", "leaky_relu", "elu", "selu", "sigmoid", "hard_sigmoid",
                    "hard_silu", "tanh", "softmax", "log_softmax", "softplus", "softsign", "silu",
                    "gelu", "mish", "exponential"]


@pytest.mark.parametrize("name", ACTIVATION_NAMES)
def test_dense_with_each_activation(tmp_path, name):
    x = np.random.default_rng(2).normal(size=(4, 5)).astype("float32") * 3
    check(_sequential(x, L.Dense(6, activation=name)), x, tmp_path)


@pytest.mark.parametrize("layer", [
    lambda: L.ReLU(), lambda: L.ReLU(max_value=1.0, negative_slope=0.1, threshold=0.5),
    lambda: L.LeakyReLU(0.1), lambda: L.ELU(0.7), lambda: L.Softmax(axis=1), lambda: L.SELU(),
    lambda: L.Sigmoid(), lambda: L.Tanh(), lambda: L.PReLU(), lambda: L.Activation("gelu"),
    lambda: L.Dropout(0.5), lambda: L.GaussianNoise(0.1), lambda: L.Rescaling(0.5, 1.0),
    lambda: L.Reshape((4, 6)), lambda: L.Permute((2, 1)), lambda: L.Flatten(),
    lambda: L.LayerNormalization(), lambda: L.LayerNormalization(axis=[1, 2]),
    lambda: L.Normalization(mean=0.5, variance=2.0), lambda: L.Dense(3),
    lambda: L.TimeDistributed(L.Dense(3, activation="relu")), lambda: L.GroupNormalization(2),
], ids=["relu", "relu_options", "leaky", "elu", "softmax_axis1", "selu", "sigmoid", "tanh", "prelu",
        "gelu_layer", "dropout", "noise", "rescaling", "reshape", "permute", "flatten", "layernorm",
        "layernorm_2axes", "normalization", "dense_3d", "time_distributed", "groupnorm_1d"])
def test_elementwise_and_reshaping_layers(tmp_path, layer):
    x = np.random.default_rng(3).normal(size=(2, 6, 4)).astype("float32") * 2
    model = _sequential(x, layer())
    _randomize_state(model)
    check(model, x, tmp_path)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("make", [
    lambda f: L.Conv2D(4, 3, data_format=f),
    lambda f: L.Conv2D(4, (3, 2), strides=2, padding="same", data_format=f, activation="relu"),
    lambda f: L.Conv2D(6, 3, padding="same", dilation_rate=2, groups=3, data_format=f),
    lambda f: L.Conv2D(4, 1, strides=(2, 3), use_bias=False, data_format=f),
    lambda f: L.DepthwiseConv2D(3, depth_multiplier=2, padding="same", strides=2, data_format=f),
    lambda f: L.SeparableConv2D(5, 3, padding="same", data_format=f, activation="tanh"),
    lambda f: L.Conv2DTranspose(4, 3, strides=2, data_format=f),
    lambda f: L.Conv2DTranspose(4, 3, strides=2, padding="same", data_format=f),
    lambda f: L.Conv2DTranspose(4, 2, strides=3, padding="valid", data_format=f),
    lambda f: L.Conv2DTranspose(4, 3, strides=2, padding="same", output_padding=1, data_format=f),
    lambda f: L.MaxPooling2D(2, data_format=f),
    lambda f: L.MaxPooling2D(3, strides=2, padding="same", data_format=f),
    lambda f: L.AveragePooling2D(2, data_format=f),
    lambda f: L.AveragePooling2D(3, strides=2, padding="same", data_format=f),
    lambda f: L.GlobalAveragePooling2D(data_format=f),
    lambda f: L.GlobalMaxPooling2D(data_format=f, keepdims=True),
    lambda f: L.BatchNormalization(axis=-1 if f == "channels_last" else 1),
    lambda f: L.ZeroPadding2D(((1, 2), (0, 1)), data_format=f),
    lambda f: L.UpSampling2D((2, 3), data_format=f),
    lambda f: L.Flatten(data_format=f),
    lambda f: L.Cropping2D(((1, 2), (0, 1)), data_format=f),
    lambda f: L.GroupNormalization(3, axis=-1 if f == "channels_last" else 1),
], ids=["conv", "conv_same_s2", "conv_groups_dilation", "conv_1x1_nobias", "depthwise",
        "separable", "transpose", "transpose_same", "transpose_k_lt_s", "transpose_output_padding",
        "maxpool", "maxpool_same", "avgpool", "avgpool_same", "gap", "gmp_keepdims", "batchnorm",
        "zeropad", "upsample", "flatten", "cropping", "groupnorm"])
def test_image_layers_both_layouts(tmp_path, layout, make):
    x = _image(layout, c=3)
    model = _sequential(x, make(layout))
    _randomize_state(model)
    check(model, x, tmp_path)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("make", [
    lambda f: L.Conv1D(4, 3, data_format=f),
    lambda f: L.Conv1D(4, 3, strides=2, padding="same", dilation_rate=1, data_format=f),
    lambda f: L.Conv1D(4, 3, padding="causal", dilation_rate=2, data_format=f, activation="relu"),
    lambda f: L.MaxPooling1D(2, data_format=f),
    lambda f: L.AveragePooling1D(3, strides=2, padding="same", data_format=f),
    lambda f: L.GlobalAveragePooling1D(data_format=f),
    lambda f: L.GlobalMaxPooling1D(data_format=f),
], ids=["conv1d", "conv1d_same", "conv1d_causal", "maxpool1d", "avgpool1d_same", "gap1d", "gmp1d"])
def test_sequence_layers_both_layouts(tmp_path, layout, make):
    x = _seq(layout)
    check(_sequential(x, make(layout)), x, tmp_path)


def test_small_cnn_both_layouts(tmp_path):
    for layout in LAYOUTS:
        x = _image(layout, h=12, w=12)
        axis = -1 if layout == "channels_last" else 1
        model = _sequential(x, L.Conv2D(8, 3, padding="same", data_format=layout),
                            L.BatchNormalization(axis=axis), L.ReLU(),
                            L.MaxPooling2D(2, data_format=layout), L.Dropout(0.3),
                            L.Flatten(), L.Dense(10, activation="softmax"))
        _randomize_state(model)
        check(model, x, tmp_path)


def test_functional_model_with_merges(tmp_path):
    mn.manual_seed(0)
    a = L.Input((6,), name="a")
    b = L.Input((6,), name="b")
    h1 = L.Dense(4, activation="relu")(a)
    h2 = L.Dense(4, activation="tanh")(b)
    merged = [L.Add()([h1, h2]), L.Subtract()([h1, h2]), L.Multiply()([h1, h2]),
              L.Average()([h1, h2]), L.Maximum()([h1, h2]), L.Minimum()([h1, h2])]
    out = L.Concatenate()(merged)
    second = L.Dense(2)(h1)
    model = mn.models.Model([a, b], [L.Dense(3, activation="softmax")(out), second])
    rng = np.random.default_rng(0)
    x = [rng.normal(size=(3, 6)).astype("float32"), rng.normal(size=(3, 6)).astype("float32")]
    check(model, x, tmp_path)


def test_nested_sequential_in_functional(tmp_path):
    mn.manual_seed(0)
    inner = mn.models.Sequential([L.Input((5,)), L.Dense(4, activation="relu"), L.Dense(3)])
    x_in = L.Input((5,))
    model = mn.models.Model(x_in, L.Softmax()(inner(x_in)))
    x = np.random.default_rng(0).normal(size=(2, 5)).astype("float32")
    check(model, x, tmp_path)


def test_embedding_gather(tmp_path):
    mn.manual_seed(0)
    model = mn.models.Sequential([L.Input((7,)), L.Embedding(20, 4), L.GlobalAveragePooling1D(),
                                  L.Dense(2)])
    x = np.random.default_rng(0).integers(0, 20, size=(3, 7)).astype("float32")
    check(model, x, tmp_path)


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "SimpleRNN"])
@pytest.mark.parametrize("options", [{}, {"return_sequences": True}, {"go_backwards": True},
                                     {"go_backwards": True, "return_sequences": True},
                                     {"return_state": True}],
                         ids=["last", "sequences", "backwards", "backwards_sequences", "state"])
def test_recurrent_layers(tmp_path, kind, options):
    mn.manual_seed(0)
    inputs = L.Input((6, 3))
    out = getattr(L, kind)(5, **options)(inputs)
    model = mn.models.Model(inputs, out)
    _randomize_state(model)
    x = np.random.default_rng(0).normal(size=(2, 6, 3)).astype("float32")
    check(model, x, tmp_path)


def test_simple_rnn_relu(tmp_path):
    x = np.random.default_rng(0).normal(size=(2, 6, 3)).astype("float32")
    check(_sequential(x, L.SimpleRNN(4, activation="relu", return_sequences=True)), x, tmp_path)


@pytest.mark.parametrize("merge_mode", ["concat", "sum", "mul", "ave"])
@pytest.mark.parametrize("return_sequences", [False, True])
def test_bidirectional(tmp_path, merge_mode, return_sequences):
    x = np.random.default_rng(0).normal(size=(2, 6, 3)).astype("float32")
    model = _sequential(x, L.Bidirectional(L.GRU(4, return_sequences=return_sequences),
                                           merge_mode=merge_mode))
    check(model, x, tmp_path)


def test_text_classifier(tmp_path):
    mn.manual_seed(0)
    model = mn.models.Sequential([L.Input((8,)), L.Embedding(30, 6),
                                  L.Bidirectional(L.LSTM(5, return_sequences=True)),
                                  L.LSTM(4), L.Dense(2, activation="softmax")])
    x = np.random.default_rng(0).integers(0, 30, size=(3, 8)).astype("float32")
    check(model, x, tmp_path)


def test_dynamic_batch(tmp_path):
    x = np.random.default_rng(0).normal(size=(2, 5)).astype("float32")
    model = _sequential(x, L.Dense(3))
    path = tmp_path / "m.onnx"
    model.export(str(path))
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    big = np.random.default_rng(1).normal(size=(7, 5)).astype("float32")
    np.testing.assert_allclose(session.run(None, {"input": big})[0], model.predict(big, verbose=0),
                               atol=1e-5, rtol=1e-5)


def test_unexported_layer_names_itself(tmp_path):
    x = np.random.default_rng(0).normal(size=(2, 6, 4)).astype("float32")
    model = _sequential(x, L.Dense(3), L.Lambda(lambda t: t * 2, name="times_two"))
    with pytest.raises(onnx_export.ExportError, match="'times_two' \\(Lambda\\).*no ONNX translation"):
        model.export(str(tmp_path / "m.onnx"))
    assert not (tmp_path / "m.onnx").exists()


def test_unexported_option_names_the_layer(tmp_path):
    x = np.random.default_rng(0).integers(0, 5, size=(2, 6)).astype("float32")
    model = _sequential(x, L.Embedding(5, 3, mask_zero=True, name="emb"))
    with pytest.raises(onnx_export.ExportError, match="'emb'.*mask_zero"):
        model.export(str(tmp_path / "m.onnx"))


def test_export_arguments(tmp_path):
    x = np.random.default_rng(0).normal(size=(2, 5)).astype("float32")
    model = _sequential(x, L.Dense(3))
    with pytest.raises(ValueError, match="format"):
        model.export(str(tmp_path / "m"), format="tf_saved_model")
    with pytest.raises(TypeError, match="unexpected keyword"):
        model.export(str(tmp_path / "m.onnx"), opsett=18)
    proto = model.export(str(tmp_path / "m.onnx"), opset=18)
    assert proto.opset_import[0].version == 18


def test_missing_onnx_message(monkeypatch, tmp_path):
    import builtins
    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name == "onnx" or name.startswith("onnx."):
            raise ImportError("No module named 'onnx'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    x = np.random.default_rng(0).normal(size=(2, 5)).astype("float32")
    model = _sequential(x, L.Dense(3))
    with pytest.raises(ImportError, match=r'pip install "minnet-dl\[onnx\]"'):
        model.export(str(tmp_path / "m.onnx"))


def test_repeat_vector(tmp_path):
    x = np.random.default_rng(0).normal(size=(2, 5)).astype("float32")
    check(_sequential(x, L.RepeatVector(3), L.LSTM(2, return_sequences=True)), x, tmp_path)


def test_random_augmentation_is_the_identity_at_inference(tmp_path):
    x = _image("channels_last")
    model = _sequential(x, L.RandomFlip(), L.RandomTranslation(0.1, 0.1), L.RandomRotation(0.1),
                        L.RandomZoom(0.1), L.RandomContrast(0.2), L.Conv2D(2, 3))
    check(model, x, tmp_path)


def test_subclassed_and_unbuilt_models_are_refused(tmp_path):
    class Net(mn.Model):
        def __init__(self):
            super().__init__()
            self.dense = L.Dense(2)

        def call(self, x, training=False):
            return self.dense(x)

    net = Net()
    net.predict(np.zeros((1, 3), "float32"), verbose=0)
    with pytest.raises(onnx_export.ExportError, match="subclassed.*functional"):
        net.export(str(tmp_path / "n.onnx"))
    with pytest.raises(ValueError, match="not built"):
        mn.models.Sequential([L.Dense(3)]).export(str(tmp_path / "s.onnx"))


def test_shared_layer(tmp_path):
    mn.manual_seed(0)
    a, b = L.Input((4,), name="a"), L.Input((4,), name="b")
    shared = L.Dense(3, name="shared")
    merged = L.Concatenate()([shared(a), shared(b), shared(L.Dense(4, name="pre")(a))])
    model = mn.models.Model([a, b], L.Dense(2)(merged))
    x = [np.random.default_rng(i).normal(size=(3, 4)).astype("float32") for i in range(2)]
    check(model, x, tmp_path)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("size, interpolation", [((5, 13), "bilinear"), ((18, 4), "bilinear"),
                                                 ((5, 13), "nearest"), ((18, 16), "nearest")])
def test_resizing(tmp_path, layout, size, interpolation):
    x = _image(layout)
    check(_sequential(x, L.Resizing(*size, interpolation=interpolation, data_format=layout)), x,
          tmp_path)


def _attention_model(causal=False, cross=False, key=False, t=None, **options):
    mn.manual_seed(0)
    q_in = L.Input((t, 8))
    inputs = [q_in]
    v_in = q_in
    if cross:
        v_in = L.Input((t, 6))
        inputs.append(v_in)
    kwargs = dict(use_causal_mask=causal)
    if key:
        k_in = L.Input((t, 5))
        inputs.append(k_in)
        kwargs["key"] = k_in
    y = L.MultiHeadAttention(num_heads=2, key_dim=3, **options)(q_in, v_in, **kwargs)
    y = L.LayerNormalization()(L.add([q_in, y]) if y.shape[-1] == 8 and not options.get(
        "output_shape") else y)
    return mn.Model(inputs if len(inputs) > 1 else q_in, y)


@pytest.mark.parametrize("case", [dict(), dict(causal=True), dict(cross=True),
                                  dict(cross=True, key=True), dict(use_gate=True),
                                  dict(value_dim=4, use_bias=False), dict(output_shape=(2, 3)),
                                  dict(causal=True, t=7)], ids=str)
def test_multi_head_attention(tmp_path, case):
    model = _attention_model(**case)
    rng = np.random.default_rng(3)
    model.set_weights([w + rng.normal(0, 0.3, w.shape).astype(w.dtype) for w in model.get_weights()])
    widths = [8] + ([6] if case.get("cross") else []) + ([5] if case.get("key") else [])
    x = [rng.normal(size=(2, 7, d)).astype("float32") for d in widths]
    check(model, x if len(x) > 1 else x[0], tmp_path)
    if case.get("causal") and case.get("t") is None:     # a dynamic length runs at others
        _, got = _run(model, x[0][:, :4], tmp_path)
        np.testing.assert_allclose(got[0], model.predict(x[0][:, :4], verbose=0), atol=1e-5, rtol=1e-5)


def test_attention_options_without_translation_name_themselves(tmp_path):
    q = L.Input((5, 8))
    mask = L.Input((5, 5), dtype="bool")
    y = L.MultiHeadAttention(2, 3)(q, q, attention_mask=mask)
    with pytest.raises(ValueError, match="attention_mask.*not translated"):
        mn.Model([q, mask], y).export(str(tmp_path / "m.onnx"), format="onnx")
    q4 = L.Input((2, 5, 8))
    y = L.MultiHeadAttention(2, 3, attention_axes=(2,))(q4, q4)
    with pytest.raises(ValueError, match="rank > 3"):
        mn.Model(q4, y).export(str(tmp_path / "m.onnx"), format="onnx")


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("options", [dict(), dict(padding="same", strides=2),
                                     dict(dilation_rate=(1, 2, 1), groups=2)], ids=str)
def test_conv3d_both_layouts(tmp_path, layout, options):
    rng = np.random.default_rng(4)
    shape = (2, 5, 6, 7, 4) if layout == "channels_last" else (2, 4, 5, 6, 7)
    x = rng.normal(size=shape).astype("float32")
    model = _sequential(x, L.Conv3D(4, 3, data_format=layout, activation="relu", **options))
    _randomize_state(model)
    check(model, x, tmp_path)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("make", [lambda f: L.DepthwiseConv1D(3, depth_multiplier=2, padding="same",
                                                              data_format=f),
                                  lambda f: L.SeparableConv1D(4, 3, strides=2, data_format=f,
                                                              activation="relu"),
                                  lambda f: L.DepthwiseConv1D(3, padding="causal", data_format=f)],
                         ids=["depthwise", "separable", "causal"])
def test_depthwise_and_separable_conv1d(tmp_path, layout, make):
    x = _seq(layout)
    model = _sequential(x, make(layout))
    _randomize_state(model)
    check(model, x, tmp_path)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("options", [dict(), dict(padding="same", strides=2),
                                     dict(strides=2, output_padding=1)], ids=str)
def test_conv1d_and_conv3d_transpose(tmp_path, layout, options):
    x = _seq(layout)
    model = _sequential(x, L.Conv1DTranspose(4, 3, data_format=layout, **options))
    _randomize_state(model)
    check(model, x, tmp_path)
    rng = np.random.default_rng(6)
    shape = (2, 3, 4, 5, 2) if layout == "channels_last" else (2, 2, 3, 4, 5)
    v = rng.normal(size=shape).astype("float32")
    model = _sequential(v, L.Conv3DTranspose(3, 3, data_format=layout, **options))
    _randomize_state(model)
    check(model, v, tmp_path)
