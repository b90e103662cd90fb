"""Keras 3's recurrent cells and the generic ``RNN`` layer: ``SimpleRNNCell``, ``LSTMCell``,
``GRUCell``, ``StackedRNNCells`` and ``RNN(cell)``, on the composed steps of
``recurrent_composed.py`` (the math of ``docs/math/recurrent.md``, "Composed cells").

A cell is called as ``cell(x_t, states, training=False) -> (output, new_states)`` with
``x_t`` ``(N, features)`` and ``states`` a list (``cell.state_size`` entries). Weights use the
fused layers' layout (``weight_ih (G*u, in)``, ``weight_hh (G*u, u)``, ``bias_ih``,
``bias_hh``; gate blocks in PyTorch's order), so they convert from Keras as the ``LSTM``/``GRU``
rows of docs/coming_from_keras.md say. Dropout: one input mask and one recurrent mask per
sequence (Keras 3's ``DropoutRNNCell``), drawn at the first step and reused; ``RNN`` resets
them for every call.
"""
import numpy as np

from minnet import _random, activations, initializers
from minnet import functional as F
from minnet._checks import check_float, check_int, invalid
from minnet.autograd import Tensor, no_grad, stack
from minnet.layers.base import Layer
from minnet.layers.embedding import get_keras_mask, set_keras_mask
from minnet.layers.recurrent_composed import gru_step, lstm_step, simple_rnn_step
from minnet.layers.weight_options import RECURRENT_TARGETS

__all__ = ["SimpleRNNCell", "LSTMCell", "GRUCell", "StackedRNNCells", "RNN"]


