"""Differentiable batch normalisation (the math is in docs/math/batchnorm.md).

``NativeBatchNorm`` is a thin ``Function`` over ``minnet._ext.batchnorm_kernels``.  For backward
it keeps the input ``x`` (already referenced by the graph) and two per-channel float64
vectors ``mean`` and ``inv_std``, not ``x_hat``: ``x_hat`` would be a second array the
size of the input held until backward, while recomputing ``(x - mean) * inv_std`` costs
one multiply-add in a pass that is bound by memory traffic anyway.

``data_format="channels_last"`` (channels on the last axis: NHWC images, or any
``(..., C)`` array) runs the (M, C) kernels, whose reductions are summed in fixed chunks
(the same result for any thread count).
"""
import numbers

import numpy as np

from minnet._checks import check_choice
from minnet._config import get_num_threads
from minnet._ext import batchnorm_kernels as _kernels
from minnet.autograd import Function, Tensor
from minnet.functional._conv import float_dtype

__all__ = ["batch_norm", "NativeBatchNorm", "SyncBatchNorm"]


class NativeBatchNorm(Function):
    """``y = (x - mean) * inv_std * gamma + beta`` per channel, statistics over N (and H, W)."""

    node_name = "NativeBatchNormBackward"

    @staticmethod
    def forward(ctx, x, weight, bias, running_mean=None, running_var=None, training=False,
                momentum=0.1, eps=1e-5, channels_last=False):
        n_threads = get_num_threads()
        C = x.shape[-1] if channels_last else x.shape[1]
        count = x.size // C if C else 0
        gamma = np.ones(C) if weight is None else weight.astype(np.float64)
        beta = np.zeros(C) if bias is None else bias.astype(np.float64)
        if training:
            out, mean, var = _kernels.batch_norm_forward_training(x, gamma, beta, eps, n_threads,
                                                                  channels_last=channels_last)
            if running_mean is not None:
                # PyTorch: running = (1 - m) * running + m * stat, in double, with the
                # unbiased variance (M / (M - 1)) for running_var.
                running_mean[...] = momentum * mean + (1.0 - momentum) * running_mean.astype(np.float64)
            if running_var is not None:
                # one value per channel (a batch of one, which only the Keras layer lets
                # through): no unbiased estimate exists; the batch's own (zero) variance
                # is used, as Keras does
                unbiased = var * (count / (count - 1)) if count > 1 else var
                running_var[...] = momentum * unbiased + (1.0 - momentum) * running_var.astype(np.float64)
            inv_std = 1.0 / np.sqrt(var + eps)
        else:
            mean = running_mean.astype(np.float64)
            inv_std = 1.0 / np.sqrt(running_var.astype(np.float64) + eps)
            scale = gamma * inv_std
            out = _kernels.batch_norm_affine(x, scale, beta - mean * scale, n_threads,
                                             channels_last=channels_last)
        ctx.save_for_backward(x)
        ctx.mean, ctx.inv_std, ctx.gamma = mean, inv_std, gamma
        ctx.training = training
        ctx.channels_last = channels_last
        return out

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        n_threads = get_num_threads()
        need_x, need_w, need_b = ctx.needs_input_grad[:3]
        mean, inv_std, gamma = ctx.mean, ctx.inv_std, ctx.gamma
        last = ctx.channels_last
        grad_x = grad_w = grad_b = None
        if ctx.training:
            # dx = gamma*inv_std/M * (M*g - sum(g) - x_hat*sum(g*x_hat)), fused with the sums
            grad_x, sum_g, dot = _kernels.batch_norm_backward_training(
                grad, x, mean, inv_std, gamma, need_x, n_threads, channels_last=last)
        else:
            sum_g = dot = None
            if need_w or need_b:
                sum_g, dot = _kernels.batch_norm_grad_sums(grad, x, mean, n_threads,
                                                           channels_last=last)
            if need_x:
                # running statistics are constants: dx = g * gamma * inv_std
                zeros = np.zeros_like(mean)
                grad_x = _kernels.batch_norm_backward_input(grad, x, mean, zeros, zeros,
                                                            gamma * inv_std, n_threads,
                                                            channels_last=last)
        if need_w:
            grad_w = dot * inv_std           # sum(g * x_hat)
        if need_b:
            grad_b = sum_g                   # sum(g)
        return (grad_x, grad_w, grad_b) + (None,) * (len(ctx.needs_input_grad) - 3)


