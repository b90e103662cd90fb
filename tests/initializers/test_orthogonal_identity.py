"""Orthogonal / Identity initializers and Keras's snake_case initializer names (issue 28, item 2)."""
import numpy as np
import pytest

import minnet as mn
from minnet import initializers, layers


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (5, 5), (2, 3, 4)])
def test_orthogonal_is_orthonormal(shape):
    w = initializers.Orthogonal(gain=2.0, seed=3)(shape, "float64")
    m = w.reshape(-1, shape[-1])
    small = min(m.shape)
    gram = m.T @ m if m.shape[0] >= m.shape[1] else m @ m.T
    np.testing.assert_allclose(gram, 4.0 * np.eye(small), atol=1e-12)
    np.testing.assert_array_equal(w, initializers.Orthogonal(gain=2.0, seed=3)(shape, "float64"))


def test_identity_and_errors():
    np.testing.assert_array_equal(initializers.Identity(gain=0.5)((2, 3)), 0.5 * np.eye(2, 3))
    with pytest.raises(ValueError, match="2-D"):
        initializers.Identity()((2, 3, 4))
    with pytest.raises(ValueError, match="at least 2"):
        initializers.Orthogonal()((3,))


def test_names_resolve_in_layers():
    mn.manual_seed(0)
    dense = layers.Dense(3, kernel_initializer="orthogonal")
    dense.build((None, 5))
    k = dense.get_weights()[0]                                   # (3, 5): orthonormal rows
    np.testing.assert_allclose(k @ k.T, np.eye(3), atol=1e-6)
    eye = layers.Dense(4, kernel_initializer="identity", use_bias=False)
    np.testing.assert_array_equal(eye(np.arange(8.0).reshape(2, 4)).numpy(), np.arange(8.0).reshape(2, 4))
    for name in ("glorot_uniform", "he_normal", "lecun_uniform", "variance_scaling", "zeros",
                 "orthogonal", "identity", "truncated_normal", "random_normal", "random_uniform"):
        assert isinstance(getattr(initializers, name)(), initializers.Initializer)
        assert type(initializers.get(name)) is getattr(initializers, name)
    assert initializers.OrthogonalInitializer is initializers.Orthogonal
    config = initializers.serialize(initializers.Orthogonal(gain=1.5, seed=2))
    assert initializers.deserialize(config).gain == 1.5


@pytest.mark.slow_once
def test_against_keras(keras):
    ours = initializers.Identity(gain=1.5)((3, 5), "float32")
    theirs = np.asarray(keras.initializers.Identity(gain=1.5)((5, 3)).cpu())
    np.testing.assert_array_equal(ours, theirs.T)                  # minnet's (out, in) layout
    k = np.asarray(keras.initializers.Orthogonal(gain=1.0, seed=1)((5, 3)).cpu())
    np.testing.assert_allclose(k.T @ k, np.eye(3), atol=1e-5)      # the same property as ours
    for name in ("glorot_uniform", "orthogonal", "identity", "he_normal", "lecun_normal"):
        assert hasattr(keras.initializers, name) and hasattr(initializers, name)
