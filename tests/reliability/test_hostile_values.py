"""Hostile values: huge logits, NaN, inf, 1e30, empty batches, batches of one.

* Numerically sensitive ops (sigmoid, softmax, log_softmax, cross-entropy, BCE with
  logits, ...) run under ``np.errstate(all="raise")`` and ``warnings.simplefilter("error")``
  on logits of +-1e4: no overflow, no NaN, forward or backward.
* ``callbacks.TerminateOnNaN`` stops ``fit`` at the first non-finite loss, and
  ``mn.detect_anomaly()`` names the op that produced the NaN/inf.
* Every layer gets NaN, inf, 1e30, a zero-size batch and a batch of one: it must not crash
  or hang; it either raises a clear ValueError or propagates the NaN (PyTorch semantics:
  NaN in, NaN out, and only where the input can reach).
"""
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import minnet as mn
import minnet.functional as F
from minnet import callbacks, layers, losses, optimizers


@pytest.fixture(autouse=True, scope="module")
def _channels_first_images():
    # The image models here are built for NCHW data; Conv2D and the image layers follow
    # mn.config.image_data_format(), whose default is Keras's channels_last.
    mn.config.set_image_data_format("channels_first")
    yield
    mn.config.set_image_data_format("channels_last")

DTYPES = [np.float32, np.float64]


class _strict:
    """Any floating-point warning or RuntimeWarning becomes an error."""

    def __enter__(self):
        self._err = np.errstate(all="raise")
        self._err.__enter__()
        self._warn = warnings.catch_warnings()
        self._warn.__enter__()
        warnings.simplefilter("error")

    def __exit__(self, *exc):
        self._warn.__exit__(*exc)
        self._err.__exit__(*exc)


def _huge_logits(dtype):
    return np.array([[1e4, -1e4, 0.0, 3.0], [-1e4, -1e4, -1e4, 1e4],
                     [1e4, 1e4, -1e4, -1e4]], dtype)


# logsumexp(row) - z[label] for rows [1e4,-1e4,0,3]/1, [-1e4,-1e4,-1e4,1e4]/0,
# [1e4,1e4,-1e4,-1e4]/3: 2e4, 2e4 and 2e4 + log 2.
CE_EXPECTED = np.mean([2e4, 2e4, 2e4 + np.log(2.0)])

ELEMENTWISE = ["sigmoid", "tanh", "relu", "leaky_relu", "elu", "selu", "softmax", "log_softmax"]


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("name", ELEMENTWISE)
def test_activation_on_huge_logits_is_finite(name, dtype):
    z = mn.tensor(_huge_logits(dtype), requires_grad=True)
    with _strict():
        out = getattr(F, name)(z)
        out.backward(np.ones(out.shape, dtype))
    assert np.all(np.isfinite(out.numpy())) and np.all(np.isfinite(z.grad))
    if name == "sigmoid":
        np.testing.assert_array_equal(out.numpy()[0, :2], [1.0, 0.0])
    if name == "log_softmax":
        np.testing.assert_allclose(out.numpy()[1], [-2e4, -2e4, -2e4, 0.0])


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("loss", ["cross_entropy", "cross_entropy_soft", "nll_of_log_softmax",
                                  "bce_with_logits", "bce_of_sigmoid", "smoothing"])
def test_losses_on_huge_logits_are_finite(loss, dtype):
    logits = _huge_logits(dtype)
    labels = np.array([1, 0, 3])
    z = mn.tensor(logits, requires_grad=True)
    with _strict():
        if loss == "cross_entropy":
            value = F.cross_entropy(z, labels)
            expected = CE_EXPECTED
        elif loss == "cross_entropy_soft":
            value = F.cross_entropy(z, np.eye(4, dtype=dtype)[labels])
            expected = CE_EXPECTED
        elif loss == "smoothing":
            value = F.cross_entropy(z, labels, label_smoothing=0.1)
            expected = None
        elif loss == "nll_of_log_softmax":
            value = F.nll_loss(F.log_softmax(z, axis=1), labels)
            expected = CE_EXPECTED
        elif loss == "bce_with_logits":
            target = (logits > 0).astype(dtype)
            target[0, 0] = 0.0  # one confidently wrong: loss 1e4 for that element
            value = F.binary_cross_entropy_with_logits(z, target)
            # Elements: one 1e4 (confidently wrong), log 2 (logit 0), log1p(e^-3), rest ~0.
            expected = (1e4 + np.log(2.0) + np.log1p(np.exp(-3.0))) / logits.size
        else:
            target = (logits > 0).astype(dtype)
            target[0, 0] = 0.0
            value = F.binary_cross_entropy(F.sigmoid(z), target)  # log clamped at -100
            expected = None
        value.backward()
    assert np.isfinite(value.item()) and np.all(np.isfinite(z.grad))
    if expected is not None:
        np.testing.assert_allclose(value.item(), expected, rtol=1e-3)


