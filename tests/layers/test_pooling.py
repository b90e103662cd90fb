"""MaxPooling2D, AveragePooling2D, GlobalAveragePooling2D: NumPy, gradcheck, PyTorch."""
import json

import numpy as np
import pytest

import minnet as mn
from minnet import layers

TOL = {np.float32: dict(rtol=1e-5, atol=1e-6), np.float64: dict(rtol=1e-12, atol=1e-12)}


def pool_reference(x, pool, stride, pad, op):
    """Windows over a padded copy (-inf for max, 0 counted in the mean for avg: count_include_pad)."""
    (kh, kw), (sh, sw), (ph, pw) = pool, stride, pad
    fill = -np.inf if op == "max" else 0.0
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)), constant_values=fill)
    oh = (xp.shape[2] - kh) // sh + 1
    ow = (xp.shape[3] - kw) // sw + 1
    out = np.empty(x.shape[:2] + (oh, ow))
    for i in range(oh):
        for j in range(ow):
            window = xp[:, :, i * sh: i * sh + kh, j * sw: j * sw + kw]
            out[:, :, i, j] = window.max(axis=(2, 3)) if op == "max" else window.mean(axis=(2, 3))
    return out


# (input shape, pool_size, strides, padding)
CASES = [
    ((1, 1, 4, 4), 2, None, 0),               # batch 1, default stride = pool
    ((2, 3, 7, 5), (3, 2), None, 0),          # non-square pool, odd sizes (edge dropped)
    ((2, 2, 9, 8), 3, 2, 1),                  # overlapping windows, padding
    ((1, 2, 5, 6), (2, 3), (3, 1), (1, 0)),   # stride > pool on one axis
    ((2, 1, 4, 5), (4, 5), None, 0),          # pool = input
]


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("cls, op", [(layers.MaxPooling2D, "max"), (layers.AveragePooling2D, "avg")])
@pytest.mark.parametrize("shape, pool, strides, padding", CASES)
def test_pooling_matches_numpy(rng, dtype, cls, op, shape, pool, strides, padding):
    x = rng.standard_normal(shape).astype(dtype)
    layer = cls(pool, strides=strides, padding=padding, dtype=np.dtype(dtype).name)
    y = layer(x).numpy()
    stride = _pair(pool if strides is None else strides)
    expected = pool_reference(x.astype(np.float64), _pair(pool), stride, _pair(padding), op)
    assert y.dtype == dtype
    np.testing.assert_allclose(y, expected, **TOL[dtype])
    assert layer.compute_output_shape((None,) + shape[1:]) == (None,) + y.shape[1:]


@pytest.mark.parametrize("cls", [layers.MaxPooling2D, layers.AveragePooling2D])
@pytest.mark.parametrize("shape, pool, strides, padding", CASES[1:4])
def test_pooling_gradcheck(rng, cls, shape, pool, strides, padding):
    # distinct values so that the max is unique and finite differences do not cross a tie
    x = rng.permutation(np.prod(shape)).reshape(shape).astype(np.float64) / 10
    layer = cls(pool, strides=strides, padding=padding, dtype="float64")
    assert mn.gradcheck(layer, mn.tensor(x, requires_grad=True))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("cls, torch_name", [(layers.MaxPooling2D, "MaxPool2d"),
                                             (layers.AveragePooling2D, "AvgPool2d")])
@pytest.mark.parametrize("shape, pool, strides, padding", CASES)
def test_pooling_matches_torch(torch, rng, dtype, cls, torch_name, shape, pool, strides, padding):
    x = rng.standard_normal(shape).astype(dtype)
    layer = cls(pool, strides=strides, padding=padding, dtype=dtype)
    ref = getattr(torch.nn, torch_name)(pool, stride=strides, padding=padding)
    xm = mn.tensor(x, requires_grad=True)
    xt = torch.from_numpy(x).requires_grad_(True)
    y, yt = layer(xm), ref(xt)
    g = rng.standard_normal(yt.shape).astype(dtype)
    (y * mn.tensor(g)).sum().backward()
    (yt * torch.from_numpy(g)).sum().backward()
    tol = TOL[np.dtype(dtype).type]
    np.testing.assert_allclose(y.numpy(), yt.detach().numpy(), **tol)
    np.testing.assert_allclose(xm.grad, xt.grad.numpy(), **tol)


