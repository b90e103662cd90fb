"""Data-set utilities of ``keras.utils``: splitting, ``normalize``, images from a directory.

* ``split_dataset(dataset, left_size, right_size, shuffle, seed)`` as Keras (arrays in,
  arrays out), plus ``stratify=`` to keep the class proportions;
* ``train_test_split(*arrays, test_size, train_size, shuffle, stratify, seed)`` in
  scikit-learn's shape (``[a_train, a_test, b_train, b_test, ...]``);
* ``normalize(x, axis=-1, order=2)`` as Keras;
* ``image_dataset_from_directory(...)`` as Keras, returning an ``ImageDataset``: an iterable
  of ``(x, y)`` batches with ``__len__`` that ``fit`` accepts. PNG files are read by a small
  built-in decoder; JPEG, BMP and GIF need Pillow (``pip install Pillow``), imported only
  when such a file is met.

Randomness comes from ``seed`` or, when it is None, from minnet's generator (seeded by
``mn.manual_seed``); NumPy's global generator is never touched.

This module imports nothing above itself but the random state (numpy, zlib, the checks).
"""
import numbers
import os
import struct
import zlib

import numpy as np

from minnet import _random, config
from minnet._checks import check_choice, check_int, invalid

__all__ = ["split_dataset", "train_test_split", "normalize", "image_dataset_from_directory",
           "ImageDataset"]

ALLOWED_IMAGE_FORMATS = (".bmp", ".gif", ".jpeg", ".jpg", ".png")


# ---------------------------------------------------------------------------------------
# Splitting
# ---------------------------------------------------------------------------------------

def _generator(seed):
    if seed is None:
        return _random.generator()
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise invalid("seed", "None or an int >= 0", seed)
    return np.random.default_rng(int(seed))


def _as_arrays(dataset, name):
    """A tuple of arrays of one length from an array or a tuple/list of arrays."""
    if isinstance(dataset, np.ndarray):
        arrays, single = (dataset,), True
    elif isinstance(dataset, (tuple, list)) and dataset and all(
            isinstance(a, np.ndarray) or hasattr(a, "__len__") for a in dataset):
        arrays, single = tuple(np.asarray(a) for a in dataset), False
    else:
        raise invalid(name, "a NumPy array or a tuple of arrays of the same length",
                      type(dataset).__name__, TypeError)
    lengths = {len(a) if a.ndim else -1 for a in arrays}
    if len(lengths) != 1 or -1 in lengths:
        raise ValueError(f"Invalid value for argument `{name}`: expected arrays with the same "
                         f"number of samples. Received: lengths "
                         f"{[len(a) if a.ndim else 'scalar' for a in arrays]}")
    if lengths == {0}:
        raise ValueError(f"Invalid value for argument `{name}`: expected at least one sample. "
                         f"Received: 0 samples")
    return arrays, single


