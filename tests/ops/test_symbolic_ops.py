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
