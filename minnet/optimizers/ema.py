"""Keras's ``use_ema`` for every optimizer: an exponential moving average of the weights.

After each step (Keras's ``_update_model_variables_moving_average``), with ``t`` the number of
steps taken before this one::

    momentum = 0 if t == 0 else ema_momentum
    average = momentum * average + (1 - momentum) * weight

With ``ema_overwrite_frequency=k`` the weights are replaced by their averages after every
``k``-th step (``(t + 1) % k == 0``); ``finalize_variable_values()`` replaces them once, and
``fit`` calls it when training ends (as Keras does). The averages are plain arrays kept by
the optimizer, one per parameter (not part of ``state_dict``).
"""
import numpy as np

__all__ = ["ModelAverage", "pop_ema_arguments", "ema_config", "finalize_variable_values",
           "swap_variables", "copy_weights_into_averages"]


class ModelAverage:
    """The moving averages of one optimizer's parameters."""

    def __init__(self, momentum=0.99, overwrite_frequency=None):
        try:
            momentum = float(momentum)
        except (TypeError, ValueError):
            raise TypeError(f"Invalid value for argument `ema_momentum`: expected a float in "
                            f"[0, 1]. Received: ema_momentum={momentum!r}") from None
        if not 0.0 <= momentum <= 1.0:
            raise ValueError(f"Invalid value for argument `ema_momentum`: expected a float in "
                             f"[0, 1]. Received: ema_momentum={momentum}")
        if overwrite_frequency is not None and (
                isinstance(overwrite_frequency, bool) or
                not isinstance(overwrite_frequency, (int, np.integer)) or overwrite_frequency < 1):
            raise ValueError(f"Invalid value for argument `ema_overwrite_frequency`: expected an "
                             f"int >= 1 or None. Received: "
                             f"ema_overwrite_frequency={overwrite_frequency!r}")
        self.momentum = momentum
        self.overwrite_frequency = None if overwrite_frequency is None else int(overwrite_frequency)
        self.averages = None

    def after_step(self, params, steps_before):
        """Update the averages after a step (``steps_before`` steps were taken before it)."""
        if self.averages is None or len(self.averages) != len(params):
            self.averages = [np.array(p.data, copy=True) for p in params]
        momentum = 0.0 if steps_before == 0 else self.momentum
        for average, p in zip(self.averages, params):
            average *= momentum
            average += (1.0 - momentum) * p.data
        if self.overwrite_frequency and (steps_before + 1) % self.overwrite_frequency == 0:
            self.overwrite(params)

    def overwrite(self, params):
        if self.averages is None:
            return
        if len(self.averages) != len(params):
            raise ValueError(f"The optimizer holds moving averages of {len(self.averages)} "
                             f"parameters, but {len(params)} were given to overwrite.")
        for average, p in zip(self.averages, params):
            p.data[...] = average
            bump = getattr(p, "_bump_version", None)
            if bump is not None:
                bump()


def pop_ema_arguments(kwargs):
    """Take Keras's ``use_ema``/``ema_momentum``/``ema_overwrite_frequency`` out of an
    optimizer's ``**kwargs``: a ``ModelAverage`` when ``use_ema``, else None."""
    use_ema = kwargs.pop("use_ema", False)
    momentum = kwargs.pop("ema_momentum", 0.99)
    frequency = kwargs.pop("ema_overwrite_frequency", None)
    if not use_ema:
        return None
    return ModelAverage(momentum, frequency)


def ema_config(average):
    """The config entries of ``average`` (none when EMA is off)."""
    if average is None:
        return {}
    return {"use_ema": True, "ema_momentum": average.momentum,
            "ema_overwrite_frequency": average.overwrite_frequency}


def finalize_variable_values(optimizer, var_list=None):
    """Keras's ``Optimizer.finalize_variable_values``: with ``use_ema``, replace the weights
    (``var_list``, default the optimizer's parameters) by their moving averages."""
    average = getattr(optimizer, "_ema", None)
    if average is not None:
        average.overwrite(optimizer.params if var_list is None else list(var_list))


def swap_variables(optimizer):
    """Exchange the weights and their moving averages (``callbacks.SwapEMAWeights``); a no-op
    for an optimizer without ``use_ema`` or before its first step. Returns whether it swapped."""
    average = getattr(optimizer, "_ema", None)
    if average is None or average.averages is None:
        return False
    for stored, p in zip(average.averages, optimizer.params):
        temporary = np.array(p.data, copy=True)
        p.data[...] = stored
        stored[...] = temporary
        bump = getattr(p, "_bump_version", None)
        if bump is not None:
            bump()
    return True


def copy_weights_into_averages(optimizer):
    """Set the averages to the current weights (Keras's ``_backend_finalize_ema_values``)."""
    average = getattr(optimizer, "_ema", None)
    if average is not None and average.averages is not None:
        for stored, p in zip(average.averages, optimizer.params):
            stored[...] = p.data
