"""AccumulateGrad.observer: called once per leaf, after its gradient is final (data
parallelism starts a bucket's all-reduce from it while backward still runs)."""
import numpy as np

import minnet as mn
from minnet.autograd import AccumulateGrad


def test_the_observer_sees_each_leaf_once_with_its_final_gradient():
    w = mn.tensor(np.array([1.0, 2.0]), requires_grad=True)
    b = mn.tensor(np.array([0.5, -1.0]), requires_grad=True)
    seen = []
    AccumulateGrad.observer = lambda variable: seen.append((variable, variable.grad.copy()))
    try:
        loss = ((w * w).sum() + (w * b).sum() + b.sum())      # w used three times
        loss.backward()
    finally:
        AccumulateGrad.observer = None
    assert sorted(id(v) for v, _ in seen) == sorted([id(w), id(b)])
    final = {id(v): g for v, g in seen}
    np.testing.assert_allclose(final[id(w)], 2 * w.data + b.data)
    np.testing.assert_allclose(final[id(b)], w.data + 1)


def test_a_preassigned_gradient_is_written_in_place():
    flat = np.zeros(5)
    w = mn.tensor(np.ones((2, 2)), requires_grad=True)
    w.grad = flat[1:5].reshape(2, 2)              # a view into one flat buffer
    (w * 3).sum().backward()
    np.testing.assert_array_equal(flat, [0, 3, 3, 3, 3])
