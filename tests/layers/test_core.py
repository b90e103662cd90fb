"""Input, Dense, Flatten, Reshape, Lambda, Activation: NumPy reference, gradcheck, PyTorch."""
import json
import math

import numpy as np
import pytest

import minnet as mn
from minnet import layers
from minnet import functional as F

from _harness import TOLERANCES

TOL = TOLERANCES["short_sum"]


def _round_trip(layer):
    """serialize -> JSON -> deserialize; returns the new layer."""
    data = json.loads(json.dumps(layers.serialize(layer)))
    return layers.deserialize(data)


# ------------------------------------------------------------------------ Dense
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape, units", [((1, 3), 1), ((5, 7), 4), ((2, 3, 6), 5)])
def test_dense_matches_numpy(rng, dtype, shape, units):
    x = rng.standard_normal(shape).astype(dtype)
    layer = layers.Dense(units, dtype=np.dtype(dtype).name)
    y = layer(x).numpy()
    kernel, bias = layer.get_weights()
    assert kernel.shape == (units, shape[-1]) and bias.shape == (units,)
    assert y.dtype == dtype and y.shape == shape[:-1] + (units,)
    np.testing.assert_allclose(y, x @ kernel.T + bias, **TOL[dtype])
    assert layer.compute_output_shape((None,) + shape[1:]) == (None,) + shape[1:-1] + (units,)


