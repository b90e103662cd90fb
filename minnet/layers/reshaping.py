"""Reshaping layers: UpSampling2D, ZeroPadding2D, Cropping2D, Permute, RepeatVector.

Image layers take Keras's ``data_format`` (None: ``mn.config.image_data_format()``); the
resampling and padding run the kernels of ``minnet._ext.image_kernels`` through
``minnet.functional`` (math in ``docs/math/image.md``).
"""
import numpy as np

from minnet import config
from minnet import functional as F
from minnet._checks import check_choice, check_int, check_int_tuple, check_pad_pairs, invalid
from minnet.layers.base import Layer

__all__ = ["UpSampling2D", "ZeroPadding2D", "Cropping2D", "Permute", "RepeatVector"]


def _hw_axes(data_format):
    return (1, 2) if data_format == "channels_last" else (2, 3)


def _check_image(layer, x):
    if x.ndim != 4:
        raise ValueError(f"Input 0 of layer '{layer.name}' is incompatible with the layer: "
                         f"expected ndim=4 ({'(N, H, W, C)' if layer.data_format == 'channels_last' else '(N, C, H, W)'}, "
                         f"data_format={layer.data_format!r}), found ndim={x.ndim}. Full shape "
                         f"received: {tuple(x.shape)}")


class UpSampling2D(Layer):
    """Repeat rows and columns (``"nearest"``) or resize bilinearly (``"bilinear"``).

    Args:
        size: int or (rows, cols) integer factors (default 2).
        data_format: ``"channels_last"``, ``"channels_first"`` or None (global setting).
        interpolation: ``"nearest"`` (default) or ``"bilinear"`` (half-pixel centres, as
            Keras and PyTorch's ``Upsample(mode="bilinear", align_corners=False)``).

    Shape:
        - Input: ``(N, H, W, C)`` / ``(N, C, H, W)``.  Output: ``H * size[0]``, ``W * size[1]``.

    Example:
        >>> layers.UpSampling2D(2, data_format="channels_last")(np.ones((1, 2, 3, 4))).shape
        (1, 4, 6, 4)
    """

    def __init__(self, size=(2, 2), data_format=None, interpolation="nearest", name=None,
                 dtype=None, trainable=True, **kwargs):
        super().__init__(name=name, dtype=dtype, trainable=trainable, **kwargs)
        self.size = check_int_tuple("size", size, 2, error=ValueError)
        self.data_format = config.normalize_data_format(data_format)
        self.interpolation = check_choice("interpolation", interpolation, ("nearest", "bilinear"))

    def call(self, x, training=False):
        _check_image(self, x)
        if self.interpolation == "nearest":
            return F.upsample_nearest2d(x, self.size, self.data_format)
        h, w = _hw_axes(self.data_format)
        return F.resize_bilinear2d(x, (x.shape[h] * self.size[0], x.shape[w] * self.size[1]),
                                   self.data_format)

    def compute_output_shape(self, input_shape):
        shape = list(input_shape)
        for axis, factor in zip(_hw_axes(self.data_format), self.size):
            shape[axis] = None if shape[axis] is None else shape[axis] * factor
        return tuple(shape)

    def get_config(self):
        return {**super().get_config(), "size": list(self.size), "data_format": self.data_format,
                "interpolation": self.interpolation}

    def extra_repr(self):
        return f"size={self.size}, interpolation={self.interpolation!r}"


class ZeroPadding2D(Layer):
    """Add rows and columns of zeros around each image.

    Args:
        padding: int, ``(sym_height, sym_width)`` or ``((top, bottom), (left, right))``.
        data_format: as for every image layer.

    Example:
        >>> layers.ZeroPadding2D(1, data_format="channels_last")(np.ones((1, 2, 2, 3))).shape
        (1, 4, 4, 3)
    """

    def __init__(self, padding=(1, 1), data_format=None, name=None, dtype=None, trainable=True,
                 **kwargs):
        super().__init__(name=name, dtype=dtype, trainable=trainable, **kwargs)
        self.padding = check_pad_pairs("padding", padding)
        self.data_format = config.normalize_data_format(data_format)

    def call(self, x, training=False):
        _check_image(self, x)
        return F.pad2d(x, self.padding, self.data_format)

    def compute_output_shape(self, input_shape):
        shape = list(input_shape)
        for axis, (a, b) in zip(_hw_axes(self.data_format), self.padding):
            shape[axis] = None if shape[axis] is None else shape[axis] + a + b
        return tuple(shape)

    def get_config(self):
        return {**super().get_config(), "padding": [list(p) for p in self.padding],
                "data_format": self.data_format}

    def extra_repr(self):
        return f"padding={self.padding}"


