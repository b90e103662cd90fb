"""The layout-mismatch guard where the user's array enters a model (issue #13 item 3)."""
import numpy as np
import pytest

import minnet as mn
from minnet import layers


def test_nchw_array_into_default_channels_last_conv_model_raises_before_training():
    x = np.random.default_rng(0).random((8, 3, 32, 32)).astype("float32")
    model = mn.Sequential([layers.Conv2D(4, 3), layers.Flatten(), layers.Dense(2)])
    model.compile(optimizer="adam", loss=mn.losses.SparseCategoricalCrossentropy(from_logits=True))
    with pytest.raises(ValueError, match=r"\(None, 3, 32, 32\).*channels_first.*set_image_data_format"):
        model.fit(x, np.zeros(8, int), verbose=0)


def test_input_declared_in_the_other_layout_raises_naming_both_fixes():
    with pytest.raises(ValueError, match="data_format='channels_first'.*set_image_data_format"):
        mn.Sequential([layers.Input((3, 32, 32)), layers.Conv2D(4, 3)])
    with pytest.raises(ValueError, match="channels_first"):
        layers.Conv2D(4, 3)(mn.Input((1, 28, 28)))


def test_failed_add_leaves_the_model_unchanged():
    model = mn.Sequential([layers.Input((3, 32, 32))])
    with pytest.raises(ValueError):
        model.add(layers.Conv2D(4, 3))
    assert model.layers == []


def test_explicit_layout_and_matching_shapes_are_trusted():
    mn.Sequential([layers.Input((3, 32, 32)), layers.Conv2D(4, 3, data_format="channels_first")])
    mn.Sequential([layers.Input((32, 32, 3)), layers.Conv2D(4, 3)])
    # feature maps inside a model are never questioned: (N, 4, 4, 32) is normal there
    model = mn.Sequential([layers.Input((8, 8, 1)), layers.Conv2D(32, 3, strides=2, padding="same"),
                           layers.Conv2D(8, 3, padding="same")])
    assert model.output_shape == (None, 4, 4, 8)


def test_shape_preserving_layers_before_the_first_conv_do_not_hide_the_mistake():
    with pytest.raises(ValueError, match="channels_first"):
        mn.Sequential([layers.Input((3, 32, 32)), layers.Rescaling(1 / 255), layers.Conv2D(4, 3)])
