"""Initialisers (fans, bounds, statistics, seeding, lookup) and the activation lookup."""
import math

import numpy as np
import pytest

import minnet as mn
from minnet import activations, initializers


@pytest.mark.parametrize("shape, fans", [
    ((7,), (7, 7)),
    ((5, 3), (3, 5)),                  # Dense (units, in): fan_in = in
    ((8, 3, 5, 2), (30, 80)),          # Conv2D (F, C, kh, kw): C*kh*kw, F*kh*kw
])
def test_compute_fans_follow_the_pytorch_layout(shape, fans):
    assert initializers.compute_fans(shape) == fans


def test_compute_fans_agree_with_torch(torch):
    for shape in [(5, 3), (8, 3, 5, 2), (1, 1, 1, 1)]:
        expected = torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(shape))
        assert initializers.compute_fans(shape) == tuple(expected)


UNIFORM_LIMITS = {
    "glorot_uniform": lambda fi, fo: math.sqrt(6 / (fi + fo)),
    "he_uniform": lambda fi, fo: math.sqrt(6 / fi),
    "lecun_uniform": lambda fi, fo: math.sqrt(3 / fi),
}
NORMAL_STDS = {
    "glorot_normal": lambda fi, fo: math.sqrt(2 / (fi + fo)),
    "he_normal": lambda fi, fo: math.sqrt(2 / fi),
    "lecun_normal": lambda fi, fo: math.sqrt(1 / fi),
}


@pytest.mark.parametrize("name", sorted(UNIFORM_LIMITS))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_uniform_initializers_fill_their_interval(name, dtype):
    shape = (64, 32, 3, 3)
    fan_in, fan_out = initializers.compute_fans(shape)
    limit = UNIFORM_LIMITS[name](fan_in, fan_out)
    w = initializers.get(name)(shape, dtype)
    assert w.shape == shape and w.dtype == np.dtype(dtype)
    assert np.abs(w).max() <= limit
    assert np.abs(w).max() > 0.99 * limit                  # the whole interval is used
    np.testing.assert_allclose(w.std(), limit / math.sqrt(3), rtol=0.02)


@pytest.mark.parametrize("name", sorted(NORMAL_STDS))
def test_truncated_normal_initializers_have_the_keras_variance(name):
    shape = (128, 64, 3, 3)
    fan_in, fan_out = initializers.compute_fans(shape)
    std = NORMAL_STDS[name](fan_in, fan_out)
    w = initializers.get(name)(shape, "float64")
    np.testing.assert_allclose(w.std(), std, rtol=0.02)
    assert np.abs(w).max() <= 2 * std / 0.87962566103423978 + 1e-12   # truncated at 2 sigma
    assert abs(w.mean()) < 0.01 * std * 10


def test_kaiming_uniform_default_matches_pytorch_bound():
    w = initializers.KaimingUniform()((16, 75), "float64")
    bound = 1 / math.sqrt(75)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.95 * bound
    b = initializers.FanInUniform(75)((16,), "float64")
    assert np.abs(b).max() <= bound


def test_kaiming_uniform_matches_torch_bound(torch):
    t = torch.empty(300, 20)
    torch.nn.init.kaiming_uniform_(t, a=math.sqrt(5))
    w = initializers.KaimingUniform()((300, 20), "float64")
    # same distribution: compare the range (max |w| is within 2% of the bound for both)
    np.testing.assert_allclose(np.abs(w).max(), t.abs().max().item(), rtol=0.02)


def test_manual_seed_makes_initialisation_reproducible():
    mn.manual_seed(3)
    a = initializers.get("he_normal")((10, 10), "float32")
    mn.manual_seed(3)
    b = initializers.get("he_normal")((10, 10), "float32")
    c = initializers.get("he_normal")((10, 10), "float32")
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(b, c)


