"""Regularization terms join the training loss, as Keras reports them in History's "loss"."""
import numpy as np

import minnet as mn
from minnet import layers, regularizers


def _data():
    rng = np.random.default_rng(0)
    return rng.normal(size=(32, 4)).astype("float32"), rng.normal(size=(32, 1)).astype("float32")


def test_l2_term_is_in_the_evaluated_loss():
    x, y = _data()
    mn.manual_seed(0)
    model = mn.Sequential([layers.Input((4,)), layers.Dense(1, kernel_regularizer=regularizers.l2(0.5))])
    model.compile(optimizer="sgd", loss="mse")
    kernel = model.get_weights()[0]
    plain = float(np.mean((model.predict(x, verbose=0) - y) ** 2))
    expected = plain + 0.5 * float(np.sum(kernel.astype(np.float64) ** 2))
    np.testing.assert_allclose(model.evaluate(x, y, verbose=0), expected, rtol=1e-5)


def test_l2_changes_the_trained_weights_as_weight_decay_would():
    x, y = _data()
    results = []
    for strength in (0.0, 0.1):
        mn.manual_seed(0)
        model = mn.Sequential([layers.Input((4,)),
                               layers.Dense(1, kernel_regularizer=regularizers.l2(strength))])
        model.compile(optimizer=mn.optimizers.SGD(learning_rate=0.1), loss="mse")
        history = model.fit(x, y, batch_size=32, epochs=3, verbose=0, shuffle=False)
        results.append((np.linalg.norm(model.get_weights()[0]), history.history["loss"]))
    assert results[1][0] < results[0][0]
    assert results[1][1][0] > results[0][1][0]      # the first epoch's loss includes the term
