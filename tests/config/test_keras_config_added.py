"""The rest of keras.config (issue 28): epsilon (read by the losses), dtype policies, the
fit/epoch caps, backend and the flags."""
import numpy as np
import pytest

import minnet as mn
from minnet import config, layers, losses


@pytest.fixture
def restore():
    saved = (config.epsilon(), config.max_epochs(), config.max_steps_per_epoch(), config.floatx())
    yield
    config.set_epsilon(saved[0])
    config.set_max_epochs(saved[1])
    config.set_max_steps_per_epoch(saved[2])
    config.set_floatx(saved[3])


def test_epsilon_reaches_the_losses(restore):
    p = mn.tensor(np.array([[0.0, 1.0]]))
    t = np.array([[1.0, 0.0]])
    assert losses.CategoricalCrossentropy()(t, p).item() == pytest.approx(-np.log(1e-7))
    config.set_epsilon(1e-3)
    assert config.epsilon() == 1e-3
    assert losses.CategoricalCrossentropy()(t, p).item() == pytest.approx(-np.log(1e-3))
    with pytest.raises(ValueError, match="value"):
        config.set_epsilon(0.0)


def test_dtype_policy_backend_and_flags(restore):
    assert config.dtype_policy().name == "float32" and config.backend() == "minnet"
    config.set_dtype_policy("float64")
    assert config.floatx() == "float64" and config.dtype_policy().compute_dtype == "float64"
    with pytest.raises(ValueError, match="mixed"):
        config.set_dtype_policy("mixed_float16")
    with pytest.raises(ValueError, match="backend"):
        config.set_backend("jax")
    config.set_backend("minnet")
    for flag in ("interactive_logging", "traceback_filtering", "flash_attention"):
        getattr(config, f"disable_{flag}")()
        assert getattr(config, f"is_{flag}_enabled")() is False
        getattr(config, f"enable_{flag}")()
        assert getattr(config, f"is_{flag}_enabled")() is True
    assert config.is_nnx_enabled() is False


def test_max_epochs_and_steps_cap_fit(restore):
    x = np.random.default_rng(0).normal(size=(40, 3)).astype("float32")
    y = x.sum(1, keepdims=True)
    model = mn.Sequential([layers.Input((3,)), layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    config.set_max_epochs(2)
    config.set_max_steps_per_epoch(3)
    with pytest.warns(UserWarning, match="Limiting"):
        history = model.fit(x, y, batch_size=4, epochs=5, verbose=0)
    assert len(history.history["loss"]) == 2
    assert model.optimizer.iterations == 6
    with pytest.raises(ValueError, match="max_epochs"):
        config.set_max_epochs(0)


@pytest.mark.slow_once
def test_keras_has_these_names(keras):
    for name in ("epsilon", "set_epsilon", "max_epochs", "set_max_steps_per_epoch", "dtype_policy",
                 "is_flash_attention_enabled", "enable_unsafe_deserialization"):
        assert hasattr(keras.config, name) and hasattr(config, name)
    assert keras.config.epsilon() == config.epsilon()
