"""Stochastic gradient descent with momentum, dampening, Nesterov and decoupled weight decay."""
import numpy as np

from minnet._config import get_num_threads
from minnet._ext import optim_kernels
from minnet.optimizers.optimizer import Optimizer, check_bool, check_number, fusable

__all__ = ["SGD"]


class SGD(Optimizer):
    """Stochastic gradient descent (PyTorch's ``torch.optim.SGD`` update, Keras argument names).

    The rule for one parameter ``p`` with gradient ``g`` (``b`` is the momentum buffer)::

        p = p - learning_rate * weight_decay * p  # Keras 3's decoupled decay, before the update
        if momentum != 0:
            b = g if first step else momentum * b + (1 - dampening) * g
            g = g + momentum * b if nesterov else b
        p = p - learning_rate * g

    Args:
        params: Parameters to optimize, or None (``model.compile`` sets them).
        learning_rate: float >= 0 or a ``schedules.LearningRateSchedule``.
        momentum: float >= 0.
        nesterov: use Nesterov momentum (needs ``momentum > 0`` and ``dampening == 0``).
        weight_decay: decoupled decay (Keras 3): ``p -= learning_rate * weight_decay * p``
            before each update (PyTorch's ``SGD(weight_decay=)`` is an L2 term instead).
        dampening: dampening of the momentum buffer update.
        clipnorm, clipvalue, global_clipnorm: gradient clipping (see ``Optimizer``).
        name: optional name.

    Shape:
        Each state buffer has the shape of its parameter.

    Example:
        >>> opt = SGD(model.parameters(), learning_rate=0.1, momentum=0.9)
        >>> opt.zero_grad(); loss.backward(); opt.step()
    """

    _hyper_names = ("momentum", "nesterov", "weight_decay", "dampening")

    def __init__(self, params=None, learning_rate=0.01, momentum=0.0, nesterov=False, weight_decay=0.0,
                 dampening=0.0, clipnorm=None, clipvalue=None, global_clipnorm=None, name=None,
                 **kwargs):
        self.momentum = check_number("momentum", momentum, low=0)
        self.nesterov = check_bool("nesterov", nesterov)
        self.weight_decay = check_number("weight_decay", weight_decay, low=0)
        self.dampening = check_number("dampening", dampening, low=0, high=1)
        if self.nesterov and (self.momentum <= 0 or self.dampening != 0):
            raise ValueError("Nesterov momentum requires `momentum` > 0 and `dampening` == 0. "
                             f"Received: momentum={momentum}, dampening={dampening}")
        super().__init__(params, learning_rate, clipnorm, clipvalue, global_clipnorm, name, **kwargs)

    def _needs_grad_copy(self):
        return self.nesterov

    def _update(self, data, grad, state, lr, work):
        buf = None
        first = False
        if self.momentum != 0:
            buf = state.get("momentum_buffer")
            if buf is None:
                state["momentum_buffer"] = buf = np.array(grad, dtype=data.dtype, copy=True)
                first = True
        if fusable(data, grad, buf):
            # the same operations in one pass (bit for bit; benchmarks/bench_optimizers.py)
            optim_kernels.sgd_step(data, grad, buf, self.momentum, self.dampening, self.nesterov,
                            not first, lr, n_threads=get_num_threads())
            return
        if buf is not None:
            if not first:
                np.multiply(buf, self.momentum, out=buf)
                if self.dampening != 0:
                    np.multiply(grad, 1.0 - self.dampening, out=work)
                    np.add(buf, work, out=buf)
                else:
                    np.add(buf, grad, out=buf)
            if self.nesterov:
                np.multiply(buf, self.momentum, out=work)
                np.add(grad, work, out=grad)
            else:
                grad = buf
        np.multiply(grad, lr, out=work)
        np.subtract(data, work, out=data)
