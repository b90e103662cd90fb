"""Keras 3's optimizers that PyTorch has no twin of, or a different one: ``Ftrl``, ``Lamb``
and ``Adafactor`` (Keras's update formulas, written out per parameter), and
``LossScaleOptimizer`` (a pass-through in minnet's float32/float64 training).

``torch.optim.Adafactor`` (PyTorch 2.5+) is a different variant (no ``clip_threshold``,
another step-size rule); minnet's ``Adafactor`` is Keras's. Adafactor's factored second
moment uses the last two axes of a weight: for a Dense kernel minnet's ``(out, in)`` gives
Keras's ``(in, out)`` estimate (the factorisation is symmetric under the transpose), for a
convolution kernel ``(F, C, kh, kw)`` it factors over ``(kh, kw)`` where Keras's
``(kh, kw, C, F)`` factors over ``(C, F)``.
"""
import math

import numpy as np

from minnet import _registry
from minnet.optimizers.optimizer import Optimizer, check_number

__all__ = ["Ftrl", "Lamb", "Adafactor", "LossScaleOptimizer"]


class Ftrl(Optimizer):
    """Follow The Regularized Leader (McMahan et al., 2013), Keras's ``Ftrl``.

    Per element, with accumulator ``n`` (starting at ``initial_accumulator_value``), linear
    term ``z`` (starting at 0), ``p = -learning_rate_power`` and ``l2 = l2_regularization_strength
    + beta / (2 lr)``::

        g_s = g + 2 * l2_shrinkage_regularization_strength * w
        n_new = n + g**2
        z = z + g_s - (n_new**p - n**p) / lr * w
        w = (clip(z, -l1, l1) - z) / (n_new**p / lr + 2 * l2)
        n = n_new

    Args:
        learning_rate (0.001), learning_rate_power (-0.5, <= 0), initial_accumulator_value
        (0.1, >= 0), l1_regularization_strength, l2_regularization_strength,
        l2_shrinkage_regularization_strength, beta (all >= 0), weight_decay, clipnorm,
        clipvalue, global_clipnorm, name: as Keras.
    """

    _hyper_names = ("learning_rate_power", "initial_accumulator_value",
                    "l1_regularization_strength", "l2_regularization_strength",
                    "l2_shrinkage_regularization_strength", "beta", "weight_decay")
    _n_work = 0

    def __init__(self, params=None, learning_rate=0.001, learning_rate_power=-0.5,
                 initial_accumulator_value=0.1, l1_regularization_strength=0.0,
                 l2_regularization_strength=0.0, l2_shrinkage_regularization_strength=0.0,
                 beta=0.0, weight_decay=None, clipnorm=None, clipvalue=None, global_clipnorm=None,
                 name=None, **kwargs):
        self.learning_rate_power = check_number("learning_rate_power", learning_rate_power,
                                                high=0)
        self.initial_accumulator_value = check_number("initial_accumulator_value",
                                                      initial_accumulator_value, low=0)
        self.l1_regularization_strength = check_number("l1_regularization_strength",
                                                       l1_regularization_strength, low=0)
        self.l2_regularization_strength = check_number("l2_regularization_strength",
                                                       l2_regularization_strength, low=0)
        self.l2_shrinkage_regularization_strength = check_number(
            "l2_shrinkage_regularization_strength", l2_shrinkage_regularization_strength, low=0)
        self.beta = check_number("beta", beta, low=0)
        self.weight_decay = check_number("weight_decay", weight_decay or 0.0, low=0)
        super().__init__(params, learning_rate, clipnorm, clipvalue, global_clipnorm, name, **kwargs)

    def _update(self, data, grad, state, lr, work):
        if not state:
            state["accumulator"] = np.full_like(data, self.initial_accumulator_value)
            state["linear"] = np.zeros_like(data)
        n, z = state["accumulator"], state["linear"]
        power = -self.learning_rate_power
        l2 = self.l2_regularization_strength + self.beta / (2.0 * lr)
        shrunk = grad + 2.0 * self.l2_shrinkage_regularization_strength * data
        n_new = n + grad * grad
        z += shrunk - (n_new ** power - n ** power) / lr * data
        quadratic = n_new ** power / lr + 2.0 * l2
        l1 = self.l1_regularization_strength
        data[...] = (np.clip(z, -l1, l1) - z) / quadratic
        n[...] = n_new


