"""UpSampling2D, ZeroPadding2D, Cropping2D, Permute, RepeatVector: NumPy reference, float64
gradcheck, PyTorch parity, both layouts, shapes and errors."""
import json

import numpy as np
import pytest

import minnet as mn
from minnet import layers

FORMATS = ["channels_last", "channels_first"]


def _to_nchw(a, data_format):
    return a if data_format == "channels_first" else a.transpose(0, 3, 1, 2)


def _from_nchw(a, data_format):
    return a if data_format == "channels_first" else a.transpose(0, 2, 3, 1)


def _image(rng, data_format, n=2, c=3, h=4, w=5, dtype=np.float64):
    shape = (n, h, w, c) if data_format == "channels_last" else (n, c, h, w)
    return rng.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("data_format", FORMATS)
@pytest.mark.parametrize("size, interpolation", [(2, "nearest"), ((2, 3), "nearest"),
                                                  ((1, 2), "bilinear"), (3, "bilinear")])
def test_upsampling_matches_torch(torch, rng, data_format, size, interpolation):
    x = _image(rng, data_format)
    layer = layers.UpSampling2D(size, data_format=data_format, interpolation=interpolation,
                                dtype="float64")
    xm = mn.tensor(x, requires_grad=True)
    y = layer(xm)
    g = rng.standard_normal(y.shape)
    y.backward(g)
    xt = torch.tensor(_to_nchw(x, data_format).copy(), requires_grad=True)
    sf = (size, size) if isinstance(size, int) else size
    kwargs = {} if interpolation == "nearest" else {"align_corners": False}
    yt = torch.nn.functional.interpolate(xt, scale_factor=sf, mode=interpolation, **kwargs)
    yt.backward(torch.tensor(_to_nchw(g, data_format).copy()))
    np.testing.assert_allclose(y.numpy(), _from_nchw(yt.detach().numpy(), data_format), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(xm.grad, _from_nchw(xt.grad.numpy(), data_format), rtol=1e-12, atol=1e-12)
    assert layer.compute_output_shape((None,) + x.shape[1:]) == (None,) + y.shape[1:]
    small = x[:1, ..., :2] if data_format == "channels_last" else x[:1, :2]
    assert mn.gradcheck(lambda t: layer(t), (mn.tensor(small.copy(), requires_grad=True),))


def test_upsampling_nearest_numpy_reference_and_float32(rng):
    x = _image(rng, "channels_last", dtype=np.float32)
    y = layers.UpSampling2D((2, 3), data_format="channels_last")(x)
    assert y.dtype == np.float32
    np.testing.assert_array_equal(y.numpy(), x.repeat(2, axis=1).repeat(3, axis=2))


@pytest.mark.parametrize("data_format", FORMATS)
@pytest.mark.parametrize("padding", [1, (2, 0), ((1, 2), (0, 3))])
def test_zero_padding_matches_numpy_and_torch(torch, rng, data_format, padding):
    x = _image(rng, data_format)
    layer = layers.ZeroPadding2D(padding, data_format=data_format, dtype="float64")
    (top, bottom), (left, right) = layer.padding
    y = layer(x)
    spatial = ((top, bottom), (left, right))
    width = ((0, 0),) + (spatial + ((0, 0),) if data_format == "channels_last" else ((0, 0),) + spatial)
    np.testing.assert_array_equal(y.numpy(), np.pad(x, width))
    yt = torch.nn.functional.pad(torch.tensor(_to_nchw(x, data_format).copy()), (left, right, top, bottom))
    np.testing.assert_array_equal(y.numpy(), _from_nchw(yt.numpy(), data_format))
    assert mn.gradcheck(lambda t: layer(t), (mn.tensor(x, requires_grad=True),))
    assert layer.compute_output_shape(x.shape) == y.shape


@pytest.mark.parametrize("data_format", FORMATS)
def test_cropping_matches_numpy(rng, data_format):
    x = _image(rng, data_format, h=6, w=7)
    layer = layers.Cropping2D(((1, 2), (3, 0)), data_format=data_format, dtype="float64")
    y = layer(x)
    want = x[:, 1:4, 3:7, :] if data_format == "channels_last" else x[:, :, 1:4, 3:7]
    np.testing.assert_array_equal(y.numpy(), want)
    assert layer.compute_output_shape((None,) + x.shape[1:]) == (None,) + y.shape[1:]
    assert mn.gradcheck(lambda t: layer(t), (mn.tensor(x, requires_grad=True),))
    with pytest.raises(ValueError, match="leaves nothing"):
        layers.Cropping2D(3, data_format=data_format)(x)


def test_permute_and_repeat_vector(torch, rng):
    x = rng.standard_normal((2, 3, 4, 5))
    layer = layers.Permute((3, 1, 2), dtype="float64")
    y = layer(x)
    np.testing.assert_array_equal(y.numpy(), x.transpose(0, 3, 1, 2))
    assert layer.compute_output_shape((None, 3, 4, 5)) == (None, 5, 3, 4)
    assert mn.gradcheck(lambda t: layer(t), (mn.tensor(x, requires_grad=True),))
    v = rng.standard_normal((2, 4))
    rep = layers.RepeatVector(3, dtype="float64")
    vm = mn.tensor(v, requires_grad=True)
    out = rep(vm)
    np.testing.assert_array_equal(out.numpy(), np.repeat(v[:, None, :], 3, axis=1))
    out.sum().backward()
    np.testing.assert_array_equal(vm.grad, np.full_like(v, 3.0))
    assert rep.compute_output_shape((None, 4)) == (None, 3, 4)


def test_bad_arguments_and_inputs():
    with pytest.raises(ValueError, match="`size`"):
        layers.UpSampling2D(0)
    with pytest.raises(ValueError, match="`interpolation`"):
        layers.UpSampling2D(2, interpolation="bicubic")
    with pytest.raises(ValueError, match="`padding`"):
        layers.ZeroPadding2D(-1)
    with pytest.raises(ValueError, match="`cropping`"):
        layers.Cropping2D(((1, 2, 3), (0, 0)))
    with pytest.raises(ValueError, match="`dims`"):
        layers.Permute((0, 1))
    with pytest.raises(ValueError, match="`data_format`"):
        layers.UpSampling2D(2, data_format="NHWC")
    with pytest.raises(ValueError, match="expected ndim=4"):
        layers.UpSampling2D(2, data_format="channels_last")(np.ones((2, 3, 4)))
    with pytest.raises(ValueError, match="expected ndim=2"):
        layers.RepeatVector(2)(np.ones((2, 3, 4)))


def test_default_data_format_follows_the_config():
    assert layers.UpSampling2D().data_format == mn.config.image_data_format()
    mn.config.set_image_data_format("channels_first")
    try:
        assert layers.ZeroPadding2D().data_format == "channels_first"
    finally:
        mn.config.set_image_data_format("channels_last")


@pytest.mark.parametrize("layer", [
    layers.UpSampling2D((2, 3), data_format="channels_first", interpolation="bilinear"),
    layers.ZeroPadding2D(((1, 2), (0, 3)), data_format="channels_last"),
    layers.Cropping2D(1, data_format="channels_last"), layers.Permute((2, 1)), layers.RepeatVector(4)])
def test_config_round_trip(layer):
    config = json.loads(json.dumps(layers.serialize(layer)))
    again = layers.deserialize(config)
    assert type(again) is type(layer) and again.get_config() == layer.get_config()


def test_absurd_sizes_are_value_errors_not_memory_errors():
    with pytest.raises(ValueError, match="2\\*\\*34"):
        layers.RepeatVector(10 ** 12)(np.ones((2, 4)))
    with pytest.raises(ValueError, match="`size`"):
        layers.UpSampling2D(10 ** 7, data_format="channels_last")(np.ones((1, 2, 2, 1)))
    with pytest.raises(ValueError, match="`padding`"):
        layers.ZeroPadding2D(10 ** 9, data_format="channels_first")(np.ones((1, 1, 2, 2)))
