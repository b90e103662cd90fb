"""Every Tensor operator: NumPy reference, float64 gradcheck, PyTorch parity."""
import numpy as np
import pytest

import minnet as mn

RNG = np.random.default_rng(7)

# name -> (minnet fn, numpy reference, torch fn, input shapes, positive inputs?)
BINARY = {
    "add": (lambda a, b: a + b, np.add, lambda a, b: a + b),
    "sub": (lambda a, b: a - b, np.subtract, lambda a, b: a - b),
    "mul": (lambda a, b: a * b, np.multiply, lambda a, b: a * b),
    "div": (lambda a, b: a / b, np.divide, lambda a, b: a / b),
    "pow": (lambda a, b: a ** b, np.power, lambda a, b: a ** b),
    "maximum": (lambda a, b: a.maximum(b), np.maximum, lambda a, b: a.maximum(b)),
    "minimum": (lambda a, b: a.minimum(b), np.minimum, lambda a, b: a.minimum(b)),
}
BROADCAST_SHAPES = [((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 1, 4), (3, 1)), ((1,), (5, 2))]

UNARY = {
    "neg": (lambda a: -a, np.negative, lambda a: -a),
    "exp": (lambda a: a.exp(), np.exp, lambda a: a.exp()),
    "log": (lambda a: a.log(), np.log, lambda a: a.log()),
    "sqrt": (lambda a: a.sqrt(), np.sqrt, lambda a: a.sqrt()),
    "abs": (lambda a: a.abs(), np.abs, lambda a: a.abs()),
    "clip": (lambda a: a.clip(0.8, 1.3), lambda a: np.clip(a, 0.8, 1.3), lambda a: a.clamp(0.8, 1.3)),
    "sum_axis": (lambda a: a.sum(axis=1), lambda a: a.sum(axis=1), lambda a: a.sum(dim=1)),
    "sum_keep": (lambda a: a.sum(axis=(0, 2), keepdims=True), lambda a: a.sum(axis=(0, 2), keepdims=True),
                 lambda a: a.sum(dim=(0, 2), keepdim=True)),
    "mean": (lambda a: a.mean(), np.mean, lambda a: a.mean()),
    "mean_axis": (lambda a: a.mean(axis=-1), lambda a: a.mean(axis=-1), lambda a: a.mean(dim=-1)),
    "max_axis": (lambda a: a.max(axis=1), lambda a: a.max(axis=1), lambda a: a.amax(dim=1)),
    "reshape": (lambda a: a.reshape(4, -1), lambda a: a.reshape(4, -1), lambda a: a.reshape(4, -1)),
    "transpose": (lambda a: a.transpose(2, 0, 1), lambda a: a.transpose(2, 0, 1), lambda a: a.permute(2, 0, 1)),
    "T": (lambda a: a.T, lambda a: a.T, lambda a: a.permute(2, 1, 0)),
    "slice": (lambda a: a[1:, ::2, -1], lambda a: a[1:, ::2, -1], lambda a: a[1:, ::2, -1]),
    "fancy_index": (lambda a: a[[0, 0, 1]], lambda a: a[[0, 0, 1]], lambda a: a[[0, 0, 1]]),
    "sigmoid": (lambda a: a.sigmoid(), lambda a: 1 / (1 + np.exp(-a)), lambda a: a.sigmoid()),
    "tanh": (lambda a: a.tanh(), np.tanh, lambda a: a.tanh()),
    "relu": (lambda a: a.relu(), lambda a: np.maximum(a, 0), lambda a: a.relu()),
}
POSITIVE = {"log", "sqrt", "pow", "div"}


