"""Keras 3's mixing, erasing, blurring, shearing and perspective augmentation layers.

``MixUp``, ``CutMix`` (images and their labels mixed), ``RandomErasing``,
``RandomGaussianBlur``, ``RandomShear``, ``RandomPerspective``, ``RandomElasticTransform``,
and ``MaxNumBoundingBoxes`` (pads or cuts bounding boxes): Keras 3.15's names, arguments,
defaults and numbers. As in ``augmentation_color``, each layer is split into
``_draw(shape)`` (Keras's ``get_random_transformation``: the same keys and shapes) and
``_apply(images, params)`` (Keras's ``transform_images``) on a 4-D NumPy batch; ``call`` runs
both in training only and returns its input in evaluation. ``MixUp`` and ``CutMix`` take
images, or a dict ``{"images": ..., "labels": ...}`` (labels one-hot, ``(N, classes)``) and
return the same structure with the labels mixed in the images' proportions.

NumPy on input data, in the layer's dtype: no gradient flows through these layers (they sit
at a model's input, as the other augmentation layers). The formulas are in
``docs/math/image.md``.
"""
import numpy as np

from minnet._checks import check_choice, invalid
from minnet._config import get_num_threads
from minnet._ext import image_kernels as _kernels
from minnet.autograd import Tensor
from minnet.layers.augmentation_color import (AugmentationLayer, is_number, keras_factor,
                                              keras_value_range, plain_number)

__all__ = ["MixUp", "CutMix", "RandomErasing", "RandomGaussianBlur", "RandomShear",
           "RandomPerspective", "RandomElasticTransform", "MaxNumBoundingBoxes"]

_FILL_MODES = ("reflect", "wrap", "constant", "nearest")


def _box_masks(shape, data_format, x0, x1, y0, y1):
    """Keras's boxes: pixel ``(i, j)`` is inside when ``x0 <= j < x1`` and ``y0 <= i < y1``."""
    n = shape[0]
    if data_format == "channels_last":
        h, w, c = shape[1], shape[2], shape[3]
    else:
        c, h, w = shape[1], shape[2], shape[3]
    dtype = np.asarray(x0).dtype
    cols = np.arange(w, dtype=dtype)[None, None, :]
    rows = np.arange(h, dtype=dtype)[None, :, None]
    x0, x1, y0, y1 = (np.asarray(v).reshape(n, 1, 1) for v in (x0, x1, y0, y1))
    inside = (cols >= x0) & (cols < x1) & (rows >= y0) & (rows < y1)        # (n, h, w)
    axis = -1 if data_format == "channels_last" else 1
    return np.repeat(np.expand_dims(inside, axis), c, axis=axis)


def image_size(shape, data_format):
    return (shape[1], shape[2]) if data_format == "channels_last" else (shape[2], shape[3])


class _Mixing(AugmentationLayer):
    """Images or ``{"images", "labels"}`` in, the same structure out."""

    _SINGLE_IS_IDENTITY = False      # CutMix: Keras leaves a single image as it is

    def call(self, data, training=False):
        is_dict = isinstance(data, dict)
        if is_dict:
            unknown = sorted(set(data) - {"images", "labels"})
            if "images" not in data or unknown:
                raise ValueError(f"Layer '{self.name}' takes images or a dict with keys "
                                 f"'images' and 'labels'. Received keys: {sorted(data)}")
        images = data["images"] if is_dict else data
        self._check(images)
        if not training or (self._SINGLE_IS_IDENTITY and images.ndim == 3):
            return data
        a = np.asarray(images.data if isinstance(images, Tensor) else images)
        single = a.ndim == 3
        batch = (a[None] if single else a).astype(self.dtype, copy=False)
        params = self._draw(batch.shape)
        out = self._apply(batch, params).astype(self.dtype, copy=False)
        out = Tensor(out[0] if single else out)
        if not is_dict:
            return out
        result = {"images": out}
        if "labels" in data:
            labels = data["labels"]
            labels = np.asarray(labels.data if isinstance(labels, Tensor) else labels)
            labels = (labels[None] if single else labels).astype(self.dtype)
            if labels.ndim != 2 or labels.shape[0] != batch.shape[0]:
                raise ValueError(f"Layer '{self.name}' mixes one-hot labels of shape "
                                 f"(batch, classes). Received labels of shape "
                                 f"{np.shape(data['labels'])} for images {tuple(a.shape)}")
            mixed = self._apply_labels(labels, params)
            result["labels"] = Tensor(mixed[0] if single else mixed)
        return result

    def _apply_labels(self, labels, params):
        weight = np.asarray(params["mix_weight"]).astype(labels.dtype).reshape(-1, 1)
        others = labels[np.asarray(params["permutation_order"])]
        return weight * labels + (1.0 - weight) * others

    def compute_output_shape(self, input_shape):
        return input_shape


