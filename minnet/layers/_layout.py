"""The guard against reading a user's images in the wrong layout (issue 13, item 3).

A Keras user's CIFAR batch ``(N, 32, 32, 3)`` fed to a layer that assumes
``"channels_first"`` would be read as 32 channels of 32 x 3 pixels and train on garbage
without a word; a PyTorch user's ``(N, 3, 32, 32)`` under the default ``"channels_last"``
likewise.  The rule, applied only where the user's own array enters (the first spatial
layer of a model, or a spatial layer called directly on an array), never to feature maps
inside a model, where ``(N, 4, 4, 32)`` is normal:

    when the layer's ``data_format`` was left to the default, the assumed channel axis is
    larger than 4, the other layout's channel axis is 1, 3 or 4 and, read in that other
    layout, both spatial sizes are larger than 4 (an image, not a small feature map such
    as ``(N, 4, 4, 16)``), raise a ``ValueError`` naming the shape, the layout assumed and
    both fixes.

An explicit ``data_format=`` is trusted (the user said what the data is).
"""
from minnet import config

__all__ = ["check_user_layout", "resolve_data_format", "LIKELY_CHANNELS", "input_mismatch_hint"]

LIKELY_CHANNELS = (1, 3, 4)     # grey, RGB, RGBA: what a user's own images carry


def check_user_layout(layer, input_shape):
    """Raise when ``input_shape`` looks like the other image layout than ``layer`` assumes.

    Args:
        layer: a layer with ``data_format`` (``"channels_last"``/``"channels_first"``) and
            ``_data_format_explicit`` (True when the user passed ``data_format``); a layer
            without them, or with an explicit ``data_format``, is never questioned.
        input_shape: the shape of the user's array, batch axis included (4-D images;
            other ranks pass).

    Raises:
        ValueError: naming the layer, the shape, the layout assumed, and both fixes
            (``data_format=...`` on the layer, or ``mn.config.set_image_data_format(...)``).
    """
    data_format = getattr(layer, "data_format", None)
    if data_format is None or getattr(layer, "_data_format_explicit", True):
        return
    shape = tuple(input_shape)
    if len(shape) != 4 or any(s is None for s in shape[1:]):
        return
    last = data_format == "channels_last"
    assumed, other = (shape[3], shape[1]) if last else (shape[1], shape[3])
    # Read in the other layout, the image's height and width (an image is larger than 4 x 4).
    other_spatial = (shape[2], shape[3]) if last else (shape[1], shape[2])
    if assumed > 4 and other in LIKELY_CHANNELS and min(other_spatial) > 4:
        other_format = "channels_first" if last else "channels_last"
        raise ValueError(
            f"Layer '{layer.name}' assumes data_format='{data_format}' (the default, "
            f"mn.config.image_data_format()), so input of shape {shape} would be read as "
            f"{assumed} channels; it looks like {other_format} images with {other} channel(s). "
            f"Pass data_format='{other_format}' to the layer, or call "
            f"mn.config.set_image_data_format('{other_format}') before building the model "
            f"(or transpose the data to {data_format}).")


def resolve_data_format(data_format):
    """``(resolved, explicit)``: ``None`` -> the global setting (not explicit)."""
    return config.normalize_data_format(data_format), data_format is not None


def input_mismatch_hint(expected, found):
    """The sentence that says how to fix data of shape ``found`` for a model input declared
    with shape ``expected`` (both batch first): a channels_first/last mix-up, or which shape
    to pass (or to declare)."""
    declared = tuple(expected[1:])
    given = tuple(found[1:])
    if len(declared) == 3 and len(given) == 3 and None not in declared:
        if given == (declared[2], declared[0], declared[1]):
            return (" The data looks channels_first (N, C, H, W) while the model expects "
                    "channels_last (N, H, W, C), Keras's default: transpose it with "
                    "`x.transpose(0, 2, 3, 1)`, or build the model for channels_first "
                    "(`mn.config.set_image_data_format(\"channels_first\")` before creating the "
                    f"layers, or `data_format=\"channels_first\"` on each, with `Input({given})`).")
        if given == (declared[1], declared[2], declared[0]):
            return (" The data looks channels_last (N, H, W, C) while the model expects "
                    "channels_first (N, C, H, W): transpose it with `x.transpose(0, 3, 1, 2)`, or "
                    "build the model for channels_last (the default data_format), with "
                    f"`Input({given})`.")
    shown = ", ".join("None" if s is None else str(s) for s in declared)
    return (f" The model's first layer was declared for samples of shape ({shown}"
            f"{',' if len(declared) == 1 else ''}) (its `Input(shape=...)` or `input_shape=`): "
            f"pass data of that shape, or declare `Input(shape={given})` for this data.")
