"""Recurrent layers: SimpleRNN, LSTM, GRU, and the wrappers Bidirectional and TimeDistributed.

Keras 3's signatures and defaults; PyTorch's weight layouts and gate orders, so numbers
equal ``torch.nn.LSTM``/``GRU``/``RNN`` given the same weights:

==========  ===============================  ==================================
layer       weights (``get_weights()`` order)  gates (blocks of ``units`` rows)
==========  ===============================  ==================================
SimpleRNN   weight_ih (u, in), weight_hh (u, u), bias_ih (u,), bias_hh (u,)   one
LSTM        (4u, in), (4u, u), (4u,), (4u,)   i, f, g, o
GRU         (3u, in), (3u, u), (3u,), (3u,)   r, z, n (Keras's ``reset_after=True``)
==========  ===============================  ==================================

Keras keeps one kernel ``(in, gates*u)``: ``weight_ih = kernel.T``, ``weight_hh =
recurrent_kernel.T`` (same gate order for GRU; Keras's LSTM order i, f, c, o is PyTorch's
i, f, g, o); Keras's single LSTM/SimpleRNN bias goes in ``bias_ih`` with ``bias_hh = 0``, and
a GRU's ``bias`` (2, 3u) is ``[bias_ih, bias_hh]``.

The whole sequence runs in one call of the fused kernels (``minnet.functional.lstm`` and
friends). A mask from ``Embedding(mask_zero=True)`` or ``Masking`` (or ``mask=``) makes
padded steps leave the state unchanged; the output at a padded step is the previous output
(zeros before the first real step), as Keras 3 gives it.
"""
import numpy as np

from minnet import _random, _registry, activations, initializers
from minnet import functional as F
from minnet._checks import check_choice, check_float, check_int, invalid
from minnet.autograd import Tensor
from minnet.initializers import Orthogonal
from minnet.layers.base import Layer
from minnet.layers.embedding import get_keras_mask, set_keras_mask
from minnet.layers.recurrent_composed import gru_step, lstm_step, run_composed, simple_rnn_step, \
    zeros_state
from minnet.layers.weight_options import RECURRENT_TARGETS

__all__ = ["SimpleRNN", "LSTM", "GRU", "Bidirectional", "TimeDistributed", "Orthogonal"]


def _initializer(identifier):
    return initializers.get(identifier)


def _serialize_initializer(init):
    if isinstance(init, Orthogonal):
        return "orthogonal" if init.gain == 1.0 and init.seed is None else \
            {"class_name": "Orthogonal", "config": init.get_config()}
    return initializers.serialize(init)


def _input_mask(x, mask, n, t):
    """The (N, T) bool mask for ``x``: given, else attached to ``x``, else None."""
    if mask is None:
        mask = get_keras_mask(x)
    if mask is None:
        return None
    mask = np.asarray(mask.data if isinstance(mask, Tensor) else mask)
    if mask.shape != (n, t):
        raise invalid("mask", f"a boolean array of shape ({n}, {t})", mask.shape)
    return mask.astype(bool)


class _SequenceLayer(Layer):
    """Base of layers that take (and may return) a mask: ``layer(x, training=None, mask=None)``."""

    def __call__(self, x, training=None, mask=None, **kwargs):
        if hasattr(x, "symbolic_call"):   # functional API: record a node (ops/symbolic.py)
            return self._symbolic_call((x,), kwargs, training=training, mask=mask)
        if mask is None:
            mask = get_keras_mask(x) if isinstance(x, Tensor) else None
        if type(x) is not Tensor or x.data.dtype != self.dtype:
            x = self._to_tensor(x)
        if not self.built:
            self.build(tuple(x.shape))
            self._build_input_shape = tuple(x.shape)
            self.built = True
        if training is None:
            training = self.training
        return self.call(x, training=bool(training), mask=mask, **kwargs)


