"""ops on the symbolic tensors of the functional API record graph nodes (Keras's behaviour)."""
import numpy as np
import pytest

import minnet as mn
from minnet import layers, ops


def _model():
    inp = mn.Input((8,))
    h = layers.Dense(16)(inp)
    h = ops.relu(h) + ops.mean(h, axis=-1, keepdims=True)
    first, second = ops.split(h, 2, axis=-1)
    return inp, mn.Model(inp, layers.Dense(1)(ops.concatenate([second, first], axis=-1)))


def test_an_op_on_a_symbolic_tensor_makes_a_node_with_the_right_shape():
    inp = mn.Input((5, 4))
    out = ops.transpose(ops.matmul(inp, ops.transpose(inp, (0, 2, 1))), (0, 2, 1))
    assert isinstance(out, mn.ops.symbolic.KerasTensor) and out.shape == (None, 5, 5)


def test_the_model_computes_what_the_ops_compute_eagerly(tmp_path):
    mn.manual_seed(0)
    _, model = _model()
    x = np.random.default_rng(0).random((4, 8), dtype=np.float32)
    dense0, dense1 = [layer for layer in model.layers if isinstance(layer, layers.Dense)]
    h = dense0(x)
    h = ops.relu(h) + ops.mean(h, axis=-1, keepdims=True)
    first, second = ops.split(h, 2, axis=-1)
    expected = dense1(ops.concatenate([second, first], axis=-1)).numpy()
    np.testing.assert_allclose(model.predict(x, verbose=0), expected, rtol=1e-6)
    path = tmp_path / "ops.minnet"
    model.save(path)
    np.testing.assert_array_equal(mn.load_model(path).predict(x, verbose=0), model.predict(x, verbose=0))


def test_gradients_flow_through_the_op_nodes():
    _, model = _model()
    model.compile(optimizer="sgd", loss="mse")
    x = np.random.default_rng(1).random((16, 8), dtype=np.float32)
    before = [w.copy() for w in model.get_weights()]
    model.fit(x, np.ones((16, 1), "float32"), epochs=1, verbose=0)
    assert all(not np.array_equal(a, b) for a, b in zip(before, model.get_weights()))


def test_dot_product_attention_matches_keras(keras):
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((2, 5, 3, 4)).astype("float32") for _ in range(3))
    mask = rng.random((2, 3, 5, 5)) > 0.3
    for kwargs in ({}, {"is_causal": True}, {"mask": mask}):
        ours = ops.dot_product_attention(q, k, v, **kwargs).numpy()
        theirs = keras.ops.convert_to_numpy(keras.ops.dot_product_attention(q, k, v, **kwargs))
        np.testing.assert_allclose(ours, theirs, atol=1e-6)
    inp = mn.Input((5, 3, 4))
    model = mn.Model(inp, ops.dot_product_attention(inp, inp, inp, is_causal=True))
    np.testing.assert_allclose(model.predict(q, verbose=0),
                               ops.dot_product_attention(q, q, q, is_causal=True).numpy(), rtol=1e-6)


@pytest.mark.parametrize("bad", [np.zeros((2, 5, 3)), np.zeros((2, 5, 3, 4, 1))])
def test_dot_product_attention_names_a_bad_rank(bad):
    with pytest.raises(ValueError, match="query"):
        ops.dot_product_attention(bad, bad, bad)


