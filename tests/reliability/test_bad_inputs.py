"""Bad input at every public entry point gets a clear ValueError/TypeError.

Each case is ``(id, callable, exception types, fragments)``: calling must raise one of the
exception types (subclasses allowed) and the message must contain every fragment
(case-insensitive), which is how we check that it names the argument or layer and shows
the value received.  Cases that document a defect in someone else's module are marked
``xfail(strict=True)`` and listed in docs/reliability.md.

A second group checks the opposite: unusual but valid input (non-contiguous views,
Fortran order, read-only arrays, integer images, float64 into a float32 layer) is handled,
not rejected.
"""
import numpy as np
import pytest

import minnet as mn
import minnet.functional as F
from minnet import callbacks, layers, losses, metrics, optimizers


@pytest.fixture(autouse=True, scope="module")
def _channels_first_images():
    # The image models here are built for NCHW data; Conv2D and the image layers follow
    # mn.config.image_data_format(), whose default is Keras's channels_last.
    mn.config.set_image_data_format("channels_first")
    yield
    mn.config.set_image_data_format("channels_last")

BAD = (ValueError, TypeError)
VE, TE = ValueError, TypeError


def _x(*shape, dtype=np.float32):
    return np.random.default_rng(0).standard_normal(shape).astype(dtype)


def _built(layer, shape):
    layer(_x(*shape))
    return layer


def _model(compiled=True, loss=None):
    model = mn.Sequential([layers.Dense(4, activation="relu"), layers.Dense(3)])
    if loss is None:
        loss = losses.SparseCategoricalCrossentropy(from_logits=True)
    if compiled:
        model.compile(optimizer="sgd", loss=loss, metrics=["accuracy"])
    return model


def _param():
    p = mn.Parameter(np.ones(3))
    p.grad = np.ones(3)
    return p


X = _x(10, 5)
Y = np.arange(10) % 3
LOGITS = _x(4, 5)
LABELS = np.array([0, 1, 2, 4])
X4 = _x(2, 3, 8, 8)
W4 = _x(4, 3, 3, 3)


def _readonly(array):
    array = np.array(array)
    array.setflags(write=False)
    return array


def defect(reason):
    return pytest.mark.xfail(reason=reason, strict=True)


