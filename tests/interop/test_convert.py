"""minnet.interop: to_torch / from_torch round trips, compare(), state_dict files.

Every model here is translated to torch and back; predictions must agree with torch
within the dtype tolerance and be bit-identical after the round trip (same weights,
same minnet code).  The zoo is written NCHW: its tests run under channels_first
(``nchw`` fixture); the channels_last tests at the end build NHWC models.
"""
import sys

import numpy as np
import pytest

import minnet as mn
from minnet import interop, layers
from _harness import TOLERANCES


@pytest.fixture(autouse=True, scope="module")
def _channels_first_images():
    # The image models here are built for NCHW data; Conv2D and the image layers follow
    # mn.config.image_data_format(), whose default is Keras's channels_last.
    mn.config.set_image_data_format("channels_first")
    yield
    mn.config.set_image_data_format("channels_last")

pytestmark = pytest.mark.filterwarnings("ignore:Using padding=.same. with even kernel")

TOL = TOLERANCES["default"]        # the shared table (tests/_harness.py) answers to dtype names


@pytest.fixture(autouse=True)
def nchw(request):
    """The NCHW zoo below runs under channels_first; channels_last tests opt out."""
    if "channels_last" in request.node.name:
        yield
        return
    mn.config.set_image_data_format("channels_first")
    try:
        yield
    finally:
        mn.config.set_image_data_format("channels_last")


# --------------------------------------------------------------------------- model zoo
def _dense(dtype):
    return [layers.Input((7,), dtype=dtype), layers.Dense(5, activation="relu", dtype=dtype),
            layers.Dense(4, activation="tanh", dtype=dtype),
            layers.Dense(3, activation="softmax", dtype=dtype)], (7,)


def _activations(dtype):
    d = dict(dtype=dtype)
    return [layers.Input((5,), **d), layers.Dense(6, **d), layers.LeakyReLU(0.2, **d),
            layers.Dense(6, activation="elu", **d), layers.ELU(0.7, **d),
            layers.Dense(6, activation="leaky_relu", **d), layers.SELU(**d),
            layers.Dense(6, activation="sigmoid", **d), layers.Sigmoid(**d), layers.Tanh(**d),
            layers.Activation("relu", **d), layers.Activation("linear", **d),
            layers.Dense(4, activation="selu", use_bias=False, **d), layers.Softmax(axis=1, **d)], (5,)


def _batchnorm1d(dtype):
    d = dict(dtype=dtype)
    return [layers.Input((6,), **d), layers.Dense(5, **d),
            layers.BatchNormalization(momentum=0.8, epsilon=1e-3, **d), layers.ReLU(**d),
            layers.Dense(2, **d)], (6,)


def _conv(dtype):
    d = dict(dtype=dtype)
    return [layers.Input((3, 9, 8), **d),
            layers.Conv2D(4, (3, 2), padding="same", activation="elu", **d),   # non-square, even kw
            layers.BatchNormalization(**d),
            layers.MaxPooling2D(2, **d),
            layers.Conv2D(5, 3, strides=2, padding=1, **d),                     # stride 2, int padding
            layers.AveragePooling2D(2, strides=1, **d),
            layers.Flatten(**d), layers.Dense(3, **d)], (3, 9, 8)


def _conv_more(dtype):
    d = dict(dtype=dtype)
    return [layers.Input((2, 7, 6), **d),
            layers.Conv2D(4, 2, dilation_rate=2, padding="same", **d),          # dilation, even kernel
            layers.Conv2D(3, 1, use_bias=False, activation="relu", **d),        # 1x1, no bias
            layers.AveragePooling2D(3, strides=2, padding=1, **d),              # count_include_pad
            layers.MaxPooling2D((2, 1), strides=(1, 2), padding=(1, 0), **d),   # -inf padding
            layers.GlobalAveragePooling2D(**d), layers.Dense(2, **d)], (2, 7, 6)


def _pool_same(dtype):
    d = dict(dtype=dtype)
    return [layers.Input((2, 7, 8), **d),
            layers.MaxPooling2D(3, strides=2, padding="same", **d),             # uneven -inf padding
            layers.AveragePooling2D(3, strides=1, padding="same", **d),         # symmetric, excluded
            layers.Conv2D(3, (4, 3), **d),                                      # kernel = input height
            layers.Flatten(**d)], (2, 7, 8)


