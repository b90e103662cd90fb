"""Keras 3's optimizer.apply(grads, variables) and apply_gradients(zip(grads, variables))."""
import numpy as np
import pytest

import minnet as mn


def _problem(seed=0):
    rng = np.random.default_rng(seed)
    w = mn.Parameter(rng.standard_normal((3, 2)).astype(np.float32))
    b = mn.Parameter(np.zeros(2, np.float32))
    x = rng.standard_normal((5, 3)).astype(np.float32)
    return w, b, x


def _grads(w, b, x):
    w.grad = b.grad = None
    loss = ((mn.Tensor(x) @ w + b) ** 2).mean()
    loss.backward()
    return [w.grad.copy(), b.grad.copy()]


@pytest.mark.parametrize("name", ["sgd", "adam", "rmsprop", "adagrad", "nadam", "adamax", "lion"])
def test_apply_is_step_on_the_same_variables(name):
    w1, b1, x = _problem()
    w2, b2, _ = _problem()
    by_apply = mn.optimizers.get(name)
    by_step = mn.optimizers.get(name)
    by_step.set_parameters([w2, b2])
    for _ in range(3):
        grads = _grads(w1, b1, x)
        by_apply.apply(grads, [w1, b1])
        _grads(w2, b2, x)
        by_step.step()
    np.testing.assert_array_equal(w1.data, w2.data)
    np.testing.assert_array_equal(b1.data, b2.data)
    assert by_apply.iterations == by_step.iterations == 3


def test_apply_gradients_takes_pairs_and_keeps_state_across_calls():
    w1, b1, x = _problem()
    w2, b2, _ = _problem()
    a, c = mn.optimizers.Adam(0.1), mn.optimizers.Adam(0.1)
    for _ in range(3):
        a.apply_gradients(zip(_grads(w1, b1, x), [w1, b1]))
        c.apply(_grads(w2, b2, x), [w2, b2])
    np.testing.assert_array_equal(w1.data, w2.data)


def test_apply_builds_state_for_new_variables_and_skips_none_gradients():
    w, b, x = _problem()
    opt = mn.optimizers.Adam(0.1)
    grads = _grads(w, b, x)
    opt.apply([grads[0]], [w])          # only w: b unseen yet
    before_b = b.data.copy()
    opt.apply([None, grads[1]], [w, b])  # b joins; w's None gradient is skipped
    assert not np.array_equal(b.data, before_b)
    assert len(opt.params) == 2 and opt.iterations == 2
    assert w.grad is not None           # the gradients set for apply are put back


def test_apply_refuses_mismatched_lists_and_a_first_call_without_variables():
    w, b, x = _problem()
    opt = mn.optimizers.SGD(0.1)
    with pytest.raises(ValueError, match="trainable_variables"):
        opt.apply(_grads(w, b, x))
    with pytest.raises(ValueError, match="one gradient per variable"):
        opt.apply(_grads(w, b, x), [w])
    with pytest.raises(TypeError, match="params"):
        opt.apply([np.zeros(3)], [np.zeros(3)])


def test_apply_matches_keras(keras):
    import torch
    w, b, x = _problem()
    kw = keras.Variable(w.data.copy())
    kb = keras.Variable(b.data.copy())
    ours, theirs = mn.optimizers.Adam(0.05), keras.optimizers.Adam(0.05)
    for _ in range(4):
        ours.apply(_grads(w, b, x), [w, b])
        xt = torch.tensor(x)
        loss = ((xt @ kw.value + kb.value) ** 2).mean()
        for v in (kw, kb):
            v.value.grad = None
        loss.backward()
        with torch.no_grad():
            theirs.apply([kw.value.grad, kb.value.grad], [kw, kb])
    np.testing.assert_allclose(w.data, kw.numpy(), rtol=1e-4, atol=2e-5)   # float32 Adam, 4 steps
    np.testing.assert_allclose(b.data, kb.numpy(), rtol=1e-4, atol=2e-5)
