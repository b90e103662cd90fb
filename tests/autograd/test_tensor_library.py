"""The tensor library, op by op: forward, backward and double backward against PyTorch in
float64, plus float64 gradcheck and gradgradcheck (and a NumPy reference for the forward)."""
import numpy as np
import pytest

import minnet as mn

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(11)
IDX = np.array([[0, 2, 1, 0], [1, 1, 0, 2], [2, 0, 0, 1]])          # gather/scatter index, shape (3, 4)
SEL = np.array([2, 0, 2])                                             # index_select index (dim 1 of (3, 4))
MASK = RNG.random((3, 4)) > 0.5


def _distinct(shape, low=-2.0, high=2.0):
    """Values without ties (max/sort/topk/median are then differentiable everywhere)."""
    n = int(np.prod(shape))
    return RNG.permutation(np.linspace(low, high, n)).reshape(shape) + RNG.uniform(-0.01, 0.01, shape)


def _positive(shape):
    return RNG.uniform(0.5, 1.5, shape)


# name -> (fn(module, *tensors) applied to minnet or torch, input arrays, numpy reference or None)
CASES = {
    "matmul_2d": (lambda m, a, b: a @ b, [(3, 4), (4, 5)], lambda a, b: a @ b),
    "matmul_batched_broadcast": (lambda m, a, b: a @ b, [(2, 1, 3, 4), (3, 4, 2)], np.matmul),
    "matmul_vec_mat": (lambda m, a, b: a @ b, [(4,), (2, 4, 3)], np.matmul),
    "matmul_mat_vec": (lambda m, a, b: m.matmul(a, b), [(2, 3, 4), (4,)], np.matmul),
    "bmm": (lambda m, a, b: m.bmm(a, b), [(2, 3, 4), (2, 4, 5)], np.matmul),
    "einsum_bmm": (lambda m, a, b: m.einsum("bij,bjk->bik", a, b), [(2, 3, 4), (2, 4, 5)],
                   lambda a, b: np.einsum("bij,bjk->bik", a, b)),
    "einsum_outer_sum": (lambda m, a, b: m.einsum("ij,k->ik", a, b), [(3, 4), (5,)],
                         lambda a, b: np.einsum("ij,k->ik", a, b)),
    "einsum_ellipsis": (lambda m, a, b: m.einsum("...ij,jk", a, b), [(2, 3, 4), (4, 2)],
                        lambda a, b: np.einsum("...ij,jk", a, b)),
    "einsum_trace_like_sum": (lambda m, a: m.einsum("ij->", a), [(3, 4)], lambda a: np.einsum("ij->", a)),
    "cat": (lambda m, a, b: m.cat([a, b], dim=1), [(3, 2), (3, 4)], lambda a, b: np.concatenate([a, b], 1)),
    "stack": (lambda m, a, b: m.stack([a, b], dim=-1), [(3, 4), (3, 4)], lambda a, b: np.stack([a, b], -1)),
    "split": (lambda m, a: m.cat([p * (i + 1) for i, p in enumerate(a.split([1, 3], dim=1))], 1),
              [(3, 4)], None),
    "chunk": (lambda m, a: a.chunk(3, 0)[1] * 2, [(5, 2)], lambda a: a[2:4] * 2),
    "squeeze_unsqueeze": (lambda m, a: a.unsqueeze(1).squeeze(0).unsqueeze(-1), [(1, 3, 4)],
                          lambda a: a[..., None]),
    "permute": (lambda m, a: a.permute(2, 0, 1), [(2, 3, 4)], lambda a: a.transpose(2, 0, 1)),
    "transpose_pair": (lambda m, a: a.transpose(0, 2), [(2, 3, 4)], lambda a: a.swapaxes(0, 2)),
    "expand": (lambda m, a: a.expand(2, 3, 4) * 1.0, [(3, 1)], lambda a: np.broadcast_to(a, (2, 3, 4))),
    "repeat": (lambda m, a: a.repeat(2, 1, 3), [(3, 2)], lambda a: np.tile(a, (2, 1, 3))),
    "flip": (lambda m, a: a.flip(0, 2), [(2, 3, 4)], lambda a: a[::-1, :, ::-1]),
    "index_basic": (lambda m, a: a[1:, None, ::2, -1], [(3, 4, 2)], lambda a: a[1:, None, ::2, -1]),
    "index_advanced_repeats": (lambda m, a: a[[0, 2, 0], 1:], [(3, 4)], lambda a: a[[0, 2, 0], 1:]),
    "index_bool": (lambda m, a: a[MASK], [(3, 4)], lambda a: a[MASK]),
    "where": (lambda m, a, b: m.where(m.tensor(MASK) if m is mn else torch.tensor(MASK), a, b),
              [(3, 4), (4,)], lambda a, b: np.where(MASK, a, b)),
    "masked_fill": (lambda m, a: a.masked_fill(m.tensor(MASK) if m is mn else torch.tensor(MASK), 2.5),
                    [(3, 4)], lambda a: np.where(MASK, 2.5, a)),
    "gather": (lambda m, a: a.gather(1, (m.tensor if m is mn else torch.tensor)(IDX)), [(3, 4)],
               lambda a: np.take_along_axis(a, IDX, 1)),
    "scatter_add": (lambda m, a, s: a.scatter_add(1, (m.tensor if m is mn else torch.tensor)(IDX), s),
                    [(3, 4), (3, 4)], None),
    "index_select": (lambda m, a: a.index_select(1, (m.tensor if m is mn else torch.tensor)(SEL)), [(3, 4)],
                     lambda a: a[:, SEL]),
    "max_dim": (lambda m, a: a.max(dim=1).values, [(3, 4)], lambda a: a.max(1)),
    "min_dim_keepdim": (lambda m, a: a.min(0, keepdim=True)[0], [(3, 4)], lambda a: a.min(0, keepdims=True)),
    "max_all": (lambda m, a: a.max(), [(3, 4)], np.max),
    "sort_desc": (lambda m, a: a.sort(dim=1, descending=True).values, [(3, 4)], lambda a: -np.sort(-a, 1)),
    "topk": (lambda m, a: a.topk(2, dim=0).values, [(3, 4)], lambda a: -np.sort(-a, 0)[:2]),
    "sum_dims": (lambda m, a: a.sum(dim=(0, 2), keepdim=True), [(2, 3, 4)], lambda a: a.sum((0, 2), keepdims=True)),
    "mean_dim": (lambda m, a: a.mean(1), [(3, 4)], lambda a: a.mean(1)),
    "var_unbiased": (lambda m, a: a.var(1), [(3, 4)], lambda a: a.var(1, ddof=1)),
    "var_biased_keepdim": (lambda m, a: a.var(0, unbiased=False, keepdim=True), [(3, 4)],
                           lambda a: a.var(0, keepdims=True)),
    "var_correction_all": (lambda m, a: a.var(correction=2), [(3, 4)], lambda a: a.var(ddof=2)),
    "std": (lambda m, a: a.std(dim=1), [(3, 4)], lambda a: a.std(1, ddof=1)),
    "prod_dim": (lambda m, a: a.prod(1), [(3, 4)], lambda a: a.prod(1)),
    "prod_all": (lambda m, a: a.prod(), [(2, 3)], np.prod),
    "norm_fro": (lambda m, a: a.norm(), [(3, 4)], np.linalg.norm),
    "norm_p1_dim": (lambda m, a: a.norm(p=1, dim=1), [(3, 4)], lambda a: np.abs(a).sum(1)),
    "norm_p3_dim": (lambda m, a: a.norm(p=3, dim=0), [(3, 4)], lambda a: (np.abs(a) ** 3).sum(0) ** (1 / 3)),
    "logsumexp": (lambda m, a: a.logsumexp(1), [(3, 4)], lambda a: np.log(np.exp(a).sum(1))),
    "logsumexp_keepdim": (lambda m, a: a.logsumexp(0, keepdim=True), [(3, 4)],
                          lambda a: np.log(np.exp(a).sum(0, keepdims=True))),
    "cumsum": (lambda m, a: a.cumsum(1), [(3, 4)], lambda a: np.cumsum(a, 1)),
    "pow_scalar": (lambda m, a: a ** 3, [(3, 4)], lambda a: a ** 3),
    "pow_tensor": (lambda m, a, b: a ** b, [(3, 4), (4,)], np.power),
    "rpow": (lambda m, a: 2.0 ** a, [(3, 4)], lambda a: 2.0 ** a),
    "log1p": (lambda m, a: a.log1p(), [(3, 4)], np.log1p),
    "expm1": (lambda m, a: a.expm1(), [(3, 4)], np.expm1),
    "sin": (lambda m, a: a.sin(), [(3, 4)], np.sin),
    "cos": (lambda m, a: a.cos(), [(3, 4)], np.cos),
    "sign_times": (lambda m, a: a.sign() * a, [(3, 4)], lambda a: np.sign(a) * a),
    "floor_plus": (lambda m, a: a.floor() + a * a, [(3, 4)], lambda a: np.floor(a) + a * a),
    "softmax_dim0": (lambda m, a: a.softmax(0), [(3, 4)], lambda a: np.exp(a) / np.exp(a).sum(0)),
    "log_softmax": (lambda m, a: a.log_softmax(dim=1), [(3, 4)],
                    lambda a: a - np.log(np.exp(a).sum(1, keepdims=True))),
    "div_broadcast": (lambda m, a, b: a / b, [(3, 4), (3, 1)], np.divide),
    "sub_mul": (lambda m, a, b: (a - b) * (a + b), [(3, 4), (4,)], lambda a, b: (a - b) * (a + b)),
    "builtin_abs": (lambda m, a: abs(a) * 2, [(3, 4)], lambda a: np.abs(a) * 2),    # __abs__
    "abs_clamp": (lambda m, a: a.abs().clamp(0.3, 1.5), [(3, 4)], lambda a: np.clip(np.abs(a), 0.3, 1.5)),
    "maximum": (lambda m, a, b: m.maximum(a, b), [(3, 4), (4,)], np.maximum),
    "sqrt_exp_log": (lambda m, a: a.exp().sqrt().log(), [(3, 4)], lambda a: a / 2),
    "reshape_view": (lambda m, a: a.reshape(2, 6).view(6, 2).flatten(), [(3, 4)], lambda a: a.reshape(-1)),
}
POSITIVE = {"prod_dim", "prod_all", "pow_tensor", "log1p", "sqrt_exp_log"}