def test_max_pool_ties_send_the_gradient_to_the_first(torch):
    x = np.ones((1, 1, 2, 2))
    xm = mn.tensor(x, requires_grad=True)
    layers.MaxPooling2D(2, dtype="float64")(xm).sum().backward()
    np.testing.assert_array_equal(xm.grad, [[[[1, 0], [0, 0]]]])


def test_same_padding_keeps_ceil_size():
    x = np.random.default_rng(0).standard_normal((1, 2, 7, 5))
    for cls in (layers.MaxPooling2D, layers.AveragePooling2D):
        layer = cls(2, padding="same", dtype="float64")
        y = layer(x)
        assert y.shape == (1, 2, 4, 3) == layer.compute_output_shape(x.shape)
    # Keras "same" average excludes the padding: a constant input stays constant
    y = layers.AveragePooling2D(2, padding="same")(np.full((1, 1, 3, 3), 5.0))
    np.testing.assert_allclose(y.numpy(), 5.0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(1, 1, 1, 1), (2, 3, 5, 4)])
def test_global_average_pooling(rng, torch, dtype, shape):
    x = rng.standard_normal(shape).astype(dtype)
    layer = layers.GlobalAveragePooling2D(dtype=np.dtype(dtype).name)
    xm = mn.tensor(x, requires_grad=True)
    y = layer(xm)
    np.testing.assert_allclose(y.numpy(), x.mean(axis=(2, 3)), **TOL[dtype])
    assert layer.compute_output_shape((None,) + shape[1:]) == (None, shape[1])
    y.sum().backward()
    np.testing.assert_allclose(xm.grad, np.full(shape, 1 / (shape[2] * shape[3])), **TOL[dtype])
    if dtype == np.float64:
        assert mn.gradcheck(layer, mn.tensor(x, requires_grad=True))
    assert layer.count_flops(shape) == int(np.prod(shape)) + shape[0] * shape[1]


@pytest.mark.parametrize("kwargs, arg", [
    (dict(pool_size=0), "pool_size"),
    (dict(pool_size=(2, 2, 2)), "pool_size"),
    (dict(pool_size=2, strides=0), "strides"),
    (dict(pool_size=2, padding="full"), "padding"),
    (dict(pool_size=2, padding=2), "padding"),          # more than half the window
])
def test_pooling_rejects_bad_hyperparameters(kwargs, arg):
    for cls in (layers.MaxPooling2D, layers.AveragePooling2D):
        with pytest.raises(ValueError, match=f"`{arg}`"):
            cls(**kwargs)


def test_pooling_rejects_bad_inputs():
    layer = layers.MaxPooling2D(3, name="pool_a")
    with pytest.raises(ValueError, match="'pool_a'.*ndim=4"):
        layer(np.zeros((2, 8, 8)))
    with pytest.raises(ValueError, match="'pool_a'.*too small"):
        layer(np.zeros((1, 1, 2, 8)))
    with pytest.raises(ValueError, match="ndim=4"):
        layers.GlobalAveragePooling2D()(np.zeros((2, 3)))


def test_pooling_config_flops_repr():
    layer = layers.MaxPooling2D((3, 2), strides=(1, 2), padding=(1, 0), name="mp")
    again = layers.deserialize(json.loads(json.dumps(layers.serialize(layer))))
    assert again.get_config() == layer.get_config()
    assert (again.pool_size, again.strides, again.padding) == ((3, 2), (1, 2), (1, 0))
    assert layers.MaxPooling2D(2).count_flops((2, 3, 8, 8)) == 2 * 3 * 4 * 4 * 4
    assert layers.AveragePooling2D(2).count_flops((None, 3, 8, 8)) == 3 * 16 * 4 + 3 * 16
    assert "pool_size=(3, 2)" in repr(layer) and "strides=(1, 2)" in repr(layer)
