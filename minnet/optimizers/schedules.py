"""Learning-rate schedules: the learning rate as a function of the optimizer step.

A schedule is passed as ``learning_rate=`` to any optimizer; the optimizer evaluates
it at its ``iterations`` counter (0 for the first step) before every update, as Keras
does.  The formulas are Keras 3's (``keras.optimizers.schedules``); ``StepDecay`` is
PyTorch's ``StepLR`` counted in optimizer steps and ``LinearWarmup`` wraps any
schedule or constant with a linear ramp.

Every schedule gives a finite value at any finite step >= 0: where a formula's value would
leave the float range (``ExponentialDecay`` with ``decay_rate > 1``, ``StepDecay`` with
``gamma > 1``, a tiny ``decay_steps``), the schedule saturates at ``MAX_LEARNING_RATE`` (the
largest float64), and a configuration that has no finite value at some step (``PolynomialDecay``
with a negative ``power``) is refused when the schedule is made.

Example:
    >>> from minnet.optimizers import SGD, schedules
    >>> lr = schedules.ExponentialDecay(0.1, decay_steps=100, decay_rate=0.5)
    >>> lr(100)
    0.05
"""
import math
import numbers
import sys

from minnet import _registry

__all__ = [
    "LearningRateSchedule",
    "ExponentialDecay",
    "InverseTimeDecay",
    "PiecewiseConstantDecay",
    "StepDecay",
    "PolynomialDecay",
    "CosineDecay",
    "LinearWarmup",
    "CosineDecayRestarts",
    "serialize",
    "deserialize",
    "get",
]


def _check_number(name, value, low=None, high=None, low_open=False, high_open=False, integer=False):
    """Return ``value`` as a float (or int), raising a ValueError/TypeError that names it."""
    kind = "an int" if integer else "a number"
    ok_type = isinstance(value, numbers.Integral) if integer else isinstance(value, numbers.Real)
    if isinstance(value, bool) or not ok_type:
        raise TypeError(f"Invalid value for argument `{name}`: expected {kind}. "
                        f"Received: {name}={value!r} of type {type(value).__name__}")
    value = int(value) if integer else float(value)
    bad = not math.isfinite(value)
    if low is not None:
        bad = bad or (value <= low if low_open else value < low)
    if high is not None:
        bad = bad or (value >= high if high_open else value > high)
    if bad:
        lo = "" if low is None else (f"> {low}" if low_open else f">= {low}")
        hi = "" if high is None else (f"< {high}" if high_open else f"<= {high}")
        expect = " and ".join(s for s in (lo, hi) if s) or "finite"
        raise ValueError(f"Invalid value for argument `{name}`: expected {kind} {expect}. "
                         f"Received: {name}={value!r}")
    return value


def _check_step(step):
    if isinstance(step, numbers.Integral) and not isinstance(step, bool) and step >= 0:
        return float(min(step, 2 ** 1023))      # an int beyond the float range: the limit
    if isinstance(step, bool) or not isinstance(step, numbers.Real) or not math.isfinite(step) or step < 0:
        raise ValueError(f"Invalid value for argument `step`: expected a finite non-negative number. "
                         f"Received: step={step!r}")
    return float(step)


# The largest value a schedule returns: its formula's value where that is finite, else this
# (the largest float64), so a growing schedule (decay_rate > 1, gamma > 1) saturates instead of
# raising OverflowError from inside fit.
MAX_LEARNING_RATE = sys.float_info.max


def _scaled_power(scale, base, exponent):
    """``scale * base ** exponent`` for scale >= 0 and base > 0, saturated at MAX_LEARNING_RATE."""
    if scale == 0.0:
        return 0.0
    try:
        value = scale * base ** exponent
    except OverflowError:           # base ** exponent beyond the float range
        return MAX_LEARNING_RATE
    return min(value, MAX_LEARNING_RATE)


