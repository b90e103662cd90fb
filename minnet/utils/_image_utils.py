"""Keras's image helpers: ``load_img``, ``img_to_array``, ``array_to_img``, ``save_img``.

They work on Pillow images (Pillow is the ``images`` extra, imported when one of them runs),
with Keras's arguments and meanings: ``data_format`` ``"channels_last"`` (H, W, C) or
``"channels_first"`` (C, H, W), defaulting to ``mn.config.image_data_format()``.
"""
import os

import numpy as np

from minnet import _utils, config

__all__ = ["load_img", "img_to_array", "array_to_img", "save_img"]

_INTERPOLATIONS = ("nearest", "bilinear", "bicubic", "hamming", "box", "lanczos")


def _pil():
    try:
        from PIL import Image
    except ImportError as error:
        raise ImportError(_utils.missing_extra_message("PIL", "images", "minnet.utils' image "
                                                       "functions (load_img, save_img, ...)")
                          + " The package is called Pillow: pip install Pillow.") from error
    return Image


def _data_format(data_format):
    data_format = config.image_data_format() if data_format is None else data_format
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError("Invalid value for argument `data_format`: expected 'channels_last' or "
                         f"'channels_first'. Received: data_format={data_format!r}")
    return data_format


def load_img(path, color_mode="rgb", target_size=None, interpolation="nearest",
             keep_aspect_ratio=False):
    """Load an image file as a Pillow image (Keras's ``keras.utils.load_img``).

    Args:
        path: the image file (any format Pillow reads: PNG, JPEG, BMP, GIF, ...).
        color_mode: ``"rgb"``, ``"rgba"`` or ``"grayscale"``.
        target_size: None (keep the size) or ``(height, width)``.
        interpolation: the resampling filter for ``target_size``: ``"nearest"``,
            ``"bilinear"``, ``"bicubic"``, ``"hamming"``, ``"box"`` or ``"lanczos"``.
        keep_aspect_ratio: crop the centre to the target's aspect ratio before resizing.

    Returns:
        A ``PIL.Image.Image``.

    Example:
        >>> image = mn.utils.load_img("cat.jpg", target_size=(64, 64))
        >>> x = mn.utils.img_to_array(image)            # (64, 64, 3) float32
    """
    Image = _pil()
    modes = {"rgb": "RGB", "rgba": "RGBA", "grayscale": "L"}
    if color_mode not in modes:
        raise ValueError("Invalid value for argument `color_mode`: expected 'rgb', 'rgba' or "
                         f"'grayscale'. Received: color_mode={color_mode!r}")
    if interpolation not in _INTERPOLATIONS:
        raise ValueError(f"Invalid value for argument `interpolation`: expected one of "
                         f"{_INTERPOLATIONS}. Received: interpolation={interpolation!r}")
    if isinstance(path, (str, os.PathLike)):
        with open(path, "rb") as file:
            image = Image.open(file)
            image.load()
    else:
        image = Image.open(path)      # a file object, as Keras accepts (io.BytesIO)
    if image.mode != modes[color_mode]:
        image = image.convert(modes[color_mode])
    if target_size is not None:
        height, width = (int(s) for s in target_size)
        if image.size != (width, height):
            resample = getattr(Image, interpolation.upper())
            box = None
            if keep_aspect_ratio:     # the centre box of the target's aspect ratio, as Keras
                w, h = image.size
                crop_w = min(w, (h * width) // height)
                crop_h = min(h, (w * height) // width)
                left, top = (w - crop_w) // 2, (h - crop_h) // 2
                box = (left, top, left + crop_w, top + crop_h)
            image = image.resize((width, height), resample, box=box)
    return image


def img_to_array(img, data_format=None, dtype=None):
    """A Pillow image as a float32 array of shape (H, W, C) or (C, H, W) (values 0..255)."""
    data_format = _data_format(data_format)
    array = np.asarray(img, dtype=dtype or "float32")
    if array.ndim == 2:
        array = array[:, :, None]
    if array.ndim != 3:
        raise ValueError(f"Unsupported image shape: {array.shape}")
    return array.transpose(2, 0, 1).copy() if data_format == "channels_first" else array


def array_to_img(x, data_format=None, scale=True, dtype=None):
    """A 3D array (H, W, C) or (C, H, W) with 1, 3 or 4 channels as a Pillow image.

    Args:
        x: the array.
        data_format: its layout (default: ``mn.config.image_data_format()``).
        scale: stretch the values to 0..255 (``x - min``, then ``* 255 / max``), as Keras.
        dtype: accepted for Keras compatibility (the computation is in float32).
    """
    Image = _pil()
    data_format = _data_format(data_format)
    x = np.asarray(x, dtype=np.float32)
    if x.ndim != 3:
        raise ValueError("Invalid value for argument `x`: expected an image array of rank 3 "
                         f"(single image). Received: x.shape={x.shape}")
    if data_format == "channels_first":
        x = x.transpose(1, 2, 0)
    if scale:
        x = x - np.min(x)
        high = np.max(x)
        if high != 0:
            x = x / high
        x = x * 255
    channels = x.shape[2]
    if channels not in (1, 3, 4):
        raise ValueError(f"Unsupported channel number: {channels} (expected 1, 3 or 4).")
    pixels = np.clip(x, 0, 255).astype(np.uint8)
    if channels == 1:
        return Image.fromarray(pixels[:, :, 0], "L")
    return Image.fromarray(pixels, "RGB" if channels == 3 else "RGBA")


def save_img(path, x, data_format=None, file_format=None, scale=True, **kwargs):
    """Save an image array to a file (Keras's ``keras.utils.save_img``).

    Args:
        path: the file to write.
        x: the image array, (H, W, C) or (C, H, W).
        data_format: its layout (default: ``mn.config.image_data_format()``).
        file_format: Pillow's format name (``"png"``, ``"jpeg"``); default: from the suffix.
        scale: stretch the values to 0..255 first.
        **kwargs: passed to ``PIL.Image.Image.save`` (``quality=95``, ...).
    """
    image = array_to_img(x, data_format=data_format, scale=scale)
    if image.mode == "RGBA" and (file_format in ("jpg", "jpeg")
                                 or str(path).lower().endswith((".jpg", ".jpeg"))):
        _utils.warn("The JPG format does not support RGBA images, converting to RGB.")
        image = image.convert("RGB")
    if file_format == "jpg":
        file_format = "jpeg"
    image.save(path, format=file_format, **kwargs)
