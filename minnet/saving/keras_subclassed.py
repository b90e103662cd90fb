"""A subclassed ``Model`` in a Keras 3 ``.keras`` file, as Keras writes one.

``config.json`` holds ``{"module", "class_name", "config": model.get_config(),
"registered_name": "package>Name", "build_config": {"input_shape": ...}}``; loading looks the
class up by its registered name (or ``custom_objects``), calls ``from_config``, builds the
model by calling it once on zeros of the build shape (Keras's ``build_from_config``), then
sets the weights. ``model.weights.h5`` holds the model's own variables at ``vars`` and each
sublayer where Keras's saving walks it (``_keras_weights.to_keras``: attribute names, the
model's ``layers`` among them, lists by snake-case class name).
"""
import json

import numpy as np

from minnet import _registry
from minnet.autograd import Tensor, no_grad
from minnet.saving._keras_weights import from_keras, to_keras
from minnet.saving.archive import ModelFileError
from minnet.saving.registration import get_registered_name

__all__ = ["is_subclassed", "subclassed_document", "write_subclassed_weights", "read_subclassed",
           "read_subclassed_weights"]


def is_subclassed(model):
    """A built subclassed model (no functional graph, not a Sequential)."""
    return (getattr(model, "_graph", None) is None and not hasattr(model, "pop")
            and model.built and model._build_input_shape is not None)


def subclassed_document(model):
    """``config.json``'s document for ``model`` (raises ValueError for a config JSON cannot hold)."""
    config = model.get_config()
    try:
        json.dumps(config)
    except TypeError as error:
        raise ValueError(f"its get_config() returns values JSON cannot hold ({error})") from None
    name = get_registered_name(type(model))
    shape = model._build_input_shape
    shape = [None if s is None else int(s) for s in shape] if isinstance(shape, tuple) else shape
    return {"module": type(model).__module__, "class_name": type(model).__name__, "config": config,
            "registered_name": name if name != type(model).__name__ else None,
            "build_config": {"input_shape": shape}}


def write_subclassed_weights(h5, model):
    """The model's variables into the open ``h5`` file, at Keras's paths."""
    for sub, values in to_keras(model, model.get_weights()).items():
        group = (h5.require_group(sub) if sub else h5).require_group("vars")
        for i, array in enumerate(values):
            group.create_dataset(str(i), data=np.asarray(array))


def read_subclassed(h5py, document, h5, path, custom_objects):
    """Re-create the model of ``document`` and set its weights from the open ``h5`` file."""
    name = document.get("registered_name") or document.get("class_name")
    try:
        cls = _registry.lookup("layer", name, custom_objects)
    except ValueError:
        raise ModelFileError(f"{path!r} holds a subclassed model {name!r}: register its class "
                             f"(@mn.saving.register_keras_serializable()) or pass it in "
                             f"custom_objects.") from None
    model = cls.from_config(dict(document.get("config") or {}))
    shape = (document.get("build_config") or {}).get("input_shape")
    if shape is not None and not model.built:
        if shape and isinstance(shape[0], (list, tuple)):
            sample = [Tensor(np.zeros([1 if s is None else s for s in part], "float32")) for part in shape]
        else:
            sample = Tensor(np.zeros([1 if s is None else s for s in shape], "float32"))
        with no_grad():
            model(sample, training=False)
    try:
        model.set_weights(read_subclassed_weights(h5py, h5, model))
    except (ValueError, KeyError, IndexError) as error:
        raise ModelFileError(f"{path!r}: the weights of model '{model.name}' do not fit: {error}") from None
    return model


def read_subclassed_weights(h5py, h5, model):
    """The arrays for ``model.set_weights`` from the open ``h5`` file (Keras's paths)."""
    groups = {}

    def collect(key, obj):
        if isinstance(obj, h5py.Group) and key.split("/")[-1] == "vars" and not key.startswith("optimizer"):
            groups[key[:-len("vars")].rstrip("/")] = [np.asarray(obj[str(i)]) for i in range(len(obj))]

    h5.visititems(collect)
    if "vars" in h5:
        groups[""] = [np.asarray(h5["vars"][str(i)]) for i in range(len(h5["vars"]))]
    return from_keras(model, groups)
