"""minnet.regularizers: Keras 3's formulas, names, serialization, and gradients."""
import json

import numpy as np
import pytest

import minnet as mn
from minnet import layers, regularizers


def test_formulas_and_gradients():
    w = np.array([[1.0, -2.0], [3.0, -0.5]])
    t = mn.tensor(w, requires_grad=True)
    assert float(regularizers.L1(0.1)(t).numpy()) == pytest.approx(0.1 * 6.5)
    assert float(regularizers.L2(0.1)(t).numpy()) == pytest.approx(0.1 * 14.25)
    both = regularizers.L1L2(l1=0.1, l2=0.2)(t)
    assert float(both.numpy()) == pytest.approx(0.1 * 6.5 + 0.2 * 14.25)
    both.backward()
    np.testing.assert_allclose(t.grad, 0.1 * np.sign(w) + 0.2 * 2 * w)
    assert float(regularizers.L1L2()(t).numpy()) == 0.0
    x = mn.tensor(np.random.default_rng(0).standard_normal((3, 2)), requires_grad=True)
    assert mn.gradcheck(lambda a: regularizers.L1L2(0.3, 0.7)(a), (x,))


def test_names_and_defaults_are_keras3():
    assert regularizers.get("l2").l2 == 0.01 and regularizers.get("L2").l2 == 0.01
    assert regularizers.get("l1").l1 == 0.01
    reg = regularizers.get("l1_l2")
    assert (reg.l1, reg.l2) == (0.0, 0.0)
    assert regularizers.l2 is regularizers.L2 and regularizers.l1_l2(1e-4, 1e-3).l2 == 1e-3
    assert regularizers.get(None) is None
    custom = lambda w: (w * w).sum()       # noqa: E731
    assert regularizers.get(custom) is custom


def test_serialize_round_trip():
    reg = regularizers.L1L2(l1=1e-5, l2=1e-4)
    config = json.loads(json.dumps(regularizers.serialize(reg)))
    assert config == {"class_name": "L1L2", "config": {"l1": 1e-5, "l2": 1e-4}}
    again = regularizers.deserialize(config)
    assert isinstance(again, regularizers.L1L2) and again.get_config() == reg.get_config()
    assert regularizers.serialize(None) is None


def test_bad_arguments():
    with pytest.raises(ValueError, match="`l2`"):
        regularizers.L2(-1.0)
    with pytest.raises(TypeError, match="`l1`"):
        regularizers.L1("big")
    with pytest.raises(ValueError, match="Unknown regularizer: 'l3'.*l1_l2"):
        regularizers.get("l3")
    with pytest.raises(TypeError, match=r"regularizers.l2\(0.01\)"):
        layers.Dense(2, kernel_regularizer=0.01)


def test_dense_regularizer_joins_the_loss_of_a_hand_written_step():
    mn.manual_seed(0)
    layer = layers.Dense(3, kernel_regularizer=regularizers.L2(0.1), dtype="float64")
    x = np.random.default_rng(1).standard_normal((5, 4))
    out = layer(x, training=True)
    loss = (out * out).mean() + sum(layer.losses)
    loss.backward()
    kernel = layer.kernel.data
    expected = 2 * ((x @ kernel.T) @ np.eye(3)).T @ x / out.size + 0.1 * 2 * kernel
    np.testing.assert_allclose(layer.kernel.grad, expected, rtol=1e-10)
