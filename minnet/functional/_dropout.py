"""Differentiable dropout, alpha dropout and spatial (channel) dropout.

The math is in docs/math/dropout.md.  Masks come from ``minnet._ext.dropout_kernels``: a
counter-based hash keyed by ``minnet._random.dropout_key(n)``, so a seeded run draws the
same masks whatever the thread count.  Each op keeps only its ``uint8`` mask (1 byte per
element, or per channel for spatial dropout) for backward.
"""
import numbers

from minnet import _random
from minnet._checks import check_choice
from minnet._config import get_num_threads
from minnet._ext import dropout_kernels as _kernels
from minnet.functional._common import as_float_input
from minnet.autograd import Function, Tensor

__all__ = ["dropout", "alpha_dropout", "spatial_dropout2d", "Dropout", "AlphaDropout",
           "SpatialDropout2D"]


def _check_rate(rate):
    if isinstance(rate, bool) or not isinstance(rate, numbers.Real) or not 0.0 <= rate < 1.0:
        raise ValueError(f"Invalid value for argument `rate`: expected a float in [0, 1). "
                         f"Received: rate={rate!r}")
    return float(rate)


def _passthrough(x):
    return x if isinstance(x, Tensor) else Tensor(x)


class Dropout(Function):
    """``y = x * mask / (1 - rate)``; backward ``dx = g * mask / (1 - rate)``."""

    node_name = "DropoutBackward"

    @staticmethod
    def forward(ctx, x, rate):
        seed, offset = _random.dropout_key(x.size)
        out, mask = _kernels.dropout_forward(x, rate, seed, offset, get_num_threads())
        ctx.mask = mask
        ctx.scale = 1.0 / (1.0 - rate)
        return out

    @staticmethod
    def backward(ctx, grad):
        if not ctx.needs_input_grad[0]:
            return None, None
        return _kernels.masked_scale_backward(grad, ctx.mask, ctx.scale, get_num_threads()), None


class AlphaDropout(Function):
    """Kept: ``y = a*x + b``; dropped: ``y = a*alpha' + b``; backward ``dx = g * mask * a``."""

    node_name = "AlphaDropoutBackward"

    @staticmethod
    def forward(ctx, x, rate):
        seed, offset = _random.dropout_key(x.size)
        out, mask = _kernels.alpha_dropout_forward(x, rate, seed, offset, get_num_threads())
        ctx.mask = mask
        ctx.a = _kernels.alpha_dropout_coefficients(rate)[0]
        return out

    @staticmethod
    def backward(ctx, grad):
        if not ctx.needs_input_grad[0]:
            return None, None
        return _kernels.masked_scale_backward(grad, ctx.mask, ctx.a, get_num_threads()), None


class SpatialDropout2D(Function):
    """One mask value per (n, c) plane: ``y[n, c] = x[n, c] * mask[n, c] / (1 - rate)``.

    The mask is indexed (n, c) in both layouts, so a seed drops the same channels of the
    same image whether it is NCHW or NHWC.
    """

    node_name = "SpatialDropout2DBackward"

    @staticmethod
    def forward(ctx, x, rate, channels_last=False):
        n_planes = x.shape[0] * (x.shape[-1] if channels_last else x.shape[1])
        seed, offset = _random.dropout_key(n_planes)
        mask = _kernels.dropout_mask(n_planes, rate, seed, offset, get_num_threads())
        ctx.mask = mask
        ctx.scale = 1.0 / (1.0 - rate)
        ctx.channels_last = channels_last
        return _kernels.channel_scale(x, mask, ctx.scale, get_num_threads(),
                                      channels_last=channels_last)

    @staticmethod
    def backward(ctx, grad):
        rest = (None,) * (len(ctx.needs_input_grad) - 1)
        if not ctx.needs_input_grad[0]:
            return (None,) + rest
        return (_kernels.channel_scale(grad, ctx.mask, ctx.scale, get_num_threads(),
                                       channels_last=ctx.channels_last),) + rest


