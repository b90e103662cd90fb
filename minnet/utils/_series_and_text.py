"""``timeseries_dataset_from_array`` and ``text_dataset_from_directory`` (Keras's arguments).

Both return in-memory batch iterables (``len()`` = batches per pass, reshuffled per pass when
``shuffle`` is on) that ``model.fit`` takes as it takes ``image_dataset_from_directory``'s.
"""
import numbers
import os

import numpy as np

__all__ = ["timeseries_dataset_from_array", "text_dataset_from_directory", "BatchDataset"]


class BatchDataset:
    """Batches of ``x`` (and ``y``) held in memory: an iterable of ``(x, y)`` with ``__len__``."""

    def __init__(self, x, y, batch_size, shuffle=False, seed=None, class_names=None,
                 file_paths=None, kind="samples"):
        self.x, self.y = x, y
        self.batch_size, self.shuffle = batch_size, shuffle
        self.class_names, self.file_paths = class_names, file_paths
        self._generator = np.random.default_rng(seed) if shuffle else None
        self._kind = kind

    def __len__(self):
        return -(-len(self.x) // (self.batch_size or 1))

    def __iter__(self):
        n = len(self.x)
        order = self._generator.permutation(n) if self.shuffle else np.arange(n)
        step = self.batch_size or 1
        for start in range(0, n, step):
            index = order[start:start + step] if self.batch_size else order[start]
            yield self.x[index] if self.y is None else (self.x[index], self.y[index])

    def __repr__(self):
        return f"BatchDataset({len(self.x)} {self._kind}, batch_size={self.batch_size})"


def _positive_int(name, value, allow_none=False):
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value <= 0:
        raise ValueError(f"`{name}` must be higher than 0. Received: {name}={value!r}")
    return int(value)


def timeseries_dataset_from_array(data, targets, sequence_length, sequence_stride=1,
                                  sampling_rate=1, batch_size=128, shuffle=False, seed=None,
                                  start_index=None, end_index=None):
    """Sliding windows over a series, as ``keras.utils.timeseries_dataset_from_array``.

    Window ``i`` starts at ``start_index + p_i`` with ``p_i = i * sequence_stride`` and holds
    ``data[start + k * sampling_rate]`` for ``k < sequence_length``; its target is
    ``targets[start_index + p_i]``. There are ``end_index - start_index - (sequence_length
    - 1) * sampling_rate`` start positions (fewer if ``targets`` is shorter), every
    ``sequence_stride``-th one used.

    Args:
        data: array-like, time on axis 0.
        targets: array-like aligned with ``data`` (or None for inputs only).
        sequence_length: steps per window.
        sequence_stride: steps between the starts of consecutive windows.
        sampling_rate: steps between two samples within a window.
        batch_size: windows per batch (None: single windows).
        shuffle: shuffle the windows (once, with ``seed``) and each pass.
        seed: int seed for the shuffle.
        start_index, end_index: the part of ``data`` used (end exclusive).

    Returns:
        A ``BatchDataset`` of ``(windows, targets)`` batches (``windows`` alone without targets).

    Example:
        >>> ds = mn.utils.timeseries_dataset_from_array(np.arange(10), None, sequence_length=3,
        ...                                             batch_size=2)
        >>> next(iter(ds))
        array([[0, 1, 2], [1, 2, 3]])
    """
    data = np.asarray(data)
    sequence_length = _positive_int("sequence_length", sequence_length)
    sampling_rate = _positive_int("sampling_rate", sampling_rate)
    sequence_stride = _positive_int("sequence_stride", sequence_stride)
    batch_size = _positive_int("batch_size", batch_size, allow_none=True)
    if sampling_rate >= len(data):
        raise ValueError("`sampling_rate` must be lower than the length of the data. Received: "
                         f"sampling_rate={sampling_rate}, for data of length {len(data)}")
    if sequence_stride >= len(data):
        raise ValueError("`sequence_stride` must be lower than the length of the data. Received: "
                         f"sequence_stride={sequence_stride}, for data of length {len(data)}")
    start_index = 0 if start_index is None else start_index
    end_index = len(data) if end_index is None else end_index
    if not 0 <= start_index < len(data):
        raise ValueError("`start_index` must be 0 or greater and lower than the length of the "
                         f"data. Received: start_index={start_index}, for data of length {len(data)}")
    if not start_index < end_index <= len(data):
        raise ValueError("`end_index` must be higher than `start_index` and at most the length "
                         f"of the data. Received: start_index={start_index}, end_index={end_index}")
    num_seqs = end_index - start_index - (sequence_length - 1) * sampling_rate
    if targets is not None:
        targets = np.asarray(targets)
        num_seqs = min(num_seqs, len(targets) - start_index)
    positions = np.arange(0, max(num_seqs, 0), sequence_stride, dtype=np.int64)
    if shuffle:
        positions = np.random.default_rng(seed).permutation(positions)
    offsets = np.arange(sequence_length, dtype=np.int64) * sampling_rate
    windows = data[start_index + positions[:, None] + offsets[None, :]]
    y = None if targets is None else targets[start_index + positions]
    return BatchDataset(windows, y, batch_size, shuffle=shuffle,
                        seed=None if seed is None else seed + 1, kind="windows")


def _text_files(directory, follow_links):
    found = []
    for root, dirs, files in os.walk(directory, followlinks=follow_links):
        dirs.sort()
        found.extend(os.path.join(root, name) for name in sorted(files) if name.endswith(".txt"))
    return found


def text_dataset_from_directory(directory, labels="inferred", label_mode="int", class_names=None,
                                batch_size=32, max_length=None, shuffle=True, seed=None,
                                validation_split=None, subset=None, follow_links=False,
                                verbose=True):
    """``.txt`` files in class sub-directories as batches of strings, as Keras's function.

    ``directory/pos/*.txt``, ``directory/neg/*.txt`` give labels 1 and 0 (class names
    sorted). Texts are Python strings in a NumPy object array (``TextVectorization`` takes
    them), cut to ``max_length`` characters when it is given.

    Args:
        directory, labels, label_mode, class_names, batch_size, shuffle, seed,
        validation_split, subset, follow_links, verbose: as ``image_dataset_from_directory``.
        max_length: keep at most this many characters of each text.

    Returns:
        A ``BatchDataset`` of ``(texts, labels)`` (a tuple of two with ``subset="both"``).
    """
    directory = os.fsdecode(os.fspath(directory))
    if not os.path.isdir(directory):
        raise ValueError(f"Invalid value for argument `directory`: expected an existing "
                         f"directory. Received: directory={directory!r}")
    if label_mode not in ("int", "categorical", "binary", None):
        raise ValueError('`label_mode` argument must be one of "int", "categorical", "binary", '
                         f"or None. Received: label_mode={label_mode}")
    if labels not in ("inferred", None) and not isinstance(labels, (list, tuple)):
        raise ValueError("`labels` argument should be a list/tuple of integer labels, of the same "
                         "size as the number of text files in the target directory, 'inferred' "
                         f"or None. Received: labels={labels!r}")
    if labels not in ("inferred", None) and class_names:
        raise ValueError("You can only pass `class_names` if `labels=\"inferred\"`. Received: "
                         f"labels={labels}, and class_names={class_names}")
    if labels is None or label_mode is None:
        labels, label_mode = None, None
    if validation_split is not None:
        if not 0 < float(validation_split) < 1:
            raise ValueError(f"`validation_split` must be between 0 and 1, received: "
                             f"{validation_split}")
        if subset not in ("training", "validation", "both"):
            raise ValueError('`subset` must be either "training", "validation" or "both", '
                             f"received: {subset}")
        if shuffle and seed is None:
            raise ValueError("If using `validation_split` and shuffling the data, you must "
                             "provide a `seed` argument, to make sure that there is no overlap "
                             "between the training and validation subset.")
    elif subset is not None:
        raise ValueError("If `subset` is set, `validation_split` must be set, and inversely.")
    if labels == "inferred":
        names = sorted(d for d in os.listdir(directory) if os.path.isdir(os.path.join(directory, d)))
        if class_names is not None:
            if sorted(set(class_names) - set(names)) or len(set(class_names)) != len(class_names):
                raise ValueError(f"The `class_names` passed did not match the names of the "
                                 f"subdirectories of the target directory. Expected: {names}, "
                                 f"but received: {class_names}")
            names = list(class_names)
        paths, label_list = [], []
        for index, name in enumerate(names):
            files = _text_files(os.path.join(directory, name), follow_links)
            paths += files
            label_list += [index] * len(files)
        label_array = np.array(label_list, np.int64)
    else:
        paths = _text_files(directory, follow_links)
        names = None
        label_array = None
        if labels is not None:
            label_array = np.asarray(labels, dtype=np.int64)
            if len(label_array) != len(paths):
                raise ValueError("Expected the lengths of `labels` to match the number of files in "
                                 f"the target directory. len(labels) is {len(label_array)} while "
                                 f"we found {len(paths)} files in directory {directory}.")
            names = [str(i) for i in range(int(label_array.max()) + 1)] if len(paths) else []
    if not paths:
        raise ValueError(f"No text files found in directory {directory}. Allowed format: .txt")
    n_classes = len(names) if names else 0
    if label_mode == "binary" and n_classes != 2:
        raise ValueError('When passing `label_mode="binary"`, there must be exactly 2 '
                         f"class_names. Received: class_names={names}")
    if verbose:
        print(f"Found {len(paths)} files belonging to {n_classes} classes.")
    order = np.random.default_rng(seed).permutation(len(paths)) if shuffle else np.arange(len(paths))
    paths = [paths[i] for i in order]
    if label_array is not None:
        label_array = label_array[order]

    def build(which):
        n_val = int(float(validation_split) * len(paths)) if validation_split is not None else 0
        index = (np.arange(len(paths) - n_val) if which == "training"
                 else np.arange(len(paths) - n_val, len(paths)))
        if verbose and validation_split is not None:
            print(f"Using {len(index)} files for {which}.")
        texts = []
        for i in index:
            with open(paths[i], encoding="utf-8") as file:
                text = file.read()
            texts.append(text[:max_length] if max_length is not None else text)
        x = np.empty(len(texts), dtype=object)
        x[:] = texts
        if label_mode is None:
            y = None
        elif label_mode == "int":
            y = label_array[index].astype(np.int32)
        elif label_mode == "binary":
            y = label_array[index].astype(np.float32)[:, None]
        else:
            y = np.eye(n_classes, dtype=np.float32)[label_array[index]]
        return BatchDataset(x, y, batch_size, shuffle=shuffle,
                            seed=None if seed is None else seed + 1, class_names=names,
                            file_paths=[paths[i] for i in index], kind="texts")

    if subset == "both":
        return build("training"), build("validation")
    return build(subset or "training")