@pytest.mark.parametrize("loss", [
    losses.SparseCategoricalCrossentropy(from_logits=True),
    losses.CategoricalCrossentropy(from_logits=True, label_smoothing=0.1),
    losses.BinaryCrossentropy(from_logits=True),
    losses.SparseCategoricalCrossentropy(from_logits=False),
    losses.CategoricalCrossentropy(from_logits=False),
    losses.BinaryCrossentropy(from_logits=False),
], ids=lambda l: f"{type(l).__name__}(from_logits={l.get_config().get('from_logits')})")
def test_loss_objects_on_extreme_inputs_are_finite(loss):
    logits = _huge_logits(np.float32)
    name = type(loss).__name__
    from_logits = loss.get_config().get("from_logits")
    if name.startswith("Sparse"):
        y_true = np.array([1, 0, 3])
    elif name.startswith("Categorical"):
        y_true = np.eye(4, dtype=np.float32)[[1, 0, 3]]
    else:
        y_true = (logits > 0).astype(np.float32)
        y_true[0, 0] = 0
    if from_logits:
        y_pred = mn.tensor(logits, requires_grad=True)
        pred = y_pred
    else:  # saturated probabilities: exact zeros and ones
        y_pred = mn.tensor(logits, requires_grad=True)
        pred = F.softmax(y_pred, axis=1) if not name.startswith("Binary") else F.sigmoid(y_pred)
    with _strict():
        value = loss(y_true, pred)
        value.backward()
    assert np.isfinite(value.item()) and np.all(np.isfinite(y_pred.grad))


