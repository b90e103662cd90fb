"""RMSprop (PyTorch's update formula, Keras argument names and defaults)."""
import numpy as np

from minnet.optimizers.adam import lerp_
from minnet.optimizers.optimizer import Optimizer, check_bool, check_number

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """RMSprop (``torch.optim.RMSprop`` with ``alpha = rho``).

    The rule for one parameter ``p`` with gradient ``g``::

        p = p - learning_rate * weight_decay * p  # Keras 3's decoupled decay, before the update
        v = rho * v + (1 - rho) * g * g
        if centered:
            a = a + (1 - rho) * (g - a)           # running mean of g
            denom = sqrt(v - a * a) + epsilon
        else:
            denom = sqrt(v) + epsilon             # epsilon outside the sqrt, as PyTorch
        if momentum > 0:
            b = momentum * b + g / denom
            p = p - learning_rate * b
        else:
            p = p - learning_rate * g / denom

    Note: Keras defaults (``rho=0.9``, ``epsilon=1e-7``); PyTorch uses ``alpha=0.99``, ``eps=1e-8``.

    Args:
        params: Parameters to optimize, or None (``model.compile`` sets them).
        learning_rate: float >= 0 or a ``schedules.LearningRateSchedule``.
        rho: decay of the squared-gradient average, in [0, 1).
        momentum: float >= 0.
        epsilon: added to the denominator, >= 0.
        centered: normalise by the estimated variance instead of the second moment.
        weight_decay: decoupled decay (Keras 3): ``p -= learning_rate * weight_decay * p``.
        clipnorm, clipvalue, global_clipnorm: gradient clipping (see ``Optimizer``).
        name: optional name.

    Shape:
        Each state buffer has the shape of its parameter.

    Example:
        >>> opt = RMSprop(model.parameters(), learning_rate=1e-3, momentum=0.9)
        >>> opt.zero_grad(); loss.backward(); opt.step()
    """

    _hyper_names = ("rho", "momentum", "epsilon", "centered", "weight_decay")

    def __init__(self, params=None, learning_rate=0.001, rho=0.9, momentum=0.0, epsilon=1e-7,
                 centered=False, weight_decay=0.0, clipnorm=None, clipvalue=None, global_clipnorm=None,
                 name=None, **kwargs):
        self.rho = check_number("rho", rho, low=0, high=1, high_open=True)
        self.momentum = check_number("momentum", momentum, low=0)
        self.epsilon = check_number("epsilon", epsilon, low=0)
        self.centered = check_bool("centered", centered)
        self.weight_decay = check_number("weight_decay", weight_decay, low=0)
        super().__init__(params, learning_rate, clipnorm, clipvalue, global_clipnorm, name, **kwargs)

    def _update(self, data, grad, state, lr, work):
        if not state:
            state["step"] = 0
            state["square_avg"] = np.zeros_like(data)
        state["step"] += 1
        if self.momentum > 0 and "momentum_buffer" not in state:
            state["momentum_buffer"] = np.zeros_like(data)
        if self.centered and "grad_avg" not in state:
            state["grad_avg"] = np.zeros_like(data)

        v = state["square_avg"]
        np.multiply(v, self.rho, out=v)
        np.multiply(grad, grad, out=work)
        np.multiply(work, 1.0 - self.rho, out=work)
        np.add(v, work, out=v)
        if self.centered:
            a = state["grad_avg"]
            lerp_(a, grad, 1.0 - self.rho, work)
            np.multiply(a, a, out=work)
            np.subtract(v, work, out=work)
            np.sqrt(work, out=work)
        else:
            np.sqrt(v, out=work)
        np.add(work, self.epsilon, out=work)
        np.divide(grad, work, out=work)
        if self.momentum > 0:
            buf = state["momentum_buffer"]
            np.multiply(buf, self.momentum, out=buf)
            np.add(buf, work, out=buf)
            np.multiply(buf, lr, out=work)
        else:
            np.multiply(work, lr, out=work)
        np.subtract(data, work, out=data)
