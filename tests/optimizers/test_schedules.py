"""Learning-rate schedules vs their closed forms and vs torch.optim.lr_scheduler."""
import json
import math

import numpy as np
import pytest

from minnet.optimizers import schedules

STEPS = [0, 1, 2, 5, 9, 10, 11, 37, 100, 250]


@pytest.mark.parametrize("staircase", [False, True])
def test_exponential_decay(staircase):
    s = schedules.ExponentialDecay(0.1, decay_steps=10, decay_rate=0.5, staircase=staircase)
    for t in STEPS:
        p = t // 10 if staircase else t / 10
        assert s(t) == pytest.approx(0.1 * 0.5 ** p, rel=1e-12)


@pytest.mark.parametrize("staircase", [False, True])
def test_inverse_time_decay(staircase):
    s = schedules.InverseTimeDecay(0.1, decay_steps=10, decay_rate=0.5, staircase=staircase)
    for t in STEPS:
        p = t // 10 if staircase else t / 10
        assert s(t) == pytest.approx(0.1 / (1 + 0.5 * p), rel=1e-12)


def test_piecewise_constant_decay():
    s = schedules.PiecewiseConstantDecay([10, 20], [1.0, 0.5, 0.1])
    assert [s(t) for t in (0, 10, 11, 20, 21, 1000)] == [1.0, 1.0, 0.5, 0.5, 0.1, 0.1]


def test_step_decay_matches_torch_steplr(torch):
    s = schedules.StepDecay(0.1, step_size=7, gamma=0.3)
    opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=7, gamma=0.3)
    for t in range(40):
        assert s(t) == pytest.approx(opt.param_groups[0]["lr"], rel=1e-12)
        opt.step()
        sched.step()


@pytest.mark.parametrize("cycle", [False, True])
@pytest.mark.parametrize("power", [1.0, 2.0])
def test_polynomial_decay(cycle, power):
    s = schedules.PolynomialDecay(0.1, decay_steps=10, end_learning_rate=0.01, power=power, cycle=cycle)
    for t in STEPS:
        if cycle:
            d = 10 * (1 if t == 0 else math.ceil(t / 10))
            step = t
        else:
            d, step = 10, min(t, 10)
        assert s(t) == pytest.approx((0.1 - 0.01) * (1 - step / d) ** power + 0.01, rel=1e-12)


@pytest.mark.parametrize("alpha", [0.0, 0.1])
def test_cosine_decay(alpha):
    s = schedules.CosineDecay(0.2, decay_steps=50, alpha=alpha)
    for t in STEPS:
        c = 0.5 * (1 + math.cos(math.pi * min(t, 50) / 50))
        assert s(t) == pytest.approx(0.2 * ((1 - alpha) * c + alpha), rel=1e-12, abs=1e-15)


def test_cosine_decay_matches_torch_cosine_annealing(torch):
    s = schedules.CosineDecay(0.1, decay_steps=20, alpha=0.05)
    opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=20, eta_min=0.1 * 0.05)
    for t in range(21):
        assert s(t) == pytest.approx(opt.param_groups[0]["lr"], rel=1e-9)
        opt.step()
        sched.step()


def test_cosine_decay_with_warmup():
    s = schedules.CosineDecay(0.0, decay_steps=10, alpha=0.0, warmup_target=1.0, warmup_steps=4)
    assert [s(t) for t in range(5)] == pytest.approx([0.0, 0.25, 0.5, 0.75, 1.0])
    assert s(9) == pytest.approx(0.5 * (1 + math.cos(math.pi * 5 / 10)))
    assert s(14) == pytest.approx(0.0, abs=1e-15) and s(100) == pytest.approx(0.0, abs=1e-15)


def test_linear_warmup():
    after = schedules.ExponentialDecay(1.0, 10, 0.5)
    s = schedules.LinearWarmup(after, warmup_steps=4, start_learning_rate=0.2)
    assert [s(t) for t in range(4)] == pytest.approx([0.2, 0.4, 0.6, 0.8])
    assert s(4) == 1.0 and s(14) == pytest.approx(0.5)
    assert schedules.LinearWarmup(0.3, warmup_steps=3)(10) == 0.3


@pytest.mark.parametrize("schedule", [
    schedules.ExponentialDecay(0.1, 10, 0.9, staircase=True),
    schedules.InverseTimeDecay(0.1, 10, 0.9),
    schedules.PiecewiseConstantDecay([5], [0.1, 0.01]),
    schedules.StepDecay(0.1, 3),
    schedules.PolynomialDecay(0.1, 10, cycle=True),
    schedules.CosineDecay(0.1, 10, warmup_target=0.2, warmup_steps=3),
    schedules.LinearWarmup(schedules.CosineDecay(0.1, 10), 5),
], ids=lambda s: type(s).__name__)
def test_serialize_round_trip(schedule):
    config = json.loads(json.dumps(schedules.serialize(schedule)))
    clone = schedules.deserialize(config)
    assert type(clone) is type(schedule)
    assert [clone(t) for t in STEPS] == [schedule(t) for t in STEPS]
    assert schedules.get(config)(3) == schedule(3)


@pytest.mark.parametrize("make,arg", [
    (lambda: schedules.ExponentialDecay(0.1, 0, 0.5), "decay_steps"),
    (lambda: schedules.ExponentialDecay(-0.1, 10, 0.5), "initial_learning_rate"),
    (lambda: schedules.PiecewiseConstantDecay([1, 2], [0.1]), "values"),
    (lambda: schedules.PiecewiseConstantDecay([2, 1], [0.1, 0.2, 0.3]), "boundaries"),
    (lambda: schedules.StepDecay(0.1, 0), "step_size"),
    (lambda: schedules.StepDecay(0.1, 2.5), "step_size"),
    (lambda: schedules.CosineDecay(0.1, 10, alpha=2.0), "alpha"),
    (lambda: schedules.LinearWarmup(0.1, 0), "warmup_steps"),
    (lambda: schedules.ExponentialDecay(0.1, 10, 0.5)(-1), "step"),
    (lambda: schedules.deserialize({"class_name": "Nope", "config": {}}), "Nope"),
])
def test_bad_arguments(make, arg):
    with pytest.raises((ValueError, TypeError), match=arg):
        make()


def test_numpy_integer_steps():
    s = schedules.ExponentialDecay(0.1, 10, 0.5)
    assert s(np.int64(10)) == pytest.approx(0.05)
