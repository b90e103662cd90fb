"""Conv1D(groups > 1) (issue 28, item 2): NumPy reference, gradcheck, PyTorch and Keras parity."""
import numpy as np
import pytest

import minnet as mn
from minnet import layers

RNG = np.random.default_rng(11)


def _reference(x, kernel, bias, groups):
    """x (N, L, C) channels_last, kernel (F, C/g, k), 'valid', stride 1."""
    n, length, c = x.shape
    f, cg, k = kernel.shape
    fg = f // groups
    out = np.zeros((n, length - k + 1, f))
    for g in range(groups):
        xs = x[:, :, g * cg:(g + 1) * cg]
        for j in range(k):
            out[:, :, g * fg:(g + 1) * fg] += xs[:, j:j + length - k + 1] @ kernel[g * fg:(g + 1) * fg, :, j].T
    return out + bias


@pytest.mark.parametrize("groups", [2, 3])
@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_grouped_conv1d_matches_numpy(groups, data_format, dtype):
    x = RNG.normal(size=(2, 7, 6))
    layer = layers.Conv1D(6, 3, groups=groups, data_format=data_format, dtype=dtype)
    layer.build((2, 7, 6) if data_format == "channels_last" else (2, 6, 7))
    kernel, bias = RNG.normal(size=(6, 6 // groups, 3)), RNG.normal(size=6)
    layer.set_weights([kernel.astype(dtype), bias.astype(dtype)])
    inp = x if data_format == "channels_last" else x.transpose(0, 2, 1)
    got = layer(inp.astype(dtype)).numpy()
    want = _reference(x, kernel, bias, groups)
    if data_format == "channels_first":
        want = want.transpose(0, 2, 1)
    tol = 1e-12 if dtype == "float64" else 1e-5
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    assert layer.get_config()["groups"] == groups


def test_grouped_conv1d_gradcheck_and_errors():
    layer = layers.Conv1D(4, 2, groups=2, padding="causal", dtype="float64")
    x = mn.tensor(RNG.normal(size=(1, 4, 2)), requires_grad=True)
    layer(x)
    assert mn.gradcheck(lambda a: layer(a), (x,))
    with pytest.raises(ValueError, match="groups"):
        layers.Conv1D(5, 2, groups=2)
    with pytest.raises(ValueError, match="divisible by groups"):
        layers.Conv1D(4, 2, groups=2)(np.zeros((1, 5, 3), "float32"))


def test_grouped_conv1d_against_torch(torch):
    x = RNG.normal(size=(2, 6, 9))
    conv = torch.nn.Conv1d(6, 4, 3, groups=2, padding=1).double()
    layer = layers.Conv1D(4, 3, groups=2, padding=1, data_format="channels_first", dtype="float64")
    layer.build(x.shape)
    layer.set_weights([conv.weight.detach().numpy(), conv.bias.detach().numpy()])
    np.testing.assert_allclose(layer(x).numpy(), conv(torch.tensor(x)).detach().numpy(), rtol=1e-12)


@pytest.mark.slow_once
def test_grouped_conv1d_against_keras(keras):
    x = RNG.normal(size=(2, 8, 6)).astype("float32")
    for padding in ("valid", "same", "causal"):
        theirs = keras.layers.Conv1D(4, 3, groups=2, padding=padding)
        want = np.asarray(theirs(x).detach().cpu())
        kernel, bias = theirs.get_weights()                      # (k, C/g, F)
        ours = layers.Conv1D(4, 3, groups=2, padding=padding)
        ours.build(x.shape)
        ours.set_weights([np.transpose(kernel, (2, 1, 0)), bias])
        np.testing.assert_allclose(ours(x).numpy(), want, rtol=1e-5, atol=1e-5)
