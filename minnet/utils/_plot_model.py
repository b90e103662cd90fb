"""``plot_model``: the model's graph drawn with matplotlib (no graphviz, no pydot).

Each layer is a box (its name and class, optionally its output shape, dtype, activation and
whether it trains) and each connection an arrow. A ``Sequential`` is a column; a functional
model is drawn by levels (a layer's level is the longest path to it from an input), the
boxes of one level side by side. The structure comes from the model's public description
(``layers``, ``get_config()``'s nodes), as the ONNX exporter reads it.
"""
import os

from minnet._utils import spec_references

__all__ = ["plot_model", "model_graph"]


def _shape_text(shape):
    if isinstance(shape, list):
        return ", ".join(_shape_text(s) for s in shape)
    return "(" + ", ".join("None" if s is None else str(s) for s in shape) + ")"


def model_graph(model):
    """``(boxes, edges)``: boxes ``[(name, class name, output shape or None, layer)]`` in order,
    edges ``[(from name, to name)]``."""
    config = model.get_config() if hasattr(model, "get_config") else {}
    if isinstance(config, dict) and "nodes" in config:
        entries = {entry["name"]: entry for entry in config["layers"]}
        shapes = {}
        boxes, edges = [], []
        counts = {}
        for reference in spec_references(config["inputs"]):
            name = reference[0]
            layer = model.get_layer(name)
            shape = tuple(getattr(layer, "batch_shape", None) or ())
            shapes[(name, 0, 0)] = shape
            counts[name] = 1
            boxes.append((name, "InputLayer", shape, layer))
        for node in config["nodes"]:
            name = node["layer"]
            if entries.get(name, {}).get("class_name") in ("Input", "InputLayer"):
                continue
            layer = model.get_layer(name)
            refs = spec_references(node["arguments"])
            in_shapes = [shapes.get(tuple(r)) for r in refs]
            try:
                out = layer.compute_output_shape(in_shapes[0] if len(in_shapes) == 1 else in_shapes)
            except Exception:  # noqa: BLE001 - a layer that cannot tell its shape is drawn without
                out = None
            index = counts.get(name, 0)
            counts[name] = index + 1
            outs = out if isinstance(out, list) else [out]
            for i, shape in enumerate(outs):
                shapes[(name, index, i)] = None if shape is None else tuple(shape)
            if index == 0:
                boxes.append((name, type(layer).__name__,
                              None if out is None else (outs if len(outs) > 1 else outs[0]), layer))
            edges.extend((r[0], name) for r in refs)
        return boxes, edges
    if not hasattr(model, "add"):
        # A subclassed model: its `call` is Python code, so there is no graph to draw (Keras
        # draws it as one box too).
        try:
            shape = tuple(model.output_shape)
        except Exception:  # noqa: BLE001 - not built: drawn without a shape
            shape = None
        return [(model.name, type(model).__name__, shape, model)], []
    shape = getattr(model, "input_shape", None)
    boxes, edges = [], []
    previous = None
    if shape is not None:
        boxes.append(("input_layer", "InputLayer", tuple(shape), None))
        previous = "input_layer"
    for layer in getattr(model, "layers", []):
        out = None
        if shape is not None:
            try:
                out = tuple(layer.compute_output_shape(shape))
            except Exception:  # noqa: BLE001
                out = None
        boxes.append((layer.name, type(layer).__name__, out, layer))
        if previous is not None:
            edges.append((previous, layer.name))
        previous, shape = layer.name, out
    return boxes, edges


def _levels(boxes, edges):
    level = {name: 0 for name, *_ in boxes}
    for _ in range(len(boxes)):
        changed = False
        for source, target in edges:
            if level[target] < level[source] + 1:
                level[target] = level[source] + 1
                changed = True
        if not changed:
            break
    return level