def test_seeded_initializer_repeats_itself():
    init = initializers.GlorotUniform(seed=1)
    np.testing.assert_array_equal(init((4, 5)), init((4, 5)))


def test_constant_zeros_ones():
    assert np.all(initializers.get("zeros")((2, 3), "float64") == 0)
    assert np.all(initializers.get("ones")((2,), "float32") == 1)
    assert np.all(initializers.Constant(2.5)((3,)) == 2.5)


def test_get_accepts_instances_callables_and_configs():
    init = initializers.HeUniform(seed=4)
    assert initializers.get(init) is init
    fn = lambda shape, dtype: np.full(shape, 7, dtype)   # noqa: E731
    assert initializers.get(fn) is fn
    again = initializers.get(initializers.serialize(init))
    assert isinstance(again, initializers.HeUniform) and again.seed == 4
    np.testing.assert_array_equal(again((3, 3)), init((3, 3)))
    assert isinstance(initializers.get("GlorotNormal"), initializers.GlorotNormal)


def test_get_rejects_unknown_names_and_types():
    with pytest.raises(ValueError, match="initializer.*'glorot'"):
        initializers.get("glorot")
    with pytest.raises(TypeError, match="initializer"):
        initializers.get(3.0)
    with pytest.raises(ValueError, match="not serializable"):
        initializers.deserialize(initializers.serialize(lambda s, d: np.zeros(s, d)))
    with pytest.raises(ValueError, match="`mode`"):
        initializers.VarianceScaling(mode="fan_middle")
    with pytest.raises(ValueError, match="`seed`"):
        initializers.GlorotUniform(seed=-1)
    with pytest.raises(TypeError, match="`dtype`"):
        initializers.get("zeros")((2,), "int32")


# ---------------------------------------------------------------- activations lookup
def test_activation_lookup_round_trips_names():
    for name in ["relu", "sigmoid", "tanh", "softmax", "elu", "selu", "leaky_relu", "linear"]:
        fn = activations.get(name)
        assert activations.serialize(fn) == name
    assert activations.get(None) is activations.linear
    with pytest.raises(ValueError, match="Did you mean 'relu'"):   # Keras refuses "ReLU" too
        activations.get("ReLU")
    assert activations.serialize(None) == "linear"


def test_activation_lookup_rejects_bad_identifiers():
    with pytest.raises(ValueError, match="`activation`.*'swish_x'"):
        activations.get("swish_x")
    with pytest.raises(TypeError, match="`activation`"):
        activations.get(3)


def test_activation_functions_compute_the_right_values():
    x = np.array([[-2.0, -0.5, 0.0, 0.5, 3.0]])
    expected = {
        "relu": np.maximum(x, 0),
        "sigmoid": 1 / (1 + np.exp(-x)),
        "tanh": np.tanh(x),
        "elu": np.where(x > 0, x, np.expm1(x)),
        "leaky_relu": np.where(x > 0, x, 0.2 * x),           # keras.activations.leaky_relu: 0.2
        "softmax": np.exp(x) / np.exp(x).sum(-1, keepdims=True),
        "linear": x,
    }
    for name, want in expected.items():
        got = activations.get(name)(mn.tensor(x))
        got = got.numpy() if hasattr(got, "numpy") else np.asarray(got)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=name)


def test_initializers_by_registry_names_and_copies():
    assert isinstance(initializers.get("GlorotUniform"), initializers.GlorotUniform)
    assert isinstance(initializers.get("glorot_uniform"), initializers.GlorotUniform)
    assert isinstance(initializers.get("xavier_normal"), initializers.GlorotNormal)
    array = np.ones((2, 3))
    out = initializers.checked_call(lambda s, d: array, (2, 3), "float32", where="w")
    assert out.dtype == np.float32 and not np.shares_memory(out, array)
    with pytest.raises(ValueError, match=r"for w returned shape \(2, 3\)"):
        initializers.checked_call(lambda s, d: array, (3, 2), "float32", where="w")
