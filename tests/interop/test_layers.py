"""minnet.interop for the convolution variants, normalisations, resampling, PReLU, Embedding
and the 1-D layers: to_torch -> same outputs, from_torch -> same model and weights,
compare (with a backward step and an SGD step) passes, in both layouts and both dtypes."""
import numpy as np
import pytest

import minnet as mn
from minnet import interop, layers
from _harness import TOLERANCES

pytestmark = pytest.mark.filterwarnings("ignore:Using padding=.same. with even kernel")

TOL = TOLERANCES["default"]        # the shared table (tests/_harness.py)
LAYOUTS = ["channels_first", "channels_last"]


def _image(df, c, h, w):
    return (c, h, w) if df == "channels_first" else (h, w, c)


def _spatial_axes(df):
    return [2, 3] if df == "channels_first" else [1, 2]


def _channel_axis(df):
    return 1 if df == "channels_first" else -1


# Each case: (layers, minnet sample shape, integer input range or None); ``d`` holds dtype
# and data_format, ``t`` the dtype only.
CASES = {
    "grouped_conv": lambda df, d, t: (
        [layers.Conv2D(6, 3, groups=2, padding="same", activation="relu", **d)], _image(df, 4, 7, 6)),
    "depthwise": lambda df, d, t: (
        [layers.DepthwiseConv2D(3, depth_multiplier=2, padding="same", **d),
         layers.DepthwiseConv2D((3, 2), strides=2, padding="same", activation="tanh", **d)],
        _image(df, 3, 9, 8)),
    "separable": lambda df, d, t: (
        [layers.SeparableConv2D(4, 3, depth_multiplier=2, padding="same", activation="relu", **d),
         layers.SeparableConv2D(3, 3, strides=2, padding="same", use_bias=False, **d),
         layers.SeparableConv2D(2, (2, 3), dilation_rate=1, **d)], _image(df, 3, 9, 8)),
    "transposed": lambda df, d, t: (
        [layers.Conv2DTranspose(4, 3, strides=2, padding="same", **d),
         layers.Conv2DTranspose(3, 2, strides=3, activation="relu", **d),
         layers.Conv2DTranspose(2, 3, strides=2, padding="same", output_padding=1, **d),
         layers.Conv2DTranspose(2, (4, 3), padding="same", **d)], _image(df, 3, 4, 3)),
    "resampling": lambda df, d, t: (
        [layers.UpSampling2D((2, 3), **d), layers.ZeroPadding2D(((1, 2), (0, 3)), **d),
         layers.Conv2D(3, 3, **d), layers.UpSampling2D(2, interpolation="bilinear", **d),
         layers.Cropping2D(((2, 1), (3, 0)), **d)], _image(df, 2, 4, 3)),
    "norms_prelu": lambda df, d, t: (
        [layers.Conv2D(4, 3, **d), layers.GroupNormalization(2, axis=_channel_axis(df), **t),
         layers.PReLU(shared_axes=_spatial_axes(df), **t),
         layers.LayerNormalization(axis=[1, 2, 3], **t),
         layers.PReLU(shared_axes=[1, 2, 3], **t),
         layers.GroupNormalization(1, axis=_channel_axis(df), epsilon=1e-5, **t),
         layers.Flatten(**d), layers.Dense(5, **t), layers.LayerNormalization(**t),
         layers.PReLU(**t), layers.Dense(3, **t)], _image(df, 3, 6, 5)),
    "sequence": lambda df, d, t: (
        [layers.Conv1D(4, 3, padding="causal", activation="relu", **d),
         layers.MaxPooling1D(2, padding="same", **d), layers.Conv1D(5, 2, padding="same", **d),
         layers.AveragePooling1D(2, **d), layers.Conv1D(3, 2, strides=2, padding="same", **d),
         layers.GlobalAveragePooling1D(**d), layers.Dense(2, **t)],
        (11, 3) if df == "channels_last" else (3, 11)),
    "sequence_more": lambda df, d, t: (
        [layers.Conv1D(4, 3, dilation_rate=2, padding=1, groups=2, **d),
         layers.MaxPooling1D(3, strides=2, **d),
         layers.AveragePooling1D(3, strides=1, padding="same", **d),      # pad left out
         layers.GlobalMaxPooling1D(keepdims=True, **d),
         layers.Conv1D(3, 1, **d), layers.Flatten(**t), layers.Dense(2, **t)],
        (12, 2) if df == "channels_last" else (2, 12)),
    "embedding": lambda df, d, t: (
        [layers.Embedding(10, 4, **t), layers.LayerNormalization(**t),
         layers.Conv1D(3, 3, padding="same", data_format="channels_last", **t),
         layers.GlobalMaxPooling1D(data_format="channels_last", **t), layers.Dense(2, **t)],
        (6,)),
}


