"""Lion (Keras 3's update formula and argument names; PyTorch has no Lion)."""
import numpy as np

from minnet.optimizers.optimizer import Optimizer, check_number

__all__ = ["Lion"]


class Lion(Optimizer):
    """Lion, "EvoLved Sign Momentum" (Chen et al., 2023), as Keras 3's ``Lion``.

    The rule for one parameter ``p`` with gradient ``g``::

        p = p - learning_rate * weight_decay * p           # Keras 3's decoupled decay
        p = p - learning_rate * sign(beta_1 * m + (1 - beta_1) * g)
        m = beta_2 * m + (1 - beta_2) * g

    Args:
        params: Parameters to optimize, or None; a number first is the learning rate.
        learning_rate: float >= 0 or a schedule (default 0.001; Lion wants 3-10x less than Adam).
        beta_1: interpolation for the update direction, in [0, 1].
        beta_2: decay of the momentum, in [0, 1].
        weight_decay: decoupled decay (Keras 3).
        clipnorm, clipvalue, global_clipnorm: gradient clipping (see ``Optimizer``).
        name: optional name.

    Shape:
        ``exp_avg`` has the shape of its parameter.

    Example:
        >>> opt = Lion(model.parameters(), learning_rate=1e-4)
        >>> opt.zero_grad(); loss.backward(); opt.step()
    """

    _hyper_names = ("beta_1", "beta_2", "weight_decay")

    def __init__(self, params=None, learning_rate=0.001, beta_1=0.9, beta_2=0.99, weight_decay=0.0,
                 clipnorm=None, clipvalue=None, global_clipnorm=None, name=None, **kwargs):
        self.beta_1 = check_number("beta_1", beta_1, low=0, high=1)
        self.beta_2 = check_number("beta_2", beta_2, low=0, high=1)
        if self.beta_1 <= 0 or self.beta_1 > 1:
            raise ValueError(f"Invalid value for argument `beta_1`: expected a float in (0, 1]. "
                             f"Received: beta_1={beta_1!r}")
        self.weight_decay = check_number("weight_decay", weight_decay or 0.0, low=0)
        super().__init__(params, learning_rate, clipnorm, clipvalue, global_clipnorm, name, **kwargs)

    def _update(self, data, grad, state, lr, work):
        if not state:
            state["exp_avg"] = np.zeros_like(data)
        m = state["exp_avg"]
        other = self._scratch(2, data.shape, data.dtype)    # a second shared scratch slot
        np.multiply(m, self.beta_1, out=work)
        np.multiply(grad, 1.0 - self.beta_1, out=other)
        np.add(work, other, out=work)
        np.sign(work, out=work)
        np.multiply(work, lr, out=work)
        np.subtract(data, work, out=data)
        np.multiply(m, self.beta_2, out=m)
        np.multiply(grad, 1.0 - self.beta_2, out=other)
        np.add(m, other, out=m)
