"""Optimizers: trajectories vs torch.optim and vs plain NumPy references, clipping, errors."""
import itertools

import numpy as np
import pytest

import minnet as mn
from minnet import optimizers
from minnet.optimizers import schedules

SHAPES = [(5, 3), (7,), (2, 3, 2), (1,)]
N_STEPS = 12


def make_problem(seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    init = [rng.standard_normal(s).astype(dtype) for s in SHAPES]
    grads = [[rng.standard_normal(s).astype(dtype) for s in SHAPES] for _ in range(N_STEPS)]
    return init, grads


def run_minnet(make_opt, init, grads):
    params = [mn.Parameter(a.copy()) for a in init]
    arrays = [p.data for p in params]
    opt = make_opt(params)
    for step_grads in grads:
        for p, g in zip(params, step_grads):
            p.grad = g.copy()
        opt.step()
    # The optimizer must have updated the very same arrays (layers hold them).
    assert all(p.data is a for p, a in zip(params, arrays))
    return [p.data.copy() for p in params]


def run_torch(torch, make_opt, init, grads, clip=None, decay=None):
    """``decay=(lr, wd)``: Keras 3's decoupled weight decay ``p *= 1 - lr * wd`` before each
    torch step (torch has it built in only for AdamW)."""
    params = [torch.tensor(a.copy(), requires_grad=True) for a in init]
    opt = make_opt(params)
    for step_grads in grads:
        for p, g in zip(params, step_grads):
            p.grad = torch.tensor(g.copy())
        if clip is not None:
            clip(params)
        if decay is not None and decay[1]:
            with torch.no_grad():
                for p in params:
                    p.mul_(1 - decay[0] * decay[1])
        opt.step()
    return [p.detach().numpy().copy() for p in params]


def assert_trajectories_close(a, b, dtype=np.float64):
    tol = dict(rtol=1e-10, atol=1e-12) if dtype == np.float64 else dict(rtol=2e-5, atol=2e-6)
    for x, y in zip(a, b):
        np.testing.assert_allclose(x, y, **tol)


# ---- parity with torch.optim (float64, tight) -------------------------------------------
SGD_CASES = [dict(momentum=m, nesterov=n, weight_decay=wd, dampening=d)
             for m, n, wd, d in itertools.product([0.0, 0.9], [False, True], [0.0, 0.05], [0.0, 0.3])
             if not (n and (m == 0 or d != 0))]


@pytest.mark.parametrize("kw", SGD_CASES, ids=lambda kw: "-".join(f"{k}={v}" for k, v in kw.items()))
def test_sgd_matches_torch(torch, kw):
    init, grads = make_problem()
    ours = run_minnet(lambda p: optimizers.SGD(p, learning_rate=0.1, **kw), init, grads)
    torch_kw = {**kw, "weight_decay": 0.0}
    theirs = run_torch(torch, lambda p: torch.optim.SGD(p, lr=0.1, **torch_kw), init, grads,
                       decay=(0.1, kw["weight_decay"]))
    assert_trajectories_close(ours, theirs)


ADAM_CASES = [dict(amsgrad=a, weight_decay=wd, beta_1=b1)
              for a, wd, b1 in itertools.product([False, True], [0.0, 0.1], [0.9, 0.3])]


@pytest.mark.parametrize("kw", ADAM_CASES, ids=str)
@pytest.mark.parametrize("name", ["Adam", "AdamW"])
def test_adam_adamw_match_torch(torch, name, kw):
    init, grads = make_problem(1)
    kw = dict(kw)
    b1 = kw.pop("beta_1")
    ours = run_minnet(lambda p: getattr(optimizers, name)(p, learning_rate=0.01, beta_1=b1, beta_2=0.95,
                                                         epsilon=1e-8, **kw), init, grads)
    # Keras 3's weight_decay is decoupled for every optimizer: torch's AdamW for both.
    theirs = run_torch(torch, lambda p: torch.optim.AdamW(p, lr=0.01, betas=(b1, 0.95), eps=1e-8,
                                                          **kw), init, grads)
    assert_trajectories_close(ours, theirs)


@pytest.mark.parametrize("momentum,centered,weight_decay",
                         list(itertools.product([0.0, 0.7], [False, True], [0.0, 0.05])))
def test_rmsprop_matches_torch(torch, momentum, centered, weight_decay):
    init, grads = make_problem(2)
    kw = dict(momentum=momentum, centered=centered, weight_decay=weight_decay)
    ours = run_minnet(lambda p: optimizers.RMSprop(p, learning_rate=0.01, rho=0.9, epsilon=1e-8, **kw),
                      init, grads)
    torch_kw = {**kw, "weight_decay": 0.0}
    theirs = run_torch(torch, lambda p: torch.optim.RMSprop(p, lr=0.01, alpha=0.9, eps=1e-8, **torch_kw),
                       init, grads, decay=(0.01, weight_decay))
    assert_trajectories_close(ours, theirs)


@pytest.mark.parametrize("initial,lr_decay,weight_decay",
                         list(itertools.product([0.0, 0.1], [0.0, 0.05], [0.0, 0.05])))
def test_adagrad_matches_torch(torch, initial, lr_decay, weight_decay):
    init, grads = make_problem(3)
    ours = run_minnet(lambda p: optimizers.Adagrad(p, learning_rate=0.1, initial_accumulator_value=initial,
                                                   epsilon=1e-10, lr_decay=lr_decay,
                                                   weight_decay=weight_decay), init, grads)
    theirs = run_torch(torch, lambda p: torch.optim.Adagrad(p, lr=0.1, initial_accumulator_value=initial,
                                                            eps=1e-10, lr_decay=lr_decay),
                       init, grads, decay=(0.1, weight_decay))
    assert_trajectories_close(ours, theirs)


def _per_param_clip(torch, max_norm):
    def clip(params):
        for p in params:
            torch.nn.utils.clip_grad_norm_([p], max_norm)
    return clip


@pytest.mark.parametrize("opt_name", ["SGD", "Adam"])
@pytest.mark.parametrize("clip_kind", ["clipnorm", "global_clipnorm", "clipvalue"])
def test_clipping_matches_torch(torch, opt_name, clip_kind):
    init, grads = make_problem(4)
    grads = [[3.0 * g for g in step] for step in grads]   # norms above the thresholds
    if clip_kind == "clipnorm":
        value, clip = 1.5, _per_param_clip(torch, 1.5)
    elif clip_kind == "global_clipnorm":
        value, clip = 2.0, (lambda ps: torch.nn.utils.clip_grad_norm_(ps, 2.0))
    else:
        value, clip = 0.8, (lambda ps: torch.nn.utils.clip_grad_value_(ps, 0.8))
    if opt_name == "SGD":
        ours_make = lambda p: optimizers.SGD(p, learning_rate=0.1, momentum=0.9, weight_decay=0.01,
                                             **{clip_kind: value})
        torch_make = lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9)
    else:
        ours_make = lambda p: optimizers.Adam(p, learning_rate=0.05, epsilon=1e-8, **{clip_kind: value})
        torch_make = lambda p: torch.optim.Adam(p, lr=0.05, eps=1e-8)
    ours = run_minnet(ours_make, init, grads)
    theirs = run_torch(torch, torch_make, init, grads, clip=clip,
                       decay=(0.1, 0.01) if opt_name == "SGD" else None)
    assert_trajectories_close(ours, theirs)