def _inputs(name, shapes):
    if name in POSITIVE:
        return [_positive(s) for s in shapes]
    return [_distinct(s) for s in shapes]


def _to_mn(arrays):
    return [mn.tensor(a, requires_grad=True) for a in arrays]


def _to_torch(arrays):
    return [torch.tensor(a, requires_grad=True) for a in arrays]


@pytest.mark.parametrize("name", sorted(CASES))
def test_forward_backward_double_backward_match_torch(name):
    fn, shapes, reference = CASES[name]
    arrays = _inputs(name, shapes)
    xs, ts = _to_mn(arrays), _to_torch(arrays)
    y, yt = fn(mn, *xs), fn(torch, *ts)
    np.testing.assert_allclose(y.data, yt.detach().numpy(), rtol=1e-12, atol=1e-12)
    if reference is not None:
        np.testing.assert_allclose(y.data, reference(*arrays), rtol=1e-12, atol=1e-12)
    v = RNG.standard_normal(y.shape)
    gs = mn.autograd.grad(y, xs, grad_outputs=mn.tensor(v), create_graph=True)
    gts = torch.autograd.grad(yt, ts, grad_outputs=torch.tensor(v), create_graph=True)
    for g, gt in zip(gs, gts):
        np.testing.assert_allclose(g.data, gt.detach().numpy(), rtol=1e-10, atol=1e-12)
    # double backward: d/dx of sum(w * dL/dx)
    ws = [RNG.standard_normal(a.shape) for a in arrays]
    total = sum(((g * mn.tensor(w)).sum() for g, w in zip(gs, ws)), mn.tensor(0.0, dtype="float64"))
    total_t = sum((g * torch.tensor(w)).sum() for g, w in zip(gts, ws))
    if total.requires_grad:
        hs = mn.autograd.grad(total, xs, allow_unused=True)
        hts = torch.autograd.grad(total_t, ts, allow_unused=True)
        for h, ht in zip(hs, hts):
            expected = np.zeros_like(arrays[0]) if ht is None else ht.numpy()
            got = np.zeros_like(expected) if h is None else h.data
            np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-11)
    else:      # the op is linear in every input: torch's second derivative is zero (or absent)
        assert not total_t.requires_grad or all(
            h is None or not h.abs().sum().item() for h in torch.autograd.grad(total_t, ts, allow_unused=True))


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradcheck_and_gradgradcheck(name):
    fn, shapes, _ = CASES[name]
    xs = _to_mn(_inputs(name, shapes))
    assert mn.gradcheck(lambda *a: fn(mn, *a), xs)
    assert mn.autograd.gradgradcheck(lambda *a: fn(mn, *a), xs)


