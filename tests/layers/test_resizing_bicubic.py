"""Resizing(interpolation="bicubic") (issue 28, item 2): NumPy reference of the cubic taps,
both layouts, gradcheck, PyTorch's F.interpolate(mode="bicubic") and Keras 3 (oracle)."""
import numpy as np
import pytest

import minnet as mn
from minnet import layers
from minnet.layers.preprocessing import bicubic_matrix

RNG = np.random.default_rng(3)
SIZES = [(3, 4), (9, 11), (5, 7), (10, 3), (1, 1)]


def _keys(d, a=-0.75):
    d = abs(d)
    if d <= 1:
        return (a + 2) * d ** 3 - (a + 3) * d ** 2 + 1
    if d < 2:
        return a * d ** 3 - 5 * a * d ** 2 + 8 * a * d - 4 * a
    return 0.0


def test_matrix_matches_the_cubic_kernel():
    for size, out in ((5, 3), (4, 9), (6, 6)):
        m = bicubic_matrix(size, out)
        for i in range(out):
            s = (i + 0.5) * size / out - 0.5
            want = np.zeros(size)
            for tap in range(int(np.floor(s)) - 1, int(np.floor(s)) + 3):
                want[min(max(tap, 0), size - 1)] += _keys(s - tap)
            np.testing.assert_allclose(m[i], want, atol=1e-12)
        np.testing.assert_allclose(m.sum(1), 1.0, atol=1e-12)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_bicubic_layouts_and_gradcheck(dtype):
    x = RNG.normal(size=(2, 5, 7, 3))
    last = layers.Resizing(4, 9, interpolation="bicubic", dtype=dtype)(x.astype(dtype)).numpy()
    first = layers.Resizing(4, 9, interpolation="bicubic", data_format="channels_first",
                            dtype=dtype)(x.transpose(0, 3, 1, 2).astype(dtype)).numpy()
    np.testing.assert_allclose(first.transpose(0, 2, 3, 1), last, rtol=1e-5, atol=1e-6)
    want = np.einsum("oh,nhwc,pw->nopc", bicubic_matrix(5, 4), x, bicubic_matrix(7, 9))
    tol = 1e-12 if dtype == "float64" else 1e-5
    np.testing.assert_allclose(last, want, rtol=tol, atol=tol)
    if dtype == "float64":
        layer = layers.Resizing(3, 2, interpolation="bicubic", dtype="float64")
        xt = mn.tensor(RNG.normal(size=(1, 2, 3, 2)), requires_grad=True)
        assert mn.gradcheck(lambda a: layer(a), (xt,))


@pytest.mark.parametrize("size", SIZES)
def test_bicubic_against_torch(torch, size):
    x = RNG.normal(size=(2, 5, 7, 3))
    got = layers.Resizing(*size, interpolation="bicubic", dtype="float64")(x).numpy()
    want = torch.nn.functional.interpolate(torch.tensor(x).permute(0, 3, 1, 2), size=size,
                                           mode="bicubic", align_corners=False)
    np.testing.assert_allclose(got, want.permute(0, 2, 3, 1).numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.slow_once
def test_bicubic_against_keras(keras):
    x = RNG.normal(size=(2, 5, 7, 3)).astype("float32")
    for size in SIZES:
        want = np.asarray(keras.layers.Resizing(*size, interpolation="bicubic")(x).cpu())
        got = layers.Resizing(*size, interpolation="bicubic")(x).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