def _reshape(dtype):
    d = dict(dtype=dtype)
    return [layers.Input((2, 3, 4), **d), layers.Reshape((4, 6), **d),      # Flatten + Unflatten
            layers.Dense(5, **d), layers.Flatten(**d), layers.Reshape((5, -1), **d),   # Unflatten
            layers.Flatten(**d), layers.Dense(2, **d)], (2, 3, 4)


def _dropout(dtype):
    d = dict(dtype=dtype)
    return [layers.Input((2, 5, 5), **d), layers.SpatialDropout2D(0.5, **d),
            layers.Conv2D(3, 3, activation="selu", **d), layers.AlphaDropout(0.2, **d),
            layers.Flatten(**d), layers.Dropout(0.3, **d), layers.Dense(2, **d)], (2, 5, 5)


def _dropout_zero(dtype):
    d = dict(dtype=dtype)
    return [layers.Input((2, 5, 5), **d), layers.SpatialDropout2D(0.0, **d),
            layers.Conv2D(3, 3, **d), layers.AlphaDropout(0.0, **d),
            layers.Flatten(**d), layers.Dropout(0.0, **d), layers.Dense(2, **d)], (2, 5, 5)


ZOO = {"dense": _dense, "activations": _activations, "batchnorm1d": _batchnorm1d, "conv": _conv,
       "conv_more": _conv_more, "pool_same": _pool_same, "reshape": _reshape,
       "dropout": _dropout, "dropout_zero": _dropout_zero}


def _make(name, dtype, seed=0):
    mn.manual_seed(seed)
    stack, shape = ZOO[name](dtype)
    return mn.Sequential(stack), shape


def _batch(shape, dtype, n=4, seed=1):
    return np.random.default_rng(seed).standard_normal((n,) + shape).astype(dtype)


def _run_torch(torch, module, x):
    with torch.no_grad():
        return module(torch.from_numpy(x)).numpy()


def _predict(model, x):
    with mn.no_grad():
        return model(x).numpy()


# --------------------------------------------------------------------------- round trips
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("mode", ["eval", "train"])
@pytest.mark.parametrize("name", sorted(ZOO))
def test_round_trip_predictions(torch, name, mode, dtype):
    if name == "dropout" and mode == "train":
        pytest.skip("active dropout draws different masks in each framework (see dropout_zero)")
    model, shape = _make(name, dtype)
    model.train(mode == "train")
    x = _batch(shape, dtype)

    module = interop.to_torch(model)
    assert module.training == (mode == "train")
    assert all(m.training == (mode == "train") for m in module)
    torch_dtype = torch.float64 if dtype == "float64" else torch.float32
    assert all(p.dtype == torch_dtype for p in module.parameters())

    back = interop.from_torch(module, shape)
    assert back.training == (mode == "train")
    assert all(layer.dtype == np.dtype(dtype) for layer in back.layers)

    # Same numbering both ways: the round-tripped model names its state as the torch module does.
    assert list(interop.state_dict(back)) == list(module.state_dict())
    for key, value in interop.state_dict(back).items():
        np.testing.assert_array_equal(value, module.state_dict()[key].numpy())

    # The three models start from the same state; each forward (train mode) updates its own BN stats.
    expected = _predict(model, x)
    np.testing.assert_allclose(_run_torch(torch, module, x), expected, **TOL[dtype])
    np.testing.assert_array_equal(_predict(back, x), expected)


def test_to_torch_module_types(torch):
    nn = torch.nn
    model, _ = _make("conv_more", "float32")
    module = interop.to_torch(model)
    assert [type(m) for m in module] == [nn.Conv2d, nn.Conv2d, nn.ReLU, nn.AvgPool2d, nn.MaxPool2d,
                                         nn.AdaptiveAvgPool2d, nn.Flatten, nn.Linear]
    assert module[0].padding == "same" and module[0].dilation == (2, 2)
    assert module[1].bias is None
    model, _ = _make("pool_same", "float32")
    module = interop.to_torch(model)
    assert [type(m) for m in module] == [nn.ConstantPad2d, nn.MaxPool2d, nn.AvgPool2d, nn.Conv2d,
                                         nn.Flatten]
    assert module[2].count_include_pad is False


