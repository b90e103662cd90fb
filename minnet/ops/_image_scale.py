"""``scale_and_translate`` (JAX's ``jax.image.scale_and_translate``, as Keras ports it): per
spatial axis a weight matrix from a sampling kernel (linear, Keys cubic, Lanczos 3/5),
optionally widened for antialiasing, applied with ``tensordot`` so the result is
differentiable in the images."""
import numpy as np

from minnet.autograd import Tensor

from . import _np_products
from ._dispatch import keras_op, to_float, wrap

__all__ = ["scale_and_translate"]


def _triangle(x):
    return np.maximum(0.0, 1.0 - np.abs(x))


def _keys_cubic(x):
    out = ((1.5 * x - 2.5) * x) * x + 1.0
    out = np.where(x >= 1.0, ((-0.5 * x + 2.5) * x - 4.0) * x + 2.0, out)
    return np.where(x >= 2.0, 0.0, out)


def _lanczos(radius):
    def kernel(x):
        y = radius * np.sin(np.pi * x) * np.sin(np.pi * x / radius)
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.where(x > 1e-3, y / np.where(x != 0, np.pi ** 2 * x ** 2, 1), 1.0)
        return np.where(x > radius, 0.0, out)
    return kernel


_KERNELS = {"linear": _triangle, "cubic": _keys_cubic, "lanczos3": _lanczos(3.0), "lanczos5": _lanczos(5.0)}
_METHODS = {"linear": "linear", "bilinear": "linear", "trilinear": "linear", "triangle": "linear",
            "cubic": "cubic", "bicubic": "cubic", "tricubic": "cubic", "lanczos3": "lanczos3", "lanczos5": "lanczos5"}


def _weights(n_in, n_out, scale, translation, kernel, antialias):
    inv = 1.0 / scale
    kernel_scale = max(inv, 1.0) if antialias else 1.0
    sample = (np.arange(n_out) + 0.5) * inv - translation * inv - 0.5
    w = kernel(np.abs(sample[None, :] - np.arange(n_in)[:, None]) / kernel_scale)
    total = w.sum(0, keepdims=True)
    w = np.where(np.abs(total) > 1000.0 * float(np.finfo(np.float32).eps), w / np.where(total != 0, total, 1), 0.0)
    return np.where(((sample >= -0.5) & (sample <= n_in - 0.5))[None, :], w, 0.0)


@keras_op("images")
def scale_and_translate(images, output_shape, scale, translation, spatial_dims, method, antialias=True):
    if method not in _METHODS:
        raise ValueError(f"Invalid argument `method`: expected one of {sorted(_METHODS)}. Received: method={method!r}")
    kernel = _KERNELS[_METHODS[method]]
    scale = np.asarray(scale.data if isinstance(scale, Tensor) else scale, np.float64).reshape(-1)
    translation = np.asarray(translation.data if isinstance(translation, Tensor) else translation,
                             np.float64).reshape(-1)
    out = to_float(images) if images.dtype.kind == "f" else images.astype(np.float32)
    for i, d in enumerate(spatial_dims):
        d = d % images.ndim
        w = _weights(images.shape[d], int(output_shape[d]), scale[i], translation[i], kernel, antialias)
        out = _np_products.tensordot(out, Tensor(w.astype(out.dtype)), axes=([d], [0]))
        order = list(range(out.ndim - 1))
        order.insert(d, out.ndim - 1)
        out = out.permute(*order)
    if images.dtype.kind != "f":
        data = np.clip(np.round(out.data), images.data.min(), images.data.max())
        return wrap(data.astype(images.dtype))
    return out
