"""Recurrent steps written with Tensor operations, for the cells the fused kernels do not
implement: any ``activation``/``recurrent_activation`` for SimpleRNN/LSTM/GRU, and Keras's
original ``GRU(reset_after=False)`` cell. The fused kernels stay the path for the default
arguments; this one is slower (one graph node per operation and step) but differentiates
through anything ``activations`` offers. The math is in ``docs/math/recurrent.md``
("Composed cells").

Weights use the fused layers' layout: ``weight_ih (G*u, in)``, ``weight_hh (G*u, u)``,
``bias_ih``, ``bias_hh`` ``(G*u,)``, gate blocks in PyTorch's order (LSTM i, f, g, o; GRU
r, z, n).
"""
import numpy as np

from minnet import autograd

__all__ = ["lstm_step", "gru_step", "simple_rnn_step", "run_composed"]


def _recurrent_product(h, weight_hh, bias_hh, recurrent_mask):
    hm = h if recurrent_mask is None else h * recurrent_mask
    out = hm @ weight_hh.transpose()
    return out if bias_hh is None else out + bias_hh


def simple_rnn_step(xp, states, weights, activation, recurrent_activation, recurrent_mask):
    """``h' = activation(xp + h W_hhᵀ + b_hh)``; ``xp = x W_ihᵀ + b_ih``."""
    (h,) = states
    weight_hh, bias_hh = weights
    h = activation(xp + _recurrent_product(h, weight_hh, bias_hh, recurrent_mask))
    return h, (h,)


def lstm_step(xp, states, weights, activation, recurrent_activation, recurrent_mask):
    """``i, f, o = rec_act(.)``, ``g = act(.)``, ``c' = f c + i g``, ``h' = o act(c')``."""
    h, c = states
    weight_hh, bias_hh = weights
    u = h.shape[-1]
    z = xp + _recurrent_product(h, weight_hh, bias_hh, recurrent_mask)
    i = recurrent_activation(z[:, :u])
    f = recurrent_activation(z[:, u:2 * u])
    g = activation(z[:, 2 * u:3 * u])
    o = recurrent_activation(z[:, 3 * u:])
    c = f * c + i * g
    h = o * activation(c)
    return h, (h, c)


def gru_step(xp, states, weights, activation, recurrent_activation, recurrent_mask,
             reset_after=True):
    """PyTorch's blocks r, z, n. ``reset_after=True``: ``n = act(xp_n + r (h W_hnᵀ + b_hn))``;
    ``False`` (Keras's original cell): ``n = act(xp_n + (r h) W_hnᵀ + b_hn)``; then
    ``h' = (1 - z) n + z h``."""
    (h,) = states
    weight_hh, bias_hh = weights
    u = h.shape[-1]
    hm = h if recurrent_mask is None else h * recurrent_mask
    w_rz, w_n = weight_hh[:2 * u], weight_hh[2 * u:]
    b_rz = None if bias_hh is None else bias_hh[:2 * u]
    b_n = None if bias_hh is None else bias_hh[2 * u:]
    rz = xp[:, :2 * u] + _recurrent_product(hm, w_rz, b_rz, None)
    r = recurrent_activation(rz[:, :u])
    z = recurrent_activation(rz[:, u:])
    if reset_after:
        n = activation(xp[:, 2 * u:] + r * _recurrent_product(hm, w_n, b_n, None))
    else:
        n = activation(xp[:, 2 * u:] + _recurrent_product(r * hm, w_n, b_n, None))
    h = (1.0 - z) * n + z * h
    return h, (h,)


def run_composed(step, x, weight_ih, bias_ih, states, mask=None, reverse=False,
                 return_sequences=True):
    """Run ``step`` over the (N, T, I) Tensor ``x``: the input projection of all steps as one
    product, then one ``step(xp_t, states) -> (output, states)`` per step. A False entry of
    the (N, T) ``mask`` keeps the states and repeats the previous output (the fused kernels'
    and Keras's rule).

    Returns:
        ``(sequence or None, final states)``; the sequence is aligned with the inputs.
    """
    n, t = x.shape[0], x.shape[1]
    xp = x @ weight_ih.transpose()
    if bias_ih is not None:
        xp = xp + bias_ih
    order = range(t - 1, -1, -1) if reverse else range(t)
    outputs = [None] * t
    output = states[0]
    for step_index in order:
        new_output, new_states = step(xp[:, step_index], states)
        if mask is not None:
            keep = mask[:, step_index].astype(x.dtype).reshape(n, 1)
            new_states = tuple(keep * a + (1.0 - keep) * b for a, b in zip(new_states, states))
            new_output = keep * new_output + (1.0 - keep) * output
        states, output = tuple(new_states), new_output
        outputs[step_index] = output
    sequence = autograd.stack(outputs, dim=1) if return_sequences else None
    return sequence, states


def zeros_state(n, units, dtype):
    return autograd.Tensor(np.zeros((n, units), dtype=dtype))
