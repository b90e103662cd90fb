"""Models: ``Model`` (functional and subclassed), ``Sequential``, loading and cloning.

Every model is a ``Model`` and trains through ``minnet.trainers.Trainer``; this package only
describes structure (``model.py``: layers, summary, config; ``layer_graph.py``: a functional model's graph;
``sequential.py``: the stack; ``cloning.py``: ``clone_model``).
"""
import json

from minnet import _registry, saving
from minnet.layers import deserialize as deserialize_layer
from minnet.models.cloning import clone_model
from minnet.models.model import Model
from minnet.models.sequential import Sequential
from minnet.trainers import NotCompiledError

__all__ = ["Model", "Functional", "Sequential", "load_model", "clone_model", "model_from_json",
           "NotCompiledError"]

# Keras's name for a model built from inputs and outputs (files and JSON use it).
Functional = Model

# Model files and configs name these classes; saving builds them through the one registry.
_registry.register("layer", Sequential)
_registry.register("layer", Model, aliases=("Functional",))


def load_model(path, custom_objects=None, compile=True, restore_random_state=True):
    """Load a model saved with ``model.save`` (see ``minnet.saving.load_model``)."""
    return saving.load_model(path, custom_objects=custom_objects, compile=compile,
                             restore_random_state=restore_random_state)


def model_from_json(json_string, custom_objects=None):
    """Re-create a model (new weights) from ``model.to_json()``.

    Raises:
        ValueError: not JSON, or not a model description.
    """
    try:
        data = json.loads(json_string)
    except (TypeError, ValueError) as error:
        raise ValueError(f"Invalid value for argument `json_string`: expected the JSON text of "
                         f"`model.to_json()` ({error}).") from None
    if not isinstance(data, dict) or "class_name" not in data or not isinstance(data.get("config"), dict):
        raise ValueError("Invalid value for argument `json_string`: expected a JSON object with "
                         "'class_name' and 'config' (from `model.to_json()`).")
    return deserialize_layer(data, custom_objects=custom_objects)
