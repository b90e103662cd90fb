"""minnet.random: distribution moments, reproducibility, SeedGenerator state, the tie to
mn.manual_seed / mn.utils.set_random_seed, thread-count independence, argument errors."""
import numpy as np
import pytest

import minnet as mn
from minnet import random

pytestmark = pytest.mark.filterwarnings("ignore:__array__ implementation:DeprecationWarning")  # inside Keras/torch


N = 20000


def _np(t):
    return np.asarray(t.numpy())


@pytest.mark.parametrize("fn, kwargs, mean, var", [
    (random.normal, {"mean": 1.0, "stddev": 2.0}, 1.0, 4.0),
    (random.uniform, {"minval": -1.0, "maxval": 3.0}, 1.0, 16 / 12),
    (random.truncated_normal, {"mean": 0.0, "stddev": 1.0}, 0.0, 0.7737),     # N(0,1) cut at +-2
    (random.gamma, {"alpha": 3.0}, 3.0, 3.0),
    (random.beta, {"alpha": 2.0, "beta": 5.0}, 2 / 7, 10 / (49 * 8)),
    (random.binomial, {"counts": 10, "probabilities": 0.3}, 3.0, 2.1),
])
def test_moments(fn, kwargs, mean, var):
    x = _np(fn((N,), seed=1, **kwargs))
    assert abs(x.mean() - mean) < 5 * np.sqrt(var / N)
    assert abs(x.var() - var) < 0.05 * var + 1e-3
    assert x.dtype == np.float32


def test_ranges():
    assert _np(random.truncated_normal((N,), seed=0, stddev=0.5)).max() <= 1.0
    u = _np(random.uniform((N,), minval=2, maxval=3, seed=0))
    assert u.min() >= 2 and u.max() < 3
    r = _np(random.randint((N,), 3, 7, seed=0))
    assert r.dtype == np.int32 and set(np.unique(r)) == {3, 4, 5, 6}


def test_categorical_frequencies():
    logits = np.log(np.array([[0.2, 0.5, 0.3], [0.9, 0.05, 0.05]]))
    draws = _np(random.categorical(logits, 5000, seed=3))
    assert draws.shape == (2, 5000) and draws.dtype == np.int32
    np.testing.assert_allclose(np.bincount(draws[0], minlength=3) / 5000, [0.2, 0.5, 0.3], atol=0.03)
    np.testing.assert_allclose(np.bincount(draws[1], minlength=3) / 5000, [0.9, 0.05, 0.05], atol=0.02)


def test_int_seed_repeats_and_different_seeds_differ():
    a, b = random.normal((5,), seed=7), random.normal((5,), seed=7)
    np.testing.assert_array_equal(_np(a), _np(b))
    assert not np.array_equal(_np(a), _np(random.normal((5,), seed=8)))


def test_seed_generator_advances_and_is_reproducible():
    g = random.SeedGenerator(42)
    first, second = _np(random.normal((4,), seed=g)), _np(random.normal((4,), seed=g))
    assert not np.array_equal(first, second)
    np.testing.assert_array_equal(_np(g.state), [42, 2])
    h = random.SeedGenerator(42)
    np.testing.assert_array_equal(_np(random.normal((4,), seed=h)), first)
    clone = random.SeedGenerator.from_config(g.get_config())
    np.testing.assert_array_equal(_np(random.normal((4,), seed=clone)), first)
    assert g.get_config()["seed"] == 42


def test_seed_generator_state_round_trip():
    g = random.SeedGenerator(5)
    random.uniform((2,), seed=g)
    saved = g.state
    expected = _np(random.uniform((3,), seed=g))
    g.set_state(saved)
    np.testing.assert_array_equal(_np(random.uniform((3,), seed=g)), expected)


@pytest.mark.parametrize("reseed", [mn.manual_seed, mn.utils.set_random_seed])
def test_unseeded_draws_follow_the_global_seed(reseed):
    reseed(123)
    a1, a2 = _np(random.normal((3,))), _np(random.normal((3,)))
    g1 = _np(random.uniform((2,), seed=random.SeedGenerator()))
    reseed(123)
    b1, b2 = _np(random.normal((3,))), _np(random.normal((3,)))
    g2 = _np(random.uniform((2,), seed=random.SeedGenerator()))
    np.testing.assert_array_equal(a1, b1)
    np.testing.assert_array_equal(a2, b2)
    np.testing.assert_array_equal(g1, g2)
    assert not np.array_equal(a1, a2)


def test_independent_of_the_thread_count():
    values = []
    for n in (1, 2):
        mn.set_num_threads(n)
        values.append(_np(random.normal((1000,), seed=9)))
        values.append(_np(random.dropout(np.ones(1000, np.float32), 0.5, seed=9)))
    mn.set_num_threads(1)
    np.testing.assert_array_equal(values[0], values[2])
    np.testing.assert_array_equal(values[1], values[3])


def test_dropout_scales_and_is_differentiable():
    x = mn.tensor(np.ones((200, 50)), requires_grad=True)
    y = random.dropout(x, 0.25, seed=0)
    kept = y.numpy() != 0
    np.testing.assert_allclose(y.numpy()[kept], 1 / 0.75)
    assert abs(kept.mean() - 0.75) < 0.02
    y.sum().backward()
    np.testing.assert_allclose(x.grad, kept / 0.75)
    shared = random.dropout(np.ones((4, 6), np.float32), 0.5, noise_shape=(1, 6), seed=1).numpy()
    assert (shared == shared[0]).all()


def test_shuffle_is_a_permutation_along_axis():
    x = np.arange(12).reshape(4, 3)
    y = _np(random.shuffle(x, axis=0, seed=2))
    assert sorted(map(tuple, y)) == sorted(map(tuple, x))
    z = _np(random.shuffle(x, axis=1, seed=2))
    np.testing.assert_array_equal(np.sort(z, axis=1), x)


@pytest.mark.parametrize("call, argument", [
    (lambda: random.normal((2,), seed=-1), "seed"),
    (lambda: random.normal((2,), seed="x"), "seed"),
    (lambda: random.uniform((-2,)), "shape"),
    (lambda: random.dropout(np.ones(3), 1.0), "rate"),
    (lambda: random.randint((2,), 5, 5), "minval"),
    (lambda: random.randint((2,), 0, 5, dtype="float32"), "dtype"),
    (lambda: random.normal((2,), dtype="int32"), "dtype"),
    (lambda: random.binomial((2,), 3, 1.5), "probabilities"),
    (lambda: random.categorical(np.ones(3), 2), "logits"),
])
def test_argument_errors_name_the_argument(call, argument):
    with pytest.raises((ValueError, TypeError), match=f"`{argument}`"):
        call()


def test_keras_meanings(keras):
    # same argument names/defaults and result dtypes as keras.random (values differ: other generator)
    for name in ("normal", "uniform", "truncated_normal"):
        assert getattr(random, name)((2, 3), seed=1).dtype == np.float32
        assert str(keras.ops.convert_to_numpy(getattr(keras.random, name)((2, 3), seed=1)).dtype) == "float32"
    assert random.randint((2,), 0, 3, seed=1).dtype == np.int32
