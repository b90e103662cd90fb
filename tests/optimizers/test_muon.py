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