def _make(name, df, dtype, seed=0):
    mn.manual_seed(seed)
    stack, shape = CASES[name](df, dict(dtype=dtype, data_format=df), dict(dtype=dtype))
    model = mn.Sequential([layers.Input(shape, dtype=dtype)] + stack)
    rng = np.random.default_rng(seed)
    for weight in model.parameters():     # away from the initial ones/zeros (norms, PReLU)
        weight.data[...] += (0.3 * rng.standard_normal(weight.shape)).astype(dtype)
    return model, shape


def _batch(name, shape, dtype, n=3, seed=1):
    rng = np.random.default_rng(seed)
    if name == "embedding":
        return rng.integers(0, 10, (n,) + shape)
    return rng.standard_normal((n,) + shape).astype(dtype)


def _torch_input(model, x, df):
    if x.ndim == 4 and df == "channels_last":
        return np.ascontiguousarray(x.transpose(0, 3, 1, 2))
    return x


def _from_torch_shape(shape, df):
    """The sample shape as the torch module takes it (NCHW images)."""
    if len(shape) == 3 and df == "channels_last":
        return (shape[2], shape[0], shape[1])
    return shape


def _kinds(model):
    """Layer types, activation layers left out (``activation=`` comes back as its own layer)."""
    return [type(layer) for layer in model.layers
            if type(layer).__module__ != "minnet.layers.activation" or type(layer) is layers.PReLU]


def _predict(model, x):
    with mn.no_grad():
        return model(x).numpy()