@pytest.mark.parametrize("name,kw,torch_kw", [
    ("SGD", dict(momentum=0.9, nesterov=True), dict(momentum=0.9, nesterov=True)),
    ("Adam", dict(amsgrad=True, epsilon=1e-8), dict(amsgrad=True, eps=1e-8)),
    ("AdamW", dict(epsilon=1e-8), dict(eps=1e-8, weight_decay=0.004)),
    ("RMSprop", dict(rho=0.9, momentum=0.5, centered=True, epsilon=1e-8),
     dict(alpha=0.9, momentum=0.5, centered=True, eps=1e-8)),
    ("Adagrad", dict(epsilon=1e-10), dict(eps=1e-10, initial_accumulator_value=0.1)),
])
def test_float32_matches_torch(torch, name, kw, torch_kw):
    init, grads = make_problem(5, np.float32)
    ours = run_minnet(lambda p: getattr(optimizers, name)(p, learning_rate=0.01, **kw), init, grads)
    theirs = run_torch(torch, lambda p: getattr(torch.optim, name)(p, lr=0.01, **torch_kw), init, grads)
    assert all(x.dtype == np.float32 for x in ours)
    assert_trajectories_close(ours, theirs, np.float32)


# ---- plain NumPy references (written from the formulas, with temporaries) -------------
def ref_sgd(init, grads, lr, momentum, nesterov, wd):
    params = [a.copy() for a in init]
    bufs = [None] * len(params)
    for step in grads:
        for i, (p, g) in enumerate(zip(params, step)):
            p = p - lr * wd * p            # Keras 3: decoupled, before the update
            if momentum:
                bufs[i] = g.copy() if bufs[i] is None else momentum * bufs[i] + g
                g = g + momentum * bufs[i] if nesterov else bufs[i]
            params[i] = p - lr * g
    return params


