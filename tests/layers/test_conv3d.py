"""Conv3D / Conv3DTranspose and functional.conv3d / conv_transpose3d (issue 28): a NumPy
loop reference, both layouts, float32/64, gradcheck of input, kernel and bias, PyTorch's
conv3d/conv_transpose3d, Keras 3 (oracle, incl. its "same" rules), config, errors."""
import numpy as np
import pytest

import minnet as mn
import minnet.functional as F
from minnet import layers

RNG = np.random.default_rng(35)


def conv3d_reference(x, w, b, stride, pads, dilation, groups=1):
    """x (N, C, D, H, W), w (F, C/g, kd, kh, kw), pads ((f, b), (t, b), (l, r)): loops."""
    x = np.pad(x, ((0, 0), (0, 0)) + tuple(pads))
    n, c = x.shape[:2]
    f, cg = w.shape[:2]
    k = w.shape[2:]
    out = [(x.shape[2 + i] - dilation[i] * (k[i] - 1) - 1) // stride[i] + 1 for i in range(3)]
    y = np.zeros((n, f, *out))
    per = f // groups
    for o in range(f):
        g = o // per
        for i in range(k[0]):
            for j in range(k[1]):
                for m in range(k[2]):
                    a, bb, cc = i * dilation[0], j * dilation[1], m * dilation[2]
                    patch = x[:, g * cg:(g + 1) * cg,
                              a:a + (out[0] - 1) * stride[0] + 1:stride[0],
                              bb:bb + (out[1] - 1) * stride[1] + 1:stride[1],
                              cc:cc + (out[2] - 1) * stride[2] + 1:stride[2]]
                    y[:, o] += np.einsum("ncdhw,c->ndhw", patch, w[o, :, i, j, m])
    return y + (0 if b is None else b[None, :, None, None, None])


def conv_transpose3d_reference(x, w, b, stride, pads, extra, dilation):
    """The adjoint of conv3d_reference: scatter each input voxel's kernel block."""
    n, c, *size = x.shape
    k = w.shape[2:]
    full = [(size[i] - 1) * stride[i] + dilation[i] * (k[i] - 1) + 1 for i in range(3)]
    y = np.zeros((n, w.shape[1], *[full[i] + extra[i] for i in range(3)]))
    for i in range(k[0]):
        for j in range(k[1]):
            for m in range(k[2]):
                a, bb, cc = i * dilation[0], j * dilation[1], m * dilation[2]
                y[:, :, a:a + (size[0] - 1) * stride[0] + 1:stride[0],
                  bb:bb + (size[1] - 1) * stride[1] + 1:stride[1],
                  cc:cc + (size[2] - 1) * stride[2] + 1:stride[2]] += np.einsum(
                      "ncdhw,co->nodhw", x, w[:, :, i, j, m])
    out = [full[i] - pads[i][0] - pads[i][1] + extra[i] for i in range(3)]
    y = y[:, :, pads[0][0]:pads[0][0] + out[0], pads[1][0]:pads[1][0] + out[1],
          pads[2][0]:pads[2][0] + out[2]]
    return y + (0 if b is None else b[None, :, None, None, None])


CASES = [dict(stride=(1, 1, 1), pads=((0, 0),) * 3, dilation=(1, 1, 1), groups=1),
         dict(stride=(2, 1, 2), pads=((1, 1), (0, 2), (1, 0)), dilation=(1, 2, 1), groups=2),
         dict(stride=(1, 2, 1), pads=((2, 1), (1, 1), (0, 0)), dilation=(2, 1, 1), groups=1)]


@pytest.mark.parametrize("case", CASES, ids=range(len(CASES)))
@pytest.mark.parametrize("layout", ["channels_first", "channels_last"])
def test_conv3d_matches_numpy_both_layouts(case, layout):
    x = RNG.normal(size=(2, 4, 5, 6, 5))
    w = RNG.normal(size=(6, 4 // case["groups"], 3, 2, 3))
    b = RNG.normal(size=6)
    want = conv3d_reference(x, w, b, case["stride"], case["pads"], case["dilation"], case["groups"])
    xin = x if layout == "channels_first" else np.moveaxis(x, 1, -1)
    got = F.conv3d(xin, w, b, stride=case["stride"], padding=case["pads"],
                   dilation=case["dilation"], groups=case["groups"], data_format=layout).numpy()
    got = got if layout == "channels_first" else np.moveaxis(got, -1, 1)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    got32 = F.conv3d(xin.astype("float32"), w.astype("float32"), b.astype("float32"),
                     stride=case["stride"], padding=case["pads"], dilation=case["dilation"],
                     groups=case["groups"], data_format=layout).numpy()
    assert got32.dtype == np.float32
    got32 = got32 if layout == "channels_first" else np.moveaxis(got32, -1, 1)
    np.testing.assert_allclose(got32, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("layout", ["channels_first", "channels_last"])
def test_conv_transpose3d_matches_numpy(layout):
    x = RNG.normal(size=(2, 3, 3, 4, 3))
    w = RNG.normal(size=(3, 2, 3, 2, 2))
    b = RNG.normal(size=2)
    for stride, pads, extra, dilation in [((1, 1, 1), ((0, 0),) * 3, (0, 0, 0), (1, 1, 1)),
                                          ((2, 3, 1), ((1, 0), (0, 1), (1, 1)), (1, 2, 0),
                                           (1, 1, 2))]:
        want = conv_transpose3d_reference(x, w, b, stride, pads, extra, dilation)
        xin = x if layout == "channels_first" else np.moveaxis(x, 1, -1)
        got = F.conv_transpose3d(xin, w, b, stride=stride, padding=pads, output_padding=extra,
                                 dilation=dilation, data_format=layout).numpy()
        got = got if layout == "channels_first" else np.moveaxis(got, -1, 1)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("layout", ["channels_first", "channels_last"])
def test_gradcheck_input_kernel_bias(layout):
    shape = (1, 2, 3, 4, 3) if layout == "channels_first" else (1, 3, 4, 3, 2)
    x = mn.tensor(RNG.normal(size=shape), requires_grad=True)
    w = mn.tensor(RNG.normal(size=(2, 2, 2, 2, 2)), requires_grad=True)
    b = mn.tensor(RNG.normal(size=2), requires_grad=True)
    assert mn.gradcheck(lambda a, k, c: F.conv3d(a, k, c, stride=(2, 1, 1), padding=1,
                                                 dilation=(1, 1, 2), data_format=layout),
                        (x, w, b))
    assert mn.gradcheck(lambda a, k, c: F.conv_transpose3d(
        a, k, c, stride=(2, 1, 2), padding=(1, 0, 0), output_padding=(1, 0, 1),
        data_format=layout), (x, w, b))


def test_results_do_not_depend_on_the_thread_count():
    x = RNG.normal(size=(2, 6, 5, 7, 8)).astype("float32")
    w = RNG.normal(size=(8, 8, 3, 3, 3)).astype("float32")
    outs = []
    for threads in (1, 2):
        previous = mn.get_num_threads()
        mn.set_num_threads(threads)
        try:
            outs.append(F.conv3d(x, w, padding=1, data_format="channels_last").numpy())
        finally:
            mn.set_num_threads(previous)
    np.testing.assert_array_equal(outs[0], outs[1])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_against_torch(torch, dtype):
    tf = torch.nn.functional
    x = RNG.normal(size=(2, 4, 6, 5, 7)).astype(dtype)
    w = RNG.normal(size=(6, 2, 3, 3, 2)).astype(dtype)
    b = RNG.normal(size=6).astype(dtype)
    tol = dict(rtol=1e-12, atol=1e-12) if dtype == "float64" else dict(rtol=1e-5, atol=1e-5)
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    want = tf.conv3d(tx, tw, tb, stride=(1, 2, 1), padding=(1, 0, 1), dilation=(2, 1, 1), groups=2)
    mx, mw, mb = (mn.tensor(a, requires_grad=True) for a in (x, w, b))
    got = F.conv3d(mx, mw, mb, stride=(1, 2, 1), padding=(1, 0, 1), dilation=(2, 1, 1), groups=2)
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), **tol)
    g = RNG.normal(size=tuple(want.shape)).astype(dtype)
    want.backward(torch.tensor(g))
    got.backward(mn.tensor(g))
    for mine, theirs in ((mx, tx), (mw, tw), (mb, tb)):
        np.testing.assert_allclose(np.asarray(mine.grad), theirs.grad.numpy(), **tol)
    wt = RNG.normal(size=(4, 3, 2, 3, 3)).astype(dtype)
    want = tf.conv_transpose3d(torch.tensor(x), torch.tensor(wt), stride=(2, 1, 2), padding=(0, 1, 1),
                               output_padding=(1, 0, 1), dilation=(1, 1, 1))
    got = F.conv_transpose3d(x, wt, stride=(2, 1, 2), padding=(0, 1, 1), output_padding=(1, 0, 1))
    np.testing.assert_allclose(got.numpy(), want.numpy(), **tol)


def test_layers_shapes_both_layouts_and_config():
    x = RNG.normal(size=(2, 5, 6, 7, 3)).astype("float32")
    for padding, strides in (("valid", 1), ("same", 1), ("same", 2), (1, (1, 2, 1))):
        layer = layers.Conv3D(4, (3, 2, 3), strides=strides, padding=padding)
        y = layer(x)
        assert tuple(y.shape) == layer.compute_output_shape(x.shape)
        first = layers.Conv3D(4, (3, 2, 3), strides=strides, padding=padding,
                              data_format="channels_first")
        first.build(np.moveaxis(x, -1, 1).shape)
        first.set_weights(layer.get_weights())
        np.testing.assert_allclose(first(np.moveaxis(x, -1, 1)).numpy(),
                                   np.moveaxis(y.numpy(), -1, 1), rtol=1e-5, atol=1e-5)
    assert layer.kernel.shape == (4, 3, 3, 2, 3)
    again = layers.Conv3D.from_config(layer.get_config())
    assert again.get_config() == {**layer.get_config(), "name": again.name}
    t = layers.Conv3DTranspose(2, 3, strides=2, padding="same", output_padding=1)
    y = t(x)
    assert tuple(y.shape) == t.compute_output_shape(x.shape) == (2, 10, 12, 14, 2)
    assert t.kernel.shape == (3, 2, 3, 3, 3)
    assert layers.Conv3DTranspose.from_config(t.get_config()).output_padding == (1, 1, 1)
    assert layers.Convolution3D is layers.Conv3D
    assert layers.Convolution3DTranspose is layers.Conv3DTranspose
    model = mn.Sequential([layers.Input((5, 6, 7, 3)), layers.Conv3D(2, 3, activation="relu"),
                           layers.GlobalAveragePooling3D(), layers.Dense(1)])
    model.compile("adam", "mse")
    history = model.fit(x, np.ones((2, 1), "float32"), epochs=2, verbose=0)
    assert np.isfinite(history.history["loss"]).all()


def test_errors_name_the_argument():
    x = np.zeros((1, 4, 4, 4, 2), "float32")
    with pytest.raises(ValueError, match="`filters`"):
        layers.Conv3D(0, 3)
    with pytest.raises(ValueError, match="`kernel_size`"):
        layers.Conv3D(2, (3, 3))
    with pytest.raises(ValueError, match="ndim=5"):
        layers.Conv3D(2, 3)(np.zeros((1, 4, 4, 2), "float32"))
    with pytest.raises(ValueError, match="does not fit"):
        layers.Conv3D(2, 5)(x)
    with pytest.raises(ValueError, match="`output_padding`"):
        layers.Conv3DTranspose(2, 3, strides=2, output_padding=2)
    with pytest.raises(ValueError, match="`padding`"):
        layers.Conv3DTranspose(2, 3, padding=1)
    w = np.zeros((3, 2, 3, 3, 3), "float32")
    with pytest.raises(ValueError, match="`input`.*2 channels"):
        F.conv3d(np.zeros((1, 3, 4, 4, 4), "float32"), w)
    with pytest.raises(ValueError, match="`weight`"):
        F.conv3d(np.zeros((1, 2, 4, 4, 4), "float32"), w[0])
    with pytest.raises(ValueError, match="`padding`.*stride 1"):
        F.conv3d(np.zeros((1, 2, 4, 4, 4), "float32"), w, stride=2, padding="same")
    with pytest.raises(ValueError, match="`groups`"):
        F.conv3d(np.zeros((1, 2, 4, 4, 4), "float32"), w, groups=2)
    with pytest.raises(ValueError, match="larger than the padded input"):
        F.conv3d(np.zeros((1, 2, 2, 4, 4), "float32"), w)


@pytest.mark.slow_once
def test_against_keras(keras):
    x = RNG.normal(size=(2, 5, 6, 7, 3)).astype("float32")
    for padding, strides in (("valid", 1), ("same", 2), ("same", (1, 2, 3))):
        theirs = keras.layers.Conv3D(4, (3, 2, 3), strides=strides, padding=padding)
        want = keras.ops.convert_to_numpy(theirs(x))
        ours = layers.Conv3D(4, (3, 2, 3), strides=strides, padding=padding)
        ours.build(x.shape)
        k, b = (keras.ops.convert_to_numpy(v) for v in theirs.weights)
        ours.set_weights([np.transpose(k, (4, 3, 0, 1, 2)), b])
        np.testing.assert_allclose(ours(x).numpy(), want, rtol=1e-4, atol=1e-4)
    for padding, strides, extra in (("valid", 2, None), ("same", 2, None), ("same", 2, 1),
                                    ("valid", (1, 2, 3), None)):
        theirs = keras.layers.Conv3DTranspose(2, 3, strides=strides, padding=padding,
                                              output_padding=extra)
        want = keras.ops.convert_to_numpy(theirs(x))
        ours = layers.Conv3DTranspose(2, 3, strides=strides, padding=padding, output_padding=extra)
        ours.build(x.shape)
        k, b = (keras.ops.convert_to_numpy(v) for v in theirs.weights)
        ours.set_weights([np.transpose(k, (4, 3, 0, 1, 2)), b])
        got = ours(x).numpy()
        assert got.shape == want.shape, (padding, strides, extra)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