def test_sort_and_topk_indices_match_torch():
    a = _distinct((3, 5))
    t = torch.tensor(a)
    x = mn.tensor(a)
    np.testing.assert_array_equal(x.sort(1).indices.data, t.sort(1).indices.numpy())
    np.testing.assert_array_equal(x.sort(0, descending=True)[1].data, t.sort(0, descending=True)[1].numpy())
    np.testing.assert_array_equal(x.topk(3, dim=1).indices.data, t.topk(3, dim=1).indices.numpy())
    np.testing.assert_array_equal(x.topk(2, dim=1, largest=False).values.data, t.topk(2, 1, largest=False).values.numpy())
    np.testing.assert_array_equal(x.argmax(1).data, t.argmax(1).numpy())
    np.testing.assert_array_equal(x.argmin().data, t.argmin().numpy())
    np.testing.assert_array_equal(x.max(1, keepdim=True).indices.data, t.max(1, keepdim=True).indices.numpy())
    assert x.argmax(1).dtype == np.int64


def test_comparisons_give_bool_without_grad():
    x = mn.tensor([1.0, 2.0, 3.0], requires_grad=True)
    for r in (x < 2, x <= 2, x > 2, x >= 2, x.eq(2.0), x.ne(2.0)):
        assert r.dtype == np.bool_ and not r.requires_grad and r.grad_fn is None
    np.testing.assert_array_equal((x > 1.5).data, [False, True, True])