def _data(shape, positive, dtype=np.float64):
    x = RNG.random(shape) + 0.5 if positive else RNG.standard_normal(shape)
    return x.astype(dtype)


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("shapes", BROADCAST_SHAPES)
def test_binary_ops_gradcheck_and_reference(name, shapes):
    fn, ref, _ = BINARY[name]
    positive = name in POSITIVE
    a = mn.tensor(_data(shapes[0], positive), requires_grad=True)
    b = mn.tensor(_data(shapes[1], positive), requires_grad=True)
    np.testing.assert_allclose(fn(a, b).data, ref(a.data, b.data), rtol=1e-12)
    assert mn.gradcheck(fn, (a, b))


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_unary_ops_reference(name, dtype):
    fn, ref, _ = UNARY[name]
    x = _data((3, 4, 2), positive=True if name in POSITIVE else False, dtype=dtype)
    out = fn(mn.tensor(x, requires_grad=True))
    assert out.dtype == dtype
    tol = 1e-6 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(out.data, ref(x), rtol=tol, atol=tol)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_ops_gradcheck(name):
    fn = UNARY[name][0]
    x = mn.tensor(_data((3, 4, 2), positive=name in POSITIVE), requires_grad=True)
    if name in ("abs", "relu"):
        x.data[np.abs(x.data) < 1e-3] = 0.5     # keep away from the kink
    assert mn.gradcheck(fn, (x,))


@pytest.mark.parametrize("shapes", [((3, 4), (4, 5)), ((4,), (4, 2)), ((3, 4), (4,)),
                                    ((2, 3, 4), (4, 5)), ((2, 3, 4), (2, 4, 1)), ((5,), (5,))])
def test_matmul_gradcheck(shapes):
    a = mn.tensor(_data(shapes[0], False), requires_grad=True)
    b = mn.tensor(_data(shapes[1], False), requires_grad=True)
    np.testing.assert_allclose((a @ b).data, a.data @ b.data)
    assert mn.gradcheck(lambda a, b: a @ b, (a, b))


def test_scalar_and_array_operands():
    x = mn.tensor(np.array([1.0, 2.0, 4.0]), requires_grad=True)
    c = np.array([2.0, 3.0, 5.0])
    y = (2.0 - x) * c + 1.0 / x + x ** 2 + 2.0 ** x + c @ x
    assert isinstance(y, mn.Tensor)
    y.sum().backward()
    # c @ x is a scalar broadcast over 3 elements, so it counts 3 times in the sum
    expected = -c - 1 / x.data ** 2 + 2 * x.data + np.log(2) * 2.0 ** x.data + 3 * c
    np.testing.assert_allclose(x.grad, expected)


def test_reversed_ndarray_operand_keeps_graph():
    x = mn.tensor(np.ones(3), requires_grad=True)
    y = np.array([1.0, 2.0, 3.0]) * x     # ndarray on the left defers to Tensor
    assert isinstance(y, mn.Tensor) and y.grad_fn is not None


def test_float32_stays_float32():
    x = mn.tensor(np.ones(3, dtype=np.float32), requires_grad=True)
    y = (x * 2.5 + 1) / 3
    assert y.dtype == np.float32
    y.sum().backward()
    assert x.grad.dtype == np.float32


