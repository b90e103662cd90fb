"""Global settings, as Keras's ``keras.config``: image layout and default float type.

``image_data_format()`` is ``"channels_last"`` (Keras's default: images are
``(batch, height, width, channels)``); ``set_image_data_format("channels_first")`` switches
every layer whose ``data_format`` is left to ``None`` to PyTorch's ``(batch, channels,
height, width)``. ``floatx()`` is the dtype layers create their weights in (``"float32"``).

``set_deterministic(True)`` makes every result bit-identical whatever ``mn.set_num_threads``
says (GEMMs split by shape, not by thread count), at a cost: off by default.

This module imports nothing above itself (the kernels only), so every floor may read it.

Example:
    >>> import minnet as mn
    >>> mn.config.image_data_format()
    'channels_last'
    >>> mn.config.set_image_data_format("channels_first")
    >>> mn.config.image_data_format()
    'channels_first'
    >>> mn.config.set_image_data_format("channels_last")
"""
from minnet._ext import _base

__all__ = ["image_data_format", "set_image_data_format", "floatx", "set_floatx",
           "normalize_data_format", "channel_axis", "set_deterministic", "is_deterministic"]

_DATA_FORMATS = ("channels_last", "channels_first")
_FLOATX = ("float32", "float64")
_settings = {"image_data_format": "channels_last", "floatx": "float32"}


def image_data_format():
    """The default image layout: ``"channels_last"`` (NHWC) or ``"channels_first"`` (NCHW)."""
    return _settings["image_data_format"]


def set_image_data_format(data_format):
    """Set the default image layout for layers whose ``data_format`` is ``None``.

    Args:
        data_format: ``"channels_last"`` or ``"channels_first"``.

    Raises:
        ValueError: any other value.
    """
    if data_format not in _DATA_FORMATS:
        raise ValueError("Invalid value for argument `data_format`: expected 'channels_last' or "
                         f"'channels_first'. Received: data_format={data_format!r}")
    _settings["image_data_format"] = data_format


def floatx():
    """The default float type of new weights: ``"float32"`` or ``"float64"``."""
    return _settings["floatx"]


def set_floatx(value):
    """Set the default float type (``"float32"`` or ``"float64"``).

    Raises:
        ValueError: any other value (minnet's kernels are float32/float64 only).
    """
    if value not in _FLOATX:
        raise ValueError("Invalid value for argument `value`: expected 'float32' or 'float64'. "
                         f"Received: value={value!r}")
    _settings["floatx"] = value


def normalize_data_format(data_format):
    """``None`` -> the global setting; a valid name -> itself; anything else -> ValueError.

    Accepts Keras's spellings only (``"channels_last"``, ``"channels_first"``), plus the
    upper-case forms Keras also normalises.
    """
    if data_format is None:
        return _settings["image_data_format"]
    if isinstance(data_format, str) and data_format.lower() in _DATA_FORMATS:
        return data_format.lower()
    raise ValueError("Invalid value for argument `data_format`: expected 'channels_last', "
                     f"'channels_first' or None. Received: data_format={data_format!r}")


def channel_axis(data_format, ndim):
    """The channel axis of a tensor of ``ndim`` dimensions (batch first) in ``data_format``."""
    return ndim - 1 if normalize_data_format(data_format) == "channels_last" else 1


def set_deterministic(flag=True):
    """Bit-identical results for any thread count (``torch.use_deterministic_algorithms``).

    With ``True``, minnet's GEMMs (Dense, convolution, recurrent projections) are split into
    blocks chosen by the matrix shapes alone, so 1, 2, 3 or 64 threads give the same bits;
    the other kernels (convolution weight gradients, batch-norm statistics, sums, dropout
    masks, embedding scatter-adds) reduce in a fixed order in either mode. Off by default:
    the fixed split re-packs a GEMM operand once per block and made the MLP benchmark's
    Dense layers up to 2.9x slower at one thread (docs/performance.md).

    Args:
        flag: bool.
    """
    if not isinstance(flag, bool):
        raise TypeError(f"Invalid value for argument `flag`: expected True or False. "
                        f"Received: flag={flag!r}")
    _base.set_deterministic(flag)


def is_deterministic():
    """Whether ``set_deterministic(True)`` is in force."""
    return bool(_base.is_deterministic())