class MixUp(_Mixing):
    """Mix each image (and its label) with another of the batch:
    ``w * x + (1 - w) * x[perm]``, ``w ~ Beta(alpha, alpha)`` per image, ``perm`` a random
    permutation of the batch (training only).

    Args:
        alpha: the Beta distribution's parameter (default 0.2; > 0).
        seed, data_format: see ``augmentation_color``.

    Example:
        >>> out = layers.MixUp()({"images": x, "labels": one_hot}, training=True)
    """

    def __init__(self, alpha=0.2, data_format=None, seed=None, name=None, dtype=None,
                 trainable=True, **kwargs):
        super().__init__(data_format, seed, name, dtype, trainable, **kwargs)
        if not (is_number(alpha) and alpha > 0):
            raise invalid("alpha", "a number > 0", alpha)
        self.alpha = plain_number(alpha)

    def _draw(self, shape):
        rng = self._rng()
        permutation = rng.permutation(shape[0]).astype(np.int64)
        weight = rng.beta(self.alpha, self.alpha, size=shape[0]).astype(self.dtype)
        return {"mix_weight": weight, "permutation_order": permutation}

    def _apply(self, images, params):
        weight = np.asarray(params["mix_weight"]).astype(images.dtype).reshape(-1, 1, 1, 1)
        others = images[np.asarray(params["permutation_order"])]
        return weight * images + (1.0 - weight) * others

    def get_config(self):
        return {**super().get_config(), **self._config(), "alpha": self.alpha}


class CutMix(_Mixing):
    """Paste a random box of another image of the batch into each image; labels mix in
    proportion to the areas (training only; a single image is left as it is, as Keras).

    The box's area fraction is ``1 - w``, ``w ~ Beta(a, a)`` per image with one
    ``a ~ U(factor) + 1e-6`` per batch; its sides are ``sqrt(1 - w)`` times the image's and
    its corner uniform where it fits. The label weight is the part of the image kept.

    Args:
        factor: float in [0, 1] (``f`` -> ``(0, f)``) or a pair (default 1.0).
    """

    _SINGLE_IS_IDENTITY = True

    def __init__(self, factor=1.0, seed=None, data_format=None, name=None, dtype=None,
                 trainable=True, **kwargs):
        super().__init__(data_format, seed, name, dtype, trainable, **kwargs)
        self.factor = keras_factor("factor", factor, (0, 1))

    def _draw(self, shape):
        rng = self._rng()
        n = shape[0]
        height, width = image_size(shape, self.data_format)
        alpha = float(self._uniform(*self.factor, size=()) + np.asarray(1e-6, self.dtype))
        weight = rng.beta(alpha, alpha, size=n).astype(self.dtype)
        ratio = np.sqrt(1.0 - weight)
        corners = []
        for length in (width, height):
            crop = (ratio * length).astype(self.dtype)
            start = self._uniform(0.0, 1.0, n) * (length - crop)
            corners += [start, start + crop]
        x0, x1, y0, y1 = corners
        masks = _box_masks(shape, self.data_format, x0, x1, y0, y1)
        mix_weight = (1.0 - (x1 - x0) * (y1 - y0) / (width * height)).reshape(-1, 1, 1, 1)
        return {"permutation_order": rng.permutation(n).astype(np.int32),
                "batch_masks": masks, "mix_weight": mix_weight.astype(self.dtype)}

    def _apply(self, images, params):
        others = images[np.asarray(params["permutation_order"])]
        return np.where(np.asarray(params["batch_masks"]), others, images)

    def get_config(self):
        return {**super().get_config(), **self._config(), "factor": list(self.factor)}


