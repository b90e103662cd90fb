"""``clone_model``: the same architecture with new (re-initialised) weights, as Keras."""
from minnet.layers import deserialize as deserialize_layer
from minnet.layers import serialize as serialize_layer
from minnet.models.model import Model
from minnet.models.sequential import Sequential

__all__ = ["clone_model"]


def clone_model(model, clone_function=None):
    """A new model with ``model``'s architecture and freshly initialised weights.

    Args:
        model: a Sequential or functional ``Model`` (a subclassed model is re-created from
            its ``get_config()``).
        clone_function: optional ``layer -> new layer``; default re-creates each layer from
            its config (``layer.__class__.from_config(layer.get_config())``).

    Returns:
        The new, unbuilt-weights-shared-nothing model (not compiled, as in Keras).
    """
    if not isinstance(model, Model):
        raise TypeError(f"Invalid value for argument `model`: expected a minnet Model. Received: "
                        f"{type(model).__name__}")
    if clone_function is not None and not callable(clone_function):
        raise TypeError(f"Invalid value for argument `clone_function`: expected a callable "
                        f"layer -> layer. Received: {clone_function!r}")
    if isinstance(model, Sequential):
        layers = []
        if model._input_layer is not None:
            layers.append(deserialize_layer(serialize_layer(model._input_layer)))
        for layer in model.layers:
            layers.append(clone_function(layer) if clone_function is not None
                          else deserialize_layer(serialize_layer(layer)))
        clone = Sequential(layers, name=model.name, dtype=model.dtype.name)
        if not clone.built and model.built and model._build_input_shape is not None:
            clone.build(model._build_input_shape)
        return clone
    config = model.get_config()
    if model.inputs is None:
        clone = type(model).from_config(config)
        if model.built and model._build_input_shape is not None:
            clone.build(model._build_input_shape)
        return clone
    if clone_function is not None:
        config = dict(config)
        config["layers"] = [dict(entry) for entry in config["layers"]]
        for entry, layer in zip(config["layers"], model._graph.layers):
            if entry["class_name"] not in ("Input", "InputLayer"):
                new = clone_function(layer)
                entry["class_name"], entry["config"] = serialize_layer(new)["class_name"], new.get_config()
                entry["config"]["name"] = entry["name"]
    return Model.from_config(config)
