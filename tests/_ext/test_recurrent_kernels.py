"""minnet._ext.recurrent_kernels: the fused sequence kernels against a plain NumPy reference."""
import numpy as np
import pytest

from minnet._ext import _base, embedding_kernels, recurrent_kernels as R

from _harness import TOLERANCES

TOL = TOLERANCES["gemm"]
MODES = [R.LSTM, R.GRU, R.RNN_TANH, R.RNN_RELU]


@pytest.fixture(autouse=True)
def parallel_paths_for_small_inputs():
    old = _base.set_parallel_min(0)
    yield
    _base.set_parallel_min(old)


def sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


def reference(mode, x, w_ih, w_hh, b_ih, b_hh, mask, reverse):
    """Step-by-step NumPy forward; returns (y, h_n, c_n)."""
    n, t, _ = x.shape
    hid = w_hh.shape[1]
    h = np.zeros((n, hid))
    c = np.zeros((n, hid))
    y = np.zeros((n, t, hid))
    for tt in (range(t - 1, -1, -1) if reverse else range(t)):
        gx = x[:, tt] @ w_ih.T + b_ih
        gh = h @ w_hh.T + b_hh
        if mode == R.LSTM:
            i, f, g, o = np.split(gx + gh, 4, axis=1)
            c_new = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
            h_new = sigmoid(o) * np.tanh(c_new)
        elif mode == R.GRU:
            xr, xz, xn = np.split(gx, 3, axis=1)
            hr, hz, hn = np.split(gh, 3, axis=1)
            r, z = sigmoid(xr + hr), sigmoid(xz + hz)
            nn = np.tanh(xn + r * hn)
            h_new, c_new = (1 - z) * nn + z * h, c
        else:
            pre = gx + gh
            h_new, c_new = (np.tanh(pre) if mode == R.RNN_TANH else np.maximum(pre, 0)), c
        keep = np.ones((n, 1), bool) if mask is None else mask[:, tt:tt + 1].astype(bool)
        h = np.where(keep, h_new, h)
        c = np.where(keep, c_new, c)
        y[:, tt] = h
    return y, h, c


def make(mode, n, t, i, hid, dtype, rng):
    g = R.gates_per_cell(mode) * hid
    x = rng.standard_normal((n, t, i)).astype(dtype)
    w_ih = (0.5 * rng.standard_normal((g, i))).astype(dtype)
    w_hh = (0.5 * rng.standard_normal((g, hid))).astype(dtype)
    b_ih = (0.1 * rng.standard_normal(g)).astype(dtype)
    b_hh = (0.1 * rng.standard_normal(g)).astype(dtype)
    return x, w_ih, w_hh, b_ih, b_hh


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("masked", [False, True])
def test_forward_matches_numpy(mode, dtype, reverse, masked):
    rng = np.random.default_rng(mode * 7 + reverse)
    x, w_ih, w_hh, b_ih, b_hh = make(mode, 3, 6, 5, 4, dtype, rng)
    mask = (rng.random((3, 6)) > 0.3).astype(np.uint8) if masked else None
    y, h, c, _, _, _ = R.recurrent_forward(mode, x, w_ih, w_hh, b_ih, b_hh, None, None, mask,
                                           reverse, True, True, 2)
    ry, rh, rc = reference(mode, *(a.astype(np.float64) for a in (x, w_ih, w_hh, b_ih, b_hh)),
                           mask, reverse)
    np.testing.assert_allclose(y, ry, **TOL[dtype])
    np.testing.assert_allclose(h, rh, **TOL[dtype])
    if mode == R.LSTM:
        np.testing.assert_allclose(c, rc, **TOL[dtype])
    else:
        assert c is None