class _Cell(Layer):
    weight_option_targets = RECURRENT_TARGETS    # Keras's kernel_/recurrent_/bias_ options
    _gates = 1
    _n_states = 1

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal",
                 bias_initializer="zeros", dropout=0.0, recurrent_dropout=0.0, seed=None,
                 **kwargs):
        super().__init__(**kwargs)
        self.units = check_int("units", units, minimum=1)
        self.activation = activations.get(activation)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.recurrent_initializer = initializers.get(recurrent_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.dropout = check_float("dropout", dropout, 0.0, 1.0, high_open=True)
        self.recurrent_dropout = check_float("recurrent_dropout", recurrent_dropout, 0.0, 1.0,
                                             high_open=True)
        self.seed = seed
        self._stream = _random.stream_for(seed)     # Keras's seed=: the masks' own stream
        self.weight_ih = self.weight_hh = self.bias_ih = self.bias_hh = None
        self.reset_dropout_mask()

    @property
    def state_size(self):
        return self.units if self._n_states == 1 else [self.units] * self._n_states

    @property
    def output_size(self):
        return self.units

    def _bias_init(self, shape, dtype):
        return self.bias_initializer(shape, dtype)

    def build(self, input_shape):
        features = input_shape[-1]
        if features is None:
            raise ValueError(f"Layer '{self.name}' needs a known number of features. "
                             f"Received input_shape={tuple(input_shape)}")
        g = self._gates * self.units
        self.weight_ih = self.add_weight("weight_ih", (g, int(features)), self.kernel_initializer)
        self.weight_hh = self.add_weight("weight_hh", (g, self.units), self.recurrent_initializer)
        if self.use_bias:
            self.bias_ih = self.add_weight("bias_ih", (g,), self._bias_init)
            self.bias_hh = self.add_weight("bias_hh", (g,), "zeros")
        super().build(input_shape)

    def reset_dropout_mask(self):
        """Forget the dropout masks (the next step draws new ones)."""
        object.__setattr__(self, "_masks", None)

    def _dropout_masks(self, x, training):
        if not training or (self.dropout == 0 and self.recurrent_dropout == 0):
            return None, None
        if self._masks is None:
            n = x.shape[0]
            with _random.drawing_from(self._stream):
                input_mask = None if self.dropout == 0 else F.dropout(
                    Tensor(np.ones((n, x.shape[1]), dtype=x.dtype)), self.dropout)
                recurrent = None if self.recurrent_dropout == 0 else F.dropout(
                    Tensor(np.ones((n, self.units), dtype=x.dtype)), self.recurrent_dropout).data
            object.__setattr__(self, "_masks", (input_mask, recurrent))
        return self._masks

    def get_initial_state(self, batch_size):
        return [Tensor(np.zeros((batch_size, self.units), dtype=self.dtype))
                for _ in range(self._n_states)]

    def __call__(self, inputs, states=None, training=None):
        x = inputs if type(inputs) is Tensor and inputs.dtype == self.dtype else \
            self._to_tensor(inputs)
        if not self.built:
            self.build(tuple(x.shape))
            self.built = True
        if states is None:
            states = self.get_initial_state(x.shape[0])
        if not isinstance(states, (list, tuple)):
            states = [states]
        states = [s if isinstance(s, Tensor) else Tensor(np.asarray(s, dtype=self.dtype))
                  for s in states]
        if len(states) != self._n_states:
            raise invalid("states", f"a list of {self._n_states} state(s)", f"{len(states)}")
        return self.call(x, states, training=bool(self.training if training is None else training))

    def call(self, x, states, training=False):
        input_mask, recurrent_mask = self._dropout_masks(x, training)
        if input_mask is not None:
            x = x * input_mask
        xp = x @ self.weight_ih.transpose()
        if self.bias_ih is not None:
            xp = xp + self.bias_ih
        output, new_states = self._step(xp, tuple(states), recurrent_mask)
        return output, list(new_states)

    def get_config(self):
        return {**super().get_config(), "units": self.units,
                "activation": activations.serialize(self.activation),
                "recurrent_activation": activations.serialize(self.recurrent_activation),
                "use_bias": self.use_bias,
                "kernel_initializer": initializers.serialize(self.kernel_initializer),
                "recurrent_initializer": initializers.serialize(self.recurrent_initializer),
                "bias_initializer": initializers.serialize(self.bias_initializer),
                "dropout": self.dropout, "recurrent_dropout": self.recurrent_dropout,
                "seed": self.seed}


class SimpleRNNCell(_Cell):
    """``h' = activation(x W_ihᵀ + b_ih + h W_hhᵀ + b_hh)``; output ``h'``."""

    def __init__(self, units, activation="tanh", use_bias=True, kernel_initializer="glorot_uniform",
                 recurrent_initializer="orthogonal", bias_initializer="zeros", dropout=0.0,
                 recurrent_dropout=0.0, seed=None, **kwargs):
        super().__init__(units, activation, "sigmoid", use_bias, kernel_initializer,
                         recurrent_initializer, bias_initializer, dropout, recurrent_dropout,
                         seed, **kwargs)

    def _step(self, xp, states, recurrent_mask):
        return simple_rnn_step(xp, states, (self.weight_hh, self.bias_hh), self.activation,
                               self.recurrent_activation, recurrent_mask)

    def get_config(self):
        config = super().get_config()
        config.pop("recurrent_activation")
        return config


class LSTMCell(_Cell):
    """The LSTM step (gates i, f, g, o); states ``[h, c]``; ``unit_forget_bias`` sets the
    forget gate's ``bias_ih`` block to 1, as Keras."""

    _gates = 4
    _n_states = 2

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal",
                 bias_initializer="zeros", unit_forget_bias=True, dropout=0.0,
                 recurrent_dropout=0.0, seed=None, **kwargs):
        super().__init__(units, activation, recurrent_activation, use_bias, kernel_initializer,
                         recurrent_initializer, bias_initializer, dropout, recurrent_dropout,
                         seed, **kwargs)
        self.unit_forget_bias = bool(unit_forget_bias)

    def _bias_init(self, shape, dtype):
        bias = np.asarray(self.bias_initializer(shape, dtype)).copy()
        if self.unit_forget_bias:
            bias[self.units:2 * self.units] = 1.0
        return bias

    def _step(self, xp, states, recurrent_mask):
        return lstm_step(xp, states, (self.weight_hh, self.bias_hh), self.activation,
                         self.recurrent_activation, recurrent_mask)

    def get_config(self):
        return {**super().get_config(), "unit_forget_bias": self.unit_forget_bias}


