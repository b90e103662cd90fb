"""Differentiable 2-D max / average / global average / global max pooling.

Inputs are NCHW by default (PyTorch's layout); ``data_format="channels_last"`` takes
NHWC and runs the native NHWC kernels (no transposes).  The math is in docs/math/pooling.md.  Max pooling keeps only its int32 argmax indices
(flat positions in each (H, W) plane) for backward; average pooling keeps nothing but
the geometry; global average pooling keeps the input shape.
"""

from minnet._checks import check_choice, check_int_tuple, check_padding
from minnet._config import get_num_threads
from minnet._ext import pooling_kernels as _kernels
from minnet.functional._common import as_float_input
from minnet.autograd import Function

__all__ = ["max_pool2d", "avg_pool2d", "global_avg_pool2d", "global_max_pool2d",
           "MaxPool2DWithIndices", "AvgPool2D", "GlobalAvgPool2D", "resolve_pool_geometry"]

_FORMATS = ("channels_first", "channels_last")


def _as_input(x, data_format):
    channels_last = check_choice("data_format", data_format, _FORMATS) == "channels_last"
    x = as_float_input(x, "x")
    if x.ndim != 4:
        raise ValueError(f"Invalid argument `x`: expected a 4-D input "
                         f"{'(N, H, W, C)' if channels_last else '(N, C, H, W)'}. "
                         f"Received: shape={x.shape}")
    return x, channels_last


def _hw(shape, channels_last):
    return tuple(shape[1:3]) if channels_last else tuple(shape[2:])


