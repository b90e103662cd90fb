"""A layer over a functional op validates its input once, in the op (issue #26, item 6).

On a valid input the layer's own checks (``_check_call_input``) do not run; on an input the
op refuses they run once and raise the layer's message, chained to the op's error.
"""
import numpy as np
import pytest

from minnet import layers

# (layer, a valid input, an input with the wrong channel count / features / size)
CASES = [
    (lambda: layers.Conv1D(4, 3, data_format="channels_last"), (2, 9, 3), (2, 9, 2)),
    (lambda: layers.SeparableConv1D(4, 3, data_format="channels_last"), (2, 9, 3), (2, 9, 2)),
    (lambda: layers.DepthwiseConv1D(3, data_format="channels_last"), (2, 9, 3), (2, 9, 2)),
    (lambda: layers.Conv1DTranspose(4, 3, data_format="channels_last"), (2, 9, 3), (2, 9, 2)),
    (lambda: layers.Conv2D(4, 3, data_format="channels_first"), (2, 3, 8, 8), (2, 2, 8, 8)),
    (lambda: layers.Conv2D(4, 3, strides=2, padding="same", data_format="channels_last"),
     (2, 8, 8, 3), (2, 8, 8, 5)),
    (lambda: layers.SeparableConv2D(4, 3, data_format="channels_last"), (2, 8, 8, 3), (2, 8, 8, 2)),
    (lambda: layers.DepthwiseConv2D(3, data_format="channels_last"), (2, 8, 8, 3), (2, 8, 8, 2)),
    (lambda: layers.Conv2DTranspose(4, 3, data_format="channels_first"), (2, 3, 5, 5), (2, 2, 5, 5)),
    (lambda: layers.Conv3D(2, 3, data_format="channels_last"), (1, 5, 5, 5, 3), (1, 5, 5, 5, 2)),
    (lambda: layers.Conv3DTranspose(2, 3, data_format="channels_last"), (1, 3, 3, 3, 3),
     (1, 3, 3, 3, 2)),
    (lambda: layers.Dense(3), (2, 4), (2, 5)),
    (lambda: layers.MaxPooling2D(3, data_format="channels_first"), (1, 2, 8, 8), (1, 2, 2, 8)),
    (lambda: layers.AveragePooling2D(3, data_format="channels_first"), (1, 2, 8, 8), (1, 2, 8, 2)),
    (lambda: layers.GlobalAveragePooling2D(data_format="channels_first"), (1, 2, 4, 4), (2, 3)),
]


@pytest.mark.parametrize("make, good, bad", CASES)
def test_a_valid_call_skips_the_layer_checks_and_a_refusal_runs_them_once(make, good, bad,
                                                                           monkeypatch):
    layer = make()
    layer(np.ones(good, "float32"))                   # built
    cls = type(layer)
    original = cls._check_call_input
    calls = []

    def counting(self, x):
        calls.append(tuple(x.shape))
        return original(self, x)

    monkeypatch.setattr(cls, "_check_call_input", counting)
    layer(np.ones(good, "float32"))
    assert calls == []
    with pytest.raises(ValueError, match=f"layer '{layer.name}'|Layer '{layer.name}'") as info:
        layer(np.ones(bad, "float32"))
    assert calls == [bad]                            # the op refused, the layer explained it
    assert isinstance(info.value.__cause__, ValueError)
    assert "Invalid" in str(info.value.__cause__)


def test_a_refusal_the_layer_does_not_explain_is_the_ops_error(monkeypatch):
    layer = layers.Conv2D(4, 3, data_format="channels_first")
    layer(np.ones((1, 3, 8, 8), "float32"))
    monkeypatch.setattr(layers.Conv2D, "_check_call_input", lambda self, x: None)
    with pytest.raises(ValueError, match=r"^Invalid argument `input`: expected 3 input channels"):
        layer(np.ones((1, 2, 8, 8), "float32"))


def test_spatial_dropout_checks_its_rank_in_eval_mode_where_no_op_runs():
    layer = layers.SpatialDropout2D(0.5)
    with pytest.raises(ValueError, match="ndim=4"):
        layer(np.ones((2, 3, 4), "float32"), training=False)
    with pytest.raises(ValueError, match="ndim=4") as info:
        layer(np.ones((2, 3, 4), "float32"), training=True)
    assert "Invalid argument `x`" in str(info.value.__cause__)