class GRUCell(_Cell):
    """The GRU step (gates r, z, n; ``reset_after`` as ``GRU``); state ``[h]``."""

    _gates = 3

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal",
                 bias_initializer="zeros", dropout=0.0, recurrent_dropout=0.0, reset_after=True,
                 seed=None, **kwargs):
        super().__init__(units, activation, recurrent_activation, use_bias, kernel_initializer,
                         recurrent_initializer, bias_initializer, dropout, recurrent_dropout,
                         seed, **kwargs)
        self.reset_after = bool(reset_after)

    def _step(self, xp, states, recurrent_mask):
        return gru_step(xp, states, (self.weight_hh, self.bias_hh), self.activation,
                        self.recurrent_activation, recurrent_mask, reset_after=self.reset_after)

    def get_config(self):
        return {**super().get_config(), "reset_after": self.reset_after}


def _flat_size(cell):
    size = cell.state_size
    return list(size) if isinstance(size, (list, tuple)) else [size]


def _initial_states(cell, n, dtype):
    """``cell.get_initial_state(n)``, or, for a cell without one (a custom cell with only
    ``state_size``, as in Keras's RNN guide), zeros of each state size (Keras's fallback)."""
    if hasattr(cell, "get_initial_state"):
        return cell.get_initial_state(n)
    return [Tensor(np.zeros((n,) + (tuple(size) if isinstance(size, (list, tuple)) else
                                    (int(size),)), dtype=dtype))
            for size in _flat_size(cell)]


def _output_size(cell):
    """``cell.output_size``; Keras's default for a cell without one: its first state's size."""
    return getattr(cell, "output_size", None) or _flat_size(cell)[0]


class StackedRNNCells(Layer):
    """Cells applied one after the other at each step (the output of one is the input of
    the next); the states are the cells' states, in order."""

    def __init__(self, cells, **kwargs):
        super().__init__(**kwargs)
        if isinstance(cells, (str, bytes)) or not isinstance(cells, (list, tuple)) or not cells:
            raise invalid("cells", "a non-empty list of RNN cells", cells, TypeError)
        for cell in cells:
            if not (isinstance(cell, Layer) and hasattr(cell, "state_size")):
                raise invalid("cells", "a list of RNN cells (layers with a `state_size`)", cells,
                              TypeError)
        self.cells = list(cells)

    @property
    def state_size(self):
        return [s for cell in self.cells for s in _flat_size(cell)]

    @property
    def output_size(self):
        return _output_size(self.cells[-1])

    def reset_dropout_mask(self):
        for cell in self.cells:
            if hasattr(cell, "reset_dropout_mask"):
                cell.reset_dropout_mask()

    def get_initial_state(self, batch_size):
        return [s for cell in self.cells for s in _initial_states(cell, batch_size, self.dtype)]

    def __call__(self, inputs, states=None, training=None):
        x = inputs
        new_states, offset = [], 0
        for cell in self.cells:
            n = len(_flat_size(cell))
            if states is not None:
                own = list(states[offset:offset + n])
            else:    # a built-in cell makes its own zeros; a custom one is given them
                own = None if hasattr(cell, "get_initial_state") else \
                    _initial_states(cell, x.shape[0], self.dtype)
            x, own = cell(x, own, training=training)
            new_states += own
            offset += n
        return x, new_states

    def get_config(self):
        return {**super().get_config(),
                "cells": [{"class_name": type(c).__name__, "config": c.get_config()}
                          for c in self.cells]}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        cells = [_CELLS[c["class_name"]](**c["config"]) for c in config.pop("cells")]
        return cls(cells, **config)