class _RNN(_SequenceLayer):
    """Shared by SimpleRNN, LSTM and GRU: hyperparameters, weights, the call."""

    weight_option_targets = RECURRENT_TARGETS    # Keras's kernel_/recurrent_/bias_ options

    _gates = 1
    _states = 1

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal",
                 bias_initializer="zeros", dropout=0.0, recurrent_dropout=0.0,
                 return_sequences=False, return_state=False, go_backwards=False, stateful=False,
                 unroll=False, seed=None, use_cudnn="auto", name=None, dtype="float32",
                 trainable=True, **kwargs):
        super().__init__(name=name, dtype=dtype, trainable=trainable, **kwargs)
        if use_cudnn is True:       # Keras raises too where cuDNN cannot run
            raise ValueError("Invalid value for argument `use_cudnn`: minnet runs on the CPU, "
                             "without cuDNN; expected 'auto' or False (the same kernels run). "
                             "Received: use_cudnn=True")
        if use_cudnn not in ("auto", False):
            raise ValueError(f"Invalid value for argument `use_cudnn`: expected 'auto', True or "
                             f"False. Received: use_cudnn={use_cudnn!r}")
        self.units = check_int("units", units, minimum=1)
        # Keras's seed=: the dropout masks' own stream (_random.DropoutStream)
        self._stream = _random.stream_for(seed)
        self.seed = None if seed is None else int(seed)
        self.activation = activations.get(activation)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = _initializer(kernel_initializer)
        self.recurrent_initializer = _initializer(recurrent_initializer)
        self.bias_initializer = _initializer(bias_initializer)
        self.dropout = check_float("dropout", dropout, 0.0, 1.0, high_open=True)
        self.recurrent_dropout = check_float("recurrent_dropout", recurrent_dropout, 0.0, 1.0,
                                             high_open=True)
        self.return_sequences = bool(return_sequences)
        self.return_state = bool(return_state)
        self.go_backwards = bool(go_backwards)
        self.stateful = bool(stateful)
        self.unroll = bool(unroll)   # accepted and ignored: the kernels loop over time in C
        self._mode = self._kernel_mode()
        self.weight_ih = self.weight_hh = self.bias_ih = self.bias_hh = None
        self.states = None

    def _kernel_mode(self):
        raise NotImplementedError

    @property
    def fused(self):
        """True when the layer runs on the fused kernel (the default activations), False on
        the composed Tensor-op cell."""
        return self._mode != "composed"

    def _bias_init(self, shape, dtype):
        return self.bias_initializer(shape, dtype)

    def build(self, input_shape):
        input_shape = tuple(input_shape)
        if len(input_shape) != 3 or input_shape[-1] is None:
            raise ValueError(f"Layer '{self.name}' expects inputs of shape (batch, timesteps, "
                             f"features) with a known number of features. Received input_shape="
                             f"{input_shape}")
        self.input_dim = int(input_shape[-1])
        g = self._gates * self.units
        self.weight_ih = self.add_weight("weight_ih", (g, self.input_dim), self.kernel_initializer)
        self.weight_hh = self.add_weight("weight_hh", (g, self.units), self.recurrent_initializer)
        if self.use_bias:
            self.bias_ih = self.add_weight("bias_ih", (g,), self._bias_init)
            self.bias_hh = self.add_weight("bias_hh", (g,), "zeros")
        super().build(input_shape)

    def reset_states(self):
        """Forget the states a ``stateful`` layer carries from batch to batch."""
        self.states = None

    def call(self, x, training=False, mask=None, initial_state=None):
        """``initial_state``: the starting state(s), as Keras (one ``(N, units)`` tensor, a
        list of them: LSTM ``[h, c]``; gradients flow into them); default zeros, or the
        carried states of a ``stateful`` layer."""
        shape = tuple(x.shape)
        if len(shape) != 3 or shape[-1] != self.input_dim:
            self._check_input(x, ndim=3, axis=-1, size=self.input_dim)
        n, t = shape[0], shape[1]
        mask = _input_mask(x, mask, n, t)
        recurrent_mask = None
        with _random.drawing_from(self._stream):
            if training and self.dropout > 0:
                # Keras's recurrent cells draw one input mask per sequence, reused at every step.
                keep = F.dropout(Tensor(np.ones((n, 1, self.input_dim), dtype=x.dtype)), self.dropout)
                x = x * keep
            if training and self.recurrent_dropout > 0:
                # One mask per sample over the units of h, reused at every step (drawn after
                # the input mask): the kernels multiply h by it before the recurrent GEMM.
                recurrent_mask = F.dropout(Tensor(np.ones((n, self.units), dtype=x.dtype)),
                                           self.recurrent_dropout).data
        initial = None
        if initial_state is not None:
            initial = self._initial_states(initial_state, n, x.dtype)
        elif self.stateful and self.states is not None:
            if self.states[0].shape[0] != n:
                raise ValueError(f"Layer '{self.name}' is stateful and its states have batch size "
                                 f"{self.states[0].shape[0]}; received a batch of {n}. Keep the "
                                 f"batch size fixed or call reset_states().")
            initial = self.states
        outputs = self._run(x, initial, mask, recurrent_mask)
        y, states = outputs[0], list(outputs[1:])
        if self.stateful:
            self.states = [np.array(s.data) for s in states]
        if self.return_sequences:
            if self.go_backwards:
                y = F.reverse_sequence(y)   # Keras returns the steps in processing order
            if mask is not None:
                set_keras_mask(y, mask[:, ::-1] if self.go_backwards else mask)
        else:
            y = states[0]
        if self.return_state:
            return [y] + states
        return y

    def _initial_states(self, initial_state, n, dtype):
        states = list(initial_state) if isinstance(initial_state, (list, tuple)) else [initial_state]
        if len(states) != self._states:
            raise ValueError(f"Layer '{self.name}' ({type(self).__name__}) takes {self._states} "
                             f"initial state(s) in `initial_state`; received {len(states)}.")
        result = []
        for state in states:
            state = state if isinstance(state, Tensor) else Tensor(np.asarray(state, dtype=dtype))
            if tuple(state.shape) != (n, self.units):
                raise invalid("initial_state", f"states of shape ({n}, {self.units})", tuple(state.shape))
            result.append(state if state.dtype == dtype else state.astype(dtype))
        return result

    def compute_mask(self, inputs, mask=None):
        return mask if self.return_sequences else None

    def count_flops(self, input_shape):
        """The two GEMMs per step, ``2 * N * T * G*units * (features + units)`` (gates excluded)."""
        n, t, features = (1 if s is None else int(s) for s in tuple(input_shape))
        return 2 * n * t * self._gates * self.units * (features + self.units)

    def compute_output_shape(self, input_shape):
        input_shape = tuple(input_shape)
        out = (input_shape[0], input_shape[1], self.units) if self.return_sequences \
            else (input_shape[0], self.units)
        if self.return_state:
            return [out] + [(input_shape[0], self.units)] * self._states
        return out

    def get_config(self):
        return {**super().get_config(), "units": self.units,
                "activation": activations.serialize(self.activation),
                "recurrent_activation": activations.serialize(self.recurrent_activation),
                "use_bias": self.use_bias,
                "kernel_initializer": _serialize_initializer(self.kernel_initializer),
                "recurrent_initializer": _serialize_initializer(self.recurrent_initializer),
                "bias_initializer": _serialize_initializer(self.bias_initializer),
                "dropout": self.dropout, "recurrent_dropout": self.recurrent_dropout,
                "return_sequences": self.return_sequences, "return_state": self.return_state,
                "go_backwards": self.go_backwards, "stateful": self.stateful,
                "unroll": self.unroll, "seed": self.seed}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        for key in ("kernel_initializer", "recurrent_initializer", "bias_initializer"):
            value = config.get(key)
            if isinstance(value, dict) and value.get("class_name") == "Orthogonal":
                config[key] = Orthogonal(**value.get("config", {}))
        return cls(**config)

    def extra_repr(self):
        parts = [str(self.units)]
        for flag in ("return_sequences", "return_state", "go_backwards", "stateful"):
            if getattr(self, flag):
                parts.append(f"{flag}=True")
        return ", ".join(parts)


