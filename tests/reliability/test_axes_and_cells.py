"""An `axis` outside the input's rank, a layer called on another size than it was built for,
and a list of cells that is not one: each is a ValueError/TypeError naming the argument
(found by test_adversarial.py on the layers and losses added this round)."""
import numpy as np
import pytest

import minnet as mn
from minnet import layers, losses


@pytest.mark.parametrize("make, x", [
    (lambda: layers.UnitNormalization(axis=2), np.ones((2, 3), "float32")),
    (lambda: layers.RMSNormalization(axis=-3), np.ones((2, 3), "float32")),
])
def test_a_layer_axis_beyond_the_rank_names_axis(make, x):
    with pytest.raises(ValueError, match=r"`axis`: expected axes in \[-2, 2\).*Received: axis="):
        make()(x)


def test_rms_normalization_called_on_another_size_than_built():
    layer = layers.RMSNormalization()
    layer(np.ones((2, 5), "float32"))
    with pytest.raises(ValueError, match=r"built for size \(5,\).*shape \(2, 6\)"):
        layer(np.ones((2, 6), "float32"))


@pytest.mark.parametrize("loss", [losses.CosineSimilarity(axis=2), losses.Dice(axis=2),
                                  losses.Tversky(axis=2), mn.metrics.CosineSimilarity(axis=2)])
def test_a_loss_or_metric_axis_beyond_the_rank_names_axis(loss):
    y = np.ones((2, 3), "float32")
    call = loss.update_state if isinstance(loss, mn.metrics.Metric) else loss
    with pytest.raises(ValueError, match=r"`axis`: expected axes in \[-2, 2\)"):
        call(y, y)


@pytest.mark.parametrize("cells", ["0", [], [layers.Dense(2)], 3])
def test_stacked_rnn_cells_needs_a_list_of_cells(cells):
    with pytest.raises(TypeError, match="`cells`"):
        layers.StackedRNNCells(cells)


@pytest.mark.parametrize("call", [
    lambda y: layers.UnitNormalization(axis=(1, -1))(y),
    lambda y: layers.RMSNormalization(axis=(1, -1))(y),
    lambda y: losses.Dice(axis=(1, -1))(y, y),
    lambda y: losses.Tversky(axis=(0, -2))(y, y),
])
def test_an_axis_named_twice_names_axis(call):
    with pytest.raises(ValueError, match=r"`axis`: expected distinct axes.*names an axis twice"):
        call(np.ones((2, 3), "float32"))