class Cropping2D(Layer):
    """Remove rows and columns at the borders of each image.

    Args:
        cropping: int, ``(sym_height, sym_width)`` or ``((top, bottom), (left, right))``.
        data_format: as for every image layer.

    Example:
        >>> layers.Cropping2D(((1, 0), (0, 2)), data_format="channels_last")(np.ones((1, 4, 5, 3))).shape
        (1, 3, 3, 3)
    """

    def __init__(self, cropping=((0, 0), (0, 0)), data_format=None, name=None, dtype=None,
                 trainable=True, **kwargs):
        super().__init__(name=name, dtype=dtype, trainable=trainable, **kwargs)
        self.cropping = check_pad_pairs("cropping", cropping)
        self.data_format = config.normalize_data_format(data_format)

    def _check_fits(self, shape):
        for axis, (a, b) in zip(_hw_axes(self.data_format), self.cropping):
            if shape[axis] is not None and a + b >= shape[axis]:
                raise ValueError(f"Layer '{self.name}': cropping {self.cropping} leaves nothing of "
                                 f"inputs of shape {tuple(shape)} (data_format="
                                 f"{self.data_format!r}); each cropped size must stay >= 1.")

    def call(self, x, training=False):
        _check_image(self, x)
        self._check_fits(x.shape)
        (top, bottom), (left, right) = self.cropping
        h, w = _hw_axes(self.data_format)
        rows = slice(top, x.shape[h] - bottom)
        cols = slice(left, x.shape[w] - right)
        if self.data_format == "channels_last":
            return x[:, rows, cols, :]
        return x[:, :, rows, cols]

    def compute_output_shape(self, input_shape):
        self._check_fits(input_shape)
        shape = list(input_shape)
        for axis, (a, b) in zip(_hw_axes(self.data_format), self.cropping):
            shape[axis] = None if shape[axis] is None else shape[axis] - a - b
        return tuple(shape)

    def get_config(self):
        return {**super().get_config(), "cropping": [list(p) for p in self.cropping],
                "data_format": self.data_format}

    def extra_repr(self):
        return f"cropping={self.cropping}"


class Permute(Layer):
    """Permute the non-batch axes: ``dims`` is a permutation of ``1..ndim-1`` (Keras's
    numbering, the batch axis being 0 and never moved).

    Example:
        >>> layers.Permute((2, 1))(np.ones((4, 3, 5))).shape
        (4, 5, 3)
    """

    def __init__(self, dims, name=None, dtype=None, trainable=True, **kwargs):
        super().__init__(name=name, dtype=dtype, trainable=trainable, **kwargs)
        if not isinstance(dims, (tuple, list)) or sorted(dims) != list(range(1, len(dims) + 1)) \
                or any(isinstance(d, bool) for d in dims):
            raise invalid("dims", "a permutation of 1..k (the batch axis 0 is not included)", dims)
        self.dims = tuple(int(d) for d in dims)

    def call(self, x, training=False):
        if x.ndim != len(self.dims) + 1:
            self._check_input(x, ndim=len(self.dims) + 1)
        return x.transpose((0,) + self.dims)

    def compute_output_shape(self, input_shape):
        input_shape = tuple(input_shape)
        return (input_shape[0],) + tuple(input_shape[d] for d in self.dims)

    def get_config(self):
        return {**super().get_config(), "dims": list(self.dims)}

    def extra_repr(self):
        return f"dims={self.dims}"


class RepeatVector(Layer):
    """Repeat a ``(N, features)`` input ``n`` times: ``(N, n, features)``.

    Example:
        >>> layers.RepeatVector(3)(np.ones((2, 4))).shape
        (2, 3, 4)
    """

    def __init__(self, n, name=None, dtype=None, trainable=True, **kwargs):
        super().__init__(name=name, dtype=dtype, trainable=trainable, **kwargs)
        self.n = check_int("n", n, 1)

    def call(self, x, training=False):
        if x.ndim != 2:
            self._check_input(x, ndim=2)
        if float(self.n) * x.size > 2 ** 34:
            raise ValueError(f"Layer '{self.name}': repeating inputs of shape {tuple(x.shape)} "
                             f"{self.n} times would make more than 2**34 values.")
        # Broadcasting against zeros: the backward sums the n copies (Add's unbroadcast).
        return x.reshape(x.shape[0], 1, x.shape[1]) + np.zeros((1, self.n, 1), dtype=x.dtype)

    def compute_output_shape(self, input_shape):
        input_shape = tuple(input_shape)
        return (input_shape[0], self.n, input_shape[1])

    def get_config(self):
        return {**super().get_config(), "n": self.n}

    def extra_repr(self):
        return f"n={self.n}"
