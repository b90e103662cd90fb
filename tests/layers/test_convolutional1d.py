"""Conv1D and 1-D pooling: NumPy reference, PyTorch parity (Conv1d, MaxPool1d, AvgPool1d), gradcheck."""
import numpy as np
import pytest

import minnet as mn
from minnet import layers

from _harness import TOLERANCES

TOL = TOLERANCES["default"]


def conv1d_reference(x, kernel, bias, stride, dilation, left, right):
    """x (N, L, C) channels_last; kernel (F, C, K)."""
    x = np.pad(x, ((0, 0), (left, right), (0, 0)))
    n, length, _ = x.shape
    f, _, k = kernel.shape
    span = dilation * (k - 1) + 1
    out = (length - span) // stride + 1
    y = np.zeros((n, out, f))
    for t in range(out):
        window = x[:, t * stride: t * stride + span: dilation, :]          # (N, K, C)
        y[:, t] = np.einsum("nkc,fck->nf", window, kernel)
    return y + (0 if bias is None else bias)


@pytest.mark.parametrize("padding,stride,dilation,kernel_size", [
    ("valid", 1, 1, 3), ("valid", 2, 1, 4), ("same", 1, 1, 4), ("same", 3, 1, 3),
    ("causal", 1, 2, 3), ("valid", 1, 3, 2), (2, 1, 1, 5)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_conv1d_matches_numpy(padding, stride, dilation, kernel_size, dtype):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 11, 3)).astype(dtype)
    layer = layers.Conv1D(4, kernel_size, strides=stride, padding=padding, dilation_rate=dilation,
                          data_format="channels_last", dtype=np.dtype(dtype).name)
    y = layer(x)
    span = dilation * (kernel_size - 1) + 1
    if padding == "causal":
        left, right = span - 1, 0
    elif padding == "same":
        out = -(-11 // stride)
        total = max((out - 1) * stride + span - 11, 0)
        left, right = total // 2, total - total // 2
    elif padding == "valid":
        left = right = 0
    else:
        left = right = padding
    ref = conv1d_reference(x.astype(np.float64), layer.kernel.data.astype(np.float64),
                           layer.bias.data, stride, dilation, left, right)
    np.testing.assert_allclose(y.numpy(), ref, **TOL[dtype])
    assert tuple(layer.compute_output_shape((2, 11, 3))) == y.shape


@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
def test_conv1d_matches_torch(torch, data_format):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 12, 5))
    layer = layers.Conv1D(6, 3, strides=2, padding="valid", data_format=data_format,
                          dtype="float64")
    xin = x if data_format == "channels_last" else x.transpose(0, 2, 1).copy()
    x_t = mn.tensor(xin, requires_grad=True)
    y = layer(x_t)
    conv = torch.nn.Conv1d(5, 6, 3, stride=2).double()
    with torch.no_grad():
        conv.weight.copy_(torch.from_numpy(layer.kernel.data))
        conv.bias.copy_(torch.from_numpy(layer.bias.data))
    xt = torch.tensor(x.transpose(0, 2, 1).copy(), requires_grad=True)
    yt = conv(xt)
    y_ncl = y.numpy().transpose(0, 2, 1) if data_format == "channels_last" else y.numpy()
    np.testing.assert_allclose(y_ncl, yt.detach().numpy(), rtol=1e-10)
    g = rng.standard_normal(yt.shape)
    yt.backward(torch.from_numpy(g))
    y.backward(g.transpose(0, 2, 1) if data_format == "channels_last" else g)
    np.testing.assert_allclose(layer.kernel.grad, conv.weight.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(layer.bias.grad, conv.bias.grad.numpy(), rtol=1e-10)
    dx = xt.grad.numpy()
    np.testing.assert_allclose(x_t.grad, dx.transpose(0, 2, 1) if data_format == "channels_last"
                               else dx, rtol=1e-10)


def test_conv1d_gradcheck_causal_dilated():
    mn.manual_seed(0)
    layer = layers.Conv1D(2, 3, padding="causal", dilation_rate=2, activation="tanh",
                          data_format="channels_last", dtype="float64")
    x = mn.tensor(np.random.default_rng(2).standard_normal((2, 7, 3)), requires_grad=True)
    layer(x)
    assert mn.gradcheck(lambda x, *w: layer(x), (x, *layer.parameters()))


def test_causal_output_does_not_see_the_future():
    layer = layers.Conv1D(1, 3, padding="causal", data_format="channels_last", dtype="float64")
    x = np.random.default_rng(3).standard_normal((1, 8, 1))
    y1 = layer(x).numpy()
    x2 = x.copy()
    x2[0, 5:] += 10.0
    np.testing.assert_array_equal(layer(x2).numpy()[0, :5], y1[0, :5])


@pytest.mark.parametrize("pool,stride,padding", [(2, None, "valid"), (3, 1, "valid"),
                                                 (3, 2, "same"), (2, 3, "valid")])
def test_pooling_matches_torch(torch, pool, stride, padding):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 9, 3))
    s = pool if stride is None else stride
    for cls, ref in ((layers.MaxPooling1D, torch.nn.functional.max_pool1d),
                     (layers.AveragePooling1D, torch.nn.functional.avg_pool1d)):
        layer = cls(pool, strides=stride, padding=padding, data_format="channels_last",
                    dtype="float64")
        x_in = mn.tensor(x, requires_grad=True)
        y = layer(x_in)
        xt = torch.tensor(x.transpose(0, 2, 1).copy(), requires_grad=True)
        if padding == "same":
            out = -(-9 // s)
            total = max((out - 1) * s + pool - 9, 0)
            pad_value = -np.inf if cls is layers.MaxPooling1D else 0.0
            xp = torch.nn.functional.pad(xt, (total // 2, total - total // 2), value=pad_value)
            yt = ref(xp, pool, s)
            if cls is layers.AveragePooling1D:     # Keras: the padding is not counted
                ones = torch.nn.functional.pad(torch.ones(1, 1, 9, dtype=torch.float64),
                                               (total // 2, total - total // 2))
                yt = yt * pool / (ref(ones, pool, s) * pool)
        else:
            yt = ref(xt, pool, s)
        np.testing.assert_allclose(y.numpy().transpose(0, 2, 1), yt.detach().numpy(), rtol=1e-12)
        g = rng.standard_normal(yt.shape)
        yt.backward(torch.from_numpy(g))
        y.backward(g.transpose(0, 2, 1))
        np.testing.assert_allclose(x_in.grad, xt.grad.numpy().transpose(0, 2, 1), rtol=1e-12)
        assert layer.compute_output_shape((2, 9, 3)) == y.shape


def test_global_pooling_and_channels_first():
    x = np.random.default_rng(5).standard_normal((2, 6, 3))
    np.testing.assert_allclose(layers.GlobalAveragePooling1D(data_format="channels_last")(x)
                               .numpy(), x.mean(axis=1), rtol=1e-6)
    np.testing.assert_allclose(layers.GlobalMaxPooling1D(data_format="channels_first")(x)
                               .numpy(), x.max(axis=2), rtol=1e-6)
    assert layers.GlobalMaxPooling1D(keepdims=True, data_format="channels_last")(x).shape == (2, 1, 3)
    x_in = mn.tensor(x, requires_grad=True)
    layer = layers.MaxPooling1D(2, data_format="channels_first", dtype="float64")
    assert mn.gradcheck(lambda t: layer(t), (x_in,))


def test_default_layout_follows_config():
    old = mn.config.image_data_format()
    try:
        mn.config.set_image_data_format("channels_first")
        assert layers.Conv1D(2, 3).data_format == "channels_first"
        mn.config.set_image_data_format("channels_last")
        assert layers.MaxPooling1D().data_format == "channels_last"
    finally:
        mn.config.set_image_data_format(old)


def test_bad_arguments():
    with pytest.raises(ValueError, match="padding"):
        layers.Conv1D(2, 3, padding="full")
    with pytest.raises(ValueError, match="kernel_size"):
        layers.Conv1D(2, 0)
    with pytest.raises(ValueError, match="padding"):
        layers.MaxPooling1D(2, padding="causal")
    with pytest.raises(ValueError, match="steps"):
        layers.Conv1D(2, 5, data_format="channels_last")(np.zeros((1, 3, 2), np.float32))
    with pytest.raises(ValueError, match="data_format"):
        layers.Conv1D(2, 3, data_format="nlc")


def test_serialization_round_trip():
    for layer in (layers.Conv1D(4, 3, padding="causal", dilation_rate=2, activation="relu",
                                data_format="channels_last"),
                  layers.MaxPooling1D(3, 2, padding="same", data_format="channels_last"),
                  layers.GlobalAveragePooling1D(data_format="channels_first")):
        clone = layers.deserialize(layers.serialize(layer))
        a, b = layer.get_config(), clone.get_config()
        a.pop("name"), b.pop("name")
        assert a == b


@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
@pytest.mark.parametrize("keepdims", [False, True])
def test_global_average_pooling_1d_averages_the_unmasked_steps(data_format, keepdims):
    """Keras: with an input mask, sum(x * m) / sum(m) over the steps, and no output mask
    (Embedding(mask_zero=True) -> GlobalAveragePooling1D, the classic text model)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 5, 4))
    mask = np.array([[1, 1, 0, 0, 0], [1, 1, 1, 1, 1], [0, 1, 0, 1, 0]], bool)
    layer = layers.GlobalAveragePooling1D(data_format=data_format, keepdims=keepdims, dtype="float64")
    data = x if data_format == "channels_last" else np.ascontiguousarray(x.transpose(0, 2, 1))
    out = layer(mn.tensor(data), mask=mask)
    expected = (x * mask[:, :, None]).sum(1) / mask.sum(1, keepdims=True)
    if keepdims:
        expected = expected[:, None, :] if data_format == "channels_last" else expected[:, :, None]
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12)
    assert getattr(out, "_keras_mask", None) is None
    assert mn.autograd.gradcheck(lambda t: layer(t, mask=mask), (mn.tensor(data, requires_grad=True),))
    with pytest.raises(ValueError, match="mask"):
        layer(mn.tensor(data), mask=mask[:, :4])


def test_global_average_pooling_1d_after_a_masking_embedding():
    tokens = mn.Input((None,), dtype="int32")
    embedding = layers.Embedding(50, 4, mask_zero=True)
    model = mn.Model(tokens, layers.GlobalAveragePooling1D()(embedding(tokens)))
    table = embedding.embeddings.numpy()
    np.testing.assert_allclose(model.predict(np.array([[1, 2, 0, 0]]), verbose=0)[0],
                               table[[1, 2]].mean(0), rtol=1e-6)
