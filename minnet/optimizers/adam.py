"""Adam and AdamW (PyTorch's update formulas, Keras argument names and defaults)."""
import math

import numpy as np

from minnet._config import get_num_threads
from minnet._ext import optim_kernels
from minnet.optimizers.optimizer import Optimizer, check_bool, check_number, fusable

__all__ = ["Adam", "AdamW", "lerp_"]


def lerp_(start, end, weight, work):
    """``start += weight * (end - start)`` in place, as ``torch.lerp_`` rounds it."""
    np.subtract(end, start, out=work)
    if weight < 0.5:
        np.multiply(work, weight, out=work)
        np.add(start, work, out=start)
    else:  # torch switches form so that weight=1 gives exactly `end`
        np.multiply(work, 1.0 - weight, out=work)
        np.subtract(end, work, out=start)


class Adam(Optimizer):
    """Adam (``torch.optim.Adam``), optionally AMSGrad.

    The rule for one parameter ``p`` with gradient ``g`` at step ``t = 1, 2, ...``::

        p = p - learning_rate * weight_decay * p          # Keras 3's decoupled decay (= AdamW)
        m = m + (1 - beta_1) * (g - m)
        v = beta_2 * v + (1 - beta_2) * g * g
        v_hat = max(v_hat, v) if amsgrad else v
        denom = sqrt(v_hat) / sqrt(1 - beta_2 ** t) + epsilon
        p = p - learning_rate / (1 - beta_1 ** t) * m / denom

    Note: ``epsilon`` defaults to Keras's 1e-7; PyTorch's default is 1e-8.

    Args:
        params: Parameters to optimize, or None (``model.compile`` sets them).
        learning_rate: float >= 0 or a ``schedules.LearningRateSchedule``.
        beta_1: decay of the first moment, in [0, 1).
        beta_2: decay of the second moment, in [0, 1).
        epsilon: added to the denominator, >= 0.
        amsgrad: use the running maximum of the second moment.
        weight_decay: decoupled decay (Keras 3): ``p -= learning_rate * weight_decay * p``
            before the update, as ``torch.optim.AdamW`` (PyTorch's ``Adam(weight_decay=)``
            is an L2 term instead).
        clipnorm, clipvalue, global_clipnorm: gradient clipping (see ``Optimizer``).
        name: optional name.

    Shape:
        Each state buffer (``exp_avg``, ``exp_avg_sq``, ``max_exp_avg_sq``) has the
        shape of its parameter; ``step`` is an int.

    Example:
        >>> opt = Adam(model.parameters(), learning_rate=1e-3)
        >>> opt.zero_grad(); loss.backward(); opt.step()
    """

    _hyper_names = ("beta_1", "beta_2", "epsilon", "amsgrad", "weight_decay")

    def __init__(self, params=None, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 amsgrad=False, weight_decay=0.0, clipnorm=None, clipvalue=None, global_clipnorm=None,
                 name=None, **kwargs):
        self.beta_1 = check_number("beta_1", beta_1, low=0, high=1, high_open=True)
        self.beta_2 = check_number("beta_2", beta_2, low=0, high=1, high_open=True)
        self.epsilon = check_number("epsilon", epsilon, low=0)
        self.amsgrad = check_bool("amsgrad", amsgrad)
        self.weight_decay = check_number("weight_decay", weight_decay, low=0)
        super().__init__(params, learning_rate, clipnorm, clipvalue, global_clipnorm, name, **kwargs)

    def _update(self, data, grad, state, lr, work):
        if not state:
            state["step"] = 0
            state["exp_avg"] = np.zeros_like(data)
            state["exp_avg_sq"] = np.zeros_like(data)
            if self.amsgrad:
                state["max_exp_avg_sq"] = np.zeros_like(data)
        state["step"] = step = state["step"] + 1
        m, v = state["exp_avg"], state["exp_avg_sq"]
        bias_correction1 = 1.0 - self.beta_1 ** step
        bias_correction2_sqrt = math.sqrt(1.0 - self.beta_2 ** step)
        step_size = lr / bias_correction1
        v_max = None
        if self.amsgrad:
            v_max = state.get("max_exp_avg_sq")
            if v_max is None:  # amsgrad switched on after a state_dict load
                state["max_exp_avg_sq"] = v_max = np.zeros_like(data)
        if fusable(data, grad, m, v, v_max):
            # the same operations in one pass (bit for bit; benchmarks/bench_optimizers.py)
            optim_kernels.adam_step(data, grad, m, v, v_max, 1.0 - self.beta_1, self.beta_2,
                             bias_correction2_sqrt, self.epsilon, step_size,
                             n_threads=get_num_threads())
            return

        lerp_(m, grad, 1.0 - self.beta_1, work)
        np.multiply(v, self.beta_2, out=v)
        np.multiply(grad, grad, out=work)
        np.multiply(work, 1.0 - self.beta_2, out=work)
        np.add(v, work, out=v)
        if v_max is not None:
            np.maximum(v_max, v, out=v_max)
            v = v_max
        np.sqrt(v, out=work)
        np.divide(work, bias_correction2_sqrt, out=work)
        np.add(work, self.epsilon, out=work)
        np.divide(m, work, out=work)
        np.multiply(work, -step_size, out=work)
        np.add(data, work, out=data)


class AdamW(Adam):
    """AdamW (``torch.optim.AdamW``): Adam with decoupled weight decay.

    Before the Adam update (without L2 in the gradient)::

        p = p * (1 - learning_rate * weight_decay)

    Args:
        params: Parameters to optimize, or None (``model.compile`` sets them).
        learning_rate: float >= 0 or a ``schedules.LearningRateSchedule``.
        beta_1, beta_2, epsilon, amsgrad: as ``Adam`` (``epsilon`` default 1e-7, PyTorch 1e-8).
        weight_decay: decoupled decay coefficient (default 0.004, Keras 3's; PyTorch's is 0.01).
        clipnorm, clipvalue, global_clipnorm: gradient clipping (see ``Optimizer``).
        name: optional name.

    Shape:
        As ``Adam``.

    Example:
        >>> opt = AdamW(model.parameters(), learning_rate=1e-3, weight_decay=0.01)
        >>> opt.zero_grad(); loss.backward(); opt.step()
    """

    def __init__(self, params=None, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 amsgrad=False, weight_decay=0.004, clipnorm=None, clipvalue=None, global_clipnorm=None,
                 name=None, **kwargs):
        super().__init__(params, learning_rate, beta_1, beta_2, epsilon, amsgrad, weight_decay,
                         clipnorm, clipvalue, global_clipnorm, name, **kwargs)