class Lamb(Optimizer):
    """LAMB (You et al., 2019), Keras's ``Lamb``: Adam's direction rescaled per weight tensor
    by the trust ratio ``||w|| / ||update||`` (1 when either norm is 0)::

        m = m + (1 - beta_1) * (g - m);  v = v + (1 - beta_2) * (g**2 - v)
        update = (m / (1 - beta_1**t)) / (sqrt(v / (1 - beta_2**t)) + epsilon)
        w = w - ratio * learning_rate * update
    """

    _hyper_names = ("beta_1", "beta_2", "epsilon", "weight_decay")
    _n_work = 0

    def __init__(self, params=None, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 weight_decay=None, clipnorm=None, clipvalue=None, global_clipnorm=None,
                 name=None, **kwargs):
        self.beta_1 = check_number("beta_1", beta_1, low=0, high=1, high_open=True)
        self.beta_2 = check_number("beta_2", beta_2, low=0, high=1, high_open=True)
        self.epsilon = check_number("epsilon", epsilon, low=0)
        self.weight_decay = check_number("weight_decay", weight_decay or 0.0, low=0)
        super().__init__(params, learning_rate, clipnorm, clipvalue, global_clipnorm, name, **kwargs)

    def _update(self, data, grad, state, lr, work):
        if not state:
            state["step"] = 0
            state["m"] = np.zeros_like(data)
            state["v"] = np.zeros_like(data)
        state["step"] = step = state["step"] + 1
        m, v = state["m"], state["v"]
        m += (1.0 - self.beta_1) * (grad - m)
        v += (1.0 - self.beta_2) * (grad * grad - v)
        update = (m / (1.0 - self.beta_1 ** step)) / (
            np.sqrt(v / (1.0 - self.beta_2 ** step)) + self.epsilon)
        w_norm = float(np.sqrt(np.sum(data.astype(np.float64) ** 2)))
        u_norm = float(np.sqrt(np.sum(update.astype(np.float64) ** 2)))
        ratio = w_norm / u_norm if w_norm > 0 and u_norm > 0 else 1.0
        data -= (ratio * lr * update).astype(data.dtype)


def _rms(x):
    return math.sqrt(float(np.mean(np.square(x, dtype=np.float64))))


class Adafactor(Optimizer):
    """Adafactor (Shazeer and Stern, 2018), Keras's ``Adafactor``. At step ``t``::

        rho = min(lr, 1/sqrt(t))   (with relative_step, lr itself is capped the same way)
        alpha = max(epsilon_2, rms(w)) * rho
        beta_2 = 1 - t**beta_2_decay;  G = g**2 + epsilon_1
        rank >= 2: r = beta_2 r + (1 - beta_2) mean(G, -1); c = beta_2 c + (1 - beta_2) mean(G, -2)
                   v = (r / mean(r, -1))[..., None] * c[..., None, :]
        rank < 2:  v = beta_2 v + (1 - beta_2) G
        u = g / sqrt(v);  w = w - alpha * u / max(1, rms(u) / clip_threshold)
    """

    _hyper_names = ("beta_2_decay", "epsilon_1", "epsilon_2", "clip_threshold", "relative_step",
                    "weight_decay")
    _n_work = 0

    def __init__(self, params=None, learning_rate=0.001, beta_2_decay=-0.8, epsilon_1=1e-30,
                 epsilon_2=1e-3, clip_threshold=1.0, relative_step=True, weight_decay=None,
                 clipnorm=None, clipvalue=None, global_clipnorm=None, name=None, **kwargs):
        self.beta_2_decay = check_number("beta_2_decay", beta_2_decay)
        self.epsilon_1 = check_number("epsilon_1", epsilon_1, low=0)
        self.epsilon_2 = check_number("epsilon_2", epsilon_2, low=0)
        self.clip_threshold = check_number("clip_threshold", clip_threshold, low=0, low_open=True)
        self.relative_step = bool(relative_step)
        self.weight_decay = check_number("weight_decay", weight_decay or 0.0, low=0)
        super().__init__(params, learning_rate, clipnorm, clipvalue, global_clipnorm, name, **kwargs)

    def _update(self, data, grad, state, lr, work):
        if not state:
            state["step"] = 0
            if data.ndim >= 2:
                state["r"] = np.zeros(data.shape[:-1], data.dtype)
                state["c"] = np.zeros(data.shape[:-2] + data.shape[-1:], data.dtype)
            state["v"] = np.zeros_like(data)
        state["step"] = step = state["step"] + 1
        schedule = callable(getattr(self, "_learning_rate", None))
        if self.relative_step and not schedule:
            lr = min(lr, 1.0 / math.sqrt(step))
        rho = min(lr, 1.0 / math.sqrt(step))
        alpha = max(self.epsilon_2, _rms(data)) * rho
        squared = grad * grad + self.epsilon_1
        beta_2 = 1.0 - step ** self.beta_2_decay
        v = state["v"]
        if data.ndim >= 2:
            r, c = state["r"], state["c"]
            r[...] = beta_2 * r + (1.0 - beta_2) * squared.mean(axis=-1)
            c[...] = beta_2 * c + (1.0 - beta_2) * squared.mean(axis=-2)
            v[...] = (r / r.mean(axis=-1, keepdims=True))[..., None] * c[..., None, :]
        else:
            v[...] = beta_2 * v + (1.0 - beta_2) * squared
        u = grad / np.sqrt(v)
        u = u / max(1.0, _rms(u) / self.clip_threshold)
        data -= (alpha * u).astype(data.dtype)


