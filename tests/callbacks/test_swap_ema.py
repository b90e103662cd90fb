"""callbacks.SwapEMAWeights (issue 28): evaluation on the averaged weights, and Keras 3's
fit/validation history with swap_on_epoch as the oracle."""
import numpy as np
import pytest

import minnet as mn
from minnet import callbacks, layers, optimizers

RNG = np.random.default_rng(5)
X = RNG.normal(size=(24, 3)).astype("float32")
Y = RNG.normal(size=(24, 2)).astype("float32")


def _model(kernel=None, bias=None):
    model = mn.Sequential([layers.Input((3,)), layers.Dense(2)])
    if kernel is not None:
        model.set_weights([kernel, bias])
    model.compile(optimizer=optimizers.SGD(0.05, use_ema=True, ema_momentum=0.6), loss="mse")
    return model


def test_evaluate_sees_the_averages_and_weights_come_back():
    model = _model()
    model.fit(X, Y, batch_size=4, epochs=1, shuffle=False, verbose=0)
    opt = model.optimizer
    for p in opt.params:                      # make weights and averages differ
        p.data += 0.5
    raw = [w.copy() for w in model.get_weights()]
    swap = callbacks.SwapEMAWeights()
    swap.set_model(model)
    with_cb = model.evaluate(X, Y, verbose=0, callbacks=[swap])
    np.testing.assert_array_equal(model.get_weights()[0], raw[0])      # swapped back
    opt.finalize_variable_values()
    assert with_cb == pytest.approx(model.evaluate(X, Y, verbose=0))


@pytest.mark.slow_once
def test_fit_history_against_keras(keras):
    theirs = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    kernel, bias = theirs.get_weights()
    theirs.compile(optimizer=keras.optimizers.SGD(0.05, use_ema=True, ema_momentum=0.6), loss="mse")
    h1 = theirs.fit(X, Y, batch_size=4, epochs=3, shuffle=False, verbose=0,
                    validation_data=(X[:8], Y[:8]),
                    callbacks=[keras.callbacks.SwapEMAWeights(swap_on_epoch=True)])
    ours = _model(kernel.T, bias)
    h2 = ours.fit(X, Y, batch_size=4, epochs=3, shuffle=False, verbose=0,
                  validation_data=(X[:8], Y[:8]),
                  callbacks=[callbacks.SwapEMAWeights(swap_on_epoch=True)])
    np.testing.assert_allclose(h2.history["val_loss"], h1.history["val_loss"], rtol=1e-5)
    k2, b2 = theirs.get_weights()
    np.testing.assert_allclose(ours.get_weights()[0], k2.T, rtol=1e-5, atol=1e-6)
