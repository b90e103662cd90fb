"""Schedules never overflow (#31 item 7): every schedule in ``minnet.optimizers.schedules`` gives
a finite value in ``[0, MAX_LEARNING_RATE]`` at any finite step (saturating where the formula
leaves the float range), or refuses the configuration when it is made."""
import inspect
import math
import warnings

import numpy as np
import pytest

import minnet as mn
from minnet.optimizers import schedules as S

TINY = 5e-324          # the smallest float: step / TINY is inf
HUGE = 1e308
STEPS = [0, 1, 1751, 10 ** 9, 2 ** 62, 10 ** 400]

# Extreme configurations per schedule class (positional arguments, then keywords).
EXTREMES = {
    "CosineDecayRestarts": [(1.0, 10), (HUGE, TINY), (1.0, TINY, 2.0, 2.0), (HUGE, 1, 0.5, 0.5, 0.1),
                            (1.0, 1, 1.0, HUGE), (HUGE, 1, HUGE, HUGE, 0.0)],
    "ExponentialDecay": [(1.0, 1, 1.5), (1.0, 1, 1.5, True), (HUGE, TINY, HUGE), (0.0, 1, 2.0),
                         (1.0, TINY, 0.5), (1.0, TINY, 2.0, True), (1e-300, HUGE, 1e-300),
                         (HUGE, 1, 1.0)],
    "InverseTimeDecay": [(1.0, TINY, HUGE), (1.0, TINY, 0.0), (HUGE, 1, HUGE, True), (HUGE, HUGE, TINY)],
    "PiecewiseConstantDecay": [([0, HUGE], [HUGE, 0.0, 1e-300]), ([TINY], [0.0, HUGE])],
    "StepDecay": [(1.0, 1, 1.5), (HUGE, 1, HUGE), (1.0, 1, 1e-300), (0.0, 1, 10.0), (1.0, 2 ** 62, 2.0)],
    "PolynomialDecay": [(HUGE, TINY, 0.0, HUGE), (1.0, TINY, 0.0, 0.5, True), (1.0, HUGE, HUGE, 1e-300, True),
                        (0.0, 1, HUGE, 3.0), (HUGE, 1, HUGE, 0.0, True)],
    "CosineDecay": [(HUGE, TINY), (1.0, HUGE, 1.0, HUGE, HUGE), (HUGE, 1, 0.5, HUGE, TINY),
                    (0.0, TINY, 0.0, HUGE, 1)],
    "LinearWarmup": [(S.ExponentialDecay(1.0, 1, 1.5), 1), (HUGE, 2 ** 62, HUGE),
                     (S.StepDecay(HUGE, 1, HUGE), 1, HUGE)],
}


def _schedule_classes():
    return sorted(name for name, obj in vars(S).items()
                  if inspect.isclass(obj) and issubclass(obj, S.LearningRateSchedule)
                  and obj is not S.LearningRateSchedule)


def test_every_schedule_class_has_extreme_cases():
    assert sorted(EXTREMES) == _schedule_classes()      # a new schedule needs its cases here


CASES = [(name, args) for name in sorted(EXTREMES) for args in EXTREMES[name]]


@pytest.mark.parametrize("name, args", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_a_schedule_is_finite_at_any_step(name, args):
    schedule = getattr(S, name)(*args)
    with warnings.catch_warnings():
        warnings.simplefilter("error")                     # no RuntimeWarning either
        with np.errstate(all="raise"):
            values = [schedule(step) for step in STEPS]
    for step, value in zip(STEPS, values):
        assert isinstance(value, float), (step, value)
        assert math.isfinite(value) and 0.0 <= value <= S.MAX_LEARNING_RATE, (step, value)
    rebuilt = S.deserialize(S.serialize(schedule))          # the config round-trips the same
    assert [rebuilt(step) for step in STEPS] == values


def test_growth_saturates_at_the_documented_limit_and_is_exact_before():
    growing = S.ExponentialDecay(1.0, decay_steps=1, decay_rate=1.5)
    assert growing(10) == 1.5 ** 10
    assert growing(1750) == 1.5 ** 1750                     # still finite: the formula
    assert growing(1751) == S.MAX_LEARNING_RATE == np.finfo(np.float64).max
    assert S.StepDecay(1.0, 1, gamma=2.0)(2000) == S.MAX_LEARNING_RATE
    assert S.ExponentialDecay(1.0, TINY, 0.5)(1) == 0.0      # decay to 0, no NaN
    assert S.InverseTimeDecay(2.0, TINY, 0.0)(10 ** 9) == 2.0    # 0 * inf was NaN


def test_a_configuration_without_a_finite_value_is_refused_when_made():
    with pytest.raises(ValueError, match="power"):
        S.PolynomialDecay(1.0, 10, power=-1.0)             # 0 ** -1 at decay_steps


@pytest.mark.parametrize("step", [float("nan"), float("inf"), -1, -0.5, True, "3"])
def test_a_step_that_is_not_a_finite_count_is_refused(step):
    with pytest.raises(ValueError, match="step"):
        S.ExponentialDecay(1.0, 10, 0.5)(step)


def test_fit_past_the_overflow_step_raises_no_overflow_error():
    mn.manual_seed(0)
    model = mn.Sequential([mn.Input((2,)), mn.layers.Dense(1)])
    schedule = S.ExponentialDecay(1e-3, decay_steps=TINY, decay_rate=1.5)   # overflows at step 1
    model.compile(mn.optimizers.SGD(learning_rate=schedule), "mse")
    x = np.ones((8, 2), np.float32)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(x, x[:, :1], epochs=1, batch_size=2, verbose=0, check_finite=True)
    assert model.optimizer.iterations == 4
    assert schedule(model.optimizer.iterations) == S.MAX_LEARNING_RATE