def _composed(layer, step, x, initial, mask, recurrent_mask, n_states):
    """Run ``layer`` through the Tensor-op cell ``step`` (recurrent_composed.py)."""
    n = x.shape[0]
    if initial is None:
        states = tuple(zeros_state(n, layer.units, x.dtype) for _ in range(n_states))
    else:
        states = tuple(s if isinstance(s, Tensor) else Tensor(np.asarray(s, dtype=x.dtype))
                       for s in initial)
    weights = (layer.weight_hh, layer.bias_hh)

    def cell(xp, carried):
        return step(xp, carried, weights, layer.activation, layer.recurrent_activation,
                    recurrent_mask)

    sequence, states = run_composed(cell, x, layer.weight_ih, layer.bias_ih, states, mask=mask,
                                    reverse=layer.go_backwards,
                                    return_sequences=layer.return_sequences)
    return (sequence,) + tuple(states)


class SimpleRNN(_RNN):
    """Fully connected RNN: ``h_t = activation(x_t W_ihᵀ + b_ih + h_{t-1} W_hhᵀ + b_hh)``.

    Args:
        units: size of the state. activation: ``"tanh"`` (default) or ``"relu"`` run on the
            fused kernel; any other activation runs on the composed cell
            (``recurrent_composed.py``).
        Other arguments as ``LSTM`` (no ``recurrent_activation``).

    Shape:
        - Input: ``(N, T, features)``.
        - Output: ``(N, T, units)`` with ``return_sequences``, else ``(N, units)``.

    Example:
        >>> layers.SimpleRNN(8)(np.random.randn(2, 5, 3)).shape
        (2, 8)
    """

    _gates = 1
    _states = 1

    def __init__(self, units, activation="tanh", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal",
                 bias_initializer="zeros", dropout=0.0, recurrent_dropout=0.0,
                 return_sequences=False, return_state=False, go_backwards=False, stateful=False,
                 unroll=False, **kwargs):
        super().__init__(units, activation=activation, recurrent_activation="sigmoid",
                         use_bias=use_bias, kernel_initializer=kernel_initializer,
                         recurrent_initializer=recurrent_initializer,
                         bias_initializer=bias_initializer, dropout=dropout,
                         recurrent_dropout=recurrent_dropout, return_sequences=return_sequences,
                         return_state=return_state, go_backwards=go_backwards, stateful=stateful,
                         unroll=unroll, **kwargs)

    def _kernel_mode(self):
        if self.activation is activations.relu:
            return "relu"
        return "tanh" if self.activation is activations.tanh else "composed"

    def _run(self, x, initial, mask, recurrent_mask=None):
        if self._mode == "composed":
            return _composed(self, simple_rnn_step, x, initial, mask, recurrent_mask, 1)
        h0 = None if initial is None else initial[0]
        return F.rnn(x, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh, h0=h0,
                     nonlinearity=self._mode, mask=mask, reverse=self.go_backwards,
                     return_sequences=self.return_sequences, recurrent_mask=recurrent_mask)

    def get_config(self):
        config = super().get_config()
        del config["recurrent_activation"]
        return config