class SyncBatchNorm(Function):
    """Batch normalisation with statistics over the samples of every rank (data parallelism).

    ``reduce(buffer)`` sums a float64 buffer over the ranks in place (the layer passes the
    distribution's all-reduce; this floor knows no MPI). ``scale`` is this rank's share
    ``n_local / n_global`` of the global batch: the global loss's gradient is ``scale`` times
    the one arriving here, so the sums in backward are taken of ``scale * g``, and ``dx`` is
    returned in the arriving gradient's units. The result equals ``NativeBatchNorm`` on the
    global batch (to float rounding): mean and variance by the parallel (two-pass) formula,
    ``var = sum_r (M_r var_r + M_r (mean_r - mean)^2) / M``. gamma's and beta's gradients are
    this rank's part (the gradient all-reduce sums them).
    """

    node_name = "SyncBatchNormBackward"

    @staticmethod
    def forward(ctx, x, weight, bias, running_mean=None, running_var=None, momentum=0.1, eps=1e-5,
                channels_last=False, reduce=None, scale=1.0):
        n_threads = get_num_threads()
        C = x.shape[-1] if channels_last else x.shape[1]
        local_mean, local_var = _kernels.batch_norm_stats(x, n_threads, channels_last=channels_last)
        local_count = x.size // C
        sums = np.concatenate([[local_count], local_count * local_mean])
        reduce(sums)
        count = sums[0]
        mean = sums[1:] / count
        spread = local_count * local_var + local_count * (local_mean - mean) ** 2
        reduce(spread)
        var = spread / count
        inv_std = 1.0 / np.sqrt(var + eps)
        gamma = np.ones(C) if weight is None else weight.astype(np.float64)
        beta = np.zeros(C) if bias is None else bias.astype(np.float64)
        if running_mean is not None:
            running_mean[...] = momentum * mean + (1.0 - momentum) * running_mean.astype(np.float64)
        if running_var is not None:
            unbiased = var * (count / (count - 1)) if count > 1 else var
            running_var[...] = momentum * unbiased + (1.0 - momentum) * running_var.astype(np.float64)
        ctx.save_for_backward(x)
        ctx.mean, ctx.inv_std, ctx.gamma, ctx.count = mean, inv_std, gamma, count
        ctx.channels_last, ctx.reduce, ctx.scale = channels_last, reduce, scale
        alpha = gamma * inv_std
        return _kernels.batch_norm_affine(x, alpha, beta - mean * alpha, n_threads,
                                          channels_last=channels_last)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        n_threads = get_num_threads()
        mean, inv_std, last, scale = ctx.mean, ctx.inv_std, ctx.channels_last, ctx.scale
        sum_g, dot = _kernels.batch_norm_grad_sums(grad, x, mean, n_threads, channels_last=last)
        C = len(mean)
        both = np.concatenate([scale * sum_g, scale * dot])
        ctx.reduce(both)
        step = ctx.count * scale
        grad_x = _kernels.batch_norm_backward_input(grad, x, mean, both[:C] / step,
                                                    both[C:] * inv_std * inv_std / step,
                                                    ctx.gamma * inv_std, n_threads, channels_last=last)
        need_x, need_w, need_b = ctx.needs_input_grad[:3]
        return ((grad_x if need_x else None), (dot * inv_std if need_w else None),
                (sum_g if need_b else None)) + (None,) * (len(ctx.needs_input_grad) - 3)


def _float_array(name, value):
    """The ndarray of ``value`` (an ndarray or a Tensor), float32 or float64, else TypeError."""
    array = value.data if isinstance(value, Tensor) else value
    if not isinstance(array, np.ndarray):
        raise TypeError(f"Invalid argument `{name}`: expected a numpy.ndarray or Tensor. "
                        f"Received: {type(value).__name__}")
    float_dtype(name, array)
    return array