# ------------------------------------------------------------------------------------ cases
CASES = [
    # ---- layer construction: hyperparameters
    ("Dense(units=0)", lambda: layers.Dense(0), VE, ["units", "0"]),
    ("Dense(units=-1)", lambda: layers.Dense(-1), VE, ["units", "-1"]),
    ("Dense(units=2.5)", lambda: layers.Dense(2.5), BAD, ["units", "2.5"]),
    ("Dense(units='3')", lambda: layers.Dense("3"), BAD, ["units", "'3'"]),
    ("Dense(units=None)", lambda: layers.Dense(None), BAD, ["units", "None"]),
    ("Dense(dtype=int32)", lambda: layers.Dense(3, dtype="int32"), BAD, ["dtype", "int32"]),
    ("Dense(dtype=foo)", lambda: layers.Dense(3, dtype="foo"), BAD, ["dtype", "foo"]),
    ("Dense(kernel_initializer=typo)", lambda: layers.Dense(3, kernel_initializer="glorot_unifrom"),
     BAD, ["glorot_unifrom"]),
    ("Conv2D(filters=0)", lambda: layers.Conv2D(0, 3), VE, ["filters", "0"]),
    ("Conv2D(kernel_size=0)", lambda: layers.Conv2D(4, 0), VE, ["kernel_size", "0"]),
    ("Conv2D(kernel_size=(3,))", lambda: layers.Conv2D(4, (3,)), BAD, ["kernel_size"]),
    ("Conv2D(kernel_size=(3,3,3))", lambda: layers.Conv2D(4, (3, 3, 3)), BAD, ["kernel_size"]),
    ("Conv2D(strides=0)", lambda: layers.Conv2D(4, 3, strides=0), VE, ["strides", "0"]),
    ("Conv2D(strides=-2)", lambda: layers.Conv2D(4, 3, strides=-2), VE, ["strides", "-2"]),
    ("Conv2D(padding='full')", lambda: layers.Conv2D(4, 3, padding="full"), VE,
     ["padding", "full"]),
    ("Conv2D(padding=-1)", lambda: layers.Conv2D(4, 3, padding=-1), VE, ["padding", "-1"]),
    ("Conv2D(dilation_rate=0)", lambda: layers.Conv2D(4, 3, dilation_rate=0), VE,
     ["dilation_rate", "0"]),
    ("Conv2D(activation=rellu)", lambda: layers.Conv2D(4, 3, activation="rellu"), VE,
     ["activation", "rellu"]),
    ("Dense(activation=rellu)", lambda: layers.Dense(3, activation="rellu"), VE,
     ["activation", "rellu"]),
    ("Activation(3)", lambda: layers.Activation(3), BAD, ["activation", "3"]),
    ("Activation('rellu')", lambda: layers.Activation("rellu"), VE, ["activation", "rellu"]),
    ("Dropout(1.5)", lambda: layers.Dropout(1.5), VE, ["rate", "1.5"]),
    ("Dropout(1.0)", lambda: layers.Dropout(1.0), VE, ["rate", "1.0"]),
    ("Dropout(-0.1)", lambda: layers.Dropout(-0.1), VE, ["rate", "-0.1"]),
    ("Dropout(nan)", lambda: layers.Dropout(float("nan")), VE, ["rate", "nan"]),
    ("Dropout('0.5')", lambda: layers.Dropout("0.5"), BAD, ["rate", "0.5"]),
    ("AlphaDropout(1)", lambda: layers.AlphaDropout(1), VE, ["rate", "1"]),
    ("SpatialDropout2D(-1)", lambda: layers.SpatialDropout2D(-1), VE, ["rate", "-1"]),
    ("BatchNormalization(momentum=2)", lambda: layers.BatchNormalization(momentum=2), VE,
     ["momentum", "2"]),
    ("BatchNormalization(epsilon=0)", lambda: layers.BatchNormalization(epsilon=0), VE,
     ["epsilon", "0"]),
    ("BatchNormalization(epsilon=-1)", lambda: layers.BatchNormalization(epsilon=-1), VE,
     ["epsilon", "-1"]),
    ("MaxPooling2D(0)", lambda: layers.MaxPooling2D(0), VE, ["pool_size", "0"]),
    ("MaxPooling2D(strides=0)", lambda: layers.MaxPooling2D(2, strides=0), VE, ["strides", "0"]),
    ("MaxPooling2D(padding='full')", lambda: layers.MaxPooling2D(2, padding="full"), VE,
     ["padding", "full"]),
    ("AveragePooling2D(-1)", lambda: layers.AveragePooling2D(-1), VE, ["pool_size", "-1"]),
    ("LeakyReLU(-1)", lambda: layers.LeakyReLU(-1), VE, ["negative_slope", "-1"]),
    ("ELU('a')", lambda: layers.ELU("a"), BAD, ["alpha", "a"]),
    ("Reshape((-1,-1))", lambda: layers.Reshape((-1, -1)), VE, ["target_shape", "-1"]),
    ("Reshape((0,))", lambda: layers.Reshape((0,)), VE, ["target_shape", "0"]),
    ("Softmax(axis='a')", lambda: layers.Softmax(axis="a"), BAD, ["axis", "a"]),
    ("Input((0,3))", lambda: layers.Input((0, 3)), VE, ["shape", "0"]),
    ("Lambda(3)", lambda: layers.Lambda(3), TE, ["function", "3"]),
    ("deserialize unknown class", lambda: layers.deserialize({"class_name": "Dens", "config": {}}),
     VE, ["Dens"]),
    ("Sequential([3])", lambda: mn.Sequential([3]), TE, ["layer", "3"]),
    ("Sequential.add('dense')", lambda: mn.Sequential().add("dense"), TE, ["layer", "dense"]),
    ("Sequential.pop() empty", lambda: mn.Sequential().pop(), VE, ["pop"]),

    # ---- layer call: rank, channels after build, spatial size, dtype
    ("Dense call: features after build",
     lambda: _built(layers.Dense(3, name="d1"), (2, 4))(_x(2, 5)), VE, ["d1", "4", "(2, 5)"]),
    ("Dense call: str array", lambda: layers.Dense(3, name="d2")(np.array([["a"] * 4] * 2)), TE,
     ["d2", "<U1"]),
    ("Dense call: object array", lambda: layers.Dense(3, name="d3")(
        np.array([[object()] * 4] * 2)), TE, ["d3", "object"]),
    ("Dense call: None", lambda: layers.Dense(3, name="d4")(None), TE, ["d4", "NoneType"]),
    ("Dense call: scalar", lambda: layers.Dense(3, name="d5")(np.float32(1)), VE, ["d5"]),
    ("Dense call: complex", lambda: layers.Dense(3, name="d6")(np.ones((2, 4), np.complex64)),
     TE, ["d6", "complex"]),
    ("Conv2D call: 3-D input", lambda: layers.Conv2D(2, 3, name="c1")(_x(3, 8, 8)), VE,
     ["c1", "(3, 8, 8)"]),
    ("Conv2D call: 2-D input", lambda: layers.Conv2D(2, 3, name="c2")(_x(3, 8)), VE,
     ["c2", "(3, 8)"]),
    ("Conv2D call: channels after build", lambda: _built(layers.Conv2D(2, 3, name="c3"),
                                                          (1, 3, 8, 8))(_x(1, 4, 8, 8)),
     VE, ["c3", "3", "(1, 4, 8, 8)"]),
    ("Conv2D call: image smaller than kernel", lambda: layers.Conv2D(2, 3, name="c4")(
        _x(1, 3, 2, 2)), VE, ["c4", "(2, 2)", "(3, 3)"]),
    ("Conv2D call: dilated kernel too big", lambda: layers.Conv2D(2, 3, dilation_rate=3,
                                                                  name="c5")(_x(1, 1, 6, 6)),
     VE, ["c5", "(6, 6)"]),
    ("Conv2D call: 5-D input", lambda: layers.Conv2D(2, 3, name="c6")(_x(1, 1, 1, 8, 8)), VE,
     ["c6"]),
    ("MaxPooling2D call: too small", lambda: layers.MaxPooling2D(
        3, name="p1", data_format="channels_first")(_x(1, 1, 2, 2)),
     VE, ["p1", "(2, 2)", "(3, 3)"]),
    ("AveragePooling2D call: too small", lambda: layers.AveragePooling2D(
        3, name="p2", data_format="channels_first")(_x(1, 1, 2, 5)), VE, ["p2", "(2, 5)"]),
    ("MaxPooling2D call: 3-D", lambda: layers.MaxPooling2D(2, name="p3")(_x(1, 4, 4)), VE,
     ["p3", "ndim=3"]),
    ("GlobalAveragePooling2D call: 2-D", lambda: layers.GlobalAveragePooling2D(name="g1")(
        _x(1, 4)), VE, ["g1", "ndim=2"]),
    ("BatchNormalization call: 1-D", lambda: layers.BatchNormalization(name="b1")(_x(3)),
     VE, ["b1", "(3,)"]),
    ("BatchNormalization call: channels after build", lambda: _built(
        layers.BatchNormalization(name="b2"), (2, 3))(_x(2, 4)), VE, ["b2", "3", "(2, 4)"]),
    ("BatchNormalization train with an empty batch", lambda: layers.BatchNormalization(
        name="b3")(_x(0, 3), training=True), VE, ["b3", "(0, 3)"]),
    ("Reshape call: size mismatch", lambda: layers.Reshape((5,), name="r1")(_x(2, 4)), VE,
     ["r1", "(5,)", "(4,)"]),
    ("SpatialDropout2D call: 2-D", lambda: layers.SpatialDropout2D(0.5, name="s1")(
        _x(2, 3), training=True), VE, ["s1", "ndim=2"]),
    ("Softmax call: axis out of range", lambda: layers.Softmax(axis=3, name="sm")(_x(2, 3)), VE,
     ["sm", "axis=3", "(2, 3)"]),
    ("set_weights: count", lambda: _built(layers.Dense(3, name="w1"), (2, 4)).set_weights(
        [np.zeros((3, 4))]), VE, ["w1", "2", "1"]),
    ("set_weights: shape", lambda: _built(layers.Dense(3, name="w2"), (2, 4)).set_weights(
        [np.zeros((3, 5)), np.zeros(3)]), VE, ["w2", "(3, 4)", "(3, 5)"]),
    ("set_weights: str array", lambda: _built(layers.Dense(3, name="w3"), (2, 4)).set_weights(
        [np.array([["a"] * 4] * 3), np.zeros(3)]), TE, ["w3", "<U1"]),
    ("set_weights: before build", lambda: layers.Dense(3, name="w4").set_weights(
        [np.zeros((3, 4)), np.zeros(3)]), VE, ["w4"]),

    # ---- functional ops
    ("F.conv2d: str x", lambda: F.conv2d(np.array([["a"]]), W4), TE, ["`input`", "<U1"]),
    ("F.conv2d: weight 3-D", lambda: F.conv2d(X4, W4[0]), VE, ["weight", "(3, 3, 3)"]),
    ("F.conv2d: channels", lambda: F.conv2d(_x(2, 4, 8, 8), W4), VE, ["`input`", "3"]),
    ("F.conv2d: stride 0", lambda: F.conv2d(X4, W4, stride=0), VE, ["stride", "0"]),
    ("F.conv2d: stride 1.5", lambda: F.conv2d(X4, W4, stride=1.5), VE, ["stride", "1.5"]),
    ("F.conv2d: stride True", lambda: F.conv2d(X4, W4, stride=True), VE, ["stride", "True"]),
    ("F.conv2d: dilation -1", lambda: F.conv2d(X4, W4, dilation=-1), VE, ["dilation", "-1"]),
    ("F.conv2d: padding 'full'", lambda: F.conv2d(X4, W4, padding="full"), VE,
     ["padding", "full"]),
    ("F.conv2d: kernel > input", lambda: F.conv2d(_x(1, 3, 2, 2), W4), VE, ["(1, 3, 2, 2)"]),
    ("F.conv2d: bias shape", lambda: F.conv2d(X4, W4, np.zeros(5, np.float32)), VE,
     ["bias", "(4,)"]),
    ("F.linear: features", lambda: F.linear(_x(2, 4), _x(3, 5)), VE, ["`x`", "5"]),
    ("F.linear: weight 1-D", lambda: F.linear(_x(2, 4), _x(4)), VE, ["weight"]),
    ("F.linear: bias shape", lambda: F.linear(_x(2, 5), _x(3, 5), _x(4)), VE, ["bias", "(3,)"]),
    ("F.max_pool2d: padding > half", lambda: F.max_pool2d(_x(1, 1, 4, 4), 2, padding=2), VE,
     ["padding", "(2, 2)"]),
    ("F.max_pool2d: strides 0", lambda: F.max_pool2d(_x(1, 1, 4, 4), 2, strides=0), VE,
     ["strides", "0"]),
    ("F.avg_pool2d: 3-D", lambda: F.avg_pool2d(_x(1, 4, 4), 2), VE, ["`x`", "(1, 4, 4)"]),
    ("F.global_avg_pool2d: 2-D", lambda: F.global_avg_pool2d(_x(1, 4)), VE, ["`x`"]),
    ("F.relu: object", lambda: F.relu(np.array([object()])), TE, ["`x`", "object"]),
    ("F.sigmoid: str", lambda: F.sigmoid(np.array(["1.0"])), TE, ["`x`", "<U3"]),
    ("F.tanh: complex", lambda: F.tanh(np.array([1j])), TE, ["`x`", "complex"]),
    ("F.softmax: axis out of range", lambda: F.softmax(_x(2, 3), axis=2), VE, ["axis", "2"]),
    ("F.log_softmax: axis out of range", lambda: F.log_softmax(_x(2, 3), axis=-3), VE,
     ["axis", "-3"]),
    ("F.leaky_relu: slope str", lambda: F.leaky_relu(_x(3), "a"), BAD, ["negative_slope"]),
    ("F.dropout: rate 1", lambda: F.dropout(_x(3), 1.0), VE, ["rate", "1.0"]),
    ("F.dropout: rate str", lambda: F.dropout(_x(3), "0.5"), VE, ["rate", "0.5"]),
    ("F.spatial_dropout2d: 2-D", lambda: F.spatial_dropout2d(_x(2, 3), 0.5), VE, ["`x`"]),
    ("F.batch_norm: momentum", lambda: F.batch_norm(_x(2, 3), np.zeros(3, np.float32),
                                                    np.ones(3, np.float32), training=True,
                                                    momentum=1.5), VE, ["momentum", "1.5"]),
    ("F.batch_norm: eps", lambda: F.batch_norm(_x(2, 3), np.zeros(3, np.float32),
                                               np.ones(3, np.float32), eps=0), VE, ["eps"]),
    ("F.batch_norm: running_mean shape", lambda: F.batch_norm(_x(2, 3), np.zeros(4, np.float32),
                                                              np.ones(3, np.float32)), VE,
     ["running_mean", "(3,)", "(4,)"]),
    ("F.batch_norm: 3-D", lambda: F.batch_norm(_x(2, 3, 4), np.zeros(3, np.float32),
                                               np.ones(3, np.float32)), VE, ["`x`"]),
    ("F.batch_norm: one value per channel", lambda: F.batch_norm(
        _x(1, 3), np.zeros(3, np.float32), np.ones(3, np.float32), training=True), VE,
     ["(1, 3)"]),
    ("F.batch_norm: empty batch in training", lambda: F.batch_norm(
        _x(0, 3), np.zeros(3, np.float32), np.ones(3, np.float32), training=True), VE,
     ["(0, 3)"]),
    ("F.cross_entropy: label 5 of 5", lambda: F.cross_entropy(LOGITS, np.array([0, 1, 2, 5])),
     VE, ["target", "5"]),
    ("F.cross_entropy: label -1", lambda: F.cross_entropy(LOGITS, np.array([0, 1, 2, -1])), VE,
     ["target", "-1"]),
    ("F.cross_entropy: label 0.5", lambda: F.cross_entropy(LOGITS, np.array([0.5, 1, 2, 3])),
     VE, ["target", "0.5"]),
    ("F.cross_entropy: n labels", lambda: F.cross_entropy(LOGITS, np.array([0, 1, 2])), VE,
     ["target", "(3,)"]),
    ("F.cross_entropy: one-hot wrong rows", lambda: F.cross_entropy(LOGITS, np.eye(5)[:3]), VE,
     ["target", "(3, 5)"]),
    ("F.cross_entropy: str labels", lambda: F.cross_entropy(LOGITS, np.array(list("abcd"))), TE,
     ["target"]),
    ("F.cross_entropy: label_smoothing 2", lambda: F.cross_entropy(LOGITS, LABELS,
                                                                   label_smoothing=2), VE,
     ["label_smoothing", "2"]),
    ("F.cross_entropy: reduction 'avg'", lambda: F.cross_entropy(LOGITS, LABELS,
                                                                 reduction="avg"), VE,
     ["reduction", "avg"]),
    ("F.cross_entropy: logits 1-D", lambda: F.cross_entropy(_x(5), np.array([1])), VE,
     ["logits"]),
    ("F.nll_loss: label 7", lambda: F.nll_loss(LOGITS, np.array([0, 1, 2, 7])), VE,
     ["target", "7"]),
    ("F.mse_loss: shapes", lambda: F.mse_loss(_x(4, 1), _x(4)), VE, ["target", "(4,)"]),
    ("F.l1_loss: shapes", lambda: F.l1_loss(_x(4, 3), _x(4, 1)), VE, ["target", "(4, 1)"]),
    ("F.huber_loss: delta 0", lambda: F.huber_loss(_x(3), _x(3), delta=0), VE, ["delta", "0"]),
    ("F.binary_cross_entropy: p 1.5", lambda: F.binary_cross_entropy(np.array([1.5, 0.2]),
                                                                     np.array([1.0, 0.0])), VE,
     ["input", "1.5"]),
    ("F.binary_cross_entropy: p nan", lambda: F.binary_cross_entropy(np.array([np.nan, 0.2]),
                                                                     np.array([1.0, 0.0])), VE,
     ["input", "nan"]),
    ("F.binary_cross_entropy_with_logits: shapes", lambda: F.binary_cross_entropy_with_logits(
        _x(3), _x(4)), VE, ["target", "(4,)"]),

    # ---- losses
    ("losses.get('mse2')", lambda: losses.get("mse2"), VE, ["mse2"]),
    ("losses.get(3)", lambda: losses.get(3), TE, ["3"]),
    ("MeanSquaredError(reduction='avg')", lambda: losses.MeanSquaredError(reduction="avg"), VE,
     ["reduction", "avg"]),
    ("Huber(delta=-1)", lambda: losses.Huber(delta=-1), VE, ["delta", "-1"]),
    ("CategoricalCrossentropy(label_smoothing=2)",
     lambda: losses.CategoricalCrossentropy(label_smoothing=2), VE, ["label_smoothing", "2"]),
    ("SCCE: label out of range", lambda: losses.SparseCategoricalCrossentropy(from_logits=True)(
        np.array([0, 1, 2, 9]), LOGITS), VE, ["y_true", "9"]),
    ("SCCE: negative label", lambda: losses.SparseCategoricalCrossentropy(from_logits=True)(
        np.array([0, 1, 2, -1]), LOGITS), VE, ["y_true", "-1"]),
    ("SCCE: float labels", lambda: losses.SparseCategoricalCrossentropy(from_logits=True)(
        np.array([0.5, 1, 2, 3]), LOGITS), VE, ["y_true", "0.5"]),
    ("SCCE: one-hot given", lambda: losses.SparseCategoricalCrossentropy(from_logits=True)(
        np.eye(5)[[0, 1, 2, 3]], LOGITS), VE, ["y_true", "(4, 5)", "CategoricalCrossentropy"]),
    ("SCCE: n labels", lambda: losses.SparseCategoricalCrossentropy(from_logits=True)(
        np.array([0, 1]), LOGITS), VE, ["y_true", "(2,)"]),
    ("CCE: sparse labels given", lambda: losses.CategoricalCrossentropy(from_logits=True)(
        np.array([0, 1, 2, 3]), LOGITS), VE, ["y_true", "(4,)", "Sparse"]),
    ("CCE: class count", lambda: losses.CategoricalCrossentropy(from_logits=True)(
        np.eye(4), LOGITS), VE, ["y_true", "(4, 4)"]),
    ("MSE: shapes", lambda: losses.MeanSquaredError()(np.zeros((4, 3)), LOGITS), VE,
     ["y_true", "(4, 3)"]),
    ("MSE: sample_weight length", lambda: losses.MeanSquaredError()(
        np.zeros((4, 5)), LOGITS, sample_weight=np.ones(3)), VE, ["sample_weight", "(3,)"]),
    ("MSE: str y_true", lambda: losses.MeanSquaredError()(np.array([["a"] * 5] * 4), LOGITS), TE,
     ["y_true", "<U1"]),
    # BCE on values > 1 with from_logits=False computes as Keras does (clipped) and warns:
    # tests/losses/test_keras_meanings.py::test_values_outside_0_1_are_clipped_as_keras_with_one_warning

    # ---- metrics
    ("metrics.get('accuracyy')", lambda: metrics.get("accuracyy"), VE, ["accuracyy"]),
    ("metrics.get(3)", lambda: metrics.get(3), BAD, ["3"]),
    ("SparseCategoricalAccuracy: n labels", lambda: metrics.SparseCategoricalAccuracy()
     .update_state(np.array([0, 1]), LOGITS), VE, ["y_true", "(2,)"]),
    ("SparseCategoricalAccuracy: str labels", lambda: metrics.SparseCategoricalAccuracy()
     .update_state(np.array(["a"] * 4), LOGITS), TE, ["y_true", "<U1"]),
    ("SparseTopKCategoricalAccuracy(k=0)", lambda: metrics.SparseTopKCategoricalAccuracy(k=0),
     VE, ["k", "0"]),
    ("MeanSquaredError metric: sample_weight", lambda: metrics.MeanSquaredError().update_state(
        np.zeros((4, 5)), LOGITS, sample_weight=np.ones(2)), VE, ["sample_weight", "(2,)"]),

    # ---- optimizers
    ("optimizers.get('adamm')", lambda: optimizers.get("adamm"), VE, ["adamm"]),
    ("optimizers.get(3)", lambda: optimizers.get(3), BAD, ["3"]),
    ("SGD(learning_rate=-1)", lambda: optimizers.SGD([_param()], learning_rate=-1), VE,
     ["learning_rate", "-1"]),
    ("SGD(learning_rate=nan)", lambda: optimizers.SGD([_param()], learning_rate=float("nan")), VE,
     ["learning_rate", "nan"]),
    ("SGD(learning_rate='0.1')", lambda: optimizers.SGD([_param()], learning_rate="0.1"), BAD,
     ["learning_rate", "0.1"]),
    ("SGD(momentum=-1)", lambda: optimizers.SGD([_param()], momentum=-1), VE, ["momentum", "-1"]),
    ("SGD(nesterov, no momentum)", lambda: optimizers.SGD([_param()], nesterov=True), VE,
     ["momentum"]),
    ("SGD(weight_decay=-1)", lambda: optimizers.SGD([_param()], weight_decay=-1), VE,
     ["weight_decay", "-1"]),
    ("SGD(clipnorm=0)", lambda: optimizers.SGD([_param()], clipnorm=0), VE, ["clipnorm", "0"]),
    ("SGD(clipvalue=-1)", lambda: optimizers.SGD([_param()], clipvalue=-1), VE,
     ["clipvalue", "-1"]),
    ("SGD(clipnorm and global_clipnorm)", lambda: optimizers.SGD([_param()], clipnorm=1,
                                                                 global_clipnorm=1), VE,
     ["global_clipnorm"]),
    ("SGD(params=[3])", lambda: optimizers.SGD([3]), TE, ["params", "int"]),  # SGD(3): learning rate 3 (Keras)
    ("Adam(beta_1=1)", lambda: optimizers.Adam([_param()], beta_1=1.0), VE, ["beta_1", "1.0"]),
    ("Adam(beta_2=-0.1)", lambda: optimizers.Adam([_param()], beta_2=-0.1), VE,
     ["beta_2", "-0.1"]),
    ("Adam(epsilon=-1)", lambda: optimizers.Adam([_param()], epsilon=-1), VE, ["epsilon", "-1"]),
    ("AdamW(weight_decay=-1)", lambda: optimizers.AdamW([_param()], weight_decay=-1), VE,
     ["weight_decay", "-1"]),
    ("RMSprop(rho=1.5)", lambda: optimizers.RMSprop([_param()], rho=1.5), VE, ["rho", "1.5"]),
    ("Adagrad(initial_accumulator_value=-1)", lambda: optimizers.Adagrad(
        [_param()], initial_accumulator_value=-1), VE, ["initial_accumulator_value", "-1"]),
    ("optimizer.learning_rate = -1", lambda: setattr(optimizers.SGD([_param()]),
                                                     "learning_rate", -1), VE,
     ["learning_rate", "-1"]),
    ("load_state_dict: wrong shapes", lambda: _adam_loaded_with(
        lambda sd: {k: (np.zeros(7) if isinstance(v, np.ndarray) and v.ndim else v)
                    for k, v in sd.items()}), VE, ["exp_avg", "(7,)", "(3,)"]),

    # ---- callbacks
    ("EarlyStopping(patience=-1)", lambda: callbacks.EarlyStopping(patience=-1), VE,
     ["patience", "-1"]),
    ("EarlyStopping(mode='maxx')", lambda: callbacks.EarlyStopping(mode="maxx"), VE,
     ["mode", "maxx"]),
    ("EarlyStopping(monitor=3)", lambda: callbacks.EarlyStopping(monitor=3), TE,
     ["monitor", "3"]),
    ("ReduceLROnPlateau(factor=1.0)", lambda: callbacks.ReduceLROnPlateau(factor=1.0), VE,
     ["factor", "1.0"]),
    ("LearningRateScheduler(3)", lambda: callbacks.LearningRateScheduler(3), TE,
     ["schedule", "3"]),
    ("ModelCheckpoint(None)", lambda: callbacks.ModelCheckpoint(None), TE, ["filepath", "None"]),
    ("ModelCheckpoint(save_freq='batch')", lambda: callbacks.ModelCheckpoint(
        "x.minnet", save_freq="batch"), VE, ["save_freq", "batch"]),
    ("CSVLogger(3)", lambda: callbacks.CSVLogger(3), TE, ["filename", "3"]),
    ("CallbackList([3])", lambda: callbacks.CallbackList([3]), TE, ["callbacks", "int"]),

    # ---- compile / fit / evaluate / predict
    ("compile(optimizer='adamm')", lambda: _model(False).compile(optimizer="adamm", loss="mse"),
     VE, ["adamm"]),
    ("compile(loss='mse2')", lambda: _model(False).compile(optimizer="sgd", loss="mse2"), VE,
     ["mse2"]),
    ("compile(loss=3)", lambda: _model(False).compile(optimizer="sgd", loss=3), TE, ["3"]),
    ("compile(optimizer=3)", lambda: _model(False).compile(optimizer=3, loss="mse"), BAD, ["3"]),
    ("compile(metrics='accuracy')", lambda: _model(False).compile(
        optimizer="sgd", loss="mse", metrics="accuracy"), TE, ["metrics", "accuracy"]),
    ("compile(metrics=['acuracy'])", lambda: _model(False).compile(
        optimizer="sgd", loss="mse", metrics=["acuracy"]), VE, ["acuracy"]),
    ("fit: len(x) != len(y)", lambda: _model().fit(X, Y[:7], verbose=0), VE, ["10", "7"]),
    ("fit: batch_size=0", lambda: _model().fit(X, Y, batch_size=0, verbose=0), VE,
     ["batch_size", "0"]),
    ("fit: batch_size=-1", lambda: _model().fit(X, Y, batch_size=-1, verbose=0), VE,
     ["batch_size", "-1"]),
    ("fit: batch_size=2.5", lambda: _model().fit(X, Y, batch_size=2.5, verbose=0), BAD,
     ["batch_size", "2.5"]),
    ("fit: epochs=-1", lambda: _model().fit(X, Y, epochs=-1, verbose=0), VE, ["epochs", "-1"]),
    ("fit: empty x", lambda: _model().fit(X[:0], Y[:0], verbose=0), VE, ["`x`", "(0, 5)"]),
    ("fit: y=None", lambda: _model().fit(X, None, verbose=0), VE, ["`y`"]),
    ("fit: str x", lambda: _model().fit(np.array([["a"] * 5] * 10), Y, verbose=0), TE,
     ["`x`", "<U1"]),
    ("fit: object x", lambda: _model().fit(np.array([[object()] * 5] * 10), Y, verbose=0), TE,
     ["`x`", "object"]),
    ("fit: labels out of range", lambda: _model().fit(X, Y + 5, verbose=0), VE, ["y_true", "[0, 3)"]),
    ("fit: negative labels", lambda: _model().fit(X, Y - 3, verbose=0), VE, ["-"]),
    ("fit: float labels", lambda: _model().fit(X, Y + 0.5, verbose=0), VE, ["`y`", "float"]),
    ("fit: one-hot for sparse loss", lambda: _model().fit(X, np.eye(3)[Y], verbose=0), VE,
     ["CategoricalCrossentropy"]),
    ("fit: sparse labels for categorical loss", lambda: _model(
        loss=losses.CategoricalCrossentropy(from_logits=True)).fit(X, Y, verbose=0), VE,
     ["Sparse"]),
    ("fit: validation_split=1.0", lambda: _model().fit(X, Y, validation_split=1.0, verbose=0), VE,
     ["validation_split", "1.0"]),
    ("fit: validation_split=-0.1", lambda: _model().fit(X, Y, validation_split=-0.1,
                                                        verbose=0), VE,
     ["validation_split", "-0.1"]),
    ("fit: validation_data=(x,)", lambda: _model().fit(X, Y, validation_data=(X,), verbose=0), VE,
     ["validation_data", "1"]),
    ("fit: validation_data features", lambda: _model().fit(X, Y, validation_data=(X[:, :4], Y),
                                                           verbose=0), VE, ["(10, 4)"]),
    ("fit: verbose=5", lambda: _model().fit(X, Y, verbose=5), VE, ["verbose", "5"]),
    ("fit: callbacks=[3]", lambda: _model().fit(X, Y, verbose=0, callbacks=[3]), TE,
     ["callbacks", "int"]),
    ("fit: features after build", lambda: _fit_then(lambda m: m.fit(X[:, :4], Y, verbose=0)), VE,
     ["5", "(10, 4)"]),
    ("evaluate: len(x) != len(y)", lambda: _fit_then(lambda m: m.evaluate(X, Y[:3], verbose=0)),
     VE, ["10", "3"]),
    ("evaluate: empty", lambda: _fit_then(lambda m: m.evaluate(X[:0], Y[:0], verbose=0)), VE,
     ["`x`", "(0, 5)"]),
    ("evaluate: batch_size=0", lambda: _fit_then(lambda m: m.evaluate(X, Y, batch_size=0,
                                                                      verbose=0)), VE,
     ["batch_size", "0"]),
    ("predict: batch_size=0", lambda: _fit_then(lambda m: m.predict(X, batch_size=0, verbose=0)),
     VE, ["batch_size", "0"]),
    ("predict: features", lambda: _fit_then(lambda m: m.predict(X[:, :4], verbose=0)), VE,
     ["(10, 4)"]),
    ("predict: str x", lambda: _fit_then(lambda m: m.predict(np.array([["a"] * 5]), verbose=0)),
     TE, ["<U1"]),
    ("model.set_weights: count", lambda: _fit_then(lambda m: m.set_weights(m.get_weights()[:-1])),
     VE, ["4", "3"]),
    ("model.set_weights: transposed", lambda: _fit_then(lambda m: m.set_weights(
        [w.T if w.ndim == 2 else w for w in m.get_weights()])), VE, ["(4, 5)", "(5, 4)"]),
    ("data.batches: batch_size=0", lambda: list(mn.data.batches(X, Y, batch_size=0)), VE,
     ["batch_size", "0"]),
    ("data.batches: lengths", lambda: list(mn.data.batches(X, Y[:3])), VE, ["10", "3"]),
    ("data.batches: seed=-1", lambda: list(mn.data.batches(X, Y, shuffle=True, seed=-1)), VE,
     ["seed", "-1"]),
    ("data.train_validation_split(1.5)", lambda: mn.data.train_validation_split(X, Y, 1.5), VE,
     ["validation_split", "1.5"]),
    ("load_model: missing", lambda: mn.load_model("/nonexistent/dir/net.minnet"), OSError,
     ["/nonexistent/dir/net.minnet"]),
    ("manual_seed(-1)", lambda: mn.manual_seed(-1), VE, ["seed", "-1"]),
    ("set_num_threads(0)", lambda: mn.set_num_threads(0), VE, ["0"]),
    ("set_num_threads('2')", lambda: mn.set_num_threads("2"), TE, ["'2'"]),
]