# ------------------------------------------------------------------ TerminateOnNaN / anomaly
class _BatchLosses(callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.losses = []

    def on_train_batch_end(self, batch, logs=None):
        self.losses.append(float(logs["loss"]))


def test_terminate_on_nan_stops_at_first_non_finite_loss():
    mn.manual_seed(0)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((256, 8)).astype(np.float32) * 10
    y = rng.standard_normal((256, 1)).astype(np.float32) * 10
    model = mn.Sequential([layers.Dense(32, activation="relu"), layers.Dense(1)])
    model.compile(optimizer=optimizers.SGD(learning_rate=1e6), loss="mse")
    recorder = _BatchLosses()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the divergence itself may warn
        with np.errstate(all="ignore"):
            history = model.fit(x, y, batch_size=8, epochs=5, verbose=0, shuffle=False,
                                callbacks=[recorder, callbacks.TerminateOnNaN()])
    finite = np.isfinite(recorder.losses)
    assert not finite.all(), "the learning rate was meant to blow the loss up"
    first_bad = int(np.argmin(finite))
    assert len(recorder.losses) == first_bad + 1, "training went on after a non-finite loss"
    assert model.stop_training
    assert len(history.history["loss"]) <= 1


def test_terminate_on_nan_leaves_finite_training_alone():
    mn.manual_seed(0)
    x = np.random.default_rng(1).standard_normal((32, 4)).astype(np.float32)
    model = mn.Sequential([layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    history = model.fit(x, x[:, :1], batch_size=8, epochs=3, verbose=0,
                        callbacks=[callbacks.TerminateOnNaN()])
    assert len(history.history["loss"]) == 3


def test_detect_anomaly_names_first_forward_op():
    x = mn.tensor(np.array([-1.0, 2.0]), requires_grad=True)
    with pytest.raises(mn.AnomalyError) as info, np.errstate(all="ignore"):
        with mn.detect_anomaly():
            ((x.log() * 2).exp()).sum()  # Log is first; Mul and Exp only propagate
    message = str(info.value)
    assert "Log" in message and "Mul" not in message and "Exp" not in message


def test_detect_anomaly_names_op_in_backward():
    x = mn.tensor(np.array([0.0, 4.0]), requires_grad=True)
    with pytest.raises(mn.AnomalyError) as info, np.errstate(all="ignore"):
        with mn.detect_anomaly():
            (x.sqrt() * 3).sum().backward()  # forward is finite; d sqrt/dx at 0 is inf
    assert "Sqrt" in str(info.value)


def test_detect_anomaly_in_a_layer_stack():
    model = mn.Sequential([layers.Dense(3), layers.ReLU(), layers.Dense(2)])
    model(np.zeros((1, 4), np.float32))
    weights = model.get_weights()
    weights[0][0, 0] = np.inf
    model.set_weights(weights)
    with pytest.raises(mn.AnomalyError) as info, np.errstate(all="ignore"):
        with mn.detect_anomaly():
            model(np.ones((2, 4), np.float32)).sum()
    assert any(op in str(info.value) for op in ("Addmm", "Linear", "Mm"))


def test_detect_anomaly_silent_when_finite():
    x = mn.tensor(np.array([1.0, 2.0]), requires_grad=True)
    with mn.detect_anomaly():
        (x.log() * 2).sum().backward()
    np.testing.assert_allclose(x.grad, [2.0, 1.0])


# ------------------------------------------------------------------- hostile values, layers
def _layer_zoo():
    return {
        "Dense": (lambda: layers.Dense(3), (4, 5)),
        "Conv2D": (lambda: layers.Conv2D(2, 3, padding=1), (4, 2, 5, 5)),
        "Conv2D-strided": (lambda: layers.Conv2D(2, (3, 2), strides=2), (4, 2, 6, 5)),
        "Conv2D-dilated": (lambda: layers.Conv2D(2, 2, dilation_rate=2), (4, 2, 6, 5)),
        "MaxPooling2D": (lambda: layers.MaxPooling2D(2), (4, 2, 4, 4)),
        "AveragePooling2D": (lambda: layers.AveragePooling2D(2), (4, 2, 4, 4)),
        "GlobalAveragePooling2D": (lambda: layers.GlobalAveragePooling2D(), (4, 2, 3, 3)),
        "BatchNormalization-eval": (lambda: layers.BatchNormalization(), (4, 3)),
        "Flatten": (lambda: layers.Flatten(), (4, 2, 3)),
        "Reshape": (lambda: layers.Reshape((3, 2)), (4, 6)),
        "Dropout-eval": (lambda: layers.Dropout(0.3), (4, 5)),
        "AlphaDropout-eval": (lambda: layers.AlphaDropout(0.3), (4, 5)),
        "SpatialDropout2D-eval": (lambda: layers.SpatialDropout2D(0.3), (4, 2, 3, 3)),
        "ReLU": (lambda: layers.ReLU(), (4, 5)),
        "LeakyReLU": (lambda: layers.LeakyReLU(0.1), (4, 5)),
        "ELU": (lambda: layers.ELU(), (4, 5)),
        "SELU": (lambda: layers.SELU(), (4, 5)),
        "Sigmoid": (lambda: layers.Sigmoid(), (4, 5)),
        "Tanh": (lambda: layers.Tanh(), (4, 5)),
        "Softmax": (lambda: layers.Softmax(), (4, 5)),
        "Activation-softmax": (lambda: layers.Activation("softmax"), (4, 5)),
        "Lambda": (lambda: layers.Lambda(lambda t: t * 2), (4, 5)),
    }


ZOO = _layer_zoo()
@pytest.mark.parametrize("name", list(ZOO))
def test_nan_propagates_only_to_its_own_sample(name):
    factory, shape = ZOO[name]
    layer = factory()
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    layer(x)  # build on clean data
    x_bad = x.copy()
    x_bad[1].flat[0] = np.nan
    with np.errstate(invalid="ignore"):
        out = layer(x_bad).numpy()
        clean = layer(x).numpy()
    others = [0, 2, 3]
    np.testing.assert_allclose(out[others], clean[others], rtol=1e-6, atol=1e-6)
    assert np.isnan(out[1]).any(), f"{name} swallowed a NaN"


@pytest.mark.parametrize("value", [np.inf, -np.inf, 1e30, -1e30, 3e38],
                         ids=["inf", "-inf", "1e30", "-1e30", "3e38"])
@pytest.mark.parametrize("name", list(ZOO))
def test_extreme_values_do_not_crash(name, value):
    factory, shape = ZOO[name]
    layer = factory()
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    layer(x)
    x[0].flat[0] = value
    with np.errstate(all="ignore"):
        out = layer(x).numpy()
    assert out.shape[0] == shape[0]
    # Samples that never saw the extreme value stay finite.
    assert np.all(np.isfinite(out[1:]))
    if name in ("ReLU", "LeakyReLU", "ELU", "SELU", "Sigmoid", "Tanh",
                "MaxPooling2D", "Flatten", "Reshape") and not np.isfinite(value):
        # Saturating/elementwise layers have a well-defined answer for +-inf.
        assert not np.isnan(out[0]).any(), f"{name} turned {value} into NaN"


@pytest.mark.parametrize("name", list(ZOO))
def test_zero_size_batch(name):
    factory, shape = ZOO[name]
    layer = factory()
    layer(np.ones(shape, np.float32))
    empty = np.zeros((0,) + shape[1:], np.float32)
    try:
        out = layer(empty)
    except ValueError as error:  # allowed, if it says what is wrong
        assert "0" in str(error)
        return
    assert out.shape[0] == 0
    assert out.shape[1:] == layer(np.ones(shape, np.float32)).shape[1:]


@pytest.mark.parametrize("name", list(ZOO))
def test_batch_of_one_matches_row_of_batch(name):
    factory, shape = ZOO[name]
    layer = factory()
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
    full = layer(x).numpy()
    one = layer(x[2:3]).numpy()
    np.testing.assert_allclose(one[0], full[2], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("training", [True, False])
def test_batchnorm_training_nan_and_empty(training):
    bn = layers.BatchNormalization()
    x = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    bn(x, training=True)
    x[0, 0] = np.nan
    with np.errstate(invalid="ignore"):
        out = bn(x, training=training).numpy()
    # Channel 0 is contaminated in training (batch statistics) or only at [0, 0] in eval.
    assert np.isnan(out[0, 0])
    assert np.all(np.isfinite(out[:, 1:]))
    if not training:
        assert np.all(np.isfinite(out[1:, 0]))
    with pytest.raises(ValueError):
        bn(np.zeros((0, 3), np.float32), training=True)


def test_training_step_with_nan_input_reaches_weights_as_nan_not_crash():
    model = mn.Sequential([layers.Conv2D(2, 3), layers.Flatten(), layers.Dense(2)])
    model.compile(optimizer="sgd", loss="mse")
    x = np.random.default_rng(0).standard_normal((4, 1, 5, 5)).astype(np.float32)
    x[0, 0, 0, 0] = np.nan
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        history = model.fit(x, np.zeros((4, 2), np.float32), epochs=1, verbose=0,
                            check_finite=False)
    assert np.isnan(history.history["loss"][0])


def test_hostile_sweep_in_subprocess_does_not_crash_or_hang():
    """A segfault or a hang in a kernel would kill or stall pytest itself; run it apart."""
    script = textwrap.dedent("""
        import numpy as np, minnet as mn
        import minnet.functional as F
        np.seterr(all="ignore")
        vals = [np.nan, np.inf, -np.inf, 1e30, -1e30, 0.0]
        for v in vals:
            for dt in (np.float32, np.float64):
                x = np.full((2, 3, 5, 5), v, dt)
                w = np.full((4, 3, 3, 3), v, dt)
                F.conv2d(x, w, stride=2, padding=1, dilation=2)
                F.max_pool2d(x, 3, strides=1, padding=1); F.avg_pool2d(x, 2)
                F.batch_norm(x, np.zeros(3, dt), np.ones(3, dt), training=True)
                z = np.full((3, 4), v, dt)
                F.cross_entropy(z, np.array([0, 1, 3])); F.softmax(z); F.log_softmax(z)
                F.binary_cross_entropy_with_logits(z, np.ones_like(z))
                F.linear(z, np.full((2, 4), v, dt))
                for n in ("relu", "sigmoid", "tanh", "elu", "selu", "leaky_relu"):
                    t = mn.tensor(z, requires_grad=True)
                    getattr(F, n)(t).sum().backward()
                F.dropout(z, 0.5)
        print("ok")
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().endswith("ok")
