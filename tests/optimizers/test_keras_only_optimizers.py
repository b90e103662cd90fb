"""Ftrl, Lamb, Adafactor (Keras's formulas), LossScaleOptimizer (a pass-through), and the
CosineDecayRestarts schedule (issue 28): NumPy replays and Keras 3 as the oracle."""
import numpy as np
import pytest

import minnet as mn
from minnet import optimizers
from minnet.optimizers import schedules

RNG = np.random.default_rng(31)
SHAPES = [(3, 4), (5,), (2, 3, 2)]


def _run_minnet(opt_factory, weights, grads):
    params = [mn.Parameter(w.copy()) for w in weights]
    opt = opt_factory(params)
    for step in grads:
        for p, g in zip(params, step):
            p.grad = g.copy()
        opt.step()
    return [p.data for p in params]


def _lamb_replay(w, grads, lr=0.01, b1=0.9, b2=0.999, eps=1e-7):
    m, v = np.zeros_like(w), np.zeros_like(w)
    for t, g in enumerate(grads, 1):
        m = m + (1 - b1) * (g - m)
        v = v + (1 - b2) * (g * g - v)
        u = (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + eps)
        w = w - np.linalg.norm(w) / np.linalg.norm(u) * lr * u
    return w


def _ftrl_replay(w, grads, lr=0.05, l1=0.01, l2=0.02):
    n, z = np.full_like(w, 0.1), np.zeros_like(w)
    for g in grads:
        n_new = n + g * g
        z = z + g - (np.sqrt(n_new) - np.sqrt(n)) / lr * w
        w = (np.clip(z, -l1, l1) - z) / (np.sqrt(n_new) / lr + 2 * l2)
        n = n_new
    return w


def test_lamb_and_ftrl_match_numpy_replays():
    w = RNG.normal(size=(3, 4))
    grads = [RNG.normal(size=(3, 4)) for _ in range(4)]
    got = _run_minnet(lambda p: optimizers.Lamb(p, learning_rate=0.01), [w], [[g] for g in grads])
    np.testing.assert_allclose(got[0], _lamb_replay(w, grads), rtol=1e-12)
    got = _run_minnet(lambda p: optimizers.Ftrl(p, learning_rate=0.05, l1_regularization_strength=0.01,
                                                l2_regularization_strength=0.02), [w], [[g] for g in grads])
    np.testing.assert_allclose(got[0], _ftrl_replay(w, grads), rtol=1e-12)


def test_loss_scale_optimizer_is_a_pass_through():
    w = RNG.normal(size=(3, 2))
    grads = [[RNG.normal(size=(3, 2))] for _ in range(3)]
    plain = _run_minnet(lambda p: optimizers.Adam(p, learning_rate=0.01), [w], grads)
    scaled = _run_minnet(lambda p: optimizers.LossScaleOptimizer(optimizers.Adam(p, learning_rate=0.01)),
                         [w], grads)
    np.testing.assert_array_equal(plain[0], scaled[0])
    p = mn.Parameter(w.copy())
    opt = optimizers.LossScaleOptimizer(optimizers.SGD([p], learning_rate=0.1), initial_scale=8.0)
    p.grad = np.full((3, 2), np.inf)
    opt.step()
    np.testing.assert_array_equal(p.data, w)                 # skipped
    assert opt.dynamic_scale == 4.0 and opt.iterations == 0
    again = optimizers.deserialize(optimizers.serialize(opt))
    assert isinstance(again.inner_optimizer, optimizers.SGD) and again.initial_scale == 8.0


def test_cosine_decay_restarts_numpy():
    s = schedules.CosineDecayRestarts(1.0, 10, t_mul=2.0, m_mul=0.5, alpha=0.1)
    # period 0: steps 0..9, period 1: 10..29 at half the rate
    assert s(0) == pytest.approx(1.0)
    assert s(5) == pytest.approx(0.9 * 0.5 * (1 + np.cos(np.pi * 0.5)) + 0.1)
    assert s(10) == pytest.approx(0.9 * 0.5 + 0.1)
    assert s(20) == pytest.approx(0.9 * 0.25 * (1 + np.cos(np.pi * 0.5)) + 0.1)
    flat = schedules.CosineDecayRestarts(2.0, 4, t_mul=1.0)
    assert flat(6) == pytest.approx(2.0 * 0.5 * (1 + np.cos(np.pi * 0.5)))
    assert type(schedules.deserialize(schedules.serialize(s))) is schedules.CosineDecayRestarts
    # saturates instead of overflowing; t_mul < 1 stays at its floor after the last period
    for args in [(1e308, 5e-324), (1.0, 5e-324, 2.0, 2.0), (1e308, 1, 0.5, 0.5, 0.1),
                 (1.0, 1, 1.0, 1e308)]:
        for step in (0, 1, 1751, 10 ** 9, 2 ** 62):
            value = schedules.CosineDecayRestarts(*args)(step)
            assert np.isfinite(value) and value >= 0, (args, step, value)
    assert schedules.CosineDecayRestarts(1.0, 10, t_mul=0.5, alpha=0.1)(10 ** 6) == pytest.approx(0.1)


CASES = [
    ("Ftrl", {"learning_rate": 0.05}),
    ("Ftrl", {"learning_rate": 0.05, "l1_regularization_strength": 0.01,
              "l2_regularization_strength": 0.02, "l2_shrinkage_regularization_strength": 0.01,
              "beta": 0.1, "learning_rate_power": -0.6}),
    ("Lamb", {"learning_rate": 0.01}), ("Lamb", {"learning_rate": 0.01, "weight_decay": 0.1}),
    ("Adafactor", {"learning_rate": 0.01}),
    ("Adafactor", {"learning_rate": 0.5, "relative_step": False, "clip_threshold": 0.5}),
]


@pytest.mark.slow_once
@pytest.mark.parametrize("name, kwargs", CASES)
def test_against_keras(keras, name, kwargs):
    weights = [RNG.normal(size=s).astype("float32") for s in SHAPES]
    grads = [[RNG.normal(size=s).astype("float32") for s in SHAPES] for _ in range(5)]
    variables = [keras.Variable(w.copy()) for w in weights]
    theirs = getattr(keras.optimizers, name)(**kwargs)
    for step in grads:
        theirs.apply_gradients(zip([keras.ops.convert_to_tensor(g) for g in step], variables))
    got = _run_minnet(lambda p: getattr(optimizers, name)(p, **kwargs), weights, grads)
    for ours, var in zip(got, variables):
        np.testing.assert_allclose(ours, np.asarray(var.numpy()), rtol=2e-5, atol=2e-6)


@pytest.mark.slow_once
def test_schedule_against_keras(keras):
    for kwargs in ({"t_mul": 2.0, "m_mul": 0.5, "alpha": 0.1}, {"t_mul": 1.0}, {"t_mul": 1.5}):
        ours = schedules.CosineDecayRestarts(0.3, 7, **kwargs)
        theirs = keras.optimizers.schedules.CosineDecayRestarts(0.3, 7, **kwargs)
        for step in (0, 3, 7, 12, 20, 33, 50):
            assert ours(step) == pytest.approx(float(theirs(step)), rel=1e-5, abs=1e-7)