class LSTM(_RNN):
    """Long short-term memory (Hochreiter & Schmidhuber 1997), Keras 3's arguments, PyTorch's numbers.

    ``i, f, o = σ(·)``, ``g = tanh(·)`` of ``x_t W_ihᵀ + b_ih + h_{t-1} W_hhᵀ + b_hh`` (blocks
    i, f, g, o), ``c_t = f * c_{t-1} + i * g``, ``h_t = o * tanh(c_t)``.

    Args:
        units: size of the state.
        activation, recurrent_activation: ``"tanh"`` and ``"sigmoid"`` run on the fused
            kernel; any others (Keras accepts any activation) on the composed cell
            (``recurrent_composed.py``: the same math in Tensor operations, slower).
        use_bias: add ``bias_ih`` and ``bias_hh``.
        kernel_initializer, recurrent_initializer, bias_initializer: Keras's defaults
            (glorot_uniform, orthogonal, zeros).
        unit_forget_bias: put 1 in ``bias_ih``'s forget-gate block (Keras's default).
        dropout: fraction of the inputs dropped in training (one mask per sequence, the
            same at every step).
        recurrent_dropout: fraction of the units of ``h`` dropped from the recurrent
            product ``h W_hhᵀ`` in training (one mask per sequence, the same at every step
            and for every gate, scaled by ``1/(1 - rate)``; see docs/math/recurrent.md).
        return_sequences: return all ``h_t`` (N, T, units), else the last (N, units).
        return_state: also return the final ``h`` and ``c``: ``[output, h, c]``.
        go_backwards: process the sequence from the end (outputs in processing order).
        stateful: carry the final states over to the next batch (``reset_states()``).
        unroll: accepted and ignored.

    Shape:
        - Input: ``(N, T, features)``.
        - Output: ``(N, T, units)`` or ``(N, units)``.

    Example:
        >>> lstm = layers.LSTM(16, return_sequences=True)
        >>> lstm(np.random.randn(4, 10, 3)).shape
        (4, 10, 16)
    """

    _gates = 4
    _states = 2

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal",
                 bias_initializer="zeros", unit_forget_bias=True, dropout=0.0,
                 recurrent_dropout=0.0, return_sequences=False, return_state=False,
                 go_backwards=False, stateful=False, unroll=False, **kwargs):
        super().__init__(units, activation=activation, recurrent_activation=recurrent_activation,
                         use_bias=use_bias, kernel_initializer=kernel_initializer,
                         recurrent_initializer=recurrent_initializer,
                         bias_initializer=bias_initializer, dropout=dropout,
                         recurrent_dropout=recurrent_dropout, return_sequences=return_sequences,
                         return_state=return_state, go_backwards=go_backwards, stateful=stateful,
                         unroll=unroll, **kwargs)
        self._unit_forget_bias = bool(unit_forget_bias)

    def _kernel_mode(self):
        fused = self.activation is activations.tanh and \
            self.recurrent_activation is activations.sigmoid
        return "lstm" if fused else "composed"

    def _bias_init(self, shape, dtype):
        bias = np.asarray(self.bias_initializer(shape, dtype)).copy()
        if self._unit_forget_bias:
            u = self.units
            bias[u:2 * u] = 1.0
        return bias

    def _run(self, x, initial, mask, recurrent_mask=None):
        if self._mode == "composed":
            return _composed(self, lstm_step, x, initial, mask, recurrent_mask, 2)
        h0, c0 = (None, None) if initial is None else initial
        y, h, c = F.lstm(x, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh, h0=h0,
                         c0=c0, mask=mask, reverse=self.go_backwards,
                         return_sequences=self.return_sequences, recurrent_mask=recurrent_mask)
        return y, h, c

    def get_config(self):
        return {**super().get_config(), "unit_forget_bias": self._unit_forget_bias}