def _per_channel(name, value, C, dtype, running=False, updated=False):
    if value is None:
        return None
    data = _float_array(name, value)
    if data.shape != (C,):
        raise ValueError(f"Invalid argument `{name}`: expected shape ({C},) (one value per "
                         f"channel). Received: shape={data.shape}")
    if running:
        # Only training writes the running statistics; eval just reads them, so a
        # read-only array (np.load(mmap_mode="r"), a broadcast view) is fine there.
        if updated and not data.flags.writeable:
            raise ValueError(f"Invalid argument `{name}`: expected a writeable array "
                             f"(it is updated in place when training=True). "
                             f"Received: a read-only array")
        return data
    if isinstance(value, Tensor):
        return value if value.dtype == dtype else value.astype(dtype)   # differentiable cast
    return np.ascontiguousarray(data, dtype=dtype)


def batch_norm(x, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5, *, data_format="channels_first"):
    """Batch normalisation over the batch (and spatial) axes, per channel (PyTorch semantics).

    Training: normalise with the batch mean and the biased batch variance and update the
    running statistics in place, ``running = (1 - momentum) * running + momentum * stat``
    with the *unbiased* variance for ``running_var``.  Eval: normalise with the running
    statistics.  With ``running_mean = running_var = None`` batch statistics are always used.

    Args:
        x: Tensor or array (N, C) or (N, C, H, W); (N, H, W, C) with
            ``data_format="channels_last"``.
        running_mean, running_var: float ndarrays (or Tensors, whose data is used) of shape
            (C,), updated in place when ``training``; or both None.
        weight, bias: optional (C,) Tensors/arrays gamma and beta (default 1 and 0).
        training: use batch statistics and update the running ones.
        momentum: float in [0, 1], weight of the new batch statistic.
        eps: positive float added to the variance.
        data_format: ``"channels_first"`` (default: channels on axis 1, PyTorch) or
            ``"channels_last"`` (channels on the last axis; native (M, C) kernels, same
            numbers).

    Returns:
        A Tensor like ``x``; backward node ``NativeBatchNormBackward``.

    Shape:
        x: (N, C) or (N, C, H, W); running stats, weight, bias: (C,); output like x.

    Example:
        >>> rm, rv = np.zeros(3, np.float32), np.ones(3, np.float32)
        >>> y = F.batch_norm(np.random.randn(8, 3, 4, 4).astype(np.float32), rm, rv, training=True)
        >>> rm   # moved 10% of the way to the batch mean
    """
    if not isinstance(x, Tensor):
        x = np.asarray(x)
        if x.dtype.kind in "iub":
            x = x.astype(np.float32)
    channels_last = check_choice("data_format", data_format,
                                 ("channels_first", "channels_last")) == "channels_last"
    data = _float_array("x", x)
    if data.ndim not in (2, 4):
        raise ValueError(f"Invalid argument `x`: expected a 2-D (N, C) or 4-D "
                         f"{'(N, H, W, C)' if channels_last else '(N, C, H, W)'} "
                         f"input. Received: shape={data.shape}")
    if isinstance(momentum, bool) or not isinstance(momentum, numbers.Real) or not 0 <= momentum <= 1:
        raise ValueError(f"Invalid value for argument `momentum`: expected a float in [0, 1]. "
                         f"Received: momentum={momentum!r}")
    if isinstance(eps, bool) or not isinstance(eps, numbers.Real) or not eps > 0:
        raise ValueError(f"Invalid value for argument `eps`: expected a positive float. "
                         f"Received: eps={eps!r}")
    C = data.shape[-1] if channels_last else data.shape[1]
    if (running_mean is None) != (running_var is None):
        raise ValueError("Invalid arguments `running_mean`, `running_var`: expected both arrays "
                         "or both None. Received: one of them is None")
    running_mean = _per_channel("running_mean", running_mean, C, data.dtype, running=True,
                                updated=bool(training))
    running_var = _per_channel("running_var", running_var, C, data.dtype, running=True,
                               updated=bool(training))
    weight = _per_channel("weight", weight, C, data.dtype)
    bias = _per_channel("bias", bias, C, data.dtype)
    use_batch_stats = bool(training) or running_mean is None
    if use_batch_stats and data.size // max(C, 1) <= 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input "
                         f"size {data.shape}")
    return NativeBatchNorm.apply(x, weight, bias, running_mean=running_mean,
                                 running_var=running_var, training=use_batch_stats,
                                 momentum=float(momentum), eps=float(eps),
                                 channels_last=channels_last)