@pytest.mark.parametrize("mode", MODES)
def test_backward_matches_finite_differences(mode):
    """Directional finite differences of <y, gy> + <h_n, gh> in float64."""
    rng = np.random.default_rng(5 + mode)
    x, w_ih, w_hh, b_ih, b_hh = make(mode, 2, 5, 3, 4, np.float64, rng)
    mask = np.array([[1, 1, 0, 1, 1], [0, 0, 1, 1, 1]], np.uint8)
    gy = rng.standard_normal((2, 5, 4))
    gh = rng.standard_normal((2, 4))

    def loss(*arrays):
        y, h, _, _, _, _ = R.recurrent_forward(mode, *arrays, None, None, mask, False, True,
                                               False, 1)
        return float((y * gy).sum() + (h * gh).sum())

    args = [x, w_ih, w_hh, b_ih, b_hh]
    _, _, _, hprev, cprev, saved = R.recurrent_forward(mode, *args, None, None, mask, False,
                                                       True, True, 1)
    grads = R.recurrent_backward(mode, x, w_ih, w_hh, hprev, cprev, saved, mask, False, gy, gh,
                                 None, n_threads=1)
    for k in range(5):
        direction = rng.standard_normal(args[k].shape)
        plus = [a.copy() for a in args]
        minus = [a.copy() for a in args]
        plus[k] += 1e-6 * direction
        minus[k] -= 1e-6 * direction
        numeric = (loss(*plus) - loss(*minus)) / 2e-6
        np.testing.assert_allclose((grads[k] * direction).sum(), numeric, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("deterministic", [True, False])
def test_results_do_not_depend_on_thread_count(mode, dtype, deterministic):
    # With mn.config.set_deterministic(True) the bits are the same for any thread count: the
    # batch runs in parts of 32 samples at every count and the GEMMs split by shape. By
    # default one thread keeps the batch whole (a part per thread from 2 threads on) and the
    # BLAS GEMMs split by the thread count, so float64's last bits may differ
    # (docs/guide.md, "Reproducibility and threads"). float32's time loop runs on the step
    # GEMM (stepgemm_kernels.h), whose sums have one order however rows or panels are split: only
    # its weight gradients (one OpenBLAS GEMM after the loop) may differ there.
    import minnet as mn
    mn.config.set_deterministic(deterministic)
    try:
        _check_thread_counts(mode, dtype, deterministic)
    finally:
        mn.config.set_deterministic(False)


def _check_thread_counts(mode, dtype, deterministic):
    rng = np.random.default_rng(9)
    x, w_ih, w_hh, b_ih, b_hh = make(mode, 37, 7, 9, 33, dtype, rng)
    mask = (rng.random((37, 7)) > 0.2).astype(np.uint8)
    gy = rng.standard_normal((37, 7, 33)).astype(dtype)
    names = ["y", "h", "c", "dx", "dw_ih", "dw_hh", "db_ih", "db_hh", "dh0", "dc0"]
    results = []
    for threads in (1, 2, 3):
        fwd = R.recurrent_forward(mode, x, w_ih, w_hh, b_ih, b_hh, None, None, mask, False, True,
                                  True, threads)
        bwd = R.recurrent_backward(mode, x, w_ih, w_hh, fwd[3], fwd[4], fwd[5], mask, False, gy,
                                   None, None, n_threads=threads)
        results.append(dict(zip(names, fwd[:3] + bwd)))
    if deterministic:
        exact = set(names)
    elif dtype == np.float32:
        exact = set(names) - {"dw_ih", "dw_hh"}
    else:
        exact = set()
    tol = 1e-12 if dtype == np.float64 else 1e-4
    for other in results[1:]:
        for name in names:
            a, b = results[0][name], other[name]
            if a is None:
                assert b is None
            elif name in exact:
                np.testing.assert_array_equal(a, b, err_msg=name)
            else:
                np.testing.assert_allclose(a, b, rtol=tol, atol=tol, err_msg=name)


def test_inference_saves_nothing_and_can_skip_the_sequence():
    rng = np.random.default_rng(0)
    x, w_ih, w_hh, b_ih, b_hh = make(R.LSTM, 2, 4, 3, 5, np.float32, rng)
    y, h, c, hprev, cprev, saved = R.recurrent_forward(R.LSTM, x, w_ih, w_hh, b_ih, b_hh, None,
                                                       None, None, False, False, False, 1)
    assert y is None and hprev is None and cprev is None and saved is None
    full = R.recurrent_forward(R.LSTM, x, w_ih, w_hh, b_ih, b_hh, None, None, None)
    np.testing.assert_array_equal(h, full[1])
    np.testing.assert_array_equal(h, full[0][:, -1])


def test_initial_states_and_no_bias():
    rng = np.random.default_rng(1)
    x, w_ih, w_hh, _, _ = make(R.LSTM, 2, 3, 3, 4, np.float64, rng)
    h0 = rng.standard_normal((2, 4))
    c0 = rng.standard_normal((2, 4))
    y, h, c, _, _, _ = R.recurrent_forward(R.LSTM, x, w_ih, w_hh, None, None, h0, c0, None)
    gates = x[:, 0] @ w_ih.T + h0 @ w_hh.T
    i, f, g, o = np.split(gates, 4, axis=1)
    c1 = sigmoid(f) * c0 + sigmoid(i) * np.tanh(g)
    np.testing.assert_allclose(y[:, 0], sigmoid(o) * np.tanh(c1), rtol=1e-12)


def test_bad_arrays_raise():
    rng = np.random.default_rng(2)
    x, w_ih, w_hh, b_ih, b_hh = make(R.GRU, 2, 3, 3, 4, np.float32, rng)
    with pytest.raises(ValueError, match="w_ih"):
        R.recurrent_forward(R.GRU, x, w_ih[:5], w_hh, b_ih, b_hh, None, None, None)
    with pytest.raises(ValueError, match="b_hh"):
        R.recurrent_forward(R.GRU, x, w_ih, w_hh, b_ih, b_hh.astype(np.float64), None, None, None)
    with pytest.raises(TypeError, match="float32 or float64"):
        R.recurrent_forward(R.GRU, x.astype(np.int32), w_ih, w_hh, b_ih, b_hh, None, None, None)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_embedding_backward_is_a_deterministic_scatter_add(dtype):
    rng = np.random.default_rng(3)
    idx = rng.integers(0, 7, size=200)
    grad = rng.standard_normal((200, 37)).astype(dtype)
    expected = np.zeros((7, 37), dtype)
    for i, row in enumerate(idx):      # in order, as the kernel sums
        expected[row] += grad[i]
    outs = [embedding_kernels.embedding_backward(idx, grad, 7, n) for n in (1, 2, 3)]
    for out in outs:
        np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_reusing_the_saved_gates_gives_the_same_bits(mode, dtype):
    # reuse_saved (the autograd graph is not retained): LSTM and RNN write the gate gradients
    # over the saved gates; GRU (saved rows 4H wide, gradients 3H) keeps its own array.
    rng = np.random.default_rng(21)
    x, w_ih, w_hh, b_ih, b_hh = make(mode, 37, 7, 9, 33, dtype, rng)
    mask = (rng.random((37, 7)) > 0.2).astype(np.uint8)
    gy = rng.standard_normal((37, 7, 33)).astype(dtype)
    fwd = R.recurrent_forward(mode, x, w_ih, w_hh, b_ih, b_hh, None, None, mask, False, True,
                              True, 2)
    saved = fwd[5]
    kept = saved.copy()
    plain = R.recurrent_backward(mode, x, w_ih, w_hh, fwd[3], fwd[4], saved, mask, False, gy,
                                 None, None, n_threads=2)
    np.testing.assert_array_equal(saved, kept)          # the default leaves `saved` alone
    reused = R.recurrent_backward(mode, x, w_ih, w_hh, fwd[3], fwd[4], saved, mask, False, gy,
                                  None, None, n_threads=2, reuse_saved=True)
    for a, b in zip(plain, reused):
        if a is not None:
            np.testing.assert_array_equal(a, b)
    # overwritten exactly when reused (masked steps leave rows unwritten: NaN may be there)
    assert (mode == R.GRU) == np.array_equal(saved, kept, equal_nan=True)