def test_strided_same_conv(torch):
    mn.manual_seed(3)
    x = _batch((2, 8, 7), "float32")
    try:
        model = mn.Sequential([layers.Input((2, 8, 7)),
                               layers.Conv2D(3, (3, 2), strides=2, padding="same")])
        expected = _predict(model, x)
    except ValueError as error:
        pytest.skip(f"minnet does not run strided 'same' convolutions yet: {error}")
    module = interop.to_torch(model)
    assert isinstance(module[0], torch.nn.ZeroPad2d) and isinstance(module[1], torch.nn.Conv2d)
    np.testing.assert_allclose(_run_torch(torch, module, x), expected, **TOL["float32"])
    back = interop.from_torch(module, (2, 8, 7))
    assert back.layers[0].padding == "same" and back.layers[0].strides == (2, 2)
    np.testing.assert_array_equal(_predict(back, x), expected)


def test_from_torch_handwritten_module(torch):
    nn = torch.nn
    torch.manual_seed(0)
    module = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4, momentum=0.3, eps=1e-4),
                           nn.ReLU(inplace=True), nn.MaxPool2d(2), nn.Dropout2d(0.1), nn.Flatten(),
                           nn.Linear(4 * 3 * 3, 8), nn.BatchNorm1d(8, affine=False), nn.Tanh(),
                           nn.Dropout(0.2), nn.Linear(8, 3), nn.Softmax(dim=1)).double().eval()
    model = interop.from_torch(module, (1, 6, 6))
    assert model.layers[1].momentum == 0.7 and model.layers[1].epsilon == 1e-4   # Keras meaning
    assert not model.layers[7].center and not model.layers[7].scale
    assert model.layers[0].dtype == np.float64
    x = _batch((1, 6, 6), "float64", n=3)
    np.testing.assert_allclose(_predict(model, x), _run_torch(torch, module, x), **TOL["float64"])


# --------------------------------------------------------------------------- state
def test_batchnorm_running_stats_preserved(torch):
    model, shape = _make("conv", "float32")
    model.train()
    for seed in range(3):
        model(_batch(shape, "float32", seed=seed))
    bn = model.layers[1]
    assert not np.allclose(bn.moving_mean.data, 0)
    module = interop.to_torch(model)
    np.testing.assert_array_equal(module[2].running_mean.numpy(), bn.moving_mean.data)
    np.testing.assert_array_equal(module[2].running_var.numpy(), bn.moving_variance.data)
    assert module[2].momentum == pytest.approx(1 - bn.momentum) and module[2].eps == bn.epsilon

    # torch counts batches; the count survives torch -> minnet -> torch.
    module.train()
    with torch.no_grad():
        for seed in range(2):
            module(torch.from_numpy(_batch(shape, "float32", seed=seed)))
    count = int(module[2].num_batches_tracked)
    back = interop.from_torch(module, shape)
    np.testing.assert_array_equal(back.layers[2].moving_mean.data, module[2].running_mean.numpy())
    assert int(interop.state_dict(back)["2.num_batches_tracked"]) == count
    assert int(interop.to_torch(back)[2].num_batches_tracked) == count

    # eval mode then uses those running statistics in both.
    back.eval()
    module.eval()
    x = _batch(shape, "float32", seed=9)
    np.testing.assert_allclose(_predict(back, x), _run_torch(torch, module, x), **TOL["float32"])


def test_frozen_weights_keep_requires_grad(torch):
    model, _ = _make("dense", "float32")
    model.layers[0].trainable = False
    module = interop.to_torch(model)
    assert not module[0].weight.requires_grad and module[2].weight.requires_grad
    back = interop.from_torch(module, (7,))
    assert not back.layers[0].kernel.requires_grad and back.layers[2].kernel.requires_grad


def test_to_torch_copies_weights(torch):
    model, _ = _make("dense", "float64")
    module = interop.to_torch(model)
    before = model.layers[0].kernel.data.copy()
    with torch.no_grad():
        module[0].weight.add_(1.0)
    np.testing.assert_array_equal(model.layers[0].kernel.data, before)


