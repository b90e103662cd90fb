"""Optimizer state_dict / load_state_dict: a resumed run continues exactly like an uninterrupted one."""
import io

import numpy as np
import pytest

import minnet as mn
from minnet import optimizers
from minnet.optimizers import schedules

SHAPES = [(4, 3), (3,)]

MAKERS = {
    "sgd": lambda p: optimizers.SGD(p, learning_rate=0.1, momentum=0.9, nesterov=True, weight_decay=0.01),
    "adam": lambda p: optimizers.Adam(p, learning_rate=0.01, amsgrad=True, clipnorm=1.0),
    "adamw": lambda p: optimizers.AdamW(p, learning_rate=schedules.ExponentialDecay(0.01, 3, 0.5)),
    "rmsprop": lambda p: optimizers.RMSprop(p, learning_rate=0.01, momentum=0.5, centered=True),
    "adagrad": lambda p: optimizers.Adagrad(p, learning_rate=0.1, lr_decay=0.1),
}


def _grads(rng, n):
    return [[rng.standard_normal(s) for s in SHAPES] for _ in range(n)]


def _steps(opt, params, grads):
    for step in grads:
        for p, g in zip(params, step):
            p.grad = g.copy()
        opt.step()


def _through_npz(state):
    buffer = io.BytesIO()
    np.savez(buffer, **state)
    buffer.seek(0)
    return dict(np.load(buffer, allow_pickle=False))


@pytest.mark.parametrize("name", sorted(MAKERS))
@pytest.mark.parametrize("via_npz", [False, True])
def test_resume_continues_identically(name, via_npz):
    rng = np.random.default_rng(0)
    init = [rng.standard_normal(s) for s in SHAPES]
    grads = _grads(rng, 10)

    params = [mn.Parameter(a.copy()) for a in init]
    reference = MAKERS[name](params)
    _steps(reference, params, grads)

    params_a = [mn.Parameter(a.copy()) for a in init]
    first = MAKERS[name](params_a)
    _steps(first, params_a, grads[:5])
    state = first.state_dict()
    assert state["iterations"] == 5
    assert all(isinstance(v, (np.ndarray, int, float, bool)) for v in state.values())
    if via_npz:
        state = _through_npz(state)
    params_b = [mn.Parameter(p.data.copy()) for p in params_a]
    second = MAKERS[name](params_b)
    second.load_state_dict(state)
    _steps(second, params_b, grads[5:])
    for p, q in zip(params, params_b):
        np.testing.assert_array_equal(p.data, q.data)
    assert second.iterations == 10


def test_state_dict_is_a_copy_and_has_expected_keys():
    p = mn.Parameter(np.ones(3))
    opt = optimizers.SGD([p], learning_rate=0.1, momentum=0.9)
    p.grad = np.ones(3)
    opt.step()
    state = opt.state_dict()
    assert set(state) >= {"iterations", "learning_rate", "momentum", "state.0.momentum_buffer"}
    state["state.0.momentum_buffer"][...] = 100.0
    assert not np.any(opt.state_dict()["state.0.momentum_buffer"] == 100.0)


def test_load_before_set_parameters_is_applied_later():
    p = mn.Parameter(np.ones(3))
    opt = optimizers.Adam([p], learning_rate=0.01)
    p.grad = np.ones(3)
    opt.step()
    fresh = optimizers.Adam(learning_rate=0.01)
    fresh.load_state_dict(opt.state_dict())
    q = mn.Parameter(p.data.copy())
    fresh.set_parameters([q])
    p.grad = q.grad = np.full(3, 0.5)
    opt.step()
    fresh.step()
    np.testing.assert_array_equal(p.data, q.data)


def test_reduced_learning_rate_survives_round_trip():
    opt = optimizers.SGD(learning_rate=0.1)
    opt.learning_rate = 0.01
    other = optimizers.SGD(learning_rate=0.1)
    other.load_state_dict(opt.state_dict())
    assert other.learning_rate == 0.01


@pytest.mark.parametrize("bad,match", [
    ({"state.0.momentum_buffer": np.ones(4)}, "shape"),
    ({"state.5.momentum_buffer": np.ones(3)}, "parameter 5"),
    ({"state.x.momentum_buffer": np.ones(3)}, "state.<param index>"),
])
def test_load_state_dict_errors(bad, match):
    opt = optimizers.SGD([mn.Parameter(np.ones(3))], momentum=0.9)
    with pytest.raises(ValueError, match=match):
        opt.load_state_dict(bad)
    with pytest.raises(TypeError, match="state_dict"):
        opt.load_state_dict([1, 2])