@pytest.mark.parametrize("activation, fn", [
    ("relu", lambda z: np.maximum(z, 0)),
    ("sigmoid", lambda z: 1 / (1 + np.exp(-z))),
    ("tanh", np.tanh),
    ("softmax", lambda z: np.exp(z) / np.exp(z).sum(-1, keepdims=True)),
])
def test_dense_activation(rng, activation, fn):
    x = rng.standard_normal((4, 3))
    layer = layers.Dense(5, activation=activation, dtype="float64")
    layer.build(x.shape)
    kernel, bias = layer.get_weights()
    np.testing.assert_allclose(layer(x).numpy(), fn(x @ kernel.T + bias), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("use_bias", [True, False])
@pytest.mark.parametrize("shape", [(1, 3), (4, 5), (2, 3, 4)])
def test_dense_gradcheck(rng, use_bias, shape):
    layer = layers.Dense(3, activation="tanh", use_bias=use_bias, dtype="float64")
    x = mn.tensor(rng.standard_normal(shape), requires_grad=True)
    assert mn.gradcheck(layer, x)
    assert len(layer.parameters()) == (2 if use_bias else 1)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_dense_matches_torch(torch, rng, dtype):
    x = rng.standard_normal((6, 7)).astype(dtype)
    layer = layers.Dense(4, dtype=dtype)
    layer.build((None, 7))
    ref = torch.nn.Linear(7, 4).to(getattr(torch, dtype))
    with torch.no_grad():
        ref.weight.copy_(torch.from_numpy(layer.kernel.data))
        ref.bias.copy_(torch.from_numpy(layer.bias.data))
    xt = torch.from_numpy(x).requires_grad_(True)
    yt = ref(xt)
    g = rng.standard_normal(yt.shape).astype(dtype)
    xm = mn.tensor(x, requires_grad=True)
    y = layer(xm)
    (y * mn.tensor(g)).sum().backward()
    (yt * torch.from_numpy(g)).sum().backward()
    tol = TOL[np.dtype(dtype).type]
    np.testing.assert_allclose(y.numpy(), yt.detach().numpy(), **tol)
    np.testing.assert_allclose(xm.grad, xt.grad.numpy(), **tol)
    np.testing.assert_allclose(layer.kernel.grad, ref.weight.grad.numpy(), **tol)
    np.testing.assert_allclose(layer.bias.grad, ref.bias.grad.numpy(), **tol)


def test_dense_default_init_is_keras_glorot_uniform_and_zero_bias():
    mn.manual_seed(0)
    layer = layers.Dense(200, dtype="float64")
    layer(np.zeros((1, 50)))
    kernel, bias = layer.get_weights()
    limit = math.sqrt(6 / (50 + 200))
    assert np.abs(kernel).max() <= limit and np.abs(kernel).max() > 0.9 * limit
    np.testing.assert_allclose(kernel.std(), limit / math.sqrt(3), rtol=0.1)
    np.testing.assert_array_equal(bias, 0)


def test_dense_pytorch_init_on_request():
    mn.manual_seed(0)
    layer = layers.Dense(200, kernel_initializer=mn.initializers.KaimingUniform(),
                         bias_initializer=mn.initializers.FanInUniform(50), dtype="float64")
    layer(np.zeros((1, 50)))
    bound = 1 / math.sqrt(50)
    for w in layer.get_weights():
        assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
        np.testing.assert_allclose(w.std(), bound / math.sqrt(3), rtol=0.1)


def test_dense_initializers_by_name_and_callable():
    layer = layers.Dense(3, kernel_initializer="zeros", bias_initializer="ones")
    layer(np.ones((1, 2)))
    np.testing.assert_array_equal(layer.kernel.data, 0)
    np.testing.assert_array_equal(layer.bias.data, 1)
    layer = layers.Dense(3, kernel_initializer=lambda shape, dtype: np.full(shape, 0.5, dtype))
    layer(np.ones((1, 2)))
    np.testing.assert_array_equal(layer.kernel.data, 0.5)
    assert layer.kernel.dtype == np.float32
    layer = layers.Dense(64, kernel_initializer="glorot_uniform", dtype="float64")
    layer(np.ones((1, 32)))
    assert np.abs(layer.kernel.data).max() <= math.sqrt(6 / 96)


def test_dense_config_round_trip_and_weights():
    layer = layers.Dense(3, activation="relu", use_bias=False, kernel_initializer="he_normal",
                         dtype="float64", name="head")
    layer(np.ones((2, 4)))
    again = _round_trip(layer)
    assert again.get_config() == layer.get_config()
    assert again.name == "head" and again.activation is layer.activation
    again(np.ones((1, 4)))
    again.set_weights(layer.get_weights())
    np.testing.assert_array_equal(again(np.ones((2, 4))).numpy(), layer(np.ones((2, 4))).numpy())


def test_dense_rejects_bad_arguments_and_inputs():
    for bad in (0, -3, 2.5, "8", True):
        with pytest.raises(ValueError, match="`units`"):
            layers.Dense(bad)
    with pytest.raises(ValueError, match="`activation`"):
        layers.Dense(3, activation="relux")
    with pytest.raises(ValueError, match="`initializer`"):
        layers.Dense(3, kernel_initializer="nope")
    layer = layers.Dense(3, name="fc")
    layer(np.ones((2, 4)))
    with pytest.raises(ValueError, match="'fc'.*expected axis -1 of input shape to have value 4.*\\(2, 5\\)"):
        layer(np.ones((2, 5)))
    with pytest.raises(ValueError, match="'fc'"):
        layer(np.ones(4))


def test_dense_flops_and_repr():
    layer = layers.Dense(10, activation="relu")
    assert layer.count_flops((32, 64)) == 2 * 32 * 64 * 10 + 32 * 10
    assert layers.Dense(10, use_bias=False).count_flops((None, 64)) == 2 * 64 * 10
    layer(np.ones((1, 64)))
    text = repr(layer)
    assert "Dense(10" in text and "in_features=64" in text and "relu" in text


def test_dense_float64_end_to_end_gradients_are_float64():
    layer = layers.Dense(2, dtype="float64")
    out = layer(np.ones((3, 4), np.float32)).sum()
    out.backward()
    assert layer.kernel.grad.dtype == np.float64


# ------------------------------------------------------------------------ Flatten / Reshape
@pytest.mark.parametrize("shape", [(1, 3, 4, 5), (2, 7), (3, 2, 1, 1, 2), (4,)])
def test_flatten(rng, shape):
    x = rng.standard_normal(shape)
    layer = layers.Flatten(dtype="float64")
    y = layer(x)
    expected = x.reshape(shape[0], -1)
    np.testing.assert_array_equal(y.numpy(), expected)
    assert layer.compute_output_shape((None,) + shape[1:]) == (None, expected.shape[1])
    xt = mn.tensor(x, requires_grad=True)
    assert mn.gradcheck(layer, xt)


def test_flatten_matches_torch_grad(torch, rng):
    x = rng.standard_normal((2, 3, 4, 5))
    xm = mn.tensor(x, requires_grad=True)
    g = rng.standard_normal((2, 60))
    (layers.Flatten(dtype="float64")(xm) * mn.tensor(g)).sum().backward()
    xt = torch.from_numpy(x).requires_grad_(True)
    (torch.nn.Flatten()(xt) * torch.from_numpy(g)).sum().backward()
    np.testing.assert_array_equal(xm.grad, xt.grad.numpy())


@pytest.mark.parametrize("target", [(3, 4), (-1, 2), (2, -1, 3), (12,)])
def test_reshape(rng, target):
    x = rng.standard_normal((2, 12))
    layer = layers.Reshape(target, dtype="float64")
    y = layer(x)
    np.testing.assert_array_equal(y.numpy(), x.reshape((2,) + target))
    assert layer.compute_output_shape((None, 12)) == (None,) + y.shape[1:]
    assert mn.gradcheck(layer, mn.tensor(x, requires_grad=True))
    assert _round_trip(layer).target_shape == tuple(target)


def test_reshape_rejects_bad_target_and_mismatched_input():
    for bad in [(0, 3), (-1, -1), "3", (2.5,), (-2, 3)]:
        with pytest.raises(ValueError, match="`target_shape`"):
            layers.Reshape(bad)
    layer = layers.Reshape((5, -1), name="rs")
    with pytest.raises(ValueError, match="'rs' cannot reshape samples of shape \\(12,\\)"):
        layer(np.ones((2, 12)))
    with pytest.raises(ValueError, match="'rs'"):
        layers.Reshape((5, 2), name="rs")(np.ones((2, 12)))


# ------------------------------------------------------------------------ Input
def test_input_fixes_and_checks_the_shape():
    # layers.Input returns a symbolic tensor (Keras); InputLayer is the layer behind it.
    assert layers.Input((3, 4)).shape == (None, 3, 4)
    inp = layers.InputLayer((3, 4))
    assert inp.shape == (3, 4) and inp.batch_shape == (None, 3, 4)
    x = mn.tensor(np.ones((2, 3, 4), np.float32))
    assert inp(x) is x
    assert inp.compute_output_shape((None, 3, 4)) == (None, 3, 4)
    with pytest.raises(ValueError, match=f"'{inp.name}'.*expected shape \\(None, 3, 4\\)"):
        inp(np.ones((2, 4, 3)))
    assert layers.Input(5).shape == (None, 5)
    assert layers.InputLayer((None, 4))(np.ones((1, 7, 4))).shape == (1, 7, 4)
    with pytest.raises(ValueError, match="`shape`"):
        layers.Input((0, 3))
    assert _round_trip(inp).shape == (3, 4)


# ------------------------------------------------------------------------ Activation / Lambda
def test_activation_layer(rng):
    x = rng.standard_normal((3, 4))
    layer = layers.Activation("tanh", dtype="float64")
    np.testing.assert_allclose(layer(x).numpy(), np.tanh(x), rtol=1e-12)
    assert mn.gradcheck(layer, mn.tensor(x, requires_grad=True))
    assert _round_trip(layer).get_config()["activation"] == "tanh"
    assert "tanh" in repr(layer)
    with pytest.raises(ValueError, match="`activation`"):
        layers.Activation("foo")


def test_lambda_layer(rng):
    x = rng.standard_normal((2, 3))
    layer = layers.Lambda(lambda t: t * 2 + 1, dtype="float64")
    np.testing.assert_allclose(layer(x).numpy(), x * 2 + 1)
    assert mn.gradcheck(layer, mn.tensor(x, requires_grad=True))
    assert layer.compute_output_shape((None, 3)) == (None, 3)
    assert layers.Lambda(lambda t: t, output_shape=(5,)).compute_output_shape((None, 3)) == (None, 5)
    with pytest.raises(TypeError, match="`function`"):
        layers.Lambda(3)


def test_lambda_serialization_needs_registration():
    anonymous = layers.Lambda(lambda t: t * 3, name="anon")
    config = layers.serialize(anonymous)
    assert config["config"]["function_serializable"] is False
    with pytest.raises(ValueError, match="not registered.*register_layer"):
        layers.deserialize(json.loads(json.dumps(config)))

    @mn.register_layer
    def triple_for_test(t):
        return t * 3

    named = layers.Lambda(triple_for_test, output_shape=(4,))
    config = json.loads(json.dumps(layers.serialize(named)))
    assert config["config"]["function_serializable"] is True
    again = layers.deserialize(config)
    assert again.function is triple_for_test and again.output_shape == (4,)
    np.testing.assert_allclose(again(np.ones((1, 2))).numpy(), 3.0)

    def local_fn(t):
        return t

    again = layers.deserialize(json.loads(json.dumps(layers.serialize(layers.Lambda(local_fn)))),
                               custom_objects={"local_fn": local_fn})
    assert again.function is local_fn


def test_lambda_registered_under_another_name_and_builtin_activation():
    @mn.register_layer("tests>halve")
    def halve(t):
        return t * 0.5

    again = layers.deserialize(json.loads(json.dumps(layers.serialize(layers.Lambda(halve)))))
    assert again.function is halve
    relu_layer = layers.Lambda(mn.activations.relu)
    assert relu_layer.get_config()["function_serializable"] is True
    again = layers.deserialize(json.loads(json.dumps(layers.serialize(relu_layer))))
    np.testing.assert_array_equal(again(np.array([[-1.0, 2.0]])).numpy(), [[0.0, 2.0]])


# ------------------------------------------------------------------ Dense without a graph
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("activation", ["relu", None, "sigmoid", "softmax", lambda t: t * 2.0])
@pytest.mark.parametrize("shape", [(64, 784), (5, 3, 600), (7, 12)])
def test_dense_without_graph_is_bit_identical_to_the_recorded_forward(rng, dtype, activation, shape):
    # Under no_grad Dense takes F.linear_no_graph (one kernel call, ReLU fused); the
    # numbers must be exactly those of relu(linear(x)) through the autograd Functions.
    layer = layers.Dense(256 if shape[-1] > 100 else 5, activation=activation, dtype=dtype)
    x = rng.standard_normal(shape).astype(dtype)
    x[0, ...] = -np.abs(x[0, ...])                      # some rows all negative: ReLU zeros
    recorded = layer(x)
    assert recorded.grad_fn is not None
    with mn.no_grad():
        fast = layer(x)
    assert fast.grad_fn is None and not fast.requires_grad
    assert fast.dtype == recorded.dtype and fast.shape == recorded.shape
    np.testing.assert_array_equal(fast.numpy(), recorded.numpy())


def test_dense_without_graph_fuses_the_relu(rng, monkeypatch):
    from minnet.functional import _activations
    layer = layers.Dense(256, activation="relu")
    x = rng.standard_normal((64, 784)).astype(np.float32)
    expected = layer(x).numpy()

    def no_separate_relu(*args, **kwargs):
        raise AssertionError("the ReLU should be fused into the linear kernel")

    monkeypatch.setattr(_activations._kernels, "leaky_relu_forward", no_separate_relu)
    with mn.no_grad():
        np.testing.assert_array_equal(layer(x).numpy(), expected)
    recorded = layer(x)                                 # a recorded forward fuses it too
    assert recorded.grad_fn.name() == "LinearReluBackward"
    np.testing.assert_array_equal(recorded.numpy(), expected)
    with mn.autograd.detect_anomaly(), pytest.raises(AssertionError, match="fused"):
        layer(x)                  # anomaly mode checks the linear output alone: two Functions


# ------------------------------------------------------------------ Dense's recorded ReLU
def _dense_relu_grads(layer, x, fused):
    """Output and gradients (x, kernel, bias) of Dense(activation="relu"): through the
    layer (fused: one LinearRelu node) or as relu(F.linear(x)) (two nodes)."""
    xt = mn.tensor(x, requires_grad=True)
    for w in (layer.kernel, layer.bias):
        w.grad = None
    y = layer(xt) if fused else F.relu(F.linear(xt, layer.kernel, layer.bias))
    assert y.grad_fn.name() == ("LinearReluBackward" if fused else "ReluBackward")
    g = np.random.default_rng(1).standard_normal(y.shape).astype(x.dtype)
    y.backward(mn.tensor(g))
    return [y.numpy(), np.asarray(xt.grad), np.asarray(layer.kernel.grad), np.asarray(layer.bias.grad)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(64, 784), (5, 3, 600), (7, 12)])
