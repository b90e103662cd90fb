"""minnet._ext.image_kernels kernels against NumPy references, both dtypes, thread independence."""
import numpy as np
import pytest

import minnet  # noqa: F401  (compiled modules)
from minnet._ext import image_kernels as K

DTYPES = [np.float32, np.float64]


def _resize_ref(x, oh, ow):
    n, h, w, c = x.shape
    out = np.empty((n, oh, ow, c))

    def taps(d, size, out_size):
        s = max((d + 0.5) * size / out_size - 0.5, 0.0)
        i0 = min(int(np.floor(s)), size - 1)
        return i0, min(i0 + 1, size - 1), s - i0
    for i in range(oh):
        y0, y1, ty = taps(i, h, oh)
        for j in range(ow):
            x0, x1, tx = taps(j, w, ow)
            out[:, i, j] = ((1 - ty) * (1 - tx) * x[:, y0, x0] + (1 - ty) * tx * x[:, y0, x1]
                            + ty * (1 - tx) * x[:, y1, x0] + ty * tx * x[:, y1, x1])
    return out


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("oh, ow", [(7, 3), (4, 5), (1, 1), (12, 15)])
def test_resize_bilinear_and_adjoint(rng, dtype, oh, ow):
    x = rng.standard_normal((2, 4, 5, 3)).astype(dtype)
    y = K.resize_bilinear(x, oh, ow)
    np.testing.assert_allclose(y, _resize_ref(x.astype(np.float64), oh, ow),
                               rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-6)
    g = rng.standard_normal(y.shape).astype(dtype)
    dx = K.resize_bilinear_backward(g, 4, 5)
    # adjoint identity: <resize(x), g> == <x, resize^T(g)>
    assert np.isclose(np.sum(y.astype(np.float64) * g), np.sum(x.astype(np.float64) * dx),
                      rtol=1e-4 if dtype == np.float32 else 1e-10)


@pytest.mark.parametrize("dtype", DTYPES)
def test_upsample_nearest_and_backward(rng, dtype):
    x = rng.standard_normal((2, 3, 4, 5)).astype(dtype)
    y = K.upsample_nearest(x, 2, 3)
    np.testing.assert_array_equal(y, x.repeat(2, 1).repeat(3, 2))
    g = rng.standard_normal(y.shape).astype(dtype)
    dx = K.upsample_nearest_backward(g, 2, 3)
    np.testing.assert_allclose(dx, g.reshape(2, 3, 2, 4, 3, 5).sum(axis=(2, 4)), rtol=1e-5)
    with pytest.raises(ValueError, match="multiples"):
        K.upsample_nearest_backward(g[:, :5].copy(), 2, 3)


def _map(p, size, mode):
    if mode == "reflect":
        q = np.mod(p + 0.5, 2 * size)
        q = np.where(q >= size, 2 * size - q, q)
        return q - 0.5
    if mode == "wrap":
        return np.mod(p + 0.5, size) - 0.5
    if mode == "nearest":
        return np.clip(p, 0, size - 1)
    return p


@pytest.mark.parametrize("mode", ["reflect", "wrap", "nearest", "constant"])
def test_affine_integer_shift_matches_numpy(rng, mode):
    x = rng.standard_normal((1, 5, 6, 2))
    m = np.array([[1, 0, -2, 0, 1, 1]], np.float64)       # col - 2, row + 1
    y = K.affine_transform(x, m, fill_mode=mode, fill_value=-7.0)
    rows = np.arange(5) + 1
    cols = np.arange(6) - 2
    if mode == "constant":
        want = np.full_like(x, -7.0)
        ok_r = (rows >= 0) & (rows < 5)
        ok_c = (cols >= 0) & (cols < 6)
        want[0][np.ix_(ok_r, ok_c)] = x[0][np.ix_(rows[ok_r], cols[ok_c])]
    else:
        r = np.rint(_map(rows.astype(float), 5, mode)).astype(int)
        c = np.rint(_map(cols.astype(float), 6, mode)).astype(int)
        want = x[:, r][:, :, c]
    np.testing.assert_allclose(y, want, rtol=1e-12, atol=1e-12)


def test_affine_identity_nearest_and_flip(rng):
    x = rng.standard_normal((3, 4, 5, 2)).astype(np.float32)
    m = np.tile([1.0, 0, 0, 0, 1, 0], (3, 1))
    np.testing.assert_array_equal(K.affine_transform(x, m), x)
    np.testing.assert_array_equal(K.affine_transform(x, m, interpolation="nearest"), x)
    fh = np.array([1, 0, 1], np.uint8)
    fv = np.array([0, 1, 1], np.uint8)
    y = K.flip(x, fh, fv)
    np.testing.assert_array_equal(y[0], x[0, :, ::-1])
    np.testing.assert_array_equal(y[1], x[1, ::-1])
    np.testing.assert_array_equal(y[2], x[2, ::-1, ::-1])


def test_thread_count_independent(rng):
    x = rng.standard_normal((16, 32, 32, 3)).astype(np.float32)
    theta = rng.uniform(-1, 1, 16)
    m = np.stack([np.cos(theta), -np.sin(theta), 3 + 0 * theta, np.sin(theta), np.cos(theta),
                  -2 + 0 * theta], axis=1)
    a = K.affine_transform(x, m, n_threads=1)
    b = K.affine_transform(x, m, n_threads=3)
    np.testing.assert_array_equal(a, b)
    g = rng.standard_normal((16, 50, 40, 3)).astype(np.float32)
    np.testing.assert_array_equal(K.resize_bilinear_backward(g, 32, 32, n_threads=1),
                                  K.resize_bilinear_backward(g, 32, 32, n_threads=4))


def test_bad_inputs():
    with pytest.raises(ValueError, match="4-D"):
        K.resize_bilinear(np.zeros((2, 3, 4)), 2, 2)
    with pytest.raises(TypeError, match="float32 or float64"):
        K.upsample_nearest(np.zeros((1, 2, 2, 1), np.int32), 2, 2)
    with pytest.raises(ValueError, match="`fill_mode`"):
        K.affine_transform(np.zeros((1, 2, 2, 1)), np.zeros((1, 6)), fill_mode="edge")
    with pytest.raises(ValueError, match="`matrices`"):
        K.affine_transform(np.zeros((1, 2, 2, 1)), np.full((1, 6), np.nan))
    with pytest.raises(ValueError, match="`out_height`"):
        K.resize_bilinear(np.zeros((1, 2, 2, 1)), 0, 2)
