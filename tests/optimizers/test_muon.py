"""Muon (issue 28): Keras 3's update rules, routing (2-D weights Muon, the rest and
embeddings AdamW, exclude_layers), weight decay, against Keras (oracle) and by hand."""
import numpy as np
import pytest

import minnet as mn
from minnet import optimizers
from minnet.optimizers.muon import newton_schulz5

RNG = np.random.default_rng(38)


def test_newton_schulz_orthogonalises_and_commutes_with_the_transpose():
    g = RNG.normal(size=(5, 8))
    x = newton_schulz5(g, 10, 3.4445, -4.7750, 2.0315)
    s = np.linalg.svd(x, compute_uv=False)
    assert np.all((s > 0.5) & (s < 1.5))          # the quintic pushes singular values near 1
    np.testing.assert_allclose(newton_schulz5(g.T, 5, 3.4445, -4.7750, 2.0315),
                               newton_schulz5(g, 5, 3.4445, -4.7750, 2.0315).T, rtol=1e-12)


def _params():
    return [mn.Parameter(RNG.normal(size=(4, 6)), name="dense/kernel"),
            mn.Parameter(RNG.normal(size=(6,)), name="dense/bias"),
            mn.Parameter(RNG.normal(size=(7, 3)), name="embedding/embeddings"),
            mn.Parameter(RNG.normal(size=(3, 5)), name="head/kernel"),
            mn.Parameter(RNG.normal(size=(2, 3, 2, 2)), name="conv/kernel")]


def test_routing_follows_keras():
    opt = optimizers.Muon(_params(), exclude_layers=["head"])
    assert [opt.uses_adamw(p) for p in opt._params] == [False, True, True, True, True]
    opt = optimizers.Muon(_params(), exclude_embeddings=False)
    assert [opt.uses_adamw(p) for p in opt._params] == [False, True, False, False, True]


def test_config_round_trip_and_errors():
    opt = optimizers.Muon(learning_rate=0.01, weight_decay=0.1, exclude_layers=["x"], rms_rate=None)
    again = optimizers.Muon.from_config(opt.get_config())
    assert again.get_config() == opt.get_config() and again.muon_weight_decay == 0.1
    assert optimizers.get("muon").__class__ is optimizers.Muon
    with pytest.raises(ValueError, match="`momentum`"):
        optimizers.Muon(momentum=2.0)
    with pytest.raises(TypeError, match="`exclude_layers`"):
        optimizers.Muon(exclude_layers=[3])


@pytest.mark.slow_once
@pytest.mark.parametrize("options", [dict(), dict(nesterov=False, rms_rate=None, ns_steps=3),
                                     dict(exclude_layers=["head"], weight_decay=0.1,
                                          adam_weight_decay=0.0, adam_lr_ratio=0.1)], ids=str)
def test_matches_keras_over_steps(keras, options):
    ours = _params()
    theirs = [keras.Variable(p.data.copy(), name=p.name.replace("/", "_")) for p in ours]
    # Keras matches names against the variable path; give the same words to both sides
    for p in ours:
        p.name = p.name.replace("/", "_")
    k_opt = keras.optimizers.Muon(learning_rate=0.02, **options)
    m_opt = optimizers.Muon(ours, learning_rate=0.02, **options)
    for _ in range(4):
        grads = [RNG.normal(size=p.shape) for p in ours]
        for p, g in zip(ours, grads):
            p.grad = g.copy()
        m_opt.step()
        k_opt.apply_gradients([(keras.ops.convert_to_tensor(g), v) for g, v in zip(grads, theirs)])
    for p, v in zip(ours, theirs):
        np.testing.assert_allclose(p.data, keras.ops.convert_to_numpy(v), rtol=1e-5, atol=1e-6)


def test_trains_a_model():
    x = RNG.normal(size=(64, 5)).astype("float32")
    y = (x @ RNG.normal(size=(5, 1))).astype("float32")
    model = mn.Sequential([mn.layers.Input((5,)), mn.layers.Dense(16, activation="relu"),
                           mn.layers.Dense(1)])
    model.compile(optimizer=optimizers.Muon(learning_rate=0.02), loss="mse")
    history = model.fit(x, y, epochs=30, batch_size=16, verbose=0).history["loss"]
    assert history[-1] < 0.5 * history[0]