def _run_torch(torch, module, x):
    with torch.no_grad():
        out = module(torch.from_numpy(x)).numpy()
    return out


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("df", LAYOUTS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_round_trip_and_compare(torch, name, df, dtype):
    if name.startswith("sequence") or name == "embedding":
        images = False
    else:
        images = True
    model, shape = _make(name, df, dtype)
    model.eval()
    x = _batch(name, shape, dtype)
    expected = _predict(model, x)

    # to_torch: same outputs
    module = interop.to_torch(model)
    got = _run_torch(torch, module, _torch_input(model, x, df))
    if images and got.ndim == 4 and df == "channels_last":
        got = got.transpose(0, 2, 3, 1)
    np.testing.assert_allclose(got, expected, **TOL[dtype])
    assert list(interop.state_dict(model)) == list(module.state_dict())

    # from_torch: the same layers, weights and outputs
    back = interop.from_torch(module, _from_torch_shape(shape, df) if images else shape,
                              data_format=df)
    assert _kinds(back) == _kinds(model)
    assert back._build_input_shape == model._build_input_shape
    for a, b in zip(model.get_weights(), back.get_weights()):
        np.testing.assert_array_equal(a, b)
    for key, value in interop.state_dict(back).items():
        np.testing.assert_array_equal(value, module.state_dict()[key].numpy())
    np.testing.assert_array_equal(_predict(back, x), expected)

    # compare: output, input gradient, parameter gradients, one SGD step
    report = interop.compare(model, module, x, y=np.zeros_like(expected), loss="mse")
    assert report.ok, str(report)
    names = [row.name for row in report.rows]
    assert any(n.startswith("grad/") for n in names) and any(n.startswith("sgd_step/") for n in names)
    # ... and it can fail: a changed torch weight is found
    key = next(n for n in names if n.startswith("param/"))[len("param/"):]
    with torch.no_grad():
        module.get_parameter(key).add_(0.5)
    assert not interop.compare(model, module, x).ok


@pytest.mark.parametrize("df", LAYOUTS)
def test_layout_dependent_layers_before_the_first_image_layer(torch, df):
    # LayerNorm / GroupNorm / PReLU right after Input read the model's input images, whose
    # layout is the Conv2D's: compare hands torch NCHW, so they must be planned for it.
    mn.manual_seed(0)
    t = dict(dtype="float64")
    model = mn.Sequential([layers.Input(_image(df, 2, 5, 4), **t),
                           layers.LayerNormalization(axis=[1, 2, 3], **t),
                           layers.PReLU(shared_axes=_spatial_axes(df), **t),
                           layers.GroupNormalization(2, axis=_channel_axis(df), **t),
                           layers.Conv2D(3, 3, data_format=df, **t)])
    for weight in model.parameters():
        weight.data[...] += 0.3
    x = np.random.default_rng(0).standard_normal((2,) + _image(df, 2, 5, 4))
    module = interop.to_torch(model)
    assert interop.compare(model, module, x).ok
    back = interop.from_torch(module, (2, 5, 4), data_format=df)
    np.testing.assert_array_equal(_predict(back, x), _predict(model, x))


def test_module_types(torch):
    nn = torch.nn
    model, _ = _make("separable", "channels_first", "float32")
    module = interop.to_torch(model)
    assert type(module[0]) is nn.Sequential and module[0][0].groups == 3
    assert module[0][0].bias is None and module[0][1].kernel_size == (1, 1)
    assert type(module[2][0]) is nn.ZeroPad2d                  # strided "same"
    assert list(interop.state_dict(model))[:3] == ["0.0.weight", "0.1.weight", "0.1.bias"]
    model, _ = _make("transposed", "channels_first", "float32")
    module = interop.to_torch(model)
    assert type(module[0]) is nn.ConvTranspose2d and type(module[1]) is nn.ZeroPad2d
    assert tuple(module[1].padding) == (0, -1, 0, -1)          # Keras's "same" crops the end
    model, _ = _make("resampling", "channels_last", "float64")
    module = interop.to_torch(model)
    assert module[0].mode == "nearest" and module[3].align_corners is False
    assert tuple(module[4].padding) == (-3, 0, -2, -1)
    model, _ = _make("norms_prelu", "channels_last", "float64")
    module = interop.to_torch(model)
    assert module[1].num_groups == 2 and module[1].eps == 1e-3      # Keras's epsilon kept
    assert module[2].num_parameters == 4 and module[4].num_parameters == 1
    assert module[3].normalized_shape == (4, 4, 3)                  # torch's (C, H, W)
    model, _ = _make("sequence", "channels_first", "float32")
    module = interop.to_torch(model)
    assert type(module[2]).__name__ == "KerasMaxPool1d"             # -inf padding on the right
    assert isinstance(module[0], nn.Conv1d) and module[0].keras_pad == (2, 0)   # causal
    model, _ = _make("sequence", "channels_last", "float32")
    assert interop.to_torch(model)[0].channels_last


def test_layernorm_channels_last_weights_are_transposed(torch):
    model, _ = _make("norms_prelu", "channels_last", "float64")
    ln = model.layers[3]
    sd = interop.state_dict(model)
    np.testing.assert_array_equal(sd["3.weight"], ln.gamma.data.transpose(2, 0, 1))
    other, _ = _make("norms_prelu", "channels_last", "float64", seed=5)
    interop.load_torch_state_dict(other, sd)
    np.testing.assert_array_equal(other.layers[3].gamma.data, ln.gamma.data)
    np.testing.assert_array_equal(other.layers[2].alpha.data, model.layers[2].alpha.data)


def test_conv_groups_equal_channels_comes_back_depthwise(torch):
    mn.manual_seed(0)
    model = mn.Sequential([layers.Input((3, 5, 5), dtype="float64"),
                           layers.Conv2D(6, 3, groups=3, data_format="channels_first",
                                         dtype="float64")])
    back = interop.from_torch(interop.to_torch(model), (3, 5, 5), data_format="channels_first")
    assert type(back.layers[0]) is layers.DepthwiseConv2D and back.layers[0].depth_multiplier == 2
    x = np.random.default_rng(0).standard_normal((2, 3, 5, 5))
    np.testing.assert_allclose(_predict(back, x), _predict(model, x), **TOL["float64"])


def test_layernorm_center_only_and_scale_only(torch):
    for center, scale in [(True, False), (False, True), (False, False)]:
        mn.manual_seed(0)
        model = mn.Sequential([layers.Input((4, 5), dtype="float64"),
                               layers.LayerNormalization(center=center, scale=scale,
                                                         dtype="float64")])
        for w in model.parameters():
            w.data[...] += 0.5
        module = interop.to_torch(model)
        x = np.random.default_rng(0).standard_normal((2, 4, 5))
        np.testing.assert_allclose(_run_torch(torch, module, x), _predict(model, x), **TOL["float64"])
        back = interop.from_torch(module, (4, 5))
        # torch's LayerNorm has no bias-without-weight: center-only comes back with gamma = 1
        assert (back.layers[0].center, back.layers[0].scale) == (
            (True, True) if center and not scale else (center, scale))
        # (without weights the module has no dtype to read: it comes back float32)
        np.testing.assert_allclose(_predict(back, x), _predict(model, x), **TOL["float32"])
        assert interop.compare(model, module, x).ok


# --------------------------------------------------------------------------- clear errors
@pytest.mark.parametrize("stack, shape, match", [
    (lambda: [layers.Conv2D(4, 1), layers.LayerNormalization()], (4, 5, 3),   # NHWC images
     r"LayerNormalization.*last axes"),
    (lambda: [layers.Conv2D(4, 1), layers.PReLU()], (4, 5, 3), r"PReLU.*one per channel"),
    (lambda: [layers.PReLU(shared_axes=[1])], (4, 3), r"PReLU.*one per channel"),
    (lambda: [layers.Embedding(5, 3, mask_zero=True)], (4,), r"mask_zero"),
    (lambda: [layers.GaussianNoise(0.1)], (4,), r"GaussianNoise.*noise"),
    (lambda: [layers.GaussianDropout(0.1)], (4,), r"GaussianDropout.*noise"),
    (lambda: [layers.Permute((2, 1))], (4, 3), r"Permute.*no permute module"),
    (lambda: [layers.RepeatVector(2)], (4,), r"RepeatVector"),
    (lambda: [layers.Rescaling(0.5)], (4,), r"Rescaling.*preprocessing"),
    (lambda: [layers.RandomFlip()], (4, 4, 3), r"RandomFlip.*preprocessing"),
    (lambda: [layers.AveragePooling1D(2, padding="same")], (5, 3), r"AveragePooling1D.*unevenly"),
    (lambda: [layers.Conv2D(3, 1), layers.AveragePooling2D(2, padding="same")], (5, 5, 3),
     r"AveragePooling2D.*unevenly"),
    (lambda: [layers.Conv2D(4, 1, data_format="channels_first"),
              layers.GroupNormalization(2, axis=-1)], (4, 5, 6), r"GroupNormalization.*axis 3"),
    (lambda: [layers.GroupNormalization(2, axis=-1)], (5, 6), r"GroupNormalization.*axis 2"),
])
def test_layers_without_twin_are_named(torch, stack, shape, match):
    model = mn.Sequential([layers.Input(shape)] + stack())
    with pytest.raises(ValueError, match=match):
        interop.to_torch(model)
    with pytest.raises(ValueError, match=match):
        interop.state_dict(model)


def test_layers_without_twin_message_names_the_layer(torch):
    model = mn.Sequential([layers.Input((4,)), layers.GaussianNoise(0.1, name="noisy")])
    with pytest.raises(ValueError, match=r"'noisy' of type GaussianNoise has no PyTorch twin"):
        interop.to_torch(model)


def test_from_torch_errors_for_new_modules(torch):
    nn = torch.nn
    cases = [
        (nn.Sequential(nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)),
         (1, 3, 3), "align_corners"),
        (nn.Sequential(nn.Upsample(size=(5, 5))), (1, 3, 3), "scale_factor"),
        (nn.Sequential(nn.Embedding(5, 3, padding_idx=0)), (4,), "padding_idx"),
        (nn.Sequential(nn.ZeroPad2d((1, -1, 0, 0))), (1, 3, 3), "ZeroPad2d"),
        (nn.Sequential(nn.LayerNorm(3)), (3, 4), "normalized_shape"),
        (nn.Sequential(nn.Sequential(nn.Linear(3, 3))), (3,), "nested nn.Sequential"),
        (nn.Sequential(nn.MaxPool1d(2, padding=1)), (2, 6), "padding"),
    ]
    for module, shape, match in cases:
        with pytest.raises(ValueError, match=match):
            interop.from_torch(module, shape, data_format="channels_first")