def _ratio(step, steps, staircase=False):
    """``step / steps`` (floored with ``staircase``), saturated instead of inf or OverflowError."""
    ratio = step / steps
    if not math.isfinite(ratio):    # a tiny `steps`
        return MAX_LEARNING_RATE
    return float(math.floor(ratio)) if staircase else ratio


class LearningRateSchedule:
    """Base class: a learning rate that depends on the optimizer step.

    Subclasses implement ``__call__(step) -> float`` and ``get_config()``.

    Example:
        >>> class Halving(LearningRateSchedule):
        ...     def __init__(self, lr): self.lr = lr
        ...     def __call__(self, step): return self.lr * 0.5 ** step
        ...     def get_config(self): return {"lr": self.lr}
    """

    def __call__(self, step):
        raise NotImplementedError(f"{type(self).__name__} must implement __call__(step).")

    def get_config(self):
        raise NotImplementedError(f"{type(self).__name__} must implement get_config().")

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        return f"{type(self).__name__}({args})"


class ExponentialDecay(LearningRateSchedule):
    """``lr(step) = initial_learning_rate * decay_rate ** (step / decay_steps)``.

    With ``staircase=True`` the exponent is ``floor(step / decay_steps)``.

    Args:
        initial_learning_rate: learning rate at step 0.
        decay_steps: positive number of steps for one factor of ``decay_rate``.
        decay_rate: multiplicative factor (> 0).
        staircase: decay in discrete jumps.
    """

    def __init__(self, initial_learning_rate, decay_steps, decay_rate, staircase=False):
        self.initial_learning_rate = _check_number("initial_learning_rate", initial_learning_rate, low=0)
        self.decay_steps = _check_number("decay_steps", decay_steps, low=0, low_open=True)
        self.decay_rate = _check_number("decay_rate", decay_rate, low=0, low_open=True)
        self.staircase = bool(staircase)

    def __call__(self, step):
        p = _ratio(_check_step(step), self.decay_steps, self.staircase)
        return _scaled_power(self.initial_learning_rate, self.decay_rate, p)

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate, "decay_steps": self.decay_steps,
                "decay_rate": self.decay_rate, "staircase": self.staircase}


class InverseTimeDecay(LearningRateSchedule):
    """``lr(step) = initial_learning_rate / (1 + decay_rate * step / decay_steps)``.

    Args:
        initial_learning_rate: learning rate at step 0.
        decay_steps: positive number of steps.
        decay_rate: non-negative rate.
        staircase: use ``floor(step / decay_steps)``.
    """

    def __init__(self, initial_learning_rate, decay_steps, decay_rate, staircase=False):
        self.initial_learning_rate = _check_number("initial_learning_rate", initial_learning_rate, low=0)
        self.decay_steps = _check_number("decay_steps", decay_steps, low=0, low_open=True)
        self.decay_rate = _check_number("decay_rate", decay_rate, low=0)
        self.staircase = bool(staircase)

    def __call__(self, step):
        p = _ratio(_check_step(step), self.decay_steps, self.staircase)
        if self.decay_rate == 0.0:
            return self.initial_learning_rate
        return self.initial_learning_rate / (1.0 + min(self.decay_rate * p, MAX_LEARNING_RATE))

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate, "decay_steps": self.decay_steps,
                "decay_rate": self.decay_rate, "staircase": self.staircase}


class PiecewiseConstantDecay(LearningRateSchedule):
    """``values[0]`` for ``step <= boundaries[0]``, ``values[1]`` up to ``boundaries[1]``, ...

    Args:
        boundaries: increasing list of step numbers.
        values: list of learning rates, one more than ``boundaries``.
    """

    def __init__(self, boundaries, values):
        boundaries = list(boundaries)
        values = list(values)
        if len(values) != len(boundaries) + 1:
            raise ValueError("Invalid value for argument `values`: expected one more element than "
                             f"`boundaries` ({len(boundaries)}). Received: {len(values)} values")
        self.boundaries = [_check_number(f"boundaries[{i}]", b, low=0) for i, b in enumerate(boundaries)]
        if any(b1 >= b2 for b1, b2 in zip(self.boundaries, self.boundaries[1:])):
            raise ValueError("Invalid value for argument `boundaries`: expected a strictly increasing "
                             f"list. Received: boundaries={boundaries}")
        self.values = [_check_number(f"values[{i}]", v, low=0) for i, v in enumerate(values)]

    def __call__(self, step):
        step = _check_step(step)
        for boundary, value in zip(self.boundaries, self.values):
            if step <= boundary:
                return value
        return self.values[-1]

    def get_config(self):
        return {"boundaries": list(self.boundaries), "values": list(self.values)}


