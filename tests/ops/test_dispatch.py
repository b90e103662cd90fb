"""The door of minnet.ops: every input kind (NumPy arrays, mn.Tensors, Python numbers,
nested lists) is accepted and an mn.Tensor comes out; Keras's dtype promotion
(`ops.result_type`); gradients flow through ops to mn.Tensor inputs; errors name the
argument; ops written the Keras 3 way train a model."""
import numpy as np
import pytest

import minnet as mn
from minnet import layers, ops

pytestmark = pytest.mark.filterwarnings("ignore:__array__ implementation:DeprecationWarning")  # inside Keras/torch


@pytest.mark.parametrize("value", [np.ones((2, 3), np.float32), mn.ones(2, 3), [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]])
def test_inputs_of_every_kind(value):
    out = ops.add(value, 1.0)
    assert isinstance(out, mn.Tensor) and out.dtype == np.float32
    np.testing.assert_array_equal(out.numpy(), np.full((2, 3), 2.0))


def test_python_numbers_and_lists_get_keras_dtypes():
    assert ops.convert_to_tensor(3).dtype == np.int32
    assert ops.convert_to_tensor(3.0).dtype == np.float32
    assert ops.convert_to_tensor([1, 2]).dtype == np.int32
    assert ops.convert_to_tensor(True).dtype == np.bool_
    assert ops.convert_to_tensor(np.arange(3)).dtype == np.int64          # arrays keep theirs
    assert ops.convert_to_tensor([mn.ones(2), np.zeros(2, np.float32)]).shape == (2, 2)
    assert ops.convert_to_tensor(np.ones(2), dtype="float32").dtype == np.float32
    arr = np.ones(3, np.float32)
    assert np.shares_memory(ops.convert_to_tensor(arr).numpy(), arr)


@pytest.mark.parametrize("dtypes, expected", [
    (("int32", "float32"), "float32"), (("int8", int), "int8"), (("float16", float), "float16"),
    (("uint8", "int8"), "int16"), (("bool", int), "int32"), (("int64", "float32"), "float32"),
    (("bool", "bool"), "bool"), ((int, float), "float32"), (("int32",), "int32"), ((), "float32"),
    (("float64", "int32"), "float64"), (("uint32", "int32"), "int64"),
])
def test_result_type(dtypes, expected):
    assert ops.result_type(*dtypes) == expected


def test_result_type_agrees_with_keras_below_64_bits(keras):
    names = ["bool", "uint8", "uint16", "int8", "int16", "int32", "float16", "float32", int, float]
    for a in names:
        for b in names:
            assert ops.result_type(a, b) == keras.backend.result_type(a, b), (a, b)


def test_binary_ops_promote_as_keras():
    i32 = np.ones(3, np.int32)
    assert ops.add(i32, 1.5).dtype == np.float32
    assert ops.add(i32, 2).dtype == np.int32
    assert ops.multiply(np.ones(3, np.float16), 2.0).dtype == np.float16
    assert ops.add(np.ones(3, np.float64), np.ones(3, np.float32)).dtype == np.float64
    assert ops.divide(i32, i32).dtype == np.float32
    assert ops.mean(i32).dtype == np.float32 and ops.sqrt(i32).dtype == np.float32


def test_gradients_flow_to_tensor_inputs():
    w = mn.tensor(np.array([[1.0, 2.0], [3.0, 4.0]]), requires_grad=True)
    x = np.array([[1.0, 0.0], [0.0, 1.0]])
    loss = ops.mean(ops.square(ops.matmul(x, w) - 1.0))
    loss.backward()
    np.testing.assert_allclose(w.grad, 2 * (x.T @ (x @ w.numpy() - 1.0)) / 4)


@pytest.mark.parametrize("call, argument", [
    (lambda: ops.mean(np.ones((2, 3)), axis=2), "axis"),
    (lambda: ops.squeeze(np.ones((2, 3)), axis=0), "axis"),
    (lambda: ops.split(np.ones(5), 2), "indices_or_sections"),
    (lambda: ops.pad(np.ones(3), 1, mode="bogus"), "mode"),
    (lambda: ops.top_k(np.ones(3), 5), "k"),
    (lambda: ops.cast(np.ones(3), "complex64"), "dtype"),
    (lambda: ops.where(np.ones(3) > 0, 1.0), "x1"),
    (lambda: ops.conv(np.ones((1, 2, 2, 2, 2, 1)), np.ones((1, 1, 1, 1, 1, 1))), "inputs"),
    (lambda: ops.conv(np.ones((1, 2, 2, 2, 1)), np.ones((1, 1, 1, 1, 1)), padding="full"), "padding"),
    (lambda: ops.image.resize(np.ones((1, 4, 4, 1)), (2, 2), interpolation="lanczos3"), "interpolation"),
    (lambda: ops.convert_to_tensor(np.ones(2), sparse=True), "sparse"),
    (lambda: ops.arange(0, 3, 0), "step"),
    (lambda: ops.quantile(np.ones(3), 1.5), "q"),
])
def test_errors_name_the_argument(call, argument):
    with pytest.raises((ValueError, TypeError), match=f"`{argument}`"):
        call()


