"""minnet.ops against keras.ops (Keras 3 on torch) as the oracle: values and dtypes.

Each case is (op name, a function building the positional args from a rng, kwargs). The
same inputs go to both; results must match in value (float tolerance per dtype) and in
dtype (Keras's promotion). Skipped when Keras or torch is missing (the `keras` fixture).
"""
import numpy as np
import pytest

from minnet import ops
from _ops_cases import CASES, F32, IMAGE_CASES

pytestmark = pytest.mark.filterwarnings("ignore:__array__ implementation:DeprecationWarning")  # inside Keras/torch


def _tolerance(dtype):
    return {"float16": 1e-2, "float32": 2e-5, "float64": 1e-10}.get(str(dtype), 0)


def _to_numpy(value, keras):
    if isinstance(value, (list, tuple)):
        return [_to_numpy(v, keras) for v in value]
    return np.asarray(keras.ops.convert_to_numpy(value))


def _mine_numpy(value):
    if isinstance(value, (list, tuple)):
        return [_mine_numpy(v) for v in value]
    return np.asarray(ops.convert_to_numpy(value))


def _compare(mine, theirs, name):
    if isinstance(theirs, list):
        assert isinstance(mine, list) and len(mine) == len(theirs), name
        for m, t in zip(mine, theirs):
            _compare(m, t, name)
        return
    assert mine.shape == theirs.shape, (name, mine.shape, theirs.shape)
    assert str(mine.dtype) == str(theirs.dtype), (name, mine.dtype, theirs.dtype)
    tol = _tolerance(theirs.dtype)
    if tol:
        np.testing.assert_allclose(mine, theirs, rtol=tol * 10, atol=tol * 10, err_msg=name)
    else:
        np.testing.assert_array_equal(mine, theirs, err_msg=name)


@pytest.mark.parametrize("name, builders, kwargs", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_matches_keras(keras, name, builders, kwargs):
    rng = np.random.default_rng(7)
    args = [b(rng) for b in builders]
    # a few Keras torch ops need torch tensors (they call tensor methods on the input)
    keras_args = [keras.ops.convert_to_tensor(a) if name in ("unfold", "fold", "unstack") else a for a in args]
    theirs = getattr(keras.ops, name)(*keras_args, **kwargs)
    mine = getattr(ops, name)(*args, **kwargs)
    if name == "nonzero":          # Keras on torch stacks the index arrays; NumPy/JAX give a tuple
        mine = ops.stack(mine)
    _compare(_mine_numpy(mine), _to_numpy(theirs, keras), name)




def test_gaussian_blur_default_layout_is_image_data_format():
    # Keras 3.15.1's eager torch gaussian_blur reads data_format=None as channels_first (its
    # symbolic path standardises it); minnet reads None as mn.config.image_data_format()
    x = np.random.default_rng(0).normal(size=(1, 5, 5, 2)).astype(F32)
    np.testing.assert_array_equal(ops.image.gaussian_blur(x).numpy(),
                                  ops.image.gaussian_blur(x, data_format="channels_last").numpy())


@pytest.mark.parametrize("name, builders, kwargs", IMAGE_CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(IMAGE_CASES)])
def test_image_matches_keras(keras, name, builders, kwargs):
    rng = np.random.default_rng(3)
    args = [b(rng) for b in builders]
    theirs = getattr(keras.ops.image, name)(*args, **kwargs)
    mine = getattr(ops.image, name)(*args, **kwargs)
    _compare(_mine_numpy(mine), _to_numpy(theirs, keras), name)


@pytest.mark.parametrize("name, kwargs", [("resize", {"size": (3, 3)}), ("resize", {"size": (8, 8), "interpolation": "nearest"}),
                                          ("rgb_to_grayscale", {}), ("extract_patches", {"size": 2})])
def test_integer_images_keep_their_dtype(keras, name, kwargs):
    x = (np.random.default_rng(1).random((2, 4, 4, 3)) * 255).astype("uint8")
    theirs = keras.ops.convert_to_numpy(getattr(keras.ops.image, name)(x, **kwargs))
    mine = getattr(ops.image, name)(x, **kwargs).numpy()
    assert mine.dtype == theirs.dtype == np.uint8
    # Keras computes in float32: at exact .5 ties the rounding may fall either way
    assert np.abs(mine.astype(int) - theirs.astype(int)).max() <= 1