# --------------------------------------------------------------------------- compare
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("loss", [None, "mse", "cross_entropy"])
def test_compare_equivalent_pair(torch, dtype, loss):
    model, shape = _make("conv", dtype)
    model.train()
    module = interop.to_torch(model)
    x = _batch(shape, dtype, n=5)
    y = None
    if loss == "mse":
        y = np.random.default_rng(2).standard_normal((5, 3)).astype(dtype)
    elif loss == "cross_entropy":
        y = np.array([0, 2, 1, 1, 0])
    report = interop.compare(model, module, x, y=y, loss=loss)
    assert report.ok and bool(report), str(report)
    names = [row.name for row in report.rows]
    for key in ("0.weight", "0.bias", "2.weight", "4.bias", "7.weight"):
        assert f"grad/{key}" in names and f"sgd_step/{key}" in names
    assert {"output", "input.grad", "buffer/2.running_mean", "buffer/2.running_var"} <= set(names)
    text = str(report)
    assert "grad/0.weight" in text and "OK" in text
    # Running statistics moved in both (a training forward), and equally.
    assert not np.allclose(model.layers[1].moving_mean.data, 0)


def test_compare_finds_injected_difference(torch):
    model, shape = _make("conv", "float64")
    model.train()
    module = interop.to_torch(model)
    with torch.no_grad():
        module[4].weight[1, 0, 0, 0] += 1e-3
    x = _batch(shape, "float64")
    y = np.random.default_rng(2).standard_normal((4, 3))
    report = interop.compare(model, module, x, y=y, loss="mse")
    assert not report.ok and not bool(report)
    assert "sgd_step/4.weight" in report.failed and "output" in report.failed
    # The perturbed weight is named; the other parameters are equal (their gradients are not).
    assert [name for name in report.failed if name.startswith("param/")] == ["param/4.weight"]
    assert report["param/4.weight"].max_abs == pytest.approx(1e-3, rel=1e-9)
    assert "buffer/2.running_mean" not in report.failed      # computed before the changed layer
    assert "MISMATCH" in str(report) and "param/4.weight" in str(report)


def test_compare_finds_buffer_difference_and_restores_grads(torch):
    model, shape = _make("batchnorm1d", "float32")
    module = interop.to_torch(model)                          # eval mode: buffers unchanged
    model.layers[1].moving_variance.data[0] += 0.5
    kernel = model.layers[0].kernel
    kernel.grad = np.full(kernel.shape, 7.0, dtype=np.float32)
    report = interop.compare(model, module, _batch(shape, "float32"))
    assert "buffer/1.running_var" in report.failed and "buffer/1.running_mean" not in report.failed
    np.testing.assert_array_equal(kernel.grad, 7.0)
    assert module[0].weight.grad is None


def test_compare_tolerance_override_and_notes(torch):
    model, shape = _make("dropout", "float32")
    model.train()
    module = interop.to_torch(model)
    report = interop.compare(model, module, _batch(shape, "float32"), rtol=10.0, atol=10.0)
    assert report.rtol == 10.0 and report.notes
    model.eval()
    module.eval()
    assert interop.compare(model, module, _batch(shape, "float32")).ok


def test_compare_bad_arguments(torch):
    model, shape = _make("dense", "float32")
    module = interop.to_torch(model)
    x = _batch(shape, "float32")
    with pytest.raises(ValueError, match="loss"):
        interop.compare(model, module, x, loss="hinge")
    with pytest.raises(ValueError, match="`y`"):
        interop.compare(model, module, x, loss="mse")
    other = torch.nn.Sequential(torch.nn.Linear(7, 3))
    with pytest.raises(ValueError, match="2.weight"):
        interop.compare(model, other, x)


# --------------------------------------------------------------------------- errors
def test_unsupported_layers(torch):
    model = mn.Sequential([layers.Input((3,)), layers.Dense(2),
                           layers.Lambda(lambda t: t * 2, name="doubler")])
    with pytest.raises(ValueError, match="'doubler'.*Lambda"):
        interop.to_torch(model)

    class Scale(layers.Layer):
        def call(self, x, training=False):
            return x * 2.0

    model = mn.Sequential([layers.Input((3,)), Scale(name="my_scale")])
    with pytest.raises(ValueError, match="my_scale"):
        interop.to_torch(model)
    model = mn.Sequential([layers.Input((3,)), layers.Dense(2, activation=lambda t: t, name="odd")])
    with pytest.raises(ValueError, match="'odd'.*custom activation"):
        interop.to_torch(model)
    with pytest.raises(ValueError, match="not built"):
        interop.to_torch(mn.Sequential([layers.Dense(2)]))
    with pytest.raises(TypeError, match="model"):
        interop.to_torch("not a model")