@pytest.mark.parametrize("threads", [1, 2])
def test_dense_relu_recorded_as_one_node_gives_the_bits_of_two(rng, dtype, shape, threads):
    layer = layers.Dense(256 if shape[-1] > 100 else 5, activation="relu", dtype=dtype)
    x = rng.standard_normal(shape).astype(dtype)
    x[0, ...] = -np.abs(x[0, ...])                      # rows all negative: ReLU zeros
    layer.build(x.shape)
    previous = mn.get_num_threads()
    try:
        mn.set_num_threads(threads)
        fused, plain = _dense_relu_grads(layer, x, True), _dense_relu_grads(layer, x, False)
    finally:
        mn.set_num_threads(previous)
    for a, b in zip(fused, plain):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)


def test_dense_relu_fused_node_keeps_nan_and_checks_in_place_changes():
    layer = layers.Dense(2, activation="relu", kernel_initializer="ones", dtype="float64")
    x = np.array([[np.nan, 1.0], [-1.0, -2.0], [1.0, 2.0]])
    layer.build(x.shape)
    fused, plain = _dense_relu_grads(layer, x, True), _dense_relu_grads(layer, x, False)
    assert np.isnan(fused[0][0]).all() and (fused[0][1] == 0).all()  # NaN passes the forward
    for a, b in zip(fused, plain):                     # and the NaN row's gradient is the same
        np.testing.assert_array_equal(a, b)
    y = layer(mn.tensor(x, requires_grad=True))
    with mn.no_grad():
        y.add_(1.0)              # the node saved its output: backward must refuse the change
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        y.sum().backward()


