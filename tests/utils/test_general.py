"""mn.utils: to_categorical, set_random_seed, PyDataset, unpack_x_y_sample_weight."""
import random

import numpy as np
import pytest

import minnet as mn


def test_to_categorical_as_keras():
    out = mn.utils.to_categorical([0, 2, 1], num_classes=4)
    np.testing.assert_array_equal(out, np.eye(4, dtype=np.float32)[[0, 2, 1]])
    assert out.dtype == np.float32
    assert mn.utils.to_categorical(np.array([[1], [0]])).shape == (2, 2)      # trailing 1 dropped
    assert mn.utils.to_categorical(np.array([[1, 2], [0, 0]])).shape == (2, 2, 3)
    with pytest.raises(ValueError, match=r"\[0, 3\).*label 5"):
        mn.utils.to_categorical([0, 5], num_classes=3)
    with pytest.raises(ValueError, match="integer"):
        mn.utils.to_categorical([0.5])
    with pytest.raises(TypeError, match="integer"):
        mn.utils.to_categorical(np.array(["a"]))


def test_set_random_seed_seeds_every_generator():
    mn.utils.set_random_seed(3)
    a = (random.random(), np.random.rand(), mn.randn(2).numpy() if hasattr(mn, "randn") else None)
    layer_a = mn.layers.Dense(2)
    layer_a.build((None, 3))
    mn.utils.set_random_seed(3)
    b = (random.random(), np.random.rand(), mn.randn(2).numpy() if hasattr(mn, "randn") else None)
    layer_b = mn.layers.Dense(2)
    layer_b.build((None, 3))
    assert a[:2] == b[:2]
    np.testing.assert_array_equal(layer_a.kernel.data, layer_b.kernel.data)
    with pytest.raises(ValueError, match="seed"):
        mn.utils.set_random_seed(-1)


def test_pydataset_protocol_and_unpack():
    class Empty(mn.utils.PyDataset):
        pass

    with pytest.raises(NotImplementedError, match="__len__"):
        len(Empty())
    x, y, w = mn.utils.unpack_x_y_sample_weight([1, 2])
    assert (x, y, w) == (1, 2, None)
    assert mn.utils.unpack_x_y_sample_weight(5) == (5, None, None)
    assert mn.utils.pack_x_y_sample_weight(1, 2, 3) == (1, 2, 3)
    with pytest.raises(ValueError, match="length 4"):
        mn.utils.unpack_x_y_sample_weight((1, 2, 3, 4))