def test_prod_with_zero_matches_torch():
    a = np.array([[2.0, 0.0, 3.0], [0.0, 0.0, 1.0], [1.0, 2.0, 4.0]])
    for dim in (None, 0, 1):
        x, t = mn.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
        (x.prod() if dim is None else x.prod(dim)).sum().backward()
        (t.prod() if dim is None else t.prod(dim)).sum().backward()
        np.testing.assert_allclose(x.grad, t.grad.numpy())


def test_norm_of_zeros_has_zero_gradient():
    x = mn.tensor(np.zeros((2, 3)), requires_grad=True)
    x.norm(dim=1).sum().backward()
    np.testing.assert_array_equal(x.grad, np.zeros((2, 3)))


def test_split_chunk_unbind_shapes_match_torch():
    a = np.arange(14.0).reshape(7, 2)
    t, x = torch.tensor(a), mn.tensor(a)
    assert [p.shape for p in x.split(3)] == [tuple(p.shape) for p in t.split(3)]
    assert [p.shape for p in x.chunk(3)] == [tuple(p.shape) for p in t.chunk(3)]
    assert [p.shape for p in x.split([2, 5])] == [tuple(p.shape) for p in t.split([2, 5])]
    assert len(x.unbind(1)) == 2


def test_where_without_values_gives_indices():
    cond = np.array([[True, False], [False, True]])
    rows, cols = mn.where(mn.tensor(cond))
    np.testing.assert_array_equal(rows.data, [0, 1])
    np.testing.assert_array_equal(cols.data, [0, 1])


def test_einsum_repeated_index_in_one_operand_is_a_clear_error():
    x = mn.tensor(np.eye(3), requires_grad=True)
    y = mn.einsum("ii->i", x)
    np.testing.assert_array_equal(y.data, np.ones(3))
    with pytest.raises(NotImplementedError, match="repeated subscripts"):
        y.sum().backward()


@pytest.mark.parametrize("bad", [
    lambda x: x.gather(1, mn.tensor(np.array([[5]]))),
    lambda x: x.gather(1, mn.tensor(np.array([[0.5]]))),
    lambda x: x.index_select(0, mn.tensor(np.array([3]))),
    lambda x: x.topk(9),
    lambda x: x.sum(dim=2),
    lambda x: x.permute(0, 0),
    lambda x: x.expand(3, 5),
    lambda x: x.masked_fill(mn.tensor(np.ones((2, 2))), 1.0),
])
def test_bad_arguments_raise_clear_errors(bad):
    x = mn.tensor(np.ones((2, 3)), requires_grad=True)
    with pytest.raises((ValueError, TypeError, IndexError, RuntimeError)):
        bad(x)


@pytest.mark.parametrize("key", [
    np.array([3, 0, 3, -1, 3]),                        # one integer array: rows, repeats, negative
    np.array([[1, 1], [0, 4]]),                         # 2-D integer array
    (np.array([0, 0, 2]), np.array([1, 1, 3])),         # two arrays: repeated elements
    (slice(None), np.array([2, 2, 0])),                 # slice then array
])
def test_advanced_index_backward_accumulates_repeats_like_add_at(key):
    a = RNG.standard_normal((5, 4, 2))
    g = RNG.standard_normal(a[key].shape)
    x = mn.tensor(a, requires_grad=True)
    x[key].backward(g)
    expected = np.zeros_like(a)
    np.add.at(expected, key, g)
    np.testing.assert_allclose(x.grad, expected, rtol=1e-12)


def test_gather_and_index_select_backward_accumulate_repeats():
    a = RNG.standard_normal((3, 4))
    index = np.array([[0, 0, 0, 3], [1, 1, 2, 2], [3, 3, 3, 3]])
    x = mn.tensor(a, requires_grad=True)
    x.gather(1, mn.tensor(index)).sum().backward()
    np.testing.assert_array_equal(x.grad, [[3, 0, 0, 1], [0, 2, 2, 0], [0, 0, 0, 4]])
    x.grad = None
    x.index_select(1, mn.tensor(np.array([1, 1, 0]))).sum().backward()
    np.testing.assert_array_equal(x.grad, np.tile([1, 2, 0, 0], (3, 1)))
