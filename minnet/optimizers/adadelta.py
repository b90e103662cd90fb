"""Adadelta (PyTorch's and Keras's update formula, Keras argument names and defaults)."""
import numpy as np

from minnet.optimizers.optimizer import Optimizer, check_number

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    """Adadelta (``torch.optim.Adadelta``; Keras 3's ``Adadelta`` computes the same).

    The rule for one parameter ``p`` with gradient ``g``::

        p = p - learning_rate * weight_decay * p           # Keras 3's decoupled decay
        s = rho * s + (1 - rho) * g * g
        delta = sqrt(d + epsilon) / sqrt(s + epsilon) * g
        d = rho * d + (1 - rho) * delta * delta
        p = p - learning_rate * delta

    Note: Keras defaults (``learning_rate=0.001``, ``rho=0.95``, ``epsilon=1e-7``);
    PyTorch's are 1.0, 0.9 and 1e-6.

    Args:
        params: Parameters to optimize, or None; a number first is the learning rate.
        learning_rate: float >= 0 or a schedule.
        rho: decay rate in [0, 1).
        epsilon: >= 0.
        weight_decay: decoupled decay (Keras 3).
        clipnorm, clipvalue, global_clipnorm: gradient clipping (see ``Optimizer``).
        name: optional name.

    Shape:
        ``square_avg`` and ``acc_delta`` have the shape of their parameter.

    Example:
        >>> opt = Adadelta(model.parameters(), learning_rate=1.0)
        >>> opt.zero_grad(); loss.backward(); opt.step()
    """

    _hyper_names = ("rho", "epsilon", "weight_decay")

    def __init__(self, params=None, learning_rate=0.001, rho=0.95, epsilon=1e-7, weight_decay=0.0,
                 clipnorm=None, clipvalue=None, global_clipnorm=None, name=None, **kwargs):
        self.rho = check_number("rho", rho, low=0, high=1, high_open=True)
        self.epsilon = check_number("epsilon", epsilon, low=0)
        self.weight_decay = check_number("weight_decay", weight_decay or 0.0, low=0)
        super().__init__(params, learning_rate, clipnorm, clipvalue, global_clipnorm, name, **kwargs)

    def _needs_grad_copy(self):
        return True

    def _update(self, data, grad, state, lr, work):
        if not state:
            state["square_avg"] = np.zeros_like(data)
            state["acc_delta"] = np.zeros_like(data)
        s, d = state["square_avg"], state["acc_delta"]
        np.multiply(s, self.rho, out=s)
        np.multiply(grad, grad, out=work)
        np.multiply(work, 1.0 - self.rho, out=work)
        np.add(s, work, out=s)
        np.add(s, self.epsilon, out=work)
        np.sqrt(work, out=work)                  # std
        np.divide(grad, work, out=grad)          # grad is a scratch copy (_needs_grad_copy)
        np.add(d, self.epsilon, out=work)
        np.sqrt(work, out=work)
        np.multiply(work, grad, out=grad)        # delta, as torch: sqrt(d + eps) / std * g
        np.multiply(d, self.rho, out=d)
        np.multiply(grad, grad, out=work)
        np.multiply(work, 1.0 - self.rho, out=work)
        np.add(d, work, out=d)
        np.multiply(grad, -lr, out=grad)
        np.add(data, grad, out=data)