class GRU(_RNN):
    """Gated recurrent unit (Cho et al. 2014), Keras 3's ``reset_after=True`` cell = PyTorch's.

    ``r, z = σ(·)`` of ``x_t W_ihᵀ + b_ih + h_{t-1} W_hhᵀ + b_hh`` (blocks r, z),
    ``n = tanh(x_t W_inᵀ + b_in + r * (h_{t-1} W_hnᵀ + b_hn))``, ``h_t = (1 - z) * n + z * h_{t-1}``.

    Args:
        units, activation, recurrent_activation, use_bias, initializers, dropout,
        recurrent_dropout, return_sequences, return_state, go_backwards, stateful, unroll:
            as ``LSTM``.
        reset_after: True (Keras 3's default, PyTorch's cell, the fused kernel) or False
            (Keras's original cell, ``n = tanh(x W_inᵀ + b_in + (r * h) W_hnᵀ + b_hn)``, on
            the composed cell; no PyTorch twin).

    Shape:
        - Input: ``(N, T, features)``. Output: ``(N, T, units)`` or ``(N, units)``.

    Example:
        >>> layers.GRU(8, return_state=True)(np.random.randn(2, 5, 3))[1].shape
        (2, 8)
    """

    _gates = 3
    _states = 1

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal",
                 bias_initializer="zeros", dropout=0.0, recurrent_dropout=0.0,
                 return_sequences=False, return_state=False, go_backwards=False, stateful=False,
                 unroll=False, reset_after=True, **kwargs):
        super().__init__(units, activation=activation, recurrent_activation=recurrent_activation,
                         use_bias=use_bias, kernel_initializer=kernel_initializer,
                         recurrent_initializer=recurrent_initializer,
                         bias_initializer=bias_initializer, dropout=dropout,
                         recurrent_dropout=recurrent_dropout, return_sequences=return_sequences,
                         return_state=return_state, go_backwards=go_backwards, stateful=stateful,
                         unroll=unroll, **kwargs)
        self.reset_after = bool(reset_after)
        self._mode = self._kernel_mode()

    def _kernel_mode(self):
        fused = self.activation is activations.tanh and \
            self.recurrent_activation is activations.sigmoid and getattr(self, "reset_after", True)
        return "gru" if fused else "composed"

    def _run(self, x, initial, mask, recurrent_mask=None):
        if self._mode == "composed":
            def step(xp, states, weights, activation, recurrent_activation, recurrent_mask):
                return gru_step(xp, states, weights, activation, recurrent_activation,
                                recurrent_mask, reset_after=self.reset_after)
            return _composed(self, step, x, initial, mask, recurrent_mask, 1)
        h0 = None if initial is None else initial[0]
        return F.gru(x, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh, h0=h0,
                     mask=mask, reverse=self.go_backwards, return_sequences=self.return_sequences,
                     recurrent_mask=recurrent_mask)

    def get_config(self):
        return {**super().get_config(), "reset_after": self.reset_after}


