"""Pooling layers: MaxPooling2D, AveragePooling2D, GlobalAveragePooling2D, GlobalMaxPooling2D.

Images are ``(N, H, W, C)`` under ``"channels_last"`` (the default,
``mn.config.image_data_format()``) and ``(N, C, H, W)`` under ``"channels_first"``; both
run on native kernels.  The math is in ``minnet.functional`` (``max_pool2d``,
``avg_pool2d``, ``global_avg_pool2d``, ``global_max_pool2d``) and docs/math/pooling.md.
"""
import numpy as np

from minnet import functional as F
from minnet._checks import check_int_tuple, check_padding
from minnet.autograd import Tensor
from minnet.layers.base import Layer
from minnet.layers._layout import check_user_layout, resolve_data_format

__all__ = ["MaxPooling2D", "AveragePooling2D", "GlobalAveragePooling2D", "GlobalMaxPooling2D"]


class _SpatialLayer(Layer):
    """A layer with an image layout: ``data_format`` resolved at construction."""

    def _init_data_format(self, data_format):
        self.data_format, self._data_format_explicit = resolve_data_format(data_format)

    def __call__(self, x, *args, **kwargs):
        # The user's own array (not a Tensor from a previous layer): check its layout.
        if not isinstance(x, Tensor):
            check_user_layout(self, np.shape(x))
        return super().__call__(x, *args, **kwargs)

    def _split(self, shape):
        """``(n, c, h, w)`` of a 4-D shape in this layer's layout."""
        n, a, b, c = shape
        return (n, c, a, b) if self.data_format == "channels_last" else (n, a, b, c)

    def _join(self, n, c, h, w):
        return (n, h, w, c) if self.data_format == "channels_last" else (n, c, h, w)

    def _check_rank(self, input_shape):
        input_shape = tuple(input_shape)
        if len(input_shape) != 4:
            layout = "(N, H, W, C)" if self.data_format == "channels_last" else "(N, C, H, W)"
            raise ValueError(f"Input 0 of layer '{self.name}' is incompatible with the layer: "
                             f"expected ndim=4 {layout} (data_format='{self.data_format}'), "
                             f"found ndim={len(input_shape)}. Full shape received: {input_shape}")
        return input_shape

    def _check_call_input(self, x):
        self.compute_output_shape(x.shape)          # raises the layer's message

    def get_config(self):
        return {**super().get_config(), "data_format": self.data_format}