def dropout(x, rate, training=True):
    """Zero each element with probability ``rate`` and scale the rest by ``1 / (1 - rate)``.

    In eval mode (``training=False``) or with ``rate == 0`` this is the identity: ``x``
    itself is returned (as a Tensor), no mask is drawn and no graph node is added.

    Args:
        x: Tensor or array, any shape (float; other dtypes are cast to float32).
        rate: drop probability, a float in [0, 1).
        training: apply dropout (True) or pass ``x`` through (False).

    Returns:
        A Tensor like ``x``; backward node ``DropoutBackward``.

    Shape:
        x: (*); output: (*)

    Example:
        >>> mn.manual_seed(0)
        >>> y = F.dropout(mn.tensor(np.ones((2, 4))), 0.5)   # entries are 0 or 2
        >>> F.dropout(y, 0.5, training=False) is y
        True
    """
    rate = _check_rate(rate)
    x = as_float_input(x, "x")
    if not training or rate == 0.0:
        return _passthrough(x)
    return Dropout.apply(x, rate)


def alpha_dropout(x, rate, training=True):
    """Alpha dropout (Klambauer et al. 2017), for SELU networks, as ``torch.nn.functional.alpha_dropout``.

    Dropped units are set to SELU's negative saturation ``alpha' = -1.7580993408473766``
    and the result is transformed ``a * y + b`` with ``a = ((1-p)(1 + p alpha'^2))^-1/2``
    and ``b = -a alpha' p``, which keeps a zero-mean, unit-variance input at zero mean and
    unit variance.  Identity in eval mode or with ``rate == 0``.

    Args:
        x: Tensor or array, any shape.
        rate: drop probability, a float in [0, 1).
        training: apply (True) or pass ``x`` through (False).

    Returns:
        A Tensor like ``x``; backward node ``AlphaDropoutBackward``.

    Shape:
        x: (*); output: (*)

    Example:
        >>> x = mn.tensor(np.random.randn(1000))
        >>> y = F.alpha_dropout(x, 0.2)     # mean ~ 0, variance ~ 1
    """
    rate = _check_rate(rate)
    x = as_float_input(x, "x")
    if not training or rate == 0.0:
        return _passthrough(x)
    return AlphaDropout.apply(x, rate)


def spatial_dropout2d(x, rate, training=True, *, data_format="channels_first"):
    """Drop whole channels of an image batch (as ``torch.nn.functional.dropout2d``).

    One Bernoulli(1 - rate) value per (sample, channel); kept channels are scaled by
    ``1 / (1 - rate)``.  Neighbouring pixels of a feature map are strongly correlated,
    so dropping single pixels regularises little; dropping a map does.

    Args:
        x: Tensor or array of shape (N, C, H, W).
        rate: drop probability, a float in [0, 1).
        training: apply (True) or pass ``x`` through (False).
        data_format: ``"channels_first"`` (default, (N, C, H, W)) or ``"channels_last"``
            ((N, H, W, C); native kernel, the same channels dropped for a seed).

    Returns:
        A Tensor like ``x``; backward node ``SpatialDropout2DBackward``.

    Shape:
        x: (N, C, H, W); output: (N, C, H, W)

    Example:
        >>> y = F.spatial_dropout2d(mn.tensor(np.ones((2, 8, 4, 4))), 0.5)
        >>> sorted(set(np.unique(y.numpy()[0, 0])))   # [0.0] or [2.0]: a whole map
    """
    rate = _check_rate(rate)
    channels_last = check_choice("data_format", data_format,
                                 ("channels_first", "channels_last")) == "channels_last"
    x = as_float_input(x, "x")
    if x.ndim != 4:
        raise ValueError(f"Invalid argument `x`: expected a 4-D input "
                         f"{'(N, H, W, C)' if channels_last else '(N, C, H, W)'}. "
                         f"Received: shape={tuple(x.shape)}")
    if not training or rate == 0.0:
        return _passthrough(x)
    return SpatialDropout2D.apply(x, rate, channels_last)