# Keras 3's KerasTensor takes every Python operator but ==; each records the op of that name.
_OPERATORS = [
    ("x[:, -1, :]", lambda x: x[:, -1, :], lambda a: a[:, -1, :]),
    ("x[..., 0]", lambda x: x[..., 0], lambda a: a[..., 0]),
    ("x[:, 1:3]", lambda x: x[:, 1:3], lambda a: a[:, 1:3]),
    ("x ** 2", lambda x: x ** 2, lambda a: a ** 2),
    ("2 ** x", lambda x: 2.0 ** x, lambda a: 2.0 ** a),
    ("x @ x.T", lambda x: x @ ops.transpose(x, (0, 2, 1)), lambda a: a @ a.transpose(0, 2, 1)),
    ("x // 0.5", lambda x: x // 0.5, lambda a: a // 0.5),
    ("x % 0.5", lambda x: x % 0.5, lambda a: a % 0.5),
    ("abs(x)", lambda x: abs(x), np.abs),
    ("round(x)", lambda x: round(x), np.round),
    ("(x > 0) & (x < 1)", lambda x: (x > 0) & (x < 1), lambda a: (a > 0) & (a < 1)),
    ("(x >= 0) | (x <= -1)", lambda x: (x >= 0) | (x <= -1), lambda a: (a >= 0) | (a <= -1)),
    ("(x > 0) ^ (x != 0.5)", lambda x: (x > 0) ^ (x != 0.5), lambda a: (a > 0) ^ (a != 0.5)),
    ("~(x > 0)", lambda x: ~(x > 0), lambda a: ~(a > 0)),
]


@pytest.mark.parametrize("text,symbolic,eager", _OPERATORS, ids=[o[0] for o in _OPERATORS])
def test_python_operators_on_symbolic_tensors_record_ops(text, symbolic, eager, tmp_path):
    inp = mn.Input((4, 3))
    out = symbolic(inp)
    assert isinstance(out, mn.ops.symbolic.KerasTensor)
    model = mn.Model(inp, out)
    x = np.random.default_rng(1).standard_normal((2, 4, 3)).astype(np.float32)
    expected = eager(x)
    got = model(x).numpy()
    assert got.shape == expected.shape and out.shape == (None,) + expected.shape[1:]
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    again = mn.Model.from_config(model.get_config())          # slices and ... in the config
    np.testing.assert_array_equal(again(x).numpy(), got)
    model.save(tmp_path / "m.minnet")
    np.testing.assert_array_equal(mn.load_model(tmp_path / "m.minnet")(x).numpy(), got)


def test_a_symbolic_tensor_stays_hashable_and_refuses_iteration():
    inp = mn.Input((4,))
    assert {inp: 1}[inp] == 1 and inp == inp and not (inp == mn.Input((4,)))
    with pytest.raises(TypeError, match="cannot be iterated"):
        list(inp)
    with pytest.raises(TypeError, match="cannot be iterated"):
        first, second = inp


def test_a_keras_file_of_a_graph_with_an_op_names_the_op(tmp_path):
    pytest.importorskip("h5py")        # without it a .keras name gets minnet's own format
    inp = mn.Input((4,))
    model = mn.Model(inp, layers.Dense(2)(inp[:, :2] ** 2))
    with pytest.raises(ValueError, match="called in the graph"):
        model.save(tmp_path / "m.keras")       # was a KeyError from the layer order


def test_arithmetic_with_arrays_and_integer_tensors_keeps_keras_dtypes():
    """`h + array` records ops.add (it raised TypeError); integer tensors stay integer
    (`ids + 1` is int32, as Keras), so `Embedding(ids + 1)` sees integer ids."""
    x = mn.Input((4, 3))
    ids = mn.Input((4,), dtype="int32")
    shifted = ids + 1
    assert shifted.dtype == np.int32 and (-ids).dtype == np.int32 and (ids * ids).dtype == np.int32
    assert (x * 2.0).dtype == np.float32 and (ids / 2).dtype.kind == "f"
    offset = np.arange(12, dtype=np.float32).reshape(4, 3)
    model = mn.Model([x, ids], [offset * x - offset, layers.Embedding(10, 2)(shifted)])
    a = np.random.default_rng(0).random((2, 4, 3), dtype=np.float32)
    b = np.array([[0, 1, 2, 3], [3, 2, 1, 0]], np.int32)
    first, second = model([a, b])
    np.testing.assert_allclose(first.numpy(), offset * a - offset, rtol=1e-6)
    assert second.shape == (2, 4, 2)