def test_from_torch_errors(torch):
    nn = torch.nn
    with pytest.raises(ValueError, match=r"Module 1 .*GELU"):
        interop.from_torch(nn.Sequential(nn.Linear(3, 2), nn.GELU()), (3,))
    with pytest.raises(ValueError, match=r"Module 0 .*padding_mode"):
        interop.from_torch(nn.Sequential(nn.Conv2d(2, 2, 3, padding_mode="reflect")), (2, 5, 5))
    with pytest.raises(ValueError, match=r"Module 0 .*ceil_mode"):
        interop.from_torch(nn.Sequential(nn.MaxPool2d(2, ceil_mode=True)), (1, 5, 5))
    with pytest.raises(TypeError, match="torch.nn.Sequential"):
        interop.from_torch(nn.Linear(3, 2), (3,))
    with pytest.raises(ValueError, match="input_shape"):
        interop.from_torch(nn.Sequential(nn.Linear(3, 2)), (0, 3))
    with pytest.raises(ValueError, match="Module 0"):
        interop.from_torch(nn.Sequential(nn.Linear(3, 2)), (4,))       # 3 in_features vs 4
    with pytest.raises(ValueError, match="float16"):
        interop.from_torch(nn.Sequential(nn.Linear(3, 2)).half(), (3,))


def test_import_error_names_the_package(monkeypatch):
    model, _ = _make("dense", "float32")
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(ImportError, match=r"`pip install torch`") as info:
        interop.to_torch(model)
    assert "minnet[" not in str(info.value)
    assert "0.weight" in interop.state_dict(model)          # needs no torch


# --------------------------------------------------------------------------- state_dict files
def test_state_dict_npz_round_trip(tmp_path):
    model, shape = _make("conv", "float32", seed=0)
    path = interop.save_torch_state_dict(model, tmp_path / "weights")
    assert path.endswith(".npz")
    with np.load(path, allow_pickle=False) as data:
        assert sorted(data.files) == sorted(interop.state_dict(model))
    other, _ = _make("conv", "float32", seed=5)
    x = _batch(shape, "float32")
    assert not np.allclose(_predict(other, x), _predict(model, x))
    interop.load_torch_state_dict(other, path)
    np.testing.assert_array_equal(_predict(other, x), _predict(model, x))


def test_state_dict_errors(tmp_path):
    model, _ = _make("batchnorm1d", "float32")
    good = interop.state_dict(model)
    missing = {k: v for k, v in good.items() if k != "1.running_var"}
    with pytest.raises(ValueError, match="missing keys.*1.running_var"):
        interop.load_torch_state_dict(model, missing)
    with pytest.raises(ValueError, match="unexpected keys.*9.weight"):
        interop.load_torch_state_dict(model, {**good, "9.weight": np.zeros(2)})
    with pytest.raises(ValueError, match=r"'0.weight'.*shape"):
        interop.load_torch_state_dict(model, {**good, "0.weight": np.zeros((2, 2))})
    with pytest.raises(TypeError, match="path"):
        interop.load_torch_state_dict(model, 42)
    before = model.get_weights()
    with pytest.raises(ValueError):
        interop.load_torch_state_dict(model, {**good, "3.bias": np.zeros(7)})
    for a, b in zip(before, model.get_weights()):              # nothing half-loaded
        np.testing.assert_array_equal(a, b)