def test_control_flow():
    assert ops.cond(ops.greater(2, 1), lambda: 1, lambda: 0) == 1
    i, total = ops.while_loop(lambda i, t: i < 5, lambda i, t: (i + 1, t + i), (0, 0))
    assert (i, total) == (5, 10)
    assert ops.fori_loop(0, 4, lambda i, v: v + i, 0) == 6
    carry, ys = ops.scan(lambda c, x: (c + x, c * 2), mn.tensor(np.float32(0)), np.arange(4, dtype=np.float32))
    assert float(carry.item()) == 6.0 and ys.numpy().tolist() == [0, 0, 2, 6]
    np.testing.assert_array_equal(ops.map(lambda x: x * 2, np.arange(3)).numpy(), [0, 2, 4])
    assert ops.switch(5, [lambda x: x, lambda x: x * 10], 2) == 20
    out = ops.associative_scan(lambda a, b: a + b, np.arange(5, dtype=np.float32))
    np.testing.assert_array_equal(out.numpy(), np.cumsum(np.arange(5)))


def test_keras_style_custom_layer_trains():
    class Scale(layers.Layer):
        def build(self, input_shape):
            self.w = self.add_weight(shape=(input_shape[-1],), initializer="ones")

        def call(self, inputs, training=None):
            centred = inputs - ops.mean(inputs, axis=-1, keepdims=True)
            return ops.multiply(centred, self.w) + ops.sum(ops.square(self.w)) * 0.0

    mn.manual_seed(0)
    x = np.random.default_rng(0).normal(size=(64, 4)).astype(np.float32)
    y = (x[:, :1] > 0).astype(np.float32)
    model = mn.Sequential([mn.Input((4,)), Scale(), layers.Dense(1, activation="sigmoid")])
    model.compile(optimizer="adam", loss="binary_crossentropy")
    history = model.fit(x, y, epochs=3, batch_size=16, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]


def test_custom_loss_with_ops():
    def loss_fn(y_true, y_pred):
        return ops.mean(ops.sparse_categorical_crossentropy(y_true, y_pred, from_logits=True))

    x = np.random.default_rng(1).normal(size=(32, 5)).astype(np.float32)
    y = (x.sum(1) > 0).astype(np.int64)
    model = mn.Sequential([mn.Input((5,)), layers.Dense(2)])
    model.compile(optimizer="adam", loss=loss_fn)
    history = model.fit(x, y, epochs=2, batch_size=8, verbose=0)
    assert np.isfinite(history.history["loss"]).all()


def test_64_bit_inputs_stay_64_bit(keras):
    # minnet keeps float64/int64 for every op; Keras on torch computes some ops of float64
    # inputs in float32 (matmul, maximum) while others (add) keep float64
    a = np.ones((2, 2))
    for name in ("matmul", "maximum", "add", "hypot"):
        assert getattr(ops, name)(a, a).dtype == np.float64
    assert ops.matmul(np.ones((2, 2), np.int64), np.ones((2, 2), np.int64)).dtype == np.int64
    assert ops.result_type("float64", "float32") == "float64"
    theirs = {name: str(keras.ops.convert_to_numpy(getattr(keras.ops, name)(a, a)).dtype) for name in ("matmul", "add")}
    assert theirs == {"matmul": "float32", "add": "float64"}       # the inconsistency minnet does not copy


def test_sparsemax_is_a_projection(keras):
    x = np.random.default_rng(0).normal(size=(4, 5)).astype(np.float32) * 2
    mine = ops.sparsemax(x).numpy()
    np.testing.assert_allclose(mine.sum(-1), 1.0, rtol=1e-6)
    # reference: sort, find the support size k, tau = (sum of top k - 1) / k
    z = -np.sort(-x, axis=-1)
    k = np.arange(1, 6)
    support = (1 + k * z) > np.cumsum(z, -1)
    kz = support.sum(-1, keepdims=True)
    tau = (np.take_along_axis(np.cumsum(z, -1), kz - 1, -1) - 1) / kz
    np.testing.assert_allclose(mine, np.maximum(x - tau, 0), rtol=1e-5, atol=1e-6)
    theirs = keras.ops.convert_to_numpy(keras.ops.sparsemax(x))
    assert not np.allclose(theirs.sum(-1), 1.0)       # Keras 3.15.1 on torch: rows do not sum to 1


def test_cross_of_2_vectors_is_numpys():
    a = np.array([[1.0, 2.0], [3.0, 4.0]])
    b = np.array([[1.0, 0.0], [0.5, 1.0]])
    np.testing.assert_allclose(ops.cross(a, b).numpy(), np.cross(np.pad(a, ((0, 0), (0, 1))),
                                                                 np.pad(b, ((0, 0), (0, 1))))[:, 2])


def test_empty_is_zeros():
    # Keras hands out uninitialised memory; minnet gives zeros of the same shape and dtype
    np.testing.assert_array_equal(ops.empty((2, 3)).numpy(), np.zeros((2, 3), np.float32))
    assert ops.empty_like(np.ones(2, np.int32)).dtype == np.int32