class StepDecay(LearningRateSchedule):
    """``lr(step) = initial_learning_rate * gamma ** (step // step_size)`` (PyTorch ``StepLR``).

    Args:
        initial_learning_rate: learning rate at step 0.
        step_size: positive int, number of optimizer steps between decays.
        gamma: multiplicative factor (> 0).
    """

    def __init__(self, initial_learning_rate, step_size, gamma=0.1):
        self.initial_learning_rate = _check_number("initial_learning_rate", initial_learning_rate, low=0)
        self.step_size = _check_number("step_size", step_size, low=1, integer=True)
        self.gamma = _check_number("gamma", gamma, low=0, low_open=True)

    def __call__(self, step):
        step = _check_step(step)
        return _scaled_power(self.initial_learning_rate, self.gamma, int(step) // self.step_size)

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate, "step_size": self.step_size,
                "gamma": self.gamma}


class PolynomialDecay(LearningRateSchedule):
    """``(initial - end) * (1 - min(step, decay_steps) / decay_steps) ** power + end``.

    With ``cycle=True`` ``decay_steps`` is stretched to the first multiple above ``step``.

    Args:
        initial_learning_rate: learning rate at step 0.
        decay_steps: positive number of steps.
        end_learning_rate: final learning rate.
        power: exponent >= 0 (1.0 is linear decay).
        cycle: restart after ``decay_steps``.
    """

    def __init__(self, initial_learning_rate, decay_steps, end_learning_rate=0.0001, power=1.0,
                 cycle=False):
        self.initial_learning_rate = _check_number("initial_learning_rate", initial_learning_rate, low=0)
        self.decay_steps = _check_number("decay_steps", decay_steps, low=0, low_open=True)
        self.end_learning_rate = _check_number("end_learning_rate", end_learning_rate, low=0)
        # A negative power would make the rate infinite at decay_steps (0 ** -1): refused.
        self.power = _check_number("power", power, low=0)
        self.cycle = bool(cycle)

    def __call__(self, step):
        step = _check_step(step)
        decay_steps = self.decay_steps
        if self.cycle:
            cycles = 1.0 if step == 0 else math.ceil(_ratio(step, decay_steps))
            decay_steps = min(decay_steps * cycles, MAX_LEARNING_RATE)
            step = min(step, decay_steps)
        else:
            step = min(step, decay_steps)
        p = step / decay_steps
        return ((self.initial_learning_rate - self.end_learning_rate) * (1.0 - p) ** self.power
                + self.end_learning_rate)

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate, "decay_steps": self.decay_steps,
                "end_learning_rate": self.end_learning_rate, "power": self.power, "cycle": self.cycle}


