"""BatchNormalization with Keras's arguments and meanings, on native kernels for either layout.

Channels on the last axis (``axis=-1``: NHWC images, ``(N, C)`` features, ``(N, L, C)``
sequences) run the (M, C) kernels; ``axis=1`` (NCHW images) the (N, C, L) ones; any other
axis is viewed (a reshape, not a copy) as (before, C, after).  The math is
``minnet.functional.batch_norm``; see docs/math/batchnorm.md.
"""
import math
import numbers

import numpy as np

from minnet import config, initializers
from minnet import functional as F
from minnet._utils import warn
from minnet._checks import check_float
from minnet.layers.base import Layer

__all__ = ["BatchNormalization"]


class BatchNormalization(Layer):
    """Normalise each channel with batch statistics (training) or moving ones (eval), as Keras.

    Training: ``y = gamma * (x - mean_B) / sqrt(var_B + epsilon) + beta`` with the mean and
    biased variance of the batch over every axis but ``axis``, and
    ``moving_mean = momentum * moving_mean + (1 - momentum) * mean_B`` (Keras's meaning of
    ``momentum``: the weight of the old value).  ``moving_variance`` is updated the same
    way with the *unbiased* batch variance (``M / (M - 1)`` times the biased one), as
    PyTorch keeps it; Keras uses the biased one.  A numerics choice that changes the moving
    variance by a factor ``M / (M - 1)`` (M = values per channel in a batch).  A batch with
    one value per channel is normalised as Keras does (variance 0: the output is ``beta``)
    and its zero variance enters the moving variance.  Eval: the moving statistics replace
    the batch ones.  A layer with ``trainable = False`` runs in eval mode (Keras 3).

    Weights (``get_weights()`` order): ``gamma`` (if ``scale``), ``beta`` (if ``center``),
    then the non-trainable state ``moving_mean``, ``moving_variance``; all ``(C,)``.

    Args:
        axis: the channel axis; None (default) means the channel axis of the image layout,
            ``-1`` under ``"channels_last"`` (Keras's default) and ``1`` under
            ``"channels_first"`` (read from ``mn.config`` at construction).
        momentum: float in [0, 1] (default 0.99, Keras's meaning).  Below 0.5 a warning
            says so (PyTorch's ``momentum=0.1`` is Keras's ``0.9``).
        epsilon: positive float added to the variance (default 1e-3, Keras's).
        center: learn the offset ``beta`` (default True).
        scale: learn the scale ``gamma`` (default True).
        beta_initializer, gamma_initializer, moving_mean_initializer,
        moving_variance_initializer: names/Initializers (defaults zeros, ones, zeros, ones).
        synchronized: under data parallelism (``mn.distribution.DataParallel``), compute
            the batch statistics over the samples of every rank, so N ranks normalise as one
            process with the global batch would (Keras's argument; default False: each rank
            uses its own samples, as PyTorch DDP without SyncBatchNorm). No effect in one
            process.
        name, dtype, trainable: as for every layer.

    Shape:
        - Input: any rank >= 2 (``(N, C)``, ``(N, H, W, C)``, ``(N, C, H, W)`` with
          ``axis=1``, ...).  Output: the same.

    Example:
        >>> bn = layers.BatchNormalization()
        >>> y = bn(np.random.randn(8, 4, 4, 3), training=True)
        >>> [w.shape for w in bn.get_weights()]
        [(3,), (3,), (3,), (3,)]
    """

    weight_option_targets = {"beta": ("beta",), "gamma": ("gamma",)}      # Keras's beta_/gamma_ options

    def __init__(self, axis=None, momentum=0.99, epsilon=1e-3, center=True, scale=True,
                 beta_initializer="zeros", gamma_initializer="ones",
                 moving_mean_initializer="zeros", moving_variance_initializer="ones",
                 synchronized=False, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        if axis is None:
            axis = -1 if config.image_data_format() == "channels_last" else 1
        if isinstance(axis, (tuple, list)) and len(axis) == 1:
            axis = axis[0]
        if isinstance(axis, bool) or not isinstance(axis, numbers.Integral) or axis == 0:
            raise ValueError(f"Invalid value for argument `axis`: expected the channel axis, an "
                             f"int other than 0 (the batch axis), such as -1 or 1. "
                             f"Received: axis={axis!r}")
        self.momentum = check_float("momentum", momentum, 0.0, 1.0)
        if self.momentum < 0.5:
            warn(
                f"BatchNormalization(momentum={momentum}): minnet uses Keras's meaning of "
                f"`momentum`, the weight of the old moving statistic "
                f"(moving = momentum * moving + (1 - momentum) * batch), so the moving "
                f"statistics will mostly follow the last batch. PyTorch's momentum={momentum} "
                f"is momentum={1 - self.momentum:g} here (1 - momentum).")
        self.epsilon = check_float("epsilon", epsilon, 0.0, low_open=True)
        self.axis = int(axis)
        self.synchronized = bool(synchronized)
        self.center = bool(center)
        self.scale = bool(scale)
        self.gamma_initializer = initializers.get(gamma_initializer)
        self.beta_initializer = initializers.get(beta_initializer)
        self.moving_mean_initializer = initializers.get(moving_mean_initializer)
        self.moving_variance_initializer = initializers.get(moving_variance_initializer)
        self.gamma = self.beta = self.moving_mean = self.moving_variance = None

    def _channel_axis(self, ndim):
        if not -ndim <= self.axis < ndim or self.axis % ndim == 0:
            raise ValueError(f"Layer '{self.name}': axis={self.axis} is not a channel axis of "
                             f"input with {ndim} dimensions (expected 1 .. {ndim - 1} or "
                             f"-{ndim - 1} .. -1; axis 0 is the batch).")
        return self.axis % ndim

    def build(self, input_shape):
        input_shape = tuple(input_shape)
        if len(input_shape) < 2:
            raise ValueError(f"Layer '{self.name}' expects input of rank >= 2 (batch, ..., "
                             f"channels). Received input_shape={input_shape}")
        axis = self._channel_axis(len(input_shape))
        if input_shape[axis] is None:
            raise ValueError(f"Layer '{self.name}' needs a known number of channels on axis "
                             f"{self.axis}. Received input_shape={input_shape}")
        channels = int(input_shape[axis])
        self.num_features = channels
        if self.scale:
            self.gamma = self.add_weight("gamma", (channels,), initializer=self.gamma_initializer)
        if self.center:
            self.beta = self.add_weight("beta", (channels,), initializer=self.beta_initializer)
        self.moving_mean = self.add_weight("moving_mean", (channels,),
                                           initializer=self.moving_mean_initializer, trainable=False)
        self.moving_variance = self.add_weight("moving_variance", (channels,),
                                               initializer=self.moving_variance_initializer, trainable=False)
        super().build(input_shape)

    def call(self, x, training=False):
        ndim = x.ndim
        if ndim != len(self._build_input_shape or ()) and self._build_input_shape is not None:
            raise ValueError(f"Input 0 of layer '{self.name}' is incompatible with the layer: "
                             f"expected ndim={len(self._build_input_shape)}, found ndim={ndim}. "
                             f"Full shape received: {tuple(x.shape)}")
        axis = self._channel_axis(ndim)
        self._check_input(x, axis=axis, size=self.num_features)
        training = bool(training) and self.trainable
        shape = tuple(x.shape)
        if training and math.prod(shape) == 0:
            raise ValueError(f"Layer '{self.name}' got an empty batch {shape} in training mode: "
                             f"batch statistics need at least one sample.")
        channels_last = axis == ndim - 1
        if not channels_last and axis != 1:
            # any other axis: (before, C, after), a view
            x = x.reshape(math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1:]))
        distribution = config.current_distribution() if self.synchronized and training else None
        group = getattr(distribution, "step_group", None)     # set by fit for each step
        if group is not None:
            out = F.SyncBatchNorm.apply(
                x, self.gamma, self.beta, running_mean=self.moving_mean.data,
                running_var=self.moving_variance.data, momentum=1.0 - self.momentum,
                eps=self.epsilon, channels_last=channels_last, scale=distribution.step_scale,
                reduce=lambda buffer: distribution.allreduce(buffer, "synchronized BatchNormalization",
                                                             group=group))
        else:
            out = F.NativeBatchNorm.apply(
                x, self.gamma, self.beta, running_mean=self.moving_mean.data,
                running_var=self.moving_variance.data, training=training,
                momentum=1.0 - self.momentum, eps=self.epsilon, channels_last=channels_last)
        if training:
            self.moving_mean._bump_version()
            self.moving_variance._bump_version()
        return out if out.shape == shape else out.reshape(shape)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def count_flops(self, input_shape):
        """Four operations per element: subtract the mean, multiply by 1/std, scale, shift."""
        return 4 * int(np.prod([1 if s is None else s for s in input_shape]))

    def get_config(self):
        return {**super().get_config(), "axis": self.axis, "momentum": self.momentum,
                "epsilon": self.epsilon, "center": self.center, "scale": self.scale,
                "synchronized": self.synchronized,
                "gamma_initializer": initializers.serialize(self.gamma_initializer),
                "beta_initializer": initializers.serialize(self.beta_initializer),
                "moving_mean_initializer": initializers.serialize(self.moving_mean_initializer),
                "moving_variance_initializer": initializers.serialize(self.moving_variance_initializer)}

    def extra_repr(self):
        parts = [str(self.num_features)] if self.built else []
        parts += [f"momentum={self.momentum}", f"epsilon={self.epsilon}"]
        if not self.center:
            parts.append("center=False")
        if not self.scale:
            parts.append("scale=False")
        return ", ".join(parts)
