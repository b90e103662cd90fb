"""minnet.constraints: Keras 3's formulas on minnet's (out, in, ...) weight layout."""
import json

import numpy as np
import pytest

import minnet as mn
from minnet import constraints, layers


def _keras_max_norm(w_keras, max_value, axis):
    norms = np.sqrt(np.sum(w_keras ** 2, axis=axis, keepdims=True))
    return w_keras * np.clip(norms, 0, max_value) / (1e-7 + norms)


def test_max_norm_matches_keras_on_the_transposed_dense_kernel():
    rng = np.random.default_rng(0)
    kernel = rng.standard_normal((4, 6)) * 3          # minnet (units, in)
    keras_kernel = kernel.T                           # Keras (in, units)
    ours = constraints.MaxNorm(2.0)(kernel)           # Keras's default axis=0
    np.testing.assert_allclose(ours.T, _keras_max_norm(keras_kernel, 2.0, 0), rtol=1e-12)
    assert np.all(np.linalg.norm(ours, axis=1) <= 2.0 + 1e-9)


def test_conv_kernel_axes_match_keras():
    rng = np.random.default_rng(1)
    kernel = rng.standard_normal((5, 3, 2, 2)) * 2    # minnet (filters, in, kh, kw)
    keras_kernel = kernel.transpose(2, 3, 1, 0)       # Keras (kh, kw, in, filters)
    ours = constraints.MaxNorm(1.5, axis=[0, 1, 2])(kernel)
    want = _keras_max_norm(keras_kernel, 1.5, (0, 1, 2)).transpose(3, 2, 0, 1)
    np.testing.assert_allclose(ours, want, rtol=1e-12)
    assert constraints.keras_axis_to_minnet([0, 1, 2], 4) == (1, 2, 3)
    assert constraints.keras_axis_to_minnet(0, 2) == (1,)
    assert constraints.keras_axis_to_minnet(0, 1) == (0,)


def test_non_neg_unit_norm_min_max_norm():
    w = np.array([[3.0, -4.0], [0.6, 0.8]])
    np.testing.assert_array_equal(constraints.NonNeg()(w), [[3.0, 0.0], [0.6, 0.8]])
    unit = constraints.UnitNorm()(w)
    np.testing.assert_allclose(np.linalg.norm(unit, axis=1), 1.0, rtol=1e-6)
    mm = constraints.MinMaxNorm(min_value=2.0, max_value=3.0)(w)
    np.testing.assert_allclose(np.linalg.norm(mm, axis=1), [3.0, 2.0], rtol=1e-6)
    half = constraints.MinMaxNorm(min_value=2.0, max_value=3.0, rate=0.5)(w)
    np.testing.assert_allclose(np.linalg.norm(half, axis=1), [4.0, 1.5], rtol=1e-6)
    bias = constraints.MaxNorm(1.0)(np.array([3.0, 4.0], np.float32))
    assert bias.dtype == np.float32
    np.testing.assert_allclose(bias, [0.6, 0.8], rtol=1e-6)


def test_the_input_array_is_not_changed():
    w = np.array([[3.0, -4.0]])
    before = w.copy()
    for c in (constraints.MaxNorm(1), constraints.NonNeg(), constraints.UnitNorm(),
              constraints.MinMaxNorm()):
        c(w)
    np.testing.assert_array_equal(w, before)


def test_names_serialization_and_errors():
    assert isinstance(constraints.get("max_norm"), constraints.MaxNorm)
    assert isinstance(constraints.get("non_neg"), constraints.NonNeg)
    assert isinstance(constraints.get("unit_norm"), constraints.UnitNorm)
    assert isinstance(constraints.get("min_max_norm"), constraints.MinMaxNorm)
    assert constraints.max_norm is constraints.MaxNorm
    c = constraints.MaxNorm(3, axis=[0, 1, 2])
    config = json.loads(json.dumps(constraints.serialize(c)))
    assert constraints.deserialize(config).get_config() == c.get_config()
    with pytest.raises(ValueError, match="`max_value`"):
        constraints.MaxNorm(0)
    with pytest.raises(TypeError, match="`axis`"):
        constraints.MaxNorm(1, axis="rows")
    with pytest.raises(ValueError, match="`axis`"):
        constraints.MaxNorm(1, axis=3)(np.ones((2, 2)))
    with pytest.raises(ValueError, match="`rate`"):
        constraints.MinMaxNorm(rate=2)


def test_dense_stores_the_constraint_on_its_parameters():
    layer = layers.Dense(2, kernel_constraint=constraints.MaxNorm(1.0), bias_constraint="non_neg")
    layer(np.ones((1, 3)))
    kernel = layer.kernel
    kernel.data[...] = 5.0
    kernel.data[...] = kernel.constraint(kernel.data)          # what an optimizer step does
    np.testing.assert_allclose(np.linalg.norm(kernel.data, axis=1), 1.0, rtol=1e-6)
    assert isinstance(layer.bias.constraint, constraints.NonNeg)