def test_tensor_constructor_and_dtypes():
    assert mn.tensor([1.0, 2.0]).dtype == np.float32
    assert mn.tensor(np.ones(2)).dtype == np.float64
    assert mn.tensor([1, 2]).dtype.kind == "i"
    assert mn.tensor([1, 2], dtype="float64").dtype == np.float64
    with pytest.raises(TypeError, match="floating point"):
        mn.tensor([1, 2], requires_grad=True)
    p = mn.Parameter(np.ones((2, 3)))
    assert p.requires_grad and p.is_leaf and p.dtype == np.float64
    assert mn.tensor(np.array(3.5)).item() == 3.5
    assert "grad_fn=<MulBackward>" in repr(mn.tensor(np.ones(2), requires_grad=True) * 2)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_ops_match_torch(name, torch):
    fn, _, tfn = UNARY[name]
    x = _data((3, 4, 2), positive=name in POSITIVE)
    g = RNG.standard_normal(fn(mn.tensor(x)).shape)
    xm = mn.tensor(x, requires_grad=True)
    out = fn(xm)
    out.backward(g)
    xt = torch.tensor(x, requires_grad=True)
    ot = tfn(xt)
    ot.backward(torch.tensor(g))
    np.testing.assert_allclose(out.data, ot.detach().numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(xm.grad, xt.grad.numpy(), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_ops_match_torch(name, torch):
    fn, _, tfn = BINARY[name]
    positive = name in POSITIVE
    a, b = _data((2, 1, 4), positive), _data((3, 1), positive)
    if name in ("maximum", "minimum"):
        b[0, 0] = a[0, 0, 0]                      # a tie: both split the gradient
    am, bm = mn.tensor(a, requires_grad=True), mn.tensor(b, requires_grad=True)
    at, bt = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    fn(am, bm).sum().backward()
    tfn(at, bt).sum().backward()
    np.testing.assert_allclose(am.grad, at.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(bm.grad, bt.grad.numpy(), rtol=1e-12)


def test_amax_of_an_empty_batch_reduces_the_other_axes_as_torch():
    """An empty batch reduces over a non-empty axis (torch.amax gives shape (0, 4)); only
    an empty reduced axis is refused, naming the axis."""
    a = mn.tensor(np.zeros((0, 5, 4), np.float32), requires_grad=True)
    out = a.amax(1)
    assert out.shape == (0, 4)
    out.sum().backward()
    assert a.grad.shape == (0, 5, 4)
    assert a.amin((1, 2)).shape == (0,)
    with pytest.raises(RuntimeError, match="reduction axis 0 to have non-zero size"):
        a.amax(0)
    with pytest.raises(RuntimeError, match=r"min\(\): expected reduction axis 0"):
        a.amin()


@pytest.mark.parametrize("a_shape, b_shape", [((0, 2, 3), (0, 3, 4)), ((3, 2, 0), (3, 0, 4))])
def test_batched_matmul_of_empty_operands_matches_numpy(a_shape, b_shape):
    """No items, or K = 0 (a product of zeros), as numpy and torch: shapes, zeros, grads."""
    a = mn.tensor(np.ones(a_shape, np.float32), requires_grad=True)
    b = mn.tensor(np.ones(b_shape, np.float32), requires_grad=True)
    out = a @ b
    np.testing.assert_array_equal(out.numpy(), np.ones(a_shape, np.float32) @ np.ones(b_shape, np.float32))
    out.sum().backward()
    assert a.grad.shape == a_shape and b.grad.shape == b_shape


@pytest.mark.parametrize("a_shape, b_shape, words", [
    ((2, 3), (4, 5), r"shapes \(2, 3\) and \(4, 5\) cannot be multiplied: expected the last axis "
                     r"of the first operand \(3\) to equal the second-to-last axis of the second \(4\)"),
    ((2, 3), (5,), r"the length of the second \(5\)"),
    ((2, 2, 3), (3, 3, 4), r"their batch axes \(2,\) and \(3,\) do not broadcast"),
])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_matmul_of_mismatched_shapes_names_the_axes(a_shape, b_shape, words, dtype):
    """Both paths (the autograd's float product and keras.ops' integer one) say which axes
    disagree, instead of NumPy's gufunc signature; shapes that fit still multiply."""
    a, b = np.ones(a_shape, dtype), np.ones(b_shape, dtype)
    with pytest.raises(ValueError, match=words):
        mn.ops.matmul(a, b)
    if dtype == np.float32:
        with pytest.raises(ValueError, match=words):
            mn.tensor(a) @ mn.tensor(b)
    assert mn._checks.matmul_shape_error((2, 1, 1, 3), (4, 3, 5)) is None
    np.testing.assert_array_equal(mn.ops.matmul(np.ones((2, 1, 1, 3), dtype), np.ones((4, 3, 5), dtype)).numpy(),
                                  np.full((2, 4, 1, 5), 3, dtype))
