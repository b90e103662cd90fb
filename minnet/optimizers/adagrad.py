"""Adagrad (PyTorch's update formula, Keras argument names and defaults)."""
import numpy as np

from minnet.optimizers.optimizer import Optimizer, check_number

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """Adagrad (``torch.optim.Adagrad``).

    The rule for one parameter ``p`` with gradient ``g`` at step ``t = 1, 2, ...``::

        p = p - learning_rate * weight_decay * p   # Keras 3's decoupled decay, before the update
        s = s + g * g                              # s starts at initial_accumulator_value
        p = p - learning_rate / (1 + (t - 1) * lr_decay) * g / (sqrt(s) + epsilon)

    Note: Keras defaults (``learning_rate=0.001``, ``initial_accumulator_value=0.1``,
    ``epsilon=1e-7``); PyTorch's are 0.01, 0 and 1e-10.

    Args:
        params: Parameters to optimize, or None (``model.compile`` sets them).
        learning_rate: float >= 0 or a ``schedules.LearningRateSchedule``.
        initial_accumulator_value: starting value of the sum of squares, >= 0.
        epsilon: added to the denominator, >= 0.
        weight_decay: decoupled decay (Keras 3): ``p -= learning_rate * weight_decay * p``.
        lr_decay: PyTorch's per-step learning-rate decay (default 0).
        clipnorm, clipvalue, global_clipnorm: gradient clipping (see ``Optimizer``).
        name: optional name.

    Shape:
        The accumulator ``sum`` has the shape of its parameter.

    Example:
        >>> opt = Adagrad(model.parameters(), learning_rate=0.01)
        >>> opt.zero_grad(); loss.backward(); opt.step()
    """

    _hyper_names = ("initial_accumulator_value", "epsilon", "weight_decay", "lr_decay")

    def __init__(self, params=None, learning_rate=0.001, initial_accumulator_value=0.1, epsilon=1e-7,
                 weight_decay=0.0, lr_decay=0.0, clipnorm=None, clipvalue=None, global_clipnorm=None,
                 name=None, **kwargs):
        self.initial_accumulator_value = check_number("initial_accumulator_value",
                                                      initial_accumulator_value, low=0)
        self.epsilon = check_number("epsilon", epsilon, low=0)
        self.weight_decay = check_number("weight_decay", weight_decay, low=0)
        self.lr_decay = check_number("lr_decay", lr_decay, low=0)
        super().__init__(params, learning_rate, clipnorm, clipvalue, global_clipnorm, name, **kwargs)

    def _update(self, data, grad, state, lr, work):
        if not state:
            state["step"] = 0
            state["sum"] = np.full_like(data, self.initial_accumulator_value)
        state["step"] = step = state["step"] + 1
        clr = lr / (1.0 + (step - 1) * self.lr_decay)
        s = state["sum"]
        np.multiply(grad, grad, out=work)
        np.add(s, work, out=s)
        np.sqrt(s, out=work)
        np.add(work, self.epsilon, out=work)
        np.divide(grad, work, out=work)
        np.multiply(work, clr, out=work)
        np.subtract(data, work, out=data)