def plot_model(model, to_file="model.png", show_shapes=False, show_dtype=False,
               show_layer_names=True, rankdir="TB", expand_nested=False, dpi=200,
               show_layer_activations=False, show_trainable=False, **kwargs):
    """Draw the model's layers and connections to ``to_file`` (Keras's ``plot_model``).

    Args:
        model: a built Sequential or functional model.
        to_file: the image file (``.png``, ``.pdf``, ``.svg``: matplotlib's formats).
        show_shapes: write each layer's output shape.
        show_dtype: write each layer's dtype.
        show_layer_names: write each layer's name (its class is always written).
        rankdir: ``"TB"`` (top to bottom) or ``"LR"`` (left to right).
        expand_nested: accepted for Keras compatibility (nested models are one box).
        dpi: the image's resolution.
        show_layer_activations: write the activation of layers that have one.
        show_trainable: write whether each layer trains.
        **kwargs: accepted for Keras compatibility (``show_layer_range``, ...).

    Returns:
        The matplotlib ``Figure`` (its texts are the boxes' labels).

    Example:
        >>> mn.utils.plot_model(model, to_file="model.png", show_shapes=True)
    """
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.patches import FancyBboxPatch
    except ImportError as error:
        raise ImportError("plot_model needs matplotlib: pip install matplotlib") from error
    if rankdir not in ("TB", "LR"):
        raise ValueError(f"Invalid value for argument `rankdir`: expected 'TB' or 'LR'. "
                         f"Received: rankdir={rankdir!r}")
    boxes, edges = model_graph(model)
    if not boxes:
        raise ValueError(f"Model '{model.name}' has no layers to plot (build it first).")
    level = _levels(boxes, edges)
    by_level = {}
    for name, *_ in boxes:
        by_level.setdefault(level[name], []).append(name)
    labels = {}
    for name, class_name, shape, layer in boxes:
        lines = [f"{name} ({class_name})" if show_layer_names else class_name]
        if show_shapes:
            lines.append("Output shape: " + ("?" if shape is None else _shape_text(shape)))
        if show_dtype:
            lines.append(f"dtype: {getattr(layer, 'dtype', 'float32')}")
        if show_layer_activations and getattr(layer, "activation", None) is not None:
            activation = layer.activation
            lines.append(f"Activation: {getattr(activation, '__name__', activation)}")
        if show_trainable and layer is not None:
            lines.append(f"Trainable: {'Y' if getattr(layer, 'trainable', True) else 'N'}")
        labels[name] = "\n".join(lines)
    n_levels = max(level.values()) + 1
    width = max(len(v) for v in by_level.values())
    box_w, box_h = 3.4, 0.35 + 0.28 * max(label.count("\n") + 1 for label in labels.values())
    gap_w, gap_h = 0.5, 0.6
    positions = {}
    for lv, names in by_level.items():
        for i, name in enumerate(names):
            across = (i - (len(names) - 1) / 2) * (box_w + gap_w)
            along = -lv * (box_h + gap_h)
            positions[name] = (across, along) if rankdir == "TB" else (-along * 2.2, -across / 2)
    if rankdir == "TB":
        fig_size = (max(width * (box_w + gap_w), 4.5), max(n_levels * (box_h + gap_h), 1.5))
    else:
        fig_size = (max(n_levels * (box_w + gap_w) * 1.1, 4.5), max(width * (box_h + gap_h), 1.5))
    figure = Figure(figsize=fig_size)
    FigureCanvasAgg(figure)
    axes = figure.add_axes([0, 0, 1, 1])
    axes.set_axis_off()
    for name, (x, y) in positions.items():
        axes.add_patch(FancyBboxPatch((x - box_w / 2, y - box_h / 2), box_w, box_h,
                                      boxstyle="round,pad=0.02", facecolor="#e8f0fe",
                                      edgecolor="#3c5a99", linewidth=1.0))
        axes.text(x, y, labels[name], ha="center", va="center", fontsize=8, family="monospace")
    for source, target in edges:
        (x0, y0), (x1, y1) = positions[source], positions[target]
        if rankdir == "TB":
            start, end = (x0, y0 - box_h / 2), (x1, y1 + box_h / 2)
        else:
            start, end = (x0 + box_w / 2, y0), (x1 - box_w / 2, y1)
        axes.annotate("", xy=end, xytext=start,
                      arrowprops={"arrowstyle": "->", "color": "#3c5a99", "lw": 1.0})
    xs = [p[0] for p in positions.values()]
    ys = [p[1] for p in positions.values()]
    axes.set_xlim(min(xs) - box_w / 2 - 0.2, max(xs) + box_w / 2 + 0.2)
    axes.set_ylim(min(ys) - box_h / 2 - 0.2, max(ys) + box_h / 2 + 0.2)
    if to_file is not None:
        to_file = os.fspath(to_file)
        extension = os.path.splitext(to_file)[1].lstrip(".") or "png"
        figure.savefig(to_file, dpi=dpi, format=extension)
    return figure