def test_state_dict_loads_into_torch(torch, tmp_path):
    model, shape = _make("conv", "float64")
    model.train()
    model(_batch(shape, "float64"))                            # non-trivial running stats
    model.eval()
    path = interop.save_torch_state_dict(model, tmp_path / "w.npz")
    # A torch user: build the same architecture by hand and load the arrays (strict).
    nn = torch.nn
    module = nn.Sequential(nn.Conv2d(3, 4, (3, 2), padding="same"), nn.ELU(), nn.BatchNorm2d(4, eps=1e-3),
                           nn.MaxPool2d(2), nn.Conv2d(4, 5, 3, stride=2, padding=1),
                           nn.AvgPool2d(2, stride=1), nn.Flatten(), nn.Linear(5, 3)).double().eval()
    arrays = np.load(path)
    module.load_state_dict({k: torch.from_numpy(v) for k, v in arrays.items()})
    x = _batch(shape, "float64")
    np.testing.assert_allclose(_run_torch(torch, module, x), _predict(model, x), **TOL["float64"])
    # ... and the reverse: a torch state_dict (mapping of torch tensors) loads into minnet.
    with torch.no_grad():
        module[7].bias.add_(1.0)
    interop.load_torch_state_dict(model, module.state_dict())
    np.testing.assert_allclose(_run_torch(torch, module, x), _predict(model, x), **TOL["float64"])


def test_batchnorm_without_scale(torch):
    mn.manual_seed(0)
    model = mn.Sequential([layers.Input((4,), dtype="float64"), layers.Dense(3, dtype="float64"),
                           layers.BatchNormalization(scale=False, dtype="float64")])
    model.layers[1].beta.data[:] = [0.5, -1.0, 2.0]
    module = interop.to_torch(model)
    assert module[1].affine and not module[1].weight.requires_grad
    np.testing.assert_array_equal(module[1].weight.detach().numpy(), 1.0)
    x = _batch((4,), "float64")
    np.testing.assert_allclose(_run_torch(torch, module, x), _predict(model, x), **TOL["float64"])
    report = interop.compare(model, module, x, y=np.zeros((4, 3)), loss="mse")
    assert report.ok, str(report)
    assert "grad/1.weight" not in [row.name for row in report.rows]      # no minnet twin
    bad = {**interop.state_dict(model), "1.weight": np.full(3, 2.0)}
    with pytest.raises(ValueError, match="all ones"):
        interop.load_torch_state_dict(model, bad)