def resolve_pool_geometry(input_hw, pool_size, strides=None, padding=0):
    """Window geometry from user arguments.

    Args:
        input_hw: ``(H, W)``.
        pool_size: int or pair.
        strides: int, pair or None (= pool_size).
        padding: int or pair (symmetric, at most half the window, as PyTorch), ``"valid"``
            (none) or ``"same"`` (Keras: ``out = ceil(in / stride)``, the extra row/column
            at the bottom/right).

    Returns:
        ``(pool, strides, pads, out_hw, same)`` with ``pads = (top, bottom, left, right)``
        and ``same`` True for ``"same"`` padding.
    """
    kh, kw = check_int_tuple("pool_size", pool_size, 2, error=ValueError)
    sh, sw = (kh, kw) if strides is None else check_int_tuple("strides", strides, 2, error=ValueError)
    H, W = input_hw
    padding = check_padding("padding", padding, 2, error=ValueError)
    same = padding == "same"
    if padding == "valid":
        pads = (0, 0, 0, 0)
    elif same:
        pads = []
        for size, k, s in ((H, kh, sh), (W, kw, sw)):
            out = -(-size // s)
            total = max((out - 1) * s + k - size, 0)
            pads += [total // 2, total - total // 2]
        pads = tuple(pads)
    else:
        ph, pw = int(padding[0]), int(padding[1])
        if 2 * ph > kh or 2 * pw > kw:
            raise ValueError(f"Invalid value for argument `padding`: expected at most half the "
                             f"pool size {(kh, kw)}. Received: padding={(ph, pw)}")
        pads = (ph, ph, pw, pw)
    out_h = (H + pads[0] + pads[1] - kh) // sh + 1
    out_w = (W + pads[2] + pads[3] - kw) // sw + 1
    if out_h < 1 or out_w < 1:
        raise ValueError(f"Invalid value for argument `pool_size`: the window {(kh, kw)} is "
                         f"larger than the (padded) input {(H + pads[0] + pads[1], W + pads[2] + pads[3])}. "
                         f"Received: pool_size={pool_size!r}")
    return (kh, kw), (sh, sw), pads, (out_h, out_w), same


class MaxPool2DWithIndices(Function):
    """Max over each window; backward routes each gradient to its window's argmax."""

    node_name = "MaxPool2DWithIndicesBackward"

    @staticmethod
    def forward(ctx, x, pool, strides, pads, channels_last=False):
        out, indices = _kernels.max_pool2d_forward(x, pool, strides, pads, get_num_threads(),
                                                   channels_last=channels_last)
        ctx.indices = indices
        ctx.input_shape = x.shape
        ctx.channels_last = channels_last
        return out

    @staticmethod
    def backward(ctx, grad):
        rest = (None,) * (len(ctx.needs_input_grad) - 1)
        if not ctx.needs_input_grad[0]:
            return (None,) + rest
        dx = _kernels.max_pool2d_backward(grad, ctx.indices, ctx.input_shape, get_num_threads(),
                                          channels_last=ctx.channels_last)
        return (dx,) + rest


class AvgPool2D(Function):
    """Mean over each window (divisor: whole window, or real elements only)."""

    node_name = "AvgPool2DBackward"

    @staticmethod
    def forward(ctx, x, pool, strides, pads, count_include_pad, channels_last=False):
        ctx.geometry = (x.shape, pool, strides, pads, count_include_pad, channels_last)
        return _kernels.avg_pool2d_forward(x, pool, strides, pads, count_include_pad,
                                           get_num_threads(), channels_last=channels_last)

    @staticmethod
    def backward(ctx, grad):
        rest = (None,) * (len(ctx.needs_input_grad) - 1)
        if not ctx.needs_input_grad[0]:
            return (None,) + rest
        shape, pool, strides, pads, include, channels_last = ctx.geometry
        dx = _kernels.avg_pool2d_backward(grad, shape, pool, strides, pads, include,
                                          get_num_threads(), channels_last=channels_last)
        return (dx,) + rest


class GlobalAvgPool2D(Function):
    """Mean over H and W: (N, C, H, W) or (N, H, W, C) -> (N, C)."""

    node_name = "MeanBackward"

    @staticmethod
    def forward(ctx, x, channels_last=False):
        ctx.input_shape = x.shape
        ctx.channels_last = channels_last
        return _kernels.global_avg_pool2d_forward(x, get_num_threads(),
                                                  channels_last=channels_last)

    @staticmethod
    def backward(ctx, grad):
        rest = (None,) * (len(ctx.needs_input_grad) - 1)
        if not ctx.needs_input_grad[0]:
            return (None,) + rest
        return (_kernels.global_avg_pool2d_backward(grad, ctx.input_shape, get_num_threads(),
                                                    channels_last=ctx.channels_last),) + rest


def max_pool2d(x, pool_size, strides=None, padding=0, *, data_format="channels_first"):
    """2-D max pooling, as ``torch.nn.functional.max_pool2d`` / Keras ``MaxPooling2D``.

    Padded positions count as -inf (they never win).  On ties the first maximum in
    row-major window order gets the gradient, as in PyTorch.

    Args:
        x: Tensor or array (N, C, H, W).
        pool_size: int or (kh, kw).
        strides: int, (sh, sw) or None (= pool_size).
        padding: int or (ph, pw) (at most half the window), "valid" or "same".
        data_format: ``"channels_first"`` (default, NCHW as PyTorch) or
            ``"channels_last"`` (NHWC; native kernel, same numbers).

    Returns:
        Tensor (N, C, OH, OW) with ``OH = (H + pad_h - kh) // sh + 1``; backward node
        ``MaxPool2DWithIndicesBackward``.

    Shape:
        x: (N, C, H, W); output: (N, C, OH, OW) (channels_last: (N, H, W, C) -> (N, OH, OW, C))

    Example:
        >>> x = mn.tensor(np.arange(16.0).reshape(1, 1, 4, 4), requires_grad=True)
        >>> F.max_pool2d(x, 2).numpy()[0, 0]
        array([[ 5.,  7.], [13., 15.]])
    """
    x, channels_last = _as_input(x, data_format)
    pool, strides, pads, _, _ = resolve_pool_geometry(_hw(x.shape, channels_last), pool_size,
                                                      strides, padding)
    return MaxPool2DWithIndices.apply(x, pool, strides, pads, channels_last)


def avg_pool2d(x, pool_size, strides=None, padding=0, *, data_format="channels_first"):
    """2-D average pooling.

    With int/pair padding the padded zeros count in the divisor (PyTorch's
    ``count_include_pad=True``); with ``"same"`` padding they do not (Keras).

    Args:
        x: Tensor or array (N, C, H, W).
        pool_size: int or (kh, kw).
        strides: int, (sh, sw) or None (= pool_size).
        padding: int or (ph, pw) (at most half the window), "valid" or "same".
        data_format: ``"channels_first"`` (default, NCHW) or ``"channels_last"`` (NHWC).

    Returns:
        Tensor (N, C, OH, OW); backward node ``AvgPool2DBackward``.

    Shape:
        x: (N, C, H, W); output: (N, C, OH, OW) (channels_last: (N, H, W, C) -> (N, OH, OW, C))

    Example:
        >>> F.avg_pool2d(np.ones((1, 1, 4, 4), np.float32), 2).numpy()[0, 0]
        array([[1., 1.], [1., 1.]], dtype=float32)
    """
    x, channels_last = _as_input(x, data_format)
    pool, strides, pads, _, same = resolve_pool_geometry(_hw(x.shape, channels_last), pool_size,
                                                         strides, padding)
    return AvgPool2D.apply(x, pool, strides, pads, not same, channels_last)


def global_avg_pool2d(x, *, data_format="channels_first"):
    """Mean of every feature map: (N, C, H, W) -> (N, C).

    Args:
        x: Tensor or array (N, C, H, W) with H*W > 0.
        data_format: ``"channels_first"`` (default) or ``"channels_last"`` ((N, H, W, C)).

    Returns:
        Tensor (N, C); backward node ``MeanBackward``.

    Shape:
        x: (N, C, H, W); output: (N, C)

    Example:
        >>> F.global_avg_pool2d(np.ones((2, 3, 5, 5), np.float32)).shape
        (2, 3)
    """
    x, channels_last = _as_input(x, data_format)
    H, W = _hw(x.shape, channels_last)
    if H * W == 0:
        raise ValueError(f"Invalid argument `x`: expected non-empty feature maps. "
                         f"Received: shape={tuple(x.shape)}")
    return GlobalAvgPool2D.apply(x, channels_last)


def global_max_pool2d(x, *, data_format="channels_first"):
    """Maximum of every feature map: (N, C, H, W) -> (N, C).

    One max-pool window covering the whole map (the max-pool kernel with its argmax
    indices), so the gradient goes to the first maximum on ties, as
    ``torch.nn.functional.max_pool2d(x, x.shape[2:])``; ``torch.amax`` would split it
    between tied maxima.

    Args:
        x: Tensor or array (N, C, H, W) with H*W > 0.
        data_format: ``"channels_first"`` (default) or ``"channels_last"`` ((N, H, W, C)).

    Returns:
        Tensor (N, C); backward node ``MaxPool2DWithIndicesBackward`` (then a reshape).

    Shape:
        x: (N, C, H, W); output: (N, C)

    Example:
        >>> F.global_max_pool2d(np.arange(8.0).reshape(1, 2, 2, 2)).numpy()
        array([[3., 7.]])
    """
    x, channels_last = _as_input(x, data_format)
    H, W = _hw(x.shape, channels_last)
    if H * W == 0:
        raise ValueError(f"Invalid argument `x`: expected non-empty feature maps. "
                         f"Received: shape={tuple(x.shape)}")
    out = MaxPool2DWithIndices.apply(x, (H, W), (H, W), (0, 0, 0, 0), channels_last)
    return out.reshape(x.shape[0], x.shape[3] if channels_last else x.shape[1])
