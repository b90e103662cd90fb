"""Where minnet's update formulas (PyTorch's) differ from Keras 3's, and by how much.

Each test backs one optimizer row of the table in ``docs/coming_from_keras.md``: the Keras
formula is written out in NumPy from Keras 3's ``keras/src/optimizers/*.py`` and compared with
minnet's optimizer on the same gradients.
"""
import math

import numpy as np

import minnet as mn
from minnet import optimizers


def _run(opt_factory, grads, before_step=None):
    p = mn.Parameter(np.ones_like(grads[0]))
    opt = opt_factory([p])
    for t, g in enumerate(grads, start=1):
        if before_step is not None:
            before_step(opt, t)
        p.grad = g.copy()
        opt.step()
    return p.data.copy()


def _keras_rmsprop(grads, lr, rho, eps):
    w, v = np.ones_like(grads[0]), np.zeros_like(grads[0])
    for g in grads:
        v = rho * v + (1 - rho) * g * g
        w = w - lr * g / np.sqrt(v + eps)                     # epsilon inside the root
    return w


def _keras_adam(grads, lr, b1, b2, eps):
    w, m, v = np.ones_like(grads[0]), np.zeros_like(grads[0]), np.zeros_like(grads[0])
    for t, g in enumerate(grads, start=1):
        alpha = lr * math.sqrt(1 - b2 ** t) / (1 - b1 ** t)
        m = m + (g - m) * (1 - b1)
        v = v + (g * g - v) * (1 - b2)
        w = w - alpha * m / (np.sqrt(v) + eps)                # "epsilon hat"
    return w


def _keras_sgd(grads, lrs, momentum):
    w, vel = np.ones_like(grads[0]), np.zeros_like(grads[0])
    for g, lr in zip(grads, lrs):
        vel = momentum * vel - lr * g                         # velocity holds lr * g
        w = w + vel
    return w


def test_rmsprop_agrees_with_keras_for_large_gradients_only():
    rng = np.random.default_rng(0)
    large = [rng.choice([-1.0, 1.0], 50) * rng.uniform(0.5, 1.5, 50) for _ in range(20)]
    small = [1e-5 * rng.standard_normal(50) for _ in range(20)]
    make = lambda ps: optimizers.RMSprop(ps, learning_rate=0.01, rho=0.9, epsilon=1e-7)
    # Gradients of magnitude 0.5 to 1.5: v >> epsilon, the two formulas agree closely.
    np.testing.assert_allclose(_run(make, large) - 1, _keras_rmsprop(large, 0.01, 0.9, 1e-7) - 1,
                               rtol=1e-5, atol=1e-9)
    # Gradients of order 1e-5: Keras's root of (v + 1e-7) caps the step; minnet's does not.
    ours = np.abs(_run(make, small) - 1).mean()
    keras = np.abs(_keras_rmsprop(small, 0.01, 0.9, 1e-7) - 1).mean()
    assert ours > 10 * keras


def test_adam_keras_epsilon_is_minnets_epsilon_over_sqrt_of_bias_correction():
    rng = np.random.default_rng(1)
    grads = [1e-4 * rng.standard_normal(30) for _ in range(15)]     # small: epsilon matters
    lr, b1, b2, eps = 0.01, 0.9, 0.999, 1e-7
    keras = _keras_adam(grads, lr, b1, b2, eps)
    make = lambda ps: optimizers.Adam(ps, learning_rate=lr, beta_1=b1, beta_2=b2, epsilon=eps)

    def keras_epsilon(opt, t):
        opt.epsilon = eps / math.sqrt(1 - b2 ** t)

    np.testing.assert_allclose(_run(make, grads, keras_epsilon), keras, rtol=1e-12, atol=1e-14)
    # With the same constant epsilon the two differ measurably on such small gradients.
    assert np.abs(_run(make, grads) - keras).max() > 1e-6


def test_sgd_momentum_equals_keras_for_constant_rate_and_differs_after_a_change():
    rng = np.random.default_rng(2)
    grads = [rng.standard_normal(20) for _ in range(10)]
    constant = [0.1] * 10
    make = lambda ps: optimizers.SGD(ps, learning_rate=0.1, momentum=0.9)
    np.testing.assert_allclose(_run(make, grads), _keras_sgd(grads, constant, 0.9), rtol=1e-12)

    changed = [0.1] * 5 + [0.01] * 5                           # e.g. ReduceLROnPlateau at step 6

    def schedule(opt, t):
        opt.learning_rate = changed[t - 1]

    ours = _run(make, grads, schedule)
    keras = _keras_sgd(grads, changed, 0.9)
    assert np.abs(ours - keras).max() > 1e-3


def _keras_adagrad(grads, lr, init, eps):
    w, acc = np.ones_like(grads[0]), np.full_like(grads[0], init)
    for g in grads:
        acc = acc + g * g
        w = w - lr * g / np.sqrt(acc + eps)                   # epsilon inside the root
    return w


def _keras_adamax(grads, lr, b1, b2, eps):
    w, m, u = np.ones_like(grads[0]), np.zeros_like(grads[0]), np.zeros_like(grads[0])
    for t, g in enumerate(grads, start=1):
        m = m + (g - m) * (1 - b1)
        u = np.maximum(b2 * u, np.abs(g))
        w = w - lr * m / ((1 - b1 ** t) * (u + eps))
    return w


def test_adagrad_agrees_with_keras_thanks_to_the_initial_accumulator():
    rng = np.random.default_rng(3)
    grads = [1e-4 * rng.standard_normal(40) for _ in range(20)]     # even tiny gradients
    make = lambda ps: optimizers.Adagrad(ps, learning_rate=0.01)    # init 0.1, epsilon 1e-7
    np.testing.assert_allclose(_run(make, grads) - 1, _keras_adagrad(grads, 0.01, 0.1, 1e-7) - 1,
                               rtol=2e-6)


def test_adamax_differs_from_keras_by_epsilon_only():
    rng = np.random.default_rng(4)
    grads = [rng.standard_normal(40) for _ in range(20)]
    make = lambda ps: optimizers.Adamax(ps, learning_rate=0.01)      # epsilon 1e-7
    np.testing.assert_allclose(_run(make, grads) - 1, _keras_adamax(grads, 0.01, 0.9, 0.999, 1e-7) - 1,
                               rtol=1e-5, atol=1e-9)