class RandomErasing(AugmentationLayer):
    """Erase a random box of each image with probability ``p`` (``p`` uniform in
    ``factor``), filling it with ``fill_value`` or, by default, Gaussian noise
    ``N(0, 1) * value_range[1]``, clipped to ``value_range`` (training only).

    The box's sides are ``sqrt(s_w)`` and ``sqrt(s_h)`` times the image's width and height,
    ``s_w, s_h`` uniform in ``scale``; its corner uniform where it fits.

    Args:
        factor: float in [0, 1] (``f`` -> ``(0, f)``) or a pair (default 1.0).
        scale: ``(low, high)`` in [0, 1] (default ``(0.02, 0.33)``).
        fill_value: None (noise), a number, or three numbers (one per channel).
        value_range: default ``(0, 255)``.
    """

    def __init__(self, factor=1.0, scale=(0.02, 0.33), fill_value=None, value_range=(0, 255),
                 seed=None, data_format=None, name=None, dtype=None, trainable=True, **kwargs):
        super().__init__(data_format, seed, name, dtype, trainable, **kwargs)
        self.factor = keras_factor("factor", factor, (0, 1))
        self.scale = keras_factor("scale", scale, (0, 1))
        listed = isinstance(fill_value, (tuple, list))
        if not (fill_value is None or is_number(fill_value)
                or (listed and len(fill_value) == 3 and all(map(is_number, fill_value)))):
            raise invalid("fill_value", "None, a number or a list of three numbers", fill_value)
        self.fill_value = [plain_number(v) for v in fill_value] if listed \
            else plain_number(fill_value)
        self.value_range = keras_value_range(value_range, sort=False)

    def _fill(self, shape):
        if self.fill_value is None:
            fill = self._rng().standard_normal(shape).astype(self.dtype) * self.value_range[1]
        elif isinstance(self.fill_value, list):
            per_channel = np.asarray(self.fill_value, self.dtype)
            axis = -1 if self.data_format == "channels_last" else 1
            fill = np.broadcast_to(np.expand_dims(per_channel, tuple(
                d for d in range(4) if d != axis % 4)), shape).copy()
        else:
            fill = np.full(shape, self.fill_value, self.dtype)
        return np.clip(fill, self.value_range[0], self.value_range[1]).astype(self.dtype)

    def _draw(self, shape):
        n = shape[0]
        height, width = image_size(shape, self.data_format)
        sides = np.sqrt(self._uniform(*self.scale, size=(n, 2)))
        corners = []
        for length, side in ((width, sides[:, 0]), (height, sides[:, 1])):
            crop = (side * length).astype(self.dtype)
            start = self._uniform(0.0, 1.0, n) * (length - crop)
            corners += [start, start + crop]
        masks = _box_masks(shape, self.data_format, *corners)
        probability = self._uniform(*self.factor, size=n)
        apply = self._uniform(0.0, 1.0, n) < probability
        return {"apply_erasing": apply, "batch_masks": masks, "fill_value": self._fill(shape)}

    def _apply(self, images, params):
        erased = np.where(np.asarray(params["batch_masks"]),
                          np.asarray(params["fill_value"]).astype(images.dtype), images)
        apply = np.asarray(params["apply_erasing"]).reshape(-1, 1, 1, 1)
        return np.where(apply, erased, images)

    def get_config(self):
        return {**super().get_config(), **self._range_config(), "factor": list(self.factor),
                "scale": list(self.scale), "fill_value": self.fill_value}


def _gaussian_kernel1d(size, sigma, dtype):
    x = np.arange(size, dtype=dtype) - (size - 1) / 2
    kernel = np.exp(-0.5 * (x / dtype.type(sigma)) ** 2)
    return kernel / kernel.sum()


