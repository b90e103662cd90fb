"""minnet._ext.dropout_kernels against a plain NumPy transcription of the documented hash."""
import numpy as np
import pytest

from minnet._ext import dropout_kernels as D

from _harness import TOLERANCES

TOL = TOLERANCES["kernel_dropout"]
M64 = 0xFFFFFFFFFFFFFFFF


def _mix(z):
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def reference_mask(n, rate, seed, offset):
    """Element i kept iff top-53-bits(splitmix64(mix(seed) + (offset+i+1)*golden)) / 2^53 >= rate."""
    with np.errstate(over="ignore"):
        base = _mix(np.array([seed], dtype=np.uint64))[0]
        counter = np.uint64(offset) + np.arange(n, dtype=np.uint64) + np.uint64(1)
        z = _mix(base + counter * np.uint64(0x9E3779B97F4A7C15))
    u = (z >> np.uint64(11)).astype(np.float64) / 2.0 ** 53   # exact: 53-bit integers
    return (u >= rate).astype(np.uint8)


@pytest.mark.parametrize("rate", [0.0, 0.1, 0.5, 0.9])
@pytest.mark.parametrize("seed,offset", [(0, 0), (12345, 77), (2**63 + 5, 2**64 - 3)])
def test_mask_matches_reference(rate, seed, offset):
    n = 1001
    np.testing.assert_array_equal(D.dropout_mask(n, rate, seed, offset), reference_mask(n, rate, seed, offset))


@pytest.mark.parametrize("n_threads", [2, 3, 4])
def test_mask_independent_of_thread_count(n_threads):
    n = 100_003
    one = D.dropout_mask(n, 0.3, 7, 11, n_threads=1)
    np.testing.assert_array_equal(D.dropout_mask(n, 0.3, 7, 11, n_threads=n_threads), one)
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    out1, m1 = D.dropout_forward(x, 0.3, 7, 11, n_threads=1)
    out2, m2 = D.dropout_forward(x, 0.3, 7, 11, n_threads=n_threads)
    np.testing.assert_array_equal(m1, m2)
    np.testing.assert_array_equal(out1, out2)


def test_mask_is_counter_based():
    # The mask for (seed, offset) over n1 + n2 elements is the two masks drawn one after the other.
    whole = D.dropout_mask(5000, 0.5, 3, 100)
    np.testing.assert_array_equal(np.concatenate([D.dropout_mask(1234, 0.5, 3, 100),
                                                  D.dropout_mask(3766, 0.5, 3, 1334)]), whole)
    assert not np.array_equal(D.dropout_mask(5000, 0.5, 4, 100), whole)


@pytest.mark.parametrize("rate", [0.1, 0.5, 0.8])
def test_keep_fraction(rate):
    n = 200_000
    kept = D.dropout_mask(n, rate, 99, 0).mean()
    sigma = np.sqrt(rate * (1 - rate) / n)
    assert abs(kept - (1 - rate)) < 5 * sigma


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(1,), (7, 3), (2, 3, 5, 4)])
def test_forward_backward_vs_numpy(dtype, shape):
    rng = np.random.default_rng(1)
    x = rng.standard_normal(shape).astype(dtype)
    out, mask = D.dropout_forward(x, 0.4, 5, 9, n_threads=2)
    assert out.dtype == dtype and out.shape == shape and mask.dtype == np.uint8 and mask.shape == shape
    np.testing.assert_array_equal(mask.reshape(-1), reference_mask(x.size, 0.4, 5, 9))
    scale = dtype(1 / 0.6)
    np.testing.assert_allclose(out, x * mask * scale, **TOL[dtype])
    g = rng.standard_normal(shape).astype(dtype)
    np.testing.assert_allclose(D.masked_scale_backward(g, mask, 1 / 0.6, n_threads=2),
                               g * mask * scale, **TOL[dtype])


