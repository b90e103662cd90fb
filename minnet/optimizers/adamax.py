"""Adamax (PyTorch's update formula, Keras argument names and defaults)."""
import numpy as np

from minnet.optimizers.adam import lerp_
from minnet.optimizers.optimizer import Optimizer, check_number

__all__ = ["Adamax"]


class Adamax(Optimizer):
    """Adamax: Adam with the infinity norm (``torch.optim.Adamax``).

    The rule for one parameter ``p`` with gradient ``g`` at step ``t = 1, 2, ...``::

        p = p - learning_rate * weight_decay * p           # Keras 3's decoupled decay
        m = m + (1 - beta_1) * (g - m)
        u = max(beta_2 * u, abs(g) + epsilon)
        p = p - learning_rate / (1 - beta_1**t) * m / u

    Note: PyTorch adds ``epsilon`` inside the maximum, Keras to ``u`` afterwards
    (``m / (u + epsilon)``); the two differ only while ``abs(g)`` is below ``epsilon``.

    Args:
        params: Parameters to optimize, or None; a number first is the learning rate.
        learning_rate: float >= 0 or a schedule (Keras default 0.001; PyTorch 0.002).
        beta_1, beta_2: decay rates in [0, 1).
        epsilon: >= 0 (Keras's 1e-7; PyTorch's 1e-8).
        weight_decay: decoupled decay (Keras 3).
        clipnorm, clipvalue, global_clipnorm: gradient clipping (see ``Optimizer``).
        name: optional name.

    Shape:
        ``exp_avg`` and ``exp_inf`` have the shape of their parameter; ``step`` is an int.

    Example:
        >>> opt = Adamax(model.parameters(), learning_rate=2e-3)
        >>> opt.zero_grad(); loss.backward(); opt.step()
    """

    _hyper_names = ("beta_1", "beta_2", "epsilon", "weight_decay")

    def __init__(self, params=None, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 weight_decay=0.0, clipnorm=None, clipvalue=None, global_clipnorm=None, name=None,
                 **kwargs):
        self.beta_1 = check_number("beta_1", beta_1, low=0, high=1, high_open=True)
        self.beta_2 = check_number("beta_2", beta_2, low=0, high=1, high_open=True)
        self.epsilon = check_number("epsilon", epsilon, low=0)
        self.weight_decay = check_number("weight_decay", weight_decay or 0.0, low=0)
        super().__init__(params, learning_rate, clipnorm, clipvalue, global_clipnorm, name, **kwargs)

    def _update(self, data, grad, state, lr, work):
        if not state:
            state["step"] = 0
            state["exp_avg"] = np.zeros_like(data)
            state["exp_inf"] = np.zeros_like(data)
        state["step"] = step = state["step"] + 1
        m, u = state["exp_avg"], state["exp_inf"]
        lerp_(m, grad, 1.0 - self.beta_1, work)
        np.multiply(u, self.beta_2, out=u)
        np.abs(grad, out=work)
        np.add(work, self.epsilon, out=work)
        np.maximum(u, work, out=u)
        np.divide(m, u, out=work)
        np.multiply(work, -lr / (1.0 - self.beta_1 ** step), out=work)
        np.add(data, work, out=data)