def test_dense_relu_fused_node_double_backward_and_gradcheck():
    layer = layers.Dense(3, activation="relu", dtype="float64")
    x = mn.tensor(np.random.default_rng(0).standard_normal((4, 5)), requires_grad=True)
    layer.build(x.shape)
    assert mn.autograd.gradcheck(lambda t: layer(t), (x,))
    # d/dx of sum((dL/dx)^2) through the fused node equals the two-node graph's
    (g,) = mn.autograd.grad(layer(x).square().sum(), x, create_graph=True)
    (gg,) = mn.autograd.grad(g.square().sum(), x)
    (g2,) = mn.autograd.grad(F.relu(F.linear(x, layer.kernel, layer.bias)).square().sum(), x,
                             create_graph=True)
    (gg2,) = mn.autograd.grad(g2.square().sum(), x)
    np.testing.assert_allclose(gg.numpy(), gg2.numpy(), rtol=1e-12, atol=1e-12)


def test_dense_without_graph_keeps_anomaly_detection(rng):
    # detect_anomaly checks every Function's output, so Dense keeps the Function path there
    layer = layers.Dense(3, activation="relu")
    x = np.full((2, 4), np.inf, np.float32)
    with mn.no_grad(), mn.autograd.detect_anomaly():
        with pytest.raises(mn.autograd.AnomalyError):
            layer(x)
    with mn.no_grad():
        assert np.isnan(layer(x).numpy()).any()         # without it: inf - inf = NaN, no error


