"""The differentiable ops that layers and losses are built from.

``import minnet.functional as F``. Every function takes Tensors (or ndarrays) and returns
a Tensor; each is a ``minnet.Function`` over the Cython kernels in ``minnet._ext``, with
its forward and backward math in ``docs/math/``.

| module | ops |
|---|---|
| ``_conv`` | ``conv2d`` |
| ``_linear`` | ``linear`` |
| ``_activations`` | ``relu``, ``leaky_relu``, ``elu``, ``selu``, ``sigmoid``, ``tanh``, ``softmax``, ``log_softmax`` |
| ``_losses`` | ``cross_entropy``, ``nll_loss``, ``mse_loss``, ``l1_loss``, ``huber_loss``, ``binary_cross_entropy``, ``binary_cross_entropy_with_logits`` |
| ``_dropout`` | ``dropout``, ``alpha_dropout``, ``spatial_dropout2d`` |
| ``_normalization`` | ``batch_norm`` |
| ``_pooling`` | ``max_pool2d``, ``avg_pool2d``, ``global_avg_pool2d``, ``global_max_pool2d`` |
| ``_recurrent`` | ``lstm``, ``gru``, ``rnn``, ``embedding`` |
| ``_attention`` | ``scaled_dot_product_attention``, ``dot_product_attention_keras`` |
"""
from ._activations import (SELU_ALPHA, SELU_SCALE, elu, leaky_relu, log_softmax, relu, selu,
                           sigmoid, softmax, tanh)
from ._activations import (gelu, hardsigmoid, hardswish, mish, prelu, prelu_broadcast, relu6,
                           silu, softplus, softsign)
from ._image import interpolate, pad2d, resize_bilinear2d, upsample_nearest2d
from ._layernorm import group_norm, layer_norm
from ._conv import conv2d, conv_transpose2d
from ._conv3d import conv3d, conv_transpose3d
from ._linear import linear, linear_no_graph, linear_relu  # noqa: F401 (Dense's ReLU paths)
from ._dropout import alpha_dropout, dropout, spatial_dropout2d
from ._losses import (binary_cross_entropy, binary_cross_entropy_with_logits, cross_entropy,
                      huber_loss, l1_loss, mse_loss, nll_loss)
from ._normalization import NativeBatchNorm, SyncBatchNorm, batch_norm
from ._pooling import avg_pool2d, global_avg_pool2d, global_max_pool2d, max_pool2d
from ._recurrent import concat_features, embedding, gru, lstm, reverse_sequence, rnn
from ._attention import dot_product_attention_keras, scaled_dot_product_attention
from ._attention import composed_attention, fused_attention, kernel_mask  # noqa: F401 (the attention layers' paths)

__all__ = ["linear", "conv2d", "conv_transpose2d", "conv3d", "conv_transpose3d", "relu", "leaky_relu", "elu", "selu", "sigmoid", "tanh", "softmax",
           "log_softmax", "cross_entropy", "nll_loss", "mse_loss", "l1_loss", "huber_loss",
           "binary_cross_entropy", "binary_cross_entropy_with_logits", "dropout", "alpha_dropout",
           "spatial_dropout2d", "batch_norm", "max_pool2d", "avg_pool2d", "global_avg_pool2d",
           "global_max_pool2d", "NativeBatchNorm", "SyncBatchNorm",
           "SELU_ALPHA", "SELU_SCALE"]
__all__ += ["gelu", "silu", "softplus", "softsign", "relu6", "hardsigmoid", "hardswish", "mish",
            "prelu", "prelu_broadcast", "layer_norm", "group_norm", "interpolate", "pad2d",
            "resize_bilinear2d", "upsample_nearest2d"]
__all__ += ["lstm", "gru", "rnn", "embedding", "reverse_sequence", "concat_features"]
__all__ += ["scaled_dot_product_attention", "dot_product_attention_keras"]