def test_same_mask_for_float32_and_float64():
    x = np.ones(999)
    _, m64 = D.dropout_forward(x, 0.25, 1, 2)
    _, m32 = D.dropout_forward(x.astype(np.float32), 0.25, 1, 2)
    np.testing.assert_array_equal(m32, m64)


def test_nan_propagates_like_pytorch():
    # PyTorch multiplies by the mask, so a dropped NaN stays NaN.
    x = np.full(64, np.nan, dtype=np.float32)
    out, _ = D.dropout_forward(x, 0.5, 0, 0)
    assert np.isnan(out).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_alpha_dropout_vs_numpy(dtype):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((13, 11)).astype(dtype)
    p = 0.3
    out, mask = D.alpha_dropout_forward(x, p, 4, 4)
    alpha = 1.7580993408473766
    a = ((1 - p) * (1 + p * alpha ** 2)) ** -0.5
    b = a * alpha * p
    expected = np.where(mask == 1, a * x.astype(np.float64) + b, -a * alpha + b)
    np.testing.assert_allclose(out, expected, rtol=1e-6 if dtype == np.float32 else 1e-14, atol=1e-6 if dtype == np.float32 else 1e-14)
    np.testing.assert_array_equal(mask.reshape(-1), reference_mask(x.size, p, 4, 4))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_channel_scale_vs_numpy(dtype):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 5, 4, 2)).astype(dtype)
    mask = D.dropout_mask(15, 0.5, 1, 1).reshape(3, 5)
    out = D.channel_scale(x, mask, 2.0, n_threads=2)
    np.testing.assert_allclose(out, x * mask[:, :, None, None] * 2, **TOL[dtype])


def test_empty_input():
    out, mask = D.dropout_forward(np.empty((0, 3), np.float32), 0.5, 0, 0)
    assert out.shape == (0, 3) and mask.shape == (0, 3)


@pytest.mark.parametrize("rate", [-0.1, 1.0, 1.5])
def test_bad_rate(rate):
    with pytest.raises(ValueError, match="`rate`.*Received: rate="):
        D.dropout_forward(np.ones(3), rate, 0, 0)


def test_bad_arrays():
    with pytest.raises(TypeError, match="`x`.*float32 or float64"):
        D.dropout_forward(np.ones(3, dtype=np.int64), 0.5, 0, 0)
    with pytest.raises(ValueError, match="`mask`"):
        D.masked_scale_backward(np.ones(3), np.ones(4, np.uint8), 2.0)
    with pytest.raises(ValueError, match="`mask`"):
        D.masked_scale_backward(np.ones(3), np.ones(3, np.float32), 2.0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_channel_scale_channels_last(dtype):
    rng = np.random.default_rng(41)
    x = rng.standard_normal((3, 5, 4, 7)).astype(dtype)
    mask = (rng.random(21) < 0.5).astype(np.uint8)
    for nt in (1, 3):
        out = D.channel_scale(x, mask, 2.5, nt, channels_last=True)
        np.testing.assert_array_equal(out, x * (np.asarray(2.5, dtype) * mask.reshape(3, 1, 1, 7)))
    with pytest.raises(ValueError, match="mask"):
        D.channel_scale(x, mask[:20], 2.0, channels_last=True)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n_threads", [1, 2])
def test_backward_of_a_broadcast_gradient(dtype, n_threads):
    # the gradient of `.sum().backward()` (one value, every stride 0) is read once, with
    # the bits of that value written out in full
    shape = (2 * 8192 + 37, 3)
    _, mask = D.dropout_forward(np.ones(shape, dtype), 0.5, 11, 0)
    value = dtype(-1.75)
    one = D.masked_scale_backward(np.broadcast_to(value, shape), mask, 2.0, n_threads)
    full = D.masked_scale_backward(np.full(shape, value), mask, 2.0, n_threads)
    assert one.shape == shape and one.flags.c_contiguous and one.dtype == dtype
    np.testing.assert_array_equal(one.view(np.uint8), full.view(np.uint8))
