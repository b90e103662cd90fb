"""MaxPooling3D / AveragePooling3D (issue 28): NumPy windows, both layouts, float32/64,
gradcheck, PyTorch's max_pool3d/avg_pool3d, and Keras 3 (oracle, incl. its "same" rules)."""
import numpy as np
import pytest

import minnet as mn
from minnet import layers

RNG = np.random.default_rng(33)


def _reference(x, pool, stride, op):
    """x (N, D, H, W, C), "valid"."""
    n, *spatial, c = x.shape
    out = [(s - p) // t + 1 for s, p, t in zip(spatial, pool, stride)]
    y = np.zeros((n, *out, c))
    for i in range(out[0]):
        for j in range(out[1]):
            for k in range(out[2]):
                win = x[:, i * stride[0]:i * stride[0] + pool[0], j * stride[1]:j * stride[1] + pool[1],
                        k * stride[2]:k * stride[2] + pool[2]]
                y[:, i, j, k] = op(win, axis=(1, 2, 3))
    return y


@pytest.mark.parametrize("cls, op", [("MaxPooling3D", np.max), ("AveragePooling3D", np.mean)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_valid_windows_layouts_gradcheck(cls, op, dtype):
    x = RNG.normal(size=(2, 4, 5, 6, 3))
    pool, stride = (2, 3, 2), (1, 2, 3)
    layer = getattr(layers, cls)(pool, stride, dtype=dtype)
    got = layer(x.astype(dtype)).numpy()
    tol = 1e-12 if dtype == "float64" else 1e-5
    np.testing.assert_allclose(got, _reference(x, pool, stride, op), rtol=tol, atol=tol)
    assert layer.compute_output_shape(x.shape) == got.shape
    first = getattr(layers, cls)(pool, stride, data_format="channels_first", dtype=dtype)
    np.testing.assert_allclose(first(np.moveaxis(x, -1, 1).astype(dtype)).numpy(),
                               np.moveaxis(got, -1, 1), rtol=tol, atol=tol)
    if dtype == "float64":
        small = getattr(layers, cls)(2, 1, padding="same", dtype="float64")
        t = mn.tensor(RNG.normal(size=(1, 2, 3, 2, 1)), requires_grad=True)
        assert mn.gradcheck(lambda a: small(a), (t,))


def test_against_torch(torch):
    x = RNG.normal(size=(2, 3, 5, 6, 7))
    F = torch.nn.functional
    tx = torch.tensor(x)
    got = layers.MaxPooling3D(2, data_format="channels_first", dtype="float64")(x).numpy()
    np.testing.assert_array_equal(got, F.max_pool3d(tx, 2).numpy())
    got = layers.AveragePooling3D(3, strides=1, padding="same", data_format="channels_first",
                                  dtype="float64")(x).numpy()       # even pads: left out
    want = F.avg_pool3d(tx, 3, stride=1, padding=1, count_include_pad=False).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-14)


@pytest.mark.slow_once
def test_against_keras(keras):
    x = RNG.normal(size=(2, 5, 6, 7, 3)).astype("float32")
    for cls in ("MaxPooling3D", "AveragePooling3D"):
        for kwargs in ({"pool_size": 2}, {"pool_size": (2, 3, 2), "strides": (1, 2, 3)},
                       {"pool_size": 3, "padding": "same"}, {"pool_size": 3, "strides": 1, "padding": "same"},
                       {"pool_size": (2, 2, 3), "strides": 2, "padding": "same"},
                       {"pool_size": 2, "data_format": "channels_first"}):
            xx = np.moveaxis(x, -1, 1) if kwargs.get("data_format") == "channels_first" else x
            want = np.asarray(getattr(keras.layers, cls)(**kwargs)(xx).cpu())
            got = getattr(layers, cls)(**kwargs)(xx).numpy()
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=f"{cls} {kwargs}")
