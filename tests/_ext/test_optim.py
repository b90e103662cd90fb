"""The fused Adam kernel (_ext/optim_kernels.pyx): the same numbers as Adam's NumPy calls, bit for
bit, for any thread count; clear errors for arrays it cannot take."""
import numpy as np
import pytest

import minnet as mn
from minnet._ext import optim_kernels
from minnet.optimizers import adam as adam_module


# 181 x 211 = 38,191 elements: above the size that starts a thread team (PARALLEL_MIN in
# _elementwise.pxd), in several blocks of BLOCK elements with a short last one.
SHAPE = (181, 211)


def _take_path(monkeypatch, module, kernel, fused):
    """Send ``module``'s optimizer down the NumPy calls (``fused=False``), or down the kernel,
    checking that every step reached it."""
    if not fused:
        monkeypatch.setattr(module, "fusable", lambda *a: False)
        return
    real = getattr(optim_kernels, kernel)

    def counted(*args, **kwargs):
        counted.calls += 1
        return real(*args, **kwargs)
    counted.calls = 0
    monkeypatch.setattr(optim_kernels, kernel, counted)
    return counted


def _run(monkeypatch, fused, dtype, amsgrad, beta_1, steps=4, shape=SHAPE, threads=1):
    """Parameters after ``steps`` Adam updates, through the kernel or the NumPy calls."""
    _take_path(monkeypatch, adam_module, "adam_step", fused)
    rng = np.random.default_rng(0)
    p = mn.Parameter(rng.standard_normal(shape).astype(dtype))
    opt = mn.optimizers.Adam([p], learning_rate=0.01, beta_1=beta_1, beta_2=0.99, epsilon=1e-7,
                             amsgrad=amsgrad)
    old = mn.get_num_threads()
    mn.set_num_threads(threads)
    try:
        for _ in range(steps):
            g = rng.standard_normal(shape).astype(dtype)
            g[0, :3] = [0.0, 1e-30, -1e30] if dtype == np.float64 else [0.0, 1e-30, -1e20]
            p.grad = g
            opt.step()
    finally:
        mn.set_num_threads(old)
    state = opt._state[0]
    return [p.data.copy(), state["exp_avg"].copy(), state["exp_avg_sq"].copy()]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("amsgrad", [False, True])
@pytest.mark.parametrize("beta_1", [0.9, 0.3])      # lerp weight below and above 0.5
def test_fused_adam_is_the_numpy_path_bit_for_bit(monkeypatch, dtype, amsgrad, beta_1):
    ref = _run(monkeypatch, False, dtype, amsgrad, beta_1)
    monkeypatch.undo()
    for threads in (1, 2, 3):
        got = _run(monkeypatch, True, dtype, amsgrad, beta_1, threads=threads)
        assert optim_kernels.adam_step.calls == 4          # every step took the kernel
        monkeypatch.undo()
        for a, b in zip(got, ref):
            np.testing.assert_array_equal(a, b)


def test_fused_adam_is_taken_and_matches_a_plain_formula():
    # one step from zero moments: m = (1-b1) g, v = (1-b2) g^2, p -= lr/(1-b1) m / (sqrt(v)/sqrt(1-b2) + eps)
    rng = np.random.default_rng(1)
    p = rng.standard_normal(1000)
    g = rng.standard_normal(1000)
    m = np.zeros_like(p)
    v = np.zeros_like(p)
    expected = p - 0.1 / 0.1 * (0.1 * g) / (np.sqrt(0.001 * g * g) / np.sqrt(0.001) + 1e-8)
    optim_kernels.adam_step(p, g, m, v, None, 0.1, 0.999, np.sqrt(0.001), 1e-8, 0.1 / 0.1)
    np.testing.assert_allclose(p, expected, rtol=1e-12)
    np.testing.assert_allclose(m, 0.1 * g, rtol=1e-15)
    np.testing.assert_allclose(v, 0.001 * g * g, rtol=1e-12)   # 1 - 0.999 is not 0.001 exactly


def test_amsgrad_keeps_nan_as_numpy_maximum_does():
    p = np.zeros(4)
    g = np.array([np.nan, 1.0, 2.0, 3.0])
    m, v = np.zeros(4), np.zeros(4)
    vmax = np.array([0.0, np.nan, 0.0, 0.0])
    optim_kernels.adam_step(p, g, m, v, vmax, 0.1, 0.999, 0.1, 1e-8, 1.0)
    assert np.isnan(vmax[0]) and np.isnan(vmax[1]) and vmax[2] == v[2]


def test_non_contiguous_or_mixed_arrays_take_the_numpy_path(monkeypatch):
    calls = []
    monkeypatch.setattr(optim_kernels, "adam_step", lambda *a, **k: calls.append(1))
    p = mn.Parameter(np.ones((4, 6), np.float32))
    opt = mn.optimizers.Adam([p], learning_rate=0.1)
    p.grad = np.ones((6, 4), np.float32).T          # a transposed view: not C-contiguous
    opt.step()
    assert calls == [] and np.all(p.data < 1)
    p.grad = np.ones((4, 6), np.float32)
    opt.step()
    assert calls == [1]


