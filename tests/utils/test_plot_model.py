"""plot_model: a PNG drawn with matplotlib whose boxes carry every layer's name and output shape."""
import numpy as np
import pytest

import minnet as mn
from minnet import layers as L

pytest.importorskip("matplotlib")


def _texts(figure):
    return [t.get_text() for axes in figure.axes for t in axes.texts]


def _check_png(path):
    PIL = pytest.importorskip("PIL.Image")
    with PIL.open(path) as image:
        assert image.format == "PNG"
        pixels = np.asarray(image.convert("L"))
    assert pixels.shape[0] > 100 and pixels.shape[1] > 100
    assert pixels.min() < 128 < pixels.max()     # something is drawn on the white page


def test_sequential(tmp_path):
    model = mn.models.Sequential([L.Input((28, 28, 1)), L.Conv2D(8, 3, name="conv"),
                                  L.MaxPooling2D(2, name="pool"), L.Flatten(name="flat"),
                                  L.Dense(10, activation="softmax", name="out")])
    figure = mn.utils.plot_model(model, to_file=tmp_path / "model.png", show_shapes=True,
                                 show_layer_activations=True, dpi=60)
    _check_png(tmp_path / "model.png")
    texts = "\n".join(_texts(figure))
    expected = {"conv": "(None, 26, 26, 8)", "pool": "(None, 13, 13, 8)", "flat": "(None, 1352)",
                "out": "(None, 10)"}
    boxes = _texts(figure)
    for layer in model.layers:
        box = next(t for t in boxes if t.startswith(f"{layer.name} ({type(layer).__name__})"))
        assert f"Output shape: {expected[layer.name]}" in box
    assert any(t.startswith("input_layer (InputLayer)\nOutput shape: (None, 28, 28, 1)") for t in boxes)
    assert "Activation: softmax" in texts
    # the arrows: one per connection (input -> conv -> pool -> flat -> out)
    arrows = [t for axes in figure.axes for t in axes.texts if t.get_text() == ""]
    assert len(arrows) == 4


def test_functional_with_branches(tmp_path):
    a = L.Input((6,), name="a")
    b = L.Input((4,), name="b")
    h = L.Dense(5, name="left")(a)
    g = L.Dense(5, name="right")(b)
    out = L.Dense(2, name="head")(L.Concatenate(name="join")([h, g]))
    model = mn.models.Model([a, b], out)
    figure = mn.utils.plot_model(model, to_file=tmp_path / "f.png", show_shapes=True,
                                 show_dtype=True, show_trainable=True, rankdir="LR", dpi=60)
    _check_png(tmp_path / "f.png")
    texts = "\n".join(_texts(figure))
    for name, shape in [("a", "(None, 6)"), ("b", "(None, 4)"), ("left", "(None, 5)"),
                        ("right", "(None, 5)"), ("join", "(None, 10)"), ("head", "(None, 2)")]:
        assert name + " (" in texts and f"Output shape: {shape}" in texts
    assert "Trainable: Y" in texts and "dtype:" in texts
    arrows = [t for axes in figure.axes for t in axes.texts if t.get_text() == ""]
    assert len(arrows) == 5


def test_without_shapes_and_names(tmp_path):
    model = mn.models.Sequential([L.Input((3,)), L.Dense(2, name="d")])
    figure = mn.utils.plot_model(model, to_file=None, show_layer_names=False)
    texts = _texts(figure)
    assert "Dense" in texts and not any("Output shape" in t for t in texts)
    with pytest.raises(ValueError, match="rankdir"):
        mn.utils.plot_model(model, to_file=None, rankdir="BT")


def test_subclassed_model_is_one_box(tmp_path):
    class Net(mn.Model):
        def __init__(self):
            super().__init__(name="net")
            self.dense = L.Dense(2)

        def call(self, x, training=False):
            return self.dense(x)

    net = Net()
    net.predict(np.zeros((1, 3), "float32"), verbose=0)
    figure = mn.utils.plot_model(net, to_file=tmp_path / "n.png")
    assert _texts(figure) == ["net (Net)"]