def gaussian_blur(images, size, sigma, data_format):
    """Keras's ``ops.image.gaussian_blur`` with a ``size x size`` kernel: ``sigma[0]`` along
    the width, ``sigma[1]`` along the height, zero padding of ``size // 2`` (separable)."""
    dtype = images.dtype
    kx = _gaussian_kernel1d(size, sigma[0], dtype)
    ky = _gaussian_kernel1d(size, sigma[1], dtype)
    h, w = (1, 2) if data_format == "channels_last" else (2, 3)
    pad = [(0, 0)] * 4
    pad[h] = pad[w] = (size // 2, size // 2)
    padded = np.pad(images, pad)
    rows = np.zeros(padded.shape[:w] + (images.shape[w],) + padded.shape[w + 1:], dtype)
    for t in range(size):
        rows += kx[t] * np.take(padded, np.arange(t, t + images.shape[w]), axis=w)
    out = np.zeros_like(images)
    for t in range(size):
        out += ky[t] * np.take(rows, np.arange(t, t + images.shape[h]), axis=h)
    return out


class RandomGaussianBlur(AugmentationLayer):
    """Blur each image with probability ``p`` (``p`` uniform in ``factor``) by a Gaussian
    kernel of ``kernel_size`` (zero padding), ``sigma_x, sigma_y`` uniform in ``sigma`` (one
    pair per batch, as Keras), then clip every image to ``value_range`` (training only).

    Args:
        factor: float in [0, 1] (``f`` -> ``(0, f)``) or a pair (default 1.0).
        kernel_size: an odd int (default 3), or a pair of equal odd ints.
        sigma: float in [0, 1] (``f`` -> ``(0, f)``) or a pair (default 1.0).
        value_range: default ``(0, 255)``.
    """

    def __init__(self, factor=1.0, kernel_size=3, sigma=1.0, value_range=(0, 255),
                 data_format=None, seed=None, name=None, dtype=None, trainable=True, **kwargs):
        super().__init__(data_format, seed, name, dtype, trainable, **kwargs)
        self.factor = keras_factor("factor", factor, (0, 1))
        sizes = tuple(kernel_size) if isinstance(kernel_size, (tuple, list)) \
            else (kernel_size, kernel_size)
        if not (len(sizes) == 2 and all(isinstance(s, int) and not isinstance(s, bool)
                                        and s > 0 and s % 2 == 1 for s in sizes)
                and sizes[0] == sizes[1]):
            # Keras 3.15 takes a pair of different sizes here and fails when called.
            raise invalid("kernel_size", "an odd int > 0 (or a pair of equal ones)",
                          kernel_size)
        self.kernel_size = sizes
        self.sigma = keras_factor("sigma", sigma, (0, 1))
        self.value_range = keras_value_range(value_range, sort=False)

    def _draw(self, shape):
        n = shape[0]
        probability = self._uniform(*self.factor, size=n)
        apply = self._uniform(0.0, 1.0, n) < probability
        sigma = self._uniform(*self.sigma, size=2) + np.asarray(1e-6, self.dtype)
        return {"should_apply_blur": apply, "blur_factor": sigma}

    def _apply(self, images, params):
        sigma = np.asarray(params["blur_factor"], np.float64)
        blurred = gaussian_blur(images, self.kernel_size[0], sigma, self.data_format)
        apply = np.asarray(params["should_apply_blur"]).reshape(-1, 1, 1, 1)
        return np.clip(np.where(apply, blurred, images), self.value_range[0],
                       self.value_range[1])

    def get_config(self):
        return {**super().get_config(), **self._range_config(), "factor": list(self.factor),
                "kernel_size": list(self.kernel_size), "sigma": list(self.sigma)}


def affine(layer, images, matrices):
    """minnet's affine kernel (Keras's maps: output pixel -> input coordinates)."""
    return _kernels.affine_transform(
        np.ascontiguousarray(images), matrices, interpolation=layer.interpolation,
        fill_mode=layer.fill_mode, fill_value=layer.fill_value,
        channels_first=layer.data_format == "channels_first", n_threads=get_num_threads())


def _shear_factor(name, factor):
    """RandomShear's factors: a number ``f`` in [0, 1] -> ``(-f, f)``; a pair, sorted. Keras
    3.15 wants both bounds of a pair in [0, 1], so that its own config ``(-f, f)`` does not
    load again; minnet takes pairs in [-1, 1]."""
    if isinstance(factor, (tuple, list)) and len(factor) == 2 \
            and all(is_number(v) and -1 <= v <= 1 for v in factor):
        return tuple(sorted(plain_number(v) for v in factor))
    if is_number(factor) and 0 <= factor <= 1:
        return (-abs(plain_number(factor)), abs(plain_number(factor)))
    raise invalid(name, "a number in [0, 1] or a list of two numbers in [-1, 1]", factor)


class RandomShear(AugmentationLayer):
    """Shear each image: output pixel ``(x, y)`` reads input ``(x + s_x y, y + s_y x)``,
    ``s_x`` uniform in ``x_factor`` and ``s_y`` in ``y_factor``, both multiplied by one
    random sign per image (training only). Sampled as ``RandomRotation`` (minnet's affine
    kernel).

    Args:
        x_factor, y_factor: float in [0, 1] (``f`` -> ``(-f, f)``) or a pair in [-1, 1].
        interpolation: ``"bilinear"`` (default) or ``"nearest"``.
        fill_mode: ``"reflect"`` (default), ``"wrap"``, ``"constant"`` or ``"nearest"``.
        fill_value: the value outside the image for ``fill_mode="constant"``.
    """

    def __init__(self, x_factor=0.0, y_factor=0.0, interpolation="bilinear",
                 fill_mode="reflect", fill_value=0.0, data_format=None, seed=None, name=None,
                 dtype=None, trainable=True, **kwargs):
        super().__init__(data_format, seed, name, dtype, trainable, **kwargs)
        self.x_factor = _shear_factor("x_factor", x_factor)
        self.y_factor = _shear_factor("y_factor", y_factor)
        self.interpolation = check_choice("interpolation", interpolation,
                                          ("nearest", "bilinear"))
        self.fill_mode = check_choice("fill_mode", fill_mode, _FILL_MODES)
        if not is_number(fill_value):
            raise invalid("fill_value", "a number", fill_value)
        self.fill_value = float(fill_value)

    def _draw(self, shape):
        n = shape[0]
        sign = np.where(self._uniform(0.0, 1.0, (n, 1)) > 0.5, -1.0, 1.0).astype(self.dtype)
        shear_y = self._uniform(*self.y_factor, size=(n, 1))
        shear_x = self._uniform(*self.x_factor, size=(n, 1))
        return {"shear_factor": np.concatenate([shear_x, shear_y], axis=1) * sign,
                "input_shape": tuple(shape)}

    def _apply(self, images, params):
        shear = np.asarray(params["shear_factor"], np.float64).reshape(-1, 2)
        one, zero = np.ones(len(shear)), np.zeros(len(shear))
        matrices = np.stack([one, shear[:, 0], zero, shear[:, 1], one, zero], axis=1)
        return affine(self, images, matrices)

    def get_config(self):
        return {**super().get_config(), **self._config(), "x_factor": list(self.x_factor),
                "y_factor": list(self.y_factor), "fill_mode": self.fill_mode,
                "interpolation": self.interpolation, "fill_value": self.fill_value}


def _mirror(index, size):
    s = size - 1
    return np.abs((index + s) % (2 * s) - s) if s > 0 else np.zeros_like(index)


_INDEX_FIXERS = {            # Keras's map_coordinates: where an index outside the image reads
    "constant": lambda i, n: np.clip(i, 0, n - 1),
    "nearest": lambda i, n: np.clip(i, 0, n - 1),
    "wrap": lambda i, n: i % n,
    "mirror": _mirror,
    "reflect": lambda i, n: (_mirror(2 * i + 1, 2 * n + 1) - 1) // 2,
}


def map_coordinates(image, rows, cols, interpolation, fill_mode, fill_value):
    """Keras's ``map_coordinates`` on one ``(H, W, C)`` image at ``(rows, cols)``: bilinear
    (taps floor and floor + 1) or nearest (``round``, half to even); indices outside the
    image mapped by ``fill_mode``, or reading ``fill_value`` for ``"constant"``."""
    h, w = image.shape[:2]
    if interpolation == "nearest":
        row_taps = [(np.round(rows).astype(np.int64), 1)]
        col_taps = [(np.round(cols).astype(np.int64), 1)]
    else:
        r0, c0 = np.floor(rows), np.floor(cols)
        row_taps = [(r0.astype(np.int64), 1 - (rows - r0)), (r0.astype(np.int64) + 1, rows - r0)]
        col_taps = [(c0.astype(np.int64), 1 - (cols - c0)), (c0.astype(np.int64) + 1, cols - c0)]
    fix = _INDEX_FIXERS[fill_mode]
    out = None
    for r, wr in row_taps:
        for c, wc in col_taps:
            taps = image[fix(r, h), fix(c, w)]
            if fill_mode == "constant":
                valid = ((r >= 0) & (r < h) & (c >= 0) & (c < w))[..., None]
                taps = np.where(valid, taps, fill_value)
            term = np.asarray(wr * wc)[..., None] * taps
            out = term if out is None else out + term
    return out.astype(image.dtype, copy=False)


def homography(start_points, end_points):
    """Keras's ``compute_homography_matrix``: the 8 entries mapping each ``end`` corner to its
    ``start`` corner (output pixel -> input coordinates), one ``(8,)`` row per image."""
    start = np.asarray(start_points)
    end = np.asarray(end_points)
    rows = []
    for k in range(4):
        ex, ey, sx, sy = end[:, k, 0], end[:, k, 1], start[:, k, 0], start[:, k, 1]
        one, zero = np.ones_like(ex), np.zeros_like(ex)
        rows.append(np.stack([ex, ey, one, zero, zero, zero, -sx * ex, -sx * ey], axis=-1))
        rows.append(np.stack([zero, zero, zero, ex, ey, one, -sy * ex, -sy * ey], axis=-1))
    target = start.reshape(len(start), 8)[..., None]
    return np.linalg.solve(np.stack(rows, axis=1), target).reshape(-1, 8)


class RandomPerspective(AugmentationLayer):
    """Move the image's corners at random and warp it by the homography that takes them
    there, with probability ``p`` (``p`` uniform in ``factor``; training only; outside
    pixels ``fill_value``).

    As Keras 3.15, corner ``(x, y)`` goes to ``(x, y) * (1 + d)``, ``d`` uniform in
    ``[-scale / 2, scale / 2]`` per coordinate, so the corner at the origin stays put.

    Args:
        factor: float in [0, 1] (``f`` -> ``(0, f)``) or a pair (default 1.0).
        scale: in [0, 1] (default 1.0).
        interpolation: ``"bilinear"`` (default) or ``"nearest"``.
        fill_value: default 0.
    """

    def __init__(self, factor=1.0, scale=1.0, interpolation="bilinear", fill_value=0.0,
                 seed=None, data_format=None, name=None, dtype=None, trainable=True, **kwargs):
        super().__init__(data_format, seed, name, dtype, trainable, **kwargs)
        self.factor = keras_factor("factor", factor, (0, 1))
        if not (is_number(scale) and 0 <= scale <= 1):
            raise invalid("scale", "a number in the range [0, 1]", scale)
        self.scale = plain_number(scale)
        self.interpolation = check_choice("interpolation", interpolation,
                                          ("nearest", "bilinear"))
        if not is_number(fill_value):
            raise invalid("fill_value", "a number", fill_value)
        self.fill_value = plain_number(fill_value)

    def _draw(self, shape):
        n = shape[0]
        height, width = image_size(shape, self.data_format)
        probability = self._uniform(*self.factor, size=n)
        apply = self._uniform(0.0, 1.0, n) < probability
        moves = self._uniform(-0.5 * self.scale, 0.5 * self.scale, (n, 4, 2))
        start = np.array([[0.0, 0.0], [width - 1, 0.0], [0.0, height - 1],
                          [width - 1, height - 1]], self.dtype)
        start = np.repeat(start[None], n, axis=0)
        return {"apply_perspective": apply, "start_points": start,
                "end_points": start + start * moves, "input_shape": tuple(shape)}

    def _apply(self, images, params):
        last = images if self.data_format == "channels_last" else images.transpose(0, 2, 3, 1)
        h, w = last.shape[1:3]
        maps = homography(np.asarray(params["start_points"], images.dtype),
                          np.asarray(params["end_points"], images.dtype))
        gx, gy = np.meshgrid(np.arange(w, dtype=images.dtype), np.arange(h, dtype=images.dtype))
        out = np.empty_like(last)
        for i, (a0, a1, a2, a3, a4, a5, a6, a7) in enumerate(maps):
            denominator = a6 * gx + a7 * gy + 1.0
            cols = (a0 * gx + a1 * gy + a2) / denominator
            rows = (a3 * gx + a4 * gy + a5) / denominator
            out[i] = map_coordinates(last[i], rows, cols, self.interpolation, "constant",
                                     self.fill_value)
        if self.data_format == "channels_first":
            out = out.transpose(0, 3, 1, 2)
        apply = np.asarray(params["apply_perspective"]).reshape(-1, 1, 1, 1)
        return np.where(apply, out, images)

    def get_config(self):
        return {**super().get_config(), **self._config(), "factor": list(self.factor),
                "scale": self.scale, "interpolation": self.interpolation,
                "fill_value": self.fill_value}


class RandomElasticTransform(AugmentationLayer):
    """Displace every pixel by a smooth random field (Gaussian noise blurred by a Gaussian
    of ``sigma``, times ``alpha``) with probability ``p`` (``p`` uniform in ``factor``), then
    clip to ``value_range`` (training only). As Keras 3.15: ``d ~ U(scale)`` once per batch,
    ``alpha = 0.1 d max(H, W)``, ``sigma = 0.05 d min(H, W)``, a kernel of
    ``int(6 sigma) | 1`` taps, the noise ``N(0, 1) sigma`` drawn per image.

    Args:
        factor: float in [0, 1] (``f`` -> ``(0, f)``) or a pair (default 1.0).
        scale: float in [0, 1] (``f`` -> ``(0, f)``) or a pair (default 1.0).
        interpolation: ``"bilinear"`` (default) or ``"nearest"``.
        fill_mode: ``"reflect"`` (default), ``"mirror"``, ``"wrap"``, ``"nearest"`` or
            ``"constant"``; fill_value: for ``"constant"``.
        value_range: default ``(0, 255)``.
    """

    def __init__(self, factor=1.0, scale=1.0, interpolation="bilinear", fill_mode="reflect",
                 fill_value=0.0, value_range=(0, 255), seed=None, data_format=None, name=None,
                 dtype=None, trainable=True, **kwargs):
        super().__init__(data_format, seed, name, dtype, trainable, **kwargs)
        self.factor = keras_factor("factor", factor, (0, 1))
        self.scale = keras_factor("scale", scale, (0, 1))
        self.interpolation = check_choice("interpolation", interpolation,
                                          ("nearest", "bilinear"))
        self.fill_mode = check_choice("fill_mode", fill_mode, tuple(_INDEX_FIXERS))
        if not is_number(fill_value):
            raise invalid("fill_value", "a number", fill_value)
        self.fill_value = plain_number(fill_value)
        self.value_range = keras_value_range(value_range, sort=False)

    def _draw(self, shape):
        if self.scale[1] == 0 or self.factor[1] == 0:
            return None
        n = shape[0]
        height, width = image_size(shape, self.data_format)
        probability = self._uniform(*self.factor, size=n)
        apply = self._uniform(0.0, 1.0, n) < probability
        distortion = self._uniform(*self.scale, size=())
        noise = self._rng().standard_normal((2, n, height, width)).astype(self.dtype)
        return {"apply_transform": apply, "distortion_factor": distortion, "noise": noise}

    def _apply(self, images, params):
        if params is None:
            return images
        last = images if self.data_format == "channels_last" else images.transpose(0, 2, 3, 1)
        n, h, w = last.shape[:3]
        cast = images.dtype.type
        factor = cast(params["distortion_factor"])
        alpha = cast(max(h, w)) * (cast(0.1) * factor)
        sigma = cast(min(h, w)) * (cast(0.05) * factor)
        size = int(6 * sigma) | 1
        fields = []
        for noise in np.asarray(params["noise"]).astype(images.dtype):
            field = gaussian_blur((noise * sigma)[..., None], size, (sigma, sigma),
                                  "channels_last")
            fields.append(field[..., 0])
        x, y = np.meshgrid(np.arange(w, dtype=images.dtype), np.arange(h, dtype=images.dtype))
        out = np.empty_like(last)
        for i in range(n):
            cols = x + alpha * fields[0][i]
            rows = y + alpha * fields[1][i]
            out[i] = map_coordinates(last[i], rows, cols, self.interpolation, self.fill_mode,
                                     self.fill_value)
        if self.data_format == "channels_first":
            out = out.transpose(0, 3, 1, 2)
        apply = np.asarray(params["apply_transform"]).reshape(-1, 1, 1, 1)
        return np.clip(np.where(apply, out, images), self.value_range[0], self.value_range[1])

    def get_config(self):
        return {**super().get_config(), **self._range_config(), "factor": list(self.factor),
                "scale": list(self.scale), "interpolation": self.interpolation,
                "fill_mode": self.fill_mode, "fill_value": self.fill_value}


class MaxNumBoundingBoxes(AugmentationLayer):
    """Pad (with ``fill_value``) or cut the bounding boxes of each image to ``max_number``
    (Keras 3.15; in training and evaluation alike). Takes images (returned as they are) or a
    dict ``{"images", "bounding_boxes": {"boxes": (N, B, 4), "labels": (N, B)}, ...}``;
    other keys pass through.

    Args:
        max_number: the number of boxes per image afterwards.
        fill_value: the value of the added boxes and labels (default -1).
        bounding_box_format: the boxes' format (e.g. ``"xyxy"``); Keras requires one when
            boxes are given, and so does minnet; the boxes are not converted.
    """

    def __init__(self, max_number, fill_value=-1, bounding_box_format=None, data_format=None,
                 name=None, dtype=None, trainable=True, **kwargs):
        super().__init__(data_format, None, name, dtype, trainable, **kwargs)
        if not (is_number(max_number) and max_number >= 1):
            raise invalid("max_number", "a number >= 1", max_number)
        if not is_number(fill_value):
            raise invalid("fill_value", "a number", fill_value)
        self.max_number, self.fill_value = int(max_number), int(fill_value)
        self.bounding_box_format = bounding_box_format

    def call(self, data, training=False):
        if not (isinstance(data, dict) and "bounding_boxes" in data):
            return data
        if not self.bounding_box_format:
            raise ValueError(f"Layer '{self.name}' got 'bounding_boxes' but no "
                             f"`bounding_box_format`: pass one, e.g. "
                             f"bounding_box_format='xyxy'.")
        boxes_in = data["bounding_boxes"]
        unknown = sorted(set(boxes_in) - {"boxes", "labels"})
        if unknown or "boxes" not in boxes_in or "labels" not in boxes_in:
            raise ValueError(f"Layer '{self.name}': `bounding_boxes` needs the keys 'boxes' "
                             f"and 'labels' only. Received keys: {sorted(boxes_in)}")
        boxes, labels = (np.asarray(v.data if isinstance(v, Tensor) else v)
                         for v in (boxes_in["boxes"], boxes_in["labels"]))
        single = boxes.ndim == 2
        if single:
            boxes, labels = boxes[None], labels[None]
        if boxes.ndim != 3 or boxes.shape[2] != 4 or labels.shape != boxes.shape[:2]:
            raise ValueError(f"Layer '{self.name}': expected boxes (batch, boxes, 4) and labels "
                             f"(batch, boxes). Received {boxes.shape} and {labels.shape}")
        pad = max(self.max_number - boxes.shape[1], 0)
        boxes = np.pad(boxes[:, :self.max_number], [(0, 0), (0, pad), (0, 0)],
                       constant_values=self.fill_value)
        labels = np.pad(labels[:, :self.max_number], [(0, 0), (0, pad)],
                        constant_values=self.fill_value)
        if single:
            boxes, labels = boxes[0], labels[0]
        return {**data, "bounding_boxes": {"boxes": Tensor(boxes), "labels": Tensor(labels)}}

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = {**super().get_config(), "data_format": self.data_format,
                  "max_number": self.max_number, "fill_value": self.fill_value}
        if self.bounding_box_format is not None:
            config["bounding_box_format"] = self.bounding_box_format
        return config
