"""The Embedding layer's backward kernel: the rows of the table's gradient summed in order."""
from cython.parallel cimport prange
from libc.stdint cimport int64_t

from minnet._ext._base cimport team
from minnet._ext._blas cimport floating

import numpy as np


def embedding_backward(indices, grad, int input_dim, int n_threads=1):
    """``dW[indices[i]] += grad[i]`` for i in order: deterministic for any thread count.

    Threads split the embedding dimension (blocks of columns); each walks all rows in
    order, so no two threads write the same element and every sum has one order.

    Args:
        indices: (M,) int64, each in [0, input_dim) (refused otherwise: the loop writes
            the rows they name).
        grad: (M, D) C-contiguous float32/float64.
        input_dim: number of rows of the table.

    Returns:
        (input_dim, D) gradient of the table.
    """
    indices = np.ascontiguousarray(indices, dtype=np.int64)
    grad = np.ascontiguousarray(grad)
    if grad.ndim != 2 or grad.shape[0] != indices.shape[0]:
        raise ValueError(f"Invalid argument `grad`: expected shape ({indices.shape[0]}, D). "
                         f"Received: shape={grad.shape}")
    if grad.dtype != np.float32 and grad.dtype != np.float64:
        raise TypeError(f"Invalid argument `grad`: expected float32 or float64. Received: "
                        f"dtype={grad.dtype}")
    if indices.size and (indices.min() < 0 or indices.max() >= input_dim):
        bad = indices[(indices < 0) | (indices >= input_dim)][0]
        raise ValueError(f"Invalid argument `indices`: expected values in [0, {input_dim}). "
                         f"Received: {bad}")
    out = np.zeros((input_dim, grad.shape[1]), dtype=grad.dtype)
    _embedding_backward(indices, grad, out, n_threads)
    return out


def _embedding_backward(const int64_t[::1] indices, floating[:, ::1] grad,
                        floating[:, ::1] out, int n_threads):
    cdef int64_t M = grad.shape[0], i, row
    cdef int D = grad.shape[1]
    cdef int n_blocks = (D + 15) // 16
    cdef int block, j, j0, j1
    if M == 0 or D == 0:
        return
    for block in prange(n_blocks, nogil=True, schedule="static",
                        num_threads=team(M * D, n_threads)):
        j0 = block * 16
        j1 = j0 + 16 if j0 + 16 < D else D
        for i in range(M):
            row = indices[i]
            for j in range(j0, j1):
                out[row, j] += grad[i, j]