class _Pooling2D(_SpatialLayer):
    """Shared arguments and shape logic of max and average pooling."""

    def __init__(self, pool_size=(2, 2), strides=None, padding="valid", data_format=None,
                 name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.pool_size = check_int_tuple("pool_size", pool_size, 2)
        self.strides = self.pool_size if strides is None else check_int_tuple("strides", strides, 2)
        self.padding = check_padding("padding", padding, 2)
        if isinstance(self.padding, tuple) and any(p * 2 > k for p, k in zip(self.padding, self.pool_size)):
            raise ValueError(f"Invalid value for argument `padding`: expected at most half the pool "
                             f"size {self.pool_size} on each side. Received: padding={self.padding}")
        self._init_data_format(data_format)

    def build(self, input_shape):
        self.compute_output_shape(input_shape)        # raises when the pool does not fit
        super().build(input_shape)

    def _op(self, x):
        raise NotImplementedError

    def call(self, x, training=False):
        with self._explaining_refusal(x):   # the functional op validates
            return self._op(x)

    def compute_output_shape(self, input_shape):
        input_shape = self._check_rank(input_shape)
        n, c, h, w = self._split(input_shape)
        out = []
        for axis, size, k, s, p in zip("HW", (h, w), self.pool_size, self.strides,
                                       (self.padding,) * 2 if isinstance(self.padding, str)
                                       else self.padding):
            if size is None:
                out.append(None)
                continue
            if p == "same":
                out.append(-(-size // s))
                continue
            padded = size + 2 * (0 if p == "valid" else p)
            if padded < k:
                raise ValueError(
                    f"Layer '{self.name}' cannot pool input of shape {input_shape}: read as "
                    f"data_format='{self.data_format}', its spatial size is {(h, w)} and its "
                    f"{axis} size {size}"
                    f"{f' (padded {padded})' if padded != size else ''}, smaller than "
                    f"pool_size {self.pool_size}. Check the layout (data_format=..., "
                    f"mn.config.set_image_data_format(...)) or use padding='same'.")
            out.append((padded - k) // s + 1)
        return self._join(n, c, out[0], out[1])

    def count_flops(self, input_shape):
        """One operation (compare or add) per window element per output: ``N*C*H_out*W_out*ph*pw``."""
        n, c, oh, ow = self._split(self.compute_output_shape(input_shape))
        return (1 if n is None else n) * c * oh * ow * self.pool_size[0] * self.pool_size[1]

    def get_config(self):
        return {**super().get_config(), "pool_size": list(self.pool_size),
                "strides": list(self.strides),
                "padding": list(self.padding) if isinstance(self.padding, tuple) else self.padding}

    def extra_repr(self):
        parts = [f"pool_size={self.pool_size}"]
        if self.strides != self.pool_size:
            parts.append(f"strides={self.strides}")
        if self.padding != "valid":
            parts.append(f"padding={self.padding!r}" if isinstance(self.padding, str) else f"padding={self.padding}")
        parts.append(f"data_format={self.data_format!r}")
        return ", ".join(parts)


class MaxPooling2D(_Pooling2D):
    """Max over ``pool_size`` windows of each channel (Keras's ``MaxPooling2D``).

    Backward sends each output's gradient to the position of its maximum (the first one
    on ties); the layer keeps only those argmax indices.

    Args:
        pool_size: int or ``(ph, pw)`` (default ``(2, 2)``).
        strides: int or pair; None (default) means ``pool_size``.
        padding: ``"valid"`` (default), ``"same"`` (output ``ceil(H/stride)``) or an int / pair
            of implicit -inf padding per side (at most half the window, as PyTorch).
        data_format: ``"channels_last"`` (N, H, W, C), ``"channels_first"`` (N, C, H, W) or
            None (default: ``mn.config.image_data_format()``, read at construction).

    Shape:
        - Input: ``(N, H, W, C)`` (channels_last) or ``(N, C, H, W)``.
        - Output: ``(N, H_out, W_out, C)`` or ``(N, C, H_out, W_out)``,
          ``H_out = floor((H + 2*p - ph) / sh) + 1``.

    Example:
        >>> layers.MaxPooling2D(2)(np.zeros((1, 8, 8, 3))).shape
        (1, 4, 4, 3)
    """

    def _op(self, x):
        return F.max_pool2d(x, self.pool_size, strides=self.strides, padding=self.padding,
                            data_format=self.data_format)


class AveragePooling2D(_Pooling2D):
    """Mean over ``pool_size`` windows of each channel (Keras's ``AveragePooling2D``).

    With int padding the padded zeros count in the mean (PyTorch's
    ``count_include_pad=True``); with ``"same"`` they do not (Keras).

    Args:
        pool_size: int or ``(ph, pw)`` (default ``(2, 2)``).
        strides: int or pair; None (default) means ``pool_size``.
        padding: ``"valid"`` (default), ``"same"`` or an int / pair of zeros per side.
        data_format: ``"channels_last"``, ``"channels_first"`` or None (the global setting).

    Shape:
        - Input: ``(N, H, W, C)`` (channels_last) or ``(N, C, H, W)``.
        - Output: ``(N, H_out, W_out, C)`` or ``(N, C, H_out, W_out)``.

    Example:
        >>> layers.AveragePooling2D(2)(np.ones((1, 8, 8, 3))).shape
        (1, 4, 4, 3)
    """

    def _op(self, x):
        return F.avg_pool2d(x, self.pool_size, strides=self.strides, padding=self.padding,
                            data_format=self.data_format)

    def count_flops(self, input_shape):
        """Window sums plus one division per output."""
        n, c, oh, ow = self._split(self.compute_output_shape(input_shape))
        return super().count_flops(input_shape) + (1 if n is None else n) * c * oh * ow


class _GlobalPooling2D(_SpatialLayer):
    """Shared arguments of the global poolings: ``data_format``, ``keepdims`` (Keras)."""

    def __init__(self, data_format=None, keepdims=False, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self._init_data_format(data_format)
        if not isinstance(keepdims, (bool, np.bool_)):
            raise TypeError(f"Invalid value for argument `keepdims`: expected a bool. "
                            f"Received: keepdims={keepdims!r}")
        self.keepdims = bool(keepdims)

    def build(self, input_shape):
        self.compute_output_shape(input_shape)
        super().build(input_shape)

    def _op(self, x):
        raise NotImplementedError

    def call(self, x, training=False):
        with self._explaining_refusal(x):   # the functional op validates
            out = self._op(x)
        if self.keepdims:
            n, c = out.shape
            out = out.reshape(self._join(n, c, 1, 1))
        return out

    def compute_output_shape(self, input_shape):
        input_shape = self._check_rank(input_shape)
        n, c, h, w = self._split(input_shape)
        if h == 0 or w == 0:
            raise ValueError(f"Layer '{self.name}' cannot pool input of shape {input_shape}: "
                             f"read as data_format='{self.data_format}', its feature maps are "
                             f"empty ({h} x {w}).")
        return self._join(n, c, 1, 1) if self.keepdims else (n, c)

    def count_flops(self, input_shape):
        """``N*C*H*W`` operations plus ``N*C`` (the division of the mean)."""
        n, c, h, w = (1 if s is None else s for s in self._split(self._check_rank(input_shape)))
        return n * c * h * w + n * c

    def get_config(self):
        return {**super().get_config(), "keepdims": self.keepdims}

    def extra_repr(self):
        return f"data_format={self.data_format!r}" + (", keepdims=True" if self.keepdims else "")


class GlobalAveragePooling2D(_GlobalPooling2D):
    """Mean over the spatial axes of each channel (Keras's ``GlobalAveragePooling2D``).

    Args:
        data_format: ``"channels_last"``, ``"channels_first"`` or None (the global setting).
        keepdims: keep the spatial axes as size 1 (default False, as Keras).

    Shape:
        - Input: ``(N, H, W, C)`` (channels_last) or ``(N, C, H, W)``.
        - Output: ``(N, C)``; with ``keepdims`` ``(N, 1, 1, C)`` or ``(N, C, 1, 1)``.

    Example:
        >>> layers.GlobalAveragePooling2D()(np.ones((2, 5, 5, 3))).shape
        (2, 3)
    """

    def _op(self, x):
        return F.global_avg_pool2d(x, data_format=self.data_format)


class GlobalMaxPooling2D(_GlobalPooling2D):
    """Maximum over the spatial axes of each channel (Keras's ``GlobalMaxPooling2D``).

    The gradient goes to the first maximum of each map (as a max pool whose window is the
    whole map).

    Args:
        data_format: ``"channels_last"``, ``"channels_first"`` or None (the global setting).
        keepdims: keep the spatial axes as size 1 (default False, as Keras).

    Shape:
        - Input: ``(N, H, W, C)`` (channels_last) or ``(N, C, H, W)``.
        - Output: ``(N, C)``; with ``keepdims`` ``(N, 1, 1, C)`` or ``(N, C, 1, 1)``.

    Example:
        >>> layers.GlobalMaxPooling2D()(np.ones((2, 5, 5, 3))).shape
        (2, 3)
    """

    def _op(self, x):
        return F.global_max_pool2d(x, data_format=self.data_format)

    def count_flops(self, input_shape):
        """One comparison per element: ``N*C*H*W``."""
        n, c, h, w = (1 if s is None else s for s in self._split(self._check_rank(input_shape)))
        return n * c * h * w
