"""Weights in PyTorch ``state_dict`` naming, as ndarrays and plain ``.npz`` files (no pickle).

``state_dict``, ``save_torch_state_dict`` and ``load_torch_state_dict`` need no PyTorch: the
keys come from the plan (``minnet.interop.plan``), so they are exactly
``to_torch(model).state_dict().keys()``.
"""
import os
from typing import Any, NamedTuple

import numpy as np

from minnet.autograd import Tensor
from minnet.interop.plan import (Step, from_torch_value, named_slots, set_num_batches_tracked,
                                 to_torch_value)

__all__ = ["state_dict", "save_torch_state_dict", "load_torch_state_dict"]


class Update(NamedTuple):
    """A checked value waiting to be copied into one slot (loading is all or nothing)."""

    step: Step
    suffix: str
    weight: Any
    value: np.ndarray


def state_dict(model):
    """The model's weights in PyTorch ``state_dict`` naming, as ndarrays (copies).

    Keys are ``"<module index>.<name>"`` with the numbering of ``to_torch(model)``:
    ``0.weight``, ``0.bias`` (Linear/Conv2d), ``1.weight``, ``1.bias``, ``1.running_mean``,
    ``1.running_var``, ``1.num_batches_tracked`` (BatchNorm), ...  Needs no PyTorch.

    Args:
        model: a built minnet ``Sequential`` (or a single layer).

    Returns:
        dict ``str -> np.ndarray`` (``num_batches_tracked`` is a 0-d int64 array).

    Shape:
        Linear ``weight`` ``(out, in)``, Conv2d ``weight`` ``(F, C, kh, kw)``, biases and
        BatchNorm state ``(C,)``: the same layouts minnet uses.

    Example:
        >>> sd = interop.state_dict(model)
        >>> sorted(sd)[:2]
        ['0.bias', '0.weight']
    """
    result = {}
    for slot in named_slots(model):
        if slot.weight is not None:
            value = to_torch_value(slot.step, slot.suffix, slot.weight.data)
        else:
            value = slot.default
        result[slot.key] = np.array(value, copy=True)
    return result


def save_torch_state_dict(model, path):
    """Write ``state_dict(model)`` to ``path`` as a plain ``.npz`` (no pickle).

    A PyTorch user loads it with::

        arrays = np.load(path)
        module.load_state_dict({k: torch.from_numpy(v) for k, v in arrays.items()})

    Args:
        model: a built minnet ``Sequential`` (or layer).
        path: file name (``.npz`` is appended by NumPy when missing) or an open binary file.

    Returns:
        The path written (with ``.npz``), or ``path`` itself for a file object.

    Shape:
        See ``state_dict``.

    Example:
        >>> interop.save_torch_state_dict(model, "weights.npz")
        'weights.npz'
    """
    arrays = state_dict(model)
    if isinstance(path, (str, os.PathLike)):
        path = os.fspath(path)
        if not path.endswith(".npz"):
            path += ".npz"
    np.savez(path, **arrays)
    return path


def as_numpy(value, key):
    """A state entry (torch tensor, minnet Tensor or array-like) as a numeric ndarray."""
    if hasattr(value, "detach") and hasattr(value, "cpu"):      # a torch.Tensor
        value = value.detach().cpu().numpy()
    elif isinstance(value, Tensor):
        value = value.data
    array = np.asarray(value)
    if array.dtype.kind not in "fiub":
        raise TypeError(f"State entry {key!r}: expected a numeric array. Received dtype {array.dtype}.")
    return array


def load_torch_state_dict(model, path):
    """Copy weights in PyTorch ``state_dict`` naming into a built minnet model, in place.

    Args:
        model: a built minnet ``Sequential`` (or layer) with the architecture the state
            was saved from.
        path: an ``.npz`` file written by ``save_torch_state_dict`` (or by a torch user with
            ``np.savez(path, **{k: v.numpy() for k, v in module.state_dict().items()})``),
            or a mapping ``name -> array`` (a torch ``state_dict()`` works as is).

    Returns:
        The model.

    Raises:
        ValueError: missing or unexpected keys, a shape that does not match, or a value that
            minnet cannot hold (a BatchNorm weight that is not all ones for a layer with
            ``scale=False``).

    Shape:
        See ``state_dict``.

    Example:
        >>> interop.load_torch_state_dict(model, "weights.npz")
    """
    if isinstance(path, (str, os.PathLike)) or hasattr(path, "read"):
        with np.load(path, allow_pickle=False) as data:
            arrays = {key: data[key] for key in data.files}
    elif hasattr(path, "items"):
        arrays = dict(path.items())
    else:
        raise TypeError(f"Invalid value for argument `path`: expected a file name, a binary file or "
                        f"a mapping of arrays. Received: {type(path).__name__}")
    slots = named_slots(model)
    expected = [slot.key for slot in slots]
    missing = [key for key in expected if key not in arrays]
    unexpected = [key for key in arrays if key not in set(expected)]
    if missing or unexpected:
        raise ValueError(f"The state does not match model '{getattr(model, 'name', model)}': "
                         f"missing keys {missing}, unexpected keys {unexpected}. Expected keys: "
                         f"{expected}.")
    updates = []
    for slot in slots:
        value = as_numpy(arrays[slot.key], slot.key)
        weight, suffix = slot.weight, slot.suffix
        want = (np.shape(to_torch_value(slot.step, suffix, weight.data)) if weight is not None
                else slot.default.shape)
        if value.shape != want:
            raise ValueError(f"State entry {slot.key!r} (layer '{slot.step.layer.name}') has shape "
                             f"{value.shape}; expected {want}.")
        if weight is None and suffix != "num_batches_tracked" \
                and not np.array_equal(value, slot.default):
            raise ValueError(f"State entry {slot.key!r}: layer '{slot.step.layer.name}' has no "
                             f"{'gamma (scale=False)' if suffix == 'weight' else 'beta (center=False)'}, "
                             f"so the value must be all {'ones' if suffix == 'weight' else 'zeros'}.")
        updates.append(Update(slot.step, suffix, weight, value))
    for update in updates:
        if update.weight is not None:
            update.weight.data[...] = from_torch_value(update.step, update.suffix, update.value)
            update.weight._bump_version()
        elif update.suffix == "num_batches_tracked":
            set_num_batches_tracked(update.step.layer, int(update.value))
    return model