def _adam_loaded_with(transform):
    p = _param()
    opt = optimizers.Adam([p])
    opt.step()
    optimizers.Adam([_param()]).load_state_dict(transform(opt.state_dict()))


def _fit_then(action):
    model = _model()
    model.fit(X, Y, epochs=1, verbose=0)
    return action(model)


def _check_error(fn, exc_types, fragments):
    with pytest.raises(exc_types) as info:
        fn()
    message = str(info.value).lower()
    missing = [f for f in fragments if f.lower() not in message]
    assert not missing, f"message {str(info.value)!r} does not mention {missing}"


@pytest.mark.parametrize("fn,exc_types,fragments", [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_bad_input_raises_clear_error(fn, exc_types, fragments):
    _check_error(fn, exc_types, fragments)


# ---- defects: unknown names should suggest the closest known one ("did you mean ...?")
SUGGESTIONS = [
    ("optimizer 'adamm'", lambda: optimizers.get("adamm"), "adam"),
    ("loss 'mse2'", lambda: losses.get("mse2"), "mse"),
    ("activation 'rellu'", lambda: layers.Activation("rellu"), "relu"),
    ("metric 'accuracyy'", lambda: metrics.get("accuracyy"), "accuracy"),
    ("compile optimizer 'sgdd'", lambda: _model(False).compile(optimizer="sgdd", loss="mse"),
     "sgd"),
    ("layer class 'Dens'", lambda: layers.deserialize({"class_name": "Dens", "config": {}}),
     "Dense"),
    ("initializer 'glorot_unifrom'", lambda: layers.Dense(3, kernel_initializer="glorot_unifrom"),
     "glorot_uniform"),
]


@pytest.mark.parametrize("fn,suggestion", [c[1:] for c in SUGGESTIONS],
                         ids=[c[0] for c in SUGGESTIONS])
def test_unknown_name_suggests_closest(fn, suggestion):
    with pytest.raises(ValueError) as info:
        fn()
    message = str(info.value).lower()
    assert "did you mean" in message and repr(suggestion).lower() in message


# ---- defects found elsewhere, each a separate test so the list stays honest
@pytest.mark.parametrize("method", ["fit", "evaluate"])
def test_use_before_compile_is_value_error(method):
    model = _model(compiled=False)
    with pytest.raises(ValueError, match="compile"):
        getattr(model, method)(X, Y, verbose=0)


@pytest.mark.parametrize("change", ["missing", "unknown", "from_sgd"])
def test_load_state_dict_rejects_incomplete_or_foreign(change):
    p = _param()
    adam = optimizers.Adam([p])
    adam.step()
    sd = adam.state_dict()
    if change == "missing":
        sd = {k: v for k, v in sd.items() if "exp_avg_sq" not in k}
    elif change == "unknown":
        sd["state.0.bogus"] = np.zeros(3)
    else:
        sgd = optimizers.SGD([p], momentum=0.9)
        sgd.step()
        sd = sgd.state_dict()
    with pytest.raises(ValueError):
        optimizers.Adam([_param()]).load_state_dict(sd)


def test_optimizer_params_ndarray_message():
    with pytest.raises(TypeError) as info:
        optimizers.SGD([np.zeros(3)])
    assert "memoryview" not in str(info.value) and "ndarray" in str(info.value)


def test_sparse_accuracy_rejects_out_of_range_labels():
    with pytest.raises(ValueError, match="y_true"):
        metrics.SparseCategoricalAccuracy().update_state(np.array([0, 1, 2, 9]), LOGITS)


@pytest.mark.parametrize("data", [["a", "b"], [object()]], ids=["str", "object"])
def test_tensor_rejects_non_numeric(data):
    with pytest.raises(TypeError):
        mn.tensor(data)


def test_linear_zero_in_features():
    y = F.linear(np.zeros((2, 0), np.float32), np.zeros((3, 0), np.float32))
    np.testing.assert_array_equal(y.numpy(), np.zeros((2, 3), np.float32))


# ------------------------------------------------------------------ valid but unusual input
def _layouts(array):
    """The same values as C order, Fortran order, a strided view and a read-only copy."""
    big = np.zeros(array.shape[:-1] + (2 * array.shape[-1],), array.dtype)
    big[..., ::2] = array
    readonly = array.copy()
    readonly.setflags(write=False)
    return {"C": np.ascontiguousarray(array), "F": np.asfortranarray(array),
            "strided": big[..., ::2], "readonly": readonly}


LAYER_FACTORIES = {
    "Dense": (lambda: layers.Dense(3), (4, 6)),
    "Conv2D": (lambda: layers.Conv2D(2, (3, 2), strides=(2, 1), padding=1), (2, 3, 7, 8)),
    "MaxPooling2D": (lambda: layers.MaxPooling2D(2, data_format="channels_first"), (2, 3, 6, 6)),
    "AveragePooling2D": (lambda: layers.AveragePooling2D(2, padding=1,
                                                         data_format="channels_first"),
                         (2, 3, 6, 6)),
    "GlobalAveragePooling2D": (lambda: layers.GlobalAveragePooling2D(), (2, 3, 5, 4)),
    "BatchNormalization": (lambda: layers.BatchNormalization(), (3, 2, 4, 4)),
    "Flatten": (lambda: layers.Flatten(), (2, 3, 4)),
    "ReLU": (lambda: layers.ReLU(), (2, 5)),
    "Softmax": (lambda: layers.Softmax(), (2, 5)),
    "Dropout": (lambda: layers.Dropout(0.5), (2, 5)),
}


def _layout_params():
    for name in LAYER_FACTORIES:
        for layout in ["C", "F", "strided", "readonly"]:
            marks = []
            yield pytest.param(name, layout, marks=marks, id=f"{name}-{layout}")


@pytest.mark.parametrize("name,layout", list(_layout_params()))
def test_layers_accept_any_memory_layout(name, layout):
    factory, shape = LAYER_FACTORIES[name]
    base = _x(*shape)
    layer = factory()
    expected = layer(base, training=True).numpy() if name != "Dropout" else None
    arrays = _layouts(base)
    before = arrays[layout].copy()
    mn.manual_seed(0)
    out = layer(arrays[layout], training=name == "BatchNormalization")
    if expected is not None and name != "BatchNormalization":
        np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(arrays[layout], before)  # input never modified


FUNCTIONAL_READONLY = {
    "conv2d": lambda ro: F.conv2d(ro(X4), ro(W4), ro(np.zeros(4, np.float32))),
    "linear": lambda ro: F.linear(ro(LOGITS), ro(_x(3, 5)), ro(np.zeros(3, np.float32))),
    "max_pool2d": lambda ro: F.max_pool2d(ro(X4), 2),
    "avg_pool2d": lambda ro: F.avg_pool2d(ro(X4), 2),
    "global_avg_pool2d": lambda ro: F.global_avg_pool2d(ro(X4)),
    "relu": lambda ro: F.relu(ro(LOGITS)),
    "sigmoid": lambda ro: F.sigmoid(ro(LOGITS)),
    "softmax": lambda ro: F.softmax(ro(LOGITS)),
    "log_softmax": lambda ro: F.log_softmax(ro(LOGITS)),
    "dropout": lambda ro: F.dropout(ro(LOGITS), 0.5),
    "spatial_dropout2d": lambda ro: F.spatial_dropout2d(ro(X4), 0.5),
    "batch_norm(train, read-only weight)": lambda ro: F.batch_norm(
        ro(LOGITS), np.zeros(5, np.float32), np.ones(5, np.float32), ro(np.ones(5, np.float32)),
        ro(np.zeros(5, np.float32)), training=True),
    "batch_norm(eval, read-only running stats)": lambda ro: F.batch_norm(
        ro(LOGITS), ro(np.zeros(5, np.float32)), ro(np.ones(5, np.float32)), training=False),
    "cross_entropy": lambda ro: F.cross_entropy(ro(LOGITS), ro(LABELS)),
    "mse_loss": lambda ro: F.mse_loss(ro(LOGITS), ro(np.zeros((4, 5), np.float32))),
    "binary_cross_entropy_with_logits": lambda ro: F.binary_cross_entropy_with_logits(
        ro(LOGITS), ro(np.zeros((4, 5), np.float32))),
}
FUNCTIONAL_DEFECTS = {}


@pytest.mark.parametrize("name", [
    pytest.param(n, marks=[defect(FUNCTIONAL_DEFECTS[n])] if n in FUNCTIONAL_DEFECTS else [])
    for n in FUNCTIONAL_READONLY])
def test_functional_accepts_read_only_arrays(name):
    out = FUNCTIONAL_READONLY[name](_readonly)
    reference = FUNCTIONAL_READONLY[name](np.array)
    if "dropout" not in name:
        np.testing.assert_allclose(out.numpy(), reference.numpy(), rtol=1e-6)


def test_predict_accepts_read_only_x():
    model = _model()
    model.fit(X, Y, verbose=0)
    out = model.predict(_readonly(X), verbose=0)
    np.testing.assert_allclose(out, model.predict(X.copy(), verbose=0), rtol=1e-6)


@pytest.mark.parametrize("kind", ["strided", "fortran", "readonly_y", "uint8_x", "float64_x",
                                  "int_labels_float", "labels_column"])
def test_fit_accepts_unusual_but_valid_data(kind):
    model = _model()
    x, y = X, Y
    if kind == "strided":
        x = np.repeat(X, 2, axis=1)[:, ::2]
    elif kind == "fortran":
        x = np.asfortranarray(X)
    elif kind == "readonly_y":
        x, y = _readonly(X), _readonly(Y)
    elif kind == "uint8_x":
        x = np.random.default_rng(0).integers(0, 255, X.shape).astype(np.uint8)
    elif kind == "float64_x":
        x = X.astype(np.float64)
    elif kind == "int_labels_float":
        y = Y.astype(np.float64)  # whole-number floats are valid labels
    elif kind == "labels_column":
        y = Y.reshape(-1, 1)
    history = model.fit(x, y, epochs=2, batch_size=4, verbose=0)
    assert len(history.history["loss"]) == 2
    assert np.all(np.isfinite(history.history["loss"]))
    assert all(w.dtype == np.float32 for w in model.get_weights())


def test_integer_images_are_converted_to_layer_dtype():
    conv = layers.Conv2D(2, 3, dtype="float64")
    images = np.random.default_rng(0).integers(0, 256, (2, 1, 6, 6)).astype(np.uint8)
    out = conv(images)
    assert out.dtype == np.float64
    np.testing.assert_allclose(out.numpy(), conv(images.astype(np.float64)).numpy())


def test_float64_into_float32_layer_is_cast():
    dense = layers.Dense(3)
    out = dense(_x(2, 4, dtype=np.float64))
    assert out.dtype == np.float32


def test_case_count():
    """Keeps the number reported in docs/reliability.md honest (lower bound)."""
    assert len(CASES) >= 200