def test_from_torch_handwritten_modules(torch):
    nn = torch.nn
    torch.manual_seed(0)
    module = nn.Sequential(nn.Conv2d(2, 4, 3, padding=1, groups=2), nn.GroupNorm(2, 4),
                           nn.PReLU(4), nn.Upsample(scale_factor=2), nn.ZeroPad2d(1),
                           nn.ConvTranspose2d(4, 3, 2, stride=2), nn.LayerNorm([3, 28, 28]),
                           nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(3, 2)).double().eval()
    for df in LAYOUTS:
        model = interop.from_torch(module, (2, 6, 6), data_format=df)
        assert type(model.layers[5]) is layers.Conv2DTranspose
        assert model.layers[6].epsilon == 1e-5 and model.layers[1].epsilon == 1e-5   # torch's
        x = np.random.default_rng(0).standard_normal((2, 2, 6, 6))
        x_mn = x if df == "channels_first" else np.ascontiguousarray(x.transpose(0, 2, 3, 1))
        np.testing.assert_allclose(_predict(model, x_mn), _run_torch(torch, module, x),
                                   **TOL["float64"])
    seq = nn.Sequential(nn.Embedding(7, 4), nn.LayerNorm(4), nn.Linear(4, 3)).eval()
    model = interop.from_torch(seq, (5,))
    idx = np.random.default_rng(0).integers(0, 7, (2, 5))
    with torch.no_grad():
        ref = seq(torch.from_numpy(idx)).numpy()
    np.testing.assert_allclose(_predict(model, idx), ref, **TOL["float32"])
    conv = nn.Sequential(nn.Conv1d(3, 4, 3, padding=1), nn.AvgPool1d(2), nn.ReLU(),
                         nn.MaxPool1d(2), nn.AdaptiveMaxPool1d(1), nn.Flatten()).double()
    model = interop.from_torch(conv, (3, 8))
    assert model.layers[0].data_format == "channels_first" and model.layers[0].padding == "same"
    x = np.random.default_rng(1).standard_normal((2, 3, 8))
    np.testing.assert_allclose(_predict(model, x), _run_torch(torch, conv, x), **TOL["float64"])


def test_keras_same_transposed_keeps_the_first_rows(torch):
    # Keras's "same" Conv2DTranspose (k=3, s=2) keeps rows 0..2H-1 of the full output;
    # torch's usual ConvTranspose2d(padding=1, output_padding=1) keeps rows 1..2H: a shift.
    mn.manual_seed(0)
    layer = layers.Conv2DTranspose(2, 3, strides=2, padding="same", use_bias=False,
                                   data_format="channels_first", dtype="float64")
    x = np.random.default_rng(0).standard_normal((1, 3, 4, 5))
    y = _predict(mn.Sequential([layers.Input((3, 4, 5), dtype="float64"), layer]), x)
    weight = torch.from_numpy(layer.kernel.data)
    full = torch.nn.functional.conv_transpose2d(torch.from_numpy(x), weight, stride=2).numpy()
    np.testing.assert_allclose(y, full[:, :, :8, :10], **TOL["float64"])
    usual = torch.nn.functional.conv_transpose2d(torch.from_numpy(x), weight, stride=2,
                                                 padding=1, output_padding=1).numpy()
    assert usual.shape == y.shape and not np.allclose(usual, y)