class CosineDecay(LearningRateSchedule):
    """Cosine decay with optional linear warmup (Keras 3 ``CosineDecay``).

    Without warmup (``warmup_target=None``)::

        s = min(step, decay_steps)
        lr = initial_learning_rate * ((1 - alpha) * 0.5 * (1 + cos(pi * s / decay_steps)) + alpha)

    With warmup, the rate rises linearly from ``initial_learning_rate`` to
    ``warmup_target`` over ``warmup_steps`` steps and then decays from ``warmup_target``
    as above (step counted from the end of the warmup).

    Args:
        initial_learning_rate: learning rate at step 0.
        decay_steps: positive number of decay steps.
        alpha: final rate as a fraction of the starting one, in [0, 1].
        warmup_target: rate reached at the end of the warmup, or None for no warmup.
        warmup_steps: number of warmup steps.
    """

    def __init__(self, initial_learning_rate, decay_steps, alpha=0.0, warmup_target=None,
                 warmup_steps=0):
        self.initial_learning_rate = _check_number("initial_learning_rate", initial_learning_rate, low=0)
        self.decay_steps = _check_number("decay_steps", decay_steps, low=0, low_open=True)
        self.alpha = _check_number("alpha", alpha, low=0, high=1)
        self.warmup_target = (None if warmup_target is None
                              else _check_number("warmup_target", warmup_target, low=0))
        self.warmup_steps = _check_number("warmup_steps", warmup_steps, low=0)

    def _decay(self, step, decay_from):
        fraction = step / self.decay_steps
        cosine = 0.5 * (1.0 + math.cos(math.pi * fraction))
        return decay_from * ((1.0 - self.alpha) * cosine + self.alpha)

    def __call__(self, step):
        step = _check_step(step)
        if self.warmup_target is None:
            return self._decay(min(step, self.decay_steps), self.initial_learning_rate)
        step = min(step, self.decay_steps + self.warmup_steps)
        if step < self.warmup_steps:
            fraction = step / self.warmup_steps
            return (self.warmup_target - self.initial_learning_rate) * fraction + self.initial_learning_rate
        return self._decay(step - self.warmup_steps, self.warmup_target)

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate, "decay_steps": self.decay_steps,
                "alpha": self.alpha, "warmup_target": self.warmup_target,
                "warmup_steps": self.warmup_steps}


class LinearWarmup(LearningRateSchedule):
    """Linear ramp from ``start_learning_rate`` to ``after`` over ``warmup_steps``, then ``after``.

    ``lr(step) = start + (after(0) - start) * step / warmup_steps`` while
    ``step < warmup_steps``, and ``after(step - warmup_steps)`` afterwards.

    Args:
        after: a float or a LearningRateSchedule used once the warmup is over.
        warmup_steps: positive int.
        start_learning_rate: rate at step 0.
    """

    def __init__(self, after, warmup_steps, start_learning_rate=0.0):
        if isinstance(after, dict):
            after = deserialize(after)
        if not isinstance(after, LearningRateSchedule):
            after = _check_number("after", after, low=0)
        self.after = after
        self.warmup_steps = _check_number("warmup_steps", warmup_steps, low=1, integer=True)
        self.start_learning_rate = _check_number("start_learning_rate", start_learning_rate, low=0)

    def _after(self, step):
        return self.after(step) if isinstance(self.after, LearningRateSchedule) else self.after

    def __call__(self, step):
        step = _check_step(step)
        if step < self.warmup_steps:
            target = self._after(0)
            return self.start_learning_rate + (target - self.start_learning_rate) * step / self.warmup_steps
        return self._after(step - self.warmup_steps)

    def get_config(self):
        after = serialize(self.after) if isinstance(self.after, LearningRateSchedule) else self.after
        return {"after": after, "warmup_steps": self.warmup_steps,
                "start_learning_rate": self.start_learning_rate}


def _saturating_power(base, exponent):
    """``base ** exponent`` for ``base >= 0``, saturating at the largest float instead of
    raising OverflowError (the restart count grows without bound with the step)."""
    if base == 0.0:
        return 0.0 if exponent > 0 else 1.0
    logarithm = exponent * math.log(base)
    if logarithm > 709.0:
        return sys.float_info.max
    return math.exp(logarithm)


