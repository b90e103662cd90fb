"""Keras's Variable API on Tensor: assign / assign_add / assign_sub, value, _keras_mask."""
import numpy as np
import pytest

import minnet as mn


def test_assign_family_updates_in_place_and_keeps_dtype():
    t = mn.Tensor(np.zeros(3, np.int64))
    data = t.data
    t.assign([1, 2, 3]).assign_add(np.ones(3)).assign_sub(mn.Tensor(np.array([1, 1, 1])))
    assert t.data is data and t.data.dtype == np.int64
    np.testing.assert_array_equal(t.data, [1, 2, 3])
    scalar = mn.Tensor(np.float32(0.0))
    scalar.assign_add(2.5)
    assert float(scalar) == 2.5
    with pytest.raises(ValueError, match="shape"):
        t.assign(np.ones(4))


def test_assign_on_a_weight_is_a_state_update_outside_the_graph():
    w = mn.Parameter(np.ones(2, np.float32))
    version = w._version.value
    w.assign(np.array([3.0, 4.0]))          # allowed although w requires grad (Keras allows it)
    assert w._version.value > version
    loss = (w * 2.0).sum()
    loss.backward()
    np.testing.assert_array_equal(w.value.grad, [2.0, 2.0])
    assert w.value is w


def test_keras_mask_attribute_reads_and_writes_the_side_table():
    t = mn.Tensor(np.ones((2, 3)))
    assert t._keras_mask is None
    t._keras_mask = np.array([[1, 1, 0], [1, 0, 0]])
    assert t._keras_mask.dtype == bool and t._keras_mask.tolist() == [[True, True, False],
                                                                      [True, False, False]]
    t._keras_mask = None
    assert t._keras_mask is None