class LossScaleOptimizer(Optimizer):
    """Keras's ``LossScaleOptimizer(inner_optimizer, initial_scale=2**15,
    dynamic_growth_steps=2000)`` as a pass-through: minnet trains in float32/float64, so the
    loss is not scaled (``scale_loss`` returns it as is) and the steps are the inner
    optimizer's. Kept from Keras: a step whose gradients hold inf/NaN is skipped and halves
    ``dynamic_scale``; ``dynamic_growth_steps`` finite steps in a row double it."""

    def __init__(self, inner_optimizer, initial_scale=2.0 ** 15, dynamic_growth_steps=2000,
                 name=None, **kwargs):
        if not isinstance(inner_optimizer, Optimizer):
            raise TypeError(f"Invalid value for argument `inner_optimizer`: expected a minnet "
                            f"Optimizer. Received: {type(inner_optimizer).__name__}")
        self.inner_optimizer = inner_optimizer
        self.initial_scale = check_number("initial_scale", initial_scale, low=0, low_open=True)
        self.dynamic_growth_steps = int(check_number("dynamic_growth_steps", dynamic_growth_steps,
                                                     low=1))
        self.dynamic_scale = self.initial_scale
        self._good_steps = 0
        self._delegating = False
        super().__init__(None, inner_optimizer.learning_rate, name=name, **kwargs)
        self._delegating = True
        if inner_optimizer.params:
            self.set_parameters(inner_optimizer.params)

    def set_parameters(self, params):
        self.inner_optimizer.set_parameters(params)
        return super().set_parameters(self.inner_optimizer.params)

    @property
    def learning_rate(self):
        return self.inner_optimizer.learning_rate

    @learning_rate.setter
    def learning_rate(self, value):
        if getattr(self, "_delegating", False):
            self.inner_optimizer.learning_rate = value

    @property
    def iterations(self):
        """The inner optimizer's steps (a skipped non-finite step does not count)."""
        return self.inner_optimizer.iterations

    @iterations.setter
    def iterations(self, value):
        self.inner_optimizer.iterations = value

    def scale_loss(self, loss):
        """The loss to differentiate: unchanged (no float16 training in minnet)."""
        return loss

    def zero_grad(self, set_to_none=True):
        self.inner_optimizer.zero_grad(set_to_none)

    def step(self):
        finite = all(p.grad is None or np.all(np.isfinite(p.grad)) for p in self.params)
        if not finite:
            self.dynamic_scale /= 2.0
            self._good_steps = 0
        else:
            self.inner_optimizer.step()
            self._good_steps += 1
            if self._good_steps >= self.dynamic_growth_steps:
                self.dynamic_scale *= 2.0
                self._good_steps = 0

    def state_dict(self):
        return self.inner_optimizer.state_dict()

    def load_state_dict(self, state_dict):
        self.inner_optimizer.load_state_dict(state_dict)

    def get_config(self):
        return {"name": self.name,
                "inner_optimizer": {"class_name": type(self.inner_optimizer).__name__,
                                    "config": self.inner_optimizer.get_config()},
                "initial_scale": self.initial_scale,
                "dynamic_growth_steps": self.dynamic_growth_steps}

    @classmethod
    def from_config(cls, config):
        inner = _registry.deserialize("optimizer", config["inner_optimizer"])
        return cls(inner, config.get("initial_scale", 2.0 ** 15),
                   config.get("dynamic_growth_steps", 2000), name=config.get("name"))
