"""Rows of fewer than 32 float32 columns, which softmax_kernels and losses_kernels take
8 at a time in vector lanes (minnet_short_rows_f, _ext/include/_fastmath.h): each row's
result must be the one it gets alone (no lane reads another row), whatever the block it
falls in, the thread count or its neighbours' NaN/inf; values against float64 NumPy."""
import numpy as np
import pytest

from minnet._ext import losses_kernels as L
from minnet._ext import softmax_kernels as S

from _harness import TOLERANCES

TOL = TOLERANCES["elementwise"][np.float32]
ROWS = [1, 7, 8, 9, 17, 45]
COLS = [1, 2, 10, 31, 32, 33]


def _data(rng, rows, cols):
    x = (rng.standard_normal((rows, cols)) * 4).astype(np.float32)
    if rows > 2:
        x[1] = -np.inf                 # a row of -inf
        x[2, 0] = np.nan               # a NaN in another row
    return x


def _each_row_alone(fn, x):
    return np.concatenate([fn(np.ascontiguousarray(x[i:i + 1])) for i in range(len(x))])


@pytest.mark.parametrize("rows", ROWS)
@pytest.mark.parametrize("cols", COLS)
@pytest.mark.parametrize("log", [False, True])
def test_softmax_rows_are_independent_of_their_block(rng, rows, cols, log):
    x = _data(rng, rows, cols)
    whole = S.softmax_forward(x, log, n_threads=1)
    assert whole.tobytes() == S.softmax_forward(x, log, n_threads=2).tobytes()
    alone = _each_row_alone(lambda r: S.softmax_forward(r, log, n_threads=1), x)
    assert whole.tobytes() == alone.tobytes()
    finite = np.isfinite(x).all(axis=1)
    x64 = x[finite].astype(np.float64)
    ref = x64 - x64.max(axis=1, keepdims=True)
    ref = ref - np.log(np.exp(ref).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(whole[finite], ref if log else np.exp(ref), **TOL)
    if rows > 2:
        assert np.isnan(whole[2]).all() and np.isnan(whole[1]).all()


@pytest.mark.parametrize("rows", ROWS)
@pytest.mark.parametrize("cols", COLS)
@pytest.mark.parametrize("eps", [0.0, 0.1])
def test_cross_entropy_rows_are_independent_of_their_block(rng, rows, cols, eps):
    x = (rng.standard_normal((rows, cols)) * 4).astype(np.float32)
    labels = rng.integers(0, cols, rows)
    loss, lse = L.cross_entropy_forward(x, labels, eps, n_threads=1)
    loss2, lse2 = L.cross_entropy_forward(x, labels, eps, n_threads=2)
    assert loss.tobytes() == loss2.tobytes() and lse.tobytes() == lse2.tobytes()
    alone = [L.cross_entropy_forward(np.ascontiguousarray(x[i:i + 1]), labels[i:i + 1], eps)
             for i in range(rows)]
    assert loss.tobytes() == np.concatenate([a[0] for a in alone]).tobytes()
    assert lse.tobytes() == np.concatenate([a[1] for a in alone]).tobytes()
    x64 = x.astype(np.float64)
    ref_lse = np.log(np.exp(x64 - x64.max(1, keepdims=True)).sum(1)) + x64.max(1)
    t = (1 - eps) * np.eye(cols)[labels] + eps / cols
    np.testing.assert_allclose(lse, ref_lse, **TOL)
    np.testing.assert_allclose(loss, (t * (ref_lse[:, None] - x64)).sum(1), **TOL)


@pytest.mark.parametrize("bad", [-1, 10])
def test_bad_label_in_a_partial_block_raises(bad):
    x = np.zeros((13, 10), np.float32)       # blocks of 8 and 5 rows
    labels = np.zeros(13, np.int64)
    labels[11] = bad
    with pytest.raises(ValueError, match=rf"\[0, 10\).*{bad}"):
        L.cross_entropy_forward(x, labels, 0.0)
