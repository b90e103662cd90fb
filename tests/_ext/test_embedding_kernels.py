import numpy as np
import pytest

from minnet._ext import embedding_kernels


def test_embedding_backward_refuses_out_of_range_indices():
    # The loop writes the rows the indices name: a bad index is refused, never written.
    grad = np.ones((2, 3), np.float32)
    for bad in ([0, 4], [-1, 0]):
        with pytest.raises(ValueError, match="`indices`"):
            embedding_kernels.embedding_backward(np.array(bad, np.int64), grad, 4)
