"""OrthogonalRegularizer (issue 28): NumPy reference, gradcheck, Keras 3 (oracle), with
Keras's rows = the columns of minnet's transposed Dense kernel."""
import numpy as np
import pytest

import minnet as mn
from minnet import regularizers

RNG = np.random.default_rng(12)


def _reference(vectors, factor):
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    product = unit @ unit.T
    n = product.shape[0]
    return factor * 0.5 * np.abs(product * (1 - np.eye(n))).sum() / (n * (n - 1) / 2)


def test_reference_modes_and_gradcheck():
    w = RNG.normal(size=(3, 5))                     # minnet (out=3, in=5)
    rows = regularizers.OrthogonalRegularizer(0.1, "rows")
    cols = regularizers.orthogonal_regularizer(0.1, mode="columns")
    assert rows(mn.tensor(w)).item() == pytest.approx(_reference(w.T, 0.1), rel=1e-12)
    assert cols(mn.tensor(w)).item() == pytest.approx(_reference(w, 0.1), rel=1e-12)
    x = mn.tensor(w, requires_grad=True)
    assert mn.gradcheck(lambda a: rows(a), (x,))
    assert isinstance(regularizers.get("orthogonal_regularizer"), regularizers.OrthogonalRegularizer)
    with pytest.raises(ValueError, match="mode"):
        regularizers.OrthogonalRegularizer(mode="diagonal")


@pytest.mark.slow_once
def test_against_keras(keras):
    k = RNG.normal(size=(5, 3)).astype("float32")   # Keras (in, out)
    for mode in ("rows", "columns"):
        want = float(keras.regularizers.OrthogonalRegularizer(0.2, mode)(keras.ops.convert_to_tensor(k)))
        got = regularizers.OrthogonalRegularizer(0.2, mode)(mn.tensor(k.T)).item()
        assert got == pytest.approx(want, rel=1e-5)
