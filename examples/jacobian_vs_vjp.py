"""What backward computes instead of a Jacobian: a vector-Jacobian product (VJP).

For a Dense layer y = x W^T + b with W of shape (m, n):
  * one sample x (n,):   dy/dx is W itself, an m x n matrix;
  * a batch X (N, n):    dY/dX is an (N*m) x (N*n) block-diagonal matrix (W on the diagonal:
                         sample i's output does not depend on sample j's input);
  * w.r.t. W, per sample: dy/dW is m x (m*n) (row i holds x in the columns of W's row i).
Backward never forms these: given v = dL/dY it returns v^T J directly, with the shape of
the input (N, n) -- here dL/dX = v @ W and dL/dW = v^T @ X, summed over the batch.

    python examples/jacobian_vs_vjp.py [--quick]
"""
import argparse

import numpy as np

import minnet as mn
from minnet.autograd.functional import jacobian, vjp

parser = argparse.ArgumentParser()
parser.add_argument("--quick", action="store_true", help="accepted for the examples smoke test (already quick)")
parser.parse_args()

rng = np.random.default_rng(0)
m, n, N = 3, 4, 5
W = mn.tensor(rng.standard_normal((m, n)))
b = mn.tensor(rng.standard_normal(m))


def dense(x):
    return mn.functional.linear(x, W, b)


# one sample: the Jacobian is W
x = mn.tensor(rng.standard_normal(n))
J = jacobian(dense, x)
print(f"one sample: J has shape {J.shape}; J == W: {np.allclose(J.data, W.data)}")

# a batch: block-diagonal (N*m) x (N*n)
X = mn.tensor(rng.standard_normal((N, n)))
J_batch = jacobian(dense, X).data.reshape(N * m, N * n)
print(f"batch of {N}: J has shape {J_batch.shape}; block-diagonal with W on the diagonal: "
      f"{np.allclose(J_batch, np.kron(np.eye(N), W.data))}")

# with respect to W, per sample: m x (m*n)
J_W = jacobian(lambda w: mn.functional.linear(x, w, b), W).data.reshape(m, m * n)
expected = np.zeros((m, m * n))
for i in range(m):
    expected[i, i * n:(i + 1) * n] = x.data
print(f"w.r.t. W for one sample: J has shape {J_W.shape}; row i holds x in W's row i: "
      f"{np.allclose(J_W, expected)}")

# the VJP backward computes instead
v = mn.tensor(rng.standard_normal((N, m)))          # dL/dY
_, grad_X = vjp(dense, X, v)
print(f"VJP: dL/dX has shape {grad_X.shape}; equals v @ W: {np.allclose(grad_X.data, v.data @ W.data)}; "
      f"equals v^T J: {np.allclose(grad_X.data.reshape(-1), v.data.reshape(-1) @ J_batch)}")

# memory, float64, for a realistic layer
m, n, N = 512, 1024, 256
itemsize = 8
print(f"\nDense {n} -> {m}, batch {N}, float64:")
print(f"  Jacobian dY/dX  ({N * m} x {N * n}): {N * m * N * n * itemsize / 2**30:10.2f} GiB")
print(f"  Jacobian dY/dW  ({N * m} x {m * n}): {N * m * m * n * itemsize / 2**30:10.2f} GiB")
print(f"  VJP dL/dX ({N} x {n}):            {N * n * itemsize / 2**20:10.2f} MiB")
print(f"  VJP dL/dW ({m} x {n}):             {m * n * itemsize / 2**20:10.2f} MiB")
