"""use_ema / ema_momentum / ema_overwrite_frequency on every optimizer (issue 28, item 2):
a NumPy replay of Keras's rule, the end-of-fit overwrite, and Keras 3 as the oracle."""
import numpy as np
import pytest

import minnet as mn
from minnet import layers, optimizers

RNG = np.random.default_rng(99)


def _replay(w0, grads, lr, momentum, frequency):
    """Keras's SGD + EMA in NumPy: weights and averages after each step."""
    w, avg = w0.copy(), w0.copy()
    for t, g in enumerate(grads):
        w = w - lr * g
        m = 0.0 if t == 0 else momentum
        avg = m * avg + (1 - m) * w
        if frequency and (t + 1) % frequency == 0:
            w = avg.copy()
    return w, avg


@pytest.mark.parametrize("frequency", [None, 2, 3])
def test_sgd_ema_matches_numpy_replay(frequency):
    p = mn.Parameter(RNG.normal(size=(3, 2)))
    opt = optimizers.SGD([p], learning_rate=0.1, use_ema=True, ema_momentum=0.8,
                         ema_overwrite_frequency=frequency)
    w0 = p.data.copy()
    grads = [RNG.normal(size=(3, 2)) for _ in range(5)]
    for g in grads:
        p.grad = g.copy()
        opt.step()
    w, avg = _replay(w0, grads, 0.1, 0.8, frequency)
    np.testing.assert_allclose(p.data, w, rtol=1e-12)
    opt.finalize_variable_values()
    np.testing.assert_allclose(p.data, avg, rtol=1e-12)


def test_every_optimizer_accepts_use_ema_and_config_round_trips():
    for name in ("SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "Nadam", "Lion"):
        opt = getattr(optimizers, name)(use_ema=True, ema_momentum=0.9, ema_overwrite_frequency=4)
        config = opt.get_config()
        assert config["use_ema"] and config["ema_momentum"] == 0.9
        again = type(opt).from_config(config)
        assert again.get_config() == config
    assert "use_ema" not in optimizers.Adam().get_config()
    with pytest.raises(ValueError, match="ema_momentum"):
        optimizers.Adam(use_ema=True, ema_momentum=1.5)
    with pytest.raises(ValueError, match="ema_overwrite_frequency"):
        optimizers.Adam(use_ema=True, ema_overwrite_frequency=0)


def test_fit_ends_with_the_averaged_weights():
    x = RNG.normal(size=(16, 3)).astype("float32")
    y = RNG.normal(size=(16, 2)).astype("float32")
    mn.manual_seed(0)
    model = mn.Sequential([layers.Input((3,)), layers.Dense(2)])
    opt = optimizers.SGD(0.1, use_ema=True, ema_momentum=0.5)
    model.compile(optimizer=opt, loss="mse")
    model.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0)
    for p, avg in zip(opt.params, opt._ema.averages):
        np.testing.assert_array_equal(p.data, avg)


@pytest.mark.slow_once
@pytest.mark.parametrize("frequency", [None, 3])
def test_fit_against_keras(keras, frequency):
    x = RNG.normal(size=(24, 3)).astype("float32")
    y = RNG.normal(size=(24, 2)).astype("float32")
    theirs = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    kernel, bias = theirs.get_weights()
    theirs.compile(optimizer=keras.optimizers.SGD(0.05, use_ema=True, ema_momentum=0.7,
                                                  ema_overwrite_frequency=frequency), loss="mse")
    theirs.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)
    ours = mn.Sequential([layers.Input((3,)), layers.Dense(2)])
    ours.set_weights([kernel.T, bias])
    ours.compile(optimizer=optimizers.SGD(0.05, use_ema=True, ema_momentum=0.7,
                                          ema_overwrite_frequency=frequency), loss="mse")
    ours.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)
    k2, b2 = theirs.get_weights()
    got_k, got_b = ours.get_weights()
    np.testing.assert_allclose(got_k, k2.T, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_b, b2, rtol=1e-5, atol=1e-6)