def test_schedule_free_by_hand_first_step():
    w0 = RNG.normal(size=(3,))
    g = RNG.normal(size=(3,))
    p = mn.Parameter(w0.copy())
    opt = optimizers.ScheduleFreeAdamW([p], learning_rate=0.1, warmup_steps=2)
    p.grad = g.copy()
    opt.step()
    lr = 0.1 * 0.5
    z = w0 - lr * g / (np.sqrt((1 - 0.999) * g * g / (1 - 0.999)) + 1e-8)
    x = z                                     # t = 1: the average is the iterate
    np.testing.assert_allclose(p.data, 0.1 * z + 0.9 * x, rtol=1e-12)
    assert optimizers.get("schedulefreeadamw").__class__ is optimizers.ScheduleFreeAdamW


def _schedule_free_reference(w, grads, lr, beta_1=0.9, beta_2=0.999, eps=1e-8, warmup=0, wd=0.0):
    """Defazio et al.'s schedule-free AdamW as Keras writes it (x recovered from z_old)."""
    y, z, v = w.copy(), w.copy(), np.zeros_like(w)
    for t, g in enumerate(grads, 1):
        rate = lr * min(t / warmup, 1.0) if warmup else lr
        y = y - y * wd * lr
        z_old = z.copy()
        v = v + (g * g - v) * (1 - beta_2)
        z = z - rate * g / (np.sqrt(v / (1 - beta_2 ** t)) + eps)
        x_old = (y - (1 - beta_1) * z_old) / beta_1
        x = (1 - 1 / t) * x_old + z / t
        y = (1 - beta_1) * z + beta_1 * x
    return y


@pytest.mark.parametrize("options", [dict(), dict(warmup=3, wd=0.05, beta_1=0.8)], ids=str)
def test_schedule_free_matches_the_algorithm(options):
    w = RNG.normal(size=(4, 3))
    grads = [RNG.normal(size=w.shape) for _ in range(6)]
    p = mn.Parameter(w.copy())
    kw = {"warmup_steps": options.get("warmup", 0), "weight_decay": options.get("wd"),
          "beta_1": options.get("beta_1", 0.9)}
    opt = optimizers.ScheduleFreeAdamW([p], learning_rate=0.01, **kw)
    for g in grads:
        p.grad = g.copy()
        opt.step()
    np.testing.assert_allclose(p.data, _schedule_free_reference(w, grads, 0.01, **{
        k: v for k, v in options.items()}), rtol=1e-12)


@pytest.mark.slow_once
def test_schedule_free_first_step_matches_keras(keras):
    """Keras on the torch backend reads ``momentum.value`` after updating it in place (the
    tensor aliases), so from step 2 it recovers x from the new z; minnet follows the
    algorithm as written, which Keras computes on its JAX and TensorFlow backends
    (docs/coming_from_keras.md). Step 1 does not depend on it (x = z at t = 1)."""
    ours = [mn.Parameter(RNG.normal(size=(4, 3))), mn.Parameter(RNG.normal(size=(5,)))]
    theirs = [keras.Variable(p.data.copy()) for p in ours]
    k_opt = keras.optimizers.ScheduleFreeAdamW(learning_rate=0.01, warmup_steps=2, weight_decay=0.1)
    m_opt = optimizers.ScheduleFreeAdamW(ours, learning_rate=0.01, warmup_steps=2, weight_decay=0.1)
    grads = [RNG.normal(size=p.shape) for p in ours]
    for p, g in zip(ours, grads):
        p.grad = g.copy()
    m_opt.step()
    k_opt.apply_gradients([(keras.ops.convert_to_tensor(g), v) for g, v in zip(grads, theirs)])
    for p, v in zip(ours, theirs):
        np.testing.assert_allclose(p.data, keras.ops.convert_to_numpy(v), rtol=1e-5, atol=1e-6)
