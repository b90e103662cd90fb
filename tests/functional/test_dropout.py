"""minnet.functional dropout ops: NumPy reference, gradcheck, statistics, PyTorch parity."""
import numpy as np
import pytest

import minnet as mn
import minnet.functional as F
from minnet._ext import dropout_kernels as D


def test_dropout_forward_backward_reuses_mask():
    mn.manual_seed(3)
    x = mn.tensor(np.random.default_rng(0).standard_normal((20, 30)), requires_grad=True)
    y = F.dropout(x, 0.25)
    assert y.grad_fn.name() == "DropoutBackward"
    mask = y.numpy() != 0
    np.testing.assert_allclose(y.numpy(), x.numpy() * mask / 0.75, rtol=1e-14)
    g = np.random.default_rng(1).standard_normal((20, 30))
    y.backward(g)
    np.testing.assert_allclose(x.grad, g * mask / 0.75, rtol=1e-14)


def test_dropout_mask_independent_of_threads_and_seeded():
    x = np.ones((257, 129), np.float32)
    outs = []
    for n in (1, 2):
        mn.set_num_threads(n)
        mn.manual_seed(11)
        outs.append((F.dropout(x, 0.5).numpy(), F.dropout(x, 0.5).numpy()))
    mn.set_num_threads(2)
    np.testing.assert_array_equal(outs[0][0], outs[1][0])
    np.testing.assert_array_equal(outs[0][1], outs[1][1])
    assert not np.array_equal(outs[0][0], outs[0][1])      # the offset advances between calls


@pytest.mark.parametrize("rate", [0.2, 0.5])
def test_keep_fraction_and_scale(rate):
    mn.manual_seed(0)
    n = 100_000
    y = F.dropout(np.ones(n, np.float32), rate).numpy()
    kept = (y != 0).mean()
    assert abs(kept - (1 - rate)) < 5 * np.sqrt(rate * (1 - rate) / n)
    np.testing.assert_allclose(np.unique(y[y != 0]), [np.float32(1 / (1 - rate))])


def test_eval_and_rate_zero_are_identity():
    x = mn.tensor(np.ones((3, 4)), requires_grad=True)
    assert F.dropout(x, 0.5, training=False) is x
    assert F.dropout(x, 0.0) is x
    assert F.alpha_dropout(x, 0.5, training=False) is x
    assert F.spatial_dropout2d(mn.tensor(np.ones((1, 2, 3, 3))), 0.3, training=False).grad_fn is None


def test_gradcheck():
    def seeded(fn, rate):
        def run(t):
            mn.manual_seed(5)
            return fn(t, rate)
        return run
    x = mn.tensor(np.random.default_rng(2).standard_normal((3, 4, 3, 2)), requires_grad=True)
    assert mn.gradcheck(seeded(F.dropout, 0.3), (x,))
    assert mn.gradcheck(seeded(F.alpha_dropout, 0.3), (x,))
    assert mn.gradcheck(seeded(F.spatial_dropout2d, 0.5), (x,))


def test_alpha_dropout_reference_and_grad():
    mn.manual_seed(4)
    p = 0.2
    x = mn.tensor(np.random.default_rng(3).standard_normal((50, 40)), requires_grad=True)
    y = F.alpha_dropout(x, p)
    a, b, dropped = D.alpha_dropout_coefficients(p)
    kept = np.isclose(y.numpy(), a * x.numpy() + b, rtol=0, atol=1e-12)
    np.testing.assert_allclose(y.numpy()[~kept], dropped)
    y.backward(np.ones(y.shape))
    np.testing.assert_allclose(x.grad, np.where(kept, a, 0.0))


@pytest.mark.parametrize("rate", [0.1, 0.5])
def test_alpha_dropout_keeps_mean_and_variance(rate):
    mn.manual_seed(1)
    x = np.random.default_rng(4).standard_normal(400_000)
    y = F.alpha_dropout(x, rate).numpy()
    assert abs(y.mean()) < 0.01 and abs(y.var() - 1) < 0.02


def test_spatial_dropout_masks_whole_channels():
    mn.manual_seed(2)
    x = mn.tensor(np.ones((4, 16, 5, 5)), requires_grad=True)
    y = F.spatial_dropout2d(x, 0.5)
    per_channel = y.numpy().reshape(64, -1)
    assert np.all(per_channel.min(1) == per_channel.max(1))
    assert set(np.unique(per_channel)) <= {0.0, 2.0} and len(np.unique(per_channel)) == 2
    y.backward(np.ones(y.shape))
    np.testing.assert_array_equal(x.grad, y.numpy())


