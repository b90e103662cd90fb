"""minnet.interop.to_torch for the recurrent layers: the torch twin gives the same outputs."""
import numpy as np
import pytest

import minnet as mn
from minnet import interop, layers


@pytest.mark.parametrize("make", [
    lambda: layers.LSTM(5, return_sequences=True),
    lambda: layers.GRU(4),
    lambda: layers.SimpleRNN(3, activation="relu", return_sequences=True),
    lambda: layers.Bidirectional(layers.LSTM(3, return_sequences=True)),
    lambda: layers.Bidirectional(layers.GRU(2)),
])
def test_to_torch_recurrent_matches(torch, make):
    mn.manual_seed(0)
    x = np.random.default_rng(0).standard_normal((3, 6, 4)).astype(np.float32)
    model = mn.Sequential([layers.Input((6, 4)), make(), layers.Dense(2)])
    module = interop.to_torch(model)
    expected = model.predict(x)
    with torch.no_grad():
        got = module(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_unsupported_options_raise(torch):
    model = mn.Sequential([layers.Input((6, 4)), layers.LSTM(3, go_backwards=True)])
    with pytest.raises(ValueError, match="go_backwards"):
        interop.to_torch(model)


@pytest.mark.parametrize("make", [
    lambda: layers.LSTM(5, return_sequences=True),
    lambda: layers.Bidirectional(layers.GRU(2)),
    lambda: layers.SimpleRNN(3, activation="relu"),
])
def test_round_trip_through_torch(torch, make):
    mn.manual_seed(1)
    x = np.random.default_rng(1).standard_normal((2, 5, 4)).astype(np.float32)
    model = mn.Sequential([layers.Input((5, 4)), make(), layers.Dense(2)])
    back = interop.from_torch(interop.to_torch(model), (5, 4))
    np.testing.assert_allclose(back.predict(x), model.predict(x), rtol=1e-6, atol=1e-7)


def test_compare_recurrent_model(torch):
    mn.manual_seed(0)
    model = mn.Sequential([layers.Input((6, 4)), layers.LSTM(3, return_sequences=True),
                           layers.GRU(2), layers.Dense(2)])
    x = np.random.default_rng(2).standard_normal((3, 6, 4)).astype(np.float32)
    report = interop.compare(model, interop.to_torch(model), x, np.array([0, 1, 1]),
                             loss="cross_entropy")
    assert report.ok, str(report)