def _size(name, value, total):
    """Keras's split size: a float in (0, 1) is a fraction (rounded), an int a count."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (numbers.Integral, numbers.Real)):
        raise invalid(name, f"None, a float in (0, 1) or an int in [1, {total}]", value, TypeError)
    if isinstance(value, numbers.Integral):
        return check_int(name, value, 1, total)
    if not 0 < float(value) < 1:
        raise invalid(name, f"None, a float in (0, 1) or an int in [1, {total}]", value)
    return int(round(float(value) * total))


def _stratified_order(labels, n_left, generator):
    """A permutation whose first ``n_left`` items hold each class in proportion."""
    labels = np.asarray(labels)
    if labels.ndim > 1:
        labels = labels.reshape(len(labels), -1)
        labels = np.unique(labels, axis=0, return_inverse=True)[1].reshape(-1)
    classes, inverse = np.unique(labels, return_inverse=True)
    counts = np.bincount(inverse, minlength=len(classes))
    total = len(labels)
    # Largest remainder: each class gets floor(share), the biggest remainders one more.
    share = counts * n_left / total
    left_counts = np.floor(share).astype(np.int64)
    missing = n_left - int(left_counts.sum())
    if missing:
        remainder = share - left_counts
        order = np.lexsort((generator.random(len(classes)), -remainder))
        left_counts[order[:missing]] += 1
    left, right = [], []
    for c in range(len(classes)):
        members = generator.permutation(np.flatnonzero(inverse == c))
        left.append(members[:left_counts[c]])
        right.append(members[left_counts[c]:])
    left = generator.permutation(np.concatenate(left)) if left else np.zeros(0, np.int64)
    right = generator.permutation(np.concatenate(right)) if right else np.zeros(0, np.int64)
    return np.concatenate([left, right]).astype(np.int64)


def _split(arrays, n_left, shuffle, stratify, seed, name):
    total = len(arrays[0])
    if stratify is not None:
        stratify = np.asarray(stratify)
        if stratify.ndim == 0 or len(stratify) != total:
            raise ValueError(f"Invalid value for argument `stratify`: expected one label per "
                             f"sample ({total}). Received: stratify with shape {stratify.shape}")
        if not shuffle:
            raise ValueError("Invalid value for argument `shuffle`: stratified splitting "
                             "shuffles; pass shuffle=True with stratify. Received: shuffle=False")
        order = _stratified_order(stratify, n_left, _generator(seed))
    elif shuffle:
        order = _generator(seed).permutation(total)
    else:
        order = None
    if order is None:
        return [(a[:n_left], a[n_left:]) for a in arrays]
    left, right = order[:n_left], order[n_left:]
    return [(a[left], a[right]) for a in arrays]


def split_dataset(dataset, left_size=None, right_size=None, shuffle=False, seed=None,
                  stratify=None):
    """Split arrays into two parts, as ``keras.utils.split_dataset`` (arrays in, arrays out).

    Args:
        dataset: a NumPy array or a tuple/list of arrays with the same first dimension.
        left_size: a float in (0, 1) (a fraction of the samples, rounded), an int (a
            count), or None (the complement of ``right_size``).
        right_size: likewise for the right part. As Keras, at least one of the two must
            be given.
        shuffle: shuffle the samples before splitting.
        seed: int seed for the shuffle, or None for minnet's generator.
        stratify: optional labels (one per sample): each class is split in the same
            proportion (a minnet extension; implies ``shuffle=True``).

    Returns:
        ``(left, right)``: arrays when ``dataset`` is an array, tuples of arrays otherwise.

    Example:
        >>> x, y = np.arange(10.0), np.arange(10) % 2
        >>> (x_left, y_left), (x_right, y_right) = split_dataset((x, y), left_size=0.8)
        >>> len(x_left), len(x_right)
        (8, 2)
    """
    arrays, single = _as_arrays(dataset, "dataset")
    _generator(seed)    # validates seed whether or not it is used
    total = len(arrays[0])
    left, right = _size("left_size", left_size, total), _size("right_size", right_size, total)
    if left is None and right is None:
        raise ValueError("Invalid value for arguments `left_size` and `right_size`: expected at "
                         "least one of them. Received: left_size=None, right_size=None")
    if left is None:
        left = total - right
    elif right is None:
        right = total - left
    if left + right > total or left < 0 or right < 0:
        raise ValueError(f"Invalid value for arguments `left_size` and `right_size`: they add "
                         f"up to more than the {total} samples. Received: left_size={left_size!r},"
                         f" right_size={right_size!r}")
    if left == 0 or right == 0:
        raise ValueError(f"Invalid value for arguments `left_size` and `right_size`: each part "
                         f"needs at least one sample of the {total}. Received: "
                         f"left_size={left_size!r}, right_size={right_size!r}")
    if stratify is not None:
        shuffle = True
    parts = _split(arrays, left, bool(shuffle), stratify, seed, "dataset")
    left_arrays = tuple(p[0] for p in parts)
    right_arrays = tuple(p[1][:right] for p in parts)
    if single:
        return left_arrays[0], right_arrays[0]
    return left_arrays, right_arrays


def train_test_split(*arrays, test_size=None, train_size=None, shuffle=True, stratify=None,
                     seed=None, random_state=None):
    """Split arrays into train and test parts, in scikit-learn's shape.

    Sizes follow scikit-learn: a float is a fraction (the test part is ``ceil``ed, the train
    part ``floor``ed), an int a count; with neither given the test part is 0.25.

    Args:
        *arrays: arrays with the same first dimension.
        test_size, train_size: float in (0, 1), int, or None.
        shuffle: shuffle before splitting (default True, as scikit-learn).
        stratify: labels to keep the class proportions in both parts.
        seed: int seed, or None for minnet's generator (``random_state`` is an alias).

    Returns:
        ``[a_train, a_test, b_train, b_test, ...]``.

    Example:
        >>> x, y = np.zeros((10, 2)), np.arange(10) % 2
        >>> x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.2, seed=0)
        >>> x_train.shape, y_test.shape
        ((8, 2), (2,))
    """
    if not arrays:
        raise ValueError("train_test_split needs at least one array.")
    if random_state is not None:
        if seed is not None and seed != random_state:
            raise ValueError(f"Invalid value for argument `random_state`: it is an alias of "
                             f"`seed`; pass one. Received: seed={seed!r}, "
                             f"random_state={random_state!r}")
        seed = random_state
    data, _ = _as_arrays(list(arrays), "arrays")
    _generator(seed)
    total = len(data[0])

    def size(name, value, fraction_round):
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (numbers.Integral, numbers.Real)):
            raise invalid(name, f"None, a float in (0, 1) or an int in [1, {total - 1}]", value,
                          TypeError)
        if isinstance(value, numbers.Integral):
            return check_int(name, value, 1, total - 1 if total > 1 else 1)
        if not 0 < float(value) < 1:
            raise invalid(name, "None, a float in (0, 1) or an int", value)
        return int(fraction_round(float(value) * total))

    n_test = size("test_size", test_size, np.ceil)
    n_train = size("train_size", train_size, np.floor)
    if n_test is None and n_train is None:
        n_test = int(np.ceil(0.25 * total))
    if n_test is None:
        n_test = total - n_train
    if n_train is None:
        n_train = total - n_test
    if n_train < 1 or n_test < 1 or n_train + n_test > total:
        raise ValueError(f"With {total} samples, test_size={test_size!r} and "
                         f"train_size={train_size!r} leave an empty part (train {n_train}, "
                         f"test {n_test}).")
    parts = _split(data, n_train, bool(shuffle), stratify, seed, "arrays")
    result = []
    for train, test in parts:
        result += [train, test[:n_test]]
    return result


# ---------------------------------------------------------------------------------------
# normalize
# ---------------------------------------------------------------------------------------

def normalize(x, axis=-1, order=2):
    """Scale ``x`` to unit norm along ``axis`` (as ``keras.utils.normalize``).

    Vectors of zero norm are left unchanged (their norm counts as 1).

    Args:
        x: array to normalize.
        axis: axis along which to normalize.
        order: the norm's order (``np.linalg.norm``'s ``ord``: 2 for L2, 1 for L1).

    Returns:
        A new float array of ``x``'s shape.
    """
    x = np.asarray(x)
    if x.dtype.kind not in "biuf" or x.ndim == 0:
        raise invalid("x", "a numeric array with at least one axis", f"dtype {x.dtype}, "
                      f"shape {x.shape}", TypeError if x.dtype.kind not in "biuf" else ValueError)
    axis = check_int("axis", axis, -x.ndim, x.ndim - 1)
    x = x.astype(np.result_type(x.dtype, np.float32), copy=False)
    norm = np.atleast_1d(np.linalg.norm(x, order, axis))
    norm[norm == 0] = 1
    return x / np.expand_dims(norm, axis)


# ---------------------------------------------------------------------------------------
# Images from a directory
# ---------------------------------------------------------------------------------------

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_PNG_CHANNELS = {0: 1, 2: 3, 4: 2, 6: 4}


def _paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = np.abs(p - a), np.abs(p - b), np.abs(p - c)
    return np.where((pa <= pb) & (pa <= pc), a, np.where(pb <= pc, b, c))


def read_png(path):
    """An 8-bit non-interlaced PNG (grey, grey+alpha, RGB, RGBA) as uint8 (h, w, channels)."""
    with open(path, "rb") as file:
        data = file.read()
    if not data.startswith(_PNG_SIGNATURE):
        raise ValueError(f"{path!r} is not a PNG file.")
    position, header, chunks = 8, None, []
    try:
        while position < len(data):
            length, kind = struct.unpack(">I4s", data[position:position + 8])
            body = data[position + 8:position + 8 + length]
            position += 12 + length
            if kind == b"IHDR":
                header = struct.unpack(">IIBBBBB", body)
            elif kind == b"IDAT":
                chunks.append(body)
            elif kind == b"IEND":
                break
        width, height, depth, colour, _, _, interlace = header
        raw = zlib.decompress(b"".join(chunks))
    except (struct.error, TypeError, zlib.error) as error:
        raise ValueError(f"{path!r} is a damaged PNG file ({error}).") from None
    if depth != 8 or colour not in _PNG_CHANNELS or interlace:
        raise ImportError(f"{path!r} is a PNG that minnet's small decoder does not read (bit "
                          f"depth {depth}, colour type {colour}, interlace {interlace}); install "
                          f"Pillow to read it: pip install Pillow")
    channels = _PNG_CHANNELS[colour]
    stride = width * channels
    if len(raw) != height * (stride + 1):
        raise ValueError(f"{path!r} is a damaged PNG file (wrong amount of pixel data).")
    rows = np.frombuffer(raw, np.uint8).reshape(height, stride + 1)
    image = np.zeros((height, stride), np.int32)
    previous = np.zeros(stride, np.int32)
    for r in range(height):
        kind, line = rows[r, 0], rows[r, 1:].astype(np.int32)
        if kind == 0:
            out = line
        elif kind == 2:
            out = (line + previous) & 0xFF
        elif kind in (1, 3, 4):
            out = np.zeros(stride, np.int32)
            for i in range(stride):   # left neighbour depends on the decoded value
                left = out[i - channels] if i >= channels else 0
                up_left = previous[i - channels] if i >= channels else 0
                if kind == 1:
                    predictor = left
                elif kind == 3:
                    predictor = (left + previous[i]) // 2
                else:
                    predictor = int(_paeth(np.int32(left), previous[i], np.int32(up_left)))
                out[i] = (line[i] + predictor) & 0xFF
        else:
            raise ValueError(f"{path!r} is a damaged PNG file (filter type {kind}).")
        image[r] = out
        previous = out
    return image.astype(np.uint8).reshape(height, width, channels)


def _read_image(path):
    """uint8 (h, w, c) pixels of an image file; Pillow for what the PNG decoder cannot read."""
    if path.lower().endswith(".png"):
        try:
            return read_png(path)
        except ImportError:
            pass
    try:
        from PIL import Image
    except ImportError:
        raise ImportError(f"Reading {path!r} needs Pillow, which is not installed: "
                          f"pip install Pillow") from None
    with Image.open(path) as image:
        image = image.convert("RGBA") if image.mode in ("RGBA", "LA", "P") else \
            image.convert("RGB") if image.mode != "L" else image
        array = np.asarray(image, dtype=np.uint8)
    return array[:, :, None] if array.ndim == 2 else array


def _to_channels(image, color_mode, path):
    channels = image.shape[2]
    if color_mode == "grayscale":
        if channels == 1:
            return image.astype(np.float32)
        rgb = image[:, :, :3].astype(np.float32) if channels >= 3 else \
            np.repeat(image[:, :, :1].astype(np.float32), 3, axis=2)
        # ITU-R 601-2 luma, the weights of tf.image.rgb_to_grayscale.
        return (rgb @ np.array([0.2989, 0.5870, 0.1140], np.float32))[:, :, None]
    want = 3 if color_mode == "rgb" else 4
    if channels in (1, 2):
        grey = np.repeat(image[:, :, :1], 3, axis=2)
        image = np.concatenate([grey, image[:, :, 1:2]], axis=2) if channels == 2 else grey
        channels = image.shape[2]
    if want == 3:
        return image[:, :, :3].astype(np.float32)
    if channels == 3:
        image = np.concatenate([image, np.full(image.shape[:2] + (1,), 255, np.uint8)], axis=2)
    return image.astype(np.float32)


def resize_bilinear(image, size):
    """Bilinear resize with half-pixel centres and no antialiasing (``tf.image.resize``'s)."""
    height, width = image.shape[:2]
    out_h, out_w = size
    if (height, width) == (out_h, out_w):
        return image

    def coords(n_in, n_out):
        x = (np.arange(n_out, dtype=np.float64) + 0.5) * (n_in / n_out) - 0.5
        x = np.clip(x, 0, n_in - 1)
        low = np.floor(x).astype(np.int64)
        high = np.minimum(low + 1, n_in - 1)
        return low, high, (x - low).astype(np.float32)

    y0, y1, wy = coords(height, out_h)
    x0, x1, wx = coords(width, out_w)
    top = image[y0][:, x0] * (1 - wx)[None, :, None] + image[y0][:, x1] * wx[None, :, None]
    bottom = image[y1][:, x0] * (1 - wx)[None, :, None] + image[y1][:, x1] * wx[None, :, None]
    return (top * (1 - wy)[:, None, None] + bottom * wy[:, None, None]).astype(np.float32)


def _fit_aspect(image, size, crop, pad):
    height, width = image.shape[:2]
    target = size[1] / size[0]
    if crop:
        new_w = min(width, int(round(height * target)))
        new_h = min(height, int(round(width / target)))
        top, left = (height - new_h) // 2, (width - new_w) // 2
        return image[top:top + new_h, left:left + new_w]
    if pad:
        new_w = max(width, int(round(height * target)))
        new_h = max(height, int(round(width / target)))
        out = np.zeros((new_h, new_w, image.shape[2]), image.dtype)
        top, left = (new_h - height) // 2, (new_w - width) // 2
        out[top:top + height, left:left + width] = image
        return out
    return image


class ImageDataset:
    """Batches of images (and labels) in memory: an iterable of ``(x, y)`` with ``__len__``.

    Iterating gives ``(x, y)`` batches (or ``x`` alone when ``label_mode=None``), reshuffled
    at each pass when ``shuffle`` is on, so ``model.fit(dataset, epochs=...)`` sees a new
    order each epoch. ``class_names`` and ``file_paths`` are as Keras's.
    """

    def __init__(self, images, labels, batch_size, shuffle, seed, class_names, file_paths):
        self.images, self.labels = images, labels
        self.batch_size, self.shuffle = batch_size, shuffle
        self.class_names, self.file_paths = class_names, file_paths
        self._generator = _generator(seed) if shuffle else None

    def __len__(self):
        return -(-len(self.images) // (self.batch_size or 1))

    def __iter__(self):
        n = len(self.images)
        order = self._generator.permutation(n) if self.shuffle else np.arange(n)
        step = self.batch_size or 1
        for start in range(0, n, step):
            index = order[start:start + step] if self.batch_size else order[start]
            if self.labels is None:
                yield self.images[index]
            else:
                yield self.images[index], self.labels[index]

    def __repr__(self):
        return (f"ImageDataset({len(self.images)} images, {len(self.class_names or [])} classes, "
                f"batch_size={self.batch_size}, shape={self.images.shape[1:]})")


def _list_files(directory, follow_links):
    found = []
    for root, dirs, files in os.walk(directory, followlinks=follow_links):
        dirs.sort()
        for name in sorted(files):
            if name.lower().endswith(ALLOWED_IMAGE_FORMATS):
                found.append(os.path.join(root, name))
    return found


def image_dataset_from_directory(directory, labels="inferred", label_mode="int",
                                 class_names=None, color_mode="rgb", batch_size=32,
                                 image_size=(256, 256), shuffle=True, seed=None,
                                 validation_split=None, subset=None, interpolation="bilinear",
                                 follow_links=False, crop_to_aspect_ratio=False,
                                 pad_to_aspect_ratio=False, data_format=None, verbose=True):
    """Images in class sub-directories as batches, as ``keras.utils.image_dataset_from_directory``.

    ``directory/class_a/*.png``, ``directory/class_b/*.png`` give labels 0 and 1 (class
    names sorted). Images are float32 in [0, 255] (not rescaled, as Keras), resized
    bilinearly to ``image_size``, in ``data_format``'s layout.

    Args:
        directory: the folder.
        labels: ``"inferred"`` (from the sub-directories), a list/tuple of int labels in the
            sorted order of the image paths, or None (no labels).
        label_mode: ``"int"`` (int32), ``"categorical"`` (float32 one-hot), ``"binary"``
            (float32, shape ``(n, 1)``, exactly 2 classes) or None (images only).
        class_names: with ``labels="inferred"``, the sub-directories to use, in label order.
        color_mode: ``"grayscale"``, ``"rgb"`` or ``"rgba"`` (1, 3 or 4 channels).
        batch_size: int, or None to yield single images without a batch axis (as Keras).
        image_size: ``(height, width)``.
        shuffle: shuffle the files (before the validation split) and each pass.
        seed: int; required with ``validation_split`` and ``shuffle`` so both subsets agree.
        validation_split: float in (0, 1) kept for validation.
        subset: ``"training"``, ``"validation"`` or ``"both"`` (a tuple of the two).
        interpolation: ``"bilinear"`` (the only one implemented) or ``"nearest"``.
        follow_links: follow symbolic links to sub-directories.
        crop_to_aspect_ratio / pad_to_aspect_ratio: centre-crop or zero-pad to
            ``image_size``'s aspect ratio before resizing.
        data_format: ``"channels_last"``, ``"channels_first"`` or None (the global setting).
        verbose: print how many files and classes were found.

    Returns:
        An ``ImageDataset`` (or a tuple of two with ``subset="both"``).
    """
    directory = os.fsdecode(os.fspath(directory))
    if not os.path.isdir(directory):
        raise invalid("directory", "an existing directory", directory)
    if not (labels in ("inferred", None) or isinstance(labels, (list, tuple))):
        raise invalid("labels", "'inferred', None, or a list/tuple of int labels", labels)
    label_mode = check_choice("label_mode", label_mode, ("int", "categorical", "binary", None))
    if labels is None:
        label_mode = None
    color_mode = check_choice("color_mode", color_mode, ("grayscale", "rgb", "rgba"))
    if batch_size is not None:
        batch_size = check_int("batch_size", batch_size, 1)
    if not (isinstance(image_size, (tuple, list)) and len(image_size) == 2):
        raise invalid("image_size", "a tuple (height, width) of ints >= 1", image_size,
                      TypeError)
    image_size = (check_int("image_size", image_size[0], 1, 2**15),
                  check_int("image_size", image_size[1], 1, 2**15))
    interpolation = check_choice("interpolation", interpolation, ("bilinear", "nearest"))
    if crop_to_aspect_ratio and pad_to_aspect_ratio:
        raise ValueError("Only one of `crop_to_aspect_ratio` and `pad_to_aspect_ratio` can be "
                         "True. Received: both True")
    data_format = config.normalize_data_format(data_format)
    if validation_split is not None:
        if isinstance(validation_split, bool) or not isinstance(validation_split, numbers.Real) \
                or not 0 < float(validation_split) < 1:
            raise invalid("validation_split", "None or a float in (0, 1)", validation_split)
        subset = check_choice("subset", subset, ("training", "validation", "both"))
        if shuffle and seed is None:
            raise ValueError("If using `validation_split` and shuffling the data, you must "
                             "provide a `seed` argument, so that the training and validation "
                             "subsets do not overlap. Received: seed=None")
    elif subset is not None:
        raise ValueError(f"Invalid value for argument `subset`: it needs `validation_split`. "
                         f"Received: subset={subset!r}")

    if labels == "inferred":
        names = sorted(d for d in os.listdir(directory)
                       if os.path.isdir(os.path.join(directory, d)))
        if class_names is not None:
            unknown = sorted(set(class_names) - set(names))
            if unknown or len(set(class_names)) != len(class_names):
                raise ValueError(f"Invalid value for argument `class_names`: expected distinct "
                                 f"sub-directories of {directory!r} ({names}). Received: "
                                 f"class_names={class_names!r}")
            names = list(class_names)
        paths, label_list = [], []
        for index, name in enumerate(names):
            files = _list_files(os.path.join(directory, name), follow_links)
            paths += files
            label_list += [index] * len(files)
        label_array = np.array(label_list, np.int64)
    else:
        if class_names is not None:
            raise ValueError("`class_names` is only valid with labels='inferred'. Received: "
                             f"labels={labels!r}")
        paths = _list_files(directory, follow_links)
        names = None
        if labels is None:
            label_array = None
        else:
            label_array = np.asarray(labels)
            if label_array.ndim != 1 or label_array.dtype.kind not in "iu" or \
                    len(label_array) != len(paths):
                raise ValueError(f"Invalid value for argument `labels`: expected {len(paths)} int "
                                 f"labels, one per image file found. Received: {len(label_array)}"
                                 f" labels")
            label_array = label_array.astype(np.int64)
            names = [str(i) for i in range(int(label_array.max()) + 1)] if len(paths) else []
    if not paths:
        raise ValueError(f"No images found in directory {directory!r}. Allowed formats: "
                         f"{ALLOWED_IMAGE_FORMATS}")
    n_classes = len(names) if names is not None else 0
    if label_mode == "binary" and n_classes != 2:
        raise ValueError(f"When passing `label_mode=\"binary\"`, there must be exactly 2 "
                         f"classes. Found the following classes: {names}")
    if verbose:
        print(f"Found {len(paths)} files belonging to {n_classes} classes.")

    order = np.arange(len(paths))
    if shuffle:
        order = _generator(seed).permutation(len(paths))
    paths = [paths[i] for i in order]
    if label_array is not None:
        label_array = label_array[order]

    def subset_indices(which):
        if validation_split is None:
            return np.arange(len(paths))
        n_val = int(float(validation_split) * len(paths))
        if which == "training":
            return np.arange(0, len(paths) - n_val)
        return np.arange(len(paths) - n_val, len(paths))

    def build(which):
        index = subset_indices(which)
        if verbose and validation_split is not None:
            print(f"Using {len(index)} files for {which}.")
        images = np.zeros((len(index),) + image_size + ({"grayscale": 1, "rgb": 3,
                                                          "rgba": 4}[color_mode],), np.float32)
        for k, i in enumerate(index):
            image = _to_channels(_read_image(paths[i]), color_mode, paths[i])
            image = _fit_aspect(image, image_size, crop_to_aspect_ratio, pad_to_aspect_ratio)
            if interpolation == "nearest":
                rows = np.minimum((np.arange(image_size[0]) + 0.5) * image.shape[0]
                                  / image_size[0], image.shape[0] - 1).astype(np.int64)
                cols = np.minimum((np.arange(image_size[1]) + 0.5) * image.shape[1]
                                  / image_size[1], image.shape[1] - 1).astype(np.int64)
                images[k] = image[rows][:, cols]
            else:
                images[k] = resize_bilinear(image, image_size)
        if data_format == "channels_first":
            images = np.ascontiguousarray(images.transpose(0, 3, 1, 2))
        if label_mode is None or label_array is None:
            y = None
        elif label_mode == "int":
            y = label_array[index].astype(np.int32)
        elif label_mode == "binary":
            y = label_array[index].astype(np.float32)[:, None]
        else:
            y = np.eye(n_classes, dtype=np.float32)[label_array[index]]
        selected = [paths[i] for i in index]
        dataset = ImageDataset(images, y, batch_size, shuffle, None if seed is None else seed + 1,
                               names, selected)
        return dataset

    if subset == "both":
        return build("training"), build("validation")
    return build(subset or "training")