def test_predict_matches_the_recorded_forward_with_fused_relu(rng):
    mn.manual_seed(0)
    model = mn.Sequential([layers.Input((20,)), layers.Dense(32, activation="relu"),
                           layers.Dense(16, activation="relu"), layers.Dense(3)])
    x = rng.standard_normal((50, 20)).astype(np.float32)
    np.testing.assert_array_equal(model.predict(x, batch_size=50), model(x).numpy())


def test_dense_kernel_in_keras_layout_gets_the_conversion_in_the_error():
    dense = layers.Dense(3)
    dense.build((None, 5))
    with pytest.raises(ValueError, match=r"\(units, in_features\).*kernel\.T"):
        dense.set_weights([np.zeros((5, 3), "float32"), np.zeros(3, "float32")])
    dense.set_weights([np.ones((3, 5), "float32"), np.zeros(3, "float32")])
    assert dense.kernel.numpy().sum() == 15


def test_lambda_takes_keras_arguments_and_passes_training_and_mask():
    """Keras's ``Lambda(function, arguments={...})``: the dict's items go to every call, and
    ``training=``/``mask=`` reach a function whose signature names them (Keras's rule)."""
    seen = {}

    def fn(x, scale=1.0, training=None, mask=None):
        seen["training"], seen["mask"] = training, mask
        return x * scale

    layer = layers.Lambda(fn, arguments={"scale": 3.0})
    np.testing.assert_array_equal(layer(np.ones((1, 2), np.float32), training=True).numpy(), [[3.0, 3.0]])
    assert seen["training"] is True and seen["mask"] is None
    assert layer.get_config()["arguments"] == {"scale": 3.0}
    plain = layers.Lambda(lambda x: x + 1)                  # neither named: neither passed
    np.testing.assert_array_equal(plain(np.zeros((1, 2), np.float32), training=True).numpy(), [[1.0, 1.0]])
    with pytest.raises(TypeError, match="`arguments`"):
        layers.Lambda(fn, arguments=[1])
