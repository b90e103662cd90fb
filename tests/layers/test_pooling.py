"""MaxPooling2D, AveragePooling2D, GlobalAverage/MaxPooling2D in both layouts: NumPy, gradcheck,
PyTorch, shape errors, the layout-mismatch guard.

CASES are written NCHW (the references are); ``_to(x, fmt)`` gives the array in ``fmt``.
"""
import json

import numpy as np
import pytest

import minnet as mn
from minnet import layers

from _harness import TOLERANCES

TOL = TOLERANCES["short_sum"]


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


FORMATS = ["channels_last", "channels_first"]


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def _to(x, data_format):
    """An NCHW array in ``data_format``."""
    return np.ascontiguousarray(np.moveaxis(x, 1, -1)) if data_format == "channels_last" else x


@pytest.mark.parametrize("data_format", FORMATS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("cls, op", [(layers.MaxPooling2D, "max"), (layers.AveragePooling2D, "avg")])
@pytest.mark.parametrize("shape, pool, strides, padding", CASES)
def test_pooling_matches_numpy(rng, data_format, dtype, cls, op, shape, pool, strides, padding):
    x = rng.standard_normal(shape).astype(dtype)
    layer = cls(pool, strides=strides, padding=padding, data_format=data_format,
                dtype=np.dtype(dtype).name)
    y = layer(_to(x, data_format)).numpy()
    stride = _pair(pool if strides is None else strides)
    expected = pool_reference(x.astype(np.float64), _pair(pool), stride, _pair(padding), op)
    assert y.dtype == dtype
    np.testing.assert_allclose(y, _to(expected, data_format), **TOL[dtype])
    in_shape = _to(np.empty(shape), data_format).shape
    assert layer.compute_output_shape((None,) + in_shape[1:]) == (None,) + y.shape[1:]


@pytest.mark.parametrize("data_format", FORMATS)
@pytest.mark.parametrize("cls", [layers.MaxPooling2D, layers.AveragePooling2D])
@pytest.mark.parametrize("shape, pool, strides, padding", CASES[1:4])
def test_pooling_gradcheck(rng, data_format, cls, shape, pool, strides, padding):
    # distinct values so that the max is unique and finite differences do not cross a tie
    x = rng.permutation(np.prod(shape)).reshape(shape).astype(np.float64) / 10
    layer = cls(pool, strides=strides, padding=padding, data_format=data_format, dtype="float64")
    assert mn.gradcheck(layer, mn.tensor(_to(x, data_format), requires_grad=True))


@pytest.mark.parametrize("data_format", FORMATS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("cls, torch_name", [(layers.MaxPooling2D, "MaxPool2d"),
                                             (layers.AveragePooling2D, "AvgPool2d")])
@pytest.mark.parametrize("shape, pool, strides, padding", CASES)
def test_pooling_matches_torch(torch, rng, data_format, dtype, cls, torch_name, shape, pool,
                               strides, padding):
    # channels_last against PyTorch in its channels_last memory format, permuted to NHWC
    x = rng.standard_normal(shape).astype(dtype)
    layer = cls(pool, strides=strides, padding=padding, data_format=data_format, dtype=dtype)
    ref = getattr(torch.nn, torch_name)(pool, stride=strides, padding=padding)
    fmt = torch.channels_last if data_format == "channels_last" else torch.contiguous_format
    xm = mn.tensor(_to(x, data_format), requires_grad=True)
    xt = torch.from_numpy(x).contiguous(memory_format=fmt).requires_grad_(True)
    y, yt = layer(xm), ref(xt)
    g = rng.standard_normal(yt.shape).astype(dtype)
    (y * mn.tensor(_to(g, data_format))).sum().backward()
    (yt * torch.from_numpy(g)).sum().backward()
    tol = TOL[np.dtype(dtype).type]
    np.testing.assert_allclose(y.numpy(), _to(yt.detach().numpy(), data_format), **tol)
    np.testing.assert_allclose(xm.grad, _to(xt.grad.numpy(), data_format), **tol)


@pytest.mark.parametrize("data_format", FORMATS)
def test_max_pool_ties_send_the_gradient_to_the_first(data_format):
    xm = mn.tensor(np.ones((1, 2, 2, 1) if data_format == "channels_last" else (1, 1, 2, 2)),
                   requires_grad=True)
    layers.MaxPooling2D(2, data_format=data_format, dtype="float64")(xm).sum().backward()
    np.testing.assert_array_equal(xm.grad.reshape(2, 2), [[1, 0], [0, 0]])


@pytest.mark.parametrize("data_format", FORMATS)
def test_same_padding_keeps_ceil_size(data_format):
    x = _to(np.random.default_rng(0).standard_normal((1, 2, 7, 5)), data_format)
    for cls in (layers.MaxPooling2D, layers.AveragePooling2D):
        layer = cls(2, padding="same", data_format=data_format, dtype="float64")
        y = layer(x)
        assert y.shape == _to(np.empty((1, 2, 4, 3)), data_format).shape
        assert y.shape == layer.compute_output_shape(x.shape)
    # Keras "same" average excludes the padding: a constant input stays constant
    y = layers.AveragePooling2D(2, padding="same", data_format=data_format)(
        np.full((1, 1, 3, 3), 5.0))
    np.testing.assert_allclose(y.numpy(), 5.0)


@pytest.mark.parametrize("data_format", FORMATS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(1, 1, 1, 1), (2, 3, 5, 4)])
def test_global_average_pooling(rng, torch, data_format, dtype, shape):
    x = rng.standard_normal(shape).astype(dtype)
    layer = layers.GlobalAveragePooling2D(data_format=data_format, dtype=np.dtype(dtype).name)
    xm = mn.tensor(_to(x, data_format), requires_grad=True)
    y = layer(xm)
    np.testing.assert_allclose(y.numpy(), x.mean(axis=(2, 3)), **TOL[dtype])
    np.testing.assert_allclose(
        y.numpy(), torch.nn.functional.adaptive_avg_pool2d(torch.from_numpy(x), 1).flatten(1),
        **TOL[dtype])
    in_shape = tuple(xm.shape)
    assert layer.compute_output_shape((None,) + in_shape[1:]) == (None, shape[1])
    y.sum().backward()
    np.testing.assert_allclose(xm.grad, np.full(in_shape, 1 / (shape[2] * shape[3])), **TOL[dtype])
    if dtype == np.float64:
        assert mn.gradcheck(layer, mn.tensor(_to(x, data_format), requires_grad=True))
    assert layer.count_flops(in_shape) == int(np.prod(shape)) + shape[0] * shape[1]


@pytest.mark.parametrize("data_format", FORMATS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_global_max_pooling(rng, torch, data_format, dtype):
    shape = (2, 3, 5, 4)
    x = rng.permutation(np.prod(shape)).reshape(shape).astype(dtype) / 10
    layer = layers.GlobalMaxPooling2D(data_format=data_format, dtype=np.dtype(dtype).name)
    xm = mn.tensor(_to(x, data_format), requires_grad=True)
    y = layer(xm)
    np.testing.assert_allclose(y.numpy(), x.max(axis=(2, 3)), **TOL[dtype])
    xt = torch.from_numpy(x).requires_grad_(True)
    g = rng.standard_normal((2, 3)).astype(dtype)
    torch.amax(xt, dim=(2, 3)).backward(torch.from_numpy(g))
    y.backward(g)
    np.testing.assert_allclose(xm.grad, _to(xt.grad.numpy(), data_format), **TOL[dtype])
    if dtype == np.float64:
        assert mn.gradcheck(layer, mn.tensor(_to(x, data_format), requires_grad=True))
    assert layer.compute_output_shape(xm.shape) == (2, 3)


@pytest.mark.parametrize("cls", [layers.GlobalAveragePooling2D, layers.GlobalMaxPooling2D])
def test_global_pooling_keepdims(cls):
    x = np.random.default_rng(2).standard_normal((2, 5, 4, 3))
    y = cls(keepdims=True, data_format="channels_last")(x)
    assert y.shape == (2, 1, 1, 3)
    y2 = cls(keepdims=True, data_format="channels_first")(np.moveaxis(x, -1, 1))
    assert y2.shape == (2, 3, 1, 1)
    np.testing.assert_allclose(y.numpy().reshape(2, 3), y2.numpy().reshape(2, 3))
    assert cls(keepdims=True, data_format="channels_last").compute_output_shape(
        (None, 5, 4, 3)) == (None, 1, 1, 3)
    assert cls().get_config()["keepdims"] is False
    with pytest.raises(TypeError, match="keepdims"):
        cls(keepdims="yes")


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
    layer = layers.MaxPooling2D(3, name="pool_a", data_format="channels_first")
    with pytest.raises(ValueError, match="'pool_a'.*ndim=4"):
        layer(np.zeros((2, 8, 8)))
    with pytest.raises(ValueError, match=r"'pool_a'.*spatial size is \(2, 8\) and its H size 2"):
        layer(np.zeros((1, 1, 2, 8)))
    with pytest.raises(ValueError, match="ndim=4"):
        layers.GlobalAveragePooling2D()(np.zeros((2, 3)))


@pytest.mark.parametrize("cls", [layers.MaxPooling2D, layers.AveragePooling2D])
def test_output_shape_never_zero_or_negative(cls):
    # (None, 8, 8, 1) read as channels_first has W = 1: an error naming layer, shape, layout
    layer = cls(3, data_format="channels_first", name="p")
    with pytest.raises(ValueError, match=r"'p' cannot pool input of shape \(None, 8, 8, 1\): "
                                         r"read as data_format='channels_first'"):
        layer.compute_output_shape((None, 8, 8, 1))
    with pytest.raises(ValueError, match="smaller than pool_size"):
        cls(2, data_format="channels_last").build((None, 1, 8, 3))
    assert cls(3, data_format="channels_last").compute_output_shape((None, 8, 8, 1)) == (None, 2, 2, 1)
    assert cls(3, padding="same", data_format="channels_last").compute_output_shape(
        (None, 1, 1, 4)) == (None, 1, 1, 4)


@pytest.mark.parametrize("cls", [layers.MaxPooling2D, layers.AveragePooling2D,
                                 layers.GlobalAveragePooling2D, layers.GlobalMaxPooling2D])
def test_default_data_format_follows_config_at_construction(cls):
    assert mn.config.image_data_format() == "channels_last"
    layer = cls()
    assert layer.data_format == "channels_last" and not layer._data_format_explicit
    try:
        mn.config.set_image_data_format("channels_first")
        first = cls()
        assert first.data_format == "channels_first"
    finally:
        mn.config.set_image_data_format("channels_last")
    assert first.data_format == "channels_first"            # resolved when constructed
    assert cls(data_format="channels_first")._data_format_explicit
    with pytest.raises(ValueError, match="data_format"):
        cls(data_format="NCHW")


@pytest.mark.parametrize("cls", [layers.MaxPooling2D, layers.AveragePooling2D,
                                 layers.GlobalAveragePooling2D, layers.GlobalMaxPooling2D])
def test_layout_mismatch_guard_on_user_arrays(cls):
    # NCHW RGB images under the default channels_last: a clear error with both fixes
    with pytest.raises(ValueError) as info:
        cls(name="guarded")(np.zeros((2, 3, 32, 32), np.float32))
    message = str(info.value)
    for part in ("'guarded'", "(2, 3, 32, 32)", "channels_last", "32 channels",
                 "data_format='channels_first'", "set_image_data_format('channels_first')"):
        assert part in message
    # an explicit data_format is trusted; so are Tensors (feature maps inside a model)
    cls(data_format="channels_last")(np.zeros((2, 3, 32, 32), np.float32))
    cls()(mn.tensor(np.zeros((2, 3, 32, 32), np.float32)))
    cls()(np.zeros((2, 32, 32, 3), np.float32))            # RGB NHWC: fine
    cls()(np.zeros((2, 8, 8, 16), np.float32))             # 16 channels, 8 on axis 1: fine
    try:
        mn.config.set_image_data_format("channels_first")
        with pytest.raises(ValueError, match="set_image_data_format\\('channels_last'\\)"):
            cls()(np.zeros((2, 28, 28, 1), np.float32))
    finally:
        mn.config.set_image_data_format("channels_last")


def test_pooling_config_flops_repr():
    layer = layers.MaxPooling2D((3, 2), strides=(1, 2), padding=(1, 0), name="mp",
                                data_format="channels_first")
    again = layers.deserialize(json.loads(json.dumps(layers.serialize(layer))))
    assert again.get_config() == layer.get_config()
    assert (again.pool_size, again.strides, again.padding) == ((3, 2), (1, 2), (1, 0))
    assert again.data_format == "channels_first"
    assert layers.MaxPooling2D(2).count_flops((2, 8, 8, 3)) == 2 * 3 * 4 * 4 * 4
    assert layers.AveragePooling2D(2, data_format="channels_first").count_flops(
        (None, 3, 8, 8)) == 3 * 16 * 4 + 3 * 16
    assert "pool_size=(3, 2)" in repr(layer) and "strides=(1, 2)" in repr(layer)
    assert layers.MaxPooling2D().pool_size == (2, 2)          # Keras's default
    config = layers.serialize(layers.GlobalMaxPooling2D())
    config["class_name"] = "GlobalMaxPool2D"                   # Keras's alias
    assert type(layers.deserialize(config)) is layers.GlobalMaxPooling2D
