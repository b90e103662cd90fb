"""Keras 3's ``Muon`` and ``ScheduleFreeAdamW``. ``Muon`` (Jordan et al. 2024; the "Moonlight" learning-rate match of Liu et al.
2025): momentum orthogonalised by a Newton-Schulz iteration for 2-D weights, AdamW for the
rest.

Which rule a weight gets is Keras's: AdamW when it is not 2-D, when ``exclude_embeddings``
and its name contains "embedding", or when one of the ``exclude_layers`` regular expressions
matches its name (minnet's names are Keras's paths, ``"dense/kernel"``). A Dense kernel is
(out, in) in minnet and (in, out) in Keras; the orthogonalisation and the learning-rate
scale are symmetric under the transpose, so both give the same weights.
"""
import re

import numpy as np

from minnet._checks import check_int
from minnet.optimizers.optimizer import Optimizer, check_number

__all__ = ["Muon", "ScheduleFreeAdamW"]


def newton_schulz5(x, steps, a, b, c):
    """``x`` orthogonalised: scaled to Frobenius norm 1 (+1e-7), then ``steps`` rounds of
    ``x = a x + (b A + c A A) x`` with ``A = x xᵀ``, on the wide orientation (Keras's)."""
    wide = x.shape[0] > x.shape[1]
    if wide:
        x = x.T
    x = x / (np.sqrt(np.sum(x * x)) + 1e-7)
    for _ in range(steps):
        gram = x @ x.T
        x = a * x + (b * gram + c * (gram @ gram)) @ x
    return x.T if wide else x


class Muon(Optimizer):
    """Muon, Keras's ``keras.optimizers.Muon`` (its arguments, defaults and update rules).

    For a 2-D weight ``w`` with momentum ``m``::

        m = momentum * m + g;  u = g + momentum * m (nesterov) or m
        w = w - lr * sqrt(max(rows, cols)) * rms_rate * NS5(u)         (rms_rate None: no scale)

    and every other weight takes AdamW with ``adam_beta_1``, ``adam_beta_2``, ``epsilon`` at
    ``lr * adam_lr_ratio``. Weight decay ``w -= w * wd * lr`` comes first, with
    ``weight_decay`` for the Muon weights and ``adam_weight_decay`` for the others.
    """

    _hyper_names = ("adam_beta_1", "adam_beta_2", "adam_weight_decay", "epsilon",
                    "exclude_layers", "exclude_embeddings", "muon_a", "muon_b", "muon_c",
                    "adam_lr_ratio", "momentum", "ns_steps", "nesterov", "rms_rate")
    _n_work = 0

    def __init__(self, params=None, learning_rate=0.001, adam_beta_1=0.9, adam_beta_2=0.999,
                 adam_weight_decay=0.004, epsilon=1e-7, weight_decay=0.004, clipnorm=None,
                 clipvalue=None, global_clipnorm=None, name=None, exclude_layers=None,
                 exclude_embeddings=True, muon_a=3.4445, muon_b=-4.7750, muon_c=2.0315,
                 adam_lr_ratio=1, momentum=0.95, ns_steps=5, nesterov=True, rms_rate=0.2,
                 **kwargs):
        self.adam_beta_1 = check_number("adam_beta_1", adam_beta_1, low=0, high=1, high_open=True)
        self.adam_beta_2 = check_number("adam_beta_2", adam_beta_2, low=0, high=1, high_open=True)
        self.adam_weight_decay = check_number("adam_weight_decay", adam_weight_decay or 0.0, low=0)
        self.muon_weight_decay = check_number("weight_decay", weight_decay or 0.0, low=0)
        self.weight_decay = 0.0           # applied per rule in _update, not by the base class
        self.epsilon = check_number("epsilon", epsilon, low=0)
        self.exclude_layers = list(exclude_layers or [])
        for pattern in self.exclude_layers:
            if not isinstance(pattern, str):
                raise TypeError(f"Invalid value for argument `exclude_layers`: expected a list of "
                                f"regular expressions (str). Received: {exclude_layers!r}")
        self.exclude_embeddings = bool(exclude_embeddings)
        self.muon_a, self.muon_b, self.muon_c = (check_number(n, v) for n, v in (
            ("muon_a", muon_a), ("muon_b", muon_b), ("muon_c", muon_c)))
        self.adam_lr_ratio = check_number("adam_lr_ratio", adam_lr_ratio, low=0)
        self.momentum = check_number("momentum", momentum, low=0, high=1)
        self.ns_steps = check_int("ns_steps", ns_steps, 0)
        self.nesterov = bool(nesterov)
        self.rms_rate = None if rms_rate is None else check_number("rms_rate", rms_rate, low=0)
        super().__init__(params, learning_rate, clipnorm, clipvalue, global_clipnorm, name, **kwargs)

    def uses_adamw(self, param):
        """Keras's rule: AdamW for this weight (True) or Muon (False)."""
        if param.data.ndim != 2:
            return True
        path = getattr(param, "path", None) or getattr(param, "name", None) or ""
        if self.exclude_embeddings and "embedding" in path.lower():
            return True
        return any(re.search(pattern, path) for pattern in self.exclude_layers)

    def step(self):
        for p, state in zip(self._params or (), self._state):
            if "adamw" not in state:
                state["adamw"] = self.uses_adamw(p)
        super().step()

    def _update(self, data, grad, state, lr, work):
        adamw = state["adamw"]
        decay = self.adam_weight_decay if adamw else self.muon_weight_decay
        if decay:
            data -= data * (decay * lr)
        if "m" not in state:
            state["m"] = np.zeros_like(data)
            if adamw:
                state["v"] = np.zeros_like(data)
        m = state["m"]
        if adamw:
            step = self.iterations + 1
            rate = lr * self.adam_lr_ratio
            alpha = rate * np.sqrt(1 - self.adam_beta_2 ** step) / (1 - self.adam_beta_1 ** step)
            v = state["v"]
            m += (grad - m) * (1 - self.adam_beta_1)
            v += (grad * grad - v) * (1 - self.adam_beta_2)
            data -= (m * alpha) / (np.sqrt(v) + self.epsilon)
            return
        m += grad + m * (self.momentum - 1)
        direction = grad + self.momentum * m if self.nesterov else m
        update = newton_schulz5(direction, self.ns_steps, self.muon_a, self.muon_b, self.muon_c)
        if self.rms_rate is not None:
            update = update * np.sqrt(max(update.shape)) * self.rms_rate
        data -= (lr * update).astype(data.dtype, copy=False)

    def _hyperparameters(self):
        config = super()._hyperparameters()
        config["weight_decay"] = self.muon_weight_decay
        return config