@pytest.mark.parametrize("bad, match", [
    (dict(g=np.zeros(3)), "`g`.*shape"),
    (dict(m=np.zeros(4, np.float32)), "`m`.*dtype"),
    (dict(v=np.zeros((8,))[::2]), "`v`.*C-contiguous"),
    (dict(p=np.zeros(4, np.int64)), "`p`.*float32 or float64"),
    (dict(vmax=np.zeros(5)), "`vmax`.*shape"),
])
def test_bad_arrays_name_the_argument(bad, match):
    args = dict(p=np.zeros(4), g=np.zeros(4), m=np.zeros(4), v=np.zeros(4), vmax=None)
    args.update(bad)
    with pytest.raises((TypeError, ValueError), match=match):
        optim_kernels.adam_step(args["p"], args["g"], args["m"], args["v"], args["vmax"],
                         0.1, 0.999, 0.1, 1e-8, 1.0)


from minnet.optimizers import sgd as sgd_module


def _run_sgd(monkeypatch, fused, dtype, kw, steps=4, shape=SHAPE, threads=1):
    _take_path(monkeypatch, sgd_module, "sgd_step", fused)
    rng = np.random.default_rng(2)
    p = mn.Parameter(rng.standard_normal(shape).astype(dtype))
    opt = mn.optimizers.SGD([p], learning_rate=0.03, **kw)
    old = mn.get_num_threads()
    mn.set_num_threads(threads)
    try:
        for _ in range(steps):
            p.grad = rng.standard_normal(shape).astype(dtype)
            opt.step()
    finally:
        mn.set_num_threads(old)
    buf = opt._state[0].get("momentum_buffer")
    return [p.data.copy()] + ([] if buf is None else [buf.copy()])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kw", [{}, dict(momentum=0.9), dict(momentum=0.9, dampening=0.3),
                                dict(momentum=0.8, nesterov=True)])
def test_fused_sgd_is_the_numpy_path_bit_for_bit(monkeypatch, dtype, kw):
    ref = _run_sgd(monkeypatch, False, dtype, kw)
    monkeypatch.undo()
    for threads in (1, 2, 3):
        got = _run_sgd(monkeypatch, True, dtype, kw, threads=threads)
        assert optim_kernels.sgd_step.calls == 4           # every step took the kernel
        monkeypatch.undo()
        assert len(got) == len(ref)
        for a, b in zip(got, ref):
            np.testing.assert_array_equal(a, b)


def test_sgd_step_plain_formula():
    p = np.arange(5.0)
    g = np.ones(5)
    buf = np.full(5, 2.0)
    optim_kernels.sgd_step(p, g, buf, 0.5, 0.0, False, True, 0.1)
    np.testing.assert_array_equal(buf, np.full(5, 2.0))          # 2 * 0.5 + 1
    np.testing.assert_allclose(p, np.arange(5.0) - 0.2)
    with pytest.raises(ValueError, match="`buf`.*shape"):
        optim_kernels.sgd_step(p, g, np.zeros(4), 0.5, 0.0, False, True, 0.1)


def _sgd(a):
    optim_kernels.sgd_step(a["p"], a["g"], a["buf"], 0.5, 0.0, False, True, 0.1)


def _adam(a):
    optim_kernels.adam_step(a["p"], a["g"], a["m"], a["v"], a["vmax"], 0.1, 0.999, 0.1, 1e-8, 1.0)


@pytest.mark.parametrize("step, which", [(_sgd, "p"), (_sgd, "buf"), (_adam, "p"), (_adam, "m"),
                                         (_adam, "v"), (_adam, "vmax")])
def test_read_only_arrays_are_refused_and_left_alone(step, which):
    # The kernels write through raw pointers: a read-only array must be named, not written.
    arrays = {k: np.ones(6) for k in ("p", "g", "buf", "m", "v", "vmax")}
    arrays[which].setflags(write=False)
    with pytest.raises(ValueError, match=f"`{which}`.*writeable"):
        step(arrays)
    for k, a in arrays.items():
        np.testing.assert_array_equal(a, np.ones(6))


def test_a_read_only_gradient_is_read():
    p, g = np.zeros(5, np.float32), np.ones(5, np.float32)
    g.setflags(write=False)
    optim_kernels.sgd_step(p, g, None, 0.0, 0.0, False, False, 0.5)
    np.testing.assert_array_equal(p, np.full(5, -0.5, np.float32))
    m, v = np.zeros(5, np.float32), np.zeros(5, np.float32)
    optim_kernels.adam_step(p, g, m, v, None, 0.1, 0.999, 0.1, 1e-8, 1.0)
    assert np.all(p < -0.5)