def ref_adam(init, grads, lr, b1, b2, eps, wd, decoupled):
    params = [a.copy() for a in init]
    m = [np.zeros_like(a) for a in init]
    v = [np.zeros_like(a) for a in init]
    for t, step in enumerate(grads, start=1):
        for i, g in enumerate(step):
            p = params[i]
            p = p * (1 - lr * wd)          # Keras 3: decoupled for Adam and AdamW alike
            m[i] = b1 * m[i] + (1 - b1) * g
            v[i] = b2 * v[i] + (1 - b2) * g * g
            m_hat = m[i] / (1 - b1 ** t)
            v_hat = v[i] / (1 - b2 ** t)
            params[i] = p - lr * m_hat / (np.sqrt(v_hat) + eps)
    return params


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("momentum,nesterov,wd", [(0.0, False, 0.0), (0.9, False, 0.01), (0.9, True, 0.0)])
def test_sgd_matches_numpy_reference(dtype, momentum, nesterov, wd):
    init, grads = make_problem(6, dtype)
    ours = run_minnet(lambda p: optimizers.SGD(p, learning_rate=0.05, momentum=momentum, nesterov=nesterov,
                                               weight_decay=wd), init, grads)
    ref = ref_sgd([a.astype(np.float64) for a in init],
                  [[g.astype(np.float64) for g in s] for s in grads], 0.05, momentum, nesterov, wd)
    assert_trajectories_close(ours, ref, dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("decoupled", [False, True])
def test_adam_matches_numpy_reference(dtype, decoupled):
    init, grads = make_problem(7, dtype)
    cls = optimizers.AdamW if decoupled else optimizers.Adam
    ours = run_minnet(lambda p: cls(p, learning_rate=0.01, weight_decay=0.02), init, grads)
    # The textbook form lr * m_hat / (sqrt(v_hat) + eps): PyTorch's denominator
    # sqrt(v) / sqrt(1 - beta_2**t) + eps is exactly sqrt(v_hat) + eps.
    ref = ref_adam([a.astype(np.float64) for a in init], [[g.astype(np.float64) for g in s] for s in grads],
                   0.01, 0.9, 0.999, 1e-7, 0.02, decoupled)
    tol = dict(rtol=1e-9, atol=1e-11) if dtype == np.float64 else dict(rtol=1e-4, atol=1e-5)
    for x, y in zip(ours, ref):
        np.testing.assert_allclose(x, y, **tol)


def test_schedule_learning_rate_is_evaluated_at_iterations():
    init, grads = make_problem(8)
    schedule = schedules.ExponentialDecay(0.1, decay_steps=3, decay_rate=0.5)
    ours = run_minnet(lambda p: optimizers.SGD(p, learning_rate=schedule), init, grads)
    params = [a.copy() for a in init]
    for t, step in enumerate(grads):
        params = [p - 0.1 * 0.5 ** (t / 3) * g for p, g in zip(params, step)]
    assert_trajectories_close(ours, params)


# ---- behaviour --------------------------------------------------------------------------
def test_step_updates_in_place_bumps_version_and_keeps_grad():
    p = mn.Parameter(np.ones((3, 2)))
    data = p.data
    grad = np.full((3, 2), 10.0)
    p.grad = grad
    version = p._version.value
    opt = optimizers.SGD([p], learning_rate=0.1, weight_decay=0.5, clipnorm=1.0, nesterov=True, momentum=0.5)
    opt.step()
    assert p.data is data
    assert p._version.value == version + 1
    np.testing.assert_array_equal(p.grad, np.full((3, 2), 10.0))   # clipping/decay work on a copy
    assert p.grad is grad
    assert opt.iterations == 1


def test_parameters_without_grad_are_skipped():
    a, b = mn.Parameter(np.ones(3)), mn.Parameter(np.ones(2))
    a.grad = np.ones(3)
    opt = optimizers.Adam([a, b], learning_rate=0.1)
    opt.step()
    np.testing.assert_array_equal(b.data, np.ones(2))
    assert not np.allclose(a.data, 1.0)
    assert "state.1.exp_avg" not in opt.state_dict()


def test_duplicates_kept_once_and_layer_like_objects_accepted():
    p = mn.Parameter(np.ones(3))

    class Holder:
        def parameters(self):
            return [p, p]
    opt = optimizers.SGD(Holder(), learning_rate=1.0)
    assert opt.params == [p]
    p.grad = np.ones(3)
    opt.step()
    np.testing.assert_array_equal(p.data, np.zeros(3))


def test_zero_grad():
    p = mn.Parameter(np.ones(3))
    p.grad = np.ones(3)
    opt = optimizers.SGD([p])
    opt.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(p.grad, np.zeros(3))
    opt.zero_grad()
    assert p.grad is None


def test_set_parameters_later_and_step_without_parameters():
    opt = optimizers.get("adam")
    with pytest.raises(RuntimeError, match="set_parameters"):
        opt.step()
    p = mn.Parameter(np.ones(2))
    opt.set_parameters([p])
    p.grad = np.ones(2)
    opt.step()
    assert opt.iterations == 1


def test_learning_rate_property():
    opt = optimizers.SGD(learning_rate=0.1)
    assert opt.learning_rate == 0.1
    opt.learning_rate = 0.05
    assert opt.learning_rate == 0.05 and opt.lr == 0.05
    with pytest.raises(ValueError, match="learning_rate"):
        opt.learning_rate = -1.0
    sched = optimizers.SGD(learning_rate=schedules.StepDecay(1.0, step_size=2, gamma=0.5))
    assert sched.learning_rate == 1.0
    sched.iterations = 4
    assert sched.learning_rate == 0.25
    with pytest.raises(TypeError, match="not settable"):
        sched.learning_rate = 0.1


@pytest.mark.parametrize("make,arg", [
    (lambda: optimizers.SGD(learning_rate=-0.1), "learning_rate"),
    (lambda: optimizers.SGD(learning_rate="fast"), "learning_rate"),
    (lambda: optimizers.SGD(momentum=-1), "momentum"),
    (lambda: optimizers.SGD(nesterov=True), "momentum"),
    (lambda: optimizers.SGD(nesterov="yes"), "nesterov"),
    (lambda: optimizers.SGD(dampening=2.0), "dampening"),
    (lambda: optimizers.Adam(beta_1=1.0), "beta_1"),
    (lambda: optimizers.Adam(beta_2=-0.1), "beta_2"),
    (lambda: optimizers.Adam(epsilon=float("nan")), "epsilon"),
    (lambda: optimizers.AdamW(weight_decay=-0.01), "weight_decay"),
    (lambda: optimizers.RMSprop(rho=1.5), "rho"),
    (lambda: optimizers.Adagrad(initial_accumulator_value=-1), "initial_accumulator_value"),
    (lambda: optimizers.SGD(clipnorm=0), "clipnorm"),
    (lambda: optimizers.SGD(clipvalue=-1), "clipvalue"),
    (lambda: optimizers.SGD(clipnorm=1.0, global_clipnorm=1.0), "global_clipnorm"),
    (lambda: optimizers.SGD([1.0, 2.0]), "params"),
    (lambda: optimizers.SGD(np.ones(3)), "params"),
    (lambda: optimizers.SGD(0.1, 0.9), "learning rate twice"),
    (lambda: optimizers.SGD(lr=0.1), "learning_rate"),
    (lambda: optimizers.Adam(decay=0.1), "schedule"),
    (lambda: optimizers.Adam(params=[{"params": [], "lr": 0.1}]), "learning_rate"),
    (lambda: optimizers.Adam(params=[{"params": [], "momentum": 0.1}]), "params"),
    (lambda: optimizers.SGD([mn.Parameter(np.ones(2)), "w"]), "params"),
])
def test_bad_arguments_raise_named_errors(make, arg):
    with pytest.raises((ValueError, TypeError), match=arg):
        make()


def test_gradient_shape_mismatch_raises():
    p = mn.Parameter(np.ones((2, 3)))
    p.grad = np.ones((3, 2))
    opt = optimizers.SGD([p])
    with pytest.raises(ValueError, match=r"shape \(2, 3\)"):
        opt.step()
    np.testing.assert_array_equal(p.data, np.ones((2, 3)))
    assert opt.iterations == 0


def test_get_resolves_identifiers():
    for name, cls in [("sgd", optimizers.SGD), ("Adam", optimizers.Adam), ("ADAMW", optimizers.AdamW),
                      ("rmsprop", optimizers.RMSprop), ("adagrad", optimizers.Adagrad)]:
        assert type(optimizers.get(name)) is cls
    opt = optimizers.SGD(learning_rate=0.3)
    assert optimizers.get(opt) is opt
    assert type(optimizers.get(optimizers.RMSprop)) is optimizers.RMSprop
    clone = optimizers.get(optimizers.serialize(opt))
    assert type(clone) is optimizers.SGD and clone.learning_rate == 0.3
    with pytest.raises(ValueError, match=r"Unknown optimizer: 'adamm'.*adam"):
        optimizers.get("adamm")
    with pytest.raises(TypeError, match="optimizer identifier"):
        optimizers.get(3)


def test_keras_defaults():
    assert optimizers.Adam().epsilon == 1e-7 and optimizers.Adam().learning_rate == 0.001
    assert optimizers.SGD().learning_rate == 0.01
    assert optimizers.AdamW().weight_decay == 0.004           # Keras 3's default
    assert optimizers.RMSprop().rho == 0.9
    assert optimizers.Adagrad().initial_accumulator_value == 0.1


@pytest.mark.parametrize("opt", [
    optimizers.SGD(learning_rate=0.2, momentum=0.9, nesterov=True, clipnorm=1.0),
    optimizers.Adam(learning_rate=schedules.CosineDecay(0.1, 100, warmup_target=0.2, warmup_steps=5),
                    amsgrad=True),
    optimizers.AdamW(weight_decay=0.1, global_clipnorm=2.0),
    optimizers.RMSprop(centered=True, clipvalue=0.5),
    optimizers.Adagrad(lr_decay=0.1),
], ids=lambda o: type(o).__name__)
def test_config_round_trip(opt):
    import json
    config = json.loads(json.dumps(opt.get_config()))
    clone = type(opt).from_config(config)
    assert clone.get_config() == opt.get_config()
    assert repr(clone) == repr(opt)


# ---- Keras 3 meanings: learning rate first, decoupled decay, groups, constraints ------------
def test_number_as_first_positional_argument_is_the_learning_rate():
    assert optimizers.Adam(1e-3).learning_rate == 1e-3
    assert optimizers.SGD(0.5, momentum=0.9).learning_rate == 0.5
    sched = schedules.ExponentialDecay(0.1, decay_steps=10, decay_rate=0.5)
    assert optimizers.RMSprop(sched).learning_rate == pytest.approx(0.1)
    p = mn.Parameter(np.ones(2))
    assert optimizers.Adam([p], learning_rate=0.2).params == [p]
    assert optimizers.Adam(params=[p], learning_rate=0.2).learning_rate == 0.2


@pytest.mark.parametrize("name", ["SGD", "Adam", "RMSprop", "Adagrad"])
def test_weight_decay_is_decoupled_before_the_update(name):
    """Keras 3: ``w -= lr * wd * w`` before the update, for every optimizer."""
    init, grads = make_problem(9)
    ours = run_minnet(lambda p: getattr(optimizers, name)(p, learning_rate=0.05, weight_decay=0.1),
                      init, grads)

    class Decayed:
        def __init__(self, params):
            self.inner = getattr(optimizers, name)(params, learning_rate=0.05)
            self.params = params

        def step(self):
            for p in self.params:
                p.data *= 1 - 0.05 * 0.1
            self.inner.step()

    ref = run_minnet(Decayed, init, grads)
    assert_trajectories_close(ours, ref)


def test_parameter_groups_match_separate_optimizers(torch):
    init, grads = make_problem(10)
    ours = run_minnet(lambda p: optimizers.SGD(
        [{"params": p[:2], "learning_rate": 0.3, "weight_decay": 0.1}, {"params": p[2:]}],
        learning_rate=0.05, momentum=0.9), init, grads)
    first = run_minnet(lambda p: optimizers.SGD(p, learning_rate=0.3, momentum=0.9, weight_decay=0.1),
                       init[:2], [g[:2] for g in grads])
    rest = run_minnet(lambda p: optimizers.SGD(p, learning_rate=0.05, momentum=0.9),
                      init[2:], [g[2:] for g in grads])
    assert_trajectories_close(ours, first + rest)
    # and against torch's groups (torch's weight decay is L2: use 0 there)
    ours = run_minnet(lambda p: optimizers.Adam(
        [{"params": p[:2], "learning_rate": 0.03}, {"params": p[2:]}], learning_rate=0.01,
        epsilon=1e-8), init, grads)
    theirs = run_torch(torch, lambda p: torch.optim.Adam(
        [{"params": p[:2], "lr": 0.03}, {"params": p[2:]}], lr=0.01, eps=1e-8), init, grads)
    assert_trajectories_close(ours, theirs)


def test_constraint_projects_after_each_step():
    p = mn.Parameter(np.array([1.0, -2.0, 3.0]))
    p.constraint = lambda w: np.clip(w, 0.0, None)         # what add_weight(constraint="non_neg") sets
    q = mn.Parameter(np.array([1.0, -2.0]))                # no constraint attribute set: untouched
    opt = optimizers.SGD([p, q], learning_rate=1.0)
    p.grad = np.array([2.0, 0.0, -1.0])
    q.grad = np.array([2.0, 0.0])
    data = p.data
    opt.step()
    assert p.data is data
    np.testing.assert_array_equal(p.data, [0.0, 0.0, 4.0])
    np.testing.assert_array_equal(q.data, [-1.0, -2.0])


# ---- Nadam, Adamax, Adadelta, Lion (issue 18) ------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("wd", [0.0, 0.05])
def test_nadam_matches_torch_nadam_with_keras_momentum_schedule(torch, dtype, wd):
    init, grads = make_problem(11, dtype)
    ours = run_minnet(lambda p: optimizers.Nadam(p, learning_rate=0.01, beta_1=0.8, beta_2=0.95,
                                                 epsilon=1e-8, weight_decay=wd), init, grads)
    theirs = run_torch(torch, lambda p: torch.optim.NAdam(p, lr=0.01, betas=(0.8, 0.95), eps=1e-8,
                                                          momentum_decay=1.0), init, grads,
                       decay=(0.01, wd))
    # torch keeps mu_product as a float32 scalar tensor (minnet: a float64), hence rtol 1e-7
    for x, y in zip(ours, theirs):
        np.testing.assert_allclose(x, y, rtol=1e-7 if dtype == np.float64 else 2e-5, atol=2e-6)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_adamax_matches_torch(torch, dtype):
    init, grads = make_problem(12, dtype)
    ours = run_minnet(lambda p: optimizers.Adamax(p, learning_rate=0.02, beta_1=0.85, epsilon=1e-8,
                                                  weight_decay=0.03), init, grads)
    theirs = run_torch(torch, lambda p: torch.optim.Adamax(p, lr=0.02, betas=(0.85, 0.999), eps=1e-8),
                       init, grads, decay=(0.02, 0.03))
    assert_trajectories_close(ours, theirs, dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_adadelta_matches_torch(torch, dtype):
    init, grads = make_problem(13, dtype)
    ours = run_minnet(lambda p: optimizers.Adadelta(p, learning_rate=1.0, rho=0.9, epsilon=1e-6),
                      init, grads)
    theirs = run_torch(torch, lambda p: torch.optim.Adadelta(p, lr=1.0, rho=0.9, eps=1e-6), init, grads)
    assert_trajectories_close(ours, theirs, dtype)


def ref_lion(init, grads, lr, b1, b2, wd):
    """Keras 3's Lion, written out with temporaries."""
    params = [a.copy() for a in init]
    m = [np.zeros_like(a) for a in init]
    for step in grads:
        for i, g in enumerate(step):
            p = params[i] - lr * wd * params[i]
            params[i] = p - lr * np.sign(m[i] * b1 + g * (1 - b1))
            m[i] = m[i] * b2 + g * (1 - b2)
    return params


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_lion_matches_keras_formula(dtype):
    init, grads = make_problem(14, dtype)
    ours = run_minnet(lambda p: optimizers.Lion(p, learning_rate=0.01, weight_decay=0.1), init, grads)
    ref = ref_lion(init, grads, 0.01, 0.9, 0.99, 0.1)
    assert_trajectories_close(ours, ref, dtype)


def test_new_optimizers_keras_defaults_names_and_state_round_trip():
    assert optimizers.Nadam().learning_rate == 0.001 and optimizers.Nadam().epsilon == 1e-7
    assert optimizers.Adamax().beta_2 == 0.999
    assert optimizers.Adadelta().rho == 0.95 and optimizers.Adadelta().learning_rate == 0.001
    assert optimizers.Lion().beta_2 == 0.99
    for name, cls in [("nadam", optimizers.Nadam), ("adamax", optimizers.Adamax),
                      ("adadelta", optimizers.Adadelta), ("lion", optimizers.Lion)]:
        assert type(optimizers.get(name)) is cls
        init, grads = make_problem(15)
        params = [mn.Parameter(a.copy()) for a in init]
        opt = cls(params, learning_rate=0.01)
        for p, g in zip(params, grads[0]):
            p.grad = g
        opt.step()
        params2 = [mn.Parameter(p.data.copy()) for p in params]
        opt2 = cls(params2, learning_rate=0.01)
        opt2.load_state_dict(opt.state_dict())
        for p, q, g in zip(params, params2, grads[1]):
            p.grad, q.grad = g, g.copy()
        opt.step()
        opt2.step()
        for p, q in zip(params, params2):
            np.testing.assert_array_equal(p.data, q.data)
        clone = optimizers.deserialize(optimizers.serialize(opt))
        assert type(clone) is cls and clone.get_config() == opt.get_config()
    with pytest.raises(ValueError, match="beta_1"):
        optimizers.Lion(beta_1=0.0)