class CosineDecayRestarts(LearningRateSchedule):
    """Cosine decay with warm restarts (SGDR, Loshchilov and Hutter 2016), Keras 3's formula.

    Period ``i`` lasts ``first_decay_steps * t_mul**i`` steps and starts at
    ``initial_learning_rate * m_mul**i``; inside a period, with ``f`` the fraction done::

        lr = initial_learning_rate * ((1 - alpha) * 0.5 * m_mul**i * (1 + cos(pi * f)) + alpha)

    Args:
        initial_learning_rate: rate at step 0.
        first_decay_steps: positive length of the first period.
        t_mul: growth of each period's length (2.0). m_mul: factor of each restart's rate (1.0).
        alpha: the floor, as a fraction of ``initial_learning_rate``.
        name: kept for Keras's config ("SGDRDecay").
    """

    def __init__(self, initial_learning_rate, first_decay_steps, t_mul=2.0, m_mul=1.0, alpha=0.0,
                 name="SGDRDecay"):
        self.initial_learning_rate = _check_number("initial_learning_rate", initial_learning_rate,
                                                   low=0)
        self.first_decay_steps = _check_number("first_decay_steps", first_decay_steps, low=0,
                                               low_open=True)
        self.t_mul = _check_number("t_mul", t_mul, low=0, low_open=True)
        self.m_mul = _check_number("m_mul", m_mul, low=0)
        self.alpha = _check_number("alpha", alpha, low=0)
        self.name = name

    def __call__(self, step):
        step = _check_step(step)
        try:
            fraction = float(step) / self.first_decay_steps
        except OverflowError:                      # an int beyond the float range
            fraction = math.inf
        fraction = min(fraction, sys.float_info.max)
        if self.t_mul == 1.0:
            restart = math.floor(fraction)
            fraction -= restart
        else:
            growth = 1.0 - fraction * (1.0 - self.t_mul)
            if growth <= 0.0:
                # t_mul < 1: the periods sum to first_decay_steps / (1 - t_mul); past that
                # point (where Keras's formula takes the log of a negative number) the rate
                # stays at its floor.
                return self.initial_learning_rate * self.alpha
            restart = math.floor(math.log(min(growth, sys.float_info.max)) / math.log(self.t_mul))
            scale = _saturating_power(self.t_mul, restart)
            done = (1.0 - scale) / (1.0 - self.t_mul)
            fraction = min(max((fraction - done) / scale, 0.0), 1.0) if scale else 1.0
        cosine = 0.5 * _saturating_power(self.m_mul, restart) * (1.0 + math.cos(math.pi * fraction))
        value = (1.0 - self.alpha) * cosine + self.alpha
        return min(self.initial_learning_rate * value, sys.float_info.max) if value else 0.0

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate,
                "first_decay_steps": self.first_decay_steps, "t_mul": self.t_mul,
                "m_mul": self.m_mul, "alpha": self.alpha, "name": self.name}


for _cls in (ExponentialDecay, InverseTimeDecay, PiecewiseConstantDecay, StepDecay,
             PolynomialDecay, CosineDecay, LinearWarmup, CosineDecayRestarts):
    _registry.register("schedule", _cls)
del _cls


def serialize(schedule):
    """``{"class_name": ..., "config": ...}`` for a schedule (JSON-able)."""
    if not isinstance(schedule, LearningRateSchedule):
        raise TypeError("Invalid value for argument `schedule`: expected a LearningRateSchedule. "
                        f"Received: {type(schedule).__name__}")
    return _registry.serialize("schedule", schedule)


def deserialize(config, custom_objects=None):
    """Rebuild a schedule from ``serialize``'s output."""
    if not isinstance(config, dict):
        raise ValueError("Invalid value for argument `config`: expected a dict with keys "
                         f"'class_name' and 'config'. Received: {config!r}")
    return _registry.deserialize("schedule", config, custom_objects)


def get(identifier, custom_objects=None):
    """A schedule from an instance or a ``serialize`` dict."""
    if isinstance(identifier, LearningRateSchedule):
        return identifier
    if isinstance(identifier, dict):
        return deserialize(identifier, custom_objects)
    raise ValueError(f"Could not interpret learning-rate schedule identifier: {identifier!r}")