def test_int_input_and_errors():
    mn.manual_seed(0)
    assert F.dropout(np.ones((2, 2), np.int64), 0.5).dtype == np.float32
    with pytest.raises(ValueError, match=r"Invalid value for argument `rate`: expected a float in \[0, 1\). Received: rate=1.5"):
        F.dropout(np.ones(3), 1.5)
    with pytest.raises(ValueError, match="`rate`"):
        F.alpha_dropout(np.ones(3), -0.1)
    with pytest.raises(ValueError, match="`rate`"):
        F.dropout(np.ones(3), "0.5")
    with pytest.raises(ValueError, match="4-D"):
        F.spatial_dropout2d(np.ones((2, 3)), 0.5)


def test_torch_statistics_match(torch):
    # Different RNGs, so compare distributions: keep fraction, scale, alpha-dropout moments.
    x = np.random.default_rng(5).standard_normal(200_000).astype(np.float32)
    mn.manual_seed(0)
    ours = F.dropout(x, 0.3).numpy()
    theirs = torch.nn.functional.dropout(torch.from_numpy(x), 0.3).numpy()
    assert abs((ours != 0).mean() - (theirs != 0).mean()) < 0.01
    both = (ours != 0) & (theirs != 0)
    np.testing.assert_array_equal(ours[both], theirs[both])      # same scaling, bit for bit
    a_ours = F.alpha_dropout(x, 0.3).numpy()
    a_theirs = torch.nn.functional.alpha_dropout(torch.from_numpy(x), 0.3, training=True).numpy()
    def mode(v):
        values, counts = np.unique(v, return_counts=True)
        return values[counts.argmax()]
    np.testing.assert_allclose(mode(a_ours), mode(a_theirs), rtol=1e-6)   # the dropped value
    both = (a_ours != mode(a_ours)) & (a_theirs != mode(a_theirs))
    np.testing.assert_allclose(a_ours[both], a_theirs[both], rtol=1e-5, atol=1e-6)
    assert abs(a_ours.mean() - a_theirs.mean()) < 0.02 and abs(a_ours.var() - a_theirs.var()) < 0.03


# ---------------------------------------------------------------- channels_last (NHWC)

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_spatial_dropout_channels_last_same_channels_as_channels_first(dtype):
    # The mask is indexed (n, c) in both layouts: one seed drops the same channels.
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 6, 5, 4)).astype(dtype)
    g = rng.standard_normal(x.shape).astype(dtype)
    mn.manual_seed(7)
    a = mn.tensor(x, requires_grad=True)
    ya = F.spatial_dropout2d(a, 0.4)
    ya.backward(g)
    mn.manual_seed(7)
    b = mn.tensor(np.ascontiguousarray(x.transpose(0, 2, 3, 1)), requires_grad=True)
    yb = F.spatial_dropout2d(b, 0.4, data_format="channels_last")
    yb.backward(np.ascontiguousarray(g.transpose(0, 2, 3, 1)))
    np.testing.assert_array_equal(ya.numpy().transpose(0, 2, 3, 1), yb.numpy())
    np.testing.assert_array_equal(a.grad.transpose(0, 2, 3, 1), b.grad)
    kept = (yb.numpy() != 0).any(axis=(1, 2))                       # (N, C)
    ref = x.transpose(0, 2, 3, 1) * kept[:, None, None, :] / 0.6   # NumPy reference
    np.testing.assert_allclose(yb.numpy(), ref, rtol=1e-6)


def test_spatial_dropout_channels_last_gradcheck_and_threads():
    x = mn.tensor(np.random.default_rng(4).standard_normal((2, 3, 3, 5)), requires_grad=True)
    def f(t):
        mn.manual_seed(1)
        return F.spatial_dropout2d(t, 0.5, data_format="channels_last")
    assert mn.gradcheck(f, (x,))
    old = mn.get_num_threads()
    try:
        outs = []
        for n in (1, 2, 3):
            mn.set_num_threads(n)
            outs.append(f(np.ones((4, 8, 8, 16))).numpy())
    finally:
        mn.set_num_threads(old)
    np.testing.assert_array_equal(outs[0], outs[1])
    np.testing.assert_array_equal(outs[0], outs[2])


def test_spatial_dropout_channels_last_torch_statistics(torch):
    # Different RNGs: compare what is dropped (whole channels), the keep rate and the scale.
    x = np.ones((64, 4, 4, 32), np.float32)
    mn.manual_seed(0)
    ours = F.spatial_dropout2d(x, 0.3, data_format="channels_last").numpy()
    xt = torch.from_numpy(x.transpose(0, 3, 1, 2).copy()).contiguous(
        memory_format=torch.channels_last)
    theirs = torch.nn.functional.dropout2d(xt, 0.3).numpy().transpose(0, 2, 3, 1)
    for y in (ours, theirs):
        per_channel = y.transpose(0, 3, 1, 2).reshape(64 * 32, -1)
        assert np.all(per_channel.min(1) == per_channel.max(1))
    assert abs((ours != 0).mean() - (theirs != 0).mean()) < 0.05
    np.testing.assert_array_equal(np.unique(ours), np.unique(theirs))
    with pytest.raises(ValueError, match="data_format"):
        F.spatial_dropout2d(x, 0.3, data_format="nhwc")