class RNN(Layer):
    """Keras's generic ``RNN(cell)``: runs ``cell`` (or a list of cells, stacked) over the
    time axis of ``(N, T, features)``.

    Args:
        cell: a cell (``SimpleRNNCell``, ``LSTMCell``, ``GRUCell``, ``StackedRNNCells``, or a
            layer with ``state_size`` and ``call(x_t, states) -> (output, states)``) or a list.
        return_sequences, return_state, go_backwards, stateful, unroll: as ``LSTM``.
        zero_output_for_mask: masked steps output zeros instead of repeating the last output.

    ``layer(x, mask=None, initial_state=None, training=None)``.
    """

    def __init__(self, cell, return_sequences=False, return_state=False, go_backwards=False,
                 stateful=False, unroll=False, zero_output_for_mask=False, **kwargs):
        super().__init__(**kwargs)
        if isinstance(cell, (list, tuple)):
            cell = StackedRNNCells(list(cell))
        if not hasattr(cell, "state_size"):
            raise invalid("cell", "a cell with a `state_size` (e.g. layers.LSTMCell(8))", cell,
                          TypeError)
        self.cell = cell
        self.return_sequences = bool(return_sequences)
        self.return_state = bool(return_state)
        self.go_backwards = bool(go_backwards)
        self.stateful = bool(stateful)
        self.unroll = bool(unroll)
        self.zero_output_for_mask = bool(zero_output_for_mask)
        self.states = None

    def reset_states(self):
        self.states = None

    def build(self, input_shape):
        """Build the cell for ``(N, T, features)`` (Keras builds it here, so a model declared
        with its input shape has the cell's weights before the first batch)."""
        features = tuple(input_shape)[-1]
        if features is not None and not getattr(self.cell, "built", True):
            with no_grad():       # one zero step builds any cell (stacked, custom)
                self.cell(Tensor(np.zeros((1, int(features)), dtype=self.dtype)),
                          _initial_states(self.cell, 1, self.dtype))
        super().build(input_shape)

    def __call__(self, x, mask=None, initial_state=None, training=None):
        if hasattr(x, "symbolic_call"):
            return x.symbolic_call(self, x)
        if mask is None:
            mask = get_keras_mask(x) if isinstance(x, Tensor) else None
        if type(x) is not Tensor or x.dtype != self.dtype:
            x = self._to_tensor(x)
        if not self.built:
            self.build(tuple(x.shape))
            self._build_input_shape = tuple(x.shape)
        return self.call(x, mask=mask, initial_state=initial_state,
                         training=bool(self.training if training is None else training))

    def call(self, x, mask=None, initial_state=None, training=False):
        self._check_input(x, ndim=3)
        n, t = x.shape[0], x.shape[1]
        if mask is not None:
            mask = np.asarray(mask.data if isinstance(mask, Tensor) else mask, dtype=bool)
        if initial_state is not None:
            states = [s if isinstance(s, Tensor) else Tensor(np.asarray(s, dtype=x.dtype))
                      for s in (initial_state if isinstance(initial_state, (list, tuple))
                                else [initial_state])]
        elif self.stateful and self.states is not None:
            states = [Tensor(s) for s in self.states]
        else:
            states = _initial_states(self.cell, n, self.dtype)
        if hasattr(self.cell, "reset_dropout_mask"):
            self.cell.reset_dropout_mask()
        order = range(t - 1, -1, -1) if self.go_backwards else range(t)
        outputs, previous = [], None
        for step in order:
            output, new_states = self.cell(x[:, step], states, training=training)
            if mask is not None:
                keep = mask[:, step].astype(x.dtype).reshape(n, 1)
                new_states = [keep * a + (1.0 - keep) * b for a, b in zip(new_states, states)]
                fallback = output * 0.0 if (self.zero_output_for_mask or previous is None) \
                    else previous
                output = keep * output + (1.0 - keep) * fallback
            states, previous = list(new_states), output
            outputs.append(output)
        if self.stateful:
            self.states = [np.array(s.data) for s in states]
        if self.return_sequences:
            y = stack(outputs, dim=1)          # processing order, as Keras
            if mask is not None:
                set_keras_mask(y, mask[:, ::-1] if self.go_backwards else mask)
        else:
            y = outputs[-1]
        return [y] + list(states) if self.return_state else y

    def compute_output_shape(self, input_shape):
        n, t = tuple(input_shape)[:2]
        units = _output_size(self.cell)
        out = (n, t, units) if self.return_sequences else (n, units)
        if self.return_state:
            return [out] + [(n, s) for s in _flat_size(self.cell)]
        return out

    def get_config(self):
        return {**super().get_config(),
                "cell": {"class_name": type(self.cell).__name__, "config": self.cell.get_config()},
                "return_sequences": self.return_sequences, "return_state": self.return_state,
                "go_backwards": self.go_backwards, "stateful": self.stateful,
                "unroll": self.unroll, "zero_output_for_mask": self.zero_output_for_mask}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        cell = config.pop("cell")
        cell_cls = _CELLS[cell["class_name"]]
        built = cell_cls.from_config(cell["config"]) if cell_cls is StackedRNNCells \
            else cell_cls(**cell["config"])
        return cls(built, **config)


_CELLS = {"SimpleRNNCell": SimpleRNNCell, "LSTMCell": LSTMCell, "GRUCell": GRUCell,
          "StackedRNNCells": StackedRNNCells}