def _layer_config(layer):
    return {"class_name": _registry.registered_name("layer", type(layer)) or type(layer).__name__,
            "config": layer.get_config()}


def _layer_from_config(config, custom_objects=None):
    if isinstance(config, Layer):
        return config
    if not (isinstance(config, dict) and isinstance(config.get("class_name"), str)
            and isinstance(config.get("config", {}), dict)):
        raise TypeError(f"Invalid value for argument `layer`: expected a recurrent layer (LSTM, "
                        f"GRU, SimpleRNN) or its serialized config. Received: {config!r}")
    cls = _registry.lookup("layer", config["class_name"], custom_objects)
    return cls.from_config(dict(config.get("config", {})))


class Bidirectional(_SequenceLayer):
    """Runs a recurrent layer forwards and a copy of it backwards, and merges the outputs.

    Args:
        layer: an ``LSTM``, ``GRU`` or ``SimpleRNN`` (unbuilt).
        merge_mode: ``"concat"`` (default), ``"sum"``, ``"mul"``, ``"ave"`` or None (a list
            ``[forward, backward]``).
        backward_layer: optional layer for the backward direction (default: ``layer``'s
            config with ``go_backwards`` flipped).

    Shape:
        - Input: ``(N, T, features)``.
        - Output: ``(N, T, 2 * units)`` (concat, return_sequences) or ``(N, 2 * units)``.

    With ``return_state`` the output is followed by the forward states, then the backward
    ones. The backward output sequence is reversed back, so step t of both halves belongs
    to input step t (PyTorch's ``bidirectional=True`` layout).

    Example:
        >>> layers.Bidirectional(layers.LSTM(8))(np.random.randn(2, 5, 3)).shape
        (2, 16)
    """

    def __init__(self, layer, merge_mode="concat", weights=None, backward_layer=None, name=None,
                 dtype=None, trainable=True, **kwargs):
        layer = _layer_from_config(layer)
        if not isinstance(layer, _RNN):
            raise invalid("layer", "a recurrent layer (LSTM, GRU, SimpleRNN)", layer, TypeError)
        super().__init__(name=name or f"bidirectional_{layer.name}", dtype=dtype or layer.dtype,
                         trainable=trainable, **kwargs)
        self.merge_mode = check_choice("merge_mode", merge_mode,
                                       ("concat", "sum", "mul", "ave", None))
        config = layer.get_config()
        config["name"] = f"forward_{layer.name}"
        self.forward_layer = type(layer).from_config(config)
        if backward_layer is None:
            config = dict(config, name=f"backward_{layer.name}",
                          go_backwards=not layer.go_backwards)
            backward_layer = type(layer).from_config(config)
        else:
            backward_layer = _layer_from_config(backward_layer)
        self.backward_layer = backward_layer
        self.return_sequences = layer.return_sequences
        self.return_state = layer.return_state
        if weights is not None:
            self._initial_weights = weights

    def build(self, input_shape):
        self.forward_layer.build(input_shape)
        self.forward_layer.built = True
        self.backward_layer.build(input_shape)
        self.backward_layer.built = True
        super().build(input_shape)
        weights = self.__dict__.pop("_initial_weights", None)
        if weights is not None:
            self.set_weights(weights)

    def call(self, x, training=False, mask=None):
        fwd = self.forward_layer(x, training=training, mask=mask)
        bwd = self.backward_layer(x, training=training, mask=mask)
        states = []
        if self.return_state:
            states = list(fwd[1:]) + list(bwd[1:])
            fwd, bwd = fwd[0], bwd[0]
        if self.return_sequences:
            bwd = F.reverse_sequence(bwd)
        if self.merge_mode == "concat":
            out = F.concat_features(fwd, bwd)
        elif self.merge_mode == "sum":
            out = fwd + bwd
        elif self.merge_mode == "mul":
            out = fwd * bwd
        elif self.merge_mode == "ave":
            out = (fwd + bwd) * 0.5
        else:
            out = [fwd, bwd]
        in_mask = _input_mask(x, mask, x.shape[0], x.shape[1])
        if self.return_sequences and in_mask is not None and isinstance(out, Tensor):
            set_keras_mask(out, in_mask)
        if self.return_state:
            return (out if isinstance(out, list) else [out]) + states
        return out

    def compute_output_shape(self, input_shape):
        """From the wrapped layers' formulas, so an unknown time axis (``Input((None, 2))``) is
        accepted wherever the plain layer accepts it."""
        forward = self.forward_layer.compute_output_shape(input_shape)
        backward = self.backward_layer.compute_output_shape(input_shape)
        states = []
        if self.return_state:
            states = list(forward[1:]) + list(backward[1:])
            forward, backward = forward[0], backward[0]
        forward, backward = tuple(forward), tuple(backward)
        if self.merge_mode == "concat":
            last = None if forward[-1] is None or backward[-1] is None else forward[-1] + backward[-1]
            out = forward[:-1] + (last,)
        elif self.merge_mode is None:
            out = [forward, backward]
        else:
            out = forward
        if self.return_state:
            return (out if isinstance(out, list) else [out]) + states
        return out

    def reset_states(self):
        self.forward_layer.reset_states()
        self.backward_layer.reset_states()

    def get_config(self):
        config = super().get_config()
        config.update(layer=_layer_config(self.forward_layer), merge_mode=self.merge_mode,
                      backward_layer=_layer_config(self.backward_layer))
        config["layer"]["config"]["name"] = self.forward_layer.name[len("forward_"):] \
            if self.forward_layer.name.startswith("forward_") else self.forward_layer.name
        return config

    def extra_repr(self):
        return f"merge_mode={self.merge_mode!r}"