# --------------------------------------------------------------------------- channels_last
def _nhwc_zoo(dtype):
    """An NHWC model on the native channels_last kernels (every spatial layer but Conv2D)."""
    d = dict(dtype=dtype)
    return [layers.Input((6, 8, 3), **d),
            layers.BatchNormalization(momentum=0.9, **d),           # Keras meaning: torch 0.1
            layers.MaxPooling2D(2, **d),
            layers.SpatialDropout2D(0.0, **d),
            layers.AveragePooling2D((2, 1), strides=1, padding=(1, 0), **d),
            layers.Flatten(**d),                                    # (H, W, C) order
            layers.Dropout(0.0, **d), layers.ReLU(**d),
            layers.Dense(5, **d),                                   # columns permuted for torch
            layers.BatchNormalization(**d), layers.Dense(2, **d)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("mode", ["eval", "train"])
def test_channels_last_round_trip_and_compare(torch, dtype, mode):
    assert mn.config.image_data_format() == "channels_last"
    mn.manual_seed(0)
    model = mn.Sequential(_nhwc_zoo(dtype))
    model.train()
    model(_batch((6, 8, 3), dtype, n=8, seed=3))                   # non-trivial running stats
    getattr(model, mode)()
    module = interop.to_torch(model)
    assert module[0].momentum == pytest.approx(0.1) and module[0].eps == 1e-3
    back = interop.from_torch(module, (3, 6, 8))                   # torch's (C, H, W)
    assert back._build_input_shape == (None, 6, 8, 3)
    assert back.layers[0].momentum == 0.9 and back.layers[0].axis == -1
    for a, b in zip(model.get_weights(), back.get_weights()):
        np.testing.assert_array_equal(a, b)
    x = _batch((6, 8, 3), dtype, n=4)                              # NHWC
    back.eval()
    model.eval()
    np.testing.assert_array_equal(_predict(back, x), _predict(model, x))
    xt = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
    np.testing.assert_allclose(_predict(model, x), _run_torch(torch, module.eval(), xt), **TOL[dtype])
    getattr(model, mode)()
    getattr(module, mode)()
    report = interop.compare(model, module, x, loss="sum")       # (train: updates both BNs)
    assert report.ok, str(report)


def test_channels_last_flatten_dense_columns_are_permuted(torch):
    mn.manual_seed(1)
    model = mn.Sequential([layers.Input((2, 3, 4), dtype="float64"), layers.Flatten(dtype="float64"),
                           layers.Dense(3, dtype="float64")])
    kernel = model.layers[-1].kernel.data                           # (3, H*W*C) in HWC order
    sd = interop.state_dict(model)
    expected = kernel.reshape(3, 2, 3, 4).transpose(0, 3, 1, 2).reshape(3, 24)   # CHW order
    np.testing.assert_array_equal(sd["1.weight"], expected)
    module = interop.to_torch(model)
    np.testing.assert_array_equal(module[1].weight.detach().numpy(), expected)
    other = mn.Sequential([layers.Input((2, 3, 4), dtype="float64"), layers.Flatten(dtype="float64"),
                           layers.Dense(3, dtype="float64")])
    interop.load_torch_state_dict(other, sd)
    np.testing.assert_array_equal(other.layers[-1].kernel.data, kernel)
    assert model.layers[0].data_format == "channels_last"
    assert model.layers[0].get_config()["data_format"] == "channels_last"
    report = interop.compare(model, module, _batch((2, 3, 4), "float64"))
    assert report.ok, str(report)
    # channels_first Flatten: CHW order already, nothing permuted
    first = mn.Sequential([layers.Input((2, 3, 4), dtype="float64"),
                           layers.Flatten(data_format="channels_first", dtype="float64"),
                           layers.Dense(3, dtype="float64")])
    np.testing.assert_array_equal(interop.state_dict(first)["1.weight"],
                                  first.layers[-1].kernel.data)


def test_channels_last_from_torch_handwritten_module(torch):
    nn = torch.nn
    torch.manual_seed(0)
    module = nn.Sequential(nn.BatchNorm2d(2, momentum=0.3, eps=1e-4), nn.MaxPool2d(2),
                           nn.Dropout2d(0.1), nn.AdaptiveMaxPool2d(1), nn.Flatten(),
                           nn.Linear(2, 3)).double().eval()
    with torch.no_grad():
        module(torch.randn(4, 2, 6, 6, dtype=torch.float64))
    model = interop.from_torch(module, (2, 6, 6), data_format="channels_last")
    assert model.layers[0].momentum == pytest.approx(0.7) and model.layers[0].axis == -1
    assert type(model.layers[3]) is layers.GlobalMaxPooling2D
    x = _batch((2, 6, 6), "float64", n=3)
    np.testing.assert_allclose(_predict(model, np.ascontiguousarray(x.transpose(0, 2, 3, 1))),
                               _run_torch(torch, module, x), **TOL["float64"])
    nchw = interop.from_torch(module, (2, 6, 6), data_format="channels_first")
    np.testing.assert_allclose(_predict(nchw, x), _run_torch(torch, module, x), **TOL["float64"])


def test_channels_last_untranslatable_orders_are_named(torch):
    model = mn.Sequential([layers.Input((2, 3, 4)), layers.Flatten(),
                           layers.BatchNormalization(), layers.Dense(2)])
    with pytest.raises(ValueError, match="follows the channels_last Flatten"):
        interop.to_torch(model)
    model = mn.Sequential([layers.Input((2, 3, 4)), layers.MaxPooling2D(1),
                           layers.Reshape((6, 4))])
    with pytest.raises(ValueError, match="Reshape.*channels_last"):
        interop.to_torch(model)


@pytest.mark.skipif("data_format" not in __import__("inspect").signature(
    layers.Conv2D.__init__).parameters, reason="this build's Conv2D is NCHW only")
def test_channels_last_conv_model(torch):
    mn.manual_seed(2)
    model = mn.Sequential([layers.Input((9, 8, 3), dtype="float64"),
                           layers.Conv2D(4, 3, padding="same", dtype="float64"),
                           layers.BatchNormalization(dtype="float64"),
                           layers.MaxPooling2D(2, dtype="float64"), layers.Flatten(dtype="float64"),
                           layers.Dense(3, dtype="float64")])
    module = interop.to_torch(model)
    report = interop.compare(model, module, _batch((9, 8, 3), "float64"))
    assert report.ok, str(report)
    back = interop.from_torch(module, (3, 9, 8))
    for a, b in zip(model.get_weights(), back.get_weights()):
        np.testing.assert_array_equal(a, b)
