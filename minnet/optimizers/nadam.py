"""Nadam (Keras 3's formula, which is PyTorch's ``NAdam`` with ``momentum_decay=1``)."""
import numpy as np

from minnet.optimizers.adam import lerp_
from minnet.optimizers.optimizer import Optimizer, check_number

__all__ = ["Nadam"]


class Nadam(Optimizer):
    """Nadam: Adam with Nesterov momentum (Keras 3's ``Nadam``).

    The rule for one parameter ``p`` with gradient ``g`` at step ``t = 1, 2, ...``
    (``mu_t = beta_1 * (1 - 0.5 * 0.96**t)``, ``P_t = mu_1 * ... * mu_t``)::

        p = p - learning_rate * weight_decay * p           # Keras 3's decoupled decay
        m = m + (1 - beta_1) * (g - m)
        v = beta_2 * v + (1 - beta_2) * g * g
        denom = sqrt(v / (1 - beta_2**t)) + epsilon
        p = p - learning_rate * ((1 - mu_t) / (1 - P_t) * g
                                 + mu_{t+1} / (1 - P_t * mu_{t+1}) * m) / denom

    This is ``torch.optim.NAdam(momentum_decay=1.0)`` (PyTorch's default 0.004 would slow
    the momentum schedule 250 times; Keras has no such argument).

    Args:
        params: Parameters to optimize, or None (``model.compile`` sets them); a number first
            is the learning rate (``Nadam(1e-3)``).
        learning_rate: float >= 0 or a ``schedules.LearningRateSchedule``.
        beta_1, beta_2: decay of the first and second moments, in [0, 1).
        epsilon: added to the denominator, >= 0 (Keras's 1e-7; PyTorch's 1e-8).
        weight_decay: decoupled decay (Keras 3).
        clipnorm, clipvalue, global_clipnorm: gradient clipping (see ``Optimizer``).
        name: optional name.

    Shape:
        ``exp_avg``, ``exp_avg_sq`` have the shape of their parameter; ``step`` is an int
        and ``mu_product`` a float.

    Example:
        >>> opt = Nadam(model.parameters(), learning_rate=1e-3)
        >>> opt.zero_grad(); loss.backward(); opt.step()
    """

    _hyper_names = ("beta_1", "beta_2", "epsilon", "weight_decay")
    _scalar_state = ("mu_product",)

    def __init__(self, params=None, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 weight_decay=0.0, clipnorm=None, clipvalue=None, global_clipnorm=None, name=None,
                 **kwargs):
        self.beta_1 = check_number("beta_1", beta_1, low=0, high=1, high_open=True)
        self.beta_2 = check_number("beta_2", beta_2, low=0, high=1, high_open=True)
        self.epsilon = check_number("epsilon", epsilon, low=0)
        self.weight_decay = check_number("weight_decay", weight_decay or 0.0, low=0)
        super().__init__(params, learning_rate, clipnorm, clipvalue, global_clipnorm, name, **kwargs)

    def _needs_grad_copy(self):
        return True

    def _update(self, data, grad, state, lr, work):
        if not state:
            state["step"] = 0
            state["mu_product"] = 1.0
            state["exp_avg"] = np.zeros_like(data)
            state["exp_avg_sq"] = np.zeros_like(data)
        state["step"] = step = state["step"] + 1
        mu = self.beta_1 * (1.0 - 0.5 * 0.96 ** step)
        mu_next = self.beta_1 * (1.0 - 0.5 * 0.96 ** (step + 1))
        state["mu_product"] = mu_product = state["mu_product"] * mu
        m, v = state["exp_avg"], state["exp_avg_sq"]
        lerp_(m, grad, 1.0 - self.beta_1, work)
        np.multiply(v, self.beta_2, out=v)
        np.multiply(grad, grad, out=work)
        np.multiply(work, 1.0 - self.beta_2, out=work)
        np.add(v, work, out=v)
        # denom in `work`; the two Nesterov terms are added to p one after the other (torch)
        np.divide(v, 1.0 - self.beta_2 ** step, out=work)
        np.sqrt(work, out=work)
        np.add(work, self.epsilon, out=work)
        scale_grad = -lr * (1.0 - mu) / (1.0 - mu_product)
        scale_m = -lr * mu_next / (1.0 - mu_product * mu_next)
        np.divide(grad, work, out=grad)          # grad is a scratch copy (_needs_grad_copy)
        np.multiply(grad, scale_grad, out=grad)
        np.add(data, grad, out=data)
        np.divide(m, work, out=work)
        np.multiply(work, scale_m, out=work)
        np.add(data, work, out=data)