class TimeDistributed(_SequenceLayer):
    """Applies ``layer`` to every time step: ``y[:, t] = layer(x[:, t])``.

    The steps are folded into the batch (``(N, T, ...) -> (N*T, ...)``), so the layer runs
    once on all of them; the mask, if any, passes through.

    Args:
        layer: any layer.

    Shape:
        - Input: ``(N, T, *)``. Output: ``(N, T, *layer_output)``.

    Example:
        >>> layers.TimeDistributed(layers.Dense(4))(np.random.randn(2, 5, 3)).shape
        (2, 5, 4)
    """

    def __init__(self, layer, name=None, dtype=None, trainable=True, **kwargs):
        layer = _layer_from_config(layer)
        if not isinstance(layer, Layer):
            raise invalid("layer", "a Layer", layer, TypeError)
        super().__init__(name=name or f"time_distributed_{layer.name}",
                         dtype=dtype or layer.dtype, trainable=trainable, **kwargs)
        self.layer = layer

    def build(self, input_shape):
        input_shape = tuple(input_shape)
        if len(input_shape) < 3:
            raise ValueError(f"Layer '{self.name}' expects inputs with at least 3 axes (batch, "
                             f"timesteps, ...). Received input_shape={input_shape}")
        super().build(input_shape)

    def call(self, x, training=False, mask=None):
        shape = tuple(x.shape)
        if len(shape) < 3:
            self._check_input(x, min_ndim=3)
        n, t = shape[0], shape[1]
        y = self.layer(x.reshape((n * t,) + shape[2:]), training=training)
        out = y.reshape((n, t) + tuple(y.shape[1:]))
        in_mask = _input_mask(x, mask, n, t)
        if in_mask is not None:
            set_keras_mask(out, in_mask)
        return out

    def compute_output_shape(self, input_shape):
        """``(N, T) + layer's output per step``, from the layer's formula (T may be None)."""
        input_shape = tuple(input_shape)
        if len(input_shape) < 3:
            raise ValueError(f"Layer '{self.name}' expects inputs with at least 3 axes (batch, "
                             f"timesteps, ...). Received input_shape={input_shape}")
        inner = tuple(self.layer.compute_output_shape((None,) + input_shape[2:]))
        return input_shape[:2] + inner[1:]

    def get_config(self):
        return {**super().get_config(), "layer": _layer_config(self.layer)}

    def extra_repr(self):
        return f"layer={type(self.layer).__name__}"