class ScheduleFreeAdamW(Optimizer):
    """Schedule-free AdamW (Defazio et al. 2024), Keras's ``keras.optimizers.ScheduleFreeAdamW``.

    The weight ``y`` is an interpolation of a fast iterate ``z`` (the "momentum", starting at
    the initial weights) and their running average ``x``, so no learning-rate schedule is
    needed. At step ``t`` (``lr`` ramped by ``min(t / warmup_steps, 1)``)::

        v = v + (1 - beta_2) (g² - v);  z = z - lr g / (sqrt(v / (1 - beta_2^t)) + epsilon)
        x_old = (y - (1 - beta_1) z_old) / beta_1;  x = (1 - 1/t) x_old + z / t
        y = (1 - beta_1) z + beta_1 x

    after the decoupled ``weight_decay`` (``y -= y · wd · lr``), as Keras. (Keras evaluates
    with the same ``y``; it does not swap in ``x`` for evaluation.)
    """

    _hyper_names = ("beta_1", "beta_2", "epsilon", "warmup_steps", "weight_decay")
    _n_work = 0

    def __init__(self, params=None, learning_rate=0.0025, beta_1=0.9, beta_2=0.999,
                 epsilon=1e-8, warmup_steps=0, weight_decay=None, clipnorm=None, clipvalue=None,
                 global_clipnorm=None, name=None, **kwargs):
        self.beta_1 = check_number("beta_1", beta_1, low=0, high=1, low_open=True)
        self.beta_2 = check_number("beta_2", beta_2, low=0, high=1, high_open=True)
        self.epsilon = check_number("epsilon", epsilon, low=0)
        self.warmup_steps = check_int("warmup_steps", warmup_steps, 0)
        self.weight_decay = check_number("weight_decay", weight_decay or 0.0, low=0)
        super().__init__(params, learning_rate, clipnorm, clipvalue, global_clipnorm, name, **kwargs)

    def step(self):
        for p, state in zip(self._params or (), self._state):
            if "z" not in state:          # Keras's build: z starts at the weights, before decay
                state["z"] = np.array(p.data, copy=True)
                state["v"] = np.zeros_like(p.data)
        super().step()

    def _update(self, data, grad, state, lr, work):
        t = self.iterations + 1
        if self.warmup_steps > 0:
            lr = lr * min(t / self.warmup_steps, 1.0)
        z, v = state["z"], state["v"]
        z_old = z.copy()
        v += (grad * grad - v) * (1 - self.beta_2)
        z -= lr * grad / (np.sqrt(v / (1 - self.beta_2 ** t)) + self.epsilon)
        x_old = (data - (1 - self.beta_1) * z_old) / self.beta_1
        x = (1 - 1.0 / t) * x_old + z / t
        data[...] = (1 - self.beta_1) * z + self.beta_1 * x
